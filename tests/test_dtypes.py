"""dtypes and PyTorch's type promotion, checked against torch itself."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import ferro
from ferro._dtypes import all_dtypes, result_type

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


@pytest.mark.parametrize("dim_d, zero_d", [(ferro.int32, ferro.float64), (ferro.float32, ferro.float64),
                                           (ferro.uint8, ferro.int8), (ferro.bool_, ferro.int32),
                                           (ferro.float32, ferro.complex128), (ferro.int64, ferro.float16)],
                         ids=str)
def test_zero_dim_tensors_only_lift_the_category(dim_d: ferro.DType, zero_d: ferro.DType) -> None:
    expected = torch.result_type(torch.zeros(2, dtype=tdt(dim_d)), torch.zeros((), dtype=tdt(zero_d)))
    got = (ferro.zeros(2, dtype=dim_d) + ferro.zeros((), dtype=zero_d)).dtype
    assert got.name == str(expected).removeprefix("torch.")


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


def test_dtype_objects() -> None:
    assert repr(ferro.float32) == "ferro.float32" and ferro.float is ferro.float32 and ferro.long is ferro.int64
    assert ferro.float16.is_floating_point and not ferro.int8.is_floating_point
    assert ferro.complex64.is_complex and not ferro.uint8.is_signed and ferro.int8.is_signed
    assert [d.itemsize for d in all_dtypes] == [np.dtype(d.name if d.name != "bfloat16" else "float16").itemsize
                                                for d in all_dtypes]
