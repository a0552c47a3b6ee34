// Visibility bake, relocation census (gpu/gi_bake.rs; CPU reference
// gi/relocate.rs RayCensus::of): one workgroup of 256 per probe reduces the hits
// of its 1,024 bake rays to one record of KILN_GI_CENSUS_WORDS words at
// pc.maps[probe]: back faces, front faces, the ray of the closest back face, of
// the closest front face and of the farthest front face (a miss counting as a
// front face at the clip distance; KILN_NO_HIT for none), their distances, and
// the closest back face's normal. Ties keep the earlier ray, as the CPU's scan
// does, so the record is independent of the reduction's order.
#version 460
#extension GL_GOOGLE_include_directive : require
#include "include/common.glsl"
#include "include/kiln_ddgi.glsl"

KILN_PUSH_GI_BAKE;

layout(buffer_reference, std430, buffer_reference_align = 16) readonly buffer HitsIn { KilnHit v[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) writeonly buffer CensusOut { uint v[]; };

const uint KILN_GI_CENSUS_WORDS = 12u;
const uint LANES = 256u;

shared uint s_counts[LANES];  // back faces in the low 16 bits, front faces in the high
shared uint s_ray[3 * LANES];  // closest back, closest front, farthest front
shared float s_t[3 * LANES];

// Whether (t, i) comes before (u, j) in a minimum: the smaller distance, ties
// the earlier ray; no ray comes last.
bool kiln_gi_nearer(float t, uint i, float u, uint j) {
    return i != KILN_NO_HIT && (j == KILN_NO_HIT || t < u || (t == u && i < j));
}

// The same for a maximum.
bool kiln_gi_farther(float t, uint i, float u, uint j) {
    return i != KILN_NO_HIT && (j == KILN_NO_HIT || t > u || (t == u && i < j));
}

void main() {
    uint lane = gl_LocalInvocationID.x;
    uint probe = gl_WorkGroupID.x;
    if (probe >= pc.count) {
        return;
    }
    HitsIn hits = HitsIn(pc.hits);
    uint backs = 0u, fronts = 0u;
    uint ray[3] = uint[3](KILN_NO_HIT, KILN_NO_HIT, KILN_NO_HIT);
    float t3[3] = float[3](0.0, 0.0, 0.0);
    for (uint r = lane; r < KILN_GI_BAKE_RAYS; r += LANES) {
        KilnHit hit = hits.v[probe * KILN_GI_BAKE_RAYS + r];
        bool hit_any = hit.instance != KILN_NO_HIT;
        if (hit_any && (hit.flags & KILN_HIT_BACKFACE) != 0u) {
            backs += 1u;
            if (kiln_gi_nearer(hit.t, r, t3[0], ray[0])) {
                ray[0] = r;
                t3[0] = hit.t;
            }
            continue;
        }
        fronts += hit_any ? 1u : 0u;
        float t = hit_any ? hit.t : pc.clip;
        if (kiln_gi_nearer(t, r, t3[1], ray[1])) {
            ray[1] = r;
            t3[1] = t;
        }
        if (kiln_gi_farther(t, r, t3[2], ray[2])) {
            ray[2] = r;
            t3[2] = t;
        }
    }
    s_counts[lane] = backs | (fronts << 16u);
    for (uint k = 0u; k < 3u; ++k) {
        s_ray[k * LANES + lane] = ray[k];
        s_t[k * LANES + lane] = t3[k];
    }
    barrier();
    for (uint stride = LANES / 2u; stride > 0u; stride /= 2u) {
        if (lane < stride) {
            uint other = lane + stride;
            s_counts[lane] += s_counts[other];
            for (uint k = 0u; k < 3u; ++k) {
                uint a = k * LANES + lane, b = k * LANES + other;
                bool take = k == 2u ? kiln_gi_farther(s_t[b], s_ray[b], s_t[a], s_ray[a])
                                    : kiln_gi_nearer(s_t[b], s_ray[b], s_t[a], s_ray[a]);
                if (take) {
                    s_ray[a] = s_ray[b];
                    s_t[a] = s_t[b];
                }
            }
        }
        barrier();
    }
    if (lane == 0u) {
        CensusOut out_words = CensusOut(pc.maps);
        uint at = (pc.first + probe) * KILN_GI_CENSUS_WORDS;
        vec3 normal = vec3(0.0);
        if (s_ray[0] != KILN_NO_HIT) {
            normal = hits.v[probe * KILN_GI_BAKE_RAYS + s_ray[0]].normal;
        }
        out_words.v[at] = s_counts[0] & 0xffffu;
        out_words.v[at + 1u] = s_counts[0] >> 16u;
        for (uint k = 0u; k < 3u; ++k) {
            out_words.v[at + 2u + k] = s_ray[k * LANES];
            out_words.v[at + 5u + k] = floatBitsToUint(s_t[k * LANES]);
        }
        out_words.v[at + 8u] = floatBitsToUint(normal.x);
        out_words.v[at + 9u] = floatBitsToUint(normal.y);
        out_words.v[at + 10u] = floatBitsToUint(normal.z);
        out_words.v[at + 11u] = 0u;
    }
}
