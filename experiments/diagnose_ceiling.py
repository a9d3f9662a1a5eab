"""Is a gap of an extractor column no larger than the extractor's own? The ceiling of Table faa (a) on substitute data.

Usage: python experiments/diagnose_ceiling.py [--profile offline] [--tables experiments/tables]

Offline, the MNIST columns of Table faa (a) train a linear head on the features of an extractor pre-trained on
Fashion-MNIST, where the paper pre-trains on EMNIST letters. Joint MAP training on the same features is the ceiling
of every method of the column: it sees all tasks' data at once. Offline it reaches 82.40 on CI Split MNIST-5k against
the paper's 95.11, so the extractor alone costs 12.7 points before any continual learning happens.

A cell's gap is *within the ceiling* when ours − paper ≥ (our joint − the paper's joint) − max(3 points, 2 sd of
ours): the method loses no more against the paper than joint training on the same features does. The difference
of the two gaps, ours − our joint against the paper's method − the paper's joint, is what is left for the method
itself. Read from the committed ledgers of every schedule (`faa_<profile>[-<schedule>].json`); nothing is trained.
Writes experiments/tables/diagnosis_fe_ceiling.{md,json}.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run from a checkout without installing


def ceiling_rows(ledgers: dict[str, dict], margin_points: float = 3.0, margin_sds: float = 2.0) -> list[dict]:
    "One row per (schedule, extractor column, method) with numbers: both gaps, what is left, and the verdict."
    from bcl.paper import FAA_COLUMNS, FAA_PUBLISHED, TABLE_METHODS
    rows = []
    for schedule, cells in ledgers.items():
        for column in (c for c in FAA_COLUMNS if c.pretraining is not None):
            joint = cells.get(f"{column.key}/joint")
            if not joint or joint.get("mean") is None:
                continue
            joint_gap = joint["mean"] - FAA_PUBLISHED[column.key]["joint"]
            for method in TABLE_METHODS:
                cell = cells.get(f"{column.key}/{method}")
                if not cell or cell.get("mean") is None:
                    continue
                paper = FAA_PUBLISHED[column.key][method]
                gap = cell["mean"] - paper
                margin = max(margin_points, margin_sds * (cell.get("sd") or 0.0))
                rows.append({"schedule": schedule, "column": column.key, "method": method, "ours": cell["mean"],
                             "sd": cell.get("sd"), "paper": paper, "gap": gap, "joint_gap": joint_gap,
                             "left": gap - joint_gap, "within_ceiling": gap >= joint_gap - margin})
    return rows


def raw_pixel_joint(ledgers: dict[str, dict]) -> list[str]:
    "Joint training on the raw MNIST-5k pixels (the FCNN columns) beside joint training on the extractor's features."
    from bcl.paper import FAA_PUBLISHED
    cells = ledgers.get("epochs", {})
    lines = []
    for fe, raw in (("ci-mnist-fe", "ci-mnist-fcnn"), ("di-mnist-fe", "di-mnist-fcnn")):
        a, b = cells.get(f"{fe}/joint"), cells.get(f"{raw}/joint")
        if a and b and a.get("mean") is not None and b.get("mean") is not None:
            lines.append(f"- {fe}: joint MAP on the features {a['mean']:.2f} (paper {FAA_PUBLISHED[fe]['joint']:.2f}); "
                         f"on the raw pixels of the same 3,200 images with the 256-256 FCNN ({raw}) "
                         f"{b['mean']:.2f} (paper {FAA_PUBLISHED[raw]['joint']:.2f}).")
    if lines:
        lines.append("\nThe smaller data set costs joint training a few points on the raw pixels; the rest of the "
                     "extractor columns' joint gap is the Fashion-MNIST extractor's.\n")
    return lines


def markdown(rows: list[dict], command: str, ceiling: list[str] = (), extractor: str = "") -> str:
    from bcl.paper import METHOD_LABELS
    lines = ["# Diagnosis: the extractor's ceiling on the offline extractor columns\n",
             f"`{command}` (from the committed ledgers; nothing trained).\n", extractor, *ceiling,
             "Joint MAP training on the Fashion-MNIST features is the ceiling of each column. A cell is *within the "
             "ceiling* when its gap to the paper is no larger than joint training's gap, less max(3 points, 2 sd): the "
             "extractor explains it. *left* = (ours − our joint) − (paper − paper's joint): the part of the gap the "
             "method itself adds.\n",
             "| schedule | column | method | ours | paper | gap | joint's gap | left | within the ceiling |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['schedule']} | {r['column']} | {METHOD_LABELS[r['method']]} | {r['ours']:.2f} ± "
                     f"{r['sd'] or 0:.2f} | {r['paper']:.2f} | {r['gap']:+.2f} | {r['joint_gap']:+.2f} | "
                     f"{r['left']:+.2f} | {'yes' if r['within_ceiling'] else '**no**'} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--profile", default="offline")
    parser.add_argument("--tables", default=str(ROOT / "experiments" / "tables"))
    args = parser.parse_args(argv)
    from bcl.core import atomic_write_bytes, atomic_write_json
    from bcl.table.plan import SCHEDULES, run_name
    from bcl.provenance import provenance
    tables = Path(args.tables)
    ledgers = {}
    for schedule in SCHEDULES:
        path = tables / f"faa_{run_name(args.profile, schedule)}.json"
        if path.exists():
            ledgers[schedule] = json.loads(path.read_text())["cells"]
    if not ledgers:
        print(f"No ledger faa_{args.profile}*.json under {tables}: run experiments/ledger.py first.", file=sys.stderr)
        return 2
    rows = ceiling_rows(ledgers)
    command = "python experiments/diagnose_ceiling.py" + (f" --profile {args.profile}" if args.profile != "offline" else "")
    from bcl.paper import faa_column
    from common import extractor_line
    extractors = [cell.get("extractor") for cells in ledgers.values() for cell in cells.values()
                  if faa_column(cell["column"]).pretraining is not None and cell.get("mean") is not None]
    text = markdown(rows, command, raw_pixel_joint(ledgers), extractor_line(extractors) if extractors else "")
    atomic_write_bytes(tables / "diagnosis_fe_ceiling.md", text.encode())
    atomic_write_json(tables / "diagnosis_fe_ceiling.json", {"command": command, "rows": rows,
                                                             "ledgers": sorted(ledgers),
                                                             # the distinct extractors of the cells (None: not recorded)
                                                             "extractors": list({(e or {}).get("params_sha256"): e
                                                                                 for e in extractors}.values()),
                                                             "provenance": provenance()})
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
