"""experiments/diagnose_seed_spread.py: bcl's and the authors' seeds of one cell on the same arrays, their means and
spreads, the grid point each seed selected, and a check that bcl's seeds reproduce the ledger's."""
import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("diagnose_seed_spread", ROOT / "experiments" / "diagnose_seed_spread.py")
spread = importlib.util.module_from_spec(spec)
spec.loader.exec_module(spread)

EXTRACTOR = {"params_sha256": "ab" * 32}
POINTS = ({"learning_rate": 0.01, "lam": 1.0, "xi": 0.1}, {"learning_rate": 0.01, "lam": 10000.0, "xi": 10.0})


def test_the_authors_si_ids_name_their_grid():
    assert spread.authors_si_point("si1") == {"lam": 1.0, "xi": 0.1}
    assert spread.authors_si_point("si7") == {"lam": 10.0, "xi": 1.0}
    assert spread.authors_si_point("si15") == {"lam": 10000.0, "xi": 10.0}
    assert spread.grid_point(POINTS[0]) == spread.grid_point(spread.authors_si_point("si1")) == "λ=1, ξ=0.1"
    with pytest.raises(ValueError, match="si1..si15"):
        spread.authors_si_point("si16")


def write_inputs(tmp_path, ours, theirs, ledger_seeds):
    """A batch folder with bcl's cell, the authors' runs (with lines of another trainer, arrays and regime that must be
    left out) and a ledger holding the cell on `ledger_seeds`."""
    cell = tmp_path / "batch" / "offline-steps-matched" / "ci-mnist-fe" / "si"
    cell.mkdir(parents=True)
    seeds = list(range(len(ours)))
    cell.joinpath("numbers.json").write_text(json.dumps({
        "seeds": seeds, "final_average_accuracy": {"per_seed": ours}, "extractor": EXTRACTOR,
        "selected": [POINTS[s % 2] for s in seeds], "provenance": json.dumps({"bcl_code": "c0de"})}))
    run = {"experiment": "svi_cisplitmnist_fe", "data": "cisplitmnist5k_fe", "training_repeat": 15,
           "data_sha256": "d" * 64, "extractor_sha256": EXTRACTOR["params_sha256"], "created": "2026-12-06T00:00:00"}
    lines = [run | {"seed": s, "trainer": "si1" if s % 2 else "si15", "final_average_accuracy": a}
             for s, a in enumerate(theirs)]
    lines += [run | {"seed": 0, "trainer": "simple_gvcl", "final_average_accuracy": 99.0},
              run | {"seed": 0, "trainer": "si1", "final_average_accuracy": 99.0, "training_repeat": 1},
              run | {"seed": 0, "trainer": "si1", "final_average_accuracy": 99.0, "data": "displitmnist5k_fe"}]
    (tmp_path / "authors.jsonl").write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    ledger = {"cells": {"ci-mnist-fe/si": {
        "column": "ci-mnist-fe", "method": "si", "paper": 30.2364, "substitute": "cisplitmnist5k for cisplitmnist",
        "status": "differs", "extractor": EXTRACTOR, "seeds": ledger_seeds,
        "per_seed": [ours[s] for s in ledger_seeds]}}}
    (tmp_path / "ledger.json").write_text(json.dumps(ledger))


def run(tmp_path):
    assert spread.main([str(tmp_path / "batch"), "--cell", "ci-mnist-fe/si", "--authors", str(tmp_path / "authors.jsonl"),
                        "--ledger", str(tmp_path / "ledger.json"), "--out", str(tmp_path / "d")]) == 0
    return json.loads((tmp_path / "d.json").read_text()), (tmp_path / "d.md").read_text()


def test_same_mean_wider_spread(tmp_path):
    ours = [22.0, 23.0, 22.5, 23.5, 22.0, 23.0, 22.5, 23.5, 22.0, 23.0]
    theirs = [17.0, 29.0, 18.0, 28.0, 17.5, 28.5, 18.5, 27.5, 17.0, 29.0]
    write_inputs(tmp_path, ours, theirs, list(range(6)))
    d, md = run(tmp_path)
    assert d["authors"]["summary"]["n"] == 10  # the other trainer, arrays and regime left out
    assert d["tests"]["means_permutation_p"] > 0.5 and d["tests"]["spread_brown_forsythe_p"] < 0.01
    assert d["tests"]["sd_ratio"] > 5
    assert d["authors"]["summary"]["outcome"] != "differs" and d["bcl"]["summary"]["outcome"] == "differs"
    assert d["bcl"]["reproduces_ledger"] == {"seeds": 6, "largest_difference": 0.0}
    assert d["authors"]["by_grid_point"]["λ=1, ξ=0.1"] == {"seeds": 5, "mean": pytest.approx(28.4, abs=1e-9)}
    assert d["bcl"]["by_grid_point"]["λ=10000, ξ=10"]["seeds"] == 5
    assert "| 1 | λ=10000, ξ=10 | 23.00 | λ=1, ξ=0.1 | 29.00 |" in md


def test_different_means_are_told_apart(tmp_path):
    ours = [22.0, 23.0, 22.5, 23.5, 22.0, 23.0]
    write_inputs(tmp_path, ours, [x + 6.0 for x in ours], [0, 1])
    d, _ = run(tmp_path)
    assert d["tests"]["difference_of_means"] == pytest.approx(-6.0)
    assert d["tests"]["means_permutation_p"] < 0.01 and d["tests"]["spread_brown_forsythe_p"] > 0.5


def test_a_missing_cell_says_how_to_run_it(tmp_path, capsys):
    write_inputs(tmp_path, [22.0, 23.0, 22.5], [20.0, 21.0, 22.0], [0])
    with pytest.raises(SystemExit):
        spread.main([str(tmp_path / "nowhere"), "--cell", "ci-mnist-fe/si", "--ledger", str(tmp_path / "ledger.json")])
    assert "run_table.py faa --schedule steps-matched --cells 'ci-mnist-fe/si'" in capsys.readouterr().err
