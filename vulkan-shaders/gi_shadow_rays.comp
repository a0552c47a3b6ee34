// Irradiance update, step 2 (gpu/gi_update.rs; CPU reference gi/update.rs
// shadow_rays): per probe ray, a ray toward the sun from its front-face hit, or
// mask 0 (a miss without traversal) for misses and back faces.
#version 460
#extension GL_GOOGLE_include_directive : require
#include "include/common.glsl"
#include "include/kiln_ddgi.glsl"

KILN_PUSH_GI_UPDATE;

layout(buffer_reference, std430, buffer_reference_align = 16) readonly buffer RaysIn { KilnRay v[]; };
layout(buffer_reference, std430, buffer_reference_align = 16) readonly buffer HitsIn { KilnHit v[]; };
layout(buffer_reference, std430, buffer_reference_align = 16) writeonly buffer RaysOut { KilnRay v[]; };

void main() {
    KilnGiUpdateParams P = KilnGiParamsRef(pc.params).p;
    uint i = gl_GlobalInvocationID.x;
    if (i >= P.count * P.rays_per_probe) {
        return;
    }
    KilnRay ray = RaysIn(P.rays).v[i];
    KilnHit hit = HitsIn(P.hits).v[i];
    KilnRay shadow;
    shadow.t_min = 0.0;
    shadow._pad0 = 0u;
    shadow._pad1 = 0u;
    shadow._pad2 = 0u;
    if (hit.instance == KILN_NO_HIT || (hit.flags & KILN_HIT_BACKFACE) != 0u) {
        shadow.origin = vec3(0.0);
        shadow.dir = vec3(0.0, 0.0, 1.0);
        shadow.t_max = 1.0;
        shadow.mask = 0u;
    } else {
        shadow.origin = ray.origin + ray.dir * hit.t + hit.normal * KILN_GI_SHADOW_OFFSET;
        shadow.dir = vec3(P.sun_x, P.sun_y, P.sun_z);
        shadow.t_max = KILN_GI_PROBE_RAY_MAX;
        shadow.mask = 0xffffffffu;
    }
    RaysOut(P.shadow_rays).v[i] = shadow;
}
