"""ferro.compile: a compiled training step against the eager one (same parameters after 20 steps, on every
available backend), guards, graph breaks, explain, the passes, and a backend without the compile hook."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import ferro
from ferro import nn
from ferro._compile import GraphBreak
from ferro._compile.graph import V, values_in
from ferro.demo import make_cnn, make_mlp


class _Recurrent(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.rnn = nn.LSTM(8, 16, batch_first=True)
        self.head = nn.Linear(16, 10)

    def forward(self, x: ferro.Tensor) -> ferro.Tensor:
        out, _ = self.rnn(x)
        return self.head(out[:, -1])


class _Encoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        layer = nn.TransformerEncoderLayer(16, 2, dim_feedforward=32, dropout=0.1, batch_first=True)
        self.enc = nn.TransformerEncoder(layer, 2)
        self.head = nn.Linear(16, 10)

    def forward(self, x: ferro.Tensor) -> ferro.Tensor:
        return self.head(self.enc(x).mean(1))


def _sgd(params: Any) -> Any:
    return ferro.optim.SGD(params, lr=0.05, momentum=0.9)


#: name -> (model, input shape, optimizer): the issue's four models, small enough for the suite.
MODELS: dict[str, tuple[Callable[[], Any], tuple[int, ...], Callable[[Any], Any]]] = {
    "digits MLP": (lambda: make_mlp(nn=nn), (16, 64), _sgd),
    "digits CNN": (lambda: make_cnn(nn), (16, 1, 8, 8), _sgd),
    "LSTM": (_Recurrent, (4, 6, 8), lambda p: ferro.optim.Adam(p, lr=1e-2)),
    "Transformer encoder (dropout 0.1)": (_Encoder, (4, 5, 16), lambda p: ferro.optim.AdamW(p, lr=1e-2)),
}


def _train(name: str, device: Any, compiled: bool, steps: int = 20) -> tuple[list[np.ndarray], list[float]]:
    build, shape, optimizer = MODELS[name]
    ferro.manual_seed(0)
    model = build().to(device)
    opt = optimizer(model.parameters())
    rng = np.random.default_rng(0)
    x = ferro.tensor(rng.standard_normal(shape).astype(np.float32), device=device)
    y = ferro.tensor(rng.integers(0, 10, shape[0]), device=device)
    params = list(model.parameters())

    def step(x: ferro.Tensor, y: ferro.Tensor) -> ferro.Tensor:
        opt.zero_grad()
        loss = ferro.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    run = ferro.compile(step) if compiled else step
    ferro.manual_seed(1)  # the dropout stream: compiled steps must draw what eager steps draw
    losses = [float(run(x, y)) for _ in range(steps)]
    assert all(p is q for p, q in zip(params, model.parameters()))  # the user's parameter tensors, updated
    return [p.numpy(force=True) for p in params], losses


@pytest.mark.parametrize("name", list(MODELS))
def test_compiled_training_matches_eager(name: str, device: ferro.device) -> None:
    if device.type not in ("cpu", "opencl"):
        pytest.skip("the issue's backends: cpu and opencl")
    eager, eager_losses = _train(name, device, compiled=False)
    compiled, compiled_losses = _train(name, device, compiled=True)
    np.testing.assert_allclose(compiled_losses, eager_losses, rtol=1e-5, atol=1e-6)
    assert eager_losses[-1] < eager_losses[0]  # it trained
    for a, b in zip(compiled, eager):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("set_to_none", [True, False])
def test_gradients_accumulated_over_calls_match_eager(set_to_none: bool) -> None:
    """No ``zero_grad`` inside the step: gradients accumulate over calls, cleared every third call outside."""
    def run(compiled: bool) -> list[np.ndarray]:
        ferro.manual_seed(0)
        model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
        opt = ferro.optim.SGD(model.parameters(), lr=0.1)
        x = ferro.randn(6, 4)

        f = _backward_step(model, compiled)
        for i in range(12):
            f(x)
            if i % 3 == 2:
                opt.step()
                opt.zero_grad(set_to_none=set_to_none)
        assert not compiled or _replays(f) >= 1
        return [p.numpy(force=True) for p in model.parameters()] + [p.grad.numpy() for p in model.parameters()
                                                                     if p.grad is not None]
    for a, b in zip(run(True), run(False), strict=True):
        np.testing.assert_array_equal(a, b)


def test_a_backend_without_the_compile_hook_replays() -> None:
    """The ``prims`` test plugin: only the contract's required primitives, and the base class's
    ``compile_fused``, which compiles nothing."""
    if "prims" not in ferro.backends.available():
        pytest.skip(f"the prims test plugin is not available: {ferro.backends.unavailable().get('prims')}")
    prims = ferro.backends.get("prims")
    assert type(prims).compile_fused is ferro.backends.Backend.compile_fused
    eager, _ = _train("digits MLP", "prims", compiled=False, steps=5)
    compiled, _ = _train("digits MLP", "prims", compiled=True, steps=5)
    for a, b in zip(compiled, eager):
        np.testing.assert_array_equal(a, b)


def _backward_step(model: Any, compiled: bool) -> Callable[[ferro.Tensor], ferro.Tensor]:
    """A step that only backpropagates ``model``'s squared output (gradients accumulate), compiled or not."""
    def accumulate(x: ferro.Tensor) -> ferro.Tensor:
        loss = model(x).square().mean()
        loss.backward()
        return loss
    return ferro.compile(accumulate) if compiled else accumulate


def _replays(fn: Any) -> int:
    return sum(len(e.replays) for e in fn.cache.values())


def test_replay_is_bitwise_eager_and_calls_no_op() -> None:
    """Replay runs the kernels eager execution ran, without going through the ops."""
    x = ferro.randn(5, 3)
    w = ferro.randn(3, 4, requires_grad=True)

    @ferro.compile
    def f(x: ferro.Tensor) -> ferro.Tensor:
        return ((x @ w).relu() * 2.0 + 1.0).sum(1)

    expected = ((x @ w).relu() * 2.0 + 1.0).sum(1)
    for _ in range(3):
        got = f(x)
    assert _replays(f) == 1
    np.testing.assert_array_equal(got.numpy(force=True), expected.numpy(force=True))
    x2 = ferro.randn(5, 3)
    np.testing.assert_array_equal(f(x2).numpy(), ((x2 @ w).relu() * 2.0 + 1.0).sum(1).numpy(force=True))


def test_a_new_batch_size_captures_again() -> None:
    lin = nn.Linear(4, 2)

    @ferro.compile
    def f(x: ferro.Tensor) -> ferro.Tensor:
        with ferro.no_grad():
            return lin(x).tanh()

    for n in (3, 3, 3, 5, 5, 5, 3):
        x = ferro.randn(n, 4)
        with ferro.no_grad():
            np.testing.assert_array_equal(f(x).numpy(), lin(x).tanh().numpy())
    assert f.captures == 2 and _replays(f) == 2


def test_the_cache_bound_warns_and_runs_eagerly(monkeypatch: pytest.MonkeyPatch) -> None:
    import ferro._compile.api as api
    monkeypatch.setattr(api, "CACHE_SIZE_LIMIT", 2)
    f = ferro.compile(lambda x: x * 3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for n in (1, 2, 3, 4):
            assert f(ferro.ones(n)).tolist() == [3.0] * n
    assert len(f.cache) == 2
    assert [str(w.message) for w in caught if "cache size limit" in str(w.message)]


def _breaks(x: ferro.Tensor) -> ferro.Tensor:
    y = x * 2
    if y.sum() > 0:  # data-dependent control flow: a graph break
        return y
    return -y


def test_graph_breaks_are_reported_with_their_line() -> None:
    x = ferro.ones(3)
    report = ferro.compile.explain(_breaks, x)
    assert report.graph_break_count == 1 and report.graph_count == 0
    reason, where = report.break_reasons[0]
    assert "bool(tensor)" in reason and "test_compile.py" in where and "if y.sum() > 0" in where
    assert "graph breaks: 1" in str(report)
    strict = ferro.compile(_breaks, fullgraph=True)
    strict(x)  # the warm-up call runs eagerly
    with pytest.raises(GraphBreak, match=r"test_compile.py:\d+: if y.sum\(\) > 0"):
        strict(x)
    lenient = ferro.compile(_breaks)
    for v in (1.0, 1.0, 1.0, -1.0):  # a broken graph runs eagerly: the other branch is taken when it should be
        assert lenient(ferro.full((3,), v)).tolist() == [2.0 * abs(v)] * 3
    assert all(e.eager for e in lenient.cache.values())


@pytest.mark.parametrize("read", [lambda t: t.item(), lambda t: print(t), lambda t: t.numpy(), lambda t: t.tolist()],
                         ids=["item", "print", "numpy", "tolist"])
def test_host_reads_break_the_graph(read: Callable[[Any], Any]) -> None:
    def f(x: ferro.Tensor) -> ferro.Tensor:
        s = x.sum()
        read(s)
        return s
    assert ferro.compile.explain(f, ferro.ones(2)).graph_break_count == 1


def test_explain_lists_the_captured_ops_and_host_calls() -> None:
    model = make_mlp(nn=nn)
    opt = _sgd(model.parameters())
    x, y = ferro.randn(8, 64), ferro.tensor([1, 2, 3, 4, 5, 6, 7, 8])

    def step(x: ferro.Tensor, y: ferro.Tensor) -> ferro.Tensor:
        opt.zero_grad()
        loss = ferro.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss
    report = ferro.compile.explain(step, x, y)
    assert report.graph_break_count == 0 and report.kernel_calls > 10
    assert "linear" in report.ops and "cross_entropy" in report.ops
    assert any("step" in h for h in report.host_calls)


def test_passes_fold_merge_and_drop() -> None:
    @ferro.compile
    def f(x: ferro.Tensor) -> ferro.Tensor:
        unused = x.sin()  # noqa: F841  (dead code)
        return x.exp() + x.exp() * 2.0  # a common subexpression, and a scalar made once

    x = ferro.randn(4)
    for _ in range(3):
        got = f(x)
    np.testing.assert_array_equal(got.numpy(), (x.exp() + x.exp() * 2.0).numpy())
    (entry,) = f.cache.values()
    names = [c.name for c in entry.graphs[0].calls()]
    assert "sin" not in names and names.count("exp") == 1 and "full" not in names, names


def test_a_compiled_module_replays_inference_and_trains_eagerly() -> None:
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    same = ferro.compile(model)
    assert same is model
    x = ferro.randn(3, 4)
    with ferro.no_grad():
        expected = model(x).numpy()
        for _ in range(3):
            np.testing.assert_array_equal(model(x).numpy(), expected)
    assert _replays(model.forward) == 1
    for _ in range(3):  # with grad: the result must carry its graph, so it runs eagerly
        model(x).sum().backward()
    assert model[0].weight.grad is not None


def test_torch_compile_arguments_are_checked() -> None:
    with pytest.raises(RuntimeError, match="mode or options"):
        ferro.compile(lambda x: x, mode="default", options={})
    with pytest.raises(TypeError, match="callable"):
        ferro.compile(3)
    with pytest.raises(ValueError, match="unknown mode"):
        ferro.compile(lambda x: x, mode="fastest")
    f = lambda x: x
    assert ferro.compile(f, disable=True) is f


def test_import_ferro_does_not_load_the_compiler() -> None:
    import subprocess
    import sys
    code = "import sys, ferro; ferro.compile; print('ferro._compile' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True).stdout.strip() == "False"


def test_max_fusion_cuts_elementwise_chains_into_groups(monkeypatch: pytest.MonkeyPatch) -> None:
    from ferro.backends import fusion
    groups: list[Any] = []
    lower = fusion.lower

    def noting(group: Any, device: Any) -> Callable[..., Any]:
        groups.append(group)
        return lower(group, device)
    monkeypatch.setattr(fusion, "lower", noting)
    w = ferro.randn(6, 6)

    @ferro.compile(mode="max-fusion")
    def f(x: ferro.Tensor) -> ferro.Tensor:
        h = x @ w
        return ((h.exp() * x).tanh() - h).sigmoid().sum(1), h

    x = ferro.randn(6, 6)
    for _ in range(3):
        got, h = f(x)
    want = ((((x @ w).exp() * x).tanh() - x @ w).sigmoid()).sum(1)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
    np.testing.assert_array_equal(h.numpy(), (x @ w).numpy())
    (entry,) = f.cache.values()
    names = [c.name for c in entry.graphs[0].calls()]
    assert names.count("fused") == 1 and "exp" not in names and "sigmoid" not in names, names
    (group,) = groups
    assert [s.op for s in group.steps] == ["exp", "mul", "tanh", "sub", "sigmoid"] and len(group.outputs) == 1


def test_max_fusion_replays_one_kernel_with_eager_values(dev: str) -> None:
    """The backend's compile hook (cpu, opencl) or the replay (a backend without one) runs the group."""
    f = ferro.compile(lambda x: (x.exp() * 2.0).tanh(), mode="max-fusion")
    x = ferro.randn(5, device=dev)
    for _ in range(3):
        got = f(x)
    np.testing.assert_allclose(got.cpu().numpy(), (x.exp() * 2.0).tanh().cpu().numpy(), rtol=1e-6, atol=1e-7)
    (entry,) = f.cache.values()
    assert [c.name for c in entry.graphs[0].calls()] == ["fused"]


def test_in_place_ops_and_views_keep_their_semantics() -> None:
    def f(x: ferro.Tensor, buf: ferro.Tensor) -> ferro.Tensor:
        y = x.clone()
        y[:, 0] = 5.0  # a write through indexing
        row = y[1]  # a view: writing to it writes to y
        row.mul_(2.0)
        y.view(-1).add_(1.0)
        buf.add_(x.sum(0))  # an argument updated in place
        return y

    compiled = ferro.compile(f)
    buf_eager, buf_compiled = ferro.zeros(3), ferro.zeros(3)
    for i in range(4):
        x = ferro.randn(2, 3)
        want = f(x, buf_eager)
        got = compiled(x, buf_compiled)
        np.testing.assert_array_equal(got.numpy(), want.numpy())
        np.testing.assert_array_equal(buf_compiled.numpy(), buf_eager.numpy())
    assert _replays(compiled) == 1


def test_dropout_draws_the_eager_random_stream() -> None:
    x = ferro.ones(4, 5)
    f = lambda x: ferro.nn.functional.dropout(x, 0.5, training=True) * 3.0
    compiled = ferro.compile(f)
    ferro.manual_seed(7)
    want = [f(x).numpy() for _ in range(5)]
    ferro.manual_seed(7)
    got = [compiled(x).numpy() for _ in range(5)]
    assert _replays(compiled) == 1
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
    assert not all((a == want[0]).all() for a in want[1:])  # the masks do change from call to call


def test_a_scheduler_inside_the_step_keeps_changing_the_learning_rate() -> None:
    def run(compiled: bool) -> list[float]:
        ferro.manual_seed(0)
        lin = nn.Linear(3, 1)
        opt = ferro.optim.SGD(lin.parameters(), lr=0.1)
        sched = ferro.optim.lr_scheduler.CyclicLR(opt, base_lr=0.01, max_lr=0.1, step_size_up=2)
        x = ferro.randn(4, 3)

        def step(x: ferro.Tensor) -> ferro.Tensor:
            opt.zero_grad()
            loss = lin(x).square().mean()
            loss.backward()
            opt.step()
            sched.step()
            return loss
        f = ferro.compile(step) if compiled else step
        return [float(f(x)) for _ in range(8)] + [opt.param_groups[0]["lr"]]
    assert run(True) == run(False)


def test_a_result_to_differentiate_outside_runs_eagerly() -> None:
    lin = nn.Linear(3, 2)
    f = ferro.compile(lambda x: lin(x).sum())
    x = ferro.randn(4, 3)
    for _ in range(3):
        f(x).backward()  # the backward is the caller's: the result must carry its graph
    np.testing.assert_allclose(lin.weight.grad.numpy(), 3 * x.sum(0).numpy()[None].repeat(2, 0), rtol=1e-5)
    assert all(e.eager for e in f.cache.values())


def test_batch_norm_running_stats_update_once_per_call() -> None:
    """Buffers updated in place (running statistics) while gradients accumulate over calls (graphs per state of
    the gradients): each call updates the statistics once, as eager calls do."""
    def run(compiled: bool) -> list[np.ndarray]:
        ferro.manual_seed(0)
        model = nn.Sequential(nn.Linear(4, 6), nn.BatchNorm1d(6, affine=False), nn.ReLU(), nn.Linear(6, 1))
        model[0].requires_grad_(False)  # the first parameter the step meets is after the statistics' update
        x = ferro.randn(8, 4)

        f = _backward_step(model, compiled)
        for i in range(9):
            f(x)
            if i % 3 == 2:
                model.zero_grad()
        bn = model[1]
        return [bn.running_mean.numpy(), bn.running_var.numpy()] + [p.numpy(force=True) for p in model.parameters()]
    for a, b in zip(run(True), run(False), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6)


def test_gradient_copies_are_elided_where_nothing_else_sees_the_source(device: ferro.device) -> None:
    """Autograd clones each gradient it stores; replay drops the clone where the gradient is a fresh result nothing
    else reads, and keeps it where two leaves receive the same array (their gradients must stay distinct), where
    the array is also returned, and on every step values and gradients are eager's, bitwise."""
    def run(compiled: bool) -> tuple[list[np.ndarray], Any]:
        ferro.manual_seed(0)
        lin = nn.Linear(4, 3).to(device)
        a, b = (ferro.randn(3, device=device, requires_grad=True) for _ in range(2))
        opt = ferro.optim.SGD([*lin.parameters(), a, b], lr=0.1, momentum=0.9)
        x = ferro.randn(5, 4, device=device)

        def step(x: ferro.Tensor) -> tuple[ferro.Tensor, ferro.Tensor]:
            opt.zero_grad()
            h = lin(x)
            shared = h + a + b  # a and b receive the same gradient array
            loss = shared.square().mean()
            loss.backward()
            opt.step()
            return loss, h
        f = ferro.compile(step) if compiled else step
        out = []
        for _ in range(4):
            loss, h = f(x)
            out += [loss.numpy(force=True), h.numpy(force=True)]
            out += [p.grad.numpy() for p in (*lin.parameters(), a, b)] + [p.numpy(force=True) for p in lin.parameters()]
            assert a.grad._data is not b.grad._data
            a.grad.add_(1.0)  # a write into one gradient leaves the other as it was
            out.append(b.grad.numpy())
        return out, f
    got, f = run(True)
    expected, _ = run(False)
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_array_equal(g, e)
    (entry,) = f.cache.values()
    clones = [c for c in entry.graphs[0].calls() if c.name == "clone"]
    # the bias, a and b receive one array: two copies, the last one takes the array; the weight's copy is dropped.
    # cpu's fused linear gives the bias an array of its own: one copy (a's and b's shared array) is left.
    # A backend whose contiguous always copies (prims: the array API's) does not say which arrays are row-major:
    # every copy is kept there.
    assert len(clones) == {"cpu": 1, "opencl": 2}.get(device.type, 4), [c.name for c in entry.graphs[0].calls()]


def _planned(fn: Any) -> list[Any]:
    """The calls of ``fn``'s graphs that write into planned buffers (their first argument)."""
    return [c for e in fn.cache.values() for g in e.graphs for c in g.calls()
            if getattr(c.kernel, "__module__", "").endswith("_fusion_into")]


def test_planned_buffers_keep_eager_values_and_never_hold_what_leaves_the_step() -> None:
    """Internal results (an activation, its gradient, products) are written into buffers planned
    once per graph, in place over an operand that dies there; values, gradients and parameters stay eager's
    bitwise, and what the step returns or stores (the loss, an activation returned, gradients) is never a planned
    buffer: a later call does not overwrite it."""
    def run(compiled: bool) -> tuple[list[np.ndarray], Any]:
        ferro.manual_seed(0)
        model = make_mlp(nn=nn)
        opt = _sgd(model.parameters())
        x, y = ferro.randn(16, 64), ferro.randint(0, 10, (16,))

        def step(x: ferro.Tensor, y: ferro.Tensor) -> tuple[ferro.Tensor, ferro.Tensor]:
            opt.zero_grad()
            h = model[1](model[0](x))
            loss = ferro.nn.functional.cross_entropy(model[2:](h), y)
            loss.backward()
            opt.step()
            return loss, h
        f = ferro.compile(step) if compiled else step
        held, out = [], []
        for _ in range(5):
            loss, h = f(x, y)
            held.append((loss, h, loss.numpy(force=True).copy(), h.numpy(force=True).copy()))
            out += [p.grad.numpy() for p in model.parameters()] + [p.numpy(force=True) for p in model.parameters()]
        for loss, h, loss0, h0 in held:  # results of earlier calls as they were returned
            np.testing.assert_array_equal(loss.numpy(force=True), loss0)
            np.testing.assert_array_equal(h.numpy(force=True), h0)
        return out + [t for *_, l0, h0 in held for t in (l0, h0)], f
    got, f = run(True)
    expected, _ = run(False)
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_array_equal(g, e)
    planned = _planned(f)
    names = {c.name for c in planned}
    assert {"relu", "relu_backward"} <= names, names  # (relu's gradient: the backend's kernel, as eager's)
    buffers = {id(c.args[0]) for c in planned}
    assert len(buffers) < len(planned)  # in place over dead operands, buffers shared by values of disjoint lives
    (entry,) = f.cache.values()
    for call in planned:  # the activation returned and the loss are not planned
        assert call.outs not in {v.n for v in _values(entry.graphs[0].output)}


def _values(tree: Any) -> list[Any]:
    return [V(n) for n in values_in(tree)]


def test_a_call_while_another_thread_replays_runs_eagerly() -> None:
    """The planned buffers have one user: a call made while a replay runs in another thread runs eagerly (were it
    replayed, it would overwrite the activations the other thread's backward is about to read)."""
    import threading

    class Waiting(ferro.optim.SGD):
        """SGD whose zero_grad (a host call, rerun by each replay) waits, when asked, until released."""
        wait = False

        def zero_grad(self, set_to_none: bool = True) -> None:
            if Waiting.wait and threading.current_thread() is not threading.main_thread():
                started.set()
                release.wait(10)
            super().zero_grad(set_to_none)

    started, release = threading.Event(), threading.Event()
    ferro.manual_seed(0)
    lin = nn.Linear(8, 8)
    opt = Waiting(lin.parameters(), lr=0.0)  # lr 0: the parameters stay as they are
    x1, x2 = ferro.randn(4, 8), ferro.randn(4, 8)

    def step(x: ferro.Tensor) -> ferro.Tensor:
        loss = (lin(x) * 2.0).tanh().square().sum()  # the forward's planned activations live across zero_grad
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss

    def grads(x: ferro.Tensor) -> list[np.ndarray]:
        step(x)
        return [p.grad.numpy().copy() for p in lin.parameters()]
    expected = grads(x1)
    f = ferro.compile(step)
    for _ in range(3):
        f(x1)
    assert _planned(f) and _replays(f) == 1
    Waiting.wait = True
    other = threading.Thread(target=f, args=(x1,))
    other.start()
    assert started.wait(10)
    f(x2)  # the other thread's replay holds the graph: this call runs eagerly
    release.set()
    other.join(10)
    for p, e in zip(lin.parameters(), expected, strict=True):  # the other thread's gradients, written last
        np.testing.assert_array_equal(p.grad.numpy(), e)


def test_views_and_in_place_writes_of_planned_values_keep_their_results() -> None:
    """A result that is a view of an internal product (a transpose, a slice), or an internal value written in
    place and then returned through a view, is never in a planned buffer: results of earlier calls stay as
    they were returned, and every call's values are eager's."""
    w = ferro.randn(6, 5)

    def f(x: ferro.Tensor) -> tuple[ferro.Tensor, ...]:
        y = (x @ w) * 2.0  # planned: it dies inside
        z = (x @ w).relu()
        z.add_(1.0)  # an in-place write into an internal value
        u = (x @ w) + 3.0
        return y.sum(), z.t(), u[1:3], (u * u).sum(0)

    g = ferro.compile(f)
    with ferro.no_grad():
        xs = [ferro.randn(4, 6) for _ in range(5)]
        got = [g(x) for x in xs]
        expected = [f(x) for x in xs]
    assert _planned(g)
    for outs, refs in zip(got, expected, strict=True):
        for a, b in zip(outs, refs, strict=True):
            np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_sparse_gradients_break_the_graph_and_train_as_eager() -> None:
    """A sparse gradient (``nn.Embedding(sparse=True)``) is not replayed: the step runs eagerly, its parameters
    eager's, and the break says why."""
    def train(compiled: bool) -> tuple[list[np.ndarray], Any]:
        ferro.manual_seed(0)
        emb, lin = nn.Embedding(20, 8, sparse=True), nn.Linear(8, 3)
        opt = ferro.optim.SGD([*emb.parameters(), *lin.parameters()], lr=0.1)
        x, y = ferro.tensor(np.arange(12).reshape(4, 3)), ferro.tensor(np.array([0, 1, 2, 1]))

        def step(x: ferro.Tensor, y: ferro.Tensor) -> ferro.Tensor:
            opt.zero_grad()
            loss = ferro.nn.functional.cross_entropy(lin(emb(x).mean(1)), y)
            loss.backward()
            opt.step()
            return loss
        run = ferro.compile(step) if compiled else step
        for _ in range(6):
            run(x, y)
        return [p.detach().numpy().copy() for p in [*emb.parameters(), *lin.parameters()]], run
    expected, _ = train(False)
    got, run = train(True)
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_array_equal(g, e)
    (entry,) = run.cache.values()
    assert entry.eager and "sparse_coo gradient" in entry.breaks[0][0]


def test_a_live_sparse_tensor_does_not_break_a_capture_through_an_autograd_function() -> None:
    """The trace finds the tensors behind kernels reached inside an ``autograd.Function`` (the fused LSTM) by
    scanning live tensors; a sparse tensor alive at the time leaves the dense slots unset and must be passed over."""
    keep = ferro.sparse_coo_tensor(ferro.tensor([[0, 1], [1, 0]]), ferro.tensor([1.0, 2.0]), (2, 2))
    losses = []
    for compiled in (False, True):
        ferro.manual_seed(0)
        model = ferro.nn.LSTM(3, 4, dtype=ferro.float64)
        opt = ferro.optim.SGD(model.parameters(), lr=0.1)

        def step(x: ferro.Tensor) -> ferro.Tensor:
            opt.zero_grad()
            loss = model(x)[0].square().mean()
            loss.backward()
            opt.step()
            return loss
        run = ferro.compile(step) if compiled else step
        xs = np.random.default_rng(1).standard_normal((3, 6, 2, 3))
        losses.append([float(run(ferro.tensor(x))) for x in xs])
    assert losses[0] == losses[1]
    assert keep.to_dense().numpy()[0, 1] == 1.0
