/* Sorting and searching, instantiated per dtype by _sorting.py. ${T} storage type, ${C} compute type.
 *
 * before(w, v): w sorts strictly before v (ascending: nan last; descending: nan first, as in PyTorch).
 */
inline int before_asc(const ${C} w, const ${C} v) { return w < v ${nan_last}; }
inline int before_desc(const ${C} w, const ${C} v) { return w > v ${nan_first}; }

/* Stable argsort by rank: element i of a line goes to the place given by the number of elements that sort
 * before it (ties: those earlier in the line). One work-item per element; O(n) work each. */
__kernel void argsort(__global long *out, __global const ${T} *x, const long xoff, const long n,
                      const long xstep, const long ostep, const long lines, const int descending,
                      __global const meta_t *mo)
{
    const long gid = get_global_id(0);
    if (gid >= lines * n) return;
    const long l = gid / n, i = gid % n;
    const long px = xoff + strided_pos(l, mo, 1);
    const ${C} v = ${load}(x, px + i * xstep);
    long rank = 0;
    for (long j = 0; j < n; ++j) {
        const ${C} w = ${load}(x, px + j * xstep);
        const int b = descending ? before_desc(w, v) : before_asc(w, v);
        const int a = descending ? before_desc(v, w) : before_asc(v, w);
        rank += b || (!a && j < i);
    }
    out[strided_pos(l, mo, 0) + rank * ostep] = i;
}

/* searchsorted over contiguous lines of n sorted elements; each value searches line (its index / m)
 * (one line for all when lines == 1). right: the first place whose element is greater than the value. */
__kernel void searchsorted(__global long *out, __global const ${T} *seq, const long soff, const long n,
                           __global const ${T} *values, const long voff, const long count, const long m,
                           const long lines, const int right)
{
    const long i = get_global_id(0);
    if (i >= count) return;
    const long line = lines == 1 ? 0 : i / m;
    __global const ${T} *s = seq + soff + line * n;
    const ${C} v = ${load}(values, voff + i);
    long lo = 0, hi = n;
    while (lo < hi) {
        const long mid = (lo + hi) / 2;
        const ${C} w = ${load}(s, mid);
        const int go_right = right ? !before_asc(v, w) : before_asc(w, v);
        if (go_right) lo = mid + 1; else hi = mid;
    }
    out[i] = lo;
}

/* cummax / cummin along one dimension: the running extreme (nan propagates) and the index of the last
 * element equal to it. One work-item per line; mo as in scan.cl. */
__kernel void cumextreme(__global ${T} *out, __global long *idx, __global const ${T} *x, const long xoff,
                         const long n, const long ostep, const long xstep, const long lines, const int is_max,
                         __global const meta_t *mo)
{
    const long l = get_global_id(0);
    if (l >= lines) return;
    long po = strided_pos(l, mo, 0), px = xoff + strided_pos(l, mo, 1);
    ${C} acc = 0;
    long at = 0;
    for (long j = 0; j < n; ++j, po += ostep, px += xstep) {
        const ${C} v = ${load}(x, px);
        if (j == 0) acc = v;
        else if (${isnan_acc}) acc = acc;
        else if (${isnan_v} || (is_max ? v > acc : v < acc)) acc = v;
        if (v == acc) at = j;
        ${store}(out, po, acc);
        idx[po] = at;
    }
}

/* Long lines: a bitonic sort of (value, index) pairs, lines padded to a power of two p. The index breaks
 * ties, so the order is total and the result stable; padding (index >= n) sorts last. bitonic_load copies
 * each line in; bitonic_step is one compare-exchange pass (block k, distance j); the caller loops. */
__kernel void bitonic_load(__global ${T} *keys, __global long *idx, __global const ${T} *x, const long xoff,
                           const long n, const long p, const long xstep, const long lines, __global const meta_t *mo)
{
    const long g = get_global_id(0);
    if (g >= lines * p) return;
    const long l = g / p, i = g % p;
    if (i < n) ${store}(keys, g, ${load}(x, xoff + strided_pos(l, mo, 1) + i * xstep));
    idx[g] = i;
}

inline int pair_before(const ${C} a, const long ia, const ${C} b, const long ib, const long n, const int desc)
{
    if (ia >= n) return 0;
    if (ib >= n) return 1;
    const int ab = desc ? before_desc(a, b) : before_asc(a, b);
    const int ba = desc ? before_desc(b, a) : before_asc(b, a);
    return ab || (!ba && ia < ib);
}

__kernel void bitonic_step(__global ${T} *keys, __global long *idx, const long n, const long p, const long lines,
                           const long k, const long j, const int descending)
{
    const long g = get_global_id(0);
    if (g >= lines * p) return;
    const long i = g % p, partner = i ^ j;
    if (partner <= i) return;
    const long base = g - i;
    const ${C} a = ${load}(keys, base + i), b = ${load}(keys, base + partner);
    const long ia = idx[base + i], ib = idx[base + partner];
    const int up = (i & k) == 0;
    const int swap = up ? pair_before(b, ib, a, ia, n, descending) : pair_before(a, ia, b, ib, n, descending);
    if (swap) {
        ${store}(keys, base + i, b);
        ${store}(keys, base + partner, a);
        idx[base + i] = ib;
        idx[base + partner] = ia;
    }
}

/* The first n indices of each sorted line into the result (any strides; mo operand 0). */
__kernel void bitonic_store(__global long *out, __global const long *idx, const long n, const long p,
                            const long ostep, const long lines, __global const meta_t *mo)
{
    const long g = get_global_id(0);
    if (g >= lines * n) return;
    const long l = g / n, i = g % n;
    out[strided_pos(l, mo, 0) + i * ostep] = idx[l * p + i];
}
