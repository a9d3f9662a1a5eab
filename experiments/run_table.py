"""Regenerate the paper's Table faa (and its visualisation figures) as a batch of papermill runs on Dask.

Usage:
  python experiments/run_table.py faa|visualisation|all|custom [--profile paper|offline|smoke] [--cells FILTER ...]
                                 [--seeds N] [--schedule epochs|steps] [--scheduler ADDRESS|FILE] [--workers N] [--slurm JOBS]
                                 [--out DIR] [--subset representative] [--plugins MODULE ...] [--epochs N] [--dry-run]

Every cell of Table faa (13 methods x 14 columns, `bcl.paper.FAA_COLUMNS`) is one run of the template
`nbs/21_table_cell.ipynb`, a task of a Dask distributed cluster:
- by default a `LocalCluster` on this machine: one worker per GPU, each pinned to its GPU, or one CPU worker
  (`--workers N` for more);
- `--scheduler tcp://host:8786` (or a scheduler file written by `dask scheduler --scheduler-file F`) runs on an
  existing cluster;
- `--slurm JOBS` submits JOBS Slurm jobs through dask-jobqueue, one worker and one GPU each, configured by
  `experiments/cluster/jobqueue.yaml` (adapt its queue, account and walltime to your site).

Each cell writes `OUT/<profile>/<column>/<method>/numbers.json` and the executed notebook beside it
(OUT = results/table). The batch is resumable: a cell whose numbers.json carries the same content hash (parameters,
bcl code, data fingerprint) is skipped, a failed cell records `error.json` and the batch goes on, and a re-run
retries only missing and failed cells. A worker that dies mid-cell is replaced and its cell rerun by Dask; the cell
resumes from its last finished task (a checkpoint in its folder).

Profiles (`bcl.table`): `paper` needs the real data and stops at once, listing what is missing; `offline` uses
MNIST-5k and a Fashion-MNIST extractor and marks CIFAR/HAM columns "data not present"; `smoke` runs every cell on
mock data for one epoch.

FILTER: shell patterns on `column/method`, any letter case, e.g. `ci-mnist-*/l-*` or `*/er`.

Your own sequences, models, methods and columns (nbs/16_custom.ipynb): `--plugins MODULE ...` imports each module
here first (its calls of bcl.data.register_sequence, bcl.models.register_model, bcl.paper.register_method and
bcl.plan.register_column run) and passes it to every cell, whose kernel imports it before anything else. The target
`custom` runs every registered column with the paper's 13 methods and the registered ones, e.g.
  PYTHONPATH=experiments/plugins python experiments/run_table.py custom --plugins wine_example --cells 'wine/*'
A plugin must be importable: installed, in the working directory, or on PYTHONPATH. The folder it was imported from
here is added to PYTHONPATH for the LocalCluster workers and their kernels; on an existing cluster (--scheduler,
--slurm) put it on the workers' PYTHONPATH yourself. A cell's content hash includes the plugins' source, so
editing a plugin reruns its cells.
Then `python experiments/ledger.py faa --profile PROFILE` assembles the ledger.
"""
from __future__ import annotations

import argparse
import fnmatch
import json
import os
import sys
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run from a checkout without installing
sys.path.insert(0, str(ROOT / "experiments"))

TEMPLATE = ROOT / "nbs" / "21_table_cell.ipynb"
VISUALISATION_TEMPLATE = ROOT / "nbs" / "20_visualisation.ipynb"
KERNEL = "python3"
TARGETS = ("faa", "visualisation", "all", "custom")


def profile_folder(out: Path, profile: str, schedule: str) -> Path:
    return out / (profile if schedule == "epochs" else f"{profile}-steps")


def select_cells(filters: list[str] | None, subset: str | None, target: str = "faa") -> list[tuple[str, str]]:
    """(column, method) pairs in the paper's order, kept by the shell patterns `filters` on 'column/method'; for the
    target `custom`, the registered columns with the paper's methods and the registered ones."""
    from bcl.paper import FAA_COLUMN_KEYS, TABLE_METHODS, USER_METHODS
    from bcl.plan import USER_COLUMNS
    columns, methods = FAA_COLUMN_KEYS, TABLE_METHODS
    if target == "custom":
        if not USER_COLUMNS:
            raise ValueError("No column is registered: pass --plugins MODULE, a module that calls "
                             "bcl.plan.register_column (see nbs/16_custom.ipynb).")
        if subset is not None:
            raise ValueError("--subset applies to Table faa only; choose custom cells with --cells.")
        columns, methods = tuple(USER_COLUMNS), TABLE_METHODS + tuple(USER_METHODS)
    cells = [(c, m) for c in columns for m in methods]
    if subset == "representative":  # every column once and every method once, the cheapest way round
        cheap = ["joint", "finetuning", "ewc", "si", "er", "l-g-vcl", "p-g-vcl", "l-gm-vcl", "p-gm-vcl", "p-g-sfsvi",
                 "l-g-sfsvi", "p-gm-sfsvi", "l-gm-sfsvi"]
        fe = [c for c in FAA_COLUMN_KEYS if c.endswith("-fe")]
        raw = [c for c in FAA_COLUMN_KEYS if not c.endswith("-fe")]
        rest = cheap[len(raw):]
        cells = list(zip(raw, cheap)) + [(c, rest[i % len(rest)]) for i, c in enumerate(fe)]
    elif subset is not None:
        raise ValueError(f"Unknown subset {subset!r}; the only subset is 'representative'.")
    if filters:
        patterns = [f.lower() for f in filters]
        for pattern in patterns:
            if "/" not in pattern:
                raise ValueError(f"Cell filter {pattern!r} must look like COLUMN/METHOD, e.g. 'ci-mnist-*/l-*' or '*/er'.")
        cells = [(c, m) for c, m in cells if any(fnmatch.fnmatchcase(f"{c}/{m}", p) for p in patterns)]
        if not cells:
            raise ValueError(f"No cell matches {filters}; columns: {', '.join(columns)}; methods: "
                             f"{', '.join(methods)}.")
    return cells


class Cell:
    "One cell of the batch: its parameters, folder, content hash and state before the run."
    def __init__(self, column, method, profile, seeds, schedule, root: Path, data_dir, plugins=(), epochs=None):
        from bcl.plan import cell_hash, cell_parameters, missing_data, plan_cell
        self.params = cell_parameters(column, method, profile, seeds, schedule=schedule, plugins=plugins,
                                      epochs=epochs)
        self.plan = plan_cell(column, method, profile)
        self.folder = root / column / self.params["method"]
        self.data_dir = data_dir
        self.missing = missing_data(self.plan, data_dir)
        self.hash = None if self.missing else cell_hash(self.params, data_dir)

    @property
    def name(self) -> str:
        return f"{self.params['column']}/{self.params['method']}"

    def finished(self) -> bool:
        from bcl.table import read_cell
        numbers, _ = read_cell(self.folder)
        return numbers is not None and numbers.get("content_hash") == self.hash


def _importable() -> None:
    "On a Dask worker: make bcl and the scripts beside this file importable (the repository is at ROOT there too)."
    for path in (str(ROOT), str(ROOT / "experiments")):
        if path not in sys.path:
            sys.path.insert(0, path)


def load_plugins(plugins: list[str]) -> list[str]:
    """Import the plugins here (the working directory is searched too) and add the folders they came from to
    PYTHONPATH, which the LocalCluster workers and the cells' kernels inherit; returns those folders."""
    from bcl.plan import import_plugins
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    folders = []
    for module in import_plugins(plugins):
        path = Path(module.__file__).resolve()
        depth = module.__name__.count(".") + (1 if path.name == "__init__.py" else 0)
        folder = str(path.parents[depth])
        if not Path(folder).is_relative_to(sys.prefix) and folder not in folders:  # an installed one is found anyway
            folders.append(folder)
    if folders:
        os.environ["PYTHONPATH"] = os.pathsep.join(folders + [p for p in [os.environ.get("PYTHONPATH")] if p])
    return folders


def run_cell_task(params: dict, folder: str, data_dir: str | None, n_gpus: int) -> dict:
    "A Dask task: execute the template for one cell; on failure record error.json. Runs on a worker."
    _importable()
    import papermill as pm
    from bcl.core import atomic_write_json
    folder_path = Path(folder)
    folder_path.mkdir(parents=True, exist_ok=True)
    if n_gpus:
        from distributed import get_worker
        from devices import pin_environment
        os.environ.update(pin_environment(int(get_worker().name), n_gpus))
    kill_hook(params)
    start = time.perf_counter()
    try:
        pm.execute_notebook(str(TEMPLATE), str(folder_path / TEMPLATE.name),
                            parameters=params | {"output": str(folder_path), "data_dir": data_dir},
                            kernel_name=KERNEL, cwd=str(TEMPLATE.parent), progress_bar=False, log_output=False)
    except Exception as error:  # recorded, and the batch goes on
        record = {"cell": f"{params['column']}/{params['method']}", "type": type(error).__name__,
                  "message": str(error)[-4000:], "traceback": traceback.format_exc()[-8000:],
                  "wall_s": time.perf_counter() - start}
        atomic_write_json(folder_path / "error.json", record)
        return {"status": "failed", **record}
    (folder_path / "error.json").unlink(missing_ok=True)
    numbers = json.loads((folder_path / "numbers.json").read_text())
    return {"status": "done", "cell": f"{params['column']}/{params['method']}", "wall_s": time.perf_counter() - start,
            "final_average_accuracy": numbers["final_average_accuracy"]["mean"]}


def prepare_task(cells_params: list[dict], data_dir: str | None) -> str:
    "A Dask task: load the sequences of cells that share one extractor, so it is pre-trained once, not per cell."
    _importable()
    from bcl.plan import import_plugins
    from bcl.table import load_cell_sequence
    for params in cells_params:
        import_plugins(params.get("plugins", []))
        load_cell_sequence(params, data_dir)
    return ", ".join(f"{p['column']}/{p['method']}" for p in cells_params)


def prepare_groups(cells: list["Cell"]) -> list[list[dict]]:
    "One cell per target sequence, grouped by pre-training task (each group is prepared by one task, in order)."
    groups: dict[str, dict[str, dict]] = {}
    for cell in cells:
        if cell.plan.pretraining:
            groups.setdefault(cell.plan.pretraining, {}).setdefault(cell.plan.sequence, cell.params)
    return [list(targets.values()) for targets in groups.values()]


def kill_hook(params: dict) -> None:
    "Fault injection for tests: BCL_TABLE_KILL_ONCE=COLUMN/METHOD:MARKER kills this worker once, mid-cell."
    spec = os.environ.get("BCL_TABLE_KILL_ONCE")
    if not spec:
        return
    cell, marker = spec.split(":", 1)
    if cell == f"{params['column']}/{params['method']}" and not Path(marker).exists():
        Path(marker).write_text(str(os.getpid()))
        import signal
        os.kill(os.getpid(), signal.SIGKILL)


def run_visualisation_task(param_files: list[str], folder: str) -> dict:
    "A Dask task: the visualisation template with merged YAML parameter files (experiments/params)."
    _importable()
    import papermill as pm
    from bcl.cli import load_parameters
    params = load_parameters(param_files) if param_files else {}
    folder_path = Path(folder)
    folder_path.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    try:
        pm.execute_notebook(str(VISUALISATION_TEMPLATE), str(folder_path / VISUALISATION_TEMPLATE.name),
                            parameters=params | ({} if param_files else {"results_folder": str(folder_path)}),
                            kernel_name=KERNEL, cwd=str(VISUALISATION_TEMPLATE.parent), progress_bar=False,
                            log_output=False)
    except Exception as error:
        return {"status": "failed", "cell": f"visualisation/{','.join(map(str, param_files)) or 'smoke'}",
                "type": type(error).__name__, "message": str(error)[-4000:]}
    return {"status": "done", "cell": f"visualisation/{','.join(param_files) or 'smoke'}",
            "wall_s": time.perf_counter() - start}


VISUALISATION_RUNS = {
    "paper": [["experiments/params/paper_cisplit2diris.yaml"], ["experiments/params/paper_disinusoid.yaml"]],
    "offline": [["experiments/params/paper_cisplit2diris.yaml"], ["experiments/params/paper_disinusoid.yaml"]],
    "smoke": [[]],
}


SLURM_CONFIG = ROOT / "experiments" / "cluster" / "jobqueue.yaml"


def slurm_cluster(config: Path = SLURM_CONFIG):
    "A dask-jobqueue SLURMCluster configured by `config` (one job = one worker = one GPU); nothing is submitted yet."
    import dask
    import yaml
    from dask_jobqueue import SLURMCluster
    dask.config.update(dask.config.config, yaml.safe_load(Path(config).read_text()), priority="new")
    return SLURMCluster()


def make_client(scheduler: str | None, workers: int | None, slurm_jobs: int | None = None):
    "A Dask client: of an existing scheduler (address or scheduler file), of Slurm jobs, or of a new LocalCluster."
    from distributed import Client, LocalCluster
    from devices import gpu_count
    if slurm_jobs:
        cluster = slurm_cluster()
        cluster.scale(jobs=slurm_jobs)
        return Client(cluster), 0
    if scheduler:
        if Path(scheduler).exists():
            return Client(scheduler_file=scheduler), 0
        return Client(scheduler), 0
    n_gpus = gpu_count()
    n_workers = workers or max(1, n_gpus)
    cluster = LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True, dashboard_address=None)
    return Client(cluster), min(n_gpus, n_workers)


def ensure_kernel() -> None:
    from bcl.cli import ensure_kernel as ensure
    ensure()


def positive_int(text: str) -> int:
    "argparse type: a whole number of at least 1 (a count of seeds, workers, jobs or epochs)."
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number such as 5, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value} (--seeds N runs seeds 0..N-1)")
    return value


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("target", type=str.lower, choices=TARGETS)
    parser.add_argument("--profile", type=str.lower, default="offline", choices=("paper", "offline", "smoke"))
    parser.add_argument("--cells", nargs="*", help="shell patterns on COLUMN/METHOD")
    parser.add_argument("--subset", choices=("representative",), help="one cell per column and per method")
    parser.add_argument("--seeds", type=positive_int, default=None, help="seeds 0..N-1 (default 5; smoke 2)")
    parser.add_argument("--schedule", choices=("epochs", "steps"), default="epochs")
    parser.add_argument("--scheduler", help="address or scheduler file of an existing Dask scheduler")
    parser.add_argument("--workers", type=positive_int, help="LocalCluster workers (default: one per GPU, or one)")
    parser.add_argument("--slurm", type=positive_int, metavar="JOBS",
                        help="run on JOBS Slurm jobs through dask-jobqueue (experiments/cluster/jobqueue.yaml)")
    parser.add_argument("--out", default=None, help="results folder (default results/table)")
    parser.add_argument("--data-dir", default=None, help="data folder (default: bcl's; smoke: under OUT)")
    parser.add_argument("--plugins", nargs="+", default=[], metavar="MODULE",
                        help="modules that register sequences, models, methods or columns (imported here and in every cell)")
    parser.add_argument("--epochs", type=positive_int, default=None, help="epochs per task for every cell (default: the setup's)")
    parser.add_argument("--dry-run", action="store_true", help="list what would run and exit")
    args = parser.parse_args(argv)
    load_plugins(args.plugins)

    from bcl.core import atomic_write_json, results_dir
    out = Path(args.out) if args.out else results_dir() / "table"
    root = profile_folder(out.resolve(), args.profile, args.schedule)
    seeds = list(range(args.seeds if args.seeds is not None else (2 if args.profile == "smoke" else 5)))
    data_dir = args.data_dir or (str(root / "smoke-data") if args.profile == "smoke" else None)
    batch_start = time.perf_counter()

    cells = []
    if args.target in ("faa", "all", "custom"):
        cells = [Cell(c, m, args.profile, seeds, args.schedule, root, data_dir, args.plugins, args.epochs)
                 for c, m in select_cells(args.cells, args.subset, "custom" if args.target == "custom" else "faa")]
    missing = sorted({line for cell in cells for line in cell.missing})
    if args.profile == "paper" and missing:
        print("The paper profile needs data that is not on this machine:\n  " + "\n  ".join(missing), file=sys.stderr)
        print("Get it as described, or run --profile offline.", file=sys.stderr)
        return 2
    absent = [c for c in cells if c.missing]
    done = [c for c in cells if not c.missing and c.finished()]
    todo = [c for c in cells if not c.missing and c not in done]
    visualisations = VISUALISATION_RUNS[args.profile] if args.target in ("visualisation", "all") else []
    print(f"{len(cells)} cells: {len(done)} done, {len(todo)} to run, {len(absent)} data not present"
          + (f"; {len(visualisations)} visualisation runs" if visualisations else ""), flush=True)
    if args.dry_run:
        for cell in todo:
            print(f"  would run {cell.name}")
        return 0

    results = [{"status": "done (skipped)", "cell": c.name} for c in done]
    results += [{"status": "data not present", "cell": c.name, "missing": c.missing} for c in absent]
    if todo or visualisations:
        from distributed import as_completed
        from tqdm.auto import tqdm
        ensure_kernel()
        client, n_gpus = make_client(args.scheduler, args.workers, args.slurm)
        try:
            groups = prepare_groups(todo)
            if groups:  # extractors and features first, each pre-trained once (cached under the data folder)
                print(f"preparing {sum(map(len, groups))} feature sequences ({len(groups)} extractors)", flush=True)
                for future in as_completed([client.submit(prepare_task, g, data_dir, pure=False) for g in groups]):
                    try:
                        future.result()
                    except Exception as error:  # the cells themselves will fail and record why
                        print(f"preparation failed: {type(error).__name__}: {str(error)[:300]}", flush=True)
            futures = [client.submit(run_cell_task, c.params, str(c.folder), data_dir, n_gpus, pure=False,
                                     key=f"cell-{c.params['column']}-{c.params['method']}-{c.hash}") for c in todo]
            futures += [client.submit(run_visualisation_task, [str(ROOT / f) for f in files],
                                      str(root / "visualisation" / (Path(files[0]).stem if files else "smoke")),
                                      pure=False) for files in visualisations]
            bar = tqdm(total=len(futures), desc=f"{'Custom cells' if args.target == 'custom' else 'Table faa'} "
                                                  f"({args.profile})", unit="cell")
            for future in as_completed(futures):
                try:
                    outcome = future.result()
                except Exception as error:  # e.g. the task's worker died more often than Dask allows
                    outcome = {"status": "failed", "cell": str(future.key), "type": type(error).__name__,
                               "message": str(error)}
                results.append(outcome)
                bar.set_postfix_str(f"{outcome['cell']}: {outcome['status']}")
                bar.update()
                if outcome["status"] == "failed":
                    tqdm.write(f"FAILED {outcome['cell']}: {outcome.get('type')}: {outcome.get('message', '')[:300]}")
            bar.close()
        finally:
            client.close()
    failed = [r for r in results if r["status"] == "failed"]
    summary = {"target": args.target, "profile": args.profile, "schedule": args.schedule, "seeds": seeds,
               "wall_s": time.perf_counter() - batch_start, "cells": results}
    atomic_write_json(root / "batch.json", summary)
    counts = {}
    for r in results:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    print(f"batch finished in {summary['wall_s']:.0f} s: " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())))
    for r in failed:
        print(f"  failed {r['cell']}: {r.get('type')}: {r.get('message', '')[:200]}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
