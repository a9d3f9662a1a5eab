"""Equivalence harness: FROMP's pieces in `bcl.methods.fromp` against the official PyTorch code (Pan et al., NeurIPS
2020; github.com/team-approx-bayes/fromp, code at commit f5db51c, HEAD c9606ec adds only README changes), on the
same weights, inputs and labels.

Usage (our environment; the official side runs as a subprocess with a Python that has torch):
  .venv/bin/python tests/parity/fromp_parity.py --fromp-repo /path/to/fromp --fromp-python /path/to/venv/bin/python \\
      [--seed 0] [--x64] [--out benchmarks/results/fromp_parity.jsonl] [--keep DIR]

`--fromp-repo` is either a checkout (a folder holding the official utils.py, opt_fromp.py and models.py: they are
imported from there) or a bare git repository (a folder with HEAD and objects/, such as a mirror): then the three
files are written by `git --git-dir=REPO show f5db51c:FILE` into a temporary folder and imported from there. Both
also read from $BCL_FROMP_REPO / $BCL_FROMP_PYTHON. datasets.py is never imported (its
`sklearn.datasets.samples_generator` is gone from current scikit-learn); the data are built here.

The setting is the official toy's (train_toydata.py:93-114, main_toydata.py:8-16): `models.MLP([2, 20, 20, C],
act='sigmoid')`, batches of 20, 20 memorable points a task, prior precision δ = 1e-4, jitter ε = 1e-3. Two changes:
C = 3 classes (the toy's tasks have 2; with 3 the softmax Hessian has off-diagonal structure a 2-class task does not
show) and τ = 0.5 (the toy's is 1; with τ ≠ 1 a misplaced τ would show). So ⌊20/3⌋ = 6 points a class, M = 18.

Data: three tasks of the toy's blobs (datasets.py:18-21, centres and standard deviations as `ToydataGenerator`
option 0), class c of task t being blob (C·t + c) mod 10, 50 points a class, shuffled within the task, from
`numpy.random.default_rng(seed)`; float32 (float64 under --x64). Weights: θ0 drawn as `nn.Linear`'s default
(U(±1/√fan_in), torch's layout: weight [out, in], bias), then θ1 = 300 steps of full-batch Adam (0.05) on task 1's
cross-entropy from θ0 and θ2 = the same on task 2 from θ1 (`train_weights`, always float32): trained weights are
confident on most of a task and unsure near its boundaries, as FROMP meets them (random weights often give one
class p > 0.999 on a whole blob, where tr Λ = Σ p(1 - p) loses most of its float32 digits in 1 - p). The moved
weights are θ2 + 0.05·N(0, 1). Ours is a `bcl.models` Model (`make_model` of a registered tail of Dense–sigmoid
layers, as the toy's MLP); its flax kernels [in, out] are the transposes of torch's weights (`to_flax`, `to_torch`).
The official side receives the flat vector of our parameters in torch's order (`torch_vector`), so the layout
conversion is itself under test. The batch of the step is task 3's first 20 rows.

What both sides compute (ours: bcl.methods.fromp; theirs: tests/parity/fromp_side.py, which has the official lines):
  scores/t        tr Λ(x) on task t's data at θt: `memorable_scores` / `softmax_hessian(f).sum(-1)` (utils.py:40-45)
  memorable/t     the memorable rows of task t, compared as a set per class: `select_memorable(None, ...)` /
                  `select_memorable_points` (utils.py:25-73). Not compared: the order within a class (reported)
  ggn/t           Σ over tasks 1..t of the GGN diagonal over the task's data at θs: `ggn_diagonal` summed /
                  `update_fisher` (utils.py:105-117, opt_fromp.py:218-231), `opt.state['fisher']` after task t
  kernel          K_{s,c} + εI for s = 1, 2 and every class, at θ2 with Σ = 1/(ggn/2 + δ): `fromp_kernel` + εI /
                  the input of `torch.cholesky` in `init_task` (opt_fromp.py:117, 137-139), recorded by a spy
  chol            its lower Cholesky factor: `fromp_memory(...).chol` / the output of `torch.cholesky`
  kernel_inv      K⁻¹: `cho_solve((chol, True), I)` (bcl never forms it; its penalty solves with chol) /
                  `state['kernel_inv']`, `cholesky_inverse(cholesky(K + εI))` (opt_fromp.py:139)
  targets         m_old, the probabilities at the memorable points at θ2: `fromp_memory(...).targets` /
                  `state['memorable_logits']` (opt_fromp.py:122-128)
  penalty_grad    at the moved weights: ∇ fromp_penalty / τ / the gradient `opt.step` forms with a zero data loss,
                  Σ_s Σ_c G_{s,c}ᵀ K_{s,c}⁻¹ δ_{s,c} (opt_fromp.py:256-293)
  step_grad       ∇(ℓ + fromp_penalty)/τ, ℓ the mean cross-entropy of a batch of 20 points of task 3 / the step's
                  gradient with the toy driver's data loss, ∇ℓ/τ + the above (opt_fromp.py:248-293)
The memory (kernel, chol, kernel_inv, targets, the gradients) is built on both sides from the memorable points in the
official order: the same set as ours when memorable/t agrees, so this only reorders our rows; the official order
within a class is not always descending (the buffer is re-sorted only when it overflows, utils.py:63-66).

Each quantity gets the largest relative difference, max|ours - theirs| / max|theirs|, a tolerance and a status;
the memorable points get set equality per class and the relative score gap at the boundary of the kept points
(smallest over classes; a gap at float rounding would let the two codes keep different points legitimately).

Tolerances. In float32 the official side also runs every quantity in float64 on the same inputs (a reference pass,
its memory built on the float32 pass's memorable points) and the row reports the official code's own float32 error
(theirs against that reference) and ours. The tolerance is max(base, 10 × the official float32 error), with base
1e-5, 1e-4 for kernel_inv: bcl passes when it is within an order of magnitude of the rounding the official code
itself commits on these inputs. This matters for the kernel inverse (and the Cholesky factor and the gradients
through it): its float32 error grows with cond(K + εI) (reported as `cond`, up to ~1e5 here), so no fixed tolerance
is both safe and sharp. A real difference (a misplaced τ, another jitter, a transpose) is orders of magnitude above
it. Under --x64 the tolerances are fixed: 1e-12, 1e-10 for kernel_inv.
One JSON line per quantity (with provenance) is appended to --out; the exit status is 1 if any quantity fails.
Without --fromp-repo/--fromp-python, or when the official side cannot import torch and the official modules, it
prints one line and exits with status 0.

Results and every difference explained: tests/parity/README.md, "FROMP against its official code".
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import official_side  # noqa: E402  (probing and running the official half)
ROOT = HERE.parents[1]  # the repository: this file is tests/parity/X.py
PROG = "fromp_parity.py"
FROMP_COMMIT = "f5db51c2207b5d007752d79bb65eebf3fc3a6430"  # the official code (HEAD c9606ec changes only README.md)
OFFICIAL_FILES = ("utils.py", "opt_fromp.py", "models.py")

# the official toy's settings (train_toydata.py:93-114, main_toydata.py:8-16) but C and τ
HIDDEN = 20  # --hidden_size, layer_size = [2, hidden_size, hidden_size, 2]
N_CLASSES = 3  # the toy's tasks have 2
BATCH_SIZE = 20  # --batch_size (the inducingloader of selection and update_fisher)
NUM_POINTS = 20  # --num_points: ⌊20/C⌋ a class
PRIOR_PREC = 1e-4  # opt_fromp(..., prior_prec=1e-4)
EPS = 1e-3  # opt.init_task(closure, tid, eps=1e-3)
TAU = 0.5  # the toy's --tau is 1
N_ENDED = 2  # tasks whose end (selection, GGN) is run; the memory then holds both, and task 3 gives the batch
N_PER_CLASS = 50
TRAIN_STEPS, TRAIN_LR = 300, 0.05  # full-batch Adam on each task's cross-entropy: θ1, then θ2 from θ1
MOVE = 0.05  # the moved weights: θ2 + MOVE · N(0, 1)

# ToydataGenerator option 0 (datasets.py:18-21)
CENTRES = [[0, 0.2], [0.6, 0.9], [1.3, 0.4], [1.6, -0.1], [2.0, 0.3], [0.45, 0], [0.7, 0.45], [1.0, 0.1], [1.7, -0.4],
           [2.3, 0.1]]
STDS = [[0.08, 0.22], [0.24, 0.08], [0.04, 0.2], [0.16, 0.05], [0.05, 0.16], [0.08, 0.16], [0.16, 0.08], [0.06, 0.16],
        [0.24, 0.05], [0.05, 0.22]]

TOL = {False: {"default": 1e-5, "kernel_inv": 1e-4}, True: {"default": 1e-12, "kernel_inv": 1e-10}}  # base levels
REF_FACTOR = 10  # float32: a difference up to 10x the official code's own float32 error is rounding
# deliberate changes on our side, reported next to each memory row: what a real difference would look like
SENSITIVITY_LABELS = {"eps": "jitter 1.1 eps", "tau": "tau 1 on our side"}


# ---------------------------------------------------------------- inputs (pure numpy)
def toy_tasks(rng: np.random.Generator, n_tasks: int = N_ENDED + 1, n_classes: int = N_CLASSES,
              n_per_class: int = N_PER_CLASS) -> list[tuple[np.ndarray, np.ndarray]]:
    "Task t (0-based): class c is blob (C·t + c) mod 10 of the official toy, rows shuffled; float32 xs, int64 ys."
    tasks = []
    for t in range(n_tasks):
        blobs = [(t * n_classes + c) % len(CENTRES) for c in range(n_classes)]
        xs = np.concatenate([rng.normal(CENTRES[b], STDS[b], size=(n_per_class, 2)) for b in blobs])
        ys = np.repeat(np.arange(n_classes), n_per_class)
        order = rng.permutation(len(ys))
        tasks.append((xs[order].astype(np.float32), ys[order].astype(np.int64)))
    return tasks


def layer_sizes(hidden: int = HIDDEN, n_classes: int = N_CLASSES) -> list[int]:
    return [2, hidden, hidden, n_classes]


def torch_weights(rng: np.random.Generator, sizes=None) -> list[np.ndarray]:
    "[W0, b0, W1, b1, ...] in torch's layout (weight [out, in]), U(±1/√fan_in) as `nn.Linear`'s default, float32."
    sizes = sizes or layer_sizes()
    out = []
    for n_in, n_out in zip(sizes, sizes[1:]):
        bound = 1 / np.sqrt(n_in)
        out += [rng.uniform(-bound, bound, (n_out, n_in)), rng.uniform(-bound, bound, n_out)]
    return [a.astype(np.float32) for a in out]


def _layer_names(params_or_n) -> list[tuple[str, ...]]:
    "Our Dense layers in torch's order: tail/Dense_0, tail/Dense_1, ..., head."
    n_hidden = params_or_n if isinstance(params_or_n, int) else len(params_or_n["tail"])
    return [("tail", f"Dense_{i}") for i in range(n_hidden)] + [("head",)]


def _get(tree, path):
    for key in path:
        tree = tree[key]
    return tree


def to_flax(weights: list) -> dict:
    "torch's [W0, b0, W1, b1, ...] (weight [out, in]) -> our {'tail': {'Dense_i'}, 'head'} (kernel [in, out])."
    if len(weights) % 2:
        raise ValueError(f"expected weight/bias pairs, got {len(weights)} arrays")
    layers = [{"kernel": np.asarray(w).T, "bias": np.asarray(b)} for w, b in zip(weights[::2], weights[1::2])]
    return {"tail": {f"Dense_{i}": layer for i, layer in enumerate(layers[:-1])}, "head": layers[-1]}


def to_torch(params) -> list[np.ndarray]:
    "The inverse of `to_flax`: our tree (or a tree like it: a GGN, a gradient) -> torch's [W0, b0, ...]."
    out = []
    for path in _layer_names(params):
        layer = _get(params, path)
        out += [np.asarray(layer["kernel"]).T, np.asarray(layer["bias"])]
    return out


def torch_vector(params) -> np.ndarray:
    "Our tree flattened as torch's `parameters_to_vector` flattens the MLP: each weight [out, in] row-major, then bias."
    return np.concatenate([a.reshape(-1) for a in to_torch(params)])


def mlp_forward(weights: list, xs: np.ndarray) -> np.ndarray:
    "The official MLP's logits in numpy from torch-layout weights (sigmoid hidden layers): for the layout test."
    h = np.asarray(xs, np.float64)
    pairs = list(zip(weights[::2], weights[1::2]))
    for w, b in pairs[:-1]:
        h = 1 / (1 + np.exp(-(h @ np.asarray(w, np.float64).T + b)))
    w, b = pairs[-1]
    return h @ np.asarray(w, np.float64).T + b


# ---------------------------------------------------------------- comparing (pure numpy)
def max_rel(ours, theirs) -> float:
    "max|ours - theirs| / max|theirs| (the absolute difference when theirs is all zero)."
    a, b = np.asarray(ours, np.float64), np.asarray(theirs, np.float64)
    if a.shape != b.shape:
        raise ValueError(f"shapes differ: ours {a.shape}, theirs {b.shape}")
    if a.size == 0:
        return 0.0
    scale = np.max(np.abs(b))
    diff = float(np.max(np.abs(a - b)))
    return diff / float(scale) if scale > 0 else diff


def tolerance(base: float, official_error: float | None) -> float:
    "max(base, REF_FACTOR × the official code's own float32 error on these inputs), or `base` without a reference."
    return base if official_error is None else max(base, REF_FACTOR * official_error)


def compare_array(quantity: str, ours, theirs, base_tol: float, reference=None, **extra) -> dict:
    """One row: the largest relative difference of ours from theirs, the tolerance and 'ok' or 'DIFF' (also for NaN).
    `reference`: the official code's float64 result on the same inputs; then the row also reports the official
    float32 error (theirs against it) and ours, and the tolerance is `tolerance(base_tol, official error)`."""
    diff = max_rel(ours, theirs)
    row = {"quantity": quantity, "max_rel": diff}
    official_error = None
    if reference is not None:
        official_error = max_rel(theirs, reference)
        row |= {"official_f32_error": official_error, "bcl_f32_error": max_rel(ours, reference)}
    tol = tolerance(base_tol, official_error)
    return row | {"tol": tol, "status": "ok" if diff <= tol else "DIFF", "shape": list(np.shape(theirs)), **extra}


def per_class_rows(rows, ys, classes) -> dict:
    "{class: sorted rows of that class} of a memorable selection (`rows` index the task, `ys` its labels)."
    rows = np.asarray(rows)
    labels = np.asarray(ys)[rows]
    return {int(c): sorted(rows[labels == c].tolist()) for c in classes}


def boundary_gap(scores, ys, classes, per_class: int) -> float:
    "Smallest over classes of (s_k - s_{k+1}) / s_k, s sorted descending within the class, k = per_class."
    gaps = []
    for c in classes:
        s = np.sort(np.asarray(scores, np.float64)[np.asarray(ys) == c])[::-1]
        if len(s) > per_class:
            gaps.append((s[per_class - 1] - s[per_class]) / s[per_class - 1])
    return float(min(gaps)) if gaps else float("inf")


def compare_memorable(quantity: str, ours_rows, their_rows, ys, classes, scores=None, per_class=None) -> dict:
    "Set equality of the memorable rows per class; whether the order within each class is also the same."
    mine, theirs = per_class_rows(ours_rows, ys, classes), per_class_rows(their_rows, ys, classes)
    same = {c: mine[c] == theirs[c] for c in mine}
    labels = np.asarray(ys)
    order = all([r for r in np.asarray(ours_rows) if labels[r] == c] == [r for r in np.asarray(their_rows)
                                                                        if labels[r] == c] for c in classes)
    row = {"quantity": quantity, "max_rel": None, "tol": "same set per class",
           "status": "ok" if all(same.values()) and len(ours_rows) == len(their_rows) else "DIFF",
           "same_set_per_class": {str(c): v for c, v in same.items()}, "same_order_within_class": bool(order),
           "n_per_class": {str(c): len(theirs[c]) for c in classes}}
    if not all(same.values()):
        row["only_ours"] = {str(c): sorted(set(mine[c]) - set(theirs[c])) for c in classes}
        row["only_theirs"] = {str(c): sorted(set(theirs[c]) - set(mine[c])) for c in classes}
    if scores is not None:
        row["boundary_gap"] = boundary_gap(scores, ys, classes, per_class)
    return row


# ---------------------------------------------------------------- bcl's side
def toy_model(hidden: int = HIDDEN, n_classes: int = N_CLASSES):
    "The toy's MLP as a bcl Model: registered tail of Dense–sigmoid layers, then `make_model`'s Dense head."
    import flax.linen as nn
    from bcl.models import make_model, register_model

    class SigmoidTail(nn.Module):
        "Dense–sigmoid for every width (the official `MLP(..., act='sigmoid')`'s lower layers)."
        widths: tuple

        @nn.compact
        def __call__(self, x):
            x = x.reshape((x.shape[0], -1))
            for width in self.widths:
                x = nn.sigmoid(nn.Dense(width)(x))
            return x

    register_model("fromp_toy", lambda: SigmoidTail((hidden, hidden)), replace=True)
    return make_model("fromp_toy", n_classes, (2,))


def train_weights(model, params, xs, ys, steps: int = TRAIN_STEPS, lr: float = TRAIN_LR) -> list[np.ndarray]:
    """`steps` of full-batch Adam on the mean cross-entropy from `params`, in float32 (also under --x64, so that
    both precisions get the same weights); torch-layout float32 arrays. Only makes the inputs realistic: trained
    weights are confident on most of a task and unsure near its boundaries, as FROMP sees them."""
    import jax
    import jax.numpy as jnp
    import optax
    params = jax.tree.map(lambda a: jnp.asarray(a, jnp.float32), params)
    xs, ys = jnp.asarray(xs, jnp.float32), jnp.asarray(ys)
    optimiser = optax.adam(lr)

    def loss(p):
        return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(model.apply(p, xs)), ys[:, None], 1))

    @jax.jit
    def run(p):
        def step(carry, _):
            p, state = carry
            updates, state = optimiser.update(jax.grad(loss)(p), state)
            return (optax.apply_updates(p, updates), state), None
        return jax.lax.scan(step, (p, optimiser.init(p)), None, steps)[0][0]
    return [np.asarray(a, np.float32) for a in to_torch(run(params))]


def build_inputs(model, seed: int, x64: bool):
    """Data, weights (ours as trees), the batch and the .npz for the official side. θ1: `train_weights` on task 1
    from `torch_weights`; θ2: on task 2 from θ1 (fine-tuning, the sequence without the penalty)."""
    import jax
    import jax.numpy as jnp
    rng = np.random.default_rng(seed)
    dtype = np.float64 if x64 else np.float32
    tasks = [(xs.astype(dtype), ys) for xs, ys in toy_tasks(rng)]
    weights = [torch_weights(rng)]
    for t in range(N_ENDED):
        weights.append(train_weights(model, to_flax(weights[-1]), *tasks[t]))
    weights = weights[1:]
    cast = lambda tree: jax.tree.map(lambda a: jnp.asarray(a, dtype), tree)
    thetas = [cast(to_flax(w)) for w in weights]
    moved_w = [w + MOVE * rng.normal(size=w.shape) for w in weights[-1]]
    moved = cast(to_flax(moved_w))
    batch = (tasks[-1][0][:BATCH_SIZE], tasks[-1][1][:BATCH_SIZE])
    meta = {"x64": x64, "n_classes": N_CLASSES, "hidden": HIDDEN, "batch_size": BATCH_SIZE, "num_points": NUM_POINTS,
            "prior_prec": PRIOR_PREC, "eps": EPS, "tau": TAU, "n_tasks": N_ENDED}
    npz = {"meta": np.asarray(json.dumps(meta)), "moved": torch_vector(moved), "batch_xs": batch[0],
           "batch_ys": batch[1]}
    for t in range(1, N_ENDED + 1):
        npz |= {f"xs{t}": tasks[t - 1][0], f"ys{t}": tasks[t - 1][1], f"theta{t}": torch_vector(thetas[t - 1])}
    return {"tasks": tasks, "thetas": thetas, "moved": moved, "batch": batch, "meta": meta, "npz": npz}


def bcl_task_ends(model, inputs) -> dict:
    "Scores, memorable rows and the running GGN sum of each ended task, by bcl.methods.fromp."
    import jax
    from bcl.methods.fromp import ggn_diagonal, memorable_scores, select_memorable
    classes = tuple(range(N_CLASSES))
    out, total = {}, None
    for t in range(1, N_ENDED + 1):
        xs, ys = inputs["tasks"][t - 1]
        params = inputs["thetas"][t - 1]
        out[f"scores{t}"] = np.asarray(memorable_scores(model.apply(params, xs)))
        out[f"rows{t}"] = np.asarray(select_memorable(None, model, params, xs, ys, classes, NUM_POINTS))
        ggn = ggn_diagonal(model, params, xs, BATCH_SIZE)
        total = ggn if total is None else jax.tree.map(lambda a, b: a + b, total, ggn)
        out[f"ggn{t}"] = torch_vector(total)
        out[f"ggn_tree{t}"] = total
    return out


def bcl_memory(model, inputs, ends: dict, rows: list, eps: float = EPS, tau: float = TAU) -> dict:
    "Kernel, its factor and inverse, targets and the two gradients, on the memorable `rows` of each ended task."
    import jax
    import jax.numpy as jnp
    from bcl.methods.fromp import fromp_kernel, fromp_memory, fromp_penalty, posterior_variance
    theta = inputs["thetas"][-1]
    variance = posterior_variance(ends[f"ggn_tree{N_ENDED}"], PRIOR_PREC)
    mem_xs = jnp.stack([jnp.asarray(inputs["tasks"][s][0][np.asarray(rows[s])]) for s in range(N_ENDED)])
    memory = fromp_memory(model, theta, mem_xs, N_ENDED, variance, eps)
    n_points = mem_xs.shape[1]
    eye = jnp.eye(n_points, dtype=mem_xs.dtype)
    kernel = jnp.stack([fromp_kernel(model, theta, mem_xs[s], variance) for s in range(N_ENDED)]) + eps * eye
    inverse = jax.vmap(jax.vmap(lambda chol: jax.scipy.linalg.cho_solve((chol, True), eye)))(memory.chol)
    bx, by = (jnp.asarray(a) for a in inputs["batch"])

    def cross_entropy(p):  # nn.CrossEntropyLoss(): the batch mean
        return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(model.apply(p, bx)), by[:, None], 1))

    penalty = lambda p: fromp_penalty(model, p, memory, tau)
    moved = inputs["moved"]
    return {"kernel": np.asarray(kernel), "chol": np.asarray(memory.chol), "kernel_inv": np.asarray(inverse),
            "targets": np.asarray(memory.targets),
            "penalty_grad": torch_vector(jax.tree.map(lambda g: g / tau, jax.grad(penalty)(moved))),
            "step_grad": torch_vector(jax.tree.map(lambda g: g / tau,
                                                   jax.grad(lambda p: cross_entropy(p) + penalty(p))(moved)))}


def compare(inputs, ends: dict, memory: dict, theirs: dict, x64: bool, sensitivity: dict | None = None) -> list[dict]:
    """One row per quantity (see the module docstring); float32 rows use theirs['ref/...'], the float64 reference.
    `sensitivity`: {label: bcl_memory(...) with a deliberate change}; the memory rows then also report how far each
    such change moves ours from theirs (what a real difference looks like next to the tolerance)."""
    base = TOL[x64]
    ref = lambda name: theirs.get(f"ref/{name}")
    classes = tuple(range(N_CLASSES))
    rows = []
    for t in range(1, N_ENDED + 1):
        rows.append(compare_array(f"scores/t{t}", ends[f"scores{t}"], theirs[f"scores{t}"], base["default"],
                                  ref(f"scores{t}")))
    for t in range(1, N_ENDED + 1):
        ys = inputs["tasks"][t - 1][1]
        row = compare_memorable(f"memorable/t{t}", ends[f"rows{t}"], theirs[f"memorable_rows{t}"], ys, classes,
                                ends[f"scores{t}"], NUM_POINTS // N_CLASSES)
        if ref(f"memorable_rows{t}") is not None:
            row["official_f64_same_set"] = compare_memorable("", theirs[f"memorable_rows{t}"],
                                                             ref(f"memorable_rows{t}"), ys, classes)["status"] == "ok"
        rows.append(row)
    for t in range(1, N_ENDED + 1):
        rows.append(compare_array(f"ggn/t{t}", ends[f"ggn{t}"], theirs[f"fisher{t}"], base["default"],
                                  ref(f"fisher{t}"), summed_over=[f"t{s}" for s in range(1, t + 1)]))
    kernel = np.asarray(theirs["kernel"], np.float64)
    cond = float(max(np.linalg.cond(k) for k in kernel.reshape(-1, *kernel.shape[-2:])))
    for name in ("kernel", "chol", "kernel_inv", "targets", "penalty_grad", "step_grad"):
        extra = {"cond": cond} if name == "kernel_inv" else {}
        if name.endswith("_grad"):
            extra["norm"] = float(np.linalg.norm(np.asarray(theirs[name], np.float64)))
        if sensitivity and name != "targets":
            extra["sensitivity"] = {label: max_rel(alt[name], theirs[name]) for label, alt in sensitivity.items()
                                    if name.endswith("_grad") or "tau" not in label}  # τ enters only the step
        rows.append(compare_array(name, memory[name], theirs[name], base.get(name, base["default"]), ref(name),
                                  **extra))
    return rows


# ---------------------------------------------------------------- the official side
def _git(*args, cwd=None) -> str:
    run = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)
    return run.stdout.strip() if run.returncode == 0 else ""


def official_files(repo: Path, folder: Path):
    """(folder to import from, commit, source) of the official code at `repo`, or a string saying why not. A checkout
    is used in place; from a bare repository the files of FROMP_COMMIT are written into `folder`."""
    repo = repo.resolve()
    if all((repo / f).is_file() for f in OFFICIAL_FILES):
        commit = _git("rev-parse", "HEAD", cwd=repo) or "unknown (not a git checkout)"
        return repo, commit, "checkout"
    if (repo / "HEAD").is_file() and (repo / "objects").is_dir():
        for name in OFFICIAL_FILES:
            run = subprocess.run(["git", f"--git-dir={repo}", "show", f"{FROMP_COMMIT}:{name}"], capture_output=True)
            if run.returncode != 0:
                return f"{repo} has no {FROMP_COMMIT[:7]}:{name} ({run.stderr.decode().strip()[:100]})"
            (folder / name).write_bytes(run.stdout)
        return folder, FROMP_COMMIT, f"bare repository {repo}: git show {FROMP_COMMIT[:7]}:<file>"
    return f"{repo} holds neither {', '.join(OFFICIAL_FILES)} nor a bare git repository"


def file_hashes(folder: Path) -> dict:
    return {name: hashlib.sha256((folder / name).read_bytes()).hexdigest()[:16] for name in OFFICIAL_FILES}


def side_environment(folder: Path) -> dict:
    return official_side.environment(folder)


def prepare_official(repo, python, code: Path):
    """(folder to import from, commit, source) of the official code when `python` can run it (torch and the official
    modules import), else a string saying why not (the harnesses then skip). `code`: a folder for the files."""
    return official_side.prepare(repo, python, HERE / "fromp_side.py", lambda r: official_files(r, code),
                                 "--fromp-repo and --fromp-python (the official code and a Python with torch)")


def run_official(python: Path, folder: Path, npz: dict, keep: Path | None,
                 side: str = "fromp_side.py") -> tuple[dict, float]:
    "Write the inputs, run tests/parity/`side` on them in a temporary working directory, read its .npz back."
    return official_side.run(python, HERE / side, folder, npz, PROG, keep)


# ---------------------------------------------------------------- output
def print_table(rows, out=sys.stdout) -> None:
    ref = any("official_f32_error" in r for r in rows)
    error_heads = f"{'official f32 err':>16} {'bcl f32 err':>11} " if ref else ""
    head = (f"{'quantity':<13} {'bcl vs official':>15} " + error_heads + f"{'tolerance':>18}  {'status':<6} notes")
    print(head, file=out)
    print("-" * len(head), file=out)
    fmt = lambda v: "–" if v is None else f"{v:.1e}"
    for r in rows:
        tol = r["tol"] if isinstance(r["tol"], str) else f"{r['tol']:.1e}"
        notes = []
        if "same_set_per_class" in r:
            notes.append(f"{sum(r['n_per_class'].values())} points ({'/'.join(map(str, r['n_per_class'].values()))}), "
                         f"same order within class {r['same_order_within_class']}, boundary gap {r['boundary_gap']:.1e}"
                         + ("" if "official_f64_same_set" not in r else
                            f", official f64 same set {r['official_f64_same_set']}"))
        if "cond" in r:
            notes.append(f"cond(K + eps I) <= {r['cond']:.1e}")
        if "norm" in r:
            notes.append(f"|g| = {r['norm']:.3g}")
        if "sensitivity" in r:
            notes.append(", ".join(f"{k}: {v:.1e}" for k, v in r["sensitivity"].items()))
        errors = f"{fmt(r.get('official_f32_error')):>16} {fmt(r.get('bcl_f32_error')):>11} " if ref else ""
        print(f"{r['quantity']:<13} {fmt(r['max_rel']):>15} {errors}{tol:>18}  {r['status']:<6} {'; '.join(notes)}",
              file=out)


def append_lines(rows, meta: dict, out: Path | None) -> None:
    lines = [json.dumps({"harness": "fromp_parity"} | r | meta) for r in rows]
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        with open(out, "a") as f:
            f.write("\n".join(lines) + "\n")


def bcl_provenance() -> dict:
    import flax
    import jax
    commit = _git("rev-parse", "HEAD", cwd=ROOT)
    modified = bool(_git("status", "--porcelain", "--", "bcl", cwd=ROOT))
    return {"bcl_commit": commit, "bcl_modified": modified, "jax": jax.__version__, "flax": flax.__version__,
            "numpy": np.__version__}


def parse(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fromp-repo", type=Path, default=os.environ.get("BCL_FROMP_REPO"),
                        help="checkout of github.com/team-approx-bayes/fromp, or a bare git repository of it "
                             "(or $BCL_FROMP_REPO)")
    parser.add_argument("--fromp-python", type=Path, default=os.environ.get("BCL_FROMP_PYTHON"),
                        help="a Python with torch and numpy (or $BCL_FROMP_PYTHON)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--x64", action="store_true", help="both sides in float64")
    parser.add_argument("--out", type=Path, help="append the JSON lines to this file")
    parser.add_argument("--keep", type=Path, help="keep the exchanged .npz files in this folder")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse(argv)

    def skip(message):
        print(f"{PROG}: skipped: {message}")
        return 0
    with tempfile.TemporaryDirectory(prefix="bcl_fromp_code_") as code:
        found = prepare_official(args.fromp_repo, args.fromp_python, Path(code))
        if isinstance(found, str):
            return skip(found)
        folder, commit, source = found
        hashes = file_hashes(folder)
        import jax
        if args.x64:
            jax.config.update("jax_enable_x64", True)
        start = time.perf_counter()
        model = toy_model()
        inputs = build_inputs(model, args.seed, args.x64)
        ends = bcl_task_ends(model, inputs)
        ours_s = time.perf_counter() - start
        theirs, theirs_s = run_official(args.fromp_python, folder, inputs["npz"], args.keep)
    info = json.loads(str(theirs.pop("info")))
    start = time.perf_counter()
    memorable = [theirs[f"memorable_rows{t}"] for t in range(1, N_ENDED + 1)]
    memory = bcl_memory(model, inputs, ends, memorable)
    sensitivity = {SENSITIVITY_LABELS["eps"]: bcl_memory(model, inputs, ends, memorable, eps=1.1 * EPS),
                   SENSITIVITY_LABELS["tau"]: bcl_memory(model, inputs, ends, memorable, tau=1.0)}
    ours_s += time.perf_counter() - start
    rows = compare(inputs, ends, memory, theirs, args.x64, sensitivity)
    meta = {**bcl_provenance(), "fromp_commit": commit, "fromp_source": source, "fromp_files_sha256": hashes,
            "torch": info["torch"], "torch_numpy": info["numpy"], "seed": args.seed,
            "precision": "float64" if args.x64 else "float32",
            "settings": inputs["meta"] | {"n_per_class": N_PER_CLASS, "train_steps": TRAIN_STEPS, "train_lr": TRAIN_LR,
                                          "move": MOVE},
            "created": time.strftime("%Y-%m-%dT%H:%M:%S")}
    meta["settings"].pop("x64")
    print(f"official FROMP {commit[:7]} ({source}; torch {info['torch']}) against bcl {meta['bcl_commit'][:7]} "
          f"(jax {meta['jax']}); toy MLP 2-{HIDDEN}-{HIDDEN}-{N_CLASSES}, {meta['precision']}, seed {args.seed}; "
          f"ours {ours_s:.0f} s, theirs {theirs_s:.0f} s")
    print_table(rows)
    append_lines(rows, meta, args.out)
    failed = [r["quantity"] for r in rows if r["status"] != "ok"]
    if failed:
        print(f"{PROG}: {len(failed)} quantities differ beyond tolerance: {', '.join(failed)}")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
