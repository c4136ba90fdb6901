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
