"""ferro-cuda's index bounds check (CuPy wraps out-of-range indices around silently), run with NumPy in
CuPy's place: it must refuse exactly the keys NumPy refuses, naming the index, before anything is written."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from ferro_cuda._fused import check_index_bounds

X = np.arange(24.0).reshape(2, 3, 4)
A = np.array


@pytest.mark.parametrize("key", [
    (A([0, 1]),), (A([-2, 1]),), (slice(None), A([2, -3])), (Ellipsis, A([3, -4])), (0, A([[1], [2]]), A([0, 3])),
    (None, A([1]), slice(None), A([3])), (X[:, 0, 0] > 0, A([2])), (A([], dtype=np.int64),),
    (slice(None), slice(None), A([0, 3], dtype=np.int32)),
], ids=lambda k: repr(k)[:40])
def test_in_range_keys_pass(key: tuple[Any, ...]) -> None:
    check_index_bounds(np, X, key)
    X.copy()[key] = -1.0  # NumPy agrees


@pytest.mark.parametrize("key, bad", [
    ((A([0, 2]),), 2), ((A([-3]),), -3), ((slice(None), A([1, 3])), 3), ((Ellipsis, A([4])), 4),
    ((0, slice(None), A([-5])), -5), ((None, A([0]), A([7]), slice(None)), 7), ((X[:, 0, 0] > 0, A([3])), 3),
], ids=lambda k: repr(k)[:40])
def test_out_of_range_keys_raise_before_writing(key: tuple[Any, ...], bad: int) -> None:
    with pytest.raises(IndexError):
        X.copy()[key] = -1.0  # NumPy refuses the same key
    with pytest.raises(IndexError, match=f"index {bad} is out of bounds"):
        check_index_bounds(np, X, key)


# -- the getitem kernel and its label (NumPy standing in for CuPy) --------------------------------------------


def test_checked_getitem_reads_in_range_keys_as_numpy() -> None:
    from ferro_cuda._indexing import checked_getitem
    getitem = checked_getitem(np, lambda x, key: x[key], lambda: None)
    for key in ((A([1, 0, 1]),), (slice(None), A([2, -3])), (0, A([[1], [2]]), A([0, 3])), (slice(1, None),)):
        np.testing.assert_array_equal(getitem(X, key), X[key])


def test_checked_getitem_names_the_op_core_named() -> None:
    """gather / index_select / take / embedding name their op and argument before reading (core's
    ``name_deferred_errors``); the read that fails says it, and the label is used once."""
    from ferro_cuda._indexing import IndexLabels, checked_getitem
    labels = IndexLabels()
    getitem = checked_getitem(np, lambda x, key: x[key], lambda: labels.take(0))
    labels.name(0, "gather: argument 'index' (dimension 0 of size 2)")
    with pytest.raises(IndexError, match=r"^gather: argument 'index' .*index 2 is out of bounds for dimension 0"):
        getitem(X, (A([[2, 0]]),))
    with pytest.raises(IndexError, match=r"^index 4 is out of bounds for dimension 2 with size 4"):
        getitem(X, (Ellipsis, A([4])))  # no label given this time: none is reused
    labels.name(1, "take: argument 'index'")  # another device's label stays with that device
    assert labels.take(0) is None and labels.take(1) == "take: argument 'index'" and labels.take(1) is None


def test_the_cuda_table_checks_indices_and_wraps_unsigned_casts() -> None:
    """Building the table needs no GPU: getitem is the checked read, cast the wrapping one."""
    pytest.importorskip("cupy", reason="CuPy is not installed (pip install 'ferro-cuda[cupy]')")
    from ferro_cuda._backend import CudaBackend
    backend = CudaBackend()
    table = backend.kernels(0)
    assert table["getitem"].__qualname__.startswith("checked_getitem")
    assert table["cast"].__qualname__.startswith("wrapping_cast")
    backend.name_deferred_errors(0, "embedding: argument 'index'")
    assert backend._index_labels.take(0) == "embedding: argument 'index'"


# -- float to unsigned casts: through int64, as PyTorch and the CPU backend ------------------------------------


@pytest.mark.parametrize("dtype", ["uint8", "int8", "int16"])
def test_wrapping_cast_matches_torch_where_cuda_would_saturate(dtype: str) -> None:
    """CUDA's float -> unsigned conversion clamps -1.0 to 0 (the uint8 conv1d / linear / scatter values that
    differed on an H100); a cast that clamps the same way stands in for CuPy's here."""
    import torch

    import ferro
    from ferro_cuda._device_kernels import wrapping_cast

    def saturating(x: Any, d: Any) -> Any:
        want = np.dtype(d.name)
        if x.dtype.kind == "f" and want.kind == "u":
            x = np.clip(x, 0, np.iinfo(want).max)
        return x.astype(want)
    values = np.array([-1.0, -0.5, -3.7, 0.0, 2.9, 200.0, 255.5], dtype=np.float32)
    got = wrapping_cast(saturating)(values, getattr(ferro, dtype))
    want = torch.from_numpy(values).to(getattr(torch, dtype)).numpy()
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got, want)
    assert saturating(values, getattr(ferro, "uint8"))[0] == 0  # the stand-in does clamp
