// Kiln's trace kernel: one invocation per ray, closest-hit or any-hit (shadow) mode.
// The traversal is include/kiln_trace.glsl, the same file an engine's shaders use.
#version 460
#extension GL_GOOGLE_include_directive : require
#include "include/common.glsl"
#include "include/kiln_trace.glsl"

KILN_PUSH_TRACE;

layout(buffer_reference, std430, buffer_reference_align = 16) readonly buffer Rays { KilnRay v[]; };
layout(buffer_reference, std430, buffer_reference_align = 16) writeonly buffer Hits { KilnHit v[]; };

void main() {
    uint r = gl_GlobalInvocationID.x;
    if (r >= pc.ray_count) {
        return;
    }
    Hits(pc.hits).v[r] = kiln_trace(pc.scene, Rays(pc.rays).v[r], pc.any_hit != 0u);
}
