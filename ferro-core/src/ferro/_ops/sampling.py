"""Random sampling ops written over ``rand`` / ``randn``: bernoulli, multinomial, normal, randperm,
and the in-place fills ``uniform_``, ``normal_``, ``bernoulli_``. Each takes ``generator=``."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from .._core.device import device as _device_cls
from .._core.dtypes import float32, float64
from .._core.grad_mode import no_grad
from .._core.records import ops, register_composites
from .._core.tensor import Tensor
from .._creation import rand, randn
from .._random import Generator
from ..errors import ShapeError

__all__ = ["FUNCTIONS", "METHODS", "INPLACE_METHODS"]


def bernoulli(p: Tensor, *, generator: Generator | None = None) -> Tensor:
    """1 with probability ``p`` (elementwise), else 0, in ``p``'s dtype."""
    u = rand(*p.shape, dtype=p.dtype, device=p.device, generator=generator)
    return (u < p).to(p.dtype)


def multinomial(probs: Tensor, num_samples: int, replacement: bool = False, *,
                generator: Generator | None = None) -> Tensor:
    """Indices drawn from the (unnormalized) weights of each row of ``probs`` (int64)."""
    p = probs if probs.ndim == 2 else probs.unsqueeze(0)
    n = p.shape[-1]
    if not replacement and num_samples > n:
        raise ShapeError(f"multinomial: cannot draw {num_samples} samples without replacement from {n} categories")
    if bool((p < 0).any()) or not bool((p.sum(-1) > 0).all()):
        raise ValueError("multinomial: probabilities must be non-negative with a positive sum in every row")
    p = p.detach().to(float64)
    if replacement:
        cdf = (p / p.sum(-1, keepdim=True)).cumsum(-1)
        u = rand(p.shape[0], num_samples, dtype=float64, device=p.device, generator=generator)
        out = ops.searchsorted(cdf.contiguous(), u.contiguous(), right=True).clamp(max=n - 1)
    else:  # Gumbel top-k: sampling without replacement in proportion to p
        u = rand(*p.shape, dtype=float64, device=p.device, generator=generator)
        keys = ops.where(p > 0, p.log() - (-(u.clamp_min(1e-300)).log()).log(), -math.inf)
        out = keys.topk(num_samples, -1).indices
    return out if probs.ndim == 2 else out.squeeze(0)


def normal(mean: Any, std: Any = 1.0, size: Any = None, *, generator: Generator | None = None,
           dtype: Any = None, device: Any = None) -> Tensor:
    """Normal samples with the given (tensor or float) ``mean`` and ``std``."""
    if not isinstance(std, Tensor) and std < 0:
        raise ValueError(f"normal expects std >= 0.0, but found std {std}")
    ref = mean if isinstance(mean, Tensor) else std if isinstance(std, Tensor) else None
    if ref is not None:
        shape = (mean * 0 + std * 0).shape  # the broadcast shape of mean and std
        z = randn(*shape, dtype=ref.dtype, device=ref.device, generator=generator)
    else:
        z = randn(*(size or ()), dtype=dtype, device=device, generator=generator)
    return z * std + mean


def randperm(n: int, *, generator: Generator | None = None, dtype: Any = None, device: Any = None) -> Tensor:
    """A random permutation of ``0 .. n - 1``."""
    dev = _device_cls(device)
    dev.backend  # binds it  # noqa: B018
    # float64 keys where the device has them (fewer ties), else float32 (an OpenCL device without fp64)
    keys = rand(n, dtype=float64 if float64 in dev._dtypes else float32, device=dev, generator=generator)
    out = keys.argsort()
    return out if dtype is None else out.to(dtype)


def _fill(name: str, draw: Callable[..., Tensor]) -> Callable[..., Tensor]:
    def method(self: Tensor, *args: Any, generator: Generator | None = None, **kwargs: Any) -> Tensor:
        from .inplace import _check_leaf, copy_
        _check_leaf(self, name)
        with no_grad():
            copy_(self, draw(self, *args, generator=generator, **kwargs))
        return self
    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"Fill with {name[:-1]} samples, in place; returns self."
    return method


def _uniform(x: Tensor, a: float = 0.0, b: float = 1.0, *, generator: Generator | None = None) -> Tensor:
    return rand(*x.shape, dtype=x.dtype, device=x.device, generator=generator) * (b - a) + a


def _normal(x: Tensor, mean: float = 0.0, std: float = 1.0, *, generator: Generator | None = None) -> Tensor:
    return randn(*x.shape, dtype=x.dtype, device=x.device, generator=generator) * std + mean


def _bern(x: Tensor, p: float = 0.5, *, generator: Generator | None = None) -> Tensor:
    u = rand(*x.shape, dtype=float32 if not x.dtype.is_floating_point else x.dtype, device=x.device,
                  generator=generator)
    return (u < p).to(x.dtype)


INPLACE_METHODS: dict[str, Callable[..., Tensor]] = {
    "uniform_": _fill("uniform_", _uniform), "normal_": _fill("normal_", _normal),
    "bernoulli_": _fill("bernoulli_", _bern),
}

_ROWS: list[tuple[str, Callable[..., Any]]] = [
    ("bernoulli", bernoulli),
    ("multinomial", multinomial, ("argsort",)),  # without replacement (the samples draw with it)
    ("normal", normal),
    ("randperm", randperm, ("argsort",)),  # not derived: its keys are float64 or float32 by device
]


FUNCTIONS = register_composites("random", _ROWS)
METHODS = ["bernoulli", "multinomial"]
