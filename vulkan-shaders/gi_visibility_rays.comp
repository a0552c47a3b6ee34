// Visibility bake, step 1 (gpu/gi_bake.rs; CPU reference gi/update.rs
// visibility_rays): one invocation per ray, 1024 per probe, texel-major with the
// 2 x 2 subsamples of a texel row by row, t_max = the clip distance, the
// occluders' instance mask; from each probe's relocated position when offsets
// are given.
#version 460
#extension GL_GOOGLE_include_directive : require
#include "include/common.glsl"
#include "include/kiln_ddgi.glsl"

KILN_PUSH_GI_BAKE;

layout(buffer_reference, std430, buffer_reference_align = 16) writeonly buffer RaysOut { KilnRay v[]; };

void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i >= pc.count * KILN_GI_BAKE_RAYS) {
        return;
    }
    uint probe = pc.first + i / KILN_GI_BAKE_RAYS;
    uint r = i % KILN_GI_BAKE_RAYS;
    uint per_texel = KILN_GI_BAKE_SUBSAMPLES * KILN_GI_BAKE_SUBSAMPLES;
    uint t = r / per_texel;
    uint k = r % per_texel;
    uint sx = (t % 16u) * KILN_GI_BAKE_SUBSAMPLES + k % KILN_GI_BAKE_SUBSAMPLES;
    uint sy = (t / 16u) * KILN_GI_BAKE_SUBSAMPLES + k / KILN_GI_BAKE_SUBSAMPLES;
    float step_uv = 2.0 / float(16u * KILN_GI_BAKE_SUBSAMPLES);
    vec3 dir = kiln_gi_oct_decode(vec2((float(sx) + 0.5) * step_uv - 1.0, (float(sy) + 0.5) * step_uv - 1.0));
    uint linear = KilnUints(pc.probes).v[probe];
    vec3 origin = kiln_gi_grid_position(linear, vec3(pc.origin_x, pc.origin_y, pc.origin_z), pc.spacing, pc.dims_x, pc.dims_z);
    if (pc.offsets != uvec2(0u)) {
        origin += kiln_gi_decode_offset(KilnUints(pc.offsets).v[probe], pc.spacing);
    }
    KilnRay ray;
    ray.origin = origin;
    ray.t_min = 0.0;
    ray.dir = dir;
    ray.t_max = pc.clip;
    ray.mask = pc.mask;
    ray._pad0 = 0u;
    ray._pad1 = 0u;
    ray._pad2 = 0u;
    RaysOut(pc.rays).v[i] = ray;
}
