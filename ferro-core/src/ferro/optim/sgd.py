"""Stochastic gradient descent, with momentum (heavy-ball or Nesterov), dampening and weight decay."""

from __future__ import annotations

from typing import Any

from .._core.layouts import LayoutTensor
from .._core.tensor import Tensor
from .._creation import empty_like
from .optimizer import Optimizer, check, decayed_grad, register_step

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

    _step_op = "sgd_step"

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
        scalars = (group["lr"], group["momentum"], group["dampening"], group["weight_decay"], group["nesterov"],
                   group["maximize"])
        momentum = group["momentum"]
        state, apply = self.state, self._apply
        for p in group["params"]:
            g = p._grad
            if g is None:
                continue
            buf, first = None, False
            if momentum and isinstance(g, LayoutTensor):  # refused before any state is made
                raise NotImplementedError(f"SGD: momentum with a {g.describes} gradient (nn.Embedding(sparse=True)) "
                                          "is not supported; use momentum=0 or optim.SparseAdam")
            if momentum:
                st = state.get(p)
                if st is None:
                    st = state[p] = {}
                buf = st.get("momentum_buffer")
                if buf is None:
                    buf, first = empty_like(p), True
                    st["momentum_buffer"] = buf
            apply(group, _sgd, p, g, (buf,), (*scalars, first))


def _sgd(p: Tensor, g: Tensor, buf: Tensor | None, lr: float, momentum: float, dampening: float, wd: float,
         nesterov: bool, maximize: bool, first_step: bool) -> None:
    """One unfused SGD update (grad mode off); ``fused_sgd`` kernels compute the same sequence of operations.
    On the first step ``buf`` is uninitialized and takes the gradient (PyTorch clones it)."""
    g = decayed_grad(p, g, wd, maximize)
    if momentum:
        if first_step:
            buf.copy_(g)
        else:
            buf.mul_(momentum)
            buf.add_(g * (1 - dampening) if dampening else g)
        g = g + buf * momentum if nesterov else buf
    p.add_(g * -lr)


register_step("sgd_step", "fused_sgd", _sgd)
