"""The stand-in extractor by the protocol's rule (experiments/protocol.md, version 2): score, choice and ceilings.

Usage: python experiments/choose_extractor.py CANDIDATE=BATCH [CANDIDATE=BATCH ...] [--out experiments/tables]

Each BATCH is a results folder of `experiments/run_table.py` holding the rule's joint cells of that candidate
(`--cells '*-fe/joint' --schedule steps-matched --extractor CANDIDATE`). The score and the choice are
`bcl.table.verdict.extractor_score` and `choose_extractor`; nothing is trained here. Writes
OUT/extractor_choice.{json,md}.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run from a checkout without installing


def candidate_row(candidate: str, batch: Path, rule) -> dict:
    "A candidate's score, its extractor, and each column's joint test accuracy against the paper's."
    from bcl.table.plan import run_name
    from bcl.table.verdict import extractor_score
    folder = batch / run_name("offline", rule.schedule)
    cells = {}
    for column in rule.columns:
        path = folder / column / rule.method / "numbers.json"
        if not path.exists():
            raise SystemExit(f"{path} is missing: run experiments/run_table.py faa --profile offline --schedule "
                             f"{rule.schedule} --cells '{column}/{rule.method}' --extractor {candidate} --out {batch}")
        cells[column] = json.loads(path.read_text())
    score = extractor_score(cells, candidate, rule)
    extractors = {cell["extractor"]["params_sha256"][:8] for cell in cells.values()}
    if len(extractors) != 1:
        raise SystemExit(f"{candidate}: the columns record different extractors {sorted(extractors)}.")
    test = {}
    for column, cell in cells.items():
        rows = [cell["seeds"].index(s) for s in rule.seeds]
        per_seed = [cell["final_average_accuracy"]["per_seed"][r] for r in rows]
        mean = float(np.mean(per_seed))
        test[column] = {"per_seed": per_seed, "mean": mean, "paper": cell["paper"], "gap": mean - cell["paper"],
                        "within": abs(mean - cell["paper"]) <= rule.report_within}
    first = next(iter(cells.values()))
    return {"candidate": candidate, "batch": str(batch), "score": score["score"], "validation": score["columns"],
            "test": test, "extractor": first["extractor"],
            "cell_provenance": {c: cell["provenance"] for c, cell in cells.items()}}


def markdown(record: dict) -> str:
    rule = record["rule"]
    lines = [f"# The stand-in extractor, chosen by the protocol's rule (version {record['protocol_version']})", "",
             f"Score: the mean over {', '.join(rule['columns'])} of the {rule['method']} cell's {rule['split']} final "
             f"average accuracy, seeds {rule['seeds'][0]}-{rule['seeds'][-1]}, under {rule['schedule']}. A challenger "
             f"must beat the incumbent ({rule['incumbent']}) by more than {rule['challenger_margin']} points.", "",
             "| candidate | extractor | pre-training test accuracy | score (validation) | "
             + " | ".join(f"{c} joint test (paper)" for c in rule["columns"]) + " |",
             "|---|---|---|---|" + "---|" * len(rule["columns"])]
    for row in record["candidates"]:
        cells = " | ".join(f"{t['mean']:.2f} ({t['paper']:.2f}, {t['gap']:+.2f}{', within' if t['within'] else ''})"
                           for t in row["test"].values())
        lines.append(f"| `{row['candidate']}` | `{row['extractor']['params_sha256'][:8]}` | "
                     f"{100 * row['extractor']['test_accuracy']:.2f} | {row['score']:.2f} | {cells} |")
    lines += ["", f"**Chosen: `{record['chosen']}`.** "
              + ("Its joint test accuracy lies within "
                 f"{rule['report_within']} points of the paper's on every column."
                 if record["chosen_within"] else
                 f"Its joint test accuracy is not within {rule['report_within']} points of the paper's on every column: "
                 "it is the best stand-in this rule reaches offline, and the ceiling it sets is the joint column above."),
              "", f"Written by `experiments/choose_extractor.py` at {record['provenance']['git']['commit']}."]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", metavar="CANDIDATE=BATCH")
    parser.add_argument("--out", default=str(ROOT / "experiments" / "tables"))
    args = parser.parse_args(argv)
    from bcl.provenance import provenance
    from bcl.table.verdict import choose_extractor, load_protocol
    protocol = load_protocol()
    rule = protocol.extractor
    if rule is None:
        raise SystemExit("The protocol declares no extractor rule (experiments/protocol.json has no 'extractor').")
    batches = dict(run.split("=", 1) for run in args.runs)
    rows = [candidate_row(c, Path(batches[c]), rule) for c in rule.candidates if c in batches]
    chosen = choose_extractor({row["candidate"]: row["score"] for row in rows}, rule)
    record = {"protocol_version": protocol.version, "rule": rule._asdict(), "candidates": rows, "chosen": chosen,
              "chosen_within": all(t["within"] for row in rows if row["candidate"] == chosen for t in row["test"].values()),
              "provenance": provenance()}
    out = Path(args.out)
    (out / "extractor_choice.json").write_text(json.dumps(record, indent=1) + "\n")
    (out / "extractor_choice.md").write_text(markdown(record))
    print(markdown(record))
    return 0


if __name__ == "__main__":
    sys.exit(main())
