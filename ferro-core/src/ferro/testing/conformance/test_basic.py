"""Conformance basics for every backend: transfers, creation, core float32 ops, honest capabilities.

Run on one backend with ``pytest --pyargs ferro.testing.conformance --ferro-backend=NAME``.
Only ferro's public API is used. A backend may lack an op or a dtype, but it
must say so: a value test is skipped (with the reason) only when the backend
does not claim the op, and :func:`test_supports_agrees_with_what_runs` checks
that every claim, true or false, matches what really happens.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import ferro
from ferro.testing import assert_close

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64", "complex64",
          "complex128"]


def _dtype(name: str) -> ferro.DType:
    return getattr(ferro, "bool_" if name == "bool" else name)


def _sample(shape: tuple[int, ...], dtype: str = "float32", seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if dtype == "bfloat16":  # NumPy holds bfloat16 through ml_dtypes, which ferro-core depends on
        import ml_dtypes
        return rng.standard_normal(shape).astype(ml_dtypes.bfloat16)
    if np.dtype(dtype).kind in "iu":
        return rng.integers(0, 5, shape).astype(dtype)  # small: no overflow in add, mul, matmul
    if np.dtype(dtype).kind == "c":
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)


def _require_dtype(backend: ferro.backends.Backend, device: ferro.device, dtype: str) -> None:
    if _dtype(dtype) not in backend.dtypes(device.index):
        pytest.skip(f"{device} has no {dtype}")


def _require(backend: ferro.backends.Backend, device: ferro.device, *ops: str, dtype: str = "float32") -> None:
    """Skip, naming the reason, when the backend does not claim one of ``ops`` at ``dtype``."""
    _require_dtype(backend, device, dtype)
    missing = [op for op in ops if not backend.supports(op, _dtype(dtype), device.index)]
    if missing:
        pytest.skip(f"backend '{backend.name}' does not claim {', '.join(missing)} for {dtype} on {device}")


# -- transfers -----------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(3, 4), (), (0,), (2, 1, 3)], ids=["2d", "0d", "empty", "3d"])
def test_numpy_round_trip_float32(device: ferro.device, shape: tuple[int, ...]) -> None:
    a = _sample(shape)
    back = ferro.tensor(a, device=device).numpy()
    assert isinstance(back, np.ndarray)
    assert back.dtype == a.dtype and back.shape == a.shape
    np.testing.assert_array_equal(back, a)


@pytest.mark.parametrize("dtype", DTYPES)
def test_numpy_round_trip_keeps_dtype_and_values(backend: ferro.backends.Backend, device: ferro.device,
                                                 dtype: str) -> None:
    _require_dtype(backend, device, dtype)
    a = _sample((5, 3), dtype)
    t = ferro.tensor(a, device=device)
    assert t.device == device and t.dtype is _dtype(dtype) and tuple(t.shape) == a.shape
    back = t.numpy()
    assert back.dtype == a.dtype
    np.testing.assert_array_equal(back, a)


def test_tensor_owns_its_memory(device: ferro.device) -> None:
    a = _sample((4,))
    t = ferro.tensor(a, device=device)
    a[0] = 123.0
    assert t.numpy()[0] != 123.0, "ferro.tensor copies its data"


# -- creation ------------------------------------------------------------------------------------

CREATION: list[tuple[str, Callable[[Any], ferro.Tensor], Callable[[], np.ndarray]]] = [
    ("zeros", lambda d: ferro.zeros(2, 3, device=d), lambda: np.zeros((2, 3), np.float32)),
    ("ones", lambda d: ferro.ones(4, device=d), lambda: np.ones(4, np.float32)),
    ("ones_int32", lambda d: ferro.ones((2, 2), dtype=ferro.int32, device=d), lambda: np.ones((2, 2), np.int32)),
    ("full_int", lambda d: ferro.full((2, 2), 7, device=d), lambda: np.full((2, 2), 7, np.int64)),
    ("full_float", lambda d: ferro.full((3,), 2.5, device=d), lambda: np.full(3, 2.5, np.float32)),
    ("full_bool", lambda d: ferro.full((2,), True, device=d), lambda: np.full(2, True)),
    ("arange", lambda d: ferro.arange(5, device=d), lambda: np.arange(5)),
    ("arange_step", lambda d: ferro.arange(0, 10, 3, device=d), lambda: np.arange(0, 10, 3)),
    ("arange_float", lambda d: ferro.arange(0.0, 1.0, 0.25, device=d), lambda: np.arange(0, 1, 0.25, np.float32)),
]


@pytest.mark.parametrize("make, ref", [c[1:] for c in CREATION], ids=[c[0] for c in CREATION])
def test_creation(device: ferro.device, make: Callable[[Any], ferro.Tensor], ref: Callable[[], np.ndarray]) -> None:
    expected = ref()
    try:
        t = make(device)
    except ferro.errors.UnsupportedOperationError as e:  # honest: the backend says it cannot
        pytest.skip(f"backend '{device.type}' refuses it: {e}")
    assert t.device == device
    assert_close(t, expected)


# -- core float32 ops against NumPy ----------------------------------------------------------------


@pytest.mark.parametrize("op, fn, ref", [
    ("add", lambda a, b: a + b, np.add),
    ("mul", lambda a, b: a * b, np.multiply),
], ids=["add", "mul"])
def test_binary_float32(backend: ferro.backends.Backend, device: ferro.device, op: str,
                        fn: Callable[[Any, Any], Any], ref: Callable[[Any, Any], Any]) -> None:
    _require(backend, device, op)
    a, b, row = _sample((3, 4)), _sample((3, 4), seed=1), _sample((4,), seed=2)
    ta, tb, trow = (ferro.tensor(x, device=device) for x in (a, b, row))
    assert_close(fn(ta, tb), ref(a, b))
    assert_close(fn(ta, trow), ref(a, row), msg="broadcast (3, 4) with (4,)")
    assert_close(fn(ta, 1.5), ref(a, np.float32(1.5)), msg="with a Python scalar")
    assert fn(ta, tb).device == device


def test_exp_float32(backend: ferro.backends.Backend, device: ferro.device) -> None:
    _require(backend, device, "exp")
    a = _sample((5, 6))
    t = ferro.tensor(a, device=device)
    assert_close(ferro.exp(t), np.exp(a))
    assert_close(t.exp(), np.exp(a))


def test_sum_float32(backend: ferro.backends.Backend, device: ferro.device) -> None:
    _require(backend, device, "sum")
    a = _sample((5, 6))
    t = ferro.tensor(a, device=device)
    # float32 accumulation order differs between libraries: a few ulps of the total
    assert_close(t.sum(), np.asarray(a.sum(dtype=np.float32)), rtol=1e-5, atol=1e-5)
    assert_close(t.sum(0), a.sum(0), rtol=1e-5, atol=1e-5)
    assert_close(t.sum(1, keepdim=True), a.sum(1, keepdims=True), rtol=1e-5, atol=1e-5)
    assert_close(ferro.sum(t, dim=(0, 1)), np.asarray(a.sum(dtype=np.float32)), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shapes", [((8, 5), (5, 3)), ((5,), (5, 3)), ((2, 3, 4), (4, 5))],
                         ids=["2d", "vector-matrix", "batched"])
def test_matmul_float32(backend: ferro.backends.Backend, device: ferro.device,
                        shapes: tuple[tuple[int, ...], tuple[int, ...]]) -> None:
    _require(backend, device, "matmul")
    a, b = _sample(shapes[0]), _sample(shapes[1], seed=1)
    ta, tb = ferro.tensor(a, device=device), ferro.tensor(b, device=device)
    assert_close(ta @ tb, a @ b, rtol=1e-5, atol=1e-5)
    assert_close(ferro.matmul(ta, tb), a @ b, rtol=1e-5, atol=1e-5)


# -- capabilities are honest -------------------------------------------------------------------------

RUN: dict[str, Callable[[Any], Any]] = {
    "add": lambda x: x + x, "mul": lambda x: x * x, "exp": lambda x: ferro.exp(x), "sum": lambda x: x.sum(),
    "matmul": lambda x: x @ x, "neg": lambda x: -x, "sqrt": lambda x: x.sqrt(),
}
REF: dict[str, Callable[[Any], Any]] = {
    "add": lambda x: x + x, "mul": lambda x: x * x, "exp": np.exp, "sum": np.sum, "matmul": lambda x: x @ x,
    "neg": np.negative, "sqrt": np.sqrt,
}
# the pairs ferro's op definitions accept; a backend may still lack any of them
DEFINED = [(op, dt) for op in RUN for dt in DTYPES
           if not (dt == "bool" and op in ("matmul", "neg"))]


@pytest.mark.parametrize("op, dtype", DEFINED, ids=[f"{op}-{dt}" for op, dt in DEFINED])
def test_supports_agrees_with_what_runs(backend: ferro.backends.Backend, device: ferro.device,
                                        op: str, dtype: str) -> None:
    """``supports(op, dtype)`` is True exactly when the op runs; False means UnsupportedOperationError."""
    _require_dtype(backend, device, dtype)
    a = _sample((3, 3), dtype)
    if dtype not in ("bool", "complex64", "complex128"):
        a = np.abs(a)  # sqrt's domain
    x = ferro.tensor(a, device=device)
    if backend.supports(op, _dtype(dtype), device.index):
        out = RUN[op](x)
        assert out.device == device
        with np.errstate(all="ignore"):
            wide = a.astype(np.complex128 if a.dtype.kind == "c" else np.float64) \
                if dtype in ("float16", "bfloat16") or op in ("exp", "sqrt") else a
            expected = np.asarray(REF[op](wide))
        # only values here: result dtypes follow ferro's promotion rules, checked elsewhere
        rtol, atol = {"float16": (1e-2, 1e-2), "bfloat16": (2e-2, 2e-2)}.get(dtype, (1e-5, 1e-5))
        assert_close(out, expected, rtol=rtol, atol=atol, check_dtype=False)
    else:
        with pytest.raises(ferro.errors.UnsupportedOperationError) as info:
            RUN[op](x)
        assert op in str(info.value) and backend.name in str(info.value)


def test_unsupported_dtype_pairs_are_refused_clearly(backend: ferro.backends.Backend, device: ferro.device) -> None:
    """A dtype the device lacks is refused at creation with UnsupportedOperationError, never silently converted."""
    tried = ("float64", "float16", "bfloat16", "complex64")
    lacking = [d for d in tried if _dtype(d) not in backend.dtypes(device.index)]
    if not lacking:
        pytest.skip(f"{device} supports every dtype this test tries")
    for name in lacking:
        with pytest.raises(ferro.errors.UnsupportedOperationError, match=name):
            ferro.zeros(2, dtype=_dtype(name), device=device)
