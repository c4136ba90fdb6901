"""Multi-tensor optimizer steps: an optimizer's ``step``, a host call of the captured graph, becomes one update of
all its parameters at once where the parameters' backend offers the optional ``compile_step`` hook.

A replayed step reruns ``optimizer.step()`` (a :class:`~.graph.Host` node): per parameter, Python and the few
calls of a fused kernel. ``Backend.compile_step(optimizer, index)`` may return ``update()``, which updates every
parameter of the optimizer as its step would (the same operations in the same order: bitwise eager) in a
handful of calls over flat arrays, and returns True; or returns False, having written nothing, where the state
is not as it expects (a parameter's data replaced, a gradient missing, a hyperparameter it does not take): the
optimizer's own ``step`` then runs. So does it while step hooks are registered. Only optimizers whose ``step`` is
the base class's (their update in ``_update_group``) and whose parameters are all on one device are offered.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...optim import optimizer as _optimizer
from ...optim.optimizer import Optimizer
from ..graph import Graph, Host

__all__ = ["MultiStep", "run"]


class MultiStep:
    """The host call that replaces ``optimizer.step()``: the backend's ``update`` where it takes the call, else
    the optimizer's own step. ``runs`` counts the calls the backend's update made."""

    def __init__(self, optimizer: Optimizer, step: Callable[[], Any], update: Callable[[], bool]) -> None:
        self.optimizer, self.step, self.update = optimizer, step, update
        self.runs = 0

    def __call__(self) -> Any:
        opt = self.optimizer
        if (_optimizer._global_optimizer_pre_hooks or _optimizer._global_optimizer_post_hooks
                or opt._optimizer_step_pre_hooks or opt._optimizer_step_post_hooks or not self.update()):
            return self.step()
        self.runs += 1
        return None


def _optimizer_of(node: Host) -> Optimizer | None:
    """The optimizer whose plain ``step()`` (the base class's, no closure) ``node`` calls, else None."""
    opt = getattr(node.fn, "__self__", None)
    if (not isinstance(opt, Optimizer) or node.args or node.kwargs
            or getattr(node.fn, "__func__", None) is not Optimizer.step):
        return None
    return opt


def run(graph: Graph) -> int:
    """Replace the optimizers' steps in place; returns how many the backends took."""
    made = 0
    for i, node in enumerate(graph.nodes):
        if not isinstance(node, Host) or isinstance(node.fn, MultiStep):
            continue
        opt = _optimizer_of(node)
        if opt is None:
            continue
        devices = {p._device for group in opt.param_groups for p in group["params"]}
        if len(devices) != 1:
            continue
        dev = devices.pop()
        hook = getattr(dev.backend, "compile_step", None)
        update = hook(opt, dev.index) if hook is not None else None
        if update is None:
            continue
        graph.nodes[i] = Host(MultiStep(opt, node.fn, update), (), {})
        made += 1
    return made
