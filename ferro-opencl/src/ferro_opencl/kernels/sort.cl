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
                      const meta_t mo)
{
    const long gid = get_global_id(0);
    if (gid >= lines * n) return;
    const long l = gid / n, i = gid % n;
    const long px = xoff + strided_pos(l, &mo, 1);
    const ${C} v = ${load}(x, px + i * xstep);
    long rank = 0;
    for (long j = 0; j < n; ++j) {
        const ${C} w = ${load}(x, px + j * xstep);
        const int b = descending ? before_desc(w, v) : before_asc(w, v);
        const int a = descending ? before_desc(v, w) : before_asc(v, w);
        rank += b || (!a && j < i);
    }
    out[strided_pos(l, &mo, 0) + rank * ostep] = i;
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
                         const meta_t mo)
{
    const long l = get_global_id(0);
    if (l >= lines) return;
    long po = strided_pos(l, &mo, 0), px = xoff + strided_pos(l, &mo, 1);
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
