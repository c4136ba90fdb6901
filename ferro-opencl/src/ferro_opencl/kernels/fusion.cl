/* A fused group of elementwise ops (ferro.backends.fusion) as one kernel: instantiated by _fusion.py per group.
 *
 * ${name}_c: every input contiguous with the group's shape (an element offset each): element i of each.
 * ${name}_s: any strides and broadcasting (stride 0): m holds the coalesced shape and, per array (0 = the
 *            outputs, which are contiguous; 1.. = the inputs), its strides, as _elementwise.layout writes them:
 *            m[0] = nd, m[1 + d] = shape[d], m[1 + MAX_DIMS * (j + 1) + d] = stride of array j along d;
 *            each work-item takes CHUNK elements of one row of the innermost dimension.
 * The loads define v0.. (the inputs' values), the body the steps' values v<n>.. (the C of
 * ferro.backends._fused_source), the stores write the outputs at i; the error flag (last argument) is there for
 * expressions that can fail (integer division by zero).
 */

__kernel void ${name}_c(${outs}${params}${scalars}, const long n${err})
{
    const long i = get_global_id(0);
    if (i >= n) return;
${loads_c}
${body}
${stores}
}

__kernel void ${name}_s(${outs}${params}${scalars}, const long work, __global const long *m${err})
{
    /* one work-item per CHUNK elements of the innermost dimension, as elementwise.cl's _s: the coordinates of the
     * outer ones are worked out once, then each array steps by its innermost stride */
    const long g = get_global_id(0);
    if (g >= work) return;
    const int last = (int)m[0] - 1;
    const long inner = m[1 + last], per = (inner + ${chunk} - 1) / ${chunk};
    long rest = g / per;
    const long lo = (g % per) * ${chunk}, hi = min(inner, lo + ${chunk});
    long i = lo * m[${out_st} + last];
${pos_init}
    for (int d = last - 1; d >= 0; --d) {
        const long k = rest % m[1 + d];
        rest /= m[1 + d];
        i += k * m[${out_st} + d];
${pos_step}
    }
    for (long t = lo; t < hi; ++t) {
${loads_s}
${body}
${stores}
        i += m[${out_st} + last];
${pos_next}
    }
}
