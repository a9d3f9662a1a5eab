# %% [markdown]
# # Visualisation experiment: predictive probabilities of every method after every task
#
# > A papermill template. It trains the requested methods (five MAP baselines, eight variational methods, joint HMC-NUTS) on CI Split 2D Iris or DI Sinusoid, writes the numbers as JSON under `results/<run>/`, and draws the paper's Fig. 2: rows are tasks, columns methods.
#
# The defaults below are a **smoke run** (a few methods, 3 epochs, 2 short HMC chains, a coarse grid), small enough
# that `nbdev_test` and `make test` run the whole pipeline. The paper's settings live in
# `experiments/params/paper_*.yaml`; `experiments/run_visualisation.py` executes this notebook with them
# (papermill) and `make demo` calls it. Every method runs inside `safe_run`: one that fails is recorded with its
# error, the others' results are kept and drawn, and the run then fails, naming it.
#
# Beyond the paper, after each task the distance of every method's predictive to HMC-NUTS's on the plotting grid
# (mean total variation and mean KL(HMC‖method), `bcl.figure.visualisation`) is tabulated next to final average accuracy,
# so "most similar to HMC" becomes a number. That number is only as good as the reference: after each task the
# HMC-NUTS chains are judged **in function space** (rank-normalised split R̂ and bulk ESS of the predictive
# probabilities at the test and grid points, `bcl.methods.hmc.predictive_convergence`), and a task whose reference misses
# R̂ ≤ 1.01 or bulk ESS ≥ 400 is marked † in the figure and the tables and printed below.

# %% tags=["parameters"]
run = "smoke"  # folder under results/
sequence = "cisplit2diris"  # cisplit2diris or disinusoid
methods = ["finetuning", "er", "p-g-sfsvi", "l-gm-sfsvi", "hmc"]  # any of bcl.paper.METHOD_NAMES
seeds = [0]  # a vmap axis; the figure and the distances use the first seed, HMC only the first
epochs = 3  # None: the paper's epochs (100)
preset = "paper"
hmc_chains = 2
hmc_warmup = 10
hmc_samples = 4
hmc_max_doublings = 10  # NUTS trajectories of at most 2^10 leapfrog steps (BlackJAX default)
hmc_target_acceptance = 0.8  # the acceptance rate window adaptation tunes the step size to (the paper's, BlackJAX default)
hmc_reference = "draws"  # the HMC predictive averages every post-warm-up draw of every chain; "final": final states (paper)
hmc_pad = None  # zero-pad every task's data to all tasks' size, one compiled HMC program for all; None: when ≤ 500 points
grid_resolution = 30  # points per axis of the plotting grid
kl_floor = 1e-6  # probabilities are floored at this before the KL
results_folder = None  # None: results/<run>
figures_folder = None  # None: results/<run>/figures; the paper runs write to figures/
tables_folder = None  # None: results/<run>/tables; the paper runs write to experiments/tables/
fast_compile = None  # skip LLVM optimisation in engine programs: None decides by network size (small, CPU), or True/False
hmc_parallel = True  # on a CPU, run the HMC chains on separate host devices (one thread each), up to the cores
progress = False

# %% [markdown]
# XLA reads its flags when the backend starts (the first JAX computation), so the number of host devices for
# parallel HMC chains is set before anything else: the largest divisor of `hmc_chains` not above the number of
# CPU cores. (In a process where JAX already started, e.g. a test runner, this has no effect and the chains
# share one device.) Running the chains on their own threads matters on a CPU: `vmap`ped chains share one device, chains on
# separate host devices run in parallel (`bcl.methods.hmc`).
#
# The chains' devices meet in collectives (an all-gather of the draws), which XLA:CPU ends the process over when a device's thread has not arrived after 40 s. On a loaded CPU a starved thread can take longer (a DI Sinusoid run died so after its last HMC task), so the limit is raised to an hour where this jaxlib knows the flag (asked in a subprocess: an unknown flag would stop JAX).

# %%
import os
wants_hmc = isinstance(methods, list) and "hmc" in [str(m).lower() for m in methods]
if hmc_parallel is True and wants_hmc and isinstance(hmc_chains, int) and hmc_chains > 1:
    # bcl.methods.hmc.chain_device_count, written out: importing bcl starts JAX's backend, after which the flag is ignored
    n_host_devices = max(d for d in range(1, min(hmc_chains, os.cpu_count() or 1) + 1) if hmc_chains % d == 0)
    if n_host_devices > 1 and "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "")
                                   + f" --xla_force_host_platform_device_count={n_host_devices}").strip()
        import subprocess, sys
        patient = "--xla_cpu_collective_call_terminate_timeout_seconds=3600"
        env = dict(os.environ, XLA_FLAGS=f"{os.environ['XLA_FLAGS']} {patient}", JAX_PLATFORMS="cpu")
        if subprocess.run([sys.executable, "-c", "import jax; jax.devices()"], env=env, capture_output=True).returncode == 0:
            os.environ["XLA_FLAGS"] = env["XLA_FLAGS"]

# %%
import time
from pathlib import Path

import numpy as np
from IPython.display import Image, Markdown, display

from bcl.core import project_root, results_dir
from bcl.data.sequences import load_sequence
from bcl.methods.hmc import parallel_chain_devices
from bcl.figure.visualisation import (PLOT_WINDOWS, build_method, grid_distances, method_entry, plot_grid,
                                     run_method, safe_run, validate_parameters)
from bcl.figure.report import write_report
from bcl.serialise import write_numbers

# %% [markdown]
# ## Parameters, validated
#
# Unknown method or sequence names, wrong types and impossible values stop the run here, before any training,
# with a `ValueError` listing the valid values.

# %%
settings = validate_parameters(dict(
    run=run, sequence=sequence, methods=methods, seeds=seeds, epochs=epochs, preset=preset, hmc_chains=hmc_chains,
    hmc_warmup=hmc_warmup, hmc_samples=hmc_samples, hmc_max_doublings=hmc_max_doublings,
    hmc_target_acceptance=hmc_target_acceptance,
    hmc_reference=hmc_reference, hmc_pad=hmc_pad,
    grid_resolution=grid_resolution, kl_floor=kl_floor,
    results_folder=results_folder, figures_folder=figures_folder, tables_folder=tables_folder,
    fast_compile=fast_compile, hmc_parallel=hmc_parallel, progress=progress))

def folder(value, default: Path) -> Path:
    path = default if value is None else Path(value)
    return path if path.is_absolute() else project_root() / path

run_folder = folder(results_folder, results_dir() / run)
figure_folder = folder(figures_folder, run_folder / "figures")
table_folder = folder(tables_folder, run_folder / "tables")
print(settings)
print(f"numbers → {run_folder}, figures → {figure_folder}, tables → {table_folder}")

# %% [markdown]
# ## The sequence and the plotting grid

# %%
task_sequence = load_sequence(sequence)
window = PLOT_WINDOWS[sequence]
grid_xs = plot_grid(window, grid_resolution)
print(f"{sequence}: {len(task_sequence)} tasks, {task_sequence.likelihood}, training inputs in "
      f"{np.round(np.stack(task_sequence.input_bounds), 2).tolist()}; window {window}, grid {grid_xs.shape}")

# %% [markdown]
# ## Training every method
#
# Each method is built and trained inside `safe_run`; a failure is printed and recorded.

# %%
start = time.perf_counter()
hmc_settings = dict(n_chains=hmc_chains, num_warmup=hmc_warmup, num_samples=hmc_samples,
                    max_num_doublings=hmc_max_doublings, target_acceptance_rate=hmc_target_acceptance,
                    reference=hmc_reference, pad=hmc_pad,
                    devices=parallel_chain_devices(hmc_chains) if hmc_parallel else None,
                    store=run_folder / "hmc_tasks")  # each task kept as it ends: a stopped run resumes
entries, grids = {}, {}
for name in settings["methods"]:
    def build_and_run(name=name):
        spec = build_method(name, task_sequence, preset, epochs=epochs, hmc=hmc_settings)
        return run_method(spec, task_sequence, seeds, grid_xs, progress=progress, fast_compile=fast_compile)
    began = time.perf_counter()
    result, error = safe_run(build_and_run)
    if error is not None:
        entries[name] = {"status": "failed", "error": error, "timings": {"wall_s": time.perf_counter() - began}}
        print(f"{name:11s} FAILED ({error['type']}): {error['message'][:300]}")
        continue
    entries[name] = method_entry(result)
    grids[name] = result.grid_probs
    final = entries[name]["final_average_accuracy"]["per_seed"]
    print(f"{name:11s} final average accuracy {final.mean():6.2f} %  (per seed {np.round(final, 2).tolist()})  "
          f"wall {time.perf_counter() - began:.1f} s")

# %% [markdown]
# ## Distance to HMC-NUTS after each task

# %%
from bcl.figure.report import unconverged_tasks
if "hmc" in entries and entries["hmc"]["status"] == "ok":
    for d in entries["hmc"]["hmc"]["per_task"]:
        fs = d["function_space"]
        print(f"HMC-NUTS after task {d['task']}: " + ("no function-space diagnostics (fewer than 4 draws per chain)"
              if fs is None else f"predictive max R̂ {fs['max_rhat']:.3f}, min bulk ESS {fs['min_ess_bulk']:.1f} → "
              + ("converged" if fs["converged"] else "NOT converged")))
    marked = unconverged_tasks({"methods": entries})
    if marked:
        print(f"WARNING: the HMC-NUTS reference is not converged in function space after task(s) {marked} "
              "(R̂ > 1.01 or bulk ESS < 400, or not judged); distances to it after those tasks are marked †.")
if "hmc" in grids:
    for name, probs in grids.items():
        if name != "hmc":
            entries[name]["distance_to_hmc"] = grid_distances(grids["hmc"], probs, kl_floor)
            print(f"{name:11s} TV {np.round(entries[name]['distance_to_hmc']['tv'], 3).tolist()}  "
                  f"KL {np.round(entries[name]['distance_to_hmc']['kl'], 3).tolist()}")

# %% [markdown]
# ## The numbers, written atomically

# %%
numbers = {"run": run, "sequence": sequence, "parameters": settings, "window": window,
           "grid_resolution": grid_resolution, "n_tasks": len(task_sequence), "methods": entries,
           "wall_s": time.perf_counter() - start}
json_path, npz_path = write_numbers(run_folder, numbers, grids)
print(json_path, npz_path)

# %% [markdown]
# ## The figure and the tables

# %%
report = write_report(run_folder, figure_folder, table_folder, task_sequence)
display(Markdown(report["markdown"]))
display(Image(filename=str(figure_folder / f"visualisation_{sequence}.png"), width=1000))

# %% [markdown]
# ## Checks on what was written
#
# Whatever the parameters: every requested method has an entry; the successful ones have accuracies in $[0, 1]$
# for every seed and task, a grid predictive that is a distribution at every point, and (with HMC) distances in
# range; the figure files exist. A method that failed fails the run here, after everything else was written.

# %%
import json
written = json.loads(json_path.read_text())
assert list(written["methods"]) == settings["methods"], written["methods"].keys()
for name, entry in written["methods"].items():
    if entry["status"] == "ok":
        accuracy = np.asarray(entry["test_accuracy"], float)
        assert accuracy.shape == (len(seeds) if name != "hmc" else 1, len(task_sequence), len(task_sequence))
        assert ((accuracy >= 0) & (accuracy <= 1)).all(), name
        np.testing.assert_allclose(grids[name].sum(-1), 1.0, rtol=1e-4)
        for tv in entry.get("distance_to_hmc", {}).get("tv", []):
            assert 0 <= tv <= 1, (name, tv)
if written["methods"].get("hmc", {}).get("status") == "ok":
    for d in written["methods"]["hmc"]["hmc"]["per_task"]:
        fs = d["function_space"]
        assert fs is None or fs["max_rhat"] is None or (  # None: R̂ = ∞, chains that never moved
            fs["max_rhat"] >= 1.0 and fs["min_ess_bulk"] >= 0 and fs["converged"] ==
            (fs["max_rhat"] <= 1.01 and fs["min_ess_bulk"] >= 400)), fs
        if not (fs or {}).get("converged", False):
            assert "†" in report["markdown"], d["task"]
for suffix in (".png", ".pdf"):
    assert (figure_folder / f"visualisation_{sequence}{suffix}").stat().st_size > 0
print({name: entry["status"] for name, entry in written["methods"].items()})
failed = {name: entry["error"]["type"] for name, entry in written["methods"].items() if entry["status"] != "ok"}
if failed:
    raise RuntimeError(f"{len(failed)} method(s) failed: {failed}; their errors are in {json_path}, and the other "
                       "methods' numbers, figure and tables were written.")
