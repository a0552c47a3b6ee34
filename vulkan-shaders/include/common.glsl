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

vec3 load_vec3(Floats f, uint i) {
    return vec3(f.v[3u * i], f.v[3u * i + 1u], f.v[3u * i + 2u]);
}

const uint NO_PARENT = 0xffffffffu;

#endif
