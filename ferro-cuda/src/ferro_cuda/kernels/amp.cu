// ferro.amp's check for inf/nan and unscale (torch._amp_foreach_non_finite_check_and_unscale_): one thread per
// element of one gradient, multiplied by inv_scale in place; any non-finite element sets *found_inf to 1 (every
// writer writes the same value, so no atomic is needed). float16 and bfloat16 gradients come here widened to
// float32 by the launcher (_fused.py), which rounds the result back once.
// FERRO_INSTANTIATE(T, SUFFIX) defines
//   ferro_amp_unscale_SUFFIX(g, n, found_inf, inv_scale)

template <typename T>
__device__ void amp_unscale(T* g, long long n, float* found_inf, float inv_scale) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)blockDim.x * gridDim.x) {
        const T v = g[i];
        if (!isfinite(v)) *found_inf = 1.0f;
        if (inv_scale != 1.0f) g[i] = v * static_cast<T>(inv_scale);
    }
}

#define FERRO_INSTANTIATE(T, SUFFIX)                                                                         \
    extern "C" __global__ void ferro_amp_unscale_##SUFFIX(T* g, long long n, float* found_inf,              \
                                                          float inv_scale) {                                 \
        amp_unscale<T>(g, n, found_inf, inv_scale);                                                          \
    }
