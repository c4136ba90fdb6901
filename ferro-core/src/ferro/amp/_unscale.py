"""The op ``amp_unscale_``: check gradients for inf/nan and unscale them, in one fused kernel per backend.

``amp_unscale_(grads, found_inf, inv_scale)`` is PyTorch's
``torch._amp_foreach_non_finite_check_and_unscale_``: every gradient (all on one
device, of one dtype) is multiplied in place by ``inv_scale``, rounded to float32
first as PyTorch's tensor holds it (a 16-bit gradient is multiplied in float32 and
rounded once); ``found_inf``, a one-element float32 tensor on their device, is set
to 1 where any of them held an inf or a nan (else left as it was).
Nothing waits for the device: :class:`~ferro.amp.GradScaler` reads ``found_inf``
once, when it decides whether to step.

Like the optimizers' steps, it is a registry op whose kernel (``fused_amp_unscale``,
see ``ferro.backends.contract``) a backend may supply, bound and reported like
every kernel; its decomposition in ferro ops runs everywhere else (a backend with
only the required primitives included).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any

from .._core.dtypes import bfloat16, float16, float32
from .._core.grad_mode import no_grad
from .._core.modes import entry
from .._core.records import REGISTRY, OpDef, ops, register
from .._core.tensor import Tensor
from ..errors import DeviceMismatchError, DTypeError
from ..optim.optimizer import fused_kernel

__all__ = ["amp_unscale_", "float32_value"]

_NAME = "amp_unscale_"
_HALVES = (float16, bfloat16)


def float32_value(x: float) -> float:
    """``x`` rounded to float32 (inf past its range): PyTorch holds the scale and its reciprocal as float32."""
    try:
        return struct.unpack("f", struct.pack("f", x))[0]
    except OverflowError:
        return float("inf") if x > 0 else float("-inf")


def _unscale(grads: Sequence[Tensor], found_inf: Tensor, inv_scale: float) -> None:
    """The unfused update, in ferro ops under no_grad; ``fused_amp_unscale`` kernels compute the same values."""
    with no_grad():
        for g in grads:
            if not g.numel():  # nothing to check or write (an empty view may have zero strides)
                continue
            bad = g.isfinite().logical_not().any().to(found_inf.dtype)
            found_inf.copy_(ops.maximum(found_inf, bad))
            if inv_scale == 1.0:
                continue
            if g.dtype in _HALVES:  # the product in float32, rounded once (as PyTorch's opmath)
                g.copy_((g.to(float32) * inv_scale).to(g.dtype))
            else:
                g.mul_(inv_scale)


def _checked(grads: Any, found_inf: Any, inv_scale: Any) -> tuple[list[Tensor], float]:
    """The gradients as a list and ``inv_scale`` as a float, or the error naming what is wrong."""
    if isinstance(grads, Tensor) or not isinstance(grads, (list, tuple)):
        raise TypeError(f"{_NAME}(): argument 'grads' must be a list or tuple of Tensors, not {type(grads).__name__}")
    grads = list(grads)
    bad = next((g for g in grads if not isinstance(g, Tensor)), None)
    if bad is not None:
        raise TypeError(f"{_NAME}(): argument 'grads' must hold Tensors only, got a {type(bad).__name__}")
    if not isinstance(found_inf, Tensor) or found_inf.dtype is not float32 or found_inf.numel() != 1:
        raise TypeError(f"{_NAME}(): argument 'found_inf' must be a float32 Tensor of one element, got "
                        + (f"{found_inf.dtype} of shape {list(found_inf.shape)}" if isinstance(found_inf, Tensor)
                           else type(found_inf).__name__))
    if isinstance(inv_scale, Tensor):
        if inv_scale.numel() != 1:
            raise TypeError(f"{_NAME}(): argument 'inv_scale' must be a float or a one-element Tensor, got shape "
                            f"{list(inv_scale.shape)}")
        inv_scale = inv_scale.item()
    if not isinstance(inv_scale, (int, float)) or isinstance(inv_scale, bool):
        raise TypeError(f"{_NAME}(): argument 'inv_scale' must be a float, not {type(inv_scale).__name__}")
    op = REGISTRY[_NAME]
    for g in grads:
        if g.dtype not in op.table:
            raise DTypeError(f"{_NAME}: not defined for dtype {g.dtype}; it takes {op.dtype_words}")
        if g.dtype is not grads[0].dtype:
            raise DTypeError(f"{_NAME}: the gradients must share one dtype, got {grads[0].dtype} and {g.dtype}")
        if g.device != grads[0].device:
            raise DeviceMismatchError(f"{_NAME}: the gradients must be on one device, got {grads[0].device} and "
                                      f"{g.device}")
    if grads and found_inf.device != grads[0].device:
        raise DeviceMismatchError(f"{_NAME}: found_inf is on {found_inf.device}, the gradients on {grads[0].device}")
    return grads, float32_value(float(inv_scale))


def _amp_unscale(grads: Sequence[Tensor], found_inf: Tensor, inv_scale: float | Tensor) -> None:
    """Multiply every tensor of ``grads`` by ``inv_scale`` in place; set ``found_inf`` to 1 where any holds inf
    or nan (PyTorch's ``_amp_foreach_non_finite_check_and_unscale_``).

    >>> import ferro
    >>> g = ferro.tensor([2.0, float("inf")])
    >>> found = ferro.zeros(())
    >>> ferro.ops.amp_unscale_([g], found, 0.5)
    >>> g, found
    (tensor([1., inf]), tensor(1.))
    """
    grads, inv = _checked(grads, found_inf, inv_scale)
    if not grads:
        return
    kernel = fused_kernel(grads[0], _NAME)
    if kernel is None:
        _unscale(grads, found_inf, inv)
        return
    kernel([g._data for g in grads], found_inf._data, inv)
    for t in (*grads, found_inf):  # written in place: a graph that saved one of them sees it changed
        t._vc[0] += 1


_OP = register(OpDef(_NAME, "amp", "Check gradients for inf/nan and multiply them by inv_scale, in place.",
                     dtype_rule="real_floating", decomposition=_unscale,
                     uses=("isfinite", "logical_not", "any", "cast", "maximum", "mul", "copy_"),
                     kernels=("fused_amp_unscale",), optional_kernels=True))
#: The op's public function: its dispatch entry (``_core.modes``).
amp_unscale_ = _OP.fn = entry(_OP, _amp_unscale)
