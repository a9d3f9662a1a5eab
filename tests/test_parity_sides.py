"""tests/parity/authors_side*.py run in the authors' environment and import *their* package, also called `bcl`.

A rename of our own modules must not reach into those imports: the move of `bcl.train` to `bcl.engine.train` once
rewrote `bcl.train.trainer.svi.replay` (theirs) into `bcl.engine.train.trainer.svi.replay`, and both harnesses then
skipped with "the authors' environment cannot import their code".
"""
import ast
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SIDES = sorted((ROOT / "tests" / "parity").glob("authors_side*.py"))
# the top-level packages of github.com/blackblitz/bcl at b838074 (its bcl/ folder)
AUTHORS_PACKAGES = {"dataops", "dataprep", "evaluate", "feature_extractor", "models", "plot", "report", "train"}


def authors_modules(path: Path) -> set[str]:
    "Every `bcl.…` module a side imports or names in a string (the `--probe` list)."
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "bcl":
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == "bcl"}
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("bcl."):
            found.add(node.value)
    return found


def test_the_sides_import_only_the_authors_packages():
    assert len(SIDES) == 2, SIDES
    for side in SIDES:
        modules = authors_modules(side)
        assert modules, f"{side.name} names no module of the authors' package"
        foreign = sorted(m for m in modules if m.split(".")[1] not in AUTHORS_PACKAGES)
        assert not foreign, f"{side.name} imports modules the authors' package does not have: {foreign}"


def test_the_check_finds_a_renamed_import(tmp_path):
    side = tmp_path / "authors_side_x.py"
    side.write_text('def f():\n    from bcl.engine.train.trainer.svi import replay\n    return "bcl.train.predictor"\n')
    assert authors_modules(side) == {"bcl.engine.train.trainer.svi", "bcl.train.predictor"}


@pytest.mark.skipif(not os.environ.get("BCL_AUTHORS_REPO"), reason="needs the authors' clone ($BCL_AUTHORS_REPO)")
def test_the_sides_modules_exist_in_the_authors_clone():
    repo = Path(os.environ["BCL_AUTHORS_REPO"])
    for side in SIDES:
        for module in authors_modules(side):
            path = repo.joinpath(*module.split("."))
            assert path.with_suffix(".py").is_file() or (path / "__init__.py").is_file(), (side.name, module)


def test_divided_batches_divides_the_minibatches_only():
    sys.path.insert(0, str(ROOT / "tests" / "parity"))
    from authors_parity import BATCH_SETTINGS, divided_batches
    settings = {"batch_size": 16, "coreset_batch": 16, "n_inducing": 32, "coreset_size": 256, "sample_size": 10}
    assert divided_batches(settings, 1) == {}
    assert divided_batches(settings, 4) == {"batch_size": 4, "coreset_batch": 4, "n_inducing": 8}
    assert set(BATCH_SETTINGS) == {"batch_size", "coreset_batch", "n_inducing"}  # the coreset's size is not a batch
    with pytest.raises(SystemExit, match="empty minibatch"):
        divided_batches(settings, 32)
