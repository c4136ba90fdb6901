/* The one elementwise template: instantiated by _elementwise.py for every op, dtype and operand pattern.
 *
 * ${name}_z: every operand contiguous with the output's shape and at offset 0 (or a by-value scalar): the
 *            fewest arguments, for the cheapest launch.
 * ${name}_c: the same with element offsets (slices of the leading dimension).
 * ${name}_s: any strides and broadcasting (stride 0), the output too (copies into views); each work-item
 *            takes CHUNK elements of one row of the innermost dimension (m->shape, coalesced, has nd >= 1).
 * The parameter list names the operands (a buffer and an element offset, or a scalar), the loads read them into
 * a, b, c and ${result} is the op's C expression over those names; ${err} adds the error flag for the ops
 * that can fail (integer division by zero) and for commits (the in-place write of a result into its tensor),
 * whose ${guard} writes nothing while the flag is set: a failed op, whose error is reported at the next
 * synchronization, must not leave a partial result in its input.
 */
#ifndef CHUNK
#define CHUNK 16
#endif

__kernel void ${name}_z(__global ${out_t} *out${params_z}, const long n${err})
{
    const long i = get_global_id(0);
    if (i >= n) return;
${guard}${loads_z}
    ${store}(out, i, ${result});
}

__kernel void ${name}_c(__global ${out_t} *out, const long out_off${params}, const long n${err})
{
    const long i = get_global_id(0);
    if (i >= n) return;
${guard}${loads_c}
    ${store}(out, out_off + i, ${result});
}

__kernel void ${name}_s(__global ${out_t} *out, const long out_off${params}, const long work, __global const meta_t *m${err})
{
    /* one work-item per CHUNK elements of the innermost dimension: the coordinates of the outer ones are
     * worked out once, then each operand steps by its innermost stride */
    const long g = get_global_id(0);
    if (g >= work) return;
${guard}    const int last = (int)m->nd - 1;
    const long inner = m->shape[last], per = (inner + CHUNK - 1) / CHUNK;
    long rest = g / per;
    const long lo = (g % per) * CHUNK, hi = min(inner, lo + CHUNK);
    long q = out_off + lo * m->st[0][last]${pos_init};
    for (int d = last - 1; d >= 0; --d) {
        const long k = rest % m->shape[d];
        rest /= m->shape[d];
        q += k * m->st[0][d];${pos_step}
    }
    for (long t = lo; t < hi; ++t) {
${loads_s}
        ${store}(out, q, ${result});
        q += m->st[0][last];${pos_next}
    }
}
