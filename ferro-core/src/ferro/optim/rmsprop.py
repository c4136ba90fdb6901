"""RMSprop: divide the gradient by a running root mean square (optionally centered), with momentum."""

from __future__ import annotations

from typing import Any

from .._core.tensor import Tensor
from .._creation import zeros_like
from .optimizer import Optimizer, check, decayed_grad, register_step

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    """``torch.optim.RMSprop``: ``p -= lr * g / (sqrt(E[g^2] - E[g]^2 if centered else E[g^2]) + eps)``."""

    _step_op = "rmsprop_step"

    def __init__(self, params: Any, lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8,
                 weight_decay: float = 0, momentum: float = 0, centered: bool = False, foreach: bool | None = None,
                 maximize: bool = False) -> None:
        defaults = {"lr": lr, "momentum": momentum, "alpha": alpha, "eps": eps, "centered": centered,
                    "weight_decay": weight_decay, "foreach": foreach, "maximize": maximize}
        super().__init__(params, defaults)

    def _check_group(self, group: dict[str, Any]) -> None:
        super()._check_group(group)
        check(group["eps"] >= 0.0, f"Invalid epsilon value: {group['eps']}")
        check(group["momentum"] >= 0.0, f"Invalid momentum value: {group['momentum']}")
        check(group["weight_decay"] >= 0.0, f"Invalid weight_decay value: {group['weight_decay']}")
        check(group["alpha"] >= 0.0, f"Invalid alpha value: {group['alpha']}")

    def _update_group(self, group: dict[str, Any]) -> None:
        momentum, centered = group["momentum"], group["centered"]
        scalars = (group["lr"], group["alpha"], group["eps"], group["weight_decay"], momentum, centered,
                   group["maximize"])
        def fresh(p: Tensor) -> dict[str, Any]:
            st = {"step": 0.0, "square_avg": zeros_like(p)}
            if momentum > 0:
                st["momentum_buffer"] = zeros_like(p)
            if centered:
                st["grad_avg"] = zeros_like(p)
            return st

        apply = self._apply
        for p, g, st in self._with_grads(group, fresh):
            st["step"] += 1
            apply(group, _rmsprop, p, g, (st["square_avg"], st.get("grad_avg"), st.get("momentum_buffer")),
                  scalars)


def _rmsprop(p: Tensor, g: Tensor, sq: Tensor, ga: Tensor | None, buf: Tensor | None, lr: float, alpha: float,
             eps: float, wd: float, momentum: float, centered: bool, maximize: bool) -> None:
    """One unfused RMSprop update; ``fused_rmsprop`` kernels compute the same sequence of operations."""
    g = decayed_grad(p, g, wd, maximize)
    sq.mul_(alpha)
    sq.add_(g * g * (1 - alpha))
    if centered:
        ga.lerp_(g, 1 - alpha)
        avg = (sq - ga * ga).sqrt() + eps
    else:
        avg = sq.sqrt() + eps
    if momentum > 0:
        buf.mul_(momentum)
        buf.add_(g / avg)
        p.add_(buf * -lr)
    else:
        p.add_(g / avg * -lr)


register_step("rmsprop_step", "fused_rmsprop", _rmsprop, ("neg", "lerp", "sub"))  # maximize, centered: not sampled
