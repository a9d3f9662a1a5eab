# %% [markdown]
# # Table faa, one cell (papermill template)
#
# > Trains one method on one column of the paper's Table `tab:faa`, every seed as one vmapped program, and writes `numbers.json` next to this executed notebook.
#
# `experiments/run_table.py` runs this template once per cell, as a task of a Dask cluster, with the parameters of
# the cell. The defaults below are a smoke cell on mock data that runs in seconds, so that `nbdev_test` runs the
# whole path. The numbers (per-seed final average accuracy, the T×T test accuracy, NLL and ECE matrices, forgetting,
# the selected EWC/SI grid point, timings, the content hash and the provenance) are built by `bcl.table.cell.run_cell`
# (`nbs/table/61_cell.ipynb`).
#
# `loggers` adds learning curves per task (`bcl.engine.loggers`, `nbs/engine/24_loggers.ipynb`): `log.csv` and `tensorboard/` in
# the cell's folder.
#
# `plugins` names modules to import before anything else: modules that register a sequence, model, method or column
# of their own (`nbs/72_custom.ipynb`), so that `column` and `method` can name them. The kernel runs in `nbs/`, so a
# plugin must be installed or on `PYTHONPATH` (`experiments/run_table.py --plugins` arranges that for a module it can
# import itself).

# %% tags=["parameters"]
column = "di-mnist-fcnn"  # a key of bcl.paper.FAA_COLUMN_KEYS or a registered column, any letter case
method = "er"  # any of bcl.paper.TABLE_METHODS or a registered method, any letter case
profile = "smoke"  # paper, offline or smoke
seeds = [0, 1]
schedule = "epochs"  # epochs | steps | matched | steps-matched (bcl.table.plan.SCHEDULES: the paper's data size)
component_noise = None  # None: the profile's mixture sampler
epochs = None  # None: the paper's (or the schedule's) epochs
output = None  # folder for numbers.json; None: a temporary folder
data_dir = None  # None: bcl's data folder (smoke: a folder under `output`)
progress = False
extractor = None  # extractor columns: the pre-training task in place of the profile's (bcl.extractor.features.PRETRAINING)
kl_weighting = None  # S-FSVI only: 'paper' (the text's B/C) or 'code' (B/(tC), B/M); None: the code's
plugins = []  # modules to import first: their registrations (bcl.table.plan.register_column, ...) run
loggers = []  # "csv", "tensorboard": learning curves in `output` (log.csv, tensorboard/); progress.json always

# %%
import importlib

for plugin in plugins:  # before anything else, so that the names they register are known
    importlib.import_module(plugin)

import json
import tempfile
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from bcl.table.plan import CellSpec, cell_hash, plan_cell
from bcl.table.cell import run_cell, write_cell

# the papermill boundary: the parameters above rebuilt into the cell, validated and planned once
spec = CellSpec.from_parameters(dict(column=column, method=method, profile=profile, seeds=seeds, schedule=schedule,
                                     component_noise=component_noise, epochs=epochs, plugins=plugins,
                                     extractor=extractor, kl_weighting=kl_weighting))


plan = plan_cell(spec)
folder = Path(output) if output else Path(tempfile.mkdtemp(prefix="bcl-cell-"))
folder.mkdir(parents=True, exist_ok=True)
if data_dir is None and plan.profile.mock_data:
    data_dir = str(folder / "smoke-data")
# A killed cell resumes from its last finished task. The checkpoint's name carries the cell's content hash
# (parameters, bcl code, data), so one left by another version of the cell is never offered to this run: it could
# not be resumed (train_sequence would refuse it), and it is removed.
checkpoint = folder / f"checkpoint-{cell_hash(plan, data_dir)}.npz"
for stale in sorted(folder.glob("checkpoint*.npz")):
    if stale != checkpoint:
        print(f"removing {stale.name}: written by another version of this cell (parameters, code or data)")
        stale.unlink()
print(json.dumps(spec.parameters()))

# %%
from bcl.engine.loggers import make_loggers
hooks = make_loggers(loggers, folder)  # and a progress.json the batch's driver reads after every task
try:
    numbers = run_cell(plan, data_dir=data_dir, checkpoint=checkpoint, progress=progress, after_task=hooks)
finally:
    for hook in hooks:
        hook.close()
write_cell(folder, numbers)
checkpoint.unlink(missing_ok=True)
faa = numbers["final_average_accuracy"]
print(f"{numbers['method_label']} on {numbers['column_label']} ({numbers['profile']}): "
      f"{faa['mean']:.2f} ± {faa['std']:.2f} (n = {faa['n']}); paper "
      + ("(none)" if numbers["paper"] is None else f"{numbers['paper']:.2f}"))

# %% [markdown]
# The test-accuracy matrix, averaged over seeds: row i is after learning task i, column j is task j.

# %%
matrix = np.mean(numbers["test_accuracy"], axis=0)
fig, ax = plt.subplots(figsize=(3.2, 2.8))
image = ax.imshow(100 * matrix, vmin=0, vmax=100, cmap="viridis")
ax.set_xlabel("task"); ax.set_ylabel("after task")
ax.set_xticks(range(len(matrix)), range(1, len(matrix) + 1)); ax.set_yticks(range(len(matrix)), range(1, len(matrix) + 1))
fig.colorbar(image, label="test accuracy (%)")
ax.set_title(f"{numbers['method_label']}, {numbers['column_label']}", fontsize=8)
fig.tight_layout()

# %%
T = len(numbers["n_train"])
assert np.shape(numbers["test_accuracy"]) == (len(spec.seeds), T, T)
assert all(0 <= a <= 100 for a in faa["per_seed"])
