"""Transformer layers, as ``torch.nn``: encoder and decoder layers, their stacks, and ``Transformer``.

Submodule names (``self_attn``, ``multihead_attn``, ``linear1``, ``linear2``, ``norm1``...) are
PyTorch's, so a PyTorch ``state_dict`` loads as is. ``is_causal`` is, as in PyTorch, a hint that
the mask given is the causal mask; ``None`` is taken as "no hint" (PyTorch would compare the mask
with a causal one to find out, which changes only which kernel runs, never the result).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from typing import Any

from ... import _api as ferro
from ..._core.tensor import Tensor
from ...errors import ShapeError
from .. import functional as F  # noqa: N812 - PyTorch's spelling
from .. import init
from .attention import MultiheadAttention
from .container import ModuleList
from .dropout import Dropout
from .linear import Linear
from .module import Module
from .normalization import LayerNorm

__all__ = ["TransformerEncoderLayer", "TransformerEncoder", "TransformerDecoderLayer", "TransformerDecoder",
           "Transformer"]

_ACTIVATIONS: dict[str, Callable[[Tensor], Tensor]] = {"relu": F.relu, "gelu": F.gelu}


def _activation(activation: str | Callable[[Tensor], Tensor]) -> Callable[[Tensor], Tensor]:
    if isinstance(activation, str):
        if activation not in _ACTIVATIONS:
            raise ValueError(f"activation should be relu/gelu, not {activation!r}")
        return _ACTIVATIONS[activation]
    if not callable(activation):
        raise TypeError(f"activation must be 'relu', 'gelu' or a callable, got {type(activation).__name__}")
    return activation


def _clones(module: Module, n: int) -> ModuleList:
    return ModuleList([copy.deepcopy(module) for _ in range(n)])


def _hint(is_causal: bool | None) -> bool:
    return bool(is_causal)


def generate_square_subsequent_mask(sz: int, device: Any = None, dtype: Any = None) -> Tensor:
    """The (sz, sz) causal mask: ``-inf`` above the diagonal (future positions), 0 elsewhere."""
    full = ferro.full((sz, sz), -math.inf, dtype=dtype or ferro.get_default_dtype(), device=device)
    return full.triu(1)


class _FeedForward:
    """The position-wise feed-forward block shared by the encoder and decoder layers."""

    linear1: Linear
    linear2: Linear
    dropout: Dropout
    activation: Callable[[Tensor], Tensor]

    def _ff_block(self, x: Tensor, out_dropout: Dropout) -> Tensor:
        return out_dropout(self.linear2(self.dropout(self.activation(self.linear1(x)))))

    def _init_ff(self, d_model: int, dim_feedforward: int, dropout: float, activation: Any, bias: bool,
                 kw: dict[str, Any]) -> None:
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **kw)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **kw)
        self.activation = _activation(activation)
        self.activation_relu_or_gelu = 1 if self.activation is F.relu else 2 if self.activation is F.gelu else 0


class TransformerEncoderLayer(_FeedForward, Module):
    """Self-attention then a feed-forward network, each with a residual connection and layer norm.

    As ``torch.nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward=2048, dropout=0.1,
    activation=relu, layer_norm_eps=1e-5, batch_first=False, norm_first=False, bias=True)``.
    ``norm_first`` normalizes before each block (pre-LN) instead of after (post-LN).

    >>> import ferro
    >>> layer = ferro.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, batch_first=True)
    >>> list(layer(ferro.randn(3, 5, 8)).shape)
    [3, 5, 8]
    """

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation: str | Callable[[Tensor], Tensor] = F.relu, layer_norm_eps: float = 1e-5,
                 batch_first: bool = False, norm_first: bool = False, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        Module.__init__(self)
        kw = {"device": device, "dtype": dtype}
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first, **kw)
        self._init_ff(d_model, dim_feedforward, dropout, activation, bias, kw)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)

    def forward(self, src: Tensor, src_mask: Tensor | None = None, src_key_padding_mask: Tensor | None = None,
                is_causal: bool = False) -> Tensor:
        """``src`` (S, N, E) ((N, S, E) with ``batch_first``, or unbatched (S, E)); masks as MultiheadAttention's."""
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            return x + self._ff_block(self.norm2(x), self.dropout2)
        x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
        return self.norm2(x + self._ff_block(x, self.dropout2))

    def _sa_block(self, x: Tensor, mask: Tensor | None, key_padding_mask: Tensor | None, is_causal: bool) -> Tensor:
        out = self.self_attn(x, x, x, attn_mask=mask, key_padding_mask=key_padding_mask, need_weights=False,
                             is_causal=is_causal)[0]
        return self.dropout1(out)


class TransformerDecoderLayer(_FeedForward, Module):
    """Self-attention, attention to the encoder's ``memory``, then a feed-forward network.

    As ``torch.nn.TransformerDecoderLayer`` (same arguments as :class:`TransformerEncoderLayer`).

    >>> import ferro
    >>> layer = ferro.nn.TransformerDecoderLayer(8, 2, dim_feedforward=16)
    >>> list(layer(ferro.randn(4, 3, 8), ferro.randn(5, 3, 8)).shape)
    [4, 3, 8]
    """

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation: str | Callable[[Tensor], Tensor] = F.relu, layer_norm_eps: float = 1e-5,
                 batch_first: bool = False, norm_first: bool = False, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        Module.__init__(self)
        kw = {"device": device, "dtype": dtype}
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first, **kw)
        self.multihead_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias, batch_first=batch_first,
                                                 **kw)
        self._init_ff(d_model, dim_feedforward, dropout, activation, bias, kw)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm3 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.dropout3 = Dropout(dropout)

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Tensor | None = None,
                memory_mask: Tensor | None = None, tgt_key_padding_mask: Tensor | None = None,
                memory_key_padding_mask: Tensor | None = None, tgt_is_causal: bool = False,
                memory_is_causal: bool = False) -> Tensor:
        """``tgt`` (T, N, E) and ``memory`` (S, N, E) ((N, ., E) with ``batch_first``)."""
        x = tgt
        if self.norm_first:
            x = x + self._attend(self.self_attn, self.dropout1, self.norm1(x), None, tgt_mask,
                                 tgt_key_padding_mask, tgt_is_causal)
            x = x + self._attend(self.multihead_attn, self.dropout2, self.norm2(x), memory, memory_mask,
                                 memory_key_padding_mask, memory_is_causal)
            return x + self._ff_block(self.norm3(x), self.dropout3)
        x = self.norm1(x + self._attend(self.self_attn, self.dropout1, x, None, tgt_mask, tgt_key_padding_mask,
                                        tgt_is_causal))
        x = self.norm2(x + self._attend(self.multihead_attn, self.dropout2, x, memory, memory_mask,
                                        memory_key_padding_mask, memory_is_causal))
        return self.norm3(x + self._ff_block(x, self.dropout3))

    @staticmethod
    def _attend(attn: MultiheadAttention, dropout: Dropout, x: Tensor, mem: Tensor | None, mask: Tensor | None,
                key_padding_mask: Tensor | None, is_causal: bool) -> Tensor:
        kv = x if mem is None else mem
        out = attn(x, kv, kv, attn_mask=mask, key_padding_mask=key_padding_mask, need_weights=False,
                   is_causal=is_causal)[0]
        return dropout(out)


class TransformerEncoder(Module):
    """A stack of ``num_layers`` copies of ``encoder_layer``, then an optional ``norm``.

    As ``torch.nn.TransformerEncoder(encoder_layer, num_layers, norm=None)``; the copies start
    with the same parameters. ``enable_nested_tensor`` and ``mask_check`` are accepted for
    compatibility (ferro has no nested tensors).

    >>> import ferro
    >>> layer = ferro.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16)
    >>> enc = ferro.nn.TransformerEncoder(layer, num_layers=2)
    >>> list(enc(ferro.randn(5, 3, 8)).shape)
    [5, 3, 8]
    """

    def __init__(self, encoder_layer: Module, num_layers: int, norm: Module | None = None,
                 enable_nested_tensor: bool = True, mask_check: bool = True) -> None:
        super().__init__()
        self.layers = _clones(encoder_layer, num_layers)
        self.num_layers, self.norm = num_layers, norm
        self.enable_nested_tensor, self.use_nested_tensor, self.mask_check = enable_nested_tensor, False, mask_check

    def forward(self, src: Tensor, mask: Tensor | None = None, src_key_padding_mask: Tensor | None = None,
                is_causal: bool | None = None) -> Tensor:
        """Run ``src`` through every layer with the same ``mask`` and ``src_key_padding_mask``."""
        out = src
        for layer in self.layers:
            out = layer(out, src_mask=mask, src_key_padding_mask=src_key_padding_mask, is_causal=_hint(is_causal))
        return out if self.norm is None else self.norm(out)


class TransformerDecoder(Module):
    """A stack of ``num_layers`` copies of ``decoder_layer``, then an optional ``norm``, as in PyTorch.

    >>> import ferro
    >>> layer = ferro.nn.TransformerDecoderLayer(8, 2, dim_feedforward=16, batch_first=True)
    >>> dec = ferro.nn.TransformerDecoder(layer, num_layers=2)
    >>> list(dec(ferro.randn(3, 4, 8), ferro.randn(3, 5, 8)).shape)
    [3, 4, 8]
    """

    def __init__(self, decoder_layer: Module, num_layers: int, norm: Module | None = None) -> None:
        super().__init__()
        self.layers = _clones(decoder_layer, num_layers)
        self.num_layers, self.norm = num_layers, norm

    def forward(self, tgt: Tensor, memory: Tensor, tgt_mask: Tensor | None = None,
                memory_mask: Tensor | None = None, tgt_key_padding_mask: Tensor | None = None,
                memory_key_padding_mask: Tensor | None = None, tgt_is_causal: bool | None = None,
                memory_is_causal: bool = False) -> Tensor:
        """Run ``tgt`` through every layer, each attending to ``memory``."""
        out = tgt
        for layer in self.layers:
            out = layer(out, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                        tgt_key_padding_mask=tgt_key_padding_mask, memory_key_padding_mask=memory_key_padding_mask,
                        tgt_is_causal=_hint(tgt_is_causal), memory_is_causal=memory_is_causal)
        return out if self.norm is None else self.norm(out)


class Transformer(Module):
    """The encoder-decoder model of "Attention Is All You Need", as ``torch.nn.Transformer``.

    ``forward(src, tgt, ...)`` returns the decoder's output; every weight matrix starts
    Xavier-uniform, as in PyTorch.

    >>> import ferro
    >>> model = ferro.nn.Transformer(8, 2, 1, 1, dim_feedforward=16, batch_first=True)
    >>> tgt = ferro.randn(3, 4, 8)
    >>> mask = ferro.nn.Transformer.generate_square_subsequent_mask(4)
    >>> list(model(ferro.randn(3, 5, 8), tgt, tgt_mask=mask).shape)
    [3, 4, 8]
    """

    def __init__(self, d_model: int = 512, nhead: int = 8, num_encoder_layers: int = 6, num_decoder_layers: int = 6,
                 dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation: str | Callable[[Tensor], Tensor] = F.relu, custom_encoder: Module | None = None,
                 custom_decoder: Module | None = None, layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        kw = {"device": device, "dtype": dtype}
        layer_kw = {"dim_feedforward": dim_feedforward, "dropout": dropout, "activation": activation,
                    "layer_norm_eps": layer_norm_eps, "batch_first": batch_first, "norm_first": norm_first,
                    "bias": bias, **kw}
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            self.encoder = TransformerEncoder(TransformerEncoderLayer(d_model, nhead, **layer_kw), num_encoder_layers,
                                              LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw))
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            self.decoder = TransformerDecoder(TransformerDecoderLayer(d_model, nhead, **layer_kw), num_decoder_layers,
                                              LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw))
        self.d_model, self.nhead, self.batch_first = d_model, nhead, batch_first
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        for p in self.parameters():
            if p.ndim > 1:
                init.xavier_uniform_(p)

    generate_square_subsequent_mask = staticmethod(generate_square_subsequent_mask)

    def forward(self, src: Tensor, tgt: Tensor, src_mask: Tensor | None = None, tgt_mask: Tensor | None = None,
                memory_mask: Tensor | None = None, src_key_padding_mask: Tensor | None = None,
                tgt_key_padding_mask: Tensor | None = None, memory_key_padding_mask: Tensor | None = None,
                src_is_causal: bool | None = None, tgt_is_causal: bool | None = None,
                memory_is_causal: bool = False) -> Tensor:
        """Encode ``src`` (S, N, E), decode ``tgt`` (T, N, E) against it ((N, ., E) with ``batch_first``)."""
        batched = src.ndim == 3
        if src.ndim != tgt.ndim:
            raise ShapeError(f"Transformer: src {list(src.shape)} and tgt {list(tgt.shape)} must both be batched "
                             f"(3-D) or both unbatched (2-D)")
        if batched and src.shape[0 if self.batch_first else 1] != tgt.shape[0 if self.batch_first else 1]:
            raise ShapeError(f"Transformer: the batch number of src {list(src.shape)} and tgt {list(tgt.shape)} "
                             f"must be equal")
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise ShapeError(f"Transformer: the feature number of src {list(src.shape)} and tgt {list(tgt.shape)} "
                             f"must be equal to d_model={self.d_model}")
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask, is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask, tgt_is_causal=tgt_is_causal,
                            memory_is_causal=memory_is_causal)
