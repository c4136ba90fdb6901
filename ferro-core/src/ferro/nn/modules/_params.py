"""Parameter helpers shared by the layers: optional parameters and PyTorch's default initialization."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from .. import init
from ..parameter import Parameter

__all__ = ["optional_parameters", "reset_kaiming"]


def optional_parameters(module: Any, present: dict[str, bool], make: Callable[[str], Any]) -> None:
    """For each name of ``present``: ``Parameter(make(name))`` where True, else a registered None (so that
    ``module.bias`` exists and ``state_dict`` leaves it out, as PyTorch's layers do)."""
    for name, there in present.items():
        if there:
            setattr(module, name, Parameter(make(name)))
        else:
            module.register_parameter(name, None)


def reset_kaiming(weight: Any, bias: Any) -> None:
    """PyTorch's default for Linear and Conv layers: ``kaiming_uniform_(a=sqrt(5))`` weights, bias
    U(-1/sqrt(fan_in), 1/sqrt(fan_in)) (zeros when there is no fan-in)."""
    init.kaiming_uniform_(weight, a=math.sqrt(5))
    if bias is not None:
        fan_in, _ = init._calculate_fan_in_and_fan_out(weight)
        bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
        init.uniform_(bias, -bound, bound)
