"""The backward engine's own paths, against PyTorch: graphs with shared and repeated nodes, several roots,
the partial saving of ``mul``/``div``, anomaly mode on the engine's general path, and how a first gradient
reaches ``.grad``: taken as it is where nothing else sees it (as PyTorch's AccumulateGrad steals it), copied
wherever something else does (a hook, a custom Function, the caller's own ``gradient``, another leaf);
and how later gradients are added: into the existing ``.grad`` in place where PyTorch's AccumulateGrad does it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import ferro
from ferro.testing import assert_close

torch = pytest.importorskip("torch")
rng = np.random.default_rng(7)
DTYPES = ("float32", "float64")


def _leaves(lib: Any, dtype: str, *arrays: np.ndarray) -> list[Any]:
    return [lib.tensor(a, dtype=getattr(lib, dtype), requires_grad=True) for a in arrays]


def _check_grads(ours: list[Any], theirs: list[Any]) -> None:
    for o, t in zip(ours, theirs):
        assert (o.grad is None) == (t.grad is None)
        if t.grad is not None:
            assert o.grad.dtype == getattr(ferro, str(t.grad.dtype).split(".")[1])
            assert_close(np.asarray(o.grad), t.grad.numpy(), rtol=1e-5, atol=1e-6)


def _pointer(t: Any) -> int:
    return t._data.__array_interface__["data"][0]


@pytest.mark.parametrize("dtype", DTYPES)
def test_shared_nodes_and_several_roots_match_torch(dtype: str) -> None:
    arrays = rng.standard_normal((3, 4)), rng.standard_normal((4,))
    res = []
    for lib in (ferro, torch):
        a, b = _leaves(lib, dtype, *arrays)
        y = a * b + a  # a feeds two nodes; b broadcasts
        z = y.tanh() * y  # y feeds two nodes (a diamond)
        w = (z * 2.0).sum(dim=1)
        # two roots, one reachable from the other; the same root twice
        lib.autograd.backward([w.sum(), y.sum(), w.mean()], [None, None, None])
        res.append((a, b))
    _check_grads(list(res[0]), list(res[1]))


@pytest.mark.parametrize("dtype", DTYPES)
def test_a_root_reached_from_another_root_runs_once(dtype: str) -> None:
    x0 = rng.standard_normal((5,))
    res = []
    for lib in (ferro, torch):
        (x,) = _leaves(lib, dtype, x0)
        y = x * 3.0
        z = y.exp() * y
        dt = getattr(lib, dtype)
        lib.autograd.backward([z, y], [lib.ones(5, dtype=dt), lib.full((5,), 0.5, dtype=dt)])
        res.append(x)
    _check_grads([res[0]], [res[1]])


def _raises_after_change(lib: Any, op: str, x_first: bool, changed: str) -> bool:
    """Whether backward through ``op(x, c)`` (or ``op(c, x)``) fails after an in-place change to ``changed``."""
    x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
    xc = x * 1  # a non-leaf, so that it can be changed in place
    c = lib.tensor([1.5, 2.5, 3.5])  # requires no grad
    f = getattr(lib, op)
    y = f(xc, c) if x_first else f(c, xc)
    with lib.no_grad():
        (xc if changed == "x" else c).add_(1)
    try:
        y.sum().backward()
    except RuntimeError as e:
        assert "modified by an inplace operation" in str(e)
        return True
    return False


@pytest.mark.parametrize("op", ["mul", "div"])
@pytest.mark.parametrize("x_first", [True, False])
@pytest.mark.parametrize("changed", ["x", "c"])
def test_partial_saving_keeps_only_what_the_needed_formula_reads(op: str, x_first: bool, changed: str) -> None:
    """With one input not requiring grad, ``mul`` and ``div`` keep (and check for in-place changes) only what
    the other input's formula reads, as PyTorch does."""
    assert _raises_after_change(ferro, op, x_first, changed) == _raises_after_change(torch, op, x_first, changed)


@pytest.mark.parametrize("shape", [(4, 5), (512, 1024)])  # (512, 1024) float32: a pooled buffer on the CPU
def test_a_fresh_first_gradient_is_stored_as_it_is(shape: tuple[int, ...]) -> None:
    """A gradient nothing but the engine holds becomes ``.grad`` without a copy (its memory is the
    backward formula's result), and ``.grad`` stays writable and equal to PyTorch's."""
    seen: list[int] = []

    class Twice(ferro.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            return x * 2

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            r = g * 2
            seen.append(_pointer(r))  # where its memory lies, not the tensor
            return r

    x0 = rng.standard_normal(shape).astype(np.float32)
    x = ferro.tensor(x0, requires_grad=True)
    Twice.apply(x).sum().backward()
    assert _pointer(x.grad) == seen[0]
    xt = torch.tensor(x0, requires_grad=True)
    (xt * 2).sum().backward()
    assert_close(np.asarray(x.grad), xt.grad.numpy())
    x.grad.add_(1)  # writable, in place
    assert_close(np.asarray(x.grad), xt.grad.numpy() + 1)
    Twice.apply(x).sum().backward()  # a second backward accumulates into a new tensor, as before
    assert_close(np.asarray(x.grad), xt.grad.numpy() * 2 + 1)


def _counted_clones(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The cpu device's clone kernel counting its calls into the list returned (the copies of gradients)."""
    kernels = ferro.ones(1)._device._kernels
    clone = kernels["clone"]
    calls: list[int] = []

    def counted(a: Any) -> Any:
        calls.append(1)
        return clone(a)

    monkeypatch.setitem(kernels, "clone", counted)
    return calls


def test_the_built_in_formulas_gradient_is_not_copied(monkeypatch: pytest.MonkeyPatch) -> None:
    """On the engine's direct path too: no clone for ``(x * 2).sum()``'s gradient; one where a hook saw it."""
    x = ferro.ones(64, 64, requires_grad=True)
    calls = _counted_clones(monkeypatch)
    (x * 2).sum().backward()
    assert not calls and x.grad.tolist() == [[2.0] * 64] * 64
    x.grad = None
    x.register_hook(lambda g: None)
    (x * 2).sum().backward()
    assert len(calls) == 1 and x.grad.tolist() == [[2.0] * 64] * 64


def test_a_gradient_viewing_memory_nothing_else_sees_is_not_copied(monkeypatch: pytest.MonkeyPatch) -> None:
    """A backward kernel's result that is a view of another array (layer_norm's and relu's gradients are
    reshaped or sliced from their kernels' buffers) becomes ``.grad`` without a copy where nothing else sees
    that array, with PyTorch's values."""
    x0 = rng.standard_normal((64, 32)).astype(np.float32)
    calls = _counted_clones(monkeypatch)
    for f, ft in ((lambda t: ferro.nn.functional.layer_norm(t, (32,)),
                   lambda t: torch.nn.functional.layer_norm(t, (32,))),
                  (lambda t: t.relu(), lambda t: t.relu())):
        x, xt = ferro.tensor(x0, requires_grad=True), torch.tensor(x0, requires_grad=True)
        (f(x) * ferro.tensor(x0)).sum().backward()
        (ft(xt) * torch.tensor(x0)).sum().backward()
        assert_close(np.asarray(x.grad), xt.grad.numpy(), rtol=1e-5, atol=1e-5)
    assert not calls


def test_gradients_viewing_one_array_are_copied_but_the_last() -> None:
    """``cat``'s backward gives each input a slice of one gradient: a leaf's ``.grad`` never shares memory with
    another's, whichever is stored first."""
    a, b = ferro.ones(2, 3, requires_grad=True), ferro.ones(4, 3, requires_grad=True)
    (ferro.cat([a, b]) * ferro.arange(18.0).reshape(6, 3)).sum().backward()
    assert not _aliases(a.grad, b.grad) and not _aliases(b.grad, a.grad)
    assert a.grad.tolist() == ferro.arange(6.0).reshape(2, 3).tolist()
    assert b.grad.tolist() == ferro.arange(6.0, 18.0).reshape(4, 3).tolist()


def _aliases(a: Any, b: Any) -> bool:
    """Whether a change to ``a`` in place shows in ``b``."""
    before = np.asarray(b).copy()
    with ferro.no_grad():
        a.add_(1)
    after = np.asarray(b).copy()
    with ferro.no_grad():
        a.sub_(1)
    return not np.array_equal(before, after)


def test_a_gradient_a_leaf_hook_keeps_is_copied() -> None:
    for lib in (ferro, torch):
        x = lib.ones(3, requires_grad=True)
        kept: list[Any] = []
        x.register_hook(lambda g: kept.append(g))
        (x * 2).sum().backward()
        assert not _aliases(x.grad, kept[0]) if lib is ferro else True
        assert kept[0].tolist() == [2.0, 2.0, 2.0]


def test_a_gradient_a_node_hook_keeps_is_copied() -> None:
    """``add`` passes its incoming gradient on as it is: the tensor a hook on its output saw reaches the leaf."""
    x = ferro.ones(3, requires_grad=True)
    y = x * 2
    s = y + 1
    kept: list[Any] = []
    s.register_hook(lambda g: kept.append(g))
    s.backward(ferro.tensor([1.0, 2.0, 3.0]))
    assert x.grad.tolist() == [2.0, 4.0, 6.0]
    z = x + 0
    z.register_hook(lambda g: kept.append(g))
    x.grad = None
    z.backward(ferro.tensor([1.0, 2.0, 3.0]))
    assert not _aliases(x.grad, kept[-1])


def test_the_callers_gradient_is_copied() -> None:
    g = ferro.tensor([1.0, 2.0, 3.0])
    x = ferro.ones(3, requires_grad=True)
    x.backward(g)  # a leaf as the root
    assert not _aliases(x.grad, g)
    x.grad = None
    (x + 0).backward(g)  # passed on as it is by add
    assert not _aliases(x.grad, g)
    x.grad = None
    (x * 1).backward(g * 1)  # a temporary nobody else holds: any storage is fine, the values must be right
    assert x.grad.tolist() == [1.0, 2.0, 3.0]


def test_one_gradient_for_two_leaves_is_not_shared() -> None:
    a, b = ferro.ones(3, requires_grad=True), ferro.ones(3, requires_grad=True)
    (a + b).backward(ferro.tensor([1.0, 2.0, 3.0]) * 1)
    assert not _aliases(a.grad, b.grad)
    assert a.grad.tolist() == b.grad.tolist() == [1.0, 2.0, 3.0]


def test_a_gradient_a_custom_function_keeps_is_copied() -> None:
    kept: list[Any] = []

    class Keep(ferro.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            return x * 1

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            r = g * 3
            kept.append(r)
            return r

    x = ferro.ones(3, requires_grad=True)
    Keep.apply(x).sum().backward()
    assert not _aliases(x.grad, kept[0])
    assert x.grad.tolist() == [3.0, 3.0, 3.0]


def test_a_broadcast_gradient_is_copied_and_writable() -> None:
    """``sum``'s backward is an expanded (read-only, stride 0) view: ``.grad`` gets its own memory."""
    for lib in (ferro, torch):
        x = lib.ones(2, 3, requires_grad=True)
        x.sum().backward()
        x.grad[0, 0] = 5.0  # one element, not the whole row
        assert x.grad.tolist() == [[5.0, 1.0, 1.0], [1.0, 1.0, 1.0]]


def test_retain_grad_and_leaf_grad_are_not_shared() -> None:
    res = []
    for lib in (ferro, torch):
        x = lib.ones(3, requires_grad=True)
        y = x + 0
        y.retain_grad()
        (y * 1).backward(lib.tensor([1.0, 2.0, 3.0]))
        with lib.no_grad():
            x.grad.mul_(10)
        res.append((x.grad.tolist(), y.grad.tolist()))
    assert res[0] == res[1]


def _counted(monkeypatch: pytest.MonkeyPatch, name: str) -> list[int]:
    """Count the calls of the cpu device's kernel ``name`` (and the times it did its work)."""
    kernels = ferro.ones(1)._device._kernels
    kernel, calls = kernels[name], []

    def counted(*args: Any) -> Any:
        r = kernel(*args)
        calls.append(1 if r is not False else 0)
        return r

    monkeypatch.setitem(kernels, name, counted)
    return calls


def _chain(x: Any) -> Any:
    return ((x * 1.5 + 0.25).tanh() * x).exp().sum()


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_later_gradients_are_added_into_grad_in_place_as_in_torch(dtype: str, monkeypatch: pytest.MonkeyPatch
                                                                  ) -> None:
    """Without create_graph, PyTorch adds each later gradient into the existing ``.grad``: the same tensor,
    which a reference the caller holds sees change; ferro does so too, with the same values (float32 and
    float64 through the device's ``accumulate_`` kernel, the 16-bit floats as a sum copied in)."""
    calls = _counted(monkeypatch, "accumulate_")
    from ferro.autograd import _engine
    stores = []  # the general path (_store_leaf): the first gradient; a later one only where no kernel adds it
    real = _engine._store_leaf
    monkeypatch.setattr(_engine, "_store_leaf", lambda *a: stores.append(1) or real(*a))
    a = rng.standard_normal((5, 4)) * 0.5
    res = []
    for lib in (ferro, torch):
        x = lib.tensor(a, dtype=getattr(lib, dtype), requires_grad=True)
        _chain(x).backward()
        held = x.grad
        first = held.float().tolist()
        _chain(x).backward()
        _chain(x).backward()
        res.append((held is x.grad, first, held.float().tolist(), x.grad.dtype == getattr(lib, dtype)))
    assert res[0][0] is res[1][0] is True and res[0][3] and res[1][3]
    tol = dict(rtol=1e-5, atol=1e-6) if dtype in ("float32", "float64") else dict(rtol=2e-2, atol=2e-2)
    assert_close(np.array(res[0][1]), np.array(res[1][1]), **tol)
    assert_close(np.array(res[0][2]), np.array(res[1][2]), **tol)
    assert sum(calls) == (2 if dtype in ("float32", "float64") else 0)
    assert len(stores) == (1 if dtype in ("float32", "float64") else 3)


def test_a_view_grad_is_written_through_and_a_transposed_one_kept_as_in_torch() -> None:
    """A ``.grad`` set by the caller to a view of another tensor, or to a transposed one, is added into in
    place: the base sees the sum, and ``.grad`` stays the same tensor, as in PyTorch."""
    res = []
    for lib in (ferro, torch):
        x = lib.ones(3, 2, requires_grad=True)
        base = lib.zeros(6, 2)
        x.grad = base[:3]
        held = x.grad
        (x * 2).sum().backward()
        t = lib.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]).t()
        y = lib.ones(3, 2, requires_grad=True)
        y.grad = t
        (y * 3).sum().backward()
        res.append((held is x.grad, base.tolist(), y.grad is t, t.tolist()))
    assert res[0] == res[1]


def test_an_unwritable_grad_gets_a_new_tensor() -> None:
    """An expanded ``.grad`` (elements sharing memory; PyTorch refuses to add into it) and a read-only one
    are replaced by the sum rather than written into; the values are PyTorch's sum."""
    x = ferro.ones(3, 2, requires_grad=True)
    x.grad = ferro.tensor([[1.0, 2.0]]).expand(3, 2)
    held = x.grad
    (x * 2).sum().backward()
    assert x.grad is not held and held.tolist() == [[1.0, 2.0]] * 3 and x.grad.tolist() == [[3.0, 4.0]] * 3
    ro = np.ones((3, 2), np.float32)
    ro.flags.writeable = False
    x.grad = ferro.tensor([[1.0, 1.0]] * 3)
    x.grad._data = ro
    held = x.grad
    (x * 2).sum().backward()
    assert x.grad is not held and ro.tolist() == [[1.0, 1.0]] * 3 and x.grad.tolist() == [[3.0, 3.0]] * 3


@pytest.mark.filterwarnings("ignore::UserWarning")  # PyTorch's note on backward(create_graph=True)
def test_create_graph_and_retained_non_leaf_gradients_are_new_tensors_as_in_torch() -> None:
    """With create_graph, and for a non-leaf's retained gradient, PyTorch stores ``old + new`` as a new tensor
    (the held one keeps its values); then a plain backward adds in place again, also into a ``.grad`` that
    requires grad; leaf hooks run before the in-place sum."""
    res = []
    for lib in (ferro, torch):
        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        (x * 2).sum().backward()
        held = x.grad
        (x * x).sum().backward(create_graph=True)
        step1 = (held is x.grad, held.tolist(), x.grad.tolist(), x.grad.requires_grad)
        held = x.grad
        (x * 2).sum().backward()
        step2 = (held is x.grad, held.tolist())
        z = lib.ones(2, requires_grad=True) * 1
        z.retain_grad()
        (z * 2).sum().backward(retain_graph=True)
        zheld = z.grad
        (z * 2).sum().backward()
        step3 = (zheld is z.grad, zheld.tolist(), z.grad.tolist())
        w = lib.ones(2, requires_grad=True)
        w.register_hook(lambda g: g * 10)
        (w * 2).sum().backward()
        wheld = w.grad
        (w * 2).sum().backward()
        step4 = (wheld is w.grad, wheld.tolist())
        res.append((step1, step2, step3, step4))
    assert res[0] == res[1]


@pytest.mark.filterwarnings("ignore::UserWarning")  # PyTorch's note on backward(create_graph=True)
def test_backward_with_inputs_adds_into_a_leafs_grad_in_place_as_in_torch() -> None:
    """``backward(inputs=...)``: a leaf's later gradient is added into the same ``.grad``; a non-leaf's, and any
    with create_graph, make a new tensor, as in PyTorch; a retained non-leaf given in ``inputs`` gets its
    gradient once (it was added twice: by retain_grad and for ``inputs``)."""
    res = []
    for lib in (ferro, torch):
        x = lib.ones(3, requires_grad=True)
        (x * 2).sum().backward(inputs=[x])
        held = x.grad
        (x * 2).sum().backward(inputs=[x])
        leaf = (held is x.grad, held.tolist())
        z = x * 1
        z.retain_grad()
        (z * 2).sum().backward(inputs=[z], retain_graph=True)
        zheld = z.grad
        (z * 2).sum().backward(inputs=[z])
        held = x.grad
        (x * x).sum().backward(inputs=[x], create_graph=True)
        res.append((leaf, zheld is z.grad, zheld.tolist(), z.grad.tolist(), held is x.grad, x.grad.tolist()))
    assert res[0] == res[1]


@pytest.mark.parametrize("dtype", DTYPES)
def test_reductions_after_a_full_reduction_give_torchs_gradients(dtype: str) -> None:
    """``mean()`` after ``sum(dim=1)``: the full reduction's gradient, expanded and reshaped, is expanded again
    (one element seen everywhere, the view built on that element's memory); the gradients are PyTorch's."""
    a = rng.standard_normal((6, 5))
    ours, theirs = _leaves(ferro, dtype, a), _leaves(torch, dtype, a)
    for (x,), lib in ((ours, ferro), (theirs, torch)):
        (lib.tanh(x).sum(dim=1).mean() + x.sum(dim=0).sum()).backward()
    _check_grads(ours, theirs)
    e = ferro.tensor(3.0).expand(4).reshape(4, 1).expand(4, 3)
    assert e.tolist() == torch.tensor(3.0).expand(4).reshape(4, 1).expand(4, 3).tolist()


@pytest.mark.filterwarnings("ignore::UserWarning")  # PyTorch's notes on anomaly mode
def test_anomaly_mode_runs_the_engines_general_path() -> None:
    arrays = rng.standard_normal((3,)), rng.standard_normal((3,))
    res = []
    for lib in (ferro, torch):
        a, b = _leaves(lib, "float64", *arrays)
        with lib.autograd.detect_anomaly():
            ((a * b).exp() / 3.0 - b).sum().backward()
        res.append((a, b))
    _check_grads(list(res[0]), list(res[1]))
    for lib in (ferro, torch):
        x = lib.tensor([0.0, 1.0], requires_grad=True)
        y = x.sqrt() * 0.0  # sqrt's gradient at 0 is inf; times 0.0, nan
        with lib.autograd.detect_anomaly(), pytest.raises(RuntimeError, match="returned nan values"):
            y.sum().backward()


_SAVING = {  # op -> what its node saves: its output or its inputs
    "exp": lambda x, y: x.exp(), "tanh": lambda x, y: x.tanh(), "relu": lambda x, y: x.relu(),
    "mul": lambda x, y: x * y, "div": lambda x, y: x / y, "rdiv": lambda x, y: y / x,
}


@pytest.mark.parametrize("op", sorted(_SAVING))
def test_saved_values_are_unpacked_checked_and_freed_in_the_loop_as_in_torch(op: str,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    # The engine reads a plain node's saved output and inputs itself (no Node.unpack / Node.release call):
    # the gradients, the in-place check and the freeing after a backward are PyTorch's.
    calls = {"unpack": 0, "release": 0}
    for name in calls:
        real = getattr(ferro.autograd.Node, name)
        monkeypatch.setattr(ferro.autograd.Node, name,
                            lambda self, *a, _real=real, _name=name: (calls.__setitem__(_name, calls[_name] + 1),
                                                                     _real(self, *a))[1])
    f = _SAVING[op]
    a, b = rng.standard_normal((2, 3, 4))
    outcomes = []
    for lib in (ferro, torch):
        x, y = _leaves(lib, "float64", a, b + 3.0)
        z = f(x, y).sum()
        z.backward(retain_graph=True)
        z.backward()
        try:
            z.backward()
            again = "ran"
        except RuntimeError as e:
            again = "second time" in str(e)
        w = f(x, y)
        with lib.no_grad():
            (w if op in ("exp", "tanh", "relu") else x).add_(1)
        try:
            w.sum().backward()
            changed = "ran"
        except RuntimeError as e:
            changed = "modified by an inplace operation" in str(e)
        outcomes.append((again, changed, x.grad.numpy().copy(), None if y.grad is None else y.grad.numpy().copy()))
    ours, theirs = outcomes
    assert ours[:2] == theirs[:2]
    for o, t in zip(ours[2:], theirs[2:]):
        assert (o is None) == (t is None)
        if t is not None:
            np.testing.assert_allclose(o, t, rtol=1e-12)
    # the only Node.unpack calls are the raising ones (a released node, a changed saved value)
    assert calls["release"] == 0
    assert calls["unpack"] == 1 + (theirs[1] is True)


_FORMULA_CASES = [(dtype, expr) for dtype in ("float32", "float64", "complex64", "complex128")
                  for expr in ("x * y", "y * x", "x / y", "y / x", "x * 2.5", "x / 3.0", "x / 3", "x.exp()",
                               "x * (1 - 1j)", "x / (1 + 2j)")
                  if dtype.startswith("complex") or "j" not in expr]  # (a complex number: a complex result)


@pytest.mark.parametrize(("dtype", "expr"), _FORMULA_CASES)
def test_mul_div_and_exp_formulas_match_torch(dtype: str, expr: str) -> None:
    # mul's, div's and exp's formulas conjugate a complex factor in their own frame (a real one as it is)
    cplx = dtype.startswith("complex")
    a = rng.standard_normal((3, 4)) + (1j * rng.standard_normal((3, 4)) if cplx else 0)
    b = rng.standard_normal((3, 4)) + 2 + (1j * rng.standard_normal((3, 4)) if cplx else 0)
    ours, theirs = ([lib.tensor(v.astype(dtype), requires_grad=True) for v in (a, b)] for lib in (ferro, torch))
    for x, y in (ours, theirs):
        out = eval(expr)
        (out.real.sum() if cplx else out.sum()).backward()
    _check_grads(ours, theirs)
