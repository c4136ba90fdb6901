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

/* The helper functions of elementwise expressions are core's, written once for OpenCL and CUDA
 * (ferro/_core/c_helpers.py): the generator puts those a kernel calls in front of it. */

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
