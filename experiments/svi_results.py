"""Final average test accuracy of the eight variational methods with the paper's hyperparameters.

Usage: python experiments/svi_results.py [SEQUENCE ...] [--seeds N] [--methods NAME ...] [--progress]
                                        [--pretraining TASK] [--pretrain-epochs E]
                                        [--component-noise collapsed|weighted-std] [--tables DIR]

A sequence named `NAME_fe` (e.g. `cisplitmnist5k_fe`) is NAME's inputs replaced by the frozen features of a
pre-trained extractor (default pre-training task `fashionmnist`, cached under data/features), learned with a linear
head, the image setup and uniform inducing inputs in [-1, 6] per feature (Appendix A of the paper).

Seeds are a vmap axis (one compiled program per method and task size). Settings: `bcl.paper.sequence_setup`
(setup, model, inducing-point bounds) and `bcl.paper.svi_settings`. Method names in any letter case. Prints a
markdown table (mean ± std over seeds, ×100, with the authors' code's single-seed numbers,
`bcl.paper.AUTHORS_CODE_ACCURACY`) and writes results/svi/<sequence>.json
(summary) plus results/svi/<sequence>_table.{json,csv} (tidy table of every metric); with `--tables DIR`, the summary
also goes to DIR under the committed name (`make svi-tables` regenerates experiments/tables/svi). Methods run again replace their
earlier entries in both files (same seeds required); the other methods' entries are kept, so a sequence can be
completed method by method. Each method checkpoints after every task (results/svi/checkpoints/): a run that was
killed resumes from its last finished task; the checkpoint is deleted once the method's numbers are saved.

`--component-noise collapsed` draws one normal per sample and parameter for the GM methods instead of one per
component and scales it by (Σ_k κ̃_k² σ_k²)^½ (`bcl.vi.mixture.mixture_sample`): given the Gumbel-softmax weights that is
the same Gaussian as the authors' weighted sum of K independent draws, so the samples and the loss have the same law,
5–7.6 times cheaper per step on the 256-256 FCNN. `shared` (scale Σ_k κ̃_k σ_k, the same law only where the
weights are one-hot) is kept to reproduce earlier runs. Such runs are written to
results/svi/<sequence>_<choice>_noise.json (and _table), next to the default runs, and the choice is recorded per
method in the summary.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout without installing

import jax
import numpy as np
import pandas as pd

from bcl.core import atomic_write_json, results_dir
from bcl.extractor.features import pretraining_settings
from bcl.vi.mixture import COMPONENT_NOISE
from bcl.metrics import final_average_accuracy
from bcl.engine.sequence import result_table, save_table, train_sequence
from bcl.paper import AUTHORS_CODE_ACCURACY, SVI_METHODS, Family, method_info, method_names, sequence_setup, svi_settings
from bcl.factory import build

from common import experiment_sequence, pretraining_record, print_accuracy_table, result_record, seed_summary


def _merge_previous(path: Path, seeds: list[int], summary: dict, table: pd.DataFrame) -> tuple[dict, pd.DataFrame]:
    "Keep the entries of methods not run now from an earlier run with the same seeds."
    json_path, table_path = path.with_suffix(".json"), path.parent / f"{path.stem}_table.json"
    if not json_path.exists():
        return summary, table
    previous = json.loads(json_path.read_text())
    if previous.get("seeds") != seeds:
        print(f"{json_path}: earlier run used seeds {previous.get('seeds')}, not {seeds}; it is replaced.", flush=True)
        return summary, table
    kept = {m: v for m, v in previous["methods"].items() if m not in summary}
    if table_path.exists() and kept:
        old = pd.read_json(table_path, orient="records")
        table = pd.concat([old[old["method"].isin(list(kept))], table], ignore_index=True)
    return kept | summary, table


def table_name(name: str, n_seeds: int, component_noise: str) -> str:
    "The committed summary's file name under experiments/tables/svi: `NAME[_Nseeds][_NOISE_noise].json` (5 seeds, authors' noise: no suffix)."
    return (name + ("" if n_seeds == 5 else f"_{n_seeds}seeds")
            + ("" if component_noise == "independent" else f"_{component_noise}_noise") + ".json")


def run(name: str, seeds: list[int], methods: list[str], progress: bool, pretraining=None,
        component_noise: str = "independent", tables_dir: Path | None = None) -> dict:
    sequence = experiment_sequence(name, pretraining, progress)
    setup = sequence_setup(name)  # _fe: linear head, image setup, inducing points in [-1, 6]
    cfg = setup._asdict()
    suite = {b.name: (b.method, b.hyper) for b in (build(m, sequence, setup, component_noise=component_noise)
                                                    for m in methods)}  # the method factory
    summary, tables = {}, []
    folder = results_dir() / "svi"
    stem = name if component_noise == "independent" else f"{name}_{component_noise}_noise"

    def save():  # after every method, so an interrupted run keeps the methods it finished
        merged, table = _merge_previous(folder / stem, seeds, summary, pd.concat(tables, ignore_index=True))
        save_table(table, folder / f"{stem}_table")
        record = result_record(sequence=name, seeds=seeds, settings={
            k: list(v) if isinstance(v, tuple) else v for k, v in cfg.items()}, device=jax.devices()[0].platform,
            methods=merged, **pretraining_record(name, pretraining))
        atomic_write_json(folder / f"{stem}.json", record)
        if tables_dir is not None:
            atomic_write_json(tables_dir / table_name(name, len(seeds), component_noise), record)

    for method_name, (method, hyper) in suite.items():
        start = time.perf_counter()
        checkpoint = folder / "checkpoints" / f"{stem}_{method_name}.ckpt"  # per task: a killed run resumes
        result = train_sequence(method, sequence, hyper, seeds, progress=progress, checkpoint=checkpoint)
        test = final_average_accuracy(result.metrics["test/accuracy"])[0] * 100  # one configuration
        summary[method_name] = {**seed_summary(test), "settings": svi_settings(cfg["setup"])[method_name],
                                "component_noise": component_noise if method_info(method_name).family is Family.MIXTURE else None,
                                "wall_s": time.perf_counter() - start, **result.timings}
        tables.append(result_table(result, np.zeros(len(seeds), int)))
        print(f"{name} {method_name}: {test.mean():.2f} ± {summary[method_name]['std']:.2f} "
              f"({summary[method_name]['wall_s']:.1f} s, compile {result.timings['compile_s']:.1f} s)", flush=True)
        save()
        checkpoint.unlink(missing_ok=True)  # the method's numbers are saved; a new run starts it afresh
    return summary


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("sequences", nargs="*", default=["cisplit2diris", "disinusoid"])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--methods", nargs="*", default=list(SVI_METHODS), help="any letter case")
    parser.add_argument("--progress", action="store_true")
    parser.add_argument("--pretraining", default="fashionmnist", help="pre-training task of the _fe sequences")
    parser.add_argument("--pretrain-epochs", type=int, default=None, help="override the preset's 20 epochs")
    parser.add_argument("--component-noise", choices=list(COMPONENT_NOISE), default="independent",
                        help="GM sampling: one normal per component (authors), one per parameter with the same law "
                             "(collapsed), or one scaled by the weighted σ (weighted-std)")
    parser.add_argument("--tables", type=Path, default=None, metavar="DIR",
                        help="also write each summary to DIR/NAME[_Nseeds][_NOISE_noise].json (the committed ones: "
                             "experiments/tables/svi, `make svi-tables`)")
    args = parser.parse_args()
    changes = {} if args.pretrain_epochs is None else {"epochs": args.pretrain_epochs}
    pretraining = pretraining_settings(args.pretraining, **changes)
    seeds = list(range(args.seeds))
    args.methods = method_names(args.methods)
    rows = {name: run(name, seeds, args.methods, args.progress, pretraining, args.component_noise, args.tables)
            for name in args.sequences}
    print_accuracy_table(rows, args.methods, AUTHORS_CODE_ACCURACY, len(seeds))


if __name__ == "__main__":
    main()
