"""Fused groups of elementwise ops (``ferro.backends.fusion``) against eager execution, op by op.

Each chain runs eagerly on ferro tensors, step by step, which records it as a
``FusedGroup`` (every step's dtype as eager gave it); the group is then lowered on
the same device (``lower``: cpu's blocked run, opencl's generated kernel, or the
replay through the kernel table on the ``prims`` test backend, which has no hook)
and its outputs compared with eager's within the dtype's tolerances
(``ferro.testing.assert_close``). Inputs cover broadcasting, 0-d tensors,
non-contiguous views, mixed dtypes, scalars that wrap into integer dtypes and the
16-bit floats. The CUDA kernels of the same groups are compiled with NVRTC (no GPU
needed).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import ferro
from ferro.backends.fusion import Const, FusedGroup, Input, Reduce, Ref, Step, lower, plan, replay
from ferro.testing import assert_close

BACKENDS = ("cpu", "opencl", "prims")
rng = np.random.default_rng(7)


class Recorder:
    """Runs ops eagerly on ferro tensors and records them as the steps of a fused group."""

    def __init__(self, *inputs: ferro.Tensor) -> None:
        self.inputs = inputs
        self.values: list[ferro.Tensor] = list(inputs)
        self.steps: list[Step] = []

    def __call__(self, op: str, *operands: Any) -> Ref:
        ops = tuple(o if isinstance(o, Ref) else Const(o) for o in operands)
        args = [self.values[o.index] if isinstance(o, Ref) else o.value for o in ops]
        out = getattr(ferro.ops, op)(*args)
        self.steps.append(Step(op, ops, out.dtype))
        self.values.append(out)
        return Ref(len(self.values) - 1)

    def group(self, *outputs: Ref) -> FusedGroup:
        shape = tuple(np.broadcast_shapes(*(tuple(v.shape) for v in self.values)))
        return FusedGroup(tuple(Input(tuple(t.shape), t.dtype) for t in self.inputs), shape, tuple(self.steps),
                          tuple(o.index for o in outputs))


def _device(name: str) -> str:
    if name not in ferro.backends.installed():
        pytest.skip(f"backend {name} is not installed")
    avail = ferro.backends.get(name).availability()
    if not avail:
        pytest.skip(f"backend {name} is not available here: {avail.reason}")
    return name


def _tensor(a: np.ndarray, dtype: ferro.DType, device: str) -> ferro.Tensor:
    return ferro.tensor(a, device=device).to(dtype)


def _check(rec: Recorder, outputs: tuple[Ref, ...], device: str) -> FusedGroup:
    """Lower the recorded group on ``device``, run it on the inputs, compare with the eager values."""
    group = rec.group(*outputs)
    dev = ferro.device(device)
    got = lower(group, dev)(*(t._data for t in rec.inputs))
    assert len(got) == len(outputs)
    for k, (arr, o) in enumerate(zip(got, outputs)):
        want = rec.values[o.index].expand(*group.shape)
        assert tuple(arr.shape) == group.shape
        assert_close(dev.backend.to_numpy(arr), want.cpu(), msg=f"output {k} (value {o.index}) on {device}")
    dev.backend.synchronize(dev.index)
    return group


def _float_chain(dtype: ferro.DType, device: str) -> tuple[Recorder, tuple[Ref, ...]]:
    x = _tensor(rng.standard_normal((6, 33)), dtype, device)
    b = _tensor(rng.standard_normal(33), dtype, device)  # broadcast along rows
    s = _tensor(np.array(0.75), dtype, device)  # a 0-d tensor
    rec = Recorder(x, b, s)
    t = rec("mul", Ref(0), 1.5)
    t = rec("add", t, Ref(1))
    t = rec("sub", t, Ref(2))
    u = rec("sigmoid", t)
    m = rec("gt", t, 0)
    w = rec("where", m, u, 0.1)
    e = rec("exp", rec("neg", rec("abs", w)))
    d = rec("div", e, rec("add", rec("square", t), 1.0))
    r = rec("maximum", d, rec("tanh", Ref(1)))
    return rec, (r, m, w)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_float_chain_matches_eager(backend: str, dtype: str) -> None:
    device = _device(backend)
    dt = getattr(ferro, dtype)
    if dt not in ferro.backends.get(backend).dtypes(0):
        pytest.skip(f"{backend} has no {dtype} here")
    rec, outs = _float_chain(dt, device)
    _check(rec, outs, device)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", ["int32", "int64", "uint8", "int8"])
def test_integer_chain_matches_eager(backend: str, dtype: str) -> None:
    device = _device(backend)
    dt = getattr(ferro, dtype)
    a = _tensor(rng.integers(0, 100, (5, 40)), dt, device)
    b = _tensor(rng.integers(1, 9, (5, 40)), dt, device)
    rec = Recorder(a, b)
    t = rec("add", Ref(0), Ref(1))
    t = rec("mul", t, 3)
    t = rec("sub", t, 300)  # wraps into uint8 / int8 as eager does
    q = rec("floor_divide", t, Ref(1))
    r = rec("remainder", t, 7)
    big = rec("maximum", q, r)
    flag = rec("logical_and", rec("gt", big, 5), rec("ne", r, 0))
    _check(rec, (big, flag, q), device)


@pytest.mark.parametrize("backend", BACKENDS)
def test_mixed_dtypes_promote_inside_the_group(backend: str) -> None:
    device = _device(backend)
    i = _tensor(rng.integers(-5, 5, (4, 7)), ferro.int32, device)
    f = _tensor(rng.standard_normal((4, 7)), ferro.float32, device)
    c = _tensor(rng.standard_normal((4, 7)) > 0, ferro.bool, device)
    rec = Recorder(i, f, c)
    t = rec("add", Ref(0), Ref(1))  # int32 + float32 -> float32
    k = rec("mul", Ref(0), 2.5)  # int32 * float -> float32 (default dtype)
    n = rec("logical_or", Ref(2), rec("lt", Ref(0), 0))
    w = rec("where", n, t, k)
    h = rec("add", Ref(2), Ref(2))  # bool + bool: bool (logical or, as PyTorch)
    _check(rec, (w, n, h, Ref(0)), device)  # an input as an output too


@pytest.mark.parametrize("backend", BACKENDS)
def test_non_contiguous_inputs(backend: str) -> None:
    device = _device(backend)
    base = _tensor(rng.standard_normal((9, 6)), ferro.float32, device)
    x = base.t()  # (6, 9), not contiguous
    y = _tensor(rng.standard_normal((6, 1)), ferro.float32, device)
    rec = Recorder(x, y)
    t = rec("mul", rec("add", Ref(0), Ref(1)), Ref(0))
    _check(rec, (t, rec("exp", Ref(1))), device)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_large_group_runs_in_several_blocks(backend: str) -> None:
    # more elements than one block of the cpu's blocked run, and a shape whose rows are not a multiple of it
    device = _device(backend)
    x = _tensor(rng.standard_normal((3, 70001)), ferro.float32, device)
    b = _tensor(rng.standard_normal((3, 1)), ferro.float32, device)
    rec = Recorder(x, b)
    t = rec("relu", rec("sub", Ref(0), Ref(1)))
    _check(rec, (rec("log1p", t), t), device)
    rec2 = Recorder(x)
    _check(rec2, (rec2("relu", rec2("sqrt", rec2("abs", Ref(0)))),), device)


def test_a_backend_without_the_hook_replays() -> None:
    _device("prims")
    b = ferro.backends.get("prims")
    assert b.compile_fused(FusedGroup((Input((2,), ferro.float32),), (2,), (Step("exp", (Ref(0),),
                                                                               ferro.float32),), (1,))) is None


def test_replay_is_eager_exactly() -> None:
    rec, outs = _float_chain(ferro.float32, "cpu")
    group = rec.group(*outs)
    got = replay(group, ferro.device("cpu")._kernels)(*(t._data for t in rec.inputs))
    for arr, o in zip(got, outs):
        np.testing.assert_array_equal(arr, rec.values[o.index].expand(*group.shape).numpy())


def test_opencl_builds_one_program_per_signature() -> None:
    _device("opencl")
    rt = ferro.backends.get("opencl").runtime(ferro.device("opencl").index)
    x = _tensor(rng.standard_normal(50), ferro.float32, "opencl")

    def group(scale: float) -> tuple[Recorder, tuple[Ref, ...]]:
        rec = Recorder(x)
        return rec, (rec("exp", rec("mul", Ref(0), scale)),)
    _check(*group(0.5), "opencl")
    built = rt.builds
    _check(*group(0.25), "opencl")  # a new learning rate, say: the same program with another argument
    _check(*group(3.0), "opencl")
    assert rt.builds == built


def test_opencl_hook_declines_what_it_cannot_generate() -> None:
    # ferro_ifloordiv at int32 and at int64 in one program: two definitions of one function in OpenCL C
    _device("opencl")
    a = _tensor(rng.integers(-9, 9, 12), ferro.int32, "opencl")
    b = _tensor(rng.integers(-9, 9, 12), ferro.int64, "opencl")
    rec = Recorder(a, b)
    outs = (rec("floor_divide", Ref(0), 4), rec("floor_divide", Ref(1), 3))
    assert ferro.backends.get("opencl").compile_fused(rec.group(*outs)) is None
    _check(rec, outs, "opencl")  # replayed


@pytest.mark.parametrize("backend", ["cpu", "opencl"])
def test_integer_division_by_zero_raises(backend: str) -> None:
    device = _device(backend)
    a = _tensor(np.arange(6), ferro.int32, device)
    z = _tensor(np.array([1, 2, 0, 1, 1, 1]), ferro.int32, device)
    group = FusedGroup((Input((6,), ferro.int32), Input((6,), ferro.int32)), (6,),
                       (Step("add", (Ref(0), Const(1)), ferro.int32), Step("floor_divide", (Ref(2), Ref(1)),
                                                                          ferro.int32)), (3,))
    dev = ferro.device(device)
    with pytest.raises(ZeroDivisionError):
        lower(group, dev)(a._data, z._data)
        dev.backend.synchronize(dev.index)


@pytest.mark.parametrize(("group", "message"), [
    (FusedGroup((Input((2,), ferro.float32),), (2,), (Step("sum", (Ref(0),), ferro.float32),), (1,)),
     "not an elementwise op"),
    (FusedGroup((Input((2,), ferro.float32),), (2,), (Step("exp", (Ref(1),), ferro.float32),), (1,)),
     "not an input or an earlier step"),
    (FusedGroup((Input((2,), ferro.int32),), (2,), (Step("add", (Ref(0), Const(1)), ferro.float32),), (1,)),
     "eager execution gives int32"),
    (FusedGroup((Input((2,), ferro.float32),), (2,), (Step("add", (Ref(0),), ferro.float32),), (1,)),
     "takes 2 operands"),
    (FusedGroup((Input((2,), ferro.float32),), (2,), (Step("exp", (Ref(0),), ferro.float32),), (5,)),
     "no value of the group"),
    (FusedGroup((Input((2,), ferro.float32),), (2,), (Step("where", (Ref(0), Ref(0), Const(0.0)), ferro.float32),),
                (1,)), "condition must be a bool value"),
])
def test_bad_groups_are_refused_naming_the_step(group: FusedGroup, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        plan(group)
    with pytest.raises(ValueError, match=message):
        lower(group, "cpu")


# -- CUDA: the same groups' kernels compile (NVRTC, no GPU) -------------------------------------------------

def _groups() -> list[tuple[str, Callable[[], tuple[Recorder, tuple[Ref, ...]]]]]:
    def floats(dtype: ferro.DType) -> Callable[[], tuple[Recorder, tuple[Ref, ...]]]:
        return lambda: _float_chain(dtype, "cpu")

    def integers() -> tuple[Recorder, tuple[Ref, ...]]:
        a, b = (_tensor(rng.integers(1, 9, 8), ferro.int64, "cpu") for _ in range(2))
        rec = Recorder(a, b)
        q = rec("floor_divide", Ref(0), Ref(1))
        return rec, (rec("pow", q, 2), rec("logical_not", rec("eq", q, 1)))
    return [("float32", floats(ferro.float32)), ("float64", floats(ferro.float64)),
            ("float16", floats(ferro.float16)), ("bfloat16", floats(ferro.bfloat16)), ("int64", integers)]


@pytest.mark.parametrize("strided", [False, True], ids=["contiguous", "strided"])
@pytest.mark.parametrize(("name", "make"), _groups(), ids=[n for n, _ in _groups()])
def test_cuda_fused_kernel_compiles(name: str, make: Any, strided: bool) -> None:
    fusion = pytest.importorskip("ferro_cuda._fusion", reason="ferro-cuda is not installed")
    kernels = pytest.importorskip("ferro_cuda.kernels")
    pytest.importorskip("cupy", reason="CuPy is not installed (pip install 'ferro-cuda[cupy]')")
    rec, outs = make()
    fk = fusion.fused_kernel_source(rec.group(*outs), strided)
    ptx = kernels.compile_ptx(fk.source, name=f"fused_{name}.cu")  # warnings fail too
    assert f".entry {fk.entry}(" in ptx


def test_a_broken_cuda_fused_kernel_fails_to_compile() -> None:
    fusion = pytest.importorskip("ferro_cuda._fusion", reason="ferro-cuda is not installed")
    kernels = pytest.importorskip("ferro_cuda.kernels")
    pytest.importorskip("cupy", reason="CuPy is not installed (pip install 'ferro-cuda[cupy]')")
    rec, outs = _float_chain(ferro.float32, "cpu")
    fk = fusion.fused_kernel_source(rec.group(*outs))
    with pytest.raises(kernels.KernelCompileError):
        kernels.compile_ptx(fk.source.replace("out0[i] = ", "out0[i] = undefined_name + "), name="broken.cu")


# -- reductions at a group's end ----------------------------------------------------------------------------

@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", ["float32", "float16", "int32"])
def test_trailing_reductions_match_eager(backend: str, dtype: str) -> None:
    # softmax's pieces: a row max and a row sum of a chain, a total; bool values summed and maxed
    device = _device(backend)
    dt = getattr(ferro, dtype)
    x = _tensor(rng.standard_normal((5, 3, 37)) * 4, dt, device)
    b = _tensor(rng.standard_normal(37), dt, device)
    rec = Recorder(x, b)
    v = rec("mul", rec("add", Ref(0), Ref(1)), 2)
    pos = rec("gt", v, 0)
    values = rec.values
    want = [values[v.index].sum(2, keepdim=True), values[v.index].amax((1, 2)), values[v.index].amax(),
            values[pos.index].sum(), values[pos.index].amax(2)]
    sum_dt = ferro.int64 if dt is ferro.int32 else dt
    group = rec.group(v)._replace(reductions=(
        Reduce("sum", v.index, (2,), True, sum_dt), Reduce("amax", v.index, (1, 2), False, dt),
        Reduce("amax", v.index, None, False, dt), Reduce("sum", pos.index, None, False, ferro.int64),
        Reduce("amax", pos.index, (2,), False, ferro.bool)))
    dev = ferro.device(device)
    got = lower(group, dev)(x._data, b._data)
    assert len(got) == 1 + len(want)
    assert_close(dev.backend.to_numpy(got[0]), values[v.index].cpu())
    for k, (arr, w) in enumerate(zip(got[1:], want)):
        assert_close(dev.backend.to_numpy(arr), w.cpu(), msg=f"reduction {k} on {device}")


@pytest.mark.parametrize("backend", BACKENDS)
def test_leading_and_broadcast_reductions_match_eager(backend: str) -> None:
    # over a leading dim (run after the group's kernel), and of an input broadcast along the reduced dim
    device = _device(backend)
    x = _tensor(rng.standard_normal((6, 9)), ferro.float32, device)
    b = _tensor(rng.standard_normal(9), ferro.float32, device)
    rec = Recorder(x, b)
    e = rec("exp", rec("sub", Ref(0), Ref(1)))
    group = rec.group()._replace(reductions=(Reduce("sum", e.index, (0,), False, ferro.float32),
                                             Reduce("sum", 1, (0,), True, ferro.float32),
                                             Reduce("amax", 1, (1,), False, ferro.float32)))
    dev = ferro.device(device)
    got = lower(group, dev)(x._data, b._data)
    want = [rec.values[e.index].sum(0), b.expand(6, 9).sum(0, keepdim=True), b.expand(6, 9).amax(1)]
    for arr, w in zip(got, want):
        assert_close(dev.backend.to_numpy(arr), w.cpu())


@pytest.mark.parametrize(("reduce", "message"), [
    (Reduce("prod", 1, None, False, ferro.float32), "may end with sum, amax only"),
    (Reduce("sum", 7, None, False, ferro.float32), "no value of the group"),
    (Reduce("sum", 1, (1, 0), False, ferro.float32), "not sorted dims"),
    (Reduce("sum", 1, (2,), False, ferro.float32), "not sorted dims"),
    (Reduce("sum", 1, None, False, ferro.float16), "eager execution gives float32"),
])
def test_bad_reductions_are_refused(reduce: Reduce, message: str) -> None:
    group = FusedGroup((Input((2, 3), ferro.float32),), (2, 3), (Step("exp", (Ref(0),), ferro.float32),), (),
                       (reduce,))
    with pytest.raises(ValueError, match=message):
        lower(group, "cpu")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("shape", [(7, 50), (3, 4, 5), (2, 70001), (40001,)], ids=str)
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "int64"])
def test_reductions_over_one_set_of_trailing_dims(backend: str, shape: tuple[int, ...], dtype: str) -> None:
    # the case each backend fuses: short rows several to a block, long rows in blocks, a whole tensor
    device = _device(backend)
    dt = getattr(ferro, dtype)
    if dt not in ferro.backends.get(backend).dtypes(0):
        pytest.skip(f"{backend} has no {dtype} here")
    x = _tensor(rng.standard_normal(shape) * 3, dt, device)
    b = _tensor(rng.standard_normal(shape[-1]), dt, device)
    rec = Recorder(x, b)
    v = rec("add", rec("mul", Ref(0), 0.5 if dt.is_floating_point else 3), Ref(1))
    pos = rec("ge", v, 0)
    dims = tuple(range(1, len(shape))) or None
    values = rec.values
    red = values[v.index].sum(dims, keepdim=True) if dims else values[v.index].sum()
    group = rec.group(pos)._replace(reductions=(
        Reduce("sum", v.index, dims, dims is not None, red.dtype),
        Reduce("amax", v.index, dims, False, dt), Reduce("sum", pos.index, dims, False, ferro.int64)))
    want = [values[pos.index], red, values[v.index].amax(dims) if dims else values[v.index].amax(),
            values[pos.index].sum(dims) if dims else values[pos.index].sum()]
    dev = ferro.device(device)
    got = lower(group, dev)(x._data, b._data)
    tol = {"rtol": 1e-5, "atol": 1e-4} if dt is ferro.float32 else {}  # a sum's order of additions differs
    for k, (arr, w) in enumerate(zip(got, want)):
        assert_close(dev.backend.to_numpy(arr), w.cpu(), msg=f"result {k} on {device}", **(tol if k == 1 else {}))


@pytest.mark.parametrize("backend", BACKENDS)
def test_zero_dim_values_promote_weakly(backend: str) -> None:
    # a float64 0-d tensor, and a step on it alone (0-d too), meet a float32 tensor: float32, as eager
    device = _device(backend)
    x = _tensor(rng.standard_normal((3, 4)), ferro.float32, device)
    s = _tensor(np.array(1.25), ferro.float64, device) if ferro.float64 in ferro.backends.get(backend).dtypes(0) \
        else _tensor(np.array(7), ferro.int64, device)
    rec = Recorder(x, s)
    t = rec("mul", Ref(1), 2)
    _check(rec, (rec("add", Ref(0), t), t), device)


@pytest.mark.parametrize("backend", ["cpu", "opencl"])
def test_a_compiled_group_refuses_other_inputs(backend: str) -> None:
    device = _device(backend)
    group = FusedGroup((Input((3,), ferro.float32),), (3,), (Step("exp", (Ref(0),), ferro.float32),), (1,))
    run = lower(group, device)
    for wrong, what in [(ferro.ones(4, device=device), "shape"), (ferro.ones(3, dtype=ferro.float64, device=device)
                                                                  if backend == "cpu" else
                                                                  ferro.ones(3, dtype=ferro.int32, device=device),
                                                                  "dtype")]:
        with pytest.raises(TypeError, match="fused group input 0: expected shape"):
            run(wrong._data)
    with pytest.raises(TypeError, match="takes 1 input arrays, got 2"):
        run(ferro.ones(3, device=device)._data, ferro.ones(3, device=device)._data)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("shape", [(9, 130), (50001,)], ids=str)
def test_reductions_of_contiguous_inputs(backend: str, shape: tuple[int, ...]) -> None:
    # inputs contiguous with the group's shape: OpenCL's kernel reads them at their flat index
    device = _device(backend)
    x = _tensor(rng.standard_normal(shape), ferro.float32, device)
    y = _tensor(rng.standard_normal(shape), ferro.float32, device)
    rec = Recorder(x, y)
    d = rec("mul", rec("sub", Ref(0), Ref(1)), rec("sub", Ref(0), Ref(1)))
    dims = (len(shape) - 1,)
    group = rec.group()._replace(reductions=(Reduce("sum", d.index, dims, False, ferro.float32),
                                             Reduce("amax", d.index, dims, True, ferro.float32)))
    dev = ferro.device(device)
    got = lower(group, dev)(x._data, y._data)
    dd = rec.values[d.index]
    assert_close(dev.backend.to_numpy(got[0]), dd.sum(dims).cpu(), rtol=1e-5, atol=1e-4)
    assert_close(dev.backend.to_numpy(got[1]), dd.amax(dims, keepdim=True).cpu())


@pytest.mark.parametrize("shape", [(7, 50), (3, 4, 5), (2, 70001), (40001,), (1, 20000)], ids=str)
@pytest.mark.parametrize("dtype", ["float32", "float16", "int32"])
def test_opencl_fused_reduction_kernel(shape: tuple[int, ...], dtype: str) -> None:
    # the kernel that fuses a chain into its reduction (used on GPUs: on a CPU device the reduction follows the
    # chain's kernel), asked for directly; strided (a broadcast input) and contiguous inputs
    _device("opencl")
    from ferro_opencl._fusion_reduce import compile_reductions
    backend = ferro.backends.get("opencl")
    dev = ferro.device("opencl")
    dt = getattr(ferro, dtype)
    x = _tensor(rng.standard_normal(shape) * 3, dt, "opencl")
    for b in (_tensor(rng.standard_normal(shape[-1]), dt, "opencl"), _tensor(rng.standard_normal(shape), dt, "opencl")):
        rec = Recorder(x, b)
        v = rec("add", rec("mul", Ref(0), 2), Ref(1))
        pos = rec("gt", v, 0)
        dims = tuple(range(1, len(shape))) or None
        vv = rec.values[v.index]
        sum_dt = ferro.int64 if dt is ferro.int32 else dt
        group = rec.group(v)._replace(reductions=(
            Reduce("sum", v.index, dims, True, sum_dt), Reduce("amax", v.index, dims, False, dt),
            Reduce("amax", pos.index, dims, False, ferro.bool)))
        run = compile_reductions(backend.runtime(dev.index), group, dev._kernels, fuse=True)
        got = run(x._data, b._data)
        want = [vv, vv.sum(dims, keepdim=True),
                vv.amax(dims) if dims else vv.amax(), rec.values[pos.index].amax(dims) if dims else
                rec.values[pos.index].amax()]
        tol = {"rtol": 1e-5, "atol": 1e-4} if dt is ferro.float32 else {}
        for k, (arr, w) in enumerate(zip(got, want)):
            assert_close(backend.to_numpy(arr), w.cpu(), msg=f"result {k}", **(tol if k == 1 else {}))


# -- every op with an expression, as a step ------------------------------------------------------------------

def _every_op(dt: ferro.DType, device: str) -> tuple[Recorder, tuple[Ref, ...]]:
    """Every op with an expression that takes ``dt``, each a step on the same inputs, run eagerly."""
    from ferro.backends import elementwise_ops
    if dt.is_floating_point:
        a, b = rng.uniform(-3, 3, (4, 25)), rng.uniform(0.5, 2, (4, 25))
    elif dt is ferro.bool:
        a, b = rng.integers(0, 2, (4, 25)).astype(bool), rng.integers(0, 2, (4, 25)).astype(bool)
    else:
        a, b = rng.integers(0, 40, (4, 25)), rng.integers(1, 4, (4, 25))  # no division by zero, small exponents
    x, y = _tensor(a, dt, device), _tensor(b, dt, device)
    cond = _tensor(a > np.median(a), ferro.bool, device)
    rec = Recorder(x, y, cond)
    outs = []
    for name, op in sorted(elementwise_ops().items()):
        if dt not in op.table or (name == "sub" and dt is ferro.bool):
            continue
        args = {"unary": (Ref(0),), "binary": (Ref(0), Ref(1)), "ternary": (Ref(2), Ref(0), Ref(1))}[op.kind]
        try:
            outs.append(rec(name, *args))
        except (NotImplementedError, TypeError, ValueError):  # eager does not run it here: nothing to compare
            continue
    assert len(outs) > 10
    return rec, tuple(outs)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", ["float32", "int32", "uint8", "bool", "float16"])
@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NumPy on log(0), 0 / 0... in eager and the replay alike
def test_every_elementwise_op_as_a_step(backend: str, dtype: str) -> None:
    # one group per dtype holding every op with an expression that takes it, each on the same inputs (a
    # dtype rule that computes elsewhere, int -> float for sqrt, bool results, casts), against eager
    device = _device(backend)
    dt = getattr(ferro, dtype) if dtype != "bool" else ferro.bool
    if dt not in ferro.backends.get(backend).dtypes(0):
        pytest.skip(f"{backend} has no {dtype} here")
    rec, outs = _every_op(dt, device)
    group = _check(rec, outs, device)
    if backend == "opencl":  # one generated kernel, not the replay
        assert ferro.backends.get("opencl").compile_fused(group) is not None


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "uint8", "int64", "bool", "float16", "bfloat16"])
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_cuda_kernel_of_every_op_compiles(dtype: str) -> None:
    fusion = pytest.importorskip("ferro_cuda._fusion", reason="ferro-cuda is not installed")
    kernels = pytest.importorskip("ferro_cuda.kernels")
    pytest.importorskip("cupy", reason="CuPy is not installed (pip install 'ferro-cuda[cupy]')")
    rec, outs = _every_op(getattr(ferro, dtype) if dtype != "bool" else ferro.bool, "cpu")
    for strided in (False, True):
        fk = fusion.fused_kernel_source(rec.group(*outs), strided)
        assert f".entry {fk.entry}(" in kernels.compile_ptx(fk.source, name=f"every_op_{dtype}.cu")
