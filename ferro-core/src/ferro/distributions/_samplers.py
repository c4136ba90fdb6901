"""Draws from the gamma, Poisson and binomial distributions, composed of ferro's ``rand`` / ``randn`` and
elementwise ops, so that they run on every backend.

Each sampler is a vectorized rejection (or sequential-search) loop: every element draws candidates until one
is accepted, and the loop ends when all have (one host check per round; the acceptance rates are above 85%,
so a handful of rounds). Gamma uses Marsaglia and Tsang's method (with the ``U ** (1 / alpha)`` boost below
1), Poisson and binomial Hormann's transformed rejection (PTRS, BTRS) for large means and inversion by
sequential search for small ones. ``standard_gamma`` is differentiable in ``concentration`` by implicit
reparameterization: ``dx/dalpha = -(dF/dalpha) / f(x)`` with ``F`` the regularized incomplete gamma function,
whose derivative in ``alpha`` is summed from its power series (below ``alpha = 8``; Rice's saddle-point
expansion above, as PyTorch).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from .. import _api as api
from .. import backends
from .._api import DType, Tensor
from ..autograd import Function

__all__ = ["standard_gamma", "poisson", "binomial", "until_accepted", "widest_float"]


def widest_float(like: Tensor) -> DType:
    """float64 where ``like``'s device has it, else ``like``'s own dtype."""
    dev = like.device
    return api.float64 if backends.get(dev.type).supports("mul", api.float64, dev.index) else like.dtype


def until_accepted(shape: tuple[int, ...], like: Tensor,
                    propose: Callable[[], tuple[Tensor, Tensor]]) -> Tensor:
    """Values from ``propose() -> (candidates, accepted)`` rounds until every element has an accepted one."""
    out = api.zeros(shape, dtype=like.dtype, device=like.device)
    done = api.zeros(shape, dtype=api.bool, device=like.device)
    while True:
        value, ok = propose()
        take = ok & ~done
        out = api.where(take, value, out)
        done = done | ok
        if bool(done.all()):
            return out


def _gamma_draw(alpha: Tensor) -> Tensor:
    """Standard gamma draws of concentration ``alpha`` (no gradient)."""
    shape, small = tuple(alpha.shape), alpha < 1
    a = api.where(small, alpha + 1, alpha)
    d = a - 1.0 / 3.0
    c = (9 * d).rsqrt()

    def propose() -> tuple[Tensor, Tensor]:
        x = api.randn(shape, dtype=alpha.dtype, device=alpha.device)
        u = api.rand(shape, dtype=alpha.dtype, device=alpha.device)
        v = (1 + c * x) ** 3
        ok = (v > 0) & (u.log() < 0.5 * x * x + d - d * v + d * v.clamp(min=1e-300).log())
        return d * v, ok

    out = until_accepted(shape, alpha, propose)
    boost = api.rand(shape, dtype=alpha.dtype, device=alpha.device).pow(1 / alpha)
    out = api.where(small, out * boost, out)
    return out.clamp(min=api.finfo(alpha.dtype).tiny)


def _gamma_series_grad(alpha: Tensor, x: Tensor) -> Tensor:
    """``dx/dalpha`` from the power series of ``P(alpha, x) = sum_n exp((alpha + n) log x - x -
    lgamma(alpha + n + 1))``: each term's derivative in ``alpha`` is the term times ``log x -
    digamma(alpha + n + 1)``, with digamma advanced by its recurrence (accurate where ``x`` is not far
    in the upper tail)."""
    log_x = x.log()
    psi = (alpha + 1).digamma()
    term = (alpha * log_x - x - (alpha + 1).lgamma()).exp()
    d_cdf = term * (log_x - psi)
    top = float(x.max()) if x.numel() else 0.0
    for n in range(1, int(top + 12 * math.sqrt(top) + 30)):
        psi = psi + 1 / (alpha + n)
        term = term * x / (alpha + n)
        d_cdf = d_cdf + term * (log_x - psi)
    pdf = ((alpha - 1) * log_x - x - alpha.lgamma()).exp()
    return -d_cdf / pdf


def _gamma_saddle_grad(alpha: Tensor, x: Tensor) -> Tensor:
    """``dx/dalpha`` for ``alpha > 8`` by Rice's saddle-point expansion, with its limit near ``x = alpha``
    (the expansion PyTorch uses there)."""
    denom = (8 * alpha).sqrt()
    off = (x - alpha).abs() < 0.1 * alpha
    xs = api.where(off, 0.5 * alpha, x)  # keeps the unused branch finite
    term2 = denom / (alpha - xs)
    term3 = (xs - alpha - alpha * (xs / alpha).log()).pow(-1.5)
    term23 = api.where(xs < alpha, term2 - term3, term2 + term3)
    term1 = (xs / alpha).log() * term23 - (2 / alpha).sqrt() * (alpha + xs) / ((alpha - xs) ** 2)
    stirling = 1 + 1 / (12 * alpha) * (1 + 1 / (24 * alpha))
    far = -stirling * xs * term1 / denom
    numer_1 = 1 + 24 * alpha * (1 + 12 * alpha)
    numer_2 = 1440 * alpha ** 2 + 6 * x * (53 - 120 * x) - 65 * x * x / alpha + alpha * (107 + 3600 * x)
    near = numer_1 * numer_2 / (1244160 * alpha ** 4)
    return api.where(off, near, far)


def _gamma_cdf_alpha_grad(alpha: Tensor, x: Tensor) -> Tensor:
    """``dx/dalpha`` at a gamma draw ``x`` of concentration ``alpha`` (implicit reparameterization):
    the series where ``alpha <= 8`` or ``x < 0.8``, else the saddle-point expansion."""
    series = (alpha <= 8) | (x < 0.8)
    grad_s = _gamma_series_grad(api.where(series, alpha, 1.0), api.where(series, x, 0.5))
    grad = api.where(series, grad_s, _gamma_saddle_grad(api.where(series, 10.0, alpha), api.where(series, 5.0, x)))
    return api.where(grad == grad, grad, 0.0)


class _StandardGamma(Function):
    @staticmethod
    def forward(ctx, alpha: Tensor) -> Tensor:  # type: ignore[override]
        x = _gamma_draw(alpha)
        ctx.save_for_backward(alpha, x)
        return x

    @staticmethod
    def backward(ctx, grad: Tensor) -> Tensor:  # type: ignore[override]
        alpha, x = ctx.saved_tensors
        with api.no_grad():  # in float64 where the device has it: the series cancels in the upper tail
            wide = widest_float(alpha)
            return grad * _gamma_cdf_alpha_grad(alpha.to(wide), x.to(wide)).to(alpha.dtype)


def standard_gamma(concentration: Tensor) -> Tensor:
    """Draws of ``Gamma(concentration, 1)``, one per element, differentiable in ``concentration``."""
    if concentration.requires_grad and api.is_grad_enabled():
        return _StandardGamma.apply(concentration)
    with api.no_grad():
        return _gamma_draw(concentration)


def _sequential_search(shape: tuple[int, ...], like: Tensor, first: Tensor,
                       step: Callable[[Tensor, Tensor], Tensor], cap: Tensor | None = None) -> Tensor:
    """Inversion by sequential search: the smallest ``k`` with ``u < P(0) + ... + P(k)``, where
    ``P(0) = first`` and ``P(k) = P(k - 1) * step(k, P(k - 1))``."""
    u = api.rand(shape, dtype=like.dtype, device=like.device)
    k = api.zeros(shape, dtype=like.dtype, device=like.device)
    p = first
    active = u > p
    while bool(active.any()):
        u = api.where(active, u - p, u)
        k = k + active.to(like.dtype)
        p = api.where(active, step(k, p), p)
        active = active & (u > p) & (p > 0)
        if cap is not None:
            active = active & (k < cap)
    return k


def poisson(rate: Tensor) -> Tensor:
    """Poisson draws of mean ``rate``, one per element (no gradient)."""
    with api.no_grad():
        shape = tuple(rate.shape)
        small = rate < 10
        rs = api.where(small, rate, 0.0)  # the search runs on the small ones only
        k_small = _sequential_search(shape, rate, (-rs).exp(), lambda k, p: p * rs / k)
        if not bool((~small).any()):
            return k_small
        lam = api.where(small, 10.0, rate)
        slam, loglam = lam.sqrt(), lam.log()
        b = 0.931 + 2.53 * slam
        a = -0.059 + 0.02483 * b
        inv_alpha = 1.1239 + 1.1328 / (b - 3.4)
        v_r = 0.9277 - 3.6224 / (b - 2)

        def propose() -> tuple[Tensor, Tensor]:  # PTRS
            u = api.rand(shape, dtype=rate.dtype, device=rate.device) - 0.5
            v = api.rand(shape, dtype=rate.dtype, device=rate.device)
            us = 0.5 - u.abs()
            k = ((2 * a / us + b) * u + lam + 0.43).floor()
            fast = (us >= 0.07) & (v <= v_r)
            bound = -lam + k * loglam - (k + 1).clamp(min=1).lgamma()
            slow = (k >= 0) & ~((us < 0.013) & (v > us)) & \
                (v.log() + inv_alpha.log() - (a / (us * us) + b).log() <= bound)
            return k, (fast & (k >= 0)) | slow

        k_large = until_accepted(shape, rate, propose)
        return api.where(small, k_small, k_large)


def binomial(count: Tensor, probs: Tensor) -> Tensor:
    """Binomial draws of ``count`` trials of success probability ``probs``, one per element (no gradient)."""
    with api.no_grad():
        count, probs = api.broadcast_tensors(count, probs)
        shape = tuple(probs.shape)
        flip = probs > 0.5
        p = api.where(flip, 1 - probs, probs)  # p <= 1/2; flipped back at the end
        n = count
        small = n * p < 10
        ps, ns = api.where(small, p, 0.0), api.where(small, n, 0.0)
        s = ps / (1 - ps)
        k = _sequential_search(shape, probs, (1 - ps) ** ns, lambda k, pk: pk * ((ns + 1) * s / k - s), cap=ns)
        if bool((~small).any()):
            pl, nl = api.where(small, 0.25, p), api.where(small, 100.0, n)
            ql = 1 - pl
            spq = (nl * pl * ql).sqrt()
            b = 1.15 + 2.53 * spq
            a = -0.0873 + 0.0248 * b + 0.01 * pl
            c = nl * pl + 0.5
            v_r = 0.92 - 4.2 / b
            alpha = (2.83 + 5.1 / b) * spq
            lpq = (pl / ql).log()
            m = ((nl + 1) * pl).floor()
            h = (m + 1).lgamma() + (nl - m + 1).lgamma()

            def propose() -> tuple[Tensor, Tensor]:  # BTRS
                u = api.rand(shape, dtype=probs.dtype, device=probs.device) - 0.5
                v = api.rand(shape, dtype=probs.dtype, device=probs.device)
                us = 0.5 - u.abs()
                kk = ((2 * a / us + b) * u + c).floor()
                inside = (kk >= 0) & (kk <= nl)
                fast = (us >= 0.07) & (v <= v_r)
                kc = kk.clamp(min=0).minimum(nl)
                bound = h - (kc + 1).lgamma() - (nl - kc + 1).lgamma() + (kc - m) * lpq
                slow = (v * alpha / (a / (us * us) + b)).log() <= bound
                return kk, inside & (fast | slow)

            k = api.where(small, k, until_accepted(shape, probs, propose))
        return api.where(flip, n - k, k)
