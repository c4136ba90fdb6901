"""Module backward hooks (``register_full_backward_hook`` / ``register_full_backward_pre_hook``).

As in PyTorch, a call of a module with backward hooks passes its tensor inputs and
its outputs through identity Functions: the outputs' one sees the gradients of the
outputs (and runs the pre-hooks, which may replace them), the inputs' one sees the
gradients of the inputs (and runs the hooks, which may replace those).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..._core.tensor import Tensor
from ..._creation import zeros_like
from ...autograd import Function, FunctionCtx

if TYPE_CHECKING:
    from .module import Module

__all__ = ["wrap_inputs", "wrap_outputs"]


class _CallState:
    """What the two identity Functions of one module call share."""

    def __init__(self, module: Module, n_args: int, grad_args: list[int]) -> None:
        self.module, self.n_args, self.grad_args = module, n_args, grad_args
        self.grad_outputs: tuple[Any, ...] | None = None
        self.zeros: dict[int, Tensor] = {}  # arguments whose gradient the hooks see as zeros

    def run_hooks(self, grad_inputs: tuple[Any, ...]) -> tuple[Any, ...]:
        m = self.module
        for hook in list(m._backward_hooks.values()):
            res = hook(m, grad_inputs, self.grad_outputs)
            if res is not None:
                res = tuple(res) if isinstance(res, (tuple, list)) else (res,)
                if len(res) != len(grad_inputs):
                    raise RuntimeError(f"Backward hook returned an invalid number of grad_input, got {len(res)}, "
                                       f"but expected {len(grad_inputs)}")
                grad_inputs = res
        return grad_inputs


def _one_or_many(tensors: tuple[Tensor, ...]) -> Any:
    return tensors[0] if len(tensors) == 1 else tensors


class _InputsHook(Function):
    @staticmethod
    def forward(ctx: FunctionCtx, state: _CallState, *tensors: Tensor) -> Any:
        ctx.state = state
        return _one_or_many(tensors)

    @staticmethod
    def backward(ctx: FunctionCtx, *grads: Any) -> Any:
        state: _CallState = ctx.state
        full: list[Any] = [None] * state.n_args
        for i, g in zip(state.grad_args, grads):
            full[i] = g
        for i, a in state.zeros.items():
            full[i] = zeros_like(a)
        full_t = state.run_hooks(tuple(full))
        return (None, *(full_t[i] for i in state.grad_args))


class _OutputsHook(Function):
    @staticmethod
    def forward(ctx: FunctionCtx, state: _CallState, *tensors: Tensor) -> Any:
        ctx.state = state
        return _one_or_many(tensors)

    @staticmethod
    def backward(ctx: FunctionCtx, *grads: Any) -> Any:
        state: _CallState = ctx.state
        m = state.module
        for hook in list(m._backward_pre_hooks.values()):
            res = hook(m, grads)
            if res is not None:
                res = tuple(res) if isinstance(res, (tuple, list)) else (res,)
                if len(res) != len(grads):
                    raise RuntimeError(f"Backward pre hook returned an invalid number of grad_output, got "
                                       f"{len(res)}, but expected {len(grads)}")
                grads = res
        state.grad_outputs = grads
        if not state.grad_args:  # no input needs a gradient: the hooks run now, with grad_input all None
            state.run_hooks((None,) * state.n_args)
        return (None, *grads)


def wrap_inputs(module: Module, args: tuple[Any, ...]) -> tuple[tuple[Any, ...], _CallState]:
    """``args`` with the tensors that require grad passed through the inputs' identity Function. As in
    PyTorch, the hooks then see zeros for the other floating tensor arguments."""
    grad_args = [i for i, a in enumerate(args) if isinstance(a, Tensor) and a.requires_grad]
    state = _CallState(module, len(args), grad_args)
    if not grad_args:
        return args, state
    state.zeros = {i: a for i, a in enumerate(args)
                   if isinstance(a, Tensor) and not a.requires_grad and (a.is_floating_point() or a.is_complex())}
    wrapped = _InputsHook.apply(state, *(args[i] for i in grad_args))
    wrapped = wrapped if isinstance(wrapped, tuple) else (wrapped,)
    new = list(args)
    for i, w in zip(grad_args, wrapped):
        new[i] = w
    return tuple(new), state


def wrap_outputs(state: _CallState, out: Any) -> Any:
    """``out`` (a tensor or a tuple) with its tensors passed through the outputs' identity Function."""
    if isinstance(out, Tensor):
        return _OutputsHook.apply(state, out)
    if isinstance(out, tuple):
        idx = [i for i, o in enumerate(out) if isinstance(o, Tensor) and o.requires_grad]
        if not idx:
            return out
        wrapped = _OutputsHook.apply(state, *(out[i] for i in idx))
        wrapped = wrapped if isinstance(wrapped, tuple) else (wrapped,)
        new = list(out)
        for i, w in zip(idx, wrapped):
            new[i] = w
        return type(out)(new) if type(out) is tuple else type(out)(*new)
    return out
