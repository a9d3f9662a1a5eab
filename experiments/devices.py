"""GPU pinning for a runner of several worker processes (the Dask runner): count the GPUs without initialising JAX,
then give worker `i` one GPU through its environment, set before the worker imports JAX.

    n = gpu_count()
    env = pin_environment(worker_index, n)          # {"CUDA_VISIBLE_DEVICES": "1"}, or {} without GPUs
    subprocess.Popen([...], env=os.environ | env)   # or the env= of a Dask worker / nanny

Nothing here imports JAX: initialising a backend in the parent would claim GPU memory (JAX preallocates 75 % of
each visible GPU) and fix the parent's device set before any worker is pinned.
"""
from __future__ import annotations

import math
import os
import shutil
import subprocess

__all__ = ["visible_devices", "gpu_count", "pin_environment"]

# Values of CUDA_VISIBLE_DEVICES that hide every GPU.
_HIDDEN = ("", "-1", "none", "nodevfiles")


def visible_devices() -> list[str] | None:
    """The entries of CUDA_VISIBLE_DEVICES (indices or GPU-UUIDs), `[]` when it hides every GPU, `None` when unset."""
    value = os.environ.get("CUDA_VISIBLE_DEVICES")
    if value is None:
        return None
    if value.strip().lower() in _HIDDEN:
        return []
    return [entry.strip() for entry in value.split(",") if entry.strip()]


def _nvidia_smi_count(timeout: float = 20.0) -> int | None:
    "GPUs that `nvidia-smi -L` lists (lines 'GPU i: ...'); None when it is absent or fails."
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None
    try:
        done = subprocess.run([exe, "-L"], capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    return sum(1 for line in done.stdout.splitlines() if line.startswith("GPU "))


def gpu_count() -> int:
    """The number of GPUs this process may use, found without initialising JAX or CUDA here.

    `nvidia-smi -L` gives the GPUs of the machine; when CUDA_VISIBLE_DEVICES is set, at most as many as it lists
    (an empty value or -1 hides them all). Without a working nvidia-smi the CUDA_VISIBLE_DEVICES list alone counts,
    and with neither the answer is 0 (a CPU machine)."""
    listed = visible_devices()
    found = _nvidia_smi_count()
    if found is None:
        return len(listed) if listed is not None else 0
    return found if listed is None else min(found, len(listed))


def pin_environment(worker_index: int, n_gpus: int, n_workers: int | None = None) -> dict[str, str]:
    """Environment updates that give worker `worker_index` (0-based) one of `n_gpus` GPUs, round-robin.

    Returns `{"CUDA_VISIBLE_DEVICES": id}` where id is `str(worker_index % n_gpus)`, or, when this process's
    CUDA_VISIBLE_DEVICES already lists devices, that list's entry (so a runner started with "2,3" pins its workers to
    2 and 3). Returns `{}` when `n_gpus` is 0 (CPU workers need nothing). With `n_workers` larger than `n_gpus`,
    several workers share a GPU, so each also gets XLA_PYTHON_CLIENT_MEM_FRACTION = 0.9 / (workers per GPU) instead of
    JAX's default preallocation of 75 % per process, which would run the second worker out of memory.
    The updates must reach the worker before it imports JAX."""
    for name, value in (("worker_index", worker_index), ("n_gpus", n_gpus)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"{name} must be a non-negative integer, got {value!r}.")
    if n_workers is not None and (isinstance(n_workers, bool) or not isinstance(n_workers, int) or n_workers < 1):
        raise ValueError(f"n_workers must be a positive integer or None, got {n_workers!r}.")
    if n_gpus == 0:
        return {}
    listed = visible_devices()
    if listed:
        if n_gpus > len(listed):
            raise ValueError(f"n_gpus={n_gpus} but CUDA_VISIBLE_DEVICES lists only {len(listed)}: {listed}.")
        device = listed[worker_index % n_gpus]
    else:
        device = str(worker_index % n_gpus)
    env = {"CUDA_VISIBLE_DEVICES": device}
    if n_workers is not None and n_workers > n_gpus:
        sharing = math.ceil(n_workers / n_gpus)
        env["XLA_PYTHON_CLIENT_MEM_FRACTION"] = f"{0.9 / sharing:.3f}"
    return env
