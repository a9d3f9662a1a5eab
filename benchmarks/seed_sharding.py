"""Seeds split over devices (`bcl.engine.sequence.seed_mesh`): wall time of one cell's training on 1 and on 2 CPU host devices.

Fine-tuning of fcnn256 on CI Split MNIST-5k (5 tasks, batch 64), 4 seeds as the vmapped axis; the same program in a
child process with `XLA_FLAGS=--xla_force_host_platform_device_count=N` for N = 1, 2 (JAX fixes its devices when it
starts). Prints one JSON line per run and a last line with the ratio of the run times (2 devices / 1; below 1: faster)
and the 1-minute load average before and after (the machine may be shared: read the ratio with the load).

Usage: python benchmarks/seed_sharding.py [--epochs 3] [--seeds 4] [--repeats 2]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = r'''
import json, os, sys, time
import jax
from bcl.data.sequences import load_sequence
from bcl.methods.map import finetuning
from bcl.models import make_model
from bcl.engine.sequence import seed_mesh, train_sequence
epochs, n_seeds = int(sys.argv[1]), int(sys.argv[2])
sequence = load_sequence("cisplitmnist5k")
method = finetuning(make_model("fcnn256", sequence.n_outputs, sequence.input_shape), "softmax", batch_size=64,
                    epochs=epochs)
start, cpu = time.perf_counter(), time.process_time()
result = train_sequence(method, sequence, {"learning_rate": 1e-3}, seeds=tuple(range(n_seeds)), progress=False)
mesh = seed_mesh(n_seeds)
print(json.dumps({"devices": len(jax.devices()), "mesh": None if mesh is None else mesh.size,
                  "wall_s": time.perf_counter() - start, "cpu_s": time.process_time() - cpu, **result.timings}))
'''


def run(devices: int, epochs: int, seeds: int) -> dict:
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "TQDM_DISABLE": "1", "PYTHONPATH": str(ROOT),
           "XLA_FLAGS": f"--xla_force_host_platform_device_count={devices}"}
    done = subprocess.run([sys.executable, "-c", CHILD, str(epochs), str(seeds)], env=env, capture_output=True,
                          text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--seeds", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    runs = {1: [], 2: []}
    for _ in range(args.repeats):  # interleaved, so that a change of load falls on both
        for devices in (1, 2):
            record = run(devices, args.epochs, args.seeds)
            runs[devices].append(record)
            print(json.dumps({"benchmark": "seed_sharding", "epochs": args.epochs, "seeds": args.seeds, **record}),
                  flush=True)
    best = {d: min(r["run_s"] for r in rs) for d, rs in runs.items()}
    wall = {d: min(r["wall_s"] for r in rs) for d, rs in runs.items()}
    print(json.dumps({"benchmark": "seed_sharding", "summary": True, "cores": len(os.sched_getaffinity(0)),
                      "run_s_1_device": best[1], "run_s_2_devices": best[2], "run_ratio_2_over_1": best[2] / best[1],
                      "wall_s_1_device": wall[1], "wall_s_2_devices": wall[2], "wall_ratio_2_over_1": wall[2] / wall[1],
                      "load_before": load_before, "load_after": os.getloadavg()[0]}))


if __name__ == "__main__":
    main()
