"""Time the first preparation and the cached loads of the real offline sequences (JSON lines on stdout).

    python benchmarks/data.py

Each sequence is prepared into a fresh temporary data folder (deleted afterwards), then loaded again from
the cache with checksum verification (the default) and without it. pandas and scikit-learn are imported
before timing, so the first preparation measures reading, splitting, converting and writing only.
"""
import json
import platform
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from anywhere, with or without an install

import pandas  # noqa: F401  (imported before timing)
import sklearn.model_selection  # noqa: F401

from bcl.cache import read_manifest
from bcl.data.sequences import load_sequence, sequence_folder
from bcl.data.sources import FASHION_MNIST_DIR


def seconds(function) -> tuple[float, object]:
    start = time.perf_counter()
    result = function()
    return time.perf_counter() - start, result


def main() -> None:
    names = ["cisplitmnist5k"] + (["cisplitfashionmnist"] if FASHION_MNIST_DIR.exists() else [])
    for name in names:
        with tempfile.TemporaryDirectory() as folder:
            first, sequence = seconds(lambda: load_sequence(name, folder))
            cached, _ = seconds(lambda: load_sequence(name, folder))
            unverified, _ = seconds(lambda: load_sequence(name, folder, verify=False))
            manifest = read_manifest(sequence_folder(name, folder))
            cache_bytes = sum(p.stat().st_size for p in sequence_folder(name, folder).iterdir())
        print(json.dumps({
            "benchmark": "data", "sequence": name, "first_preparation_s": round(first, 3),
            "cached_load_s": round(cached, 3), "cached_load_unverified_s": round(unverified, 3),
            "n_train": sum(manifest["n_examples"]["train"]), "cache_mb": round(cache_bytes / 2**20, 1),
            "machine": platform.machine(), "python": platform.python_version()}))
    if "cisplitfashionmnist" not in names:
        print(json.dumps({"benchmark": "data", "sequence": "cisplitfashionmnist",
                          "skipped": f"{FASHION_MNIST_DIR} absent (make offline-data)"}))


if __name__ == "__main__":
    main()
