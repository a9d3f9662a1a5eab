# %% [markdown]
# # Visualisation experiment: predictive probabilities of every method after every task
#
# > A papermill template. It trains the requested methods (five MAP baselines, eight variational methods, joint HMC-NUTS) on CI Split 2D Iris or DI Sinusoid, writes the numbers as JSON under `results/<run>/`, and draws the paper's Fig. 2: rows are tasks, columns methods.
#
# The defaults below are a **smoke run**, small enough for `nbdev_test` and `make test`; the paper's settings are in
# `experiments/params/paper_*.yaml`, run by `experiments/run_visualisation.py`. Beyond the paper, every method's
# distance to HMC-NUTS's predictive after each task is tabulated, and a task whose HMC reference is not converged in
# function space is marked †. The code is `bcl.figure.visualisation_run` (`nbs/figure/52_visualisation_run`).

# %% tags=["parameters"]
run = "smoke"  # folder under results/
sequence = "cisplit2diris"  # cisplit2diris or disinusoid
methods = ["finetuning", "er", "p-g-sfsvi", "l-gm-sfsvi", "hmc"]  # any of bcl.paper.METHOD_NAMES
seeds = [0]  # a vmap axis; the figure and the distances use the first seed, HMC only the first
epochs = 3  # None: the paper's epochs (100)
preset = "paper"
hmc_chains = 2
hmc_warmup = 10
hmc_samples = 4
hmc_max_doublings = 10  # NUTS trajectories of at most 2^10 leapfrog steps (BlackJAX default)
hmc_target_acceptance = 0.8  # the acceptance rate window adaptation tunes the step size to (the paper's, BlackJAX default)
hmc_reference = "draws"  # the HMC predictive averages every post-warm-up draw of every chain; "final": final states (paper)
hmc_pad = None  # zero-pad every task's data to all tasks' size, one compiled HMC program for all; None: when ≤ 500 points
grid_resolution = 30  # points per axis of the plotting grid
kl_floor = 1e-6  # probabilities are floored at this before the KL
results_folder = None  # None: results/<run>
figures_folder = None  # None: results/<run>/figures; the paper runs write to figures/
tables_folder = None  # None: results/<run>/tables; the paper runs write to experiments/tables/
fast_compile = None  # skip LLVM optimisation in engine programs: None decides by network size (small, CPU), or True/False
hmc_parallel = True  # on a CPU, run the HMC chains on separate host devices (one thread each), up to the cores
progress = False

# %% [markdown]
# XLA reads its flags when JAX starts, so the host devices for parallel HMC chains are asked for first.

# %%
from bcl.figure.visualisation_run import request_chain_devices
request_chain_devices(methods, hmc_chains, hmc_parallel)

# %% [markdown]
# ## The run
#
# The parameters are validated before any training (a `ValueError` naming the parameter and the valid values); then
# every method is trained inside `safe_run`, and the numbers, the figure and the tables are written.

# %%
from IPython.display import Image, Markdown, display
from bcl.figure.visualisation import PARAMETER_TYPES, validate_parameters
from bcl.figure.visualisation_run import check_outcome, run_experiment
outcome = run_experiment(validate_parameters({name: globals()[name] for name in PARAMETER_TYPES}))
display(Markdown(outcome.report["markdown"]))
display(Image(filename=str(outcome.figure_path), width=1000))

# %% [markdown]
# ## Checks on what was written (a method that failed fails the run here)

# %%
check_outcome(outcome)
