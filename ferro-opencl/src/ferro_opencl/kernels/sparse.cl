/* A CSR matrix times a dense matrix (spmm_csr) or vector (spmv_csr: the same kernel with k = 1).
 * One work-item per output element (row r, column j): it walks row r's stored entries and gathers the dense
 * operand's rows at their columns. Templated on the storage type ${T}, the compute type ${ACC} and the
 * load / store macros of 16-bit floats; indices are long (the backend casts int32 indices first). */

__kernel void spmm_csr(__global const long *crow, const long crow_off, __global const long *col, const long col_off,
                       __global const ${T} *val, const long val_off, __global const ${T} *x, const long x_off,
                       __global ${T} *y, const long k)
{
    const long j = get_global_id(0), r = get_global_id(1);  /* j fastest: neighbours read neighbouring x */
    const long start = crow[crow_off + r], end = crow[crow_off + r + 1];
    ${ACC} acc = 0;
    for (long e = start; e < end; ++e)
        acc += (${ACC})${load}(val, val_off + e) * (${ACC})${load}(x, x_off + col[col_off + e] * k + j);
    ${store}(y, r * k + j, acc);
}
