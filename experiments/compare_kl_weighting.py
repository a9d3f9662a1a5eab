"""S-FSVI's KL weight, the paper's text against the authors' code, on one column: a sensitivity table (issue 69, item 7).

The paper's text weighs the function-space KL by B/C; the authors' code at b838074 by B/(t·C) with the prior focus
(`svi/replay.py:85`) and B/M with the likelihood focus (`svi/replay.py:298`). The protocol's primary regime uses the
code's weight (`experiments/protocol.md`); this table never changes a verdict. For each S-FSVI cell it shows both
weightings' seeds, mean ± sd and the protocol's interval for one more run, and whether the paper's number is a
plausible single run of either.

    python experiments/compare_kl_weighting.py --paper-runs OUT [--schedule S] [--code-runs OUT | --code-ledger L]
    python experiments/compare_kl_weighting.py --redraw experiments/tables/sensitivity_kl_weighting.json

`OUT` is a `bcl-table faa --kl-weighting paper|code --schedule S --out OUT` batch folder (or a folder that
`merge_stages.py` joined the stages of one into); without `--code-runs` the code's cells are read from a committed
ledger, by default the schedule's own (`experiments/tables/faa_offline-steps-matched.json` for `steps-matched`).
Writes `experiments/tables/sensitivity_kl_weighting.{md,json}` for the paper's epochs and
`sensitivity_kl_weighting-<schedule>.{md,json}` for another schedule, as batch folders are named, and the figure of
the same name under `figures/` (each weighting's seeds as dots, its interval as a bar, the paper's number as a line);
`--redraw` draws that figure again from a table's committed JSON alone.
"""
import argparse
import json
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

METHODS = ("p-g-sfsvi", "l-g-sfsvi", "p-gm-sfsvi", "l-gm-sfsvi")


def batch_cell(folder: Path, run: str, column: str, method: str) -> dict | None:
    "A finished cell of a batch folder's run `<profile>[-<schedule>]` (its numbers.json), or None."
    path = folder / run / column / method / "numbers.json"
    return json.loads(path.read_text()) if path.exists() else None


def row(cell: dict, rule, weighting: str) -> dict:
    "One weighting's seeds, the protocol's judgement of the paper's number against them, and where they came from."
    from bcl.table.verdict import judge
    faa = cell["final_average_accuracy"]
    j = judge(faa["mean"], faa.get("std") or 0.0, faa["n"], cell["paper"], rule, bool(cell.get("substitute")))
    return {"weighting": weighting, "per_seed": faa["per_seed"], "mean": j.mean, "sd": j.sd, "n": j.n,
            "interval": [j.low, j.high], "outcome": str(j.outcome), "paper": j.paper,
            "schedule": cell["parameters"]["schedule"], "code": cell.get("code") or cell["provenance"]["bcl_code"],
            "backend": cell["provenance"].get("backend")}


def draw(rows: list[dict], title: str):
    "Each method's two weightings side by side: the seeds as dots, the protocol's interval as a bar, the paper as a line."
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    from bcl.paper import METHOD_LABELS
    width = max(4.5, 1.6 + 1.9 * len(rows))
    fig, ax = plt.subplots(figsize=(width, 4.0))
    colours = {"code": "tab:blue", "paper": "tab:orange"}
    names = {"code": "code's weight", "paper": "text's weight B/C"}
    for i, both in enumerate(rows):
        for k, weighting in enumerate(("code", "paper")):
            r, x = both[weighting], i + (k - 0.5) * 0.36
            ax.bar(x, r["interval"][1] - r["interval"][0], bottom=r["interval"][0], width=0.3, alpha=0.3,
                   color=colours[weighting], label=names[weighting] if i == 0 else None)
            spread = np.linspace(-0.1, 0.1, len(r["per_seed"])) if len(r["per_seed"]) > 1 else [0.0]
            ax.plot(x + np.asarray(spread), r["per_seed"], "o", ms=3, color=colours[weighting])
        ax.hlines(both["code"]["paper"], i - 0.4, i + 0.4, color="black", label="paper" if i == 0 else None)
    ax.set_xticks(range(len(rows)), [METHOD_LABELS[r["method"]] for r in rows])
    ax.set_xlim(-0.6, len(rows) - 0.4)
    ax.set_ylabel("final average accuracy (%)")
    ax.set_title("\n".join(textwrap.wrap(title, int(width * 11))), fontsize=9)
    ax.legend(fontsize=7, loc="best")
    fig.tight_layout()
    return fig


def write_figure(rows: list[dict], figures: Path, stem: str, column: str, profile: str) -> None:
    "`draw` the rows into `figures/<stem>.{png,pdf}`."
    schedules = sorted({r[w]["schedule"] for r in rows for w in ("code", "paper")})
    fig = draw(rows, f"S-FSVI's KL weight on {column} ({profile}, {', '.join(schedules) or '–'}): "
                     "seeds, 95 % interval for one run")
    figures.mkdir(parents=True, exist_ok=True)
    for suffix in ("png", "pdf"):
        fig.savefig(figures / f"{stem}.{suffix}", dpi=150)


def main(argv=None) -> int:
    from bcl.table.plan import SCHEDULES, run_name
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--paper-runs", type=Path, help="batch folder of the --kl-weighting paper cells")
    source.add_argument("--redraw", type=Path, help="a written sensitivity_kl_weighting*.json: draw its figure again")
    parser.add_argument("--code-runs", type=Path, help="batch folder of the code's cells (default: --code-ledger)")
    parser.add_argument("--code-ledger", type=Path, help="committed ledger of the code's cells (default: the schedule's)")
    parser.add_argument("--schedule", choices=tuple(SCHEDULES), default="epochs",
                        help="the schedule both weightings ran under")
    parser.add_argument("--column", default="ci-mnist-fcnn")
    parser.add_argument("--profile", default="offline")
    parser.add_argument("--tables", type=Path, default=ROOT / "experiments" / "tables")
    parser.add_argument("--figures", type=Path, default=ROOT / "figures")
    args = parser.parse_args(argv)
    if args.redraw is not None:
        table = json.loads(args.redraw.read_text())
        write_figure(table["rows"], args.figures, args.redraw.stem, table["column"], table["profile"])
        return 0
    from bcl.core import atomic_write_bytes, atomic_write_json
    from bcl.paper import METHOD_LABELS
    from bcl.provenance import provenance
    from bcl.table.verdict import load_protocol
    rule = load_protocol().rule
    run = run_name(args.profile, args.schedule)
    if args.code_runs is None:
        code_ledger = args.code_ledger or args.tables / f"faa_{run}.json"
        if not code_ledger.exists():
            parser.error(f"{code_ledger} does not exist: give the code's cells with --code-runs or --code-ledger")
        ledger = json.loads(code_ledger.read_text())["cells"]
    rows, lines = [], []
    for method in METHODS:
        paper = batch_cell(args.paper_runs, run, args.column, method)
        code = (batch_cell(args.code_runs, run, args.column, method) if args.code_runs
                else ledger.get(f"{args.column}/{method}"))
        if paper is None or code is None or not code.get("n", code.get("final_average_accuracy", {}).get("n")):
            lines.append(f"| {METHOD_LABELS[method]} | not run | | | | |")
            continue
        if paper["parameters"].get("kl_weighting") != "paper" or code["parameters"].get("kl_weighting") == "paper":
            raise ValueError(f"{method}: the paper-weighted cell must record kl_weighting 'paper' and the code's cell "
                             "must not; check --paper-runs and --code-runs.")
        if paper["parameters"]["schedule"] != code["parameters"]["schedule"]:
            raise ValueError(f"{method}: the two weightings ran under different schedules "
                             f"({paper['parameters']['schedule']} and {code['parameters']['schedule']}).")
        both = {"method": method, "code": row(code, rule, "code"), "paper": row(paper, rule, "paper")}
        rows.append(both)
        fmt = lambda r: (f"{r['mean']:.2f} ± {r['sd']:.2f} ({r['n']}) [{r['interval'][0]:.2f}, {r['interval'][1]:.2f}]"
                         + ("" if r["backend"] == "cpu" else f", on {r['backend']}"))
        lines.append(f"| {METHOD_LABELS[method]} | {fmt(both['code'])} | {both['code']['outcome']} | "
                     f"{fmt(both['paper'])} | {both['paper']['outcome']} | {both['code']['paper']:.2f} |")
    schedules = sorted({r[w]["schedule"] for r in rows for w in ("code", "paper")})
    command = "python experiments/compare_kl_weighting.py " + " ".join(argv if argv is not None else sys.argv[1:])
    text = "\n".join([
        f"# S-FSVI's KL weight: the paper's text (B/C) against the authors' code ({args.column}, {args.profile})", "",
        "A sensitivity analysis (`experiments/protocol.md`): it never changes a verdict. The code's weight is B/(t·C) "
        "with the prior focus and B/M with the likelihood focus; the text's is B/C. Each entry: mean ± sd (seeds) "
        "[the protocol's 95 % interval for one more run, widened by its margin], and the outcome of the paper's number "
        f"against it. Schedule: {', '.join(schedules) or '–'}; every seed each cell ran (seeds 0 to n − 1).", "",
        "| method | code's weight | outcome | text's weight (B/C) | outcome | paper |",
        "|---|---|---|---|---|---|", *lines, "", f"Written by `{command}`.", ""])
    stem = "sensitivity_kl_weighting" + run.removeprefix(args.profile)  # '-<schedule>', none for the paper's epochs
    atomic_write_bytes(args.tables / f"{stem}.md", text.encode())
    atomic_write_json(args.tables / f"{stem}.json",
                      {"command": command, "column": args.column, "profile": args.profile, "schedule": args.schedule,
                       "rows": rows, "provenance": provenance()})
    write_figure(rows, args.figures, stem, args.column, args.profile)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
