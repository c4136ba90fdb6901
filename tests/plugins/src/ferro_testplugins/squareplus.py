"""A plugin that adds an op, ``squareplus``, as one record plus one kernel: what "Adding an op" walks.

``squareplus(x, b=4) = (x + sqrt(x * x + b)) / 2`` (Barron, 2021) is a smooth ReLU that ferro does not
have. The record gives its dtype rule, its decomposition into ferro ops (so it runs on every backend),
its backward formula (so a kernel's result has a gradient too) and its test data (so the conformance
suite tests it on every backend). The ``cpu`` backend also gets a NumPy kernel that counts its calls
(:data:`calls`), to show that a kernel by the op's name is preferred wherever a backend has one.

Two more ops give an elementwise expression (``OpDef.expr``) and no kernel at all: ``logcosh`` (with a
helper function of its own) and ``squared_difference`` (floating and integer C). ferro-opencl generates
their kernels from the records; elsewhere their decompositions run.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from typing import Any

from ferro.backends import PLUGIN_API_VERSION, Backend, Expr, Helper, OpDef, hookimpl

#: backend name -> how many times this plugin's kernel ran there.
calls: dict[str, int] = {"cpu": 0}


def squareplus(x: Any, b: float = 4.0) -> Any:
    """``(x + sqrt(x * x + b)) / 2``, a smooth ReLU (written in ferro ops: the decomposition)."""
    return (x + (x * x + b).sqrt()) / 2


def _grad(g: Any, x: Any, b: float = 4.0) -> Any:
    return g * (1 + x / (x * x + b).sqrt()) / 2


#: Set to "1", the test data's reference is off by one (on purpose): squareplus's forward test then fails, a
#: failure that stays for the tests of the conformance suite's expected-failure files.
WRONG_REFERENCE = "FERRO_TESTPLUGINS_SQUAREPLUS_WRONG"


def _reference(x: Any, b: float = 4.0) -> Any:
    import numpy as np
    return (x + np.sqrt(x * x + b)) / 2 + (os.environ.get(WRONG_REFERENCE) == "1")


def _tests() -> Any:
    from ferro.testing._opinfo import FLOATS, OpInfo
    return OpInfo("squareplus", _reference, call=lambda F, x, **kw: F.ops.squareplus(x, **kw), dtypes=FLOATS,
                  kwargs=({}, {"b": 1.0}), gradgrad=True)


def logcosh(x: Any) -> Any:
    """``log(cosh(x))``, without overflow for large ``|x|`` (written in ferro ops: the decomposition)."""
    return x.abs() + (x.abs() * -2).exp().log1p() - math.log(2)


def squared_difference(x: Any, y: Any) -> Any:
    """``(x - y) ** 2``."""
    return (x - y) * (x - y)


#: The same, in C for the device backends: a helper of the plugin's own, called by the expression.
LOGCOSH = Expr("tp_logcosh(a)", helpers=(Helper("tp_logcosh", """\
$FN $T tp_logcosh($T x) {
    const $T m = fabs(x); return m + log1p(exp(($T)-2 * m)) - ($T)0.69314718055994530942; }"""),))
SQUARED_DIFFERENCE = Expr("(a - b) * (a - b)", "(a - b) * (a - b)")


def _expr_tests(name: str) -> Any:
    import numpy as np

    from ferro.testing._opinfo import FLOATS, OpInfo
    if name == "logcosh":
        return OpInfo("logcosh", lambda x: np.logaddexp(x, -x) - np.log(2), call=lambda F, x: F.ops.logcosh(x),
                      dtypes=FLOATS, gradgrad=True)
    return OpInfo("squared_difference", lambda x, y: (x - y) * (x - y), arity=2,
                  call=lambda F, x, y: F.ops.squared_difference(x, y), gradgrad=True)


@hookimpl
def ferro_plugin_api_version() -> int:
    return PLUGIN_API_VERSION


@hookimpl
def ferro_register_ops() -> list[OpDef]:
    return [OpDef("squareplus", "unary", squareplus.__doc__.split("\n")[0], dtype_rule="real_floating",
                  saves=(0,), grads=(_grad,), decomposition=squareplus, uses=("mul", "add", "sqrt", "div"),
                  tests=_tests),
            OpDef("logcosh", "unary", logcosh.__doc__.split("\n")[0], dtype_rule="real_floating", saves=(0,),
                  grads=(lambda g, x: g * x.tanh(),), decomposition=logcosh, uses=("abs", "mul", "exp", "log1p", "sub"),
                  tests=lambda: _expr_tests("logcosh"), expr=LOGCOSH),
            OpDef("squared_difference", "binary", squared_difference.__doc__.split("\n")[0], dtype_rule="numeric",
                  saves=(0, 1), grads=(lambda g, x, y: g * (x - y) * 2, lambda g, x, y: g * (y - x) * 2),
                  decomposition=squared_difference, uses=("sub", "mul"),
                  tests=lambda: _expr_tests("squared_difference"), expr=SQUARED_DIFFERENCE)]


@hookimpl
def ferro_register_kernels(backend: Backend) -> dict[str, Callable[..., Any]] | None:
    if backend.name != "cpu":
        return None
    import numpy as np

    def kernel(x: Any, b: float = 4.0) -> Any:
        calls["cpu"] += 1
        return (x + np.sqrt(x * x + x.dtype.type(b))) / x.dtype.type(2)

    return {"squareplus": kernel}
