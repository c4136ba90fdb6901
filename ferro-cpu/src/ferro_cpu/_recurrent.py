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
runs its gates in the order ``o, i, f, g``, so that the sigmoid gates are one block and
``[i; f] * [g; c_prev]`` one product (``c_prev`` is kept under each step's gates); the
gradients come back in PyTorch's order. Only float32 and float64 come here (core checks).

The LSTM keeps its states feature-major, (features, batch) per step (a batch that is a multiple of 4
runs batch-major, below): a step is one
GEMM ``[w_hh | w_ih | b] @ [h_prev; x_t; 1]`` straight into that step's gates (the
input projection and the bias ride in the product; the slabs ``[h_prev; x_t; 1]`` of
all steps are one saved (H + F + 1, T + 1, B) array whose ``h`` rows the steps fill, so
that the slabs of all steps side by side are one (H + F + 1, T * B) matrix), every
elementwise pass then runs on contiguous blocks instead of ``batch`` strided rows, and
OpenBLAS runs ``W @ h`` faster than ``h @ W.T`` at these shapes (8% to 20%, on its AVX2
and AVX-512 kernels alike). The backward's step is four NumPy calls and the GEMM: ``[dh;
dc]`` times the step's ``[a; f_carry]`` coefficients, their sum written three times (``dc``
under ``dh``: one product with the gates' slopes gives d(pre) of all four gates), and the
GEMM back to ``dh``. d(pre) of all steps as one (4H, T * B) array (each step writes its B columns
straight there when they are whole cache lines, else the steps are copied over after the loop) makes
the weight and bias gradients one product against the slabs; the input gradient one product too.
A call's arrays are views of one pooled buffer (``carve``): alone, a sequence's (T, H, B)
arrays may be below the pool's floor and page-fault on every call.

A batch that is a multiple of 4, with weights that stay in the L2 cache (``BLOCK_WEIGHTS``), runs another
pair of kernels (``lstm_forward_blocks`` / ``lstm_backward_blocks``): its step products batch-major, as one
batched matmul over blocks of 4 batch rows, ``z.T @ W.T``. OpenBLAS's unpacked ("direct") sgemm, which it
takes for these sizes at one thread, computes ``W @ z`` in tiles of 4 rows by 32, 16, 8 or 4 columns, so
batch 20 is a 16-column and a 4-column pass, both bound by the multiply-adds' latency (~145 GFLOP/s against
~200 at batch 32); in 4-row blocks every tile is 64 columns wide ((20 x 257) @ (257 x 512) in 22-26 us against
36; the backward's ``d(pre).T @ W_hh`` 19 -> 14 us). These kernels keep the slabs batch-major, (T + 1, B,
H + F + 1), and the gates, their slopes and the states in (gate, batch, hidden) blocks: the forward's step
product is one batched matmul over (gate, block) pairs, a block's 4 rows by one gate's weights, straight into
the gate blocks (against (B, 4H) rows copied into them by the ``tanh``: 0.98x the step); the backward's (B, 4H)
d(pre) rows come from the four (B, H) blocks as whole rows of H, never element by element, and
every elementwise pass still runs over contiguous blocks. Against the feature-major kernels above, in one
process: the LSTM row's layer (batch 32) 0.89x, the language model's (batch 20, where feature-major gates
around batch-major products transposed the gates in the forward's ``tanh`` and each step's d(pre)) 0.92x.
Each block's product reads all the weights, so larger weights go feature-major (float32 weights of 259K
elements ran the forward 2.4x slower in blocks). Batch-major gates in (T, B, 4H) rows instead measured
1.11x slower at batch 32: NumPy's calls over (T, B, 4H) slices run a short inner loop per batch row.
The blocked backward runs its steps in runs whose arrays stay in the L2 cache (``CHUNK_BYTES``): each run's
coefficients just before its steps, the products of its d(pre) just after (the weights' summed over the runs).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

__all__ = ["recurrent_kernels"]

#: The most elements of an LSTM layer's weights [w_hh | w_ih | b] for which its kernels run the step products in
#: blocks of 4 batch rows. Each block's product reads all the weights, which stay in the core's L2 cache only up
#: to about this (1 MiB here): float32 weights of 197K elements ran the forward 0.89x of feature-major, of 259K
#: 2.4x (OpenBLAS's unpacked sgemm then streams them from L3 once per block); float64 (packed dgemm) gained up
#: to 197K elements too.
BLOCK_WEIGHTS = 200_000

#: The blocked LSTM backward runs its steps in runs of about this many bytes of per-step arrays (the coefficients
#: k and fa, and d(pre): 10 values a batch row and hidden unit): a run's k and fa computed just before its steps,
#: the products of its d(pre) (dx, the weights, summed over the runs) just after, all while they are in the L2
#: cache. All steps at once wrote 8 MB to memory and read it back (the LSTM row: 9 steps a run, the step 0.90x).
CHUNK_BYTES = 3 << 19


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

    def carve(dtype: Any, *shapes: tuple[int, ...]) -> list[Any]:
        """Arrays of ``shapes``, views of one pooled buffer, each on a 64-byte boundary: a call's arrays
        together pass the pool's floor (alone, a sequence's (T, H, B) arrays may not) and come back to it
        together when the last of them dies."""
        dtype = np.dtype(dtype)
        sizes = [math.prod(s) * dtype.itemsize for s in shapes]
        starts = [0]
        for n in sizes:
            starts.append(starts[-1] + -(-n // 64) * 64)
        buf = pool.empty((starts[-1] + 64,), np.uint8)
        skip = -buf.ctypes.data % 64
        return [buf[skip + a:skip + a + n].view(dtype).reshape(s) for a, n, s in zip(starts, sizes, shapes)]

    def transpose_into(dst: Any, x: Any) -> None:
        """``dst`` (F, T, B) = ``x`` (T, B, F) transposed. A C-contiguous ``x`` goes over in blocks of 64 of its
        (T * B) rows: NumPy's transposing copy of the whole (700 x 128 floats: 58 us) misses the cache on every
        row of one side; in blocks that stay in L1 it takes half that."""
        t, n, f = x.shape
        if not x.flags.c_contiguous or t * n <= 64:
            dst[...] = x.transpose(2, 0, 1)
            return
        src, out = x.reshape(t * n, f), dst.reshape(f, t * n)  # (a view: dst's last two axes are contiguous rows)
        for i in range(0, t * n, 64):
            np.copyto(out[:, i:i + 64], src[i:i + 64].T)

    def nonzero_steps(d: Any) -> list[bool]:
        """Whether each step (axis 0) of ``d`` holds a nonzero. Reduced over the batch axis first where that is the
        outer one in memory (a batch-first output's gradient): OR-ing whole rows, 48 -> 20 us at (50, 32, 128);
        else per step over its own contiguous block."""
        if d.strides[1] > d.strides[0]:
            return d.any(axis=1).any(axis=1).tolist()
        return d.any(axis=(1, 2)).tolist()

    # -- LSTM: gates run in the order o, i, f, g -------------------------------------------------------

    def to_ogif(dst: Any, w: Any) -> None:
        """``w``'s rows (or entries) in PyTorch's order i, f, g, o into ``dst`` as o, i, f, g."""
        h = w.shape[0] // 4
        dst[:h] = w[3 * h:]
        dst[h:] = w[:3 * h]

    def from_ogif(w: Any) -> Any:
        h = w.shape[0] // 4
        return np.concatenate([w[h:], w[:h]])

    def lstm_sequence_forward(x: Any, h0: Any, c0: Any, w_ih: Any, w_hh: Any, b_ih: Any, b_hh: Any,
                              reverse: bool) -> tuple[Any, ...]:
        if in_blocks(h0.shape[0], h0.shape[1], x.shape[2], b_ih is not None):
            return lstm_forward_blocks(x, h0, c0, w_ih, w_hh, b_ih, b_hh, reverse)
        steps, batch, hidden = x.shape[0], h0.shape[0], h0.shape[1]
        feats, dtype = x.shape[2], w_hh.dtype
        rows, h3, h4 = hidden + feats + (b_ih is not None), 3 * hidden, 4 * hidden
        # slab j of ``acts``: the gates o, i, f, g of the step that reads c from the slab's last block, c before
        # that step: [i; f] * [g; c_prev] is one product. Slab j of ``z``: [h; x; 1] before that step.
        w, z, acts, tcs, ig = carve(dtype, (h4, rows), (rows, steps + 1, batch), (steps + 1, 5 * hidden, batch),
                                    (steps, hidden, batch), (2 * hidden, batch))
        to_ogif(w[:, :hidden], w_hh)
        to_ogif(w[:, hidden:hidden + feats], w_ih)
        if b_ih is not None:
            to_ogif(w[:, -1], b_ih + b_hh)
            z[-1] = 1
        w[:h3] *= 0.5  # the sigmoid gates' pre-activations halved
        first = steps if reverse else 0
        hz = z[:hidden].transpose(1, 0, 2)
        transpose_into((z[:, 1:] if reverse else z[:, :-1])[hidden:hidden + feats], x)
        hz[first] = h0.T
        acts[first, h4:] = c0.T
        # the steps' views, sliced once (a step indexes them; ufuncs take ``out`` positionally: per-step
        # Python work is a fair share of these small calls)
        pre, sig, i_f, g_c, cs, o = (acts[:, :h4], acts[:, :h3], acts[:, hidden:h3], acts[:, h3:],
                                     acts[:, h4:], acts[:, :hidden])
        slab, ig_i, ig_f = z.transpose(1, 0, 2), ig[:hidden], ig[hidden:]
        mul, add, tanh, matmul = np.multiply, np.add, np.tanh, np.matmul
        for t in order(steps, reverse):
            cur, nxt = (t + 1, t) if reverse else (t, t + 1)
            p = pre[cur]
            matmul(w, slab[cur], p)
            tanh(p, p)
            s = sig[cur]
            mul(s, 0.5, s)
            add(s, 0.5, s)
            mul(i_f[cur], g_c[cur], ig)  # [i * g; f * c_prev]
            c = add(ig_i, ig_f, cs[nxt])
            mul(o[cur], tanh(c, tcs[t]), hz[nxt])
        out = pool.empty((steps, batch, hidden), dtype)
        np.copyto(out, (hz[:-1] if reverse else hz[1:]).transpose(0, 2, 1))
        last = 0 if reverse else steps
        return out, np.ascontiguousarray(hz[last].T), np.ascontiguousarray(acts[last, h4:].T), acts, z, tcs

    def lstm_weight_grads(dw: Any, hidden: int, feats: int, has_bias: bool,
                          needs: tuple[bool, ...]) -> tuple[Any, Any, Any, Any]:
        """``(dw_ih, dw_hh, db_ih, db_hh)`` in PyTorch's gate order (i, f, g, o) from ``dw`` = [dw_hh | dw_ih | db]
        in the kernels' (o, i, f, g); None for those ``needs`` (at 3..6: w_ih, w_hh, b_ih, b_hh) does not ask
        for. The two biases' gradients are one sum: b_hh's a copy of it."""
        dw_hh = from_ogif(dw[:, :hidden]) if needs[4] else None
        dw_ih = from_ogif(dw[:, hidden:hidden + feats]) if needs[3] else None
        db_ih = db_hh = None
        if has_bias:
            db = from_ogif(dw[:, -1])
            db_ih = db if needs[5] else None
            db_hh = db.copy() if needs[6] else None
        return dw_ih, dw_hh, db_ih, db_hh

    def slopes(s: Any, ks: Any, k_o: Any, k_if: Any, carried: Any, g: Any, kg: Any, i: Any, o: Any, f: Any,
               tcs: Any, fa: Any, reverse: bool) -> None:
        """The LSTM backward's per-step coefficients, in either layout (views of its gates ``o, i, f, g`` and
        ``c_prev``): d(pre) = k * [dh; dc; dc; dc] (gates o, i, f, g), dc = dh * a + dc_carry * f_carry.
        ``s``: the three sigmoid gates, ``ks`` / ``k_o`` / ``k_if`` / ``kg``: where their slopes go (k's parts),
        ``carried``: what i and f multiply (g, c_prev); ``fa[t]`` gets [a_t, f of the step the loop ran
        before t] (1 for the first: dc starts as d_cn); with ``f`` None the caller fills ``fa[:, 1]``."""
        np.multiply(s, s, out=ks)
        np.subtract(s, ks, out=ks)  # s (1 - s), the sigmoids' slope
        k_o *= tcs
        k_if *= carried  # i by g, f by c_prev
        np.multiply(g, g, out=kg)
        np.subtract(1, kg, out=kg)
        kg *= i
        a = np.multiply(tcs, tcs, out=fa[:, 0])
        np.subtract(1, a, out=a)
        a *= o
        if f is not None:
            first, rest, prior = (0, slice(1, None), f[:-1]) if reverse else (-1, slice(None, -1), f[1:])
            fa[first, 1] = 1
            fa[rest, 1] = prior

    def lstm_sequence_backward(d_out: Any, d_hn: Any, d_cn: Any, x: Any, w_ih: Any, w_hh: Any, has_bias: bool,
                               saved: Any, reverse: bool, needs: tuple[bool, ...]) -> tuple[Any, ...]:
        if in_blocks(x.shape[1], w_hh.shape[1], x.shape[2], has_bias):
            return lstm_backward_blocks(d_out, d_hn, d_cn, x, w_ih, w_hh, has_bias, saved, reverse, needs)
        acts, z, tcs = saved
        steps, hidden, batch = tcs.shape
        dtype = tcs.dtype
        h2, h3, h4 = 2 * hidden, 3 * hidden, 4 * hidden
        gates = acts[1:] if reverse else acts[:-1]  # each step's gates
        o, f, g = gates[:, :hidden], gates[:, h2:h3], gates[:, h3:h4]
        # where each step's d(pre) goes (the steps side by side are dm (4H, T * B), the products' operand): straight
        # into dm's columns when those rows are whole cache lines, else into a per-step buffer copied over after
        # the loop (rows of odd sizes apart cost more in the loop than the one copy)
        direct = batch * dtype.itemsize % 64 == 0
        zs = (z[:, 1:] if reverse else z[:, :-1]).reshape(z.shape[0], steps * batch)  # the steps' slabs side by side
        k, fa, dm, dpre, w, e, pair = carve(dtype, (steps, h4, batch), (steps, 2, hidden, batch), (h4, steps, batch),
                                            (0 if direct else steps, h4, batch), (hidden, h4), (4, hidden, batch),
                                            (2, hidden, batch))
        dst = dm.transpose(1, 0, 2) if direct else dpre  # step t's: dst[t]
        # d(pre) = k * [dh; dc; dc; dc] (gates o, i, f, g);  dc = dh * a + dc_carry * f_carry;  dc_carry = dc
        slopes(gates[:, :h3], k[:, :h3], k[:, :hidden], k[:, hidden:h3], gates[:, h3:], g, k[:, h3:],
               gates[:, hidden:h2], o, f, tcs, fa, reverse)
        to_ogif(w.T, w_hh)
        dh, dc = e[0], e[1]
        if d_hn is None:
            dh.fill(0)
        else:
            dh[...] = d_hn.T
        if d_cn is None:
            dc.fill(0)
        else:
            dc[...] = d_cn.T
        live = () if d_out is None else nonzero_steps(d_out)
        ee, e2, e3, p0, p1 = e.reshape(h4, batch), e[:2], e[1:], pair[0], pair[1]  # sliced once, as the forward's
        d_t = None if d_out is None else d_out.transpose(0, 2, 1)
        mul, add, matmul = np.multiply, np.add, np.matmul
        for t in order(steps, not reverse):
            if live and live[t]:
                add(dh, d_t[t], dh)
            mul(e2, fa[t], pair)
            add(p0, p1, e3)  # dc, three times: one product gives d(pre) of all gates
            d = mul(k[t], ee, dst[t])
            matmul(w, d, dh)
        dc = np.multiply(dc, f[t], out=np.empty((hidden, batch), dtype))
        dx = dw_ih = dw_hh = db_ih = db_hh = None
        if not direct:
            np.copyto(dm, dpre.transpose(1, 0, 2))
        dm = dm.reshape(h4, steps * batch)  # the steps side by side: one product each for dx and the weights
        if needs[0]:
            wi = np.empty(w_ih.shape, dtype)
            to_ogif(wi, w_ih)
            dx = (dm.T @ wi).reshape(x.shape)
        if any(needs[3:7]):  # [dw_hh | dw_ih | db] in one product against the steps' slabs
            dw_ih, dw_hh, db_ih, db_hh = lstm_weight_grads(dm @ zs.T, hidden, x.shape[2], has_bias, needs)
        return dx, np.ascontiguousarray(dh.T), np.ascontiguousarray(dc.T), dw_ih, dw_hh, db_ih, db_hh

    # -- LSTM, a batch in blocks of 4 rows -----------------------------------------------------------------

    def in_blocks(batch: int, hidden: int, feats: int, bias: bool) -> bool:
        """Whether a layer runs the kernels below (see the module docstring): a batch of whole blocks of 4 rows,
        and weights [w_hh | w_ih | b] of at most ``BLOCK_WEIGHTS`` elements."""
        return batch % 4 == 0 and 4 * hidden * (hidden + feats + bias) <= BLOCK_WEIGHTS

    def chunks(steps: int, span: int, reverse: bool) -> list[tuple[int, int]]:
        """The steps ``[lo, hi)`` in runs of ``span``, in the order a loop over ``order(steps, reverse)`` meets them."""
        runs = [(lo, min(lo + span, steps)) for lo in range(0, steps, span)]
        return runs[::-1] if reverse else runs

    def carry(dst: Any, f: Any, lo: int, hi: int, reverse: bool) -> None:
        """``dst`` = the forget gates that carry dc into steps ``lo .. hi - 1`` (the backward's ``f_carry``): f of the
        step after each (before each, with ``reverse``), 1 where there is none (dc starts as d_cn)."""
        steps = f.shape[0]
        if reverse:
            src = f[max(lo - 1, 0):hi - 1]
            dst[dst.shape[0] - src.shape[0]:] = src
            if lo == 0:
                dst[0] = 1
        else:
            src = f[lo + 1:min(hi + 1, steps)]
            dst[:src.shape[0]] = src
            if hi == steps:
                dst[-1] = 1

    def lstm_forward_blocks(x: Any, h0: Any, c0: Any, w_ih: Any, w_hh: Any, b_ih: Any, b_hh: Any,
                            reverse: bool) -> tuple[Any, ...]:
        steps, batch, hidden = x.shape[0], h0.shape[0], h0.shape[1]
        feats, dtype = x.shape[2], w_hh.dtype
        rows, h3, h4 = hidden + feats + (b_ih is not None), 3 * hidden, 4 * hidden
        blocks = batch // 4
        # slab j of ``acts`` (5, B, H): the gates o, i, f, g of the step that reads c from the slab's last block,
        # c before that step; of ``z`` (B, H + F + 1): [h, x, 1] before that step
        w, wt, z, acts, tcs, ig = carve(dtype, (h4, rows), (4, rows, hidden), (steps + 1, batch, rows),
                                        (steps + 1, 5, batch, hidden), (steps, batch, hidden), (2, batch, hidden))
        to_ogif(w[:, :hidden], w_hh)
        to_ogif(w[:, hidden:hidden + feats], w_ih)
        if b_ih is not None:
            to_ogif(w[:, -1], b_ih + b_hh)
            z[:, :, -1] = 1
        w[:h3] *= 0.5  # the sigmoid gates' pre-activations halved
        np.copyto(wt, w.reshape(4, hidden, rows).transpose(0, 2, 1))  # each gate's weights, transposed
        first = steps if reverse else 0
        hz = z[:, :, :hidden]
        (z[1:] if reverse else z[:-1])[:, :, hidden:hidden + feats] = x
        hz[first] = h0
        acts[first, 4] = c0
        # a step's product: (gate, block) pairs of 4 batch rows by one gate's weights, straight into the gate blocks
        zb, wg = z.reshape(steps + 1, 1, blocks, 4, rows), wt.reshape(4, 1, rows, hidden)
        pre = acts[:, :4]
        pb = pre.reshape(steps + 1, 4, blocks, 4, hidden)
        sig, i_f, g_c, cs, o = acts[:, :3], acts[:, 1:3], acts[:, 3:], acts[:, 4], acts[:, 0]
        ig_i, ig_f = ig[0], ig[1]
        mul, add, tanh, matmul = np.multiply, np.add, np.tanh, np.matmul
        for t in order(steps, reverse):
            cur, nxt = (t + 1, t) if reverse else (t, t + 1)
            matmul(zb[cur], wg, pb[cur])
            p = pre[cur]
            tanh(p, p)
            s = sig[cur]
            mul(s, 0.5, s)
            add(s, 0.5, s)
            mul(i_f[cur], g_c[cur], ig)  # [i * g, f * c_prev]
            c = add(ig_i, ig_f, cs[nxt])
            mul(o[cur], tanh(c, tcs[t]), hz[nxt])
        out = pool.empty((steps, batch, hidden), dtype)
        np.copyto(out, hz[:-1] if reverse else hz[1:])
        last = 0 if reverse else steps
        return out, hz[last].copy(), cs[last].copy(), acts, z, tcs

    def lstm_backward_blocks(d_out: Any, d_hn: Any, d_cn: Any, x: Any, w_ih: Any, w_hh: Any, has_bias: bool,
                             saved: Any, reverse: bool, needs: tuple[bool, ...]) -> tuple[Any, ...]:
        acts, z, tcs = saved
        steps, batch, hidden = tcs.shape
        dtype, rows, h4, blocks = tcs.dtype, z.shape[2], 4 * hidden, batch // 4
        gates = acts[1:] if reverse else acts[:-1]  # each step's gates (and c_prev)
        o, i, f, g = gates[:, 0], gates[:, 1], gates[:, 2], gates[:, 3]
        span = max(1, min(steps, CHUNK_BYTES // (10 * batch * hidden * dtype.itemsize)))
        k, fa, dpre, w, e, pair = carve(dtype, (span, 4, batch, hidden), (span, 2, batch, hidden),
                                        (span, batch, h4), (h4, hidden), (4, batch, hidden), (2, batch, hidden))
        # d(pre) = k * [dh, dc, dc, dc] (gates o, i, f, g);  dc = dh * a + dc_carry * f_carry;  dc_carry = dc.
        # The steps run in runs of ``span`` (see CHUNK_BYTES): k and fa computed just before the loop runs a run's
        # steps, the products of its d(pre) (dx, the weights) just after, while all of them are in the L2 cache.
        to_ogif(w, w_hh)
        dh, dc = e[0], e[1]
        if d_hn is None:
            dh.fill(0)
        else:
            dh[...] = d_hn
        if d_cn is None:
            dc.fill(0)
        else:
            dc[...] = d_cn
        live = () if d_out is None else nonzero_steps(d_out)
        e2, e3, p0, p1 = e[:2], e[1:], pair[0], pair[1]
        # each step's d(pre) (B, 4H), written as (4, B, H) blocks: the rows of the products after each run
        d4, dpb, dhb = (dpre.reshape(span, batch, 4, hidden).transpose(0, 2, 1, 3),
                        dpre.reshape(span, blocks, 4, h4), dh.reshape(blocks, 4, hidden))
        slabs = z[1:] if reverse else z[:-1]
        dx = wi = dw = part = None
        if needs[0]:
            dx = np.empty(x.shape, dtype)
            wi = np.empty(w_ih.shape, dtype)
            to_ogif(wi, w_ih)
        weights = any(needs[3:7])  # [dw_hh | dw_ih | db]: one product against the slabs, summed over the runs
        if weights:
            dw, part = np.empty((h4, rows), dtype), np.empty((h4, rows), dtype)
        mul, add, matmul = np.multiply, np.add, np.matmul
        for run, (lo, hi) in enumerate(chunks(steps, span, not reverse)):
            n = hi - lo
            slopes(gates[lo:hi, :3], k[:n, :3], k[:n, 0], k[:n, 1:3], gates[lo:hi, 3:], g[lo:hi], k[:n, 3],
                   i[lo:hi], o[lo:hi], None, tcs[lo:hi], fa[:n], reverse)
            carry(fa[:n, 1], f, lo, hi, reverse)
            for t in order(n, not reverse):
                if live and live[lo + t]:
                    add(dh, d_out[lo + t], dh)
                mul(e2, fa[t], pair)
                add(p0, p1, e3)  # dc, three times: one product gives d(pre) of all gates
                mul(k[t], e, d4[t])
                matmul(dpb[t], w, dhb)
            dm = dpre[:n].reshape(n * batch, h4)  # the run's steps one under the other
            if dx is not None:
                matmul(dm, wi, dx[lo:hi].reshape(n * batch, x.shape[2]))
            if weights:
                matmul(dm.T, slabs[lo:hi].reshape(n * batch, rows), part if run else dw)
                if run:
                    dw += part
        dc = np.multiply(dc, f[lo + t], out=np.empty((batch, hidden), dtype))
        dw_ih = dw_hh = db_ih = db_hh = None
        if weights:
            dw_ih, dw_hh, db_ih, db_hh = lstm_weight_grads(dw, hidden, x.shape[2], has_bias, needs)
        return dx, dh.copy(), dc, dw_ih, dw_hh, db_ih, db_hh

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
