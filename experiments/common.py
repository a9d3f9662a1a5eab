"""Shared by the result scripts: loading a sequence by name (a `_fe` suffix means frozen pre-trained features),
summarising per-seed accuracies, and printing the accuracy table."""
from __future__ import annotations

import numpy as np

from bcl.data.sequences import load_sequence
from bcl.extractor.features import feature_sequence
from bcl.provenance import provenance


def experiment_sequence(name: str, pretraining=None, progress: bool = False):
    "The sequence `name`; `NAME_fe` is NAME with its inputs replaced by the features of the `pretraining` extractor."
    if name.endswith("_fe"):
        if pretraining is None:
            raise ValueError(f"{name!r} needs a pre-training task (bcl.extractor.features.pretraining_settings(...)).")
        return feature_sequence(name[:-3], pretraining, progress=progress)
    return load_sequence(name)


def pretraining_record(name: str, pretraining) -> dict:
    "For a `_fe` sequence, the pre-training settings and the extractor's summary from its manifest; else {}."
    if not name.endswith("_fe"):
        return {}
    from bcl.cache import read_manifest
    from bcl.extractor.features import features_dir
    extractor = read_manifest(features_dir() / "extractors" / pretraining.task)
    # the fields of an extractor record (nbs/extractor/43_extractor_record.ipynb), from the manifest read here, so that
    # the tables without features do not depend on that module (bcl.staleness follows imports)
    record = {"task": pretraining.task, "params_sha256": extractor["files"]["params.npz"],
              "test_accuracy": extractor["pretraining"].get("test_accuracy"), "created": extractor.get("created")}
    return {"pretraining": {"settings": pretraining._asdict(), "summary": extractor["pretraining"]}, "extractor": record}


def extractor_line(extractors) -> str:
    """A sentence naming the extractor(s) a diagnosis ran on: `extractors` are extractor records (nbs/extractor/43_extractor_record.ipynb)
    (None: not recorded). Two or more distinct ones, or a missing one, are said outright: those numbers mix extractors."""
    distinct = {None if e is None else e["params_sha256"]: e for e in extractors}
    def name(e):
        if e is None:
            return "not recorded"
        accuracy = "" if e.get("test_accuracy") is None else f", test accuracy {100 * e['test_accuracy']:.2f} %"
        return f"{e['task']}, parameters' SHA-256 `{e['params_sha256'][:12]}`{accuracy}"
    if len(distinct) == 1:
        return f"Extractor: {name(next(iter(distinct.values())))}.\n"
    return ("**These numbers mix extractors:** " + "; ".join(name(e) for e in distinct.values()) + ".\n")


def result_record(**fields) -> dict:
    "A results JSON record: the given fields plus the provenance of this run (versions, device, commit)."
    return {**fields, "provenance": provenance()}


def seed_summary(test_accuracy: np.ndarray) -> dict:
    "Mean, sample standard deviation and per-seed values of final average accuracies (already ×100)."
    test_accuracy = np.asarray(test_accuracy, float)
    std = float(test_accuracy.std(ddof=1)) if len(test_accuracy) > 1 else 0.0
    return {"mean": float(test_accuracy.mean()), "std": std, "per_seed": test_accuracy.tolist()}


def print_accuracy_table(rows: dict, methods, authors: dict, n_seeds: int) -> None:
    "Markdown table: one row per method, for every sequence our mean ± std and the authors' single-seed number."
    print(f"\nFinal average test accuracy (%), mean ± std over {n_seeds} seeds (authors' code at b838074: seed 1337)\n")
    print("| method | " + " | ".join(f"{n} (ours) | {n} (authors)" for n in rows) + " |")
    print("|---|" + "---|---|" * len(rows))
    for method in methods:
        cells = []
        for name, summary in rows.items():
            s = summary[method]
            published = authors.get(name, {}).get(method)  # measured for the 2-D sequences only
            cells += [f"{s['mean']:.2f} ± {s['std']:.2f}", "–" if published is None else f"{published:.2f}"]
        print(f"| {method} | " + " | ".join(cells) + " |")
    for name, summary in rows.items():
        print(f"{name} wall time per method (s): " + ", ".join(f"{m} {s['wall_s']:.1f}" for m, s in summary.items()))
