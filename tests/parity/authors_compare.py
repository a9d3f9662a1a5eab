"""Seeds side by side: the authors' code (tests/parity/authors_seeds.py) against bcl (benchmarks/bcl_seeds.py).

Usage: .venv/bin/python tests/parity/authors_compare.py [--out experiments/tables/authors_seeds.md]

Reads benchmarks/results/authors_seeds.jsonl and benchmarks/results/bcl_seeds.jsonl and writes, per sequence (CI
Split 2D Iris, DI Sinusoid), a markdown table of final average test accuracy (mean ± sd, n seeds) per run with a
Welch two-sample t-test of each bcl run against the authors' code, followed by the provenance of this file (bcl
commit, versions; each run names its own JAX version).

Up to nine methods are compared per sequence: even when the two codes agree, the chance that at least one of nine
independent p falls below 0.05 is 1 − 0.95⁹ ≈ 0.37. Each method's primary comparison (bcl's default run: the newest
JAX, then the most seeds) therefore also gets a Holm-adjusted p over the sequence's family of primary comparisons (Holm 1979,
"A simple sequentially rejective multiple test procedure"); diagnostic runs (older JAX, one key for every task) are
outside the family.
"""
from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path

import numpy as np
from scipy import stats

ROOT = Path(__file__).resolve().parents[2]  # the repository: this file is tests/parity/X.py
# The authors' trainer ids (experiments/svi_*_fcnn.toml at b838074) and bcl's method names; si1..si15 is SI's grid.
TRAINER_METHODS = {"simple_gvcl": "p-g-vcl", "likelihood_exact_gvcl": "l-g-vcl", "simple_gmvcl": "p-gm-vcl",
                   "likelihood_exact_gmvcl": "l-gm-vcl", "prior_exact_gsfsvi": "p-g-sfsvi",
                   "likelihood_exact_gsfsvi": "l-g-sfsvi", "prior_exact_gmsfsvi": "p-gm-sfsvi",
                   "likelihood_exact_gmsfsvi": "l-gm-sfsvi", **{f"si{i}": "si" for i in range(1, 16)}}
SEQUENCE_TITLES = {"cisplit2diris": "CI Split 2D Iris", "disinusoid": "DI Sinusoid"}


def si_grid_point(trainer: str) -> dict:
    """λ and ξ of the authors' SI trainer `si<i>`: λ = 10^((i−1) mod 5), ξ = 10^(⌊(i−1)/5⌋ − 1), so si1 is (1, 0.1),
    si8 (100, 1), si15 (10⁴, 10) (the `lambda` and `xi` of experiments/svi_*_fcnn.toml at b838074)."""
    i = int(trainer[2:]) - 1
    return {"lam": 10.0 ** (i % 5), "xi": 10.0 ** (i // 5 - 1)}


def _fixed_label(method: str, point: dict) -> str:
    return f"{method} at λ={point['lam']:g}, ξ={point['xi']:g}"


def authors_method(record: dict) -> str | None:
    """bcl's name for an authors' run: an SI trainer run alone (no `candidates`: its grid was not searched) is SI at
    that grid point."""
    method = TRAINER_METHODS.get(record["trainer"])
    if method == "si" and "candidates" not in record:
        return _fixed_label(method, si_grid_point(record["trainer"]))
    return method


def bcl_method(record: dict) -> str:
    "The method of a bcl run; a run with `fixed` (bcl_seeds.py --fix) reports that grid point for every seed."
    return _fixed_label(record["method"], record["fixed"]) if "fixed" in record else record["method"]


def authors_sequence(record: dict) -> str:
    "The sequence of an authors' run: `svi_<sequence>_fcnn` is its experiment."
    return record["experiment"].split("_")[1]


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.is_file() else []


def unique_runs(records: list[dict]) -> list[dict]:
    """The first record of each (experiment, trainer or grid, seed): two clones splitting the seeds of one trainer can
    both run a seed that neither had recorded when it started."""
    seen, unique = set(), []
    for r in records:
        key = (r["experiment"], tuple(r.get("candidates", [r["trainer"]])), r["seed"])
        if key not in seen:
            seen.add(key)
            unique.append(r)
    return unique


def _summary(values) -> str:
    values = np.asarray(values, float)
    return f"{values.mean():.2f} ± {values.std(ddof=1):.2f}" if len(values) > 1 else f"{values.mean():.2f}"


def _last_row(matrices) -> str:
    "Mean accuracy (%) on each task after the last task, from per-seed T×T matrices; '–' without them."
    if not matrices:
        return "–"
    return " / ".join(f"{100 * v:.1f}" for v in np.asarray(matrices, float)[:, -1, :].mean(0))


def permutation_p(b, a, resamples: int = 10_000) -> float:
    """Two-sided permutation p of the difference of means of `b` and `a`. Per-task accuracies are few-valued and often
    constant in one code (SI's task 3: 100 % on every authors' seed), where Welch's t takes the zero spread at face
    value and its p collapses; relabelling the pooled seeds makes no such assumption. Fixed seed: the table is
    reproducible."""
    if np.ptp(np.concatenate([a, b])) == 0:
        return 1.0
    result = stats.permutation_test((b, a), lambda x, y, axis: x.mean(axis) - y.mean(axis), vectorized=True,
                                    n_resamples=resamples, random_state=0)
    return float(result.pvalue)


def _per_task_p(ours, theirs) -> str:
    "Permutation p per task of the accuracy after the last task, bcl against the authors' code; '–' without data."
    if len(ours or ()) < 2 or len(theirs or ()) < 2:  # a test needs two seeds on each side
        return "–"
    a, b = np.asarray(theirs, float)[:, -1, :], np.asarray(ours, float)[:, -1, :]
    return " / ".join(f"{permutation_p(b[:, j], a[:, j]):.3f}" for j in range(a.shape[1]))


def welch(b, a) -> tuple[float, float] | None:
    "Welch's t and p of `b` against `a`, or None where a single seed or two samples without spread leave them undefined."
    if len(a) < 2 or len(b) < 2 or (np.ptp(a) == 0 and np.ptp(b) == 0):
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        t, p = stats.ttest_ind(b, a, equal_var=False)
    return float(t), float(p)


def _welch_cells(b, a) -> tuple[str, str]:
    """Welch's t and p formatted. Two samples without spread have no t: equal constants (e.g. P-VCL's 33.33 on every
    Iris seed, in both codes) are 'same on every seed', different ones 'differ on every seed'."""
    if len(a) < 2 or len(b) < 2:
        return "–", "too few seeds"
    test = welch(b, a)
    if test is None:
        return ("–", "same on every seed") if np.isclose(a[0], b[0]) else ("–", "differ on every seed")
    return f"{test[0]:.2f}", f"{test[1]:.3f}"


def holm(pvalues: dict) -> dict:
    """Holm's step-down adjustment of a family of p-values {name: p}: the i-th smallest of m is multiplied by
    m − i + 1, then made non-decreasing in that order and capped at 1. It controls the chance of any false
    'differs' in the family at the nominal level, whatever the dependence between the tests."""
    names = sorted(pvalues, key=pvalues.get)
    adjusted, running = {}, 0.0
    for i, name in enumerate(names):
        running = max(running, min(1.0, (len(names) - i) * pvalues[name]))
        adjusted[name] = running
    return adjusted


def primary_run(runs: list[dict]) -> dict | None:
    "bcl's default run of a method: no diagnostic option, the newest JAX, then the most seeds."
    default = [r for r in runs if not r.get("reuse_task_key")]
    version = lambda r: tuple(int(x) for x in r["jax"].split(".")[:3])
    return max(default, key=lambda r: (version(r), len(r["final_average_accuracy"])), default=None)


def methods_of(authors: list[dict]) -> list[str]:
    "The methods the authors' runs cover, in `TRAINER_METHODS` order; SI at a fixed grid point after SI."
    names = {authors_method(r) for r in authors} - {None}
    base = list(dict.fromkeys(TRAINER_METHODS.values()))
    return sorted(names, key=lambda m: (base.index(m.split(" at ")[0]), m))


def family(authors: list[dict], ours: list[dict]) -> dict:
    "Holm-adjusted p of each method's primary comparison, over the methods where Welch's p is defined."
    pvalues = {}
    for method in methods_of(authors):
        theirs = [r["final_average_accuracy"] for r in authors if authors_method(r) == method]
        run = primary_run([r for r in ours if bcl_method(r) == method])
        if theirs and run is not None:
            test = welch(np.array(run["final_average_accuracy"]), np.array(theirs))
            if test is not None:
                pvalues[method] = test[1]
    return holm(pvalues)


def _display(method: str) -> str:
    name, _, point = method.partition(" at ")
    return name.upper() + (f" at {point}" if point else "")


def table(authors: list[dict], ours: list[dict]) -> str:
    "Rows per method (`methods_of` order) for runs of one sequence."
    methods = methods_of(authors)
    adjusted = family(authors, ours)
    tested = f"{len(adjusted)} method" + "s" * (len(adjusted) != 1)
    rows = ["| method | run | seeds | final average accuracy (%) | Welch t against the authors' code | p "
            f"| Holm p ({tested}) | after the last task: task 1 / 2 / … (%) | permutation p per task |",
            "|---|---|---|---|---|---|---|---|---|"]
    for method in methods:
        theirs = sorted((r for r in authors if authors_method(r) == method), key=lambda r: r["seed"])
        if not theirs:
            continue
        a = np.array([r["final_average_accuracy"] for r in theirs])
        rows.append(f"| {_display(method)} | authors' code, JAX {theirs[0]['jax']} | {len(a)} | {_summary(a)} | – | – "
                    f"| – | {_last_row([r['accuracy'] for r in theirs])} | – |")
        runs = [r for r in ours if bcl_method(r) == method]
        primary = primary_run(runs)
        for run in runs:
            b = np.array(run["final_average_accuracy"])
            t, p = _welch_cells(b, a)
            label = f"bcl, JAX {run['jax']}" + (", one key for every task" if run.get("reuse_task_key") else "")
            holm_p = f"{adjusted[method]:.3f}" if run is primary and method in adjusted else "–"
            rows.append(f"| {_display(method)} | {label} | {len(b)} | {_summary(b)} | {t} | {p} | {holm_p} "
                        f"| {_last_row(run.get('accuracy'))} "
                        f"| {_per_task_p(run.get('accuracy'), [r['accuracy'] for r in theirs])} |")
    return "\n".join(rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=ROOT / "experiments" / "tables" / "authors_seeds.md")
    args = parser.parse_args()
    results = ROOT / "benchmarks" / "results"
    authors, ours = unique_runs(_lines(results / "authors_seeds.jsonl")), _lines(results / "bcl_seeds.jsonl")
    if not authors:
        print("authors_compare.py: no benchmarks/results/authors_seeds.jsonl yet (run tests/parity/authors_seeds.py).")
        return 0
    sys.path.insert(0, str(ROOT))
    from bcl.core import atomic_write_bytes
    from bcl.provenance import provenance
    sections = []
    for sequence, title in SEQUENCE_TITLES.items():
        theirs = [r for r in authors if authors_sequence(r) == sequence]
        if theirs:
            mine = [r for r in ours if r.get("sequence", "cisplit2diris") == sequence]  # early lines: Iris only
            sections.append(f"## {title}\n\n" + table(theirs, mine) + "\n")
    text = ("# The authors' code against bcl over seeds\n\n"
            "Final average test accuracy after the last task, per seed; the authors' code is github.com/blackblitz/bcl "
            "at b838074, unmodified (`tests/parity/authors_seeds.py`), bcl is `benchmarks/bcl_seeds.py`; both train on "
            "the same arrays (the authors' prepared files equal `bcl.data.sequences.load_sequence`'s). SI selects its λ × ξ per "
            "seed by validation in both codes; 'SI at λ=…, ξ=…' runs that one grid point on every seed in both codes "
            "(the authors' trainer block alone, bcl's `--fix`). Welch's t is bcl minus the authors' code. Holm p adjusts each method's "
            "primary comparison (bcl's default run with the newest JAX) for the number of methods compared on the "
            "sequence; the other bcl runs are diagnostics outside that family. Per task, the accuracy after the last task "
            "is compared by a permutation test of the difference of means (10,000 relabellings), which, unlike "
            "Welch's t, holds when one code gets a task right on every seed.\n\n"
            + "\n".join(sections) + "\n## Provenance\n\n```json\n" + json.dumps(provenance(), indent=1) + "\n```\n")
    atomic_write_bytes(args.out, text.encode())
    print(text.split("## Provenance")[0])
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
