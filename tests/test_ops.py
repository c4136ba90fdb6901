"""The first op set against NumPy / PyTorch: elementwise, reductions, shape, indexing, matmul."""

from __future__ import annotations

import numpy as np
import pytest

import ferro
from ferro._ops import REGISTRY
from ferro._ops.elementwise import BINARY, DECOMPOSITIONS, UNARY
from ferro.testing import assert_close

torch = pytest.importorskip("torch")
rng = np.random.default_rng(1)

POSITIVE_ONLY = {"log", "sqrt", "log1p", "rsqrt", "reciprocal"}
UNIT_INTERVAL = {"asin", "acos", "atanh"}


def _input(name: str, shape: tuple[int, ...], dtype: str) -> np.ndarray:
    if dtype == "bool":
        return rng.random(shape) > 0.5
    if dtype.startswith("int") or dtype.startswith("uint"):
        return rng.integers(1 if name in POSITIVE_ONLY else -5, 6, shape).astype(dtype)
    x = rng.standard_normal(shape)
    if name in POSITIVE_ONLY:
        x = np.abs(x) + 0.1
    return x.astype(dtype)


def _torch_result(name: str, *args: object) -> torch.Tensor:
    alias = {"neg": "neg", "floor_divide": "floor_divide", "bitwise_not": "bitwise_not"}
    tfn = getattr(torch, alias.get(name, name))
    targs = [torch.from_numpy(np.ascontiguousarray(a)) if isinstance(a, np.ndarray) else a for a in args]
    return tfn(*targs)


#: (op, dtype) that PyTorch refuses and ferro computes, as NumPy and the Array API standard do: the result is
#: compared with NumPy instead. Any other refusal by PyTorch must be a refusal by ferro too.
FERRO_ACCEPTS = {
    **{(n, "bool"): "NumPy semantics: rounding a bool is the identity, abs of a bool is the bool"
       for n in ("abs", "ceil", "floor", "round", "trunc")},
    **{(n, d): "integers and bools are promoted to float32, as NumPy promotes them"
       for n in ("hypot", "logaddexp") for d in ("bool", "int32", "int64")},
}
NUMPY_NAME = {"round": "rint"}
#: Ops PyTorch refuses with a Python scalar operand and ferro takes (the Array API standard allows scalars).
SCALAR_ACCEPTS = {"maximum": "torch.maximum takes only tensors"}


def _torch_refuses(name: str, dtype: str, args: tuple[np.ndarray, ...], run: object) -> None:
    """PyTorch refused ``name`` at ``dtype``: ferro refuses too, or computes what NumPy does (FERRO_ACCEPTS)."""
    if (name, dtype) in FERRO_ACCEPTS:
        got = run()
        if got.dtype.is_floating_point:  # NumPy would compute bools in float16; ferro promotes to float32
            args = tuple(a.astype(np.float32) for a in args)
        with np.errstate(all="ignore"):
            expected = getattr(np, NUMPY_NAME.get(name, name))(*args)
        assert_close(got, expected, check_dtype=False)
        return
    with pytest.raises((ferro.errors.DTypeError, TypeError, ferro.errors.UnsupportedOperationError)):
        run()


def _compare(got: ferro.Tensor, ref: torch.Tensor) -> None:
    assert got.dtype.name == str(ref.dtype).removeprefix("torch."), (got.dtype, ref.dtype)
    r = ref.numpy()
    tol = 2e-3 if got.dtype in (ferro.float16,) else 1e-5
    np.testing.assert_allclose(got.numpy().astype(np.float64), r.astype(np.float64), rtol=tol, atol=tol,
                               equal_nan=True)


UNARY_NAMES = [n for n, *_ in UNARY] + [n for n, *_ in DECOMPOSITIONS]
BINARY_NAMES = [n for n, *_ in BINARY]
DTYPES = ["float32", "float64", "int32", "int64", "bool", "float16"]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", UNARY_NAMES)
def test_unary_matches_torch(name: str, dtype: str) -> None:
    op = REGISTRY[name]
    a = _input(name, (3, 5), dtype)
    if getattr(ferro, dtype if dtype != "bool" else "bool_") not in op.table:
        with pytest.raises(ferro.errors.DTypeError, match=name):
            getattr(ferro, name)(ferro.tensor(a))
        return
    try:
        ref = _torch_result(name, a)
    except (RuntimeError, TypeError):
        _torch_refuses(name, dtype, (a,), lambda: getattr(ferro, name)(ferro.tensor(a)))
        return
    _compare(getattr(ferro, name)(ferro.tensor(a)), ref)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", BINARY_NAMES)
def test_binary_matches_torch_with_broadcasting(name: str, dtype: str) -> None:
    a, b = _input(name, (3, 1, 4), dtype), _input(name, (5, 4), dtype)
    if name in ("floor_divide", "remainder") and dtype != "bool":
        b = np.where(b == 0, 1, b).astype(dtype)
    if name == "pow" and dtype.startswith("int"):  # integers to negative powers are an error in NumPy
        b = np.abs(b)
    fn = getattr(ferro, name)
    d = getattr(ferro, dtype if dtype != "bool" else "bool_")
    if d not in REGISTRY[name].table:
        with pytest.raises(ferro.errors.DTypeError, match=name):
            fn(ferro.tensor(a), ferro.tensor(b))
        return
    try:
        ref = _torch_result(name, a, b)
    except (RuntimeError, TypeError):
        _torch_refuses(name, dtype, (a, b), lambda: fn(ferro.tensor(a), ferro.tensor(b)))
        return
    _compare(fn(ferro.tensor(a), ferro.tensor(b)), ref)


@pytest.mark.parametrize("name", ["add", "mul", "sub", "div", "pow", "maximum", "lt", "eq", "remainder"])
@pytest.mark.parametrize("scalar", [2, 2.5, True])
def test_binary_with_python_scalars(name: str, scalar: object) -> None:
    a = (rng.random((2, 3)) + 0.5).astype(np.float32)
    ai = rng.integers(1, 5, (2, 3)).astype(np.int32)
    for arr in (a, ai):
        if name == "sub" and scalar is True:
            continue
        tfn = getattr(torch, name)
        try:
            ref = tfn(torch.from_numpy(arr), scalar)
        except (RuntimeError, TypeError):
            if name in SCALAR_ACCEPTS:  # compared with NumPy, at ferro's result dtype
                got = getattr(ferro, name)(ferro.tensor(arr), scalar)
                assert_close(got, getattr(np, name)(arr, scalar).astype(got.numpy().dtype), check_dtype=False)
            else:
                with pytest.raises((ferro.errors.DTypeError, TypeError)):
                    getattr(ferro, name)(ferro.tensor(arr), scalar)
            continue
        _compare(getattr(ferro, name)(ferro.tensor(arr), scalar), ref)


def test_non_contiguous_empty_and_special_values() -> None:
    a = rng.standard_normal((4, 6)).astype(np.float32)
    t = ferro.tensor(a)
    assert_close(t.T.exp(), np.exp(a.T))
    assert_close(t[::2, 1::3] * t[1::2, ::3], a[::2, 1::3] * a[1::2, ::3])
    assert (ferro.ones(0, 3) + ferro.ones(3)).shape == (0, 3)
    special = np.array([np.inf, -np.inf, np.nan, -0.0, 0.0], dtype=np.float32)
    s = ferro.tensor(special)
    # sign is left out: sign(nan) is nan here (the Array API standard), 0 in PyTorch.
    for name in ("exp", "sqrt", "tanh", "sigmoid", "relu", "abs", "isnan", "isinf", "isfinite"):
        with np.errstate(all="ignore"):
            _compare(getattr(ferro, name)(s), getattr(torch, name)(torch.from_numpy(special)))
    assert np.signbit((-s)[4].numpy()) and not np.signbit((-s)[3].numpy())


def test_where() -> None:
    a, b = rng.standard_normal((3, 4)).astype(np.float32), rng.standard_normal(4).astype(np.float32)
    assert_close(ferro.where(ferro.tensor(a) > 0, ferro.tensor(a), ferro.tensor(b)), np.where(a > 0, a, b))
    assert_close(ferro.where(ferro.tensor(a) > 0, ferro.tensor(a), 0.0), np.where(a > 0, a, 0).astype(np.float32))
    assert ferro.where(ferro.tensor([True, False]), 1, 2).dtype is ferro.int64
    with pytest.raises(TypeError, match="bool"):
        ferro.where(ferro.tensor([1, 0]), 1, 2)


def test_errors_name_the_op_dtype_and_shapes() -> None:
    with pytest.raises(ferro.errors.DTypeError, match=r"bitwise_and.*float32"):
        ferro.ones(2) & ferro.ones(2)
    with pytest.raises(ferro.errors.DTypeError, match=r"sub.*bool"):
        ferro.tensor([True]) - ferro.tensor([False])
    with pytest.raises(ferro.errors.ShapeError, match=r"\[2, 3\].*\[4\]"):
        ferro.ones(2, 3) + ferro.ones(4)
    with pytest.raises(ferro.errors.ShapeError, match=r"\[2, 3\] and \[2, 3\].*3 != 2"):
        ferro.ones(2, 3) @ ferro.ones(2, 3)


# -- reductions -------------------------------------------------------------------

DIMS = [None, 0, 1, -1, (0, 2), (-1, 0)]


@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("dim", DIMS, ids=str)
@pytest.mark.parametrize("name", ["sum", "mean", "amax", "amin"])
def test_reductions_match_torch(name: str, dim: object, keepdim: bool) -> None:
    a = rng.standard_normal((3, 4, 5)).astype(np.float32)
    t, ta = ferro.tensor(a), torch.from_numpy(a)
    tdim = () if (dim is None and name in ("amax", "amin")) else dim
    ref = getattr(torch, name)(ta, dim=tdim, keepdim=keepdim) if dim is not None or name in ("amax", "amin") \
        else getattr(torch, name)(ta)
    got = getattr(ferro, name)(t, dim, keepdim) if dim is not None or name in ("amax", "amin") \
        else getattr(ferro, name)(t)
    if dim is None and keepdim and name in ("sum", "mean"):
        got, ref = getattr(ferro, name)(t, None, True), ta.sum().reshape(1, 1, 1) if name == "sum" else \
            ta.mean().reshape(1, 1, 1)
    _compare(got, ref)


def test_sum_dtypes_and_mean_errors() -> None:
    assert ferro.tensor([1, 2], dtype=ferro.int8).sum().dtype is ferro.int64
    assert ferro.tensor([True, True]).sum().item() == 2
    assert ferro.tensor([1, 2]).sum(dtype=ferro.float64).dtype is ferro.float64
    with pytest.raises(ferro.errors.DTypeError, match="mean"):
        ferro.tensor([1, 2]).mean()
    assert ferro.tensor([1, 2]).mean(dtype=ferro.float32).item() == 1.5
    with pytest.raises(IndexError, match="empty"):
        ferro.ones(0).amax()
    with pytest.raises(IndexError, match="out of range"):
        ferro.ones(2, 2).sum(2)


@pytest.mark.parametrize("name", ["max", "min"])
@pytest.mark.parametrize("keepdim", [False, True])
def test_max_min_with_dim_match_torch(name: str, keepdim: bool) -> None:
    a = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 0.0]], dtype=np.float32)  # ties: first index, as torch
    got = getattr(ferro.tensor(a), name)(1, keepdim)
    ref = getattr(torch.from_numpy(a), name)(1, keepdim)
    _compare(got.values, ref.values)
    _compare(got.indices, ref.indices)
    _compare(getattr(ferro.tensor(a), name)(), getattr(torch.from_numpy(a), name)())
    _compare(getattr(ferro, "maximum" if name == "max" else "minimum")(ferro.tensor(a), ferro.tensor(a[::-1].copy())),
             getattr(torch, name)(torch.from_numpy(a), torch.from_numpy(a[::-1].copy())))


@pytest.mark.parametrize("name", ["argmax", "argmin"])
@pytest.mark.parametrize("dim, keepdim", [(None, False), (None, True), (0, False), (-1, True)])
def test_argmax_argmin(name: str, dim: int | None, keepdim: bool) -> None:
    a = rng.standard_normal((4, 5)).astype(np.float32)
    _compare(getattr(ferro, name)(ferro.tensor(a), dim, keepdim), getattr(torch, name)(torch.from_numpy(a), dim,
                                                                                        keepdim))


# -- shape ops --------------------------------------------------------------------


def test_reshape_and_view() -> None:
    a = np.arange(24, dtype=np.float32)
    t = ferro.tensor(a)
    assert_close(t.reshape(2, -1, 4), a.reshape(2, -1, 4))
    assert_close(t.reshape((4, 6)), a.reshape(4, 6))
    v = t.view(4, 6)
    v[0, 0] = 100.0
    assert t[0].item() == 100.0, "a view shares storage with its base"
    a[0] = 100.0
    with pytest.raises(ferro.errors.ShapeError, match=r"invalid for input of size 24"):
        t.reshape(5, -1)
    with pytest.raises(ferro.errors.ShapeError, match="reshape"):
        t.view(4, 6).T.view(24)
    assert_close(t.view(4, 6).T.reshape(24), a.reshape(4, 6).T.reshape(24))
    assert_close(t.flatten(), a)
    assert ferro.zeros(2, 3, 4).flatten(1).shape == (2, 12)


def test_permute_transpose_squeeze_expand() -> None:
    a = rng.standard_normal((2, 3, 4)).astype(np.float32)
    t = ferro.tensor(a)
    assert_close(t.permute(2, 0, 1), a.transpose(2, 0, 1))
    assert_close(t.transpose(0, 2), a.swapaxes(0, 2))
    assert_close(t.mT, a.swapaxes(-1, -2))
    assert_close(t[0].T, a[0].T)
    assert t.unsqueeze(1).shape == (2, 1, 3, 4) and t.unsqueeze(-1).shape == (2, 3, 4, 1)
    assert ferro.zeros(1, 3, 1).squeeze().shape == (3,) and ferro.zeros(1, 3, 1).squeeze(0).shape == (3, 1)
    e = ferro.tensor([[1.0], [2.0]]).expand(2, 3)
    assert_close(e, np.broadcast_to([[1.0], [2.0]], (2, 3)).astype(np.float32))
    assert ferro.ones(3).expand(2, -1).shape == (2, 3)
    with pytest.raises(ferro.errors.ShapeError, match="non-singleton"):
        ferro.ones(3).expand(2, 4)
    with pytest.raises(ferro.errors.ShapeError, match="permutation"):
        t.permute(0, 1)


def test_cat_stack_contiguous_clone() -> None:
    a, b = rng.standard_normal((2, 3)).astype(np.float32), rng.standard_normal((4, 3)).astype(np.float64)
    got = ferro.cat([ferro.tensor(a), ferro.tensor(b)])
    assert got.dtype is ferro.float64
    assert_close(got, np.concatenate([a, b]))
    assert_close(ferro.stack([ferro.tensor(a), ferro.tensor(a)], 1), np.stack([a, a], 1))
    with pytest.raises(ferro.errors.ShapeError, match=r"tensor 1 has shape \[4, 3\]"):
        ferro.cat([ferro.tensor(a), ferro.tensor(b)], 1)
    t = ferro.tensor(a)
    assert t.contiguous() is t
    assert t.T.contiguous() is not t.T
    c = t.clone()
    c[0, 0] = 42
    assert t[0, 0].item() != 42


# -- indexing ---------------------------------------------------------------------

KEYS = [1, -1, (0, 2), slice(1, None), (slice(None), 1), (slice(None, None, 2), slice(1, 4, 2)), (None, 1),
        (Ellipsis, 0), [0, 2, 2], ([0, 1], [1, 3]), (slice(None), [3, 0])]


@pytest.mark.parametrize("key", KEYS, ids=repr)
def test_getitem_matches_numpy(key: object) -> None:
    a = rng.standard_normal((3, 5)).astype(np.float32)
    assert_close(ferro.tensor(a)[key], a[key])


def test_getitem_with_tensors_and_masks() -> None:
    a = rng.standard_normal((3, 5)).astype(np.float32)
    t = ferro.tensor(a)
    assert_close(t[t > 0], a[a > 0])
    assert_close(t[ferro.tensor([2, 0])], a[[2, 0]])
    assert_close(t[ferro.tensor([True, False, True])], a[[True, False, True]])
    with pytest.raises(IndexError, match=r"shape \[3, 5\]"):
        t[7]
    with pytest.raises(IndexError, match="long, int, byte or bool"):
        t[ferro.tensor([1.0])]


def test_basic_indexing_is_a_view() -> None:
    t = ferro.zeros(3, 4)
    row = t[1]
    row += 1
    t[:, 0][2] = 5
    expect = np.zeros((3, 4), np.float32)
    expect[1] += 1
    expect[2, 0] = 5
    assert_close(t, expect)


@pytest.mark.parametrize("key, value", [(0, 5.0), ((slice(None), 1), [1.0, 2.0, 3.0]), ([0, 2], 7.0),
                                        (slice(1, None), np.ones(5)), ((1, [0, 4]), [8.0, 9.0])], ids=repr)
def test_setitem_matches_numpy(key: object, value: object) -> None:
    a = rng.standard_normal((3, 5)).astype(np.float32)
    t = ferro.tensor(a)
    t[key] = ferro.tensor(np.asarray(value, dtype=np.float32)) if isinstance(value, (list, np.ndarray)) else value
    a[key] = value
    assert_close(t, a)


def test_setitem_mask_and_version() -> None:
    a = rng.standard_normal((3, 5)).astype(np.float32)
    t = ferro.tensor(a)
    v = t.version
    t[t > 0] = 0.0
    a[a > 0] = 0
    assert_close(t, a)
    assert t.version == v + 1
    with pytest.raises(ferro.errors.ShapeError, match="broadcast"):
        t[0] = ferro.ones(4)


def test_index_put_accumulates_duplicates() -> None:
    t = ferro.zeros(4)
    out = t.index_put((ferro.tensor([0, 0, 2]),), ferro.tensor([1.0, 2.0, 3.0]), accumulate=True)
    assert out.tolist() == [3.0, 0.0, 3.0, 0.0] and t.tolist() == [0.0] * 4


# -- matmul ------------------------------------------------------------------------

SHAPES = [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)), ((5, 2, 3), (3, 4)),
          ((5, 2, 3), (5, 3, 4)), ((2, 1, 2, 3), (4, 3, 2)), ((3,), (2, 3, 4))]


@pytest.mark.parametrize("sa, sb", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_matmul_matches_numpy(sa: tuple[int, ...], sb: tuple[int, ...], dtype: str) -> None:
    a, b = _input("matmul", sa, dtype), _input("matmul", sb, dtype)
    assert_close(ferro.tensor(a) @ ferro.tensor(b), np.matmul(a, b), rtol=1e-5, atol=1e-5)


def test_matmul_family() -> None:
    a, b = rng.standard_normal((2, 3)).astype(np.float32), rng.standard_normal((3, 4)).astype(np.float32)
    assert_close(ferro.mm(ferro.tensor(a), ferro.tensor(b)), a @ b, rtol=1e-5)
    assert_close(ferro.mv(ferro.tensor(a), ferro.tensor(b[:, 0])), a @ b[:, 0], rtol=1e-5)
    assert_close(ferro.dot(ferro.tensor(b[:, 0]), ferro.tensor(b[:, 1])), np.dot(b[:, 0], b[:, 1]), rtol=1e-5)
    assert_close(ferro.bmm(ferro.tensor(a[None]), ferro.tensor(b[None])), (a @ b)[None], rtol=1e-5)
    with pytest.raises(ferro.errors.ShapeError, match="2-D"):
        ferro.mm(ferro.tensor(a[0]), ferro.tensor(b))
    with pytest.raises(ferro.errors.ShapeError, match="at least 1 dimension"):
        ferro.tensor(1.0) @ ferro.tensor(a)
