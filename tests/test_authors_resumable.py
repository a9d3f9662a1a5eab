"""tests/parity/authors_train_resumable.py: a training loop cut anywhere and resumed ends where the uncut loop ends.

The driver's own run needs the authors' clone and environment (checked by hand on their Iris P-GM-SFSVI: cut
after step 40 or 250 of 600, resumed, every per-task checkpoint equal to the uncut run's; see the CHANGELOG). Here
the same two pieces, `EpochStore` and `ReplayingStep`, drive a loop shaped like the authors' trainers (`update_state`
of `bcl/train/trainer/svi/replay.py` at b838074): keys derived from the seed alone, a state carried between tasks,
and a prior taken from the last epoch's state at each task end.
"""
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "parity"))

import authors_train_resumable as resumable  # noqa: E402

TASKS, EPOCHS, STEPS = 3, 4, 2


def make_step(loss):
    "A deterministic 'gradient step' whose result depends on the state, the prior (through `loss`) and the batch."
    def step(state, batch):
        return {"w": 0.5 * state["w"] + loss(state["w"]) + batch, "count": state["count"] + 1}
    return step


class Trainer:
    "The shape of the authors' replay trainers: init from the carried state, epochs of steps, prior at the task end."

    def __init__(self, step_factory):
        self.step_factory, self.state, self.prior = step_factory, None, np.zeros(3, np.float32)

    def train(self, task):
        rng = np.random.default_rng(task)  # keys from the seed and task only, never from the updates
        prior = self.prior
        step = self.step_factory(lambda w: 0.1 * (w - prior))
        self.state = {"w": np.zeros(3, np.float32) if self.state is None else self.state["w"],
                      "count": np.zeros((), np.int32)}
        for _ in range(EPOCHS):
            for _ in range(STEPS):
                self.state = step(self.state, rng.normal(size=3).astype(np.float32))
            yield self.state
        self.prior = self.state["w"]


def run(folder, stop_after=None):
    "The driver's loop of `authors_train_resumable.train` over the toy trainer; returns the per-task checkpoints."
    store = resumable.EpochStore(folder, "toy")
    replaying = resumable.ReplayingStep(make_step, store.saved())
    trainer, checkpoints = Trainer(replaying), []
    for task in range(1, TASKS + 1):
        for epoch, state in enumerate(trainer.train(task), start=1):
            if replaying.calls > replaying.last:
                store.save(replaying.calls, state, task_end=epoch == EPOCHS)
            if stop_after is not None and replaying.calls >= stop_after:
                return None
        checkpoints.append(trainer.state["w"].copy())
    return checkpoints


@pytest.fixture
def clone(tmp_path, monkeypatch):
    "A working directory shaped like the authors' clone: the experiment file the state folder is tied to."
    (tmp_path / "experiments").mkdir()
    (tmp_path / "experiments" / "toy.toml").write_text('[task_sequence]\nname = "toyseq"\n')
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("cut", [2, 8, 10, 17])  # mid-task 1, a task's end, early task 2, mid-task 3
def test_cut_and_resumed_equals_uncut(clone, cut):
    uncut = run(clone / "uncut")
    assert run(clone / "cut", stop_after=cut) is None
    resumed = run(clone / "cut")
    for a, b in zip(uncut, resumed, strict=True):
        np.testing.assert_array_equal(a, b)
    kept = sorted(p.name for p in (clone / "cut").glob("step-*"))
    assert [n for n in kept if n.endswith("-task.msgpack")] == [
        f"step-{t * EPOCHS * STEPS:08d}-task.msgpack" for t in range(1, TASKS + 1)]
    assert not [n for n in kept if n.endswith("-epoch.msgpack")]  # the last epoch of all is a task end


def test_without_the_saved_task_end_the_prior_would_be_wrong(clone):
    "The check above can fail: drop task 1's saved end and the replay hands task 2 a stale prior."
    uncut = run(clone / "uncut")
    run(clone / "cut", stop_after=12)
    (clone / "cut" / f"step-{EPOCHS * STEPS:08d}-task.msgpack").unlink()
    resumed = run(clone / "cut")
    assert not np.array_equal(uncut[-1], resumed[-1])


def test_another_experiment_file_refuses_the_folder(clone):
    run(clone / "state", stop_after=4)
    (clone / "experiments" / "toy.toml").write_text('[task_sequence]\nname = "toyseq"\n# another seed\n')
    with pytest.raises(SystemExit, match="another experiment file"):
        resumable.EpochStore(clone / "state", "toy")


def test_a_second_trainer_on_the_same_folder_is_refused(clone):
    "A training process left running (its parent killed) must not race a resumed one over the saved epochs."
    holder = resumable.EpochStore(clone / "state", "toy")
    with pytest.raises(SystemExit, match="another process"):
        resumable.EpochStore(clone / "state", "toy")
    holder.lock.close()  # as when the holding process ends: the lock goes with its file
    resumable.EpochStore(clone / "state", "toy")
