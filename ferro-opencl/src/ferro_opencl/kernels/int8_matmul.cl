/* int8 x int8 matrix product accumulated in int32 (ferro.quantization's dynamic Linear): C = A @ B, A (M, K)
 * read through its strides, B (K, N) with contiguous rows (the launcher copies it otherwise; a quantized
 * Linear keeps its weight that way), C (M, N) int32, contiguous. Every product and sum is exact in int.
 *
 * Work-item (i, j) computes rows [i * RM, i * RM + RM) and columns [j * NR, j * NR + NR) of C, NR = NV * VW,
 * in RM * NV int vectors: per k, NV vectors of B's row are loaded (as chars, widened once) and each row's
 * element of A is broadcast over them. No local memory and no barriers: on a CPU device the operands stay in
 * the caches, as in matmul_cpu.cl. Rows past M re-read row M - 1 and are not stored; a last column block
 * past N reads B element by element.
 */
#define RM ${RM}
#define NV ${NV}
#define VW ${VW}
#define NR (NV * VW)
typedef int${VW} ivec_t;
typedef char${VW} __attribute__((aligned(1))) cvec_t;

__kernel void int8_matmul(__global int *C, __global const char *A, const long aoff, const long ars,
                          const long acs, __global const char *B, const long boff, const long brs,
                          const long M, const long N, const long K)
{
    const long row0 = get_global_id(0) * RM, col0 = get_global_id(1) * NR;
    if (row0 >= M || col0 >= N)
        return;
    A += aoff;
    B += boff + col0;
    long arow[RM];
    #pragma unroll
    for (int i = 0; i < RM; ++i)
        arow[i] = min(row0 + i, M - 1) * ars;
    ivec_t acc[RM][NV];
    #pragma unroll
    for (int i = 0; i < RM; ++i)
        #pragma unroll
        for (int v = 0; v < NV; ++v)
            acc[i][v] = (ivec_t)0;
    const bool full = col0 + NR <= N;
    for (long k = 0; k < K; ++k) {
        ivec_t bv[NV];
        const __global char *brow = B + k * brs;
        if (full) {
            #pragma unroll
            for (int v = 0; v < NV; ++v)
                bv[v] = convert_int${VW}(*(const __global cvec_t *)(brow + v * VW));
        } else {
            int t[NR];
            for (int e = 0; e < NR; ++e)
                t[e] = col0 + e < N ? (int)brow[e] : 0;
            #pragma unroll
            for (int v = 0; v < NV; ++v)
                bv[v] = vload${VW}(v, t);
        }
        #pragma unroll
        for (int i = 0; i < RM; ++i) {
            const ivec_t av = (ivec_t)((int)A[arow[i] + k * acs]);
            #pragma unroll
            for (int v = 0; v < NV; ++v)
                acc[i][v] += av * bv[v];
        }
    }
    #pragma unroll
    for (int i = 0; i < RM; ++i) {
        if (row0 + i >= M)
            break;
        __global int *c = C + (row0 + i) * N + col0;
        #pragma unroll
        for (int v = 0; v < NV; ++v) {
            if (full) {
                vstore${VW}(acc[i][v], v, c);
            } else {
                int t[VW];
                vstore${VW}(acc[i][v], 0, t);
                for (int e = 0; e < VW && col0 + v * VW + e < N; ++e)
                    c[v * VW + e] = t[e];
            }
        }
    }
}
