"""Run the visualisation experiment (papermill template nbs/90_visualisation.ipynb) with parameter files.

Usage: python experiments/run_visualisation.py PARAMS.yaml [VARIANT.yaml ...] [--run NAME]
       (after `pip install .`: bcl-visualise paper_cisplit2diris [...])

The YAML files (paths, or names of the files in experiments/params/) are merged in order (base, then variants);
keys are the template's parameters (see its `parameters` cell and bcl.figure.visualisation.PARAMETER_TYPES). The executed
notebook goes to results/<run>/90_visualisation.ipynb, the numbers to results/<run>/numbers.json
(+ grid_probabilities.npz); figures and tables go where the parameters say. At the end the accuracy and
HMC-distance tables are printed with the wall and CPU time of the run. The code is `bcl.cli` (nbs/70_cli.ipynb).
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout without installing

from bcl.cli import visualise_main  # noqa: E402

if __name__ == "__main__":
    sys.exit(visualise_main())
