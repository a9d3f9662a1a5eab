"""Run every notebook under nbs/ as one pytest test each, the way `nbdev_test` does.

Cells flagged with a flag from `tst_flags` in settings.ini (`slow`, `gpu`) are skipped unless the flag is
listed in the environment variable BCL_TEST_FLAGS (e.g. `BCL_TEST_FLAGS=slow pytest tests`).
Each notebook runs in its own Python process so that one notebook's state cannot leak into another's.
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


@pytest.mark.parametrize("notebook", _notebooks(), ids=lambda p: str(p.relative_to(NBS)))
def test_notebook(notebook: Path):
    env = {**os.environ, "PYTHONHASHSEED": "0", "TQDM_DISABLE": os.environ.get("TQDM_DISABLE", "1")}
    result = subprocess.run([sys.executable, "-c", RUNNER, str(notebook), *_skip_flags()],
                            capture_output=True, text=True, env=env, cwd=ROOT)
    if result.returncode != 0:
        pytest.fail(f"{notebook.name} failed:\n{result.stdout[-4000:]}\n{result.stderr[-12000:]}", pytrace=False)


def test_every_notebook_is_found():
    names = [p.name for p in _notebooks()]
    assert "00_core.ipynb" in names and "index.ipynb" in names, names
