"""All eight variational methods train and predict on every continual-learning sequence of the data layer.

Each sequence is loaded the way a user would load it: the offline ones (Iris, Sinusoid, MNIST-5k, Fashion-MNIST)
from their real sources, the tfds ones (MNIST, CIFAR-10) under `tfds.testing.mock_data`, the ISIC ones (HAM-8,
HAM-6) from a small fake archive written here, and the `_fe` sequences from synthetic features of the extractors'
widths (64 for the MNIST-type CNN, 512 for the ResNet). The sequence is then cut to its first two tasks and a few
points per split, and every variational method is built by `bcl.factory.build` and trained for one epoch with the sequence's own settings
(`bcl.paper.sequence_setup`: model, setup, inducing-point bounds), batches of 4 and the coreset shrunk to fit. The test asserts
finite losses, probabilities that are finite and sum to one, and accuracies in [0, 1].

These compile 8 programs per sequence, so they run only with `BCL_TEST_FLAGS=slow` (`make test-all`). The four
sequences of the 6-layer CNN (CIFAR, HAM) take several minutes each on a 2-core CPU (Split CIFAR-10: 13 min with
other jobs running), with the convolutions computed as patches (`bcl.factory.paper_network`); with `nn.Conv` the first
of them did not finish within 15 minutes.
"""
import os
from pathlib import Path

import numpy as np
import pytest

FLAGS = os.environ.get("BCL_TEST_FLAGS", "").replace(",", " ").split()
pytestmark = pytest.mark.skipif("slow" not in FLAGS, reason="slow: set BCL_TEST_FLAGS=slow (make test-all)")
CONTINUAL = ("cisplit2diris", "disinusoid", "cisplitmnist", "displitmnist", "cisplitmnist5k", "displitmnist5k",
             "cisplitfashionmnist", "displitfashionmnist", "cisplitcifar10", "displitcifar8", "cisplitham8",
             "displitham6", "dipermutedmnist5k")
FEATURES = {"cisplitmnist_fe": 64, "displitmnist_fe": 64, "cisplitcifar10_fe": 512, "displitcifar8_fe": 512,
            "cisplitham8_fe": 512, "displitham6_fe": 512}
POINTS = 12  # per split and task after shrinking


def write_fake_isic(folder: Path, diagnoses, n_per_class: int = 8) -> Path:
    "A metadata.csv and one small JPEG per image, coloured by diagnosis."
    import pandas as pd
    from PIL import Image
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    rows = []
    for k, diagnosis in enumerate(diagnoses):
        for _ in range(n_per_class):
            isic_id = f"ISIC_{len(rows):07d}"
            pixels = np.clip(np.array([30 * k, 200 - 20 * k, 90]) + rng.integers(-9, 10, (20, 24, 3)), 0, 255)
            Image.fromarray(pixels.astype(np.uint8)).save(folder / f"{isic_id}.jpg")
            rows.append({"isic_id": isic_id, "diagnosis": diagnosis})
    pd.DataFrame(rows).to_csv(folder / "metadata.csv", index=False)
    return folder


def real_or_mock_sequence(name: str, tmp_path: Path):
    from bcl.data.sequences import load_sequence
    if name in ("cisplitmnist", "displitmnist", "cisplitcifar10", "displitcifar8"):
        import tensorflow_datasets as tfds
        with tfds.testing.mock_data(num_examples=100):
            return load_sequence(name, tmp_path)
    if name in ("cisplitham8", "displitham6"):
        from bcl.data.isic import HAM6_CLASSES, HAM8_CLASSES
        diagnoses = sorted(set(HAM8_CLASSES) | set(HAM6_CLASSES))
        return load_sequence(name, tmp_path, source_dir=write_fake_isic(tmp_path / "HAM10000", diagnoses))
    return load_sequence(name)


def synthetic_feature_sequence(name: str, width: int):
    "Two tasks of non-negative 'features' with the labels of the target sequence's first two tasks."
    from bcl.core import Split, Task, TaskSequence
    rng = np.random.default_rng(1)
    domain = name.startswith("di")
    n_outputs = 2 if domain else 10
    tasks = []
    for t in range(2):
        classes = (0, 1) if domain else (2 * t, 2 * t + 1)
        def split():
            ys = rng.choice(classes, POINTS).astype(np.int32)
            return Split(rng.uniform(0, 3, (POINTS, width)).astype(np.float32), ys)
        tasks.append(Task(split(), split(), split(), classes))
    return TaskSequence(name, tuple(tasks), n_outputs, "sigmoid" if domain else "softmax", (width,),
                        "domain" if domain else "class")


def shrink(sequence, n_tasks: int = 2, points: int = POINTS):
    "The first `n_tasks` tasks with at most `points` points per split (the first ones of each split)."
    from bcl.core import Split
    def cut(split):
        return Split(np.asarray(split.xs)[:points], np.asarray(split.ys)[:points])
    tasks = tuple(task._replace(train=cut(task.train), validation=cut(task.validation), test=cut(task.test))
                  for task in sequence.tasks[:n_tasks])
    return sequence._replace(tasks=tasks)


@pytest.mark.parametrize("name", CONTINUAL + tuple(FEATURES))
def test_every_method_trains_and_predicts(name, tmp_path):
    from bcl.engine.sequence import train_sequence
    from bcl.factory import build
    from bcl.paper import SVI_METHODS
    sequence = synthetic_feature_sequence(name, FEATURES[name]) if name in FEATURES else \
        shrink(real_or_mock_sequence(name, tmp_path))
    from bcl.factory import settings_of
    from bcl.paper import sequence_setup
    smallest = min(len(task.train.ys) for task in sequence.tasks)
    small = dict(epochs=1, batch_size=4, coreset_batch=4, coreset_size=smallest, n_inducing=8, predict_sample_size=2)
    suite = {}
    for method_name in SVI_METHODS:  # the sequence's paper network and setup, shrunk where the method takes it
        built = build(method_name, sequence, sequence_setup(name),
                      **{key: value for key, value in small.items() if key in settings_of(method_name)})
        suite[method_name] = (built.method, built.hyper)
    for method_name, (method, hyper) in suite.items():
        result = train_sequence(method, sequence, hyper, seeds=(0,), progress=False)
        assert np.isfinite(result.losses).all(), (name, method_name)
        accuracy = result.metrics["test/accuracy"][0, 0]
        assert np.isfinite(accuracy).all() and ((0 <= accuracy) & (accuracy <= 1)).all(), (name, method_name)
        xs = np.asarray(sequence.tasks[0].test.xs)
        import jax
        probs = np.asarray(method.predict(jax.random.key(0), jax.tree.map(lambda x: x[0, 0], result.state.params), xs))
        assert probs.shape == (len(xs), 2 if sequence.likelihood == "sigmoid" else sequence.n_outputs)
        np.testing.assert_allclose(probs.sum(-1), 1.0, rtol=1e-5, err_msg=f"{name} {method_name}")
