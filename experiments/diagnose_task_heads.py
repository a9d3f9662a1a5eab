"""Why do fine-tuning, FROMP and the VCL methods score low on task-incremental Split MNIST-5k?

Usage: python experiments/diagnose_task_heads.py [--seeds N] [--runs NAME ...]

On the beyond-the-paper column ti-mnist5k-fcnn (one softmax head of two outputs per task, the task given at test
time; the paper's image setup) joint training reaches 98.44 but fine-tuning 57.80, FROMP 72.14 (FROMP's README:
99.3 on full MNIST) and the VCL methods 59.76-70.38. Every head is a slice of one output layer, so the weights of
a head are trained only while its task is the current one. Measured here, per seed and task, on the cell's settings:

- the accuracy on a task just after learning it (the accuracy matrix's diagonal) and at the end;
- the output weights of each head after every task: the mean |w| (the variational mean for VCL) and, for VCL, the
  mean σ of q and of the prior the next task's KL term is taken against.

and three runs that change one setting each, built through `bcl.factory.build`:
- fine-tuning with prior precision 1e-8 instead of the paper's 1: the prior's gradient is then all that moves an
  idle head, and with Adam a step moves a weight by about the learning rate whatever the gradient's size;
- FROMP with its official Split MNIST training (github.com/team-approx-bayes/fromp at c9606ec, main_splitmnist.py:
  learning rate 1e-4, batch 128, 15 epochs) instead of the image setup's 0.01, 64 and 20;
- FROMP with the learning rate 1e-4 alone.
The official code's other differences (gradient clipping at norm 0.1, one Adam state across tasks) are not applied.
Writes experiments/tables/diagnosis_task_heads.{md,json}.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run from a checkout without installing

import numpy as np

COLUMN = "ti-mnist5k-fcnn"
RUNS = {  # name: (method, overrides of the cell's settings; None: the table cell itself)
    "finetuning": ("finetuning", None),
    "finetuning, precision 1e-8": ("finetuning", {"precision": 1e-8}),
    "fromp": ("fromp", None),
    "fromp, official training": ("fromp", {"learning_rate": 1e-4, "batch_size": 128, "epochs": 15}),
    "fromp, learning rate 1e-4": ("fromp", {"learning_rate": 1e-4}),
    "p-g-vcl": ("p-g-vcl", None),
    "l-g-vcl": ("l-g-vcl", None),
}


def head_statistics(state, masks: np.ndarray) -> dict:
    """Per seed and head: mean |w| of the head's output weights (the mean for a Gaussian q), and for a Gaussian q its
    mean σ and the mean σ of the prior held for the next task (when the state holds one). Axes (seed, head)."""
    from bcl.vi.gaussian import Gaussian, gaussian_std
    params = state.params
    gaussian = isinstance(params, Gaussian)
    columns = [np.flatnonzero(m) for m in masks]

    def per_head(kernel):  # kernel (G=1, S, hidden, outputs) -> (S, heads)
        k = np.asarray(kernel)[0]
        return np.stack([k[..., c].mean((-2, -1)) for c in columns], -1)

    out = {"abs_weight": per_head(np.abs((params.mean if gaussian else params)["head"]["kernel"]))}
    if gaussian:
        out["sigma"] = per_head(gaussian_std(params)["head"]["kernel"])
        prior = getattr(state.memory, "prior", None)
        if isinstance(prior, Gaussian):
            out["prior_sigma"] = per_head(gaussian_std(prior)["head"]["kernel"])
    return out


def run(name: str, seeds) -> dict:
    from bcl.engine.heads import method_likelihood
    from bcl.engine.sequence import train_sequence
    from bcl.factory import build
    from bcl.table.cell import build_cell_method, load_cell_sequence
    from bcl.table.plan import plan_cell
    method_name, overrides = RUNS[name]
    plan = plan_cell(COLUMN, method_name, "offline", list(seeds))
    sequence = load_cell_sequence(plan)
    if overrides is None:
        method, hyper, _ = build_cell_method(plan, sequence)
    else:
        built = build(method_name, sequence, **overrides)
        method, hyper = built.method, built.hyper
    masks = method_likelihood(sequence).masks
    stats = []
    start = time.perf_counter()
    result = train_sequence(method, sequence, hyper, list(seeds), progress=False,
                            after_task=lambda t, r: stats.append(head_statistics(r.state, masks)))
    seconds = time.perf_counter() - start
    accuracy = 100 * np.asarray(result.metrics["test/accuracy"])[0]  # (S, T, T)
    T = accuracy.shape[-1]
    row = {"run": name, "method": method_name, "overrides": overrides, "settings": dict(method.settings),
           "learning_rate": float(np.asarray(hyper["learning_rate"]).ravel()[0]), "seeds": list(seeds),
           "final_average_accuracy": accuracy[:, -1, :].mean(-1).tolist(),
           "just_learned": np.stack([np.diagonal(a) for a in accuracy]).tolist(),
           "at_end": accuracy[:, -1, :].tolist(), "seconds": seconds}
    for key in stats[0]:  # (S, task after which, head)
        row[key] = np.stack([s[key] for s in stats], 1).tolist()
    # head t when task t starts (after task t-1) and at the end of the sequence, mean over seeds, tasks 2..T
    for key in stats[0]:
        values = np.asarray(row[key])
        row[f"{key}_at_start"] = [float(values[:, t - 2, t - 1].mean()) for t in range(2, T + 1)]
        row[f"{key}_after_own_task"] = [float(values[:, t - 1, t - 1].mean()) for t in range(1, T + 1)]
        row[f"{key}_at_end"] = [float(values[:, T - 1, t - 1].mean()) for t in range(1, T + 1)]
    return row


def _mean_sd(values) -> str:
    v = np.asarray(values, float)
    return f"{v.mean():.2f} ± {v.std(ddof=1):.2f}" if len(v) > 1 else f"{v.mean():.2f}"


def _vector(values, digits=3) -> str:
    return " · ".join(f"{v:.{digits}g}" for v in values)


def markdown(rows: list[dict], command: str, published: dict) -> str:
    lines = [f"# Diagnosis: the heads of task-incremental Split MNIST-5k ({COLUMN}, offline profile)\n",
             f"`{command}`\n",
             "Seeds " + ", ".join(map(str, rows[0]["seeds"])) + ". Final average accuracy (mean ± sd over seeds, %), "
             "the accuracy on each task just after learning it and after the last task (means over seeds, tasks "
             "1-5), and the mean |w| of each head's output weights after its own task and after the last task.\n",
             "| run | settings changed | final average accuracy | just learned | after the last task "
             "| head mean abs w after its task | at the end |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        changed = ", ".join(f"{k} {v:g}" for k, v in (r["overrides"] or {}).items()) or "none (the table cell)"
        lines.append(f"| {r['run']} | {changed} | {_mean_sd(r['final_average_accuracy'])} | "
                     f"{_vector(np.mean(r['just_learned'], 0))} | {_vector(np.mean(r['at_end'], 0))} | "
                     f"{_vector(r['abs_weight_after_own_task'])} | {_vector(r['abs_weight_at_end'])} |")
    vcl = [r for r in rows if "sigma" in r]
    if vcl:
        lines += ["", "Variational methods: head t's q when task t starts (after task t-1), tasks 2-5, means over "
                  "seeds and the head's weights.\n",
                  "| run | mean abs μ | mean σ of q | mean σ of the prior for task t | just learned |",
                  "|---|---|---|---|---|"]
        for r in vcl:
            prior = _vector(r["prior_sigma_at_start"]) if "prior_sigma_at_start" in r else "the initial prior"
            lines.append(f"| {r['run']} | {_vector(r['abs_weight_at_start'])} | {_vector(r['sigma_at_start'])} | "
                         f"{prior} | {_vector(np.mean(r['just_learned'], 0)[1:])} |")
    lines += ["", "Published (other data regime, full MNIST): " +
              "; ".join(f"{k} {v}" for k, v in published.items()) + "."]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--runs", nargs="+", default=list(RUNS), choices=list(RUNS), metavar="NAME",
                        help="runs to make (default all): " + "; ".join(RUNS))
    args = parser.parse_args(argv)
    from bcl.beyond import PUBLISHED_ELSEWHERE
    from bcl.core import atomic_write_bytes, atomic_write_json
    from bcl.provenance import provenance
    rows = []
    for name in args.runs:
        rows.append(run(name, range(args.seeds)))
        print(f"{name}: {_mean_sd(rows[-1]['final_average_accuracy'])} ({rows[-1]['seconds']:.0f} s)", flush=True)
    command = f"python experiments/diagnose_task_heads.py --seeds {args.seeds}" + (
        "" if args.runs == list(RUNS) else " --runs " + " ".join(f"'{r}'" for r in args.runs))
    published = {method: f"{p.value:g} ({p.source})" for (column, method), p in PUBLISHED_ELSEWHERE.items()
                 if column == COLUMN}
    text = markdown(rows, command, published)
    tables = ROOT / "experiments" / "tables"
    atomic_write_bytes(tables / "diagnosis_task_heads.md", text.encode())
    atomic_write_json(tables / "diagnosis_task_heads.json",
                      {"command": command, "column": COLUMN, "rows": rows, "provenance": provenance()})
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
