"""experiments/pending_cells.py: the protocol's remaining runs grouped into run_table.py commands."""
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "experiments"))
import pending_cells  # noqa: E402


def ledger(to_run: dict) -> dict:
    "A headline ledger's JSON with one verdict per cell: 'column/method' → (status, seeds still to run)."
    return {"cells": {cell: {"verdict": {"status": status, "regime": "steps-matched", "to_run": seeds}}
                      for cell, (status, seeds) in to_run.items()}}


def test_cells_group_by_span_and_kept_code(tmp_path):
    kept = tmp_path / "seeds-10-14/offline-steps-matched/di-mnist-fcnn/si/numbers.json"
    kept.parent.mkdir(parents=True)
    kept.write_text(json.dumps({"provenance": {"bcl_code": "abc", "git": {"commit": "1234567890"}}}))
    record = ledger({"ci-mnist-cnn/er": ("needs a GPU", [0, 1, 2, 3, 4]), "di-mnist-cnn/er": ("needs a GPU", [0, 1, 2, 3, 4]),
                     "di-mnist-fcnn/si": ("inconclusive", list(range(10)) + list(range(15, 20))),
                     "ci-mnist-fcnn/er": ("agrees", [])})
    groups = pending_cells.pending_groups(record, "offline", stages=tmp_path)
    assert [(g.first, g.seeds, g.cells, g.code) for g in groups] == [
        (0, 5, ("ci-mnist-cnn/er", "di-mnist-cnn/er"), None), (0, 10, ("di-mnist-fcnn/si",), "abc"),
        (15, 5, ("di-mnist-fcnn/si",), "abc")]
    text = pending_cells.command(groups[2], "offline", "OUT")
    assert "--first-seed 15 --seeds 5 --cells 'di-mnist-fcnn/si' --out OUT-steps-matched-15-19" in text
    assert "from a commit of bcl code abc (e.g. 1234567)" in text and "1 cell, verdict inconclusive (1)" in text
    assert [g.cells for g in pending_cells.pending_groups(record, "offline", {"inconclusive"}, tmp_path)] == [
        ("di-mnist-fcnn/si",), ("di-mnist-fcnn/si",)]


def test_the_committed_ledger_lists_every_cell_that_needs_a_gpu():
    "Every verdict 'needs a GPU' in the committed headline ledger has seeds to run, and the script prints them."
    committed = json.loads((ROOT / "experiments/tables/faa_offline.json").read_text())
    waiting = {c for c, r in committed["cells"].items() if (r.get("verdict") or {}).get("status") == "needs a GPU"}
    done = subprocess.run([sys.executable, str(ROOT / "experiments/pending_cells.py"), "--json", "--status",
                           "needs a GPU"], capture_output=True, text=True, check=True)
    listed = {c for line in done.stdout.splitlines() for c in json.loads(line)["cells"]}
    assert listed == waiting and waiting


def test_an_unknown_status_is_refused():
    done = subprocess.run([sys.executable, str(ROOT / "experiments/pending_cells.py"), "--status", "need a GPU"],
                          capture_output=True, text=True)
    assert done.returncode == 2 and "no verdict has the status ['need a GPU']" in done.stderr


def test_cheapest_first_orders_cells_and_groups_by_projected_hours():
    groups = [pending_cells.Group("steps-matched", 0, 10, None, None, ("a/x", "b/y"), ("needs a GPU",) * 2),
              pending_cells.Group("steps-matched", 0, 5, None, None, ("c/z", "d/w", "e/v"), ("needs a GPU",) * 3)]
    hours = {"a/x": {"hours": 9.0}, "b/y": {"hours": 2.0}, "c/z": {"hours": 3.0}, "d/w": {"hours": 1.0}}
    ordered = pending_cells.cheapest_first(groups, hours)
    assert [g.cells for g in ordered] == [("b/y", "a/x"), ("d/w", "c/z", "e/v")]  # e/v: no projection, last; 11 h < inf
    ordered = pending_cells.cheapest_first(groups, hours | {"e/v": {"hours": 1.0}})
    assert [g.cells for g in ordered] == [("d/w", "e/v", "c/z"), ("b/y", "a/x")]  # 5 h before 11 h
