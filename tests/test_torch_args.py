"""Arguments PyTorch users type (issue 14): pooling options in the functional form, ``alpha``,
``rounding_mode``, ``decimals``, ``flip`` with varargs, ``linalg.norm``, ``cdist``, ``as_strided``.

Values and gradients are compared with PyTorch's on every backend.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ferro
import ferro.nn.functional as F


def _inputs(shapes: list[tuple[int, ...]], dev: str, seed: int = 0, dtype: Any = np.float32,
            grad: bool = True) -> tuple[list[ferro.Tensor], list[torch.Tensor]]:
    rng = np.random.default_rng(seed)
    arrays = [(rng.standard_normal(s) * 3).astype(dtype) for s in shapes]
    g = grad and np.dtype(dtype).kind == "f"
    return ([ferro.tensor(a, device=dev, requires_grad=g) for a in arrays],
            [torch.tensor(a, requires_grad=g) for a in arrays])


def check(f: Callable[..., Any], tf: Callable[..., Any], shapes: list[tuple[int, ...]], dev: str, *,
          dtype: Any = np.float32, rtol: float = 1e-5, atol: float = 1e-5, seed: int = 0) -> None:
    """Outputs (every one of a tuple) and the gradients of their weighted sum agree with torch's."""
    xs, ts = _inputs(shapes, dev, seed, dtype)
    got, want = f(*xs), tf(*ts)
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    for g, w in zip(got, want, strict=True):
        assert tuple(g.shape) == tuple(w.shape)
        assert g.dtype.name == str(w.dtype).removeprefix("torch."), (g.dtype, w.dtype)
        np.testing.assert_allclose(g.detach().cpu().numpy(), w.detach().numpy(), rtol=rtol, atol=atol)
    if not ts[0].requires_grad or not got[0].dtype.is_floating_point:
        return
    weights = np.random.default_rng(1).standard_normal(tuple(want[0].shape)).astype(np.float32)
    (got[0] * ferro.tensor(weights, device=dev)).sum().backward()
    (want[0] * torch.tensor(weights)).sum().backward()
    for x, t in zip(xs, ts):
        gt = t.grad if t.grad is not None else torch.zeros_like(t)
        gx = x.grad.cpu().numpy() if x.grad is not None else np.zeros(tuple(x.shape), np.float32)
        np.testing.assert_allclose(gx, gt.numpy(), rtol=rtol, atol=atol)


# -- pooling options in the functional form -------------------------------------------------------------

POOLS = {
    "max_pool1d ceil indices": ("max_pool1d", (2, 3, 9), dict(kernel_size=2, ceil_mode=True, return_indices=True)),
    "max_pool1d stride pad dil": ("max_pool1d", (2, 3, 11),
                                  dict(kernel_size=3, stride=2, padding=1, dilation=2, ceil_mode=True)),
    "max_pool2d ceil": ("max_pool2d", (2, 3, 7, 6), dict(kernel_size=2, ceil_mode=True)),
    "max_pool2d indices": ("max_pool2d", (2, 3, 7, 6),
                           dict(kernel_size=(3, 2), stride=2, padding=1, return_indices=True)),
    "max_pool2d ceil indices unbatched": ("max_pool2d", (3, 7, 5),
                                          dict(kernel_size=3, stride=2, ceil_mode=True, return_indices=True)),
    "max_pool3d ceil indices": ("max_pool3d", (1, 2, 5, 5, 4),
                                dict(kernel_size=2, ceil_mode=True, return_indices=True)),
    "avg_pool1d ceil no pad count": ("avg_pool1d", (2, 3, 10),
                                     dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False)),
    "avg_pool1d ceil": ("avg_pool1d", (2, 3, 10), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
    "avg_pool2d ceil": ("avg_pool2d", (2, 3, 7, 6), dict(kernel_size=2, ceil_mode=True)),
    "avg_pool2d no pad count": ("avg_pool2d", (2, 3, 7, 6),
                                dict(kernel_size=3, stride=2, padding=1, count_include_pad=False)),
    "avg_pool2d divisor": ("avg_pool2d", (2, 3, 7, 6), dict(kernel_size=3, padding=1, divisor_override=4)),
    "avg_pool2d all": ("avg_pool2d", (3, 7, 6), dict(kernel_size=(3, 2), stride=(2, 1), padding=1, ceil_mode=True,
                                                     count_include_pad=False, divisor_override=5)),
    "avg_pool3d ceil no pad count": ("avg_pool3d", (1, 2, 5, 5, 4),
                                     dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False)),
}


@pytest.mark.parametrize("case", sorted(POOLS))
def test_pool_options(case: str, dev: str) -> None:
    name, shape, kw = POOLS[case]
    check(lambda x: getattr(F, name)(x, **kw), lambda x: getattr(TF, name)(x, **kw), [shape], dev)


def test_pool_options_positionally(dev: str) -> None:
    # torch's positional order: max_pool(input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)
    check(lambda x: F.max_pool2d(x, 3, 2, 1, 1, True, True), lambda x: TF.max_pool2d(x, 3, 2, 1, 1, True, True),
          [(1, 2, 8, 7)], dev)
    check(lambda x: F.avg_pool2d(x, 3, 2, 1, True, False, None), lambda x: TF.avg_pool2d(x, 3, 2, 1, True, False, None),
          [(1, 2, 8, 7)], dev)


def test_pool_modules_and_functions_agree(dev: str) -> None:
    x = ferro.randn(2, 3, 9, 8, device=dev)
    for module, fn in ((ferro.nn.MaxPool2d(3, 2, 1, ceil_mode=True, return_indices=True),
                        lambda t: F.max_pool2d(t, 3, 2, 1, ceil_mode=True, return_indices=True)),
                       (ferro.nn.AvgPool2d(3, 2, 1, ceil_mode=True, count_include_pad=False, divisor_override=2),
                        lambda t: F.avg_pool2d(t, 3, 2, 1, True, False, 2))):
        a, b = module(x), fn(x)
        for u, v in zip(a if isinstance(a, tuple) else (a,), b if isinstance(b, tuple) else (b,)):
            assert u.tolist() == v.tolist()


def test_pool_option_errors() -> None:
    x = ferro.randn(1, 1, 4, 4)
    with pytest.raises(ValueError, match="avg_pool2d: divisor_override must be positive"):
        F.avg_pool2d(x, 2, divisor_override=0)
    with pytest.raises(ValueError, match="max_pool2d: pad should be at most half"):
        F.max_pool2d(x, 2, padding=2, ceil_mode=True)
    with pytest.raises(ValueError, match="max_pool1d: expected 2D or 3D input"):
        F.max_pool1d(x, 2, return_indices=True)


# -- add / sub alpha, div rounding_mode, round decimals -----------------------------------------------------

ARITH = {
    "add alpha": (lambda f, a, b: f.add(a, b, alpha=2.5), [(3, 4), (4,)]),
    "add alpha scalar": (lambda f, a, b: f.add(a, 3.0, alpha=-2), [(3, 4), (1,)]),
    "sub alpha": (lambda f, a, b: f.sub(a, b, alpha=0.5), [(3, 4), (3, 1)]),
    "subtract alpha": (lambda f, a, b: f.subtract(a, b, alpha=3), [(3, 4), (3, 4)]),
    "method add alpha": (lambda f, a, b: a.add(b, alpha=-1.5), [(3, 4), (4,)]),
    "method sub alpha": (lambda f, a, b: a.sub(b, alpha=2), [(3, 4), (4,)]),
    "div trunc": (lambda f, a, b: f.div(a, b, rounding_mode="trunc"), [(3, 4), (4,)]),
    "div floor": (lambda f, a, b: f.div(a, b, rounding_mode="floor"), [(3, 4), (4,)]),
    "div none": (lambda f, a, b: f.div(a, b, rounding_mode=None), [(3, 4), (4,)]),
    "divide floor scalar": (lambda f, a, b: f.divide(a, 0.7, rounding_mode="floor"), [(3, 4), (1,)]),
    "method div trunc": (lambda f, a, b: a.div(b, rounding_mode="trunc"), [(3, 4), (3, 4)]),
    "multiply": (lambda f, a, b: f.multiply(a, b), [(3, 4), (4,)]),
    "round decimals 2": (lambda f, a, b: f.round(a * 10, decimals=2), [(3, 4), (1,)]),
    "round decimals -1": (lambda f, a, b: f.round(a * 100, decimals=-1), [(3, 4), (1,)]),
    "method round decimals": (lambda f, a, b: a.round(decimals=1), [(3, 4), (1,)]),
}


@pytest.mark.parametrize("case", sorted(ARITH))
def test_arithmetic_keywords(case: str, dev: str) -> None:
    f, shapes = ARITH[case]
    check(lambda *xs: f(ferro, *xs), lambda *xs: f(torch, *xs), shapes, dev)


@pytest.mark.parametrize("case", ["add", "sub", "div trunc", "div floor", "divide trunc scalar", "add bool"])
def test_arithmetic_keywords_on_integers(case: str, dev: str) -> None:
    fns = {"add": lambda f, a, b: f.add(a, b, alpha=3), "sub": lambda f, a, b: f.sub(a, b, alpha=-2),
           "div trunc": lambda f, a, b: f.div(a, b, rounding_mode="trunc"),
           "div floor": lambda f, a, b: f.div(a, b, rounding_mode="floor"),
           "divide trunc scalar": lambda f, a, b: f.divide(a, -3, rounding_mode="trunc"),
           "add bool": lambda f, a, b: f.add(a > 0, b > 0, alpha=False)}
    rng = np.random.default_rng(3)
    a, b = rng.integers(-20, 20, (4, 5)), rng.integers(1, 7, (4, 5)) * rng.choice([-1, 1], (4, 5))
    got = fns[case](ferro, ferro.tensor(a, device=dev), ferro.tensor(b, device=dev))
    want = fns[case](torch, torch.tensor(a), torch.tensor(b))
    assert got.dtype.name == str(want.dtype).removeprefix("torch.") and got.tolist() == want.tolist()


def test_inplace_keywords(dev: str) -> None:
    a, b = np.arange(1.0, 7.0).reshape(2, 3), np.array([2.0, -3.0, 4.0])
    for method, kw in (("add_", {"alpha": 2}), ("sub_", {"alpha": 0.5}), ("div_", {"rounding_mode": "floor"}),
                       ("divide_", {"rounding_mode": "trunc"}), ("subtract_", {"alpha": 3}), ("multiply_", {})):
        x, t = ferro.tensor(a, device=dev), torch.tensor(a)
        out = getattr(x, method)(ferro.tensor(b, device=dev), **kw)
        getattr(t, method)(torch.tensor(b), **kw)
        assert out is x and x.tolist() == t.tolist(), method


def test_inplace_alpha_keeps_the_graph(dev: str) -> None:
    w = ferro.tensor([1.0, 2.0], device=dev, requires_grad=True)
    tw = torch.tensor([1.0, 2.0], requires_grad=True)
    for f, v in ((ferro, w), (torch, tw)):
        y = v * 1
        y.add_(v * v, alpha=3)
        y.sum().backward()
    assert w.grad.tolist() == tw.grad.tolist()


def test_keyword_errors() -> None:
    i = ferro.tensor([1, 2])
    with pytest.raises(TypeError, match=r"add.*alpha must not be a floating point number"):
        ferro.add(i, i, alpha=0.5)
    with pytest.raises(ValueError, match=r"div\(\): expected rounding_mode to be one of None, 'trunc', or 'floor'"):
        ferro.div(ferro.ones(2), 2, rounding_mode="bad")
    with pytest.raises(TypeError, match=r"round\(\): decimals=2 needs a floating tensor"):
        ferro.round(i, decimals=2)
    with pytest.raises(TypeError, match="alpha"):
        ferro.sub(ferro.ones(2), 1, alpha="2")


# -- flip ----------------------------------------------------------------------------------------------------

def test_flip_dims_as_varargs_tuple_and_keyword(dev: str) -> None:
    check(lambda x: x.flip(0, 2), lambda x: x.flip(0, 2), [(2, 3, 4)], dev)
    check(lambda x: ferro.flip(x, (0, -1)), lambda x: torch.flip(x, (0, -1)), [(2, 3, 4)], dev)
    check(lambda x: ferro.flip(x, dims=[1]), lambda x: torch.flip(x, dims=[1]), [(2, 3, 4)], dev)
    check(lambda x: x.flip(-2), lambda x: x.flip(-2), [(2, 3, 4)], dev)
    with pytest.raises(ValueError, match=r"flip.*more than once"):
        ferro.ones(2, 3).flip(0, 0)
    with pytest.raises(IndexError, match=r"flip.*got 3"):
        ferro.ones(2, 3).flip(0, 3)


# -- linalg.norm, norm(p=), cdist ----------------------------------------------------------------------------

LINALG_NORMS = [
    ((3, 4, 5), {}), ((3, 4, 5), {"dim": 1}), ((3, 4, 5), {"ord": 1, "dim": -1, "keepdim": True}),
    ((3, 4, 5), {"ord": float("inf"), "dim": 0}), ((3, 4, 5), {"ord": -float("inf"), "dim": 2}),
    ((3, 4, 5), {"ord": 0.5, "dim": 2}), ((3, 4, 5), {"ord": 3, "dim": (1,)}),
    ((3, 4, 5), {"dim": (1, 2)}), ((3, 4, 5), {"ord": "fro", "dim": (0, 2), "keepdim": True}),
    ((3, 4, 5), {"ord": "nuc", "dim": (1, 2)}), ((3, 4, 5), {"ord": "nuc", "dim": (2, 0), "keepdim": True}),
    ((3, 4, 5), {"ord": 2, "dim": (1, 2)}), ((3, 4, 5), {"ord": -2, "dim": (-1, -2)}),
    ((3, 4, 5), {"ord": 1, "dim": (1, 2)}), ((3, 4, 5), {"ord": -1, "dim": (1, 2)}),
    ((3, 4, 5), {"ord": float("inf"), "dim": (2, 1)}), ((3, 4, 5), {"ord": -float("inf"), "dim": (1, 2)}),
    ((6,), {"ord": 1}), ((6,), {"ord": float("inf")}), ((4, 5), {"ord": "fro"}), ((4, 5), {"ord": "nuc"}),
    ((4, 5), {"ord": 2}), ((4, 5), {"ord": -1}), ((4, 5), {}), ((4, 5), {"keepdim": True}),
]


def _needs_svd(shape: tuple[int, ...], kw: dict[str, Any]) -> bool:
    """Whether the norm is a matrix norm by singular values (OpenCL has no SVD kernel: the opt-in CPU fallback)."""
    if "p" in kw:  # ferro.norm / Tensor.norm: a number p is a vector norm over any dims
        return kw["p"] == "nuc"
    dim = kw.get("dim", (0, 1) if len(shape) == 2 and "ord" in kw else None)
    return isinstance(dim, tuple) and len(dim) == 2 and kw.get("ord") in ("nuc", 2, -2)


def _svd_on_the_cpu(shape: tuple[int, ...], kw: dict[str, Any], dev: str, monkeypatch: pytest.MonkeyPatch,
                    run: Callable[[], Any]) -> None:
    """Without a device SVD kernel: a clear UnsupportedOperationError, then the result by FERRO_FALLBACK=cpu."""
    if dev == "cpu" or not _needs_svd(shape, kw):
        return
    with pytest.raises(ferro.errors.UnsupportedOperationError, match="linalg_svd"):
        run()
    monkeypatch.setenv("FERRO_FALLBACK", "cpu")


@pytest.mark.filterwarnings("ignore:op 'linalg_svd' has no kernel")
@pytest.mark.parametrize(("shape", "kw"), LINALG_NORMS, ids=[f"{s}-{k}" for s, k in LINALG_NORMS])
def test_linalg_norm(shape: tuple[int, ...], kw: dict[str, Any], dev: str, monkeypatch: pytest.MonkeyPatch) -> None:
    _svd_on_the_cpu(shape, kw, dev, monkeypatch, lambda: ferro.linalg.norm(ferro.ones(*shape, device=dev), **kw))
    check(lambda x: ferro.linalg.norm(x, **kw), lambda x: torch.linalg.norm(x, **kw), [shape], dev,
          rtol=2e-4, atol=2e-5)


@pytest.mark.parametrize("kw", [{}, {"p": 1}, {"p": None}, {"p": "fro"}, {"p": "nuc"}, {"p": 3, "dim": 1},
                                {"p": "fro", "dim": (0, 1)}, {"p": float("inf"), "dim": 0, "keepdim": True},
                                {"p": 2, "dim": (0, 1)}, {"p": 0.5}])
@pytest.mark.filterwarnings("ignore:op 'linalg_svd' has no kernel")
def test_norm_p(kw: dict[str, Any], dev: str, monkeypatch: pytest.MonkeyPatch) -> None:
    _svd_on_the_cpu((4, 5), kw, dev, monkeypatch, lambda: ferro.norm(ferro.ones(4, 5, device=dev), **kw))
    check(lambda x: ferro.norm(x, **kw), lambda x: torch.norm(x, **kw), [(4, 5)], dev, rtol=2e-4, atol=2e-5)
    check(lambda x: x.norm(**kw), lambda x: x.norm(**kw), [(4, 5)], dev, rtol=2e-4, atol=2e-5)


def test_linalg_norm_errors() -> None:
    x = ferro.randn(3, 4, 5)
    with pytest.raises(ValueError, match=r"linalg.norm: with ord and no dim, the input must be 1-D or 2-D"):
        ferro.linalg.norm(x, ord=2)
    with pytest.raises(ValueError, match=r"linalg.norm: ord 'nuc' is a matrix norm"):
        ferro.linalg.norm(x, ord="nuc", dim=1)
    with pytest.raises(ValueError, match=r"linalg.norm: ord must be"):
        ferro.linalg.norm(x, ord="max")
    with pytest.raises(ValueError, match=r"linalg.norm: the matrix norm takes"):
        ferro.linalg.norm(x, ord=3, dim=(0, 1))
    with pytest.raises(IndexError, match=r"linalg.norm: dimension out of range"):
        ferro.linalg.norm(x, dim=(0, 5))


@pytest.mark.parametrize("p", [2.0, 1.0, 0.0, 3.0, 0.5, float("inf")])
def test_cdist(p: float, dev: str) -> None:
    check(lambda a, b: ferro.cdist(a, b, p), lambda a, b: torch.cdist(a, b, p), [(5, 3), (4, 3)], dev,
          rtol=2e-4, atol=2e-5)
    check(lambda a, b: ferro.cdist(a, b, p=p, compute_mode="donot_use_mm_for_euclid_dist"),
          lambda a, b: torch.cdist(a, b, p=p, compute_mode="donot_use_mm_for_euclid_dist"),
          [(2, 5, 3), (1, 4, 3)], dev, rtol=2e-4, atol=2e-5)


def test_cdist_zero_distance_has_zero_gradient(dev: str) -> None:
    a = ferro.tensor([[0.0, 1.0], [2.0, 3.0]], device=dev, requires_grad=True)
    ferro.cdist(a, a).sum().backward()
    ta = torch.tensor([[0.0, 1.0], [2.0, 3.0]], requires_grad=True)
    torch.cdist(ta, ta).sum().backward()
    np.testing.assert_allclose(a.grad.cpu().numpy(), ta.grad.numpy(), atol=1e-6)


def test_cdist_errors() -> None:
    with pytest.raises(ValueError, match=r"cdist: x1 \[3, 2\] and x2 \[4, 5\] must have the same number of features"):
        ferro.cdist(ferro.ones(3, 2), ferro.ones(4, 5))
    with pytest.raises(ValueError, match="cdist: p must be a number >= 0"):
        ferro.cdist(ferro.ones(3, 2), ferro.ones(4, 2), -1)
    with pytest.raises(ValueError, match="cdist: x1 must have at least 2 dims"):
        ferro.cdist(ferro.ones(3), ferro.ones(4, 3))


# -- as_strided ----------------------------------------------------------------------------------------------

STRIDED = {
    "windows": ((12,), (5, 4), (2, 1), 0),
    "overlap offset": ((12,), (4, 3), (2, 1), 1),
    "transpose": ((3, 4), (4, 3), (1, 4), 0),
    "broadcast stride 0": ((6,), (3, 6), (0, 1), 0),
    "2-d windows": ((5, 6), (3, 4, 2, 2), (6, 1, 6, 1), 0),
    "scalar": ((6,), (), (), 4),
    "empty": ((6,), (0, 3), (1, 1), 2),
}


@pytest.mark.parametrize("case", sorted(STRIDED))
def test_as_strided(case: str, dev: str) -> None:
    shape, size, stride, offset = STRIDED[case]
    check(lambda x: x.as_strided(size, stride, offset), lambda x: x.as_strided(size, stride, offset), [shape], dev)
    check(lambda x: ferro.as_strided(x * 2, size, stride, offset),
          lambda x: torch.as_strided(x * 2, size, stride, offset), [shape], dev)


def test_as_strided_of_a_view_uses_its_storage(dev: str) -> None:
    b, tb = ferro.arange(24.0, device=dev).reshape(4, 6), torch.arange(24.0).reshape(4, 6)
    v, tv = b[1:, 2:], tb[1:, 2:]
    assert v.stride() == tv.stride() and v.storage_offset() == tv.storage_offset() == 8
    assert b.t().stride() == tb.t().stride() and b.t().stride(0) == 1
    assert v.as_strided((2, 2), (6, 1)).tolist() == tv.as_strided((2, 2), (6, 1)).tolist()  # default: v's offset
    assert v.as_strided((2, 2), (6, 1), 0).tolist() == tv.as_strided((2, 2), (6, 1), 0).tolist()
    check(lambda x: x[:, 1:].as_strided((3, 2), (1, 4)), lambda x: x[:, 1:].as_strided((3, 2), (1, 4)), [(4, 6)],
          dev)


def test_as_strided_is_a_view(dev: str) -> None:
    x, t = ferro.zeros(3, 4, device=dev), torch.zeros(3, 4)
    x.as_strided((3,), (5,)).fill_(7.0)  # the diagonal
    t.as_strided((3,), (5,)).fill_(7.0)
    assert x.tolist() == t.tolist()
    w = ferro.ones(6, device=dev, requires_grad=True)
    tw = torch.ones(6, requires_grad=True)
    for src, mod in ((w, ferro), (tw, torch)):
        y = src * 1
        y.as_strided((2,), (3,), 1).mul_(mod.tensor([2.0, 5.0]) if mod is torch else ferro.tensor([2.0, 5.0],
                                                                                                    device=dev))
        (y * y).sum().backward()
    assert w.grad.tolist() == tw.grad.tolist()


def test_as_strided_errors() -> None:
    x = ferro.arange(6.0)
    with pytest.raises(IndexError, match=r"as_strided: size \[3, 3\] with stride \[2, 1\].*storage of 6 elements"):
        x.as_strided((3, 3), (2, 1))
    with pytest.raises(ValueError, match="as_strided: sizes and strides must not be negative"):
        x.as_strided((2,), (-1,))
    with pytest.raises(ValueError, match=r"as_strided: size .* and stride .* differ in length"):
        x.as_strided((2, 2), (1,))
    with pytest.raises(TypeError, match=r"as_strided.*'stride' must be a tuple of ints"):
        x.as_strided((2,), (1.5,))
    with pytest.raises(IndexError):
        x.as_strided((2,), (1,), 5)


def test_pool_options_at_their_defaults_keep_the_fused_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    from conftest import count_calls
    calls = count_calls(monkeypatch, ferro.tensor([0.0])._device, ("max_pool2d_forward",))
    x = ferro.randn(1, 2, 6, 6)
    F.max_pool2d(x, 2, ceil_mode=False, return_indices=False)
    F.max_pool2d(x, 2, 2, 0, 1, False, False)
    assert calls["max_pool2d_forward"] == 2
    F.max_pool2d(x, 3, ceil_mode=True)  # the options run the decomposition (the kernel has no ceil mode)
    F.max_pool2d(x, 2, return_indices=True)
    assert calls["max_pool2d_forward"] == 2


def test_new_methods(dev: str) -> None:
    x, t = ferro.ones(2, 3, dtype=ferro.float64, device=dev), torch.ones(2, 3, dtype=torch.float64)
    for name, args, kw in (("new_zeros", (2, 3), {}), ("new_ones", ((4,),), {"dtype": "float32"}),
                           ("new_full", ((2,), 7), {}), ("new_tensor", ([1, 2],), {}), ("new_empty", (3,), {})):
        got = getattr(x, name)(*args, **kw)
        want = getattr(t, name)(*args, **{k: getattr(torch, v) for k, v in kw.items()})
        assert tuple(got.shape) == tuple(want.shape) and got.dtype.name == str(want.dtype).removeprefix("torch.")
        assert got.device == x.device
        if name != "new_empty":
            assert got.tolist() == want.tolist()
    assert x.new_zeros(2, requires_grad=True).requires_grad


def test_softmax_dtype(dev: str) -> None:
    check(lambda x: F.softmax(x, 1, dtype=ferro.float64), lambda x: TF.softmax(x, 1, dtype=torch.float64),
          [(3, 4)], dev, rtol=1e-6)
    check(lambda x: F.log_softmax(x, -1, dtype="float64"), lambda x: TF.log_softmax(x, -1, dtype=torch.float64),
          [(3, 4)], dev, rtol=1e-6)


GRADCHECKS = {
    "as_strided overlapping": (lambda t: t.as_strided((4, 3), (2, 1), 1) ** 2, [(12,)]),
    # inside the view's own elements (a read outside them has no gradient there, in PyTorch too)
    "as_strided of a view": (lambda t: t[1:, 1:].as_strided((2, 2), (4, 1)) * 3, [(3, 4)]),
    "cdist p=1.5": (lambda p, q: ferro.cdist(p, q, 1.5), [(4, 3), (5, 3)]),
    "linalg.norm nuc": (lambda p: ferro.linalg.norm(p, ord="nuc"), [(4, 3)]),
    "linalg.norm 3 dim 1": (lambda p: ferro.linalg.norm(p, ord=3, dim=1), [(4, 3)]),
    "avg_pool2d options": (lambda p: F.avg_pool2d(p, 2, padding=1, ceil_mode=True, count_include_pad=False),
                           [(1, 1, 5, 5)]),
    "max_pool1d ceil": (lambda p: F.max_pool1d(p, 2, ceil_mode=True), [(1, 2, 5)]),
    "add alpha": (lambda p, q: ferro.add(p, q * q, alpha=0.5), [(4, 3), (4, 3)]),
    "sub alpha": (lambda p, q: p.sub(q, alpha=-2), [(4, 3), (3,)]),
    "flip varargs": (lambda p: p.flip(0, 1) * p, [(4, 3)]),
}


@pytest.mark.parametrize("case", sorted(GRADCHECKS))
def test_gradcheck(case: str) -> None:
    """Gradients by finite differences (float64, cpu), independent of torch."""
    f, shapes = GRADCHECKS[case]
    rng = np.random.default_rng(2)
    inputs = [ferro.tensor(rng.standard_normal(s), dtype=ferro.float64, requires_grad=True) for s in shapes]
    assert ferro.autograd.gradcheck(f, inputs)
