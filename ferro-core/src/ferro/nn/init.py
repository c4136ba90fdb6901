"""Parameter initializations, as ``torch.nn.init``: each fills a tensor in place (without
recording gradients) and returns it. The random ones take ``generator=``.

>>> import ferro
>>> w = ferro.empty(4, 3)
>>> ferro.nn.init.xavier_uniform_(w).shape
ferro.Size([4, 3])
"""

from __future__ import annotations

import math

from .._core.tensor import Tensor
from .._random import Generator
from ..autograd import no_grad
from ..errors import UnsupportedOperationError

__all__ = [
    "calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_", "ones_", "zeros_", "eye_", "dirac_",
    "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_", "orthogonal_", "sparse_",
]

_LINEAR_GAINS = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
                 "conv_transpose3d", "sigmoid")


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """The recommended scale of a weight's spread for ``nonlinearity`` (PyTorch's table).

    ``param`` is leaky_relu's negative slope (default 0.01).
    """
    if nonlinearity in _LINEAR_GAINS:
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif isinstance(param, (int, float)) and not isinstance(param, bool):
            slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor: Tensor) -> tuple[int, int]:
    if tensor.ndim < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 dimensions "
                         f"(got shape {list(tensor.shape)})")
    receptive = 1
    for s in tensor.shape[2:]:
        receptive *= s
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def _calculate_correct_fan(tensor: Tensor, mode: str) -> int:
    mode = mode.lower()
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of fan_in, fan_out")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0, generator: Generator | None = None) -> Tensor:
    """Fill with samples of U(a, b)."""
    with no_grad():
        return tensor.uniform_(a, b, generator=generator)


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, generator: Generator | None = None) -> Tensor:
    """Fill with samples of N(mean, std^2)."""
    with no_grad():
        return tensor.normal_(mean, std, generator=generator)


def trunc_normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0, b: float = 2.0,
                  generator: Generator | None = None) -> Tensor:
    """Fill with N(mean, std^2) samples truncated to ``[a, b]`` (by inverting the normal CDF, as PyTorch)."""
    def cdf(x: float) -> float:
        return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0

    lo, hi = cdf((a - mean) / std), cdf((b - mean) / std)
    with no_grad():
        tensor.uniform_(2 * lo - 1, 2 * hi - 1, generator=generator)
        tensor.erfinv_()
        tensor.mul_(std * math.sqrt(2.0))
        tensor.add_(mean)
        tensor.clamp_(min=a, max=b)
    return tensor


def constant_(tensor: Tensor, val: float) -> Tensor:
    """Fill with ``val``."""
    with no_grad():
        return tensor.fill_(val)


def ones_(tensor: Tensor) -> Tensor:
    """Fill with ones."""
    return constant_(tensor, 1.0)


def zeros_(tensor: Tensor) -> Tensor:
    """Fill with zeros."""
    return constant_(tensor, 0.0)


def eye_(tensor: Tensor) -> Tensor:
    """Fill a 2-D tensor with the identity (ones on the diagonal)."""
    if tensor.ndim != 2:
        raise ValueError(f"Only tensors with 2 dimensions are supported, got shape {list(tensor.shape)}")
    from .._creation import eye
    with no_grad():
        return tensor.copy_(eye(*tensor.shape, dtype=tensor.dtype, device=tensor.device))


def dirac_(tensor: Tensor, groups: int = 1) -> Tensor:
    """Fill a 3-, 4- or 5-D convolution weight so that the convolution is the identity
    (per group, for the first ``min(out, in)`` channels of each)."""
    if tensor.ndim not in (3, 4, 5):
        raise ValueError(f"Only tensors with 3, 4, or 5 dimensions are supported, got shape {list(tensor.shape)}")
    if tensor.shape[0] % groups:
        raise ValueError(f"dim 0 ({tensor.shape[0]}) must be divisible by groups ({groups})")
    import numpy as np

    from .._creation import tensor as make
    out_per_group = tensor.shape[0] // groups
    arr = np.zeros(tuple(tensor.shape))
    centers = tuple(s // 2 for s in tensor.shape[2:])
    for g in range(groups):
        for d in range(min(out_per_group, tensor.shape[1])):
            arr[(g * out_per_group + d, d, *centers)] = 1
    with no_grad():
        return tensor.copy_(make(arr, dtype=tensor.dtype, device=tensor.device))


def xavier_uniform_(tensor: Tensor, gain: float = 1.0, generator: Generator | None = None) -> Tensor:
    """Glorot uniform: U(-a, a) with ``a = gain * sqrt(6 / (fan_in + fan_out))``."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    a = gain * math.sqrt(6.0 / float(fan_in + fan_out))
    return uniform_(tensor, -a, a, generator)


def xavier_normal_(tensor: Tensor, gain: float = 1.0, generator: Generator | None = None) -> Tensor:
    """Glorot normal: N(0, std^2) with ``std = gain * sqrt(2 / (fan_in + fan_out))``."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / float(fan_in + fan_out)), generator)


def _kaiming_std(tensor: Tensor, a: float, mode: str, nonlinearity: str) -> float:
    if 0 in tensor.shape:
        return 0.0
    return calculate_gain(nonlinearity, a) / math.sqrt(_calculate_correct_fan(tensor, mode))


def kaiming_uniform_(tensor: Tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu",
                     generator: Generator | None = None) -> Tensor:
    """He uniform: U(-bound, bound) with ``bound = gain * sqrt(3 / fan)``."""
    if 0 in tensor.shape:
        return tensor
    bound = math.sqrt(3.0) * _kaiming_std(tensor, a, mode, nonlinearity)
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor: Tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu",
                    generator: Generator | None = None) -> Tensor:
    """He normal: N(0, std^2) with ``std = gain / sqrt(fan)``."""
    if 0 in tensor.shape:
        return tensor
    return normal_(tensor, 0.0, _kaiming_std(tensor, a, mode, nonlinearity), generator)


def orthogonal_(tensor: Tensor, gain: float = 1.0, generator: Generator | None = None) -> Tensor:
    """A (semi-)orthogonal matrix (trailing dims flattened), from the QR of a normal sample, times ``gain``."""
    if tensor.ndim < 2:
        raise ValueError(f"Only tensors with 2 or more dimensions are supported, got shape {list(tensor.shape)}")
    if tensor.numel() == 0:
        return tensor
    from .._creation import randn
    from ..linalg import qr
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    with no_grad():
        flat = randn(rows, cols, dtype=tensor.dtype, device=tensor.device, generator=generator)
        if rows < cols:
            flat = flat.T
        try:
            q, r = qr(flat)
        except UnsupportedOperationError:  # no QR on this device: the one-off factorization runs on the CPU
            q, r = (t.to(tensor.device) for t in qr(flat.cpu()))
        q = q * r.diagonal().sign()  # makes the decomposition unique, so Q is uniformly distributed
        if rows < cols:
            q = q.T
        tensor.copy_(q.reshape(tensor.shape) * gain)
    return tensor


def sparse_(tensor: Tensor, sparsity: float, std: float = 0.01, generator: Generator | None = None) -> Tensor:
    """A 2-D tensor with N(0, std^2) entries and a ``sparsity`` share of each column's rows zeroed."""
    if tensor.ndim != 2:
        raise ValueError(f"Only tensors with 2 dimensions are supported, got shape {list(tensor.shape)}")
    from .._ops.sampling import randperm
    rows, cols = tensor.shape
    num_zeros = math.ceil(sparsity * rows)
    with no_grad():
        tensor.normal_(0, std, generator=generator)
        for c in range(cols):
            zero_rows = randperm(rows, generator=generator, device=tensor.device)[:num_zeros]
            tensor[zero_rows, c] = 0
    return tensor


# The old names without the underscore, which PyTorch keeps as deprecated aliases.
uniform, normal, constant = uniform_, normal_, constant_
xavier_uniform, xavier_normal = xavier_uniform_, xavier_normal_
kaiming_uniform, kaiming_normal, orthogonal = kaiming_uniform_, kaiming_normal_, orthogonal_
