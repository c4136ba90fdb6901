"""Errors that name what was wrong, capability queries that tell the truth, and the CPU fallback.

A real in-process backend (the generic Array API backend over NumPy) is
registered with some kernels removed and some dtypes refused, so that every
path of the dispatcher runs for real.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import ferro
from ferro._dtypes import all_dtypes
from ferro._ops import REGISTRY
from ferro.backends import PLUGIN_API_VERSION, ArrayAPIBackend, Availability, Backend, hookimpl
from ferro.errors import (
    BackendUnavailableError,
    DeviceMismatchError,
    DTypeError,
    ShapeError,
    UnsupportedOperationError,
)


class Partial(ArrayAPIBackend):
    """NumPy through the generic backend, without exp and with no float64 sqrt, and no float16 at all."""

    name = "partial"
    module_name = "numpy"

    def kernels(self, index: int) -> dict[str, Callable[..., Any]]:
        table = super().kernels(index)
        for name in ("exp", "reciprocal", "rsqrt"):
            table.pop(name, None)
        return table

    def unsupported(self, index: int) -> dict[str, frozenset[ferro.DType]]:
        return {"sqrt": frozenset({ferro.float64})}

    def dtypes(self, index: int) -> frozenset[ferro.DType]:
        return super().dtypes(index) - {ferro.float16}


class Absent(Backend):
    """A backend that cannot run here."""

    name = "absent"

    def availability(self) -> Availability:
        return Availability(False, "no widget attached to this machine")


class _Plugin:
    @hookimpl
    def ferro_plugin_api_version(self) -> int:
        return PLUGIN_API_VERSION

    @hookimpl
    def ferro_register_backends(self) -> list[Backend]:
        return [Partial(), Absent()]


@pytest.fixture(scope="module", autouse=True)
def _registered() -> None:
    if "partial" not in ferro.backends.installed():
        assert ferro.backends.register_plugin(_Plugin(), "test-errors-plugin")


def test_unsupported_operation_error_names_everything() -> None:
    x = ferro.ones(3, device="partial")
    with pytest.raises(UnsupportedOperationError) as info:
        x.exp()
    msg = str(info.value)
    for words in ("'exp'", "float32", "'partial'", "partial:0", "Installed backends that have it: cpu",
                  "FERRO_FALLBACK=cpu"):
        assert words in msg, words
    assert isinstance(info.value, NotImplementedError)
    assert x.tolist() == [1.0, 1.0, 1.0]


def test_refused_and_missing_dtypes() -> None:
    x64 = ferro.ones(2, dtype=ferro.float64, device="partial")
    with pytest.raises(UnsupportedOperationError, match=r"'sqrt'.*float64.*refuses"):
        x64.sqrt()
    assert ferro.ones(2, device="partial").sqrt().tolist() == [1.0, 1.0]
    with pytest.raises(UnsupportedOperationError, match=r"float16.*does not support"):
        ferro.ones(2, dtype=ferro.float16, device="partial")
    with pytest.raises(UnsupportedOperationError, match="float16"):
        ferro.ones(2, device="partial").half()


def test_decompositions_run_without_a_kernel() -> None:
    x = ferro.tensor([4.0, 16.0], device="partial", requires_grad=True)
    y = x.rsqrt() + x.reciprocal()
    assert y.device == ferro.device("partial") and y.tolist() == [0.75, 0.3125]
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), -0.5 * np.array([4.0, 16.0]) ** -1.5 - np.array([4.0, 16.0]) ** -2.0)


@pytest.mark.parametrize("backend_name", ["cpu", "partial"])
def test_supports_agrees_with_what_runs(backend_name: str) -> None:
    """For every registry op and dtype: supports() True runs; False raises UnsupportedOperationError / DTypeError."""
    backend = ferro.backends.get(backend_name)
    calls = _op_calls()
    for name, call in calls.items():
        for d in all_dtypes:
            claimed = backend.supports(name, d)
            try:
                x = ferro.ones(2, 2, dtype=d, device=backend_name) if d in backend.dtypes(0) else None
            except UnsupportedOperationError:
                x = None
            if x is None:
                assert not claimed, (name, d)
                continue
            if claimed:
                call(x)
            else:
                with pytest.raises((UnsupportedOperationError, DTypeError)):
                    call(x)


def _op_calls() -> dict[str, Callable[[ferro.Tensor], Any]]:
    calls: dict[str, Callable[[ferro.Tensor], Any]] = {}
    for name, op in REGISTRY.items():
        if op.kind == "unary":
            calls[name] = op.fn
        elif op.kind == "binary":
            calls[name] = lambda x, f=op.fn: f(x, x)
    calls.update({"sum": lambda x: x.sum(), "amax": lambda x: x.amax(1), "argmax": lambda x: x.argmax(),
                  "matmul": lambda x: x @ x, "mean": lambda x: x.mean()})
    return calls


def test_capabilities_lists_dtypes_per_op() -> None:
    caps = ferro.backends.get("partial").capabilities()
    assert "exp" not in caps or caps["exp"] == []
    assert "float64" not in caps["sqrt"] and "float32" in caps["sqrt"]
    assert "float16" not in caps["add"]
    assert set(ferro.backends.get("cpu").capabilities()["add"]) == {d.name for d in all_dtypes}


def test_backend_unavailable_error_gives_the_reason() -> None:
    assert "absent" in ferro.backends.installed() and "absent" not in ferro.backends.available()
    assert ferro.backends.unavailable()["absent"] == "no widget attached to this machine"
    for make in (lambda: ferro.ones(2, device="absent"), lambda: ferro.set_backend("absent"),
                 lambda: ferro.ones(2).to("absent")):
        with pytest.raises(BackendUnavailableError, match="'absent' is not available: no widget attached"):
            make()
    assert ferro.backends.current_backend() == "cpu"
    assert not ferro.backends.get("absent").supports("add", ferro.float32)


def test_device_mismatch_and_shapes() -> None:
    a, b = ferro.ones(2), ferro.ones(2, device="partial")
    for fn in (lambda: a + b, lambda: a @ b, lambda: ferro.cat([a, b]), lambda: ferro.where(a > 0, a, b)):
        with pytest.raises(DeviceMismatchError, match=r"cpu and partial:0|partial:0 and cpu"):
            fn()
    assert (ferro.tensor(2.0) * b).device == b.device, "a 0-d CPU tensor mixes with any device, as a scalar"
    with pytest.raises(ShapeError, match=r"\[2\], \[3\]"):
        ferro.ones(2, device="partial") + ferro.ones(3, device="partial")


def test_move_between_backends_keeps_values_and_gradients() -> None:
    x = ferro.tensor([1.0, 2.0], requires_grad=True)
    y = x.to("partial") * 3
    assert y.device == ferro.device("partial:0")
    y.to("cpu").sum().backward()
    assert x.grad.tolist() == [3.0, 3.0] and x.grad.device == x.device


def test_fallback_runs_on_cpu_and_warns_once(monkeypatch: pytest.MonkeyPatch) -> None:
    from ferro._ops import _dispatch
    monkeypatch.setenv("FERRO_FALLBACK", "cpu")
    monkeypatch.setattr(_dispatch, "_warned_fallback", set())
    x = ferro.tensor([0.0, 1.0], device="partial", requires_grad=True)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        y1 = x.exp()
        y2 = x.exp()
    msgs = [str(m.message) for m in w if m.category is RuntimeWarning]
    assert len(msgs) == 1 and "'exp'" in msgs[0] and "'partial'" in msgs[0]
    assert y1.device == x.device and y2.device == x.device
    np.testing.assert_allclose(y1.detach().numpy(), np.exp([0.0, 1.0]), rtol=1e-6)
    y1.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.exp([0.0, 1.0]), rtol=1e-6)


def test_without_fallback_nothing_changes_device(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FERRO_FALLBACK", raising=False)
    x = ferro.ones(2, device="partial")
    with pytest.raises(UnsupportedOperationError):
        x.exp()
