"""Shared pytest hooks.

BCL_TEST_FAILURE_LOG=PATH appends each failing test's report to PATH the moment it ends (xdist workers' reports too),
so that a run stopped by a timeout still leaves its tracebacks; pytest's own summary comes only at the very end.

On a machine without an NVIDIA GPU, every test process (notebooks, papermill kernels and Dask workers inherit it) runs
with XLA:CPU's LLVM optimisation off: the tests' programs are small, and optimising them takes longer than it saves
(`benchmarks/notebook_cells.py` measures a notebook either way). BCL_TEST_XLA_FLAGS replaces these flags; set it
empty to test the optimised programs that experiments run.

Every test process also shares one JAX persistent compilation cache, the folder the batch uses
(`bcl.engine.compilation.compilation_cache_dir`: `$BCL_COMPILATION_CACHE`, by default `results/jax_cache`;
`BCL_COMPILATION_CACHE=off` turns it off). A notebook then reuses the programs another test compiled, and a second
`make test` in the same checkout reuses them all. A cached program is the same executable XLA would compile (the key
holds the program, the XLA flags and the versions), so no check is weakened; a CI that keeps the folder between runs
gets the same saving.
"""
import os
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

FAST_COMPILE_FLAGS = "--xla_backend_optimization_level=0 --xla_llvm_disable_expensive_passes=true"


def _test_xla_flags() -> str:
    if "BCL_TEST_XLA_FLAGS" in os.environ:
        return os.environ["BCL_TEST_XLA_FLAGS"]
    return "" if shutil.which("nvidia-smi") else FAST_COMPILE_FLAGS


def optimised_xla_flags() -> dict:
    """`XLA_FLAGS` without the test flags, for tests whose kernels run more than they compile: the smoke batch's
    32×32 CNN cells train 2.8 times faster optimised (all 14 representative cells: 86 s against 238 s of training,
    167 s against 111 s of compiling; the test 323 s against 375 s, session 35)."""
    test_flags = _test_xla_flags()
    return {"XLA_FLAGS": os.environ.get("XLA_FLAGS", "").replace(test_flags, "").strip()} if test_flags else {}


def _test_compilation_cache() -> dict:
    "JAX's settings for one persistent compilation cache shared by every test process (environment variables)."
    value = os.environ.get("BCL_COMPILATION_CACHE", "").strip()
    if value.lower() in ("off", "0", "none", "false"):
        return {}
    folder = Path(value) if value else Path(os.environ.get("BCL_RESULTS_DIR") or ROOT / "results") / "jax_cache"
    folder.mkdir(parents=True, exist_ok=True)
    # JAX_PERSISTENT_CACHE_ENABLE_XLA_CACHES: by default JAX also turns on XLA's GPU autotuning cache in a subfolder,
    # whose path then enters every program's key, so that a cache copied or moved elsewhere (a CI's kept folder, a
    # fresh clone) never hits (session 35: a copied 5,364-program cache gave no hit). "none" keeps keys path-free.
    return {"BCL_COMPILATION_CACHE": str(folder), "JAX_COMPILATION_CACHE_DIR": str(folder),
            "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0", "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "-1",
            "JAX_PERSISTENT_CACHE_ENABLE_XLA_CACHES": "none"}


def pytest_configure(config):
    os.environ.update(_test_compilation_cache())  # before any test process imports JAX
    flags = _test_xla_flags()
    if flags and flags not in os.environ.get("XLA_FLAGS", ""):
        os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {flags}".strip()


def pytest_runtest_logreport(report):
    path = os.environ.get("BCL_TEST_FAILURE_LOG")
    if path and report.failed and not os.environ.get("PYTEST_XDIST_WORKER"):  # under xdist: the controller writes
        with open(path, "a") as log:
            log.write(f"=== {report.nodeid} ({report.when})\n{report.longreprtext}\n"
                      f"{report.capstdout[-4000:]}\n{report.capstderr[-8000:]}\n")


# The longest tests of a CI run (2-core CPU, `--durations`), started first: under `pytest -n 2` (make test) the other
# process works through the short ones meanwhile, instead of one long test ending the run alone. Names that no longer
# match move nothing.
LONGEST_FIRST = (
    "test_notebooks.py::test_nbdev_test",
    "test_table.py::test_representative_subset_and_its_ledger",
    "test_custom_registry.py::test_a_small_data_column_with_its_own_setup_runs_all_13_methods",
    "test_notebook[methods/41_hmc.ipynb]",
    "test_notebook[04_models.ipynb]",
    "test_notebook[90_visualisation.ipynb]",
    "test_notebook[vi/33_linearise.ipynb]",
    "test_notebook[figure/50_visualisation.ipynb]",
    "test_custom_registry.py::test_custom_cells_run_through_the_batch_by_name",
    "test_notebook[extractor/42_features.ipynb]",
    "test_notebook[vi/34_svi.ipynb]",
)


def _longest_first_rank(item) -> int:
    return next((i for i, name in enumerate(LONGEST_FIRST) if item.nodeid.endswith(name)), len(LONGEST_FIRST))


def pytest_collection_modifyitems(config, items):
    items.sort(key=_longest_first_rank)  # stable: the rest keep their order
