"""Whole FROMP runs, bcl against the official PyTorch code (github.com/team-approx-bayes/fromp, code at commit
f5db51c), on the same tasks and initial weights, seed by seed; the final accuracies compared as distributions.

Usage (our environment; the official side runs as a subprocess with a Python that has torch):
  .venv/bin/python tests/parity/fromp_seeds.py --fromp-repo /path/to/fromp --fromp-python /path/to/venv/bin/python \\
      [--seeds 0 1 2 3 4] [--n-per-class 2000] [--out benchmarks/results/fromp_seeds.jsonl]

The sequence is the official toy's (train_toydata.py:93-160, main_toydata.py:8-16): five tasks, task t being blob t
(class 0) against blob t + 5 (class 1) of `ToydataGenerator` option 0 (datasets.py:18-21), 2000 training points a
blob as the driver's `dataset_num_samples`; `MLP([2, 20, 20, 2], act='sigmoid')`; batches of 20, 50 epochs, Adam at
0.01, 20 memorable points a task, τ = 1, δ = 1e-4, ε = 1e-3, no gradient clipping. Each seed s draws its tasks
(and 500 test points a blob) from `numpy.random.default_rng(s)` and its initial weights as `nn.Linear`'s default
(U(±1/√fan_in)) from `default_rng(1000 + s)`; both sides train from those arrays.

Ours: `bcl.methods.fromp.fromp` with those settings, trained by bcl's engine (`bcl.engine.sequence.train_sequence`,
one seed a call, the method's `init` returning the given weights) at a constant learning rate
(`bcl.engine.train.constant_adam`, as `opt_fromp` steps). Theirs: tests/parity/fromp_seeds_side.py, the driver's loop on
the official modules. What still differs by construction: the minibatch order (torch's `DataLoader` shuffle against
bcl's keys), Adam's ε (added to √v before the bias correction in opt_fromp.py:311-318, after it in optax), float32
arithmetic in another order, and the unsorted ties of `torch.sort`. So single runs are not compared; the final
average accuracies (and each task's after the last) are, as distributions over the seeds: their means, standard
deviations, the difference of the means with a 95 % interval (Welch), and the seed-by-seed gap.

One JSON line per seed and side, and a summary line, with provenance, are appended to --out. Without
--fromp-repo/--fromp-python, or when the official side cannot import torch and the official modules, it prints
one line and exits with status 0.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import fromp_parity as fp  # noqa: E402  (the toy's centres, the layout conversion, the official files)

PROG = "fromp_seeds.py"
# the official toy driver's settings (main_toydata.py:8-16, train_toydata.py:93-114)
SETTINGS = {"n_tasks": 5, "hidden": 20, "batch_size": 20, "epochs": 50, "lr": 0.01, "num_points": 20, "tau": 1.0,
            "prior_prec": 1e-4, "eps": 1e-3}
N_TEST = 500  # test points a blob (ours: the driver scores only a plotting grid)


def toy_sequence_arrays(seed: int, n_per_class: int, n_tasks: int = SETTINGS["n_tasks"]) -> list[dict]:
    "Task t: blob t (class 0) against blob t + 5 (class 1), shuffled; train and test arrays, float32 and int64."
    rng = np.random.default_rng(seed)
    tasks = []
    for t in range(n_tasks):
        def draw(n):
            xs = np.concatenate([rng.normal(fp.CENTRES[t + 5 * c], fp.STDS[t + 5 * c], size=(n, 2)) for c in (0, 1)])
            ys = np.repeat(np.arange(2), n)
            order = rng.permutation(2 * n)
            return xs[order].astype(np.float32), ys[order].astype(np.int64)
        (xs, ys), (test_xs, test_ys) = draw(n_per_class), draw(N_TEST)
        tasks.append({"xs": xs, "ys": ys, "test_xs": test_xs, "test_ys": test_ys})
    return tasks


def inputs(seeds: list[int], n_per_class: int) -> tuple[dict, dict]:
    "(per-seed tasks and torch-layout initial weights, the .npz for the official side)."
    per_seed, npz = {}, {}
    meta = SETTINGS | {"seeds": seeds, "n_per_class": n_per_class}
    npz["meta"] = np.asarray(json.dumps(meta))
    for s, seed in enumerate(seeds):
        tasks = toy_sequence_arrays(seed, n_per_class)
        weights = fp.torch_weights(np.random.default_rng(1000 + seed), fp.layer_sizes(SETTINGS["hidden"], 2))
        per_seed[seed] = {"tasks": tasks, "weights": weights}
        npz[f"theta0/{s}"] = np.concatenate([w.ravel() for w in weights])
        for t, task in enumerate(tasks):
            npz |= {f"{k}{t}/{s}": v for k, v in task.items()}
    return per_seed, npz


def bcl_accuracy(seed: int, tasks: list[dict], weights: list[np.ndarray]) -> tuple[np.ndarray, float]:
    "Accuracy (T, T) of bcl's FROMP from the given weights, and the seconds it took."
    import jax
    import jax.numpy as jnp
    from bcl.core import Split, Task, TaskSequence
    from bcl.engine.sequence import train_sequence
    from bcl.engine.train import MethodState, constant_adam
    from bcl.methods.fromp import fromp

    model = fp.toy_model(SETTINGS["hidden"], 2)
    method = fromp(model, "softmax", batch_size=SETTINGS["batch_size"], epochs=SETTINGS["epochs"],
                   tau=SETTINGS["tau"], n_points=SETTINGS["num_points"], jitter=SETTINGS["eps"],
                   precision=SETTINGS["prior_prec"]).with_training(optimiser=constant_adam)
    given, fresh = jax.tree.map(jnp.asarray, fp.to_flax(weights)), method.init

    def init(key, sequence):  # the given weights, FROMP's empty memory
        return MethodState(given, fresh(key, sequence).memory)
    method = method._replace(init=init)
    sequence = TaskSequence("fromp-toy", tuple(
        Task(Split(t["xs"], t["ys"].astype(np.int32)), Split(t["test_xs"], t["test_ys"].astype(np.int32)),
             Split(t["test_xs"], t["test_ys"].astype(np.int32)), (0, 1)) for t in tasks),
        2, "softmax", (2,), (None,) * len(tasks))
    start = time.perf_counter()
    result = train_sequence(method, sequence, {"learning_rate": SETTINGS["lr"]}, seeds=(seed,), progress=False)
    return np.asarray(result.metrics["test/accuracy"][0, 0]), time.perf_counter() - start


def welch(a: np.ndarray, b: np.ndarray) -> dict:
    "Difference of the means of a and b with a 95 % Welch interval."
    from scipy import stats
    va, vb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
    se = np.sqrt(va + vb)
    dof = (va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1)) if se > 0 else float("inf")
    half = float(stats.t.ppf(0.975, dof) * se) if se > 0 else 0.0
    diff = float(a.mean() - b.mean())
    return {"difference": diff, "interval": [diff - half, diff + half], "dof": float(dof)}


def summary(ours: dict, theirs: dict) -> dict:
    "Final average accuracy and each task's after the last, both sides, in points: mean, sd, Welch difference."
    seeds = sorted(ours)
    final = lambda acc: 100 * np.array([acc[s][-1].mean() for s in seeds])
    per_task = lambda acc: 100 * np.array([acc[s][-1] for s in seeds])  # (S, T)
    a, b = final(ours), final(theirs)
    row = {"seeds": seeds, "bcl": a.round(2).tolist(), "official": b.round(2).tolist(),
           "bcl_mean": float(a.mean()), "bcl_sd": float(a.std(ddof=1)), "official_mean": float(b.mean()),
           "official_sd": float(b.std(ddof=1)), "final_average": welch(a, b)}
    pa, pb = per_task(ours), per_task(theirs)
    row["per_task_after_last"] = [{"task": t + 1, "bcl_mean": float(pa[:, t].mean()), "official_mean": float(pb[:, t].mean()),
                                   **welch(pa[:, t], pb[:, t])} for t in range(pa.shape[1])]
    return row


def print_summary(row: dict) -> None:
    print(f"final average accuracy over seeds {row['seeds']}:")
    print(f"  bcl      {row['bcl_mean']:6.2f} ± {row['bcl_sd']:.2f}  {row['bcl']}")
    print(f"  official {row['official_mean']:6.2f} ± {row['official_sd']:.2f}  {row['official']}")
    w = row["final_average"]
    print(f"  bcl − official {w['difference']:+.2f}, 95 % interval [{w['interval'][0]:+.2f}, {w['interval'][1]:+.2f}]")
    print("each task after the last (bcl − official, 95 % interval):")
    for r in row["per_task_after_last"]:
        print(f"  task {r['task']}: {r['bcl_mean']:6.2f} vs {r['official_mean']:6.2f}  {r['difference']:+.2f} "
              f"[{r['interval'][0]:+.2f}, {r['interval'][1]:+.2f}]")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fromp-repo", type=Path, default=os.environ.get("BCL_FROMP_REPO"))
    parser.add_argument("--fromp-python", type=Path, default=os.environ.get("BCL_FROMP_PYTHON"))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--n-per-class", type=int, default=2000, help="training points a blob (the driver's 2000)")
    parser.add_argument("--out", type=Path, help="append the JSON lines to this file")
    args = parser.parse_args(argv)
    if len(args.seeds) < 2 or len(set(args.seeds)) != len(args.seeds):
        parser.error("--seeds: at least two distinct seeds (the runs are compared as distributions)")
    with tempfile.TemporaryDirectory(prefix="bcl_fromp_files_") as files:
        found = fp.prepare_official(args.fromp_repo, args.fromp_python, Path(files))
        if isinstance(found, str):
            print(f"{PROG}: skipped: {found}")
            return 0
        folder, commit, source = found
        provenance = fp.bcl_provenance()  # before the runs: the code they ran
        per_seed, npz = inputs(args.seeds, args.n_per_class)
        theirs_raw, official_seconds = fp.run_official(args.fromp_python, folder, npz, None, side="fromp_seeds_side.py")
        info = json.loads(str(theirs_raw.pop("info")))
        hashes = fp.file_hashes(folder)
    theirs = {seed: theirs_raw[f"accuracy/{s}"] for s, seed in enumerate(args.seeds)}
    ours, seconds = {}, {}
    for seed in args.seeds:
        ours[seed], seconds[seed] = bcl_accuracy(seed, per_seed[seed]["tasks"], per_seed[seed]["weights"])
        print(f"bcl seed {seed}: final average accuracy {100 * ours[seed][-1].mean():.2f} ({seconds[seed]:.0f} s)",
              flush=True)
    row = summary(ours, theirs)
    print_summary(row)
    meta = {"harness": "fromp_seeds", "settings": SETTINGS | {"n_per_class": args.n_per_class, "n_test": N_TEST},
            "official_commit": commit, "official_source": source, "official_files": hashes,
            "official_env": info, "official_seconds": official_seconds, **provenance}
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        with open(args.out, "a") as f:
            for seed in args.seeds:
                f.write(json.dumps({"seed": seed, "bcl_accuracy": ours[seed].round(6).tolist(),
                                    "official_accuracy": np.asarray(theirs[seed]).round(6).tolist(),
                                    "bcl_seconds": seconds[seed]} | meta) + "\n")
            f.write(json.dumps({"summary": row} | meta) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
