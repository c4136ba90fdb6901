/* Fused row kernels of composite ops: softmax / log_softmax, layer_norm, cross_entropy (forward and backward).
 *
 * One work-group per row of a contiguous (rows, cols) array (the launcher makes inputs contiguous first);
 * its work-items stride over the row and combine in local memory. Instantiated per dtype by _fused.py:
 * ${T} is the storage type, ${ACC} the compute type (float for half), ${load} / ${store} read and write
 * storage. Per-row statistics (mean, rstd, logsumexp, the target's weight) are kept in ${ACC}.
 * Offsets count elements, as everywhere in ferro-opencl.
 */
#define GROUP 256

/* The group's sum / max of v, seen by every work-item. The first barrier lets a previous call's readers of
 * s[0] finish before s is overwritten. The local size is a power of two. */
inline ${ACC} nanmax(${ACC} a, ${ACC} b) { return (isnan(a) || isnan(b)) ? a + b : fmax(a, b); }
inline ${ACC} plus(${ACC} a, ${ACC} b) { return a + b; }

#define GROUP_REDUCE(name, combine)                                  \
inline ${ACC} name(${ACC} v, __local ${ACC} *s)                      \
{                                                                    \
    const int lid = get_local_id(0), ls = get_local_size(0);         \
    barrier(CLK_LOCAL_MEM_FENCE);                                    \
    s[lid] = v;                                                      \
    barrier(CLK_LOCAL_MEM_FENCE);                                    \
    for (int k = ls / 2; k > 0; k >>= 1) {                           \
        if (lid < k) s[lid] = combine(s[lid], s[lid + k]);           \
        barrier(CLK_LOCAL_MEM_FENCE);                                \
    }                                                                \
    return s[0];                                                     \
}
GROUP_REDUCE(group_sum, plus)
GROUP_REDUCE(group_max, nanmax)

/* The row's max and sum(exp(x - max)): softmax's and logsumexp's two passes. */
inline void row_max_sumexp(__global const ${T} *x, const long base, const long cols, __local ${ACC} *s,
                           ${ACC} *m_out, ${ACC} *s_out)
{
    const int lid = get_local_id(0), ls = get_local_size(0);
    ${ACC} m = -INFINITY;
    for (long c = lid; c < cols; c += ls) m = nanmax(m, (${ACC})${load}(x, base + c));
    m = group_max(m, s);
    ${ACC} acc = 0;
    for (long c = lid; c < cols; c += ls) acc += exp((${ACC})${load}(x, base + c) - m);
    *m_out = m;
    *s_out = group_sum(acc, s);
}

__kernel void softmax_forward(__global const ${T} *x, const long xoff, __global ${T} *y, const long cols,
                              const int log_out)
{
    __local ${ACC} s[GROUP];
    const long row = get_group_id(0);
    const int lid = get_local_id(0), ls = get_local_size(0);
    const long xb = xoff + row * cols, yb = row * cols;
    if (log_out) {
        ${ACC} m, sum;
        row_max_sumexp(x, xb, cols, s, &m, &sum);
        /* (x - m) - log(sum), not x - (m + log(sum)): that sum rounds at the magnitude of m. */
        const ${ACC} log_sum = log(sum);
        for (long c = lid; c < cols; c += ls) ${store}(y, yb + c, ((${ACC})${load}(x, xb + c) - m) - log_sum);
        return;
    }
    /* exp once per element (it dominates on a CPU device): kept in y, then scaled there. Each work-item
     * reads back only what it wrote itself, so no barrier is needed between the passes. (A 16-bit
     * y would hold exp rounded, so the 16-bit floats recompute it, to round the result once.) */
    ${ACC} m = -INFINITY;
    for (long c = lid; c < cols; c += ls) m = nanmax(m, (${ACC})${load}(x, xb + c));
    m = group_max(m, s);
    ${ACC} acc = 0;
    for (long c = lid; c < cols; c += ls) {
        const ${ACC} e = exp((${ACC})${load}(x, xb + c) - m);
        ${store}(y, yb + c, e);
        acc += e;
    }
    const ${ACC} inv = (${ACC})1 / group_sum(acc, s);
    for (long c = lid; c < cols; c += ls) ${store}(y, yb + c, ${scaled} * inv);
}

/* softmax:     dx = y * (grad - sum(grad * y))
 * log_softmax: dx = grad - exp(y) * sum(grad) */
__kernel void softmax_backward(__global const ${T} *g, const long goff, __global const ${T} *y, const long yoff,
                               __global ${T} *dx, const long cols, const int log_out)
{
    __local ${ACC} s[GROUP];
    const long row = get_group_id(0);
    const int lid = get_local_id(0), ls = get_local_size(0);
    const long gb = goff + row * cols, yb = yoff + row * cols, db = row * cols;
    ${ACC} acc = 0;
    for (long c = lid; c < cols; c += ls) {
        const ${ACC} gv = (${ACC})${load}(g, gb + c);
        acc += log_out ? gv : gv * (${ACC})${load}(y, yb + c);
    }
    acc = group_sum(acc, s);
    for (long c = lid; c < cols; c += ls) {
        const ${ACC} gv = (${ACC})${load}(g, gb + c), yv = (${ACC})${load}(y, yb + c);
        ${store}(dx, db + c, log_out ? gv - exp(yv) * acc : yv * (gv - acc));
    }
}

/* Two passes over the row: the centred sum of squares does not cancel catastrophically. */
__kernel void layer_norm_forward(__global const ${T} *x, const long xoff, __global const ${T} *w, const long woff,
                                 __global const ${T} *b, const long boff, __global ${T} *y,
                                 __global ${ACC} *mean, __global ${ACC} *rstd, const long cols, const ${ACC} eps,
                                 const int has_w, const int has_b)
{
    __local ${ACC} s[GROUP];
    const long row = get_group_id(0);
    const int lid = get_local_id(0), ls = get_local_size(0);
    const long xb = xoff + row * cols, yb = row * cols;
    ${ACC} acc = 0;
    for (long c = lid; c < cols; c += ls) acc += (${ACC})${load}(x, xb + c);
    const ${ACC} mu = group_sum(acc, s) / (${ACC})cols;
    acc = 0;
    for (long c = lid; c < cols; c += ls) {
        const ${ACC} d = (${ACC})${load}(x, xb + c) - mu;
        acc += d * d;
    }
    const ${ACC} r = (${ACC})1 / sqrt(group_sum(acc, s) / (${ACC})cols + eps);
    for (long c = lid; c < cols; c += ls) {
        ${ACC} v = ((${ACC})${load}(x, xb + c) - mu) * r;
        if (has_w) v *= (${ACC})${load}(w, woff + c);
        if (has_b) v += (${ACC})${load}(b, boff + c);
        ${store}(y, yb + c, v);
    }
    if (lid == 0) {
        mean[row] = mu;
        rstd[row] = r;
    }
}

/* With xhat = (x - mean) * rstd and h = grad * weight: dx = rstd * (h - mean(h) - xhat * mean(h * xhat)). */
__kernel void layer_norm_backward(__global const ${T} *g, const long goff, __global const ${T} *x, const long xoff,
                                  __global const ${T} *w, const long woff, __global const ${ACC} *mean,
                                  __global const ${ACC} *rstd, __global ${T} *dx, const long cols, const int has_w)
{
    __local ${ACC} s[GROUP];
    const long row = get_group_id(0);
    const int lid = get_local_id(0), ls = get_local_size(0);
    const long gb = goff + row * cols, xb = xoff + row * cols, db = row * cols;
    const ${ACC} mu = mean[row], r = rstd[row];
    ${ACC} sh = 0, shx = 0;
    for (long c = lid; c < cols; c += ls) {
        ${ACC} h = (${ACC})${load}(g, gb + c);
        if (has_w) h *= (${ACC})${load}(w, woff + c);
        sh += h;
        shx += h * ((${ACC})${load}(x, xb + c) - mu) * r;
    }
    const ${ACC} mh = group_sum(sh, s) / (${ACC})cols;
    const ${ACC} mhx = group_sum(shx, s) / (${ACC})cols;
    for (long c = lid; c < cols; c += ls) {
        ${ACC} h = (${ACC})${load}(g, gb + c);
        if (has_w) h *= (${ACC})${load}(w, woff + c);
        ${store}(dx, db + c, r * (h - mh - ((${ACC})${load}(x, xb + c) - mu) * r * mhx));
    }
}

/* dweight = sum over rows of grad * xhat, dbias = sum over rows of grad: a work-item per column, so
 * neighbouring work-items read neighbouring elements. */
__kernel void layer_norm_param_grads(__global const ${T} *g, const long goff, __global const ${T} *x,
                                     const long xoff, __global const ${ACC} *mean, __global const ${ACC} *rstd,
                                     __global ${T} *dw, __global ${T} *db, const long rows, const long cols)
{
    const long c = get_global_id(0);
    if (c >= cols) return;
    ${ACC} sw = 0, sb = 0;
    for (long row = 0; row < rows; ++row) {
        const ${ACC} gv = (${ACC})${load}(g, goff + row * cols + c);
        sw += gv * ((${ACC})${load}(x, xoff + row * cols + c) - mean[row]) * rstd[row];
        sb += gv;
    }
    ${store}(dw, c, sw);
    ${store}(db, c, sb);
}

/* loss[row] = w[t] * ((max - x[row, t]) + log(sum(exp(x[row] - max)))), with the row's (max, log-sum) pair
 * (kept for backward: their sum, the logsumexp, would round at the magnitude of the logits) and w[t];
 * a row whose target is ignore_index gets loss 0 and weight 0. A target out of [0, classes) sets the error
 * flag (IndexError at the next synchronization: a kernel cannot raise) and gives NaN. */
__kernel void cross_entropy_forward(__global const ${T} *x, const long xoff, __global const long *target,
                                    const long toff, __global const ${T} *w, const long woff,
                                    __global ${ACC} *loss, __global ${ACC} *lse, __global ${ACC} *roww,
                                    const long classes, const long ignore_index, const int has_w,
                                    volatile __global int *err)
{
    __local ${ACC} s[GROUP];
    const long row = get_group_id(0);
    const long xb = xoff + row * classes;
    ${ACC} m, sum;
    row_max_sumexp(x, xb, classes, s, &m, &sum);
    if (get_local_id(0) == 0) {
        const ${ACC} l = log(sum);
        const long t = target[toff + row];
        lse[2 * row] = m;
        lse[2 * row + 1] = l;
        if (t == ignore_index) {
            loss[row] = 0;
            roww[row] = 0;
        } else if (t < 0 || t >= classes) {
            *err = 1;
            loss[row] = NAN;
            roww[row] = NAN;
        } else {
            const ${ACC} wt = has_w ? (${ACC})${load}(w, woff + t) : (${ACC})1;
            loss[row] = wt * ((m - (${ACC})${load}(x, xb + t)) + l);
            roww[row] = wt;
        }
    }
}

/* dx[row, c] = grad[row] * w[t] * (softmax(x[row])[c] - [c == t]); an ignored row gets 0 (also where a mean
 * over no weight made grad NaN, as torch's batched kernel does). grad has a stride
 * (0 for a reduction's one gradient broadcast over the rows). */
__kernel void cross_entropy_backward(__global const ${T} *g, const long goff, const long gstride,
                                     __global const ${T} *x, const long xoff, __global const long *target,
                                     const long toff, __global const ${T} *w, const long woff,
                                     __global const ${ACC} *lse, __global ${T} *dx, const long classes,
                                     const long ignore_index, const int has_w)
{
    const long row = get_group_id(0);
    const int lid = get_local_id(0), ls = get_local_size(0);
    const long xb = xoff + row * classes, db = row * classes;
    const long t = target[toff + row];
    const int ignored = t == ignore_index;
    const int valid = !ignored && t >= 0 && t < classes;
    const ${ACC} gr = ignored ? (${ACC})0 : valid ? (${ACC})${load}(g, goff + row * gstride) *
        (has_w ? (${ACC})${load}(w, woff + t) : (${ACC})1) : (${ACC})NAN;
    const ${ACC} m = lse[2 * row], l = lse[2 * row + 1];
    for (long c = lid; c < classes; c += ls)
        ${store}(dx, db + c, gr * (exp(((${ACC})${load}(x, xb + c) - m) - l) - (c == t ? (${ACC})1 : (${ACC})0)));
}

/* ferro.amp's check for inf/nan and unscale of one contiguous gradient (torch's
 * _amp_foreach_non_finite_check_and_unscale_), one element per work-item: g[i] * inv_scale in ${ACC}, stored once;
 * a non-finite element sets found_inf[foff] to 1 (every writer writes the same value, so no atomic is needed). */
__kernel void amp_unscale(__global ${T} *g, const long off, const long n, __global float *found_inf,
                          const long foff, const float inv_scale)
{
    const long i = get_global_id(0);
    if (i >= n)
        return;
    const ${ACC} v = (${ACC})${load}(g, off + i);
    if (!isfinite(v))
        found_inf[foff] = 1.0f;
    if (inv_scale != 1.0f)
        ${store}(g, off + i, v * (${ACC})inv_scale);
}
