"""bfloat16 on ferro-cuda: claimed op by op from CuPy's type tables (ferro_cuda._bfloat16).

Without a GPU (as in CI) the claims are checked against the installed CuPy's
type tables, read here independently of the code under test (ufunc ``.types``
strings, reduction loop lists); the bfloat16 kernels are run with NumPy and
ml_dtypes standing in for CuPy; and with CuPy's bfloat16 taken away nothing
is claimed. On a GPU, bfloat16 results on ``cuda`` are compared with
``cpu``'s: matmul with cpu's bfloat16 (ml_dtypes, float32 accumulation),
the other ops with cpu's float64 on the same bfloat16 values (ferro-cpu sums
bfloat16 in bfloat16, too coarse to be a reference); refused ops must raise.
Those tests skip elsewhere, naming the reason.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
import pytest

import ferro
from ferro._core.records import REGISTRY
from ferro.backends._array_api import BINARY_FUNCS, UNARY_FUNCS
from ferro.backends._resolve import uses_of
from ferro.errors import UnsupportedOperationError
from ferro.testing import assert_close

ml_dtypes = pytest.importorskip("ml_dtypes", reason="ml_dtypes is not installed")
BF16 = np.dtype(ml_dtypes.bfloat16)


@pytest.fixture
def cupy() -> Any:
    if "cuda" not in ferro.backends.installed():
        pytest.skip("ferro-cuda is not installed")
    return pytest.importorskip("cupy", reason="CuPy is not installed (pip install 'ferro-cuda[cupy]')")


@pytest.fixture
def fresh(cupy: Any) -> Any:
    """A new CudaBackend (nothing cached), for CuPy with bfloat16."""
    from ferro_cuda._backend import CudaBackend
    backend = CudaBackend()
    if backend.cupy_bfloat16() is None:
        pytest.skip(f"CuPy {cupy.__version__} has no bfloat16 (it needs CuPy 14 and ml_dtypes)")
    return backend


def _bf16_ops() -> list[str]:
    """Registry ops that compute in bfloat16 for a bfloat16 input."""
    return [n for n, op in REGISTRY.items() if op.table.get(ferro.bfloat16, (None,))[0] is ferro.bfloat16]


def _has_loop(types: list[str], inputs: str) -> bool:
    """Whether a ufunc's ``.types`` (``'EE->E'``) has a loop taking exactly ``inputs``."""
    return any(t.split("->")[0] == inputs for t in types)


def _reduction_inputs(reduction: Any) -> list[str]:
    return ["".join(np.dtype(t).char for t in op.in_types) for op in reduction._ops.ops]


# -- the claim, without a GPU -------------------------------------------------------------------------------


def test_bfloat16_is_a_dtype_where_cupy_has_it(fresh: Any, cupy: Any) -> None:
    assert int(cupy.__version__.split(".")[0]) >= 14
    assert ferro.bfloat16 in fresh.dtypes(0) and ferro.float32 in fresh.dtypes(0)
    assert fresh.native_dtype(ferro.bfloat16) == cupy.dtype(ml_dtypes.bfloat16) == BF16
    assert fresh.native_dtype(ferro.float32) == cupy.float32


def test_the_core_ops_are_claimed_and_the_missing_ones_refused(fresh: Any) -> None:
    refused = fresh.unsupported(0)
    # bfloat16 only, but for the plugin ops with generated kernels, whose complex dtypes have no C
    assert all(v == frozenset({ferro.bfloat16}) for op, v in refused.items() if op not in fresh._generated)
    assert all(v - {ferro.bfloat16} <= {ferro.complex64, ferro.complex128} for v in refused.values())
    for op in ("add", "sub", "mul", "div", "exp", "log", "sqrt", "tanh", "matmul", "sum", "mean", "amax", "amin",
               "where", "relu", "cast", "getitem", "cat", "erf", "eq", "isnan"):
        assert op not in refused, (op, fresh.bfloat16_refusals(0).get(op))
    why = fresh.bfloat16_refusals(0)
    # CuPy has no bfloat16 loop for round, and core's generic sigmoid asks xp.isdtype: both run the kernel
    # generated from their expression (ferro_cuda._bfloat16.GENERATED); silu's fused kernels are float32/float64
    # only, so it runs its decomposition, built on sigmoid
    assert {"round", "sigmoid"}.isdisjoint(why)
    assert "the decomposition runs" in why["silu"]
    assert "Thrust" in why["argsort"] and "uses argsort" in why["sort"] and "uses argsort" in why["topk"]
    assert "scan" in why["cummax"]  # ferro's scan.cu is not instantiated for bfloat16
    assert "isdtype" in why["angle"]
    assert "cumsum" in why
    for op in ("linalg.inv", "linalg.solve", "linalg.svd", "linalg.qr"):  # refused by the op's rule, everywhere
        assert REGISTRY[op].dtype_rule == "lapack" and op not in why, op


def test_claims_follow_what_the_decompositions_run(fresh: Any) -> None:
    """The bfloat16 claims agree with what runs (an H100 found each of these claimed one way, running the other):
    composites computing a half in float32 are claimed, an op whose part runs at bfloat16 and is refused is not."""
    why = fresh.bfloat16_refusals(0)
    # linalg_eig / linalg_lu_factor run on the float32 copy of a half; searchsorted on embedding_bag's int64
    # offsets; multinomial's topk on float64 keys
    for op in ("linalg.eig", "linalg.eigvals", "linalg.inv_ex", "linalg.lu_factor_ex", "linalg.solve_ex",
               "embedding_bag", "multinomial"):
        assert op not in why, (op, why.get(op))
        assert all(u.partition(":")[0] not in ("linalg_eig", "linalg_lu_factor") or u.endswith(":float")
                   for u in uses_of(REGISTRY[op], ferro.bfloat16)), op
    assert "searchsorted" in why["bucketize"]  # bucketize searches at its input's dtype
    assert "cumprod" in why["prod"]
    # polygamma of order >= 1 is Hurwitz's zeta: cupyx.scipy.special.zeta, rounded back to bfloat16
    assert "polygamma" not in why and "zeta" not in why and callable(fresh.kernels(0)["zeta"])


def test_every_claimed_elementwise_op_has_a_bfloat16_loop_in_cupy(fresh: Any, cupy: Any) -> None:
    """Read from the ufuncs' own ``.types``: a claim without an 'E' loop, or an 'E' loop refused, fails."""
    refused = fresh.unsupported(0)
    funcs = {**{op: (fn, "E") for op, fn in UNARY_FUNCS.items()}, **{op: (fn, "EE") for op, fn in BINARY_FUNCS.items()}}
    checked = 0
    for op in _bf16_ops():
        if op not in funcs or not isinstance(getattr(cupy, funcs[op][0]), cupy.ufunc):
            continue
        fn, inputs = funcs[op]
        assert (op not in refused) == _has_loop(getattr(cupy, fn).types, inputs), (op, fn)
        checked += 1
    assert checked >= 40
    assert "round" not in refused and not isinstance(cupy.round, cupy.ufunc)  # round: a generated kernel


def test_claimed_reductions_have_bfloat16_loops(fresh: Any) -> None:
    from cupy._core import _routines_logic, _routines_math, _routines_statistics
    refused = fresh.unsupported(0)
    for op, reduction in (("sum", _routines_math._sum_keep_dtype), ("amax", _routines_statistics.amax),
                          ("amin", _routines_statistics.amin)):
        assert "E" in _reduction_inputs(reduction) and op not in refused, op
    # the prod reduction has its loop, but ferro's prod op (a composite) runs cumprod, which is not claimed
    assert "E" in _reduction_inputs(_routines_math._prod_auto_dtype)
    assert "cumprod" in fresh.bfloat16_refusals(0)["prod"] and "cumprod" in refused
    # any / all (CuPy 14.2: no 'E' loop) may widen bfloat16 exactly to float32: the result is bool
    for op, reduction in (("any", _routines_logic.any), ("all", _routines_logic.all)):
        loops = _reduction_inputs(reduction)
        assert ("E" in loops or "f" in loops) and op not in refused


def test_the_loop_check_follows_cupys_resolution(cupy: Any) -> None:
    from ferro_cuda._bfloat16 import Loop
    assert Loop("cupy.add", "EE").check(cupy, BF16) is None
    assert Loop("cupy.isnan", "E").check(cupy, BF16) is None
    from cupy._core.core import _round_ufunc
    from cupy._sorting.search import _where_ufunc
    # CuPy 14.2 has neither loop (hence ferro's int16-view where): bfloat16 would run, and return, float32
    for path, fn, inputs, fallback in (("cupy._core.core._round_ufunc", _round_ufunc, "Eq", "fq->f"),
                                       ("cupy._sorting.search._where_ufunc", _where_ufunc, "?EE", "?ff->f")):
        why = Loop(path, inputs).check(cupy, BF16)
        assert why is None if _has_loop(fn.types, inputs) else fallback in why, path
    # the special functions compute in float32; only a kernel that rounds back may use them
    assert Loop("cupyx.scipy.special.erf", "E").check(cupy, BF16) is not None
    assert Loop("cupyx.scipy.special.erf", "E", rounded=True).check(cupy, BF16) is None
    assert "no type table" in Loop("cupy.round", "E").check(cupy, BF16)  # a plain function: refused


def test_every_kernel_of_a_bfloat16_op_is_recorded(fresh: Any) -> None:
    """An op must never be refused only because nobody wrote down what its kernel runs on CuPy."""
    from ferro_cuda._bfloat16 import REQUIREMENTS
    table = fresh.kernels(0)
    unknown = {op: why for op, why in fresh.bfloat16_refusals(0).items() if "no record" in why}
    assert not unknown, unknown
    for op in _bf16_ops():
        kernels = REGISTRY[op].kernels
        if all(k in table for k in kernels):
            assert all(k in REQUIREMENTS for k in kernels) or REGISTRY[op].decomposition, op


def test_generated_kernels_claim_only_ops_with_floating_c(cupy: Any) -> None:
    from ferro_cuda._bfloat16 import GENERATED, REQUIREMENTS, Generated, kernel_refusals
    for op in GENERATED:
        assert REQUIREMENTS[op] == (Generated(op),) and kernel_refusals(cupy, BF16, op) == []
    assert "no floating expression" in Generated("bitwise_not").check(cupy, BF16)
    assert "no floating expression" in Generated("no_such_op").check(cupy, BF16)


def test_fused_ops_are_judged_by_their_decomposition(fresh: Any) -> None:
    """core offers bfloat16 to the fused kernels (the cpu backend computes them in float32); ferro's CUDA C
    kernels take float32 and float64 only, so on cuda bfloat16 softmax/gelu/layer_norm run the decomposition,
    which is claimed wherever its parts are."""
    from ferro._ops.fused import FUSED_OPS
    from ferro_cuda._bfloat16 import kernel_refusals
    why = fresh.bfloat16_refusals(0)
    kernels = fresh.kernels(0)
    unclaimed = {op for op, reason in why.items() if "the decomposition runs" not in reason}
    assert kernel_refusals(fresh.xp, BF16, "softmax")  # the CUDA C kernel itself has no bfloat16
    for op in FUSED_OPS:
        used = [u.partition(":")[0] for u in uses_of(REGISTRY[op], ferro.bfloat16)]
        if ferro.bfloat16 not in REGISTRY[op].kernel_dtypes:  # batch_norm's kernels update running stats in place
            assert op not in why or "the decomposition runs" not in why[op], op
            continue
        own = all(k in kernels for k in REGISTRY[op].kernels)  # cuda has the op's fused kernels
        assert ("the decomposition runs" in why.get(op, "")) == own, (op, why.get(op))
        if not own:
            assert (op in why) == any(u in unclaimed for u in used), (op, used)
    for op in ("softmax", "log_softmax", "layer_norm", "gelu", "cross_entropy"):
        used = [u.partition(":")[0] for u in uses_of(REGISTRY[op], ferro.bfloat16)]
        assert not any(u in unclaimed for u in used), (op, used)  # the decomposition it runs is claimed


def test_fused_kernels_refusing_bfloat16_leave_their_ops_to_the_decomposition(fresh: Any,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Were core to bind the fused kernels for bfloat16, the resolver would find that ferro's CUDA C kernels
    refuse it: the op is listed in ``unsupported`` (so its kernels are not bound) and runs its decomposition."""
    from ferro._ops import fused
    from ferro_cuda._bfloat16 import refused_ops, resolutions
    for op in fused.KERNELS:
        monkeypatch.setattr(REGISTRY[op], "kernel_dtypes", REGISTRY[op].kernel_dtypes | {ferro.bfloat16})
    why = refused_ops(fresh.xp, BF16, fresh.kernels(0))
    got = resolutions(fresh.xp, BF16, fresh.kernels(0))
    for op in ("softmax", "layer_norm", "gelu", "cross_entropy"):
        assert "built for float32, float64 only" in why[op], op
        assert got[op].route == "decomposition" and got[op].refused, op


def test_bfloat16_kernels_with_numpy_standing_in_for_cupy() -> None:
    """The where / matmul / guard logic of ferro_cuda._bfloat16, run on NumPy arrays of ml_dtypes' bfloat16."""
    from ferro_cuda._bfloat16 import bfloat16_kernels

    def refuse(kernel: str, reason: str) -> Exception:
        return UnsupportedOperationError(kernel, ferro.bfloat16, "cuda", "cuda:0", reason=reason)
    generic = {"where": np.where, "matmul": np.matmul, "linalg_inv": np.linalg.inv, "add": np.add}
    k = bfloat16_kernels(np, BF16, generic, refuse)
    assert set(k) == {"where", "matmul", "linalg_inv"}  # add is a registry op: refused, if at all, by unsupported
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((3, 4)).astype(BF16), rng.standard_normal((3, 4)).astype(BF16)
    c = rng.random((3, 4)) < 0.5
    got = k["where"](c, x, y)
    assert got.dtype == BF16 and np.array_equal(got.view(np.int16), np.where(c, x, y).view(np.int16))
    assert k["where"](c, 1.0, 2.0).dtype == np.float64  # other dtypes: the generic kernel
    a, b = rng.standard_normal((2, 3, 8)).astype(BF16), rng.standard_normal((8, 5)).astype(BF16)
    got = k["matmul"](a, b)
    want = (a.astype(np.float64) @ b.astype(np.float64)).astype(BF16)
    assert got.dtype == BF16 and got.shape == (2, 3, 5)
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=1e-2, atol=1e-2)
    with pytest.raises(UnsupportedOperationError, match="cuSOLVER"):
        k["linalg_inv"](np.eye(3, dtype=BF16))
    np.testing.assert_allclose(k["linalg_inv"](np.eye(3) * 2), np.eye(3) / 2)  # float64 runs


@pytest.mark.parametrize("how", ["no ml_dtypes", "CuPy 13"])
def test_without_cupys_bfloat16_nothing_is_claimed(cupy: Any, monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    from ferro_cuda._backend import CudaBackend
    if how == "no ml_dtypes":
        monkeypatch.setitem(sys.modules, "ml_dtypes", None)  # import ml_dtypes raises ImportError
    else:
        monkeypatch.setattr(cupy, "__version__", "13.6.0")
    backend = CudaBackend()
    assert backend.cupy_bfloat16() is None
    dtypes = backend.dtypes(0)
    assert ferro.bfloat16 not in dtypes and ferro.float16 in dtypes
    assert backend.unsupported(0) == {} and backend.bfloat16_refusals(0) == {}
    with pytest.raises(TypeError, match="bfloat16"):
        backend.native_dtype(ferro.bfloat16)
    table = backend.kernels(0)
    assert table["matmul"].__wrapped__ is cupy.matmul  # no bfloat16 wrappers (float16's widening only)
    # (not backend.supports(): it answers for the device "cuda:0", bound to the registered backend, which on a
    # GPU machine is the real one with bfloat16, not this simulated instance; its dtypes above are what it claims)


# -- on a GPU: bfloat16 on cuda against bfloat16 on cpu ---------------------------------------------------


@pytest.fixture(scope="module")
def gpu_bf16() -> Any:
    if "cuda" not in ferro.backends.installed():
        pytest.skip("ferro-cuda is not installed")
    backend = ferro.backends.get("cuda")
    avail = backend.availability()
    if not avail:
        pytest.skip(f"no usable CUDA GPU here: {avail.reason}")
    if backend.cupy_bfloat16() is None:
        pytest.skip("this CuPy has no bfloat16 (it needs CuPy 14 and ml_dtypes)")
    return backend


def _pair(shape: tuple[int, ...], seed: int, low: float = -3.0, high: float = 3.0) -> tuple[Any, Any]:
    """The same bfloat16 tensor on cpu and on cuda."""
    a = np.random.default_rng(seed).uniform(low, high, shape).astype(np.float32)
    on_cpu = ferro.tensor(a).to(ferro.bfloat16)
    return on_cpu, on_cpu.to("cuda")


def _same(got: Any, want: Any, what: str, rtol: float, atol: float) -> None:
    assert got.dtype is ferro.bfloat16 and got.device.type == "cuda", what
    assert_close(got.cpu().to(ferro.float64), want.to(ferro.float64).numpy(), rtol=rtol, atol=atol, msg=what)


@pytest.mark.parametrize("shapes", [((256, 512), (512, 128)), ((4096 // 8, 64), (64, 4096 // 8)), ((512,), (512, 32)),
                                    ((4, 32, 64), (64, 16)), ((3, 1, 16, 8), (2, 8, 24))],
                         ids=["2d", "wide", "vector-matrix", "batched", "broadcast-batched"])
def test_gpu_bfloat16_matmul_matches_cpu(gpu_bf16: Any, shapes: tuple[tuple[int, ...], ...]) -> None:
    (xa, xc), (ya, yc) = _pair(shapes[0], 1), _pair(shapes[1], 2)
    got, want = xc @ yc, xa @ ya
    # float32 accumulation on both sides; the output is rounded to bfloat16 once (half an ulp, 2^-9 relative)
    scale = float(want.to(ferro.float32).abs().max())
    _same(got, want, f"matmul {shapes}", rtol=1e-2, atol=1e-2 * scale)
    assert gpu_bf16.supports("matmul", ferro.bfloat16)


ELEMENTWISE: list[tuple[str, Any, tuple[float, float]]] = [
    ("add", lambda x, y: x + y, (-3, 3)), ("mul", lambda x, y: x * y, (-3, 3)), ("div", lambda x, y: x / y, (0.5, 3)),
    ("exp", lambda x, y: ferro.exp(x), (-3, 3)), ("sqrt", lambda x, y: ferro.sqrt(x), (0, 9)),
    ("tanh", lambda x, y: ferro.tanh(x), (-3, 3)), ("relu", lambda x, y: ferro.relu(x), (-3, 3)),
    ("where", lambda x, y: ferro.where(x > 0, x, y), (-3, 3)), ("maximum", lambda x, y: ferro.maximum(x, y), (-3, 3)),
    ("scalar", lambda x, y: x * 0.5 + 1, (-3, 3)), ("erf", lambda x, y: ferro.erf(x), (-2, 2)),
    ("softmax", lambda x, y: ferro.softmax(x, -1), (-3, 3)),
    ("layer_norm", lambda x, y: ferro.nn.functional.layer_norm(x, (x.shape[-1],)), (-3, 3)),
    ("gelu", lambda x, y: ferro.nn.functional.gelu(x), (-3, 3)),
    # kernels generated from the ops' expressions (ferro_cuda._bfloat16.GENERATED)
    ("round", lambda x, y: ferro.round(x), (-30, 30)),  # not x * 10: its bfloat16 product rounds first
    ("sigmoid", lambda x, y: ferro.sigmoid(x), (-6, 6)),
    ("silu", lambda x, y: ferro.nn.functional.silu(x), (-6, 6)),
]


@pytest.mark.parametrize("name, fn, domain", ELEMENTWISE, ids=[e[0] for e in ELEMENTWISE])
def test_gpu_bfloat16_elementwise_matches_cpu(gpu_bf16: Any, name: str, fn: Any, domain: tuple[float, float]) -> None:
    (xa, xc), (ya, yc) = _pair((64, 48), 3, *domain), _pair((64, 48), 4, *domain)
    f64 = ferro.float64
    # a few bfloat16 roundings (2^-9 each) inside the composites: the conformance suite's bfloat16 tolerance
    _same(fn(xc, yc), fn(xa.to(f64), ya.to(f64)), name, rtol=2e-2, atol=2e-2)


#: (name, the ferro call, the NumPy call). The reference is float64 NumPy on the same bfloat16 values, not
#: cpu: ferro-cpu sums bfloat16 in bfloat16 (12288 values near 1 add up to 512 there).
REDUCTIONS: list[tuple[str, Any, Any]] = [
    ("sum", lambda x: x.sum(), np.sum), ("sum dim", lambda x: x.sum(1), lambda a: a.sum(1)),
    ("mean", lambda x: x.mean(0), lambda a: a.mean(0)), ("amax", lambda x: x.amax(1), lambda a: a.max(1)),
    ("amin", lambda x: x.amin(), np.min),
]  # not prod: its decomposition is a cumprod, which cuda refuses at bfloat16 (explain says so)


@pytest.mark.parametrize("name, fn, ref", REDUCTIONS, ids=[r[0] for r in REDUCTIONS])
def test_gpu_bfloat16_reductions_match_numpy(gpu_bf16: Any, name: str, fn: Any, ref: Any) -> None:
    xa, xc = _pair((128, 96), 5, 0.5, 1.5)
    got = fn(xc)
    want = np.asarray(ref(xa.to(ferro.float64).numpy())).astype(BF16).astype(np.float32)  # rounded once
    assert got.dtype is ferro.bfloat16, name
    # CuPy accumulates bfloat16 in float32: one rounding of the result, half an ulp of bfloat16
    assert_close(got.cpu().to(ferro.float32), want, rtol=8e-3, atol=0, msg=name)


def test_gpu_bfloat16_argmax_and_any_match_cpu(gpu_bf16: Any) -> None:
    xa, xc = _pair((32, 40), 6)
    assert xc.argmax(1).cpu().tolist() == xa.argmax(1).tolist()
    assert bool((xc > 2.5).any()) == bool((xa > 2.5).any())


@pytest.mark.parametrize("name, fn", [("sort", lambda x: ferro.sort(x).values),
                                      ("linalg.inv", lambda x: ferro.linalg.inv(x)), ("cumsum", lambda x: x.cumsum(0))])
def test_gpu_bfloat16_refused_ops_say_so(gpu_bf16: Any, name: str, fn: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FERRO_FALLBACK", raising=False)
    _, xc = _pair((4, 4), 7)
    assert not gpu_bf16.supports(name, ferro.bfloat16)
    # linalg.inv: refused by its dtype rule on every backend (LAPACK's dtypes), the others by cuda's kernels
    with pytest.raises(ferro.errors.DTypeError if name == "linalg.inv" else UnsupportedOperationError, match=name):
        fn(xc)
