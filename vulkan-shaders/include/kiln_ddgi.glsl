// DDGI for Kiln's gi_* kernels and an engine's own shaders alike (installed as
// share/kiln/glsl/kiln_ddgi.glsl). Each function mirrors the Rust named beside it
// in runtime/src/gi/, operation for operation, so the CPU reference and the
// kernels produce the same bits where integer code is involved.
//
// An engine's shader samples a volume's irradiance, with visibility, as
// kiln_gi_sample does on the CPU:
//     #include "kiln_ddgi.glsl"
//     layout(push_constant) uniform Push { uvec2 gi; ... } pc;  // KilnGiBuffers.params
//     vec3 e = kiln_gi_irradiance(pc.gi, p, n, v);  // point, unit normal, unit view
// (or kiln_gi_sample(KilnGiParamsRef(pc.gi).p, ...) with the parameters changed,
// e.g. visibility = 0u); cascades of volumes blend with
// kiln_gi_irradiance_cascades. Every name starts with Kiln, kiln_ or KILN_.
#ifndef KILN_DDGI_GLSL
#define KILN_DDGI_GLSL

#include "kiln_buffers.glsl"

const uint KILN_GI_TEXELS = 256u;
// compress.rs QUADRANTS, QUADRANT_TEXELS, BLOCK_WORDS, DEPTH_WORDS, DEAD_QUADRANT.
const uint KILN_GI_QUADRANTS = 4u;
const uint KILN_GI_QUADRANT_TEXELS = 64u;
const uint KILN_GI_BLOCK_WORDS = 24u;
const uint KILN_GI_DEPTH_WORDS = 16u;
const uint KILN_GI_DEAD_QUADRANT = 0xffffffffu;
// compress.rs MEAN_SLACK: the mean prefilter never rejects a true match.
const float KILN_GI_MEAN_SLACK = 1e-4;

// pack.rs round_shift: v >> shift, round to nearest, ties to even.
uint kiln_gi_round_shift(uint v, uint shift) {
    if (shift == 0u) {
        return v;
    }
    uint q = v >> shift;
    uint rem = v & ((1u << shift) - 1u);
    uint halfway = 1u << (shift - 1u);
    return q + ((rem > halfway || (rem == halfway && (q & 1u) == 1u)) ? 1u : 0u);
}

// compress.rs quantise: floor(v * 127 + 0.5) on [0, 1], never fused, so the bits
// match the CPU's correctly rounded multiply and add.
uint kiln_gi_quantise(float v) {
    precise float s = clamp(v, 0.0, 1.0) * 127.0 + 0.5;
    return uint(s);
}

// compress.rs DEPTH_BITS, DEPTH_MAX; table.rs GROUP_WORDS.
const uint KILN_GI_DEPTH_BITS = 7u;
const uint KILN_GI_DEPTH_MAX = 127u;
const uint KILN_GI_GROUP_WORDS = 3u;

// compress.rs SPREAD_MAX, SPREAD_CODES, SPREAD_STEP.
const float KILN_GI_SPREAD_MAX = 0.25;
const float KILN_GI_SPREAD_CODES = 60.0;
const float KILN_GI_SPREAD_STEP = 1.0 / 60.0;

// compress.rs encode_texel: [depth, depth^2] as (7-bit depth, 4-bit spread over
// the decoded depth squared) codes, every operation correctly rounded.
uvec2 kiln_gi_encode_texel(vec2 t) {
    uint depth = kiln_gi_quantise(t.x);
    precise float d = float(depth) * (1.0 / 127.0);
    precise float s = clamp(t.y - d * d, 0.0, KILN_GI_SPREAD_MAX) * KILN_GI_SPREAD_CODES + 0.5;
    return uvec2(depth, uint(s));
}

// compress.rs decode_texel: [d, min(d * d + spread, 1)].
vec2 kiln_gi_decode_texel(uvec2 code) {
    precise float d = float(code.x) * (1.0 / 127.0);
    precise float d2 = min(d * d + float(code.y) * KILN_GI_SPREAD_STEP, 1.0);
    return vec2(d, d2);
}

// compress.rs block_value: texel i of block b of the compressor's table at blocks
// (every block 96 bytes).
vec2 kiln_gi_block_value(uvec2 blocks, uint b, uint i) {
    KilnUints words = KilnUints(blocks);
    uint base = b * KILN_GI_BLOCK_WORDS;
    uint depth = (words.v[base + i / 4u] >> ((i % 4u) * 8u)) & 0xffu;
    uint spread = (words.v[base + KILN_GI_DEPTH_WORDS + i / 8u] >> ((i % 8u) * 4u)) & 0xfu;
    return kiln_gi_decode_texel(uvec2(depth, spread));
}

// octahedral.rs oct_decode: a point of [-1, 1]^2 to a unit direction.
vec3 kiln_gi_oct_decode(vec2 uv) {
    float y = 1.0 - abs(uv.x) - abs(uv.y);
    vec2 xz = uv;
    if (y < 0.0) {
        vec2 s = vec2(uv.x >= 0.0 ? 1.0 : -1.0, uv.y >= 0.0 ? 1.0 : -1.0);
        xz = (1.0 - abs(uv.yx)) * s;
    }
    return normalize(vec3(xz.x, y, xz.y));
}

// volume.rs ProbeGrid::coords + position: a probe's position from its linear index.
vec3 kiln_gi_grid_position(uint linear, vec3 origin, float spacing, uint nx, uint nz) {
    uvec3 c = uvec3(linear % nx, linear / (nx * nz), (linear / nx) % nz);
    return origin + vec3(c) * spacing;
}

// update.rs BAKE_SUBSAMPLES: 2 x 2 rays per texel, 1024 per probe.
const uint KILN_GI_BAKE_SUBSAMPLES = 2u;
const uint KILN_GI_BAKE_RAYS = KILN_GI_TEXELS * KILN_GI_BAKE_SUBSAMPLES * KILN_GI_BAKE_SUBSAMPLES;

// ---- Irradiance: packed SH (pack.rs), sampling (field.rs), update constants ----

// pack.rs ufloat_from_f32: unsigned float, 5-bit exponent, m mantissa bits.
// NaN, zero and negatives (sign bit set) give 0; too large clamps to the largest.
uint kiln_gi_ufloat_from_float(float x, uint m) {
    uint bits = floatBitsToUint(x);
    if ((bits & 0x80000000u) != 0u || bits > 0x7f800000u || bits == 0u) {
        return 0u;
    }
    uint max_code = (30u << m) | ((1u << m) - 1u);
    int e = int(bits >> 23u) - 127 + 15;
    uint mant = bits & 0x7fffffu;
    uint code;
    if (e >= 31) {
        code = max_code;
    } else if (e <= 0) {
        uint shift = uint(23 - int(m) + 1 - e);
        code = shift > 24u ? 0u : kiln_gi_round_shift(mant | 0x800000u, shift);
    } else {
        code = (uint(e) << m) + kiln_gi_round_shift(mant, 23u - m);
    }
    return min(code, max_code);
}

// pack.rs ufloat_to_f32.
float kiln_gi_ufloat_to_float(uint code, uint m) {
    uint e = code >> m;
    uint mant = code & ((1u << m) - 1u);
    if (e == 0u) {
        return float(mant) * uintBitsToFloat((127u - 14u - m) << 23u);
    }
    return uintBitsToFloat(((e + 127u - 15u) << 23u) | (mant << (23u - m)));
}

// pack.rs unorm_from_f32 (NaN gives 0).
uint kiln_gi_unorm_from_float(float x, uint bits) {
    precise float mx = float((1u << bits) - 1u);
    precise float c = (floatBitsToUint(x) & 0x7fffffffu) > 0x7f800000u ? 0.0 : clamp(x, 0.0, 1.0);
    precise float scaled = c * mx + 0.5;
    return uint(scaled);
}

float kiln_gi_unorm_to_float(uint code, uint bits) {
    return float(code) / float((1u << bits) - 1u);
}

// pack.rs FIELD_BITS / FIELD_SHIFT and WordFormat: field f of a word.
uint kiln_gi_field_bits(uint f) {
    return f == 2u ? 10u : 11u;
}

uint kiln_gi_encode(float x, uint f, bool ufloat) {
    return ufloat ? kiln_gi_ufloat_from_float(x, kiln_gi_field_bits(f) - 5u) : kiln_gi_unorm_from_float(x, kiln_gi_field_bits(f));
}

float kiln_gi_decode(uint code, uint f, bool ufloat) {
    return ufloat ? kiln_gi_ufloat_to_float(code, kiln_gi_field_bits(f) - 5u) : kiln_gi_unorm_to_float(code, kiln_gi_field_bits(f));
}

uint kiln_gi_max_code(uint f, bool ufloat) {
    uint b = kiln_gi_field_bits(f);
    return ufloat ? ((30u << (b - 5u)) | ((1u << (b - 5u)) - 1u)) : ((1u << b) - 1u);
}

vec3 kiln_gi_unpack_word(uint w, bool ufloat) {
    return vec3(kiln_gi_decode(w & 0x7ffu, 0u, ufloat), kiln_gi_decode((w >> 11u) & 0x7ffu, 1u, ufloat),
                kiln_gi_decode(w >> 22u, 2u, ufloat));
}

uint kiln_gi_pack_word(vec3 v, bool ufloat) {
    return kiln_gi_encode(v.x, 0u, ufloat) | (kiln_gi_encode(v.y, 1u, ufloat) << 11u) | (kiln_gi_encode(v.z, 2u, ufloat) << 22u);
}

// pack.rs pack_toward: nearest, but one step toward the target when the nearest
// code is the old one and the target's is not.
uint kiln_gi_pack_toward(vec3 value, vec3 target, uint previous, bool ufloat) {
    uint word = 0u;
    for (uint f = 0u; f < 3u; ++f) {
        uint shift = f * 11u;
        uint mask = (1u << kiln_gi_field_bits(f)) - 1u;
        uint old = (previous >> shift) & mask;
        uint goal = kiln_gi_encode(target[f], f, ufloat);
        uint code = kiln_gi_encode(value[f], f, ufloat);
        if (code == old && goal != old) {
            code = goal > old ? min(old + 1u, kiln_gi_max_code(f, ufloat)) : old - 1u;
        }
        word |= code << shift;
    }
    return word;
}

// pack.rs BAND1_LIMIT.
const float KILN_GI_BAND1_LIMIT = 1.7320508;

// L1 SH of radiance, c[k] per band (sh.rs ShRgb).
struct KilnGiSh {
    vec3 c[4];
};

// pack.rs PackedSh::unpack; the all-zero UNLIT word gives zero (field.rs probe_sh).
KilnGiSh kiln_gi_unpack_sh(uvec4 w) {
    KilnGiSh sh;
    if (w == uvec4(0u)) {
        sh.c[0] = vec3(0.0);
        sh.c[1] = vec3(0.0);
        sh.c[2] = vec3(0.0);
        sh.c[3] = vec3(0.0);
        return sh;
    }
    sh.c[0] = kiln_gi_unpack_word(w.x, true);
    for (uint k = 1u; k < 4u; ++k) {
        sh.c[k] = (kiln_gi_unpack_word(w[k], false) * 2.0 - 1.0) * KILN_GI_BAND1_LIMIT * sh.c[0];
    }
    return sh;
}

// pack.rs PackedSh::fields: the values the four words store.
vec3 kiln_gi_sh_field(KilnGiSh sh, uint k) {
    if (k == 0u) {
        return max(sh.c[0], vec3(0.0));
    }
    vec3 out_field = vec3(0.5);
    for (uint ch = 0u; ch < 3u; ++ch) {
        float c0 = sh.c[0][ch];
        float ratio = sh.c[k][ch] / (KILN_GI_BAND1_LIMIT * c0);
        if (c0 > 0.0 && (floatBitsToUint(ratio) & 0x7f800000u) != 0x7f800000u) {
            out_field[ch] = ratio * 0.5 + 0.5;
        }
    }
    return out_field;
}

// sh.rs sh_basis.
const float KILN_GI_SH_Y0 = 0.2820948;
const float KILN_GI_SH_Y1 = 0.4886025;
vec4 kiln_gi_sh_basis(vec3 d) {
    return vec4(KILN_GI_SH_Y0, -KILN_GI_SH_Y1 * d.y, KILN_GI_SH_Y1 * d.z, -KILN_GI_SH_Y1 * d.x);
}

// sh.rs ShRgb::irradiance: clamped-cosine convolution (A0 = pi, A1 = 2 pi / 3).
vec3 kiln_gi_sh_irradiance(KilnGiSh sh, vec3 n) {
    vec4 y = kiln_gi_sh_basis(n);
    vec3 e = 3.14159265 * sh.c[0] * y.x + 2.09439510 * (sh.c[1] * y.y + sh.c[2] * y.z + sh.c[3] * y.w);
    return max(e, vec3(0.0));
}

// compress.rs BlockEntry::TRANSPOSED: the transpose bit of a quadrant's entry.
const uint KILN_GI_TRANSPOSED = 0x80000000u;

// octahedral.rs quadrant_texel: texel (x, y) of a map as (quadrant, place), the
// place counted from the map's centre outward, row-major in 8 x 8.
uvec2 kiln_gi_quadrant_texel(uint x, uint y) {
    uint cx = x >= 8u ? x - 8u : 7u - x;
    uint cy = y >= 8u ? y - 8u : 7u - y;
    return uvec2((y >= 8u ? 2u : 0u) + (x >= 8u ? 1u : 0u), cy * 8u + cx);
}

// compress.rs QUADRANT_MAP: the map texel at place i of quadrant q's frame.
uint kiln_gi_quadrant_map(uint q, uint i) {
    uint cx = i % 8u;
    uint cy = i / 8u;
    uint x = (q & 1u) != 0u ? 8u + cx : 7u - cx;
    uint y = (q & 2u) != 0u ? 8u + cy : 7u - cy;
    return y * 16u + x;
}

// compress.rs block_texel: the block texel place i reads, as is or transposed.
uint kiln_gi_block_texel(uint i, bool transposed) {
    return transposed ? (i % 8u) * 8u + i / 8u : i;
}

// compress.rs invariant_means: place i is one of the 4 x 4 nearest the pole.
bool kiln_gi_pole_place(uint i) {
    return i % 8u < 4u && i / 8u < 4u;
}

// octahedral.rs oct_encode: a unit direction to a point of [-1, 1]^2.
vec2 kiln_gi_oct_encode(vec3 d) {
    float l1 = abs(d.x) + abs(d.y) + abs(d.z);
    float u = d.x / l1;
    float v = d.z / l1;
    if (d.y >= 0.0) {
        return vec2(u, v);
    }
    return vec2((1.0 - abs(v)) * (u >= 0.0 ? 1.0 : -1.0), (1.0 - abs(u)) * (v >= 0.0 ? 1.0 : -1.0));
}

// octahedral.rs border_source: the interior texel a bordered (18 x 18) texel copies.
uvec2 kiln_gi_border_source(uint bx, uint by) {
    const uint last = 15u;
    const uint edge = 17u;
    if (bx == 0u && by == 0u) return uvec2(last, last);
    if (bx == edge && by == 0u) return uvec2(0u, last);
    if (bx == 0u && by == edge) return uvec2(last, 0u);
    if (bx == edge && by == edge) return uvec2(0u, 0u);
    uint cx = clamp(bx, 1u, 16u) - 1u;
    uint cy = clamp(by, 1u, 16u) - 1u;
    if (by == 0u) return uvec2(last - cx, 0u);
    if (by == edge) return uvec2(last - cx, last);
    if (bx == 0u) return uvec2(0u, last - cy);
    if (bx == edge) return uvec2(last, last - cy);
    return uvec2(bx - 1u, by - 1u);
}

layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer KilnGiParamsRef { KilnGiUpdateParams p; };

// relocate.rs decode_offset(unpack_offset(word)): three signed 10-bit codes of
// 1/1024 of the spacing.
vec3 kiln_gi_decode_offset(uint word, float spacing) {
    ivec3 code = ivec3(int(word << 22u) >> 22, int(word << 12u) >> 22, int(word << 2u) >> 22);
    return vec3(code) * (spacing / 1024.0);
}
layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer KilnGiMaskWords { uvec2 v[]; };
layout(buffer_reference, std430, buffer_reference_align = 16) buffer KilnGiIrradiance { uvec4 v[]; };

// bits.rs RankedBits::rank: the index of item i among the set ones (words a bit
// per item, ranks the set bits before each word), or -1 where its bit is clear.
int kiln_gi_rank(uvec2 words, uvec2 ranks, uint i) {
    uvec2 word = KilnGiMaskWords(words).v[i / 64u];
    uint bit = i % 64u;
    uint below;
    if (bit < 32u) {
        if ((word.x & (1u << bit)) == 0u) return -1;
        below = uint(bitCount(word.x & ((1u << bit) - 1u)));
    } else {
        uint hb = bit - 32u;
        if ((word.y & (1u << hb)) == 0u) return -1;
        below = uint(bitCount(word.x)) + uint(bitCount(word.y & ((1u << hb) - 1u)));
    }
    return int(KilnUints(ranks).v[i / 64u] + below);
}

// bits.rs RankedBits::ones_from(0).nth(r): the item with index r among the set
// ones (r below their count). The last word with at most r set bits before it
// holds it (a binary search over the ranks); it is that word's (r - rank)th set
// bit.
uint kiln_gi_select(uvec2 words, uvec2 ranks, uint word_count, uint r) {
    KilnUints rank = KilnUints(ranks);
    uint lo = 0u;
    uint hi = word_count;
    while (hi - lo > 1u) {
        uint mid = (lo + hi) / 2u;
        if (rank.v[mid] <= r) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    uvec2 word = KilnGiMaskWords(words).v[lo];
    uint k = r - rank.v[lo];
    uint low = uint(bitCount(word.x));
    uint bits = k < low ? word.x : word.y;
    uint base = k < low ? 0u : 32u;
    k = k < low ? k : k - low;
    for (uint j = 0u; j < k; ++j) {
        bits &= bits - 1u;
    }
    return lo * 64u + base + uint(findLSB(bits));
}

// table.rs BlockTable::bits, bits.rs PackedInts::get: the n bits (n < 32) at bit
// `bit` from word `first`.
uint kiln_gi_table_bits(KilnUints words, uint first, uint bit, uint n) {
    if (n == 0u) return 0u;
    uint word = first + bit / 32u;
    uint shift = bit % 32u;
    uint v = words.v[word] >> shift;
    if (shift + n > 32u) {
        v |= words.v[word + 1u] << (32u - shift);
    }
    return v & ((1u << n) - 1u);
}

// A stored block found (table.rs BlockTable::value, split so that the bilinear
// texels of one quadrant find it once): its mask, where its texels start (a bit
// from its group's first word, `data`), their bits and spread width. `dead` for a dead quadrant, which sees the clip value.
struct KilnGiBlock {
    uint quadrant;
    bool dead;
    bool transposed;
    uint lo_mask;
    uint hi_mask;
    uint data;
    uint texels;
    uint bits;
    uint width;
};

// table.rs BlockTable::group_of, mask_number, mask: stored block b. Its group is
// the last whose first block number is <= b (a binary search over the group
// records: first block, first word from the data's, class | texels kept << 8).
// Its blocks lie back to back, each a mask number (table_layout[3] bits, naming a
// two-word mask from table_layout[1]: a bit per texel stored; a clear one is the
// clip value), then the stored texels in order, 7 + w bits each (the depth code,
// the spread code above it; w is 0, 1, 2 or 4 by class).
KilnGiBlock kiln_gi_table_block(KilnGiUpdateParams P, uint b) {
    KilnUints words = KilnUints(P.blocks);
    uint lo = 0u;
    uint hi = P.table_layout[0];
    while (hi - lo > 1u) {
        uint mid = (lo + hi) / 2u;
        if (words.v[mid * KILN_GI_GROUP_WORDS] <= b) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    uint first = words.v[lo * KILN_GI_GROUP_WORDS];
    uint data = P.table_layout[2] + words.v[lo * KILN_GI_GROUP_WORDS + 1u];
    uint kind = words.v[lo * KILN_GI_GROUP_WORDS + 2u];
    uint c = kind & 0xffu;
    KilnGiBlock block;
    block.dead = false;
    block.transposed = false;
    block.width = c == 3u ? 4u : c;
    block.bits = KILN_GI_DEPTH_BITS + block.width;
    uint number_bits = P.table_layout[3];
    uint at = (b - first) * (number_bits + (kind >> 8u) * block.bits);
    uint m = P.table_layout[1] + kiln_gi_table_bits(words, data, at, number_bits) * 2u;
    block.lo_mask = words.v[m];
    block.hi_mask = words.v[m + 1u];
    block.data = data;
    block.texels = at + number_bits;
    return block;
}

// table.rs BlockTable::codes: texel i of a found block as [depth, depth^2]: the
// clip value where its mask bit is clear, else the stored texel whose rank is the
// number of mask bits set below i.
vec2 kiln_gi_block_value(KilnGiUpdateParams P, KilnGiBlock block, uint i) {
    uint rank;
    if (i < 32u) {
        if ((block.lo_mask & (1u << i)) == 0u) return kiln_gi_decode_texel(uvec2(KILN_GI_DEPTH_MAX, 0u));
        rank = uint(bitCount(block.lo_mask & ((1u << i) - 1u)));
    } else {
        uint hb = i - 32u;
        if ((block.hi_mask & (1u << hb)) == 0u) return kiln_gi_decode_texel(uvec2(KILN_GI_DEPTH_MAX, 0u));
        rank = uint(bitCount(block.lo_mask)) + uint(bitCount(block.hi_mask & ((1u << hb) - 1u)));
    }
    uint code = kiln_gi_table_bits(KilnUints(P.blocks), block.data, block.texels + rank * block.bits, block.bits);
    return kiln_gi_decode_texel(uvec2(code & KILN_GI_DEPTH_MAX, code >> KILN_GI_DEPTH_BITS));
}

// compress.rs CompressedVisibility::entry: quadrant q of a probe as a 4-byte entry
// (block, transpose bit on top), or dead: a dead probe has no entries; a live one
// reads entry q of its signature (its own, at its rank, or the one its number
// names), 2 * block + transpose bit, all ones for a dead quadrant.
uint kiln_gi_block_entry(KilnGiUpdateParams P, uint probe, uint q) {
    int live = kiln_gi_rank(P.live_mask, P.live_rank, probe);
    if (live < 0) {
        return KILN_GI_DEAD_QUADRANT;
    }
    uint s = uint(live);
    if (P.index_layout[0] != 0u) {
        s = kiln_gi_table_bits(KilnUints(P.numbers), 0u, s * P.index_layout[1], P.index_layout[1]);
    }
    uint width = P.index_layout[2];
    uint e = kiln_gi_table_bits(KilnUints(P.entries), 0u, (s * KILN_GI_QUADRANTS + q) * width, width);
    if (e == (1u << width) - 1u) {
        return KILN_GI_DEAD_QUADRANT;
    }
    return (e >> 1u) | ((e & 1u) != 0u ? KILN_GI_TRANSPOSED : 0u);
}

// compress.rs CompressedVisibility::texel: a dead quadrant sees the clip value, a
// live one reads its block, transposed when the entry's top bit says so. `block`
// holds the quadrant the last texel read; another one is looked up.
vec2 kiln_gi_texel(KilnGiUpdateParams P, uint probe, uint x, uint y, inout KilnGiBlock block) {
    uvec2 qi = kiln_gi_quadrant_texel(x, y);
    if (qi.x != block.quadrant) {
        uint entry = kiln_gi_block_entry(P, probe, qi.x);
        if (entry == KILN_GI_DEAD_QUADRANT) {
            block.dead = true;
        } else {
            block = kiln_gi_table_block(P, entry & ~KILN_GI_TRANSPOSED);
            block.transposed = (entry & KILN_GI_TRANSPOSED) != 0u;
        }
        block.quadrant = qi.x;
    }
    if (block.dead) {
        return vec2(1.0);
    }
    return kiln_gi_block_value(P, block, kiln_gi_block_texel(qi.y, block.transposed));
}

// octahedral.rs sample_bordered: bilinear [depth, depth^2] toward d, the border
// read through kiln_gi_border_source; a quadrant's block is found once for the texels
// in it.
vec2 kiln_gi_visibility(KilnGiUpdateParams P, uint probe, vec3 d) {
    vec2 uv = kiln_gi_oct_encode(d);
    vec2 pos = clamp((uv * 0.5 + 0.5) * 16.0 + 0.5, vec2(0.5), vec2(16.5));
    uvec2 p0 = uvec2(floor(pos));
    vec2 f = pos - vec2(p0);
    uvec2 p1 = min(p0 + 1u, uvec2(17u));
    uvec2 s00 = kiln_gi_border_source(p0.x, p0.y);
    uvec2 s10 = kiln_gi_border_source(p1.x, p0.y);
    uvec2 s01 = kiln_gi_border_source(p0.x, p1.y);
    uvec2 s11 = kiln_gi_border_source(p1.x, p1.y);
    KilnGiBlock block;
    block.quadrant = KILN_GI_QUADRANTS;
    vec2 a = kiln_gi_texel(P, probe, s00.x, s00.y, block);
    vec2 b = kiln_gi_texel(P, probe, s10.x, s10.y, block);
    vec2 c = kiln_gi_texel(P, probe, s01.x, s01.y, block);
    vec2 e = kiln_gi_texel(P, probe, s11.x, s11.y, block);
    vec2 top = a + (b - a) * f.x;
    vec2 bottom = c + (e - c) * f.x;
    return top + (bottom - top) * f.y;
}

// volume.rs ProbeVolume::probe_coords: the linear grid index of probe `probe`,
// from the placement mask (no per-probe list on the device).
uint kiln_gi_probe_linear(KilnGiUpdateParams P, uint probe) {
    uint words = (P.dims_x * P.dims_y * P.dims_z + 63u) / 64u;
    return kiln_gi_select(P.mask, P.rank, words, probe);
}

// relocate.rs ProbeOffsets::offset: probe `probe`'s offset from its grid point
// (zero where it did not move, and when no probe moved: offset_codes is 0).
vec3 kiln_gi_probe_offset(KilnGiUpdateParams P, uint probe) {
    if (P.offset_codes == uvec2(0u)) {
        return vec3(0.0);
    }
    int r = kiln_gi_rank(P.offset_mask, P.offset_rank, probe);
    if (r < 0) {
        return vec3(0.0);
    }
    return kiln_gi_decode_offset(KilnUints(P.offset_codes).v[uint(r)], P.spacing);
}

// field.rs ProbeField::irradiance_slot: where probe `probe` keeps its irradiance
// (its rank among the live probes), or -1 for a dead probe.
int kiln_gi_irradiance_slot(KilnGiUpdateParams P, uint probe) {
    return kiln_gi_rank(P.live_mask, P.live_rank, probe);
}

// field.rs ProbeField::probe_at_steps: the probe c grid steps from the origin
// (in slot (c + ring) mod dims of a scrolling volume), or -1.
int kiln_gi_probe_at(KilnGiUpdateParams P, uvec3 c) {
    uvec3 dims = uvec3(P.dims_x, P.dims_y, P.dims_z);
    if (any(greaterThanEqual(c, dims))) {
        return -1;
    }
    uvec3 slot = (c + uvec3(P.ring[0], P.ring[1], P.ring[2])) % dims;
    return kiln_gi_rank(P.mask, P.rank, (slot.y * P.dims_z + slot.z) * P.dims_x + slot.x);
}

// field.rs ProbeField::steps_of_slot: the grid steps from the origin of the probe
// in slot `slot` (a linear grid index), as a linear grid index.
uint kiln_gi_slot_steps(KilnGiUpdateParams P, uint slot) {
    uvec3 dims = uvec3(P.dims_x, P.dims_y, P.dims_z);
    uvec3 s = uvec3(slot % P.dims_x, slot / (P.dims_x * P.dims_z), (slot / P.dims_x) % P.dims_z);
    uvec3 r = (s + dims - uvec3(P.ring[0], P.ring[1], P.ring[2]) % dims) % dims;
    return (r.y * P.dims_z + r.z) * P.dims_x + r.x;
}

// field.rs ProbeField::sample: irradiance at surface point p, unit normal n, seen
// from unit direction v (DDGI weights; see that file's docs). Missing and dead
// probes weigh 0; 0 where no probe weighs in.
vec3 kiln_gi_sample(KilnGiUpdateParams P, vec3 p, vec3 n, vec3 v) {
    vec3 origin = vec3(P.origin_x, P.origin_y, P.origin_z);
    uvec3 dims = uvec3(P.dims_x, P.dims_y, P.dims_z);
    vec3 biased = p + (n * 0.2 + v * 0.8) * P.bias;
    vec3 rel = (biased - origin) / P.spacing;
    vec3 hi = vec3(max(ivec3(dims) - 2, ivec3(0)));
    uvec3 base = uvec3(clamp(floor(rel), vec3(0.0), hi));
    vec3 alpha = clamp(rel - vec3(base), vec3(0.0), vec3(1.0));
    vec3 sum = vec3(0.0);
    float total = 0.0;
    for (uint corner = 0u; corner < 8u; ++corner) {
        uvec3 offset = uvec3(corner & 1u, (corner >> 1u) & 1u, (corner >> 2u) & 1u);
        uvec3 c = base + offset;
        int probe = kiln_gi_probe_at(P, c);
        if (probe < 0) {
            continue;
        }
        int slot = kiln_gi_irradiance_slot(P, uint(probe));
        if (slot < 0) {
            continue;
        }
        vec3 probe_pos = origin + vec3(c) * P.spacing + kiln_gi_probe_offset(P, uint(probe));
        vec3 t3 = mix(vec3(1.0) - alpha, alpha, vec3(offset));
        float trilinear = t3.x * t3.y * t3.z;
        vec3 to = probe_pos - p;
        float to_len = length(to);
        vec3 to_probe = to_len > 0.0 ? to / to_len : vec3(0.0);
        float wrap = (dot(to_probe, n) + 1.0) * 0.5;
        float w = wrap * wrap + 0.2;
        if (P.visibility != 0u) {
            vec3 from_probe = biased - probe_pos;
            float from_len = length(from_probe);
            float dist = from_len / P.clip;
            vec3 dir = dist > 0.0 ? from_probe / from_len : vec3(0.0, 0.0, 1.0);
            vec2 m = kiln_gi_visibility(P, uint(probe), dir);
            if (dist > m.x) {
                float variance = abs(m.x * m.x - m.y);
                float cheb = variance / (variance + (dist - m.x) * (dist - m.x));
                w *= cheb * cheb * cheb;
            }
        }
        w = max(w, 1e-6);
        if (w < 0.2) {
            w *= w * w / 0.04;
        }
        w *= trilinear;
        KilnGiSh sh = kiln_gi_unpack_sh(KilnGiIrradiance(P.irradiance).v[slot]);
        sum += w * kiln_gi_sh_irradiance(sh, n);
        total += w;
    }
    return total > 0.0 ? sum / total : vec3(0.0);
}

// Irradiance at surface point p (unit normal n, unit direction v toward the eye)
// of the volume whose sampling parameters lie at `params`
// (kiln_gi_get_gpu_buffers: KilnGiBuffers.params.device_address), weighted by
// visibility: what kiln_gi_sample returns with visibility true.
vec3 kiln_gi_irradiance(uvec2 params, vec3 p, vec3 n, vec3 v) {
    return kiln_gi_sample(KilnGiParamsRef(params).p, p, n, v);
}

// scroll.rs cascade_weight: how much of a sample at p the volume takes before the
// next coarser one: 1 deeper than one probe spacing inside its grid's box,
// falling to 0 at its edge, 0 outside.
float kiln_gi_cascade_weight(KilnGiUpdateParams P, vec3 p) {
    vec3 origin = vec3(P.origin_x, P.origin_y, P.origin_z);
    vec3 hi = origin + vec3(P.dims_x, P.dims_y, P.dims_z) * P.spacing - vec3(P.spacing);
    vec3 inside = min(p - origin, hi - p);
    float depth = min(min(inside.x, inside.y), inside.z);
    return clamp(depth / P.spacing, 0.0, 1.0);
}

// gi.rs KILN_GI_MAX_CASCADES.
const uint KILN_GI_MAX_CASCADES = 8u;

// scroll.rs sample_cascades (kiln_gi_sample_cascades): irradiance at p from
// `count` volumes of growing spacing, finest first (each a
// KilnGiBuffers.params.device_address): each takes kiln_gi_cascade_weight of
// what the finer ones left, the coarsest all that is left.
vec3 kiln_gi_irradiance_cascades(uvec2 params[KILN_GI_MAX_CASCADES], uint count, vec3 p, vec3 n, vec3 v) {
    vec3 sum = vec3(0.0);
    float left = 1.0;
    uint last = min(count, KILN_GI_MAX_CASCADES);
    for (uint i = 0u; i < last && left > 0.0; ++i) {
        KilnGiUpdateParams P = KilnGiParamsRef(params[i]).p;
        float w = i + 1u == last ? left : left * kiln_gi_cascade_weight(P, p);
        if (w > 0.0) {
            sum += w * kiln_gi_sample(P, p, n, v);
            left -= w;
        }
    }
    return sum;
}

// update.rs PROBE_RAY_MAX and SHADOW_OFFSET.
const float KILN_GI_PROBE_RAY_MAX = 1.0e6;
const float KILN_GI_SHADOW_OFFSET = 1.0e-3;

// The probe of update slot s (uploaded with the update: the next live probes,
// round robin).
uint kiln_gi_slot_probe(KilnGiUpdateParams P, uint s) {
    return KilnUints(P.slots).v[s];
}

#endif
