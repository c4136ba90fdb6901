// int8 x int8 matrix product accumulated in int32 (ferro.quantization's dynamic Linear): C = A @ B with A (M, K)
// and B (K, N) read through their strides, C (M, N) int32 contiguous. Tiled through shared memory: a block of
// TILE x TILE threads computes a TILE x TILE tile of C, staging TILE x TILE tiles of A and B (widened to int once
// per load) and accumulating every product exactly in int.
// FERRO_INSTANTIATE(T, SUFFIX) defines
//   ferro_int8_matmul_SUFFIX(a, ars, acs, b, brs, bcs, c, m, n, k)   (grid: ceil(N/TILE) x ceil(M/TILE))

#define FERRO_QTILE 16

template <typename T>
__device__ void int8_matmul(const T* a, long long ars, long long acs, const T* b, long long brs, long long bcs,
                            int* c, long long m, long long n, long long k) {
    __shared__ int as[FERRO_QTILE][FERRO_QTILE];
    __shared__ int bs[FERRO_QTILE][FERRO_QTILE + 1];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const long long row = (long long)blockIdx.y * FERRO_QTILE + ty, col = (long long)blockIdx.x * FERRO_QTILE + tx;
    int acc = 0;
    for (long long k0 = 0; k0 < k; k0 += FERRO_QTILE) {
        const long long ka = k0 + tx, kb = k0 + ty;
        as[ty][tx] = (row < m && ka < k) ? static_cast<int>(a[row * ars + ka * acs]) : 0;
        bs[ty][tx] = (kb < k && col < n) ? static_cast<int>(b[kb * brs + col * bcs]) : 0;
        __syncthreads();
#pragma unroll
        for (int t = 0; t < FERRO_QTILE; ++t)
            acc += as[ty][t] * bs[t][tx];
        __syncthreads();
    }
    if (row < m && col < n)
        c[row * n + col] = acc;
}

#define FERRO_INSTANTIATE(T, SUFFIX)                                                                         \
    extern "C" __global__ void ferro_int8_matmul_##SUFFIX(const T* a, long long ars, long long acs,         \
                                                          const T* b, long long brs, long long bcs, int* c,  \
                                                          long long m, long long n, long long k) {           \
        int8_matmul<T>(a, ars, acs, b, brs, bcs, c, m, n, k);                                                \
    }
