"""Shared pytest hooks.

BCL_TEST_FAILURE_LOG=PATH appends each failing test's report to PATH the moment it ends (xdist workers' reports too),
so that a run stopped by a timeout still leaves its tracebacks; pytest's own summary comes only at the very end.

On a machine without an NVIDIA GPU, every test process (notebooks, papermill kernels and Dask workers inherit it) runs
with XLA:CPU's LLVM optimisation off: the tests' programs are small, and optimising them takes longer than it saves
(`benchmarks/notebook_cells.py` measures a notebook either way). BCL_TEST_XLA_FLAGS replaces these flags; set it
empty to test the optimised programs that experiments run.
"""
import os
import shutil

FAST_COMPILE_FLAGS = "--xla_backend_optimization_level=0 --xla_llvm_disable_expensive_passes=true"


def _test_xla_flags() -> str:
    if "BCL_TEST_XLA_FLAGS" in os.environ:
        return os.environ["BCL_TEST_XLA_FLAGS"]
    return "" if shutil.which("nvidia-smi") else FAST_COMPILE_FLAGS


def pytest_configure(config):
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
    "test_table.py::test_representative_subset_and_its_ledger",
    "test_custom_registry.py::test_a_small_data_column_with_its_own_setup_runs_all_13_methods",
    "test_notebook[methods/41_hmc.ipynb]",
    "test_notebook[04_models.ipynb]",
    "test_notebook[90_visualisation.ipynb]",
    "test_notebook[vi/33_linearise.ipynb]",
    "test_notebook[figure/50_visualisation.ipynb]",
    "test_custom_registry.py::test_custom_cells_run_through_the_batch_by_name",
    "test_notebook[data/42_features.ipynb]",
    "test_notebook[vi/34_svi.ipynb]",
)


def _longest_first_rank(item) -> int:
    return next((i for i, name in enumerate(LONGEST_FIRST) if item.nodeid.endswith(name)), len(LONGEST_FIRST))


def pytest_collection_modifyitems(config, items):
    items.sort(key=_longest_first_rank)  # stable: the rest keep their order
