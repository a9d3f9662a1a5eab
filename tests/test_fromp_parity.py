"""tests/parity/fromp_parity.py offline: the weight-layout conversion between torch and flax, the comparison's statuses, the
toy data, and the one-line skip without the official side. Needs neither torch nor the official FROMP code; the
harness itself (with both) is `test_the_harness_agrees_with_the_official_code`, which runs only when
$BCL_FROMP_REPO and $BCL_FROMP_PYTHON are set."""
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "tests" / "parity" / "fromp_parity.py"
sys.path.insert(0, str(ROOT / "tests" / "parity"))

import fromp_parity as fp  # noqa: E402


def _weights(seed=0, sizes=(2, 5, 5, 3)):
    return fp.torch_weights(np.random.default_rng(seed), list(sizes))


def test_torch_weights_have_torchs_layout():
    w = _weights()
    assert [a.shape for a in w] == [(5, 2), (5,), (5, 5), (5,), (3, 5), (3,)]  # weight [out, in], then bias
    assert all(a.dtype == np.float32 for a in w)
    fan_in = [2, 2, 5, 5, 5, 5]  # nn.Linear's default init: U(±1/sqrt(fan_in)) for weight and bias
    assert all(np.abs(a).max() <= 1 / np.sqrt(n) for a, n in zip(w, fan_in))


def test_layout_round_trip():
    w = _weights()
    tree = fp.to_flax(w)
    assert sorted(tree) == ["head", "tail"] and sorted(tree["tail"]) == ["Dense_0", "Dense_1"]
    assert tree["tail"]["Dense_0"]["kernel"].shape == (2, 5)  # flax: [in, out]
    assert tree["head"]["kernel"].shape == (5, 3)
    back = fp.to_torch(tree)
    assert len(back) == len(w) and all(np.array_equal(a, b) for a, b in zip(back, w))
    again = fp.to_flax(back)
    assert all(np.array_equal(again["tail"][k][p], tree["tail"][k][p])
               for k in tree["tail"] for p in ("kernel", "bias"))


def test_torch_vector_is_parameters_to_vector_order():
    # torch flattens each weight [out, in] row-major, then its bias, layer by layer
    sizes = [2, 3, 3, 2]
    shapes = [(3, 2), (3,), (3, 3), (3,), (2, 3), (2,)]
    counts = np.cumsum([0] + [int(np.prod(s)) for s in shapes])
    w = [np.arange(counts[i], counts[i + 1], dtype=np.float32).reshape(s) for i, s in enumerate(shapes)]
    vector = fp.torch_vector(fp.to_flax(w))
    np.testing.assert_array_equal(vector, np.arange(counts[-1], dtype=np.float32))
    assert fp.layer_sizes(3, 2) == sizes


def test_the_bcl_model_computes_the_official_mlp():
    "Our registered sigmoid MLP on `to_flax(w)` equals the official MLP's forward pass on the torch-layout `w`."
    import jax.numpy as jnp
    w = fp.torch_weights(np.random.default_rng(1))  # 2-20-20-3: the 20x20 layer is square, a missing .T fits silently
    xs = np.random.default_rng(2).normal(size=(7, 2)).astype(np.float32)
    model = fp.toy_model()
    ours = np.asarray(model.apply(fp.to_flax(w), jnp.asarray(xs)))
    assert fp.max_rel(ours, fp.mlp_forward(w, xs)) < 1e-5
    wrong = fp.to_flax(w)
    wrong["tail"]["Dense_1"]["kernel"] = wrong["tail"]["Dense_1"]["kernel"].T  # torch's layout left in place
    assert fp.max_rel(np.asarray(model.apply(wrong, jnp.asarray(xs))), fp.mlp_forward(w, xs)) > 1e-3


def test_compare_array_flags_a_perturbed_array():
    rng = np.random.default_rng(0)
    theirs = rng.normal(size=(4, 5))
    assert fp.compare_array("x", theirs.copy(), theirs, 1e-5)["status"] == "ok"
    ours = theirs.copy()
    ours[2, 3] += 1e-4 * np.abs(theirs).max()  # 1e-4 of the largest entry
    row = fp.compare_array("x", ours, theirs, 1e-5)
    assert row["status"] == "DIFF" and row["max_rel"] == pytest.approx(1e-4, rel=1e-6)
    assert fp.compare_array("x", ours, theirs, 1e-3)["status"] == "ok"
    ours[0, 0] = np.nan
    assert fp.compare_array("x", ours, theirs, 1.0)["status"] == "DIFF"
    with pytest.raises(ValueError, match="shapes differ"):
        fp.compare_array("x", theirs[:3], theirs, 1e-5)


def test_the_tolerance_follows_the_official_float32_error():
    rng = np.random.default_rng(1)
    reference = rng.normal(size=50)
    theirs = reference * (1 + 3e-6 * rng.normal(size=50))  # the official code's float32 rounding, ~1e-5 here
    official_error = fp.max_rel(theirs, reference)
    row = fp.compare_array("x", theirs * (1 + 1e-5), theirs, 1e-5, reference)
    assert row["official_f32_error"] == pytest.approx(official_error)
    assert row["tol"] == pytest.approx(max(1e-5, fp.REF_FACTOR * official_error))
    assert row["status"] == "ok"
    bug = theirs.copy()
    bug[7] *= 1.01  # a real difference stays one, whatever the rounding
    assert fp.compare_array("x", bug, theirs, 1e-5, reference)["status"] == "DIFF"
    assert fp.tolerance(1e-5, None) == 1e-5 and fp.tolerance(1e-5, 1e-8) == 1e-5


def test_memorable_sets_per_class():
    ys = np.array([0, 1, 2, 0, 1, 2, 0, 1, 2, 0])
    ours = np.array([0, 3, 1, 4, 2, 5])
    same_set_other_order = np.array([3, 0, 4, 1, 5, 2])
    row = fp.compare_memorable("m", ours, same_set_other_order, ys, (0, 1, 2))
    assert row["status"] == "ok" and row["same_order_within_class"] is False
    assert fp.compare_memorable("m", ours, ours, ys, (0, 1, 2))["same_order_within_class"] is True
    swapped = np.array([0, 6, 1, 4, 2, 5])  # class 0 keeps row 6 instead of row 3
    row = fp.compare_memorable("m", ours, swapped, ys, (0, 1, 2))
    assert row["status"] == "DIFF" and row["only_ours"]["0"] == [3] and row["only_theirs"]["0"] == [6]
    assert row["same_set_per_class"] == {"0": False, "1": True, "2": True}


def test_boundary_gap():
    ys = np.array([0, 0, 0, 1, 1, 1])
    scores = np.array([0.5, 0.4, 0.1, 0.3, 0.299, 0.2])
    # two kept a class: class 0 (0.4 - 0.1) / 0.4, class 1 (0.299 - 0.2) / 0.299
    assert fp.boundary_gap(scores, ys, (0, 1), 2) == pytest.approx(min(0.75, 0.099 / 0.299))
    assert fp.boundary_gap(scores, ys, (0, 1), 1) == pytest.approx(0.001 / 0.3)


def test_toy_tasks_are_seeded_blobs():
    a, b = fp.toy_tasks(np.random.default_rng(3)), fp.toy_tasks(np.random.default_rng(3))
    assert len(a) == fp.N_ENDED + 1
    for (xa, ya), (xb, yb) in zip(a, b):
        np.testing.assert_array_equal(xa, xb)
        assert xa.dtype == np.float32 and xa.shape == (fp.N_CLASSES * fp.N_PER_CLASS, 2)
        assert np.bincount(ya).tolist() == [fp.N_PER_CLASS] * fp.N_CLASSES
    xs, ys = a[1]  # task 2 (t = 1): class c is blob 3 + c
    for c in range(fp.N_CLASSES):
        assert np.abs(xs[ys == c].mean(0) - fp.CENTRES[fp.N_CLASSES + c]).max() < 0.1
    assert not np.array_equal(a[0][0], fp.toy_tasks(np.random.default_rng(4))[0][0])


def test_official_files_from_a_checkout_or_not(tmp_path):
    checkout = tmp_path / "fromp"
    checkout.mkdir()
    for name in fp.OFFICIAL_FILES:
        (checkout / name).write_text("# stand-in\n")
    folder, commit, source = fp.official_files(checkout, tmp_path)
    assert folder == checkout.resolve() and source == "checkout" and commit.startswith("unknown")
    assert isinstance(fp.official_files(tmp_path / "nothing", tmp_path), str)


def _run(*args, **env_extra):
    env = {k: v for k, v in os.environ.items() if k not in ("BCL_FROMP_REPO", "BCL_FROMP_PYTHON")} | env_extra
    return subprocess.run([sys.executable, str(SCRIPT), *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)


def test_without_the_official_side_it_prints_one_line_and_exits_0(tmp_path):
    out = tmp_path / "lines.jsonl"
    for args in ((), ("--fromp-repo", str(tmp_path)), ("--fromp-repo", str(tmp_path), "--fromp-python",
                                                       str(tmp_path / "no-python"))):
        run = _run(*args, "--out", str(out))
        assert run.returncode == 0, run.stderr
        assert len(run.stdout.strip().splitlines()) == 1 and "skipped" in run.stdout, run.stdout
    run = _run("--fromp-repo", str(tmp_path), "--fromp-python", sys.executable)  # no official code there
    assert run.returncode == 0 and len(run.stdout.strip().splitlines()) == 1 and "skipped" in run.stdout
    broken = tmp_path / "broken"  # files that do not import: the side's --probe fails, the harness skips
    broken.mkdir()
    for name in fp.OFFICIAL_FILES:
        (broken / name).write_text("raise ImportError('a stand-in')\n")
    run = _run("--fromp-repo", str(broken), "--fromp-python", sys.executable)
    assert run.returncode == 0 and len(run.stdout.strip().splitlines()) == 1, run.stdout + run.stderr
    assert "cannot import" in run.stdout
    assert not out.exists()


@pytest.mark.skipif(not (os.environ.get("BCL_FROMP_REPO") and os.environ.get("BCL_FROMP_PYTHON")),
                    reason="needs the official code and a Python with torch ($BCL_FROMP_REPO, $BCL_FROMP_PYTHON)")
def test_the_harness_agrees_with_the_official_code(tmp_path):
    out = tmp_path / "lines.jsonl"
    run = subprocess.run([sys.executable, str(SCRIPT), "--seed", "0", "--out", str(out)], cwd=ROOT,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    assert len(out.read_text().splitlines()) == 12


# ---------------------------------------------------------------- whole runs (tests/parity/fromp_seeds.py)
import fromp_seeds as fs  # noqa: E402


def test_the_whole_run_tasks_are_the_official_toys_blobs():
    tasks = fs.toy_sequence_arrays(3, n_per_class=400)
    assert len(tasks) == 5
    for t, task in enumerate(tasks):
        assert task["xs"].shape == (800, 2) and task["xs"].dtype == np.float32 and task["test_xs"].shape == (1000, 2)
        for c in (0, 1):  # class c of task t is blob t + 5c
            mean = task["xs"][task["ys"] == c].mean(0)
            assert np.abs(mean - np.asarray(fp.CENTRES[t + 5 * c])).max() < 0.05, (t, c, mean)
        assert 0.3 < task["ys"][:100].mean() < 0.7  # shuffled, not sorted by class
    again = fs.toy_sequence_arrays(3, n_per_class=400)
    assert all(np.array_equal(a["xs"], b["xs"]) for a, b in zip(tasks, again))


def test_the_whole_run_inputs_give_both_sides_the_same_arrays():
    per_seed, npz = fs.inputs([0, 7], n_per_class=50)
    meta = __import__("json").loads(str(npz["meta"]))
    assert meta["seeds"] == [0, 7] and meta["tau"] == 1.0 and meta["eps"] == 1e-3
    for s, seed in enumerate([0, 7]):
        flat = np.concatenate([w.ravel() for w in per_seed[seed]["weights"]])
        assert np.array_equal(npz[f"theta0/{s}"], flat) and flat.size == 2 * 20 + 20 + 20 * 20 + 20 + 20 * 2 + 2
        assert np.array_equal(npz[f"xs4/{s}"], per_seed[seed]["tasks"][4]["xs"])
    assert not np.array_equal(npz["theta0/0"], npz["theta0/1"])


def test_welch_interval_of_known_samples():
    a, b = np.array([1.0, 2.0, 3.0, 4.0]), np.array([2.0, 4.0, 6.0])
    w = fs.welch(a, b)
    assert w["difference"] == pytest.approx(-1.5)
    # se² = 1.6667/4 + 4/3, Welch–Satterthwaite dof 2.90; t(0.975, 2.90) ≈ 3.23
    se = np.sqrt(5 / 12 + 4 / 3)
    assert w["dof"] == pytest.approx((5 / 12 + 4 / 3) ** 2 / ((5 / 12) ** 2 / 3 + (4 / 3) ** 2 / 2), rel=1e-9)
    from scipy import stats
    half = stats.t.ppf(0.975, w["dof"]) * se
    assert w["interval"] == pytest.approx([-1.5 - half, -1.5 + half])
    assert w["interval"][0] < 0 < w["interval"][1]


def test_whole_runs_skip_without_the_official_side(tmp_path):
    run = subprocess.run([sys.executable, str(ROOT / "tests" / "parity" / "fromp_seeds.py"), "--fromp-repo", str(tmp_path),
                          "--fromp-python", sys.executable], capture_output=True, text=True,
                         env={k: v for k, v in os.environ.items() if not k.startswith("BCL_FROMP")})
    assert run.returncode == 0 and "skipped" in run.stdout, run.stdout + run.stderr
