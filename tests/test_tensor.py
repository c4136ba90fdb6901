"""The Tensor: properties, repr, host conversions, Python operators (forward, reflected, in-place), casts, matmul."""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import ferro
from ferro.testing import assert_close

torch = pytest.importorskip("torch")
rng = np.random.default_rng(0)


def _name(d: Any) -> str:
    return str(d).removeprefix("torch.").removeprefix("ferro.")


# -- properties ---------------------------------------------------------------------


def test_properties() -> None:
    t = ferro.zeros(2, 3, 4)
    assert isinstance(t.shape, ferro.Size) and t.shape == (2, 3, 4) and t.size(-1) == 4 and t.size() == t.shape
    assert isinstance(t.size(), ferro.Size) and t.size(0) == 2
    assert t.ndim == t.dim() == 3 and t.numel() == 24 and t.shape.numel() == 24 and ferro.numel(t) == 24
    assert t.dtype is ferro.float32 and t.device == ferro.device("cpu") and str(t.device) == "cpu"
    assert t.is_leaf and t.grad_fn is None and t.grad is None and not t.requires_grad
    assert t.element_size() == 4 and t.itemsize == 4 and t.nbytes == 96
    assert t.is_floating_point() and not t.is_complex() and not t.is_cuda and ferro.is_tensor(t)
    assert ferro.zeros(()).shape == () and ferro.zeros(()).ndim == 0 and ferro.zeros(()).numel() == 1
    assert ferro.zeros(0, 3).numel() == 0
    with pytest.raises(IndexError, match="out of range"):
        t.size(3)
    assert ferro.device("cpu:0") is ferro.device("cpu") and repr(ferro.device("cuda:1")) == \
        "device(type='cuda', index=1)"
    with pytest.raises(ValueError, match="ordinal"):
        ferro.device("cuda:x")


def test_autograd_properties() -> None:
    leaf = ferro.ones(2, requires_grad=True)
    assert leaf.is_leaf and leaf.grad_fn is None and leaf.requires_grad
    out = leaf * 2
    assert not out.is_leaf and out.grad_fn is not None and out.requires_grad
    assert out.detach().is_leaf and not out.detach().requires_grad
    with ferro.no_grad():
        assert (leaf * 2).grad_fn is None
    assert (ferro.ones(2) * 2).is_leaf, "a result that needs no grad is a leaf"


def test_size_is_a_tuple_like_torch_size() -> None:
    s, ts = ferro.Size([2, 3]), torch.Size([2, 3])
    assert s == (2, 3) and isinstance(s, tuple) and repr(s) == repr(ts).replace("torch", "ferro")
    four = (4,)
    pairs = ((s + four, ts + four), (four + s, four + ts), (s[:1], ts[:1]), (s * 2, ts * 2), (s[::-1], ts[::-1]))
    for got, ref in pairs:
        assert isinstance(got, ferro.Size) and tuple(got) == tuple(ref)
    assert type(s[0]) is int and s.numel() == 6


# -- repr ---------------------------------------------------------------------------

REPR_DATA = [
    [1.5, 2.25], [[1.0, 2.0], [3.0, 4.0]], [1, 2, 3], [True, False], [True], [0.0001234, 1.0], [1.5, 2.25, 100.0],
    [-1.5, 2.0], [1e-5, 1.0], [1e10, 1.0], [float("nan"), 1.0], [float("inf"), -1.5], [-0.0, 1.0], [123456789.0],
    [0.1, 0.25], [1, -100, 5], 3.0, 3, True, -2.5, [], [1 + 2j, 3 - 1j], [0.5 + 0j], list(range(2000)),
    [[1.1] * 20] * 3, [[1e-8, 1.0], [2.0, 3.0]], [[[1, 2], [3, 4]], [[5, 6], [7, 8]]],
]


@pytest.mark.parametrize("data", REPR_DATA, ids=lambda d: repr(d)[:24])
def test_repr_matches_torch(data: Any) -> None:
    assert repr(ferro.tensor(data)) == repr(torch.tensor(data)).replace("torch.", "ferro.")
    assert str(ferro.tensor(data)) == repr(ferro.tensor(data))


@pytest.mark.parametrize("dtype", ["int32", "float64", "float16", "bfloat16", "uint8", "int8", "int16", "complex128",
                                   "int64", "bool"])
@pytest.mark.parametrize("shape", [(2,), (0,), (2, 0), (3, 1), ()], ids=str)
def test_repr_of_dtypes_and_empty_shapes_matches_torch(dtype: str, shape: tuple[int, ...]) -> None:
    ferro_dt = getattr(ferro, dtype if dtype != "bool" else "bool_")
    got = repr(ferro.ones(shape, dtype=ferro_dt) * 2 if dtype != "bool" else ferro.ones(shape, dtype=ferro_dt))
    ref = repr(torch.ones(shape, dtype=getattr(torch, dtype)) * 2 if dtype != "bool" else
               torch.ones(shape, dtype=torch.bool))
    assert got == ref.replace("torch.", "ferro.")


@pytest.mark.parametrize("seed", range(8))
def test_repr_of_random_tensors_matches_torch(seed: int) -> None:
    r = np.random.default_rng(seed)
    shape = tuple(r.integers(1, 9, r.integers(1, 4)))
    a = (r.standard_normal(shape) * 10.0 ** r.integers(-6, 9, shape)).astype(np.float32)
    a[r.random(shape) < 0.1] = np.nan
    assert repr(ferro.tensor(a)) == repr(torch.tensor(a)).replace("torch.", "ferro.")


def test_repr_with_autograd_suffixes_matches_torch() -> None:
    data = [1.5, 2.0]
    pairs = [
        (ferro.tensor(data, requires_grad=True), torch.tensor(data, requires_grad=True)),
        (ferro.tensor(data, requires_grad=True) * 2, torch.tensor(data, requires_grad=True) * 2),
        (ferro.tensor(data, requires_grad=True) + 1, torch.tensor(data, requires_grad=True) + 1),
        (ferro.tensor(data, requires_grad=True).sum(), torch.tensor(data, requires_grad=True).sum()),
        (ferro.tensor(data, dtype=ferro.float64, requires_grad=True) * 2,
         torch.tensor(data, dtype=torch.float64, requires_grad=True) * 2),
        (ferro.ones(30, requires_grad=True) / 3, torch.ones(30, requires_grad=True) / 3),
    ]
    for got, ref in pairs:
        assert repr(got) == repr(ref).replace("torch.", "ferro.")


def test_repr_follows_the_default_dtype() -> None:
    ferro.set_default_dtype(ferro.float64)
    try:
        assert repr(ferro.tensor([1.5])) == "tensor([1.5000])"
        assert repr(ferro.tensor([1.5], dtype=ferro.float32)) == "tensor([1.5000], dtype=ferro.float32)"
    finally:
        ferro.set_default_dtype(ferro.float32)
    assert repr(ferro.tensor([1.5], dtype=ferro.float64)) == "tensor([1.5000], dtype=ferro.float64)"


# -- host conversions -----------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64", "uint8", "bool", "complex64", "float16"])
def test_host_conversions(dtype: str) -> None:
    a = rng.standard_normal((3, 2)) * 10
    a = (a > 0) if dtype == "bool" else np.abs(a).astype(dtype) if dtype == "uint8" else a.astype(dtype)
    t = ferro.tensor(a)
    for out in (t.numpy(), np.asarray(t), np.array(t), np.from_dlpack(t)):
        assert out.dtype == a.dtype and out.shape == a.shape
        np.testing.assert_array_equal(out, a)
    assert t.tolist() == a.tolist()
    wide = np.complex128 if dtype.startswith("complex") else np.float64
    assert np.asarray(t, dtype=wide).dtype == wide
    back = ferro.from_dlpack(a)
    assert back.dtype.name == a.dtype.name and back.tolist() == a.tolist()
    assert t[0, 1].item() == a[0, 1].item() and type(t[0, 1].item()) is type(a[0, 1].item())


def test_numpy_shares_memory_and_dlpack_device() -> None:
    t = ferro.zeros(3)
    t.numpy()[1] = 5.0
    assert t[1].item() == 5.0, "numpy() of a CPU tensor is a view"
    assert tuple(int(v) for v in t.__dlpack_device__()) == (1, 0)
    with pytest.raises(RuntimeError, match="detach"):
        ferro.ones(2, requires_grad=True).numpy()
    assert ferro.ones(2, requires_grad=True).detach().numpy().tolist() == [1.0, 1.0]


def test_scalars_bool_len_iteration() -> None:
    assert ferro.tensor(2.5).item() == 2.5 and float(ferro.tensor([3.0])) == 3.0 and int(ferro.tensor(4)) == 4
    assert int(ferro.tensor([2.7])) == int(torch.tensor([2.7])) and int(ferro.tensor(-2.7)) == -2
    assert complex(ferro.tensor(1.0)) == 1 + 0j and type(ferro.tensor([1]).item()) is int
    assert type(ferro.tensor([True]).item()) is bool
    assert bool(ferro.tensor([1])) and not bool(ferro.tensor(0.0)) and bool(ferro.tensor([[2.0]]))
    assert bool(ferro.tensor(float("nan")))
    for many in (ferro.ones(2), ferro.ones(0)):
        with pytest.raises(RuntimeError, match="ambiguous"):
            bool(many)
    with pytest.raises(RuntimeError, match="cannot be converted"):
        ferro.ones(2).item()
    t = ferro.tensor(rng.standard_normal((3, 2)).astype(np.float32))
    assert len(t) == 3 and len(ferro.zeros(0, 3)) == 0
    rows = list(t)
    assert len(rows) == 3 and all(r.shape == (2,) for r in rows)
    assert_close(rows[2], t.numpy()[2])
    with pytest.raises(TypeError):
        len(ferro.tensor(1.0))
    with pytest.raises(TypeError):
        list(ferro.tensor(1.0))
    assert [int(x) for x in ferro.arange(3)] == [0, 1, 2]
    assert list(range(10))[ferro.tensor(3)] == 3 and list(range(5))[ferro.tensor(True)] == 1
    with pytest.raises(TypeError, match="integer"):
        list(range(10))[ferro.tensor(1.0)]
    assert f"{ferro.tensor(2.5):.2f}" == "2.50"


# -- casts and .to -------------------------------------------------------------------


@pytest.mark.parametrize("method, dtype", [("float", "float32"), ("double", "float64"), ("half", "float16"),
                                           ("bfloat16", "bfloat16"), ("int", "int32"), ("long", "int64"),
                                           ("bool", "bool")])
@pytest.mark.parametrize("data", [[0.0, 1.5, -2.7, 100.25], [0, 3, -7], [True, False]], ids=["float", "int", "bool"])
def test_cast_methods_match_torch(method: str, dtype: str, data: list[Any]) -> None:
    t, ref = getattr(ferro.tensor(data), method)(), getattr(torch.tensor(data), method)()
    assert t.dtype.name == dtype == _name(ref.dtype)
    np.testing.assert_array_equal(t.float().numpy(), ref.float().numpy())
    assert getattr(t, method)() is t, "casting to the same dtype returns self"


def test_to() -> None:
    t = ferro.tensor([1, 2])
    assert t.to("cpu") is t and t.to(ferro.int64) is t and t.to(ferro.device("cpu")) is t
    assert t.to(ferro.float64).dtype is ferro.float64
    assert t.to("cpu", ferro.float16).dtype is ferro.float16
    assert t.to(device="cpu", dtype=ferro.int32).dtype is ferro.int32
    assert t.to(ferro.zeros(1)).dtype is ferro.float32
    c = t.to(ferro.int64, copy=True)
    assert c is not t and c.tolist() == [1, 2]
    c[0] = 9
    assert t[0].item() == 1
    assert t.cpu() is t
    assert t.type() == "ferro.int64" and t.type_as(ferro.zeros(1, dtype=ferro.float64)).dtype is ferro.float64
    assert t.type(ferro.float16).dtype is ferro.float16
    with pytest.raises(TypeError, match="dtype"):
        t.to(3)
    f = ferro.tensor([1.9, -1.9, 2.5])
    assert f.to(ferro.int32).tolist() == torch.tensor([1.9, -1.9, 2.5]).to(torch.int32).tolist()
    assert f.to(ferro.bool_).tolist() == [True, True, True]


# -- operators ----------------------------------------------------------------------

ARITH = [operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv, operator.mod, operator.pow]
BITWISE = [operator.and_, operator.or_, operator.xor, operator.lshift, operator.rshift]
COMPARE = [operator.eq, operator.ne, operator.lt, operator.le, operator.gt, operator.ge]
NUMPY_OF = {operator.add: np.add, operator.sub: np.subtract, operator.mul: np.multiply,
            operator.truediv: np.true_divide, operator.floordiv: np.floor_divide, operator.mod: np.remainder,
            operator.pow: np.power, operator.and_: np.bitwise_and, operator.or_: np.bitwise_or,
            operator.xor: np.bitwise_xor, operator.lshift: np.left_shift, operator.rshift: np.right_shift,
            operator.eq: np.equal, operator.ne: np.not_equal, operator.lt: np.less, operator.le: np.less_equal,
            operator.gt: np.greater, operator.ge: np.greater_equal}


def _pair(dtype: str, positive: bool = True) -> tuple[np.ndarray, np.ndarray]:
    if dtype.startswith(("int", "uint")):
        lo = 1 if positive else -6
        return rng.integers(lo, 7, (3, 4)).astype(dtype), rng.integers(1, 4, (4,)).astype(dtype)
    return (rng.random((3, 4)) * 4 - (0 if positive else 2)).astype(dtype), (rng.random(4) + 0.5).astype(dtype)


def _ref(op: Callable[..., Any], x: Any, y: Any, dtype: str) -> np.ndarray:
    """NumPy's value of ``op`` in float64 (int arithmetic stays exact), cast to the result's dtype."""
    with np.errstate(all="ignore"):
        if op is operator.truediv:
            return np.true_divide(np.asarray(x, np.float64), np.asarray(y, np.float64))
        return NUMPY_OF[op](x, y)


def _operands(x: Any, y: Any, lib: Any) -> tuple[Any, Any]:
    conv = (lambda v: lib.tensor(v) if isinstance(v, np.ndarray) else v)
    return conv(x), conv(y)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64", "uint8"])
@pytest.mark.parametrize("op", ARITH + COMPARE, ids=lambda o: o.__name__)
@pytest.mark.parametrize("side", ["tensors", "scalar right", "scalar left", "float scalar left"])
def test_operators_match_numpy_and_torch_dtypes(op: Callable[..., Any], dtype: str, side: str) -> None:
    a, b = _pair(dtype, positive=op is operator.pow or dtype == "uint8")
    x, y = {"tensors": (a, b), "scalar right": (a, 2), "scalar left": (3, b), "float scalar left": (2.5, b)}[side]
    got = op(*_operands(x, y, ferro))
    ref_t = op(*_operands(x, y, torch))
    assert isinstance(got, ferro.Tensor)
    assert got.dtype.name == _name(ref_t.dtype), "the result dtype follows PyTorch's promotion"
    expected = _ref(op, x, y, dtype)
    if op is operator.pow and got.dtype.kind in "iu":
        expected = ref_t.numpy()  # integer powers wrap around in the tensor's dtype
    assert_close(got, np.asarray(expected).astype(got.dtype.name), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("op", BITWISE, ids=lambda o: o.__name__)
@pytest.mark.parametrize("dtype", ["int32", "int64", "uint8", "int8"])
def test_bitwise_operators(op: Callable[..., Any], dtype: str) -> None:
    a, b = rng.integers(0, 8, (3, 5)).astype(dtype), rng.integers(0, 3, (5,)).astype(dtype)
    assert_close(op(ferro.tensor(a), ferro.tensor(b)), op(a, b))
    assert_close(op(ferro.tensor(a), 2), op(a, np.array(2, dtype)))
    assert_close(op(6, ferro.tensor(b)), op(np.array(6, dtype), b))


def test_bool_operators_are_logical() -> None:
    a, b = np.array([True, True, False, False]), np.array([True, False, True, False])
    ta, tb = ferro.tensor(a), ferro.tensor(b)
    for op in (operator.and_, operator.or_, operator.xor):
        out = op(ta, tb)
        assert out.dtype is ferro.bool_
        assert_close(out, op(a, b))
    assert_close(~ta, ~a)
    assert_close(ta + tb, torch.tensor(a).add(torch.tensor(b)).numpy())
    assert_close(ta * tb, a & b)
    assert (ta & 1).dtype is ferro.int64 and (ta & True).dtype is ferro.bool_


@pytest.mark.parametrize("op", COMPARE, ids=lambda o: o.__name__)
def test_comparisons_return_bool_tensors(op: Callable[..., Any]) -> None:
    a, b = rng.integers(0, 3, (4, 3)), rng.integers(0, 3, (3,)).astype(np.float32)
    got = op(ferro.tensor(a), ferro.tensor(b))
    assert got.dtype is ferro.bool_
    assert_close(got, op(a, b))
    assert_close(op(ferro.tensor(a), 1.5), op(a, 1.5))
    assert_close(op(1, ferro.tensor(a)), op(1, a))


def test_comparison_with_foreign_objects() -> None:
    t = ferro.tensor([1, 2])
    assert (t == None) is False and (t != None) is True  # noqa: E711  (PyTorch returns False / True)
    assert (t == "a") is False and (t != object()) is True
    with pytest.raises(TypeError):
        t < None
    with pytest.raises(TypeError, match="unsupported operand"):
        t + "a"


def test_reflected_operators() -> None:
    a = (rng.random(5) + 0.5).astype(np.float32)
    t = ferro.tensor(a)
    for op in ARITH:
        assert_close(op(2, t), op(np.float32(2), a), rtol=1e-5)
        assert_close(op(2.5, t), op(np.float32(2.5), a), rtol=1e-5)
    ti = ferro.tensor([1, 2, 3])
    assert (2 - ti).tolist() == [1, 0, -1] and (2 ** ti).tolist() == [2, 4, 8] and (2 / ti).dtype is ferro.float32
    assert_close(2 / ti, 2 / np.array([1, 2, 3], np.float32))
    assert (2.5 ** ti).dtype is ferro.float32


def test_unary_operators() -> None:
    a = rng.standard_normal((2, 5)).astype(np.float32)
    t = ferro.tensor(a)
    assert_close(-t, -a)
    assert_close(abs(t), np.abs(a))
    assert_close(+t, a)
    i = np.array([-3, 0, 5])
    assert_close(~ferro.tensor(i), ~i)
    assert_close(-ferro.tensor(i), -i)
    with pytest.raises(ferro.errors.DTypeError, match=r"neg.*bool"):
        -ferro.tensor([True])
    with pytest.raises(ferro.errors.DTypeError, match=r"bitwise_not.*float32"):
        ~t


def test_integer_division_by_zero_raises_and_out_of_range_ints_wrap() -> None:
    with pytest.raises(ZeroDivisionError):
        ferro.tensor([5, -5]) // 0
    with pytest.raises(ZeroDivisionError):
        ferro.tensor([5, -5]) % ferro.tensor([1, 0])
    assert_close(ferro.tensor([1.0, -1.0, 0.0]) // 0, torch.tensor([1.0, -1.0, 0.0]).floor_divide(0).numpy())
    for dtype in ("uint8", "int8", "int16"):
        for v in (300, -1, -129, 2**40 + 3):
            x = ferro.tensor([1, 100], dtype=getattr(ferro, dtype))
            tx = torch.tensor([1, 100], dtype=getattr(torch, dtype))
            for op in (operator.add, operator.mul, operator.sub):
                assert op(x, v).tolist() == op(tx, v).tolist(), (dtype, v, op)
                assert op(v, x).tolist() == op(v, tx).tolist(), (dtype, v, op)


def test_numpy_operands() -> None:
    t = ferro.ones(3)
    assert_close(t + np.arange(3, dtype=np.float32), np.arange(3) + 1.0, check_dtype=False)
    out = np.ones(3, dtype=np.float32) * t
    assert isinstance(out, ferro.Tensor)
    assert_close(out, np.ones(3, dtype=np.float32))
    assert (t * np.float32(2)).dtype is ferro.float32 and (t * np.float64(2)).dtype is ferro.float32


# -- in-place operators ---------------------------------------------------------------

INPLACE_FLOAT = ["iadd", "isub", "imul", "itruediv", "ifloordiv", "imod", "ipow"]
INPLACE_INT = ["iadd", "isub", "imul", "ifloordiv", "imod", "ipow", "iand", "ior", "ixor", "ilshift", "irshift"]


@pytest.mark.parametrize("dtype, name", [(d, n) for d in ("float32", "float64") for n in INPLACE_FLOAT]
                         + [(d, n) for d in ("int32", "int64") for n in INPLACE_INT])
@pytest.mark.parametrize("rhs", ["tensor", "int", "0-d"])
def test_inplace_operators_match_numpy(dtype: str, name: str, rhs: str) -> None:
    a, b = _pair(dtype)
    if dtype.startswith("int"):
        b = np.minimum(b, 3).astype(dtype)
    other_np = {"tensor": b, "int": np.array(2, dtype), "0-d": np.array(3, dtype)}[rhs]
    other = {"tensor": ferro.tensor(b), "int": 2, "0-d": ferro.tensor(3, dtype=getattr(ferro, dtype))}[rhs]
    t = ferro.tensor(a)
    before, version = t, t.version
    t = getattr(operator, name)(t, other)
    assert t is before, "an in-place operator returns the same tensor"
    assert t.version == version + 1 and t.dtype.name == dtype
    ref = a.copy()
    with np.errstate(all="ignore"):
        ref = getattr(operator, name)(ref, other_np)
    assert_close(t, ref, rtol=1e-5, atol=1e-6)


def test_inplace_float_ops_on_int_tensors_are_refused_and_change_nothing() -> None:
    t = ferro.tensor([5, 7])
    version = t.version
    for name, value in (("iadd", 1.5), ("itruediv", 2), ("imul", 0.5), ("isub", ferro.ones(2))):
        with pytest.raises(ferro.errors.DTypeError, match="can't be cast"):
            getattr(operator, name)(t, value)
    with pytest.raises(ferro.errors.ShapeError, match="doesn't match the broadcast shape"):
        t += ferro.ones(3, 2, dtype=ferro.int64)
    with pytest.raises(RuntimeError, match="@="):
        t @= t
    assert t.tolist() == [5, 7] and t.version == version


def test_inplace_operator_on_a_view_writes_through() -> None:
    base = ferro.zeros(3, 4)
    ref = np.zeros((3, 4), np.float32)
    col = base[:, 1]
    col += 2
    ref[:, 1] += 2
    tr = base.T
    tr *= 3
    ref.T[...] *= 3
    sl = base[::2, 1:3]
    sl -= 1
    ref[::2, 1:3] -= 1
    assert_close(base, ref)
    assert base.version == col.version == 3


# -- matmul -----------------------------------------------------------------------------

MATMUL_SHAPES = [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)), ((5, 2, 3), (3, 4)),
                 ((5, 2, 3), (5, 3, 4)), ((2, 1, 2, 3), (4, 3, 2)), ((3,), (2, 3, 4)), ((2, 3, 4), (4,)),
                 ((1, 2, 3), (6, 3, 2)), ((0, 3), (3, 2)), ((2, 0), (0, 2))]


@pytest.mark.parametrize("sa, sb", MATMUL_SHAPES, ids=str)
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int32"])
def test_matmul_matches_numpy(sa: tuple[int, ...], sb: tuple[int, ...], dtype: str) -> None:
    if dtype.startswith("int"):
        a, b = rng.integers(-5, 6, sa).astype(dtype), rng.integers(-5, 6, sb).astype(dtype)
    else:
        a, b = rng.standard_normal(sa).astype(dtype), rng.standard_normal(sb).astype(dtype)
    got = ferro.tensor(a) @ ferro.tensor(b)
    assert_close(got, np.matmul(a, b), rtol=1e-5, atol=1e-5)
    assert_close(ferro.matmul(ferro.tensor(a), ferro.tensor(b)), np.matmul(a, b), rtol=1e-5, atol=1e-5)
    # non-contiguous operands give the same product
    at, bt = ferro.tensor(np.ascontiguousarray(a.T)).T, ferro.tensor(np.ascontiguousarray(b.T)).T
    assert_close(at @ bt, np.matmul(a, b), rtol=1e-5, atol=1e-5)


def test_matmul_errors_name_both_shapes() -> None:
    with pytest.raises(ferro.errors.ShapeError, match=r"\[2, 3\] and \[4, 5\]"):
        ferro.ones(2, 3) @ ferro.ones(4, 5)
    with pytest.raises(ferro.errors.ShapeError, match=r"\[3\] and \[4\]"):
        ferro.ones(3) @ ferro.ones(4)
    with pytest.raises(ferro.errors.ShapeError, match=r"\[2, 2, 3\] and \[3, 3, 2\]"):
        ferro.ones(2, 2, 3) @ ferro.ones(3, 3, 2)
    with pytest.raises(ferro.errors.ShapeError, match="at least 1 dimension"):
        ferro.tensor(1.0) @ ferro.ones(2)
    with pytest.raises(ferro.errors.DTypeError, match=r"matmul.*bool"):
        ferro.ones(3, dtype=ferro.bool_) @ ferro.ones(3, dtype=ferro.bool_)
    with pytest.raises(TypeError):
        ferro.matmul(ferro.ones(2), [1.0, 2.0])


def test_matmul_family() -> None:
    a, b = rng.standard_normal((2, 3)).astype(np.float32), rng.standard_normal((3, 4)).astype(np.float32)
    assert_close(ferro.mm(ferro.tensor(a), ferro.tensor(b)), a @ b, rtol=1e-5)
    assert_close(ferro.mv(ferro.tensor(a), ferro.tensor(b[:, 0])), a @ b[:, 0], rtol=1e-5)
    assert_close(ferro.dot(ferro.tensor(b[:, 0]), ferro.tensor(b[:, 1])), np.dot(b[:, 0], b[:, 1]), rtol=1e-5)
    assert_close(ferro.bmm(ferro.tensor(a[None]), ferro.tensor(b[None])), (a @ b)[None], rtol=1e-5)
    assert_close(ferro.tensor(a).matmul(ferro.tensor(b)), a @ b, rtol=1e-5)
    with pytest.raises(ferro.errors.ShapeError, match="2-D"):
        ferro.mm(ferro.tensor(a[0]), ferro.tensor(b))
    with pytest.raises(ferro.errors.ShapeError, match="3-D"):
        ferro.bmm(ferro.tensor(a), ferro.tensor(b))
    with pytest.raises(ferro.errors.ShapeError, match="1-D"):
        ferro.dot(ferro.tensor(a), ferro.tensor(b))
