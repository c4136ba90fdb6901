"""Comparing ferro tensors with NumPy references."""

from __future__ import annotations

from typing import Any

__all__ = ["assert_close", "default_tolerance"]

#: (rtol, atol) by dtype name, as loose as the format requires.
_TOLERANCES = {
    "float16": (1e-3, 1e-3), "bfloat16": (1.6e-2, 1e-2), "float32": (1.3e-6, 1e-5), "float64": (1e-7, 1e-7),
    "complex64": (1.3e-6, 1e-5), "complex128": (1e-7, 1e-7),
}


def default_tolerance(dtype_name: str) -> tuple[float, float]:
    """``(rtol, atol)`` for comparing values of ``dtype_name``; exact for integers and bool."""
    return _TOLERANCES.get(dtype_name, (0.0, 0.0))


def _dtype_name(x: Any) -> str:
    d = getattr(x, "dtype", None)
    return getattr(d, "name", str(d))


def assert_close(actual: Any, expected: Any, *, rtol: float | None = None, atol: float | None = None,
                 check_dtype: bool = True, check_shape: bool = True, equal_nan: bool = True) -> None:
    """Assert that a ferro tensor (or array, or number) matches a NumPy reference.

    Checks the shape and the dtype (by name; ``expected`` may be a NumPy array
    or a ferro tensor) unless told not to, then the values within per-dtype
    tolerances. The message shows both sides and the largest difference.
    """
    import numpy as np

    from ferro import Tensor
    a = actual.detach().numpy() if isinstance(actual, Tensor) else np.asarray(actual)
    e = expected.detach().numpy() if isinstance(expected, Tensor) else np.asarray(expected)
    name = _dtype_name(actual) if isinstance(actual, Tensor) else a.dtype.name
    if check_shape and a.shape != e.shape:
        raise AssertionError(f"shape mismatch: actual {list(a.shape)}, expected {list(e.shape)}")
    if check_dtype:
        ename = _dtype_name(expected) if isinstance(expected, Tensor) else e.dtype.name
        if name != ename:
            raise AssertionError(f"dtype mismatch: actual {name}, expected {ename}")
    r0, a0 = default_tolerance(name)
    rtol = r0 if rtol is None else rtol
    atol = a0 if atol is None else atol
    af = a.astype(np.complex128 if np.iscomplexobj(a) else np.float64) if a.dtype.kind != "b" else a
    ef = e.astype(np.complex128 if np.iscomplexobj(e) else np.float64) if e.dtype.kind != "b" else e
    if not np.allclose(af, ef, rtol=rtol, atol=atol, equal_nan=equal_nan):
        with np.errstate(all="ignore"):
            diff = np.abs(af.astype(np.complex128) - ef.astype(np.complex128))
        worst = np.nanmax(diff) if diff.size else 0.0
        raise AssertionError(f"values differ (dtype {name}, rtol={rtol}, atol={atol}, max abs diff {worst:.3g})\n"
                             f"actual:\n{a}\nexpected:\n{e}")
