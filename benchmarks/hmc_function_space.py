"""HMC-NUTS convergence in function space against the number of chains (issue 31, item 6).

Two steps:

1. `sample`: joint HMC-NUTS after one task of a visualisation sequence with the paper's settings (1000 warm-up
   steps of window adaptation, 100 NUTS steps kept per chain) and `--chains` chains (sharded over the host devices;
   each device runs its chains one after the other on a CPU and vmapped on an accelerator, unless `--vmap` or
   `--in-turn` says otherwise), as `bcl.figure.visualisation` runs it (model fcnn16, prior precision 1, key 1337,
   the same key at every task). Saves the sampling phase's trace of positions (chains, draws, ...) and the
   wall/CPU seconds to `results/hmc_function_space/<sequence>_t<task>_c<chains>.npz|json` (git-ignored). With
   `--store FOLDER`, the task is also kept there as the visualisation keeps it, so that a long run can sample its
   hardest task first (a stored task is read back only under the same settings, data, key and code).
   `--target-acceptance` changes the warm-up's target acceptance rate (the paper's 0.8); such a trace is named
   `..._target90` for 0.9, and `table --target-acceptance 0.9` judges it into a table of its own.
2. `table`: for every saved trace and every chain count that divides it (the first C chains of a run with more
   chains are C independent chains: each chain has its own key, start, warm-up, step size and mass matrix), the
   function-space diagnostics of `bcl.methods.hmc.predictive_convergence` (rank-normalised split R̂, max of bulk and
   folded, and bulk ESS of the predictive probabilities at the test points and the plotting-grid points), written
   to `experiments/tables/hmc_function_space_<sequence>.md` and `.json` (`hmc_function_space.md` without `--sequence`).
   Rows of the committed table whose trace is not on disk (a new checkout has none) are kept as they are.

3. `gradient`: what `vmap` buys a NUTS step on this device: the seconds per gradient of the joint log posterior
   after each task, for one chain and for `--chains` chains vmapped (200 gradient steps in one compiled loop each,
   one device), and their ratio (a ratio near the chain count: batching saves nothing).
4. `diagnostics`: the seconds of the function-space diagnostics themselves, on synthetic predictive draws of
   `--chains` chains × `--draws` draws at one block of 1,024 inputs × 3 classes (jitted, compilation excluded):
   `rank_rhat` and `bulk_ess` apart, `rank_diagnostics` (one ranking for both), and the lag-by-lag autocovariance
   against a batched `jnp.correlate` (what the ESS used before), all in one run so that their ratios hold on a
   shared machine.
5. `chains`: which chains hold one stored task's function-space R̂ over the threshold. For the class-1 predictive
   probability at the test and grid points (binary tasks: class 0's R̂ is the same up to rounding), each chain's
   distance from the others (the mean over the scalars over the threshold of |chain mean − median of the chain
   means| / their spread), its adaptation and trajectories (step size against the chains' median, acceptance,
   divergences, leapfrog steps per NUTS step, the share of steps at the cap of 2^10 − 1), whether its two halves
   sit on the same side (correlation of their deviations), then R̂ with the most distant 1..`--drop` chains left
   out against `--controls` random pairs left out (a control that falls too says the chains are merely few).
   Prints a table and writes `benchmarks/results/hmc_chains_<sequence>_task<T>.json` with its provenance.
6. `rerun`: one chain of a stored task sampled again alone (`--chain`), from the run's own key, start and data, with
   each warm-up target acceptance of `--targets` (0.8, the run's, first: it must give the stored chain back); its step
   size, acceptance, divergences, distance from the other chains (as `chains` measures it) and R̂ with it in place of
   the stored chain, judged at the points whose stored R̂ exceeds `--near`. Writes
   `benchmarks/results/hmc_rerun_<sequence>_task<T>_chain<C>.json`.

Usage:
    python benchmarks/hmc_function_space.py sample --sequence cisplit2diris --task 1 --chains 16
    python benchmarks/hmc_function_space.py sample --sequence disinusoid --task 5 --chains 64 --samples 400 \
        --store results/paper_disinusoid/hmc_tasks
    python benchmarks/hmc_function_space.py sample --sequence disinusoid --task 5 --chains 64 --samples 400 \
        --target-acceptance 0.9 --store results/disinusoid_target90/hmc_tasks
    python benchmarks/hmc_function_space.py table
    python benchmarks/hmc_function_space.py gradient --chains 16
    python benchmarks/hmc_function_space.py diagnostics --chains 64 --draws 100
    python benchmarks/hmc_function_space.py chains --sequence disinusoid --task 5 \
        --store results/paper_disinusoid/hmc_tasks
    python benchmarks/hmc_function_space.py rerun --sequence disinusoid --task 5 --chain 20 \
        --store results/paper_disinusoid/hmc_tasks
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
FOLDER = ROOT / "results" / "hmc_function_space"
TABLES = ROOT / "experiments" / "tables"
COMMAND = "python benchmarks/hmc_function_space.py"

from bcl.figure.hmc_convergence import (PAPER_TARGET, ConvergenceSpec, committed_rows, convergence_rows,  # noqa: E402
                                        kept_rows, sample_trace, stored_results, stored_runs, table_source,
                                        target_suffix, trace_positions, write_convergence_table)


def _host_devices(chains: int) -> None:
    from bcl.core import largest_divisor_at_most  # pure Python: JAX has not started
    n = largest_divisor_at_most(chains, os.cpu_count() or 1)
    if n > 1 and "xla_force_host_platform_device_count" not in os.environ.get("XLA_FLAGS", ""):
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + f" --xla_force_host_platform_device_count={n}")


def sample(args) -> None:
    "The study's run (`bcl.figure.hmc_convergence.sample_trace`), its chains over the host devices."
    _host_devices(args.chains)
    spec = ConvergenceSpec(args.sequence, args.task, args.chains, args.warmup, args.samples, args.seed,
                           args.target_acceptance, args.vectorise)
    print(json.dumps(sample_trace(spec, FOLDER, args.store)))


def table(args) -> None:
    "The study's table (`bcl.figure.hmc_convergence.convergence_rows`) from the traces at hand or a stored run."
    stem = "hmc_function_space" + (f"_{args.sequence}" if args.sequence else "") + target_suffix(args.target_acceptance)
    if args.tasks and not args.store:
        raise SystemExit("--tasks needs --store: it picks tasks of a visualisation run's stored HMC tasks")
    if args.store:
        if not args.sequence:
            raise SystemExit("--store needs --sequence: the visualisation run's sequence")
        try:
            runs = list(stored_runs(Path(args.store), args.sequence, args.tasks))
        except ValueError as error:
            raise SystemExit(str(error))
        other = sorted({record["target_acceptance"] for record, _ in runs} - {args.target_acceptance})
        if other:
            raise SystemExit(f"{args.store} was sampled with warm-up target acceptance {other}, not "
                             f"{args.target_acceptance}: judge it with --target-acceptance {other[0]} (its own table)")
        # the visualisation run's traces replace the sequence's rows; with --tasks, only those tasks' rows
        rows = [] if args.tasks is None else [
            row for row in committed_rows(TABLES / f"{stem}.json") if int(row["task"]) not in args.tasks]
    else:
        paths = sorted(FOLDER.glob(f"{args.sequence or ''}*.json"))
        runs = [(json.loads(path.read_text()), path.with_suffix(".npz")) for path in paths]
        runs = [(record, trace) for record, trace in runs  # traces saved before the option was recorded: the paper's
                if record.get("target_acceptance", PAPER_TARGET) == args.target_acceptance]
        rows = kept_rows(TABLES / f"{stem}.json", [record for record, _ in runs])
        if rows:
            print(f"kept {len(rows)} rows of the committed table whose traces are not in {FOLDER}", flush=True)
    command = (f"{COMMAND} table"
               + (f" --sequence {args.sequence}" if args.sequence else "")
               + (f" --store {args.store} --counts {' '.join(map(str, args.counts))}" if args.store else "")
               + (f" --tasks {' '.join(map(str, args.tasks))}" if args.tasks else "")
               + (f" --target-acceptance {args.target_acceptance:g}" if target_suffix(args.target_acceptance) else ""))
    source = table_source(bool(args.store), args.sequence, args.target_acceptance, COMMAND)
    for record, trace in runs:
        for row in convergence_rows(record, trace_positions(record, trace), args.counts, args.grid_resolution):
            rows.append(row)
            print(row, flush=True)
            write_convergence_table(TABLES, stem, rows, command, source, args.grid_resolution)  # what is finished


def gradient(args) -> None:
    import jax
    import jax.numpy as jnp
    from bcl.data.sequences import load_sequence
    from bcl.methods.hmc import hmc_initial_positions, joint_log_posterior, joint_training_data
    from bcl.models import make_model
    steps = 200

    def per_gradient(program, position) -> float:
        jax.block_until_ready(program(position))  # compile and warm
        start = time.perf_counter()
        for _ in range(3):
            jax.block_until_ready(program(position))
        return (time.perf_counter() - start) / 3 / steps

    print(f"device {jax.devices()[0]}, load {os.getloadavg()[0]:.1f}", flush=True)
    for name in args.sequences:
        sequence = load_sequence(name)
        model = make_model("fcnn16", sequence.n_outputs, sequence.input_shape)
        log_posterior = joint_log_posterior(model.apply, sequence.likelihood)
        positions = hmc_initial_positions(jax.random.key(0), model, args.chains)
        for t in range(1, len(sequence) + 1):
            data = tuple(jnp.asarray(a) for a in joint_training_data(sequence, t))
            grad = jax.grad(lambda p: log_posterior(p, data))
            nudge = lambda i, q: jax.tree.map(lambda a, g: a + 1e-6 * g, q, grad(q))
            walk = lambda p: jax.lax.fori_loop(0, steps, nudge, p)
            one = per_gradient(jax.jit(walk), jax.tree.map(lambda a: a[0], positions))
            batched = per_gradient(jax.jit(jax.vmap(walk)), positions)
            print(f"{name} task {t} ({len(data[0])} points): one chain {one * 1e6:.0f} µs a gradient, {args.chains} "
                  f"vmapped {batched * 1e6:.0f} µs = {batched / one:.1f} times one chain", flush=True)


def diagnostics(args) -> None:
    import jax
    import jax.numpy as jnp
    import numpy as np
    from bcl.methods.hmc import _autocovariance, _split_chains, bulk_ess, rank_diagnostics, rank_rhat

    def correlate(x):  # the batched correlation the ESS used before (XLA:CPU lowers it to a convolution)
        n = x.shape[-1]
        centred = x - x.mean(-1, keepdims=True)
        full = jax.vmap(lambda row: jnp.correlate(row, row, mode="full", precision=jax.lax.Precision.HIGHEST))(centred)
        return full[:, n - 1:] / n

    def seconds(fn, *inputs):
        fn = jax.jit(fn)
        jax.block_until_ready(fn(*inputs))
        start = time.perf_counter()
        out = jax.block_until_ready(fn(*inputs))
        return time.perf_counter() - start, out

    logits = 3 * jax.random.normal(jax.random.key(0), (args.chains, args.draws, 1024, 3))
    draws = jax.nn.softmax(logits, -1)
    load = os.getloadavg()[0]
    apart, (rhat, ess) = seconds(lambda d: (rank_rhat(d), bulk_ess(d)), draws)
    together, (rhat_1, ess_1) = seconds(rank_diagnostics, draws)
    np.testing.assert_allclose(rhat_1, rhat, rtol=1e-5)  # two compiled programs: equal up to rounding
    np.testing.assert_allclose(ess_1, ess, rtol=1e-4)
    split = _split_chains(draws).reshape(2 * args.chains, args.draws // 2, -1)
    rows = jnp.moveaxis(split, -1, 0).reshape(-1, args.draws // 2)
    lagged, a = seconds(_autocovariance, rows)
    batched, b = seconds(correlate, rows)
    print(f"{jax.default_backend()}, {args.chains} chains × {args.draws} draws, 1,024 inputs × 3 classes, "
          f"load {load:.1f}: rank_rhat + bulk_ess {apart:.2f} s, rank_diagnostics {together:.2f} s "
          f"({apart / together:.1f}×); autocovariance of {rows.shape[0]:,} rows: lag by lag {lagged:.2f} s, "
          f"batched correlate {batched:.2f} s ({batched / lagged:.1f}×, max difference "
          f"{float(jnp.abs(a - b).max()):.1e})", flush=True)


def distance_from(reference, means) -> "np.ndarray":
    """How far chain means (..., S) sit from chains' means `reference` (C, S): the mean over the S scalars of
    |mean − median of the reference| / the reference's spread."""
    import numpy as np
    reference = np.asarray(reference, np.float64)
    spread = reference.std(axis=0) + 1e-12
    return (np.abs(np.asarray(means, np.float64) - np.median(reference, axis=0)) / spread).mean(axis=-1)


def chain_distances(draws, over) -> "np.ndarray":
    "`distance_from` the chains themselves of each chain of draws (C, N, ...) at the scalars `over` (a mask)."
    import numpy as np
    means = np.asarray(draws, np.float64).mean(axis=1)[:, np.asarray(over)]
    return distance_from(means, means)


def scalar_rhat(draws, block: int = 1000) -> "np.ndarray":
    "Rank-normalised split R̂ (S,) of draws (C, N, S), S in blocks of `block`."
    import jax
    import jax.numpy as jnp
    import numpy as np
    from bcl.methods.hmc import rank_rhat
    compiled = jax.jit(rank_rhat)
    return np.concatenate([np.asarray(compiled(jnp.asarray(draws[:, :, i:i + block])))
                           for i in range(0, draws.shape[2], block)])


def leave_out_rhat(draws, out, threshold: float = 1.01) -> tuple[float, int]:
    "(max R̂, scalars over `threshold`) of draws (C, N, S) without the chains `out`."
    import numpy as np
    rhat = scalar_rhat(draws[np.setdiff1d(np.arange(draws.shape[0]), np.asarray(out, int))])
    return float(rhat.max()), int((rhat > threshold).sum())


def class1_draws(name: str, positions, grid_resolution: int = 100, points=None):
    """(sequence, model, inputs, class-1 predictive probabilities (chains, draws, inputs)) of a trace's positions at
    the sequence's test points and plotting grid (or at the rows `points` of those inputs), 1,000 inputs at a time."""
    import jax
    import numpy as np
    from bcl.data.sequences import load_sequence
    from bcl.figure.visualisation import PLOT_WINDOWS, plot_grid
    from bcl.methods.hmc import predictive_draws
    from bcl.models import make_model
    sequence = load_sequence(name)
    model = make_model("fcnn16", sequence.n_outputs, sequence.input_shape)
    xs = np.concatenate([np.concatenate([task.test.xs for task in sequence.tasks]),
                         plot_grid(PLOT_WINDOWS[name], grid_resolution)]).astype(np.float32)
    xs = xs if points is None else xs[points]
    predict = jax.jit(lambda p, x: predictive_draws(p, model, x, sequence.likelihood))
    blocks = [np.asarray(predict(positions, xs[i:i + 1000])) for i in range(0, len(xs), 1000)]
    if blocks[0].shape[-1] != 2:
        raise SystemExit(f"{name} has {blocks[0].shape[-1]} classes: the chain analysis reads class 1 of a binary task")
    return sequence, model, xs, np.concatenate([block[..., 1] for block in blocks], axis=2)


def chains(args) -> None:
    import numpy as np
    from bcl.core import atomic_write_json
    from bcl.methods.hmc import RHAT_THRESHOLD
    from bcl.provenance import provenance
    began = time.perf_counter()
    (record, result), = stored_results(Path(args.store), args.sequence, [args.task])
    _, _, xs, draws = class1_draws(args.sequence, result.trace.position, args.grid_resolution)
    n_chains, n_draws = draws.shape[:2]
    rhat = scalar_rhat(draws)
    over = rhat > RHAT_THRESHOLD
    max_rhat, n_over = float(rhat.max()), int(over.sum())
    print(f"{args.sequence} task {args.task}: {n_chains} chains × {n_draws} draws, class-1 probability at {len(xs)} "
          f"points: max R̂ {max_rhat:.4f}, {n_over} over {RHAT_THRESHOLD}", flush=True)
    if n_over == 0:
        raise SystemExit("no scalar is over the threshold: nothing to attribute")
    distance = chain_distances(draws, over)
    order = np.argsort(-distance)
    info, trace = result.info, result.trace
    steps = np.asarray(trace.num_integration_steps)
    step_size = np.asarray(info.step_size)
    pooled = draws[:, :, over].mean(axis=(0, 1))  # all chains' mean at the scalars over

    def describe(c):
        halves = [draws[c, part][:, over].mean(axis=0) - pooled
                  for part in (slice(0, n_draws // 2), slice(n_draws // 2, None))]
        return {"chain": int(c), "distance": round(float(distance[c]), 2),
                "step size / median": round(float(step_size[c] / np.median(step_size)), 2),
                "acceptance": round(float(np.asarray(info.acceptance_rate)[c]), 3),
                "divergent": int(np.asarray(info.n_divergent)[c]),
                "leapfrog steps / NUTS step": round(float(steps[c].mean()), 1),
                "share at the cap": round(float((steps[c] >= 2 ** 10 - 1).mean()), 3),
                "halves agree (correlation)": round(float(np.corrcoef(*halves)[0, 1]), 3)}
    median = {"step size / median": 1.0,
              "acceptance": round(float(np.median(np.asarray(info.acceptance_rate))), 3),
              "divergent": float(np.median(np.asarray(info.n_divergent))),
              "leapfrog steps / NUTS step": round(float(np.median(steps.mean(axis=1))), 1),
              "share at the cap": round(float(np.median((steps >= 2 ** 10 - 1).mean(axis=1))), 3)}
    rows = [describe(c) for c in order[:args.show]]
    for row in rows:
        print(row, flush=True)
    print("median chain:", median, flush=True)
    left_out = []
    for k in range(1, args.drop + 1):
        out = sorted(order[:k].tolist())
        m, n = leave_out_rhat(draws, out, RHAT_THRESHOLD)
        left_out.append({"left out": out, "how": f"the {k} most distant", "max R̂": round(m, 4), "over": n})
        print(left_out[-1], flush=True)
    rng = np.random.default_rng(0)
    for _ in range(args.controls):
        out = sorted(rng.choice(n_chains, 2, replace=False).tolist())
        m, n = leave_out_rhat(draws, out, RHAT_THRESHOLD)
        left_out.append({"left out": out, "how": "2 at random", "max R̂": round(m, 4), "over": n})
        print(left_out[-1], flush=True)
    out_path = ROOT / "benchmarks" / "results" / f"hmc_chains_{args.sequence}_task{args.task}.json"
    atomic_write_json(out_path, {
        "command": " ".join(["python", "benchmarks/hmc_function_space.py", *sys.argv[1:]]),
        "sequence": args.sequence, "task": args.task, "chains": n_chains, "draws per chain": n_draws,
        "points": len(xs), "max R̂": round(max_rhat, 4), "over": n_over, "threshold": RHAT_THRESHOLD,
        "sampled by bcl_code": record["provenance"]["bcl_code"], "most distant chains": rows, "median chain": median,
        "left out": left_out, "seconds": round(time.perf_counter() - began, 1), "provenance": provenance()})
    print(f"wrote {out_path.relative_to(ROOT)} ({time.perf_counter() - began:.0f} s)")


def rerun(args) -> None:
    """One chain of a stored task sampled again, alone, from the run's own key, start and data, with each warm-up
    target acceptance in `--targets`; how far it then sits from the other chains, and R̂ with it in their place."""
    import jax
    import jax.numpy as jnp
    import numpy as np
    from bcl.core import atomic_write_json, named_keys
    from bcl.engine.checkpoint import array_digest
    from bcl.methods.hmc import (RHAT_THRESHOLD, hmc_chain, hmc_initial_positions, hmc_task_fingerprint, hmc_warmup,
                                 joint_log_posterior, joint_training_data)
    from bcl.provenance import provenance
    began = time.perf_counter()
    (record, stored), = stored_results(Path(args.store), args.sequence, [args.task])
    fingerprint = record["fingerprint"]
    sequence, model, _, draws = class1_draws(args.sequence, stored.trace.position, args.grid_resolution)
    n_chains = draws.shape[0]
    if not 0 <= args.chain < n_chains:
        raise SystemExit(f"--chain must be in 0..{n_chains - 1}")
    rhat = scalar_rhat(draws)
    near = rhat > args.near  # R̂ is recomputed at these points only: the others are far below the threshold
    draws, over = draws[:, :, near], rhat[near] > RHAT_THRESHOLD
    print(f"{args.sequence} task {args.task}: max R̂ {rhat.max():.4f}, {int(over.sum())} over {RHAT_THRESHOLD}; "
          f"{int(near.sum())} points over {args.near} judged below", flush=True)
    # the data as the run passed them, zero-padded or not (`run_hmc_sequence`'s `pad`): the one its fingerprint names
    data = [tuple(jnp.asarray(a) for a in joint_training_data(sequence, args.task, pad)) for pad in (False, True)]
    data = next((d for d in data if array_digest(*d) == fingerprint["data"]), None)
    if data is None:
        raise SystemExit(f"the stored task was not sampled from {args.sequence}'s data after task {args.task}")
    keys = named_keys(jax.random.key(args.seed), "init", "chains")
    positions = hmc_initial_positions(keys["init"], model, n_chains)
    settings = fingerprint["settings"]
    again = hmc_task_fingerprint(keys["chains"], model, data, positions, settings)
    if (again["positions"], again["chain_key"]) != (fingerprint["positions"], fingerprint["chain_key"]):
        raise SystemExit(f"the stored task was not sampled from key {args.seed}'s starts and chain keys (--seed?)")
    chain_keys = named_keys(jax.random.split(keys["chains"], n_chains)[args.chain], "warmup", "sample")
    log_posterior = joint_log_posterior(model.apply, sequence.likelihood, settings["precision"])
    logdensity = lambda params: log_posterior(params, data)
    start = jax.tree.map(lambda a: a[args.chain], positions)
    means = np.delete(draws, args.chain, axis=0).mean(axis=1)[:, over]  # the other chains'
    distance = lambda m: round(float(distance_from(means, m)), 2)
    rows = []
    for target in args.targets:
        t = time.perf_counter()
        warm = jax.jit(lambda key, p: hmc_warmup(key, logdensity, p, settings["num_warmup"], target,
                                                 settings["max_num_doublings"]))
        state, step_size, imm, n_warm_div = warm(chain_keys["warmup"], start)
        if target == settings["target_acceptance_rate"] and not np.isclose(step_size, stored.info.step_size[args.chain],
                                                                           rtol=1e-4):
            raise SystemExit(f"the run's own target acceptance gave step size {float(step_size):.6g}, not the stored "
                             f"chain's {float(stored.info.step_size[args.chain]):.6g}: this is not how it was sampled")
        _, trace = jax.jit(lambda key, st, h, m: hmc_chain(key, logdensity, st, h, m, settings["num_samples"],
                                                           settings["max_num_doublings"]))(
            chain_keys["sample"], state, step_size, imm)
        new = class1_draws(args.sequence, jax.tree.map(lambda a: a[None], trace.position), args.grid_resolution,
                           np.flatnonzero(near))[3][0]
        swapped = draws.copy()
        swapped[args.chain] = new
        r = scalar_rhat(swapped)
        median_step = np.median(np.asarray(stored.info.step_size))
        rows.append({"target acceptance": target, "step size": round(float(step_size), 6),
                     "step size / stored median": round(float(step_size / median_step), 2),
                     "acceptance": round(float(trace.acceptance_rate.mean()), 3),
                     "divergent (sampling / warm-up)": f"{int(trace.is_divergent.sum())} / {int(n_warm_div)}",
                     "leapfrog steps / NUTS step": round(float(trace.num_integration_steps.mean()), 1),
                     "distance": distance(new.mean(axis=0)[over]),
                     "max R̂ with it in place": round(float(r.max()), 4), "over": int((r > RHAT_THRESHOLD).sum()),
                     "seconds": round(time.perf_counter() - t, 1)})
        print(rows[-1], flush=True)
    reference = {"stored distance": distance(draws[args.chain].mean(axis=0)[over]),
                 "other chains' median distance": round(float(np.median(distance_from(means, means))), 2)}
    print(reference, flush=True)
    out_path = ROOT / "benchmarks" / "results" / f"hmc_rerun_{args.sequence}_task{args.task}_chain{args.chain}.json"
    atomic_write_json(out_path, {
        "command": " ".join(["python", "benchmarks/hmc_function_space.py", *sys.argv[1:]]),
        "sequence": args.sequence, "task": args.task, "chain": args.chain, "chains": n_chains,
        "points judged": int(near.sum()), "near": args.near, "threshold": RHAT_THRESHOLD,
        "sampled by bcl_code": record["provenance"]["bcl_code"], "settings": settings, "reruns": rows, **reference,
        "seconds": round(time.perf_counter() - began, 1), "provenance": provenance()})
    print(f"wrote {out_path.relative_to(ROOT)} ({time.perf_counter() - began:.0f} s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    s = sub.add_parser("sample")
    s.add_argument("--sequence", required=True, choices=["cisplit2diris", "disinusoid"])
    s.add_argument("--task", type=int, required=True)
    s.add_argument("--chains", type=int, default=8)
    s.add_argument("--warmup", type=int, default=1000)
    s.add_argument("--samples", type=int, default=100)
    s.add_argument("--seed", type=int, default=1337)
    s.add_argument("--target-acceptance", type=float, default=PAPER_TARGET,
                   help="the warm-up's target acceptance rate (default: the paper's, BlackJAX's default)")
    s.add_argument("--store", help="also keep the task where a visualisation run keeps it (e.g. results/paper_disinusoid/"
                   "hmc_tasks): with that run's settings and code, the run reads it back instead of sampling it")
    how = s.add_mutually_exclusive_group()
    how.add_argument("--in-turn", dest="vectorise", action="store_const", const=False,
                     help="run each device's chains one after the other (lax.map; the default on a CPU)")
    how.add_argument("--vmap", dest="vectorise", action="store_const", const=True,
                     help="vmap each device's chains (the default on an accelerator)")
    t = sub.add_parser("table")
    t.add_argument("--grid-resolution", type=int, default=100)
    t.add_argument("--sequence", choices=["cisplit2diris", "disinusoid"], help="only this sequence's runs, to "
                   "experiments/tables/hmc_function_space_<sequence>.md/.json")
    t.add_argument("--counts", type=int, nargs="+", default=[2, 4, 8, 16, 32, 64], help="chain counts to judge")
    t.add_argument("--store", help="a visualisation run's stored HMC tasks (e.g. results/paper_cisplit2diris/"
                   "hmc_tasks) instead of the traces of `sample`; their rows replace the sequence's")
    t.add_argument("--tasks", type=int, nargs="+", help="with --store: judge only these stored tasks and keep the "
                   "committed rows of the others (a long table built a task at a time, as the tasks are sampled)")
    t.add_argument("--target-acceptance", type=float, default=PAPER_TARGET, help="judge the runs sampled with this "
                   "warm-up target acceptance, into their own table (hmc_function_space_<sequence>_target90 for 0.9)")
    g = sub.add_parser("gradient")
    g.add_argument("--sequences", nargs="+", default=["cisplit2diris", "disinusoid"])
    g.add_argument("--chains", type=int, default=16)
    d = sub.add_parser("diagnostics")
    d.add_argument("--chains", type=int, default=64)
    d.add_argument("--draws", type=int, default=100)
    c = sub.add_parser("chains")
    c.add_argument("--sequence", required=True, choices=["disinusoid"], help="a binary sequence")
    c.add_argument("--task", type=int, required=True)
    c.add_argument("--store", required=True, help="a visualisation run's stored HMC tasks")
    c.add_argument("--grid-resolution", type=int, default=100)
    c.add_argument("--show", type=int, default=6, help="chains described, the most distant first")
    c.add_argument("--drop", type=int, default=3, help="left out: the 1..DROP most distant chains")
    c.add_argument("--controls", type=int, default=4, help="random pairs of chains left out, for comparison")
    r = sub.add_parser("rerun")
    r.add_argument("--sequence", required=True, choices=["disinusoid"], help="a binary sequence")
    r.add_argument("--task", type=int, required=True)
    r.add_argument("--chain", type=int, required=True, help="the chain to sample again (0-based)")
    r.add_argument("--store", required=True, help="a visualisation run's stored HMC tasks")
    r.add_argument("--targets", type=float, nargs="+", default=[0.8, 0.9], help="warm-up target acceptance rates")
    r.add_argument("--near", type=float, default=1.004, help="R̂ is judged again at the points whose R̂ exceeds this")
    r.add_argument("--seed", type=int, default=1337)
    r.add_argument("--grid-resolution", type=int, default=100)
    args = parser.parse_args()
    {"sample": sample, "table": table, "gradient": gradient, "diagnostics": diagnostics,
     "chains": chains, "rerun": rerun}[args.command](args)


if __name__ == "__main__":
    main()
