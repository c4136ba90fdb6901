// Cross entropy of logits (rows, classes) against int64 class indices, one block per row.
// Forward: loss[row] = w[t] * ((max - x[row, t]) + log(sum(exp(x[row] - max)))) and the row's
// (max, log-sum) pair in lse[2 row], lse[2 row + 1] (kept for backward: their sum, the logsumexp, would
// round at the magnitude of the logits); rows whose target equals ignore_index get loss 0 and weight 0. A target out of
// [0, classes) gives a NaN loss (a kernel cannot raise). The reduction (mean over the weights,
// sum) is left to the caller. Backward: dx[row, c] = g[row] * w[t] * (softmax(x[row])[c] - [c == t]).
// FERRO_INSTANTIATE(T, SUFFIX) defines
//   ferro_cross_entropy_forward_SUFFIX(x, target, weight, loss, lse, row_weight, rows, classes, ignore_index, has_weight)
//   ferro_cross_entropy_backward_SUFFIX(grad, x, target, weight, lse, dx, rows, classes, ignore_index, has_weight)

template <typename T>
__device__ void cross_entropy_forward(const T* x, const long long* target, const T* weight, T* loss, T* lse,
                                      T* row_weight, long long rows, long long classes, long long ignore_index,
                                      int has_weight) {
    __shared__ T scratch[FERRO_WARP];
    const long long row = blockIdx.x;
    if (row >= rows) return;
    const T* xr = x + row * classes;
    T m = T(-INFINITY);
    for (long long c = threadIdx.x; c < classes; c += blockDim.x) m = ferro_max(m, xr[c]);
    m = ferro_block_max(m, scratch);
    T s = T(0);
    for (long long c = threadIdx.x; c < classes; c += blockDim.x) s += exp(xr[c] - m);
    s = ferro_block_sum(s, scratch);
    if (threadIdx.x == 0) {
        const T l = log(s);
        const long long t = target[row];
        lse[2 * row] = m;
        lse[2 * row + 1] = l;
        if (t == ignore_index) {
            loss[row] = T(0);
            row_weight[row] = T(0);
        } else if (t < 0 || t >= classes) {
            loss[row] = T(NAN);
            row_weight[row] = T(NAN);
        } else {
            const T w = has_weight ? weight[t] : T(1);
            loss[row] = w * ((m - xr[t]) + l);
            row_weight[row] = w;
        }
    }
}

template <typename T>
__device__ void cross_entropy_backward(const T* grad, const T* x, const long long* target, const T* weight,
                                       const T* lse, T* dx, long long rows, long long classes,
                                       long long ignore_index, int has_weight) {
    const long long row = blockIdx.x;
    if (row >= rows) return;
    const T* xr = x + row * classes;
    T* dr = dx + row * classes;
    const long long t = target[row];
    const bool ignored = t == ignore_index;
    const bool valid = !ignored && t >= 0 && t < classes;
    const T g = ignored ? T(0) : (valid ? grad[row] * (has_weight ? weight[t] : T(1)) : T(NAN));
    const T m = lse[2 * row], l = lse[2 * row + 1];
    for (long long c = threadIdx.x; c < classes; c += blockDim.x)
        dr[c] = g * (exp((xr[c] - m) - l) - (c == t ? T(1) : T(0)));
}

#define FERRO_INSTANTIATE(T, SUFFIX)                                                                         \
    extern "C" __global__ void ferro_cross_entropy_forward_##SUFFIX(                                         \
        const T* x, const long long* target, const T* weight, T* loss, T* lse, T* row_weight, long long rows, \
        long long classes, long long ignore_index, int has_weight) {                                         \
        cross_entropy_forward<T>(x, target, weight, loss, lse, row_weight, rows, classes, ignore_index,       \
                                 has_weight);                                                                \
    }                                                                                                        \
    extern "C" __global__ void ferro_cross_entropy_backward_##SUFFIX(                                        \
        const T* grad, const T* x, const long long* target, const T* weight, const T* lse, T* dx,            \
        long long rows, long long classes, long long ignore_index, int has_weight) {                         \
        cross_entropy_backward<T>(grad, x, target, weight, lse, dx, rows, classes, ignore_index, has_weight); \
    }
