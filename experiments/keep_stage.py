"""Keep a batch's finished cells as a committed seed stage, so that a later stage joins them on any machine.

Usage: python experiments/keep_stage.py OUT [--profile offline] [--schedule steps-matched] [--cells 'COLUMN/METHOD' ...]

The protocol runs seeds in stages (0-4, 5-9, 10-19; experiments/protocol.md), often in different sessions on different
machines. `merge_stages.py` joins stages from each stage's numbers.json, and a `run_table.py --out` folder lives only on
the machine that ran it: a stage whose folder is lost must be run again. This copies every finished cell's numbers.json
of the batch OUT (not its notebook or checkpoint) into

    experiments/stages/seeds-<first>-<last>/<profile>-<schedule>/<column>/<method>/numbers.json

which `merge_stages.py` takes as a stage folder (a joined cell of seeds 0-9 is kept as seeds-0-9). A cell run with a
setting the headline table does not use, S-FSVI's KL weight (`run_table.py --kl-weighting paper`), is kept apart, under
`experiments/stages/kl-weighting-paper/seeds-<first>-<last>/...`: it never meets the headline cell's stage of the same
seeds, and the headline ledger does not count its seeds. It prints the commit a later stage must run from (the stages
of a cell join only within one bcl code version):

    git worktree add ../stage2 COMMIT
    (cd ../stage2 && python experiments/run_table.py faa --schedule steps-matched --cells 'COLUMN/METHOD' \\
        --first-seed 5 --seeds 5 --out S2)
    python experiments/merge_stages.py experiments/stages/seeds-0-4 S2 --schedule steps-matched --out JOINED

A kept stage is never overwritten: a cell kept before with other numbers is refused (exit 2); one kept with the same
numbers is left as it is.
"""
from __future__ import annotations

import argparse
import fnmatch
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run from a checkout without installing

STAGES = ROOT / "experiments" / "stages"


def stage_name(seeds: list[int]) -> str:
    "The folder of a stage's seeds, `seeds-<first>-<last>`; a stage is a contiguous run of seeds."
    seeds = sorted(seeds)
    if seeds != list(range(seeds[0], seeds[-1] + 1)):
        raise ValueError(f"seeds {seeds} are not one stage (a contiguous run, as --first-seed K --seeds N runs them)")
    return f"seeds-{seeds[0]}-{seeds[-1]}"


def variant_folder(numbers: dict) -> str | None:
    "Where a cell run with a setting the headline table does not use is kept apart (`kl-weighting-paper`), or None."
    kl_weighting = numbers.get("parameters", {}).get("kl_weighting")
    return None if kl_weighting is None else f"kl-weighting-{kl_weighting}"


def keep_cell(numbers: dict, run: str, stages: Path = STAGES) -> tuple[Path, bool]:
    """Copy one finished cell's numbers into `stages` (a variant's cell into its own sub-folder, `variant_folder`);
    (where it is kept, whether it was written now). A `ValueError` says why a cell cannot be kept (already kept with
    other numbers, or seeds that are not one stage)."""
    variant = variant_folder(numbers)
    root = stages if variant is None else stages / variant
    target = root / stage_name(numbers["seeds"]) / run / numbers["column"] / numbers["method"] / "numbers.json"
    text = json.dumps(numbers, indent=1, sort_keys=True) + "\n"
    if target.exists():
        if json.loads(target.read_text()) == json.loads(text):
            return target, False
        raise ValueError(f"{target} holds other numbers for these seeds: a kept stage is never overwritten. Compare the two "
                         "(different code or data?) and keep the new run under another --out.")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)
    return target, True


def main(argv=None, stages: Path = STAGES) -> int:
    from bcl.table.cell import read_cell
    from bcl.table.plan import SCHEDULES, run_name
    parser = argparse.ArgumentParser(description="Keep a batch's finished cells as a committed seed stage.")
    parser.add_argument("out", help="the --out folder of run_table.py (or of merge_stages.py)")
    parser.add_argument("--profile", default="offline")
    parser.add_argument("--schedule", choices=tuple(SCHEDULES), default="epochs")
    parser.add_argument("--cells", nargs="*", help="shell patterns on COLUMN/METHOD (default: every finished cell)")
    args = parser.parse_args(argv)
    run = run_name(args.profile, args.schedule)
    batch = Path(args.out) / run
    if not batch.is_dir():
        parser.error(f"{batch} does not exist: give the --out of a run_table.py run with this --profile and --schedule")
    kept, refused = 0, 0
    for folder in sorted(p for p in batch.glob("*/*") if p.is_dir()):
        name = f"{folder.parent.name}/{folder.name}"
        if args.cells and not any(fnmatch.fnmatch(name, pattern) for pattern in args.cells):
            continue
        numbers, why = read_cell(folder)
        if numbers is None:
            print(f"left out: {name} ({why})")
            continue
        try:
            target, written = keep_cell(numbers, run, stages)
        except ValueError as error:
            print(f"refused: {name}: {error}", file=sys.stderr)
            refused += 1
            continue
        git = numbers["provenance"].get("git") or {}
        dirty = " (its tree was dirty: a later stage cannot rerun this code from the commit)" if git.get("dirty") else ""
        print(f"{'kept' if written else 'already kept'}: {name}, seeds {numbers['seeds'][0]}-{numbers['seeds'][-1]}, "
              f"bcl code {numbers['provenance'].get('bcl_code')}, commit {git.get('commit')}{dirty} -> {target}")
        kept += 1
    return 2 if refused else (0 if kept else 1)


if __name__ == "__main__":
    sys.exit(main())
