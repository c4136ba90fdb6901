"""Adadelta: steps scaled by the ratio of running RMS of past updates to that of gradients."""

from __future__ import annotations

from typing import Any

from .._core.tensor import Tensor
from .._creation import zeros_like
from .optimizer import Optimizer, check, decayed_grad, register_step

__all__ = ["Adadelta"]


class Adadelta(Optimizer):
    """``torch.optim.Adadelta``: ``v = rho v + (1 - rho) g^2``, ``d = sqrt(u + eps) / sqrt(v + eps) * g``,
    ``u = rho u + (1 - rho) d^2``, ``p -= lr * d``."""

    _step_op = "adadelta_step"

    def __init__(self, params: Any, lr: float = 1.0, rho: float = 0.9, eps: float = 1e-6, weight_decay: float = 0,
                 foreach: bool | None = None, *, capturable: bool = False, maximize: bool = False,
                 differentiable: bool = False) -> None:
        defaults = {"lr": lr, "rho": rho, "eps": eps, "weight_decay": weight_decay, "foreach": foreach,
                    "capturable": capturable, "maximize": maximize, "differentiable": differentiable}
        super().__init__(params, defaults)

    def _check_group(self, group: dict[str, Any]) -> None:
        super()._check_group(group)
        check(0.0 <= group["rho"] <= 1.0, f"Invalid rho value: {group['rho']}")
        check(group["eps"] >= 0.0, f"Invalid epsilon value: {group['eps']}")
        check(group["weight_decay"] >= 0.0, f"Invalid weight_decay value: {group['weight_decay']}")

    def _update_group(self, group: dict[str, Any]) -> None:
        lr, rho, eps, wd, maximize = group["lr"], group["rho"], group["eps"], group["weight_decay"], group["maximize"]
        for p, g, st in self._with_grads(group, _fresh):
            st["step"] = st["step"] + 1
            self._apply(group, _adadelta, p, g, (st["square_avg"], st["acc_delta"]), (lr, rho, eps, wd, maximize))


def _fresh(p: Tensor) -> dict[str, Any]:
    return {"step": 0.0, "square_avg": zeros_like(p), "acc_delta": zeros_like(p)}


def _adadelta(p: Tensor, g: Tensor, v: Tensor, u: Tensor, lr: float, rho: float, eps: float, wd: float,
              maximize: bool) -> None:
    """One unfused Adadelta update (PyTorch's sequence of operations)."""
    g = decayed_grad(p, g, wd, maximize)
    v.mul_(rho).addcmul_(g, g, value=1 - rho)
    delta = (u + eps).sqrt() / (v + eps).sqrt() * g
    u.mul_(rho).addcmul_(delta, delta, value=1 - rho)
    p.add_(delta, alpha=-lr)


register_step("adadelta_step", "fused_adadelta", _adadelta, ("add", "mul", "neg", "addcmul", "sqrt", "div"))
