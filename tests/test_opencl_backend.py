"""ferro-opencl on the real pyopencl: devices, per-device dtypes, transfers, the default device, reasons.

PoCL (``pip install 'ferro-opencl[pocl]'``) gives a real OpenCL CPU device,
so these run everywhere the extra is installed; without pyopencl or a device
they skip with the reason.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import ferro

from conftest import run_json


@pytest.fixture
def opencl() -> ferro.backends.Backend:
    if "opencl" not in ferro.backends.installed():
        pytest.skip("ferro-opencl is not installed")
    return ferro.backends.get("opencl")


@pytest.fixture
def cl(opencl: ferro.backends.Backend) -> Any:
    return pytest.importorskip("pyopencl", reason="pyopencl is not installed (pip install 'ferro-opencl[pocl]')")


@pytest.fixture
def ocl(opencl: ferro.backends.Backend, cl: Any) -> ferro.backends.Backend:
    avail = opencl.availability()
    if not avail:
        pytest.skip(f"no OpenCL device here: {avail.reason}")
    return opencl


def _cl_devices(cl: Any) -> list[Any]:
    """The devices ferro-opencl numbers: every platform's, less those that cannot compile a kernel here."""
    from ferro_opencl._devices import find_devices
    return find_devices()[0]


# -- the plugin -------------------------------------------------------------


def test_plugin_hooks_and_registration(opencl: ferro.backends.Backend) -> None:
    import ferro_opencl.plugin as plugin
    from ferro_opencl._backend import OpenCLBackend
    assert plugin.ferro_plugin_api_version() == ferro.backends.PLUGIN_API_VERSION
    made = plugin.ferro_register_backends()
    assert [type(b) for b in made] == [OpenCLBackend] and made[0].name == "opencl"
    assert isinstance(opencl, OpenCLBackend) and opencl.plugin == "opencl"


def test_plugin_import_does_not_import_pyopencl(opencl: ferro.backends.Backend) -> None:
    got = run_json("""
        import json, sys
        import ferro_opencl.plugin
        backends = ferro_opencl.plugin.ferro_register_backends()
        print(json.dumps(['pyopencl' in sys.modules, [b.name for b in backends]]))
    """)
    assert got == [False, ["opencl"]]


# -- reasons --------------------------------------------------------------------

_UNAVAILABLE = """
    import json, sys, warnings
    warnings.simplefilter('ignore')
    {setup}
    import ferro
    if 'opencl' not in ferro.backends.installed():
        print(json.dumps(None))
    else:
        b = ferro.backends.get('opencl')
        print(json.dumps([ferro.backends.unavailable().get('opencl'), b.device_count()]))
"""


def test_missing_pyopencl_is_the_reason(opencl: ferro.backends.Backend) -> None:
    got = run_json(_UNAVAILABLE.format(setup="sys.modules['pyopencl'] = None  # as if not installed"))
    assert got == ["pyopencl is not installed (pip install 'ferro-opencl[pocl]')", 0]


def test_no_platform_is_the_reason(opencl: ferro.backends.Backend, cl: Any, tmp_path: Any) -> None:
    # The ICD loader reads only the vendor files OCL_ICD_VENDORS names: one that does not exist gives none.
    env = {"OCL_ICD_VENDORS": str(tmp_path / "no-such-driver.icd")}
    got = run_json(_UNAVAILABLE.format(setup=""), env=env)
    if got[0] is None:
        pytest.skip("this OpenCL ICD loader ignores OCL_ICD_VENDORS: cannot hide the platforms")
    reason, count = got
    assert reason.startswith("no OpenCL platform found") and "ferro-opencl[pocl]" in reason and count == 0


# -- devices and capabilities -----------------------------------------------------


def test_devices_names_and_info(ocl: ferro.backends.Backend, cl: Any) -> None:
    devices = _cl_devices(cl)
    assert "opencl" in ferro.backends.available()
    assert ocl.device_count() == len(devices) >= 1
    for i, d in enumerate(devices):
        assert ocl.device_name(i) == d.name.strip() != ""
        info = ocl.device_info(i)
        assert info["platform"] == d.platform.name.strip() and info["vendor"] == d.vendor.strip()
        assert info["compute units"] == str(d.max_compute_units)
        assert set(info["extensions"].split()) == set(d.extensions.split())


def test_dtypes_follow_the_device_extensions(ocl: ferro.backends.Backend, cl: Any) -> None:
    ints = {ferro.bool, ferro.uint8, ferro.int8, ferro.int16, ferro.int32, ferro.int64}
    for i, d in enumerate(_cl_devices(cl)):
        dtypes = ocl.dtypes(i)
        assert (ferro.float64 in dtypes) == ("cl_khr_fp64" in d.extensions.split())
        # the 16-bit floats are stored in 16 bits and computed in float32: every device, cl_khr_fp16 or not
        assert ints | {ferro.float32, ferro.float16, ferro.bfloat16} <= dtypes
        assert not dtypes & {ferro.complex64, ferro.complex128}


def test_numpy_round_trips_exactly(ocl: ferro.backends.Backend, cl: Any) -> None:
    from ferro_opencl._array import CLArray
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal((3, 5)).astype(np.float32), rng.integers(-2**40, 2**40, (4,), dtype=np.int64),
              rng.integers(0, 255, (2, 3, 2), dtype=np.uint8), rng.random(6) > 0.5, np.array(-7, np.int16),
              np.zeros((0, 3), np.int32), rng.standard_normal((4, 6)).astype(np.float32).T[::2]]  # a strided view
    if ferro.float64 in ocl.dtypes(0):
        arrays.append(np.array([np.pi, -0.0, np.inf, np.nan, 5e-324]))
    for a in arrays:
        x = ocl.from_numpy(a, 0)
        assert isinstance(x, CLArray) and x.queue is ocl.queue(0) and x.context.devices == [ocl.cl_device(0)]
        back = ocl.to_numpy(x)
        assert back.dtype == a.dtype and back.shape == a.shape
        np.testing.assert_array_equal(back, a, strict=True)
    ocl.synchronize(0)


def test_one_queue_per_device(ocl: ferro.backends.Backend) -> None:
    assert ocl.queue(0) is ocl.queue(0)
    assert ocl.queue(0).device == ocl.cl_device(0)


def test_creation_kernels_match_numpy(ocl: ferro.backends.Backend) -> None:
    for dtype, value in ((ferro.float32, 2.5), (ferro.int64, -3), (ferro.uint8, 200), (ferro.bool, True),
                         (ferro.float32, float("-inf"))):
        t = ferro.full((2, 3), value, dtype=dtype, device="opencl")
        assert t.device == ferro.device("opencl:0")
        np.testing.assert_array_equal(t.numpy(), np.full((2, 3), value, dtype=dtype.name), strict=True)
    assert ferro.zeros(0, 4, device="opencl").shape == (0, 4)
    assert ferro.empty(3, dtype=ferro.int32, device="opencl").shape == (3,)


def test_rng_state_round_trips(ocl: ferro.backends.Backend) -> None:
    saved = ocl.get_rng_state(0)
    try:
        ocl.manual_seed(123, 0)
        a = ocl.get_rng_state(0)
        ocl.manual_seed(124, 0)
        assert ocl.get_rng_state(0) != a
        ocl.set_rng_state(a, 0)
        assert ocl.get_rng_state(0) == a
    finally:
        ocl.set_rng_state(saved, 0)


def test_no_dlpack_says_what_to_do(ocl: ferro.backends.Backend) -> None:
    with pytest.raises(BufferError, match=r"\.to\('cpu'\)"):
        ferro.tensor([1.0], device="opencl").__dlpack__()


# -- the default device ------------------------------------------------------------


def test_default_device_from_the_environment(ocl: ferro.backends.Backend, cl: Any,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYOPENCL_CTX", raising=False)
    monkeypatch.delenv("FERRO_OPENCL_DEVICE", raising=False)
    assert ocl.default_device_index() == 0
    monkeypatch.setenv("FERRO_OPENCL_DEVICE", "5")
    assert ocl.default_device_index() == 5  # out of range is the device string's error, as for "opencl:5"
    monkeypatch.setenv("FERRO_OPENCL_DEVICE", "gpu")
    with pytest.raises(ValueError, match="FERRO_OPENCL_DEVICE='gpu'"):
        ocl.default_device_index()
    monkeypatch.delenv("FERRO_OPENCL_DEVICE")
    # pyopencl's spelling: platform and device, each an index or a piece of the name.
    devices = _cl_devices(cl)
    last = devices[-1]
    platform_index = cl.get_platforms().index(last.platform)
    device_index = last.platform.get_devices().index(last)
    monkeypatch.setenv("PYOPENCL_CTX", f"{platform_index}:{device_index}")
    assert ocl.default_device_index() == len(devices) - 1
    monkeypatch.setenv("PYOPENCL_CTX", last.platform.name.strip()[:6].upper())
    first_on_platform = next(i for i, d in enumerate(devices) if d.platform == last.platform)
    assert ocl.default_device_index() == first_on_platform
    monkeypatch.setenv("PYOPENCL_CTX", "no platform is called this")
    assert ocl.default_device_index() == 0
