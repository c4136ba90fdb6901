// Running maximum / minimum with the index where it was reached (cummax, cummin), along the last
// axis of a contiguous (rows, n) array: one thread per row, a sequential scan. As PyTorch: an
// element equal to the running extreme takes its place (the index is the last equal one), and a
// NaN, once met, stays the value with its own index.
// FERRO_INSTANTIATE(T, SUFFIX) defines
//   ferro_cum_extreme_SUFFIX(const T* x, T* values, long long* indices, long long rows, long long n, int is_max)

template <typename T>
__device__ void cum_extreme(const T* x, T* values, long long* indices, long long rows, long long n, int is_max) {
    for (long long row = blockIdx.x * (long long)blockDim.x + threadIdx.x; row < rows;
         row += (long long)blockDim.x * gridDim.x) {
        const T* xr = x + row * n;
        T* vr = values + row * n;
        long long* ir = indices + row * n;
        T best = xr[0];
        long long at = 0;
        for (long long j = 0; j < n; ++j) {
            const T v = xr[j];
            if (best == best && (v != v || (is_max ? v >= best : v <= best))) {
                best = v;
                at = j;
            }
            vr[j] = best;
            ir[j] = at;
        }
    }
}

#define FERRO_INSTANTIATE(T, SUFFIX)                                                                      \
    extern "C" __global__ void ferro_cum_extreme_##SUFFIX(const T* x, T* values, long long* indices,      \
                                                          long long rows, long long n, int is_max) {      \
        cum_extreme<T>(x, values, indices, rows, n, is_max);                                              \
    }
