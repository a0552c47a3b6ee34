//! World ray casts: the closest hit over the voxel terrain and the bodies of a
//! dynamic tree.
//!
//! The terrain goes first (its chunk walk, see `terrain::raycast`); its hit clips the
//! ray for the tree, whose leaves are tested by a caller-supplied shape test (the
//! rigid-body world passes its shapes; tests pass boxes). On equal distance the
//! terrain wins, then the lower proxy id: the result does not depend on traversal
//! order or worker count.

use glam::{IVec3, Vec3};

use crate::jobs::Jobs;
use crate::math::Ray;
use crate::spatial::{DynamicTree, ProxyId};
use crate::terrain::{Material, Terrain, TerrainHit};

/// What a world ray hit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HitTarget {
    /// Triangle `triangle` of chunk `chunk`'s mesh.
    Terrain { chunk: IVec3, triangle: u32 },
    /// A body's proxy and its user value.
    Body { proxy: ProxyId, user: u64 },
}

/// The closest hit of a world ray.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WorldHit {
    /// Ray parameter: `point = origin + t * dir`.
    pub t: f32,
    pub point: Vec3,
    /// Unit surface normal (terrain: out of the solid; bodies: as the shape test says).
    pub normal: Vec3,
    /// The terrain material, or [`Material::AIR`] for bodies.
    pub material: Material,
    pub target: HitTarget,
}

impl From<TerrainHit> for WorldHit {
    fn from(h: TerrainHit) -> WorldHit {
        WorldHit {
            t: h.t,
            point: h.point,
            normal: h.normal,
            material: h.material,
            target: HitTarget::Terrain { chunk: h.chunk, triangle: h.triangle },
        }
    }
}

/// A body shape test: the hit `(t, unit normal)` of `ray` on the body behind `proxy`
/// (user value `user`) with `t` in `[0, max_t]`, if any.
pub trait ShapeCast: Fn(ProxyId, u64, &Ray, f32) -> Option<(f32, Vec3)> {}
impl<F: Fn(ProxyId, u64, &Ray, f32) -> Option<(f32, Vec3)>> ShapeCast for F {}

/// The closest hit of `ray` with `t` in `[0, max_t]` over the terrain and the tree's
/// bodies. Terrain chunks the ray reaches are meshed on first use.
pub fn ray_cast(
    terrain: &mut Terrain,
    bodies: &DynamicTree,
    ray: &Ray,
    max_t: f32,
    shape: impl ShapeCast,
) -> Option<WorldHit> {
    let terrain_hit = terrain.ray_cast(ray, max_t).map(WorldHit::from);
    closest_body(bodies, ray, max_t, terrain_hit, &shape)
}

/// [`ray_cast`] for every ray, as parallel jobs: `hits[i]` is ray `i`'s closest hit.
/// Panics if `hits` and `rays` differ in length.
pub fn ray_cast_batch(
    terrain: &mut Terrain,
    bodies: &DynamicTree,
    rays: &[Ray],
    max_t: f32,
    hits: &mut [Option<WorldHit>],
    jobs: Jobs,
    shape: impl ShapeCast + Sync,
) {
    assert_eq!(rays.len(), hits.len(), "one hit slot per ray");
    let mut terrain_hits = vec![None; rays.len()];
    terrain.ray_cast_batch(rays, max_t, &mut terrain_hits, jobs);
    for (hit, t) in hits.iter_mut().zip(terrain_hits) {
        *hit = t.map(WorldHit::from);
    }
    jobs.for_each_mut(hits, |i, hit, _| *hit = closest_body(bodies, &rays[i], max_t, *hit, &shape));
}

/// Improves `best` with the tree's bodies.
fn closest_body(
    bodies: &DynamicTree,
    ray: &Ray,
    max_t: f32,
    mut best: Option<WorldHit>,
    shape: &impl ShapeCast,
) -> Option<WorldHit> {
    let limit = best.map_or(max_t, |h| h.t);
    bodies.ray_cast(ray, limit, |proxy, max| {
        let user = bodies.user_data(proxy);
        if let Some((t, normal)) = shape(proxy, user, ray, max) {
            let better = match best {
                None => true,
                Some(b) => match b.target {
                    HitTarget::Terrain { .. } => t < b.t,
                    HitTarget::Body { proxy: p, .. } => t < b.t || (t == b.t && proxy.0 < p.0),
                },
            };
            if better && t <= max {
                best = Some(WorldHit {
                    t,
                    point: ray.at(t),
                    normal,
                    material: Material::AIR,
                    target: HitTarget::Body { proxy, user },
                });
                return t;
            }
        }
        max
    });
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jobs::ThreadPool;
    use crate::math::Aabb;
    use crate::spatial::tests::Rng;
    use crate::spatial::TreeConfig;
    use crate::terrain::generate_hills;

    /// Exact ray/box hit with the entry face's normal (rays starting inside hit at 0).
    fn box_cast(aabb: &Aabb, ray: &Ray, max_t: f32) -> Option<(f32, Vec3)> {
        let (t, _) = ray.clip(aabb, max_t)?;
        let p = ray.at(t);
        let mut normal = Vec3::ZERO;
        let mut best = f32::INFINITY;
        for axis in 0..3 {
            for (face, sign) in [(aabb.min[axis], -1.0), (aabb.max[axis], 1.0)] {
                let d = (p[axis] - face).abs();
                if d < best {
                    best = d;
                    normal = Vec3::ZERO;
                    normal[axis] = sign;
                }
            }
        }
        Some((t, normal))
    }

    #[test]
    fn closest_of_terrain_and_bodies_equals_brute_force() {
        let pool = ThreadPool::new(1);
        let mut terrain = Terrain::new(0.5);
        generate_hills(&mut terrain, 64, 5);
        terrain.regenerate(pool.jobs());
        let mut rng = Rng(8);
        let mut tree = DynamicTree::new(TreeConfig::default());
        let mut boxes = Vec::new();
        for i in 0..300 {
            let c = Vec3::new(rng.range(0.0, 32.0), rng.range(4.0, 18.0), rng.range(0.0, 32.0));
            let b = Aabb::from_center_half_extents(c, rng.vec3(0.2, 1.0));
            let proxy = tree.create_proxy(&b, 1000 + i);
            boxes.push((proxy, b));
        }
        let tight: Vec<(ProxyId, Aabb)> = boxes.clone();
        let shape = |proxy: ProxyId, user: u64, ray: &Ray, max_t: f32| {
            assert_eq!(user, 1000 + tight.iter().position(|(p, _)| *p == proxy).unwrap() as u64);
            let (_, b) = tight.iter().find(|(p, _)| *p == proxy).unwrap();
            box_cast(b, ray, max_t)
        };
        let rays: Vec<Ray> = (0..400)
            .map(|_| {
                Ray::new(Vec3::new(rng.range(0.0, 32.0), 25.0, rng.range(0.0, 32.0)), rng.vec3(-0.5, 0.5) - Vec3::Y)
            })
            .collect();
        let mut batch = vec![None; rays.len()];
        ray_cast_batch(&mut terrain, &tree, &rays, 60.0, &mut batch, pool.jobs(), shape);
        let (mut on_bodies, mut on_terrain) = (0, 0);
        for (ray, batch_hit) in rays.iter().zip(&batch) {
            let hit = ray_cast(&mut terrain, &tree, ray, 60.0, shape);
            assert_eq!(hit, *batch_hit);
            // Brute force: the terrain's own hit, then every box.
            let mut expected: Option<(f32, HitTarget)> =
                terrain.ray_cast(ray, 60.0).map(|h| (h.t, HitTarget::Terrain { chunk: h.chunk, triangle: h.triangle }));
            for (i, (proxy, b)) in boxes.iter().enumerate() {
                if let Some((t, _)) = box_cast(b, ray, 60.0) {
                    let target = HitTarget::Body { proxy: *proxy, user: 1000 + i as u64 };
                    let better = match expected {
                        None => true,
                        Some((bt, HitTarget::Terrain { .. })) => t < bt,
                        Some((bt, HitTarget::Body { proxy: p, .. })) => t < bt || (t == bt && proxy.0 < p.0),
                    };
                    if better {
                        expected = Some((t, target));
                    }
                }
            }
            assert_eq!(hit.map(|h| (h.t, h.target)), expected, "{ray:?}");
            match hit.map(|h| h.target) {
                Some(HitTarget::Body { .. }) => on_bodies += 1,
                Some(HitTarget::Terrain { .. }) => on_terrain += 1,
                None => {}
            }
        }
        assert!(on_bodies > 50 && on_terrain > 50, "{on_bodies} body hits, {on_terrain} terrain hits");
    }
}
