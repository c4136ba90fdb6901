"""LU factorization with partial pivoting over any Array API namespace.

The standard's ``linalg`` extension has no LU, so the generic backend
carries this one: Doolittle elimination, vectorized over the batch and the
trailing submatrix, one column per step (LAPACK's ``getrf`` order, so the
pivots match it). Backends with a LAPACK at hand override ``linalg_lu_factor``.
"""

from __future__ import annotations

from typing import Any

__all__ = ["lu_factor"]


def lu_factor(xp: Any, a: Any) -> tuple[Any, Any]:
    """``(LU, pivots)`` of a (batch of) ``m x n`` matrices, as LAPACK's ``getrf``.

    ``LU`` holds ``U`` on and above the diagonal and the unit-lower ``L`` below
    it; ``pivots`` (int32, 1-based) says which row was swapped with row ``i`` at
    step ``i``. A zero pivot leaves its column uneliminated, as LAPACK does.
    """
    shape = a.shape
    m, n = shape[-2], shape[-1]
    k = min(m, n)
    lu = xp.reshape(xp.asarray(a, copy=True), (-1, m, n))
    batch = lu.shape[0]
    row_ids = xp.reshape(xp.arange(m), (1, m))
    zero = xp.zeros((), dtype=lu.dtype)
    piv = xp.zeros((batch, k), dtype=xp.int32)
    complex_ = xp.isdtype(lu.dtype, "complex floating")
    for j in range(k):
        col = lu[:, j:, j]
        # LAPACK picks the pivot by |re| + |im| for complex matrices (izamax), not the modulus.
        mag = xp.abs(xp.real(col)) + xp.abs(xp.imag(col)) if complex_ else xp.abs(col)
        p = xp.argmax(mag, axis=-1) + j
        piv[:, j] = xp.astype(p + 1, xp.int32)
        # swap rows j and p of each matrix by masks: the standard indexes no arrays mixed with slices
        at_p = xp.reshape(row_ids == xp.reshape(p, (batch, 1)), (batch, m, 1))
        row_j = xp.asarray(lu[:, j, :], copy=True)
        row_p = xp.sum(xp.where(at_p, lu, zero), axis=1)
        lu = xp.where(at_p, xp.reshape(row_j, (batch, 1, n)), lu)
        lu[:, j, :] = row_p
        pivot = lu[:, j, j]
        safe = xp.where(pivot == 0, xp.ones_like(pivot), pivot)
        lu[:, j + 1:, j] = lu[:, j + 1:, j] / safe[:, None]
        lu[:, j + 1:, j + 1:] = lu[:, j + 1:, j + 1:] - lu[:, j + 1:, j, None] * lu[:, j, None, j + 1:]
    return xp.reshape(lu, shape), xp.reshape(piv, (*shape[:-2], k))
