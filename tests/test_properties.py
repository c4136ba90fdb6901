"""Property tests (hypothesis): broadcasting, type promotion and views, on every installed backend."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ferro
from ferro._core.dtypes import all_dtypes

torch = pytest.importorskip("torch")
# ``device`` is ferro.testing's fixture: one run per installed backend; it does not change between examples.
SETTINGS = settings(max_examples=40, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])


@st.composite
def broadcastable(draw: Any) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Two shapes that broadcast together: each dimension equal, or 1 on one side, or missing."""
    ndim = draw(st.integers(0, 4))
    base = draw(st.lists(st.integers(1, 4), min_size=ndim, max_size=ndim))
    a, b = [], []
    for s in base:
        pick = draw(st.integers(0, 2))
        a.append(1 if pick == 1 else s)
        b.append(1 if pick == 2 else s)
    cut = draw(st.integers(0, ndim))
    return tuple(a[cut:]) if draw(st.booleans()) else tuple(a), tuple(b)


def _require(device: Any, *ops: str) -> None:
    missing = [op for op in ops if not device.backend.supports(op, ferro.float32, device.index)]
    if missing:
        pytest.skip(f"backend '{device.backend.name}' does not claim {', '.join(missing)}")


@SETTINGS
@given(shapes=broadcastable(), op=st.sampled_from(["add", "mul", "sub", "maximum"]))
def test_broadcasting_matches_numpy(device: Any, shapes: tuple[tuple[int, ...], ...], op: str) -> None:
    _require(device, "add", "mul", "sub", "maximum")
    rng = np.random.default_rng(0)
    a = rng.standard_normal(shapes[0]).astype(np.float32)
    b = rng.standard_normal(shapes[1]).astype(np.float32)
    got = getattr(ferro, op)(ferro.tensor(a, device=device), ferro.tensor(b, device=device))
    ref = getattr(np, {"add": "add", "mul": "multiply", "sub": "subtract", "maximum": "maximum"}[op])(a, b)
    assert tuple(got.shape) == ref.shape
    np.testing.assert_allclose(got.numpy(), ref, rtol=1e-6)


NUMERIC = [d for d in all_dtypes if d.name not in ("bfloat16",)]


@SETTINGS
@given(a=st.sampled_from(NUMERIC), b=st.sampled_from(NUMERIC), a_dims=st.integers(0, 2), b_dims=st.integers(0, 2),
       scalar=st.sampled_from([None, True, 3, 2.5, 1j]))
def test_promotion_matches_torch(a: ferro.DType, b: ferro.DType, a_dims: int, b_dims: int, scalar: Any) -> None:
    x = ferro.zeros(*([2] * a_dims), dtype=a)
    y = ferro.zeros(*([2] * b_dims), dtype=b)
    tx = torch.zeros([2] * a_dims, dtype=getattr(torch, a.name))
    ty = torch.zeros([2] * b_dims, dtype=getattr(torch, b.name))
    got, ref = (x + y, tx + ty) if a.name != "bool" or b.name != "bool" else (x | y, tx | ty)
    if scalar is not None:
        if isinstance(scalar, complex) and not (got.dtype.is_complex or got.dtype.is_floating_point):
            return
        got, ref = got + scalar if got.dtype.name != "bool" else got | bool(scalar), \
            ref + scalar if ref.dtype != torch.bool else ref | bool(scalar)
    expected = str(ref.dtype).removeprefix("torch.")
    assert got.dtype.name == ("complex64" if expected == "complex32" else expected)


@SETTINGS
@given(rows=st.integers(2, 5), cols=st.integers(2, 5), data=st.data())
def test_a_view_written_through_changes_its_base(device: Any, rows: int, cols: int, data: Any) -> None:
    _require(device, "add", "getitem", "permute", "reshape")
    i, j = data.draw(st.integers(0, rows - 1)), data.draw(st.integers(0, cols - 1))
    # the same selection applies to a ferro tensor and a NumPy array: both give views
    select = data.draw(st.sampled_from([
        lambda t: t[i], lambda t: t[:, j], lambda t: t[::2, 1::2], lambda t: t.T, lambda t: t.reshape(-1),
        lambda t: t[i:, :j + 1].T,
    ]))
    base = ferro.zeros(rows, cols, device=device)
    expected = np.zeros((rows, cols), np.float32)
    view = select(base)
    view += 1.0
    select(expected)[...] += 1.0
    np.testing.assert_array_equal(base.numpy(), expected)
    assert base.version == 1, "the write bumped the base's version counter"


@st.composite
def reduction_case(draw: Any) -> tuple[tuple[int, ...], Any, bool]:
    """A shape, a dim argument (None, an int or a tuple of distinct dims, possibly negative) and keepdim."""
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=4)))
    n = len(shape)
    kind = draw(st.sampled_from(["none", "int", "tuple"]))
    if kind == "none":
        dim: Any = None
    elif kind == "int":
        dim = draw(st.integers(-n, n - 1))
    else:
        dims = draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=n, unique=True))
        dim = tuple(d - n if draw(st.booleans()) else d for d in dims)
    return shape, dim, draw(st.booleans())


@SETTINGS
@given(case=reduction_case(), op=st.sampled_from(["sum", "mean", "amax", "amin"]))
def test_reductions_match_numpy(device: Any, case: tuple[tuple[int, ...], Any, bool], op: str) -> None:
    _require(device, op)
    shape, dim, keepdim = case
    a = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    got = getattr(ferro, op)(ferro.tensor(a, device=device), dim, keepdim)
    ref = np.asarray(getattr(np, op)(a, axis=dim, keepdims=keepdim))
    assert tuple(got.shape) == ref.shape
    np.testing.assert_allclose(got.numpy(), ref, rtol=1e-5, atol=1e-6)


@st.composite
def basic_key(draw: Any, shape: tuple[int, ...]) -> tuple[Any, ...]:
    """A basic indexing key for ``shape``: ints (negative too), slices with steps, None and an Ellipsis
    for the dimensions the key leaves out."""
    key: list[Any] = []
    for size in shape[:draw(st.integers(0, len(shape)))]:
        kind = draw(st.sampled_from(["int", "slice", "none"]))
        if kind == "int":
            key.append(draw(st.integers(-size, size - 1)))
        elif kind == "slice":
            key.append(slice(draw(st.none() | st.integers(-size - 1, size + 1)),
                             draw(st.none() | st.integers(-size - 1, size + 1)),
                             draw(st.none() | st.integers(1, 3))))
        else:
            key.append(None)
    if draw(st.booleans()):
        key.append(Ellipsis)
    return tuple(key)


@SETTINGS
@given(data=st.data())
def test_basic_indexing_matches_numpy_and_writes_through(device: Any, data: Any) -> None:
    _require(device, "getitem", "add")
    shape = tuple(data.draw(st.lists(st.integers(1, 5), min_size=1, max_size=3)))
    key = data.draw(basic_key(shape))
    a = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    base = ferro.tensor(a, device=device)
    view = base[key]
    np.testing.assert_array_equal(view.numpy(), a[key])
    view += 1.0
    a[key] += 1.0
    np.testing.assert_array_equal(base.numpy(), a)


@SETTINGS
@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=4), data=st.data())
def test_reshape_permute_round_trip_matches_numpy(device: Any, shape: list[int], data: Any) -> None:
    _require(device, "reshape", "permute")
    a = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    perm = data.draw(st.permutations(range(len(shape))))
    new = data.draw(st.sampled_from([(-1,), (a.size, 1), (1, -1), tuple(reversed(shape))]))
    t = ferro.tensor(a, device=device).permute(*perm).reshape(*new)
    ref = a.transpose(perm).reshape(new)
    np.testing.assert_array_equal(t.numpy(), ref)
