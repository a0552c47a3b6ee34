// Generated from runtime/src/gpu/layout.rs by `KILN_BLESS=1 cargo test -p kiln --lib gpu::layout`.
// Do not edit: change the Rust structs and regenerate. Installed with the
// package (share/kiln/glsl); included by kiln_buffers.glsl.
#ifndef KILN_LAYOUT_GLSL
#define KILN_LAYOUT_GLSL

const uint KILN_NO_PARENT = 4294967295u;
const uint KILN_BLAS_MAX_DEPTH = 64u;
const uint KILN_TLAS_LEAF = 4294967295u;
const uint KILN_NO_HIT = 4294967295u;
const uint KILN_HIT_BACKFACE = 1u;

// 32 bytes
struct KilnBvhNode { vec3 lo; uint a; vec3 hi; uint b; };

// 56 bytes of push constants
#define KILN_PUSH_BLAS_REFIT layout(push_constant, std430) uniform BlasRefitPush { uvec2 nodes; uvec2 parents; uvec2 leaves; uvec2 triangles; uvec2 positions; uvec2 counters; uint leaf_count; uint _pad; } pc

// 48 bytes of push constants
#define KILN_PUSH_SKIN layout(push_constant, std430) uniform SkinPush { uvec2 rest; uvec2 joints; uvec2 weights; uvec2 bones; uvec2 skinned; uint vertex_count; uint bone_count; } pc

// 112 bytes
struct KilnInstance { vec4 object_to_world[3]; vec4 world_to_object[3]; uint blas; uint mask; uint user_id; uint _pad; };

// 16 bytes
struct KilnBlasRef { uint node_base; uint triangle_base; uint position_base; uint triangle_count; };

// 32 bytes
struct KilnTlasNode { vec3 lo; uint left; vec3 hi; uint right; };

// 48 bytes
struct KilnRay { vec3 origin; float t_min; vec3 dir; float t_max; uint mask; uint _pad0; uint _pad1; uint _pad2; };

// 48 bytes
struct KilnHit { float t; uint instance; uint primitive; uint flags; vec3 normal; float u; float v; uint user_id; uint _pad0; uint _pad1; };

// 48 bytes of push constants
#define KILN_PUSH_TLAS_BOXES layout(push_constant, std430) uniform TlasBoxesPush { uvec2 instances; uvec2 blas_refs; uvec2 blas_nodes; uvec2 boxes; uvec2 scene; uint count; uint _pad; } pc

// 32 bytes of push constants
#define KILN_PUSH_TLAS_MORTON layout(push_constant, std430) uniform TlasMortonPush { uvec2 boxes; uvec2 scene; uvec2 keys; uint count; uint padded; } pc

// 24 bytes of push constants
#define KILN_PUSH_TLAS_SORT layout(push_constant, std430) uniform TlasSortPush { uvec2 keys; uint j; uint k; uint padded; uint _pad; } pc

// 48 bytes of push constants
#define KILN_PUSH_TLAS_BUILD layout(push_constant, std430) uniform TlasBuildPush { uvec2 keys; uvec2 nodes; uvec2 parents; uvec2 boxes; uvec2 counters; uint count; uint _pad; } pc

// 48 bytes
struct KilnTraceScene { uvec2 tlas; uvec2 instances; uvec2 blas_refs; uvec2 blas_nodes; uvec2 triangles; uvec2 positions; };

// 72 bytes of push constants
#define KILN_PUSH_TRACE layout(push_constant, std430) uniform TracePush { uvec2 rays; uvec2 hits; KilnTraceScene scene; uint ray_count; uint any_hit; } pc

// 72 bytes of push constants
#define KILN_PUSH_GI_COMPRESS layout(push_constant, std430) uniform GiCompressPush { uvec2 maps; uvec2 order; uvec2 block_index; uvec2 blocks; uvec2 means; uvec2 state; uvec2 fresh; uint first; uint count; uint window; float tolerance; } pc

// 80 bytes of push constants
#define KILN_PUSH_GI_BAKE layout(push_constant, std430) uniform GiBakePush { uvec2 rays; uvec2 hits; uvec2 probes; uvec2 maps; uvec2 offsets; float origin_x; float origin_y; float origin_z; float spacing; uint dims_x; uint dims_z; float clip; uint first; uint count; uint mask; } pc

// 312 bytes
struct KilnGiUpdateParams { uvec2 rays; uvec2 hits; uvec2 shadow_rays; uvec2 shadow_hits; uvec2 radiance; uvec2 dirs; uvec2 slots; uvec2 mask; uvec2 rank; uvec2 irradiance; uvec2 live_mask; uvec2 live_rank; uvec2 numbers; uvec2 entries; uvec2 blocks; uvec2 albedo; uvec2 offset_mask; uvec2 offset_rank; uvec2 offset_codes; float origin_x; float origin_y; float origin_z; float spacing; uint dims_x; uint dims_y; uint dims_z; float clip; float bias; uint visibility; float sun_x; float sun_y; float sun_z; float sun_r; float sun_g; float sun_b; float sky_r; float sky_g; float sky_b; float albedo_r; float albedo_g; float albedo_b; uint albedo_count; uint probe_count; uint live_count; uint count; uint rays_per_probe; float hysteresis; uint index_layout[3]; uint table_layout[4]; uint ring[3]; uint _pad[2]; };

// 8 bytes of push constants
#define KILN_PUSH_GI_UPDATE layout(push_constant, std430) uniform GiUpdatePush { uvec2 params; } pc

#endif
