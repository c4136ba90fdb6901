"""Every activation of ``ferro.nn.functional`` as a module (``ReLU``, ``GELU``, ``Softmax``...), plus ``PReLU``.

The activations are one table: each row names the class, the function and its
keyword arguments with PyTorch's defaults; one base class binds the arguments,
calls the function and prints them in ``repr`` as PyTorch does.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

from ..._core.tensor import Tensor
from ..._creation import empty
from .. import functional as F  # noqa: N812 - the name PyTorch code uses
from .. import init
from ..parameter import Parameter
from .module import Module

__all__ = ["PReLU"]  # the table's classes are added below


class _Activation(Module):
    """Binds the row's arguments (positional or by name, PyTorch's order), forwards to its function."""

    _fn: Callable[..., Tensor]
    _params: tuple[tuple[str, Any], ...] = ()
    _inplace = False  # whether the class takes inplace=
    _fn_: Callable[..., Tensor] | None = None  # the function's in-place form (``F.relu_``), where it has one
    _repr_inplace = True  # whether repr shows inplace=True (PyTorch omits it for a few)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()
        names = [n for n, _ in self._params] + (["inplace"] if self._inplace else [])
        if len(args) > len(names):
            raise TypeError(f"{type(self).__name__}() takes at most {len(names)} arguments ({len(args)} given)")
        values = dict(self._params, **({"inplace": False} if self._inplace else {}))
        values.update(zip(names, args))
        for k, v in kwargs.items():
            if k not in values:
                raise TypeError(f"{type(self).__name__}() got an unexpected keyword argument '{k}'")
            values[k] = v
        for k, v in values.items():
            setattr(self, k, v)

    def _call(self, input: Tensor) -> Tensor:
        return type(self)._fn(input, *(getattr(self, n) for n, _ in self._params))

    def forward(self, input: Tensor) -> Tensor:
        """The activation of ``input`` (written into ``input`` with ``inplace=True``)."""
        if self._inplace and self.inplace:
            fn_ = type(self)._fn_
            if fn_ is not None:  # one write into input, which takes the op's place in the graph
                return fn_(input, *(getattr(self, n) for n, _ in self._params))
            # the function may save its input for backward: it reads a copy of what the write replaces
            return input.copy_(self._call(input.clone() if input.requires_grad else input))
        return self._call(input)

    def extra_repr(self) -> str:
        parts = [f"{n}={getattr(self, n)!r}" for n, _ in self._params]
        if self._inplace and self._repr_inplace and self.inplace:
            parts.append("inplace=True")
        return ", ".join(parts)


def _softmax_dim(ndim: int) -> int:
    warnings.warn("Implicit dimension choice for softmax has been deprecated. Change the call to include dim=X "
                  "as an argument.", stacklevel=4)
    return 0 if ndim in (0, 1, 3) else 1


def _softmax(x: Tensor, dim: int | None) -> Tensor:
    return F.softmax(x, _softmax_dim(x.ndim) if dim is None else dim)


def _log_softmax(x: Tensor, dim: int | None) -> Tensor:
    return F.log_softmax(x, _softmax_dim(x.ndim) if dim is None else dim)


def _softmin(x: Tensor, dim: int | None) -> Tensor:
    return F.softmax(-x, _softmax_dim(x.ndim) if dim is None else dim)


#: (class name, function, (argument, default)..., takes inplace=, repr shows inplace, doc)
_TABLE: list[tuple[str, Callable[..., Tensor], tuple[tuple[str, Any], ...], bool, bool, str]] = [
    ("ReLU", F.relu, (), True, True, "max(x, 0)."),
    ("ReLU6", F.relu6, (), True, True, "min(max(x, 0), 6)."),
    ("LeakyReLU", F.leaky_relu, (("negative_slope", 0.01),), True, True, "x if x > 0 else negative_slope * x."),
    ("ELU", F.elu, (("alpha", 1.0),), True, True, "x if x > 0 else alpha * (exp(x) - 1)."),
    ("CELU", F.celu, (("alpha", 1.0),), True, True, "x if x > 0 else alpha * (exp(x / alpha) - 1)."),
    ("SELU", F.selu, (), True, True, "scale * elu(x) with the self-normalizing constants."),
    ("GELU", F.gelu, (("approximate", "none"),), False, False, "x * Phi(x); approximate='tanh' for the tanh form."),
    ("SiLU", F.silu, (), True, True, "x * sigmoid(x) (swish)."),
    ("Mish", F.mish, (), True, False, "x * tanh(softplus(x))."),
    ("Softplus", F.softplus, (("beta", 1.0), ("threshold", 20.0)), False, False,
     "log(1 + exp(beta * x)) / beta, linear past threshold."),
    ("Softsign", F.softsign, (), False, False, "x / (1 + |x|)."),
    ("Hardtanh", F.hardtanh, (("min_val", -1.0), ("max_val", 1.0)), True, True, "Clamp to [min_val, max_val]."),
    ("Hardsigmoid", F.hardsigmoid, (), True, False, "clamp(x / 6 + 1/2, 0, 1)."),
    ("Hardswish", F.hardswish, (), True, False, "x * hardsigmoid(x)."),
    ("LogSigmoid", F.logsigmoid, (), False, False, "log(sigmoid(x))."),
    ("Tanhshrink", F.tanhshrink, (), False, False, "x - tanh(x)."),
    ("Threshold", F.threshold, (("threshold", None), ("value", None)), True, True,
     "x if x > threshold else value."),
    ("GLU", F.glu, (("dim", -1),), False, False, "a * sigmoid(b) for the halves a, b of dim."),
    ("Sigmoid", F.sigmoid, (), False, False, "1 / (1 + exp(-x))."),
    ("Tanh", F.tanh, (), False, False, "tanh(x)."),
    ("Softmax", _softmax, (("dim", None),), False, False, "exp(x) / sum(exp(x)) along dim."),
    ("LogSoftmax", _log_softmax, (("dim", None),), False, False, "log(softmax(x)) along dim."),
    ("Softmin", _softmin, (("dim", None),), False, False, "softmax(-x) along dim."),
]

for _name, _fn, _params, _inplace, _repr_inplace, _doc in _TABLE:
    _fn_ = getattr(F, f"{_fn.__name__}_", None) if _inplace else None
    globals()[_name] = type(_name, (_Activation,), {
        "_fn": staticmethod(_fn), "_params": _params,
        "_fn_": None if _fn_ is None else staticmethod(_fn_), "_inplace": _inplace, "_repr_inplace": _repr_inplace,
        "__doc__": f"{_doc} Arguments (PyTorch's defaults): "
                   + (", ".join(f"{n}={d!r}" for n, d in _params) or "none")
                   + (", inplace=False." if _inplace else "."),
        "__module__": __name__,
    })
    __all__.append(_name)


def _hardshrink(x: Tensor, lambd: float) -> Tensor:
    from ..._ops.elementwise import where
    return where(x.abs() > lambd, x, 0.0)


def _softshrink(x: Tensor, lambd: float) -> Tensor:
    from ..._ops.elementwise import where
    return where(x > lambd, x - lambd, where(x < -lambd, x + lambd, 0.0))


class Hardshrink(_Activation):
    """x where |x| > lambd, else 0."""

    _fn = staticmethod(_hardshrink)
    _params = (("lambd", 0.5),)

    def extra_repr(self) -> str:
        return f"{self.lambd}"


class Softshrink(_Activation):
    """x - lambd above lambd, x + lambd below -lambd, else 0."""

    _fn = staticmethod(_softshrink)
    _params = (("lambd", 0.5),)

    def extra_repr(self) -> str:
        return f"{self.lambd}"


class Softmax2d(_Activation):
    """Softmax over the channels (dim -3) of (N, C, H, W) or (C, H, W)."""

    _fn = staticmethod(lambda x: F.softmax(x, -3))

    def forward(self, input: Tensor) -> Tensor:
        """Softmax over the channel dim."""
        if input.ndim not in (3, 4):
            raise ValueError(f"Softmax2d: expected input of 3 or 4 dimensions, got {input.ndim}D input of shape "
                             f"{list(input.shape)}")
        return super().forward(input)


__all__ += ["Hardshrink", "Softshrink", "Softmax2d"]


class PReLU(Module):
    """``x if x >= 0 else weight * x`` with a learned slope, one or one per channel (dim 1)."""

    def __init__(self, num_parameters: int = 1, init: float = 0.25, device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.num_parameters, self.init = num_parameters, init
        self.weight = Parameter(empty(num_parameters, device=device, dtype=dtype))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Every slope back to ``init``."""
        init.constant_(self.weight, self.init)

    def forward(self, input: Tensor) -> Tensor:
        """The activation of ``input``."""
        w = self.weight
        if self.num_parameters > 1:
            if input.ndim < 2 or input.shape[1] != self.num_parameters:
                raise ValueError(f"PReLU: {self.num_parameters} parameters need {self.num_parameters} channels "
                                 f"(dim 1), got input {list(input.shape)}")
            w = w.reshape([1, -1] + [1] * (input.ndim - 2))
        from ..._ops.elementwise import where
        return where(input >= 0, input, input * w)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"


class RReLU(Module):
    """Leaky ReLU with a random negative slope from ``[lower, upper]`` in training, their mean in eval."""

    def __init__(self, lower: float = 1.0 / 8, upper: float = 1.0 / 3, inplace: bool = False) -> None:
        super().__init__()
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, input: Tensor) -> Tensor:
        """``F.rrelu`` in this module's mode."""
        return F.rrelu(input, self.lower, self.upper, self.training)

    def extra_repr(self) -> str:
        return f"lower={self.lower}, upper={self.upper}{', inplace=True' if self.inplace else ''}"


class ChannelShuffle(Module):
    """Interleave the channels of ``groups`` groups (``F.channel_shuffle``)."""

    def __init__(self, groups: int) -> None:
        super().__init__()
        self.groups = groups

    def forward(self, input: Tensor) -> Tensor:
        """The shuffled channels."""
        return F.channel_shuffle(input, self.groups)

    def extra_repr(self) -> str:
        return f"groups={self.groups}"


__all__ += ["RReLU", "ChannelShuffle"]
