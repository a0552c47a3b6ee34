//! Two-level ray traversal on the CPU: the reference of `vulkan-shaders/trace.comp`.
//!
//! ```text
//!  for each ray:
//!    TLAS stack: pop node; skip unless the ray's [t_min, closest] meets its box
//!      internal -> push both children
//!      leaf     -> instance mask test; ray into object space with the instance's
//!                  inverse transform (direction unnormalised, so t is shared);
//!                  BLAS stack over that BLAS, near child first; Möller–Trumbore
//!                  on leaf triangles; a closer hit shrinks `closest`
//!    any-hit mode returns at the first hit (shadow rays)
//! ```
//!
//! Slab tests use reciprocal directions with zero components replaced by a tiny
//! value (no NaN from 0 * inf), and grow the far distance by a few ulps so that
//! rounding never culls a box a triangle inside it would hit.

use super::blas::BvhNode;
use super::layout::{BlasRef, GpuHit, GpuInstance, GpuRay, TlasNode, HIT_BACKFACE, NO_HIT, TLAS_LEAF};
use super::tlas::{transform_point, transform_vector, TLAS_STACK};
use crate::math::Vec3;

/// Everything a traversal reads: the arrays `GpuScene` uploads.
pub struct TraceScene<'a> {
    pub tlas: &'a [TlasNode],
    pub instances: &'a [GpuInstance],
    pub blas_refs: &'a [BlasRef],
    pub blas_nodes: &'a [BvhNode],
    pub triangles: &'a [[u32; 4]],
    pub positions: &'a [[f32; 3]],
}

/// Far-distance growth of slab tests (a few ulps).
const SLAB_GROWTH: f32 = 1.000_000_5;

/// Reciprocal direction without infinities. Mirrors `safe_inverse` in GLSL.
fn safe_inverse(d: Vec3) -> Vec3 {
    let tiny = |x: f32| {
        if x.abs() < 1e-20 {
            if x < 0.0 {
                -1e-20
            } else {
                1e-20
            }
        } else {
            x
        }
    };
    Vec3::ONE / Vec3::new(tiny(d.x), tiny(d.y), tiny(d.z))
}

/// Entry distance of the ray into `[lo, hi]` if it meets `[t_min, t_max]`.
fn slab(origin: Vec3, inv: Vec3, lo: [f32; 3], hi: [f32; 3], t_min: f32, t_max: f32) -> Option<f32> {
    let t0 = (Vec3::from(lo) - origin) * inv;
    let t1 = (Vec3::from(hi) - origin) * inv;
    let near = t0.min(t1).max_element().max(t_min);
    let far = t0.max(t1).min_element() * SLAB_GROWTH;
    (near <= far.min(t_max)).then_some(near)
}

/// Möller–Trumbore, both faces: `(t, u, v, backface)`.
fn intersect_triangle(
    origin: Vec3,
    dir: Vec3,
    [a, b, c]: [Vec3; 3],
    t_min: f32,
    t_max: f32,
) -> Option<(f32, f32, f32, bool)> {
    let e1 = b - a;
    let e2 = c - a;
    let p = dir.cross(e2);
    let det = e1.dot(p);
    if det == 0.0 {
        return None;
    }
    let inv = 1.0 / det;
    let s = origin - a;
    let u = s.dot(p) * inv;
    if !(0.0..=1.0).contains(&u) {
        return None;
    }
    let q = s.cross(e1);
    let v = dir.dot(q) * inv;
    if v < 0.0 || u + v > 1.0 {
        return None;
    }
    let t = e2.dot(q) * inv;
    (t >= t_min && t <= t_max).then_some((t, u, v, det < 0.0))
}

/// Traces one ray; a miss has `instance == NO_HIT` and `t == ray.t_max`.
pub fn trace_cpu(scene: &TraceScene<'_>, ray: &GpuRay, any_hit: bool) -> GpuHit {
    let mut hit = GpuHit { t: ray.t_max, instance: NO_HIT, primitive: NO_HIT, ..GpuHit::default() };
    if scene.tlas.is_empty() {
        return hit;
    }
    let origin = Vec3::from(ray.origin);
    let dir = Vec3::from(ray.dir);
    let inv = safe_inverse(dir);
    let mut closest = ray.t_max;
    let mut best_object_normal = Vec3::ZERO;
    let mut stack = [0u32; TLAS_STACK as usize];
    let mut top = 1;
    while top > 0 {
        top -= 1;
        let node = scene.tlas[stack[top] as usize];
        if slab(origin, inv, node.lo, node.hi, ray.t_min, closest).is_none() {
            continue;
        }
        if node.right != TLAS_LEAF {
            stack[top] = node.left;
            stack[top + 1] = node.right;
            top += 2;
            continue;
        }
        let instance = &scene.instances[node.left as usize];
        if instance.mask & ray.mask == 0 {
            continue;
        }
        let o = transform_point(&instance.world_to_object, origin);
        let d = transform_vector(&instance.world_to_object, dir);
        let blas = scene.blas_refs[instance.blas as usize];
        if let Some((t, u, v, backface, primitive, normal)) =
            trace_blas(scene, &blas, o, d, ray.t_min, closest, any_hit)
        {
            closest = t;
            best_object_normal = normal;
            hit = GpuHit {
                t,
                instance: node.left,
                primitive,
                flags: if backface { HIT_BACKFACE } else { 0 },
                u,
                v,
                user_id: instance.user_id,
                ..GpuHit::default()
            };
            if any_hit {
                break;
            }
        }
    }
    if hit.instance != NO_HIT {
        // Normals transform by the inverse transpose: n_world = (W2O)^T n_object.
        let m = &scene.instances[hit.instance as usize].world_to_object;
        let n = best_object_normal;
        let world = Vec3::new(
            m[0][0] * n.x + m[1][0] * n.y + m[2][0] * n.z,
            m[0][1] * n.x + m[1][1] * n.y + m[2][1] * n.z,
            m[0][2] * n.x + m[1][2] * n.y + m[2][2] * n.z,
        );
        hit.normal = world.normalize_or_zero().to_array();
    }
    hit
}

type BlasHit = (f32, f32, f32, bool, u32, Vec3);

/// Closest (or any) hit in one BLAS with an object-space ray.
fn trace_blas(
    scene: &TraceScene<'_>,
    blas: &BlasRef,
    origin: Vec3,
    dir: Vec3,
    t_min: f32,
    mut closest: f32,
    any_hit: bool,
) -> Option<BlasHit> {
    let inv = safe_inverse(dir);
    let nodes = &scene.blas_nodes[blas.node_base as usize..];
    let root = nodes[0];
    slab(origin, inv, root.lo, root.hi, t_min, closest)?;
    let mut best = None;
    let mut stack = [0u32; super::blas::MAX_DEPTH as usize];
    let mut top = 0;
    let mut current = 0u32;
    loop {
        let node = nodes[current as usize];
        if node.is_leaf() {
            for t in node.a..node.a + node.b {
                let tri = scene.triangles[(blas.triangle_base + t) as usize];
                let vertex = |k: usize| Vec3::from(scene.positions[(blas.position_base + tri[k]) as usize]);
                let corners = [vertex(0), vertex(1), vertex(2)];
                if let Some((t_hit, u, v, back)) = intersect_triangle(origin, dir, corners, t_min, closest) {
                    closest = t_hit;
                    let normal = (corners[1] - corners[0]).cross(corners[2] - corners[0]);
                    best = Some((t_hit, u, v, back, tri[3], normal));
                    if any_hit {
                        return best;
                    }
                }
            }
        } else {
            let (l, r) = (nodes[node.a as usize], nodes[node.a as usize + 1]);
            let tl = slab(origin, inv, l.lo, l.hi, t_min, closest);
            let tr = slab(origin, inv, r.lo, r.hi, t_min, closest);
            match (tl, tr) {
                (Some(a), Some(b)) => {
                    let (near, far) = if a <= b { (node.a, node.a + 1) } else { (node.a + 1, node.a) };
                    stack[top] = far;
                    top += 1;
                    current = near;
                    continue;
                }
                (Some(_), None) => {
                    current = node.a;
                    continue;
                }
                (None, Some(_)) => {
                    current = node.a + 1;
                    continue;
                }
                (None, None) => {}
            }
        }
        // Pop the next subtree that can still hold a closer hit.
        if top == 0 {
            return best;
        }
        top -= 1;
        current = stack[top];
    }
}
