"""ferro-cuda's index bounds check (CuPy wraps out-of-range indices around silently), run with NumPy in
CuPy's place: it must refuse exactly the keys NumPy refuses, naming the index, before anything is written."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from ferro_cuda._fused import check_index_bounds

X = np.arange(24.0).reshape(2, 3, 4)
I = np.array


@pytest.mark.parametrize("key", [
    (I([0, 1]),), (I([-2, 1]),), (slice(None), I([2, -3])), (Ellipsis, I([3, -4])), (0, I([[1], [2]]), I([0, 3])),
    (None, I([1]), slice(None), I([3])), (X[:, 0, 0] > 0, I([2])), (I([], dtype=np.int64),),
    (slice(None), slice(None), I([0, 3], dtype=np.int32)),
], ids=lambda k: repr(k)[:40])
def test_in_range_keys_pass(key: tuple[Any, ...]) -> None:
    check_index_bounds(np, X, key)
    X.copy()[key] = -1.0  # NumPy agrees


@pytest.mark.parametrize("key, bad", [
    ((I([0, 2]),), 2), ((I([-3]),), -3), ((slice(None), I([1, 3])), 3), ((Ellipsis, I([4])), 4),
    ((0, slice(None), I([-5])), -5), ((None, I([0]), I([7]), slice(None)), 7), ((X[:, 0, 0] > 0, I([3])), 3),
], ids=lambda k: repr(k)[:40])
def test_out_of_range_keys_raise_before_writing(key: tuple[Any, ...], bad: int) -> None:
    with pytest.raises(IndexError):
        X.copy()[key] = -1.0  # NumPy refuses the same key
    with pytest.raises(IndexError, match=f"index {bad} is out of bounds"):
        check_index_bounds(np, X, key)
