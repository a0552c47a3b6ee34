// The engine's own compute shader of samples-c/embedded_shader.c: samples Kiln's
// probe irradiance, with visibility, at one surface point per invocation through
// kiln_gi_irradiance() (one volume) or kiln_gi_irradiance_cascades() (a fine
// volume blended into a coarse one) from the installed include (compiled against
// `pkg-config --variable=glsldir kiln`, as engine_trace.comp).
#version 460
#extension GL_GOOGLE_include_directive : require
#include "kiln_ddgi.glsl"

layout(local_size_x = 64) in;

// Per query: point, unit normal, unit view direction (w unused).
layout(buffer_reference, std430, buffer_reference_align = 16) readonly buffer EngineQueries { vec4 v[]; };
layout(buffer_reference, std430, buffer_reference_align = 16) writeonly buffer EngineIrradiance { vec4 v[]; };

layout(push_constant, std430) uniform Push {
    uvec2 gi;       // kiln_gi_get_gpu_buffers: params.device_address
    uvec2 coarse;   // the same of a coarser volume, with cascades
    uvec2 queries;  // the engine's buffers
    uvec2 irradiance;
    uint count;
    uint cascades;  // 0: gi alone; 2: gi blended into coarse
} pc;

void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i >= pc.count) {
        return;
    }
    EngineQueries q = EngineQueries(pc.queries);
    vec3 p = q.v[3u * i].xyz;
    vec3 n = q.v[3u * i + 1u].xyz;
    vec3 v = q.v[3u * i + 2u].xyz;
    vec3 e;
    if (pc.cascades == 0u) {
        e = kiln_gi_irradiance(pc.gi, p, n, v);
    } else {
        uvec2 volumes[KILN_GI_MAX_CASCADES];
        volumes[0] = pc.gi;
        volumes[1] = pc.coarse;
        e = kiln_gi_irradiance_cascades(volumes, pc.cascades, p, n, v);
    }
    EngineIrradiance(pc.irradiance).v[i] = vec4(e, 0.0);
}
