"""One bcl method on CI Split 2D Iris or DI Sinusoid over seeds, under whatever JAX the running Python has.

Usage:
  .venv/bin/python benchmarks/bcl_seeds.py --sequence cisplit2diris --method l-g-sfsvi --seeds 0 1 2 ...   # bcl's environment
  PYTHONPATH=OVERLAY:. AUTHORS_VENV/bin/python benchmarks/bcl_seeds.py --prepped AUTHORS/data/prepped/cisplit2diris

`--method` is any of the eight variational methods or a MAP baseline (`si`, `ewc`, `er`, ...), built with the paper's
settings by `bcl.figure.visualisation.build_method`. A method with a grid (EWC's λ, SI's λ × ξ: 15 points) trains every grid
point for every seed as one vmapped program and keeps, per seed, the point with the best validation final average
accuracy (`bcl.sequence.select_by_validation`), as the authors' `select_trainers` does (bcl/train/__init__.py at
b838074). The selected point goes into the output. `--fix lam=100 xi=1` reports one grid point for every seed instead
(the authors' code runs one point when given one trainer block, e.g. `si8`): it compares the two implementations at
the same hyperparameters, without the selection's own spread.

The second form runs bcl's code in the authors' environment (JAX 0.4.28, flax 0.8.5): OVERLAY is a folder with
optax 0.2.8 (`pip install --no-deps --target OVERLAY optax==0.2.8`; the authors' optax 0.2.5 cannot take a traced
learning rate). There tensorflow-datasets is absent, so the arrays are read from the authors' prepared files
(`python -m bcl.dataprep cisplit2diris` or `disinusoid` in their clone writes them). For both sequences they are the
same arrays, in the same order, as `bcl.data.sequences.load_sequence` (checked: inputs to 1e-6, labels exactly). Comparing the two
runs separates what the JAX version does to the seed distribution from what the implementation does. Prints one JSON
line: the sequence, per seed the final average accuracy and the T×T test accuracy matrix (row t: after task t), then
mean and sd.

`--reuse-task-key` is a diagnostic: every task gets the same training and end-of-task keys, as in the authors'
trainers, which split their keys once, when built (`OptimizingTrainer.__init__` in bcl/train/trainer/__init__.py at
b838074), and start every task's `update_state` and `update_hparams` from them: the same shuffles, inducing inputs,
parameter noise and coreset positions for every task. bcl folds the task index into the seed's key by default; the
option runs `train_sequence(..., options=TrainOptions(task_keys="reused"))`, which gives every task the seed's own keys.
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

SEQUENCES = ("cisplit2diris", "disinusoid")
# What the authors' prepared files do not say: (outputs, likelihood, class names, incremental, classes of task t)
_PREPPED = {"cisplit2diris": (3, "softmax", ("setosa", "versicolor", "virginica"), "class", lambda t: (t,)),
            "disinusoid": (1, "sigmoid", ("0", "1"), "domain", lambda t: (0, 1))}


def prepped_sequence(name: str, folder: str | Path):
    "Sequence `name` from the authors' prepared arrays (`{training,validation,testing}_{t}_{xs,ys}.npy`, t from 1)."
    import tomllib
    from bcl.core import Split, Task, TaskSequence
    folder = Path(folder)
    length = tomllib.loads((folder / "metadata.toml").read_text())["length"]
    n_outputs, likelihood, class_names, incremental, classes = _PREPPED[name]
    tasks = []
    for t in range(length):
        splits = [Split(np.load(folder / f"{n}_{t + 1}_xs.npy").astype(np.float32),
                        np.load(folder / f"{n}_{t + 1}_ys.npy").astype(np.int32))
                  for n in ("training", "validation", "testing")]
        tasks.append(Task(*splits, classes(t)))
    xs = np.concatenate([task.train.xs for task in tasks])
    return TaskSequence(name, tuple(tasks), n_outputs, likelihood, xs.shape[1:], (xs.min(0), xs.max(0)), class_names,
                        incremental)


def grid_point(configs: list[dict], assignments: list[str], error) -> int:
    "Index of the one grid point whose values match every `NAME=VALUE` of `assignments`; `error` (a message) otherwise."
    wanted = {}
    for item in assignments:
        name, _, value = item.partition("=")
        try:
            wanted[name] = float(value)
        except ValueError:
            error(f"--fix takes NAME=VALUE with a number, got {item!r}")
    matches = [i for i, c in enumerate(configs)
               if wanted.keys() <= c.keys() and all(np.isclose(float(c[k]), v) for k, v in wanted.items())]
    if len(matches) != 1:
        grid = "; ".join(" ".join(f"{k}={float(v):g}" for k, v in c.items()) for c in configs)
        error(f"--fix {' '.join(assignments)} matches {len(matches)} of the method's grid points, not one; "
              f"the grid: {grid}")
    return matches[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sequence", default="cisplit2diris", choices=SEQUENCES)
    parser.add_argument("--method", default="l-g-sfsvi")
    parser.add_argument("--seeds", nargs="+", type=int, default=list(range(20)))
    parser.add_argument("--prepped", default=None, help="the authors' prepared folder of --sequence (else load_sequence)")
    parser.add_argument("--reuse-task-key", action="store_true", help="the same keys for every task (diagnostic)")
    parser.add_argument("--fix", nargs="+", default=None, metavar="NAME=VALUE",
                        help="report this grid point for every seed (e.g. lam=100 xi=1) instead of selecting per seed")
    args = parser.parse_args()
    if any(s < 0 for s in args.seeds):
        parser.error(f"seeds must be non-negative integers, got {args.seeds}")
    import jax
    from bcl.figure.visualisation import build_method
    from bcl.metrics import final_average_accuracy
    from bcl.engine.sequence import TrainOptions, hyper_configs, select_by_validation, train_sequence
    if args.prepped:
        sequence = prepped_sequence(args.sequence, args.prepped)
    else:
        from bcl.data.sequences import load_sequence
        sequence = load_sequence(args.sequence)
    spec = build_method(args.method, sequence)
    if spec.method is None:
        parser.error(f"{args.method!r} is not trained by gradient steps here; choose a MAP or variational method")
    configs = hyper_configs(spec.hyper)
    fixed = grid_point(configs, args.fix, parser.error) if args.fix else None
    start = time.perf_counter()
    result = train_sequence(spec.method, sequence, spec.hyper, seeds=args.seeds, progress=False,
                            options=TrainOptions(task_keys="reused" if args.reuse_task_key else "fresh"))
    seeds = np.arange(len(args.seeds))
    # one grid point per seed (index 0 without a grid)
    chosen = np.full(len(seeds), fixed) if fixed is not None else select_by_validation(result)
    accuracy = np.asarray(result.metrics["test/accuracy"])[chosen, seeds]
    faa = [100 * float(final_average_accuracy(a)) for a in accuracy]
    record = {"sequence": args.sequence, "method": spec.name, "jax": jax.__version__,
              "reuse_task_key": args.reuse_task_key, "seeds": args.seeds, "final_average_accuracy": faa,
              "accuracy": np.round(accuracy, 6).tolist(), "mean": float(np.mean(faa)),
              "sd": float(np.std(faa, ddof=1)) if len(faa) > 1 else None, "seconds": time.perf_counter() - start}
    point = lambda g: {k: float(v) for k, v in configs[g].items()}
    if fixed is not None:
        record["fixed"] = point(fixed)
    elif len(configs) > 1:
        record["selected"] = [point(g) for g in chosen]
    print(json.dumps(record))


if __name__ == "__main__":
    main()
