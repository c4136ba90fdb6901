"""Stochastic gradient descent, with momentum (heavy-ball or Nesterov), dampening and weight decay."""

from __future__ import annotations

from typing import Any

from .._creation import empty_like
from .._tensor import Tensor
from .optimizer import Optimizer, check

__all__ = ["SGD"]


class SGD(Optimizer):
    """``torch.optim.SGD``: ``p -= lr * g``, with ``g`` the gradient plus ``weight_decay * p``, through a
    momentum buffer ``b = momentum * b + (1 - dampening) * g`` (``g + momentum * b`` with ``nesterov``).

    >>> import ferro
    >>> w = ferro.tensor([1.0, 2.0], requires_grad=True)
    >>> opt = ferro.optim.SGD([w], lr=0.1)
    >>> (w * w).sum().backward()
    >>> opt.step()
    >>> w
    tensor([0.8000, 1.6000], requires_grad=True)
    """

    _fused_name = "fused_sgd"

    def __init__(self, params: Any, lr: float = 1e-3, momentum: float = 0, dampening: float = 0,
                 weight_decay: float = 0, nesterov: bool = False, *, maximize: bool = False,
                 foreach: bool | None = None, fused: bool | None = None) -> None:
        defaults = {"lr": lr, "momentum": momentum, "dampening": dampening, "weight_decay": weight_decay,
                    "nesterov": nesterov, "maximize": maximize, "foreach": foreach, "fused": fused}
        super().__init__(params, defaults)

    def _check_group(self, group: dict[str, Any]) -> None:
        super()._check_group(group)
        check(group["momentum"] >= 0.0, f"Invalid momentum value: {group['momentum']}")
        check(group["weight_decay"] >= 0.0, f"Invalid weight_decay value: {group['weight_decay']}")
        check(not group["nesterov"] or (group["momentum"] > 0 and group["dampening"] == 0),
              "Nesterov momentum requires a momentum and zero dampening")

    def _update_group(self, group: dict[str, Any]) -> None:
        lr, momentum, dampening = group["lr"], group["momentum"], group["dampening"]
        wd, nesterov, maximize = group["weight_decay"], group["nesterov"], group["maximize"]
        state = self.state
        for p in group["params"]:
            g = p._grad
            if g is None:
                continue
            buf = None
            if momentum:
                st = state.get(p)
                if st is None:
                    st = state[p] = {}
                buf = st.get("momentum_buffer")
            kernel = self._kernel_for(group, p)
            if kernel is not None:
                first = bool(momentum) and buf is None
                if first:
                    buf = st["momentum_buffer"] = empty_like(p)
                kernel(p._data, g._data, None if buf is None else buf._data, lr, momentum, dampening, wd,
                       nesterov, maximize, first)
                p._vc[0] += 1
                if buf is not None:
                    buf._vc[0] += 1
                continue
            new_buf = _sgd(p, g, buf, lr, momentum, dampening, wd, nesterov, maximize)
            if new_buf is not None:
                st["momentum_buffer"] = new_buf


def _sgd(p: Tensor, g: Tensor, buf: Tensor | None, lr: float, momentum: float, dampening: float, wd: float,
         nesterov: bool, maximize: bool) -> Tensor | None:
    """One unfused SGD update of ``p`` (grad mode off); returns a new momentum buffer on the first step.
    ``fused_sgd`` kernels compute the same sequence of operations."""
    new = None
    if maximize:
        g = -g
    if wd:
        g = g + p * wd
    if momentum:
        if buf is None:
            buf = new = g.clone()
        else:
            buf.mul_(momentum)
            buf.add_(g * (1 - dampening) if dampening else g)
        g = g + buf * momentum if nesterov else buf
    p.add_(g * -lr)
    return new
