"""Benchmark of the eight variational methods; prints JSON lines.

1. `step_ratio`: per method, the time of one training step relative to fine-tuning's on the same data and batch
   size, for (a) the linear head on 64-d inputs (10 classes) and (b) the 256-256 FCNN on 28×28 inputs (10 classes),
   both with the image preset (B = 64 for P-methods, 32+32 for L-methods, S = 10, K = 3, M = 64). Measured as the
   run time of one compiled task program (`epochs` epochs over `n` random points), compilation excluded.
2. `iris_total`: the total wall time of all eight methods on cisplit2diris with the paper's 2-D settings
   (one seed, 100 epochs, evaluation after every task), with compile and run time summed over the methods; with
   `--workers 2` two methods train at once (threads). Per method it also prints the final average accuracy.
3. `compile_size` (with `--compile-size`): per method, the size of the optimised XLA program of one cisplit2diris
   task (HLO lines and fusions, a machine-independent measure of compile cost) and of the prediction program, with
   their lowering and compile times (which depend on the machine's load).

`--component-noise collapsed` (the same law of samples as the default) or `weighted-std` (`shared` before issue 33) runs the GM methods with one
normal per sample and parameter instead of one per component (`bcl.vi.mixture.mixture_sample`); every line records
the choice.

Usage: python benchmarks/svi.py [--skip-steps] [--skip-iris] [--compile-size] [--n 640] [--epochs 3] [--repeats 3]
       [--models linear fcnn256] [--methods P-G-VCL ...] [--component-noise independent|collapsed|weighted-std]
"""
from __future__ import annotations

import argparse
import json
import re
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import jax
import jax.numpy as jnp
import numpy as np

from bcl.core import Split, Task, TaskSequence
from bcl.data.sequences import load_sequence
from bcl.methods.map import finetuning
from bcl.vi.mixture import COMPONENT_NOISE
from bcl.models import make_model
from bcl.metrics import final_average_accuracy
from bcl.engine.compilation import PROGRAMS
from bcl.engine.sequence import train_sequence
from bcl.factory import build, build_on
from bcl.paper import SVI_METHODS as METHOD_NAMES, SequenceSetup
from bcl.engine.train import make_task_program, vmap_program


def task_run_time(method, sequence, learning_rate, repeats=3):
    "Compile time and best-of-`repeats` run time of the task-1 program (one seed, one configuration)."
    xs, ys = jnp.asarray(sequence.tasks[0].train.xs), jnp.asarray(sequence.tasks[0].train.ys)
    state = jax.tree.map(lambda x: x[None, None], method.init(jax.random.key(0), sequence))
    args = (jnp.stack([jax.random.key(1)]), state, {"learning_rate": jnp.array([learning_rate], jnp.float32)},
            xs, ys, jnp.int32(1))
    start = time.perf_counter()
    compiled = jax.jit(vmap_program(make_task_program(method, len(ys)))).lower(*args).compile()
    compile_s = time.perf_counter() - start
    best = np.inf
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(compiled(*args))
        best = min(best, time.perf_counter() - start)
    return compile_s, best


def step_ratios(model_name, input_shape, n, epochs, low, high, repeats=3, methods=None, component_noise="independent"):
    rng = np.random.default_rng(0)
    xs = rng.uniform(low, high, size=(n, *input_shape)).astype(np.float32)
    split = Split(xs, rng.integers(0, 10, n).astype(np.int32))
    sequence = TaskSequence("bench", (Task(split, split, split, tuple(range(10))),) * 2, 10, "softmax",
                            tuple(input_shape), (None, None))
    model = make_model(model_name, 10, input_shape)
    setup = SequenceSetup("image", model_name, low, high)
    suite = {name: build_on(name, model, "softmax", setup, component_noise=component_noise, epochs=epochs)[1:3]
             for name in methods or METHOD_NAMES}
    baselines = {}
    for name, (method, hyper) in suite.items():
        batch = method.training.batch_size
        if batch not in baselines:
            baselines[batch] = task_run_time(finetuning(model, "softmax", batch_size=batch, epochs=epochs), sequence,
                                             0.01, repeats)[1]
        compile_s, run_s = task_run_time(method, sequence, hyper["learning_rate"], repeats)
        steps = epochs * -(-n // batch)
        print(json.dumps({"benchmark": "step_ratio", "model": model_name, "method": name, "batch_size": batch,
                          "steps": steps, "s_per_step": round(run_s / steps, 7),
                          "finetuning_s_per_step": round(baselines[batch] / steps, 7),
                          "ratio_to_finetuning": round(run_s / baselines[batch], 2),
                          "compile_s": round(compile_s, 2), "component_noise": component_noise,
                          "device": jax.devices()[0].platform}), flush=True)


def iris_total(component_noise="independent", workers=1):
    """All eight methods on cisplit2diris, one seed; `workers` > 1 trains that many methods at once in threads
    (XLA compiles and runs outside Python's lock, so on a multi-core CPU the methods' compilations overlap)."""
    iris = load_sequence("cisplit2diris")
    PROGRAMS.cache.clear()
    suite = {name: build(name, iris, component_noise=component_noise)[1:3] for name in METHOD_NAMES}

    def one(item):
        name, (method, hyper) = item
        t = time.perf_counter()
        result = train_sequence(method, iris, hyper, [0], progress=False)
        return name, result, time.perf_counter() - t

    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        done = list(pool.map(one, suite.items()))
    wall = time.perf_counter() - start
    per_method = {name: {"wall_s": round(w, 2), "compile_s": round(r.timings["compile_s"], 2),
                         "run_s": round(r.timings["run_s"], 2),
                         "final_average_accuracy": round(float(final_average_accuracy(r.metrics["test/accuracy"])[0, 0]) * 100, 2)}
                  for name, r, w in done}
    totals = {k: sum(r.timings[k] for _, r, _ in done) for k in ("compile_s", "run_s")}
    print(json.dumps({"benchmark": "iris_total", "sequence": "cisplit2diris", "seeds": 1, "methods": len(per_method),
                      "workers": workers, "wall_s": round(wall, 2), "compile_s": round(totals["compile_s"], 2),
                      "run_s": round(totals["run_s"], 2), "per_method": per_method,
                      "component_noise": component_noise, "device": jax.devices()[0].platform}), flush=True)


def _compile_stats(fn, *args):
    "Lowering seconds, compile seconds, optimised HLO lines and fusion count of `jax.jit(fn)` at `args`."
    start = time.perf_counter()
    lowered = jax.jit(fn).lower(*args)
    lower_s = time.perf_counter() - start
    start = time.perf_counter()
    text = lowered.compile().as_text()
    compile_s = time.perf_counter() - start
    return {"lower_s": round(lower_s, 2), "compile_s": round(compile_s, 2), "hlo_lines": len(text.splitlines()),
            "fusions": len(re.findall(r"= \S+ fusion\(", text))}


def compile_size(methods=None):
    iris = load_sequence("cisplit2diris")
    suite = {name: build(name, iris)[1:3] for name in methods or METHOD_NAMES}
    xs, ys = jnp.asarray(iris.tasks[0].train.xs), jnp.asarray(iris.tasks[0].train.ys)
    for name, (method, hyper) in suite.items():
        state = jax.tree.map(lambda x: x[None, None], method.init(jax.random.key(0), iris))
        args = (jnp.stack([jax.random.key(1)]), state, {"learning_rate": jnp.array([hyper["learning_rate"]])},
                xs, ys, jnp.int32(1))
        task = _compile_stats(vmap_program(make_task_program(method, len(ys))), *args)
        predict = _compile_stats(jax.vmap(method.predict, in_axes=(0, 0, None)), jnp.stack([jax.random.key(2)]),
                                 jax.tree.map(lambda x: x[0], state.params), xs)
        print(json.dumps({"benchmark": "compile_size", "sequence": "cisplit2diris", "method": name, "task": task,
                          "predict": predict, "device": jax.devices()[0].platform}), flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--skip-steps", action="store_true")
    parser.add_argument("--skip-iris", action="store_true")
    parser.add_argument("--compile-size", action="store_true")
    parser.add_argument("--n", type=int, default=640)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--models", nargs="*", default=["linear", "fcnn256"])
    parser.add_argument("--methods", nargs="*", default=list(METHOD_NAMES))
    parser.add_argument("--component-noise", choices=list(COMPONENT_NOISE), default="independent")
    parser.add_argument("--workers", type=int, default=1, help="methods trained at once on Iris (threads)")
    args = parser.parse_args()
    if args.compile_size:
        compile_size(args.methods)
    if not args.skip_iris:
        iris_total(args.component_noise, args.workers)
    if not args.skip_steps:
        if "linear" in args.models:
            step_ratios("linear", (64,), args.n, args.epochs, -1.0, 6.0, args.repeats, args.methods,
                        args.component_noise)
        if "fcnn256" in args.models:
            step_ratios("fcnn256", (28, 28, 1), args.n, args.epochs, 0.0, 1.0, args.repeats, args.methods,
                        args.component_noise)


if __name__ == "__main__":
    main()
