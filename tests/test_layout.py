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
