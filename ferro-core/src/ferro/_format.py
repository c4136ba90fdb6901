"""PyTorch-like ``repr`` of tensors."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._dtypes import bool_, get_default_dtype, int64

if TYPE_CHECKING:
    from ._tensor import Tensor

__all__ = ["format_tensor"]


def format_tensor(t: Tensor) -> str:
    """``tensor([...], dtype=..., device=..., grad_fn=<...>)`` as PyTorch prints it."""
    import numpy as np
    arr = t._device.backend.to_numpy(t._data)
    d = t._dtype
    prefix = "tensor("
    opts: dict[str, object] = {"separator": ", ", "prefix": prefix, "max_line_width": 80, "threshold": 1000,
                               "edgeitems": 3}
    if d.is_floating_point:
        arr = arr.astype(np.float64)
        finite = arr[np.isfinite(arr)]
        if finite.size and np.all(finite == np.round(finite)) and np.abs(finite).max() < 1e8:
            opts["formatter"] = {"float": lambda v: f"{v:.0f}." if np.isfinite(v) else str(v).replace("inf", "inf")}
        elif finite.size and _scientific(np.abs(finite[finite != 0])):
            opts["formatter"] = {"float": lambda v: f"{v:.4e}"}
        else:
            opts["formatter"] = {"float": lambda v: f"{v:.4f}"}
    body = np.array2string(arr, **opts)  # type: ignore[arg-type]
    extras = []
    if t._device.type != "cpu":
        extras.append(f"device='{t._device}'")
    show_dtype = d not in (get_default_dtype(), int64, bool_) or (arr.size == 0 and d is not get_default_dtype())
    if show_dtype:
        extras.append(f"dtype={d!r}")
    if t.grad_fn is not None:
        extras.append(f"grad_fn=<{t.grad_fn.type_name}>")
    elif t._rg:
        extras.append("requires_grad=True")
    return prefix + body + "".join(", " + e for e in extras) + ")"


def _scientific(nonzero: object) -> bool:
    # PyTorch's rule: scientific notation when values span more than 1000x or leave [1e-4, 1e8).
    import numpy as np
    a = np.asarray(nonzero)
    if not a.size:
        return False
    lo, hi = a.min(), a.max()
    return bool(hi / lo > 1000 or hi >= 1e8 or lo < 1e-4)
