"""The official half of `tests/parity/fromp_parity.py`: FROMP's pieces computed by the official PyTorch code
(github.com/team-approx-bayes/fromp, code at commit f5db51c) on weights, data and labels read from an .npz, written
to an .npz.

Run by `fromp_parity.py` with a Python that has torch and numpy, PYTHONPATH = a folder holding the official
`utils.py`, `opt_fromp.py` and `models.py`, in a temporary working directory. This file imports only numpy, torch
and those three official modules (not `datasets.py`, whose `sklearn.datasets.samples_generator` is gone from current
scikit-learn), never bcl.

  python fromp_side.py --inputs IN.npz --outputs OUT.npz
  python fromp_side.py --probe          # exit 0 if torch and the official modules import, else print why

Everything is the official code, called as its toy driver (train_toydata.py:93-149) calls it; nothing is
re-implemented. The network is `models.MLP([2, H, H, C], act='sigmoid')` with the given weights put in by
`vector_to_parameters` (torch's own flattening: each layer's weight [out, in] row-major, then its bias). Per task,
on a `DataLoader(TensorDataset(xs, ys), batch_size, shuffle=False)` (the driver's `inducingloader`):
- scores: `utils.softmax_hessian(model(x)).sum(-1)` batch by batch, the quantity `select_memorable_points` ranks
  (utils.py:40-45; the function itself returns only the points);
- memorable points: `utils.select_memorable_points(loader, model, num_points, num_classes)` (utils.py:25-73); each
  point is matched back to its row of the task (exact float equality) so that the two sides can compare row sets;
- the GGN: `utils.update_fisher(loader, model, opt)` (utils.py:105-117 -> opt_fromp.py:218-231), cumulative over the
  tasks in `opt.state['fisher']`, read after each task.
Then, as at the start of task 3: `opt.state['mu']` = the latest weights, `opt.init_task(closure, 2, eps)`
(opt_fromp.py:105-141) with the driver's closure over the memorable points of tasks 1 and 2; read back
`state['memorable_logits']` (the targets, probabilities) and `state['kernel_inv']`. The kernels themselves are not
stored by the official code: a spy wrapped around `torch.cholesky` records its input (K + eps I) and output (L)
while `init_task` runs and returns the original result unchanged.

The gradients come from `opt.step` (opt_fromp.py:236-321) at moved weights: the optimiser is built with
betas = (0, 0.999), so that after `init_task` (which zeroes `exp_avg`) the first step leaves `exp_avg` =
0·0 + 1·g = g bit for bit, the gradient the step has formed before Adam (line 307); beta1 enters nothing else.
- penalty_grad: a step whose data loss is 0·Σ logits (zero gradient): g = Σ_s Σ_c G_{s,c}ᵀ K_{s,c}⁻¹ δ_{s,c}
  (lines 256-293);
- step_grad: a step on the driver's data closure (`nn.CrossEntropyLoss()` of a batch): g = ∇ℓ/τ + the above
  (line 252 divides the data gradient by τ). `init_task` is run again before it to reset the optimiser state.
grad_clip_norm is None, the toy's.

In float32 (the default) all of it runs a second time in float64 on the same inputs (which are float32 values, so
both passes solve the same problem), with the memory built on the float32 pass's memorable points; its results are
written with the prefix 'ref/': the official code's own float32 error, on which the harness bases its tolerances.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

OFFICIAL_MODULES = ("utils", "opt_fromp", "models")


def probe() -> int:
    "Status 0 and the torch version when torch and the official modules import here, else 1 and why."
    import importlib
    try:
        import torch
        for module in OFFICIAL_MODULES:
            importlib.import_module(module)
    except Exception as error:  # any import failure means: skip
        print(f"{type(error).__name__}: {error}")
        return 1
    print(f"torch {torch.__version__}")
    return 0


def _rows_of(points: np.ndarray, xs: np.ndarray) -> list[int]:
    "The row of `xs` equal to each of `points` (exactly one each)."
    rows = []
    for p in points:
        found = np.flatnonzero((xs == p[None]).all(axis=1))
        if len(found) != 1:
            raise SystemExit(f"fromp_side: a memorable point matches {len(found)} rows of its task")
        rows.append(int(found[0]))
    return rows


class CholeskySpy:
    "Wraps `torch.cholesky`: records (input, output) of every call, returns the original result unchanged."
    def __init__(self, torch):
        self.torch, self.original, self.calls = torch, torch.cholesky, []

    def __enter__(self):
        def spy(a, *args, **kwargs):
            out = self.original(a, *args, **kwargs)
            self.calls.append((a.detach().clone(), out.detach().clone()))
            return out
        self.torch.cholesky = spy
        return self

    def __exit__(self, *exc):
        self.torch.cholesky = self.original
        return False


def official(d: dict, meta: dict, x64: bool, memorable_given: list | None = None) -> dict:
    """Every quantity by the official code, in float64 if `x64` else float32. `memorable_given`: the memorable
    points (tensors, one per task) to build the memory from instead of this pass's own selection (the float64
    reference pass uses the float32 pass's, so that a near-tie at a class boundary cannot change its memory)."""
    import torch
    import torch.nn as nn
    from torch.nn.utils import parameters_to_vector, vector_to_parameters
    from torch.utils.data import DataLoader, TensorDataset
    from models import MLP
    from opt_fromp import opt_fromp
    from utils import select_memorable_points, softmax_hessian, update_fisher

    dtype = torch.float64 if x64 else torch.float32
    torch.set_default_dtype(dtype)
    tensor = lambda a: torch.as_tensor(np.asarray(a)).to(dtype)
    C, H, B, M = meta["n_classes"], meta["hidden"], meta["batch_size"], meta["num_points"]
    n_tasks = meta["n_tasks"]  # tasks whose end (selection, GGN) is run; the memory then holds all of them

    model = MLP([2, H, H, C], act="sigmoid").to(dtype)
    opt = opt_fromp(model, lr=0.01, betas=(0.0, 0.999), prior_prec=meta["prior_prec"], grad_clip_norm=None,
                    tau=meta["tau"])
    n_params = parameters_to_vector(model.parameters()).numel()
    out = {}

    def set_weights(vector):
        theta = tensor(vector)
        if theta.numel() != n_params:
            raise SystemExit(f"fromp_side: {theta.numel()} weights given, the network has {n_params}")
        vector_to_parameters(theta, model.parameters())
        opt.state["mu"] = theta.clone()

    memorable = []
    for t in range(1, n_tasks + 1):
        xs, ys = tensor(d[f"xs{t}"]), torch.as_tensor(d[f"ys{t}"]).long()
        set_weights(d[f"theta{t}"])
        loader = DataLoader(TensorDataset(xs, ys), batch_size=B, shuffle=False)  # the driver's inducingloader
        with torch.no_grad():
            out[f"scores{t}"] = torch.cat([softmax_hessian(model.forward(x)).sum(-1) for x, _ in loader]).numpy()
        points, labels = select_memorable_points(loader, model, num_points=M, num_classes=C)
        memorable.append(points)
        out[f"memorable_rows{t}"] = np.asarray(_rows_of(points.numpy(), xs.numpy()), np.int64)
        out[f"memorable_labels{t}"] = labels.numpy()
        update_fisher(loader, model, opt)
        out[f"fisher{t}"] = opt.state["fisher"].clone().numpy()
    if memorable_given is not None:
        memorable = [p.to(dtype) for p in memorable_given]

    def closure(task_id):  # train_toydata.py:107-113
        opt.zero_grad()
        return model.forward(memorable[task_id])

    def init_memory():
        set_weights(d[f"theta{n_tasks}"])
        opt.init_task(closure, n_tasks, eps=meta["eps"])

    with CholeskySpy(torch) as spy:
        init_memory()
    out["targets"] = torch.stack(opt.state["memorable_logits"]).numpy()
    out["kernel_inv"] = np.stack([torch.stack(k).numpy() for k in opt.state["kernel_inv"]])
    out["kernel"] = np.stack([a.numpy() for a, _ in spy.calls]).reshape(n_tasks, C, *spy.calls[0][0].shape)
    out["chol"] = np.stack([b.numpy() for _, b in spy.calls]).reshape(out["kernel"].shape)

    moved = tensor(d["moved"])
    bx, by = tensor(d["batch_xs"]), torch.as_tensor(d["batch_ys"]).long()
    criterion = nn.CrossEntropyLoss()

    def zero_loss():
        opt.zero_grad()
        logits = model.forward(bx)
        return 0.0 * logits.sum(), logits

    def data_loss():  # train_toydata.py:27-31
        opt.zero_grad()
        logits = model.forward(bx)
        return criterion(torch.squeeze(logits, dim=-1), by), logits

    for name, loss in (("penalty_grad", zero_loss), ("step_grad", data_loss)):
        init_memory()  # zeroes exp_avg, exp_avg_sq and the step count (opt_fromp.py:106-108)
        opt.state["mu"] = moved.clone()
        opt.step(loss, closure, n_tasks)
        out[name] = opt.state["exp_avg"].clone().numpy()  # beta1 = 0: exactly the step's gradient
    out["_memorable"] = memorable
    out["_info"] = {"n_params": n_params, "cholesky_calls": len(spy.calls)}
    return out


def evaluate(inputs: Path, outputs: Path) -> None:
    """The run at the requested precision; unless that is float64, also the float64 reference pass, written with the
    prefix 'ref/' (what the official code's own float32 rounding is, on these inputs)."""
    import torch
    warnings.filterwarnings("ignore", category=UserWarning)  # torch.cholesky and add_(Number, Tensor) are deprecated
    warnings.filterwarnings("ignore", category=FutureWarning)
    torch.set_num_threads(1)
    start = time.perf_counter()
    d = dict(np.load(inputs, allow_pickle=False))
    meta = json.loads(str(d["meta"]))
    out = official(d, meta, meta["x64"])
    memorable, info = out.pop("_memorable"), out.pop("_info")
    if not meta["x64"]:
        ref = official(d, meta, True, memorable_given=memorable)
        ref.pop("_memorable"), ref.pop("_info")
        out |= {f"ref/{k}": v for k, v in ref.items()}
    out["info"] = np.asarray(json.dumps({"torch": torch.__version__, "numpy": np.__version__,
                                         "python": sys.version.split()[0], **info,
                                         "seconds": time.perf_counter() - start}))
    np.savez(outputs, **out)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--inputs", type=Path)
    parser.add_argument("--outputs", type=Path)
    parser.add_argument("--probe", action="store_true")
    args = parser.parse_args(argv)
    if args.probe:
        return probe()
    evaluate(args.inputs, args.outputs)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
