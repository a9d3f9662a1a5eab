"""One more method beside a finished visualisation run, without running the others or HMC-NUTS again.

    python experiments/add_method_to_run.py RUN_FOLDER METHOD [--out FILE.json]

RUN_FOLDER is a run of `experiments/run_visualisation.py` (its `numbers.json` and `grid_probabilities.npz`). METHOD
(any name `bcl.factory` builds, e.g. `fromp`) is trained with the run's sequence, seeds, epochs and preset, and
predicts the run's plotting grid after every task, exactly as the run's own methods did (`run_method`). Its mean
total variation and KL(HMC ‖ method) to the run's HMC-NUTS reference after every task (`grid_distances`, the run's
KL floor) are set beside every method of the run, ranked by the distance after each task. The run's reference is
read, not recomputed, so it is the one its other methods were measured against (as converged as that run says).

Prints a Markdown table; `--out` writes the numbers as JSON with the provenance of this code and of the run.
`--into FOLDER` writes the run with the method merged in (its entry and grid beside the others', before HMC-NUTS; the
run's own provenance kept, this code's recorded under `added_methods`), and with `--figures DIR --tables DIR` draws
that merged run's figure and tables (`bcl.figure.report.write_report`) without training anything else.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def measure(folder: Path, method: str) -> dict:
    "The method's accuracy and distances to the run's HMC reference after every task, with the run's own methods'."
    from bcl.data.sequences import load_sequence
    from bcl.serialise import read_numbers
    from bcl.figure.visualisation import build_method, grid_distances, method_entry, plot_grid, run_method
    from bcl.paper import method_label, method_name
    numbers, grids = read_numbers(folder)
    if "hmc" not in grids:
        raise SystemExit(f"{folder} has no HMC-NUTS reference (grid_probabilities.npz holds {sorted(grids)}).")
    p = numbers["parameters"]
    name = method_name(method)
    sequence = load_sequence(numbers["sequence"])
    if name == "hmc":
        raise SystemExit("The run's HMC-NUTS is its reference; add a continual-learning method.")
    spec = build_method(name, sequence, p["preset"], epochs=p["epochs"])
    run = run_method(spec, sequence, p["seeds"], plot_grid(numbers["window"], numbers["grid_resolution"]),
                     fast_compile=p["fast_compile"])
    ours = grid_distances(grids["hmc"], run.grid_probs, p["kl_floor"])
    entry = method_entry(run) | {"distance_to_hmc": ours}  # as the run's own methods' entries
    rows = {m: e["distance_to_hmc"] for m, e in numbers["methods"].items() if e.get("distance_to_hmc")}
    rows[name] = ours
    accuracy = {m: e["final_average_accuracy"]["mean"] for m, e in numbers["methods"].items()
                if e.get("final_average_accuracy")}
    accuracy[name] = float(entry["final_average_accuracy"]["mean"])
    ranks = [sorted(rows, key=lambda m: rows[m]["tv"][t]) for t in range(numbers["n_tasks"])]
    return {"run": numbers["run"], "sequence": numbers["sequence"], "method": name, "label": method_label(name),
            "hmc_reference": p["hmc_reference"], "hmc_chains": p["hmc_chains"], "seeds": p["seeds"],
            "distances": rows, "final_average_accuracy": accuracy,
            "rank_by_tv": [{"task": t + 1, "order": r, "position": r.index(name) + 1} for t, r in enumerate(ranks)],
            "run_provenance": numbers.get("provenance"), "entry": entry, "grid": run.grid_probs}


def merge(folder: Path, result: dict, into: Path) -> Path:
    """Write the run of `folder` with `result`'s method merged in to `into`: its entry and grid placed before HMC-NUTS,
    the run's provenance kept and this code's under `added_methods`."""
    from bcl.serialise import read_numbers, write_numbers
    from bcl.provenance import provenance
    numbers, grids = read_numbers(folder)
    name = result["method"]
    if name in numbers["methods"]:
        raise SystemExit(f"{folder} already has {name}; merge a method the run does not have.")
    order = [m for m in numbers["methods"] if m != "hmc"] + [name] + (["hmc"] if "hmc" in numbers["methods"] else [])
    numbers["methods"] = {m: (result["entry"] if m == name else numbers["methods"][m]) for m in order}
    numbers["parameters"] = dict(numbers["parameters"], methods=order)
    numbers["added_methods"] = dict(numbers.get("added_methods") or {}, **{name: {"provenance": provenance()}})
    into.mkdir(parents=True, exist_ok=True)
    write_numbers(into, numbers, {**grids, name: result["grid"]})
    return into


def redraw(into: Path, figures: Path, tables: Path) -> list[Path]:
    """The merged run's figure and tables (`write_report`, whose tables JSON records, beside the run's provenance,
    that of the code that added each method)."""
    from bcl.figure.report import write_report
    return write_report(into, figures, tables)["paths"]


def table(result: dict) -> str:
    from bcl.paper import method_label
    name, T = result["method"], len(result["rank_by_tv"])
    lines = [f"{result['label']} beside run `{result['run']}` ({result['sequence']}; HMC reference: "
             f"{result['hmc_reference']}, {result['hmc_chains']} chains; seeds {result['seeds']})", "",
             "| method | final average accuracy (%) | " + " | ".join(f"TV t{t + 1}" for t in range(T)) + " | "
             + " | ".join(f"KL t{t + 1}" for t in range(T)) + " |", "|---" * (2 + 2 * T) + "|"]
    order = sorted(result["distances"], key=lambda m: result["distances"][m]["tv"][-1])
    for m in order:
        d = result["distances"][m]
        mark = "**" if m == name else ""
        lines.append(f"| {mark}{method_label(m)}{mark} | {result['final_average_accuracy'].get(m, float('nan')):.2f} | "
                     + " | ".join(f"{v:.3f}" for v in d["tv"]) + " | " + " | ".join(f"{v:.3f}" for v in d["kl"]) + " |")
    lines += ["", "Position of " + result["label"] + " by TV among the run's continual methods and it, per task: "
              + ", ".join(f"task {r['task']}: {r['position']} of {len(r['order'])}" for r in result["rank_by_tv"])]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder", type=Path, help="a finished run of experiments/run_visualisation.py")
    parser.add_argument("method", help="the method to add (any name bcl.factory builds)")
    parser.add_argument("--out", type=Path, help="write the numbers as JSON here")
    parser.add_argument("--into", type=Path, help="write the run with the method merged in to this folder")
    parser.add_argument("--figures", type=Path, help="with --into: draw the merged run's figure here")
    parser.add_argument("--tables", type=Path, help="with --into: write the merged run's tables here")
    args = parser.parse_args(argv)
    if (args.figures or args.tables) and not (args.into and args.figures and args.tables):
        parser.error("--figures and --tables go together, with --into (the merged run they are drawn from)")
    import bcl  # noqa: F401  (before JAX computes anything)
    from bcl.provenance import provenance
    from bcl.serialise import json_ready
    result = measure(args.folder, args.method)
    print(table(result))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        kept = {k: v for k, v in result.items() if k not in ("entry", "grid")}
        args.out.write_text(json.dumps(json_ready(kept | {"provenance": provenance()}), indent=1) + "\n")
    if args.into:
        merge(args.folder, result, args.into)
        print(f"merged run: {args.into}")
        if args.figures:
            for path in redraw(args.into, args.figures, args.tables):
                print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
