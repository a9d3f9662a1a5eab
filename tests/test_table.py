"""The Table faa batch (experiments/run_table.py) under faults, on this machine, with smoke cells on mock data.

- the `paper` profile without data stops within seconds and lists what is missing;
- SIGKILL of the whole runner mid-batch loses no finished cell, and the re-run recomputes none of them;
- a worker killed mid-cell is replaced by Dask and the cell still finishes;
- the batch runs against a separate `dask scheduler` with two `dask worker` processes (`--scheduler FILE`).

Each smoke cell is one papermill run of nbs/91_table_cell.ipynb (a kernel start, JAX's import and a compile), so
these tests take a few minutes on a 2-core CPU.
"""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import faults  # noqa: E402  tests/faults.py: the hooks the workers run before a cell
from conftest import optimised_xla_flags  # noqa: E402  tests/conftest.py

ROOT = Path(__file__).resolve().parents[1]
RUNNER = [sys.executable, str(ROOT / "experiments" / "run_table.py"), "faa"]
CELLS = ["di-mnist-fcnn/finetuning", "ci-mnist-fcnn/finetuning"]


def environment(tmp_path: Path, **extra) -> dict:
    return {**os.environ, "TQDM_DISABLE": "1", "TFDS_DATA_DIR": str(tmp_path / "no-tfds"),
            "BCL_DATA_DIR": str(tmp_path / "data"), **extra}


def run(args, tmp_path, timeout=900, **extra):
    return subprocess.run(RUNNER + args, capture_output=True, text=True, timeout=timeout, cwd=ROOT,
                          env=environment(tmp_path, **extra))


def finished(out: Path, cell: str) -> Path:
    return out / "smoke" / cell / "numbers.json"


def test_paper_profile_without_data_fails_fast(tmp_path):
    result = run(["--profile", "paper", "--data-dir", str(tmp_path / "empty"), "--out", str(tmp_path / "out")],
                 tmp_path, timeout=300)  # a batch that started the cells would not stop within this
    assert result.returncode == 2, result.stdout + result.stderr
    for name in ("cisplitmnist", "cisplitcifar10", "cisplitham8", "emnistletters", "cifar100", "bcn12"):
        assert f"\n  {name}:" in result.stderr, (name, result.stderr)
    assert "tfds build" in result.stderr and "ISIC" in result.stderr
    assert not (tmp_path / "out" / "paper" / "batch.json").exists()  # nothing ran
    assert not list((tmp_path / "out").rglob("*.ipynb")), "a cell's notebook was started"


@pytest.mark.parametrize("flag, value, message", [("--seeds", "0", "must be at least 1, got 0"),
                                                   ("--workers", "-2", "must be at least 1, got -2"),
                                                   ("--epochs", "two", "expected a whole number such as 5")])
def test_counts_must_be_positive_whole_numbers(tmp_path, flag, value, message):
    result = run([flag, value, "--dry-run", "--out", str(tmp_path / "out")], tmp_path, timeout=120)
    assert result.returncode == 2 and message in result.stderr and flag in result.stderr, result.stderr
    assert not (tmp_path / "out").exists()


def test_runner_killed_mid_batch_loses_nothing(tmp_path):
    out = tmp_path / "out"
    args = ["--profile", "smoke", "--workers", "1", "--out", str(out), "--cells", *CELLS]
    process = subprocess.Popen(RUNNER + args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT,
                               env=environment(tmp_path), start_new_session=True)
    deadline = time.time() + 600
    while not any(finished(out, c).exists() for c in CELLS) and time.time() < deadline and process.poll() is None:
        time.sleep(0.5)
    os.killpg(process.pid, signal.SIGKILL)  # the runner, its cluster and its kernels, as a crash would
    process.wait()
    done = {c: finished(out, c) for c in CELLS if finished(out, c).exists()}
    assert len(done) >= 1, "no cell finished before the kill"
    before = {c: (p.stat().st_mtime_ns, p.read_bytes()) for c, p in done.items()}
    result = run(args, tmp_path)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert f"{len(done)} done, {len(CELLS) - len(done)} to run" in result.stdout, result.stdout
    for cell, (mtime, content) in before.items():  # finished cells were neither rewritten nor lost
        assert (finished(out, cell).stat().st_mtime_ns, finished(out, cell).read_bytes()) == (mtime, content)
    assert all(finished(out, c).exists() for c in CELLS)
    batch = json.loads((out / "smoke" / "batch.json").read_text())
    assert sorted(c["status"] for c in batch["cells"]).count("done (skipped)") == len(done)


def test_worker_killed_mid_cell_is_rerun(tmp_path):
    out, marker = tmp_path / "out", tmp_path / "killed-once"
    result = run(["--profile", "smoke", "--workers", "1", "--out", str(out), "--cells", CELLS[0],
                  "--logger", "csv", "tensorboard"], tmp_path, timeout=1500,  # a worker restart, then the cell
                 **faults.environment(BCL_TABLE_KILL_ONCE=f"{CELLS[0]}:{marker}"))
    assert marker.exists(), "the fault was not injected"
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    numbers = json.loads(finished(out, CELLS[0]).read_text())
    assert numbers["method"] == "finetuning" and 0 <= numbers["final_average_accuracy"]["mean"] <= 100
    # the learning curves of --logger, read back; the driver's per-task lines and where the results are
    from bcl.engine.loggers import read_csv_log, read_tensorboard
    T, seeds = len(numbers["n_train"]), numbers["seeds"]
    log = read_csv_log(finished(out, CELLS[0]).parent / "log.csv")
    assert sorted(log.task.unique()) == list(range(1, T + 1)) and sorted(log.seed.unique()) == seeds
    assert {"train/loss", "train/nll", "test/accuracy", "test/ece"} <= set(log.name)
    final = log.query(f"task == {T} and name == 'test/accuracy'").sort_values("seed").value.to_numpy()
    assert abs(100 * final.mean() - numbers["final_average_accuracy"]["mean"]) < 1e-6
    board = read_tensorboard(finished(out, CELLS[0]).parent / "tensorboard")
    assert sorted(board.run.unique()) == [f"g0_seed{s}" for s in seeds]
    assert sorted(board.query("name == 'train/loss'").step.unique()) == list(range(1, T + 1))
    assert f"{CELLS[0]}: task {T}/{T} done" in result.stdout, result.stdout[-3000:]
    assert f"results: {out.resolve() / 'smoke'}" in result.stdout, result.stdout[-3000:]


def test_batch_on_a_separate_dask_scheduler_and_two_workers(tmp_path):
    scheduler_file = tmp_path / "scheduler.json"
    bin_dir = Path(sys.executable).parent
    env = environment(tmp_path)
    common = dict(cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    scheduler = subprocess.Popen([str(bin_dir / "dask"), "scheduler", "--scheduler-file", str(scheduler_file),
                                  "--host", "127.0.0.1", "--port", "0", "--no-dashboard"], **common)
    workers = []
    try:
        deadline = time.time() + 120
        while not scheduler_file.exists() and time.time() < deadline:
            time.sleep(0.2)
        assert scheduler_file.exists(), "the scheduler did not start"
        workers = [subprocess.Popen([str(bin_dir / "dask"), "worker", "--scheduler-file", str(scheduler_file),
                                     "--nthreads", "1", "--nworkers", "1", "--no-dashboard", "--name", f"w{i}"],
                                    **common) for i in range(2)]
        from distributed import Client
        with Client(scheduler_file=str(scheduler_file), timeout=60) as client:
            client.wait_for_workers(2, timeout=120)
        out = tmp_path / "out"
        result = run(["--profile", "smoke", "--scheduler", str(scheduler_file), "--out", str(out), "--cells", *CELLS],
                     tmp_path)
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
        assert all(finished(out, c).exists() for c in CELLS)
    finally:
        for process in [*workers, scheduler]:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            process.wait()


def test_slurm_config_renders_a_gpu_job_script():
    sys.path.insert(0, str(ROOT / "experiments"))
    from run_table import slurm_cluster
    cluster = slurm_cluster()
    try:
        script = cluster.job_script()
    finally:
        cluster.close()
    assert "#SBATCH --gres=gpu:1" in script and "--nthreads 1" in script, script


def test_representative_subset_and_its_ledger(tmp_path):
    "One smoke cell per column and per method through the whole batch path, then the ledger of the batch."
    out = tmp_path / "out"
    result = run(["--profile", "smoke", "--subset", "representative", "--workers", "2", "--out", str(out)], tmp_path,
                 timeout=3000, **optimised_xla_flags())
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    cells = [p.parent for p in (out / "smoke").glob("*/*/numbers.json")]
    assert len({c.parent.name for c in cells}) == 14 and len({c.name for c in cells}) == 13, cells
    ledger = subprocess.run([sys.executable, str(ROOT / "experiments" / "ledger.py"), "faa", "--profile", "smoke",
                             "--out", str(out), "--tables", str(tmp_path), "--figures", str(tmp_path)],
                            capture_output=True, text=True, timeout=300, cwd=ROOT, env=environment(tmp_path))
    assert ledger.returncode == 0, ledger.stderr[-3000:]
    summary = json.loads((tmp_path / "faa_smoke.json").read_text())["summary"]
    on_mock_data = summary["agrees"] + summary["differs"] + summary["inconclusive"]  # the protocol's outcomes
    assert on_mock_data == 14 and summary["not run"] == 182 - 14, summary
    assert (tmp_path / "faa_smoke.png").stat().st_size > 10_000
