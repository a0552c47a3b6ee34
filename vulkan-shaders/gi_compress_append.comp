// Dictionary compression of visibility maps, step 2 of a batch (gpu/gi_compress.rs):
// one workgroup of 256, one invocation per map of the batch. The batch's unmatched
// quadrants become new blocks in batch order, then quadrant order (an exclusive
// scan of each map's fresh count gives its first index), packed to depth and spread codes with
// their mean depths (whole quadrant, 4 x 4 nearest the pole) for the next batches'
// prefilter; then the block count grows.
#version 460
#extension GL_GOOGLE_include_directive : require
#include "include/common.glsl"
#include "include/kiln_ddgi.glsl"

KILN_PUSH_GI_COMPRESS;

layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer Vec2s { vec2 v[]; };
layout(buffer_reference, std430, buffer_reference_align = 8) writeonly buffer Vec2sW { vec2 v[]; };

shared uint scan[KILN_GI_TEXELS];

void main() {
    uint t = gl_LocalInvocationID.x;
    uint flags[KILN_GI_QUADRANTS];
    uint mine = 0u;
    for (uint q = 0u; q < KILN_GI_QUADRANTS; ++q) {
        flags[q] = t < pc.count ? KilnUints(pc.fresh).v[t * KILN_GI_QUADRANTS + q] : 0u;
        mine += flags[q];
    }
    scan[t] = mine;
    barrier();
    // Inclusive Hillis-Steele scan.
    for (uint s = 1u; s < KILN_GI_TEXELS; s <<= 1u) {
        uint add = t >= s ? scan[t - s] : 0u;
        barrier();
        scan[t] += add;
        barrier();
    }
    Words state = Words(pc.state);
    uint len = state.v[0];
    if (mine > 0u) {
        uint index = len + scan[t] - mine;
        uint probe = KilnUints(pc.order).v[pc.first + t];
        Vec2s maps = Vec2s(pc.maps);
        Words blocks = Words(pc.blocks);
        for (uint q = 0u; q < KILN_GI_QUADRANTS; ++q) {
            if (flags[q] == 0u) {
                continue;
            }
            Words(pc.block_index).v[probe * KILN_GI_QUADRANTS + q] = index;
            uint words[KILN_GI_BLOCK_WORDS];
            for (uint w = 0u; w < KILN_GI_BLOCK_WORDS; ++w) {
                words[w] = 0u;
            }
            float sum = 0.0;
            float pole = 0.0;
            for (uint k = 0u; k < KILN_GI_QUADRANT_TEXELS; ++k) {
                uvec2 code = kiln_gi_encode_texel(maps.v[probe * KILN_GI_TEXELS + kiln_gi_quadrant_map(q, k)]);
                words[k / 4u] |= code.x << ((k % 4u) * 8u);
                words[KILN_GI_DEPTH_WORDS + k / 8u] |= code.y << ((k % 8u) * 4u);
                float depth = kiln_gi_decode_texel(code).x;
                sum += depth;
                pole += kiln_gi_pole_place(k) ? depth : 0.0;
            }
            for (uint w = 0u; w < KILN_GI_BLOCK_WORDS; ++w) {
                blocks.v[index * KILN_GI_BLOCK_WORDS + w] = words[w];
            }
            Vec2sW(pc.means).v[index] = vec2(sum / float(KILN_GI_QUADRANT_TEXELS), pole / 16.0);
            index += 1u;
        }
    }
    barrier();
    if (t == KILN_GI_TEXELS - 1u) {
        state.v[0] = len + scan[KILN_GI_TEXELS - 1u];
    }
}
