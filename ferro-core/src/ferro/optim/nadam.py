"""NAdam: Adam with Nesterov momentum and a momentum-decay schedule."""

from __future__ import annotations

from typing import Any

from .._core.tensor import Tensor
from .._creation import zeros_like
from .adam import check_adam_family, moments
from .optimizer import Optimizer, check, register_step

__all__ = ["NAdam"]


class NAdam(Optimizer):
    """``torch.optim.NAdam`` (Dozat 2016), with ``momentum_decay`` and optional decoupled weight decay.

    ``mu_product`` is kept as a Python float (double precision; PyTorch keeps
    a float32 0-d tensor), so values agree with PyTorch to float32 rounding.
    """

    _tuple_keys = ("betas",)

    _step_op = "nadam_step"

    def __init__(self, params: Any, lr: float = 2e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, momentum_decay: float = 4e-3, decoupled_weight_decay: bool = False, *,
                 foreach: bool | None = None, maximize: bool = False) -> None:
        defaults = {"lr": lr, "betas": tuple(betas), "eps": eps, "weight_decay": weight_decay,
                    "momentum_decay": momentum_decay, "decoupled_weight_decay": decoupled_weight_decay,
                    "maximize": maximize, "foreach": foreach}
        super().__init__(params, defaults)

    def _check_group(self, group: dict[str, Any]) -> None:
        super()._check_group(group)
        check_adam_family(group)
        check(group["momentum_decay"] >= 0.0, f"Invalid momentum_decay value: {group['momentum_decay']}")

    def _update_group(self, group: dict[str, Any]) -> None:
        lr, (beta1, beta2), eps, wd = group["lr"], group["betas"], group["eps"], group["weight_decay"]
        momentum_decay, decoupled, maximize = group["momentum_decay"], group["decoupled_weight_decay"], \
            group["maximize"]
        apply = self._apply
        for p, g, st in self._with_grads(group, _fresh):
            step = st["step"] = st["step"] + 1
            mu = beta1 * (1.0 - 0.5 * (0.96 ** (step * momentum_decay)))
            mu_next = beta1 * (1.0 - 0.5 * (0.96 ** ((step + 1) * momentum_decay)))
            mu_product = st["mu_product"] = st["mu_product"] * mu
            apply(group, _nadam, p, g, (st["exp_avg"], st["exp_avg_sq"]),
                  (step, lr, beta1, beta2, eps, wd, mu, mu_next, mu_product, decoupled, maximize))


def _fresh(p: Tensor) -> dict[str, Any]:
    return {"step": 0.0, "mu_product": 1.0, "exp_avg": zeros_like(p), "exp_avg_sq": zeros_like(p)}


def _nadam(p: Tensor, g: Tensor, m: Tensor, v: Tensor, step: float, lr: float, beta1: float, beta2: float,
           eps: float, wd: float, mu: float, mu_next: float, mu_product: float, decoupled: bool,
           maximize: bool) -> None:
    """One unfused NAdam update (``mu_product`` already includes this step's ``mu``); ``fused_nadam``
    kernels compute the same sequence of operations."""
    g = moments(p, g, m, v, lr, beta1, beta2, wd, decoupled, maximize)
    denom = (v / (1 - beta2 ** step)).sqrt() + eps
    p.add_(g / denom * (-lr * (1.0 - mu) / (1.0 - mu_product)))
    p.add_(m / denom * ((-lr * mu_next) / (1.0 - mu_product * mu_next)))


register_step("nadam_step", "fused_nadam", _nadam)
