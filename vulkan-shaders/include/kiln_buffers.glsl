// Buffer-reference types and helpers shared by Kiln's kernels and an engine's own
// shaders (installed with the package as share/kiln/glsl/kiln_buffers.glsl; included
// by kiln_trace.glsl and kiln_ddgi.glsl). Buffers are reached through device addresses held as uvec2
// (GL_EXT_buffer_reference_uvec2), so no shader needs 64-bit integers. Every name
// starts with Kiln / kiln_ / KILN_, so the file can join any shader.
#ifndef KILN_BUFFERS_GLSL
#define KILN_BUFFERS_GLSL

#extension GL_EXT_buffer_reference : require
#extension GL_EXT_buffer_reference_uvec2 : require

#include "kiln_layout.glsl"

layout(buffer_reference, std430, buffer_reference_align = 4) readonly buffer KilnUints { uint v[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) readonly buffer KilnFloats { float v[]; };
layout(buffer_reference, std430, buffer_reference_align = 16) readonly buffer KilnInstances { KilnInstance v[]; };
layout(buffer_reference, std430, buffer_reference_align = 16) readonly buffer KilnBlasRefs { KilnBlasRef v[]; };
layout(buffer_reference, std430, buffer_reference_align = 16) readonly buffer KilnBvhNodes { KilnBvhNode v[]; };
layout(buffer_reference, std430, buffer_reference_align = 16) readonly buffer KilnUvec4s { uvec4 v[]; };
layout(buffer_reference, std430, buffer_reference_align = 16) readonly buffer KilnTlasNodes { KilnTlasNode v[]; };

vec3 kiln_load_vec3(KilnFloats f, uint i) {
    return vec3(f.v[3u * i], f.v[3u * i + 1u], f.v[3u * i + 2u]);
}

// Affine transform by three rows of [m | t] (the same operations as tlas.rs).
vec3 kiln_transform_point(vec4 m[3], vec3 p) {
    return vec3(m[0].x * p.x + m[0].y * p.y + m[0].z * p.z + m[0].w,
                m[1].x * p.x + m[1].y * p.y + m[1].z * p.z + m[1].w,
                m[2].x * p.x + m[2].y * p.y + m[2].z * p.z + m[2].w);
}

vec3 kiln_transform_vector(vec4 m[3], vec3 d) {
    return vec3(m[0].x * d.x + m[0].y * d.y + m[0].z * d.z,
                m[1].x * d.x + m[1].y * d.y + m[1].z * d.z,
                m[2].x * d.x + m[2].y * d.y + m[2].z * d.z);
}

#endif
