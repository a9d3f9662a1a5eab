"""Your own sequence, model, method and column (nbs/72_custom.ipynb): registered by a plugin module, run through the
batch (experiments/run_table.py custom) by name in any letter case; bad names and duplicate registrations fail with
a ValueError that says what to do.

The batch test runs two cells of the example plugin (experiments/plugins/cancer_example.py) for two epochs and one
seed: two papermill kernels on one Dask worker, about a minute on a 2-core CPU. Another runs one cell on a separate
Dask scheduler whose worker cannot import the plugin itself: the batch ships its source.

A small data set of one's own (experiments/plugins/digits_example.py: 192 training points per task) runs all 15
methods with a setup of its own (a coreset of 64), in the class- and the task-incremental scenario; the same column with the paper's `image` setup (a coreset of 256)
fails its seven affected cells within seconds, before any cell starts, and `--dry-run` lists them.
"""
import importlib
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
PLUGIN = ROOT / "experiments" / "plugins" / "cancer_example.py"
RUNNER = [sys.executable, str(ROOT / "experiments" / "run_table.py"), "custom"]


def batch(args, tmp_path, plugin_dir, timeout=600):
    env = {**os.environ, "TQDM_DISABLE": "1", "PYTHONPATH": str(plugin_dir), "BCL_DATA_DIR": str(tmp_path / "data")}
    return subprocess.run(RUNNER + args, capture_output=True, text=True, timeout=timeout, cwd=ROOT, env=env)


@pytest.fixture
def registries():
    "Registrations made by a test are undone after it."
    from bcl import models, paper
    from bcl.data import sequences as data
    from bcl.table import plan
    saved = [(d, dict(d)) for d in (data.SEQUENCES, models._TAILS, paper.USER_METHODS, paper._USER_BY_SQUASHED,
                                    paper.USER_SETUPS, plan.USER_COLUMNS)]
    yield
    for registry, before in saved:
        registry.clear()
        registry.update(before)


@pytest.fixture
def plugin(registries, monkeypatch):
    "The example plugin, imported in this process."
    monkeypatch.syspath_prepend(str(PLUGIN.parent))
    sys.modules.pop("cancer_example", None)
    yield importlib.import_module("cancer_example")
    sys.modules.pop("cancer_example", None)


def test_custom_cells_run_through_the_batch_by_name(tmp_path):
    plugin_dir = tmp_path / "plugins"
    plugin_dir.mkdir()
    shutil.copy(PLUGIN, plugin_dir / PLUGIN.name)
    args = ["--plugins", "cancer_example", "--profile", "offline", "--epochs", "2", "--seeds", "1", "--workers", "1",
            "--out", str(tmp_path / "out"), "--data-dir", str(tmp_path / "data"),
            "--cells", "DI-Cancer-Tabular/L2-ANCHOR", "di-cancer-tabular/Finetuning"]  # names in other letter cases
    done = batch(args, tmp_path, plugin_dir)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    for method, label in (("l2-anchor", "L2 anchor"), ("finetuning", "Fine-tuning")):
        numbers = json.loads((tmp_path / "out" / "offline" / "di-cancer-tabular" / method / "numbers.json").read_text())
        assert (numbers["column"], numbers["method"], numbers["method_label"]) == ("di-cancer-tabular", method, label)
        assert numbers["paper"] is None and numbers["parameters"]["plugins"] == ["cancer_example"]
        accuracies = [a for row in numbers["test_accuracy"][0] for a in row] + numbers["final_average_accuracy"]["per_seed"]
        assert all(math.isfinite(a) for a in accuracies)
        assert all(0 <= a <= 100 for a in numbers["final_average_accuracy"]["per_seed"])
        assert numbers["epochs"] == 2 and len(numbers["n_train"]) == 3
    again = batch(args + ["--dry-run"], tmp_path, plugin_dir)
    assert "2 cells: 2 done, 0 to run" in again.stdout, again.stdout + again.stderr
    with open(plugin_dir / PLUGIN.name, "a") as f:  # an edited plugin reruns its cells
        f.write("\n# edited\n")
    edited = batch(args + ["--dry-run"], tmp_path, plugin_dir)
    assert "2 cells: 0 done, 2 to run" in edited.stdout, edited.stdout + edited.stderr


def test_batch_without_a_registered_column_says_what_to_do(tmp_path):
    done = batch(["--dry-run"], tmp_path, tmp_path)
    assert done.returncode != 0 and "No column is registered: pass --plugins MODULE" in done.stderr
    done = batch(["--plugins", "no_such_plugin", "--dry-run"], tmp_path, tmp_path)
    assert done.returncode != 0 and "Cannot import plugin 'no_such_plugin'" in done.stderr and "PYTHONPATH" in done.stderr


def test_registered_names_in_any_letter_case(plugin, tmp_path):
    from bcl.data.sequences import load_sequence
    from bcl.models import make_model
    from bcl.paper import method_label, method_name
    from bcl.table.plan import CellSpec, plan_cell
    sequence = load_sequence("DISplitCancer", tmp_path)
    assert (sequence.name, len(sequence), sequence.likelihood, sequence.input_shape) == ("displitcancer", 3, "sigmoid", (30,))
    assert make_model("TABULAR32", 1, (30,)).name == "tabular32"
    assert [method_name(n) for n in ("L2-Anchor", "l2_anchor", "L2ANCHOR")] == ["l2-anchor"] * 3
    assert method_label("L2-ANCHOR") == "L2 anchor"
    spec = CellSpec("DI-Cancer-Tabular", "L2-Anchor", "offline", [0]).checked()
    assert (spec.column, spec.method) == ("di-cancer-tabular", "l2-anchor")
    assert plan_cell("di-cancer-tabular", "P-G-SFSVI", "OFFLINE").sequence == "displitcancer"


def test_unknown_names_say_how_to_register(registries):
    from bcl.data.sequences import sequence_spec
    from bcl.models import make_model
    from bcl.paper import method_name
    from bcl.table.plan import plan_cell
    with pytest.raises(ValueError, match="Unknown task sequence 'nosuch'.*register_sequence"):
        sequence_spec("nosuch")
    with pytest.raises(ValueError, match="Unknown model 'nosuch'.*register_model"):
        make_model("nosuch", 2, (2,))
    with pytest.raises(ValueError, match="Unknown method 'nosuch'.*register_method"):
        method_name("nosuch")
    with pytest.raises(ValueError, match="Unknown column 'nosuch'.*register_column"):
        plan_cell("nosuch", "er", "offline")


def test_duplicate_registrations_are_refused(plugin):
    from bcl.data.sequences import register_sequence
    from bcl.models import register_model
    from bcl.paper import SequenceSetup, register_method
    from bcl.table.plan import register_column
    with pytest.raises(ValueError, match="'displitcancer' is already registered.*replace=True"):
        register_sequence("DISplitCancer", plugin.di_split_cancer, description="again")
    with pytest.raises(ValueError, match="'disinusoid' is a built-in sequence"):
        register_sequence("disinusoid", plugin.di_split_cancer, description="mine")
    with pytest.raises(ValueError, match="'tabular32' is already registered"):
        register_model("Tabular32", lambda: plugin.TabularTail())
    with pytest.raises(ValueError, match="'fcnn16' is a built-in model"):
        register_model("fcnn16", lambda: plugin.TabularTail())
    with pytest.raises(ValueError, match="'l2-anchor' is already registered"):
        register_method("L2_Anchor", "again", plugin.l2_anchor)
    with pytest.raises(ValueError, match="names the paper's method 'er'"):
        register_method("ER", "mine", plugin.l2_anchor)
    setup = SequenceSetup("2d", "tabular32", -3.0, 3.0)
    with pytest.raises(ValueError, match="'di-cancer-tabular' is already registered"):
        register_column("DI-Cancer-Tabular", "again", "displitcancer", setup)
    with pytest.raises(ValueError, match=r"is a built-in column \(Table faa"):
        register_column("CI-MNIST-FE", "mine", "displitcancer", setup)
    with pytest.raises(ValueError, match="Unknown model 'mlp'.*register_model"):
        register_column("cancer-mlp", "mine", "displitcancer", setup._replace(model="mlp"))
    with pytest.raises(ValueError, match="Unknown task sequence 'cancer'"):
        register_column("cancer-2", "mine", "cancer", setup)


def test_built_in_names_in_any_letter_case(tmp_path):
    "Built-in sequences and models are found in any letter case too (these were refused before the registry)."
    from bcl.data.sequences import load_sequence
    from bcl.models import make_model
    assert load_sequence("CISplit2DIris", tmp_path).name == "cisplit2diris"
    assert make_model("FCNN16", 2, (2,)).name == "fcnn16"


def test_plugin_reaches_the_workers_of_a_separate_cluster(tmp_path):
    "A `dask worker` started elsewhere, without the plugin on its path, runs a custom cell: the batch ships the plugin."
    plugin_dir = tmp_path / "plugins"
    plugin_dir.mkdir()
    shutil.copy(PLUGIN, plugin_dir / PLUGIN.name)
    elsewhere = tmp_path / "worker-home"
    elsewhere.mkdir()
    scheduler_file = tmp_path / "scheduler.json"
    bin_dir = Path(sys.executable).parent
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"TQDM_DISABLE": "1"}
    common = dict(cwd=elsewhere, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    processes = [subprocess.Popen([str(bin_dir / "dask"), "scheduler", "--scheduler-file", str(scheduler_file),
                                   "--host", "127.0.0.1", "--port", "0", "--no-dashboard"], **common)]
    try:
        deadline = time.time() + 120
        while not scheduler_file.exists() and time.time() < deadline:
            time.sleep(0.2)
        assert scheduler_file.exists(), "the scheduler did not start"
        processes.append(subprocess.Popen([str(bin_dir / "dask"), "worker", "--scheduler-file", str(scheduler_file),
                                           "--nthreads", "1", "--no-dashboard"], **common))
        out = tmp_path / "out"
        done = batch(["--plugins", "cancer_example", "--profile", "offline", "--epochs", "2", "--seeds", "1",
                      "--scheduler", str(scheduler_file), "--out", str(out), "--data-dir", str(tmp_path / "data"),
                      "--cells", "di-cancer-tabular/l2-anchor"], tmp_path, plugin_dir)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        numbers = json.loads((out / "offline" / "di-cancer-tabular" / "l2-anchor" / "numbers.json").read_text())
        assert numbers["parameters"]["plugins"] == ["cancer_example"]
        assert (out / "offline" / "plugins" / PLUGIN.name).read_text() == PLUGIN.read_text()
    finally:
        for process in processes:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            process.wait()


DIGITS = ROOT / "experiments" / "plugins" / "digits_example.py"
AFFECTED = ["er", "l-g-vcl", "l-gm-vcl", "p-g-sfsvi", "l-g-sfsvi", "p-gm-sfsvi", "l-gm-sfsvi"]  # they keep a coreset


def digits_plugins(tmp_path) -> Path:
    "The digits plugin, and one more that registers the same column with the paper's `image` setup (coreset 256)."
    plugin_dir = tmp_path / "plugins"
    plugin_dir.mkdir(exist_ok=True)
    shutil.copy(DIGITS, plugin_dir / DIGITS.name)
    (plugin_dir / "digits_image.py").write_text(
        "import digits_example  # noqa: F401  (the sequence)\n"
        "from bcl.paper import SequenceSetup\n"
        "from bcl.table.plan import register_column\n"
        "register_column('ci-digits-image', 'CI Split Digits, image setup', 'cisplitdigits',\n"
        "                SequenceSetup('image', 'fcnn16', 0.0, 1.0), replace=True)\n")
    return plugin_dir


def test_small_data_columns_with_their_own_setup_run_all_15_methods_in_two_scenarios(tmp_path):
    "The class-incremental column and the same tasks declared task-incremental, 30 cells in one batch."
    from bcl.paper import EXTRA_METHODS, TABLE_METHODS
    plugin_dir = digits_plugins(tmp_path)
    out = tmp_path / "out"
    args = ["--plugins", "digits_example", "--profile", "offline", "--epochs", "1", "--seeds", "1", "--workers", "2",
            "--out", str(out), "--data-dir", str(tmp_path / "data"), "--cells", "ci-digits-fcnn/*", "ti-digits-fcnn/*"]
    done = batch(args, tmp_path, plugin_dir, timeout=1200)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "30 cells: 0 done, 30 to run, 0 data not present, 0 cannot run" in done.stdout, done.stdout
    just_learned = []
    for column, scenario in (("ci-digits-fcnn", "class"), ("ti-digits-fcnn", "task")):
        for method in TABLE_METHODS + tuple(EXTRA_METHODS):  # the paper's 13, FROMP and SFR
            numbers = json.loads((out / "offline" / column / method / "numbers.json").read_text())
            assert (numbers["method"], numbers["scenario"], numbers["paper"]) == (method, scenario, None)
            assert len(numbers["n_train"]) == 5 and 150 <= min(numbers["n_train"]) <= max(numbers["n_train"]) <= 250
            assert all(0 <= a <= 100 for a in numbers["final_average_accuracy"]["per_seed"])
            if method in AFFECTED:  # the setup's coreset, not the paper's 256
                assert numbers["settings"]["method"]["coreset_size"] == 64, numbers["settings"]
            if scenario == "task":  # the task given: a two-way choice, so a task just learned is above 50 %
                matrix = numbers["test_accuracy"][0]  # (T, T) of the one seed: row t after task t
                just_learned += [matrix[t][t] for t in range(5)]
    # over 15 methods x 5 tasks after one epoch of 6 steps: 0.77 on this machine (single tasks down to 0.47); the argmax over every head's probabilities
    # (the task not given) would pick among five heads' classes, about 0.2, and a head mix-up 0.5 or less
    assert np.mean(just_learned) > 0.65, np.round(just_learned, 2).tolist()


def test_the_paper_setup_on_small_data_fails_before_training(tmp_path):
    plugin_dir = digits_plugins(tmp_path)
    out = tmp_path / "out"
    common = ["--plugins", "digits_image", "--profile", "offline", "--seeds", "1", "--workers", "1", "--out", str(out),
              "--data-dir", str(tmp_path / "data")]
    failed = batch(common + ["--cells", *(f"ci-digits-image/{m}" for m in AFFECTED)], tmp_path, plugin_dir)
    assert failed.returncode == 1, failed.stdout[-3000:] + failed.stderr[-3000:]
    assert "7 cells: 0 done, 0 to run, 0 data not present, 7 cannot run" in failed.stdout, failed.stdout
    assert not list(out.rglob("*.ipynb")), "a cell's notebook was started"  # no kernel: imports, data and checks only
    for method in AFFECTED:
        error = json.loads((out / "offline" / "ci-digits-image" / method / "error.json").read_text())
        assert error["type"] == "ValueError" and error["stage"] == "checked before the run"
        assert "coreset_size = 256 exceeds the training points of tasks 1, 2, 3, 4 and 5" in error["message"], error
        assert "change coreset_size of setup 'image', used by column 'ci-digits-image'" in error["message"]
        assert "bcl.paper.register_setup" in error["message"]
        assert not (out / "offline" / "ci-digits-image" / method / "numbers.json").exists()
    listed = batch(common + ["--cells", "ci-digits-image/*", "--dry-run"], tmp_path, plugin_dir)
    assert listed.returncode == 1, listed.stdout[-3000:] + listed.stderr[-3000:]
    assert "15 cells: 0 done, 8 to run, 0 data not present, 7 cannot run" in listed.stdout, listed.stdout
    lines = listed.stdout.splitlines()
    for method in AFFECTED:
        row = next(i for i, line in enumerate(lines) if f"ci-digits-image/{method} " in line)
        assert lines[row].split()[:2] == ["cannot", "run"] and "5 tasks" in lines[row], lines[row]
        assert "- coreset_size = 256 exceeds" in lines[row + 1], lines[row + 1]
    for method in ("joint", "finetuning", "ewc", "si", "p-g-vcl", "p-gm-vcl"):
        assert any(line.split()[:3] == ["would", "run", f"ci-digits-image/{method}"] for line in lines), listed.stdout
    assert not (out / "offline" / "ci-digits-image" / "joint").exists()  # a dry run writes nothing
