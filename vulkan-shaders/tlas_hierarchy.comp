// TLAS build, step 4 (gpu/tlas.rs): Karras 2012. Invocation i builds internal node
// i: the direction and extent of its key range by binary search on common-prefix
// lengths, then the split. Internal nodes are 0..n-2, leaves n-1..2n-2.
#version 460
#extension GL_GOOGLE_include_directive : require
#include "include/common.glsl"

KILN_PUSH_TLAS_BUILD;

int delta(Keys keys, int i, int j) {
    if (j < 0 || j >= int(pc.count)) {
        return -1;
    }
    uvec2 a = keys.v[i];
    uvec2 b = keys.v[j];
    if (a.x == b.x) {
        return 32 + (31 - findMSB(a.y ^ b.y));
    }
    return 31 - findMSB(a.x ^ b.x);
}

void main() {
    uint gid = gl_GlobalInvocationID.x;
    Words parents = Words(pc.parents);
    if (gid == 0u) {
        parents.v[0] = KILN_NO_PARENT;
    }
    if (pc.count < 2u || gid >= pc.count - 1u) {
        return;
    }
    Keys keys = Keys(pc.keys);
    int n = int(pc.count);
    int i = int(gid);
    int d = delta(keys, i, i + 1) > delta(keys, i, i - 1) ? 1 : -1;
    int delta_min = delta(keys, i, i - d);
    int l_max = 2;
    while (delta(keys, i, i + l_max * d) > delta_min) {
        l_max *= 2;
    }
    int l = 0;
    for (int t = l_max / 2; t >= 1; t /= 2) {
        if (delta(keys, i, i + (l + t) * d) > delta_min) {
            l += t;
        }
    }
    int j = i + l * d;
    int delta_node = delta(keys, i, j);
    int s = 0;
    for (int divisor = 2;; divisor *= 2) {
        int t = (l + divisor - 1) / divisor;
        if (delta(keys, i, i + (s + t) * d) > delta_node) {
            s += t;
        }
        if (t <= 1) {
            break;
        }
    }
    int gamma = i + s * d + min(d, 0);
    uint left = uint(min(i, j) == gamma ? n - 1 + gamma : gamma);
    uint right = uint(max(i, j) == gamma + 1 ? n - 1 + gamma + 1 : gamma + 1);
    TlasNodes nodes = TlasNodes(pc.nodes);
    nodes.v[gid].left = left;
    nodes.v[gid].right = right;
    parents.v[left] = gid;
    parents.v[right] = gid;
}
