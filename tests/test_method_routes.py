"""Every route from a method's name to a `Method` builds what it built before the method factory (issue 70).

The routes: the front door `bcl.method`, the visualisation's `build_method`, and the table cell's
`build_cell_method`, for every method of Table faa on the visualisation sequences and on MNIST-5k-shaped columns
under each profile and schedule. What a route builds is recorded as the method's name, likelihood, `Training`,
constructor settings (the checkpoint fingerprint), model and hyperparameter grid; nothing is trained. The record in
`tests/fixtures/method_routes.json` was written before the factory replaced the routes, so a refactor that changes
what any route builds fails here.

Write it again, after a change that is meant to change a method, with `python tests/test_method_routes.py --write`,
and say why in the CHANGELOG.
"""
import json
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "method_routes.json"
CELL_COLUMNS = ("ci-mnist-fe", "di-mnist-fe", "ci-mnist-fcnn", "di-mnist-fcnn", "ci-mnist-cnn", "di-mnist-cnn")


def _plain(value):
    "A JSON-able form of a setting, a `Training`, a model's fields or a grid."
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, tuple) and hasattr(value, "_asdict"):
        return {k: _plain(v) for k, v in value._asdict().items() if not callable(v)}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (np.ndarray, np.generic)) or type(value).__module__.startswith("jax"):
        return np.asarray(value).tolist()
    if callable(value):
        return getattr(value, "__name__", type(value).__name__)
    return value


def built(method, hyper) -> dict:
    "What a route built, as plain data."
    return {"name": method.name, "likelihood": method.likelihood, "training": _plain(method.training),
            "settings": _plain(method.settings), "model": _plain(method.model), "hyper": _plain(hyper)}


def _feature_like(sequence, width: int = 64):
    "The sequence with every input cut to its first `width` pixels: an extractor column's shapes, no extractor."
    from bcl.core import Split
    cut = lambda split: Split(np.asarray(split.xs).reshape(len(split.ys), -1)[:, :width], split.ys)
    tasks = tuple(task._replace(train=cut(task.train), validation=cut(task.validation), test=cut(task.test))
                  for task in sequence.tasks)
    return sequence._replace(tasks=tasks, input_shape=(width,))


def records() -> dict:
    "Every route's build of every method, keyed 'route|where|method'."
    import bcl
    from bcl.data.sequences import load_sequence
    from bcl.figure.visualisation import build_method
    from bcl.paper import TABLE_METHODS
    from bcl.table.cell import build_cell_method
    from bcl.table.plan import SCHEDULES, plan_cell
    out = {}
    for name in ("cisplit2diris", "disinusoid"):
        sequence = load_sequence(name)
        for m in TABLE_METHODS:
            spec = build_method(m, sequence)
            out[f"visualisation|{name}|{m}"] = built(spec.method, spec.hyper)
            recipe = bcl.method(m, sequence, epochs=3)
            out[f"api|{name}|{m}"] = built(recipe.method, recipe.hyper)
        out[f"visualisation|{name}|hmc"] = _plain(build_method("hmc", sequence).hmc)
    mnist = {"ci": load_sequence("cisplitmnist5k"), "di": load_sequence("displitmnist5k")}
    for column in CELL_COLUMNS:
        sequence = mnist[column[:2]]
        if column.endswith("-fe"):
            sequence = _feature_like(sequence)
        for profile, schedules in (("offline", tuple(SCHEDULES)), ("paper", ("epochs",))):
            for schedule in schedules:
                for m in TABLE_METHODS:
                    plan = plan_cell(column, m, profile, (0, 1), schedule=schedule)
                    method, hyper, record = build_cell_method(plan, sequence)
                    out[f"cell|{column}|{profile}|{schedule}|{m}"] = built(method, hyper) | {"record": _plain(record)}
    return out


@pytest.fixture(scope="module")
def current():
    return records()


def changed_builds(current: dict, expected: dict) -> list[str]:
    "The keys whose build differs from the record (compared as JSON, as the record was written)."
    return [key for key in expected if json.loads(json.dumps(current.get(key))) != expected[key]]


def test_every_route_builds_what_it_built_before(current):
    expected = json.loads(FIXTURE.read_text())
    assert sorted(current) == sorted(expected), "the routes cover other methods or columns than the fixture"
    changed = changed_builds(current, expected)
    assert not changed, f"{len(changed)} builds changed, e.g. {changed[:5]}"


def test_the_record_notices_one_changed_setting_and_only_it(current):
    "A check that cannot fail proves nothing: one doubled learning rate must show, in that build alone."
    expected = json.loads(FIXTURE.read_text())
    key = "cell|ci-mnist-fcnn|offline|steps-matched|l-gm-sfsvi"
    altered = dict(current)
    altered[key] = json.loads(json.dumps(current[key]))
    altered[key]["hyper"]["learning_rate"] *= 2
    assert changed_builds(altered, expected) == [key]


if __name__ == "__main__" and "--write" in sys.argv:
    FIXTURE.parent.mkdir(parents=True, exist_ok=True)
    lines = [f"{json.dumps(key)}: {json.dumps(value, sort_keys=True)}" for key, value in sorted(records().items())]
    FIXTURE.write_text("{\n" + ",\n".join(lines) + "\n}\n")  # one build a line: a diff names the builds it changes
    print(f"wrote {FIXTURE}")


def test_names_become_methods_only_in_the_factory():
    "Outside `bcl.factory`, nothing in the package or the scripts turns a method's name into a method itself."
    import re
    by_name = re.compile(r"\b(map_suite|svi_parts)\(")
    found = []
    for folder in ("bcl", "experiments", "benchmarks", "tests/parity", "scripts"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path.name == "_modidx.py" or path == ROOT / "bcl" / "factory.py":
                continue
            for number, line in enumerate(path.read_text().splitlines(), 1):
                if by_name.search(line) and not line.lstrip().startswith("def "):
                    found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not found, "build methods by name with bcl.factory.build (or build_on):\n" + "\n".join(found)
