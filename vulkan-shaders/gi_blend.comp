// Irradiance update, step 4 (gpu/gi_update.rs; CPU reference gi/update.rs blend):
// one invocation per updated probe. Projects its rays' radiance on L1 SH (the sum
// in ray order, then 4 pi / n, as sh.rs ShRgb::project), blends with hysteresis
// (new = target + h (old - target)) and stores with rounding toward the target; a
// never-updated probe takes the target. A dead probe keeps no irradiance: skipped.
#version 460
#extension GL_GOOGLE_include_directive : require
#include "include/common.glsl"
#include "include/kiln_ddgi.glsl"

KILN_PUSH_GI_UPDATE;

void main() {
    KilnGiUpdateParams P = KilnGiParamsRef(pc.params).p;
    uint s = gl_GlobalInvocationID.x;
    if (s >= P.count) {
        return;
    }
    uint n = P.rays_per_probe;
    KilnGiSh target;
    for (uint k = 0u; k < 4u; ++k) {
        target.c[k] = vec3(0.0);
    }
    for (uint j = 0u; j < n; ++j) {
        vec4 y = kiln_gi_sh_basis(Vec4s(P.dirs).v[j].xyz);
        vec3 l = Vec4s(P.radiance).v[s * n + j].xyz;
        for (uint k = 0u; k < 4u; ++k) {
            target.c[k] += y[k] * l;
        }
    }
    float w = 4.0 * 3.14159265 / float(n);
    for (uint k = 0u; k < 4u; ++k) {
        target.c[k] *= w;
    }
    int slot = kiln_gi_irradiance_slot(P, kiln_gi_slot_probe(P, s));
    if (slot < 0 || uint(slot) >= P.live_count) {
        return;
    }
    KilnGiIrradiance store = KilnGiIrradiance(P.irradiance);
    uvec4 old = store.v[slot];
    uvec4 packed;
    if (old == uvec4(0u)) {
        for (uint k = 0u; k < 4u; ++k) {
            packed[k] = kiln_gi_pack_word(kiln_gi_sh_field(target, k), k == 0u);
        }
    } else {
        KilnGiSh prev = kiln_gi_unpack_sh(old);
        KilnGiSh value;
        for (uint k = 0u; k < 4u; ++k) {
            value.c[k] = target.c[k] + (prev.c[k] - target.c[k]) * P.hysteresis;
        }
        for (uint k = 0u; k < 4u; ++k) {
            packed[k] = kiln_gi_pack_toward(kiln_gi_sh_field(value, k), kiln_gi_sh_field(target, k), old[k], k == 0u);
        }
    }
    store.v[slot] = packed;
}
