"""Creating tensors: from data, filled, ranges, identity, *_like, random; against NumPy and PyTorch."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import ferro
from ferro.testing import assert_close

torch = pytest.importorskip("torch")


def _name(d: Any) -> str:
    return str(d).removeprefix("torch.").removeprefix("ferro.")


# -- from data ------------------------------------------------------------------------

DATA = [[1, 2], [1.0, 2], [True, False], [[1, 2], [3, 4]], 3.5, 7, True, [], [[]], [1 + 2j], [[1.5], [2.5]],
        [True, 2], [[True, 1.5]], np.float32(2.5), np.int16(3), np.arange(4, dtype=np.int8),
        np.ones((2, 3), dtype=np.float16), np.array([1, 0], dtype=bool)]


@pytest.mark.parametrize("data", DATA, ids=lambda d: type(d).__name__ + repr(d)[:20])
def test_tensor_infers_dtype_and_shape_like_torch(data: Any) -> None:
    t, ref = ferro.tensor(data), torch.tensor(data)
    assert t.dtype.name == _name(ref.dtype)
    assert tuple(t.shape) == tuple(ref.shape)
    assert_close(t, ref.numpy())


@pytest.mark.parametrize("dtype", ["bool_", "uint8", "int8", "int16", "int32", "int64", "float16", "float32",
                                   "float64", "complex64", "complex128"])
def test_tensor_with_dtype_converts_like_numpy(dtype: str) -> None:
    data = [[0.0, 1.5, -2.0], [3.0, 0.25, 100.0]] if dtype not in ("uint8", "bool_") else [[0.0, 1.5, 2.0]]
    t = ferro.tensor(data, dtype=getattr(ferro, dtype))
    assert t.dtype is getattr(ferro, dtype)
    assert_close(t, np.array(data).astype(t.dtype.name))


def test_tensor_copies_its_input() -> None:
    src = np.arange(6, dtype=np.int32).reshape(2, 3)
    t = ferro.tensor(src)
    src[0, 0] = 100
    assert t[0, 0].item() == 0
    base = ferro.ones(3)
    u = ferro.tensor(base)
    u[0] = 5.0
    assert base[0].item() == 1.0, "tensor(tensor) is a copy"
    with pytest.raises(TypeError, match="rectangular"):
        ferro.tensor([[1, 2], [3]])
    with pytest.raises(TypeError):
        ferro.tensor("abc")


def test_from_numpy_shares_memory_both_ways() -> None:
    a = np.zeros((2, 3), dtype=np.float64)
    t = ferro.from_numpy(a)
    assert t.dtype is ferro.float64 and t.shape == (2, 3)
    a[1, 2] = 5
    assert t[1, 2].item() == 5.0, "a write to the array shows in the tensor"
    t[0, 1] = 7.0
    assert a[0, 1] == 7.0, "a write to the tensor shows in the array"
    t += 1
    np.testing.assert_array_equal(a, [[1, 8, 1], [1, 1, 6]])
    strided = np.arange(12, dtype=np.int32).reshape(3, 4)[:, ::2]
    assert_close(ferro.from_numpy(strided), strided)
    with pytest.raises(TypeError, match=r"numpy\.ndarray"):
        ferro.from_numpy([1, 2])
    with pytest.raises(TypeError, match="uint16"):
        ferro.from_numpy(np.zeros(2, dtype=np.uint16))


def test_as_tensor_shares_memory_when_it_can() -> None:
    a = np.zeros(3, dtype=np.float32)
    t = ferro.as_tensor(a)
    t[2] = 7.0
    assert a[2] == 7.0
    assert ferro.as_tensor(t) is t
    assert ferro.as_tensor(t, dtype=ferro.float64).dtype is ferro.float64
    c = ferro.as_tensor(a, dtype=ferro.float64)  # a conversion cannot share
    c[0] = 1.0
    assert a[0] == 0.0
    assert ferro.as_tensor([1, 2]).dtype is ferro.int64


def test_from_dlpack_views_numpy() -> None:
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = ferro.from_dlpack(a)
    assert t.dtype is ferro.float32 and t.shape == (2, 3)
    a[0, 0] = 42
    assert t[0, 0].item() == 42.0
    assert_close(ferro.from_dlpack(torch.arange(4)), np.arange(4))


# -- filled tensors and ranges ---------------------------------------------------------

CASES: list[tuple[str, Callable[[Any], Any], Callable[[], Any]]] = [
    ("zeros", lambda L: L.zeros(2, 3), lambda: np.zeros((2, 3), np.float32)),
    ("zeros tuple", lambda L: L.zeros((2, 3), dtype=L.int16), lambda: np.zeros((2, 3), np.int16)),
    ("zeros 0-d", lambda L: L.zeros(()), lambda: np.zeros((), np.float32)),
    ("zeros empty", lambda L: L.zeros(0, 4), lambda: np.zeros((0, 4), np.float32)),
    ("ones list", lambda L: L.ones([4]), lambda: np.ones(4, np.float32)),
    ("ones bool", lambda L: L.ones(3, dtype=L.bool), lambda: np.ones(3, bool)),
    ("full int", lambda L: L.full((2,), 3), lambda: np.full(2, 3, np.int64)),
    ("full float", lambda L: L.full((2, 2), 1.5), lambda: np.full((2, 2), 1.5, np.float32)),
    ("full bool", lambda L: L.full((2,), True), lambda: np.full(2, True)),
    ("full complex", lambda L: L.full((2,), 1 + 2j), lambda: np.full(2, 1 + 2j, np.complex64)),
    ("full dtype", lambda L: L.full((3,), 7, dtype=L.float16), lambda: np.full(3, 7, np.float16)),
    ("empty shape", lambda L: L.empty(2, 3).shape, lambda: (2, 3)),
    ("arange n", lambda L: L.arange(5), lambda: np.arange(5)),
    ("arange start stop step", lambda L: L.arange(1, 10, 3), lambda: np.arange(1, 10, 3)),
    ("arange negative step", lambda L: L.arange(5, 0, -2), lambda: np.arange(5, 0, -2)),
    ("arange negative float step", lambda L: L.arange(0, -5, -1.5), lambda: np.arange(0, -5, -1.5, dtype=np.float32)),
    ("arange float", lambda L: L.arange(0.0, 1.0, 0.25), lambda: np.arange(0, 1, 0.25, dtype=np.float32)),
    ("arange float end", lambda L: L.arange(5.0), lambda: np.arange(5, dtype=np.float32)),
    ("arange half start", lambda L: L.arange(0.5, 3), lambda: np.arange(0.5, 3, dtype=np.float32)),
    ("arange dtype", lambda L: L.arange(1, 4, dtype=L.int8), lambda: np.arange(1, 4, dtype=np.int8)),
    ("arange float64", lambda L: L.arange(4, dtype=L.float64), lambda: np.arange(4, dtype=np.float64)),
    ("arange empty", lambda L: L.arange(3, 3), lambda: np.arange(3, 3)),
    ("arange 0-d tensors", lambda L: L.arange(L.tensor(4)), lambda: np.arange(4)),
    ("linspace", lambda L: L.linspace(-1, 1, 5), lambda: np.linspace(-1, 1, 5, dtype=np.float32)),
    ("linspace descending", lambda L: L.linspace(1, -1, 3), lambda: np.linspace(1, -1, 3, dtype=np.float32)),
    ("linspace one", lambda L: L.linspace(2, 5, 1), lambda: np.linspace(2, 5, 1, dtype=np.float32)),
    ("linspace zero", lambda L: L.linspace(2, 5, 0), lambda: np.linspace(2, 5, 0, dtype=np.float32)),
    ("linspace float64", lambda L: L.linspace(0, 1, 7, dtype=L.float64), lambda: np.linspace(0, 1, 7)),
    ("eye", lambda L: L.eye(3), lambda: np.eye(3, dtype=np.float32)),
    ("eye rect", lambda L: L.eye(2, 4, dtype=L.int64), lambda: np.eye(2, 4, dtype=np.int64)),
    ("eye tall", lambda L: L.eye(4, 2), lambda: np.eye(4, 2, dtype=np.float32)),
    ("eye bool", lambda L: L.eye(3, dtype=L.bool), lambda: np.eye(3, dtype=bool)),
    ("eye empty", lambda L: L.eye(0), lambda: np.eye(0, dtype=np.float32)),
    ("zeros_like", lambda L: L.zeros_like(L.ones(2, dtype=L.int8)), lambda: np.zeros(2, np.int8)),
    ("ones_like", lambda L: L.ones_like(L.zeros(2, 2)), lambda: np.ones((2, 2), np.float32)),
    ("ones_like dtype", lambda L: L.ones_like(L.zeros(2), dtype=L.float64), lambda: np.ones(2)),
    ("full_like", lambda L: L.full_like(L.zeros(3), 2.5), lambda: np.full(3, 2.5, np.float32)),
    ("full_like int keeps dtype", lambda L: L.full_like(L.zeros(3, dtype=L.int64), 2.7), lambda: np.full(3, 2)),
    ("empty_like", lambda L: L.empty_like(L.zeros(2, 5, dtype=L.int32)).dtype, lambda: "int32"),
]


@pytest.mark.parametrize("make, ref", [(m, r) for _, m, r in CASES], ids=[c[0] for c in CASES])
def test_creation_matches_numpy(make: Callable[[Any], Any], ref: Callable[[], Any]) -> None:
    got = make(ferro)
    if isinstance(got, ferro.Tensor):
        assert_close(got, ref())
        assert got.device == ferro.device("cpu") and got.is_leaf and not got.requires_grad
    else:
        assert (got.name if isinstance(got, ferro.DType) else got) == ref()


@pytest.mark.parametrize("make", [c[1] for c in CASES if "empty" not in c[0] and "tensors" not in c[0]],
                         ids=[c[0] for c in CASES if "empty" not in c[0] and "tensors" not in c[0]])
def test_creation_dtypes_match_torch(make: Callable[[Any], Any]) -> None:
    got, ref = make(ferro), make(torch)
    if isinstance(got, ferro.Tensor):
        assert got.dtype.name == _name(ref.dtype)
        assert tuple(got.shape) == tuple(ref.shape)


def test_creation_arguments() -> None:
    assert ferro.zeros(ferro.Size([2, 3])).shape == (2, 3)
    assert ferro.zeros(np.int64(2), 3).shape == (2, 3)
    assert ferro.ones(2, device="cpu").device is ferro.device("cpu")
    assert ferro.ones(2, device=ferro.device("cpu")).device is ferro.device("cpu")
    assert ferro.empty((2, 3), dtype=ferro.int8).dtype is ferro.int8
    with pytest.raises(ValueError, match="negative"):
        ferro.zeros(-1)
    with pytest.raises(TypeError, match="ints"):
        ferro.zeros(2.5)
    with pytest.raises(ValueError, match="nonzero"):
        ferro.arange(0, 5, 0)
    with pytest.raises(ValueError, match="step sign"):
        ferro.arange(1, 0)
    with pytest.raises(ValueError, match="step sign"):
        ferro.arange(0, 10, -1)
    with pytest.raises(ValueError, match="non-negative"):
        ferro.linspace(0, 1, -1)


def test_requires_grad_argument() -> None:
    for t in (ferro.zeros(2, requires_grad=True), ferro.ones(2, 2, requires_grad=True),
              ferro.full((2,), 1.5, requires_grad=True), ferro.arange(3.0, requires_grad=True),
              ferro.linspace(0, 1, 3, requires_grad=True), ferro.eye(2, requires_grad=True),
              ferro.rand(2, requires_grad=True), ferro.randn(2, requires_grad=True),
              ferro.tensor([1.0, 2.0], requires_grad=True), ferro.zeros_like(ferro.ones(2), requires_grad=True)):
        assert t.requires_grad and t.is_leaf and t.grad_fn is None
    with pytest.raises(RuntimeError, match="floating point"):
        ferro.zeros(2, dtype=ferro.int64, requires_grad=True)
    with pytest.raises(RuntimeError, match="floating point"):
        ferro.tensor([1, 2], requires_grad=True)


# -- random --------------------------------------------------------------------------


def test_rand_randn_randint_ranges() -> None:
    ferro.manual_seed(7)
    a = ferro.rand(4000)
    assert a.dtype is ferro.float32
    assert 0 <= a.amin().item() and a.amax().item() < 1
    assert abs(a.mean().item() - 0.5) < 0.03
    b = ferro.randn(4000, dtype=ferro.float64)
    assert b.dtype is ferro.float64
    assert abs(b.mean().item()) < 0.1 and abs(b.numpy().std() - 1) < 0.1
    c = ferro.randint(3, 9, (2000,))
    assert c.dtype is ferro.int64 and c.amin().item() == 3 and c.amax().item() == 8
    assert set(np.unique(c.numpy())) == set(range(3, 9)), "every value of [low, high) comes up"
    d = ferro.randint(5, (3, 4))  # randint(high, size), as in PyTorch
    assert d.shape == (3, 4) and d.dtype is ferro.int64 and 0 <= d.amin().item() and d.amax().item() < 5
    assert ferro.randint(-5, -2, (100,)).amin().item() >= -5
    assert ferro.randint(0, 5, (2,), dtype=ferro.int32).dtype is ferro.int32
    assert ferro.randint(10, size=(3,)).shape == (3,)
    assert ferro.rand(()).shape == () and ferro.rand((2, 3)).shape == (2, 3) and ferro.randn([2, 3]).shape == (2, 3)
    assert ferro.randn(3, dtype=ferro.float16).dtype is ferro.float16
    with pytest.raises(TypeError, match="floating"):
        ferro.randn(2, dtype=ferro.int32)
    with pytest.raises(TypeError, match="floating"):
        ferro.rand(2, dtype=ferro.int64)
    with pytest.raises(ValueError, match="low < high"):
        ferro.randint(5, 3, (2,))


@pytest.mark.parametrize("make", [lambda: ferro.rand(50), lambda: ferro.randn(5, 10),
                                  lambda: ferro.randint(0, 1000, (50,)), lambda: ferro.rand(20, dtype=ferro.float64)],
                         ids=["rand", "randn", "randint", "rand64"])
def test_manual_seed_reproduces_and_differs(make: Callable[[], ferro.Tensor]) -> None:
    ferro.manual_seed(123)
    a = make()
    ferro.manual_seed(123)
    b = make()
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert ferro.initial_seed() == 123
    ferro.manual_seed(124)
    assert not np.array_equal(make().numpy(), a.numpy()), "another seed gives other numbers"
    c, d = make(), make()
    assert not np.array_equal(c.numpy(), d.numpy()), "the stream moves on between calls"


def test_rng_state_restores_the_stream() -> None:
    ferro.manual_seed(3)
    ferro.randn(7)
    state = ferro.get_rng_state()
    x, y = ferro.randn(10), ferro.randint(0, 100, (5,))
    ferro.set_rng_state(state)
    np.testing.assert_array_equal(ferro.randn(10).numpy(), x.numpy())
    np.testing.assert_array_equal(ferro.randint(0, 100, (5,)).numpy(), y.numpy())


def test_random_like() -> None:
    base = ferro.zeros(2, 3, dtype=ferro.float64)
    for t in (ferro.rand_like(base), ferro.randn_like(base)):
        assert t.shape == (2, 3) and t.dtype is ferro.float64
    r = ferro.randint_like(ferro.zeros(4, dtype=ferro.int32), 2, 5)
    assert r.dtype is ferro.int32 and r.shape == (4,) and 2 <= r.amin().item() and r.amax().item() < 5
