// The engine's own compute shader of samples-c/embedded_gi.c: traces one ray per
// invocation through Kiln's scene with kiln_trace() from the installed include,
// compiled by the sample's build against `pkg-config --variable=glsldir kiln`:
//     glslc --target-env=vulkan1.2 -I $(glsldir) engine_trace.comp -o engine_trace.spv
#version 460
#extension GL_GOOGLE_include_directive : require
#include "kiln_trace.glsl"

layout(local_size_x = 64) in;

layout(buffer_reference, std430, buffer_reference_align = 16) readonly buffer EngineRays { KilnRay v[]; };
layout(buffer_reference, std430, buffer_reference_align = 16) writeonly buffer EngineHits { KilnHit v[]; };

layout(push_constant, std430) uniform Push {
    KilnTraceScene scene; // kiln_tracer_get_trace_buffers: six device addresses
    uvec2 rays;           // the engine's buffers
    uvec2 hits;
    uint count;
    uint any_hit;
} pc;

void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i >= pc.count) {
        return;
    }
    EngineHits(pc.hits).v[i] = kiln_trace(pc.scene, EngineRays(pc.rays).v[i], pc.any_hit != 0u);
}
