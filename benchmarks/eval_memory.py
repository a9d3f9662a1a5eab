"""Evaluation memory benchmark: prints JSON lines.

For one Table faa cell (default: the CNN P-GM-VCL cell on CI split MNIST-5k, offline profile, 5 seeds), XLA's memory
analysis of the evaluation program (`bcl.engine.compilation.program_bytes`) at several chunk sizes, the chunk that
`bcl.engine.compilation.fitting_chunk` picks within its budget (40 % of the free memory), and the wall time of
`predict_in_chunks` on all validation and test points with freshly initialised parameters (the program's cost does
not depend on the parameters' values). Each line carries the provenance (versions, device, CPU, commit).

Usage: python benchmarks/eval_memory.py [--column ci-mnist-cnn] [--method p-gm-vcl] [--seeds 5] [--sizes 16 64 256]
                                         [--skip-predict]
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import jax
import numpy as np

from bcl.core import named_keys
from bcl.provenance import provenance
from bcl.engine.compilation import PROGRAMS, fitting_chunk, free_memory, program_bytes
from bcl.engine.sequence import SPLITS, predict_in_chunks
from bcl.table.plan import plan_cell
from bcl.table.cell import build_cell_method, load_cell_sequence


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--column", default="ci-mnist-cnn")
    parser.add_argument("--method", default="p-gm-vcl")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--sizes", type=int, nargs="+", default=[16, 64, 256])
    parser.add_argument("--skip-predict", action="store_true", help="only the memory analysis and the chosen chunk")
    args = parser.parse_args()
    seeds = list(range(args.seeds))
    plan = plan_cell(args.column, args.method, "offline", seeds)
    sequence = load_cell_sequence(plan, None, False)
    method, _, _ = build_cell_method(plan, sequence)
    keys = jax.vmap(lambda s: named_keys(jax.random.key(s), "predict")["predict"])(np.asarray(seeds))
    state = jax.vmap(lambda k: method.init(k, sequence))(jax.random.split(jax.random.key(0), len(seeds)))
    xs = np.concatenate([np.asarray(getattr(t, split).xs, np.float32) for split in SPLITS for t in sequence.tasks])
    base = {"column": args.column, "method": args.method, "seeds": len(seeds), "points": len(xs),
            "provenance": provenance()}
    make = lambda: jax.vmap(method.predict, in_axes=(0, 0, None))
    for size in args.sizes:
        executable, compile_s = PROGRAMS.compile(("predict", method.predict), make, keys, state.params, xs[:size])
        need = program_bytes(executable)
        print(json.dumps(base | {"chunk": size, "program_mib": None if need is None else need / 2**20,
                                 "compile_s": compile_s}), flush=True)
    free = free_memory()
    timings = {}
    chunk = fitting_chunk(method, keys, state.params, xs, timings=timings)
    line = {"free_gib": free / 2**30, "chosen_chunk": chunk}
    if not args.skip_predict:
        start = time.perf_counter()
        probs = predict_in_chunks(method, keys, state.params, xs, timings=timings)
        line |= {"predict_wall_s": time.perf_counter() - start, "shape": list(probs.shape)}
    print(json.dumps(base | line | timings), flush=True)


if __name__ == "__main__":
    main()
