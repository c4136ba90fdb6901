"""``Identity``, ``Linear`` and ``Bilinear``, initialized as PyTorch initializes them."""

from __future__ import annotations

import math
from typing import Any

from ..._core.tensor import Tensor
from ..._creation import empty
from .. import functional as F  # noqa: N812 - the name PyTorch code uses
from .. import init
from ..parameter import Parameter
from ._params import optional_parameters, reset_kaiming
from .module import Module

__all__ = ["Identity", "Linear", "Bilinear"]


class Identity(Module):
    """Returns its input; its arguments are accepted and ignored (a placeholder layer)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()

    def forward(self, input: Tensor) -> Tensor:
        """``input`` itself."""
        return input


class Linear(Module):
    """``y = x @ weight.T + bias`` with weight (out_features, in_features).

    Weights start as ``kaiming_uniform_(a=sqrt(5))`` and the bias as U(-1/sqrt(in), 1/sqrt(in)).
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        self.weight = Parameter(empty(out_features, in_features, device=device, dtype=dtype))
        optional_parameters(self, {"bias": bias}, lambda _: empty(out_features, device=device, dtype=dtype))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Draw fresh initial values (PyTorch's defaults)."""
        reset_kaiming(self.weight, self.bias)

    def forward(self, input: Tensor) -> Tensor:
        """``input @ weight.T + bias``."""
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


class Bilinear(Module):
    """``y_k = x1 @ weight[k] @ x2 + bias[k]`` with weight (out, in1, in2); all U(-1/sqrt(in1), 1/sqrt(in1))."""

    def __init__(self, in1_features: int, in2_features: int, out_features: int, bias: bool = True,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        self.in1_features, self.in2_features, self.out_features = in1_features, in2_features, out_features
        self.weight = Parameter(empty(out_features, in1_features, in2_features, device=device, dtype=dtype))
        optional_parameters(self, {"bias": bias}, lambda _: empty(out_features, device=device, dtype=dtype))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Draw fresh initial values (PyTorch's defaults)."""
        bound = 1 / math.sqrt(self.weight.shape[1])
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1: Tensor, input2: Tensor) -> Tensor:
        """The bilinear form of ``input1`` and ``input2``, plus bias."""
        return F.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")
