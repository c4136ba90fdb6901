"""The per-op fast paths (creation, reductions, cat / stack, views, Python numbers beside tensors, relu, linear)
give what the checked paths give: PyTorch's values, dtypes and errors, and gradients where they record."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import ferro
from ferro.testing import assert_close

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
