"""The HMC convergence study (`bcl.figure.hmc_convergence`, its command line `benchmarks/hmc_function_space.py`): a
table rebuilt from the traces at hand keeps the rows of traces not on disk; the chain diagnostics of the benchmark."""
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

import hmc_function_space  # noqa: E402

from bcl.figure import hmc_convergence  # noqa: E402


def row(task, chains, run_chains):
    return {"sequence": "disinusoid", "task": task, "chains": chains, "max R̂": 1.0,
            "HMC s (run of)": f"669 ({run_chains} chains)"}


def test_rows_of_traces_not_on_disk_are_kept(tmp_path):
    committed = tmp_path / "table.json"
    rows = [row(1, 16, 16), row(1, 16, 32), row(1, 32, 32), row(2, 32, 32)]
    committed.write_text(json.dumps(rows))
    trace = {"sequence": "disinusoid", "task": 1, "chains": 32}  # task 1 sampled again with 32 chains: recomputed
    assert hmc_convergence.run_of(rows[1]) == ("disinusoid", 1, 32)
    assert hmc_convergence.kept_rows(committed, [trace]) == [rows[0], rows[3]]
    assert hmc_convergence.kept_rows(committed, []) == rows
    assert hmc_convergence.kept_rows(tmp_path / "absent.json", [trace]) == []


def test_a_run_with_its_chains_in_turn_is_named_by_its_chain_count():
    in_turn = {**row(4, 16, 32), "HMC s (run of)": "3000 (32 chains, in turn)"}
    assert hmc_convergence.run_of(in_turn) == ("disinusoid", 4, 32)


def test_the_committed_tables_name_their_runs():
    for path in (ROOT / "experiments" / "tables").glob("hmc_function_space_*.json"):
        for r in json.loads(path.read_text()):
            sequence, task, run_chains = hmc_convergence.run_of(r)
            assert sequence == r["sequence"] and run_chains >= r["chains"], (path.name, r)


def test_a_store_without_stored_tasks_says_what_to_run(tmp_path):
    import pytest
    with pytest.raises(ValueError, match="run the visualisation first"):
        list(hmc_convergence.stored_runs(tmp_path, "cisplit2diris"))


def test_tasks_not_stored_are_named_before_anything_is_read(tmp_path):
    import pytest
    (tmp_path / "task1-0123456789ab.pkl").write_bytes(b"not read")  # read only if asked for
    with pytest.raises(ValueError, match=r"no stored HMC task \[2, 3\] \(it has \[1\]\)"):
        list(hmc_convergence.stored_runs(tmp_path, "disinusoid", [3, 2]))


def test_one_chain_apart_is_named_and_leaving_it_out_settles_rhat():
    import numpy as np
    rng = np.random.default_rng(3)
    draws = rng.normal(size=(16, 1000, 5)).astype(np.float32)
    draws[11] += 1.5  # one chain sits apart at every scalar, as a chain that never reaches the others' region
    rhat = hmc_function_space.scalar_rhat(draws)
    assert rhat.min() > 1.05
    distances = hmc_function_space.chain_distances(draws, rhat > 1.01)
    assert np.argmax(distances) == 11 and distances[11] > 2 * np.sort(distances)[-2]
    assert hmc_function_space.leave_out_rhat(draws, [11])[1] == 0  # no scalar over 1.01 without it
    assert hmc_function_space.leave_out_rhat(draws, [0, 1])[1] == 5  # leaving out others does not help


def test_a_task_sampled_at_another_target_acceptance_is_named_so_and_kept_out_of_the_paper_table(tmp_path,
                                                                                                monkeypatch):
    import pytest
    assert hmc_convergence.target_suffix(0.8) == "" and hmc_convergence.target_suffix(0.9) == "_target90"
    assert hmc_convergence.target_suffix(0.85) == "_target85"  # 0.85 * 100 is 85.00000000000001 in floats
    assert hmc_convergence.target_suffix(0.955) == "_target95p5"
    monkeypatch.setattr(hmc_function_space, "FOLDER", tmp_path / "traces")
    monkeypatch.setenv("XLA_FLAGS", os.environ.get("XLA_FLAGS", ""))  # `sample` adds host devices: undone after
    store = tmp_path / "store"
    monkeypatch.setattr(sys, "argv", ["hmc_function_space.py", "sample", "--sequence", "disinusoid", "--task", "1",
                                      "--chains", "2", "--warmup", "3", "--samples", "4", "--target-acceptance",
                                      "0.9", "--store", str(store)])
    hmc_function_space.main()
    record = json.loads((tmp_path / "traces" / "disinusoid_t1_c2_target90.json").read_text())
    assert record["target_acceptance"] == 0.9
    (stored, _), = hmc_convergence.stored_runs(store, "disinusoid")
    assert stored["target_acceptance"] == 0.9  # from the stored task's own fingerprint
    monkeypatch.setattr(sys, "argv", ["hmc_function_space.py", "table", "--sequence", "disinusoid", "--store",
                                      str(store)])
    with pytest.raises(SystemExit, match=r"acceptance \[0\.9\], not 0\.8: judge it with --target-acceptance 0\.9"):
        hmc_function_space.main()  # refused before any row of the paper's table is rewritten
