"""experiments/compare_runs.py: two results folders with the same computed numbers compare equal whatever their
timings and provenance; one changed number, or a missing file, fails with the place named."""
import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "experiments" / "compare_runs.py"


def _write(folder: Path, accuracy: float, wall_s: float) -> None:
    cell = folder / "offline" / "ci-mnist-fcnn" / "ewc"
    cell.mkdir(parents=True)
    (cell / "numbers.json").write_text(json.dumps({
        "final_average_accuracy": {"per_seed": [12.5, accuracy], "mean": (12.5 + accuracy) / 2},
        "test_accuracy": [[[0.9, 0.1], [0.5, 0.8]]], "selected": [[1, 2]],
        "timings": {"wall_s": wall_s}, "provenance": {"created": str(wall_s)}, "content_hash": str(wall_s)}))


def _compare(before: Path, after: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), str(before), str(after), *args], capture_output=True, text=True)


def test_equal_numbers_pass_whatever_the_timings(tmp_path):
    _write(tmp_path / "a", 7.5, 1.0)
    _write(tmp_path / "b", 7.5, 99.0)
    result = _compare(tmp_path / "a", tmp_path / "b")
    assert result.returncode == 0 and "1 of 1 files equal bit for bit" in result.stdout, result.stdout


def test_one_changed_number_fails_and_is_named(tmp_path):
    _write(tmp_path / "a", 7.5, 1.0)
    _write(tmp_path / "b", 7.5 + 1e-9, 1.0)
    result = _compare(tmp_path / "a", tmp_path / "b")
    assert result.returncode == 1 and "final_average_accuracy.per_seed[1]" in result.stdout, result.stdout
    assert _compare(tmp_path / "a", tmp_path / "b", "--rtol", "1e-6").returncode == 0


def test_a_missing_file_fails(tmp_path):
    _write(tmp_path / "a", 7.5, 1.0)
    (tmp_path / "b").mkdir()
    result = _compare(tmp_path / "a", tmp_path / "b")
    assert result.returncode == 1 and "MISSING" in result.stdout, result.stdout
