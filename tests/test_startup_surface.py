"""What PyTorch scripts call first, before any model code: each behaves as PyTorch's does here (a machine
with ferro's cpu and opencl backends and no GPU), compared with torch where torch answers the same question."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import ferro
import ferro.backends.cuda
import ferro.backends.cudnn as cudnn
import ferro.nn.parallel
from ferro.data import RandomSampler

torch = pytest.importorskip("torch")


def test_accelerator_on_the_cpu_backend() -> None:
    assert ferro.accelerator.is_available() is ferro.cuda.is_available()
    if not ferro.cuda.is_available():
        assert ferro.accelerator.current_accelerator() is None
        assert ferro.accelerator.device_count() == 0
        with pytest.raises(ferro.errors.BackendUnavailableError, match="no accelerator"):
            ferro.accelerator.current_device_index()
    device = ferro.accelerator.current_accelerator() if ferro.accelerator.is_available() else "cpu"
    assert ferro.ones(2, device=device).sum().item() == 2.0


def test_accelerator_is_the_chosen_backend() -> None:
    if "opencl" not in ferro.backends.available():
        pytest.skip("opencl is not available here")
    with ferro.use_backend("opencl"):
        assert ferro.accelerator.is_available()
        assert ferro.accelerator.current_accelerator() == ferro.device("opencl")
        assert ferro.accelerator.device_count() == ferro.backends.get("opencl").device_count()
        assert ferro.accelerator.current_device_index() == 0
        x = ferro.ones(3, device=ferro.accelerator.current_accelerator())
        ferro.accelerator.synchronize()
        assert x.device.type == "opencl"


def test_backend_flag_namespaces() -> None:
    old = cudnn.benchmark
    try:
        ferro.backends.cudnn.benchmark = True
        ferro.backends.cudnn.deterministic = True
        assert cudnn.benchmark is True and ferro.backends.cudnn.deterministic is True
    finally:
        cudnn.benchmark, cudnn.deterministic = old, False
    with cudnn.flags(enabled=False):
        assert cudnn.enabled is False
    assert cudnn.enabled is True
    ferro.backends.cuda.matmul.allow_tf32 = True
    assert ferro.backends.cuda.matmul.allow_tf32 is True
    ferro.backends.cuda.matmul.allow_tf32 = False
    with pytest.raises(AttributeError, match="allow_tf32"):
        ferro.backends.cuda.matmul.allow_tf33 = True
    ferro.backends.cuda.enable_flash_sdp(False)
    assert not ferro.backends.cuda.flash_sdp_enabled()
    ferro.backends.cuda.enable_flash_sdp(True)
    assert ferro.backends.mps.is_available() is torch.backends.mps.is_available() is False


def test_cuda_seeding_without_a_gpu_does_nothing_as_pytorch() -> None:
    if ferro.cuda.is_available():
        pytest.skip("a GPU is here")
    state = ferro.get_rng_state()
    torch.cuda.manual_seed_all(0)  # PyTorch: silently nothing
    ferro.cuda.manual_seed_all(0)
    ferro.cuda.manual_seed(0)
    assert np.array_equal(ferro.get_rng_state().numpy(), state.numpy())


@pytest.mark.parametrize("args", [(3, 4), (0,), (2, 0, 3), ()])
def test_tensor_constructor_with_sizes(args: tuple[int, ...]) -> None:
    assert tuple(ferro.Tensor(*args).shape) == tuple(torch.Tensor(*args).shape)
    assert ferro.Tensor(*args).dtype == ferro.float32


def test_tensor_constructor_with_data_or_size() -> None:
    np.testing.assert_array_equal(ferro.Tensor([1, 2]).numpy(), torch.Tensor([1, 2]).numpy())
    assert ferro.Tensor(ferro.Size([2, 5])).shape == (2, 5)
    with pytest.raises(TypeError, match="Tensor"):
        ferro.Tensor(2, 2.5)


@pytest.mark.parametrize("name", ["FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "ByteTensor",
                                  "CharTensor", "ShortTensor", "IntTensor", "LongTensor", "BoolTensor"])
def test_legacy_typed_tensors(name: str) -> None:
    ours, theirs = getattr(ferro, name), getattr(torch, name)
    assert str(ours(2, 3).dtype).split(".")[-1] == str(theirs(2, 3).dtype).split(".")[-1]
    assert ours(2, 3).shape == (2, 3)
    data = [1, 0, 1]
    np.testing.assert_array_equal(ours(data).float().numpy(), theirs(data).float().numpy())
    assert isinstance(ours(data), ours) and isinstance(ours(data), ferro.Tensor)
    other = "LongTensor" if name != "LongTensor" else "FloatTensor"
    assert not isinstance(ours(data), getattr(ferro, other))
    assert not isinstance(data, ours)


@pytest.mark.parametrize("fn", ["empty", "zeros", "ones", "rand", "randn"])
def test_creation_takes_size_keyword(fn: str) -> None:
    assert getattr(ferro, fn)(size=(2, 3)).shape == getattr(torch, fn)(size=(2, 3)).shape
    assert getattr(ferro, fn)(size=[4], dtype=ferro.float64).dtype == ferro.float64
    with pytest.raises(TypeError, match="both"):
        getattr(ferro, fn)(2, size=(2,))


def test_range_as_an_index() -> None:
    a = np.arange(24.0).reshape(4, 6)
    x, t = ferro.tensor(a), torch.tensor(a)
    for key in (range(1, 3), (range(2), slice(None)), (slice(None), range(0, 6, 2))):
        np.testing.assert_array_equal(x[key].numpy(), t[key].numpy())
    x[range(2)] = 0.0
    t[range(2)] = 0.0
    np.testing.assert_array_equal(x.numpy(), t.numpy())


def test_device_flags() -> None:
    x, t = ferro.ones(2), torch.ones(2)
    for flag in (*ferro._core.tensor.NEVER_FLAGS, "is_cpu", "is_cuda"):
        assert getattr(x, flag) is getattr(t, flag), flag


def test_layout_methods() -> None:
    a = np.arange(24.0).reshape(2, 3, 4)
    x, t = ferro.tensor(a), torch.tensor(a)
    for f in (lambda v: v, lambda v: v.transpose(0, 1), lambda v: v[:, :1], lambda v: v[:, 1:], lambda v: v[..., ::2],
              lambda v: v[:0], lambda v: v[:, :, :1], lambda v: v.permute(2, 0, 1).contiguous()):
        assert f(x).is_contiguous() is f(t).is_contiguous()
    assert x.view_as(ferro.ones(6, 4)).shape == (6, 4)
    assert x.transpose(0, 1).reshape_as(ferro.ones(4, 6)).shape == (4, 6)
    assert x.ndimension() == 3
    with pytest.raises(ferro.errors.ShapeError):
        x.transpose(0, 1).view_as(ferro.ones(24))


def test_random_sampler_draws_lazily() -> None:
    """10**10 draws with replacement would take 75 GiB up front; drawn as used, the first ones come at once."""
    sampler = RandomSampler(range(10), replacement=True, num_samples=10**10, generator=ferro.Generator().manual_seed(0))
    assert len(sampler) == 10**10
    first = list(itertools.islice(iter(sampler), 1000))
    assert len(first) == 1000 and set(first) == set(range(10))
    counts = np.bincount(first, minlength=10)
    assert counts.min() > 60  # uniform: 100 each on average
    perms = list(RandomSampler(range(7), num_samples=17, generator=ferro.Generator().manual_seed(1)))
    assert len(perms) == 17 and sorted(perms[:7]) == list(range(7)) and sorted(perms[7:14]) == list(range(7))


def test_legacy_new() -> None:
    x, t = ferro.ones(2, dtype=ferro.float64), torch.ones(2, dtype=torch.float64)
    assert x.new(3, 4).shape == t.new(3, 4).shape and x.new(3, 4).dtype == ferro.float64
    np.testing.assert_array_equal(x.new([1, 2]).numpy(), t.new([1, 2]).numpy())
    assert x.new().shape == t.new().shape
    assert x.new(ferro.Size([2, 1])).shape == (2, 1)


def test_global_switches_as_torch() -> None:
    try:
        for lib in (ferro, torch):
            lib.use_deterministic_algorithms(True, warn_only=True)
        assert ferro.are_deterministic_algorithms_enabled() is torch.are_deterministic_algorithms_enabled() is True
        assert ferro.get_deterministic_debug_mode() == torch.get_deterministic_debug_mode() == 1
        for lib in (ferro, torch):
            lib.set_deterministic_debug_mode("error")
        assert ferro.get_deterministic_debug_mode() == torch.get_deterministic_debug_mode() == 2
        assert ferro.is_deterministic_algorithms_warn_only_enabled() is \
            torch.is_deterministic_algorithms_warn_only_enabled() is False
    finally:
        for lib in (ferro, torch):
            lib.use_deterministic_algorithms(False)
    try:
        for lib in (ferro, torch):
            lib.set_float32_matmul_precision("medium")
        assert ferro.get_float32_matmul_precision() == torch.get_float32_matmul_precision() == "medium"
    finally:
        for lib in (ferro, torch):
            lib.set_float32_matmul_precision("highest")
    with pytest.raises(RuntimeError):
        ferro.set_float32_matmul_precision("low")
    assert ferro.get_default_device() == ferro.backends.current_device()
    ferro.set_default_device("cpu")
    assert ferro.ones(1).device.type == "cpu"
