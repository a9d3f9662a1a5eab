"""Fault injection: kill a run at random points and resume; corrupt checkpoints, results and caches.

A resumed run must give the numbers of an uninterrupted one exactly (same machine, same process configuration:
the computation is deterministic there), and a damaged file must give a clear error or a recompute, never a crash
later. The runs use a tiny sequence (4 tasks of 2-D blobs) and a linear model, so each takes seconds.

To see that these tests can fail, run them with `BCL_FAULT_BREAK_ATOMIC=1`: the worker then writes its
checkpoints and results in place (`open(path, "wb").write(...)`, no temporary file, no rename), a kill during a
write leaves a truncated file, and `test_kill_during_checkpoint_write` fails.
"""
import io
import json
import os
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]

WORKER = r'''
import json, os, sys
from pathlib import Path
import numpy as np
import jax, jax.numpy as jnp
import bcl.engine.checkpoint, bcl.core, bcl.engine.sequence
if os.environ.get("BCL_FAULT_BREAK_ATOMIC") == "1":  # the deliberately broken writer: in place, not atomic
    def in_place(path, data):
        path = Path(path)
        with open(path, "wb") as file:
            for start in range(0, len(data), 1 << 16):
                file.write(data[start:start + (1 << 16)])
                file.flush()
        return path
    bcl.core.atomic_write_bytes = bcl.engine.checkpoint.atomic_write_bytes = bcl.engine.sequence.atomic_write_bytes = in_place
from bcl.core import Split, Task, TaskSequence, tree_sum
from bcl.models import make_model
from bcl.engine.train import Method, MethodState, Training, nll_sum, predict_probabilities
from bcl.engine.sequence import train_sequence, result_table, save_table

folder = Path(sys.argv[1])
big = int(os.environ.get("BCL_FAULT_MEMORY", "1"))
rng = np.random.default_rng(0)
centres = np.array([[0.0, 0.0], [2.0, 0.0], [0.0, 2.0]])
def split(classes, n):
    ys = rng.choice(classes, n).astype(np.int32)
    return Split((centres[ys] + 0.5 * rng.normal(size=(n, 2))).astype(np.float32), ys)
tasks = tuple(Task(split(c, 24), split(c, 12), split(c, 12), tuple(c)) for c in ([0, 1], [1, 2], [0, 2], [0, 1]))
sequence = TaskSequence("faults", tasks, 3, "softmax", (2,), (np.full(2, -1.0), np.full(2, 3.0)))
model = make_model("linear", 3, (2,))

def init(key, seq):
    return MethodState(model.init(key), jnp.zeros(big, jnp.float32))  # memory: bulk that makes writes last
def loss(params, memory, key, batch, hyper, task):
    nll = nll_sum(model.apply(params, batch.xs), batch.ys, "softmax", batch.mask)
    return nll + 0.5 * tree_sum(jax.tree.map(jnp.square, params)) / task.n_batches, {"nll": nll}
method = Method("faulty", model, "softmax", init, loss, lambda k, s, sp, h, t: s,
                lambda k, p, xs: predict_probabilities(model.apply(p, xs), "softmax"), Training(8, 40),
                settings={"memory": big})
result = train_sequence(method, sequence, {"learning_rate": [0.05, 0.01]}, seeds=(0, 1),
                        checkpoint=folder / "run.npz", progress=False)
save_table(result_table(result), folder / "results")
np.savez(folder / "numbers.npz", losses=result.losses, **{k.replace("/", "_"): v for k, v in result.metrics.items()},
         **{"param_" + str(i): np.asarray(v) for i, v in enumerate(jax.tree.leaves(result.state.params))})
print("done")
'''


def _worker(tmp_path: Path) -> Path:
    path = tmp_path / "worker.py"
    path.write_text(WORKER)
    return path


def _env(**extra) -> dict:
    env = {**os.environ, "PYTHONHASHSEED": "0", "TQDM_DISABLE": "1", **extra}
    return env


def _run(worker: Path, folder: Path, env: dict, kill_after: float | None = None, kill_on_write: bool = False,
         timeout: float = 120) -> str:
    """Run the worker in `folder`; SIGKILL it after `kill_after` s, or as soon as a file of `folder` is being
    (re)written; returns 'killed' or 'done'."""
    folder.mkdir(exist_ok=True)
    process = subprocess.Popen([sys.executable, str(worker), str(folder)], cwd=worker.parent, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    start, sizes = time.monotonic(), {}
    try:
        while process.poll() is None:
            elapsed = time.monotonic() - start
            if elapsed > timeout:
                raise AssertionError("the worker hung")
            if kill_after is not None and elapsed > kill_after:
                process.send_signal(signal.SIGKILL)
                process.wait()
                return "killed"
            if kill_on_write:
                for entry in os.scandir(folder):
                    size = entry.stat().st_size if entry.is_file() else 0
                    writing = entry.name.endswith(".tmp") or size < sizes.get(entry.name, 0)
                    sizes[entry.name] = max(size, sizes.get(entry.name, 0))
                    if writing and entry.name.startswith((".run.npz", "run.npz")):
                        process.send_signal(signal.SIGKILL)
                        process.wait()
                        return "killed"
            time.sleep(0.0002)
    finally:
        if process.poll() is None:
            process.kill()
    out, err = process.communicate()
    assert process.returncode == 0, err.decode()[-3000:]
    return "done"


def _numbers(folder: Path) -> dict:
    with np.load(folder / "numbers.npz") as data:
        numbers = {name: data[name] for name in data.files}
    numbers["table"] = json.loads((folder / "results.json").read_text())
    return numbers


def _assert_identical(a: dict, b: dict):
    assert sorted(a) == sorted(b)
    for name in a:
        if name == "table":
            assert a[name] == b[name]
        else:
            np.testing.assert_array_equal(a[name], b[name], err_msg=name)  # tolerance 0


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    "An uninterrupted run and its duration."
    tmp = tmp_path_factory.mktemp("faults")
    worker = _worker(tmp)
    start = time.monotonic()
    assert _run(worker, tmp / "reference", _env(BCL_FAULT_MEMORY=str(2_000_000))) == "done"
    return worker, _numbers(tmp / "reference"), time.monotonic() - start


def test_kill_at_random_times_then_resume(reference, tmp_path):
    "SIGKILL at random moments (start-up, compiling, inside a task, writing); resuming gives identical numbers."
    worker, expected, duration = reference
    rng = np.random.default_rng(int(os.environ.get("BCL_FAULT_SEED", "0")))
    env = _env(BCL_FAULT_MEMORY=str(2_000_000))
    folder = tmp_path / "run"
    kills = 0
    for trial in range(4):  # kill, then kill the resumed run again, ...; a run that ends first is started afresh
        outcome = _run(worker, folder, env, kill_after=float(rng.uniform(0.2, 0.9) * duration))
        kills += outcome == "killed"
        if outcome == "done" and kills == 0:
            for path in folder.iterdir():
                path.unlink()
        elif outcome == "done" or kills == 2:
            break
    assert kills >= 1
    _run(worker, folder, env)  # resume to the end (or read the finished checkpoint back)
    _assert_identical(_numbers(folder), expected)


def test_kill_during_checkpoint_write(reference, tmp_path):
    "SIGKILL while a checkpoint is being written (a temporary file appears, or the file shrinks): resume is exact."
    worker, expected, _ = reference
    env = _env(BCL_FAULT_MEMORY=str(2_000_000))
    folder = tmp_path / "run"
    outcomes = [_run(worker, folder, env, kill_on_write=True) for _ in range(2)]
    assert "killed" in outcomes, outcomes
    if (folder / "run.npz").exists():  # whatever the kill left must load (or the test fails in the resume below)
        with np.load(folder / "run.npz") as data:
            assert "fingerprint" in data.files
    _run(worker, folder, env)
    _assert_identical(_numbers(folder), expected)


# --- damaged files, in process -------------------------------------------------------------------------------

def _tiny():
    import jax
    import jax.numpy as jnp
    from bcl.core import Split, Task, TaskSequence, tree_sum
    from bcl.models import make_model
    from bcl.engine.train import Method, MethodState, Training, nll_sum, predict_probabilities
    rng = np.random.default_rng(1)
    def split(n):
        ys = rng.integers(0, 2, n).astype(np.int32)
        return Split((ys[:, None] + 0.3 * rng.normal(size=(n, 2))).astype(np.float32), ys)
    sequence = TaskSequence("tiny", (Task(split(16), split(8), split(8), (0, 1)),) * 2, 2, "softmax", (2,),
                            (np.zeros(2), np.ones(2)))
    model = make_model("linear", 2, (2,))
    method = Method("tiny", model, "softmax", lambda k, s: MethodState(model.init(k), ()),
                    lambda p, m, k, b, h, t: (nll_sum(model.apply(p, b.xs), b.ys, "softmax", b.mask)
                                              + 0.5 * tree_sum(jax.tree.map(jnp.square, p)), {}),
                    lambda k, s, sp, h, t: s, lambda k, p, xs: predict_probabilities(model.apply(p, xs), "softmax"),
                    Training(8, 3), settings={"sample_size": 10})
    return method, sequence


@pytest.mark.parametrize("damage", ["truncated", "empty", "garbage", "flipped"])
def test_damaged_checkpoint_is_refused_clearly(tmp_path, damage):
    from bcl.engine.sequence import TrainOptions, train_sequence
    method, sequence = _tiny()
    path = tmp_path / "run.npz"
    first = train_sequence(method, sequence, {"learning_rate": 0.1}, checkpoint=path, progress=False)
    good = path.read_bytes()
    damaged = {"truncated": good[: len(good) * 2 // 3], "empty": b"", "garbage": os.urandom(len(good)),
               "flipped": good[:40] + bytes(b ^ 0xFF for b in good[40:200]) + good[200:]}[damage]
    path.write_bytes(damaged)
    with pytest.raises(ValueError, match="restart=True") as error:
        train_sequence(method, sequence, {"learning_rate": 0.1}, checkpoint=path, progress=False)
    assert str(path) in str(error.value)
    again = train_sequence(method, sequence, {"learning_rate": 0.1}, checkpoint=path, progress=False,
                             options=TrainOptions(restart=True))
    np.testing.assert_array_equal(again.metrics["test/accuracy"], first.metrics["test/accuracy"])


def test_stale_checkpoint_names_the_change(tmp_path):
    from bcl.engine.sequence import train_sequence
    method, sequence = _tiny()
    path = tmp_path / "run.npz"
    train_sequence(method, sequence, {"learning_rate": 0.1}, checkpoint=path, progress=False)
    with pytest.raises(ValueError, match="method settings changed: sample_size 10 → 20"):
        train_sequence(method._replace(settings={"sample_size": 20}), sequence, {"learning_rate": 0.1},
                       checkpoint=path, progress=False)


def test_corrupt_results_json_of_a_table_cell(tmp_path):
    from bcl.table.cell import read_cell
    (tmp_path / "numbers.json").write_text('{"column": "x", "method"')
    numbers, why = read_cell(tmp_path)
    assert numbers is None and "unreadable numbers.json" in why


def test_corrupt_results_json_of_a_visualisation(tmp_path):
    from bcl.serialise import read_numbers
    (tmp_path / "numbers.json").write_text('{"method": ')
    with pytest.raises(ValueError, match="numbers.json"):
        read_numbers(tmp_path)


def test_corrupt_data_cache_is_rebuilt(tmp_path):
    from bcl.data.sequences import load_sequence
    first = load_sequence("cisplit2diris", tmp_path)
    folder = tmp_path / "sequences" / "cisplit2diris"
    target = folder / "train_1_xs.npy"
    data = bytearray(target.read_bytes())
    data[-4:] = b"\xff\xff\xff\xff"
    target.write_bytes(bytes(data))
    with pytest.warns(UserWarning, match="does not match its SHA-256"):
        again = load_sequence("cisplit2diris", tmp_path)
    np.testing.assert_array_equal(again.tasks[0].train.xs, first.tasks[0].train.xs)
    (folder / "manifest.json").write_text("{ not json")
    rebuilt = load_sequence("cisplit2diris", tmp_path)  # an unreadable manifest: rebuilt (silently, as if absent)
    np.testing.assert_array_equal(rebuilt.tasks[1].test.xs, first.tasks[1].test.xs)
    target.write_bytes(b"")  # a truncated array file
    with pytest.warns(UserWarning, match="does not match"):
        np.testing.assert_array_equal(load_sequence("cisplit2diris", tmp_path).tasks[0].train.xs,
                                      first.tasks[0].train.xs)


def test_corrupt_feature_cache_is_rebuilt(tmp_path):
    from bcl.extractor.features import feature_sequence, pretraining_settings
    quick = pretraining_settings("fashionmnist", epochs=1, max_examples=64)
    try:
        first = feature_sequence("cisplitmnist5k", quick, cache_dir=tmp_path)
    except FileNotFoundError as error:
        pytest.skip(f"Fashion-MNIST or MNIST-5k not available: {error}")
    folder = next((tmp_path / "sequences").iterdir())
    target = folder / "test_2_xs.npy"
    target.write_bytes(target.read_bytes()[:100])  # truncated
    with pytest.warns(UserWarning, match="Rebuilding the features"):
        again = feature_sequence("cisplitmnist5k", quick, cache_dir=tmp_path)
    np.testing.assert_array_equal(again.tasks[1].test.xs, first.tasks[1].test.xs)
    # a corrupt extractor: the features above stay valid (their manifest records the extractor's digest); loading
    # the extractor itself notices and pre-trains again
    from bcl.extractor.features import load_extractor
    (tmp_path / "extractors" / "fashionmnist" / "params.npz").write_bytes(b"garbage")
    with pytest.warns(UserWarning, match="Rebuilding"):
        model, params, manifest = load_extractor(quick, cache_dir=tmp_path)
    assert manifest["files"]["params.npz"]
