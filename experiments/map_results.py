"""Final average test accuracy of the five MAP baselines with the paper's hyperparameters.

Usage: python experiments/map_results.py [SEQUENCE ...] [--seeds N] [--importance-sign {1,-1}]
                                        [--pretraining TASK] [--pretrain-epochs E]

A sequence named `NAME_fe` (e.g. `cisplitmnist5k_fe`) is NAME's inputs replaced by the frozen features of a
pre-trained extractor (`bcl.extractor.features.feature_sequence`, default pre-training task `fashionmnist`, cached under
data/features), learned with a linear head and the paper's image setup (`bcl.paper.sequence_setup`).

Seeds are a vmap axis; EWC's λ and SI's λ × ξ are selected per seed by validation final average accuracy.
Prints a markdown table (mean ± std over seeds, ×100, with the authors' code's single-seed numbers,
`bcl.paper.AUTHORS_CODE_ACCURACY`)
and writes results/map/<sequence>.json (summary) plus results/map/<sequence>_table.{json,csv} (tidy table).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout without installing

import numpy as np

from bcl.core import atomic_write_json, results_dir
from bcl.extractor.features import pretraining_settings
from bcl.factory import build, settings_of
from bcl.paper import AUTHORS_CODE_ACCURACY, MAP_METHODS, map_settings, sequence_setup
from bcl.metrics import final_average_accuracy
from bcl.engine.sequence import hyper_configs, result_table, save_table, select_by_validation, train_sequence
import pandas as pd

from common import experiment_sequence, pretraining_record, print_accuracy_table, result_record, seed_summary

def run(name: str, seeds: list[int], importance_sign: int, progress: bool, pretraining=None) -> dict:
    sequence = experiment_sequence(name, pretraining, progress)
    setup = sequence_setup(name)  # NAME_fe: the linear head on features
    settings = map_settings(setup.setup)
    sign = {"importance_sign": importance_sign}
    suite = {method: build(method, sequence, setup, **(sign if "importance_sign" in settings_of(method) else {}))[1:3]
             for method in MAP_METHODS}
    summary, tables = {}, []
    for method_name, (method, hyper) in suite.items():
        start = time.perf_counter()
        result = train_sequence(method, sequence, hyper, seeds, progress=progress)
        chosen = select_by_validation(result)
        test = final_average_accuracy(result.metrics["test/accuracy"])[chosen, np.arange(len(seeds))] * 100
        configs = hyper_configs(hyper)
        summary[method_name] = {**seed_summary(test), "selected": [configs[g] for g in chosen],
                                "wall_s": time.perf_counter() - start, **result.timings}
        tables.append(result_table(result, chosen))
    folder = results_dir() / "map"
    save_table(pd.concat(tables, ignore_index=True), folder / f"{name}_table")
    record = result_record(sequence=name, seeds=seeds, settings={"model": setup.model, **settings},
                           importance_sign=importance_sign, methods=summary, **pretraining_record(name, pretraining))
    atomic_write_json(folder / f"{name}.json", record)
    return summary

def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("sequences", nargs="*", default=["cisplit2diris", "disinusoid"])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--importance-sign", type=int, default=1, choices=(1, -1))
    parser.add_argument("--progress", action="store_true")
    parser.add_argument("--pretraining", default="fashionmnist", help="pre-training task of the _fe sequences")
    parser.add_argument("--pretrain-epochs", type=int, default=None, help="override the preset's 20 epochs")
    args = parser.parse_args()
    changes = {} if args.pretrain_epochs is None else {"epochs": args.pretrain_epochs}
    pretraining = pretraining_settings(args.pretraining, **changes)
    seeds = list(range(args.seeds))
    rows = {}
    for name in args.sequences:
        rows[name] = run(name, seeds, args.importance_sign, args.progress, pretraining)
    print_accuracy_table(rows, MAP_METHODS, AUTHORS_CODE_ACCURACY, len(seeds))
    for name, summary in rows.items():
        for method in ("ewc", "si"):
            print(f"{name} {method} selected per seed: {summary[method]['selected']}")

if __name__ == "__main__":
    main()
