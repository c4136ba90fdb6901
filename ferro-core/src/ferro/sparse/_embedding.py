"""``nn.Embedding(sparse=True)``: a lookup whose weight gradient is a sparse COO tensor of the looked-up rows."""

from __future__ import annotations

from typing import Any

from .._core.dtypes import int64
from .._core.records import ops
from .._core.tensor import Tensor
from ..autograd._function import Function
from ._tensors import make_coo

__all__ = ["embedding"]


class _SparseEmbedding(Function):
    @staticmethod
    def forward(ctx: Any, weight: Tensor, input: Tensor, padding_idx: int | None) -> Tensor:
        ctx.input, ctx.padding_idx, ctx.shape = input, padding_idx, tuple(weight.shape)
        return ops.embedding(input, weight, padding_idx)

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple[Any, ...]:
        rows = ctx.input.reshape(-1)
        values = g.reshape(-1, ctx.shape[1])
        if ctx.padding_idx is not None:  # as PyTorch: the padding row's entries are left out
            keep = rows != ctx.padding_idx
            rows, values = rows[keep], values[keep]
        return make_coo(rows.to(int64).reshape(1, -1), values, ctx.shape, False), None, None


def embedding(input: Tensor, weight: Tensor, padding_idx: int | None = None) -> Tensor:
    """The rows of ``weight`` at ``input``; ``weight``'s gradient is a sparse COO tensor (one entry per
    lookup, uncoalesced, as PyTorch's)."""
    return _SparseEmbedding.apply(weight, input, padding_idx)
