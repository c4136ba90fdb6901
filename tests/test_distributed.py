"""ferro.distributed on real MPI jobs: ``mpiexec -n 2`` and ``-n 3`` launched from here, each rank
checking against NumPy (tests/distributed_jobs.py); DDP against one process; the sampler against
PyTorch's; failures that must end the job. Needs ``ferro-core[mpi]`` (mpi4py and MPICH)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import ferro
import ferro.distributed as dist
from ferro.distributed._launch import mpiexec_command

from conftest import clean_env

pytest.importorskip("mpi4py", reason='the MPI process group needs ferro-core[mpi]: pip install "ferro-core[mpi]"')
JOBS = Path(__file__).with_name("distributed_jobs.py")
ROOT = Path(__file__).resolve().parents[1]


def _job(n: int, *args: str, env: dict[str, str] | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """``mpiexec -n n python distributed_jobs.py args``; the subprocess timeout guards against a hang."""
    return subprocess.run(mpiexec_command(n, ["-W", "ignore", str(JOBS), *args]), capture_output=True, text=True,
                          timeout=timeout, env=clean_env(env), cwd=ROOT)


def _ok(proc: subprocess.CompletedProcess, job: str, n: int) -> None:
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert sorted(re.findall(rf"OK {job} rank (\d+)", proc.stdout)) == [str(i) for i in range(n)], proc.stdout


@pytest.fixture(scope="module")
def three_ranks() -> subprocess.CompletedProcess:
    """One ``mpiexec -n 3`` job for the collectives on cpu and the sampler's shards."""
    return _job(3, "collectives", "cpu")


def test_every_collective_and_dtype_matches_numpy_on_cpu_2_ranks() -> None:
    _ok(_job(2, "collectives", "cpu"), "collectives", 2)


def test_every_collective_and_dtype_matches_numpy_on_cpu_3_ranks(three_ranks: subprocess.CompletedProcess) -> None:
    _ok(three_ranks, "collectives", 3)


def test_every_collective_and_dtype_matches_numpy_on_opencl(ocl: Any) -> None:
    """OpenCL tensors are staged through host memory and written back through the device's copy kernel."""
    # Each rank builds its OpenCL programs on first use; on a loaded machine that can take longer than the
    # default 60 s a peer waits in a collective, so the job gets a longer collective timeout and guard.
    _ok(_job(2, "collectives", "opencl", env={"FERRO_TEST_TIMEOUT": "300"}, timeout=600), "collectives", 2)


def test_ddp_equals_one_process_on_the_concatenated_batches_and_no_sync_accumulates() -> None:
    """20 steps of the digits MLP in float64 (SGD with momentum, fused Adam): every replica's parameters
    within 1e-6 of one process trained on the concatenated batches; no_sync; find_unused_parameters."""
    pytest.importorskip("sklearn", reason="the digits come from scikit-learn")
    _ok(_job(2, "ddp", "20"), "ddp", 2)


def test_distributed_sampler_shards_are_pytorchs(three_ranks: subprocess.CompletedProcess) -> None:
    torch_dist = pytest.importorskip("torch.utils.data.distributed")
    _ok(three_ranks, "collectives", 3)
    assert three_ranks.stdout.count("SHARDS") == 3
    for line in three_ranks.stdout.splitlines():
        if not line.startswith("SHARDS"):
            continue
        _, rank, world, payload = line.split(" ", 3)
        for key, got in json.loads(payload).items():
            size, drop_last, shuffle, epoch = key.split(",")
            s = torch_dist.DistributedSampler(range(int(size)), num_replicas=int(world), rank=int(rank),
                                              shuffle=shuffle == "True", seed=5, drop_last=drop_last == "True")
            s.set_epoch(int(epoch))
            assert got == list(s), f"rank {rank}, {key}"


def test_torch_randperm_is_pytorchs_permutation() -> None:
    torch = pytest.importorskip("torch")
    from ferro.data.distributed import torch_randperm
    for n, seed in ((0, 0), (1, 3), (17, 5), (1797, 2**40 + 7)):
        assert torch_randperm(n, seed) == torch.randperm(n, generator=torch.Generator().manual_seed(seed)).tolist()


@pytest.mark.parametrize(("mode", "env", "says"), [
    ("raise", {}, ["[ferro.distributed] rank 1 of 3 failed", "[rank 1] ValueError: rank 1 fails on purpose"]),
    ("timeout", {}, ["DistributedTimeoutError: all_reduce", "timed out after 2 s", "rank(s) [1] of the group did not"]),
    ("timeout-large", {}, ["DistributedTimeoutError: all_reduce", "timed out after 2 s",
                           "rank(s) [1] of the group did not", "cannot be interrupted: aborting the job"]),
    ("mismatch", {"FERRO_DISTRIBUTED_DEBUG": "DETAIL"},
     ["all_reduce: the ranks disagree", '"shape": [3]', '"shape": [5]']),
])
def test_a_failing_rank_ends_the_job_with_its_error(mode: str, env: dict[str, str], says: list[str]) -> None:
    """No hang: the job ends (the subprocess timeout is the guard) with the failing rank's error."""
    proc = _job(3, "fail", mode, env={"FERRO_TEST_TIMEOUT": "2", **env}, timeout=60)
    assert proc.returncode != 0
    for text in says:
        assert text in proc.stderr, proc.stderr


def test_a_collective_before_init_process_group_names_the_fix() -> None:
    assert not dist.is_initialized()
    with pytest.raises(dist.DistributedError, match=r"all_reduce: .*init_process_group\(\).*mpiexec -n N"):
        dist.all_reduce(ferro.ones(2))
    with pytest.raises(dist.DistributedError, match="get_rank"):
        dist.get_rank()


def test_ferro_run_passes_arguments_and_the_hosts_file_to_mpiexec(tmp_path: Path) -> None:
    script = tmp_path / "hello.py"
    script.write_text("import sys, ferro.distributed as dist\n"
                      "dist.init_process_group()\n"
                      "sys.stdout.write(f'hello {dist.get_rank()} {dist.get_world_size()} {sys.argv[1:]}\\n')\n")
    hosts = tmp_path / "hosts"
    hosts.write_text("localhost:2\n")
    proc = subprocess.run([sys.executable, "-W", "ignore", "-m", "ferro", "run", "-n", "2", "--hostfile", str(hosts),
                           str(script), "a", "--b"], capture_output=True, text=True, timeout=60, env=clean_env())
    assert proc.returncode == 0, proc.stderr
    assert sorted(re.findall(r"hello (\d) 2 \['a', '--b'\]", proc.stdout)) == ["0", "1"], proc.stdout
    missing = subprocess.run([sys.executable, "-m", "ferro", "run", "-n", "2", "--hostfile", str(tmp_path / "no"),
                              str(script)], capture_output=True, text=True, timeout=60, env=clean_env())
    assert missing.returncode == 2 and "does not exist" in missing.stderr


def test_demo_with_two_processes_reaches_the_accuracy_of_one() -> None:
    pytest.importorskip("sklearn", reason="the digits come from scikit-learn")
    from ferro.demo import run as run_demo
    one = run_demo("cpu", epochs=2, progress=False, out=lambda _line: None).accuracy
    proc = subprocess.run([sys.executable, "-W", "ignore", "-m", "ferro", "demo", "--nprocs", "2", "--epochs", "2",
                           "--no-progress"], capture_output=True, text=True, timeout=120, env=clean_env())
    assert proc.returncode == 0, proc.stderr
    assert "data-parallel in 2 processes" in proc.stdout
    two = float(re.findall(r"epoch  2/2 .* test accuracy\s+([\d.]+)%", proc.stdout)[-1]) / 100
    assert two > 0.8 and abs(two - one) <= 0.05, (one, proc.stdout)


def test_a_rank_that_disagrees_with_the_launcher_is_refused() -> None:
    proc = subprocess.run([sys.executable, "-W", "ignore", "-c",
                           "import ferro.distributed as d\n"
                           "try:\n    d.init_process_group('mpi', rank=3, world_size=4)\n"
                           "except d.DistributedError as e:\n    print(e, d.is_initialized())\n"],
                          capture_output=True, text=True, timeout=60, env=clean_env())
    assert proc.returncode == 0, proc.stderr
    assert "rank=3 was passed, but backend 'mpi' says this process has rank 0" in proc.stdout
    assert proc.stdout.strip().endswith("False")
