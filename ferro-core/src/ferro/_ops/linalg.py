"""Matrix products: matmul (batched, broadcasting), mm, bmm, mv, dot."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._core.dtypes import result_type
from .._core.layouts import LayoutTensor
from .._core.records import OpDef, ops, register
from .._core.tensor import Tensor
from ..dispatch._dispatch import check_devices, finish, kernel_for, run_elsewhere
from ..errors import ShapeError
from .elementwise import _c

__all__ = ["matmul", "mm", "bmm", "mv", "dot"]


# For complex operands the gradients use the conjugate transposes (PyTorch's convention: g @ y^H, x^H @ g).
def _grad_x(g: Tensor, x: Tensor, y: Tensor) -> Tensor:
    y = _c(y)
    if x.ndim == 1 and y.ndim == 1:
        return g * y
    if y.ndim == 1:
        return g.unsqueeze(-1) * y
    if x.ndim == 1:
        return (g.unsqueeze(-2) @ y.mT).squeeze(-2)
    return g @ y.mT


def _grad_y(g: Tensor, x: Tensor, y: Tensor) -> Tensor:
    x = _c(x)
    if x.ndim == 1 and y.ndim == 1:
        return g * x
    if y.ndim == 1:
        return (x.mT @ g.unsqueeze(-1)).squeeze(-1)
    if x.ndim == 1:
        return x.unsqueeze(-1) * g.unsqueeze(-2)
    if y.ndim == 2:
        if x.ndim > 2:  # one matrix for a stack (a linear layer on (N, T, F)): one product, not a sum
            x, g = x.reshape(-1, x.shape[-1]), g.reshape(-1, g.shape[-1])
        return (g.mT @ x).mT if _transpose_view(y) else x.mT @ g
    return x.mT @ g


def _transpose_view(y: Tensor) -> bool:
    """Whether ``y`` is the transpose view of a matrix (a linear layer's ``weight.mT``). Its gradient is then the
    transpose of a row-major product, so that the matrix's own gradient comes out row-major as the matrix is: an
    optimizer's update of a column-major gradient on a row-major parameter is several times slower."""
    rec = y._view
    return rec is not None and len(rec[0]) == 1 and rec[0][0][0] == "permute" and rec[0][0][1].get("dims") == (1, 0)


_MATMUL = register(OpDef("matmul", "linalg", "Matrix product with NumPy's batching and broadcasting rules.",
                         dtype_rule="numeric", saves=(0, 1), grads=(_grad_x, _grad_y)))


def matmul(x: Tensor, y: Tensor) -> Tensor:
    """Matrix product of ``x`` and ``y`` (1-D operands are vectors; leading dims broadcast)."""
    return _product("matmul", x, y)


def _product(op: str, x: Tensor, y: Tensor) -> Tensor:
    """The matmul op, its errors naming ``op`` (matmul, mm, bmm, mv, dot: the function called)."""
    if not (isinstance(x, Tensor) and isinstance(y, Tensor)):
        raise TypeError(f"{op}(): expected two Tensors, got {type(x).__name__} and {type(y).__name__}")
    if isinstance(x, LayoutTensor) or isinstance(y, LayoutTensor):  # sparse, quantized: the matmul op's rules
        return ops.matmul(x, y)
    xs, ys = x._data.shape, y._data.shape
    if not xs or not ys:
        raise ShapeError(f"{op}: both arguments need at least 1 dimension, got shapes {list(xs)} and {list(ys)}")
    kx = xs[-1]
    ky = ys[0] if len(ys) == 1 else ys[-2]
    if kx != ky:
        raise ShapeError(f"{op}: shapes {list(xs)} and {list(ys)} cannot be multiplied ({kx} != {ky})")
    dev = x._device
    if y._device is not dev:
        check_devices(op, [x, y])
    dtype = x._dtype if x._dtype is y._dtype else result_type([x._dtype, y._dtype], [], [])
    k = kernel_for(_MATMUL, dev, dtype)
    if k is None:
        return run_elsewhere(_MATMUL, dev, dtype, (x, y), {})
    cast = dev._kernels["cast"]
    xd = x._data if x._dtype is dtype else cast(x._data, dtype)
    yd = y._data if y._dtype is dtype else cast(y._data, dtype)
    try:
        data = k(xd, yd)
    except ValueError as e:
        raise ShapeError(f"{op}: shapes {list(xs)} and {list(ys)} do not broadcast ({e})") from None
    return finish(_MATMUL, data, dtype, dev, (x, y), (x, y))


_MATMUL.fn = matmul


def mm(x: Tensor, y: Tensor) -> Tensor:
    """Product of two matrices (2-D only)."""
    if x.ndim != 2 or y.ndim != 2:
        raise ShapeError(f"mm: expected 2-D tensors, got shapes {list(x.shape)} and {list(y.shape)}")
    return _product("mm", x, y)


def bmm(x: Tensor, y: Tensor) -> Tensor:
    """Batched product of 3-D tensors with equal batch sizes."""
    if x.ndim != 3 or y.ndim != 3 or x.shape[0] != y.shape[0]:
        raise ShapeError(f"bmm: expected 3-D tensors with the same batch size, got shapes {list(x.shape)} "
                         f"and {list(y.shape)}")
    return _product("bmm", x, y)


def mv(x: Tensor, v: Tensor) -> Tensor:
    """Matrix-vector product."""
    if x.ndim != 2 or v.ndim != 1:
        raise ShapeError(f"mv: expected a matrix and a vector, got shapes {list(x.shape)} and {list(v.shape)}")
    return _product("mv", x, v)


def dot(x: Tensor, y: Tensor) -> Tensor:
    """Inner product of two 1-D tensors of the same length."""
    if x.ndim != 1 or y.ndim != 1:
        raise ShapeError(f"dot: expected 1-D tensors, got shapes {list(x.shape)} and {list(y.shape)}")
    return _product("dot", x, y)


FUNCTIONS: dict[str, Callable[..., Any]] = {"matmul": matmul, "mm": mm, "bmm": bmm, "mv": mv, "dot": dot}
METHODS = list(FUNCTIONS)
