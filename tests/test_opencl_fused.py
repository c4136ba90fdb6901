"""ferro-opencl's fused kernels (softmax, log_softmax, layer_norm, cross_entropy) against torch and the CPU backend.

Each test counts the calls of the device's table entries, so a silent fall
back to the decomposition fails it; gradients are checked against torch's,
against the CPU backend's, and by finite differences in float64.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

import ferro
import ferro.nn.functional as F

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(0)
DTYPES = ("float32", "float64")
TOL = {"float32": {"rtol": 2e-5, "atol": 2e-6}, "float64": {"rtol": 1e-11, "atol": 1e-12}}


@pytest.fixture(scope="module")
def dev(ocl: Any) -> Any:
    d = ferro.tensor([0.0], device="opencl")._device
    assert d._kernels is not None
    return d


@pytest.fixture(params=[None, 256], ids=["default-group", "group-256"])
def calls(dev: Any, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> Iterator[dict[str, int]]:
    """Counts of the fused table entries' calls during the test; run with the device's own table (on PoCL a
    work-item per row) and with one of 256 work-items per row (the local-memory reductions)."""
    from ferro_opencl._fused import fused_kernels
    table = dev._kernels if request.param is None else fused_kernels(dev.backend.runtime(dev.index), request.param)
    counts: dict[str, int] = {}
    names = ("softmax", "softmax_backward", "log_softmax", "log_softmax_backward", "layer_norm_forward",
             "layer_norm_backward", "cross_entropy_forward", "cross_entropy_backward")

    def counting(name: str, k: Callable[..., Any]) -> Callable[..., Any]:
        def run(*a: Any, **kw: Any) -> Any:
            counts[name] = counts.get(name, 0) + 1
            return k(*a, **kw)
        return run
    for n in names:
        monkeypatch.setitem(dev._kernels, n, counting(n, table[n]))
    from ferro._core.records import bind_tables  # the ops' kernels are bound once: bind the counting ones
    monkeypatch.setattr(dev, "_ops", bind_tables(dev._kernels, dev._dtypes, dev.backend.unsupported(dev.index)))
    monkeypatch.setattr(dev, "_fast", dev._ops)  # the hot path's table, restored after the test
    yield counts


def _dtype(ocl_dev: Any, name: str) -> None:
    if getattr(ferro, name) not in ocl_dev.backend.dtypes(ocl_dev.index):
        pytest.skip(f"this OpenCL device has no {name}")


def _pair(a: np.ndarray, device: str) -> tuple[ferro.Tensor, Any]:
    x = ferro.tensor(a, device=device, requires_grad=True)
    return x, torch.tensor(a, requires_grad=True)


def _close(t: ferro.Tensor, expected: Any, dtype: str) -> None:
    got = t.detach().to("cpu").numpy()
    exp = expected.detach().numpy() if hasattr(expected, "detach") else np.asarray(expected)
    assert got.shape == exp.shape, (got.shape, exp.shape)
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_allclose(got, exp, **TOL[dtype])


# -- softmax / log_softmax ------------------------------------------------------------------------


SOFTMAX_CASES = [((3, 1), -1), ((5, 7), -1), ((2, 256), -1), ((4, 1000), -1), ((1000,), 0), ((2, 3, 7), -1),
                 ((2, 3, 7), 1), ((4, 1000), 0), ((3, 5, 4), 0)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("shape", "dim"), SOFTMAX_CASES)
@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
def test_softmax_matches_torch_and_cpu(dev: Any, calls: dict[str, int], op: str, shape: tuple[int, ...], dim: int,
                                       dtype: str) -> None:
    _dtype(dev, dtype)
    a = (RNG.standard_normal(shape) * 3).astype(dtype)
    up = RNG.standard_normal(shape).astype(dtype)
    x, xt = _pair(a, "opencl")
    xc = ferro.tensor(a, requires_grad=True)
    y, yt, yc = getattr(F, op)(x, dim), getattr(torch, op)(xt, dim), getattr(F, op)(xc, dim)
    _close(y, yt, dtype)
    _close(y, yc.detach().numpy(), dtype)
    (y * ferro.tensor(up, device="opencl")).sum().backward()
    (yt * torch.tensor(up)).sum().backward()
    (yc * ferro.tensor(up)).sum().backward()
    _close(x.grad, xt.grad, dtype)
    _close(x.grad, xc.grad.numpy(), dtype)
    assert calls == {op: 1, f"{op}_backward": 1}


@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
def test_softmax_of_a_strided_view_and_an_expanded_grad(dev: Any, calls: dict[str, int], op: str) -> None:
    a = RNG.standard_normal((6, 9)).astype(np.float32)
    x, xt = _pair(a, "opencl")
    y = getattr(F, op)(x.T[:, 1:], dim=0)  # a transposed, offset view: copied to contiguous rows first
    yt = getattr(torch, op)(xt.T[:, 1:], dim=0)
    _close(y, yt, "float32")
    y.sum().backward()  # the gradient of sum() is an expanded (stride 0) array
    yt.sum().backward()
    _close(x.grad, xt.grad, "float32")
    assert calls == {op: 1, f"{op}_backward": 1}


def test_softmax_extremes(dev: Any, calls: dict[str, int]) -> None:
    a = np.array([[1e4, 0.0, -1e4], [-np.inf, 0.0, 1.0], [np.nan, 1.0, 2.0]], np.float32)
    for op in ("softmax", "log_softmax"):
        got = getattr(F, op)(ferro.tensor(a, device="opencl"), -1)
        exp = getattr(torch, op)(torch.tensor(a), -1)
        np.testing.assert_allclose(got.to("cpu").numpy(), exp.numpy(), rtol=1e-6, atol=0)
    assert calls == {"softmax": 1, "log_softmax": 1}


# -- layer_norm --------------------------------------------------------------------------------------


LN_CASES = [((3, 1), (1,)), ((5, 7), (7,)), ((2, 256), (256,)), ((4, 1000), (1000,)), ((2, 3, 7), (7,)),
            ((2, 3, 7), (3, 7)), ((7,), (7,))]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("shape", "ns"), LN_CASES)
@pytest.mark.parametrize("affine", ["none", "weight", "both"])
def test_layer_norm_matches_torch_and_cpu(dev: Any, calls: dict[str, int], shape: tuple[int, ...],
                                          ns: tuple[int, ...], affine: str, dtype: str) -> None:
    _dtype(dev, dtype)
    a = (RNG.standard_normal(shape) * 2 + 1).astype(dtype)
    up = RNG.standard_normal(shape).astype(dtype)
    x, xt = _pair(a, "opencl")
    xc = ferro.tensor(a, requires_grad=True)
    params: list[tuple[Any, Any, Any]] = []
    for _ in range({"none": 0, "weight": 1, "both": 2}[affine]):
        p = RNG.standard_normal(ns).astype(dtype)
        params.append((*_pair(p, "opencl"), ferro.tensor(p, requires_grad=True)))
    w, wt, wc = params[0] if params else (None, None, None)
    b, bt, bc = params[1] if len(params) > 1 else (None, None, None)
    eps = 1e-3
    y = F.layer_norm(x, ns, w, b, eps)
    yt = torch.nn.functional.layer_norm(xt, ns, wt, bt, eps)
    yc = F.layer_norm(xc, ns, wc, bc, eps)
    _close(y, yt, dtype)
    _close(y, yc.detach().numpy(), dtype)
    (y * ferro.tensor(up, device="opencl")).sum().backward()
    (yt * torch.tensor(up)).sum().backward()
    (yc * ferro.tensor(up)).sum().backward()
    loose = {"float32": {"rtol": 1e-4, "atol": 1e-4}, "float64": TOL["float64"]}[dtype]
    for got, ref, cpu in ((x, xt, xc), *params):
        np.testing.assert_allclose(got.grad.to("cpu").numpy(), ref.grad.numpy(), **loose)
        np.testing.assert_allclose(got.grad.to("cpu").numpy(), cpu.grad.numpy(), **loose)
    assert calls == {"layer_norm_forward": 1, "layer_norm_backward": 1}


def test_layer_norm_default_eps_and_strided_input(dev: Any, calls: dict[str, int]) -> None:
    a = RNG.standard_normal((8, 5)).astype(np.float32)
    x, xt = _pair(a, "opencl")
    y = F.layer_norm(x.T, (8,))  # not contiguous: copied first
    yt = torch.nn.functional.layer_norm(xt.T, (8,))
    _close(y, yt, "float32")
    y.sum().backward()
    yt.sum().backward()
    np.testing.assert_allclose(x.grad.to("cpu").numpy(), xt.grad.numpy(), rtol=1e-4, atol=1e-5)
    assert calls == {"layer_norm_forward": 1, "layer_norm_backward": 1}


# -- cross_entropy --------------------------------------------------------------------------------------


CE_CASES = [(5, 1), (5, 7), (3, 256), (4, 1000), (2, 5, 4), (2, 7, 3, 2), (7,)]


def _targets(shape: tuple[int, ...], ignore: int | None) -> np.ndarray:
    classes = shape[0] if len(shape) == 1 else shape[1]
    rows = () if len(shape) == 1 else (shape[0], *shape[2:])
    t = RNG.integers(0, classes, size=rows).astype(np.int64)
    if ignore is not None and t.size > 1:
        t.reshape(-1)[:: 2] = ignore
    if ignore is not None and np.all(t == ignore):  # nothing left to average (test_cross_entropy_every_target_ignored)
        t.reshape(-1)[-1] = (ignore + 1) % classes
    return t


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", CE_CASES)
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize(("weighted", "ignore"), [(False, None), (True, None), (False, -100), (True, 2)])
def test_cross_entropy_matches_torch_and_cpu(dev: Any, calls: dict[str, int], shape: tuple[int, ...],
                                             reduction: str, weighted: bool, ignore: int | None,
                                             dtype: str) -> None:
    _dtype(dev, dtype)
    classes = shape[0] if len(shape) == 1 else shape[1]
    if ignore is not None and ignore >= classes:
        ignore = -100
    a = (RNG.standard_normal(shape) * 2).astype(dtype)
    t = _targets(shape, ignore)
    wa = RNG.uniform(0.5, 2.0, classes).astype(dtype) if weighted else None
    kw = {"reduction": reduction} | ({} if ignore is None else {"ignore_index": ignore})
    x, xt = _pair(a, "opencl")
    xc = ferro.tensor(a, requires_grad=True)
    y = F.cross_entropy(x, ferro.tensor(t, device="opencl"),
                        None if wa is None else ferro.tensor(wa, device="opencl"), **kw)
    yt = torch.nn.functional.cross_entropy(xt, torch.tensor(t), None if wa is None else torch.tensor(wa), **kw)
    yc = F.cross_entropy(xc, ferro.tensor(t), None if wa is None else ferro.tensor(wa), **kw)
    _close(y, yt, dtype)
    _close(y, yc.detach().numpy(), dtype)
    up = RNG.standard_normal(tuple(yt.shape)).astype(dtype)
    (y * ferro.tensor(up, device="opencl")).sum().backward()
    (yt * torch.tensor(up)).sum().backward()
    (yc * ferro.tensor(up)).sum().backward()
    _close(x.grad, xt.grad, dtype)
    _close(x.grad, xc.grad.numpy(), dtype)
    assert calls == {"cross_entropy_forward": 1, "cross_entropy_backward": 1}


def test_cross_entropy_int32_targets_and_strided_logits(dev: Any, calls: dict[str, int]) -> None:
    a = RNG.standard_normal((9, 4)).astype(np.float32)
    t = RNG.integers(0, 9, size=4)
    x, xt = _pair(a, "opencl")
    y = F.cross_entropy(x.T, ferro.tensor(t.astype(np.int32), device="opencl"))
    yt = torch.nn.functional.cross_entropy(xt.T, torch.tensor(t))
    _close(y, yt, "float32")
    y.backward()
    yt.backward()
    _close(x.grad, xt.grad, "float32")
    assert calls == {"cross_entropy_forward": 1, "cross_entropy_backward": 1}


def test_cross_entropy_target_out_of_range_raises(dev: Any, calls: dict[str, int]) -> None:
    x = ferro.tensor(RNG.standard_normal((3, 4)).astype(np.float32), device="opencl")
    with pytest.raises(IndexError, match="out of range"):
        F.cross_entropy(x, ferro.tensor(np.array([0, 4, 1]), device="opencl")).item()
    assert calls == {"cross_entropy_forward": 1}
    np.testing.assert_allclose(F.cross_entropy(x, ferro.tensor(np.array([0, 3, 1]), device="opencl")).item(),
                               torch.nn.functional.cross_entropy(torch.tensor(x.numpy()), torch.tensor([0, 3, 1])),
                               rtol=1e-6)  # the flag was cleared: the next op is fine


def test_cross_entropy_every_target_ignored(dev: Any, calls: dict[str, int]) -> None:
    """A mean over no weight is nan (0 / 0); the ignored rows' gradients are 0, as torch gives for a batch."""
    a = RNG.standard_normal((3, 4)).astype(np.float32)
    t = np.array([1, 1, 1])
    for reduction in ("mean", "sum", "none"):
        x, xt = _pair(a, "opencl")
        y = F.cross_entropy(x, ferro.tensor(t, device="opencl"), ignore_index=1, reduction=reduction)
        yt = torch.nn.functional.cross_entropy(xt, torch.tensor(t), ignore_index=1, reduction=reduction)
        _close(y, yt, "float32")  # mean: 0 / 0 = nan
        y.sum().backward()
        yt.sum().backward()
        _close(x.grad, xt.grad, "float32")
    assert calls == {"cross_entropy_forward": 3, "cross_entropy_backward": 3}


def test_label_smoothing_and_float_targets_run_the_decomposition(dev: Any, calls: dict[str, int]) -> None:
    a = RNG.standard_normal((3, 4)).astype(np.float32)
    t = np.array([0, 3, 1])
    got = F.cross_entropy(ferro.tensor(a, device="opencl"), ferro.tensor(t, device="opencl"), label_smoothing=0.1)
    exp = torch.nn.functional.cross_entropy(torch.tensor(a), torch.tensor(t), label_smoothing=0.1)
    _close(got, exp, "float32")
    probs = RNG.dirichlet(np.ones(4), size=3).astype(np.float32)
    got = F.cross_entropy(ferro.tensor(a, device="opencl"), ferro.tensor(probs, device="opencl"))
    _close(got, torch.nn.functional.cross_entropy(torch.tensor(a), torch.tensor(probs)), "float32")
    assert "cross_entropy_forward" not in calls  # the decomposition (whose log_softmax is fused) ran
    assert calls["log_softmax"] == 2


# -- finite differences and double backward (float64) -------------------------------------------------


def _need_f64(dev: Any) -> None:
    _dtype(dev, "float64")


def test_gradcheck_float64(dev: Any, calls: dict[str, int]) -> None:
    _need_f64(dev)
    x = ferro.tensor(RNG.standard_normal((2, 3, 4)), device="opencl", requires_grad=True)
    w = ferro.tensor(RNG.standard_normal(4), device="opencl", requires_grad=True)
    b = ferro.tensor(RNG.standard_normal(4), device="opencl", requires_grad=True)
    t = ferro.tensor(np.array([[0, 2, 1, -100], [1, 1, 0, 2]]), device="opencl")
    cw = ferro.tensor(RNG.uniform(0.5, 2, 3), device="opencl")
    assert ferro.autograd.gradcheck(lambda v: F.softmax(v, 1), [x])
    assert ferro.autograd.gradcheck(lambda v: F.log_softmax(v, -1), [x])
    assert ferro.autograd.gradcheck(lambda v, ww, bb: F.layer_norm(v, (4,), ww, bb), [x, w, b])
    for reduction in ("mean", "sum", "none"):
        assert ferro.autograd.gradcheck(lambda v, r=reduction: F.cross_entropy(v, t, cw, reduction=r), [x[:, :3]])
    assert calls["softmax_backward"] and calls["log_softmax_backward"] and calls["layer_norm_backward"]
    assert calls["cross_entropy_backward"]


def test_gradgradcheck_goes_through_the_decomposition(dev: Any, calls: dict[str, int]) -> None:
    _need_f64(dev)
    x = ferro.tensor(RNG.standard_normal((2, 5)), device="opencl", requires_grad=True)
    w = ferro.tensor(RNG.standard_normal(5), device="opencl", requires_grad=True)
    assert ferro.autograd.gradgradcheck(lambda v: F.softmax(v, -1), [x])
    assert ferro.autograd.gradgradcheck(lambda v, ww: F.layer_norm(v, (5,), ww), [x, w])
    assert calls["softmax"] and calls["layer_norm_forward"]


# -- the kernels on their own: errors -------------------------------------------------------------------


def test_kernel_errors(dev: Any) -> None:
    k = dev._kernels
    x = ferro.tensor(np.ones((2, 3), np.float32), device="opencl")._data
    with pytest.raises(IndexError, match=r"dimension out of range.*got 2"):
        k["softmax"](x, 2)
    with pytest.raises(ValueError, match="normalized_shape"):
        k["layer_norm_forward"](x, (2,), None, None, 1e-5)
    with pytest.raises(ValueError, match="target of shape"):
        k["cross_entropy_forward"](x, ferro.tensor(np.zeros(3, np.int64), device="opencl")._data, None, -100)
    with pytest.raises(TypeError, match="int32"):
        k["softmax"](ferro.tensor(np.ones((2, 3), np.int32), device="opencl")._data, -1)
