"""Gradient formulas that run one backend kernel from the op's output: relu, tanh and sigmoid.

The op records' formulas are written in ferro ops (``g * (1 - y * y)``: three ops, three tensors), which keeps
double backward exact but costs an op's overhead per step. A backend may provide ``relu_backward``,
``tanh_backward`` and ``sigmoid_backward`` (``k(grad, y) -> dx``, PyTorch's ``threshold_backward``,
``tanh_backward`` and ``sigmoid_backward``; in ``ferro.backends.contract``): :func:`by_output` runs the kernel
once instead, where the backward pass is not itself recorded (``create_graph=False``), no dispatch layer that
cares for the tensors is on but ``ferro.compile``'s tracing (a captured step records and replays the kernel, as
eager runs it) and the gradient is a real floating tensor of the output's dtype; everywhere else (a backend
without the kernel, complex dtypes, double backward, vmap...) the formula in ferro ops runs, as before.
"""

from __future__ import annotations

from collections.abc import Callable

from .._core.dtypes import bfloat16, float16, float32, float64
from .._core.grad_mode import _state
from .._core.modes import ARMED, active
from .._core.tensor import Tensor, _new

__all__ = ["by_output", "KERNEL_DTYPES"]

#: The dtypes the kernels take (a backend computes the 16-bit ones in float32 and rounds once).
KERNEL_DTYPES = frozenset({float16, bfloat16, float32, float64})


def _unlayered(g: Tensor, out: Tensor) -> bool:
    """Whether no layer active on this thread has anything to do with ``g`` and ``out`` but tracing (which
    records the kernels ops call): a layout that cares for none of them is as if it were not there."""
    return all(m.layer == "trace" or not m.cares((g, out), {}) for m in active())


def by_output(kernel: str, formula: Callable[[Tensor, Tensor], Tensor]) -> Callable[[Tensor, Tensor], Tensor]:
    """The gradient formula ``formula(g, out)`` of an op whose gradient its output decides, run by the device's
    kernel ``kernel(grad, y)`` where it can be (see the module docstring)."""

    def grad(g: Tensor, out: Tensor) -> Tensor:
        if (not _state.enabled and type(g) is Tensor and type(out) is Tensor
                and (not ARMED[0] or _unlayered(g, out))):
            dt = g._dtype
            if dt is out._dtype and dt in KERNEL_DTYPES:
                dev = g._device
                k = (dev._kernels or {}).get(kernel)
                if k is not None and dev is out._device:
                    r = _new(Tensor)  # _wrap, inlined (one frame less per backward step)
                    r._data = k(g._data, out._data)
                    r._dtype = dt
                    r._device = dev
                    r._rg = False
                    r._vc = [0]
                    r.grad_fn = r._grad = r._base = r._hooks = r._retains = r._view = None
                    return r
        return formula(g, out)

    grad.__name__ = grad.__qualname__ = f"{kernel}_formula"
    return grad
