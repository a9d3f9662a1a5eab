"""The route of one table cell to its training step: which bcl modules call which on the way.

Runs one smoke-profile cell in this process (`bcl.table.cell.run_cell`, as the cell template does) and records the
call stack each time the training step (`step` of `bcl.engine.train.task_update`) is entered, which happens when
JAX traces it: once for the feature extractor's pre-training on an extractor column, once per compiled task program.
For each distinct stack it prints the bcl modules from `run_cell` down to the step and any module entered twice
(a module that calls into a lower one that calls back into it). Exit status 1 when one is.

    python scripts/cell_route.py [COLUMN METHOD]      (default: di-mnist-fe l-gm-sfsvi; about a minute on 2 cores)

Above `run_cell` the route is fixed by the code: `bcl-table` (`bcl.cli`) plans the cells (`bcl.table.plan`) and hands
them to `bcl.table.batch`, whose Dask task runs the template `nbs/91_table_cell.ipynb` through papermill; the template
rebuilds and plans the cell once (`bcl.table.plan.CellSpec.from_parameters`, `plan_cell`) and calls `run_cell`.
"""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing


def module_route(chain: list[tuple[str, str]]) -> list[str]:
    "The modules of a stack of (module, function) frames, outermost first, with consecutive repeats merged."
    route: list[str] = []
    for module, _ in chain:
        if not route or route[-1] != module:
            route.append(module)
    return route


def main(argv: list[str]) -> int:
    import bcl
    from bcl.table.cell import run_cell
    from bcl.table.plan import plan_cell
    column, method = argv if argv else ("di-mnist-fe", "l-gm-sfsvi")
    package = Path(bcl.__file__).resolve().parent
    stacks: dict[tuple, int] = {}

    def module_of(frame) -> str | None:
        path = Path(frame.f_code.co_filename).resolve()
        return path.relative_to(package).as_posix() if path.is_relative_to(package) else None

    def profile(frame, event, _):
        code = frame.f_code
        if event != "call" or code.co_name != "step" or not code.co_filename.endswith("engine/train.py"):
            return
        chain, f = [], frame
        while f is not None:
            if (module := module_of(f)) is not None:
                chain.append((module, f.f_code.co_name))
            f = f.f_back
        key = tuple(reversed(chain))
        stacks[key] = stacks.get(key, 0) + 1

    with tempfile.TemporaryDirectory() as tmp:
        plan = plan_cell(column, method, "smoke", [0])
        sys.setprofile(profile)
        try:
            run_cell(plan, data_dir=tmp, progress=False)
        finally:
            sys.setprofile(None)
    twice = 0
    for chain, n in stacks.items():
        route = module_route(list(chain))
        again = sorted({m for m in route if route.count(m) > 1})
        twice += bool(again)
        print(f"{column}/{method}: training step reached {n}× through")
        print("  " + " → ".join(route))
        print("  " + " / ".join(f"{m}:{name}" for m, name in chain))
        print("  modules entered twice: " + (", ".join(again) if again else "none"))
    return 1 if twice or not stacks else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
