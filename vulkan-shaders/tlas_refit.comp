// TLAS build, step 5 (gpu/tlas.rs): leaf n-1+i takes the box of the instance at
// sorted position i, then climbs to the root. As in blas_refit.comp, the second
// child to arrive at a node (atomic counter, acquire/release) writes its box and
// goes on; the first exits. No invocation waits.
#version 460
#pragma use_vulkan_memory_model
#extension GL_GOOGLE_include_directive : require
#include "include/common.glsl"

KILN_PUSH_TLAS_BUILD;

void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i >= pc.count) {
        return;
    }
    TlasNodes nodes = TlasNodes(pc.nodes);
    Words parents = Words(pc.parents);
    Counters counters = Counters(pc.counters);
    uint instance = Keys(pc.keys).v[i].y;
    uint node = pc.count - 1u + i;
    KilnTlasNode leaf = TlasNodes(pc.boxes).v[instance];
    nodes.v[node].lo = leaf.lo;
    nodes.v[node].hi = leaf.hi;
    nodes.v[node].left = instance;
    nodes.v[node].right = KILN_TLAS_LEAF;
    node = parents.v[node];
    while (node != KILN_NO_PARENT) {
        uint arrived = atomicAdd(counters.v[node], 1u, gl_ScopeQueueFamily, gl_StorageSemanticsBuffer,
                                 gl_SemanticsAcquireRelease | gl_SemanticsMakeAvailable | gl_SemanticsMakeVisible);
        if (arrived == 0u) {
            return;
        }
        uint left = nodes.v[node].left;
        uint right = nodes.v[node].right;
        vec3 lo = min(nodes.v[left].lo, nodes.v[right].lo);
        vec3 hi = max(nodes.v[left].hi, nodes.v[right].hi);
        nodes.v[node].lo = lo;
        nodes.v[node].hi = hi;
        node = parents.v[node];
    }
}
