// Generated from runtime/src/gpu/layout.rs by `KILN_BLESS=1 cargo test -p kiln --lib gpu::layout`.
// Do not edit: change the Rust structs and regenerate.
#ifndef KILN_LAYOUT_GLSL
#define KILN_LAYOUT_GLSL

// 32 bytes
struct BvhNode { vec3 lo; uint a; vec3 hi; uint b; };

// 56 bytes of push constants
#define KILN_PUSH_BLAS_REFIT layout(push_constant, std430) uniform BlasRefitPush { uvec2 nodes; uvec2 parents; uvec2 leaves; uvec2 triangles; uvec2 positions; uvec2 counters; uint leaf_count; uint _pad; } pc

// 48 bytes of push constants
#define KILN_PUSH_SKIN layout(push_constant, std430) uniform SkinPush { uvec2 rest; uvec2 joints; uvec2 weights; uvec2 bones; uvec2 skinned; uint vertex_count; uint bone_count; } pc

#endif
