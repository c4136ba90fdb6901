"""The CPU backend's threads: NumPy's BLAS pool, sized per product, and a small pool for the blocked kernels.

``ferro.set_num_threads(n)`` (``ferro/_core/threads.py``) reaches both:

* BLAS: OpenBLAS threads every product above about 64x64x64, and the wake-up of its threads costs
  milliseconds whenever the machine has no idle core (a 1024x128x128 product, 0.14 ms on one thread, measured
  at 7 ms on two, 2 shared cores). ferro-cpu keeps NumPy's OpenBLAS pool at one thread and raises it to ``n``
  only around products of at least :data:`PRODUCT_WORK` multiply-adds (:func:`products`), where the second
  thread's gain outweighs a late wake-up. NumPy's own products in the same process run on one thread too once
  ferro-cpu has loaded (``threadpoolctl`` resizes the pool for them). Where NumPy's BLAS is not OpenBLAS, the
  pool keeps the size ``threadpoolctl`` gives it.
* :func:`run`: the row kernels (softmax, log_softmax, layer_norm and their backward kernels, ``_rows.py``) and
  the flat blocked kernels (gelu, silu, sigmoid, ``_blocked.py``) run their blocks on up to ``n`` threads
  (the caller and ``n - 1`` workers) when the array holds at least :data:`MIN_BLOCKS` blocks. NumPy releases
  the GIL inside its loops, so blocks of a few hundred kilobytes run side by side. Blocks are claimed one at a
  time: a worker that wakes late finds them taken, and the caller waits only for blocks a worker has begun.
  Every block computes what it computes on one thread, so results are the same bit for bit.
"""

from __future__ import annotations

import ctypes
import glob
import itertools
import os
import queue
import threading
from collections.abc import Callable
from typing import Any

import numpy as np

from ferro._core import threads as _core_threads

__all__ = ["PRODUCT_WORK", "MIN_BLOCKS", "THREADED_KERNELS", "products", "slots", "run", "counts", "setup"]

#: Multiply-adds (m * n * k) from which a product runs on ``get_num_threads()`` BLAS threads (about 1 ms on one
#: thread): below it one thread, whose time no late wake-up of a second can stretch.
PRODUCT_WORK = 1 << 27
#: Blocks (of ``_rows.BLOCK_BYTES`` / ``_blocked.BLOCK``) from which a blocked kernel runs on several threads.
MIN_BLOCKS = 4
#: The kernels that run their blocks on several threads (``ferro info`` lists them).
THREADED_KERNELS = ("softmax", "softmax_backward", "log_softmax", "log_softmax_backward", "layer_norm_forward",
                    "layer_norm_backward", "gelu", "gelu_backward", "silu", "silu_backward", "sigmoid",
                    "matmul and linear (BLAS, from PRODUCT_WORK multiply-adds)")

#: How often the threaded paths ran (tests read it): "blocks" (a kernel's blocks on several threads),
#: "products" (a product on several BLAS threads).
counts: dict[str, int] = {"blocks": 0, "products": 0}

get_num_threads = _core_threads.get_num_threads


# -- BLAS ------------------------------------------------------------------------------------------------------

def _openblas_setter() -> tuple[Callable[[int], Any] | None, str | None]:
    """OpenBLAS's ``openblas_set_num_threads`` in the library NumPy loaded (a C call, ~0.2 us) and the library's
    path, or Nones."""
    base = os.path.dirname(np.__file__)
    names = [p for d in (os.path.join(base, os.pardir, "numpy.libs"), os.path.join(base, ".dylibs"))
             for p in glob.glob(os.path.join(d, "*openblas*"))]
    for path in names:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for sym in ("scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads",
                    "openblas_set_num_threads64_", "openblas_set_num_threads"):
            fn = getattr(lib, sym, None)
            if fn is not None:
                fn.argtypes, fn.restype = [ctypes.c_int], None
                return fn, os.path.realpath(path)
    return None, None


#: "set": the setter (None: not OpenBLAS), "path": its library, "now": the pool's size as last set
_blas: dict[str, Any] = {}


def _blas_threads(n: int) -> None:
    setter = _blas.get("set")
    if setter is not None and _blas.get("now") != n:
        setter(n)
        _blas["now"] = n


def products(work: int, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)``, a product of ``work`` multiply-adds: on ``get_num_threads()`` BLAS threads from
    :data:`PRODUCT_WORK` on, else on one."""
    if work < PRODUCT_WORK or (n := get_num_threads()) == 1 or _blas.get("set") is None:
        return fn(*args, **kwargs)
    counts["products"] += 1
    _blas_threads(n)
    try:
        return fn(*args, **kwargs)
    finally:
        _blas_threads(1)


def _limited(n: int) -> None:
    """After ``ferro.set_num_threads(n)`` (which ``threadpoolctl`` may have applied to every pool): BLAS back to
    one thread outside :func:`products`; the block pool takes ``n`` at its next call."""
    _blas.pop("now", None)
    _blas_threads(1)


def setup() -> None:
    """Once, when the backend loads: find OpenBLAS, set its pool to one thread, follow ``set_num_threads``."""
    if "set" in _blas:
        return
    _blas["set"], _blas["path"] = _openblas_setter()
    _blas_threads(1)
    _core_threads.subscribe(_limited)


# -- the block pool ----------------------------------------------------------------------------------------------

class _Job:
    """``fn(task, slot)`` for tasks 0..tasks-1, each claimed by one thread (``slot``: 0 the caller, then 1...)."""

    __slots__ = ("bufsize", "claim", "done", "err", "error", "fn", "left", "lock", "tasks")

    def __init__(self, fn: Callable[[int, int], None], tasks: int) -> None:
        self.fn, self.tasks = fn, tasks
        self.claim = itertools.count().__next__  # (atomic under the GIL)
        self.left = tasks
        self.lock = threading.Lock()
        self.done = threading.Event()
        self.error: BaseException | None = None
        self.err, self.bufsize = np.geterr(), np.getbufsize()  # the caller's NumPy settings, for the workers

    def work(self, slot: int) -> None:
        while (i := self.claim()) < self.tasks:
            try:
                self.fn(i, slot)
            except BaseException as e:  # re-raised by the caller
                if self.error is None:
                    self.error = e
            with self.lock:
                self.left -= 1
                if not self.left:
                    self.done.set()


def _worker(jobs: queue.SimpleQueue[tuple[_Job, int]]) -> None:
    while True:
        job, slot = jobs.get()
        with np.errstate(**job.err):
            old = np.getbufsize()
            np.setbufsize(job.bufsize)
            try:
                job.work(slot)
            finally:
                np.setbufsize(old)


_workers: list[queue.SimpleQueue[tuple[_Job, int]]] = []
_start = threading.Lock()


def _queues(k: int) -> list[queue.SimpleQueue[tuple[_Job, int]]]:
    """``k`` workers' queues, starting the workers missing (daemon threads, kept for the process)."""
    if len(_workers) < k:
        with _start:
            while len(_workers) < k:
                q: queue.SimpleQueue[tuple[_Job, int]] = queue.SimpleQueue()
                threading.Thread(target=_worker, args=(q,), name=f"ferro-cpu-{len(_workers) + 1}",
                                 daemon=True).start()
                _workers.append(q)
    return _workers[:k]


def slots(blocks: int) -> int:
    """The threads a kernel of ``blocks`` blocks runs on: ``get_num_threads()`` from :data:`MIN_BLOCKS` blocks on
    (at most one per block), else 1. Kernels allocate one scratch per slot."""
    if blocks < MIN_BLOCKS:
        return 1
    return min(get_num_threads(), blocks)


def run(fn: Callable[[int, int], None], tasks: int, threads: int) -> None:
    """``fn(task, slot)`` for every task in 0..tasks-1 on ``threads`` threads (from :func:`slots`); ``slot`` tells
    the thread (0: the caller), for its scratch. Errors are raised here."""
    if threads <= 1:
        for i in range(tasks):
            fn(i, 0)
        return
    counts["blocks"] += 1
    job = _Job(fn, tasks)
    for slot, q in enumerate(_queues(threads - 1), 1):
        q.put((job, slot))
    job.work(0)
    job.done.wait()
    if job.error is not None:
        raise job.error
