"""Generated from the op database: every op x backend x dtype.

Forward results against the NumPy reference, gradients by finite differences
in float64, second derivatives where the database asks, and the backend's
``supports(op, dtype)`` against what really runs.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

import ferro
from ferro._core.records import REGISTRY
from ferro.autograd import gradcheck, gradgradcheck
from ferro.testing import assert_close, default_tolerance
from ferro.testing._error_inputs import ErrorInput, error_inputs
from ferro.testing._opinfo import ALL_DTYPES, OP_DB, OpInfo, samples

ferro.backends.installed()  # loads the plugins: the ops they add (ferro_register_ops) carry their own test data
#: ferro's op database, and the test data of every op record that carries some (plugins' ops).
DB: list[OpInfo] = OP_DB + [op.tests if isinstance(op.tests, OpInfo) else op.tests()
                             for op in REGISTRY.values() if op.tests is not None]
PAIRS = [(info, d) for info in DB for d in ALL_DTYPES]
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
    missing = sorted(set(REGISTRY) - {i.name for i in DB})
    assert not missing, f"ops without an OpInfo entry in ferro/testing/_opinfo.py: {missing}"


# -- error inputs, and inputs left as they were -----------------------------------------------------------------

ERR_OPS = list({i.name: i for i in reversed(DB)}.values())[::-1]  # one entry per op


def _raising(device: Any, info: OpInfo, e: ErrorInput) -> tuple[Any, ...]:
    """The exception classes ``e`` may raise here: its own, or a refusal where the backend does not claim the op."""
    first = next((a for a in e.args if isinstance(a, np.ndarray)), None)
    dt = _dtype(first.dtype.name) if first is not None else ferro.float32
    own = e.exc if isinstance(e.exc, tuple) else (e.exc,)
    if not device.backend.supports(info.name, dt, device.index):
        return (*own, ferro.errors.UnsupportedOperationError)
    return own


def _held(device: Any, inputs: Any) -> Any:
    """The error inputs whose arrays the device can hold (a device without complex64 skips complex inputs)."""
    have = {d.name for d in device.backend.dtypes(device.index)}
    for e in inputs:
        if all(a.dtype.name in have for a in e.args if isinstance(a, np.ndarray)):
            yield e


def _call_and_sync(device: Any, e: ErrorInput, tensors: tuple[Any, ...]) -> None:
    try:
        e.call(ferro, *tensors)
    finally:  # a backend may report the error at the next synchronization
        device.backend.synchronize(device.index)


@pytest.mark.parametrize("info", ERR_OPS, ids=[i.name for i in ERR_OPS])
def test_errors(device: Any, info: OpInfo) -> None:
    """Every error input raises its exception, with a message naming the op and the argument."""
    ran = 0
    for e in _held(device, error_inputs(info)):
        tensors = tuple(ferro.tensor(a, device=device) if isinstance(a, np.ndarray) else a for a in e.args)
        with pytest.raises(_raising(device, info, e)) as caught:
            _call_and_sync(device, e, tensors)
        msg = str(caught.value)
        # a backend that does not claim the op refuses it first: then the refusal must name the op
        match = re.escape(info.name) if isinstance(caught.value, ferro.errors.UnsupportedOperationError) else e.match
        assert re.search(match, msg), (f"{info.name} ({e.note}): message does not match {match!r}: "
                                       f"{type(caught.value).__name__}: {msg}")
        ran += 1
    if not ran:
        pytest.skip(f"{device} cannot hold the inputs of any error input of {info.name}")


@pytest.mark.parametrize("info", ERR_OPS, ids=[i.name for i in ERR_OPS])
def test_inputs_unchanged(device: Any, info: OpInfo) -> None:
    """A call that fails leaves its tensor inputs as they were, also when the error is reported late."""
    checked = 0
    for e in _held(device, error_inputs(info)):
        tensors = tuple(ferro.tensor(a, device=device) if isinstance(a, np.ndarray) else a for a in e.args)
        before = [t.numpy().copy() for t in tensors if isinstance(t, ferro.Tensor)]
        try:
            _call_and_sync(device, e, tensors)
        except Exception:  # which exception is test_errors' business; here only the inputs count
            pass
        device.backend.synchronize(device.index)
        after = [t.numpy() for t in tensors if isinstance(t, ferro.Tensor)]
        for i, (b, a) in enumerate(zip(before, after)):
            np.testing.assert_array_equal(a, b, err_msg=f"{info.name}, {e.note}: input {i} was changed")
        checked += len(before)
    if not checked:
        pytest.skip(f"the error inputs of {info.name} have no tensor input (only 'not a tensor')")


# -- NaN propagation, as PyTorch ----------------------------------------------------------------------------------

#: Ops whose results must carry NaN as PyTorch does (max/min/median/cummax propagate it, sort puts it last,
#: topk and argmax treat it as the largest value).
NAN_OPS = ("amax", "amin", "sum", "mean", "prod", "var", "std", "norm", "logsumexp", "argmax", "argmin", "sort",
           "argsort", "topk", "kthvalue", "median", "cummax", "cummin", "cumsum", "cumprod", "logcumsumexp",
           "maximum", "minimum", "clamp", "clamp_min", "clamp_max", "softmax", "log_softmax", "max_pool2d")
NAN_INFOS = [i for i in ERR_OPS if i.name in NAN_OPS]


def _with_nans(a: Any) -> Any:
    """``a`` with NaN at flat positions 1 and 5 (rows 0 and 1 of a 3x4 sample; a third row keeps none)."""
    if not isinstance(a, np.ndarray) or a.dtype.kind != "f" or a.size < 6:
        return a
    out = a.copy()
    out.reshape(-1)[[1, 5]] = np.nan
    return out


@pytest.mark.parametrize("info", NAN_INFOS, ids=[i.name for i in NAN_INFOS])
def test_nan(device: Any, info: OpInfo) -> None:
    if not device.backend.supports(info.name, ferro.float32, device.index):
        pytest.skip(f"backend '{device.backend.name}' does not claim {info.name} for float32")
    sample = next(s for s in samples(info, "float32", np.random.default_rng(0)) if s.args[0].size >= 6)
    args = tuple(_with_nans(a) for a in sample.args)
    out = info(ferro, *(_to_ferro(a, ferro.float32, device) for a in args), **sample.kwargs)
    expected = _reference(info, args, sample.kwargs, ferro.float32)
    assert_close(_host(out), expected.astype(_host(out).dtype), rtol=1e-5, atol=1e-5, check_dtype=False,
                 msg=f"{info.name} with NaN inputs on {device}")


# -- views: a write through the result reaches the base, as in PyTorch --------------------------------------------

#: op -> (the view, NumPy's view of the same positions). Applied to an array of flat indices, the NumPy
#: function says which elements of the base the view covers.
VIEWS: dict[str, tuple[tuple[int, ...], Any, Any]] = {
    "narrow": ((3, 4), lambda x: ferro.narrow(x, 1, 1, 2), lambda i: i[:, 1:3]),
    "select": ((3, 4), lambda x: ferro.select(x, 1, -1), lambda i: i[:, -1]),
    "unbind": ((3, 4), lambda x: ferro.unbind(x)[1], lambda i: i[1]),
    "split": ((3, 4), lambda x: ferro.split(x, 2, 1)[-1], lambda i: i[:, 2:]),
    "chunk": ((3, 4), lambda x: ferro.chunk(x, 2, 1)[0], lambda i: i[:, :2]),
    "tensor_split": ((3, 4), lambda x: ferro.tensor_split(x, [1, 3], 1)[1], lambda i: i[:, 1:3]),
    "unflatten": ((3, 4), lambda x: ferro.unflatten(x, -1, (2, 2)), lambda i: i.reshape(3, 2, 2)),
    "movedim": ((2, 3, 4), lambda x: ferro.movedim(x, 0, -1), lambda i: np.moveaxis(i, 0, -1)),
    "diagonal": ((3, 4), lambda x: ferro.diagonal(x, 1), lambda i: np.diagonal(i, 1)),
    "view": ((3, 4), lambda x: x.view(2, 6), lambda i: i.reshape(2, 6)),
    "reshape": ((3, 4), lambda x: x.reshape(12), lambda i: i.reshape(12)),
    "permute": ((2, 3, 4), lambda x: x.permute(2, 0, 1), lambda i: i.transpose(2, 0, 1)),
    "getitem": ((3, 4), lambda x: x[1:, ::2], lambda i: i[1:, ::2]),
    "T": ((3, 4), lambda x: x.T, lambda i: i.T),
    "mT": ((2, 3, 4), lambda x: x.mT, lambda i: np.swapaxes(i, -1, -2)),
    "transpose": ((2, 3, 4), lambda x: x.transpose(0, 2), lambda i: np.swapaxes(i, 0, 2)),
    "squeeze": ((3, 1, 4), lambda x: x.squeeze(1), lambda i: i.squeeze(1)),
    "unsqueeze": ((3, 4), lambda x: x.unsqueeze(0), lambda i: i[None]),
    "unfold": ((3, 5), lambda x: x.unfold(1, 2, 2), lambda i: np.lib.stride_tricks.sliding_window_view(
        i, 2, axis=1)[:, ::2]),
    "expand": ((3, 1), lambda x: x.expand(3, 4)[:, 0], lambda i: i[:, 0]),
}


@pytest.mark.parametrize("op", list(VIEWS))
def test_view(device: Any, op: str) -> None:
    shape, make, where = VIEWS[op]
    base = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    x = ferro.tensor(base, device=device)
    make(x).add_(100.0)
    expected = base.copy().reshape(-1)
    expected[np.asarray(where(np.arange(base.size).reshape(shape))).reshape(-1)] += 100.0
    assert_close(x, expected.reshape(shape), msg=f"{op}(x).add_(100) must change x (PyTorch returns a view)")


@pytest.mark.parametrize("op", ["real", "imag"])
def test_view_complex(device: Any, op: str) -> None:
    if ferro.complex64 not in device.backend.dtypes(device.index):
        pytest.skip(f"{device} has no complex64")
    base = (np.arange(6) + 1j * np.arange(6, 12)).astype(np.complex64)
    x = ferro.tensor(base, device=device)
    getattr(ferro, op)(x).add_(100.0)
    assert_close(x, base + (100 if op == "real" else 100j), msg=f"{op}(x).add_(100) must change x")
