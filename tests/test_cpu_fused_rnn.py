"""ferro-cpu's fused LSTM / GRU sequence kernels (ferro_cpu/_recurrent.py) against torch.

Each test counts the calls of the CPU device's sequence kernels, so a silent
fall back to the step math fails it (and a fused call where the step math
should run fails the fall-back tests); values and every gradient (input,
initial states, all weights and biases) are compared with torch's.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import ferro
from ferro.autograd import gradgradcheck
from ferro.nn.utils.rnn import pack_padded_sequence

from conftest import count_calls

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(0)
TOL = {"float32": {"rtol": 1e-4, "atol": 2e-5}, "float64": {"rtol": 1e-10, "atol": 1e-11}}
NAMES = ("lstm_sequence_forward", "lstm_sequence_backward", "gru_sequence_forward", "gru_sequence_backward")


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, int]]:
    """Counts of the sequence kernels' calls on the cpu device during the test."""
    yield count_calls(monkeypatch, ferro.tensor([0.0])._device, NAMES)


def _pair(kind: str, dtype: str, **kwargs: Any) -> tuple[Any, Any]:
    """The same layer in torch and ferro (torch's initialization copied over)."""
    theirs = getattr(torch.nn, kind)(3, 5, **kwargs).to(getattr(torch, dtype))
    ours = getattr(ferro.nn, kind)(3, 5, dtype=getattr(ferro, dtype), **kwargs)
    ours.load_state_dict({k: ferro.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()})
    return ours, theirs


def _close(got: Any, expected: Any, dtype: str) -> None:
    g, e = got.detach().numpy(), expected.detach().numpy()
    assert g.dtype == np.dtype(dtype) and g.shape == e.shape, (g.dtype, g.shape, e.shape)
    np.testing.assert_allclose(g, e, **TOL[dtype])


def _states(kind: str, shape: tuple[int, ...], dtype: str) -> tuple[list[Any], list[Any]]:
    arrays = [RNG.standard_normal(shape).astype(dtype) for _ in range(2 if kind == "LSTM" else 1)]
    return ([ferro.tensor(a, requires_grad=True) for a in arrays],
            [torch.tensor(a, requires_grad=True) for a in arrays])


def _compare(kind: str, dtype: str, ours: Any, theirs: Any, x: np.ndarray, with_state: bool,
             state_shape: tuple[int, ...]) -> None:
    """Forward both, a random gradient into the output and the final states, compare values and gradients."""
    fx, tx = ferro.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    fs, ts = _states(kind, state_shape, dtype) if with_state else ([], [])
    pack = (lambda s: tuple(s)) if kind == "LSTM" else (lambda s: s[0])
    fo, fh = ours(fx, pack(fs) if fs else None)
    to, th = theirs(tx, pack(ts) if ts else None)
    fh, th = (list(fh), list(th)) if kind == "LSTM" else ([fh], [th])
    for a, b in zip([fo, *fh], [to, *th]):
        _close(a, b, dtype)
    grads = [RNG.standard_normal(tuple(t.shape)).astype(dtype) for t in [to, *th]]
    sum((a * ferro.tensor(g)).sum() for a, g in zip([fo, *fh], grads)).backward()
    sum((a * torch.tensor(g)).sum() for a, g in zip([to, *th], grads)).backward()
    _close(fx.grad, tx.grad, dtype)
    for a, b in zip(fs, ts):
        _close(a.grad, b.grad, dtype)
    mine = dict(ours.named_parameters())
    for name, p in theirs.named_parameters():
        _close(mine[name].grad, p.grad, dtype)


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("layers,bidirectional,batch_first,bias", [
    (1, False, False, True), (2, False, True, True), (2, True, False, True), (1, True, True, False)])
def test_layer_runs_the_sequence_kernels_and_matches_torch(calls: dict[str, int], kind: str, dtype: str,
                                                           layers: int, bidirectional: bool, batch_first: bool,
                                                           bias: bool) -> None:
    ours, theirs = _pair(kind, dtype, num_layers=layers, bidirectional=bidirectional, batch_first=batch_first,
                         bias=bias)
    dirs = 2 if bidirectional else 1
    x = RNG.standard_normal((4, 6, 3) if batch_first else (6, 4, 3)).astype(dtype)
    _compare(kind, dtype, ours, theirs, x, True, (layers * dirs, 4, 5))
    stem = kind.lower() + "_sequence"
    assert calls[f"{stem}_forward"] == calls[f"{stem}_backward"] == layers * dirs, calls


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
def test_unbatched_input_and_default_state(calls: dict[str, int], kind: str) -> None:
    ours, theirs = _pair(kind, "float64")
    _compare(kind, "float64", ours, theirs, RNG.standard_normal((7, 3)), False, ())
    assert calls[f"{kind.lower()}_sequence_forward"] == 1 and calls[f"{kind.lower()}_sequence_backward"] == 1


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
def test_only_the_output_used_gives_every_gradient(monkeypatch: pytest.MonkeyPatch, kind: str) -> None:
    """d_hn and d_cn absent reach the backward kernel as None (no zeros made; the kernel takes them as zero),
    and a state's gradient alone as d_out None."""
    dev = ferro.tensor([0.0])._device
    name = f"{kind.lower()}_sequence_backward"
    got: list[tuple[Any, ...]] = []
    kernel = dev._kernels[name]

    def seeing(*a: Any) -> Any:
        got.append(a[:3])
        return kernel(*a)
    monkeypatch.setitem(dev._kernels, name, seeing)
    ours, theirs = _pair(kind, "float64", num_layers=2)
    x = RNG.standard_normal((5, 2, 3))
    for pick in (lambda r: r[0][-1], lambda r: (r[1][0] if kind == "LSTM" else r[1])[-1]):
        fx, tx = ferro.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        for p in ours.parameters():
            p.grad = None
        theirs.zero_grad()
        pick(ours(fx)).sum().backward()
        pick(theirs(tx)).sum().backward()
        _close(fx.grad, tx.grad, "float64")
        for pname, p in theirs.named_parameters():
            _close(dict(ours.named_parameters())[pname].grad, p.grad, "float64")
    # the output only: the last layer's states and the first layer's states get no gradient
    assert [tuple(a is None for a in args) for args in got[:2]] == [(False, True, True)] * 2
    # the last layer's h_n only: its output gets none; the first layer's h_n gets stack's zeros, its c_n none
    assert [tuple(a is None for a in args) for args in got[2:]] == [(True, False, True), (False, False, True)]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gradient_on_some_steps_only(calls: dict[str, int], dtype: str) -> None:
    """Steps whose output gradient is all zeros (the backward kernel skips adding them), both directions, from
    a batch-first output: the same gradients as torch's."""
    ours, theirs = _pair("LSTM", dtype, bidirectional=True, batch_first=True)
    x = RNG.standard_normal((4, 6, 3)).astype(dtype)
    g = RNG.standard_normal((4, 6, 10)).astype(dtype)
    g[:, [1, 2, 4]] = 0
    g[:, 5, :5] = -0.0
    fx, tx = ferro.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    (ours(fx)[0] * ferro.tensor(g)).sum().backward()
    (theirs(tx)[0] * torch.tensor(g)).sum().backward()
    _close(fx.grad, tx.grad, dtype)
    for name, p in theirs.named_parameters():
        _close(dict(ours.named_parameters())[name].grad, p.grad, dtype)
    assert calls["lstm_sequence_forward"] == calls["lstm_sequence_backward"] == 2, calls


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
def test_packed_sequences_and_projection_run_the_step_math(calls: dict[str, int], kind: str) -> None:
    ours, theirs = _pair(kind, "float64")
    x = RNG.standard_normal((5, 3, 3))
    lengths = [5, 3, 2]
    fo = ours(pack_padded_sequence(ferro.tensor(x), lengths))[0].data
    to = theirs(torch.nn.utils.rnn.pack_padded_sequence(torch.tensor(x), lengths))[0].data
    _close(fo, to, "float64")
    if kind == "LSTM":
        ours, theirs = _pair(kind, "float64", proj_size=2)
        _compare(kind, "float64", ours, theirs, x, False, ())
    assert sum(calls.values()) == 0, calls


def test_mixed_dtypes_raise_before_any_kernel_runs(calls: dict[str, int]) -> None:
    m = ferro.nn.GRU(3, 5, dtype=ferro.float64)
    with pytest.raises(ferro.errors.DTypeError, match=r"GRU: input dtype \(ferro.float32\) does not match"):
        m(ferro.randn(4, 2, 3, dtype=ferro.float32))
    assert sum(calls.values()) == 0, calls


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
def test_double_backward_differentiates_the_step_math(calls: dict[str, int], kind: str) -> None:
    m = getattr(ferro.nn, kind)(2, 2, dtype=ferro.float64)
    x = ferro.randn(3, 1, 2, dtype=ferro.float64, requires_grad=True)
    assert gradgradcheck(lambda x: m(x)[0], [x])
    assert calls[f"{kind.lower()}_sequence_forward"] > 0


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
def test_only_some_gradients_wanted(calls: dict[str, int], kind: str) -> None:
    """An input that does not require grad and a frozen weight and bias: the rest as torch's, those None."""
    ours, theirs = _pair(kind, "float32", num_layers=2)
    for m in (ours, theirs):
        m.bias_ih_l0.requires_grad_(False)
        m.weight_hh_l1.requires_grad_(False)
    x = RNG.standard_normal((6, 3, 3)).astype("float32")
    ours(ferro.tensor(x))[0].square().sum().backward()
    theirs(torch.tensor(x))[0].square().sum().backward()
    mine = dict(ours.named_parameters())
    for name, p in theirs.named_parameters():
        if p.grad is None:
            assert mine[name].grad is None, name
        else:
            _close(mine[name].grad, p.grad, "float32")
    assert calls[f"{kind.lower()}_sequence_backward"] == 2


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
def test_compiled_training_step_replays_the_kernels_as_eager(calls: dict[str, int], kind: str) -> None:
    """ferro.compile records the kernels' calls; the arrays the forward saves for the backward are outputs of
    the recorded forward call, so each replay's backward reads that replay's (a capture-time constant would
    give gradients a step behind)."""
    def make() -> tuple[Any, Any]:
        ferro.manual_seed(0)
        model = getattr(ferro.nn, kind)(3, 4, num_layers=2, dtype=ferro.float64)
        return model, ferro.optim.SGD(model.parameters(), lr=0.1)

    def step(model: Any, opt: Any, x: Any) -> Any:
        opt.zero_grad()
        loss = model(x)[0].square().mean()
        loss.backward()
        opt.step()
        return loss

    eager, compiled = make(), make()
    run = ferro.compile(lambda x: step(*compiled, x))
    for _ in range(5):
        x = ferro.tensor(RNG.standard_normal((6, 2, 3)))
        assert float(step(*eager, x)) == float(run(x))
    for a, b in zip(eager[0].parameters(), compiled[0].parameters()):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    assert calls[f"{kind.lower()}_sequence_backward"] == 2 * 2 * 5, calls


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
def test_backward_kernel_leaves_the_incoming_gradients_as_they_were(kind: str) -> None:
    """The backward updates dh (and dc) in buffers of its own, never in the arrays it was handed."""
    kernels = ferro.tensor([0.0])._device._kernels
    stem, gates, lstm = kind.lower() + "_sequence", 4 if kind == "LSTM" else 3, kind == "LSTM"
    x, h0, c0 = (RNG.standard_normal(s) for s in ((6, 2, 3), (2, 5), (2, 5)))
    w_ih, w_hh, b_ih, b_hh = (RNG.standard_normal(s) for s in ((gates * 5, 3), (gates * 5, 5), (gates * 5,),
                                                                 (gates * 5,)))
    _, _, _, *saved = kernels[f"{stem}_forward"](x, h0, c0 if lstm else None, w_ih, w_hh, b_ih, b_hh, False)
    d_out, d_hn, d_cn = RNG.standard_normal((6, 2, 5)), RNG.standard_normal((2, 5)), RNG.standard_normal((2, 5))
    before = [a.copy() for a in (d_out, d_hn, d_cn)]
    grads = kernels[f"{stem}_backward"](d_out, d_hn, d_cn if lstm else None, x, w_ih, w_hh, True, tuple(saved),
                                        False, (True,) * 7)
    for a, b in zip((d_out, d_hn, d_cn), before):
        np.testing.assert_array_equal(a, b)
    assert grads[1] is not d_hn and (not lstm or grads[2] is not d_cn)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_lstm_at_gemm_sizes_in_both_directions(calls: dict[str, int], dtype: str) -> None:
    """Sizes where OpenBLAS takes its blocked paths, more steps than batch rows, input width unlike hidden:
    the per-step slabs [h_prev; x_t; 1] and their reverse-direction offsets against torch."""
    theirs = torch.nn.LSTM(19, 40, bidirectional=True).to(getattr(torch, dtype))
    ours = ferro.nn.LSTM(19, 40, bidirectional=True, dtype=getattr(ferro, dtype))
    ours.load_state_dict({k: ferro.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()})
    x = RNG.standard_normal((23, 9, 19)).astype(dtype)
    _compare("LSTM", dtype, ours, theirs, x, True, (2, 9, 40))
    assert calls["lstm_sequence_forward"] == calls["lstm_sequence_backward"] == 2, calls


@pytest.mark.parametrize("dtype,batch,hidden", [("float32", 16, 12), ("float64", 6, 12), ("float32", 20, 12),
                                                ("float64", 12, 12), ("float32", 16, 240), ("float64", 8, 240)])
def test_lstm_batch_sizes_of_each_kernel_path(calls: dict[str, int], dtype: str, batch: int, hidden: int) -> None:
    """The paths chosen by batch size and weights, against torch (two layers, both directions, gradient on every
    step): the products batch-major in blocks of 4 rows, the slabs batch-major and the gates in (gate, batch,
    hidden) blocks (16, 20, 12: a multiple of 4, small weights); or feature-major arrays and step products, the
    backward writing each step's d(pre) straight into the (4H, T * B) array of the weight products where its
    rows are whole 64-byte cache lines (16, 8 float64 with weights over ``BLOCK_WEIGHTS``), else copying the
    steps over after the loop (6)."""
    from ferro_cpu._recurrent import BLOCK_WEIGHTS

    assert (4 * hidden * (hidden + 2 * hidden + 1) > BLOCK_WEIGHTS) == (hidden == 240)  # the second layer's
    theirs = torch.nn.LSTM(7, hidden, num_layers=2, bidirectional=True).to(getattr(torch, dtype))
    ours = ferro.nn.LSTM(7, hidden, num_layers=2, bidirectional=True, dtype=getattr(ferro, dtype))
    ours.load_state_dict({k: ferro.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()})
    x = RNG.standard_normal((11, batch, 7)).astype(dtype)
    _compare("LSTM", dtype, ours, theirs, x, True, (4, batch, hidden))
    forward = ferro.tensor([0.0])._device._kernels["lstm_sequence_forward"]
    state = np.zeros((batch, hidden), dtype)
    weights = [getattr(ours, f"{n}_l0").detach().numpy() for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")]
    saved = forward(x, state, state, *weights, False)[3:]
    assert saved[0].ndim == (4 if batch % 4 == 0 and hidden == 12 else 3)  # which kernels ran: the gates' layout
    assert calls["lstm_sequence_forward"] == 5 and calls["lstm_sequence_backward"] == 4, calls


@pytest.mark.parametrize("dtype,batch", [("float32", 9), ("float64", 9), ("float32", 12), ("float64", 20)])
def test_lstm_kernels_give_the_same_bits_for_any_layout_of_x_and_d_out(dtype: str, batch: int) -> None:
    """The forward copies a C-contiguous input into its feature-major slabs in blocks of rows (else in one
    transposing copy; batch 12 and 20 run batch-major slabs: a plain copy); the backward finds the steps with a
    nonzero output gradient by reducing over the batch axis first where that is the outer one in memory (a
    batch-first output's gradient): both layouts give the same bits, steps whose gradient is zero (or -0.0)
    included."""
    kernels = ferro.tensor([0.0])._device._kernels
    forward, backward = kernels["lstm_sequence_forward"], kernels["lstm_sequence_backward"]
    steps, feats, hidden = 23, 19, 6
    x = RNG.standard_normal((steps, batch, feats)).astype(dtype)
    weights = [RNG.standard_normal(s).astype(dtype) for s in [(24, feats), (24, hidden), (24,), (24,)]]
    h0, c0 = (RNG.standard_normal((batch, hidden)).astype(dtype) for _ in range(2))
    g = RNG.standard_normal((batch, steps, hidden)).astype(dtype)
    g[:, [0, 4, 5, 22]] = 0
    g[3, 5, 2] = -0.0
    g[2, 5, 1] = -3.0  # step 5's only nonzero: negative
    g[1, 4, 0] = 1e-30  # step 4's only nonzero: tiny
    results = []
    for xl, gl in [(x, np.ascontiguousarray(g.transpose(1, 0, 2))),  # C-contiguous
                   (np.asfortranarray(x), g.transpose(1, 0, 2))]:  # neither: batch outermost in d_out's memory
        assert xl.flags.c_contiguous == (gl.strides[1] < gl.strides[0])
        out, h, c, *saved = forward(xl, h0, c0, weights[0], weights[1], weights[2], weights[3], False)
        assert saved[0].ndim == (4 if batch % 4 == 0 else 3)  # gates in (gate, batch, hidden) blocks: that path ran
        grads = backward(gl, None, None, xl, weights[0], weights[1], True, tuple(saved), False, (True,) * 7)
        results.append([out, h, c, *(a for a in grads if a is not None)])
    for a, b in zip(*results, strict=True):
        np.testing.assert_array_equal(a, b)
    assert np.count_nonzero(results[0][3]) > 0


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("reverse", [False, True])
def test_lstm_backward_in_runs_of_steps(monkeypatch: pytest.MonkeyPatch, dtype: str, reverse: bool) -> None:
    """The blocked backward runs its steps in runs of ``CHUNK_BYTES`` (the coefficients of a run computed just
    before the loop runs it, the forget gate carried across a run's edge; dx and the weights' products per run, the
    weights' summed): any run length, one step to the whole sequence, gives torch's gradients (both directions: the
    runs in the loop's order), and the states' gradients (the loop alone) the same bits."""
    import ferro_cpu._recurrent as recurrent

    kernels = ferro.tensor([0.0])._device._kernels
    forward, backward = kernels["lstm_sequence_forward"], kernels["lstm_sequence_backward"]
    steps, batch, feats, hidden = 23, 8, 5, 6
    x = RNG.standard_normal((steps, batch, feats)).astype(dtype)
    w_ih, w_hh, b_ih, b_hh = (RNG.standard_normal(s).astype(dtype) * 0.5
                              for s in [(24, feats), (24, hidden), (24,), (24,)])
    h0, c0, d_hn, d_cn = (RNG.standard_normal((batch, hidden)).astype(dtype) for _ in range(4))
    d_out = RNG.standard_normal((steps, batch, hidden)).astype(dtype)
    tx = torch.tensor(x, requires_grad=True)
    tw = [torch.tensor(a, requires_grad=True) for a in (w_ih, w_hh, b_ih, b_hh)]
    th, tc = torch.tensor(h0[None], requires_grad=True), torch.tensor(c0[None], requires_grad=True)
    params = {"weight_ih_l0": tw[0], "weight_hh_l0": tw[1], "bias_ih_l0": tw[2], "bias_hh_l0": tw[3]}
    layer = torch.nn.LSTM(feats, hidden).to(getattr(torch, dtype))
    t_out, (t_h, t_c) = torch.func.functional_call(layer, params, (tx.flip(0) if reverse else tx, (th, tc)))
    t_out = t_out.flip(0) if reverse else t_out
    loss = ((t_out * torch.tensor(d_out)).sum() + (t_h[0] * torch.tensor(d_hn)).sum()
            + (t_c[0] * torch.tensor(d_cn)).sum())
    loss.backward()
    want = [tx.grad, th.grad[0], tc.grad[0], *(t.grad for t in tw)]
    step_bytes = 10 * batch * hidden * np.dtype(dtype).itemsize  # k, fa and d(pre) of one step
    states = []
    for span in (1, 3, 10, 22, 23, 1000):
        monkeypatch.setattr(recurrent, "CHUNK_BYTES", span * step_bytes)
        saved = forward(x, h0, c0, w_ih, w_hh, b_ih, b_hh, reverse)[3:]
        assert saved[0].ndim == 4  # the blocked kernels ran
        grads = backward(d_out, d_hn, d_cn, x, w_ih, w_hh, True, tuple(saved), reverse, (True,) * 7)
        for got, expected in zip(grads, want, strict=True):
            np.testing.assert_allclose(got, expected.numpy(), **TOL[dtype])
        states.append(grads[1:3])
    for dh0, dc0 in states[1:]:
        np.testing.assert_array_equal(dh0, states[0][0])
        np.testing.assert_array_equal(dc0, states[0][1])
