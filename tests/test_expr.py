"""Elementwise expressions in the op records (``OpDef.expr``) and the kernels generated from them.

Every elementwise op of ferro-core gives its C; the expressions and core's
helpers call only what OpenCL C and CUDA C share; the generator writes a
helper once per dialect, each before the helpers that call it, and only
those an expression needs. On OpenCL, the ops of the test plugin
``ferro_testplugins.squareplus`` that give an expression and no kernel
(``logcosh`` with a helper of its own, ``squared_difference`` with integer
C too) run from generated kernels, checked against PyTorch with gradients.
(The conformance suite runs every op's generated kernel; the CUDA sources
are compiled in ``test_cuda_kernels_compile.py``.)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

import ferro
from ferro._core import c_helpers
from ferro._core.expr import BUILTINS, CUDA, OPENCL, Expr, Helper, calls, helper_source, substitute, uses_flag
from ferro._core.records import REGISTRY
from ferro._ops import elementwise
from ferro.autograd import gradcheck, gradgradcheck
from ferro.backends import elementwise_ops

ferro.backends.installed()  # loads the plugins: their ops join the registry

HELPERS = [h for h in vars(c_helpers).values() if isinstance(h, Helper)]


def test_every_elementwise_op_of_core_has_an_expression() -> None:
    names = [row[0] for table in (elementwise.UNARY, elementwise.BINARY, elementwise.DECOMPOSITIONS)
             for row in table] + ["where"]
    assert len(names) == 71
    missing = [n for n in names if REGISTRY[n].expr is None]
    assert not missing
    assert set(names) <= set(elementwise_ops())


@pytest.mark.parametrize("name", sorted(elementwise_ops()))
def test_an_expression_calls_only_shared_builtins_and_its_own_helpers(name: str) -> None:
    expr = REGISTRY[name].expr
    own = {h.name for h in expr.helpers}
    texts = [t for t in (expr.floating, expr.integer, expr.boolean) if t is not None]
    assert texts, f"{name} has an expression for no dtype"
    for text in texts + [h.source for h in expr.helpers]:
        assert calls(text) <= BUILTINS | own, (name, calls(text) - BUILTINS - own)
        substitute(text, "double", OPENCL)  # only $T, $FN, $ERR: a stray $ would raise here


def test_the_expression_for_each_kind_of_dtype() -> None:
    e = REGISTRY["bitwise_not"].expr
    assert (e.text("f"), e.text("i"), e.text("u"), e.text("b"), e.text("c")) == (None, "~a", "~a", "a == 0", None)
    e = REGISTRY["abs"].expr
    assert (e.text("f"), e.text("b")) == ("fabs(a)", "($T)abs(a)")  # bool takes the integer C
    assert uses_flag(REGISTRY["remainder"].expr.integer) and not uses_flag(REGISTRY["remainder"].expr.floating)
    assert not uses_flag("ferro_error(a)")


def test_helpers_come_once_each_before_their_callers_and_only_when_called() -> None:
    inner = Helper("h_inner", "$FN $T h_inner($T x) { return x + ($T)1; }")
    outer = Helper("h_outer", "$FN $T h_outer($T x) { return h_inner(x) * h_inner(x); }")
    unused = Helper("h_unused", "$FN $T h_unused($T x) { return x; }")
    e = Expr("h_outer(a) + h_inner(a)", None, None, (outer, unused, inner))
    src = helper_source(e.floating, e.helpers, "float", OPENCL)
    assert src == ("inline float h_inner(float x) { return x + (float)1; }\n"
                   "inline float h_outer(float x) { return h_inner(x) * h_inner(x); }\n")
    cuda = helper_source(e.floating, e.helpers, "double", CUDA)
    assert cuda.startswith(CUDA.prelude) and "__device__ inline double h_inner(double x)" in cuda
    assert "h_unused" not in cuda
    assert helper_source("a + b", e.helpers, "float", OPENCL) == ""


@pytest.mark.parametrize("helper", HELPERS, ids=[h.name for h in HELPERS])
def test_a_helper_is_one_text_for_both_languages(helper: Helper) -> None:
    ocl = helper_source(f"{helper.name}(a)", [helper], "double", OPENCL)
    cuda = helper_source(f"{helper.name}(a)", [helper], "double", CUDA)[len(CUDA.prelude):]
    assert ocl.replace(OPENCL.flag, CUDA.flag).replace("inline ", "__device__ inline ") == cuda
    assert ocl.startswith(f"inline double {helper.name}(") and "$" not in ocl


def test_a_kernel_gets_the_helpers_of_its_dtype_kind_only(ocl: Any) -> None:
    from ferro_opencl._elementwise import expression, render
    e = REGISTRY["floor_divide"].expr
    text, helpers = expression(e, np.dtype(np.int32))
    src = render("k", text, [(np.dtype(np.int32), False)] * 2, np.dtype(np.int32), helpers)
    assert "inline int ferro_ifloordiv(int a, int b, volatile __global int * err)" in src
    assert "ferro_ffloordiv" not in src and "DEF_" not in src
    text, helpers = expression(e, np.dtype(np.float64))
    src = render("k", text, [(np.dtype(np.float64), False)] * 2, np.dtype(np.float64), helpers)
    assert src.count("inline double ferro_ffloordiv(") == 1 and "ferro_ifloordiv" not in src


def test_opencl_refuses_the_dtype_kinds_an_expression_lacks(ocl: Any) -> None:
    from ferro_opencl._table import refused
    got = refused(frozenset({ferro.float32, ferro.int32, ferro.bool}))
    assert got["bitwise_not"] == {ferro.float32}
    assert got["sqrt"] == {ferro.int32, ferro.bool}  # sqrt of an int computes in float: never asked for int C
    assert "add" not in got


# -- a plugin's op: an expression, no OpenCL code ---------------------------------------------------------


def test_the_plugin_has_no_opencl_code_and_opencl_binds_generated_kernels(ocl: Any) -> None:
    import ferro_opencl
    import ferro_testplugins.squareplus as plugin
    for path in Path(ferro_opencl.__file__).parent.rglob("*"):
        if path.is_file() and path.suffix in (".py", ".cl"):
            text = path.read_text()
            assert "logcosh" not in text and "squared_difference" not in text, path
    assert "opencl" not in Path(plugin.__file__).read_text().lower().replace("ferro-opencl", "")
    dev = ferro.device("opencl")
    ferro.zeros(1, device=dev)  # binds the device
    assert "logcosh" in dev._ops and "squared_difference" in dev._ops
    assert REGISTRY["logcosh"].plugin == REGISTRY["squared_difference"].plugin == "testsquareplus"


def test_a_plugin_expression_with_its_own_helper_on_opencl(ocl: Any) -> None:
    a = np.concatenate([np.linspace(-40, 40, 41), [0.0, 1e-3, -1e-3]])
    ref = torch.tensor(a, requires_grad=True)
    want = torch.log(torch.cosh(ref))
    want.backward(torch.ones_like(ref))
    for dtype, rtol in ((ferro.float32, 1e-5), (ferro.float64, 1e-12)):
        x = ferro.tensor(a, dtype=dtype, device="opencl", requires_grad=True)
        y = ferro.ops.logcosh(x)
        assert y.grad_fn.name == "logcosh" and y.dtype is dtype  # one node: the kernel ran, not the decomposition
        np.testing.assert_allclose(y.detach().numpy(), want.detach().numpy(), rtol=rtol, atol=rtol)
        y.sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), ref.grad.numpy(), rtol=rtol, atol=rtol)
    # strided and offset inputs take the general kernels
    x = ferro.tensor(a.reshape(4, 11), device="opencl")
    np.testing.assert_allclose(ferro.ops.logcosh(x.T[1:]).numpy(), np.logaddexp(a.reshape(4, 11).T[1:],
                               -a.reshape(4, 11).T[1:]) - np.log(2), rtol=1e-12)
    z = ferro.tensor([-1.5, 0.25, 2.0], dtype=ferro.float64, device="opencl", requires_grad=True)
    assert gradcheck(ferro.ops.logcosh, [z]) and gradgradcheck(ferro.ops.logcosh, [z])


def test_a_plugin_binary_expression_with_integer_c_on_opencl(ocl: Any) -> None:
    rng = np.random.default_rng(3)
    a, b = rng.integers(-50, 50, (3, 4)), rng.integers(-50, 50, (4,))
    for dt, tdt in ((ferro.int32, torch.int32), (ferro.int64, torch.int64)):
        got = ferro.ops.squared_difference(ferro.tensor(a, dtype=dt, device="opencl"),
                                           ferro.tensor(b, dtype=dt, device="opencl"))
        want = (torch.tensor(a, dtype=tdt) - torch.tensor(b, dtype=tdt)) ** 2
        assert got.dtype is dt
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    x = ferro.tensor(a.astype(np.float64) / 7, device="opencl", requires_grad=True)
    y = ferro.tensor(b.astype(np.float64) / 3, device="opencl", requires_grad=True)
    tx, ty = (torch.tensor(v.numpy(), requires_grad=True) for v in (x.detach(), y.detach()))
    ferro.ops.squared_difference(x, y).sum().backward()
    torch.sum((tx - ty) ** 2).backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(y.grad.numpy(), ty.grad.numpy(), rtol=1e-12)  # summed over the broadcast rows
    s = ferro.ops.squared_difference(ferro.tensor(a, device="opencl"), 3)  # a Python number on the right
    np.testing.assert_array_equal(s.numpy(), (a - 3) ** 2)
    with pytest.raises(ferro.errors.DTypeError, match="squared_difference"):  # its dtype rule: not bool
        ferro.ops.squared_difference(ferro.tensor([True], device="opencl"), ferro.tensor([False], device="opencl"))


def test_the_plugin_expression_ops_on_every_backend(device: ferro.device) -> None:
    # cpu runs the decompositions; opencl and cuda the kernels generated from the expressions
    a = np.linspace(-6, 6, 13)
    dtype = ferro.float64 if ferro.float64 in device._dtypes else ferro.float32
    x = ferro.tensor(a, dtype=dtype, device=device, requires_grad=True)
    y = ferro.ops.logcosh(x)
    ferro.ops.squared_difference(y, x).sum().backward()
    tx = torch.tensor(a, requires_grad=True)
    ty = torch.log(torch.cosh(tx))
    ((ty - tx) ** 2).sum().backward()
    np.testing.assert_allclose(y.detach().cpu().numpy(), ty.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(x.grad.cpu().numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-5)
    i = ferro.tensor([3, -4, 7], dtype=ferro.int32, device=device)
    np.testing.assert_array_equal(ferro.ops.squared_difference(i, i * 2).cpu().numpy(), [9, 16, 49])
