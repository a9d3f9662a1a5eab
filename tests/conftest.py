"""Shared pytest hooks.

BCL_TEST_FAILURE_LOG=PATH appends each failing test's report to PATH the moment it ends (xdist workers' reports too),
so that a run stopped by a timeout still leaves its tracebacks; pytest's own summary comes only at the very end.
"""
import os


def pytest_runtest_logreport(report):
    path = os.environ.get("BCL_TEST_FAILURE_LOG")
    if path and report.failed and not os.environ.get("PYTEST_XDIST_WORKER"):  # under xdist: the controller writes
        with open(path, "a") as log:
            log.write(f"=== {report.nodeid} ({report.when})\n{report.longreprtext}\n"
                      f"{report.capstdout[-4000:]}\n{report.capstderr[-8000:]}\n")
