"""Why does S-FSVI fall behind VCL on Split MNIST-5k with the Fashion-MNIST extractor (offline profile)?

Usage: python experiments/diagnose_fe_ordering.py [--sequence cisplitmnist5k|displitmnist5k] [--seeds N]
                                                  [--methods NAME ...]

The paper's Table faa (a), CI Split MNIST with an EMNIST-letters extractor, has L-G-SFSVI 91.35 and P-G-SFSVI 88.75
against L-G-VCL 90.27: S-FSVI at least as good as VCL; on DI Split MNIST L-GM-SFSVI 92.20 is the best SVI method
(L-G-VCL 91.96, L-GM-VCL 92.00). Offline (MNIST-5k, Fashion-MNIST extractor) both orders break.
Three candidate causes, each measured here on the cached features of `bcl.extractor.features.feature_sequence`:
1. the inducing box: the paper draws S-FSVI's uniform inducing inputs in [-1, 6] per feature. If the features
   leave that box, the function-space KL constrains the head where no data is. Measured: the feature range, and
   the methods rerun with the box set to the training features' per-feature range;
2. too few optimiser steps: MNIST-5k has 3,200 training images (64 % of 5,000) against the paper's 48,000, so 20
   epochs are 15 times fewer steps, at S-FSVI's 10 times smaller learning rate. Measured: the diagonal of the
   accuracy matrix (is the current task learnt at all?) and the methods rerun with the paper's number of steps;
3. the extractor itself: measured by the ceiling, joint MAP training on the same features, and by whether the
   current task is learnt (diagonal) in every variant.
Writes experiments/tables/diagnosis_{ci,di}_mnist5k_fe.{md,json}.
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run from a checkout without installing

import numpy as np


def feature_range(sequence) -> dict:
    xs = np.concatenate([np.asarray(task.train.xs) for task in sequence.tasks])
    quantiles = np.quantile(xs, [0.0, 0.01, 0.5, 0.99, 1.0])
    return {"min": float(quantiles[0]), "q01": float(quantiles[1]), "median": float(quantiles[2]),
            "q99": float(quantiles[3]), "max": float(quantiles[4]),
            "fraction_outside_box": float(np.mean((xs < -1.0) | (xs > 6.0))),
            "per_feature_low": xs.min(0).tolist(), "per_feature_high": xs.max(0).tolist()}


def run_variant(method_name: str, sequence, seeds, **overrides) -> dict:
    from bcl.factory import build
    from bcl.paper import FEATURE_SETUP
    from bcl.metrics import final_average_accuracy
    from bcl.engine.sequence import select_by_validation, train_sequence
    if method_name == "joint":  # joint training takes only the epochs of a variant
        overrides = {k: v for k, v in overrides.items() if k == "epochs"}
    built = build(method_name, sequence, FEATURE_SETUP, **overrides)
    method, hyper = built.method, built.hyper
    start = time.perf_counter()
    result = train_sequence(method, sequence, hyper, seeds, progress=False)
    chosen = select_by_validation(result)
    matrix = np.stack([result.metrics["test/accuracy"][g, s] for s, g in enumerate(chosen)])  # (S, T, T)
    final = 100 * final_average_accuracy(matrix)
    return {"final_mean": float(final.mean()), "final_sd": float(final.std(ddof=1)) if len(final) > 1 else 0.0,
            "diagonal_mean": float(100 * np.mean([np.diag(m) for m in matrix])),
            "last_task": float(100 * matrix[:, -1, -1].mean()), "epochs": method.training.epochs,
            "wall_s": time.perf_counter() - start, "per_seed": final.tolist()}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--sequence", type=str.lower, default="cisplitmnist5k",
                        choices=("cisplitmnist5k", "displitmnist5k"))
    parser.add_argument("--methods", nargs="*", help="default: L-G-SFSVI, P-G-SFSVI and L-G-VCL for CI; "
                        "L-GM-SFSVI, L-G-SFSVI, L-G-VCL and L-GM-VCL for DI")
    args = parser.parse_args(argv)
    from bcl.core import atomic_write_bytes, atomic_write_json
    from bcl.extractor.extractor_record import extractor_record
    from bcl.extractor.features import feature_sequence
    from common import extractor_line
    from bcl.paper import METHOD_LABELS, Space, method_info, method_names
    from bcl.provenance import provenance
    from bcl.table.plan import PAPER_TRAIN_POINTS
    ci = args.sequence.startswith("ci")
    default = ["l-g-sfsvi", "p-g-sfsvi", "l-g-vcl"] if ci else ["l-gm-sfsvi", "l-g-sfsvi", "l-g-vcl", "l-gm-vcl"]
    methods = method_names(args.methods or default)
    seeds = list(range(args.seeds))
    paper_sequence = args.sequence.removesuffix("5k")
    sequence = feature_sequence(args.sequence, "fashionmnist")
    ranges = feature_range(sequence)
    extractor = extractor_record("fashionmnist")
    n_train = sum(len(task.train.ys) for task in sequence.tasks)
    step_epochs = math.ceil(20 * PAPER_TRAIN_POINTS[paper_sequence] / n_train)
    low = np.minimum(np.asarray(ranges["per_feature_low"]), np.asarray(ranges["per_feature_high"]) - 1e-3)
    variants = {"paper: 20 epochs, box [-1, 6]": {},
                "box = the training features' range": {"inducing_low": low.tolist(), "inducing_high": ranges["per_feature_high"]},
                f"the paper's optimiser steps ({step_epochs} epochs)": {"epochs": step_epochs}}
    rows = {}
    for variant, overrides in variants.items():
        box = "inducing_low" in overrides
        for method in methods + ([] if box else ["joint"]):
            function_space = method != "joint" and method_info(method).space is Space.FUNCTION
            if box and not function_space:
                continue
            kept = overrides if function_space else {k: v for k, v in overrides.items() if k == "epochs"}
            rows[variant, method] = run_variant(method, sequence, seeds, **kept)
            r = rows[variant, method]
            print(f"{variant:45s} {method:10s} {r['final_mean']:6.2f} ± {r['final_sd']:5.2f}  diagonal "
                  f"{r['diagonal_mean']:6.2f}  ({r['wall_s']:.0f} s)", flush=True)
    lines = [f"# Diagnosis: S-FSVI against VCL on {'CI' if ci else 'DI'} Split MNIST-5k with the Fashion-MNIST "
             "extractor\n",
             f"Seeds {seeds}; `python experiments/diagnose_fe_ordering.py --sequence {args.sequence} --seeds "
             f"{args.seeds}" + ("" if args.methods is None else " --methods " + " ".join(args.methods)) +
             f"`. Training points {n_train} (the paper's MNIST: {PAPER_TRAIN_POINTS[paper_sequence]}).\n",
             extractor_line([extractor]),
             "Feature range over the training features (64 swish features of the extractor): "
             f"min {ranges['min']:.2f}, 1 % {ranges['q01']:.2f}, median {ranges['median']:.2f}, "
             f"99 % {ranges['q99']:.2f}, max {ranges['max']:.2f}; "
             f"{100 * ranges['fraction_outside_box']:.2f} % of the values lie outside the box [-1, 6].\n",
             "| variant | method | final average accuracy (%) | mean diagonal (%) | last task after last (%) | epochs |",
             "|---|---|---|---|---|---|"]
    for (variant, method), r in rows.items():
        lines.append(f"| {variant} | {METHOD_LABELS[method]} | {r['final_mean']:.2f} ± {r['final_sd']:.2f} | "
                     f"{r['diagonal_mean']:.2f} | {r['last_task']:.2f} | {r['epochs']} |")
    tables = ROOT / "experiments" / "tables"
    stem = f"diagnosis_{'ci' if ci else 'di'}_mnist5k_fe"
    atomic_write_bytes(tables / f"{stem}.md", ("\n".join(lines) + "\n").encode())
    atomic_write_json(tables / f"{stem}.json", {"sequence": args.sequence,
        "seeds": seeds, "n_train": n_train, "feature_range": {k: v for k, v in ranges.items()
                                                               if not k.startswith("per_feature")},
        "rows": [{"variant": v, "method": m, **r} for (v, m), r in rows.items()], "extractor": extractor,
        "provenance": provenance()})
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
