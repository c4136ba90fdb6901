// Row scatter-add with atomics: out[index[i], j] += src[i, j] for a contiguous (rows, cols)
// `out`, int64 `index` of length n and contiguous (n, cols) `src`; repeated indices add up
// (the gradient of embedding and index_select). One thread per element of src, grid-stride.
// Negative indices count from the end, as in Python. 64-bit integers add through
// unsigned long long (two's complement addition is the same).
// FERRO_INSTANTIATE(T, SUFFIX) defines
//   ferro_scatter_add_rows_SUFFIX(T* out, const long long* index, const T* src, long long n,
//                                 long long rows, long long cols)

template <typename T>
__device__ __forceinline__ void ferro_atomic_add(T* address, T value) {
    atomicAdd(address, value);
}

template <>
__device__ __forceinline__ void ferro_atomic_add<long long>(long long* address, long long value) {
    atomicAdd(reinterpret_cast<unsigned long long*>(address), static_cast<unsigned long long>(value));
}

template <typename T>
__device__ void scatter_add_rows(T* out, const long long* index, const T* src, long long n, long long rows,
                                 long long cols) {
    const long long total = n * cols;
    for (long long k = blockIdx.x * (long long)blockDim.x + threadIdx.x; k < total;
         k += (long long)blockDim.x * gridDim.x) {
        const long long i = k / cols, j = k - i * cols;
        long long r = index[i];
        if (r < 0) r += rows;
        if (r >= 0 && r < rows) ferro_atomic_add(out + r * cols + j, src[k]);
    }
}

#define FERRO_INSTANTIATE(T, SUFFIX)                                                                      \
    extern "C" __global__ void ferro_scatter_add_rows_##SUFFIX(T* out, const long long* index, const T* src, \
                                                               long long n, long long rows, long long cols) { \
        scatter_add_rows<T>(out, index, src, n, rows, cols);                                              \
    }
