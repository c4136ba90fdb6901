"""The ``Lazy*`` layers, as PyTorch's: built without their input size (``in_features`` / ``in_channels`` /
``num_features``), which the first input gives; the layer then becomes the full class (``cls_to_become``),
with PyTorch's initialization. ``.to()`` / ``.double()``... before that are replayed on the new parameters, and
loading a state_dict sizes the layer from the saved weights."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..._core.tensor import Tensor
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from .linear import Linear
from .module import Module
from .normalization import BatchNorm1d, BatchNorm2d, BatchNorm3d, InstanceNorm1d, InstanceNorm2d, InstanceNorm3d

__all__ = ["LazyModuleMixin", "LazyLinear", "LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d",
           "LazyConvTranspose2d", "LazyConvTranspose3d", "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d",
           "LazyInstanceNorm1d", "LazyInstanceNorm2d", "LazyInstanceNorm3d"]

#: What a module keeps across its materialization: its hooks and its mode.
_KEPT = ("training", "_forward_pre_hooks", "_forward_pre_hooks_with_kwargs", "_forward_hooks",
         "_forward_hooks_with_kwargs", "_forward_hooks_always_called", "_backward_pre_hooks", "_backward_hooks")


class LazyModuleMixin(Module):
    """A layer whose input size comes from its first input. ``cls_to_become`` is the full class, built as
    ``cls_to_become(in_size, *args, **kwargs)``; ``_spatial`` is its number of spatial dims (the channel dim of
    an unbatched input is 0)."""

    cls_to_become: type[Module]
    _spatial: int | None = None  # None: features are the last dim (Linear); 0: always dim 1 (BatchNorm)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()
        object.__setattr__(self, "_lazy_args", (args, kwargs))
        object.__setattr__(self, "_lazy_applied", [])

    def has_uninitialized_params(self) -> bool:
        """True until the first input (or a loaded state_dict) gives the input size."""
        return True

    def _apply(self, fn: Callable[[Tensor], Tensor]) -> Module:
        self._lazy_applied.append(fn)
        return self

    def _in_size(self, input: Tensor) -> int:
        if self._spatial is None:
            return int(input.shape[-1])
        return int(input.shape[0] if input.ndim == self._spatial + 1 or input.ndim == 1 else input.shape[1])

    def initialize_parameters(self, input: Tensor) -> None:
        """Become ``cls_to_become`` sized for ``input``, on its device unless a device was given."""
        self._materialize(self._in_size(input), input.device)

    def _materialize(self, size: int, device: Any) -> None:
        args, kwargs = self._lazy_args
        if kwargs.get("device") is None and not self._lazy_applied:
            kwargs = {**kwargs, "device": device}
        full = self.cls_to_become(size, *args, **kwargs)
        for fn in self._lazy_applied:
            full._apply(fn)
        kept = {k: self.__dict__[k] for k in _KEPT}
        self.__dict__.clear()
        self.__dict__.update(full.__dict__)
        self.__dict__.update(kept)
        self.__class__ = self.cls_to_become  # type: ignore[assignment]

    def _size_from_state(self, state_dict: Mapping[str, Any], prefix: str) -> int | None:
        for key in ("weight", "running_mean"):
            if prefix + key in state_dict:
                shape = tuple(state_dict[prefix + key].shape)
                if self._spatial is None:
                    return shape[-1]
                if issubclass(self.cls_to_become, (Conv1d, Conv2d, Conv3d)) and key == "weight":
                    return shape[1] * int(self._lazy_args[1].get("groups", _positional_groups(self._lazy_args[0])))
                return shape[0]
        return None

    def _materialize_from_state(self, state_dict: Mapping[str, Any], prefix: str) -> None:
        """Size the layer from the tensors of ``state_dict`` under ``prefix`` (``load_state_dict`` calls this
        before loading); with nothing saved, it stays lazy."""
        size = self._size_from_state(state_dict, prefix)
        if size is not None:
            self._materialize(size, None)

    def forward(self, input: Tensor, *args: Any, **kwargs: Any) -> Any:
        """Materialize for ``input``, then run the full layer."""
        self.initialize_parameters(input)
        return self.forward(input, *args, **kwargs)

    def extra_repr(self) -> str:
        args, kwargs = self._lazy_args
        return ", ".join([*(repr(a) for a in args), *(f"{k}={v!r}" for k, v in kwargs.items())])


def _positional_groups(args: tuple[Any, ...]) -> int:
    """``groups`` of a lazy convolution given positionally: (out, kernel, stride, padding, dilation, groups)."""
    return int(args[5]) if len(args) > 5 else 1


class LazyLinear(LazyModuleMixin):
    """:class:`Linear` whose ``in_features`` is the last dim of its first input: ``LazyLinear(out_features,
    bias=True, device=None, dtype=None)``."""

    cls_to_become = Linear


class LazyConv1d(LazyModuleMixin):
    """:class:`Conv1d` whose ``in_channels`` comes from its first input."""

    cls_to_become, _spatial = Conv1d, 1


class LazyConv2d(LazyModuleMixin):
    """:class:`Conv2d` whose ``in_channels`` comes from its first input."""

    cls_to_become, _spatial = Conv2d, 2


class LazyConv3d(LazyModuleMixin):
    """:class:`Conv3d` whose ``in_channels`` comes from its first input."""

    cls_to_become, _spatial = Conv3d, 3


class LazyConvTranspose1d(LazyModuleMixin):
    """:class:`ConvTranspose1d` whose ``in_channels`` comes from its first input."""

    cls_to_become, _spatial = ConvTranspose1d, 1


class LazyConvTranspose2d(LazyModuleMixin):
    """:class:`ConvTranspose2d` whose ``in_channels`` comes from its first input."""

    cls_to_become, _spatial = ConvTranspose2d, 2


class LazyConvTranspose3d(LazyModuleMixin):
    """:class:`ConvTranspose3d` whose ``in_channels`` comes from its first input."""

    cls_to_become, _spatial = ConvTranspose3d, 3


class LazyBatchNorm1d(LazyModuleMixin):
    """:class:`BatchNorm1d` whose ``num_features`` comes from its first input."""

    cls_to_become, _spatial = BatchNorm1d, 0  # channels: dim 1


class LazyBatchNorm2d(LazyModuleMixin):
    """:class:`BatchNorm2d` whose ``num_features`` comes from its first input."""

    cls_to_become, _spatial = BatchNorm2d, 0  # channels: dim 1


class LazyBatchNorm3d(LazyModuleMixin):
    """:class:`BatchNorm3d` whose ``num_features`` comes from its first input."""

    cls_to_become, _spatial = BatchNorm3d, 0  # channels: dim 1


class _LazyInstanceNorm(LazyModuleMixin):
    """PyTorch's lazy instance norms are affine and track running statistics by default (the full ones do not)."""

    def __init__(self, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, device: Any = None, dtype: Any = None, **kwargs: Any) -> None:
        super().__init__(eps, momentum, affine, track_running_stats, device=device, dtype=dtype, **kwargs)


class LazyInstanceNorm1d(_LazyInstanceNorm):
    """:class:`InstanceNorm1d` whose ``num_features`` comes from its first input."""

    cls_to_become, _spatial = InstanceNorm1d, 1


class LazyInstanceNorm2d(_LazyInstanceNorm):
    """:class:`InstanceNorm2d` whose ``num_features`` comes from its first input."""

    cls_to_become, _spatial = InstanceNorm2d, 2


class LazyInstanceNorm3d(_LazyInstanceNorm):
    """:class:`InstanceNorm3d` whose ``num_features`` comes from its first input."""

    cls_to_become, _spatial = InstanceNorm3d, 3
