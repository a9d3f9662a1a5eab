"""The authors' half of `tests/parity/authors_parity_map.py`: evaluate the authors' MAP-family trainers (joint,
fine-tuning, EWC, SI, ER; github.com/blackblitz/bcl at b838074, bcl/train/trainer/smi/) on inputs read from an .npz
and write the results to an .npz.

Run by `authors_parity_map.py` with the authors' Python (jax 0.4.28) and PYTHONPATH=<their clone>, in a temporary
working directory (`Joint` and `ExperienceReplay` open `./coreset.zarr` on construction). This file imports only
numpy, the helpers of `authors_side.py` and the authors' package, never ours: both are called `bcl`.

  python authors_side_map.py --authors-repo REPO --inputs IN.npz --outputs OUT.npz
  python authors_side_map.py --authors-repo REPO --probe      # exit 0 if their code imports, else print why

Every trainer is their own class built from its block of experiments/svi_cisplit2diris_fcnn.toml, `cls(model, mspec,
hparams)`; only the state the brief fixes is set by hand, as their own methods would leave it:
- step cases: `hparams['minimum']`/`['hessian']` (EWC, SI), `trainer.loss` made non-None at task 3 so that
  `QuadraticConsolidation.update_loss` takes its later-task branch (simple.py:123-139), the joint coreset filled with
  as many rows as tasks 1..t-1 hold (only their count is read, simple.py:36-39); then `update_loss`, and the loss and
  its gradient on the given batch (ER: the given replay batch as `xs2, ys2`, replay.py:20-28).
- EWC's end of task: `trainer.state` holds the given parameters; `update_hparams(xs, ys)` (simple.py:145-172) once
  from a zero Hessian (gives the Fisher alone) and once from the given one.
- SI's end of task: their whole `update_state` (simple.py:178-215) for `n_epochs` epochs from the given parameters,
  with two module globals replaced while it runs: `shuffle` returns our epoch orders (so the batches are ours) and
  `tree.full_like` returns the given starting accumulator (line 192; zeros in their code).
- ER's end of task: `update_hparams` for tasks 1..t (replay.py:30-34, coreset.py:143-155), on the task data and
  again, in a new coreset, on an index probe (inputs [position, task], the real labels); then `coreset.choice`
  (coreset.py:157-174) on the probe coreset with `n_draws` keys.
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from authors_side import _array, _unflatten, load_experiment, probe_imports, side_main  # numpy only at import: safe in the authors' environment
from authors_parity import flatten as _flatten

MAP_CLASSES = ("Joint", "Finetuning", "ElasticWeightConsolidation", "SynapticIntelligence", "ExperienceReplay")


def probe(repo: Path) -> int:
    return probe_imports("bcl.train.trainer.smi.replay", "bcl.train.trainer.smi.simple")


def _trainer(classes, block, model, mspec, **overrides):
    hparams = json.loads(json.dumps(block["hparams"]["train"])) | overrides
    return classes[block["name"]](model, mspec, hparams)


def _step(trainer, arrays, case, mspec):
    "Loss, NLL and gradient of the trainer's `update_loss` objective on the given batch (and replay batch)."
    import jax
    import jax.numpy as jnp
    params = _unflatten(arrays, "params")
    if any(key.startswith("minimum/") for key in arrays):
        trainer.hparams["minimum"] = _unflatten(arrays, "minimum")
        trainer.hparams["hessian"] = _unflatten(arrays, "hessian")
    if case["task"] > 1 and case["method"] in ("ewc", "si"):
        trainer.loss = "a later task"  # update_loss only asks `self.loss is None`
    if case["method"] == "joint" and case["n_previous"]:
        n = int(case["n_previous"])  # JointCoreset.update appends rows; update_loss reads only their number
        trainer.hparams["coreset"].update(np.zeros((n, *mspec.in_shape), np.float32), np.zeros(n, np.int32))
    n_train = int(case["n_train"])
    trainer.update_loss(np.zeros((n_train, *mspec.in_shape), np.float32), np.zeros(n_train, np.int32))
    xs1, ys1 = _array(arrays["xs1"]), jnp.asarray(arrays["ys1"])
    args = (params, xs1, ys1)
    xs, ys = xs1, ys1
    if case["method"] == "er":
        xs2, ys2 = _array(arrays["xs2"]), jnp.asarray(arrays["ys2"])
        args += (xs2, ys2)
        xs, ys = jnp.concatenate([xs1, xs2]), jnp.concatenate([ys1, ys2])
    loss, grads = jax.value_and_grad(trainer.loss)(*args)
    nll = trainer.hparams["nll"](params, xs, ys)
    out = {"loss": np.asarray(loss), "nll": np.asarray(nll)}
    return _flatten(grads, "grad", out)


def _ewc_end(trainer, arrays):
    import jax
    import jax.numpy as jnp
    import optax
    from flax.training.train_state import TrainState
    params = _unflatten(arrays, "params")
    trainer.state = TrainState.create(apply_fn=trainer.model.apply, params=params, tx=optax.sgd(0.0))
    xs, ys = _array(arrays["xs"]), np.asarray(arrays["ys"])
    out: dict = {}
    trainer.hparams["hessian"] = jax.tree_util.tree_map(jnp.zeros_like, params)
    trainer.update_hparams(xs, ys)
    _flatten(trainer.hparams["hessian"], "fisher", out)
    trainer.hparams["hessian"] = _unflatten(arrays, "hessian")
    trainer.update_hparams(xs, ys)
    _flatten(trainer.hparams["hessian"], "hessian", out)
    return _flatten(trainer.hparams["minimum"], "minimum", out)


def _si_end(trainer, arrays, case):
    import optax
    from flax.training.train_state import TrainState
    from bcl.train.trainer.smi import simple
    xs, ys = _array(arrays["xs"]), np.asarray(arrays["ys"])
    trainer.hparams["minimum"] = _unflatten(arrays, "minimum")
    trainer.hparams["hessian"] = _unflatten(arrays, "hessian")
    if case["task"] > 1:
        trainer.loss = "a later task"
    trainer.update_loss(xs, ys)
    # _init_state keeps self.state.params when a state exists (bcl/train/trainer/__init__.py:88-98)
    trainer.state = TrainState.create(apply_fn=trainer.model.apply, params=_unflatten(arrays, "params"),
                                      tx=optax.sgd(0.0))
    orders = iter(np.asarray(arrays["orders"]))
    omega = _unflatten(arrays, "omega")
    saved = simple.shuffle, simple.tree
    simple.shuffle = lambda key, length: next(orders)
    simple.tree = SimpleNamespace(full_like=lambda target, value: omega)
    try:
        for _ in trainer.update_state(xs, ys):
            pass
    finally:
        simple.shuffle, simple.tree = saved
    out: dict = {}
    _flatten(trainer.state.params, "params", out)
    _flatten(trainer.hparams["hessian"], "hessian", out)
    return _flatten(trainer.hparams["minimum"], "minimum", out)


def _er_end(trainer_of, arrays, case):
    """Their coreset after tasks 1..t: once on the task data, once on an index probe (inputs [position, task],
    the real labels) whose stored rows and `choice` draws show which positions and tasks were taken."""
    from jax import random
    out = {}
    for data, prefix in ((lambda t: arrays[f"xs{t}"], "stored"), (lambda t: _probe_xs(t, arrays), "probe")):
        trainer = trainer_of()  # reopens ./coreset.zarr with mode 'w': a new, empty coreset
        coreset = trainer.hparams["coreset"]
        for t in range(1, case["task"] + 1):
            trainer.update_hparams(np.asarray(data(t)), np.asarray(arrays[f"ys{t}"]))
        for t in range(1, coreset.task_count + 1):
            out[f"{prefix}/xs{t}"] = np.asarray(coreset.zarr[f"task{t}"]["xs"][:])
            out[f"{prefix}/ys{t}"] = np.asarray(coreset.zarr[f"task{t}"]["ys"][:])
    coreset.create_memmap()
    draws = [coreset.choice(key, trainer.hparams["coreset_batch_size"])
             for key in random.split(random.key(int(case["seed"])), int(case["n_draws"]))]
    coreset.delete_memmap()
    out["draws/xs"] = np.stack([np.asarray(d[0]) for d in draws])
    out["draws/ys"] = np.stack([np.asarray(d[1]) for d in draws])
    return out


def _probe_xs(t: int, arrays) -> np.ndarray:
    "Inputs [position, task] of task t's rows (the same construction as `authors_parity_map.probe_xs`)."
    n = len(arrays[f"ys{t}"])
    return np.stack([np.arange(n, dtype=np.float32), np.full(n, t, np.float32)], axis=1)


def evaluate(repo: Path, inputs: Path, outputs: Path) -> None:
    import jax
    from bcl.train.trainer.smi import replay, simple

    data, meta, spec, blocks, mspec, model, classes = load_experiment(repo, inputs, (simple, replay))

    result: dict = {}
    info: dict = {"jax": jax.__version__, "x64": bool(jax.config.jax_enable_x64), "cases": {},
                  "model": spec["model"],
                  "blocks": {name: [b["hparams"]["train"] | {"id": b["id"]} for b in spec["trainers"]
                                    if b.get("name") == name] for name in MAP_CLASSES}}
    start = time.perf_counter()
    for case in meta["cases"]:
        name = case["name"]
        arrays = {k[len(name) + 1:]: v for k, v in data.items() if k.startswith(name + "/")}
        block = blocks[case["authors_id"]]
        epochs = {"n_epochs": case["epochs"]} if case["kind"] == "si_end" else {}
        make = lambda: _trainer(classes, block, model, mspec, **epochs)  # noqa: E731
        trainer = make() if case["kind"] != "er_end" else None
        if case["kind"] == "step":
            out = _step(trainer, arrays, case, mspec)
        elif case["kind"] == "ewc_end":
            out = _ewc_end(trainer, arrays)
        elif case["kind"] == "si_end":
            out = _si_end(trainer, arrays, case)
        else:
            out = _er_end(make, arrays, case)
        result |= {f"{name}/{k}": v for k, v in out.items()}
        print(f"authors' side: {name} done at {time.perf_counter() - start:.0f} s", file=sys.stderr, flush=True)
        loss = getattr(trainer, "loss", None)
        info["cases"][name] = {"class": block["name"], "toml_id": block["id"], "hparams": block["hparams"]["train"],
                               "loss_function": getattr(getattr(loss, "__wrapped__", loss), "__qualname__", None)}
    result["info"] = np.asarray(json.dumps(info))
    np.savez(outputs, **result)


def main(argv=None) -> int:
    return side_main(argv, __doc__, evaluate, probe)


if __name__ == "__main__":
    raise SystemExit(main())
