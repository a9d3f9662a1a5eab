"""The reproduction protocol's verdict rule (bcl.table.verdict) on cells far from, near to and noisy around the paper,
the seed stages, and explanations that must carry evidence bearing on the cell."""
import json
import math

import numpy as np
import pytest

from bcl.table.ledger import UNCHANGED_BY_MATCHING, NEEDS_GPU_HOURS, Entry, Status, verdict
from bcl.table.verdict import (UNEXPLAINED, CellFacts, Outcome, explain, judge, load_protocol, prediction_half_width,
                               read_explanations, seeds_required)

PROTOCOL = load_protocol()
RULE = PROTOCOL.rule


def seeds(mean: float, sd: float, n: int) -> list[float]:
    "n values with exactly this mean and sample sd."
    z = np.linspace(-1.0, 1.0, n)
    return list(mean + sd * (z - z.mean()) / z.std(ddof=1))


@pytest.mark.parametrize("mean, sd, n, paper, outcome", [
    (70.0, 1.0, 5, 92.0, "differs"),  # far: 22 points off an interval of ±(3.0 + 3)
    (80.0, 6.0, 5, 120.0, "differs"),  # a wide interval still shows a difference
    (91.0, 0.5, 5, 92.0, "agrees"),  # near and tight
    (89.0, 1.0, 10, 92.0, "agrees"),  # 3 points off: inside ±(2.4 + 3)
    (80.0, 6.0, 5, 92.0, "inconclusive"),  # the old rule's "agrees": half-width 18 > 5
    (39.0, 8.6, 5, 29.8, "inconclusive"),  # ci-mnist-cnn P-G-SFSVI's kind of spread
    (85.0, 2.1, 10, 86.0, "agrees"),  # half-width 4.98, just within the maximum of 5
    (85.0, 2.3, 10, 86.0, "inconclusive"),  # half-width 5.46, just beyond it
])
def test_the_rule_on_cells_far_near_and_noisy(mean, sd, n, paper, outcome):
    assert judge(mean, sd, n, paper, RULE, substitute=True).outcome == outcome


def test_no_cell_agrees_on_an_interval_wider_than_the_maximum():
    for sd in np.linspace(0.1, 12.0, 40):
        for n in (3, 5, 10, 20):
            j = judge(80.0, float(sd), n, 80.0, RULE, substitute=True)  # the paper's number on our mean
            assert (j.outcome == Outcome.AGREES) == (j.half_width <= RULE.max_half_width), (sd, n, j)


def test_the_interval_is_student_t_and_unbounded_for_one_seed():
    assert prediction_half_width(1.0, 5) == pytest.approx(2.7764451 * math.sqrt(1.2), rel=1e-6)
    assert prediction_half_width(1.0, 1) == math.inf
    assert judge(50.0, 0.0, 1, 50.0, RULE, substitute=True).outcome == Outcome.INCONCLUSIVE


def test_the_margin_is_the_profiles():
    assert judge(89.0, 0.5, 5, 92.0, RULE, substitute=True).outcome == Outcome.AGREES  # 3 points on MNIST-5k
    assert judge(89.0, 0.5, 5, 92.0, RULE, substitute=False).outcome == Outcome.DIFFERS  # 1 point on the paper's data


def test_seed_stages():
    assert seeds_required(seeds(90.0, 0.5, 5), 90.0, PROTOCOL, True) == 5  # tight, both sides: judged at five
    assert seeds_required(seeds(85.0, 0.5, 5), 90.0, PROTOCOL, True) == 10  # all five on one side
    assert seeds_required(seeds(90.0, 3.5, 5), 90.0, PROTOCOL, True) == 10  # sd above 3
    assert seeds_required(seeds(90.0, 4.0, 10), 90.0, PROTOCOL, True) == 20  # inconclusive at ten


def entry(mean, sd, n, paper, column="ci-mnist-fe", method="er"):
    return Entry(column, method, mean, sd, n, paper, Status.NOT_RUN, "MNIST-5k", per_seed=tuple(seeds(mean, sd, n)))


def test_a_verdict_comes_from_the_primary_regime_only():
    paper = 90.17
    ledgers = {"epochs": {("ci-mnist-fe", "er"): entry(paper, 0.5, 10, paper)},  # agrees, but not the primary regime
               "steps-matched": {("ci-mnist-fe", "er"): entry(paper - 10, 0.5, 10, paper)}}
    v = verdict(ledgers, "ci-mnist-fe", "er", PROTOCOL, {})
    assert (v.status, v.regime, v.explanation) == (Status.DIFFERS, "steps-matched", UNEXPLAINED)
    alone = verdict({"epochs": ledgers["epochs"]}, "ci-mnist-fe", "er", PROTOCOL, {},
                    {"ci-mnist-fe/er": {"hours": NEEDS_GPU_HOURS + 1, "device": "2 cores"}})
    assert alone.status == Status.NEEDS_GPU and alone.judgement is None


def write_explanations(tmp_path, entries: dict) -> dict:
    (tmp_path / "diagnosis.json").write_text(json.dumps({
        "joint": {"ours": 83.4, "paper": 95.11}, "finetuning": 20.0, "regime": "steps-matched",
        "authors": {"one": [26.6], "three": [26.6, 28.3, 28.6]},
        "sibling": {"authors": [69.0, 73.7, 72.9], "ours": [70.5, 70.9, 72.7, 70.4, 68.2, 73.6, 71.5, 69.9, 65.6, 72.1],
                    "far": [85.1, 84.2, 86.0, 85.5, 84.8], "paper_like": [88.0, 90.5, 89.2]}}))
    (tmp_path / "explanations.json").write_text(json.dumps(entries))
    return read_explanations(tmp_path / "explanations.json", tmp_path)


CEILING = {"why": "the extractor's ceiling", "diagnosis": "diagnosis.json", "kind": "ceiling",
           "evidence": {"ceiling": "/joint/ours", "paper_ceiling": "/joint/paper", "floor": "/finetuning"}}


def test_a_file_only_explanation_is_refused(tmp_path):
    with pytest.raises(ValueError, match="needs 'kind'"):
        write_explanations(tmp_path, {"ci-mnist-fe/*": {"why": "the data", "diagnosis": "diagnosis.json"}})
    with pytest.raises(ValueError, match="carries evidence ceiling, paper_ceiling, floor"):
        write_explanations(tmp_path, {"ci-mnist-fe/*": CEILING | {"evidence": {}}})
    with pytest.raises(ValueError, match="is not in diagnosis.json"):
        write_explanations(tmp_path, {"ci-mnist-fe/*": CEILING | {"evidence": CEILING["evidence"] | {"floor": "/x"}}})
    with pytest.raises(ValueError, match="not a JSON file"):
        write_explanations(tmp_path, {"ci-mnist-fe/*": CEILING | {"diagnosis": "missing.json"}})


def facts(mean, sd, paper, regime="steps-matched"):
    return CellFacts(judge(mean, sd, 10, paper, RULE, True), regime, RULE, True)


def test_evidence_must_bear_on_the_cell(tmp_path):
    explanations = write_explanations(tmp_path, {
        "ci-mnist-fe/*": CEILING,
        "ci-mnist-fcnn/one": {"why": "theirs too", "diagnosis": "diagnosis.json", "kind": "authors-code",
                              "evidence": {"per_seed": "/authors/one", "regime": "/regime"}},
        "ci-mnist-fcnn/three": {"why": "theirs too", "diagnosis": "diagnosis.json", "kind": "authors-code",
                                "evidence": {"per_seed": "/authors/three", "regime": "/regime"}}})
    assert explain("ci-mnist-fe", "er", facts(80.0, 0.8, 90.17), explanations)[0].startswith("the extractor's")
    text, why = explain("ci-mnist-fe", "si", facts(22.1, 1.1, 30.24), explanations)  # at fine-tuning's level
    assert text == UNEXPLAINED and "at the floor" in why
    text, why = explain("ci-mnist-fe", "ewc", facts(39.5, 1.6, 73.37), explanations)  # 34 short, the ceiling 11.7
    assert text == UNEXPLAINED and "exceeds the ceiling's" in why
    text, why = explain("ci-mnist-fcnn", "one", facts(27.6, 0.9, 43.58), explanations)
    assert text == UNEXPLAINED and "1 seed(s)" in why
    assert explain("ci-mnist-fcnn", "three", facts(27.6, 0.9, 43.58), explanations)[0].startswith("theirs too")
    text, why = explain("ci-mnist-fcnn", "three", facts(27.6, 0.9, 43.58, regime="epochs"), explanations)
    assert text == UNEXPLAINED and "judged under 'epochs'" in why


def test_a_sibling_extractor_bears_only_where_it_does_not_move_the_cell(tmp_path):
    "The authors' code on a sibling extractor's features explains a cell only if our cell there lands inside its interval."
    def sibling(authors, ours):
        return {"why": "theirs on a sibling", "diagnosis": "diagnosis.json", "kind": "authors-code-sibling-extractor",
                "evidence": {"per_seed": f"/sibling/{authors}", "ours_per_seed": f"/sibling/{ours}", "regime": "/regime"}}
    explanations = write_explanations(tmp_path, {"ci-mnist-fe/p-gm-sfsvi": sibling("authors", "ours"),
                                                 "ci-mnist-fe/p-g-sfsvi": sibling("authors", "far"),
                                                 "ci-mnist-fe/l-gm-sfsvi": sibling("paper_like", "ours")})
    cell = facts(70.98, 3.43, 89.28)  # CI extractor P-GM-SFSVI: interval [59.85, 82.11]
    assert explain("ci-mnist-fe", "p-gm-sfsvi", cell, explanations)[0].startswith("theirs on a sibling")
    text, why = explain("ci-mnist-fe", "p-g-sfsvi", cell, explanations)  # ours on the sibling: 85.1, outside
    assert text == UNEXPLAINED and "the extractor's realisation moves it" in why
    text, why = explain("ci-mnist-fe", "l-gm-sfsvi", cell, explanations)  # theirs far from ours on the sibling
    assert text == UNEXPLAINED and "on the sibling extractor, their mean" in why
    with pytest.raises(ValueError, match="carries evidence per_seed, ours_per_seed, regime"):
        write_explanations(tmp_path, {"ci-mnist-fe/*": sibling("authors", "ours") | {
            "evidence": {"per_seed": "/sibling/authors", "regime": "/regime"}}})


def test_the_protocol_file_agrees_with_the_code():
    assert set(PROTOCOL.carried["steps-matched"][1]) == set(UNCHANGED_BY_MATCHING)
    assert PROTOCOL.carried["steps-matched"][0] == "steps"
    assert PROTOCOL.needs_gpu_hours == NEEDS_GPU_HOURS
    from bcl.paper import FAA_COLUMNS
    mnist = [c.key for c in FAA_COLUMNS if "mnist" in c.key]
    assert sorted(PROTOCOL.primary) == sorted(mnist)


def test_the_offline_extractor_is_the_one_the_rule_chose():
    "The offline profile's stand-in extractor is what the protocol's extractor rule chose, as its committed record says."
    import json
    from pathlib import Path
    from bcl.table.plan import OFFLINE_PRETRAINING
    from bcl.table.verdict import choose_extractor
    record = json.loads((Path(__file__).resolve().parents[1] / "experiments" / "tables" / "extractor_choice.json").read_text())
    rule = PROTOCOL.extractor
    assert record["protocol_version"] == PROTOCOL.version and record["rule"]["candidates"] == list(rule.candidates)
    scores = {row["candidate"]: row["score"] for row in record["candidates"]}
    assert choose_extractor(scores, rule) == record["chosen"] == OFFLINE_PRETRAINING["emnistletters"]


def test_the_committed_verdict_figure_counts_what_the_ledger_counts():
    "The figure's counts (from each cell's recorded verdict, `count_key`) are the headline ledger's protocol counts."
    from pathlib import Path
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from bcl.figure.ledger_figure import verdict_figure
    record = json.loads((Path(__file__).resolve().parents[1] / "experiments" / "tables" / "faa_offline.json").read_text())
    fig, counts = verdict_figure(record)
    plt.close(fig)
    assert counts == record["protocol"]["counts"]
    assert sum(counts.values()) == sum(1 for r in record["cells"].values() if r.get("verdict"))
