// Shared by every Kiln kernel: extensions, buffer-reference types, helpers.
// Buffers are reached through device addresses passed in push constants as uvec2
// (GL_EXT_buffer_reference_uvec2), so no kernel needs 64-bit integers.
#ifndef KILN_COMMON_GLSL
#define KILN_COMMON_GLSL

#extension GL_EXT_buffer_reference : require
#extension GL_EXT_buffer_reference_uvec2 : require
#extension GL_KHR_memory_scope_semantics : require

#include "layout.glsl"

// The workgroup size is a specialization constant set from Rust (Shader::local_size),
// so the Rust side is the only place it is written.
layout(local_size_x_id = 0) in;

layout(buffer_reference, std430, buffer_reference_align = 4) readonly buffer Uints { uint v[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) readonly buffer Floats { float v[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) writeonly buffer FloatsOut { float v[]; };
layout(buffer_reference, std430, buffer_reference_align = 16) readonly buffer Vec4s { vec4 v[]; };
// Coherent: written by one invocation and read by another after an atomic handshake.
layout(buffer_reference, std430, buffer_reference_align = 16) coherent buffer Nodes { BvhNode v[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) coherent buffer Counters { uint v[]; };

layout(buffer_reference, std430, buffer_reference_align = 16) readonly buffer Instances { Instance v[]; };
layout(buffer_reference, std430, buffer_reference_align = 16) readonly buffer BlasRefs { BlasRef v[]; };
layout(buffer_reference, std430, buffer_reference_align = 16) readonly buffer BvhNodes { BvhNode v[]; };
layout(buffer_reference, std430, buffer_reference_align = 16) coherent buffer TlasNodes { TlasNode v[]; };
layout(buffer_reference, std430, buffer_reference_align = 8) buffer Keys { uvec2 v[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) buffer Words { uint v[]; };
layout(buffer_reference, std430, buffer_reference_align = 16) readonly buffer Uvec4s { uvec4 v[]; };

vec3 load_vec3(Floats f, uint i) {
    return vec3(f.v[3u * i], f.v[3u * i + 1u], f.v[3u * i + 2u]);
}


// Affine transform by three rows of [m | t] (the same operations as tlas.rs).
vec3 transform_point(vec4 m[3], vec3 p) {
    return vec3(m[0].x * p.x + m[0].y * p.y + m[0].z * p.z + m[0].w,
                m[1].x * p.x + m[1].y * p.y + m[1].z * p.z + m[1].w,
                m[2].x * p.x + m[2].y * p.y + m[2].z * p.z + m[2].w);
}

vec3 transform_vector(vec4 m[3], vec3 d) {
    return vec3(m[0].x * d.x + m[0].y * d.y + m[0].z * d.z,
                m[1].x * d.x + m[1].y * d.y + m[1].z * d.z,
                m[2].x * d.x + m[2].y * d.y + m[2].z * d.z);
}

// Order-preserving map of floats to uints (for atomicMin on floats).
uint float_to_ordered(float f) {
    uint u = floatBitsToUint(f);
    return (u & 0x80000000u) != 0u ? ~u : (u | 0x80000000u);
}

float ordered_to_float(uint u) {
    return uintBitsToFloat((u & 0x80000000u) != 0u ? (u & 0x7fffffffu) : ~u);
}

#endif
