"""``MultiheadAttention``, as ``torch.nn.MultiheadAttention``: same parameters, masks and outputs."""

from __future__ import annotations

import math
from typing import Any

from ... import _api as ferro
from ..._core.tensor import Tensor
from ...errors import DTypeError, ShapeError
from .. import functional as F  # noqa: N812 - PyTorch's spelling
from .. import init
from ..parameter import Parameter
from .linear import Linear
from .module import Module

__all__ = ["MultiheadAttention", "multi_head_attention_forward"]


def _additive(mask: Tensor | None, dtype: Any, name: str) -> Tensor | None:
    """A boolean mask (True = may not attend) as 0 / -inf of ``dtype``; a float mask as is."""
    if mask is None:
        return None
    if not isinstance(mask, Tensor):
        raise TypeError(f"MultiheadAttention: {name} must be a ferro Tensor, got {type(mask).__name__}")
    if mask.dtype is ferro.bool_:
        return ferro.zeros(mask.shape, dtype=dtype, device=mask.device).masked_fill(mask, -math.inf)
    if not mask.dtype.is_floating_point:
        raise DTypeError(f"MultiheadAttention: only bool and floating types of {name} are supported, "
                         f"got {mask.dtype}")
    return mask.to(dtype)


def _pad_last(mask: Tensor | None) -> Tensor | None:
    """One more key column that every query may attend to (for ``add_bias_kv`` / ``add_zero_attn``)."""
    return None if mask is None else F.pad(mask, (0, 1))


class MultiheadAttention(Module):
    """Attention over ``num_heads`` heads: ``out_proj(concat_h(softmax(q_h k_h^T / sqrt(d) + mask) v_h))``.

    As ``torch.nn.MultiheadAttention``: ``in_proj_weight`` (3E, E) and ``in_proj_bias`` (3E) when
    ``kdim == vdim == embed_dim``, else ``q_proj_weight``, ``k_proj_weight``, ``v_proj_weight``;
    ``out_proj`` a :class:`Linear`; ``bias_k``, ``bias_v`` (1, 1, E) with ``add_bias_kv``.

    ``forward(query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
    average_attn_weights=True, is_causal=False)`` returns ``(attn_output, attn_weights or None)``.
    Boolean masks mark with True what may not be attended to; float masks are added to the scores.

    >>> import ferro
    >>> mha = ferro.nn.MultiheadAttention(8, 2, batch_first=True)
    >>> x = ferro.randn(3, 5, 8)
    >>> out, w = mha(x, x, x)
    >>> list(out.shape), list(w.shape)
    ([3, 5, 8], [3, 5, 5])
    """

    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False, kdim: int | None = None,
                 vdim: int | None = None, batch_first: bool = False, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got embed_dim={embed_dim} and "
                             f"num_heads={num_heads} instead")
        if embed_dim % num_heads:
            raise ValueError(f"embed_dim must be divisible by num_heads, got embed_dim={embed_dim} and "
                             f"num_heads={num_heads}")
        if not 0.0 <= dropout <= 1.0:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {dropout}")
        self.embed_dim, self.num_heads, self.dropout, self.batch_first = embed_dim, num_heads, dropout, batch_first
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.head_dim = embed_dim // num_heads
        self.add_zero_attn = add_zero_attn
        kw = {"device": device, "dtype": dtype}
        if self._qkv_same_embed_dim:
            self.in_proj_weight = Parameter(ferro.empty((3 * embed_dim, embed_dim), **kw))
            for name in ("q_proj_weight", "k_proj_weight", "v_proj_weight"):
                self.register_parameter(name, None)
        else:
            self.q_proj_weight = Parameter(ferro.empty((embed_dim, embed_dim), **kw))
            self.k_proj_weight = Parameter(ferro.empty((embed_dim, self.kdim), **kw))
            self.v_proj_weight = Parameter(ferro.empty((embed_dim, self.vdim), **kw))
            self.register_parameter("in_proj_weight", None)
        if bias:
            self.in_proj_bias = Parameter(ferro.empty((3 * embed_dim,), **kw))
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = Linear(embed_dim, embed_dim, bias=bias, **kw)
        if add_bias_kv:
            self.bias_k = Parameter(ferro.empty((1, 1, embed_dim), **kw))
            self.bias_v = Parameter(ferro.empty((1, 1, embed_dim), **kw))
        else:
            self.bias_k = self.bias_v = None
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        """PyTorch's initialization: Xavier-uniform projections, zero biases, Xavier-normal ``bias_k``/``bias_v``."""
        if self._qkv_same_embed_dim:
            init.xavier_uniform_(self.in_proj_weight)
        else:
            for w in (self.q_proj_weight, self.k_proj_weight, self.v_proj_weight):
                init.xavier_uniform_(w)
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)
        if self.bias_k is not None:
            init.xavier_normal_(self.bias_k)
            init.xavier_normal_(self.bias_v)

    def extra_repr(self) -> str:
        """The sizes and the options that differ from the defaults."""
        s = f"embed_dim={self.embed_dim}, num_heads={self.num_heads}"
        if not self._qkv_same_embed_dim:
            s += f", kdim={self.kdim}, vdim={self.vdim}"
        if self.batch_first:
            s += ", batch_first=True"
        return s

    def _projections(self, query: Tensor, key: Tensor, value: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        e = self.embed_dim
        b = self.in_proj_bias
        bq, bk, bv = (None, None, None) if b is None else (b[:e], b[e:2 * e], b[2 * e:])
        if self._qkv_same_embed_dim:
            # Slices of the weight rather than one matmul and a split of its output, even for
            # self-attention: a slice's backward is a weight-sized scatter, the output's is larger.
            w = self.in_proj_weight
            wq, wk, wv = w[:e], w[e:2 * e], w[2 * e:]
        else:
            wq, wk, wv = self.q_proj_weight, self.k_proj_weight, self.v_proj_weight
        return F.linear(query, wq, bq), F.linear(key, wk, bk), F.linear(value, wv, bv)

    def _check(self, query: Tensor, key: Tensor, value: Tensor) -> bool:
        for name, t in (("query", query), ("key", key), ("value", value)):
            if not isinstance(t, Tensor):
                raise TypeError(f"MultiheadAttention: {name} must be a ferro Tensor, got {type(t).__name__}")
        if query.ndim not in (2, 3) or key.ndim != query.ndim or value.ndim != query.ndim:
            raise ShapeError(f"MultiheadAttention: query, key and value must all be 3-D (batched) or 2-D "
                             f"(unbatched), got shapes {list(query.shape)}, {list(key.shape)}, {list(value.shape)}")
        for name, t, size in (("query", query, self.embed_dim), ("key", key, self.kdim), ("value", value, self.vdim)):
            if t.shape[-1] != size:
                raise ShapeError(f"MultiheadAttention: {name} of shape {list(t.shape)} should have {size} features "
                                 f"in its last dimension")
        if key.shape[:-1] != value.shape[:-1]:
            raise ShapeError(f"MultiheadAttention: key's sequence and batch dims {list(key.shape[:-1])} do not match "
                             f"value's {list(value.shape[:-1])}")
        batch_dim = 0 if self.batch_first else 1
        if query.ndim == 3 and query.shape[batch_dim] != key.shape[batch_dim]:
            raise ShapeError(f"MultiheadAttention: query {list(query.shape)} and key {list(key.shape)} have different "
                             f"batch sizes")
        return query.ndim == 3

    def _merged_mask(self, attn_mask: Tensor | None, key_padding_mask: Tensor | None, dtype: Any,
                     n: int, tgt: int, src: int, batched: bool) -> Tensor | None:
        """One additive mask broadcastable to (N, heads, L, S), or None."""
        mask = _additive(attn_mask, dtype, "attn_mask")
        if mask is not None:
            if mask.ndim == 2 and tuple(mask.shape) == (tgt, src):
                mask = mask.reshape(1, 1, tgt, src)
            elif mask.ndim == 3 and tuple(mask.shape) == (n * self.num_heads, tgt, src):
                mask = mask.reshape(n, self.num_heads, tgt, src)
            else:
                raise ShapeError(f"MultiheadAttention: attn_mask of shape {list(mask.shape)} should be "
                                 f"{[tgt, src]} or {[n * self.num_heads, tgt, src]}")
        kpm = _additive(key_padding_mask, dtype, "key_padding_mask")
        if kpm is not None:
            if tuple(kpm.shape) != (n, src):
                raise ShapeError(f"MultiheadAttention: key_padding_mask of shape {list(kpm.shape)} should be "
                                 f"{[n, src] if batched else [src]}")
            kpm = kpm.reshape(n, 1, 1, src)
            mask = kpm if mask is None else mask + kpm
        return mask

    def forward(self, query: Tensor, key: Tensor, value: Tensor, key_padding_mask: Tensor | None = None,
                need_weights: bool = True, attn_mask: Tensor | None = None, average_attn_weights: bool = True,
                is_causal: bool = False) -> tuple[Tensor, Tensor | None]:
        """Attend from ``query`` (L, N, E) to ``key``/``value`` (S, N, kdim/vdim); (N, ., .) with ``batch_first``,
        or unbatched (L, E) / (S, kdim).

        ``key_padding_mask`` (N, S) (or (S,) unbatched); ``attn_mask`` (L, S) or (N * num_heads, L, S).
        ``is_causal`` is a hint that ``attn_mask`` is the causal mask, as in PyTorch (it needs ``attn_mask``).
        """
        batched = self._check(query, key, value)
        if is_causal and attn_mask is None:
            raise RuntimeError("MultiheadAttention: is_causal needs attn_mask (the hint says attn_mask is the causal "
                               "mask); build one with ferro.nn.Transformer.generate_square_subsequent_mask(L)")
        same_kv, same_qkv = key is value, query is key and key is value
        if not batched:
            query, key, value = query.unsqueeze(0), key.unsqueeze(0), value.unsqueeze(0)
            if key_padding_mask is not None:
                key_padding_mask = key_padding_mask.unsqueeze(0)
        elif not self.batch_first:
            query = query.transpose(0, 1)
            key = query if same_qkv else key.transpose(0, 1)
            value = key if same_kv else value.transpose(0, 1)
        n, tgt, src = query.shape[0], query.shape[1], key.shape[1]
        q, k, v = self._projections(query, key, value)
        mask = self._merged_mask(attn_mask, key_padding_mask, q.dtype, n, tgt, src, batched)
        h, d = self.num_heads, self.head_dim
        if self.bias_k is not None:
            k = ferro.cat([k, self.bias_k.expand(n, 1, self.embed_dim)], 1)
            v = ferro.cat([v, self.bias_v.expand(n, 1, self.embed_dim)], 1)
            mask = _pad_last(mask)
        q, k, v = (t.reshape(n, t.shape[1], h, d).transpose(1, 2) for t in (q, k, v))
        if self.add_zero_attn:
            zeros = ferro.zeros((n, h, 1, d), dtype=k.dtype, device=k.device)
            k, v = ferro.cat([k, zeros], 2), ferro.cat([v, zeros], 2)
            mask = _pad_last(mask)
        p = self.dropout if self.training else 0.0
        weights = None
        if need_weights:
            scores = (q * (1.0 / math.sqrt(d))) @ k.mT
            weights = (scores if mask is None else scores + mask).softmax(-1)
            if p:  # PyTorch returns the weights after dropout too
                weights = F.dropout(weights, p)
            out = weights @ v
        elif is_causal and key_padding_mask is None:
            out = F.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=True)
        else:
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p)
        out = self.out_proj(out.transpose(1, 2).reshape(n, tgt, self.embed_dim))
        if weights is not None and average_attn_weights:
            weights = weights.mean(1)
        if not batched:
            return out.squeeze(0), (None if weights is None else weights.squeeze(0))
        return (out if self.batch_first else out.transpose(0, 1)), weights


class _Projection:
    """``out_proj`` of :func:`multi_head_attention_forward`: a linear map by given tensors."""

    def __init__(self, weight: Tensor, bias: Tensor | None) -> None:
        self.weight, self.bias = weight, bias

    def __call__(self, x: Tensor) -> Tensor:
        return F.linear(x, self.weight, self.bias)


def multi_head_attention_forward(query: Tensor, key: Tensor, value: Tensor, embed_dim_to_check: int, num_heads: int,
                                 in_proj_weight: Tensor | None, in_proj_bias: Tensor | None, bias_k: Tensor | None,
                                 bias_v: Tensor | None, add_zero_attn: bool, dropout_p: float, out_proj_weight: Tensor,
                                 out_proj_bias: Tensor | None, training: bool = True,
                                 key_padding_mask: Tensor | None = None, need_weights: bool = True,
                                 attn_mask: Tensor | None = None, use_separate_proj_weight: bool = False,
                                 q_proj_weight: Tensor | None = None, k_proj_weight: Tensor | None = None,
                                 v_proj_weight: Tensor | None = None, static_k: Tensor | None = None,
                                 static_v: Tensor | None = None, average_attn_weights: bool = True,
                                 is_causal: bool = False) -> tuple[Tensor, Tensor | None]:
    """``F.multi_head_attention_forward``: :class:`MultiheadAttention`'s computation with the weights given,
    on sequence-first inputs (L, N, E) or unbatched (L, E); returns ``(attn_output, attn_weights or None)``."""
    if static_k is not None or static_v is not None:
        raise NotImplementedError("multi_head_attention_forward: static_k / static_v are not supported by ferro")
    if query.shape[-1] != embed_dim_to_check:
        raise ShapeError(f"multi_head_attention_forward: was expecting embedding dimension of {embed_dim_to_check}, "
                         f"but got {query.shape[-1]}")
    if embed_dim_to_check % num_heads:
        raise ValueError(f"multi_head_attention_forward: embed_dim {embed_dim_to_check} not divisible by num_heads "
                         f"{num_heads}")
    if use_separate_proj_weight and (q_proj_weight is None or k_proj_weight is None or v_proj_weight is None):
        raise ValueError("multi_head_attention_forward: use_separate_proj_weight is True but q_proj_weight, "
                         "k_proj_weight or v_proj_weight is None")
    if not use_separate_proj_weight and in_proj_weight is None:
        raise ValueError("multi_head_attention_forward: use_separate_proj_weight is False but in_proj_weight is None")
    # The layer's forward, run on the given tensors: a layer without parameters of its own holds them.
    layer = MultiheadAttention.__new__(MultiheadAttention)
    Module.__init__(layer)
    attrs = {"embed_dim": embed_dim_to_check, "num_heads": num_heads, "dropout": dropout_p, "batch_first": False,
             "kdim": key.shape[-1], "vdim": value.shape[-1], "_qkv_same_embed_dim": not use_separate_proj_weight,
             "head_dim": embed_dim_to_check // num_heads, "add_zero_attn": add_zero_attn, "training": training,
             "in_proj_weight": in_proj_weight, "in_proj_bias": in_proj_bias, "q_proj_weight": q_proj_weight,
             "k_proj_weight": k_proj_weight, "v_proj_weight": v_proj_weight, "bias_k": bias_k, "bias_v": bias_v,
             "out_proj": _Projection(out_proj_weight, out_proj_bias)}
    for name, value_ in attrs.items():
        object.__setattr__(layer, name, value_)
    return MultiheadAttention.forward(layer, query, key, value, key_padding_mask, need_weights, attn_mask,
                                      average_attn_weights, is_causal)
