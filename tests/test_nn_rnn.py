"""ferro.nn.RNN / LSTM / GRU and their cells against torch.nn: parameters, outputs, states, gradients."""

from __future__ import annotations

import itertools
import warnings
from typing import Any

import numpy as np
import pytest

import ferro
from ferro import nn
from ferro.autograd import gradcheck, gradgradcheck
from ferro.errors import DTypeError, ShapeError
from ferro.nn.modules.rnn import _MATH, _Recurrence

torch = pytest.importorskip("torch")

F64 = ferro.float64
LAYERS = {"RNN": (nn.RNN, torch.nn.RNN), "LSTM": (nn.LSTM, torch.nn.LSTM), "GRU": (nn.GRU, torch.nn.GRU)}
CELLS = {"RNNCell": (nn.RNNCell, torch.nn.RNNCell), "LSTMCell": (nn.LSTMCell, torch.nn.LSTMCell),
         "GRUCell": (nn.GRUCell, torch.nn.GRUCell)}
IN, H, T, N = 3, 4, 5, 2


def pair(kind: str, table: dict[str, Any], *args: Any, **kwargs: Any) -> tuple[Any, Any]:
    """The same layer in ferro (float64) and torch (double), with torch's parameter values copied in."""
    fcls, tcls = table[kind]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # dropout with one layer
        tm = tcls(*args, **kwargs).double()
        fm = fcls(*args, **kwargs, dtype=F64)
    state = {k: ferro.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()}
    fm.load_state_dict(state)
    return fm, tm


def leaf(a: np.ndarray) -> tuple[Any, Any]:
    return ferro.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)


def close(f: Any, t: Any, what: str, tol: float = 1e-10) -> None:
    assert f is not None and t is not None, what
    np.testing.assert_allclose(f.detach().numpy(), t.detach().numpy(), rtol=tol, atol=tol, err_msg=what)


def weighted(outs: list[Any], weights: list[np.ndarray], lib: Any) -> Any:
    """sum_k (outs[k] * weights[k]).sum(): a loss that gives every output element its own gradient."""
    return sum((o * lib.tensor(w)).sum() for o, w in zip(outs, weights))


def flat_outputs(kind: str, res: Any) -> list[Any]:
    out, state = res
    return [out, *state] if kind == "LSTM" else [out, state]


def check_grads(fm: Any, tm: Any, f_inputs: list[Any], t_inputs: list[Any]) -> None:
    for k, (fi, ti) in enumerate(zip(f_inputs, t_inputs)):
        close(fi.grad, ti.grad, f"grad of input {k}")
    tparams = dict(tm.named_parameters())
    for name, p in fm.named_parameters():
        close(p.grad, tparams[name].grad, f"grad of {name}")


def backward_and_check(rng: Any, fm: Any, tm: Any, f_outs: list[Any], t_outs: list[Any], f_inputs: list[Any],
                       t_inputs: list[Any]) -> None:
    """Backward through both libraries' outputs with the same random weights, then compare every gradient."""
    weights = [rng.standard_normal(tuple(t.shape)) for t in t_outs]
    weighted(f_outs, weights, ferro).backward()
    weighted(t_outs, weights, torch).backward()
    check_grads(fm, tm, f_inputs, t_inputs)


# -- parameters -----------------------------------------------------------------------------


@pytest.mark.parametrize(("kind", "kwargs"), [
    ("RNN", {"num_layers": 2, "bidirectional": True}), ("RNN", {"bias": False, "nonlinearity": "relu"}),
    ("LSTM", {"num_layers": 3, "bidirectional": True}), ("LSTM", {"num_layers": 2, "proj_size": 2}),
    ("LSTM", {"bias": False, "proj_size": 3, "bidirectional": True}), ("GRU", {"num_layers": 2, "bidirectional": True}),
])
def test_parameter_names_shapes_and_repr_match_torch(kind: str, kwargs: dict[str, Any]) -> None:
    fcls, tcls = LAYERS[kind]
    fm, tm = fcls(IN, 5, **kwargs), tcls(IN, 5, **kwargs)
    assert [(n, list(p.shape)) for n, p in fm.named_parameters()] == \
        [(n, list(p.shape)) for n, p in tm.named_parameters()]
    assert [[list(p.shape) for p in ps] for ps in fm.all_weights] == \
        [[list(p.shape) for p in ps] for ps in tm.all_weights]
    assert repr(fm) == repr(tm)


@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU", "RNNCell", "LSTMCell", "GRUCell"])
def test_default_initialization_is_uniform_in_one_over_sqrt_hidden(kind: str) -> None:
    table = LAYERS if kind in LAYERS else CELLS
    m = table[kind][0](IN, 16)
    values = np.concatenate([p.detach().numpy().ravel() for p in m.parameters()])
    bound = 1 / np.sqrt(16)
    assert np.all(np.abs(values) <= bound)
    assert values.max() > 0.8 * bound and values.min() < -0.8 * bound  # spread over the range, not constant
    assert all(p.requires_grad for p in m.parameters())


# -- layers against torch -------------------------------------------------------------------------


CONFIGS = list(itertools.product(["RNN", "RNN_relu", "LSTM", "GRU"], [1, 2], [False, True], [False, True],
                                 [False, True]))


@pytest.mark.parametrize(("kind", "layers", "bidirectional", "batch_first", "with_state"), CONFIGS)
def test_layer_matches_torch(kind: str, layers: int, bidirectional: bool, batch_first: bool,
                             with_state: bool) -> None:
    extra = {"nonlinearity": "relu"} if kind == "RNN_relu" else {}
    kind = kind.split("_")[0]
    fm, tm = pair(kind, LAYERS, IN, H, num_layers=layers, bidirectional=bidirectional, batch_first=batch_first,
                  **extra)
    rng = np.random.default_rng(len(CONFIGS))
    fx, tx = leaf(rng.standard_normal((N, T, IN) if batch_first else (T, N, IN)))
    f_inputs, t_inputs = [fx], [tx]
    f_state = t_state = None
    if with_state:
        shape = (layers * (2 if bidirectional else 1), N, H)
        pairs = [leaf(rng.standard_normal(shape)) for _ in range(2 if kind == "LSTM" else 1)]
        f_inputs += [p[0] for p in pairs]
        t_inputs += [p[1] for p in pairs]
        f_state = tuple(p[0] for p in pairs) if kind == "LSTM" else pairs[0][0]
        t_state = tuple(p[1] for p in pairs) if kind == "LSTM" else pairs[0][1]
    f_outs, t_outs = flat_outputs(kind, fm(fx, f_state)), flat_outputs(kind, tm(tx, t_state))
    for k, (f, t) in enumerate(zip(f_outs, t_outs)):
        assert list(f.shape) == list(t.shape)
        close(f, t, f"output {k}")
    backward_and_check(rng, fm, tm, f_outs, t_outs, f_inputs, t_inputs)


@pytest.mark.parametrize(("kind", "with_state"), list(itertools.product(["RNN", "LSTM", "GRU"], [False, True])))
@pytest.mark.parametrize("batch_first", [False, True])
def test_unbatched_input_matches_torch(kind: str, with_state: bool, batch_first: bool) -> None:
    fm, tm = pair(kind, LAYERS, IN, H, num_layers=2, bidirectional=True, batch_first=batch_first)
    rng = np.random.default_rng(1)
    fx, tx = leaf(rng.standard_normal((T, IN)))
    f_state = t_state = None
    f_inputs, t_inputs = [fx], [tx]
    if with_state:
        pairs = [leaf(rng.standard_normal((4, H))) for _ in range(2 if kind == "LSTM" else 1)]
        f_inputs += [p[0] for p in pairs]
        t_inputs += [p[1] for p in pairs]
        f_state = tuple(p[0] for p in pairs) if kind == "LSTM" else pairs[0][0]
        t_state = tuple(p[1] for p in pairs) if kind == "LSTM" else pairs[0][1]
    f_outs, t_outs = flat_outputs(kind, fm(fx, f_state)), flat_outputs(kind, tm(tx, t_state))
    for f, t in zip(f_outs, t_outs):
        assert list(f.shape) == list(t.shape)
        close(f, t, "output")
    backward_and_check(rng, fm, tm, f_outs, t_outs, f_inputs, t_inputs)


@pytest.mark.parametrize(("kind", "kwargs"), [
    ("LSTM", {"proj_size": 2, "num_layers": 2, "bidirectional": True}), ("LSTM", {"bias": False, "num_layers": 2}),
    ("GRU", {"bias": False, "bidirectional": True}), ("RNN", {"bias": False, "num_layers": 2}),
])
def test_projection_and_no_bias_match_torch(kind: str, kwargs: dict[str, Any]) -> None:
    fm, tm = pair(kind, LAYERS, IN, H, **kwargs)
    rng = np.random.default_rng(2)
    fx, tx = leaf(rng.standard_normal((T, N, IN)))
    f_outs, t_outs = flat_outputs(kind, fm(fx)), flat_outputs(kind, tm(tx))
    for f, t in zip(f_outs, t_outs):
        assert list(f.shape) == list(t.shape)
        close(f, t, "output")
    backward_and_check(rng, fm, tm, f_outs, t_outs, [fx], [tx])


def test_only_the_final_state_used_still_gives_every_gradient() -> None:
    fm, tm = pair("LSTM", LAYERS, IN, H, num_layers=2)
    fx, tx = leaf(np.random.default_rng(3).standard_normal((T, N, IN)))
    fm(fx)[1][1].sum().backward()  # c_n only
    tm(tx)[1][1].sum().backward()
    check_grads(fm, tm, [fx], [tx])


def test_float32_layer_matches_torch() -> None:
    tm = torch.nn.GRU(IN, H, num_layers=2, batch_first=True)
    fm = nn.GRU(IN, H, num_layers=2, batch_first=True)
    fm.load_state_dict({k: ferro.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    x = np.random.default_rng(4).standard_normal((N, T, IN)).astype(np.float32)
    out, _ = fm(ferro.tensor(x))
    assert out.dtype == ferro.float32
    close(out, tm(torch.tensor(x))[0], "output", tol=1e-5)


# -- dropout between layers ---------------------------------------------------------------------------


def test_dropout_applies_between_layers_only_in_training() -> None:
    fm, tm = pair("LSTM", LAYERS, IN, H, num_layers=2, dropout=1.0)
    top, _ = pair("LSTM", LAYERS, H, H)  # the second layer alone, fed zeros (all of layer 1 dropped)
    top.load_state_dict({k.replace("l1", "l0"): v for k, v in fm.state_dict().items() if "l1" in k})
    x = ferro.randn(T, N, IN, dtype=F64)
    out, (h, _) = fm(x)
    expected, (h_top, _) = top(ferro.zeros(T, N, H, dtype=F64))
    close(out, expected, "output with every unit of layer 1 dropped")
    close(h[1], h_top[0], "h_n of the top layer")
    fm.eval()
    tm.eval()
    close(fm(x)[0], tm(torch.tensor(x.numpy()))[0], "eval mode: no dropout")


def test_dropout_with_a_single_layer_warns_as_torch() -> None:
    with pytest.warns(UserWarning, match="num_layers greater than 1"):
        nn.GRU(IN, H, dropout=0.5)


# -- cells --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("kind", "bias", "batched", "with_state", "relu"),
                         [(k, b, bt, s, r) for k, b, bt, s, r in
                          itertools.product(CELLS, [True, False], [True, False], [True, False], [False, True])
                          if not (r and k != "RNNCell")])
def test_cell_matches_torch(kind: str, bias: bool, batched: bool, with_state: bool, relu: bool) -> None:
    extra = {"nonlinearity": "relu"} if relu else {}
    fm, tm = pair(kind, CELLS, IN, H, bias=bias, **extra)
    rng = np.random.default_rng(5)
    fx, tx = leaf(rng.standard_normal((N, IN) if batched else (IN,)))
    f_inputs, t_inputs = [fx], [tx]
    f_state = t_state = None
    if with_state:
        pairs = [leaf(rng.standard_normal((N, H) if batched else (H,))) for _ in range(2 if kind == "LSTMCell" else 1)]
        f_inputs += [p[0] for p in pairs]
        t_inputs += [p[1] for p in pairs]
        f_state = tuple(p[0] for p in pairs) if kind == "LSTMCell" else pairs[0][0]
        t_state = tuple(p[1] for p in pairs) if kind == "LSTMCell" else pairs[0][1]
    fo, to = fm(fx, f_state), tm(tx, t_state)
    f_outs, t_outs = (list(fo), list(to)) if kind == "LSTMCell" else ([fo], [to])
    for f, t in zip(f_outs, t_outs):
        assert list(f.shape) == list(t.shape)
        close(f, t, "output")
    backward_and_check(rng, fm, tm, f_outs, t_outs, f_inputs, t_inputs)


@pytest.mark.parametrize("kind", list(CELLS))
def test_cell_gradcheck_and_gradgradcheck(kind: str) -> None:
    cell = CELLS[kind][0](2, 3, dtype=F64)
    x = ferro.randn(2, 2, dtype=F64, requires_grad=True)
    h = ferro.randn(2, 3, dtype=F64, requires_grad=True)
    c = ferro.randn(2, 3, dtype=F64, requires_grad=True)
    if kind == "LSTMCell":
        def fn(x: Any, h: Any, c: Any) -> Any:
            return ferro.cat(cell(x, (h, c)), -1)
        inputs = [x, h, c]
    else:
        def fn(x: Any, h: Any) -> Any:  # type: ignore[misc]
            return cell(x, h)
        inputs = [x, h]
    assert gradcheck(fn, inputs)
    assert gradgradcheck(fn, inputs)


# -- the fused layer node ------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["RNN_TANH", "RNN_RELU", "LSTM", "GRU"])
@pytest.mark.parametrize("reverse", [False, True])
def test_fused_recurrence_gradcheck_every_input(mode: str, reverse: bool) -> None:
    g = _MATH[mode].gates * 3
    lstm = mode == "LSTM"

    def r(*shape: int) -> Any:
        return ferro.randn(*shape, dtype=F64, requires_grad=True)

    x, h0, w_ih, w_hh, b_ih, b_hh = r(3, 2, 2), r(2, 3), r(g, 2), r(g, 3), r(g), r(g)
    c0 = r(2, 3) if lstm else None

    def fn(x: Any, h0: Any, w_ih: Any, w_hh: Any, b_ih: Any, b_hh: Any, *c: Any) -> Any:
        res = _Recurrence.apply(_MATH[mode], reverse, x, h0, c[0] if c else None, w_ih, w_hh, b_ih, b_hh, None)
        return ferro.cat([res[0].reshape(-1), *(t.reshape(-1) for t in res[1:])])

    assert gradcheck(fn, [x, h0, w_ih, w_hh, b_ih, b_hh, *([c0] if lstm else [])])


def test_fused_recurrence_gradcheck_with_projection() -> None:
    def r(*shape: int) -> Any:
        return ferro.randn(*shape, dtype=F64, requires_grad=True)

    x, h0, c0, w_ih, w_hh, w_hr = r(3, 2, 2), r(2, 2), r(2, 3), r(12, 2), r(12, 2), r(2, 3)

    def fn(x: Any, h0: Any, c0: Any, w_ih: Any, w_hh: Any, w_hr: Any) -> Any:
        out, h, c = _Recurrence.apply(_MATH["LSTM"], False, x, h0, c0, w_ih, w_hh, None, None, w_hr)
        return ferro.cat([out.reshape(-1), h.reshape(-1), c.reshape(-1)])

    assert gradcheck(fn, [x, h0, c0, w_ih, w_hh, w_hr])


@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
def test_layer_double_backward(kind: str) -> None:
    m = LAYERS[kind][0](2, 2, bidirectional=True, dtype=F64)
    x = ferro.randn(2, 1, 2, dtype=F64, requires_grad=True)
    h = ferro.randn(2, 1, 2, dtype=F64, requires_grad=True)
    state = (h, ferro.randn(2, 1, 2, dtype=F64)) if kind == "LSTM" else h
    assert gradgradcheck(lambda x, h: m(x, (h, state[1]) if kind == "LSTM" else h)[0], [x, h])


def test_no_graph_is_recorded_without_grad() -> None:
    m = nn.LSTM(IN, H, num_layers=2)
    with ferro.no_grad():
        out, (h, _) = m(ferro.randn(T, N, IN))
    assert out.grad_fn is None and h.grad_fn is None and not out.requires_grad


# -- errors -------------------------------------------------------------------------------------------


def test_bad_inputs_raise_clear_errors() -> None:
    lstm = nn.LSTM(IN, H, num_layers=2)
    with pytest.raises(ValueError, match="Expected input to be 2D or 3D, got 4D"):
        lstm(ferro.randn(1, T, N, IN))
    with pytest.raises(ShapeError, match=f"Expected {IN}, got 7"):
        lstm(ferro.randn(T, N, 7))
    with pytest.raises(DTypeError, match="does not match weight dtype"):
        lstm(ferro.randn(T, N, IN, dtype=F64))
    with pytest.raises(ShapeError, match=r"h_0 of shape \[2, 2, 4\], got \[1, 2, 4\]"):
        lstm(ferro.randn(T, N, IN), (ferro.zeros(1, N, H), ferro.zeros(2, N, H)))
    with pytest.raises(ShapeError, match=r"c_0 should be 3-D"):
        lstm(ferro.randn(T, N, IN), (ferro.zeros(2, N, H), ferro.zeros(N, H)))
    with pytest.raises(ShapeError, match=r"expected h_0 of shape \[1, 4\]"):
        nn.GRU(IN, H)(ferro.randn(T, IN), ferro.zeros(2, H))
    with pytest.raises(ValueError, match="Expected input to be 1D or 2D"):
        nn.LSTMCell(IN, H)(ferro.randn(1, 2, IN))
    with pytest.raises(ShapeError, match=r"expected hidden state of shape \[2, 4\], got \[2, 5\]"):
        nn.GRUCell(IN, H)(ferro.randn(N, IN), ferro.zeros(N, 5))
    with pytest.raises(ShapeError, match="expected input_size=3"):
        nn.RNNCell(IN, H)(ferro.randn(N, 4))


def test_bad_constructor_arguments_raise_as_torch() -> None:
    with pytest.raises(ValueError, match="only supported for LSTM"):
        nn.RNNBase("GRU", IN, H, proj_size=2)
    with pytest.raises(ValueError, match="smaller than hidden_size"):
        nn.LSTM(IN, H, proj_size=H)
    with pytest.raises(ValueError, match="Unknown nonlinearity"):
        nn.RNN(IN, H, nonlinearity="sigmoid")
    with pytest.raises(ValueError, match="Unknown nonlinearity"):
        nn.RNNCell(IN, H, nonlinearity="sigmoid")
    with pytest.raises(ValueError, match="dropout should be a number"):
        nn.LSTM(IN, H, dropout=1.5)
    with pytest.raises(ValueError, match="hidden_size must be greater than zero"):
        nn.GRU(IN, 0)
    with pytest.raises(TypeError, match="input_size should be of type int"):
        nn.LSTM(2.5, H)


def test_failed_forward_leaves_inputs_untouched() -> None:
    x = ferro.randn(T, N, IN)
    h = ferro.randn(1, N, H)
    x_before, h_before = x.numpy().copy(), h.numpy().copy()
    with pytest.raises(ShapeError):
        nn.GRU(IN, H, num_layers=2)(x, h)
    np.testing.assert_array_equal(x.numpy(), x_before)
    np.testing.assert_array_equal(h.numpy(), h_before)


def test_module_conversion_and_state_dict_round_trip() -> None:
    m = nn.LSTM(IN, H, num_layers=2, bidirectional=True).double()
    assert all(p.dtype == F64 for p in m.parameters())
    out, _ = m(ferro.randn(T, N, IN, dtype=F64))
    assert out.dtype == F64
    tm = torch.nn.LSTM(IN, H, num_layers=2, bidirectional=True).double()
    tm.load_state_dict({k: torch.tensor(v.numpy()) for k, v in m.state_dict().items()})
    x = np.random.default_rng(6).standard_normal((T, N, IN))
    close(m(ferro.tensor(x))[0], tm(torch.tensor(x))[0], "output after loading ferro's state into torch")
