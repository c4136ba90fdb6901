"""The user's entry points into the engine: :func:`backward` and :func:`grad`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._core.tensor import Tensor, full
from ._engine import run_backward, store_grad

__all__ = ["backward", "grad"]


def _as_list(x: Any) -> list[Any]:
    if x is None:
        return []
    if isinstance(x, (list, tuple)):
        return list(x)
    return [x]


def _default_grads(outputs: list[Tensor], grads: list[Any]) -> list[Tensor]:
    out = []
    for i, t in enumerate(outputs):
        g = grads[i] if i < len(grads) else None
        if g is None:
            if t.numel() != 1:
                raise RuntimeError(f"grad can be implicitly created only for scalar outputs; output {i} has shape "
                                   f"{list(t.shape)}: pass gradient=")
            g = full(t._data.shape, 1, t._dtype, t._device)
        elif getattr(g, "_dtype", None) is None:
            raise TypeError(f"gradients can be either Tensors or None, but got {type(g).__name__}")
        elif g.shape != t.shape:
            raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of {list(g.shape)} and output[{i}] "
                               f"has a shape of {list(t.shape)}.")
        out.append(g)
    return out


def backward(tensors: Tensor | Sequence[Tensor], grad_tensors: Any = None, retain_graph: bool | None = None,
             create_graph: bool = False, inputs: Any = None) -> None:
    """Accumulate gradients of ``tensors`` into the ``.grad`` of the leaves of their graph."""
    outs = _as_list(tensors)
    grads = _default_grads(outs, _as_list(grad_tensors))
    if inputs is not None:
        ins = _as_list(inputs)
        got = run_backward(outs, grads, retain_graph=bool(create_graph if retain_graph is None else retain_graph),
                           create_graph=create_graph, inputs=ins)
        for t, g in zip(ins, got or []):
            if g is not None and not (t.grad_fn is not None and t._retains):  # (retain_grad stored it already)
                if t._grad is None:  # later: added in place into a leaf's .grad, as Tensor.backward does
                    t._grad = g
                else:
                    store_grad(t, g, create_graph, t.grad_fn is None)
        return
    run_backward(outs, grads, retain_graph=bool(create_graph if retain_graph is None else retain_graph),
                 create_graph=create_graph)


def grad(outputs: Tensor | Sequence[Tensor], inputs: Tensor | Sequence[Tensor], grad_outputs: Any = None,
         retain_graph: bool | None = None, create_graph: bool = False,
         allow_unused: bool | None = None) -> tuple[Tensor | None, ...]:
    """Gradients of ``outputs`` with respect to ``inputs``, returned rather than accumulated."""
    outs = _as_list(outputs)
    ins = _as_list(inputs)
    if not ins:
        raise RuntimeError("grad requires non-empty inputs: pass the tensors to differentiate with respect to")
    for i, t in enumerate(ins):
        if not t._rg:
            raise RuntimeError(f"One of the differentiated Tensors (input {i}) does not require grad")
    grads = _default_grads(outs, _as_list(grad_outputs))
    got = run_backward(outs, grads, retain_graph=bool(create_graph if retain_graph is None else retain_graph),
                       create_graph=create_graph, inputs=ins, allow_unused=bool(allow_unused))
    return tuple(got or ())
