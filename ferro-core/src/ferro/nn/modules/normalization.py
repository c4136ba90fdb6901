"""Normalization layers: ``BatchNorm1d/2d/3d`` (with running statistics), ``InstanceNorm1d/2d/3d``,
``LayerNorm``, ``GroupNorm``, ``RMSNorm``, ``LocalResponseNorm``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..._core.dtypes import int64
from ..._core.host import np as host_np
from ..._core.modes import ARMED
from ..._core.tensor import Tensor
from ..._creation import empty, ones, tensor, zeros
from ...autograd import no_grad
from ...errors import ShapeError
from .. import functional as F  # noqa: N812 - the name PyTorch code uses
from .. import init
from ..parameter import Parameter
from ._params import optional_parameters
from .module import Module

__all__ = ["BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d",
           "LayerNorm", "GroupNorm", "RMSNorm", "LocalResponseNorm"]


class _NormBase(Module):
    """Per-channel affine parameters and running statistics (BatchNorm and InstanceNorm)."""

    _dims: tuple[int, ...]  # the accepted input ranks

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = True,
                 track_running_stats: bool = True, device: Any = None, dtype: Any = None, *,
                 bias: bool = True) -> None:
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        optional_parameters(self, {"weight": affine, "bias": affine and bias},
                            lambda _: empty(num_features, device=device, dtype=dtype))
        if track_running_stats:
            self.register_buffer("running_mean", zeros(num_features, device=device, dtype=dtype))
            self.register_buffer("running_var", ones(num_features, device=device, dtype=dtype))
            self.register_buffer("num_batches_tracked", tensor(0, dtype=int64, device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self) -> None:
        """Running mean 0, running variance 1, no batches seen."""
        if self.track_running_stats:
            with no_grad():
                self.running_mean.zero_()
                self.running_var.fill_(1)
                self.num_batches_tracked.zero_()

    def reset_parameters(self) -> None:
        """Reset the running statistics, weight to 1 and bias to 0."""
        self.reset_running_stats()
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def _check_input_dim(self, input: Tensor) -> None:
        if input.ndim not in self._dims:
            ranks = " or ".join(f"{d}D" for d in self._dims)
            raise ShapeError(f"{type(self).__name__}: expected {ranks} input (got {input.ndim}D input)")

    def _average_factor(self) -> float:
        """The running-average weight of this step; counts the batch when tracking in training."""
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            _count(self.num_batches_tracked)
            if self.momentum is None:  # a cumulative moving average
                factor = 1.0 / float(self.num_batches_tracked.item())
        return factor

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, affine={self.affine}, "
                f"bias={self.bias is not None}, track_running_stats={self.track_running_stats}")


def _count(t: Tensor) -> None:
    """``t.add_(1)`` outside the graph: where no dispatch layer is on (nothing traces the step) and ``t`` is a
    plain host array of its own, with no views, the count is bumped in place (an ``add_`` is some microseconds
    of checks and dispatch, per batch norm layer and step)."""
    d = t._data
    if (not ARMED[0] and type(t) is Tensor and type(d) is host_np().ndarray and d.flags.writeable
            and t._base is None and t._view is None and len(t._vc) == 1 and not t._rg):
        d += 1
        t._vc[0] += 1
        return
    with no_grad():
        t.add_(1)


class _BatchNorm(_NormBase):
    def forward(self, input: Tensor) -> Tensor:
        """Normalize each channel by the batch's statistics (training) or the running ones (eval)."""
        if input.ndim not in self._dims:
            self._check_input_dim(input)
        shape = input.shape
        if shape[1] != self.num_features:
            raise ShapeError(f"{type(self).__name__}: expected {self.num_features} channels (dim 1), got input "
                             f"{list(shape)}")
        buffers, params = self._buffers, self._parameters  # (one dict read each, not Module.__getattr__'s search)
        rm, rv = buffers.get("running_mean"), buffers.get("running_var")
        training = self.training
        use_batch = training or (rm is None and rv is None)
        if use_batch and input.numel() // shape[1] <= 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got input size {list(shape)}")
        factor = self._average_factor()
        if training and not self.track_running_stats:
            rm = rv = None
        return F.batch_norm(input, rm, rv, params.get("weight"), params.get("bias"), use_batch, factor, self.eps)


class BatchNorm1d(_BatchNorm):
    """Batch normalization of (N, C) or (N, C, L), per channel, with learned scale and shift.

    In training it normalizes by the batch's statistics and updates ``running_mean`` /
    ``running_var``; in eval mode it uses those.
    """

    _dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    """Batch normalization of (N, C, H, W), per channel (see :class:`BatchNorm1d`)."""

    _dims = (4,)


class BatchNorm3d(_BatchNorm):
    """Batch normalization of (N, C, D, H, W), per channel (see :class:`BatchNorm1d`)."""

    _dims = (5,)


class _InstanceNorm(_NormBase):
    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1, affine: bool = False,
                 track_running_stats: bool = False, device: Any = None, dtype: Any = None, *,
                 bias: bool = True) -> None:
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)

    def forward(self, input: Tensor) -> Tensor:
        """Normalize each channel of each sample over its spatial dims (or by running stats in eval)."""
        self._check_input_dim(input)
        batched = input.ndim == self._dims[-1]
        x = input if batched else input.unsqueeze(0)
        if x.shape[1] != self.num_features:
            raise ShapeError(f"{type(self).__name__}: expected {self.num_features} channels, got input "
                             f"{list(input.shape)}")
        factor = 0.0 if self.momentum is None else self.momentum  # PyTorch counts no batches here
        if not self.track_running_stats or (self.training and self.running_mean is None):
            out = F.instance_norm(x, None, None, self.weight, self.bias, True, factor, self.eps)
        else:
            # As PyTorch: a batch norm of the (1, N*C, ...) reshape with the running stats repeated per sample,
            # whose updated copies are averaged back over the samples.
            n, c = x.shape[0], x.shape[1]
            rm, rv = self.running_mean.repeat(n), self.running_var.repeat(n)
            y = F.batch_norm(x.reshape(1, n * c, *x.shape[2:]), rm, rv, None, None, self.training, factor, self.eps)
            if self.training:
                with no_grad():
                    self.running_mean.copy_(rm.reshape(n, c).mean(0))
                    self.running_var.copy_(rv.reshape(n, c).mean(0))
            shape = [1, c] + [1] * (x.ndim - 2)
            out = y.reshape(x.shape)
            if self.weight is not None:
                out = out * self.weight.reshape(shape)
            if self.bias is not None:
                out = out + self.bias.reshape(shape)
        return out if batched else out.squeeze(0)


class InstanceNorm1d(_InstanceNorm):
    """Instance normalization of (N, C, L) or (C, L); no affine and no running stats by default."""

    _dims = (2, 3)


class InstanceNorm2d(_InstanceNorm):
    """Instance normalization of (N, C, H, W) or (C, H, W); no affine and no running stats by default."""

    _dims = (3, 4)


class InstanceNorm3d(_InstanceNorm):
    """Instance normalization of (N, C, D, H, W) or (C, D, H, W); no affine and no running stats by default."""

    _dims = (4, 5)


def _shape(normalized_shape: int | Sequence[int]) -> tuple[int, ...]:
    return (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)


class LayerNorm(Module):
    """Normalize over the last ``len(normalized_shape)`` dims, then scale and shift elementwise."""

    def __init__(self, normalized_shape: int | Sequence[int], eps: float = 1e-5, elementwise_affine: bool = True,
                 bias: bool = True, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.normalized_shape, self.eps, self.elementwise_affine = _shape(normalized_shape), eps, elementwise_affine
        optional_parameters(self, {"weight": elementwise_affine, "bias": elementwise_affine and bias},
                            lambda name: (ones if name == "weight" else zeros)(*self.normalized_shape, device=device,
                                                                                dtype=dtype))

    def reset_parameters(self) -> None:
        """Weight 1, bias 0."""
        if self.weight is not None:
            init.ones_(self.weight)
        if self.bias is not None:
            init.zeros_(self.bias)

    def forward(self, input: Tensor) -> Tensor:
        """The normalized input."""
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}, "
                f"bias={self.bias is not None}")


class RMSNorm(Module):
    """Divide by the root mean square over the last dims (``eps`` None: the dtype's machine epsilon), times weight."""

    def __init__(self, normalized_shape: int | Sequence[int], eps: float | None = None,
                 elementwise_affine: bool = True, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.normalized_shape, self.eps, self.elementwise_affine = _shape(normalized_shape), eps, elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(ones(*self.normalized_shape, device=device, dtype=dtype))
        else:
            self.register_parameter("weight", None)

    def reset_parameters(self) -> None:
        """Weight 1."""
        if self.weight is not None:
            init.ones_(self.weight)

    def forward(self, input: Tensor) -> Tensor:
        """The RMS-normalized input."""
        return F.rms_norm(input, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class GroupNorm(Module):
    """Normalize groups of channels of each sample, then scale and shift per channel."""

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5, affine: bool = True,
                 device: Any = None, dtype: Any = None, *, bias: bool = True) -> None:
        super().__init__()
        if num_channels % num_groups:
            raise ValueError(f"GroupNorm: num_channels ({num_channels}) must be divisible by num_groups "
                             f"({num_groups})")
        self.num_groups, self.num_channels, self.eps, self.affine = num_groups, num_channels, eps, affine
        optional_parameters(self, {"weight": affine, "bias": affine and bias},
                            lambda name: (ones if name == "weight" else zeros)(num_channels, device=device,
                                                                                dtype=dtype))

    def reset_parameters(self) -> None:
        """Weight 1, bias 0."""
        if self.affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def forward(self, input: Tensor) -> Tensor:
        """The group-normalized input."""
        if input.ndim < 2 or input.shape[1] != self.num_channels:
            raise ShapeError(f"GroupNorm: expected input with {self.num_channels} channels (dim 1), got shape "
                             f"{list(input.shape)}")
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}, "
                f"bias={self.bias is not None}")


class LocalResponseNorm(Module):
    """Divide by a power of the sum of squares over ``size`` neighboring channels."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0) -> None:
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input: Tensor) -> Tensor:
        """The normalized input."""
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"
