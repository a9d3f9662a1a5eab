"""Run every notebook under nbs/ as one pytest test each, the way `nbdev_test` does.

Cells flagged with a flag from `tst_flags` in settings.ini (`slow`, `gpu`) are skipped unless the flag is
listed in the environment variable BCL_TEST_FLAGS (e.g. `BCL_TEST_FLAGS=slow pytest tests`).
Each notebook runs in its own Python process so that one notebook's state cannot leak into another's.

`make test` sets BCL_NOTEBOOKS=nbdev_test: the notebooks then run once, through `nbdev_test --n_workers 2` itself
(`test_nbdev_test`), as a user runs them: each worker process runs many notebooks one after another, so a registry
or any other state that a notebook leaves behind reaches the next one and fails there.
"""
import configparser
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NBS = ROOT / "nbs"


def _skip_flags() -> list[str]:
    config = configparser.ConfigParser(delimiters=["="])
    config.read(ROOT / "settings.ini")
    flags = config["DEFAULT"].get("tst_flags", "").replace("|", " ").split()
    forced = set(os.environ.get("BCL_TEST_FLAGS", "").replace(",", " ").split())
    return [f for f in flags if f not in forced]


def _notebooks() -> list[Path]:
    found = []
    for path in sorted(NBS.rglob("*.ipynb")):
        parts = path.relative_to(NBS).parts
        if any(p.startswith(("_", ".")) for p in parts):
            continue
        found.append(path)
    return found


RUNNER = """
import sys
from pathlib import Path
from nbdev.test import test_nb
ok, seconds = test_nb(Path(sys.argv[1]), skip_flags=sys.argv[2:], showerr=True)
print(f"{sys.argv[1]}: {'passed' if ok else 'FAILED'} in {seconds:.1f} s")
sys.exit(0 if ok else 1)
"""


TOGETHER = os.environ.get("BCL_NOTEBOOKS", "") == "nbdev_test"


@pytest.mark.skipif(TOGETHER, reason="BCL_NOTEBOOKS=nbdev_test: the notebooks run in test_nbdev_test")
@pytest.mark.parametrize("notebook", _notebooks(), ids=lambda p: str(p.relative_to(NBS)))
def test_notebook(notebook: Path):
    env = {**os.environ, "PYTHONHASHSEED": "0", "TQDM_DISABLE": os.environ.get("TQDM_DISABLE", "1")}
    result = subprocess.run([sys.executable, "-c", RUNNER, str(notebook), *_skip_flags()],
                            capture_output=True, text=True, env=env, cwd=ROOT)
    if result.returncode != 0:
        pytest.fail(f"{notebook.name} failed:\n{result.stdout[-4000:]}\n{result.stderr[-12000:]}", pytrace=False)


@pytest.mark.skipif(not TOGETHER, reason="set BCL_NOTEBOOKS=nbdev_test (make test does) to run nbdev_test itself")
def test_nbdev_test():
    "Every notebook through `nbdev_test --n_workers 2`, many notebooks to a process; and no frontmatter warning."
    env = {**os.environ, "PYTHONHASHSEED": "0", "TQDM_DISABLE": os.environ.get("TQDM_DISABLE", "1")}
    forced = os.environ.get("BCL_TEST_FLAGS", "").replace(",", " ")
    command = [str(Path(sys.executable).parent / "nbdev_test"), "--n_workers", "2", "--timing"]
    result = subprocess.run(command + (["--flags", forced] if forced.strip() else []), capture_output=True, text=True,
                            env=env, cwd=ROOT)
    output = result.stdout + result.stderr
    assert result.returncode == 0, f"nbdev_test failed:\n{output[-16000:]}"
    assert "Failed to create YAML dict" not in output, output[-4000:]
    print(result.stdout[-3000:])  # --timing: the slowest notebooks


def test_every_notebook_is_found():
    names = [p.name for p in _notebooks()]
    assert "00_core.ipynb" in names and "index.ipynb" in names, names
