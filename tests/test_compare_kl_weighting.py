"""experiments/compare_kl_weighting.py: the text's KL weight beside the code's under one schedule, written to that
schedule's own table; weightings or schedules that do not match are refused."""
import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("compare_kl_weighting", ROOT / "experiments" / "compare_kl_weighting.py")
compare = importlib.util.module_from_spec(spec)
spec.loader.exec_module(compare)


def cell(per_seed: list[float], schedule: str, kl_weighting: str | None) -> dict:
    "A P-G-SFSVI cell of CI Split MNIST-5k (FCNN) as a batch writes it and a ledger keeps it."
    n = len(per_seed)
    mean = sum(per_seed) / n
    std = (sum((a - mean) ** 2 for a in per_seed) / (n - 1)) ** 0.5
    parameters = {"column": "ci-mnist-fcnn", "method": "p-g-sfsvi", "schedule": schedule, "seeds": list(range(n))}
    if kl_weighting is not None:
        parameters["kl_weighting"] = kl_weighting
    return {"final_average_accuracy": {"per_seed": per_seed, "mean": mean, "std": std, "n": n}, "paper": 41.0995,
            "substitute": "cisplitmnist5k for cisplitmnist", "parameters": parameters,
            "provenance": {"bcl_code": "c0de", "backend": "cpu"}}


def write_batch(out: Path, run: str, numbers: dict) -> Path:
    path = out / run / "ci-mnist-fcnn" / "p-g-sfsvi" / "numbers.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(numbers))
    return out


CODE = [74.4, 58.2, 65.0, 60.3, 57.9, 67.1, 69.0, 64.5, 66.2, 75.0]  # the code's weight, far above the paper's 41.10
TEXT = [41.0, 42.5, 40.2, 41.8, 42.3]  # the text's weight, around it


def test_a_schedule_gets_its_own_table_beside_the_code_ledger_of_that_schedule(tmp_path, capsys):
    tables = tmp_path / "tables"
    tables.mkdir()
    (tables / "faa_offline-steps-matched.json").write_text(json.dumps(
        {"cells": {"ci-mnist-fcnn/p-g-sfsvi": cell(CODE, "steps-matched", None)}}))
    runs = write_batch(tmp_path / "runs", "offline-steps-matched", cell(TEXT, "steps-matched", "paper"))
    figures = tmp_path / "figures"
    assert compare.main(["--paper-runs", str(runs), "--schedule", "steps-matched", "--tables", str(tables),
                         "--figures", str(figures)]) == 0
    drawn = figures / "sensitivity_kl_weighting-steps-matched.png"
    assert drawn.stat().st_size > 0
    drawn.unlink()
    assert compare.main(["--redraw", str(tables / "sensitivity_kl_weighting-steps-matched.json"),
                         "--figures", str(figures)]) == 0
    assert drawn.stat().st_size > 0  # the figure again, from the committed table alone
    assert not (tables / "sensitivity_kl_weighting.md").exists()  # the paper's epochs keep their own table
    table = json.loads((tables / "sensitivity_kl_weighting-steps-matched.json").read_text())
    (row,) = table["rows"]
    assert (row["code"]["n"], row["paper"]["n"], table["schedule"]) == (10, 5, "steps-matched")
    assert (row["code"]["outcome"], row["paper"]["outcome"]) == ("differs", "agrees")
    text = (tables / "sensitivity_kl_weighting-steps-matched.md").read_text()
    assert "| P-G-SFSVI | 65.76 ± 5.99 (10)" in text and "| L-G-SFSVI | not run |" in text


def test_weightings_or_schedules_that_do_not_match_are_refused(tmp_path):
    tables = tmp_path / "tables"
    tables.mkdir()
    code_runs = write_batch(tmp_path / "code", "offline-steps-matched", cell(CODE, "steps-matched", None))
    not_text = write_batch(tmp_path / "not-text", "offline-steps-matched", cell(TEXT, "steps-matched", None))
    with pytest.raises(ValueError, match="must record kl_weighting 'paper'"):
        compare.main(["--paper-runs", str(not_text), "--code-runs", str(code_runs), "--schedule", "steps-matched",
                      "--tables", str(tables)])
    (tables / "faa_offline-steps-matched.json").write_text(json.dumps(
        {"cells": {"ci-mnist-fcnn/p-g-sfsvi": cell(CODE, "epochs", None)}}))
    runs = write_batch(tmp_path / "runs", "offline-steps-matched", cell(TEXT, "steps-matched", "paper"))
    with pytest.raises(ValueError, match="different schedules"):
        compare.main(["--paper-runs", str(runs), "--schedule", "steps-matched", "--tables", str(tables)])
    with pytest.raises(SystemExit):  # no ledger of this schedule, and none given
        compare.main(["--paper-runs", str(runs), "--schedule", "matched", "--tables", str(tables)])
