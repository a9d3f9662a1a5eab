"""The paper's HMC protocol beside bcl's reference: does the ranking of the continual methods by their distance to
HMC-NUTS depend on which reference it is measured against? (issue 69, item 6)

Usage: python experiments/compare_hmc_references.py RUN_FOLDER [--committed TABLE.json] [--bootstrap 1000]

RUN_FOLDER is a visualisation run with the variant `experiments/params/paper_hmc_final.yaml`: the paper's protocol,
64 chains, 1000 warm-up steps, 100 NUTS steps, each chain's final state (the paper's Experiment Details: "only the
final sample of size 64 is taken as the posterior sample"). It keeps every chain's 100 draws (`hmc_tasks/`), so three
references are compared, after every task:
- `final`: the paper's, the mean predictive of the 64 final states (what the run's own distances use);
- `draws`: every post-warm-up draw of the same 64 chains (64 × 100), bcl's kind of reference;
- `committed`: the committed figure's reference (another run; its chains and draws are read from the numbers kept
  beside TABLE.json, e.g. 64 chains × 200 draws on Iris), its TV read from TABLE.json.
Each method's grid predictive is the run's own (the same seed and code as the committed figure's methods). The
continual methods (all but joint training and HMC) are ranked by mean TV over the grid; Kendall's τ compares the
rankings. The final-state reference is a sample of 64, so its own noise is shown: the 64 chains are resampled with
replacement `--bootstrap` times, and each replicate ranks the methods again.
Writes experiments/tables/hmc_reference_<sequence>.{json,md} with provenance.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run from a checkout without installing

NOT_CONTINUAL = ("joint", "hmc")  # joint training sees all data at once; HMC is the reference itself


def stored_tasks(folder: Path) -> list:
    "The run's HMC results, task by task, from `hmc_tasks/task<t>-<digest>.pkl` (`bcl.methods.hmc.save_task_result`)."
    import pickle
    paths = sorted((folder / "hmc_tasks").glob("task*-*.pkl"), key=lambda p: int(p.name[4:].split("-")[0]))
    if not paths:
        raise SystemExit(f"No stored HMC tasks in {folder / 'hmc_tasks'}; run the visualisation with "
                         "paper_hmc_final.yaml first.")
    return [pickle.loads(p.read_bytes())["result"] for p in paths]


def per_chain_grids(result, model, grid_xs, likelihood: str) -> np.ndarray:
    "Each chain's final-state predictive on the grid: (C, n, K), in one vmapped program."
    import jax
    from bcl.methods.hmc import predictive_draws
    return np.asarray(predictive_draws(jax.tree.map(lambda a: a[:, None], result.samples), model, grid_xs,
                                       likelihood))[:, 0]


def mean_tv(reference: np.ndarray, probs: np.ndarray) -> float:
    "Mean total variation over the grid points between two (n, K) predictives."
    return float(0.5 * np.abs(reference - probs).sum(-1).mean())


def ranks(values: dict[str, float]) -> dict[str, int]:
    "1 = closest to the reference; ties share the better rank."
    return {name: 1 + sum(other < value for other in values.values()) for name, value in values.items()}


def kendall_tau(a: dict[str, float], b: dict[str, float]) -> float:
    "Kendall's τ-b between two orderings of the same methods."
    from scipy.stats import kendalltau
    names = sorted(a)
    return float(kendalltau([a[n] for n in names], [b[n] for n in names]).statistic)


def committed_tv(table: dict, names: dict[str, str], n_tasks: int) -> dict[str, list[float]]:
    "TV after each task per method from a committed visualisation table (its rows are keyed by display names)."
    by_display = {row["method"]: row for row in table["distance_to_hmc"]}
    return {name: [float(by_display[display][f"TV t{t + 1}"]) for t in range(n_tasks)]
            for name, display in names.items() if display in by_display}


def reference_settings(table_path: Path) -> dict | None:
    "The committed figure's HMC settings, from the numbers kept beside its table (`visualisation_<sequence>/numbers.json`)."
    numbers = table_path.with_suffix("") / "numbers.json"
    if not numbers.exists():
        return None
    return json.loads(numbers.read_text())["methods"]["hmc"]["hmc"]["settings"]


def describe_reference(settings: dict | None) -> str:
    "How the committed reference was sampled, in words: chains × draws, and a warm-up target other than the paper's."
    from bcl.methods.hmc import HMCSettings
    if settings is None:
        return "another run"
    words = f"{settings['n_chains']} chains × {settings['num_samples']} draws"
    paper_target = HMCSettings().target_acceptance_rate
    target = settings.get("target_acceptance_rate", paper_target)
    if target != paper_target:
        words += f" at a warm-up target acceptance of {target}"
    return words + ", another run"


def compare(folder: Path, committed: dict | None, n_boot: int, seed: int = 0) -> dict:
    import jax
    from bcl.data.sequences import load_sequence
    from bcl.serialise import read_numbers
    from bcl.methods.hmc import hmc_predict
    from bcl.figure.visualisation import plot_grid
    from bcl.models import make_model
    from bcl.paper import method_label
    numbers, grids = read_numbers(folder)
    settings = numbers["methods"]["hmc"]["hmc"]["settings"]
    if settings.get("reference") != "final":
        raise SystemExit(f"{folder} used the reference {settings.get('reference')!r}; run it with paper_hmc_final.yaml.")
    sequence = load_sequence(numbers["sequence"])
    grid_xs = plot_grid(numbers["window"], numbers["grid_resolution"])
    model = make_model(settings.get("model", "fcnn16"), sequence.n_outputs, sequence.input_shape)
    names = [n for n, e in numbers["methods"].items() if n not in NOT_CONTINUAL and e["status"] == "ok"]
    display = {n: method_label(n) for n in names}  # FROMP and SFR included
    old = committed_tv(committed, display, numbers["n_tasks"]) if committed else {}
    rng = np.random.default_rng(seed)
    tasks = []
    for t, result in enumerate(stored_tasks(folder)):
        chains = per_chain_grids(result, model, grid_xs, sequence.likelihood)
        final = chains.mean(0)
        if not np.allclose(final, grids["hmc"][t], atol=1e-5):
            raise SystemExit(f"task {t + 1}: the stored chains do not give the run's own HMC predictive; is "
                             f"{folder / 'hmc_tasks'} from another run?")
        draws = np.asarray(hmc_predict(jax.tree.map(lambda a: a.reshape(-1, *a.shape[2:]), result.trace.position),
                                       model, grid_xs, sequence.likelihood))
        tv = {"final": {n: mean_tv(final, grids[n][t]) for n in names},
              "draws": {n: mean_tv(draws, grids[n][t]) for n in names}}
        if old:
            tv["committed"] = {n: old[n][t] for n in names}
        boot_ranks = {n: [] for n in names}
        closest = {}
        taus = []
        for _ in range(n_boot):
            reference = chains[rng.integers(0, len(chains), len(chains))].mean(0)
            values = {n: mean_tv(reference, grids[n][t]) for n in names}
            for n, r in ranks(values).items():
                boot_ranks[n].append(r)
            best = min(values, key=values.get)
            closest[best] = closest.get(best, 0) + 1
            taus.append(kendall_tau(values, tv["committed" if old else "draws"]))
        tasks.append({
            "task": t + 1, "tv": tv, "ranks": {k: ranks(v) for k, v in tv.items()},
            "kendall_tau": {f"final vs {k}": kendall_tau(tv["final"], tv[k]) for k in tv if k != "final"}
            | ({"draws vs committed": kendall_tau(tv["draws"], tv["committed"])} if old else {}),
            "closest": {k: sorted(n for n, r in ranks(v).items() if r == 1) for k, v in tv.items()},
            "reference_tv": {"final vs draws": mean_tv(final, draws)},
            "bootstrap": {"replicates": n_boot,
                          "rank_90": {n: [int(np.percentile(r, 5)), int(np.percentile(r, 95))]
                                      for n, r in boot_ranks.items()},
                          "closest_share": {n: c / n_boot for n, c in sorted(closest.items(), key=lambda i: -i[1])},
                          "kendall_tau_90": [float(np.percentile(taus, 5)), float(np.percentile(taus, 95))],
                          "tau_against": "committed" if old else "draws"}})
    same = None
    if committed:  # the committed TV is only comparable if the methods themselves trained as in the committed run
        accuracy = {row["method"]: row["final average accuracy (%)"] for row in committed["summary"]}
        same = {n: f"{numbers['methods'][n]['final_average_accuracy']['mean']:.2f}" == accuracy.get(display[n])
                for n in names}
    return {"sequence": numbers["sequence"], "run": str(folder), "hmc_settings": settings, "methods": names,
            "display": display, "tasks": tasks, "methods_as_committed": same}


def markdown(report: dict, command: str) -> str:
    s = report["hmc_settings"]
    lines = [f"# The paper's HMC protocol beside bcl's reference: {report['sequence']}", "",
             f"Written by `{command}`. The paper's protocol (Experiment Details): {s['n_chains']} chains, "
             f"{s['num_warmup']} warm-up steps, {s['num_samples']} NUTS steps, each chain's final state kept, so the "
             f"reference predictive averages {s['n_chains']} final states (`final`). `draws` averages every post-warm-up draw of "
             f"the same chains; `committed` is the committed figure's reference ({report['committed_reference']}). "
             "TV is the mean total variation over the plotting grid; rank 1 is closest to the reference; the "
             "continual methods are all but joint training and HMC. The bootstrap resamples the final states "
             "with replacement and ranks again: its 90 % interval of each rank is the final-state reference's own "
             "noise.", ""]
    same = report.get("methods_as_committed")
    if same is not None:
        differ = [report["display"][n] for n, ok in same.items() if not ok]
        lines += ["Every continual method's final average accuracy equals the committed table's to two decimals, so "
                  "the methods are the committed ones and only the reference changes." if not differ else
                  f"The final average accuracy of {', '.join(differ)} differs from the committed table's: for them the "
                  "`committed` column measured another predictive.", ""]
    for task in report["tasks"]:
        t = task["task"]
        kinds = list(task["tv"])
        lines += [f"## After task {t}", "",
                  "| method | " + " | ".join(f"TV ({k})" for k in kinds) + " | " + " | ".join(f"rank ({k})" for k in kinds)
                  + " | rank (final), bootstrap 90 % |",
                  "|---|" + "---|" * (2 * len(kinds) + 1)]
        order = sorted(report["methods"], key=lambda n: task["tv"][kinds[-1]][n])
        for n in order:
            lo, hi = task["bootstrap"]["rank_90"][n]
            lines.append(f"| {report['display'][n]} | " + " | ".join(f"{task['tv'][k][n]:.3f}" for k in kinds) + " | "
                         + " | ".join(str(task["ranks"][k][n]) for k in kinds) + f" | {lo}–{hi} |")
        taus = ", ".join(f"{k} {v:.2f}" for k, v in task["kendall_tau"].items())
        closest = "; ".join(f"{k}: {', '.join(report['display'][n] for n in v)}" for k, v in task["closest"].items())
        share = ", ".join(f"{report['display'][n]} {c:.0%}" for n, c in task["bootstrap"]["closest_share"].items())
        lo, hi = task["bootstrap"]["kendall_tau_90"]
        lines += ["", f"Kendall's τ: {taus}. Bootstrap τ of the final-state ranking against "
                  f"{task['bootstrap']['tau_against']}: 90 % in [{lo:.2f}, {hi:.2f}].", "",
                  f"Closest to the reference: {closest}. Closest over the bootstrap replicates: {share}.", "",
                  f"TV between the final-state and the all-draws reference itself: "
                  f"{task['reference_tv']['final vs draws']:.3f}.", ""]
    return "\n".join(lines)


def shown(path: Path) -> str:
    "A path as a reader can use it: relative to the project, else as results/<run> (where the runner writes it)."
    path = path.resolve()
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else f"results/{path.name}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("run", type=Path, help="results folder of the paper_hmc_final.yaml run")
    parser.add_argument("--committed", type=Path, help="the committed visualisation table (default: "
                        "experiments/tables/visualisation_<sequence>.json)")
    parser.add_argument("--bootstrap", type=int, default=1000)
    parser.add_argument("--out", type=Path, default=ROOT / "experiments" / "tables")
    args = parser.parse_args(argv)
    if args.bootstrap < 1:
        parser.error(f"--bootstrap must be a positive integer, got {args.bootstrap}")
    sequence = json.loads((args.run / "numbers.json").read_text())["sequence"] if (args.run / "numbers.json").exists() \
        else None
    if sequence is None:
        raise SystemExit(f"No numbers.json in {args.run}; run experiments/run_visualisation.py with paper_hmc_final.yaml.")
    committed_path = args.committed or ROOT / "experiments" / "tables" / f"visualisation_{sequence}.json"
    committed = json.loads(committed_path.read_text()) if committed_path.exists() else None
    report = compare(args.run, committed, args.bootstrap)
    from bcl.provenance import provenance
    run_numbers = json.loads((args.run / "numbers.json").read_text())
    report |= {"committed_table": str(committed_path.relative_to(ROOT)) if committed else None,
               "committed_reference": describe_reference(reference_settings(committed_path) if committed else None),
               "run_provenance": run_numbers.get("provenance"), "provenance": provenance()}
    command = f"python experiments/compare_hmc_references.py {shown(args.run)} --bootstrap {args.bootstrap}"
    report["run"] = shown(args.run)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / f"hmc_reference_{sequence}.json").write_text(json.dumps(report, indent=1) + "\n")
    (args.out / f"hmc_reference_{sequence}.md").write_text(markdown(report, command) + "\n")
    print(markdown(report, command))
    return 0


if __name__ == "__main__":
    sys.exit(main())
