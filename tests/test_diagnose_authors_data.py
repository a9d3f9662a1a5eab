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


def test_runs_on_another_extractors_features_are_superseded_or_not_compared():
    def fe(seed, accuracy, data, extractor, created):
        return run(seed, accuracy, "prior_exact_gsfsvi") | {
            "experiment": "svi_cisplitmnist_fe", "data_sha256": data, "extractor_sha256": extractor, "created": created}
    old = [fe(s, 20.0, "d1", "e1", "2026-11-27T10:00:00") for s in range(3)]
    new = [fe(s, 40.0, "d2", "e2", "2026-11-28T10:00:00") for s in range(2)]
    cell = {"mean": 39.0, "sd": 2.0, "n": 5, "extractor": {"params_sha256": "e2"}}
    [row] = diagnose.rows(old + new, {"ci-mnist-fe/p-g-sfsvi": cell})
    assert row["authors_per_seed"] == [40.0, 40.0] and row["verdict"] == "the data's"  # the old extractor's runs left out
    [row] = diagnose.rows(old, {"ci-mnist-fe/p-g-sfsvi": cell})
    assert row["verdict"].startswith("not comparable: other extractors")
    [row] = diagnose.rows(new, {"ci-mnist-fe/p-g-sfsvi": {"mean": 39.0, "sd": 2.0, "n": 5}})
    assert row["verdict"] == "not comparable: an extractor not recorded"
