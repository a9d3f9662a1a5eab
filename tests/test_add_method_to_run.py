"""experiments/add_method_to_run.py: one more method beside a finished visualisation run, measured against that run's
stored HMC-NUTS reference (a made-up run folder here: a uniform reference, one epoch)."""
import json
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "experiments"))

import add_method_to_run as amr  # noqa: E402


def made_up_run(folder: Path, resolution: int = 10) -> Path:
    "A run folder with one method (ER) and a uniform HMC reference on a 10 x 10 grid of CI Split 2D Iris."
    from bcl.serialise import write_numbers
    n = resolution * resolution
    numbers = {"run": "made_up", "sequence": "cisplit2diris", "window": [[0.0, 7.0], [0.0, 3.0]],
               "grid_resolution": resolution, "n_tasks": 3,
               "parameters": {"preset": "paper", "epochs": 1, "seeds": [0], "kl_floor": 1e-6, "fast_compile": None,
                              "hmc_reference": "draws", "hmc_chains": 2, "hmc_warmup": 10, "hmc_samples": 10},
               "methods": {"er": {"status": "ok", "test_accuracy": [[[1.0, 0.0, 0.0], [0.5, 1.0, 0.0], [0.0, 0.5, 1.0]]],
                                  "final_average_accuracy": {"per_seed": [50.0], "mean": 50.0, "std": 0.0}, "timings": {"wall_s": 1.0},
                                  "distance_to_hmc": {"tv": [0.5, 0.5, 0.5], "kl": [1.0, 1.0, 1.0]}}}}
    grids = {"er": np.full((3, n, 3), 1 / 3), "hmc": np.full((3, n, 3), 1 / 3)}
    write_numbers(folder, numbers, grids)
    return folder


def test_a_method_is_measured_against_the_runs_reference(tmp_path):
    result = amr.measure(made_up_run(tmp_path), "FROMP")
    assert result["method"] == "fromp" and result["label"] == "FROMP"
    tv, kl = result["distances"]["fromp"]["tv"], result["distances"]["fromp"]["kl"]
    assert len(tv) == len(kl) == 3 and all(0 <= v <= 1 for v in tv) and all(v >= 0 for v in kl)
    # against a uniform reference the TV is half the L1 distance of the predictive to uniform: positive once trained
    assert tv[0] > 0.01
    assert [r["position"] for r in result["rank_by_tv"]] == [1 + (tv[t] > 0.5) for t in range(3)]
    assert 0 <= result["final_average_accuracy"]["fromp"] <= 100
    assert "FROMP" in amr.table(result)


def test_a_run_without_a_reference_is_refused(tmp_path):
    folder = made_up_run(tmp_path)
    from bcl.serialise import read_numbers, write_numbers
    numbers, grids = read_numbers(folder)
    write_numbers(folder, numbers, {"er": grids["er"]})
    with pytest.raises(SystemExit, match="no HMC-NUTS reference"):
        amr.measure(folder, "fromp")
    with pytest.raises(SystemExit, match="its reference"):
        amr.measure(made_up_run(tmp_path / "again"), "hmc")


def test_the_merged_run_holds_the_method_before_hmc_and_redraws(tmp_path):
    from bcl.serialise import read_numbers
    folder = made_up_run(tmp_path / "run")
    before, _ = read_numbers(folder)
    result = amr.measure(folder, "sfr")
    into = amr.merge(folder, result, tmp_path / "merged")
    numbers, grids = read_numbers(into)
    assert list(numbers["methods"]) == ["er", "sfr"] and sorted(grids) == ["er", "hmc", "sfr"]
    for d in ("tv", "kl"):
        assert numbers["methods"]["sfr"]["distance_to_hmc"][d] == pytest.approx(result["distances"]["sfr"][d])
    assert numbers["methods"]["er"] == before["methods"]["er"]  # the run's own entries untouched
    assert numbers["provenance"] == before["provenance"] and "sfr" in numbers["added_methods"]
    assert np.allclose(grids["sfr"], result["grid"])
    with pytest.raises(SystemExit, match="already has sfr"):
        amr.merge(into, result, tmp_path / "again")
    paths = amr.redraw(into, tmp_path / "figures", tmp_path / "tables")
    written = json.loads((tmp_path / "tables" / "visualisation_cisplit2diris.json").read_text())
    assert written["added_methods"]["sfr"]["provenance"]["bcl_code"] and any(p.suffix == ".png" for p in paths)
    assert [row["method"] for row in written["summary"]][:2] == ["ER", "SFR"]
