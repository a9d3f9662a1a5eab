"""Write a bcl task sequence as the authors' prepared files, so their unmodified code trains on bcl's exact arrays.

Usage (with bcl's environment; the authors' code then runs with theirs, see tests/parity/README.md):
  .venv/bin/python tests/parity/authors_prepped.py cisplitmnist5k AUTHORS_CLONE --as cisplitmnist

The authors' experiments name their sequence (`[task_sequence] name` in `experiments/<experiment>.toml`) and read it
from `data/prepped/<name>/` of their clone: `{training,validation,testing}_{t}_{xs,ys}.npy` for t = 1..T (xs float32,
ys uint8) and `metadata.toml` (`classes`, `counts` per split and task, `input_shape`, `length`), as their
`bcl/dataprep/__main__.py` writes them at b838074. `--as` writes bcl's sequence under the name the authors'
experiment reads, e.g. MNIST-5k (the 5,000 digits this machine has offline) under `cisplitmnist`, so that
`svi_cisplitmnist_fcnn` trains on MNIST-5k. A file `BCL_SOURCE` in the folder says which bcl sequence it holds, and
the script refuses to overwrite a folder the authors' own data preparation wrote (no `BCL_SOURCE`).

With `--features PRETRAINING` (e.g. `fashionmnist`, the offline extractor of Table faa (a)), the folder holds bcl's
frozen features of the sequence instead of its images (`bcl.extractor.features.feature_sequence`, pre-training the
extractor if it is not cached): run the authors' `svi_*_fe` experiment on it with `authors_seeds.py
--features-prepared`, so that their code trains its linear head on exactly the features bcl's cells train on.

With `--repeat K` each task's training split is written K times over (validation and testing once): the primary
regime of Table faa (`steps-matched`, `experiments/protocol.md`) for their unmodified code. Their trainers divide every
prior, KL and penalty term by the task's number of minibatches, ceil(N_t / B), and run `n_epochs` passes over the
training split; on MNIST-5k (3,200 training points, the paper's 48,000) K = 15 makes both what they are in the paper:
n_epochs × ceil(15 N_t / B) optimiser steps per task and a prior term weighing per data point what it weighs on the
paper's data, as bcl's `steps-matched` cells do with 15 × the epochs and `Training.data_scale` = 15 (the two differ
by the rounding of ceil, under 1 % of the steps where N_t is not a multiple of B). What differs is only the order of
the minibatches: their shuffle draws from the K copies, so a minibatch may hold a point twice. EWC's Fisher and the
evaluation average over the training points and are unchanged by the copies.

Labels: class-incremental sequences keep the global class (0..9), domain-incremental ones the class within the task
(the authors' `displitmnist` takes the digit mod 2; bcl's `displitmnist5k` already stores 0/1), as both codes use.
"""
from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path

import numpy as np

SPLITS = {"training": "train", "validation": "validation", "testing": "test"}  # the authors' name: bcl's field


def prepped_arrays(sequence, repeat: int = 1):
    """{(authors' split, t from 1): (xs float32, ys uint8)} of a bcl `TaskSequence`; each training split `repeat`
    times over (the copies one after another), validation and testing once."""
    if not (isinstance(repeat, int) and repeat >= 1):
        raise ValueError(f"repeat must be a positive integer, got {repeat!r}")

    def arrays(split, field, task):
        xs = np.asarray(getattr(task, field).xs, np.float32)
        ys = np.asarray(getattr(task, field).ys).astype(np.uint8)
        k = repeat if split == "training" else 1
        return np.concatenate([xs] * k), np.concatenate([ys] * k)
    return {(split, t + 1): arrays(split, field, task)
            for t, task in enumerate(sequence.tasks) for split, field in SPLITS.items()}


def metadata(sequence, arrays) -> dict:
    "The authors' `metadata.toml` fields for `sequence`."
    n_classes = len(sequence.class_names)
    return {"classes": list(sequence.class_names),
            "counts": {split: [np.bincount(arrays[split, t + 1][1], minlength=n_classes).tolist()
                               for t in range(len(sequence.tasks))] for split in SPLITS},
            "input_shape": list(sequence.input_shape), "length": len(sequence.tasks)}


def toml_text(fields: dict) -> str:
    "TOML for `metadata`'s fields (strings, integers, lists of them, one level of tables); bcl has no TOML writer."
    import json

    def value(v):
        return json.dumps(v)  # JSON strings, integers and lists of them are valid TOML

    top = [f"{k} = {value(v)}" for k, v in fields.items() if not isinstance(v, dict)]
    tables = [f"\n[{k}]\n" + "\n".join(f"{kk} = {value(vv)}" for kk, vv in v.items())
              for k, v in fields.items() if isinstance(v, dict)]
    return "\n".join(top) + "\n" + "\n".join(tables) + "\n"


def digest(arrays) -> str:
    "SHA-256 over every array, in split and task order: the same number on both sides means the same data."
    h = hashlib.sha256()
    for key in sorted(arrays):
        for a in arrays[key]:
            h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()


def write_prepped(sequence, folder: Path, extractor_sha256: str | None = None, repeat: int = 1) -> str:
    """Write `sequence` into `folder` in the authors' format; returns the arrays' digest (of the arrays as written,
    copies included). `extractor_sha256`: the digest of the extractor's parameters when the arrays are its features;
    `repeat`: copies of each training split (`BCL_SOURCE` records both)."""
    folder = Path(folder)
    if folder.exists() and any(folder.iterdir()) and not (folder / "BCL_SOURCE").is_file():
        raise SystemExit(f"authors_prepped.py: {folder} holds the authors' own prepared data (no BCL_SOURCE file); "
                         "use another clone or remove it first")
    folder.mkdir(parents=True, exist_ok=True)
    arrays = prepped_arrays(sequence, repeat)
    for (split, t), (xs, ys) in arrays.items():
        np.save(folder / f"{split}_{t}_xs.npy", xs)
        np.save(folder / f"{split}_{t}_ys.npy", ys)
    (folder / "metadata.toml").write_text(toml_text(metadata(sequence, arrays)))
    sha = digest(arrays)
    extractor = "" if extractor_sha256 is None else f"extractor {extractor_sha256}\n"
    copies = "" if repeat == 1 else f"repeat {repeat}\n"
    (folder / "BCL_SOURCE").write_text(f"bcl sequence {sequence.name}\nsha256 {sha}\n{extractor}{copies}")
    return sha


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("sequence", help="a bcl sequence name (bcl.data.sequences.load_sequence)")
    parser.add_argument("authors_repo", type=Path, help="a clone of github.com/blackblitz/bcl at b838074")
    parser.add_argument("--as", dest="name", help="the sequence name the authors' experiment reads (default: the same)")
    parser.add_argument("--features", metavar="PRETRAINING",
                        help="write bcl's frozen features of the sequence from the extractor pre-trained on PRETRAINING "
                             "(e.g. fashionmnist) instead of its inputs")
    parser.add_argument("--repeat", type=int, default=1, metavar="K",
                        help="write each task's training split K times over: 15 on MNIST-5k is Table faa's primary "
                             "regime (steps-matched) for their code; default 1")
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error(f"--repeat must be a positive integer, got {args.repeat}")
    if not (args.authors_repo / "bcl" / "train" / "__main__.py").is_file():
        parser.error(f"{args.authors_repo} is not a clone of github.com/blackblitz/bcl (no bcl/train/__main__.py)")
    extractor = None
    if args.features:
        from bcl.extractor.extractor_record import extractor_record
        from bcl.extractor.features import feature_sequence
        sequence = feature_sequence(args.sequence, args.features, progress=True)
        extractor = extractor_record(args.features)["params_sha256"]
    else:
        from bcl.data.sequences import load_sequence
        sequence = load_sequence(args.sequence)
    folder = args.authors_repo / "data" / "prepped" / (args.name or args.sequence)
    sha = write_prepped(sequence, folder, extractor, args.repeat)
    copies = "" if args.repeat == 1 else f", each training split {args.repeat} times over"
    print(f"wrote {sequence.name} ({len(sequence.tasks)} tasks{copies}) to {folder}; sha256 {sha[:16]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
