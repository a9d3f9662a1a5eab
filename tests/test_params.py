"""The parameter files that `make demo`, `make demo-iris` and `make demo-sinusoid` pass to the papermill template are
complete and valid: merged over the template's `parameters` cell they pass
`bcl.figure.visualisation.validate_parameters`, so a typo in a YAML file fails here rather than minutes into a run."""
import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "experiments"))
RUNS = [["paper_cisplit2diris.yaml"], ["paper_cisplit2diris.yaml", "demo_cisplit2diris.yaml"], ["paper_disinusoid.yaml"],
        ["paper_disinusoid.yaml", "demo_disinusoid.yaml"]]


def template_defaults() -> dict:
    import papermill as pm
    found = pm.inspect_notebook(str(ROOT / "nbs" / "90_visualisation.ipynb"))
    return {name: ast.literal_eval(spec["default"]) for name, spec in found.items()}


@pytest.mark.parametrize("files", RUNS, ids=["+".join(f) for f in RUNS])
def test_parameter_files_validate(files):
    from bcl.figure.visualisation import PARAMETER_TYPES, validate_parameters
    from bcl.resources import load_parameters
    defaults = template_defaults()
    assert set(defaults) == set(PARAMETER_TYPES)  # the template and the validator know the same parameters
    settings = defaults | load_parameters([str(ROOT / "experiments" / "params" / f) for f in files])
    checked = validate_parameters(settings)
    assert checked["sequence"] in ("cisplit2diris", "disinusoid") and "hmc" in checked["methods"]


@pytest.mark.parametrize("sequence, chains, draws, target", [("cisplit2diris", 64, 200, 0.8), ("disinusoid", 8, 400, 0.9)])
def test_paper_runs_hmc_settings_and_the_demo_reduces_them(sequence, chains, draws, target):
    """The paper runs' HMC reference is the one their YAML comments justify (Iris: the paper's 64 chains; DI Sinusoid: 8
    chains at warm-up target acceptance 0.9, converged in function space on every task), and a variant overrides what it
    reduces: `make demo` must not inherit the paper run's chains (hours on 2 cores)."""
    from bcl.resources import load_parameters
    folder = ROOT / "experiments" / "params"
    paper = template_defaults() | load_parameters([str(folder / f"paper_{sequence}.yaml")])
    demo = load_parameters([str(folder / f"paper_{sequence}.yaml"), str(folder / f"demo_{sequence}.yaml")])
    assert (paper["hmc_chains"], paper["hmc_samples"], paper["hmc_target_acceptance"]) == (chains, draws, target), paper
    assert demo["hmc_chains"] == 2 and demo["hmc_samples"] <= 100 and demo["run"] == f"demo_{sequence}", demo


def test_unknown_parameter_in_a_file_is_refused(tmp_path):
    from bcl.resources import load_parameters
    bad = tmp_path / "bad.yaml"
    bad.write_text("run: x\nhmc_chain: 4\n")
    with pytest.raises(ValueError, match=r"Unknown parameter\(s\) \['hmc_chain'\]"):
        load_parameters([str(bad)])
