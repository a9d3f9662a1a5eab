"""Draw the committed figures again from the numbers they were drawn from (no training): the visualisation runs' and
Table faa's.

Usage: python experiments/assemble.py [RUN ...] [--figures figures] [--tables experiments/tables]

Every report keeps the numbers it was drawn from beside its tables (experiments/tables/visualisation_<sequence>/:
numbers.json and grid_probabilities.npz, `bcl.figure.report.write_report`), so by default every kept run is drawn
again: after a change to the drawing code only (`make stale` says `redraw`), this is `make redraw`. RUN names another
folder holding those two files (a path, or a run under results/, e.g. paper_disinusoid). Writes
figures/visualisation_<sequence>.png/.pdf, figures/hmc_distance_<sequence>.png/.pdf and
<tables>/visualisation_<sequence>.md/.json. Without RUN it also draws every Table faa ledger that has a figure
(figures/faa_<name>.png) from its JSON (`bcl.figure.ledger_figure.draw_ledger`).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bcl.core import results_dir
from bcl.figure.report import write_report


def kept_runs(tables: Path) -> list[Path]:
    "The runs whose numbers a report kept beside the tables in `tables`."
    return sorted(p.parent for p in Path(tables).glob("visualisation_*/numbers.json"))


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="*")
    parser.add_argument("--figures", default=str(ROOT / "figures"))
    parser.add_argument("--tables", default=str(ROOT / "experiments" / "tables"))
    args = parser.parse_args(argv)
    runs = [Path(r) if Path(r).is_dir() else results_dir() / r for r in args.runs] or kept_runs(args.tables)
    if not runs:
        raise FileNotFoundError(f"No kept numbers under {args.tables}/visualisation_*/ and no RUN named; run "
                                "experiments/run_visualisation.py first.")
    for folder in runs:
        report = write_report(folder, args.figures, args.tables)
        print(report["markdown"])
        print("wrote", *[str(p) for p in report["paths"]], sep="\n  ")
    if not args.runs:
        from bcl.figure.ledger_figure import draw_ledger
        for ledger in sorted(Path(args.tables).glob("faa_*.json")):
            if not ledger.stem.endswith("_projection") and (Path(args.figures) / f"{ledger.stem}.png").exists():
                print("wrote", *map(str, draw_ledger(args.tables, args.figures, ledger.stem[len("faa_"):]).values()))


if __name__ == "__main__":
    main()
