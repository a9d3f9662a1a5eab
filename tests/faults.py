"""Fault injection for the batch's tests: functions a Dask worker runs before a cell starts.

`bcl.table.batch` calls the functions the Dask configuration `bcl.before-cell` names, on the worker, with the cell's
`COLUMN/METHOD`. The tests name the two below through the environment the workers inherit (`environment`), so the
package carries no test machinery. Each fault happens once: it leaves a marker file, and the rerun goes through.

- `BCL_TABLE_KILL_ONCE=COLUMN/METHOD:MARKER`: SIGKILL of the worker when that cell starts (a lost worker);
- `BCL_TABLE_STALL_ONCE=COLUMN/METHOD:MARKER:SECONDS`: that cell waits SECONDS first (a Slurm job outlives its
  walltime).
"""
import os
import signal
import time
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def environment(base=None, **faults) -> dict:
    """Environment variables that make the workers of a batch run these hooks, plus `faults` (BCL_TABLE_KILL_ONCE=...,
    BCL_TABLE_STALL_ONCE=...); this folder goes in front of the PYTHONPATH of `base` (default: this process's)."""
    base = os.environ if base is None else base
    path = os.pathsep.join(p for p in (str(TESTS), base.get("PYTHONPATH", "")) if p)
    return {"PYTHONPATH": path, "DASK_BCL__BEFORE_CELL": '["faults:kill_once", "faults:stall_once"]', **faults}


def kill_once(cell_name: str) -> None:
    spec = os.environ.get("BCL_TABLE_KILL_ONCE")
    if not spec:
        return
    cell, marker = spec.split(":", 1)
    if cell == cell_name and not Path(marker).exists():
        Path(marker).write_text(str(os.getpid()))
        os.kill(os.getpid(), signal.SIGKILL)


def stall_once(cell_name: str) -> None:
    spec = os.environ.get("BCL_TABLE_STALL_ONCE")
    if not spec:
        return
    cell, marker, seconds = spec.rsplit(":", 2)
    if cell == cell_name and not Path(marker).exists():
        Path(marker).write_text(str(os.getpid()))
        time.sleep(float(seconds))

