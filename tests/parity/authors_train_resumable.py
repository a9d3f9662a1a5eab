"""Train one of the authors' experiments like their `python -m bcl.train`, but resumable at every epoch.

Usage (the authors' environment's Python, working directory = their clone at b838074):
  /path/to/authors-venv/bin/python /path/to/bcl/parity/authors_train_resumable.py EXPERIMENT --state FOLDER

Why: their CI MNIST FCNN P-GM-SFSVI takes about 12 hours of a free 2-core CPU for one seed, and a process that is
killed loses everything (their `bcl/train/__main__.py` at b838074 saves one checkpoint per task, and restarts from
task 1). This driver runs their code, unmodified, through the same loop: the same `Experiment`, trainer classes,
`trainer.train` generators and per-task `ckpter.save` of `trainer.state.params` that their `bcl.evaluate` reads. It
differs in two ways only:
- after every epoch it writes the yielded `TrainState` (parameters, optimiser state, step) to FOLDER;
- it skips their per-epoch validation log (`logs/<experiment>_<time>.jsonl`). That log feeds no decision: their
  predictor draws with its own seed, and `bcl.evaluate` reads the per-task checkpoints only (the grid choice of
  `select_trainers` too).

Resuming: every random key of their training loop is derived from the trainer's seed, independently of the
updates, so a second run replays the loop from the start with each gradient step replaced by a pass-through of the
state. At each step that ended a saved epoch it substitutes the saved state, so that the prior and coreset updates at
the end of each task (`update_hparams`) see the original parameters. Real steps resume after the last saved epoch. A
run cut anywhere and resumed gives the same checkpoints, bit for bit, as an uncut run (checked on Iris:
`tests/test_authors_resumable.py` explains how).

The state folder is tied to the experiment file's text and the clone's prepared data (`FOLDER/fingerprint`); a
different experiment refuses to resume from it. Progress goes to stdout and `FOLDER/progress.log`.
"""
from __future__ import annotations

import argparse
import fcntl
import hashlib
import os
import shutil
import sys
import time
from pathlib import Path


def fingerprint(experiment: str) -> str:
    "SHA-256 of the experiment file and of the prepared data's metadata and `BCL_SOURCE` (if any)."
    import tomllib
    text = (Path("experiments") / f"{experiment}.toml").read_bytes()
    digest = hashlib.sha256(text)
    sequence = tomllib.loads(text.decode())["task_sequence"]["name"]
    for name in ("metadata.toml", "BCL_SOURCE"):
        path = Path("data") / "prepped" / sequence / name
        digest.update(path.read_bytes() if path.is_file() else b"-")
    return digest.hexdigest()


class EpochStore:
    """Saved `TrainState`s keyed by the number of gradient steps taken when they were yielded. Kept: the last epoch of
    every task (the prior and coreset of the next task depend on it) and the latest epoch."""

    def __init__(self, folder: Path, experiment: str):
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self.lock = open(folder / "lock", "a+")  # held while this process lives: one trainer per folder
        try:
            fcntl.flock(self.lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self.lock.seek(0)
            holder = self.lock.read().strip() or "unknown"
            sys.exit(f"authors_train_resumable.py: another process (pid {holder}) is training into {folder}; stop it "
                     f"first (it may be left over from a killed authors_seeds.py), then resume")
        self.lock.seek(0)
        self.lock.truncate()
        self.lock.write(f"{os.getpid()}\n")
        self.lock.flush()
        mark = folder / "fingerprint"
        expected = fingerprint(experiment)
        if mark.is_file() and mark.read_text().strip() != expected:
            sys.exit(f"authors_train_resumable.py: {folder} holds the state of another experiment file or data; "
                     f"remove it, or give another --state folder")
        mark.write_text(expected + "\n")

    def saved(self) -> dict[int, Path]:
        return {int(p.stem.split("-")[1]): p for p in self.folder.glob("step-*.msgpack")}

    def save(self, steps: int, state, task_end: bool) -> None:
        from flax import serialization
        path = self.folder / f"step-{steps:08d}-{'task' if task_end else 'epoch'}.msgpack"
        temporary = path.with_suffix(".tmp")
        temporary.write_bytes(serialization.to_bytes(state))
        os.replace(temporary, path)
        for step, other in self.saved().items():  # drop older mid-task epochs
            if step < steps and other.stem.endswith("-epoch"):
                other.unlink()

    def log(self, line: str) -> None:
        print(line, flush=True)
        with open(self.folder / "progress.log", "a") as file:
            file.write(line + "\n")


class ReplayingStep:
    """Wraps their `make_step`: the first `last` calls pass the state through, except at saved steps, where the saved
    state is substituted; later calls are real gradient steps."""

    def __init__(self, make_step, saved: dict[int, Path]):
        self.make_step = make_step
        self.saved = saved
        self.last = max(saved, default=0)
        self.calls = 0

    def __call__(self, loss):
        real = self.make_step(loss)

        def step(state, *args):
            self.calls += 1
            if self.calls > self.last:
                return real(state, *args)
            if self.calls in self.saved:
                from flax import serialization
                return serialization.from_bytes(state, self.saved[self.calls].read_bytes())
            return state
        return step


def patch_make_step(replaying: ReplayingStep) -> None:
    "Every trainer module of theirs imported `make_step` by name; point each at the wrapper."
    from importlib import import_module
    from bcl.train.trainer import module_map
    for module_name in set(module_map.values()):
        module = import_module(module_name)
        if hasattr(module, "make_step"):
            module.make_step = replaying


def train(experiment: str, folder: Path, stop_after_steps: int | None = None) -> None:
    sys.path.insert(0, os.getcwd())  # their package, from the clone
    from importlib import import_module
    import orbax.checkpoint as ocp
    from bcl import Experiment
    from bcl.dataops.io import read_task
    from bcl.train import training
    from bcl.train.trainer import coreset_memmap_path, module_map

    store = EpochStore(folder, experiment)
    scratch = Path(coreset_memmap_path)
    if scratch.exists():  # left by a killed run; their `create_memmap` would fail on its folders
        shutil.rmtree(scratch)
    replaying = ReplayingStep(training.make_step, store.saved())
    patch_make_step(replaying)
    if replaying.last:
        store.log(f"resuming after step {replaying.last}")
    exp = Experiment(experiment)
    exp.setup()
    start = time.perf_counter()
    with ocp.StandardCheckpointer() as ckpter:
        for trainer_spec in exp.spec["trainers"]:
            trainer_id = trainer_spec["id"]
            trainer_class = getattr(import_module(module_map[trainer_spec["name"]]), trainer_spec["name"])
            train_hparams = trainer_spec["hparams"]["train"]
            trainer = trainer_class(exp.model, exp.mspec, train_hparams)
            length = exp.metadata["length"]
            for task_id in range(1, length + 1):
                xs, ys = read_task(exp.paths["data"], "training", task_id)
                n_epochs = train_hparams["n_epochs"]
                for epoch, state in enumerate(trainer.train(xs, ys), start=1):
                    if replaying.calls > replaying.last:
                        store.save(replaying.calls, state, task_end=epoch == n_epochs)
                        store.log(f"{trainer_id} task {task_id}/{length} epoch {epoch}/{n_epochs}: step "
                                  f"{replaying.calls}, {time.perf_counter() - start:.0f} s")
                    if stop_after_steps is not None and replaying.calls >= stop_after_steps:
                        store.log(f"stopped after step {replaying.calls} (--stop-after-steps)")
                        exp.teardown()
                        return
                ckpter.save(exp.index_cpath(trainer_id, task_id), trainer.state.params)
    exp.teardown()
    store.log(f"done: {replaying.calls} steps, {time.perf_counter() - start:.0f} s in this run")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("experiment", help="experiment id: experiments/<id>.toml in the clone (the working directory)")
    parser.add_argument("--state", type=Path, required=True, help="folder for the per-epoch states")
    parser.add_argument("--stop-after-steps", type=int, default=None,
                        help="stop at the first epoch end at or after this many gradient steps (to test resuming)")
    args = parser.parse_args(argv)
    if not (Path("bcl") / "train" / "__main__.py").is_file():
        sys.exit("authors_train_resumable.py: run it from a clone of github.com/blackblitz/bcl (no bcl/train/__main__.py "
                 "in the working directory)")
    if not (Path("experiments") / f"{args.experiment}.toml").is_file():
        sys.exit(f"authors_train_resumable.py: no experiments/{args.experiment}.toml in {Path.cwd()}")
    train(args.experiment, args.state.resolve(), args.stop_after_steps)
    return 0


if __name__ == "__main__":
    sys.exit(main())
