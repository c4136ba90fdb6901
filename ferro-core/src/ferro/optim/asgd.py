"""ASGD: SGD whose iterates are also averaged (the average ``ax`` starts after ``t0`` steps)."""

from __future__ import annotations

import struct
from typing import Any

from .._core.tensor import Tensor
from .._creation import zeros_like
from .optimizer import Optimizer, check, decayed_grad, register_step

__all__ = ["ASGD"]


class ASGD(Optimizer):
    """``torch.optim.ASGD``: ``p = p * (1 - lambd * eta) - eta * g``, the average ``ax`` of the iterates
    kept in the state; ``eta = lr / (1 + lambd * lr * t)^alpha``, ``mu = 1 / max(1, t - t0)``."""

    _step_op = "asgd_step"

    def __init__(self, params: Any, lr: float = 1e-2, lambd: float = 1e-4, alpha: float = 0.75, t0: float = 1e6,
                 weight_decay: float = 0, foreach: bool | None = None, maximize: bool = False,
                 differentiable: bool = False, capturable: bool = False) -> None:
        defaults = {"lr": lr, "lambd": lambd, "alpha": alpha, "t0": t0, "weight_decay": weight_decay,
                    "foreach": foreach, "maximize": maximize, "differentiable": differentiable,
                    "capturable": capturable}
        super().__init__(params, defaults)

    def _check_group(self, group: dict[str, Any]) -> None:
        super()._check_group(group)
        check(group["weight_decay"] >= 0.0, f"Invalid weight_decay value: {group['weight_decay']}")

    def _update_group(self, group: dict[str, Any]) -> None:
        lr, lambd, alpha, t0 = group["lr"], group["lambd"], group["alpha"], group["t0"]
        wd, maximize = group["weight_decay"], group["maximize"]
        for p, g, st in self._with_grads(group, lambda p: _fresh(p, lr)):
            st["step"] = step = st["step"] + 1
            self._apply(group, _asgd, p, g, (st["ax"],), (st["eta"], st["mu"], lambd, wd, maximize))
            st["eta"] = _float32(lr / ((1 + lambd * lr * step) ** alpha))
            st["mu"] = _float32(1 / max(1, step - t0))


def _float32(v: float) -> float:
    """``v`` rounded to float32: PyTorch keeps eta and mu as float32 tensors, and the steps use them so."""
    return struct.unpack("f", struct.pack("f", v))[0]


def _fresh(p: Tensor, lr: float) -> dict[str, Any]:
    return {"step": 0.0, "eta": _float32(lr), "mu": 1.0, "ax": zeros_like(p)}


def _asgd(p: Tensor, g: Tensor, ax: Tensor, eta: float, mu: float, lambd: float, wd: float, maximize: bool) -> None:
    """One unfused ASGD update (PyTorch's sequence of operations)."""
    g = decayed_grad(p, g, wd, maximize)
    p.mul_(1 - lambd * eta)
    p.add_(g, alpha=-eta)
    if mu != 1:
        ax.add_((p - ax) * mu)
    else:
        ax.copy_(p)


register_step("asgd_step", "fused_asgd", _asgd, ("mul", "add", "sub", "neg"))
