/* bfloat16, stored as the upper 16 bits of a float (ushort) and computed in float. Prepended (after
 * common.cl) only to the programs that use LD_B / ST_B, so other programs' sources are unchanged.
 * A store rounds to nearest even, once; a NaN stays a quiet NaN of its sign (as ml_dtypes and PyTorch). */
inline float bf16_load(const ushort b) { return as_float((uint)b << 16); }
inline ushort bf16_round(const float f)
{
    const uint u = as_uint(f);
    if (isnan(f))
        return (ushort)(((u >> 16) & 0x8000u) | 0x7FC0u);
    return (ushort)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}
#define LD_B(p, i) bf16_load((p)[i])
#define ST_B(p, i, v) ((p)[i] = bf16_round((float)(v)))
/* A vector of N floats stored as N bfloat16s at element (i) * N of p (matmul's vstoreN). */
#define VST_B(N, v, i, p) do { float t_[N]; vstore##N((v), 0, t_); \
    for (int e_ = 0; e_ < N; ++e_) ST_B((p), (i) * N + e_, t_[e_]); } while (0)
#define VST2_B(v, i, p) VST_B(2, v, i, p)
#define VST4_B(v, i, p) VST_B(4, v, i, p)
#define VST8_B(v, i, p) VST_B(8, v, i, p)
#define VST16_B(v, i, p) VST_B(16, v, i, p)
