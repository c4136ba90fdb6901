"""``int8_matmul``: the int8 x int8 product that ferro's quantized Linear layers run, accumulated in int32.

Its kernel (of the same name, the contract's optional group ``quantized``) is each backend's own: NumPy
with int32 accumulation on cpu, a kernel of its own on OpenCL and CUDA. It has no decomposition: a backend
without the kernel raises ``UnsupportedOperationError`` (no silent round trip through floats). The Python
API over it (quantized tensors, ``quantize_dynamic``) is :mod:`ferro.quantization`, loaded on first use;
this record is registered with the other ops so that every device binds the kernel when it is first used.

>>> import ferro
>>> a = ferro.tensor([[1, -2], [3, 4]], dtype=ferro.int8)
>>> ferro.ops.int8_matmul(a, a)
tensor([[ -5, -10],
        [ 15,  10]], dtype=ferro.int32)
"""

from __future__ import annotations

from .._core.dtypes import int8
from .._core.modes import entry
from .._core.records import OpDef, register
from .._core.tensor import Tensor
from ..dispatch._dispatch import call
from ..errors import DTypeError, ShapeError

__all__ = ["int8_matmul"]

_NAME = "int8_matmul"


def _int8_matmul(input: Tensor, other: Tensor) -> Tensor:
    """``input @ other`` of int8 matrices (M, K) and (K, N), each product and the sums exact in int32."""
    for arg, t in (("input", input), ("other", other)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{_NAME}(): argument '{arg}' must be a Tensor, not {type(t).__name__}")
        if t._dtype is not int8:
            raise DTypeError(f"{_NAME}: argument '{arg}' must be int8, got {t._dtype}")
        if t.ndim != 2:
            raise ShapeError(f"{_NAME}: argument '{arg}' must be a 2-D tensor, got shape {list(t.shape)}")
    if input.shape[1] != other.shape[0]:
        raise ShapeError(f"{_NAME}: shapes {list(input.shape)} and {list(other.shape)} cannot be multiplied "
                         f"({input.shape[0]}x{input.shape[1]} and {other.shape[0]}x{other.shape[1]})")
    return call(_OP, input, other)


_OP = register(OpDef(_NAME, "quantized", "Matrix product of int8 matrices, accumulated and returned in int32.",
                     dtype_rule="int8_to_int32"))
#: The op's public function: its dispatch entry (``_core.modes``).
int8_matmul = _OP.fn = entry(_OP, _int8_matmul)
