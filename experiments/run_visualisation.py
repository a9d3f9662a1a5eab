"""Run the visualisation experiment (papermill template nbs/20_visualisation.ipynb) with parameter files.

Usage: python experiments/run_visualisation.py PARAMS.yaml [VARIANT.yaml ...] [--run NAME]

The YAML files are merged in order (base, then variants); keys are the template's parameters (see its
`parameters` cell and bcl.experiment.PARAMETER_TYPES). The executed notebook goes to results/<run>/20_visualisation.ipynb,
the numbers to results/<run>/numbers.json (+ grid_probabilities.npz); figures and tables go where the parameters say.
At the end the accuracy and HMC-distance tables are printed with the wall and CPU time of the run.
"""
from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run from a checkout without installing

TEMPLATE = ROOT / "nbs" / "20_visualisation.ipynb"
KERNEL = "python3"


def load_parameters(files: list[str]) -> dict:
    "Merge the YAML files in order; later files override earlier ones."
    import yaml
    from bcl.experiment import check_parameter_names
    params: dict = {}
    for name in files:
        path = Path(name)
        if not path.exists():
            raise FileNotFoundError(f"Parameter file {path} does not exist.")
        loaded = yaml.safe_load(path.read_text()) or {}
        if not isinstance(loaded, dict):
            raise ValueError(f"Parameter file {path} must hold a mapping of parameter names to values.")
        params |= loaded
    check_parameter_names(params)
    return params


def ensure_kernel() -> None:
    "Papermill needs a kernel named python3 that runs this interpreter; install it into the venv if missing."
    from jupyter_client.kernelspec import KernelSpecManager
    if KERNEL not in KernelSpecManager().find_kernel_specs():
        subprocess.run([sys.executable, "-m", "ipykernel", "install", "--sys-prefix", "--name", KERNEL,
                        "--display-name", "python3"], check=True)


def children_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("params", nargs="+", help="YAML parameter files, base first")
    parser.add_argument("--run", help="override the run name (folder under results/)")
    args = parser.parse_args()
    params = load_parameters(args.params)
    if args.run:
        params["run"] = args.run
    run = params.get("run", "smoke")

    import papermill as pm
    from bcl.core import atomic_write_json, project_root, results_dir
    folder = Path(params["results_folder"]) if params.get("results_folder") else results_dir() / run
    folder = folder if folder.is_absolute() else project_root() / folder
    folder.mkdir(parents=True, exist_ok=True)
    ensure_kernel()
    print(f"running {TEMPLATE.name} with {', '.join(args.params)} → {folder}", flush=True)
    start, cpu_start = time.perf_counter(), children_cpu_seconds()
    pm.execute_notebook(str(TEMPLATE), str(folder / TEMPLATE.name), parameters=params, kernel_name=KERNEL,
                        cwd=str(TEMPLATE.parent), progress_bar=False, log_output=False)
    timing = {"wall_s": time.perf_counter() - start, "cpu_s": children_cpu_seconds() - cpu_start,
              "params": args.params}
    atomic_write_json(folder / "runner.json", timing)

    numbers = json.loads((folder / "numbers.json").read_text())
    tables = Path(params["tables_folder"]) if params.get("tables_folder") else folder / "tables"
    tables = tables if tables.is_absolute() else project_root() / tables
    print((tables / f"visualisation_{numbers['sequence']}.md").read_text())
    failed = [m for m, e in numbers["methods"].items() if e["status"] != "ok"]
    if failed:
        print(f"FAILED methods (see numbers.json): {failed}")
    print(f"{numbers['sequence']}: papermill run took {timing['wall_s']:.0f} s wall, {timing['cpu_s']:.0f} s CPU "
          f"(kernel process)")


if __name__ == "__main__":
    main()
