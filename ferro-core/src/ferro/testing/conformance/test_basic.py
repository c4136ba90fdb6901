"""Conformance basics every backend must pass: creation, transfers, core ops, honest capabilities."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import ferro
from ferro.testing import assert_close

rng = np.random.default_rng(0)


def _arr(*shape: int, dtype: str = "float32") -> np.ndarray:
    return rng.standard_normal(shape).astype(dtype)


def require(device: Any, *ops: str, dtype: Any = ferro.float32) -> None:
    """Skip, naming the reason, when the backend does not claim one of ``ops`` at ``dtype``."""
    b = device.backend
    missing = [op for op in ops if not b.supports(op, dtype, device.index)]
    if missing:
        pytest.skip(f"backend '{b.name}' does not claim {', '.join(missing)} for {dtype}")


def require_kernels(device: Any, *kernels: str) -> None:
    """Skip when the backend lacks creation or transfer kernels by these names."""
    missing = [k for k in kernels if k not in device.backend.kernels(device.index)]
    if missing:
        pytest.skip(f"backend '{device.backend.name}' has no kernel {', '.join(missing)}")


def test_roundtrip(device: Any) -> None:
    a = _arr(3, 4)
    assert_close(ferro.tensor(a, device=device), a, rtol=0, atol=0)


@pytest.mark.parametrize("make, ref", [
    (lambda d: ferro.zeros(2, 3, device=d), lambda: np.zeros((2, 3), np.float32)),
    (lambda d: ferro.ones(4, device=d), lambda: np.ones(4, np.float32)),
    (lambda d: ferro.full((2, 2), 7, device=d), lambda: np.full((2, 2), 7, np.int64)),
    (lambda d: ferro.arange(0, 10, 3, device=d), lambda: np.arange(0, 10, 3)),
    (lambda d: ferro.eye(3, device=d), lambda: np.eye(3, dtype=np.float32)),
], ids=["zeros", "ones", "full", "arange", "eye"])
def test_creation(device: Any, make: Any, ref: Any) -> None:
    require_kernels(device, "full", "arange", "eye")
    t = make(device)
    assert t.device == device
    assert_close(t, ref())


@pytest.mark.parametrize("op, np_op", [
    (lambda a, b: a + b, np.add), (lambda a, b: a * b, np.multiply), (lambda a, b: a - b, np.subtract),
    (lambda a, b: a / b, np.divide),
], ids=["add", "mul", "sub", "div"])
def test_binary_broadcast(device: Any, op: Any, np_op: Any) -> None:
    require(device, np_op.__name__.replace("subtract", "sub").replace("multiply", "mul").replace("divide", "div"))
    a, b = _arr(3, 4), _arr(4) + 3
    assert_close(op(ferro.tensor(a, device=device), ferro.tensor(b, device=device)), np_op(a, b))


def test_unary_and_reductions(device: Any) -> None:
    require(device, "exp", "sum")
    a = _arr(5, 6)
    t = ferro.tensor(a, device=device)
    assert_close(t.exp(), np.exp(a))
    assert_close(t.sum(), np.asarray(a.sum(dtype=np.float32)), rtol=1e-5)
    assert_close(t.sum(1, keepdim=True), a.sum(1, keepdims=True), rtol=1e-5)


def test_matmul(device: Any) -> None:
    require(device, "matmul")
    a, b = _arr(8, 5), _arr(5, 3)
    assert_close(ferro.tensor(a, device=device) @ ferro.tensor(b, device=device), a @ b, rtol=1e-5)


@pytest.mark.parametrize("op", ["add", "exp", "sum", "matmul", "neg", "relu"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "bool"])
def test_supports_is_honest(backend: Any, device: Any, op: str, dtype: str) -> None:
    """``supports(op, dtype)`` says True exactly when the op runs; False means UnsupportedOperationError."""
    dt = getattr(ferro, dtype if dtype != "bool" else "bool_")
    if dt not in backend.dtypes(device.index):
        pytest.skip(f"{device} has no {dtype}")
    x = ferro.tensor(np.ones((2, 2), dtype=dtype), device=device)
    run = {"add": lambda: x + x, "exp": lambda: x.exp(), "sum": lambda: x.sum(), "matmul": lambda: x @ x,
           "neg": lambda: -x, "relu": lambda: x.relu()}[op]
    if backend.supports(op, dt, device.index):
        run()
    else:
        with pytest.raises((ferro.errors.UnsupportedOperationError, ferro.errors.DTypeError)):
            run()
