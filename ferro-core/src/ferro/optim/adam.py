"""Adam and AdamW (with AMSGrad), and the checks shared by the Adam family."""

from __future__ import annotations

from typing import Any

from .._core.tensor import Tensor
from .._creation import zeros_like
from .optimizer import Optimizer, check, decayed_grad, register_step

__all__ = ["Adam", "AdamW", "check_adam_family"]


def check_adam_family(group: dict[str, Any]) -> None:
    """Refuse eps, betas and weight_decay out of range, with PyTorch's messages."""
    check(group["eps"] >= 0.0, f"Invalid epsilon value: {group['eps']}")
    betas = group["betas"]
    check(len(betas) == 2, f"betas must be a pair (beta1, beta2), got {betas!r}")
    for i, b in enumerate(betas):
        check(0.0 <= b < 1.0, f"Invalid beta parameter at index {i}: {b}")
    check(group["weight_decay"] >= 0.0, f"Invalid weight_decay value: {group['weight_decay']}")


class Adam(Optimizer):
    """``torch.optim.Adam``: moving averages of the gradient and its square, bias-corrected.

    ``amsgrad`` divides by the running maximum of the second moment;
    ``decoupled_weight_decay`` shrinks the parameter (AdamW) instead of adding
    ``weight_decay * p`` to the gradient.
    """

    _step_op = "adam_step"
    _tuple_keys = ("betas",)

    def __init__(self, params: Any, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, amsgrad: bool = False, *, foreach: bool | None = None,
                 maximize: bool = False, fused: bool | None = None, decoupled_weight_decay: bool = False) -> None:
        defaults = {"lr": lr, "betas": tuple(betas), "eps": eps, "weight_decay": weight_decay, "amsgrad": amsgrad,
                    "maximize": maximize, "foreach": foreach, "fused": fused,
                    "decoupled_weight_decay": decoupled_weight_decay}
        super().__init__(params, defaults)

    def _check_group(self, group: dict[str, Any]) -> None:
        super()._check_group(group)
        check_adam_family(group)

    def _update_group(self, group: dict[str, Any]) -> None:
        lr, (beta1, beta2), eps, wd = group["lr"], group["betas"], group["eps"], group["weight_decay"]
        amsgrad, maximize, decoupled = group["amsgrad"], group["maximize"], group["decoupled_weight_decay"]
        apply = self._apply
        for p, g, st in self._with_grads(group, _fresh_moments):
            step = st["step"] = st["step"] + 1
            vmax = None
            if amsgrad:
                vmax = st.get("max_exp_avg_sq")
                if vmax is None:  # from zero, also when amsgrad is switched on after some steps
                    vmax = st["max_exp_avg_sq"] = zeros_like(p)
            apply(group, _adam, p, g, (st["exp_avg"], st["exp_avg_sq"], vmax),
                  (step, lr, beta1, beta2, eps, wd, decoupled, amsgrad, maximize))


def _fresh_moments(p: Tensor) -> dict[str, Any]:
    return {"step": 0.0, "exp_avg": zeros_like(p), "exp_avg_sq": zeros_like(p)}


def moments(p: Tensor, g: Tensor, m: Tensor, v: Tensor, lr: float, beta1: float, beta2: float, wd: float,
            decoupled: bool, maximize: bool) -> Tensor:
    """Weight decay (L2 on the gradient, or AdamW's decoupled decay of the parameter), then the first and second
    moment updates of the Adam family, in place; shared by Adam, AdamW and NAdam. Returns the decayed gradient."""
    if decoupled:
        g = decayed_grad(p, g, 0, maximize)
        if wd:
            p.mul_(1 - lr * wd)
    else:
        g = decayed_grad(p, g, wd, maximize)
    m.lerp_(g, 1 - beta1)
    v.mul_(beta2)
    v.add_(g * g * (1 - beta2))
    return g


def _adam(p: Tensor, g: Tensor, m: Tensor, v: Tensor, vmax: Tensor | None, step: float, lr: float, beta1: float,
          beta2: float, eps: float, wd: float, decoupled: bool, amsgrad: bool, maximize: bool) -> None:
    """One unfused Adam update (grad mode off); ``fused_adam`` kernels compute the same sequence of operations."""
    moments(p, g, m, v, lr, beta1, beta2, wd, decoupled, maximize)
    if amsgrad:
        vmax.maximum_(v)
        v = vmax
    step_size = lr / (1 - beta1 ** step)
    bias_correction2_sqrt = (1 - beta2 ** step) ** 0.5
    denom = v.sqrt() / bias_correction2_sqrt + eps
    p.add_(m / denom * -step_size)


class AdamW(Adam):
    """``torch.optim.AdamW``: Adam with decoupled weight decay (``p *= 1 - lr * weight_decay``), 0.01 by default."""

    def __init__(self, params: Any, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2, amsgrad: bool = False, *, maximize: bool = False,
                 foreach: bool | None = None, fused: bool | None = None) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach, maximize=maximize,
                         fused=fused, decoupled_weight_decay=True)


register_step("adam_step", "fused_adam", _adam, ("neg", "maximum"))  # maximize, amsgrad: not in the test data
