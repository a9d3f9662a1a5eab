"""One bcl variational method on CI Split 2D Iris over seeds, under whatever JAX the running Python has.

Usage:
  .venv/bin/python benchmarks/iris_seeds.py --method l-g-sfsvi --seeds 0 1 2 ...            # bcl's environment
  PYTHONPATH=OVERLAY:. AUTHORS_VENV/bin/python benchmarks/iris_seeds.py --prepped AUTHORS/data/prepped/cisplit2diris

The second form runs bcl's code in the authors' environment (JAX 0.4.28, flax 0.8.5): OVERLAY is a folder with
optax 0.2.8 (`pip install --no-deps --target OVERLAY optax==0.2.8`; the authors' optax 0.2.5 cannot take a traced
learning rate). There tensorflow-datasets is absent, so the Iris arrays are read from the authors' prepared files
(`python -m bcl.dataprep cisplit2diris` in their clone writes them). They are the same arrays, in the same order, as
`bcl.data.load_sequence('cisplit2diris')` (checked). Comparing the two runs separates what the JAX version does to the
seed distribution from what the implementation does. Prints one JSON line: per seed the final average accuracy and
the T×T test accuracy matrix (row t: after task t), then mean and sd.

`--reuse-task-key` is a diagnostic: every task gets the same training and end-of-task keys, as in the authors'
trainers, which split one fixed key per trainer at every task (bcl/train/trainer/svi/replay.py, `update_state` and
`update_hparams`, at b838074): the same shuffles, inducing inputs, parameter noise and coreset positions for every
task. bcl folds the task index into the seed's key (`bcl.sequence._task_arguments`); the option replaces that fold
by the identity, in `bcl.sequence` only.
"""
from __future__ import annotations

import argparse
import json
import time

import numpy as np


def prepped_sequence(folder: str):
    "The Iris sequence from the authors' prepared arrays (`{training,validation,testing}_{t}_{xs,ys}.npy`)."
    from bcl.core import Split, Task, TaskSequence
    tasks = []
    for t in (1, 2, 3):
        splits = [Split(np.load(f"{folder}/{n}_{t}_xs.npy").astype(np.float32),
                        np.load(f"{folder}/{n}_{t}_ys.npy").astype(np.int32)) for n in ("training", "validation", "testing")]
        tasks.append(Task(*splits, (t - 1,)))
    xs = np.concatenate([task.train.xs for task in tasks])
    return TaskSequence("cisplit2diris", tuple(tasks), 3, "softmax", (2,), (xs.min(0), xs.max(0)),
                        ("setosa", "versicolor", "virginica"), "class")


class _SameKeyEveryTask:
    "Stands in for the `jax` module inside `bcl.sequence`: `jax.random.fold_in(key, t)` returns `key`."
    def __init__(self, jax):
        self._jax = jax
        self.random = _RandomWithoutFold(jax.random)

    def __getattr__(self, name):
        return getattr(self._jax, name)


class _RandomWithoutFold:
    def __init__(self, random):
        self._random = random

    def fold_in(self, key, data):
        return key

    def __getattr__(self, name):
        return getattr(self._random, name)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--method", default="l-g-sfsvi")
    parser.add_argument("--seeds", nargs="+", type=int, default=list(range(20)))
    parser.add_argument("--prepped", default=None, help="the authors' prepared Iris folder (else load_sequence)")
    parser.add_argument("--reuse-task-key", action="store_true", help="the same keys for every task (diagnostic)")
    args = parser.parse_args()
    import jax
    if args.reuse_task_key:
        import bcl.sequence
        bcl.sequence.jax = _SameKeyEveryTask(jax)
    from bcl.metrics import final_average_accuracy
    from bcl.models import make_model
    from bcl.paper import method_name, sequence_setup, svi_settings
    from bcl.sequence import train_sequence
    from bcl.svi import svi_method
    if args.prepped:
        sequence = prepped_sequence(args.prepped)
    else:
        from bcl.data import load_sequence
        sequence = load_sequence("cisplit2diris")
    name = method_name(args.method)
    setup = sequence_setup("cisplit2diris")
    settings = dict(svi_settings(setup.setup)[name])
    learning_rate = settings.pop("learning_rate")
    if name.endswith("sfsvi"):
        settings |= {"inducing_low": setup.inducing_low, "inducing_high": setup.inducing_high}
    method = svi_method(name, make_model(setup.model, 3, (2,)), "softmax", **settings)
    start = time.perf_counter()
    result = train_sequence(method, sequence, {"learning_rate": np.array([learning_rate])}, seeds=args.seeds,
                            progress=False)
    accuracy = np.asarray(result.metrics["test/accuracy"])[0]
    faa = [100 * float(final_average_accuracy(a)) for a in accuracy]
    print(json.dumps({"method": name, "jax": jax.__version__, "reuse_task_key": args.reuse_task_key, "seeds": args.seeds,
                      "final_average_accuracy": faa, "accuracy": np.round(accuracy, 6).tolist(),
                      "mean": float(np.mean(faa)), "sd": float(np.std(faa, ddof=1)) if len(faa) > 1 else None,
                      "seconds": time.perf_counter() - start}))


if __name__ == "__main__":
    main()
