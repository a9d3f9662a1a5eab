"""experiments/merge_stages.py: two seed stages of one cell joined into a folder the ledger reads; bad stages refused."""
import importlib.util
import json
from pathlib import Path

import pytest

from bcl.table.cell import read_cell, write_cell
from bcl.table.ledger import collect
from bcl.table.stages import PER_SEED_FIELDS, SHARED_FIELDS

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("merge_stages", ROOT / "experiments" / "merge_stages.py")
merge_stages_script = importlib.util.module_from_spec(spec)
spec.loader.exec_module(merge_stages_script)

CELL = "ci-mnist-fcnn/p-g-vcl"


def stage_numbers(seeds: list[int], accuracy: list[float], code: str = "c0de") -> dict:
    "A stage's numbers.json as a cell writes it, with per-seed fields that name their seed."
    numbers = {key: "same" for key in SHARED_FIELDS} | {"column": "ci-mnist-fcnn", "method": "p-g-vcl",
                                                        "profile": "offline", "substitute": "cisplitmnist5k"}
    numbers |= {key: [f"{key} of seed {s}" for s in seeds] for key in PER_SEED_FIELDS}
    return numbers | {
        "seeds": seeds, "parameters": {"column": "ci-mnist-fcnn", "method": "p-g-vcl", "seeds": seeds,
                                       "schedule": "steps-matched"},
        "final_average_accuracy": {"per_seed": accuracy, "mean": sum(accuracy) / len(accuracy), "n": len(seeds),
                                   "std": 0.0},
        "content_hash": f"hash{seeds[0]}", "timings": {"run_s": 10.0, "s_per_step": 0.5},
        "provenance": {"bcl_code": code, "git": {"commit": "abc"}}}


def write_stage(out: Path, numbers: dict) -> None:
    write_cell(out / "offline-steps-matched" / CELL, numbers)


def run(*argv) -> int:
    return merge_stages_script.main([str(a) for a in argv])


def test_two_stages_join_into_one_cell_of_all_seeds(tmp_path):
    write_stage(tmp_path / "s2", stage_numbers([5, 6], [18.0, 20.0]))
    write_stage(tmp_path / "s1", stage_numbers([0, 1], [16.0, 17.0]))
    assert run(tmp_path / "s1", tmp_path / "s2", "--schedule", "steps-matched", "--out", tmp_path / "joined") == 0
    numbers, _ = read_cell(tmp_path / "joined" / "offline-steps-matched" / CELL)
    assert numbers["seeds"] == [0, 1, 5, 6]
    assert numbers["test_accuracy"] == [f"test_accuracy of seed {s}" for s in (0, 1, 5, 6)]
    assert numbers["final_average_accuracy"]["per_seed"] == [16.0, 17.0, 18.0, 20.0]
    assert numbers["final_average_accuracy"]["mean"] == pytest.approx(17.75)
    assert [s["seeds"] for s in numbers["stages"]] == [[0, 1], [5, 6]]
    assert numbers["timings"]["s_per_step"] == pytest.approx(1.0)  # a step of all four seeds, stage after stage
    entry = collect(tmp_path / "joined" / "offline-steps-matched", "offline")[tuple(CELL.split("/"))]
    assert (entry.n, entry.mean) == (4, pytest.approx(17.75))  # the ledger reads it as one run on all the seeds


@pytest.mark.parametrize("second, why", [
    (stage_numbers([1, 5], [17.0, 18.0]), "more than one stage"),
    (stage_numbers([5, 6], [18.0, 20.0], code="0ther"), "different bcl code")])
def test_stages_that_are_not_one_cell_are_refused(tmp_path, capsys, second, why):
    write_stage(tmp_path / "s1", stage_numbers([0, 1], [16.0, 17.0]))
    write_stage(tmp_path / "s2", second)
    assert run(tmp_path / "s1", tmp_path / "s2", "--schedule", "steps-matched", "--out", tmp_path / "joined") == 2
    assert why in capsys.readouterr().err
    assert not (tmp_path / "joined").exists()


def test_a_single_stage_folder_is_refused(tmp_path):
    write_stage(tmp_path / "s1", stage_numbers([0, 1], [16.0, 17.0]))
    with pytest.raises(SystemExit):
        run(tmp_path / "s1", "--schedule", "steps-matched", "--out", tmp_path / "joined")
    assert json.loads((tmp_path / "s1" / "offline-steps-matched" / CELL / "numbers.json").read_text())["seeds"] == [0, 1]
