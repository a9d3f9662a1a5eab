"""Which committed figures and tables were made by code that has changed since (`make stale`).

Every result file records the code version that made it (`bcl.provenance.provenance()["bcl_code"]`, a hash of the
package's computational modules). A table's JSON under experiments/tables/ carries it; a figure carries it through
the table written with it (figures/visualisation_X.* and hmc_distance_X.* with visualisation_X.json,
figures/faa_P.* with faa_P.json). A ledger keeps finished cells of earlier runs, so it may record several versions.

A result depends only on the modules its producer runs: `PRODUCERS` names the files that compute each artefact, and
`module_closure` follows every `bcl` import from them (lazy imports inside functions included, and `bcl.X`
attribute paths). A recorded version other than the current one is looked up in git history (the commit whose
`bcl/` hashes to it, as `bcl.provenance.code_version` hashes); the artefact is still current when each module of
its closure is byte for byte what it was in that version. A version not found in history (a dirty tree) counts as
changed. So a change to the plotting code leaves the table cells current, and a change to the cell code leaves the
visualisations current.

A refactor shown to leave results bit for bit the same is recorded in experiments/equivalences.json: the modules it
changed, each module's blob before and after, and the evidence (the command and what it compared). Judging a recorded
version, each such refactor whose every module the version holds at its blob before counts as applied, in the file's
order, and the version then holds the blobs after; an artefact current only through them says which. Record one with
`--attest COMMIT --change TEXT --evidence TEXT` (the modules of bcl/ that differ between COMMIT and the working tree).

Drawing is judged apart from computing. A report's tables JSON (visualisation_X.json, and the figures drawn with it)
records the run's provenance for its numbers and `bcl.provenance.drawing_record()` for its pictures; the modules that
only draw (`bcl.provenance.DRAWING`) are left out of its producer's closure and judged by the drawing version alone.
Table faa's figures (figures/faa_P.png) are drawn from their ledger's JSON, which records the drawing likewise. Where
the numbers are current and only the drawing changed, the artefact is `redraw`: `make redraw` draws it again from the
numbers kept beside the tables (experiments/tables/visualisation_X/) or from the ledger's JSON, without training.

Prints one line per artefact: `current`, `redraw`, `stale` (every recorded version differs in a module it uses, which
are named) or `no provenance` (made before result files recorded it). Exit status 0; with --strict, 1 when anything
is not current.
"""
from __future__ import annotations

import argparse
import ast
import fnmatch
import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parents[1]

# artefact (path under experiments/tables/, first match wins) -> the files that compute it, relative to the root.
# The visualisation and the table cells run as papermill templates, so the template is named, not the console
# command that starts it (bcl.cli imports the machinery of all three commands).
PRODUCERS = (
    ("visualisation_*.json", ("nbs/90_visualisation.ipynb",)),
    ("hmc_function_space*.json", ("benchmarks/hmc_function_space.py",)),
    ("hmc_reference_*.json", ("experiments/compare_hmc_references.py",)),
    ("diagnosis_task_heads.json", ("experiments/diagnose_task_heads.py",)),
    ("svi/*.json", ("experiments/svi_results.py",)),
    ("diagnosis_authors_mnist5k*.json", ("experiments/diagnose_authors_data.py",)),
    ("diagnosis_*_mnist5k_fe.json", ("experiments/diagnose_fe_ordering.py",)),
    ("diagnosis_ewc_*.json", ("experiments/diagnose_penalty_fe.py",)),
    ("diagnosis_si_*.json", ("experiments/diagnose_penalty_fe.py",)),
    ("diagnosis_fe_ceiling.json", ("experiments/diagnose_ceiling.py",)),
    ("*_projection.json", ("experiments/project_table.py",)),
    ("beyond_*.json", ("nbs/91_table_cell.ipynb", "bcl/table/beyond_ledger.py")),
    ("faa_*.json", ("nbs/91_table_cell.ipynb", "bcl/table/ledger.py")),
)


# artefacts computed on the features of the offline profile's pre-trained extractor: they record the digest of its
# parameters (`bcl.extractor.extractor_record`), since its cache is keyed by settings, not by the code or flags
ON_FEATURES = ("svi/*_fe*.json", "diagnosis_*_fe.json", "diagnosis_ewc_*.json", "diagnosis_si_*.json",
               "diagnosis_fe_ceiling.json", "diagnosis_authors_mnist5k.json", "faa_offline*.json")


def recorded_extractors(obj) -> set[str]:
    "Every extractor digest anywhere in a JSON document: extractor records' `params_sha256` and `extractor_sha256`."
    if isinstance(obj, dict):
        found = {v for k, v in obj.items() if k in ("params_sha256", "extractor_sha256") and isinstance(v, str)}
        return found.union(*(recorded_extractors(v) for v in obj.values()))
    if isinstance(obj, list):
        return set().union(*(recorded_extractors(v) for v in obj)) if obj else set()
    return set()


def extractor_problem(record: Path, cached: str | None, tables: Path) -> str:
    """Why an artefact on features does not match the extractor cached now (digest `cached`; None: none is cached, so
    nothing is judged); '' when it does or does not read features (`ON_FEATURES`)."""
    name = record.relative_to(tables).as_posix() if record.is_relative_to(tables) else record.name
    if cached is None or not record.exists() or not any(fnmatch.fnmatch(name, p) for p in ON_FEATURES):
        return ""
    digests = recorded_extractors(json.loads(record.read_text()))
    if not digests:
        return "" if name.startswith("faa_") else "its extractor is not recorded"  # a ledger may hold no feature cell
    other = sorted(digests - {cached})
    return f"made on extractor {', '.join(d[:8] for d in other)}, not the cached {cached[:8]}" if other else ""


def cached_extractor(root: Path = ROOT) -> str | None:
    "The parameters' digest of the offline profile's cached extractor (`bcl.table.plan.OFFLINE_PRETRAINING`), or None."
    from bcl.extractor.extractor_record import extractor_record
    from bcl.table.plan import OFFLINE_PRETRAINING
    record = extractor_record(OFFLINE_PRETRAINING["emnistletters"])
    return None if record is None else record["params_sha256"]


def recorded_versions(obj) -> set[str]:
    "Every `bcl_code` value anywhere in a JSON document."
    if isinstance(obj, dict):
        found = {obj["bcl_code"]} if isinstance(obj.get("bcl_code"), str) else set()
        return found.union(*(recorded_versions(v) for v in obj.values()))
    if isinstance(obj, list):
        return set().union(*(recorded_versions(v) for v in obj)) if obj else set()
    return set()


def drawn(record: Path, tables: Path) -> bool:
    """Whether `record` is the JSON a figure is drawn from: a visualisation report's tables (drawn with its figures from
    the run's kept numbers), or a Table faa ledger that has a figure (`bcl.figure.ledger_figure.draw_ledger`)."""
    name = record.relative_to(tables).as_posix() if record.is_relative_to(tables) else record.name
    if "/" in name:
        return False
    if fnmatch.fnmatch(name, "faa_*.json") and not name.endswith("_projection.json"):
        return (tables.parent.parent / "figures" / f"{record.stem}.png").exists()
    return fnmatch.fnmatch(name, "visualisation_*.json")


def drawing_status(record: Path, current_drawing: str) -> str:
    "'current' when `record` was drawn by the drawing code of now (`bcl.provenance.drawing_version`), else 'redraw'."
    drawing = (json.loads(record.read_text()).get("drawing") or {}) if record.exists() else {}
    return "current" if drawing.get("drawing_code") == current_drawing else "redraw"


def table_of(figure: Path, tables: Path) -> Path:
    "The table JSON a figure was written with."
    stem = figure.stem.replace("hmc_distance_", "visualisation_")
    return tables / f"{stem}.json"


def artefacts(root: Path = ROOT) -> list[tuple[Path, Path]]:
    "(artefact, the JSON that records its code version) for every committed table and figure."
    tables, figures = root / "experiments" / "tables", root / "figures"
    pairs = [(p, p) for p in sorted(tables.rglob("*.json")) if not p.name.endswith("_explanations.json")]  # inputs
    pairs += [(f, table_of(f, tables)) for f in sorted(figures.glob("*.png"))]
    return pairs


def producer_of(record: Path, root: Path = ROOT) -> tuple[str, ...] | None:
    "The files that compute the table `record`, or None when `PRODUCERS` does not know it (then every module counts)."
    name = record.relative_to(root / "experiments" / "tables").as_posix()
    return next((files for pattern, files in PRODUCERS if fnmatch.fnmatch(name, pattern)), None)


# --- which bcl modules a file runs ---------------------------------------------------------------------------------

def _source(path: Path) -> str:
    if path.suffix != ".ipynb":
        return path.read_text()
    cells = json.loads(path.read_text())["cells"]
    lines = [line for c in cells if c["cell_type"] == "code" for line in "".join(c["source"]).splitlines()]
    return "\n".join(line for line in lines if not line.lstrip().startswith(("%", "!")))


def _module_file(module: str, root: Path) -> Path | None:
    base = root / Path(*module.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def _package_of(path: Path, root: Path) -> str:
    "The package a module file sits in (bcl/table/cell.py and bcl/table/__init__.py: bcl.table)."
    return ".".join(path.relative_to(root).parts[:-1])


def imported_modules(path: Path, root: Path = ROOT) -> set[str]:
    """Dotted names of the modules `path` imports, anywhere in it (lazy imports included), and every `bcl.a.b`
    attribute path it spells out (`bcl/__init__.py` imports submodules on first attribute access)."""
    source = _source(path)
    names: set[str] = set()
    try:
        tree = ast.parse(source)
    except SyntaxError:
        tree = None
    if tree is not None:
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    package = _package_of(path, root).split(".")
                    package = package[:len(package) - node.level + 1]
                    base = ".".join(package + ([base] if base else []))
                names.add(base)
                names.update(f"{base}.{alias.name}" for alias in node.names)
    names.update(m.group(0) for m in re.finditer(r"\bbcl(?:\.[A-Za-z_]\w*)+", _code_only(source)))
    return names


def _code_only(source: str) -> str:
    "`source` without its strings and comments: a path named in a docstring or a message is not an attribute access."
    import io
    import tokenize
    try:
        tokens = [t for t in tokenize.generate_tokens(io.StringIO(source).readline)
                  if t.type not in (tokenize.STRING, tokenize.COMMENT)]
        return tokenize.untokenize((t.type, t.string) for t in tokens)
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return source  # unreadable as Python: every spelled path counts


def module_closure(entries, root: Path = ROOT) -> set[str]:
    """Paths under bcl/ (relative to it) of every module that running `entries` (files relative to `root`) imports,
    following imports through bcl/ and through the project's own scripts (experiments/, benchmarks/)."""
    api_names = set(_bcl_api_names(root))
    seen: set[Path] = set()
    todo = [root / entry for entry in entries]
    while todo:
        path = todo.pop()
        if path in seen or not path.is_file():
            continue
        seen.add(path)
        if path == root / "bcl" / "__init__.py":
            continue  # only lazy imports, reached through the attribute paths found in each file
        for name in imported_modules(path, root):
            parts = name.split(".")
            if parts[0] == "bcl":
                if len(parts) == 2 and parts[1] in api_names:  # bcl.train etc. come from bcl.api
                    parts = ["bcl", "api"]
                for depth in range(1, len(parts) + 1):  # importing bcl.a.b runs bcl/__init__, bcl/a/__init__, bcl/a/b
                    found = _module_file(".".join(parts[:depth]), root)
                    if found is not None:
                        todo.append(found)
            else:  # the project's own helpers: `common` beside the script, or `experiments.common` from the root
                todo += [f for f in (_module_file(name, path.parent), _module_file(name, root)) if f is not None]
    package = root / "bcl"
    return {p.relative_to(package).as_posix() for p in seen if p.is_relative_to(package)}


def _bcl_api_names(root: Path) -> list[str]:
    "The names `bcl/__init__.py` hands to `bcl.api` (its `__all__`)."
    init = root / "bcl" / "__init__.py"
    match = re.search(r"__all__\s*=\s*\[([^\]]*)\]", init.read_text()) if init.exists() else None
    return re.findall(r"[\"'](\w+)[\"']", match.group(1)) if match else []


# --- code versions: the current tree and git history ----------------------------------------------------------------

def blob_id(data: bytes) -> str:
    "Git's id of a file with contents `data`."
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def tree_version(files: dict[str, bytes], outside: tuple[str, ...]) -> str:
    "`bcl.provenance.code_version` of a package whose `*.py` files are `files` (path under bcl/ -> contents)."
    digest = hashlib.sha256()
    for name in sorted(n for n in files if n not in outside):
        digest.update(name.encode() + b"\0")
        digest.update(files[name] + b"\0")
    return digest.hexdigest()[:16]


def working_modules(root: Path = ROOT) -> dict[str, bytes]:
    "Every `*.py` file under bcl/ in the working tree (path under bcl/ -> contents)."
    package = root / "bcl"
    return {p.relative_to(package).as_posix(): p.read_bytes() for p in package.rglob("*.py")
            if "__pycache__" not in p.parts}


def _git(root: Path, *args: str, data: bytes | None = None) -> bytes:
    return subprocess.run(["git", "-C", str(root), *args], input=data, capture_output=True, check=True).stdout


def committed_modules(commit: str, root: Path = ROOT) -> dict[str, str]:
    "Every `*.py` file under bcl/ at `commit` (path under bcl/ -> blob id)."
    listing = {}
    for line in _git(root, "ls-tree", "-r", commit, "--", "bcl").decode().splitlines():
        meta, path = line.split("\t", 1)
        if path.endswith(".py") and "__pycache__" not in path:
            listing[path[len("bcl/"):]] = meta.split()[2]
    return listing


def history_versions(wanted: set[str], outside: tuple[str, ...], root: Path = ROOT) -> dict[str, dict[str, str]]:
    """Code version -> {path under bcl/: blob id} for each version in `wanted` that a commit's bcl/ hashes to,
    searching the commits that changed bcl/, newest first. Versions not found are left out."""
    found: dict[str, dict[str, str]] = {}
    try:
        commits = _git(root, "log", "--format=%H", "--", "bcl").decode().split()
    except (OSError, subprocess.CalledProcessError):
        return found
    contents: dict[str, bytes] = {}
    for commit in commits:
        if not wanted - set(found):
            break
        listing = committed_modules(commit, root)
        missing = sorted(set(listing.values()) - set(contents))
        if missing:
            out = _git(root, "cat-file", "--batch", data="".join(f"{b}\n" for b in missing).encode())
            position = 0
            for blob in missing:
                header_end = out.index(b"\n", position)
                size = int(out[position:header_end].split()[2])
                contents[blob] = out[header_end + 1:header_end + 1 + size]
                position = header_end + 1 + size + 1
        version = tree_version({path: contents[blob] for path, blob in listing.items()}, outside)
        if version in wanted:
            found.setdefault(version, listing)
    return found


# --- refactors proven equal -----------------------------------------------------------------------------------------

EQUIVALENCES = ROOT / "experiments" / "equivalences.json"


class Equivalence(NamedTuple):
    "A refactor that leaves results the same: {path under bcl/: (blob before, blob after)} (None: no such file)."
    change: str
    modules: dict[str, tuple[str | None, str | None]]
    evidence: str


def _blob_or_none(value) -> bool:
    return value is None or (isinstance(value, str) and re.fullmatch(r"[0-9a-f]{40}", value) is not None)


def load_equivalences(path: Path = EQUIVALENCES) -> list[Equivalence]:
    "The refactors recorded in `path` (none when it does not exist); a `ValueError` naming the entry that is malformed."
    if not path.exists():
        return []
    found = []
    for i, entry in enumerate(json.loads(path.read_text())):
        change, evidence, modules = entry.get("change"), entry.get("evidence"), entry.get("modules")
        problems = [f"'{k}' must be a non-empty string" for k, v in (("change", change), ("evidence", evidence))
                    if not (isinstance(v, str) and v.strip())]
        if not (isinstance(modules, dict) and modules and all(
                isinstance(pair, list) and len(pair) == 2 and all(map(_blob_or_none, pair)) and pair[0] != pair[1]
                for pair in modules.values())):
            problems.append("'modules' must map each changed path under bcl/ to [blob before, blob after], two "
                            "different git blob ids (40 hex digits, or null for no file)")
        if problems:
            raise ValueError(f"{path.name}, entry {i}: {'; '.join(problems)}. Write it with `stale.py --attest`.")
        found.append(Equivalence(change, {p: tuple(pair) for p, pair in modules.items()}, evidence))
    return found


def apply_equivalences(then: dict[str, str], equivalences: list[Equivalence]) -> tuple[dict[str, str], list[str]]:
    """`then` ({path: blob id}) after each refactor of `equivalences` that finds every module it names at its blob
    before, in order until none applies: (the blobs, the changes applied)."""
    modules, applied = dict(then), []
    progress = True
    while progress:
        progress = False
        for eq in equivalences:
            if eq.change not in applied and all(modules.get(p) == before for p, (before, _) in eq.modules.items()):
                for p, (_, after) in eq.modules.items():
                    if after is None:
                        modules.pop(p, None)
                    else:
                        modules[p] = after
                applied.append(eq.change)
                progress = True
    return modules, applied


def attestation(since: str, change: str, evidence: str, outside: tuple[str, ...], root: Path = ROOT) -> dict:
    "The entry of equivalences.json for the modules of bcl/ (outside `outside`) that differ between `since` and now."
    then = committed_modules(since, root)
    now = {n: blob_id(data) for n, data in working_modules(root).items()}
    names = sorted(n for n in set(then) | set(now) if n not in outside and then.get(n) != now.get(n))
    if not names:
        raise ValueError(f"no module of bcl/ differs from {since}: nothing to attest")
    return {"change": change, "modules": {n: [then.get(n), now.get(n)] for n in names}, "evidence": evidence}


# --- judging an artefact ---------------------------------------------------------------------------------------------

def changed_modules(closure: set[str] | None, then: dict[str, str], now: dict[str, str]) -> list[str]:
    "Modules of `closure` (None: all) whose blob differs between two versions ({path: blob id}; absent counts)."
    names = set(then) | set(now) if closure is None else closure
    return sorted(n for n in names if then.get(n) != now.get(n))


def status(record: Path, current: str, closure: set[str] | None = None, known: dict | None = None,
           now: dict[str, str] | None = None, equivalences: list[Equivalence] = ()
           ) -> tuple[str, set[str], list[str], list[str]]:
    """('current' | 'stale' | 'no provenance' | 'no table', the versions recorded, the modules that changed, the
    recorded refactors it is current through). A recorded version other than `current` still counts as current when
    `known` maps it to its modules and none of `closure` differs from `now`, as recorded or after `equivalences`."""
    if not record.exists():
        return "no table", set(), [], []
    versions = recorded_versions(json.loads(record.read_text()))
    if not versions:
        return "no provenance", versions, [], []
    if current in versions:
        return "current", versions, [], []
    differences, through = [], None
    for version in sorted(versions):
        if known is not None and now is not None and version in known:
            differ = changed_modules(closure, known[version], now)
            if not differ:
                return "current", versions, [], []
            then, applied = apply_equivalences(known[version], list(equivalences))
            if applied:
                differ = changed_modules(closure, then, now)  # what the recorded refactors do not account for
                if not differ and through is None:  # named: the refactors that changed a module it uses
                    touched = {eq.change for eq in equivalences if closure is None or set(eq.modules) & closure}
                    through = [change for change in applied if change in touched]
            differences.append(differ)
    if through is not None:
        return "current", versions, [], through
    changes = min(differences, key=len) if differences else ["(version not in git history)"]
    return "stale", versions, changes, []


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--strict", action="store_true", help="exit 1 when an artefact is not current")
    parser.add_argument("--attest", metavar="COMMIT", help="append to experiments/equivalences.json the refactor "
                        "from COMMIT to the working tree (with --change and --evidence), and exit")
    parser.add_argument("--change", help="with --attest: what the refactor changed")
    parser.add_argument("--evidence", help="with --attest: the command that showed results unchanged, and what it compared")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from bcl.provenance import DRAWING, OUTSIDE_COMPUTATION, code_version, drawing_version
    if args.attest:
        if not (args.change and args.change.strip() and args.evidence and args.evidence.strip()):
            parser.error("--attest needs --change TEXT and --evidence TEXT")
        load_equivalences()  # the file as it is must read, before anything is added to it
        entries = json.loads(EQUIVALENCES.read_text()) if EQUIVALENCES.exists() else []
        entries.append(attestation(args.attest, args.change, args.evidence, OUTSIDE_COMPUTATION))
        EQUIVALENCES.write_text(json.dumps(entries, indent=1) + "\n")
        print(f"{EQUIVALENCES.relative_to(ROOT)}: {', '.join(entries[-1]['modules'])}")
        return 0
    equivalences = load_equivalences()
    current = code_version()
    files = working_modules()
    assert tree_version(files, OUTSIDE_COMPUTATION) == current, "stale.tree_version disagrees with code_version"
    now = {name: blob_id(data) for name, data in files.items() if name not in OUTSIDE_COMPUTATION}
    pairs = artefacts()
    recorded = set()
    for _, record in pairs:
        if record.exists():
            recorded |= recorded_versions(json.loads(record.read_text()))
    known = history_versions(recorded - {current}, OUTSIDE_COMPUTATION)
    known = {v: {n: b for n, b in m.items() if n not in OUTSIDE_COMPUTATION} for v, m in known.items()}
    print(f"current code version {current}")
    extractor = cached_extractor()
    print(f"cached extractor {extractor[:12]}" if extractor else "no extractor cached: results on features not judged")
    counts: dict[str, int] = {}
    closures: dict[tuple, set[str] | None] = {}
    for artefact, record in pairs:
        entries = producer_of(record) if record.exists() else None
        if entries not in closures:
            closures[entries] = None if entries is None else (
                module_closure(entries) - set(OUTSIDE_COMPUTATION) - set(DRAWING))  # drawing: judged below
        state, versions, changes, through = status(record, current, closures[entries], known, now, equivalences)
        problem = extractor_problem(record, extractor, ROOT / "experiments" / "tables")
        if problem and state == "current":
            state = "stale"
        if state == "current" and drawn(record, ROOT / "experiments" / "tables") and \
                drawing_status(record, drawing_version()) == "redraw":
            state, problem = "redraw", "drawn by other drawing code than now's: make redraw"
        counts[state] = counts.get(state, 0) + 1
        made = f" ({problem})" if problem else ""
        if versions and current not in versions:
            shown = sorted(versions)
            made += f" (made by {', '.join(shown[:3])}{f' and {len(shown) - 3} more' if len(shown) > 3 else ''}"
            if changes:
                made += f"; changed since: {', '.join(changes[:6])}{' …' if len(changes) > 6 else ''})"
            elif through:
                made += f"; equal through {len(through)} recorded refactor{'s' * (len(through) > 1)})"
            else:
                made += "; the modules it uses are unchanged)"
        via = "" if artefact == record else f" via {record.relative_to(ROOT)}"
        print(f"{state:<14} {artefact.relative_to(ROOT)}{via}{made}")
    print(", ".join(f"{n} {s}" for s, n in sorted(counts.items())))
    return 1 if args.strict and set(counts) - {"current"} else 0


if __name__ == "__main__":
    sys.exit(main())
