"""The official half of a parity harness, run apart: a Python of its own (with torch), a folder of the official files
on its PYTHONPATH, arrays in and out through .npz files in a temporary working directory. Used by
`fromp_parity.py`, `fromp_seeds.py` and `sfr_parity.py`."""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def environment(folder: Path) -> dict:
    "The side's environment: the official files on PYTHONPATH, one thread for BLAS, no bytecode left behind."
    return dict(os.environ, PYTHONPATH=str(folder), PYTHONDONTWRITEBYTECODE="1", OMP_NUM_THREADS="1",
                MKL_NUM_THREADS="1")


def probe(python, side: Path, folder: Path) -> str | None:
    "None when `python side --probe` imports what it needs, else the last line it printed."
    with tempfile.TemporaryDirectory() as tmp:
        run = subprocess.run([str(python), str(side), "--probe"], cwd=tmp, env=environment(folder),
                             capture_output=True, text=True)
    if run.returncode == 0:
        return None
    last = (run.stdout + run.stderr).strip().splitlines()
    return last[-1] if last else "no output"


def prepare(repo, python, side: Path, locate, needs: str):
    """(folder, commit, source) of the official code when `python` runs `side` on it, else a string saying why not
    (the harness then skips): `needs` names what is missing when `repo` or `python` is None; `locate(repo)` gives
    (folder, commit, source) of the files or a string saying why not."""
    if repo is None or python is None:
        return f"needs {needs}"
    if not Path(python).exists():
        return f"{python} does not exist"
    found = locate(Path(repo))
    if isinstance(found, str):
        return found
    failed = probe(python, side, found[0])
    return found if failed is None else f"the official side cannot import what it needs ({failed})"


def run(python, side: Path, folder: Path, npz: dict, prog: str, keep: Path | None = None) -> tuple[dict, float]:
    """Write `npz` as the side's inputs, run `python side --inputs IN --outputs OUT` in a temporary working directory
    (`keep`: a folder that keeps both files), read its outputs back; (outputs, seconds). Its progress bars (stderr)
    are shown only when it fails."""
    with tempfile.TemporaryDirectory(prefix="bcl_parity_") as tmp:
        work = Path(keep).resolve() if keep else Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        np.savez(work / "inputs.npz", **npz)
        start = time.perf_counter()
        done = subprocess.run([str(python), str(side), "--inputs", str(work / "inputs.npz"),
                               "--outputs", str(work / "outputs.npz")], cwd=tmp, env=environment(folder),
                              capture_output=True, text=True)
        seconds = time.perf_counter() - start
        if done.returncode != 0:
            print(done.stdout[-4000:] + done.stderr[-4000:], file=sys.stderr)
            raise SystemExit(f"{prog}: the official side failed (above)")
        return dict(np.load(work / "outputs.npz", allow_pickle=False)), seconds
