"""A plugin adds an op as one record (``ferro_register_ops``) and gets it on every installed backend.

The plugin is ``ferro_testplugins.squareplus`` (installed with ``tests/plugins``): a record with a
decomposition, a backward formula and test data, plus a NumPy kernel for ``cpu`` only. Everywhere
else the decomposition runs. Values are checked against NumPy, gradients by finite differences.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import ferro
from ferro._core.records import REGISTRY
from ferro.autograd import gradcheck, gradgradcheck
from ferro_testplugins import squareplus as plugin

from conftest import run_python


def _ref(x: Any, b: float = 4.0) -> Any:
    return (x + np.sqrt(x * x + b)) / 2


def test_the_op_is_registered_with_its_plugin() -> None:
    ferro.backends.installed()  # loads the plugins
    assert REGISTRY["squareplus"].plugin == "testsquareplus"
    assert "squareplus" in dir(ferro.ops)
    assert ferro.ops.squareplus.__doc__.startswith("``(x + sqrt(x * x + b)) / 2``")


@pytest.mark.parametrize("b", [4.0, 0.5])
def test_values_and_gradients_on_every_backend(device: ferro.device, b: float) -> None:
    a = np.linspace(-4, 4, 17)
    dtype = ferro.float64 if ferro.float64 in device._dtypes else ferro.float32
    x = ferro.tensor(a, dtype=dtype, device=device, requires_grad=True)
    y = ferro.ops.squareplus(x, b=b)
    assert y.device == device and y.dtype is dtype
    np.testing.assert_allclose(y.detach().cpu().numpy(), _ref(a, b), rtol=1e-6 if dtype is ferro.float64 else 1e-5)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), (1 + a / np.sqrt(a * a + b)) / 2, rtol=1e-5)
    if dtype is ferro.float64:
        z = ferro.tensor(np.array([-1.5, 0.25, 2.0]), dtype=dtype, device=device, requires_grad=True)
        assert gradcheck(lambda t: ferro.ops.squareplus(t, b=b), [z])
        assert gradgradcheck(lambda t: ferro.ops.squareplus(t, b=b), [z])


def test_cpu_runs_the_plugins_kernel_and_the_record_gives_its_gradient() -> None:
    before = plugin.calls["cpu"]
    x = ferro.tensor([-1.0, 2.0], requires_grad=True)
    y = ferro.ops.squareplus(x)
    assert plugin.calls["cpu"] == before + 1
    assert y.grad_fn is not None and y.grad_fn.name == "squareplus"  # one node: the record's, not the decomposition's
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), (1 + np.array([-1.0, 2.0]) / np.sqrt([5.0, 8.0])) / 2, rtol=1e-6)


def test_the_dtype_rule_of_the_record_is_enforced() -> None:
    with pytest.raises(ferro.errors.DTypeError, match="squareplus"):
        ferro.ops.squareplus(ferro.tensor([1, 2]))


def test_capability_queries_report_the_op() -> None:
    assert ferro.backends.get("cpu").supports("squareplus", ferro.float32)  # its own kernel
    assert ferro.backends.get("toy").supports("squareplus", ferro.float32)  # its decomposition
    assert not ferro.backends.get("cpu").supports("squareplus", ferro.int32)


_PLUGIN = (
    "import ferro, warnings\n"
    "from ferro.backends import OpDef, _registry\n"
    "class P:\n"
    "    @staticmethod\n"
    "    @ferro.backends.hookimpl\n"
    "    def ferro_plugin_api_version():\n"
    "        return ferro.backends.PLUGIN_API_VERSION\n"
    "    @staticmethod\n"
    "    @ferro.backends.hookimpl\n"
    "    def ferro_register_ops():\n"
    "        return {ops}\n"
    "with warnings.catch_warnings():\n"
    "    warnings.simplefilter('ignore')\n"
    "    _registry.register_plugin(P(), 'testops')\n"
    "print(ferro.backends.broken()['testops'])\n"
    "print('newop_ok' in ferro._core.records.REGISTRY, ferro._core.records.REGISTRY['exp'].plugin == '')\n"
    "print((ferro.exp(ferro.zeros(2)) + 1).tolist())\n")


@pytest.mark.parametrize(("ops", "error"), [
    ("[OpDef('newop_ok', 'unary', decomposition=lambda x: x), OpDef('exp', 'unary')]",
     "op 'exp' is already registered by ferro"),
    ("[OpDef('newop_ok', 'unary', decomposition=lambda x: x), 'not a record']", "not a ferro.backends.OpDef"),
    ("1 / 0", "ferro_register_ops() raised ZeroDivisionError"),
])
def test_a_bad_hook_makes_the_plugin_broken_adds_none_of_its_ops_and_leaves_ferro_working(ops: str, error: str) -> None:
    out = run_python(_PLUGIN.replace("{ops}", ops)).stdout.splitlines()
    assert error in out[0]
    assert out[1] == "False True"  # none of its ops, and ferro's own op untouched
    assert out[2] == "[2.0, 2.0]"
