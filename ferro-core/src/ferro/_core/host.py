"""Host-side helpers: NumPy dtype mapping and converting Python data (imports NumPy lazily)."""

from __future__ import annotations

from typing import Any

from .dtypes import DType, bfloat16, bool_, by_name, get_default_complex_dtype, get_default_dtype, int64

__all__ = ["np", "numpy_dtype", "from_numpy_dtype", "infer"]


def np() -> Any:
    """The numpy module (imported on first use)."""
    import numpy
    return numpy


def numpy_dtype(dtype: DType) -> Any:
    """The NumPy dtype for a ferro dtype (bfloat16 from ml_dtypes)."""
    if dtype is bfloat16:
        import ml_dtypes
        return np().dtype(ml_dtypes.bfloat16)
    return np().dtype(dtype.name)


def from_numpy_dtype(npdtype: Any) -> DType:
    """The ferro dtype of a NumPy dtype; TypeError for one ferro lacks."""
    name = np().dtype(npdtype).name
    d = by_name.get(name)
    if d is None or name in ("int", "float", "long", "short", "half", "double"):
        raise TypeError(f"NumPy dtype {name} has no ferro equivalent; supported: "
                        "bool, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64, "
                        "complex64, complex128")
    return d


def _on_host(data: Any) -> Any:
    """Nested sequences with each tensor (on any device) replaced by its values as a NumPy array: building a
    tensor from them is an explicit copy, as ``torch.tensor([t0, t1])`` of CUDA scalars is."""
    if isinstance(data, (list, tuple)):
        return [_on_host(d) for d in data]
    to_host = getattr(data, "numpy", None)
    return to_host(force=True) if callable(to_host) and hasattr(data, "grad_fn") else data


def infer(data: Any, dtype: DType | None) -> tuple[Any, DType]:
    """Python data (scalars, nested lists, NumPy arrays) as a NumPy array and its ferro dtype.

    Python floats become the default float dtype, ints int64, bools bool and
    complex numbers complex64, as in PyTorch; NumPy arrays keep their dtype.
    """
    numpy = np()
    if isinstance(data, numpy.ndarray) or isinstance(data, numpy.generic):
        arr = numpy.asarray(data)
        d = dtype or from_numpy_dtype(arr.dtype)
    else:
        try:
            try:
                arr = numpy.asarray(data)
            except TypeError:  # tensors on a device in the sequence: their __array__ refuses an implicit copy
                arr = numpy.asarray(_on_host(data))
        except ValueError:
            arr = None  # ragged nested sequences
        if arr is None or arr.dtype == object:
            raise TypeError(f"cannot make a tensor from {type(data).__name__}: nested sequences must be "
                            "rectangular and hold numbers or tensors")
        if dtype is not None:
            d = dtype
        else:
            kind = arr.dtype.kind
            d = {"b": bool_, "i": int64, "u": int64, "f": get_default_dtype(),
                 "c": get_default_complex_dtype()}.get(kind)
            if d is None:
                raise TypeError(f"cannot make a tensor from data of NumPy kind {arr.dtype}")
    want = numpy_dtype(d)
    if arr.dtype != want:
        arr = arr.astype(want)
    return arr, d
