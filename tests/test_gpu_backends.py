"""The CUDA and OpenCL plugins: graceful absence with the exact reason, devices, capabilities, transfers.

These run the real libraries: CuPy without a GPU (as in CI) must report why it
cannot run; PoCL gives a real OpenCL CPU device.
"""

from __future__ import annotations

import numpy as np
import pytest

import ferro
from ferro.errors import BackendUnavailableError

from conftest import run_json


def _backend(name: str) -> ferro.backends.Backend:
    if name not in ferro.backends.installed():
        pytest.skip(f"ferro-{name} is not installed")
    return ferro.backends.get(name)


@pytest.mark.parametrize("name, library", [("cuda", "cupy"), ("opencl", "pyopencl")])
def test_plugin_import_does_not_import_the_library(name: str, library: str) -> None:
    _backend(name)
    got = run_json(f"""
        import json, sys, warnings, ferro
        warnings.simplefilter('ignore')
        ferro.backends.installed()  # loads every plugin module and constructs the backends
        print(json.dumps('{library}' in sys.modules))
    """)
    assert got is False


def test_cuda_without_a_gpu_is_unavailable_with_the_reason() -> None:
    cuda = _backend("cuda")
    pytest.importorskip("cupy")
    avail = cuda.availability()
    if avail:
        pytest.skip("a CUDA GPU is present: the absence paths cannot be exercised here")
    assert "cuda" not in ferro.backends.available()
    reason = ferro.backends.unavailable()["cuda"]
    assert reason == avail.reason and any(w in reason for w in ("driver", "GPU", "CUDA"))
    assert cuda.device_count() == 0
    for make in (lambda: ferro.zeros(2, device="cuda"), lambda: ferro.set_backend("cuda"),
                 lambda: ferro.ones(2).to("cuda:0"), lambda: ferro.ones(2).cuda()):
        with pytest.raises(BackendUnavailableError) as info:
            make()
        assert reason in str(info.value)
    assert ferro.backends.current_backend() == "cpu" and (ferro.ones(2) + 1).tolist() == [2.0, 2.0]
    assert not cuda.supports("add", ferro.float32) and cuda.capabilities() == {}


def test_cuda_without_cupy_says_so() -> None:
    _backend("cuda")
    got = run_json("""
        import json, sys, warnings
        sys.modules['cupy'] = None  # makes `import cupy` fail as if it were not installed
        warnings.simplefilter('ignore')
        import ferro
        print(json.dumps(ferro.backends.unavailable().get('cuda', '')))
    """)
    assert "cupy is not installed" in got


def test_opencl_devices_and_capabilities() -> None:
    ocl = _backend("opencl")
    pytest.importorskip("pyopencl")
    avail = ocl.availability()
    if not avail:
        pytest.skip(f"no OpenCL device: {avail.reason}")
    import pyopencl as cl
    devices = [d for p in cl.get_platforms() for d in p.get_devices()]
    assert ocl.device_count() == len(devices) > 0
    for i, d in enumerate(devices):
        assert ocl.device_name(i) == d.name.strip()
        dtypes = ocl.dtypes(i)
        assert (ferro.float64 in dtypes) == ("cl_khr_fp64" in d.extensions)
        assert (ferro.float16 in dtypes) == ("cl_khr_fp16" in d.extensions)
        assert ferro.bfloat16 not in dtypes and ferro.complex64 not in dtypes
        assert ocl.device_info(i)["platform"] == d.platform.name


def test_opencl_transfers_round_trip_exactly() -> None:
    ocl = _backend("opencl")
    if not ocl.availability():
        pytest.skip(ocl.availability().reason)
    rng = np.random.default_rng(0)
    for dtype in ("float32", "int64", "bool", "uint8"):
        a = (rng.standard_normal((3, 5)) * 10).astype(dtype)
        t = ferro.tensor(a, device="opencl:0")
        assert t.device == ferro.device("opencl:0") and str(t.device) == "opencl:0"
        np.testing.assert_array_equal(t.to("cpu").numpy(), a)
        np.testing.assert_array_equal(t.numpy(), a)
    with pytest.raises(ferro.errors.UnsupportedOperationError, match="bfloat16"):
        ferro.ones(2, dtype=ferro.bfloat16).to("opencl")
    with pytest.raises(ferro.errors.UnsupportedOperationError, match=r"'add'.*'opencl'.*cpu"):
        ferro.tensor([1.0], device="opencl") + 1


def test_opencl_default_device_from_env() -> None:
    _backend("opencl")
    got = run_json("""
        import json, warnings, ferro
        warnings.simplefilter('ignore')
        print(json.dumps(ferro.backends.get('opencl').default_device_index()))
    """, env={"FERRO_OPENCL_DEVICE": "3"})
    assert got == 3


def test_cpu_pool_reuses_large_buffers_only_after_their_last_view_dies() -> None:
    cpu = ferro.backends.get("cpu")
    n = 1 << 19  # 2 MiB of float32: pooled
    a = ferro.ones(n)
    b = a + 1
    view = b[::2]
    del b
    before = cpu.memory_stats(0)["allocated"]
    c = a * 3  # must not reuse b's buffer: its view is alive
    view += 1
    assert c[:4].tolist() == [3.0] * 4 and view[:2].tolist() == [3.0, 3.0]
    assert cpu.memory_stats(0)["allocated"] > before
    del view
    stats = cpu.memory_stats(0)
    assert stats["cached"] >= 4 * n
    d = a * 5  # now reuses a cached buffer
    assert cpu.memory_stats(0)["cached"] == stats["cached"] - 4 * n
    assert d[:3].tolist() == [5.0] * 3 and c[:3].tolist() == [3.0] * 3
