// Two-level ray traversal (gpu/trace.rs is the CPU reference, line by line):
// TLAS depth-first with a fixed stack; at a leaf the ray moves into object space by
// the instance's inverse transform and walks that BLAS near child first; Möller-
// Trumbore on both faces. Closest-hit or any-hit (shadow) mode.
#version 460
#extension GL_GOOGLE_include_directive : require
#include "include/common.glsl"

KILN_PUSH_TRACE;

layout(buffer_reference, std430, buffer_reference_align = 16) readonly buffer Rays { Ray v[]; };
layout(buffer_reference, std430, buffer_reference_align = 16) writeonly buffer Hits { Hit v[]; };

const uint TLAS_STACK = 64u;
const float SLAB_GROWTH = 1.0000005;

vec3 safe_inverse(vec3 d) {
    vec3 tiny = mix(vec3(1e-20), vec3(-1e-20), lessThan(d, vec3(0.0)));
    return vec3(1.0) / mix(d, tiny, lessThan(abs(d), vec3(1e-20)));
}

// Entry distance into [lo, hi] within [t_min, t_max], or -1 when missed (t_min >= 0).
float slab(vec3 origin, vec3 inv, vec3 lo, vec3 hi, float t_min, float t_max) {
    vec3 t0 = (lo - origin) * inv;
    vec3 t1 = (hi - origin) * inv;
    vec3 tn = min(t0, t1);
    vec3 tf = max(t0, t1);
    float near = max(max(max(tn.x, tn.y), tn.z), t_min);
    float far = min(min(tf.x, tf.y), tf.z) * SLAB_GROWTH;
    return near <= min(far, t_max) ? near : -1.0;
}

struct BlasHit {
    float t;
    float u;
    float v;
    bool backface;
    uint primitive;
    vec3 normal;
};

bool trace_blas(BlasRef blas, vec3 origin, vec3 dir, float t_min, float closest, bool any_hit, out BlasHit best) {
    BvhNodes nodes = BvhNodes(pc.blas_nodes);
    Uvec4s triangles = Uvec4s(pc.triangles);
    Floats positions = Floats(pc.positions);
    vec3 inv = safe_inverse(dir);
    BvhNode root = nodes.v[blas.node_base];
    bool found = false;
    best.t = closest;
    if (slab(origin, inv, root.lo, root.hi, t_min, closest) < 0.0) {
        return false;
    }
    uint stack[BLAS_MAX_DEPTH];
    uint top = 0u;
    uint current = 0u;
    for (;;) {
        BvhNode node = nodes.v[blas.node_base + current];
        bool descend = false;
        if (node.b != 0u) {
            for (uint t = node.a; t < node.a + node.b; ++t) {
                uvec4 tri = triangles.v[blas.triangle_base + t];
                vec3 a = load_vec3(positions, blas.position_base + tri.x);
                vec3 b = load_vec3(positions, blas.position_base + tri.y);
                vec3 c = load_vec3(positions, blas.position_base + tri.z);
                vec3 e1 = b - a;
                vec3 e2 = c - a;
                vec3 p = cross(dir, e2);
                float det = dot(e1, p);
                if (det == 0.0) {
                    continue;
                }
                float inv_det = 1.0 / det;
                vec3 s = origin - a;
                float u = dot(s, p) * inv_det;
                if (u < 0.0 || u > 1.0) {
                    continue;
                }
                vec3 q = cross(s, e1);
                float v = dot(dir, q) * inv_det;
                if (v < 0.0 || u + v > 1.0) {
                    continue;
                }
                float t_hit = dot(e2, q) * inv_det;
                if (t_hit < t_min || t_hit > closest) {
                    continue;
                }
                closest = t_hit;
                found = true;
                best.t = t_hit;
                best.u = u;
                best.v = v;
                best.backface = det < 0.0;
                best.primitive = tri.w;
                best.normal = cross(e1, e2);
                if (any_hit) {
                    return true;
                }
            }
        } else {
            BvhNode l = nodes.v[blas.node_base + node.a];
            BvhNode r = nodes.v[blas.node_base + node.a + 1u];
            float tl = slab(origin, inv, l.lo, l.hi, t_min, closest);
            float tr = slab(origin, inv, r.lo, r.hi, t_min, closest);
            if (tl >= 0.0 && tr >= 0.0) {
                bool left_first = tl <= tr;
                stack[top++] = left_first ? node.a + 1u : node.a;
                current = left_first ? node.a : node.a + 1u;
                descend = true;
            } else if (tl >= 0.0) {
                current = node.a;
                descend = true;
            } else if (tr >= 0.0) {
                current = node.a + 1u;
                descend = true;
            }
        }
        if (!descend) {
            if (top == 0u) {
                return found;
            }
            current = stack[--top];
        }
    }
}

void main() {
    uint r = gl_GlobalInvocationID.x;
    if (r >= pc.ray_count) {
        return;
    }
    Ray ray = Rays(pc.rays).v[r];
    Hit hit;
    hit.t = ray.t_max;
    hit.instance = NO_HIT;
    hit.primitive = NO_HIT;
    hit.flags = 0u;
    hit.normal = vec3(0.0);
    hit.u = 0.0;
    hit.v = 0.0;
    hit.user_id = 0u;
    hit._pad0 = 0u;
    hit._pad1 = 0u;
    bool any_hit = pc.any_hit != 0u;
    TlasNodes tlas = TlasNodes(pc.tlas);
    Instances instances = Instances(pc.instances);
    BlasRefs blas_refs = BlasRefs(pc.blas_refs);
    vec3 inv = safe_inverse(ray.dir);
    float closest = ray.t_max;
    vec3 object_normal = vec3(0.0);
    uint stack[TLAS_STACK];
    uint top = 1u;
    stack[0] = 0u;
    while (top > 0u) {
        TlasNode node = tlas.v[stack[--top]];
        if (slab(ray.origin, inv, node.lo, node.hi, ray.t_min, closest) < 0.0) {
            continue;
        }
        if (node.right != TLAS_LEAF) {
            stack[top++] = node.left;
            stack[top++] = node.right;
            continue;
        }
        Instance inst = instances.v[node.left];
        if ((inst.mask & ray.mask) == 0u) {
            continue;
        }
        vec3 o = transform_point(inst.world_to_object, ray.origin);
        vec3 d = transform_vector(inst.world_to_object, ray.dir);
        BlasHit found;
        if (trace_blas(blas_refs.v[inst.blas], o, d, ray.t_min, closest, any_hit, found)) {
            closest = found.t;
            object_normal = found.normal;
            hit.t = found.t;
            hit.instance = node.left;
            hit.primitive = found.primitive;
            hit.flags = found.backface ? HIT_BACKFACE : 0u;
            hit.u = found.u;
            hit.v = found.v;
            hit.user_id = inst.user_id;
            if (any_hit) {
                break;
            }
        }
    }
    if (hit.instance != NO_HIT) {
        vec4 m[3] = instances.v[hit.instance].world_to_object;
        vec3 n = object_normal;
        vec3 world = vec3(m[0].x * n.x + m[1].x * n.y + m[2].x * n.z,
                          m[0].y * n.x + m[1].y * n.y + m[2].y * n.z,
                          m[0].z * n.x + m[1].z * n.y + m[2].z * n.z);
        float len = length(world);
        hit.normal = len > 0.0 ? world / len : vec3(0.0);
    }
    Hits(pc.hits).v[r] = hit;
}
