/* Tiled matrix product with batching: C[b] = A[b] @ B[b], instantiated per dtype by _matmul.py.
 *
 * A work-group computes a TS x TS tile of C; each work-item an RM x RN block of it (rows RY apart, columns
 * RX apart), accumulated in registers. The TS x TS tiles of A and B pass through local memory, read
 * through any row / column strides (a transposed view needs no copy) and, per batch index, the batch
 * strides in mb (operand 1 = A, 2 = B; C is contiguous).
 */
#define TS ${TS}
#define RM ${RM}
#define RN ${RN}
#define RY (TS / RM)
#define RX (TS / RN)
#define THREADS (RY * RX)

__kernel __attribute__((reqd_work_group_size(RY, RX, 1)))
void matmul(__global ${T} *C, __global const ${T} *A, const long aoff, const long ars, const long acs,
            __global const ${T} *B, const long boff, const long brs, const long bcs,
            const long M, const long N, const long K, __global const meta_t *mb)
{
    const int ty = get_local_id(0), tx = get_local_id(1);
    const int id = ty * RX + tx;
    const long row0 = (long)get_group_id(0) * TS, col0 = (long)get_group_id(1) * TS;
    const long b = get_global_id(2);
    A += aoff + strided_pos(b, mb, 1);
    B += boff + strided_pos(b, mb, 2);
    C += b * M * N;
    __local ${ACC} As[TS][TS + 1];
    __local ${ACC} Bs[TS][TS + 1];
    ${ACC} acc[RM][RN];
    for (int i = 0; i < RM; ++i)
        for (int j = 0; j < RN; ++j) acc[i][j] = 0;
    for (long t = 0; t < K; t += TS) {
        for (int e = id; e < TS * TS; e += THREADS) {
            const int r = e / TS, c = e % TS;
            const long ar = row0 + r, ak = t + c, bk = t + r, bc = col0 + c;
            As[r][c] = (ar < M && ak < K) ? (${ACC})${load}(A, ar * ars + ak * acs) : (${ACC})0;
            Bs[r][c] = (bk < K && bc < N) ? (${ACC})${load}(B, bk * brs + bc * bcs) : (${ACC})0;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int k = 0; k < TS; ++k) {
            ${ACC} av[RM], bv[RN];
            for (int i = 0; i < RM; ++i) av[i] = As[ty + i * RY][k];
            for (int j = 0; j < RN; ++j) bv[j] = Bs[k][tx + j * RX];
            for (int i = 0; i < RM; ++i)
                for (int j = 0; j < RN; ++j) acc[i][j] += av[i] * bv[j];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    for (int i = 0; i < RM; ++i) {
        const long r = row0 + ty + i * RY;
        if (r >= M) break;
        for (int j = 0; j < RN; ++j) {
            const long c = col0 + tx + j * RX;
            if (c < N) ${store}(C, r * N + c, acc[i][j]);
        }
    }
}
