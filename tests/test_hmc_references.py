"""experiments/compare_hmc_references.py: ranks by distance to a reference, and the committed table read back."""
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "experiments"))

import compare_hmc_references as compare  # noqa: E402


def test_ranks_ties_and_kendall():
    assert compare.ranks({"a": 0.2, "b": 0.1, "c": 0.2}) == {"a": 2, "b": 1, "c": 2}
    assert compare.kendall_tau({"a": 1, "b": 2, "c": 3}, {"a": 10, "b": 20, "c": 30}) == 1.0
    assert compare.kendall_tau({"a": 1, "b": 2, "c": 3}, {"a": 30, "b": 20, "c": 10}) == -1.0


def test_mean_tv_is_half_the_l1_distance_averaged_over_points():
    p = np.array([[1.0, 0.0], [0.5, 0.5]])
    q = np.array([[0.0, 1.0], [0.5, 0.5]])
    assert compare.mean_tv(p, q) == 0.5 and compare.mean_tv(p, p) == 0.0


def test_the_committed_table_is_read_by_display_name():
    import json
    table = json.loads((ROOT / "experiments" / "tables" / "visualisation_cisplit2diris.json").read_text())
    tv = compare.committed_tv(table, {"er": "ER", "l-gm-sfsvi": "L-GM-SFSVI"}, 3)
    row = next(r for r in table["distance_to_hmc"] if r["method"] == "ER")
    assert tv["er"] == [float(row[f"TV t{t}"]) for t in (1, 2, 3)] and len(tv["l-gm-sfsvi"]) == 3


def test_the_committed_reference_is_described_from_its_own_settings():
    tables = ROOT / "experiments" / "tables"
    iris = compare.describe_reference(compare.reference_settings(tables / "visualisation_cisplit2diris.json"))
    sinusoid = compare.describe_reference(compare.reference_settings(tables / "visualisation_disinusoid.json"))
    assert iris == "64 chains × 200 draws, another run"
    assert sinusoid == "8 chains × 400 draws at a warm-up target acceptance of 0.9, another run"
    assert compare.describe_reference(compare.reference_settings(tables / "no_such_table.json")) == "another run"
