"""Process groups as plugins: the hook, a third party's group (``loopback`` in tests/plugins), a broken
one isolated, ``ferro info``, and the ``nccl`` group's wiring (run on a GPU only where one is lent).

Each scenario runs in a fresh interpreter: plugin discovery happens once per process."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys

import pytest

import ferro
from ferro.backends import _hookspec

from conftest import clean_env, run_json


def test_the_hook_is_specified_and_documented_with_its_own_api_version() -> None:
    spec = _hookspec.FerroHookSpec.ferro_register_process_groups
    assert "ProcessGroupBackend" in inspect.getdoc(spec) and "PROCESS_GROUP_API_VERSION" in inspect.getdoc(spec)
    assert ferro.backends.PROCESS_GROUP_API_VERSION == 1


def test_a_third_party_process_group_runs_the_whole_api_in_one_process() -> None:
    """``loopback`` (ferro_testplugins.loopback, an entry point) is found, chosen by name, and every
    collective, the objects' too, goes through it; the group was really called."""
    got = run_json("""
        import json, warnings, importlib
        warnings.simplefilter('ignore')
        import numpy as np, ferro, ferro.distributed as dist
        calls = importlib.import_module('ferro_testplugins.loopback').calls
        found = {n: b.plugin for n, b in dist.process_group_backends().items()}
        dist.init_process_group('loopback', timeout=5)
        x = ferro.tensor([1.5, -2.0], dtype=ferro.bfloat16)
        dist.all_reduce(x, dist.ReduceOp.AVG)
        big = ferro.zeros(1, 2, dtype=ferro.bfloat16)
        dist.all_gather_into_tensor(big, x)
        outs = [ferro.zeros(2, dtype=ferro.bool)]
        dist.all_gather(outs, ferro.tensor([True, False]))
        box = [None]
        dist.all_gather_object(box, {'k': (1, 2)})
        w = dist.broadcast(x, 0, async_op=True)
        print(json.dumps({'found': found, 'rank': dist.get_rank(), 'size': dist.get_world_size(),
                          'backend': dist.get_backend(), 'x': x.float().tolist(), 'big': big.float().tolist(),
                          'outs': outs[0].tolist(), 'box': box[0]['k'], 'done': w.wait(),
                          'calls': calls}))
        dist.destroy_process_group()
    """)
    assert got["found"]["loopback"] == "testloopback" and got["found"]["mpi"] == "ferro-core"
    assert (got["rank"], got["size"], got["backend"]) == (0, 1, "loopback")
    assert got["x"] == [1.5, -2.0] and got["big"] == [[1.5, -2.0]] and got["outs"] == [True, False]
    assert got["box"] == [1, 2] and got["done"] is True
    assert got["calls"]["allreduce"] == 1 and got["calls"]["allgather"] >= 3 and got["calls"]["broadcast"] == 1


def test_a_process_group_of_another_api_version_is_isolated_and_listed_as_broken() -> None:
    got = run_json("""
        import json, warnings, ferro, ferro.distributed as dist
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter('always')
            names = sorted(dist.process_group_backends())
        print(json.dumps({'names': names, 'broken': ferro.backends.broken().get('testfuturegroup'),
                          'warned': [str(x.message) for x in w if 'testfuturegroup' in str(x.message)],
                          'toy': ferro.ones(2, device='toy').numpy().tolist()}))
    """)
    assert "future" not in got["names"] and {"mpi", "loopback"} <= set(got["names"])
    assert got["broken"] == "process group 'future' speaks process-group API version 2, this ferro speaks 1"
    assert len(got["warned"]) == 1, "warned once"
    assert got["toy"] == [1.0, 1.0], "the other plugins keep working"


def test_init_process_group_with_an_unknown_backend_names_the_installed_ones() -> None:
    proc = subprocess.run([sys.executable, "-W", "ignore", "-c",
                           "import ferro.distributed as d; d.init_process_group('gloo')"],
                          capture_output=True, text=True, timeout=60, env=clean_env())
    assert proc.returncode != 0
    assert "no process-group backend named 'gloo'; installed: " in proc.stderr and "mpi" in proc.stderr


def test_ferro_info_lists_the_process_groups() -> None:
    proc = subprocess.run([sys.executable, "-W", "ignore", "-m", "ferro", "info", "--json"], capture_output=True,
                          text=True, timeout=60, env=clean_env())
    assert proc.returncode == 0, proc.stderr
    groups = json.loads(proc.stdout)["process_groups"]
    assert groups["loopback"]["available"] and groups["loopback"]["plugin"] == "testloopback"
    assert groups["mpi"]["plugin"] == "ferro-core"
    assert "nccl" in groups and groups["nccl"]["plugin"] == "cuda"
    text = subprocess.run([sys.executable, "-W", "ignore", "-m", "ferro", "info"], capture_output=True, text=True,
                          timeout=60, env=clean_env()).stdout
    assert "process groups (ferro.distributed):" in text and "loopback" in text


def test_reduce_ops_refuse_what_pytorch_refuses_before_communicating() -> None:
    from ferro.distributed._buffers import reduce_op_name
    ReduceOp = ferro.distributed.ReduceOp
    assert reduce_op_name(ReduceOp.SUM, ferro.ones(1, dtype=ferro.bool), "all_reduce") == "max"  # OR
    assert reduce_op_name(ReduceOp.PRODUCT, ferro.ones(1, dtype=ferro.bool), "all_reduce") == "min"  # AND
    assert reduce_op_name(ReduceOp.AVG, ferro.ones(1), "all_reduce") == "sum"
    with pytest.raises(TypeError, match=r"all_reduce: ReduceOp\.AVG needs a floating-point or complex tensor"):
        reduce_op_name(ReduceOp.AVG, ferro.ones(1, dtype=ferro.int32), "all_reduce")
    with pytest.raises(TypeError, match=r"ReduceOp\.MAX is not defined for complex"):
        reduce_op_name(ReduceOp.MAX, ferro.ones(1, dtype=ferro.complex64), "reduce")
    with pytest.raises(ValueError, match=r"op must be a ferro\.distributed\.ReduceOp"):
        reduce_op_name("mean", ferro.ones(1), "all_reduce")


# -- nccl (ferro-cuda) -------------------------------------------------------------------------


def test_nccl_is_contributed_by_ferro_cuda_and_says_why_it_cannot_run() -> None:
    got = run_json("""
        import json, sys, warnings
        warnings.simplefilter('ignore')
        import ferro.distributed as dist
        b = dist.process_group_backends()['nccl']
        a = b.availability()
        try:
            dist.init_process_group('nccl')
            err = None
        except Exception as e:
            err = f'{type(e).__name__}: {e}'
        print(json.dumps({'plugin': b.plugin, 'available': bool(a), 'reason': a.reason,
                          'devices': list(b.device_types), 'err': err, 'cupy_loaded': 'cupy' in sys.modules}))
    """)
    assert got["plugin"] == "cuda" and got["devices"] == ["cuda"]
    if got["available"]:
        pytest.skip("NCCL can run here: tests/test_distributed_plugins.py::test_nccl_all_reduce_on_a_gpu covers it")
    assert got["reason"] and got["err"] == f"DistributedError: init_process_group: backend 'nccl' cannot run here: " \
                                           f"{got['reason']}"


@pytest.mark.parametrize(("dtype", "op", "want"), [
    ("float32", "sum", ("NCCL_FLOAT32", 1)), ("float64", "max", ("NCCL_FLOAT64", 1)),
    ("int64", "product", ("NCCL_INT64", 1)), ("uint8", "min", ("NCCL_UINT8", 1)),
    ("complex64", "sum", ("NCCL_FLOAT32", 2)), ("complex128", None, ("NCCL_UINT8", 16)),
    ("uint16", None, ("NCCL_UINT8", 2)), ("int16", None, ("NCCL_UINT8", 2)),
])
def test_nccl_datatypes_cover_every_wire_dtype(dtype: str, op: str | None, want: tuple[str, int]) -> None:
    from ferro_cuda._nccl import NCCL_OPS, nccl_type
    assert nccl_type(dtype, op, "all_reduce") == want
    assert set(NCCL_OPS) == {"sum", "product", "min", "max"}


def test_nccl_refuses_reductions_it_cannot_do_by_name() -> None:
    from ferro_cuda._nccl import nccl_type
    with pytest.raises(TypeError, match="all_reduce: NCCL cannot reduce int16 with sum; use backend 'mpi'"):
        nccl_type("int16", "sum", "all_reduce")
    with pytest.raises(TypeError, match="NCCL cannot reduce complex64 with product"):
        nccl_type("complex64", "product", "reduce")


def test_nccl_all_reduce_on_a_gpu() -> None:
    """A real NCCL job of one process on CUDA tensors, where a GPU with NCCL and mpi4py is lent."""
    import ferro.distributed as dist
    avail = dist.process_group_backends()["nccl"].availability()
    if not avail:
        pytest.skip(f"nccl cannot run here: {avail.reason}")
    proc = subprocess.run([sys.executable, "-W", "ignore", "-c", """
import ferro, ferro.distributed as dist
dist.init_process_group('nccl', timeout=30)
x = ferro.tensor([1.0, 2.0], device='cuda')
dist.all_reduce(x, dist.ReduceOp.AVG)
out = ferro.zeros(1, 2, device='cuda')
dist.all_gather_into_tensor(out, x)
assert x.tolist() == [1.0, 2.0] and out.tolist() == [[1.0, 2.0]], (x, out)
print('nccl ok')
"""], capture_output=True, text=True, timeout=120, env=clean_env())
    assert proc.returncode == 0 and "nccl ok" in proc.stdout, proc.stderr
