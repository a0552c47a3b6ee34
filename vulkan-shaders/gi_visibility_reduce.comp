// Visibility bake, step 2 (gpu/gi_bake.rs; CPU reference gi/update.rs
// visibility_map): one invocation per texel; the mean of depth and depth^2 over the
// texel's 4 rays, depth = t / clip (at most 1), 0 on a back face, 1 on a miss;
// the clip value everywhere for a probe classified inactive (bit 31 of its
// offset word, gpu/gi_bake.rs INACTIVE_BIT).
#version 460
#extension GL_GOOGLE_include_directive : require
#include "include/common.glsl"
#include "include/kiln_ddgi.glsl"

KILN_PUSH_GI_BAKE;

layout(buffer_reference, std430, buffer_reference_align = 16) readonly buffer HitsIn { KilnHit v[]; };
layout(buffer_reference, std430, buffer_reference_align = 8) writeonly buffer Vec2sOut { vec2 v[]; };

void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i >= pc.count * KILN_GI_TEXELS) {
        return;
    }
    uint per_texel = KILN_GI_BAKE_SUBSAMPLES * KILN_GI_BAKE_SUBSAMPLES;
    HitsIn hits = HitsIn(pc.hits);
    vec2 sum = vec2(0.0);
    for (uint k = 0u; k < per_texel; ++k) {
        KilnHit hit = hits.v[i * per_texel + k];
        float depth;
        if (hit.instance == KILN_NO_HIT) {
            depth = 1.0;
        } else if ((hit.flags & KILN_HIT_BACKFACE) != 0u) {
            depth = 0.0;
        } else {
            depth = min(hit.t / pc.clip, 1.0);
        }
        sum.x += depth;
        sum.y += depth * depth;
    }
    vec2 texel = sum / float(per_texel);
    if (pc.offsets != uvec2(0u) && (KilnUints(pc.offsets).v[pc.first + i / KILN_GI_TEXELS] >> 31u) != 0u) {
        texel = vec2(1.0);
    }
    Vec2sOut(pc.maps).v[pc.first * KILN_GI_TEXELS + i] = texel;
}
