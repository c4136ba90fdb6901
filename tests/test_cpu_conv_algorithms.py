"""ferro-cpu's convolution algorithms chosen by shape, against torch, in float32 and float64:

- the shifted-product conv2d (ferro_cpu/_conv_shifted.py): the shapes that select it, the geometries that
  must fall back to im2col, and a non-finite input, whose weight gradient the exact path computes;
- the same-width products (``rows_forward`` / ``rows_weight_grad`` in ferro_cpu/_conv_shifted.py): small
  images whose output rows keep the input's width, stacked from a row-padded grid, and the shapes that keep
  im2col;
- the strided input gradient as one product of sub-kernels (``by_sub_kernels`` in ferro_cpu/_conv.py), which
  is also conv_transpose2d's forward: kernels a multiple of the stride select it, others fall back.

Each test counts the fused kernels' calls and the algorithm's own runs (``_conv_shifted.RAN``,
``_conv.RAN``), so a silent fall back fails a selecting case and a run fails a fall-back case.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import ferro
import ferro.nn.functional as F
from ferro_cpu import _conv, _conv_shifted

from conftest import count_calls

torch = pytest.importorskip("torch")
TF = torch.nn.functional

RNG = np.random.default_rng(1)
TOL = {"float32": {"rtol": 5e-5, "atol": 5e-5}, "float64": {"rtol": 1e-10, "atol": 1e-10}}


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, int]]:
    yield count_calls(monkeypatch, ferro.tensor([0.0])._device,
                      ("conv2d_forward", "conv2d_backward", "conv_transpose2d_forward", "conv_transpose2d_backward"))


def _check(xs: tuple[int, ...], ws: tuple[int, ...], has_bias: bool, kw: dict[str, Any], dtype: str,
           x: np.ndarray | None = None, op: str = "conv2d") -> None:
    """``op`` on ferro and torch: the same output and gradients of x, the weight and the bias."""
    c_out = ws[1] * kw.get("groups", 1) if op == "conv_transpose2d" else ws[0]
    arrays = [RNG.standard_normal(xs).astype(dtype) if x is None else x, RNG.standard_normal(ws).astype(dtype),
              RNG.standard_normal(c_out).astype(dtype) if has_bias else None]
    ours = [None if a is None else ferro.tensor(a, requires_grad=True) for a in arrays]
    theirs = [None if a is None else torch.tensor(a, requires_grad=True) for a in arrays]
    y, ty = getattr(F, op)(*ours, **kw), getattr(TF, op)(*theirs, **kw)
    np.testing.assert_allclose(y.detach().numpy(), ty.detach().numpy(), **TOL[dtype])
    g = RNG.standard_normal(tuple(ty.shape)).astype(dtype)
    y.backward(ferro.tensor(g))
    ty.backward(torch.tensor(g))
    for a, ta in zip(ours, theirs):
        if a is not None:
            assert a.grad.numpy().dtype == np.dtype(dtype)
            np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), **TOL[dtype])


def _runs() -> tuple[int, int]:
    return _conv_shifted.RAN["forward"], _conv_shifted.RAN["weight_grad"]


SHIFTED = {  # x shape, weight shape, bias, kwargs, shifted forwards: each selects the shifted products, and
    # at stride 1 the input's gradient is the full convolution of grad, a second shifted forward where grad's
    # channels (the weight's outputs) are in range and the full padding (d * (k - 1) - p) is not negative
    "3x3 same": ((2, 16, 24, 24), (16, 16, 3, 3), True, {"padding": 1}, 2),
    "unpadded 5x5": ((2, 8, 28, 27), (12, 8, 5, 5), False, {}, 2),
    "dilated uneven": ((2, 12, 26, 30), (9, 12, 3, 2), True, {"padding": (2, 1), "dilation": (2, 3)}, 2),
    "padding over the kernel": ((1, 32, 22, 24), (8, 32, 2, 3), True, {"padding": (3, 0)}, 1),
    "1x1": ((2, 24, 24, 24), (4, 24, 1, 1), True, {}, 1),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", SHIFTED)
@pytest.mark.parametrize("block", [_conv_shifted.BLOCK, 1, 0])  # a block of one image; 0: the whole batch, kept
def test_shifted_conv2d_matches_torch(calls: dict[str, int], monkeypatch: pytest.MonkeyPatch, case: str, dtype: str,
                                      block: int) -> None:
    monkeypatch.setattr(_conv_shifted, "BLOCK", block)
    monkeypatch.setattr(_conv_shifted, "ROWS_BLOCK", 0)  # (else the same-width weight gradient runs)
    xs, ws, has_bias, kw, forwards = SHIFTED[case]
    before = _runs()
    _check(xs, ws, has_bias, kw, dtype)
    assert (calls["conv2d_forward"], calls["conv2d_backward"]) == (1, 1)
    assert tuple(a - b for a, b in zip(_runs(), before)) == (forwards, 1)


def test_shifted_blocks_partial_last_block(monkeypatch: pytest.MonkeyPatch) -> None:
    """Blocks of two images over five: the last block holds one (its grid's second image is stale)."""
    xs, ws = (5, 8, 24, 24), (6, 8, 3, 3)
    monkeypatch.setattr(_conv_shifted, "BLOCK", 2 * 9 * 8 * 26 * 26 * 8)  # two images' float64 stacks
    monkeypatch.setattr(_conv_shifted, "ROWS_BLOCK", 0)
    before = _runs()
    _check(xs, ws, True, {"padding": 1}, "float64")
    assert tuple(a - b for a, b in zip(_runs(), before)) == (1, 1)  # (grad's 6 channels: not shifted)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_shifted_conv_transpose2d_at_stride_1(calls: dict[str, int], monkeypatch: pytest.MonkeyPatch,
                                              dtype: str) -> None:
    """A stride-1 transposed convolution of 16 channels on a large image: its forward (conv2d's full
    convolution), its input gradient (conv2d) and its weight gradient all take the shifted products."""
    monkeypatch.setattr(_conv_shifted, "ROWS_BLOCK", 0)
    before = _runs()
    _check((2, 16, 22, 24), (16, 12, 3, 3), True, {"padding": 1}, dtype, op="conv_transpose2d")
    assert (calls["conv_transpose2d_forward"], calls["conv_transpose2d_backward"]) == (1, 1)
    assert tuple(a - b for a, b in zip(_runs(), before)) == (2, 1)


FALLBACK = {  # geometries the shifted products do not take
    "strided": ((2, 16, 48, 48), (8, 16, 3, 3), True, {"stride": 2, "padding": 1}),
    "groups": ((2, 16, 24, 24), (16, 8, 3, 3), True, {"padding": 1, "groups": 2}),
    "few channels": ((2, 4, 24, 24), (4, 4, 3, 3), True, {"padding": 1}),
    "many channels": ((1, 40, 24, 24), (4, 40, 3, 3), False, {"padding": 1}),
    "small image": ((2, 16, 16, 16), (4, 16, 3, 3), True, {"padding": 1}),
}


@pytest.mark.parametrize("case", FALLBACK)
def test_other_geometries_fall_back(calls: dict[str, int], case: str) -> None:
    xs, ws, has_bias, kw = FALLBACK[case]
    before = _runs()
    _check(xs, ws, has_bias, kw, "float64")
    assert (calls["conv2d_forward"], calls["conv2d_backward"]) == (1, 1)
    assert _runs() == before


@pytest.mark.parametrize("value", [np.inf, np.nan])
def test_non_finite_input_weight_gradient_is_exact(calls: dict[str, int], monkeypatch: pytest.MonkeyPatch,
                                                   value: float) -> None:
    """An infinite or NaN input next to the border meets the padded grid's zero gradients in the shifted
    products; the weight's gradient is then computed by the exact path, as torch's."""
    monkeypatch.setattr(_conv_shifted, "ROWS_BLOCK", 0)
    x = RNG.standard_normal((2, 8, 24, 24))
    x[1, 3, 0, 23] = value
    before = _runs()
    _check(x.shape, (8, 8, 3, 3), False, {"padding": 1}, "float64", x=x)
    assert _runs()[1] == before[1] + 1  # the shifted weight gradient ran, gave a non-finite result, fell back


SUB_KERNELS = {  # op, x shape, weight shape, bias, kwargs: the strided input gradient by sub-kernels
    "conv2d DCGAN": ("conv2d", (2, 8, 16, 16), (16, 8, 4, 4), False, {"stride": 2, "padding": 1}),
    "conv2d unpadded odd size": ("conv2d", (2, 5, 13, 11), (6, 5, 4, 6), True, {"stride": (2, 3)}),
    "conv2d wide padding": ("conv2d", (2, 4, 9, 10), (3, 4, 2, 4), True, {"stride": 2, "padding": (3, 1)}),
    "conv2d stride over one axis": ("conv2d", (2, 6, 10, 9), (4, 6, 4, 3), True, {"stride": (2, 1),
                                                                                "padding": (1, 0)}),
    "transposed DCGAN": ("conv_transpose2d", (2, 16, 8, 8), (16, 8, 4, 4), False, {"stride": 2, "padding": 1}),
    "transposed output_padding": ("conv_transpose2d", (2, 6, 5, 4), (6, 4, 4, 6), True,
                                  {"stride": (2, 3), "padding": (1, 2), "output_padding": (1, 2)}),
    "transposed unpadded": ("conv_transpose2d", (3, 4, 3, 5), (4, 5, 2, 2), True, {"stride": 2}),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", SUB_KERNELS)
def test_strided_input_gradient_by_sub_kernels(calls: dict[str, int], case: str, dtype: str) -> None:
    op, xs, ws, has_bias, kw = SUB_KERNELS[case]
    before = _conv.RAN["sub_kernels"]
    _check(xs, ws, has_bias, kw, dtype, op=op)
    assert (calls[f"{op}_forward"], calls[f"{op}_backward"]) == (1, 1)
    assert _conv.RAN["sub_kernels"] == before + 1  # conv2d's input gradient, conv_transpose2d's forward


SPREAD = {  # the kernel not a multiple of the stride, dilated, grouped: the spread of each output instead
    "odd kernel": ("conv2d", (2, 8, 11, 11), (4, 8, 3, 3), True, {"stride": 2, "padding": 1}),
    "dilated": ("conv2d", (2, 8, 12, 12), (4, 8, 2, 2), True, {"stride": 2, "dilation": 2}),
    "groups": ("conv_transpose2d", (2, 8, 5, 5), (8, 2, 4, 4), True, {"stride": 2, "padding": 1, "groups": 2}),
}


@pytest.mark.parametrize("case", SPREAD)
def test_other_strided_input_gradients_spread(calls: dict[str, int], case: str) -> None:
    op, xs, ws, has_bias, kw = SPREAD[case]
    before = _conv.RAN["sub_kernels"]
    _check(xs, ws, has_bias, kw, "float64", op=op)
    assert (calls[f"{op}_forward"], calls[f"{op}_backward"]) == (1, 1)
    assert _conv.RAN["sub_kernels"] == before


BLOCKED = {  # x shape, weight shape, bias, kwargs, blocked forwards: one group and fewer than _conv.PER_SAMPLE
    # output positions take the blocked columns (the forward keeps the padded input, the weight's gradient builds
    # its own); at stride 1 the input's gradient, the full convolution of grad, is a second one where grad's
    # channels make window rows longer than output rows
    "ResNet 3x3": ((3, 16, 16, 16), (16, 16, 3, 3), False, {"padding": 1}, 2),
    "strided 4x4, 64 positions": ((2, 16, 16, 16), (32, 16, 4, 4), True, {"stride": 2, "padding": 1}, 1),
    "strided 4x4, 16 positions": ((3, 32, 8, 8), (8, 32, 4, 4), True, {"stride": 2, "padding": 1}, 1),
    "dilated uneven": ((2, 16, 13, 11), (5, 16, 3, 2), True, {"padding": (2, 1), "dilation": (2, 3)}, 1),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", BLOCKED)
@pytest.mark.parametrize("block", [_conv.BLOCK, 1])  # (1 byte: one image a block)
def test_blocked_columns_match_torch(calls: dict[str, int], monkeypatch: pytest.MonkeyPatch, case: str, dtype: str,
                                     block: int) -> None:
    monkeypatch.setattr(_conv, "BLOCK", block)
    monkeypatch.setattr(_conv_shifted, "ROWS_BLOCK", 0)  # (the ResNet shape takes the same-width products)
    xs, ws, has_bias, kw, forwards = BLOCKED[case]
    before = dict(_conv.RAN)
    _check(xs, ws, has_bias, kw, dtype)
    assert (calls["conv2d_forward"], calls["conv2d_backward"]) == (1, 1)
    assert _conv.RAN["blocked"] - before["blocked"] == forwards
    assert _conv.RAN["blocked_weight_grad"] - before["blocked_weight_grad"] == 1


def test_blocked_columns_partial_last_block(monkeypatch: pytest.MonkeyPatch) -> None:
    """Blocks of two images over five: the last block holds one."""
    xs, ws = (5, 8, 10, 10), (4, 8, 3, 3)
    monkeypatch.setattr(_conv, "BLOCK", 2 * 10 * 10 * 9 * 8 * 8)  # two images' float64 columns
    before = dict(_conv.RAN)
    _check(xs, ws, True, {"padding": 1}, "float64")
    assert _conv.RAN["blocked_weight_grad"] == before["blocked_weight_grad"] + 1


@pytest.mark.parametrize("case", ["groups", "large image"])
def test_blocked_columns_other_geometries(case: str) -> None:
    """Grouped convolutions and images of PER_SAMPLE positions and more keep their own paths."""
    xs, ws, kw = {"groups": ((2, 8, 12, 12), (8, 4, 3, 3), {"padding": 1, "groups": 2}),
                  "large image": ((1, 4, 24, 24), (4, 4, 3, 3), {"padding": 1})}[case]
    before = dict(_conv.RAN)
    _check(xs, ws, True, kw, "float64")
    assert (_conv.RAN["blocked"], _conv.RAN["blocked_weight_grad"]) == (before["blocked"],
                                                                        before["blocked_weight_grad"])


CHANNELS_FIRST = {  # op, x shape, weight shape, bias, kwargs, column builds: few channels and output rows longer
    # than a channels-last window row take columns along output rows, (N, C*kh*kw, OH*OW), and one batched product
    # into NCHW; conv2d's weight gradient multiplies the kept columns per sample (a second build where they are not
    # kept); a transposed convolution builds them for its input gradient (conv2d of grad) and its weight gradient
    "DCGAN D1": ("conv2d", (3, 1, 32, 32), (16, 1, 4, 4), False, {"stride": 2, "padding": 1}, 1),
    "digits 5x5": ("conv2d", (2, 1, 28, 28), (8, 1, 5, 5), True, {}, 1),
    "two channels, dilated": ("conv2d", (2, 2, 20, 21), (3, 2, 3, 2), True,
                              {"stride": (1, 2), "padding": (2, 0), "dilation": (2, 1)}, 1),
    "transposed DCGAN G4": ("conv_transpose2d", (2, 16, 16, 16), (16, 1, 4, 4), False, {"stride": 2, "padding": 1},
                            2),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", CHANNELS_FIRST)
@pytest.mark.parametrize("keep", [_conv.KEEP_LIMIT, 0])  # 0: the weight's gradient builds its columns again
def test_channels_first_columns_match_torch(calls: dict[str, int], monkeypatch: pytest.MonkeyPatch, case: str,
                                            dtype: str, keep: int) -> None:
    monkeypatch.setattr(_conv, "KEEP_LIMIT", keep)
    op, xs, ws, has_bias, kw, builds = CHANNELS_FIRST[case]
    before = _conv.RAN["channels_first"]
    _check(xs, ws, has_bias, kw, dtype, op=op)
    assert (calls[f"{op}_forward"], calls[f"{op}_backward"]) == (1, 1)
    assert _conv.RAN["channels_first"] - before == builds + (op == "conv2d" and not keep)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("block", [_conv.BLOCK, 1])
def test_transposed_weight_gradient_blocked(calls: dict[str, int], monkeypatch: pytest.MonkeyPatch, dtype: str,
                                            block: int) -> None:
    """A transposed convolution's weight gradient (conv2d's of grad, nothing kept) on a small image builds its
    columns in blocks too (DCGAN's ConvTranspose2d 32 -> 16)."""
    monkeypatch.setattr(_conv, "BLOCK", block)
    before = _conv.RAN["blocked_weight_grad"]
    _check((3, 12, 8, 8), (12, 6, 4, 4), True, {"stride": 2, "padding": 1}, dtype, op="conv_transpose2d")
    assert (calls["conv_transpose2d_forward"], calls["conv_transpose2d_backward"]) == (1, 1)
    assert _conv.RAN["blocked_weight_grad"] == before + 1


SAME_WIDTH = {  # x shape, weight shape, bias, kwargs, forwards: the output keeps the input's width, 64
    # positions and more, 8-24 channels in and out; at stride 1 the input's gradient (the full convolution of grad) is a
    # second one where its geometry keeps the width too
    "ResNet 3x3": ((3, 16, 16, 16), (16, 16, 3, 3), False, {"padding": 1}, 2),
    "5x3, rows unpadded": ((2, 8, 13, 9), (12, 8, 5, 3), True, {"padding": (0, 1)}, 2),
    "dilated width": ((2, 12, 10, 11), (9, 12, 3, 3), True, {"padding": (1, 2), "dilation": (1, 2)}, 2),
    "dilated rows, 3x1": ((2, 8, 9, 8), (24, 8, 3, 1), True, {"padding": (2, 0), "dilation": (2, 1)}, 2),
    "1x1": ((2, 8, 8, 8), (8, 8, 1, 1), True, {}, 2),
    # from ROWS_UNIT (256) positions a product covers a band of output rows (here 10, 10 and 4)
    "large image, bands": ((2, 16, 24, 24), (16, 16, 3, 3), True, {"padding": 1}, 2),
    "5x5, bands of 9 rows": ((2, 8, 30, 26), (9, 8, 5, 5), False, {"padding": (1, 2)}, 2),
}


def _rows_runs() -> tuple[int, int]:
    return _conv_shifted.RAN["rows_forward"], _conv_shifted.RAN["rows_weight_grad"]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", SAME_WIDTH)
@pytest.mark.parametrize("block", [_conv_shifted.ROWS_BLOCK, 1])  # (1 byte: one image a block)
def test_same_width_products_match_torch(calls: dict[str, int], monkeypatch: pytest.MonkeyPatch, case: str,
                                         dtype: str, block: int) -> None:
    monkeypatch.setattr(_conv_shifted, "ROWS_BLOCK", block)
    xs, ws, has_bias, kw, forwards = SAME_WIDTH[case]
    before = _rows_runs()
    _check(xs, ws, has_bias, kw, dtype)
    assert (calls["conv2d_forward"], calls["conv2d_backward"]) == (1, 1)
    assert tuple(a - b for a, b in zip(_rows_runs(), before)) == (forwards, 1)


def test_same_width_weight_gradient_without_kept_grid(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the forward's grid is over KEEP_LIMIT, the weight's gradient builds it again."""
    monkeypatch.setattr(_conv, "KEEP_LIMIT", 0)
    before = _rows_runs()
    _check((3, 16, 8, 8), (16, 16, 3, 3), True, {"padding": 1}, "float64")
    assert tuple(a - b for a, b in zip(_rows_runs(), before)) == (2, 1)


@pytest.mark.parametrize("case", ["4x4 image", "32 channels", "strided", "narrower output"])
def test_same_width_other_geometries(case: str) -> None:
    """Too few positions, too many channels, a stride or an output narrower than the input keep im2col."""
    xs, ws, kw = {"4x4 image": ((2, 16, 4, 4), (16, 16, 3, 3), {"padding": 1}),
                  "32 channels": ((2, 16, 8, 8), (32, 16, 3, 3), {"padding": 1}),
                  "strided": ((2, 16, 16, 16), (16, 16, 3, 3), {"padding": 1, "stride": 2}),
                  "narrower output": ((2, 16, 12, 12), (16, 16, 3, 3), {})}[case]
    before = _rows_runs()
    _check(xs, ws, True, kw, "float64")
    assert _rows_runs() == before


@pytest.mark.parametrize("value", [np.inf, np.nan])
def test_same_width_non_finite_input(monkeypatch: pytest.MonkeyPatch, value: float) -> None:
    """A non-finite input at a row's end: the same-width stack reads it only where a true window holds it
    (the wrapped taps read zeros), so values and gradients are torch's."""
    x = RNG.standard_normal((2, 16, 10, 10))
    x[1, 3, 4, 9] = value
    before = _rows_runs()
    _check(x.shape, (16, 16, 3, 3), False, {"padding": 1}, "float64", x=x)
    assert tuple(a - b for a, b in zip(_rows_runs(), before)) == (2, 1)


@pytest.mark.parametrize("case", ["shifted products", "same-width bands", "same-width images"])
def test_conv_blocks_on_two_threads_match_one(monkeypatch: pytest.MonkeyPatch, case: str) -> None:
    """Above SPLIT_WORK the blocks (of images, or of bands of output rows) run on two threads: output and
    gradients bit for bit those of one thread, and the threaded path counted."""
    from ferro_cpu import _threads
    monkeypatch.setattr(_threads, "follow_load", False)  # (two threads whatever the machine's load)
    monkeypatch.setattr(_conv_shifted, "SPLIT_WORK", 1)
    xs, padding = {"shifted products": ((6, 16, 24, 24), 0), "same-width bands": ((6, 16, 24, 24), 1),
                   "same-width images": ((6, 16, 12, 12), 1)}[case]
    x, w = RNG.standard_normal(xs).astype("float32"), RNG.standard_normal((16, 16, 3, 3)).astype("float32")
    g = RNG.standard_normal((xs[0], 16, xs[2] - 2 + 2 * padding, xs[3] - 2 + 2 * padding)).astype("float32")
    results = {}
    threads = ferro.get_num_threads()
    try:
        for n in (1, 2):
            ferro.set_num_threads(n)
            before = _conv_shifted.RAN["threaded"]
            xt, wt = ferro.tensor(x, requires_grad=True), ferro.tensor(w, requires_grad=True)
            y = F.conv2d(xt, wt, padding=padding)
            y.backward(ferro.tensor(g))
            results[n] = (y.detach().numpy().copy(), xt.grad.numpy(), wt.grad.numpy())
            assert (_conv_shifted.RAN["threaded"] - before > 0) == (n == 2)
    finally:
        ferro.set_num_threads(threads)
    for a, b in zip(results[1], results[2]):
        np.testing.assert_array_equal(a, b)
    tx, tw = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
    ty = TF.conv2d(tx, tw, padding=padding)
    ty.backward(torch.tensor(g))
    for a, b in zip(results[2], (ty.detach().numpy(), tx.grad.numpy(), tw.grad.numpy())):
        np.testing.assert_allclose(a, b, rtol=2e-4, atol=2e-4)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_same_width_weight_gradient_of_an_expanded_gradient(dtype: str) -> None:
    """``.sum().backward()`` hands the convolution a stride-0 gradient, which each block copies for BLAS."""
    x, w = RNG.standard_normal((3, 16, 10, 10)).astype(dtype), RNG.standard_normal((8, 16, 3, 3)).astype(dtype)
    xt, wt = ferro.tensor(x, requires_grad=True), ferro.tensor(w, requires_grad=True)
    tx, tw = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
    before = _rows_runs()
    F.conv2d(xt, wt, padding=1).sum().backward()
    TF.conv2d(tx, tw, padding=1).sum().backward()
    assert _rows_runs()[1] == before[1] + 1
    np.testing.assert_allclose(wt.grad.numpy(), tw.grad.numpy(), **TOL[dtype])
    np.testing.assert_allclose(xt.grad.numpy(), tx.grad.numpy(), **TOL[dtype])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("kw", [{"padding": 1}, {"padding": 2, "dilation": 2, "output_padding": 1}])
def test_same_width_conv_transpose2d_at_stride_1(calls: dict[str, int], dtype: str, kw: dict[str, Any]) -> None:
    """A stride-1 transposed convolution of a small image: its input gradient (conv2d of grad) takes the
    same-width forward and its weight gradient (conv2d's, x and grad swapped) the same-width weight gradient,
    also where output_padding leaves windows no input spread into."""
    before = _rows_runs()
    _check((2, 16, 10, 10), (16, 12, 3, 3), True, kw, dtype, op="conv_transpose2d")
    assert (calls["conv_transpose2d_forward"], calls["conv_transpose2d_backward"]) == (1, 1)
    assert _rows_runs()[1] == before[1] + 1
    assert _rows_runs()[0] > before[0]


@pytest.mark.parametrize("block", [_conv_shifted.BLOCK, 0])  # 0: the shifted forward keeps its stack
def test_same_width_weight_gradient_after_the_shifted_forward(monkeypatch: pytest.MonkeyPatch, block: int) -> None:
    """24 channels on a large image: the forward (and the input gradient) take the shifted products, the
    weight's gradient the same-width one, which builds its own grid (whatever the shifted forward kept)."""
    monkeypatch.setattr(_conv_shifted, "BLOCK", block)
    before, shifted_before = _rows_runs(), _runs()
    _check((2, 24, 24, 24), (24, 24, 3, 3), True, {"padding": 1}, "float64")
    assert tuple(a - b for a, b in zip(_rows_runs(), before)) == (0, 1)
    assert _runs()[0] == shifted_before[0] + 2


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("xs", [(3, 16, 16, 16), (2, 8, 8, 8), (2, 8, 24, 24)])
def test_same_width_weight_gradient_orientation(dtype: str, xs: tuple[int, ...]) -> None:
    """In float32 up to ROWS_GRAD_BY_GRAD output positions a sample the same-width weight gradient's products read
    the output gradient as it is, ``(O, positions) @ (positions, kw * C)``; otherwise the stack as it is: torch's
    values and gradients either way, and the orientation counted."""
    before = dict(_conv_shifted.RAN)
    _check(xs, (xs[1], xs[1], 3, 3), False, {"padding": 1}, dtype)
    assert _conv_shifted.RAN["rows_weight_grad"] == before["rows_weight_grad"] + 1
    by_grad = dtype == "float32" and xs[2] * xs[3] <= _conv_shifted.ROWS_GRAD_BY_GRAD
    assert _conv_shifted.RAN["rows_weight_grad_by_grad"] - before["rows_weight_grad_by_grad"] == by_grad
