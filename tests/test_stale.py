"""experiments/stale.py: which committed figures and tables another code version made."""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "experiments"))
import stale  # noqa: E402


def test_versions_are_found_anywhere_in_a_document():
    doc = {"provenance": {"bcl_code": "a"}, "cells": [{"provenance": {"bcl_code": "b"}}, {"x": 1}], "bcl_code": 3}
    assert stale.recorded_versions(doc) == {"a", "b"}
    assert stale.recorded_versions([]) == set()


def test_each_artefact_is_judged_by_its_table(tmp_path):
    tables, figures = tmp_path / "experiments" / "tables", tmp_path / "figures"
    tables.mkdir(parents=True), figures.mkdir()
    (tables / "visualisation_iris.json").write_text(json.dumps({"provenance": {"bcl_code": "old"}}))
    (tables / "faa_offline.json").write_text(json.dumps({"cells": [{"bcl_code": "old"}, {"bcl_code": "new"}]}))
    (tables / "faa_offline_explanations.json").write_text("{}")  # an input, not a result
    (tables / "legacy.json").write_text(json.dumps({"mean": 1.0}))
    for name in ("visualisation_iris.png", "hmc_distance_iris.png", "faa_offline.png", "orphan.png"):
        (figures / name).write_bytes(b"")
    found = {a.name: stale.status(r, "new")[0] for a, r in stale.artefacts(tmp_path)}
    assert found == {"visualisation_iris.json": "stale", "faa_offline.json": "current", "legacy.json": "no provenance",
                     "visualisation_iris.png": "stale", "hmc_distance_iris.png": "stale", "faa_offline.png": "current",
                     "orphan.png": "no table"}
