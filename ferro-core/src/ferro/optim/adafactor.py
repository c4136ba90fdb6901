"""Adafactor: Adam-like steps whose second moment of a matrix is kept factored, as a row and a column
average (memory sublinear in the parameter's size)."""

from __future__ import annotations

import math
from typing import Any

from .._core.tensor import Tensor
from .._creation import zeros, zeros_like
from .optimizer import Optimizer, check

__all__ = ["Adafactor"]

#: The machine epsilon of each floating dtype (PyTorch's default eps1: finfo(param.dtype).eps).
_EPS = {"float16": 2.0 ** -10, "bfloat16": 2.0 ** -7, "float32": 2.0 ** -23, "float64": 2.0 ** -52}


class Adafactor(Optimizer):
    """``torch.optim.Adafactor``: per step ``t``, ``beta2_t = 1 - t^beta2_decay``; a matrix keeps the row and
    column means of ``g^2`` (their outer product over their mean estimates the second moment), a vector the
    whole; the update ``g / sqrt(v)`` is clipped to RMS ``d`` and scaled by ``max(eps2, RMS(p)) *
    min(lr, 1 / sqrt(t))``; ``weight_decay`` is decoupled (``p *= 1 - lr * weight_decay``)."""

    _tuple_keys = ("eps",)

    def __init__(self, params: Any, lr: float = 1e-2, beta2_decay: float = -0.8,
                 eps: tuple[float | None, float] = (None, 1e-3), d: float = 1.0, weight_decay: float = 0.0, *,
                 foreach: bool | None = None, maximize: bool = False) -> None:
        defaults = {"lr": lr, "beta2_decay": beta2_decay, "eps": tuple(eps), "d": d, "weight_decay": weight_decay,
                    "foreach": foreach, "maximize": maximize}
        super().__init__(params, defaults)

    def _check_group(self, group: dict[str, Any]) -> None:
        super()._check_group(group)
        eps1, eps2 = group["eps"]
        check(group["beta2_decay"] <= 0.0, f"beta2_decay should be <= 0 but is: {group['beta2_decay']}")
        check(eps1 is None or eps1 >= 0.0, f"epsilon1 should be >= 0 but is: {eps1}")
        check(eps2 >= 0.0, f"epsilon2 should be >= 0 but is: {eps2}")
        check(group["d"] >= 1.0, f"Clipping threshold d should be >= 1 but is: {group['d']}")
        check(group["weight_decay"] >= 0.0, f"weight_decay should be >= 0 but is: {group['weight_decay']}")

    def _update_group(self, group: dict[str, Any]) -> None:
        lr, decay, (eps1, eps2), d, wd = (group["lr"], group["beta2_decay"], group["eps"], group["d"],
                                          group["weight_decay"])
        for p, g, st in self._with_grads(group, _fresh):
            if p.is_complex():
                raise RuntimeError("Adafactor does not support complex parameters")
            g = -g if group["maximize"] else g
            e1 = _EPS.get(p.dtype.name, 2.0 ** -23) if eps1 is None else eps1
            st["step"] = step = st["step"] + 1
            beta2_t = step ** decay
            rho = min(lr, 1 / math.sqrt(step))
            alpha = max(eps2, float(p.norm(2).item()) / math.sqrt(p.numel())) * rho
            if wd:
                p.mul_(1 - lr * wd)
            if g.ndim > 1:
                row, col = st["row_var"], st["col_var"]
                row.lerp_(g.norm(dim=-1, keepdim=True).square() / g.shape[-1], beta2_t)
                col.lerp_(g.norm(dim=-2, keepdim=True).square() / g.shape[-2], beta2_t)
                var = (row @ col) / row.mean(dim=-2, keepdim=True).clamp(min=e1)
            else:
                st["variance"].lerp_(g * g, beta2_t)
                var = st["variance"]
            update = var.clamp(min=e1 * e1).rsqrt() * g
            denom = max(1.0, float(update.norm(2).item()) / (math.sqrt(update.numel()) * d))
            p.add_(update, alpha=-alpha / denom)


def _fresh(p: Tensor) -> dict[str, Any]:
    if p.ndim > 1:
        row, col = list(p.shape), list(p.shape)
        row[-1], col[-2] = 1, 1
        return {"step": 0.0, "row_var": zeros(*row, dtype=p.dtype, device=p.device),
                "col_var": zeros(*col, dtype=p.dtype, device=p.device)}
    return {"step": 0.0, "variance": zeros_like(p)}
