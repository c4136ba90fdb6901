"""Reductions: sum, mean, amax, amin, max, min, argmax, argmin (and any / all) against NumPy and PyTorch."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import ferro
from ferro.testing import assert_close

torch = pytest.importorskip("torch")
rng = np.random.default_rng(3)

NUMPY = {"sum": np.sum, "mean": np.mean, "amax": np.amax, "amin": np.amin, "any": np.any, "all": np.all}
DIMS: list[Any] = [None, 0, 1, 2, -1, -3, (0, 2), (-1, 0), (0, 1, 2), [1], ()]


def _name(d: Any) -> str:
    return str(d).removeprefix("torch.").removeprefix("ferro.")


def _np_axis(name: str, dim: Any) -> Any:
    """PyTorch's dim as NumPy's axis: None and () reduce everything, but for any / all () reduces nothing."""
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0 and name not in ("any", "all")):
        return None
    return tuple(dim) if isinstance(dim, list) else dim


def _data(dtype: str, shape: tuple[int, ...] = (3, 4, 5)) -> np.ndarray:
    if dtype == "bool":
        return rng.random(shape) > 0.5
    if dtype.startswith(("int", "uint")):
        return rng.integers(0 if dtype == "uint8" else -50, 50, shape).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("dim", DIMS, ids=str)
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64", "uint8", "bool"])
@pytest.mark.parametrize("name", ["sum", "mean", "amax", "amin", "any", "all"])
def test_reduction_matches_numpy(name: str, dtype: str, dim: Any, keepdim: bool) -> None:
    a = _data(dtype)
    t = ferro.tensor(a)
    if name == "mean" and dtype not in ("float32", "float64"):
        with pytest.raises(ferro.errors.DTypeError, match=rf"mean.*{dtype}"):
            t.mean(dim, keepdim)
        return
    got = getattr(ferro, name)(t, dim, keepdim)
    ref = np.asarray(NUMPY[name](a, axis=_np_axis(name, dim), keepdims=keepdim))
    # result dtypes as PyTorch: ints and bools sum in int64, amax keeps the dtype, any / all give bool
    tref = getattr(torch, name)(torch.from_numpy(a), dim=dim if dim is not None else tuple(range(3)), keepdim=keepdim)
    if name in ("any", "all") and dtype == "uint8":
        assert got.dtype is ferro.bool_  # PyTorch keeps uint8 here, a legacy exception; ferro gives bool always
    else:
        assert got.dtype.name == _name(tref.dtype)
    assert tuple(got.shape) == tuple(tref.shape) == ref.shape
    assert_close(got, ref.astype(got.dtype.name), rtol=1e-5, atol=1e-5)
    # the method is the same op
    assert_close(getattr(t, name)(dim, keepdim), ref.astype(got.dtype.name), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", ["sum", "mean", "amax", "amin"])
def test_reduction_with_no_dim_matches_numpy(name: str) -> None:
    a = _data("float32")
    got = getattr(ferro.tensor(a), name)()
    assert got.shape == () and got.dtype is ferro.float32
    assert_close(got, np.asarray(NUMPY[name](a)).astype(np.float32), rtol=1e-5)
    keep = getattr(ferro, name)(ferro.tensor(a), None, True) if name in ("sum", "mean") else \
        getattr(ferro, name)(ferro.tensor(a), (), True)
    assert keep.shape == (1, 1, 1)


@pytest.mark.parametrize("name", ["sum", "mean", "amax", "amin", "argmax", "argmin"])
def test_reduction_of_non_contiguous_input(name: str) -> None:
    a = _data("float64", (4, 6, 5))
    t = ferro.tensor(a)
    for view, ref in ((t.permute(2, 0, 1), a.transpose(2, 0, 1)), (t[::2, 1::2], a[::2, 1::2]), (t[:, 3], a[:, 3])):
        fn = NUMPY.get(name) or getattr(np, name)
        assert_close(getattr(view, name)(1), np.asarray(fn(ref, axis=1)).astype(np.int64 if "arg" in name else
                                                                                  np.float64))


def test_sum_dtypes() -> None:
    assert ferro.tensor([1, 2], dtype=ferro.int8).sum().dtype is ferro.int64
    assert ferro.tensor([200, 200], dtype=ferro.uint8).sum().item() == 400, "no overflow: uint8 sums in int64"
    assert ferro.tensor([True, True, False]).sum().item() == 2
    assert ferro.tensor([True, True]).sum().dtype is ferro.int64
    assert ferro.tensor([1.0, 2.0], dtype=ferro.float16).sum().dtype is ferro.float16
    for dtype in (ferro.float64, ferro.int32, ferro.float16, ferro.int64):
        t = ferro.tensor([[1, 2], [3, 4]]).sum(dtype=dtype)
        ref = torch.tensor([[1, 2], [3, 4]]).sum(dtype=getattr(torch, dtype.name))
        assert t.dtype is dtype and t.item() == ref.item()
    assert ferro.tensor([[1, 2], [3, 4]]).sum(1, dtype=ferro.float64).tolist() == [3.0, 7.0]
    assert ferro.tensor([1, 2]).mean(dtype=ferro.float32).item() == 1.5
    assert ferro.tensor([1, 2]).mean(dtype=ferro.float64).dtype is ferro.float64
    assert ferro.tensor([1j, 2]).sum().dtype is ferro.complex64


@pytest.mark.parametrize("dtype", ["int64", "int32", "bool", "uint8"])
def test_mean_of_integers_is_an_error(dtype: str) -> None:
    t = ferro.ones(3, dtype=getattr(ferro, dtype if dtype != "bool" else "bool_"))
    with pytest.raises(ferro.errors.DTypeError, match=rf"mean\(\).*floating point.*{dtype}"):
        t.mean()
    with pytest.raises(ferro.errors.DTypeError):
        ferro.mean(t, 0)


@pytest.mark.parametrize("name", ["max", "min"])
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("dim", [0, 1, -1, 2], ids=str)
@pytest.mark.parametrize("dtype", ["float32", "int64", "uint8", "float64"])
def test_max_min_with_dim_return_values_and_indices_like_torch(name: str, keepdim: bool, dim: int, dtype: str) -> None:
    a = rng.integers(0, 4, (3, 4, 5)).astype(dtype)  # many ties: the first index wins, as in PyTorch
    got = getattr(ferro.tensor(a), name)(dim, keepdim)
    ref = getattr(torch.from_numpy(a), name)(dim, keepdim)
    values, indices = got
    assert got.values is values and got.indices is indices
    assert values.dtype.name == dtype and indices.dtype is ferro.int64
    assert_close(values, ref.values.numpy())
    assert_close(indices, ref.indices.numpy())
    np_idx = (np.argmax if name == "max" else np.argmin)(a, axis=dim, keepdims=keepdim)
    assert_close(indices, np_idx.astype(np.int64))
    assert_close(getattr(ferro, name)(ferro.tensor(a), dim=dim, keepdim=keepdim).values, ref.values.numpy())


@pytest.mark.parametrize("name", ["max", "min"])
def test_max_min_without_dim_and_with_a_tensor(name: str) -> None:
    a, b = _data("float32", (3, 4)), _data("float32", (4,))
    got = getattr(ferro.tensor(a), name)()
    assert got.shape == () and got.item() == getattr(np, name)(a)
    pair = getattr(ferro, name)(ferro.tensor(a), ferro.tensor(b))
    assert_close(pair, (np.maximum if name == "max" else np.minimum)(a, b))


@pytest.mark.parametrize("name", ["argmax", "argmin"])
@pytest.mark.parametrize("dim, keepdim", [(None, False), (None, True), (0, False), (1, True), (-1, False), (2, True)])
@pytest.mark.parametrize("dtype", ["float32", "int32", "int64"])
def test_argmax_argmin_match_numpy(name: str, dim: int | None, keepdim: bool, dtype: str) -> None:
    a = rng.integers(0, 5, (3, 4, 5)).astype(dtype)  # ties: the first index, as NumPy and PyTorch
    got = getattr(ferro, name)(ferro.tensor(a), dim, keepdim)
    ref = getattr(np, name)(a, axis=dim, keepdims=keepdim)
    assert got.dtype is ferro.int64
    assert_close(got, np.asarray(ref).astype(np.int64))
    tref = getattr(torch, name)(torch.from_numpy(a), dim, keepdim)
    assert tuple(got.shape) == tuple(tref.shape)


def test_nan_propagates_through_max_and_argmax() -> None:
    a = np.array([[1.0, np.nan, 3.0], [4.0, 5.0, 6.0]], dtype=np.float32)
    t = ferro.tensor(a)
    assert np.isnan(t.max().item()) and np.isnan(t.amin().item())
    assert t.argmax().item() == torch.from_numpy(a).argmax().item()
    got, ref = t.max(1), torch.from_numpy(a).max(1)
    assert_close(got.values, ref.values.numpy())
    assert_close(got.indices, ref.indices.numpy())
    assert np.isnan(t.sum().item()) and np.isnan(t.mean(1)[0].item())


def test_zero_dim_tensors_reduce_over_dim_0() -> None:
    t = ferro.tensor(5.0)
    for name in ("sum", "mean", "amax", "amin"):
        for dim in (0, -1, (), None):
            got = getattr(t, name)(dim) if dim is not None else getattr(t, name)()
            assert got.shape == () and got.item() == 5.0, (name, dim)
    assert t.sum(0, keepdim=True).shape == ()
    values, indices = t.max(0)
    assert values.item() == 5.0 and indices.item() == 0
    assert t.argmax(0).item() == 0 and t.argmin(keepdim=True).item() == 0
    with pytest.raises(IndexError, match="out of range"):
        t.sum(1)


def test_empty_reductions() -> None:
    e = ferro.zeros(0, 3)
    assert e.sum().item() == 0.0 and e.sum(0).tolist() == [0.0, 0.0, 0.0]
    assert np.isnan(e.mean().item())
    assert e.amax(1).shape == (0,) and e.amin(1).shape == (0,)
    values, indices = e.max(1)
    assert values.shape == (0,) and indices.shape == (0,) and indices.dtype is ferro.int64
    assert e.argmax(1).shape == (0,)
    assert e.any().item() is False and e.all().item() is True
    for fn in (lambda: e.amax(), lambda: e.amax(0), lambda: e.amin((0, 1)), lambda: e.max(0), lambda: e.min(),
               lambda: e.argmax(), lambda: e.argmin(0), lambda: ferro.zeros(0).max()):
        with pytest.raises(IndexError, match=r"(non-zero size|empty input).*\[0"):  # PyTorch's type
            fn()


def test_reduction_errors() -> None:
    t = ferro.ones(2, 3)
    with pytest.raises(IndexError, match=r"sum.*range of \[-2, 1\].*got 2"):
        t.sum(2)
    with pytest.raises(IndexError, match="out of range"):
        t.amax(-3)
    with pytest.raises(IndexError, match="out of range"):
        t.argmax(5)
    with pytest.raises(ferro.errors.ShapeError, match="multiple times"):
        t.sum((0, -2))
    with pytest.raises(ferro.errors.DTypeError, match=r"amax.*complex64"):
        ferro.tensor([1j, 2]).amax()
    with pytest.raises(TypeError, match="Tensor"):
        ferro.sum([1, 2])


@pytest.mark.parametrize("make", [lambda L: L.ones(2, 3).sum(0), lambda L: L.ones(2, 3, dtype=L.int32).sum(1, True),
                                  lambda L: L.ones(2, 3).amax(1), lambda L: L.ones(2, 3).argmax(0),
                                  lambda L: L.ones(2, 3, dtype=L.int8).max(1)[0], lambda L: L.ones(2, 3).any(1),
                                  lambda L: L.ones(2, 3, dtype=L.float16).mean(0)], ids=lambda f: "")
def test_result_dtypes_and_shapes_match_torch(make: Callable[[Any], Any]) -> None:
    got, ref = make(ferro), make(torch)
    assert got.dtype.name == _name(ref.dtype) and tuple(got.shape) == tuple(ref.shape)


@pytest.mark.parametrize("consecutive", [False, True], ids=["unique", "unique_consecutive"])
@pytest.mark.parametrize("shape, dim", [((7, 3), 0), ((7, 3), 1), ((2, 6, 3), 1), ((4, 2, 2), -3), ((0, 3), 0),
                                        ((1, 3), 0)])
def test_unique_along_a_dim_matches_torch(shape: tuple[int, ...], dim: int, consecutive: bool) -> None:
    x = np.random.default_rng(sum(shape)).integers(0, 3, shape)
    x[-1:] = x[:1]  # a repeated slice
    ours = (ferro.unique_consecutive if consecutive else ferro.unique)(
        ferro.tensor(x), return_inverse=True, return_counts=True, dim=dim)
    theirs = (torch.unique_consecutive if consecutive else torch.unique)(
        torch.tensor(x), return_inverse=True, return_counts=True, dim=dim)
    for got, want in zip(ours, theirs, strict=True):
        assert got.shape == tuple(want.shape)
        np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("dtype", ["int32", "float64"])
def test_scans_and_prod_return_the_requested_dtype(dtype: str) -> None:
    x = np.array([[1, 2, 3], [4, 5, 6]])
    ours, theirs = ferro.tensor(x), torch.tensor(x)
    for name, args in (("cumsum", (1,)), ("cumprod", (0,)), ("prod", ())):
        got = getattr(ferro, name)(ours, *args, dtype=getattr(ferro, dtype))
        want = getattr(torch, name)(theirs, *args, dtype=getattr(torch, dtype))
        assert got.dtype.name == str(want.dtype).removeprefix("torch."), name
        np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_broadcast_shapes_matches_torch() -> None:
    for shapes in [((2, 1), (3,)), ((1,), (4, 1, 2)), ((), (3, 1)), (5, (2, 1))]:
        assert tuple(ferro.broadcast_shapes(*shapes)) == tuple(torch.broadcast_shapes(*shapes))
    with pytest.raises(ferro.errors.ShapeError, match=r"\[2\], \[3\]"):
        ferro.broadcast_shapes((2,), (3,))


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_16_bit_floats_accumulate_in_float32(dtype: str) -> None:
    # Added up in bfloat16, 12,288 values near 1 stop at 512: sums, means, scans and products of 16-bit floats
    # accumulate in float32 and round once, as PyTorch's do.
    x = rng.uniform(0.9, 1.1, (4, 3072)).astype(np.float32)
    t, ref = ferro.tensor(x).to(getattr(ferro, dtype)), torch.tensor(x).to(getattr(torch, dtype))
    exact = ref.double()  # the 16-bit values, in float64
    for got, want in ((t.sum(), exact.sum()), (t.sum(1), exact.sum(1)), (t.mean(), exact.mean()),
                      (t.flatten().cumsum(0)[-1], exact.sum()), (t.var(), exact.var()),
                      (ferro.linalg.vector_norm(t), torch.linalg.vector_norm(exact)),
                      (t[0, :60].prod(), exact[0, :60].prod()), (t[0, :60].cumprod(0)[-1], exact[0, :60].prod())):
        assert got.dtype is t.dtype
        np.testing.assert_allclose(got.float().numpy(), want.numpy(), rtol=8e-3)  # within a 16-bit rounding


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(64, 64), (3, 5, 7), (2, 4096), (2, 4097), (1, 50), (9, 1)])
@pytest.mark.parametrize("name", ["sum", "mean"])
@pytest.mark.parametrize("keepdim", [False, True])
def test_sums_along_the_last_dim_as_torch(dtype: str, shape: tuple[int, ...], name: str, keepdim: bool) -> None:
    # float rows along the last dim are summed by one matrix-vector product on cpu (rows of at most 4096), others
    # by NumPy's reduce: the same values as torch's either way, for strided inputs and non-finite values too
    x = rng.standard_normal(shape).astype(dtype)
    x.reshape(-1)[:3] = [np.inf, -np.inf, np.nan] if x.size > 3 else x.reshape(-1)[:3]
    for arr in (x, np.swapaxes(x, 0, -1)):
        f = ferro.tensor(arr)
        for fx, tx in ((f, torch.tensor(arr)), (f.mT if f.ndim > 1 else f, torch.tensor(arr).mT)):
            got = getattr(fx, name)(dim=-1, keepdim=keepdim)
            ref = getattr(tx, name)(dim=-1, keepdim=keepdim)
            assert got.shape == tuple(ref.shape) and got.dtype == getattr(ferro, dtype)
            tol = 1e-5 if dtype == "float32" else 1e-12
            np.testing.assert_allclose(got.numpy(), ref.numpy(), rtol=tol, atol=tol, equal_nan=True)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("dims", [(2, 3), (-2, -1), (-1, 2), (1, 2, 3), (1, 3), (0, 1)])
@pytest.mark.parametrize("name", ["sum", "mean"])
@pytest.mark.parametrize("keepdim", [False, True])
def test_sums_over_trailing_dims_as_torch(dtype: str, dims: tuple[int, ...], name: str, keepdim: bool) -> None:
    # a ResNet head's mean((2, 3)): the last dims of a C-contiguous float array are summed on cpu as rows of one
    # (one matrix-vector product); other dims, strided inputs and 16-bit floats by NumPy's reduce. Values and
    # gradients as torch's (the gradient a broadcast of the reduced one), non-finite values too.
    x = rng.standard_normal((4, 6, 5, 7)).astype(np.float32)
    x[0, 0, 0, :3] = [np.inf, -np.inf, np.nan]
    tol = {"float32": 1e-5, "float64": 1e-12, "float16": 2e-3, "bfloat16": 1e-2}[dtype]
    for arr in (x, np.swapaxes(x, 0, 3)):
        fx = ferro.tensor(arr).to(getattr(ferro, dtype)).requires_grad_()
        tx = torch.tensor(arr).to(getattr(torch, dtype)).requires_grad_()
        got, ref = getattr(fx, name)(dims, keepdim=keepdim), getattr(tx, name)(dims, keepdim=keepdim)
        assert got.shape == tuple(ref.shape) and got.dtype is fx.dtype
        np.testing.assert_allclose(got.detach().float().numpy(), ref.detach().float().numpy(), rtol=tol, atol=tol,
                                   equal_nan=True)
        g = rng.standard_normal(tuple(ref.shape)).astype(np.float32)
        got.backward(ferro.tensor(g).to(fx.dtype))
        ref.backward(torch.tensor(g).to(tx.dtype))
        np.testing.assert_allclose(fx.grad.float().numpy(), tx.grad.float().numpy(), rtol=tol, atol=tol)

