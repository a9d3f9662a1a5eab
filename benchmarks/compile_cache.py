"""Compile seconds per Table faa cell without and with JAX's persistent compilation cache (issue 34, item 3).

Runs the same cells three times through the batch (`experiments/run_table.py`: each cell a papermill kernel, a fresh
process, as a user's batch runs them):

1. `off`: no persistent cache (`BCL_COMPILATION_CACHE=off`): every program compiled, as before the cache existed;
2. `cold`: an empty cache folder: every program compiled and written;
3. `warm`: the same folder again, into a fresh output folder so that every cell reruns: the programs of run 2 are
   read back instead of compiled.

For each cell it prints the compile seconds the cell's `numbers.json` records (`timings.compile_s`: training and
prediction programs), its training seconds and its wall seconds in the batch, and for each arm the batch's wall
seconds; one JSON line per cell and arm, with the provenance, goes to `--out`
(default `benchmarks/results/compile_cache_<backend>.jsonl`). Numbers of the three arms must be equal: the cache
changes no result (the script compares every test accuracy and says so, or names the cells that differ).

    python benchmarks/compile_cache.py [--cells COLUMN/METHOD ...] [--epochs 1] [--seeds 2] [--workers 1]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# One cell per kind of training program on the offline data: MAP (fine-tuning on the CNN, EWC), parameter-space VI
# (Gaussian, and a mixture on the extractor's features), function-space VI (Gaussian, mixture).
CELLS = ["ci-mnist-cnn/finetuning", "di-mnist-fcnn/ewc", "ci-mnist-fcnn/p-g-vcl", "ci-mnist-fe/l-gm-vcl",
         "ci-mnist-fcnn/p-g-sfsvi", "di-mnist-fcnn/l-gm-sfsvi"]
ARMS = ("off", "cold", "warm")


def run_arm(arm: str, args, work: Path) -> tuple[float, dict]:
    "Run the batch once; (its wall seconds, {cell: (numbers.json, the batch's record)})."
    env = dict(os.environ, TQDM_DISABLE="1",
               BCL_COMPILATION_CACHE="off" if arm == "off" else str(work / "cache"))
    out = work / arm
    command = [sys.executable, str(ROOT / "experiments" / "run_table.py"), "faa", "--profile", args.profile,
               "--epochs", str(args.epochs), "--seeds", str(args.seeds), "--workers", str(args.workers),
               "--out", str(out), "--cells", *args.cells]
    start = time.perf_counter()
    done = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"compile_cache.py: the {arm} batch failed (exit {done.returncode}):\n"
                         f"{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
    batch = json.loads((out / args.profile / "batch.json").read_text())
    cells = {}
    for record in batch["cells"]:
        numbers = out / args.profile / record["cell"] / "numbers.json"
        cells[record["cell"]] = (json.loads(numbers.read_text()), record)
    return wall, cells


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cells", nargs="+", default=CELLS)
    parser.add_argument("--profile", default="offline")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--workers", type=int, default=1, help="1: cells one at a time, so that no two compile at once")
    parser.add_argument("--out", type=Path, help="JSON lines (default benchmarks/results/compile_cache_<backend>.jsonl)")
    parser.add_argument("--keep", type=Path, help="keep the three batch folders and the cache here (default: a "
                        "temporary folder, removed)")
    args = parser.parse_args()
    import jax
    from bcl.provenance import provenance
    out = args.out or ROOT / "benchmarks" / "results" / f"compile_cache_{jax.default_backend()}.jsonl"
    with tempfile.TemporaryDirectory(prefix="bcl-compile-cache-") as scratch:
        work = args.keep or Path(scratch)
        work.mkdir(parents=True, exist_ok=True)
        runs = {}
        for arm in ARMS:
            load = os.getloadavg()[0]
            wall, cells = run_arm(arm, args, work)
            runs[arm] = (wall, cells, load, os.getloadavg()[0])
            print(f"{arm}: batch {wall:.0f} s (load {load:.1f} before, {os.getloadavg()[0]:.1f} after)", flush=True)
        meta = {"profile": args.profile, "epochs": args.epochs, "seeds": args.seeds, "workers": args.workers,
                "provenance": provenance()}
        print(f"\n| cell | compile s: {' / '.join(ARMS)} | training s: {' / '.join(ARMS)} | "
              f"cell wall s: {' / '.join(ARMS)} |\n|---|---|---|---|")
        differ = []
        with out.open("a") as sink:
            for cell in args.cells:
                row = {arm: runs[arm][1][cell] for arm in ARMS}
                compile_s = [row[a][0]["timings"]["compile_s"] for a in ARMS]
                run_s = [row[a][0]["timings"]["run_s"] for a in ARMS]
                wall_s = [row[a][1]["wall_s"] for a in ARMS]
                accuracies = {a: row[a][0]["final_average_accuracy"]["mean"] for a in ARMS}
                if len({json.dumps(row[a][0]["test_accuracy"]) for a in ARMS}) > 1:
                    differ.append(f"{cell}: final average accuracy {accuracies}")
                print(f"| {cell} | {' / '.join(f'{s:.1f}' for s in compile_s)} | "
                      f"{' / '.join(f'{s:.1f}' for s in run_s)} | {' / '.join(f'{s:.0f}' for s in wall_s)} |")
                for a, c, r, w in zip(ARMS, compile_s, run_s, wall_s):
                    sink.write(json.dumps({"cell": cell, "arm": a, "compile_s": c, "run_s": r, "cell_wall_s": w,
                                           "batch_wall_s": runs[a][0], "load_before": runs[a][2],
                                           "load_after": runs[a][3], "final_average_accuracy": accuracies[a],
                                           **meta}) + "\n")
        total = {a: sum(runs[a][1][c][0]["timings"]["compile_s"] for c in args.cells) for a in ARMS}
        print(f"\ncompile s in all: {' / '.join(f'{total[a]:.1f}' for a in ARMS)} ({' / '.join(ARMS)}); "
              f"batch wall s: {' / '.join(f'{runs[a][0]:.0f}' for a in ARMS)}; lines appended to {out}")
        print("numbers equal in the three arms" if not differ else "NUMBERS DIFFER: " + "; ".join(differ))


if __name__ == "__main__":
    main()
