"""ferro.array_api's own semantics, where the standard differs from ferro's PyTorch-style functions.

The official conformance suite (test_array_api_conformance.py) checks the
namespace broadly; these tests pin the differences the namespace layer makes,
against NumPy 2 (which follows the standard) and with ferro's PyTorch-style
functions shown unchanged. Each runs on every installed backend.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import ferro
import ferro.array_api as xp


def on(device: ferro.device, values: object, dtype: object) -> ferro.Tensor:
    """An array of ``values`` on ``device``."""
    return xp.asarray(values, dtype=dtype, device=device)


def test_namespace_of_a_tensor(device: ferro.device) -> None:
    """Tensor.__array_namespace__ gives ferro.array_api; array-api-compat (scikit-learn's entry) finds it too."""
    x = on(device, [1.0, 2.0], xp.float32)
    assert x.__array_namespace__() is xp
    assert x.__array_namespace__(api_version="2024.12") is xp
    with pytest.raises(ValueError, match=r"2024\.12"):
        x.__array_namespace__(api_version="2030.12")
    compat = pytest.importorskip("array_api_compat")
    assert compat.array_namespace(x) is xp
    assert x.device == device and x.to_device("cpu").device == ferro.device("cpu")
    assert xp.__array_api_version__ == "2024.12"


def test_zero_d_arrays_promote_like_others(device: ferro.device) -> None:
    """int8[3] + int16[] is int16 in the standard (and NumPy 2); ferro.add keeps PyTorch's int8."""
    a, b = on(device, [1, 2, 3], xp.int8), on(device, 300, xp.int16)
    out = xp.add(a, b)
    ref = np.add(np.array([1, 2, 3], np.int8), np.array(300, np.int16))
    assert out.dtype == xp.int16 and str(ref.dtype) == "int16"
    assert out.tolist() == ref.tolist()
    assert ferro.add(a, b).dtype == ferro.int8


def test_python_scalars_take_the_array_dtype(device: ferro.device) -> None:
    """A Python int keeps an int32 array int32; a float with an int array is refused (undefined in the standard)."""
    a = on(device, [1, 2], xp.int32)
    assert xp.multiply(a, 3).dtype == xp.int32 and xp.multiply(3, a).tolist() == [3, 6]
    f = on(device, [1.5], xp.float32)
    assert xp.add(f, 1).dtype == xp.float32
    with pytest.raises(TypeError, match="float"):
        xp.add(a, 2.5)
    with pytest.raises(OverflowError, match="int8"):
        xp.add(on(device, [1], xp.int8), 1000)


def test_integer_division_by_zero_gives_zero(device: ferro.device) -> None:
    """xp.floor_divide / remainder give 0 for integer division by zero, as NumPy; ferro's raise as PyTorch."""
    a, b = on(device, [7, -7, 5], xp.int32), on(device, [2, 0, 0], xp.int32)
    with np.errstate(divide="ignore"):
        ref_q = np.floor_divide(np.array([7, -7, 5]), np.array([2, 0, 0]))
        ref_r = np.remainder(np.array([7, -7, 5]), np.array([2, 0, 0]))
    assert xp.floor_divide(a, b).tolist() == ref_q.tolist()
    assert xp.remainder(a, b).tolist() == ref_r.tolist()
    if device.type == "cpu":  # PyTorch's CPU kernels raise; ferro's PyTorch-style function does too
        with pytest.raises(ZeroDivisionError):
            ferro.floor_divide(a, b)


def test_floor_divide_special_cases(device: ferro.device) -> None:
    """inf // finite and finite // inf as the standard's special cases say."""
    a = on(device, [math.inf, -math.inf, 1.0, -1.0, 7.0], xp.float32)
    b = on(device, [2.0, 2.0, -math.inf, math.inf, 2.0], xp.float32)
    out = xp.floor_divide(a, b).tolist()
    assert out[:2] == [math.inf, -math.inf] and out[4] == 3.0
    assert out[2] == 0.0 and math.copysign(1, out[2]) == -1 and math.copysign(1, out[3]) == -1


def test_unique_counts_every_nan(device: ferro.device) -> None:
    """Each NaN is its own value with count 1, as NumPy 2's unique_counts; inverse indices keep x's shape."""
    vals = [[3.0, math.nan, 1.0], [3.0, math.nan, 1.0]]
    x = on(device, vals, xp.float32)
    got = xp.unique_counts(x)
    ref = np.unique_counts(np.array(vals, np.float32))
    np.testing.assert_array_equal(got.values.numpy(), ref.values)
    assert got.counts.tolist() == ref.counts.tolist()
    inv = xp.unique_inverse(x).inverse_indices
    assert tuple(inv.shape) == (2, 3)
    np.testing.assert_array_equal(xp.unique_values(x).numpy()[inv.numpy()][~np.isnan(np.array(vals))],
                                  np.array(vals, np.float32)[~np.isnan(np.array(vals))])
    first = xp.unique_all(x).indices.tolist()
    assert first == [2, 0, 1, 4]  # 1.0 first at 2, 3.0 at 0, then each NaN


def test_stable_descending_sort(device: ferro.device) -> None:
    """argsort(descending=True) keeps ties in their order (NumPy: a stable argsort of -x)."""
    vals = [2, 1, 2, 3, 1, 2, 3]
    got = xp.argsort(on(device, vals, xp.int64), descending=True).tolist()
    assert got == np.argsort(-np.array(vals), stable=True).tolist()
    assert xp.sort(on(device, vals, xp.int64), descending=True).tolist() == sorted(vals, reverse=True)


def test_statistics_against_numpy(device: ferro.device) -> None:
    """std's correction is NumPy's ddof; sums of small integers accumulate in int64; cumulative_sum's initial 0."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((4, 5)).astype(np.float32)
    x = on(device, a, xp.float32)
    np.testing.assert_allclose(xp.std(x, axis=0, correction=1).numpy(), np.std(a, axis=0, ddof=1), rtol=1e-5)
    np.testing.assert_allclose(xp.var(x, axis=(0, 1), keepdims=True).numpy(), np.var(a, keepdims=True), rtol=1e-5)
    i8 = np.array([[100, 100], [100, 27]], np.int8)
    s = xp.sum(on(device, i8, xp.int8), axis=0)
    assert s.dtype == xp.int64 and s.tolist() == np.sum(i8, axis=0, dtype=np.int64).tolist()
    c = xp.cumulative_sum(on(device, [1, 2, 3], xp.int32), include_initial=True)
    ref = np.cumulative_sum(np.array([1, 2, 3], np.int32), include_initial=True)
    assert c.dtype == xp.int64 and str(ref.dtype) == "int64" and c.tolist() == ref.tolist()
    assert xp.cumulative_sum(on(device, [1, 2], xp.int32), dtype=xp.int32).dtype == xp.int32


def test_info_reports_the_device(device: ferro.device) -> None:
    """__array_namespace_info__ lists the device and only the standard's dtypes the device has."""
    info = xp.__array_namespace_info__()
    assert device in info.devices()
    dts = info.dtypes(device=device)
    have = device.backend.dtypes(device.index)
    assert set(dts.values()) == {d for d in (xp.bool, xp.int8, xp.int16, xp.int32, xp.int64, xp.uint8, xp.float32,
                                             xp.float64, xp.complex64, xp.complex128) if d in have}
    assert set(info.dtypes(device=device, kind="integral").values()) <= {xp.int8, xp.int16, xp.int32, xp.int64,
                                                                         xp.uint8}
    assert info.default_dtypes(device=device)["indexing"] == xp.int64
    with pytest.raises(ValueError, match="kind"):
        info.dtypes(kind="floats")


def test_dlpack_with_numpy_and_torch() -> None:
    """from_dlpack takes NumPy and PyTorch arrays; NumPy and PyTorch take ferro's (CPU, no copy)."""
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    x = xp.from_dlpack(a)
    assert x.dtype == xp.float32 and x.tolist() == a.tolist()
    back = np.from_dlpack(x)
    back[0, 0] = 42.0  # shares memory with x
    assert x[0, 0].item() == 42.0
    torch = pytest.importorskip("torch")
    t = torch.arange(4, dtype=torch.int32)
    assert xp.from_dlpack(t).tolist() == [0, 1, 2, 3]
    assert torch.from_dlpack(xp.asarray([1.5, 2.5])).tolist() == [1.5, 2.5]
    with pytest.raises(ValueError, match="copy=False"):
        xp.asarray([1, 2], copy=False)


def test_fft_extension_against_numpy(device: ferro.device) -> None:
    """xp.fft spells the standard's axis/axes/norm and matches NumPy's transforms."""
    if xp.complex64 not in xp.__array_namespace_info__().dtypes(device=device).values():
        pytest.skip(f"{device} has no complex dtypes")
    assert "fft" in xp.__array_api_extensions__
    a = np.random.default_rng(1).standard_normal((3, 8)).astype(np.float32)
    x = on(device, a, xp.float32)
    np.testing.assert_allclose(xp.fft.fft(x, axis=0, norm="ortho").numpy(), np.fft.fft(a, axis=0, norm="ortho"),
                               rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(xp.fft.irfftn(xp.fft.rfftn(x), s=(3, 8)).numpy(), a, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(xp.fft.fftfreq(8, d=0.5, device=device).numpy(), np.fft.fftfreq(8, d=0.5), rtol=1e-6)
    with pytest.raises(ValueError, match="norm"):
        xp.fft.fft(x, norm="both")


def test_complex_parts_at_infinities(device: ferro.device) -> None:
    """expm1 and tanh keep the standard's special values where re + im * 1j would give NaN."""
    if xp.complex128 not in xp.__array_namespace_info__().dtypes(device=device).values():
        pytest.skip(f"{device} has no complex128")
    x = on(device, [complex(math.inf, math.nan), complex(-math.inf, math.inf), complex(math.inf, 1e300)],
           xp.complex128)
    e = xp.expm1(x).tolist()
    assert e[0].real == math.inf and math.isnan(e[0].imag)
    assert e[1] == complex(-1, 0)
    t = xp.tanh(x[2:]).tolist()[0]
    assert t == complex(1, 0) and math.copysign(1, t.imag) == 1
    assert xp.imag(on(device, [1.0], xp.float64)).tolist() == [0.0]


def test_shifts_past_the_bit_width(device: ferro.device) -> None:
    """Shifting an int8 by 8 or more gives 0 (or -1 right-shifting a negative), as NumPy; OpenCL C would wrap."""
    a = np.array([5, -5, 100, -100], np.int8)
    b = np.array([8, 9, 1, 20], np.int8)
    x, y = on(device, a, xp.int8), on(device, b, xp.int8)
    assert xp.bitwise_left_shift(x, y).tolist() == np.left_shift(a, b).tolist()
    assert xp.bitwise_right_shift(x, y).tolist() == np.right_shift(a, b).tolist()
    u = on(device, [200], xp.uint8)
    assert xp.bitwise_right_shift(u, on(device, [9], xp.uint8)).tolist() == [0]
