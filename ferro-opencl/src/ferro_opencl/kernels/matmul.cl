/* Tiled matrix product with batching: C[b] = A[b] @ B[b], instantiated per dtype by _matmul.py.
 *
 * A work-group computes a TS x TS tile of C; each work-item WPT rows of one column of it. The tiles of
 * A and B pass through local memory, read through any row / column strides (a transposed view needs
 * no copy) and, per batch index, the batch strides in mb (operand 1 = A, 2 = B; C is contiguous).
 */
#define TS ${TS}
#define WPT ${WPT}
#define RTS (TS / WPT)

__kernel __attribute__((reqd_work_group_size(RTS, TS, 1)))
void matmul(__global ${T} *C, __global const ${T} *A, const long aoff, const long ars, const long acs,
            __global const ${T} *B, const long boff, const long brs, const long bcs,
            const long M, const long N, const long K, const meta_t mb)
{
    const int ty = get_local_id(0), tx = get_local_id(1);
    const long row0 = (long)get_group_id(0) * TS, col0 = (long)get_group_id(1) * TS;
    const long b = get_global_id(2);
    A += aoff + strided_pos(b, &mb, 1);
    B += boff + strided_pos(b, &mb, 2);
    C += b * M * N;
    __local ${ACC} As[TS][TS + 1];
    __local ${ACC} Bs[TS][TS];
    ${ACC} acc[WPT];
    for (int w = 0; w < WPT; ++w) acc[w] = 0;
    for (long t = 0; t < K; t += TS) {
        for (int w = 0; w < WPT; ++w) {
            const int r = ty + w * RTS;
            const long ar = row0 + r, ak = t + tx, bk = t + r, bc = col0 + tx;
            As[r][tx] = (ar < M && ak < K) ? (${ACC})${load}(A, ar * ars + ak * acs) : (${ACC})0;
            Bs[r][tx] = (bk < K && bc < N) ? (${ACC})${load}(B, bk * brs + bc * bcs) : (${ACC})0;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int k = 0; k < TS; ++k) {
            const ${ACC} bv = Bs[k][tx];
            for (int w = 0; w < WPT; ++w) acc[w] += As[ty + w * RTS][k] * bv;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    const long c = col0 + tx;
    if (c < N) {
        for (int w = 0; w < WPT; ++w) {
            const long r = row0 + ty + w * RTS;
            if (r < M) ${store}(C, r * N + c, acc[w]);
        }
    }
}
