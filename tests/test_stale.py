"""bcl.staleness (`make stale`): which committed figures and tables another code version made."""
import json
from pathlib import Path

import pytest

from bcl import staleness as stale


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


def test_a_producer_runs_the_modules_it_imports_and_no_others():
    svi = stale.module_closure(stale.producer_of(stale.ROOT / "experiments/tables/svi/disinusoid.json"))
    assert {"vi/svi.py", "vi/mixture.py", "engine/train.py", "core.py"} <= svi  # through experiments/common.py too
    assert not {"figure/report.py", "methods/hmc.py", "table/cell.py"} & svi
    visualisation = stale.module_closure(stale.producer_of(stale.ROOT / "experiments/tables/visualisation_x.json"))
    assert {"figure/report.py", "methods/hmc.py", "vi/svi.py"} <= visualisation
    assert "table/cell.py" not in visualisation
    cell = stale.module_closure(stale.producer_of(stale.ROOT / "experiments/tables/faa_offline.json"))
    assert {"table/cell.py", "serialise.py", "vi/svi.py", "methods/map.py"} <= cell
    assert not {"figure/report.py", "figure/visualisation.py", "methods/hmc.py"} & cell  # plotting, HMC: not a cell's
    assert stale.producer_of(stale.ROOT / "experiments/tables/unknown.json") is None


def test_the_version_hash_is_the_one_provenance_records():
    from bcl.provenance import OUTSIDE_COMPUTATION, code_version
    assert stale.tree_version(stale.working_modules(), OUTSIDE_COMPUTATION) == code_version()


def _commit(repo, files):
    import subprocess
    for name, text in files.items():
        (repo / "bcl" / name).write_text(text)
    subprocess.run(["git", "-C", str(repo), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "c"],
                   check=True)
    return stale.tree_version({n: (repo / "bcl" / n).read_bytes() for n in sorted(files)}, ())


def test_an_older_version_is_current_where_the_modules_it_uses_are_unchanged(tmp_path):
    import subprocess
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "bcl").mkdir()
    old = _commit(tmp_path, {"a.py": "x = 1\n", "b.py": "y = 1\n"})
    new = _commit(tmp_path, {"a.py": "x = 1\n", "b.py": "y = 2\n"})
    known = stale.history_versions({old, "dirty"}, (), tmp_path)
    assert set(known) == {old}
    now = {n: stale.blob_id((tmp_path / "bcl" / n).read_bytes()) for n in ("a.py", "b.py")}
    record = tmp_path / "r.json"
    record.write_text(json.dumps({"provenance": {"bcl_code": old}}))
    assert stale.status(record, new, {"a.py"}, known, now)[0] == "current"
    assert stale.status(record, new, {"a.py", "b.py"}, known, now)[::2] == ("stale", ["b.py"])
    assert stale.status(record, new, None, known, now)[::2] == ("stale", ["b.py"])
    record.write_text(json.dumps({"provenance": {"bcl_code": "dirty"}}))
    assert stale.status(record, new, {"a.py"}, known, now)[0] == "stale"


def test_a_result_on_another_extractors_features_is_stale(tmp_path):
    tables = tmp_path / "experiments" / "tables"
    (tables / "svi").mkdir(parents=True)
    new, old = "9" * 64, "1" * 64

    def write(name, doc):
        (tables / name).write_text(json.dumps(doc))
        return tables / name

    same = write("diagnosis_ewc_ci-mnist-fe.json", {"extractor": {"params_sha256": new}, "rows": []})
    other = write("svi/cisplitmnist5k_fe.json", {"extractor": {"params_sha256": old}})
    unrecorded = write("diagnosis_ci_mnist5k_fe.json", {"rows": []})
    mixed = write("faa_offline.json", {"cells": {"a": {"extractor": {"params_sha256": new}},
                                                 "b": {"extractor": {"params_sha256": old}}, "c": {"extractor": None}}})
    no_features = write("faa_offline-steps.json", {"cells": {"c": {"extractor": None}}})
    authors = write("diagnosis_authors_mnist5k.json", {"rows": [{"extractor_sha256": new}, {"extractor_sha256": None}]})
    iris = write("svi/cisplit2diris.json", {"rows": []})
    assert stale.recorded_extractors(json.loads(mixed.read_text())) == {new, old}
    assert stale.extractor_problem(same, new, tables) == "" and stale.extractor_problem(authors, new, tables) == ""
    assert stale.extractor_problem(other, new, tables) == "made on extractor 11111111, not the cached 99999999"
    assert stale.extractor_problem(mixed, new, tables).startswith("made on extractor 11111111")
    assert stale.extractor_problem(unrecorded, new, tables) == "its extractor is not recorded"
    assert stale.extractor_problem(no_features, new, tables) == "" and stale.extractor_problem(iris, new, tables) == ""
    assert stale.extractor_problem(other, None, tables) == ""  # nothing cached: not judged


def _history(tmp_path, *trees):
    "A git repository whose commits hold `trees` in turn: (versions, {version: {path: blob}}, the last tree's blobs)."
    import subprocess
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "bcl").mkdir()
    versions = [_commit(tmp_path, tree) for tree in trees]
    known = stale.history_versions(set(versions), (), tmp_path)
    now = {n: stale.blob_id((tmp_path / "bcl" / n).read_bytes()) for n in trees[-1]}
    return versions, known, now


def test_a_recorded_refactor_keeps_what_it_did_not_change_current(tmp_path):
    (old, refactored, later), known, now = _history(
        tmp_path, {"a.py": "x = 1\n", "b.py": "y = 1\n"}, {"a.py": "x = (1)\n", "b.py": "y = 1  # moved\n"},
        {"a.py": "x = 2\n", "b.py": "y = 1  # moved\n"})
    blobs = lambda version: known[version]
    refactor = stale.Equivalence("moved", {p: (blobs(old)[p], blobs(refactored)[p]) for p in ("a.py", "b.py")}, "cmp")
    record = tmp_path / "r.json"
    record.write_text(json.dumps({"provenance": {"bcl_code": old}}))
    after_refactor = blobs(refactored)
    assert stale.status(record, refactored, {"a.py", "b.py"}, known, after_refactor, [refactor])[::3] == \
        ("current", ["moved"])
    assert stale.status(record, refactored, {"a.py", "b.py"}, known, after_refactor)[::2] == ("stale", ["a.py", "b.py"])
    # a later change to a module it uses is not covered
    assert stale.status(record, later, {"a.py", "b.py"}, known, now, [refactor])[::2] == ("stale", ["a.py"])
    assert stale.status(record, later, {"b.py"}, known, now, [refactor])[::3] == ("current", ["moved"])
    # a refactor applies only where the version holds every module it names at its blob before
    partial = stale.Equivalence("partial", {"a.py": (blobs(old)["a.py"], blobs(refactored)["a.py"]),
                                            "b.py": (blobs(refactored)["b.py"], blobs(old)["b.py"])}, "cmp")
    assert stale.status(record, refactored, {"a.py", "b.py"}, known, after_refactor, [partial])[0] == "stale"
    # refactors chain, in order; a file a refactor removes (None after) is gone from the version
    first = stale.Equivalence("a", {"a.py": (blobs(old)["a.py"], blobs(refactored)["a.py"]), "c.py": (None, "0" * 40)},
                              "cmp")
    second = stale.Equivalence("b", {"b.py": (blobs(old)["b.py"], blobs(refactored)["b.py"]), "c.py": ("0" * 40, None)},
                               "cmp")
    assert stale.apply_equivalences(blobs(old), [second, first]) == (after_refactor, ["a", "b"])
    # only the refactors that changed a module the artefact uses are named
    elsewhere = stale.Equivalence("elsewhere", {"c.py": ("1" * 40, "2" * 40)}, "cmp")
    old_with_c = {**blobs(old), "c.py": "1" * 40}
    known_c = {**known, old: old_with_c}
    assert stale.status(record, refactored, {"a.py", "b.py"}, known_c, {**after_refactor, "c.py": "2" * 40},
                        [refactor, elsewhere])[::3] == ("current", ["moved"])


def test_equivalences_are_checked_when_read(tmp_path):
    path = tmp_path / "equivalences.json"
    assert stale.load_equivalences(path) == []
    good = {"change": "moved", "modules": {"a.py": ["1" * 40, "2" * 40]}, "evidence": "compare_runs: 13 of 13 equal"}
    bad = [{**good, "evidence": " "}, {**good, "modules": {"a.py": ["1" * 40]}},
           {**good, "modules": {"a.py": ["1" * 40, "1" * 40]}}, {**good, "modules": {}}, {**good, "modules": {"a": ["x", None]}}]
    for entry in bad:
        path.write_text(json.dumps([good, entry]))
        with pytest.raises(ValueError, match="entry 1: .*--attest"):
            stale.load_equivalences(path)
    path.write_text(json.dumps([good]))
    assert stale.load_equivalences(path) == [stale.Equivalence("moved", {"a.py": ("1" * 40, "2" * 40)}, good["evidence"])]
    for equivalence in stale.load_equivalences():  # the repository's own
        assert equivalence.evidence.strip() and equivalence.modules


def test_an_attestation_names_the_modules_changed_since_a_commit(tmp_path):
    import subprocess
    _history(tmp_path, {"a.py": "x = 1\n", "b.py": "y = 1\n", "c.py": "z = 1\n"})
    first = subprocess.run(["git", "-C", str(tmp_path), "rev-parse", "HEAD"], capture_output=True, text=True,
                           check=True).stdout.strip()
    (tmp_path / "bcl" / "a.py").write_text("x = (1)\n")
    (tmp_path / "bcl" / "c.py").unlink()
    (tmp_path / "bcl" / "d.py").write_text("w = 1\n")
    entry = stale.attestation(first, "moved", "cmp", ("b.py",), tmp_path)
    blob = lambda text: stale.blob_id(text.encode())
    assert entry["modules"] == {"a.py": [blob("x = 1\n"), blob("x = (1)\n")], "c.py": [blob("z = 1\n"), None],
                                "d.py": [None, blob("w = 1\n")]}
    with pytest.raises(ValueError, match="nothing to attest"):
        stale.attestation(first, "moved", "cmp", ("a.py", "c.py", "d.py"), tmp_path)


def test_a_drawing_change_asks_for_a_redraw_not_a_run(tmp_path):
    from bcl.provenance import DRAWING
    tables = tmp_path / "experiments" / "tables"
    (tables / "visualisation_iris").mkdir(parents=True)
    record = tables / "visualisation_iris.json"
    kept = tables / "visualisation_iris" / "numbers.json"
    assert stale.drawn(record, tables) and not stale.drawn(kept, tables)  # the kept numbers are judged as numbers
    assert not stale.drawn(tables / "faa_offline.json", tables)  # a ledger without a figure
    (tmp_path / "figures").mkdir()
    (tmp_path / "figures" / "faa_offline.png").write_bytes(b"")
    assert stale.drawn(tables / "faa_offline.json", tables) and not stale.drawn(tables / "faa_offline_projection.json", tables)
    record.write_text(json.dumps({"provenance": {"bcl_code": "new"}, "drawing": {"drawing_code": "old"}}))
    assert stale.status(record, "new")[0] == "current"  # the numbers
    assert stale.drawing_status(record, "old") == "current"
    assert stale.drawing_status(record, "now") == "redraw"
    record.write_text(json.dumps({"provenance": {"bcl_code": "new"}}))  # drawn before drawings were recorded
    assert stale.drawing_status(record, "now") == "redraw"
    # the drawing modules are in what the visualisation runs, and judged apart from its numbers
    visualisation = stale.module_closure(stale.producer_of(stale.ROOT / "experiments/tables/visualisation_x.json"))
    assert "figure/report.py" in DRAWING and "figure/report.py" in visualisation
    assert "serialise.py" in visualisation  # the numbers' writer is computing
    assert "figure/ledger_figure.py" in DRAWING  # Table faa's figure, drawn from the ledger's JSON
    cells = stale.module_closure(stale.producer_of(stale.ROOT / "experiments/tables/faa_offline.json"))
    assert not set(DRAWING) & cells  # the ledger draws nothing: a drawing change leaves the cells current
