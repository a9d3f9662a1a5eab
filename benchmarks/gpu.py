"""Seconds per training step and peak memory of every method on every network of the paper; prints JSON lines.
Runs on any backend (CPU here, CUDA on the lent GPU machines); then projects the GPU-hours of Table faa.

Measure (default): for each (model, method), the compiled task program of `bcl.engine.train.make_task_program`, vmapped as
`bcl.engine.sequence.train_sequence` vmaps it (the method's hyperparameter grid: EWC 5 configurations, SI 15, others 1;
`--seeds` seeds, 5 by default), on synthetic random data of the model's input shape (`--n` points per task, 2 tasks),
with the paper's batch sizes (64 for the FCNN and the linear head, 32 for the CNNs; ER's and the L-methods' batches
as the method factory `bcl.factory` sets them), S = 10 draws, K = 3 components, 10 classes. Compilation is timed apart
(`compile_s`), then the program runs once to warm up and `--repeats` times; `s_per_step` is the best run time over the
number of optimiser steps (each step updates every configuration and seed at once). Every (model, method) runs in a
fresh subprocess, so `peak_bytes` (`jax.devices()[0].memory_stats()["peak_bytes_in_use"]`, null where the backend
keeps no statistics, as on CPU) and `max_rss_bytes` (the process's maximum resident set) are its own.
`xla_temp_bytes` is XLA's own count of the program's scratch memory (`compiled.memory_analysis()`, any backend).
`normals_per_step` counts the standard normals a variational method's step draws for its parameter samples (S × K
for independent mixture noise × network parameters × configurations × seeds); `normals_s_per_step` is the best time
of one compiled `jax.random.normal` of that many on the same device, and `normals_share` its ratio to `s_per_step`:
how much of a step the sampling alone would take.

Models: fcnn256 (28×28×1), cnn_mnist (28×28×1), cnn6 (32×32×3), linear64 / linear512 (the linear head on 64-d and
512-d features), resnet18 (pre-training on 32×32×3, 100 classes, fine-tuning loss, batch 64, one seed) and
cnn_mnist_pretrain (pre-training on EMNIST Letters, 26 classes, batch 64, one seed). Pre-training models run only
"finetuning".

Usage:
  python benchmarks/gpu.py [--models fcnn256 cnn6 ...] [--methods joint ewc P-G-VCL ...] [--seeds 5] [--steps 20]
                           [--n 256] [--repeats 3] [--quick] [--cpu-reference FILE.jsonl] [--out FILE.jsonl]
                           [--component-noise independent|collapsed] [--jobs 4] [--budget-s 300]
  python benchmarks/gpu.py --concurrent K [--models ...] [--methods ...] [...]  # throughput of K cells sharing the device
  python benchmarks/gpu.py --project MEASURED.jsonl [MORE.jsonl ...]  # projected GPU-hours per Table faa cell, total

`--quick`: a smoke run (one epoch over 2 batches of the largest batch size, one timed repeat).
`--concurrent K`: for each (model, method), the step time of one process alone (as above), then of K processes
running the same program at once on the same device (each in its own process, its memory allocated as needed); they
compile and warm up apart, meet at a barrier, and time the same number of calls side by side. One "gpu_concurrent"
line per pair gives `throughput_gain` = K × alone / mean(side by side): how much more work the device does per second
with K cells than with one (K at most; below 1 when they slow each other down more than they overlap). The batch runs
different cells side by side; K copies of one cell stand in for them.
`--cpu-reference FILE`: earlier lines (e.g. benchmarks/results/gpu_cpu_quick.jsonl) matched by (model, method);
each new line gains "cpu_s_per_step" and "speedup" (per configuration × seed when those counts differ).
"""
from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import math
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# ---------------------------------------------------------------------------------------------------------------
# Projection assumptions (Table faa of the paper; batch sizes from its Table hp). One place, edit here.
# ---------------------------------------------------------------------------------------------------------------
PROJECTION = {
    "epochs": 20,  # every method and pre-training, Table hp
    # Training points per sequence after the splits of bcl.data.splits.assemble_sequence (official test set where there is
    # one; 20 % of the training pool held out for validation; without a test set, 20 % test then 20 % validation).
    "train_points": {
        "mnist": 48_000,      # 60,000 MNIST training images − 20 % validation; CI and DI use all 10 digits
        "cifar10": 40_000,    # 50,000 − 20 %
        "cifar8": 32_000,     # CIFAR-10 without bird and frog: 8 classes × 4,000
        "ham8": 6_410,        # HAM10000's 10,015 images × 0.8 (test) × 0.8 (validation), bcl.data.isic
        "ham6": 6_109,        # HAM-8 without vascular lesion (142) and actinic keratosis (~327), × 0.64; approximate
        "emnistletters": 71_040,  # 88,800 EMNIST Letters training images − 20 %
        "cifar100": 40_000,   # 50,000 − 20 %
        "bcn12": 12_126,      # BCN20000's ~18,946 labelled images × 0.64; approximate
    },
    "tasks": {"mnist": 5, "cifar10": 5, "cifar8": 4, "ham8": 4, "ham6": 3},
    # Table faa columns: (sequence data, model measured, pre-training the features come from or None).
    "columns": {
        "fe/CI MNIST": ("mnist", "linear64", "emnistletters"),
        "fe/CI CIFAR-10": ("cifar10", "linear512", "cifar100"),
        "fe/CI HAM-8": ("ham8", "linear512", "bcn12"),
        "fe/DI MNIST": ("mnist", "linear64", "emnistletters"),
        "fe/DI CIFAR-8": ("cifar8", "linear512", "cifar100"),
        "fe/DI HAM-6": ("ham6", "linear512", "bcn12"),
        "CI MNIST FCNN": ("mnist", "fcnn256", None),
        "CI MNIST CNN": ("mnist", "cnn_mnist", None),
        "DI MNIST FCNN": ("mnist", "fcnn256", None),
        "DI MNIST CNN": ("mnist", "cnn_mnist", None),
        "CI CIFAR-10 CNN": ("cifar10", "cnn6", None),
        "DI CIFAR-8 CNN": ("cifar8", "cnn6", None),
        "CI HAM-8 CNN": ("ham8", "cnn6", None),
        "DI HAM-6 CNN": ("ham6", "cnn6", None),
    },
    # Pre-training runs once each (one network, one seed), shared by the columns that use its features.
    "pretraining": {"emnistletters": "cnn_mnist_pretrain", "cifar100": "resnet18", "bcn12": "resnet18"},
    # Per-step costs are measured with 10 outputs (CI); DI columns (1 sigmoid output) are assumed to cost the same.
    # The measured step already holds the 5 vmapped seeds and the EWC (×5) / SI (×15) grids, so nothing multiplies
    # them again. Joint trains at task t on tasks 1..t: (T + 1) / 2 times the steps of one pass over the data.
    # Evaluation after each task, end-of-task work (Fisher, coresets) and compilation are left out.
    # A (model, method) with no measurement is bounded above by the same method on a larger network measured on the
    # same run (its steps counted at that network's batch size, never larger than the bounded one's): marked "bound".
    "upper_bounds": {"linear64": "linear512", "linear512": "cnn_mnist", "fcnn256": "cnn_mnist"},
}

MODELS = {  # name: (network, input shape, outputs, batch size, bcl.vi.svi preset, inducing bounds, kind)
    "fcnn256": ("fcnn256", (28, 28, 1), 10, 64, "image", (0.0, 1.0), "cl"),
    "cnn_mnist": ("cnn_mnist", (28, 28, 1), 10, 32, "image_cnn", (0.0, 1.0), "cl"),
    "cnn6": ("cnn6", (32, 32, 3), 10, 32, "image_cnn", (0.0, 1.0), "cl"),
    "linear64": ("linear", (64,), 10, 64, "image", (-1.0, 6.0), "cl"),
    "linear512": ("linear", (512,), 10, 64, "image", (-1.0, 6.0), "cl"),
    "resnet18": ("resnet18", (32, 32, 3), 100, 64, None, None, "pretraining"),
    "cnn_mnist_pretrain": ("cnn_mnist_pretrain", (28, 28, 1), 26, 64, None, None, "pretraining"),
}
DEFAULT_MODELS = ("fcnn256", "cnn_mnist", "cnn6", "linear64", "linear512", "resnet18")
MAP_METHODS = ("joint", "finetuning", "ewc", "si", "er")
SVI_METHODS = ("P-G-VCL", "L-G-VCL", "P-GM-VCL", "L-GM-VCL", "P-G-SFSVI", "L-G-SFSVI", "P-GM-SFSVI", "L-GM-SFSVI")
METHODS = MAP_METHODS + SVI_METHODS
CORESET_SIZE = 256


def method_parts(method_name: str):
    "The paper's record of a method's parts (`bcl.paper.METHOD_INFO`: kind, focus, family, space), any letter case."
    from bcl.paper import METHOD_INFO
    return METHOD_INFO[method_name.lower()]


def is_mixture(method_name: str) -> bool:
    "Whether a method's variational family is the Gaussian mixture (its component noise applies)."
    from bcl.paper import Family
    return method_parts(method_name).family is Family.MIXTURE


def _provenance() -> dict:
    try:
        from bcl.provenance import provenance
        return provenance()
    except Exception:  # bcl.provenance absent or failing: the minimum to tell runs apart
        import jax
        def git(*args):
            try:
                return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=10).stdout.strip()
            except Exception:
                return None
        return {"git_commit": git("rev-parse", "HEAD"), "git_dirty": bool(git("status", "--porcelain", "bcl")),
                "jax": jax.__version__, "jaxlib": getattr(__import__("jaxlib"), "__version__", None),
                "python": platform.python_version(), "machine": platform.machine()}


def build_method(model_name: str, method_name: str, epochs: int, conv_impl: str, component_noise: str = "independent"):
    "(method, hyper) for `method_name` on model `model_name` with the paper's settings, by the method factory."
    from bcl.factory import make_method, method_settings
    from bcl.methods.map import finetuning
    from bcl.models import make_model
    from bcl.paper import SequenceSetup
    network, shape, outputs, batch, preset, bounds, kind = MODELS[model_name]
    model = make_model(network, outputs, shape, conv_impl=conv_impl if network.startswith("cnn") else "xla")
    if kind == "pretraining":
        if method_name != "finetuning":
            raise ValueError(f"{model_name} is a pre-training network: only 'finetuning' is measured on it.")
        return finetuning(model, "softmax", batch_size=batch, epochs=epochs), {"learning_rate": 0.001}
    setup = SequenceSetup(preset, network, *bounds)
    settings = method_settings(method_name, setup, component_noise=component_noise, epochs=epochs)
    return make_method(method_name, model, "softmax", settings)


def measure(model_name: str, method_name: str, *, seeds: int, steps: int, n: int, repeats: int,
            conv_impl: str, component_noise: str = "independent", timing_lock: str | None = None,
            barrier: tuple[str, int] | None = None) -> dict:
    """One (model, method): compile, warm up, time; the JSON record. With `timing_lock` (a file path) the warm-up and
    the timed runs hold an exclusive lock on that file, so that measurements running side by side compile at once
    but time one at a time. With `barrier` = (folder, count) the timed calls start when `count` processes have
    reached the folder (`wait_for_all`), and `s_per_step` is their mean, not their best: the copies run side by side.
    10 parameters: what to measure (model, method), how much (seeds, steps, n, repeats), the variant (conv_impl,
    component_noise) and how it shares the device with other measurements (timing_lock, barrier)."""
    import jax
    import jax.numpy as jnp
    import numpy as np
    from bcl.core import Split, Task, TaskSequence, tree_size
    from bcl.engine.compilation import fast_compile_options
    from bcl.engine.sequence import _as_grid
    from bcl.engine.train import make_task_program, n_batches, vmap_program

    network, shape, outputs, batch, preset, bounds, kind = MODELS[model_name]
    if kind == "pretraining":
        seeds = 1  # one network is pre-trained
    probe, _ = build_method(model_name, method_name, 1, conv_impl, component_noise)
    per_epoch = n_batches(n, probe.training.batch_size)
    epochs = max(1, math.ceil(steps / per_epoch))
    method, hyper = build_method(model_name, method_name, epochs, conv_impl, component_noise)
    grid = {k: jnp.asarray(v) for k, v in _as_grid(hyper).items()}
    G = len(grid["learning_rate"])

    rng = np.random.default_rng(0)
    low, high = bounds if bounds is not None else (0.0, 1.0)
    rows = max(n, CORESET_SIZE)  # the sequence's tasks must hold a coreset (methods check it at init)
    all_xs = rng.uniform(low, high, size=(rows, *shape)).astype(np.float32)
    all_ys = rng.integers(0, outputs, rows).astype(np.int32)
    split = Split(all_xs, all_ys)
    xs, ys = all_xs[:n], all_ys[:n]  # what the timed program trains on
    sequence = TaskSequence("bench", (Task(split, split, split, tuple(range(outputs))),) * 2, outputs, "softmax",
                            tuple(shape), (all_xs.min(0), all_xs.max(0)))
    keys = jnp.stack([jax.random.key(s) for s in range(seeds)])
    state = jax.vmap(lambda k: method.init(k, sequence))(keys)
    state = jax.tree.map(lambda x: jnp.broadcast_to(x, (G, *x.shape)), state)
    options = fast_compile_options(tree_size(state.params) // (G * seeds), None, method.training.draws_per_step)
    padded = method.training.pad_tasks
    args = (jax.random.split(jax.random.key(1), seeds), state, grid, jnp.asarray(xs), jnp.asarray(ys), jnp.int32(2))
    if padded:
        args = args + (jnp.int32(n),)
    program = jax.jit(vmap_program(make_task_program(method, n, padded=padded)))

    start = time.perf_counter()
    compiled = program.lower(*args).compile(compiler_options=options or None)
    compile_s = time.perf_counter() - start
    try:
        analysis = compiled.memory_analysis()
        temp_bytes = int(analysis.temp_size_in_bytes) if analysis is not None else None
    except Exception:
        temp_bytes = None
    n_steps = epochs * per_epoch
    network_parameters = tree_size(method.model.init(jax.random.key(0))) if hasattr(method, "model") else None
    normals = (normal_draws_per_step(method_name, network_parameters, method.training.draws_per_step, G * seeds,
                                     component_noise) if network_parameters else 0)
    if barrier is not None:
        best, normals_s = side_by_side_seconds(lambda: compiled(*args), repeats, *barrier), None
    else:
        with exclusive(timing_lock):
            best = best_seconds(lambda: compiled(*args), repeats)
            normals_s = time_normals(normals, repeats)
    device = jax.devices()[0]
    try:
        stats = device.memory_stats() or {}
    except Exception:
        stats = {}
    return {"benchmark": "gpu_step", "model": model_name, "network": network, "input_shape": list(shape),
            "outputs": outputs, "method": method_name, "backend": jax.default_backend(),
            "device_kind": device.device_kind, "seeds": seeds, "configs": G, "batch_size": method.training.batch_size,
            "steps_timed": n_steps, "points_per_task": n, "s_per_step": best / n_steps,
            "compile_s": round(compile_s, 3), "peak_bytes": stats.get("peak_bytes_in_use"),
            "xla_temp_bytes": temp_bytes,
            "max_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
            "parameters_per_copy": tree_size(state.params) // (G * seeds), "draws_per_step": method.training.draws_per_step,
            "network_parameters": network_parameters, "normals_per_step": normals, "normals_s_per_step": normals_s,
            "normals_share": round(normals_s / (best / n_steps), 3) if normals_s else None,
            "conv_impl": conv_impl if network.startswith("cnn") else None,
            "component_noise": component_noise if is_mixture(method_name) else None,
            "compiler_options": options, "repeats": repeats, "side_by_side": barrier[1] if barrier else None,
            "provenance": _provenance()}


@contextlib.contextmanager
def exclusive(path: str | None):
    "Hold an exclusive `flock` on the file `path` for the body (nothing when `path` is None)."
    if path is None:
        yield
        return
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def normal_draws_per_step(method_name: str, network_parameters: int, draws: int, copies: int,
                          component_noise: str) -> int:
    """How many standard normals one step of a variational method draws for its parameter samples: S draws of every
    network parameter, K per draw for a mixture with independent component noise, for every configuration × seed;
    0 for the MAP methods. (The function-space methods' output draws at the inducing points are few and left out.)"""
    from bcl.paper import N_COMPONENTS, Kind
    if method_parts(method_name).kind is not Kind.VARIATIONAL:
        return 0
    per_draw = N_COMPONENTS if is_mixture(method_name) and component_noise == "independent" else 1
    return draws * per_draw * network_parameters * copies


def time_normals(count: int, repeats: int) -> float | None:
    "Best wall seconds of one compiled `jax.random.normal` of `count` float32 draws (threefry, the default key)."
    import jax
    if count == 0:
        return None
    draw = jax.jit(lambda key: jax.random.normal(key, (count,)))
    key = jax.random.key(0)
    return best_seconds(lambda: draw(key), repeats)


def best_seconds(call, repeats: int) -> float:
    "Best wall seconds of `repeats` (at least one) blocking calls of `call`, after one warm-up call (allocations)."
    import jax
    jax.block_until_ready(call())
    best = math.inf
    for _ in range(max(repeats, 1)):
        start = time.perf_counter()
        jax.block_until_ready(call())
        best = min(best, time.perf_counter() - start)
    return best


def wait_for_all(folder: str, count: int, timeout_s: float = 1800.0) -> None:
    "A barrier across processes: mark this one ready in `folder`, then wait until `count` are (`TimeoutError` after `timeout_s`)."
    Path(folder, str(os.getpid())).touch()
    deadline = time.monotonic() + timeout_s
    while sum(1 for _ in Path(folder).iterdir()) < count:
        if time.monotonic() > deadline:
            raise TimeoutError(f"only {sum(1 for _ in Path(folder).iterdir())} of {count} processes reached the barrier "
                               f"in {timeout_s:.0f} s (did one fail to compile or run out of memory?)")
        time.sleep(0.01)


def side_by_side_seconds(call, repeats: int, folder: str, count: int) -> float:
    "Mean wall seconds of `repeats` blocking calls of `call`, started when `count` processes have met at `folder`."
    import jax
    jax.block_until_ready(call())  # warm-up, before the barrier
    wait_for_all(folder, count)
    start = time.perf_counter()
    for _ in range(max(repeats, 1)):
        jax.block_until_ready(call())
    return (time.perf_counter() - start) / max(repeats, 1)


def _combinations(models, methods):
    for model in models:
        for method in methods:
            if MODELS[model][6] == "pretraining" and method != "finetuning":
                continue
            yield model, method


def _read_jsonl(path) -> list[dict]:
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip().startswith("{")]


def _with_reference(line: dict, reference: dict) -> dict:
    cpu = reference.get((line["model"], line["method"]))
    if cpu is None or not line.get("s_per_step"):
        return line
    same = (cpu["seeds"], cpu.get("configs", 1)) == (line["seeds"], line.get("configs", 1))
    copies = lambda r: r["seeds"] * r.get("configs", 1)
    speedup = (cpu["s_per_step"] / line["s_per_step"] if same else
               (cpu["s_per_step"] / copies(cpu)) / (line["s_per_step"] / copies(line)))
    return line | {"cpu_s_per_step": cpu["s_per_step"], "cpu_seeds": cpu["seeds"], "speedup": round(speedup, 2),
                   "speedup_basis": "per step" if same else "per configuration × seed"}


# ---------------------------------------------------------------------------------------------------------------
# Cost model: the least work one step of each method must do, in fine-tuning steps on the same network
# ---------------------------------------------------------------------------------------------------------------
SAMPLES, COMPONENTS = 10, 3  # S parameter draws per step, K mixture components (bcl.paper.SAMPLE_SIZE, the paper's K)
GRID = {"ewc": 5, "si": 15}  # hyperparameter configurations trained side by side


def cost_floor(method: str, outputs: int, configs: int = 1) -> float:
    """One step's least work in units of one fine-tuning step (a forward and a backward pass of the batch B with one
    parameter set, about 3 forward-pass units per point). VCL: S draws, each a forward and backward pass of B points
    (a GM draw is one network: the relaxed component weights combine the K components, eqs. (6), (7)). S-FSVI: the same likelihood term, plus the function-space KL at M = B inducing inputs:
    the output moments of q and of the prior for every component, each one forward pass and d = `outputs` backward
    passes of the inducing batch plus the per-example, per-output weight-gradient products (≈ d more backward halves),
    i.e. (1 + 2d)/3 fine-tuning steps; q's moments are differentiated (reverse mode: ≈ 3× their cost), the prior's
    are not (1×). The KL of VCL and the mixture bounds on moments are O(P) or O(K²·M·d) and left out."""
    from bcl.paper import Kind, Space
    if method_parts(method).kind is Kind.MAP:
        return float(configs)
    k = COMPONENTS if is_mixture(method) else 1
    if method_parts(method).space is Space.PARAMETER:
        return float(SAMPLES)
    moments = (1 + 2 * outputs) / 3
    return SAMPLES + k * (3 + 1) * moments


def ratio_lines(lines: list[dict]) -> list[dict]:
    "For every measured (model, method): its step time over fine-tuning's in the same run and seeds, and the floor."
    finetuning = {(l["model"], l.get("seeds")): l["s_per_step"] for l in lines
                  if l.get("method") == "finetuning" and l.get("s_per_step")}
    rows = []
    for l in lines:
        base = finetuning.get((l.get("model"), l.get("seeds")))
        if not l.get("s_per_step") or not base:
            continue
        floor = cost_floor(l["method"], l.get("outputs", 10), l.get("configs", 1))
        ratio = l["s_per_step"] / base
        rows.append({"benchmark": "gpu_ratio", "model": l["model"], "method": l["method"], "seeds": l.get("seeds"),
                     "backend": l.get("backend"), "ratio_to_finetuning": round(ratio, 2), "floor": round(floor, 2),
                     "ratio_to_floor": round(ratio / floor, 2), "s_per_step": l["s_per_step"],
                     "finetuning_s_per_step": base, "compile_s": l.get("compile_s")})
    return rows


def run_all(args) -> None:
    reference = {}
    if args.cpu_reference:
        reference = {(r["model"], r["method"]): r for r in _read_jsonl(args.cpu_reference)
                     if r.get("benchmark") == "gpu_step" and r.get("backend") == "cpu"}
    out = open(args.out, "a") if args.out else None
    emitted = []

    def emit(line: dict) -> None:
        line = _with_reference(line, reference)
        emitted.append(line)
        text = json.dumps(line)
        print(text, flush=True)
        if out:
            out.write(text + "\n")
            out.flush()

    combinations = list(_combinations(args.models, args.methods))
    if args.in_process:
        for model, method in combinations:
            emit(measure(model, method, seeds=args.seeds, steps=args.steps, n=args.n, repeats=args.repeats,
                         conv_impl=args.conv_impl, component_noise=args.component_noise))
        _print_ratios(emitted)
        return
    lock = Path(tempfile.mkdtemp(prefix="bcl-gpu-")) / "timing.lock"
    env = os.environ | ({"XLA_PYTHON_CLIENT_PREALLOCATE": "false"} if args.jobs > 1 else {})

    deadline = time.monotonic() + args.budget_s if args.budget_s else math.inf

    def one(model: str, method: str) -> dict:  # a fresh process: its peak memory is its own
        left = deadline - time.monotonic()
        if left <= 0:
            return {"benchmark": "gpu_step", "model": model, "method": method, "error": "not started: --budget-s spent"}
        command = _one_command(args, model, method) + ["--timing-lock", str(lock)]
        start = time.perf_counter()
        line = _measured(command, env, model, method, None if math.isinf(left) else left)
        return line | {"process_wall_s": round(time.perf_counter() - start, 2), "jobs": args.jobs}

    # Several processes compile side by side (compilation runs on the host's cores); the timing lock lets one time at
    # a time, so a step's time is the device's alone.
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        for future in as_completed([pool.submit(one, *pair) for pair in combinations]):
            emit(future.result())
    _print_ratios(emitted)


def _one_command(args, model: str, method: str) -> list[str]:
    "The command line of one measuring process (`--one`) with the run's settings."
    return [sys.executable, __file__, "--one", model, method, "--seeds", str(args.seeds), "--steps", str(args.steps),
            "--n", str(args.n), "--repeats", str(args.repeats), "--conv-impl", args.conv_impl, "--component-noise",
            args.component_noise]


def _measured(command: list[str], env: dict, model: str, method: str, timeout_s: float | None = None) -> dict:
    "The JSON line a measuring process printed last, or an error line with the end of what it wrote (or of the budget)."
    try:
        done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return {"benchmark": "gpu_step", "model": model, "method": method, "error": "stopped: --budget-s spent"}
    lines = [l for l in done.stdout.splitlines() if l.startswith("{")]
    if done.returncode != 0 or not lines:
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        return {"benchmark": "gpu_step", "model": model, "method": method, "error": " | ".join(tail),
                "returncode": done.returncode}
    return json.loads(lines[-1])


def concurrent_line(alone: dict, copies: list[dict], count: int) -> dict:
    """The 'gpu_concurrent' line of one (model, method): `count` copies side by side against one alone (same run).
    `throughput_gain` = count × alone / mean(side by side): steps per second of the device with `count` cells over
    one cell's; None when a copy failed (its error is kept)."""
    each = [c.get("s_per_step") for c in copies]
    ok = alone.get("s_per_step") and all(each) and len(each) == count
    keep = ("model", "method", "backend", "device_kind", "seeds", "configs", "batch_size")
    return {"benchmark": "gpu_concurrent", **{k: alone.get(k) for k in keep}, "copies": count,
            "alone_s_per_step": alone.get("s_per_step"), "s_per_step_each": each,
            "throughput_gain": round(count * alone["s_per_step"] / (sum(each) / count), 3) if ok else None,
            "errors": [c["error"] for c in copies if c.get("error")], "provenance": _provenance()}


def run_concurrent(args) -> None:
    """`--concurrent K`: for every (model, method), one measuring process alone, then K side by side (`measure`'s
    barrier); prints and appends (`--out`) the alone 'gpu_step' line and a 'gpu_concurrent' line."""
    env = os.environ | {"XLA_PYTHON_CLIENT_PREALLOCATE": "false"}  # K processes share the device's memory
    deadline = time.monotonic() + args.budget_s if args.budget_s else math.inf
    with open(args.out, "a") if args.out else contextlib.nullcontext() as out:
        for model, method in _combinations(args.models, args.methods):
            if time.monotonic() > deadline:
                print(json.dumps({"benchmark": "gpu_concurrent", "model": model, "method": method,
                                  "error": "not started: --budget-s spent"}), flush=True)
                continue
            alone = _measured(_one_command(args, model, method), env, model, method)
            folder = tempfile.mkdtemp(prefix="bcl-side-by-side-")
            side = _one_command(args, model, method) + ["--barrier", folder, str(args.concurrent)]
            with ThreadPoolExecutor(max_workers=args.concurrent) as pool:
                copies = list(pool.map(lambda _: _measured(side, env, model, method), range(args.concurrent)))
            for line in (alone, concurrent_line(alone, copies, args.concurrent)):
                print(json.dumps(line), flush=True)
                if out:
                    out.write(json.dumps(line) + "\n")
                    out.flush()


def _print_ratios(lines: list[dict]) -> None:
    "One `gpu_ratio` line per measured method: ratio to fine-tuning (same run, same seeds) and to the cost floor."
    for row in ratio_lines(lines):
        print(json.dumps(row), flush=True)


# ---------------------------------------------------------------------------------------------------------------
# Projection
# ---------------------------------------------------------------------------------------------------------------
def steps_per_run(method: str, batch_size: int, data: str, epochs: int) -> int:
    "Optimiser steps of one run of `method` over the sequence `data` (all its tasks, `epochs` epochs per task)."
    n, T = PROJECTION["train_points"][data], PROJECTION["tasks"][data]
    per_task = math.ceil(n / T / batch_size)
    passes = (T + 1) / 2 if method == "joint" else 1.0  # joint: task t trains on t tasks' data
    return int(round(epochs * T * per_task * passes))


PROJECTION_SEEDS = 5  # the seeds of a Table faa cell

def project(measured: list[dict], methods=METHODS, gains: dict | None = None) -> list[dict]:
    """GPU-seconds per Table faa cell (every method, 5 seeds, the EWC/SI grids) and per pre-training, from s/step lines.
    `gains`: {(model, method, device kind): throughput gain} of `--concurrent` lines; each method's
    `concurrent_seconds` is its seconds over the gain measured on the device of its step time (1 where none was:
    charged one after another)."""
    table = {(r["model"], r["method"]): r for r in measured if r.get("s_per_step")}  # a later line replaces an earlier
    gains = gains or {}
    epochs = PROJECTION["epochs"]
    rows = []
    for column, (data, model, pretraining) in PROJECTION["columns"].items():
        cell = {"column": column, "model": model, "data": data, "methods": {}, "missing": []}
        for method in methods:
            r, source = table.get((model, method)), "measured"
            bound = model
            while r is None and bound in PROJECTION["upper_bounds"]:
                bound = PROJECTION["upper_bounds"][bound]
                r, source = table.get((bound, method)), f"bound: {bound}"
            if r is None:
                cell["missing"].append(method)
                continue
            steps = steps_per_run(method, r["batch_size"], data, epochs)
            runs = max(1.0, PROJECTION_SEEDS / r["seeds"])  # measured with fewer seeds (memory): they run in turn
            seconds, gain = steps * r["s_per_step"] * runs, gains.get((bound, method, r.get("device_kind")))
            cell["methods"][method] = {"steps": steps, "seconds": seconds, "seeds": r["seeds"],
                                       "configs": r.get("configs", 1), "sequential_runs": runs, "source": source,
                                       "device_kind": r.get("device_kind"), "throughput_gain": gain,
                                       "concurrent_seconds": seconds / (gain or 1.0)}
        cell["seconds"] = sum(m["seconds"] for m in cell["methods"].values())
        cell["concurrent_seconds"] = sum(m["concurrent_seconds"] for m in cell["methods"].values())
        rows.append(cell)
    for data, model in PROJECTION["pretraining"].items():
        r = table.get((model, "finetuning"))
        n = PROJECTION["train_points"][data]
        cell = {"column": f"pretraining {data}", "model": model, "data": data, "methods": {}, "missing": []}
        if r is None:
            cell["missing"].append("finetuning")
        else:
            steps = epochs * math.ceil(n / r["batch_size"])
            cell["methods"]["finetuning"] = {"steps": steps, "seconds": steps * r["s_per_step"], "seeds": r["seeds"],
                                             "configs": 1, "throughput_gain": None,
                                             "concurrent_seconds": steps * r["s_per_step"]}  # one pre-training at a time
        cell["seconds"] = sum(m["seconds"] for m in cell["methods"].values())
        cell["concurrent_seconds"] = cell["seconds"]
        rows.append(cell)
    return rows


def throughput_gains(lines: list[dict]) -> dict[tuple[str, str, str], float]:
    "{(model, method, device kind): gain} of the finished `--concurrent` lines (a later line replaces an earlier one)."
    return {(r["model"], r["method"], r.get("device_kind")): r["throughput_gain"] for r in lines
            if r.get("benchmark") == "gpu_concurrent" and r.get("throughput_gain")}


def step_backends(paths) -> dict[str, list[str]]:
    "{backend: the files among `paths` with step lines measured on it}; lines that name no backend are left out."
    found = {}
    for path in paths:
        for backend in sorted({r["backend"] for r in _read_jsonl(path) if r.get("benchmark") == "gpu_step"
                               and r.get("s_per_step") is not None and r.get("backend")}):
            found.setdefault(backend, []).append(str(path))
    return found


def print_projection(paths) -> None:
    "Print the projection from the s/step lines of `paths` (a later file's line replaces an earlier one's)."
    paths = [paths] if isinstance(paths, (str, Path)) else list(paths)
    lines = [r for path in paths for r in _read_jsonl(path)]
    measured = [r for r in lines if r.get("benchmark") == "gpu_step" and r.get("s_per_step") is not None]
    gains = throughput_gains(lines)
    path = " + ".join(str(p) for p in paths)
    rows = project(measured, gains=gains)
    kinds = sorted({(r.get("backend"), r.get("device_kind")) for r in measured})
    for row in rows:
        print(json.dumps({"benchmark": "gpu_projection", **row, "hours": row["seconds"] / 3600}))
    total = sum(r["seconds"] for r in rows)
    print(f"\nProjected device-hours from {path} (measured on {kinds}); 20 epochs, full data, every method, "
          "5 seeds and the EWC/SI grids vmapped; evaluation and compilation excluded.\n", file=sys.stderr)
    print(f"| {'cell':<28} | {'model':<18} | {'hours':>8} | slowest method (hours) | missing | bounded |",
          file=sys.stderr)
    print(f"|{'-' * 30}|{'-' * 20}|{'-' * 10}|{'-' * 24}|{'-' * 9}|{'-' * 9}|", file=sys.stderr)
    for r in rows:
        slowest = max(r["methods"].items(), key=lambda kv: kv[1]["seconds"], default=None)
        slow = f"{slowest[0]} ({slowest[1]['seconds'] / 3600:.2f})" if slowest else "-"
        n_bounded = sum(m.get("source", "measured") != "measured" for m in r["methods"].values())
        print(f"| {r['column']:<28} | {r['model']:<18} | {r['seconds'] / 3600:8.2f} | {slow:<22} | "
              f"{len(r['missing']):>7} | {n_bounded:>7} |", file=sys.stderr)
    bounded = sum(m["seconds"] for r in rows for m in r["methods"].values() if m.get("source", "measured") != "measured")
    print(f"\nTotal: {total / 3600:.2f} device-hours, {bounded / 3600:.2f} of them from upper bounds" +
          (" (cells with missing measurements count only what was measured)" if any(r["missing"] for r in rows)
           else ""), file=sys.stderr)
    concurrent = sum(r["concurrent_seconds"] for r in rows)
    charged = [m for r in rows for m in r["methods"].values() if m.get("throughput_gain")]
    used = sum(len(r["methods"]) for r in rows)
    print(f"At the measured throughput of cells run side by side: {concurrent / 3600:.2f} device-hours (gains for "
          f"{len(charged)} of the {used} (cell, method) pairs; the others one after another)", file=sys.stderr)
    print(json.dumps({"benchmark": "gpu_projection_total", "hours": total / 3600, "bounded_hours": bounded / 3600,
                      "concurrent_hours": concurrent / 3600, "pairs_with_gain": len(charged), "pairs": used,
                      "source": str(path), "devices": [list(k) for k in kinds],
                      "assumptions": {k: v for k, v in PROJECTION.items() if k != "columns"},
                      "command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]), "provenance": _provenance()}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="*", default=list(DEFAULT_MODELS), choices=list(MODELS))
    parser.add_argument("--methods", nargs="*", default=list(METHODS), choices=list(METHODS),
                        type=lambda name: {m.lower(): m for m in METHODS}.get(name.lower(), name))  # any letter case
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=20, help="at least this many optimiser steps timed per run")
    parser.add_argument("--n", type=int, default=256, help="synthetic points per task")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--conv-impl", choices=["patches", "xla"], default="patches",
                        help="convolutions of the cnn* networks (bcl.vi.svi.SEQUENCE_SETTINGS uses patches)")
    parser.add_argument("--quick", action="store_true", help="smoke run: one epoch of 2 batches, one repeat")
    parser.add_argument("--cpu-reference", default=None, help="JSONL of earlier CPU lines to compare with")
    parser.add_argument("--out", default=None, help="also append the lines to this JSONL file")
    parser.add_argument("--in-process", action="store_true", help="no subprocess per measurement (peaks accumulate)")
    parser.add_argument("--project", nargs="+", default=None, metavar="MEASURED.jsonl",
                        help="print projected device-hours (several files: a later file's line replaces an earlier's)")
    parser.add_argument("--component-noise", choices=["independent", "collapsed"], default="independent",
                        help="the GM methods' sampler (bcl.vi.mixture): the authors' independent draws, or the collapsed "
                             "one-normal draw of the same law that the offline profile uses")
    parser.add_argument("--jobs", type=int, default=1,
                        help="measurements compiling side by side (each in its own process; they time one at a time, "
                             "and their GPU memory is allocated as needed rather than preallocated)")
    parser.add_argument("--budget-s", type=float, default=None,
                        help="wall seconds for all measurements: none starts after, a running one is stopped at it "
                             "(not with --in-process)")
    parser.add_argument("--concurrent", type=int, default=None, metavar="K",
                        help="measure each (model, method) alone and as K processes side by side on one device: "
                             "the throughput gain the projection charges cells run at once with")
    parser.add_argument("--one", nargs=2, metavar=("MODEL", "METHOD"), help=argparse.SUPPRESS)
    parser.add_argument("--timing-lock", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--barrier", nargs=2, metavar=("FOLDER", "COUNT"), default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    for flag, value in [("--project", v) for v in args.project or ()] + [("--cpu-reference", args.cpu_reference)]:
        if value and not Path(value).is_file():
            parser.error(f"{flag}: no such file: {value} (benchmarks/gpu.py --out FILE writes one)")
    for flag, value in (("--seeds", args.seeds), ("--steps", args.steps), ("--n", args.n), ("--repeats", args.repeats),
                        ("--jobs", args.jobs)):
        if value < 1:
            parser.error(f"{flag} must be a positive integer, got {value}")
    if args.concurrent is not None and (args.concurrent < 2 or args.jobs > 1 or args.in_process):
        parser.error(f"--concurrent takes a count of at least 2 (got {args.concurrent}) and neither --jobs nor "
                     "--in-process: its processes share the device on purpose")
    if args.project:
        backends = step_backends(args.project)
        if len(backends) > 1:  # a later file's line replaces an earlier one's: a CPU file would mix CPU step times in
            parser.error("--project charges one kind of device, but these files hold step lines of several backends ("
                         + "; ".join(f"{b}: {', '.join(files)}" for b, files in backends.items())
                         + "): pass the files of one backend")
        print_projection(args.project)
        return
    if args.quick:
        args.steps, args.repeats = 1, 1
        args.n = 2 * max(MODELS[m][3] for m in args.models)
    if args.one:
        model, method = args.one
        print(json.dumps(measure(model, method, seeds=args.seeds, steps=args.steps, n=args.n, repeats=args.repeats,
                                 conv_impl=args.conv_impl, component_noise=args.component_noise,
                                 timing_lock=args.timing_lock,
                                 barrier=(args.barrier[0], int(args.barrier[1])) if args.barrier else None)), flush=True)
        return
    run_concurrent(args) if args.concurrent else run_all(args)


if __name__ == "__main__":
    main()
