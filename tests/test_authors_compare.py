"""tests/parity/authors_compare.py: Holm's adjustment over the methods of a sequence, and which bcl run is primary."""
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "parity"))

import authors_compare  # noqa: E402


def test_holm_against_a_hand_computed_family():
    # sorted 0.01, 0.03, 0.04, 0.5: times 4, 3, 2, 1 = 0.04, 0.09, 0.08 -> 0.09 (non-decreasing), 0.5
    adjusted = authors_compare.holm({"a": 0.01, "b": 0.04, "c": 0.03, "d": 0.5})
    assert adjusted == pytest.approx({"a": 0.04, "b": 0.09, "c": 0.09, "d": 0.5})
    assert authors_compare.holm({"a": 0.6, "b": 0.7}) == {"a": 1.0, "b": 1.0}  # capped at 1


def test_holm_lies_between_the_raw_p_and_bonferroni():
    rng = np.random.default_rng(0)
    raw = dict(zip("abcdefg", rng.uniform(size=7)))
    adjusted = authors_compare.holm(raw)
    for name, p in raw.items():
        assert p <= adjusted[name] <= min(1.0, 7 * p)
    order = sorted(raw, key=raw.get)
    assert all(adjusted[x] <= adjusted[y] for x, y in zip(order, order[1:]))


def _bcl(method, jax, n, reuse=False):
    return {"method": method, "jax": jax, "final_average_accuracy": [80.0 + i % 3 for i in range(n)],
            "reuse_task_key": reuse}


def test_the_primary_run_is_the_newest_jax_without_a_diagnostic_option():
    runs = [_bcl("si", "0.4.28", 100), _bcl("si", "0.10.2", 20), _bcl("si", "0.10.2", 100),
            _bcl("si", "0.10.2", 200, reuse=True)]
    assert authors_compare.primary_run(runs) is runs[2]  # 0.10.2 > 0.4.28 as versions, not as strings
    assert authors_compare.primary_run([_bcl("si", "0.10.2", 5, reuse=True)]) is None


def test_the_table_adjusts_only_the_primary_rows():
    authors = [{"trainer": "likelihood_exact_gsfsvi", "seed": s, "jax": "0.4.28", "accuracy": [[1.0]],
                "final_average_accuracy": 90.0 + (s % 5)} for s in range(10)]
    authors += [{"trainer": "si1", "seed": s, "jax": "0.4.28", "accuracy": [[1.0]], "candidates": ["si1", "si2"],
                 "final_average_accuracy": 50.0 + (s % 4)} for s in range(10)]
    ours = [_bcl("l-g-sfsvi", "0.10.2", 50), _bcl("l-g-sfsvi", "0.4.28", 50), _bcl("si", "0.10.2", 50)]
    text = authors_compare.table(authors, ours)
    assert "Holm p (2 methods)" in text
    rows = [line.split(" | ") for line in text.splitlines() if line.startswith("| L-G-SFSVI | bcl")]
    assert rows[0][6] != "–" and rows[1][6] == "–"  # the 0.10.2 run is primary, the 0.4.28 run a diagnostic
    assert float(rows[0][6]) >= float(rows[0][5])


def test_per_task_permutation_p_holds_when_one_code_is_constant():
    # 88 of 100 seeds get the task right, the other code all 10 of its seeds: P(10 of 10 | 88 %) = 0.88^10 = 0.28,
    # so no test should call this a difference; Welch's t, taking the zero spread at face value, gives p < 0.01.
    ours = np.array([1.0] * 88 + [0.4, 0.4, 0.5, 0.6, 0.7, 0.8, 0.8, 0.8, 0.9, 0.9, 0.9, 0.9])
    theirs = np.ones(10)
    assert authors_compare.permutation_p(ours, theirs) > 0.2
    assert authors_compare.permutation_p(np.ones(5), np.ones(7)) == 1.0
    # a real shift is still found: 0/20 against 20/20 has exact p 2 / C(40, 20) ~ 1e-11, floored at 1/10,001
    assert authors_compare.permutation_p(np.zeros(20), np.ones(20)) < 0.001


def test_a_seed_run_twice_counts_once():
    record = {"experiment": "svi_disinusoid_fcnn", "trainer": "likelihood_exact_gmsfsvi", "seed": 6}
    grid = {"experiment": "svi_cisplit2diris_fcnn", "trainer": "si3", "seed": 6, "candidates": ["si1", "si2", "si3"]}
    runs = authors_compare.unique_runs([record, dict(record), record | {"seed": 7}, grid, grid | {"trainer": "si1"}])
    assert [(r["trainer"], r["seed"]) for r in runs] == [("likelihood_exact_gmsfsvi", 6), ("likelihood_exact_gmsfsvi", 7),
                                                          ("si3", 6)]


def test_a_single_seed_is_reported_not_tested():
    one, three = np.array([97.2]), np.array([96.0, 97.0, 98.0])
    assert authors_compare.welch(three, one) is None
    assert authors_compare._welch_cells(three, one) == ("–", "too few seeds")
    matrices = np.full((1, 2, 2), 0.9).tolist()
    assert authors_compare._per_task_p(np.full((3, 2, 2), 0.9).tolist(), matrices) == "–"
    assert authors_compare._summary([97.2]) == "97.20"


def test_si_at_one_grid_point_is_its_own_method():
    assert authors_compare.si_grid_point("si1") == {"lam": 1.0, "xi": 0.1}
    assert authors_compare.si_grid_point("si8") == {"lam": 100.0, "xi": 1.0}
    assert authors_compare.si_grid_point("si15") == {"lam": 10000.0, "xi": 10.0}
    searched = {"trainer": "si8", "seed": 0, "jax": "0.4.28", "accuracy": [[1.0]], "candidates": ["si1", "si8"],
                "final_average_accuracy": 60.0}
    alone = [{"trainer": "si8", "seed": s, "jax": "0.4.28", "accuracy": [[1.0]], "final_average_accuracy": 70.0 + s % 3}
             for s in range(5)]
    assert authors_compare.authors_method(searched) == "si"
    assert authors_compare.authors_method(alone[0]) == "si at λ=100, ξ=1"
    fixed = _bcl("si", "0.10.2", 8) | {"fixed": {"learning_rate": 0.1, "lam": 100.0, "xi": 1.0}}
    assert authors_compare.bcl_method(fixed) == "si at λ=100, ξ=1"
    text = authors_compare.table([searched] + alone, [_bcl("si", "0.10.2", 8), fixed])
    fixed_rows = [line for line in text.splitlines() if line.startswith("| SI at λ=100, ξ=1 |")]
    assert len(fixed_rows) == 2 and "| 5 |" in fixed_rows[0] and "| 8 |" in fixed_rows[1]
    assert "Holm p (1 method)" in text  # the grid-searched SI has one authors' seed: listed, not tested
