"""``ferro.set_num_threads`` / ``get_num_threads`` (and the inter-op pair), as PyTorch offers them.

The number (until set: ``OMP_NUM_THREADS`` where set, else the CPUs this process may run on, as PyTorch's
count of the cores it is given) reaches the BLAS and OpenMP pools through threadpoolctl where it is installed,
and every backend that follows it (:func:`subscribe`; ferro-cpu sizes its BLAS products and its own block
threads by it, see ``ferro_cpu/_threads.py``). Inter-op threads: ferro runs ops in the calling thread, so
that number is only remembered.
"""

from __future__ import annotations

import os
from collections.abc import Callable

__all__ = ["set_num_threads", "get_num_threads", "set_num_interop_threads", "get_num_interop_threads", "subscribe"]

_threads: dict[str, int] = {}
_listeners: list[Callable[[int], None]] = []


def _given() -> int:
    """The default: ``OMP_NUM_THREADS`` where it holds a positive number, else the CPUs this process may use."""
    env = os.environ.get("OMP_NUM_THREADS", "")
    if env.strip().isdigit() and int(env) > 0:
        return int(env)
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:  # (no affinity on macOS / Windows)
        return os.cpu_count() or 1


def _positive(name: str, n: object) -> int:
    if not isinstance(n, int) or isinstance(n, bool) or n <= 0:
        raise ValueError(f"{name}: expected a positive number of threads, got {n!r}")
    return n


def set_num_threads(n: int) -> None:
    """Use ``n`` threads inside ops on the CPU (the BLAS and OpenMP pools, through threadpoolctl, and the
    backends that follow the number: ferro-cpu's large products and blocked kernels)."""
    _threads["intra"] = _positive("set_num_threads", n)
    try:  # optional: limits NumPy's BLAS / OpenMP pools where threadpoolctl is installed
        import threadpoolctl
    except ImportError:
        pass
    else:
        threadpoolctl.threadpool_limits(n)
    for fn in _listeners:
        fn(n)


def get_num_threads() -> int:
    """The number of threads used inside ops on the CPU: as set, else ``OMP_NUM_THREADS``, else the CPUs this
    process may run on."""
    n = _threads.get("intra")
    if n is None:
        n = _threads["intra"] = _given()
    return n


def subscribe(fn: Callable[[int], None]) -> None:
    """Call ``fn(n)`` after every ``set_num_threads(n)`` (a backend resizing its own pools)."""
    if fn not in _listeners:
        _listeners.append(fn)


def set_num_interop_threads(n: int) -> None:
    """Remember the number of threads between ops (ferro runs each op in the calling thread)."""
    _threads["inter"] = _positive("set_num_interop_threads", n)


def get_num_interop_threads() -> int:
    """The number given to :func:`set_num_interop_threads` (until set, as :func:`get_num_threads`)."""
    return _threads.get("inter") or _given()
