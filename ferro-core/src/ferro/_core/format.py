"""PyTorch-like ``repr`` of tensors.

A port of PyTorch's ``torch/_tensor_str.py`` (default print options:
precision 4, threshold 1000, edgeitems 3, linewidth 80) working on the
tensor's values as a NumPy array: every element is padded to one width,
floats are printed as integers (``1.``), fixed point or scientific by
PyTorch's rule, long rows wrap, large tensors are summarized with ``...``.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from .dtypes import bool_, get_default_complex_dtype, get_default_dtype, int64

if TYPE_CHECKING:
    from .tensor import Tensor

__all__ = ["format_tensor", "set_printoptions"]

PRECISION = 4
THRESHOLD = 1000
EDGEITEMS = 3
LINEWIDTH = 80
#: None: PyTorch's rule picks scientific notation; True / False: always / never.
SCI_MODE: bool | None = None

_PROFILES = {"default": (4, 1000, 3, 80), "short": (2, 1000, 2, 80), "full": (4, math.inf, 3, 80)}


def set_printoptions(precision: int | None = None, threshold: float | None = None, edgeitems: int | None = None,
                     linewidth: int | None = None, profile: str | None = None, sci_mode: bool | None = None) -> None:
    """How tensors print, as ``torch.set_printoptions``: digits after the point, how many elements before a
    tensor is summarized with ``...`` and how many it shows at each edge, the line width, a ``profile``
    (``'default'``, ``'short'``, ``'full'``) setting all four, and ``sci_mode`` (None: chosen per tensor)."""
    global PRECISION, THRESHOLD, EDGEITEMS, LINEWIDTH, SCI_MODE
    if profile is not None:
        if profile not in _PROFILES:
            raise ValueError(f"set_printoptions: profile must be one of {sorted(_PROFILES)}, got {profile!r}")
        PRECISION, THRESHOLD, EDGEITEMS, LINEWIDTH = _PROFILES[profile]
    if precision is not None:
        PRECISION = int(precision)
    if threshold is not None:
        THRESHOLD = threshold
    if edgeitems is not None:
        EDGEITEMS = int(edgeitems)
    if linewidth is not None:
        LINEWIDTH = int(linewidth)
    SCI_MODE = sci_mode


class _Formatter:
    """Width and notation shared by all elements of a tensor (PyTorch's ``_Formatter``)."""

    def __init__(self, values: Any, floating: bool) -> None:
        import numpy as np
        self.floating = floating
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        flat = values.reshape(-1)
        if not floating:
            for v in flat.tolist():
                self.max_width = max(self.max_width, len(str(v)))
            return
        flat = flat.astype(np.float64)
        finite = flat[np.isfinite(flat) & (flat != 0)]
        if finite.size == 0:
            return
        mag = np.abs(finite)
        lo, hi = float(mag.min()), float(mag.max())
        self.int_mode = bool(np.all(finite == np.ceil(finite)))
        self.sci_mode = hi / lo > 1000.0 or hi > 1.0e8 or lo < 1.0e-4 if SCI_MODE is None else SCI_MODE
        vals = finite.tolist()
        if self.sci_mode:
            self.max_width = max(len(f"{v:.{PRECISION}e}") for v in vals)
        elif self.int_mode:
            self.max_width = max(len(f"{v:.0f}") + 1 for v in vals)
        else:
            self.max_width = max(len(f"{v:.{PRECISION}f}") for v in vals)

    def format(self, value: Any) -> str:
        if self.floating:
            value = float(value)
            if self.sci_mode:
                ret = f"{value:{self.max_width}.{PRECISION}e}"
            elif self.int_mode:
                ret = f"{value:.0f}"
                if not (math.isinf(value) or math.isnan(value)):
                    ret += "."
            else:
                ret = f"{value:.{PRECISION}f}"
        else:
            ret = f"{value}"
        return (self.max_width - len(ret)) * " " + ret


def _summarized(a: Any) -> Any:
    """The elements a summarized print shows (PyTorch's ``get_summarized_data``)."""
    import numpy as np
    if a.ndim == 0:
        return a
    if a.ndim == 1:
        return np.concatenate([a[:EDGEITEMS], a[-EDGEITEMS:]]) if a.shape[0] > 2 * EDGEITEMS else a
    rows = list(range(EDGEITEMS)) + list(range(a.shape[0] - EDGEITEMS, a.shape[0])) \
        if a.shape[0] > 2 * EDGEITEMS else range(a.shape[0])
    return np.stack([_summarized(a[i]) for i in rows])


def _element(v: Any, f1: _Formatter, f2: _Formatter | None) -> str:
    if f2 is None:
        return f1.format(v)
    real = f1.format(v.real)
    imag = (f2.format(v.imag) + "j").lstrip()
    return real + imag if imag[0] in "+-" else real + "+" + imag


def _vector(a: Any, indent: int, summarize: bool, f1: _Formatter, f2: _Formatter | None) -> str:
    width = f1.max_width + 2 + (f2.max_width + 1 if f2 is not None else 0)
    per_line = max(1, math.floor((LINEWIDTH - indent) / width))
    if summarize and a.shape[0] > 2 * EDGEITEMS:
        data = ([_element(v, f1, f2) for v in a[:EDGEITEMS].tolist()] + [" ..."]
                + [_element(v, f1, f2) for v in a[-EDGEITEMS:].tolist()])
    else:
        data = [_element(v, f1, f2) for v in a.tolist()]
    lines = [", ".join(data[i:i + per_line]) for i in range(0, len(data), per_line)]
    return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"


def _nested(a: Any, indent: int, summarize: bool, f1: _Formatter, f2: _Formatter | None) -> str:
    if a.ndim == 0:
        return _element(a.item(), f1, f2)
    if a.ndim == 1:
        return _vector(a, indent, summarize, f1, f2)
    n = a.shape[0]
    if summarize and n > 2 * EDGEITEMS:
        parts = ([_nested(a[i], indent + 1, summarize, f1, f2) for i in range(EDGEITEMS)] + ["..."]
                 + [_nested(a[i], indent + 1, summarize, f1, f2) for i in range(n - EDGEITEMS, n)])
    else:
        parts = [_nested(a[i], indent + 1, summarize, f1, f2) for i in range(n)]
    return "[" + ("," + "\n" * (a.ndim - 1) + " " * (indent + 1)).join(parts) + "]"


def _body(a: Any, indent: int, floating: bool, is_complex: bool) -> str:
    summarize = a.size > THRESHOLD
    if is_complex:
        f1 = _Formatter(_summarized(a.real) if summarize else a.real, True)
        f2 = _Formatter(_summarized(a.imag) if summarize else a.imag, True)
        return _nested(a, indent, summarize, f1, f2)
    return _nested(a, indent, summarize, _Formatter(_summarized(a) if summarize else a, floating), None)


def _add_suffixes(text: str, suffixes: list[str], indent: int) -> str:
    out = [text]
    last_line = len(text) - text.rfind("\n") + 1
    for s in suffixes:
        if last_line + len(s) + 2 > LINEWIDTH:
            out.append(",\n" + " " * indent + s)
            last_line = indent + len(s)
        else:
            out.append(", " + s)
            last_line += len(s) + 2
    out.append(")")
    return "".join(out)


def format_tensor(t: Tensor) -> str:
    """``tensor([...], dtype=..., device=..., grad_fn=<...>)`` as PyTorch prints it."""
    import numpy as np
    arr = np.asarray(t._device.backend.to_numpy(t._data))
    d = t._dtype
    prefix = "tensor("
    indent = len(prefix)
    suffixes = []
    if t._device.type != "cpu":
        suffixes.append(f"device='{t._device}'")
    if arr.size == 0:
        if arr.ndim != 1:
            suffixes.append(f"size={tuple(arr.shape)}")
        if d is not get_default_dtype():
            suffixes.append(f"dtype={d!r}")
        body = "[]"
    else:
        if d not in (get_default_dtype(), get_default_complex_dtype(), int64, bool_):
            suffixes.append(f"dtype={d!r}")
        if d.is_floating_point and arr.dtype.kind != "f":  # bfloat16 (ml_dtypes) prints through float32
            arr = arr.astype(np.float32)
        body = _body(arr, indent, d.is_floating_point, d.is_complex)
    if t.grad_fn is not None:
        suffixes.append(f"grad_fn=<{t.grad_fn.type_name}>")
    elif t._rg:
        suffixes.append("requires_grad=True")
    return _add_suffixes(prefix + body, suffixes, indent)
