"""Adamax: Adam with the infinity norm of past gradients in place of the second moment."""

from __future__ import annotations

from typing import Any

from .._core.tensor import Tensor
from .._creation import zeros_like
from .adam import check_adam_family
from .optimizer import Optimizer, decayed_grad, register_step

__all__ = ["Adamax"]


class Adamax(Optimizer):
    """``torch.optim.Adamax``: ``u = max(beta2 * u, |g| + eps)``, ``p -= lr / (1 - beta1^t) * m / u``."""

    _tuple_keys = ("betas",)

    _step_op = "adamax_step"

    def __init__(self, params: Any, lr: float = 2e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, foreach: bool | None = None, *, maximize: bool = False) -> None:
        defaults = {"lr": lr, "betas": tuple(betas), "eps": eps, "weight_decay": weight_decay, "foreach": foreach,
                    "maximize": maximize}
        super().__init__(params, defaults)

    def _check_group(self, group: dict[str, Any]) -> None:
        super()._check_group(group)
        check_adam_family(group)

    def _update_group(self, group: dict[str, Any]) -> None:
        lr, (beta1, beta2), eps, wd = group["lr"], group["betas"], group["eps"], group["weight_decay"]
        maximize = group["maximize"]
        apply = self._apply
        for p, g, st in self._with_grads(group, _fresh):
            step = st["step"] = st["step"] + 1
            apply(group, _adamax, p, g, (st["exp_avg"], st["exp_inf"]), (step, lr, beta1, beta2, eps, wd, maximize))


def _fresh(p: Tensor) -> dict[str, Any]:
    return {"step": 0.0, "exp_avg": zeros_like(p), "exp_inf": zeros_like(p)}


def _adamax(p: Tensor, g: Tensor, m: Tensor, u: Tensor, step: float, lr: float, beta1: float, beta2: float,
            eps: float, wd: float, maximize: bool) -> None:
    """One unfused Adamax update; ``fused_adamax`` kernels compute the same sequence of operations."""
    g = decayed_grad(p, g, wd, maximize)
    m.lerp_(g, 1 - beta1)
    u.mul_(beta2)
    u.maximum_(g.abs() + eps)
    p.add_(m / u * -(lr / (1 - beta1 ** step)))


register_step("adamax_step", "fused_adamax", _adamax)
