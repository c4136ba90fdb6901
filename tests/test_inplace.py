"""In-place ops (``x.add_(y)``, ``x.exp_()``, ``copy_``, ``fill_``, ``zero_``): same values as the out-of-place
op written back (checked against PyTorch's in-place methods and NumPy), through views, with the version
counter, and leaving the tensor untouched when they fail."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import ferro
from ferro._core.dtypes import can_cast
from ferro._ops import REGISTRY
from ferro._ops.elementwise import BINARY, DECOMPOSITIONS, UNARY
from ferro.testing import assert_close

torch = pytest.importorskip("torch")
rng = np.random.default_rng(6)

UNARY_INPLACE = [n for n, *_ in UNARY + DECOMPOSITIONS if n not in ("isnan", "isinf", "isfinite", "positive")]
BINARY_INPLACE = [n for n, *_ in BINARY]
POSITIVE = {"log", "sqrt", "log1p", "rsqrt", "reciprocal", "log2", "log10", "lgamma", "digamma", "acosh"}
UNIT = {"asin", "acos", "atanh", "erfinv"}


def _input(name: str, dtype: str, shape: tuple[int, ...] = (3, 4)) -> np.ndarray:
    if dtype == "bool":
        return rng.random(shape) > 0.5
    if dtype.startswith("int"):
        return rng.integers(1 if name in POSITIVE else -4, 5, shape).astype(dtype)
    x = rng.uniform(-2, 2, shape)
    if name in POSITIVE:
        x = np.abs(x) + 1.1
    elif name in UNIT:
        x = x / 2.5
    return x.astype(dtype)


def _torch_inplace(name: str, *args: Any) -> Any:
    """PyTorch's ``name_`` on copies of the inputs; None where PyTorch has no such method or refuses it."""
    t = torch.from_numpy(args[0].copy())
    rest = [torch.from_numpy(a.copy()) if isinstance(a, np.ndarray) else a for a in args[1:]]
    method = getattr(t, name + "_", None)
    if method is None:
        return None
    try:
        return method(*rest).numpy()
    except (RuntimeError, TypeError, NotImplementedError):
        return None


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
@pytest.mark.parametrize("name", UNARY_INPLACE)
def test_unary_inplace_matches_out_of_place_and_torch(name: str, dtype: str) -> None:
    a = _input(name, dtype)
    x = ferro.tensor(a)
    method = getattr(x, name + "_")
    table = REGISTRY[name].table
    result_dt = table[x.dtype][1] if x.dtype in table else None
    if result_dt is None or not can_cast(result_dt, x.dtype):
        with pytest.raises(ferro.errors.DTypeError, match=name):
            method()
        assert_close(x, a, msg="a refused in-place op leaves the tensor as it was")
        assert x.version == 0
        return
    expected = getattr(ferro, name)(ferro.tensor(a)).to(x.dtype)
    out = method()
    assert out is x and x.version == 1 and x.dtype.name == dtype
    assert_close(x, expected.numpy())
    ref = _torch_inplace(name, a)
    if ref is not None:
        assert_close(x, ref, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", ["float32", "int32", "bool"])
@pytest.mark.parametrize("name", BINARY_INPLACE)
def test_binary_inplace_matches_out_of_place_and_torch(name: str, dtype: str) -> None:
    a = _input(name, dtype)
    b = _input(name, dtype, (4,))
    if name in ("floor_divide", "remainder") and dtype == "int32":
        b = np.where(b == 0, 2, b).astype(dtype)
    if name == "pow" and dtype == "int32":
        b = np.abs(b)
    for other, other_np in ((ferro.tensor(b), b), (2, 2)):
        x = ferro.tensor(a)
        try:
            expected = getattr(ferro, name)(ferro.tensor(a), other)
        except (ferro.errors.DTypeError, ZeroDivisionError):
            with pytest.raises((ferro.errors.DTypeError, ZeroDivisionError)):
                getattr(x, name + "_")(other)
            assert_close(x, a)
            continue
        if not can_cast(expected.dtype, x.dtype):
            with pytest.raises(ferro.errors.DTypeError, match="can't be cast"):
                getattr(x, name + "_")(other)
            assert_close(x, a)
            assert x.version == 0
            continue
        out = getattr(x, name + "_")(other)
        assert out is x and x.version == 1 and x.dtype.name == dtype
        assert_close(x, expected.to(x.dtype).numpy())
        ref = _torch_inplace(name, a, other_np)
        if ref is not None:
            assert_close(x, ref, rtol=1e-5, atol=1e-6)


def test_inplace_ops_write_through_views() -> None:
    a = rng.standard_normal((4, 6)).astype(np.float32)
    t = ferro.tensor(a)
    t[:, 1].exp_()
    a[:, 1] = np.exp(a[:, 1])
    t.T[2].add_(1.5)
    a.T[2] += 1.5
    t[::2, 3:].zero_()
    a[::2, 3:] = 0
    t.view(-1)[::5].fill_(-7.0)
    a.reshape(-1)[::5] = -7
    t[1:3].mul_(ferro.tensor([2.0, 3.0, 4.0, 5.0, 6.0, 7.0]))
    a[1:3] *= np.array([2, 3, 4, 5, 6, 7], np.float32)
    t.permute(1, 0)[0].neg_()
    a[:, 0] = -a[:, 0]
    assert_close(t, a, rtol=1e-6)
    assert t.version == 6


def test_failed_inplace_ops_change_nothing() -> None:
    t = ferro.tensor([[1.0, 2.0], [3.0, 4.0]])
    with pytest.raises(ferro.errors.ShapeError, match=r"output with shape \[2, 2\].*broadcast shape \[3, 2, 2\]"):
        t.add_(ferro.ones(3, 2, 2))
    with pytest.raises(ferro.errors.ShapeError, match=r"\[2, 2\].*\[3\]"):
        t.mul_(ferro.ones(3))
    i = ferro.tensor([1, 2])
    with pytest.raises(ferro.errors.DTypeError, match=r"div_.*float32.*int64"):
        i.div_(2)
    with pytest.raises(ferro.errors.DTypeError, match=r"exp_.*float32.*int64"):
        i.exp_()
    with pytest.raises(ferro.errors.DTypeError, match=r"add_.*float64.*int64"):
        i.add_(ferro.ones(2, dtype=ferro.float64))
    assert t.tolist() == [[1.0, 2.0], [3.0, 4.0]] and t.version == 0
    assert i.tolist() == [1, 2] and i.version == 0


def test_inplace_with_overlapping_operands_matches_numpy() -> None:
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = ferro.tensor(a)
    t[1:] += t[:-1]
    ref = a.copy()
    ref[1:] += ref[:-1]  # NumPy buffers overlapping operands: the old values are read
    assert_close(t, ref)
    s = ferro.tensor(np.arange(9.0).reshape(3, 3))
    s.add_(s.T)
    assert_close(s, np.arange(9.0).reshape(3, 3) + np.arange(9.0).reshape(3, 3).T)
    s.mul_(s)
    assert_close(s, (np.arange(9.0).reshape(3, 3) + np.arange(9.0).reshape(3, 3).T) ** 2)


def test_copy_() -> None:
    x = ferro.zeros(2, 3)
    out = x.copy_(ferro.tensor([1.0, 2.0, 3.0]))  # broadcast
    assert out is x and x.tolist() == [[1.0, 2.0, 3.0]] * 2 and x.version == 1
    x.copy_(ferro.tensor([[1, 2, 3], [4, 5, 6]], dtype=ferro.int64))  # cast
    assert x.dtype is ferro.float32 and x.tolist() == [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
    i = ferro.zeros(3, 2, dtype=ferro.int32)
    i.copy_(ferro.tensor([[1.9, -1.9, 2.5], [0.1, 7.7, -0.5]]).T)  # non-contiguous source, float -> int
    assert i.tolist() == torch.zeros(3, 2, dtype=torch.int32).copy_(
        torch.tensor([[1.9, -1.9, 2.5], [0.1, 7.7, -0.5]]).T).tolist()
    base = ferro.zeros(3, 4)
    base.T[1:3].copy_(ferro.ones(2, 3))  # into a non-contiguous view
    ref = np.zeros((3, 4), np.float32)
    ref.T[1:3] = 1
    assert_close(base, ref)
    with pytest.raises(ferro.errors.ShapeError):
        x.copy_(ferro.ones(4))
    with pytest.raises(TypeError, match="Tensor"):
        x.copy_([1.0, 2.0, 3.0])


@pytest.mark.parametrize("dtype, value", [("float32", 2.5), ("float32", 3), ("int64", 7), ("int32", 2.9),
                                          ("bool", True), ("float64", ferro.tensor(1.25)), ("uint8", 255)])
def test_fill_and_zero(dtype: str, value: Any) -> None:
    d = ferro.bool_ if dtype == "bool" else getattr(ferro, dtype)
    t = ferro.ones(2, 3, dtype=d)
    out = t.fill_(value)
    plain = value.item() if isinstance(value, ferro.Tensor) else value
    ref = torch.ones(2, 3, dtype=getattr(torch, dtype)).fill_(plain)
    assert out is t and t.dtype is d and t.version == 1
    assert_close(t, ref.numpy())
    t.zero_()
    assert_close(t, np.zeros((2, 3), dtype=dtype))
    assert t.version == 2


def test_inplace_on_a_leaf_that_requires_grad_is_refused() -> None:
    w = ferro.ones(3, requires_grad=True)
    for op in (lambda: w.add_(1), lambda: w.exp_(), lambda: w.zero_(), lambda: w.fill_(2.0),
               lambda: w.copy_(ferro.zeros(3))):
        with pytest.raises(RuntimeError, match="leaf"):
            op()
    with pytest.raises(RuntimeError, match="leaf"):
        w += 1
    assert w.tolist() == [1.0, 1.0, 1.0]
    with ferro.no_grad():
        w.mul_(3)
        w += 1
    assert w.tolist() == [4.0, 4.0, 4.0] and w.is_leaf and w.requires_grad


def test_clamp_inplace_matches_numpy() -> None:
    a = rng.standard_normal((3, 4)).astype(np.float32)
    t = ferro.tensor(a)
    assert t.clamp_(-0.5, 0.5) is t
    assert_close(t, np.clip(a, -0.5, 0.5))
    t2 = ferro.tensor(a)
    t2.clamp_min_(0.0)
    assert_close(t2, np.maximum(a, 0))


@pytest.mark.parametrize("method", ["mul_", "add_", "sub_", "div_", "zero_", "fill_", "clamp_", "exp_", "copy_"])
def test_inplace_on_an_empty_tensor_is_allowed(method: str) -> None:
    """NumPy gives an empty array stride 0, which is no overlap: PyTorch writes nothing and returns the tensor."""
    args = {"mul_": (2,), "add_": (1.0,), "sub_": (1.0,), "div_": (2.0,), "zero_": (), "fill_": (3.0,),
            "clamp_": (0.0, 1.0), "exp_": ()}.get(method, (ferro.zeros(0, 3),))
    x, t = ferro.zeros(0, 3), torch.zeros(0, 3)
    got = getattr(x, method)(*args)
    want = getattr(t, method)(*(torch.zeros(0, 3) if isinstance(a, ferro.Tensor) else a for a in args))
    assert got is x and tuple(got.shape) == tuple(want.shape) == (0, 3)
    assert x._version == 1
