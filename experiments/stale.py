"""Which committed figures and tables were made by another version of bcl's code (`make stale`).

Every result file records the code version that made it (`bcl.provenance.provenance()["bcl_code"]`, a hash of the
package's computational modules). A table's JSON under experiments/tables/ carries it; a figure carries it through
the table written with it (figures/visualisation_X.* and hmc_distance_X.* with visualisation_X.json,
figures/faa_P.* with faa_P.json). A ledger keeps finished cells of earlier runs, so it may record several versions.
Prints one line per artefact: `current`, `stale` (no recorded version is the current one) or `no provenance`
(made before result files recorded it). Exit status 0; with --strict, 1 when anything is not current.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def recorded_versions(obj) -> set[str]:
    "Every `bcl_code` value anywhere in a JSON document."
    if isinstance(obj, dict):
        found = {obj["bcl_code"]} if isinstance(obj.get("bcl_code"), str) else set()
        return found.union(*(recorded_versions(v) for v in obj.values()))
    if isinstance(obj, list):
        return set().union(*(recorded_versions(v) for v in obj)) if obj else set()
    return set()


def table_of(figure: Path, tables: Path) -> Path:
    "The table JSON a figure was written with."
    stem = figure.stem.replace("hmc_distance_", "visualisation_")
    return tables / f"{stem}.json"


def artefacts(root: Path = ROOT) -> list[tuple[Path, Path]]:
    "(artefact, the JSON that records its code version) for every committed table and figure."
    tables, figures = root / "experiments" / "tables", root / "figures"
    pairs = [(p, p) for p in sorted(tables.rglob("*.json")) if not p.name.endswith("_explanations.json")]  # inputs
    pairs += [(f, table_of(f, tables)) for f in sorted(figures.glob("*.png"))]
    return pairs


def status(record: Path, current: str) -> tuple[str, set[str]]:
    "('current' | 'stale' | 'no provenance' | 'no table', the versions recorded)."
    if not record.exists():
        return "no table", set()
    versions = recorded_versions(json.loads(record.read_text()))
    if not versions:
        return "no provenance", versions
    return ("current" if current in versions else "stale"), versions


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--strict", action="store_true", help="exit 1 when an artefact is not current")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from bcl.provenance import code_version
    current = code_version()
    print(f"current code version {current}")
    counts: dict[str, int] = {}
    for artefact, record in artefacts():
        state, versions = status(record, current)
        counts[state] = counts.get(state, 0) + 1
        made = f" (made by {', '.join(sorted(versions))})" if versions and state != "current" else ""
        via = "" if artefact == record else f" via {record.relative_to(ROOT)}"
        print(f"{state:<14} {artefact.relative_to(ROOT)}{via}{made}")
    print(", ".join(f"{n} {s}" for s, n in sorted(counts.items())))
    return 1 if args.strict and set(counts) - {"current"} else 0


if __name__ == "__main__":
    sys.exit(main())
