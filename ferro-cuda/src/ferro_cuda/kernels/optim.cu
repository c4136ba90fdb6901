// Fused optimizer steps: one thread per element, every buffer updated in place in one pass.
// They follow ferro.optim's unfused updates operation for operation (ferro/optim/adam.py, sgd.py),
// so both paths give the same values. Scalars come in the parameter's dtype T.
// FERRO_INSTANTIATE(T, SUFFIX) defines
//   ferro_adam_step_SUFFIX(p, g, m, v, vmax, n, lr, beta1, beta2, eps, wd, step_size,
//                          bias_correction2_sqrt, decoupled, amsgrad, maximize)
//   ferro_sgd_step_SUFFIX(p, g, buf, n, lr, momentum, dampening, wd, has_buf, nesterov, maximize, first)

template <typename T>
__device__ void adam_step(T* p, const T* g_in, T* m, T* v, T* vmax, long long n, T lr, T beta1, T beta2, T eps,
                          T wd, T step_size, T bias_correction2_sqrt, int decoupled, int amsgrad, int maximize) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)blockDim.x * gridDim.x) {
        T g = maximize ? -g_in[i] : g_in[i];
        T w = p[i];
        if (wd != T(0)) {
            if (decoupled) w *= T(1) - lr * wd;
            else g = g + w * wd;
        }
        const T mi = m[i] + (T(1) - beta1) * (g - m[i]);  // lerp(m, g, 1 - beta1)
        T vi = v[i] * beta2 + g * g * (T(1) - beta2);
        m[i] = mi;
        v[i] = vi;
        if (amsgrad) {
            vi = ferro_max(vmax[i], vi);
            vmax[i] = vi;
        }
        const T denom = sqrt(vi) / bias_correction2_sqrt + eps;
        p[i] = w + mi / denom * -step_size;
    }
}

template <typename T>
__device__ void sgd_step(T* p, const T* g_in, T* buf, long long n, T lr, T momentum, T dampening, T wd,
                         int has_buf, int nesterov, int maximize, int first) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)blockDim.x * gridDim.x) {
        T g = maximize ? -g_in[i] : g_in[i];
        if (wd != T(0)) g = g + p[i] * wd;
        if (has_buf) {
            T b = first ? g : buf[i] * momentum + (dampening != T(0) ? g * (T(1) - dampening) : g);
            buf[i] = b;
            g = nesterov ? g + b * momentum : b;
        }
        p[i] = p[i] + g * -lr;
    }
}

#define FERRO_INSTANTIATE(T, SUFFIX)                                                                         \
    extern "C" __global__ void ferro_adam_step_##SUFFIX(                                                     \
        T* p, const T* g, T* m, T* v, T* vmax, long long n, T lr, T beta1, T beta2, T eps, T wd,             \
        T step_size, T bias_correction2_sqrt, int decoupled, int amsgrad, int maximize) {                    \
        adam_step<T>(p, g, m, v, vmax, n, lr, beta1, beta2, eps, wd, step_size, bias_correction2_sqrt,       \
                     decoupled, amsgrad, maximize);                                                          \
    }                                                                                                        \
    extern "C" __global__ void ferro_sgd_step_##SUFFIX(                                                      \
        T* p, const T* g, T* buf, long long n, T lr, T momentum, T dampening, T wd, int has_buf,             \
        int nesterov, int maximize, int first) {                                                             \
        sgd_step<T>(p, g, buf, n, lr, momentum, dampening, wd, has_buf, nesterov, maximize, first);          \
    }
