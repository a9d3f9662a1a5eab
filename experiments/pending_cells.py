"""The runs the reproduction protocol still asks of Table faa, as `run_table.py` commands.

Usage: python experiments/pending_cells.py [--profile offline] [--status STATUS ...] [--out-prefix PREFIX] [--json]
                                         [--cheapest-first]

The headline ledger (`experiments/ledger.py faa --profile PROFILE`) records each cell's verdict under its primary
regime and the seeds its stages still run (`to_run`, `bcl.table.ledger.Verdict`). This reads them from
`experiments/tables/faa_<profile>.json` and groups the cells by regime, seed span and the bcl code their kept stages
(`experiments/stages`) ran, so that one command runs each group:

    # steps-matched, seeds 0-9: 13 cells, verdict needs a GPU (13); no stage kept: any commit
    python experiments/run_table.py faa --profile offline --schedule steps-matched --first-seed 0 --seeds 10 \\
        --cells 'ci-mnist-cnn/finetuning' ... --out PREFIX-steps-matched-0-9

A group whose cells have kept stages must run from a commit of that bcl code (the line says which commit ran them),
and its output is joined with them by `merge_stages.py`; `keep_stage.py` keeps it first. `--json` prints the groups
instead, for scripts (e.g. a GPU session's cell list).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run from a checkout without installing
TABLES = ROOT / "experiments" / "tables"
STAGES = ROOT / "experiments" / "stages"


class Group(NamedTuple):
    "Cells one `run_table.py` command runs: one regime, one contiguous seed span, one bcl code of kept stages."
    regime: str
    first: int
    seeds: int
    code: str | None  # the bcl code of the cells' kept stages; None: nothing kept, any commit
    commit: str | None  # a commit that ran that code
    cells: tuple[str, ...]
    statuses: tuple[str, ...]


def kept_code(cell: str, run: str, stages: Path = STAGES) -> tuple[str | None, str | None]:
    "The bcl code and commit of `cell`'s kept stages under `run` ((None, None) when none is kept)."
    for path in sorted(stages.glob(f"seeds-*/{run}/{cell}/numbers.json")):
        provenance = json.loads(path.read_text())["provenance"]
        return provenance.get("bcl_code"), (provenance.get("git") or {}).get("commit")
    return None, None


def pending_groups(ledger: dict, profile: str, statuses: set[str] | None = None, stages: Path = STAGES) -> list[Group]:
    """The groups of cells whose verdict (`ledger["cells"][*]["verdict"]`) still runs seeds, in the ledger's order;
    `statuses`: only verdicts with one of these statuses (None: any)."""
    from bcl.table.ledger import seed_spans
    from bcl.table.plan import run_name
    groups: dict[tuple, tuple[list, list]] = {}
    commits: dict[str | None, str | None] = {}
    for cell, record in ledger["cells"].items():
        verdict = record.get("verdict") or {}
        if not verdict.get("to_run") or (statuses and verdict["status"] not in statuses):
            continue
        regime = verdict["regime"]
        code, commit = kept_code(cell, run_name(profile, regime), stages)
        commits.setdefault(code, commit)
        for first, last in seed_spans(verdict["to_run"]):
            count = last - first + 1
            cells, states = groups.setdefault((regime, first, count, code), ([], []))
            cells.append(cell)
            states.append(verdict["status"])
    return [Group(regime, first, count, code, commits[code], tuple(cells), tuple(states))
            for (regime, first, count, code), (cells, states) in groups.items()]


def cheapest_first(groups: list[Group], projection: dict) -> list[Group]:
    """`groups` with each group's cells, and the groups, ordered by projected hours (`projection`: `projections`; a
    cell without one goes last), so that a run cut short has finished the most cells."""
    hours = lambda cell: (projection.get(cell) or {}).get("hours") or float("inf")

    def ordered(group: Group) -> Group:
        pairs = sorted(zip(group.cells, group.statuses), key=lambda pair: hours(pair[0]))
        return group._replace(cells=tuple(c for c, _ in pairs), statuses=tuple(s for _, s in pairs))

    return sorted(map(ordered, groups), key=lambda g: sum(hours(c) for c in g.cells))


def projections(tables: Path, profile: str, regimes: set[str]) -> dict:
    """'column/method' → projected record of the cell under its regime, from `experiments/project_table.py`'s
    `faa_<run>_projection.json` of each regime (a regime without one projects nothing)."""
    from bcl.table.plan import run_name
    out = {}
    for regime in sorted(regimes):
        path = tables / f"faa_{run_name(profile, regime)}_projection.json"
        if path.exists():
            out |= json.loads(path.read_text())["cells"]
    return out


def command(group: Group, profile: str, prefix: str) -> str:
    "The `run_table.py` command of one group, with a comment line naming what it needs."
    last = group.first + group.seeds - 1
    kinds = ", ".join(f"{s} ({group.statuses.count(s)})" for s in dict.fromkeys(group.statuses))
    where = (f"from a commit of bcl code {group.code} (e.g. {group.commit[:7] if group.commit else '?'}), then keep_stage.py "
             "and merge_stages.py with its kept stages" if group.code else "no stage kept: any commit")
    cells = " ".join(f"'{c}'" for c in group.cells)
    n = len(group.cells)
    return (f"# {group.regime}, seeds {group.first}-{last}: {n} cell{'s' * (n != 1)}, verdict {kinds}; {where}\n"
            f"python experiments/run_table.py faa --profile {profile} --schedule {group.regime} --first-seed "
            f"{group.first} --seeds {group.seeds} --cells {cells} --out {prefix}-{group.regime}-{group.first}-{last}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="The runs the reproduction protocol still asks of Table faa.")
    parser.add_argument("--profile", default="offline")
    parser.add_argument("--status", nargs="*", help="only cells with these verdicts (e.g. 'needs a GPU' inconclusive)")
    parser.add_argument("--out-prefix", default="results/pending", help="each command's --out is PREFIX-REGIME-A-B")
    parser.add_argument("--json", action="store_true", help="print the groups as JSON lines")
    parser.add_argument("--cheapest-first", action="store_true",
                        help="order cells and groups by the ledger's projected hours, not the table's order")
    parser.add_argument("--tables", type=Path, default=TABLES)
    args = parser.parse_args(argv)
    path = args.tables / f"faa_{args.profile}.json"
    if not path.exists():
        parser.error(f"{path} does not exist: write the headline ledger first (experiments/ledger.py faa --profile "
                     f"{args.profile})")
    ledger = json.loads(path.read_text())
    known = {(r.get("verdict") or {}).get("status") for r in ledger["cells"].values()} - {None}
    unknown = set(args.status or ()) - known
    if unknown:
        parser.error(f"no verdict has the status {sorted(unknown)}: the ledger's are {sorted(known)}")
    if not any("to_run" in (r.get("verdict") or {}) for r in ledger["cells"].values()):
        parser.error(f"{path} records no seeds to run: it was written before the ledger recorded them; write it again")
    groups = pending_groups(ledger, args.profile, set(args.status) if args.status else None)
    if args.cheapest_first:
        groups = cheapest_first(groups, projections(args.tables, args.profile, {g.regime for g in groups}))
    for group in groups:
        print(json.dumps(group._asdict()) if args.json else command(group, args.profile, args.out_prefix) + "\n")
    if not args.json:
        runs = sum(len(g.cells) for g in groups)
        print(f"{runs} cell run{'s' * (runs != 1)} in {len(groups)} command{'s' * (len(groups) != 1)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
