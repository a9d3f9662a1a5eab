"""scripts/cell_route.py: a table cell reaches its training step through each bcl module once."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import cell_route  # noqa: E402


def test_consecutive_frames_of_a_module_are_one_visit():
    frames = [("table/cell.py", "run_cell"), ("engine/sequence.py", "a"), ("engine/sequence.py", "b"),
              ("engine/train.py", "run"), ("engine/sequence.py", "c")]
    assert cell_route.module_route(frames) == ["table/cell.py", "engine/sequence.py", "engine/train.py",
                                               "engine/sequence.py"]


def test_a_cell_enters_each_module_once_on_its_way_to_the_training_step(capsys):
    assert cell_route.main(["ci-mnist-fcnn", "finetuning"]) == 0  # a smoke cell, in this process (about 10 s)
    routes = [line.strip() for line in capsys.readouterr().out.splitlines() if "→" in line]
    assert routes == ["table/cell.py → engine/sequence.py → engine/compilation.py → engine/train.py"]
