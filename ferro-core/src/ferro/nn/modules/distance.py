"""``CosineSimilarity`` and ``PairwiseDistance``."""

from __future__ import annotations

from ..._core.tensor import Tensor
from .. import functional as F  # noqa: N812 - the name PyTorch code uses
from .module import Module

__all__ = ["CosineSimilarity", "PairwiseDistance"]


class CosineSimilarity(Module):
    """Cosine of the angle between two inputs along ``dim``."""

    def __init__(self, dim: int = 1, eps: float = 1e-8) -> None:
        super().__init__()
        self.dim, self.eps = dim, eps

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        """The cosine similarity of ``x1`` and ``x2``."""
        return F.cosine_similarity(x1, x2, self.dim, self.eps)


class PairwiseDistance(Module):
    """The ``p``-norm of ``x1 - x2 + eps`` along the last dimension."""

    def __init__(self, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> None:
        super().__init__()
        self.norm, self.eps, self.keepdim = p, eps, keepdim

    def forward(self, x1: Tensor, x2: Tensor) -> Tensor:
        """The distance between ``x1`` and ``x2``."""
        return F.pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)
