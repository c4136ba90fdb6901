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
from ferro._ops import REGISTRY
from ferro.autograd import gradcheck, gradgradcheck
from ferro.testing import assert_close, default_tolerance
from ferro.testing._opinfo import ALL_DTYPES, NOT_SAMPLED, OP_DB, OpInfo, samples

PAIRS = [(info, d) for info in OP_DB for d in ALL_DTYPES]
#: Tolerances of the 16-bit floats: their own rounding plus a few roundings inside composites.
LOOSE = {"float16": (2e-3, 2e-3), "bfloat16": (2e-2, 2e-2)}


def _dtype(name: str) -> ferro.DType:
    return getattr(ferro, "bool_" if name == "bool" else name)


def _np_name(dtype: ferro.DType) -> str:
    """The NumPy dtype that holds ``dtype``'s values (bfloat16 is read and computed in float32)."""
    return "float32" if dtype is ferro.bfloat16 else ("bool" if dtype is ferro.bool_ else dtype.name)


def _to_ferro(arg: Any, dtype: ferro.DType, device: Any, requires_grad: bool = False) -> Any:
    if not isinstance(arg, np.ndarray):
        return arg
    t = ferro.tensor(arg, device=device).to(dtype)
    return t.requires_grad_(requires_grad) if requires_grad else t


def _host(arg: Any) -> Any:
    """A ferro tensor's values as NumPy (bfloat16 read as float32), anything else as it is."""
    if not isinstance(arg, ferro.Tensor):
        return arg
    return (arg.to(ferro.float32) if arg.dtype is ferro.bfloat16 else arg).detach().numpy()


def _reference(info: OpInfo, args: tuple[Any, ...], kwargs: dict[str, Any], compute: ferro.DType | None) -> Any:
    """The NumPy reference on the inputs converted as the op's dtype rule does, widened to 64 bits."""
    def prep(a: Any) -> Any:
        if not isinstance(a, np.ndarray):
            return a
        if compute is not None and a.dtype.kind != compute.kind:  # e.g. integers computed in float32
            a = a.astype(_np_name(compute))
        if info.widen and a.dtype.kind in "fc":
            return a.astype(np.complex128 if a.dtype.kind == "c" else np.float64)
        return a
    with np.errstate(all="ignore"):
        return np.asarray(info.ref(*(prep(a) for a in args), **kwargs))


def _tolerance(info: OpInfo, *dtypes: ferro.DType) -> tuple[float, float]:
    """The loosest tolerance of the input and output dtypes (a float16 input rounds before a float32 result)."""
    rtol, atol = map(max, zip(*(LOOSE.get(d.name, default_tolerance(d.name)) for d in dtypes)))
    if info.rtol is not None:
        rtol, atol = max(rtol, info.rtol), max(atol, info.atol or atol)
    return max(rtol, 1e-6), max(atol, 1e-6)


@pytest.mark.parametrize("info, dtype", PAIRS, ids=[f"{i.name}-{d}" for i, d in PAIRS])
def test_forward(device: Any, info: OpInfo, dtype: str) -> None:
    """Values against NumPy where the op and the backend claim ``dtype``; a clear refusal where one does not."""
    backend = device.backend
    dt = _dtype(dtype)
    if dt not in backend.dtypes(device.index):
        pytest.skip(f"{device} has no {dtype}")
    op = REGISTRY[info.name]
    defined = dt in op.table
    claimed = backend.supports(info.name, dt, device.index)
    rng = np.random.default_rng(0)
    for sample in samples(info, _np_name(dt) if defined else "float32", rng):
        args = tuple(_to_ferro(a, dt, device) for a in sample.args)
        if not defined:  # ferro's dtype rule refuses it, on every backend, naming the op
            with pytest.raises(ferro.errors.DTypeError):
                info(ferro, *args, **sample.kwargs)
            return
        if not claimed:
            with pytest.raises((ferro.errors.UnsupportedOperationError, ferro.errors.DTypeError)):
                info(ferro, *args, **sample.kwargs)
            return
        out = info(ferro, *args, **sample.kwargs)
        expected = _reference(info, tuple(_host(a) for a in args), sample.kwargs, op.table[dt][0])
        if op.kind in ("unary", "binary") and not isinstance(out, tuple):
            assert out.dtype is op.table[dt][1], (info.name, sample.note)
        assert out.device == device
        rtol, atol = _tolerance(info, dt, out.dtype)
        got = _host(out)
        try:
            with np.errstate(all="ignore"):
                want = expected.astype(got.dtype)
            assert_close(got, want, rtol=rtol, atol=atol, check_dtype=False)
        except AssertionError as e:
            raise AssertionError(f"{info.name} on {device} at {dtype}, {sample.note}: {e}") from None


GRAD = [i for i in OP_DB if i.grad]


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


GRADGRAD = [i for i in OP_DB if i.gradgrad]


@pytest.mark.parametrize("info", GRADGRAD, ids=[i.name for i in GRADGRAD])
def test_gradgradcheck(device: Any, info: OpInfo) -> None:
    inputs, kwargs = _grad_inputs(device, info)
    assert gradgradcheck(lambda *xs: info(ferro, *xs, **kwargs), inputs, eps=1e-6, atol=1e-4, rtol=1e-3)


def test_every_registry_op_is_in_the_database() -> None:
    covered = {i.name for i in OP_DB} | set(NOT_SAMPLED)
    missing = sorted(set(REGISTRY) - covered)
    assert not missing, f"ops without an OpInfo entry (add one, or a reason in NOT_SAMPLED): {missing}"
