"""Adagrad: per-element learning rates from the sum of squared gradients."""

from __future__ import annotations

from typing import Any

from .._core.tensor import Tensor
from .._creation import full_like
from .optimizer import Optimizer, check, decayed_grad, register_step

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    """``torch.optim.Adagrad``: ``s += g^2``, ``p -= lr / (1 + (step - 1) * lr_decay) * g / (sqrt(s) + eps)``.

    As in PyTorch, the state (``step`` and ``sum``, filled with
    ``initial_accumulator_value``) exists from construction on.
    """

    _step_op = "adagrad_step"

    def __init__(self, params: Any, lr: float = 1e-2, lr_decay: float = 0, weight_decay: float = 0,
                 initial_accumulator_value: float = 0, eps: float = 1e-10, foreach: bool | None = None, *,
                 maximize: bool = False, fused: bool | None = None) -> None:
        defaults = {"lr": lr, "lr_decay": lr_decay, "eps": eps, "weight_decay": weight_decay,
                    "initial_accumulator_value": initial_accumulator_value, "foreach": foreach,
                    "maximize": maximize, "fused": fused}
        super().__init__(params, defaults)

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a group (see :meth:`Optimizer.add_param_group`) and make its parameters' state."""
        super().add_param_group(param_group)
        group = self.param_groups[-1]
        for p in group["params"]:
            self.state[p] = {"step": 0.0, "sum": full_like(p, group["initial_accumulator_value"])}

    def _check_group(self, group: dict[str, Any]) -> None:
        super()._check_group(group)
        check(group["lr_decay"] >= 0.0, f"Invalid lr_decay value: {group['lr_decay']}")
        check(group["weight_decay"] >= 0.0, f"Invalid weight_decay value: {group['weight_decay']}")
        check(group["initial_accumulator_value"] >= 0.0,
              f"Invalid initial_accumulator_value value: {group['initial_accumulator_value']}")
        check(group["eps"] >= 0.0, f"Invalid epsilon value: {group['eps']}")

    def _update_group(self, group: dict[str, Any]) -> None:
        lr, lr_decay, eps, wd, maximize = (group["lr"], group["lr_decay"], group["eps"], group["weight_decay"],
                                           group["maximize"])
        state, apply = self.state, self._apply
        for p in group["params"]:
            g = p._grad
            if g is None:
                continue
            st = state[p]
            step = st["step"] = st["step"] + 1
            apply(group, _adagrad, p, g, (st["sum"],), (step, lr, lr_decay, wd, eps, maximize))


def _adagrad(p: Tensor, g: Tensor, s: Tensor, step: float, lr: float, lr_decay: float, wd: float, eps: float,
             maximize: bool) -> None:
    """One unfused Adagrad update; ``fused_adagrad`` kernels compute the same sequence of operations."""
    g = decayed_grad(p, g, wd, maximize)
    clr = lr / (1 + (step - 1) * lr_decay)
    s.add_(g * g)
    p.add_(g / (s.sqrt() + eps) * -clr)


register_step("adagrad_step", "fused_adagrad", _adagrad)
