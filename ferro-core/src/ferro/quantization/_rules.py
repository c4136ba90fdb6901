"""What ops do with quantized tensors: the quantized layout's rules (``ferro._core.layouts.rule``).

- ``linear(input, weight, bias)`` with a quantized weight (qint8, per tensor or per output channel) runs
  dynamically quantized: the float input is quantized to int8 per call (one scale and zero point from its
  range), the int8 values are multiplied by ``int8_matmul`` (int32 accumulation), both zero points are
  removed in int32, and the sums are scaled back to float32 once (PyTorch's dynamic quantized Linear);
- ``clone`` copies the values and parameters.

Every other op refuses a quantized tensor (``UnsupportedLayoutError``, from the layout layer).
"""

from __future__ import annotations

from typing import Any

from .._core.dtypes import float32, int8, int32
from .._core.layouts import rule
from .._core.records import ops
from .._core.tensor import Tensor
from ..errors import ShapeError, UnsupportedLayoutError
from ._qtypes import per_channel_affine, per_tensor_affine, qint8
from ._tensor import QuantizedTensor

__all__ = ["quantize_batch", "weight_parts"]


def quantize_batch(x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """``x`` (float, 2-D) as int8 with one scale and zero point from its range, 0 included: ``(q, scale, zero
    point)``, the last two 0-d float32 tensors on ``x``'s device (nothing waits for the device)."""
    lo, hi = x.amin().clamp(max=0.0), x.amax().clamp(min=0.0)
    scale = (hi - lo).clamp(min=1e-8) / 255.0
    zp = (-128.0 - lo / scale).round().clamp(-128, 127)
    return (x / scale + zp).round().clamp(-128, 127).to(int8), scale, zp


def weight_parts(w: QuantizedTensor) -> tuple[Tensor, Tensor, Tensor | None, Tensor]:
    """What a product with the quantized weight ``w`` (out, in) needs, derived once per weight (it is never
    changed in place): its int8 values transposed (in, out), their int32 column sums, the zero points as
    int32 (None when all are 0) and the scales as float32, per output channel or one."""
    cached = w._q_derived
    if cached is None:
        values = w._values()
        if w._qscheme is per_tensor_affine:
            zps = values.new_full((), w._q_zero_point, dtype=int32) if w._q_zero_point else None
            scales = values.new_full((), w._q_scale, dtype=float32)
        else:
            zps = w._q_zero_points.to(int32)  # type: ignore[union-attr]
            zps = zps if bool((zps != 0).any()) else None
            scales = w._q_scales.to(float32)  # type: ignore[union-attr]
        wt = values.t()
        cached = w._q_derived = (wt, wt.to(int32).sum(0), zps, scales)
    return cached


@rule("quantized", "linear")
def _linear(input: Any, weight: Any, bias: Any = None) -> Tensor:
    for arg, t in (("input", input), ("bias", bias)):
        if isinstance(t, QuantizedTensor):
            raise UnsupportedLayoutError("linear", arg, t.describes, t.way_out)
    if not isinstance(weight, QuantizedTensor) or weight.ndim != 2 or weight._qdtype is not qint8 or not (
            weight._qscheme is per_tensor_affine or (weight._qscheme is per_channel_affine and weight._q_axis == 0)):
        raise UnsupportedLayoutError("linear", "weight", "quantized tensor other than a 2-D qint8 per-tensor or "
                                     "per-output-channel (axis 0)", weight.way_out)
    if input.shape[-1] != weight.shape[1]:
        raise ShapeError(f"linear: input {list(input.shape)} has {input.shape[-1]} features but weight "
                         f"{list(weight.shape)} expects {weight.shape[1]}")
    wt, colsum, wzp, wscale = weight_parts(weight)
    shape = input.shape
    x = input.reshape(-1, shape[-1]).to(float32)
    q, scale, zp = quantize_batch(x)
    # sum_k (q - zp)(w - wzp) = q @ w - zp * colsum(w) - wzp * rowsum(q) + k * zp * wzp, all in int32
    zp32 = zp.to(int32)
    acc = ops.int8_matmul(q, wt) - zp32 * colsum
    if wzp is not None:
        acc = acc - wzp * (q.to(int32).sum(1, keepdim=True) - shape[-1] * zp32)
    y = acc.to(float32) * (scale * wscale)
    if bias is not None:
        y = y + bias
    return y.reshape(*shape[:-1], weight.shape[0])


@rule("quantized", "clone")
def _clone(input: Any, *args: Any, **kwargs: Any) -> QuantizedTensor:
    if not isinstance(input, QuantizedTensor):  # pragma: no cover - the layer calls a rule with one among them
        raise UnsupportedLayoutError("clone", "input", "quantized", ".dequantize()")
    return input._remake(input._values().clone(*args, **kwargs))
