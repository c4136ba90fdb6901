"""The nn.functional ops, layers and optimizers ferro gained for the PyTorch surface (fold / unfold, lp and
unpooling, 3-d adaptive pools and transposed convolution, grid sampling, embedding_bag, ctc_loss, the margin
losses, the Lazy layers, Adafactor, Muon), against torch on cpu and opencl: values and gradients."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import ferro
import ferro.nn.functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional


def _rng() -> np.random.Generator:
    return np.random.default_rng(0)


def _pair(v: np.ndarray, dev: str, grad: bool = False) -> tuple[ferro.Tensor, Any]:
    x = ferro.tensor(v, device=dev)
    t = torch.tensor(v)
    if grad:
        x.requires_grad_(True)
        t.requires_grad_(True)
    return x, t


def _close(mine: Any, theirs: Any, rtol: float = 1e-5, atol: float = 1e-6) -> None:
    np.testing.assert_allclose(mine.detach().cpu().numpy() if hasattr(mine, "cpu") else mine.detach().numpy(),
                               theirs.detach().numpy(), rtol=rtol, atol=atol)


def _check(dev: str, arrays: list[np.ndarray], fn: Callable[..., Any], tfn: Callable[..., Any],
           grad: tuple[int, ...] = (0,), rtol: float = 1e-5, atol: float = 1e-6) -> None:
    """``fn`` on ferro tensors against ``tfn`` on torch ones (float32): the value and, for the inputs ``grad``,
    the gradient of a weighted sum of it."""
    pairs = [_pair(a, dev, i in grad) for i, a in enumerate(arrays)]
    mine, theirs = fn(*(p[0] for p in pairs)), tfn(*(p[1] for p in pairs))
    _close(mine, theirs, rtol, atol)
    if not grad:
        return
    w = _rng().normal(size=tuple(theirs.shape)).astype(np.float32)
    (mine * ferro.tensor(w, device=dev)).sum().backward()
    (theirs * torch.tensor(w)).sum().backward()
    for i in grad:
        _close(pairs[i][0].grad, pairs[i][1].grad, rtol, atol)


def _f32(*shape: int, lo: float = -2.0, hi: float = 2.0) -> np.ndarray:
    return _rng().uniform(lo, hi, shape).astype(np.float32)


# -- functional ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kw", [{"kernel_size": 2}, {"kernel_size": (2, 3), "stride": 2, "padding": 1},
                                {"kernel_size": 2, "dilation": 2, "stride": (1, 2)}])
def test_unfold_and_fold(dev: str, kw: dict) -> None:
    x = _f32(2, 3, 5, 6)
    _check(dev, [x], lambda a: F.unfold(a, **kw), lambda a: TF.unfold(a, **kw))
    cols = TF.unfold(torch.tensor(x), **kw).numpy()
    _check(dev, [cols], lambda a: F.fold(a, (5, 6), **kw), lambda a: TF.fold(a, (5, 6), **kw))
    _check(dev, [x[0]], lambda a: F.unfold(a, **kw), lambda a: TF.unfold(a, **kw))  # unbatched
    with pytest.raises(ferro.errors.ShapeError, match="fold"):
        F.fold(ferro.tensor(cols, device=dev)[:, :, 1:], (5, 6), **kw)


@pytest.mark.parametrize("n", [1, 2, 3])
def test_lp_pool(dev: str, n: int) -> None:
    x = _f32(2, 3, *([6] * n), lo=0.1, hi=2.0)
    for p, k, s, ceil in ((2.0, 2, None, False), (3.0, 3, 2, True), (1.5, 2, 1, False)):
        _check(dev, [x], lambda a: getattr(F, f"lp_pool{n}d")(a, p, k, s, ceil),
               lambda a: getattr(TF, f"lp_pool{n}d")(a, p, k, s, ceil), rtol=1e-4)
    mine = getattr(ferro.nn, f"LPPool{n}d")(2, 3, stride=2)(ferro.tensor(x, device=dev))
    _close(mine, getattr(torch.nn, f"LPPool{n}d")(2, 3, stride=2)(torch.tensor(x)), 1e-4)


@pytest.mark.parametrize("n", [1, 2, 3])
def test_max_unpool_and_with_indices(dev: str, n: int) -> None:
    x = _f32(2, 3, *([6] * n))
    fx, tx = _pair(x, dev)
    out, idx = getattr(F, f"max_pool{n}d_with_indices")(fx, 2)
    tout, tidx = getattr(TF, f"max_pool{n}d_with_indices")(tx, 2)
    _close(out, tout)
    np.testing.assert_array_equal(idx.numpy(), tidx.numpy())
    pooled = tout.detach().numpy()
    tidx_np = tidx.numpy()

    def mine(a: ferro.Tensor) -> ferro.Tensor:
        return getattr(F, f"max_unpool{n}d")(a, ferro.tensor(tidx_np, device=dev), 2)
    _check(dev, [pooled], mine, lambda a: getattr(TF, f"max_unpool{n}d")(a, tidx, 2))
    size = [7] * n
    _close(getattr(F, f"max_unpool{n}d")(out, idx, 2, output_size=size),
           getattr(TF, f"max_unpool{n}d")(tout, tidx, 2, output_size=size))
    layer = getattr(ferro.nn, f"MaxUnpool{n}d")(2)
    _close(layer(out, idx), getattr(torch.nn, f"MaxUnpool{n}d")(2)(tout, tidx))
    with pytest.raises(ValueError, match=f"max_unpool{n}d"):
        getattr(F, f"max_unpool{n}d")(out, idx, 2, output_size=[12] * n)
    aout, aidx = getattr(F, f"adaptive_max_pool{n}d_with_indices")(fx, 4)
    taout, taidx = getattr(TF, f"adaptive_max_pool{n}d_with_indices")(tx, 4)
    _close(aout, taout)
    np.testing.assert_array_equal(aidx.numpy(), taidx.numpy())


def test_adaptive_pools_3d(dev: str) -> None:
    x = _f32(2, 3, 5, 7, 6)
    for size in (3, (2, None, 4), (5, 7, 6), (1, 1, 1)):
        _check(dev, [x], lambda a: F.adaptive_avg_pool3d(a, size), lambda a: TF.adaptive_avg_pool3d(a, size))
        _check(dev, [x], lambda a: F.adaptive_max_pool3d(a, size), lambda a: TF.adaptive_max_pool3d(a, size))
    _check(dev, [x[0]], lambda a: F.adaptive_avg_pool3d(a, 2), lambda a: TF.adaptive_avg_pool3d(a, 2))
    fx, tx = _pair(x, dev)
    _close(ferro.nn.AdaptiveAvgPool3d((2, 3, 4))(fx), torch.nn.AdaptiveAvgPool3d((2, 3, 4))(tx))
    out, idx = ferro.nn.AdaptiveMaxPool3d(3, return_indices=True)(fx)
    tout, tidx = torch.nn.AdaptiveMaxPool3d(3, return_indices=True)(tx)
    _close(out, tout)
    np.testing.assert_array_equal(idx.numpy(), tidx.numpy())


def test_conv_transpose3d(dev: str) -> None:
    x, w = _f32(2, 4, 3, 4, 3), _f32(4, 3, 2, 3, 2)
    for kw in ({}, {"stride": 2, "padding": 1, "output_padding": 1}, {"groups": 2, "dilation": (1, 2, 1)}):
        b = _f32(3 * kw.get("groups", 1))
        _check(dev, [x, w, b], lambda a, c, d: F.conv_transpose3d(a, c, d, **kw),
               lambda a, c, d: TF.conv_transpose3d(a, c, d, **kw), grad=(0, 1, 2), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("n", [2, 3])
def test_affine_grid_and_grid_sample(dev: str, n: int) -> None:
    theta = _f32(2, n, n + 1, lo=-1.2, hi=1.2)
    size = [2, 3, 5, 6] if n == 2 else [2, 3, 4, 5, 3]
    x = _f32(*size)
    for align in (False, True):
        _check(dev, [theta], lambda a: F.affine_grid(a, size, align_corners=align),
               lambda a: TF.affine_grid(a, size, align_corners=align))
        grid = TF.affine_grid(torch.tensor(theta), size[:2] + [4] * n, align_corners=align).detach().numpy()
        for mode in ("bilinear", "nearest"):
            for pad in ("zeros", "border", "reflection"):
                kw = {"mode": mode, "padding_mode": pad, "align_corners": align}
                _check(dev, [x, grid], lambda a, g: F.grid_sample(a, g, **kw), lambda a, g: TF.grid_sample(a, g, **kw),
                       grad=(0, 1) if mode == "bilinear" else (0,), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag(dev: str, mode: str) -> None:
    w = _f32(10, 4)
    idx = np.array([1, 2, 4, 5, 4, 3, 2, 9, 0], dtype=np.int64)
    offsets = np.array([0, 3, 3, 7], dtype=np.int64)  # the second bag is empty
    ti, to = torch.tensor(idx), torch.tensor(offsets)
    fi, fo = ferro.tensor(idx, device=dev), ferro.tensor(offsets, device=dev)
    for kw in ({}, {"padding_idx": 2}):
        _check(dev, [w], lambda a: F.embedding_bag(fi, a, fo, mode=mode, **kw),
               lambda a: TF.embedding_bag(ti, a, to, mode=mode, **kw))
    # (PyTorch 2.13's CPU mean divides the last bag by its length to the end of the input, past the last offset:
    # the offsets here end with the input, where both agree.)
    last, tlast = ferro.tensor([0, 3, 3, 9], device=dev), torch.tensor([0, 3, 3, 9])
    _check(dev, [w], lambda a: F.embedding_bag(fi, a, last, mode=mode, include_last_offset=True),
           lambda a: TF.embedding_bag(ti, a, tlast, mode=mode, include_last_offset=True))
    if mode == "sum":  # the indices past the last offset are in no bag (values only: PyTorch's gradient of their
        # rows is uninitialized memory)
        _check(dev, [w], lambda a: F.embedding_bag(fi, a, fo, mode=mode, include_last_offset=True),
               lambda a: TF.embedding_bag(ti, a, to, mode=mode, include_last_offset=True), grad=())
    two_d = idx[:8].reshape(2, 4)
    _check(dev, [w], lambda a: F.embedding_bag(ferro.tensor(two_d, device=dev), a, mode=mode),
           lambda a: TF.embedding_bag(torch.tensor(two_d), a, mode=mode))
    if mode == "sum":
        psw = _f32(9)
        _check(dev, [w, psw], lambda a, p: F.embedding_bag(fi, a, fo, mode="sum", per_sample_weights=p),
               lambda a, p: TF.embedding_bag(ti, a, to, mode="sum", per_sample_weights=p), grad=(0, 1))
    else:
        with pytest.raises(NotImplementedError, match="embedding_bag"):
            F.embedding_bag(fi, ferro.tensor(w, device=dev), fo, mode=mode,
                            per_sample_weights=ferro.ones(9, device=dev))


def test_embedding_bag_module_and_state_dict(dev: str) -> None:
    tm = torch.nn.EmbeddingBag(10, 3, mode="sum", padding_idx=0)
    m = ferro.nn.EmbeddingBag(10, 3, mode="sum", padding_idx=0).to(dev)
    assert set(m.state_dict()) == set(tm.state_dict())
    m.load_state_dict({k: ferro.tensor(v.numpy()) for k, v in tm.state_dict().items()})
    idx = np.array([[0, 3, 4], [5, 0, 9]])
    _close(m(ferro.tensor(idx, device=dev)), tm(torch.tensor(idx)))
    pre = ferro.nn.EmbeddingBag.from_pretrained(ferro.tensor(_f32(5, 2), device=dev), mode="max")
    tpre = torch.nn.EmbeddingBag.from_pretrained(torch.tensor(_f32(5, 2)), mode="max")
    _close(pre(ferro.tensor([[1, 2], [3, 4]], device=dev)), tpre(torch.tensor([[1, 2], [3, 4]])))
    assert not pre.weight.requires_grad


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_ctc_loss(dev: str, reduction: str) -> None:
    rng = _rng()
    steps, nb, classes = 12, 3, 5
    logits = rng.normal(size=(steps, nb, classes)).astype(np.float32)
    lp = TF.log_softmax(torch.tensor(logits), -1).numpy()
    targets = np.array([[1, 2, 2, 3], [4, 1, 0, 0], [3, 3, 3, 1]], dtype=np.int64)
    in_len, tg_len = [12, 9, 7], [4, 2, 4]
    kw = {"reduction": reduction}
    # gradients with respect to the logits: PyTorch's CTC backward assumes its input came from log_softmax
    _check(dev, [logits], lambda a: F.ctc_loss(a.log_softmax(-1), ferro.tensor(targets, device=dev), in_len, tg_len,
                                               **kw),
           lambda a: TF.ctc_loss(a.log_softmax(-1), torch.tensor(targets), in_len, tg_len, **kw), rtol=1e-4,
           atol=1e-5)
    flat = np.concatenate([targets[i, :n] for i, n in enumerate(tg_len)])
    _check(dev, [logits], lambda a: F.ctc_loss(a.log_softmax(-1), ferro.tensor(flat, device=dev), in_len, tg_len,
                                               blank=0, **kw),
           lambda a: TF.ctc_loss(a.log_softmax(-1), torch.tensor(flat), in_len, tg_len, blank=0, **kw), rtol=1e-4,
           atol=1e-5)
    # an impossible alignment (3 repeated labels need 5 steps): inf, or 0 with zero_infinity
    for zero in (False, True):
        mine = F.ctc_loss(ferro.tensor(lp, device=dev), ferro.tensor(targets, device=dev), [12, 4, 7], tg_len,
                          reduction="none", zero_infinity=zero)
        theirs = TF.ctc_loss(torch.tensor(lp), torch.tensor(targets), [12, 4, 7], tg_len, reduction="none",
                             zero_infinity=zero)
        _close(mine, theirs, 1e-4)
    mod = ferro.nn.CTCLoss(blank=4, zero_infinity=True)
    tmod = torch.nn.CTCLoss(blank=4, zero_infinity=True)
    _close(mod(ferro.tensor(lp, device=dev), ferro.tensor(targets % 4, device=dev), in_len, tg_len),
           tmod(torch.tensor(lp), torch.tensor(targets % 4), in_len, tg_len), 1e-4)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_margin_and_linear_losses(dev: str, reduction: str) -> None:
    x = _f32(4, 5)
    target = np.array([[3, 0, -1, 1, 2], [1, 2, 3, 4, 0], [-1, 1, 1, 1, 1], [4, 4, -1, 0, 0]], dtype=np.int64)
    r = {"reduction": reduction}
    _check(dev, [x], lambda a: F.multilabel_margin_loss(a, ferro.tensor(target, device=dev), **r),
           lambda a: TF.multilabel_margin_loss(a, torch.tensor(target), **r))
    _check(dev, [x[0]], lambda a: F.multilabel_margin_loss(a, ferro.tensor(target[0], device=dev), **r),
           lambda a: TF.multilabel_margin_loss(a, torch.tensor(target[0]), **r))
    y, z = _f32(4, 5), _f32(4, 5)
    for kw in ({}, {"margin": 0.5, "swap": True}):
        _check(dev, [x, y, z], lambda a, b, c: F.triplet_margin_with_distance_loss(a, b, c, **kw, **r),
               lambda a, b, c: TF.triplet_margin_with_distance_loss(a, b, c, **kw, **r), grad=(0, 1, 2))
    _check(dev, [x, y, z],
           lambda a, b, c: F.triplet_margin_with_distance_loss(
               a, b, c, distance_function=lambda u, v: 1 - F.cosine_similarity(u, v), **r),
           lambda a, b, c: TF.triplet_margin_with_distance_loss(
               a, b, c, distance_function=lambda u, v: 1 - TF.cosine_similarity(u, v), **r), grad=(0, 1, 2))
    w, b = _f32(3, 5), _f32(3)
    cls = np.array([0, 2, 1, 2])
    for kw in ({}, {"label_smoothing": 0.1, "ignore_index": 1}):
        _check(dev, [x, w, b], lambda a, c, d: F.linear_cross_entropy(
            a, c, ferro.tensor(cls, device=dev), linear_bias=d, **kw, **r),
            lambda a, c, d: TF.linear_cross_entropy(a, c, torch.tensor(cls), linear_bias=d, **kw, **r),
            grad=(0, 1, 2))
    mod, tmod = ferro.nn.MultiLabelMarginLoss(**r), torch.nn.MultiLabelMarginLoss(**r)
    _close(mod(ferro.tensor(x, device=dev), ferro.tensor(target, device=dev)), tmod(torch.tensor(x),
                                                                                   torch.tensor(target)))
    mod2 = ferro.nn.TripletMarginWithDistanceLoss(margin=0.3, **r)
    tmod2 = torch.nn.TripletMarginWithDistanceLoss(margin=0.3, **r)
    _close(mod2(*(ferro.tensor(v, device=dev) for v in (x, y, z))), tmod2(*(torch.tensor(v) for v in (x, y, z))))


def test_prelu_and_gumbel_softmax(dev: str) -> None:
    x = _f32(3, 4, 5)
    for w in (_f32(1), _f32(4)):
        _check(dev, [x, w], F.prelu, TF.prelu, grad=(0, 1))
    fx = ferro.tensor(x, device=dev, requires_grad=True)
    ferro.manual_seed(0)
    soft = F.gumbel_softmax(fx, tau=0.5, dim=1)
    np.testing.assert_allclose(soft.sum(1).detach().numpy(), 1.0, rtol=1e-5)
    hard = F.gumbel_softmax(fx, hard=True)
    assert set(np.unique(hard.detach().numpy())) <= {0.0, 1.0}
    np.testing.assert_array_equal(hard.detach().numpy().sum(-1), 1.0)
    hard.sum().backward()  # straight through: the soft sample's gradient, which sums to 0 per row
    np.testing.assert_allclose(fx.grad.numpy().sum(-1), 0.0, atol=1e-5)
    # the argmax of a sample is distributed as softmax(logits)
    ferro.manual_seed(1)
    logits = ferro.tensor([[0.0, 1.0, 2.0]], device=dev).expand(20000, 3)
    freq = F.gumbel_softmax(logits, hard=True).detach().numpy().mean(0)
    np.testing.assert_allclose(freq, np.exp([0, 1, 2]) / np.exp([0, 1, 2]).sum(), atol=0.015)


# -- layers: PyTorch's parameters, so that state_dicts load both ways -------------------------------------------


def _load_torch(mine: Any, theirs: Any, dev: str) -> None:
    assert list(mine.state_dict()) == list(theirs.state_dict())
    mine.load_state_dict({k: ferro.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()})
    mine.to(dev)


@pytest.mark.parametrize(("name", "args", "shape"), [
    ("ConvTranspose3d", (4, 6, (2, 3, 2)), (2, 4, 3, 4, 3)),
    ("InstanceNorm3d", (3,), (2, 3, 4, 3, 5)),
    ("Fold", ((5, 6), 2), (2, 12, 20)),
    ("Unfold", ((2, 3),), (2, 3, 5, 6)),
])
def test_new_layers_load_torch_state(dev: str, name: str, args: tuple, shape: tuple) -> None:
    kw = {"affine": True, "track_running_stats": True} if name == "InstanceNorm3d" else {}
    theirs = getattr(torch.nn, name)(*args, **kw)
    mine = getattr(ferro.nn, name)(*args, **kw)
    if name == "InstanceNorm3d":
        with torch.no_grad():
            theirs.weight.uniform_(0.5, 1.5)
            theirs.running_mean.uniform_(-1, 1)
    _load_torch(mine, theirs, dev)
    x = _f32(*shape)
    _close(mine(ferro.tensor(x, device=dev)), theirs(torch.tensor(x)), 1e-4, 1e-5)
    if name == "InstanceNorm3d":  # running statistics: PyTorch's update in training, used in eval
        _close(mine.eval()(ferro.tensor(x, device=dev)), theirs.eval()(torch.tensor(x)), 1e-4, 1e-5)


def test_linear_cross_entropy_loss_module(dev: str) -> None:
    torch.manual_seed(0)
    for kw in ({}, {"bias": True, "out_features": (2, 3), "label_smoothing": 0.1}):
        theirs = torch.nn.LinearCrossEntropyLoss(5, 4, **kw)
        mine = ferro.nn.LinearCrossEntropyLoss(5, 4, **kw)
        _load_torch(mine, theirs, dev)
        x = _f32(3, 5)
        target = np.random.default_rng(1).integers(0, 4, (3, *kw.get("out_features", ()))).astype(np.int64)
        fx, tx = _pair(x, dev, True)
        mine_loss, their_loss = mine(fx, ferro.tensor(target, device=dev)), theirs(tx, torch.tensor(target))
        _close(mine_loss, their_loss, 1e-5)
        mine_loss.backward()
        their_loss.backward()
        _close(fx.grad, tx.grad, 1e-4, 1e-6)
        _close(mine.linear.weight.grad, theirs.linear.weight.grad, 1e-4, 1e-6)


@pytest.mark.parametrize(("lazy", "full", "shape", "args"), [
    ("LazyLinear", "Linear", (3, 7), (4,)),
    ("LazyConv1d", "Conv1d", (2, 3, 8), (5, 3)),
    ("LazyConv2d", "Conv2d", (2, 3, 6, 6), (4, 3)),
    ("LazyConv3d", "Conv3d", (2, 2, 4, 4, 4), (3, 2)),
    ("LazyConvTranspose1d", "ConvTranspose1d", (2, 3, 5), (4, 2)),
    ("LazyConvTranspose2d", "ConvTranspose2d", (2, 3, 4, 4), (2, 3)),
    ("LazyConvTranspose3d", "ConvTranspose3d", (1, 2, 3, 3, 3), (2, 2)),
    ("LazyBatchNorm1d", "BatchNorm1d", (4, 6), ()),
    ("LazyBatchNorm2d", "BatchNorm2d", (2, 3, 4, 4), ()),
    ("LazyBatchNorm3d", "BatchNorm3d", (2, 3, 2, 3, 2), ()),
    ("LazyInstanceNorm1d", "InstanceNorm1d", (2, 3, 5), ()),
    ("LazyInstanceNorm2d", "InstanceNorm2d", (2, 3, 4, 4), ()),
    ("LazyInstanceNorm3d", "InstanceNorm3d", (2, 3, 2, 3, 2), ()),
])
def test_lazy_layers(dev: str, lazy: str, full: str, shape: tuple, args: tuple) -> None:
    x = _f32(*shape)
    m = getattr(ferro.nn, lazy)(*args)
    assert m.has_uninitialized_params() and not list(m.parameters())
    seen = []
    m.register_forward_hook(lambda mod, inp, out: seen.append(type(mod).__name__))
    m.to(dev)  # replayed on the parameters once they exist
    out = m(ferro.tensor(x, device=dev))
    assert type(m) is getattr(ferro.nn, full) and seen == [full]
    tm = getattr(torch.nn, lazy)(*args)
    tm(torch.tensor(x))
    assert [(k, tuple(v.shape)) for k, v in m.state_dict().items()] == \
        [(k, tuple(v.shape)) for k, v in tm.state_dict().items()]
    assert all(p.device == ferro.device(dev) for p in m.parameters())
    # a state_dict sizes a fresh lazy layer (PyTorch's parameters, then the same outputs)
    fresh = getattr(ferro.nn, lazy)(*args)
    fresh.load_state_dict({k: ferro.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    fresh.to(dev)
    tm.train()
    _close(fresh(ferro.tensor(x, device=dev)), tm(torch.tensor(x)), 1e-4, 1e-5)
    assert out.shape == tuple(tm(torch.tensor(x)).shape)


# -- optimizers: the same parameters as torch after N steps ---------------------------------------------------


def _optimize(lib: Any, make: Callable[[list[Any]], Any], dev: str | None, vector: bool) -> list[np.ndarray]:
    rng = _rng()
    x, y = rng.normal(size=(16, 5)).astype(np.float32), rng.normal(size=(16, 3)).astype(np.float32)
    w0, b0 = rng.normal(size=(5, 3)).astype(np.float32), rng.normal(size=(3,)).astype(np.float32)
    kw = {"device": dev} if dev else {}
    w, b = lib.tensor(w0, requires_grad=True, **kw), lib.tensor(b0, requires_grad=True, **kw)
    params = [w, b] if vector else [w]
    opt = make(params)
    xs, ys = lib.tensor(x, **kw), lib.tensor(y, **kw)
    out = []
    for _ in range(10):
        opt.zero_grad()
        (((xs @ w + b - ys) ** 2).mean() + 0.1 * (w ** 4).sum()).backward()
        opt.step()
        out.append(np.concatenate([p.detach().numpy().ravel() for p in params]))
    return out


@pytest.mark.parametrize(("name", "kwargs"), [
    ("Adafactor", {}), ("Adafactor", {"lr": 0.05, "beta2_decay": -0.5, "d": 2.0, "weight_decay": 0.1}),
    ("Adafactor", {"eps": (1e-3, 1e-2), "maximize": True}),
    ("Muon", {}), ("Muon", {"lr": 0.02, "momentum": 0.9, "nesterov": False, "adjust_lr_fn": "match_rms_adamw"}),
])
def test_new_optimizers_match_torch(dev: str, name: str, kwargs: dict) -> None:
    vector = name != "Muon"  # Muon takes matrices only
    mine = _optimize(ferro, lambda ps: getattr(ferro.optim, name)(ps, **kwargs), dev, vector)
    theirs = _optimize(torch, lambda ps: getattr(torch.optim, name)(ps, **kwargs), None, vector)
    # Muon orthogonalizes in bfloat16, as PyTorch does: its roundings differ by a few bfloat16 ulps
    tol = {"rtol": 2e-2, "atol": 2e-3} if name == "Muon" else {"rtol": 1e-4, "atol": 1e-5}
    for step, (a, b) in enumerate(zip(mine, theirs, strict=True)):
        np.testing.assert_allclose(a, b, **tol, err_msg=f"step {step}")
    with pytest.raises(ValueError, match="Muon only supports 2D"):
        ferro.optim.Muon([ferro.zeros(3, requires_grad=True)])
    with pytest.raises(ValueError, match="beta2_decay"):
        ferro.optim.Adafactor([ferro.zeros(3, requires_grad=True)], beta2_decay=0.5)


@pytest.mark.parametrize("n", [2, 3])
def test_fractional_max_pool(dev: str, n: int) -> None:
    shape, k, out = ((2, 3, 9, 11), (2, 3), (4, 5)) if n == 2 else ((2, 2, 7, 8, 9), (2, 3, 2), (3, 4, 5))
    x = _f32(*shape)
    u = _rng().random((2, shape[1], n)).astype(np.float32)
    fu, tu = ferro.tensor(u, device=dev), torch.tensor(u)
    name = f"fractional_max_pool{n}d"
    _check(dev, [x], lambda a: getattr(F, name)(a, k, output_size=out, _random_samples=fu),
           lambda a: getattr(TF, name)(a, k, output_size=out, _random_samples=tu))
    ratio = (0.6,) * n
    fx, tx = _pair(x, dev)
    mine, idx = getattr(F, f"{name}_with_indices")(fx, k, output_ratio=ratio, _random_samples=fu)
    theirs, tidx = getattr(TF, f"{name}_with_indices")(tx, k, output_ratio=ratio, _random_samples=tu)
    _close(mine, theirs)
    np.testing.assert_array_equal(idx.numpy(), tidx.numpy())
    layer = getattr(ferro.nn, f"FractionalMaxPool{n}d")(k, output_size=out, _random_samples=fu)
    _close(layer(fx), getattr(torch.nn, f"FractionalMaxPool{n}d")(k, output_size=out, _random_samples=tu)(tx))
    drawn = getattr(F, name)(fx, k, output_size=out)  # random windows: each output is one of the input's values
    assert np.isin(drawn.numpy(), x).all() and drawn.shape == theirs.shape[:2] + tuple(out)
    with pytest.raises(ValueError, match=name):
        getattr(F, name)(fx, k, output_size=[s + 1 for s in shape[2:]])


def test_adaptive_log_softmax(dev: str) -> None:
    torch.manual_seed(0)
    theirs = torch.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3, 6], div_value=2.0, head_bias=True)
    mine = ferro.nn.AdaptiveLogSoftmaxWithLoss(8, 10, [3, 6], div_value=2.0, head_bias=True)
    _load_torch(mine, theirs, dev)
    x = _f32(7, 8)
    target = np.array([0, 9, 4, 2, 7, 5, 3])
    fx, tx = _pair(x, dev, True)
    out, loss = mine(fx, ferro.tensor(target, device=dev))
    tout, tloss = theirs(tx, torch.tensor(target))
    _close(out, tout, 1e-5)
    _close(loss, tloss, 1e-5)
    loss.backward()
    tloss.backward()
    _close(fx.grad, tx.grad, 1e-4, 1e-6)
    _close(mine.tail[1][0].weight.grad, theirs.tail[1][0].weight.grad, 1e-4, 1e-6)
    _close(mine.log_prob(fx), theirs.log_prob(tx), 1e-5)
    np.testing.assert_array_equal(mine.predict(fx).numpy(), theirs.predict(tx).numpy())
    with pytest.raises(ValueError, match="Target values"):
        mine(fx, ferro.tensor([10] * 7, device=dev))


def test_data_parallel_and_functional_attention(dev: str) -> None:
    inner = ferro.nn.Linear(4, 3).to(dev)
    wrapped = ferro.nn.DataParallel(inner)
    tinner = torch.nn.Linear(4, 3)
    twrapped = torch.nn.DataParallel(tinner)
    assert list(wrapped.state_dict()) == list(twrapped.state_dict()) == ["module.weight", "module.bias"]
    wrapped.load_state_dict({k: ferro.tensor(v.detach().numpy()) for k, v in twrapped.state_dict().items()})
    x = _f32(5, 4)
    _close(wrapped(ferro.tensor(x, device=dev)), twrapped(torch.tensor(x)))
    with pytest.raises(NotImplementedError, match="DistributedDataParallel"):
        ferro.nn.DataParallel(inner, device_ids=[0, 1])
    e, heads = 8, 2
    rng = _rng()
    q, k = rng.normal(size=(5, 3, e)).astype(np.float32), rng.normal(size=(6, 3, e)).astype(np.float32)
    w, b = (rng.normal(size=(3 * e, e)) * 0.3).astype(np.float32), rng.normal(size=(3 * e,)).astype(np.float32)
    ow, ob = rng.normal(size=(e, e)).astype(np.float32), rng.normal(size=(e,)).astype(np.float32)
    bias_kv = rng.normal(size=(1, 1, e)).astype(np.float32)
    pad = np.zeros((3, 6), bool)
    pad[1, 4:] = True

    def run(lib: Any, functional: Any, device: str | None, **kw: Any) -> Any:
        def t(a: np.ndarray) -> Any:
            return lib.tensor(a, device=device) if device else lib.tensor(a)
        return functional.multi_head_attention_forward(t(q), t(k), t(k), e, heads, t(w), t(b), t(bias_kv), t(bias_kv),
                                                       True, 0.0, t(ow), t(ob), training=False,
                                                       key_padding_mask=t(pad), **kw)
    for kw in ({}, {"average_attn_weights": False}):
        out, weights = run(ferro, F, dev, **kw)
        tout, tweights = run(torch, TF, None, **kw)
        _close(out, tout, 1e-4, 1e-5)
        _close(weights, tweights, 1e-4, 1e-6)


@pytest.mark.parametrize(("mode", "shape"), [("linear", (2, 3, 7)), ("bilinear", (2, 3, 5, 6)),
                                             ("bicubic", (2, 3, 5, 6)), ("trilinear", (1, 2, 4, 5, 3)),
                                             ("area", (2, 3, 5, 6)), ("nearest-exact", (1, 2, 4, 5, 3))])
def test_interpolate_modes(dev: str, mode: str, shape: tuple) -> None:
    x = _f32(*shape)
    n = len(shape) - 2
    size = (9, 4, 6)[:n]
    cases: list[dict] = [{"size": size}, {"scale_factor": 1.7}, {"scale_factor": 0.6},
                         {"scale_factor": 1.7, "recompute_scale_factor": True}]
    if mode not in ("area", "nearest-exact"):
        cases.append({"size": size, "align_corners": True})
    for kw in cases:
        _check(dev, [x], lambda a: F.interpolate(a, mode=mode, **kw), lambda a: TF.interpolate(a, mode=mode, **kw),
               grad=() if mode == "nearest-exact" else (0,), rtol=1e-4, atol=1e-5)
    up = ferro.nn.Upsample(scale_factor=1.5, mode=mode, recompute_scale_factor=True)
    tup = torch.nn.Upsample(scale_factor=1.5, mode=mode, recompute_scale_factor=True)
    _close(up(ferro.tensor(x, device=dev)), tup(torch.tensor(x)), 1e-4, 1e-5)
    with pytest.raises(ValueError, match="interpolate"):
        F.interpolate(ferro.tensor(x, device=dev), scale_factor=2, mode="bogus")


@pytest.mark.parametrize("name", ["Adafactor", "Muon"])
def test_new_optimizers_resume_from_state_dict(name: str) -> None:
    """Steps after load_state_dict continue as if the optimizer had never stopped."""
    def make(params: list) -> Any:
        return getattr(ferro.optim, name)(params, lr=0.02)
    whole = _optimize(ferro, make, "cpu", name != "Muon")
    rng = _rng()
    x, y = rng.normal(size=(16, 5)).astype(np.float32), rng.normal(size=(16, 3)).astype(np.float32)
    w0, b0 = rng.normal(size=(5, 3)).astype(np.float32), rng.normal(size=(3,)).astype(np.float32)
    w, b = ferro.tensor(w0, requires_grad=True), ferro.tensor(b0, requires_grad=True)
    params = [w, b] if name != "Muon" else [w]
    opt = make(params)
    xs, ys = ferro.tensor(x), ferro.tensor(y)
    for step in range(10):
        if step == 4:  # a fresh optimizer from the saved state
            saved = opt.state_dict()
            opt = make(params)
            opt.load_state_dict(saved)
        opt.zero_grad()
        (((xs @ w + b - ys) ** 2).mean() + 0.1 * (w ** 4).sum()).backward()
        opt.step()
    np.testing.assert_allclose(np.concatenate([p.detach().numpy().ravel() for p in params]), whole[-1], rtol=1e-6)
