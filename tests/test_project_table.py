"""experiments/project_table.py: which measurement projects a cell not run, and the committed ledger as a source."""
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "experiments"))

import project_table  # noqa: E402


def _cell(column, method, backend, run_s, steps=100):
    return {"column": column, "method": method, "mean": 50.0, "timings": {"run_s": run_s, "wall_s": run_s + 5,
            "compile_s": 5.0}, "optimiser_steps": steps, "provenance": {"backend": backend, "devices": [backend]}}


def _choose(plans, measured, backend, key):
    chosen, _, _ = project_table.sources(plans, measured, backend)
    return chosen.get(key)


def test_a_cpu_projection_never_takes_a_gpu_cell_over_a_cpu_measurement():
    key = ("cnn_mnist", "si", None)
    gpu_cell = _cell("di-mnist-cnn", "si", "gpu", run_s=2.0)
    plans = {("di-mnist-cnn", "si"): {"network": "cnn_mnist", "noise": None, "numbers": gpu_cell},
             ("ci-mnist-cnn", "si"): {"network": "cnn_mnist", "noise": None, "numbers": None}}
    cpu_line = {"backend": "cpu", "s_per_step": 1.9, "source_file": "cpu.jsonl"}
    assert _choose(plans, {key: cpu_line}, "cpu", key) is cpu_line  # rule 3 before rule 4
    assert _choose(plans, {key: cpu_line}, "gpu", key) is gpu_cell  # on a GPU, the GPU cell is rule 2
    assert _choose(plans, {}, "cpu", key) is gpu_cell  # nothing on the CPU: the other backend, named by its device
    cpu_cell = _cell("ci-mnist-fcnn", "si", "cpu", run_s=300.0)
    plans[("ci-mnist-fcnn", "si")] = {"network": "cnn_mnist", "noise": None, "numbers": cpu_cell}
    assert _choose(plans, {key: cpu_line}, "cpu", key) is cpu_cell  # a finished CPU cell first (rule 2)
    record = project_table._from_cell(cpu_cell, "si", steps=1000, seeds=5)  # no seeds recorded: taken as equal
    assert abs(record["s_per_step"] - 3.0) < 1e-12 and abs(record["seconds"] - 3005.0) < 1e-9
    ten = cpu_cell | {"seeds": list(range(10))}  # a cell of 10 seeds projects one of 5 at half its step time
    assert abs(project_table._from_cell(ten, "si", steps=1000, seeds=5)["s_per_step"] - 1.5) < 1e-12
    record = project_table._from_benchmark(cpu_line | {"seeds": 1}, ratio=2.0, seeds=5, steps=10)
    assert abs(record["s_per_step"] - 1.9 * 2.0 * 5) < 1e-12  # overhead × the seeds run one after another


def test_the_committed_ledger_feeds_only_timed_finished_cells(tmp_path):
    from bcl.table.ledger import previous_cells
    ledger = {"cells": {"a/er": _cell("a", "er", "cpu", 10.0),
                        "a/si": {"column": "a", "method": "si", "mean": None, "status": "not run"},
                        "a/ewc": {"column": "a", "method": "ewc", "mean": 40.0}}}  # no timings: not a source
    (tmp_path / "faa_offline.json").write_text(json.dumps(ledger))
    assert list(project_table.timed_cells(previous_cells(tmp_path, "offline"))) == ["a/er"]
    assert previous_cells(tmp_path, "absent") == {}


def test_a_cpu_cell_pinned_to_fewer_cores_is_not_a_measurement_on_the_target():
    key = ("cnn_mnist", "si", None)
    pinned = _cell("ci-mnist-cnn", "si", "cpu", run_s=2.9)
    pinned["provenance"]["cpu"] = {"model": "AMD EPYC", "cores": 1, "machine_cores": 2}
    plans = {("ci-mnist-cnn", "si"): {"network": "cnn_mnist", "noise": None, "numbers": pinned}}
    cpu_line = {"backend": "cpu", "s_per_step": 1.5, "source_file": "cpu.jsonl"}
    chosen, finished, _ = project_table.sources(plans, {key: cpu_line}, "cpu", cores=2)
    assert finished == {} and chosen[key] is cpu_line  # the 2-core benchmark line, not the 1-core cell
    chosen, finished, _ = project_table.sources(plans, {key: cpu_line}, "cpu", cores=1)
    assert chosen[key] is pinned  # on one core it is the measurement
    assert project_table.sources(plans, {}, "cpu", cores=2)[0][key] is pinned  # nothing else: rule 4, by its device


def test_a_cell_run_on_a_gpu_is_projected_for_the_cpu_from_the_cpu_sources():
    "A 5-seed cell run on an H200 in 67 s says nothing of its CPU time: a CPU source projects it (the protocol's 2 h)."
    gpu_cell = {"provenance": {"backend": "gpu", "devices": ["NVIDIA H200"]}, "timings": {"wall_s": 67.0}}
    cpu_cell = {"provenance": {"backend": "cpu", "cpu": {"cores": 2}}, "timings": {"wall_s": 900.0}}
    cpu_line = {"backend": "cpu", "s_per_step": 0.5}
    assert project_table.measured_elsewhere(gpu_cell, cpu_line, "cpu", 2)
    assert not project_table.measured_elsewhere(gpu_cell, None, "cpu", 2)  # nothing here: its own time stands
    assert not project_table.measured_elsewhere(cpu_cell, cpu_line, "cpu", 2)
    assert project_table.measured_elsewhere(cpu_cell, cpu_line, "cpu", 4)  # measured with another number of cores
    assert not project_table.measured_elsewhere(None, cpu_line, "cpu", 2)
