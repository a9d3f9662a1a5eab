"""Does the extractor's realisation move a cell? Extractor-column cells on a *sibling* extractor beside the committed ones.

Usage: python experiments/diagnose_extractor_realisation.py BATCH [--ledger LEDGER.json] [--out STEM]

The stand-in extractor is pre-trained by one recipe (`experiments/protocol.md`, version 2: FECNN4 on Rendered Letters,
seed 1337), but its parameters depend on the machine's floating-point path: the same code pre-trains other parameters
on another CPU. The committed extractor columns record the parameters they used (their SHA-256); a machine that
pre-trains another realisation can neither rerun those cells nor run the authors' code on their arrays. `BATCH` is a
`bcl-table faa --profile offline --schedule steps-matched` folder of extractor-column cells run on such a sibling. For
each of its cells this writes both realisations' seeds, judged by the protocol's rule, and whether the sibling's mean
lies inside the committed cell's interval (the ledger's test that a sibling's runs bear on the committed cell,
`bcl.table.verdict.AuthorsCodeOnSibling`). Its JSON keys each sibling cell as a ledger does (`cells`), so that
`experiments/diagnose_authors_data.py --regime steps-matched --ledger` this file sets the authors' code on the
sibling's features beside it. Nothing is trained here. Writes experiments/tables/diagnosis_extractor_realisation.{md,json}.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run from a checkout without installing


def sibling_record(numbers: dict) -> dict:
    "A finished cell's numbers.json as the ledger keeps a cell (the fields the diagnoses read), with its provenance."
    faa = numbers["final_average_accuracy"]
    return {"column": numbers["column"], "method": numbers["method"], "mean": faa["mean"], "sd": faa.get("std") or 0.0,
            "n": faa["n"], "per_seed": faa["per_seed"], "seeds": numbers.get("seeds"), "paper": numbers.get("paper"),
            "substitute": numbers.get("substitute"), "extractor": numbers.get("extractor"),
            "parameters": numbers.get("parameters"),
            "test_accuracy_mean": np.mean(numbers["test_accuracy"], axis=0).round(4).tolist(),
            "provenance": {k: numbers["provenance"].get(k) for k in ("bcl_code", "git", "backend", "cpu")}}


def compare(sibling: dict, committed: dict, rule) -> dict:
    "Both realisations judged by the protocol's rule, and whether the sibling's mean lies in the committed interval."
    from bcl.table.verdict import judge
    substitute = bool(committed.get("substitute"))
    ours = judge(committed["mean"], committed.get("sd") or 0.0, committed["n"], committed["paper"], rule, substitute)
    theirs = judge(sibling["mean"], sibling["sd"], sibling["n"], committed["paper"], rule, substitute)
    return {"committed": {"mean": ours.mean, "sd": ours.sd, "n": ours.n, "interval": [ours.low, ours.high],
                          "outcome": str(ours.outcome), "extractor_sha256": (committed.get("extractor") or {}).get(
                              "params_sha256")},
            "sibling": {"interval": [theirs.low, theirs.high], "outcome": str(theirs.outcome),
                        "extractor_sha256": (sibling.get("extractor") or {}).get("params_sha256")},
            "difference": theirs.mean - ours.mean,
            "inside_committed_interval": bool(abs(theirs.mean - ours.mean) <= ours.half_width + ours.margin)}


def markdown(cells: dict, batch: str) -> str:
    from bcl.paper import faa_column, method_info
    first = next(iter(cells.values()))
    lines = ["# The extractor's realisation: extractor-column cells on a sibling extractor", "",
             f"Written by `python experiments/diagnose_extractor_realisation.py {batch}`. The sibling is the protocol's "
             "stand-in extractor pre-trained by the same code and recipe on another machine (parameters "
             f"`{first['sibling']['extractor_sha256'][:8]}` against the committed cells' "
             f"`{first['committed']['extractor_sha256'][:8]}`); both columns ran under the primary regime "
             "(`steps-matched`) on the same seeds. Intervals are the protocol's (`experiments/protocol.md`): a 95 % "
             "prediction interval for one more run, widened by the 3-point margin.", "",
             "| column | method | paper | committed: mean ± sd (seeds), interval | sibling: mean ± sd (seeds), interval | "
             "difference | sibling inside the committed interval |", "|---|---|---|---|---|---|---|"]
    for key, c in cells.items():
        lo, hi = c["committed"]["interval"]
        slo, shi = c["sibling"]["interval"]
        lines.append(f"| {faa_column(c['column']).label} | {method_info(c['method']).label} | {c['paper']:.2f} | "
                     f"{c['committed']['mean']:.2f} ± {c['committed']['sd']:.2f} ({c['committed']['n']}), [{lo:.2f}, "
                     f"{hi:.2f}] {c['committed']['outcome']} | {c['mean']:.2f} ± {c['sd']:.2f} ({c['n']}), "
                     f"[{slo:.2f}, {shi:.2f}] {c['sibling']['outcome']} | {c['difference']:+.2f} | "
                     f"{'yes' if c['inside_committed_interval'] else 'no'} |")
    moves = [abs(c["difference"]) for c in cells.values()]
    lines += ["", f"The largest move between the two realisations: {max(moves):.2f} points.", ""]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("batch", type=Path, help="a run_table --out folder of extractor-column cells (steps-matched)")
    parser.add_argument("--ledger", type=Path, default=ROOT / "experiments/tables/faa_offline-steps-matched.json",
                        help="the committed cells (default: the primary regime's ledger)")
    parser.add_argument("--out", default=str(ROOT / "experiments/tables/diagnosis_extractor_realisation"))
    args = parser.parse_args(argv)
    from bcl.paper import FAA_PUBLISHED
    from bcl.provenance import provenance
    from bcl.table.verdict import load_protocol
    rule = load_protocol().rule
    committed = json.loads(args.ledger.read_text())["cells"]
    folder = args.batch / "offline-steps-matched" if (args.batch / "offline-steps-matched").is_dir() else args.batch
    cells = {}
    for path in sorted(folder.glob("*/*/numbers.json")):
        record = sibling_record(json.loads(path.read_text()))
        key = f"{record['column']}/{record['method']}"
        if record["parameters"]["schedule"] != "steps-matched" or key not in committed:
            parser.error(f"{path}: not a steps-matched cell of the committed ledger {args.ledger}")
        record["paper"] = FAA_PUBLISHED[record["column"]][record["method"]]
        record |= compare(record, committed[key] | {"paper": record["paper"]}, rule)
        if record["sibling"]["extractor_sha256"] in (None, record["committed"]["extractor_sha256"]):
            parser.error(f"{path}: its extractor is not recorded or is the committed one; nothing to compare")
        cells[key] = record
    if not cells:
        parser.error(f"no finished cells under {folder}")
    text = markdown(cells, str(args.batch))
    Path(args.out + ".md").write_text(text)
    Path(args.out + ".json").write_text(json.dumps({"cells": cells, "provenance": provenance()}, indent=1) + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
