"""The Tensor: creation, properties, conversions, repr, operators."""

from __future__ import annotations

import operator

import numpy as np
import pytest

import ferro
from ferro.testing import assert_close

torch = pytest.importorskip("torch")
rng = np.random.default_rng(0)


# -- creation ---------------------------------------------------------------------


def test_tensor_copies_and_infers_like_torch() -> None:
    src = np.arange(6, dtype=np.int32).reshape(2, 3)
    t = ferro.tensor(src)
    src[0, 0] = 100
    assert t.dtype is ferro.int32 and t[0, 0].item() == 0
    for data in ([1, 2], [1.0, 2], [True, False], [[1, 2], [3, 4]], 3.5, [1 + 2j]):
        assert ferro.tensor(data).dtype.name == str(torch.tensor(data).dtype).removeprefix("torch.")
    with pytest.raises(TypeError, match="rectangular"):
        ferro.tensor([[1, 2], [3]])


def test_from_numpy_and_as_tensor_share_memory() -> None:
    a = np.zeros(3, dtype=np.float64)
    t = ferro.from_numpy(a)
    a[1] = 5
    assert t.dtype is ferro.float64 and t.tolist() == [0.0, 5.0, 0.0]
    u = ferro.as_tensor(a)
    u[2] = 7
    assert a[2] == 7
    with pytest.raises(TypeError, match=r"numpy\.ndarray"):
        ferro.from_numpy([1, 2])


@pytest.mark.parametrize("make, ref", [
    (lambda: ferro.zeros(2, 3), lambda: np.zeros((2, 3), np.float32)),
    (lambda: ferro.zeros((2, 3), dtype=ferro.int16), lambda: np.zeros((2, 3), np.int16)),
    (lambda: ferro.ones([4]), lambda: np.ones(4, np.float32)),
    (lambda: ferro.full((2,), 3), lambda: np.full(2, 3, np.int64)),
    (lambda: ferro.full((2,), 1.5), lambda: np.full(2, 1.5, np.float32)),
    (lambda: ferro.full((2,), True), lambda: np.full(2, True)),
    (lambda: ferro.arange(5), lambda: np.arange(5)),
    (lambda: ferro.arange(1, 10, 3), lambda: np.arange(1, 10, 3)),
    (lambda: ferro.arange(5, 0, -2), lambda: np.arange(5, 0, -2)),
    (lambda: ferro.arange(0.0, 1.0, 0.25), lambda: np.arange(0, 1, 0.25, dtype=np.float32)),
    (lambda: ferro.linspace(-1, 1, 5), lambda: np.linspace(-1, 1, 5, dtype=np.float32)),
    (lambda: ferro.eye(3), lambda: np.eye(3, dtype=np.float32)),
    (lambda: ferro.eye(2, 3, dtype=ferro.int64), lambda: np.eye(2, 3, dtype=np.int64)),
    (lambda: ferro.zeros_like(ferro.ones(2, dtype=ferro.int8)), lambda: np.zeros(2, np.int8)),
    (lambda: ferro.ones_like(ferro.zeros(2, 2)), lambda: np.ones((2, 2), np.float32)),
    (lambda: ferro.full_like(ferro.zeros(3), 2.5), lambda: np.full(3, 2.5, np.float32)),
], ids=lambda f: "")
def test_creation_matches_numpy(make: object, ref: object) -> None:
    assert_close(make(), ref())  # type: ignore[operator]


def test_empty_and_requires_grad() -> None:
    e = ferro.empty(2, 3, dtype=ferro.float64)
    assert e.shape == (2, 3) and e.dtype is ferro.float64
    assert ferro.zeros(2, requires_grad=True).requires_grad
    with pytest.raises(RuntimeError, match="floating point"):
        ferro.zeros(2, dtype=ferro.int64, requires_grad=True)
    with pytest.raises(ValueError, match="negative"):
        ferro.zeros(-1)


def test_random_creation_and_seed() -> None:
    ferro.manual_seed(7)
    a = ferro.rand(1000)
    b = ferro.randn(2000)
    c = ferro.randint(3, 9, (500,))
    assert 0 <= a.amin().item() and a.amax().item() < 1
    assert abs(b.mean().item()) < 0.1 and abs(b.numpy().std() - 1) < 0.1
    assert c.dtype is ferro.int64 and c.amin().item() >= 3 and c.amax().item() <= 8
    ferro.manual_seed(7)
    assert_close(ferro.rand(1000), a)
    ferro.manual_seed(8)
    assert not np.allclose(ferro.rand(1000).numpy(), a.numpy())
    state = ferro.get_rng_state()
    x = ferro.randn(10)
    ferro.set_rng_state(state)
    assert_close(ferro.randn(10), x)
    assert ferro.rand_like(ferro.zeros(2, 2, dtype=ferro.float64)).dtype is ferro.float64
    with pytest.raises(TypeError, match="floating"):
        ferro.randn(2, dtype=ferro.int32)


# -- properties and conversions ------------------------------------------------------


def test_properties() -> None:
    t = ferro.zeros(2, 3, 4)
    assert isinstance(t.shape, ferro.Size) and t.shape == (2, 3, 4) and t.size(-1) == 4 and t.size() == t.shape
    assert t.ndim == t.dim() == 3 and t.numel() == 24 and t.shape.numel() == 24
    assert t.dtype is ferro.float32 and t.device == ferro.device("cpu") and str(t.device) == "cpu"
    assert t.is_leaf and t.grad_fn is None and t.grad is None and not t.requires_grad
    assert t.element_size() == 4 and t.nbytes == 96
    assert ferro.device("cpu:0") is ferro.device("cpu") and repr(ferro.device("cuda:1")) == \
        "device(type='cuda', index=1)"
    with pytest.raises(ValueError, match="ordinal"):
        ferro.device("cuda:x")


def test_host_conversions() -> None:
    a = rng.standard_normal((3, 2)).astype(np.float32)
    t = ferro.tensor(a)
    np.testing.assert_array_equal(t.numpy(), a)
    np.testing.assert_array_equal(np.asarray(t), a)
    np.testing.assert_array_equal(np.from_dlpack(t), a)
    np.testing.assert_array_equal(ferro.from_dlpack(a).numpy(), a)
    assert t.tolist() == a.tolist()
    assert ferro.tensor(2.5).item() == 2.5 and float(ferro.tensor([3.0])) == 3.0 and int(ferro.tensor(4)) == 4
    assert [int(x) for x in ferro.arange(3)] == [0, 1, 2] and len(t) == 3
    assert bool(ferro.tensor([1])) and not bool(ferro.tensor(0.0))
    with pytest.raises(RuntimeError, match="ambiguous"):
        bool(t)
    with pytest.raises(RuntimeError, match="detach"):
        ferro.ones(2, requires_grad=True).numpy()
    assert list(range(10))[ferro.tensor(3)] == 3


@pytest.mark.parametrize("method, dtype", [("float", "float32"), ("double", "float64"), ("half", "float16"),
                                           ("bfloat16", "bfloat16"), ("int", "int32"), ("long", "int64"),
                                           ("bool", "bool")])
def test_cast_methods(method: str, dtype: str) -> None:
    t = ferro.tensor([0.0, 1.5, -2.0])
    out = getattr(t, method)()
    assert out.dtype.name == dtype
    ref = getattr(torch.tensor([0.0, 1.5, -2.0]), method)()
    np.testing.assert_array_equal(out.float().numpy(), ref.float().numpy())


def test_to() -> None:
    t = ferro.tensor([1, 2])
    assert t.to("cpu") is t and t.to(ferro.int64) is t
    assert t.to(ferro.float64).dtype is ferro.float64
    assert t.to("cpu", ferro.float16).dtype is ferro.float16
    assert t.to(ferro.zeros(1)).dtype is ferro.float32
    assert t.to(ferro.int64, copy=True) is not t
    assert t.type() == "ferro.int64" and t.type_as(ferro.zeros(1, dtype=ferro.float64)).dtype is ferro.float64


def test_repr_matches_torch() -> None:
    cases = [[1.5, 2.25], [[1.0, 2.0], [3.0, 4.0]], [1, 2, 3], [True, False], [0.0001234, 1.0]]
    for data in cases:
        assert repr(ferro.tensor(data)) == repr(torch.tensor(data)).replace("torch", "ferro"), data
    assert repr(ferro.tensor([1, 2], dtype=ferro.int32)) == "tensor([1, 2], dtype=ferro.int32)"
    assert repr(ferro.ones(2, requires_grad=True)) == "tensor([1., 1.], requires_grad=True)"
    assert repr(ferro.ones(2, requires_grad=True) * 2) == "tensor([2., 2.], grad_fn=<MulBackward0>)"


# -- operators ----------------------------------------------------------------------

BINARY = [operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv, operator.mod,
          operator.pow]
BITWISE = [operator.and_, operator.or_, operator.xor, operator.lshift, operator.rshift]
COMPARE = [operator.eq, operator.ne, operator.lt, operator.le, operator.gt, operator.ge]


def _pair(dtype: str) -> tuple[np.ndarray, np.ndarray]:
    if dtype.startswith("int"):
        return rng.integers(1, 6, (3, 4)).astype(dtype), rng.integers(1, 4, (4,)).astype(dtype)
    return (rng.random((3, 4)) + 0.5).astype(dtype), (rng.random(4) + 0.5).astype(dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64"])
@pytest.mark.parametrize("op", BINARY + COMPARE, ids=lambda o: o.__name__)
def test_binary_operators_match_torch(op: object, dtype: str) -> None:
    a, b = _pair(dtype)
    for x, y in ((a, b), (a, 2), (3, b)):
        fx = ferro.tensor(x) if isinstance(x, np.ndarray) else x
        fy = ferro.tensor(y) if isinstance(y, np.ndarray) else y
        tx = torch.tensor(x) if isinstance(x, np.ndarray) else x
        ty = torch.tensor(y) if isinstance(y, np.ndarray) else y
        got, ref = op(fx, fy), op(tx, ty)  # type: ignore[operator]
        assert got.dtype.name == str(ref.dtype).removeprefix("torch.")
        np.testing.assert_allclose(got.numpy().astype(np.float64), ref.numpy().astype(np.float64), rtol=1e-5)


@pytest.mark.parametrize("op", BITWISE, ids=lambda o: o.__name__)
@pytest.mark.parametrize("dtype", ["int32", "int64", "uint8"])
def test_bitwise_operators(op: object, dtype: str) -> None:
    a, b = rng.integers(0, 8, (5,)).astype(dtype), rng.integers(0, 3, (5,)).astype(dtype)
    np.testing.assert_array_equal(op(ferro.tensor(a), ferro.tensor(b)).numpy(), op(a, b))  # type: ignore[operator]


def test_bool_operators_are_logical() -> None:
    a, b = np.array([True, True, False]), np.array([True, False, False])
    np.testing.assert_array_equal((ferro.tensor(a) & ferro.tensor(b)).numpy(), a & b)
    np.testing.assert_array_equal((~ferro.tensor(a)).numpy(), ~a)


@pytest.mark.parametrize("name", ["iadd", "isub", "imul", "itruediv", "ipow"])
def test_inplace_operators(name: str) -> None:
    a, b = _pair("float32")
    t = ferro.tensor(a)
    before = t
    t = getattr(operator, name)(t, ferro.tensor(b))
    assert t is before
    ref = getattr(operator, name)(a.copy(), b)
    assert_close(t, ref)


def test_inplace_integer_and_failed_inplace_changes_nothing() -> None:
    t = ferro.tensor([5, 7])
    t //= 2
    t %= 2
    t <<= 1
    assert t.tolist() == [0, 2]
    version = t.version
    with pytest.raises(ferro.errors.DTypeError, match="can't be cast"):
        t += 1.5
    with pytest.raises(ferro.errors.ShapeError, match="doesn't match the broadcast shape"):
        t += ferro.ones(3, 2, dtype=ferro.int64)
    assert t.tolist() == [0, 2] and t.version == version


def test_unary_operators() -> None:
    a = rng.standard_normal(5).astype(np.float32)
    t = ferro.tensor(a)
    assert_close(-t, -a)
    assert_close(abs(t), np.abs(a))
    assert_close(+t, a)


def test_numpy_operands() -> None:
    t = ferro.ones(3)
    assert_close(t + np.arange(3, dtype=np.float32), np.arange(3) + 1.0, check_dtype=False)
    assert_close(np.ones(3, dtype=np.float32) * t, np.ones(3, dtype=np.float32))
    assert (t * np.float32(2)).dtype is ferro.float32
    with pytest.raises(TypeError, match="unsupported operand"):
        t + "a"
