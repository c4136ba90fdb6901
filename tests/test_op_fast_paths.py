"""The per-op fast paths (creation, reductions, cat / stack, views, Python numbers beside tensors, relu, linear)
give what the checked paths give: PyTorch's values, dtypes and errors, and gradients where they record."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import ferro
from ferro.testing import assert_close

from conftest import functions_entered

torch = pytest.importorskip("torch")
rng = np.random.default_rng(11)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(64, 64), (1,), (4096,), (4097,), (3, 5, 7), (), (700, 300), (3, 40, 1000)])
def test_sum_of_every_element_as_torch(dtype: str, shape: tuple[int, ...]) -> None:
    # small contiguous float arrays are summed by one BLAS dot with ones on cpu, large ones by BLAS row sums
    # and NumPy's reduce over those, others by NumPy's reduce
    x = rng.standard_normal(shape).astype(dtype)
    for arr in (x, x.T):
        got, ref = ferro.tensor(arr).sum(), torch.tensor(arr).sum()
        assert got.shape == () and got.dtype == getattr(ferro, dtype)
        tol = 1e-5 if dtype == "float32" else 1e-12
        np.testing.assert_allclose(got.numpy(), ref.numpy(), rtol=tol, atol=tol)
        assert got.item() == pytest.approx(ref.item(), rel=tol, abs=tol)


@pytest.mark.parametrize("values", [[np.inf, 1.0], [np.inf, -np.inf], [np.nan, 2.0], [-0.0, 3.0]])
@pytest.mark.parametrize("rows", [4, 2048])
def test_sum_of_non_finite_values_as_torch(values: list[float], rows: int) -> None:
    x = np.array(values * 2 * rows, dtype=np.float32).reshape(rows, 4)
    got, ref = ferro.tensor(x).sum(), torch.tensor(x).sum()
    np.testing.assert_array_equal(got.numpy(), ref.numpy())


def test_sum_keeps_integer_and_explicit_dtypes() -> None:
    x = np.arange(12, dtype=np.int32).reshape(3, 4)
    assert ferro.tensor(x).sum().dtype == ferro.int64
    assert ferro.tensor(x).sum(dtype=ferro.float64).dtype == ferro.float64
    assert ferro.tensor(x).sum().item() == 66
    assert ferro.tensor(x.astype(np.float16)).sum().dtype == ferro.float16


@pytest.mark.parametrize("name", ["sum", "mean", "amax", "amin", "max", "min"])
def test_reductions_record_their_gradient(name: str) -> None:
    x = rng.standard_normal((5, 6)).astype(np.float32)
    f, t = ferro.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    args: tuple[Any, ...] = () if name in ("max", "min") else (1,)
    getattr(f, name)(*args).sum().backward()
    getattr(t, name)(*args).sum().backward()
    assert_close(f.grad, t.grad)


def test_reductions_refuse_as_before() -> None:
    x = ferro.zeros(3, 4)
    with pytest.raises(IndexError, match="sum"):
        x.sum(dim=2)
    with pytest.raises(IndexError, match="max"):
        ferro.zeros(0, 3).max()
    with pytest.raises(ferro.errors.DTypeError, match="mean"):
        ferro.zeros(3, dtype=ferro.int64).mean()
    with pytest.raises(TypeError, match="sum"):
        ferro.sum([1.0, 2.0])


@pytest.mark.parametrize("fn", ["zeros", "ones", "empty"])
def test_creation_takes_sizes_as_pytorch(fn: str) -> None:
    for args in [(2, 3), ((2, 3),), ([2, 3],), (ferro.Size([2, 3]),), (torch.Size([2, 3]),), (5,), ((),),
                 (np.int64(2), 3)]:
        got = getattr(ferro, fn)(*args)
        ref = getattr(torch, fn)(*args)
        assert tuple(got.shape) == tuple(ref.shape) and got.dtype == ferro.float32
        if fn != "empty":
            np.testing.assert_array_equal(got.numpy(), ref.numpy())
    for bad, err in [((((2, 3),),), TypeError), ((2.0, 3), TypeError), ((-1, 2), ValueError), (("a",), TypeError)]:
        with pytest.raises(err, match=fn):
            getattr(ferro, fn)(*bad)
        with pytest.raises((TypeError, RuntimeError, ValueError)):
            getattr(torch, fn)(*bad)


def test_creation_keywords_and_defaults() -> None:
    assert ferro.zeros(2, dtype=ferro.float64).dtype == ferro.float64
    assert ferro.ones(2, dtype="int32").dtype == ferro.int32
    assert ferro.zeros(2, requires_grad=True).requires_grad
    assert ferro.zeros(size=(2, 3)).shape == (2, 3)
    assert ferro.zeros(2, device="cpu").device == ferro.device("cpu")
    with pytest.raises(TypeError, match="zeros"):
        ferro.zeros(2, dtype=3)
    ferro.set_default_dtype(ferro.float64)
    try:
        assert ferro.zeros(2).dtype == ferro.float64 and ferro.full((2,), 1.5).dtype == ferro.float64
    finally:
        ferro.set_default_dtype(ferro.float32)


@pytest.mark.parametrize("value", [2.0, 7, True, -0.0])
def test_full_infers_its_dtype_as_torch(value: Any) -> None:
    got, ref = ferro.full((2, 3), value), torch.full((2, 3), value)
    assert str(got.dtype).removeprefix("ferro.") == str(ref.dtype).removeprefix("torch.")
    np.testing.assert_array_equal(got.numpy(), ref.numpy())


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int32", "uint8", "bool",
                                   "complex64"])
def test_filled_arrays_kept_to_copy_are_never_shared(dtype: str) -> None:
    """ferro-cpu's ``full`` copies a filled array it keeps: each result is a fresh, writable array of the
    value, also after a write to an earlier one, for every value kind (0.0, -0.0 and NaN are filled each time)."""
    fd, td = getattr(ferro, dtype), getattr(torch, dtype)
    for value in [1, 2.5, -3, 0.0, -0.0, float("nan"), float("inf"), 7]:
        if dtype in ("uint8", "bool", "int32") and (value != value or abs(value) == float("inf")
                                                     or (dtype == "uint8" and value < 0)):
            continue
        refs = torch.full((4, 5), value, dtype=td)
        for _ in range(3):
            got = ferro.full((4, 5), value, dtype=fd)
            wide = dtype in ("float16", "bfloat16")  # (compared in float32: torch has no NumPy bfloat16)
            assert_close(got.float() if wide else got, refs.float() if wide else refs, equal_nan=True)
            assert str(got.dtype).removeprefix("ferro.") == dtype
            assert np.signbit(got.float().numpy()).tolist() == torch.signbit(refs.float()).tolist()
            got.fill_(0)  # a write to one result leaves the next one as it was
        assert ferro.ones(4, 5, dtype=fd).tolist() == torch.ones(4, 5, dtype=td).tolist()
        full = ferro.ones(1)._device._kernels["full"]  # (a shape given as a list: filled, not kept)
        assert full([2, 3], 1, fd).shape == (2, 3)
        assert ferro.ones(4, 5, dtype=fd)._data is not ferro.ones(4, 5, dtype=fd)._data


def test_arange_as_torch() -> None:
    for args in [(5,), (2, 9), (2, 9, 3), (9, 2, -2), (0,), (1.5,), (0, 1, 0.25)]:
        got, ref = ferro.arange(*args), torch.arange(*args)
        assert str(got.dtype).removeprefix("ferro.") == str(ref.dtype).removeprefix("torch.")
        np.testing.assert_array_equal(got.numpy(), ref.numpy())
    with pytest.raises(ValueError, match="arange"):
        ferro.arange(0, 5, 0)
    with pytest.raises(ValueError, match="arange"):
        ferro.arange(5, 0, 1)


@pytest.mark.parametrize("dim", [0, 1, -1, 2, -3])
@pytest.mark.parametrize("name", ["cat", "stack"])
def test_cat_and_stack_as_torch(name: str, dim: int) -> None:
    xs = [rng.standard_normal((3, 4)).astype(np.float32) for _ in range(3)]
    if name == "cat" and dim in (2, -3):
        with pytest.raises(IndexError, match="cat"):
            ferro.cat([ferro.tensor(x) for x in xs], dim)
        return
    fs = [ferro.tensor(x, requires_grad=True) for x in xs]
    ts = [torch.tensor(x, requires_grad=True) for x in xs]
    got, ref = getattr(ferro, name)(fs, dim), getattr(torch, name)(ts, dim)
    assert_close(got, ref.detach())
    w = rng.standard_normal(tuple(ref.shape)).astype(np.float32)
    (got * ferro.tensor(w)).sum().backward()
    (ref * torch.tensor(w)).sum().backward()
    for f, t in zip(fs, ts, strict=True):
        assert_close(f.grad, t.grad)


@pytest.mark.parametrize("grad", [False, True])
@pytest.mark.parametrize("count", [1, 2, 3])
@pytest.mark.parametrize(("name", "dim"), [("cat", 0), ("cat", 1), ("cat", -1), ("stack", 0), ("stack", 2)])
def test_cat_and_stack_fast_path_as_torch(monkeypatch: pytest.MonkeyPatch, name: str, dim: int, count: int,
                                          grad: bool) -> None:
    """cat / stack of one dtype on one device run in their public function (two inputs in one step, no loop),
    never in the checked path, with torch's values and gradients; inputs of other sizes along a cat's dim too."""
    from ferro._ops import shape
    checked = []
    real = shape._join
    monkeypatch.setattr(shape, "_join", lambda *a: checked.append(1) or real(*a))
    shapes = []
    for n in [2, 3, 1][:count]:
        s = [4, 3, 2]
        if name == "cat":  # (stack: one shape)
            s[dim] = n
        shapes.append(tuple(s))
    xs = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    fs = [ferro.tensor(x, requires_grad=grad) for x in xs]
    ts = [torch.tensor(x, requires_grad=grad) for x in xs]
    got, ref = getattr(ferro, name)(fs, dim), getattr(torch, name)(ts, dim)
    assert not checked and got.requires_grad is grad and got.is_contiguous()
    assert_close(got, ref.detach())
    if grad:
        w = rng.standard_normal(tuple(ref.shape)).astype(np.float32)
        (got * ferro.tensor(w)).sum().backward()
        (ref * torch.tensor(w)).sum().backward()
        for f, t in zip(fs, ts, strict=True):
            assert_close(f.grad, t.grad)
    if count == 2:  # the second input of another dtype or of a misfitting shape: the checked path, its answer
        mixed = getattr(ferro, name)([fs[0], fs[1].double()], dim)
        assert len(checked) == 1 and mixed.dtype == ferro.float64
        assert_close(mixed, getattr(torch, name)([ts[0], ts[1].double()], dim).detach())
        with pytest.raises(ferro.errors.ShapeError, match=name):
            getattr(ferro, name)([fs[0], ferro.zeros(5, 5, 5)], dim)


def test_cat_of_other_shapes_and_dtypes_as_torch() -> None:
    a, b = rng.standard_normal((2, 3)).astype(np.float32), rng.standard_normal((4, 3)).astype(np.float32)
    assert_close(ferro.cat([ferro.tensor(a), ferro.tensor(b)]), torch.cat([torch.tensor(a), torch.tensor(b)]))
    mixed = ferro.cat([ferro.tensor(a), ferro.tensor(b.astype(np.float64))])
    assert mixed.dtype == ferro.float64
    empty = ferro.cat([ferro.zeros(0), ferro.tensor(a)])  # a 1-d empty tensor is skipped, as in PyTorch
    assert empty.shape == (2, 3)
    with pytest.raises(ferro.errors.ShapeError, match="cat"):
        ferro.cat([ferro.tensor(a), ferro.zeros(2, 4)])
    with pytest.raises(ferro.errors.ShapeError, match="stack"):
        ferro.stack([ferro.tensor(a), ferro.tensor(b)])
    with pytest.raises(TypeError, match="stack"):
        ferro.stack([ferro.tensor(a), a])
    assert_close(ferro.stack([ferro.tensor(1.0), ferro.tensor(2.0)]), torch.tensor([1.0, 2.0]))


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int64"])
@pytest.mark.parametrize("expr", ["t * 2.0", "t + 1", "2.0 - t", "3 - t", "t / 3.0", "t / -4", "t / 0.5",
                                  "t ** 2", "2.0 ** t", "1 / t", "t / 0.0"])
def test_python_numbers_beside_tensors_as_torch(dtype: str, expr: str) -> None:
    x = rng.uniform(0.5, 3.0, (4, 5)).astype(dtype)
    x.reshape(-1)[:2] = [0, 1] if dtype == "int64" else [np.inf, np.nan]
    t = ferro.tensor(x)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # NumPy's overflow / invalid warnings: PyTorch never warns
        got = eval(expr, {"t": t})
    ref = eval(expr, {"t": torch.tensor(x)})
    assert str(got.dtype).removeprefix("ferro.") == str(ref.dtype).removeprefix("torch.")
    np.testing.assert_allclose(got.numpy().astype(np.float64), ref.numpy().astype(np.float64), rtol=1e-3,
                               equal_nan=True)


@pytest.mark.parametrize("expr", ["t * 2.0", "2.0 - t", "t / 3.0", "t ** 2", "2.0 ** t"])
def test_python_numbers_beside_tensors_record_gradients(expr: str) -> None:
    x = rng.uniform(0.5, 3.0, (3, 4)).astype(np.float32)
    f, t = ferro.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    eval(expr, {"t": f}).sum().backward()
    eval(expr, {"t": t}).sum().backward()
    assert_close(f.grad, t.grad)


def test_relu_results_are_fresh_arrays() -> None:
    # relu of a small array takes the maximum with kept zeros of its shape: results never share them
    x = ferro.tensor(rng.standard_normal((8, 8)).astype(np.float32))
    a = ferro.relu(x)
    a += 5.0
    b = ferro.relu(-x.abs())
    np.testing.assert_array_equal(b.numpy(), np.zeros((8, 8), np.float32))
    assert_close(ferro.relu(x), torch.relu(torch.tensor(x.numpy())))
    assert ferro.relu(ferro.tensor(-2.0)).shape == ()


@pytest.mark.parametrize("bias", [True, False])
def test_linear_without_grad_as_torch(bias: bool) -> None:
    x, w, b = (rng.standard_normal(s).astype(np.float32) for s in ((5, 6), (4, 6), (4,)))
    fb, tb = (ferro.tensor(b), torch.tensor(b)) if bias else (None, None)
    got = ferro.nn.functional.linear(ferro.tensor(x), ferro.tensor(w), fb)
    ref = torch.nn.functional.linear(torch.tensor(x), torch.tensor(w), tb)
    assert got.grad_fn is None and not got.requires_grad
    assert_close(got, ref)
    got = ferro.nn.functional.linear(ferro.tensor(x), weight=ferro.tensor(w), bias=fb)
    assert_close(got, ref)


@pytest.mark.parametrize("key", [(slice(1, 3),), (slice(None), slice(1, 3)), (0,), (0, 1), (Ellipsis, 1), (None, 1),
                                 (1, slice(0, 4, 2)), ()])
def test_basic_indexing_as_torch(key: tuple[Any, ...]) -> None:
    x = rng.standard_normal((4, 5)).astype(np.float32)
    f, t = ferro.tensor(x), torch.tensor(x)
    k = key[0] if len(key) == 1 else key
    got, ref = f[k], t[k]
    assert tuple(got.shape) == tuple(ref.shape)
    assert_close(got, ref)
    got.fill_(7.0)  # a view: the write reaches the base
    ref.fill_(7.0)
    assert_close(f, t)
    f[k] = 2.5
    t[k] = 2.5
    assert_close(f, t)


_MAKERS: dict[str, Any] = {
    "zeros": lambda a, b: ferro.zeros(2, 3), "full": lambda a, b: ferro.full((2, 3), 1.5),
    "a + b": lambda a, b: a + b, "a * 2.0": lambda a, b: a * 2.0, "2.0 - a": lambda a, b: 2.0 - a,
    "exp": lambda a, b: a.exp(), "relu": lambda a, b: ferro.relu(a), "sum": lambda a, b: a.sum(),
    "sum(dim)": lambda a, b: a.sum(dim=1), "cat": lambda a, b: ferro.cat([a, b]),
    "stack": lambda a, b: ferro.stack([a, b]), "view": lambda a, b: a.view(3, 2), "a[0]": lambda a, b: a[0],
    "a[0][1:]": lambda a, b: a[0][1:], "permute": lambda a, b: a.permute(1, 0), "detach": lambda a, b: a.detach(),
    "Parameter": lambda a, b: ferro.nn.Parameter(a.detach()), "Tensor(3)": lambda a, b: ferro.Tensor(3),
}


@pytest.mark.parametrize("grad", [False, True])
@pytest.mark.parametrize("name", list(_MAKERS))
def test_every_tensor_made_has_every_slot_set(name: str, grad: bool) -> None:
    # Tensor has no __getattr__ fallback (it would stop CPython specializing attribute reads): each way a
    # tensor is made, fast paths included, assigns every slot, and an unknown attribute is an AttributeError.
    a = ferro.tensor(rng.standard_normal((2, 3)).astype(np.float32), requires_grad=grad)
    b = ferro.tensor(rng.standard_normal((2, 3)).astype(np.float32))
    t = _MAKERS[name](a, b)
    for slot in ferro.Tensor.__slots__:
        if slot != "__weakref__":
            getattr(t, slot)
    assert t.grad is None and t._hooks is None and t.version == 0
    with pytest.raises(AttributeError, match=f"'{type(t).__name__}' object has no attribute 'nope'"):
        t.nope


def test_fast_paths_without_the_entry_still_reach_the_layers() -> None:
    """reshape, view, permute, cat, stack, sum, mean, linear and softmax run their usual call without the entry:
    a spelling met before (warm caches), no grad; an active layer still sees each of them, once."""
    from ferro._core import modes

    class Recorder(modes.Mode):
        layer = "trace"

        def __init__(self, log: list[str]) -> None:
            self.log = log

        def handle(self, op, args, kwargs, proceed):  # type: ignore[no-untyped-def]
            self.log.append(op.name)
            return proceed(args, kwargs)

    a, w, b = ferro.ones(4, 6), ferro.ones(3, 6), ferro.ones(3)
    calls = [lambda: a.reshape(3, 8), lambda: a.view(8, 3), lambda: a.permute(1, 0), lambda: ferro.cat([a, a]),
             lambda: ferro.stack([a, a]), lambda: a.sum(), lambda: a.mean(),
             lambda: ferro.nn.functional.linear(a, w, b), lambda: ferro.softmax(a, -1), lambda: a.log_softmax(0)]
    want = [c().numpy() for c in calls]  # (warms the caches)
    log: list[str] = []
    layer = Recorder(log)
    modes.push(layer)
    try:
        got = [c().numpy() for c in calls]
    finally:
        modes.pop(layer)
    assert log == ["reshape", "view", "permute", "cat", "stack", "sum", "mean", "linear", "softmax", "log_softmax"]
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("name", ["cat", "stack"])
def test_cat_and_stack_take_axis_as_torch(name: str) -> None:
    xs = [rng.standard_normal((2, 3)).astype(np.float32) for _ in range(2)]
    fs, ts = [ferro.tensor(x) for x in xs], [torch.tensor(x) for x in xs]
    for kw in [{"axis": 1}, {"axis": -1}, {"dim": 1}]:
        np.testing.assert_array_equal(getattr(ferro, name)(fs, **kw).numpy(), getattr(torch, name)(ts, **kw).numpy())
    with pytest.raises(TypeError, match=rf"{name}\(\): got 'dim' and its alias 'axis'"):
        getattr(ferro, name)(fs, 1, axis=1)
    with pytest.raises(TypeError, match=name):
        getattr(ferro, name)(fs, 0, out=fs[0])


@pytest.mark.parametrize("name", ["sum", "mean", "max", "min"])
def test_whole_reductions_take_numpy_keywords_and_refuse_others(name: str) -> None:
    x = rng.standard_normal((3, 4)).astype(np.float32)
    f, t = ferro.tensor(x), torch.tensor(x)
    for args, kw in [((), {}), ((), {"axis": 1}), ((), {"axis": 0, "keepdims": True}), ((1,), {"keepdim": True})]:
        got, want = getattr(f, name)(*args, **kw), getattr(t, name)(*args, **kw)
        if isinstance(want, tuple):
            got, want = got[0], want[0]
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
    with pytest.raises(TypeError, match=name):
        getattr(f, name)(bogus=1)
    with pytest.raises(TypeError, match=name):
        getattr(ferro, name)("not a tensor")


@pytest.mark.parametrize("data", [[1.0, 2.0, 3.0], [1, 2], [True, False], [1.0, 2], [[1.0, 2.0], [3.0, 4.0]],
                                  [1.5, True], [], [2**40, -3]])
def test_tensor_of_a_list_as_torch(data: list) -> None:
    """``tensor(list)``'s fast path (the dtype from the kind NumPy reads) gives torch's dtype and values, each
    call a fresh tensor; what it does not take (complex, strings, ragged) takes the checked path."""
    for _ in range(2):  # (the first call loads the fast path's tools)
        got, want = ferro.tensor(data), torch.tensor(data)
        assert str(got.dtype).removeprefix("ferro.") == str(want.dtype).removeprefix("torch.")
        assert got.tolist() == want.tolist()
    a, b = ferro.tensor(data), ferro.tensor(data)
    assert a._data is not b._data and not a.requires_grad and a._vc == [0]
    assert ferro.tensor([1j]).dtype == ferro.complex64
    with pytest.raises(TypeError, match="tensor"):
        ferro.tensor(["a"])
    with pytest.raises(TypeError, match="tensor"):
        ferro.tensor([[1.0], [2.0, 3.0]])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(), (1,), (64, 64), (3, 0)])
def test_small_sigmoid_as_torch_without_warnings(dtype: str, shape: tuple[int, ...]) -> None:
    """ferro-cpu's small sigmoid (one frame below its errstate): torch's values at every range, 0 where
    ``exp`` overflows, NaN kept, no NumPy warning, and NumPy's error state as it was afterwards."""
    n = int(np.prod(shape))
    x = np.resize(np.array([-1000.0, -746.0, -89.0, -20.0, -1.5, -0.0, 0.0, 2.5, 40.0, 1000.0, np.inf, -np.inf,
                            np.nan], dtype), n).reshape(shape)
    t = ferro.tensor(x)  # (outside the block: a first op loads the plugins, some of which warn)
    before = np.geterr()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = ferro.sigmoid(t)
    want = torch.sigmoid(torch.tensor(x))
    assert np.geterr() == before and got.dtype == getattr(ferro, dtype) and got.shape == want.shape
    assert_close(got, want, equal_nan=True)
    np.testing.assert_array_equal(got.numpy() == 0, want.numpy() == 0)


@pytest.mark.parametrize("name", ["sum", "mean"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_whole_reduction_with_grad_records_in_its_function(monkeypatch: pytest.MonkeyPatch, name: str,
                                                         dtype: str) -> None:
    """``x.sum()`` / ``x.mean()`` of a tensor that requires grad record their node in the public function
    (not through ``_reduced``, ``record1`` or the entry): torch's value and gradient, of a view too (its node
    refreshed after an in-place change of its base)."""
    from ferro._ops import reduction
    slow = []
    real = reduction._reduced
    monkeypatch.setattr(reduction, "_reduced", lambda *a: slow.append(1) or real(*a))
    record1 = reduction.record1  # the node is made in the function itself, not by record1
    monkeypatch.setattr(reduction, "record1", lambda *a, **k: slow.append(1) or record1(*a, **k))
    x = rng.standard_normal((5, 6)).astype(dtype)
    f, t = ferro.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    got, ref = getattr(f, name)(), getattr(t, name)()
    assert got.grad_fn.name == name and got.requires_grad and not slow
    np.testing.assert_allclose(got.detach().numpy(), ref.detach().numpy(), rtol=1e-5, atol=1e-6)
    (got * 3.0).backward()
    (ref * 3.0).backward()
    assert_close(f.grad, t.grad)
    fl, tl = ferro.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    fb, tb = fl * 1.0, tl * 1.0
    fv, tv = fb[1:], tb[1:]
    fb.mul_(2.0)
    tb.mul_(2.0)
    got, ref = getattr(fv, name)(), getattr(tv, name)()
    assert not slow
    np.testing.assert_allclose(got.detach().numpy(), ref.detach().numpy(), rtol=1e-5, atol=1e-6)
    got.backward()
    ref.backward()
    assert_close(fl.grad, tl.grad)


@pytest.mark.parametrize("name", ["zeros", "ones", "empty"])
@pytest.mark.parametrize("dtype", [None, "float64", "int64", "bool", "float16"])
@pytest.mark.parametrize("size", [((3, 4),), (3, 4), ([3, 4],), ((),), ((600, 600),), ((3, 0),)])
def test_filled_sizes_as_torch(monkeypatch: pytest.MonkeyPatch, name: str, dtype: str | None,
                               size: tuple[Any, ...]) -> None:
    """zeros / ones / empty of a shape given as ints or as one tuple read the sizes in their own frame (the
    other spellings through ``_shape_of``), and zeros is NumPy's (the pool's when large): torch's shape, dtype and
    values."""
    from ferro import _creation
    spelled = []
    real = _creation._shape_of
    monkeypatch.setattr(_creation, "_shape_of", lambda s: spelled.append(s) or real(s))
    kw = {} if dtype is None else {"dtype": getattr(ferro, dtype)}
    got = getattr(ferro, name)(*size, **kw)
    ref = getattr(torch, name)(*size, **({} if dtype is None else {"dtype": getattr(torch, dtype)}))
    assert tuple(got.shape) == tuple(ref.shape) and str(got.dtype)[6:] == str(ref.dtype)[6:]
    assert bool(spelled) is (type(size[0]) is list)
    if name != "empty":
        np.testing.assert_array_equal(got.numpy(), ref.numpy())
    if name != "empty" and got.numel():  # (fill_ of an empty tensor is refused: a defect outside these paths)
        got.fill_(1)  # a fresh array each call: a write reaches no later result
        np.testing.assert_array_equal(getattr(ferro, name)(*size, **kw).numpy(), ref.numpy())


def _frames_in(path_end: str, call: Any) -> int:
    """How many Python frames of files whose path ends with ``path_end`` ``call()`` enters."""
    return len(functions_entered(call, path_end))


@pytest.mark.parametrize("grad", [False, True])
@pytest.mark.parametrize("dim", [0, 1, -1, -2])
@pytest.mark.parametrize("name", ["sum", "mean"])
def test_reduction_over_one_int_dim_skips_the_entry(name: str, dim: int, grad: bool) -> None:
    """``x.sum(dim)`` / ``x.mean(dim)`` with one int dim run ``_reduced`` from the public function, without the
    dispatch entry's frame: torch's values and gradients; a dim out of range is still the op's IndexError."""
    x = rng.standard_normal((4, 5)).astype(np.float32)
    f, t = ferro.tensor(x, requires_grad=grad), torch.tensor(x, requires_grad=grad)
    for keepdim in (False, True):
        got = getattr(f, name)(dim, keepdim=keepdim)
        ref = getattr(t, name)(dim, keepdim=keepdim)
        np.testing.assert_allclose(got.detach().numpy(), ref.detach().numpy(), rtol=1e-5, atol=1e-6)
        assert got.requires_grad is grad
        if grad:
            w = rng.standard_normal(tuple(ref.shape)).astype(np.float32)
            (got * ferro.tensor(w)).sum().backward()
            (ref * torch.tensor(w)).sum().backward()
            assert_close(f.grad, t.grad)
    assert _frames_in("_core/modes.py", lambda: getattr(f, name)(dim)) == 0
    assert _frames_in("_core/modes.py", lambda: getattr(f, name)((dim,))) > 0  # (a tuple: the entry's path)
    with pytest.raises(IndexError, match=name):
        getattr(f, name)(2)
    ints = ferro.tensor(np.arange(20).reshape(4, 5))
    if name == "sum":
        assert_close(ints.sum(dim), torch.tensor(np.arange(20).reshape(4, 5)).sum(dim))
    else:
        with pytest.raises(ferro.errors.DTypeError, match="mean"):
            ints.mean(dim)


@pytest.mark.parametrize(("name", "dim", "keepdim"), [("sum", 1, False), ("sum", (0, 2), False), ("mean", -1, False),
                                                      ("mean", (1,), True), ("sum", None, False)])
def test_reduction_gradients_broadcast_without_the_public_reshape(monkeypatch: pytest.MonkeyPatch, name: str,
                                                                  dim: Any, keepdim: bool) -> None:
    """A reduction's backward reshapes its gradient by the ``view`` kernel and broadcasts it by ``expand``'s
    (each with its view record and node, no public function, also where that backward is recorded): torch's
    gradients, twice differentiable."""
    calls = []
    for method in ("reshape", "expand"):
        real = getattr(ferro.Tensor, method)
        monkeypatch.setattr(ferro.Tensor, method, lambda self, *a, _real=real: calls.append(1) or _real(self, *a))
    x = rng.standard_normal((3, 4, 5))
    w = rng.standard_normal((3, 4, 5))
    grads = []
    for lib in (ferro, torch):
        t = lib.tensor(x, requires_grad=True)
        kw = {} if dim is None else {"dim": dim, "keepdim": keepdim}
        r = getattr(t, name)(**kw)
        (g,) = lib.autograd.grad((r * r).sum(), t, create_graph=True)
        assert not calls  # (the second backward runs the reshape / expand nodes' own formulas: counted no more)
        monkeypatch.undo()
        (gg,) = lib.autograd.grad((g * lib.tensor(w)).sum(), t)
        grads.append((g.detach().numpy(), gg.numpy()))
    assert_close(grads[0][0], grads[1][0])
    assert_close(grads[0][1], grads[1][1])


@pytest.mark.parametrize("name", ["cat", "stack"])
@pytest.mark.parametrize("case", ["leaves", "one_without_grad", "nodes", "view_of_changed_base", "three"])
def test_joined_pair_records_its_edges_as_torch(monkeypatch: pytest.MonkeyPatch, name: str, case: str) -> None:
    """A recorded cat / stack of two inputs sets its node's edges without a loop (record_n's two-input step; a
    view's node refreshed after its base changed in place): torch's gradients; three inputs take the loop."""
    from ferro.dispatch import _dispatch
    pairs = []
    real = _dispatch._edge  # called for the second input of a pair only (the first is inlined), never by the loop
    monkeypatch.setattr(_dispatch, "_edge", lambda t: pairs.append(1) or real(t))
    xs = [rng.standard_normal((3, 4)) for _ in range(3)]
    grads = []
    for lib in (ferro, torch):
        ls = [lib.tensor(x, requires_grad=case != "one_without_grad" or i == 0) for i, x in enumerate(xs)]
        ins = ls[:3] if case == "three" else ls[:2]
        if case == "nodes":
            ins = [t * 2.0 for t in ins]
        if case == "view_of_changed_base":
            base = ls[1] * 1.0
            ins = [ins[0], base[:, :]]
            base.mul_(3.0)
        before = len(pairs)
        out = getattr(lib, name)(ins, 1)
        if lib is ferro:
            assert len(pairs) - before == {"three": 0, "one_without_grad": 0}.get(case, 1)
        (out * out).sum().backward()
        grads.append([None if t.grad is None else t.grad.numpy().copy() for t in ls])
    for o, t in zip(*grads):
        assert (o is None) == (t is None)
        if t is not None:
            assert_close(o, t)
