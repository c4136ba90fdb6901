"""The CPU backend's threads: NumPy's BLAS pool kept at one, and a small pool for blocked kernels and products.

``ferro.set_num_threads(n)`` (``ferro/_core/threads.py``) reaches both:

* BLAS: OpenBLAS threads every product above about 64x64x64, and its threads' wake-up costs milliseconds
  whenever the machine has no idle core (a 1024x128x128 product, 0.14 ms on one thread, measured at 7 ms on
  two, 2 shared cores): the caller waits for a thread that does not run. ferro-cpu keeps NumPy's OpenBLAS
  pool at one thread and splits the products of matmul and linear of at least :data:`SPLIT_WORK`
  multiply-adds itself (:func:`matmul`): into pieces along the rows, the columns or the stack, run by the
  block pool below, where a worker that wakes late finds the pieces taken by the caller instead of stalling
  it. NumPy's own products in the same process run on one thread too once ferro-cpu has loaded
  (``threadpoolctl`` resizes the pool for them). Where NumPy's BLAS is not OpenBLAS, its pool keeps the size
  ``threadpoolctl`` gives it.
* :func:`run`: the row kernels (softmax, log_softmax, layer_norm and their backward kernels, ``_rows.py``) and
  the flat blocked kernels (gelu, silu, sigmoid, ``_blocked.py``) run their blocks on up to ``n`` threads
  (the caller and ``n - 1`` workers) when the array holds at least :data:`MIN_BLOCKS` blocks. NumPy releases
  the GIL inside its loops, so blocks of a few hundred kilobytes run side by side. Blocks are claimed one at a
  time: a worker that wakes late finds them taken, and the caller waits only for blocks a worker has begun.
  Every block computes what it computes on one thread, so results are the same bit for bit. (A split product
  is not: BLAS sums a piece's products in another order than the whole's, as its own threads do; the pieces
  do not depend on the number of threads nor on the machine's load, so every count above one gives the same
  bits, and a product split while no core is idle runs its pieces on the calling thread.)
* The elementwise ufunc calls of 4 MiB of output and more (``_split.py``) cut their output into pieces run
  by the same pool, each piece by the loop one thread runs: the same bits.

A second thread gains only where a core is free: on a machine whose cores are all busy with other work, the
caller ends up waiting for a worker the scheduler runs late (a matmul split in two measured 1.6-3x slower
than on one thread, 2 cores at a load of 3). So both run on as many threads as the machine had cores idle
over the last :data:`LOOK` seconds (``/proc/stat``, where there is one), or busy with this process's other
threads, at most ``get_num_threads()``; :data:`follow_load` False takes ``get_num_threads()`` as it is. The
process's own threads count as free because the program waits on the op that asks: these workers, and the
threads of another library's pool in the same program (PyTorch's, in ``ferro bench``'s interleaved rounds),
which ran before the op, not beside it. Other processes' work is what the look is for.
"""

from __future__ import annotations

import ctypes
import itertools
import os
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from ferro._core import threads as _core_threads

__all__ = ["SPLIT_WORK", "MIN_BLOCKS", "COSTLY_BLOCKS", "THREADED_KERNELS", "matmul", "slots", "run",
           "counts", "setup"]

#: Multiply-adds (m * n * k) from which a product is split over the threads (about 0.15 ms on one thread).
SPLIT_WORK = 1 << 24
#: Multiply-adds of a piece at least, and the most pieces of a product: on one thread, 8 pieces of 700x128x1000
#: take 1.15x the whole product's time, 16 pieces 1.24x (each piece packs the other operand again).
PIECE_WORK, MAX_PIECES = 1 << 23, 8
#: Blocks (of ``_rows.BLOCK_BYTES`` / ``_blocked.BLOCK``) from which a blocked kernel runs on several threads:
#: below, the GIL's hand-overs between the threads' NumPy calls cost more than the second thread gives. The
#: calling thread's CPU time at 2 threads over 1 (what the wall time follows where the worker has a core):
#: 8 blocks, forward + backward: softmax (32, 4, 64, 64) 0.85-0.91, layer_norm 4096x128 0.70, silu 0.73,
#: sigmoid 0.77, log_softmax 700x1000 (11 blocks) 0.75; 4 blocks: 1.2-1.8 (softmax in wall time, 4 blocks
#: 1.18x, 8: 0.97x, 16: 0.84x).
MIN_BLOCKS = 8
#: Blocks from which a kernel of many NumPy passes over each block (gelu's, ``_erf.py``) runs on several threads:
#: its blocks cost enough that the hand-overs pay from 4 on (gelu forward + backward of 1024 x 256 float32, 4
#: blocks: the caller's CPU time 0.64-0.84x its one-thread time; softmax, silu, sigmoid, layer_norm: 1.2-1.8x).
COSTLY_BLOCKS = 4
#: Seconds between two looks at the machine's idle time.
LOOK = 0.1
#: Whether the threads follow the machine's idle cores (see the module's docstring).
follow_load = True

#: The kernels that run their blocks on several threads (``ferro info`` lists them).
THREADED_KERNELS = ("softmax", "softmax_backward", "log_softmax", "log_softmax_backward", "layer_norm_forward",
                    "layer_norm_backward", "gelu", "gelu_backward", "silu", "silu_backward", "sigmoid",
                    "matmul", "linear_forward", "linear_backward", "elementwise ufuncs of 4 MiB and more")

#: How often the threaded paths ran (tests read it): "blocks" (a kernel's blocks on several threads),
#: "products" (a product split over several threads), "elementwise" (a ufunc's pieces, ``_split.py``).
counts: dict[str, int] = {"blocks": 0, "products": 0, "elementwise": 0}

get_num_threads = _core_threads.get_num_threads


# -- the machine's idle cores -----------------------------------------------------------------------------------

_HZ = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
#: the last look: when, the machine's idle seconds, the looking thread and its process's other threads' CPU
#: seconds then, and the cores found free (one thread until a look)
_look: dict[str, float] = {"at": -1.0, "idle": 0.0, "thread": -1.0, "others": 0.0, "free": 0.0}


def _idle_seconds() -> float | None:
    """Idle CPU seconds of all the machine's CPUs since boot (``/proc/stat``), None where unknown."""
    try:
        with open("/proc/stat", "rb") as f:
            fields = f.readline().split()
        return (int(fields[4]) + int(fields[5])) / _HZ  # idle + iowait
    except (OSError, IndexError, ValueError):
        return None


def _others_seconds() -> float:
    """CPU seconds of the calling thread's process less its own: those of the process's other threads."""
    return time.process_time() - time.thread_time()


def _usable(n: int) -> int:
    """Of ``n`` threads asked for, as many as the cores idle, or busy with this process's other threads, since
    the last look."""
    if n == 1 or not follow_load:
        return n
    look = _look
    now = time.monotonic()
    if now - look["at"] >= LOOK:
        idle = _idle_seconds()
        if idle is None:
            look.update(at=float("inf"), free=float(n))  # no idle count here: every thread asked for
        else:
            thread, others = float(threading.get_ident()), _others_seconds()
            if look["at"] >= 0 and look["thread"] == thread:  # (another thread's look: its own time is unknown)
                look["free"] = (idle - look["idle"] + others - look["others"]) / (now - look["at"])
            look.update(at=now, idle=idle, thread=thread, others=others)
    return max(1, min(n, 1 + int(look["free"] + 0.25)))


# -- BLAS ------------------------------------------------------------------------------------------------------

def _openblas_setter() -> tuple[Callable[[int], Any] | None, str | None]:
    """OpenBLAS's ``openblas_set_num_threads`` in the library NumPy loaded (a C call, ~0.2 us) and the library's
    path, or Nones."""
    base = os.path.dirname(np.__file__)
    names = [os.path.join(d, f) for d in (os.path.join(base, os.pardir, "numpy.libs"), os.path.join(base, ".dylibs"))
             if os.path.isdir(d) for f in sorted(os.listdir(d)) if "openblas" in f]
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
#: The results of split products: pooled buffers once :func:`setup` has the backend's (a fresh array's pages,
#: faulted in by two threads, cost the caller more than its piece: 57 faults and 1.4x the time of a
#: (128, 64, 32) @ (128, 32, 64) product at 2 threads against none at 1)
_empty: list[Callable[..., Any]] = [np.empty]


def _blas_threads(n: int) -> None:
    setter = _blas.get("set")
    if setter is not None and _blas.get("now") != n:
        setter(n)
        _blas["now"] = n


def matmul(a: Any, b: Any, out: Any = None) -> Any:
    """``np.matmul(a, b, out=out)`` (``out``: None for a new array): products of 2-D arrays, or of stacks of one
    shape (3-D or more: the Transformer's attention products), of :data:`SPLIT_WORK` multiply-adds or more split
    over ``get_num_threads()`` threads (a stack along its first dim)."""
    n = b.shape[-1]
    work = a.size * n  # (stack x m x k) x n where the checks below pass
    nd = a.ndim
    if work < SPLIT_WORK or nd != b.ndim or nd < 2 or (threads := get_num_threads()) == 1:
        return np.matmul(a, b, out=out)
    m = a.shape[-2]
    if nd == 2:
        along, length = (0, m) if m >= n else (1, n)
    elif a.shape[:-2] != b.shape[:-2]:  # (a broadcast stack: NumPy's own loop)
        return np.matmul(a, b, out=out)
    else:
        along, length = 0, a.shape[0]
    pieces = min(length, work // PIECE_WORK, MAX_PIECES)
    if pieces < 2:
        return np.matmul(a, b, out=out)
    if out is None:
        out = _empty[0]((*a.shape[:-1], n), np.result_type(a, b))
    cut = [length * i // pieces for i in range(pieces + 1)]

    def nth(j: int, slot: int) -> None:
        lo, hi = cut[j], cut[j + 1]
        if nd > 2:
            np.matmul(a[lo:hi], b[lo:hi], out=out[lo:hi])
        elif along == 0:
            np.matmul(a[lo:hi], b, out=out[lo:hi])
        else:
            np.matmul(a, b[:, lo:hi], out=out[:, lo:hi])
    counts["products"] += 1
    # the pieces follow get_num_threads() alone, the threads running them the idle cores too: the bits of a
    # product do not depend on the machine's load
    run(nth, pieces, min(_usable(threads), pieces))
    return out


def _limited(n: int) -> None:
    """After ``ferro.set_num_threads(n)`` (which ``threadpoolctl`` may have applied to every pool): BLAS back to
    one thread outside :func:`products`; the block pool takes ``n`` at its next call."""
    _blas.pop("now", None)
    _blas_threads(1)


def setup(empty: Callable[[tuple[int, ...], Any], Any] | None = None) -> None:
    """Once, when the backend loads: find OpenBLAS, set its pool to one thread, follow ``set_num_threads``;
    ``empty(shape, dtype)`` (the backend's pooled buffers) makes the results of split products."""
    if empty is not None:
        _empty[0] = empty
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


def _worker(jobs: Any) -> None:  # (a queue.SimpleQueue of (job, slot))
    while True:
        job, slot = jobs.get()
        with np.errstate(**job.err):
            old = np.getbufsize()
            np.setbufsize(job.bufsize)
            try:
                job.work(slot)
            finally:
                np.setbufsize(old)
        job = None  # (its arrays, a split product's pooled result among them, go back while the worker waits)


_workers: list[Any] = []  # the workers' queues
_start = threading.Lock()
if hasattr(os, "register_at_fork"):  # a forked child has none of the workers: it starts its own
    os.register_at_fork(after_in_child=_workers.clear)


def _queues(k: int) -> list[Any]:
    """``k`` workers' queues, starting the workers missing (daemon threads, kept for the process)."""
    if len(_workers) < k:
        import queue  # (here: the time to a program's first op does not pay for it)
        with _start:
            while len(_workers) < k:
                q: Any = queue.SimpleQueue()
                threading.Thread(target=_worker, args=(q,), name=f"ferro-cpu-{len(_workers) + 1}",
                                 daemon=True).start()
                _workers.append(q)
    return _workers[:k]


def slots(blocks: int, least: int | None = None) -> int:
    """The threads a kernel of ``blocks`` blocks runs on: ``get_num_threads()`` from ``least`` blocks on (None:
    :data:`MIN_BLOCKS`; at most one per block, and as many as the machine has cores free), else 1. Kernels
    allocate one scratch per slot."""
    if blocks < (MIN_BLOCKS if least is None else least):
        return 1
    return _usable(min(get_num_threads(), blocks))


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
