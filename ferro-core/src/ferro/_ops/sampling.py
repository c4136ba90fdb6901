"""Random sampling ops written over ``rand`` / ``randn``: bernoulli, multinomial, normal, randperm,
the in-place fills ``uniform_``, ``normal_``, ``bernoulli_``, ``random_``, ``exponential_``, ``cauchy_``,
``log_normal_``, ``geometric_`` (by inverting their distribution functions at uniform samples), and
``poisson`` / ``binomial``. Each takes ``generator=``."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from .._core.device import device as _device_cls
from .._core.dtypes import complex64, complex128, float32, float64
from .._core.grad_mode import no_grad
from .._core.numeric_info import finfo, iinfo
from .._core.records import ops, register_composites
from .._core.tensor import Tensor
from .._creation import rand, randn
from .._random import Generator
from ..errors import ShapeError
from ._rules import check_dtype, check_rule, register_ruled

__all__ = ["FUNCTIONS", "METHODS", "INPLACE_METHODS"]

_REAL_OF = {complex64: float32, complex128: float64}


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


def _standard_normal(shape: Any, dtype: Any, device: Any, generator: Generator | None) -> Tensor:
    """``randn``; for a complex dtype PyTorch's complex normal: real and imaginary parts each N(0, 1/2)."""
    real = _REAL_OF.get(dtype)
    if real is None:
        return randn(*shape, dtype=dtype, device=device, generator=generator)
    parts = randn(*shape, 2, dtype=real, device=device, generator=generator) * math.sqrt(0.5)
    return ops.view_as_complex(parts)


def normal(mean: Any, std: Any = 1.0, size: Any = None, *, generator: Generator | None = None,
           dtype: Any = None, device: Any = None) -> Tensor:
    """Normal samples with the given (tensor or float) ``mean`` and ``std``."""
    if not isinstance(std, Tensor) and std < 0:
        raise ValueError(f"normal expects std >= 0.0, but found std {std}")
    ref = mean if isinstance(mean, Tensor) else std if isinstance(std, Tensor) else None
    if ref is not None:
        shape = (mean * 0 + std * 0).shape  # the broadcast shape of mean and std
        z = _standard_normal(shape, ref.dtype, ref.device, generator)
    else:
        z = randn(*(size or ()), dtype=dtype, device=device, generator=generator)
    return z * std + mean


def randperm(n: int, *, generator: Generator | None = None, dtype: Any = None, device: Any = None) -> Tensor:
    """A random permutation of ``0 .. n - 1``."""
    if dtype is not None:
        check_dtype("randperm", dtype)
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


def _u(x: Tensor, generator: Generator | None) -> Tensor:
    """Uniform samples in [0, 1) shaped as ``x``: in float32 or float64, those of ``x``'s dtype (16-bit floats
    round values near 1 up to 1), float64 where ``x`` holds integers and the device has it."""
    return rand(*x.shape, dtype=_draw_dtype(x), device=x.device, generator=generator)


def _draw_dtype(x: Tensor) -> Any:
    if x.dtype in (float32, float64):
        return x.dtype
    return float64 if not x.dtype.is_floating_point and float64 in x.device._dtypes else float32


def _random(x: Tensor, from_: int = 0, to: int | None = None, *, generator: Generator | None = None) -> Tensor:
    if to is None:  # random_(to) or random_(): [0, to) or [0, the dtype's largest exactly representable integer]
        if from_ != 0:
            from_, to = 0, from_
        else:
            to = (2 ** (finfo(x.dtype).nmant + 1) + 1 if x.dtype.is_floating_point else
                  2 if x.dtype.kind == "b" else iinfo(x.dtype).max + 1)
    if to <= from_:
        raise ValueError(f"random_ expects 'from' to be less than 'to', but got from={from_} >= to={to}")
    return (_u(x, generator) * (to - from_)).floor().clamp(max=to - from_ - 1) + from_


def _exponential(x: Tensor, lambd: float = 1.0, *, generator: Generator | None = None) -> Tensor:
    if lambd <= 0:
        raise ValueError(f"exponential_ expects lambda > 0.0, but found lambda={lambd}")
    return -(1 - _u(x, generator)).log() / lambd


def _cauchy(x: Tensor, median: float = 0.0, sigma: float = 1.0, *, generator: Generator | None = None) -> Tensor:
    return median + sigma * (math.pi * (_u(x, generator) - 0.5)).tan()


def _log_normal(x: Tensor, mean: float = 1.0, std: float = 2.0, *, generator: Generator | None = None) -> Tensor:
    if std <= 0:
        raise ValueError(f"log_normal_ expects std > 0.0, but found std={std}")
    return (randn(*x.shape, dtype=x.dtype, device=x.device, generator=generator) * std + mean).exp()


def _geometric(x: Tensor, p: float, *, generator: Generator | None = None) -> Tensor:
    if not 0 < p < 1:
        raise ValueError(f"geometric_ expects p to be in (0, 1), but got p={p}")
    return ((1 - _u(x, generator)).log() / math.log1p(-p)).ceil().clamp(min=1)


def poisson(input: Tensor, generator: Generator | None = None) -> Tensor:
    """Samples of Poisson distributions with the rates ``input`` (in its dtype): counts of unit-rate
    exponential arrivals, added up while any sample still waits for one."""
    check_rule("poisson", input)
    if input.numel() and bool((input < 0).any()):
        raise ValueError("poisson(): invalid Poisson rate, expected rate to be non-negative")
    rate = input.detach()
    count = rate * 0
    time = -(1 - _u(rate, generator)).log()
    waiting = time < rate
    while bool(waiting.any()):
        count = count + waiting.to(rate.dtype)
        step = -(1 - _u(rate, generator)).log()
        time = time + step * waiting.to(rate.dtype)
        waiting = waiting.logical_and(time < rate)
    return count


def binomial(count: Tensor, prob: Tensor, generator: Generator | None = None) -> Tensor:
    """Samples of binomial distributions: successes in ``count`` trials of probability ``prob`` each."""
    check_rule("binomial", count, prob)
    n = (count * 0 + prob * 0 + count).detach().to(prob.dtype)  # broadcast
    p = (n * 0 + prob).detach()
    if n.numel() and bool(((p < 0).logical_or(p > 1)).any()):
        raise ValueError("binomial(): probabilities must be in [0, 1]")
    top = int(n.max()) if n.numel() else 0
    out = n * 0
    for k in range(top):  # one Bernoulli trial per remaining trial of each sample
        out = out + ((_u(n, generator) < p).logical_and(n > k)).to(n.dtype)
    return out


INPLACE_METHODS: dict[str, Callable[..., Tensor]] = {
    "uniform_": _fill("uniform_", _uniform), "normal_": _fill("normal_", _normal),
    "bernoulli_": _fill("bernoulli_", _bern), "random_": _fill("random_", _random),
    "exponential_": _fill("exponential_", _exponential), "cauchy_": _fill("cauchy_", _cauchy),
    "log_normal_": _fill("log_normal_", _log_normal), "geometric_": _fill("geometric_", _geometric),
}

_ROWS: list[tuple[str, Callable[..., Any]]] = [
    ("bernoulli", bernoulli),
    ("multinomial", multinomial, ("topk:float64",)),  # without replacement (the samples draw with it)
    ("normal", normal),
    ("randperm", randperm, ("argsort",)),  # not derived: its keys are float64 or float32 by device
]


#: The dtype rules, PyTorch CPU's (randperm's is that of its ``dtype=``).
_RULES = {"bernoulli": "real_floating", "normal": "floating", "randperm": "real_numeric"}
FUNCTIONS = {**register_ruled("random", _ROWS, _RULES, first_only=("normal",)),
             **register_composites("random", [("poisson", poisson), ("binomial", binomial)],
                                   dtype_rule="real_floating")}
METHODS = ["bernoulli", "multinomial"]
