"""Regenerate the paper's Table faa (and its visualisation figures) as a batch of papermill runs on Dask.

Usage (from a checkout; after `pip install .` the same command is `bcl-table`):
  python experiments/run_table.py faa|visualisation|all|custom [--profile paper|offline|smoke] [--cells FILTER ...]
                                 [--seeds N] [--schedule epochs|steps|matched|steps-matched]
                                 [--scheduler ADDRESS|FILE] [--workers N]
                                 [--slurm JOBS [--slurm-config FILE]] [--out DIR] [--data-dir DIR]
                                 [--subset representative] [--plugins MODULE ...] [--epochs N] [--dry-run]

Every cell of Table faa is one run of the template nbs/91_table_cell.ipynb, a task of a Dask distributed cluster
(a LocalCluster by default, an existing scheduler with --scheduler, Slurm jobs with --slurm). The batch is resumable
by content hash. The command line is `bcl.cli` (nbs/70_cli.ipynb), the batch `bcl.table.batch` (nbs/table/64_batch.ipynb). Then
`python experiments/ledger.py faa --profile PROFILE` assembles the ledger.
"""
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run from a checkout without installing: here, and in the workers and their kernels
os.environ["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in [os.environ.get("PYTHONPATH")] if p])

from bcl.table.batch import slurm_cluster  # noqa: E402,F401  (slurm_cluster: tests/test_table.py)
from bcl.cli import table_main  # noqa: E402

if __name__ == "__main__":
    sys.exit(table_main(prog="run_table.py"))
