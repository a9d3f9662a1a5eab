"""The package's shape: notebooks in the same tree as `bcl/`, numbered by dependency, and README's layout table.

- a notebook under `nbs/<folder>/` exports into `bcl.<folder>`, and one at the top of `nbs/` into a top-level module;
- a module imports only modules whose notebooks have smaller numbers (lazy imports inside functions included), so
  the numbers are an order in which the notebooks can be read and run;
- every subpackage of `bcl/` has a row in README's layout table;
- no exported function takes more than 8 parameters: a longer list is grouped in a spec or settings value.
"""
import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
IMPORT = re.compile(r"^(\s*)from (\.+)?([a-z_.]*) import ([A-Za-z_, ()]+)", re.M)


def _exported() -> dict[str, tuple[int, Path]]:
    "{module: (notebook number, notebook path)} of every exporting notebook."
    found = {}
    for notebook in sorted((ROOT / "nbs").rglob("*.ipynb")):
        module = re.search(r"#\| default_exp ([a-z_.]+)", notebook.read_text())
        number = re.match(r"(\d+)_", notebook.name)
        if module and number:
            found[f"bcl.{module.group(1)}"] = (int(number.group(1)), notebook)
    return found


def _imports(module: str) -> set[str]:
    "The bcl modules that `module`'s source imports, at the top or inside functions."
    source = (ROOT / (module.replace(".", "/") + ".py")).read_text()
    package = module.rsplit(".", 1)[0]
    found = set()
    for _, dots, name, names in IMPORT.findall(source):
        if dots:
            base = package if len(dots) == 1 else package.rsplit(".", len(dots) - 1)[0]
            full = f"{base}.{name}" if name else base
        elif name.startswith("bcl"):
            full = name
        else:
            continue
        found |= {full} | {f"{full}.{n.strip(' ()')}" for n in names.split(",")}
    return found


def test_notebooks_sit_in_their_package_folder():
    exported = _exported()
    assert len(exported) > 30, exported
    for module, (_, notebook) in exported.items():
        folder = notebook.parent.relative_to(ROOT / "nbs").parts
        assert module.split(".")[1:-1] == list(folder), f"{notebook.relative_to(ROOT)} exports {module}"


def test_modules_import_only_smaller_numbers():
    exported = _exported()
    backwards = [f"{module} ({number}) imports {other} ({exported[other][0]})"
                 for module, (number, _) in exported.items()
                 for other in _imports(module) if other in exported and other != module
                 and exported[other][0] >= number]
    assert not backwards, backwards


def test_readme_layout_names_every_subpackage():
    layout = (ROOT / "README.md").read_text().split("## Layout", 1)[1]
    packages = sorted(p.parent.name for p in (ROOT / "bcl").glob("*/__init__.py"))
    assert packages, "no subpackages under bcl/"
    missing = [p for p in packages if f"`bcl/{p}/`" not in layout]
    assert not missing, missing


MAX_PARAMETERS = 8


def _signatures() -> list[tuple[str, str, int]]:
    "(module file, function, number of parameters) of every exported function of the package."
    found = []
    for path in sorted((ROOT / "bcl").rglob("*.py")):
        if path.name == "_modidx.py":
            continue
        tree = ast.parse(path.read_text())
        exported = set()
        for node in tree.body:
            if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets):
                exported = {e.value for e in node.value.elts if isinstance(e, ast.Constant)}
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name in exported:
                a = node.args
                n = len(a.posonlyargs) + len(a.args) + len(a.kwonlyargs) + bool(a.vararg) + bool(a.kwarg)
                found.append((str(path.relative_to(ROOT)), node.name, n))
    return found


def test_no_exported_function_takes_more_than_eight_parameters():
    found = _signatures()
    counts = {name: n for _, name, n in found}
    assert counts.get("train_sequence") == 8, "the scan no longer reads __all__ or signatures; check it"
    long = [f"{file}: {name} has {n} parameters" for file, name, n in found if n > MAX_PARAMETERS]
    assert not long, ("these exported functions take more than 8 parameters; group them in a spec or settings value "
                      "(a NamedTuple, as TrainOptions or CellSpec):\n" + "\n".join(long))


def test_method_parts_are_compared_as_values_never_as_strings():
    "A method's parts (`bcl.paper.Kind`, `Focus`, `Family`, `Space`) are enum members: `info.space == 'function'` is"
    # always False, so a comparison with a string literal is a bug; none may come back in the package or the scripts
    pattern = re.compile(r"\.(kind|focus|family|space)\s*(==|!=|\bin\b|\bis\b)\s*[\"'(]")
    found = []
    for folder in ("bcl", "experiments", "benchmarks", "tests/parity"):
        for path in (ROOT / folder).rglob("*.py"):
            for number, line in enumerate(path.read_text().splitlines(), 1):
                if pattern.search(line) and "dtype.kind" not in line:
                    found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not found, "compare a method part with its member (bcl.paper.Kind.MAP, ...):\n" + "\n".join(found)
    from bcl.paper import METHOD_INFO, Space
    assert METHOD_INFO["l-g-sfsvi"].space is Space.FUNCTION and METHOD_INFO["l-g-sfsvi"].space != "function"


# Layers, bottom to top: core → data → engine → algorithms (vi, methods) → the extractor's pre-training → the paper's
# registry and the factory → experiments (table) → figures. A layer imports nothing above it.
ABOVE = {"bcl.data": ("bcl.engine", "bcl.vi", "bcl.methods", "bcl.extractor", "bcl.paper", "bcl.factory", "bcl.table",
                      "bcl.figure"),
         "bcl.vi": ("bcl.extractor", "bcl.paper", "bcl.factory", "bcl.table", "bcl.figure"),
         "bcl.methods": ("bcl.extractor", "bcl.paper", "bcl.factory", "bcl.table", "bcl.figure"),
         "bcl.extractor": ("bcl.paper", "bcl.factory", "bcl.table", "bcl.figure")}  # pre-training: a stage above them


def test_layers_import_nothing_above_them():
    crossings = set()
    for module in _exported():
        for layer, above in ABOVE.items():
            if module.startswith(layer + "."):
                crossings |= {f"{module} imports {upper}" for other in _imports(module) for upper in above
                              if other == upper or other.startswith(upper + ".")}
    assert not crossings, f"these modules import a layer above their own: {sorted(crossings)}"


def test_tables_do_not_draw():
    drawing = [str(p.relative_to(ROOT)) for p in (ROOT / "bcl" / "table").glob("*.py")
               if re.search(r"^\s*(import|from) matplotlib", p.read_text(), re.M)]
    assert not drawing, f"these table modules import matplotlib; drawing belongs in bcl/figure: {drawing}"
