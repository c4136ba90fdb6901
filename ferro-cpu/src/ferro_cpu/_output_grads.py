"""The gradients of relu, tanh and sigmoid from their output, one kernel each on NumPy (the contract is in
``ferro/_ops/output_grads.py``): ``relu_backward(grad, y)``, ``tanh_backward(grad, y)``,
``sigmoid_backward(grad, y)``.

The formulas of the op records take two or three ops each (``g * (y > 0)`` goes through a bool operand's slow
path); these are PyTorch's CPU kernels: ``threshold_backward`` (0 where ``y <= 0``, else ``g``: a NaN output
passes ``g`` through, a zero gradient is +0.0, and an infinite ``g`` where ``y`` is 0 gives 0, not ``inf * 0``),
``tanh_backward`` ``g * (1 - y * y)`` and ``sigmoid_backward`` ``g * (1 - y) * y``, step by step as the op
records' formulas (float32 and float64 give the same values whichever runs: eager, compiled or double
backward). relu's selection is bitwise (``np.where`` branches per element, several times slower). float16 and
bfloat16 compute in float32 and round once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._quiet import ignoring

__all__ = ["output_grad_kernels"]



def output_grad_kernels(np: Any, half: Any) -> dict[str, Callable[..., Any]]:
    """``relu_backward``, ``tanh_backward`` and ``sigmoid_backward`` over NumPy ``np``; ``half`` is the backend's
    16-bit tools."""
    quiet = ignoring(np)  # inf * 0 is NaN, as PyTorch's, without NumPy's warning
    less_equal, logical_not, multiply, subtract = np.less_equal, np.logical_not, np.multiply, np.subtract
    int_of = {np.dtype(f): np.dtype(i) for f, i in ((np.float32, np.int32), (np.float64, np.int64))}  # same bits

    def operands(grad: Any, y: Any) -> Any:
        """``grad`` in ``y``'s shape and dtype (the engine gives it so; a direct caller may not)."""
        if grad.shape != y.shape:
            grad = np.broadcast_to(grad, y.shape)
        return grad if grad.dtype == y.dtype else grad.astype(y.dtype)

    # Each takes ``out``: an array of y's shape and dtype to write into (``...``: a new one, 0-d too).
    def relu_backward(grad: Any, y: Any, out: Any = ...) -> Any:
        g = operands(grad, y)
        bits = int_of[y.dtype]
        kept = less_equal(y, 0, out=...)
        logical_not(kept, out=kept)  # y > 0 or NaN
        # g's bits times 1 or 0: g itself, or +0.0 (an integer product: no inf * 0)
        r = multiply(g.view(bits), kept, out=np.empty(y.shape, bits) if out is ... else out.view(bits))
        return r.view(g.dtype) if out is ... else out

    @quiet
    def tanh_backward(grad: Any, y: Any, out: Any = ...) -> Any:
        g = operands(grad, y)
        t = multiply(y, y, out=out)
        subtract(y.dtype.type(1), t, out=t)
        return multiply(g, t, out=t)

    @quiet
    def sigmoid_backward(grad: Any, y: Any, out: Any = ...) -> Any:
        g = operands(grad, y)
        t = subtract(y.dtype.type(1), y, out=out)
        multiply(g, t, out=t)
        return multiply(t, y, out=t)

    halves, f32, round_ = half.dtypes, half.f32, half.round

    def widened(fn: Callable[..., Any]) -> Callable[..., Any]:
        """``fn`` on float32 and float64; 16-bit floats computed in float32 and rounded once (one set lookup
        on the way: these kernels run once per backward step)."""
        def kernel(grad: Any, y: Any) -> Any:
            dt = y.dtype
            if dt in halves:
                return round_(fn(grad.astype(f32), y.astype(f32)), dt)
            return fn(grad, y)
        def into(grad: Any, y: Any, out: Any) -> Any:
            """The kernel's result written into ``out`` (``ferro.compile``'s planned buffers,
            ``ferro_cpu/_fusion_into.py``): the same steps, bitwise; a call it does not fit runs the kernel."""
            dt = y.dtype
            if dt in halves or grad.dtype != dt or out.dtype != dt or not grad.shape == y.shape == out.shape:
                return kernel(grad, y)
            return fn(grad, y, out)
        kernel.__name__ = kernel.__qualname__ = fn.__name__
        kernel.into = into  # type: ignore[attr-defined]
        return kernel

    return {"relu_backward": widened(relu_backward), "tanh_backward": widened(tanh_backward),
            "sigmoid_backward": widened(sigmoid_backward)}


def accumulate_kernel(np: Any) -> dict[str, Callable[..., Any]]:
    """``accumulate_(dst, src)``: ``dst += src`` in place, as PyTorch's AccumulateGrad adds a gradient into
    ``.grad`` (ferro/autograd/_engine.py); float32, float64 and the complex dtypes, where NumPy's sum is
    PyTorch's; False (nothing written) for other dtypes, a read-only ``dst`` or one with overlapping elements."""
    add = np.add
    dtypes = frozenset(np.dtype(d) for d in (np.float32, np.float64, np.complex64, np.complex128))

    def accumulate_(dst: Any, src: Any) -> bool:
        if (dst.dtype not in dtypes or src.dtype != dst.dtype or src.shape != dst.shape
                or not dst.flags.writeable or 0 in dst.strides):
            return False
        add(dst, src, out=dst)
        return True

    return {"accumulate_": accumulate_}
