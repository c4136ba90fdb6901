/* The one elementwise template: instantiated by _elementwise.py for every op, dtype and operand pattern.
 *
 * ${name}_z: every operand contiguous with the output's shape and at offset 0 (or a by-value scalar): the
 *            fewest arguments, for the cheapest launch.
 * ${name}_c: the same with element offsets (slices of the leading dimension).
 * ${name}_s: any strides and broadcasting (stride 0), the output too (copies into views); the flat index is
 *            split into coordinates over m.shape and each operand's position is its own dot product.
 * The parameter list names the operands (a buffer and an element offset, or a scalar), the loads read them into
 * a, b, c and ${result} is the op's C expression over those names.
 */
__kernel void ${name}_z(__global ${out_t} *out${params_z}, const long n)
{
    const long i = get_global_id(0);
    if (i >= n) return;
${loads_z}
    ${store}(out, i, ${result});
}

__kernel void ${name}_c(__global ${out_t} *out, const long out_off${params}, const long n)
{
    const long i = get_global_id(0);
    if (i >= n) return;
${loads_c}
    ${store}(out, out_off + i, ${result});
}

__kernel void ${name}_s(__global ${out_t} *out, const long out_off${params}, const long n, const meta_t m)
{
    const long i = get_global_id(0);
    if (i >= n) return;
    long rest = i, q = out_off${pos_init};
    for (int d = (int)m.nd - 1; d >= 0; --d) {
        const long k = rest % m.shape[d];
        rest /= m.shape[d];
        q += k * m.st[0][d];${pos_step}
    }
${loads_s}
    ${store}(out, q, ${result});
}
