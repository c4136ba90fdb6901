"""The cyclic garbage collector held off while ferro builds what lives as long as the process.

Discovering the plugins (which imports NumPy and the backends) and binding the first device create tens of
thousands of objects and next to no garbage. The collector, which runs every few hundred allocations, would
scan them again and again for nothing (about 5 ms of the first op; collecting them once afterwards costs more,
10 to 20 ms). :class:`building` turns it off for the work, then moves what exists out of its sight
(``gc.freeze``): no collection now, and none of those objects scanned in every later one. ``import ferro``
does the same (``ferro/__init__.py``).

Freezing keeps what is alive then out of every later collection: a reference cycle among those objects that
becomes garbage later is never freed. So the collector first runs once over what is not frozen (no garbage of
the program's is frozen; at the first op a program has made little since ``import ferro`` froze the rest,
about 0.02 ms), and each kind of work does this once per process: the first plugin discovery, the first
device bound. Later ones (a second device, discovery again after ``reset()`` in tests) leave the collector
alone. No tensor exists before the first device binds, so none is frozen: ``gc.get_objects()``, through which
``ferro._compile`` finds the live tensors, leaves frozen objects out. In ``ferro.backends._registry``::

    with _state.lock, building("plugins"):
        ...  # import and register every plugin
"""

from __future__ import annotations

import gc
import threading
from types import TracebackType

__all__ = ["building"]

_lock = threading.Lock()
#: the kinds of work done once already (or under way)
_done: set[str] = set()


class building:  # noqa: N801 - used as a function: ``with building("plugins"):``
    """The collector off for the ``with`` block, then ``gc.freeze()`` and on again: the first time only for
    each ``kind`` of work, and only where the collector is on (a program that turned it off keeps it so)."""

    def __init__(self, kind: str) -> None:
        self._kind = kind
        self._acts = False

    def __enter__(self) -> None:
        with _lock:
            if self._kind in _done:
                return
            _done.add(self._kind)  # (also inside another kind's block, or where the program turned it off)
            if not gc.isenabled():
                return
            self._acts = True
            gc.disable()
            gc.collect()

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._acts:
            gc.freeze()
            gc.enable()
