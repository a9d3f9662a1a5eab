"""A plugin for `experiments/run_table.py --plugins digits_example`: a small data set of one's own with a setup of
its own (nbs/72_custom.ipynb explains each piece).

- sequence `cisplitdigits`: scikit-learn's handwritten digits (8×8 pixels, bundled with scikit-learn, no download) as
  5 class-incremental tasks of two digits each, pixels scaled to [0, 1] and flattened to 64 inputs; 150 images of each
  digit (chosen at random with a fixed seed; the rarest digit has 174), so that every task splits into the same 192
  training, 48 validation and 60 test points and one compiled program serves all five tasks;
- setup `digits-small`: the paper's `image` setup (learning rate 0.01, 20 epochs) with a coreset of 64 points per task
  instead of 256 (more than a task has), batch 32, ER batch 16;
- column `ci-digits-fcnn`: the sequence on `fcnn16` with that setup, SFSVI inducing inputs uniform on [0, 1]^64;
- sequence `tisplitdigits` and column `ti-digits-fcnn`: the same tasks declared task-incremental (`incremental='task'`):
  every method is built with a softmax head per task and evaluated with the task given (`bcl.engine.heads`).

Run all 15 methods of the column (from the repository root):
    PYTHONPATH=experiments/plugins python experiments/run_table.py custom --plugins digits_example --cells 'ci-digits-fcnn/*'
Registrations use `replace=True`, so importing this module after the notebook registered the same names replaces
them instead of failing.
"""
from __future__ import annotations

import numpy as np

from bcl.data.sequences import register_sequence
from bcl.paper import SequenceSetup, Setup, register_setup
from bcl.table.plan import register_column
from bcl.data.splits import SplitRules, make_sequence


PER_DIGIT = 150  # images of each digit kept: its 64 % train, 16 % validation and 20 % test are whole numbers


def ci_split_digits(seed: int):
    "scikit-learn's digits in 5 tasks of two digits each (0/1, 2/3, ...), 64 pixels in [0, 1] per image."
    from sklearn.datasets import load_digits
    data = load_digits()
    rng = np.random.default_rng(0)
    keep = np.sort(np.concatenate([rng.choice(np.flatnonzero(data.target == d), PER_DIGIT, replace=False)
                                   for d in range(10)]))
    return make_sequence("cisplitdigits", (data.data[keep] / 16.0).astype(np.float32), data.target[keep],
                         [[0, 1], [2, 3], [4, 5], [6, 7], [8, 9]],
                         rules=SplitRules(class_names=tuple(map(str, range(10))), seed=seed))


register_sequence("cisplitdigits", ci_split_digits, replace=True, source="scikit-learn load_digits",
                  description="CI Split Digits: scikit-learn's 8x8 digits in 5 tasks of two classes")
register_setup("digits-small", Setup(0.01, 32, 20, 64, er_batch=16), replace=True)
register_column("ci-digits-fcnn", "CI Split Digits, FCNN16", "cisplitdigits",
                SequenceSetup("digits-small", "fcnn16", 0.0, 1.0), replace=True)


def ti_split_digits(seed: int):
    "The same five tasks in the task-incremental scenario: one softmax head per task, the task given (bcl.engine.heads)."
    return ci_split_digits(seed)._replace(name="tisplitdigits", incremental="task")


register_sequence("tisplitdigits", ti_split_digits, replace=True, source="scikit-learn load_digits",
                  description="Task-IL Split Digits: scikit-learn's 8x8 digits in 5 tasks of two classes, the task given")
register_column("ti-digits-fcnn", "Task-IL Split Digits, FCNN16", "tisplitdigits",
                SequenceSetup("digits-small", "fcnn16", 0.0, 1.0), replace=True)
