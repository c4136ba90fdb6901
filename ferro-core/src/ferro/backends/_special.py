"""PyTorch's (C99's) values of the special functions where SciPy's ufuncs, which CPU and CUDA kernels
call, give others: one rule for every backend built on ``scipy.special`` or ``cupyx.scipy.special``.

- ``lgamma(-inf)`` is ``+inf`` (C99 and PyTorch; ``gammaln`` gives ``-inf``);
- ``erfinv(-0.0)`` is ``-0.0`` (erfinv is odd; ``scipy.special.erfinv`` drops the sign).

Kernels generated from the ops' expressions follow the same rule (``ferro/_ops/elementwise.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["with_torch_special_values"]


def _lgamma(xp: Any, x: Any, out: Any) -> Any:
    return xp.where(x == -xp.inf, xp.asarray(xp.inf, dtype=out.dtype), out)


def _erfinv(xp: Any, x: Any, out: Any) -> Any:
    return xp.copysign(out, xp.asarray(x, dtype=out.dtype))


#: op -> fix(xp, x, scipy_result) -> PyTorch's result.
_FIXES: dict[str, Callable[[Any, Any, Any], Any]] = {"lgamma": _lgamma, "erfinv": _erfinv}


def with_torch_special_values(xp: Any, op: str, kernel: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``kernel`` (a SciPy-like special function of op ``op``) giving PyTorch's special values."""
    fix = _FIXES.get(op)
    if fix is None:
        return kernel

    def fixed(x: Any) -> Any:
        out = kernel(x)
        return xp.asarray(fix(xp, x, out), dtype=out.dtype)
    return fixed
