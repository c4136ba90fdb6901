"""Shape ops: reshape, view, permute / transpose / T / mT, squeeze / unsqueeze, expand, flatten, cat, stack,
contiguous, clone; against NumPy, with views checked by writing through them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import ferro
from ferro.testing import assert_close

torch = pytest.importorskip("torch")
rng = np.random.default_rng(4)


def _base() -> tuple[ferro.Tensor, np.ndarray]:
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    return ferro.tensor(a), a.copy()


# Each op applied the same way to a ferro tensor and a NumPy array of shape [2, 3, 4].
VIEWS: list[tuple[str, Callable[[Any], Any], Callable[[np.ndarray], np.ndarray]]] = [
    ("reshape", lambda t: t.reshape(6, 4), lambda a: a.reshape(6, 4)),
    ("reshape -1", lambda t: t.reshape(-1, 2, 3), lambda a: a.reshape(-1, 2, 3)),
    ("reshape tuple", lambda t: t.reshape((4, 6)), lambda a: a.reshape(4, 6)),
    ("view", lambda t: t.view(4, -1), lambda a: a.reshape(4, -1)),
    ("view 1-d", lambda t: t.view(24), lambda a: a.reshape(24)),
    ("permute", lambda t: t.permute(2, 0, 1), lambda a: a.transpose(2, 0, 1)),
    ("permute negative", lambda t: t.permute(-1, 0, -2), lambda a: a.transpose(2, 0, 1)),
    ("permute list", lambda t: t.permute([1, 2, 0]), lambda a: a.transpose(1, 2, 0)),
    ("transpose", lambda t: t.transpose(0, 2), lambda a: a.swapaxes(0, 2)),
    ("transpose negative", lambda t: t.transpose(-1, -2), lambda a: a.swapaxes(-1, -2)),
    ("swapaxes", lambda t: t.swapaxes(0, 1), lambda a: a.swapaxes(0, 1)),
    ("T", lambda t: t.T, lambda a: a.T),
    ("mT", lambda t: t.mT, lambda a: a.swapaxes(-1, -2)),
    ("t of 2-d", lambda t: t[0].t(), lambda a: a[0].T),
    ("unsqueeze 0", lambda t: t.unsqueeze(0), lambda a: a[None]),
    ("unsqueeze -1", lambda t: t.unsqueeze(-1), lambda a: a[..., None]),
    ("unsqueeze 2", lambda t: t.unsqueeze(2), lambda a: a[:, :, None]),
    ("squeeze", lambda t: t[:1, :, 2:3].squeeze(), lambda a: a[:1, :, 2:3].squeeze()),
    ("squeeze dim", lambda t: t[:1, :, 2:3].squeeze(0), lambda a: a[:1, :, 2:3].squeeze(0)),
    ("squeeze dims", lambda t: t[:1, :, 2:3].squeeze((0, 2)), lambda a: a[:1, :, 2:3].squeeze((0, 2))),
    ("squeeze non-1 is a no-op", lambda t: t.squeeze(1), lambda a: a),
    ("flatten", lambda t: t.flatten(), lambda a: a.reshape(-1)),
    ("flatten 1", lambda t: t.flatten(1), lambda a: a.reshape(2, 12)),
    ("flatten 0 1", lambda t: t.flatten(0, 1), lambda a: a.reshape(6, 4)),
    ("flatten -2 -1", lambda t: t.flatten(-2, -1), lambda a: a.reshape(2, 12)),
    ("expand", lambda t: t[:, :1].expand(2, 5, 4), lambda a: np.broadcast_to(a[:, :1], (2, 5, 4))),
    ("expand -1", lambda t: t[:, :1].expand(3, -1, 2, -1), lambda a: np.broadcast_to(a[None, :, :1], (3, 2, 2, 4))),
    ("broadcast_to", lambda t: t[0, 0].broadcast_to((3, 4)), lambda a: np.broadcast_to(a[0, 0], (3, 4))),
    ("expand_as", lambda t: t[0].expand_as(t), lambda a: np.broadcast_to(a[0], (2, 3, 4))),
    ("chained", lambda t: t.permute(1, 0, 2).reshape(3, 8)[1:].T, lambda a: a.transpose(1, 0, 2).reshape(3, 8)[1:].T),
]


@pytest.mark.parametrize("op, ref", [(v[1], v[2]) for v in VIEWS], ids=[v[0] for v in VIEWS])
def test_shape_op_matches_numpy(op: Callable[[Any], Any], ref: Callable[[np.ndarray], np.ndarray]) -> None:
    t, a = _base()
    got = op(t)
    assert isinstance(got.shape, ferro.Size)
    assert_close(got, ref(a))
    assert_close(op(ferro.tensor(a.astype(np.int16))), ref(a.astype(np.int16)))


# expand's views are read-only broadcasts; reshaping a permuted tensor must copy (in NumPy and PyTorch too)
WRITABLE = [v for v in VIEWS if not v[0].startswith(("expand", "broadcast", "chained"))]


@pytest.mark.parametrize("op, ref", [(v[1], v[2]) for v in WRITABLE], ids=[v[0] for v in WRITABLE])
def test_a_view_shares_storage_with_its_base(op: Callable[[Any], Any], ref: Callable[[np.ndarray], np.ndarray]) -> None:
    t, a = _base()
    v = op(t)
    v += 100  # in place through the view
    r = ref(a)
    r += 100
    assert_close(t, a, msg="writing through the view changed the base as NumPy's view does")
    assert t.version == v.version == 1
    t.mul_(-1)
    a *= -1
    assert_close(v, ref(a), msg="writing the base shows through the view")


def test_expand_is_a_broadcast_view_of_its_base() -> None:
    t = ferro.tensor([[1.0], [2.0]])
    e = t.expand(2, 3)
    assert e.shape == (2, 3)
    t[1, 0] = 5.0
    assert e[1].tolist() == [5.0, 5.0, 5.0], "the expanded view reads its base's storage"
    assert t.expand(2, 1) is t, "expanding to the same shape is the tensor itself"
    with pytest.raises(ferro.errors.ShapeError, match=r"expanded size.*\(4\).*\(2\).*dimension 1"):
        ferro.ones(3, 2).expand(3, 4)
    with pytest.raises(ferro.errors.ShapeError, match="number of sizes"):
        ferro.ones(3, 1).expand(4)
    with pytest.raises(ferro.errors.ShapeError, match="-1"):
        ferro.ones(3).expand(-1, 3)


def test_reshape_and_view_errors() -> None:
    t = ferro.arange(24.0)
    with pytest.raises(ferro.errors.ShapeError, match=r"reshape: shape \[5, -1\] is invalid for input of size 24"):
        t.reshape(5, -1)
    with pytest.raises(ferro.errors.ShapeError, match=r"shape \[7, 4\] is invalid for input of size 24"):
        t.view(7, 4)
    with pytest.raises(ferro.errors.ShapeError, match="only one dimension can be inferred"):
        t.reshape(-1, -1)
    with pytest.raises(ferro.errors.ShapeError, match="invalid shape dimension -2"):
        t.reshape(-2, 12)
    with pytest.raises(ferro.errors.ShapeError, match=r"\[\] is invalid for input of size 24"):
        t.reshape(())
    assert ferro.ones(1).reshape(()).shape == () and ferro.zeros(0, 3).reshape(3, 0).shape == (3, 0)


@pytest.mark.parametrize("bad", [4.0, np.float64(4.0)], ids=["float", "numpy-float"])
@pytest.mark.parametrize("op", ["reshape", "view"])
@pytest.mark.parametrize("as_tuple", [False, True], ids=["ints", "tuple"])
def test_a_float_size_is_refused_also_after_its_int_spelling(op: str, as_tuple: bool, bad: Any) -> None:
    # 4.0 hashes and compares equal to 4: a checked spelling (4, 6) must not let (4.0, 6) through (torch refuses it)
    t = ferro.arange(24.0)
    fn = getattr(t, op)
    good = fn((4, 6)) if as_tuple else fn(4, 6)
    assert good.shape == (4, 6)
    with pytest.raises(TypeError, match=rf"{op}\(\): argument 'shape' must be a tuple of ints, got \[(np.float64\()?4"):
        fn((bad, 6)) if as_tuple else fn(bad, 6)
    assert (fn((4, 6)) if as_tuple else fn(4, 6)).shape == (4, 6)


@pytest.mark.parametrize("bad", [1.0, np.float64(1.0)], ids=["float", "numpy-float"])
@pytest.mark.parametrize("as_tuple", [False, True], ids=["ints", "tuple"])
def test_a_float_dim_of_permute_is_refused_also_after_its_int_spelling(as_tuple: bool, bad: Any) -> None:
    t = ferro.arange(6.0).reshape(2, 3)
    assert (t.permute((1, 0)) if as_tuple else t.permute(1, 0)).shape == (3, 2)
    with pytest.raises(TypeError, match=r"permute\(\): argument 'dims' must be a tuple of ints, got \[(np.*\()?1"):
        t.permute((bad, 0)) if as_tuple else t.permute(bad, 0)


@pytest.mark.parametrize("make", [lambda t: t.view(6, 4).T, lambda t: t.view(4, 6)[:, :3],
                                  lambda t: t.view(2, 3, 4).transpose(0, 1), lambda t: t.view(2, 3, 4)[:, 1:]],
                         ids=["T", "columns", "transpose", "rows"])
def test_view_of_a_non_contiguous_tensor_says_use_reshape(make: Callable[[Any], Any]) -> None:
    nc = make(ferro.arange(24.0))
    with pytest.raises(ferro.errors.ShapeError, match=r"view.*reshape") as info:
        nc.view(-1)
    assert str(list(nc.shape)) in str(info.value)
    ref = make(torch.arange(24.0))
    assert_close(nc.reshape(-1), ref.reshape(-1).numpy())  # reshape copies where it must
    assert_close(nc.contiguous().view(-1), ref.contiguous().view(-1).numpy())  # the PyTorch idiom


@pytest.mark.parametrize("make", [lambda t: t.view(4, 6)[:, ::2], lambda t: t.view(4, 6)[:, 1],
                                  lambda t: t.view(2, 3, 4)[1:]], ids=["step", "column", "rows"])
def test_view_of_a_strided_tensor_that_allows_one(make: Callable[[Any], Any]) -> None:
    base = ferro.arange(24.0)
    v = make(base).view(-1)  # the strides allow a flat view, as in PyTorch
    assert_close(v, make(torch.arange(24.0)).view(-1).numpy())
    v.zero_()
    assert_close(make(base), np.zeros(tuple(make(base).shape), np.float32))


def test_reshape_of_a_non_contiguous_tensor_copies() -> None:
    t = ferro.arange(6.0).view(2, 3)
    r = t.T.reshape(6)
    assert r.tolist() == [0.0, 3.0, 1.0, 4.0, 2.0, 5.0]
    r[0] = 99.0
    assert t[0, 0].item() == 0.0, "a reshape that had to copy does not write back"


def test_dimension_errors() -> None:
    t = ferro.zeros(2, 3, 4)
    with pytest.raises(ferro.errors.ShapeError, match="not a permutation"):
        t.permute(0, 1)
    with pytest.raises(ferro.errors.ShapeError, match="not a permutation"):
        t.permute(0, 0, 1)
    with pytest.raises(IndexError, match=r"range of \[-3, 2\].*got 3"):
        t.transpose(0, 3)
    with pytest.raises(IndexError, match=r"range of \[-4, 3\].*got 4"):
        t.unsqueeze(4)
    with pytest.raises(IndexError, match="out of range"):
        t.squeeze(3)
    with pytest.raises(ferro.errors.ShapeError, match="start_dim"):
        t.flatten(2, 1)
    with pytest.raises(ferro.errors.ShapeError, match="<= 2 dimensions"):
        t.t()
    with pytest.raises(IndexError):
        ferro.ones(3).mT


def test_zero_dim_shapes() -> None:
    s = ferro.tensor(3.0)
    assert s.T.shape == () and s.t().shape == () and s.flatten().shape == (1,) and s.unsqueeze(0).shape == (1,)
    assert s.squeeze().shape == () and s.reshape(1, 1).shape == (1, 1) and s.view(-1).shape == (1,)
    assert ferro.ones(3).T.shape == (3,) and ferro.ones(3).t().shape == (3,)


# -- cat, stack ------------------------------------------------------------------------------


@pytest.mark.parametrize("dim", [0, 1, -1, 2])
def test_cat_matches_numpy(dim: int) -> None:
    shapes = [(2, 3, 4), (2, 3, 4), (2, 3, 4)]
    shapes = [tuple(s if i != dim % 3 else s + k for i, s in enumerate(sh)) for k, sh in enumerate(shapes)]
    arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    got = ferro.cat([ferro.tensor(a) for a in arrays], dim)
    assert_close(got, np.concatenate(arrays, dim))
    assert_close(ferro.concat(tuple(ferro.tensor(a) for a in arrays), dim=dim), np.concatenate(arrays, dim))
    # non-contiguous inputs
    assert_close(ferro.cat([ferro.tensor(a).T for a in arrays], -1 - (dim % 3)),
                 np.concatenate([a.T for a in arrays], -1 - (dim % 3)))


@pytest.mark.parametrize("dtypes", [("float32", "float64"), ("int32", "uint8"), ("bool", "uint8"), ("int64", "float16"),
                                    ("bool", "bool"), ("int8", "int16", "float32")], ids=str)
def test_cat_promotes_like_torch(dtypes: tuple[str, ...]) -> None:
    arrays = [(rng.integers(0, 3, (2, 2)) > 0 if d == "bool" else rng.integers(0, 3, (2, 2))).astype(d)
              for d in dtypes]
    got = ferro.cat([ferro.tensor(a) for a in arrays])
    ref = torch.cat([torch.from_numpy(a) for a in arrays])
    assert got.dtype.name == str(ref.dtype).removeprefix("torch.")
    assert_close(got, ref.numpy())


def test_cat_errors_name_the_shapes() -> None:
    with pytest.raises(ferro.errors.ShapeError, match=r"except in dimension 0.*tensor 0 has shape \[2, 3\], "
                                                      r"tensor 1 has shape \[2, 4\]"):
        ferro.cat([ferro.ones(2, 3), ferro.ones(2, 4)])
    with pytest.raises(ferro.errors.ShapeError, match=r"\[3\]"):
        ferro.cat([ferro.ones(2, 3), ferro.ones(3)])
    with pytest.raises(ferro.errors.ShapeError, match="zero-dimensional"):
        ferro.cat([ferro.tensor(1.0), ferro.tensor(2.0)])
    with pytest.raises(ValueError, match="non-empty"):
        ferro.cat([])
    with pytest.raises(IndexError, match="out of range"):
        ferro.cat([ferro.ones(2)], 1)
    with pytest.raises(TypeError, match="Tensors"):
        ferro.cat([ferro.ones(2), [1.0]])
    assert ferro.cat([ferro.ones(2, 3), ferro.ones(0)]).shape == (2, 3), "1-d empty tensors are skipped, as PyTorch"


@pytest.mark.parametrize("dim", [0, 1, 2, -1, -3])
def test_stack_matches_numpy(dim: int) -> None:
    arrays = [rng.standard_normal((2, 3)).astype(np.float64) for _ in range(4)]
    got = ferro.stack([ferro.tensor(a) for a in arrays], dim)
    assert_close(got, np.stack(arrays, dim))
    assert ferro.stack([ferro.tensor(1.0), ferro.tensor(2.0)]).tolist() == [1.0, 2.0]
    assert ferro.stack([ferro.ones(2), ferro.ones(2, dtype=ferro.float64)]).dtype is ferro.float64


@pytest.mark.parametrize("shape", [(8, 8), (4, 5, 6), (64, 64)], ids=str)  # (64, 64): past the small-stack path
@pytest.mark.parametrize("dtype", ["float32", "float64", "complex64", "bool", "int64"])
@pytest.mark.parametrize("transposed", [False, True], ids=["contiguous", "transposed"])
def test_stack_along_a_new_first_dim_matches_torch(shape: tuple[int, ...], dtype: str, transposed: bool) -> None:
    arrays = [(rng.standard_normal(shape) * 3).astype(dtype) for _ in range(3)]
    fx, tx = [ferro.tensor(a) for a in arrays], [torch.tensor(a) for a in arrays]
    if transposed:
        fx, tx = [t.mT for t in fx], [t.mT for t in tx]
    got = ferro.stack(fx)
    assert got.dtype is getattr(ferro, dtype) and got.is_contiguous()
    np.testing.assert_array_equal(got.numpy(), torch.stack(tx).numpy())
    if dtype.startswith("float"):  # and its gradient: each input's index of the output's
        fg = [t.detach().requires_grad_() for t in fx]
        tg = [t.detach().requires_grad_() for t in tx]
        w = rng.standard_normal((3, *tuple(tx[0].shape))).astype(dtype)
        (ferro.stack(fg) * ferro.tensor(w)).sum().backward()
        (torch.stack(tg) * torch.tensor(w)).sum().backward()
        for f, t in zip(fg, tg, strict=True):
            assert_close(f.grad, t.grad.numpy())


@pytest.mark.parametrize("join", [lambda m, xs: m.cat(xs), lambda m, xs: m.cat(xs, 1), lambda m, xs: m.stack(xs, 1),
                                  lambda m, xs: m.stack(xs, 2)], ids=["cat0", "cat1", "stack1", "stack2"])
@pytest.mark.parametrize("n", [4, 64])
def test_cat_and_stack_of_transposed_tensors_are_row_major_as_torch(join: Callable[..., Any], n: int) -> None:
    a = rng.standard_normal((n, n)).astype(np.float32)
    got, want = join(ferro, [ferro.tensor(a).mT] * 2), join(torch, [torch.tensor(a).mT] * 2)
    assert got.is_contiguous() and got.stride() == want.stride()
    np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_stack_errors() -> None:
    with pytest.raises(ferro.errors.ShapeError, match=r"tensor 0 has shape \[2, 3\], tensor 1 has shape \[3, 2\]"):
        ferro.stack([ferro.ones(2, 3), ferro.ones(3, 2)])
    with pytest.raises(IndexError, match=r"range of \[-3, 2\]"):
        ferro.stack([ferro.ones(2, 3), ferro.ones(2, 3)], 3)


# -- contiguous, clone -----------------------------------------------------------------------


def test_contiguous_returns_self_when_contiguous() -> None:
    t = ferro.arange(12.0).reshape(3, 4)
    assert t.contiguous() is t and ferro.contiguous(t) is t
    nc = t.T
    c = nc.contiguous()
    assert c is not nc and c.contiguous() is c
    assert_close(c, np.arange(12.0, dtype=np.float32).reshape(3, 4).T)
    c[0, 0] = 50.0
    assert t[0, 0].item() == 0.0, "a contiguous copy is its own storage"
    row = t[1]
    assert row.contiguous() is row, "a row of a row-major tensor is contiguous"
    big = ferro.zeros(600, 500)  # large enough for ferro-cpu's pooled buffers
    assert big.T.contiguous().view(-1).shape == (300000,)


def test_clone_is_independent() -> None:
    t = ferro.arange(6).reshape(2, 3)
    c = t.clone()
    assert c is not t and c.dtype is t.dtype and c.tolist() == t.tolist()
    c[0, 0] = 42
    t[1, 1] = -1
    assert t[0, 0].item() == 0 and c[1, 1].item() == 4
    v = t.T.clone()
    assert_close(v, np.array([[0, 3], [1, -1], [2, 5]]))
    g = ferro.ones(2, requires_grad=True)
    assert g.clone().requires_grad and not g.clone().is_leaf


def test_the_reshape_and_permute_caches_stay_bounded_and_right() -> None:
    """The checked spellings are kept by input shape, then spelling: a stream of new ones stays bounded, and a
    cleared cache still gives the right answer."""
    from ferro._ops import shape as shape_ops
    for n in range(1, 600):
        t = ferro.ones(n, 2)
        assert t.reshape(2, n).shape == (2, n) and t.view(-1).shape == (2 * n,) and t.permute(1, 0).shape == (2, n)
    t = ferro.ones(64, 2)
    for k in [1, 2, 4, 8, 16, 32, 64, 128]:
        for _ in range(2):
            assert t.reshape(k, -1).shape == (k, 128 // k)
    assert len(shape_ops._SHAPES) <= 256 and all(len(v) <= 32 for v in shape_ops._SHAPES.values())
    assert len(shape_ops._PERMS) <= 256 and all(len(v) <= 32 for v in shape_ops._PERMS.values())
