"""Engine benchmark: prints JSON lines.

1. Wall time of the whole MAP suite (joint, fine-tuning, 5 EWC, 15 SI, ER; 100 epochs) on cisplit2diris, one seed,
   split into compile and run time (run = executing compiled programs, including evaluation after each task).
2. The same with 10 seeds as a vmap axis.
3. Time per epoch of fcnn256 fine-tuning on cisplitmnist5k (batch 64), excluding compilation.

Every line also reports the CPU time of the process (`cpu_s`; the machine is shared, so wall time depends on the
load) and the 1-minute load average before and after.

Usage: python benchmarks/engine.py [--skip-mnist] [--only-one-seed] [--compilation-cache DIR]

`--compilation-cache DIR` turns on JAX's persistent compilation cache in DIR: the first run fills it (cold), a second
run reads the executables back (warm). The target figure is the cold one.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import jax

from bcl.data.sequences import load_sequence
from bcl.factory import build
from bcl.methods.map import finetuning
from bcl.models import make_model
from bcl.paper import MAP_METHODS
from bcl.engine.compilation import PROGRAMS
from bcl.engine.sequence import train_sequence


def suite_time(sequence, seeds):
    PROGRAMS.cache.clear()
    totals = {"compile_s": 0.0, "run_s": 0.0}
    load_before = os.getloadavg()[0]
    cpu_start = time.process_time()
    start = time.perf_counter()
    for name in MAP_METHODS:
        _, method, hyper, _ = build(name, sequence)
        result = train_sequence(method, sequence, hyper, seeds, progress=False)
        for k in totals:
            totals[k] += result.timings[k]
    wall = time.perf_counter() - start
    return {"benchmark": "map_suite", "sequence": sequence.name, "seeds": len(seeds), "wall_s": round(wall, 3),
            "compile_s": round(totals["compile_s"], 3), "run_s": round(totals["run_s"], 3),
            "other_s": round(wall - totals["compile_s"] - totals["run_s"], 3),
            "cpu_s": round(time.process_time() - cpu_start, 3), "load_1min_before": load_before,
            "load_1min_after": os.getloadavg()[0], "device": jax.devices()[0].platform}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--skip-mnist", action="store_true")
    parser.add_argument("--only-one-seed", action="store_true", help="skip the 10-seed suite")
    parser.add_argument("--compilation-cache", default=None, help="folder of JAX's persistent compilation cache")
    args = parser.parse_args()
    if args.compilation_cache:
        jax.config.update("jax_compilation_cache_dir", args.compilation_cache)
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    iris = load_sequence("cisplit2diris")
    print(json.dumps(suite_time(iris, [0]) | {"compilation_cache": args.compilation_cache}), flush=True)
    if not args.only_one_seed:
        print(json.dumps(suite_time(iris, list(range(10))) | {"compilation_cache": args.compilation_cache}), flush=True)
    if not args.skip_mnist:
        mnist = load_sequence("cisplitmnist5k")
        model = make_model("fcnn256", mnist.n_outputs, mnist.input_shape)
        epochs = 3
        method = finetuning(model, "softmax", batch_size=64, epochs=epochs)
        first = mnist._asdict() | {"tasks": mnist.tasks[:1]}
        from bcl.core import TaskSequence
        one_task = TaskSequence(**first)
        cpu_start = time.process_time()
        result = train_sequence(method, one_task, {"learning_rate": 0.01}, [0], progress=False)
        cpu = time.process_time() - cpu_start
        n = len(mnist.tasks[0].train)
        print(json.dumps({"benchmark": "fcnn256_epoch", "sequence": "cisplitmnist5k", "task_1_train_points": n,
                          "batch_size": 64, "epochs_timed": epochs,
                          "s_per_epoch_incl_eval": round(result.timings["run_s"] / epochs, 4),
                          "compile_s": round(result.timings["compile_s"], 3), "cpu_s_total": round(cpu, 3),
                          "load_1min": os.getloadavg()[0], "device": jax.devices()[0].platform}), flush=True)


if __name__ == "__main__":
    main()
