"""Indexing: ``x[key]`` and ``x[key] = value`` (basic views, advanced copies, masks), and ``index_put``.

Basic and advanced keys are checked against NumPy; keys that mix integers
with tensors follow PyTorch (integers first, as basic indexing), which is
where NumPy differs.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import ferro
from ferro.testing import assert_close

torch = pytest.importorskip("torch")
rng = np.random.default_rng(5)
SHAPE = (3, 4, 5)


def _arr() -> np.ndarray:
    return rng.standard_normal(SHAPE).astype(np.float32)


def _key(key: Any, lib: Any) -> Any:
    """``key`` with its NumPy arrays turned into ``lib`` tensors."""
    conv = (lambda k: lib.tensor(k) if isinstance(k, np.ndarray) else k)
    return tuple(conv(k) for k in key) if isinstance(key, tuple) else conv(key)


BASIC = [0, -1, 2, slice(None), slice(1, None), slice(None, -1), slice(None, None, 2), slice(0, 3, 2), (0, 1),
         (-1, -2, -3), (slice(None), 1), (slice(None), slice(None), 3), (1, slice(1, 3)),
         (slice(None, None, 2), slice(1, 4, 2)), (None, 1), (1, None), (Ellipsis, 0), (0, Ellipsis, None),
         (Ellipsis, slice(1, 3)), (None, Ellipsis, None), (slice(5, 9),), (slice(-10, 10),), (slice(2, 1),), (),
         (0, 1, 2), (Ellipsis,), (slice(None), None, slice(None, None, 3))]


@pytest.mark.parametrize("key", BASIC, ids=repr)
def test_basic_indexing_matches_numpy_and_is_a_view(key: Any) -> None:
    a = _arr()
    t = ferro.tensor(a)
    got = t[key]
    assert_close(got, a[key])
    assert got.dtype is ferro.float32
    if got.numel() == 0:
        return
    got.fill_(7.0)
    a[key] = 7.0
    assert_close(t, a, msg="basic indexing gives a view: the write shows in the base")
    assert t.version == 1


def test_scalar_element_is_a_view_too() -> None:
    t = ferro.zeros(3, 4)
    e = t[1, 2]
    e += 5
    assert t[1, 2].item() == 5.0 and t.sum().item() == 5.0


ADVANCED = [[0, 2], [2, 0, 2], np.array([1, -1]), np.array([[0, 1], [2, 2]]), ([0, 1], [1, 3]),
            (slice(None), [3, 0]), (slice(None), slice(None), [4, 0, 4]), ([0, 2], slice(1, 3), [1, 4]),
            (Ellipsis, [1, 2]), (None, [0, 1]), (np.array([[0], [2]]), np.array([1, 3])), [], np.array([], np.int64),
            (slice(None), np.array([True, False, True, False])), np.array([True, False, True]),
            (np.array([True, False, True]), slice(1, 3)),
            ([True, False, True],), (slice(None), [0, 0, 0])]


@pytest.mark.parametrize("key", ADVANCED, ids=repr)
def test_advanced_indexing_matches_numpy_and_copies(key: Any) -> None:
    a = _arr()
    t = ferro.tensor(a)
    got = t[_key(key, ferro)]
    ref = a[key if not (isinstance(key, list) and not key) else np.array([], np.int64)]
    assert_close(got, ref)
    if got.numel():
        got.fill_(123.0)
        assert_close(t, a, msg="advanced indexing copies: the base stays as it was")


@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", "int16"])
def test_index_tensors_of_any_integer_dtype(dtype: str) -> None:
    a = _arr()
    idx = np.array([2, 0, 1, 1], dtype=dtype)
    assert_close(ferro.tensor(a)[ferro.tensor(idx)], a[idx])
    assert_close(ferro.tensor(a)[:, ferro.tensor(idx)], a[:, idx])


def test_masks() -> None:
    a = _arr()
    t = ferro.tensor(a)
    assert_close(t[t > 0], a[a > 0])
    assert_close(t[ferro.tensor(a[:, :, 0] > 0)], a[a[:, :, 0] > 0])
    assert_close(t[0][t[0] > 0.5], a[0][a[0] > 0.5])
    assert_close(t[ferro.zeros(SHAPE, dtype=ferro.bool_)], a[np.zeros(SHAPE, bool)])
    assert t[True].shape == (1, *SHAPE) and t[False].shape == (0, *SHAPE)
    with pytest.raises(IndexError, match=r"shape \[3, 4, 5\]"):
        t[ferro.tensor([True, False])]


MIXED = [(0, slice(None), [3, 1]), (1, [0, 2], slice(None)), ([0, 2], 1, [1, 3]), (slice(None), 0, [1, 2]),
         (0, Ellipsis, [4, 0]), (-1, None, [1, 2]), (1, [2, 0], [4, 3]), ([1, 0], slice(None), 2)]


@pytest.mark.parametrize("key", MIXED, ids=repr)
def test_integers_mixed_with_index_tensors_follow_torch(key: Any) -> None:
    a = _arr()
    got = ferro.tensor(a)[key]
    ref = torch.from_numpy(a)[key]
    assert tuple(got.shape) == tuple(ref.shape)
    assert_close(got, ref.numpy())
    t, tt = ferro.tensor(a), torch.from_numpy(a.copy())
    value = np.arange(ref.numel(), dtype=np.float32).reshape(tuple(ref.shape))
    t[key] = ferro.tensor(value)
    tt[key] = torch.from_numpy(value)
    assert_close(t, tt.numpy())


def test_integers_mixed_with_index_tensors_differentiate() -> None:
    a = _arr()
    x, tx = ferro.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    w = rng.standard_normal((4, 2)).astype(np.float32)
    (x[0, :, [3, 1]] * ferro.tensor(w)).sum().backward()
    (tx[0, :, [3, 1]] * torch.from_numpy(w)).sum().backward()
    assert_close(x.grad, tx.grad.numpy())


@pytest.mark.parametrize("key", [(slice(None), -1), (0, slice(1, 3)), (Ellipsis, None, 2), (slice(None, None, 2),)])
def test_basic_index_backward_writes_into_zeros_once(key: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from conftest import count_calls
    a = _arr()
    x, tx = ferro.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    y = x[key]
    w = rng.standard_normal(tuple(y.shape)).astype(np.float32)
    w.flat[0] = -0.0  # a negative zero gradient stays negative (torch copies it)
    calls = count_calls(monkeypatch, x._device, ("clone", "index_put"))
    (g,) = ferro.autograd.grad((y * ferro.tensor(w)).sum(), (x,))
    (tx[key] * torch.from_numpy(w)).sum().backward()
    assert_close(g, tx.grad.numpy())
    np.testing.assert_array_equal(np.signbit(g.numpy()), np.signbit(tx.grad.numpy()))
    assert calls == {"clone": 0, "index_put": 1}  # the gradient written into the zeros, no copy of them


def test_split_backward_writes_each_piece_once(monkeypatch: pytest.MonkeyPatch) -> None:
    from conftest import count_calls
    a = _arr()
    x, tx = ferro.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    w = rng.standard_normal((3, 4, 2)).astype(np.float32)
    calls = count_calls(monkeypatch, x._device, ("clone", "index_put"))
    q, k, v = x.split(2, dim=2)
    (g,) = ferro.autograd.grad((q * ferro.tensor(w)).sum() + (v * 3).sum() + k.sum(), (x,))
    tq, tk, tv = tx.split(2, dim=2)
    ((tq * torch.from_numpy(w)).sum() + (tv * 3).sum() + tk.sum()).backward()
    assert_close(g, tx.grad.numpy())
    assert calls == {"clone": 0, "index_put": 3}


def test_basic_index_backward_gradchecks_twice() -> None:
    x = ferro.tensor(rng.standard_normal((3, 4, 2)), dtype=ferro.float64, requires_grad=True)
    assert ferro.autograd.gradcheck(lambda t: t[:, -1] ** 2, (x,))
    assert ferro.autograd.gradgradcheck(lambda t: t[1:, ::2] ** 3, (x,))


def test_out_of_range_is_an_index_error_naming_the_shape() -> None:
    t = ferro.zeros(SHAPE)
    for key in (3, -4, (0, 4), (0, 0, 5), [0, 3], (slice(None), [4]), (0, 0, 0, 0)):
        with pytest.raises(IndexError, match=r"shape \[3, 4, 5\]"):
            t[_key(key, ferro)]
        with pytest.raises(IndexError, match=r"shape \[3, 4, 5\]"):
            t[_key(key, ferro)] = 1.0
    with pytest.raises(IndexError, match="long, int, byte or bool"):
        t[ferro.tensor([1.0])]
    with pytest.raises(IndexError, match="only integers"):
        t[0.5]
    with pytest.raises(IndexError, match="only integers"):
        t["a"]


# -- __setitem__ ------------------------------------------------------------------------------

SETS = [
    (0, 5.0), (-1, -2), ((1, 2), 3.5), ((slice(None), 1), np.arange(5.0)), ((Ellipsis, 0), np.ones((3, 1))),
    (slice(None, None, 2), np.arange(20.0).reshape(4, 5)), ((slice(None), slice(1, 3), slice(None, None, 2)), 9.0),
    ([0, 2], 7.0), ([2, 0], np.arange(40.0).reshape(2, 4, 5)), (([0, 1], [1, 3]), np.array([[1.0], [2.0]])),
    ((slice(None), [0, 3]), np.arange(2.0 * 5).reshape(2, 5)), (np.array([True, False, True]), 0.5),
    ((1, [0, 3], 2), np.array([8.0, 9.0])), ((None, 0), 4.0), ((), 1.0), (True, 3.0),
]


@pytest.mark.parametrize("key, value", SETS, ids=[repr(k) for k, _ in SETS])
@pytest.mark.parametrize("kind", ["number", "tensor", "0-d tensor"])
def test_setitem_matches_numpy(key: Any, value: Any, kind: str) -> None:
    a = _arr()
    t = ferro.tensor(a)
    v = np.asarray(value, np.float32)
    if kind == "number" and v.ndim:
        return
    if kind == "0-d tensor" and v.ndim:
        return
    fv = float(v) if kind == "number" else ferro.tensor(v)
    version = t.version
    t[_key(key, ferro)] = fv
    a[key] = v
    assert_close(t, a)
    assert t.version == version + 1


def test_setitem_with_a_mask_and_a_broadcast_tensor() -> None:
    a = _arr()
    t = ferro.tensor(a)
    t[t > 0] = 0.0
    a[a > 0] = 0
    assert_close(t, a)
    t[ferro.tensor(a) < -1] = ferro.tensor(2.0)
    a[a < -1] = 2.0
    assert_close(t, a)
    neg = a < 0
    t[ferro.tensor(neg)] = ferro.arange(float(neg.sum()))
    a[neg] = np.arange(neg.sum())
    assert_close(t, a)
    t[:, 0] = ferro.tensor([1.0, 2.0, 3.0, 4.0, 5.0])  # broadcast over the leading dim
    a[:, 0] = [1.0, 2.0, 3.0, 4.0, 5.0]
    assert_close(t, a)


def test_setitem_casts_the_value_to_the_tensor_dtype() -> None:
    i = ferro.zeros(4, dtype=ferro.int32)
    i[0] = 2.7
    i[1:3] = ferro.tensor([1.9, -1.9])
    i[3] = True
    ref = np.zeros(4, np.int32)
    ref[0], ref[1:3], ref[3] = 2.7, np.array([1.9, -1.9], np.float32).astype(np.int32), True
    assert_close(i, ref)
    b = ferro.zeros(3, dtype=ferro.bool_)
    b[1] = 5
    assert b.tolist() == [False, True, False]


def test_setitem_errors() -> None:
    t = ferro.zeros(3, 4)
    version = t.version
    with pytest.raises(ferro.errors.ShapeError, match=r"values of shape \[3\].*shape \[3, 4\]"):
        t[0] = ferro.ones(3)
    with pytest.raises(TypeError, match="NoneType"):
        t[0] = None
    with pytest.raises(TypeError):
        t[0] = "a"
    assert t.version == version and t.sum().item() == 0.0
    leaf = ferro.zeros(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf"):
        leaf[0] = 1.0


def test_setitem_through_chained_views() -> None:
    t = ferro.zeros(3, 4)
    t[1][2] = 5.0
    t[:, 0][1:] = 1.0
    t.T[3, 0] = 2.0
    ref = np.zeros((3, 4), np.float32)
    ref[1][2] = 5.0
    ref[:, 0][1:] = 1.0
    ref.T[3, 0] = 2.0
    assert_close(t, ref)


# -- index_put ----------------------------------------------------------------------------------


def test_index_put_accumulate_adds_duplicates() -> None:
    t = ferro.zeros(5)
    idx = ferro.tensor([0, 0, 2, 4, 4, 4])
    vals = ferro.tensor([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    out = t.index_put((idx,), vals, accumulate=True)
    ref = np.zeros(5, np.float32)
    np.add.at(ref, idx.numpy(), vals.numpy())
    assert_close(out, ref)
    assert t.tolist() == [0.0] * 5, "index_put is out of place"
    ref_t = torch.zeros(5).index_put((torch.tensor([0, 0, 2, 4, 4, 4]),), torch.tensor([1.0, 2, 3, 4, 5, 6]),
                                     accumulate=True)
    assert_close(out, ref_t.numpy())
    last = ferro.index_put(t, (ferro.tensor([1, 3]),), ferro.tensor(9.0))
    assert last.tolist() == [0.0, 9.0, 0.0, 9.0, 0.0]


def test_index_put_2d_and_in_place_accumulation() -> None:
    t = ferro.zeros(3, 4)
    rows, cols = ferro.tensor([0, 0, 2]), ferro.tensor([1, 1, 3])
    out = ferro.index_put(t, (rows, cols), ferro.ones(3), accumulate=True)
    ref = np.zeros((3, 4), np.float32)
    np.add.at(ref, (rows.numpy(), cols.numpy()), 1.0)
    assert_close(out, ref)
    x = ferro.zeros(3, 4)
    x[1, [0, 0, 2]] += 1  # read, add, write: duplicates count once (as NumPy and PyTorch)
    ref2 = np.zeros((3, 4), np.float32)
    ref2[1, [0, 0, 2]] += 1
    assert_close(x, ref2)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_accumulating_rows_with_repeated_and_negative_indices_matches_torch(dtype: str) -> None:
    """An embedding's backward: one integer index array on axis 0, rows repeated (summed by ferro-cpu's sort and
    reduceat), negative indices naming the same rows as their positive ones, into a tensor that is not zero."""
    rng = np.random.default_rng(3)
    base = rng.standard_normal((6, 2, 3)).astype(dtype)
    idx = np.array([[5, -1, 0], [2, 5, -6], [0, 0, 3]])
    value = rng.standard_normal((3, 3, 2, 3)).astype(dtype)
    ours = ferro.tensor(base).index_put_((ferro.tensor(idx),), ferro.tensor(value), accumulate=True)
    theirs = torch.tensor(base).index_put_((torch.tensor(idx),), torch.tensor(value), accumulate=True)
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6, atol=1e-6)
    w = ferro.tensor(base[:, 0], requires_grad=True)
    tw = torch.tensor(base[:, 0], requires_grad=True)
    (w[ferro.tensor(idx)] * ferro.tensor(value[:, :, 0])).sum().backward()
    (tw[torch.tensor(idx)] * torch.tensor(value[:, :, 0])).sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), rtol=1e-6, atol=1e-6)
