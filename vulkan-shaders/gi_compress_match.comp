// Dictionary compression of visibility maps, step 1 of a batch (gpu/gi_compress.rs,
// CPU reference gi/compress.rs): one workgroup of 256 per map of the batch, one
// invocation per texel. The map is tested against the all-clip map (dead probe),
// then each invocation scans its share of the look-back window, newest first, and
// the workgroup keeps the newest block whose every texel is within the tolerance
// when read through one of the eight symmetries of the square (the first one
// that fits, see gi/compress.rs).
// Maps without a match are flagged for gi_compress_append.
#version 460
#extension GL_GOOGLE_include_directive : require
#include "include/common.glsl"
#include "include/gi.glsl"

KILN_PUSH_GI_COMPRESS;

layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer Vec2s { vec2 v[]; };

shared vec2 map_texels[GI_TEXELS];
shared float partial_sum[GI_TEXELS];
shared float partial_inner[GI_TEXELS];
shared uint all_clipped[GI_TEXELS];
shared int newest[GI_TEXELS];

void main() {
    uint slot = gl_WorkGroupID.x;
    uint t = gl_LocalInvocationID.x;
    uint probe = Uints(pc.order).v[pc.first + slot];
    vec2 m = Vec2s(pc.maps).v[probe * GI_TEXELS + t];
    map_texels[t] = m;
    partial_sum[t] = m.x;
    partial_inner[t] = gi_inner_texel(t) ? m.x : 0.0;
    all_clipped[t] = (abs(m.x - 1.0) <= pc.tolerance && abs(m.y - 1.0) <= pc.tolerance) ? 1u : 0u;
    barrier();
    for (uint s = GI_TEXELS / 2u; s > 0u; s >>= 1u) {
        if (t < s) {
            partial_sum[t] += partial_sum[t + s];
            partial_inner[t] += partial_inner[t + s];
            all_clipped[t] &= all_clipped[t + s];
        }
        barrier();
    }
    Words block_index = Words(pc.block_index);
    Words fresh = Words(pc.fresh);
    if (all_clipped[0] == 1u) {
        if (t == 0u) {
            block_index.v[probe] = DEAD_PROBE;
            fresh.v[slot] = 0u;
        }
        return;
    }
    // Mean depths that no symmetry changes (see gi/compress.rs invariant_means).
    float mean = partial_sum[0] / float(GI_TEXELS);
    float inner = partial_inner[0] / 64.0;
    uint len = Words(pc.state).v[0];
    int start = int(len > pc.window ? len - pc.window : 0u);
    Vec2s means = Vec2s(pc.means);
    Words blocks = Words(pc.blocks);
    // found = j << 3 | symmetry: the newest block wins the max below, with the first
    // symmetry it matches under (each block is tried by one invocation only).
    int found = -1;
    for (int j = int(len) - 1 - int(t); j >= start && found < 0; j -= int(GI_TEXELS)) {
        vec2 block_means = means.v[j];
        if (abs(block_means.x - mean) > pc.tolerance + GI_MEAN_SLACK
            || abs(block_means.y - inner) > pc.tolerance + GI_MEAN_SLACK) {
            continue;
        }
        for (uint s = 0u; s < 8u && found < 0; ++s) {
            bool same = true;
            for (uint k = 0u; k < GI_TEXELS && same; ++k) {
                uvec2 q = gi_symmetric_texel(s, k % 16u, k / 16u);
                vec2 d = abs(map_texels[k] - gi_unpack_texel(blocks.v[uint(j) * GI_TEXELS + q.y * 16u + q.x]));
                same = d.x <= pc.tolerance && d.y <= pc.tolerance;
            }
            if (same) {
                found = (j << 3) | int(s);
            }
        }
    }
    newest[t] = found;
    barrier();
    for (uint s = GI_TEXELS / 2u; s > 0u; s >>= 1u) {
        if (t < s) {
            newest[t] = max(newest[t], newest[t + s]);
        }
        barrier();
    }
    if (t == 0u) {
        if (newest[0] >= 0) {
            uint symmetry = uint(newest[0]) & 7u;
            block_index.v[probe] = (uint(newest[0]) >> 3u) | (symmetry << GI_BLOCK_BITS);
            fresh.v[slot] = 0u;
        } else {
            fresh.v[slot] = 1u;
        }
    }
}
