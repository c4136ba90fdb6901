"""Values at the edges of the dtype rules, compared with PyTorch on cpu and opencl: operands of different
dtypes compared or combined in their common dtype, integer inputs of the losses and scans promoted before
the arithmetic (not wrapped around in uint8 or int8), half-precision inputs of the random ops.

Every expectation is computed here by torch on the same input.
"""

from __future__ import annotations

import contextlib
from typing import Any

import numpy as np
import pytest

import ferro

torch = pytest.importorskip("torch")

_DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]


def _pair(values: list[Any], dtype: str, dev: str) -> tuple[ferro.Tensor, torch.Tensor]:
    return ferro.tensor(values, dtype=getattr(ferro, dtype), device=dev), torch.tensor(values,
                                                                                        dtype=getattr(torch, dtype))


@pytest.mark.parametrize("right", [False, True])
@pytest.mark.parametrize("bdtype", ["int64", "float32", "int8"])
@pytest.mark.parametrize("dtype", _DTYPES)
def test_searchsorted_promotes_values_and_boundaries(dev: str, dtype: str, bdtype: str, right: bool) -> None:
    """Boundaries of another dtype than the values: both compared in their common dtype (float values between
    integer boundaries keep their fraction; integer values are not reinterpreted as the boundaries' type)."""
    raw = [True, False, True] if dtype == "bool" else [-1.5, 0.5, 1.0, 1.5, 2.0, 2.5, 100.0]
    if dtype in ("uint8",):
        raw = [0, 1, 2, 3, 200]
    fv, tv = _pair(raw, dtype, dev)
    fb, tb = _pair([-1, 0, 1, 2, 3], bdtype, dev)
    expect = torch.searchsorted(tb, tv, right=right).tolist()
    assert ferro.searchsorted(fb, fv, right=right).tolist() == expect
    assert ferro.bucketize(fv, fb, right=right).tolist() == torch.bucketize(tv, tb, right=right).tolist()


@pytest.mark.parametrize("value", [1, 1.5, 2.0, -3])
def test_searchsorted_scalar_and_0d_values(dev: str, value: Any) -> None:
    """A Python number or a 0-d tensor: its own type (1.5 between int64 boundaries is not truncated to 1),
    and a 0-d result."""
    fb, tb = _pair([0, 1, 2, 3], "int64", dev)
    assert ferro.searchsorted(fb, value).tolist() == torch.searchsorted(tb, value).tolist()
    f0 = ferro.tensor(value, device=dev)
    out = ferro.searchsorted(fb, f0)
    expect = torch.searchsorted(tb, torch.tensor(value))
    assert out.shape == tuple(expect.shape) and out.tolist() == expect.tolist()


def test_searchsorted_rows_promote(dev: str) -> None:
    """2-d sorted rows (one search per row) of int64 against float32 values."""
    rows = [[0, 1, 2], [10, 20, 30]]
    vals = [[0.5, 1.5], [15.5, 30.0]]
    fb, tb = _pair(rows, "int64", dev)
    fv, tv = _pair(vals, "float32", dev)
    assert ferro.searchsorted(fb, fv).tolist() == torch.searchsorted(tb, tv).tolist()
    assert np.array_equal(ferro.searchsorted(fb, fv, right=True).numpy(),
                          torch.searchsorted(tb, tv, right=True).numpy())


@pytest.mark.parametrize("op", ["dropout", "dropout2d"])
@pytest.mark.parametrize("shape", [(2, 3, 4), (2, 3, 2, 2)])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64", "int64", "bool"])
def test_dropout_all_dropped(dev: str, dtype: str, shape: tuple[int, ...], op: str) -> None:
    """p=1 drops everything: zeros in the input's dtype, as PyTorch gives (not x * 0 / 0 = nan, not a bool
    input turned int64), at every dtype PyTorch takes. dropout2d's rule takes real floating input only (PyTorch
    refuses integers and bool at every p below 1; at p=1 it returns their zeros)."""
    x = np.arange(np.prod(shape)).reshape(shape) - 5
    fx, tx = _pair(x.tolist(), dtype, dev)
    if op == "dropout2d" and dtype in ("int64", "bool"):
        with pytest.raises(ferro.errors.DTypeError, match="dropout2d"):
            ferro.nn.functional.dropout2d(fx, 1.0)
        return
    out = getattr(ferro.nn.functional, op)(fx, 1.0)
    with pytest.warns(UserWarning) if op == "dropout2d" and len(shape) == 3 else _no_warning():
        expect = getattr(torch.nn.functional, op)(tx, 1.0)
    assert out.dtype == getattr(ferro, dtype)
    assert out.float().tolist() == expect.float().tolist()


def _no_warning() -> Any:
    return contextlib.nullcontext()


@pytest.mark.parametrize("p", [-0.1, 1.5])
def test_dropout2d_refuses_a_probability_outside_0_1(p: float) -> None:
    with pytest.raises(ValueError, match="between 0 and 1"):
        ferro.nn.functional.dropout2d(ferro.ones(2, 3, 4), p)
    with pytest.raises(ValueError, match="between 0 and 1"):
        torch.nn.functional.dropout2d(torch.ones(2, 3, 4), p)


_X = [[2, 1, 1], [0, 0, 0], [0, 0, 0], [2, 1, 2]]  # all-zero rows: cosines divide by the clamped norm


@pytest.mark.parametrize("dtype", ["bool", "uint8", "int8", "int16", "int64"])
def test_logcumsumexp_refuses_integers_as_pytorch(dev: str, dtype: str) -> None:
    """Integers and bool are refused up front, naming the op, as PyTorch refuses them (not computed in NumPy's
    float16 of an int8)."""
    raw = [[1, 0, 1, 1], [0, 1, 1, 0]] if dtype == "bool" else [[1, 2, 3, 7], [0, 3, 1, 5]]
    fx, tx = _pair(raw, dtype, dev)
    with pytest.raises(RuntimeError, match="not implemented"):
        torch.logcumsumexp(tx, -1)
    with pytest.raises(ferro.errors.DTypeError, match="logcumsumexp"):
        ferro.logcumsumexp(fx, -1)


@pytest.mark.parametrize("dtype", ["uint8", "int8", "int64"])
def test_binary_cross_entropy_refuses_integer_targets(dev: str, dtype: str) -> None:
    """An integer target is refused naming the op, as PyTorch refuses it; a float one gives PyTorch's value."""
    fx, tx = _pair(_X, dtype, dev)
    with pytest.raises(RuntimeError, match="expected Float"):
        torch.nn.functional.binary_cross_entropy(tx.sigmoid(), torch.ones_like(tx))
    with pytest.raises(ferro.errors.DTypeError, match="binary_cross_entropy"):
        ferro.nn.functional.binary_cross_entropy(fx.sigmoid(), ferro.ones_like(fx))
    out = ferro.nn.functional.binary_cross_entropy(fx.sigmoid(), ferro.ones_like(fx).float())
    expect = torch.nn.functional.binary_cross_entropy(tx.sigmoid(), torch.ones_like(tx).float())
    np.testing.assert_allclose(out.item(), expect.item(), rtol=1e-6)


@pytest.mark.parametrize("dtype", ["uint8", "int8", "float32"])
def test_margin_ranking_loss_negates_as_the_float_target(dev: str, dtype: str) -> None:
    """``-target * (x1 - x2)``: the integer difference wraps as PyTorch's does, its negation is a float."""
    fx, tx = _pair(_X, dtype, dev)
    out = ferro.nn.functional.margin_ranking_loss(fx[:, 0], fx[:, 1], ferro.ones(4, device=dev), 0.1)
    expect = torch.nn.functional.margin_ranking_loss(tx[:, 0], tx[:, 1], torch.ones(4), 0.1)
    np.testing.assert_allclose(out.item(), expect.item(), rtol=1e-6)


@pytest.mark.parametrize("dtype", ["uint8", "float32", "float64"])
def test_cosines_of_all_zero_rows(dev: str, dtype: str) -> None:
    """An all-zero row: cosine 0 (norms clamped at eps), not 0 / 0; uint8 as PyTorch's float32 of it
    (cosine_similarity: PyTorch refuses uint8)."""
    fx, tx = _pair(_X, dtype, dev)
    tf = tx if dtype != "uint8" else tx.float()
    out = ferro.nn.functional.cosine_similarity(fx, fx.flip(0))
    np.testing.assert_allclose(out.numpy(), torch.nn.functional.cosine_similarity(tf, tf.flip(0)).numpy(),
                               rtol=1e-6)
    loss = ferro.nn.functional.cosine_embedding_loss(fx, fx.flip(0), ferro.ones(4, device=dev))
    expect = torch.nn.functional.cosine_embedding_loss(tx, tx.flip(0), torch.ones(4))
    np.testing.assert_allclose(loss.item(), expect.item(), rtol=1e-6)


def test_vdot_and_einsum_refuse_bool_as_pytorch(dev: str) -> None:
    """Sums of products of bools: PyTorch refuses them (as ferro's matmul does), ferro named the op; they
    counted the true products as int64 before."""
    fa, ta = _pair([True, False, True], "bool", dev)
    calls = {"vdot": lambda m, a: m.vdot(a, a), "einsum": lambda m, a: m.einsum("i,i->", a, a)}
    for name, call in calls.items():
        with pytest.raises(RuntimeError):
            call(torch, ta)
        with pytest.raises(ferro.errors.DTypeError, match=f"{name}: .*bool"):
            call(ferro, fa)


@pytest.mark.parametrize("dtype", ["uint8", "int32", "int64", "float32"])
def test_vdot_and_einsum_values(dev: str, dtype: str) -> None:
    fa, ta = _pair([1, 2, 3], dtype, dev)
    fb, tb = _pair([4, 0, 5], dtype, dev)
    assert ferro.vdot(fa, fb).item() == torch.vdot(ta, tb).item()
    assert ferro.einsum("i,j->ij", fa, fb).tolist() == torch.einsum("i,j->ij", ta, tb).tolist()


@pytest.mark.parametrize("op", ["huber_loss", "smooth_l1_loss"])
def test_huber_and_smooth_l1_refuse_complex_as_pytorch(op: str) -> None:
    """Written in abs, a complex input gave a real loss that PyTorch's refusal does not define."""
    x = [1 + 1j, 2, 0.5j]
    with pytest.raises(RuntimeError):
        getattr(torch.nn.functional, op)(torch.tensor(x), torch.ones(3, dtype=torch.complex64))
    with pytest.raises(ferro.errors.DTypeError, match=f"{op}: .*complex"):
        getattr(ferro.nn.functional, op)(ferro.tensor(x), ferro.ones(3, dtype=ferro.complex64))


@pytest.mark.parametrize("op", ["huber_loss", "smooth_l1_loss"])
def test_huber_and_smooth_l1_values(dev: str, op: str) -> None:
    fx, tx = _pair([[0.2, 3.0, -1.5], [1.0, 0.9, 2.5]], "float32", dev)
    out = getattr(ferro.nn.functional, op)(fx, ferro.ones_like(fx))
    np.testing.assert_allclose(out.item(), getattr(torch.nn.functional, op)(tx, torch.ones_like(tx)).item(),
                               rtol=1e-6)


@pytest.mark.parametrize("contiguous", [True, False])
def test_write_through_a_row_of_an_expanded_tensor_reaches_its_base(dev: str, contiguous: bool) -> None:
    """``expand`` is a view: a part of it whose elements do not overlap can be written, and the write shows
    in the base, as PyTorch's; writing the whole overlapping view is refused (the base unchanged)."""
    def base(m: Any, device: str) -> Any:
        x = m.arange(6.0, device=device).reshape(2, 3)
        return (x if contiguous else x.T)[:, :1]  # (2, 1), or a strided (3, 1) column
    fx, tx = base(ferro, dev), base(torch, "cpu")
    fx.expand(fx.shape[0], 4)[:, 2].add_(100.0)
    tx.expand(tx.shape[0], 4)[:, 2].add_(100.0)
    assert fx.tolist() == tx.tolist()
    with pytest.raises(RuntimeError, match="single memory location"):
        fx.expand(fx.shape[0], 4).add_(1.0)
    assert fx.tolist() == tx.tolist()


def test_unfold_without_strided_views_is_still_a_view() -> None:
    """On a backend without strided views (array_api_strict's), unfold's windows are a copy that core keeps
    in step with the base as PyTorch's view: writes through it reach the base, writes to the base show in
    it, gradients flow; a write into overlapping windows is refused rather than applied once per window."""
    pytest.importorskip("array_api_strict")
    tx = torch.arange(15.0).reshape(3, 5)
    with ferro.use_backend("strict"):
        assert "storage_layout" not in ferro.backends.get("strict").kernels(0)
        fx = ferro.arange(15.0).reshape(3, 5)
        fx.unfold(1, 2, 2).mul_(-1.0)
        tx.unfold(1, 2, 2).mul_(-1.0)
        assert fx.tolist() == tx.tolist()
        fv, tv = fx.unfold(1, 3, 1), tx.unfold(1, 3, 1)
        fx.add_(0.5)
        tx.add_(0.5)
        assert fv.tolist() == tv.tolist()
        with pytest.raises(RuntimeError, match=r"unfold.*overlap"):
            fv.add_(1.0)
        assert fx.tolist() == tx.tolist()
        fa = ferro.arange(7.0, requires_grad=True)
        ta = torch.arange(7.0, requires_grad=True)
        (fa.unfold(0, 3, 2) * ferro.arange(9.0).reshape(3, 3)).sum().backward()
        (ta.unfold(0, 3, 2) * torch.arange(9.0).reshape(3, 3)).sum().backward()
        assert fa.grad.tolist() == ta.grad.tolist()


def test_expand_on_a_namespace_with_read_only_broadcasts() -> None:
    """array_api_strict's broadcast_to views are read-only: the generic backend's expand copies and declares
    it (view_copies), so core still gives PyTorch's view semantics."""
    pytest.importorskip("array_api_strict")
    tx = torch.arange(3.0).reshape(3, 1)
    with ferro.use_backend("strict"):
        assert ferro.backends.get("strict").view_copies(0) == frozenset({"expand"})
        fx = ferro.arange(3.0).reshape(3, 1)
        fe, te = fx.expand(3, 4), tx.expand(3, 4)
        fe[:, 2].add_(100.0)
        te[:, 2].add_(100.0)
        assert fx.tolist() == tx.tolist() and fe.tolist() == te.tolist()
        fx.mul_(2.0)
        tx.mul_(2.0)
        assert fe.tolist() == te.tolist()  # the base's write shows in the expanded tensor
        with pytest.raises(RuntimeError, match="expand"):
            fe.add_(1.0)
        assert fx.tolist() == tx.tolist()
