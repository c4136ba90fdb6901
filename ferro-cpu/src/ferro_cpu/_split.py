"""Large elementwise ufunc calls split over the backend's threads (:mod:`._threads`).

``into(ufunc, args, out)`` is ``ufunc(*args, out=out)``; from :data:`SPLIT_BYTES` of output on, and where
``ferro.set_num_threads`` gives more than one thread, the output is cut into pieces of at least
:data:`PIECE_BYTES` (flat where every array operand is a C-contiguous array of the output's shape, else along
the first axis, broadcast operands passed whole) that the block pool runs, the caller and its workers claiming
one piece at a time. NumPy releases the GIL inside its loops, so the pieces run side by side; each element is
computed by the same loop as on one thread, so the result is the same bit for bit on any number of threads.

Below 4 MiB the split costs more than it gives. In a loop over one pair of arrays, float32 ``add`` / ``tanh``
took the calling thread 1.08 / 0.94 of its one-thread CPU time at 2 threads for 1 MiB, 0.87-0.90 / 0.80 for
2 MiB, 0.68-0.76 / 0.68 for 4 MiB (0.69 for 8 MiB); but inside the Transformer step, 2 MiB ``relu`` and
``mul`` split in two took 1.3x / 1.1-1.3x their one-thread time: their operands come from the previous op
and sit half in the other core's cache (docs/benchmarks.md, "Threads, third pass").
"""

from __future__ import annotations

from typing import Any

from ._threads import _usable, counts, get_num_threads, run

__all__ = ["SPLIT_BYTES", "PIECE_BYTES", "into"]

#: Output bytes from which an elementwise call is split over the threads.
SPLIT_BYTES = 1 << 22
#: Output bytes of a piece at least (and at most 8 pieces).
PIECE_BYTES, MAX_PIECES = 1 << 21, 8
#: Flat pieces start at multiples of this many elements (whole SIMD vectors and cache lines).
_ALIGN = 64


def _cuts(length: int, pieces: int, align: int) -> list[int]:
    return [min(length, (length * i // pieces) // align * align) if i < pieces else length for i in range(pieces + 1)]


def into(ufunc: Any, args: tuple[Any, ...], out: Any) -> Any:
    """``ufunc(*args, out=out)``, ``out``'s pieces on several threads where it is large (see the module)."""
    if out.nbytes < SPLIT_BYTES or (threads := get_num_threads()) == 1 or out.ndim == 0:
        return ufunc(*args, out=out)
    shape = out.shape
    flat = out.flags.c_contiguous and all(
        not hasattr(a, "shape") or (a.shape == shape and a.flags.c_contiguous) for a in args)
    if flat:
        length, align = out.size, _ALIGN
        target = out.reshape(-1)
        parts = [a.reshape(-1) if hasattr(a, "shape") else a for a in args]
        sliced = [hasattr(a, "shape") for a in args]
    else:
        length, align, target, parts = shape[0], 1, out, list(args)
        # an operand of the output's rank and first length is cut with it; one broadcast along it (first length 1,
        # or fewer dims) goes whole to every piece
        sliced = [getattr(a, "ndim", 0) == out.ndim and a.shape[0] == length for a in args]
    pieces = min(length // align, out.nbytes // PIECE_BYTES, MAX_PIECES)
    if pieces < 2:
        return ufunc(*args, out=out)
    cut = _cuts(length, pieces, align)

    def nth(j: int, slot: int) -> None:
        lo, hi = cut[j], cut[j + 1]
        ufunc(*(p[lo:hi] if s else p for p, s in zip(parts, sliced)), out=target[lo:hi])
    counts["elementwise"] = counts.get("elementwise", 0) + 1
    run(nth, pieces, _usable(min(threads, pieces)))
    return out
