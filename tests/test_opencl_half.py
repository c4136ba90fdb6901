"""float16 and bfloat16 on every OpenCL device (PoCL's CPU device, which has no cl_khr_fp16, in CI).

Both are stored in 16 bits and computed in float32, the result rounded once
(round to nearest even): so each result equals PyTorch CPU's, which computes
16-bit elementwise ops in float32 and rounds once too. Checked against
PyTorch and NumPy / ml_dtypes: every bit pattern through transfers and casts,
elementwise ops, reductions that accumulate in float32 (a 16-bit accumulator
could not count past 256 in bfloat16), matmul on each kernel, indexing,
sorting, scans, the fused kernels, and what the capability queries say.
"""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import pytest

import ferro

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(16)
HALVES = {"float16": (ferro.float16, np.dtype(np.float16), torch.float16),
          "bfloat16": (ferro.bfloat16, np.dtype(ml_dtypes.bfloat16), torch.bfloat16)}
#: One unit in the last place at 1.0 of each 16-bit type.
EPS = {"float16": 2.0 ** -10, "bfloat16": 2.0 ** -7}


@pytest.fixture(params=list(HALVES))
def half(request: Any, ocl: Any) -> tuple[str, Any, Any, Any]:
    """(name, ferro dtype, NumPy dtype, torch dtype) of each 16-bit float."""
    return (request.param, *HALVES[request.param])


def _dev(a: np.ndarray) -> ferro.Tensor:
    return ferro.tensor(a, device="opencl")


def _torch(a: np.ndarray, tdt: Any) -> Any:
    return torch.from_numpy(a.astype(np.float32)).to(tdt)


def _same(got: ferro.Tensor, want: Any) -> None:
    """``got`` equal to the torch tensor ``want`` bit for bit (NaNs where it has NaNs)."""
    g = got.float().numpy() if got.dtype is not ferro.float32 else got.numpy()
    np.testing.assert_array_equal(g, want.float().numpy())


def _all_bits(npdt: Any) -> np.ndarray:
    return np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(npdt)


def test_every_bit_pattern_round_trips_through_the_device(half: Any) -> None:
    _, fdt, npdt, _ = half
    bits = _all_bits(npdt)
    x = _dev(bits)
    assert x.dtype is fdt and x.device == ferro.device("opencl:0")
    np.testing.assert_array_equal(x.numpy().view(np.uint16), bits.view(np.uint16))  # transfers move the bits
    # a strided copy on the device loads and stores each element: exact, NaNs stay NaN
    back = x.reshape(256, 256).T.contiguous().T.reshape(-1).numpy()
    finite = ~np.isnan(bits.astype(np.float32))
    np.testing.assert_array_equal(back.view(np.uint16)[finite], bits.view(np.uint16)[finite])
    assert np.isnan(back.astype(np.float32)[~finite]).all()


def test_casts_to_and_from_float32_round_once_to_nearest_even(half: Any) -> None:
    _, fdt, npdt, _ = half
    bits = _all_bits(npdt)
    widened = _dev(bits).to(ferro.float32).numpy()
    np.testing.assert_array_equal(widened, bits.astype(np.float32))  # every pattern, NaNs compare equal
    # float32 values around every rounding boundary: ties, just past ties, subnormals, overflow, inf, nan
    base = bits.astype(np.float32)
    base = base[np.isfinite(base)]
    ulp = np.abs(np.nextafter(base.astype(npdt), np.float32(np.inf)).astype(np.float32) - base) \
        if npdt == np.float16 else np.abs(base) * EPS["bfloat16"]
    probes = np.concatenate([base + ulp / 2, base - ulp / 2, base + ulp * 0.5001, base * (1 + 1e-7),
                             RNG.standard_normal(4096).astype(np.float32) * 1e4,
                             np.array([7e4, -7e4, 3.4e38, 1e-8, -1e-40, np.inf, -np.inf, np.nan], np.float32)])
    probes = probes.astype(np.float32)
    with np.errstate(over="ignore"):
        want = probes.astype(npdt)
    got = _dev(probes).to(fdt).numpy()
    np.testing.assert_array_equal(got.astype(np.float32), want.astype(np.float32))


@pytest.mark.parametrize("other", ["bool", "uint8", "int8", "int16", "int32", "int64", "float64"])
def test_casts_with_every_other_dtype(half: Any, other: str) -> None:
    _, fdt, npdt, _ = half
    src = (RNG.standard_normal(300) * 50).astype(np.float32)
    if other == "bool":
        src = src > 0
    elif other in ("uint8",):
        src = np.abs(src).astype(other)
    else:
        src = src.astype(other)
    got = _dev(src).to(fdt).numpy()
    np.testing.assert_array_equal(got.astype(np.float32), src.astype(np.float32).astype(npdt).astype(np.float32))
    h = _dev(src.astype(np.float32).astype(npdt))
    back = h.to(getattr(ferro, other if other != "bool" else "bool")).numpy()
    np.testing.assert_array_equal(back, src.astype(np.float32).astype(npdt).astype(np.float32).astype(other))
    # float16 <-> bfloat16 on the device
    peer = ferro.bfloat16 if fdt is ferro.float16 else ferro.float16
    peer_np = HALVES[peer.name][1]
    np.testing.assert_array_equal(h.to(peer).numpy().astype(np.float32),
                                  h.numpy().astype(np.float32).astype(peer_np).astype(np.float32))


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "maximum", "minimum"])
def test_binary_ops_equal_pytorch_bit_for_bit(half: Any, op: str) -> None:
    _, fdt, npdt, tdt = half
    a = (RNG.standard_normal((37, 29)) * 3).astype(npdt)
    b = (RNG.standard_normal((29,)) * 3).astype(npdt)
    got = getattr(ferro, op)(_dev(a), _dev(b))
    assert got.dtype is fdt
    _same(got, getattr(torch, op)(_torch(a, tdt), _torch(b, tdt)))
    # a Python scalar and a strided (transposed) operand
    # a Python number is rounded to the tensor's dtype first, as on ferro's cpu backend (NumPy's weak scalars;
    # PyTorch does so in add and sub but not in mul and div)
    _same(getattr(ferro, op)(_dev(a).T, 1.7), getattr(torch, op)(_torch(a, tdt).T, torch.tensor(1.7, dtype=tdt)))


@pytest.mark.parametrize("op", ["exp", "log", "tanh", "sigmoid", "sqrt", "sin", "relu", "abs", "neg"])
def test_unary_ops_within_one_rounding_of_pytorch(half: Any, op: str) -> None:
    name, fdt, npdt, tdt = half
    a = np.abs(RNG.standard_normal(2000) * 2).astype(npdt) if op in ("log", "sqrt") else \
        (RNG.standard_normal(2000) * 2).astype(npdt)
    got = getattr(ferro, op)(_dev(a))
    assert got.dtype is fdt
    want = getattr(torch, op)(_torch(a, tdt)).float().numpy()
    # computed in float32 and rounded once: at most one unit in the last place from PyTorch's own rounding
    np.testing.assert_allclose(got.float().numpy(), want, rtol=EPS[name], atol=1e-6)


def test_reductions_accumulate_in_float32(half: Any) -> None:
    name, fdt, npdt, tdt = half
    ones = ferro.ones(50_000, dtype=fdt, device="opencl")
    # a 16-bit accumulator would stop at 256 (bfloat16) or 2048 (float16); float32 gives 50000, rounded once
    assert ones.sum().item() == float(np.float32(50_000).astype(npdt))
    a = RNG.standard_normal((64, 3000)).astype(npdt)
    x, t = _dev(a), _torch(a, tdt)
    exact = a.astype(np.float64)
    for got, ref in ((x.sum(), exact.sum()), (x.sum(1), exact.sum(1)), (x.T.sum(1), exact.sum(0)),
                     (x.mean(0), exact.mean(0))):
        assert got.dtype is fdt
        tol = EPS[name] * np.maximum(np.abs(ref), 1) * 1.01  # one rounding of the float32 sum
        assert (np.abs(got.float().numpy() - ref) <= tol).all()
    _same(x.amax(1), t.amax(1))
    _same(x.amin(0), t.amin(0))
    np.testing.assert_array_equal(x.argmax(1).numpy(), t.float().argmax(1).numpy())
    np.testing.assert_array_equal(x.argmin(0).numpy(), t.float().argmin(0).numpy())
    small = (RNG.random((5, 7)) + 0.5).astype(npdt)
    np.testing.assert_allclose(_dev(small).prod(1).float().numpy(), small.astype(np.float64).prod(1),
                               rtol=EPS[name])  # one rounding of the float32 product (PyTorch rounds more often)


@pytest.mark.parametrize("tile", [None, "64,8,8", "16,4,2"])
def test_matmul_within_one_rounding_of_float64(half: Any, tile: str | None, monkeypatch: pytest.MonkeyPatch,
                                               ocl: Any) -> None:
    from ferro_opencl._matmul import matmul_kernel
    name, fdt, npdt, _ = half
    if tile is None:
        monkeypatch.delenv("FERRO_OPENCL_MATMUL_TILE", raising=False)
    else:
        monkeypatch.setenv("FERRO_OPENCL_MATMUL_TILE", tile)
    rt = ocl.runtime(0)
    mm = matmul_kernel(rt)
    a, b = RNG.standard_normal((2, 37, 300)).astype(npdt), RNG.standard_normal((300, 45)).astype(npdt)
    exact = a.astype(np.float64) @ b.astype(np.float64)
    scale = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
    for y in (rt.from_host(b), rt.from_host(np.ascontiguousarray(b.T)).view((300, 45), (1, 300))):
        got = mm(rt.from_host(a), y).get()
        assert got.dtype == npdt
        # one rounding of the result plus float32's accumulation error (a 16-bit sum would be far worse)
        err = np.abs(got.astype(np.float64) - exact)
        assert (err <= EPS[name] * np.abs(exact) + 300 * 2.0 ** -24 * scale + 1e-6).all()
    assert (_dev(a) @ _dev(b)).dtype is fdt


def test_indexing_moves_the_bits(half: Any) -> None:
    _, fdt, npdt, _ = half
    a = (RNG.standard_normal((6, 5)) * 10).astype(npdt)
    x = _dev(a)
    idx = np.array([4, 0, 4, 2])
    np.testing.assert_array_equal(x[_dev(idx)].numpy(), a[idx])
    np.testing.assert_array_equal(x[:, _dev(idx[:2])].numpy(), a[:, idx[:2]])
    y = x.clone()
    y[_dev(np.array([1, 3]))] = 2.5
    want = a.copy()
    want[[1, 3]] = 2.5
    np.testing.assert_array_equal(y.numpy(), want)
    z = ferro.zeros(4, dtype=fdt, device="opencl")
    z = ferro.index_put(z, (_dev(np.array([0, 0, 3])),), _dev(np.array([1.5, 2.0, -1.0], npdt)), accumulate=True)
    assert z.dtype is fdt and z.float().tolist() == [3.5, 0.0, 0.0, -1.0]


@pytest.mark.parametrize("how", ["add", "amax", "prod"])
def test_accumulating_scatters_sum_in_float32_and_round_once(half: Any, how: str) -> None:
    """Repeated indices reduce in float32 on the device; each element rounded once: the float32 scatter of the
    same 16-bit values, rounded (2,000 values near 1 into one slot: a 16-bit running sum would stall at 256
    in bfloat16, 2048 in float16)."""
    _, fdt, npdt, _ = half
    base = (RNG.standard_normal((3, 4)) + 2).astype(npdt)
    idx = RNG.integers(0, 3, 2000)
    vals = (1 + RNG.standard_normal((2000, 4)) * (1e-3 if how == "prod" else 0.1)).astype(npdt)
    want = ferro.tensor(base.astype(np.float32))
    key = (ferro.tensor(idx),)
    if how == "add":
        got = ferro.index_put(_dev(base), (_dev(idx),), _dev(vals), accumulate=True)
        want = ferro.index_put(want, key, ferro.tensor(vals.astype(np.float32)), accumulate=True)
    else:
        got = _dev(base).index_reduce(0, _dev(idx), _dev(vals), how)
        want = want.index_reduce(0, key[0], ferro.tensor(vals.astype(np.float32)), how)
    assert got.dtype is fdt
    np.testing.assert_array_equal(got.numpy().astype(np.float32), want.to(fdt).numpy().astype(np.float32))


@pytest.mark.parametrize("n", [50, 5000])
def test_sort_and_scans(half: Any, n: int) -> None:
    name, _, npdt, tdt = half
    a = np.round(RNG.standard_normal((3, n)) * 8).astype(npdt)  # many ties: stability shows
    a[1, 7] = np.nan
    x, t = _dev(a), _torch(a, tdt)
    np.testing.assert_array_equal(ferro.argsort(x, 1).numpy(), t.float().argsort(dim=1, stable=True).numpy())
    v, _ = ferro.sort(x, dim=1, descending=True)
    tv, _ = t.float().sort(dim=1, descending=True, stable=True)
    np.testing.assert_array_equal(v.float().numpy(), tv.numpy())
    got, want = x.cumsum(1).float().numpy(), t.float().cumsum(1).to(tdt).float().numpy()
    np.testing.assert_allclose(got, want, rtol=EPS[name], atol=EPS[name] * 8)  # float32 running sum, rounded
    vals, idx = x.cummax(1)
    tvals, tidx = t.cummax(1)
    np.testing.assert_array_equal(vals.float().numpy(), tvals.float().numpy())
    np.testing.assert_array_equal(idx.numpy(), tidx.numpy())


def test_fused_kernels_against_pytorch(half: Any) -> None:
    name, fdt, npdt, tdt = half
    a = RNG.standard_normal((16, 40)).astype(npdt)
    w, b = RNG.standard_normal(40).astype(npdt), RNG.standard_normal(40).astype(npdt)
    x, t = _dev(a), _torch(a, tdt)
    tol = dict(rtol=4 * EPS[name], atol=4 * EPS[name])
    np.testing.assert_allclose(ferro.softmax(x, -1).float().numpy(), torch.softmax(t, -1).float().numpy(), **tol)
    np.testing.assert_allclose(ferro.log_softmax(x, 0).float().numpy(),
                               torch.log_softmax(t, 0).float().numpy(), **tol)
    got = ferro.nn.functional.layer_norm(x, (40,), _dev(w), _dev(b))
    want = torch.nn.functional.layer_norm(t, (40,), _torch(w, tdt), _torch(b, tdt))
    assert got.dtype is fdt
    np.testing.assert_allclose(got.float().numpy(), want.float().numpy(), rtol=8 * EPS[name], atol=8 * EPS[name])
    target = RNG.integers(0, 40, 16)
    ce = ferro.nn.functional.cross_entropy(x, _dev(target))
    tce = torch.nn.functional.cross_entropy(t.float(), torch.from_numpy(target))
    np.testing.assert_allclose(ce.float().item(), tce.item(), rtol=4 * EPS[name])


def test_training_step_gradients(half: Any) -> None:
    name, fdt, npdt, tdt = half
    a, w = RNG.standard_normal((8, 12)).astype(npdt), RNG.standard_normal((12, 3)).astype(npdt)
    x, p = _dev(a), _dev(w).requires_grad_()
    loss = ferro.tanh(x @ p).sum()
    loss.backward()
    assert p.grad.dtype is fdt and p.grad.device == ferro.device("opencl:0")
    tp = _torch(w, tdt).requires_grad_()
    torch.tanh(_torch(a, tdt) @ tp).sum().backward()
    np.testing.assert_allclose(p.grad.float().numpy(), tp.grad.float().numpy(), rtol=8 * EPS[name],
                               atol=8 * EPS[name])


def test_random_and_creation(half: Any) -> None:
    _, fdt, npdt, _ = half
    r = ferro.rand(1000, dtype=fdt, device="opencl")
    assert r.dtype is fdt and 0 <= r.float().min().item() and r.float().max().item() <= 1
    np.testing.assert_array_equal(ferro.full((3,), 1.1, dtype=fdt, device="opencl").numpy(),
                                  np.full(3, 1.1, npdt))
    np.testing.assert_array_equal(ferro.arange(0, 5, 0.5, dtype=fdt, device="opencl").numpy(),
                                  np.arange(0, 5, 0.5).astype(npdt))


def test_capabilities_say_how_each_device_does_16_bit(ocl: Any) -> None:
    import pyopencl as cl  # noqa: F401 - the backend is available, so pyopencl is installed
    for i in range(ocl.device_count()):
        info = ocl.device_info(i)
        assert info["float16"].startswith("storage only: computed in float32")
        assert info["bfloat16"].startswith("storage only: computed in float32")
        assert {ferro.float16, ferro.bfloat16} <= ocl.dtypes(i)
    for op in ("add", "exp", "sum", "matmul", "softmax", "argsort", "cumsum", "index_put"):
        for dt in ("float16", "bfloat16"):
            r = ferro.backends.explain(op, dt, "opencl")
            assert r.supported, (op, dt, r.reason)
    assert ocl.supports("matmul", ferro.bfloat16) and ocl.supports("layer_norm", ferro.float16)
    assert not ocl.supports("linalg.inv", ferro.bfloat16)  # refused as for every dtype: no kernel


def test_fused_kernels_round_once(half: Any, ocl: Any) -> None:
    # below the registry: core routes bfloat16 softmax through its decomposition, the kernels take it anyway
    name, _, npdt, _ = half
    k, rt = ocl.kernels(0), ocl.runtime(0)
    a = (RNG.standard_normal((16, 300)) * 3).astype(npdt)
    x = a.astype(np.float64)
    e = np.exp(x - x.max(1, keepdims=True))
    want = e / e.sum(1, keepdims=True)
    got = k["softmax"](rt.from_host(a), 1).get()
    assert got.dtype == npdt
    # float32 work, one rounding: within half a unit in the last place (a stored exp rounded twice was not)
    tiny = 2.0 ** -24 if name == "float16" else 0.0  # float16's subnormals are 2^-24 apart
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=EPS[name] / 2 + 1e-5, atol=tiny)
    logp = k["log_softmax"](rt.from_host(a), 1).get().astype(np.float64)
    np.testing.assert_allclose(logp, np.log(want), rtol=EPS[name], atol=EPS[name])
