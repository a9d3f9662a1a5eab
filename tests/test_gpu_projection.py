"""benchmarks/gpu.py: the GPU-hours projection of Table faa (steps, upper bounds) and the measurement budget."""
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import gpu  # noqa: E402


def _line(model, method, s_per_step, batch_size=64, seeds=5, device="test GPU"):
    return {"benchmark": "gpu_step", "model": model, "method": method, "s_per_step": s_per_step,
            "batch_size": batch_size, "seeds": seeds, "configs": 1, "device_kind": device}


def _cell(rows, column):
    (row,) = [r for r in rows if r["column"] == column]
    return row


def test_a_measured_method_costs_its_steps_times_its_step_time():
    rows = gpu.project([_line("cnn6", "er", 0.01, batch_size=32)], methods=("er",))
    cell = _cell(rows, "CI CIFAR-10 CNN")
    # 40,000 points in 5 tasks, batches of 32, 20 epochs: 20 × 5 × ceil(8000 / 32) = 25,000 steps
    assert cell["methods"]["er"]["steps"] == 25_000
    assert cell["methods"]["er"]["seconds"] == pytest.approx(250.0)
    assert cell["methods"]["er"]["source"] == "measured"


def test_joint_trains_each_task_on_all_tasks_so_far():
    one = gpu.steps_per_run("er", 64, "mnist", 20)
    assert gpu.steps_per_run("joint", 64, "mnist", 20) == round(one * (5 + 1) / 2)


def test_fewer_measured_seeds_run_in_turn():
    rows = gpu.project([_line("cnn6", "er", 0.01, batch_size=32, seeds=1)], methods=("er",))
    assert _cell(rows, "CI CIFAR-10 CNN")["methods"]["er"]["seconds"] == pytest.approx(5 * 250.0)


def test_a_missing_measurement_is_bounded_by_a_larger_network_and_marked():
    measured = [_line("linear512", "joint", 1e-4), _line("cnn_mnist", "si", 2e-3, batch_size=32)]
    rows = gpu.project(measured, methods=("joint", "si"))
    fe_mnist = _cell(rows, "fe/CI MNIST")  # linear64: nothing measured on it
    assert fe_mnist["methods"]["joint"]["source"] == "bound: linear512"
    assert fe_mnist["methods"]["si"]["source"] == "bound: cnn_mnist"  # through linear512, which lacks it too
    assert fe_mnist["missing"] == []
    assert _cell(rows, "fe/CI CIFAR-10")["methods"]["joint"]["source"] == "measured"
    assert _cell(rows, "CI CIFAR-10 CNN")["missing"] == ["joint", "si"]  # cnn6 has no bound: left out, not guessed


def test_a_later_file_replaces_an_earlier_line(tmp_path, capsys):
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    first.write_text(json.dumps(_line("cnn6", "er", 0.01, batch_size=32)) + "\n")
    second.write_text(json.dumps(_line("cnn6", "er", 0.02, batch_size=32)) + "\n")
    gpu.print_projection([first, second])
    lines = [json.loads(l) for l in capsys.readouterr().out.splitlines() if l.startswith("{")]
    (cell,) = [l for l in lines if l.get("column") == "CI CIFAR-10 CNN"]
    assert cell["methods"]["er"]["seconds"] == pytest.approx(500.0)
    total = lines[-1]
    assert total["benchmark"] == "gpu_projection_total" and total["bounded_hours"] == pytest.approx(0.0)
    assert math.isclose(total["hours"], sum(l["seconds"] for l in lines[:-1]) / 3600)


def test_a_spent_budget_reports_every_measurement_instead_of_running_it():
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "gpu.py"), "--quick", "--jobs", "2",
                           "--models", "linear64", "--methods", "joint", "er", "--budget-s", "1e-9"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = [json.loads(l) for l in done.stdout.splitlines() if l.startswith("{")]
    assert sorted(l["method"] for l in lines) == ["er", "joint"]
    assert all("budget" in l["error"] for l in lines)


def test_bad_arguments_say_what_to_do(tmp_path):
    for args, words in ((["--jobs", "0"], "--jobs must be a positive integer"),
                        (["--project", str(tmp_path / "none.jsonl")], "no such file")):
        done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "gpu.py"), *args], capture_output=True,
                              text=True, timeout=60)
        assert done.returncode == 2 and words in done.stderr
