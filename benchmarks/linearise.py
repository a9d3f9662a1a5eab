"""Linearisation benchmark: prints one JSON line per (model, implementation), then one summary line per model.

For the 256-256 FCNN and the MNIST CNN of `bcl.models` (28×28×1 inputs, d = 10 outputs), at n = 64 inducing
points, it measures the function-space output means and diagonal variances of `bcl.vi.linearise`:

- `reference`: explicit per-example Jacobian (n·d·P floats);
- `fast_chunk{1,8}` / `fast_all`: the fast path with `chunk_size` 1, 8 or None (all examples vmapped at once);
- `mixture_reference` / `mixture_fast`: a K = 3 mixture, every component linearised at its own mean
  (`lax.map` over components of the reference, and `mixture_output_mean_and_variance` with chunk_size 1);
- `dense` / `mixture_dense`: the per-layer formula (`fast_output_mean_and_variance` and
  `fast_mixture_output_mean_and_variance`): dense networks layer by layer, the CNNs through recorded layer inputs,
  d backward passes of the batch and per-example kernel gradients from input patches;
- `grad_fast_chunk1` / `grad_dense` / `grad_mixture_fast` / `grad_mixture_dense`: one `jax.value_and_grad`, with
  respect to q's means and ρ (and logits), of an SFSVI-like loss of the outputs, Σ means + Σ variances at the n
  inducing points (summed over components for the mixture), through the generic path with chunk_size 1 or
  through the per-layer formula.

Each case runs in a fresh subprocess, so that its peak memory can be read from `resource.getrusage`:
`rss_delta_mib` is the growth of the process's maximum resident set size from just before compilation to the
end (compilation and five timed calls included). `xla_temp_mib` is XLA's own estimate of the compiled program's
temporary buffers (`compiled.memory_analysis().temp_size_in_bytes`). `ms_per_call` is the median wall time of
the timed calls after compilation; `compile_s` is lowering plus compilation. The parent compares every case's
outputs with the reference's: `max_rel_diff_variance` = max |v − v_ref| / v_ref, `max_rel_diff_mean` =
max |m − m_ref| / max |m_ref|; a gradient case is compared with the generic path's gradient case
(`grad_fast_chunk1`, `grad_mixture_fast`): `rel_diff_loss` and `max_rel_diff_grad` = max |g − g_ref| / max |g_ref|
over all parameters. The machine is shared: the load average is printed with every line.

Usage: python benchmarks/linearise.py [--models fcnn256 cnn_mnist] [--implementations ...] [--repeats 5]
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

N_INDUCING, N_OUTPUTS, N_COMPONENTS = 64, 10, 3
INPUT_SHAPE = (28, 28, 1)
IMPLEMENTATIONS = ("reference", "fast_chunk1", "fast_chunk8", "fast_all", "mixture_reference", "mixture_fast",
                   "dense", "mixture_dense", "grad_fast_chunk1", "grad_dense", "grad_mixture_fast", "grad_mixture_dense")
# what each implementation's outputs are compared with
BASELINES = {"fast_chunk1": "reference", "fast_chunk8": "reference", "fast_all": "reference", "dense": "reference",
             "mixture_fast": "mixture_reference", "mixture_dense": "mixture_reference",
             "grad_dense": "grad_fast_chunk1", "grad_mixture_dense": "grad_mixture_fast"}


def _max_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def run_case(model_name: str, implementation: str, repeats: int, out_path: str) -> dict:
    "Compile and time one implementation on one model in this process; save its outputs to `out_path`."
    import jax
    import jax.numpy as jnp
    import numpy as np

    from jax.flatten_util import ravel_pytree

    from bcl.core import tree_size
    from bcl.vi.gaussian import Gaussian, gaussian_init, gaussian_variance
    from bcl.vi.linearise import (fast_gaussian_output_mean_and_variance, fast_mixture_output_mean_and_variance,
                               fast_output_mean_and_variance, gaussian_output_mean_and_variance,
                               mixture_output_mean_and_variance, output_mean_and_variance,
                               output_mean_and_variance_reference)
    from bcl.vi.mixture import mixture_init
    from bcl.models import make_model

    model = make_model(model_name, N_OUTPUTS, INPUT_SHAPE)
    xs = jax.random.uniform(jax.random.key(0), (N_INDUCING, *INPUT_SHAPE))
    mixture = "mixture" in implementation
    if implementation.startswith("grad_"):
        moments = {"grad_fast_chunk1": partial(gaussian_output_mean_and_variance, model.apply, chunk_size=1),
                   "grad_dense": partial(fast_gaussian_output_mean_and_variance, model),
                   "grad_mixture_fast": partial(mixture_output_mean_and_variance, model.apply, chunk_size=1),
                   "grad_mixture_dense": partial(fast_mixture_output_mean_and_variance, model)}[implementation]
        q = (mixture_init(jax.random.key(1), model.init, N_COMPONENTS) if mixture
             else gaussian_init(jax.random.key(1), model.init(jax.random.key(2))))

        def loss(q, xs):
            means, variances = moments(q, xs)
            return jnp.sum(means) + jnp.sum(variances)

        def function(q, xs):  # (loss, gradient flattened to one vector), saved as "mean" and "variance"
            value, grad = jax.value_and_grad(loss)(q, xs)
            return value[None], ravel_pytree(grad)[0]
        args = (q, xs)
        n_params = tree_size(q.mean) // (N_COMPONENTS if mixture else 1)
    elif mixture:
        q = mixture_init(jax.random.key(1), model.init, N_COMPONENTS)
        if implementation == "mixture_fast":
            function = partial(mixture_output_mean_and_variance, model.apply, chunk_size=1)
        elif implementation == "mixture_dense":
            function = partial(fast_mixture_output_mean_and_variance, model)
        else:
            def function(q, xs):
                variance = gaussian_variance(Gaussian(q.mean, q.rho))  # elementwise: keeps the leading K axis
                return jax.lax.map(lambda mv: output_mean_and_variance_reference(model.apply, *mv, xs),
                                   (q.mean, variance))
        args = (q, xs)
        n_params = tree_size(q.mean) // N_COMPONENTS
    else:
        q = gaussian_init(jax.random.key(1), model.init(jax.random.key(2)))
        chunk = {"fast_chunk1": 1, "fast_chunk8": 8, "fast_all": None}.get(implementation)
        if implementation == "dense":
            function = lambda q, xs: fast_output_mean_and_variance(model, q.mean, gaussian_variance(q), xs)
        else:
            impl = (output_mean_and_variance_reference if implementation == "reference"
                    else partial(output_mean_and_variance, chunk_size=chunk))
            function = lambda q, xs: impl(model.apply, q.mean, gaussian_variance(q), xs)
        args = (q, xs)
        n_params = tree_size(q.mean)
    jax.block_until_ready(args)

    rss_before = _max_rss_mib()
    start = time.perf_counter()
    compiled = jax.jit(function).lower(*args).compile()
    compile_s = time.perf_counter() - start
    memory = compiled.memory_analysis()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        outputs = jax.block_until_ready(compiled(*args))
        times.append(time.perf_counter() - start)
    rss_delta = _max_rss_mib() - rss_before
    np.savez(out_path, mean=np.asarray(outputs[0]), variance=np.asarray(outputs[1]))
    return {"model": model_name, "implementation": implementation, "n": N_INDUCING, "d": N_OUTPUTS,
            "K": N_COMPONENTS if mixture else 1, "n_params": n_params,
            "ms_per_call": round(1000 * float(np.median(times)), 2), "compile_s": round(compile_s, 2),
            "repeats": repeats, "rss_delta_mib": round(rss_delta, 1),
            "xla_temp_mib": round(memory.temp_size_in_bytes / 2**20, 1) if memory is not None else None,
            "device": jax.devices()[0].platform, "jax": jax.__version__}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["fcnn256", "cnn_mnist"])
    parser.add_argument("--implementations", nargs="+", default=list(IMPLEMENTATIONS))
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--case", nargs=2, metavar=("MODEL", "IMPLEMENTATION"), help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.case:
        print(json.dumps(run_case(*args.case, args.repeats, args.out)), flush=True)
        return

    import numpy as np

    with tempfile.TemporaryDirectory() as folder:
        for model_name in args.models:
            results, outputs = {}, {}
            # baselines first, so that every other case can be compared with its baseline's outputs
            for implementation in sorted(args.implementations, key=lambda name: name in BASELINES):
                out = os.path.join(folder, f"{model_name}_{implementation}.npz")
                done = subprocess.run([sys.executable, __file__, "--case", model_name, implementation,
                                       "--repeats", str(args.repeats), "--out", out],
                                      capture_output=True, text=True)
                if done.returncode != 0:
                    print(json.dumps({"model": model_name, "implementation": implementation,
                                      "error": done.stderr.strip().splitlines()[-1:]}), flush=True)
                    continue
                result = json.loads(done.stdout.strip().splitlines()[-1])
                outputs[implementation] = dict(np.load(out))
                reference = outputs.get(BASELINES.get(implementation))
                got = outputs[implementation]
                if reference is not None and implementation.startswith("grad_"):
                    result["rel_diff_loss"] = float(np.abs(got["mean"] - reference["mean"])[0]
                                                    / np.abs(reference["mean"])[0])
                    result["max_rel_diff_grad"] = float(np.max(np.abs(got["variance"] - reference["variance"]))
                                                        / np.max(np.abs(reference["variance"])))
                elif reference is not None:
                    result["max_rel_diff_variance"] = float(np.max(np.abs(got["variance"] - reference["variance"])
                                                                   / reference["variance"]))
                    result["max_rel_diff_mean"] = float(np.max(np.abs(got["mean"] - reference["mean"]))
                                                        / np.max(np.abs(reference["mean"])))
                result["load_average_1min"] = round(os.getloadavg()[0], 2)
                results[implementation] = result
                print(json.dumps(result), flush=True)
            summary = {"model": model_name, "summary": "speed ratio = baseline ms / implementation ms (baseline: "
                       "reference, mixture_reference, or the generic path's gradient case)"}
            for implementation, result in results.items():
                base = results.get(BASELINES.get(implementation))
                if base is not None:
                    summary[f"speedup_{implementation}"] = round(base["ms_per_call"] / result["ms_per_call"], 2)
                    summary[f"memory_ratio_{implementation}"] = (
                        round(base["xla_temp_mib"] / result["xla_temp_mib"], 1) if result["xla_temp_mib"] else None)
            print(json.dumps(summary), flush=True)


if __name__ == "__main__":
    main()
