// Row-wise softmax and log_softmax, forward and backward: one block per row of a
// contiguous (rows, cols) array. The loader prepends common.cuh and appends
// FERRO_INSTANTIATE(T, SUFFIX) once per dtype, which defines the extern "C" entry points
//   ferro_softmax_forward_SUFFIX(const T* x, T* y, long long rows, long long cols, int log)
//   ferro_softmax_backward_SUFFIX(const T* grad, const T* y, T* dx, long long rows, long long cols, int log)

template <typename T>
__device__ void softmax_forward(const T* x, T* y, long long rows, long long cols, int log_out) {
    __shared__ T scratch[FERRO_WARP];
    const long long row = blockIdx.x;
    if (row >= rows) return;
    const T* xr = x + row * cols;
    T* yr = y + row * cols;
    T m = T(-INFINITY);
    for (long long c = threadIdx.x; c < cols; c += blockDim.x) m = ferro_max(m, xr[c]);
    m = ferro_block_max(m, scratch);
    T s = T(0);
    for (long long c = threadIdx.x; c < cols; c += blockDim.x) s += exp(xr[c] - m);
    s = ferro_block_sum(s, scratch);
    if (log_out) {
        const T log_s = log(s);  // (x - m) - log(s): m + log(s) would round at the magnitude of m
        for (long long c = threadIdx.x; c < cols; c += blockDim.x) yr[c] = (xr[c] - m) - log_s;
    } else {
        const T inv = T(1) / s;
        for (long long c = threadIdx.x; c < cols; c += blockDim.x) yr[c] = exp(xr[c] - m) * inv;
    }
}

// softmax:     dx = y * (grad - sum(grad * y))
// log_softmax: dx = grad - exp(y) * sum(grad)
template <typename T>
__device__ void softmax_backward(const T* grad, const T* y, T* dx, long long rows, long long cols, int log_out) {
    __shared__ T scratch[FERRO_WARP];
    const long long row = blockIdx.x;
    if (row >= rows) return;
    const T* gr = grad + row * cols;
    const T* yr = y + row * cols;
    T* dr = dx + row * cols;
    T s = T(0);
    for (long long c = threadIdx.x; c < cols; c += blockDim.x) s += log_out ? gr[c] : gr[c] * yr[c];
    s = ferro_block_sum(s, scratch);
    for (long long c = threadIdx.x; c < cols; c += blockDim.x)
        dr[c] = log_out ? gr[c] - exp(yr[c]) * s : yr[c] * (gr[c] - s);
}

#define FERRO_INSTANTIATE(T, SUFFIX)                                                                  \
    extern "C" __global__ void ferro_softmax_forward_##SUFFIX(const T* x, T* y, long long rows,       \
                                                               long long cols, int log_out) {         \
        softmax_forward<T>(x, y, rows, cols, log_out);                                                \
    }                                                                                                 \
    extern "C" __global__ void ferro_softmax_backward_##SUFFIX(const T* grad, const T* y, T* dx,      \
                                                                long long rows, long long cols,       \
                                                                int log_out) {                        \
        softmax_backward<T>(grad, y, dx, rows, cols, log_out);                                        \
    }
