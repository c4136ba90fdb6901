"""Padding layers: ``ZeroPad``, ``ConstantPad``, ``ReflectionPad``, ``ReplicationPad`` and ``CircularPad``
in 1, 2 and 3 dimensions, one table over ``F.pad``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..._core.tensor import Tensor
from .. import functional as F  # noqa: N812 - the name PyTorch code uses
from .module import Module

__all__: list[str] = []  # filled from the table below


class _PadNd(Module):
    """Pads the last ``_n`` dims by ``padding`` (an int for every side, or (left, right, top, bottom, ...))."""

    _n: int
    _mode: str
    _value_arg = False  # ConstantPad takes value=; the others pad with zeros or by copying

    def __init__(self, padding: int | Sequence[int], value: float = 0.0) -> None:
        super().__init__()
        size = 2 * self._n
        pad = (padding,) * size if isinstance(padding, int) else tuple(padding)
        if len(pad) != size:
            raise ValueError(f"{type(self).__name__}: padding must be an int or {size} ints, got {padding!r}")
        self.padding: tuple[int, ...] = pad
        self.value = value

    def forward(self, input: Tensor) -> Tensor:
        """``input`` padded."""
        if input.ndim not in (self._n + 1, self._n + 2):
            raise ValueError(f"{type(self).__name__}: expected {self._n + 1}D or {self._n + 2}D input, got "
                             f"{input.ndim}D input of shape {list(input.shape)}")
        return F.pad(input, list(self.padding), mode=self._mode, value=self.value)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}" if self._value_arg else f"{self.padding}"


def _make(name: str, n: int, mode: str, value_arg: bool, doc: str) -> type[_PadNd]:
    attrs: dict[str, Any] = {"_n": n, "_mode": mode, "_value_arg": value_arg, "__module__": __name__,
                             "__doc__": f"{doc} over the last {n} dim(s); ``padding`` is an int or {2 * n} ints "
                                        "(last dim first, before then after)."}
    # PyTorch's signatures: ConstantPad needs value, the others take none.
    def init_with_value(self: _PadNd, padding: int | Sequence[int], value: float) -> None:
        _PadNd.__init__(self, padding, value)

    def init_plain(self: _PadNd, padding: int | Sequence[int]) -> None:
        _PadNd.__init__(self, padding)

    attrs["__init__"] = init_with_value if value_arg else init_plain
    return type(name, (_PadNd,), attrs)


_TABLE = [("ZeroPad", "constant", False, "Zero padding"), ("ConstantPad", "constant", True, "Padding with ``value``"),
          ("ReflectionPad", "reflect", False, "Padding by reflection at the edge"),
          ("ReplicationPad", "replicate", False, "Padding by repeating the edge"),
          ("CircularPad", "circular", False, "Padding by wrapping around")]

for _base, _mode, _value_arg, _doc in _TABLE:
    for _n in (1, 2, 3):
        _name = f"{_base}{_n}d"
        globals()[_name] = _make(_name, _n, _mode, _value_arg, _doc)
        __all__.append(_name)
