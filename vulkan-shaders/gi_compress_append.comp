// Dictionary compression of visibility maps, step 2 of a batch (gpu/gi_compress.rs):
// one workgroup of 256. The batch's unmatched maps become new blocks in batch order
// (an exclusive scan of the flags gives each its index), packed to half floats with
// their mean depths (whole map, central 8 x 8) for the next batches' prefilter; then
// the block count grows.
#version 460
#extension GL_GOOGLE_include_directive : require
#include "include/common.glsl"
#include "include/gi.glsl"

KILN_PUSH_GI_COMPRESS;

layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer Vec2s { vec2 v[]; };
layout(buffer_reference, std430, buffer_reference_align = 8) writeonly buffer Vec2sW { vec2 v[]; };

shared uint scan[GI_TEXELS];

void main() {
    uint t = gl_LocalInvocationID.x;
    uint flag = t < pc.count ? Uints(pc.fresh).v[t] : 0u;
    scan[t] = flag;
    barrier();
    // Inclusive Hillis-Steele scan.
    for (uint s = 1u; s < GI_TEXELS; s <<= 1u) {
        uint add = t >= s ? scan[t - s] : 0u;
        barrier();
        scan[t] += add;
        barrier();
    }
    Words state = Words(pc.state);
    uint len = state.v[0];
    if (flag == 1u) {
        uint index = len + scan[t] - 1u;
        uint probe = Uints(pc.order).v[pc.first + t];
        Words(pc.block_index).v[probe] = index;
        Vec2s maps = Vec2s(pc.maps);
        Words blocks = Words(pc.blocks);
        float sum = 0.0;
        float inner = 0.0;
        for (uint k = 0u; k < GI_TEXELS; ++k) {
            uint packed = gi_pack_texel(maps.v[probe * GI_TEXELS + k]);
            blocks.v[index * GI_TEXELS + k] = packed;
            float depth = gi_unpack_texel(packed).x;
            sum += depth;
            inner += gi_inner_texel(k) ? depth : 0.0;
        }
        Vec2sW(pc.means).v[index] = vec2(sum / float(GI_TEXELS), inner / 64.0);
    }
    barrier();
    if (t == GI_TEXELS - 1u) {
        state.v[0] = len + scan[GI_TEXELS - 1u];
    }
}
