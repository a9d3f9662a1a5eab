"""The official half of `tests/parity/sfr_parity.py`: SFR's continual-learning code (github.com/AaltoML/sfr-experiments,
`experiments/cl/models/sfr.py` at commit 83cc4a7) on arrays read from an .npz; writes what it computed to an .npz.

Run by `sfr_parity.py` with a Python that has torch, numpy and scipy, PYTHONPATH = a folder holding the official
`models/sfr.py`, `models/utils/continual_model.py`, `utils/ring_buffer.py`, `utils/conf.py` and `utils/magic.py`
(of `experiments/cl/`). The rest of the Mammoth framework those files import (its dataset and argument modules,
torchvision, wandb) is replaced by empty stand-ins: `SFR` uses none of it on the paths run here.

  python sfr_side.py --probe
  python sfr_side.py --inputs IN.npz --outputs OUT.npz

Two modes, `mode` in the inputs:
- `pieces`: the network at given weights, `end_task` of the first two tasks at weights θ_a and θ_b (the inducing rows
  drawn by `np.random.choice` after `np.random.seed(seed)`, written out), then at weights θ_c the regulariser
  `sfr_regularizer()`, the L2 term and the batch loss of `observe` (mean cross-entropy + δ·½‖θ‖² + τ·R) with their
  gradients.
- `runs`: whole runs, one per seed, as Mammoth's training loop calls the model (utils/training.py): for each task,
  `epochs` passes of `observe` over a shuffled `DataLoader` of batches of B, then `end_task`; after the last task
  every task's test set is scored by the argmax of all logits (class-incremental). `torch.manual_seed` and
  `np.random.seed` are set to the seed, as Mammoth's `set_random_seed`. Mammoth creates the model's Adam once, so its
  moments and step count run on across tasks; with `fresh_adam` (a diagnosis, not Mammoth's loop) a new Adam starts
  every task, as bcl's engine starts a new optimiser state every task.
"""
from __future__ import annotations

import argparse
import sys
import time
import types

import numpy as np


def install_stand_ins() -> None:
    "Empty modules for the parts of Mammoth that models/sfr.py imports but does not use here."
    def module(name, **attrs):
        m = types.ModuleType(name)
        m.__dict__.update(attrs)
        sys.modules[name] = m
        return m

    class ContinualDataset:  # only a type annotation in models/sfr.py
        pass

    module("wandb", log=lambda *a, **k: None)
    module("torchvision", transforms=None)
    module("datasets")
    module("datasets.utils")
    module("datasets.utils.continual_dataset", ContinualDataset=ContinualDataset)
    module("utils.args", add_management_args=None, add_experiment_args=None, add_rehearsal_args=None,
           ArgumentParser=argparse.ArgumentParser)
    # models/__init__.py imports every model of the framework: take the package's folder without running it
    import importlib.util
    import os
    for root in sys.path:
        folder = os.path.join(root or ".", "models")
        if os.path.isfile(os.path.join(folder, "sfr.py")):
            models = module("models")
            models.__path__ = [folder]
            utils = module("models.utils")
            utils.__path__ = [os.path.join(folder, "utils")]
            return
    raise SystemExit("sfr_side: no models/sfr.py on PYTHONPATH")


def network(widths, n_inputs, n_outputs, weights):
    "bcl's `fcnn` (Dense–swish for every width, then a Dense head) in torch, with the given flax kernels and biases."
    import torch.nn as nn
    layers, fan_in = [nn.Flatten()], n_inputs
    for width in widths:
        layers += [nn.Linear(fan_in, width), nn.SiLU()]
        fan_in = width
    layers.append(nn.Linear(fan_in, n_outputs))
    net = nn.Sequential(*layers)
    load_weights(net, weights)
    return net


def load_weights(net, weights) -> None:
    "Copy flax kernels (in, out) and biases into the `nn.Linear` layers of `net`, in order."
    import torch
    import torch.nn as nn
    with torch.no_grad():
        for i, m in enumerate([m for m in net if isinstance(m, nn.Linear)]):
            m.weight.copy_(torch.as_tensor(weights[f"kernel{i}"]).T)
            m.bias.copy_(torch.as_tensor(weights[f"bias{i}"]))


def gradients(net) -> dict:
    import torch.nn as nn
    out = {}
    for i, m in enumerate([m for m in net if isinstance(m, nn.Linear)]):
        out[f"kernel{i}"] = m.weight.grad.detach().numpy().T.copy()
        out[f"bias{i}"] = m.bias.grad.detach().numpy().copy()
    return out


class TaskData:
    "What Mammoth's training dataset gives SFR: (augmented input, target, non-augmented input) and `targets`."
    def __init__(self, xs, ys):
        import torch
        self.xs, self.ys = torch.as_tensor(xs), torch.as_tensor(ys).long()
        self.targets = np.asarray(ys)

    def __len__(self):
        return len(self.ys)

    def __getitem__(self, i):
        return self.xs[i], self.ys[i], self.xs[i]


class Task:
    "A stand-in for Mammoth's `ContinualDataset` after `get_data_loaders`: its `train_loader`."
    def __init__(self, xs, ys, batch_size, shuffle):
        from torch.utils.data import DataLoader
        self.train_loader = DataLoader(TaskData(xs, ys), batch_size=batch_size, shuffle=shuffle)


def make_sfr(meta, net):
    import torch.nn.functional as F
    from models.sfr import SFR
    args = argparse.Namespace(lr=meta["lr"], optimizer="adam", buffer_size=meta["n_points"] * meta["n_tasks"],
                              tau=meta["tau"], delta=meta["delta"], jitter=meta["jitter"],
                              dual_batchsize=meta["dual_batchsize"], no_covariance=False, nowand=1)
    dataset = types.SimpleNamespace(N_TASKS=meta["n_tasks"], N_CLASSES=meta["n_classes"])
    return SFR(net, F.cross_entropy, args, None, dataset)


def weights_of(d, prefix):
    return {k[len(prefix):]: d[k] for k in d if k.startswith(prefix)}


def pieces(d, meta) -> dict:
    import torch
    out = {}
    net = network(meta["widths"], meta["n_inputs"], meta["n_classes"], weights_of(d, "theta_a/"))
    model = make_sfr(meta, net)
    for t, tag in enumerate(("a", "b")):
        load_weights(model.net, weights_of(d, f"theta_{tag}/"))
        xs, ys = d[f"train_xs{t}"], d[f"train_ys{t}"]
        np.random.seed(int(meta["seed"]) + t)
        out[f"rows{t}"] = np.random.choice(a=len(ys), size=model.z_per_task)  # the draw end_task makes next
        np.random.seed(int(meta["seed"]) + t)
        model.end_task(Task(xs, ys, meta["batch_size"], shuffle=False))
        out[f"precision{t}"] = model.Beta_bar_inv[t].detach().numpy().copy()
        out[f"seen{t}"] = np.asarray(sorted(model.seen_classes))
    out["targets"] = model.buffer.logits.detach().numpy().copy()
    load_weights(model.net, weights_of(d, "theta_c/"))
    xs, ys = torch.as_tensor(d["batch_xs"]), torch.as_tensor(d["batch_ys"]).long()
    parts = {"regulariser": lambda: model.sfr_regularizer(), "l2": lambda: model.l2_reg(),
             "loss": lambda: (model.loss(model.net(xs), ys) + model.l2_reg() * model.delta
                              + model.sfr_regularizer() * model.tau)}
    for name, part in parts.items():
        model.net.zero_grad()
        value = part()
        value.backward()
        out[name] = np.asarray(value.item())
        for k, v in gradients(model.net).items():
            out[f"grad_{name}/{k}"] = v
    return out


def runs(d, meta) -> dict:
    import torch
    out = {}
    for s, seed in enumerate(meta["seeds"]):
        torch.manual_seed(int(seed))
        np.random.seed(int(seed))
        start = time.perf_counter()
        net = network(meta["widths"], meta["n_inputs"], meta["n_classes"], weights_of(d, f"theta0/{s}/"))
        model = make_sfr(meta, net)
        model.net.train()
        for t in range(meta["n_tasks"]):
            if meta.get("fresh_adam") and t > 0:  # a diagnosis, not Mammoth's loop: Adam's moments and count reset
                model.opt = torch.optim.Adam(model.net.parameters(), lr=meta["lr"])
            task = Task(d[f"train_xs{t}"], d[f"train_ys{t}"], meta["batch_size"], shuffle=True)
            for _ in range(meta["epochs"]):
                for inputs, labels, not_aug in task.train_loader:
                    model.observe(inputs, labels, not_aug)
            model.end_task(types.SimpleNamespace(train_loader=Task(d[f"train_xs{t}"], d[f"train_ys{t}"],
                                                                   meta["batch_size"], shuffle=False).train_loader))
        model.net.eval()
        with torch.no_grad():
            out[f"accuracy/{s}"] = np.asarray([
                (model.net(torch.as_tensor(d[f"test_xs{t}"])).argmax(1).numpy() == d[f"test_ys{t}"]).mean()
                for t in range(meta["n_tasks"])])
        out[f"seconds/{s}"] = np.asarray(time.perf_counter() - start)
        print(f"seed {seed}: {np.round(100 * out[f'accuracy/{s}'], 2).tolist()}", flush=True)
    return out


def main() -> None:
    import json
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--probe", action="store_true")
    parser.add_argument("--inputs")
    parser.add_argument("--outputs")
    a = parser.parse_args()
    install_stand_ins()
    import torch  # noqa: F401
    import scipy  # noqa: F401
    from models.sfr import SFR  # noqa: F401
    if a.probe:
        print("ok")
        return
    torch.set_num_threads(1)
    d = dict(np.load(a.inputs, allow_pickle=False))
    meta = json.loads(str(d.pop("meta")))
    out = pieces(d, meta) if meta["mode"] == "pieces" else runs(d, meta)
    np.savez(a.outputs, **out)


if __name__ == "__main__":
    main()
