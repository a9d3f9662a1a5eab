"""Assemble the ledger of Table faa: every cell of ours beside the paper's, as markdown, LaTeX and a figure.

Usage: python experiments/ledger.py faa [--profile offline|paper|smoke] [--out DIR]
                                        [--schedule epochs|steps|matched|steps-matched]
                                        [--tables DIR] [--figures DIR]
       (after `pip install .`: bcl-ledger faa [...])

Reads OUT/<profile>/<column>/<method>/numbers.json (written by experiments/run_table.py; OUT = results/table) and
writes experiments/tables/faa_<profile>.{md,tex,json} and figures/faa_<profile>.{png,pdf}. See bcl.table.ledger for the
status of a cell (agrees, differs, inconclusive by the rule of experiments/protocol.md; data not present, failed, needs
a GPU, not run) and the orderings checked. The headline ledger (the epochs schedule's, faa_<profile>.md) also gives
every cell its verdict under its primary regime, read from that regime's ledger: write that one first. When experiments/tables/faa_<profile>_projection.json exists (experiments/project_table.py), cells not run
show their projected wall time, and those above bcl.table.ledger.NEEDS_GPU_HOURS are "needs a GPU". The code is `bcl.cli`
(nbs/70_cli.ipynb).
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout without installing

from bcl.cli import ledger_main  # noqa: E402

if __name__ == "__main__":
    sys.exit(ledger_main())
