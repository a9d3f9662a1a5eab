"""A plugin for `experiments/run_table.py --plugins cancer_example`: a sequence, a network, a method and a column of
one's own, registered by name when this module is imported (nbs/72_custom.ipynb explains each piece).

- sequence `displitcancer`: scikit-learn's breast-cancer data (569 tumours, 30 features, standardised, float32) in
  3 domain-incremental tasks, the tertiles of `mean texture` (smooth to coarse), each benign vs malignant;
- model `tabular32`: `TabularTail`, Dense-LayerNorm-tanh twice (32 units), under bcl's Dense head;
- method `l2-anchor`: fine-tuning pulled towards the previous task's parameters, ½·λ·‖θ − θ_{t−1}‖², λ chosen on
  validation from {1, 100};
- column `di-cancer-tabular`: the sequence with the network and the paper's "2d" setup (learning rate 0.1, batch 16,
  100 epochs per task), the SFSVI inducing inputs uniform on [-3, 3]^30.

Run its cells (from the repository root):
    PYTHONPATH=experiments/plugins python experiments/run_table.py custom --plugins cancer_example --cells '*/l2-anchor'
Registrations use `replace=True`, so importing this module after the notebook registered the same names replaces
them instead of failing.
"""
from __future__ import annotations

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from bcl.data.sequences import register_sequence
from bcl.methods.map import l2_penalty, map_predict
from bcl.models import register_model
from bcl.paper import SequenceSetup, register_method
from bcl.engine.sequence import hyper_grid
from bcl.data.splits import SplitRules, make_sequence
from bcl.table.plan import register_column
from bcl.engine.train import Method, MethodState, Training, nll_sum


def di_split_cancer(seed: int):
    "Breast-cancer tumours in 3 tasks by `mean texture` tertile; labels 0 malignant, 1 benign in every task."
    from sklearn.datasets import load_breast_cancer
    data = load_breast_cancer()
    xs = ((data.data - data.data.mean(0)) / data.data.std(0)).astype(np.float32)
    texture = data.data[:, list(data.feature_names).index("mean texture")]
    tertile = np.digitize(texture, np.quantile(texture, [1 / 3, 2 / 3]))
    classes = 2 * tertile + data.target  # one class per (task, diagnosis), mapped back to the diagnosis
    return make_sequence("displitcancer", xs, classes, [[0, 1], [2, 3], [4, 5]], {c: c % 2 for c in range(6)},
                         rules=SplitRules(class_names=tuple(data.target_names), seed=seed))


class TabularTail(nn.Module):
    "Dense-LayerNorm-tanh for every width in `widths`: features of standardised tabular inputs."
    widths: tuple[int, ...] = (32, 32)

    @nn.compact
    def __call__(self, x):
        for width in self.widths:
            x = jnp.tanh(nn.LayerNorm()(nn.Dense(width)(x)))
        return x


def l2_anchor(model, likelihood: str, settings: dict):
    "(Method, grid): MAP with the N(0, 1/precision) prior on task 1, then ½·λ·‖θ − θ_{t−1}‖² towards the last task's θ."
    precision = settings["precision"]

    def init(key, sequence):
        params = model.init(key)
        return MethodState(params, params)  # memory: the anchor

    def loss(params, anchor, key, batch, hyper, task):
        nll = nll_sum(model.apply(params, batch.xs), batch.ys, likelihood, batch.mask)
        moved = sum(jnp.sum(jnp.square(p - a)) for p, a in zip(jax.tree.leaves(params), jax.tree.leaves(anchor)))
        penalty = jnp.where(task.index == 1, l2_penalty(params, precision), 0.5 * hyper["lam"] * moved)
        return nll + penalty / task.n_batches, {"nll": nll, "penalty": penalty / task.n_batches}

    def end_task(key, state, split, hyper, task):
        return MethodState(state.params, state.params)

    method = Method("l2-anchor", model, likelihood, init, loss, end_task, map_predict(model, likelihood),
                    Training(settings["batch_size"], settings["epochs"]),
                    settings=dict(batch_size=settings["batch_size"], epochs=settings["epochs"], precision=precision))
    return method, hyper_grid(learning_rate=settings["learning_rate"], lam=[1.0, 100.0])


register_sequence("displitcancer", di_split_cancer, replace=True, source="scikit-learn load_breast_cancer",
                  description="DI Split Breast Cancer: 3 tasks by mean-texture tertile, malignant vs benign")
register_model("tabular32", lambda: TabularTail((32, 32)), replace=True)
register_method("l2-anchor", "L2 anchor", l2_anchor, replace=True)
register_column("di-cancer-tabular", "DI Split Breast Cancer, tabular net", "displitcancer",
                SequenceSetup("2d", "tabular32", -3.0, 3.0), replace=True)
