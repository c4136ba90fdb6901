"""dtypes and PyTorch's type promotion, checked against torch itself."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest

import ferro
from ferro._core.dtypes import all_dtypes, result_type
from ferro.testing import assert_close

torch = pytest.importorskip("torch")


def tdt(d: ferro.DType) -> torch.dtype:
    return getattr(torch, d.name)


@pytest.mark.parametrize("a, b", list(itertools.product(all_dtypes, all_dtypes)), ids=lambda d: d.name)
def test_promote_types_matches_torch(a: ferro.DType, b: ferro.DType) -> None:
    assert ferro.promote_types(a, b).name == str(torch.promote_types(tdt(a), tdt(b))).removeprefix("torch.")


SCALARS = [True, 3, 2.5, 1 + 2j]


@pytest.mark.parametrize("d", all_dtypes, ids=lambda d: d.name)
@pytest.mark.parametrize("s", SCALARS, ids=repr)
def test_tensor_op_scalar_result_type_matches_torch(d: ferro.DType, s: object) -> None:
    expected = str(torch.result_type(torch.zeros(2, dtype=tdt(d)), s)).removeprefix("torch.")
    if expected == "complex32":  # ferro has no complex32 (chalf): the next complex dtype up
        expected = "complex64"
    assert result_type([d], [], [s]).name == expected


def _torch_name(d: torch.dtype) -> str:
    name = str(d).removeprefix("torch.")
    return "complex64" if name == "complex32" else name  # ferro has no complex32 (chalf)


def _add(x: Any, y: Any) -> Any:
    both_bool = all(getattr(v, "dtype", None) in (ferro.bool_, torch.bool) for v in (x, y))
    return x | y if both_bool else x + y  # PyTorch refuses nothing here; bool + bool is `or`


@pytest.mark.parametrize("a, b", list(itertools.product(all_dtypes, all_dtypes)), ids=lambda d: d.name)
def test_zero_dim_tensors_only_lift_the_category(a: ferro.DType, b: ferro.DType) -> None:
    for sa, sb in [((2,), ()), ((), (2,)), ((), ()), ((2,), (2,))]:
        expected = _torch_name(torch.result_type(torch.zeros(sa, dtype=tdt(a)), torch.zeros(sb, dtype=tdt(b))))
        dims = [d for d, s in ((a, sa), (b, sb)) if s]
        zero_dims = [d for d, s in ((a, sa), (b, sb)) if not s]
        assert result_type(dims, zero_dims, []).name == expected, (sa, sb)
        got = _add(ferro.zeros(sa, dtype=a), ferro.zeros(sb, dtype=b))
        assert got.dtype.name == expected and got.shape == (2,) * bool(sa or sb), (sa, sb)


@pytest.mark.parametrize("d", all_dtypes, ids=lambda d: d.name)
@pytest.mark.parametrize("s", [True, 3, -3, 2.5, 1j, 300], ids=repr)
def test_zero_dim_tensor_op_scalar_matches_torch(d: ferro.DType, s: object) -> None:
    if s is True or d is not ferro.bool_:
        expected = _torch_name(torch.result_type(torch.zeros((), dtype=tdt(d)), s))
        assert result_type([], [d], [s]).name == expected


# The cases named in the issue, through the operators themselves.
CASES = [
    (lambda L: L.zeros(3, dtype=L.int32) + 2.5),
    (lambda L: L.zeros(3, dtype=L.float16) + 2.5),
    (lambda L: L.zeros(3, dtype=L.uint8) + L.zeros((), dtype=L.int8)),
    (lambda L: L.zeros((), dtype=L.uint8) + L.zeros((), dtype=L.int8)),
    (lambda L: L.zeros(3, dtype=L.bool) + 1),
    (lambda L: L.zeros(3, dtype=L.bool) * 2.5),
    (lambda L: L.zeros(3, dtype=L.int32) + L.zeros((), dtype=L.float64)),
    (lambda L: L.zeros(3, dtype=L.float32) + L.zeros((), dtype=L.float64)),
    (lambda L: L.zeros(3, dtype=L.int8) * L.zeros((), dtype=L.int64)),
    (lambda L: L.zeros(3, dtype=L.int64) / 2),
    (lambda L: L.zeros(3, dtype=L.int32) / L.zeros(3, dtype=L.int32)),
    (lambda L: L.zeros(3, dtype=L.float16) * L.zeros(3, dtype=L.bfloat16)),
    (lambda L: L.zeros(3, dtype=L.bfloat16) + 2.5),
    (lambda L: L.zeros(3, dtype=L.bfloat16) + L.zeros(3, dtype=L.int64)),
    (lambda L: L.zeros(3, dtype=L.float32) + 1j),
    (lambda L: L.zeros(3, dtype=L.float64) + 1j),
    (lambda L: L.zeros(3, dtype=L.int16) + L.zeros(3, dtype=L.uint8)),
    (lambda L: L.zeros(3, dtype=L.int16).exp()),
    (lambda L: L.zeros(3, dtype=L.bool).sqrt()),
    (lambda L: L.zeros(3, dtype=L.uint8).sum()),
    (lambda L: L.where(L.zeros(3, dtype=L.bool), L.zeros(3, dtype=L.int32), 2.5)),
    (lambda L: L.where(L.zeros(3, dtype=L.bool), 1, 2)),
    (lambda L: L.cat([L.zeros(3, dtype=L.int32), L.zeros(3, dtype=L.uint8)])),
]


@pytest.mark.parametrize("make", CASES, ids=[f"case{i}" for i in range(len(CASES))])
def test_named_promotion_cases_match_torch(make: Any) -> None:
    assert make(ferro).dtype.name == _torch_name(make(torch).dtype)


@pytest.fixture
def float64_default() -> Any:
    ferro.set_default_dtype(ferro.float64)
    torch.set_default_dtype(torch.float64)
    try:
        yield
    finally:
        ferro.set_default_dtype(ferro.float32)
        torch.set_default_dtype(torch.float32)


DEFAULT_DTYPE_CASES = [
    lambda L: L.tensor([1.0]), lambda L: L.tensor(2.5), lambda L: L.tensor([1 + 1j]), lambda L: L.zeros(2),
    lambda L: L.ones(2, 2), lambda L: L.full((2,), 1.5), lambda L: L.arange(0.0, 1.0, 0.5), lambda L: L.arange(3),
    lambda L: L.linspace(0, 1, 3), lambda L: L.eye(2), lambda L: L.rand(2), lambda L: L.randn(2),
    lambda L: L.empty(2), lambda L: L.tensor([1, 2]) / 2, lambda L: L.tensor([1, 2]) * 0.5,
    lambda L: L.tensor([1, 2]).exp(), lambda L: L.tensor([1, 2], dtype=L.float32) + 2.5,
    lambda L: L.tensor([1, 2], dtype=L.int32) + L.tensor(2.5), lambda L: L.tensor([True]).sqrt(),
]


@pytest.mark.parametrize("make", DEFAULT_DTYPE_CASES, ids=[f"case{i}" for i in range(len(DEFAULT_DTYPE_CASES))])
def test_a_float64_default_matches_torch(float64_default: Any, make: Any) -> None:
    assert ferro.get_default_dtype() is ferro.float64
    assert make(ferro).dtype.name == _torch_name(make(torch).dtype)


def test_default_dtype() -> None:
    assert ferro.get_default_dtype() is ferro.float32
    assert ferro.tensor([1.0]).dtype is ferro.float32 and ferro.tensor([1]).dtype is ferro.int64
    ferro.set_default_dtype(ferro.float64)
    try:
        assert ferro.tensor([1.0]).dtype is ferro.float64
        assert (ferro.tensor([1, 2]) / 2).dtype is ferro.float64
        assert ferro.tensor([1.0 + 1j]).dtype is ferro.complex128
    finally:
        ferro.set_default_dtype(ferro.float32)
    assert (ferro.tensor([1, 2]) / 2).dtype is ferro.float32
    with pytest.raises(TypeError, match="floating"):
        ferro.set_default_dtype(ferro.int32)


@pytest.mark.parametrize("src, dst", list(itertools.product(all_dtypes, all_dtypes)), ids=lambda d: d.name)
def test_can_cast_matches_torch(src: ferro.DType, dst: ferro.DType) -> None:
    assert ferro.can_cast(src, dst) == torch.can_cast(tdt(src), tdt(dst))


def test_bfloat16_is_ml_dtypes() -> None:
    import ml_dtypes
    t = ferro.tensor([1.5, 2.0, -3.25], dtype=ferro.bfloat16)
    assert t.numpy().dtype == np.dtype(ml_dtypes.bfloat16)
    np.testing.assert_array_equal(t.float().numpy(), [1.5, 2.0, -3.25])
    assert (t * 2).dtype is ferro.bfloat16 and (t + t.half()).dtype is ferro.float32


def test_bfloat16_round_trips_through_ml_dtypes() -> None:
    import ml_dtypes
    bf = np.dtype(ml_dtypes.bfloat16)
    src = (np.random.default_rng(0).standard_normal((3, 4)) * 100).astype(bf)
    for t in (ferro.tensor(src), ferro.from_numpy(src), ferro.as_tensor(src)):
        assert t.dtype is ferro.bfloat16 and t.shape == (3, 4)
        back = t.numpy()
        assert back.dtype == bf
        np.testing.assert_array_equal(back.view(np.uint16), src.view(np.uint16))  # bit for bit
    t = ferro.tensor(src)
    assert t.tolist() == src.astype(np.float32).tolist()
    # arithmetic rounds to bfloat16 as ml_dtypes does
    assert_close((t * 3 + 1).numpy().astype(np.float32), (src * bf.type(3) + bf.type(1)).astype(np.float32))
    assert_close(t.float(), src.astype(np.float32))
    assert_close(ferro.tensor(src.astype(np.float32)).bfloat16().float(), src.astype(np.float32))
    rounded = ferro.tensor([1.00390625], dtype=ferro.float32).bfloat16().float().item()
    assert rounded == float(np.float32(1.00390625).astype(bf))
    assert ferro.tensor(src).sum().dtype is ferro.bfloat16



def test_dtype_objects() -> None:
    assert repr(ferro.float32) == "ferro.float32" and ferro.float is ferro.float32 and ferro.long is ferro.int64
    assert ferro.float16.is_floating_point and not ferro.int8.is_floating_point
    assert ferro.complex64.is_complex and not ferro.uint8.is_signed and ferro.int8.is_signed
    assert [d.itemsize for d in all_dtypes] == [np.dtype(d.name if d.name != "bfloat16" else "float16").itemsize
                                                for d in all_dtypes]
