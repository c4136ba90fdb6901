"""Reverse-mode automatic differentiation.

>>> import ferro
>>> x = ferro.tensor([1.0, 2.0], requires_grad=True)
>>> (g,) = ferro.autograd.grad((x ** 3).sum(), x, create_graph=True)
>>> g
tensor([ 3., 12.], grad_fn=<MulBackward0>)
"""

from __future__ import annotations

from .._core.grad_mode import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from .._core.lazy import attributes
from .._core.node import Node
from ._anomaly import detect_anomaly, set_detect_anomaly
from ._entry import backward, grad
from ._function import Function, FunctionCtx

__all__ = ["backward", "grad", "Function", "FunctionCtx", "gradcheck", "gradgradcheck", "no_grad",
           "detect_anomaly", "set_detect_anomaly",
           "enable_grad", "set_grad_enabled", "is_grad_enabled", "Node"]

__getattr__ = attributes(__name__, {"gradcheck": "._gradcheck", "gradgradcheck": "._gradcheck"})  # for tests
