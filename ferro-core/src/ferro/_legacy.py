"""PyTorch's legacy typed tensor classes: ``ferro.FloatTensor(3, 4)``, ``ferro.LongTensor([1, 2])``,
``isinstance(x, ferro.FloatTensor)``.

Each is a constructor for ``ferro.Tensor`` of its dtype (sizes give an uninitialized tensor, data a
tensor of it) and an ``isinstance`` test for a tensor of that dtype on the CPU, as in PyTorch.

>>> import ferro
>>> x = ferro.FloatTensor([1, 2])
>>> x.dtype, isinstance(x, ferro.FloatTensor), isinstance(x, ferro.LongTensor)
(ferro.float32, True, False)
"""

from __future__ import annotations

from typing import Any

from ._api import Size, Tensor, empty, tensor
from ._core import dtypes as _dt

__all__ = ["TYPED", "typed_tensor_classes", "legacy_new"]

#: class name -> dtype, as PyTorch names them.
TYPED: dict[str, _dt.DType] = {
    "FloatTensor": _dt.float32, "DoubleTensor": _dt.float64, "HalfTensor": _dt.float16,
    "BFloat16Tensor": _dt.bfloat16, "ByteTensor": _dt.uint8, "CharTensor": _dt.int8, "ShortTensor": _dt.int16,
    "IntTensor": _dt.int32, "LongTensor": _dt.int64, "BoolTensor": _dt.bool_,
}


class _TypedMeta(type):
    """Calls make a ferro.Tensor of the class's dtype; ``isinstance`` checks a tensor's dtype and device."""

    dtype: _dt.DType

    def __call__(cls, *args: Any, device: Any = None) -> Tensor:  # type: ignore[override]
        return Tensor(*args, dtype=cls.dtype, device=device)

    def __instancecheck__(cls, obj: object) -> bool:
        return isinstance(obj, Tensor) and obj.dtype is cls.dtype and obj.device.type == "cpu"


def typed_tensor_classes() -> dict[str, type]:
    """One class per entry of :data:`TYPED`."""
    return {name: _TypedMeta(name, (), {"dtype": dtype, "__doc__": f"``ferro.Tensor`` of dtype {dtype.name} "
                                        f"(PyTorch's legacy ``{name}``)", "__module__": "ferro"})
            for name, dtype in TYPED.items()}


def legacy_new(self: Tensor, *args: Any, dtype: Any = None, device: Any = None) -> Tensor:
    """``x.new(3, 4)`` / ``x.new(data)``: PyTorch's legacy constructor, in ``x``'s dtype and on its device
    (``new_empty`` / ``new_tensor`` are the current forms)."""
    dtype, device = dtype or self.dtype, device or self.device
    if not args:
        return empty(0, dtype=dtype, device=device)
    if isinstance(args[0], Size) or all(isinstance(a, int) and not isinstance(a, bool) for a in args):
        return empty(*args, dtype=dtype, device=device)
    if len(args) > 1:
        raise TypeError(f"new(): expected data or the sizes of a new tensor, got {len(args)} arguments that are not "
                        "all ints")
    return tensor(args[0], dtype=dtype, device=device)
