"""More of torch.linalg in ferro, against torch.linalg: values, PyTorch's keywords, and gradients where the
function reads only part of its input (solve_triangular's triangle)."""

from __future__ import annotations

import numpy as np
import pytest

import ferro

torch = pytest.importorskip("torch")
RNG = np.random.default_rng(0)


def _both(a: np.ndarray, grad: bool = False) -> tuple[ferro.Tensor, object]:
    return ferro.tensor(a, requires_grad=grad), torch.tensor(a, requires_grad=grad)


def _same(mine: ferro.Tensor, theirs: object, rtol: float = 1e-9) -> None:
    np.testing.assert_allclose(mine.detach().numpy(), theirs.detach().resolve_conj().numpy(), rtol=rtol, atol=1e-10)


def test_products_and_powers() -> None:
    (a, ta), (b, tb) = _both(RNG.normal(size=(3, 4))), _both(RNG.normal(size=(4, 2)))
    v, tv = _both(RNG.normal(size=(2,)))
    _same(ferro.linalg.multi_dot([a, b, v]), torch.linalg.multi_dot([ta, tb, tv]))
    _same(ferro.linalg.vecdot(a, a.flip(0), dim=0), torch.linalg.vecdot(ta, ta.flip(0), dim=0))
    m, tm = _both(RNG.normal(size=(2, 3, 3)))
    for n in (-2, 0, 1, 5):
        _same(ferro.linalg.matrix_power(m, n), torch.linalg.matrix_power(tm, n), rtol=1e-8)
    for scale in (0.1, 1.0, 6.0):
        _same(ferro.linalg.matrix_exp(m * scale), torch.linalg.matrix_exp(tm * scale), rtol=1e-8)
    assert ferro.linalg.matmul is ferro.matmul
    _same(ferro.linalg.diagonal(m, offset=1), torch.linalg.diagonal(tm, offset=1))
    x, tx = _both(RNG.normal(size=(4,)))
    for n in (None, 2, 6):
        _same(ferro.linalg.vander(x, N=n), torch.linalg.vander(tx, N=n))


def test_rank_and_condition() -> None:
    low = RNG.normal(size=(5, 2)) @ RNG.normal(size=(2, 4))
    m, tm = _both(np.stack([low, RNG.normal(size=(5, 4))]))
    np.testing.assert_array_equal(ferro.linalg.matrix_rank(m).numpy(), torch.linalg.matrix_rank(tm).numpy())
    np.testing.assert_array_equal(ferro.linalg.matrix_rank(m, atol=1.0, rtol=0.0).numpy(),
                                  torch.linalg.matrix_rank(tm, atol=1.0, rtol=0.0).numpy())
    s, ts = _both(RNG.normal(size=(3, 3)))
    for p in (None, 2, -2, "fro", 1, float("inf")):
        _same(ferro.linalg.cond(s, p), torch.linalg.cond(ts, p), rtol=1e-8)


@pytest.mark.parametrize(("upper", "left", "unitriangular"), [(True, True, False), (False, True, False),
                                                               (True, False, True), (False, False, False)])
def test_solve_triangular_values_and_gradients(upper: bool, left: bool, unitriangular: bool) -> None:
    a = RNG.normal(size=(3, 3)) + 3 * np.eye(3)
    b = RNG.normal(size=(3, 2) if left else (2, 3))
    (A, tA), (B, tB) = _both(a, True), _both(b, True)
    x = ferro.linalg.solve_triangular(A, B, upper=upper, left=left, unitriangular=unitriangular)
    tx = torch.linalg.solve_triangular(tA, tB, upper=upper, left=left, unitriangular=unitriangular)
    _same(x, tx)
    x.square().sum().backward()
    tx.square().sum().backward()
    _same(A.grad, tA.grad, rtol=1e-8)  # zero outside the triangle read, as PyTorch's
    _same(B.grad, tB.grad, rtol=1e-8)


def test_tensor_inverse_and_solve() -> None:
    a, ta = _both(RNG.normal(size=(6, 2, 3)) + np.eye(6).reshape(6, 2, 3) * 3)
    _same(ferro.linalg.tensorinv(a, ind=1), torch.linalg.tensorinv(ta, ind=1))
    a4, ta4 = _both(RNG.normal(size=(2, 3, 6)) + np.eye(6).reshape(2, 3, 6) * 3)
    b, tb = _both(RNG.normal(size=(2, 3)))
    _same(ferro.linalg.tensorsolve(a4, b), torch.linalg.tensorsolve(ta4, tb))
    with pytest.raises(ferro.errors.ShapeError, match="tensorinv"):
        ferro.linalg.tensorinv(ferro.ones(2, 3), ind=1)
    with pytest.raises(ValueError, match="multi_dot"):
        ferro.linalg.multi_dot([ferro.ones(2, 2)])
    with pytest.raises(TypeError, match="multi_dot"):
        ferro.linalg.multi_dot("ab")


# -- the *_ex variants, lu_solve, householder_product, eig / eigvals (ferro/_ops/linalg_solvers.py) -------------

def _singular_batch() -> np.ndarray:
    a = RNG.normal(size=(3, 4, 4))
    a[1] = 0.0
    a[1, 0, 0] = 1.0  # U's second diagonal element is zero
    return a


@pytest.mark.parametrize("name", ["inv_ex", "lu_factor_ex"])
def test_ex_variants_report_singular_matrices_in_info(name: str) -> None:
    a = _singular_batch()
    mine, theirs = getattr(ferro.linalg, name)(ferro.tensor(a)), getattr(torch.linalg, name)(torch.tensor(a))
    assert mine.info.dtype is ferro.int32
    assert mine.info.tolist() == theirs.info.tolist() == [0, 2, 0]
    _same(mine[0][[0, 2]], theirs[0][[0, 2]])  # the factored batch elements; the singular one is unspecified
    with pytest.raises(ferro.linalg.LinAlgError, match=r"\(Batch element 1\): The diagonal element 2 is zero"):
        ferro.linalg.inv_ex(ferro.tensor(a), check_errors=True)


def test_solve_ex_left_and_right() -> None:
    (a, ta), (b, tb) = _both(RNG.normal(size=(2, 4, 4)), grad=True), _both(RNG.normal(size=(2, 4, 3)), grad=True)
    for left in (True, False):
        rhs, trhs = (b, tb) if left else (b.mT, tb.mT)
        mine, theirs = ferro.linalg.solve_ex(a, rhs, left=left), torch.linalg.solve_ex(ta, trhs, left=left)
        _same(mine.result, theirs.result, rtol=1e-8)
        assert mine.info.tolist() == theirs.info.tolist() == [0, 0]
    mine.result.sum().backward()
    theirs.result.sum().backward()
    _same(a.grad, ta.grad, rtol=1e-8)
    _same(b.grad, tb.grad, rtol=1e-8)
    singular = _singular_batch()
    assert ferro.linalg.solve_ex(ferro.tensor(singular), ferro.ones(3, 4)).info.tolist() == [0, 2, 0]


def test_cholesky_ex_names_the_failing_minor() -> None:
    x = RNG.normal(size=(3, 4, 4))
    spd = x @ x.transpose(0, 2, 1) + np.eye(4)
    spd[2, 2, 2] = -10.0
    mine, theirs = ferro.linalg.cholesky_ex(ferro.tensor(spd)), torch.linalg.cholesky_ex(torch.tensor(spd))
    assert mine.info.tolist() == theirs.info.tolist() == [0, 0, 3]
    _same(mine.L[:2], theirs.L[:2])
    up = ferro.linalg.cholesky_ex(ferro.tensor(spd[:2]), upper=True)
    _same(up.L, torch.linalg.cholesky_ex(torch.tensor(spd[:2]), upper=True).L)
    with pytest.raises(ferro.linalg.LinAlgError, match="order 3"):
        ferro.linalg.cholesky_ex(ferro.tensor(spd), check_errors=True)


def test_linalg_errors_are_ferro_linalg_errors() -> None:
    with pytest.raises(ferro.linalg.LinAlgError, match="Singular"):
        ferro.linalg.inv(ferro.zeros(2, 2))
    assert issubclass(ferro.linalg.LinAlgError, RuntimeError) and issubclass(ferro.linalg.LinAlgError, ValueError)


@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("adjoint", [False, True])
def test_lu_solve_matches_torch_with_gradients(left: bool, adjoint: bool) -> None:
    a = RNG.normal(size=(2, 4, 4)) + 1j * RNG.normal(size=(2, 4, 4))
    lu, piv = torch.linalg.lu_factor(torch.tensor(a))
    b = RNG.normal(size=(2, 4, 3) if left else (2, 3, 4))
    (fl, tl), (fb, tb) = _both(lu.numpy(), grad=True), _both(b + 0j, grad=True)
    mine = ferro.linalg.lu_solve(fl, ferro.tensor(piv.numpy()), fb, left=left, adjoint=adjoint)
    theirs = torch.linalg.lu_solve(tl, piv, tb, left=left, adjoint=adjoint)
    _same(mine, theirs, rtol=1e-8)
    mine.abs().sum().backward()
    theirs.abs().sum().backward()
    _same(fb.grad, tb.grad, rtol=1e-7)
    _same(fl.grad, tl.grad, rtol=1e-7)


def test_householder_product_matches_torch_with_gradients() -> None:
    (a, ta), (tau, ttau) = _both(RNG.normal(size=(2, 5, 3)), grad=True), _both(RNG.normal(size=(2, 2)), grad=True)
    mine, theirs = ferro.linalg.householder_product(a, tau), torch.linalg.householder_product(ta, ttau)
    _same(mine, theirs)
    (mine ** 2).sum().backward()
    (theirs ** 2).sum().backward()
    _same(a.grad, ta.grad)
    _same(tau.grad, ttau.grad)
    with pytest.raises(ferro.errors.ShapeError, match="greater than or equal"):
        ferro.linalg.householder_product(ferro.ones(2, 3), ferro.ones(1))


@pytest.mark.parametrize("complex_input", [False, True])
def test_eig_and_eigvals_match_torch_with_gradients(complex_input: bool) -> None:
    a = RNG.normal(size=(3, 4, 4)) + (1j * RNG.normal(size=(3, 4, 4)) if complex_input else 0)
    (fa, ta) = _both(a, grad=True)
    (w, v), (tw, tv) = ferro.linalg.eig(fa), torch.linalg.eig(ta)
    assert w.dtype is (ferro.complex128)
    _same(w, tw)
    _same(v.abs(), tv.abs())  # each eigenvector up to a phase; LAPACK makes the largest component real
    weights = ferro.tensor(np.arange(4.0))
    ((v.abs() ** 2 * weights).sum() + w.imag.sum() + w.real.sum()).backward()
    ((tv.abs() ** 2 * torch.tensor(np.arange(4.0))).sum() + tw.imag.sum() + tw.real.sum()).backward()
    _same(fa.grad, ta.grad, rtol=1e-7)
    _same(ferro.linalg.eigvals(fa), torch.linalg.eigvals(ta))


@pytest.mark.parametrize(("kind", "hermitian"), [("real", False), ("complex_symmetric", False), ("hermitian", True)])
def test_ldl_factor_and_solve_match_torch(kind: str, hermitian: bool) -> None:
    c = RNG.normal(size=(2, 5, 5)) + (1j * RNG.normal(size=(2, 5, 5)) if kind != "real" else 0)
    a = c + (np.conj(c).transpose(0, 2, 1) if hermitian else c.transpose(0, 2, 1))
    b = RNG.normal(size=(2, 5, 3)).astype(a.dtype)
    mine, theirs = ferro.linalg.ldl_factor(ferro.tensor(a), hermitian=hermitian), \
        torch.linalg.ldl_factor(torch.tensor(a), hermitian=hermitian)
    _same(mine.LD, theirs.LD)
    assert mine.pivots.dtype is ferro.int32
    assert mine.pivots.tolist() == theirs.pivots.tolist()
    x = ferro.linalg.ldl_solve(mine.LD, mine.pivots, ferro.tensor(b), hermitian=hermitian)
    _same(x, torch.linalg.ldl_solve(theirs.LD, theirs.pivots, torch.tensor(b), hermitian=hermitian), rtol=1e-8)
    _same(ferro.tensor(a) @ x, torch.tensor(b), rtol=1e-8)


def test_ldl_factor_reports_a_singular_d_and_is_not_differentiable() -> None:
    ex = ferro.linalg.ldl_factor_ex(ferro.zeros(3, 3, dtype=ferro.float64))
    assert ex.info.item() == torch.linalg.ldl_factor_ex(torch.zeros(3, 3, dtype=torch.float64)).info.item() == 1
    with pytest.raises(ferro.linalg.LinAlgError, match=r"D\[1,1\] is zero"):
        ferro.linalg.ldl_factor(ferro.zeros(3, 3))
    a = ferro.eye(3, dtype=ferro.float64, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"derivative for 'linalg\.ldl_factor' is not implemented"):
        ferro.linalg.ldl_factor(a).LD.sum().backward()
