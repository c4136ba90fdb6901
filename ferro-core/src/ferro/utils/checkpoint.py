"""Activation checkpointing: trade compute for memory, as ``torch.utils.checkpoint``.

``checkpoint(fn, *args)`` runs ``fn`` without recording its graph (so none of
its intermediate tensors is kept) and runs it again during backward, with the
random state of the CPU and of the inputs' devices as it was the first time, so
dropout draws the same masks and gradients equal those of the plain run.

>>> import ferro
>>> from ferro.utils.checkpoint import checkpoint
>>> x = ferro.randn(4, 3, requires_grad=True)
>>> w = ferro.randn(3, 3, requires_grad=True)
>>> y = checkpoint(lambda a: (a @ w).tanh(), x, use_reentrant=False)
>>> y.sum().backward()
>>> x.grad.shape, w.grad.shape
(ferro.Size([4, 3]), ferro.Size([3, 3]))

How gradients get out: tensors passed in ``args`` get theirs through the
graph, as for any op; tensors that ``fn`` uses without being passed (a module's
parameters) are leaves of the graph recomputed in backward, and their
gradients accumulate into their ``.grad`` then. ``use_reentrant`` is accepted
for compatibility and changes nothing: ferro recomputes the same way for both.
So, as PyTorch's reentrant variant: ``ferro.autograd.grad`` through a checkpoint
differentiates with respect to tensors passed in ``args`` only, a non-leaf
tensor that requires grad must be passed in ``args`` rather than captured, and
double backward through a checkpoint is not supported.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from .. import random as _rng
from ..autograd import Function, FunctionCtx, backward, enable_grad, is_grad_enabled

__all__ = ["checkpoint", "checkpoint_sequential"]


def _devices(args: Sequence[Any]) -> list[Any]:
    from .._core.tensor import Tensor
    return list(dict.fromkeys(["cpu", *(str(a._device) for a in args if isinstance(a, Tensor))]))


class _Checkpoint(Function):
    """Forward without a graph; backward recomputes ``fn`` with the saved RNG state and backpropagates."""

    @staticmethod
    def forward(ctx: FunctionCtx, fn: Callable[..., Any], preserve: bool, kwargs: dict[str, Any],  # type: ignore[override]
                _anchor: Any, *args: Any) -> Any:
        from .._core.tensor import Tensor
        ctx.fn, ctx.kwargs, ctx.preserve = fn, kwargs, preserve
        ctx.devices = _devices(args)
        ctx.rng = _rng.get_all_rng_states(ctx.devices) if preserve else None
        ctx.is_tensor = [isinstance(a, Tensor) for a in args]
        ctx.others = [None if t else a for a, t in zip(args, ctx.is_tensor)]
        ctx.save_for_backward(*(a for a in args if isinstance(a, Tensor)))
        out = fn(*args, **kwargs)
        if not (isinstance(out, Tensor) or (isinstance(out, tuple) and all(isinstance(o, Tensor) for o in out))):
            raise TypeError(f"checkpoint: the function must return a tensor or a tuple of tensors, got "
                            f"{type(out).__name__}")
        return out

    @staticmethod
    def backward(ctx: FunctionCtx, *grads: Any) -> tuple[Any, ...]:
        saved = iter(ctx.saved_tensors)
        inputs = []
        for is_t, other in zip(ctx.is_tensor, ctx.others):
            if is_t:
                t = next(saved)
                inputs.append(t.detach().requires_grad_(t.requires_grad))
            else:
                inputs.append(other)
        with _rng.fork_rng(ctx.devices, enabled=ctx.preserve):
            if ctx.preserve:
                _rng.set_all_rng_states(ctx.rng)
            with enable_grad():
                out = ctx.fn(*inputs, **ctx.kwargs)
        outs = out if isinstance(out, tuple) else (out,)
        pairs = [(o, g) for o, g in zip(outs, grads) if g is not None and o.requires_grad]
        if pairs:
            backward([o for o, _ in pairs], [g for _, g in pairs])
        in_grads = [x.grad if is_t else None for x, is_t in zip(inputs, ctx.is_tensor)]
        return (None, None, None, None, *in_grads)


def checkpoint(function: Callable[..., Any], *args: Any, use_reentrant: bool | None = None,
               preserve_rng_state: bool = True, determinism_check: str = "default", debug: bool = False,
               **kwargs: Any) -> Any:
    """``function(*args, **kwargs)`` without keeping its intermediate tensors; recomputed in backward.

    ``function`` returns a tensor or a tuple of tensors. With ``preserve_rng_state`` (the default) the
    recomputation draws the same random numbers (dropout masks) as the first run. ``use_reentrant``,
    ``determinism_check`` and ``debug`` are accepted for PyTorch compatibility (see the module's notes).
    """
    if determinism_check not in ("default", "none"):
        raise ValueError(f"determinism_check should be 'default' or 'none', got {determinism_check!r}")
    if not is_grad_enabled():
        return function(*args, **kwargs)
    from .._creation import empty
    # An input that requires grad, so the graph records this node even when no argument requires grad
    # (a first layer fed with data): its parameters then still get their gradients in backward.
    anchor = empty(0, requires_grad=True)
    return _Checkpoint.apply(function, preserve_rng_state, kwargs, anchor, *args)


def _run_segment(functions: Sequence[Callable[[Any], Any]]) -> Callable[[Any], Any]:
    def forward(x: Any) -> Any:
        for f in functions:
            x = f(x)
        return x
    return forward


def checkpoint_sequential(functions: Iterable[Callable[[Any], Any]] | Any, segments: int, input: Any,
                          use_reentrant: bool | None = None, **kwargs: Any) -> Any:
    """Run ``functions`` (a list, or a module whose ``children()`` run in order) one after the other on
    ``input``, in ``segments`` parts each checkpointed except the last, as PyTorch."""
    fns = list(functions.children()) if hasattr(functions, "children") else list(functions)
    if not isinstance(segments, int) or segments < 1:
        raise ValueError(f"segments must be a positive integer, got {segments!r}")
    size = len(fns) // segments
    end = -1
    for start in range(0, size * (segments - 1), size):
        end = start + size - 1
        input = checkpoint(_run_segment(fns[start:end + 1]), input, use_reentrant=use_reentrant, **kwargs)
    return _run_segment(fns[end + 1:])(input)
