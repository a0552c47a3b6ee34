// DDGI helpers shared by the gi_* kernels; each function mirrors the Rust named
// beside it in runtime/src/gi/, operation for operation, so the CPU reference and
// the kernels produce the same bits where integer code is involved.
#ifndef KILN_GI_GLSL
#define KILN_GI_GLSL

const uint GI_TEXELS = 256u;
const uint DEAD_PROBE = 0xffffffffu;
// compress.rs MEAN_SLACK: the mean prefilter never rejects a true match.
const float GI_MEAN_SLACK = 1e-4;

// pack.rs round_shift: v >> shift, round to nearest, ties to even.
uint gi_round_shift(uint v, uint shift) {
    if (shift == 0u) {
        return v;
    }
    uint q = v >> shift;
    uint rem = v & ((1u << shift) - 1u);
    uint halfway = 1u << (shift - 1u);
    return q + ((rem > halfway || (rem == halfway && (q & 1u) == 1u)) ? 1u : 0u);
}

// pack.rs half_from_f32.
uint gi_half_from_float(float x) {
    uint bits = floatBitsToUint(x);
    uint sign_bit = (bits >> 16u) & 0x8000u;
    uint a = bits & 0x7fffffffu;
    if (a > 0x7f800000u) {
        return sign_bit | 0x7e00u;
    }
    int e = int(a >> 23u) - 127 + 15;
    uint mant = a & 0x7fffffu;
    uint code;
    if (e >= 31) {
        code = 0x7c00u;
    } else if (e <= 0) {
        uint shift = uint(14 - e);
        code = shift > 24u ? 0u : gi_round_shift(mant | 0x800000u, shift);
    } else {
        code = min((uint(e) << 10u) + gi_round_shift(mant, 13u), 0x7c00u);
    }
    return sign_bit | code;
}

// pack.rs half_to_f32.
float gi_half_to_float(uint h) {
    uint sign_bit = (h & 0x8000u) << 16u;
    uint e = (h >> 10u) & 0x1fu;
    uint mant = h & 0x3ffu;
    float a;
    if (e == 0u) {
        a = float(mant) * uintBitsToFloat((127u - 24u) << 23u);
    } else if (e == 31u) {
        a = uintBitsToFloat(0x7f800000u | (mant << 13u));
    } else {
        a = uintBitsToFloat(((e + 127u - 15u) << 23u) | (mant << 13u));
    }
    return uintBitsToFloat(floatBitsToUint(a) | sign_bit);
}

// compress.rs pack_texel / unpack_texel: [depth, depth^2] as two halves.
uint gi_pack_texel(vec2 t) {
    return gi_half_from_float(t.x) | (gi_half_from_float(t.y) << 16u);
}

vec2 gi_unpack_texel(uint t) {
    return vec2(gi_half_to_float(t & 0xffffu), gi_half_to_float(t >> 16u));
}

// octahedral.rs oct_decode: a point of [-1, 1]^2 to a unit direction.
vec3 gi_oct_decode(vec2 uv) {
    float z = 1.0 - abs(uv.x) - abs(uv.y);
    vec2 xy = uv;
    if (z < 0.0) {
        vec2 s = vec2(uv.x >= 0.0 ? 1.0 : -1.0, uv.y >= 0.0 ? 1.0 : -1.0);
        xy = (1.0 - abs(uv.yx)) * s;
    }
    return normalize(vec3(xy, z));
}

// volume.rs ProbeGrid::coords + position: a probe's position from its linear index.
vec3 gi_grid_position(uint linear, vec3 origin, float spacing, uint nx, uint nz) {
    uvec3 c = uvec3(linear % nx, linear / (nx * nz), (linear / nx) % nz);
    return origin + vec3(c) * spacing;
}

// update.rs BAKE_SUBSAMPLES: 2 x 2 rays per texel, 1024 per probe.
const uint GI_BAKE_SUBSAMPLES = 2u;
const uint GI_BAKE_RAYS = GI_TEXELS * GI_BAKE_SUBSAMPLES * GI_BAKE_SUBSAMPLES;

#endif
