"""Stateless neural-network functions, as ``torch.nn.functional``.

Activations and softmax are registry ops (``ferro ops`` lists them), written
in other ops unless a backend supplies a fused kernel.
"""

from __future__ import annotations

from typing import Any

from .._core.lazy import attributes as _attributes
from .._core.tensor import Tensor
from .._ops.composite import ACTIVATION_NAMES
from .._ops.composite import FUNCTIONS as _COMPOSITES
from .._ops.conv import FUNCTIONS as _CONV
from .._ops.conv import adaptive_max_pool
from .._ops.elementwise import FUNCTIONS as _ELEMENTWISE
from .._ops.inplace import make_inplace as _make_inplace
from .._ops.movement import pad
from .._ops.nn import FUNCTIONS as _NN
from .._ops.nn_bags import FUNCTIONS as _BAGS
from .._ops.nn_dropouts import FUNCTIONS as _DROPOUTS
from .._ops.nn_surface import FUNCTIONS as _SURFACE
from .._ops.nn_windows import FUNCTIONS as _WINDOWS
from .._ops.nn_windows import PLAIN as _WITH_INDICES
from .._ops.numeric import NN_FUNCTIONS as _NUMERIC

relu = _ELEMENTWISE["relu"]
sigmoid = _ELEMENTWISE["sigmoid"]
tanh = _ELEMENTWISE["tanh"]
softmax = _COMPOSITES["softmax"]
log_softmax = _COMPOSITES["log_softmax"]
relu6 = _COMPOSITES["relu6"]
leaky_relu = _COMPOSITES["leaky_relu"]
elu = _COMPOSITES["elu"]
selu = _COMPOSITES["selu"]
celu = _COMPOSITES["celu"]
gelu = _COMPOSITES["gelu"]
silu = _COMPOSITES["silu"]
mish = _COMPOSITES["mish"]
softplus = _COMPOSITES["softplus"]
softsign = _COMPOSITES["softsign"]
hardtanh = _COMPOSITES["hardtanh"]
hardsigmoid = _COMPOSITES["hardsigmoid"]
hardswish = _COMPOSITES["hardswish"]
logsigmoid = _COMPOSITES["logsigmoid"]
tanhshrink = _COMPOSITES["tanhshrink"]
threshold = _COMPOSITES["threshold"]
glu = _COMPOSITES["glu"]

globals().update(_NN)
globals().update(_CONV)
globals().update(_NUMERIC)  # normalize
globals().update(_SURFACE)  # softmin, hardshrink, the margin losses, pixel_shuffle...
globals().update(_DROPOUTS)  # dropout1d/3d, alpha dropouts, rrelu, channel_shuffle, adaptive_avg_pool1d, pdist
globals().update(_BAGS)  # embedding_bag, ctc_loss
globals().update(_WINDOWS)  # fold / unfold, lp pools, max unpools, 3-d adaptive and fractional pools, ...
globals().update(_WITH_INDICES)
#: The in-place activations (``F.elu_(x)``): the op's in-place form, as ``Tensor.relu_``.
_INPLACE = {f"{n}_": _make_inplace(n) for n in ("relu", "elu", "celu", "selu", "leaky_relu", "hardtanh", "threshold",
                                                 "rrelu")}
globals().update(_INPLACE)


def adaptive_max_pool1d(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    """Max pooling of (N, C, L) or (C, L) to length ``output_size``; ``return_indices=True`` also returns
    where each maximum came from (int64 indices into L)."""
    return adaptive_max_pool(1, input, output_size, return_indices)


def adaptive_max_pool2d(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    """Max pooling of (N, C, H, W) or (C, H, W) to ``output_size`` (int or pair, None keeps that size), with
    PyTorch's window bounds; ``return_indices=True`` also returns where each maximum came from (int64 flat
    indices into H * W). Without indices it is the registry op ``adaptive_max_pool2d``."""
    return adaptive_max_pool(2, input, output_size, return_indices)


__all__ = ["relu", "sigmoid", "tanh", "softmax", "log_softmax", "pad", *ACTIVATION_NAMES, *_NN, *_CONV, *_NUMERIC,
           *_SURFACE, *_DROPOUTS, *_INPLACE, *_BAGS, *_WINDOWS, *_WITH_INDICES,
           "adaptive_max_pool1d"]

#: The one function written with a layer (:class:`~ferro.nn.MultiheadAttention`'s computation): imported from
#: there on first use, as the layers are (``ferro.nn``).
__getattr__ = _attributes(__name__, {"multi_head_attention_forward": "ferro.nn.modules.attention"})


def __dir__() -> list[str]:
    return sorted({*globals(), "multi_head_attention_forward"})
