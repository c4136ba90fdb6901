"""The orthogonal polynomials of ``torch.special`` on any NumPy-like namespace ``xp`` (the CPU backend's kernels;
the device backends generate theirs from the same recurrences in ``ferro/_core/c_special.py``).

Each is ``p_n(x)`` by its three-term recurrence ``p_{k+1} = f(x, k, p_k, p_{k-1})`` from ``p_0 = 1`` and ``p_1``,
run for all elements at once up to the largest ``n`` (float16 and bfloat16 in float32, as the device kernels);
``n`` is truncated to an integer (as PyTorch reads it) and a negative ``n`` gives 0.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["POLYNOMIALS", "polynomial_kernels"]

#: name -> (p_1(x), p_{k+1}(x, k, p_k, p_{k-1}))
_RECURRENCES: dict[str, tuple[Callable[[Any], Any], Callable[[Any, int, Any, Any], Any]]] = {
    "chebyshev_polynomial_t": (lambda x: x, lambda x, k, q, p: 2 * x * q - p),
    "chebyshev_polynomial_u": (lambda x: 2 * x, lambda x, k, q, p: 2 * x * q - p),
    "chebyshev_polynomial_v": (lambda x: 2 * x - 1, lambda x, k, q, p: 2 * x * q - p),
    "chebyshev_polynomial_w": (lambda x: 2 * x + 1, lambda x, k, q, p: 2 * x * q - p),
    "hermite_polynomial_h": (lambda x: 2 * x, lambda x, k, q, p: 2 * x * q - 2 * k * p),
    "hermite_polynomial_he": (lambda x: x, lambda x, k, q, p: x * q - k * p),
    "laguerre_polynomial_l": (lambda x: 1 - x, lambda x, k, q, p: ((2 * k + 1 - x) * q - k * p) / (k + 1)),
    "legendre_polynomial_p": (lambda x: x, lambda x, k, q, p: ((2 * k + 1) * x * q - k * p) / (k + 1)),
}


#: The polynomial ops: the eight, and Chebyshev's four shifted to [0, 1] (evaluated at 2x - 1).
POLYNOMIALS: list[str] = [*_RECURRENCES, *(f"shifted_{n}" for n in _RECURRENCES if n.startswith("chebyshev"))]


def _kernel(xp: Any, name: str) -> Callable[[Any, Any], Any]:
    first, step = _RECURRENCES[name.replace("shifted_", "")]
    shifted = name.startswith("shifted_")

    def kernel(x: Any, n: Any) -> Any:
        dtype = x.dtype if hasattr(x, "dtype") else n.dtype  # a Python number takes the array's dtype
        work = xp.float32 if xp.dtype(dtype).itemsize < 4 else dtype  # float16 and bfloat16 compute in float32
        x, n = xp.asarray(x), xp.asarray(n)
        x, n = xp.broadcast_arrays(x.astype(work), n.astype(work))
        t = 2 * x - 1 if shifted else x
        nan = xp.isnan(x) | xp.isnan(n)
        k = xp.trunc(xp.where(nan, 0, n))
        out = xp.where(k == 0, xp.ones_like(t), 0 * t)
        top = int(k.max()) if k.size else 0
        if top >= 1:
            p, q = xp.ones_like(t), first(t)
            out = xp.where(k == 1, q, out)
            for j in range(1, top):
                p, q = q, step(t, j, q, p)
                out = xp.where(k == j + 1, q, out)
        return xp.asarray(xp.where(nan, xp.nan, out), dtype=dtype)
    kernel.__name__ = kernel.__qualname__ = name
    return kernel


def polynomial_kernels(xp: Any, names: list[str]) -> dict[str, Callable[[Any, Any], Any]]:
    """A kernel ``(x, n) -> p_n(x)`` for each polynomial op of ``names``."""
    return {name: _kernel(xp, name) for name in names}
