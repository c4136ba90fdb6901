"""ferro-cpu's fused softmax, log_softmax and layer_norm kernels (ferro_cpu/_rows.py) against torch, counting
that they run."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

import ferro
import ferro.nn.functional as F

from conftest import count_calls, functions_entered

torch = pytest.importorskip("torch")
TF = torch.nn.functional

RNG = np.random.default_rng(0)
NAMES = ("softmax", "softmax_backward", "log_softmax", "log_softmax_backward", "layer_norm_forward",
         "layer_norm_backward")


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, int]]:
    yield count_calls(monkeypatch, ferro.tensor([0.0])._device, NAMES)


@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
@pytest.mark.parametrize(("shape", "dim"), [((6,), 0), ((4, 7), -1), ((3, 5, 6), 1), ((2, 3, 4), 0)])
def test_softmax_matches_torch_and_runs_the_kernels(calls: dict[str, int], fn: str, shape: tuple[int, ...],
                                                    dim: int) -> None:
    x, g = RNG.standard_normal(shape) * 3, RNG.standard_normal(shape)
    x.reshape(-1)[0] = 40.0  # a large logit: the shift keeps exp finite
    fx, tx = ferro.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    got, ref = getattr(F, fn)(fx, dim=dim), getattr(TF, fn)(tx, dim=dim)
    np.testing.assert_allclose(got.detach().numpy(), ref.detach().numpy(), rtol=1e-12, atol=1e-12)
    got.backward(ferro.tensor(g))
    ref.backward(torch.tensor(g))
    np.testing.assert_allclose(fx.grad.numpy(), tx.grad.numpy(), rtol=1e-10, atol=1e-12)
    assert calls[fn] == 1 and calls[f"{fn}_backward"] == 1


@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
def test_softmax_rows_of_minus_inf_and_nan_as_torch(calls: dict[str, int], fn: str) -> None:
    x = np.array([[-np.inf, -np.inf, -np.inf], [0.0, -np.inf, 1.0], [np.nan, 0.0, 1.0], [np.inf, 0.0, 1.0]])
    got = getattr(F, fn)(ferro.tensor(x), dim=1).numpy()
    ref = getattr(TF, fn)(torch.tensor(x), dim=1).numpy()
    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-12, equal_nan=True)
    assert calls[fn] == 1


@pytest.mark.parametrize(("shape", "normalized"), [((4, 8), (8,)), ((2, 3, 4, 5), (4, 5)), ((7,), (7,))])
@pytest.mark.parametrize("affine", [False, True])
def test_layer_norm_matches_torch_and_runs_the_kernels(calls: dict[str, int], shape: tuple[int, ...],
                                                       normalized: tuple[int, ...], affine: bool) -> None:
    x, g = RNG.standard_normal(shape) * 2 + 1, RNG.standard_normal(shape)
    w, b = RNG.standard_normal(normalized), RNG.standard_normal(normalized)
    fx, tx = ferro.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    fw, fb = (ferro.tensor(v, requires_grad=True) if affine else None for v in (w, b))
    tw, tb = (torch.tensor(v, requires_grad=True) if affine else None for v in (w, b))
    got, ref = F.layer_norm(fx, normalized, fw, fb, eps=1e-5), TF.layer_norm(tx, normalized, tw, tb, eps=1e-5)
    np.testing.assert_allclose(got.detach().numpy(), ref.detach().numpy(), rtol=1e-10, atol=1e-12)
    got.backward(ferro.tensor(g))
    ref.backward(torch.tensor(g))
    pairs = [(fx, tx)] + ([(fw, tw), (fb, tb)] if affine else [])
    for f, t in pairs:
        np.testing.assert_allclose(f.grad.numpy(), t.grad.numpy(), rtol=1e-9, atol=1e-11)
    assert calls["layer_norm_forward"] == 1 and calls["layer_norm_backward"] == 1


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_low_precision_inputs_keep_their_dtype(calls: dict[str, int], dtype: str) -> None:
    x, w = RNG.standard_normal((16, 32)).astype(dtype), RNG.standard_normal(32).astype(dtype)
    fx, tx = ferro.tensor(x, requires_grad=True), torch.tensor(x.astype(np.float32), requires_grad=True)
    fw, tw = ferro.tensor(w, requires_grad=True), torch.tensor(w.astype(np.float32), requires_grad=True)
    got = (F.softmax(fx, -1) + F.log_softmax(fx, 0) + F.layer_norm(fx, (32,), fw)).sum()
    ref = (TF.softmax(tx, -1) + TF.log_softmax(tx, 0) + TF.layer_norm(tx, (32,), tw)).sum()
    got.backward()
    ref.backward()
    assert got.dtype is getattr(ferro, dtype) and fx.grad.dtype is getattr(ferro, dtype)
    assert fw.grad.dtype is getattr(ferro, dtype)
    tol = 5e-2 if dtype == "float16" else 1e-4
    np.testing.assert_allclose(fx.grad.float().numpy(), tx.grad.numpy(), rtol=tol, atol=tol)
    np.testing.assert_allclose(fw.grad.float().numpy(), tw.grad.numpy(), rtol=tol, atol=tol)
    assert calls["softmax"] == calls["log_softmax"] == calls["layer_norm_forward"] == 1


def test_second_derivatives_use_the_decomposition(calls: dict[str, int]) -> None:
    x = RNG.standard_normal((3, 5))
    fx, tx = ferro.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    w = RNG.standard_normal((3, 5))
    (gx,) = ferro.autograd.grad((F.softmax(fx, -1) * ferro.tensor(w)).sum(), fx, create_graph=True)
    (ggx,) = ferro.autograd.grad((gx * gx).sum(), fx)
    (tg,) = torch.autograd.grad((TF.softmax(tx, -1) * torch.tensor(w)).sum(), tx, create_graph=True)
    (tgg,) = torch.autograd.grad((tg * tg).sum(), tx)
    np.testing.assert_allclose(ggx.numpy(), tgg.numpy(), rtol=1e-10, atol=1e-12)
    assert calls["softmax"] == 1 and calls["softmax_backward"] == 0


def test_empty_inputs_as_torch(calls: dict[str, int]) -> None:
    for shape, dim in [((0, 3), 1), ((2, 0), 1)]:
        x = np.zeros(shape)
        for fn in ("softmax", "log_softmax"):
            assert getattr(F, fn)(ferro.tensor(x), dim=dim).shape == getattr(TF, fn)(torch.tensor(x), dim=dim).shape
    y = F.layer_norm(ferro.tensor(np.zeros((0, 4))), (4,))
    assert y.shape == (0, 4)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("scale", [1.0, 20.0, 1e3])  # within the bound of exp(x) / sum(exp(x)), at it, past it
@pytest.mark.parametrize("grad", [False, True])
def test_softmax_last_dim_with_and_without_the_shift_as_torch(calls: dict[str, int], dtype: str, scale: float,
                                                              grad: bool) -> None:
    # small and moderate logits skip the shift by each row's maximum, large ones (and the in-place change to the
    # output before backward) take it: the same values as torch's either way
    x = (RNG.standard_normal((16, 33)) * scale).astype(dtype)
    x[3, :] -= 3 * scale  # a row far below the others
    fx, tx = ferro.tensor(x, requires_grad=grad), torch.tensor(x, requires_grad=grad)
    got, ref = F.softmax(fx, -1), TF.softmax(tx, -1)
    tol = 1e-6 if dtype == "float32" else 1e-13
    np.testing.assert_allclose(got.detach().numpy(), ref.detach().numpy(), rtol=tol, atol=tol * 1e-3)
    assert got.requires_grad is grad and (got.grad_fn is not None) is grad and calls["softmax"] == 1
    if grad:
        g = RNG.standard_normal((16, 33)).astype(dtype)
        got.backward(ferro.tensor(g))
        ref.backward(torch.tensor(g))
        np.testing.assert_allclose(fx.grad.numpy(), tx.grad.numpy(), rtol=tol * 10, atol=tol)  # g - sum(g * y) cancels
        assert calls["softmax_backward"] == 1
        y = F.softmax(fx, -1)
        y.add_(1.0)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.sum().backward()


def _rows_with_extremes(rows: int, cols: int, dtype: str) -> np.ndarray:
    """Normal logits with rows the unshifted quotient cannot take (an overflowing logit, +inf, a row of -inf,
    a row whose exponentials all underflow, NaN) and other extremes (-0.0, -inf entries, large negatives)
    spread over several blocks of rows."""
    x = RNG.standard_normal((rows, cols)).astype(dtype)
    big = 100.0 if dtype == "float32" else 1000.0
    x[1, 3] = big
    x[rows // 2, 0] = np.inf
    x[rows // 2 + 1] = -np.inf
    x[rows // 3] -= 10 * big
    x[rows - 2, 5] = np.nan
    x[rows - 1, :4] = [-0.0, 0.0, -np.inf, -big]
    return x


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
def test_blocked_rows_with_extreme_rows_as_torch(calls: dict[str, int], dtype: str, fn: str) -> None:
    # more rows than one block holds (the kernels run block by block, the unshifted softmax redoes the rows it
    # cannot take with the shift); the gradient is a broadcast view (sum().backward()), as in a training loop
    x = _rows_with_extremes(1500, 130, dtype)
    fx, tx = ferro.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    got, ref = getattr(F, fn)(fx, dim=-1), getattr(TF, fn)(tx, dim=-1)
    tol = 1e-6 if dtype == "float32" else 1e-13
    np.testing.assert_allclose(got.detach().numpy(), ref.detach().numpy(), rtol=tol, atol=tol, equal_nan=True)
    (got * ferro.tensor(np.linspace(-1, 1, 130).astype(dtype))).sum().backward()
    (ref * torch.tensor(np.linspace(-1, 1, 130).astype(dtype))).sum().backward()
    np.testing.assert_allclose(fx.grad.numpy(), tx.grad.numpy(), rtol=tol * 10, atol=tol * 10, equal_nan=True)
    assert calls[fn] == 1 and calls[f"{fn}_backward"] == 1


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_blocked_softmax_backward_of_a_summed_output(calls: dict[str, int], dtype: str) -> None:
    x = RNG.standard_normal((700, 260)).astype(dtype) * 4
    fx, tx = ferro.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    for f, t in ((F.softmax(fx, -1), TF.softmax(tx, -1)), (F.log_softmax(fx, -1), TF.log_softmax(tx, -1))):
        f.sum().backward()
        t.sum().backward()
    tol = 1e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(fx.grad.numpy(), tx.grad.numpy(), rtol=tol, atol=tol)
    assert calls["softmax_backward"] == calls["log_softmax_backward"] == 1


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("affine", [False, True])
def test_blocked_layer_norm_as_torch(calls: dict[str, int], dtype: str, affine: bool) -> None:
    # several blocks of rows, rows of large mean and of one value (variance 0: 1 / sqrt(eps)), -0.0 and large |x|
    x = (RNG.standard_normal((3, 800, 96)) * 3 + 1).astype(dtype)
    x[0, 5] += 1e3
    x[1, 7] = 2.5
    x[2, 9, :3] = [-0.0, 1e4, -1e4]
    g = RNG.standard_normal(x.shape).astype(dtype)
    w, b = (RNG.standard_normal(96).astype(dtype) for _ in range(2))
    fx, tx = ferro.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    fw, fb = (ferro.tensor(v, requires_grad=True) if affine else None for v in (w, b))
    tw, tb = (torch.tensor(v, requires_grad=True) if affine else None for v in (w, b))
    got, ref = F.layer_norm(fx, (96,), fw, fb), TF.layer_norm(tx, (96,), tw, tb)
    tol = 2e-4 if dtype == "float32" else 1e-10
    np.testing.assert_allclose(got.detach().numpy(), ref.detach().numpy(), rtol=tol, atol=tol)
    got.backward(ferro.tensor(g))
    ref.backward(torch.tensor(g))
    for f, t in [(fx, tx)] + ([(fw, tw), (fb, tb)] if affine else []):
        np.testing.assert_allclose(f.grad.numpy(), t.grad.numpy(), rtol=tol, atol=tol * 10)
    assert calls["layer_norm_forward"] == calls["layer_norm_backward"] == 1


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_blocked_rows_in_16_bits_as_torch(calls: dict[str, int], dtype: str) -> None:
    x = RNG.standard_normal((1200, 160)).astype(np.float32) * 3
    x[4, 2] = 60.0  # overflows exp in float16, not in the float32 the kernels compute in
    fx = ferro.tensor(x).to(getattr(ferro, dtype)).requires_grad_()
    tx = torch.tensor(x).to(getattr(torch, dtype)).requires_grad_()
    outs = [(F.softmax(fx, -1), TF.softmax(tx, -1)), (F.log_softmax(fx, -1), TF.log_softmax(tx, -1)),
            (F.layer_norm(fx, (160,)), TF.layer_norm(tx, (160,)))]
    g = RNG.standard_normal(x.shape).astype(np.float32)  # (a sum of all 192000 values would overflow float16)
    sum(f for f, _ in outs).backward(ferro.tensor(g).to(fx.dtype))
    sum(t for _, t in outs).backward(torch.tensor(g).to(tx.dtype))
    tol = 2e-2 if dtype == "float16" else 8e-2
    for f, t in outs:
        assert f.dtype is getattr(ferro, dtype)
        np.testing.assert_allclose(f.detach().float().numpy(), t.detach().float().numpy(), rtol=tol, atol=tol)
    np.testing.assert_allclose(fx.grad.float().numpy(), tx.grad.float().numpy(), rtol=tol, atol=tol * 4)
    assert calls["softmax"] == calls["log_softmax"] == calls["layer_norm_forward"] == 1
    assert calls["softmax_backward"] == calls["log_softmax_backward"] == calls["layer_norm_backward"] == 1


def test_row_kernels_leave_numpy_buffer_size_and_error_state(calls: dict[str, int]) -> None:
    # the kernels narrow NumPy's ufunc buffer for rows of 512 and more (and silence its warnings) inside their
    # errstate only: the caller's settings hold after every kernel, the fallback of the unshifted softmax included
    x = RNG.standard_normal((300, 600)).astype(np.float32) * 3
    x[7, 1] = 200.0
    bufsize, err = np.getbufsize(), np.geterr()
    fx, tx = ferro.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    got = [F.softmax(fx, -1), F.log_softmax(fx, -1), F.layer_norm(fx, (600,))]
    ref = [TF.softmax(tx, -1), TF.log_softmax(tx, -1), TF.layer_norm(tx, (600,))]
    sum(got).sum().backward()
    sum(ref).sum().backward()
    assert np.getbufsize() == bufsize and np.geterr() == err
    for f, t in zip(got, ref, strict=True):
        np.testing.assert_allclose(f.detach().numpy(), t.detach().numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(fx.grad.numpy(), tx.grad.numpy(), rtol=1e-4, atol=1e-4)
    assert calls["softmax"] == calls["softmax_backward"] == calls["layer_norm_backward"] == 1


@pytest.fixture
def grads_seen(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[int, ...]]]:
    """The strides of every gradient the softmax and layer_norm backward kernels get (ask for it before
    ``calls``, which binds the ops to the table again)."""
    dev = ferro.tensor([0.0])._device
    seen: list[tuple[int, ...]] = []
    for name in ("softmax_backward", "layer_norm_backward"):
        def spy(g: np.ndarray, *a: object, _k: object = dev._kernels[name], **kw: object) -> object:
            seen.append(g.strides)
            return _k(g, *a, **kw)  # type: ignore[operator]
        monkeypatch.setitem(dev._kernels, name, spy)
    yield seen
    assert seen  # the kernels ran


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(("shape", "dim"), [((700, 300), -1), ((3, 90, 64), 1), ((5, 7), 0)])
@pytest.mark.parametrize("scale", [1.0, 0.37])
def test_softmax_backward_of_a_scalar_gradient_as_torch(grads_seen: list[tuple[int, ...]], calls: dict[str, int],
                                                       dtype: str, shape: tuple[int, ...], dim: int,
                                                       scale: float) -> None:
    # sum()'s backward hands the kernel one value broadcast (every stride 0): y * (g - g * sum(y)), two passes
    x = (RNG.standard_normal(shape) * 4).astype(dtype)
    fx, tx = ferro.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    F.softmax(fx, dim).sum().backward(ferro.tensor(scale, dtype=getattr(ferro, dtype)))
    TF.softmax(tx, dim).sum().backward(torch.tensor(scale, dtype=getattr(torch, dtype)))
    tol = 1e-6 if dtype == "float32" else 1e-14
    np.testing.assert_allclose(fx.grad.numpy(), tx.grad.numpy(), rtol=tol, atol=tol)
    assert calls["softmax_backward"] == 1 and grads_seen == [(0,) * len(shape)]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("affine", [False, True])
@pytest.mark.parametrize("shape", [(700, 300), (3, 90, 64)])
@pytest.mark.parametrize("scale", [1.0, 0.37])
def test_layer_norm_backward_of_a_scalar_gradient_as_torch(grads_seen: list[tuple[int, ...]], calls: dict[str, int],
                                                          dtype: str, affine: bool, shape: tuple[int, ...],
                                                          scale: float) -> None:
    # rows of large mean and of one value included; a gradient of one value skips the passes that read it
    cols = shape[-1]
    x = (RNG.standard_normal(shape) * 3 + 1).astype(dtype)
    x.reshape(-1, cols)[5] += 1e3
    x.reshape(-1, cols)[7] = 2.5
    w, b = ((RNG.standard_normal(cols) + 1).astype(dtype) for _ in range(2))
    fx, tx = ferro.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    fw, fb = (ferro.tensor(v, requires_grad=True) if affine else None for v in (w, b))
    tw, tb = (torch.tensor(v, requires_grad=True) if affine else None for v in (w, b))
    F.layer_norm(fx, (cols,), fw, fb).sum().backward(ferro.tensor(scale, dtype=getattr(ferro, dtype)))
    TF.layer_norm(tx, (cols,), tw, tb).sum().backward(torch.tensor(scale, dtype=getattr(torch, dtype)))
    # (without a weight dx is 0 but for rounding, PyTorch's up to about 3e-5 in the row of mean 1e3; ferro's closer)
    tol = 2e-4 if dtype == "float32" else 1e-10
    np.testing.assert_allclose(fx.grad.numpy(), tx.grad.numpy(), rtol=tol, atol=tol)
    if affine:
        np.testing.assert_allclose(fw.grad.numpy(), tw.grad.numpy(), rtol=tol, atol=tol * 10)
        np.testing.assert_allclose(fb.grad.numpy(), tb.grad.numpy(), rtol=tol, atol=tol)
    assert calls["layer_norm_backward"] == 1 and grads_seen == [(0,) * len(shape)]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(("shape", "extreme"), [((64, 64), None), ((3, 5, 7), 1e3), ((9,), np.inf),
                                                ((4, 6), np.nan)])
def test_one_block_softmax_path_as_torch(calls: dict[str, int], dtype: str, shape: tuple[int, ...],
                                         extreme: float | None) -> None:
    # an array under one block along its last dim: one frame, exp into the output; a row the unshifted quotient
    # does not suit (an overflowing logit, -inf, NaN) is redone with the shift, as in the blocked kernel
    x = (RNG.standard_normal(shape) * 3).astype(dtype)
    if extreme is not None:
        x.reshape(-1)[1] = extreme
    fx = ferro.tensor(x)
    got: list[ferro.Tensor] = []
    path = functions_entered(lambda: got.append(F.softmax(fx, -1)), "ferro_cpu/_rows.py")
    ref = TF.softmax(torch.tensor(x), -1).numpy()
    tol = 1e-6 if dtype == "float32" else 1e-14
    np.testing.assert_allclose(got[0].numpy(), ref, rtol=tol, atol=tol, equal_nan=True)
    assert path[0] == "softmax" and "small_softmax" in path[:3] and "softmax_rows" not in path[:4]
    assert ("redo_rows" in path) == (extreme is not None) and calls["softmax"] == 1


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(("shape", "normalized"), [((64, 256), (256,)), ((2, 3, 4, 5), (4, 5)), ((7,), (7,))])
@pytest.mark.parametrize("affine", [False, True])
def test_one_block_layer_norm_path_as_torch(calls: dict[str, int], dtype: str, shape: tuple[int, ...],
                                            normalized: tuple[int, ...], affine: bool) -> None:
    # the one-block path (mean by a product with 1/cols, rstd as sqrt(cols) / sqrt(sum of squares + cols * eps)),
    # a row of large mean and a row of one value included
    x = (RNG.standard_normal(shape) * 2 + 1).astype(dtype)
    rows = x.reshape(-1, int(np.prod(normalized)))
    rows[0] += 1e3
    if len(rows) > 1:
        rows[1] = 2.5
    w, b = ((RNG.standard_normal(normalized) + 1).astype(dtype) for _ in range(2))
    fw, fb = (ferro.tensor(v) if affine else None for v in (w, b))
    tw, tb = (torch.tensor(v) if affine else None for v in (w, b))
    fx = ferro.tensor(x)
    got: list[ferro.Tensor] = []
    path = functions_entered(lambda: got.append(F.layer_norm(fx, normalized, fw, fb)), "ferro_cpu/_rows.py")
    ref = TF.layer_norm(torch.tensor(x), normalized, tw, tb).numpy()
    tol = 1e-4 if dtype == "float32" else 1e-11  # (float32: the row of mean 1e3 keeps about 4 digits)
    np.testing.assert_allclose(got[0].numpy(), ref, rtol=tol, atol=tol)
    assert path[0] == "layer_norm_forward" and "small_layer_norm" in path and "blocked_layer_norm" not in path
    assert calls["layer_norm_forward"] == 1


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
@pytest.mark.parametrize("fn", ["softmax", "log_softmax", "layer_norm"])
def test_fronts_record_the_node_without_the_entry(monkeypatch: pytest.MonkeyPatch, calls: dict[str, int],
                                                  dtype: str, fn: str) -> None:
    # with grad, the public softmax / log_softmax / layer_norm run the kernel and record the op's one node
    # themselves: the op's rule (the entry's path) is not reached; values and gradients as PyTorch's
    from ferro._core.records import REGISTRY
    op = REGISTRY[fn]
    rule_calls = []
    rule = op.rule
    monkeypatch.setattr(op, "rule", lambda *a, **k: rule_calls.append(1) or rule(*a, **k))
    x, g = RNG.standard_normal((8, 16)), RNG.standard_normal((8, 16))
    w, b = RNG.standard_normal(16) + 1, RNG.standard_normal(16)
    wide = torch.float32 if dtype == "float16" else getattr(torch, dtype)  # (PyTorch's reference in float32)
    fx = ferro.tensor(x.astype(dtype), requires_grad=True)
    tx = torch.tensor(x.astype(dtype)).to(wide).requires_grad_()
    fw, fb = (ferro.tensor(v.astype(dtype), requires_grad=True) for v in (w, b))
    tw, tb = (torch.tensor(v.astype(dtype)).to(wide).requires_grad_() for v in (w, b))
    if fn == "layer_norm":
        got, ref = F.layer_norm(fx, (16,), weight=fw, bias=fb, eps=1e-3), TF.layer_norm(tx, (16,), tw, tb, 1e-3)
    else:
        got, ref = getattr(F, fn)(fx, -1), getattr(TF, fn)(tx, -1)
    assert got.grad_fn is not None and got.dtype is getattr(ferro, dtype)
    got.backward(ferro.tensor(g.astype(dtype)))
    ref.backward(torch.tensor(g.astype(dtype)).to(wide))
    tol = {"float16": 2e-2, "float32": 1e-5, "float64": 1e-12}[dtype]
    np.testing.assert_allclose(got.detach().double().numpy(), ref.detach().numpy(), rtol=tol, atol=tol)
    pairs = [(fx, tx)] + ([(fw, tw), (fb, tb)] if fn == "layer_norm" else [])
    for f, t in pairs:
        np.testing.assert_allclose(f.grad.double().numpy(), t.grad.numpy(), rtol=tol * 10, atol=tol * 10)
    kernel = "layer_norm_forward" if fn == "layer_norm" else fn
    backward = "layer_norm_backward" if fn == "layer_norm" else f"{fn}_backward"
    assert rule_calls == [] and calls[kernel] == 1 and calls[backward] == 1


def test_layer_norm_front_leaves_other_calls_to_the_entry(calls: dict[str, int]) -> None:
    # arguments the front does not take reach the entry, which names the op and the argument
    fx = ferro.tensor(RNG.standard_normal((3, 4)))
    with pytest.raises(TypeError, match=r"layer_norm.*'weight'"):
        F.layer_norm(fx, (4,), weight="w")
    with pytest.raises(TypeError, match="layer_norm"):
        F.layer_norm(fx, (4,), bogus=1)
    with pytest.raises(ferro.errors.ShapeError, match="layer_norm"):
        F.layer_norm(fx, (5,))
    np.testing.assert_allclose(F.layer_norm(fx, 4, None, None, 0.1).numpy(),
                               TF.layer_norm(torch.tensor(fx.numpy()), (4,), eps=0.1).numpy(), rtol=1e-12)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize(("shape", "extreme"), [((64, 10), None), ((3, 5, 7), 1e4), ((9,), np.inf),
                                                ((4, 6), -np.inf), ((4, 6), np.nan), ((16, 600), None)])
def test_one_block_log_softmax_and_backwards_as_torch(calls: dict[str, int], dtype: str, shape: tuple[int, ...],
                                                      extreme: float | None) -> None:
    # log_softmax, its backward and softmax's backward of an array under one block along its last dim: one frame
    # each (row maxima by argmax, one value per row spread before the ufunc below 512 columns, broadcast above);
    # 16-bit inputs run it in float32 through the 16-bit wrapper and round once
    x = (RNG.standard_normal(shape) * 3).astype(np.float32 if dtype == "bfloat16" else dtype)
    if extreme is not None:
        x.reshape(-1)[1] = extreme
    g = RNG.standard_normal(shape).astype(x.dtype)
    fx = ferro.tensor(x).to(getattr(ferro, dtype)).requires_grad_()
    tx = torch.tensor(x).to(getattr(torch, dtype)).requires_grad_()
    fg, tg = ferro.tensor(g).to(fx.dtype), torch.tensor(g).to(tx.dtype)
    tol = {"float32": 1e-5, "float64": 1e-12, "float16": 4e-3, "bfloat16": 3e-2}[dtype]
    for fn in ("log_softmax", "softmax"):
        fx.grad, tx.grad = None, None
        got: list[ferro.Tensor] = []
        forward = functions_entered(lambda fn=fn: got.append(getattr(F, fn)(fx, -1)), "ferro_cpu/_rows.py")
        ref = getattr(TF, fn)(tx, -1)
        backward = functions_entered(lambda: got[0].backward(fg), "ferro_cpu/_rows.py")
        ref.backward(tg)
        assert got[0].dtype is fx.dtype and fx.grad.dtype is fx.dtype
        np.testing.assert_allclose(got[0].detach().float().numpy(), ref.detach().float().numpy(), rtol=tol,
                                   atol=tol, equal_nan=True)
        np.testing.assert_allclose(fx.grad.float().numpy(), tx.grad.float().numpy(), rtol=tol, atol=tol * 10,
                                   equal_nan=True)
        if fn == "log_softmax":
            assert "log_softmax_block" in forward and "blocked_log_softmax" not in forward
            assert "log_softmax_backward_block" in backward and "blocked_log_softmax_backward" not in backward
        else:
            assert "small_softmax_backward" in backward and "blocked_softmax_backward" not in backward
    assert calls["log_softmax"] == calls["log_softmax_backward"] == calls["softmax_backward"] == 1


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_blocked_log_softmax_shares_the_one_block_steps(calls: dict[str, int], dtype: str) -> None:
    # over one block (GPT's 1024 x 65 logits): the blocked kernel runs the same block function on each block,
    # giving the one-block path's bits for the rows of its first block; a strided input takes the general kernel
    x = (RNG.standard_normal((2200, 65)) * 4).astype(dtype)
    x[3, 5] = np.nan
    fx = ferro.tensor(x)
    path = functions_entered(lambda: F.log_softmax(fx, -1), "ferro_cpu/_rows.py")
    assert "blocked_log_softmax" in path and path.count("log_softmax_block") >= 2
    got = F.log_softmax(fx, -1).numpy()
    tol = 1e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(got, TF.log_softmax(torch.tensor(x), -1).numpy(), rtol=tol, atol=tol, equal_nan=True)
    np.testing.assert_array_equal(F.log_softmax(ferro.tensor(x[:64]), -1).numpy(), got[:64])
    xt = np.ascontiguousarray(x[:64].T).T  # (64, 65) column-major
    ft = F.log_softmax(ferro.tensor(xt), -1)
    np.testing.assert_allclose(ft.numpy(), TF.log_softmax(torch.tensor(xt), -1).numpy(), rtol=tol, atol=tol,
                               equal_nan=True)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(("scale", "extreme", "shifted"), [(3.0, None, False), (0.01, -1e4, False), (30.0, None, True),
                                                          (1.0, 100.0, True), (1.0, -np.inf, False),
                                                          (1.0, np.nan, True)])
@pytest.mark.parametrize("shape", [(64, 10), (700, 1000)])
def test_log_softmax_without_the_shift(calls: dict[str, int], dtype: str, scale: float, extreme: float | None,
                                       shifted: bool, shape: tuple[int, int]) -> None:
    # log_softmax is x - log(sum(exp(x))) in blocks whose rows' log-sums all lie within +-16 (one block or many);
    # other blocks (an overflowing logit, NaN, rows of large magnitude) again with the shift by the row maximum
    x = (RNG.standard_normal(shape) * scale).astype(dtype)
    if extreme is not None:
        x[1, 3] = extreme
    fx, tx = ferro.tensor(x), torch.tensor(x)
    got: list[ferro.Tensor] = []
    path = functions_entered(lambda: got.append(F.log_softmax(fx, -1)), "ferro_cpu/_rows.py")
    assert "log_softmax_block" in path and ("shifted_log_softmax_block" in path) is shifted
    tol = 2e-6 if dtype == "float32" else 1e-14
    np.testing.assert_allclose(got[0].numpy(), TF.log_softmax(tx, -1).numpy(), rtol=tol, atol=tol, equal_nan=True)
    # against float64's values: no further off than PyTorch's own float32 kernel
    exact = TF.log_softmax(torch.tensor(x, dtype=torch.float64), -1).numpy()
    finite = np.isfinite(exact)
    ours = np.abs(got[0].numpy()[finite] - exact[finite])
    torchs = np.abs(TF.log_softmax(tx, -1).numpy()[finite] - exact[finite])
    assert np.all(ours <= np.maximum(2 * torchs.max(), 4 * np.finfo(dtype).eps * (16 + np.abs(exact[finite]))))
    assert calls["log_softmax"] == 1
