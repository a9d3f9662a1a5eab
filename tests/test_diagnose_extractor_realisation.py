"""experiments/diagnose_extractor_realisation.py: a sibling extractor's cells beside the committed ones, and the
ledger's test that the sibling's runs bear on a committed cell."""
import json
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "experiments"))

import diagnose_extractor_realisation as realisation  # noqa: E402

COMMITTED = {"column": "ci-mnist-fe", "method": "p-gm-sfsvi", "mean": 70.98, "sd": 3.43, "n": 10,
             "substitute": "MNIST-5k", "extractor": {"params_sha256": "ab" * 32}}


def numbers(per_seed, extractor="89" * 32, schedule="steps-matched"):
    return {"column": "ci-mnist-fe", "method": "p-gm-sfsvi", "seeds": list(range(len(per_seed))),
            "final_average_accuracy": {"per_seed": per_seed, "mean": sum(per_seed) / len(per_seed), "n": len(per_seed),
                                       "std": float(np.std(per_seed, ddof=1))},
            "substitute": "MNIST-5k", "extractor": {"params_sha256": extractor},
            "parameters": {"schedule": schedule}, "test_accuracy": [[[0.7] * 5] * 5] * len(per_seed),
            "provenance": {"bcl_code": "x", "git": {}, "backend": "cpu", "cpu": "test"}}


def test_a_sibling_inside_the_committed_interval_bears_and_one_far_away_does_not():
    from bcl.table.verdict import load_protocol
    rule = load_protocol().rule
    near = realisation.sibling_record(numbers([70.5, 70.9, 72.7, 70.4, 68.2]))
    row = realisation.compare(near, COMMITTED | {"paper": 89.28}, rule)
    assert row["inside_committed_interval"] and abs(row["difference"] - (near["mean"] - 70.98)) < 1e-9
    assert row["committed"]["outcome"] == "differs" and row["sibling"]["extractor_sha256"] == "89" * 32
    far = realisation.sibling_record(numbers([84.4, 85.2, 83.8, 84.9, 85.5]))  # 13.8 above: past the 11.1 half-width
    assert not realisation.compare(far, COMMITTED | {"paper": 89.28}, rule)["inside_committed_interval"]


def test_the_script_writes_a_ledger_shaped_diagnosis_and_refuses_the_committed_extractor(tmp_path):
    ledger = tmp_path / "ledger.json"
    ledger.write_text(json.dumps({"cells": {"ci-mnist-fe/p-gm-sfsvi": COMMITTED}}))
    cell = tmp_path / "batch" / "offline-steps-matched" / "ci-mnist-fe" / "p-gm-sfsvi"
    cell.mkdir(parents=True)
    (cell / "numbers.json").write_text(json.dumps(numbers([70.5, 70.9, 72.7, 70.4, 68.2])))
    out = str(tmp_path / "diagnosis")
    assert realisation.main([str(tmp_path / "batch"), "--ledger", str(ledger), "--out", out]) == 0
    written = json.loads(Path(out + ".json").read_text())["cells"]["ci-mnist-fe/p-gm-sfsvi"]
    assert written["per_seed"] == [70.5, 70.9, 72.7, 70.4, 68.2] and written["inside_committed_interval"]
    assert "| yes |" in Path(out + ".md").read_text()
    (cell / "numbers.json").write_text(json.dumps(numbers([70.5, 70.9, 72.7], extractor="ab" * 32)))
    with pytest.raises(SystemExit):  # the committed extractor's own cells: nothing to compare
        realisation.main([str(tmp_path / "batch"), "--ledger", str(ledger), "--out", out])
