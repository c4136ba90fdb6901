"""Muon: momentum whose update for a weight matrix is orthogonalized by a Newton-Schulz iteration."""

from __future__ import annotations

import math
from typing import Any

from .._core.dtypes import bfloat16
from .._core.tensor import Tensor
from .._creation import zeros_like
from .optimizer import Optimizer, check

__all__ = ["Muon"]

#: PyTorch's quintic Newton-Schulz coefficients and defaults.
_COEFFICIENTS = (3.4445, -4.7750, 2.0315)


def orthogonalize(grad: Tensor, coefficients: tuple[float, float, float], steps: int, eps: float) -> Tensor:
    """``grad``'s nearest semi-orthogonal matrix, approximately (``steps`` quintic Newton-Schulz iterations in
    bfloat16, as PyTorch's ``_zeropower_via_newtonschulz``)."""
    if steps >= 100:
        raise ValueError("Number of steps must be less than 100 for computational efficiency")
    if grad.ndim != 2:
        raise ValueError("Input tensor gradient must be a 2D matrix")
    if len(coefficients) != 3:
        raise ValueError("Coefficients must be a tuple of exactly 3 values")
    a, b, c = coefficients
    x = grad.to(bfloat16)
    tall = grad.shape[0] > grad.shape[1]
    if tall:
        x = x.mT
    x = x / x.norm().clamp(min=eps)
    for _ in range(steps):
        gram = x @ x.mT
        update = gram * b + (gram @ gram) * c
        x = x * a + update @ x
    return x.mT if tall else x


class Muon(Optimizer):
    """``torch.optim.Muon`` for 2-D parameters: ``B = lerp(B, g, 1 - momentum)``, the update ``lerp(g, B,
    momentum)`` (``nesterov``) or ``B``, orthogonalized, times ``lr * sqrt(max(1, rows / cols))``
    (``adjust_lr_fn='match_rms_adamw'``: ``0.2 * lr * sqrt(max(rows, cols))``), after the decoupled weight decay
    ``p *= 1 - lr * weight_decay``."""

    _tuple_keys = ("ns_coefficients",)

    def __init__(self, params: Any, lr: float = 1e-3, weight_decay: float = 0.1, momentum: float = 0.95,
                 nesterov: bool = True, ns_coefficients: tuple[float, float, float] = _COEFFICIENTS,
                 eps: float = 1e-7, ns_steps: int = 5, adjust_lr_fn: str | None = None) -> None:
        if adjust_lr_fn not in (None, "original", "match_rms_adamw"):
            raise ValueError(f"Adjust learning rate function {adjust_lr_fn} is not supported")
        defaults = {"lr": lr, "weight_decay": weight_decay, "momentum": momentum, "nesterov": nesterov,
                    "ns_coefficients": tuple(ns_coefficients), "eps": eps, "ns_steps": ns_steps,
                    "adjust_lr_fn": adjust_lr_fn}
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                if p.ndim != 2:
                    raise ValueError(f"Muon only supports 2D parameters whereas we found a parameter with size: "
                                     f"{list(p.shape)}")

    def _check_group(self, group: dict[str, Any]) -> None:
        super()._check_group(group)
        check(group["momentum"] >= 0.0, f"momentum should be >= 0 but is: {group['momentum']}")
        check(group["weight_decay"] >= 0.0, f"weight decay should be >= 0 but is: {group['weight_decay']}")

    def _update_group(self, group: dict[str, Any]) -> None:
        lr, wd, mu = group["lr"], group["weight_decay"], group["momentum"]
        for p, g, st in self._with_grads(group, lambda p: {"momentum_buffer": zeros_like(p)}):
            if p.is_complex():
                raise RuntimeError("Muon does not support complex parameters")
            buf = st["momentum_buffer"]
            buf.lerp_(g, 1 - mu)
            update = g.lerp(buf, mu) if group["nesterov"] else buf
            update = orthogonalize(update, group["ns_coefficients"], group["ns_steps"], group["eps"])
            rows, cols = p.shape
            if group["adjust_lr_fn"] == "match_rms_adamw":
                adjusted = lr * 0.2 * math.sqrt(max(rows, cols))
            else:
                adjusted = lr * math.sqrt(max(1, rows / cols))
            p.mul_(1 - lr * wd)
            p.add_(update.to(p.dtype), alpha=-adjusted)
