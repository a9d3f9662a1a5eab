"""bcl's public surface (`docs/guide.md`, "What a plugin may import"): every listed name imports from its listed module,
and the shipped plugins import nothing from bcl beyond it, so a move of a name a plugin relies on fails here until
the guide (and the CHANGELOG) say where it went."""
import ast
import importlib
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def surface() -> dict[str, set[str]]:
    "{module: names} from the guide's table."
    text = (ROOT / "docs" / "guide.md").read_text().split("### What a plugin may import", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `(bcl[\w.]*)` \| (.+) \|$", text, re.M)
    return {module: set(re.findall(r"`(\w+)`", names)) for module, names in rows}


def test_every_listed_name_imports_from_its_module():
    listed = surface()
    assert len(listed) >= 10, listed
    missing = [f"{module}.{name}" for module, names in listed.items() for name in sorted(names)
               if not hasattr(importlib.import_module(module), name)]
    assert not missing, f"listed in docs/guide.md but not importable there: {missing}"


def test_the_shipped_plugins_import_only_the_public_surface():
    listed = surface()
    outside = []
    for path in sorted((ROOT / "experiments" / "plugins").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("bcl"):
                outside += [f"{path.name}: {node.module}.{a.name}" for a in node.names
                            if a.name not in listed.get(node.module, set())]
    assert not outside, f"plugins import names the guide does not list as public: {outside}"
