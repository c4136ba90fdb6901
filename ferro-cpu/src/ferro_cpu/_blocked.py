"""Elementwise kernels run over flat blocks of a few hundred kilobytes, with scratch arrays kept per thread.

A kernel of several NumPy passes (gelu's erf, silu's backward) over a large array reads and writes it from
memory once per pass; run block by block, every pass but the first finds its block in the L2 cache, and the
scratch arrays of one block stay allocated for the next call (a fresh large temporary would page-fault).
Arrays of several blocks run their blocks on the backend's threads (:mod:`._threads`), each with its own scratch.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from ._threads import run, slots

__all__ = ["BLOCK", "block_runner"]

#: Elements per block of the blocked passes (four float32 arrays of this size stay in a 1 MiB L2).
BLOCK = 1 << 16


def block_runner(np: Any, pool: Any, scratches: int = 3, least: int | None = None) -> Callable[..., Any]:
    """``blocked(fn, arrays, *params)``: ``fn(*blocks_of_arrays, out_block, *params, *scratch_blocks)`` over
    flat blocks of :data:`BLOCK` elements of the equally shaped ``arrays``, into a new array (from ``pool``)
    of the last one's shape and dtype, which it returns. ``fn`` gets ``scratches`` scratch blocks; arrays of
    ``least`` blocks or more (None: ``_threads.MIN_BLOCKS``) run them on several threads (``_threads.slots``)."""
    kept = threading.local()  # per thread: the scratch blocks of each dtype

    def scratch(dtype: Any) -> tuple[Any, ...]:
        table = getattr(kept, "blocks", None)
        if table is None:
            table = kept.blocks = {}
        got = table.get(dtype)
        if got is None:
            got = table[dtype] = tuple(np.empty(BLOCK, dtype) for _ in range(scratches))
        return got

    def blocked(fn: Callable[..., None], arrays: tuple[Any, ...], *params: Any) -> Any:
        x = arrays[-1]
        out = pool.empty(x.shape, x.dtype)
        flat = out.reshape(-1)
        src = [np.ascontiguousarray(a).reshape(-1) for a in arrays]
        n = flat.size
        dt = x.dtype

        def nth(j: int, slot: int) -> None:
            lo = j * BLOCK
            hi = min(lo + BLOCK, n)
            m = hi - lo
            fn(*(a[lo:hi] for a in src), flat[lo:hi], *params, *(t[:m] for t in scratch(dt)))
        blocks = -(-n // BLOCK)
        run(nth, blocks, slots(blocks, least))
        return out
    return blocked
