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
    mixed = [str(tmp_path / f"{b}.jsonl") for b in ("gpu", "cpu")]
    for path in mixed:  # a CPU file after GPU ones would replace GPU step times by CPU ones
        Path(path).write_text(json.dumps(_line("cnn6", "er", 0.01) | {"backend": Path(path).stem}) + "\n")
    for args, words in ((["--jobs", "0"], "--jobs must be a positive integer"),
                        (["--project", str(tmp_path / "none.jsonl")], "no such file"),
                        (["--concurrent", "1"], "--concurrent takes a count of at least 2"),
                        (["--concurrent", "2", "--jobs", "2"], "neither --jobs"),
                        (["--project", *mixed], "step lines of several backends (gpu: ")):
        done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "gpu.py"), *args], capture_output=True,
                              text=True, timeout=60)
        assert done.returncode == 2 and words in done.stderr


def test_cells_side_by_side_are_charged_at_their_measured_throughput(tmp_path, capsys):
    measured = [_line("cnn6", "er", 0.01, batch_size=32), _line("cnn6", "si", 0.02, batch_size=32)]
    gains = {("cnn6", "er", "test GPU"): 2.5, ("cnn6", "si", "another GPU"): 4.0}  # SI's gain: another device's
    cell = _cell(gpu.project(measured, methods=("er", "si"), gains=gains), "CI CIFAR-10 CNN")
    assert cell["methods"]["er"]["concurrent_seconds"] == pytest.approx(250.0 / 2.5)
    assert cell["methods"]["si"]["concurrent_seconds"] == pytest.approx(cell["methods"]["si"]["seconds"])  # no gain
    assert cell["concurrent_seconds"] == pytest.approx(100.0 + cell["methods"]["si"]["seconds"])
    alone = _line("cnn6", "er", 0.01) | {"backend": "gpu"}
    line = gpu.concurrent_line(alone, [{"s_per_step": 0.02}, {"s_per_step": 0.02}, {"s_per_step": 0.02}], 3)
    assert line["throughput_gain"] == pytest.approx(1.5) and line["copies"] == 3  # 3 × 0.01 / 0.02
    failed = gpu.concurrent_line(alone, [{"s_per_step": 0.02}, {"error": "out of memory"}], 2)
    assert failed["throughput_gain"] is None and failed["errors"] == ["out of memory"]
    path = tmp_path / "m.jsonl"
    path.write_text("\n".join(json.dumps(l) for l in (*measured, line, failed)) + "\n")
    assert gpu.throughput_gains(gpu._read_jsonl(path)) == {("cnn6", "er", "test GPU"): 1.5}  # a failed line: nothing
    gpu.print_projection(path)
    total = [json.loads(l) for l in capsys.readouterr().out.splitlines() if l.startswith("{")][-1]
    cnn6 = sum(model == "cnn6" for _, model, _ in gpu.PROJECTION["columns"].values())
    assert total["concurrent_hours"] < total["hours"] and total["pairs_with_gain"] == cnn6  # ER in every cnn6 column


def test_the_barrier_waits_for_every_process(tmp_path):
    (tmp_path / "another-process").touch()
    gpu.wait_for_all(str(tmp_path), 2)  # this one and the other: through
    with pytest.raises(TimeoutError, match="only 2 of 3 processes"):
        gpu.wait_for_all(str(tmp_path), 3, timeout_s=0.05)
