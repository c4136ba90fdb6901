// Layer normalization over the last `cols` elements of a contiguous (rows, cols) array:
// one block per row. The forward pass also writes each row's mean and 1/sqrt(var + eps)
// for the backward pass; weight and bias are optional (has_weight / has_bias = 0 ignore
// the pointers). The backward pass gives dx; the loader sums dweight and dbias over rows.
// FERRO_INSTANTIATE(T, SUFFIX) defines
//   ferro_layer_norm_forward_SUFFIX(x, weight, bias, y, mean, rstd, rows, cols, eps, has_weight, has_bias)
//   ferro_layer_norm_backward_SUFFIX(grad, x, weight, mean, rstd, dx, rows, cols, has_weight)

template <typename T>
__device__ void layer_norm_forward(const T* x, const T* weight, const T* bias, T* y, T* mean, T* rstd,
                                   long long rows, long long cols, T eps, int has_weight, int has_bias) {
    __shared__ T scratch[FERRO_WARP];
    const long long row = blockIdx.x;
    if (row >= rows) return;
    const T* xr = x + row * cols;
    T* yr = y + row * cols;
    T s = T(0);
    for (long long c = threadIdx.x; c < cols; c += blockDim.x) s += xr[c];
    const T mu = ferro_block_sum(s, scratch) / T(cols);
    T q = T(0);  // two passes: the centred sum of squares does not cancel catastrophically
    for (long long c = threadIdx.x; c < cols; c += blockDim.x) {
        const T d = xr[c] - mu;
        q += d * d;
    }
    const T r = T(1) / sqrt(ferro_block_sum(q, scratch) / T(cols) + eps);
    for (long long c = threadIdx.x; c < cols; c += blockDim.x) {
        T v = (xr[c] - mu) * r;
        if (has_weight) v *= weight[c];
        if (has_bias) v += bias[c];
        yr[c] = v;
    }
    if (threadIdx.x == 0) {
        mean[row] = mu;
        rstd[row] = r;
    }
}

// With xhat = (x - mean) * rstd and g = grad * weight:
//   dx = rstd * (g - mean(g) - xhat * mean(g * xhat))
template <typename T>
__device__ void layer_norm_backward(const T* grad, const T* x, const T* weight, const T* mean, const T* rstd,
                                    T* dx, long long rows, long long cols, int has_weight) {
    __shared__ T scratch[FERRO_WARP];
    const long long row = blockIdx.x;
    if (row >= rows) return;
    const T* gr = grad + row * cols;
    const T* xr = x + row * cols;
    T* dr = dx + row * cols;
    const T mu = mean[row], r = rstd[row];
    T sg = T(0), sgx = T(0);
    for (long long c = threadIdx.x; c < cols; c += blockDim.x) {
        const T g = has_weight ? gr[c] * weight[c] : gr[c];
        sg += g;
        sgx += g * (xr[c] - mu) * r;
    }
    const T mg = ferro_block_sum(sg, scratch) / T(cols);
    const T mgx = ferro_block_sum(sgx, scratch) / T(cols);
    for (long long c = threadIdx.x; c < cols; c += blockDim.x) {
        const T g = has_weight ? gr[c] * weight[c] : gr[c];
        dr[c] = r * (g - mg - (xr[c] - mu) * r * mgx);
    }
}

#define FERRO_INSTANTIATE(T, SUFFIX)                                                                      \
    extern "C" __global__ void ferro_layer_norm_forward_##SUFFIX(                                         \
        const T* x, const T* weight, const T* bias, T* y, T* mean, T* rstd, long long rows,               \
        long long cols, T eps, int has_weight, int has_bias) {                                            \
        layer_norm_forward<T>(x, weight, bias, y, mean, rstd, rows, cols, eps, has_weight, has_bias);     \
    }                                                                                                     \
    extern "C" __global__ void ferro_layer_norm_backward_##SUFFIX(                                        \
        const T* grad, const T* x, const T* weight, const T* mean, const T* rstd, T* dx, long long rows,  \
        long long cols, int has_weight) {                                                                 \
        layer_norm_backward<T>(grad, x, weight, mean, rstd, dx, rows, cols, has_weight);                  \
    }
