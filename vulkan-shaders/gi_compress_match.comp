// Dictionary compression of visibility maps, step 1 of a batch (gpu/gi_compress.rs,
// CPU reference gi/compress.rs): one workgroup of 64 per quadrant of each map of
// the batch (workgroup 4 slot + q), one invocation per texel of the quadrant's
// frame. The quadrant is tested against the clip value (dead quadrant), then each
// invocation scans its share of the look-back window, newest first, and the
// workgroup keeps the newest block whose every texel is within the tolerance, as
// is or else transposed (see gi/compress.rs). Quadrants without a match are
// flagged for gi_compress_append.
#version 460
#extension GL_GOOGLE_include_directive : require
#include "include/common.glsl"
#include "include/kiln_ddgi.glsl"

KILN_PUSH_GI_COMPRESS;

layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer Vec2s { vec2 v[]; };

shared vec2 quadrant[KILN_GI_QUADRANT_TEXELS];
shared float partial_sum[KILN_GI_QUADRANT_TEXELS];
shared float partial_pole[KILN_GI_QUADRANT_TEXELS];
shared uint all_clipped[KILN_GI_QUADRANT_TEXELS];
shared int newest[KILN_GI_QUADRANT_TEXELS];

void main() {
    uint slot = gl_WorkGroupID.x / KILN_GI_QUADRANTS;
    uint q = gl_WorkGroupID.x % KILN_GI_QUADRANTS;
    uint i = gl_LocalInvocationID.x;
    uint probe = KilnUints(pc.order).v[pc.first + slot];
    vec2 m = Vec2s(pc.maps).v[probe * KILN_GI_TEXELS + kiln_gi_quadrant_map(q, i)];
    quadrant[i] = m;
    partial_sum[i] = m.x;
    partial_pole[i] = kiln_gi_pole_place(i) ? m.x : 0.0;
    all_clipped[i] = (abs(m.x - 1.0) <= pc.tolerance && abs(m.y - 1.0) <= pc.tolerance) ? 1u : 0u;
    barrier();
    for (uint s = KILN_GI_QUADRANT_TEXELS / 2u; s > 0u; s >>= 1u) {
        if (i < s) {
            partial_sum[i] += partial_sum[i + s];
            partial_pole[i] += partial_pole[i + s];
            all_clipped[i] &= all_clipped[i + s];
        }
        barrier();
    }
    Words block_index = Words(pc.block_index);
    Words fresh = Words(pc.fresh);
    uint entry = probe * KILN_GI_QUADRANTS + q;
    uint flag = slot * KILN_GI_QUADRANTS + q;
    if (all_clipped[0] == 1u) {
        if (i == 0u) {
            block_index.v[entry] = KILN_GI_DEAD_QUADRANT;
            fresh.v[flag] = 0u;
        }
        return;
    }
    // Mean depths a transpose keeps (see gi/compress.rs invariant_means).
    float mean = partial_sum[0] / float(KILN_GI_QUADRANT_TEXELS);
    float pole = partial_pole[0] / 16.0;
    uint len = Words(pc.state).v[0];
    int start = int(len > pc.window ? len - pc.window : 0u);
    Vec2s means = Vec2s(pc.means);
    // found = j << 1 | transposed: the newest block wins the max below, as is before
    // transposed (each block is tried by one invocation only).
    int found = -1;
    for (int j = int(len) - 1 - int(i); j >= start && found < 0; j -= int(KILN_GI_QUADRANT_TEXELS)) {
        vec2 block_means = means.v[j];
        if (abs(block_means.x - mean) > pc.tolerance + KILN_GI_MEAN_SLACK
            || abs(block_means.y - pole) > pc.tolerance + KILN_GI_MEAN_SLACK) {
            continue;
        }
        for (uint transposed = 0u; transposed < 2u && found < 0; ++transposed) {
            bool same = true;
            for (uint k = 0u; k < KILN_GI_QUADRANT_TEXELS && same; ++k) {
                uint texel = kiln_gi_block_texel(k, transposed == 1u);
                vec2 b = kiln_gi_block_value(pc.blocks, uint(j), texel);
                vec2 d = abs(quadrant[k] - b);
                same = d.x <= pc.tolerance && d.y <= pc.tolerance;
            }
            if (same) {
                found = (j << 1) | int(transposed);
            }
        }
    }
    newest[i] = found;
    barrier();
    for (uint s = KILN_GI_QUADRANT_TEXELS / 2u; s > 0u; s >>= 1u) {
        if (i < s) {
            newest[i] = max(newest[i], newest[i + s]);
        }
        barrier();
    }
    if (i == 0u) {
        if (newest[0] >= 0) {
            uint transposed = (uint(newest[0]) & 1u) != 0u ? KILN_GI_TRANSPOSED : 0u;
            block_index.v[entry] = (uint(newest[0]) >> 1u) | transposed;
            fresh.v[flag] = 0u;
        } else {
            fresh.v[flag] = 1u;
        }
    }
}
