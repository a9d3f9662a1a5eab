"""Assemble the ledger of Table faa: every cell of ours beside the paper's, as markdown, LaTeX and a figure.

Usage: python experiments/ledger.py faa [--profile offline|paper|smoke] [--schedule epochs|steps] [--out DIR]
                                        [--tables DIR] [--figures DIR]

Reads OUT/<profile>/<column>/<method>/numbers.json (written by experiments/run_table.py; OUT = results/table) and
writes experiments/tables/faa_<profile>.{md,tex,json} and figures/faa_<profile>.{png,pdf}. See bcl.ledger for the
status of a cell (agrees, differs, substitute data, data not present, failed, needs a GPU, not run) and the orderings
checked. When experiments/tables/faa_<profile>_projection.json exists (experiments/project_table.py), cells not run
show their projected wall time, and those above bcl.ledger.NEEDS_GPU_HOURS are "needs a GPU".
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run from a checkout without installing

TITLES = {"paper": "Table faa: ours against the paper",
          "offline": "Table faa, offline profile (MNIST-5k, Fashion-MNIST extractor) against the paper",
          "smoke": "Table faa, smoke profile (mock data; numbers meaningless)"}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("table", type=str.lower, choices=("faa",))
    parser.add_argument("--profile", type=str.lower, default="offline", choices=tuple(TITLES))
    parser.add_argument("--schedule", choices=("epochs", "steps"), default="epochs")
    parser.add_argument("--out", help="results folder of the batch (default results/table)")
    parser.add_argument("--tables", default=str(ROOT / "experiments" / "tables"))
    parser.add_argument("--figures", default=str(ROOT / "figures"))
    args = parser.parse_args(argv)
    from bcl.core import results_dir
    from bcl.ledger import write_ledger
    name = args.profile if args.schedule == "epochs" else f"{args.profile}-steps"
    batch = (Path(args.out) if args.out else results_dir() / "table") / name
    if not batch.exists():
        print(f"No batch folder {batch}: run experiments/run_table.py faa --profile {args.profile} first.",
              file=sys.stderr)
        return 2
    title = TITLES[args.profile] + (" (the paper's optimiser steps per task)" if args.schedule == "steps" else "")
    projection_file = Path(args.tables) / f"faa_{name}_projection.json"
    projection = json.loads(projection_file.read_text()) if projection_file.exists() else None
    paths = write_ledger(batch, args.tables, args.figures, name, title, projection)
    print((Path(args.tables) / f"faa_{name}.md").read_text())
    print("wrote " + ", ".join(str(p) for p in paths.values()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
