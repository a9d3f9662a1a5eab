"""experiments/keep_stage.py: a batch's finished cells kept as a committed stage that merge_stages.py joins; a kept stage
is never overwritten."""
import importlib.util
import json
from pathlib import Path

import pytest

from bcl.table.cell import read_cell, write_cell
from test_merge_stages import CELL, run as merge, stage_numbers, write_stage

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("keep_stage", ROOT / "experiments" / "keep_stage.py")
keep_stage = importlib.util.module_from_spec(spec)
spec.loader.exec_module(keep_stage)


def keep(out: Path, stages: Path) -> int:
    return keep_stage.main([str(out), "--schedule", "steps-matched"], stages=stages)


def test_a_kept_stage_joins_a_later_stage(tmp_path, capsys):
    write_stage(tmp_path / "s1", stage_numbers([0, 1, 2], [16.0, 17.0, 18.0]))
    (tmp_path / "s1" / "offline-steps-matched" / "ci-mnist-fcnn" / "unfinished").mkdir()
    assert keep(tmp_path / "s1", tmp_path / "stages") == 0
    said = capsys.readouterr().out
    assert "left out: ci-mnist-fcnn/unfinished (not run)" in said and "commit abc" in said
    kept = tmp_path / "stages" / "seeds-0-2"
    assert read_cell(kept / "offline-steps-matched" / CELL)[0]["seeds"] == [0, 1, 2]
    write_stage(tmp_path / "s2", stage_numbers([3, 4], [19.0, 20.0]))
    assert merge(kept, tmp_path / "s2", "--schedule", "steps-matched", "--out", tmp_path / "joined") == 0
    joined, _ = read_cell(tmp_path / "joined" / "offline-steps-matched" / CELL)
    assert joined["final_average_accuracy"]["per_seed"] == [16.0, 17.0, 18.0, 19.0, 20.0]


def test_a_kept_stage_is_never_overwritten(tmp_path, capsys):
    write_stage(tmp_path / "s1", stage_numbers([0, 1], [16.0, 17.0]))
    assert keep(tmp_path / "s1", tmp_path / "stages") == 0
    assert keep(tmp_path / "s1", tmp_path / "stages") == 0  # the same numbers again: left as they are
    assert "already kept" in capsys.readouterr().out
    write_stage(tmp_path / "other", stage_numbers([0, 1], [30.0, 31.0]))
    assert keep(tmp_path / "other", tmp_path / "stages") == 2
    assert "never overwritten" in capsys.readouterr().err
    path = tmp_path / "stages" / "seeds-0-1" / "offline-steps-matched" / CELL / "numbers.json"
    assert json.loads(path.read_text())["final_average_accuracy"]["per_seed"] == [16.0, 17.0]


def test_a_kl_weighted_stage_is_kept_apart_from_the_headline_cell(tmp_path, capsys):
    from bcl.table.ledger import kept_stage_seeds
    write_stage(tmp_path / "code", stage_numbers([0, 1], [16.0, 17.0]))
    assert keep(tmp_path / "code", tmp_path / "stages") == 0
    text_weight = stage_numbers([0, 1], [30.0, 31.0])
    text_weight["parameters"] |= {"kl_weighting": "paper"}
    write_stage(tmp_path / "text", text_weight)
    assert keep(tmp_path / "text", tmp_path / "stages") == 0  # the same seeds, other numbers: not refused, kept apart
    apart = tmp_path / "stages" / "kl-weighting-paper" / "seeds-0-1"
    assert read_cell(apart / "offline-steps-matched" / CELL)[0]["final_average_accuracy"]["per_seed"] == [30.0, 31.0]
    headline = tmp_path / "stages" / "seeds-0-1" / "offline-steps-matched" / CELL / "numbers.json"
    assert json.loads(headline.read_text())["final_average_accuracy"]["per_seed"] == [16.0, 17.0]
    assert kept_stage_seeds(tmp_path / "stages", "offline-steps-matched") == {CELL: frozenset({0, 1})}
    later = stage_numbers([2, 3], [32.0, 33.0])
    later["parameters"] |= {"kl_weighting": "paper"}
    write_stage(tmp_path / "later", later)
    assert merge(apart, tmp_path / "later", "--schedule", "steps-matched", "--out", tmp_path / "joined") == 0
    joined, _ = read_cell(tmp_path / "joined" / "offline-steps-matched" / CELL)
    assert joined["final_average_accuracy"]["per_seed"] == [30.0, 31.0, 32.0, 33.0]
    assert merge(tmp_path / "stages" / "seeds-0-1", tmp_path / "later", "--schedule", "steps-matched",
                 "--out", tmp_path / "mixed") != 0  # the code's weight never joins the text's


def test_seeds_that_are_not_one_stage_are_refused(tmp_path, capsys):
    write_stage(tmp_path / "s1", stage_numbers([0, 2], [16.0, 17.0]))
    assert keep(tmp_path / "s1", tmp_path / "stages") == 2
    assert "not one stage" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        keep(tmp_path / "absent", tmp_path / "stages")
