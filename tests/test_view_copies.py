"""Views on a backend whose view kernels return copies (``Backend.view_copies``).

The ``copyview`` backend of tests/plugins (registered in process) copies in
every view kernel. Core must keep PyTorch's semantics anyway: reads, writes
through views, writes to bases, chains of views, in-place ops and autograd
through views give the values PyTorch gives; what core cannot write back
(through ``expand``, through the parts of complex numbers) is refused before
anything is written, naming the op.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch

import ferro
import ferro_testplugins.copyviews as copyviews

DEV = "copyview"


@pytest.fixture(scope="module", autouse=True)
def _registered() -> None:
    if DEV not in ferro.backends.installed():
        assert ferro.backends.register_plugin(copyviews, "testcopyviews")


A = np.arange(24, dtype=np.float64).reshape(2, 3, 4) - 7.5


def _pair(a: np.ndarray = A) -> tuple[ferro.Tensor, torch.Tensor]:
    return ferro.tensor(a, device=DEV), torch.tensor(a)


def _same(f: ferro.Tensor, t: torch.Tensor) -> None:
    assert f.device == ferro.device(DEV)
    np.testing.assert_array_equal(f.numpy(), t.numpy())


#: Views (by the same code on both libraries) that PyTorch makes as views sharing memory.
VIEWS: dict[str, Callable[[Any], Any]] = {
    "getitem": lambda x: x[1],
    "slice": lambda x: x[:, 1:, ::2],
    "int_and_slice": lambda x: x[1, :, 2],
    "element": lambda x: x[1, 2, 3],
    "none_ellipsis": lambda x: x[None, ..., 1],
    "transpose": lambda x: x.transpose(0, 2),
    "permute": lambda x: x.permute(2, 0, 1),
    "view": lambda x: x.view(6, 4),
    "reshape": lambda x: x.reshape(4, 6),
    "flatten": lambda x: x.flatten(),
    "unsqueeze": lambda x: x.unsqueeze(1),
    "squeeze": lambda x: x[:1].squeeze(0),
    "chain": lambda x: x.transpose(1, 2)[1:, ::2].permute(2, 0, 1),
    "reshape_of_row": lambda x: x[1].reshape(2, 6),
}


@pytest.mark.parametrize("name", VIEWS)
def test_the_backend_copies_but_reads_are_right(name: str) -> None:
    fx, tx = _pair()
    fv, tv = VIEWS[name](fx), VIEWS[name](tx)
    _same(fv, tv)
    assert fv._view is not None and fv._view[2]  # a copy standing for a view
    if fv.numel() > 0 and fv.ndim:
        assert not np.shares_memory(fv._data, fx._data)


BASE_WRITES: dict[str, Callable[[Any], Any]] = {
    "add_": lambda x: x.add_(100),
    "mul_": lambda x: x.mul_(-2),
    "setitem": lambda x: x.__setitem__((1, slice(None), 2), 42.0),
    "copy_": lambda x: x.copy_(x * 0 + 3),
    "zero_": lambda x: x.zero_(),
    "row_of_base": lambda x: x[1].sub_(5),  # another view's write is a write to the storage
}


@pytest.mark.parametrize("write", BASE_WRITES)
@pytest.mark.parametrize("name", ["getitem", "transpose", "view", "chain", "element", "none_ellipsis"])
def test_writes_to_the_base_show_in_the_view(name: str, write: str) -> None:
    fx, tx = _pair()
    fv, tv = VIEWS[name](fx), VIEWS[name](tx)
    BASE_WRITES[write](fx)
    BASE_WRITES[write](tx)
    _same(fx, tx)
    _same(fv, tv)
    assert fv.version == tv._version


VIEW_WRITES: dict[str, Callable[[Any], Any]] = {
    "add_": lambda v: v.add_(100),
    "div_": lambda v: v.div_(4),
    "setitem_all": lambda v: v.__setitem__(Ellipsis, 9.0),
    "setitem_part": lambda v: v.__setitem__(0, -1.0),
    "copy_": lambda v: v.copy_(v * 2),
    "fill_": lambda v: v.fill_(7),
    "iadd": lambda v: v.__iadd__(1),
}


@pytest.mark.parametrize("write", VIEW_WRITES)
@pytest.mark.parametrize("name", ["getitem", "slice", "int_and_slice", "transpose", "permute", "view", "reshape",
                                  "flatten", "unsqueeze", "squeeze", "chain", "reshape_of_row", "none_ellipsis"])
def test_writes_through_the_view_reach_the_base_and_its_other_views(name: str, write: str) -> None:
    fx, tx = _pair()
    fv, tv = VIEWS[name](fx), VIEWS[name](tx)
    fo, to = fx.permute(1, 2, 0), tx.permute(1, 2, 0)  # a sibling view, made before the write
    VIEW_WRITES[write](fv)
    VIEW_WRITES[write](tv)
    _same(fv, tv)
    _same(fx, tx)
    _same(fo, to)


def test_a_view_of_a_copied_view_is_written_through_both() -> None:
    fx, tx = _pair()
    fp, tp = fx.transpose(0, 1), tx.transpose(0, 1)
    fq, tq = fp[2], tp[2]
    fq.mul_(10)
    tq.mul_(10)
    for f, t in ((fx, tx), (fp, tp), (fq, tq)):
        _same(f, t)
    fp.add_(1)  # the parent view: the child and the base follow
    tp.add_(1)
    for f, t in ((fx, tx), (fp, tp), (fq, tq)):
        _same(f, t)


def test_a_detached_alias_of_a_copied_view_writes_through() -> None:
    fx, tx = _pair()
    fv, tv = fx[0].detach(), tx[0].detach()
    fv.add_(3)
    tv.add_(3)
    _same(fx, tx)


def test_where_pytorch_copies_ferro_copies_too() -> None:
    fx, tx = _pair()
    # reshape of a non-contiguous view is a copy in PyTorch: writes to it stay there
    fr, tr = fx.transpose(1, 2).reshape(-1), tx.transpose(1, 2).reshape(-1)
    fc, tc = fx.transpose(1, 2).contiguous(), tx.transpose(1, 2).contiguous()
    fr.add_(1000)
    tr.add_(1000)
    fc.mul_(0)
    tc.mul_(0)
    for f, t in ((fx, tx), (fr, tr), (fc, tc)):
        _same(f, t)
    with pytest.raises(ferro.errors.ShapeError, match=r"view: .*not compatible.*use \.reshape"):
        fx.transpose(1, 2).view(-1)
    with pytest.raises(RuntimeError):
        tx.transpose(1, 2).view(-1)
    # a row is contiguous: views of it share memory in PyTorch, and so write through here
    fv, tv = fx[1].view(12), tx[1].view(12)
    fv[0] = 1234
    tv[0] = 1234
    _same(fx, tx)


def test_setitem_with_integers_and_index_tensors() -> None:
    fx, tx = _pair()
    fx[0, :, [3, 1]] = ferro.tensor([[1.0, 2.0]] * 3, device=DEV)
    tx[0, :, [3, 1]] = torch.tensor([[1.0, 2.0]] * 3, dtype=torch.float64)
    _same(fx, tx)


@pytest.mark.parametrize("write", ["add_", "setitem", "fill_"])
@pytest.mark.parametrize("make", ["expand", "real", "imag", "view_as_real"])
def test_writes_core_cannot_carry_are_refused_before_anything_changes(make: str, write: str) -> None:
    if make == "expand":
        fx = ferro.tensor(A[:, :1, :], device=DEV)
        fv = fx.expand(2, 3, 4)
    else:
        fx = ferro.tensor(A + 1j * A[::-1], device=DEV)
        fv = getattr(fx, make) if make != "view_as_real" else ferro.view_as_real(fx)
    before, vbefore, version = fx.numpy().copy(), fv.numpy().copy(), fx.version
    why = "overlap in memory" if make == "expand" else "parts? of each complex element"
    with pytest.raises(RuntimeError, match=rf"{write}: cannot write through a view made by '{make}' on backend "
                                           rf"'{DEV}'.*copies.*{why}"):
        {"add_": lambda: fv.add_(1), "setitem": lambda: fv.__setitem__(0, 1.0), "fill_": lambda: fv.fill_(2)}[write]()
    np.testing.assert_array_equal(fx.numpy(), before)
    np.testing.assert_array_equal(fv.numpy(), vbefore)
    assert fx.version == version


def test_a_view_of_an_expanded_view_without_overlap_writes_through() -> None:
    fx, tx = _pair(A[:, :1, :])
    fv, tv = fx.expand(2, 3, 4)[:, 0], tx.expand(2, 3, 4)[:, 0]  # one element of the base each: writable
    fv.add_(100)
    tv.add_(100)
    _same(fx, tx)
    _same(fv, tv)


def test_complex_parts_follow_writes_to_the_base() -> None:
    z = A + 1j * A[::-1]
    fz, tz = ferro.tensor(z, device=DEV), torch.tensor(z)
    parts = [(fz.real, tz.real), (fz.imag, tz.imag), (ferro.view_as_real(fz), torch.view_as_real(tz))]
    fz.mul_(1 - 2j)
    tz.mul_(1 - 2j)
    fz[0, 0] = 5j
    tz[0, 0] = 5j
    for f, t in parts:
        _same(f, t)


# -- autograd through copied views ----------------------------------------------------------------------------


def _grads(fn: Callable[[Any, Any], Any]) -> None:
    """``fn(leaf, lib)`` on both libraries: the output's values and the leaf's gradient agree with PyTorch."""
    fl = ferro.tensor(A, device=DEV, requires_grad=True)
    tl = torch.tensor(A, requires_grad=True)
    fo, to = fn(fl, ferro), fn(tl, torch)
    _same(fo.detach(), to.detach())
    seed = np.random.default_rng(3).standard_normal(tuple(to.shape))
    fo.backward(ferro.tensor(seed, device=DEV))
    to.backward(torch.tensor(seed))
    np.testing.assert_allclose(fl.grad.numpy(), tl.grad.numpy(), rtol=1e-12)


def _inplace_on_view(x: Any, lib: Any) -> Any:
    y = x * 2
    y.transpose(0, 2)[1].mul_(y[0][:, 1:3] + 1)  # a view written in place, from another view
    return y.sin()


def _inplace_on_base(x: Any, lib: Any) -> Any:
    y = x * 1
    v = y[:, 1:]
    y.mul_(3)  # the base changes; the view, read after, must see it (values and graph)
    return v * v


def _setitem_through_view(x: Any, lib: Any) -> Any:
    y = x.clone()
    y.permute(1, 0, 2)[0, :, ::2] = x[1, 0, :2].exp()
    return y


def _views_only(x: Any, lib: Any) -> Any:
    return x.transpose(0, 1)[1:].reshape(2, 2, 4).permute(2, 1, 0) * 3


@pytest.mark.parametrize("fn", [_inplace_on_view, _inplace_on_base, _setitem_through_view, _views_only])
def test_autograd_through_copied_views_matches_pytorch(fn: Callable[[Any, Any], Any]) -> None:
    _grads(fn)


def test_a_view_of_a_leaf_is_refused_in_place_as_in_pytorch() -> None:
    fl = ferro.tensor(A, device=DEV, requires_grad=True)
    with pytest.raises(RuntimeError, match="view of a leaf Variable"):
        fl[0].add_(1)


def test_views_made_and_dropped_between_writes_do_not_pile_up() -> None:
    fx, tx = _pair()
    for i in range(300):
        fx[i % 2].sum()
    assert len(fx._vc[1]) < 130  # weak references, pruned as they grow
    keep = [fx[i % 2] for i in range(3)]
    fx.add_(1)
    tx.add_(1)
    assert len(fx._vc[1]) == 3
    for i, v in enumerate(keep):
        _same(v, tx[i % 2])


def test_explain_says_copy_instead_of_view() -> None:
    r = ferro.backends.explain("permute", ferro.float32, DEV)
    assert r.route == "kernel" and any(n.startswith("copy instead of view") for n in r.notes), str(r)
    assert not any("copy instead of view" in n for n in ferro.backends.explain("permute", ferro.float32, "cpu").notes)
