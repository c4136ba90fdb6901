"""Rprop: per-element step sizes that grow while the gradient keeps its sign and shrink when it flips."""

from __future__ import annotations

from typing import Any

from .._core.tensor import Tensor
from .._creation import full_like, zeros_like
from .._ops.elementwise import where
from .optimizer import Optimizer, check, register_step

__all__ = ["Rprop"]


class Rprop(Optimizer):
    """``torch.optim.Rprop``: the step size of each element is multiplied by ``etas[1]`` when the gradient keeps
    its sign, by ``etas[0]`` when it flips (and that step is skipped), kept within ``step_sizes``; the parameter
    moves by ``-sign(g) * step``."""

    _tuple_keys = ("etas", "step_sizes")
    _step_op = "rprop_step"

    def __init__(self, params: Any, lr: float = 1e-2, etas: tuple[float, float] = (0.5, 1.2),
                 step_sizes: tuple[float, float] = (1e-6, 50), *, capturable: bool = False,
                 foreach: bool | None = None, maximize: bool = False, differentiable: bool = False) -> None:
        defaults = {"lr": lr, "etas": tuple(etas), "step_sizes": tuple(step_sizes), "capturable": capturable,
                    "foreach": foreach, "maximize": maximize, "differentiable": differentiable}
        super().__init__(params, defaults)

    def _check_group(self, group: dict[str, Any]) -> None:
        super()._check_group(group)
        minus, plus = group["etas"]
        check(0.0 < minus < 1.0 < plus, f"Invalid eta values: {minus}, {plus}")

    def _update_group(self, group: dict[str, Any]) -> None:
        (minus, plus), (lo, hi), maximize = group["etas"], group["step_sizes"], group["maximize"]
        lr = group["lr"]
        for p, g, st in self._with_grads(group, lambda p: _fresh(p, lr)):
            st["step"] = st["step"] + 1
            self._apply(group, _rprop, p, g, (st["prev"], st["step_size"]), (minus, plus, lo, hi, maximize))


def _fresh(p: Tensor, lr: float) -> dict[str, Any]:
    return {"step": 0.0, "prev": zeros_like(p), "step_size": full_like(p, lr)}


def _rprop(p: Tensor, g: Tensor, prev: Tensor, step_size: Tensor, minus: float, plus: float, lo: float, hi: float,
           maximize: bool) -> None:
    """One unfused Rprop update (PyTorch's sequence of operations)."""
    g = -g if maximize else g
    sign = (g * prev).sign()
    ones = sign * 0 + 1
    factor = where(sign > 0, plus, where(sign < 0, minus, ones))
    step_size.mul_(factor).clamp_(lo, hi)
    g = where(factor == minus, 0.0, g)
    p.addcmul_(g.sign(), step_size, value=-1)
    prev.copy_(g)


register_step("rprop_step", "fused_rprop", _rprop, ("mul", "add", "sign", "gt", "lt", "eq", "where", "clamp",
                                                    "addcmul", "neg"))
