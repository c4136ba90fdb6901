// Helpers shared by ferro's CUDA kernels: NaN-propagating max, warp and block reductions.
// Included textually by the loader (ferro_cuda.kernels) ahead of each kernel source, so no
// include path is needed under NVRTC. Block reductions assume blockDim.x is a multiple of 32
// and at most 1024 (the loader launches 256 threads).

#define FERRO_WARP 32
// NVRTC compiles without the C headers that define these.
#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif
#ifndef NAN
#define NAN __int_as_float(0x7fffffff)
#endif
#define FERRO_FULL_MASK 0xffffffffu

// max(a, b) that returns NaN if either is NaN (fmax would drop it; PyTorch keeps it).
template <typename T>
__device__ __forceinline__ T ferro_max(T a, T b) {
    return (a != a || a > b) ? a : b;
}

template <typename T>
__device__ __forceinline__ T ferro_warp_sum(T v) {
    for (int offset = FERRO_WARP / 2; offset > 0; offset >>= 1)
        v += __shfl_down_sync(FERRO_FULL_MASK, v, offset);
    return v;
}

template <typename T>
__device__ __forceinline__ T ferro_warp_max(T v) {
    for (int offset = FERRO_WARP / 2; offset > 0; offset >>= 1)
        v = ferro_max(v, __shfl_down_sync(FERRO_FULL_MASK, v, offset));
    return v;
}

// Sum of v over the block; every thread gets the result. `scratch` holds 32 values.
template <typename T>
__device__ T ferro_block_sum(T v, T* scratch) {
    const int lane = threadIdx.x % FERRO_WARP, warp = threadIdx.x / FERRO_WARP;
    v = ferro_warp_sum(v);
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    const int warps = (blockDim.x + FERRO_WARP - 1) / FERRO_WARP;
    v = threadIdx.x < warps ? scratch[threadIdx.x] : T(0);
    if (warp == 0) v = ferro_warp_sum(v);
    if (threadIdx.x == 0) scratch[0] = v;
    __syncthreads();
    T result = scratch[0];
    __syncthreads();  // scratch may be reused by the caller's next reduction
    return result;
}

// Maximum of v over the block (NaN wins); every thread gets the result.
template <typename T>
__device__ T ferro_block_max(T v, T* scratch) {
    const int lane = threadIdx.x % FERRO_WARP, warp = threadIdx.x / FERRO_WARP;
    v = ferro_warp_max(v);
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    const int warps = (blockDim.x + FERRO_WARP - 1) / FERRO_WARP;
    v = threadIdx.x < warps ? scratch[threadIdx.x] : T(-INFINITY);
    if (warp == 0) v = ferro_warp_max(v);
    if (threadIdx.x == 0) scratch[0] = v;
    __syncthreads();
    T result = scratch[0];
    __syncthreads();
    return result;
}
