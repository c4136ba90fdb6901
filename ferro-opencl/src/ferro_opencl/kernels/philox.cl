/* Counter-based random numbers on the device: Philox4x32-10 (Salmon et al., Random123), instantiated per
 * kind and dtype by _random.py. Block b of a draw is the counter (offset + b) under the key (the seed);
 * each work-item turns one block (four 32-bit words) into PER outputs, so any work-item order gives the
 * same numbers and the generator's state is just (seed, offset).
 */
#define PER ${PER}

inline uint4 philox(uint4 c, uint2 k)
{
    for (int r = 0; r < 10; ++r) {
        if (r) { k.x += 0x9E3779B9u; k.y += 0xBB67AE85u; }
        const uint lo0 = 0xD2511F53u * c.x, hi0 = mul_hi(0xD2511F53u, c.x);
        const uint lo1 = 0xCD9E8D57u * c.z, hi1 = mul_hi(0xCD9E8D57u, c.z);
        c = (uint4)(hi1 ^ c.y ^ k.x, lo1, hi0 ^ c.w ^ k.y, lo0);
    }
    return c;
}

__kernel void draw(__global ${T} *out, const long n, const ulong seed, const ulong offset, const long lo,
                   const ulong span)
{
    const long b = get_global_id(0);
    if (b * PER >= n) return;
    const ulong ctr = offset + (ulong)b;
    const uint4 w = philox((uint4)((uint)ctr, (uint)(ctr >> 32), 0u, 0u), (uint2)((uint)seed, (uint)(seed >> 32)));
    ${T} v[PER];
${body}
    for (int j = 0; j < PER && b * PER + j < n; ++j) out[b * PER + j] = v[j];
}
