/* A fused group's reduction over its trailing dimensions (ferro.backends.fusion.Reduce): instantiated by
 * _fusion.py per group and reduction. The group's shape is R rows of C elements (the reduced dimensions last);
 * each row is cut in G parts, one work-group per part: every work-item runs the group's steps on elements
 * lo + lid, lo + lid + L, ... of its part (inputs through strides, as fusion.cl's _s kernel) and combines the
 * reduced value into its accumulator, then the work-group combines its accumulators in local memory and writes
 * one partial (partial[row * G + part]); the partials' own reduction is the backend's sum / amax kernel.
 * Two instances: _r finds each element's inputs through their strides in m, _rc (inputs contiguous with the
 * group's shape) at element row * C + j.
 */

__kernel void ${name}(__global ${acc_t} *partial${params}${scalars}, const long C, const long G,
                        __global const long *m, __local ${acc_t} *scratch${err})
{
    const long grp = get_group_id(0);
    const long row = grp / G, part = grp % G;
    const int lid = (int)get_local_id(0), L = (int)get_local_size(0);
    const long per = (C + G - 1) / G;
    const long lo = part * per, hi = min(C, lo + per);
    ${acc_t} acc = ${init};
    for (long j = lo + lid; j < hi; j += L) {
${positions}
${loads}
${body}
        { const ${acc_t} a = acc; const ${acc_t} b = (${acc_t})v${value}; acc = ${combine}; }
    }
    scratch[lid] = acc;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = L / 2; s > 0; s >>= 1) {
        if (lid < s) { const ${acc_t} a = scratch[lid], b = scratch[lid + s]; scratch[lid] = ${combine}; }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0) partial[grp] = scratch[0];
}
