"""ferro-opencl's kernels on a real OpenCL device (PoCL's CPU device in CI), against NumPy.

What the conformance suite does not reach: views that stay views (no copy),
arbitrary strides and offsets, broadcasting with scalars, reductions of
permuted inputs and the two-pass path, batched and transposed matmul, scatter
with repeated indices, the program cache and the memory pool's statistics,
and the errors for what the backend does not claim.
"""

from __future__ import annotations

import gc
from typing import Any

import numpy as np
import pytest

import ferro


def _t(a: np.ndarray) -> ferro.Tensor:
    return ferro.tensor(a, device="opencl")


RNG = np.random.default_rng(0)


def _close(t: ferro.Tensor, expected: Any, **kw: Any) -> None:
    got = t.numpy()
    assert got.shape == np.shape(expected), (got.shape, np.shape(expected))
    np.testing.assert_allclose(got, expected, rtol=kw.get("rtol", 1e-5), atol=kw.get("atol", 1e-6))


# -- views ------------------------------------------------------------------------------------


def test_views_share_the_buffer(ocl: Any) -> None:
    a = RNG.standard_normal((4, 6)).astype(np.float32)
    x = _t(a)
    views = [x.T, x[1:3, ::2], x.reshape(2, 12), x.view(24), x[None, 2], x.unsqueeze(1).expand(4, 3, 6), x[..., -1]]
    for v in views:
        assert v._data.buffer is x._data.buffer  # metadata only: nothing copied
    _close(x.T, a.T)
    _close(x[1:3, ::2], a[1:3, ::2])
    _close(x[..., -1], a[..., -1])
    _close(x.unsqueeze(1).expand(4, 3, 6), np.broadcast_to(a[:, None], (4, 3, 6)))
    x[1:3, ::2] = 0.5  # a write through a view reaches the base
    a[1:3, ::2] = 0.5
    _close(x, a)


def test_reshape_of_a_transpose_copies_and_view_refuses(ocl: Any) -> None:
    a = RNG.standard_normal((3, 4)).astype(np.float32)
    x = _t(a)
    r = x.T.reshape(12)
    assert r._data.buffer is not x._data.buffer
    _close(r, a.T.reshape(12))
    with pytest.raises(ferro.errors.ShapeError):
        x.T.view(12)


# -- elementwise -----------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64", "uint8"])
def test_binary_with_strides_offsets_broadcasting_and_scalars(ocl: Any, dtype: str) -> None:
    if dtype == "float64" and ferro.float64 not in ocl.dtypes(0):
        pytest.skip("no float64 on this device")
    a = (RNG.standard_normal((5, 7, 3)) * 4).astype(dtype)
    b = (RNG.standard_normal((3, 14)) * 4).astype(dtype)
    x, y = _t(a), _t(b)[:, ::2]  # y: (3, 7) with a column step
    xs = x.permute(2, 0, 1)[1:, ::2]  # permuted, sliced with an offset and a step: (2, 3, 7)
    want, yb = a.transpose(2, 0, 1)[1:, ::2], b[:, ::2]
    _close(xs + y, want + yb)
    _close(xs + y[1], want + yb[1])  # a row broadcast over the leading dimensions
    _close(xs * 3, want * np.asarray(3, dtype))
    if dtype != "uint8":
        _close(2 - xs, 2 - want)
    _close(ferro.maximum(xs, y), np.maximum(want, yb))
    _close(xs > y, want > yb)


def test_unary_on_views_and_edge_values(ocl: Any) -> None:
    a = np.array([[0.5, -1.5, np.inf], [-np.inf, np.nan, -0.0]], np.float32)
    x = _t(a)
    with np.errstate(all="ignore"):
        for name, ref in (("exp", np.exp), ("abs", np.abs), ("floor", np.floor), ("sign", np.sign),
                          ("isnan", np.isnan), ("isinf", np.isinf), ("round", np.rint), ("sigmoid",
                          lambda v: 1 / (1 + np.exp(-v))), ("relu", lambda v: np.where(v > 0, v, 0) +
                                                                   np.where(np.isnan(v), v, 0))):
            got = getattr(ferro, name)(x.T)
            np.testing.assert_allclose(got.numpy(), ref(a.T), rtol=1e-6, err_msg=name)



@pytest.mark.parametrize("dtype", ["float32", "float16", "int32", "bool"])
def test_fast_launches_reset_the_size_and_scalar_a_kernel_keeps(ocl: Any, dtype: str) -> None:
    # The contiguous fast path sets a kernel's element count and scalar operand only when they differ from
    # what the kernel was last given: interleave sizes and scalars (1 then 1.0 then 2) on the same kernels.
    k = ocl.kernels(0)
    rt = ocl.runtime(0)
    cases = []
    for n, s in ((1000, 1), (7, 1), (1000, 1), (3000, 2), (7, 2), (1, 0), (1000, 1)):
        a = (RNG.standard_normal(n) * 4).astype(dtype)
        b = (RNG.standard_normal(n) * 4).astype(dtype)
        x, y = rt.from_host(a), rt.from_host(b)
        cases.append((k["add"](x, y), a + b))
        cases.append((k["mul"](x, s if dtype != "float32" else float(s)), a * np.asarray(s, dtype)))
        cases.append((k["mul"](x, s), a * np.asarray(s, dtype)))
        cases.append((k["neg"](x) if dtype != "bool" else k["logical_not"](x), -a if dtype != "bool" else ~a))
    for got, want in cases:  # read back only at the end: every launch was queued with the values it needed
        np.testing.assert_allclose(got.get().astype(np.float64), want.astype(np.float64), rtol=1e-3)

def test_integer_division_and_remainder_follow_python(ocl: Any) -> None:
    a = np.array([7, -7, 7, -7, 0], np.int32)
    b = np.array([2, 2, -2, -2, 3], np.int32)
    _close(ferro.floor_divide(_t(a), _t(b)), np.floor_divide(a, b))
    _close(ferro.remainder(_t(a), _t(b)), np.remainder(a, b))
    f = np.array([7.5, -7.5, 1e-30, -3.0], np.float32)
    g = np.array([2.0, 2.0, -1.0, 0.7], np.float32)
    _close(ferro.floor_divide(_t(f), _t(g)), np.floor_divide(f, g))
    _close(ferro.remainder(_t(f), _t(g)), np.remainder(f, g))


def test_where_and_casts(ocl: Any) -> None:
    c = RNG.random((3, 4)) > 0.5
    a = RNG.standard_normal((3, 4)).astype(np.float32)
    _close(ferro.where(_t(c), _t(a), 0.0), np.where(c, a, 0))
    _close(ferro.where(_t(c).T, 1.5, _t(a).T), np.where(c.T, 1.5, a.T))
    np.testing.assert_array_equal(ferro.where(_t(c), 1.5, 2).numpy(), np.where(c, 1.5, 2).astype(np.float32))
    x = _t(a * 10)
    for dt in (ferro.int32, ferro.uint8, ferro.bool, ferro.int64):
        np.testing.assert_array_equal(x.to(dt).numpy(), (a * 10).astype(dt.name))


# -- reductions ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("dims", [None, (0,), (1,), (0, 2), (2,)])
def test_reductions_of_a_permuted_input(ocl: Any, dims: Any) -> None:
    a = RNG.standard_normal((4, 5, 6)).astype(np.float32)
    x = _t(a.transpose(1, 2, 0).copy()).permute(2, 0, 1)  # logical (4, 5, 6), strides permuted
    axis = dims
    _close(x.sum(dims) if dims else x.sum(), a.sum(axis), rtol=1e-5, atol=1e-5)
    _close(x.mean(dims) if dims else x.mean(), a.mean(axis), rtol=1e-5, atol=1e-6)
    _close(x.amax(dims) if dims else x.amax(), a.max(axis))
    _close(x.prod(dims[0]) if dims and len(dims) == 1 else x.prod(), np.prod(a, axis=dims[0]) if dims and
           len(dims) == 1 else np.prod(a), rtol=1e-4)


def test_full_reduction_of_many_elements_takes_two_passes(ocl: Any) -> None:
    a = RNG.standard_normal(300_001).astype(np.float32)
    x = _t(a)
    np.testing.assert_allclose(x.sum().item(), a.astype(np.float64).sum(), rtol=1e-4)
    np.testing.assert_allclose(x.mean().item(), a.astype(np.float64).mean(), rtol=1e-3, atol=1e-6)
    assert x.amax().item() == a.max() and x.amin().item() == a.min()
    assert bool((x > 4.5).any().item()) == bool((a > 4.5).any())
    assert bool((x < 10).all().item())
    i = _t(np.arange(100_000, dtype=np.int64))
    assert i.sum().item() == 100_000 * 99_999 // 2


def test_argmax_first_of_ties_and_nan(ocl: Any) -> None:
    a = np.array([[1, 3, 3, 0], [np.nan, 5, np.nan, 5], [2, 2, 2, 2]], np.float32)
    x = _t(a)
    np.testing.assert_array_equal(x.argmax(1).numpy(), np.argmax(a, 1))
    np.testing.assert_array_equal(x.argmin(1).numpy(), np.argmin(a, 1))
    np.testing.assert_array_equal(x.T.argmax(0).numpy(), np.argmax(a.T, 0))
    assert x.argmax().item() == np.argmax(a)


# -- matmul -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("shapes", [((33, 65), (65, 17)), ((2, 3, 40, 9), (3, 9, 31)), ((70,), (70, 5)),
                                    ((6, 70), (70,)), ((1, 1), (1, 1))])
def test_matmul_batched_odd_sizes(ocl: Any, shapes: Any) -> None:
    a = RNG.standard_normal(shapes[0]).astype(np.float32)
    b = RNG.standard_normal(shapes[1]).astype(np.float32)
    _close(_t(a) @ _t(b), a @ b, rtol=1e-4, atol=1e-4)


def test_matmul_reads_transposed_views_without_a_copy(ocl: Any) -> None:
    a = RNG.standard_normal((50, 40)).astype(np.float32)
    b = RNG.standard_normal((30, 40)).astype(np.float32)
    _close(_t(a) @ _t(b).T, a @ b.T, rtol=1e-4, atol=1e-4)
    _close(_t(a)[::2, 5:] @ _t(b).T[5:, 1:], a[::2, 5:] @ b.T[5:, 1:], rtol=1e-4, atol=1e-4)
    ints = RNG.integers(-5, 5, (8, 9)).astype(np.int64)
    _close(_t(ints) @ _t(ints).T, ints @ ints.T)


# -- indexing --------------------------------------------------------------------------------------------


def test_advanced_indexing_gather_and_scatter_add_with_repeats(ocl: Any) -> None:
    a = RNG.standard_normal((5, 4)).astype(np.float32)
    x = _t(a)
    idx = np.array([3, 0, 3, 3])
    _close(x[_t(idx)], a[idx])
    _close(x[_t(idx), 1:3], a[idx, 1:3])
    _close(x[x > 0], a[a > 0])
    out = ferro.zeros(5, 4, device="opencl").index_put((_t(idx),), _t(np.ones((4, 4), np.float32)),
                                                       accumulate=True)
    want = np.zeros((5, 4), np.float32)
    np.add.at(want, idx, 1)
    _close(out, want)
    for dt in ("float64", "int32", "int64", "int16"):
        if dt == "float64" and ferro.float64 not in ocl.dtypes(0):
            continue
        src = RNG.integers(0, 9, (6,)).astype(dt)
        tgt = _t(np.zeros(3, dt)).scatter_add(0, _t(np.array([0, 2, 0, 1, 2, 2])), _t(src))
        ref = np.zeros(3, dt)
        np.add.at(ref, [0, 2, 0, 1, 2, 2], src)
        np.testing.assert_array_equal(tgt.numpy(), ref)


def test_scatter_reduce_amax_and_prod(ocl: Any) -> None:
    idx = np.array([0, 1, 0, 1, 2])
    src = np.array([1.0, -2.0, 5.0, 3.0, 0.5], np.float32)
    x = _t(np.full(3, 2.0, np.float32))
    got = x.scatter_reduce(0, _t(idx), _t(src), reduce="amax")
    np.testing.assert_array_equal(got.numpy(), [5.0, 3.0, 2.0])
    got = x.scatter_reduce(0, _t(idx), _t(src), reduce="prod", include_self=False)
    np.testing.assert_array_equal(got.numpy(), [5.0, -6.0, 0.5])


def test_setitem_with_a_tensor_and_a_mask(ocl: Any) -> None:
    a = RNG.standard_normal((4, 3)).astype(np.float32)
    x = _t(a)
    x[x < 0] = 0.0
    a[a < 0] = 0.0
    _close(x, a)
    x[:, 1] = _t(np.arange(4, dtype=np.float32))
    a[:, 1] = np.arange(4)
    _close(x, a)


def test_cat_stack_cumsum(ocl: Any) -> None:
    a = RNG.standard_normal((3, 4)).astype(np.float32)
    b = RNG.standard_normal((3, 2)).astype(np.float32)
    _close(ferro.cat([_t(a), _t(b)], 1), np.concatenate([a, b], 1))
    _close(ferro.stack([_t(a).T, _t(a).T], 1), np.stack([a.T, a.T], 1))
    _close(_t(a).T.cumsum(1), np.cumsum(a.T, 1), rtol=1e-5)
    _close(_t(a).cumprod(0), np.cumprod(a, 0), rtol=1e-5)


# -- runtime --------------------------------------------------------------------------------------------


def test_programs_are_built_once_and_the_pool_reuses_buffers(ocl: Any) -> None:
    rt = ocl.runtime(0)
    x = _t(RNG.standard_normal(1000).astype(np.float32))
    (x * 2.5).numpy()
    built = rt.builds
    for _ in range(5):
        y = x * 2.5
    y.numpy()
    assert rt.builds == built
    stats = ocl.memory_stats(0)
    assert stats["active_bytes"] > 0 and stats["managed_bytes"] >= stats["active_bytes"]
    held = stats["held_blocks"]
    del y
    assert ocl.memory_stats(0)["held_blocks"] >= held
    big = _t(np.zeros(1 << 18, np.float32)) + 1.0  # a pooled result of 1 MiB
    big.numpy()
    del big
    assert ocl.memory_stats(0)["held_bytes"] >= 1 << 20
    # Buffers of earlier tests' tensors and of finished uploads return to the pool when collected or synchronized:
    # let that happen first, so that nothing comes back after empty_cache.
    ocl.synchronize(0)
    gc.collect()
    ocl.empty_cache()
    assert ocl.memory_stats(0)["held_bytes"] == 0


def test_random_numbers_and_ranges_match_the_cpu_backend(ocl: Any) -> None:
    # uploaded asynchronously (the runtime keeps each host array until its copy is done)
    ferro.manual_seed(7)
    got = [ferro.rand(3, 50, device="opencl"), ferro.randn(50, device="opencl"),
           ferro.randint(0, 9, (40,), device="opencl")]
    ferro.manual_seed(7)
    want = [ferro.rand(3, 50), ferro.randn(50), ferro.randint(0, 9, (40,))]
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g.numpy(), w.numpy())
    np.testing.assert_array_equal(ferro.arange(2, 30, 3, device="opencl").numpy(), np.arange(2, 30, 3))
    np.testing.assert_allclose(ferro.linspace(0, 1, 7, device="opencl").numpy(), np.linspace(0, 1, 7), rtol=1e-6)
    np.testing.assert_array_equal(ferro.eye(3, 4, device="opencl").numpy(), np.eye(3, 4, dtype=np.float32))


def test_to_and_from_the_cpu_backend(ocl: Any) -> None:
    a = RNG.standard_normal((3, 5)).astype(np.float32)
    x = ferro.tensor(a).to("opencl:0")
    assert x.device == ferro.device("opencl:0")
    back = x.T.to("cpu")
    assert back.device == ferro.device("cpu")
    np.testing.assert_array_equal(back.numpy(), a.T)


def test_unclaimed_ops_raise_unsupported_with_the_reason(ocl: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FERRO_FALLBACK", raising=False)
    x = _t(np.eye(3, dtype=np.float32))
    with pytest.raises(ferro.errors.UnsupportedOperationError, match="opencl") as e:
        ferro.linalg.inv(x)
    assert "cpu" in str(e.value) and "no such kernel" in str(e.value)
    assert not ocl.supports("linalg.det", ferro.float32) and ocl.supports("erfinv", ferro.float32)
    with pytest.raises(ferro.errors.UnsupportedOperationError, match=r"complex64"):
        ferro.ones(2, device="opencl").to(ferro.complex64)


def test_linalg_runs_on_the_cpu_backend_when_fallback_says_so(ocl: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from ferro.dispatch import _dispatch
    monkeypatch.setenv("FERRO_FALLBACK", "cpu")
    monkeypatch.setattr(_dispatch, "_warned_fallback", set())  # warned once per op: forget earlier tests' warnings
    m = RNG.standard_normal((2, 4, 4)).astype(np.float32)
    a = m @ m.transpose(0, 2, 1) + 4 * np.eye(4, dtype=np.float32)  # a batch of SPD matrices
    b = RNG.standard_normal((2, 4, 3)).astype(np.float32)
    x = _t(a).requires_grad_()
    with pytest.warns(RuntimeWarning, match="'linalg_inv' has no kernel on backend 'opencl'.*FERRO_FALLBACK=cpu"):
        inv = ferro.linalg.inv(x)
    assert inv.device == ferro.device("opencl:0")
    _close(inv.detach(), np.linalg.inv(a), rtol=1e-4, atol=1e-5)
    inv.sum().backward()  # d sum(inv(a)) = -inv(a)^T 1 inv(a)^T, computed by ferro ops on the device
    ia = np.linalg.inv(a).transpose(0, 2, 1)
    _close(x.grad, -ia @ np.ones_like(a) @ ia, rtol=1e-4, atol=1e-5)
    with pytest.warns(RuntimeWarning):
        _close(ferro.linalg.solve(_t(a), _t(b)), np.linalg.solve(a, b), rtol=1e-4, atol=1e-5)
        w, v = ferro.linalg.eigh(_t(a))
        _close(w, np.linalg.eigvalsh(a), rtol=1e-4, atol=1e-4)
        _close(v @ ferro.diag_embed(w) @ v.mT, a, rtol=1e-4, atol=1e-4)
        _close(ferro.linalg.det(_t(a)), np.linalg.det(a), rtol=1e-4)
        lu, piv = ferro.linalg.lu_factor(_t(a))
        assert piv.device == lu.device == ferro.device("opencl:0")
        np.testing.assert_array_equal(piv.numpy(), ferro.linalg.lu_factor(ferro.tensor(a)).pivots.numpy())


def test_gradients_flow_on_the_device(ocl: Any) -> None:
    if ferro.float64 not in ocl.dtypes(0):
        pytest.skip("no float64 for finite differences")
    a = ferro.tensor(RNG.standard_normal((3, 4)), device="opencl", requires_grad=True)
    w = ferro.tensor(RNG.standard_normal((4, 2)), device="opencl", requires_grad=True)
    assert ferro.autograd.gradcheck(lambda p, q: ferro.softmax(p @ q, -1).sum(0), [a, w])


def test_float16_storage_path_of_the_kernels(ocl: Any) -> None:
    # float16 is stored as half and computed in float (vload_half / vstore_half need no cl_khr_fp16), so the
    # generated kernels run it on every device (PoCL's has no cl_khr_fp16): checked below the registry here,
    # through the registry in test_opencl_half.py.
    rt = ocl.runtime(0)
    k = ocl.kernels(0)
    a = RNG.standard_normal((3, 5)).astype(np.float16)
    b = RNG.standard_normal((5,)).astype(np.float16)
    x, y = rt.from_host(a), rt.from_host(b)
    np.testing.assert_allclose(k["add"](x, y).get(), a + b, rtol=1e-3)
    np.testing.assert_allclose(k["exp"](x.view((5, 3), (1, 5))).get(), np.exp(a.T), rtol=2e-3)
    np.testing.assert_allclose(k["sum"](x, (1,), False, ferro.float16).get(), a.sum(1), rtol=5e-3, atol=5e-3)
    np.testing.assert_array_equal(k["cast"](x, ferro.float32).get(), a.astype(np.float32))
    np.testing.assert_allclose(k["matmul"](x, x.view((5, 3), (1, 5))).get(), a.astype(np.float32) @ a.T.astype(
        np.float32), rtol=5e-3, atol=5e-3)


@pytest.mark.parametrize("key", [
    ([1, 0, -1],), (slice(None), [2, 0, -1]), (slice(None), [1, 2], [0, 3]), ([1, 0], slice(None), [0, 3]),
    (Ellipsis, [[1], [3]]), (None, [1], slice(1, 3)), (slice(None, None, -1), [[0, 2]], [[1], [3]])])
def test_integer_index_tensors_compute_positions_on_the_device(ocl: Any, key: Any) -> None:
    a = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    x = _t(a).permute(0, 1, 2)
    fkey = tuple(_t(np.array(k)) if isinstance(k, list) else k for k in key)
    nkey = tuple(np.array(k) if isinstance(k, list) else k for k in key)
    from ferro_opencl._indexing import device_positions
    native = tuple(k._data if isinstance(k, ferro.Tensor) else k for k in fkey)
    assert device_positions(ocl.runtime(0), x._data, native) is not None  # the indices are never read on the host
    np.testing.assert_array_equal(x[fkey].numpy(), a[nkey])
    y = _t(np.zeros((2, 3, 4), np.float32))
    y[fkey] = 1.0
    want = np.zeros((2, 3, 4), np.float32)
    want[nkey] = 1.0
    np.testing.assert_array_equal(y.numpy(), want)


def test_an_index_out_of_range_is_reported_at_the_next_synchronization(ocl: Any) -> None:
    x = _t(np.arange(6, dtype=np.float32))
    y = x[_t(np.array([1, 6]))]  # queued: the device cannot raise where it runs
    with pytest.raises(IndexError, match="out of range"):
        y.numpy()
    np.testing.assert_array_equal(x[_t(np.array([5, -6]))].numpy(), [5.0, 0.0])  # the flag was reset


@pytest.mark.parametrize("shape, dim", [((3000,), 0), ((2, 2100), 1), ((2049, 2), 0), ((7, 5), 1)])
def test_argsort_is_stable_on_short_and_long_lines(ocl: Any, shape: Any, dim: int) -> None:
    # lines longer than RANK_SORT_MAX take the bitonic network, shorter ones the rank sort
    a = RNG.integers(0, 40, shape).astype(np.float32)
    a.flat[::11] = np.nan
    x = _t(a)
    np.testing.assert_array_equal(x.argsort(dim).numpy(), np.argsort(a, dim, kind="stable"))
    np.testing.assert_array_equal(x.argsort(dim, descending=True).numpy(),
                                  ferro.tensor(a).argsort(dim, descending=True).numpy())
    values = ferro.topk(x.nan_to_num(0.0), 3, dim)[0]
    ref = np.sort(np.nan_to_num(a, nan=0.0), axis=dim)
    np.testing.assert_array_equal(values.numpy(), np.flip(np.take(ref, range(ref.shape[dim] - 3, ref.shape[dim]),
                                                                  axis=dim), dim))


def test_overlapping_copies_read_before_they_write(ocl: Any) -> None:
    a = np.arange(10, dtype=np.float32)
    x = _t(a)
    x[1:] = x[:-1]  # a view of x written into another view of x
    b = a.copy()
    b[1:] = a[:-1]
    np.testing.assert_array_equal(x.numpy(), b)
    y = _t(a)
    y[_t(np.array([0, 1, 2]))] = y[7:]
    c = a.copy()
    c[[0, 1, 2]] = a[7:]
    np.testing.assert_array_equal(y.numpy(), c)
    z = _t(a.reshape(2, 5))
    z[:, 1:] = z[:, :-1]
    d = a.reshape(2, 5).copy()
    d[:, 1:] = a.reshape(2, 5)[:, :-1]
    np.testing.assert_array_equal(z.numpy(), d)


def test_reductions_with_many_outputs_along_the_fast_dimension(ocl: Any) -> None:
    # more than 4 work-groups of outputs, kept dimension contiguous: one work-item per output (reduce_columns)
    a = RNG.standard_normal((37, 1100)).astype(np.float32)
    x = _t(a)
    _close(x.sum(0), a.sum(0), rtol=1e-5, atol=1e-5)
    _close(x.mean(0), a.mean(0), rtol=1e-5, atol=1e-6)
    _close(x.amin(0), a.min(0))
    np.testing.assert_array_equal((x > 1).any(0).numpy(), (a > 1).any(0))
    _close(x.T.sum(1), a.sum(0), rtol=1e-5, atol=1e-5)
    _close(_t(a.reshape(37, 2, 550)).sum((0, 1)), a.reshape(37, 2, 550).sum((0, 1)), rtol=1e-5, atol=1e-5)


def test_view_succeeds_exactly_where_numpy_can_reshape_without_a_copy(ocl: Any) -> None:
    rng = np.random.default_rng(3)
    for _ in range(60):
        shape = tuple(int(v) for v in rng.integers(1, 4, rng.integers(2, 5)))
        base = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
        perm = [int(p) for p in rng.permutation(len(shape))]
        step = int(rng.integers(1, 3))
        a = base.transpose(perm)[..., ::step]
        x = _t(base).permute(*perm)[..., ::step]
        target = (-1,) if rng.random() < 0.5 else (a.shape[0], -1)
        try:
            want = np.reshape(a, target, copy=False)
        except ValueError:  # NumPy needs a copy: so must ferro's reshape, and view must refuse
            with pytest.raises(ferro.errors.ShapeError):
                x.view(*target)
            np.testing.assert_array_equal(x.reshape(*target).numpy(), np.reshape(a, target))
        else:
            v = x.view(*target)
            assert v._data.buffer is x._data.buffer
            np.testing.assert_array_equal(v.numpy(), want)


def test_integer_division_by_zero_is_reported_at_the_next_synchronization(ocl: Any) -> None:
    a, b = _t(np.array([7, 8, 9], np.int32)), _t(np.array([2, 0, 4], np.int32))
    q = ferro.floor_divide(a, b)  # queued: the kernel cannot raise where it runs
    with pytest.raises(ZeroDivisionError, match="division by zero"):
        q.numpy()
    r = ferro.remainder(a, _t(np.array([2, 5, 0, 5, 4, 5], np.int32))[::2])  # the strided kernel reports it too
    with pytest.raises(ZeroDivisionError):
        ocl.synchronize(0)
    np.testing.assert_array_equal(ferro.floor_divide(a, 2).numpy(), [3, 4, 4])  # the flag was reset
    np.testing.assert_array_equal(r.shape, (3,))


_DEVICE_RNG = """
    import json, warnings
    warnings.simplefilter('ignore')
    import ferro
    b = ferro.backends.get('opencl')
    ferro.manual_seed(0)
    first = ferro.rand(4, device='opencl').numpy().tolist()
    ferro.manual_seed(0)
    again = ferro.rand(4, device='opencl').numpy().tolist()
    state = b.get_rng_state(0)
    n1 = ferro.randn(20001, device='opencl').numpy()
    b.set_rng_state(state, 0)
    n2 = ferro.randn(20001, device='opencl').numpy()
    ints = ferro.randint(-3, 4, (5000,), device='opencl').numpy()
    d = ferro.rand(3, dtype=ferro.float64, device='opencl').numpy()
    print(json.dumps([first, again, bool((n1 == n2).all()), float(n1.mean()), float(n1.std()),
                      sorted(set(ints.tolist())), str(ints.dtype), state.decode(), d.tolist()]))
"""


def test_device_philox_generator_known_answers_and_state(ocl: Any) -> None:
    from conftest import run_json
    got = run_json(_DEVICE_RNG, env={"FERRO_OPENCL_RNG": "device"})
    first, again, same, mean, std, ints, int_dtype, state, doubles = got
    # Random123's known answer for Philox4x32-10, counter 0 and key 0: the first block's four words
    words = [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]
    assert first == [(w >> 8) / 2**24 for w in words] and again == first
    assert same and abs(mean) < 0.05 and abs(std - 1) < 0.05
    assert ints == list(range(-3, 4)) and int_dtype == "int64"
    assert '"offset": 1' in state  # the 4 uniforms used one block
    assert all(0 <= v < 1 for v in doubles) and len(set(doubles)) == 3


def test_rng_mode_is_checked(ocl: Any) -> None:
    from conftest import run_json
    got = run_json("""
        import json, warnings
        warnings.simplefilter('ignore')
        import ferro
        try:
            ferro.rand(2, device='opencl')
            print(json.dumps(None))
        except (ValueError, ferro.errors.BackendUnavailableError) as e:  # a bad setting: the plugin is refused
            print(json.dumps(str(e)))
    """, env={"FERRO_OPENCL_RNG": "gpu"})
    assert got is not None and "FERRO_OPENCL_RNG='gpu'" in got
