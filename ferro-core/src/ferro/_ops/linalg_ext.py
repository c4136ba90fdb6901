"""``ferro.linalg``: decompositions and solvers on the ``linalg_*`` kernels, with backward in ops.

Kernels (the Array API ``linalg`` extension in the generic backend):
``linalg_inv``, ``linalg_det``, ``linalg_slogdet``, ``linalg_solve``,
``linalg_cholesky``, ``linalg_qr``, ``linalg_eigh``, ``linalg_svd``,
``linalg_pinv``, ``linalg_lu_factor``. Gradients are the standard matrix-calculus results, written
with ferro ops so they work on any backend and twice. A device without these kernels runs them on
the CPU backend when ``FERRO_FALLBACK=cpu`` says so (:func:`_kernel`).
"""

from __future__ import annotations

import math
from collections import namedtuple
from collections.abc import Callable
from typing import Any

from .._core.device import device
from .._core.dtypes import bool_, complex64, complex128, float32, float64
from .._core.tensor import Tensor, _wrap
from ..autograd._function import Function
from ..dispatch._dispatch import fallback_enabled, kernel, reported_as, warn_fallback
from ..errors import LinAlgError, ShapeError, UnsupportedOperationError
from ._rules import register_ruled

__all__ = ["FUNCTIONS"]

SlogdetResult = namedtuple("SlogdetResult", ["sign", "logabsdet"])
EighResult = namedtuple("EighResult", ["eigenvalues", "eigenvectors"])
SVDResult = namedtuple("SVDResult", ["U", "S", "Vh"])
QRResult = namedtuple("QRResult", ["Q", "R"])
_REAL = {complex64: float32, complex128: float64}
LUFactorResult = namedtuple("LUFactorResult", ["LU", "pivots"])
LUResult = namedtuple("LUResult", ["P", "L", "U"])


def _square(op: str, a: Tensor) -> None:
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ShapeError(f"linalg.{op}: expected a (batch of) square matrices, got shape {list(a.shape)}")


def _kernel(dev: Any, name: str) -> Callable[..., Any]:
    """Kernel ``name`` of ``dev``. Where the device has none (OpenCL's decompositions) and ``FERRO_FALLBACK=cpu``
    is set, the CPU backend's, run on host copies of the native arrays with the results copied back, after a
    warning; otherwise the ``UnsupportedOperationError`` that names the backends that have it. The linalg
    kernels write nothing in place, so running them on copies is safe; gradients stay on ``dev`` (the
    backward formulas are ferro ops)."""
    try:
        return kernel(dev, name)
    except UnsupportedOperationError:
        if dev.type == "cpu" or not fallback_enabled():
            raise
    cpu = device("cpu")
    host_kernel, here, there = kernel(cpu, name), dev.backend, cpu.backend

    def on_the_cpu(*args: Any) -> Any:
        warn_fallback(name, dev)
        native = type(args[0])  # the first argument is always an array: the rest of its type are too
        out = host_kernel(*(there.from_numpy(here.to_numpy(x), 0) if type(x) is native else x for x in args))
        if isinstance(out, tuple):
            return tuple(here.from_numpy(there.to_numpy(o), dev.index) for o in out)
        return here.from_numpy(there.to_numpy(out), dev.index)
    return on_the_cpu


def _call(name: str, a: Tensor, *args: Any, real: tuple[int, ...] = ()) -> Any:
    """Run kernel ``name`` on ``a``; outputs at the positions ``real`` (eigenvalues, singular values) have
    ``a``'s real dtype."""
    try:
        out = _kernel(a._device, name)(a._data, *args)
    except Exception as e:
        if type(e).__name__ != "LinAlgError":  # NumPy's or CuPy's: the backend's own type, ferro's for the user
            raise
        raise LinAlgError(str(e)) from None
    if isinstance(out, tuple):
        real_dt = _REAL.get(a._dtype, a._dtype)
        return tuple(_wrap(o, real_dt if i in real else a._dtype, a._device) for i, o in enumerate(out))
    return _wrap(out, a._dtype, a._device)


class _Inv(Function):
    @staticmethod
    def forward(ctx: Any, a: Tensor) -> Tensor:
        out = _call("linalg_inv", a)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        (inv_a,) = ctx.saved_tensors
        return -(inv_a.mH @ g @ inv_a.mH)  # mH: conjugate transposes for complex (mT for real)


def inv(a: Tensor) -> Tensor:
    """The inverse of a (batch of) square matrices."""
    _square("inv", a)
    return _Inv.apply(a)


class _Slogdet(Function):
    @staticmethod
    def forward(ctx: Any, a: Tensor) -> Tensor:
        sign, logabs = _call("linalg_slogdet", a)
        if a.dtype.is_complex:  # log|det| is real: its real dtype
            logabs = _wrap(logabs._data, _real_dtype(a), a._device)
        ctx.save_for_backward(a)
        ctx.sign = sign
        return logabs

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        (a,) = ctx.saved_tensors
        return g.unsqueeze(-1).unsqueeze(-1) * inv(a).mH


def slogdet(a: Tensor) -> SlogdetResult:
    """``(sign, log|det|)`` of square matrices; the log is differentiable."""
    _square("slogdet", a)
    logabs = _Slogdet.apply(a)
    sign = _call("linalg_slogdet", a.detach())[0]
    return SlogdetResult(sign, logabs)


def _real_dtype(a: Tensor) -> Any:
    from .._core.dtypes import complex64, float32, float64
    return float32 if a.dtype is complex64 else float64


class _ComplexDet(Function):
    """det of complex matrices: its phase moves with ``a`` too, so the gradient is ``conj(g det) a^-H``."""

    @staticmethod
    def forward(ctx: Any, a: Tensor) -> Tensor:
        sign, logabs = _call("linalg_slogdet", a)
        out = sign * _wrap(logabs._data, _real_dtype(a), a._device).exp()
        ctx.save_for_backward(a, out)
        return out

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        a, out = ctx.saved_tensors
        return (g * out.conj()).unsqueeze(-1).unsqueeze(-1) * inv(a).mH


def det(a: Tensor) -> Tensor:
    """The determinant: ``sign * exp(log|det|)``, differentiable where the matrix is invertible."""
    if isinstance(a, Tensor) and a.dtype.is_complex:
        _square("det", a)
        return _ComplexDet.apply(a)
    sign, logabs = slogdet(a)
    return sign * logabs.exp()


class _Solve(Function):
    @staticmethod
    def forward(ctx: Any, a: Tensor, b: Tensor) -> Tensor:
        out = _wrap(_kernel(a._device, "linalg_solve")(a._data, b._data), a._dtype, a._device)
        ctx.save_for_backward(a, out)
        return out

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple[Tensor, Tensor]:
        a, x = ctx.saved_tensors
        gb = solve(a.mH, g)
        return -(gb @ x.mH), gb


def solve(a: Tensor, b: Tensor) -> Tensor:
    """``x`` with ``a @ x == b`` (``b`` a vector or a matrix of right-hand sides)."""
    _square("solve", a)
    if b.dtype is not a.dtype:
        b = b.to(a.dtype)
    from .shape import broadcast_shapes
    vector = b.ndim == 1 or (b.ndim == a.ndim - 1 and tuple(b.shape) == tuple(a.shape[:-1]))  # as PyTorch reads b
    if vector:
        b = b.unsqueeze(-1)
    if b.ndim < 2 or b.shape[-2] != a.shape[-1]:
        raise ShapeError(f"linalg.solve: a of shape {list(a.shape)} and b of shape {list(b.shape)} do not match")
    batch = tuple(broadcast_shapes(a.shape[:-2], b.shape[:-2]))
    if tuple(a.shape[:-2]) != batch:
        a = a.expand(*batch, *a.shape[-2:])
    if tuple(b.shape[:-2]) != batch:
        b = b.expand(*batch, *b.shape[-2:])
    x = _Solve.apply(a, b)
    return x.squeeze(-1) if vector else x


class _Cholesky(Function):
    @staticmethod
    def forward(ctx: Any, a: Tensor) -> Tensor:
        out = _call("linalg_cholesky", a)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        # PyTorch's formula, for real and complex alike: with X = tril(L^H g),
        # dA = L^-H (X + tril(X, -1)^H) / 2 L^-1. For real inputs it is the symmetric
        # L^-T Phi(L^T g) L^-1 (Phi: the lower triangle, its diagonal halved) symmetrized; for complex
        # ones it keeps the diagonal's imaginary part, as PyTorch does.
        (low,) = ctx.saved_tensors
        x = (low.mH @ g).tril()
        li = inv(low)
        return li.mH @ (0.5 * (x + x.tril(-1).mH)) @ li


def cholesky(a: Tensor, *, upper: bool = False) -> Tensor:
    """The Cholesky factor of symmetric positive-definite matrices (lower, or upper with ``upper``)."""
    _square("cholesky", a)
    low = _Cholesky.apply(a)
    return low.mH if upper else low


class _Eigh(Function):
    @staticmethod
    def forward(ctx: Any, a: Tensor) -> tuple[Tensor, Tensor]:
        w, v = _call("linalg_eigh", a, real=(0,))
        ctx.save_for_backward(w, v)
        return w

    @staticmethod
    def backward(ctx: Any, gw: Tensor) -> Tensor:
        _, v = ctx.saved_tensors
        return (v * gw.unsqueeze(-2)) @ v.mH


def eigvalsh(a: Tensor) -> Tensor:
    """Eigenvalues (ascending) of symmetric matrices, differentiable."""
    _square("eigvalsh", a)
    return _Eigh.apply(a)


def _off_diagonal_inverse(d: Tensor) -> Tensor:
    """``1 / d`` off the diagonal of the last two dims, 0 on it (``d`` is 0 there)."""
    from .elementwise import where
    eye = _eye_like(d).to(dtype=bool_)
    return where(eye, 0.0, 1 / where(eye, 1.0, d))


def _eye_like(x: Tensor) -> Tensor:
    from .._creation import eye
    return eye(x.shape[-1], dtype=x.dtype, device=x.device)


class _EighFull(Function):
    @staticmethod
    def forward(ctx: Any, a: Tensor) -> tuple[Tensor, Tensor]:
        w, v = _call("linalg_eigh", a, real=(0,))
        ctx.save_for_backward(w, v)
        return w, v

    @staticmethod
    def backward(ctx: Any, gw: Tensor, gv: Tensor) -> Tensor:
        # gA = V (diag(gw) + F o skew(V^H gV)) V^H, F_ij = 1 / (w_j - w_i) off the diagonal, skew(X) = (X - X^H) / 2
        # (PyTorch's projection for Hermitian input). Degenerate eigenvalues give inf, as in PyTorch.
        w, v = ctx.saved_tensors
        f = _off_diagonal_inverse(w.unsqueeze(-2) - w.unsqueeze(-1))
        x = v.mH @ gv
        inner = f * ((x - x.mH) * 0.5) + gw.diag_embed()
        return v @ inner @ v.mH


def eigh(a: Tensor) -> EighResult:
    """Eigenvalues (ascending) and eigenvectors of symmetric matrices, both differentiable."""
    _square("eigh", a)
    w, v = _EighFull.apply(a)
    return EighResult(w, v)


class _Svdvals(Function):
    @staticmethod
    def forward(ctx: Any, a: Tensor) -> Tensor:
        u, s, vh = _call("linalg_svd", a, False, real=(1,))
        ctx.save_for_backward(u, vh)
        return s

    @staticmethod
    def backward(ctx: Any, gs: Tensor) -> Tensor:
        u, vh = ctx.saved_tensors
        return (u * gs.unsqueeze(-2)) @ vh


def svdvals(a: Tensor) -> Tensor:
    """Singular values (descending), differentiable."""
    if a.ndim < 2:
        raise ShapeError(f"linalg.svdvals: expected matrices, got shape {list(a.shape)}")
    return _Svdvals.apply(a)


class _Svd(Function):
    @staticmethod
    def forward(ctx: Any, a: Tensor, full_matrices: bool) -> tuple[Tensor, Tensor, Tensor]:
        u, s, vh = _call("linalg_svd", a, full_matrices, real=(1,))
        ctx.save_for_backward(u, s, vh)
        ctx.shape = tuple(a.shape[-2:])
        return u, s, vh

    @staticmethod
    def backward(ctx: Any, gu: Tensor, gs: Tensor, gvh: Tensor) -> tuple[Tensor, None]:
        # Townsend's formula for the reduced SVD a = U diag(S) V^T (k = min(m, n)), F_ij = 1 / (s_j^2 - s_i^2):
        # gA = U [(F o (U^T gU - gU^T U)) S + diag(gS) + S (F o (V^T gV - gV^T V))] V^T
        #      + (I - U U^T) gU S^-1 V^T + U S^-1 gV^T (I - V V^T).
        u, s, vh = ctx.saved_tensors
        m, n = ctx.shape
        k = min(m, n)
        if u.shape[-1] != k or vh.shape[-2] != k:
            raise RuntimeError("linalg.svd: the derivative of U and Vh is not implemented for full_matrices=True "
                               "with a non-square input; use full_matrices=False")
        v, gv = vh.mH, gvh.mH
        f = _off_diagonal_inverse(s.unsqueeze(-2) ** 2 - s.unsqueeze(-1) ** 2)
        utgu, vtgv = u.mH @ gu, v.mH @ gv
        sm = s.unsqueeze(-2)  # S as a row: X * sm is X @ diag(S)
        inner = (f * (utgu - utgu.mH)) * sm + s.unsqueeze(-1) * (f * (vtgv - vtgv.mH)) + gs.diag_embed()
        if u.dtype.is_complex:  # the phase of each singular pair (PyTorch's term): i Im(diag(U^H gU)) / S
            inner = inner + (utgu.diagonal(0, -2, -1).imag / s).diag_embed() * 1j
        ga = u @ inner @ vh
        inv_s = 1 / sm
        if m > k:
            ga = ga + (gu - u @ utgu) * inv_s @ vh
        if n > k:
            ga = ga + (u * inv_s) @ (gv.mH - gv.mH @ v @ vh)
        return ga, None


def svd(a: Tensor, full_matrices: bool = True) -> SVDResult:
    """``U, S, Vh`` with ``a = U @ diag(S) @ Vh``, differentiable (U and Vh only with ``full_matrices=False``
    or a square input: otherwise their extra columns are not unique)."""
    if a.ndim < 2:
        raise ShapeError(f"linalg.svd: expected matrices, got shape {list(a.shape)}")
    if full_matrices and a.shape[-1] != a.shape[-2]:  # S differentiable; U, Vh refuse a gradient at backward
        u, _, vh = _Svd.apply(a, True)
        return SVDResult(u, svdvals(a), vh)
    u, s, vh = _Svd.apply(a, full_matrices)
    return SVDResult(u, s, vh)


class _Qr(Function):
    @staticmethod
    def forward(ctx: Any, a: Tensor, mode: str) -> tuple[Tensor, Tensor]:
        q, r = _call("linalg_qr", a, mode)
        ctx.save_for_backward(q, r)
        return q, r

    @staticmethod
    def backward(ctx: Any, gq: Tensor, gr: Tensor) -> tuple[Tensor, None]:
        # m >= n, reduced: gA = (gQ + Q copyltu(M)) R^-H with M = R gR^H - gQ^H Q.
        q, r = ctx.saved_tensors
        if q.shape[-1] != r.shape[-2] or r.shape[-2] != r.shape[-1]:
            raise RuntimeError("linalg.qr: the derivative is implemented for inputs with at least as many rows as "
                               "columns in mode='reduced' (a square R)")
        mm = r @ gr.mH - gq.mH @ q
        low = mm.tril(-1)
        # copyltu(M): the strict lower triangle mirrored, and the real part of the diagonal (R's diagonal is real)
        b = gq + q @ (low + low.mH + mm.diagonal(0, -2, -1).real.diag_embed())
        return solve(r, b.mH).mH, None


def qr(a: Tensor, mode: str = "reduced") -> QRResult:
    """``Q, R`` with ``a = Q @ R``; differentiable for at least as many rows as columns (mode 'reduced')."""
    if a.ndim < 2:
        raise ShapeError(f"linalg.qr: expected matrices, got shape {list(a.shape)}")
    q, r = _Qr.apply(a, mode)
    return QRResult(q, r)


class _Pinv(Function):
    @staticmethod
    def forward(ctx: Any, a: Tensor) -> Tensor:
        p = _call("linalg_pinv", a)
        ctx.save_for_backward(a, p)
        return p

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> Tensor:
        # PyTorch's pinv_backward (constant rank), arranged for the smaller of m, n.
        a, p = ctx.saved_tensors
        ph, gh = p.mH, g.mH
        if a.shape[-2] <= a.shape[-1]:
            k = gh @ p
            kph = k @ ph
            return -(p @ k).mH + kph - (a @ p) @ kph + (ph @ p) @ (gh - k @ a)
        k = p @ gh
        phk = ph @ k
        return -(k @ p).mH + (gh - a @ k) @ p @ ph + phk - phk @ p @ a


def pinv(a: Tensor) -> Tensor:
    """The Moore-Penrose pseudo-inverse, differentiable where the rank is constant."""
    return _Pinv.apply(a)


class _LUFactor(Function):
    @staticmethod
    def forward(ctx: Any, a: Tensor) -> tuple[Tensor, Tensor]:
        from .._core.dtypes import int32
        lu, piv = _kernel(a._device, "linalg_lu_factor")(a._data)
        out = _wrap(lu, a._dtype, a._device)
        ctx.save_for_backward(out)
        ctx.pivots = piv = _wrap(piv, int32, a._device)
        return out, piv

    @staticmethod
    def backward(ctx: Any, g: Tensor, _: Any) -> Tensor:
        # A = P L U (square): gA = P L^-T [tril(L^T gL, -1) + triu(gU U^T)] U^-T, gL and gU the strict lower
        # and upper parts of the gradient of the packed LU (PyTorch's linalg_lu_backward).
        (lu,) = ctx.saved_tensors
        if lu.shape[-1] != lu.shape[-2]:
            raise RuntimeError("linalg.lu_factor: the derivative is implemented for square matrices only")
        eye = _eye_like(lu)
        low, up = lu.tril(-1) + eye, lu.triu()
        phi = (low.mH @ g.tril(-1)).tril(-1) + (g.triu() @ up.mH).triu()
        x = solve(up, solve(low.mH, phi).mH).mH
        return _permutation(ctx.pivots, lu.shape[-2], lu) @ x


def _permutation(pivots: Tensor, m: int, like: Tensor) -> Tensor:
    """The permutation matrices ``P`` of LAPACK row-swap ``pivots`` (1-based), with ``A = P @ L @ U``."""
    import numpy as np

    from .._creation import tensor
    piv = np.asarray(pivots.tolist(), dtype=np.int64).reshape(-1, pivots.shape[-1]) - 1
    perm = np.tile(np.arange(m), (piv.shape[0], 1))
    rows = np.arange(piv.shape[0])
    for i in range(piv.shape[1]):
        a, b = perm[rows, i].copy(), perm[rows, piv[:, i]].copy()
        perm[rows, i], perm[rows, piv[:, i]] = b, a
    p = np.zeros((piv.shape[0], m, m))
    p[rows[:, None], perm, np.arange(m)[None, :]] = 1.0  # column i of P is the unit vector at perm[i]
    return tensor(p.reshape(*pivots.shape[:-1], m, m), dtype=like.dtype, device=like.device)


def lu_factor(a: Tensor, *, pivot: bool = True) -> LUFactorResult:
    """``LU, pivots`` of LAPACK's ``getrf``: ``LU`` packs the unit-lower ``L`` and ``U``; ``pivots`` (int32,
    1-based) the row swaps. Raises for a singular matrix, as PyTorch does (use :func:`lu` then)."""
    lu, piv = _lu_factor(a, pivot)
    k = min(a.shape[-2], a.shape[-1])
    if a.shape[-1] == a.shape[-2] and bool((lu.detach().diagonal(0, -2, -1)[..., :k] == 0).any()):
        raise RuntimeError("linalg.lu_factor: the factorization of a singular matrix has a zero on U's diagonal "
                           "and lu_solve would divide by it; use ferro.linalg.lu(A) for singular matrices")
    return LUFactorResult(lu, piv)


def _lu_factor(a: Tensor, pivot: bool) -> tuple[Tensor, Tensor]:
    if a.ndim < 2:
        raise ShapeError(f"linalg.lu_factor: expected matrices, got shape {list(a.shape)}")
    if not (a.dtype.is_floating_point or a.dtype.is_complex):
        from ..errors import DTypeError
        raise DTypeError(f"linalg.lu_factor: expected a floating or complex dtype, got {a.dtype}")
    if not pivot:
        raise NotImplementedError("linalg.lu_factor: LU without pivoting is not implemented (pivot=False)")
    return _LUFactor.apply(a)


def lu(a: Tensor, *, pivot: bool = True) -> LUResult:
    """``P, L, U`` with ``a = P @ L @ U`` (``L`` unit lower, ``U`` upper), for singular matrices too."""
    packed, piv = _lu_factor(a, pivot)
    m, n = a.shape[-2], a.shape[-1]
    k = min(m, n)
    from .._creation import eye
    low = packed[..., :, :k].tril(-1) + eye(m, k, dtype=a.dtype, device=a.device)
    return LUResult(_permutation(piv, m, packed), low, packed[..., :k, :].triu())


def lstsq(a: Tensor, b: Tensor) -> Any:
    """Least-squares solution of ``a @ x = b`` for full-column-rank ``a`` (normal equations), differentiable."""
    x = solve(a.mH @ a, a.mH @ b)
    result = namedtuple("LstsqResult", ["solution"])
    return result(x)


def vector_norm(x: Tensor, ord: Any = 2, dim: Any = None, keepdim: bool = False) -> Tensor:
    """Vector ``ord``-norm over ``dim`` (all elements by default)."""
    from .sorting import norm
    return norm(x, ord if ord != 2 else "fro", dim, keepdim)


def matrix_norm(x: Tensor, ord: Any = "fro", dim: tuple[int, int] = (-2, -1), keepdim: bool = False) -> Tensor:
    """Matrix norm: ``fro``, ``nuc``, 1, -1, 2, -2, inf, -inf over the two ``dim``."""
    d0, d1 = dim
    if ord == "fro":
        from .sorting import norm
        return norm(x, "fro", dim, keepdim)  # 16-bit floats accumulate in float32 there
    if ord in ("nuc", 2, -2):
        s = svdvals(x.movedim((d0, d1), (-2, -1)))
        out = s.sum(-1) if ord == "nuc" else (s.amax(-1) if ord == 2 else s.amin(-1))
        if keepdim:  # the two dims back at their places, as size 1
            for d in sorted((d0 % x.ndim, d1 % x.ndim)):
                out = out.unsqueeze(d)
        return out
    if ord in (1, -1, math.inf, -math.inf):
        along = d0 if ord in (1, -1) else d1
        sums = x.abs().sum(along, keepdim=True)
        other = d1 if ord in (1, -1) else d0
        out = sums.amax(other, keepdim=True) if ord in (1, math.inf) else sums.amin(other, keepdim=True)
        if keepdim:
            return out
        return out.reshape([s for i, s in enumerate(out.shape) if i not in (d0 % x.ndim, d1 % x.ndim)])
    raise ValueError(f"linalg.matrix_norm: unsupported ord {ord!r}")


def cross(a: Tensor, b: Tensor, dim: int = -1) -> Tensor:
    """Cross product of 3-vectors along ``dim``."""
    if a.shape[dim] != 3 or b.shape[dim] != 3:
        raise ShapeError(f"linalg.cross: dimension {dim} must have size 3, got {list(a.shape)} and {list(b.shape)}")
    a0, a1, a2 = a.unbind(dim)
    b0, b1, b2 = b.unbind(dim)
    from .shape import stack
    return stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], dim)


def cdist(x1: Tensor, x2: Tensor, p: float = 2.0) -> Tensor:
    """Pairwise ``p``-norm distances between the rows of ``x1`` (.., P, M) and ``x2`` (.., R, M)."""
    diff = x1.unsqueeze(-2) - x2.unsqueeze(-3)
    from .sorting import norm
    return norm(diff, p if p != 2 else "fro", dim=-1)


_ROWS: list[tuple[str, Callable[..., Any]]] = [
    ("inv", inv), ("det", det), ("slogdet", slogdet), ("solve", solve), ("cholesky", cholesky), ("eigh", eigh),
    ("eigvalsh", eigvalsh), ("svd", svd), ("svdvals", svdvals), ("qr", qr), ("pinv", pinv),
    ("lu_factor", lu_factor), ("lu", lu), ("lstsq", lstsq),
    ("vector_norm", vector_norm), ("matrix_norm", matrix_norm), ("cross", cross), ("cdist", cdist),
]
#: The ops that call a factorization kernel (``linalg_*``, the contract's optional group "linalg").
_FACTORIZING = frozenset({"inv", "det", "slogdet", "solve", "cholesky", "eigh", "eigvalsh", "svd", "svdvals", "qr",
                          "pinv", "lu_factor", "lu", "lstsq"})


#: The dtype rules, PyTorch CPU's: the factorizations take LAPACK's dtypes (not float16 or bfloat16), the
#: norms any floating or complex dtype, cross any number, cdist real float32 and float64.
_RULES = {**dict.fromkeys(_FACTORIZING, "lapack"), "vector_norm": "floating", "matrix_norm": "floating",
          "cross": "numeric", "cdist": "real_lapack"}

# a factorization kernel the backend lacks (the optional group "linalg") is reported under the op called
_ROWS = [(n, reported_as(f"linalg.{n}", f) if n in _FACTORIZING else f) for n, f in _ROWS]
FUNCTIONS = register_ruled("linalg", _ROWS, _RULES, prefix="linalg.")
