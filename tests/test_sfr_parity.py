"""tests/parity/sfr_parity.py offline: the weight layout it writes for the official side, the Welch interval, and the
one-line skip without the official side. Needs neither torch nor the official SFR code; the harness itself (with
both) is `test_the_pieces_agree_with_the_official_code`, which runs only when $BCL_SFR_REPO and $BCL_SFR_PYTHON
are set."""
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "tests" / "parity" / "sfr_parity.py"
sys.path.insert(0, str(ROOT / "tests" / "parity"))

import sfr_parity as sp  # noqa: E402


def test_the_weights_are_written_input_to_output_in_flax_layout():
    import jax
    from bcl.models import make_model
    model = make_model("fcnn256", 10, (28, 28, 1))
    params = model.init(jax.random.key(0))
    flat = sp.flat_weights(params, "theta/")
    assert sorted(flat) == [f"theta/{k}{i}" for k in ("bias", "kernel") for i in range(3)]
    assert [flat[f"theta/kernel{i}"].shape for i in range(3)] == [(784, 256), (256, 256), (256, 10)]  # [in, out]
    assert np.array_equal(flat["theta/kernel2"], np.asarray(params["head"]["kernel"]))
    # the official side's network applies x @ kernel + bias layer by layer with swish: the same logits as bcl's
    x = np.random.default_rng(0).random((3, 28, 28, 1), dtype=np.float32)
    h = x.reshape(3, -1)
    for i in range(3):
        h = h @ flat[f"theta/kernel{i}"] + flat[f"theta/bias{i}"]
        if i < 2:
            h = h / (1 + np.exp(-h))
    np.testing.assert_allclose(h, model.apply(params, x), rtol=1e-4, atol=1e-5)


def test_the_welch_interval_holds_the_difference_and_widens_with_spread():
    a, b = np.array([90.0, 92, 94, 96]), np.array([89.0, 91, 93, 95])
    w = sp.welch(a, b)
    (low, high), (low2, high2) = w["interval"], sp.welch(2 * a, 2 * b)["interval"]
    assert w["difference"] == pytest.approx(1.0) and low < 1.0 < high
    assert sp.welch(2 * a, 2 * b)["difference"] == pytest.approx(2.0)  # both scaled by 2: difference and width double
    assert high2 - low2 == pytest.approx(2 * (high - low))


def _run(*args, **env_extra):
    env = {k: v for k, v in os.environ.items() if k not in ("BCL_SFR_REPO", "BCL_SFR_PYTHON")} | env_extra
    return subprocess.run([sys.executable, str(SCRIPT), *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)


def test_without_the_official_side_it_prints_one_line_and_exits_0(tmp_path):
    for args in ((), ("--sfr-repo", str(tmp_path)), ("--sfr-repo", str(tmp_path), "--sfr-python",
                                                     str(tmp_path / "no-python"))):
        run = _run(*args, "pieces")
        assert run.returncode == 0, run.stderr
        assert len(run.stdout.strip().splitlines()) == 1 and "skipped" in run.stdout, run.stdout
    run = _run("--sfr-repo", str(tmp_path), "--sfr-python", sys.executable, "runs")  # no official code there
    assert run.returncode == 0 and "neither" in run.stdout, run.stdout + run.stderr


@pytest.mark.skipif(not (os.environ.get("BCL_SFR_REPO") and os.environ.get("BCL_SFR_PYTHON")),
                    reason="needs the official code and a Python with torch and scipy ($BCL_SFR_REPO, $BCL_SFR_PYTHON)")
def test_the_pieces_agree_with_the_official_code(tmp_path):
    out = tmp_path / "pieces.json"
    run = subprocess.run([sys.executable, str(SCRIPT), "--sfr-repo", os.environ["BCL_SFR_REPO"], "--sfr-python",
                          os.environ["BCL_SFR_PYTHON"], "pieces", "--out", str(out)], cwd=ROOT, capture_output=True,
                         text=True, timeout=900)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "FAIL" not in run.stdout and out.exists()
