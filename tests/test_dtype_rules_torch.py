"""Which dtypes an op takes, against PyTorch CPU: ferro runs an op at a dtype exactly where PyTorch does,
with PyTorch's values, and elsewhere refuses it up front with a DTypeError naming the op and the dtype,
while ``Backend.supports`` says the same. The ops are those whose dtype rules follow PyTorch's (the
composites checked by ``register_ruled`` and the elementwise, reduction and sorting rules beside them).

Each call is written once against a namespace (``ferro`` or ``torch``) and run on both.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch

import ferro
from ferro.errors import DTypeError

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64",
          "complex64", "complex128"]

#: Inputs by kind: a symmetric positive definite matrix with distinct entries per row (the linalg ops take
#: it, the orderings have no ties), probabilities strictly inside (0, 1), and a vector of counts.
_BASE = {
    "mat": np.array([[4.0, 1.0, 0.5], [1.0, 3.0, 0.25], [0.5, 0.25, 2.0]]),
    "prob": np.array([[0.25, 0.5, 0.75], [0.5, 0.125, 0.625], [0.875, 0.375, 0.5]]),
    "counts": np.array([0.0, 1.0, 1.0, 3.0, 2.0]),
}

Call = Callable[[Any, Any], Any]
#: name -> (registry op, input kind, call against namespace ``ns`` and input ``x``, compare values)
CASES: dict[str, tuple[str, str, Call, bool]] = {
    "linalg.inv": ("linalg.inv", "mat", lambda ns, x: ns.linalg.inv(x), True),
    "linalg.det": ("linalg.det", "mat", lambda ns, x: ns.linalg.det(x), True),
    "linalg.slogdet": ("linalg.slogdet", "mat", lambda ns, x: ns.linalg.slogdet(x).logabsdet, True),
    "linalg.solve": ("linalg.solve", "mat", lambda ns, x: ns.linalg.solve(x, x), True),
    "linalg.cholesky": ("linalg.cholesky", "mat", lambda ns, x: ns.linalg.cholesky(x), True),
    "linalg.eigh": ("linalg.eigh", "mat", lambda ns, x: ns.linalg.eigh(x).eigenvalues, True),
    "linalg.eigvalsh": ("linalg.eigvalsh", "mat", lambda ns, x: ns.linalg.eigvalsh(x), True),
    "linalg.svd": ("linalg.svd", "mat", lambda ns, x: ns.linalg.svd(x).S, True),
    "linalg.svdvals": ("linalg.svdvals", "mat", lambda ns, x: ns.linalg.svdvals(x), True),
    "linalg.qr": ("linalg.qr", "mat", lambda ns, x: ns.linalg.qr(x).R.abs(), True),
    "linalg.pinv": ("linalg.pinv", "mat", lambda ns, x: ns.linalg.pinv(x), True),
    "linalg.lstsq": ("linalg.lstsq", "mat", lambda ns, x: ns.linalg.lstsq(x, x).solution, True),
    "linalg.lu_factor": ("linalg.lu_factor", "mat", lambda ns, x: ns.linalg.lu_factor(x).LU, True),
    "linalg.lu": ("linalg.lu", "mat", lambda ns, x: ns.linalg.lu(x).U, True),
    "linalg.cdist": ("linalg.cdist", "mat", lambda ns, x: ns.cdist(x, x.flip(0)), True),
    "linalg.cross": ("linalg.cross", "mat", lambda ns, x: ns.linalg.cross(x, x.flip(0)), True),
    "linalg.vector_norm": ("linalg.vector_norm", "mat", lambda ns, x: ns.linalg.vector_norm(x), True),
    "linalg.matrix_norm": ("linalg.matrix_norm", "mat", lambda ns, x: ns.linalg.matrix_norm(x), True),
    "norm": ("norm", "mat", lambda ns, x: ns.norm(x, dim=-1), True),
    "bincount": ("bincount", "counts", lambda ns, x: ns.bincount(x), True),
    "histc": ("histc", "mat", lambda ns, x: ns.histc(x, 4, 0, 4), True),
    "logcumsumexp": ("logcumsumexp", "mat", lambda ns, x: ns.logcumsumexp(x, 0), True),
    "nll_loss": ("nll_loss", "mat", lambda ns, x: ns.nn.functional.nll_loss(x, ns.tensor([0, 2, 1])), True),
    "kl_div": ("kl_div", "prob", lambda ns, x: ns.nn.functional.kl_div(x, x, reduction="sum"), True),
    "binary_cross_entropy": ("binary_cross_entropy", "prob",
                             lambda ns, x: ns.nn.functional.binary_cross_entropy(x, x), True),
    "bernoulli": ("bernoulli", "mat", lambda ns, x: ns.bernoulli((x.real > 1).to(x.dtype)), True),
    "normal": ("normal", "mat", lambda ns, x: ns.normal(x, 0.0), True),
    "dropout2d": ("dropout2d", "mat", lambda ns, x: ns.nn.functional.dropout2d(x.reshape(1, 3, 3), 0.5), False),
    "conj_physical": ("conj_physical", "mat", lambda ns, x: ns.conj_physical(x), True),
    "resolve_conj": ("resolve_conj", "mat", lambda ns, x: ns.resolve_conj(x), True),
    "resolve_neg": ("resolve_neg", "mat", lambda ns, x: ns.resolve_neg(x), True),
    "abs": ("abs", "mat", lambda ns, x: ns.abs(x), True),
    "ceil": ("ceil", "mat", lambda ns, x: ns.ceil(x), True),
    "floor": ("floor", "mat", lambda ns, x: ns.floor(x), True),
    "trunc": ("trunc", "mat", lambda ns, x: ns.trunc(x), True),
    "round": ("round", "mat", lambda ns, x: ns.round(x), True),
    "argmax": ("argmax", "mat", lambda ns, x: ns.argmax(x, 1), True),
    "argmin": ("argmin", "mat", lambda ns, x: ns.argmin(x, 1), True),
    "argsort": ("argsort", "mat", lambda ns, x: ns.argsort(x, 1), False),  # ties (bool): the order may differ
    "sort": ("sort", "mat", lambda ns, x: ns.sort(x, 1).values, True),
    "mode": ("mode", "mat", lambda ns, x: ns.mode(x, 1).values, True),
    "median": ("median", "mat", lambda ns, x: ns.median(x, 1).values, True),
    "kthvalue": ("kthvalue", "mat", lambda ns, x: ns.kthvalue(x, 2, 1).values, True),
    "topk": ("topk", "mat", lambda ns, x: ns.topk(x, 2).values, True),
    "max_pool1d": ("max_pool1d", "mat", lambda ns, x: ns.nn.functional.max_pool1d(x.reshape(1, 3, 3), 2), True),
    "max_pool2d": ("max_pool2d", "mat", lambda ns, x: ns.nn.functional.max_pool2d(x.reshape(1, 1, 3, 3), 2),
                   True),
    "adaptive_max_pool2d": ("adaptive_max_pool2d", "mat",
                            lambda ns, x: ns.nn.functional.adaptive_max_pool2d(x.reshape(1, 1, 3, 3), 2), True),
    "randperm": ("randperm", "mat", lambda ns, x: ns.randperm(5, dtype=x.dtype).sort().values, True),
}


def _ferro_dtype(name: str) -> ferro.DType:
    return getattr(ferro, "bool_" if name == "bool" else name)


def _host(t: Any) -> np.ndarray:
    """A result of either library as NumPy (16-bit floats widened, as NumPy has no bfloat16)."""
    if isinstance(t, torch.Tensor):
        t = t.detach()
        return (t.double() if t.dtype in (torch.float16, torch.bfloat16) else t).numpy()
    return (t.to(ferro.float64) if t.dtype in (ferro.float16, ferro.bfloat16) else t).numpy()


def _run(ns: Any, case: str, dtype: str, device: str = "cpu") -> tuple[Any, BaseException | None]:
    _, kind, call, _ = CASES[case]
    if ns is torch:
        x = torch.tensor(_BASE[kind]).to(getattr(torch, dtype))
    else:
        x = ferro.tensor(_BASE[kind], device=device).to(_ferro_dtype(dtype))
    ns.manual_seed(0)
    try:
        return call(ns, x), None
    except Exception as e:
        return None, e


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", list(CASES))
def test_runs_where_torch_runs_and_refuses_by_name_elsewhere(case: str, dtype: str) -> None:
    op, _, _, values = CASES[case]
    want, torch_error = _run(torch, case, dtype)
    got, error = _run(ferro, case, dtype)
    claimed = ferro.backends.get("cpu").supports(op, _ferro_dtype(dtype))
    if torch_error is not None:
        assert isinstance(error, DTypeError), f"torch refuses {case} at {dtype} ({torch_error}); ferro: {error!r}"
        assert op.split(".")[-1] in str(error) and f"ferro.{dtype}" in str(error), str(error)
        assert not claimed, f"the cpu backend claims {op} at {dtype}, which PyTorch and ferro refuse"
        return
    assert error is None, f"torch runs {case} at {dtype}; ferro raised {error!r}"
    assert claimed, f"{op} runs at {dtype} but the cpu backend does not claim it"
    if values:
        tol = 2e-2 if dtype in ("float16", "bfloat16") else 1e-6
        np.testing.assert_allclose(_host(got), _host(want), rtol=tol, atol=tol, err_msg=f"{case} at {dtype}")


def test_randperm_names_the_dtype_it_refuses() -> None:
    with pytest.raises(DTypeError, match=r"randperm: not defined for dtype ferro\.bool"):
        ferro.randperm(4, dtype=ferro.bool_)


def test_a_rule_refusal_leaves_the_input_and_its_graph_alone() -> None:
    x = ferro.ones(3, 3, dtype=ferro.float16, requires_grad=True)
    with pytest.raises(DTypeError, match=r"linalg\.inv"):
        ferro.linalg.inv(x)
    assert x.grad is None and x.grad_fn is None and x.tolist() == [[1.0] * 3] * 3


# -- the generic Array API backend on a namespace that orders no bool and casts no complex (array-api-strict) --

_B = np.array([[True, False, True], [False, False, True]])
_C = np.array([[1 + 2j, 0j, -1.5 + 0j], [0.5j, 2 - 1j, 0j]])
#: name -> (input, call against namespace ``ns`` and input ``x``), the calls PyTorch runs on bool and complex.
STRICT: dict[str, tuple[np.ndarray, Call]] = {
    "lt": (_B, lambda ns, x: x < x.flip(0)), "le": (_B, lambda ns, x: x <= x.flip(0)),
    "gt": (_B, lambda ns, x: x > x.flip(0)), "ge": (_B, lambda ns, x: x >= x.flip(0)),
    "maximum": (_B, lambda ns, x: ns.maximum(x, x.flip(0))), "minimum": (_B, lambda ns, x: ns.minimum(x, x.flip(0))),
    "amax": (_B, lambda ns, x: ns.amax(x, 1)), "amin": (_B, lambda ns, x: ns.amin(x, 0)),
    "isnan": (_B, lambda ns, x: ns.isnan(x)), "isinf": (_B, lambda ns, x: ns.isinf(x)),
    "isfinite": (_B, lambda ns, x: ns.isfinite(x)),
    "sort": (_B, lambda ns, x: ns.sort(x, 1).values), "msort": (_B, lambda ns, x: ns.msort(x)),
    "mode": (_B, lambda ns, x: ns.mode(x, 1).values),
    "logical_and": (_C, lambda ns, x: ns.logical_and(x, x.flip(0))), "logical_not": (_C, lambda ns, x: ~x.bool()),
    "to float": (_C, lambda ns, x: x.real.to(ns.float64) + x.to(ns.float64)),
    "to int": (_C, lambda ns, x: x.to(ns.int64)),
    "lu_factor": (np.array([[1.0, 2.0, 0.5], [3.0, 1.0, 2.0], [0.5, 4.0, 1.0]]),
                  lambda ns, x: ns.linalg.lu_factor(x).LU),
}


@pytest.mark.filterwarnings("ignore:Casting complex values to real")
@pytest.mark.parametrize("case", list(STRICT))
def test_the_generic_backend_runs_what_torch_runs_on_array_api_strict(case: str) -> None:
    data, call = STRICT[case]
    got = call(ferro, ferro.tensor(data, device="strict"))
    want = call(torch, torch.tensor(data))
    assert got.device.type == "strict"
    np.testing.assert_allclose(_host(got), _host(want), rtol=1e-12, err_msg=case)


def test_the_generic_lu_pivots_as_lapack_on_array_api_strict() -> None:
    a = np.random.default_rng(0).standard_normal((2, 4, 3))
    got = ferro.linalg.lu_factor(ferro.tensor(a, device="strict"))
    want = torch.linalg.lu_factor(torch.tensor(a))
    np.testing.assert_allclose(got.LU.numpy(), want.LU.numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(got.pivots.numpy(), want.pivots.numpy())
