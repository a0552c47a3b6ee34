// Irradiance update, step 1 (gpu/gi_update.rs; CPU reference gi/update.rs
// probe_rays): one invocation per ray, slot-major; ray j of a probe goes along
// this update's direction j (uploaded: spherical Fibonacci turned by the frame's
// rotation, computed once on the CPU).
#version 460
#extension GL_GOOGLE_include_directive : require
#include "include/common.glsl"
#include "include/kiln_ddgi.glsl"

KILN_PUSH_GI_UPDATE;

layout(buffer_reference, std430, buffer_reference_align = 16) writeonly buffer RaysOut { KilnRay v[]; };

void main() {
    KilnGiUpdateParams P = KilnGiParamsRef(pc.params).p;
    uint i = gl_GlobalInvocationID.x;
    if (i >= P.count * P.rays_per_probe) {
        return;
    }
    uint probe = kiln_gi_slot_probe(P, i / P.rays_per_probe);
    uint linear = kiln_gi_slot_steps(P, kiln_gi_probe_linear(P, probe));
    KilnRay ray;
    ray.origin = kiln_gi_grid_position(linear, vec3(P.origin_x, P.origin_y, P.origin_z), P.spacing, P.dims_x, P.dims_z)
        + kiln_gi_probe_offset(P, probe);
    ray.t_min = 0.0;
    ray.dir = Vec4s(P.dirs).v[i % P.rays_per_probe].xyz;
    ray.t_max = KILN_GI_PROBE_RAY_MAX;
    ray.mask = 0xffffffffu;
    ray._pad0 = 0u;
    ray._pad1 = 0u;
    ray._pad2 = 0u;
    RaysOut(P.rays).v[i] = ray;
}
