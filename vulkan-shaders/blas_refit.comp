// BLAS refit (gpu/blas_refit.rs): one invocation per leaf recomputes the leaf box
// from its triangles, then climbs towards the root. At each internal node the two
// children's invocations meet at an atomic counter: the first to arrive exits, the
// second (which sees the first one's box through acquire/release semantics) writes
// the union and continues. No invocation ever waits on another.
#version 460
#pragma use_vulkan_memory_model
#extension GL_GOOGLE_include_directive : require
#include "include/common.glsl"

KILN_PUSH_BLAS_REFIT;

void main() {
    uint k = gl_GlobalInvocationID.x;
    if (k >= pc.leaf_count) {
        return;
    }
    Nodes nodes = Nodes(pc.nodes);
    KilnUints parents = KilnUints(pc.parents);
    KilnUints triangles = KilnUints(pc.triangles);
    KilnFloats positions = KilnFloats(pc.positions);
    Counters counters = Counters(pc.counters);

    uint node = KilnUints(pc.leaves).v[k];
    uint first = nodes.v[node].a;
    uint count = nodes.v[node].b;
    vec3 lo = vec3(uintBitsToFloat(0x7f800000u));
    vec3 hi = -lo;
    for (uint t = first; t < first + count; ++t) {
        for (uint c = 0u; c < 3u; ++c) {
            vec3 p = kiln_load_vec3(positions, triangles.v[4u * t + c]);
            lo = min(lo, p);
            hi = max(hi, p);
        }
    }
    nodes.v[node].lo = lo;
    nodes.v[node].hi = hi;

    node = parents.v[node];
    while (node != KILN_NO_PARENT) {
        uint arrived = atomicAdd(counters.v[node], 1u, gl_ScopeQueueFamily, gl_StorageSemanticsBuffer,
                                 gl_SemanticsAcquireRelease | gl_SemanticsMakeAvailable | gl_SemanticsMakeVisible);
        if (arrived == 0u) {
            return; // the sibling's invocation finishes this node
        }
        uint left = nodes.v[node].a;
        vec3 l_lo = nodes.v[left].lo;
        vec3 l_hi = nodes.v[left].hi;
        vec3 r_lo = nodes.v[left + 1u].lo;
        vec3 r_hi = nodes.v[left + 1u].hi;
        nodes.v[node].lo = min(l_lo, r_lo);
        nodes.v[node].hi = max(l_hi, r_hi);
        node = parents.v[node];
    }
}
