"""Gradient clipping: ``clip_grad_norm_`` (by the total norm) and ``clip_grad_value_`` (elementwise)."""

from __future__ import annotations

from collections.abc import Iterable

from ..._core.dtypes import float32, float64
from ..._core.tensor import Tensor
from ..._creation import tensor as _tensor
from ...autograd import no_grad

__all__ = ["clip_grad_norm_", "clip_grad_value_", "clip_grads_with_norm_", "get_total_norm"]

TensorOrTensors = Tensor | Iterable[Tensor]


def _list(tensors: TensorOrTensors) -> list[Tensor]:
    return [tensors] if isinstance(tensors, Tensor) else list(tensors)


#: Gradient dtypes whose 2-norm is taken from dot products (16-bit floats keep the norm's float32 sums).
_DOT_DTYPES = frozenset({float32, float64})


def _on(t: Tensor, dev: object) -> Tensor:
    return t if t.device == dev else t.to(dev)


def get_total_norm(tensors: TensorOrTensors, norm_type: float = 2.0, error_if_nonfinite: bool = False,
                   foreach: bool | None = None) -> Tensor:
    """The ``norm_type``-norm of all of ``tensors`` together, as if concatenated into one vector."""
    from ...linalg import vector_norm
    ts = [t for t in _list(tensors) if t is not None]
    if not ts:
        return _tensor(0.0)
    norm_type = float(norm_type)
    dev = ts[0].device
    from ..._ops.shape import stack
    with no_grad():
        if norm_type == 2.0 and all(type(t) is Tensor and t._dtype in _DOT_DTYPES for t in ts):
            # the sum of squares of each as one dot product (no squared copy), the root of their sum once
            squares = [_on(t.reshape(-1).dot(t.reshape(-1)), dev) for t in ts]
            total = (squares[0] if len(squares) == 1 else stack(squares).sum()).sqrt()
        else:
            norms = [_on(vector_norm(t, norm_type), dev) for t in ts]
            total = vector_norm(stack(norms), norm_type)
    if error_if_nonfinite and not bool(total.isfinite()):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, so "
                           "it cannot be clipped. To disable this error and scale the gradients by the non-finite "
                           "norm anyway, set `error_if_nonfinite=False`")
    return total


def clip_grads_with_norm_(parameters: TensorOrTensors, max_norm: float, total_norm: Tensor,
                          foreach: bool | None = None) -> None:
    """Scale the gradients by ``max_norm / (total_norm + 1e-6)`` where that is below 1."""
    grads = [p.grad for p in _list(parameters) if p.grad is not None]
    if not grads:
        return
    with no_grad():
        coef = (float(max_norm) / (total_norm + 1e-6)).clamp(max=1.0)
        cast: dict[tuple[object, object], Tensor] = {}  # coef on each gradient's device and dtype, converted once
        for g in grads:
            key = (g.device, g.dtype)
            c = cast.get(key)
            if c is None:
                c = cast[key] = coef.to(g.device).to(g.dtype)
            g.mul_(c)


def clip_grad_norm_(parameters: TensorOrTensors, max_norm: float, norm_type: float = 2.0,
                    error_if_nonfinite: bool = False, foreach: bool | None = None) -> Tensor:
    """Rescale the gradients in place so that their total ``norm_type``-norm is at most ``max_norm``.

    Returns the total norm before clipping (a tensor). ``foreach`` is accepted for PyTorch compatibility.

    >>> import ferro
    >>> p = ferro.nn.Parameter(ferro.ones(4))
    >>> (p * 3).sum().backward()
    >>> float(ferro.nn.utils.clip_grad_norm_([p], 1.0))
    6.0
    """
    params = _list(parameters)
    grads = [p.grad for p in params if p.grad is not None]
    total = get_total_norm(grads, norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(params, max_norm, total, foreach)
    return total


def clip_grad_value_(parameters: TensorOrTensors, clip_value: float, foreach: bool | None = None) -> None:
    """Clamp every gradient element to ``[-clip_value, clip_value]``, in place."""
    clip_value = float(clip_value)
    with no_grad():
        for p in _list(parameters):
            if p.grad is not None:
                p.grad.clamp_(min=-clip_value, max=clip_value)
