/* Shared by every ferro program: the strided layout argument, loads and stores, helper templates.
 *
 * meta_t carries a strided launch's shape and, per operand (0 = the output), its strides in elements.
 * It lives in a small device buffer (Runtime.meta caches one per layout): pyopencl passes a struct by
 * value ten times slower than a buffer. Dimensions past nd are unused.
 */
typedef struct { long nd; long shape[8]; long st[4][8]; } meta_t;

/* float16 is stored as half and computed in float: vload_half / vstore_half need no cl_khr_fp16. */
#define LD(p, i) ((p)[i])
#define ST(p, i, v) ((p)[i] = (v))
#define LD_H(p, i) vload_half((i), (p))
#define ST_H(p, i, v) vstore_half_rte((v), (i), (p))

/* Helper functions, instantiated per compute type T by the generator when an op's expression needs them. */
#define DEF_FREM(T) inline T frem_##T(T a, T b) { \
    T r = fmod(a, b); return (r != (T)0 && ((r < (T)0) != (b < (T)0))) ? r + b : r; }
#define DEF_FFLOORDIV(T) inline T ffloordiv_##T(T a, T b) { \
    if (b == (T)0) return a / b; \
    T m = fmod(a, b); T d = (a - m) / b; \
    if (m != (T)0 && ((b < (T)0) != (m < (T)0))) d -= (T)1; \
    if (d == (T)0) return copysign((T)0, a / b); \
    T f = floor(d); return (d - f > (T)0.5) ? f + (T)1 : f; }
/* Integer division by zero cannot raise in a kernel: it sets *err to 2 (ZeroDivisionError at the next
 * synchronization) and gives 0. */
#define DEF_IREM(T) inline T irem_##T(T a, T b, volatile __global int *err) { \
    if (b == 0) { *err = 2; return 0; } T r = a % b; return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r; }
#define DEF_IFLOORDIV(T) inline T ifloordiv_##T(T a, T b, volatile __global int *err) { \
    if (b == 0) { *err = 2; return 0; } T q = a / b; return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q; }
#define DEF_IPOW(T) inline T ipow_##T(T a, T b) { \
    if (b < 0) return (a == 1) ? 1 : (a == -1 ? ((b & 1) ? a : 1) : 0); \
    T r = 1; while (b) { if (b & 1) r *= a; a *= a; b >>= 1; } return r; }
#define DEF_LOGADDEXP(T) inline T logaddexp_##T(T a, T b) { \
    if (a == b) return a + log((T)2); T m = fmax(a, b); \
    return isnan(m) ? a + b : m + log1p(exp(-fabs(a - b))); }
#define DEF_SIGMOID(T) inline T sigmoid_##T(T a) { \
    if (a >= (T)0) return (T)1 / ((T)1 + exp(-a)); T e = exp(a); return e / ((T)1 + e); }

/* The position, in elements, of flat index i of m->shape for operand k (strides m->st[k]). */
inline long strided_pos(long i, __global const meta_t *m, const int k)
{
    long p = 0;
    for (int d = (int)m->nd - 1; d >= 0; --d) {
        const long c = i % m->shape[d];
        i /= m->shape[d];
        p += c * m->st[k][d];
    }
    return p;
}

/* digamma: reflection below 0, recurrence up to 6, then the asymptotic series (SciPy's edge values). */
#define DEF_DIGAMMA(T) inline T digamma_##T(T x) { \
    if (isnan(x) || x == -INFINITY) return NAN; \
    if (x == (T)0) return signbit(x) ? INFINITY : -INFINITY; \
    T r = 0; \
    if (x < (T)0) { \
        if (x == floor(x)) return NAN; \
        const T pi = (T)3.14159265358979323846; r = -pi / tan(pi * x); x = (T)1 - x; } \
    while (x < (T)6) { r -= (T)1 / x; x += (T)1; } \
    const T f = (T)1 / (x * x); \
    return r + log(x) - (T)0.5 / x - f * ((T)(1.0 / 12) - f * ((T)(1.0 / 120) - f * ((T)(1.0 / 252) - \
        f * ((T)(1.0 / 240) - f * (T)(1.0 / 132))))); }

/* erfinv: Giles' approximation refined by two Newton steps on erf (full precision in float and double). */
#define DEF_ERFINV(T) inline T erfinv_##T(T y) { \
    if (y <= (T)-1) return y == (T)-1 ? -INFINITY : NAN; \
    if (y >= (T)1) return y == (T)1 ? INFINITY : NAN; \
    T w = -log(((T)1 - y) * ((T)1 + y)), p; \
    if (w < (T)5) { w -= (T)2.5; p = (T)2.81022636e-08; p = (T)3.43273939e-07 + p * w; \
        p = (T)-3.5233877e-06 + p * w; p = (T)-4.39150654e-06 + p * w; p = (T)0.00021858087 + p * w; \
        p = (T)-0.00125372503 + p * w; p = (T)-0.00417768164 + p * w; p = (T)0.246640727 + p * w; \
        p = (T)1.50140941 + p * w; } \
    else { w = sqrt(w) - (T)3; p = (T)-0.000200214257; p = (T)0.000100950558 + p * w; \
        p = (T)0.00134934322 + p * w; p = (T)-0.00367342844 + p * w; p = (T)0.00573950773 + p * w; \
        p = (T)-0.0076224613 + p * w; p = (T)0.00943887047 + p * w; p = (T)1.00167406 + p * w; \
        p = (T)2.83297682 + p * w; } \
    T x = p * y; \
    for (int i = 0; i < 2; ++i) x -= (erf(x) - y) / ((T)1.1283791670955126 * exp(-x * x)); \
    return x; }
