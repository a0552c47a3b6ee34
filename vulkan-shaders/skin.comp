// Linear blend skinning (gpu/skin.rs): one invocation per vertex,
// out = sum_i weight_i * (bone_i * rest), bones as affine 3x4 row matrices.
#version 460
#extension GL_GOOGLE_include_directive : require
#include "include/common.glsl"

KILN_PUSH_SKIN;

vec3 transform(Vec4s bones, uint bone, vec3 p) {
    vec4 p1 = vec4(p, 1.0);
    return vec3(dot(bones.v[3u * bone], p1), dot(bones.v[3u * bone + 1u], p1), dot(bones.v[3u * bone + 2u], p1));
}

void main() {
    uint v = gl_GlobalInvocationID.x;
    if (v >= pc.vertex_count) {
        return;
    }
    vec3 rest = kiln_load_vec3(KilnFloats(pc.rest), v);
    KilnUints joints = KilnUints(pc.joints);
    uint packed[2] = uint[2](joints.v[2u * v], joints.v[2u * v + 1u]);
    vec4 w = Vec4s(pc.weights).v[v];
    Vec4s bones = Vec4s(pc.bones);
    uint last = pc.bone_count - 1u;
    vec3 p = vec3(0.0);
    for (uint i = 0u; i < 4u; ++i) {
        uint joint = min((packed[i >> 1u] >> (16u * (i & 1u))) & 0xffffu, last);
        p += w[i] * transform(bones, joint, rest);
    }
    FloatsOut out_positions = FloatsOut(pc.skinned);
    out_positions.v[3u * v] = p.x;
    out_positions.v[3u * v + 1u] = p.y;
    out_positions.v[3u * v + 2u] = p.z;
}
