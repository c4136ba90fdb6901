"""Dynamic int8 quantization of Linear layers: :func:`quantize_dynamic` and :class:`DynamicQuantizedLinear`
(PyTorch's ``torch.ao.quantization.quantize_dynamic`` and ``torch.ao.nn.quantized.dynamic.Linear``).

The weight is quantized once, symmetrically per output channel (qint8, zero point 0); each forward is
``nn.functional.linear`` with that quantized weight, which the quantized layout's rule runs dynamically
quantized (``_rules``): the input quantized to int8 per batch, ``int8_matmul`` with int32 accumulation (never
through floats), zero points removed in int32, the sums scaled back to float32 once. Every step is a ferro
op, so it runs on every backend that has the ``int8_matmul`` kernel.
"""

from __future__ import annotations

import copy
from typing import Any

from .._core.dtypes import float32, float64, int64
from .._core.records import ops
from .._core.tensor import Tensor
from .._creation import zeros
from ..errors import DTypeError
from ..nn import Linear, Module
from ..nn.functional import linear
from ._qtypes import QDType, qint8
from ._tensor import QuantizedTensor, quantize_per_channel

__all__ = ["DynamicQuantizedLinear", "quantize_dynamic"]


def _weight_scales(w: Tensor) -> Tensor:
    """Per output channel ``max |w| / 127`` (1 for an all-zero row), float64 as PyTorch's per-channel scales."""
    s = w.detach().abs().amax(1).to(float64) / 127.0
    return ops.where(s > 0, s, 1.0)


class DynamicQuantizedLinear(Module):
    """A Linear layer with an int8 weight (per output channel) and inputs quantized to int8 per batch.

    ``weight()`` gives the quantized weight, ``bias()`` the float bias, as PyTorch's dynamic Linear.
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True, dtype: QDType = qint8) -> None:
        super().__init__()
        if dtype is not qint8:
            raise DTypeError(f"DynamicQuantizedLinear: dtype must be ferro.qint8, got {dtype!r}")
        self._quantize(zeros(out_features, in_features), zeros(out_features) if bias else None)

    def _quantize(self, w: Tensor, bias: Tensor | None) -> None:
        """Hold ``w`` (out, in) quantized per output channel, symmetric, and ``bias`` in float32."""
        self.out_features, self.in_features = w.shape
        zps = zeros(w.shape[0], dtype=int64, device=w.device)
        self.register_buffer("_weight", self._laid_out(quantize_per_channel(w, _weight_scales(w), zps, 0, qint8)))
        self.register_buffer("_bias", None if bias is None else bias.detach().to(float32).clone())

    @staticmethod
    def _laid_out(q: QuantizedTensor) -> QuantizedTensor:
        """``q`` over int8 values stored transposed, ``(in, out)`` contiguous: the layout ``int8_matmul``
        reads best (one copy of the weight, no transposition per forward)."""
        return q._remake(q._values().t().contiguous().t())

    @classmethod
    def from_float(cls, mod: Linear) -> DynamicQuantizedLinear:
        """The quantized counterpart of the float Linear ``mod`` (on its device)."""
        out = cls.__new__(cls)
        Module.__init__(out)
        out._quantize(mod.weight.detach(), mod.bias)
        return out

    def weight(self) -> QuantizedTensor:
        """The quantized weight, ``(out_features, in_features)``, per-channel qint8."""
        return self._weight

    def bias(self) -> Tensor | None:
        """The float bias (None without one)."""
        return self._bias

    def forward(self, x: Tensor) -> Tensor:
        return linear(x, self._weight, self._bias)  # the quantized layout's rule for linear (``_rules``)

    def _load_one(self, name: str, key: str, current: Tensor, value: Any, is_param: bool, assign: bool,
                  errors: list[str]) -> None:
        if name != "_weight":
            return super()._load_one(name, key, current, value, is_param, assign, errors)
        if not isinstance(value, QuantizedTensor) or tuple(value.shape) != tuple(current.shape):
            errors.append(f"While loading {key}: expected a quantized tensor of shape {tuple(current.shape)}, got "
                          f"{type(value).__name__} of shape {tuple(value.shape) if isinstance(value, Tensor) else ()}")
            return
        self._buffers["_weight"] = self._laid_out(value.to(current.device))
        return None

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, dtype={qint8}, "
                f"qscheme=ferro.per_channel_affine")


#: The float module types quantize_dynamic knows, and their quantized counterparts.
_MAPPING: dict[type, type] = {Linear: DynamicQuantizedLinear}


def quantize_dynamic(model: Module, qconfig_spec: Any = None, dtype: QDType = qint8, mapping: Any = None,
                     inplace: bool = False) -> Module:
    """``model`` with its layers of the types in ``qconfig_spec`` (default ``{nn.Linear}``) replaced by
    dynamically quantized ones (int8 weights, int8 activations quantized per batch, int32 products);
    a copy unless ``inplace`` (``torch.ao.quantization.quantize_dynamic``)."""
    if dtype is not qint8:
        raise DTypeError(f"quantize_dynamic(): dtype must be ferro.qint8, got {dtype!r}")
    if not isinstance(model, Module):
        raise TypeError(f"quantize_dynamic(): argument 'model' must be an nn.Module, not {type(model).__name__}")
    types = set(qconfig_spec) if qconfig_spec is not None else {Linear}
    table = dict(_MAPPING if mapping is None else mapping)
    unknown = [t for t in types if not isinstance(t, type) or t not in table]
    if unknown:
        raise ValueError(f"quantize_dynamic(): no dynamically quantized counterpart of {unknown} (ferro quantizes "
                         f"{', '.join(t.__name__ for t in table)})")
    if not inplace:
        model = copy.deepcopy(model)
    if type(model) in types:
        return table[type(model)].from_float(model)
    _swap(model, types, table)
    return model


def _swap(module: Module, types: set[type], table: dict[type, type]) -> None:
    for name, child in list(module._modules.items()):
        if child is None:
            continue
        if type(child) in types:
            module._modules[name] = table[type(child)].from_float(child)
        else:
            _swap(child, types, table)
