// Irradiance update, step 3 (gpu/gi_update.rs; CPU reference gi/update.rs shade):
// the radiance arriving at the probe along each ray. Miss: sky. Back face: black
// (the probe is inside geometry). Hit: albedo / pi * (sun * cos * lit + E(hit)),
// E sampled from the probe field as it was before this update (multi-bounce).
#version 460
#extension GL_GOOGLE_include_directive : require
#include "include/common.glsl"
#include "include/kiln_ddgi.glsl"

KILN_PUSH_GI_UPDATE;

layout(buffer_reference, std430, buffer_reference_align = 16) readonly buffer RaysIn { KilnRay v[]; };
layout(buffer_reference, std430, buffer_reference_align = 16) readonly buffer HitsIn { KilnHit v[]; };
layout(buffer_reference, std430, buffer_reference_align = 16) writeonly buffer Vec4sOut { vec4 v[]; };

void main() {
    KilnGiUpdateParams P = KilnGiParamsRef(pc.params).p;
    uint i = gl_GlobalInvocationID.x;
    if (i >= P.count * P.rays_per_probe) {
        return;
    }
    KilnHit hit = HitsIn(P.hits).v[i];
    vec3 radiance;
    if (hit.instance == KILN_NO_HIT) {
        radiance = vec3(P.sky_r, P.sky_g, P.sky_b);
    } else if ((hit.flags & KILN_HIT_BACKFACE) != 0u) {
        radiance = vec3(0.0);
    } else {
        KilnRay ray = RaysIn(P.rays).v[i];
        KilnHit shadow = HitsIn(P.shadow_hits).v[i];
        vec3 sun = vec3(P.sun_x, P.sun_y, P.sun_z);
        vec3 p = ray.origin + ray.dir * hit.t;
        float lit = shadow.instance == KILN_NO_HIT ? max(dot(hit.normal, sun), 0.0) : 0.0;
        vec3 bounce = kiln_gi_sample(P, p, hit.normal, -ray.dir);
        vec3 albedo = hit.instance < P.albedo_count ? Vec4s(P.albedo).v[hit.instance].xyz
                                                    : vec3(P.albedo_r, P.albedo_g, P.albedo_b);
        radiance = albedo * 0.318309886 * (vec3(P.sun_r, P.sun_g, P.sun_b) * lit + bounce);
    }
    Vec4sOut(P.radiance).v[i] = vec4(radiance, 0.0);
}
