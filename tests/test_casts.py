"""Casts between every pair of dtypes, against PyTorch's results (values within each type's range)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import ferro
from ferro._core.dtypes import all_dtypes

torch = pytest.importorskip("torch")
# Values every dtype can hold (negative ones are left out for uint8, whose wrap-around PyTorch leaves undefined).
VALUES = {"bool": [True, False, True], "uint8": [0, 7, 200]}
DEFAULT = [-3.0, 0.0, 2.5, 100.0]


def _values(d: ferro.DType) -> list[object]:
    return VALUES.get(d.name, DEFAULT if (d.is_floating_point or d.is_complex) else [-3, 0, 2, 100])


@pytest.mark.parametrize("src, dst", list(itertools.product(all_dtypes, all_dtypes)), ids=lambda d: d.name)
def test_cast_matches_torch(src: ferro.DType, dst: ferro.DType) -> None:
    vals = _values(src)
    if dst.name in ("uint8",) and src.name not in ("bool", "uint8"):
        vals = [v for v in vals if not isinstance(v, (int, float)) or v >= 0]
    if dst.name in ("int8",) and src.name not in ("bool", "int8"):
        vals = [v for v in vals if v in (True, False) or -128 <= v <= 127]
    t = ferro.tensor(np.asarray(vals)).to(src).to(dst)
    r = torch.tensor(vals).to(getattr(torch, src.name)).to(getattr(torch, dst.name))
    assert t.dtype is dst
    got = t.to(ferro.complex128).numpy() if dst.is_complex else t.to(ferro.float64).numpy()
    ref = r.to(torch.complex128).numpy() if r.is_complex() else r.to(torch.float64).numpy()
    np.testing.assert_array_equal(got, ref)


def test_cast_is_differentiable_and_goes_back_to_the_input_dtype() -> None:
    x = ferro.tensor([1.5, -2.0], dtype=ferro.float64, requires_grad=True)
    (x.to(ferro.float32) * 3).sum().backward()
    assert x.grad.dtype is ferro.float64 and x.grad.tolist() == [3.0, 3.0]
