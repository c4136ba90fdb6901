"""PyTorch's top-level forms of nn and linalg functions, with their ATen signatures.

``torch.batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled)``,
``torch.embedding(weight, indices)``, ``torch.kl_div(input, target, reduction=1)``: the top level of PyTorch
exposes its C++ operators, whose argument order and integer ``reduction`` (0 none, 1 mean, 2 sum) differ
from ``nn.functional``'s. The older linalg forms (``torch.svd`` returning V, ``torch.qr(some=True)``,
``torch.cholesky(upper=False)``, ``torch.lu`` / ``lu_unpack`` / ``lu_solve``, ``torch.triangular_solve``...)
and the RNN entry points (``torch.lstm_cell``, ``torch.gru``...) are here too. Each is written in the
``nn.functional`` / ``linalg`` function it is, so it runs on every backend with its gradient.

>>> import ferro
>>> a = ferro.tensor([[4.0, 2.0], [2.0, 3.0]])
>>> u, s, v = ferro.svd(a)
>>> bool(((u * s) @ v.mT - a).abs().max() < 1e-5)
True
"""

from __future__ import annotations

import builtins
from collections import namedtuple
from collections.abc import Callable, Sequence
from typing import Any

from ._api import Tensor, arange, cat, eye, fft, finfo, linalg, no_grad, ones, stack, view_as_real, where, zeros
from .errors import ShapeError
from .nn import functional as F  # noqa: N812 - the name PyTorch code uses

__all__ = ["FUNCTIONS", "METHODS", "install"]

_REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}

SVDResult = namedtuple("SVDResult", ["U", "S", "V"])
QRResult = namedtuple("QRResult", ["Q", "R"])
LUUnpackResult = namedtuple("LUUnpackResult", ["P", "L", "U"])
TriangularSolveResult = namedtuple("TriangularSolveResult", ["solution", "cloned_coefficient"])
GeqrfResult = namedtuple("GeqrfResult", ["a", "tau"])


def _reduction(name: str, reduction: Any) -> str:
    """ATen's integer reduction as nn.functional's word (a word passes through)."""
    if isinstance(reduction, str):
        return reduction
    if reduction not in _REDUCTIONS:
        raise ValueError(f"{name}(): reduction must be 0 (none), 1 (mean) or 2 (sum), got {reduction!r}")
    return _REDUCTIONS[reduction]


# -- nn ------------------------------------------------------------------------------------------------------------


def batch_norm(input: Tensor, weight: Tensor | None, bias: Tensor | None, running_mean: Tensor | None,
               running_var: Tensor | None, training: bool, momentum: float, eps: float,
               cudnn_enabled: bool = True) -> Tensor:
    """``nn.functional.batch_norm`` with ATen's argument order (``cudnn_enabled`` is a hint ferro ignores)."""
    return F.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def instance_norm(input: Tensor, weight: Tensor | None, bias: Tensor | None, running_mean: Tensor | None,
                  running_var: Tensor | None, use_input_stats: bool, momentum: float, eps: float,
                  cudnn_enabled: bool = True) -> Tensor:
    """``nn.functional.instance_norm`` with ATen's argument order."""
    return F.instance_norm(input, running_mean, running_var, weight, bias, use_input_stats, momentum, eps)


def embedding(weight: Tensor, indices: Tensor, padding_idx: int = -1, scale_grad_by_freq: bool = False,
              sparse: bool = False) -> Tensor:
    """The rows ``indices`` of ``weight`` (``nn.functional.embedding`` with the weight first; a negative
    ``padding_idx`` means none)."""
    if scale_grad_by_freq or sparse:
        raise ValueError("embedding(): scale_grad_by_freq and sparse gradients are not supported by ferro; use "
                         "the defaults (False)")
    return F.embedding(indices, weight, padding_idx if padding_idx >= 0 else None)


def embedding_renorm_(weight: Tensor, indices: Tensor, max_norm: float, norm_type: float) -> Tensor:
    """Scale the rows ``indices`` of ``weight`` whose ``norm_type``-norm exceeds ``max_norm`` down to it, in
    place and outside autograd; returns ``weight``."""
    with no_grad():
        rows = indices.reshape(-1).unique()
        picked = weight[rows]
        norms = picked.norm(norm_type, dim=1, keepdim=True)
        weight[rows] = picked * where(norms > max_norm, max_norm / (norms + 1e-7), 1.0)
    return weight


def binary_cross_entropy_with_logits(input: Tensor, target: Tensor, weight: Tensor | None = None,
                                     pos_weight: Tensor | None = None, reduction: Any = 1) -> Tensor:
    """``nn.functional.binary_cross_entropy_with_logits``, the reduction an integer."""
    return F.binary_cross_entropy_with_logits(input, target, weight, _reduction("binary_cross_entropy_with_logits",
                                                                                 reduction), pos_weight)


def cosine_embedding_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                          reduction: Any = 1) -> Tensor:
    """``nn.functional.cosine_embedding_loss``, the reduction an integer."""
    return F.cosine_embedding_loss(input1, input2, target, margin, _reduction("cosine_embedding_loss", reduction))


def hinge_embedding_loss(input: Tensor, target: Tensor, margin: float = 1.0, reduction: Any = 1) -> Tensor:
    """``nn.functional.hinge_embedding_loss``, the reduction an integer."""
    return F.hinge_embedding_loss(input, target, margin, reduction=_reduction("hinge_embedding_loss", reduction))


def kl_div(input: Tensor, target: Tensor, reduction: Any = 1, *, log_target: bool = False) -> Tensor:
    """``nn.functional.kl_div``, the reduction an integer."""
    return F.kl_div(input, target, _reduction("kl_div", reduction), log_target)


def margin_ranking_loss(input1: Tensor, input2: Tensor, target: Tensor, margin: float = 0.0,
                        reduction: Any = 1) -> Tensor:
    """``nn.functional.margin_ranking_loss``, the reduction an integer."""
    return F.margin_ranking_loss(input1, input2, target, margin, _reduction("margin_ranking_loss", reduction))


def poisson_nll_loss(input: Tensor, target: Tensor, log_input: bool, full: bool, eps: float,
                     reduction: Any) -> Tensor:
    """``nn.functional.poisson_nll_loss``, every argument positional, the reduction an integer."""
    return F.poisson_nll_loss(input, target, log_input, full, eps=eps,
                              reduction=_reduction("poisson_nll_loss", reduction))


def triplet_margin_loss(anchor: Tensor, positive: Tensor, negative: Tensor, margin: float = 1.0, p: float = 2.0,
                        eps: float = 1e-6, swap: bool = False, reduction: Any = 1) -> Tensor:
    """``nn.functional.triplet_margin_loss``, the reduction an integer."""
    return F.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap,
                                 reduction=_reduction("triplet_margin_loss", reduction))


def adaptive_max_pool1d(input: Tensor, output_size: Any) -> tuple[Tensor, Tensor]:
    """``(values, indices)`` of ``nn.functional.adaptive_max_pool1d``."""
    return F.adaptive_max_pool1d(input, output_size, return_indices=True)


def max_pool1d_with_indices(input: Tensor, kernel_size: Any, stride: Any = (), padding: Any = 0, dilation: Any = 1,
                            ceil_mode: bool = False) -> tuple[Tensor, Tensor]:
    """``(values, indices)`` of ``nn.functional.max_pool1d``."""
    return F.max_pool1d(input, kernel_size, stride or None, padding, dilation, ceil_mode, return_indices=True)


def constant_pad_nd(input: Tensor, pad: Sequence[int], value: float = 0) -> Tensor:
    """``input`` padded with ``value`` (``pad`` as ``nn.functional.pad`` reads it; negative entries crop)."""
    return F.pad(input, list(pad), "constant", value)


def convolution(input: Tensor, weight: Tensor, bias: Tensor | None, stride: Any, padding: Any, dilation: Any,
                transposed: bool, output_padding: Any, groups: int) -> Tensor:
    """The convolution (or transposed convolution) of as many spatial dimensions as ``weight`` has."""
    n = weight.ndim - 2
    if n not in (1, 2, 3):
        raise ShapeError(f"convolution(): expected a weight of 3, 4 or 5 dimensions, got shape {list(weight.shape)}")
    if not transposed:
        return getattr(F, f"conv{n}d")(input, weight, bias, stride, padding, dilation, groups)
    fn = getattr(F, f"conv_transpose{n}d", None)
    if fn is None:
        raise NotImplementedError(f"convolution(): transposed convolution in {n} dimensions needs "
                                  f"nn.functional.conv_transpose{n}d, which this ferro lacks")
    return fn(input, weight, bias, stride, padding, output_padding, groups, dilation)


def conv_tbc(input: Tensor, weight: Tensor, bias: Tensor, pad: int = 0) -> Tensor:
    """A 1-d convolution in the (time, batch, channels) layout: ``weight`` is (width, in, out)."""
    if input.ndim != 3 or weight.ndim != 3:
        raise ShapeError(f"conv_tbc(): expected a 3-D input and weight, got shapes {list(input.shape)} and "
                         f"{list(weight.shape)}")
    out = F.conv1d(input.permute(1, 2, 0), weight.permute(2, 1, 0), bias, 1, pad)
    return out.permute(2, 0, 1)


def _drop(name: str, fn: Callable[..., Tensor]) -> Callable[..., Tensor]:
    def op(input: Tensor, p: float, train: bool) -> Tensor:
        return fn(input, p, train)
    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"``{name}(input, p, train)``: ATen's positional form of the nn.functional dropout."
    return op


def _drop_(name: str, fn: Callable[..., Tensor]) -> Callable[..., Tensor]:
    def op(input: Tensor, p: float, train: bool) -> Tensor:
        return input.copy_(fn(input, p, train)) if train else input
    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"``{name}(input, p, train)``: the dropout written into ``input``; returns it."
    return op


def feature_dropout(input: Tensor, p: float, train: bool) -> Tensor:
    """Zero whole channels (dimension 1) with probability ``p``, the rest scaled by ``1 / (1 - p)``."""
    if not 0 <= p <= 1:
        raise ValueError(f"feature_dropout(): dropout probability has to be between 0 and 1, but got {p}")
    if not train or p == 0:
        return input
    if p == 1:
        return input * 0
    mask = (input.new_empty((*input.shape[:2], *([1] * (input.ndim - 2)))).uniform_() >= p).to(input.dtype)
    return input * mask / (1 - p)


def rrelu(input: Tensor, lower: float = 1 / 8, upper: float = 1 / 3, training: bool = False,
          generator: Any = None) -> Tensor:
    """``nn.functional.rrelu`` with ATen's arguments."""
    return F.rrelu(input, lower, upper, training)


def rrelu_(input: Tensor, lower: float = 1 / 8, upper: float = 1 / 3, training: bool = False,
           generator: Any = None) -> Tensor:
    """``nn.functional.rrelu_`` with ATen's arguments."""
    return F.rrelu_(input, lower, upper, training)


def norm_except_dim(v: Tensor, pow: float = 2, dim: int = 0) -> Tensor:
    """The ``pow``-norm of ``v`` over every dimension but ``dim`` (``dim=-1``: over all), shaped to broadcast
    against ``v`` (weight normalization's ``||v||``)."""
    if dim == -1:
        return v.norm(pow)
    others = [i for i in range(v.ndim) if i != dim]
    return v.abs().pow(pow).sum(others, keepdim=True).pow(1 / pow) if others else v.abs()


def _linear(x: Tensor, w: Tensor, b: Tensor | None) -> Tensor:
    return x @ w.mT if b is None else x @ w.mT + b


def lstm_cell(input: Tensor, hx: Sequence[Tensor], w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None = None,
              b_hh: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """One LSTM step: ``(h', c')`` from ``input`` and ``hx = (h, c)`` (gates in the order i, f, g, o)."""
    h, c = hx
    i, f, g, o = (_linear(input, w_ih, b_ih) + _linear(h, w_hh, b_hh)).chunk(4, -1)
    c2 = f.sigmoid() * c + i.sigmoid() * g.tanh()
    return o.sigmoid() * c2.tanh(), c2


def gru_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None = None,
             b_hh: Tensor | None = None) -> Tensor:
    """One GRU step (gates in the order r, z, n)."""
    ir, iz, in_ = _linear(input, w_ih, b_ih).chunk(3, -1)
    hr, hz, hn = _linear(hx, w_hh, b_hh).chunk(3, -1)
    r, z = (ir + hr).sigmoid(), (iz + hz).sigmoid()
    n = (in_ + r * hn).tanh()
    return (1 - z) * n + z * hx


def rnn_tanh_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None = None,
                  b_hh: Tensor | None = None) -> Tensor:
    """One Elman RNN step with tanh."""
    return (_linear(input, w_ih, b_ih) + _linear(hx, w_hh, b_hh)).tanh()


def rnn_relu_cell(input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None = None,
                  b_hh: Tensor | None = None) -> Tensor:
    """One Elman RNN step with ReLU."""
    return (_linear(input, w_ih, b_ih) + _linear(hx, w_hh, b_hh)).relu()


def _rnn(name: str, cell: Callable[..., Any], input: Tensor, hx: Any, params: Sequence[Tensor], has_biases: bool,
         num_layers: int, dropout: float, train: bool, bidirectional: bool, batch_first: bool) -> tuple[Any, ...]:
    """The multi-layer (bidirectional) loop of ATen's ``lstm`` / ``gru`` / ``rnn_*`` over ``cell``."""
    if input.ndim != 3:
        raise ShapeError(f"{name}(): expected a 3-D input (sequence, batch, features), got shape {list(input.shape)}")
    lstm = name == "lstm"
    x = input.transpose(0, 1) if batch_first else input
    dirs = 2 if bidirectional else 1
    per = 4 if has_biases else 2
    if lstm and len(params) == num_layers * dirs * (per + 1):  # projections: w_hr after the biases
        per += 1
    if len(params) != num_layers * dirs * per:
        raise ValueError(f"{name}(): expected {num_layers * dirs * per} parameters for {num_layers} layer(s), "
                         f"got {len(params)}")
    h0s, c0s = (hx[0], hx[1]) if lstm else (hx, None)
    last_h, last_c = [], []
    for layer in range(num_layers):
        outs = []
        for d in range(dirs):
            k = layer * dirs + d
            w = params[k * per:(k + 1) * per]
            w_ih, w_hh = w[0], w[1]
            b_ih, b_hh = (w[2], w[3]) if has_biases else (None, None)
            w_hr = w[-1] if lstm and per in (3, 5) else None
            h = h0s[k]
            c = c0s[k] if lstm else None
            steps = range(x.shape[0] - 1, -1, -1) if d else range(x.shape[0])
            ys: list[Tensor] = []
            for t in steps:
                if lstm:
                    h, c = cell(x[t], (h, c), w_ih, w_hh, b_ih, b_hh)
                    if w_hr is not None:
                        h = h @ w_hr.mT
                else:
                    h = cell(x[t], h, w_ih, w_hh, b_ih, b_hh)
                ys.append(h)
            outs.append(stack(ys[::-1] if d else ys, 0))
            last_h.append(h)
            last_c.append(c)
        x = cat(outs, -1) if dirs == 2 else outs[0]
        if dropout and train and layer < num_layers - 1:
            x = F.dropout(x, dropout, True)
    out = x.transpose(0, 1) if batch_first else x
    if lstm:
        return out, stack(last_h, 0), stack(last_c, 0)
    return out, stack(last_h, 0)


def _rnn_fn(name: str, cell: Callable[..., Any]) -> Callable[..., tuple[Any, ...]]:
    def fn(input: Tensor, hx: Any, params: Sequence[Tensor], has_biases: bool, num_layers: int, dropout: float,
           train: bool, bidirectional: bool, batch_first: bool) -> tuple[Any, ...]:
        return _rnn(name, cell, input, hx, params, has_biases, num_layers, dropout, train, bidirectional,
                    batch_first)
    fn.__name__ = fn.__qualname__ = name
    state = "h_n, c_n" if name == "lstm" else "h_n"
    fn.__doc__ = (f"ATen's multi-layer ``{name}`` over ``{cell.__name__}``: ``(output, {state})`` "
                  "from the input (sequence first unless ``batch_first``), the initial state and the flat list of "
                  "parameters (``w_ih, w_hh[, b_ih, b_hh]`` per layer and direction).")
    return fn


# -- linalg's older forms --------------------------------------------------------------------------------------


def cholesky(input: Tensor, upper: bool = False) -> Tensor:
    """The Cholesky factor ``L`` (``U = L^H`` with ``upper``) of a Hermitian positive-definite matrix."""
    return linalg.cholesky(input, upper=upper)


def cholesky_solve(B: Tensor, L: Tensor, upper: bool = False) -> Tensor:
    """The solution ``X`` of ``A X = B`` given the Cholesky factor of ``A`` (lower ``L``, or ``U`` with
    ``upper``)."""
    low = L.mH if upper else L
    return linalg.solve_triangular(low.mH, linalg.solve_triangular(low, B, upper=False), upper=True)


def cholesky_inverse(L: Tensor, upper: bool = False) -> Tensor:
    """The inverse of ``A`` given its Cholesky factor."""
    n = L.shape[-1]
    return cholesky_solve(eye(n, dtype=L.dtype, device=L.device).expand(L.shape), L, upper)


def lu(A: Tensor, pivot: bool = True, get_infos: bool = False) -> tuple[Tensor, ...]:
    """``(LU, pivots[, infos])``: the packed LU factorization (``linalg.lu_factor``)."""
    LU, piv = linalg.lu_factor(A, pivot=pivot)
    if get_infos:
        return LU, piv, zeros(A.shape[:-2], dtype=piv.dtype, device=A.device)
    return LU, piv


def lu_unpack(LU_data: Tensor, LU_pivots: Tensor, unpack_data: bool = True,
              unpack_pivots: bool = True) -> LUUnpackResult:
    """``(P, L, U)`` from the packed factorization: ``A = P @ L @ U`` (empty tensors where not unpacked)."""
    m, n = LU_data.shape[-2:]
    k = min(m, n)
    dt, dev = LU_data.dtype, LU_data.device
    empty = LU_data.new_empty((0,))
    L = U = empty
    if unpack_data:
        L = LU_data[..., :, :k].tril(-1) + eye(m, k, dtype=dt, device=dev)
        U = LU_data[..., :k, :].triu()
    P = empty
    if unpack_pivots:
        piv = LU_pivots.reshape(-1, LU_pivots.shape[-1]).tolist()
        perms = []
        for row in piv:  # LAPACK's row interchanges, applied in order
            perm = list(range(m))
            for i, p in enumerate(row):
                perm[i], perm[p - 1] = perm[p - 1], perm[i]
            perms.append(perm)
        ident = eye(m, dtype=dt, device=dev)
        P = stack([ident[:, perm] for perm in perms], 0).reshape(*LU_data.shape[:-2], m, m)
    return LUUnpackResult(P, L, U)


def lu_solve(b: Tensor, LU_data: Tensor, LU_pivots: Tensor) -> Tensor:
    """The solution of ``A x = b`` from ``A``'s packed LU factorization."""
    P, L, U = lu_unpack(LU_data, LU_pivots)
    y = linalg.solve_triangular(L, P.mT @ b, upper=False, unitriangular=True)
    return linalg.solve_triangular(U, y, upper=True)


def qr(input: Tensor, some: bool = True) -> QRResult:
    """``(Q, R)``: the reduced (``some``) or complete QR decomposition."""
    return QRResult(*linalg.qr(input, "reduced" if some else "complete"))


def svd(input: Tensor, some: bool = True, compute_uv: bool = True) -> SVDResult:
    """``(U, S, V)`` with ``input = U diag(S) V^H`` (``V``, not ``linalg.svd``'s ``Vh``); with
    ``compute_uv=False`` U and V are zero-filled square matrices, as PyTorch's."""
    if not compute_uv:
        m, n = input.shape[-2:]
        s = linalg.svdvals(input)
        return SVDResult(input.new_zeros((*input.shape[:-2], m, m)), s, input.new_zeros((*input.shape[:-2], n, n)))
    u, s, vh = linalg.svd(input, full_matrices=not some)
    return SVDResult(u, s, vh.mH)


def triangular_solve(b: Tensor, A: Tensor, upper: bool = True, transpose: bool = False,
                     unitriangular: bool = False) -> TriangularSolveResult:
    """``(X, A)`` (``A`` copied, broadcast to the batch) with ``X`` the solution of ``A X = b`` (``A^T X = b``
    with ``transpose``)."""
    a = A.mT if transpose else A
    x = linalg.solve_triangular(a, b, upper=upper != transpose, unitriangular=unitriangular)
    return TriangularSolveResult(x, A.expand(*x.shape[:-2], *A.shape[-2:]).clone())


def pinverse(input: Tensor, rcond: float = 1e-15) -> Tensor:
    """The pseudo-inverse, singular values below ``rcond`` times the largest counted as zero."""
    u, s, vh = linalg.svd(input, full_matrices=False)
    if s.shape[-1] == 0:
        return input.mT.new_zeros(input.mT.shape)
    keep = s > rcond * s.amax(-1, keepdim=True)
    inv = where(keep, 1 / where(keep, s, 1.0), 0.0)
    return (vh.mH * inv.unsqueeze(-2).to(vh.dtype)) @ u.mH


def nuclear_norm(input: Tensor, dim: Any = None, keepdim: bool = False) -> Tensor:
    """The sum of the singular values (of the matrices in ``dim``, the last two by default)."""
    if isinstance(dim, bool):  # nuclear_norm(input, keepdim)
        dim, keepdim = None, dim
    return linalg.matrix_norm(input, "nuc", dim=(-2, -1) if dim is None else tuple(dim), keepdim=keepdim)


def frobenius_norm(input: Tensor, dim: Any, keepdim: bool = False) -> Tensor:
    """``sqrt(sum |x|^2)`` over ``dim``."""
    return linalg.vector_norm(input, 2, dim=tuple(dim) if isinstance(dim, (list, tuple)) else dim, keepdim=keepdim)


def geqrf(input: Tensor) -> GeqrfResult:
    """LAPACK's packed QR: ``R`` on and above the diagonal, the Householder vectors below it (their first
    entry an implied 1) and their scales ``tau``."""
    a = input.detach().clone()
    m, n = a.shape[-2:]
    k = min(m, n)
    taus = []
    for j in range(k):
        x = a[..., j:, j]
        alpha = x[..., 0]
        norm = x.norm(dim=-1)
        flat = x[..., 1:].norm(dim=-1) == 0  # nothing below the diagonal: H = I, as LAPACK
        if a.dtype.is_complex:
            flat = flat.logical_and(alpha.imag == 0)
        beta = where(alpha.real >= 0, -norm, norm).to(a.dtype)  # real, as LAPACK's
        tau = where(flat, 0.0, (beta - alpha) / where(flat, 1.0, beta))
        v = x / where(flat, 1.0, alpha - beta).unsqueeze(-1)
        v = cat([v.new_ones((*v.shape[:-1], 1)), v[..., 1:]], -1)
        sub = a[..., j:, j:]
        w = (v.conj().unsqueeze(-2) @ sub)  # (..., 1, n - j)
        a[..., j:, j:] = sub - (tau.conj().unsqueeze(-1).unsqueeze(-1) * v.unsqueeze(-1)) * w
        a[..., j + 1:, j] = v[..., 1:] * (~flat).to(a.dtype).unsqueeze(-1)
        a[..., j, j] = where(flat, alpha, beta)
        taus.append(tau)
    return GeqrfResult(a, stack(taus, -1) if taus else a.new_zeros((*a.shape[:-2], 0)))


def orgqr(input: Tensor, tau: Tensor) -> Tensor:
    """The first columns of ``Q = H_1 ... H_k`` from ``geqrf``'s Householder vectors and scales
    (``linalg.householder_product``)."""
    m, n = input.shape[-2:]
    k = tau.shape[-1]
    q = eye(m, n, dtype=input.dtype, device=input.device).expand(*input.shape[:-2], m, n)
    for j in range(k - 1, -1, -1):
        v = cat([input.new_zeros((*input.shape[:-2], j)), input.new_ones((*input.shape[:-2], 1)),
                 input[..., j + 1:, j]], -1).unsqueeze(-1)
        q = q - tau[..., j, None, None] * v @ (v.mH @ q)
    return q


def ormqr(input: Tensor, tau: Tensor, other: Tensor, left: bool = True, transpose: bool = False) -> Tensor:
    """``Q @ other`` (``other @ Q`` unless ``left``; ``Q^H`` with ``transpose``), ``Q`` the full product of
    ``geqrf``'s Householder reflections."""
    m = input.shape[-2]
    full = cat([input, input.new_zeros((*input.shape[:-2], m, max(m - input.shape[-1], 0)))], -1)[..., :m]
    q = orgqr(full, tau)
    q = q.mH if transpose else q
    return q @ other if left else other @ q


def svd_lowrank(A: Tensor, q: int | None = 6, niter: int = 2, M: Tensor | None = None) -> SVDResult:
    """A rank-``q`` SVD ``(U, S, V)`` of ``A - M`` by randomized subspace iteration (Halko et al.)."""
    a = A if M is None else A - M
    m, n = a.shape[-2:]
    q = min(6 if q is None else q, m, n)
    x = a.new_empty((*a.shape[:-2], n, q)).normal_()
    y, _ = linalg.qr(a @ x)
    for _ in range(niter):
        z, _ = linalg.qr(a.mH @ y)
        y, _ = linalg.qr(a @ z)
    b = y.mH @ a
    u, s, vh = linalg.svd(b, full_matrices=False)
    return SVDResult(y @ u, s, vh.mH)


def pca_lowrank(A: Tensor, q: int | None = None, center: bool = True, niter: int = 2) -> SVDResult:
    """The principal directions of the rows of ``A``: ``svd_lowrank`` of ``A`` centered by column."""
    m, n = A.shape[-2:]
    q = min(6, m, n) if q is None else q
    if center:
        return svd_lowrank(A - A.mean(-2, keepdim=True), q, niter)
    return svd_lowrank(A, q, niter)


def _b_orthonormal(S: Tensor, B: Tensor | None) -> Tensor:
    """An orthonormal (``B``-orthonormal) basis of the columns of ``S``, nearly dependent columns dropped."""
    if B is None:
        q, r = linalg.qr(S)
        keep = r.diagonal(dim1=-2, dim2=-1).abs() > 1e-10 * r.diagonal(dim1=-2, dim2=-1).abs().amax().clamp(min=1e-300)
        return q[:, keep]
    gram = S.mT @ (B @ S)
    vals, vecs = linalg.eigh((gram + gram.mT) / 2)
    keep = vals > 1e-10 * vals.abs().amax()
    return S @ (vecs[:, keep] / vals[keep].sqrt())


def lobpcg(A: Tensor, k: int | None = None, B: Tensor | None = None, X: Tensor | None = None,
           n: int | None = None, iK: Tensor | None = None, niter: int | None = None,
           tol: float | None = None, largest: bool | None = None, method: str | None = None, tracker: Any = None,
           ortho_iparams: Any = None, ortho_fparams: Any = None, ortho_bparams: Any = None) -> tuple[Tensor, Tensor]:
    """``(E, X)``: the ``k`` largest (``largest=False``: smallest) eigenvalues and eigenvectors of the symmetric
    ``A x = E B x`` (``B`` positive definite, the identity by default), by LOBPCG (Knyazev): Rayleigh-Ritz over
    the current vectors, their preconditioned (``iK``) residuals and the previous step's directions."""
    if A.ndim != 2 or A.shape[0] != A.shape[1]:
        raise ShapeError(f"lobpcg: A must be a square matrix, got shape {list(A.shape)} (batches are not supported)")
    m = A.shape[-1]
    k = (1 if X is None else X.shape[-1]) if k is None else k
    n = (k if X is None else X.shape[-1]) if n is None else n
    if not 0 < k <= n or 3 * n > m:
        raise ValueError(f"lobpcg: expected 0 < k <= n and 3 * n <= the size of A, got k={k}, n={n}, size {m}")
    largest = True if largest is None else largest
    niter = 1000 if niter is None else niter
    tol = finfo(A.dtype).eps ** 0.5 if tol is None else tol
    x = _b_orthonormal(A.new_empty((m, n)).normal_() if X is None else X, B)
    p_dirs: Tensor | None = None
    evals = x.new_zeros(n)
    for step in builtins.range(niter if niter >= 0 else 10 ** 9):
        ax = A @ x
        bx = x if B is None else B @ x
        evals = (x * ax).sum(0) / (x * bx).sum(0)
        res = ax - bx * evals
        if bool((res[:, :k].norm(dim=0) <= tol * (evals[:k].abs() + 1) * x[:, :k].norm(dim=0)).all()):
            break
        w = res if iK is None else iK @ res
        parts = [x, w] + ([p_dirs] if p_dirs is not None else [])
        # unit columns: small residuals near convergence must not look dependent on x
        basis = _b_orthonormal(cat([v / v.norm(dim=0).clamp(min=1e-300) for v in parts], 1), B)
        small = basis.mT @ (A @ basis)
        vals, vecs = linalg.eigh((small + small.mT) / 2)
        order = vals.argsort(descending=largest)[:n]
        c = vecs[:, order]
        x_new = basis @ c
        p_dirs = x_new - x @ (x.mT @ (x_new if B is None else B @ x_new))
        x = x_new
        if tracker is not None:
            tracker(step)
    order = evals.argsort(descending=largest)[:k]
    return evals[order], x[:, order]


# -- short-time Fourier transforms ---------------------------------------------------------------------------------


def _window(window: Tensor | None, n_fft: int, win_length: int | None, like: Tensor, name: str) -> Tensor:
    win = n_fft if win_length is None else win_length
    if not 0 < win <= n_fft:
        raise ValueError(f"{name}: expected 0 < win_length <= n_fft, but got win_length={win}")
    w = ones(win, dtype=like.real.dtype, device=like.device) if window is None else window
    if w.ndim != 1 or w.shape[0] != win:
        raise ShapeError(f"{name}: expected a 1D window tensor of size equal to win_length={win}, but got window "
                         f"with size {list(w.shape)}")
    left = (n_fft - win) // 2
    return F.pad(w, (left, n_fft - win - left)) if win < n_fft else w


def stft(input: Tensor, n_fft: int, hop_length: int | None = None, win_length: int | None = None,
         window: Tensor | None = None, center: bool = True, pad_mode: str = "reflect", normalized: bool = False,
         onesided: bool | None = None, return_complex: bool | None = None,
         align_to_window: bool | None = None) -> Tensor:
    """The short-time Fourier transform of a signal (1-D) or a batch of them (2-D): the FFT of each frame of
    ``n_fft`` samples, ``hop_length`` apart, times ``window``; frequencies by frames."""
    cplx = input.dtype.is_complex or (window is not None and window.dtype.is_complex)
    if return_complex is None:
        if not cplx:
            raise ValueError("stft requires the return_complex parameter be given for real inputs, and will "
                             "further require that return_complex=True in a future PyTorch release.")
        return_complex = True
    if input.ndim not in (1, 2):
        raise ShapeError(f"stft: expected a 1D or 2D tensor, got shape {list(input.shape)}")
    x = input.unsqueeze(0) if input.ndim == 1 else input
    hop = n_fft // 4 if hop_length is None else hop_length
    if hop <= 0:
        raise ValueError(f"stft: expected hop_length > 0, but got hop_length={hop}")
    w = _window(window, n_fft, win_length, x, "stft")
    if center:
        x = F.pad(x.unsqueeze(1), (n_fft // 2, n_fft // 2), mode=pad_mode).squeeze(1)
    if x.shape[-1] < n_fft:
        raise ShapeError(f"stft: expected 0 < n_fft <= {x.shape[-1]} (the padded signal's length), got {n_fft}")
    frames = x.contiguous().unfold(-1, n_fft, hop) * w
    one = (not cplx) if onesided is None else onesided
    spec = fft.rfft(frames, dim=-1) if one else fft.fft(frames, dim=-1)
    if normalized:
        spec = spec * n_fft ** -0.5
    spec = spec.transpose(-1, -2)
    if input.ndim == 1:
        spec = spec.squeeze(0)
    return spec if return_complex else view_as_real(spec.contiguous())


def istft(input: Tensor, n_fft: int, hop_length: int | None = None, win_length: int | None = None,
          window: Tensor | None = None, center: bool = True, normalized: bool = False, onesided: bool | None = None,
          length: int | None = None, return_complex: bool = False) -> Tensor:
    """The inverse of :func:`stft`: each frame's inverse FFT times ``window``, overlapped and added, divided by
    the overlapped squared window."""
    if not input.dtype.is_complex:
        raise TypeError(f"istft requires a complex-valued input tensor, got {input.dtype}")
    if input.ndim not in (2, 3):
        raise ShapeError(f"istft: expected a tensor with 2 or 3 dimensions of complex dtype, got shape "
                         f"{list(input.shape)}")
    spec = input.unsqueeze(0) if input.ndim == 2 else input
    hop = n_fft // 4 if hop_length is None else hop_length
    one = spec.shape[-2] != n_fft if onesided is None else onesided
    w = _window(window, n_fft, win_length, spec.real, "istft")
    if normalized:
        spec = spec * n_fft ** 0.5
    cols = spec.transpose(-1, -2)
    frames = fft.irfft(cols, n=n_fft, dim=-1) if one else fft.ifft(cols, dim=-1)
    if not return_complex and frames.dtype.is_complex:
        frames = frames.real
    frames = frames * w
    count, batch = frames.shape[-2], frames.shape[0]
    total = n_fft + hop * (count - 1)
    idx = ((arange(count, device=spec.device) * hop).unsqueeze(-1) + arange(n_fft, device=spec.device)).reshape(-1)
    y = zeros(batch, total, dtype=frames.dtype, device=spec.device).index_add(1, idx, frames.reshape(batch, -1))
    env = zeros(total, dtype=w.real.dtype, device=spec.device).index_add(0, idx, (w.abs() ** 2).repeat(count))
    start = n_fft // 2 if center else 0
    end = start + length if length is not None else (total - n_fft // 2 if center else total)
    y, env = y[:, start:end], env[start:end]
    if env.numel() and float(env.abs().min()) < 1e-11:
        raise ValueError("istft: window overlap add min is below 1e-11: the window and hop length cannot be "
                         "inverted (NOLA condition)")
    y = y / env
    if length is not None and y.shape[-1] < length:
        y = F.pad(y, (0, length - y.shape[-1]))
    return y.squeeze(0) if input.ndim == 2 else y


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "stft": stft, "istft": istft,
    "batch_norm": batch_norm, "instance_norm": instance_norm, "embedding": embedding,
    "embedding_renorm_": embedding_renorm_, "binary_cross_entropy_with_logits": binary_cross_entropy_with_logits,
    "cosine_embedding_loss": cosine_embedding_loss, "hinge_embedding_loss": hinge_embedding_loss, "kl_div": kl_div,
    "margin_ranking_loss": margin_ranking_loss, "poisson_nll_loss": poisson_nll_loss,
    "triplet_margin_loss": triplet_margin_loss, "adaptive_avg_pool1d": F.adaptive_avg_pool1d,
    "adaptive_max_pool1d": adaptive_max_pool1d, "max_pool1d_with_indices": max_pool1d_with_indices,
    "constant_pad_nd": constant_pad_nd, "convolution": convolution, "conv_tbc": conv_tbc,
    "channel_shuffle": F.channel_shuffle, "pdist": F.pdist,
    "alpha_dropout": _drop("alpha_dropout", F.alpha_dropout),
    "feature_alpha_dropout": _drop("feature_alpha_dropout", F.feature_alpha_dropout),
    "feature_dropout": feature_dropout,
    "dropout_": _drop_("dropout_", F.dropout), "alpha_dropout_": _drop_("alpha_dropout_", F.alpha_dropout),
    "feature_alpha_dropout_": _drop_("feature_alpha_dropout_", F.feature_alpha_dropout),
    "feature_dropout_": _drop_("feature_dropout_", feature_dropout),
    "rrelu": rrelu, "rrelu_": rrelu_, "norm_except_dim": norm_except_dim,
    "lstm_cell": lstm_cell, "gru_cell": gru_cell, "rnn_tanh_cell": rnn_tanh_cell, "rnn_relu_cell": rnn_relu_cell,
    "lstm": _rnn_fn("lstm", lstm_cell), "gru": _rnn_fn("gru", gru_cell),
    "rnn_tanh": _rnn_fn("rnn_tanh", rnn_tanh_cell), "rnn_relu": _rnn_fn("rnn_relu", rnn_relu_cell),
    "cholesky": cholesky, "cholesky_solve": cholesky_solve, "cholesky_inverse": cholesky_inverse, "lu": lu,
    "lu_unpack": lu_unpack, "lu_solve": lu_solve, "qr": qr, "svd": svd, "triangular_solve": triangular_solve,
    "pinverse": pinverse, "nuclear_norm": nuclear_norm, "frobenius_norm": frobenius_norm, "geqrf": geqrf,
    "orgqr": orgqr, "ormqr": ormqr, "svd_lowrank": svd_lowrank, "pca_lowrank": pca_lowrank, "lobpcg": lobpcg,
}

#: The functions that are also Tensor methods, as in PyTorch.
METHODS: tuple[str, ...] = ("cholesky", "cholesky_solve", "cholesky_inverse", "lu", "lu_solve", "qr", "svd",
                            "triangular_solve", "pinverse", "geqrf", "orgqr", "ormqr", "stft", "istft")


def install(namespace: dict[str, Any]) -> list[str]:
    """Put :data:`FUNCTIONS` into ``namespace`` (``ferro``'s) and :data:`METHODS` on Tensor; returns the names."""
    namespace.update(FUNCTIONS)
    for name in METHODS:
        setattr(Tensor, name, FUNCTIONS[name])
    return list(FUNCTIONS)

