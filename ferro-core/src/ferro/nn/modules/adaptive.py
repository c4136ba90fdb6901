"""``AdaptiveLogSoftmaxWithLoss``: the efficient softmax of Grave et al. for many classes, as PyTorch's: a head
over the frequent classes and one entry per cluster, and a low-rank tail per cluster of rarer classes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from ..._core.tensor import Tensor
from ..._creation import zeros
from ..._ops.elementwise import where
from ..._ops.shape import cat
from ...errors import ShapeError
from .container import ModuleList, Sequential
from .linear import Linear
from .module import Module

__all__ = ["AdaptiveLogSoftmaxWithLoss"]


class _ASMoutput(NamedTuple):
    output: Tensor
    loss: Tensor


class AdaptiveLogSoftmaxWithLoss(Module):
    """Log-probabilities of ``n_classes`` split at ``cutoffs``: ``head`` (Linear to the shortlist plus one logit
    per cluster), ``tail[i]`` (Linear to ``in_features // div_value^(i+1)``, then to the cluster's classes).
    ``forward(input, target)`` gives each target's log-probability and their mean negative (``output``,
    ``loss``); ``log_prob`` the full distribution, ``predict`` its argmax."""

    def __init__(self, in_features: int, n_classes: int, cutoffs: Sequence[int], div_value: float = 4.0,
                 head_bias: bool = False, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        cutoffs = list(cutoffs)
        if not cutoffs:
            raise ValueError("cutoffs should be a sequence of length larger than 0")
        if (cutoffs != sorted(cutoffs) or min(cutoffs) <= 0 or max(cutoffs) > n_classes - 1
                or len(set(cutoffs)) != len(cutoffs) or any(int(c) != c for c in cutoffs)):
            raise ValueError("cutoffs should be a sequence of unique, positive integers sorted in an increasing "
                             "order, where each value is between 1 and n_classes-1")
        kw = {"device": device, "dtype": dtype}
        self.in_features, self.n_classes, self.div_value, self.head_bias = in_features, n_classes, div_value, head_bias
        self.cutoffs = [*cutoffs, n_classes]
        self.shortlist_size, self.n_clusters = self.cutoffs[0], len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        self.head = Linear(in_features, self.head_size, bias=head_bias, **kw)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hidden = int(in_features // (div_value ** (i + 1)))
            self.tail.append(Sequential(Linear(in_features, hidden, bias=False, **kw),
                                        Linear(hidden, self.cutoffs[i + 1] - self.cutoffs[i], bias=False, **kw)))

    def reset_parameters(self) -> None:
        """Fresh initial values of the head and tails (Linear's defaults)."""
        self.head.reset_parameters()
        for projection in self.tail:
            for layer in projection:
                layer.reset_parameters()

    def forward(self, input_: Tensor, target_: Tensor) -> _ASMoutput:
        """``(output, loss)``: the log-probability of each target, and the mean of their negatives."""
        if target_.ndim == 1:
            if input_.ndim != 2 or input_.shape[0] != target_.shape[0]:
                raise ShapeError(f"AdaptiveLogSoftmaxWithLoss: a 1D target expects a 2D input of the same batch, got "
                                 f"input {list(input_.shape)} and target {list(target_.shape)}")
        elif target_.ndim == 0:
            if input_.ndim != 1:
                raise ShapeError(f"AdaptiveLogSoftmaxWithLoss: a 0D target expects a 1D input, got input "
                                 f"{list(input_.shape)}")
        else:
            raise ShapeError("AdaptiveLogSoftmaxWithLoss: 0D or 1D target tensor expected, multi-target not supported")
        batched = target_.ndim > 0
        x = input_ if batched else input_.unsqueeze(0)
        target = target_ if batched else target_.unsqueeze(0)
        if target.numel() and (bool((target < 0).any()) or bool((target >= self.n_classes).any())):
            raise ValueError(f"Target values should be in [0, {self.n_classes - 1}], but values in range "
                             f"[{int(target.min().item())}, {int(target.max().item())}] were found.")
        output = zeros(target.shape[0], dtype=x.dtype, device=x.device)
        gather_inds = target
        for i in range(1, self.n_clusters + 1):
            low, high = self.cutoffs[i - 1], self.cutoffs[i]
            mask = (target >= low) & (target < high)
            rows = mask.nonzero().reshape(-1)
            gather_inds = where(mask, self.shortlist_size + i - 1, gather_inds)
            if not rows.numel():
                continue
            cluster = self.tail[i - 1](x.index_select(0, rows)).log_softmax(1)
            local = cluster.gather(1, (target.index_select(0, rows) - low).unsqueeze(1)).squeeze(1)
            output = output.index_add(0, rows, local)
        head = self.head(x).log_softmax(1)
        output = output + head.gather(1, gather_inds.unsqueeze(1)).squeeze(1)
        loss = (-output).mean()
        return _ASMoutput(output if batched else output.squeeze(0), loss)

    def _full_log_prob(self, x: Tensor, head_output: Tensor) -> Tensor:
        head = head_output.log_softmax(1)
        parts = [head[:, :self.shortlist_size]]
        for i in range(self.n_clusters):
            cluster = self.tail[i](x).log_softmax(1)
            parts.append(cluster + head[:, self.shortlist_size + i].unsqueeze(1))
        return cat(parts, 1)

    def log_prob(self, input: Tensor) -> Tensor:
        """The log-probabilities of every class: (N, n_classes)."""
        return self._full_log_prob(input, self.head(input))

    def predict(self, input: Tensor) -> Tensor:
        """The most probable class of each example: (N,)."""
        return self.log_prob(input).argmax(1)
