"""Edge cases where ferro must do what PyTorch does, on cpu and opencl: refuse what PyTorch refuses
(no silently wrong result), propagate NaN where PyTorch does, return views where PyTorch does, order
advanced-index results as PyTorch does, and check the gradients handed to backward.

Every expectation is PyTorch's behaviour, computed here by torch on the same input.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import ferro
import ferro.nn.functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional
NAN = float("nan")


def _raises(fn: Callable[[], Any]) -> BaseException | None:
    """The exception ``fn`` raises, also where a device reports it at the next synchronization."""
    try:
        out = fn()
        for t in out if isinstance(out, tuple) else (out,):
            if isinstance(t, ferro.Tensor):
                t.tolist()
    except Exception as e:  # the test compares which calls raise
        return e
    return None


def _list(v: Any) -> Any:
    if isinstance(v, (ferro.Tensor, torch.Tensor)):
        return v.tolist()
    if isinstance(v, (tuple, list)):
        return [_list(a) for a in v]
    return v


def _same(a: Any, b: Any, rel: float = 1e-6) -> bool:
    """Equal structure and values; NaN equals NaN."""
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y, rel) for x, y in zip(a, b))
    if isinstance(a, float) or isinstance(b, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return a == b or abs(a - b) <= rel * max(abs(a), abs(b))
    return a == b


# -- shapes that a loss must refuse --------------------------------------------------------------------

LOSS_CASES = [
    ("cross_entropy batch", "cross_entropy", lambda m: (m.zeros(8, 3), m.tensor([0, 1, 2, 0]))),
    ("cross_entropy spatial", "cross_entropy", lambda m: (m.zeros(2, 3, 5), m.zeros(2, 4, dtype=m.int64))),
    ("cross_entropy probabilities", "cross_entropy", lambda m: (m.zeros(8, 3), m.zeros(4, 3))),
    ("cross_entropy 2-d target", "cross_entropy", lambda m: (m.zeros(8, 3), m.zeros(8, 1, dtype=m.int64))),
    ("nll_loss batch", "nll_loss", lambda m: (m.zeros(8, 3), m.tensor([0, 1, 2, 0]))),
    ("nll_loss unbatched", "nll_loss", lambda m: (m.zeros(3), m.tensor([0, 1]))),
    ("binary_cross_entropy", "binary_cross_entropy", lambda m: (m.full((8, 3), 0.5), m.zeros(1, 3))),
    ("binary_cross_entropy_with_logits", "binary_cross_entropy_with_logits",
     lambda m: (m.zeros(8, 3), m.zeros(1, 3))),
]


def _on(dev: str, tensors: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(t.to(dev) for t in tensors)


@pytest.mark.parametrize("label,op,make", LOSS_CASES, ids=[c[0] for c in LOSS_CASES])
def test_a_loss_refuses_a_target_of_the_wrong_shape(dev: str, label: str, op: str, make: Any) -> None:
    with pytest.raises((ValueError, RuntimeError)):
        getattr(TF, op)(*make(torch))
    x, target = _on(dev, make(ferro))
    with pytest.raises(ferro.errors.ShapeError) as info:
        getattr(F, op)(x, target).tolist()
    msg = str(info.value)
    assert msg.startswith(op) and str(list(x.shape)) in msg and str(list(target.shape)) in msg, msg


@pytest.mark.parametrize("requires_grad", [False, True])
def test_cross_entropy_refuses_a_weight_of_the_wrong_size_also_in_the_fused_kernels(dev: str,
                                                                                   requires_grad: bool) -> None:
    x = ferro.zeros(4, 3, device=dev, requires_grad=requires_grad)
    with pytest.raises(ferro.errors.ShapeError, match="cross_entropy: weight"):
        F.cross_entropy(x, ferro.tensor([0, 1, 2, 0], device=dev), weight=ferro.ones(4, device=dev)).tolist()
    with pytest.raises(RuntimeError):
        TF.cross_entropy(torch.zeros(4, 3), torch.tensor([0, 1, 2, 0]), weight=torch.ones(4))


@pytest.mark.parametrize("param", ["weight", "bias"])
@pytest.mark.parametrize("size", [2, 5])
def test_layer_norm_refuses_a_parameter_of_the_wrong_shape_also_in_the_fused_kernels(dev: str, param: str,
                                                                                    size: int) -> None:
    with pytest.raises(RuntimeError):
        TF.layer_norm(torch.ones(4, 3), [3], **{param: torch.ones(size)})
    with pytest.raises(ferro.errors.ShapeError):
        F.layer_norm(ferro.ones(4, 3, device=dev), [3], **{param: ferro.ones(size, device=dev)}).tolist()


# -- negative indices: which ops refuse them, which wrap them (PyTorch's choice per op) --------------------

X23 = np.arange(6.0).reshape(2, 3)
NEG_OPS: list[tuple[str, Callable[[Any, Any, Any], Any]]] = [
    ("gather", lambda m, x, i: m.gather(x, 1, i(m, [[-1], [0]]))),
    ("scatter", lambda m, x, i: x.scatter(1, i(m, [[-1], [0]]), 1.0)),
    ("scatter_add", lambda m, x, i: x.scatter_add(1, i(m, [[-1], [0]]), m.ones(2, 1, device=x.device))),
    ("scatter_reduce", lambda m, x, i: x.scatter_reduce(1, i(m, [[-1], [0]]), m.ones(2, 1, device=x.device),
                                                        "amax")),
    ("index_select", lambda m, x, i: m.index_select(x, 1, i(m, [-1]))),
    ("index_add", lambda m, x, i: x.index_add(1, i(m, [-1]), m.ones(2, 1, device=x.device))),
    ("index_copy", lambda m, x, i: x.index_copy(1, i(m, [-1]), m.ones(2, 1, device=x.device))),
    ("embedding", lambda m, x, i: (F if m is ferro else TF).embedding(i(m, [-1, 0]), x)),
    ("take_along_dim", lambda m, x, i: m.take_along_dim(x, i(m, [[-1], [0]]), 1)),
    ("index_fill", lambda m, x, i: x.index_fill(1, i(m, [-1]), 7.0)),
    ("take", lambda m, x, i: m.take(x, i(m, [-1, -4]))),
    ("getitem", lambda m, x, i: x[i(m, [-1])]),
]


@pytest.mark.parametrize("name,fn", NEG_OPS, ids=[n for n, _ in NEG_OPS])
def test_negative_indices_are_refused_or_wrapped_as_in_pytorch(dev: str, name: str, fn: Any) -> None:
    def idx(m: Any, v: Any) -> Any:
        return torch.tensor(v) if m is torch else ferro.tensor(v, device=dev)

    want = _raises(lambda: fn(torch, torch.tensor(X23), idx))
    got = _raises(lambda: fn(ferro, ferro.tensor(X23, device=dev), idx))
    assert (want is None) == (got is None), f"{name}: torch raised {want!r}, ferro raised {got!r}"
    if got is not None:
        assert isinstance(got, IndexError), got
        if dev == "cpu":
            assert name in str(got) and "-1" in str(got), got
    else:
        assert _same(_list(fn(ferro, ferro.tensor(X23, device=dev), idx)), _list(fn(torch, torch.tensor(X23), idx)))


def test_a_negative_class_target_is_refused(dev: str) -> None:
    with pytest.raises(IndexError):
        F.cross_entropy(ferro.zeros(2, 3, device=dev), ferro.tensor([0, -2], device=dev)).tolist()


@pytest.mark.parametrize("values,num_classes", [([0, 3], 3), ([-1, 0], 3), ([-1, 0], -1), ([0, 2, 1], -1),
                                                ([[1, 0], [2, 2]], 4)])
def test_one_hot_refuses_classes_out_of_range(dev: str, values: list[Any], num_classes: int) -> None:
    want = _raises(lambda: TF.one_hot(torch.tensor(values), num_classes))
    got = _raises(lambda: F.one_hot(ferro.tensor(values, device=dev), num_classes))
    assert (want is None) == (got is None), (want, got)
    if got is None:
        assert F.one_hot(ferro.tensor(values, device=dev), num_classes).tolist() == \
            TF.one_hot(torch.tensor(values), num_classes).tolist()
    else:
        assert "one_hot" in str(got) and "class" in str(got)


def _fn(m: Any) -> Any:
    return F if m is ferro else TF


#: Calls PyTorch refuses and ferro used to answer with a plausible result; ``m`` is torch or ferro, ``d`` the
#: ferro device.
REFUSED: dict[str, Callable[[Any, Any], Any]] = {
    "index_add broadcast source": lambda m, d: m.zeros(3, 3, device=d).index_add(
        0, m.tensor([0, 2], device=d), m.ones(1, 3, device=d)),
    "index_add 1-d source": lambda m, d: m.zeros(3, 3, device=d).index_add(
        0, m.tensor([0, 2], device=d), m.ones(3, device=d)),
    "index_copy broadcast source": lambda m, d: m.zeros(3, 3, device=d).index_copy(
        0, m.tensor([0, 2], device=d), m.ones(1, 3, device=d)),
    "scatter src smaller than index": lambda m, d: m.zeros(2, 3, device=d).scatter(
        1, m.tensor([[0, 1], [1, 2]], device=d), m.ones(2, 1, device=d)),
    "scatter_add src smaller than index": lambda m, d: m.zeros(2, 3, device=d).scatter_add(
        1, m.tensor([[0, 1], [1, 2]], device=d), m.ones(1, 2, device=d)),
    "take_along_dim without dim, negative": lambda m, d: m.take_along_dim(
        m.arange(6.0, device=d).reshape(2, 3), m.tensor([[5, -1]], device=d)),
    "embedding padding_idx out of range": lambda m, d: _fn(m).embedding(
        m.tensor([2, 0], device=d), m.ones(3, 2, device=d), padding_idx=3),
    "cross_entropy label_smoothing above 1": lambda m, d: _fn(m).cross_entropy(
        m.zeros(2, 3, device=d), m.tensor([0, 1], device=d), label_smoothing=1.5),
    "repeat_interleave negative repeats": lambda m, d: m.repeat_interleave(
        m.tensor([1, 2], device=d), m.tensor([1, -1], device=d)),
}


@pytest.mark.parametrize("name", list(REFUSED))
def test_calls_pytorch_refuses_are_refused(dev: str, name: str) -> None:
    assert _raises(lambda: REFUSED[name](torch, "cpu")) is not None
    got = _raises(lambda: REFUSED[name](ferro, dev))
    assert isinstance(got, (ValueError, IndexError)), f"{name}: {got!r}"


#: Their valid neighbours still agree with PyTorch.
ACCEPTED: dict[str, Callable[[Any, Any], Any]] = {
    "index_add": lambda m, d: m.zeros(3, 3, device=d).index_add(0, m.tensor([0, 2], device=d),
                                                                m.ones(2, 3, device=d)),
    "index_copy 0-d source": lambda m, d: m.zeros(3, device=d).index_copy(0, m.tensor([1], device=d),
                                                                          m.tensor(2.0, device=d)),
    "scatter src larger than index": lambda m, d: m.zeros(2, 3, device=d).scatter(
        1, m.tensor([[0], [2]], device=d), m.arange(6.0, device=d).reshape(2, 3)),
    "embedding padding_idx -1": lambda m, d: _fn(m).embedding(m.tensor([2, 0], device=d),
                                                               m.arange(6.0, device=d).reshape(3, 2), padding_idx=-1),
    "repeat_interleave one count": lambda m, d: m.repeat_interleave(m.tensor([1, 2], device=d),
                                                                    m.tensor([2], device=d)),
}


@pytest.mark.parametrize("name", list(ACCEPTED))
def test_valid_neighbours_agree_with_pytorch(dev: str, name: str) -> None:
    assert _same(_list(ACCEPTED[name](ferro, dev)), _list(ACCEPTED[name](torch, "cpu")))


def test_embedding_padding_idx_minus_one_gets_no_gradient(dev: str) -> None:
    grads = []
    for m in (torch, ferro):
        w = m.ones(3, 2, device=dev if m is ferro else "cpu", requires_grad=True)
        _fn(m).embedding(m.tensor([2, 0, 2], device=dev if m is ferro else "cpu"), w, padding_idx=-1).sum().backward()
        grads.append(w.grad.tolist())
    assert grads[1] == grads[0]


# -- integer division by zero raises in every integer division op ------------------------------------------

@pytest.mark.parametrize("op", ["fmod", "remainder", "floor_divide"])
@pytest.mark.parametrize("divisor", [0, [3, 0, 1]], ids=["scalar", "tensor"])
def test_integer_division_by_zero_raises(dev: str, op: str, divisor: Any) -> None:
    x = ferro.tensor([5, -7, 9], device=dev)
    d = ferro.tensor(divisor, device=dev) if isinstance(divisor, list) else divisor
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        getattr(torch, op)(torch.tensor([5, -7, 9]), torch.tensor(divisor) if isinstance(divisor, list) else divisor)
    with pytest.raises(ZeroDivisionError):
        getattr(ferro, op)(x, d).tolist()
    assert x.tolist() == [5, -7, 9]


@pytest.mark.parametrize("op", ["fmod", "remainder", "floor_divide"])
def test_integer_division_by_zero_raises_on_a_generic_array_api_backend(op: str) -> None:
    """The rule lives in core's ArrayAPIBackend (ferro-cpu and ferro-cuda build on it): the test plugin's
    array-api-strict backend follows it too."""
    if "strict" not in ferro.backends.available():
        pytest.skip(f"the test plugin's 'strict' backend is not available: {ferro.backends.unavailable()}")
    with pytest.raises(ZeroDivisionError, match="integer division by zero"):
        getattr(ferro, op)(ferro.tensor([5, 6], device="strict"), ferro.tensor([1, 0], device="strict")).tolist()


def test_integer_fmod_is_exact_with_the_sign_of_the_dividend(dev: str) -> None:
    a = [7, -7, 7, -7, 0, 2 ** 40 + 3, -(2 ** 53) - 5]
    b = [3, 3, -3, -3, 5, 7, 6]
    got = ferro.fmod(ferro.tensor(a, device=dev), ferro.tensor(b, device=dev))
    assert got.dtype == ferro.int64 and got.tolist() == torch.fmod(torch.tensor(a), torch.tensor(b)).tolist()
    assert ferro.fmod(ferro.tensor(a, device=dev), 4).tolist() == torch.fmod(torch.tensor(a), 4).tolist()


# -- NaN propagation ---------------------------------------------------------------------------------------

NAN_DATA = [[1.0, NAN, 3.0, 0.5], [2.0, 1.0, -1.0, 4.0], [NAN, NAN, 1.0, 2.0]]
#: op -> (call, whether PyTorch's indices are part of the contract: ties between NaNs are not).
NAN_OPS: dict[str, tuple[Callable[[Any, Any], Any], bool]] = {
    "median": (lambda m, x: m.median(x), True),
    "median_dim": (lambda m, x: m.median(x, 1), True),
    "nanmedian": (lambda m, x: m.nanmedian(x), True),
    "nanmedian_dim": (lambda m, x: m.nanmedian(x, 1), True),
    "cummax": (lambda m, x: m.cummax(x, 1), True),
    "cummin": (lambda m, x: m.cummin(x, 1), True),
    "max": (lambda m, x: m.max(x), True),
    "max_dim": (lambda m, x: m.max(x, 1), True),
    "min_dim": (lambda m, x: m.min(x, 1), True),
    "amax": (lambda m, x: m.amax(x, 1), True),
    "amin": (lambda m, x: m.amin(x, 1), True),
    "argmax": (lambda m, x: m.argmax(x, 1), True),
    "argmin": (lambda m, x: m.argmin(x, 1), True),
    "sort": (lambda m, x: m.sort(x, 1), True),
    "sort_descending": (lambda m, x: m.sort(x, 1, descending=True), True),
    "argsort": (lambda m, x: m.argsort(x, 1), True),
    "topk": (lambda m, x: m.topk(x, 2, 1), False),
    "topk_smallest": (lambda m, x: m.topk(x, 2, 1, largest=False), True),
    "kthvalue": (lambda m, x: m.kthvalue(x, 2, 1), True),
    "mode": (lambda m, x: m.mode(x, 1), False),
    "maximum": (lambda m, x: m.maximum(x, x.flip(1)), True),
    "minimum": (lambda m, x: m.minimum(x, x.flip(1)), True),
    "clamp": (lambda m, x: m.clamp(x, 0.0, 2.0), True),
    "clamp_tensor_bounds": (lambda m, x: m.clamp(x, min=x.flip(1), max=x.flip(0)), True),
    "clamp_nan_bound": (lambda m, x: m.clamp(x, max=NAN), True),
    "logsumexp": (lambda m, x: m.logsumexp(x, 1), True),
    "cumsum": (lambda m, x: m.cumsum(x, 1), True),
    "max_pool1d": (lambda m, x: (F if m is ferro else TF).max_pool1d(x.unsqueeze(0), 2), True),
}


@pytest.mark.parametrize("name", list(NAN_OPS))
def test_nan_propagates_as_in_pytorch(dev: str, name: str) -> None:
    fn, exact_indices = NAN_OPS[name]
    x = ferro.tensor(NAN_DATA, device=dev)
    want, got = fn(torch, torch.tensor(NAN_DATA)), fn(ferro, x)
    if isinstance(want, tuple) and not exact_indices:  # values, and indices that point at them
        assert _same(_list(got[0]), _list(want[0])), (got, want)
        picked = x.gather(1, got[1].unsqueeze(1) if got[1].ndim == 1 else got[1])
        assert _same(_list(picked.reshape(got[0].shape)), _list(got[0]))
        return
    assert _same(_list(got), _list(want)), f"{name}: ferro {_list(got)} torch {_list(want)}"


def test_unique_keeps_each_nan_apart(dev: str) -> None:
    data = [NAN, 1.0, NAN, 1.0, -2.0]
    got = ferro.unique(ferro.tensor(data, device=dev), return_inverse=True, return_counts=True)
    want = torch.unique(torch.tensor(data), return_inverse=True, return_counts=True)
    assert _same(_list(got), _list(want)), (got, want)


def test_cummax_of_a_row_without_nan_keeps_the_latest_index_of_ties(dev: str) -> None:
    data = [[1.0, 1.0, 1.0, 2.0, 2.0], [3.0, 1.0, 3.0, 0.0, 3.0]]
    for op in ("cummax", "cummin"):
        got = getattr(ferro, op)(ferro.tensor(data, device=dev), 1)
        want = getattr(torch, op)(torch.tensor(data), 1)
        assert _list(got) == _list(want), op


def test_nanmedian_gradient_by_finite_differences() -> None:
    x = ferro.tensor(np.random.RandomState(3).rand(3, 5), dtype=ferro.float64, requires_grad=True)
    mask = ferro.tensor([[0, 1, 0, 0, 1], [0, 0, 0, 0, 0], [1, 1, 1, 0, 1]]) > 0
    assert ferro.autograd.gradcheck(lambda t: ferro.nanmedian(ferro.where(mask, NAN, t), 1).values, (x,))
    assert ferro.autograd.gradcheck(lambda t: ferro.nanmedian(t), (x,))


def test_median_gradient_flows_to_the_nan(dev: str) -> None:
    x = ferro.tensor(NAN_DATA, device=dev, requires_grad=True)
    x.median(1).values.nan_to_num().sum().backward()
    tx = torch.tensor(NAN_DATA, requires_grad=True)
    tx.median(1).values.nan_to_num().sum().backward()
    assert x.grad.tolist() == tx.grad.tolist()


# -- views where PyTorch returns views ---------------------------------------------------------------------

VIEW_OPS: dict[str, Callable[[Any], Any]] = {
    "diagonal": lambda x: x.diagonal(),
    "diagonal offset": lambda x: x.diagonal(1),
    "diagonal negative offset": lambda x: x.diagonal(-1),
    "diagonal 3-d": lambda x: x.reshape(2, 3, 4).diagonal(0, 1, 2),
    "diagonal 3-d outer dims": lambda x: x.reshape(2, 3, 4).diagonal(1, 2, 0),
    "diagonal of a transpose": lambda x: x.T.diagonal(2),
    "diagonal empty": lambda x: x.diagonal(9),
    "unbind": lambda x: x.unbind(0)[1],
    "split": lambda x: x.split(3, 1)[1],
    "chunk": lambda x: x.chunk(2, 0)[1],
    "tensor_split": lambda x: x.tensor_split(2, 1)[1],
    "narrow": lambda x: x.narrow(1, 1, 2),
    "select": lambda x: x.select(1, 2),
    "movedim": lambda x: x.movedim(0, 1),
    "permute": lambda x: x.permute(1, 0),
    "transpose": lambda x: x.transpose(0, 1),
    "squeeze": lambda x: x.unsqueeze(0).squeeze(0),
    "unsqueeze": lambda x: x.unsqueeze(1),
    "T": lambda x: x.T,
    "mT": lambda x: x.mT,
    "view": lambda x: x.view(4, 6),
    "reshape": lambda x: x.reshape(4, 6),
    "flatten": lambda x: x.flatten(),
    "unflatten": lambda x: x.unflatten(1, (2, 4)),
    "detach": lambda x: x.detach(),
    "basic getitem": lambda x: x[1:, ::2],
    "advanced getitem (a copy)": lambda x: x[[0, 2]],
    "contiguous": lambda x: x.contiguous(),
    "clone (a copy)": lambda x: x.clone(),
    "diag (a copy)": lambda x: x[:, :3].diag(),
}


def _arange38(m: Any, dev: str) -> Any:
    return torch.arange(24.0).reshape(3, 8) if m is torch else ferro.arange(24.0, device=dev).reshape(3, 8)


@pytest.mark.parametrize("name", list(VIEW_OPS))
def test_writes_through_a_result_reach_the_input_exactly_where_pytorch_returns_a_view(dev: str,
                                                                                     name: str) -> None:
    written = []
    for m in (torch, ferro):
        x = _arange38(m, dev)
        VIEW_OPS[name](x).add_(100)
        written.append(x.tolist())
    assert written[1] == written[0]


def test_real_and_imag_are_views() -> None:  # cpu: ferro-opencl has no complex dtypes
    for part in ("real", "imag"):
        written = []
        for m in (torch, ferro):
            x = (m.arange(6.0) * (1 + 1j)) if m is torch else ferro.arange(6.0) * (1 + 1j)
            getattr(x, part).add_(1)
            written.append([(v.real, v.imag) for v in x.tolist()])
        assert written[1] == written[0], part


def test_view_as_real_is_a_view_and_writes_through_it_are_differentiated() -> None:  # cpu: complex dtypes
    a = np.random.RandomState(0).randn(3, 2) + 1j * np.random.RandomState(1).randn(3, 2)
    results = []
    for m in (torch, ferro):
        x = m.tensor(a, requires_grad=True)
        y = x * (1 + 2j)
        m.view_as_real(y).mul_(3)  # changes y
        out = (m.view_as_real(y) ** 2).sum() + (y.abs() ** 2).sum() + (m.view_as_real(x)[..., 1] ** 3).sum()
        out.backward()
        results.append((out.item(), np.array(x.grad.tolist())))
    assert results[1][0] == pytest.approx(results[0][0], rel=1e-12)
    np.testing.assert_allclose(results[1][1], results[0][1], rtol=1e-12)
    z = ferro.tensor(a)[::2]  # strided: still a view
    ferro.view_as_real(z)[..., 1].add_(1)
    assert ferro.tensor(a)[::2].imag.tolist() != z.imag.tolist()


def test_autograd_through_in_place_writes_to_diagonal_views(dev: str) -> None:
    a = np.random.RandomState(0).randn(3, 4, 5)
    results = []
    for m in (torch, ferro):
        x = torch.tensor(a, requires_grad=True) if m is torch else ferro.tensor(a, device=dev, requires_grad=True)
        y = x * 1
        y.diagonal(1, 0, 2).mul_(3)
        e = y.diagonal(-1, 1, 2)
        y.add_(1)  # e is stale: its graph position is refreshed from y
        out = (y ** 2).sum() + (e * e).sum() + (x.diagonal(0, -1, 0) ** 3).sum()
        out.backward()
        results.append((out.item(), np.array(x.grad.tolist())))
    assert results[1][0] == pytest.approx(results[0][0], rel=1e-5)
    np.testing.assert_allclose(results[1][1], results[0][1], rtol=1e-5, atol=1e-5)


def test_diagonal_gradient_and_second_derivative(dev: str) -> None:
    a = np.random.RandomState(1).randn(3, 4)
    x = ferro.tensor(a, device=dev, requires_grad=True)
    tx = torch.tensor(a, requires_grad=True)
    (g,) = ferro.autograd.grad((x.diagonal(1) ** 3).sum(), x, create_graph=True)
    (tg,) = torch.autograd.grad((tx.diagonal(1) ** 3).sum(), tx, create_graph=True)
    np.testing.assert_allclose(g.tolist(), tg.tolist(), rtol=1e-5)
    (gg,) = ferro.autograd.grad(g.sum(), x)
    (tgg,) = torch.autograd.grad(tg.sum(), tx)
    np.testing.assert_allclose(gg.tolist(), tgg.tolist(), rtol=1e-5)


# -- advanced indexing with an Ellipsis between the indices --------------------------------------------------

ATOMS = {"I": [0, 1], "M": [[0, 1], [1, 0]], "E": Ellipsis, "S": slice(None), "0": 0, "N": None}
PROGRAMS = [p for n in (2, 3, 4) for p in itertools.product("IMES0N", repeat=n)
            if p.count("E") == 1 and sum(a in "IM" for a in p) >= 2]


def _key(m: Any, prog: tuple[str, ...], dev: str) -> tuple[Any, ...]:
    out = []
    for a in prog:
        v = ATOMS[a]
        out.append((torch.tensor(v) if m is torch else ferro.tensor(v, device=dev)) if a in "IM" else v)
    return tuple(out)


@pytest.mark.parametrize("shape", [(2, 3), (2, 3, 4)])
def test_ellipsis_between_advanced_indices_orders_the_result_as_pytorch(dev: str, shape: tuple[int, ...]) -> None:
    n = math.prod(shape)
    checked = 0
    for prog in PROGRAMS:
        tx = torch.arange(float(n)).reshape(shape)
        try:
            want = tx[_key(torch, prog, dev)]
        except (IndexError, RuntimeError):
            continue
        x = ferro.arange(float(n), device=dev).reshape(shape)
        got = x[_key(ferro, prog, dev)]
        assert tuple(got.shape) == tuple(want.shape) and got.tolist() == want.tolist(), "".join(prog)
        # and a write through the same key lands where PyTorch's does
        tx[_key(torch, prog, dev)] = -torch.arange(float(want.numel())).reshape(want.shape)
        x[_key(ferro, prog, dev)] = -ferro.arange(float(want.numel()), device=dev).reshape(tuple(want.shape))
        assert x.tolist() == tx.tolist(), "".join(prog)
        checked += 1
    assert checked > 20


# -- the gradient handed to backward, and hook results ----------------------------------------------------------

def test_backward_refuses_a_gradient_on_another_device(ocl: Any) -> None:
    for here, there in (("cpu", "opencl"), ("opencl", "cpu")):
        a = ferro.ones(3, device=here, requires_grad=True)
        with pytest.raises(RuntimeError, match=rf"expected device {here}.* but got {there}"):
            (a * 2).backward(ferro.ones(3, device=there))
        assert a.grad is None
        with pytest.raises(RuntimeError, match="expected device"):
            ferro.autograd.grad(a * 2, a, ferro.ones(3, device=there))


def test_backward_checks_the_given_gradient_as_pytorch(dev: str) -> None:
    a = ferro.ones(3, device=dev, requires_grad=True)
    with pytest.raises(RuntimeError, match="Mismatch in shape"):
        (a * 2).backward(ferro.ones(2, device=dev))
    if dev == "cpu":  # ferro-opencl has no complex dtypes
        with pytest.raises(RuntimeError, match="complex"):
            (a * 2).backward(ferro.ones(3, dtype=ferro.complex64))
    with pytest.raises(TypeError, match="gradients can be either Tensors or None"):
        (a * 2).backward([1.0, 1.0, 1.0])
    assert a.grad is None
    (a * 2).backward(ferro.ones(3, device=dev, dtype=ferro.int64))  # cast to the output's dtype, as torch does
    assert a.grad.dtype == ferro.float32 and a.grad.tolist() == [2.0, 2.0, 2.0]


@pytest.mark.parametrize("change", ["shape", "dtype"])
@pytest.mark.parametrize("where", ["node", "leaf"])
def test_a_hook_that_changes_the_gradient_s_shape_or_dtype_is_refused(dev: str, change: str, where: str) -> None:
    bad = {"shape": lambda g: g[:2], "dtype": lambda g: g.to(ferro.float64 if dev == "cpu" else ferro.int32)}[change]
    a = ferro.ones(3, device=dev, requires_grad=True)
    b = a * 2
    (b if where == "node" else a).register_hook(bad)
    with pytest.raises(RuntimeError, match=rf"hook .* has changed the {'size' if change == 'shape' else 'type'}"):
        (b * 1).sum().backward()


@pytest.mark.parametrize("where", ["node", "leaf"])
def test_a_hook_that_moves_the_gradient_to_another_device_is_refused(ocl: Any, where: str) -> None:
    a = ferro.ones(3, device="opencl", requires_grad=True)
    b = a * 2
    (b if where == "node" else a).register_hook(lambda g: g.to("cpu"))
    with pytest.raises(RuntimeError, match=r"hook .* has changed the type of value"):
        (b * 1).sum().backward()


def test_a_custom_backward_returning_a_gradient_on_another_device_is_refused(ocl: Any) -> None:
    class Moves(ferro.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any) -> Any:
            return x * 2

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            return g.to("cpu")

    a = ferro.ones(3, device="opencl", requires_grad=True)
    with pytest.raises(RuntimeError, match=r"Function Moves returned an invalid gradient - expected device opencl"):
        Moves.apply(a).sum().backward()
    assert a.grad is None
