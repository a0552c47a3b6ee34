// TLAS build, step 2 (gpu/tlas.rs): key = (30-bit Morton code of the box centre in
// the scene bounds, instance index); slots past the instance count get (~0, ~0) so
// the power-of-two bitonic sort leaves them at the end.
#version 460
#extension GL_GOOGLE_include_directive : require
#include "include/common.glsl"

KILN_PUSH_TLAS_MORTON;

uint spread_bits(uint x) {
    x &= 0x3ffu;
    x = (x | (x << 16u)) & 0x030000ffu;
    x = (x | (x << 8u)) & 0x0300f00fu;
    x = (x | (x << 4u)) & 0x030c30c3u;
    x = (x | (x << 2u)) & 0x09249249u;
    return x;
}

void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i >= pc.padded) {
        return;
    }
    Keys keys = Keys(pc.keys);
    if (i >= pc.count) {
        keys.v[i] = uvec2(0xffffffffu);
        return;
    }
    Words scene = Words(pc.scene);
    vec3 lo = vec3(ordered_to_float(scene.v[0]), ordered_to_float(scene.v[1]), ordered_to_float(scene.v[2]));
    vec3 hi = -vec3(ordered_to_float(scene.v[3]), ordered_to_float(scene.v[4]), ordered_to_float(scene.v[5]));
    KilnTlasNode leaf = TlasNodes(pc.boxes).v[i];
    vec3 c = 0.5 * (leaf.lo + leaf.hi);
    vec3 scale = vec3(1024.0) / max(hi - lo, vec3(1e-20));
    vec3 q = min(max((c - lo) * scale, vec3(0.0)), vec3(1023.0));
    uint code = (spread_bits(uint(q.x)) << 2u) | (spread_bits(uint(q.y)) << 1u) | spread_bits(uint(q.z));
    keys.v[i] = uvec2(code, i);
}
