// Shared by every Kiln kernel: the workgroup size, the buffer-reference types only
// Kiln's own kernels use (kiln_buffers.glsl has those an engine's shader needs too),
// helpers.
#ifndef KILN_COMMON_GLSL
#define KILN_COMMON_GLSL

#extension GL_KHR_memory_scope_semantics : require

#include "kiln_buffers.glsl"

// The workgroup size is a specialization constant set from Rust (Shader::local_size),
// so the Rust side is the only place it is written.
layout(local_size_x_id = 0) in;

layout(buffer_reference, std430, buffer_reference_align = 4) writeonly buffer FloatsOut { float v[]; };
layout(buffer_reference, std430, buffer_reference_align = 16) readonly buffer Vec4s { vec4 v[]; };
// Coherent: written by one invocation and read by another after an atomic handshake.
layout(buffer_reference, std430, buffer_reference_align = 16) coherent buffer Nodes { KilnBvhNode v[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) coherent buffer Counters { uint v[]; };

layout(buffer_reference, std430, buffer_reference_align = 16) coherent buffer TlasNodes { KilnTlasNode v[]; };
layout(buffer_reference, std430, buffer_reference_align = 8) buffer Keys { uvec2 v[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) buffer Words { uint v[]; };

// Order-preserving map of floats to uints (for atomicMin on floats).
uint float_to_ordered(float f) {
    uint u = floatBitsToUint(f);
    return (u & 0x80000000u) != 0u ? ~u : (u | 0x80000000u);
}

float ordered_to_float(uint u) {
    return uintBitsToFloat((u & 0x80000000u) != 0u ? (u & 0x7fffffffu) : ~u);
}

#endif
