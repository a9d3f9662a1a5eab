"""tests/faults.py, the fault hooks the batch tests hand to the workers through `bcl.before-cell`."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from faults import environment, kill_once, stall_once  # noqa: E402


def test_stall_once_fires_for_its_cell_only(tmp_path, monkeypatch):
    marker = tmp_path / "stalled"
    monkeypatch.setenv("BCL_TABLE_STALL_ONCE", f"ci-mnist-fcnn/er:{marker}:0")
    stall_once("ci-mnist-fcnn/ewc")  # another cell: nothing
    assert not marker.exists()
    stall_once("ci-mnist-fcnn/er")
    assert marker.exists()
    monkeypatch.delenv("BCL_TABLE_STALL_ONCE")
    kill_once("ci-mnist-fcnn/er")  # no variable: nothing (this process lives on)


def test_the_batch_finds_these_hooks(monkeypatch):
    import dask
    from bcl.table.batch import before_cell_hooks
    for name, value in environment().items():
        monkeypatch.setenv(name, value)
    dask.config.refresh()
    try:
        assert [h.__name__ for h in before_cell_hooks()] == ["kill_once", "stall_once"]
    finally:
        monkeypatch.delenv("DASK_BCL__BEFORE_CELL")
        dask.config.refresh()
