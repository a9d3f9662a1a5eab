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


def test_the_primary_regime_keeps_its_own_runs_and_judges_by_the_protocol():
    """Runs on 15 copies are the steps-matched regime's, the others the epochs'; under the protocol their mean is held
    against our prediction interval, and fewer than 3 seeds of theirs judge nothing."""
    from bcl.table.verdict import load_protocol
    matched = [run(s, a) | {"training_repeat": 15} for s, a in enumerate([30.0, 31.0, 29.5])]
    plain = [run(s, 60.0) for s in range(3)]
    assert diagnose.regime_of(matched[0]) == "steps-matched" and diagnose.regime_of(plain[0]) == "epochs"
    cell = {"mean": 30.2, "sd": 1.0, "n": 10, "per_seed": [30.2] * 10, "substitute": "MNIST-5k",
            "test_accuracy_mean": [[0.3] * 5] * 5}
    cells = {"ci-mnist-fcnn/l-gm-vcl": cell}
    [row] = diagnose.rows(matched + plain, cells, regime="steps-matched")
    assert row["authors_per_seed"] == [30.0, 31.0, 29.5] and row["regime"] == "steps-matched"
    [judged] = diagnose.protocol_rows([row], cells, load_protocol())
    assert judged["verdict"].startswith("the data's") and judged["authors_outcome"] == "differs"  # paper 44.20
    far = cells | {"ci-mnist-fcnn/l-gm-vcl": cell | {"mean": 20.0}}
    [row] = diagnose.rows(matched, far, regime="steps-matched")
    assert "outside our interval" in diagnose.protocol_rows([row], far, load_protocol())[0]["verdict"]
    [row] = diagnose.rows(matched[:2], cells, regime="steps-matched")
    assert "at least 3" in diagnose.protocol_rows([row], cells, load_protocol())[0]["verdict"]
    # the diagnosis and the ledger apply one rule: a row is the data's exactly when AuthorsCode accepts it
    from bcl.table.verdict import AuthorsCode, CellFacts, judge
    protocol = load_protocol()
    ours = judge(30.2, 1.0, 10, 44.20, protocol.rule, True)
    assert AuthorsCode((30.0, 31.0, 29.5), "steps-matched").refusal(
        CellFacts(ours, "steps-matched", protocol.rule, True)) is None
    [row] = diagnose.rows(plain, cells)  # the epochs rows are as before
    assert row["regime"] == "epochs" and row["authors_per_seed"] == [60.0] * 3


def test_a_cell_bcl_has_not_run_is_listed_with_the_authors_seeds_alone():
    """A cell of the primary regime that bcl has not run (e.g. one that needs a GPU) is not judged, but the authors'
    seeds on it are listed under the table, so that no run of theirs is hidden."""
    from bcl.table.verdict import load_protocol
    matched = [run(s, a, "er") | {"experiment": "svi_cisplitmnist_cnn", "training_repeat": 15}
               for s, a in enumerate([95.0, 96.0])]
    [row] = diagnose.rows(matched, {}, regime="steps-matched")
    [judged] = diagnose.protocol_rows([row], {}, load_protocol())
    assert judged["verdict"] == "no bcl cell"
    text = diagnose.protocol_markdown([judged], "runs.jsonl", "ledger.json")
    assert "| CI Split MNIST, CNN |" not in text  # no row in the table: nothing to judge against
    assert "CI Split MNIST, CNN ER, 95.00, 96.00 (seeds 0, 1; mean 95.50 ± 0.71), paper 96.69" in text, text[-400:]
