"""The documentation site (`make docs`, docs/build.py) and the guard on nbdev's Quarto commands.

The browser check opens the built site `_docs/html/` in headless Chromium (Debian's `chromium`) over a local HTTP
server: every page, which must show no raw TeX, no maths written as Unicode with underscores in a notebook's prose
and no warning printed by a cell; and two notebook pages, whose display maths must be typeset by the MathJax served
with the site and whose figures must be PNG images. It skips, saying why, where Chromium is missing, and where the site has not been built
(`make docs` builds it, then runs this file with BCL_DOCS_REQUIRED=1, which turns either skip into a failure).
Screenshots go to results/docs/browser/ with a provenance record.
"""
import functools
import http.server
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
SITE = ROOT / "_docs" / "html"
SHOTS = ROOT / "results" / "docs" / "browser"
PAGES = ("index.html", "nbs/vi/30_gaussian.html", "nbs/vi/32_kl_bound.html")
GUARDED = ("nbdev_docs", "nbdev_preview", "nbdev_prepare")
MARKER = "bcl-nbdev-guard"

_spec = importlib.util.spec_from_file_location("docs_build", ROOT / "docs" / "build.py")
build = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(build)


# --- what the site shows and runs -------------------------------------------------------------------------------

def test_flagged_cells_are_not_run_and_say_so():
    flags = ["slow", "gpu"]
    assert "flagged `#| slow`" in build.not_run_reason("#| slow\nx = 1", flags)
    assert "flagged `#| gpu`" in build.not_run_reason("#|gpu\nx = 1", flags)
    assert "eval: false" in build.not_run_reason("#| eval: false\nx = 1", flags)
    assert build.not_run_reason("#| export\ndef f(): pass", flags) is None
    assert build.not_run_reason("x = 1\n#| slow", flags) is None  # a directive counts only at the top of a cell
    assert build.not_run_reason("#| slow\nx = 1", ["gpu"]) is None  # BCL_TEST_FLAGS-style: slow cells allowed


def test_page_drops_hidden_cells_directive_lines_and_widgets():
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# Title\n\n$$x^2$$"),
        nbformat.v4.new_code_cell("#| default_exp thing"),
        nbformat.v4.new_code_cell("#| hide\nfrom fastcore.test import test_eq"),
        nbformat.v4.new_code_cell("#| export\n\ndef f(x):\n    return x"),
        nbformat.v4.new_code_cell("#| slow\ny = 2")])
    nb.cells[-1].outputs = [nbformat.v4.new_output("display_data", data={build.WIDGET: {"model_id": "m"},
                                                                          "text/plain": "bar"}),
                            nbformat.v4.new_output("stream", name="stdout", text="2\n")]
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {}}
    shown = build.page(nb)
    assert [c.source for c in shown.cells] == ["# Title\n\n$$x^2$$", "def f(x):\n    return x", "y = 2"]
    assert [o.output_type for o in shown.cells[-1].outputs] == ["stream"] and "widgets" not in shown.metadata


def test_every_notebook_and_module_gets_a_page():
    stems = [p.relative_to(build.NBS).with_suffix("").as_posix() for p in build.notebooks()]
    assert {"index", "vi/30_gaussian", "vi/31_mixture", "vi/32_kl_bound", "vi/33_linearise", "vi/34_svi",
            "methods/41_hmc"} <= set(stems)
    assert not [s for s in stems if s.startswith("_")]
    modules = build.api_modules()
    assert {"bcl.vi.gaussian", "bcl.vi.mixture", "bcl.vi.kl", "bcl.vi.linearise", "bcl.vi.svi", "bcl.methods.hmc"} <= set(modules)
    assert "bcl._modidx" not in modules
    with pytest.raises(SystemExit, match="no notebook named"):
        build.notebooks(["99_nothing"])


# --- nbdev's Quarto commands stop at once --------------------------------------------------------------------------

def _run_stub(path: Path, cwd: Path) -> subprocess.CompletedProcess:
    # PATH holds only the stub's folder: nothing else, nbdev's own command included, can be reached from it
    return subprocess.run([str(path)], cwd=cwd, capture_output=True, text=True, timeout=60,
                          env={"PATH": str(path.parent), "HOME": str(cwd)})


def test_guard_script_writes_stubs_that_stop_with_the_message(tmp_path):
    subprocess.run([str(ROOT / "scripts" / "guard_nbdev.sh"), str(tmp_path)], check=True, timeout=60)
    for name in GUARDED:
        stub = tmp_path / name
        assert MARKER in stub.read_text() and os.access(stub, os.X_OK)
        result = _run_stub(stub, tmp_path)
        assert result.returncode == 2 and "make docs" in result.stderr and result.stdout == "", result
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(GUARDED)  # nothing else written
    missing = subprocess.run([str(ROOT / "scripts" / "guard_nbdev.sh"), str(tmp_path / "absent")],
                             capture_output=True, text=True, timeout=60)
    assert missing.returncode != 0 and "no folder" in missing.stderr


def _tree_state() -> str:
    """Everything git sees of the checkout, ignored files included, and the venv's installed distributions.

    Left out: what tests running beside this one write (the results/ and data/ folders, the compile cache under
    results/, pytest's and Python's caches); nbdev_docs would write _docs/ and _proc/ and install into the venv.
    """
    listing = subprocess.run(["git", "status", "--porcelain", "--ignored", "--untracked-files=all"], cwd=ROOT,
                             capture_output=True, text=True, check=True).stdout.splitlines()
    concurrent = r"(^|/)\.venv|\.pytest_cache|__pycache__|^!! (results|data)/"
    files = [line for line in listing if not re.search(concurrent, line)]
    installed = sorted(p.name for p in Path(sys.prefix).glob("lib/python*/site-packages/*.dist-info"))
    return "\n".join(files + installed)


@pytest.mark.skipif(sys.prefix == sys.base_prefix, reason="not a virtual environment: `make env` guards the venv only")
def test_venv_nbdev_docs_stops_at_once_and_changes_nothing():
    bin_dir = Path(sys.prefix) / "bin"
    for name in GUARDED:
        stub = bin_dir / name
        # read, never run, a command that is not the guard: nbdev's own nbdev_docs must not start here
        text = stub.read_text(errors="replace") if stub.exists() else ""
        assert MARKER in text, (f"{stub} is not the guard of scripts/guard_nbdev.sh (nbdev's own command, or missing): "
                                f"run `make env` (or `scripts/guard_nbdev.sh {bin_dir}`)")
    before = _tree_state()
    for name in GUARDED:
        result = _run_stub(bin_dir / name, ROOT)
        assert result.returncode == 2 and "make docs" in result.stderr, result
    assert _tree_state() == before


# --- the built site in a real browser --------------------------------------------------------------------------

def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("/usr/bin/chromium")


def _site_or_skip():
    if not (SITE / "index.html").exists():
        if os.environ.get("BCL_DOCS_REQUIRED"):
            pytest.fail(f"{SITE / 'index.html'} is missing: docs/build.py did not build the site")
        pytest.skip("the documentation site is not built: `make docs` builds it (and runs this check)")
    if _chromium() is None:
        why = "Chromium is missing: install Debian's `chromium` (apt-get install chromium) for the browser check"
        if os.environ.get("BCL_DOCS_REQUIRED"):  # `make docs`: a site nobody looked at is not a checked site
            pytest.fail(why + ", then run `make docs` again")
        pytest.skip(why)


@pytest.fixture(scope="module")
def served():
    "The built site on a local HTTP server; yields its base URL."
    _site_or_skip()
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass
    handler = functools.partial(Quiet, directory=str(SITE))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _chromium_run(*args: str) -> subprocess.CompletedProcess:
    "Headless Chromium with a new empty profile and everything that would reach the network turned off."
    with tempfile.TemporaryDirectory() as profile:
        return subprocess.run(
            [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={profile}", "--virtual-time-budget=30000", "--hide-scrollbars", *args],
            capture_output=True, text=True, timeout=300)


def _dom(url: str) -> str:
    result = _chromium_run("--dump-dom", url)
    assert result.returncode == 0 and "<html" in result.stdout, (url, result.stderr[-2000:])
    return result.stdout


def test_no_page_loads_anything_from_the_network():
    _site_or_skip()
    remote = re.compile(r"""<(?:script|link|img)\b[^>]*\b(?:src|href)=["'](?:https?:)?//""", re.I)
    offenders = [str(p.relative_to(SITE)) for p in SITE.rglob("*.html") if remote.search(p.read_text(errors="replace"))]
    assert not offenders, f"pages that load a script, style or image from the network: {offenders[:10]}"
    assert (SITE / "_static" / "mathjax" / "MathJax.js").exists()


def test_index_lists_the_notebooks(served):
    dom = _dom(f"{served}/index.html")
    for stem in ("vi/30_gaussian", "vi/31_mixture", "methods/41_hmc"):
        assert f'href="nbs/{stem}.html"' in dom, stem
    assert 'href="api/index.html"' in dom


def _first_figure(html: str) -> int:
    "Where a page's first PNG figure starts in its HTML."
    first = re.search(r'<img[^>]*src="[^"]+\.png"', html)
    assert first, "the page shows no figure"
    return first.start()


def _sections_of_first_figure(html: str) -> list[str]:
    "The ids of the sections that hold a page's first PNG figure, outermost first."
    open_sections = []
    for tag in re.finditer(r'<section id="([^"]+)"|</section>', html[:_first_figure(html)]):
        open_sections = open_sections + [tag.group(1)] if tag.group(1) else open_sections[:-1]
    assert open_sections, "the page's first figure is in no section"
    return open_sections


def _figure_view(page: Path, html: str) -> tuple[Path, str]:
    """A copy of `page` beside it whose content starts at the section of its first figure, and that section's id:
    every element before that section, or before one of the sections around it, and every element between the
    section's heading and the cell of the figure is hidden (`display: none`). A headless screenshot scrolled to an
    anchor is unreliable (parts left unpainted), and one tall enough to reach a figure near a page's end is huge."""
    sections = _sections_of_first_figure(html)
    cells = [m.start() for m in re.finditer(r'<div class="cell[\s"]', html[:_first_figure(html)])]  # not cell_output
    assert cells, "the page's first figure is in no notebook cell"
    cell_at = cells[-1]  # the notebook cell whose output is the figure
    html = html[:cell_at] + '<div id="bcl-first-figure" ' + html[cell_at + len("<div "):]
    hidden = [f"*:has(~ section#{name})" for name in sections]  # (a :has() inside a :has() is not valid CSS)
    hidden.append(f"section#{sections[-1]} > *:not(h1, h2, h3, h4):has(~ #bcl-first-figure)")
    style = "".join(f"<style>{rule} {{ display: none !important; }}</style>" for rule in hidden)
    view = page.with_name("_figure_view_" + page.name)
    view.write_text(html.replace("</head>", style + "</head>", 1))
    return view, sections[-1]


@pytest.mark.parametrize("page", PAGES[1:])
def test_notebook_page_typesets_maths_and_shows_figures(served, page):
    from PIL import Image

    served_html = (SITE / page).read_text()
    dom = _dom(f"{served}/{page}")
    displays = served_html.count('<div class="math notranslate nohighlight">')
    assert displays > 0, f"{page} has no display maths to check"
    typeset = len(re.findall(r'class="MathJax_Display"', dom))
    assert typeset >= displays, f"{page}: MathJax typeset {typeset} of {displays} display equations"
    assert not re.search(r'class="[^"]*(MathJax_Error|merror)', dom), f"{page}: MathJax reported a TeX error"
    images = re.findall(r'<img[^>]*src="([^"]+\.png)"', dom)
    assert images, f"{page} shows no figure"
    for src in images:
        with Image.open((SITE / page).parent / src) as image:
            assert image.width >= 200 and image.height >= 100, (src, image.size)
    # a screenshot, kept with what produced it
    SHOTS.mkdir(parents=True, exist_ok=True)
    shot = SHOTS / (Path(page).stem + ".png")
    result = _chromium_run("--window-size=1280,2000", f"--screenshot={shot}", f"{served}/{page}")
    assert result.returncode == 0 and shot.exists(), result.stderr[-2000:]
    with Image.open(shot) as image:
        assert len(image.convert("RGB").getcolors(1 << 24)) > 50, "the screenshot is nearly blank"
    # and one of the page from the section that holds its first figure
    figure_shot = SHOTS / (Path(page).stem + "_figure.png")
    view, section = _figure_view(SITE / page, served_html)
    try:
        result = _chromium_run("--window-size=1280,1600", f"--screenshot={figure_shot}",
                               f"{served}/{Path(page).parent.as_posix()}/{view.name}")
    finally:
        view.unlink()
    assert result.returncode == 0 and figure_shot.exists(), result.stderr[-2000:]
    with Image.open(figure_shot) as image:
        assert len(image.convert("RGB").getcolors(1 << 24)) > 50, "the figure's screenshot is nearly blank"
    from bcl.provenance import provenance
    version = subprocess.run([_chromium(), "--version"], capture_output=True, text=True, timeout=60).stdout.strip()
    record = {"page": page, "screenshot": shot.name, "window": "1280x2000", "chromium": version,
              "figure_screenshot": figure_shot.name, "figure_section": section, "figure_window": "1280x1600",
              "typeset_display_equations": typeset, "figures": len(images), "provenance": provenance()}
    shot.with_suffix(".json").write_text(json.dumps(record, indent=1, default=str) + "\n")


# --- every page: maths typeset, no raw TeX, no warning ---------------------------------------------------------------

RAW_TEX = re.compile(r"\$\$|\\[(\[]|\\(?:frac|mathcal|mathbf|mathrm|mathfrak|boldsymbol|operatorname|sum|prod|int|"
                     r"lVert|rVert|Vert|tilde|hat|bar|begin|end|left|right|alpha|beta|lambda|kappa|theta|sigma|mu|rho)"
                     r"(?![A-Za-z])")
UNICODE_SUBSCRIPT = re.compile(r"(?<![\w`.\\/-])[A-Za-zα-ωΑ-Ω𝔩](?:_\{|_[A-Za-z0-9α-ω](?![\w]))")
STRAY_WARNING = re.compile(r"\b\w*Warning\b|\bWARNING\b|warnings\.warn")


def html_text(fragment: str) -> str:
    "A fragment's text, tags dropped."
    import html as html_module

    return html_module.unescape(re.sub(r"<[^>]+>", "", fragment)).strip()


def visible_text(dom: str) -> str:
    "The text a reader sees in a page's DOM: no scripts (MathJax keeps the TeX there), styles, code or typeset maths."
    for tag in ("script", "style", "pre", "code", "noscript"):
        dom = re.sub(rf"<{tag}\b.*?</{tag}>", " ", dom, flags=re.S | re.I)
    dom = re.sub(r'<span class="MathJax(?:_Preview)?"[^>]*>.*?</span>(?=\s*<script|\s*</)', " ", dom, flags=re.S)
    return html_text(re.sub(r"<[^>]+>", " ", dom))  # tags become spaces, so words on either side stay apart


def page_problems(page: str, dom: str) -> list[str]:
    """What is wrong with one rendered page: TeX that MathJax left untypeset (or reported as an error), maths written as
    Unicode with underscores in a notebook's prose (`θ_k`, `q_{t}`), and a warning printed by a cell."""
    problems = []
    if re.search(r'class="[^"]*(MathJax_Error|merror)', dom):
        problems.append("a TeX error")
    text = visible_text(dom)
    for match in RAW_TEX.finditer(text):
        problems.append(f"raw TeX {text[max(0, match.start() - 40):match.end() + 40]!r}")
    if page.startswith("nbs/"):
        for match in UNICODE_SUBSCRIPT.finditer(text):
            problems.append(f"Unicode maths with an underscore {text[max(0, match.start() - 40):match.end() + 40]!r}")
    for block in re.findall(r'<div class="[^"]*\bstderr\b[^"]*".*?</div>', dom, flags=re.S):
        if STRAY_WARNING.search(block):
            text = html_text(block)
            match = STRAY_WARNING.search(text)
            problems.append(f"a warning in a cell's output {text[max(0, match.start() - 80):match.end() + 120]!r}")
    return [f"{page}: {p}" for p in problems[:5]]


def test_page_problems_finds_raw_tex_unicode_maths_and_warnings():
    typeset = ('<p>The bound <span class="MathJax" id="x">κ</span><script type="math/tex">\\kappa_k</script> holds '
               'for <code>q_t</code>.</p>')
    assert page_problems("nbs/a.html", typeset) == []
    assert "raw TeX" in page_problems("nbs/a.html", "<p>$$\\log p(\\theta) = \\sum_i x$$</p>")[0]
    assert "raw TeX" in page_problems("nbs/a.html", "<p>\\(x\\) left untypeset</p>")[0]
    assert "Unicode maths" in page_problems("nbs/a.html", "<p>E_q[KL(q(κ|θ)‖p(κ|θ))] and θ_k</p>")[0]
    assert page_problems("api/a.html", "<p>Σ_k p_k</p>") == []  # docstrings are plain text
    assert page_problems("nbs/a.html", "<p>train_sequence, cisplit2diris, ci-mnist_fe</p>") == []
    stderr = '<div class="output stderr"><pre>UserWarning: JAX started before bcl was imported</pre></div>'
    assert "a warning" in page_problems("nbs/a.html", stderr)[0]
    assert "TeX error" in page_problems("nbs/a.html", '<span class="MathJax_Error">x</span>')[0]


def site_pages() -> list[str]:
    "Every HTML page of the built site but Sphinx's own (search, index of names) and the figure views of this file."
    own = {"search.html", "genindex.html", "py-modindex.html"}
    return sorted(p.relative_to(SITE).as_posix() for p in SITE.rglob("*.html")
                  if p.name not in own and not p.name.startswith("_") and "_static" not in p.parts)


def test_every_page_typesets_its_maths_and_prints_no_warning(served):
    "Every page of the site, as headless Chromium renders it: no raw TeX, no Unicode-with-underscore maths, no warning."
    pages = site_pages()
    assert len(pages) > 50, pages
    problems = []
    for page in pages:
        problems += page_problems(page, _dom(f"{served}/{page}"))
    assert not problems, f"{len(problems)} problems on the site's {len(pages)} pages:\n" + "\n".join(problems[:40])


def test_a_required_browser_check_fails_without_chromium(monkeypatch, tmp_path):
    "Under `make docs` (BCL_DOCS_REQUIRED=1) a missing Chromium fails the check; elsewhere it skips, saying why."
    module = sys.modules[__name__]
    (tmp_path / "index.html").write_text("<html></html>")
    monkeypatch.setattr(module, "SITE", tmp_path)
    monkeypatch.setattr(module, "_chromium", lambda: None)
    monkeypatch.setenv("BCL_DOCS_REQUIRED", "1")
    with pytest.raises(pytest.fail.Exception, match="Chromium is missing"):
        _site_or_skip()
    monkeypatch.delenv("BCL_DOCS_REQUIRED")
    with pytest.raises(pytest.skip.Exception, match="Chromium is missing"):
        _site_or_skip()
