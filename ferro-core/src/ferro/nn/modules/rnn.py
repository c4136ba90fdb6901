"""Recurrent layers, as ``torch.nn``: ``RNN``, ``LSTM``, ``GRU`` and their cells.

Parameter names, shapes, gate order (LSTM ``i, f, g, o``; GRU ``r, z, n``) and
initialization are PyTorch's, so a PyTorch ``state_dict`` loads as is.

A layer runs each (layer, direction) as one fused autograd node
(:class:`_Recurrence`): the input projection of all time steps is one matmul,
each step is one matmul plus a few elementwise ops, and backward is written
out (backpropagation through time) so that the weight gradients are one matmul
each over all steps. Building the same thing from per-step autograd ops would
slice the sequence once per step, and each slice's backward costs a whole
sequence of zeros. Where the device has the fused sequence kernels
(``lstm_sequence_forward`` / ``_backward``, the ``gru_`` pair: ``docs/plugins.md``),
that node is one call of each instead, on raw arrays; packed sequences,
projections, other dtypes and double backward keep the step math. The cells run
the same step math with ordinary autograd.

A :class:`~ferro.nn.utils.rnn.PackedSequence` input runs the same node on its
packed rows, each step on the sequences still running, as PyTorch does.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

from ... import _api as ferro
from ..._core.dtypes import float32, float64
from ..._core.tensor import Tensor, _wrap
from ...autograd import Function, FunctionCtx
from ...errors import DTypeError, ShapeError
from .. import functional as F  # noqa: N812 - PyTorch's spelling
from ..parameter import Parameter
from ..utils.rnn import PackedSequence
from .module import Module

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]


# -- the step math, shared by the cells (with autograd) and the fused layers (without) ----------------
#
# Each mode's ``step(gi, h, c, w_hh, b_hh, w_hr)`` takes ``gi = x_t @ w_ih.T + b_ih`` (for RNN and LSTM
# ``b_hh`` may already be folded into ``gi``; then ``b_hh`` is None) and returns ``(h, c, saved)``;
# ``c`` is None except for LSTM. Backward is split in two: ``prepare(saved, h_prev, join)`` turns the saved
# tensors of all steps into per-step coefficients at once (a handful of ops over the whole sequence, the
# steps joined by ``join``: ``ferro.stack``, or ``ferro.cat`` for a packed sequence's steps of varying batch),
# so that ``back(k, t, dh, dc, w_hh, w_hr)``, run once per step, is a few ops. It returns the gradients
# of the pre-activations fed by ``gi`` and by ``h @ w_hh.T`` (the same tensor except for GRU), of
# ``h_prev`` and of ``c_prev``.


def _hh(h: Tensor, w_hh: Tensor, b_hh: Tensor | None) -> Tensor:
    gh = h @ w_hh.mT
    return gh if b_hh is None else gh + b_hh


class _RNNMath:
    """Elman RNN: ``h' = act(gi + h @ w_hh.T + b_hh)``."""

    gates = 1
    folds_bias = True
    kernels = None  # no fused sequence kernels

    def __init__(self, relu: bool) -> None:
        self.relu = relu

    def step(self, gi: Tensor, h: Tensor, c: Any, w_hh: Tensor, b_hh: Tensor | None,
             w_hr: Any = None) -> tuple[Tensor, None, tuple[Any, ...]]:
        pre = gi + _hh(h, w_hh, b_hh)
        out = pre.relu() if self.relu else pre.tanh()
        return out, None, (out,)

    def prepare(self, saved: list[tuple[Any, ...]], h_prev: list[Tensor], join: Any) -> Tensor:
        out = join([s[0] for s in saved])
        return (out > 0).to(out.dtype) if self.relu else 1 - out * out

    def back(self, k: Tensor, t: int, dh: Tensor, dc: Any, w_hh: Tensor,
             w_hr: Any) -> tuple[Tensor, Tensor, Tensor, None]:
        dpre = dh * k[t]
        return dpre, dpre, dpre @ w_hh, None


class _LSTMMath:
    """LSTM: ``i, f, g, o`` gates, ``c' = f * c + i * g``, ``h' = (o * tanh(c')) @ w_hr.T`` (projection optional)."""

    gates = 4
    folds_bias = True
    kernels = "lstm_sequence"  # the fused sequence kernels' stem (docs/plugins.md)

    def step(self, gi: Tensor, h: Tensor, c: Tensor, w_hh: Tensor, b_hh: Tensor | None,
             w_hr: Tensor | None = None) -> tuple[Tensor, Tensor, tuple[Any, ...]]:
        pre = gi + _hh(h, w_hh, b_hh)
        n = pre.shape[-1] // 4
        ifo = pre[..., :2 * n].sigmoid(), pre[..., 3 * n:].sigmoid()
        i, f = ifo[0].chunk(2, -1)
        o = ifo[1]
        g = pre[..., 2 * n:3 * n].tanh()
        c2 = f * c + i * g
        tc = c2.tanh()
        m = o * tc
        out = m if w_hr is None else m @ w_hr.mT
        return out, c2, (i, f, g, o, c, tc, m)

    def prepare(self, saved: list[tuple[Any, ...]], h_prev: list[Tensor],
                join: Any) -> tuple[Tensor, Tensor, Tensor]:
        i, f, g, o, c_prev, tc = (join(col) for col in list(zip(*saved))[:6])
        # dc += dm * a;  d(pre) = [dc, dc, dc, dm] * k;  dc_prev = dc * f
        k = ferro.cat([g * i * (1 - i), c_prev * f * (1 - f), i * (1 - g * g), tc * o * (1 - o)], -1)
        return o * (1 - tc * tc), k, f

    def back(self, k: tuple[Tensor, Tensor, Tensor], t: int, dh: Tensor, dc: Tensor, w_hh: Tensor,
             w_hr: Tensor | None) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        a, gates, f = k
        dm = dh if w_hr is None else dh @ w_hr
        dc = dc + dm * a[t]
        dpre = ferro.cat([dc, dc, dc, dm], -1) * gates[t]
        return dpre, dpre, dpre @ w_hh, dc * f[t]


class _GRUMath:
    """GRU: ``r, z`` gates, ``n = tanh(gi_n + r * (h @ w_hn.T + b_hn))``, ``h' = (1 - z) * n + z * h``."""

    gates = 3
    folds_bias = False  # b_hn sits inside r * (...), so it cannot join b_ih
    kernels = "gru_sequence"

    def step(self, gi: Tensor, h: Tensor, c: Any, w_hh: Tensor, b_hh: Tensor | None,
             w_hr: Any = None) -> tuple[Tensor, None, tuple[Any, ...]]:
        gh = _hh(h, w_hh, b_hh)
        k = gh.shape[-1] // 3
        r, z = (gi[..., :2 * k] + gh[..., :2 * k]).sigmoid().chunk(2, -1)
        ghn = gh[..., 2 * k:]
        n = (gi[..., 2 * k:] + r * ghn).tanh()
        out = n + z * (h - n)
        return out, None, (r, z, n, ghn)

    def prepare(self, saved: list[tuple[Any, ...]], h_prev: list[Tensor], join: Any) -> tuple[Tensor, ...]:
        r, z, n, ghn = (join(col) for col in zip(*saved))
        hp = join(h_prev)
        # dn = dh * a;  d(pre_r, pre_z) = [dn, dh] * rz;  dh_prev = dh * z + d(gh) @ w_hh
        rz = ferro.cat([ghn * r * (1 - r), (hp - n) * z * (1 - z)], -1)
        return (1 - z) * (1 - n * n), rz, r, z

    def back(self, k: tuple[Tensor, ...], t: int, dh: Tensor, dc: Any, w_hh: Tensor,
             w_hr: Any) -> tuple[Tensor, Tensor, Tensor, None]:
        a, rz, r, z = k
        dn = dh * a[t]
        drz = ferro.cat([dn, dh], -1) * rz[t]
        dgi = ferro.cat([drz, dn], -1)
        dgh = ferro.cat([drz, dn * r[t]], -1)
        return dgi, dgh, dh * z[t] + dgh @ w_hh, None


_MATH = {"RNN_TANH": _RNNMath(False), "RNN_RELU": _RNNMath(True), "LSTM": _LSTMMath(), "GRU": _GRUMath()}


# -- one (layer, direction) over the whole sequence as one autograd node --------------------------------


def _flat(t: Tensor) -> Tensor:
    return t.reshape(-1, t.shape[-1])


# A packed sequence (``sizes``, the batch of each step, decreasing) runs step ``t`` on the first
# ``sizes[t]`` rows of the state. Walked forward in time the state only shrinks: the rows of sequences
# that have ended leave it, and the full batch is reassembled from them at the end. Walked backward in
# time it only grows: a sequence's row joins from a source when the walk reaches its last step. The
# forward direction's forward pass and the reverse direction's backward pass walk forward in time, the
# other two backward; the forward passes carry states (source: the initial state), the backward passes
# their gradients (source: the final state's gradient), so all four share the helpers below.


def _join(sizes: tuple[int, ...] | None) -> Any:
    return ferro.stack if sizes is None else ferro.cat


def _resize(b: int, states: list[Any], sources: list[Any], left: list[list[Any]]) -> list[Any]:
    """``states`` (None entries stay None) cut to their first ``b`` rows, the rest appended to ``left``,
    or grown to ``b`` rows with the next rows of ``sources``."""
    n = states[0].shape[0]
    if b < n:
        left.append([None if s is None else s[b:] for s in states])
        return [None if s is None else s[:b] for s in states]
    return [None if s is None else ferro.cat([s, src[n:b]]) for s, src in zip(states, sources)]


def _first_rows(sizes: tuple[int, ...] | None, t: int, states: list[Any]) -> list[Any]:
    """The first ``sizes[t]`` rows of ``states``, those the walk's first step ``t`` runs on (all, unpacked)."""
    if sizes is None:
        return states
    return [None if s is None else s[:sizes[t]] for s in states]


def _reassemble(states: list[Any], left: list[list[Any]]) -> list[Any]:
    """The full batch again: ``states`` followed by the rows that left it, the last to leave first."""
    if not left:
        return states
    return [None if s is None else ferro.cat([s, *(rows[k] for rows in reversed(left))])
            for k, s in enumerate(states)]


def _run_steps(math_: Any, reverse: bool, x: Tensor, h0: Tensor, c0: Tensor | None, w_ih: Tensor, w_hh: Tensor,
               b_ih: Tensor | None, b_hh: Tensor | None, w_hr: Tensor | None, fold: bool,
               sizes: tuple[int, ...] | None = None) -> tuple[list[Any], list[Any], list[Any], Tensor, Any]:
    """Run ``math_`` over the time-major ``x`` (or the packed rows of ``sizes``); returns per-step outputs,
    previous states, saved tensors, h, c."""
    gi_all = x @ w_ih.mT
    if b_ih is not None:
        gi_all = gi_all + (b_ih + b_hh if fold else b_ih)
    b_step = None if fold else b_hh
    n = x.shape[0] if sizes is None else len(sizes)
    gi = gi_all if sizes is None else gi_all.split(sizes)
    outs: list[Any] = [None] * n
    h_prev: list[Any] = [None] * n
    saved: list[Any] = [None] * n
    steps = range(n - 1, -1, -1) if reverse else range(n)
    h, c = _first_rows(sizes, steps[0], [h0, c0])
    left: list[list[Any]] = []
    for t in steps:
        if sizes is not None and sizes[t] != h.shape[0]:
            h, c = _resize(sizes[t], [h, c], [h0, c0], left)
        h_prev[t] = h
        h, c, saved[t] = math_.step(gi[t], h, c, w_hh, b_step, w_hr)
        outs[t] = h
    h, c = _reassemble([h, c], left)
    return outs, h_prev, saved, h, c


# -- the device's fused sequence kernels (cuDNN's RNN API, on every backend that has them) -----------------
#
# ``{stem}_forward(x, h0, c0, w_ih, w_hh, b_ih, b_hh, reverse) -> (out, h_n, c_n, *saved)`` and
# ``{stem}_backward(d_out, d_hn, d_cn, x, w_ih, w_hh, has_bias, saved, reverse, needs) -> (dx, dh0, dc0, dw_ih,
# dw_hh, db_ih, db_hh)`` run one (layer, direction) in one call each. They take unpacked sequences without
# projection, float32 and float64; anything else (and a device without them) runs the step math below.

_SEQUENCE_DTYPES = frozenset({float32, float64})


def _sequence_kernels(math_: Any, x: Tensor, h0: Tensor, c0: Tensor | None, w_ih: Tensor, w_hh: Tensor,
                      biases: tuple[Tensor | None, Tensor | None], w_hr: Tensor | None,
                      sizes: tuple[int, ...] | None) -> tuple[Any, Any] | None:
    """The device's fused (forward, backward) sequence kernels if they take this call, else None."""
    stem = math_.kernels
    if (stem is None or sizes is not None or w_hr is not None or x._dtype not in _SEQUENCE_DTYPES or x.ndim != 3
            or 0 in x.shape):
        return None
    dev, dtype, (_, batch, features) = x._device, x._dtype, x.shape
    hidden = w_hh.shape[-1]
    gates = math_.gates * hidden
    if (any(t is not None and (t._dtype is not dtype or t._device is not dev)
            for t in (h0, c0, w_ih, w_hh, *biases))
            or tuple(w_ih.shape) != (gates, features) or tuple(w_hh.shape) != (gates, hidden)
            or tuple(h0.shape) != (batch, hidden) or (c0 is not None and tuple(c0.shape) != (batch, hidden))
            or any(b is not None and tuple(b.shape) != (gates,) for b in biases)):
        return None  # the step math raises the error
    kernels = dev._kernels
    if kernels is None:  # the device was never bound
        dev.backend  # noqa: B018
        kernels = dev._kernels
    forward, backward = kernels.get(stem + "_forward"), kernels.get(stem + "_backward")
    return None if forward is None or backward is None else (forward, backward)


def _data(t: Tensor | None) -> Any:
    return None if t is None else t._data


class _Recurrence(Function):
    """One direction of one layer over a time-major sequence ``x`` (T, B, F): outputs ``(out, h_n[, c_n])``.

    With ``sizes`` (a keyword: the batch sizes of a packed sequence), ``x`` is the packed rows (sum(sizes), F),
    ``out`` is packed the same way and ``h_n``/``c_n`` hold each sequence's state after its own last step.

    Backward is backpropagation through time written out. Under ``create_graph`` it instead records the
    same math step by step and differentiates that, so double backward is right, only slower.
    """

    @staticmethod
    def forward(ctx: FunctionCtx, math_: Any, reverse: bool, x: Tensor, h0: Tensor, c0: Tensor | None,
                w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None, b_hh: Tensor | None,
                w_hr: Tensor | None, *, sizes: tuple[int, ...] | None = None) -> Any:
        ctx.math, ctx.reverse, ctx.sizes = math_, reverse, sizes
        ctx.set_materialize_grads(False)  # backward takes None for an output without gradient (h_n, c_n, ...)
        ctx.save_for_backward(x, h0, c0, w_ih, w_hh, b_ih, b_hh, w_hr)
        ctx.kernels = kernels = _sequence_kernels(math_, x, h0, c0, w_ih, w_hh, (b_ih, b_hh), w_hr, sizes)
        if kernels is not None:
            out, h, c, *ctx.arrays = kernels[0](x._data, h0._data, _data(c0), w_ih._data, w_hh._data, _data(b_ih),
                                                _data(b_hh), reverse)
            dtype, dev = x._dtype, x._device
            out, h = _wrap(out, dtype, dev), _wrap(h, dtype, dev)
            return (out, h, _wrap(c, dtype, dev)) if c is not None else (out, h)
        fold = math_.folds_bias and b_ih is not None
        outs, h_prev, saved, h, c = _run_steps(math_, reverse, x, h0, c0, w_ih, w_hh, b_ih, b_hh, w_hr, fold, sizes)
        ctx.steps, ctx.h_prev = saved, h_prev
        out = _join(sizes)(outs)
        return (out, h, c) if c is not None else (out, h)

    @staticmethod
    def backward(ctx: FunctionCtx, d_out: Tensor | None, d_hn: Tensor | None, d_cn: Tensor | None = None) -> Any:
        if ferro.is_grad_enabled():
            return _recurrence_double_backward(ctx, (d_out, d_hn, d_cn))
        if ctx.kernels is not None:
            return _fused_backward(ctx, d_out, d_hn, d_cn)
        x, h0, c0, w_ih, w_hh, _, _, w_hr = ctx.saved_tensors
        math_, sizes, need = ctx.math, ctx.sizes, ctx.needs_input_grad
        n, join = len(ctx.steps), _join(sizes)
        d_hn = d_hn if d_hn is not None else ferro.zeros_like(h0)
        d_cn = None if c0 is None else (d_cn if d_cn is not None else ferro.zeros_like(c0))
        if d_out is not None and sizes is not None:
            d_out = d_out.split(sizes)
        dgi: list[Any] = [None] * n
        dgh: list[Any] = [None] * n
        dh_steps: list[Any] = [None] * n
        k = math_.prepare(ctx.steps, ctx.h_prev, join)
        if sizes is not None:  # per-step rows, indexed by step as the stacked coefficients are
            k = tuple(v.split(sizes) for v in k) if isinstance(k, tuple) else k.split(sizes)
        steps = range(n) if ctx.reverse else range(n - 1, -1, -1)
        dh, dc = _first_rows(sizes, steps[0], [d_hn, d_cn])
        left: list[list[Any]] = []
        for t in steps:
            if sizes is not None and sizes[t] != dh.shape[0]:
                dh, dc = _resize(sizes[t], [dh, dc], [d_hn, d_cn], left)
            dh_steps[t] = dh_t = dh if d_out is None else dh + d_out[t]
            dgi[t], dgh[t], dh, dc = math_.back(k, t, dh_t, dc, w_hh, w_hr)
        dh, dc = _reassemble([dh, dc], left)
        dgi_all = join(dgi)
        flat_gi = _flat(dgi_all)
        flat_gh = flat_gi if dgh[0] is dgi[0] else _flat(join(dgh))
        dx = dgi_all @ w_ih if need[2] else None
        dw_ih = flat_gi.mT @ _flat(x) if need[5] else None
        dw_hh = flat_gh.mT @ _flat(join(ctx.h_prev)) if need[6] else None
        db_ih = flat_gi.sum(0) if need[7] else None
        db_hh = flat_gh.sum(0) if need[8] else None
        dw_hr = None
        if need[9]:  # h_t = m_t @ w_hr.T, m_t the unprojected output saved by the LSTM step
            dw_hr = _flat(join(dh_steps)).mT @ _flat(join([s[-1] for s in ctx.steps]))
        return None, None, dx, dh, dc, dw_ih, dw_hh, db_ih, db_hh, dw_hr


def _fused_backward(ctx: FunctionCtx, d_out: Tensor | None, d_hn: Tensor | None,
                    d_cn: Tensor | None) -> tuple[Any, ...]:
    """:class:`_Recurrence`'s gradients by the device's fused backward kernel."""
    x, _, _, w_ih, w_hh, b_ih, _, _ = ctx.saved_tensors
    grads = ctx.kernels[1](_data(d_out), _data(d_hn), _data(d_cn), x._data, w_ih._data, w_hh._data,
                           b_ih is not None, tuple(ctx.arrays), ctx.reverse, tuple(ctx.needs_input_grad[2:9]))
    dtype, dev = x._dtype, x._device
    return (None, None, *(None if g is None else _wrap(g, dtype, dev) for g in grads), None)


def _recurrence_double_backward(ctx: FunctionCtx, grads: tuple[Any, ...]) -> tuple[Any, ...]:
    """Gradients of :class:`_Recurrence` as a differentiable graph: the steps re-run under autograd."""
    args = ctx.saved_tensors
    need = ctx.needs_input_grad[2:]
    outs, _, _, h, c = _run_steps(ctx.math, ctx.reverse, *args, fold=False, sizes=ctx.sizes)
    results = [_join(ctx.sizes)(outs), h, c]
    pairs = [(o, g) for o, g in zip(results, grads) if o is not None and g is not None]
    wrt = [a for a, k in zip(args, need) if k]
    got = iter(ferro.autograd.grad([o for o, _ in pairs], wrt, [g for _, g in pairs], create_graph=True,
                                   allow_unused=True))
    return (None, None, *(next(got) if k else None for k in need))


# -- the multi-layer modules --------------------------------------------------------------------------------


_SLOT_NAMES = ("weight_ih_l{}{}", "weight_hh_l{}{}", "bias_ih_l{}{}", "bias_hh_l{}{}", "weight_hr_l{}{}")


class RNNBase(Module):
    """The shared part of :class:`RNN`, :class:`LSTM` and :class:`GRU`: parameters, checks, the layer loop.

    ``mode`` is ``'RNN_TANH'``, ``'RNN_RELU'``, ``'LSTM'`` or ``'GRU'``. Parameters are named as in
    PyTorch: ``weight_ih_l{k}``, ``weight_hh_l{k}``, ``bias_ih_l{k}``, ``bias_hh_l{k}`` (and
    ``weight_hr_l{k}`` with ``proj_size``), with a ``_reverse`` suffix for the backward direction.
    """

    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, proj_size: int = 0,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__()
        if mode not in _MATH:
            raise ValueError(f"Unrecognized RNN mode: {mode!r} (expected one of {sorted(_MATH)})")
        _check_sizes(input_size=input_size, hidden_size=hidden_size, num_layers=num_layers)
        if isinstance(dropout, bool) or not isinstance(dropout, (int, float)) or not 0 <= dropout <= 1:
            raise ValueError(f"dropout should be a number in range [0, 1] representing the probability of an "
                             f"element being zeroed, got {dropout!r}")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so non-zero dropout "
                          f"expects num_layers greater than 1, but got dropout={dropout} and num_layers=1",
                          stacklevel=2)
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable projections")
        if proj_size and mode != "LSTM":
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if proj_size >= hidden_size:
            raise ValueError(f"proj_size has to be smaller than hidden_size, got {proj_size} >= {hidden_size}")
        self.mode, self.input_size, self.hidden_size, self.num_layers = mode, input_size, hidden_size, num_layers
        self.bias, self.batch_first, self.dropout = bias, batch_first, float(dropout)
        self.bidirectional, self.proj_size = bidirectional, proj_size
        gate_size = _MATH[mode].gates * hidden_size
        real_hidden = proj_size or hidden_size
        directions = 2 if bidirectional else 1
        self._slots: list[tuple[str | None, ...]] = []
        self._all_weights: list[list[str]] = []
        for layer in range(num_layers):
            layer_input = input_size if layer == 0 else real_hidden * directions
            shapes = [(gate_size, layer_input), (gate_size, real_hidden), (gate_size,), (gate_size,),
                      (proj_size, hidden_size)]
            present = [True, True, bias, bias, proj_size > 0]
            for direction in range(directions):
                suffix = "_reverse" if direction else ""
                names = tuple(fmt.format(layer, suffix) if on else None for fmt, on in zip(_SLOT_NAMES, present))
                for name, shape in zip(names, shapes):
                    if name is not None:
                        setattr(self, name, Parameter(ferro.empty(shape, device=device, dtype=dtype)))
                self._slots.append(names)
                self._all_weights.append([nm for nm in names if nm is not None])
        self.reset_parameters()

    @property
    def all_weights(self) -> list[list[Parameter]]:
        """The parameters of each (layer, direction), in PyTorch's order."""
        return [[getattr(self, name) for name in names] for names in self._all_weights]

    @property
    def _flat_weights_names(self) -> list[str]:
        return [name for names in self._all_weights for name in names]

    def reset_parameters(self) -> None:
        """Every weight and bias uniform in ``(-1/sqrt(hidden_size), 1/sqrt(hidden_size))``, as PyTorch."""
        _uniform_all(self, self.hidden_size)

    def flatten_parameters(self) -> None:
        """Accepted for compatibility with PyTorch (which packs weights for cuDNN); nothing to do here."""

    def extra_repr(self) -> str:
        """The constructor arguments that differ from the defaults."""
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size:
            s += f", proj_size={self.proj_size}"
        for name, default in (("num_layers", 1), ("bias", True), ("batch_first", False), ("dropout", 0.0),
                              ("bidirectional", False)):
            if getattr(self, name) != default:
                s += f", {name}={getattr(self, name)}"
        return s

    def _state_shapes(self, batch: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
        n = self.num_layers * (2 if self.bidirectional else 1)
        return (n, batch, self.proj_size or self.hidden_size), (n, batch, self.hidden_size)

    def _time_major(self, input: Tensor, packed: bool = False) -> tuple[Tensor, bool]:
        """The input time-major (T, B, F), and whether it was batched; a packed sequence's rows as they are."""
        name = type(self).__name__
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}: expected input to be a ferro Tensor or a PackedSequence, "
                            f"got {type(input).__name__}")
        if packed and input.ndim != 2:
            raise ValueError(f"{name}: Expected the data of a packed input to be 2D (rows, input_size), "
                             f"got {input.ndim}D instead")
        if input.ndim not in (2, 3):
            raise ValueError(f"{name}: Expected input to be 2D or 3D, got {input.ndim}D instead")
        w = self._parameters[self._slots[0][0]]  # type: ignore[index]
        if input.dtype != w.dtype:
            raise DTypeError(f"{name}: input dtype ({input.dtype}) does not match weight dtype ({w.dtype}); "
                             f"convert the input with .to({w.dtype}) or the model with .to({input.dtype})")
        if input.shape[-1] != self.input_size:
            raise ShapeError(f"{name}: input.size(-1) must be equal to input_size. Expected {self.input_size}, "
                             f"got {input.shape[-1]} (input shape {list(input.shape)})")
        if packed:
            return input, True
        batched = input.ndim == 3
        if not batched:
            return input.unsqueeze(1), False
        return (input.transpose(0, 1) if self.batch_first else input), True

    def _initial_states(self, hx: Any, x: Tensor, batch: int, batched: bool,
                        order: Tensor | None = None) -> list[tuple[Tensor, Tensor | None]]:
        """One ``(h0, c0)`` per (layer, direction); ``c0`` is None except for LSTM. ``order`` (a packed
        sequence's ``sorted_indices``) takes the given states' batch into the sorted order."""
        name, lstm = type(self).__name__, self.mode == "LSTM"
        h_shape, c_shape = self._state_shapes(batch)
        if hx is None:
            return [(ferro.zeros(h_shape[1:], dtype=x.dtype, device=x.device),
                     ferro.zeros(c_shape[1:], dtype=x.dtype, device=x.device) if lstm else None)
                    for _ in range(h_shape[0])]
        states = tuple(hx) if lstm else (hx,)
        if lstm and len(states) != 2:
            raise ValueError(f"{name}: hx must be a tuple (h_0, c_0), got {len(states)} tensors")
        dims = 3 if batched else 2
        for label, s, shape in zip(("h_0", "c_0"), states, (h_shape, c_shape)):
            if not isinstance(s, Tensor):
                raise TypeError(f"{name}: {label} must be a ferro Tensor, got {type(s).__name__}")
            if s.ndim != dims:
                raise ShapeError(f"{name}: for {'batched 3-D' if batched else 'unbatched 2-D'} input, {label} "
                                 f"should be {dims}-D but got a {s.ndim}-D tensor of shape {list(s.shape)}")
            got = tuple(s.shape) if batched else (s.shape[0], 1, *s.shape[1:])
            if got != shape:
                want = list(shape) if batched else [shape[0], shape[2]]
                raise ShapeError(f"{name}: expected {label} of shape {want}, got {list(s.shape)}")
        if not batched:
            states = tuple(s.unsqueeze(1) for s in states)
        if order is not None:
            states = tuple(s.index_select(1, order) for s in states)
        hs = states[0].unbind(0)
        cs = states[1].unbind(0) if lstm else (None,) * len(hs)
        return list(zip(hs, cs))

    def _run(self, input: Tensor | PackedSequence, hx: Any) -> tuple[Any, Tensor, Tensor | None]:
        packed = input if isinstance(input, PackedSequence) else None
        x, batched = self._time_major(input if packed is None else packed.data, packed is not None)
        # a packed sequence: its batch sizes (host ints; the packed layout is sorted by decreasing length)
        sizes = None if packed is None else tuple(int(b) for b in packed.batch_sizes.tolist())
        init = self._initial_states(hx, x, x.shape[1] if sizes is None else sizes[0], batched,
                                    None if packed is None else packed.sorted_indices)
        math_, params, directions = _MATH[self.mode], self._parameters, 2 if self.bidirectional else 1
        apply = _Recurrence.apply
        hs: list[Tensor] = []
        cs: list[Tensor] = []
        for layer in range(self.num_layers):
            outs = []
            for d in range(directions):
                k = layer * directions + d
                weights = [None if nm is None else params[nm] for nm in self._slots[k]]
                res = apply(math_, d == 1, x, init[k][0], init[k][1], *weights, sizes=sizes)
                outs.append(res[0])
                hs.append(res[1])
                if len(res) == 3:
                    cs.append(res[2])
            x = outs[0] if directions == 1 else ferro.cat(outs, -1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                x = F.dropout(x, self.dropout, True)
        h_n = ferro.stack(hs)
        c_n = ferro.stack(cs) if cs else None
        if packed is not None:
            order = packed.unsorted_indices  # the final states back in the caller's batch order
            if order is not None:
                h_n = h_n.index_select(1, order)
                c_n = c_n.index_select(1, order) if c_n is not None else None
            return packed._replace(data=x), h_n, c_n
        if not batched:
            return x.squeeze(1), h_n.squeeze(1), (c_n.squeeze(1) if c_n is not None else None)
        return (x.transpose(0, 1) if self.batch_first else x), h_n, c_n


def _check_sizes(**sizes: Any) -> None:
    for name, value in sizes.items():
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{name} should be of type int, got: {type(value).__name__}")
        if value <= 0:
            raise ValueError(f"{name} must be greater than zero, got {value}")


def _uniform_all(module: Module, hidden_size: int) -> None:
    bound = 1.0 / math.sqrt(hidden_size)
    with ferro.no_grad():
        for p in module.parameters():
            p.uniform_(-bound, bound)


class RNN(RNNBase):
    """Multi-layer Elman RNN: ``h_t = act(x_t @ W_ih.T + b_ih + h_{t-1} @ W_hh.T + b_hh)``, as ``torch.nn.RNN``.

    ``RNN(input_size, hidden_size, num_layers=1, nonlinearity='tanh', bias=True, batch_first=False,
    dropout=0.0, bidirectional=False)``. ``forward(input, hx=None)`` returns ``(output, h_n)``.

    >>> import ferro
    >>> rnn = ferro.nn.RNN(4, 8, num_layers=2)
    >>> out, h = rnn(ferro.randn(5, 3, 4))
    >>> list(out.shape), list(h.shape)
    ([5, 3, 8], [2, 3, 8])
    """

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, nonlinearity: str = "tanh",
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False,
                 device: Any = None, dtype: Any = None) -> None:
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
        self.nonlinearity = nonlinearity
        super().__init__("RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU", input_size, hidden_size,
                         num_layers, bias, batch_first, dropout, bidirectional, 0, device, dtype)

    def forward(self, input: Tensor | PackedSequence,
                hx: Tensor | None = None) -> tuple[Tensor | PackedSequence, Tensor]:
        """``input`` (L, N, H_in), (N, L, H_in) with ``batch_first``, unbatched (L, H_in), or a
        :class:`~ferro.nn.utils.rnn.PackedSequence` (then ``output`` is one, packed the same way)."""
        out, h, _ = self._run(input, hx)
        return out, h


class LSTM(RNNBase):
    """Multi-layer LSTM, as ``torch.nn.LSTM`` (gates ``i, f, g, o``; optional ``proj_size``).

    ``forward(input, (h_0, c_0)=None)`` returns ``(output, (h_n, c_n))``.

    >>> import ferro
    >>> lstm = ferro.nn.LSTM(4, 8, batch_first=True, bidirectional=True)
    >>> out, (h, c) = lstm(ferro.randn(3, 5, 4))
    >>> list(out.shape), list(h.shape), list(c.shape)
    ([3, 5, 16], [2, 3, 8], [2, 3, 8])
    """

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False, proj_size: int = 0,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         proj_size, device, dtype)

    def forward(self, input: Tensor | PackedSequence,
                hx: tuple[Tensor, Tensor] | None = None) -> tuple[Tensor | PackedSequence, tuple[Tensor, Tensor]]:
        """``input`` (L, N, H_in), (N, L, H_in) with ``batch_first``, unbatched (L, H_in), or a
        :class:`~ferro.nn.utils.rnn.PackedSequence` (then ``output`` is one, packed the same way)."""
        out, h, c = self._run(input, hx)
        return out, (h, c)  # type: ignore[return-value]


class GRU(RNNBase):
    """Multi-layer GRU, as ``torch.nn.GRU`` (gates ``r, z, n``). ``forward(input, hx=None)`` returns ``(output, h_n)``.

    >>> import ferro
    >>> gru = ferro.nn.GRU(4, 8)
    >>> out, h = gru(ferro.randn(5, 4))  # unbatched
    >>> list(out.shape), list(h.shape)
    ([5, 8], [1, 8])
    """

    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False,
                 device: Any = None, dtype: Any = None) -> None:
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first, dropout, bidirectional,
                         0, device, dtype)

    def forward(self, input: Tensor | PackedSequence,
                hx: Tensor | None = None) -> tuple[Tensor | PackedSequence, Tensor]:
        """``input`` (L, N, H_in), (N, L, H_in) with ``batch_first``, unbatched (L, H_in), or a
        :class:`~ferro.nn.utils.rnn.PackedSequence` (then ``output`` is one, packed the same way)."""
        out, h, _ = self._run(input, hx)
        return out, h


# -- cells ----------------------------------------------------------------------------------------------


class RNNCellBase(Module):
    """The shared part of the cells: ``weight_ih`` (G, input_size), ``weight_hh`` (G, hidden_size), biases."""

    def __init__(self, input_size: int, hidden_size: int, bias: bool, num_chunks: int, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__()
        _check_sizes(input_size=input_size, hidden_size=hidden_size)
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        g = num_chunks * hidden_size
        self.weight_ih = Parameter(ferro.empty((g, input_size), device=device, dtype=dtype))
        self.weight_hh = Parameter(ferro.empty((g, hidden_size), device=device, dtype=dtype))
        if bias:
            self.bias_ih = Parameter(ferro.empty((g,), device=device, dtype=dtype))
            self.bias_hh = Parameter(ferro.empty((g,), device=device, dtype=dtype))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Every weight and bias uniform in ``(-1/sqrt(hidden_size), 1/sqrt(hidden_size))``, as PyTorch."""
        _uniform_all(self, self.hidden_size)

    def extra_repr(self) -> str:
        """The constructor arguments that differ from the defaults."""
        s = f"{self.input_size}, {self.hidden_size}"
        if not self.bias:
            s += ", bias=False"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s

    def _prepare(self, input: Tensor, states: tuple[Tensor | None, ...]) -> tuple[Tensor, list[Tensor], bool]:
        """Checks; returns the batched input, the batched states (zeros where None) and whether it was batched."""
        name = type(self).__name__
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}: expected input to be a ferro Tensor, got {type(input).__name__}")
        if input.ndim not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.ndim}D instead")
        if input.shape[-1] != self.input_size:
            raise ShapeError(f"{name}: input has {input.shape[-1]} features (shape {list(input.shape)}), "
                             f"expected input_size={self.input_size}")
        batched = input.ndim == 2
        x = input if batched else input.unsqueeze(0)
        want = (x.shape[0], self.hidden_size)
        out = []
        for s in states:
            if s is None:
                out.append(ferro.zeros(want, dtype=x.dtype, device=x.device))
                continue
            if s.ndim != input.ndim or tuple(s.shape if batched else (1, *s.shape)) != want:
                raise ShapeError(f"{name}: expected hidden state of shape {list(want if batched else want[1:])}, "
                                 f"got {list(s.shape)}")
            out.append(s if batched else s.unsqueeze(0))
        return x, out, batched

    def _step(self, mode: str, x: Tensor, h: Tensor, c: Tensor | None) -> tuple[Tensor, Any]:
        gi = F.linear(x, self.weight_ih, self.bias_ih)
        h2, c2, _ = _MATH[mode].step(gi, h, c, self.weight_hh, self.bias_hh)
        return h2, c2


class RNNCell(RNNCellBase):
    """One Elman RNN step, as ``torch.nn.RNNCell``: ``h' = act(x @ W_ih.T + b_ih + h @ W_hh.T + b_hh)``.

    >>> import ferro
    >>> cell = ferro.nn.RNNCell(4, 8)
    >>> list(cell(ferro.randn(3, 4)).shape)
    [3, 8]
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, nonlinearity: str = "tanh",
                 device: Any = None, dtype: Any = None) -> None:
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        """``input`` (N, H_in) or (H_in); ``hx`` (N, H) or (H), zeros when None; returns ``h'``."""
        x, (h,), batched = self._prepare(input, (hx,))
        out, _ = self._step("RNN_TANH" if self.nonlinearity == "tanh" else "RNN_RELU", x, h, None)
        return out if batched else out.squeeze(0)


class LSTMCell(RNNCellBase):
    """One LSTM step, as ``torch.nn.LSTMCell``; ``forward(input, (h, c)=None)`` returns ``(h', c')``.

    >>> import ferro
    >>> cell = ferro.nn.LSTMCell(4, 8)
    >>> h, c = cell(ferro.randn(3, 4))
    >>> list(h.shape), list(c.shape)
    ([3, 8], [3, 8])
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)

    def forward(self, input: Tensor, hx: tuple[Tensor, Tensor] | None = None) -> tuple[Tensor, Tensor]:
        """``input`` (N, H_in) or (H_in); ``hx = (h, c)``, each (N, H) or (H), zeros when None."""
        if hx is not None and len(hx) != 2:
            raise ValueError(f"LSTMCell: hx must be a tuple (h_0, c_0), got {len(hx)} tensors")
        x, (h, c), batched = self._prepare(input, (None, None) if hx is None else tuple(hx))
        h2, c2 = self._step("LSTM", x, h, c)
        return (h2, c2) if batched else (h2.squeeze(0), c2.squeeze(0))


class GRUCell(RNNCellBase):
    """One GRU step, as ``torch.nn.GRUCell``; ``forward(input, hx=None)`` returns ``h'``.

    >>> import ferro
    >>> cell = ferro.nn.GRUCell(4, 8)
    >>> list(cell(ferro.randn(4)).shape)
    [8]
    """

    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device: Any = None,
                 dtype: Any = None) -> None:
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        """``input`` (N, H_in) or (H_in); ``hx`` (N, H) or (H), zeros when None; returns ``h'``."""
        x, (h,), batched = self._prepare(input, (hx,))
        out, _ = self._step("GRU", x, h, None)
        return out if batched else out.squeeze(0)
