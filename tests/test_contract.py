"""The typed backend contract (``ferro.backends.contract``) against the real kernel tables.

Every installed backend's table (and ferro-cuda's, built without a GPU) may
hold only names of the contract; a backend claiming completeness has every
required primitive, and every optional group it declares whole. A table
with an unknown name or a non-callable kernel makes its plugin broken when
a device binds, never a failure of some later op.
"""

from __future__ import annotations

from typing import Any

import pytest

import ferro
from ferro._ops import REGISTRY
from ferro.backends import contract

from conftest import count_calls, run_json


def _tables() -> dict[str, tuple[Any, dict[str, Any]]]:
    out = {}
    for name in ferro.backends.available():
        b = ferro.backends.get(name)
        out[name] = (b, b.kernels(b.default_device_index()))
    return out


def _cuda_table() -> tuple[Any, dict[str, Any]]:
    if "cuda" not in ferro.backends.installed():
        pytest.skip("ferro-cuda is not installed")
    pytest.importorskip("cupy", reason="CuPy is not installed")
    from ferro_cuda._backend import CudaBackend
    b = CudaBackend()
    return b, b.kernels(0)  # builds launchers only: no GPU needed


def test_every_backend_table_keeps_to_the_contract_and_its_claims() -> None:
    tables = _tables()
    assert {"cpu", "opencl", "strict"} <= set(tables)
    for name, (b, table) in tables.items():
        assert contract.check_backend(table, b.complete, b.optional_groups) == [], name
        assert b.complete, f"{name} does not claim every required primitive"


def test_the_cuda_table_keeps_to_the_contract() -> None:
    b, table = _cuda_table()
    assert contract.check_backend(table, b.complete, b.optional_groups) == []
    assert set(contract.kernel_names("fused")) - set(table) <= {
        "conv2d_forward", "conv2d_backward", "conv_transpose2d_forward", "conv_transpose2d_backward",
        "max_pool2d_forward", "max_pool2d_backward", "fused_rmsprop",
        "fused_adagrad", "fused_adamax", "fused_nadam", "lstm_sequence_forward", "lstm_sequence_backward",
        "gru_sequence_forward", "gru_sequence_backward", "linear_forward", "linear_backward",
        "batch_norm_forward", "batch_norm_backward", "nll_loss_forward", "nll_loss_backward",
        "binary_cross_entropy_forward", "binary_cross_entropy_backward",
        "relu_backward", "tanh_backward", "sigmoid_backward",
        "accumulate_"}  # (their formulas in ops run on CUDA; .grad += g as a sum copied in)


def _any(*args: Any) -> None:
    """A kernel that takes whatever it is given."""


def test_a_missing_required_primitive_or_group_member_is_reported() -> None:
    table = {k: _any for k in contract.kernel_names("required") if k != "matmul"}
    assert contract.check_backend(table, True, ()) == ["required primitive kernel 'matmul' is missing"]
    assert contract.check_backend(table, False, ()) == []
    problems = contract.check_backend({**table, "matmul": _any, "linalg_inv": _any}, True, ("linalg",))
    assert "group 'linalg' is declared but kernel 'linalg_qr' is missing" in problems
    assert "linalg_inv" not in " ".join(problems)
    assert contract.check_backend({}, False, ("quantum",)) == [
        f"unknown optional group 'quantum' (known: {', '.join(contract.GROUPS)})"]


def test_kernel_signatures_are_checked_against_their_primitive() -> None:
    def matmul(x: Any, y: Any) -> Any:
        return x

    def sum_(x: Any, dims: Any) -> Any:  # no keepdim, no dtype
        return x
    got = contract.check_signatures({"matmul": matmul, "sum": sum_, "add": __import__("numpy").add})
    assert len(got) == 1 and got[0].startswith("kernel 'sum' (x, dims) cannot be called as sum(x: Array, dims: ")


def test_validate_table_names_each_problem() -> None:
    got = contract.validate_table({"add": len, "exp": 3, "frobnicate": len, "softmax": len})
    assert got == ["kernel 'exp' is int, not callable",
                   "unknown kernel 'frobnicate': not in ferro.backends.contract (nor the kernel of a registered op)",
                   "fused kernel 'softmax' comes without 'softmax_backward'"]
    assert contract.validate_table(["add"]) == ["a kernel table must be a dict of kernel name -> callable, got list"]


def test_the_contract_is_closed_and_covers_every_kernel_an_op_calls() -> None:
    names = contract.kernel_names()
    assert len(names) == len(set(names)), "a kernel name belongs to one primitive"
    required = [p for p in contract.PRIMITIVES if p.group == contract.REQUIRED]
    assert 30 <= len(required) <= 45
    for p in contract.PRIMITIVES:
        assert p.group == contract.REQUIRED or p.group in contract.GROUPS, p
        assert p.doc and p.returns and p.params, p
    for op in REGISTRY.values():  # every op's kernels are in the contract or claimed by the op itself
        for k in op.kernels:
            assert k in contract.KERNELS or k in contract.op_kernels(), (op.name, k)
    # the 24 kernels docs/plugins.md once left out
    for k in ("erf", "lgamma", "hypot", "logaddexp", "asin", "acos", "atan", "asinh", "acosh", "atanh", "real",
              "imag", "conj", "fft_c2c", "fft_r2c", "fft_c2r"):
        assert k in contract.KERNELS, k


def test_a_backend_whose_table_breaks_the_contract_is_a_broken_plugin() -> None:
    got = run_json("""
        import json, warnings, numpy as np, ferro
        from ferro.backends import ArrayAPIBackend, register_plugin, hookimpl, PLUGIN_API_VERSION
        warnings.simplefilter('ignore')

        class Odd(ArrayAPIBackend):
            name = 'odd'
            module_name = 'numpy'
            def extra_kernels(self, index):
                return {'frobnicate': len}

        class Plugin:
            @hookimpl
            def ferro_plugin_api_version(self):
                return PLUGIN_API_VERSION
            @hookimpl
            def ferro_register_backends(self):
                return [Odd()]

        register_plugin(Plugin(), 'oddplugin')
        try:
            ferro.ones(2, device='odd')
            err = None
        except Exception as e:
            err = f'{type(e).__name__}: {e}'
        print(json.dumps({'err': err, 'broken': ferro.backends.broken().get('oddplugin', ''),
                          'cpu': (ferro.ones(2) + 1).tolist()}))
    """)
    assert got["err"].startswith("BackendUnavailableError") and "frobnicate" in got["err"]
    assert "unknown kernel 'frobnicate'" in got["broken"]
    assert got["cpu"] == [2.0, 2.0]


def test_the_markdown_table_lists_every_kernel() -> None:
    text = contract.markdown()
    for k in contract.KERNELS:
        assert f"`{k}`" in text, k


# -- one kernel route, one resolver ------------------------------------------------------------------------------


def test_explain_names_the_kernel_the_decomposition_or_the_reason() -> None:
    explain = ferro.backends.explain
    r = explain("add", ferro.int64, "cpu")
    assert (r.route, r.kernels, r.provider, r.compute) == ("kernel", ("add",), "cpu", ferro.int64)
    r = explain("softmax", "float32", "strict")  # strict has no fused softmax: the decomposition, each part resolved
    assert r.route == "decomposition" and [p.op for p in r.parts] == ["amax", "isfinite", "where", "sub", "exp", "sum",
                                                                      "div"]  # in the order the decomposition calls
    assert all(p.route == "kernel" and p.provider == "strict" for p in r.parts)
    r = explain("cross_entropy", "float32", "cpu")  # a fused kernel pair: an ordinary kernel of the op
    assert (r.route, r.kernels) == ("kernel", ("cross_entropy_forward", "cross_entropy_backward"))
    r = explain("conv2d", "complex64", "cpu")  # the window kernels take real floats only
    assert r.route == "decomposition" and "do not take complex64" in r.notes[0]
    r = explain("gelu", "float32", "strict")
    assert r.route == "unsupported" and "uses erf" in r.reason and not r.supported
    assert "unsupported: its decomposition uses erf" in str(r)
    assert explain("exp", "bool", "cpu").compute == ferro.float32  # integers and bool compute in the default float
    with pytest.raises(KeyError, match="no op named 'frobnicate'"):
        explain("frobnicate", "float32", "cpu")
    with pytest.raises(ValueError, match="unknown dtype 'float99'"):
        explain("add", "float99", "cpu")


def test_fused_kernels_are_reported_and_run_by_the_one_route(monkeypatch: pytest.MonkeyPatch) -> None:
    cpu = ferro.backends.get("cpu")
    assert cpu.supports("cross_entropy", ferro.float32) and cpu.supports("adam_step", ferro.float64)
    assert "bfloat16" in cpu.capabilities()["adam_step"]  # fused_adam takes every floating dtype on cpu
    dev = ferro.device("cpu")
    assert dev._ops["conv2d"][0] == (dev._kernels["conv2d_forward"], dev._kernels["conv2d_backward"])
    assert dev._ops["adam_step"][0] is dev._kernels["fused_adam"]
    calls = count_calls(monkeypatch, dev, ["conv2d_forward", "conv2d_backward", "fused_sgd"])
    x = ferro.randn(2, 3, 6, 6, requires_grad=True)
    w = ferro.randn(4, 3, 3, 3, requires_grad=True)
    ferro.nn.functional.conv2d(x, w, padding=1).sum().backward()
    assert calls["conv2d_forward"] == 1 and calls["conv2d_backward"] == 1
    ferro.nn.functional.conv2d(x.to(ferro.complex64), w.to(ferro.complex64))  # explain: the decomposition
    assert calls["conv2d_forward"] == 1
    ferro.nn.functional.conv2d(x.to(ferro.float16), w.to(ferro.float16))  # computed in float32, rounded once
    assert calls["conv2d_forward"] == 2
    p = ferro.ones(3, requires_grad=True)
    p.grad = ferro.ones(3)
    ferro.optim.SGD([p], lr=0.5).step()
    assert calls["fused_sgd"] == 1 and p.tolist() == [0.5, 0.5, 0.5]


def test_explain_reports_plugin_overrides_the_fallback_and_refused_dtypes() -> None:
    got = run_json("""
        import json, warnings, ferro
        from ferro.backends import ArrayAPIBackend, register_plugin, hookimpl, PLUGIN_API_VERSION
        warnings.simplefilter('ignore')

        class Thin(ArrayAPIBackend):
            name = 'thin'
            module_name = 'numpy'
            def kernels(self, index):
                table = super().kernels(index)
                del table['linalg_inv']
                return table
            def unsupported(self, index):
                return {'sqrt': frozenset({ferro.float64})}

        class Plugin:
            @hookimpl
            def ferro_plugin_api_version(self):
                return PLUGIN_API_VERSION
            @hookimpl
            def ferro_register_backends(self):
                return [Thin()]
        register_plugin(Plugin(), 'thinplugin')
        out = {}
        for op, dt in (('exp', 'float32'), ('linalg.inv', 'float32'), ('sqrt', 'float64'), ('sqrt', 'float32')):
            r = ferro.backends.explain(op, dt, 'thin')
            out[f'{op}.{dt}'] = [r.route, r.provider, r.reason]
        out['supports'] = [ferro.backends.get('thin').supports('sqrt', ferro.float64),
                           ferro.backends.get('thin').supports('linalg.inv', ferro.float32)]
        print(json.dumps(out))
    """, env={"FERRO_TESTPLUGINS_OVERRIDE": "1", "FERRO_FALLBACK": "cpu"})
    assert got["exp.float32"][0] == "kernel"
    assert got["linalg.inv.float32"][0] == "fallback"  # FERRO_FALLBACK=cpu: it runs, on the CPU backend
    assert got["sqrt.float64"][0] == "fallback"
    assert got["sqrt.float32"][:2] == ["kernel", "thin"]
    assert got["supports"] == [False, False]  # supports() counts the device itself only
    cpu = run_json("""
        import json, warnings, ferro
        warnings.simplefilter('ignore')
        r = ferro.backends.explain('exp', 'float32', 'cpu')
        print(json.dumps([r.route, r.provider, (ferro.ones(2).exp()).tolist()]))
    """, env={"FERRO_TESTPLUGINS_OVERRIDE": "1"})
    assert cpu[:2] == ["override", "testgood"]


def test_ferro_ops_explains() -> None:
    import contextlib
    import io

    from ferro.cli import main
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(["ops", "--explain", "logsumexp", "--dtype", "float64", "--backend", "cpu,strict"]) == 0
    text = buf.getvalue()
    assert "logsumexp [float64] on cpu: decomposition into" in text
    assert "logsumexp [float64] on strict:0: decomposition into" in text


def test_the_docs_kernel_table_is_the_contract() -> None:
    """docs/plugins.md holds the table ``python -m ferro.backends.contract --write docs/plugins.md`` generates."""
    import pathlib
    page = (pathlib.Path(__file__).parent.parent / "docs" / "plugins.md").read_text(encoding="utf-8")
    assert contract.in_page(page) == contract.markdown(), (
        "docs/plugins.md is out of date: run python -m ferro.backends.contract --write docs/plugins.md")
