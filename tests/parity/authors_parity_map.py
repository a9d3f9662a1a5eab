"""Equivalence harness, MAP family: the authors' joint, fine-tuning, EWC, SI and ER trainers (github.com/blackblitz/bcl
at b838074, bcl/train/trainer/smi/) against `bcl.methods.map`, on identical inputs, on the CI Split 2D Iris network
(softmax, 3 outputs, the default), the DI Sinusoid network (`--sequence disinusoid`: sigmoid, 1 output), or the
paper's image networks on MNIST-5k (`--sequence cisplitmnist5k --network fcnn256|cnn_mnist|cnn6`, see
`authors_parity.py` for the networks, their tomls and the inputs).

Usage (our environment; the authors' side runs as a subprocess in theirs, as for `authors_parity.py`):
  .venv/bin/python tests/parity/authors_parity_map.py --authors-repo /path/to/blackblitz-bcl \\
      --authors-python /path/to/authors-venv/bin/python [--sequence disinusoid] [--x64] \\
      [--out benchmarks/results/authors_parity_map.jsonl]

Both packages are called `bcl` and need different JAX versions, so, like `authors_parity.py` (whose helpers this
script imports), the harness runs in two processes; `tests/parity/authors_side_map.py` is the authors' half. Ours are
the methods and grids of `bcl.factory.build_on(name, model, 'softmax', setup)` on the 2-D setup. Theirs are their
trainer classes built from the blocks of experiments/svi_cisplit2diris_fcnn.toml: the toml of their Iris runs, FCNN3
16-16-3 as in `authors_parity.py`, with blocks joint, finetuning, ewc1-5, si1-15 and er. The cases use λ = 10 (ewc2)
and λ = 10, ξ = 0.1 (si2). Each case runs at the first and the third task (t1, t3):

1. step (joint, finetuning, ewc, si, er). Inputs: fresh parameters, a random batch in the inducing box, and the
   regulariser's state set to the same random values on both sides:
   - EWC/SI: anchor θ* = θ + 0.5·N(0, 1) and Hessian H = precision + 2|N(0, 1)|;
   - ER: a random 3-task coreset with t-1 tasks stored. Our `er` loss draws the replay batch from it (`coreset_draw`
     on the step key), and theirs gets that batch as `xs2, ys2`.
   Ours is `method.loss(params, memory, key, batch, hyper, task)`, the function `make_task_program` differentiates.
   Theirs is `trainer.loss` after `update_loss`.
   Reported: loss, nll, penalty (loss - nll) and grad (the max over leaves of max|a-b|/max|a|). Also settings_match:
   whether the two sides agree on the learning rate, batch size, epochs, prior precision, schedule, ER's replay
   batch and coreset size, the λ grid of ewc1-5 and the (λ, ξ) grid of si1-15.
2. end of task, from the same parameters and task t's real data (`bcl.data.sequences.load_sequence(sequence)`):
   - ewc-end: the Fisher (computed from a zero Hessian), the accumulated Hessian H0 + F (H0 = precision at t1,
     random at t3), and the anchor. Both sides use the EXPECTED Fisher, mean_i Σ_c p_c(x_i) (∂ log p_c(x_i)/∂θ)²
     under the model's own p (theirs bcl/train/trainer/smi/simple.py:150-169; ours `bcl.methods.map.expected_fisher`).
     `expected_vs_empirical` measures ours against the empirical Fisher (labels in place of p): 0.5 and 4.4 here. So
     the check would catch a side that used the empirical Fisher.
   - si-end: the path integral itself. Both sides start from the same parameters, Hessian, anchor and accumulator
     Ω0. Ω0 is zero at t1, as both codes start a task, and random at t3. Each side trains for SI_EPOCHS = 2 epochs,
     which is 8 Adam steps with a one-cycle schedule of 8 steps. Both see the same batches: their `shuffle` is
     replaced by our epoch orders. Each side accumulates Ω += g·Δθ with its own code (theirs simple.py:184-203,
     ours the `on_step` of `bcl.methods.map.si`). Each then updates H += Ω / (ξ + (θ - θ_start)²) (theirs
     simple.py:206-215, ours `end_task`). Reported: the final θ, H, anchor and Ω (theirs is recovered from their H).
   - er-end: the coreset after tasks 1..t, and N_DRAWS replay draws. The two sides use different random streams:
     their `random.choice(key, 32, (16,), replace=False)` and our `bcl.engine.train.sample_without_replacement`. So the
     chosen points are not compared; what is compared: sizes, per-class counts, that the stored points are a
     sub-multiset of the task, distinct positions (from an index probe, inputs [position, task]), that each draw is
     8 distinct stored points of one task, and the task frequencies.

Findings (seed 0; benchmarks/results/authors_parity_map.jsonl and _x64.jsonl):
- float32: every quantity agrees to <= 6.6e-7 relative. The step objectives and gradients agree to <= 2.3e-7, the
  Fisher and Hessians to <= 1.9e-7. The largest differences are SI's end of task, 5e-7 to 6.6e-7: rounding
  accumulated over 8 Adam steps. Their Ω, recovered from H, loses a few more bits.
- float64 (--x64): the step objectives, gradients, Fisher and Hessians agree to <= 1.7e-15. SI's end of task differs
  by <= 1.2e-8; the cause is rounding in the optimiser library. Our optax 0.2.8 computes the one-cycle learning rate
  in float32 even under x64: in optax/schedules/_schedule.py:472-476, `pct = (count - bounds[:-1]) /
  interval_sizes` divides int32 by int32. Their optax 0.2.5 keeps the bounds in numpy int64, so its learning rate
  is float64. The learning rates differ by about 5e-8 relative, and nothing else does.
- The hyperparameters are all equal (settings_match is true for every method): learning rate 0.1, batch 16, 100
  epochs, precision 1, one-cycle schedule, λ in {1, 10, 100, 1e3, 1e4}, ξ in {0.1, 1, 10}, and ER's batch 8,
  replay batch 8 and 16 points per task.
- ER's coreset: their code reuses one key for every task; ours draws a new key per task.
  - Theirs: `ExactReplay.update_hparams` (bcl/train/trainer/smi/replay.py:30-34) passes
    `self.hparams['keys']['update_hparams']`, which `OptimizingTrainer.__init__` splits once from the seed
    (bcl/train/trainer/__init__.py:54-62), to `TaskIncrementalCoreset.update`
    (bcl/train/trainer/coreset.py:143-155). With tasks of equal size (32), it keeps the same 16 positions of every
    task: same_positions_every_task is true for theirs at t3.
  - Ours (`bcl.engine.sequence._task_arguments`) derives each task's end_task key from fold_in(seed key, t) by default, so
    the positions differ; `train_sequence(..., options=TrainOptions(task_keys="reused"))` gives every task the seed's own keys, as theirs.
  - Each task's own choice is uniform on both sides; only the correlation across tasks differs. This is a
    convention of randomness, not a different algorithm.
- SI's sign. This is not a difference between the codes; both differ from the SI paper. Their accumulator is
  +Σ g·Δθ (simple.py:186-189 and 201-203), the opposite sign of Zenke et al.'s ω = -Σ g·Δθ. Ours reproduces it:
  `bcl.methods.map.si` with importance_sign=+1; -1 is `si_zenke`. Optimiser steps go downhill, so g·Δθ < 0. In si-end/t1,
  every entry of H decreased, and 56 of 371 were negative after the 8 steps.
- Their `TaskIncrementalCoreset.choice` draws row positions from task 1's size and applies them to the chosen task
  (coreset.py:157-174; lines 175-180 are unreachable). This equals ours because every task stores the same number of
  points.

DI Sinusoid (`--sequence disinusoid`; experiments/svi_disinusoid_fcnn.toml, FCNN3 16-16-1, sigmoid; 200 training
points per task, so every epoch ends with a batch of 8 and SI's 2 epochs are 26 Adam steps;
benchmarks/results/authors_parity_map_disinusoid.jsonl and _disinusoid_x64.jsonl). The sigmoid likelihood reaches
every method's NLL, EWC's expected Fisher (theirs: softmax([0, f(x)]), simple.py:150-164) and SI's path integral
over the partial batches. Our side drops the padding rows of its last batch from the epoch order it hands over.
- float32: the step objectives, gradients, Fisher and Hessians agree to <= 6.1e-7; SI's end of task to <= 8.1e-7
  (parameters, anchor, Ω), except SI's Hessian at t1, 1.4e-5: H = precision + Ω/(ξ + Δθ²) with ξ = 0.1 divides
  Ω, a sum of 26 products of both signs, by small Δθ², so its rounding is amplified. ER as for Iris, with class
  counts not compared (a task holds both classes, so the counts of a random subset differ by chance); settings
  all equal.
- float64: everything but SI's end of task agrees to <= 1.5e-15. SI's end of task differs by 1.5e-7 (parameters)
  and 6.9e-6 (Hessian at t1): our optax 0.2.8's one-cycle learning rate is computed in float32 (see above) and
  differs from theirs by up to 1.6e-6 relative over these 26 steps. With a float64 one-cycle schedule put in its
  place on our side (a diagnostic, not kept: it matches theirs to 6e-12), the differences fall to 2.5e-8 and 8.2e-7.
  Adam itself is bit-identical between their optax 0.2.5 and our 0.2.8 in float64 (26 steps, constant learning
  rate). The remaining 1e-8 to 1e-6 is not pinned down; it is far below float32 rounding, the precision both codes
  train in.

MNIST-5k (`--sequence cisplitmnist5k`): the MAP blocks of the network's toml (experiments/svi_cisplitmnist_fcnn.toml,
svi_cisplitmnist_cnn.toml, svi_cisplitcifar10_cnn.toml; learning rate 0.01, batch 64 or 32, 20 epochs), settings
`bcl.paper.map_settings('image')` / `('image_cnn')`, scenarios t1 and t2, batches and ER's coreset drawn from the
sequence's own data. EWC's Fisher is computed on all 640 training points of the task; SI's path integral runs its
2 epochs on the task's first SI_IMAGE_BATCHES = 4 batches (8 Adam steps, as on Iris). ER's end of task is not run:
its index probe needs 2-d inputs (ER's step objective is compared).

Not compared:
- Whole training runs. Shuffles and keys differ; `authors_seeds.py` and `authors_compare.py` compare the seed
  distributions instead.
- The points a coreset keeps and the replay batch drawn for a given key. The random streams differ, so these are
  compared statistically above.
- Joint's data pipeline: their zarr/memmap `JointCoreset`, the warm start, and the schedule over all data so far.
  Only its step objective is compared, with 1/n_batches for n_batches = ceil(N_1..t / 16).
- SI beyond 8 steps, and λ, ξ values other than those of ewc2/si2. λ is a scalar factor of the same code, and the
  grids are checked as settings.
- MAP prediction: softmax of the network output on both sides; the forward pass is already checked by
  `authors_parity.py`.
- Their AQC and NC trainers, which have no counterpart in bcl.

Without --authors-repo/--authors-python, or when the authors' environment cannot import their code, it prints one
line and exits with status 0.
"""
from __future__ import annotations

import json
import sys

import numpy as np

from authors_parity import (HARNESS_SEQUENCES, SEQUENCE, CaseInputs, _normal_like, flatten, harness_target, max_rel,
                            run_harness, target_model, to_authors)

# The experiment is authors_parity.EXPERIMENT: its toml's MAP blocks train the 16-16-3 network of the paper's Iris runs.
AUTHORS_IDS = {"joint": "joint", "finetuning": "finetuning", "ewc": "ewc2", "si": "si2", "er": "er"}
CASE_HYPER = {"ewc": {"lam": 10.0}, "si": {"lam": 10.0, "xi": 0.1}}  # the blocks ewc2 and si2
SCENARIOS = {"t1": 1, "t3": 3}
SI_EPOCHS = 2  # SI's path integral is run for this many epochs (8 Adam steps) on both sides
N_DRAWS = 200  # ER replay draws per side
SI_IMAGE_BATCHES = 4  # image sequences: SI's path integral runs on the task's first 4 batches (2 epochs: 8 steps)


NULL_TOL = 1e-5  # a leaf whose gradient is <= NULL_TOL x the tree's largest is zero up to rounding (see null_leaves)


def leaf_max_rel(a: dict, b: dict, skip=()) -> float:
    "max over leaves (but those in `skip`) of max|a-b| / max|a| within the leaf."
    return max((max_rel(a[k], b[k]) for k in a if k not in skip), default=0.0)


def null_leaves(grads) -> list[str]:
    """The leaves (authors' names, e.g. 'tail/Conv_0/bias') of a gradient tree that are zero up to float32 rounding.
    A convolution's bias followed by GroupNorm with one channel per group (32 channels, 32 groups: both CNN
    convolutions of cnn_mnist, the first two of cnn6) cancels in the normalisation, so the NLL's gradient with
    respect to it is exactly zero and each code computes rounding noise (~1e-9) there. A within-leaf relative
    difference of two noises is ~1, and Adam (SI's steps) turns the noise into steps of up to the learning rate, so
    these leaves are reported apart (`null_leaf_diff`) and left out of the status. Where a penalty gives them a real
    gradient (EWC/SI at t > 1) they are not null and are compared as every other leaf."""
    import jax
    flat = flatten(to_authors(jax.tree.map(np.asarray, grads)), "", {})
    top = max(float(np.max(np.abs(v))) for v in flat.values())
    return sorted(k[1:] for k, v in flat.items() if float(np.max(np.abs(v))) <= NULL_TOL * top)


def probe_xs(t: int, n: int) -> np.ndarray:
    "Index probe for the coreset: inputs [position, task] (the authors' side builds the same)."
    return np.stack([np.arange(n, dtype=np.float32), np.full(n, t, np.float32)], axis=1)


# ---------------------------------------------------------------- building the cases
def build_cases(seed: int, x64: bool = False, sequence: str = SEQUENCE, network: str | None = None, methods=None):
    import jax
    import jax.numpy as jnp
    from bcl.core import Split, named_keys
    from bcl.data.sequences import load_sequence
    from bcl.factory import build_on
    from bcl.methods.map import QuadraticMemory, SIMemory, expected_fisher, si
    from bcl.paper import MAP_METHODS
    from bcl.vi.svi import inducing_bounds
    from bcl.engine.train import (Batch, Coreset, MethodState, TaskInfo, coreset_draw, epoch_batches, make_task_program,
                           n_batches)
    dtype = jnp.float64 if x64 else jnp.float32
    cast = lambda tree: jax.tree.map(lambda x: jnp.asarray(x, dtype), tree)  # flax inits float32 even under x64

    target = harness_target(sequence, network)
    likelihood, n_classes, n_train = target["likelihood"], target["n_classes"], target["n_train"]
    setup = target["setup"]
    model = target_model(target)
    low, high = inducing_bounds(setup.inducing_low, setup.inducing_high, model.input_shape)
    case_inputs = CaseInputs(target, low, high)
    scenarios = target["scenarios"]
    suite = {name: build_on(name, model, likelihood, setup)[1:3] for name in MAP_METHODS}
    tasks = [(np.asarray(t.train.xs, np.float32), np.asarray(t.train.ys, np.int32))
             for t in load_sequence(sequence).tasks]
    if any(len(ys) != n_train for _, ys in tasks):
        raise ValueError(f"HARNESS_SEQUENCES[{sequence!r}]['n_train'] is {n_train}, but the tasks hold "
                         f"{[len(ys) for _, ys in tasks]} training points: set it to the task size.")
    one_class_per_task = all(len(np.unique(ys)) == 1 for _, ys in tasks)  # else ER's class counts differ by chance
    inputs, ours, cases = {}, {}, []
    root = jax.random.key(seed)

    def add(method, scenario, arrays, result, part="", **extra):
        "Record the case `method[-part]/scenario`: the name is a label; the method is passed, never read from it."
        case = f"{method}{'-' + part if part else ''}/{scenario}"
        for key, value in arrays.items():
            if isinstance(value, dict):
                flatten(to_authors(value), f"{case}/{key}", inputs)
            else:
                inputs[f"{case}/{key}"] = np.asarray(value)
        ours[case] = result
        cases.append({"name": case, "method": method, "scenario": scenario,
                      "authors_id": AUTHORS_IDS[method], "task": scenarios[scenario],
                      "n_train": n_train, "seed": seed, "one_class_per_task": one_class_per_task} | extra)

    for m_index, name in enumerate(MAP_METHODS):
        if methods and name not in methods:
            continue
        method, grid = suite[name]
        s = method.settings
        lr = float(np.atleast_1d(grid["learning_rate"])[0])
        hyper = {"learning_rate": jnp.asarray(lr, dtype)} | {k: jnp.asarray(v, dtype)
                                                             for k, v in CASE_HYPER.get(name, {}).items()}
        for scenario, t in scenarios.items():
            k = named_keys(jax.random.fold_in(root, 10 * m_index + t), "params", "minimum", "hessian", "omega",
                           "batch", "coreset", "step", "train", "end", "draws")
            params = cast(model.init(k["params"]))
            minimum = cast(jax.tree.map(lambda p, e: p + 0.5 * e, params, _normal_like(k["minimum"], params)))
            hessian = cast(jax.tree.map(lambda e: s["precision"] + 2.0 * jnp.abs(e), _normal_like(k["hessian"], params)))
            omega = cast(jax.tree.map(lambda e: 0.05 * e, _normal_like(k["omega"], params)))

            # 1. the step objective: our method's loss (what make_task_program differentiates) on a random batch
            b = method.training.batch_size
            bx, by = case_inputs.batch(k["batch"], t, b)
            batch = Batch(cast(bx), by, jnp.ones(b, dtype))
            n_prev = n_train * (t - 1) if name == "joint" else 0  # joint trains on tasks 1..t
            task = TaskInfo(jnp.asarray(t, jnp.int32), n_train + n_prev, n_batches(n_train + n_prev, b))
            memory = {"ewc": QuadraticMemory(minimum, hessian), "si": SIMemory(minimum, hessian, omega, params)}.get(
                name, ())
            arrays = {"params": params, "xs1": batch.xs, "ys1": batch.ys}
            if name == "er":
                cx, cy = case_inputs.coreset(k["coreset"], len(tasks), s["coreset_size"])
                memory = Coreset(cast(cx), cy, jnp.asarray(t - 1, jnp.int32))
                replay = coreset_draw(k["step"], memory, s["coreset_batch"])  # what er's loss draws from its key
                keep = np.asarray(replay.mask) > 0  # all or none: their coreset returns no rows at task 1
                arrays |= {"xs2": np.asarray(replay.xs)[keep], "ys2": np.asarray(replay.ys)[keep]}
            if name in ("ewc", "si"):
                arrays |= {"minimum": minimum, "hessian": hessian}
            (loss, aux), grads = jax.value_and_grad(method.loss, has_aux=True)(params, memory, k["step"], batch,
                                                                               hyper, task)
            add(name, scenario, arrays, {"loss": float(loss), "nll": float(aux["nll"]),
                                                "grad": flatten(to_authors(grads), "grad", {})},
                kind="step", n_previous=n_prev, null_leaves=null_leaves(grads))

            # 2. the end-of-task updates, from the same parameters and the real task data
            xs, ys = tasks[t - 1]
            split = Split(cast(xs), jnp.asarray(ys))
            if name == "ewc":
                h0 = hessian if t > 1 else cast(jax.tree.map(lambda p: jnp.full_like(p, s["precision"]), params))
                end = method.end_task(k["end"], MethodState(params, QuadraticMemory(minimum, h0)), split, hyper, task)
                fisher = expected_fisher(model, likelihood, params, split.xs, s["fisher_batch"])
                add("ewc", scenario, {"params": params, "hessian": h0, "xs": split.xs, "ys": ys},
                    {"fisher": flatten(to_authors(fisher), "fisher", {}),
                     "hessian": flatten(to_authors(end.memory.hessian), "hessian", {}),
                     "minimum": flatten(to_authors(end.memory.minimum), "minimum", {}),
                     "empirical": flatten(to_authors(_empirical_fisher(model, likelihood, params, split.xs, ys)),
                                              "fisher", {})},
                    part="end", kind="ewc_end", null_leaves=null_leaves(jax.tree.map(jnp.sqrt, fisher)))
            elif name == "si":
                if target["image"]:  # a few steps, as on Iris, not 2 epochs of 640 points
                    keep = SI_IMAGE_BATCHES * s["batch_size"]
                    split, ys = Split(split.xs[:keep], split.ys[:keep]), ys[:keep]
                short = si(model, likelihood, batch_size=s["batch_size"], epochs=SI_EPOCHS, precision=s["precision"],
                           importance_sign=s["importance_sign"])
                h0 = hessian if t > 1 else cast(jax.tree.map(lambda p: jnp.full_like(p, s["precision"]), params))
                w0 = omega if t > 1 else jax.tree.map(jnp.zeros_like, omega)  # their code starts from zeros
                m0 = minimum if t > 1 else jax.tree.map(jnp.zeros_like, minimum)
                state = MethodState(params, SIMemory(m0, h0, w0, params))
                run = make_task_program(short, len(ys))
                trained, _, _ = run(k["train"], state, hyper, split.xs, split.ys, jnp.int32(t))
                end = short.end_task(k["end"], trained, split, hyper, task)
                orders = [_real_rows(*epoch_batches(named_keys(jax.random.fold_in(k["train"], e), "shuffle", "steps")
                                                    ["shuffle"], len(ys), short.training.batch_size))
                          for e in range(SI_EPOCHS)]
                add("si", scenario, {"params": params, "minimum": m0, "hessian": h0, "omega": w0,
                                           "xs": split.xs, "ys": ys, "orders": np.stack(orders)},
                    {"params": flatten(to_authors(trained.params), "params", {}),
                     "hessian": flatten(to_authors(end.memory.hessian), "hessian", {}),
                     "minimum": flatten(to_authors(end.memory.minimum), "minimum", {}),
                     "omega": flatten(to_authors(trained.memory.omega), "omega", {}),
                     "h0": flatten(to_authors(h0), "hessian", {}), "start": flatten(to_authors(params), "p", {})},
                    part="end", kind="si_end", epochs=SI_EPOCHS, xi=CASE_HYPER["si"]["xi"],
                    null_leaves=null_leaves(jax.grad(lambda p: short.loss(p, state.memory, k["step"], Batch(
                        split.xs[orders[0][:b]], split.ys[orders[0][:b]], jnp.ones(b, dtype)), hyper, task)[0])(params)))
            elif name == "er" and not target["image"]:  # the index probe needs 2-d inputs; the step case still runs
                result = {}
                for prefix, data in (("stored", lambda u: tasks[u - 1][0]), ("probe", lambda u: probe_xs(u, n_train))):
                    state = method.init(k["end"], [None] * len(tasks))
                    for u in range(1, t + 1):  # the end_task keys of bcl.engine.sequence._task_arguments
                        key = named_keys(jax.random.fold_in(k["end"], u), "train", "end_task")["end_task"]
                        state = method.end_task(key, state, Split(data(u), tasks[u - 1][1]), hyper, task)
                    c = state.memory
                    result |= {f"{prefix}/xs{u}": np.asarray(c.xs[u - 1]) for u in range(1, t + 1)}
                    result |= {f"{prefix}/ys{u}": np.asarray(c.ys[u - 1]) for u in range(1, t + 1)}
                drawn = jax.vmap(lambda kk: coreset_draw(kk, c, s["coreset_batch"]))(jax.random.split(k["draws"],
                                                                                                       N_DRAWS))
                result |= {"draws/xs": np.asarray(drawn.xs), "draws/ys": np.asarray(drawn.ys)}
                arrays = {f"xs{u}": tasks[u - 1][0] for u in range(1, t + 1)}
                add("er", scenario, arrays | {f"ys{u}": tasks[u - 1][1] for u in range(1, t + 1)}, result,
                    part="end", kind="er_end", n_draws=N_DRAWS)
    ours["settings"] = {name: (suite[name][0].settings, {k: sorted(set(np.atleast_1d(v).tolist()))
                                                         for k, v in suite[name][1].items()}) for name in MAP_METHODS}
    ours["pairs"] = {name: sorted({tuple(float(v) for v in row) for row in zip(*(np.atleast_1d(suite[name][1][k])
                                                                                 for k in ("lam", "xi")))})
                     for name in ("si",)}
    return cases, inputs, ours


def _real_rows(rows, mask) -> np.ndarray:
    "One epoch's order of row indices without the padding of its last batch (their batches are the consecutive runs)."
    return np.asarray(rows).reshape(-1)[np.asarray(mask).reshape(-1) > 0]


def _empirical_fisher(model, likelihood, params, xs, ys):
    "mean_i (∇θ log p_{y_i}(x_i))²: what an empirical-Fisher EWC would add (for the sensitivity line only)."
    import jax
    from bcl.engine.train import class_logits
    def log_p(p, x, y):
        return jax.nn.log_softmax(class_logits(model.apply(p, x[None])[0], likelihood))[y]
    grads = jax.vmap(jax.grad(log_p), in_axes=(None, 0, 0))(params, xs, ys)
    return jax.tree.map(lambda g: (g ** 2).mean(0), grads)


# ---------------------------------------------------------------- comparing
CLASSES = {"joint": "Joint", "finetuning": "Finetuning", "ewc": "ElasticWeightConsolidation",
           "si": "SynapticIntelligence", "er": "ExperienceReplay"}


def settings_check(name: str, ours: dict, blocks: dict):
    "True, or the hyperparameters that differ between `bcl.factory`/`bcl.paper` and every toml block of the class."
    settings, grid = ours["settings"][name]
    bl = blocks[CLASSES[name]]
    def theirs(key):
        values = sorted({json.dumps(b.get(key)) for b in bl})
        return json.loads(values[0]) if len(values) == 1 else [json.loads(v) for v in values]
    pairs = [("learning_rate", grid["learning_rate"][0], "base_lr", theirs("base_lr")),
             ("batch_size", settings["batch_size"], "batch_size", theirs("batch_size")),
             ("epochs", settings["epochs"], "n_epochs", theirs("n_epochs")),
             ("precision", settings["precision"], "precision", theirs("precision")),
             ("schedule", "onecycle", "lr_schedule", theirs("lr_schedule"))]
    if name == "er":
        pairs += [("coreset_batch", settings["coreset_batch"], "coreset_batch_size", theirs("coreset_batch_size")),
                  ("coreset_size", settings["coreset_size"], "coreset_size_per_task", theirs("coreset_size_per_task"))]
    if name == "ewc":
        pairs.append(("lam grid", grid["lam"], "lambda of ewc1-5", sorted(b["lambda"] for b in bl)))
    if name == "si":
        pairs.append(("(lam, xi) grid", ours["pairs"]["si"], "(lambda, xi) of si1-15",
                      sorted((b["lambda"], b["xi"]) for b in bl)))
    def same(a, b):
        try:
            return np.allclose(np.asarray(a, np.float64), np.asarray(b, np.float64), rtol=1e-6, atol=0)
        except (TypeError, ValueError):
            return a == b
    bad = [f"{ok}={o} vs {ak}={a}" for ok, o, ak, a in pairs if not same(o, a)]
    return True if not bad else bad


def _tree(t: dict, prefix: str) -> dict:
    return {k[len(prefix) + 1:]: v for k, v in t.items() if k.startswith(prefix + "/")}


def _multiset(xs, ys) -> dict:
    from collections import Counter
    return Counter(zip(map(tuple, np.asarray(xs, np.float32).tolist()), np.asarray(ys).tolist()))


def er_summary(r: dict, arrays: dict, t: int) -> dict:
    "What can be compared of a coreset after tasks 1..t and of its replay draws, for one side."
    stored = [(r[f"stored/xs{u}"], r[f"stored/ys{u}"]) for u in range(1, t + 1)]
    positions = [sorted(np.asarray(r[f"probe/xs{u}"])[:, 0].astype(int).tolist()) for u in range(1, t + 1)]
    subset = all(not (_multiset(*s) - _multiset(arrays[f"xs{u}"], arrays[f"ys{u}"]))
                 for u, s in enumerate(stored, 1))
    draws, ok, freq = np.asarray(r["draws/xs"]), True, {u: 0 for u in range(1, t + 1)}
    for d in draws:
        task, pos = d[:, 1].astype(int), d[:, 0].astype(int).tolist()
        ok &= bool((task == task[0]).all()) and len(set(pos)) == len(pos) and set(pos) <= set(positions[task[0] - 1])
        freq[int(task[0])] = freq.get(int(task[0]), 0) + 1
    return {"sizes": [len(s[1]) for s in stored],
            "class_counts": [{str(c): int(n) for c, n in zip(*np.unique(s[1], return_counts=True))} for s in stored],
            "subset_of_task": subset,
            "distinct": all(len(set(p)) == len(p) for p in positions),
            "positions": positions, "same_positions_every_task": t > 1 and all(p == positions[0] for p in positions),
            "draw_size": int(draws.shape[1]), "draws_one_task_distinct_stored": ok, "task_frequency": freq}


def compare(cases, ours, theirs, info, inputs, tol: float) -> list[dict]:
    rows = []
    for case in cases:
        name, kind = case["name"], case["kind"]
        o, t = ours[name], _tree(theirs, name)
        skip = case.get("null_leaves", [])
        quantities = {}
        row = {"method": name.split("/")[0], "scenario": case["scenario"], "kind": kind,
               "authors_class": info["cases"][name]["class"], "authors_id": info["cases"][name]["toml_id"],
               "authors_loss_fn": info["cases"][name]["loss_function"]}
        if kind == "step":
            a_loss, a_nll = float(t["loss"]), float(t["nll"])
            a_pen, o_pen = a_loss - a_nll, o["loss"] - o["nll"]
            row |= {"loss": abs(a_loss - o["loss"]) / abs(a_loss), "nll": abs(a_nll - o["nll"]) / abs(a_nll),
                    "penalty": abs(a_pen - o_pen) / abs(a_pen), "grad": leaf_max_rel(_tree(t, "grad"), _tree(o["grad"], "grad"), skip),
                    "values": {"loss": [a_loss, o["loss"]], "nll": [a_nll, o["nll"]], "penalty": [a_pen, o_pen]}}
            row["settings_match"] = settings_check(case["method"], ours, info["blocks"])
            metrics = ("loss", "nll", "penalty", "grad")
        elif kind == "ewc_end":
            row |= {name_: leaf_max_rel(_tree(t, name_), _tree(o[name_], name_), skip) for name_ in ("fisher", "hessian", "minimum")}
            row |= {"fisher_kind": {"ours": "expected (bcl.methods.map.expected_fisher)", "authors": "expected (simple.py:150-164)"},
                    "expected_vs_empirical": leaf_max_rel(_tree(o["fisher"], "fisher"), _tree(o["empirical"], "fisher"))}
            metrics = ("fisher", "hessian", "minimum")
        elif kind == "si_end":
            row |= {name_: leaf_max_rel(_tree(t, name_), _tree(o[name_], name_), skip) for name_ in ("params", "hessian", "minimum")}
            xi = case["xi"]  # their accumulator, recovered from their Hessian: (H - H0) (xi + (theta - theta_start)^2)
            omega = {k: (np.float64(t[f"hessian/{k}"]) - o["h0"][f"hessian/{k}"])
                     * (xi + (np.float64(t[f"params/{k}"]) - o["start"][f"p/{k}"]) ** 2) for k in _tree(o["omega"], "omega")}
            row["omega"] = leaf_max_rel(_tree(o["omega"], "omega"), omega, skip)
            quantities = {"params": (_tree(t, "params"), _tree(o["params"], "params")),
                          "omega": (_tree(o["omega"], "omega"), omega)}
            row["epochs"] = case["epochs"]
            metrics = ("params", "hessian", "minimum", "omega")
        else:
            arrays = _tree(inputs, name)
            mine, theirs_ = er_summary(o, arrays, case["task"]), er_summary(t, arrays, case["task"])
            row |= {"ours": mine, "authors": theirs_}
            # a task with several classes gives random class counts: compare them only when each task has one class
            fields = ("sizes", "class_counts", "draw_size") if case["one_class_per_task"] else ("sizes", "draw_size")
            same = all(mine[k] == theirs_[k] for k in fields)
            good = all(mine[k] and theirs_[k] for k in ("subset_of_task", "distinct", "draws_one_task_distinct_stored"))
            row["max"], row["status"] = 0.0, "ok" if same and good else "DIFF"
            rows.append(row)
            continue
        if kind == "step":
            quantities = {"grad": (_tree(t, "grad"), _tree(o["grad"], "grad"))}
        elif kind == "ewc_end":
            quantities = {"fisher": (_tree(t, "fisher"), _tree(o["fisher"], "fisher"))}
        if skip:
            row["null_leaves"] = skip
            row["null_leaf_diff"] = max(max_rel(a[k], b[k]) for a, b in quantities.values() for k in skip if k in a)
        row["max"] = max(row[k] for k in metrics)
        row["status"] = "ok" if row["max"] < tol and row.get("settings_match", True) is True else "DIFF"
        rows.append(row)
    return rows


def print_table(rows, out=sys.stdout):
    head = f"{'case':<15} {'task':<4} {'quantity: largest relative difference':<60} status"
    print(head, file=out)
    print("-" * len(head), file=out)
    skip = {"method", "scenario", "kind", "authors_class", "authors_id", "authors_loss_fn", "values", "settings_match", "max", "status",
            "fisher_kind", "ours", "authors", "epochs", "null_leaves", "null_leaf_diff"}
    for r in rows:
        if r["kind"] == "er_end":
            o, a = r["ours"], r["authors"]
            text = (f"sizes {o['sizes']}, subset {o['subset_of_task']}/{a['subset_of_task']}, draws ok "
                    f"{o['draws_one_task_distinct_stored']}/{a['draws_one_task_distinct_stored']}, same positions "
                    f"every task {o['same_positions_every_task']}/{a['same_positions_every_task']}")
        else:
            text = " ".join(f"{k} {v:.1e}" for k, v in r.items() if k not in skip)
        print(f"{r['method']:<15} {r['scenario']:<4} {text:<60} {r['status']}", file=out)
        if r.get("settings_match", True) is not True:
            print(f"{'':<20} settings differ: {r['settings_match']}", file=out)
        if r.get("null_leaves"):
            print(f"{'':<20} left out (zero gradient, null_leaves): {', '.join(r['null_leaves'])}; their difference "
                  f"{r['null_leaf_diff']:.1e}", file=out)


# ---------------------------------------------------------------- main
def main(argv=None) -> int:
    return run_harness(argv, __doc__, "authors_side_map.py", "authors_parity_map.py", build_cases, compare,
                       "; ER: ours/theirs", print_table, sequences=tuple(HARNESS_SEQUENCES))


if __name__ == "__main__":
    raise SystemExit(main())
