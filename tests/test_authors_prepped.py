"""tests/parity/authors_prepped.py: bcl's arrays in the authors' prepared format, read back as their code reads them."""
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "parity"))

import authors_prepped  # noqa: E402
from bcl.core import Split, Task, TaskSequence  # noqa: E402


def small_sequence():
    rng = np.random.default_rng(0)

    def split(n, classes):
        return Split(rng.uniform(size=(n, 4, 4, 1)).astype(np.float32), rng.choice(classes, n).astype(np.int32))

    tasks = tuple(Task(split(6, c), split(3, c), split(4, c), c) for c in ((0, 1), (2, 3)))
    return TaskSequence("tiny", tasks, 4, "softmax", (4, 4, 1), (0.0, 1.0), ("a", "b", "c", "d"), "class")


def test_written_files_read_back_as_the_authors_read_them(tmp_path):
    sequence = small_sequence()
    sha = authors_prepped.write_prepped(sequence, tmp_path / "tiny")
    meta = tomllib.loads((tmp_path / "tiny" / "metadata.toml").read_text())
    assert meta["length"] == 2 and meta["input_shape"] == [4, 4, 1] and meta["classes"] == ["a", "b", "c", "d"]
    for t, task in enumerate(sequence.tasks, start=1):
        for split, field in authors_prepped.SPLITS.items():
            # the authors' bcl/dataops/io.py read_task: memory-mapped .npy files
            xs = np.lib.format.open_memmap(tmp_path / "tiny" / f"{split}_{t}_xs.npy", mode="r")
            ys = np.lib.format.open_memmap(tmp_path / "tiny" / f"{split}_{t}_ys.npy", mode="r")
            assert xs.dtype == np.float32 and ys.dtype == np.uint8
            np.testing.assert_array_equal(xs, getattr(task, field).xs)
            np.testing.assert_array_equal(ys, getattr(task, field).ys)
            assert meta["counts"][split][t - 1] == np.bincount(getattr(task, field).ys, minlength=4).tolist()
    assert (tmp_path / "tiny" / "BCL_SOURCE").read_text().split() == ["bcl", "sequence", "tiny", "sha256", sha]
    # the same arrays give the same digest; other labels another
    other = sequence._replace(tasks=(sequence.tasks[1], sequence.tasks[0]))
    assert authors_prepped.digest(authors_prepped.prepped_arrays(sequence)) == sha
    assert authors_prepped.digest(authors_prepped.prepped_arrays(other)) != sha


def test_refuses_to_overwrite_the_authors_own_preparation(tmp_path):
    theirs = tmp_path / "cisplitmnist"
    theirs.mkdir()
    (theirs / "metadata.toml").write_text("length = 5\n")
    with pytest.raises(SystemExit, match="authors' own prepared data"):
        authors_prepped.write_prepped(small_sequence(), theirs)
    authors_prepped.write_prepped(small_sequence(), tmp_path / "ours")
    authors_prepped.write_prepped(small_sequence(), tmp_path / "ours")  # its own output: rewritten


def test_features_prepared_leaves_only_the_extractor_out():
    import authors_seeds
    block = {"hparams": {"train": {"seed": 1337, "n_epochs": 20}, "predict": {"seed": 1337}}}
    spec = {"task_sequence": {"name": "cisplitmnist"}, "feature_extractor": {"name": "FECNN4"},
            "model": {"name": "FCNN1", "spec": {"in_shape": [64]}},
            "trainers": [{"id": "a", "name": "A", **block}, {"id": "b", "name": "B", **block}]}
    copy = authors_seeds.seed_experiment(spec, ["b"], 3, features_prepared=True)
    assert "feature_extractor" not in copy and copy["model"] == spec["model"]
    assert [t["id"] for t in copy["trainers"]] == ["b"]
    assert copy["trainers"][0]["hparams"] == {"train": {"seed": 3, "n_epochs": 20}, "predict": {"seed": 3}}
    assert authors_seeds.seed_experiment(spec, ["b"], 3)["feature_extractor"] == {"name": "FECNN4"}
    without = {k: v for k, v in spec.items() if k != "feature_extractor"}
    with pytest.raises(SystemExit):  # nothing to leave out: not an *_fe experiment
        authors_seeds.seed_experiment(without, ["b"], 3, features_prepared=True)


def test_features_prepared_refuses_a_folder_that_does_not_hold_the_features(tmp_path):
    import authors_seeds
    spec = {"model": {"spec": {"in_shape": [64]}}}
    assert "no bcl preparation" in authors_seeds.features_problem(spec, tmp_path / "cisplitmnist")
    authors_prepped.write_prepped(small_sequence(), tmp_path / "cisplitmnist")  # images of shape (4, 4, 1)
    assert "shape [4, 4, 1]" in authors_seeds.features_problem(spec, tmp_path / "cisplitmnist")
    assert authors_seeds.features_problem({"model": {"spec": {"in_shape": [4, 4, 1]}}}, tmp_path / "cisplitmnist") is None


def test_a_run_on_another_extractors_features_is_not_taken_for_done(tmp_path):
    import json
    import authors_seeds
    sha = authors_prepped.write_prepped(small_sequence(), tmp_path / "pixels")
    features = authors_prepped.write_prepped(small_sequence(), tmp_path / "features", extractor_sha256="e" * 64)
    pixels, fe = (authors_seeds.read_source(tmp_path / name / "BCL_SOURCE") for name in ("pixels", "features"))
    assert pixels == {"sequence": "tiny", "sha256": sha} and fe == {"sequence": "tiny", "sha256": features,
                                                                     "extractor": "e" * 64}
    assert authors_seeds.read_source(tmp_path / "theirs" / "BCL_SOURCE") == {}  # the authors' own preparation
    out = tmp_path / "runs.jsonl"
    old = {"experiment": "x", "trainer": "t", "seed": 0, "accuracy": [[1.0]]}  # written before runs named their data
    out.write_text(json.dumps(old) + "\n" + json.dumps(old | {"seed": 1, "data_sha256": "f" * 64}) + "\n")
    done = authors_seeds._done(out)
    assert authors_seeds.ran_on(done, ("x", "t", 0), pixels)  # pixels cannot change: the old run counts
    assert not authors_seeds.ran_on(done, ("x", "t", 0), fe)  # features can: it reruns
    assert authors_seeds.ran_on(done, ("x", "t", 1), {"sha256": "f" * 64, "extractor": "e" * 64})
    assert not authors_seeds.ran_on(done, ("x", "t", 1), fe)  # the same seed on other features


def test_repeat_copies_only_the_training_split(tmp_path):
    """--repeat K (the primary regime for their code): each training split K times over, validation and testing once;
    BCL_SOURCE records K and the digest is of the arrays as written."""
    sequence = small_sequence()
    sha = authors_prepped.write_prepped(sequence, tmp_path / "tiny", repeat=3)
    for t, task in enumerate(sequence.tasks, start=1):
        xs = np.load(tmp_path / "tiny" / f"training_{t}_xs.npy")
        np.testing.assert_array_equal(xs, np.concatenate([task.train.xs] * 3))
        np.testing.assert_array_equal(np.load(tmp_path / "tiny" / f"testing_{t}_ys.npy"), task.test.ys)
    assert "repeat 3" in (tmp_path / "tiny" / "BCL_SOURCE").read_text()
    assert sha != authors_prepped.digest(authors_prepped.prepped_arrays(sequence))
    import authors_seeds
    assert authors_seeds.read_source(tmp_path / "tiny" / "BCL_SOURCE")["repeat"] == "3"
    with pytest.raises(ValueError, match="positive integer"):
        authors_prepped.prepped_arrays(sequence, 0)
