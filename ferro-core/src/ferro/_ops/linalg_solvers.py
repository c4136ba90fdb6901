"""More of ``torch.linalg``: the ``*_ex`` variants that report failures in ``info`` instead of raising
(``inv_ex``, ``solve_ex``, ``cholesky_ex``, ``lu_factor_ex``), ``lu_solve``, ``householder_product``, the
eigen-decomposition of general matrices (``eig``, ``eigvals``, on the ``linalg_eig`` kernel) and the Bunch-Kaufman
LDL factorization (``ldl_factor``, ``ldl_factor_ex``, ``ldl_solve``, on the ``linalg_ldl_*`` kernels: LAPACK's
format, not differentiable, as in PyTorch).

``info`` is an int32 tensor of the batch shape: 0 where the factorization succeeded, else PyTorch's code (the
1-based index of the zero pivot of ``U``, or of the leading minor that is not positive-definite). Where it is not
0 the other results hold NaN (PyTorch leaves them unspecified). Gradients are those of the ops used, and for
``eig`` PyTorch's formula.
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Callable
from typing import Any

from .._core.dtypes import bfloat16, complex64, complex128, float16, float32, float64, int32
from .._core.records import register_composites
from .._core.tensor import Tensor, _wrap
from .._creation import arange, eye
from ..autograd._function import Function
from ..dispatch._dispatch import reported_as
from ..errors import LinAlgError, ShapeError
from ._rules import check_rule
from .elementwise import where
from .linalg_ext import FUNCTIONS as _LINALG
from .linalg_ext import _kernel, _lu_factor, _permutation, _square
from .linalg_more import FUNCTIONS as _MORE

__all__ = ["FUNCTIONS", "InvExResult", "SolveExResult", "CholeskyExResult", "LUFactorExResult", "EigResult",
           "LDLFactorResult", "LDLFactorExResult"]

InvExResult = namedtuple("InvExResult", ["inverse", "info"])
SolveExResult = namedtuple("SolveExResult", ["result", "info"])
CholeskyExResult = namedtuple("CholeskyExResult", ["L", "info"])
LUFactorExResult = namedtuple("LUFactorExResult", ["LU", "pivots", "info"])
EigResult = namedtuple("EigResult", ["eigenvalues", "eigenvectors"])
LDLFactorResult = namedtuple("LDLFactorResult", ["LD", "pivots"])
LDLFactorExResult = namedtuple("LDLFactorExResult", ["LD", "pivots", "info"])
_COMPLEX = {float32: complex64, float64: complex128, complex64: complex64, complex128: complex128}
_HALF = (float16, bfloat16)


def _half(*ts: Tensor) -> bool:
    """Whether a 16-bit float input makes the call run in float32 (the factorization kernels take no half)."""
    return any(t.dtype in _HALF for t in ts)


def _back(x: Any, dtype: Any) -> Any:
    """A result (or tuple of them) computed in float32 cast back to ``dtype`` (int32 ``info`` kept)."""
    if isinstance(x, tuple):
        return type(x)(*(_back(v, dtype) for v in x))
    return x.to(dtype) if x.dtype is float32 else x


def _zero_pivot(lu: Tensor) -> Tensor:
    """PyTorch's ``info`` of an LU factorization: the 1-based index of the first zero on ``U``'s diagonal, 0 if
    none (int32, the batch shape)."""
    d = lu.detach().diagonal(0, -2, -1)
    k = d.shape[-1]
    idx = arange(1, k + 1, device=lu.device)
    first = where(d == 0, idx, k + 1).amin(-1)
    return where(first == k + 1, 0, first).to(int32)


def _raise_for(op: str, info: Tensor, what: str) -> None:
    """The ``LinAlgError`` of ``check_errors=True``, naming the first failing batch element as PyTorch does."""
    flat = info.reshape(-1).tolist()
    bad = next((i for i, v in enumerate(flat) if v), None)
    if bad is None:
        return
    where_ = f"(Batch element {bad}): " if info.ndim else ""
    raise LinAlgError(f"linalg.{op}: {where_}{what.format(flat[bad])}")


def _masked(a: Tensor, ok: Tensor) -> Tensor:
    """``a`` with the matrices of the failed batch elements replaced by the identity (safe to factor)."""
    if bool(ok.all()):
        return a
    return where(ok.unsqueeze(-1).unsqueeze(-1), a, eye(a.shape[-1], dtype=a.dtype, device=a.device))


def _nan_where_failed(x: Tensor, ok: Tensor, dims: int) -> Tensor:
    if bool(ok.all()):
        return x
    cond = ok
    for _ in range(dims):
        cond = cond.unsqueeze(-1)
    return where(cond, x, float("nan"))


_SINGULAR = "The diagonal element {} is zero, the {} could not be completed because the input matrix is singular."


def inv_ex(A: Tensor, *, check_errors: bool = False) -> InvExResult:
    """``(inverse, info)``: the inverse of square matrices, with ``info`` the zero pivot where one is singular."""
    check_rule("linalg.inv_ex", A)
    _square("inv_ex", A)
    if _half(A):
        return _back(inv_ex(A.to(float32), check_errors=check_errors), A.dtype)
    info = _zero_pivot(_lu_factor(A.detach(), True)[0])
    if check_errors:
        _raise_for("inv_ex", info, _SINGULAR.replace("{} could", "inversion could"))
    ok = info == 0
    return InvExResult(_nan_where_failed(_LINALG["inv"](_masked(A, ok)), ok, 2), info)


def solve_ex(A: Tensor, B: Tensor, *, left: bool = True, check_errors: bool = False) -> SolveExResult:
    """``(result, info)``: the solution of ``A X = B`` (``X A = B`` with ``left=False``), with ``info`` the zero
    pivot where ``A`` is singular."""
    check_rule("linalg.solve_ex", A, B)
    _square("solve_ex", A)
    if _half(A, B):
        return _back(solve_ex(A.to(float32), B.to(float32), left=left, check_errors=check_errors), A.dtype)
    info = _zero_pivot(_lu_factor(A.detach(), True)[0])
    if check_errors:
        _raise_for("solve_ex", info, _SINGULAR.replace("{} could", "solve could"))
    ok = info == 0
    safe = _masked(A, ok)
    x = _LINALG["solve"](safe, B) if left else _LINALG["solve"](safe.mT, B.mT).mT
    vector = x.ndim == A.ndim - 1
    return SolveExResult(_nan_where_failed(x, ok, 1 if vector else 2), info)


def _first_failing_minor(a: Tensor) -> int:
    """The order of the first leading minor of the matrix ``a`` that is not positive-definite (0: none)."""
    for k in range(1, a.shape[-1] + 1):
        try:
            _LINALG["cholesky"](a[:k, :k])
        except LinAlgError:
            return k
    return 0


def cholesky_ex(A: Tensor, *, upper: bool = False, check_errors: bool = False) -> CholeskyExResult:
    """``(L, info)``: the Cholesky factor, with ``info`` the order of the leading minor that is not
    positive-definite where one is not."""
    check_rule("linalg.cholesky_ex", A)
    _square("cholesky_ex", A)
    if _half(A):
        return _back(cholesky_ex(A.to(float32), upper=upper, check_errors=check_errors), A.dtype)
    batch = tuple(A.shape[:-2])
    try:
        low = _LINALG["cholesky"](A, upper=upper)
        return CholeskyExResult(low, _zeros_int(batch, A))
    except LinAlgError:
        pass
    flat = A.detach().reshape(-1, A.shape[-2], A.shape[-1])
    codes = [_first_failing_minor(flat[i]) for i in range(flat.shape[0])]
    from .._creation import tensor
    info = tensor(codes, dtype=int32, device=A.device).reshape(batch)
    if check_errors:
        _raise_for("cholesky_ex", info, "The factorization could not be completed because the input is not "
                                        "positive-definite (the leading minor of order {} is not positive-definite).")
    ok = info == 0
    return CholeskyExResult(_nan_where_failed(_LINALG["cholesky"](_masked(A, ok), upper=upper), ok, 2), info)


def _zeros_int(batch: tuple[int, ...], like: Tensor) -> Tensor:
    from .._creation import zeros
    return zeros(batch, dtype=int32, device=like.device)


def lu_factor_ex(A: Tensor, *, pivot: bool = True, check_errors: bool = False) -> LUFactorExResult:
    """``(LU, pivots, info)`` of LAPACK's ``getrf``, with ``info`` the first zero pivot of ``U`` (0: none); unlike
    :func:`lu_factor` it does not raise for a singular matrix."""
    check_rule("linalg.lu_factor_ex", A)
    if _half(A):
        return _back(lu_factor_ex(A.to(float32), pivot=pivot, check_errors=check_errors), A.dtype)
    lu, piv = _lu_factor(A, pivot)
    info = _zero_pivot(lu)
    if check_errors:
        _raise_for("lu_factor_ex", info, "U[{0},{0}] is zero, the factorization is singular.")
    return LUFactorExResult(lu, piv, info)


def lu_solve(LU: Tensor, pivots: Tensor, B: Tensor, *, left: bool = True, adjoint: bool = False) -> Tensor:
    """The solution of ``A X = B`` from ``A``'s :func:`lu_factor` (``X A = B`` with ``left=False``; ``A^H`` for
    ``A`` with ``adjoint``)."""
    check_rule("linalg.lu_solve", LU, B)
    _square("lu_solve", LU)
    if _half(LU, B):
        return lu_solve(LU.to(float32), pivots, B.to(float32), left=left, adjoint=adjoint).to(LU.dtype)
    if B.ndim < 2 or (B.shape[-2] if left else B.shape[-1]) != LU.shape[-1]:
        raise ShapeError(f"linalg.lu_solve: LU of shape {list(LU.shape)} and B of shape {list(B.shape)} do not match"
                         f" (left={left})")
    if not left:  # X A = B  <=>  A^H X^H = B^H
        return lu_solve(LU, pivots, B.mH, left=True, adjoint=not adjoint).mH
    n = LU.shape[-1]
    tri = _MORE["solve_triangular"]
    perm = _permutation(pivots, n, LU)  # A = P L U
    low, up = LU, LU
    if not adjoint:  # X = U^-1 L^-1 P^T B
        y = tri(low, perm.mT @ B, upper=False, unitriangular=True)
        return tri(up, y, upper=True)
    y = tri(up.mH, B, upper=False)  # A^H = U^H L^H P^T: X = P L^-H U^-H B
    return perm @ tri(low.mH, y, upper=True, unitriangular=True)


def householder_product(A: Tensor, tau: Tensor) -> Tensor:
    """The first ``n`` columns of ``H_1 ... H_k``, ``H_i = I - tau_i v_i v_i^H`` with ``v_i`` column ``i`` of
    ``A`` below the diagonal and 1 on it (LAPACK's ``orgqr``)."""
    check_rule("linalg.householder_product", A, tau)
    if A.ndim < 2:
        raise ShapeError(f"linalg.householder_product: input must have at least 2 dimensions, got {A.ndim}")
    m, n = A.shape[-2], A.shape[-1]
    if m < n:
        raise ShapeError(f"linalg.householder_product: input.shape[-2] ({m}) must be greater than or equal to "
                         f"input.shape[-1] ({n})")
    k = tau.shape[-1] if tau.ndim else 0
    if tau.ndim != A.ndim - 1 or k > n or tuple(tau.shape[:-1]) != tuple(A.shape[:-2]):
        raise ShapeError(f"linalg.householder_product: tau of shape {list(tau.shape)} does not fit input of shape "
                         f"{list(A.shape)} (expected batch {list(A.shape[:-2])} and at most {n} scalars)")
    if _half(A, tau):  # accumulated in float32, as the factorizations
        return householder_product(A.to(float32), tau.to(float32)).to(A.dtype)
    tau = tau.to(A.dtype)
    rows = arange(m, device=A.device)
    q = eye(m, dtype=A.dtype, device=A.device).expand(*A.shape[:-2], m, m)
    for i in range(k):
        v = where(rows < i, 0.0, where(rows == i, 1.0, A[..., :, i])).unsqueeze(-1)
        q = q - (q @ v) * tau[..., i].unsqueeze(-1).unsqueeze(-1) @ v.mH
    return q[..., :, :n]


class _Eig(Function):
    @staticmethod
    def forward(ctx: Any, a: Tensor) -> tuple[Tensor, Tensor]:
        out_dt = _COMPLEX[a._dtype]
        w, v = _kernel(a._device, "linalg_eig")(a._data)
        cast = a._device._kernels["cast"]
        w, v = _wrap(cast(w, out_dt), out_dt, a._device), _wrap(cast(v, out_dt), out_dt, a._device)
        ctx.save_for_backward(w, v)
        ctx.real = not a._dtype.is_complex
        return w, v

    @staticmethod
    def backward(ctx: Any, gw: Tensor | None, gv: Tensor | None) -> Tensor:
        # PyTorch's formula: gA = V^-H (diag(gw) + (V^H gV - V^H V Re(diag(V^H gV))) / conj(L_j - L_i)) V^H.
        w, v = ctx.saved_tensors
        vh = v.mH
        inner = None
        if gv is not None:
            vhgv = vh @ gv
            inner = vhgv - (vh @ v) * vhgv.diagonal(0, -2, -1).real.unsqueeze(-2)
            diff = (w.unsqueeze(-2) - w.unsqueeze(-1)).conj()
            n = w.shape[-1]
            off = arange(n, device=w.device).unsqueeze(-1) != arange(n, device=w.device)
            inner = where(off, inner / where(off, diff, 1.0), 0.0)
        if gw is not None:
            d = gw.diag_embed()
            inner = d if inner is None else inner + d
        if inner is None:
            return None  # type: ignore[return-value]
        ga = _LINALG["solve"](vh, inner @ vh)
        return ga.real if ctx.real else ga


def eig(A: Tensor) -> EigResult:
    """``(eigenvalues, eigenvectors)`` of general square matrices, complex (eigenvectors of norm 1)."""
    check_rule("linalg.eig", A)
    _square("eig", A)
    if _half(A):
        return eig(A.to(float32))
    w, v = _Eig.apply(A)
    return EigResult(w, v)


def eigvals(A: Tensor) -> Tensor:
    """The eigenvalues of general square matrices, complex."""
    check_rule("linalg.eigvals", A)
    _square("eigvals", A)
    if _half(A):
        return eigvals(A.to(float32))
    return _Eig.apply(A)[0]


class _LDLFactor(Function):
    @staticmethod
    def forward(ctx: Any, a: Tensor, hermitian: bool) -> tuple[Tensor, Tensor, Tensor]:
        ld, piv, info = _kernel(a._device, "linalg_ldl_factor")(a._data, hermitian)
        return _wrap(ld, a._dtype, a._device), _wrap(piv, int32, a._device), _wrap(info, int32, a._device)

    @staticmethod
    def backward(ctx: Any, *grads: Any) -> Any:
        raise RuntimeError("the derivative for 'linalg.ldl_factor' is not implemented")


def ldl_factor_ex(A: Tensor, *, hermitian: bool = False, check_errors: bool = False) -> LDLFactorExResult:
    """``(LD, pivots, info)``: the Bunch-Kaufman factorization ``A = L D L^T`` (``L D L^H`` with ``hermitian``) of
    the lower triangle of symmetric matrices, in LAPACK's packed format; ``info`` the 1-based index of a zero
    diagonal element of ``D`` (0: none)."""
    check_rule("linalg.ldl_factor_ex", A)
    _square("ldl_factor_ex", A)
    if _half(A):
        return _back(ldl_factor_ex(A.to(float32), hermitian=hermitian, check_errors=check_errors), A.dtype)
    ld, piv, info = _LDLFactor.apply(A, hermitian)
    if check_errors:
        _raise_for("ldl_factor_ex", info, "D[{0},{0}] is zero: the matrix is singular.")
    return LDLFactorExResult(ld, piv, info)


def ldl_factor(A: Tensor, *, hermitian: bool = False) -> LDLFactorResult:
    """``(LD, pivots)`` of :func:`ldl_factor_ex`, raising ``LinAlgError`` where ``D`` is singular."""
    check_rule("linalg.ldl_factor", A)
    ld, piv, info = ldl_factor_ex(A, hermitian=hermitian)
    _raise_for("ldl_factor", info, "D[{0},{0}] is zero: the matrix is singular.")
    return LDLFactorResult(ld, piv)


class _LDLSolve(Function):
    @staticmethod
    def forward(ctx: Any, ld: Tensor, piv: Tensor, b: Tensor, hermitian: bool) -> Tensor:
        out = _kernel(ld._device, "linalg_ldl_solve")(ld._data, piv._data, b._data, hermitian)
        return _wrap(out, ld._dtype, ld._device)

    @staticmethod
    def backward(ctx: Any, g: Any) -> Any:
        raise RuntimeError("the derivative for 'linalg.ldl_solve' is not implemented")


def ldl_solve(LD: Tensor, pivots: Tensor, B: Tensor, *, hermitian: bool = False) -> Tensor:
    """The solution of ``A X = B`` from ``A``'s :func:`ldl_factor`."""
    check_rule("linalg.ldl_solve", LD, B)
    _square("ldl_solve", LD)
    if B.ndim < 2 or B.shape[-2] != LD.shape[-1]:
        raise ShapeError(f"linalg.ldl_solve: LD of shape {list(LD.shape)} and B of shape {list(B.shape)} do not "
                         "match (B must be a (batch of) matrices with as many rows as LD)")
    if _half(LD, B):
        return ldl_solve(LD.to(float32), pivots, B.to(float32), hermitian=hermitian).to(LD.dtype)
    from .shape import broadcast_shapes
    batch = tuple(broadcast_shapes(LD.shape[:-2], B.shape[:-2]))
    B = B.to(LD.dtype).expand(*batch, *B.shape[-2:])
    LD, pivots = LD.expand(*batch, *LD.shape[-2:]), pivots.expand(*batch, pivots.shape[-1])
    return _LDLSolve.apply(LD.contiguous(), pivots.contiguous(), B.contiguous(), hermitian)


_ROWS: list[tuple[str, Callable[..., Any], tuple[str, ...]]] = [
    ("inv_ex", inv_ex, ("linalg.lu_factor", "linalg.inv", "where")),
    ("solve_ex", solve_ex, ("linalg.lu_factor", "linalg.solve", "where")),
    ("cholesky_ex", cholesky_ex, ("linalg.cholesky", "where")),
    ("lu_factor_ex", lu_factor_ex, ("linalg.lu_factor",)),
    ("lu_solve", lu_solve, ("linalg.solve_triangular", "matmul")),
    ("householder_product", householder_product, ("matmul", "where", "sub")),
    ("eig", eig, ("linalg_eig",)), ("eigvals", eigvals, ("linalg_eig",)),  # the optional kernel (group linalg_eig)
    ("ldl_factor_ex", ldl_factor_ex, ("linalg_ldl_factor",)), ("ldl_factor", ldl_factor, ("linalg_ldl_factor",)),
    ("ldl_solve", ldl_solve, ("linalg_ldl_solve",)),
]
FUNCTIONS: dict[str, Callable[..., Any]] = register_composites(
    "linalg", [(n, reported_as(f"linalg.{n}", f), u) for n, f, u in _ROWS], dtype_rule="floating", prefix="linalg.")
