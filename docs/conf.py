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
