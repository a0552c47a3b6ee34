// Visibility as the sampling kernels read it (gpu/gi_update.rs
// GiUpdater::sample_visibility; CPU reference gi/field.rs ProbeField::visibility_at):
// one invocation per (probe, direction), n = rays_per_probe directions per probe:
// slot s is probe slots[s / n] toward dirs[s % n], and writes its
// bilinear [depth, depth^2] (over the clip distance) to radiance[s].xy.
#version 460
#extension GL_GOOGLE_include_directive : require
#include "include/common.glsl"
#include "include/kiln_ddgi.glsl"

KILN_PUSH_GI_UPDATE;

layout(buffer_reference, std430, buffer_reference_align = 16) writeonly buffer Vec4sOut { vec4 v[]; };

void main() {
    KilnGiUpdateParams P = KilnGiParamsRef(pc.params).p;
    uint s = gl_GlobalInvocationID.x;
    uint n = P.rays_per_probe;
    if (s >= P.count * n) {
        return;
    }
    uint probe = kiln_gi_slot_probe(P, s / n);
    vec2 v = kiln_gi_visibility(P, probe, Vec4s(P.dirs).v[s % n].xyz);
    Vec4sOut(P.radiance).v[s] = vec4(v, 0.0, 0.0);
}
