// TLAS build, step 3 (gpu/tlas.rs): one compare-exchange step (j, k) of a bitonic
// sort of (code, index) keys. The keys are unique, so the result does not depend
// on the device.
#version 460
#extension GL_GOOGLE_include_directive : require
#include "include/common.glsl"

KILN_PUSH_TLAS_SORT;

bool less(uvec2 a, uvec2 b) {
    return a.x < b.x || (a.x == b.x && a.y < b.y);
}

void main() {
    uint i = gl_GlobalInvocationID.x;
    uint l = i ^ pc.j;
    if (i >= pc.padded || l <= i) {
        return;
    }
    Keys keys = Keys(pc.keys);
    uvec2 a = keys.v[i];
    uvec2 b = keys.v[l];
    bool ascending = (i & pc.k) == 0u;
    if (ascending ? less(b, a) : less(a, b)) {
        keys.v[i] = b;
        keys.v[l] = a;
    }
}
