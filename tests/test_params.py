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


@pytest.mark.parametrize("sequence, draws", [("cisplit2diris", 200), ("disinusoid", 400)])
def test_paper_runs_use_the_papers_64_chains_and_the_demo_2(sequence, draws):
    "A variant overrides what it reduces: `make demo` must not inherit the paper run's 64 HMC chains (hours on 2 cores)."
    from bcl.resources import load_parameters
    folder = ROOT / "experiments" / "params"
    paper = load_parameters([str(folder / f"paper_{sequence}.yaml")])
    demo = load_parameters([str(folder / f"paper_{sequence}.yaml"), str(folder / f"demo_{sequence}.yaml")])
    assert (paper["hmc_chains"], paper["hmc_samples"]) == (64, draws), paper
    assert demo["hmc_chains"] == 2 and demo["hmc_samples"] <= 100 and demo["run"] == f"demo_{sequence}", demo


def test_unknown_parameter_in_a_file_is_refused(tmp_path):
    from bcl.resources import load_parameters
    bad = tmp_path / "bad.yaml"
    bad.write_text("run: x\nhmc_chain: 4\n")
    with pytest.raises(ValueError, match=r"Unknown parameter\(s\) \['hmc_chain'\]"):
        load_parameters([str(bad)])
