"""Join the seed stages of Table faa cells (the protocol's seeds 0-4, 5-9, 10-19) into one batch folder.

Usage: python experiments/merge_stages.py STAGE_OUT STAGE_OUT [...] --out OUT
                                          [--profile offline] [--schedule steps-matched] [--cells 'COLUMN/METHOD' ...]

Each STAGE_OUT is the --out of one `run_table.py` run (a later stage with `--first-seed K --seeds N`); every cell that
all stages finished is joined (`bcl.table.stages.merge_stages`: same cell, same bcl code, disjoint seeds) into
OUT/<profile>-<schedule>/<column>/<method>/numbers.json, which `ledger.py --out OUT` then reads as one run on all the
seeds. Example, stage 2 of one cell:

    python experiments/run_table.py faa --schedule steps-matched --cells 'ci-mnist-fcnn/p-g-vcl' --seeds 5 --out S1
    python experiments/run_table.py faa --schedule steps-matched --cells 'ci-mnist-fcnn/p-g-vcl' --first-seed 5 \
        --seeds 5 --out S2
    python experiments/merge_stages.py S1 S2 --schedule steps-matched --out JOINED
    python experiments/ledger.py faa --schedule steps-matched --out JOINED

A stage run in an earlier session is read from where `keep_stage.py` kept it, `experiments/stages/seeds-0-4`.
"""
import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a checkout without installing


def main(argv=None) -> int:
    from bcl.table.plan import SCHEDULES, run_name
    from bcl.table.stages import merge_stage_folders
    parser = argparse.ArgumentParser(description="Join the seed stages of Table faa cells into one batch folder.")
    parser.add_argument("stages", nargs="+", help="the --out folder of each stage's run_table.py")
    parser.add_argument("--out", required=True, help="where the joined cells go (read it with ledger.py --out)")
    parser.add_argument("--profile", default="offline")
    parser.add_argument("--schedule", choices=tuple(SCHEDULES), default="epochs")
    parser.add_argument("--cells", nargs="*", help="shell patterns on COLUMN/METHOD (default: every cell)")
    args = parser.parse_args(argv)
    name = run_name(args.profile, args.schedule)
    folders = [Path(s) / name for s in args.stages]
    absent = [str(f) for f in folders if not f.is_dir()]
    if len(folders) < 2 or absent:
        parser.error(f"give at least two stage folders that hold {name}/ (absent: {', '.join(absent) or 'none'})")
    try:
        joined, left_out = merge_stage_folders(folders, Path(args.out) / name, args.cells)
    except ValueError as error:
        print(f"merge_stages: {error}", file=sys.stderr)
        return 2
    for line in left_out:
        print(f"left out: {line}")
    print(f"joined {len(joined)} cell(s) into {Path(args.out) / name}: {', '.join(joined) or 'none'}")
    return 0 if joined else 1


if __name__ == "__main__":
    sys.exit(main())
