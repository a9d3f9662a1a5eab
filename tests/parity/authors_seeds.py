"""Run the authors' code (github.com/blackblitz/bcl at b838074, unmodified) over seeds, one experiment per seed.

Usage (run with the authors' environment's Python, see tests/parity/README.md):
  AUTHORS=/path/to/blackblitz-bcl   # a clone checked out at b838074
  /path/to/authors-venv/bin/python tests/parity/authors_seeds.py --authors-repo $AUTHORS \
      --experiment svi_cisplit2diris_fcnn --trainers likelihood_exact_gsfsvi --seeds 0 1 2 3 4 \
      --out benchmarks/results/authors_seeds.jsonl

The authors' trainer blocks of `experiments/<experiment>.toml` each carry `hparams.train.seed` and
`hparams.predict.seed` (1337). Trainers that share a `name` are grid-searched against each other by
`bcl.train.select_trainers` (authors' `bcl/train/__init__.py`), so seeds cannot be trainer blocks of one
experiment. Instead, each seed is a new experiment `<experiment>__seed<S>`: a copy of the file with the chosen
trainer blocks and both seeds set to S. Each experiment runs through the authors' three commands in their clone:
`python -m bcl.dataprep <sequence>` (once), `python -m bcl.train <exp>` and `python -m bcl.evaluate <exp>`.
The clone's `./coreset.zarr` is shared by every command, so experiments run one after another in one clone; a
second clone can run at the same time on the same --out, with the seeds in another order (e.g. `--seeds 9 8 7`):
each run reads --out again before every seed and skips what the other has recorded.

The evaluation writes `results/<exp>/accuracy.dat` (msgpack: trainer id -> the T×T test accuracy matrix). The final
average accuracy is the mean of its last row, in %. One JSON line per (trainer, seed) goes to --out. The run
resumes: pairs already in --out are skipped. Trainers that share a `name` (a grid such as SI's si1..si15) are
one line per seed: the authors' evaluation reports only the grid point their validation selects, named in `trainer`,
with the grid's ids in `candidates`.

With `--features-prepared`, the experiment's `[feature_extractor]` table is left out of the seed copies, so that
their `Experiment.make_data` (authors' `bcl/__init__.py`) reads `data/prepped/<sequence>` directly instead of
pre-training their extractor and extracting features: the folder then holds bcl's features
(`authors_prepped.py --features`), and their linear head (`FCNN1`, `in_shape` 64) trains on them with the experiment's
own settings, inducing bounds [-1, 6] included.

With `--resumable`, training goes through `authors_train_resumable.py` (their loop, saved at every epoch under
`<clone>/resumable/<experiment>__seed<S>/`): a killed run resumes at its last epoch when the same command is run
again, and `train_s` then counts the last run only. The folder is removed once the seed is trained and evaluated, so
that other trainers of the same experiment and seed (another `<experiment>__seed<S>` file) can run after it.

The script never imports the authors' package itself (it is also called `bcl`); it only calls their commands.
Without `--authors-repo`, or when the environment lacks their dependencies, it says so and exits with status 0.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import tomllib
from pathlib import Path

AUTHORS_COMMIT = "b838074"


def _fail(message: str) -> None:
    raise SystemExit(f"authors_seeds.py: {message}")


def check_environment(repo: Path, dataprep: bool = True) -> str | None:
    """Why the authors' code cannot run here, or None. Their data preparation imports torch (`dataprep=True`); their
    training and evaluation do not, so a sequence already prepared (e.g. by `tests/parity/authors_prepped.py`) needs no torch."""
    if not (repo / "bcl" / "train" / "__main__.py").is_file():
        return f"{repo} is not a clone of github.com/blackblitz/bcl (no bcl/train/__main__.py)"
    missing = []
    modules = ("jax", "flax", "blackjax", "distrax", "orbax.checkpoint", "zarr", "msgpack", "tomli_w")
    for module in modules + (("torch",) if dataprep else ()):
        try:
            __import__(module)
        except ImportError:
            missing.append(module)
    if missing:
        return (f"this Python ({sys.executable}) lacks {', '.join(missing)}: run the script with the authors' "
                "environment (their requirements.txt with CPU jax==0.4.28 jaxlib==0.4.28, numcodecs==0.13.0)")
    return None


def seed_experiment(spec: dict, trainers: list[str], seed: int, features_prepared: bool = False) -> dict:
    """A copy of the experiment `spec` with only `trainers` (by id), both seeds of each set to `seed`; without its
    `feature_extractor` table when `features_prepared` (the prepared folder already holds the features)."""
    if features_prepared and "feature_extractor" not in spec:
        _fail("--features-prepared: the experiment has no [feature_extractor] table to leave out (an *_fe experiment "
              "is expected)")
    by_id = {t["id"]: t for t in spec["trainers"]}
    unknown = [t for t in trainers if t not in by_id]
    if unknown:
        _fail(f"unknown trainer ids {unknown}; the experiment has {', '.join(by_id)}")
    chosen = []
    for trainer_id in trainers:
        block = json.loads(json.dumps(by_id[trainer_id]))
        for stage in ("train", "predict"):
            block.setdefault("hparams", {}).setdefault(stage, {})["seed"] = int(seed)
        chosen.append(block)
    dropped = {"trainers"} | ({"feature_extractor"} if features_prepared else set())
    return {**{k: v for k, v in spec.items() if k not in dropped}, "trainers": chosen}


def features_problem(spec: dict, folder: Path) -> str | None:
    """Why `folder` cannot stand in for the features of the experiment `spec` (None if it can): it must be bcl's
    preparation (`BCL_SOURCE`) with the input shape of the experiment's head. Their Dense head would otherwise train
    without complaint on whatever inputs the folder holds, images included."""
    if not (folder / "BCL_SOURCE").is_file():
        return f"{folder} holds no bcl preparation (no BCL_SOURCE)"
    shape = tomllib.loads((folder / "metadata.toml").read_text())["input_shape"]
    expected = spec["model"]["spec"]["in_shape"]
    if list(shape) != list(expected):
        return f"{folder} holds inputs of shape {shape}, the experiment's head takes {expected}"
    return None


def final_average_accuracy(matrix) -> float:
    "Mean of the last row of a T×T accuracy matrix (fractions), in %."
    last = matrix[-1]
    return 100.0 * sum(last) / len(last)


def _done(out: Path) -> set[tuple[str, str, int, str | None]]:
    if not out.is_file():
        return set()
    records = []
    for line in out.read_text().splitlines():
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            continue  # a line cut by a kill: that pair reruns
    return {(r["experiment"], t, r["seed"], r.get("data_sha256")) for r in records if "accuracy" in r
            for t in r.get("candidates", [r["trainer"]])}


def ran_on(done: set, run: tuple[str, str, int], source: dict) -> bool:
    """Whether `done` (`_done`) holds the run (experiment, trainer, seed) on the data `source` describes (`read_source`).
    A record that names no digest (written before records had one) counts for the pixels, which cannot change, but not
    for features: another extractor gives other features under the same sequence name."""
    if (*run, source.get("sha256")) in done:
        return True
    return (*run, None) in done and "extractor" not in source


def read_source(path: Path) -> dict:
    """`tests/parity/authors_prepped.py`'s record of a preparation: {'sequence', 'sha256' of the arrays, and 'extractor', the
    digest of the extractor's parameters, for features, and 'repeat', the copies of each training split, where more
    than one}; {} when the authors' own preparation wrote the folder."""
    if not path.is_file():
        return {}
    fields = {}
    for line in path.read_text().splitlines():
        words = line.split()
        if words[:2] == ["bcl", "sequence"] and len(words) == 3:
            fields["sequence"] = words[2]
        elif len(words) == 2:
            fields[words[0]] = words[1]
    return fields


def _run(repo: Path, *args: str, stream: bool = False) -> float:
    "Runs `python -m ARGS` (or `python SCRIPT ARGS` for a path) in the clone; `stream` lets its stdout through."
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    command = [sys.executable, *args] if args[0].endswith(".py") else [sys.executable, "-m", *args]
    start = time.perf_counter()
    result = subprocess.run(command, cwd=repo, env=env, stdout=None if stream else subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    if result.returncode != 0:
        _fail(f"`{' '.join(command[1:])}` in {repo} failed:\n{result.stderr[-3000:]}")
    return time.perf_counter() - start


RESUMABLE = Path(__file__).resolve().parent / "authors_train_resumable.py"


def run_seed(repo: Path, experiment: str, spec: dict, trainers: list[str], seed: int, data: str,
             features_prepared: bool = False, resumable: bool = False, source: dict | None = None) -> list[dict]:
    import msgpack
    import tomli_w
    name = f"{experiment}__seed{seed}"
    (repo / "experiments" / f"{name}.toml").write_text(
        tomli_w.dumps(seed_experiment(spec, trainers, seed, features_prepared)))
    (repo / "logs").mkdir(exist_ok=True)
    state = repo / "resumable" / name
    if resumable:
        train_s = _run(repo, str(RESUMABLE), name, "--state", str(state), stream=True)
    else:
        train_s = _run(repo, "bcl.train", name)
    evaluate_s = _run(repo, "bcl.evaluate", name)
    if resumable:  # trained and evaluated: its state is tied to this file's text, which the next trainers change
        shutil.rmtree(state)
    with open(repo / "results" / name / "accuracy.dat", "rb") as file:
        accuracy = msgpack.unpack(file)  # only the trainer that `select_trainers` kept of each name
    import jax
    groups = grid_groups(spec, trainers)
    records = []
    for candidates in groups:
        [t] = [c for c in candidates if c in accuracy]
        records.append({"experiment": experiment, "data": data, "trainer": t, "seed": int(seed), "accuracy": accuracy[t],
                        "final_average_accuracy": final_average_accuracy(accuracy[t]), "train_s": train_s,
                        "evaluate_s": evaluate_s, "resumable": resumable, "authors_commit": _commit(repo), "jax": jax.__version__,
                        "python": sys.version.split()[0], "created": time.strftime("%Y-%m-%dT%H:%M:%S")}
                       | ({"candidates": candidates} if len(candidates) > 1 else {})
                       | ({"data_sha256": source["sha256"]} if source and "sha256" in source else {})
                       | ({"extractor_sha256": source["extractor"]} if source and "extractor" in source else {})
                       | ({"training_repeat": int(source["repeat"])} if source and "repeat" in source else {}))
    return records


def grid_groups(spec: dict, trainers: list[str]) -> list[list[str]]:
    """`trainers` grouped by their block's `name`, in order of first appearance. The authors' `select_trainers` keeps,
    of the trainers sharing a name, the one with the best validation score after the last task (e.g. SI's 15 points
    si1..si15), and `bcl.evaluate` reports only that one."""
    names = {t["id"]: t["name"] for t in spec["trainers"]}
    groups: dict[str, list[str]] = {}
    for trainer_id in trainers:
        groups.setdefault(names[trainer_id], []).append(trainer_id)
    return list(groups.values())


def _commit(repo: Path) -> str | None:
    result = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True)
    return result.stdout.strip() or None


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--authors-repo", type=Path, default=os.environ.get("BCL_AUTHORS_REPO"),
                        help="clone of github.com/blackblitz/bcl at b838074 (or $BCL_AUTHORS_REPO)")
    parser.add_argument("--experiment", default="svi_cisplit2diris_fcnn")
    parser.add_argument("--trainers", nargs="+", default=["likelihood_exact_gsfsvi"])
    parser.add_argument("--seeds", nargs="+", type=int, default=list(range(5)))
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/authors_seeds.jsonl"))
    parser.add_argument("--features-prepared", action="store_true",
                        help="the prepared folder holds bcl's features (authors_prepped.py --features): leave the "
                             "experiment's [feature_extractor] out, so that their head trains on them")
    parser.add_argument("--resumable", action="store_true",
                        help="train through authors_train_resumable.py (their loop, saved at every epoch; a killed run "
                             "resumes at its last epoch when started again) instead of `python -m bcl.train`")
    args = parser.parse_args(argv)
    if args.authors_repo is None:
        print("authors_seeds.py: no --authors-repo (or $BCL_AUTHORS_REPO) given; nothing to run.")
        return 0
    # SIGTERM (kill, pkill) becomes SystemExit, so that subprocess.run kills the training process with this one
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    repo = args.authors_repo.resolve()
    path = repo / "experiments" / f"{args.experiment}.toml"
    if not path.is_file():
        _fail(f"no experiment file {path}")
    spec = tomllib.loads(path.read_text())
    sequence = spec["task_sequence"]["name"]
    prepared = (repo / "data" / "prepped" / sequence / "metadata.toml").is_file()
    if args.features_prepared:
        problem = features_problem(spec, repo / "data" / "prepped" / sequence)
        if problem:
            _fail(f"--features-prepared: {problem}; write the features first with `python tests/parity/authors_prepped.py "
                  f"SEQUENCE {repo} --as {sequence} --features PRETRAINING`")
    why = check_environment(repo, dataprep=not prepared)
    if why:
        print(f"authors_seeds.py: skipped: {why}.")
        return 0
    commit = _commit(repo) or ""
    if not commit.startswith(AUTHORS_COMMIT):
        print(f"warning: {repo} is at {commit[:7] or 'an unknown commit'}, not {AUTHORS_COMMIT}", file=sys.stderr)
    if any(s < 0 for s in args.seeds):
        _fail(f"seeds must be non-negative integers, got {args.seeds}")
    if not prepared:
        _run(repo, "bcl.dataprep", sequence)
    source = read_source(repo / "data" / "prepped" / sequence / "BCL_SOURCE")
    data = source.get("sequence", sequence)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    for seed in args.seeds:
        done = _done(args.out)  # read before every seed: runs in two clones can share --out and split the seeds
        todo = [t for t in args.trainers if not ran_on(done, (args.experiment, t, seed), source)]
        if not todo:
            continue
        for record in run_seed(repo, args.experiment, spec, todo, seed, data, args.features_prepared,
                               args.resumable, source):
            with open(args.out, "a") as file:
                file.write(json.dumps(record) + "\n")
            print(f"{record['trainer']} seed {seed}: {record['final_average_accuracy']:.2f} "
                  f"(train {record['train_s']:.0f} s)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
