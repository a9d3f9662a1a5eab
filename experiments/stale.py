"""`make stale`: which committed figures and tables were made by code that has changed since (`bcl.staleness`).

Prints one line per artefact (`current`, `redraw`, `stale` with the modules that changed, `no provenance`) and the
counts; --strict exits 1 when anything is not current; --attest COMMIT --change TEXT --evidence TEXT records a refactor
shown to leave results bit for bit the same in experiments/equivalences.json.
"""
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run from a checkout without installing

from bcl.staleness import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(root=ROOT))
