"""The batch (experiments/run_table.py --slurm) on a real one-node Slurm started by scripts/slurm_local.sh.

- smoke cells run as Slurm jobs submitted by dask-jobqueue (seen in `squeue`), each cell records its job's
  SLURM_JOB_ID in its provenance, and the ledger is written;
- `scancel` of a worker job mid-cell: the cell is rerun elsewhere, and a re-run of the batch recomputes nothing;
- jobs with a one-minute walltime (one of them held past it by a cell that waits once) are killed by Slurm
  (TIMEOUT) and replaced, and the batch finishes;
- with `slurmctld` stopped, the batch stops within seconds with one line that says what to start.

These need root (the script installs Debian's slurm-wlm and munge when missing, and runs the daemons) and take
several minutes on 2 cores, so they run only with BCL_TEST_SLURM=1: `make test-slurm`. The module starts its own
Slurm in a temporary folder (ports 6927-6928; with BCL_SLURM_ACCOUNTING=1 also MariaDB and slurmdbd, 6929-6930, and
the jobs are printed as `sacct` lists them) and stops it at the end. The job script test of the shipped GPU example
needs no Slurm and always runs.
"""
import contextlib
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import faults  # noqa: E402  tests/faults.py: the hooks the workers run before a cell

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "slurm_local.sh"
RUNNER = [sys.executable, str(ROOT / "experiments" / "run_table.py"), "faa", "--profile", "smoke"]
LOCAL_CONFIG = ROOT / "tests" / "slurm" / "jobqueue-local.yaml"
CELLS = ["di-mnist-fcnn/finetuning", "ci-mnist-fcnn/finetuning", "ci-mnist-fcnn/ewc"]
needs_slurm = pytest.mark.skipif(os.environ.get("BCL_TEST_SLURM") != "1",
                                 reason="a real Slurm is started only by `make test-slurm` (BCL_TEST_SLURM=1; root, "
                                 "Debian's slurm-wlm and munge, several minutes)")


@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    "A private Slurm (its folder, environment and job completion log); stopped, by process id, at the end."
    folder = tmp_path_factory.mktemp("slurm")
    env = {**os.environ, "BCL_SLURM_DIR": str(folder / "s"), "BCL_SLURM_PORT": "6927",
           "SLURM_CONF": str(folder / "s" / "slurm.conf"), "TQDM_DISABLE": "1",
           "TFDS_DATA_DIR": str(folder / "no-tfds"), "BCL_DATA_DIR": str(folder / "data")}
    started = subprocess.run([str(SCRIPT), "start"], env=env, capture_output=True, text=True, timeout=600)
    assert started.returncode == 0, started.stdout + started.stderr
    try:
        yield {"env": env, "folder": folder, "dir": folder / "s", "data": folder / "smoke-data"}
    finally:
        stopped = subprocess.run([str(SCRIPT), "stop"], env=env, capture_output=True, text=True, timeout=120)
        print(stopped.stderr)


def config(tmp_path: Path, **changes) -> Path:
    "The local dask-jobqueue configuration with its logs under `tmp_path` and `changes` to its slurm keys."
    settings = yaml.safe_load(LOCAL_CONFIG.read_text())
    settings["jobqueue"]["slurm"].update({"log-directory": str(tmp_path / "slurm-logs"), **changes})
    path = tmp_path / "jobqueue.yaml"
    path.write_text(yaml.safe_dump(settings))
    return path


def batch_args(slurm, tmp_path, jobs=2, cells=CELLS, **changes) -> list[str]:
    return RUNNER + ["--out", str(tmp_path / "out"), "--data-dir", str(slurm["data"]), "--slurm", str(jobs),
                     "--slurm-config", str(config(tmp_path, **changes)), "--cells", *cells]


def squeue(slurm) -> list[dict]:
    "The jobs Slurm lists now (id, name, state)."
    done = subprocess.run(["squeue", "-h", "-o", "%i %j %T"], env=slurm["env"], capture_output=True, text=True,
                          timeout=30)
    return [dict(zip(("id", "name", "state"), line.split())) for line in done.stdout.splitlines()]


def jobcomp(slurm) -> dict[str, dict]:
    "Finished jobs from the job completion log (what `sacct` gives with an accounting database): id -> fields."
    path = slurm["dir"] / "jobcomp.log"
    records = {}
    for line in path.read_text().splitlines() if path.exists() else []:
        fields = dict(re.findall(r"(\w+)=(\S*)", line))
        records[fields["JobId"]] = fields
    return records


def watch(process, slurm, timeout: float, until=None, each=None) -> dict[str, dict]:
    """Poll `squeue` while `process` runs (until `until()` is true, if given; `each(jobs)` at every poll); every job
    seen, by id."""
    seen, deadline = {}, time.time() + timeout
    while process.poll() is None and time.time() < deadline:
        jobs = squeue(slurm)
        for job in jobs:
            seen[job["id"]] = job
        if each is not None:
            each(jobs)
        if until is not None and until():
            return seen
        time.sleep(1)
    assert process.poll() is not None or until is not None, "the batch did not finish in time"
    return seen


def print_sacct(slurm) -> None:
    "The jobs as `sacct` lists them, with BCL_SLURM_ACCOUNTING=1 (for the record of a run: pytest -s)."
    if slurm["env"].get("BCL_SLURM_ACCOUNTING") == "1":
        print(subprocess.run(["sacct", "-a", "-X", "--format=JobID,JobName,State,ExitCode,Timelimit,Elapsed,Start,End"],
                             env=slurm["env"], capture_output=True, text=True, timeout=60).stdout)


def time_limit(slurm, job: str) -> str:
    "The time limit of a job that Slurm lists, as squeue prints it (e.g. 1:00)."
    done = subprocess.run(["squeue", "-h", "-j", job, "-o", "%l"], env=slurm["env"], capture_output=True, text=True,
                          timeout=30)
    return done.stdout.strip()


def numbers(tmp_path: Path, cell: str) -> Path:
    return tmp_path / "out" / "smoke" / cell / "numbers.json"


def finish(process, timeout=900) -> str:
    out, _ = process.communicate(timeout=timeout)
    assert process.returncode == 0, out[-4000:]
    return out


@contextlib.contextmanager
def started_batch(args, env):
    "The batch running in the background; killed if it still runs when the test ends (its jobs end with the Slurm)."
    process = subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()


@needs_slurm
def test_smoke_cells_run_in_slurm_jobs(slurm, tmp_path):
    start = time.perf_counter()
    with started_batch(batch_args(slurm, tmp_path), slurm["env"]) as process:
        seen = watch(process, slurm, 900)
        out = finish(process)
    wall = time.perf_counter() - start
    ours = {i for i, job in seen.items() if job["name"] == "bcl-table"}
    assert len(ours) >= 2, seen  # the workers were Slurm jobs, listed by squeue
    for cell in CELLS:
        record = json.loads(numbers(tmp_path, cell).read_text())
        job = record["provenance"]["slurm"]
        assert job is not None and job["job_id"] in ours and job["partition"] == "local", (cell, job, ours)
    time.sleep(3)
    assert not [j for j in squeue(slurm) if j["id"] in ours and j["state"] == "RUNNING"], "jobs left running"
    ledger = subprocess.run([sys.executable, str(ROOT / "experiments" / "ledger.py"), "faa", "--profile", "smoke",
                             "--out", str(tmp_path / "out"), "--tables", str(tmp_path / "ledger"),
                             "--figures", str(tmp_path / "ledger")],
                            cwd=ROOT, env=slurm["env"], capture_output=True, text=True, timeout=600)
    assert ledger.returncode == 0, ledger.stdout[-3000:] + ledger.stderr[-3000:]
    assert (tmp_path / "ledger" / "faa_smoke.md").exists(), ledger.stdout[-3000:]
    print(f"smoke cells on Slurm: {len(CELLS)} cells, jobs {sorted(ours, key=int)}, {wall:.0f} s\n{out[-600:]}")
    print_sacct(slurm)


@needs_slurm
def test_scancel_mid_cell_reruns_the_cell_elsewhere(slurm, tmp_path):
    args = batch_args(slurm, tmp_path)
    started = lambda: [c for c in CELLS if (tmp_path / "out" / "smoke" / c).is_dir()]
    finished = lambda: [c for c in CELLS if numbers(tmp_path, c).exists()]
    running = lambda: [j for j in squeue(slurm) if j["name"] == "bcl-table" and j["state"] == "RUNNING"]
    with started_batch(args, slurm["env"]) as process:
        # both workers busy and no cell finished: each running job is mid-cell
        seen = watch(process, slurm, 600, until=lambda: len(started()) >= 2 and not finished() and len(running()) >= 2)
        assert process.poll() is None and not finished(), "no moment with both workers mid-cell"
        victim = running()[0]["id"]
        subprocess.run(["scancel", victim], env=slurm["env"], check=True, timeout=30)
        seen |= watch(process, slurm, 900)
        finish(process)
    assert jobcomp(slurm)[victim]["JobState"] == "CANCELLED", jobcomp(slurm).get(victim)
    jobs = {json.loads(numbers(tmp_path, c).read_text())["provenance"]["slurm"]["job_id"] for c in CELLS}
    assert victim not in jobs, (victim, jobs)  # its cell was rerun in another job
    assert max(map(int, seen)) > int(victim) + 1, seen  # and the cancelled job was replaced by a new one
    before = {c: numbers(tmp_path, c).stat().st_mtime_ns for c in CELLS}
    again = subprocess.run(args, cwd=ROOT, env=slurm["env"], capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    assert f"{len(CELLS)} done, 0 to run" in again.stdout, again.stdout
    assert {c: numbers(tmp_path, c).stat().st_mtime_ns for c in CELLS} == before
    print(f"scancel {victim} mid-cell: cells ran in jobs {sorted(jobs, key=int)}")
    print_sacct(slurm)


@needs_slurm
def test_walltime_expiry_replaces_the_jobs(slurm, tmp_path):
    args = batch_args(slurm, tmp_path, cells=CELLS[:2], walltime="00:01:00")
    # The first cell waits 150 s once, so its job outlives its one-minute walltime on any machine. Once Slurm has
    # ended a job for its walltime, the test gives the replacement jobs (submitted with the same minute) 30 minutes
    # with `scontrol update`, as an administrator could: on a slow or loaded machine a smoke cell needs more than a
    # minute (kernel start, JAX's import, compilation), and the cells must finish for the batch to.
    marker = tmp_path / "stalled-once"
    env = {**slurm["env"], **faults.environment(slurm["env"], BCL_TABLE_STALL_ONCE=f"{CELLS[0]}:{marker}:150"),
           "DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES": "20"}
    known = set(jobcomp(slurm)) | {job["id"] for job in squeue(slurm)}  # jobs of the tests before
    submitted, extended = {}, set()

    def extend_replacements(jobs):
        for job in jobs:
            if job["id"] not in known and job["id"] not in submitted:
                submitted[job["id"]] = time_limit(slurm, job["id"])  # as dask-jobqueue submitted it
        if any(jobcomp(slurm).get(i, {}).get("JobState") == "TIMEOUT" for i in submitted):
            for job in jobs:
                if job["id"] in submitted and job["id"] not in extended and job["state"] in ("PENDING", "RUNNING") \
                        and jobcomp(slurm).get(job["id"]) is None and int(job["id"]) > min(map(int, submitted)) + 1:
                    subprocess.run(["scontrol", "update", f"JobId={job['id']}", "TimeLimit=30"], env=slurm["env"],
                                   check=True, timeout=30)
                    extended.add(job["id"])

    with started_batch(args, env) as process:
        seen = watch(process, slurm, 1200, each=extend_replacements)
        finish(process, timeout=60)
    records = jobcomp(slurm)
    ours = sorted((set(seen) | set(records)) - known, key=int)
    timed_out = [i for i in ours if records.get(i, {}).get("JobState") == "TIMEOUT"]
    assert marker.exists(), "the stall was not injected"
    assert timed_out, {i: records.get(i, {}).get("JobState") for i in ours}
    assert all(records[i]["TimeLimit"] == "1" for i in timed_out), records  # minutes
    replacements = [i for i in ours if int(i) > max(map(int, timed_out))]
    assert replacements, ours  # jobs past their walltime were replaced
    assert all(submitted[i] == "1:00" for i in replacements if i in submitted), submitted  # with the same walltime
    assert all(numbers(tmp_path, c).exists() for c in CELLS[:2])
    print(f"walltime 1 min: jobs {ours}, timed out {timed_out}, replacements given 30 min {sorted(extended, key=int)}")
    print_sacct(slurm)


@needs_slurm
def test_slurm_down_is_said_within_seconds(slurm, tmp_path):
    pid = int((slurm["dir"] / "run" / "slurmctld.pid").read_text())
    os.kill(pid, 15)  # our slurmctld only
    for _ in range(100):
        if not Path(f"/proc/{pid}").exists():
            break
        time.sleep(0.1)
    try:
        start = time.perf_counter()
        result = subprocess.run(batch_args(slurm, tmp_path, jobs=1), cwd=ROOT, env=slurm["env"], capture_output=True,
                                text=True, timeout=300)
        seconds = time.perf_counter() - start
        assert result.returncode != 0 and "Slurm's controller does not answer" in result.stderr, result.stderr[-3000:]
        assert "Start slurmctld" in result.stderr and "scripts/slurm_local.sh start" in result.stderr
        assert seconds < 60, seconds
        assert not (tmp_path / "out").exists()  # nothing ran
    finally:  # the script sees its Slurm half-stopped and starts it afresh
        restarted = subprocess.run([str(SCRIPT), "start"], env=slurm["env"], capture_output=True, text=True,
                                   timeout=300)
        assert restarted.returncode == 0, restarted.stderr


def test_gpu_example_renders_its_job_script():
    "The shipped GPU example through the code path of --slurm: the job script dask-jobqueue would submit."
    from bcl.table.batch import slurm_cluster, slurm_config
    shipped = yaml.safe_load(slurm_config().read_text())["jobqueue"]["slurm"]
    cluster = slurm_cluster(slurm_config())
    try:
        script = cluster.job_script()
    finally:
        cluster.close()
    lines = script.splitlines()
    assert "#SBATCH --gres=gpu:1" in lines, script
    assert "source .venv/bin/activate" in lines, script  # the prologue, before the worker starts
    worker = next(i for i, line in enumerate(lines) if "distributed.cli.dask_worker" in line)
    assert lines.index("source .venv/bin/activate") < worker and lines[worker].startswith("python -m "), script
    assert f"#SBATCH -t {shipped['walltime']}" in lines and "#SBATCH --mem=64G" in lines, script
    assert "#SBATCH --cpus-per-task=8" in lines and re.findall(r"--nthreads (\d+)", script) == ["1"], script
    local = slurm_cluster(LOCAL_CONFIG)
    try:
        script = local.job_script()
    finally:
        local.close()
    assert "--gres" not in script and "#SBATCH -p local" in script, script
