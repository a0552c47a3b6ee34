// TLAS build, step 1 (gpu/tlas.rs): the world box of each instance (its BLAS root
// box: centre transformed, half extent through |M|, padded) and the scene bounds of
// the box centres, as atomicMin over order-preserving encodings of x, y, z, -x, -y, -z.
#version 460
#extension GL_GOOGLE_include_directive : require
#include "include/common.glsl"

KILN_PUSH_TLAS_BOXES;

const float BOX_PADDING = 1e-6;

void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i >= pc.count) {
        return;
    }
    KilnInstance inst = KilnInstances(pc.instances).v[i];
    KilnBlasRef blas = KilnBlasRefs(pc.blas_refs).v[inst.blas];
    KilnBvhNode root = KilnBvhNodes(pc.blas_nodes).v[blas.node_base];
    vec3 center = 0.5 * (root.lo + root.hi);
    vec3 half_extent = 0.5 * (root.hi - root.lo);
    vec3 c = kiln_transform_point(inst.object_to_world, center);
    vec4 m[3] = inst.object_to_world;
    vec3 e = vec3(abs(m[0].x) * half_extent.x + abs(m[0].y) * half_extent.y + abs(m[0].z) * half_extent.z,
                  abs(m[1].x) * half_extent.x + abs(m[1].y) * half_extent.y + abs(m[1].z) * half_extent.z,
                  abs(m[2].x) * half_extent.x + abs(m[2].y) * half_extent.y + abs(m[2].z) * half_extent.z);
    vec3 pad = BOX_PADDING * (abs(c) + e);
    KilnTlasNode leaf;
    leaf.lo = c - e - pad;
    leaf.hi = c + e + pad;
    leaf.left = i;
    leaf.right = KILN_TLAS_LEAF;
    TlasNodes(pc.boxes).v[i] = leaf;
    vec3 mid = 0.5 * (leaf.lo + leaf.hi);
    Words scene = Words(pc.scene);
    for (uint axis = 0u; axis < 3u; ++axis) {
        atomicMin(scene.v[axis], float_to_ordered(mid[axis]));
        atomicMin(scene.v[3u + axis], float_to_ordered(-mid[axis]));
    }
}
