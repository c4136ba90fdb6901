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
    np.testing.assert_allclose(mine.detach().numpy(), theirs.detach().numpy(), rtol=rtol, atol=1e-10)


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
