"""Project the wall time of every cell of Table faa (or of the table beyond the paper, `beyond`) of a profile from
measured seconds per optimiser step.

Usage:
  python experiments/project_table.py faa|beyond [--profile offline|paper|smoke]
                                          [--schedule epochs|steps|matched|steps-matched]
                                          [--measured FILE.jsonl ...] [--out DIR] [--tables DIR]

For every cell whose data is on this machine, the cell's exact optimiser steps (its own sequence and method,
`bcl.table.cell.optimiser_steps`: per seed and grid point; one step updates all seeds and grid points at once) times
seconds per step, plus compilation. Seconds per step come from, in this order:
1. the cell itself, when it has run on the target backend (or nothing on the target backend can stand for it): its
   measured wall time is the projection; a cell run elsewhere (a GPU) is projected by the rules below;
2. another finished cell of the batch with the same network and method, run on the target backend (`--backend`,
   default this machine's: `run_s / steps`, so evaluation after each task and end-of-task work are included);
3. a line of `benchmarks/gpu.py` (`--measured`, same network, method and component noise) on the target backend,
   which times the bare training step; it is multiplied by the overhead ratio of the batch's finished cells to the
   benchmark on the same network (the median over the methods that have both; 1 where none has) and, for a line
   measured with fewer seeds than the cell runs (where all seeds at once do not fit), by the ratio of the seed counts
   (the seeds then run one after another); the benchmark's compile time is added;
4. failing those, a finished cell or a benchmark line on another backend, named with its device.
A cell with none of these has no projection. Finished cells are read from the batch folder and, for cells it lacks,
from the committed ledger `TABLES/faa_<profile>.json` (which keeps each cell's timings and provenance). The table
beyond the paper also takes its seconds per step (rule 2) from the finished cells of that committed Table faa ledger
with the same network (its offline MNIST columns run the same FCNN on MNIST-5k).

Writes TABLES/<table>_<profile>_projection.json (TABLES = experiments/tables), which `experiments/ledger.py` reads: a
cell not run whose projection exceeds `bcl.table.ledger.NEEDS_GPU_HOURS` is listed as "needs a GPU". Prints a summary.
Projections hold for the machine and load of the measurements; the record names both.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run from a checkout without installing


def network_key(column, sequence) -> str:
    "The network name `benchmarks/gpu.py` measures: the setup's model, with the input width for the linear head."
    model = column.setup.model
    return f"{model}{sequence.input_shape[0]}" if model == "linear" else model


def _mixture(method: str) -> bool:
    "Whether `method` (a canonical name) samples a Gaussian mixture (`bcl.paper.MethodInfo.family`)."
    from bcl.paper import METHOD_INFO, Family
    return method in METHOD_INFO and METHOD_INFO[method].family is Family.MIXTURE


def read_measured(paths: list[str]) -> dict[tuple[str, str, str | None], dict]:
    "(network, method, component noise) → the newest `gpu_step` line with a time, from the JSONL files `paths`."
    from bcl.paper import method_name
    lines = {}
    for path in paths:
        for text in Path(path).read_text().splitlines():
            if not text.startswith("{"):
                continue
            line = json.loads(text)
            if line.get("benchmark") != "gpu_step" or not line.get("s_per_step"):
                continue
            method = method_name(line["method"])
            noise = line.get("component_noise") or ("independent" if _mixture(method) else None)
            lines[line["model"], method, noise] = line | {"source_file": str(path)}
    return lines


def _device(provenance: dict | None) -> str:
    if not provenance:
        return "unknown device"
    cpu = provenance.get("cpu") or {}
    if provenance.get("backend") == "cpu":
        return f"{cpu.get('model', 'CPU')}, {cpu.get('cores', '?')} cores"
    return ", ".join(provenance.get("devices") or [provenance.get("backend", "?")])


def timed_cells(cells: dict[str, dict]) -> dict[str, dict]:
    "The finished cells of a ledger that can stand for a measurement: those that recorded their timings."
    return {key: r for key, r in cells.items() if r.get("timings")}


def _backend(numbers: dict) -> str | None:
    return (numbers.get("provenance") or {}).get("backend")


def _on_target(numbers: dict, backend: str, cores: int | None) -> bool:
    """Whether a finished cell measured what a projection on `backend` (with `cores` CPU cores) asks: the same backend,
    and on the CPU the same number of usable cores (a cell pinned to one core of two runs up to twice as long)."""
    if _backend(numbers) != backend:
        return False
    recorded = ((numbers.get("provenance") or {}).get("cpu") or {}).get("cores")
    return backend != "cpu" or cores is None or recorded in (None, cores)


def sources(plans: dict, measured: dict, backend: str, cores: int | None = None) -> tuple[dict, dict, dict]:
    """(network, method, noise) → the source a projection uses (rule 2 before 3 before 4), and the finished cells and
    benchmark lines on `backend` (rules 2 and 3, whose ratio is the overhead); rule 4 is a finished cell, else a
    benchmark line, on another backend or, on the CPU, measured with another number of cores than `cores`."""
    finished, elsewhere = {}, {}
    for (_, method), p in plans.items():
        if p["numbers"]:
            target = finished if _on_target(p["numbers"], backend, cores) else elsewhere
            target[p["network"], method, p["noise"]] = p["numbers"]
    on_target = {k: line for k, line in measured.items() if line.get("backend") == backend}
    for k, line in measured.items():
        if k not in on_target:
            elsewhere.setdefault(k, line)
    return elsewhere | on_target | finished, finished, on_target


def measured_elsewhere(numbers: dict | None, target_source: dict | None, backend: str, cores: int | None) -> bool:
    """Whether a finished cell ran off the target backend (a GPU, or another number of cores) while a finished cell or
    a benchmark line on it can project the cell: then that source projects it, not the cell's own wall time."""
    return numbers is not None and not _on_target(numbers, backend, cores) and target_source is not None


def _from_cell(other: dict, method: str, steps: int, seeds: int) -> dict:
    """Rules 2 and 4: another finished cell's seconds per step (evaluation and end-of-task work included), scaled from
    its number of seeds to `seeds` (the seeds are a vmap axis: a step's work grows with them)."""
    t = other["timings"]
    seed_ratio = seeds / (len(other.get("seeds") or ()) or seeds)  # 1 where the cell did not record its seeds
    s_per_step = t["run_s"] / max(other["optimiser_steps"], 1) * seed_ratio
    return {"source": f"cell {other['column']}/{method}" + (f" × {seed_ratio:g} (it ran {len(other['seeds'])} seeds)"
                                                            if seed_ratio != 1 else ""), "s_per_step": s_per_step,
            "seconds": t.get("compile_s", 0.0) + steps * s_per_step, "device": _device(other.get("provenance"))}


def _from_benchmark(line: dict, ratio: float, seeds: int, steps: int) -> dict:
    "Rules 3 and 4: a benchmark line's seconds per step × the overhead ratio (× the seed ratio), plus compilation."
    seed_ratio = max(1.0, seeds / line.get("seeds", seeds))
    s_per_step = line["s_per_step"] * ratio * seed_ratio
    return {"source": f"benchmarks/gpu.py ({Path(line['source_file']).name}) × overhead {ratio:.2f}"
                      + (f" × {seed_ratio:g} (measured with {line['seeds']} seed)" if seed_ratio > 1 else ""),
            "s_per_step": s_per_step, "overhead": ratio,
            "seconds": line.get("compile_s", 0.0) + steps * s_per_step, "device": _device(line.get("provenance"))}


def table_cells(table: str) -> tuple[tuple, tuple]:
    "(columns, methods) of a table: Table faa's, or those beyond the paper (with FROMP and SFR)."
    from bcl.beyond import BEYOND_COLUMNS
    from bcl.paper import EXTRA_METHODS, FAA_COLUMNS, TABLE_METHODS
    return (BEYOND_COLUMNS, TABLE_METHODS + tuple(EXTRA_METHODS)) if table == "beyond" else (FAA_COLUMNS, TABLE_METHODS)


def project(profile: str, schedule: str, batch: Path, measured: dict, data_dir: str | None = None,
            backend: str = "cpu", kept: dict | None = None, table: str = "faa", borrowed: dict | None = None) -> dict:
    """The projection record of every cell of `profile` whose data is present (see the module's docstring);
    `borrowed`: finished cells of another table, by (network, method, noise), used as rule 2's sources only."""
    from bcl.table.plan import missing_data, plan_cell
    from bcl.table.cell import build_cell_method, check_sequence_for, optimiser_steps, read_cell
    sequences, plans = {}, {}
    columns, methods = table_cells(table)
    for column in columns:
        if missing_data((column, profile), data_dir):
            continue
        for method in methods:
            plan = plan_cell(column, method, profile, schedule=schedule)
            key = (plan.sequence, plan.pretraining)
            if key not in sequences:
                sequences[key] = check_sequence_for(plan, data_dir)  # an extractor column: shapes, not pre-trained
            sequence = sequences[key]
            algorithm, _, _ = build_cell_method(plan, sequence)
            numbers, _ = read_cell(batch / column.key / method)
            numbers = numbers or (kept or {}).get(f"{column.key}/{method}")
            plans[column.key, method] = {"network": network_key(column, sequence), "seeds": len(plan.spec.seeds),
                                         "steps": optimiser_steps(algorithm, sequence),
                                         "noise": plan.spec.component_noise if _mixture(method) else None,
                                         "numbers": numbers}
    cores = os.cpu_count() if backend == "cpu" else None
    chosen, finished, on_target = sources(plans, measured, backend, cores)
    for key, numbers in (borrowed or {}).items():  # another table's cells: a source where this table has none
        if key not in finished and _on_target(numbers, backend, os.cpu_count() if backend == "cpu" else None):
            chosen[key] = numbers
    overhead = {}
    for (network, method, noise), numbers in finished.items():
        line = on_target.get((network, method, noise))
        if line:  # both on the target backend: a cell run on a GPU says nothing about a CPU benchmark's overhead
            seed_ratio = max(1.0, len(numbers["seeds"]) / line.get("seeds", len(numbers["seeds"])))
            cell_step = _timed_s_per_step(numbers) / seed_ratio  # per the benchmark's seeds, as _from_benchmark scales
            overhead.setdefault(network, []).append(cell_step / line["s_per_step"])
    overhead = {network: statistics.median(ratios) for network, ratios in overhead.items()}
    cells = {}
    for (column, method), p in plans.items():
        numbers, key = p["numbers"], (p["network"], method, p["noise"])
        record = {"network": p["network"], "steps": p["steps"], "component_noise": p["noise"]}
        source = chosen.get(key)
        target_source = finished.get(key) or on_target.get(key)
        if measured_elsewhere(numbers, target_source, backend, cores):
            # a cell run elsewhere (e.g. on a GPU) says little of its time here: the target backend's source projects
            record |= (_from_cell(target_source, method, p["steps"], p["seeds"]) if "timings" in target_source else
                       _from_benchmark(target_source, overhead.get(p["network"], 1.0), p["seeds"], p["steps"]))
            record["note"] = (f"ran on {_device(numbers.get('provenance'))} in {numbers['timings']['wall_s']:.0f} s; "
                              f"projected for {backend} from the source above")
        elif numbers is not None:
            t = numbers["timings"]
            step = _timed_s_per_step(numbers)
            untimed = max(0, p["steps"] - round(t["run_s"] / step)) if step else 0  # before a resume's checkpoint
            record |= {"source": "measured cell", "seconds": t["wall_s"] + untimed * step, "s_per_step": step,
                       "device": _device(numbers.get("provenance"))}
            if t.get("tasks_resumed"):
                record |= {"tasks_resumed": t["tasks_resumed"], "untimed_steps": untimed,
                           "note": "resumed from a checkpoint: the tasks before it are charged at the measured s/step"}
        elif source is None:
            record |= {"source": None, "seconds": None, "device": None}
        elif "timings" in source:
            record |= _from_cell(source, method, p["steps"], p["seeds"])
        else:
            record |= _from_benchmark(source, overhead.get(p["network"], 1.0), p["seeds"], p["steps"])
        record["hours"] = None if record["seconds"] is None else record["seconds"] / 3600
        record["finished"] = numbers is not None
        cells[f"{column}/{method}"] = record
    return {"table": table, "profile": profile, "schedule": schedule, "batch": str(batch), "overhead": overhead,
            "cells": cells}


def borrowed_cells(tables: str, name: str) -> dict:
    "The finished cells of the committed Table faa ledger `name`, by (network, method, None), for rule 2."
    from bcl.paper import faa_column
    from bcl.table.ledger import previous_cells
    out = {}
    for key, numbers in timed_cells(previous_cells(tables, name)).items():
        column, method = key.split("/")
        setup = faa_column(column).setup
        if column.endswith("-fe"):
            continue  # the linear head on features is another network
        noise = (numbers.get("parameters") or {}).get("component_noise") if _mixture(method) else None
        out.setdefault((setup.model, method, noise), numbers | {"column": column})
    return out


def _timed_s_per_step(numbers: dict) -> float:
    """Seconds per optimiser step of a finished cell, over the steps its run timed: `timings.s_per_step` (a resumed
    run times only the tasks after its checkpoint), else run_s over all its steps."""
    t = numbers["timings"]
    return t.get("s_per_step") or t["run_s"] / max(numbers["optimiser_steps"], 1)


def main(argv=None) -> int:
    from bcl.table.plan import PROFILES, SCHEDULES
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("table", type=str.lower, choices=("faa", "beyond"))
    parser.add_argument("--profile", type=str.lower, default="offline", choices=tuple(PROFILES))
    parser.add_argument("--schedule", choices=tuple(SCHEDULES), default="epochs")
    parser.add_argument("--measured", nargs="*", default=[], help="JSONL files of benchmarks/gpu.py")
    parser.add_argument("--out", help="results folder of the batch (default results/table)")
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--tables", default=str(ROOT / "experiments" / "tables"))
    parser.add_argument("--backend", default=None, help="the backend to project for: cpu, gpu (default this "
                        "machine's JAX backend)")
    args = parser.parse_args(argv)
    missing = [p for p in args.measured if not Path(p).is_file()]
    if missing:
        parser.error(f"no such file: {', '.join(missing)} (benchmarks/gpu.py --out FILE writes one)")
    from bcl.core import atomic_write_json, results_dir
    from bcl.table.ledger import NEEDS_GPU_HOURS, previous_cells
    from bcl.table.plan import run_name
    from bcl.provenance import provenance
    name = run_name(args.profile, args.schedule)
    batch = (Path(args.out) if args.out else results_dir() / "table") / name
    import jax
    backend = args.backend or jax.default_backend()
    kept = timed_cells(previous_cells(args.tables, name)) if args.table == "faa" else {}
    borrowed = borrowed_cells(args.tables, name) if args.table == "beyond" else None
    record = project(args.profile, args.schedule, batch, read_measured(args.measured), args.data_dir, backend, kept,
                     args.table, borrowed)
    record |= {"backend": backend, "measured_files": args.measured, "needs_gpu_hours": NEEDS_GPU_HOURS,
               "load_average": os.getloadavg(), "provenance": provenance()}
    path = atomic_write_json(Path(args.tables) / f"{args.table}_{name}_projection.json", record)
    cells = record["cells"]
    print("| cell | network | steps | s/step | hours | source |\n|---|---|---|---|---|---|")
    for key, c in cells.items():
        hours = "–" if c["hours"] is None else f"{c['hours']:.2f}"
        s = "–" if c.get("s_per_step") is None else f"{c['s_per_step']:.4f}"
        print(f"| {key} | {c['network']} | {c['steps']} | {s} | {hours} | {c['source']} |")
    done = sum(c["seconds"] or 0 for c in cells.values() if c["finished"])
    todo = [c for c in cells.values() if not c["finished"]]
    print(f"\nfinished: {sum(c['finished'] for c in cells.values())} cells, {done / 3600:.2f} h measured; "
          f"not run: {len(todo)} cells, {sum(c['hours'] or 0 for c in todo):.2f} h projected "
          f"({sum(c['hours'] is None for c in todo)} without a projection), "
          f"{sum((c['hours'] or 0) > NEEDS_GPU_HOURS for c in todo)} above {NEEDS_GPU_HOURS:g} h (needs a GPU)")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
