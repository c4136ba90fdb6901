"""The CPU backend's caching allocator: large buffers are reused only after their last view dies."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import ferro
from ferro_cpu._pool import BufferPool

torch = pytest.importorskip("torch")


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


def _where_cases() -> list[tuple[str, Any, Any, Any]]:
    """(name, condition, x, y) as NumPy values: large results (pooled), broadcast conditions, scalars."""
    rng = np.random.default_rng(0)
    big = rng.standard_normal((16, 4, 64, 64)).astype(np.float32)
    causal = np.tril(np.ones((64, 64), bool))[None, None]
    return [("masked fill", ~causal, -np.inf, big), ("tensor both", causal, big, big[::-1].copy()),
            ("scalar tensor", rng.random(big.shape) > 0.5, 2.5, big), ("float64", causal, big.astype(np.float64), 0.0),
            ("int64 and float", causal, np.arange(64 * 64 * 64).reshape(64, 64, 64), big[0, :1]),
            ("broadcast x", causal, big[:, :, :1], big), ("bool", causal, True, np.repeat(big > 0, 4, axis=1))]


@pytest.mark.parametrize(("condition", "x", "y"), [c[1:] for c in _where_cases()], ids=[c[0] for c in _where_cases()])
def test_cpu_where_into_pooled_buffers_matches_torch(condition: Any, x: Any, y: Any) -> None:
    """Large where results come from the pool (a fill, then a masked copy): values and dtypes as PyTorch's."""
    cpu = ferro.backends.get("cpu")
    f, t = ([lib.tensor(v) if isinstance(v, np.ndarray) else v for v in (condition, x, y)] for lib in (ferro, torch))
    before = cpu.memory_stats(0)["allocated"]
    got = ferro.where(*f)
    assert cpu.memory_stats(0)["allocated"] >= before + got.numel() * got.element_size()
    expected = torch.where(*t)
    assert str(got.dtype) == str(expected.dtype).replace("torch", "ferro")
    np.testing.assert_array_equal(got.numpy(), expected.numpy())


def test_cpu_masked_fill_gradient_through_pooled_where() -> None:
    x = np.random.default_rng(1).standard_normal((16, 4, 64, 64)).astype(np.float32)
    mask = np.tril(np.ones((64, 64), bool))[None, None] == 0
    fx, tx = ferro.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    fx.masked_fill(ferro.tensor(mask), -1e9).exp().sum().backward()
    tx.masked_fill(torch.tensor(mask), -1e9).exp().sum().backward()
    np.testing.assert_allclose(fx.grad.numpy(), tx.grad.numpy(), rtol=1e-6)


def test_cpu_where_large_and_small_agree_on_an_out_of_range_scalar() -> None:
    """The pooled path converts a Python scalar as np.where does (300 into uint8 wraps to 44) at every size."""
    for n in (8, 1 << 21):
        condition = ferro.tensor(np.arange(n) % 2 == 0)
        got = ferro.where(condition, ferro.ones(n, dtype=ferro.uint8), 300)
        assert got.dtype == ferro.uint8 and got[:4].tolist() == [1, 44, 1, 44]


@pytest.mark.parametrize("dtype", ["bool", "uint8", "int32", "float16", "bfloat16", "float32", "float64", "complex64"])
def test_cpu_zeros_on_reused_buffers_match_torch(dtype: str) -> None:
    """zeros on a small array and on a pooled one reused from a filled tensor: every byte zero, as torch's."""
    cpu = ferro.backends.get("cpu")
    dt, tdt = getattr(ferro, dtype), getattr(torch, dtype)
    for shape in ((), (0, 3), (5, 7), (1 << 19, 2)):  # the last: 1 MiB and more, pooled
        filled = ferro.ones(shape, dtype=dt)
        pooled = filled.numel() * filled.element_size() >= 1 << 20
        cached = cpu.memory_stats(0)["cached"]
        del filled
        z = ferro.zeros(shape, dtype=dt)
        assert not pooled or cpu.memory_stats(0)["cached"] == cached  # the filled buffer, reused
        want = torch.zeros(shape, dtype=tdt)
        if dtype == "bfloat16":
            z, want = z.float(), want.float()
        got, want = z.numpy(), want.numpy()
        assert got.dtype == want.dtype and got.shape == want.shape
        assert got.tobytes() == want.tobytes()


def test_cpu_relu_on_reused_buffers_and_full_negative_zero() -> None:
    """relu written over pooled zeros (a buffer reused from a filled tensor); full(-0.0) keeps its sign."""
    x = np.random.default_rng(0).standard_normal((1 << 19,)).astype(np.float32)
    x[:3] = [np.nan, -0.0, -np.inf]
    filled = ferro.full((1 << 19,), 7.0)
    del filled
    got = ferro.relu(ferro.tensor(x)).numpy()
    assert got.tobytes() == np.maximum(x, np.float32(0)).tobytes()
    assert ferro.full((3,), -0.0).numpy().view(np.uint32).tolist() == [1 << 31] * 3


def test_cpu_pool_floor_pools_small_scratch() -> None:
    """A kernel's scratch below the default 1 MiB floor is pooled when it asks with a lower ``floor``: the
    freed buffer is cached and the next request of that size reuses it; without it, it is NumPy's own."""
    pool = BufferPool()
    a = pool.empty((256, 256), np.float32, 64 << 10)  # 256 KiB
    assert pool.stats()["allocated"] == a.nbytes
    address = a.ctypes.data
    del a
    assert pool.stats() == {"allocated": 0, "cached": 256 << 10, "peak_allocated": 256 << 10}
    b = pool.empty((128, 512), np.float32, 64 << 10)
    assert b.ctypes.data == address and b.shape == (128, 512) and pool.stats()["cached"] == 0
    c = pool.empty((256, 256), np.float32)  # the default floor: not pooled
    assert pool.stats()["allocated"] == b.nbytes and c.base is None
