"""Seeds side by side: the authors' code (benchmarks/authors_seeds.py) against bcl (benchmarks/bcl_seeds.py).

Usage: .venv/bin/python benchmarks/authors_compare.py [--out experiments/tables/authors_seeds.md]

Reads benchmarks/results/authors_seeds.jsonl and benchmarks/results/bcl_seeds.jsonl and writes, per sequence (CI
Split 2D Iris, DI Sinusoid), a markdown table of final average test accuracy (mean ± sd, n seeds) per run with a
Welch two-sample t-test of each bcl run against the authors' code, followed by the provenance of this file (bcl
commit, versions; each run names its own JAX version).
"""
from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path

import numpy as np
from scipy import stats

ROOT = Path(__file__).resolve().parent.parent
# The authors' trainer ids (experiments/svi_*_fcnn.toml at b838074) and bcl's method names; si1..si15 is SI's grid.
TRAINER_METHODS = {"simple_gvcl": "p-g-vcl", "likelihood_exact_gvcl": "l-g-vcl", "simple_gmvcl": "p-gm-vcl",
                   "likelihood_exact_gmvcl": "l-gm-vcl", "prior_exact_gsfsvi": "p-g-sfsvi",
                   "likelihood_exact_gsfsvi": "l-g-sfsvi", "prior_exact_gmsfsvi": "p-gm-sfsvi",
                   "likelihood_exact_gmsfsvi": "l-gm-sfsvi", **{f"si{i}": "si" for i in range(1, 16)}}
SEQUENCE_TITLES = {"cisplit2diris": "CI Split 2D Iris", "disinusoid": "DI Sinusoid"}


def authors_sequence(record: dict) -> str:
    "The sequence of an authors' run: `svi_<sequence>_fcnn` is its experiment."
    return record["experiment"].split("_")[1]


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.is_file() else []


def _summary(values) -> str:
    values = np.asarray(values, float)
    return f"{values.mean():.2f} ± {values.std(ddof=1):.2f}"


def _last_row(matrices) -> str:
    "Mean accuracy (%) on each task after the last task, from per-seed T×T matrices; '–' without them."
    if not matrices:
        return "–"
    return " / ".join(f"{100 * v:.1f}" for v in np.asarray(matrices, float)[:, -1, :].mean(0))


def _per_task_p(ours, theirs) -> str:
    "Welch p per task of the accuracy after the last task, bcl against the authors' code; '–' where undefined."
    if not ours or not theirs:
        return "–"
    a, b = np.asarray(theirs, float)[:, -1, :], np.asarray(ours, float)[:, -1, :]
    with warnings.catch_warnings():  # a task every seed gets right (task 1) has no variance: p is undefined
        warnings.simplefilter("ignore", RuntimeWarning)
        ps = [stats.ttest_ind(b[:, j], a[:, j], equal_var=False).pvalue for j in range(a.shape[1])]
    return " / ".join("–" if not np.isfinite(p) else f"{p:.3f}" for p in ps)


def _welch(b, a) -> tuple[str, str]:
    """Welch's t and p of `b` against `a`, formatted. Two samples without spread have no t: equal constants (e.g.
    P-VCL's 33.33 on every Iris seed, in both codes) are 'same on every seed', different ones 'differ on every seed'."""
    if np.ptp(a) == 0 and np.ptp(b) == 0:
        return ("–", "same on every seed") if np.isclose(a[0], b[0]) else ("–", "differ on every seed")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        t, p = stats.ttest_ind(b, a, equal_var=False)
    return f"{t:.2f}", f"{p:.3f}"


def table(authors: list[dict], ours: list[dict]) -> str:
    "Rows per method (in `TRAINER_METHODS` order) for runs of one sequence."
    methods = list(dict.fromkeys(TRAINER_METHODS.values()))
    rows = ["| method | run | seeds | final average accuracy (%) | Welch t against the authors' code | p "
            "| after the last task: task 1 / 2 / … (%) | Welch p per task |",
            "|---|---|---|---|---|---|---|---|"]
    for method in methods:
        theirs = sorted((r for r in authors if TRAINER_METHODS.get(r["trainer"]) == method), key=lambda r: r["seed"])
        if not theirs:
            continue
        a = np.array([r["final_average_accuracy"] for r in theirs])
        rows.append(f"| {method.upper()} | authors' code, JAX {theirs[0]['jax']} | {len(a)} | {_summary(a)} | – | – "
                    f"| {_last_row([r['accuracy'] for r in theirs])} | – |")
        for run in (r for r in ours if r["method"] == method):
            b = np.array(run["final_average_accuracy"])
            t, p = _welch(b, a)
            label = f"bcl, JAX {run['jax']}" + (", one key for every task" if run.get("reuse_task_key") else "")
            rows.append(f"| {method.upper()} | {label} | {len(b)} | {_summary(b)} | {t} | {p} "
                        f"| {_last_row(run.get('accuracy'))} "
                        f"| {_per_task_p(run.get('accuracy'), [r['accuracy'] for r in theirs])} |")
    return "\n".join(rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=ROOT / "experiments" / "tables" / "authors_seeds.md")
    args = parser.parse_args()
    results = ROOT / "benchmarks" / "results"
    authors, ours = _lines(results / "authors_seeds.jsonl"), _lines(results / "bcl_seeds.jsonl")
    if not authors:
        print("authors_compare.py: no benchmarks/results/authors_seeds.jsonl yet (run benchmarks/authors_seeds.py).")
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
            "at b838074, unmodified (`benchmarks/authors_seeds.py`), bcl is `benchmarks/bcl_seeds.py`; both train on "
            "the same arrays (the authors' prepared files equal `bcl.data.load_sequence`'s). SI selects its λ × ξ per "
            "seed by validation in both codes. Welch's t is bcl minus the authors' code.\n\n"
            + "\n".join(sections) + "\n## Provenance\n\n```json\n" + json.dumps(provenance(), indent=1) + "\n```\n")
    atomic_write_bytes(args.out, text.encode())
    print(text.split("## Provenance")[0])
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
