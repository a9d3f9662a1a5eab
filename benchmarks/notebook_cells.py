"""Where a notebook's test time goes: run notebooks the way `nbdev_test` does and print each code cell's seconds.

    python benchmarks/notebook_cells.py nbs/methods/41_hmc.ipynb [more notebooks] [--top 8] [--flags slow]

Cells flagged with `tst_flags` (settings.ini) are skipped unless named with --flags, as under `make test`. For each
notebook: its total, its import cell, and the `--top` slowest cells with their first line. Environment variables
(e.g. XLA_FLAGS) apply as they would under pytest, so two runs compare settings.
"""
import argparse
import configparser
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def skip_flags(forced: list[str]) -> set[str]:
    config = configparser.ConfigParser(delimiters=["="])
    config.read(ROOT / "settings.ini")
    return set(config["DEFAULT"].get("tst_flags", "").replace("|", " ").split()) - set(forced)


def time_cells(notebook: Path, flags: set[str]) -> list[tuple[float, int, str]]:
    "(seconds, cell index, first line) for each executed code cell of `notebook`; raises on the first failing cell."
    from execnb.shell import CaptureShell
    from fastcore.foundation import working_directory
    from nbdev.frontmatter import FrontmatterProc
    from nbdev.process import NBProcessor

    os.environ["IN_TEST"] = "1"
    nb = NBProcessor(notebook, procs=FrontmatterProc, process=True).nb
    shell, timings, started = CaptureShell(notebook), [], {}

    def skip(cell) -> bool:
        directives = getattr(cell, "directives_", {}) or {}
        if (cell.cell_type != "code" or "nbdev_export(" in cell.source
                or directives.get("eval:", [""])[0].lower() == "false" or flags & directives.keys()):
            return True
        started["t"] = time.perf_counter()
        return False

    def record(cell):
        first = next((line for line in cell.source.splitlines() if line.strip() and not line.startswith("#|")), "")
        timings.append((time.perf_counter() - started["t"], cell.idx_, first[:90]))

    with working_directory(notebook.parent):
        shell.run_all(nb, exc_stop=True, preproc=skip, postproc=record)
    return timings


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("notebooks", nargs="+", type=Path)
    parser.add_argument("--top", type=int, default=8, help="slowest cells to list per notebook (default 8)")
    parser.add_argument("--flags", nargs="*", default=[], help="tst_flags to run rather than skip (e.g. slow)")
    args = parser.parse_args(argv)
    for notebook in args.notebooks:
        if not notebook.exists():
            sys.exit(f"No notebook {notebook}: give paths such as nbs/methods/41_hmc.ipynb.")
        start = time.perf_counter()
        timings = time_cells(notebook.resolve(), skip_flags(args.flags))
        total = time.perf_counter() - start
        print(f"{notebook}: {total:.1f} s in {len(timings)} code cells (XLA_FLAGS={os.environ.get('XLA_FLAGS', '')!r})")
        if timings:
            print(f"  first cell {timings[0][0]:6.1f} s  {timings[0][2]}")
        for seconds, index, first in sorted(timings, reverse=True)[:args.top]:
            print(f"  cell {index:3d} {seconds:6.1f} s  {first}")


if __name__ == "__main__":
    main()
