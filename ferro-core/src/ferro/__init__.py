"""ferro: PyTorch-style eager tensors and autograd, with compute in backend plugins.

>>> import ferro
>>> x = ferro.randn(64, 32, requires_grad=True)
>>> w = ferro.randn(32, 10, requires_grad=True)
>>> (x @ w).relu().sum().backward()
>>> x.grad.shape
ferro.Size([64, 32])

Importing ferro imports no array library: backends are discovered through
entry points and loaded on first use.
"""

from __future__ import annotations

import gc as _gc

# Importing ferro creates some twenty thousand objects (op records, functions, classes) and no garbage; the
# cyclic collector, which runs every few hundred allocations, would scan them again and again for nothing.
_gc_was_enabled = _gc.isenabled()
_gc.disable()
try:
    # First, near the top of the stack: CPython 3.11 maps and unmaps a 16 KiB frame-stack chunk on every call
    # that crosses a chunk's end, and imported deep in the chain below, the NamedTuples of ferro.backends
    # and ferro._core (typing checks each field with Python calls) did that some 200 times.
    from . import backends  # noqa: F401

    # isort: split
    from . import amp, nn, optim, random
    from ._api import *  # noqa: F403 - the namespace of tensors and functions
    from ._api import __all__ as _api_all
    from ._api import bool as bool
    from ._api import cdouble as cdouble
    from ._api import cfloat as cfloat
    from ._api import double as double
    from ._api import float as float
    from ._api import half as half
    from ._api import int as int
    from ._api import long as long
    from ._api import set_default_dtype as set_default_dtype
    from ._api import short as short
    from ._aten import install as _install_aten
    from ._core.lazy import attributes as _attributes
    from ._core.tensor import Tensor as _Tensor
    from ._grids import *  # noqa: F403 - tril_indices, logspace, the window functions
    from ._grids import __all__ as _grids_all
    from ._legacy import legacy_new as _legacy_new
    from ._legacy import typed_tensor_classes as _typed_tensor_classes
    from ._sparse_faces import __all__ as _sparse_all
    from ._sparse_faces import layout, sparse_coo, sparse_coo_tensor, sparse_csr, sparse_csr_tensor, strided  # noqa: F401
    from .amp import autocast as autocast
    from .amp._autocast import STATE_FUNCTIONS as _AUTOCAST
finally:
    # What the import made lives as long as the process: moved out of the collector's sight (gc.freeze), it
    # costs no collection now (enabling the collector again would run one at once) nor in every later one.
    _gc.freeze()
    if _gc_was_enabled:
        _gc.enable()

__version__ = "0.1.0"

#: ``ferro.quantize_per_tensor``, ``ferro.qint8``...: :mod:`ferro.quantization`'s names.
_FROM_QUANTIZATION = ("quantize_per_tensor", "quantize_per_channel", "quantize_blockwise", "dequantize", "qint8",
                      "quint8", "qint32", "per_tensor_affine", "per_channel_affine", "per_tensor_symmetric",
                      "per_channel_symmetric", "per_block_symmetric")
#: Loaded when first used, so that ``import ferro`` stays light: subpackages, and what only some programs call.
_LAZY = {"distributions": ".distributions", "onnx": ".onnx", "special": ".special", "save": ".serialization",
         "load": ".serialization", "GradScaler": ".amp.grad_scaler", "data": ".data", "utils": ".utils",
         "accelerator": ".accelerator", "cuda": ".cuda", "quantization": ".quantization", "ao": ".ao",
         "sparse": ".sparse",
         **dict.fromkeys(_FROM_QUANTIZATION, ".quantization")}
__getattr__ = _attributes(__name__, _LAZY)


def _array_namespace(self: _Tensor, *, api_version: str | None = None) -> object:
    """The array API standard namespace, :mod:`ferro.array_api` (imported on first call)."""
    if api_version not in (None, "2021.12", "2022.12", "2023.12", "2024.12"):
        raise ValueError(f"ferro.array_api implements the standard's 2024.12 version, not {api_version!r}")
    from . import array_api
    return array_api


_Tensor.__array_namespace__ = _array_namespace  # type: ignore[method-assign]

#: ``torch.conv2d`` and the like: PyTorch's top-level names for ``nn.functional`` ops whose signatures agree.
_FROM_FUNCTIONAL = ("conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
                    "hardshrink", "pixel_shuffle", "pixel_unshuffle", "selu", "celu", "selu_", "celu_", "threshold",
                    "threshold_",
                    "cosine_similarity", "pairwise_distance", "avg_pool1d", "max_pool1d", "max_pool2d", "max_pool3d",
                    "dropout", "layer_norm", "group_norm", "rms_norm", "bilinear")
globals().update({_name: getattr(nn.functional, _name) for _name in _FROM_FUNCTIONAL})
_ATEN = _install_aten(globals())  # torch.batch_norm, torch.svd...: ATen's signatures (ferro._aten)
globals().update(_AUTOCAST)  # is_autocast_enabled, set_autocast_dtype...

_LEGACY = _typed_tensor_classes()
_Tensor.new = _legacy_new  # type: ignore[attr-defined]  # x.new(3, 4), x.new([1, 2])
globals().update(_LEGACY)  # FloatTensor, LongTensor, ...

__all__ = [*_api_all, *_grids_all, *_LEGACY, *_FROM_FUNCTIONAL, *_LAZY, *_sparse_all, "amp", "autocast", "nn", "optim",
           "random"]
__all__ += [*_ATEN, *_AUTOCAST]
