/* The element positions an advanced index selects, computed on the device (_indexing.device_positions).
 *
 * The result's dimensions are laid out by m: operand 0 steps through the basic view (base offset, view
 * strides; 0 along the index tensors' dimensions), operands 1..3 through the index tensors (broadcast:
 * stride 0). Each index tensor adds (its value, wrapped when negative) * step; an unused one has step 0.
 * An index out of range sets *error (reported by the next synchronization) and reads element 0.
 */
inline long take(const long v, const long len, const long step, volatile __global int *error)
{
    if (v < -len || v >= len) {
        *error = 1;
        return 0;
    }
    return (v < 0 ? v + len : v) * step;
}

__kernel void positions(__global long *out, const long n, const long base, __global const meta_t *m,
                        __global const long *i1, const long o1, const long len1, const long step1,
                        __global const long *i2, const long o2, const long len2, const long step2,
                        __global const long *i3, const long o3, const long len3, const long step3,
                        volatile __global int *error)
{
    const long i = get_global_id(0);
    if (i >= n) return;
    long rest = i, p = base, q1 = o1, q2 = o2, q3 = o3;
    for (int d = (int)m->nd - 1; d >= 0; --d) {
        const long c = rest % m->shape[d];
        rest /= m->shape[d];
        p += c * m->st[0][d];
        q1 += c * m->st[1][d];
        q2 += c * m->st[2][d];
        q3 += c * m->st[3][d];
    }
    p += take(i1[q1], len1, step1, error);
    if (step2) p += take(i2[q2], len2, step2, error);
    if (step3) p += take(i3[q3], len3, step3, error);
    out[i] = p;
}
