"""Fused LSTM and GRU sequences on NumPy: ``{lstm,gru}_sequence_forward`` / ``_backward`` (the contract is in
``ferro/backends/contract.py``; core's ``ferro/nn/modules/rnn.py`` calls them).

One call runs one direction of one layer over a whole time-major sequence, as
cuDNN's RNN API does: the input projection of all steps is one matmul, then a
Python loop over the steps does the hidden matmul and the gates on raw arrays,
writing into preallocated (T, B, ...) buffers, with no tensors or graph nodes.
The forward returns what its backward needs (``saved``, opaque to core). The
backward walks the steps the other way; the coefficients that do not depend on
the incoming gradient are computed for all steps at once before the loop, and
the weight gradients are one matmul each over all steps after it. Gate order
and formulas are PyTorch's: LSTM ``i, f, g, o``; GRU ``r, z, n`` with ``b_hn``
inside ``r * (h @ w_hn.T + b_hn)``. The sigmoid is PyTorch's CPU formula
``1 / (1 + exp(-x))`` (exp overflowing to inf gives 0, the right limit).
Only float32 and float64 come here (core checks).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["recurrent_kernels"]


def recurrent_kernels(np: Any) -> dict[str, Callable[..., Any]]:
    """The fused LSTM / GRU sequence kernels over NumPy ``np``."""

    def sigmoid_(a: Any) -> Any:
        """``a`` replaced by its sigmoid (errors quieted by the caller)."""
        np.negative(a, out=a)
        np.exp(a, out=a)
        a += 1
        return np.reciprocal(a, out=a)

    def project(x: Any, w: Any, b: Any) -> Any:
        """``x @ w.T + b`` for all steps, (T, B, G)."""
        t, n, f = x.shape
        out = (x.reshape(t * n, f) @ w.T).reshape(t, n, w.shape[0])
        if b is not None:
            out += b
        return out

    def order(steps: int, reverse: bool) -> range:
        return range(steps - 1, -1, -1) if reverse else range(steps)

    def weight_grads(dgi: Any, dgh: Any, x: Any, hp: Any, w_ih: Any, has_bias: bool,
                     needs: tuple[bool, ...]) -> tuple[Any, ...]:
        """(dx, dw_ih, dw_hh, db_ih, db_hh) from the gates' gradients of all steps (T, B, G)."""
        t, n, g = dgi.shape
        fi, fh = dgi.reshape(t * n, g), dgh.reshape(t * n, g)
        dx = (fi @ w_ih).reshape(x.shape) if needs[0] else None
        dw_ih = fi.T @ x.reshape(t * n, x.shape[2]) if needs[3] else None
        dw_hh = fh.T @ hp.reshape(t * n, hp.shape[2]) if needs[4] else None
        db_ih = fi.sum(0) if has_bias and needs[5] else None
        db_hh = fh.sum(0) if has_bias and needs[6] else None
        return dx, dw_ih, dw_hh, db_ih, db_hh

    def lstm_sequence_forward(x: Any, h0: Any, c0: Any, w_ih: Any, w_hh: Any, b_ih: Any, b_hh: Any,
                              reverse: bool) -> tuple[Any, Any, Any, Any]:
        with np.errstate(over="ignore"):
            gi = project(x, w_ih, None if b_ih is None else b_ih + b_hh)
            steps, batch, hidden = x.shape[0], h0.shape[0], h0.shape[1]
            acts = np.empty_like(gi)  # i, f, g, o after their activations
            hp = np.empty((steps, batch, hidden), dtype=gi.dtype)  # h before each step
            cp = np.empty_like(hp)  # c before each step
            tcs = np.empty_like(hp)  # tanh(c) after each step
            out = np.empty_like(hp)
            w = w_hh.T
            h, c = h0, c0
            for t in order(steps, reverse):
                hp[t], cp[t] = h, c
                a = acts[t]
                np.matmul(h, w, out=a)
                a += gi[t]
                sigmoid_(a[:, :2 * hidden])
                sigmoid_(a[:, 3 * hidden:])
                g = a[:, 2 * hidden:3 * hidden]
                np.tanh(g, out=g)
                c = a[:, hidden:2 * hidden] * c
                c += a[:, :hidden] * g
                tc = np.tanh(c, out=tcs[t])
                h = np.multiply(a[:, 3 * hidden:], tc, out=out[t])
            return out, h.copy(), c, (acts, hp, cp, tcs)

    def lstm_sequence_backward(d_out: Any, d_hn: Any, d_cn: Any, x: Any, w_ih: Any, w_hh: Any, has_bias: bool,
                               saved: Any, reverse: bool, needs: tuple[bool, ...]) -> tuple[Any, ...]:
        acts, hp, cp, tcs = saved
        steps, batch, hidden = hp.shape
        i, f, g, o = (acts[..., k * hidden:(k + 1) * hidden] for k in range(4))
        # d(pre) = [dc, dc, dc, dh] * k;  dc += dh * a;  dc_prev = dc * f
        k = np.empty_like(acts)
        np.multiply(g * i, 1 - i, out=k[..., :hidden])
        np.multiply(cp * f, 1 - f, out=k[..., hidden:2 * hidden])
        np.multiply(i, 1 - g * g, out=k[..., 2 * hidden:3 * hidden])
        np.multiply(tcs * o, 1 - o, out=k[..., 3 * hidden:])
        a = o * (1 - tcs * tcs)
        k4 = k.reshape(steps, batch, 4, hidden)
        dpre = np.empty_like(acts)
        d4 = dpre.reshape(steps, batch, 4, hidden)
        dh = np.zeros((batch, hidden), dtype=acts.dtype) if d_hn is None else d_hn
        dc = np.zeros((batch, hidden), dtype=acts.dtype) if d_cn is None else d_cn
        for t in order(steps, not reverse):
            if d_out is not None:
                dh = dh + d_out[t]
            dc = dc + dh * a[t]
            np.multiply(k4[t, :, :3], dc[:, None, :], out=d4[t, :, :3])
            np.multiply(k4[t, :, 3], dh, out=d4[t, :, 3])
            dh = dpre[t] @ w_hh
            dc = dc * f[t]
        dx, dw_ih, dw_hh, db_ih, db_hh = weight_grads(dpre, dpre, x, hp, w_ih, has_bias, needs)
        return dx, dh, dc, dw_ih, dw_hh, db_ih, db_hh

    def gru_sequence_forward(x: Any, h0: Any, c0: Any, w_ih: Any, w_hh: Any, b_ih: Any, b_hh: Any,
                             reverse: bool) -> tuple[Any, Any, Any, Any]:
        with np.errstate(over="ignore"):
            gi = project(x, w_ih, b_ih)
            steps, batch, hidden = x.shape[0], h0.shape[0], h0.shape[1]
            rz = np.empty((steps, batch, 2 * hidden), dtype=gi.dtype)
            ns = np.empty((steps, batch, hidden), dtype=gi.dtype)
            ghn = np.empty_like(ns)  # h @ w_hn.T + b_hn of each step
            hp = np.empty_like(ns)
            out = np.empty_like(ns)
            w = w_hh.T
            h = h0
            for t in order(steps, reverse):
                hp[t] = h
                gh = h @ w
                if b_hh is not None:
                    gh += b_hh
                s = np.add(gi[t, :, :2 * hidden], gh[:, :2 * hidden], out=rz[t])
                sigmoid_(s)
                ghn[t] = gh[:, 2 * hidden:]
                n = np.multiply(s[:, :hidden], ghn[t], out=ns[t])
                n += gi[t, :, 2 * hidden:]
                np.tanh(n, out=n)
                h = np.subtract(h, n, out=out[t])
                h *= s[:, hidden:]
                h += n
            return out, h.copy(), None, (rz, ns, ghn, hp)

    def gru_sequence_backward(d_out: Any, d_hn: Any, d_cn: Any, x: Any, w_ih: Any, w_hh: Any, has_bias: bool,
                              saved: Any, reverse: bool, needs: tuple[bool, ...]) -> tuple[Any, ...]:
        rz, ns, ghn, hp = saved
        steps, batch, hidden = hp.shape
        r, z = rz[..., :hidden], rz[..., hidden:]
        # dn = dh * a;  d(pre_r, pre_z) = [dn, dh] * k;  dh_prev = dh * z + d(gh) @ w_hh
        a = (1 - z) * (1 - ns * ns)
        k = np.empty_like(rz)
        np.multiply(ghn * r, 1 - r, out=k[..., :hidden])
        np.multiply((hp - ns) * z, 1 - z, out=k[..., hidden:])
        dgi = np.empty((steps, batch, 3 * hidden), dtype=rz.dtype)
        dgh = np.empty_like(dgi)
        dh = np.zeros((batch, hidden), dtype=rz.dtype) if d_hn is None else d_hn
        for t in order(steps, not reverse):
            if d_out is not None:
                dh = dh + d_out[t]
            gi_t, gh_t = dgi[t], dgh[t]
            dn = np.multiply(dh, a[t], out=gi_t[:, 2 * hidden:])
            np.multiply(dn, k[t, :, :hidden], out=gi_t[:, :hidden])
            np.multiply(dh, k[t, :, hidden:], out=gi_t[:, hidden:2 * hidden])
            gh_t[:, :2 * hidden] = gi_t[:, :2 * hidden]
            np.multiply(dn, r[t], out=gh_t[:, 2 * hidden:])
            dh_next = gh_t @ w_hh
            dh_next += dh * z[t]
            dh = dh_next
        dx, dw_ih, dw_hh, db_ih, db_hh = weight_grads(dgi, dgh, x, hp, w_ih, has_bias, needs)
        return dx, dh, None, dw_ih, dw_hh, db_ih, db_hh

    return {"lstm_sequence_forward": lstm_sequence_forward, "lstm_sequence_backward": lstm_sequence_backward,
            "gru_sequence_forward": gru_sequence_forward, "gru_sequence_backward": gru_sequence_backward}
