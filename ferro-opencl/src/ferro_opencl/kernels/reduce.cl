/* Reductions, instantiated per op and dtype by _reduction.py.
 *
 * One work-group per (output element, chunk of the reduced range): its work-items stride over the chunk,
 * then a tree in local memory combines them. mo lays out the kept dimensions (operand 1 = x), mr the
 * reduced ones; with chunks > 1 the partial results go to a scratch array reduced by a second launch.
 * ${ACC} is the accumulator type, ${reduce} combines acc and v, ${final} maps acc (and the full count n)
 * to the output.
 */
#define GROUP 256

__kernel void reduce(__global ${OUT} *out, __global const ${IN} *x, const long xoff, const long n_red,
                     const long chunks, const long count, __global const meta_t *mo, __global const meta_t *mr)
{
    const long g = get_group_id(0);
    const long o = g / chunks, c = g % chunks;
    const int lid = get_local_id(0), ls = get_local_size(0);
    const long len = (n_red + chunks - 1) / chunks;
    const long lo = c * len, hi = min(n_red, lo + len);
    const long base = xoff + strided_pos(o, mo, 1);
    ${ACC} acc = ${identity};
    const long rs = mr->st[1][0];  /* one reduced dimension after coalescing: a plain stride, no division */
    if (mr->nd == 1) {
        for (long r = lo + lid; r < hi; r += ls) {
            const ${ACC} v = (${ACC})${load}(x, base + r * rs);
            acc = ${reduce};
        }
    } else {
        for (long r = lo + lid; r < hi; r += ls) {
            const ${ACC} v = (${ACC})${load}(x, base + strided_pos(r, mr, 1));
            acc = ${reduce};
        }
    }
    __local ${ACC} part[GROUP];
    part[lid] = acc;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = ls / 2; s > 0; s >>= 1) {
        if (lid < s) {
            const ${ACC} v = part[lid + s];
            acc = part[lid];
            part[lid] = ${reduce};
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0) {
        acc = part[0];
        const long n = count;
        ${store}(out, g, ${final});
    }
}

/* argmax / argmin: one work-group per output element, (value, index) pairs; the first extreme wins
 * and nan counts as the extreme, as in NumPy and PyTorch. */
__kernel void argreduce(__global long *out, __global const ${IN} *x, const long xoff, const long n_red,
                        __global const meta_t *mo, __global const meta_t *mr)
{
    const long o = get_group_id(0);
    const int lid = get_local_id(0), ls = get_local_size(0);
    const long base = xoff + strided_pos(o, mo, 1);
    ${ACC} best = 0;
    long at = -1;
    for (long r = lid; r < n_red; r += ls) {
        const ${ACC} v = (${ACC})${load}(x, base + (mr->nd == 1 ? r * mr->st[1][0] : strided_pos(r, mr, 1)));
        if (at < 0 || ${better}) { best = v; at = r; }
    }
    __local ${ACC} pv[GROUP];
    __local long pi[GROUP];
    pv[lid] = best;
    pi[lid] = at;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = ls / 2; s > 0; s >>= 1) {
        if (lid < s) {
            const ${ACC} v = pv[lid + s];
            const long r = pi[lid + s];
            best = pv[lid];
            at = pi[lid];
            if (r >= 0 && (at < 0 || ${better} || (!(${worse}) && r < at))) { pv[lid] = v; pi[lid] = r; }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0) out[o] = pi[0];
}

/* Many outputs whose kept dimension is the fast one (x.sum(0) of a matrix): one work-item per output walks
 * its reduced range, so neighbouring work-items read neighbouring elements. */
__kernel void reduce_columns(__global ${OUT} *out, __global const ${IN} *x, const long xoff, const long n_red,
                             const long n_out, const long count, __global const meta_t *mo, __global const meta_t *mr)
{
    const long o = get_global_id(0);
    if (o >= n_out) return;
    const long base = xoff + strided_pos(o, mo, 1);
    ${ACC} acc = ${identity};
    if (mr->nd == 1) {
        const long rs = mr->st[1][0];
        __global const ${IN} *p = x + base;
        for (long r = 0; r < n_red; ++r, p += rs) {
            const ${ACC} v = (${ACC})${load}(p, 0);
            acc = ${reduce};
        }
    } else {
        for (long r = 0; r < n_red; ++r) {
            const ${ACC} v = (${ACC})${load}(x, base + strided_pos(r, mr, 1));
            acc = ${reduce};
        }
    }
    const long n = count;
    ${store}(out, o, ${final});
}
