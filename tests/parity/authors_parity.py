"""Equivalence harness: the authors' VCL and S-FSVI objectives (github.com/blackblitz/bcl at b838074) against `bcl.vi.svi`,
on identical inputs and identical random draws, for the eight variational methods on the Iris network (the default)
or on the paper's image networks (`--sequence cisplitmnist5k --network fcnn256|cnn_mnist|cnn6`).

Usage (our environment; the authors' side runs as a subprocess in theirs, see tests/parity/README.md):
  .venv/bin/python tests/parity/authors_parity.py --authors-repo /path/to/blackblitz-bcl \
      --authors-python /path/to/authors-venv/bin/python [--out benchmarks/results/authors_parity.jsonl]
  .venv/bin/python tests/parity/authors_parity.py ... --sequence cisplitmnist5k --network cnn_mnist

Image networks (`harness_target`): ours `bcl.models.make_model(network, 10, (28, 28, 1))` with the convolution of the
paper's setup (`patches` for the CNNs), theirs the model of the toml: fcnn256 = FCNN3 256-256-10
(experiments/svi_cisplitmnist_fcnn.toml, batch 64), cnn_mnist = FECNN4 conv 32, 32, dense 32, 10
(svi_cisplitmnist_cnn.toml, batch 32), cnn6 = FECNN6 conv 32, 32, 64, 64, dense 64, 10 (svi_cisplitcifar10_cnn.toml,
the only toml with it; the harness gives it MNIST's 28×28×1 inputs, so its dense layer is 7·7·64 -> 64 instead of
CIFAR's 8·8·64). The settings are `bcl.paper.svi_settings('image')` / `('image_cnn')`. The CNN trees need no mapping
(both name the extractor 'tail' and the last layer 'head', with Conv_i/GroupNorm_i/Dense_0 in the same order); the
`fwd` column checks the forward pass on the same parameters. Inputs are MNIST-5k's own: a random batch of task t's
training points, a coreset of 256 random training points per task (t-1 stored), 32 test inputs of task t; the
scenarios are t1 and t2 (one stored coreset task; for prior-focused methods a random previous posterior).

Both packages are called `bcl` and need different JAX versions (ours 0.10, theirs 0.4.28), so the harness runs in two
processes. This one (ours) builds, for every method and scenario, the variational parameters q, the prior, a minibatch
and the random key of one training step; it calls our method's own step loss, `build_on(...).method.loss(q, memory, key,
batch, hyper, task)` (the function `bcl.engine.train.make_task_program` differentiates), and its `predict`. From the same
key it recovers what that loss used: the coreset batch (`coreset_draw`), the inducing inputs
(`uniform_inducing_points`, or the coreset inputs for P-S-FSVI), the standard normals and, for mixtures, the Gumbel
draws. Those go to an .npz; `tests/parity/authors_side.py` (their Python, PYTHONPATH = their clone) builds their loss
with their trainer class's `update_loss`, evaluates it and its gradient on the same q and draws, and their BMA
predictive on the same parameter draws, and writes an .npz back.

Reported per method and scenario (largest relative differences, ours against theirs):
  loss  |a-b|/|a| of the minibatch objective (expected NLL + weight·KL)
  nll   the expected NLL (their nll over their `transform`ed draws)
  kl    the KL term (closed form for G; the mixture upper bound, eq. (8) of the paper, for GM)
  w     the KL weight, (loss - nll) / kl on each side
  grad  max over the parameter blocks (mean, msd/rho, logit) of max|a-b| / max|a| within the block
  theta the parameter draws θ (shows that both sides use the same noise)
  pred  the BMA predictive probabilities at 32 inputs in the inducing box (image sequences: test inputs)
  fwd   the network's logits at q's mean (GM: component 1) at those inputs: the forward pass and the tree mapping
Scenarios: `t1` (first task: empty coreset, prior N(0, 1)) and `t3` (third task: two stored coreset tasks; for prior-
focused methods the prior is a previous posterior, random here).

Mixture sampling is the same scheme on both sides (checked, not assumed): θ = Σ_k w_k (μ_k + σ_k z_k) with independent
z_k per component and w = softmax((λ + g)/T), T = 10⁻³ (theirs: `softmax(1000 * (logit + gumbel))`,
bcl/train/training/vi/gaussmix.py:143-159; ours: `bcl.vi.mixture.mixture_sample`, component_noise='independent'). So the
same draws are injected on both sides and no Monte Carlo tolerance is needed.

Known differences (seed 0, see tests/parity/README.md):
- float32, GM methods: the logit gradient differs by up to ~1e-3 relative (every other entry <= 3e-7). It is the
  gradient of the KL bound, w * q_k (v_k - sum_j q_j v_j) with v_k = log(q_k/p_k) + KL_k: component KLs of 40-600 whose
  differences are ~10, so float32 rounding of KL_k is amplified ~60x. Their compiled loss (jit, XLA of jax 0.4.28)
  (bcl/train/trainer/svi/replay.py:229-238 etc., `jit(...)`; bound: bcl/train/training/vi/gaussmix.py:24-30)
  is the one off: for l-gm-vcl at task 3, their loss evaluated eagerly gives our logit gradient to ~1e-6, and so
  does a float64 evaluation, while their jitted loss is 2.4e-4 off.
  Where a Gumbel draw is near a tie (p-gm-vcl, S = 100), the NLL also reaches the logits through
  softmax(1000 (logit + g)), which is ill-conditioned in float32 the same way. With --x64 all of it is <= 2e-12.
- --x64, P-S-FSVI at task 3: the KL weight differs by 3e-8 relative: ours divides by the task index cast to float32
  (`bcl.vi.svi._kl_weight`), theirs is a Python float (bcl/train/trainer/svi/replay.py:94-98, 137-141).
- --x64, S-FSVI: the KL differs by up to ~1e-10 relative (the linearised means and variances agree to 5e-16).

MNIST-5k, FCNN 256-256 (benchmarks/results/authors_parity_cisplitmnist5k_fcnn256.jsonl, float32): every quantity
<= 1.4e-6 except the GM logit gradients (VCL 1.5e-3 to 2.5e-3, the cause above with component KLs of ~4.3e5;
S-FSVI 3e-3 to 0.13 on logit gradients of ~0.06, through the T = 1e-3 Gumbel-softmax, not checked in float64: the
authors' float64 side ran out of memory) and S-FSVI's derived weight w = (loss - nll)/kl (<= 1.1e-5: NLL ~500
against KL ~10-25). tests/parity/README.md, "The paper's image networks", has the table.

Without --authors-repo/--authors-python, or when the authors' environment cannot import their code, it prints one
line and exits with status 0.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

# What a harness needs of a sequence: the authors' experiment (its toml gives their network and trainer blocks), our
# outputs and likelihood, the label range and the training points per task (bcl.splits / the authors' dataprep).
# `networks` (image sequences): our network -> the authors' experiment whose toml holds the same network and its
# trainer blocks (the 6-layer CNN's is CIFAR-10's; the harness runs it on MNIST-shaped inputs, see `harness_target`).
HARNESS_SEQUENCES = {
    "cisplit2diris": {"experiment": "svi_cisplit2diris_fcnn", "n_outputs": 3, "likelihood": "softmax", "n_classes": 3,
                      "n_train": 32},
    "disinusoid": {"experiment": "svi_disinusoid_fcnn", "n_outputs": 1, "likelihood": "sigmoid", "n_classes": 2,
                   "n_train": 200},
    "cisplitmnist5k": {"experiment": "svi_cisplitmnist_fcnn", "n_outputs": 10, "likelihood": "softmax",
                       "n_classes": 10, "n_train": 640, "scenarios": {"t1": 1, "t2": 2},
                       "networks": {"fcnn256": "svi_cisplitmnist_fcnn", "cnn_mnist": "svi_cisplitmnist_cnn",
                                    "cnn6": "svi_cisplitcifar10_cnn"}},
}
SEQUENCE = "cisplit2diris"  # the default of both harnesses
NETWORKS = ("fcnn16", "fcnn256", "cnn_mnist", "cnn6")  # --network choices (each valid for some sequence)
EXPERIMENT = HARNESS_SEQUENCES[SEQUENCE]["experiment"]
N_TRAIN = HARNESS_SEQUENCES[SEQUENCE]["n_train"]
N_PRED = 32
# our method name -> the trainer block id of the authors' toml (the same ids in every svi_*.toml)
AUTHORS_IDS = {
    "p-g-vcl": "simple_gvcl", "l-g-vcl": "likelihood_exact_gvcl",
    "p-gm-vcl": "simple_gmvcl", "l-gm-vcl": "likelihood_exact_gmvcl",
    "p-g-sfsvi": "prior_exact_gsfsvi", "l-g-sfsvi": "likelihood_exact_gsfsvi",
    "p-gm-sfsvi": "prior_exact_gmsfsvi", "l-gm-sfsvi": "likelihood_exact_gmsfsvi",
}
SCENARIOS = {"t1": 1, "t3": 3}  # task index; t-1 coreset tasks stored (image sequences: `scenarios` above)
FP_TOL = {False: 1e-4, True: 1e-7}  # float32 / float64 (--x64) level for these sizes; above it a row is flagged
HERE = Path(__file__).resolve().parent


# ---------------------------------------------------------------- sequences, networks, parameter trees
def harness_target(sequence: str, network: str | None = None) -> dict:
    """What the harnesses build for `sequence` and `network` (None: the sequence's own network,
    `bcl.paper.sequence_setup`): our network name, setup (settings row), input shape, convolution, the authors'
    experiment, scenarios {name: task index}, and whether the inputs are images (then real data of the sequence)."""
    from bcl.paper import MNIST_CNN, SEQUENCE_SETUPS, sequence_setup
    about = HARNESS_SEQUENCES[sequence]
    setup = sequence_setup(sequence)
    network = network or setup.model
    networks = about.get("networks", {setup.model: about["experiment"]})
    if network not in networks:
        raise SystemExit(f"--network {network} is not compared on {sequence}; choose one of {', '.join(networks)}")
    if network != setup.model:  # the paper's setup of that network (MNIST's CNN, or the first sequence trained with it)
        setup = MNIST_CNN if network == MNIST_CNN.model else next(s for s in SEQUENCE_SETUPS.values()
                                                                   if s.model == network)
    image = network != "fcnn16"
    return {"sequence": sequence, "network": network, "setup": setup, "experiment": networks[network],
            "input_shape": (28, 28, 1) if image else (2,), "image": image,
            "scenarios": about.get("scenarios", SCENARIOS), **{k: about[k] for k in
                                                              ("n_outputs", "likelihood", "n_classes", "n_train")}}


def to_authors(tree):
    """Our tree -> the authors'. FCNN {'tail': {'Dense_0', 'Dense_1'}, 'head'} -> FCNN3's {'Dense_0', 'Dense_1',
    'Dense_2'}. The CNNs need no mapping: our `Network(ConvTail)` and their FECNN4/FECNN6 both name the feature
    extractor 'tail' (Conv_i, GroupNorm_i, Dense_0 in the same order) and the last layer 'head'."""
    if any(key.startswith("Conv_") for key in tree["tail"]):
        return {"tail": dict(tree["tail"]), "head": dict(tree["head"])}
    n = len(tree["tail"])
    return {**{f"Dense_{i}": tree["tail"][f"Dense_{i}"] for i in range(n)}, f"Dense_{n}": tree["head"]}


def from_authors(tree):
    "The inverse of `to_authors`."
    if "tail" in tree:
        return {"tail": dict(tree["tail"]), "head": dict(tree["head"])}
    n = len(tree) - 1
    return {"tail": {f"Dense_{i}": tree[f"Dense_{i}"] for i in range(n)}, "head": tree[f"Dense_{n}"]}


def flatten(tree, prefix: str, out: dict) -> dict:
    if isinstance(tree, dict):
        for key, value in tree.items():
            flatten(value, f"{prefix}/{key}", out)
    else:
        out[prefix] = np.asarray(tree)
    return out


def authors_params(q) -> dict:
    "Our Gaussian/Mixture -> the authors' {'mean', 'msd'(, 'logit')} dict."
    from bcl.vi.mixture import Mixture
    params = {"mean": to_authors(q.mean), "msd": to_authors(q.rho)}
    if isinstance(q, Mixture):
        params["logit"] = q.logits
    return params


# ---------------------------------------------------------------- the draws our code makes from a key
def standard_draws(key, q, sample_size: int, temperature: float = 1e-3):
    """The standard normals (and Gumbels) `bcl.vi.svi.variational_sample(key, q, S)` transforms, as the authors' `sample`
    dict: {'gauss': tree with leaves (S, ...) or (S, K, ...), 'gumbel': (S, K)}. Mirrors `gaussian_sample` and
    `mixture_sample` (independent component noise); `check_draws` verifies the mirror against the real call."""
    import jax
    from bcl.core import named_keys, random_flat, tree_ravel
    from bcl.vi.mixture import Mixture
    if not isinstance(q, Mixture):
        mean, unravel = tree_ravel(q.mean)
        z = random_flat(jax.random.normal, named_keys(key, "normal")["normal"], (sample_size, mean.shape[-1]),
                        mean.dtype)
        return {"gauss": to_authors(unravel(z))}
    ks = named_keys(key, "normal", "gumbel")
    mean, unravel = tree_ravel(q.mean, leading_axes=1)
    n_components = mean.shape[0]
    gumbel = random_flat(jax.random.gumbel, ks["gumbel"], (sample_size, n_components), q.logits.dtype)
    z = random_flat(jax.random.normal, ks["normal"], (sample_size, n_components, mean.shape[-1]), mean.dtype)
    return {"gauss": to_authors(unravel(z)), "gumbel": gumbel}


def thetas_from_draws(q, draws, temperature: float = 1e-3):
    "θ from `standard_draws` by eq. (4) / eq. (7), in our tree layout."
    import jax
    import jax.numpy as jnp
    from bcl.vi.mixture import Mixture
    z = from_authors(draws["gauss"])
    if not isinstance(q, Mixture):
        return jax.tree.map(lambda m, r, e: m + jax.nn.softplus(r) * e, q.mean, q.rho, z)
    w = jax.nn.softmax((q.logits + draws["gumbel"]) / temperature, axis=-1)  # (S, K)
    return jax.tree.map(lambda m, r, e: jnp.einsum("sk,sk...->s...", w, m + jax.nn.softplus(r) * e),
                        q.mean, q.rho, z)


def max_rel(a, b) -> float:
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if a.size == 0:
        return 0.0
    scale = np.max(np.abs(a))
    return float(np.max(np.abs(a - b)) / scale) if scale > 0 else float(np.max(np.abs(a - b)))


def tree_max_rel(a: dict, b: dict) -> float:
    "max over leaves of max|a-b| / max|a| over ALL leaves of `a` (one scale per parameter block)."
    keys = sorted(a)
    scale = max(float(np.max(np.abs(a[k]))) for k in keys)
    diff = max(float(np.max(np.abs(np.asarray(a[k], np.float64) - np.asarray(b[k], np.float64)))) for k in keys)
    return diff / scale if scale > 0 else diff


# ---------------------------------------------------------------- the inputs of a case
class CaseInputs:
    """Batches, coresets and prediction inputs of a case. 2-d sequences: uniform in the inducing box (the draws of
    the Iris harness, unchanged). Image sequences: the sequence's own data (`bcl.data.sequences.load_sequence`), a random batch
    of task t's training points, a coreset of `size` random training points of every task (the first t-1 stored) and
    random test inputs of task t."""

    def __init__(self, target: dict, low, high):
        self.target, self.low, self.high = target, low, high
        self.tasks = None
        if target["image"]:
            from bcl.data.sequences import load_sequence
            self.tasks = load_sequence(target["sequence"]).tasks

    def _pick(self, key, xs, ys, n):
        import jax
        import jax.numpy as jnp
        rows = jax.random.choice(key, len(ys), (n,), replace=False)
        return jnp.asarray(xs, jnp.float32)[rows], jnp.asarray(ys, jnp.int32)[rows]

    def batch(self, key, t: int, n: int):
        import jax
        import jax.numpy as jnp
        if self.tasks is None:
            kx, ky = jax.random.split(key)
            return (jax.random.uniform(kx, (n, *self.low.shape), minval=self.low, maxval=self.high),
                    jax.random.randint(ky, (n,), 0, self.target["n_classes"]).astype(jnp.int32))
        task = self.tasks[t - 1].train
        return self._pick(key, task.xs, task.ys, n)

    def coreset(self, key, n_tasks: int, size: int):
        "(xs (n_tasks, size, ...), ys (n_tasks, size))."
        import jax
        import jax.numpy as jnp
        if self.tasks is None:
            kx, ky = jax.random.split(key)
            return (jax.random.uniform(kx, (n_tasks, size, *self.low.shape), minval=self.low, maxval=self.high),
                    jax.random.randint(ky, (n_tasks, size), 0, self.target["n_classes"]).astype(jnp.int32))
        picks = [self._pick(k, task.train.xs, task.train.ys, size)
                 for k, task in zip(jax.random.split(key, len(self.tasks)), self.tasks)]
        return jnp.stack([p[0] for p in picks]), jnp.stack([p[1] for p in picks])

    def pred_xs(self, key, t: int, n: int):
        import jax
        if self.tasks is None:
            return jax.random.uniform(key, (n, *self.low.shape), minval=self.low, maxval=self.high)
        test = self.tasks[t - 1].test
        return self._pick(key, test.xs, test.ys, n)[0]


def target_model(target: dict):
    "Our network of a `harness_target`, with its setup's convolution (`patches` for the paper's CNNs)."
    from bcl.models import make_model
    return make_model(target["network"], target["n_outputs"], target["input_shape"], conv_impl=target["setup"].conv_impl)


# ---------------------------------------------------------------- building the cases
# our minibatch settings and the authors' hyperparameters of the same sizes
BATCH_SETTINGS = {"batch_size": "batch_size", "coreset_batch": "coreset_batch_size", "n_inducing": "noise_batch_size"}


def divided_batches(settings: dict, divisor: int) -> dict:
    """The minibatch sizes of one method's `settings` (current batch, coreset batch, random inducing points) divided by
    `divisor`, as overrides; {} for 1. For a comparison whose full-size case does not fit in memory: the formula
    compared is the same, on fewer points."""
    if divisor == 1:
        return {}
    small = {k: settings[k] // divisor for k in BATCH_SETTINGS if k in settings}
    if any(v < 1 for v in small.values()):
        raise SystemExit(f"--batch-divisor {divisor} leaves an empty minibatch ({small}); use a smaller divisor")
    return small


def build_cases(seed: int, x64: bool = False, sequence: str = SEQUENCE, network: str | None = None,
                methods=None, batch_divisor: int = 1):
    """For every method (or those of `methods`) and scenario: our loss, aux, gradient, θ, predictive, the authors' inputs.
    `batch_divisor` divides every minibatch size on both sides (`divided_batches`)."""
    import jax
    import jax.numpy as jnp
    cast = (lambda tree: jax.tree.map(lambda x: x.astype(jnp.float64), tree)) if x64 else (lambda tree: tree)
    from bcl.core import named_keys
    from bcl.vi.mixture import Mixture
    from bcl.paper import SVI_METHODS, Focus, Space, method_info, svi_settings
    from bcl.factory import build_on
    from bcl.vi.svi import (SVIMemory, _prior_inducing_points, inducing_bounds, uniform_inducing_points,
                         variational_init, variational_prior)
    from bcl.engine.train import Batch, Coreset, TaskInfo, coreset_draw, n_batches

    target = harness_target(sequence, network)
    setup, n_out, n_train = target["setup"], target["n_outputs"], target["n_train"]
    model = target_model(target)
    low, high = inducing_bounds(setup.inducing_low, setup.inducing_high, model.input_shape)
    smaller = {name: divided_batches(svi_settings(setup.setup)[name], batch_divisor)
               for name in SVI_METHODS if not methods or name in methods}
    suite = {name: build_on(name, model, target["likelihood"], setup, **overrides)[1:3]
             for name, overrides in smaller.items()}
    data = CaseInputs(target, low, high)
    n_slots = max(3, len(data.tasks or ()))  # coreset task slots (Iris: 3)
    inputs: dict = {}
    ours: dict = {}
    cases = []
    root = jax.random.key(seed)
    for m_index, name in enumerate(SVI_METHODS):
        if methods and name not in methods:
            continue
        method, hyper = suite[name]
        s = method.settings
        info = method_info(name)  # the method's parts, read from the paper table
        n_components = s["n_components"]
        for scenario, t in target["scenarios"].items():
            case = f"{name}/{scenario}"
            k = named_keys(jax.random.fold_in(root, 10 * m_index + t), "q", "rho", "prior", "coreset", "batch",
                           "step", "pred", "predxs")
            # q: the init of the method, with spread-out ρ (N(-2, 0.5²) instead of N(-2, 0.05²)) and, for
            # mixtures, distinct components and logits ~ N(0, 1)
            q = cast(variational_init(k["q"], model.init, n_components))  # flax inits float32 even under x64
            q = q._replace(rho=jax.tree.map(lambda r, e: r + 0.5 * e, q.rho,
                                            _normal_like(k["rho"], q.rho)))
            like = q.mean if n_components is None else jax.tree.map(lambda leaf: leaf[0], q.mean)
            prior = cast(variational_prior(like, n_components, s["precision"]))
            if info.focus is Focus.PRIOR and t > 1:  # prior-focused: the previous task's posterior
                prev = cast(variational_init(k["prior"], model.init, n_components))
                prior = prev._replace(rho=jax.tree.map(lambda r, e: r + 0.5 * e, prev.rho,
                                                       _normal_like(jax.random.fold_in(k["prior"], 1), prev.rho)))
            uses_coreset = info.focus is Focus.LIKELIHOOD or info.space is Space.FUNCTION
            coreset = ()
            if uses_coreset:
                cx, cy = data.coreset(k["coreset"], n_slots, s["coreset_size"])
                coreset = Coreset(cast(cx), cy, jnp.asarray(t - 1, jnp.int32))
            batch_size = s["batch_size"]
            bx, by = data.batch(k["batch"], t, batch_size)
            batch = Batch(cast(bx), by, jnp.ones(batch_size))
            task = TaskInfo(jnp.asarray(t, jnp.int32), n_train, n_batches(n_train, batch_size))
            memory = SVIMemory(prior, coreset)

            # our objective and gradient: the step loss that make_task_program differentiates
            (loss, aux), grads = jax.value_and_grad(method.loss, has_aux=True)(q, memory, k["step"], batch, hyper,
                                                                               task)
            # what that loss drew from k["step"] (svi.loss: named_keys(key, "theta", "coreset", "inducing", "coin"))
            sk = named_keys(k["step"], "theta", "coreset", "inducing", "coin")
            draws = standard_draws(sk["theta"], q, s["sample_size"])
            from bcl.vi.svi import variational_sample
            thetas = variational_sample(sk["theta"], q, s["sample_size"])
            draws_check = max_rel(_leaves(thetas), _leaves(thetas_from_draws(q, draws)))
            arrays = {"xs1": batch.xs, "ys1": batch.ys}
            if info.focus is Focus.LIKELIHOOD:
                replay = coreset_draw(sk["coreset"], coreset, s["coreset_batch"])
                keep = np.asarray(replay.mask) > 0  # all or none: the authors' coreset returns no rows at task 1
                arrays |= {"xs2": np.asarray(replay.xs)[keep], "ys2": np.asarray(replay.ys)[keep]}
            else:
                arrays |= {"xs2": np.zeros((0, *model.input_shape), np.float32), "ys2": np.zeros((0,), np.int32)}
            if info.space is Space.FUNCTION:
                if info.focus is Focus.PRIOR:
                    ind = _prior_inducing_points(sk, coreset, s["coreset_batch"], low, high, s["coreset_prob"])
                else:
                    ind = uniform_inducing_points(sk["inducing"], s["n_inducing"], low, high)
                arrays["ind_xs"] = ind
            # the predictive: our method's predict, and the draws it makes from its key
            pred_xs = cast(data.pred_xs(k["predxs"], t, N_PRED))
            probs = method.predict(k["pred"], q, pred_xs)
            pred_draws = standard_draws(k["pred"], q, s["predict_sample_size"])
            pred_thetas = variational_sample(k["pred"], q, s["predict_sample_size"])
            draws_check = max(draws_check, max_rel(_leaves(pred_thetas),
                                                   _leaves(thetas_from_draws(q, pred_draws))))
            # the forward pass alone: our network at q's mean (GM: its first component) on the prediction inputs
            forward = model.apply(like if n_components is None else jax.tree.map(lambda m: m[0], q.mean), pred_xs)
            arrays |= {"pred_xs": pred_xs}
            for key, value in arrays.items():
                inputs[f"{case}/{key}"] = np.asarray(value)
            flatten(authors_params(q), f"{case}/params", inputs)
            flatten(authors_params(prior), f"{case}/prior", inputs)
            flatten(draws, f"{case}/sample", inputs)
            flatten(pred_draws, f"{case}/pred_sample", inputs)
            ours[case] = {
                "loss": float(loss), "nll": float(aux["nll"]), "kl": float(aux["kl"]),
                "grad": flatten(authors_params(grads), "grad", {}),
                "thetas": flatten(to_authors(thetas), "thetas", {}),
                "probs": np.asarray(probs), "forward": np.asarray(forward), "draws_check": draws_check,
                "settings": {k_: s[k_] for k_ in ("batch_size", "coreset_batch", "n_inducing", "sample_size",
                                                  "predict_sample_size", "precision", "coreset_prob",
                                                  "n_components", "coreset_size", "kl_weighting") if k_ in s},
            }
            cases.append({"name": case, "method": name, "scenario": scenario, "authors_id": AUTHORS_IDS[name],
                          "focus": info.focus.value, "task_count": t - 1,
                          "n_train": n_train,
                          # the authors' hparams to replace, so that both sides use the same divided minibatches
                          "hparams": {BATCH_SETTINGS[k]: v for k, v in smaller[name].items()}})
            print(f"our side: {case} done", file=sys.stderr, flush=True)
    return cases, inputs, ours


def _normal_like(key, tree):
    import jax
    leaves, treedef = jax.tree.flatten(tree)
    keys = jax.random.split(key, len(leaves))
    return jax.tree.unflatten(treedef, [jax.random.normal(kk, leaf.shape, leaf.dtype) for kk, leaf in zip(keys, leaves)])


def _leaves(tree):
    import jax
    return np.concatenate([np.ravel(np.asarray(x)) for x in jax.tree.leaves(tree)])


# ---------------------------------------------------------------- comparing
def compare(cases, ours, theirs, info, tol: float) -> list[dict]:
    rows = []
    for case in cases:
        name = case["name"]
        o = ours[name]
        t = {k[len(name) + 1:]: v for k, v in theirs.items() if k.startswith(name + "/")}
        a_loss, a_nll, a_kl = float(t["loss"]), float(t["nll"]), float(t["kl"])
        a_w = (a_loss - a_nll) / a_kl
        o_w = (o["loss"] - o["nll"]) / o["kl"]
        grad_blocks = {}
        for block in ("mean", "msd", "logit"):
            a = {k: v for k, v in t.items() if k.startswith(f"grad/{block}")}
            if a:
                grad_blocks[block] = tree_max_rel(a, {k: o["grad"][k] for k in a})
        a_thetas = {k: v for k, v in t.items() if k.startswith("thetas/")}
        row = {
            "method": case["method"], "scenario": name.split("/")[1],
            "authors_class": info["cases"][name]["class"], "authors_loss_fn": info["cases"][name]["loss_function"],
            "loss": abs(a_loss - o["loss"]) / abs(a_loss), "nll": abs(a_nll - o["nll"]) / abs(a_nll),
            "kl": abs(a_kl - o["kl"]) / abs(a_kl), "w": abs(a_w - o_w) / abs(a_w),
            "grad": max(grad_blocks.values()), "grad_blocks": grad_blocks,
            "theta": tree_max_rel(a_thetas, o["thetas"]), "pred": max_rel(t["probs"], o["probs"]),
            "fwd": max_rel(t["forward"], o["forward"]),
            "values": {"loss": [a_loss, o["loss"]], "nll": [a_nll, o["nll"]], "kl": [a_kl, o["kl"]],
                       "w": [a_w, o_w]},
            "draw_mirror_check": o["draws_check"],
            "settings": {"ours": o["settings"], "authors": info["cases"][name]["hparams"]
                         | {"predict_sample_size": info["cases"][name]["predict_sample_size"]}},
        }
        row["settings_match"] = _settings_match(case["method"], row["settings"])
        worst = max(row[k] for k in METRICS)
        row["max"] = worst
        row["status"] = "ok" if worst < tol and row["settings_match"] is True else "DIFF"
        rows.append(row)
    return rows


def _settings_match(method: str, settings: dict):
    "True, or a list of the hyperparameters that differ between our settings and the authors' toml block."
    o, a = settings["ours"], settings["authors"]
    pairs = [("sample_size", "sample_size"), ("precision", "precision"), ("predict_sample_size", "predict_sample_size")]
    pairs += [(ok, ak) for ok, ak in BATCH_SETTINGS.items() if ok == "batch_size" or ak in a]
    if "coreset_size_per_task" in a:
        pairs.append(("coreset_size", "coreset_size_per_task"))
    if "n_comp" in a:
        pairs.append(("n_components", "n_comp"))
    bad = [f"{ok}={o.get(ok)} vs {ak}={a.get(ak)}" for ok, ak in pairs if o.get(ok) != a.get(ak)]
    return True if not bad else bad


METRICS = ("loss", "nll", "kl", "w", "grad", "theta", "pred", "fwd")


def print_table(rows, out=sys.stdout):
    head = f"{'method':<11} {'task':<4} " + " ".join(f"{k:>8}" for k in METRICS) + "  status"
    print(head, file=out)
    print("-" * len(head), file=out)
    for r in rows:
        print(f"{r['method']:<11} {r['scenario']:<4} " + " ".join(f"{r[k]:8.1e}" for k in METRICS)
              + f"  {r['status']}", file=out)


# ---------------------------------------------------------------- running the authors' side (also authors_parity_map.py)
def add_common_arguments(parser: argparse.ArgumentParser, sequences=(SEQUENCE,)) -> None:
    parser.add_argument("--sequence", choices=sequences, default=SEQUENCE,
                        help="the sequence whose network, settings and data the cases use")
    parser.add_argument("--network", choices=NETWORKS,
                        help="image sequences: the network (default: the sequence's own, bcl.paper.sequence_setup)")
    parser.add_argument("--authors-repo", type=Path, default=os.environ.get("BCL_AUTHORS_REPO"),
                        help="clone of github.com/blackblitz/bcl at b838074 (or $BCL_AUTHORS_REPO)")
    parser.add_argument("--authors-python", type=Path, default=os.environ.get("BCL_AUTHORS_PYTHON"),
                        help="the authors' environment's python (or $BCL_AUTHORS_PYTHON)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--methods", type=lambda text: text.split(","),
                        help="comma-separated subset of the methods (default: all), e.g. p-gm-sfsvi,l-gm-sfsvi")
    parser.add_argument("--out", type=Path, help="also write the JSON lines to this file")
    parser.add_argument("--keep", type=Path, help="keep the exchanged .npz files in this folder")
    parser.add_argument("--x64", action="store_true",
                        help="run both sides in float64 (inputs cast; JAX_ENABLE_X64 on theirs)")


def authors_command(args, script: str, prog: str):
    """(command, environment, short commit) of the authors' side `script` (beside this file), after a `--probe`; or
    None after printing the one-line skip message (no clone, no environment, or their code does not import)."""
    def skip(message):
        print(f"{prog}: skipped: {message}")
    if args.authors_repo is None or args.authors_python is None:
        return skip("needs --authors-repo and --authors-python (the authors' clone and environment)")
    repo = args.authors_repo.resolve()
    if not (repo / "bcl" / "train" / "training" / "loss.py").is_file():
        return skip(f"{repo} is not a clone of github.com/blackblitz/bcl")
    if not args.authors_python.exists():
        return skip(f"{args.authors_python} does not exist")
    env = dict(os.environ, PYTHONPATH=str(repo), JAX_PLATFORMS="cpu", PYTHONDONTWRITEBYTECODE="1")
    env.pop("XLA_FLAGS", None)
    if args.x64:
        env["JAX_ENABLE_X64"] = "1"
    side = [str(args.authors_python), str(HERE / script), "--authors-repo", str(repo)]
    with tempfile.TemporaryDirectory(prefix="bcl_authors_probe_") as tmp:
        probe = subprocess.run(side + ["--probe"], cwd=tmp, env=env, capture_output=True, text=True)
    if probe.returncode != 0:
        last = (probe.stdout + probe.stderr).strip().splitlines()
        return skip(f"the authors' environment cannot import their code ({last[-1] if last else 'no output'})")
    commit = subprocess.run(["git", "rev-parse", "--short=7", "HEAD"], cwd=repo, capture_output=True,
                            text=True).stdout.strip()
    return side, env, commit


def exchange(side, env, inputs: dict, keep: Path | None, prog: str) -> tuple[dict, float]:
    "Write `inputs` to an .npz, run the authors' side on it in a temporary working directory, read theirs back."
    with tempfile.TemporaryDirectory(prefix="bcl_authors_parity_") as tmp:
        work = Path(keep).resolve() if keep else Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        np.savez(work / "inputs.npz", **inputs)
        start = time.perf_counter()
        # stderr passes through: the side's progress (one line per case) and, on failure, its traceback
        run = subprocess.run(side + ["--inputs", str(work / "inputs.npz"), "--outputs", str(work / "outputs.npz")],
                             cwd=tmp, env=env, stdout=subprocess.PIPE, text=True)
        seconds = time.perf_counter() - start
        if run.returncode != 0:
            print(run.stdout[-4000:], file=sys.stderr)
            raise SystemExit(f"{prog}: the authors' side failed (above)")
        return dict(np.load(work / "outputs.npz", allow_pickle=False)), seconds


def provenance(commit: str, info: dict, seed: int, x64: bool, sequence: str = SEQUENCE, target: dict | None = None
               ) -> dict:
    "What every JSON line records about the run."
    import jax
    net = {} if target is None else {"network": target["network"], "conv_impl": target["setup"].conv_impl,
                                     "input_shape": list(target["input_shape"]), "experiment": target["experiment"]}
    return {"sequence": sequence, **net, "authors_commit": commit, "authors_jax": info["jax"], "jax": jax.__version__,
            "seed": seed,
            "precision": "float64" if x64 else "float32", "created": time.strftime("%Y-%m-%dT%H:%M:%S")}


def write_lines(rows, meta: dict, out: Path | None) -> None:
    "Print the rows as JSON lines (with `meta`) and, with `out`, write them there."
    lines = [json.dumps(r | meta) for r in rows]
    print()
    for line in lines:
        print(line)
    if out:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text("\n".join(lines) + "\n")


# ---------------------------------------------------------------- main
def run_harness(argv, description: str, side_script: str, prog: str, build, compare_cases, legend: str,
                table=None, sequences=(SEQUENCE,), extra_arguments=None) -> int:
    """Both halves of a harness: `build(seed, x64, sequence, network, methods) -> (cases, inputs, ours)` here, `side_script` in the
    authors' environment, then `compare_cases(cases, ours, theirs, info, inputs, tol) -> rows`, printed by `table`
    (default `print_table`) and written. `sequences`: the `--sequence` choices (keys of HARNESS_SEQUENCES).
    `extra_arguments(parser) -> names`: this harness's own options, passed to `build` by name."""
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_common_arguments(parser, sequences)
    extra = extra_arguments(parser) if extra_arguments else ()
    args = parser.parse_args(argv)
    found = authors_command(args, side_script, prog)
    if found is None:
        return 0
    side, env, commit = found
    import jax
    if args.x64:
        jax.config.update("jax_enable_x64", True)
    start = time.perf_counter()
    target = harness_target(args.sequence, args.network)
    cases, inputs, ours = build(args.seed, args.x64, args.sequence, args.network, args.methods,
                                **{name: getattr(args, name) for name in extra})
    ours_s = time.perf_counter() - start
    experiment = target["experiment"]
    # in_shape: their model spec's, replaced by ours where the toml's sequence is another (the 6-layer CNN's CIFAR)
    inputs["meta"] = np.asarray(json.dumps({"experiment": experiment, "cases": cases,
                                            "in_shape": list(target["input_shape"])}))
    theirs, authors_s = exchange(side, env, inputs, args.keep, prog)
    info = json.loads(str(theirs.pop("info")))
    tol = FP_TOL[args.x64]
    rows = compare_cases(cases, ours, theirs, info, inputs, tol)
    meta = provenance(commit, info, args.seed, args.x64, args.sequence, target) | {name: getattr(args, name)
                                                                                    for name in extra}
    print(f"authors' code {commit} (jax {info['jax']}) against bcl (jax {jax.__version__}); {args.sequence} "
          f"({target['network']}, {experiment}); {meta['precision']}; seed {args.seed}; ours {ours_s:.0f} s, theirs {authors_s:.0f} s")
    print(f"largest relative differences (see the module docstring); status DIFF if any > {tol:g} or the settings "
          f"differ{legend}")
    (table or print_table)(rows)
    write_lines(rows, meta, args.out)
    return 0


def _batch_divisor(parser: argparse.ArgumentParser) -> tuple[str, ...]:
    parser.add_argument("--batch-divisor", type=int, default=1,
                        help="divide every minibatch size (batch, coreset batch, inducing points) on both sides by "
                             "this, for cases that do not fit in memory at full size (default 1)")
    return ("batch_divisor",)


def main(argv=None) -> int:
    return run_harness(argv, __doc__, "authors_side.py", "authors_parity.py", build_cases,
                       lambda cases, ours, theirs, info, inputs, tol: compare(cases, ours, theirs, info, tol), "",
                       sequences=("cisplit2diris", "cisplitmnist5k"), extra_arguments=_batch_divisor)


if __name__ == "__main__":
    raise SystemExit(main())
