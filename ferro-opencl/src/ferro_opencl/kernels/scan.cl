/* Inclusive scans along one dimension (cumsum, cumprod), instantiated per op and dtype by _creation.py.
 *
 * One work-item per line: mo lays out the other dimensions (operand 0 = out, 1 = x); a line has n
 * elements, ostep / xstep apart.
 */
__kernel void scan(__global ${T} *out, __global const ${IN} *x, const long xoff, const long n,
                   const long ostep, const long xstep, const long lines, __global const meta_t *mo)
{
    const long l = get_global_id(0);
    if (l >= lines) return;
    long po = strided_pos(l, mo, 0), px = xoff + strided_pos(l, mo, 1);
    ${ACC} acc = ${identity};
    for (long j = 0; j < n; ++j, po += ostep, px += xstep) {
        const ${ACC} v = (${ACC})${load}(x, px);
        acc = ${reduce};
        ${store}(out, po, acc);
    }
}
