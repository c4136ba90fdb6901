"""Gradients of every op in the registry by finite differences (float64), and second derivatives.

The registry is iterated, so a new op is covered or the test that every op is
accounted for fails: each op is gradchecked on the samples of the conformance
op database (every keyword variant, the two smallest shapes, often
broadcasting) plus the cases below (scalar operands, ties, indexing keys,
linear algebra, convolutions...), or it is in :data:`SKIPPED` with the reason.
Inputs avoid the points where an op is not differentiable (logs of positive
numbers, abs and relu away from 0, floor away from integers...).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

import ferro
from ferro._ops import REGISTRY
from ferro.autograd import gradcheck, gradgradcheck
from ferro.testing._opinfo import OP_DB, samples

F = ferro.nn.functional


@dataclass
class Case:
    """One call to check: ``fn(*tensors)`` with float64 leaves made from ``arrays``."""

    op: str
    label: str
    fn: Callable[..., Any]
    arrays: tuple[Any, ...]
    tol: dict[str, float] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return f"{self.op}-{self.label}"

    def inputs(self) -> list[Any]:
        return [ferro.tensor(a, dtype=ferro.float64, requires_grad=True) if isinstance(a, np.ndarray) else a
                for a in self.arrays]


def _r(*shape: int, lo: float = -2.0, hi: float = 2.0, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed + sum(shape) + 7 * len(shape)).uniform(lo, hi, shape)


def _away_from_integers(*shape: int, seed: int = 0) -> np.ndarray:
    """Values k + u with u in [0.2, 0.4] or [0.6, 0.8]: not integers, not halves."""
    g = np.random.default_rng(seed)
    return g.integers(-3, 3, shape) + g.choice([0.3, 0.7], shape) + g.uniform(-0.1, 0.1, shape)


def _quotient_safe(n: int) -> tuple[np.ndarray, np.ndarray]:
    """(x, y) with x / y well away from integers, for floor_divide / remainder / fmod."""
    y = _r(n, lo=1.0, hi=2.0) * np.where(np.arange(n) % 3 == 0, -1, 1)
    return y * _away_from_integers(n, seed=5), y


def _spd(m: ferro.Tensor) -> ferro.Tensor:
    """A symmetric positive-definite matrix from any square one (differentiable)."""
    return m @ m.mT + 3 * ferro.eye(m.shape[-1], dtype=m.dtype)


def _seeded(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` drawing the same random numbers on every call, so finite differences see one function."""
    def run(*xs: Any) -> Any:
        ferro.manual_seed(1234)
        return fn(*xs)
    return run


# -- the conformance database's samples ------------------------------------------------------------------------

_DB = {info.name: info for info in OP_DB}


def _db_cases(name: str) -> list[Case]:
    info = _DB.get(name)
    if info is None or not info.grad:
        return []
    out = []
    for i, s in enumerate(samples(info, "float64", np.random.default_rng(3), small=True)):
        kw = dict(s.kwargs)
        out.append(Case(name, f"db{i}-{s.note.replace(' ', '')}{kw or ''}",
                        lambda *xs, _i=info, _k=kw: _i(ferro, *xs, **_k), s.args))
    return out


# -- cases of our own ------------------------------------------------------------------------------------------

A34, B4, C3 = _r(3, 4), _r(4, lo=0.5, hi=2.0), _r(3)
POS = _r(3, 4, lo=0.5, hi=2.5)
NONINT = _away_from_integers(3, 4)
QX, QY = _quotient_safe(6)

LOCAL: dict[str, list[tuple[str, Callable[..., Any], tuple[Any, ...]]]] = {
    # elementwise: scalar operands, ties, points the database does not draw
    "add": [("scalar", lambda x: x + 1.5, (A34,)), ("reflected", lambda x: 1.5 + x, (A34,))],
    "sub": [("scalar", lambda x: x - 1.5, (A34,)), ("reflected", lambda x: 1.5 - x, (A34,))],
    "mul": [("scalar", lambda x: x * 1.5, (A34,)), ("self", lambda x: x * x, (A34,))],
    "div": [("scalar", lambda x: x / 1.5, (A34,)), ("reflected", lambda x: 1.5 / x, (POS,)),
            ("self broadcast", lambda x, y: x / y, (A34, B4))],
    "pow": [("scalar exponent", lambda x: x ** 2.5, (POS,)), ("integer exponent", lambda x: x ** 3, (A34,)),
            ("scalar base", lambda x: 1.7 ** x, (A34,)), ("negative exponent", lambda x: x ** -1.5, (POS,))],
    "maximum": [("ties", lambda x: ferro.maximum(x[:3], x[3:]), (np.concatenate([C3, C3]),)),
                ("0-d tensor", lambda x: ferro.maximum(x, ferro.tensor(0.1, dtype=ferro.float64)), (A34,))],
    "minimum": [("ties", lambda x: ferro.minimum(x[:3], x[3:]), (np.concatenate([C3, C3]),))],
    "atan2": [("all quadrants", lambda x, y: ferro.atan2(x, y), (A34, _r(3, 4, seed=1)))],
    "floor_divide": [("away from steps", lambda x, y: ferro.floor_divide(x, y), (QX, QY))],
    "remainder": [("away from steps", lambda x, y: ferro.remainder(x, y), (QX, QY)),
                  ("scalar", lambda x: x % 1.5, (_away_from_integers(5) * 1.5,))],
    "fmod": [("away from steps", lambda x, y: ferro.fmod(x, y), (QX, QY))],
    "hypot": [("signs", lambda x, y: ferro.hypot(x, y), (A34, _r(3, 4, seed=2)))],
    "sign": [("away from 0", lambda x: x.sign(), (POS * np.sign(A34),))],
    "floor": [("away from integers", lambda x: x.floor(), (NONINT,))],
    "ceil": [("away from integers", lambda x: x.ceil(), (NONINT,))],
    "trunc": [("away from integers", lambda x: x.trunc(), (NONINT,))],
    "round": [("away from halves", lambda x: x.round(), (NONINT,))],
    "frac": [("negative", lambda x: ferro.frac(x), (NONINT,))],
    "abs": [("both signs", lambda x: x.abs(), (POS * np.sign(A34),))],
    "relu": [("both signs", lambda x: x.relu(), (POS * np.sign(A34),))],
    "lgamma": [("negative non-integers", lambda x: x.lgamma(), (-NONINT - 4,))],
    "digamma": [("positive", lambda x: x.digamma(), (POS,)), ("negative non-integers", lambda x: x.digamma(),
                                                                  (-np.abs(NONINT) - 0.1,))],
    "nan_to_num": [("finite", lambda x: ferro.nan_to_num(x), (A34,))],
    "where": [("scalar branch", lambda x: ferro.where(x > 0, x * 2, 0.5), (A34,)),
              ("broadcast", lambda x, y: ferro.where(x > 0, x, y), (A34, B4))],
    "clamp": [("one-sided", lambda x: ferro.clamp(x, min=-0.5), (A34,))],
    # reductions: amax / amin spread the gradient evenly over ties (two-way ties match central differences)
    "amax": [("ties", lambda x: ferro.cat([x, x]).amax(0), (C3,))],
    "amin": [("ties", lambda x: ferro.cat([x, x]).reshape(2, 3).amin(0), (C3,))],
    "sum": [("dtype", lambda x: x.sum(1, dtype=ferro.float64), (A34,)), ("0-d", lambda x: x.sum(), (np.array(2.0),))],
    "mean": [("keepdim all", lambda x: x.mean((0, 1), keepdim=True), (A34,))],
    "cumprod": [("with zeros", lambda x: (x * ferro.tensor([1.0, 0.0, 1.0, 0.0], dtype=ferro.float64)).cumprod(0) +
                 x.cumprod(1), (_r(4, 4, lo=0.5, hi=1.5),))],
    "cumsum": [("dim 0", lambda x: x.cumsum(0), (A34,))],
    "matmul": [("mm", lambda x, y: ferro.mm(x, y), (A34, _r(4, 2))), ("mv", lambda x, y: ferro.mv(x, y), (A34, B4)),
               ("bmm", lambda x, y: ferro.bmm(x, y), (_r(2, 3, 4), _r(2, 4, 2))),
               ("dot", lambda x, y: ferro.dot(x, y), (B4, _r(4, seed=3))),
               ("vector @ batch", lambda x, y: x @ y, (B4, _r(2, 4, 3)))],
    # shape and movement
    "reshape": [("-1", lambda x: x.reshape(-1, 2), (A34,)), ("of a transpose", lambda x: x.T.reshape(12), (A34,))],
    "view": [("flat", lambda x: x.view(12), (A34,))],
    "permute": [("3-d", lambda x: x.permute(2, 0, 1), (_r(2, 3, 2),))],
    "expand": [("new dims", lambda x: x.expand(2, 3, 4), (B4,))],
    "contiguous": [("of a transpose", lambda x: x.T.contiguous(), (A34,))],
    "clone": [("plain", lambda x: x.clone() * x, (A34,))],
    "cat": [("dim 1, three", lambda x, y: ferro.cat([x, y.unsqueeze(0).expand(3, 4), x], 1), (A34, B4)),
            ("dim 0", lambda x, y: ferro.cat([x, y.unsqueeze(0)]), (A34, B4))],
    "stack": [("dim 1", lambda x, y: ferro.stack([x, y, x * y], 1), (B4, _r(4, seed=4)))],
    "getitem": [("int and slice", lambda x: x[1, ::2], (A34,)),
                ("None and ellipsis", lambda x: x[None, ..., 1], (A34,)),
                ("list with repeats", lambda x: x[[2, 0, 2]], (A34,)), ("mask", lambda x: x[x > 0], (A34,)),
                ("int and list", lambda x: x[1, [3, 1, 3]], (A34,)), ("two lists", lambda x: x[[0, 2], [1, 1]], (A34,)),
                ("tensor index", lambda x: x[:, ferro.tensor([3, 0])], (A34,))],
    "index_put": [("accumulate repeats", lambda x, v: x.index_put((ferro.tensor([1, 1, 0]),), v, accumulate=True),
                   (A34, _r(3, 4, seed=6))),
                  ("replace", lambda x, v: x.index_put((ferro.tensor([2, 0]),), v), (A34, B4)),
                  ("setitem", lambda x, v: _setitem(x, v), (A34, B4))],
    "cast": [("through float32", lambda x: x.to(ferro.float32).to(ferro.float64), (A34,))],
    # linear algebra (gradients of the differentiable outputs)
    "linalg.lu_factor": [("LU", lambda m: ferro.linalg.lu_factor(m).LU, (_r(2, 3, 3),))],
    "linalg.lu": [("L and U", lambda m: ferro.linalg.lu(m).L * 2 + ferro.linalg.lu(m).U, (_r(3, 3),))],
    "linalg.inv": [("square", lambda m: ferro.linalg.inv(_spd(m)), (_r(3, 3),))],
    "linalg.det": [("square", lambda m: ferro.linalg.det(m + 2 * ferro.eye(3, dtype=m.dtype)), (_r(3, 3),))],
    "linalg.slogdet": [("logabsdet", lambda m: ferro.linalg.slogdet(_spd(m)).logabsdet, (_r(2, 3, 3),))],
    "linalg.solve": [("matrix", lambda m, b: ferro.linalg.solve(_spd(m), b), (_r(3, 3), _r(3, 2))),
                     ("vector", lambda m, b: ferro.linalg.solve(_spd(m), b), (_r(3, 3), C3))],
    "linalg.cholesky": [("spd", lambda m: ferro.linalg.cholesky(_spd(m)), (_r(3, 3),))],
    "linalg.eigh": [("eigenvalues", lambda m: ferro.linalg.eigh(m + m.mT).eigenvalues, (_r(3, 3),)),
                    ("eigenvector projectors", lambda m: _projector(ferro.linalg.eigh(m + m.mT).eigenvectors),
                     (_r(2, 3, 3),))],
    "linalg.eigvalsh": [("symmetric", lambda m: ferro.linalg.eigvalsh(m + m.mT), (_r(3, 3),))],
    "linalg.svd": [("singular values", lambda m: ferro.linalg.svd(m).S, (_r(3, 2),)),
                   ("tall, vectors", lambda m: _svd_invariants(ferro.linalg.svd(m, full_matrices=False)), (_r(4, 2),)),
                   ("wide, vectors", lambda m: _svd_invariants(ferro.linalg.svd(m, full_matrices=False)), (_r(2, 3),)),
                   ("square, full", lambda m: _svd_invariants(ferro.linalg.svd(m)), (_r(3, 3),))],
    "linalg.qr": [("tall", lambda m: ferro.cat([t.reshape(-1) for t in ferro.linalg.qr(m)]), (_r(4, 3),)),
                  ("R only", lambda m: ferro.linalg.qr(m).R, (_r(3, 3),))],
    "linalg.svdvals": [("batch", lambda m: ferro.linalg.svdvals(m), (_r(2, 2, 3),))],
    "linalg.pinv": [("tall", lambda m: ferro.linalg.pinv(m), (_r(3, 2),))],
    "linalg.lstsq": [("tall", lambda m, b: ferro.linalg.lstsq(m, b).solution, (_r(4, 2), _r(4, 1)))],
    "linalg.vector_norm": [("2", lambda x: ferro.linalg.vector_norm(x), (A34,)),
                           ("3 over dim", lambda x: ferro.linalg.vector_norm(x, 3, dim=1), (A34,)),
                           ("inf", lambda x: ferro.linalg.vector_norm(x, float("inf")), (A34,))],
    "linalg.matrix_norm": [("fro", lambda x: ferro.linalg.matrix_norm(x), (A34,)),
                           ("nuc", lambda x: ferro.linalg.matrix_norm(x, "nuc"), (A34,)),
                           ("1", lambda x: ferro.linalg.matrix_norm(x, 1), (A34,))],
    "linalg.cross": [("3-vectors", lambda a, b: ferro.linalg.cross(a, b), (_r(2, 3), _r(2, 3, seed=1)))],
    "linalg.cdist": [("2", lambda a, b: ferro.linalg.cdist(a, b), (_r(3, 2), _r(4, 2, seed=1))),
                     ("1", lambda a, b: ferro.linalg.cdist(a, b, p=1.0), (_r(3, 2), _r(4, 2, seed=1)))],
    "norm": [("zero vector", lambda x: ferro.norm(x * 0) + ferro.norm(x), (A34,))],
    # convolutions and random ops with a fixed seed
    "conv3d": [("padding", lambda x, w: F.conv3d(x, w, padding=1), (_r(1, 2, 3, 3, 2), _r(2, 2, 2, 2, 2)))],
    "conv_transpose1d": [("stride 2", lambda x, w: F.conv_transpose1d(x, w, stride=2), (_r(1, 2, 4), _r(2, 3, 3)))],
    "conv_transpose2d": [("stride 2", lambda x, w: F.conv_transpose2d(x, w, stride=2, padding=1),
                          (_r(1, 2, 3, 3), _r(2, 1, 3, 3)))],
    "conv2d": [("weight and bias", lambda x, w, b: F.conv2d(x, w, b, stride=2), (_r(1, 2, 5, 5), _r(3, 2, 3, 3), C3))],
    "linear": [("weight and bias", lambda x, w, b: F.linear(x, w, b), (_r(2, 4), _r(3, 4), C3))],
    "dropout": [("fixed seed", _seeded(lambda x: F.dropout(x, 0.4)), (A34,))],
    "dropout2d": [("fixed seed", _seeded(lambda x: F.dropout2d(x, 0.5)), (_r(2, 3, 2, 2),))],
    "normal": [("mean and std", _seeded(lambda m, s: ferro.normal(m, s)), (A34, POS))],
    "dropout1d": [("fixed seed", _seeded(lambda x: F.dropout1d(x, 0.5)), (_r(2, 3, 4),))],
    "dropout3d": [("fixed seed", _seeded(lambda x: F.dropout3d(x, 0.5)), (_r(2, 3, 2, 2, 2),))],
    "alpha_dropout": [("fixed seed", _seeded(lambda x: F.alpha_dropout(x, 0.4, training=True)), (A34,))],
    "feature_alpha_dropout": [("fixed seed", _seeded(lambda x: F.feature_alpha_dropout(x, 0.4, training=True)),
                               (_r(2, 3, 4),))],
    "gumbel_softmax": [("fixed seed", _seeded(lambda x: F.gumbel_softmax(x, tau=0.7, dim=0)), (A34,))],
    "aminmax": [("over a dim", lambda x: ferro.stack(ferro.aminmax(x, dim=1)), (A34,)),
                ("all", lambda x: ferro.stack(ferro.aminmax(x)), (A34,))],
    "msort": [("no ties", lambda x: ferro.msort(x), (A34,))],
}


def _projector(v: ferro.Tensor) -> ferro.Tensor:
    """v v^T of each column: invariant under the sign an eigen/singular vector is returned with."""
    return (v.unsqueeze(-1) * v.unsqueeze(-2)).reshape(*v.shape[:-2], -1)


def _svd_invariants(usv: Any) -> ferro.Tensor:
    u, s, vh = usv
    return ferro.cat([s.reshape(-1), _projector(u).reshape(-1), _projector(vh.mT).reshape(-1),
                      ((u * s.unsqueeze(-2)) @ vh).reshape(-1)])


def _setitem(x: ferro.Tensor, v: ferro.Tensor) -> ferro.Tensor:
    y = x * 1
    y[1] = v * 2
    y[:, 0] = 0.5
    return y


#: Registry ops not gradchecked, and why.
SKIPPED: dict[str, str] = {
    **{n: "FFT primitive: gradchecked through every ferro.fft op (and in tests/test_fft.py)" for n in (
        "fft_c2c", "fft_r2c", "fft_c2r")},
    **{n: "sample frequencies: a creation function with no tensor input" for n in ("fft.fftfreq", "fft.rfftfreq")},
    **{n: "output is bool (a comparison or a logical op)" for n in (
        "eq", "ne", "lt", "le", "gt", "ge", "isnan", "isinf", "isfinite", "logical_not", "logical_and",
        "logical_or", "logical_xor", "isclose", "any", "all")},
    **{n: "integer-only bitwise op" for n in (
        "bitwise_not", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift")},
    **{n: "output is an int64 index or count" for n in (
        "argmax", "argmin", "argsort", "nonzero", "count_nonzero", "searchsorted", "bucketize", "bincount",
        "one_hot", "multinomial", "randperm")},
    "unique": "sorted distinct values: piecewise constant selection; tested on integers in the conformance suite",
    "unique_consecutive": "as unique",
    "histc": "counts: piecewise constant, zero gradient almost everywhere (PyTorch has no derivative)",
    "mode": "the most frequent value: only meaningful with ties, where it is not differentiable",
    "bernoulli": "samples 0 / 1: no gradient (PyTorch has none)",
    **{f"{n}_step": "an optimizer's in-place update under no_grad; tests/test_optim.py compares it with torch"
       for n in ("sgd", "adam", "rmsprop", "adagrad", "adamax", "nadam")},
    "amp_unscale_": "GradScaler's in-place unscale under no_grad; tests/test_amp.py compares it with torch",
    "int8_matmul": "integer in, integer out (no gradient); tests/test_quantization.py checks it against NumPy",
    **{f"{n}_step": "an optimizer's in-place update under no_grad; tests/test_optim_surface.py compares it with "
       "torch" for n in ("adadelta", "radam", "rprop", "asgd")},
    **{n: "output is bool (a test of each element)" for n in ("isin", "isneginf", "isposinf", "isreal", "signbit")},
    "argwhere": "output is an int64 index",
    "linalg.matrix_rank": "output is an int64 count",
    "heaviside": "a step function: zero gradient almost everywhere (PyTorch has no derivative)",
    **{n: "PyTorch has no derivative (ferro's raises at backward, tests/test_special_torch.py)" for n in (
        "airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1", "modified_bessel_k0", "modified_bessel_k1",
        "scaled_modified_bessel_k0", "scaled_modified_bessel_k1", "spherical_bessel_j0", "chebyshev_polynomial_t",
        "chebyshev_polynomial_u", "chebyshev_polynomial_v", "chebyshev_polynomial_w", "shifted_chebyshev_polynomial_t",
        "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w",
        "hermite_polynomial_h", "hermite_polynomial_he", "laguerre_polynomial_l", "legendre_polynomial_p",
        "linalg.ldl_factor", "linalg.ldl_factor_ex", "linalg.ldl_solve")},
    **{n: "differentiable in the second argument only (as PyTorch): compared with torch in "
          "tests/test_special_torch.py" for n in ("zeta", "gammainc", "gammaincc")},
    **{n: "complex eigen-decomposition of a real or complex matrix: gradients compared with torch in "
          "tests/test_linalg_surface.py" for n in ("linalg.eig", "linalg.eigvals")},
    **{n: "integer-only elementwise op" for n in ("gcd", "lcm", "unravel_index")},
    **{n: "samples: no gradient (PyTorch has none)" for n in ("poisson", "binomial")},
    **{n: "counts: piecewise constant (PyTorch has no derivative)" for n in ("histogram", "histogramdd")},
    "nonzero_static": "output is an int64 index",
    "nextafter": "the next representable float: a step function of its inputs (PyTorch has no derivative)",
    "frexp": "mantissa and an integer exponent: the mantissa jumps at powers of two (PyTorch has no derivative)",
}

GRADGRAD_KINDS = ("unary", "binary", "ternary")
GRADGRAD_OPS = {"sum", "mean", "amax", "amin", "matmul", "outer", "inner", "vdot", "tensordot", "kron", "einsum",
                "linear", "cumsum", "cumprod"}
#: Elementwise ops whose second derivative is not checked, and why.
NO_GRADGRAD = {"floor_divide": "zero gradient", "sign": "zero gradient", "floor": "zero gradient",
               "ceil": "zero gradient", "trunc": "zero gradient", "round": "zero gradient"}
#: Looser tolerances where float64 finite differences lose digits.
TOL: dict[str, dict[str, float]] = {"cast": {"eps": 1e-3, "atol": 1e-3, "rtol": 1e-3},
                                    "linalg.pinv": {"atol": 1e-4}, "linalg.lstsq": {"atol": 1e-4}}


def _cases(name: str) -> list[Case]:
    local = [Case(name, label, fn, arrays, TOL.get(name, {})) for label, fn, arrays in LOCAL.get(name, [])]
    return [*_db_cases(name), *local]


# ferro's own ops; a plugin's ops are checked by the conformance suite from their records' test data.
OWN = sorted(n for n, op in REGISTRY.items() if not op.plugin)
ALL = [c for name in OWN if name not in SKIPPED for c in _cases(name)]
#: Second derivatives, except at ties (the first derivative jumps there).
SECOND = [c for c in ALL if c.op not in NO_GRADGRAD and "ties" not in c.label
          and (REGISTRY[c.op].kind in GRADGRAD_KINDS or c.op in GRADGRAD_OPS)]


def test_every_registry_op_is_checked_or_skipped_with_a_reason() -> None:
    unaccounted = sorted(n for n in OWN if n not in SKIPPED and not _cases(n))
    assert not unaccounted, f"ops with no gradient check (add a case, or a reason to SKIPPED): {unaccounted}"
    assert not set(SKIPPED) - set(REGISTRY), "SKIPPED names ops that are not in the registry"


def test_skipped_ops_give_no_float_gradient() -> None:
    """The skipped ops do not hand out gradients silently: their outputs do not require grad."""
    x = ferro.tensor([[0.5, 1.5, 1.5], [2.5, 0.0, 1.0]], dtype=ferro.float64, requires_grad=True)
    outs = [x > 1, x.isnan(), x.argmax(), x.argsort(), x.nonzero(), ferro.count_nonzero(x), x.any(),
            ferro.bucketize(x, ferro.tensor([1.0])), ferro.unique(x), ferro.histc(x, 3)]
    outs += [ferro.bernoulli(x.detach().clamp(0, 1).requires_grad_())]
    assert [o.requires_grad for o in outs] == [False] * len(outs)


@pytest.mark.parametrize("case", ALL, ids=[c.id for c in ALL])
def test_gradcheck(case: Case) -> None:
    tol = {"eps": 1e-6, "atol": 1e-5, "rtol": 1e-4, **case.tol}
    assert gradcheck(case.fn, case.inputs(), **tol)


@pytest.mark.parametrize("case", SECOND, ids=[c.id for c in SECOND])
def test_gradgradcheck(case: Case) -> None:
    tol = {"eps": 1e-6, "atol": 1e-4, "rtol": 1e-3, **case.tol}
    assert gradgradcheck(case.fn, case.inputs(), **tol)


def test_gradcheck_catches_a_wrong_formula_in_the_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    """gradcheck is able to fail: swap in a wrong backward formula for sin and it raises."""
    monkeypatch.setattr(REGISTRY["sin"], "grads", (lambda g, x: g * x.sin(),))
    x = ferro.tensor([0.3, 1.1], dtype=ferro.float64, requires_grad=True)
    with pytest.raises(AssertionError, match="Jacobian mismatch for input 0"):
        gradcheck(lambda t: t.sin(), [x])
    with pytest.raises(AssertionError, match="Jacobian mismatch"):
        gradgradcheck(lambda t: t.sin() * t, [x])
