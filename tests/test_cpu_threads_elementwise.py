"""ferro-cpu's split elementwise kernels (ferro_cpu/_split.py) and stacked products (ferro_cpu/_threads.py): on 2
threads the large ufunc calls run their pieces on the block pool and give the one-thread bits (and NumPy's /
PyTorch's values, gradients too); small arrays, and stacks of small matrices, stay on the calling thread."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import ferro

torch = pytest.importorskip("torch")
threads = pytest.importorskip("ferro_cpu._threads")
split = pytest.importorskip("ferro_cpu._split")
blocked = pytest.importorskip("ferro_cpu._blocked")
RNG = np.random.default_rng(0)


pytestmark = pytest.mark.usefixtures("threads_as_asked")  # (conftest.py)


# (op on ferro / torch tensors, the NumPy function it computes): unary, binary, broadcast, scalar, comparison
OPS: dict[str, tuple[Callable[..., Any], Callable[..., Any]]] = {
    "add": (lambda xp, a, b: a + b, np.add),
    "sub": (lambda xp, a, b: a - b, np.subtract),
    "mul": (lambda xp, a, b: a * b, np.multiply),
    "div": (lambda xp, a, b: a / b, np.true_divide),
    "maximum": (lambda xp, a, b: xp.maximum(a, b), np.maximum),
    "tanh": (lambda xp, a, b: xp.tanh(a), lambda a, b: np.tanh(a)),
    "exp": (lambda xp, a, b: xp.exp(a), lambda a, b: np.exp(a)),
    "relu": (lambda xp, a, b: xp.relu(a), lambda a, b: np.maximum(a, 0)),
    "scalar": (lambda xp, a, b: a * 1.5, lambda a, b: a * a.dtype.type(1.5)),
    "lt": (lambda xp, a, b: a < b, np.less),
}
# (shape of a, shape of b): flat pieces (same shapes), a bias row, a leading broadcast dim, a transposed operand,
# a length not a multiple of the pieces' alignment; each of at least split.SPLIT_BYTES as float32 (bool: 1 byte)
SHAPES = [((1100, 1024), (1100, 1024)), ((1100, 1024), (1024,)), ((4, 600, 512), (1, 600, 512)),
          ((1024, 1100), "T"), ((3, 700001), (3, 700001))]


def _arrays(sa: tuple[int, ...], sb: Any, dtype: Any) -> tuple[np.ndarray, np.ndarray]:
    a = RNG.standard_normal(sa).astype(dtype)
    b = RNG.standard_normal(sa[::-1]).astype(dtype).T if sb == "T" else RNG.standard_normal(sb).astype(dtype)
    return a, b + 3.0  # (no zero to divide by)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(("sa", "sb"), SHAPES)
@pytest.mark.parametrize("op", sorted(OPS))
def test_two_threads_give_the_one_thread_bits(op: str, sa: tuple[int, ...], sb: Any, dtype: Any) -> None:
    fn, ref = OPS[op]
    a, b = _arrays(sa, sb, dtype)
    want = ref(a, b)
    got = {}
    for n in (1, 2):
        ferro.set_num_threads(n)
        before = threads.counts["elementwise"]
        got[n] = fn(ferro, ferro.tensor(a), ferro.tensor(b)).numpy()
        ran = threads.counts["elementwise"] - before
        assert ran == (n > 1 and want.nbytes >= split.SPLIT_BYTES)
    assert got[1].dtype == got[2].dtype == want.dtype
    assert np.array_equal(got[2], got[1]) and np.array_equal(got[2], want)  # the same loops: the same bits
    expect = fn(torch, torch.tensor(a), torch.tensor(b)).numpy()
    np.testing.assert_allclose(got[2], expect, rtol=2e-6 if dtype == np.float32 else 1e-14)


def test_gradients_on_two_threads_give_the_one_thread_bits_and_torch_values() -> None:
    a, b = _arrays((1100, 1024), (1024,), np.float32)
    g = RNG.standard_normal(a.shape).astype(np.float32)

    def step(xp: Any, n: int | None) -> list[np.ndarray]:
        if n is not None:
            ferro.set_num_threads(n)
        ta, tb = xp.tensor(a, requires_grad=True), xp.tensor(b, requires_grad=True)
        y = xp.tanh(ta * tb + ta).relu() / tb
        y.backward(xp.tensor(g))
        return [y.detach().numpy(), ta.grad.numpy(), tb.grad.numpy()]
    before = threads.counts["elementwise"]
    one = step(ferro, 1)
    assert threads.counts["elementwise"] == before
    two = step(ferro, 2)
    assert threads.counts["elementwise"] - before >= 6  # mul, add, tanh, relu, div forward; the backward's products
    for x, y in zip(one, two):
        assert np.array_equal(x, y)
    for x, r in zip(two, step(torch, None)):
        np.testing.assert_allclose(x, r, rtol=1e-4, atol=1e-4)


def test_small_arrays_stay_on_the_calling_thread() -> None:
    ferro.set_num_threads(2)
    before = threads.counts["elementwise"]
    a = RNG.standard_normal((1023, 1024)).astype(np.float32)  # just under 4 MiB
    assert a.nbytes < split.SPLIT_BYTES
    np.testing.assert_array_equal((ferro.tensor(a) + ferro.tensor(a)).numpy(), a + a)
    assert threads.counts["elementwise"] == before


def test_errors_in_a_piece_reach_the_caller() -> None:
    ferro.set_num_threads(2)
    a = np.ones((1100, 1024), np.float32)
    with pytest.raises(TypeError):
        split.into(np.add, (a, np.ones((1100, 1024), object)), np.empty_like(a))  # (no object loop into float32)


@pytest.mark.parametrize(("sa", "sb", "splits"), [((128, 64, 32), (128, 32, 64), True),
                                                  ((32, 4, 64, 32), (32, 4, 32, 64), True),
                                                  ((32, 4, 64, 64), (32, 4, 64, 32), True),
                                                  ((32, 4, 64, 64), (1, 4, 64, 32), False),
                                                  ((16, 4, 64, 16), (16, 4, 16, 64), False)])
def test_stacks_of_products_split_along_their_first_dim(sa: tuple[int, ...], sb: tuple[int, ...],
                                                         splits: bool) -> None:
    """A stack of one shape (the attention products: 4-D, a transposed operand) of ``SPLIT_WORK``
    multiply-adds or more runs its pieces on the pool, the same bits as NumPy's whole product (a stack's
    matrices are whole in every piece); a broadcast stack, or a small one, stays on the calling thread."""
    a, b = RNG.standard_normal(sa).astype(np.float32), RNG.standard_normal(sb).astype(np.float32)
    if len(sa) == 4:  # (batch, seq, heads, d) seen as (batch, heads, seq, d), as attention's q
        a = np.ascontiguousarray(a.transpose(0, 2, 1, 3)).transpose(0, 2, 1, 3)
    assert (a.size * b.shape[-1] >= threads.SPLIT_WORK) == (sa[0] != 16)  # (the last case: below the size)
    got = {}
    for n in (1, 2):
        ferro.set_num_threads(n)
        before = threads.counts["products"]
        got[n] = (ferro.tensor(a) @ ferro.tensor(b)).numpy()
        assert threads.counts["products"] - before == (splits and n > 1)
    assert np.array_equal(got[1], got[2]) and np.array_equal(got[2], np.matmul(a, b))
    np.testing.assert_allclose(got[2], (torch.tensor(a) @ torch.tensor(b)).numpy(), rtol=1e-4, atol=1e-4)


def test_attention_products_on_two_threads_give_the_one_thread_gradients() -> None:
    q, k = (RNG.standard_normal((32, 4, 64, 32)).astype(np.float32) for _ in range(2))
    g = RNG.standard_normal((32, 4, 64, 64)).astype(np.float32)
    got = {}
    for n in (1, 2):
        ferro.set_num_threads(n)
        before = threads.counts["products"]
        tq, tk = ferro.tensor(q, requires_grad=True), ferro.tensor(k, requires_grad=True)
        y = tq @ tk.transpose(-2, -1)
        y.backward(ferro.tensor(g))
        got[n] = [y.detach().numpy(), tq.grad.numpy(), tk.grad.numpy()]
        assert threads.counts["products"] - before == (3 if n > 1 else 0)  # y, dq, dk
    assert all(np.array_equal(x, z) for x, z in zip(got[1], got[2]))
    tq, tk = torch.tensor(q, requires_grad=True), torch.tensor(k, requires_grad=True)
    ref = tq @ tk.transpose(-2, -1)
    ref.backward(torch.tensor(g))
    for x, r in zip(got[2], (ref.detach().numpy(), tq.grad.numpy(), tk.grad.numpy())):
        np.testing.assert_allclose(x, r, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_of_four_blocks_runs_on_two_threads(approximate: str, dtype: Any) -> None:
    """gelu's blocks (many passes each) go to the pool from ``COSTLY_BLOCKS`` blocks, silu's from ``MIN_BLOCKS``."""
    x = (RNG.standard_normal((1024, 256)) * 3).astype(dtype)
    g = RNG.standard_normal(x.shape).astype(dtype)
    assert threads.COSTLY_BLOCKS <= x.size // blocked.BLOCK < threads.MIN_BLOCKS
    got, ran = {}, {}
    for n in (1, 2):
        ferro.set_num_threads(n)
        before = threads.counts["blocks"]
        t = ferro.tensor(x, requires_grad=True)
        y = ferro.nn.functional.gelu(t, approximate=approximate)
        y.backward(ferro.tensor(g))
        got[n] = (y.detach().numpy(), t.grad.numpy())
        ran[n] = threads.counts["blocks"] - before
        ferro.nn.functional.silu(ferro.tensor(x))
        assert threads.counts["blocks"] - before == ran[n]  # silu's 4 blocks: on the calling thread
    assert ran == {1: 0, 2: 2}  # forward and backward
    assert all(np.array_equal(a, b) for a, b in zip(got[1], got[2]))
    t = torch.tensor(x, requires_grad=True)
    ref = torch.nn.functional.gelu(t, approximate=approximate)
    ref.backward(torch.tensor(g))
    tol = {"rtol": 2e-5, "atol": 1e-5} if dtype == np.float32 else {"rtol": 1e-10, "atol": 1e-12}
    np.testing.assert_allclose(got[2][0], ref.detach().numpy(), **tol)
    np.testing.assert_allclose(got[2][1], t.grad.numpy(), **tol)


@pytest.mark.parametrize("op", ["softmax", "log_softmax", "layer_norm", "silu", "sigmoid"])
def test_row_and_blocked_kernels_of_eight_blocks_run_on_two_threads(op: str) -> None:
    """From ``MIN_BLOCKS`` (8) blocks of 256 KiB: forward and backward on the pool, the one-thread bits."""
    x = (RNG.standard_normal((600, 1024)) * 3).astype(np.float32)  # 2.3 MiB: 9 blocks of rows / flat blocks
    g = RNG.standard_normal(x.shape).astype(np.float32)
    assert threads.MIN_BLOCKS <= x.nbytes // (1 << 18) < 16

    def call(xp: Any, t: Any) -> Any:
        f = ferro.nn.functional if xp is ferro else torch.nn.functional
        if op in ("softmax", "log_softmax"):
            return getattr(f, op)(t, dim=-1)
        if op == "layer_norm":
            return f.layer_norm(t, (1024,))
        return xp.sigmoid(t) if op == "sigmoid" else f.silu(t)
    got, ran = {}, {}
    for n in (1, 2):
        ferro.set_num_threads(n)
        before = threads.counts["blocks"]
        t = ferro.tensor(x, requires_grad=True)
        y = call(ferro, t)
        y.backward(ferro.tensor(g))
        got[n] = (y.detach().numpy(), t.grad.numpy())
        ran[n] = threads.counts["blocks"] - before
    assert ran[1] == 0 and ran[2] >= (1 if op == "sigmoid" else 2)  # (sigmoid's backward: ops on its output)
    assert all(np.array_equal(a, b) for a, b in zip(got[1], got[2]))
    t = torch.tensor(x, requires_grad=True)
    ref = call(torch, t)
    ref.backward(torch.tensor(g))
    np.testing.assert_allclose(got[2][0], ref.detach().numpy(), rtol=2e-5, atol=1e-5)
    np.testing.assert_allclose(got[2][1], t.grad.numpy(), rtol=2e-4, atol=1e-4)
