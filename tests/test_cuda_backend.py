"""ferro-cuda on the real CuPy: the exact reason when CUDA cannot run, and the device paths when it can.

Without a GPU (as in CI) the backend must be listed, unavailable with the reason
CuPy's runtime gives, and refuse every use with that reason while cpu keeps
working. The GPU tests run where ``cuda`` is available and skip, saying so,
elsewhere.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import ferro
from ferro.errors import BackendUnavailableError

from conftest import run_json


@pytest.fixture
def cuda() -> ferro.backends.Backend:
    if "cuda" not in ferro.backends.installed():
        pytest.skip("ferro-cuda is not installed")
    return ferro.backends.get("cuda")


@pytest.fixture
def cupy(cuda: ferro.backends.Backend) -> Any:
    return pytest.importorskip("cupy", reason="CuPy is not installed (pip install 'ferro-cuda[cupy]')")


@pytest.fixture
def no_gpu(cuda: ferro.backends.Backend, cupy: Any) -> ferro.backends.Backend:
    if cuda.availability():
        pytest.skip("a CUDA GPU is available here: the paths without one cannot be exercised")
    return cuda


@pytest.fixture
def gpu(cuda: ferro.backends.Backend, cupy: Any) -> ferro.backends.Backend:
    avail = cuda.availability()
    if not avail:
        pytest.skip(f"no usable CUDA GPU here: {avail.reason}")
    return cuda


def _expected_reason_start(cupy: Any) -> str:
    """What the reason must begin with, asked of CuPy's runtime directly."""
    rt = cupy.cuda.runtime
    if rt.driverGetVersion() == 0:
        return "no NVIDIA CUDA driver is installed"
    try:
        count = rt.getDeviceCount()
    except cupy.cuda.runtime.CUDARuntimeError as e:
        return {35: "the NVIDIA driver is too old", 100: "the NVIDIA driver is installed but no CUDA GPU"}.get(
            e.status, "")
    return "" if count else "the NVIDIA driver is installed but no CUDA GPU"


# -- the plugin -------------------------------------------------------------


def test_plugin_hooks_and_registration(cuda: ferro.backends.Backend) -> None:
    import ferro_cuda.plugin as plugin
    from ferro_cuda._backend import CudaBackend
    assert plugin.ferro_plugin_api_version() == ferro.backends.PLUGIN_API_VERSION
    made = plugin.ferro_register_backends()
    assert [type(b) for b in made] == [CudaBackend] and made[0].name == "cuda"
    assert isinstance(cuda, CudaBackend) and cuda.plugin == "cuda"
    assert "cuda" not in ferro.backends.broken()


def test_plugin_import_does_not_import_cupy(cuda: ferro.backends.Backend) -> None:
    got = run_json("""
        import json, sys
        import ferro_cuda.plugin
        backends = ferro_cuda.plugin.ferro_register_backends()  # constructing the backend is free too
        print(json.dumps(['cupy' in sys.modules, [b.name for b in backends]]))
    """)
    assert got == [False, ["cuda"]]


def test_missing_cupy_is_the_reason() -> None:
    got = run_json("""
        import json, sys, warnings
        sys.modules['cupy'] = None  # `import cupy` now fails exactly as if it were not installed
        warnings.simplefilter('ignore')
        import ferro
        if 'cuda' not in ferro.backends.installed():
            print(json.dumps(None))
        else:
            print(json.dumps([ferro.backends.unavailable().get('cuda'), ferro.backends.get('cuda').device_count()]))
    """)
    if got is None:
        pytest.skip("ferro-cuda is not installed")
    assert got == ["cupy is not installed (pip install 'ferro-cuda[cupy]')", 0]


# -- without a GPU -------------------------------------------------------------


def test_without_a_gpu_the_reason_is_exact(no_gpu: ferro.backends.Backend, cupy: Any) -> None:
    assert "cuda" in ferro.backends.installed()
    assert "cuda" not in ferro.backends.available()
    reason = ferro.backends.unavailable()["cuda"]
    assert reason == no_gpu.availability().reason
    start = _expected_reason_start(cupy)
    assert start, f"CuPy's runtime gives no recognised cause, yet the backend says: {reason}"
    assert reason.startswith(start), reason


def test_without_a_gpu_every_use_raises_the_reason(no_gpu: ferro.backends.Backend) -> None:
    reason = no_gpu.availability().reason
    for use in (lambda: ferro.zeros(2, device="cuda"), lambda: ferro.set_backend("cuda"),
                lambda: ferro.tensor([1.0], device="cuda:0")):
        with pytest.raises(BackendUnavailableError) as info:
            use()
        assert reason in str(info.value) and info.value.backend == "cuda"
    assert ferro.backends.current_backend() == "cpu"
    assert (ferro.zeros(2) + 1).tolist() == [1.0, 1.0]


def test_without_a_gpu_queries_answer_quietly(no_gpu: ferro.backends.Backend) -> None:
    assert no_gpu.device_count() == 0
    assert no_gpu.memory_stats(0) == {}
    assert not no_gpu.supports("add", ferro.float32)


#: Every ferro.cuda function that needs a GPU, called with its usual arguments.
_CUDA_CALLS: list[tuple[str, tuple[Any, ...]]] = [
    ("current_device", ()), ("set_device", (0,)), ("get_device_name", ()), ("synchronize", ()),
    ("current_stream", ()), ("default_stream", ()), ("memory_allocated", ()), ("max_memory_allocated", ()),
    ("reset_peak_memory_stats", ()), ("memory_reserved", ()), ("empty_cache", ()),
    ("get_rng_state", ()), ("Stream", ()), ("Event", ()),
]


def test_ferro_cuda_without_a_gpu_answers_and_raises_the_reason(no_gpu: ferro.backends.Backend) -> None:
    assert ferro.cuda.is_available() is False and ferro.cuda.device_count() == 0
    reason = no_gpu.availability().reason
    for name, args in _CUDA_CALLS:
        with pytest.raises(BackendUnavailableError) as info:
            getattr(ferro.cuda, name)(*args)
        assert info.value.reason == reason and info.value.backend == "cuda", name
    ferro.cuda.manual_seed(1)  # seeding does nothing without a GPU, as in PyTorch
    ferro.cuda.manual_seed_all(1)
    with ferro.cuda.stream(None):  # no stream: nothing to do, nothing raised (as torch.cuda.stream(None))
        pass
    # The TF32 switch is a setting: it can be set before CUDA can run, and is applied when it starts.
    try:
        ferro.cuda.matmul.allow_tf32 = True
        assert ferro.cuda.matmul.allow_tf32 is True
    finally:
        ferro.cuda.matmul.allow_tf32 = False
    assert (ferro.ones(2) * 2).tolist() == [2.0, 2.0]


def test_ferro_cuda_without_the_plugin() -> None:
    got = run_json("""
        import json, warnings
        warnings.simplefilter('ignore')
        import ferro
        from ferro.errors import BackendUnavailableError
        try:
            ferro.cuda.synchronize()
            err = None
        except BackendUnavailableError as e:
            err = e.reason
        print(json.dumps([ferro.cuda.is_available(), ferro.cuda.device_count(), err]))
    """, env={"FERRO_DISABLE_PLUGINS": "cuda"})
    assert got == [False, 0, "ferro-cuda is not installed (pip install 'ferro-core[cuda]')"]


def test_import_ferro_imports_neither_cupy_nor_ferro_cuda() -> None:
    got = run_json("""
        import json, sys
        import ferro
        ferro.cuda.matmul.allow_tf32
        print(json.dumps(['cupy' in sys.modules, 'ferro_cuda' in sys.modules, hasattr(ferro, 'cuda')]))
    """)
    assert got == [False, False, True]


def test_ferro_ops_and_info_show_the_reason(no_gpu: ferro.backends.Backend) -> None:
    from conftest import run_python
    reason = no_gpu.availability().reason
    compact = run_python("import sys; from ferro.cli import main; sys.exit(main(['ops', '--backend', 'cpu,cuda']))")
    add = next(line.split() for line in compact.stdout.splitlines() if line.startswith("add "))
    assert add == ["add", "BIFC", "-"], "cpu has add at every dtype group, the cuda column is empty"
    table = run_python("import sys; from ferro.cli import main; "
                       "sys.exit(main(['ops', '--wide', '--backend', 'cpu,cuda']))")
    lines = table.stdout.splitlines()
    assert lines[0].split() == ["op", "cpu", "cuda"]
    add = next(line.split() for line in lines if line.startswith("add "))
    assert add[-1] == "-" and "f32" in add, "cpu has add, the cuda column is empty"
    assert f"cuda: unavailable ({reason}); its column is empty" in lines
    info = run_python("import sys; from ferro.cli import main; sys.exit(main(['info']))").stdout
    assert f"cuda     unavailable: {reason}" in info


def test_kernel_table_builds_from_cupys_namespace(cuda: ferro.backends.Backend, cupy: Any) -> None:
    # Building the table touches no GPU: it proves core's generic kernels find CuPy's functions.
    table = cuda.kernels(0)
    for op in ("add", "exp", "matmul", "sum", "argsort", "permute", "cat", "full", "randn", "cast", "where"):
        assert callable(table[op]), op
    assert cuda.kernels(1).keys() == table.keys()  # cuda:1's kernels: the same, run inside Device(1)
    for name in ("gelu", "gelu_backward", "softmax", "log_softmax_backward", "layer_norm", "layer_norm_backward",
                 "cross_entropy", "cross_entropy_backward", "fused_adam", "fused_sgd", "erf", "searchsorted", "unique"):
        assert callable(table[name]), name  # ferro's own kernels and CuPy's device versions are listed
    assert table["index_put"].__qualname__.startswith("index_put_kernel")
    dtypes = cuda.dtypes(0)
    assert {ferro.float16, ferro.complex64, ferro.bool} <= dtypes
    # bfloat16 exactly where CuPy has it (tests/test_cuda_bfloat16.py checks it op by op)
    assert (ferro.bfloat16 in dtypes) == (cuda.cupy_bfloat16() is not None)


# -- with a GPU (skipped, with the reason, where there is none) ------------------


def test_gpu_devices(gpu: ferro.backends.Backend, cupy: Any) -> None:
    n = gpu.device_count()
    assert n == cupy.cuda.runtime.getDeviceCount() > 0
    assert "cuda" in ferro.backends.available()
    for i in range(n):
        assert gpu.device_name(i)
        info = gpu.device_info(i)
        assert info["compute capability"].replace(".", "") == cupy.cuda.Device(i).compute_capability


def test_gpu_round_trip_and_kernels(gpu: ferro.backends.Backend, cupy: Any) -> None:
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    x = gpu.from_numpy(a, 0)
    assert isinstance(x, cupy.ndarray) and x.device.id == 0
    np.testing.assert_array_equal(gpu.to_numpy(x), a)
    t = ferro.tensor(a, device="cuda")
    np.testing.assert_array_equal((t * 2 + 1).sum(0).cpu().numpy(), (a * 2 + 1).sum(0))
    np.testing.assert_array_equal(ferro.argsort(ferro.tensor([3, 1, 2, 1], device="cuda")).tolist(), [1, 3, 2, 0])
    gpu.synchronize(0)
    stats = gpu.memory_stats(0)
    assert set(stats) == {"allocated", "cached", "reserved", "limit", "peak"} and stats["allocated"] > 0
    assert stats["peak"] >= stats["allocated"]


def test_gpu_seeded_draws_match_cpu(gpu: ferro.backends.Backend) -> None:
    ferro.manual_seed(7)
    on_gpu = ferro.rand(5, device="cuda").cpu().tolist()
    ferro.manual_seed(7)
    assert ferro.rand(5).tolist() == pytest.approx(on_gpu)


def test_generated_plugin_kernels_refuse_dtypes_without_c_up_front(cupy: Any) -> None:
    """A plugin op's kernel generated from its expression has no complex C: the op is refused there when it is
    bound (UnsupportedOperationError, as the claims say), not failing with a TypeError at the launch."""
    pytest.importorskip("ferro_testplugins", reason="the test plugins are not installed (tests/plugins)")
    from ferro._core.records import REGISTRY
    from ferro_cuda._backend import CudaBackend
    assert callable(ferro.ops.squared_difference)  # loads the plugin ops
    backend = CudaBackend()
    assert "squared_difference" in backend.kernels(0)
    refused = backend.unsupported(0)
    assert {ferro.complex64, ferro.complex128} <= refused["squared_difference"]
    assert ferro.float32 not in refused.get("squared_difference", frozenset())
    assert "complex64" in (backend.refuses("squared_difference", ferro.complex64, 0) or "")
    assert backend.refuses("squared_difference", ferro.float32, 0) is None
    assert REGISTRY["squared_difference"].plugin  # the generated kernels are for plugin ops only
