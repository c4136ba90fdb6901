"""ferro.nn.utils.rnn (PackedSequence and its helpers) and RNN / LSTM / GRU on packed input, against torch."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest
from test_nn_rnn import LAYERS, backward_and_check, close, leaf, pair, weighted

import ferro
from ferro import nn
from ferro.autograd import gradcheck, gradgradcheck
from ferro.nn.modules.rnn import _MATH, _Recurrence
from ferro.nn.utils import rnn as fr

torch = pytest.importorskip("torch")
tr = torch.nn.utils.rnn

F64 = ferro.float64
IN, H = 3, 4
UNSORTED = [3, 5, 1, 3, 2]  # ties and a length-1 sequence
SORTED = [5, 3, 3, 1]


def padded(lengths: list[int], *feature: int, batch_first: bool = False, seed: int = 0) -> np.ndarray:
    """A padded batch of random values (padding included: packing must ignore it)."""
    t, b = max(lengths) + 1, len(lengths)  # one step longer than the longest sequence
    return np.random.default_rng(seed).standard_normal((b, t, *feature) if batch_first else (t, b, *feature))


def same_packed(f: Any, t: Any, what: str = "packed") -> None:
    """Data, batch sizes and both index tensors equal (indices None together)."""
    close(f.data, t.data, f"{what} data")
    assert f.batch_sizes.tolist() == t.batch_sizes.tolist(), what
    assert f.batch_sizes.dtype == ferro.int64 and f.batch_sizes.device.type == "cpu"
    for name in ("sorted_indices", "unsorted_indices"):
        fi, ti = getattr(f, name), getattr(t, name)
        assert (fi is None) == (ti is None), name
        if fi is not None:
            assert fi.tolist() == ti.tolist(), name


# -- pack / pad --------------------------------------------------------------------------------------


@pytest.mark.parametrize(("lengths", "enforce_sorted"), [(SORTED, True), (SORTED, False), (UNSORTED, False)])
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("feature", [(), (IN,), (2, 3)])
def test_pack_pad_round_trip_matches_torch(lengths: list[int], enforce_sorted: bool, batch_first: bool,
                                           feature: tuple[int, ...]) -> None:
    fx, tx = leaf(padded(lengths, *feature, batch_first=batch_first))
    fp = fr.pack_padded_sequence(fx, ferro.tensor(lengths), batch_first, enforce_sorted)
    tp = tr.pack_padded_sequence(tx, torch.tensor(lengths), batch_first, enforce_sorted)
    same_packed(fp, tp)
    for total_length in (None, max(lengths) + 2):
        fo, fl = fr.pad_packed_sequence(fp, batch_first, -1.5, total_length)
        to, tl = tr.pad_packed_sequence(tp, batch_first, -1.5, total_length)
        assert list(fo.shape) == list(to.shape)
        close(fo, to, f"padded (total_length={total_length})")
        assert fl.tolist() == tl.tolist() == lengths and fl.dtype == ferro.int64
    w = np.random.default_rng(1).standard_normal(tuple(to.shape))
    weighted([fo], [w], ferro).backward()
    weighted([to], [w], torch).backward()
    close(fx.grad, tx.grad, "gradient through pack and pad (zero on the padding)")


def test_lengths_as_a_python_list_and_packed_rows_in_time_order() -> None:
    x = ferro.tensor([[1, 2, 0], [3, 0, 0], [4, 5, 6]])
    p = fr.pack_padded_sequence(x, [2, 1, 3], batch_first=True, enforce_sorted=False)
    assert p.data.tolist() == [4, 1, 3, 5, 2, 6]
    assert p.batch_sizes.tolist() == [3, 2, 1]
    assert p.sorted_indices.tolist() == [2, 0, 1] and p.unsorted_indices.tolist() == [1, 2, 0]
    out, lengths = fr.pad_packed_sequence(p, batch_first=True)
    assert out.tolist() == x.tolist() and lengths.tolist() == [2, 1, 3]


@pytest.mark.parametrize("padding_side", ["right", "left"])
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("feature", [(), (2,), (2, 3)])
def test_pad_sequence_matches_torch(padding_side: str, batch_first: bool, feature: tuple[int, ...]) -> None:
    rng = np.random.default_rng(2)
    pairs = [leaf(rng.standard_normal((n, *feature))) for n in (2, 5, 0, 3)]
    fo = fr.pad_sequence([p[0] for p in pairs], batch_first, 9.0, padding_side)
    to = tr.pad_sequence([p[1] for p in pairs], batch_first, 9.0, padding_side)
    assert list(fo.shape) == list(to.shape)
    close(fo, to, "padded")
    w = rng.standard_normal(tuple(to.shape))
    weighted([fo], [w], ferro).backward()
    weighted([to], [w], torch).backward()
    for k, (f, t) in enumerate(pairs):
        if f.numel():  # ferro.cat leaves an empty input's .grad None, where torch gives an empty tensor
            close(f.grad, t.grad, f"gradient of sequence {k}")


def test_pad_sequence_of_a_tensor_and_integer_dtype_as_torch() -> None:
    x = np.arange(6).reshape(2, 3)
    fo, to = fr.pad_sequence(ferro.tensor(x)), tr.pad_sequence(torch.tensor(x))
    assert fo.tolist() == to.tolist() and fo.dtype == ferro.int64


@pytest.mark.parametrize("enforce_sorted", [False, True])
def test_pack_sequence_unpack_and_unpad_match_torch(enforce_sorted: bool) -> None:
    rng = np.random.default_rng(3)
    sizes = (4, 3, 1) if enforce_sorted else (1, 4, 2)
    pairs = [leaf(rng.standard_normal((n, IN))) for n in sizes]
    fp = fr.pack_sequence([p[0] for p in pairs], enforce_sorted)
    tp = tr.pack_sequence([p[1] for p in pairs], enforce_sorted)
    same_packed(fp, tp)
    fu, tu = fr.unpack_sequence(fp), tr.unpack_sequence(tp)
    assert len(fu) == len(tu) == len(sizes)
    for k, (f, t) in enumerate(zip(fu, tu)):
        close(f, t, f"unpacked sequence {k}")
        close(f, pairs[k][0], f"unpacked sequence {k} is the input")
    sum(((f * (k + 1)) ** 2).sum() for k, f in enumerate(fu)).backward()
    sum(((t * (k + 1)) ** 2).sum() for k, t in enumerate(tu)).backward()
    for k, (f, t) in enumerate(pairs):
        close(f.grad, t.grad, f"gradient of sequence {k}")
    for batch_first in (False, True):
        f_pad = fr.pad_sequence([p[0] for p in pairs], batch_first)
        t_pad = tr.pad_sequence([p[1] for p in pairs], batch_first)
        shape = list(f_pad.shape)
        for k, (f, t) in enumerate(zip(fr.unpad_sequence(f_pad, ferro.tensor(sizes), batch_first),
                                       tr.unpad_sequence(t_pad, torch.tensor(sizes), batch_first))):
            close(f, t, f"unpadded sequence {k}")
        assert list(f_pad.shape) == shape  # unlike torch's, ferro's unpad_sequence does not transpose its input


def test_packed_sequence_is_a_named_tuple_with_conversions() -> None:
    p = fr.pack_sequence([ferro.tensor([1.0, 2.0, 3.0]), ferro.tensor([4.0])])
    data, batch_sizes, sorted_indices, unsorted_indices = p
    assert data is p.data and batch_sizes is p.batch_sizes and sorted_indices is unsorted_indices is None
    assert p._fields == ("data", "batch_sizes", "sorted_indices", "unsorted_indices")
    assert p.to(ferro.float32) is p and p.float() is p and p.cpu() is p
    d = p.double()
    assert isinstance(d, fr.PackedSequence) and d.data.dtype == F64 and d.batch_sizes is p.batch_sizes
    assert p.long().data.tolist() == [1, 4, 2, 3] and p.int().data.dtype == ferro.int32
    again = fr.PackedSequence((p.data, p.batch_sizes))
    assert again.data is p.data and again.batch_sizes is p.batch_sizes
    q = fr.PackedSequence(p.data, p.batch_sizes, ferro.tensor([1, 0]))
    assert q.unsorted_indices.tolist() == [1, 0]


def test_invert_permutation_matches_torch() -> None:
    perm = [3, 0, 4, 1, 2]
    assert fr.invert_permutation(ferro.tensor(perm)).tolist() == tr.invert_permutation(torch.tensor(perm)).tolist()
    assert fr.invert_permutation(None) is None


def test_nn_utils_exports_rnn_as_torch() -> None:
    assert nn.utils.rnn is fr
    assert set(fr.__all__) <= set(dir(tr))


# -- recurrent layers on packed input ------------------------------------------------------------------


def run_packed(kind: str, m: Any, lib: Any, x: Any, lengths: list[int], batch_first: bool, enforce_sorted: bool,
               state: Any) -> list[Any]:
    """Pack, run, and return [packed output data, h_n(, c_n)] and the packed output."""
    utils = fr if lib is ferro else tr
    out, st = m(utils.pack_padded_sequence(x, lengths, batch_first, enforce_sorted), state)
    assert isinstance(out, utils.PackedSequence)
    return [out, *(st if kind == "LSTM" else (st,))]


LAYER_CASES = list(itertools.product(["RNN", "RNN_relu", "LSTM", "GRU"], [False, True], [False, True],
                                     [(UNSORTED, False), (SORTED, True)]))


@pytest.mark.parametrize(("kind", "bidirectional", "with_state", "case"), LAYER_CASES)
def test_layer_on_packed_input_matches_torch(kind: str, bidirectional: bool, with_state: bool,
                                             case: tuple[list[int], bool]) -> None:
    lengths, enforce_sorted = case
    extra = {"nonlinearity": "relu"} if kind == "RNN_relu" else {}
    kind = kind.split("_")[0]
    batch_first = not with_state  # either layout of the padded input packs the same
    fm, tm = pair(kind, LAYERS, IN, H, num_layers=2, bidirectional=bidirectional, batch_first=batch_first,
                  **extra)
    rng = np.random.default_rng(4)
    fx, tx = leaf(padded(lengths, IN, batch_first=batch_first, seed=5))
    f_inputs, t_inputs = [fx], [tx]
    f_state = t_state = None
    if with_state:
        shape = (2 * (2 if bidirectional else 1), len(lengths), H)
        pairs = [leaf(rng.standard_normal(shape)) for _ in range(2 if kind == "LSTM" else 1)]
        f_inputs += [p[0] for p in pairs]
        t_inputs += [p[1] for p in pairs]
        f_state = tuple(p[0] for p in pairs) if kind == "LSTM" else pairs[0][0]
        t_state = tuple(p[1] for p in pairs) if kind == "LSTM" else pairs[0][1]
    f_outs = run_packed(kind, fm, ferro, fx, lengths, batch_first, enforce_sorted, f_state)
    t_outs = run_packed(kind, tm, torch, tx, lengths, batch_first, enforce_sorted, t_state)
    same_packed(f_outs[0], t_outs[0], "output")
    f_outs[0], t_outs[0] = f_outs[0].data, t_outs[0].data
    for k, (f, t) in enumerate(zip(f_outs[1:], t_outs[1:])):
        assert list(f.shape) == list(t.shape)
        close(f, t, f"final state {k}")
    backward_and_check(rng, fm, tm, f_outs, t_outs, f_inputs, t_inputs)


@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
def test_each_sequence_runs_as_if_alone(kind: str) -> None:
    """Packed, every sequence gets the outputs and final state of running it by itself (no torch involved)."""
    m = LAYERS[kind][0](IN, H, num_layers=2, bidirectional=True, dtype=F64)
    seqs = [ferro.randn(n, IN, dtype=F64) for n in UNSORTED]
    out, state = m(fr.pack_sequence(seqs, enforce_sorted=False))
    h_n = state[0] if kind == "LSTM" else state
    for k, (seq, got) in enumerate(zip(seqs, fr.unpack_sequence(out))):
        alone, alone_state = m(seq)
        close(got, alone, f"output of sequence {k}")
        close(h_n[:, k], alone_state[0] if kind == "LSTM" else alone_state, f"h_n of sequence {k}")
        if kind == "LSTM":
            close(state[1][:, k], alone_state[1], f"c_n of sequence {k}")


def test_projected_lstm_on_packed_input_matches_torch() -> None:
    fm, tm = pair("LSTM", LAYERS, IN, H, num_layers=2, bidirectional=True, proj_size=2)
    fx, tx = leaf(padded(UNSORTED, IN, seed=6))
    f_outs = run_packed("LSTM", fm, ferro, fx, UNSORTED, False, False, None)
    t_outs = run_packed("LSTM", tm, torch, tx, UNSORTED, False, False, None)
    f_outs[0], t_outs[0] = f_outs[0].data, t_outs[0].data
    for k, (f, t) in enumerate(zip(f_outs, t_outs)):
        close(f, t, f"output {k}")
    backward_and_check(np.random.default_rng(7), fm, tm, f_outs, t_outs, [fx], [tx])


def test_float32_packed_gru_matches_torch() -> None:
    tm = torch.nn.GRU(IN, H, num_layers=2, bidirectional=True)
    fm = nn.GRU(IN, H, num_layers=2, bidirectional=True)
    fm.load_state_dict({k: ferro.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    x = padded(UNSORTED, IN, seed=8).astype(np.float32)
    fo, fh = fm(fr.pack_padded_sequence(ferro.tensor(x), UNSORTED, enforce_sorted=False))
    to, th = tm(tr.pack_padded_sequence(torch.tensor(x), UNSORTED, enforce_sorted=False))
    assert fo.data.dtype == ferro.float32
    close(fo.data, to.data, "output", tol=1e-5)
    close(fh, th, "h_n", tol=1e-5)


@pytest.mark.parametrize("mode", ["RNN_TANH", "LSTM", "GRU"])
@pytest.mark.parametrize("reverse", [False, True])
def test_fused_recurrence_gradcheck_on_packed_rows(mode: str, reverse: bool) -> None:
    sizes = (3, 2, 2, 1)
    g, lstm = _MATH[mode].gates * 2, mode == "LSTM"

    def r(*shape: int) -> Any:
        return ferro.randn(*shape, dtype=F64, requires_grad=True)

    x, h0, w_ih, w_hh, b_ih, b_hh = r(sum(sizes), 2), r(3, 2), r(g, 2), r(g, 2), r(g), r(g)
    c0 = r(3, 2) if lstm else None

    def fn(x: Any, h0: Any, w_ih: Any, w_hh: Any, b_ih: Any, b_hh: Any, *c: Any) -> Any:
        res = _Recurrence.apply(_MATH[mode], reverse, x, h0, c[0] if c else None, w_ih, w_hh, b_ih, b_hh, None,
                                sizes=sizes)
        return ferro.cat([t.reshape(-1) for t in res])

    inputs = [x, h0, w_ih, w_hh, b_ih, b_hh, *([c0] if lstm else [])]
    assert gradcheck(fn, inputs)
    rest = inputs[2:]
    assert gradgradcheck(lambda x, h0: fn(x, h0, *rest), [x, h0])  # the recorded steps of double backward


def test_packed_layer_double_backward() -> None:
    m = nn.GRU(2, 2, bidirectional=True, dtype=F64)
    x = ferro.randn(3, 2, 2, dtype=F64, requires_grad=True)

    def fn(x: Any) -> Any:
        out, h = m(fr.pack_padded_sequence(x, [1, 3], enforce_sorted=False))
        return ferro.cat([out.data.reshape(-1), h.reshape(-1)])

    assert gradgradcheck(fn, [x])


def test_packed_dropout_between_layers_only_in_training() -> None:
    fm, tm = pair("LSTM", LAYERS, IN, H, num_layers=2, dropout=1.0)
    top, _ = pair("LSTM", LAYERS, H, H)  # the second layer alone, fed zeros (all of layer 1 dropped)
    top.load_state_dict({k.replace("l1", "l0"): v for k, v in fm.state_dict().items() if "l1" in k})
    x = padded(UNSORTED, IN, seed=9)
    packed = fr.pack_padded_sequence(ferro.tensor(x), UNSORTED, enforce_sorted=False)
    out, (h, _) = fm(packed)
    expected, (h_top, _) = top(packed._replace(data=ferro.zeros(packed.data.shape[0], H, dtype=F64)))
    close(out.data, expected.data, "output with every unit of layer 1 dropped")
    close(h[1], h_top[0], "h_n of the top layer")
    fm.eval()
    tm.eval()
    close(fm(packed)[0].data, tm(tr.pack_padded_sequence(torch.tensor(x), UNSORTED, enforce_sorted=False))[0].data,
          "eval mode: no dropout")


def test_packed_input_records_no_graph_without_grad() -> None:
    m = nn.LSTM(IN, H)
    with ferro.no_grad():
        out, (h, _) = m(fr.pack_sequence([ferro.randn(3, IN), ferro.randn(2, IN)]))
    assert out.data.grad_fn is None and h.grad_fn is None


# -- errors ------------------------------------------------------------------------------------------


def _x(lib: Any) -> Any:
    return lib.zeros(3, 2, IN)


TORCH_ERRORS = {  # each ferro call and its torch twin raise the same type with the same message
    "unsorted lengths": lambda lib, u: u.pack_padded_sequence(_x(lib), [2, 3]),
    "zero length": lambda lib, u: u.pack_padded_sequence(_x(lib), [2, 0]),
    "zero length, unsorted allowed": lambda lib, u: u.pack_padded_sequence(_x(lib), [0, 2], enforce_sorted=False),
    "too many lengths": lambda lib, u: u.pack_padded_sequence(_x(lib), [3, 2, 1]),
    "empty input": lambda lib, u: u.pack_padded_sequence(lib.zeros(0, 2, IN), [0, 0]),
    "empty list": lambda lib, u: u.pad_sequence([]),
    "empty pack_sequence": lambda lib, u: u.pack_sequence([]),
    "padding side": lambda lib, u: u.pad_sequence([lib.ones(2)], padding_side="middle"),
    "total_length": lambda lib, u: u.pad_packed_sequence(u.pack_padded_sequence(_x(lib), [3, 2]), total_length=2),
}


@pytest.mark.parametrize("case", list(TORCH_ERRORS))
def test_bad_input_raises_as_torch(case: str) -> None:
    with pytest.raises(Exception) as t_err:  # whatever torch raises is the expectation
        TORCH_ERRORS[case](torch, tr)
    with pytest.raises(type(t_err.value)) as f_err:
        TORCH_ERRORS[case](ferro, fr)
    assert str(f_err.value) == str(t_err.value)


def test_bad_input_torch_does_not_catch_raises_clearly() -> None:
    with pytest.raises(RuntimeError, match="a length of 5 is longer than the input's 3 time steps"):
        fr.pack_padded_sequence(ferro.zeros(3, 2, IN), [5, 2])
    with pytest.raises(RuntimeError, match="a length of 4 is longer than the input's 3 time steps"):
        fr.pack_padded_sequence(ferro.zeros(2, 3, IN), [1, 4], batch_first=True, enforce_sorted=False)
    with pytest.raises(RuntimeError, match="'lengths' argument should be a 1D CPU int64 tensor, but got 2D"):
        fr.pack_padded_sequence(ferro.zeros(3, 2, IN), ferro.tensor([[3, 2]]))
    with pytest.raises(ValueError, match=r"sequence 1 \[2, 4\]"):
        fr.pad_sequence([ferro.zeros(2, 3), ferro.zeros(2, 4)])
    with pytest.raises(ValueError, match="expected input of shape"):
        fr.pack_padded_sequence(ferro.zeros(3), [3])
    gru = nn.GRU(IN, H)
    packed = fr.pack_sequence([ferro.zeros(3, IN), ferro.zeros(2, IN)])
    with pytest.raises(ValueError, match="packed input to be 2D"):
        gru(packed._replace(data=packed.data.unsqueeze(0)))
    with pytest.raises(ferro.errors.ShapeError, match=r"expected h_0 of shape \[1, 2, 4\], got \[1, 3, 4\]"):
        gru(packed, ferro.zeros(1, 3, H))
