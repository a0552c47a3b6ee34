// Two-level ray traversal, for Kiln's trace kernel (trace.comp) and an engine's own
// shaders alike (installed as share/kiln/glsl/kiln_trace.glsl). The CPU reference is
// runtime/src/raytrace/trace.rs, line by line: the TLAS depth-first with a fixed
// stack; at a leaf the ray moves into object space by the instance's inverse
// transform and walks that BLAS near child first; Möller-Trumbore on both faces.
//
// An engine's shader:
//     #include "kiln_trace.glsl"
//     layout(push_constant) uniform Push { KilnTraceScene scene; ... } pc;
//     KilnRay ray = ...;                      // origin, t_min, dir, t_max, mask
//     KilnHit hit = kiln_trace(pc.scene, ray, false);
//     if (hit.instance != KILN_NO_HIT) { ... hit.t, hit.normal, hit.user_id ... }
// `scene` holds the addresses of kiln_tracer_get_trace_buffers; hit.instance is the
// instance's packed index in that frame's scene, hit.user_id its KilnInstanceDef::user_id.
// Needs the bufferDeviceAddress feature (already required by an embedded tracer) and
// GL_EXT_buffer_reference; the file enables the extensions it uses.
#ifndef KILN_TRACE_GLSL
#define KILN_TRACE_GLSL

#include "kiln_buffers.glsl"

const uint KILN_TLAS_STACK = 64u;
const float KILN_SLAB_GROWTH = 1.0000005;

vec3 kiln_safe_inverse(vec3 d) {
    vec3 tiny = mix(vec3(1e-20), vec3(-1e-20), lessThan(d, vec3(0.0)));
    return vec3(1.0) / mix(d, tiny, lessThan(abs(d), vec3(1e-20)));
}

// Entry distance into [lo, hi] within [t_min, t_max], or -1 when missed (t_min >= 0).
float kiln_slab(vec3 origin, vec3 inv, vec3 lo, vec3 hi, float t_min, float t_max) {
    vec3 t0 = (lo - origin) * inv;
    vec3 t1 = (hi - origin) * inv;
    vec3 tn = min(t0, t1);
    vec3 tf = max(t0, t1);
    float near = max(max(max(tn.x, tn.y), tn.z), t_min);
    float far = min(min(tf.x, tf.y), tf.z) * KILN_SLAB_GROWTH;
    return near <= min(far, t_max) ? near : -1.0;
}

struct KilnBlasHit {
    float t;
    float u;
    float v;
    bool backface;
    uint primitive;
    vec3 normal;
};

bool kiln_trace_blas(KilnTraceScene scene, KilnBlasRef blas, vec3 origin, vec3 dir, float t_min, float closest, bool any_hit, out KilnBlasHit best) {
    KilnBvhNodes nodes = KilnBvhNodes(scene.blas_nodes);
    KilnUvec4s triangles = KilnUvec4s(scene.triangles);
    KilnFloats positions = KilnFloats(scene.positions);
    vec3 inv = kiln_safe_inverse(dir);
    KilnBvhNode root = nodes.v[blas.node_base];
    bool found = false;
    best.t = closest;
    if (kiln_slab(origin, inv, root.lo, root.hi, t_min, closest) < 0.0) {
        return false;
    }
    uint stack[KILN_BLAS_MAX_DEPTH];
    uint top = 0u;
    uint current = 0u;
    for (;;) {
        KilnBvhNode node = nodes.v[blas.node_base + current];
        bool descend = false;
        if (node.b != 0u) {
            for (uint t = node.a; t < node.a + node.b; ++t) {
                uvec4 tri = triangles.v[blas.triangle_base + t];
                vec3 a = kiln_load_vec3(positions, blas.position_base + tri.x);
                vec3 b = kiln_load_vec3(positions, blas.position_base + tri.y);
                vec3 c = kiln_load_vec3(positions, blas.position_base + tri.z);
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
            KilnBvhNode l = nodes.v[blas.node_base + node.a];
            KilnBvhNode r = nodes.v[blas.node_base + node.a + 1u];
            float tl = kiln_slab(origin, inv, l.lo, l.hi, t_min, closest);
            float tr = kiln_slab(origin, inv, r.lo, r.hi, t_min, closest);
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

// The closest hit of `ray` (or, with `any_hit`, the first found: shadow rays), as
// Kiln's trace kernel writes it: instance KILN_NO_HIT and t = ray.t_max on a miss;
// the normal is the geometric normal in world space, unit length.
KilnHit kiln_trace(KilnTraceScene scene, KilnRay ray, bool any_hit) {
    KilnHit hit;
    hit.t = ray.t_max;
    hit.instance = KILN_NO_HIT;
    hit.primitive = KILN_NO_HIT;
    hit.flags = 0u;
    hit.normal = vec3(0.0);
    hit.u = 0.0;
    hit.v = 0.0;
    hit.user_id = 0u;
    hit._pad0 = 0u;
    hit._pad1 = 0u;
    KilnTlasNodes tlas = KilnTlasNodes(scene.tlas);
    KilnInstances instances = KilnInstances(scene.instances);
    KilnBlasRefs blas_refs = KilnBlasRefs(scene.blas_refs);
    vec3 inv = kiln_safe_inverse(ray.dir);
    float closest = ray.t_max;
    vec3 object_normal = vec3(0.0);
    uint stack[KILN_TLAS_STACK];
    uint top = 1u;
    stack[0] = 0u;
    while (top > 0u) {
        KilnTlasNode node = tlas.v[stack[--top]];
        if (kiln_slab(ray.origin, inv, node.lo, node.hi, ray.t_min, closest) < 0.0) {
            continue;
        }
        if (node.right != KILN_TLAS_LEAF) {
            stack[top++] = node.left;
            stack[top++] = node.right;
            continue;
        }
        KilnInstance inst = instances.v[node.left];
        if ((inst.mask & ray.mask) == 0u) {
            continue;
        }
        vec3 o = kiln_transform_point(inst.world_to_object, ray.origin);
        vec3 d = kiln_transform_vector(inst.world_to_object, ray.dir);
        KilnBlasHit found;
        if (kiln_trace_blas(scene, blas_refs.v[inst.blas], o, d, ray.t_min, closest, any_hit, found)) {
            closest = found.t;
            object_normal = found.normal;
            hit.t = found.t;
            hit.instance = node.left;
            hit.primitive = found.primitive;
            hit.flags = found.backface ? KILN_HIT_BACKFACE : 0u;
            hit.u = found.u;
            hit.v = found.v;
            hit.user_id = inst.user_id;
            if (any_hit) {
                break;
            }
        }
    }
    if (hit.instance != KILN_NO_HIT) {
        vec4 m[3] = instances.v[hit.instance].world_to_object;
        vec3 n = object_normal;
        vec3 world = vec3(m[0].x * n.x + m[1].x * n.y + m[2].x * n.z,
                          m[0].y * n.x + m[1].y * n.y + m[2].y * n.z,
                          m[0].z * n.x + m[1].z * n.y + m[2].z * n.z);
        float len = length(world);
        hit.normal = len > 0.0 ? world / len : vec3(0.0);
    }
    return hit;
}

#endif
