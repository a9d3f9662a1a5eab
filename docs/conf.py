# Sphinx configuration of the documentation site; docs/build.py copies it into _docs/src/ and builds from there.
import configparser
from pathlib import Path

_settings = configparser.ConfigParser(delimiters=["="])
_settings.read(Path(__file__).resolve().parents[2] / "settings.ini")  # _docs/src/conf.py -> the checkout
_cfg = _settings["DEFAULT"]

project = _cfg.get("title", "bcl")
author = _cfg.get("author", "")
copyright = _cfg.get("copyright", "")
release = version = _cfg.get("version", "")

extensions = ["myst_nb", "sphinx.ext.autodoc", "sphinx.ext.mathjax"]
# docs/build.py has executed the notebooks (skipping slow and gpu cells); Sphinx only renders them.
nb_execution_mode = "off"
myst_enable_extensions = ["dollarmath", "amsmath"]
myst_dmath_double_inline = True
suppress_warnings = ["myst.header", "mystnb.unknown_mime_type", "misc.highlighting_failure"]
exclude_patterns = ["_build", "**.ipynb_checkpoints"]

autodoc_member_order = "bysource"
autodoc_typehints = "signature"
autodoc_preserve_defaults = True

html_theme = "furo"
html_title = f"bcl {release}"
html_static_path = ["_static"]
# MathJax 2 from the jupyter-server-mathjax package (its one configuration file, `-full`, and its STIX-Web fonts),
# served with the site: the docs never load a CDN.
mathjax_path = "mathjax/MathJax.js?config=TeX-AMS-MML_HTMLorMML-full"
mathjax2_config = {
    "tex2jax": {"inlineMath": [["\\(", "\\)"]], "displayMath": [["\\[", "\\]"]],
                "processEscapes": True, "processClass": "math|output_area", "ignoreClass": "tex2jax_ignore|mathjax_ignore"},
    "HTML-CSS": {"availableFonts": ["STIX-Web"], "preferredFont": "STIX-Web", "webFont": "STIX-Web", "imageFont": None},
    "menuSettings": {"zoom": "None"},
    "messageStyle": "none",
}


# --- docstrings are Markdown (nbdev's convention), autodoc reads reStructuredText --------------------------------
import re as _re

_CODE = _re.compile(r"(`+)(.+?)\1")
_EMPHASIS = _re.compile(r"(?<![\w*\\])\*(?=[A-Za-z])([^*\n]+?)(?<=[\w.)])\*(?![\w*])")
_ENDS_INLINE = _re.compile(r"[\s\-.,:;!?\\/'\")\]}>]")  # what may follow inline markup in reStructuredText


def _rst_text(text: str) -> str:
    "Prose between code spans: Markdown's *emphasis* kept, any other `*` (e.g. `(*prefix, P)`) escaped."
    kept = []
    def hold(match):
        kept.append(match.group(1))
        return f"\0{len(kept) - 1}\0"
    text = _EMPHASIS.sub(hold, text).replace("*", r"\*").replace("|", r"\|")
    return _re.sub(r"\0(\d+)\0", lambda m: f"*{kept[int(m.group(1))]}*", text)


def markdown_docstring_line(line: str) -> str:
    "One docstring line from Markdown to reStructuredText: `code` → ``code`` (escaped where a letter or ² follows)."
    out, last = [], 0
    for match in _CODE.finditer(line):
        out.append(_rst_text(line[last:match.start()]))
        after = line[match.end():match.end() + 1]
        before = line[match.start() - 1:match.start()] if match.start() else ""
        lead = "\\ " if before and not _re.match(r"[\s\-(\[{<'\"/:]", before) else ""
        out.append(f"{lead}``{match.group(2).strip()}``" + ("\\ " if after and not _ENDS_INLINE.match(after) else ""))
        last = match.end()
    out.append(_rst_text(line[last:]))
    return "".join(out)


def _markdown_docstrings(app, what, name, obj, options, lines):
    lines[:] = [markdown_docstring_line(line) for line in lines]


def setup(app):
    app.connect("autodoc-process-docstring", _markdown_docstrings)


# autodoc imports bcl and so JAX, whose search for a TPU logs at INFO through the logging set up by an imported
# package; the build prints warnings only
import logging as _logging

_logging.getLogger("jax._src.xla_bridge").setLevel(_logging.WARNING)
