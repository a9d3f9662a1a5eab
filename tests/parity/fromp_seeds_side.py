"""The official half of `tests/parity/fromp_seeds.py`: whole FROMP runs of the official PyTorch code
(github.com/team-approx-bayes/fromp, code at commit f5db51c) on tasks and initial weights read from an .npz, one run
per seed; writes each run's test accuracies after every task to an .npz.

Run by `fromp_seeds.py` with a Python that has torch and numpy, PYTHONPATH = a folder holding the official
`utils.py`, `opt_fromp.py` and `models.py`. This file imports only numpy, torch and those three modules:

  python fromp_seeds_side.py --inputs IN.npz --outputs OUT.npz

The loop is the official toy driver's, train_toydata.py:93-160 (`train_model`) and :13-44 (`train`), line for line
but for the data and the evaluation: `MLP([2, H, H, 2], act='sigmoid')` with the given initial weights,
`opt_fromp(model, lr, prior_prec, grad_clip_norm=None, tau)`; for each task, `opt.init_task(closure, tid, eps)`
from the second task on, `epochs` epochs of `opt.step(closure, closure_memorable_points, tid)` over a shuffled
`DataLoader` of batches of B, then `select_memorable_points(inducingloader, model, num_points)` and
`update_fisher(inducingloader, model, opt)` over the unshuffled loader. The driver draws its tasks with
`datasets.ToydataGenerator` (not imported: its `sklearn.datasets.samples_generator` is gone from scikit-learn) and
evaluates only on a plotting grid; here the tasks come from the .npz and every task's test set is scored after each
task (the argmax of the logits, `model.eval()` as the driver's test loop). The shuffles come from
`torch.manual_seed(seed)`, as main_toydata.py seeds them.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np


def run_seed(d: dict, meta: dict, s: int) -> np.ndarray:
    "Accuracy (T, T) of the official code on seed index `s`: row t after task t + 1, column j on task j + 1's test set."
    import torch
    import torch.nn as nn
    from torch.nn.utils import parameters_to_vector, vector_to_parameters
    from torch.utils.data import DataLoader, TensorDataset
    from models import MLP
    from opt_fromp import opt_fromp
    from utils import select_memorable_points, update_fisher

    torch.manual_seed(int(meta["seeds"][s]))
    T, H, B = meta["n_tasks"], meta["hidden"], meta["batch_size"]
    model = MLP([2, H, H, 2], act="sigmoid")
    theta = torch.as_tensor(d[f"theta0/{s}"])
    if theta.numel() != parameters_to_vector(model.parameters()).numel():
        raise SystemExit("fromp_seeds_side: the initial weights do not fit the network")
    vector_to_parameters(theta, model.parameters())
    opt = opt_fromp(model, lr=meta["lr"], prior_prec=meta["prior_prec"], grad_clip_norm=None, tau=meta["tau"])
    criterion = nn.CrossEntropyLoss()
    memorable_points = []
    tests = [(torch.as_tensor(d[f"test_xs{t}/{s}"]), torch.as_tensor(d[f"test_ys{t}/{s}"]).long()) for t in range(T)]
    accuracy = np.full((T, T), np.nan)

    for tid in range(T):
        if tid > 0:
            def closure(task_id):
                opt.zero_grad()
                return model.forward(memorable_points[task_id])
            opt.init_task(closure, tid, eps=meta["eps"])
        train = TensorDataset(torch.as_tensor(d[f"xs{tid}/{s}"]), torch.as_tensor(d[f"ys{tid}/{s}"]).long())
        trainloader = DataLoader(dataset=train, batch_size=B, shuffle=True)
        inducingloader = DataLoader(dataset=train, batch_size=B, shuffle=False)
        model.train()
        for epoch in range(meta["epochs"]):
            for inputs, labels in trainloader:
                def closure_data():
                    opt.zero_grad()
                    logits = model.forward(inputs)
                    return criterion(torch.squeeze(logits, dim=-1), labels), logits

                def closure_memorable_points(task_id):
                    opt.zero_grad()
                    return model.forward(memorable_points[task_id])
                opt.step(closure_data, closure_memorable_points, tid)
        points, _ = select_memorable_points(inducingloader, model, num_points=meta["num_points"])
        memorable_points.append(points)
        update_fisher(inducingloader, model, opt)
        model.eval()
        with torch.no_grad():
            for j in range(tid + 1):
                xs, ys = tests[j]
                accuracy[tid, j] = float((model.forward(xs).argmax(-1) == ys).double().mean())
    return accuracy


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--inputs", type=Path, required=True)
    parser.add_argument("--outputs", type=Path, required=True)
    args = parser.parse_args(argv)
    import torch
    warnings.filterwarnings("ignore", category=UserWarning)  # torch.cholesky and add_(Number, Tensor) are deprecated
    warnings.filterwarnings("ignore", category=FutureWarning)
    torch.set_num_threads(1)
    d = dict(np.load(args.inputs, allow_pickle=False))
    meta = json.loads(str(d["meta"]))
    out, seconds = {}, []
    for s in range(len(meta["seeds"])):
        start = time.perf_counter()
        out[f"accuracy/{s}"] = run_seed(d, meta, s)
        seconds.append(time.perf_counter() - start)
        print(f"seed {meta['seeds'][s]}: final average accuracy {100 * out[f'accuracy/{s}'][-1].mean():.2f} "
              f"({seconds[-1]:.0f} s)", flush=True)
    out["info"] = np.asarray(json.dumps({"torch": torch.__version__, "numpy": np.__version__,
                                         "python": sys.version.split()[0], "seconds": seconds}))
    np.savez(args.outputs, **out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
