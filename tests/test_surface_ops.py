"""PyTorch's everyday names that ferro gained as op records, aliases and in-place variants, compared with
torch where the conformance suite's NumPy references do not reach: keyword semantics, in-place forms,
aliases, and finfo / iinfo."""

from __future__ import annotations

import numpy as np
import pytest

import ferro
import ferro.nn.functional as F

torch = pytest.importorskip("torch")
RNG = np.random.default_rng(0)


def _pair(*shape: int) -> tuple[ferro.Tensor, object]:
    a = RNG.normal(size=shape)
    return ferro.tensor(a), torch.tensor(a)


def _same(mine: ferro.Tensor, theirs: object, **kw: float) -> None:
    np.testing.assert_allclose(mine.detach().numpy(), theirs.detach().numpy(), rtol=kw.get("rtol", 1e-12),
                               atol=kw.get("atol", 1e-12))


@pytest.mark.parametrize("alias", sorted(ferro._ops.aliases.ALIASES))
def test_aliases_are_their_ops(alias: str) -> None:
    target = ferro._ops.aliases.ALIASES[alias]
    space, _, name = target.rpartition(".")
    home = {"linalg": lambda: getattr(ferro.linalg, name), "ops": lambda: ferro._core.records.REGISTRY[name].fn,
            "": lambda: getattr(ferro, name)}[space]
    assert getattr(ferro, alias) is home()
    assert hasattr(torch, alias)
    if alias in ferro._ops.aliases.OPS_INPLACE:
        assert hasattr(torch.Tensor, alias + "_") and hasattr(ferro.Tensor, alias + "_")
    if hasattr(torch.Tensor, alias):
        assert hasattr(ferro.Tensor, alias), alias
    if hasattr(torch.Tensor, alias + "_") and hasattr(ferro.Tensor, name + "_"):
        assert getattr(ferro.Tensor, alias + "_") is getattr(ferro.Tensor, name + "_")


def test_alias_values_match_torch() -> None:
    x, t = _pair(3, 4)
    x, t = x.clamp(-0.9, 0.9), t.clamp(-0.9, 0.9)
    _same(x.arccos(), t.arccos())
    _same(ferro.arctan2(x, x.flip(0)), torch.arctan2(t, t.flip(0)))
    _same(x.clone().arcsinh_(), t.clone().arcsinh_())
    _same(ferro.clip(x, -0.1, 0.2), torch.clip(t, -0.1, 0.2))
    _same(ferro.greater_equal(x, 0), torch.greater_equal(t, 0))
    m, tm = _pair(3, 3)
    _same(m.det(), tm.det(), rtol=1e-10)
    _same(ferro.inverse(m), torch.inverse(tm), rtol=1e-9, atol=1e-9)
    _same(ferro.slogdet(m)[1], torch.slogdet(tm)[1], rtol=1e-10)


#: in-place functions taking other inputs than one float tensor: tests/test_torch_surface.py calls them
OWN_INPUTS = ("gcd_", "lcm_", "addmv_", "resize_as_", "as_strided_")


@pytest.mark.parametrize("name", [n for n in ferro._ops.aliases.TORCH_INPLACE if hasattr(ferro, n)
                                  and n not in OWN_INPUTS])
def test_top_level_inplace_functions(name: str) -> None:
    assert hasattr(torch, name), name
    args = {"clamp_": (-0.5, 0.5), "clamp_max_": (0.3,), "clamp_min_": (0.1,), "clip_": (-0.5, 0.5),
            "fill_": (2.0,), "xlogy_": (2.0,), "ldexp_": (torch.tensor(2.0),),
            "index_put_": ((torch.tensor([0]),), torch.tensor(5.0))}.get(name, ())
    if name in ("detach_", "zero_", "fill_"):
        x = ferro.rand(4) + 0.1
    else:
        x = ferro.rand(4) * 0.8 + 0.1
    t = torch.tensor(x.numpy())
    targs = args
    fargs = tuple((ferro.tensor([0]),) if isinstance(a, tuple) else ferro.tensor(a.item())
                  if isinstance(a, torch.Tensor) else a for a in args)
    out = getattr(ferro, name)(x, *fargs)
    assert out is x
    getattr(torch, name)(t, *targs)
    np.testing.assert_allclose(x.numpy(), t.numpy(), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize(("name", "shapes"), [("addmm", ((2, 4), (2, 3), (3, 4))), ("addmv", ((2,), (2, 3), (3,))),
                                              ("addr", ((2, 3), (2,), (3,))),
                                              ("baddbmm", ((2, 2, 4), (2, 2, 3), (2, 3, 4))),
                                              ("addbmm", ((2, 4), (3, 2, 3), (3, 3, 4)))])
def test_multiply_adds_match_torch(name: str, shapes: tuple[tuple[int, ...], ...]) -> None:
    pairs = [_pair(*s) for s in shapes]
    mine, theirs = [p[0] for p in pairs], [p[1] for p in pairs]
    for kw in ({}, {"beta": 0.5, "alpha": -2.0}):
        _same(getattr(ferro, name)(*mine, **kw), getattr(torch, name)(*theirs, **kw))
        _same(getattr(mine[0].clone(), name + "_")(*mine[1:], **kw), getattr(theirs[0].clone(), name + "_")(
            *theirs[1:], **kw))
    nan = mine[0].clone().fill_(float("nan"))  # beta=0: input ignored, NaN too, as PyTorch
    got = getattr(ferro, name)(nan, *mine[1:], beta=0)
    assert not got.isnan().any()
    _same(got, getattr(torch, name)(theirs[0].clone().fill_(float("nan")), *theirs[1:], beta=0))


def test_addcmul_addcdiv_match_torch() -> None:
    (x, tx), (a, ta), (b, tb) = _pair(3, 4), _pair(4), _pair(3, 1)
    _same(ferro.addcmul(x, a, b, value=0.5), torch.addcmul(tx, ta, tb, value=0.5))
    _same(ferro.addcdiv(x, a, b, value=-2), torch.addcdiv(tx, ta, tb, value=-2))
    _same(x.clone().addcdiv_(a, b), tx.clone().addcdiv_(ta, tb))
    _same(x.clone().addcmul_(a, b, value=3), tx.clone().addcmul_(ta, tb, value=3))
    with pytest.raises(ferro.errors.DTypeError, match="addcdiv"):
        ferro.addcdiv(ferro.ones(2), ferro.ones(2, dtype=ferro.int64), ferro.ones(2, dtype=ferro.int64))
    with pytest.raises(RuntimeError):
        torch.addcdiv(torch.ones(2), torch.ones(2, dtype=torch.int64), torch.ones(2, dtype=torch.int64))


def test_multiply_add_gradients_match_torch() -> None:
    mine = [ferro.tensor(RNG.normal(size=s), requires_grad=True) for s in ((4,), (2, 3), (3, 4))]
    theirs = [torch.tensor(m.detach().numpy(), requires_grad=True) for m in mine]
    ferro.addmm(*mine, beta=0.3, alpha=2).square().sum().backward()
    torch.addmm(*theirs, beta=0.3, alpha=2).square().sum().backward()
    for m, t in zip(mine, theirs, strict=True):
        _same(m.grad, t.grad, rtol=1e-10)


def test_shape_ops_match_torch() -> None:
    x, t = _pair(2, 3, 4)
    for k, dims in ((1, (0, 1)), (2, (1, 2)), (3, (0, 2)), (-1, (2, 0))):
        _same(x.rot90(k, dims), t.rot90(k, dims))
    _same(x.fliplr(), t.fliplr())
    _same(ferro.flipud(x), torch.flipud(t))
    a, ta = _pair(3)
    b, tb = _pair(4)
    for indexing in ("ij", "xy"):
        for m, th in zip(ferro.meshgrid(a, b, indexing=indexing), torch.meshgrid(ta, tb, indexing=indexing),
                         strict=True):
            _same(m, th)
    for m, th in zip(ferro.broadcast_tensors(a.reshape(3, 1), b), torch.broadcast_tensors(ta.reshape(3, 1), tb),
                     strict=True):
        _same(m, th)
    s, ts = ferro.tensor(2.0), torch.tensor(2.0)
    for fn in ("atleast_1d", "atleast_2d", "atleast_3d"):
        assert getattr(ferro, fn)(s).shape == getattr(torch, fn)(ts).shape
        assert getattr(ferro, fn)(a).shape == getattr(torch, fn)(ta).shape
        assert [o.shape for o in getattr(ferro, fn)(s, x)] == [o.shape for o in getattr(torch, fn)(ts, t)]
    for fn in ("hstack", "vstack", "dstack", "column_stack", "row_stack"):
        _same(getattr(ferro, fn)([a, a]), getattr(torch, fn)([ta, ta]))


def test_numeric_ops_match_torch() -> None:
    x, t = _pair(3, 4)
    _same(ferro.deg2rad(x), torch.deg2rad(t))
    _same(x.clone().rad2deg_(), t.clone().rad2deg_())
    assert ferro.deg2rad(ferro.tensor([180])).dtype == ferro.float32
    p, tp = ferro.tensor([0.0, 0.3, 1.0]), torch.tensor([0.0, 0.3, 1.0])
    _same(ferro.logit(p, eps=1e-3), torch.logit(tp, eps=1e-3), rtol=1e-6)
    _same(p.logit(), tp.logit(), rtol=1e-6)
    for kw in ({}, {"dim": 1}, {"dim": 0, "keepdim": True}):
        mine, theirs = ferro.aminmax(x, **kw), torch.aminmax(t, **kw)
        _same(mine.min, theirs.min)
        _same(mine.max, theirs.max)
    with pytest.raises(ValueError, match="aminmax"):
        ferro.aminmax(ferro.ones(0))
    for kw in ({}, {"n": 2}, {"dim": 0}, {"n": 3, "dim": 0}):
        _same(x.diff(**kw), t.diff(**kw))
    _same(ferro.diff(x, prepend=x[:, :1], append=x[:, -2:]), torch.diff(t, prepend=t[:, :1], append=t[:, -2:]))
    y, ty = x.clone(), t.clone()
    y[0, 1] = float("nan")
    ty[0, 1] = float("nan")
    _same(y.nansum(), ty.nansum())
    _same(ferro.nanmean(y, 1), torch.nanmean(ty, 1))
    _same(x.trace(), t.trace())
    for kw in ({}, {"p": 1.0, "dim": 0}, {"dim": -1, "eps": 0.5}):
        _same(F.normalize(x, **kw), torch.nn.functional.normalize(t, **kw))


@pytest.mark.parametrize("name", ["float16", "bfloat16", "float32", "float64", "complex64", "complex128"])
def test_finfo_matches_torch(name: str) -> None:
    mine, theirs = ferro.finfo(getattr(ferro, name)), torch.finfo(getattr(torch, name))
    for attr in ("bits", "eps", "max", "min", "tiny", "smallest_normal", "resolution"):
        assert getattr(mine, attr) == getattr(theirs, attr), attr
    assert mine.dtype == theirs.dtype


@pytest.mark.parametrize("name", ["uint8", "int8", "int16", "int32", "int64"])
def test_iinfo_matches_torch(name: str) -> None:
    mine, theirs = ferro.iinfo(getattr(ferro, name)), torch.iinfo(getattr(torch, name))
    assert (mine.bits, mine.min, mine.max, mine.dtype) == (theirs.bits, theirs.min, theirs.max, theirs.dtype)


def test_info_refusals() -> None:
    assert ferro.finfo().eps == torch.finfo().eps
    with pytest.raises(TypeError, match="iinfo"):
        ferro.finfo(ferro.int32)
    with pytest.raises(TypeError, match="finfo"):
        ferro.iinfo(ferro.float32)
    with pytest.raises(TypeError):
        ferro.iinfo(ferro.bool_)


def test_elementwise_composites_match_torch() -> None:
    a = np.array([-2.0, -0.0, 0.0, 1.5, np.inf, -np.inf, np.nan])
    x, t = ferro.tensor(a), torch.tensor(a)
    for name in ("isposinf", "isneginf", "isreal", "signbit"):
        np.testing.assert_array_equal(getattr(ferro, name)(x).numpy(), getattr(torch, name)(t).numpy(), name)
        np.testing.assert_array_equal(getattr(x, name)().numpy(), getattr(t, name)().numpy(), name)
    y, ty = x.flip(0), t.flip(0)
    for name in ("copysign", "fmax", "fmin", "logaddexp2", "heaviside"):
        np.testing.assert_allclose(getattr(ferro, name)(x, y).numpy(), getattr(torch, name)(t, ty).numpy(),
                                   rtol=1e-15, err_msg=name)
    for name in ("copysign", "heaviside"):
        np.testing.assert_array_equal(getattr(x.clone(), name + "_")(y).numpy(),
                                      getattr(t.clone(), name + "_")(ty).numpy(), name)
    i, ti = ferro.tensor([1, -2, 3]), torch.tensor([1, -2, 3])
    _same(ferro.float_power(i, 2), torch.float_power(ti, 2))
    assert ferro.float_power(ferro.tensor([2.0]), 0.5).dtype == ferro.float64
    _same(ferro.ldexp(ferro.tensor([1.0, 3.0]), i[:2]), torch.ldexp(torch.tensor([1.0, 3.0]), ti[:2]))
    assert ferro.isposinf(i).dtype == ferro.bool_ and not ferro.isposinf(i).any()


def test_more_inplace_methods_match_torch() -> None:
    x, t = _pair(3, 4)
    for name, args in (("tril_", ()), ("triu_", (1,)), ("cumsum_", (1,)), ("cumprod_", (0,)), ("sgn_", ())):
        mine, theirs = getattr(x.clone(), name)(*args), getattr(t.clone(), name)(*args)
        _same(mine, theirs)
    p, tp = x.abs(), t.abs()
    _same(p.clone().xlogy_(p + 1), tp.clone().xlogy_(tp + 1))
    _same(x.clone().index_put_((ferro.tensor([0, 2]),), ferro.tensor(5.0)),
          t.clone().index_put_((torch.tensor([0, 2]),), torch.tensor(5.0, dtype=torch.float64)))


def test_conversions_and_predicates_match_torch() -> None:
    x, t = ferro.tensor([1.5, -2.0, 0.0]), torch.tensor([1.5, -2.0, 0.0])
    for name in ("byte", "char", "short", "cfloat", "cdouble"):
        assert getattr(x, name)().dtype.name == str(getattr(t, name)().dtype).split(".")[1]
        np.testing.assert_array_equal(getattr(x, name)().numpy(), getattr(t, name)().numpy())
    assert ferro.equal(x, x.clone()) and not ferro.equal(x, x[:2]) and not x.equal(x + 1)
    assert torch.equal(t, t.clone()) and x.is_same_size(x + 1) == t.is_same_size(t + 1)
    assert ferro.tensor([0.0]).is_nonzero() is torch.tensor([0.0]).is_nonzero() is False
    with pytest.raises(RuntimeError, match="more than one"):
        x.is_nonzero()
    assert x.get_device() == t.get_device() == -1
    for dt in ("uint8", "int8", "float32", "bool"):
        assert ferro.ones(1, dtype=getattr(ferro, dt if dt != "bool" else "bool_")).is_signed() is \
            torch.ones(1, dtype=getattr(torch, dt)).is_signed()
    assert ferro.is_floating_point(x) and not ferro.is_floating_point(ferro.ones(1, dtype=ferro.int64))


def test_statistics_match_torch() -> None:
    x, t = _pair(3, 5)
    for mine, theirs in ((ferro.std_mean(x, 1), torch.std_mean(t, 1)),
                         (ferro.var_mean(x, 0, correction=0, keepdim=True), torch.var_mean(t, 0, correction=0,
                                                                                           keepdim=True))):
        for m, th in zip(mine, theirs, strict=True):
            _same(m, th)
    fw, aw = np.array([1, 2, 1, 3, 1]), RNG.uniform(0.1, 1, 5)
    _same(ferro.cov(x), torch.cov(t))
    _same(x.cov(correction=0, fweights=ferro.tensor(fw), aweights=ferro.tensor(aw)),
          t.cov(correction=0, fweights=torch.tensor(fw), aweights=torch.tensor(aw)))
    _same(x.corrcoef(), t.corrcoef())
    _same(x.dist(x.flip(0), 1.5), t.dist(t.flip(0), 1.5))
    _same(ferro.trapezoid(x, ferro.tensor(np.cumsum(aw))), torch.trapezoid(t, torch.tensor(np.cumsum(aw))))
    _same(ferro.trapz(x, dx=0.3, dim=0), torch.trapz(t, dx=0.3, dim=0))
    _same(ferro.cumulative_trapezoid(x, dx=2.0), torch.cumulative_trapezoid(t, dx=2.0))
    spd = x @ x.mT + ferro.eye(3, dtype=ferro.float64)
    _same(spd.logdet(), (t @ t.mT + torch.eye(3, dtype=torch.float64)).logdet())
    assert ferro.logdet(-ferro.eye(3)).isnan() and torch.logdet(-torch.eye(3)).isnan()
    _same(x.msort(), t.msort())
    _same(ferro.isin(ferro.arange(8), ferro.tensor([1, 5, 9]), invert=True),
          torch.isin(torch.arange(8), torch.tensor([1, 5, 9]), invert=True))


def test_splits_and_joins_match_torch() -> None:
    x, t = _pair(4, 6, 2)
    for name, arg in (("hsplit", 3), ("hsplit", [1, 4]), ("vsplit", 2), ("dsplit", [1]),
                      ("split_with_sizes", [1, 3])):
        mine, theirs = getattr(x, name)(arg), getattr(t, name)(arg)
        assert len(mine) == len(theirs)
        for m, th in zip(mine, theirs, strict=True):
            _same(m, th)
    with pytest.raises(ferro.errors.ShapeError, match="hsplit"):
        x.hsplit(4)
    a, ta = _pair(2, 3)
    _same(ferro.block_diag(a, a[0], ferro.tensor(7.0, dtype=ferro.float64)),
          torch.block_diag(ta, ta[0], torch.tensor(7.0, dtype=torch.float64)))
    _same(ferro.cartesian_prod(a[0], a[1], a[0][:2]), torch.cartesian_prod(ta[0], ta[1], ta[0][:2]))
    _same(a.diagflat(-1), ta.diagflat(-1))
    mask, tmask = a > 0, ta > 0
    np.testing.assert_array_equal(mask.argwhere().numpy(), tmask.argwhere().numpy())


@pytest.mark.parametrize("name", ["hann_window", "hamming_window", "blackman_window", "bartlett_window",
                                  "kaiser_window"])
def test_windows_match_torch(name: str) -> None:
    for length in (0, 1, 2, 7, 16):
        for periodic in (True, False):
            mine, theirs = getattr(ferro, name)(length, periodic), getattr(torch, name)(length, periodic)
            np.testing.assert_allclose(mine.numpy(), theirs.numpy(), rtol=1e-5, atol=1e-6)
            assert mine.dtype == ferro.float32
    assert getattr(ferro, name)(4, dtype=ferro.float64).dtype == ferro.float64
    with pytest.raises(ValueError, match="floating"):
        getattr(ferro, name)(4, dtype=ferro.int64)


def test_index_grids_match_torch() -> None:
    for args in ((3, 3), (3, 5, 1), (5, 3, -2), (0, 3)):
        np.testing.assert_array_equal(ferro.tril_indices(*args).numpy(), torch.tril_indices(*args).numpy())
        np.testing.assert_array_equal(ferro.triu_indices(*args).numpy(), torch.triu_indices(*args).numpy())
    np.testing.assert_allclose(ferro.logspace(-2, 3, 6).numpy(), torch.logspace(-2, 3, 6).numpy(), rtol=1e-6)
    np.testing.assert_allclose(ferro.logspace(0, 1, 5, base=2.0, dtype=ferro.float64).numpy(),
                               torch.logspace(0, 1, 5, base=2.0, dtype=torch.float64).numpy(), rtol=1e-12)
    assert ferro.scalar_tensor(3).dtype == ferro.float32 and ferro.scalar_tensor(3).shape == ()
