"""ferro-cuda on a real GPU: ferro's own kernels, the runtime (streams, memory, TF32, RNG) and DLPack.

Every test needs a usable CUDA GPU and skips, naming the reason CUDA cannot
run, elsewhere (as in CI). References are PyTorch on the CPU in float64 (its
autograd for the backward kernels, its optimizers for the fused steps) and
NumPy.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

import ferro
import ferro.nn.functional as F

TF = torch.nn.functional


@pytest.fixture(scope="module")
def cp() -> Any:
    if "cuda" not in ferro.backends.installed():
        pytest.skip("ferro-cuda is not installed")
    avail = ferro.backends.get("cuda").availability()
    if not avail:
        pytest.skip(f"no usable CUDA GPU here: {avail.reason}")
    import cupy
    return cupy


@pytest.fixture(scope="module")
def table(cp: Any) -> dict[str, Any]:
    return ferro.backends.get("cuda").kernels(0)


def _close(got: Any, want: Any, dtype: str, what: str) -> None:
    got = got.get() if hasattr(got, "get") else np.asarray(got)
    want = want.detach().numpy() if isinstance(want, torch.Tensor) else np.asarray(want)
    tol = {"float16": 2e-3, "float32": 2e-5, "float64": 1e-12}[dtype]
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=tol, atol=tol, err_msg=what)


# -- activations: every row of the table, forward and backward -------------------------

#: kernel name, kernel parameters, the PyTorch reference.
ACTS: list[tuple[str, tuple[Any, ...], Any]] = [
    ("gelu", (), TF.gelu), ("gelu", ("tanh",), lambda t: TF.gelu(t, approximate="tanh")), ("silu", (), TF.silu),
    ("softplus", (), TF.softplus), ("softplus", (2.0, 5.0), lambda t: TF.softplus(t, 2.0, 5.0)), ("mish", (), TF.mish),
    # celu and hardsigmoid written out: PyTorch's own backward rounds 1/alpha and 1/6 to float32 even in float64
    ("elu", (0.7,), lambda t: TF.elu(t, 0.7)), ("celu", (1.3,), lambda t: TF.elu(t / 1.3) * 1.3), ("selu", (), TF.selu),
    ("leaky_relu", (0.2,), lambda t: TF.leaky_relu(t, 0.2)),
    ("hardtanh", (-0.5, 2.0), lambda t: TF.hardtanh(t, -0.5, 2.0)), ("relu6", (), TF.relu6),
    ("hardsigmoid", (), lambda t: TF.relu6(t + 3) / 6), ("hardswish", (), TF.hardswish), ("softsign", (), TF.softsign),
    ("logsigmoid", (), TF.logsigmoid), ("tanhshrink", (), torch.nn.functional.tanhshrink),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(("name", "params", "ref"), ACTS, ids=[f"{a[0]}{a[1]}" for a in ACTS])
def test_activation_kernels_match_torch(table: dict[str, Any], cp: Any, name: str, params: tuple[Any, ...],
                                        ref: Any, dtype: str) -> None:
    rng = np.random.default_rng(0)
    host = np.concatenate([rng.uniform(-8, 8, 997), [-3.0, 3.0, 0.0, 6.0, -0.5, 2.0, 2.5, 20.0, -20.0, 30.0]])
    grad = rng.standard_normal(host.size)
    t = torch.tensor(host, dtype=torch.float64, requires_grad=True)
    y = ref(t)
    y.backward(torch.tensor(grad))
    x = cp.asarray(host, dtype=dtype)
    _close(table[name](x, *params), y, dtype, f"{name} forward")
    _close(table[f"{name}_backward"](cp.asarray(grad, dtype=dtype), x, *params), t.grad, dtype, f"{name} backward")


def test_activation_float16_computes_in_float32(table: dict[str, Any], cp: Any) -> None:
    host = np.linspace(-4, 4, 101).astype(np.float16)
    out = table["gelu"](cp.asarray(host))
    assert out.dtype == cp.float16
    _close(out, TF.gelu(torch.tensor(host, dtype=torch.float64)), "float16", "gelu float16")
    with pytest.raises(TypeError, match=r"gelu.*int32"):
        table["gelu"](cp.arange(3, dtype=cp.int32))


# -- softmax, layer_norm, cross_entropy ----------------------------------------------------


@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize(("shape", "dim"), [((4, 7), -1), ((3, 5, 6), 1), ((2, 3000), -1), ((5,), 0), ((3, 0), 0)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_softmax_kernels_match_torch(table: dict[str, Any], cp: Any, shape: tuple[int, ...], dim: int, log: bool,
                                     dtype: str) -> None:
    rng = np.random.default_rng(1)
    host = rng.standard_normal(shape) * 4
    grad = rng.standard_normal(shape)
    name = "log_softmax" if log else "softmax"
    t = torch.tensor(host, requires_grad=True)
    y = (TF.log_softmax if log else TF.softmax)(t, dim)
    y.backward(torch.tensor(grad))
    got = table[name](cp.asarray(host, dtype=dtype), dim)
    _close(got, y, dtype, f"{name} forward")
    _close(table[f"{name}_backward"](cp.asarray(grad, dtype=dtype), got, dim), t.grad, dtype, f"{name} backward")


def test_softmax_keeps_nan_and_handles_minus_inf(table: dict[str, Any], cp: Any) -> None:
    host = np.array([[1.0, np.nan, 2.0], [-np.inf, 0.0, 1.0]])
    want = TF.softmax(torch.tensor(host), -1)
    got = table["softmax"](cp.asarray(host), -1).get()
    assert np.isnan(got[0]).all() and torch.isnan(want[0]).all()
    np.testing.assert_allclose(got[1], want[1].numpy(), rtol=1e-12)


@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_layer_norm_kernels_match_torch(table: dict[str, Any], cp: Any, affine: bool, dtype: str) -> None:
    rng = np.random.default_rng(2)
    x, g = rng.standard_normal((4, 6, 8)) * 3 + 1, rng.standard_normal((4, 6, 8))
    w, b = rng.standard_normal((6, 8)), rng.standard_normal((6, 8))
    tx = torch.tensor(x, requires_grad=True)
    tw, tb = (torch.tensor(w, requires_grad=True), torch.tensor(b, requires_grad=True)) if affine else (None, None)
    y = TF.layer_norm(tx, (6, 8), tw, tb, 1e-5)
    y.backward(torch.tensor(g))
    c = lambda a: None if a is None else cp.asarray(a, dtype=dtype)
    cw, cb = (c(w), c(b)) if affine else (None, None)
    out, mean, rstd = table["layer_norm_forward"](c(x), (6, 8), cw, cb, 1e-5)
    _close(out, y, dtype, "layer_norm forward")
    _close(table["layer_norm"](c(x), (6, 8), cw, cb, 1e-5), y, dtype, "layer_norm")
    dx, dw, db = table["layer_norm_backward"](c(g), c(x), (6, 8), cw, mean, rstd)
    _close(dx, tx.grad, dtype, "layer_norm dx")
    if affine:
        _close(dw, tw.grad, dtype, "layer_norm dweight")
        _close(db, tb.grad, dtype, "layer_norm dbias")
    else:
        assert dw is None


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("shape", [(6, 5), (3, 5, 4)])
def test_cross_entropy_kernels_match_torch(table: dict[str, Any], cp: Any, reduction: str, weighted: bool,
                                           shape: tuple[int, ...]) -> None:
    rng = np.random.default_rng(3)
    x = rng.standard_normal(shape) * 3
    tshape = (shape[0], *shape[2:])
    target = rng.integers(0, shape[1], tshape)
    target.reshape(-1)[1] = -100  # ignored
    w = rng.uniform(0.5, 2.0, shape[1])
    tx = torch.tensor(x, requires_grad=True)
    tw = torch.tensor(w) if weighted else None
    loss = TF.cross_entropy(tx, torch.tensor(target), tw, reduction=reduction)
    g = rng.standard_normal(loss.shape)
    loss.backward(torch.tensor(g))
    cw = cp.asarray(w) if weighted else None
    got = table["cross_entropy"](cp.asarray(x), cp.asarray(target), cw, -100, reduction)
    _close(got, loss, "float64", "cross_entropy forward")
    rows, lse, roww = table["cross_entropy_forward"](cp.asarray(x), cp.asarray(target), cw, -100)
    per_row = cp.asarray(g).reshape(-1) if reduction == "none" else cp.full(rows.shape, float(g))
    if reduction == "mean":
        per_row = per_row / roww.sum()
    dx = table["cross_entropy_backward"](per_row, cp.asarray(x), cp.asarray(target), cw, lse, -100)
    _close(dx, tx.grad, "float64", "cross_entropy backward")


# -- fused optimizer steps --------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("opts", [{}, {"amsgrad": True, "weight_decay": 0.1}, {"maximize": True, "weight_decay": 0.05},
                                  {"decoupled": True, "weight_decay": 0.1}])
def test_fused_adam_matches_torch(table: dict[str, Any], cp: Any, opts: dict[str, Any], dtype: str) -> None:
    rng = np.random.default_rng(4)
    p0 = rng.standard_normal(1000)
    grads = [rng.standard_normal(1000) for _ in range(3)]
    decoupled = opts.pop("decoupled", False)
    tp = torch.tensor(p0, requires_grad=True)
    opt = (torch.optim.AdamW if decoupled else torch.optim.Adam)([tp], lr=0.01, **opts)
    p, m, v, vmax = (cp.asarray(p0, dtype=dtype), cp.zeros(1000, dtype), cp.zeros(1000, dtype),
                     cp.zeros(1000, dtype) if opts.get("amsgrad") else None)
    for step, g in enumerate(grads, 1):
        tp.grad = torch.tensor(g)
        opt.step()
        table["fused_adam"](p, cp.asarray(g, dtype=dtype), m, v, vmax, float(step), 0.01, 0.9, 0.999, 1e-8,
                            opts.get("weight_decay", 0.0), decoupled, bool(opts.get("amsgrad")),
                            bool(opts.get("maximize")))
    _close(p, tp, dtype, f"adam {opts}")


@pytest.mark.parametrize("opts", [{}, {"momentum": 0.9}, {"momentum": 0.9, "nesterov": True, "weight_decay": 0.1},
                                  {"momentum": 0.8, "dampening": 0.3, "maximize": True}])
def test_fused_sgd_matches_torch(table: dict[str, Any], cp: Any, opts: dict[str, Any]) -> None:
    rng = np.random.default_rng(5)
    p0 = rng.standard_normal(500)
    tp = torch.tensor(p0, requires_grad=True)
    opt = torch.optim.SGD([tp], lr=0.1, **opts)
    p = cp.asarray(p0)
    buf = cp.empty(500) if opts.get("momentum") else None
    for step in range(3):
        g = rng.standard_normal(500)
        tp.grad = torch.tensor(g)
        opt.step()
        table["fused_sgd"](p, cp.asarray(g), buf, 0.1, opts.get("momentum", 0.0), opts.get("dampening", 0.0),
                           opts.get("weight_decay", 0.0), opts.get("nesterov", False), opts.get("maximize", False),
                           step == 0)
    _close(p, tp, "float64", f"sgd {opts}")


def test_ferro_adam_uses_the_fused_kernel_on_cuda(cp: Any) -> None:
    rng = np.random.default_rng(6)
    p0, g = rng.standard_normal((8, 4)).astype(np.float32), rng.standard_normal((8, 4)).astype(np.float32)
    results = []
    for device, fused in (("cuda", True), ("cpu", False)):
        p = ferro.tensor(p0, device=device, requires_grad=True)
        opt = ferro.optim.Adam([p], lr=0.05, weight_decay=0.01, fused=fused)
        for _ in range(2):
            p.grad = ferro.tensor(g, device=device)
            opt.step()
        results.append(p.detach().cpu().numpy())
    np.testing.assert_allclose(results[0], results[1], rtol=1e-5, atol=1e-6)


# -- scatter-add with atomics, device kernels ----------------------------------------


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "int64", "float16", "int16"])
def test_index_put_accumulate_sums_repeated_indices(cp: Any, dtype: str) -> None:
    rng = np.random.default_rng(7)
    base = rng.integers(-5, 5, (6, 3)).astype(dtype)
    idx = np.array([0, 2, 2, 5, 0, 2, -1])
    vals = rng.integers(-5, 5, (7, 3)).astype(dtype)
    want = base.copy()
    np.add.at(want, idx, vals)
    x = ferro.index_put(ferro.tensor(base, device="cuda"), (ferro.tensor(idx, device="cuda"),),
                        ferro.tensor(vals, device="cuda"), accumulate=True)
    np.testing.assert_array_equal(x.cpu().numpy(), want)
    # two index arrays: cupyx.scatter_add
    r, c = np.array([1, 1, 4, 1]), np.array([0, 0, 2, 0])
    v = np.arange(4).astype(dtype)
    want2 = base.copy()
    np.add.at(want2, (r, c), v)
    key = (ferro.tensor(r, device="cuda"), ferro.tensor(c, device="cuda"))
    y = ferro.index_put(ferro.tensor(base, device="cuda"), key, ferro.tensor(v, device="cuda"), accumulate=True)
    np.testing.assert_array_equal(y.cpu().numpy(), want2)


def test_device_kernels_match_torch(cp: Any) -> None:
    rng = np.random.default_rng(8)
    x = rng.standard_normal(200)
    seq = np.sort(rng.standard_normal((3, 10)), -1)
    vals = rng.standard_normal((3, 4))
    gx = ferro.tensor(x, device="cuda")
    np.testing.assert_allclose(ferro.erf(gx).cpu().numpy(), torch.erf(torch.tensor(x)).numpy(), rtol=1e-12)
    np.testing.assert_allclose(ferro.lgamma(gx).cpu().numpy(), torch.lgamma(torch.tensor(x)).numpy(), rtol=1e-10)
    got = ferro.searchsorted(ferro.tensor(seq, device="cuda"), ferro.tensor(vals, device="cuda"), right=True)
    np.testing.assert_array_equal(got.cpu().numpy(), torch.searchsorted(torch.tensor(seq), torch.tensor(vals),
                                                                        right=True).numpy())
    ints = rng.integers(0, 6, 50)
    u, inv, cnt = ferro.unique(ferro.tensor(ints, device="cuda"), return_inverse=True, return_counts=True)
    tu, tinv, tcnt = torch.unique(torch.tensor(ints), return_inverse=True, return_counts=True)
    for a, b in ((u, tu), (inv, tinv), (cnt, tcnt)):
        np.testing.assert_array_equal(a.cpu().numpy(), b.numpy())
    uc = ferro.unique_consecutive(ferro.tensor(ints, device="cuda"))
    np.testing.assert_array_equal(uc.cpu().numpy(), torch.unique_consecutive(torch.tensor(ints)).numpy())
    np.testing.assert_array_equal(ferro.bincount(ferro.tensor(ints, device="cuda")).cpu().numpy(),
                                  torch.bincount(torch.tensor(ints)).numpy())
    m = rng.integers(0, 5, (4, 9)).astype(np.float32)  # ties: PyTorch's index is the last equal one
    m[1, 3] = np.nan  # a NaN stays, with its index
    for arr in (m, m[:, :5].astype(np.int64)):
        for ours, theirs in ((ferro.cummax, torch.cummax), (ferro.cummin, torch.cummin)):
            for dim in (0, 1, -1):
                v, i = ours(ferro.tensor(arr, device="cuda"), dim)
                tv, ti = theirs(torch.tensor(arr), dim)
                np.testing.assert_array_equal(v.cpu().numpy(), tv.numpy())
                np.testing.assert_array_equal(i.cpu().numpy(), ti.numpy())
    np.testing.assert_array_equal(ferro.histc(gx, bins=7, min=-2, max=2).cpu().numpy(),
                                  torch.histc(torch.tensor(x), bins=7, min=-2, max=2).numpy())


def test_functional_ops_run_on_cuda_and_match_cpu(cp: Any) -> None:
    rng = np.random.default_rng(9)
    x = rng.standard_normal((4, 10)).astype(np.float32)
    target = rng.integers(0, 10, 4)
    for fn in (lambda t: F.gelu(t), lambda t: F.softmax(t, -1), lambda t: F.layer_norm(t, (10,)),
               lambda t: F.cross_entropy(t, ferro.tensor(target, device=t.device))):
        got = fn(ferro.tensor(x, device="cuda")).cpu().numpy()
        np.testing.assert_allclose(got, fn(ferro.tensor(x)).numpy(), rtol=1e-5, atol=1e-6)


# -- the runtime: ferro.cuda ---------------------------------------------------------------


def test_ferro_cuda_devices(cp: Any) -> None:
    assert ferro.cuda.is_available() and ferro.cuda.device_count() == cp.cuda.runtime.getDeviceCount()
    assert ferro.cuda.current_device() == 0
    name = cp.cuda.runtime.getDeviceProperties(0)["name"]
    assert ferro.cuda.get_device_name() == (name.decode() if isinstance(name, bytes) else name)
    ferro.cuda.set_device(0)
    ferro.cuda.synchronize()
    with pytest.raises(ValueError, match="invalid CUDA device ordinal"):
        ferro.cuda.synchronize(ferro.cuda.device_count())


def test_memory_statistics_follow_allocations(cp: Any) -> None:
    ferro.cuda.empty_cache()
    ferro.cuda.reset_peak_memory_stats()
    before = ferro.cuda.memory_allocated()
    x = ferro.zeros(1 << 20, device="cuda")  # 4 MiB
    assert ferro.cuda.memory_allocated() >= before + 4 * 2**20
    assert ferro.cuda.max_memory_allocated() >= ferro.cuda.memory_allocated()
    peak = ferro.cuda.max_memory_allocated()
    del x
    assert ferro.cuda.memory_allocated() <= peak - 4 * 2**20
    assert ferro.cuda.max_memory_allocated() == peak, "the peak stays until reset"
    ferro.cuda.reset_peak_memory_stats()
    assert ferro.cuda.max_memory_allocated() == ferro.cuda.memory_allocated()
    assert ferro.cuda.memory_reserved() >= ferro.cuda.memory_allocated()
    ferro.cuda.empty_cache()
    assert cp.get_default_memory_pool().free_bytes() == 0


def test_streams_and_events(cp: Any) -> None:
    s = ferro.cuda.Stream()
    assert ferro.cuda.current_stream() != s
    x = ferro.arange(1 << 16, device="cuda", dtype=ferro.float32)
    start, end = ferro.cuda.Event(enable_timing=True), ferro.cuda.Event(enable_timing=True)
    s.wait_stream(ferro.cuda.current_stream())
    with ferro.cuda.stream(s):
        assert ferro.cuda.current_stream() == s
        start.record()
        y = x * 2 + 1
        end.record()
    assert ferro.cuda.current_stream() != s
    s.synchronize()
    assert s.query() and end.query() and end.elapsed_time(end) == 0.0 and start.elapsed_time(end) >= 0.0
    np.testing.assert_array_equal(y.cpu().numpy(), np.arange(1 << 16, dtype=np.float32) * 2 + 1)


def test_tf32_switch_changes_float32_matmul_precision(cp: Any) -> None:
    if int(cp.cuda.Device(0).compute_capability) < 80:
        pytest.skip("this GPU has no TF32 (compute capability below 8.0)")
    rng = np.random.default_rng(10)
    a, b = rng.standard_normal((256, 256)), rng.standard_normal((256, 256))
    want = a @ b
    errs = {}
    try:
        for flag in (False, True, False):
            ferro.cuda.matmul.allow_tf32 = flag
            got = (ferro.tensor(a, dtype=ferro.float32, device="cuda") @ ferro.tensor(b, dtype=ferro.float32,
                                                                                    device="cuda")).cpu().numpy()
            errs.setdefault(flag, []).append(np.abs(got - want).max() / np.abs(want).max())
    finally:
        ferro.cuda.matmul.allow_tf32 = False
    assert max(errs[False]) < 1e-5 < errs[True][0], errs


def test_rng_state_save_and_restore(cp: Any) -> None:
    ferro.cuda.manual_seed_all(3)
    state = ferro.cuda.get_rng_state()
    a = ferro.rand(100, device="cuda").cpu().numpy()
    ferro.cuda.set_rng_state(state)
    np.testing.assert_array_equal(ferro.rand(100, device="cuda").cpu().numpy(), a)
    ferro.cuda.manual_seed(4)
    assert not np.array_equal(ferro.rand(100, device="cuda").cpu().numpy(), a)


def test_pinned_upload_of_a_large_array(cp: Any) -> None:
    host = np.random.default_rng(11).standard_normal((1024, 512))  # 4 MiB: staged through pinned memory
    t = ferro.tensor(host, device="cuda")
    host[0, 0] = 99.0  # the upload was a copy
    got = t.cpu().numpy()
    assert got[0, 0] != 99.0
    np.testing.assert_array_equal(got[1:], host[1:])


def test_dlpack_shares_memory_with_torch_and_cupy(cp: Any) -> None:
    tt = torch.arange(6, dtype=torch.float32, device="cuda")
    f = ferro.from_dlpack(tt, device="cuda")
    tt[0] = 42.0
    torch.cuda.synchronize()
    assert f.cpu().tolist()[0] == 42.0, "ferro sees torch's write: no copy"
    back = torch.from_dlpack(f)
    assert back.data_ptr() == tt.data_ptr()
    c = cp.from_dlpack(f)
    c[1] = -1.0
    assert f.cpu().tolist()[1] == -1.0


# -- the composite ops run ferro's kernels on cuda, with exact first and second derivatives ---------

#: name, function of the inputs, shapes of the inputs that require grad, the graph node the fused path records.
FUSED_OPS: list[tuple[str, Any, tuple[tuple[int, ...], ...], str]] = [
    ("gelu", F.gelu, ((4, 5),), "gelu"),
    ("gelu_tanh", lambda t: F.gelu(t, approximate="tanh"), ((4, 5),), "gelu"),
    ("softplus_kw", lambda t: F.softplus(t, beta=2.0, threshold=3.0), ((4, 5),), "softplus"),
    ("leaky_relu_kw", lambda t: F.leaky_relu(t, negative_slope=0.3), ((4, 5),), "leaky_relu"),  # keeps the output
    ("silu", F.silu, ((4, 5),), "silu"), ("mish", F.mish, ((4, 5),), "mish"),
    ("elu_0d", F.elu, ((),), "elu"),
    ("hardswish_strided", lambda t: F.hardswish(t.mT), ((4, 5),), "hardswish"),
    ("softmax", lambda t: F.softmax(t, dim=0), ((4, 5),), "softmax"),
    ("log_softmax", lambda t: F.log_softmax(t, 1), ((3, 4, 5),), "log_softmax"),
    ("layer_norm", lambda t, w, b: F.layer_norm(t, (5,), w, b), ((4, 5), (5,), (5,)), "layer_norm"),
    ("layer_norm_plain", lambda t: F.layer_norm(t, (4, 5)), ((3, 4, 5),), "layer_norm"),
    ("cross_entropy", lambda t: F.cross_entropy(t, ferro.tensor([1, 0, 4, -100], device="cuda")), ((4, 5),),
     "cross_entropy"),
    ("cross_entropy_sum_3d", lambda t: F.cross_entropy(t, ferro.tensor([[1, 2], [0, 4]], device="cuda"),
                                                       reduction="sum"), ((2, 5, 2),), "cross_entropy"),
]


@pytest.mark.parametrize(("name", "fn", "shapes", "node"), FUSED_OPS, ids=[o[0] for o in FUSED_OPS])
def test_composite_ops_run_the_fused_kernels_on_cuda(cp: Any, name: str, fn: Any, shapes: Any, node: str) -> None:
    rng = np.random.default_rng(12)
    inputs = [ferro.tensor(rng.standard_normal(s), dtype=ferro.float64, device="cuda", requires_grad=True)
              for s in shapes]
    assert fn(*inputs).grad_fn.name == node, "the fused path recorded the graph"
    assert ferro.autograd.gradcheck(fn, inputs)
    assert ferro.autograd.gradgradcheck(fn, inputs)
    cpu = [t.detach().cpu().requires_grad_() for t in inputs]
    if name.startswith("cross_entropy"):
        return  # its target lives on cuda; the gradient checks above compared with finite differences
    np.testing.assert_allclose(fn(*inputs).detach().cpu().numpy(), fn(*cpu).detach().numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("layout", ["float16", "strided"])
@pytest.mark.parametrize("opt", ["adam", "sgd"])
def test_fused_steps_without_a_kernel_layout_take_the_same_formulas(cp: Any, layout: str, opt: str) -> None:
    # float16 and strided parameters go through CuPy's elementwise kernels: equal to ferro's unfused update.
    rng = np.random.default_rng(13)
    dtype = ferro.float16 if layout == "float16" else ferro.float32
    p0, g = rng.standard_normal((6, 4)), rng.standard_normal((6, 4))
    results = []
    for device, fused in (("cuda", True), ("cuda", False)):
        base = ferro.tensor(p0.T.copy() if layout == "strided" else p0, dtype=dtype, device=device)
        p = (base.mT if layout == "strided" else base).detach().requires_grad_()
        make = ferro.optim.Adam if opt == "adam" else ferro.optim.SGD
        kw = {"lr": 0.05, "weight_decay": 0.01} | ({"amsgrad": True} if opt == "adam" else {"momentum": 0.9})
        o = make([p], fused=fused, **kw)
        for _ in range(3):
            p.grad = ferro.tensor(g, dtype=dtype, device=device)
            o.step()
        results.append(p.detach().float().cpu().numpy())
    tol = 2e-3 if layout == "float16" else 1e-6
    np.testing.assert_allclose(results[0], results[1], rtol=tol, atol=tol)


# -- int8_matmul (ferro.quantization) -----------------------------------------------


@pytest.mark.parametrize(("m", "k", "n"), [(64, 1024, 1024), (13, 33, 37), (1, 1, 1), (3, 0, 2)])
def test_int8_matmul_kernel_is_exact_in_int32(cp: Any, table: dict[str, Any], m: int, k: int, n: int) -> None:
    rng = np.random.default_rng(m + k + n)
    a = rng.integers(-128, 128, (m, k)).astype(np.int8)
    b = rng.integers(-128, 128, (k, n)).astype(np.int8)
    want = a.astype(np.int64) @ b.astype(np.int64)
    for y in (cp.asarray(b), cp.asarray(np.ascontiguousarray(b.T)).T):  # rows contiguous, and a transposed view
        got = table["int8_matmul"](cp.asarray(a), y)
        assert got.dtype == np.int32
        np.testing.assert_array_equal(got.get(), want)


def test_quantize_dynamic_runs_on_cuda(cp: Any) -> None:
    lin = ferro.nn.Linear(40, 24)
    q = ferro.quantization.quantize_dynamic(lin).to("cuda")
    x = ferro.randn(9, 40)
    np.testing.assert_allclose(q(x.to("cuda")).cpu().numpy(), ferro.quantization.quantize_dynamic(lin)(x).numpy(),
                               rtol=1e-5, atol=1e-5)


# -- indices out of range: IndexError naming the op (CuPy would wrap them around) ---------------------------

#: op name, call(ferro, x, index tensor), an in-range index, an out-of-range one.
INDEX_OPS: list[tuple[str, Any, list[Any], list[Any]]] = [
    ("gather", lambda f, x, i: f.gather(x, 0, i), [[2, 0, 1, 1]], [[3, 0, 1, 1]]),
    ("gather", lambda f, x, i: f.gather(x, 0, i), [[2, 0, 1, 1]], [[-1, 0, 1, 1]]),
    ("index_select", lambda f, x, i: f.index_select(x, 1, i), [3, 0], [0, 4]),
    ("take", lambda f, x, i: f.take(x, i), [11, 0, -12], [12]),
    ("embedding", lambda f, x, i: f.nn.functional.embedding(i, x), [2, 0, 2], [0, -1]),
]


@pytest.mark.parametrize(("name", "call", "good", "bad"), INDEX_OPS, ids=[f"{o[0]}{o[3]}" for o in INDEX_OPS])
def test_index_ops_refuse_out_of_range_indices_and_read_the_rest(cp: Any, name: str, call: Any, good: list[Any],
                                                                 bad: list[Any]) -> None:
    x = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    got = call(ferro, ferro.tensor(x, device="cuda"), ferro.tensor(good, device="cuda"))
    want = call(ferro, ferro.tensor(x), ferro.tensor(good))  # the cpu backend, which NumPy checks
    np.testing.assert_array_equal(got.cpu().numpy(), want.numpy())
    xc = ferro.tensor(x, device="cuda")
    with pytest.raises(IndexError, match=rf"{name}.*index"):
        call(ferro, xc, ferro.tensor(bad, device="cuda"))
        ferro.cuda.synchronize()
    np.testing.assert_array_equal(xc.cpu().numpy(), x)
    x[...] = 1.0  # the next indexing error, unlabelled, does not take the failed op's name
    with pytest.raises(IndexError) as caught:
        ferro.tensor(x, device="cuda")[ferro.tensor([5], device="cuda")]
    assert name not in str(caught.value)


# -- uint8: negative floats wrap around as on the CPU and in PyTorch ----------------------------------------


def test_uint8_cast_of_negative_floats_matches_torch(cp: Any) -> None:
    values = np.array([-1.0, -0.5, -3.7, 0.0, 2.9, 200.0, 255.5], dtype=np.float32)
    got = ferro.tensor(values, device="cuda").to(ferro.uint8).cpu().numpy()
    np.testing.assert_array_equal(got, torch.from_numpy(values).to(torch.uint8).numpy())


@pytest.mark.parametrize("op", ["linear", "conv1d", "conv_transpose1d", "scatter_add"])
def test_uint8_ops_with_negative_weights_match_the_cpu_backend(cp: Any, op: str) -> None:
    rng = np.random.default_rng(3)
    w = np.array([[[0.5, -1.0, 0.25], [1.0, 0.5, -0.5]]] * 2, dtype=np.float32)

    def run(device: str) -> Any:
        def t(a: Any) -> Any:
            return ferro.tensor(a, device=device).to(ferro.uint8)
        if op == "linear":
            return F.linear(t(rng_x[:, :3]), t(w[0]), t(np.ones(2, np.float32)))
        if op == "conv1d":
            return F.conv1d(t(rng_x[None]), t(w))
        if op == "conv_transpose1d":
            return F.conv_transpose1d(t(rng_x[None]), t(w))
        return ferro.scatter_add(t(rng_x), 0, ferro.tensor([[1, 0, 1, 0]], device=device),
                                 t(np.full((1, 4), -1.0, np.float32)))
    rng_x = rng.integers(0, 6, (2, 5)).astype(np.float32)
    np.testing.assert_array_equal(run("cuda").cpu().numpy(), run("cpu").numpy())


# -- claims that agree with what runs ----------------------------------------------------------------------


@pytest.mark.parametrize("n", [0, 1, 3])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32"])
def test_polygamma_runs_on_the_gpu_as_torch(cp: Any, n: int, dtype: str) -> None:
    x = np.linspace(0.5, 4.0, 11).astype(np.float64)
    if dtype == "int32":
        x = np.arange(1, 12, dtype=np.int32)
    assert ferro.backends.get("cuda").supports("polygamma", getattr(ferro, dtype))
    got = ferro.special.polygamma(n, ferro.tensor(x, device="cuda")).cpu().numpy()
    want = torch.special.polygamma(n, torch.from_numpy(x).to(torch.float64)).numpy()
    tol = 1e-8 if dtype == "float64" else 2e-5  # torch and scipy (Cephes) zeta differ by ~1e-10
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=tol, atol=tol)


def test_squared_difference_on_complex_is_refused_up_front(cp: Any) -> None:
    pytest.importorskip("ferro_testplugins", reason="the test plugins are not installed (tests/plugins)")
    a = ferro.tensor(np.array([1 + 2j, 3 - 1j], dtype=np.complex64), device="cuda")
    assert not ferro.backends.get("cuda").supports("squared_difference", ferro.complex64)
    with pytest.raises(ferro.errors.UnsupportedOperationError, match="squared_difference"):
        ferro.ops.squared_difference(a, a)
    got = ferro.ops.squared_difference(ferro.tensor([3.0, 1.0], device="cuda"), ferro.tensor([1.0, 4.0], device="cuda"))
    np.testing.assert_array_equal(got.cpu().numpy(), [4.0, 9.0])
