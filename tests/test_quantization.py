"""Quantized tensors and dynamic int8 quantization (``ferro.quantization``), against PyTorch and NumPy, on cpu
and OpenCL: the same integers and dequantized values as ``torch.quantize_per_tensor`` / ``quantize_per_channel``,
``int8_matmul`` exact in int32, ``quantize_dynamic`` on a trained digits MLP, safetensors round trips, and the
errors for ops without a quantized rule."""

from __future__ import annotations

import copy
import io
import subprocess
import sys

import numpy as np
import pytest

import ferro
from ferro import nn
from ferro.errors import UnsupportedLayoutError, UnsupportedOperationError

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.filterwarnings("ignore:torch.quantize_per_tensor.*:UserWarning")

_QDTYPES = [("qint8", "qint8"), ("quint8", "quint8"), ("qint32", "qint32")]


def _data(shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal(shape) * 3).astype(np.float32)


@pytest.mark.parametrize(("fq", "tq"), _QDTYPES)
def test_quantize_per_tensor_matches_torch(dev, fq, tq):
    rng = np.random.default_rng(1)
    for scale, zp in [(0.1, 3), (0.0371, -5), (1 / 3, 0), (0.02, 10)]:
        if fq == "quint8":
            zp += 128
        x = _data((7, 33), seed=int(scale * 1000))
        x[0, :5] = [1e6, -1e6, 0.0, scale * 2.5, -scale * 0.5]  # saturation and half-way values
        x[1] = ((rng.integers(-300, 300, 33) + 0.5) * np.float32(scale)).astype(np.float32)  # near ties
        q = ferro.quantize_per_tensor(ferro.tensor(x, device=dev), scale, zp, getattr(ferro, fq))
        t = torch.quantize_per_tensor(torch.tensor(x), scale, zp, getattr(torch, tq))
        assert q.is_quantized and q.dtype is getattr(ferro, fq) and q.qscheme() is ferro.per_tensor_affine
        assert (q.q_scale(), q.q_zero_point()) == (t.q_scale(), t.q_zero_point())
        got = q.int_repr()
        assert got.dtype.name == str(t.int_repr().dtype).removeprefix("torch.")
        np.testing.assert_array_equal(got.cpu().numpy(), t.int_repr().numpy())
        np.testing.assert_array_equal(q.dequantize().cpu().numpy(), t.dequantize().numpy())
        np.testing.assert_array_equal(ferro.dequantize(q).cpu().numpy(), t.dequantize().numpy())


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_quantize_per_channel_matches_torch(dev, axis):
    x = _data((5, 6, 7), seed=axis)
    n = x.shape[axis]
    rng = np.random.default_rng(axis)
    scales = torch.tensor(rng.uniform(0.005, 0.2, n), dtype=torch.float64)
    zps = torch.tensor(rng.integers(-10, 10, n))
    q = ferro.quantize_per_channel(ferro.tensor(x, device=dev), ferro.tensor(scales.numpy(), device=dev),
                                   ferro.tensor(zps.numpy(), device=dev), axis, ferro.qint8)
    t = torch.quantize_per_channel(torch.tensor(x), scales, zps, axis, torch.qint8)
    assert q.qscheme() is ferro.per_channel_affine and q.q_per_channel_axis() == axis
    np.testing.assert_array_equal(q.q_per_channel_scales().cpu().numpy(), t.q_per_channel_scales().numpy())
    np.testing.assert_array_equal(q.q_per_channel_zero_points().cpu().numpy(), t.q_per_channel_zero_points().numpy())
    assert q.q_per_channel_scales().dtype == ferro.float64 and q.q_per_channel_zero_points().dtype == ferro.int64
    np.testing.assert_array_equal(q.int_repr().cpu().numpy(), t.int_repr().numpy())
    np.testing.assert_array_equal(q.dequantize().cpu().numpy(), t.dequantize().numpy())


@pytest.mark.parametrize("block", [32, 5, 1])
def test_blockwise_is_within_one_step_of_each_blocks_scale(dev, block):
    x = _data((3, 70), seed=block)
    x[2, :block] = 0  # an all-zero block
    q = ferro.quantize_blockwise(ferro.tensor(x, device=dev), block)
    scales = q.q_per_block_scales().cpu().numpy()
    nb = -(-70 // block)
    assert scales.shape == (3, nb) and q.q_block_size() == block and q.qscheme() is ferro.per_block_symmetric
    padded = np.pad(x, ((0, 0), (0, nb * block - 70))).reshape(3, nb, block)
    np.testing.assert_allclose(scales, np.where(np.abs(padded).max(-1) > 0, np.abs(padded).max(-1) / 127, 1),
                               rtol=1e-6)
    step = np.repeat(scales, block, axis=1)[:, :70]
    err = np.abs(q.dequantize().cpu().numpy() - x)
    assert (err <= step).all() and (err <= step / 2 * (1 + 1e-5)).all()
    ints = q.int_repr().cpu().numpy()
    assert ints.dtype == np.int8 and np.abs(ints).max() == 127


def test_default_block_size_is_32():
    q = ferro.quantize_blockwise(ferro.tensor(_data((2, 64))))
    assert q.q_block_size() == 32 and tuple(q.q_per_block_scales().shape) == (2, 2)


def test_accessors_of_other_schemes_and_bad_arguments_are_refused():
    x = ferro.tensor(_data((2, 3)))
    q = ferro.quantize_per_tensor(x, 0.1, 0, ferro.qint8)
    with pytest.raises(RuntimeError, match=r"q_per_channel_scales\(\): expected a tensor quantized with "
                                           r"ferro.per_channel_affine, got ferro.per_tensor_affine"):
        q.q_per_channel_scales()
    with pytest.raises(ferro.errors.DTypeError, match=r"quantize_per_tensor\(\): argument 'dtype' must be a quantized"):
        ferro.quantize_per_tensor(x, 0.1, 0, ferro.int8)
    with pytest.raises(ValueError, match=r"argument 'zero_point' must lie in \[-128, 127\]"):
        ferro.quantize_per_tensor(x, 0.1, 200, ferro.qint8)
    with pytest.raises(ValueError, match="argument 'scale' must be a positive"):
        ferro.quantize_per_tensor(x, 0.0, 0, ferro.qint8)
    with pytest.raises(ferro.errors.DTypeError, match="argument 'input' must be a floating point tensor"):
        ferro.quantize_per_tensor(ferro.tensor([1, 2]), 0.1, 0, ferro.qint8)
    with pytest.raises(ferro.errors.ShapeError, match=r"expected 3 scales and zero points \(the size of axis 1\)"):
        ferro.quantize_per_channel(x, ferro.ones(2, dtype=ferro.float64), ferro.zeros(2, dtype=ferro.int64), 1,
                                   ferro.qint8)
    with pytest.raises(ValueError, match="argument 'block_size' must be a positive int"):
        ferro.quantize_blockwise(x, 0)


def test_ops_without_a_quantized_rule_name_the_op_and_never_dequantize(dev):
    x = ferro.tensor(_data((3, 4)), device=dev)
    q = ferro.quantize_per_tensor(x, 0.1, 2, ferro.qint8)
    before = q.int_repr().cpu().numpy()
    cases = [(lambda: q + 1, r"add\(\): argument 'input' is a quantized tensor"),
             (lambda: x * q, r"mul\(\): argument 'other' is a quantized tensor"),
             (lambda: ferro.exp(q), r"exp\(\): argument 'input' is a quantized tensor"),
             (lambda: q @ x.t(), r"matmul\(\): argument '\w+' is a quantized tensor"),
             (lambda: ferro.cat([x, q]), r"cat\(\): argument 'tensors' is a quantized tensor"),
             (lambda: q.sum(), r"sum\(\): argument '\w+' is a quantized tensor"),
             (lambda: nn.functional.linear(q, x), r"linear\(\): argument 'input' is a quantized tensor"),
             (lambda: nn.functional.linear(x, ferro.quantize_blockwise(x, 2)),
              r"linear\(\): argument 'weight' is a quantized tensor other than a 2-D qint8 per-tensor"),
             (lambda: q.numpy(), r"numpy\(\): argument 'self' is a quantized tensor"),
             (lambda: q.to(ferro.float32), r"to\(\): argument 'self' is a quantized tensor")]
    for fn, message in cases:
        with pytest.raises(UnsupportedLayoutError, match=message + r".*\.dequantize\(\) first"):
            fn()
    np.testing.assert_array_equal(q.int_repr().cpu().numpy(), before)
    assert not x.is_quantized


@pytest.mark.parametrize(("m", "k", "n"), [(64, 1024, 1024), (13, 33, 37), (1, 1, 1), (3, 0, 2)])
def test_int8_matmul_is_exact_in_int32(dev, m, k, n):
    rng = np.random.default_rng(m + k + n)
    a = rng.integers(-128, 128, (m, k)).astype(np.int8)
    b = rng.integers(-128, 128, (k, n)).astype(np.int8)
    a[:, :1], b[:1, :] = -128, -128  # the largest products
    ref = a.astype(np.int64) @ b.astype(np.int64)
    fa, fb = ferro.tensor(a, device=dev), ferro.tensor(b, device=dev)
    bt = ferro.tensor(np.ascontiguousarray(b.T), device=dev).t()  # a transposed view, as quantized Linear keeps it
    for y in (fb, bt):
        got = ferro.ops.int8_matmul(fa, y)
        assert got.dtype == ferro.int32
        np.testing.assert_array_equal(got.cpu().numpy(), ref)


def test_int8_matmul_refuses_other_dtypes_and_shapes():
    a = ferro.ones(2, 3, dtype=ferro.int8)
    with pytest.raises(ferro.errors.DTypeError, match=r"int8_matmul: argument 'other' must be int8, got ferro\.int32"):
        ferro.ops.int8_matmul(a, ferro.ones(3, 2, dtype=ferro.int32))
    with pytest.raises(ferro.errors.ShapeError, match=r"int8_matmul: shapes \[2, 3\] and \[2, 3\] cannot be"):
        ferro.ops.int8_matmul(a, a)


def test_a_backend_without_the_kernel_raises_unsupported():
    from ferro.backends import contract
    assert contract.KERNELS["int8_matmul"].group == "quantized"
    for name in ("cpu", "opencl"):
        if name in ferro.backends.installed():
            b = ferro.backends.get(name)
            assert "quantized" in b.optional_groups
    assert ferro.backends.get("cpu").supports("int8_matmul", ferro.int8)
    if "prims" not in ferro.backends.installed():
        pytest.skip("the ferro-testplugins 'prims' backend is not installed (pip install -e tests/plugins)")
    # the prims test backend has only the required primitives: no int8 product, and no detour through floats
    assert not ferro.backends.get("prims").supports("int8_matmul", ferro.int8)
    x = ferro.ones(2, 2, dtype=ferro.int8, device="prims")
    with pytest.raises(UnsupportedOperationError, match=r"int8_matmul.*backend 'prims'.*optional group 'quantized'"):
        ferro.ops.int8_matmul(x, x)


# -- quantize_dynamic -------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def digits_mlp():
    """A digits MLP (64-64-64-10) trained briefly on cpu, with the digits split of ``ferro demo``."""
    pytest.importorskip("sklearn")
    from ferro.demo import load_digits, make_mlp
    ferro.manual_seed(0)
    xtr, ytr, xte, yte = load_digits(images=False)
    model = make_mlp(64)
    opt = ferro.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(8):
        for i in range(0, len(ytr), 64):
            opt.zero_grad()
            nn.functional.cross_entropy(model(xtr[i:i + 64]), ytr[i:i + 64]).backward()
            opt.step()
    return model, xte, yte


def test_quantize_dynamic_keeps_the_digits_accuracy(dev, digits_mlp):
    from ferro.demo import evaluate
    model, xte, yte = digits_mlp
    model = copy.deepcopy(model).to(dev)  # (to() moves in place: the fixture's model stays on cpu)
    xte, yte = xte.to(dev), yte.to(dev)
    _, acc = evaluate(model, xte, yte)
    qmodel = ferro.quantization.quantize_dynamic(model, {nn.Linear}, dtype=ferro.qint8)
    assert all(type(m).__name__ == "DynamicQuantizedLinear" for m in (qmodel[0], qmodel[2], qmodel[4]))
    assert type(model[0]) is nn.Linear  # a copy: the float model is left as it was
    _, qacc = evaluate(qmodel, xte, yte)
    assert acc > 0.9 and abs(qacc - acc) <= 0.01, (acc, qacc)
    w = qmodel[0].weight()
    assert w.is_quantized and w.dtype is ferro.qint8 and w.qscheme() is ferro.per_channel_affine
    np.testing.assert_array_equal(w.q_per_channel_zero_points().cpu().numpy(), 0)


def test_dynamic_linear_follows_its_int8_arithmetic(dev):
    """The layer's output is exactly the int32 product of the quantized input and weight, scaled once."""
    rng = np.random.default_rng(3)
    lin = nn.Linear(40, 24).to(dev)
    q = ferro.ao.quantization.quantize_dynamic(lin, {nn.Linear}, dtype=ferro.qint8)
    x = rng.standard_normal((9, 40)).astype(np.float32)
    y = q(ferro.tensor(x, device=dev)).cpu().numpy()
    w = q.weight()
    wq = w.int_repr().cpu().numpy().astype(np.int64)
    ws = w.q_per_channel_scales().cpu().numpy().astype(np.float32)
    lo, hi = min(x.min(), 0), max(x.max(), 0)
    s = np.float32(hi - lo) / np.float32(255)
    zp = np.clip(np.rint(np.float32(-128) - np.float32(lo) / s), -128, 127)
    xq = np.clip(np.rint(x / s + zp), -128, 127).astype(np.int64)
    acc = (xq - zp.astype(np.int64)) @ wq.T
    ref = acc.astype(np.float32) * (s * ws) + lin.bias.detach().cpu().numpy()
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-5)
    full = x @ lin.weight.detach().cpu().numpy().T + lin.bias.detach().cpu().numpy()
    assert np.abs(y - full).max() < 0.05 * np.abs(full).max()


@pytest.mark.parametrize("scheme", ["per_tensor", "per_channel"])
def test_linear_with_a_quantized_weight_removes_both_zero_points_in_int32(dev, scheme):
    """The quantized layout's rule for linear: exact int32 sums of (x_q - zp_x) (w_q - zp_w), scaled once."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 3, 20)).astype(np.float32)
    w = rng.standard_normal((6, 20)).astype(np.float32)
    bias = rng.standard_normal(6).astype(np.float32)
    fw = ferro.tensor(w, device=dev)
    if scheme == "per_tensor":
        qw = ferro.quantize_per_tensor(fw, 0.02, 7, ferro.qint8)
        ws, wz = np.float32(0.02), np.int64(7)
    else:
        scales = rng.uniform(0.01, 0.03, 6)
        zps = rng.integers(-5, 5, 6)
        qw = ferro.quantize_per_channel(fw, ferro.tensor(scales, device=dev), ferro.tensor(zps, device=dev), 0,
                                        ferro.qint8)
        ws, wz = scales.astype(np.float32), zps[:, None]
    y = nn.functional.linear(ferro.tensor(x, device=dev), qw, ferro.tensor(bias, device=dev))
    assert tuple(y.shape) == (2, 3, 6) and y.dtype == ferro.float32
    x2 = x.reshape(-1, 20)
    lo, hi = min(x2.min(), 0), max(x2.max(), 0)
    s = np.float32(hi - lo) / np.float32(255)
    zp = np.clip(np.rint(np.float32(-128) - np.float32(lo) / s), -128, 127)
    xq = np.clip(np.rint(x2 / s + zp), -128, 127).astype(np.int64)
    acc = (xq - np.int64(zp)) @ (qw.int_repr().cpu().numpy().astype(np.int64) - wz).T
    ref = acc.astype(np.float32) * (s * ws) + bias
    np.testing.assert_allclose(y.cpu().numpy().reshape(-1, 6), ref, rtol=1e-5, atol=1e-5)


def test_clone_deepcopy_and_moving_keep_a_quantized_tensor(dev):
    x = ferro.tensor(_data((4, 6)))
    q = ferro.quantize_per_channel(x, ferro.tensor([0.1, 0.2, 0.3, 0.4], dtype=ferro.float64),
                                   ferro.tensor([0, 1, 2, 3]), 0, ferro.qint8)
    for other in (ferro.clone(q), copy.deepcopy(q), q.to(dev)):
        assert other.is_quantized and other.qscheme() is ferro.per_channel_affine
        assert other is not q or dev == "cpu"  # to() its own device: itself, as PyTorch
        np.testing.assert_array_equal(other.dequantize().cpu().numpy(), q.dequantize().numpy())
    assert q.to(dev).device == ferro.device(dev) and q.to(dev).q_per_channel_scales().device == ferro.device(dev)
    model = ferro.quantization.quantize_dynamic(nn.Sequential(nn.Linear(6, 3)))
    moved = copy.deepcopy(model).to(dev)
    assert moved[0].weight().device == ferro.device(dev)
    np.testing.assert_allclose(moved(x.to(dev)).cpu().numpy(), model(x).numpy(), rtol=1e-5, atol=1e-6)


def test_quantize_dynamic_refuses_what_it_cannot_quantize():
    with pytest.raises(ValueError, match="no dynamically quantized counterpart"):
        ferro.quantization.quantize_dynamic(nn.Sequential(nn.Conv2d(1, 1, 3)), {nn.Conv2d})
    with pytest.raises(ferro.errors.DTypeError, match=r"dtype must be ferro\.qint8"):
        ferro.quantization.quantize_dynamic(nn.Linear(2, 2), {nn.Linear}, dtype=ferro.quint8)


# -- serialization --------------------------------------------------------------------------------------


def test_quantized_tensors_save_and_load_through_safetensors(dev, tmp_path):
    x = ferro.tensor(_data((4, 6)), device=dev)
    qs = [ferro.quantize_per_tensor(x, 0.05, 3, ferro.qint8),
          ferro.quantize_per_channel(x, ferro.tensor([0.1, 0.2, 0.3, 0.4], dtype=ferro.float64),
                                     ferro.tensor([0, 1, 2, 3]), 0, ferro.quint8),
          ferro.quantize_blockwise(x, 4)]
    path = str(tmp_path / "q.safetensors")
    ferro.save({"q": qs}, path)
    back = ferro.load(path)["q"]
    for a, b in zip(qs, back):
        assert b.is_quantized and b.dtype is a.dtype and b.qscheme() is a.qscheme() and b.device == a.device
        np.testing.assert_array_equal(b.int_repr().cpu().numpy(), a.int_repr().cpu().numpy())
        np.testing.assert_array_equal(b.dequantize().cpu().numpy(), a.dequantize().cpu().numpy())
    safetensors = pytest.importorskip("safetensors.numpy")
    stored = safetensors.load_file(path)  # plain tensors any safetensors reader sees: values and scales
    assert stored["q.0.int_repr"].dtype == np.int8 and stored["q.1.scales"].dtype == np.float64
    assert sorted(stored) == ["q.0.int_repr", "q.1.int_repr", "q.1.scales", "q.1.zero_points", "q.2.int_repr",
                              "q.2.scales"]


def test_a_quantized_model_state_dict_round_trips(digits_mlp):
    model, xte, _ = digits_mlp
    qmodel = ferro.quantization.quantize_dynamic(model)
    buf = io.BytesIO()
    ferro.save(qmodel.state_dict(), buf)
    buf.seek(0)
    other = ferro.quantization.quantize_dynamic(type(model)(*[type(m)() if not isinstance(m, nn.Linear)
                                                              else nn.Linear(m.in_features, m.out_features)
                                                              for m in model]))
    other.load_state_dict(ferro.load(buf))
    np.testing.assert_array_equal(other(xte).numpy(), qmodel(xte).numpy())
    first = ferro.quantization.DynamicQuantizedLinear(64, 64)  # built empty, as PyTorch's, then loaded
    first.load_state_dict(qmodel[0].state_dict())
    np.testing.assert_array_equal(first(xte).numpy(), qmodel[0](xte).numpy())
    with pytest.raises(RuntimeError, match="expected a quantized tensor of shape"):
        ferro.quantization.DynamicQuantizedLinear(64, 64).load_state_dict({"_weight": ferro.zeros(64, 64),
                                                                           "_bias": ferro.zeros(64)})


def test_a_malformed_quantized_entry_is_the_files_fault():
    from ferro.quantization._tensor import from_parts
    with pytest.raises(ValueError, match="unknown quantization scheme"):
        from_parts({"int_repr": ferro.zeros(2, dtype=ferro.int8), "dtype": "qint8", "qscheme": "per_magic"})
    with pytest.raises(ValueError, match="the values of a qint8 tensor must be a int8 tensor"):
        from_parts({"int_repr": ferro.zeros(2), "dtype": "qint8", "qscheme": "per_tensor_affine"})


def test_import_ferro_does_not_load_quantization():
    code = ("import sys, ferro; assert 'ferro.quantization' not in sys.modules; "
            "ferro.qint8; assert 'ferro.quantization' in sys.modules; "
            "assert ferro.ao.quantization.quantize_dynamic is ferro.quantization.quantize_dynamic")
    subprocess.run([sys.executable, "-c", code], check=True)
