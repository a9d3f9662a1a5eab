"""Do bcl and the authors' code spread their seeds alike on one cell? Both codes' seeds on the same arrays, side by side.

Usage: python experiments/diagnose_seed_spread.py BATCH --cell ci-mnist-fe/si [--authors JSONL] [--ledger LEDGER.json]
                                                  [--out STEM]

An `authors-code` explanation (`bcl.table.verdict.AuthorsCode`) needs the authors' code to differ from the paper on
its own seeds. Where their seeds spread wider than ours, the paper's number can be a plausible single run of theirs and
not of ours, and the explanation is refused although both codes have the same mean. This diagnosis asks what differs:
the two codes' seeds on the same arrays under the same regime, their means and spreads, and, for a grid-searched
method, which grid point each seed's validation selected and what that seed reached.

- `BATCH` is a `run_table.py` folder (`--schedule steps-matched`) holding the cell on bcl's seeds (e.g. 0-19). It is a
  diagnosis, not a protocol stage: the verdict keeps the stages' seeds of the committed ledger (`--ledger`), and the
  seeds of `BATCH` that the ledger also has are checked to reproduce it.
- `--authors` holds the authors' runs (`tests/parity/authors_seeds.py`), read for the cell as
  `experiments/diagnose_authors_data.py` reads them (the cell's data, the regime's `training_repeat`, the ledger's
  extractor). Their trainer ids name their grid points; the SI grid of their `experiments/svi_cisplitmnist_fe.toml` at
  b838074 numbers (λ, ξ) as si1-si5 = λ 1, 10, 100, 1000, 10000 with ξ 0.1, si6-si10 the same with ξ 1, si11-si15
  with ξ 10 (the paper's grid, Experiment Details, "Training"). An authors' trainer is matched to the cell by its id
  less the grid number (`si7` → `si`), so the MAP family's cells (joint, fine-tuning, EWC, SI) are read; the
  variational methods' trainers have other ids (`prior_exact_gmsfsvi`) and are not.

Tests: a two-sided permutation test on the difference of means, and the Brown-Forsythe test (Levene's on deviations
from the median) on the spreads. Nothing is trained here. Writes STEM.{md,json} (default
experiments/tables/diagnosis_seed_spread_<column>_<method>).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run from a checkout without installing

SI_LAMBDAS = (1.0, 10.0, 100.0, 1000.0, 10000.0)
SI_XIS = (0.1, 1.0, 10.0)


def authors_si_point(trainer: str) -> dict:
    "The (λ, ξ) of the authors' SI trainer id `si1`..`si15` (their grid's order, in the module docstring)."
    k = int(trainer.removeprefix("si")) - 1
    if not 0 <= k < len(SI_LAMBDAS) * len(SI_XIS):
        raise ValueError(f"{trainer!r} is not one of the authors' SI trainers si1..si15")
    return {"lam": SI_LAMBDAS[k % 5], "xi": SI_XIS[k // 5]}


def grid_point(selected: dict) -> str:
    "A grid point as one label, e.g. 'λ=1000, ξ=10' (the learning rate, fixed in the paper's grids, left out)."
    return ", ".join(f"{'λ' if k == 'lam' else 'ξ' if k == 'xi' else k}={v:g}" for k, v in selected.items()
                     if k != "learning_rate")


def summary(values, paper: float, rule, substitute: bool) -> dict:
    "Mean, sd, the 95 % interval of the mean, the protocol's prediction interval and outcome, and the seeds ≥ paper."
    from scipy import stats
    from bcl.table.verdict import judge
    x = np.asarray(values, float)
    sd = float(x.std(ddof=1))
    j = judge(float(x.mean()), sd, len(x), paper, rule, substitute)
    t = float(stats.t.ppf(0.975, len(x) - 1)) * sd / np.sqrt(len(x))
    return {"n": len(x), "mean": j.mean, "sd": sd, "mean_interval": [j.mean - t, j.mean + t],
            "prediction_interval": [j.low, j.high], "outcome": str(j.outcome),
            "at_or_above_paper": int((x >= paper).sum())}


def tests(ours, theirs) -> dict:
    "Permutation p of the difference of means (fixed seed: reproducible) and Brown-Forsythe p of the spreads."
    from scipy import stats
    a, b = np.asarray(ours, float), np.asarray(theirs, float)
    means = stats.permutation_test((a, b), lambda x, y, axis: x.mean(axis) - y.mean(axis), vectorized=True,
                                   n_resamples=20_000, random_state=0)
    return {"difference_of_means": float(a.mean() - b.mean()), "means_permutation_p": float(means.pvalue),
            "sd_ratio": float(b.std(ddof=1) / a.std(ddof=1)),
            "spread_brown_forsythe_p": float(stats.levene(a, b, center="median").pvalue)}


def by_grid_point(seeds: list[dict]) -> dict:
    "For each grid point some seed selected: how many seeds chose it and their mean accuracy."
    out = {}
    for s in seeds:
        out.setdefault(s["grid_point"], []).append(s["accuracy"])
    return {k: {"seeds": len(v), "mean": float(np.mean(v))} for k, v in sorted(out.items())}


def bcl_seeds(numbers: dict) -> list[dict]:
    "bcl's seeds of a finished cell: seed, selected grid point and final average accuracy (%)."
    per_seed = numbers["final_average_accuracy"]["per_seed"]
    selected = numbers.get("selected") or [{}] * len(per_seed)
    return [{"seed": s, "grid_point": grid_point(sel), "accuracy": float(a)}
            for s, sel, a in zip(numbers["seeds"], selected, per_seed)]


def authors_seeds(path: Path, cell: dict, experiment: str | None = None) -> list[dict]:
    """The authors' seeds of the cell on its arrays under steps-matched: its sequence's data (`<ci|di>splitmnist5k`,
    `_fe` on an extractor column), the ledger's extractor, and `experiment` where given (an FCNN and a CNN column
    share their data); the newest arrays of those (`diagnose_authors_data.current_runs`)."""
    sys.path.insert(0, str(ROOT / "experiments"))
    from diagnose_authors_data import current_runs, read_runs, regime_of
    column, method = cell["column"], cell["method"]
    data = column[:2] + "splitmnist5k" + ("_fe" if column.endswith("-fe") else "")
    extractor = (cell.get("extractor") or {}).get("params_sha256")
    rows = [r for r in read_runs(path)
            if r.get("data") == data and regime_of(r) == "steps-matched"
            and (extractor is None or r.get("extractor_sha256") == extractor)
            and (experiment is None or r.get("experiment") == experiment)
            and r["trainer"].rstrip("0123456789") == method]
    if not rows:
        raise SystemExit(f"diagnose_seed_spread: no authors' run of {column}/{method} under steps-matched in {path}")
    pick = authors_si_point if method == "si" else (lambda trainer: {"trainer": trainer})
    return sorted(({"seed": r["seed"], "grid_point": grid_point(pick(r["trainer"])), "trainer": r["trainer"],
                    "accuracy": float(r["final_average_accuracy"])} for r in current_runs(rows)),
                  key=lambda s: s["seed"])


def diagnose(numbers: dict, committed: dict, authors: list[dict], rule) -> dict:
    "The JSON of the diagnosis: both codes' seeds, summaries and tests, and the reproduction check of the ledger."
    substitute, paper = bool(committed.get("substitute")), float(committed["paper"])
    ours = bcl_seeds(numbers)
    committed_seeds = dict(zip(committed["seeds"], committed["per_seed"]))
    reproduced = [abs(s["accuracy"] - committed_seeds[s["seed"]]) for s in ours if s["seed"] in committed_seeds]
    acc = lambda seeds: [s["accuracy"] for s in seeds]
    return {"column": committed["column"], "method": committed["method"], "paper": paper, "regime": "steps-matched",
            "verdict_seeds": committed["seeds"], "verdict": committed.get("status"),
            "bcl": {"seeds": ours, "summary": summary(acc(ours), paper, rule, substitute),
                    "by_grid_point": by_grid_point(ours), "bcl_code": numbers["provenance"].get("bcl_code"),
                    "reproduces_ledger": {"seeds": len(reproduced), "largest_difference": max(reproduced, default=None)}},
            "authors": {"seeds": authors, "summary": summary(acc(authors), paper, rule, substitute),
                        "by_grid_point": by_grid_point(authors)},
            "tests": tests(acc(ours), acc(authors)),
            "extractor_sha256": (committed.get("extractor") or {}).get("params_sha256")}


def markdown(d: dict, command: str) -> str:
    from bcl.paper import method_label
    label = method_label(d["method"])
    check = d["bcl"]["reproduces_ledger"]
    reproduced = (f"bcl's seeds here reproduce the ledger's {check['seeds']} shared seeds to within "
                  f"{check['largest_difference']:.2f} points." if check["seeds"] else "No seed is shared with the ledger.")
    lines = [f"# Seed spread of {d['column']} / {label}: bcl and the authors' code on the same arrays", "",
             f"Written by `{command}`. Both codes under the protocol's primary regime (`steps-matched`) on the same "
             f"arrays{' (extractor ' + d['extractor_sha256'][:8] + ')' if d['extractor_sha256'] else ''}. A diagnosis, "
             f"not a stage: the verdict ({d['verdict']}) keeps the ledger's seeds {d['verdict_seeds'][0]}–"
             f"{d['verdict_seeds'][-1]}. {reproduced}", "",
             "| code | seeds | mean ± sd | 95 % interval of the mean | one run (protocol, ± margin) | outcome | "
             f"seeds ≥ paper's {d['paper']:.2f} |", "|---|---|---|---|---|---|---|"]
    for who in ("bcl", "authors"):
        s = d[who]["summary"]
        lines.append(f"| {'bcl' if who == 'bcl' else 'the authors’ code'} | {s['n']} | {s['mean']:.2f} ± {s['sd']:.2f} | "
                     f"[{s['mean_interval'][0]:.2f}, {s['mean_interval'][1]:.2f}] | [{s['prediction_interval'][0]:.2f}, "
                     f"{s['prediction_interval'][1]:.2f}] | {s['outcome']} | {s['at_or_above_paper']} |")
    t = d["tests"]
    lines += ["", f"bcl − authors: {t['difference_of_means']:+.2f} points, permutation p {t['means_permutation_p']:.3f}; "
              f"sd ratio (authors / bcl) {t['sd_ratio']:.2f}, Brown–Forsythe p {t['spread_brown_forsythe_p']:.3f}.", "",
              "## Which grid point each seed's validation selected", "",
              "| grid point | bcl: seeds | bcl: mean | authors: seeds | authors: mean |", "|---|---|---|---|---|"]
    points = sorted(set(d["bcl"]["by_grid_point"]) | set(d["authors"]["by_grid_point"]))
    for p in points:
        cells = []
        for who in ("bcl", "authors"):
            g = d[who]["by_grid_point"].get(p)
            cells += [str(g["seeds"]), f"{g['mean']:.2f}"] if g else ["0", "–"]
        lines.append(f"| {p} | " + " | ".join(cells) + " |")
    lines += ["", "## Every seed", "", "| seed | bcl: grid point | bcl | authors: grid point | authors |",
              "|---|---|---|---|---|"]
    theirs = {s["seed"]: s for s in d["authors"]["seeds"]}
    for s in d["bcl"]["seeds"]:
        a = theirs.get(s["seed"])
        theirs_cells = f"{a['grid_point']} | {a['accuracy']:.2f}" if a else "– | –"
        lines.append(f"| {s['seed']} | {s['grid_point']} | {s['accuracy']:.2f} | {theirs_cells} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    from bcl.provenance import provenance
    from bcl.table.verdict import load_protocol
    parser = argparse.ArgumentParser(description="bcl's and the authors' seeds of one cell on the same arrays.")
    parser.add_argument("batch", help="run_table.py --out folder holding the cell under steps-matched")
    parser.add_argument("--cell", required=True, help="COLUMN/METHOD, e.g. ci-mnist-fe/si")
    parser.add_argument("--authors", default=str(ROOT / "benchmarks/results/authors_mnist5k_steps_matched.jsonl"))
    parser.add_argument("--experiment", help="the authors' experiment of the cell, where columns share data")
    parser.add_argument("--ledger", default=str(ROOT / "experiments/tables/faa_offline-steps-matched.json"))
    parser.add_argument("--out", help="output stem (default experiments/tables/diagnosis_seed_spread_<column>_<method>)")
    args = parser.parse_args(argv)
    column, method = args.cell.split("/")
    path = Path(args.batch) / "offline-steps-matched" / column / method / "numbers.json"
    if not path.is_file():
        parser.error(f"{path} does not exist: run the cell first (run_table.py faa --schedule steps-matched --cells "
                     f"'{args.cell}' --out {args.batch})")
    committed = json.loads(Path(args.ledger).read_text())["cells"].get(args.cell)
    if committed is None:
        parser.error(f"{args.ledger} has no cell {args.cell}")
    numbers = json.loads(path.read_text())
    if isinstance(numbers.get("provenance"), str):
        numbers["provenance"] = json.loads(numbers["provenance"])
    if isinstance(numbers.get("extractor"), dict) and committed.get("extractor"):
        if numbers["extractor"].get("params_sha256") != committed["extractor"].get("params_sha256"):
            parser.error("the batch's cell ran on another extractor than the ledger's: not the same arrays")
    result = diagnose(numbers, committed, authors_seeds(Path(args.authors), committed, args.experiment), load_protocol().rule)
    stem = Path(args.out or ROOT / f"experiments/tables/diagnosis_seed_spread_{column}_{method}")
    command = f"python experiments/diagnose_seed_spread.py BATCH --cell {args.cell}"
    stem.with_suffix(".json").write_text(json.dumps(result | {"command": command, "provenance": provenance()},
                                                     indent=1) + "\n")
    stem.with_suffix(".md").write_text(markdown(result, command))
    print(stem.with_suffix(".md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
