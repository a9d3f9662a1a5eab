"""bcl.table.devices (nbs/table/63_devices.ipynb): GPU counting with a fake `nvidia-smi` on PATH, and per-worker pinning (no GPU needed)."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bcl.table import devices


def fake_nvidia_smi(folder: Path, n_gpus: int, exit_code: int = 0) -> None:
    "An executable `nvidia-smi` in `folder` that lists `n_gpus` GPUs for `-L` (as the real one does) and exits."
    lines = "".join(f'echo "GPU {i}: NVIDIA H100 80GB HBM3 (UUID: GPU-0000000{i}-aaaa-bbbb-cccc-dddddddddddd)"\n'
                    for i in range(n_gpus))
    script = folder / "nvidia-smi"
    script.write_text(f'#!/bin/sh\n[ "$1" = "-L" ] || exit 2\n{lines}exit {exit_code}\n')
    script.chmod(0o755)


@pytest.fixture
def path_only(tmp_path, monkeypatch):
    "PATH holds only an empty temporary folder (no real nvidia-smi); CUDA_VISIBLE_DEVICES unset."
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    return tmp_path


def test_no_gpu(path_only):
    assert devices.gpu_count() == 0
    assert devices.pin_environment(3, 0) == {}


def test_nvidia_smi_lists(path_only):
    fake_nvidia_smi(path_only, 4)
    assert devices.gpu_count() == 4


def test_visible_devices_restrict_nvidia_smi(path_only, monkeypatch):
    fake_nvidia_smi(path_only, 4)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1,3")
    assert devices.gpu_count() == 2
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert devices.gpu_count() == 0
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "-1")
    assert devices.gpu_count() == 0


def test_without_nvidia_smi_the_environment_counts(path_only, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1,2")
    assert devices.gpu_count() == 3
    fake_nvidia_smi(path_only, 2, exit_code=9)  # a broken nvidia-smi (no driver) is ignored
    assert devices.gpu_count() == 3


def test_pin_round_robin(path_only):
    assert [devices.pin_environment(i, 2) for i in range(4)] == [
        {"CUDA_VISIBLE_DEVICES": "0"}, {"CUDA_VISIBLE_DEVICES": "1"},
        {"CUDA_VISIBLE_DEVICES": "0"}, {"CUDA_VISIBLE_DEVICES": "1"}]


def test_pin_uses_the_parents_visible_list(path_only, monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,3")
    assert devices.pin_environment(0, 2) == {"CUDA_VISIBLE_DEVICES": "2"}
    assert devices.pin_environment(5, 2) == {"CUDA_VISIBLE_DEVICES": "3"}
    with pytest.raises(ValueError, match="lists only 2"):
        devices.pin_environment(0, 3)


def test_pin_shared_gpu_limits_memory(path_only):
    assert devices.pin_environment(0, 1, n_workers=1) == {"CUDA_VISIBLE_DEVICES": "0"}
    env = devices.pin_environment(2, 1, n_workers=3)
    assert env == {"CUDA_VISIBLE_DEVICES": "0", "XLA_PYTHON_CLIENT_MEM_FRACTION": "0.300"}


@pytest.mark.parametrize("bad", [(-1, 1), (0, -1), (1.0, 1), (True, 1)])
def test_pin_rejects_bad_arguments(path_only, bad):
    with pytest.raises(ValueError):
        devices.pin_environment(*bad)


def test_counting_does_not_import_jax(path_only):
    fake_nvidia_smi(path_only, 1)
    code = ("import sys; from bcl.table import devices; n = devices.gpu_count(); "
            "assert 'jax' not in sys.modules and 'jaxlib' not in sys.modules; print(n)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=os.environ.copy(), check=True)
    assert done.stdout.strip() == "1"


def test_local_cluster_shares_the_gpu_between_its_workers(path_only):
    "The batch's LocalCluster on a 1-GPU machine with 2 workers: each worker is pinned to GPU 0 with half its memory."
    from bcl.table.batch import make_client
    fake_nvidia_smi(path_only, 1)
    client, share = make_client(None, 2)
    try:
        assert share == (1, 2)
        assert [devices.pin_environment(i, *share) for i in range(2)] == [
            {"CUDA_VISIBLE_DEVICES": "0", "XLA_PYTHON_CLIENT_MEM_FRACTION": "0.450"}] * 2
    finally:
        client.close()
        client.cluster.close()
    fake_nvidia_smi(path_only, 0)
    client, share = make_client(None, 1)
    client.close()
    client.cluster.close()
    assert share is None  # a CPU machine: nothing to pin
