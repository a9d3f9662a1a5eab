"""Re-draw the committed figures and tables of visualisation runs from their saved numbers (no training).

Usage: python experiments/assemble.py [RUN ...] [--figures figures] [--tables experiments/tables]

RUN is a folder under results/ holding numbers.json and grid_probabilities.npz written by nbs/90_visualisation.ipynb
(default: the paper-settings runs present, paper_cisplit2diris and paper_disinusoid; a `make demo` run,
demo_<sequence>, stands in for its sequence's only when the paper-settings run is absent). Writes
figures/visualisation_<sequence>.png/.pdf, figures/hmc_distance_<sequence>.png/.pdf and
<tables>/visualisation_<sequence>.md/.json.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bcl.core import results_dir
from bcl.figure.report import write_report

# per sequence: the paper-settings run, else the reduced `make demo` run
DEFAULT_RUNS = (("paper_cisplit2diris", "demo_cisplit2diris"), ("paper_disinusoid", "demo_disinusoid"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="*")
    parser.add_argument("--figures", default=str(ROOT / "figures"))
    parser.add_argument("--tables", default=str(ROOT / "experiments" / "tables"))
    args = parser.parse_args()
    present = [[r for r in choices if (results_dir() / r / "numbers.json").exists()] for choices in DEFAULT_RUNS]
    runs = args.runs or [found[0] for found in present if found]
    if not runs:
        raise FileNotFoundError(f"No run found under {results_dir()}; run experiments/run_visualisation.py first.")
    for run in runs:
        folder = Path(run) if Path(run).is_dir() else results_dir() / run
        report = write_report(folder, args.figures, args.tables)
        print(report["markdown"])
        print("wrote", *[str(p) for p in report["paths"]], sep="\n  ")


if __name__ == "__main__":
    main()
