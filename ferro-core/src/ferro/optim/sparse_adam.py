"""SparseAdam: Adam's update applied only at the rows a sparse gradient holds (``nn.Embedding(sparse=True)``)."""

from __future__ import annotations

import math
from typing import Any

from .._core.layouts import LayoutTensor
from .._core.tensor import Tensor
from .adam import _fresh_moments, check_adam_family
from .optimizer import Optimizer

__all__ = ["SparseAdam"]


class SparseAdam(Optimizer):
    """``torch.optim.SparseAdam``: for sparse gradients, the moments and the parameter are updated only where
    the (coalesced) gradient has entries, with PyTorch's exact sequence of operations; a dense gradient is
    refused (use :class:`~ferro.optim.Adam`).

    >>> import ferro
    >>> emb = ferro.nn.Embedding(10, 3, sparse=True)
    >>> opt = ferro.optim.SparseAdam(emb.parameters(), lr=0.01)
    >>> emb(ferro.tensor([1, 4])).sum().backward()
    >>> opt.step()
    """

    _tuple_keys = ("betas",)

    def __init__(self, params: Any, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 maximize: bool = False) -> None:
        defaults = {"lr": lr, "betas": tuple(betas), "eps": eps, "maximize": maximize, "weight_decay": 0}
        super().__init__(params, defaults)

    def _check_group(self, group: dict[str, Any]) -> None:
        super()._check_group(group)
        check_adam_family(group)

    def _update_group(self, group: dict[str, Any]) -> None:
        lr, (beta1, beta2), eps, maximize = group["lr"], group["betas"], group["eps"], group["maximize"]
        for p, g, st in self._with_grads(group, _fresh_moments):
            if not isinstance(g, LayoutTensor):
                raise RuntimeError("SparseAdam does not support dense gradients, please consider Adam instead")
            st["step"] = st["step"] + 1
            _sparse_adam(p, -g if maximize else g, st["exp_avg"], st["exp_avg_sq"], st["step"], lr, beta1, beta2,
                         eps)


def _sparse_adam(p: Tensor, grad: Any, exp_avg: Tensor, exp_avg_sq: Tensor, step: float, lr: float, beta1: float,
                 beta2: float, eps: float) -> None:
    """One SparseAdam update of ``p`` and its moments at the entries of the sparse gradient ``grad``."""
    grad = grad.coalesce()
    values = grad._values()
    if not values.numel():
        return
    idx = grad._indices()
    nsparse = idx.shape[0]
    rows = idx[0]
    for d in range(1, nsparse):
        rows = rows * p.shape[d] + idx[d]

    def flat(t: Tensor) -> Tensor:
        return t.view(-1, *t.shape[nsparse:])

    m, v = flat(exp_avg), flat(exp_avg_sq)
    old_m = m.index_select(0, rows)
    m_update = (values - old_m) * (1 - beta1)
    m.index_add_(0, rows, m_update)
    old_v = v.index_select(0, rows)
    v_update = (values * values - old_v) * (1 - beta2)
    v.index_add_(0, rows, v_update)
    numer = m_update + old_m
    denom = (v_update + old_v).sqrt() + eps
    step_size = lr * math.sqrt(1 - beta2 ** step) / (1 - beta1 ** step)
    flat(p).index_add_(0, rows, numer / denom * -step_size)

