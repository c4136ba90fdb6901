"""ferro-cpu's fused conv2d, conv_transpose2d and max_pool2d kernels (ferro_cpu/_conv.py) against torch and
the decomposition.

Each test counts the calls of the CPU device's table entries, so a silent fall
back to the decomposition fails it (and a fused call where the decomposition
should run fails the fall-back tests); values and gradients are compared with
torch's and with those of the decomposition (the record's ``decomposition``),
and second derivatives (``create_graph=True``) by ``gradgradcheck``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

import ferro
import ferro.nn.functional as F
from ferro._core.records import REGISTRY

from conftest import count_calls

torch = pytest.importorskip("torch")
TF = torch.nn.functional

RNG = np.random.default_rng(0)
DTYPES = ("float32", "float64")
TOL = {"float32": {"rtol": 2e-5, "atol": 2e-5}, "float64": {"rtol": 1e-10, "atol": 1e-11}}
NAMES = ("conv2d_forward", "conv2d_backward", "conv_transpose2d_forward", "conv_transpose2d_backward",
         "max_pool2d_forward", "max_pool2d_backward")
DECOMPOSITION = {name: REGISTRY[name].decomposition for name in ("conv2d", "conv_transpose2d", "max_pool2d")}


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, int]]:
    """Counts of the fused kernels' calls on the cpu device during the test."""
    yield count_calls(monkeypatch, ferro.tensor([0.0])._device, NAMES)


def _leaves(arrays: list[np.ndarray | None]) -> tuple[list[Any], list[Any]]:
    ours = [None if a is None else ferro.tensor(a, requires_grad=True) for a in arrays]
    theirs = [None if a is None else torch.tensor(a, requires_grad=True) for a in arrays]
    return ours, theirs


def _close(got: Any, expected: Any, dtype: str) -> None:
    exp = expected.detach().numpy() if hasattr(expected, "detach") else expected.numpy()
    g = got.detach().numpy()
    assert g.dtype == np.dtype(dtype) and g.shape == exp.shape, (g.dtype, g.shape, exp.shape)
    np.testing.assert_allclose(g, exp, **TOL[dtype])


def _forward_backward(fn: Callable[..., Any], tfn: Callable[..., Any], arrays: list[np.ndarray | None],
                      dtype: str) -> None:
    """fn on ferro and tfn on torch: same values, and the same gradients of every input for a random output
    gradient."""
    ours, theirs = _leaves(arrays)
    y, ty = fn(*ours), tfn(*theirs)
    _close(y, ty, dtype)
    g = RNG.standard_normal(tuple(y.shape)).astype(dtype)
    y.backward(ferro.tensor(g))
    ty.backward(torch.tensor(g))
    for a, ta in zip(ours, theirs):
        if a is not None:
            _close(a.grad, ta.grad, dtype)


CONV_CASES = {  # x shape, weight shape, bias, kwargs
    "plain": ((3, 4, 7, 6), (5, 4, 3, 3), True, {}),
    "stride pad": ((2, 3, 8, 9), (4, 3, 3, 2), True, {"stride": 2, "padding": (1, 2)}),
    "dilation": ((2, 2, 9, 8), (3, 2, 3, 3), False, {"padding": 2, "dilation": (2, 1)}),
    "stride dilation large pad": ((2, 2, 6, 6), (2, 2, 2, 2), True, {"stride": (1, 2), "padding": 3,
                                                                     "dilation": 2}),
    "groups": ((2, 6, 5, 5), (9, 2, 3, 3), True, {"padding": 1, "groups": 3}),
    "depthwise strided": ((2, 4, 7, 7), (4, 1, 3, 3), False, {"stride": (2, 3), "groups": 4}),
    "same odd": ((2, 3, 6, 5), (4, 3, 3, 5), True, {"padding": "same"}),
    "valid": ((1, 3, 5, 5), (2, 3, 5, 1), True, {"padding": "valid"}),
    "1x1": ((4, 8, 3, 3), (2, 8, 1, 1), True, {}),
    "padding over the kernel": ((2, 3, 4, 4), (2, 3, 1, 2), True, {"padding": (1, 2)}),  # col2im at stride 1
    # channels first (a window row of C * kW elements shorter than an output row: columns along output rows)
    "one channel": ((2, 1, 9, 12), (3, 1, 3, 3), True, {"padding": 1}),
    "one channel unpadded": ((2, 1, 9, 12), (3, 1, 3, 3), True, {}),
    "one channel strided": ((3, 1, 16, 16), (4, 1, 4, 4), False, {"stride": 2, "padding": 1}),
    "kernel over the whole input": ((5, 3, 4, 3), (2, 3, 4, 3), True, {"stride": 2}),  # a linear layer
    "channels first dilated": ((2, 2, 10, 17), (3, 2, 3, 2), True, {"stride": (2, 1), "padding": (1, 2),
                                                                    "dilation": (1, 2)}),
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", CONV_CASES)
def test_conv2d_runs_fused(calls: dict[str, int], case: str, dtype: str) -> None:
    xs, ws, has_bias, kw = CONV_CASES[case]
    arrays = [RNG.standard_normal(xs).astype(dtype), RNG.standard_normal(ws).astype(dtype),
              RNG.standard_normal(ws[0]).astype(dtype) if has_bias else None]
    _forward_backward(lambda x, w, b: F.conv2d(x, w, b, **kw), lambda x, w, b: TF.conv2d(x, w, b, **kw),
                      arrays, dtype)
    assert (calls["conv2d_forward"], calls["conv2d_backward"]) == (1, 1)


TRANSPOSED_CASES = {  # x shape, weight shape (C_in, C_out/groups, kH, kW), bias, kwargs
    "plain": ((3, 4, 5, 6), (4, 5, 3, 3), True, {}),
    "DCGAN upsampling": ((2, 8, 4, 4), (8, 4, 4, 4), False, {"stride": 2, "padding": 1}),
    "stride output_padding": ((2, 3, 5, 4), (3, 2, 3, 2), True, {"stride": (2, 3), "padding": (1, 0),
                                                                 "output_padding": (1, 2)}),
    "dilation output_padding": ((2, 2, 4, 5), (2, 3, 3, 3), True, {"dilation": 2, "output_padding": 1}),
    "groups": ((2, 6, 4, 4), (6, 2, 3, 3), True, {"stride": 2, "padding": 1, "groups": 3}),
    "padding over the kernel": ((2, 3, 6, 6), (3, 2, 2, 2), True, {"padding": 1}),
    "1x1 strided": ((2, 4, 3, 3), (4, 2, 1, 1), False, {"stride": 2}),
    "one output channel": ((3, 4, 8, 8), (4, 1, 4, 4), True, {"stride": 2, "padding": 1}),  # channels first
    "from 1x1": ((4, 5, 1, 1), (5, 3, 4, 2), True, {}),  # a linear layer
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", TRANSPOSED_CASES)
def test_conv_transpose2d_runs_fused(calls: dict[str, int], case: str, dtype: str) -> None:
    xs, ws, has_bias, kw = TRANSPOSED_CASES[case]
    c_out = ws[1] * kw.get("groups", 1)
    arrays = [RNG.standard_normal(xs).astype(dtype), RNG.standard_normal(ws).astype(dtype),
              RNG.standard_normal(c_out).astype(dtype) if has_bias else None]
    _forward_backward(lambda x, w, b: F.conv_transpose2d(x, w, b, **kw),
                      lambda x, w, b: TF.conv_transpose2d(x, w, b, **kw), arrays, dtype)
    assert (calls["conv_transpose2d_forward"], calls["conv_transpose2d_backward"]) == (1, 1)
    assert calls["conv2d_forward"] == calls["conv2d_backward"] == 0  # not the decomposition's conv2d


def test_conv_transpose2d_module_and_partial_gradients(calls: dict[str, int]) -> None:
    """nn.ConvTranspose2d runs the fused kernels; each gradient alone is torch's."""
    ferro.manual_seed(0)
    layer = ferro.nn.ConvTranspose2d(3, 2, 4, stride=2, padding=1)
    layer(ferro.randn(2, 3, 4, 4)).sum().backward()
    assert (calls["conv_transpose2d_forward"], calls["conv_transpose2d_backward"]) == (1, 1)
    x, w, b = (RNG.standard_normal(s) for s in ((2, 3, 4, 4), (3, 4, 3, 3), (4,)))
    for needs in ((True, False, False), (False, True, False), (False, False, True)):
        ours = [ferro.tensor(a, requires_grad=r) for a, r in zip((x, w, b), needs)]
        theirs = [torch.tensor(a, requires_grad=r) for a, r in zip((x, w, b), needs)]
        F.conv_transpose2d(*ours, stride=2).square().sum().backward()
        TF.conv_transpose2d(*theirs, stride=2).square().sum().backward()
        for a, ta, r in zip(ours, theirs, needs):
            assert (a.grad is not None) == r
            if r:
                _close(a.grad, ta.grad, "float64")


POOL_CASES = {  # x shape, positional args
    "2x2": ((3, 4, 8, 8), (2,)),
    "2x2 odd size": ((2, 3, 7, 9), (2,)),  # disjoint windows, the last row and column in none
    "odd size": ((2, 3, 7, 9), ((3, 2), (2, 1), 1)),
    "overlapping padded dilated": ((2, 2, 9, 8), (3, 1, 1, 2)),
    "stride 3": ((1, 2, 10, 7), (2, 3)),
}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("ties", [False, True], ids=["random", "ties"])
@pytest.mark.parametrize("case", POOL_CASES)
def test_max_pool2d_runs_fused(calls: dict[str, int], case: str, ties: bool, dtype: str) -> None:
    shape, args = POOL_CASES[case]
    x = RNG.standard_normal(shape)
    x = np.maximum(np.round(x), 0) if ties else x  # many equal maxima: the first in window order takes the grad
    _forward_backward(lambda t: F.max_pool2d(t, *args), lambda t: TF.max_pool2d(t, *args), [x.astype(dtype)],
                      dtype)
    assert (calls["max_pool2d_forward"], calls["max_pool2d_backward"]) == (1, 1)


def test_max_pool2d_nan_and_signed_zero_as_decomposition(calls: dict[str, int]) -> None:
    """NaN spreads to its window's maximum and takes the gradient (the first NaN, as the decomposition); 0.0
    and -0.0 tie, and the first one takes the gradient (the sign of a zero maximum is not checked: the
    decomposition's sum gives 0.0, torch the first one's)."""
    x = RNG.standard_normal((2, 3, 6, 6))
    x[0, 0, 1, 1] = x[0, 0, 1, 2] = x[1, 2, 4, 5] = np.nan
    x[0, 1, :2, :2] = [[-0.0, 0.0], [0.0, -0.0]]
    x[0, 1, 2:4, :2] = [[0.0, -0.0], [-1.0, -0.0]]
    leaves = [ferro.tensor(x, requires_grad=True) for _ in range(2)]
    got, want = F.max_pool2d(leaves[0], 2, 2), DECOMPOSITION["max_pool2d"](leaves[1], 2, 2)
    assert calls["max_pool2d_forward"] == 1
    np.testing.assert_array_equal(got.detach().numpy(), want.detach().numpy())
    g = ferro.tensor(RNG.standard_normal(tuple(got.shape)))
    got.backward(g)
    want.backward(g)
    np.testing.assert_array_equal(leaves[0].grad.numpy(), leaves[1].grad.numpy())
    assert calls["max_pool2d_backward"] == 1


def test_modules_run_fused(calls: dict[str, int]) -> None:
    """nn.Conv2d and nn.MaxPool2d (the demo CNN's layers) go through the fused kernels."""
    ferro.manual_seed(0)
    model = ferro.nn.Sequential(ferro.nn.Conv2d(1, 4, 3, padding=1), ferro.nn.ReLU(), ferro.nn.MaxPool2d(2),
                                ferro.nn.Conv2d(4, 6, 3, padding=1))
    model(ferro.randn(5, 1, 8, 8)).sum().backward()
    assert calls == {"conv2d_forward": 2, "conv2d_backward": 2, "conv_transpose2d_forward": 0,
                     "conv_transpose2d_backward": 0, "max_pool2d_forward": 1, "max_pool2d_backward": 1}
    assert all(p.grad is not None and p.grad.shape == p.shape for p in model.parameters())


def test_weight_only_and_input_only_gradients(calls: dict[str, int]) -> None:
    x, w, b = (RNG.standard_normal(s) for s in ((2, 3, 5, 5), (4, 3, 3, 3), (4,)))
    for needs in ((True, False, False), (False, True, False), (False, False, True)):
        ours = [ferro.tensor(a, requires_grad=r) for a, r in zip((x, w, b), needs)]
        theirs = [torch.tensor(a, requires_grad=r) for a, r in zip((x, w, b), needs)]
        F.conv2d(*ours, padding=1).square().sum().backward()
        TF.conv2d(*theirs, padding=1).square().sum().backward()
        for a, ta, r in zip(ours, theirs, needs):
            assert (a.grad is not None) == r
            if r:
                _close(a.grad, ta.grad, "float64")
    assert (calls["conv2d_forward"], calls["conv2d_backward"]) == (3, 3)


@pytest.mark.parametrize("op", ["conv2d", "conv_transpose2d", "max_pool2d"])
def test_create_graph_second_derivatives_exact(calls: dict[str, int], op: str) -> None:
    """With create_graph=True the backward runs through the decomposition: second derivatives are those of the
    decomposition (to float64 rounding: the plain backward through y runs the fused kernel) and pass
    gradgradcheck."""
    x = RNG.standard_normal((2, 4, 6, 5))
    w = RNG.standard_normal((6, 2, 3, 2))
    b = RNG.standard_normal(6)

    def run(fn: Callable[..., Any]) -> list[np.ndarray]:
        leaves = [ferro.tensor(a, requires_grad=True) for a in ((x, w, b) if op != "max_pool2d" else (x,))]
        args = ((leaves[1], leaves[2], (2, 1), 1, (1, 2), 2) if op == "conv2d"
                else (leaves[1][:4], leaves[2][:4], (2, 1), 1, (1, 0), 2, (1, 2)) if op == "conv_transpose2d"
                else ((3, 2), (2, 1), 1))
        y = fn(leaves[0], *args)
        before = calls[f"{op}_backward"]
        first = ferro.autograd.grad([(y * y).sum()], leaves, create_graph=True)
        # the recorded backward ran the decomposition; the next one goes through y's node again, plainly
        assert calls[f"{op}_backward"] == before
        total = sum(((g * g * g).sum() for g in first), ferro.tensor(0.0, dtype=ferro.float64))
        return [g.numpy() for g in ferro.autograd.grad([total], leaves)]

    fused = run(getattr(F, op))
    assert calls[f"{op}_forward"] == 1
    for got, want in zip(fused, run(DECOMPOSITION[op])):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)
    leaves = [ferro.tensor(a[:1, :2, :4, :4] if a.ndim == 4 and a is x else a, requires_grad=True)
              for a in ((x, w[:, :1], b) if op == "conv2d" else (x, w[:2, :1], b[:2]) if op == "conv_transpose2d"
                        else (x,))]
    if op == "conv2d":
        assert ferro.autograd.gradgradcheck(lambda t, ww, bb: F.conv2d(t, ww, bb, 1, 1, 1, 2), leaves)
    elif op == "conv_transpose2d":
        assert ferro.autograd.gradgradcheck(lambda t, ww, bb: F.conv_transpose2d(t, ww, bb, 2, 1, 1, 2), leaves)
    else:
        assert ferro.autograd.gradgradcheck(lambda t: F.max_pool2d(t, 2, 1, 1), leaves)


FALLBACKS = {  # op name, call, torch call: each must run the decomposition
    "conv2d unbatched": ("conv2d", lambda f, t: f.conv2d(t((3, 6, 5)), t((4, 3, 3, 3)), padding=1)),
    "conv2d same even kernel": ("conv2d", lambda f, t: f.conv2d(t((2, 3, 6, 5)), t((4, 3, 2, 3)), padding="same")),
    "conv_transpose2d unbatched": ("conv_transpose2d",
                                   lambda f, t: f.conv_transpose2d(t((3, 4, 5)), t((3, 2, 3, 3)), stride=2)),
    "max_pool2d unbatched": ("max_pool2d", lambda f, t: f.max_pool2d(t((3, 6, 5)), 2)),
}


@pytest.mark.parametrize("case", FALLBACKS)
def test_odd_cases_fall_back(calls: dict[str, int], case: str) -> None:
    op, call = FALLBACKS[case]
    seed = iter(range(100))

    def array(shape: tuple[int, ...], dtype: str) -> np.ndarray:
        return np.random.default_rng(next(seed)).standard_normal(shape).astype(dtype)

    got = call(F, lambda s, d="float64": ferro.tensor(array(s, d), requires_grad=d != "float16"))
    seed = iter(range(100))
    want = call(TF, lambda s, d="float64": torch.tensor(array(s, "float32" if d == "float16" else d)))
    assert calls[f"{op}_forward"] == 0
    tol = {"rtol": 2e-2, "atol": 2e-2} if got.dtype == ferro.float16 else TOL["float64"]
    np.testing.assert_allclose(got.detach().numpy().astype(np.float64), want.numpy().astype(np.float64), **tol)
    if got.requires_grad:
        got.sum().backward()
    assert calls[f"{op}_backward"] == 0


def test_invalid_arguments_raise_as_the_decomposition(calls: dict[str, int]) -> None:
    """Shapes the rule does not take go to the decomposition, which raises its errors."""
    x = ferro.randn(2, 3, 4, 4)
    with pytest.raises(ferro.errors.ShapeError):
        F.conv2d(x, ferro.randn(4, 2, 3, 3))
    with pytest.raises(ferro.errors.ShapeError):
        F.conv2d(x, ferro.randn(4, 3, 5, 5))
    with pytest.raises(ValueError, match="half of the kernel"):
        F.max_pool2d(x, 2, padding=2)
    with pytest.raises(ferro.errors.ShapeError):
        F.conv_transpose2d(x, ferro.randn(4, 2, 3, 3))  # 3 input channels, the weight wants 4
    with pytest.raises(ferro.errors.ShapeError, match="output_padding must be smaller"):
        F.conv_transpose2d(x, ferro.randn(3, 2, 3, 3), stride=2, output_padding=2)
    assert calls["conv2d_forward"] == calls["conv_transpose2d_forward"] == calls["max_pool2d_forward"] == 0


@pytest.mark.parametrize(("case", "keeps"), [("plain", True), ("one channel strided", True), ("groups", False),
                                             ("kernel over the whole input", False), ("plain over the limit", False),
                                             ("one channel strided over the limit", False)])
def test_weight_gradient_from_the_forwards_columns(monkeypatch: pytest.MonkeyPatch, case: str, keeps: bool) -> None:
    """Where the weight's gradient is wanted, conv2d's forward keeps its columns (one group, up to
    ``KEEP_LIMIT`` bytes) and the backward takes them (``kept=``) instead of building them again; the
    gradients are torch's either way."""
    from ferro._core.records import bind_tables
    from ferro_cpu import _conv
    if case.endswith(" over the limit"):
        case = case.removesuffix(" over the limit")
        monkeypatch.setattr(_conv, "KEEP_LIMIT", 8)
    dev = ferro.tensor([0.0])._device
    backward, seen = dev._kernels["conv2d_backward"], []

    def spy(*a: Any, **kw: Any) -> Any:
        seen.append("kept" in kw)
        return backward(*a, **kw)
    monkeypatch.setitem(dev._kernels, "conv2d_backward", spy)
    monkeypatch.setattr(dev, "_ops", bind_tables(dev._kernels, dev._dtypes, dev.backend.unsupported(dev.index)))
    monkeypatch.setattr(dev, "_fast", dev._ops)
    xs, ws, has_bias, kw = CONV_CASES[case]
    arrays = [RNG.standard_normal(xs), RNG.standard_normal(ws), RNG.standard_normal(ws[0]) if has_bias else None]
    _forward_backward(lambda x, w, b: F.conv2d(x, w, b, **kw), lambda x, w, b: TF.conv2d(x, w, b, **kw),
                      arrays, "float64")
    x = ferro.tensor(arrays[0], requires_grad=True)
    F.conv2d(x, ferro.tensor(arrays[1]), **kw).sum().backward()  # no weight gradient: nothing kept
    assert seen == [keeps, False]


@pytest.mark.parametrize("case", ["one channel unpadded", "one channel", "plain", "kernel over the whole input"])
def test_conv2d_of_a_strided_view(calls: dict[str, int], case: str) -> None:
    """An input that is a view with gaps (every other row of a taller image) gives torch's values and gradients."""
    xs, ws, has_bias, kw = CONV_CASES[case]
    tall = RNG.standard_normal((*xs[:2], 2 * xs[2], xs[3]))
    w, b = RNG.standard_normal(ws), RNG.standard_normal(ws[0]) if has_bias else None
    ours, theirs = _leaves([tall, w, b])
    y = F.conv2d(ours[0][:, :, ::2], ours[1], ours[2], **kw)
    ty = TF.conv2d(theirs[0][:, :, ::2], theirs[1], theirs[2], **kw)
    _close(y, ty, "float64")
    y.sum().backward()
    ty.sum().backward()
    for a, ta in zip(ours, theirs):
        if a is not None:
            _close(a.grad, ta.grad, "float64")
    assert (calls["conv2d_forward"], calls["conv2d_backward"]) == (1, 1)
    pooled, tpooled = F.max_pool2d(ours[0][:, :, ::2], 2), TF.max_pool2d(theirs[0][:, :, ::2], 2)
    _close(pooled, tpooled, "float64")


@pytest.mark.parametrize("case", ["plain", "stride pad", "dilation", "same odd", "padding over the kernel"])
def test_conv2d_per_sample_products(calls: dict[str, int], monkeypatch: pytest.MonkeyPatch, case: str) -> None:
    """Large images multiply their columns sample by sample into NCHW (``PER_SAMPLE`` output positions and
    up): lowered to every size here, the values and gradients are torch's."""
    from ferro_cpu import _conv
    monkeypatch.setattr(_conv, "PER_SAMPLE", 1)
    xs, ws, has_bias, kw = CONV_CASES[case]
    arrays = [RNG.standard_normal(xs), RNG.standard_normal(ws), RNG.standard_normal(ws[0]) if has_bias else None]
    _forward_backward(lambda x, w, b: F.conv2d(x, w, b, **kw), lambda x, w, b: TF.conv2d(x, w, b, **kw),
                      arrays, "float64")
    assert (calls["conv2d_forward"], calls["conv2d_backward"]) == (1, 1)
