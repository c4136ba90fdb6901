"""16-bit matrix products accumulate in float32 and round once, on every backend.

A bfloat16 matmul of size 4096 on cpu is exactly the float32 product rounded to bfloat16, element by element,
and within one rounding of the float64 product (2**-8 of it, plus the float32 sum's own error, far below a
16-bit sum's, which the same bound refuses). bmm and conv2d (a matmul of windows) likewise; OpenCL's kernels
on float16 storage (any device: vload_half / vstore_half), and ferro-cuda's routing of the products CuPy would
sum in 16 bits, with NumPy standing in for CuPy (no GPU here).
"""

from __future__ import annotations

import types
from typing import Any

import ml_dtypes
import numpy as np
import pytest
import torch

import ferro

BF16 = np.dtype(ml_dtypes.bfloat16)
#: unit roundoff (half an ulp, relative) of each 16-bit format
UNIT = {"bfloat16": 2.0**-8, "float16": 2.0**-11}


def _operands(m: int, k: int, n: int, dtype: Any, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Two matrices of values exact in ``dtype`` (returned as float32)."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((m, k)).astype(np.float32).astype(dtype).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32).astype(dtype).astype(np.float32)
    return a, b


def _within_one_rounding(got: np.ndarray, a: np.ndarray, b: np.ndarray, unit: float) -> np.ndarray:
    """Where ``got`` (rows of a @ b) is within one rounding of the float64 product: unit * |exact| plus 2**-16 of
    the Cauchy-Schwarz bound on the element (room for a float32 sum's error, ~2**-12 of its own value at worst
    here, and nowhere near a 16-bit sum's)."""
    exact = a.astype(np.float64) @ b.astype(np.float64)
    scale = np.sqrt(np.square(a.astype(np.float64)).sum(1))[:, None] * np.sqrt(np.square(b).sum(0))[None, :]
    return np.abs(got.astype(np.float64) - exact) <= unit * np.abs(exact) + 2.0**-16 * scale


def _summed_in(dtype: Any, a_row: np.ndarray, b: np.ndarray) -> np.ndarray:
    """One row of a @ b with every product and partial sum rounded to ``dtype``: what a 16-bit sum gives."""
    acc = np.zeros(b.shape[1], dtype)
    for k in range(b.shape[0]):
        acc = (acc.astype(np.float32) + (a_row[k] * b[k]).astype(dtype).astype(np.float32)).astype(dtype)
    return acc.astype(np.float32)


def test_large_bfloat16_results_keep_their_dtype_on_cpu() -> None:
    # results of a megabyte or more come from ferro-cpu's buffer pool, whose array interface cannot name bfloat16
    t = ferro.ones(1024, 1024).to(ferro.bfloat16)
    assert t._data.dtype == BF16 and (t + t)._data.dtype == BF16 and float((t @ t)[0, 0]) == 1024.0


def test_bfloat16_matmul_4096_rounds_once_on_cpu() -> None:
    n = 4096
    a, b = _operands(n, n, n, BF16)
    got = (ferro.tensor(a).to(ferro.bfloat16) @ ferro.tensor(b).to(ferro.bfloat16))
    assert got.dtype is ferro.bfloat16
    got = got.to(ferro.float32).numpy()
    # ferro's float32 product (split in pieces over threads as a bfloat16 one is), rounded once
    f32 = (ferro.tensor(a) @ ferro.tensor(b)).numpy()
    np.testing.assert_array_equal(got, f32.astype(BF16).astype(np.float32))
    rows = slice(0, 256)  # against float64: a band of rows (a float64 product of 4096**3 is slow on 2 cores)
    assert _within_one_rounding(got[rows], a[rows], b, UNIT["bfloat16"]).all()
    # the bound can fail: a bfloat16 sum misses it on most of a row
    assert _within_one_rounding(_summed_in(BF16, a[0], b)[None], a[:1], b, UNIT["bfloat16"]).mean() < 0.5


@pytest.mark.parametrize("name", ["bfloat16", "float16"])
def test_bmm_and_batched_matmul_round_once(dev: str, name: str) -> None:
    dt = getattr(ferro, name)
    if dt not in ferro.backends.get(dev.split(":")[0]).dtypes(0):
        pytest.skip(f"{dev} has no {name}")
    np16 = BF16 if name == "bfloat16" else np.float16
    rng = np.random.default_rng(1)
    a = rng.standard_normal((3, 40, 700)).astype(np16).astype(np.float32)
    b = rng.standard_normal((3, 700, 24)).astype(np16).astype(np.float32)
    x, y = ferro.tensor(a, device=dev).to(dt), ferro.tensor(b, device=dev).to(dt)
    for got, left in ((ferro.bmm(x, y), a), (x @ y, a), (x[0] @ y, np.broadcast_to(a[0], a.shape))):
        assert got.dtype is dt
        g = got.to(ferro.float32).cpu().numpy()
        for i in range(3):
            assert _within_one_rounding(g[i], left[i], b[i], UNIT[name]).all()
        if dev == "cpu":
            np.testing.assert_array_equal(g, np.matmul(left, b).astype(np16).astype(np.float32))


def test_conv2d_of_16_bit_inputs_rounds_once_on_cpu() -> None:
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 64, 9, 9)).astype(BF16).astype(np.float32)
    w = rng.standard_normal((8, 64, 3, 3)).astype(BF16).astype(np.float32)
    got = ferro.nn.functional.conv2d(ferro.tensor(x).to(ferro.bfloat16), ferro.tensor(w).to(ferro.bfloat16))
    assert got.dtype is ferro.bfloat16
    want = torch.nn.functional.conv2d(torch.tensor(x, dtype=torch.float64), torch.tensor(w, dtype=torch.float64))
    want = want.numpy()
    err = np.abs(got.to(ferro.float32).numpy() - want)
    # one rounding of each element, plus room for the float32 sum of 576 products (a bfloat16 sum is ~10x this)
    assert (err <= UNIT["bfloat16"] * np.abs(want) + 2.0**-16 * 576).all()
    f32 = torch.nn.functional.conv2d(torch.tensor(x), torch.tensor(w)).numpy().astype(BF16).astype(np.float32)
    assert np.mean(got.to(ferro.float32).numpy() == f32) > 0.99  # the float32 result rounded (but for ties)


def test_opencl_kernels_accumulate_float16_in_float32(ocl: Any, monkeypatch: Any) -> None:
    # float16 storage runs on any OpenCL device (vload_half / vstore_half need no cl_khr_fp16): both kernels,
    # the device's own and the tiled one, checked below the registry (PoCL's CPU device claims no float16)
    from ferro_opencl._matmul import matmul_kernel
    rt = ocl.runtime(0)
    a, b = _operands(96, 3000, 80, np.float16, seed=3)
    for tile in (None, "32,4,4"):
        if tile is None:
            monkeypatch.delenv("FERRO_OPENCL_MATMUL_TILE", raising=False)
        else:
            monkeypatch.setenv("FERRO_OPENCL_MATMUL_TILE", tile)
        got = matmul_kernel(rt)(rt.from_host(a.astype(np.float16)), rt.from_host(b.astype(np.float16))).get()
        assert got.dtype == np.float16
        ok = _within_one_rounding(got.astype(np.float32), a, b, UNIT["float16"])
        assert ok.all(), f"{(~ok).sum()} elements off by more than one rounding (tile {tile})"
    summed = _summed_in(np.float16, a[0], b)[None]  # the bound can fail: a float16 sum of 3000 products
    assert _within_one_rounding(summed, a[:1], b, UNIT["float16"]).mean() < 0.9


@pytest.mark.parametrize("name", ["bfloat16", "float16"])
def test_opencl_16_bit_matmul_through_ferro(ocl: Any, name: str) -> None:
    dt = getattr(ferro, name)
    if dt not in ocl.dtypes(0):
        pytest.skip(f"opencl:0 has no {name} (PoCL's CPU device lacks cl_khr_fp16)")
    a, b = _operands(128, 1024, 96, BF16 if name == "bfloat16" else np.float16, seed=4)
    got = ferro.tensor(a, device="opencl").to(dt) @ ferro.tensor(b, device="opencl").to(dt)
    assert got.dtype is dt
    assert _within_one_rounding(got.to(ferro.float32).numpy(), a, b, UNIT[name]).all()


def test_cuda_matmul_widens_what_cupy_would_sum_in_16_bits() -> None:
    pytest.importorskip("ferro_cuda", reason="ferro-cuda is not installed")
    from ferro_cuda._device_kernels import widened_matmul
    seen: list[tuple[Any, tuple[int, ...], tuple[int, ...]]] = []

    def spy(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        seen.append((a.dtype, a.shape, b.shape))
        return np.matmul(a, b).astype(a.dtype)  # CuPy's result dtype (NumPy gives float32 for bfloat16)
    fake_cupy = types.SimpleNamespace(matmul=spy, float32=np.float32)
    matmul = widened_matmul(fake_cupy, (np.dtype(np.float16), BF16))
    rng = np.random.default_rng(5)
    cases = {  # shapes -> whether CuPy gets float32 (it would sum these in 16 bits) or the 16-bit operands
        ((4, 8), (8, 5)): False, ((1, 8), (8, 1)): True, ((8,), (8,)): True, ((8,), (8, 1)): True,
        ((1, 8), (8,)): True, ((2, 3, 8), (8, 5)): True, ((3, 8), (2, 8, 5)): True, ((1, 8), (8, 3)): False,
    }
    for dtype in (np.float16, BF16):
        for (sa, sb), widened in cases.items():
            seen.clear()
            a = rng.standard_normal(sa).astype(dtype)
            b = rng.standard_normal(sb).astype(dtype)
            out = matmul(a, b)
            assert out.dtype == dtype and out.shape == np.matmul(a.astype(np.float32), b.astype(np.float32)).shape
            assert seen == [(np.dtype(np.float32) if widened else np.dtype(dtype), sa, sb)], (dtype, sa, sb)
    f32 = np.ones((1, 3), np.float32)
    assert matmul(f32, f32.T).dtype == np.float32  # other dtypes: CuPy's own


def test_ml_dtypes_loads_only_with_the_first_bfloat16_array() -> None:
    # the first op of a float32 program does not pay for ml_dtypes; the first bfloat16 tensor loads it, and the
    # kernels bound before then accumulate it in float32 all the same (3000 * 0.1 summed in bfloat16 stops at 32)
    import subprocess
    import sys
    code = ("import sys, ferro\n"
            "x = ferro.ones(2) + 1\n"
            "print('ml_dtypes' in sys.modules)\n"
            "import numpy, ml_dtypes\n"
            "a = numpy.full(3000, 0.1, dtype=ml_dtypes.bfloat16)\n"
            "print(float(ferro.from_numpy(a).sum()), float(ferro.full((3000,), 0.1, dtype=ferro.bfloat16).sum()))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    want = float(torch.full((3000,), 0.1, dtype=torch.bfloat16).sum())
    assert out == ["False", str(want), str(want)]
