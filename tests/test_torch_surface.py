"""The rest of the ``torch`` / ``Tensor`` surface, against PyTorch on every installed backend: the ATen-signature
forms of nn and linalg functions (``torch.batch_norm``, ``torch.svd``...), the small tensor functions and
methods (``quantile``, ``gradient``, the ``*_scatter`` ops, in-place shape methods...), and the namespace's
switches and helpers (autocast's setters, ``cond``, ``vmap``, ``asarray``...)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import ferro

torch = pytest.importorskip("torch")
RNG = np.random.default_rng(0)


def _np(t: Any) -> Any:
    if isinstance(t, (tuple, list)):
        return [_np(v) for v in t]
    if isinstance(t, torch.Tensor):
        return t.detach().resolve_conj().numpy()
    return t.detach().numpy() if isinstance(t, ferro.Tensor) else np.asarray(t)


def _same(mine: Any, theirs: Any, rtol: float = 1e-7, atol: float = 1e-9) -> None:
    if isinstance(theirs, (tuple, list)):
        assert len(mine) == len(theirs)
        for m, t in zip(mine, theirs):
            _same(m, t, rtol, atol)
        return
    a, b = _np(mine), _np(theirs)
    assert a.shape == b.shape, (a.shape, b.shape)
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, equal_nan=True)


def _pair(a: np.ndarray, device: str, grad: bool = False) -> tuple[ferro.Tensor, Any]:
    return ferro.tensor(a, device=device, requires_grad=grad), torch.tensor(a, requires_grad=grad)


# -- ATen's nn forms -------------------------------------------------------------------------------------------


def test_norms_with_aten_argument_order(device: str) -> None:
    (x, tx) = _pair(RNG.normal(size=(4, 3, 5)), device)
    (w, tw), (b, tb) = _pair(RNG.normal(size=3), device), _pair(RNG.normal(size=3), device)
    (m, tm), (v, tv) = _pair(RNG.normal(size=3), device), _pair(RNG.random(3) + 0.5, device)
    _same(ferro.batch_norm(x, w, b, m, v, False, 0.1, 1e-5, True),
          torch.batch_norm(tx, tw, tb, tm, tv, False, 0.1, 1e-5, True))
    _same(ferro.batch_norm(x, w, b, m, v, True, 0.1, 1e-5, True),
          torch.batch_norm(tx, tw, tb, tm, tv, True, 0.1, 1e-5, True))
    _same(m, tm)  # running statistics updated alike
    _same(ferro.instance_norm(x, w, b, None, None, True, 0.1, 1e-5, False),
          torch.instance_norm(tx, tw, tb, None, None, True, 0.1, 1e-5, False))
    _same(ferro.norm_except_dim(x, 2, 0), torch.norm_except_dim(tx, 2, 0))
    _same(ferro.norm_except_dim(x, 3, 1), torch.norm_except_dim(tx, 3, 1))
    _same(ferro.norm_except_dim(x, 2, -1), torch.norm_except_dim(tx, 2, -1))


@pytest.mark.parametrize("reduction", [0, 1, 2])
def test_losses_with_integer_reductions(device: str, reduction: int) -> None:
    (a, ta), (b, tb) = _pair(RNG.normal(size=(4, 3)), device, True), _pair(RNG.normal(size=(4, 3)), device)
    sign = np.where(RNG.random(4) > 0.5, 1.0, -1.0)
    (y, ty), (y3, ty3) = _pair(sign, device), _pair(np.where(RNG.random((4, 3)) > 0.5, 1.0, -1.0), device)
    (p, tp) = _pair(RNG.random((4, 3)), device)
    cases = [
        (lambda f, a, b: f.binary_cross_entropy_with_logits(a, p if f is ferro else tp, None, None, reduction)),
        (lambda f, a, b: f.cosine_embedding_loss(a, b, y if f is ferro else ty, 0.1, reduction)),
        (lambda f, a, b: f.hinge_embedding_loss(a, y3 if f is ferro else ty3, 0.5, reduction)),
        (lambda f, a, b: f.kl_div(a, (p if f is ferro else tp), reduction, log_target=False)),
        (lambda f, a, b: f.margin_ranking_loss(a, b, y3 if f is ferro else ty3, 0.2, reduction)),
        (lambda f, a, b: f.poisson_nll_loss(a, p if f is ferro else tp, True, True, 1e-8, reduction)),
        (lambda f, a, b: f.triplet_margin_loss(a, b, b.flip(0), 1.0, 2.0, 1e-6, True, reduction)),
    ]
    for case in cases:
        mine, theirs = case(ferro, a, b), case(torch, ta, tb)
        _same(mine, theirs)
        mine.sum().backward()
        theirs.sum().backward()
        _same(a.grad, ta.grad)
        a.grad, ta.grad = None, None


def test_embedding_pooling_padding_and_convolution(device: str) -> None:
    (w, tw) = _pair(RNG.normal(size=(6, 3)), device, True)
    idx = np.array([[0, 2], [5, 2]])
    _same(ferro.embedding(w, ferro.tensor(idx, device=device), 2), torch.embedding(tw, torch.tensor(idx), 2))
    (x, tx) = _pair(RNG.normal(size=(2, 3, 8)), device)
    _same(ferro.adaptive_avg_pool1d(x, 3), torch.adaptive_avg_pool1d(tx, 3))
    _same(ferro.adaptive_max_pool1d(x, 4), torch.adaptive_max_pool1d(tx, 4))
    _same(ferro.max_pool1d_with_indices(x, 3, 2, 1), torch.max_pool1d_with_indices(tx, 3, 2, 1))
    _same(ferro.constant_pad_nd(x, [1, 2, 0, -1], 1.5), torch.constant_pad_nd(tx, [1, 2, 0, -1], 1.5))
    _same(ferro.channel_shuffle(x.reshape(2, 3, 2, 4), 3), torch.channel_shuffle(tx.reshape(2, 3, 2, 4), 3))
    _same(ferro.pdist(x[0]), torch.pdist(tx[0]))
    (k, tk), (bias, tbias) = _pair(RNG.normal(size=(4, 3, 3)), device), _pair(RNG.normal(size=4), device)
    _same(ferro.convolution(x, k, bias, [2], [1], [1], False, [0], 1),
          torch.convolution(tx, tk, tbias, [2], [1], [1], False, [0], 1))
    (kt, tkt) = _pair(RNG.normal(size=(3, 2, 3)), device)
    _same(ferro.convolution(x, kt, None, [2], [1], [1], True, [1], 1),
          torch.convolution(tx, tkt, None, [2], [1], [1], True, [1], 1))
    (k2, tk2) = _pair(RNG.normal(size=(4, 3, 2, 2)), device)
    _same(ferro.convolution(x.reshape(2, 3, 2, 4), k2, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1),
          torch.convolution(tx.reshape(2, 3, 2, 4), tk2, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1))
    (t, tt), (kw, tkw) = _pair(RNG.normal(size=(7, 2, 3)), device), _pair(RNG.normal(size=(3, 3, 4)), device)
    _same(ferro.conv_tbc(t, kw, bias, 1), torch.conv_tbc(tt, tkw, tbias, 1))
    with ferro.no_grad():
        w2 = w.detach().clone() * 3
    tw2 = tw.detach().clone() * 3
    ferro.embedding_renorm_(w2, ferro.tensor([0, 2, 2], device=device), 1.0, 2.0)
    torch.embedding_renorm_(tw2, torch.tensor([0, 2, 2]), 1.0, 2.0)
    _same(w2, tw2)


def test_dropouts_at_deterministic_settings(device: str) -> None:
    (x, tx) = _pair(RNG.normal(size=(2, 3, 4)), device)
    for name in ("alpha_dropout", "feature_alpha_dropout", "feature_dropout"):
        _same(getattr(ferro, name)(x, 0.5, False), getattr(torch, name)(tx, 0.5, False))
        _same(getattr(ferro, name)(x, 0.0, True), getattr(torch, name)(tx, 0.0, True))
    _same(ferro.feature_dropout(x, 1.0, True), torch.feature_dropout(tx, 1.0, True))
    _same(ferro.rrelu(x), torch.rrelu(tx))
    kept = ferro.feature_dropout(ferro.ones(50, 40, 3, device=device), 0.5, True)
    per_channel = kept.numpy()
    assert set(np.unique(per_channel)) <= {0.0, 2.0}
    assert (per_channel == per_channel[:, :, :1]).all()  # whole channels kept or dropped
    for name in ("dropout_", "alpha_dropout_", "feature_alpha_dropout_", "feature_dropout_"):
        y, ty = x.clone(), tx.clone()
        assert getattr(ferro, name)(y, 0.5, False) is y
        getattr(torch, name)(ty, 0.5, False)
        _same(y, ty)
    y = x.clone()
    ferro.dropout_(y, 1.0, True)
    assert (y.numpy() == 0).all()
    y = x.clone()
    ferro.rrelu_(y)
    _same(y, torch.rrelu(tx))


def test_rnn_cells_and_layers(device: str) -> None:
    n, hid, feat = 3, 4, 5
    (x, tx), (h, th) = _pair(RNG.normal(size=(n, feat)), device, True), _pair(RNG.normal(size=(n, hid)), device)
    (c, tc) = _pair(RNG.normal(size=(n, hid)), device)
    for cell, gates in (("lstm_cell", 4), ("gru_cell", 3), ("rnn_tanh_cell", 1), ("rnn_relu_cell", 1)):
        ws = [_pair(RNG.normal(size=s), device) for s in ((gates * hid, feat), (gates * hid, hid), (gates * hid,),
                                                           (gates * hid,))]
        state, tstate = ((h, c), (th, tc)) if cell == "lstm_cell" else (h, th)
        mine = getattr(ferro, cell)(x, state, *[w for w, _ in ws])
        theirs = getattr(torch, cell)(tx, tstate, *[t for _, t in ws])
        _same(mine, theirs)
    seq = RNG.normal(size=(6, 2, feat))
    for name, gates in (("lstm", 4), ("gru", 3), ("rnn_tanh", 1), ("rnn_relu", 1)):
        for bidirectional, batch_first in ((False, False), (True, True)):
            dirs = 2 if bidirectional else 1
            params = []
            for layer in range(2):
                width = feat if layer == 0 else hid * dirs
                for _ in range(dirs):
                    params += [RNG.normal(size=s) * 0.5 for s in ((gates * hid, width), (gates * hid, hid),
                                                                  (gates * hid,), (gates * hid,))]
            inp = seq.transpose(1, 0, 2) if batch_first else seq
            h0 = RNG.normal(size=(2 * dirs, 2, hid))
            c0 = RNG.normal(size=(2 * dirs, 2, hid))
            fp = [ferro.tensor(p, device=device) for p in params]
            tp = [torch.tensor(p) for p in params]
            fh = [ferro.tensor(h0, device=device), ferro.tensor(c0, device=device)] if name == "lstm" else \
                ferro.tensor(h0, device=device)
            thx = [torch.tensor(h0), torch.tensor(c0)] if name == "lstm" else torch.tensor(h0)
            mine = getattr(ferro, name)(ferro.tensor(inp, device=device), fh, fp, True, 2, 0.0, False,
                                        bidirectional, batch_first)
            theirs = getattr(torch, name)(torch.tensor(inp), thx, tp, True, 2, 0.0, False, bidirectional, batch_first)
            _same(mine, theirs, rtol=1e-6)


# -- linalg's older forms ----------------------------------------------------------------------------------------


def _refused_without_linalg(device: str, op: str, call: Any) -> bool:
    """On a backend without ``op``'s kernels (OpenCL has no factorizations), the call raises
    UnsupportedOperationError naming it: True then, and the test stops there."""
    if ferro.backends.get(ferro.device(device).type).supports(op, ferro.float64):
        return False
    with pytest.raises(ferro.UnsupportedOperationError, match=op):
        call()
    return True


def _spd(n: int, batch: tuple[int, ...] = ()) -> np.ndarray:
    a = RNG.normal(size=(*batch, n, n))
    return a @ np.swapaxes(a, -1, -2) + n * np.eye(n)


def test_cholesky_family(device: str) -> None:
    (a, ta) = _pair(_spd(3, (2,)), device, True)
    if _refused_without_linalg(device, "linalg.cholesky", lambda: ferro.cholesky(a)):
        return
    (b, tb) = _pair(RNG.normal(size=(2, 3, 2)), device, True)
    for upper in (False, True):
        _same(ferro.cholesky(a, upper), torch.cholesky(ta, upper))
        ch, tch = ferro.cholesky(a, upper), torch.cholesky(ta, upper)
        _same(ferro.cholesky_solve(b, ch, upper), torch.cholesky_solve(tb, tch, upper), rtol=1e-6)
        _same(ch.cholesky_inverse(upper), tch.cholesky_inverse(upper), rtol=1e-6)
    x, tx = b.cholesky_solve(a.cholesky()), tb.cholesky_solve(ta.cholesky())
    x.sum().backward()
    tx.sum().backward()
    _same(a.grad, ta.grad, rtol=1e-6)
    _same(b.grad, tb.grad, rtol=1e-6)


# not on the array-API-strict test backend: its linalg.lu_factor kernel writes int64 pivots into an int32 array
@pytest.mark.ferro_backends("cpu", "opencl", "cuda")
def test_lu_family_and_triangular_solve(device: str) -> None:
    (a, ta) = _pair(RNG.normal(size=(2, 4, 4)), device)
    (b, tb) = _pair(RNG.normal(size=(2, 4, 3)), device)
    if _refused_without_linalg(device, "linalg.lu_factor", lambda: ferro.lu(a)):
        return
    lu, piv = ferro.lu(a)
    tlu, tpiv = torch.linalg.lu_factor(ta)
    _same((lu, piv), (tlu, tpiv))
    _same(ferro.lu(a, get_infos=True)[2], torch.zeros(2, dtype=torch.int32))
    _same(ferro.lu_unpack(lu, piv), torch.lu_unpack(tlu, tpiv))
    tr = torch.tensor(RNG.normal(size=(3, 5)))
    rlu, rpiv = torch.linalg.lu_factor(tr)
    _same(ferro.lu_unpack(ferro.tensor(rlu.numpy(), device=device), ferro.tensor(rpiv.numpy(), device=device)),
          torch.lu_unpack(rlu, rpiv))
    _same(ferro.lu_solve(b, lu, piv), torch.lu_solve(tb, tlu, tpiv), rtol=1e-6)
    _same(b.lu_solve(lu, piv), tb.lu_solve(tlu, tpiv), rtol=1e-6)
    (t, tt) = _pair(np.triu(RNG.normal(size=(4, 4))) + 3 * np.eye(4), device)
    for upper, transpose, unit in ((True, False, False), (False, True, False), (True, True, True)):
        tri = t if upper else t.mT
        ttri = tt if upper else tt.mT
        _same(ferro.triangular_solve(b, tri, upper, transpose, unit),
              torch.triangular_solve(tb, ttri, upper, transpose, unit), rtol=1e-6)


def test_qr_svd_pinverse_and_norms(device: str) -> None:
    (a, ta) = _pair(RNG.normal(size=(2, 5, 3)), device)
    _same(ferro.matrix_power(a[..., :3, :], 3), torch.matrix_power(ta[..., :3, :], 3), rtol=1e-6)
    _same(a[..., :3, :].matrix_exp(), ta[..., :3, :].matrix_exp(), rtol=1e-6)
    if _refused_without_linalg(device, "linalg.qr", lambda: ferro.qr(a)):
        return
    for some in (True, False):
        q, r = ferro.qr(a, some)
        tq, trr = torch.qr(ta, some)
        assert q.shape == tuple(tq.shape) and r.shape == tuple(trr.shape)
        _same(q @ r, ta)
        u, s, v = a.svd(some)
        tu, ts, tv = ta.svd(some)
        assert (u.shape, v.shape) == (tuple(tu.shape), tuple(tv.shape))
        _same(s, ts)
        k = s.shape[-1]
        _same((u[..., :k] * s.unsqueeze(-2)) @ v[..., :k].mT, ta)
    _same(ferro.svd(a, compute_uv=False), torch.svd(ta, compute_uv=False))
    _same(ferro.pinverse(a), torch.pinverse(ta), rtol=1e-6)
    _same(a.pinverse(0.5), ta.pinverse(0.5), rtol=1e-6)
    _same(ferro.nuclear_norm(a[0]), torch.nuclear_norm(ta[0]))
    _same(ferro.nuclear_norm(a, (1, 2), True), torch.nuclear_norm(ta, (1, 2), True))
    _same(ferro.frobenius_norm(a, (1, 2)), torch.frobenius_norm(ta, (1, 2)))


def test_householder_family(device: str) -> None:
    (a, ta) = _pair(RNG.normal(size=(2, 5, 3)), device)
    g, tau = ferro.geqrf(a)  # Householder steps in ops: every backend
    tg, ttau = torch.geqrf(ta)
    _same((g, tau), (tg, ttau), rtol=1e-6)
    _same(ferro.orgqr(g, tau), torch.orgqr(tg, ttau), rtol=1e-6)
    (c, tc) = _pair(RNG.normal(size=(2, 5, 2)), device)
    for left, transpose in ((True, False), (True, True)):
        _same(ferro.ormqr(g, tau, c, left, transpose), torch.ormqr(tg, ttau, tc, left, transpose), rtol=1e-6)
    (c2, tc2) = _pair(RNG.normal(size=(2, 4, 5)), device)
    _same(g.ormqr(tau, c2, False, False), tg.ormqr(ttau, tc2, False, False), rtol=1e-6)


def test_low_rank_factorizations(device: str) -> None:
    low = RNG.normal(size=(8, 3)) @ RNG.normal(size=(3, 6))
    (a, _) = _pair(low, device)
    if _refused_without_linalg(device, "linalg.qr", lambda: ferro.svd_lowrank(a, q=3)):
        return
    u, s, v = ferro.svd_lowrank(a, q=3)
    np.testing.assert_allclose(s.numpy(), np.linalg.svd(low, compute_uv=False)[:3], rtol=1e-6)
    _same((u * s) @ v.mT, low)
    u, s, v = ferro.pca_lowrank(a, q=3)
    centered = low - low.mean(0)
    np.testing.assert_allclose(s.numpy(), np.linalg.svd(centered, compute_uv=False)[:3], rtol=1e-6)


# -- Tensor methods that are not ops -------------------------------------------------------------------------------


def test_inplace_shape_methods_match_torch_and_keep_gradients(device: str) -> None:
    (x, tx) = _pair(RNG.normal(size=(2, 3)), device, True)
    y, ty = x * 2, tx * 2
    for name, args in (("t_", ()), ("unsqueeze_", (0,)), ("transpose_", (0, 2)), ("swapaxes_", (1, 2)),
                       ("swapdims_", (0, 1)), ("squeeze_", ())):
        assert getattr(y, name)(*args) is y
        getattr(ty, name)(*args)
        _same(y, ty)
    (y * ferro.arange(6.0, device=device).reshape(y.shape)).sum().backward()
    (ty * torch.arange(6.0).reshape(ty.shape)).sum().backward()
    _same(x.grad, tx.grad)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        x.t_()


#: the backends with the contract's optional 'strided' group (as_strided, storage layouts, addresses)
STRIDED = ("cpu", "opencl", "cuda")


def test_unfold_and_small_methods(device: str) -> None:
    (x, tx) = _pair(RNG.normal(size=(3, 7)), device, True)
    for dim, size, step in ((1, 3, 2), (0, 2, 1), (-1, 7, 1)):
        _same(x.unfold(dim, size, step), tx.unfold(dim, size, step))
    x.unfold(1, 3, 2).sum().backward()
    tx.unfold(1, 3, 2).sum().backward()
    _same(x.grad, tx.grad)
    _same(x.sum_to_size(1, 7), tx.sum_to_size(1, 7))
    _same(x.sum_to_size(7), tx.sum_to_size(7))
    _same(x.narrow_copy(1, 2, 3), tx.narrow_copy(1, 2, 3))
    assert x.is_distributed() is False and x.is_pinned() is False and x.pin_memory() is x
    _same(x.hardshrink(0.3), tx.hardshrink(0.3))
    with pytest.raises(TypeError, match="subclass"):
        x.as_subclass(int)

    class Sub(ferro.Tensor):
        pass
    assert type(x.as_subclass(Sub)) is Sub


@pytest.mark.ferro_backends(*STRIDED)
def test_strided_methods(device: str) -> None:
    (x, tx) = _pair(RNG.normal(size=(3, 7)), device)
    y, ty = x.clone(), tx.clone()
    ferro.as_strided_(y, (3, 2), (1, 3))
    torch.as_strided_(ty, (3, 2), (1, 3))
    _same(y, ty)
    w = x.unfold(1, 3, 2)
    w[0, 0, 0] = 100.0  # a view: the write reaches x
    assert x[0, 0].item() == 100.0
    assert x.t().dim_order() == tuple(tx.t().dim_order()) and x.dim_order() == tuple(tx.dim_order())
    s = ferro.empty_strided((2, 3), (1, 2), device=device)
    assert s.shape == (2, 3) and s.stride() == (1, 2)
    assert x.new_empty_strided((4,), (2,)).stride() == (2,)


@pytest.mark.ferro_backends(*STRIDED)
def test_data_pointers(device: str) -> None:
    x = ferro.arange(6.0, device=device)
    assert x.data_ptr() == x.const_data_ptr() != 0
    assert x[2:].data_ptr() - x.data_ptr() == 2 * x.element_size()
    assert x.clone().data_ptr() != x.data_ptr()


def test_resize_family() -> None:
    x, tx = ferro.arange(6.0), torch.arange(6.0)
    x.resize_(2, 2)
    tx.resize_(2, 2)
    _same(x, tx)
    x.resize_(3, 2)
    assert x.shape == (3, 2)
    _same(x.reshape(-1)[:4], tx.reshape(-1))
    y = ferro.zeros(4)
    ferro.resize_as_(y, ferro.ones(2, 2))
    assert y.shape == (2, 2)
    with pytest.warns(UserWarning):
        assert ferro.arange(6.0).resize(2, 3).shape == (2, 3)
    with pytest.raises(RuntimeError, match="require grad"):
        ferro.zeros(3, requires_grad=True).resize_(2)


def test_python_callbacks() -> None:
    x, tx = ferro.arange(6.0).reshape(2, 3), torch.arange(6.0).reshape(2, 3)
    _same(x.clone().apply_(lambda v: v * v + 1), tx.clone().apply_(lambda v: v * v + 1))
    y, ty = ferro.tensor([1.0, 2.0, 3.0]), torch.tensor([1.0, 2.0, 3.0])
    _same(x.clone().map_(y, lambda a, b: a - b), tx.clone().map_(ty, lambda a, b: a - b))
    _same(x.clone().map2_(y, y * 2, lambda a, b, c: a + b * c), tx.clone().map2_(ty, ty * 2, lambda a, b, c: a + b * c))


def test_python_callbacks_take_cpu_tensors_only(device: str) -> None:
    x = ferro.ones(2, device=device)
    if ferro.device(device).type == "cpu":
        _same(x.apply_(lambda v: v + 1), torch.full((2,), 2.0))
    else:
        with pytest.raises(TypeError, match="only implemented on CPU"):
            x.apply_(abs)


def test_inplace_variants_and_aliases(device: str) -> None:
    (a, ta) = _pair(np.array([12, -18, 7, 0]), device)
    (b, tb) = _pair(np.array([8, 27, 0, 5]), device)
    for name in ("gcd", "lcm"):
        _same(getattr(ferro, name)(a, b), getattr(torch, name)(ta, tb))
        y, ty = a.clone(), ta.clone()
        getattr(ferro, name + "_")(y, b)
        getattr(ty, name + "_")(tb)
        _same(y, ty)
    (x, tx) = _pair(RNG.normal(size=(3, 4)), device)
    idx = np.array([1, 0, 1])
    y, ty = x.clone(), tx.clone()
    y.index_reduce_(0, ferro.tensor(idx, device=device), x, "amax", include_self=False)
    ty.index_reduce_(0, torch.tensor(idx), tx, "amax", include_self=False)
    _same(y, ty)
    for name, args in (("unsafe_chunk", (2, 1)), ("unsafe_split", (3, 1)), ("unsafe_split_with_sizes", ([1, 3], 1))):
        _same(getattr(ferro, name)(x, *args), getattr(torch, name)(tx, *args))
        _same(getattr(x, name)(*args), getattr(tx, name)(*args))
    y = x.to(ferro.float64)
    _same(y.float_power_(2), tx.double().float_power_(2))
    with pytest.raises(RuntimeError, match="float_power_"):
        ferro.ones(2, device=device).float_power_(2)
    y, ty = x.clone(), tx.clone()
    ferro.ldexp_(y, ferro.tensor([1.0, 2.0, 3.0, 4.0], device=device))
    torch.ldexp_(ty, torch.tensor([1.0, 2.0, 3.0, 4.0]))
    _same(y, ty)
    (v, tv) = _pair(RNG.normal(size=4), device)
    y, ty = x[:, 0].clone(), tx[:, 0].clone()
    ferro.addmv_(y, x, v)
    torch.addmv_(ty, tx, tv)
    _same(y, ty)


def test_random_fills_have_the_right_support_and_moments(device: str) -> None:
    ferro.manual_seed(0)
    x = ferro.empty(20000, device=device)
    assert set(np.unique(x.random_(3, 7).numpy())) == {3.0, 4.0, 5.0, 6.0}
    assert set(np.unique(x.random_(4).numpy())) == {0.0, 1.0, 2.0, 3.0}
    ints = ferro.empty(1000, dtype=ferro.int8, device=device).random_().numpy()
    assert ints.min() >= 0 and ints.max() > 100
    e = x.exponential_(2.0).numpy()
    assert e.min() >= 0 and abs(e.mean() - 0.5) < 0.02
    c = x.cauchy_(1.0, 2.0).numpy()
    assert abs(np.median(c) - 1.0) < 0.1 and abs(np.percentile(c, 75) - 3.0) < 0.2
    ln = x.log_normal_(0.0, 0.5).numpy()
    assert ln.min() > 0 and abs(np.log(ln).std() - 0.5) < 0.02
    g = x.geometric_(0.25).numpy()
    assert g.min() == 1 and (g == np.round(g)).all() and abs(g.mean() - 4.0) < 0.15
    with pytest.raises(ValueError, match="geometric_"):
        x.geometric_(1.5)


def test_poisson_and_binomial(device: str) -> None:
    ferro.manual_seed(0)
    rates = ferro.tensor([0.0, 0.5, 4.0, 20.0], device=device).expand(5000, 4)
    p = ferro.poisson(rates).numpy()
    assert (p == np.round(p)).all() and (p[:, 0] == 0).all()
    np.testing.assert_allclose(p.mean(0)[1:], [0.5, 4.0, 20.0], rtol=0.05)
    np.testing.assert_allclose(p.var(0)[1:], [0.5, 4.0, 20.0], rtol=0.1)
    n = ferro.tensor([10.0, 5.0, 3.0], device=device).expand(5000, 3)
    b = ferro.binomial(n, ferro.tensor([0.3, 0.9, 1.0], device=device)).numpy()
    np.testing.assert_allclose(b.mean(0), [3.0, 4.5, 3.0], rtol=0.05)
    np.testing.assert_allclose(b.var(0)[:2], [2.1, 0.45], rtol=0.1)
    with pytest.raises(ValueError, match="non-negative"):
        ferro.poisson(ferro.tensor([-1.0], device=device))


# -- the namespace's helpers ---------------------------------------------------------------------------------------


def test_type_objects_and_result_type() -> None:
    assert isinstance(ferro.float32, ferro.dtype) and isinstance(torch.float32, torch.dtype)
    assert repr(ferro.contiguous_format) == "ferro.contiguous_format"
    assert ferro.ones(2, 3).is_contiguous(memory_format=ferro.contiguous_format)
    with pytest.raises(ValueError, match="memory format"):
        ferro.ones(2, 3).is_contiguous(memory_format=ferro.channels_last)
    cases = [(np.array([1, 2], dtype=np.int32), 1.5), (np.array([1, 2], dtype=np.int32), np.array(2.0)),
             (np.array([1.0], dtype=np.float16), 2), (3, np.array([1], dtype=np.uint8)), (True, 2.5)]
    for a, b in cases:
        fa, fb = (ferro.tensor(v) if isinstance(v, np.ndarray) else v for v in (a, b))
        ta, tb = (torch.tensor(v) if isinstance(v, np.ndarray) else v for v in (a, b))
        assert str(ferro.result_type(fa, fb)).split(".")[1] == str(torch.result_type(ta, tb)).split(".")[1]


@pytest.mark.ferro_backends(*STRIDED)
def test_creation_helpers(device: str) -> None:
    a = np.arange(6.0)
    x = ferro.asarray(a)
    a[0] = 7
    assert x[0].item() == 7  # shares the array
    assert ferro.asarray(x) is x
    y = ferro.asarray(x, copy=True)
    x[1] = -1
    assert y[1].item() == 1
    assert ferro.asarray([1, 2], dtype=ferro.float64, device=device).dtype is ferro.float64
    with pytest.raises(ValueError, match="copy=False"):
        ferro.asarray(x, dtype=ferro.int32, copy=False)
    buf = bytearray(np.arange(5, dtype=np.int32).tobytes())
    f = ferro.frombuffer(buf, dtype=ferro.int32, count=3, offset=4)
    _same(f, torch.frombuffer(bytearray(buf), dtype=torch.int32, count=3, offset=4))
    buf[4:8] = np.int32(9).tobytes()
    assert f[0].item() == 9  # shares the buffer
    p = ferro.empty_permuted((2, 3, 4), (2, 0, 1), device=device)
    tp = torch.empty_permuted((2, 3, 4), (2, 0, 1))
    assert p.shape == tuple(tp.shape) and p.stride() == tp.stride()
    assert ferro.detach(ferro.ones(2, requires_grad=True)).requires_grad is False
    assert ferro.is_distributed(x) is False and ferro.init_num_threads() is None
    with ferro.inference_mode():
        z = ferro.ones(2)
    assert ferro.is_inference(z) is z.is_inference()  # ferro's inference mode makes ordinary tensors
    t = torch.from_dlpack(ferro.to_dlpack(ferro.arange(3.0)))
    _same(t, torch.arange(3.0))


def test_control_flow_and_vmap(device: str) -> None:
    (x, tx) = _pair(RNG.normal(size=(4, 3)), device)
    _same(ferro.cond(x.sum() > 0, lambda a: a + 1, lambda a: a - 1, (x,)),
          torch.cond(tx.sum() > 0, lambda a: a + 1, lambda a: a - 1, (tx,)))
    _same(ferro.cond(False, lambda a: a + 1, lambda a: a - 1, (x,)), tx - 1)
    out = ferro.while_loop(lambda i, v: i < 5, lambda i, v: (i + 1, v * 2), (ferro.tensor(0, device=device), x))
    tout = torch.while_loop(lambda i, v: i < 5, lambda i, v: (i + 1, v * 2), (torch.tensor(0), tx))
    _same(out, tout)
    (v, tv) = _pair(RNG.normal(size=3), device)
    _same(ferro.vmap(ferro.dot)(x, x), torch.vmap(torch.dot)(tx, tx))
    _same(ferro.vmap(ferro.dot, in_dims=(0, None))(x, v), torch.vmap(torch.dot, in_dims=(0, None))(tx, tv))
    _same(ferro.vmap(lambda r: r * 2, in_dims=1, out_dims=1)(x), torch.vmap(lambda r: r * 2, in_dims=1, out_dims=1)(tx))
    _same(ferro.vmap(lambda r: (r.sum(), r.max()))(x), torch.vmap(lambda r: (r.sum(), r.max()))(tx))
    _same(ferro.vmap(ferro.sum)(x, dim=0), torch.vmap(torch.sum)(tx, dim=0))
    with pytest.raises(ValueError, match="batch size"):
        ferro.vmap(ferro.add)(x, x[:2])


def test_autocast_state_functions() -> None:
    assert not ferro.is_autocast_enabled("cpu") and ferro.get_autocast_dtype("cpu") is ferro.bfloat16
    try:
        ferro.set_autocast_dtype("cpu", ferro.float16)
        assert ferro.get_autocast_dtype("cpu") is ferro.float16
        ferro.set_autocast_enabled("cpu", True)
        assert ferro.is_autocast_enabled("cpu")
        assert (ferro.ones(2, 2) @ ferro.ones(2, 2)).dtype is ferro.float16
        ferro.set_autocast_cache_enabled(False)
        assert not ferro.is_autocast_cache_enabled()
    finally:
        ferro.set_autocast_enabled("cpu", False)
        ferro.set_autocast_dtype("cpu", ferro.bfloat16)
        ferro.set_autocast_cache_enabled(True)
    assert (ferro.ones(2, 2) @ ferro.ones(2, 2)).dtype is ferro.float32
    with pytest.raises(ValueError, match=r"bfloat16 or ferro\.float16"):
        ferro.set_autocast_dtype("cpu", ferro.float64)


def test_out_of_memory_error_is_pytorchs_and_pythons() -> None:
    assert issubclass(ferro.OutOfMemoryError, MemoryError) and issubclass(ferro.OutOfMemoryError, RuntimeError)
    with pytest.raises(ferro.OutOfMemoryError, match="out of memory"):
        ferro.empty(2 ** 62, dtype=ferro.uint8)


def _hann(n: int) -> np.ndarray:
    return torch.hann_window(n, dtype=torch.float64).numpy()


STFT_CASES = [
    ((40,), {"n_fft": 8, "return_complex": True}),
    ((2, 37), {"n_fft": 16, "hop_length": 5, "win_length": 12, "window": 12, "return_complex": True,
               "normalized": True}),
    ((40,), {"n_fft": 8, "center": False, "onesided": False, "return_complex": False, "window": 8}),
    ((2, 37), {"n_fft": 10, "pad_mode": "constant", "return_complex": True}),
]


@pytest.mark.parametrize(("shape", "kw"), STFT_CASES)
def test_stft_and_istft(device: str, shape: tuple[int, ...], kw: dict[str, Any]) -> None:
    (a, ta) = _pair(RNG.normal(size=shape), device)
    fk, tk = dict(kw), dict(kw)
    if "window" in kw:
        fk["window"], tk["window"] = _pair(_hann(kw["window"]), device)
    if not ferro.backends.get(ferro.device(device).type).supports("fft.rfft", ferro.float64):
        with pytest.raises(ferro.UnsupportedOperationError, match="fft"):
            a.stft(**fk)
        return
    spec, tspec = a.stft(**fk), ta.stft(**tk)
    _same(spec, tspec)
    if kw["return_complex"]:
        fk.pop("pad_mode", None)
        tk.pop("pad_mode", None)
        fk.pop("return_complex")
        tk.pop("return_complex")
        back = ferro.istft(spec, length=shape[-1], **fk)
        _same(back, torch.istft(tspec, length=shape[-1], **tk))
        _same(back, ta)
    with pytest.raises(ValueError, match="return_complex"):
        ferro.stft(a, 8)


def test_fill_diagonal(device: str) -> None:
    for shape, wrap in (((5, 3), True), ((5, 3), False), ((3, 5), True), ((3, 3, 3), False)):
        (x, tx) = _pair(np.zeros(shape), device)
        _same(x.fill_diagonal_(2.5, wrap), tx.fill_diagonal_(2.5, wrap))


def test_anomaly_mode_names_the_node_that_made_nan(device: str) -> None:
    x, tx = _pair(np.array([0.0, 1.0]), device, True)
    with torch.autograd.detect_anomaly(), pytest.raises(RuntimeError) as theirs:
        (tx.sqrt() * 0).sum().backward()
    with ferro.autograd.detect_anomaly():
        assert ferro.is_anomaly_enabled() and ferro.is_anomaly_check_nan_enabled()
        with pytest.raises(RuntimeError) as mine:
            (x.sqrt() * 0).sum().backward()
    assert str(mine.value) == str(theirs.value)
    assert not ferro.is_anomaly_enabled()
    (x.sqrt() * 0).sum().backward()  # off: NaN gradients pass, as in PyTorch
    assert np.isnan(x.grad.numpy()[0])
    with ferro.autograd.set_detect_anomaly(True, check_nan=False):
        assert ferro.is_anomaly_enabled() and not ferro.is_anomaly_check_nan_enabled()
        (x.sqrt() * 0).sum().backward()
    ferro.set_anomaly_enabled(True)
    try:
        with pytest.raises(RuntimeError, match="SqrtBackward0"):
            (x.sqrt() * 0).sum().backward()
    finally:
        ferro.set_anomaly_enabled(False)


@pytest.mark.parametrize("kw", [{"bins": 3}, {"bins": [2, 4], "range": [-1.0, 1.0, -2.0, 2.0]},
                                {"bins": 3, "density": True}, {"bins": "edges"}, {"bins": [2, 2], "weight": True}])
def test_histogramdd(device: str, kw: dict[str, Any]) -> None:
    (x, tx) = _pair(RNG.normal(size=(50, 2)), device)
    fk, tk = dict(kw), dict(kw)
    if kw["bins"] == "edges":
        edges = [np.array([-2.0, 0.0, 2.0]), np.array([-3.0, -1.0, 0.5, 3.0])]
        fk["bins"] = [ferro.tensor(e, device=device) for e in edges]
        tk["bins"] = [torch.tensor(e) for e in edges]
    if kw.get("weight"):
        fk["weight"], tk["weight"] = _pair(RNG.random(50), device)
    mine, theirs = ferro.histogramdd(x, **fk), torch.histogramdd(tx, **tk)
    _same(mine.hist, theirs.hist)
    _same(mine.bin_edges, theirs.bin_edges)


@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_index_reduce(device: str, reduce: str, include_self: bool) -> None:
    (x, tx) = _pair(RNG.normal(size=(3, 4)), device, True)
    (src, tsrc) = _pair(RNG.normal(size=(3, 5)), device, True)
    idx = np.array([2, 0, 2, 3, 0])
    mine = x.index_reduce(1, ferro.tensor(idx, device=device), src, reduce, include_self=include_self)
    theirs = tx.index_reduce(1, torch.tensor(idx), tsrc, reduce, include_self=include_self)
    _same(mine, theirs)
    mine.square().sum().backward()
    theirs.square().sum().backward()
    _same(x.grad, tx.grad)
    _same(src.grad, tsrc.grad)
    with pytest.raises(ferro.errors.DTypeError, match="index_reduce"):
        ferro.ones(3, dtype=ferro.bool, device=device).index_reduce(0, ferro.tensor([0], device=device),
                                                                   ferro.ones(1, dtype=ferro.bool, device=device),
                                                                   "amax")


@pytest.mark.parametrize("largest", [True, False])
def test_lobpcg(device: str, largest: bool) -> None:
    a = RNG.normal(size=(30, 30))
    sym = a @ a.T / 30 + np.diag(np.arange(30.0))
    (A, tA) = _pair(sym, device)
    if _refused_without_linalg(device, "linalg.qr", lambda: ferro.lobpcg(A, k=3)):
        return
    ferro.manual_seed(0)
    values, vectors = ferro.lobpcg(A, k=3, largest=largest)
    want = np.linalg.eigvalsh(sym)[::-1][:3] if largest else np.linalg.eigvalsh(sym)[:3]
    np.testing.assert_allclose(values.numpy(), want, rtol=1e-9)
    if largest:  # torch.lobpcg finds the largest
        np.testing.assert_allclose(values.numpy(), torch.lobpcg(tA, k=3)[0].numpy(), rtol=1e-6)
    residual = sym @ vectors.numpy() - vectors.numpy() * values.numpy()
    assert np.linalg.norm(residual, axis=0).max() < 1e-5
    bm = np.diag(RNG.random(30) + 1)
    gen, _ = ferro.lobpcg(A, k=2, B=ferro.tensor(bm, device=device), largest=largest)
    ref = np.sort(np.linalg.eigvals(np.linalg.solve(bm, sym)).real)
    np.testing.assert_allclose(gen.numpy(), ref[::-1][:2] if largest else ref[:2], rtol=1e-8)


@pytest.mark.ferro_backends("cpu", "opencl", "cuda")  # the special kernel group (the conformance suite checks
def test_special_functions_under_their_older_names(device: str) -> None:  # the others refuse it)
    """torch.i0 / igamma / igammac / mvlgamma / polygamma / prelu and their Tensor and in-place forms: the
    registry's special functions (torch.special's names), with gradients where PyTorch has them."""
    x, tx = _pair(RNG.uniform(0.5, 3.0, (3, 4)), device, grad=True)
    y, ty = _pair(RNG.uniform(0.5, 3.0, (3, 4)), device)
    cases = [(ferro.i0(x), torch.i0(tx)), (x.i0(), tx.i0()), (ferro.igamma(y, x), torch.igamma(ty, tx)),
             (y.igammac(x), ty.igammac(tx)), (ferro.mvlgamma(x + 2, 3), torch.mvlgamma(tx + 2, 3)),
             (x.mvlgamma(2), tx.mvlgamma(2)), (ferro.polygamma(1, x), torch.polygamma(1, tx)),
             (x.polygamma(2), tx.polygamma(2))]
    for mine, theirs in cases:
        _same(mine.cpu(), theirs, rtol=1e-6)
    sum(m.sum() for m, _ in cases).backward()
    sum(t.sum() for _, t in cases).backward()
    _same(x.grad.cpu(), tx.grad, rtol=1e-6)
    for name, args in (("i0_", ()), ("igamma_", (y,)), ("igammac_", (y,)), ("mvlgamma_", (1,)),
                       ("polygamma_", (1,))):
        mine, theirs = x.detach().clone(), tx.detach().clone()
        getattr(mine, name)(*args)
        getattr(theirs, name)(*[ty if a is y else a for a in args])
        _same(mine.cpu(), theirs, rtol=1e-6)
    z, tz = x.detach().clone(), tx.detach().clone()
    ferro.i0_(z)
    torch.i0_(tz)
    _same(z.cpu(), tz, rtol=1e-6)
    a, ta = _pair(RNG.standard_normal((2, 3, 4)), device, grad=True)
    w, tw = _pair(np.array([0.25, -0.5, 2.0]), device, grad=True)
    _same(ferro.prelu(a, w).cpu(), torch.prelu(ta, tw))
    a.prelu(w).square().sum().backward()
    ta.prelu(tw).square().sum().backward()
    _same(a.grad.cpu(), ta.grad)
    _same(w.grad.cpu(), tw.grad)
