"""The regularized lower incomplete gamma function ``P(a, x)`` (``torch.special.gammainc``), which the gamma
family's ``cdf`` needs, composed of elementwise ops: its power series where ``x < a + 1`` and the continued
fraction of ``1 - P`` (modified Lentz) elsewhere, each run until its terms no longer change the result."""

from __future__ import annotations

from .. import _api as api
from .._api import Tensor

__all__ = ["gammainc"]

_MAX_STEPS = 2000


def _series(a: Tensor, x: Tensor) -> Tensor:
    """``P(a, x) = x^a e^-x / Gamma(a + 1) * sum_n x^n / ((a + 1) ... (a + n))``."""
    eps = api.finfo(x.dtype).eps
    term = api.ones_like(x)
    total = api.ones_like(x)
    for n in range(1, _MAX_STEPS):
        term = term * x / (a + n)
        total = total + term
        if n % 8 == 0 and bool((term <= total * eps).all()):
            break
    return total * (a * x.log() - x - (a + 1).lgamma()).exp()


def _continued_fraction(a: Tensor, x: Tensor) -> Tensor:
    """``1 - P(a, x)`` by the continued fraction of the upper incomplete gamma function."""
    eps, tiny = api.finfo(x.dtype).eps, api.finfo(x.dtype).tiny * 1e10
    b = x + 1 - a
    c = api.full_like(x, 1 / tiny)
    d = 1 / b
    h = d
    for i in range(1, _MAX_STEPS):
        an = -i * (i - a)
        b = b + 2
        d = an * d + b
        d = api.where(d.abs() < tiny, tiny, d)
        c = b + an / c
        c = api.where(c.abs() < tiny, tiny, c)
        d = 1 / d
        delta = d * c
        h = h * delta
        if i % 8 == 0 and bool(((delta - 1).abs() <= eps).all()):
            break
    return h * (a * x.log() - x - a.lgamma()).exp()


def gammainc(a: Tensor, x: Tensor) -> Tensor:
    """``P(a, x)``, the regularized lower incomplete gamma function (0 at ``x <= 0``)."""
    a, x = api.broadcast_tensors(a, x)
    use_series = x < a + 1
    xs = x.clamp(min=api.finfo(x.dtype).tiny)
    lower = _series(api.where(use_series, a, 1.0), api.where(use_series, xs, 0.5))
    upper = _continued_fraction(api.where(use_series, 1.0, a), api.where(use_series, 5.0, xs))
    return api.where(x <= 0, 0.0, api.where(use_series, lower, 1 - upper))
