"""The authors' half of `tests/parity/authors_parity.py`: evaluate the authors' S-FSVI and VCL objectives, their
gradients, the parameter draws and the BMA predictive on inputs read from an .npz, and write the results to an .npz.

Run by `authors_parity.py` with the authors' Python (github.com/blackblitz/bcl at b838074, jax 0.4.28) and
PYTHONPATH=<their clone>, in a temporary working directory (their replay trainers open `./coreset.zarr` on
construction). This file imports only numpy and the authors' package, never ours: both are called `bcl`.

  python authors_side.py --authors-repo REPO --inputs IN.npz --outputs OUT.npz
  python authors_side.py --authors-repo REPO --probe      # exit 0 if their code imports, else print why

The objective is built by the authors' own trainer class: `cls(model, mspec, hparams)` with the toml block's
`hparams.train` (experiments/svi_cisplit2diris_fcnn.toml), then `trainer.update_loss(xs, ys)`, which picks the
loss function (`gfvfe_cf`, `gmfvfe_ub`, `gpvfe_cf`, `gmpvfe_ub`, wrapped by `concat_fvfe` / `concat_pvfe` for
likelihood-focused replay) and its KL weight. Only two of the trainer's attributes are set by hand, exactly as their
`update_hparams` would leave them: `hparams['prior']` (the previous posterior for prior-focused methods) and
`hparams['coreset']`, replaced by an object with the `task_count` the weight of `PriorExact*SFSVI` reads. The
coreset batch and the inducing inputs are given (not drawn by `coreset.choice`), and so are the standard normals
and Gumbel draws (the `sample` dicts that `gauss.sample` / `gaussmix.sample` would draw).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
import tomllib
from pathlib import Path

import numpy as np

from authors_parity import flatten as _flatten  # stdlib and numpy only: safe in the authors' environment


class _Coreset:
    "Stands in for `TaskIncrementalCoreset` in `update_loss`: only `task_count` is read there."

    def __init__(self, task_count: int):
        self.task_count = int(task_count)


def _array(value):
    "A jnp array; float inputs in float64 when x64 is on (JAX_ENABLE_X64=1, `authors_parity.py --x64`)."
    import jax
    import jax.numpy as jnp
    if jax.config.jax_enable_x64 and np.asarray(value).dtype.kind == "f":
        return jnp.asarray(value, jnp.float64)
    return jnp.asarray(value)


def _unflatten(arrays: dict, prefix: str):
    "Nested dict from the npz keys `prefix/a/b/...` (numbers as jnp arrays)."
    out: dict = {}
    for key, value in arrays.items():
        if not key.startswith(prefix + "/"):
            continue
        parts = key[len(prefix) + 1:].split("/")
        node = out
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = _array(value)
    return out


def probe_imports(*modules: str) -> int:
    "Status 0 and their JAX version when the authors' `modules` import here, else 1 and why (the harness then skips)."
    import importlib
    try:
        import jax
        for module in modules:
            importlib.import_module(module)
    except Exception as error:  # any import failure means: skip
        print(f"{type(error).__name__}: {error}")
        return 1
    print(f"jax {jax.__version__}")
    return 0


def probe(repo: Path) -> int:
    return probe_imports("bcl.train.trainer.svi.replay", "bcl.train.trainer.svi.simple", "bcl.train.training.vi.gauss",
                         "bcl.train.training.vi.gaussmix", "bcl.train.predictor")


def load_experiment(repo: Path, inputs: Path, trainer_modules) -> tuple:
    """Our inputs (.npz) and their meta; the authors' toml named by meta['experiment'], its trainer blocks by id,
    model spec and network (the class the toml names, from their `bcl.models.module_map`: FCNN3, FECNN4, FECNN6),
    and the trainer classes of `trainer_modules` by name. meta['in_shape'], when given, replaces the spec's input
    shape (the 6-layer CNN's toml is CIFAR-10's, 32×32×3; the harness feeds it MNIST's 28×28×1)."""
    import importlib
    from bcl.models import ModelSpec, NLL, module_map
    data = dict(np.load(inputs, allow_pickle=False))
    meta = json.loads(str(data.pop("meta")))
    spec = tomllib.loads((repo / "experiments" / f"{meta['experiment']}.toml").read_text())
    blocks = {t["id"]: t for t in spec["trainers"] if "id" in t}
    mspec_args = dict(spec["model"]["spec"])
    if meta.get("in_shape"):
        mspec_args["in_shape"] = list(meta["in_shape"])
    mspec = ModelSpec(nll=NLL[mspec_args.pop("nll")], **mspec_args)
    name = spec["model"]["name"]
    model = getattr(importlib.import_module(module_map[name]), name)(**spec["model"]["args"])
    classes = {name: getattr(module, name) for module in trainer_modules for name in dir(module)}
    return data, meta, spec, blocks, mspec, model, classes


def evaluate(repo: Path, inputs: Path, outputs: Path) -> None:
    import jax
    import jax.numpy as jnp
    from jax import vmap
    from bcl.train.predictor import BMAPredictor
    from bcl.train.trainer.svi import replay, simple
    from bcl.train.training.vi import gauss, gaussmix

    data, meta, spec, blocks, mspec, model, classes = load_experiment(repo, inputs, (simple, replay))

    result: dict = {}
    info: dict = {"jax": jax.__version__, "x64": bool(jax.config.jax_enable_x64), "cases": {}}
    start = time.perf_counter()
    for case in meta["cases"]:
        name = case["name"]
        arrays = {k[len(name) + 1:]: v for k, v in data.items() if k.startswith(name + "/")}
        block = blocks[case["authors_id"]]
        cls = classes[block["name"]]
        hparams = json.loads(json.dumps(block["hparams"]["train"])) | case.get("hparams", {})  # divided batches
        mix = "logit" in {k.split("/")[1] for k in arrays if k.startswith("params/")}
        vi = gaussmix if mix else gauss
        trainer = cls(model, mspec, hparams)  # opens ./coreset.zarr (a temp dir) for replay trainers
        params = _unflatten(arrays, "params")
        prior = _unflatten(arrays, "prior")
        trainer.hparams["prior"] = prior
        trainer.hparams["coreset"] = _Coreset(case["task_count"])
        n_train = int(case["n_train"])
        trainer.update_loss(np.zeros((n_train, *mspec.in_shape), np.float32), np.zeros(n_train, np.int32))
        sample = _unflatten(arrays, "sample")
        xs1, ys1 = _array(arrays["xs1"]), jnp.asarray(arrays["ys1"])
        xs2, ys2 = _array(arrays["xs2"]), jnp.asarray(arrays["ys2"])
        function_space = "ind_xs" in arrays
        if function_space:
            ind_xs = _array(arrays["ind_xs"])
            # unused by the closed-form / upper-bound losses (mc = false) but part of their signature
            output_sample = trainer._sample(jax.random.key(0), xs=ind_xs)
            args = (params, sample, output_sample)
            args += (xs1, ys1, xs2, ys2, ind_xs) if case["focus"] == "likelihood" else (xs1, ys1, ind_xs)
        else:
            args = (params, sample) + ((xs1, ys1, xs2, ys2) if case["focus"] == "likelihood" else (xs1, ys1))
        loss, grads = jax.value_and_grad(trainer.loss)(*args)

        # the pieces, with the same functions their losses call
        q_param = vi.get_param(params)
        thetas = vi.transform(q_param, sample)
        xs = jnp.concatenate([xs1, xs2]) if case["focus"] == "likelihood" else xs1
        ys = jnp.concatenate([ys1, ys2]) if case["focus"] == "likelihood" else ys1
        nll = vmap(trainer.hparams["nll"], in_axes=(0, None, None))(thetas, xs, ys).mean()
        if function_space:
            q_out = vi.get_output(params, model.apply, ind_xs)
            p_out = vi.get_output(prior, model.apply, ind_xs)
        else:
            q_out, p_out = q_param, vi.get_param(prior)
        kl = gaussmix.kldiv_ub(q_out, p_out) if mix else gauss.kldiv_cf(q_out, p_out)

        pred_sample = _unflatten(arrays, "pred_sample")
        pred_thetas = vi.transform(q_param, pred_sample)
        predictor = BMAPredictor(model, mspec, block["hparams"].get("predict", {}), pred_thetas)
        probs = predictor(_array(arrays["pred_xs"]), decide=False)

        result[f"{name}/loss"] = np.asarray(loss)
        print(f"authors' side: {name} done at {time.perf_counter() - start:.0f} s", file=sys.stderr, flush=True)
        result[f"{name}/nll"] = np.asarray(nll)
        result[f"{name}/kl"] = np.asarray(kl)
        result[f"{name}/probs"] = np.asarray(probs)
        mean = q_param["mean"] if not mix else jax.tree_util.tree_map(lambda m: m[0], q_param["mean"])
        result[f"{name}/forward"] = np.asarray(model.apply({"params": mean}, _array(arrays["pred_xs"])))
        _flatten(grads, f"{name}/grad", result)
        _flatten(thetas, f"{name}/thetas", result)
        if function_space:
            result[f"{name}/out_mean"] = np.asarray(q_out["mean"])
            result[f"{name}/out_var"] = np.asarray(q_out["var"])
        info["cases"][name] = {
            "class": block["name"], "toml_id": block["id"],
            "hparams": {k: v for k, v in hparams.items()
                        if k in ("batch_size", "coreset_batch_size", "noise_batch_size", "sample_size", "n_comp",
                                 "equal_weight", "mc", "precision", "coreset_prob", "coreset_size_per_task")},
            "predict_sample_size": block["hparams"].get("predict", {}).get("sample_size"),
            "loss_function": getattr(getattr(trainer.loss, "__wrapped__", trainer.loss), "__qualname__", "?"),
        }
    result["info"] = np.asarray(json.dumps(info))
    np.savez(outputs, **result)


def side_main(argv, description: str, evaluate, probe) -> int:
    "The command line of an authors' side: `--probe` checks their environment, else `evaluate(repo, inputs, outputs)`."
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--authors-repo", type=Path, required=True)
    parser.add_argument("--inputs", type=Path)
    parser.add_argument("--outputs", type=Path)
    parser.add_argument("--probe", action="store_true")
    args = parser.parse_args(argv)
    repo = args.authors_repo.resolve()
    if str(repo) not in sys.path:
        sys.path.insert(0, str(repo))
    if args.probe:
        return probe(repo)
    evaluate(repo, args.inputs, args.outputs)
    return 0


def main(argv=None) -> int:
    return side_main(argv, __doc__, evaluate, probe)


if __name__ == "__main__":
    raise SystemExit(main())
