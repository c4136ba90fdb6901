"""The kernels that need no OpenCL C: allocation and filling.

They use the runtime's own command (``clEnqueueFillBuffer``), so nothing is
compiled and ``ferro.zeros(3, device="opencl")`` works. The compiled kernels,
from ``.cl`` sources, come with the OpenCL issue.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ferro._dtypes import DType

__all__ = ["command_kernels"]


def command_kernels(queue: Any, native_dtype: Callable[[DType], Any]) -> dict[str, Callable[..., Any]]:
    """``empty`` and ``full`` on ``queue``'s device."""
    import numpy as np
    import pyopencl as cl
    import pyopencl.array as cla

    def empty(shape: tuple[int, ...], dtype: DType) -> Any:
        return cla.empty(queue, shape, native_dtype(dtype))

    def full(shape: tuple[int, ...], value: Any, dtype: DType) -> Any:
        out = cla.empty(queue, shape, native_dtype(dtype))
        if out.nbytes:
            # NumPy converts the value, exactly as the CPU backend does; its bytes are the fill pattern.
            pattern = np.full(1, value, dtype=out.dtype)
            cl.enqueue_fill_buffer(queue, out.base_data, pattern, out.offset, out.nbytes)
        return out

    return {"empty": empty, "full": full}
