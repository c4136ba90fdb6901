"""Quantized tensors and dynamic int8 quantization (PyTorch's quantized tensors and ``torch.ao.quantization``).

- quantized tensors: :func:`quantize_per_tensor`, :func:`quantize_per_channel` (the same values as
  PyTorch's), :func:`quantize_blockwise` (ferro's: one scale per block of values), :func:`dequantize`, and
  the tensor's ``int_repr()``, ``q_scale()``, ``q_per_channel_scales()``, ``qscheme()``...; dtypes
  ``ferro.qint8``, ``quint8``, ``qint32``;
- :func:`quantize_dynamic`: Linear layers with int8 weights whose products run in int8 with int32
  accumulation (the ``int8_matmul`` op, a kernel on every backend).

Loaded on first use (``ferro.quantization``, ``ferro.ao.quantization``, ``ferro.quantize_per_tensor``...),
never by ``import ferro``. See ``docs/quantization.md``.
"""

from __future__ import annotations

from . import _rules  # noqa: F401  (registers what ops do with quantized tensors)
from ._dynamic import DynamicQuantizedLinear, quantize_dynamic
from ._qtypes import (
    QDType,
    QScheme,
    per_block_symmetric,
    per_channel_affine,
    per_channel_symmetric,
    per_tensor_affine,
    per_tensor_symmetric,
    qint8,
    qint32,
    quint8,
)
from ._tensor import QuantizedTensor, dequantize, quantize_blockwise, quantize_per_channel, quantize_per_tensor

__all__ = ["QuantizedTensor", "QDType", "QScheme", "qint8", "quint8", "qint32", "per_tensor_affine",
           "per_channel_affine", "per_tensor_symmetric", "per_channel_symmetric", "per_block_symmetric",
           "quantize_per_tensor", "quantize_per_channel", "quantize_blockwise", "dequantize", "quantize_dynamic",
           "DynamicQuantizedLinear"]
