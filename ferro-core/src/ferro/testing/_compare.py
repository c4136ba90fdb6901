"""Comparing ferro tensors with NumPy references."""

from __future__ import annotations

from typing import Any

__all__ = ["assert_close", "default_tolerance"]

#: (rtol, atol) by dtype name, as loose as the format requires (PyTorch's defaults, float64 a little looser).
_TOLERANCES = {
    "float16": (1e-3, 1e-3), "bfloat16": (1.6e-2, 1e-2), "float32": (1.3e-6, 1e-5), "float64": (1e-7, 1e-7),
    "complex64": (1.3e-6, 1e-5), "complex128": (1e-7, 1e-7),
}


def default_tolerance(dtype_name: str) -> tuple[float, float]:
    """``(rtol, atol)`` for comparing values of ``dtype_name``; exact (zeros) for integers and bool.

    >>> default_tolerance("float32")
    (1.3e-06, 1e-05)
    >>> default_tolerance("int64")
    (0.0, 0.0)
    """
    return _TOLERANCES.get(dtype_name, (0.0, 0.0))


def _host(x: Any) -> tuple[Any, str]:
    """``x`` as a NumPy array, and the name of its dtype (a ferro tensor keeps its own, e.g. bfloat16)."""
    import numpy as np

    from .._core.tensor import Tensor  # the public ferro.Tensor
    if isinstance(x, Tensor):
        return np.asarray(x.detach().numpy()), x.dtype.name
    a = np.asarray(x)
    return a, a.dtype.name


def _widen(a: Any) -> Any:
    import numpy as np
    if a.dtype.kind == "b":
        return a
    return a.astype(np.complex128 if np.iscomplexobj(a) else np.float64)


def _fmt(x: Any, kind: str) -> str:
    """One element for the error message, in its own kind (``x`` is widened)."""
    if kind == "b":
        return str(bool(x))
    if kind in "iu":
        return str(int(x.real))
    if kind == "c":
        return repr(complex(x))
    return f"{float(x.real):.9g}"


def assert_close(actual: Any, expected: Any, rtol: float | None = None, atol: float | None = None, *,
                 check_dtype: bool = True, check_shape: bool = True, equal_nan: bool = True,
                 msg: str = "") -> None:
    """Assert that a ferro tensor (or NumPy array, or scalar) matches a reference.

    ``expected`` is a NumPy array, a scalar or a ferro tensor. Unless told not
    to, the shapes and the dtypes (by name, so ``float32`` matches
    ``numpy.float32``) must be equal; then every element must satisfy
    ``|actual - expected| <= atol + rtol * |expected|``. ``rtol`` / ``atol``
    default to :func:`default_tolerance` of ``actual``'s dtype: loose for
    float16 / bfloat16, about 1e-5 for float32, 1e-7 for float64, exact for
    integers and bool. NaNs compare equal unless ``equal_nan=False``.

    The error names what differs: the shapes, the dtypes, or how many
    elements are off, the worst one's index, both values and the differences.
    ``msg`` is put in front of it.

    >>> import numpy as np
    >>> assert_close(np.float32([1.0, 2.0]), np.float32([1.0, 2.0000001]))
    """
    import numpy as np

    a, aname = _host(actual)
    e, ename = _host(expected)
    prefix = f"{msg}: " if msg else ""
    if check_shape and a.shape != e.shape:
        raise AssertionError(f"{prefix}shape mismatch: actual {list(a.shape)}, expected {list(e.shape)}")
    if check_dtype and aname != ename:
        raise AssertionError(f"{prefix}dtype mismatch: actual {aname}, expected {ename}")
    r0, a0 = default_tolerance(aname)
    rtol = r0 if rtol is None else rtol
    atol = a0 if atol is None else atol
    af, ef = _widen(a), _widen(e)
    try:
        af, ef = np.broadcast_arrays(af, ef)
    except ValueError:
        raise AssertionError(f"{prefix}shapes do not broadcast: actual {list(a.shape)}, "
                             f"expected {list(e.shape)}") from None
    ok = np.isclose(af, ef, rtol=rtol, atol=atol, equal_nan=equal_nan)
    if ok.all():
        return
    with np.errstate(all="ignore"):
        diff = np.abs(af.astype(np.complex128) - ef.astype(np.complex128)).real
        rel = diff / np.abs(ef.astype(np.complex128)).real
    bad = ~ok
    # the worst offender: a NaN/inf mismatch first, else the largest absolute difference
    score = np.where(bad, np.nan_to_num(diff, nan=np.inf, posinf=np.inf), -1.0)
    where = np.unravel_index(int(np.argmax(score)), score.shape) if score.ndim else ()
    idx = list(int(i) for i in where)
    raise AssertionError(
        f"{prefix}values differ: {int(bad.sum())} of {bad.size} elements are not close "
        f"(dtype {aname}, rtol={rtol:g}, atol={atol:g})\n"
        f"  worst at index {idx}: actual {_fmt(af[where], a.dtype.kind)}, expected {_fmt(ef[where], e.dtype.kind)}\n"
        f"  greatest abs diff {np.nanmax(np.where(bad, diff, 0.0)):.6g}, "
        f"greatest rel diff {np.nanmax(np.where(bad & np.isfinite(rel), rel, 0.0)):.6g}\n"
        f"actual:\n{a}\nexpected:\n{e}")
