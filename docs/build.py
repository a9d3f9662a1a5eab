"""Build the documentation site from the notebooks, offline: `make docs` (or `python docs/build.py`).

1. Execute every notebook of nbs/ (not those whose name starts with `_`) in a fresh kernel, in nbs/, as
   `nbdev_test` does. Cells flagged with a flag of `tst_flags` in settings.ini (`slow`, `gpu`) and cells with
   `#| eval: false` are not run: they are shown with a note saying so. An executed notebook is cached in
   `_docs/executed/` under the SHA-256 of the notebook, of `bcl/` and of the flags, so a rebuild runs only the
   notebooks whose inputs changed. A notebook that fails stops the build, naming the cell.
2. Stage the pages in `_docs/src/`: nbdev's directive lines (`#| export`, ...) dropped from the shown code,
   `#| hide` and `#| default_exp` cells dropped, the user guide `docs/guide.md`, an API page per module of `bcl/`
   (Sphinx autodoc), MathJax copied from the `jupyter-server-mathjax` package (served with the site: no CDN).
3. `sphinx-build` (myst-nb, furo theme, `docs/conf.py`) into `_docs/html/`, failing on any warning (the docstrings,
   written in Markdown as nbdev shows them, are converted to reStructuredText by `docs/conf.py`); open
   `_docs/html/index.html`.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import configparser
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
NBS = ROOT / "nbs"
OUT = ROOT / "_docs"
EXECUTED, SRC, HTML = OUT / "executed", OUT / "src", OUT / "html"
DIRECTIVE = re.compile(r"^\s*#\s*\|\s*(.*?)\s*$")
HIDDEN = {"hide", "default_exp"}


def skip_flags() -> list[str]:
    "The flags of `tst_flags` in settings.ini (cells carrying one are not run by `make test` nor by `make docs`)."
    config = configparser.ConfigParser(delimiters=["="])
    config.read(ROOT / "settings.ini")
    return config["DEFAULT"].get("tst_flags", "").replace("|", " ").split()


def directives(source: str) -> list[list[str]]:
    "nbdev's directives of a cell (`#| slow` → ['slow'], `#| eval: false` → ['eval:', 'false']), from its leading lines."
    found = []
    for line in source.splitlines():
        match = DIRECTIVE.match(line)
        if not match:
            if line.strip():
                break
            continue
        found.append(match.group(1).split())
    return found


def not_run_reason(source: str, flags: list[str]) -> str | None:
    "Why `make docs` does not run a code cell (a skip flag, or `eval: false`), or None when it runs it."
    for words in directives(source):
        if words and words[0] in flags:
            return (f"Not run by `make docs`: this cell is flagged `#| {words[0]}` "
                    f"({'an accelerator' if words[0] == 'gpu' else 'more than a few seconds on a 2-core CPU'}; "
                    f"`make test-all` runs the slow cells).")
        if words and words[0].rstrip(":") == "eval" and words[1:2] == ["false"]:
            return "Not run by `make docs`: this cell has `#| eval: false`."
    return None


def notebooks(only: list[str] | None = None) -> list[Path]:
    "The notebooks of the site, sorted, as the notebook tests find them; `only` keeps those whose stem is listed."
    found = [p for p in sorted(NBS.rglob("*.ipynb"))
             if not any(part.startswith(("_", ".")) for part in p.relative_to(NBS).parts)]
    if only:
        unknown = set(only) - {p.stem for p in found}
        if unknown:
            raise SystemExit(f"no notebook named {sorted(unknown)} under nbs/; the names are {[p.stem for p in found]}")
        found = [p for p in found if p.stem in only]
    return found


def inputs_hash(path: Path, flags: list[str]) -> str:
    "SHA-256 of what an executed notebook depends on: the notebook, every file of bcl/, the skip flags, XLA_FLAGS."
    digest = hashlib.sha256(path.read_bytes())
    for module in sorted((ROOT / "bcl").rglob("*.py")):
        digest.update(module.relative_to(ROOT).as_posix().encode() + module.read_bytes())
    digest.update(" ".join(flags).encode())
    digest.update(os.environ.get("XLA_FLAGS", "").encode())  # bcl's CPU workarounds (see `execute`) included
    return digest.hexdigest()


def execute(path: Path, flags: list[str], timeout: int) -> tuple[str, float, str | None]:
    "Run one notebook (skipping the cells `not_run_reason` names) into _docs/executed/; (name, seconds, error or None)."
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    import bcl  # noqa: F401  importing bcl adds its CPU workarounds to XLA_FLAGS, which the kernel inherits, as the
    # notebooks' runs under `make test` do; a notebook that runs JAX before importing bcl then warns of nothing
    key = inputs_hash(path, flags)
    target = EXECUTED / path.relative_to(NBS)
    if target.exists():
        cached = nbformat.read(target, as_version=4)
        if cached.metadata.get("bcl_docs", {}).get("inputs") == key:
            return path.stem, 0.0, None
    nb = nbformat.read(path, as_version=4)
    skipped = {}
    for i, cell in enumerate(nb.cells):
        reason = not_run_reason(cell.source, flags) if cell.cell_type == "code" else None
        if reason:
            skipped[i] = (cell.source, reason)
            cell.source = ""  # nbclient leaves an empty cell alone
    start = time.perf_counter()
    env_path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    os.environ["PYTHONPATH"] = env_path  # the kernel imports this checkout's bcl
    os.environ.setdefault("TQDM_DISABLE", "1")
    os.environ["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
    # the kernel's warning that it talks to this process over unencrypted local TCP off, as for papermill
    # (bcl.resources.KERNEL_ARGUMENTS); its errors still show
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}},
                            extra_arguments=["--IPKernelApp.log_level=ERROR"])
    try:
        client.execute()
    except CellExecutionError as error:
        return path.stem, time.perf_counter() - start, str(error)[-3000:]
    for i, (source, reason) in skipped.items():
        nb.cells[i].source = source
        nb.cells[i].outputs = [nbformat.v4.new_output("stream", name="stdout", text=reason + "\n")]
    nb.metadata["bcl_docs"] = {"inputs": key}
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(".tmp")
    nbformat.write(nb, tmp)
    tmp.replace(target)
    return path.stem, time.perf_counter() - start, None


WIDGET = "application/vnd.jupyter.widget-view+json"


def page(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The notebook as the site shows it: hidden cells dropped, directive lines removed from the code shown, and no
    Jupyter widgets (tfds's progress bars become widgets in a kernel with ipywidgets; their state and the scripts
    that draw them would load from a CDN, and a finished bar says nothing)."""
    nb.metadata.pop("widgets", None)
    cells = []
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = [o for o in cell.get("outputs", []) if WIDGET not in o.get("data", {})]
            words = [w[0] for w in directives(cell.source) if w]
            if HIDDEN & set(words):
                continue
            lines = cell.source.splitlines()
            while lines and (DIRECTIVE.match(lines[0]) or not lines[0].strip()):
                lines.pop(0)
            cell.source = "\n".join(lines)
        cells.append(cell)
    nb.cells = cells
    return nb


def api_modules() -> list[str]:
    "The modules of bcl/ that get an API page (not the generated index `_modidx`)."
    return sorted(".".join(("bcl", *p.relative_to(ROOT / "bcl").with_suffix("").parts))
                  for p in (ROOT / "bcl").rglob("*.py") if not p.stem.startswith("_"))


def stage(paths: list[Path]) -> None:
    "Write the Sphinx source tree `_docs/src/` from the executed notebooks."
    import jupyter_server_mathjax

    if SRC.exists():
        shutil.rmtree(SRC)
    (SRC / "nbs").mkdir(parents=True)
    shutil.copy2(ROOT / "docs" / "conf.py", SRC / "conf.py")
    shutil.copy2(ROOT / "docs" / "guide.md", SRC / "guide.md")  # the user guide, beside README
    mathjax = Path(jupyter_server_mathjax.__file__).parent / "static"
    shutil.copytree(mathjax, SRC / "_static" / "mathjax")
    for path in paths:
        nb = page(nbformat.read(EXECUTED / path.relative_to(NBS), as_version=4))
        target = SRC / "nbs" / path.relative_to(NBS)  # the tree kept, so links between notebooks resolve
        target.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, target)
    config = configparser.ConfigParser(delimiters=["="])
    config.read(ROOT / "settings.ini")
    paths = sorted(paths, key=lambda p: (p.stem != "index", p.stem))  # the tree's numbers: dependency order
    stems = [p.relative_to(NBS).with_suffix("").as_posix() for p in paths]  # e.g. vi/30_gaussian
    front = [s for s in stems if s == "index"]
    templates = [s for s in stems if s.startswith("9")]
    parts = {}  # caption -> notebooks, in order: the top-level notebooks, then one caption per subpackage
    for s in stems:
        if s not in front + templates:
            parts.setdefault("bcl." + s.split("/")[0] if "/" in s else "bcl", []).append(s)
    toc = lambda caption, names: (f"```{{toctree}}\n:caption: {caption}\n:maxdepth: 1\n\n"
                                  + "".join(f"{n}\n" for n in names) + "```\n\n") if names else ""
    (SRC / "index.md").write_text(
        f"# bcl\n\n{config['DEFAULT']['description']}.\n\n"
        "Every page below is a notebook of `nbs/`, executed by `make docs`; cells flagged `slow` or `gpu` are "
        "shown but not run, with a note saying so.\n\n"
        + toc("Front page", [f"nbs/{s}" for s in front] + ["guide"])
        + "".join(toc(caption, [f"nbs/{s}" for s in names]) for caption, names in parts.items())
        + toc("Papermill templates", [f"nbs/{s}" for s in templates]) + toc("API reference", ["api/index"]),
        encoding="utf-8")
    (SRC / "api").mkdir()
    modules = api_modules()
    (SRC / "api" / "index.md").write_text(
        "# API reference\n\nThe exported functions and classes of each module, from their docstrings; the notebook "
        "of the same name explains them.\n\n" + toc("Modules", modules), encoding="utf-8")
    for module in modules:
        (SRC / "api" / f"{module}.rst").write_text(
            f"{module}\n{'=' * len(module)}\n\n.. automodule:: {module}\n   :members:\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", metavar="NAME", help="these notebooks only (stems, e.g. 30_gaussian)")
    parser.add_argument("--jobs", type=int, default=2, help="notebooks executed at once (default 2)")
    parser.add_argument("--timeout", type=int, default=1200, help="seconds one cell may take (default 1200)")
    args = parser.parse_args(argv)
    flags = skip_flags()
    paths = notebooks(args.only)
    start = time.perf_counter()
    failed = []
    with concurrent.futures.ProcessPoolExecutor(max(1, args.jobs)) as pool:
        for name, seconds, error in pool.map(execute, paths, [flags] * len(paths), [args.timeout] * len(paths)):
            print(f"{name}: {'cached' if seconds == 0 and not error else f'{seconds:.1f} s'}"
                  f"{'  FAILED' if error else ''}", flush=True)
            if error:
                failed.append((name, error))
    if failed:
        for name, error in failed:
            print(f"\n--- {name} failed:\n{error}", file=sys.stderr)
        print(f"\nmake docs: {len(failed)} notebook(s) failed: {[n for n, _ in failed]}; fix them "
              "(pytest tests/test_notebooks.py -k NAME shows the same error).", file=sys.stderr)
        return 1
    executed = time.perf_counter() - start
    stage(paths)
    # the whole site must build without a warning (`-W`, every warning listed first); with --only the links to the
    # notebooks left out cannot resolve, so warnings are shown but do not fail
    strict = [] if args.only else ["-W", "--keep-going"]
    result = subprocess.run([sys.executable, "-m", "sphinx", "-b", "html", "-q", *strict, "-j", str(max(1, args.jobs)),
                             str(SRC), str(HTML)], env={**os.environ, "PYTHONPATH": str(ROOT)})
    if result.returncode:
        print("make docs: Sphinx failed or warned (above); a docstring is Markdown, converted by docs/conf.py.",
              file=sys.stderr)
        return result.returncode
    print(f"notebooks executed in {executed:.0f} s, site built in {time.perf_counter() - start - executed:.0f} s: "
          f"{(HTML / 'index.html').relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
