"""The public ``conv2d`` / ``conv_transpose2d`` / ``max_pool2d`` / ``batch_norm`` fronts (``ferro/_ops/fused.py``):
positional arguments, as the modules pass them, run the fused kernels without the entry and the op's rule (the
rule's calls are counted), with PyTorch's values and gradients; the geometry's normalization is kept per call
site, never for a mutable or a look-alike argument (``True``, ``1.0``); anything else goes the entry's way, with
its named errors. ``BatchNorm2d`` counts its batches in place (by ``add_`` for a counter that is a view)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import ferro
import ferro.nn.functional as F
from ferro._core.records import REGISTRY

from conftest import count_calls

torch = pytest.importorskip("torch")
TF = torch.nn.functional

RNG = np.random.default_rng(3)
TOL = {"float32": {"rtol": 2e-5, "atol": 2e-5}, "float64": {"rtol": 1e-10, "atol": 1e-11},
       "float16": {"rtol": 2e-3, "atol": 2e-3}}
NAMES = ("conv2d_forward", "conv2d_backward", "conv_transpose2d_forward", "conv_transpose2d_backward",
         "batch_norm_forward", "batch_norm_backward", "max_pool2d_forward", "max_pool2d_backward")


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, int]]:
    """Counts of the fused kernels' calls and of the ops' rules (the entry's path) during the test."""
    counts = count_calls(monkeypatch, ferro.tensor([0.0])._device, NAMES)
    for name in ("conv2d", "conv_transpose2d", "batch_norm", "max_pool2d"):
        op = REGISTRY[name]
        rule = op.rule

        def counting(*a: Any, _rule: Any = rule, _name: str = name, **kw: Any) -> Any:
            counts[f"{_name} rule"] += 1
            return _rule(*a, **kw)
        counts[f"{name} rule"] = 0
        monkeypatch.setattr(op, "rule", counting)
    yield counts


CASES = {  # op, x shape, weight shape, bias, positional geometry
    "conv2d resnet": ("conv2d", (4, 6, 8, 8), (6, 6, 3, 3), False, ((1, 1), (1, 1), (1, 1), 1)),
    "conv2d ints": ("conv2d", (2, 3, 7, 6), (5, 3, 3, 2), True, (2, 1)),
    "conv2d groups dilation": ("conv2d", (2, 6, 9, 9), (9, 2, 3, 3), True, ((1, 2), 2, (2, 1), 3)),
    "conv2d same": ("conv2d", (2, 3, 6, 5), (4, 3, 3, 5), True, (1, "same")),
    "conv2d valid": ("conv2d", (1, 3, 5, 5), (2, 3, 5, 1), False, (1, "valid", 1, 1)),
    "conv_transpose2d dcgan": ("conv_transpose2d", (3, 8, 4, 4), (8, 4, 4, 4), False, ((2, 2), (1, 1), (0, 0), 1,
                                                                                       (1, 1))),
    "conv_transpose2d extra groups": ("conv_transpose2d", (2, 4, 5, 5), (4, 3, 3, 3), True, (2, 1, 1, 2)),
    "conv_transpose2d dilation": ("conv_transpose2d", (2, 2, 4, 3), (2, 3, 2, 3), True, (1, 0, 0, 1, 2)),
}


def _pair(name: str, dtype: str) -> tuple[Any, ...]:
    op, xs, ws, bias, geometry = CASES[name]
    arrays = [RNG.standard_normal(s).astype(dtype) for s in (xs, ws)]
    arrays.append(RNG.standard_normal(ws[0] if op == "conv2d" else ws[1] * geometry[3]).astype(dtype)
                  if bias else None)
    ours = [None if a is None else ferro.tensor(a, requires_grad=True) for a in arrays]
    theirs = [None if a is None else torch.tensor(a, requires_grad=True) for a in arrays]
    return op, geometry, ours, theirs


def _close(got: Any, expected: Any, dtype: str) -> None:
    g, e = got.detach().numpy(), expected.detach().numpy()
    assert g.dtype == np.dtype(dtype) and g.shape == e.shape, (g.dtype, g.shape, e.shape)
    np.testing.assert_allclose(g, e, **TOL[dtype])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", list(CASES))
def test_front_values_and_gradients(name: str, dtype: str, calls: dict[str, int]) -> None:
    op, geometry, ours, theirs = _pair(name, dtype)
    for _ in range(2):  # the second call finds its geometry kept
        for t in (*ours, *theirs):
            if t is not None:
                t.grad = None
        y = getattr(F, op)(*ours, *geometry)
        ty = getattr(TF, op)(*theirs, *geometry)
        _close(y, ty, dtype)
        g = RNG.standard_normal(tuple(y.shape)).astype(dtype)
        y.backward(ferro.tensor(g))
        ty.backward(torch.tensor(g))
        for a, ta in zip(ours, theirs):
            if a is not None:
                _close(a.grad, ta.grad, dtype)
    assert calls[f"{op}_forward"] == 2 and calls[f"{op}_backward"] == 2, calls
    assert calls[f"{op} rule"] == 0, calls  # the front ran them, not the entry


@pytest.mark.parametrize("name", ["conv2d resnet", "conv_transpose2d dcgan"])
def test_front_no_grad_and_float16(name: str, calls: dict[str, int]) -> None:
    op, geometry, ours, _ = _pair(name, "float32")
    x, w = (t.detach() for t in ours[:2])
    with ferro.no_grad():
        y = getattr(F, op)(x, ours[1], None, *geometry)
    assert y.grad_fn is None and not y.requires_grad
    expected = getattr(TF, op)(torch.tensor(x.numpy()).half().float(), torch.tensor(w.numpy()).half().float(), None,
                               *geometry)
    y16 = getattr(F, op)(x.half(), w.half(), None, *geometry)
    _close(y16, expected.half(), "float16")
    assert calls[f"{op}_forward"] == 2 and calls[f"{op} rule"] == 0, calls


def test_modules_take_the_front(calls: dict[str, int]) -> None:
    conv, tconv = ferro.nn.Conv2d(3, 4, 3, padding=1), ferro.nn.ConvTranspose2d(4, 2, 4, 2, 1, bias=False)
    x = ferro.randn(2, 3, 6, 6)
    tconv(conv(x)).sum().backward()
    tc, ttc = torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.ConvTranspose2d(4, 2, 4, 2, 1, bias=False)
    with torch.no_grad():
        for ours, theirs in ((conv, tc), (tconv, ttc)):
            for n, p in ours.named_parameters():
                getattr(theirs, n).copy_(torch.tensor(p.detach().numpy()))
    tx = torch.tensor(x.numpy())
    ttc(tc(tx)).sum().backward()
    _close(conv.weight.grad, tc.weight.grad, "float32")
    _close(tconv.weight.grad, ttc.weight.grad, "float32")
    assert calls["conv2d_forward"] == calls["conv_transpose2d_forward"] == 1, calls
    assert calls["conv2d rule"] == calls["conv_transpose2d rule"] == 0, calls


def test_kept_geometry_is_never_a_look_alike(calls: dict[str, int]) -> None:
    x, w = ferro.randn(1, 2, 5, 5), ferro.randn(3, 2, 3, 3)
    tx, tw = torch.tensor(x.numpy()), torch.tensor(w.numpy())
    stride = [1, 1]
    y = F.conv2d(x, w, None, stride, 1)  # a list: normalized for this call only
    stride[:] = [2, 2]
    y2 = F.conv2d(x, w, None, stride, 1)
    _close(y, TF.conv2d(tx, tw, None, 1, 1), "float32")
    _close(y2, TF.conv2d(tx, tw, None, 2, 1), "float32")
    F.conv2d(x, w, None, 1, 1)  # an int geometry, kept
    with pytest.raises(Exception) as err:  # PyTorch: TypeError too
        F.conv2d(x, w, None, 1.0, 1)
    assert "conv2d" in str(err.value)
    assert calls["conv2d_forward"] == 3, calls


@pytest.mark.parametrize("call, words", [
    (lambda: F.conv2d(ferro.randn(1, 3, 5, 5), ferro.randn(2, 4, 3, 3), None, 1, 1), ("conv2d",)),
    (lambda: F.conv2d(ferro.randn(2, 3, 5, 5), ferro.randn(4, 3, 3, 3), ferro.randn(5), 1, 0),
     ("conv2d", "bias")),
    (lambda: F.conv2d(ferro.randn(1, 1, 2, 2), ferro.randn(1, 1, 3, 3), None, 1, 0), ("conv2d",)),
    (lambda: F.conv_transpose2d(ferro.randn(2, 3, 5, 5), ferro.randn(3, 4, 3, 3), ferro.randn(5), 1, 0),
     ("conv_transpose2d", "bias")),
])
def test_front_errors_name_the_op(call: Any, words: tuple[str, ...]) -> None:
    with pytest.raises(Exception) as err:
        call()
    assert all(w in str(err.value) for w in words), err.value


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_batch_norm_module_takes_the_front(dtype: str, calls: dict[str, int]) -> None:
    ours = ferro.nn.BatchNorm2d(3, momentum=0.3).to(getattr(ferro, dtype))
    theirs = torch.nn.BatchNorm2d(3, momentum=0.3).to(getattr(torch, dtype))
    with torch.no_grad():
        theirs.weight.copy_(torch.tensor([0.5, 2.0, -1.0])), theirs.bias.copy_(torch.tensor([0.1, 0.0, -0.3]))
    ours.load_state_dict({k: ferro.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    version = ours.num_batches_tracked._version
    for step in range(2):
        x = RNG.standard_normal((4, 3, 5, 6)).astype(dtype) * 2 + step
        g = RNG.standard_normal(x.shape).astype(dtype)
        fx, tx = ferro.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        y, ty = ours(fx), theirs(tx)
        _close(y, ty, dtype)
        y.backward(ferro.tensor(g))
        ty.backward(torch.tensor(g))
        _close(fx.grad, tx.grad, dtype)
    for name, t in theirs.state_dict().items():
        np.testing.assert_allclose(getattr(ours, name).detach().numpy(), t.numpy(), **TOL[dtype])
    _close(ours.weight.grad, theirs.weight.grad, dtype)
    _close(ours.bias.grad, theirs.bias.grad, dtype)
    assert int(ours.num_batches_tracked) == 2 and ours.num_batches_tracked._version == version + 2
    assert calls["batch_norm_forward"] == calls["batch_norm_backward"] == 2, calls
    assert calls["batch_norm rule"] == 0, calls
    ours.eval()
    fx = ferro.tensor(x)
    _close(ours(fx), theirs.eval()(torch.tensor(x)), dtype)  # the running statistics, by the front as well
    assert int(ours.num_batches_tracked) == 2 and calls["batch_norm_forward"] == 3 and calls["batch_norm rule"] == 0


def test_batch_norm_counter_views_errors_and_fallback() -> None:
    bn = ferro.nn.BatchNorm2d(2)
    x = ferro.randn(3, 2, 4, 4)
    counter = bn.num_batches_tracked
    view = counter.view(1)  # a view of the counter sees the count
    bn(x)
    assert int(counter) == 1 and int(view[0]) == 1
    bn.num_batches_tracked = view[0]  # a counter that is itself a view: counted by add_, into its base
    bn(x)
    assert int(counter) == 2 and int(bn.num_batches_tracked) == 2
    with pytest.raises(Exception) as err:  # a bad call still names the op
        F.batch_norm(x, bn.running_mean, bn.running_var, ferro.randn(3), None, True, 0.1, 1e-5)
    assert "batch_norm" in str(err.value)
    half = F.batch_norm(x.half(), None, None, None, None, True, 0.1, 1e-5)  # float16: the decomposition
    expected = TF.batch_norm(torch.tensor(x.numpy()).half().float(), None, None, None, None, True, 0.1, 1e-5)
    _close(half, expected.half(), "float16")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("geometry", [(2,), (2, None), (3, 2, 1), ((2, 3), (1, 2), (1, 0), (2, 1))])
def test_max_pool2d_front(geometry: tuple[Any, ...], dtype: str, calls: dict[str, int]) -> None:
    x = RNG.standard_normal((2, 3, 9, 8)).astype(dtype)
    g_shape = tuple(TF.max_pool2d(torch.tensor(x), *geometry).shape)
    for _ in range(2):  # the second call finds its geometry kept
        fx, tx = ferro.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        y, ty = F.max_pool2d(fx, *geometry), TF.max_pool2d(tx, *geometry)
        _close(y, ty, dtype)
        g = RNG.standard_normal(g_shape).astype(dtype)
        y.backward(ferro.tensor(g))
        ty.backward(torch.tensor(g))
        _close(fx.grad, tx.grad, dtype)
    assert calls["max_pool2d_forward"] == calls["max_pool2d_backward"] == 2, calls
    assert calls["max_pool2d rule"] == 0, calls


def test_max_pool2d_module_and_fallbacks(calls: dict[str, int]) -> None:
    x = RNG.standard_normal((2, 3, 6, 6)).astype("float32")
    _close(ferro.nn.MaxPool2d(2)(ferro.tensor(x)), torch.nn.MaxPool2d(2)(torch.tensor(x)), "float32")
    y16 = F.max_pool2d(ferro.tensor(x).half(), 3, 2, 1)
    _close(y16, TF.max_pool2d(torch.tensor(x).half().float(), 3, 2, 1).half(), "float16")
    assert calls["max_pool2d_forward"] == 2 and calls["max_pool2d rule"] == 0, calls
    y, i = F.max_pool2d(ferro.tensor(x), 2, 2, 0, 1, False, True)  # indices: the entry's way
    ty, ti = TF.max_pool2d(torch.tensor(x), 2, 2, 0, 1, False, True)
    _close(y, ty, "float32")
    np.testing.assert_array_equal(i.numpy(), ti.numpy())
    with pytest.raises(Exception) as err:  # a padding over half the window: the entry's named error
        F.max_pool2d(ferro.tensor(x), 2, 2, 2)
    assert "max_pool2d" in str(err.value) and "pad" in str(err.value)


def test_fronts_leave_calls_under_a_layer_to_the_entry(calls: dict[str, int]) -> None:
    """autocast is a dispatch layer: the fronts hand the calls of the ops it wants (conv2d) to the entry, which
    casts as PyTorch's; max_pool2d, which it leaves alone, still takes the front."""
    x, w = ferro.randn(2, 2, 5, 5), ferro.randn(3, 2, 3, 3)
    with ferro.autocast("cpu", dtype=ferro.bfloat16):
        y = F.conv2d(x, w, None, 1, 1)
        pooled = F.max_pool2d(x, 2)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        ty = TF.conv2d(torch.tensor(x.numpy()), torch.tensor(w.numpy()), None, 1, 1)
        tpooled = TF.max_pool2d(torch.tensor(x.numpy()), 2)
    assert str(y.dtype) == "ferro.bfloat16" and ty.dtype == torch.bfloat16
    assert str(pooled.dtype) == "ferro.float32" and tpooled.dtype == torch.float32
    np.testing.assert_allclose(y.float().numpy(), ty.float().numpy(), rtol=2e-2, atol=5e-2)
    assert calls["conv2d rule"] == 1 and calls["max_pool2d rule"] == 0, calls
    assert calls["conv2d_forward"] == calls["max_pool2d_forward"] == 1, calls
