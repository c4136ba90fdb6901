"""Index reads that refuse out-of-range indices: CuPy wraps them around silently.

``x[idx]`` with an integer array on CuPy reads ``idx % n`` where NumPy and
PyTorch raise, so ``gather``, ``index_select``, ``take`` and ``embedding``
(all written in ``getitem``) would return wrong rows. The ``getitem`` kernel
here checks the key's integer arrays against their dimensions first
(:func:`._fused.check_index_bounds`: one bool read back, only for keys with
integer arrays) and raises IndexError at once. The op being run is named in
the message by :class:`IndexLabels`: core calls ``name_deferred_errors`` with
the op and its argument before it queues the indexing kernel, and the next
checked kernel on that device takes the label.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

__all__ = ["IndexLabels", "checked_getitem"]


class IndexLabels:
    """The label (op and argument) of the indexing op about to run on each device, taken once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._labels: dict[int, str] = {}

    def name(self, index: int, label: str) -> None:
        """The next checked kernel on device ``index`` runs for ``label``."""
        with self._lock:
            self._labels[index] = label

    def take(self, index: int) -> str | None:
        """The label for device ``index`` (None: none was given), forgotten once taken."""
        with self._lock:
            return self._labels.pop(index, None)


def checked_getitem(xp: Any, generic: Callable[[Any, Any], Any], label: Callable[[], str | None]
                    ) -> Callable[[Any, Any], Any]:
    """``generic`` (``x[key]``) raising IndexError for an out-of-range integer index instead of wrapping it,
    named after ``label()`` (the op and argument that core named, if any)."""
    # Here, not at the top: the backend's constructor needs IndexLabels, and this module is imported with it
    # whenever ferro discovers its backends; the kernels wait for a CUDA device.
    from ._fused import check_index_bounds, has_index_arrays

    def getitem(x: Any, key: Any) -> Any:
        if has_index_arrays(key):
            check_index_bounds(xp, x, key, label())
        return generic(x, key)
    getitem.__wrapped__ = generic  # type: ignore[attr-defined]
    return getitem
