/* Gather and scatter through element positions, instantiated per dtype by _indexing.py.
 *
 * ${T} is the storage type, ${U} the unsigned integer type of its width (for compare-and-swap), ${C}
 * the compute type. pos holds element positions in x's buffer (offset and strides already applied).
 * Scatter reads the values through a strided layout (broadcasting: stride 0) or one scalar, and writes
 * nothing while the device's error flag is set (an index out of range: no partial write).
 */
__kernel void gather(__global ${T} *out, __global const ${T} *x, __global const long *pos, const long n)
{
    const long i = get_global_id(0);
    if (i < n) out[i] = x[pos[i]];
}

inline long value_at(long i, __global const meta_t *m)
{
    long rest = i, p = 0;
    for (int d = (int)m->nd - 1; d >= 0; --d) {
        const long k = rest % m->shape[d];
        rest /= m->shape[d];
        p += k * m->st[1][d];
    }
    return p;
}

__kernel void put(__global ${T} *x, __global const long *pos, __global const ${T} *v, const long voff,
                  const long n, __global const meta_t *m, volatile __global const int *err)
{
    const long i = get_global_id(0);
    if (i < n && !*err) x[pos[i]] = v[voff + value_at(i, m)];
}

__kernel void put_scalar(__global ${T} *x, __global const long *pos, const ${T} s, const long n,
                         volatile __global const int *err)
{
    const long i = get_global_id(0);
    if (i < n && !*err) x[pos[i]] = s;
}

/* x[pos[i]] = REDUCE(x[pos[i]], v[i]) atomically: a compare-and-swap loop on the element's bits. */
inline void cas_update(volatile __global ${T} *p, const ${C} b)
{
    union { ${U} u; ${T} t; } old, upd;
    do {
        old.t = *p;
        const ${C} a = old.t;
        upd.t = (${T})(${reduce});
    } while (${cmpxchg}((volatile __global ${U} *)p, old.u, upd.u) != old.u);
}

__kernel void put_reduce(__global ${T} *x, __global const long *pos, __global const ${T} *v, const long voff,
                         const long n, __global const meta_t *m, volatile __global const int *err)
{
    const long i = get_global_id(0);
    if (i < n && !*err) cas_update(x + pos[i], v[voff + value_at(i, m)]);
}
