"""experiments/diagnose_authors_data.py: a gap is the data's when the authors' mean lands within the ledger's margin."""
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "experiments"))

import diagnose_authors_data as diagnose  # noqa: E402


def run(seed, accuracy, trainer="likelihood_exact_gmvcl"):
    last = [accuracy / 100] * 5
    return {"experiment": "svi_cisplitmnist_fcnn", "trainer": trainer, "seed": seed, "data": "cisplitmnist5k",
            "accuracy": [last] * 5, "final_average_accuracy": accuracy, "train_s": 1.0}


def verdict(authors, mean=26.5, sd=1.65):
    cells = {"ci-mnist-fcnn/l-gm-vcl": {"mean": mean, "sd": sd, "n": 5}}
    [row] = diagnose.rows([run(s, a) for s, a in enumerate(authors)], cells)
    return row


def test_the_mean_decides_and_seeds_outside_are_named():
    row = verdict([27.9, 22.6])  # mean 25.25: within max(3, 3.3) of 26.5; seed 1 is 3.9 away
    assert row["verdict"] == "the data's" and row["authors_seeds_outside_margin"] == [1]
    assert "seed 1 outside the ±3.3 margin" in diagnose.verdict(row)
    assert verdict([21.0, 22.0])["verdict"] == "the code's"  # mean 21.5: 5 points away
    assert verdict([26.0])["authors_seeds_outside_margin"] == [] and diagnose.verdict(verdict([26.0])) == "the data's"
