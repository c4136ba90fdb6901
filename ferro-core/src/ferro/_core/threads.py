"""``ferro.set_num_threads`` / ``get_num_threads`` (and the inter-op pair), as PyTorch offers them.

The CPU backend computes with NumPy, whose BLAS and OpenMP pools take the limit through threadpoolctl
where it is installed; without it the number is remembered and reported, and the pools keep their size.
Inter-op threads: ferro runs ops in the calling thread, so the number is only remembered.
"""

from __future__ import annotations

import os

__all__ = ["set_num_threads", "get_num_threads", "set_num_interop_threads", "get_num_interop_threads"]

_threads: dict[str, int] = {}


def _positive(name: str, n: object) -> int:
    if not isinstance(n, int) or isinstance(n, bool) or n <= 0:
        raise ValueError(f"{name}: expected a positive number of threads, got {n!r}")
    return n


def set_num_threads(n: int) -> None:
    """Use ``n`` threads inside ops on the CPU (the BLAS and OpenMP pools, through threadpoolctl)."""
    _threads["intra"] = _positive("set_num_threads", n)
    try:  # optional: limits NumPy's BLAS / OpenMP pools where threadpoolctl is installed
        import threadpoolctl
    except ImportError:
        return
    threadpoolctl.threadpool_limits(n)


def get_num_threads() -> int:
    """The number of threads used inside ops on the CPU (the number of CPUs until set)."""
    return _threads.get("intra") or os.cpu_count() or 1


def set_num_interop_threads(n: int) -> None:
    """Remember the number of threads between ops (ferro runs each op in the calling thread)."""
    _threads["inter"] = _positive("set_num_interop_threads", n)


def get_num_interop_threads() -> int:
    """The number given to :func:`set_num_interop_threads` (the number of CPUs until set)."""
    return _threads.get("inter") or os.cpu_count() or 1
