"""Fused LSTM and GRU sequences on NumPy: ``{lstm,gru}_sequence_forward`` / ``_backward`` (the contract is in
``ferro/backends/contract.py``; core's ``ferro/nn/modules/rnn.py`` calls them).

One call runs one direction of one layer over a whole time-major sequence, as
cuDNN's RNN API does: a Python loop over the steps runs the hidden matmul and the
gates on raw arrays, writing into preallocated per-sequence buffers (pooled: no page
faults on reuse), with no tensors or graph nodes (the GRU projects the input of all
steps in one matmul first; the LSTM's projection rides in its step's product, below).
The forward returns, after the output and the final states, the arrays its backward
needs (``saved``: core hands them back as they are;
flat, so that ``ferro.compile``'s capture sees them as kernel outputs).
The backward walks the steps the other way; the coefficients that do not depend on
the incoming gradient are computed for all steps at once before the loop, and the
weight gradients are products over all steps after it. Formulas are
PyTorch's: LSTM ``i, f, g, o``; GRU ``r, z, n`` with ``b_hn`` inside
``r * (h @ w_hn.T + b_hn)``.

Two exact rewrites cut the passes per step. A sigmoid is ``0.5 * tanh(x / 2) + 0.5``:
one transcendental pass (``1 / (1 + exp(-x))`` is four passes), and the halving is
folded into the weights' and biases' rows of the sigmoid gates (a power of two:
``0.5 * (a + b) == 0.5 * a + 0.5 * b`` exactly), so that a single ``tanh`` over all
of an LSTM step's gates gives ``g`` and the halved sigmoids' ``tanh``. And the LSTM
runs its gates in the order ``g, i, f, o``, so that the sigmoid gates and, in the
backward, the gates fed by ``dc`` are contiguous; the gradients come back in
PyTorch's order. Only float32 and float64 come here (core checks).

The LSTM keeps its states feature-major, (features, batch) per step: a step is one
GEMM ``[w_hh | w_ih | b] @ [h_prev; x_t; 1]`` straight into that step's gates (the
input projection and the bias ride in the product; the slabs ``[h_prev; x_t; 1]`` of
all steps are one saved (T + 1, H + F + 1, B) array whose ``h`` rows the steps fill),
every elementwise pass then runs on contiguous blocks instead of ``batch`` strided
rows, and OpenBLAS runs ``W @ h`` faster than ``h @ W.T`` at these shapes (8% to
20%, on its AVX2 and AVX-512 kernels alike). The backward's weight and bias
gradients are one product of d(pre), (4H, T * B), against the slabs; the input
gradient one product too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["recurrent_kernels"]


def recurrent_kernels(np: Any, pool: Any) -> dict[str, Callable[..., Any]]:
    """The fused LSTM / GRU sequence kernels over NumPy ``np``, large buffers from ``pool``."""

    def order(steps: int, reverse: bool) -> range:
        return range(steps - 1, -1, -1) if reverse else range(steps)

    def project(x: Any, w: Any, b: Any) -> Any:
        """``x @ w.T + b`` for all steps, (T, B, G), in a pooled buffer."""
        t, n, f = x.shape
        out = pool.empty((t, n, w.shape[0]), w.dtype)
        np.matmul(x.reshape(t * n, f), w.T, out=out.reshape(t * n, w.shape[0]))
        if b is not None:
            out += b
        return out

    def previous(seq: Any, first: Any, reverse: bool) -> Any:
        """The state before each step: ``seq`` (the state after each step) shifted one step, ``first`` first."""
        prev = pool.empty(seq.shape, seq.dtype)
        if reverse:
            prev[-1] = first
            prev[:-1] = seq[1:]
        else:
            prev[0] = first
            prev[1:] = seq[:-1]
        return prev

    def weight_grads(dgi: Any, dgh: Any, x: Any, hp: Any, w_ih: Any, has_bias: bool,
                     needs: tuple[bool, ...]) -> tuple[Any, ...]:
        """(dx, dw_ih, dw_hh, db_ih, db_hh) from the gates' gradients of all steps (T, B, G)."""
        t, n, g = dgi.shape
        fi, fh = dgi.reshape(t * n, g), dgh.reshape(t * n, g)
        dx = (fi @ w_ih).reshape(x.shape) if needs[0] else None
        dw_ih = fi.T @ x.reshape(t * n, x.shape[2]) if needs[3] else None
        dw_hh = fh.T @ hp.reshape(t * n, hp.shape[2]) if needs[4] else None
        db_ih = fi.sum(0) if has_bias and needs[5] else None
        db_hh = None
        if has_bias and needs[6]:  # the LSTM's two biases feed the same pre-activations: one sum
            db_hh = db_ih.copy() if dgh is dgi and db_ih is not None else fh.sum(0)
        return dx, dw_ih, dw_hh, db_ih, db_hh

    # -- LSTM: gates run in the order g, i, f, o -------------------------------------------------------

    def to_gifo(w: Any) -> Any:
        """Rows (or entries) in PyTorch's order i, f, g, o as g, i, f, o (a new array)."""
        h = w.shape[0] // 4
        return np.concatenate([w[2 * h:3 * h], w[:2 * h], w[3 * h:]])

    def from_gifo(w: Any) -> Any:
        if w is None:
            return None
        h = w.shape[0] // 4
        return np.concatenate([w[h:3 * h], w[:h], w[3 * h:]])

    def lstm_sequence_forward(x: Any, h0: Any, c0: Any, w_ih: Any, w_hh: Any, b_ih: Any, b_hh: Any,
                              reverse: bool) -> tuple[Any, ...]:
        steps, batch, hidden = x.shape[0], h0.shape[0], h0.shape[1]
        feats = x.shape[2]
        # one GEMM per step, gates (4H, B) = [w_hh | w_ih | b] @ [h_prev; x_t; 1] (see the module docstring)
        parts = [to_gifo(w_hh), to_gifo(w_ih)]
        if b_ih is not None:
            parts.append(to_gifo(b_ih + b_hh)[:, None])
        w = np.concatenate(parts, axis=1)
        w[hidden:] *= 0.5  # the sigmoid gates' pre-activations halved
        z = pool.empty((steps + 1, w.shape[1], batch), w.dtype)  # slab of step t: [h_prev_t; x_t; 1]
        first, xs = (steps, z[1:]) if reverse else (0, z[:-1])
        z[first, :hidden] = h0.T
        xs[:, hidden:hidden + feats] = x.transpose(0, 2, 1)
        if b_ih is not None:
            z[:, -1] = 1
        acts = pool.empty((steps, 4 * hidden, batch), w.dtype)  # each step's gates g, i, f, o
        cs = pool.empty((steps + 1, hidden, batch), w.dtype)  # c before the first step and after each
        cs[first] = c0.T
        tcs = pool.empty((steps, hidden, batch), w.dtype)  # tanh of c after each step
        ig = np.empty((hidden, batch), w.dtype)
        h3 = 3 * hidden
        for t in order(steps, reverse):
            cur, nxt = (t + 1, t) if reverse else (t, t + 1)
            a = np.matmul(w, z[cur], out=acts[t])
            np.tanh(a, out=a)
            s = a[hidden:]
            s *= 0.5
            s += 0.5
            c = np.multiply(a[2 * hidden:h3], cs[cur], out=cs[nxt])
            c += np.multiply(a[hidden:2 * hidden], a[:hidden], out=ig)
            np.multiply(a[h3:], np.tanh(c, out=tcs[t]), out=z[nxt, :hidden])
        hs = z[:-1, :hidden] if reverse else z[1:, :hidden]
        out = pool.empty((steps, batch, hidden), w.dtype)
        np.copyto(out, hs.transpose(0, 2, 1))
        last = 0 if reverse else steps
        return (out, np.ascontiguousarray(z[last, :hidden].T), np.ascontiguousarray(cs[last].T),
                acts, z, cs, tcs)

    def lstm_sequence_backward(d_out: Any, d_hn: Any, d_cn: Any, x: Any, w_ih: Any, w_hh: Any, has_bias: bool,
                               saved: Any, reverse: bool, needs: tuple[bool, ...]) -> tuple[Any, ...]:
        acts, z, cs, tcs = saved
        steps, four, batch = acts.shape
        hidden, dtype = four // 4, acts.dtype
        h3 = 3 * hidden
        xs, cp = (z[1:], cs[1:]) if reverse else (z[:-1], cs[:-1])  # each step's slab and c before it
        g, i, f, o = (acts[:, k * hidden:(k + 1) * hidden] for k in range(4))
        # d(pre) = [dc, dc, dc, dh] * k (gates g, i, f, o);  dc += dh * a;  dc_prev = dc * f
        k = np.multiply(acts, acts, out=pool.empty(acts.shape, dtype))
        np.subtract(acts, k, out=k)  # s (1 - s), the sigmoids' slope; the g block is overwritten below
        k[:, hidden:2 * hidden] *= g
        k[:, 2 * hidden:h3] *= cp
        k[:, h3:] *= tcs
        kg = np.multiply(g, g, out=k[:, :hidden])
        np.subtract(1, kg, out=kg)
        kg *= i
        a = np.multiply(tcs, tcs, out=pool.empty(tcs.shape, dtype))
        np.subtract(1, a, out=a)
        a *= o
        k3 = k[:, :h3].reshape(steps, 3, hidden, batch)
        dpre = pool.empty(acts.shape, dtype)
        d3 = dpre[:, :h3].reshape(steps, 3, hidden, batch)
        w = np.ascontiguousarray(to_gifo(w_hh).T)
        # dh and dc live in two buffers of their own, updated in place (the incoming d_hn, d_cn are read only)
        dh = np.zeros((hidden, batch), dtype) if d_hn is None else np.array(d_hn.T, dtype, order="C")
        dc = np.zeros((hidden, batch), dtype) if d_cn is None else np.array(d_cn.T, dtype, order="C")
        if d_out is not None:
            dout = pool.empty((steps, hidden, batch), dtype)  # d_out feature-major, as the states
            np.copyto(dout, d_out.transpose(0, 2, 1))
        tmp = np.empty_like(dc)
        for t in order(steps, not reverse):
            if d_out is not None:
                dh += dout[t]
            dc += np.multiply(dh, a[t], out=tmp)
            np.multiply(k3[t], dc, out=d3[t])
            np.multiply(k[t, h3:], dh, out=dpre[t, h3:])
            np.matmul(w, dpre[t], out=dh)
            dc *= f[t]
        dx = dw_ih = dw_hh = db_ih = db_hh = None
        if needs[0] or any(needs[3:7]):  # products over all steps on d(pre) as (4H, T * B)
            dm = pool.empty((four, steps, batch), dtype)
            np.copyto(dm, dpre.transpose(1, 0, 2))
            dm = dm.reshape(four, steps * batch)
        if needs[0]:
            dx = (dm.T @ to_gifo(w_ih)).reshape(x.shape)
        if any(needs[3:7]):  # [dw_hh | dw_ih | db] in one product against the steps' slabs
            zs = pool.empty((xs.shape[1], steps, batch), dtype)
            np.copyto(zs, xs.transpose(1, 0, 2))
            dw = dm @ zs.reshape(xs.shape[1], steps * batch).T
            feats = x.shape[2]
            dw_hh = from_gifo(dw[:, :hidden]) if needs[4] else None
            dw_ih = from_gifo(dw[:, hidden:hidden + feats]) if needs[3] else None
            if has_bias:
                db = from_gifo(dw[:, -1])
                db_ih = db if needs[5] else None
                db_hh = db.copy() if needs[6] else None
        return dx, np.ascontiguousarray(dh.T), np.ascontiguousarray(dc.T), dw_ih, dw_hh, db_ih, db_hh

    # -- GRU -------------------------------------------------------------------------------------------

    def gru_sequence_forward(x: Any, h0: Any, c0: Any, w_ih: Any, w_hh: Any, b_ih: Any, b_hh: Any,
                             reverse: bool) -> tuple[Any, ...]:
        steps, batch, hidden = x.shape[0], h0.shape[0], h0.shape[1]
        two = 2 * hidden
        wi, wh = w_ih.copy(), w_hh.copy()
        wi[:two] *= 0.5  # r and z halved (see the module docstring)
        wh[:two] *= 0.5
        b, b_hn = None, None
        if b_ih is not None:
            b = b_ih.copy()
            b[:two] += b_hh[:two]  # b_hr, b_hz join b_ir, b_iz; b_hn stays inside r * (...)
            b[:two] *= 0.5
            b_hn = b_hh[two:]
        gi = project(x, wi, b)
        rz = pool.empty((steps, batch, two), gi.dtype)
        ns = pool.empty((steps, batch, hidden), gi.dtype)
        ghn = pool.empty(ns.shape, gi.dtype)  # h @ w_hn.T + b_hn of each step
        out = pool.empty(ns.shape, gi.dtype)
        w = np.ascontiguousarray(wh.T)  # as the LSTM's
        gh = np.empty((batch, 3 * hidden), gi.dtype)
        h = h0
        for t in order(steps, reverse):
            np.matmul(h, w, out=gh)
            s = np.add(gi[t, :, :two], gh[:, :two], out=rz[t])
            np.tanh(s, out=s)
            s *= 0.5
            s += 0.5
            hn = ghn[t]
            if b_hn is None:
                hn[...] = gh[:, two:]
            else:
                np.add(gh[:, two:], b_hn, out=hn)
            n = np.multiply(s[:, :hidden], hn, out=ns[t])
            n += gi[t, :, two:]
            np.tanh(n, out=n)
            h = np.subtract(h, n, out=out[t])
            h *= s[:, hidden:]
            h += n
        return out, h.copy(), None, rz, ns, ghn, previous(out, h0, reverse)

    def gru_sequence_backward(d_out: Any, d_hn: Any, d_cn: Any, x: Any, w_ih: Any, w_hh: Any, has_bias: bool,
                              saved: Any, reverse: bool, needs: tuple[bool, ...]) -> tuple[Any, ...]:
        rz, ns, ghn, hp = saved
        steps, batch, hidden = hp.shape
        two = 2 * hidden
        r, z = rz[..., :hidden], rz[..., hidden:]
        # dn = dh * a;  d(pre_r, pre_z) = [dn, dh] * k;  dh_prev = dh * z + d(gh) @ w_hh
        a = np.multiply(ns, ns, out=pool.empty(ns.shape, ns.dtype))
        np.subtract(1, a, out=a)
        a *= 1 - z
        k = np.subtract(1, rz, out=pool.empty(rz.shape, rz.dtype))
        k *= rz
        k[..., :hidden] *= ghn
        k[..., hidden:] *= np.subtract(hp, ns, out=pool.empty(ns.shape, ns.dtype))
        dgi = pool.empty((steps, batch, 3 * hidden), rz.dtype)
        dgh = pool.empty(dgi.shape, rz.dtype)
        dh = np.zeros((batch, hidden), rz.dtype) if d_hn is None else d_hn
        for t in order(steps, not reverse):
            if d_out is not None:
                dh = dh + d_out[t]
            gi_t, gh_t = dgi[t], dgh[t]
            dn = np.multiply(dh, a[t], out=gi_t[:, two:])
            np.multiply(dn, k[t, :, :hidden], out=gi_t[:, :hidden])
            np.multiply(dh, k[t, :, hidden:], out=gi_t[:, hidden:two])
            gh_t[:, :two] = gi_t[:, :two]
            np.multiply(dn, r[t], out=gh_t[:, two:])
            dh_next = gh_t @ w_hh
            dh_next += dh * z[t]
            dh = dh_next
        dx, dw_ih, dw_hh, db_ih, db_hh = weight_grads(dgi, dgh, x, hp, w_ih, has_bias, needs)
        return dx, dh, None, dw_ih, dw_hh, db_ih, db_hh

    return {"lstm_sequence_forward": lstm_sequence_forward, "lstm_sequence_backward": lstm_sequence_backward,
            "gru_sequence_forward": gru_sequence_forward, "gru_sequence_backward": gru_sequence_backward}
