"""``Embedding``: a lookup table of learned vectors."""

from __future__ import annotations

import importlib
from typing import Any

from ..._core.tensor import Tensor
from ..._creation import empty
from ...autograd import no_grad
from .. import functional as F  # noqa: N812 - the name PyTorch code uses
from .. import init
from ..parameter import Parameter
from .module import Module

__all__ = ["Embedding"]


class Embedding(Module):
    """Rows of ``weight`` (num_embeddings, embedding_dim) at integer indices; weights start as N(0, 1).

    The row at ``padding_idx`` starts at zero and gets no gradient. With ``max_norm``, looked-up rows
    whose ``norm_type``-norm exceeds it are rescaled in place first, as in PyTorch. With
    ``scale_grad_by_freq``, each row's gradient is divided by how often its index occurs in the batch.
    With ``sparse=True``, ``weight.grad`` is a sparse COO tensor holding only the looked-up rows, which
    ``optim.SGD`` and ``optim.SparseAdam`` apply.
    """

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx: int | None = None,
                 max_norm: float | None = None, norm_type: float = 2.0, scale_grad_by_freq: bool = False,
                 sparse: bool = False, _weight: Tensor | None = None, _freeze: bool = False, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise ValueError(f"Embedding: padding_idx {padding_idx} must be within num_embeddings "
                                 f"({num_embeddings})")
            padding_idx = padding_idx % num_embeddings
        self.num_embeddings, self.embedding_dim, self.padding_idx = num_embeddings, embedding_dim, padding_idx
        self.max_norm, self.norm_type = max_norm, norm_type
        self.scale_grad_by_freq, self.sparse = scale_grad_by_freq, sparse
        if _weight is None:
            self.weight = Parameter(empty(num_embeddings, embedding_dim, device=device, dtype=dtype),
                                    requires_grad=not _freeze)
            self.reset_parameters()
        else:
            if tuple(_weight.shape) != (num_embeddings, embedding_dim):
                raise ValueError(f"Embedding: _weight has shape {list(_weight.shape)}, expected "
                                 f"[{num_embeddings}, {embedding_dim}]")
            self.weight = Parameter(_weight, requires_grad=not _freeze)

    def reset_parameters(self) -> None:
        """N(0, 1) weights, the padding row zero."""
        init.normal_(self.weight)
        if self.padding_idx is not None:
            with no_grad():
                self.weight[self.padding_idx] = 0

    def _renorm(self, input: Tensor) -> None:
        with no_grad():
            rows = input.reshape(-1).unique()
            picked = self.weight[rows]
            norms = picked.norm(self.norm_type, dim=-1, keepdim=True)
            scale = (self.max_norm / (norms + 1e-7)).clamp(max=1.0)
            self.weight[rows] = picked * scale

    def forward(self, input: Tensor) -> Tensor:
        """The rows of ``weight`` at ``input``'s indices: shape ``input.shape + (embedding_dim,)``."""
        if self.max_norm is not None:
            self._renorm(input)
        if self.sparse:  # ferro.sparse is loaded on first use, not with ferro.nn
            out = importlib.import_module("ferro.sparse._embedding").embedding(input, self.weight, self.padding_idx)
        else:
            out = F.embedding(input, self.weight, self.padding_idx)
        if self.scale_grad_by_freq and out.requires_grad:
            # The same values, with the gradient of each lookup divided by its index's count.
            counts = input.reshape(-1).bincount(minlength=self.num_embeddings)[input].unsqueeze(-1)
            scale = 1.0 / counts.to(out.dtype)
            out = out * scale + out.detach() * (1 - scale)
        return out

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm}"
        if self.norm_type != 2:
            s += f", norm_type={self.norm_type}"
        if self.scale_grad_by_freq:
            s += ", scale_grad_by_freq=True"
        return s

    @classmethod
    def from_pretrained(cls, embeddings: Tensor, freeze: bool = True, padding_idx: int | None = None,
                        max_norm: float | None = None, norm_type: float = 2.0, scale_grad_by_freq: bool = False,
                        sparse: bool = False) -> Embedding:
        """An Embedding holding ``embeddings`` (2-D); frozen (no gradient) unless ``freeze=False``."""
        if embeddings.ndim != 2:
            raise ValueError(f"Embeddings parameter is expected to be 2-dimensional, got shape "
                             f"{list(embeddings.shape)}")
        rows, cols = embeddings.shape
        return cls(rows, cols, padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse, _weight=embeddings,
                   _freeze=freeze)
