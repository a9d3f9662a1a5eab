"""The README's Python examples, run exactly as written (a fresh interpreter, the data cached in a temporary folder)."""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def python_blocks() -> list[str]:
    "The fenced ```python blocks of README.md, in order."
    return re.findall(r"^```python\n(.*?)^```", (ROOT / "README.md").read_text(), flags=re.S | re.M)


def run(code: str, tmp_path) -> str:
    env = os.environ | {"BCL_DATA_DIR": str(tmp_path / "data"), "BCL_RESULTS_DIR": str(tmp_path / "results"),
                        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=1800)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_the_first_example_trains_and_summarises(tmp_path):
    "The five-line example under 'From Python' trains on Iris and prints the summary in percent, with units."
    example = python_blocks()[0]
    assert example.startswith("import bcl\n") and len(example.strip().splitlines()) == 5, example
    printed = run(example, tmp_path)
    names = ["final average accuracy", "forgetting", "backward transfer", "forward transfer", "test NLL", "test ECE"]
    lines = [line for line in printed.splitlines() if any(line.startswith(n) for n in names)]
    rows = {n: line[len(n):].split() for n in names for line in lines if line.startswith(n + " ")}
    assert list(rows) == names and all(len(v) == 4 for v in rows.values()), printed
    mean, sd, unit, seeds = rows["final average accuracy"]
    assert 0 <= float(mean) <= 100 and float(sd) >= 0 and unit == "%" and seeds == "3", printed
    assert rows["test NLL"][2] == "nats", printed


def test_the_registration_example_imports(tmp_path):
    "The imports of 'Your own data and method' name real functions."
    blocks = [b for b in python_blocks() if "register_sequence" in b]
    assert blocks, "README lost its registration example"
    run(blocks[0], tmp_path)


TOP_LEVEL = ("nbs/", "bcl/", "experiments/", "benchmarks/", "figures/", "docs/", "scripts/", "tests/")


def named_paths(text: str) -> list[str]:
    """The repository paths a page names in backticks, but what a command writes: paths under results/, paths with a
    placeholder (`<column>`, `SEQ`, `{md,tex}`) and the last column of every table (in README's regeneration table,
    what each command writes; so a layout table's description column goes unchecked too)."""
    text = "\n".join(line.rsplit("|", 2)[0] if line.startswith("|") else line for line in text.splitlines())
    tokens = {t.rstrip(".,;:") for t in re.findall(r"`([^`\s]+)`", text)}
    return sorted(t for t in tokens if t.startswith(TOP_LEVEL) and not re.search(r"[<{]|SEQ", t))


def test_every_path_the_front_page_and_the_guide_name_exists():
    "README and docs/guide.md point readers at files: each must be there (a moved notebook or script breaks this)."
    for page in ("README.md", "docs/guide.md"):
        paths = named_paths((ROOT / page).read_text())
        assert len(paths) >= 10, (page, paths)
        missing = [p for p in paths if not list(ROOT.glob(p.rstrip("/")))]
        assert not missing, f"{page} names paths that do not exist: {missing}"


def test_named_paths_skips_what_commands_write():
    text = ("| what | command | writes |\n| x | `make demo-iris` | `figures/visualisation_cisplit2diris.*` |\n"
            "See `nbs/index.ipynb`, `results/table/x`, `experiments/tables/faa_<profile>.md` and `bcl/`.")
    assert named_paths(text) == ["bcl/", "nbs/index.ipynb"]


COUNT_COLUMNS = {"agree": "agree", "differ, with a measured explanation": "differ, explained",
                 "differ, unexplained": "differ, unexplained", "inconclusive": "inconclusive",
                 "need a GPU": "needs a GPU", "not run yet": "not run"}  # README's header -> the ledger's count


def readme_counts(text: str) -> dict[str, int]:
    "The counts row of README's results table, keyed by the ledger's names of its header's columns."
    table = re.search(r"^\s*(\| agree \| differ, with a measured explanation .*\|)\n\s*\|[-| ]+\|\n\s*(\|.*\|)$", text,
                      re.M)
    assert table, "README has no counts table under its results"
    cells = table.group(1).strip("| ").split(" | ")
    unknown = [cell for cell in cells if cell not in COUNT_COLUMNS]
    assert not unknown, f"README's counts table has columns {unknown}; name them as in {list(COUNT_COLUMNS)}"
    header = [COUNT_COLUMNS[cell] for cell in cells]
    numbers = [int(re.search(r"\d+", cell).group()) for cell in table.group(2).strip("| ").split(" | ")]
    return dict(zip(header, numbers))


def test_the_front_page_counts_are_the_ledgers():
    "README's counts are those the headline ledger wrote (experiments/tables/faa_offline.json): neither drifts alone."
    ledger = json.loads((ROOT / "experiments/tables/faa_offline.json").read_text())["protocol"]["counts"]
    assert readme_counts((ROOT / "README.md").read_text()) == ledger


def test_readme_counts_reads_the_row():
    text = ("  | agree | differ, with a measured explanation | differ, unexplained | inconclusive | need a GPU "
            "| not run yet |\n  |---|---|---|---|---|---|\n"
            "  | **2** | **3** | **0** | **1** | **9** (projected) | **4** |\n")
    assert readme_counts(text) == {"agree": 2, "differ, explained": 3, "differ, unexplained": 0, "inconclusive": 1,
                                   "needs a GPU": 9, "not run": 4}


def sensitivity_count(text: str, pattern: str) -> int:
    found = re.search(pattern, text)
    assert found, f"no count of cells that another schedule would move ({pattern})"
    return int(found.group(1))


def test_the_front_page_sensitivity_count_is_the_ledgers():
    "README's number of cells another schedule would move is the headline ledger's (experiments/tables/faa_offline.md)."
    ledger = sensitivity_count((ROOT / "experiments/tables/faa_offline.md").read_text(),
                               r"\*\*(\d+) cells\*\* would get another outcome")
    readme = sensitivity_count(" ".join((ROOT / "README.md").read_text().split()),
                               r"\*\*Sensitivity\*\* \(the same ledger\): (\d+) cells would get another outcome")
    assert readme == ledger
