"""ferro.linalg and the tensor products against torch: values and gradients."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import ferro

torch = pytest.importorskip("torch")
rng = np.random.default_rng(0)
A = rng.standard_normal((3, 4, 4))
SPD = A @ A.transpose(0, 2, 1) + 4 * np.eye(4)
B, BV, M = rng.standard_normal((3, 4, 2)), rng.standard_normal((3, 4)), rng.standard_normal((5, 3))
V3a, V3b, M2 = rng.standard_normal((4, 3)), rng.standard_normal((4, 3)), rng.standard_normal((2, 3))

CASES: list[tuple[str, Callable[..., Any], tuple[np.ndarray, ...], bool]] = [
    ("inv", lambda m, a: m.linalg.inv(a), (A,), True),
    ("det", lambda m, a: m.linalg.det(a), (A,), True),
    ("slogdet", lambda m, a: m.linalg.slogdet(a)[1], (A,), True),
    ("solve matrix", lambda m, a, b: m.linalg.solve(a, b), (A, B), True),
    ("solve vector", lambda m, a, b: m.linalg.solve(a, b), (A, BV), True),
    ("solve broadcast b", lambda m, a, b: m.linalg.solve(a, b), (A, B[0].copy()), True),
    ("solve one vector", lambda m, a, b: m.linalg.solve(a, b), (A, BV[0].copy()), True),
    ("cholesky", lambda m, a: m.linalg.cholesky(a), (SPD,), True),
    ("eigvalsh", lambda m, a: m.linalg.eigvalsh(a), (SPD,), True),
    ("svdvals", lambda m, a: m.linalg.svdvals(a), (M,), True),
    ("pinv", lambda m, a: m.linalg.pinv(a), (M,), False),
    ("qr |R|", lambda m, a: m.linalg.qr(a).R.abs(), (M,), False),
    ("lu_factor LU", lambda m, a: m.linalg.lu_factor(a).LU, (A,), True),
    ("lu_factor pivots", lambda m, a: m.linalg.lu_factor(a).pivots, (A,), False),
    *((f"lu {part}", lambda m, a, i=i: m.linalg.lu(a)[i], (A,), i > 0) for i, part in enumerate("PLU")),
    *((f"lu {part} {kind}", lambda m, a, i=i: m.linalg.lu(a)[i], (x,), False)
      for i, part in enumerate("PLU") for kind, x in (("tall", M), ("wide", M.T.copy()))),
    ("lstsq", lambda m, a, b: m.linalg.lstsq(a, b).solution, (M, M[:, :2].copy()), True),
    ("vector_norm 3", lambda m, a: m.linalg.vector_norm(a, 3, dim=1), (M,), True),
    *((f"matrix_norm {o}", lambda m, a, o=o: m.linalg.matrix_norm(a, o), (M,), True)
      for o in ("fro", "nuc", 2, 1, float("inf"), -1)),
    ("cross", lambda m, a, b: m.linalg.cross(a, b), (V3a, V3b), True),
    ("cdist", lambda m, a, b: (m.linalg.cdist if m is ferro else m.cdist)(a, b), (M, M2), True),
    ("outer", lambda m, a, b: m.outer(a, b), (M[:, 0].copy(), M[0].copy()), True),
    ("inner", lambda m, a, b: m.inner(a, b), (M, M2), True),
    ("tensordot", lambda m, a, b: m.tensordot(a, b, ([1, 2], [0, 1])), (A, A[0]), True),
    ("kron", lambda m, a, b: m.kron(a, b), (M2, M[:2]), True),
    ("einsum batch", lambda m, a, b: m.einsum("bij,bjk->bik", a, b), (A, B), True),
    ("einsum trace", lambda m, a: m.einsum("bii->b", a), (A,), True),
    ("einsum ellipsis", lambda m, a, b: m.einsum("...ij,...j->...i", a, b), (A, BV), True),
    ("einsum implicit", lambda m, a, b: m.einsum("ij,kj", a, b), (M, M2), True),
]


@pytest.mark.parametrize("name, fn, arrays, grad", CASES, ids=[c[0] for c in CASES])
def test_matches_torch(name: str, fn: Callable[..., Any], arrays: tuple[np.ndarray, ...], grad: bool) -> None:
    ours = [ferro.tensor(a, requires_grad=grad) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=grad) for a in arrays]
    got, ref = fn(ferro, *ours), fn(torch, *theirs)
    np.testing.assert_allclose(got.detach().numpy(), ref.detach().numpy(), rtol=1e-7, atol=1e-9)
    if grad:
        g = rng.standard_normal(tuple(ref.shape))
        got.backward(ferro.tensor(g))
        ref.backward(torch.tensor(g))
        for a, b in zip(ours, theirs):
            np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-6, atol=1e-8)


def test_errors() -> None:
    with pytest.raises(ferro.errors.ShapeError, match="square"):
        ferro.linalg.inv(ferro.ones(2, 3))
    with pytest.raises(ferro.errors.DTypeError, match=r"linalg\.det: not defined for dtype ferro\.int64"):
        ferro.linalg.det(ferro.ones(2, 2, dtype=ferro.int64))
    with pytest.raises(ferro.errors.ShapeError, match="size 3"):
        ferro.linalg.cross(ferro.ones(2), ferro.ones(2))
    with pytest.raises(RuntimeError, match="singular"):
        ferro.linalg.lu_factor(ferro.tensor([[1.0, 2.0], [2.0, 4.0]]))
    singular = ferro.linalg.lu(ferro.tensor([[1.0, 2.0], [2.0, 4.0]]))  # lu accepts it, as torch does
    np.testing.assert_allclose((singular.P @ singular.L @ singular.U).numpy(), [[1.0, 2.0], [2.0, 4.0]])


def test_lu_factor_double_backward() -> None:
    a = ferro.tensor(A[0], requires_grad=True)
    assert ferro.autograd.gradgradcheck(lambda x: ferro.linalg.lu_factor(x).LU, (a,))


_C = rng.standard_normal((3, 4, 4)) + 1j * rng.standard_normal((3, 4, 4))
_CM = rng.standard_normal((5, 3)) + 1j * rng.standard_normal((5, 3))
_HPD = _C @ _C.conj().transpose(0, 2, 1) + 4 * np.eye(4)


def _rank_one_terms(m: Any, a: Any) -> Any:
    """A loss of U and Vh that does not depend on their phases (u_k v_k^H is gauge invariant)."""
    r = m.linalg.svd(a, full_matrices=False)
    return r.U[:, 0:1] @ r.Vh[0:1, :] + r.U[:, 1:2] @ r.Vh[1:2, :] * r.S[0]


def _top_eigenvector_projector(r: Any) -> Any:
    """v v^H scaled by its eigenvalue, for the largest eigenvalue: independent of the eigenvector's phase."""
    return r[1][..., -1:] @ r[1][..., -1:].mH * r[0][..., -1:, None]


COMPLEX_CASES: list[tuple[str, Callable[..., Any], np.ndarray]] = [
    ("eigvalsh", lambda m, a: m.linalg.eigvalsh(a), _HPD),
    ("eigh vectors", lambda m, a: _top_eigenvector_projector(m.linalg.eigh(a)), _HPD),
    ("svdvals", lambda m, a: m.linalg.svdvals(a), _CM),
    ("svd U and Vh", _rank_one_terms, _CM),
    ("qr", lambda m, a: m.linalg.qr(a).R + m.linalg.qr(a).Q[:3], _CM),
    ("pinv", lambda m, a: m.linalg.pinv(a), _CM),
    ("lu_factor", lambda m, a: m.linalg.lu_factor(a).LU, _C),
    ("lstsq", lambda m, a: m.linalg.lstsq(a, a[:, :2]).solution, _CM),
    ("inv", lambda m, a: m.linalg.inv(a), _C),
    ("det", lambda m, a: m.linalg.det(a), _C),
    ("cholesky", lambda m, a: m.linalg.cholesky(a), _HPD),
    ("cholesky upper", lambda m, a: m.linalg.cholesky(a, upper=True), _HPD),
]


@pytest.mark.parametrize("name, fn, array", COMPLEX_CASES, ids=[c[0] for c in COMPLEX_CASES])
def test_complex_gradients_match_torch(name: str, fn: Callable[..., Any], array: np.ndarray) -> None:
    ours, theirs = ferro.tensor(array, requires_grad=True), torch.tensor(array, requires_grad=True)
    got, ref = fn(ferro, ours), fn(torch, theirs)
    assert got.dtype.is_complex == ref.is_complex()
    np.testing.assert_allclose(got.detach().numpy(), ref.detach().numpy(), rtol=1e-7, atol=1e-9)
    shape = tuple(ref.shape)
    g = rng.standard_normal(shape) + (1j * rng.standard_normal(shape) if ref.is_complex() else 0)
    got.backward(ferro.tensor(g))
    ref.backward(torch.tensor(g))
    np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), rtol=1e-6, atol=1e-8)


def test_complex_spectra_are_real() -> None:
    a = ferro.tensor(_HPD[0], requires_grad=True)
    assert ferro.linalg.eigvalsh(a).dtype == ferro.float64 and ferro.linalg.svd(a).S.dtype == ferro.float64


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "complex", "4-d"])
def test_stack_times_matrix_matches_torch(layout: str) -> None:
    """A stack of matrices times one matrix (a linear layer on (N, T, F)): the cpu kernel multiplies the stacked
    rows at once and the matrix's gradient is one product over them; values and gradients as PyTorch's."""
    shape = (2, 3, 5, 4) if layout == "4-d" else (3, 5, 4)
    x = rng.standard_normal(shape)
    w = rng.standard_normal((4, 6))
    if layout == "complex":
        x, w = x + 1j * rng.standard_normal(x.shape), w + 1j * rng.standard_normal(w.shape)
    results = []
    for m in (ferro, torch):
        xt, wt = m.tensor(x, requires_grad=True), m.tensor(w, requires_grad=True)
        a = xt.transpose(0, 1).contiguous().transpose(0, 1) if layout == "transposed" else xt  # not contiguous
        y = a @ wt
        (y.abs() if layout == "complex" else y).pow(2).sum().backward()
        results.append([t.detach().numpy() for t in (y, xt.grad, wt.grad)])
    for f, t in zip(*results):
        np.testing.assert_allclose(f, t, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("batch", [(4,), (2, 4)])
def test_linear_weight_gradient_is_row_major(batch: tuple[int, ...]) -> None:
    """A linear layer's weight gradient comes out row-major, as the weight is (PyTorch's gradient layout), with
    PyTorch's values; a plain matrix operand's gradient too."""
    x, w = rng.standard_normal((*batch, 5)), rng.standard_normal((3, 5))
    grads = []
    for m in (ferro, torch):
        xt, wt = m.tensor(x, requires_grad=True), m.tensor(w, requires_grad=True)
        m.nn.functional.linear(xt, wt).pow(2).sum().backward()
        grads.append((wt.grad, xt.grad))
    (fw, fx), (tw, tx) = grads
    assert fw.stride() == tw.stride() == (5, 1) and fw.is_contiguous()
    np.testing.assert_allclose(fw.numpy(), tw.numpy(), rtol=1e-10)
    np.testing.assert_allclose(fx.numpy(), tx.numpy(), rtol=1e-10)
    m2 = ferro.tensor(w.T.copy(), requires_grad=True)
    (ferro.tensor(x) @ m2).sum().backward()
    assert m2.grad.stride() == (3, 1)


@pytest.mark.parametrize("dtype", ["float64", "complex128"])
@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 5), (5, 3)])
def test_generic_lu_factor_on_a_strict_namespace_matches_torch(dtype: str, shape: tuple[int, ...]) -> None:
    """The generic backend's LU (the standard has none) on array_api_strict: no integer-array writes, no
    mixed-dtype assignment; LU and pivots as PyTorch's (LAPACK's getrf order)."""
    pytest.importorskip("array_api_strict")
    rng = np.random.default_rng(3)
    a = rng.standard_normal(shape) + (1j * rng.standard_normal(shape) if dtype == "complex128" else 0)
    a[..., 1, :] = a[..., 0, :]  # a repeated row: a zero pivot later on the square ones
    lu_t, piv_t, _ = torch.linalg.lu_factor_ex(torch.tensor(a))
    with ferro.use_backend("strict"):
        lu, piv, _ = ferro.linalg.lu_factor_ex(ferro.tensor(a))
        np.testing.assert_allclose(lu.numpy(), lu_t.numpy(), rtol=1e-10, atol=1e-10)
        assert piv.tolist() == piv_t.tolist()
