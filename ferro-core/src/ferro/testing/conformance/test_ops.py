"""Generated from the op database: every op x backend x dtype.

Forward results against the NumPy reference, gradients by finite differences
in float64, second derivatives where the database asks, and the backend's
``supports(op, dtype)`` against what really runs.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import ferro
from ferro._core.records import REGISTRY
from ferro.autograd import gradcheck, gradgradcheck
from ferro.testing import assert_close, default_tolerance
from ferro.testing._opinfo import NOT_SAMPLED, OP_DB, OpInfo, samples

ferro.backends.installed()  # loads the plugins: the ops they add (ferro_register_ops) carry their own test data
#: ferro's op database, and the test data of every op record that carries some (plugins' ops).
DB: list[OpInfo] = OP_DB + [op.tests for op in REGISTRY.values() if op.tests is not None]
PAIRS = [(info, d) for info in DB for d in info.dtypes]
LOOSE = {"float16": (2e-3, 2e-3), "bfloat16": (2e-2, 2e-2)}


def _dtype(name: str) -> ferro.DType:
    return getattr(ferro, "bool_" if name == "bool" else name)


def _to_ferro(arg: Any, dtype: ferro.DType, device: Any, requires_grad: bool = False) -> Any:
    if not isinstance(arg, np.ndarray):
        return arg
    return ferro.tensor(arg, device=device).to(dtype).requires_grad_(requires_grad) if requires_grad else \
        ferro.tensor(arg, device=device).to(dtype)


def _reference(info: OpInfo, args: tuple[Any, ...], kwargs: dict[str, Any], dtype: str) -> Any:
    wide = tuple(a.astype(np.float64) if info.widen and isinstance(a, np.ndarray) and a.dtype.kind == "f" else a
                 for a in args)
    with np.errstate(all="ignore"):
        return np.asarray(info.ref(*wide, **kwargs))


@pytest.mark.parametrize("info, dtype", PAIRS, ids=[f"{i.name}-{d}" for i, d in PAIRS])
def test_forward(device: Any, info: OpInfo, dtype: str) -> None:
    backend = device.backend
    dt = _dtype(dtype)
    if dt not in backend.dtypes(device.index):
        pytest.skip(f"{device} has no {dtype}")
    claimed = backend.supports(info.name, dt, device.index)
    rng = np.random.default_rng(0)
    for sample in samples(info, dtype, rng):
        args = tuple(_to_ferro(a, dt, device) for a in sample.args)
        if not claimed:
            with pytest.raises((ferro.errors.UnsupportedOperationError, ferro.errors.DTypeError)):
                info(ferro, *args, **sample.kwargs)
            return
        out = info(ferro, *args, **sample.kwargs)
        host = tuple(a.to(ferro.float32).numpy() if isinstance(a, ferro.Tensor) and a.dtype is ferro.bfloat16
                     else (a.numpy() if isinstance(a, ferro.Tensor) else a) for a in args)
        expected = _reference(info, host, sample.kwargs, dtype)
        op = REGISTRY[info.name]
        if op.kind in ("unary", "binary") and not isinstance(out, tuple):
            assert out.dtype is op.table[ferro.promote_types(dt, dt)][1], (info.name, sample.note)
        assert out.device == device
        rtol, atol = LOOSE.get(out.dtype.name, default_tolerance(out.dtype.name))
        if info.rtol is not None:
            rtol, atol = info.rtol, info.atol or atol
        got = out.to(ferro.float32) if out.dtype is ferro.bfloat16 else out
        try:
            assert_close(got, expected.astype(got.numpy().dtype), rtol=max(rtol, 1e-6), atol=max(atol, 1e-6),
                         check_dtype=False)
        except AssertionError as e:
            raise AssertionError(f"{info.name} on {device} at {dtype}, {sample.note}: {e}") from None


GRAD = [i for i in DB if i.grad]


def _grad_inputs(device: Any, info: OpInfo) -> tuple[list[Any], dict[str, Any]]:
    if ferro.float64 not in device.backend.dtypes(device.index):
        pytest.skip(f"{device} has no float64 for finite differences")
    if not device.backend.supports(info.name, ferro.float64, device.index):
        pytest.skip(f"backend '{device.backend.name}' does not claim {info.name} for float64")
    sample = next(samples(info, "float64", np.random.default_rng(1), small=True))
    return [_to_ferro(a, ferro.float64, device, requires_grad=True) for a in sample.args], sample.kwargs


@pytest.mark.parametrize("info", GRAD, ids=[i.name for i in GRAD])
def test_gradcheck(device: Any, info: OpInfo) -> None:
    inputs, kwargs = _grad_inputs(device, info)
    assert gradcheck(lambda *xs: info(ferro, *xs, **kwargs), inputs, eps=1e-6, atol=1e-5, rtol=1e-3)


GRADGRAD = [i for i in DB if i.gradgrad]


@pytest.mark.parametrize("info", GRADGRAD, ids=[i.name for i in GRADGRAD])
def test_gradgradcheck(device: Any, info: OpInfo) -> None:
    inputs, kwargs = _grad_inputs(device, info)
    assert gradgradcheck(lambda *xs: info(ferro, *xs, **kwargs), inputs, eps=1e-6, atol=1e-4, rtol=1e-3)


def test_every_registry_op_is_in_the_database() -> None:
    covered = {i.name for i in DB} | set(NOT_SAMPLED)
    missing = sorted(set(REGISTRY) - covered)
    assert not missing, f"ops without an OpInfo entry (add one, or a reason in NOT_SAMPLED): {missing}"
