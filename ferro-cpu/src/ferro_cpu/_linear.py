"""The fused ``linear`` on NumPy: ``linear_forward`` / ``linear_backward`` (signatures in
``ferro/backends/contract.py``; core's rule in ``ferro/_ops/fused.py`` calls them).

``linear`` decomposes into three ops (``weight.mT``, ``matmul``, ``+ bias``), each a graph node and, on the way
back, a transpose, two products and a reduction of the bias's broadcast. Here it is one GEMM over the rows of
all leading dimensions (the weight's transpose is BLAS's flag, not a copy) with the bias added in place into
the (pooled) result, and one backward that runs only the products asked for: ``dx = g @ w``, ``dw = g.T @ x``
(one GEMM over all rows: no per-batch products summed afterwards) and ``db`` the column sums of ``g``.
Float32 and float64 run as they are; ``x``, ``weight`` and ``bias`` are of one dtype (core checks). 16-bit inputs
are widened to float32 and the results rounded once (``_half.Half.kernel``): each kernel tests ``x``'s item size
itself, so a float32 call pays one comparison instead of the generic wrapper's loop over its arguments.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._pool import MIN_BYTES
from ._threads import matmul

__all__ = ["linear_kernels"]


def linear_kernels(np: Any, pool: Any, half: Any) -> dict[str, Callable[..., Any]]:
    """The fused linear kernels over NumPy ``np``, large results from ``pool``; ``half`` is the backend's
    16-bit tools."""
    add_reduce = np.add.reduce

    def rows(a: Any) -> Any:
        """``a`` as a matrix of its last axis' vectors (a view where the layout allows one)."""
        return a.reshape(-1, a.shape[-1])

    def linear_forward(x: Any, weight: Any, bias: Any) -> Any:
        size = x.itemsize  # (2: float16 or bfloat16, the only 2-byte dtypes core sends here)
        if size == 2:
            return wide_forward(x, weight, bias)
        shape = x.shape
        if len(shape) == 2 and shape[0] * weight.shape[0] * size < MIN_BYTES:
            out = x.dot(weight.T)  # a small matrix: ndarray.dot, the same GEMM without matmul's gufunc steps
        else:
            out_f = weight.shape[0]
            out = pool.empty((*shape[:-1], out_f), x.dtype)
            matmul(rows(x), weight.T, out.reshape(-1, out_f))
        if bias is not None:
            out += bias
        return out

    def linear_backward(grad: Any, x: Any, weight: Any, needs: tuple[bool, bool, bool]) -> tuple[Any, ...]:
        if x.itemsize == 2:
            return wide_backward(grad, x, weight, needs)
        g = rows(grad)
        dx = None
        if needs[0]:
            dx = pool.empty(x.shape, x.dtype)
            matmul(g, weight, dx.reshape(g.shape[0], weight.shape[1]))
        dw = matmul(g.T, rows(x)) if needs[1] else None
        db = add_reduce(g, axis=0) if needs[2] else None
        return dx, dw, db

    # (the widened call runs these same functions on float32 arrays)
    wide_forward = half.kernel(linear_forward, operands=3)
    wide_backward = half.kernel(linear_backward, operands=3)
    return {"linear_forward": linear_forward, "linear_backward": linear_backward}
