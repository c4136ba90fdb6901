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

from conftest import run_json


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
        "conv2d_forward", "conv2d_backward", "max_pool2d_forward", "max_pool2d_backward", "fused_rmsprop",
        "fused_adagrad", "fused_adamax", "fused_nadam"}


def test_a_missing_required_primitive_or_group_member_is_reported() -> None:
    table = {k: len for k in contract.kernel_names("required") if k != "matmul"}
    assert contract.check_backend(table, True, ()) == ["required primitive kernel 'matmul' is missing"]
    assert contract.check_backend(table, False, ()) == []
    problems = contract.check_backend({**table, "matmul": len, "linalg_inv": len}, True, ("linalg",))
    assert "group 'linalg' is declared but kernel 'linalg_qr' is missing" in problems
    assert "linalg_inv" not in " ".join(problems)
    assert contract.check_backend({}, False, ("quantum",)) == ["unknown optional group 'quantum' (known: special, "
                                                               "complex, linalg, fft, fused)"]


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
