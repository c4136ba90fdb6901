"""ferro-opencl's two matmul kernels against NumPy, on a real OpenCL device (PoCL's CPU device in CI).

The device picks one kernel (``_matmul.py``): the register-blocked CPU kernel
on CPU devices, the local-memory tiled kernel elsewhere; the tiled one is
also built here through ``FERRO_OPENCL_MATMUL_TILE`` so that both run on
whatever device the tests have. Sizes straddle the kernels' blocks (6 rows x
16 columns, tiles of 16 and 64), batches broadcast, operands are transposed
or sliced views, and the storage types include float16 (computed in float)
and integers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import ferro

RNG = np.random.default_rng(7)


#: kernel name -> FERRO_OPENCL_MATMUL_TILE (None: the device's own choice)
KERNELS = {"device": None, "tiled64": "64,8,8", "tiled16": "16,4,2"}


@pytest.fixture(scope="module", params=list(KERNELS))
def mm(request: Any, ocl: Any) -> Callable[..., Any]:
    """``mm(a, b)``: NumPy arrays (or views built by ``view``) in, the kernel's result as a NumPy array out."""
    from ferro_opencl._matmul import matmul_kernel
    rt = ocl.runtime(0)
    tile = KERNELS[request.param]
    with pytest.MonkeyPatch.context() as mp:
        if tile is None:
            mp.delenv("FERRO_OPENCL_MATMUL_TILE", raising=False)
        else:
            mp.setenv("FERRO_OPENCL_MATMUL_TILE", tile)
        kernel = matmul_kernel(rt)

    def run(a: Any, b: Any) -> np.ndarray:
        x = a if not isinstance(a, np.ndarray) else rt.from_host(a)
        y = b if not isinstance(b, np.ndarray) else rt.from_host(b)
        return kernel(x, y).get()
    run.rt = rt  # type: ignore[attr-defined]
    return run


def _mat(*shape: int, dtype: Any = np.float32) -> np.ndarray:
    if np.dtype(dtype).kind in "iu":
        return RNG.integers(-9, 10, shape).astype(dtype)
    return RNG.standard_normal(shape).astype(dtype)


def _transposed(rt: Any, b: np.ndarray) -> Any:
    """``b`` on the device as the transposed view of its contiguous transpose (columns contiguous)."""
    k, n = b.shape
    return rt.from_host(np.ascontiguousarray(b.T)).view((k, n), (1, k))


def _check(got: np.ndarray, want: np.ndarray, rtol: float = 1e-4, atol: float = 1e-4) -> None:
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


@pytest.mark.parametrize("m,k,n", [(1, 1, 1), (5, 3, 7), (6, 8, 16), (7, 1, 17), (13, 65, 31), (97, 50, 33),
                                   (130, 70, 129), (2, 300, 3)])
def test_odd_sizes(mm: Any, m: int, k: int, n: int) -> None:
    a, b = _mat(m, k), _mat(k, n)
    _check(mm(a, b), a @ b)


@pytest.mark.parametrize("sa,sb", [((2, 1, 9, 7), (3, 7, 20)), ((4, 13, 6), (6, 5)), ((13, 6), (2, 6, 18)),
                                   ((3, 1, 7, 4), (1, 2, 4, 9)), ((1, 5, 8), (1, 8, 3))])
def test_batches_broadcast(mm: Any, sa: Any, sb: Any) -> None:
    a, b = _mat(*sa), _mat(*sb)
    _check(mm(a, b), a @ b)


@pytest.mark.parametrize("sa,sb", [((40,), (40, 19)), ((23, 40), (40,)), ((40,), (40,)), ((3, 9, 40), (40,)),
                                   ((40,), (2, 40, 5))])
def test_one_dimensional_operands(mm: Any, sa: Any, sb: Any) -> None:
    a, b = _mat(*sa), _mat(*sb)
    _check(mm(a, b), np.asarray(a @ b))


def test_transposed_and_sliced_views(mm: Any) -> None:
    rt = mm.rt
    a, b = _mat(50, 40), _mat(37, 40)
    x, y = rt.from_host(a), rt.from_host(b)
    yt = y.view((40, 37), (1, 40))  # y.T: columns contiguous
    xt = x.view((40, 50), (1, 40))
    _check(mm(x, yt), a @ b.T)
    _check(mm(xt, x), a.T @ a)
    # rows 1, 3, ..., columns 5.. of a; rows 5.. of b.T, every other column, from an offset
    xs = x.view((25, 35), (80, 1), 40 + 5)
    ys = y.view((35, 18), (1, 80), 45)
    _check(mm(xs, ys), a[1::2, 5:] @ b.T[5:, 1::2])
    # a batch of transposed operands: (2, 20, 6) stored as (2, 6, 20)
    c = _mat(2, 6, 20)
    z = rt.from_host(c)
    _check(mm(z.view((2, 20, 6), (120, 1, 20)), z), c.transpose(0, 2, 1) @ c)


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.float64])
def test_small_b_read_in_place(mm: Any, dtype: Any) -> None:
    # The CPU kernel reads a small B with contiguous rows and N a multiple of its block in place (no packing):
    # batched, broadcast, and from an offset that leaves its vectors unaligned.
    if dtype is np.float64 and not mm.rt.fp64:
        pytest.skip("the device has no float64")
    a, b, c = _mat(2, 3, 13, 9, dtype=dtype), _mat(3, 9, 32, dtype=dtype), _mat(9, 41, dtype=dtype)
    _check(mm(a, b), a @ b)
    _check(mm(a, b[1]), a @ b[1])
    y = mm.rt.from_host(c)
    _check(mm(a[1, 2], y.view((9, 32), (41, 1), 3)), a[1, 2] @ c[:, 3:35])
    _check(mm(a[0, 0, :4, :4], y.view((4, 16), (82, 1), 41 + 7)), a[0, 0, :4, :4] @ c[1:9:2, 7:23])


@pytest.mark.parametrize("dtype,tol", [(np.float64, 1e-12), (np.int64, 0), (np.int32, 0)])
def test_other_dtypes(mm: Any, dtype: Any, tol: float) -> None:
    if dtype is np.float64 and not mm.rt.fp64:
        pytest.skip("the device has no float64")
    a, b = _mat(3, 19, 21, dtype=dtype), _mat(21, 17, dtype=dtype)
    _check(mm(a, b), a @ b, rtol=tol, atol=tol)
    _check(mm(a[0], _transposed(mm.rt, b)), a[0] @ b, rtol=tol, atol=tol)


def test_float16_storage(mm: Any) -> None:
    rt = mm.rt
    a, b = _mat(2, 19, 33, dtype=np.float16), _mat(33, 21, dtype=np.float16)
    want = (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float16)
    _check(mm(a, b), want, rtol=2e-3, atol=2e-3)
    _check(mm(a, _transposed(rt, b)), want, rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("sa,sb", [((3, 0), (0, 4)), ((2, 5, 0), (0, 7)), ((0, 5), (5, 3)), ((4, 5), (5, 0)),
                                   ((0, 4, 5), (5, 2)), ((0,), (0,))])
def test_empty_shapes_and_zero_k(mm: Any, sa: Any, sb: Any) -> None:
    a, b = _mat(*sa), _mat(*sb)
    got = mm(a, b)
    want = np.asarray(a @ b)
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)  # K = 0: zeros


def test_shape_errors(mm: Any) -> None:
    with pytest.raises(ValueError, match="cannot be multiplied"):
        mm(_mat(3, 4), _mat(5, 2))
    with pytest.raises(ValueError, match="cannot be multiplied"):
        mm(_mat(2, 3, 4), _mat(2, 3, 4))


def test_cpu_devices_use_the_register_blocked_kernel(ocl: Any, monkeypatch: Any) -> None:
    from ferro_opencl._matmul import matmul_kernel
    rt = ocl.runtime(0)
    if not rt.device.type & rt.cl.device_type.CPU:
        pytest.skip("not a CPU device")
    monkeypatch.delenv("FERRO_OPENCL_MATMUL_TILE", raising=False)
    asked: list[Any] = []
    kernel = rt.kernel
    monkeypatch.setattr(rt, "kernel", lambda key, *args: asked.append(key) or kernel(key, *args))
    a, b = _mat(8, 9), _mat(9, 10)
    _check(matmul_kernel(rt)(rt.from_host(a), rt.from_host(b)).get(), a @ b)
    assert {key[0] for key in asked} == {"matmul_cpu"}


def test_tensor_matmul_and_its_gradient(ocl: Any) -> None:
    a, b = _mat(4, 7, 9), _mat(9, 5)
    x = ferro.tensor(a, device="opencl", requires_grad=True)
    y = ferro.tensor(b, device="opencl", requires_grad=True)
    out = x @ y
    _check(out.detach().numpy(), a @ b)
    out.sum().backward()
    _check(x.grad.numpy(), np.broadcast_to(b.sum(1), a.shape))
    _check(y.grad.numpy(), np.broadcast_to(a.sum((0, 1))[:, None], b.shape))
