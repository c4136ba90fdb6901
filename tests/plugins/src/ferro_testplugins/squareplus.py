"""A plugin that adds an op, ``squareplus``, as one record plus one kernel: what "Adding an op" walks.

``squareplus(x, b=4) = (x + sqrt(x * x + b)) / 2`` (Barron, 2021) is a smooth ReLU that ferro does not
have. The record gives its dtype rule, its decomposition into ferro ops (so it runs on every backend),
its backward formula (so a kernel's result has a gradient too) and its test data (so the conformance
suite tests it on every backend). The ``cpu`` backend also gets a NumPy kernel that counts its calls
(:data:`calls`), to show that a kernel by the op's name is preferred wherever a backend has one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ferro.backends import PLUGIN_API_VERSION, Backend, OpDef, hookimpl

#: backend name -> how many times this plugin's kernel ran there.
calls: dict[str, int] = {"cpu": 0}


def squareplus(x: Any, b: float = 4.0) -> Any:
    """``(x + sqrt(x * x + b)) / 2``, a smooth ReLU (written in ferro ops: the decomposition)."""
    return (x + (x * x + b).sqrt()) / 2


def _grad(g: Any, x: Any, b: float = 4.0) -> Any:
    return g * (1 + x / (x * x + b).sqrt()) / 2


def _reference(x: Any, b: float = 4.0) -> Any:
    import numpy as np
    return (x + np.sqrt(x * x + b)) / 2


def _tests() -> Any:
    from ferro.testing._opinfo import FLOATS, OpInfo
    return OpInfo("squareplus", _reference, call=lambda F, x, **kw: F.ops.squareplus(x, **kw), dtypes=FLOATS,
                  kwargs=({}, {"b": 1.0}), gradgrad=True)


@hookimpl
def ferro_plugin_api_version() -> int:
    return PLUGIN_API_VERSION


@hookimpl
def ferro_register_ops() -> list[OpDef]:
    return [OpDef("squareplus", "unary", squareplus.__doc__.split("\n")[0], dtype_rule="real_floating",
                  saves=(0,), grads=(_grad,), decomposition=squareplus, uses=("mul", "add", "sqrt", "div"),
                  tests=_tests)]


@hookimpl
def ferro_register_kernels(backend: Backend) -> dict[str, Callable[..., Any]] | None:
    if backend.name != "cpu":
        return None
    import numpy as np

    def kernel(x: Any, b: float = 4.0) -> Any:
        calls["cpu"] += 1
        return (x + np.sqrt(x * x + x.dtype.type(b))) / x.dtype.type(2)

    return {"squareplus": kernel}
