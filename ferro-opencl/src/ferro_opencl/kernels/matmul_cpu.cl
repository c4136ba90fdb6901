/* Register-blocked matrix product for CPU devices: C[b] = A[b] @ B[b], instantiated per dtype by _matmul.py.
 *
 * A CPU GEMM micro-kernel in OpenCL C: no local memory and no barriers (PoCL runs a work-group as a loop
 * over its work-items on one thread, so local memory is only an extra copy), the operands stay in the
 * CPU caches. matmul_pack_b first copies B into column panels of NR = NV * VW columns, Bp[b][jb][k][0..NR)
 * (zero past N), in the compute type: whatever B's strides (a transposed view) or storage (half), the
 * micro-kernel then reads NV contiguous vectors per k (a small B with contiguous rows is read in place). Each work-item computes an RM x NR block of C in
 * RM * NV vector accumulators (registers, with the loops unrolled), broadcasting one element of A per row
 * and k; A is read in place through its strides (rows past M re-read row M - 1 and are not stored), in the
 * compute type (_matmul.py converts a half A to float first: vload_half is a call in PoCL's inner loop).
 * Work-items next to each other in a group take the row blocks under one B panel, which stays in cache.
 */
#define RM ${RM}
#define NV ${NV}
#define VW ${VW}
#define NR (NV * VW)
typedef ${ACC}${VW} vec_t;
typedef ${ACC}${VW} __attribute__((aligned(sizeof(${ACC})))) uvec_t;

/* Bp[b][jb][k][c] = B[b][k][jb * NR + c]; B's batch positions come from mb (operand 0). Work-items run
 * along dimension 0 first: along j when B's rows are contiguous, along k when its columns are. */
__kernel void matmul_pack_b(__global ${ACC} *Bp, __global const ${T} *B, const long boff, const long brs,
                            const long bcs, const long K, const long N, const long NP, const int k_first,
                            __global const meta_t *mb)
{
    const long j = get_global_id(k_first ? 1 : 0), k = get_global_id(k_first ? 0 : 1);
    const long b = get_global_id(2);
    if (j >= NP || k >= K)
        return;
    const __global ${T} *src = B + boff + strided_pos(b, mb, 0);
    Bp[((b * (NP / NR) + j / NR) * K + k) * NR + j % NR] = j < N ? (${ACC})${load}(src, k * brs + j * bcs) : (${ACC})0;
}

/* Work-item (i, j, b) computes rows [i * RM, i * RM + RM) and columns [j * NR, j * NR + NR) of C[b]. Its
 * panel of B starts at Bp + boff + jb * bpanel, row k bld further on: packed panels (bld = NR, bpanel =
 * K * NR), or B itself when its rows are contiguous, N is a multiple of NR and it is small (bld = B's row
 * stride, bpanel = NR), which saves the packing launch. A's and Bp's batch positions come from mb (operands
 * 1 and 2; C is contiguous). */
__kernel void matmul_blocked(__global ${T} *C, __global const ${ACC} *A, const long aoff, const long ars,
                             const long acs, __global const ${ACC} *Bp, const long boff, const long bld,
                             const long bpanel, const long M, const long N, const long K,
                             __global const meta_t *mb)
{
    const long ib = get_global_id(0), jb = get_global_id(1), b = get_global_id(2);
    const long row0 = ib * RM, col0 = jb * NR;
    if (row0 >= M)
        return;
    A += aoff + strided_pos(b, mb, 1);
    /* a vector pointer, not vload: PoCL calls its builtins out of line (uvec_t: B itself may be unaligned) */
    const __global ${ACC} *bp = Bp + boff + strided_pos(b, mb, 2) + jb * bpanel;
    C += b * M * N;
    long arow[RM];
    #pragma unroll
    for (int i = 0; i < RM; ++i)
        arow[i] = min(row0 + i, M - 1) * ars;
    vec_t acc[RM][NV];
    #pragma unroll
    for (int i = 0; i < RM; ++i)
        #pragma unroll
        for (int v = 0; v < NV; ++v)
            acc[i][v] = (vec_t)0;
    for (long k = 0; k < K; ++k) {
        vec_t bv[NV];
        #pragma unroll
        for (int v = 0; v < NV; ++v)
            bv[v] = *(const __global uvec_t *)(bp + k * bld + v * VW);
        #pragma unroll
        for (int i = 0; i < RM; ++i) {
            const vec_t av = (vec_t)A[arow[i] + k * acs];
            #pragma unroll
            for (int v = 0; v < NV; ++v)
                acc[i][v] += av * bv[v];
        }
    }
    const bool full = col0 + NR <= N;
    #pragma unroll
    for (int i = 0; i < RM; ++i) {
        if (row0 + i >= M)
            break;
        __global ${T} *c = C + (row0 + i) * N + col0;
        #pragma unroll
        for (int v = 0; v < NV; ++v) {
            if (full) {
                ${vstore}(acc[i][v], v, c);
            } else {
                ${ACC} t[VW];
                vstore${VW}(acc[i][v], 0, t);
                for (int e = 0; e < VW && col0 + v * VW + e < N; ++e)
                    ${store}(c, v * VW + e, t[e]);
            }
        }
    }
}
