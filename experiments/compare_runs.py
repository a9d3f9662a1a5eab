"""Compare the numbers of two results folders, file by file: every `numbers.json` (and `numbers*.json`) under BEFORE
is matched by its relative path under AFTER, and every number that a run computes (accuracies per seed, test
matrices, NLL, ECE, forgetting, transfer, selected grid points, training points, epochs, optimiser steps) must be
equal: exactly by default, or within --rtol. What records how the run went rather than what it computed (timings,
provenance, content hashes, file paths) is left out. Exit status 1 when a number differs or a file is missing.

    python experiments/compare_runs.py results/before results/after
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

IGNORED = {"timings", "provenance", "content_hash", "created", "wall_s", "run_s", "compile_s", "data_s", "s_per_step",
           "parameters", "folder", "path", "paths", "notebook", "bcl_code", "git", "packages", "data", "figures",
           "tasks_resumed", "code_version", "hash", "files"}


def leaves(obj, prefix: str = ""):
    "(path, value) of every number, string or null in `obj`, skipping the keys of IGNORED."
    if isinstance(obj, dict):
        for key, value in obj.items():
            if key not in IGNORED:
                yield from leaves(value, f"{prefix}.{key}" if prefix else str(key))
    elif isinstance(obj, list):
        for i, value in enumerate(obj):
            yield from leaves(value, f"{prefix}[{i}]")
    else:
        yield prefix, obj


def differences(before: dict, after: dict, rtol: float = 0.0) -> list[str]:
    "Where `after` differs from `before` (a missing or extra number counts)."
    a, b = dict(leaves(before)), dict(leaves(after))
    out = [f"{k}: only before" for k in a.keys() - b.keys()] + [f"{k}: only after" for k in b.keys() - a.keys()]
    for key in sorted(a.keys() & b.keys()):
        x, y = a[key], b[key]
        if isinstance(x, (int, float)) and isinstance(y, (int, float)) and not isinstance(x, bool):
            same = (math.isnan(x) and math.isnan(y)) if (math.isnan(x) or math.isnan(y)) else \
                (x == y if rtol == 0 else math.isclose(x, y, rel_tol=rtol, abs_tol=0.0))
        else:
            same = x == y
        if not same:
            out.append(f"{key}: {x!r} before, {y!r} after")
    return sorted(out)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--rtol", type=float, default=0.0, help="relative tolerance (default 0: bit for bit)")
    args = parser.parse_args(argv)
    files = sorted(p.relative_to(args.before) for p in args.before.rglob("numbers*.json"))
    if not files:
        print(f"no numbers*.json under {args.before}", file=sys.stderr)
        return 1
    failed = 0
    for rel in files:
        other = args.after / rel
        if not other.is_file():
            print(f"MISSING  {rel}")
            failed += 1
            continue
        diff = differences(json.loads((args.before / rel).read_text()), json.loads(other.read_text()), args.rtol)
        n = sum(1 for _ in leaves(json.loads((args.before / rel).read_text())))
        print(f"{'equal   ' if not diff else 'DIFFERS '} {rel} ({n} values)")
        for line in diff[:20]:
            print(f"    {line}")
        failed += bool(diff)
    print(f"{len(files) - failed} of {len(files)} files equal" + (" bit for bit" if args.rtol == 0 else f" within rtol {args.rtol}"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
