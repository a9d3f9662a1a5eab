"""Results that cannot drift silently: committed seed distributions of a few cheap cells, checked on every `make test`.

Each target is one method trained on CI Split 2D Iris with the paper's settings but 20 epochs a task, seeds 0-9 (one
vmapped program each), its final average accuracy per seed in `tests/targets/cisplit2diris.json`. A rerun drifts
when, by the reproduction protocol's rule (`bcl.table.verdict.judge`, the paper-data margin of 1 point), the
committed mean lies outside the rerun's 95 % prediction interval for one run (with the larger of the two spreads):
a change that moves a result fails here, while a different machine's rounding, which flips a prediction or two, does
not. A deliberate change to one method's objective (experience replay's replayed points weighing nothing) must fail
the check (a test below).

Write the targets again, after a change that is meant to move them, with `python tests/test_targets.py --write`, and
say why in the CHANGELOG.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
TARGETS = ROOT / "tests" / "targets" / "cisplit2diris.json"
SEQUENCE, EPOCHS, SEEDS = "cisplit2diris", 20, tuple(range(10))
METHODS = ("finetuning", "er", "l-g-vcl", "p-g-sfsvi", "l-gm-sfsvi")

RUN = """
import json, sys
import bcl
from bcl.metrics import final_average_accuracy
name, epochs, seeds, weightless = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3]), sys.argv[4] == "1"
if weightless:  # the deliberate change: experience replay's replayed points weigh nothing in its loss
    import jax.numpy as jnp
    from bcl.methods import map as map_methods
    draw = map_methods.coreset_draw
    map_methods.coreset_draw = lambda key, memory, n: draw(key, memory, n)._replace(mask=jnp.zeros((n,)))
sequence = bcl.load_sequence(sys.argv[5])
result = bcl.train(bcl.method(name, sequence, epochs=epochs), sequence, seeds=seeds, progress=False)
print(json.dumps((final_average_accuracy(result.metrics["test/accuracy"])[0] * 100).tolist()))
"""


def per_seed(method: str, weightless: bool = False) -> list[float]:
    "The final average accuracy (percent) of every seed of one target, trained in a process of its own."
    arguments = [method, str(EPOCHS), json.dumps(SEEDS), "1" if weightless else "0", SEQUENCE]
    done = subprocess.run([sys.executable, "-c", RUN, *arguments], capture_output=True, text=True, cwd=ROOT,
                          timeout=1200, env={**os.environ, "TQDM_DISABLE": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def drift(target: list[float], rerun: list[float]) -> str | None:
    """None when the committed mean is a plausible run of the rerun's seeds; else what moved. The spread is the larger
    of the two sample sds, so that a rerun whose seeds happen to agree exactly is not judged on no spread at all."""
    from bcl.table.verdict import Outcome, judge, load_protocol
    runs = np.asarray(rerun, float)
    sd = max(float(runs.std(ddof=1)), float(np.std(target, ddof=1)))
    j = judge(float(runs.mean()), sd, len(runs), float(np.mean(target)), load_protocol().rule, substitute=False)
    if j.outcome is Outcome.DIFFERS:
        return f"mean {np.mean(target):.2f} committed, {runs.mean():.2f} now, outside the rerun's interval {j.interval}"
    return None


def committed() -> dict:
    return json.loads(TARGETS.read_text())


def test_the_targets_are_committed_for_every_method():
    record = committed()
    assert (record["sequence"], record["epochs"], tuple(record["seeds"])) == (SEQUENCE, EPOCHS, SEEDS)
    assert tuple(record["methods"]) == METHODS
    assert all(len(v) == len(SEEDS) for v in record["methods"].values())


@pytest.mark.parametrize("method", METHODS)
def test_results_match_their_targets(method):
    moved = drift(committed()["methods"][method], per_seed(method))
    assert moved is None, f"{method}: {moved}. If the change is meant, write the targets again (this file's docstring)."


def test_a_changed_objective_fails_its_target():
    "Experience replay whose replayed points weigh nothing forgets like fine-tuning: its target check must fail."
    target = committed()["methods"]["er"]
    changed = per_seed("er", weightless=True)
    assert drift(target, changed) is not None, (np.mean(target), np.mean(changed))


def write() -> None:
    "Train every target and write the committed file, with what produced it."
    from conftest import _test_xla_flags  # the XLA flags `make test` trains the targets with
    os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {_test_xla_flags()}".strip()
    from bcl.provenance import provenance
    record = {"sequence": SEQUENCE, "epochs": EPOCHS, "seeds": list(SEEDS),
              "methods": {m: per_seed(m) for m in METHODS}, "provenance": provenance()}
    TARGETS.parent.mkdir(parents=True, exist_ok=True)
    TARGETS.write_text(json.dumps(record, indent=1) + "\n")
    for m, values in record["methods"].items():
        print(f"{m:11s} {np.mean(values):6.2f} ± {np.std(values, ddof=1):5.2f}  {np.round(values, 1).tolist()}")


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        sys.exit("usage: python tests/test_targets.py --write")
    sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
    write()
