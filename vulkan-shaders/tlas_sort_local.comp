// TLAS build, step 3b (gpu/tlas.rs): the bitonic sort's steps that stay inside one
// block of 2 x workgroup-size keys, run in shared memory with one dispatch instead
// of one per step. `pc.j == 0`: sort each block completely (every k up to the block
// size). Otherwise: the merge steps j = pc.j, pc.j / 2, ..., 1 of stage pc.k. The
// steps and their directions are exactly those of tlas_sort.comp, so the result is
// the same bit for bit.
#version 460
#extension GL_GOOGLE_include_directive : require
#include "include/common.glsl"

KILN_PUSH_TLAS_SORT;

const uint BLOCK = 2u * gl_WorkGroupSize.x;
shared uvec2 tile[BLOCK];

bool less(uvec2 a, uvec2 b) {
    return a.x < b.x || (a.x == b.x && a.y < b.y);
}

// One compare-exchange step (j, k) over the tile: thread t owns the pair whose lower
// index has bit j clear.
void exchange(uint base, uint t, uint j, uint k) {
    uint i = ((t & ~(j - 1u)) << 1u) | (t & (j - 1u));
    uint l = i | j;
    uvec2 a = tile[i];
    uvec2 b = tile[l];
    bool ascending = ((base + i) & k) == 0u;
    if (ascending ? less(b, a) : less(a, b)) {
        tile[i] = b;
        tile[l] = a;
    }
}

void main() {
    uint t = gl_LocalInvocationID.x;
    uint base = gl_WorkGroupID.x * BLOCK;
    Keys keys = Keys(pc.keys);
    // Slots past the padded count (a block larger than the whole array) hold the
    // largest key, so they sort to the end and are never written back.
    for (uint s = t; s < BLOCK; s += gl_WorkGroupSize.x) {
        tile[s] = base + s < pc.padded ? keys.v[base + s] : uvec2(0xffffffffu);
    }
    barrier();
    if (pc.j == 0u) {
        for (uint k = 2u; k <= BLOCK; k <<= 1u) {
            for (uint j = k >> 1u; j > 0u; j >>= 1u) {
                exchange(base, t, j, k);
                barrier();
            }
        }
    } else {
        for (uint j = pc.j; j > 0u; j >>= 1u) {
            exchange(base, t, j, pc.k);
            barrier();
        }
    }
    for (uint s = t; s < BLOCK; s += gl_WorkGroupSize.x) {
        if (base + s < pc.padded) {
            keys.v[base + s] = tile[s];
        }
    }
}
