"""Quantized tensors: integer values with per-tensor, per-channel or per-block scales, and the functions that
make and read them (``quantize_per_tensor``, ``quantize_per_channel``, ``quantize_blockwise``, ``dequantize``).

A :class:`QuantizedTensor` is a tensor of the layout layer (``ferro._core.layouts``, kind ``"quantized"``):
its data is the integer representation (int8, uint8 or int32) on its device, beside its quantization
parameters. An op without a quantized rule refuses it with ``UnsupportedLayoutError`` naming the op and the
argument; nothing dequantizes it silently. Every computation here runs in ferro ops, so on every backend.

The values match PyTorch's (``torch.quantize_per_tensor`` / ``quantize_per_channel``, ``int_repr``,
``dequantize``): ``q = clamp(round_half_even(x * (1 / scale) + zero_point))`` with ``1 / scale`` in float32
and the product and sum rounded once (as PyTorch's fused multiply-add: computed in float64 where the device has
it); qint32 rounds the product to float32 first, as PyTorch does. Per-tensor values dequantize in float32,
per-channel ones in float64 (PyTorch keeps those scales in float64).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._core.dtypes import float32, float64, int64
from .._core.layouts import LayoutTensor, track
from .._core.records import ops
from .._core.tensor import Tensor, _wrap
from .._creation import tensor as _tensor
from .._creation import zeros
from .._ops.conversion import _parse
from ..errors import DTypeError, ShapeError, UnsupportedLayoutError
from ._qtypes import (
    QDTYPES,
    QDType,
    QScheme,
    per_block_symmetric,
    per_channel_affine,
    per_tensor_affine,
    qint8,
    qint32,
)

__all__ = ["QuantizedTensor", "quantize_per_tensor", "quantize_per_channel", "quantize_blockwise", "dequantize"]

_F32_ONE = np.float32(1.0)


class QuantizedTensor(LayoutTensor):
    """A quantized tensor (PyTorch's ``is_quantized`` tensors): integer values, their dtype (``ferro.qint8``,
    ``quint8``, ``qint32``) and scheme, and the scales and zero points that map them to reals.

    >>> import ferro
    >>> q = ferro.quantize_per_tensor(ferro.tensor([-1.0, 0.0, 0.5, 2.0]), 0.1, 10, ferro.qint8)
    >>> q.int_repr()
    tensor([ 0, 10, 15, 30], dtype=ferro.int8)
    >>> q.dequantize()
    tensor([-1.0000,  0.0000,  0.5000,  2.0000])
    >>> q.q_scale(), q.q_zero_point(), q.qscheme()
    (0.1, 10, ferro.per_tensor_affine)
    """

    __slots__ = (
        "_q_axis",
        "_q_block",
        "_q_derived",
        "_q_scale",
        "_q_scales",
        "_q_zero_point",
        "_q_zero_points",
        "_qdtype",
        "_qscheme",
    )
    kind = "quantized"
    describes = "quantized"
    way_out = ".dequantize()"

    _qdtype: QDType
    _qscheme: QScheme
    _q_scale: float
    _q_zero_point: int
    _q_scales: Tensor | None
    _q_zero_points: Tensor | None
    _q_axis: int
    _q_block: int
    #: what products with this tensor derive from it (``_rules.weight_parts``), made once: it never changes
    _q_derived: Any

    @classmethod
    def _make(cls, values: Tensor, qdtype: QDType, scheme: QScheme, *, scale: float = 1.0, zero_point: int = 0,
              scales: Tensor | None = None, zero_points: Tensor | None = None, axis: int = 0,
              block: int = 0) -> QuantizedTensor:
        """A quantized tensor over ``values`` (a dense tensor of ``qdtype``'s storage dtype, not copied)."""
        q = values.detach()._as_subclass(cls)
        q._qdtype, q._qscheme, q._q_scale, q._q_zero_point = qdtype, scheme, scale, zero_point
        q._q_scales, q._q_zero_points, q._q_axis, q._q_block = scales, zero_points, axis, block
        q._q_derived = None
        return track(q)

    def _remake(self, values: Tensor, scales: Tensor | None = None, zero_points: Tensor | None = None
                ) -> QuantizedTensor:
        """A quantized tensor of this one's dtype and scheme over ``values`` (and the given per-channel or
        per-block parameters; default this one's)."""
        return QuantizedTensor._make(values, self._qdtype, self._qscheme, scale=self._q_scale,
                                     zero_point=self._q_zero_point,
                                     scales=self._q_scales if scales is None else scales,
                                     zero_points=self._q_zero_points if zero_points is None else zero_points,
                                     axis=self._q_axis, block=self._q_block)

    @property
    def dtype(self) -> Any:
        """The quantized dtype (``ferro.qint8``, ``ferro.quint8`` or ``ferro.qint32``)."""
        return self._qdtype

    @property
    def is_quantized(self) -> bool:  # type: ignore[override]
        """True: a quantized tensor."""
        return True

    def int_repr(self) -> Tensor:
        """The integer values as a dense tensor of the storage dtype (int8, uint8, int32), a copy."""
        return self._values().clone()

    def _values(self) -> Tensor:
        """The integer values as a dense tensor sharing this one's data."""
        return _wrap(self._data, self._dtype, self._device)

    def dequantize(self) -> Tensor:
        """The real values, a dense float32 tensor: ``(q - zero_point) * scale`` per tensor, channel or block."""
        q = self._values()
        scheme = self._qscheme
        if scheme is per_tensor_affine:
            return (q.to(float32) - self._q_zero_point) * float(np.float32(self._q_scale))
        if scheme is per_channel_affine:
            shape = [1] * q.ndim
            shape[self._q_axis] = -1
            scales, zps = self._q_scales.reshape(shape), self._q_zero_points.reshape(shape)  # type: ignore[union-attr]
            return ((q.to(float64) - zps.to(float64)) * scales).to(float32)
        blocks, unpad = _blocks(q.to(float32), self._q_block)
        return unpad(blocks * self._q_scales.unsqueeze(-1))  # type: ignore[union-attr]

    def q_scale(self) -> float:
        """The scale of a per-tensor quantized tensor."""
        self._require(per_tensor_affine, "q_scale")
        return self._q_scale

    def q_zero_point(self) -> int:
        """The zero point of a per-tensor quantized tensor."""
        self._require(per_tensor_affine, "q_zero_point")
        return self._q_zero_point

    def q_per_channel_scales(self) -> Tensor:
        """The float64 scales of a per-channel quantized tensor, one per index along its axis."""
        self._require(per_channel_affine, "q_per_channel_scales")
        return self._q_scales.clone()  # type: ignore[union-attr]

    def q_per_channel_zero_points(self) -> Tensor:
        """The int64 zero points of a per-channel quantized tensor."""
        self._require(per_channel_affine, "q_per_channel_zero_points")
        return self._q_zero_points.clone()  # type: ignore[union-attr]

    def q_per_channel_axis(self) -> int:
        """The axis of a per-channel quantized tensor."""
        self._require(per_channel_affine, "q_per_channel_axis")
        return self._q_axis

    def q_block_size(self) -> int:
        """The block size of a blockwise quantized tensor (ferro's own scheme)."""
        self._require(per_block_symmetric, "q_block_size")
        return self._q_block

    def q_per_block_scales(self) -> Tensor:
        """The float32 scales of a blockwise quantized tensor: shape ``(*shape[:-1], ceil(shape[-1] / block))``."""
        self._require(per_block_symmetric, "q_per_block_scales")
        return self._q_scales.clone()  # type: ignore[union-attr]

    def qscheme(self) -> QScheme:
        """The quantization scheme (``ferro.per_tensor_affine``, ``per_channel_affine``, ``per_block_symmetric``)."""
        return self._qscheme

    def _require(self, scheme: QScheme, what: str) -> None:
        if self._qscheme is not scheme:
            raise RuntimeError(f"{what}(): expected a tensor quantized with {scheme}, got {self._qscheme}")

    def to(self, *args: Any, **kwargs: Any) -> QuantizedTensor:
        """The same quantized tensor on another device (``to(device)``); a dtype other than its own is refused:
        dequantize first."""
        dev, dtype = _parse(args, dict(kwargs))
        if dtype is not None and dtype is not self._qdtype:
            raise UnsupportedLayoutError("to", "self", self.describes, self.way_out)
        if dev is None or dev == self._device:
            return self
        def move(t: Tensor | None) -> Tensor | None:
            return None if t is None else t.to(dev)
        return self._remake(self._values().to(dev), move(self._q_scales), move(self._q_zero_points))

    def cpu(self) -> QuantizedTensor:
        """The same quantized tensor on the CPU."""
        return self.to("cpu")

    def __deepcopy__(self, memo: dict[int, Any]) -> QuantizedTensor:
        def copy(t: Tensor | None) -> Tensor | None:
            return None if t is None else t.clone()
        q = self._remake(self._values().clone(), copy(self._q_scales), copy(self._q_zero_points))
        memo[id(self)] = q
        return q

    def detach(self) -> QuantizedTensor:
        """Itself: a quantized tensor is never part of a graph."""
        return self

    def _refuse(self, op: str) -> Any:
        raise UnsupportedLayoutError(op, "self", self.describes, self.way_out)

    def numpy(self, *args: Any, **kwargs: Any) -> Any:
        """Refused: a quantized tensor has no NumPy form (``.int_repr().numpy()`` or ``.dequantize().numpy()``)."""
        return self._refuse("numpy")

    def tolist(self) -> Any:
        """Refused (``.dequantize().tolist()``)."""
        return self._refuse("tolist")

    def item(self) -> Any:
        """Refused (``.dequantize().item()``)."""
        return self._refuse("item")

    def __ferro_parts__(self) -> dict[str, Any]:
        """What ``ferro.save`` stores: the integer values, the scheme's parameters, plain values and tensors."""
        parts: dict[str, Any] = {"int_repr": self._values(), "dtype": self._qdtype.name,
                                 "qscheme": self._qscheme.name}
        if self._qscheme is per_tensor_affine:
            parts.update(scale=self._q_scale, zero_point=self._q_zero_point)
        elif self._qscheme is per_channel_affine:
            parts.update(scales=self._q_scales, zero_points=self._q_zero_points, axis=self._q_axis)
        else:
            parts.update(scales=self._q_scales, block_size=self._q_block)
        return parts

    def __repr__(self) -> str:
        values = repr(self.dequantize())
        if values.endswith(")"):
            values = values[:-1]
        s = self._qscheme
        extra = (f"scale={self._q_scale}, zero_point={self._q_zero_point}" if s is per_tensor_affine else
                 f"scale={self._q_scales!r}, zero_point={self._q_zero_points!r}, axis={self._q_axis}"
                 if s is per_channel_affine else f"block_size={self._q_block}, scales={self._q_scales!r}")
        return f"{values}, size={tuple(self.shape)}, dtype={self._qdtype}, quantization_scheme={s}, {extra})"


def from_parts(parts: dict[str, Any]) -> QuantizedTensor:
    """The quantized tensor :meth:`QuantizedTensor.__ferro_parts__` described (``ferro.load``); checks them."""
    if not isinstance(parts, dict):
        raise ValueError("a quantized tensor's entry must be a dict")
    qdtype, scheme = QDTYPES.get(parts.get("dtype")), parts.get("qscheme")  # type: ignore[arg-type]
    values = parts.get("int_repr")
    if qdtype is None:
        raise ValueError(f"unknown quantized dtype {parts.get('dtype')!r} (known: {', '.join(QDTYPES)})")
    if not isinstance(values, Tensor) or values.dtype is not qdtype.storage:
        raise ValueError(f"the values of a {qdtype.name} tensor must be a {qdtype.storage.name} tensor")
    if scheme == per_tensor_affine.name:
        return QuantizedTensor._make(values, qdtype, per_tensor_affine, scale=float(parts["scale"]),
                                     zero_point=int(parts["zero_point"]))
    if scheme == per_channel_affine.name:
        axis = int(parts["axis"])
        _check_channels("load", values, parts["scales"], parts["zero_points"], axis)
        return QuantizedTensor._make(values, qdtype, per_channel_affine, scales=parts["scales"].to(float64),
                                     zero_points=parts["zero_points"].to(int64), axis=axis)
    if scheme == per_block_symmetric.name:
        block, scales = int(parts["block_size"]), parts["scales"]
        if block < 1 or not isinstance(scales, Tensor) or tuple(scales.shape) != _block_shape(values.shape, block):
            raise ValueError("a blockwise quantized tensor's scales do not fit its values and block size")
        return QuantizedTensor._make(values, qdtype, per_block_symmetric, scales=scales.to(float32), block=block)
    raise ValueError(f"unknown quantization scheme {scheme!r}")


# -- making quantized tensors ------------------------------------------------------------------------------


def _check_input(op: str, input: Any) -> Tensor:
    if isinstance(input, QuantizedTensor):
        raise TypeError(f"{op}(): argument 'input' is already quantized")
    if not isinstance(input, Tensor):
        raise TypeError(f"{op}(): argument 'input' must be a Tensor, not {type(input).__name__}")
    if not input.is_floating_point():
        raise DTypeError(f"{op}(): argument 'input' must be a floating point tensor, got {input.dtype}")
    return input.detach()


def _check_qdtype(op: str, dtype: Any) -> QDType:
    if not isinstance(dtype, QDType):
        raise DTypeError(f"{op}(): argument 'dtype' must be a quantized dtype (ferro.qint8, ferro.quint8, "
                         f"ferro.qint32), got {dtype!r}")
    return dtype


def _number(op: str, arg: str, v: Any, kind: type) -> Any:
    if isinstance(v, Tensor):
        if v.numel() != 1:
            raise ShapeError(f"{op}(): argument '{arg}' must be a number or a one-element tensor, got shape "
                             f"{list(v.shape)}")
        v = v.item()
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise TypeError(f"{op}(): argument '{arg}' must be a number, not {type(v).__name__}")
    return kind(v)


def _rounded(x: Tensor, inv: Any, zero_point: Any, qdtype: QDType) -> Tensor:
    """``clamp(round(x * inv + zero_point))`` in ``qdtype``'s storage, the product and sum rounded once to
    float32 (float64 arithmetic where the device has it), qint32 rounding the product first (as PyTorch)."""
    if qdtype is qint32 or float64 not in x._device._dtypes:
        y = x.to(float32) * inv + zero_point
    else:
        y = (x.to(float64) * inv + zero_point).to(float32)
    lo, hi = (qdtype.qmin, qdtype.qmax) if qdtype is not qint32 else (-2.0 ** 31, 2147483520.0)
    return y.round().clamp(lo, hi).to(qdtype.storage)


def quantize_per_tensor(input: Tensor, scale: float, zero_point: int, dtype: QDType) -> QuantizedTensor:
    """``input`` quantized with one ``scale`` and ``zero_point``: ``clamp(round(input / scale) + zero_point)``
    in ``dtype``'s range (``torch.quantize_per_tensor``, the same values)."""
    op = "quantize_per_tensor"
    x = _check_input(op, input)
    qdtype = _check_qdtype(op, dtype)
    scale = _number(op, "scale", scale, float)
    zero_point = _number(op, "zero_point", zero_point, int)
    if not (scale > 0 and math.isfinite(scale)):
        raise ValueError(f"{op}(): argument 'scale' must be a positive finite number, got {scale}")
    if not qdtype.qmin <= zero_point <= qdtype.qmax:
        raise ValueError(f"{op}(): argument 'zero_point' must lie in [{qdtype.qmin}, {qdtype.qmax}] for {qdtype}, "
                         f"got {zero_point}")
    inv = float(_F32_ONE / np.float32(scale))
    return QuantizedTensor._make(_rounded(x, inv, zero_point, qdtype), qdtype, per_tensor_affine,
                                 scale=scale, zero_point=zero_point)


def _check_channels(op: str, x: Tensor, scales: Any, zero_points: Any, axis: int) -> None:
    for arg, t in (("scales", scales), ("zero_points", zero_points)):
        if not isinstance(t, Tensor) or t.ndim != 1:
            raise TypeError(f"{op}(): argument '{arg}' must be a 1-D tensor")
    if not -x.ndim <= axis < x.ndim:
        raise IndexError(f"{op}(): argument 'axis' ({axis}) is out of range for a {x.ndim}-D tensor")
    n = x.shape[axis]
    if scales.shape[0] != n or zero_points.shape[0] != n:
        raise ShapeError(f"{op}(): expected {n} scales and zero points (the size of axis {axis}), got "
                         f"{scales.shape[0]} and {zero_points.shape[0]}")


def quantize_per_channel(input: Tensor, scales: Tensor, zero_points: Tensor, axis: int,
                         dtype: QDType) -> QuantizedTensor:
    """``input`` quantized with one scale and zero point per index along ``axis``
    (``torch.quantize_per_channel``, the same values)."""
    op = "quantize_per_channel"
    x = _check_input(op, input)
    qdtype = _check_qdtype(op, dtype)
    if isinstance(axis, bool) or not isinstance(axis, int):
        raise TypeError(f"{op}(): argument 'axis' must be an int, not {type(axis).__name__}")
    _check_channels(op, x, scales, zero_points, axis)
    axis %= x.ndim
    s = np.asarray(scales.detach().cpu().numpy(), dtype=np.float64)
    z = np.asarray(zero_points.detach().cpu().numpy()).astype(np.int64)
    if not (np.all(s > 0) and np.all(np.isfinite(s))):
        raise ValueError(f"{op}(): argument 'scales' must hold positive finite numbers")
    if z.size and (z.min() < qdtype.qmin or z.max() > qdtype.qmax):
        raise ValueError(f"{op}(): argument 'zero_points' must lie in [{qdtype.qmin}, {qdtype.qmax}] for {qdtype}")
    shape = [1] * x.ndim
    shape[axis] = -1
    dev = x.device
    inv = _tensor((_F32_ONE / s.astype(np.float32)).astype(np.float64).reshape(shape), device=dev)
    zps = _tensor(z.astype(np.float64).reshape(shape), device=dev)
    if float64 not in x._device._dtypes:
        inv, zps = inv.to(float32), zps.to(float32)
    return QuantizedTensor._make(_rounded(x, inv, zps, qdtype), qdtype, per_channel_affine,
                                 scales=_tensor(s, device=dev), zero_points=_tensor(z, device=dev), axis=axis)


def _block_shape(shape: tuple[int, ...], block: int) -> tuple[int, ...]:
    return (*shape[:-1], -(-shape[-1] // block)) if shape else (1,)


def _blocks(x: Tensor, block: int) -> tuple[Tensor, Any]:
    """``x`` (zero-padded along its last dimension) as ``(*shape[:-1], blocks, block)``, and the function that
    turns such blocks back into ``x``'s shape."""
    shape = tuple(x.shape) or (1,)
    x = x.reshape(shape)
    n = shape[-1]
    pad = -n % block
    if pad:
        x = ops.cat([x, zeros(*shape[:-1], pad, dtype=x.dtype, device=x.device)], -1)
    blocks = x.reshape(*shape[:-1], -1, block)
    final = tuple(x.shape[:-1])

    def unpad(b: Tensor) -> Tensor:
        y = b.reshape(*final, n + pad)
        return y[..., :n] if pad else y
    return blocks, unpad


def quantize_blockwise(input: Tensor, block_size: int = 32, dtype: QDType = qint8) -> QuantizedTensor:
    """``input`` quantized symmetrically in blocks of ``block_size`` consecutive values along its last
    dimension, one float32 scale per block (``max |x| / 127`` for qint8): each value is within half a step of
    its block's scale of the input. The last block of a row may be shorter."""
    op = "quantize_blockwise"
    x = _check_input(op, input).to(float32)
    if dtype is not qint8:
        raise DTypeError(f"{op}(): argument 'dtype' must be ferro.qint8 (symmetric blocks), got {dtype!r}")
    if isinstance(block_size, bool) or not isinstance(block_size, int) or block_size < 1:
        raise ValueError(f"{op}(): argument 'block_size' must be a positive int, got {block_size!r}")
    shape = tuple(x.shape)
    blocks, unpad = _blocks(x, block_size)
    scales = blocks.abs().amax(-1) / 127.0
    scales = ops.where(scales > 0, scales, 1.0)  # an all-zero block: any scale, 1 as PyTorch's observers
    q = unpad((blocks / scales.unsqueeze(-1)).round().clamp(-127, 127)).to(qint8.storage).reshape(shape)
    return QuantizedTensor._make(q, qint8, per_block_symmetric, scales=scales, block=block_size)


def dequantize(input: Any) -> Any:
    """The real values of a quantized tensor as a dense float32 tensor (a dense tensor is returned as it is;
    a list of tensors gives a list, as ``torch.dequantize``)."""
    if isinstance(input, (list, tuple)):
        return [dequantize(t) for t in input]
    if isinstance(input, QuantizedTensor):
        return input.dequantize()
    if isinstance(input, Tensor):
        return input
    raise TypeError(f"dequantize(): argument 'input' must be a Tensor, not {type(input).__name__}")
