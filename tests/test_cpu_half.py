"""float16 and bfloat16 on the cpu backend: computed in float32, rounded once (ferro_cpu/_half.py).

Elementwise bfloat16 ops are checked bit for bit against PyTorch's (which computes each element in float
and rounds once: for ``+ - * /``, ``sqrt`` and the exact ops that is the correctly rounded result, so the
two must agree everywhere), and within one bfloat16 step for transcendental functions. The fused
kernels (conv2d, conv_transpose2d, max_pool2d, softmax, log_softmax, layer_norm, cross_entropy) must run
on 16-bit inputs (their calls are counted) and give, forward and backward, exactly the float32 op on the
widened inputs rounded once, and PyTorch's 16-bit results within the error of one rounding.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

import ferro
import ferro.nn.functional as F

from conftest import count_calls, functions_entered

torch = pytest.importorskip("torch")
TF = torch.nn.functional

HALVES = ("bfloat16", "float16")
SPECIALS = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 3.0e38, -3.0e38, 1e-40, 65504.0, 0.5],
                    np.float32)


def _values(shape: tuple[int, ...], seed: int, specials: bool = True) -> np.ndarray:
    """Random float32 values of mixed magnitudes, with infinities, NaNs, zeros of both signs, subnormals."""
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(shape) * 10.0 ** rng.integers(-3, 4, shape)).astype(np.float32)
    if specials:
        flat = x.reshape(-1)
        flat[rng.choice(flat.size, len(SPECIALS), replace=False)] = SPECIALS
    return x


def _pair(x: np.ndarray, dtype: str, requires_grad: bool = False) -> tuple[Any, Any]:
    """The same 16-bit tensor in ferro and in torch (rounded once from ``x``, by torch)."""
    t = torch.tensor(x).to(getattr(torch, dtype))
    f = ferro.tensor(t.float().numpy()).to(getattr(ferro, dtype))
    return f.requires_grad_(requires_grad), t.requires_grad_(requires_grad)


def _bits(t: Any) -> np.ndarray:
    """The 16-bit values of a ferro or torch tensor as float32 bit patterns (exact), every NaN as one."""
    a = t.detach().to(ferro.float32).numpy() if isinstance(t, ferro.Tensor) else t.detach().float().numpy()
    return np.where(np.isnan(a), np.float32(np.nan), a).view(np.uint32)


BITWISE = {  # ferro call, torch call: correctly rounded (or exact) in 16 bits, so equal bit for bit
    "add": (lambda a, b: a + b, lambda a, b: a + b),
    "sub": (lambda a, b: a - b, lambda a, b: a - b),
    "mul": (lambda a, b: a * b, lambda a, b: a * b),
    "div": (lambda a, b: a / b, lambda a, b: a / b),
    "sqrt": (lambda a, b: ferro.sqrt(a), lambda a, b: torch.sqrt(a)),
    "maximum": (ferro.maximum, torch.maximum),
    "minimum": (ferro.minimum, torch.minimum),
    "neg": (lambda a, b: -a, lambda a, b: -a),
    "abs": (lambda a, b: a.abs(), lambda a, b: a.abs()),
    "relu": (lambda a, b: F.relu(a) + 0.0, lambda a, b: TF.relu(a) + 0.0),  # -0.0: +0.0 as float32's relu
    "floor": (lambda a, b: ferro.floor(a), lambda a, b: torch.floor(a)),
    "scalar mul": (lambda a, b: a * 3.0, lambda a, b: a * 3.0),
    "scalar rsub": (lambda a, b: 1.5 - a, lambda a, b: 1.5 - a),
    "amax": (lambda a, b: a.amax(1), lambda a, b: a.amax(1)),
    "amin": (lambda a, b: a.amin(0), lambda a, b: a.amin(0)),
}


@pytest.mark.parametrize("case", BITWISE)
def test_bfloat16_elementwise_bit_for_bit(case: str) -> None:
    ours, theirs = BITWISE[case]
    (a, ta), (b, tb) = _pair(_values((40, 50), 1), "bfloat16"), _pair(_values((40, 50), 2), "bfloat16")
    got, want = ours(a, b), theirs(ta, tb)
    assert got.dtype == ferro.bfloat16
    np.testing.assert_array_equal(_bits(got), _bits(want))


@pytest.mark.parametrize("case", ["eq", "lt", "isnan", "argmax"])
def test_bfloat16_comparisons_and_indices(case: str) -> None:
    (a, ta), (b, tb) = _pair(_values((30, 20), 3), "bfloat16"), _pair(_values((30, 20), 4), "bfloat16")
    calls = {"eq": (lambda x, y: x == y), "lt": (lambda x, y: x < y), "isnan": (lambda x, y: x.isnan()),
             "argmax": (lambda x, y: x.nan_to_num().argmax(1))}
    got, want = calls[case](a, b), calls[case](ta, tb)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("op", ["exp", "log", "tanh", "sigmoid", "sin"])
def test_bfloat16_transcendental_within_one_step(op: str) -> None:
    """Computed in float32 and rounded once: at most one bfloat16 step (2**-7 relative) from PyTorch."""
    x = _values((50, 40), 5, specials=False) / 1000
    (a, ta) = _pair(np.abs(x) + 1e-3 if op == "log" else x, "bfloat16")
    got = getattr(ferro, op)(a).to(ferro.float32).numpy()
    want = getattr(torch, op)(ta).float().numpy()
    np.testing.assert_allclose(got, want, rtol=2.0 ** -7, atol=1e-30)


def _counted(monkeypatch: pytest.MonkeyPatch, names: tuple[str, ...]) -> dict[str, int]:
    return count_calls(monkeypatch, ferro.tensor([0.0])._device, names)


FUSED: dict[str, tuple[tuple[str, ...], Callable[..., Any], Callable[..., Any], list[tuple[int, ...]]]] = {
    # kernels that must run, ferro call, torch call, the shapes of its floating inputs
    "conv2d": (("conv2d_forward", "conv2d_backward"),
               lambda m, x, w, b: m.conv2d(x, w, b, padding=1), lambda m, x, w, b: m.conv2d(x, w, b, padding=1),
               [(4, 3, 9, 8), (6, 3, 3, 3), (6,)]),
    "conv2d strided": (("conv2d_forward", "conv2d_backward"),
                       lambda m, x, w: m.conv2d(x, w, stride=2, groups=2),
                       lambda m, x, w: m.conv2d(x, w, stride=2, groups=2), [(2, 4, 9, 9), (6, 2, 3, 3)]),
    "conv_transpose2d": (("conv_transpose2d_forward", "conv_transpose2d_backward"),
                         lambda m, x, w, b: m.conv_transpose2d(x, w, b, stride=2),
                         lambda m, x, w, b: m.conv_transpose2d(x, w, b, stride=2), [(2, 3, 5, 4), (3, 4, 3, 3), (4,)]),
    "conv2d shifted": (("conv2d_forward", "conv2d_backward"),  # ferro_cpu/_conv_shifted.py
                       lambda m, x, w, b: m.conv2d(x, w, b, padding=1), lambda m, x, w, b: m.conv2d(x, w, b, padding=1),
                       [(2, 8, 24, 24), (8, 8, 3, 3), (8,)]),
    "conv_transpose2d sub-kernels": (("conv_transpose2d_forward", "conv_transpose2d_backward"),
                                     lambda m, x, w: m.conv_transpose2d(x, w, stride=2, padding=1),
                                     lambda m, x, w: m.conv_transpose2d(x, w, stride=2, padding=1),
                                     [(2, 8, 4, 4), (8, 4, 4, 4)]),
    "max_pool2d": (("max_pool2d_forward", "max_pool2d_backward"), lambda m, x: m.max_pool2d(x, 3, 2, 1),
                   lambda m, x: m.max_pool2d(x, 3, 2, 1), [(3, 4, 9, 10)]),
    "softmax": (("softmax", "softmax_backward"), lambda m, x: m.softmax(x, -1), lambda m, x: m.softmax(x, -1),
                [(16, 33)]),
    "log_softmax": (("log_softmax", "log_softmax_backward"), lambda m, x: m.log_softmax(x, 1),
                    lambda m, x: m.log_softmax(x, 1), [(5, 7, 6)]),
    "layer_norm": (("layer_norm_forward", "layer_norm_backward"), lambda m, x, w, b: m.layer_norm(x, (24,), w, b),
                   lambda m, x, w, b: m.layer_norm(x, (24,), w, b), [(8, 5, 24), (24,), (24,)]),
    "cross_entropy": (("cross_entropy_forward", "cross_entropy_backward"),
                      lambda m, x: m.cross_entropy(x, _TARGET[m]), lambda m, x: m.cross_entropy(x, _TARGET[m]),
                      [(12, 10)]),
}
_TARGET = {F: ferro.tensor(np.arange(12) % 10), TF: torch.tensor(np.arange(12) % 10)}
#: Ops whose backward reads the op's output, saved in 16 bits (as PyTorch's): their gradient is the float32
#: formula on (the gradient, that rounded output), rounded once; checked against float64 within one step.
FROM_OUTPUT = {
    "softmax": lambda g, y: y * (g - (g * y).sum(-1, keepdims=True)),
    "log_softmax": lambda g, y: g - np.exp(y) * g.sum(1, keepdims=True),
}


@pytest.fixture(params=list(FUSED))
def fused_case(request: pytest.FixtureRequest) -> Iterator[str]:
    yield request.param


def _leaf(a: np.ndarray, dtype: Any) -> Any:
    return ferro.tensor(a).to(dtype).detach().requires_grad_(True)


@pytest.mark.parametrize("dtype", HALVES)
def test_fused_kernels_take_16_bit_and_round_once(monkeypatch: pytest.MonkeyPatch, fused_case: str,
                                                  dtype: str) -> None:
    names, ours, theirs, shapes = FUSED[fused_case]
    rng = np.random.default_rng(7)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    half = getattr(ferro, dtype)
    narrow = [ferro.tensor(a).to(half).to(ferro.float32).numpy() for a in arrays]  # 16-bit values, as float32
    calls = _counted(monkeypatch, names)
    leaves = [_leaf(a, half) for a in narrow]
    y = ours(F, *leaves)
    assert calls[names[0]] == 1 and y.dtype == half, (calls, y.dtype)
    g = ferro.tensor(rng.standard_normal(tuple(y.shape)).astype(np.float32)).to(half)
    y.backward(g)
    assert calls[names[1]] == 1, calls
    # the rule: the float32 op on the widened inputs and output gradient, rounded once to the 16-bit dtype
    wide = [_leaf(a, ferro.float32) for a in narrow]
    y32 = ours(F, *wide)
    y32.backward(g.to(ferro.float32))
    np.testing.assert_array_equal(_bits(y), _bits(y32.to(half)))
    step = 2.0 ** -7 if dtype == "bfloat16" else 2.0 ** -10
    for leaf, w in zip(leaves, wide):
        assert leaf.grad.dtype == half
        if fused_case in FROM_OUTPUT:
            g64, y64 = (t.to(ferro.float64).detach().numpy() for t in (g, y))
            want = FROM_OUTPUT[fused_case](g64, y64)
            np.testing.assert_allclose(leaf.grad.to(ferro.float64).numpy(), want, rtol=step,
                                       atol=step * 2.0 ** -6 * float(np.abs(want).max()))
        else:
            np.testing.assert_array_equal(_bits(leaf.grad), _bits(w.grad.to(half)))
    # and PyTorch's 16-bit op, within a rounding or two of the 16-bit dtype
    tl = [torch.tensor(a).to(getattr(torch, dtype)).requires_grad_(True) for a in narrow]
    ty = theirs(TF, *tl)
    ty.backward(torch.tensor(g.to(ferro.float32).numpy()).to(ty.dtype))
    scale = max(1.0, float(np.abs(ty.detach().float().numpy()).max()))
    np.testing.assert_allclose(y.to(ferro.float32).detach().numpy(), ty.detach().float().numpy(),
                               rtol=2 * step, atol=2 * step * scale)
    for leaf, t in zip(leaves, tl):
        want = t.grad.float().numpy()
        np.testing.assert_allclose(leaf.grad.to(ferro.float32).numpy(), want, rtol=4 * step,
                                   atol=4 * step * max(1.0, float(np.abs(want).max())))


def test_max_pool2d_bfloat16_is_exact() -> None:
    """A max pool selects: its 16-bit result and gradient are PyTorch's bit for bit (NaNs included)."""
    x = _values((2, 3, 8, 8), 9)
    a, ta = _pair(x, "bfloat16", requires_grad=True)
    y, ty = F.max_pool2d(a, 2), TF.max_pool2d(ta, 2)
    np.testing.assert_array_equal(_bits(y), _bits(ty))
    g = _values(tuple(y.shape), 10, specials=False)
    y.backward(ferro.tensor(g).to(ferro.bfloat16))
    ty.backward(torch.tensor(g).bfloat16())
    np.testing.assert_array_equal(_bits(a.grad), _bits(ta.grad))


def test_autocast_training_step_gradients_match_pytorch() -> None:
    """A conv + linear step under autocast on cpu: the loss and every parameter's float32 gradient close to
    PyTorch's autocast step on the same weights (bfloat16 products, float32 accumulation)."""
    def build(nn: Any) -> Any:
        return nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                             nn.Linear(8 * 4 * 4, 10))
    ferro.manual_seed(0)
    ours = build(ferro.nn)
    theirs = build(torch.nn)
    with torch.no_grad():
        for p, q in zip(ours.parameters(), theirs.parameters()):
            q.copy_(torch.tensor(p.detach().numpy()))
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((16, 1, 8, 8)).astype(np.float32), rng.integers(0, 10, 16)
    with ferro.autocast("cpu"):
        loss = F.cross_entropy(ours(ferro.tensor(x)), ferro.tensor(y))
    with torch.autocast("cpu"):
        tloss = TF.cross_entropy(theirs(torch.tensor(x)), torch.tensor(y))
    loss.backward()
    tloss.backward()
    assert loss.dtype == ferro.float32
    np.testing.assert_allclose(loss.item(), tloss.item(), rtol=2e-2)
    for p, q in zip(ours.parameters(), theirs.parameters()):
        assert p.grad.dtype == ferro.float32
        want = q.grad.numpy()
        np.testing.assert_allclose(p.grad.numpy(), want, rtol=5e-2, atol=5e-2 * float(np.abs(want).max()))


def test_selecting_kernels_round_a_python_number_they_select() -> None:
    """maximum is exact between bfloat16 arrays (its float32 result's top bits are taken), not beside a
    Python number bfloat16 cannot hold: 0.1 selected is rounded to nearest, as ml_dtypes' cast rounds it."""
    import ml_dtypes
    kernels = ferro.tensor([0.0])._device._kernels
    bf = np.dtype(ml_dtypes.bfloat16)
    x = np.array([-1.0, 0.0, 0.05, 0.2, 3.0], np.float32).astype(bf)
    got = kernels["maximum"](x, 0.1)
    want = np.maximum(x.astype(np.float32), np.float32(0.1)).astype(bf)
    assert got.dtype == bf
    np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16))
    between = np.maximum(x.astype(np.float32), x[::-1].astype(np.float32)).astype(bf)
    np.testing.assert_array_equal(kernels["maximum"](x, x[::-1]).view(np.uint16), between.view(np.uint16))


@pytest.mark.parametrize("case", ["add", "mul", "maximum", "neg", "abs", "relu", "floor", "sqrt"])
def test_bfloat16_zero_dim_tensors_stay_zero_dim(case: str) -> None:
    ours, theirs = BITWISE[case]
    (a, ta), (b, tb) = _pair(np.array(2.7, np.float32), "bfloat16"), _pair(np.array(-1.3, np.float32), "bfloat16")
    got, want = ours(a, b), theirs(ta, tb)
    assert got.shape == () and got.dtype == ferro.bfloat16
    np.testing.assert_array_equal(_bits(got), _bits(want))


def test_16_bit_fronts_call_other_dtypes_straight() -> None:
    # the kernel table's 16-bit kernels are fronts of the kernel's own parameters: float32 / float64 reach the
    # kernel without the widening wrapper (nothing of _half.py runs); a 16-bit input goes through it
    from ferro_cpu._half import Half
    kernels = ferro.tensor([0.0])._device._kernels
    x = np.random.default_rng(0).standard_normal((8, 5)).astype(np.float32)
    t = np.arange(8) % 5
    for dtype in (np.float32, np.float64):
        assert functions_entered(lambda d=dtype: kernels["log_softmax"](x.astype(d), -1), "ferro_cpu/_half.py") == []
    assert "widened" in functions_entered(lambda: kernels["log_softmax"](x.astype(np.float16), -1),
                                          "ferro_cpu/_half.py")
    # cross_entropy's backward: the input decides, not the gradient (float32 for a 16-bit 'mean' loss)
    _, lse, _ = kernels["cross_entropy_forward"](x.astype(np.float16), t, None, -100)
    dx = kernels["cross_entropy_backward"](np.full(1, 0.125, np.float32), x.astype(np.float16), t, None, lse)
    want = kernels["cross_entropy_backward"](np.full(1, 0.125, np.float32), x.astype(np.float16).astype(np.float32),
                                             t, None, lse)
    assert dx.dtype == np.float16
    np.testing.assert_array_equal(dx, want.astype(np.float16))
    # the front keeps the kernel's signature: defaults, keyword-only parameters, *args and **kwargs
    half = Half(np)

    def kernel(x: Any, n: int = 2, *rest: Any, scale: float = 1.0, **extra: Any) -> Any:
        return x * n * scale + len(rest) + len(extra)
    front = half.kernel(kernel)
    assert inspect.signature(front).parameters.keys() == inspect.signature(kernel).parameters.keys()
    assert front.__name__ == "kernel" and front.__module__ == kernel.__module__ == __name__
    # every front of the table is named for its kernel's module (ferro.compile reads it to find its kernels)
    # (compiled at the binding, or with the package in _half_fronts.py)
    fronts = [k for k in kernels.values() if getattr(getattr(k, "__code__", None), "co_filename", "").endswith(
        ("16-bit front>", "_half_fronts.py"))]
    assert fronts and all(isinstance(k.__module__, str) and k.__module__.startswith("ferro_cpu") for k in fronts)
    one = np.ones(2, np.float32)
    np.testing.assert_array_equal(front(one), kernel(one))
    np.testing.assert_array_equal(front(one, 3, 0, 0, scale=0.5, a=1), kernel(one, 3, 0, 0, scale=0.5, a=1))
    got = front(one.astype(np.float16), 3, scale=0.5)
    assert got.dtype == np.float16 and got.tolist() == [1.5, 1.5]


def test_precompiled_16_bit_fronts_are_the_compiled_ones() -> None:
    """``_half_fronts.py`` holds, for each signature, the maker ``_half.maker_source`` would compile, and every
    front a cpu device's binding makes is in it (regenerate with ``python -m ferro_cpu._half``)."""
    from ferro_cpu import _half
    from ferro_cpu._half_fronts import PRECOMPILED

    def kernel_code(make: Callable[..., Any]) -> Any:
        return next(c for c in make.__code__.co_consts if inspect.iscode(c))
    assert PRECOMPILED
    for key, make in PRECOMPILED.items():
        scope: dict[str, Any] = {}
        exec(compile(_half.maker_source(key), "<front>", "exec", dont_inherit=True), scope)  # as _half does
        want, got = kernel_code(scope["make"]), kernel_code(make)
        assert (got.co_code, got.co_varnames, got.co_names, got.co_consts, got.co_argcount,
                got.co_kwonlyargcount, got.co_flags) == (want.co_code, want.co_varnames, want.co_names,
                                                         want.co_consts, want.co_argcount,
                                                         want.co_kwonlyargcount, want.co_flags), key
    seen = set(_half._MAKERS)
    kernels = ferro.device("cpu").backend.kernels(0)
    made = [k for k in set(_half._MAKERS) - seen]
    assert made == [], f"fronts compiled at binding, not in _half_fronts.py (python -m ferro_cpu._half): {made}"
    # and a precompiled front runs as a compiled one: straight for float32, widened for float16
    x = np.array([[1.0, -2.0, 3.0]], np.float32)
    np.testing.assert_allclose(kernels["log_softmax"](x, -1), kernels["log_softmax"](x.astype(np.float64), -1),
                               rtol=1e-6)
    x16 = x.astype(np.float16)
    got = kernels["log_softmax"](x16, -1)
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got, kernels["log_softmax"](x16.astype(np.float32), -1).astype(np.float16))
