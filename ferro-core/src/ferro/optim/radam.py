"""RAdam: Adam with the variance of its adaptive step rectified (plain momentum SGD while it is too high)."""

from __future__ import annotations

from typing import Any

from .._core.tensor import Tensor
from .._creation import zeros_like
from .adam import check_adam_family
from .optimizer import Optimizer, decayed_grad, register_step

__all__ = ["RAdam"]


class RAdam(Optimizer):
    """``torch.optim.RAdam``: Adam's moments; while the length of the approximated simple moving average
    ``rho_t`` is at most 5 the step is ``lr * m_hat``, after that Adam's step times the rectification term.
    ``decoupled_weight_decay`` shrinks the parameter (as AdamW) instead of adding to the gradient."""

    _tuple_keys = ("betas",)
    _step_op = "radam_step"

    def __init__(self, params: Any, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, decoupled_weight_decay: bool = False, *, foreach: bool | None = None,
                 maximize: bool = False, capturable: bool = False, differentiable: bool = False) -> None:
        defaults = {"lr": lr, "betas": tuple(betas), "eps": eps, "weight_decay": weight_decay,
                    "decoupled_weight_decay": decoupled_weight_decay, "foreach": foreach, "maximize": maximize,
                    "capturable": capturable, "differentiable": differentiable}
        super().__init__(params, defaults)

    def _check_group(self, group: dict[str, Any]) -> None:
        super()._check_group(group)
        check_adam_family(group)

    def _update_group(self, group: dict[str, Any]) -> None:
        lr, (beta1, beta2), eps, wd = group["lr"], group["betas"], group["eps"], group["weight_decay"]
        decoupled, maximize = group["decoupled_weight_decay"], group["maximize"]
        for p, g, st in self._with_grads(group, _fresh):
            step = st["step"] = st["step"] + 1
            self._apply(group, _radam, p, g, (st["exp_avg"], st["exp_avg_sq"]),
                        (step, lr, beta1, beta2, eps, wd, decoupled, maximize))


def _fresh(p: Tensor) -> dict[str, Any]:
    return {"step": 0.0, "exp_avg": zeros_like(p), "exp_avg_sq": zeros_like(p)}


def _radam(p: Tensor, g: Tensor, m: Tensor, v: Tensor, step: float, lr: float, beta1: float, beta2: float,
           eps: float, wd: float, decoupled: bool, maximize: bool) -> None:
    """One unfused RAdam update (PyTorch's sequence of operations)."""
    if decoupled and wd:
        g = -g if maximize else g
        p.mul_(1 - lr * wd)
    else:
        g = decayed_grad(p, g, wd, maximize)
    m.lerp_(g, 1 - beta1)
    v.mul_(beta2).addcmul_(g, g, value=1 - beta2)
    bc1, bc2 = 1 - beta1 ** step, 1 - beta2 ** step
    m_hat = m / bc1
    rho_inf = 2 / (1 - beta2) - 1
    rho_t = rho_inf - 2 * step * beta2 ** step / bc2
    if rho_t > 5:
        rect = ((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
        p.add_(m_hat * lr * (bc2 ** 0.5 / (v.sqrt() + eps)) * rect, alpha=-1.0)
    else:
        p.add_(m_hat * lr, alpha=-1.0)


register_step("radam_step", "fused_radam", _radam, ("add", "mul", "neg", "lerp", "addcmul", "sqrt", "div"))
