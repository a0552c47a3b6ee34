//! World queries against brute force over every shape and the terrain's own queries:
//! a random scene of every shape kind and motion type on voxel hills, stepped so
//! bodies have moved since the broadphase last saw them.

use glam::{Quat, Vec3};

use super::*;
use crate::jobs::ThreadPool;
use crate::math::{Aabb, Isometry, Ray};
use crate::physics::{BodyDef, BodyId, MotionType, ShapeDef, World, WorldDef};
use crate::shapes::Shape;
use crate::spatial::tests::Rng;
use crate::terrain::{generate_hills, Terrain};

struct Scene {
    world: World,
    bodies: Vec<BodyId>,
}

fn random_shape(rng: &mut Rng, kind: usize) -> Shape {
    let s = rng.range(0.3, 1.0);
    match kind {
        0 => Shape::sphere(rng.vec3(-0.2, 0.2), s).unwrap(),
        1 => Shape::capsule(rng.vec3(-0.6, 0.6), rng.vec3(-0.6, 0.6), s * 0.5).unwrap(),
        2 => Shape::cuboid(rng.vec3(0.2, 1.0)).unwrap(),
        3 => {
            let points: Vec<Vec3> = (0..16).map(|_| rng.vec3(-1.0, 1.0).normalize_or(Vec3::Y) * s).collect();
            Shape::hull(&points).unwrap()
        }
        _ => Shape::compound([
            (Isometry::from_translation(Vec3::new(0.6, 0.0, 0.0)), Shape::cuboid(Vec3::splat(s * 0.5)).unwrap()),
            (Isometry::from_translation(Vec3::new(-0.6, 0.0, 0.0)), Shape::sphere(Vec3::ZERO, s * 0.5).unwrap()),
        ])
        .unwrap(),
    }
}

/// 240 bodies over 32 m hills: dynamic ones of every solid kind (some with two
/// shapes), static and kinematic ones, static triangles, random categories, some
/// sensors.
fn scene(seed: u64, steps: usize) -> Scene {
    let pool = ThreadPool::new(1);
    let mut world = World::new(WorldDef::default());
    let mut terrain = Terrain::new(0.5);
    generate_hills(&mut terrain, 64, 3);
    world.set_terrain(terrain);
    let mut rng = Rng(seed);
    let mut bodies = Vec::new();
    for i in 0..240 {
        let motion = match i % 8 {
            0 => MotionType::Static,
            1 => MotionType::Kinematic,
            _ => MotionType::Dynamic,
        };
        let transform = Isometry::new(
            Vec3::new(rng.range(2.0, 30.0), rng.range(8.0, 20.0), rng.range(2.0, 30.0)),
            Quat::from_euler(glam::EulerRot::XYZ, rng.range(-3.0, 3.0), rng.range(-3.0, 3.0), rng.range(-3.0, 3.0)),
        );
        let linear_velocity = if motion == MotionType::Kinematic { rng.vec3(-2.0, 2.0) } else { Vec3::ZERO };
        let id = world.create_body(&BodyDef { motion, transform, linear_velocity, ..BodyDef::default() }).unwrap();
        let category = 1 << rng.below(3);
        let sensor = i % 11 == 0;
        let def = ShapeDef { category, mask: u32::MAX ^ (1 << rng.below(4)), sensor, ..ShapeDef::default() };
        if motion == MotionType::Static && i % 16 == 0 {
            let v = [rng.vec3(-1.5, 1.5), rng.vec3(-1.5, 1.5), rng.vec3(-1.5, 1.5)];
            world.add_shape(id, Shape::triangle(v).unwrap(), def).unwrap();
        } else {
            world.add_shape(id, random_shape(&mut rng, i % 5), def).unwrap();
            if i % 7 == 0 {
                let pose = Isometry::from_translation(Vec3::new(0.0, 1.2, 0.0));
                world.add_shape(id, random_shape(&mut rng, (i + 2) % 5), ShapeDef { pose, ..def }).unwrap();
            }
        }
        bodies.push(id);
    }
    for _ in 0..steps {
        world.step(1.0 / 60.0, pool.jobs()).unwrap();
    }
    Scene { world, bodies }
}

impl Scene {
    /// Every body shape with its target, world placement and filter data.
    fn shapes(&self) -> Vec<(QueryTarget, Shape, Isometry, MotionType, ShapeDef)> {
        let mut out = Vec::new();
        for &id in &self.bodies {
            let xf = self.world.transform(id).unwrap();
            let motion = self.world.bodies().motion_type(id).unwrap();
            for (k, s) in self.world.bodies().shapes(id).unwrap().iter().enumerate() {
                let target = QueryTarget::Body { body: id, shape: k as u32 };
                out.push((target, s.shape.clone(), xf.mul(&s.def.pose), motion, s.def));
            }
        }
        out
    }
}

fn passes(filter: &QueryFilter, target: &QueryTarget, motion: MotionType, def: &ShapeDef) -> bool {
    let QueryTarget::Body { body, .. } = target else { return filter.terrain };
    let motion_ok = match motion {
        MotionType::Static => filter.static_bodies,
        MotionType::Kinematic => filter.kinematic_bodies,
        MotionType::Dynamic => filter.dynamic_bodies,
    };
    motion_ok
        && filter.ignore != Some(*body)
        && (filter.sensors || !def.sensor)
        && def.category & filter.mask != 0
        && def.mask & filter.category != 0
}

/// Every hit of `ray` by brute force: each shape's own ray test, the terrain's.
fn brute_rays(scene: &mut Scene, ray: &Ray, max_t: f32, filter: &QueryFilter) -> Vec<RayHit> {
    let mut out = Vec::new();
    for (target, shape, xf, motion, def) in scene.shapes() {
        if !passes(filter, &target, motion, &def) {
            continue;
        }
        let local = Ray::new(xf.inverse_transform_point(ray.origin), xf.inverse_transform_vector(ray.dir));
        if let Some(h) = shape.ray_cast(&local, max_t) {
            let normal = xf.transform_vector(h.normal);
            out.push(RayHit { t: h.t, point: ray.at(h.t), normal, target, material: crate::terrain::Material::AIR });
        }
    }
    if filter.terrain {
        out.extend(scene.world.terrain_mut().unwrap().ray_cast(ray, max_t).map(RayHit::terrain));
    }
    out.sort_unstable_by(|a, b| a.t.total_cmp(&b.t).then(a.target.key().cmp(&b.target.key())));
    out
}

fn random_filter(rng: &mut Rng, bodies: &[BodyId]) -> QueryFilter {
    let mut bit = || rng.below(4) != 0;
    let (static_bodies, kinematic_bodies, dynamic_bodies, terrain, sensors) = (bit(), bit(), bit(), bit(), !bit());
    QueryFilter {
        category: 1 << rng.below(4),
        mask: if rng.below(2) == 0 { u32::MAX } else { 1 << rng.below(3) },
        ignore: (rng.below(2) == 0).then(|| bodies[rng.below(bodies.len())]),
        static_bodies,
        kinematic_bodies,
        dynamic_bodies,
        terrain,
        sensors,
        terrain_once: rng.below(3) == 0,
    }
}

/// A full listing (bodies, then triangles) as [`QueryFilter::terrain_once`] cuts it:
/// the triangles sorted by key, and only the first kept when the filter asks so.
fn cut_terrain(filter: &QueryFilter, expected: &mut Vec<QueryTarget>) {
    let first = expected.iter().position(|t| matches!(t, QueryTarget::Terrain { .. })).unwrap_or(expected.len());
    expected[first..].sort_unstable_by_key(QueryTarget::key);
    if filter.terrain_once {
        expected.truncate(first + 1);
    }
}

fn random_rays(rng: &mut Rng, n: usize) -> Vec<Ray> {
    (0..n)
        .map(|i| {
            let origin = Vec3::new(rng.range(0.0, 32.0), rng.range(4.0, 24.0), rng.range(0.0, 32.0));
            let dir = match i % 4 {
                // Along the axes.
                0 => [Vec3::X, -Vec3::Y, Vec3::Z, -Vec3::X][rng.below(4)],
                _ => rng.vec3(-1.0, 1.0).normalize_or(-Vec3::Y),
            };
            Ray::new(origin, dir)
        })
        .collect()
}

#[test]
fn ray_casts_equal_brute_force_with_every_filter() {
    let mut s = scene(11, 20);
    let mut rng = Rng(12);
    let (mut closest_bodies, mut closest_terrain, mut many) = (0, 0, 0);
    let mut all = Vec::new();
    for (i, ray) in random_rays(&mut rng, 1500).iter().enumerate() {
        let filter = if i % 3 == 0 { QueryFilter::default() } else { random_filter(&mut rng, &s.bodies) };
        let expected = brute_rays(&mut s, ray, 40.0, &filter);
        let closest = s.world.cast_ray(ray, 40.0, &filter);
        assert_eq!(closest, expected.first().copied(), "{ray:?} {filter:?}");
        s.world.cast_ray_all(ray, 40.0, &filter, &mut all);
        assert_eq!(all, expected, "{ray:?} {filter:?}");
        match closest.map(|h| h.target) {
            Some(QueryTarget::Body { .. }) => closest_bodies += 1,
            Some(QueryTarget::Terrain { .. }) => closest_terrain += 1,
            None => {}
        }
        many += (all.len() > 2) as usize;
    }
    assert!(closest_bodies > 100 && closest_terrain > 150 && many > 2, "{closest_bodies} {closest_terrain} {many}");
}

#[test]
fn a_ray_batch_equals_single_casts_for_any_worker_count() {
    let mut s = scene(21, 10);
    let rays = random_rays(&mut Rng(22), 3000);
    let filter = QueryFilter { kinematic_bodies: false, ..QueryFilter::default() };
    let single: Vec<Option<RayHit>> = rays.iter().map(|r| s.world.cast_ray(r, 60.0, &filter)).collect();
    assert!(single.iter().filter(|h| h.is_some()).count() > 1200);
    for workers in [1, 2, 8] {
        let pool = ThreadPool::new(workers);
        let mut batch = vec![None; rays.len()];
        s.world.cast_ray_batch(&rays, 60.0, &filter, &mut batch, pool.jobs());
        assert_eq!(batch, single, "{workers} workers");
    }
}

#[test]
fn box_overlaps_equal_brute_force() {
    let mut s = scene(31, 20);
    let pool = ThreadPool::new(2);
    let mut rng = Rng(32);
    let (mut found_bodies, mut found_triangles) = (0, 0);
    let mut out = Vec::new();
    for i in 0..300 {
        let aabb = Aabb::from_center_half_extents(
            Vec3::new(rng.range(0.0, 32.0), rng.range(2.0, 20.0), rng.range(0.0, 32.0)),
            rng.vec3(0.1, 3.0),
        );
        let filter = if i % 2 == 0 { QueryFilter::default() } else { random_filter(&mut rng, &s.bodies) };
        s.world.overlap_aabb(&aabb, &filter, pool.jobs(), &mut out);
        let mut expected: Vec<QueryTarget> = s
            .shapes()
            .into_iter()
            .filter(|(t, shape, xf, m, d)| passes(&filter, t, *m, d) && shape.aabb(xf).overlaps(&aabb))
            .map(|(t, ..)| t)
            .collect();
        found_bodies += expected.len();
        if filter.terrain {
            s.world.terrain_mut().unwrap().query_triangles(&aabb, pool.jobs(), |tri| {
                expected.push(QueryTarget::Terrain { chunk: tri.chunk, triangle: tri.index });
                found_triangles += 1;
                true
            });
        }
        cut_terrain(&filter, &mut expected);
        assert_eq!(out, expected, "{aabb:?} {filter:?}");
    }
    assert!(found_bodies > 100 && found_triangles > 1000, "{found_bodies} {found_triangles}");
}

#[test]
fn terrain_once_lists_the_first_triangle_of_the_full_listing() {
    let mut s = scene(33, 20);
    let pool = ThreadPool::new(1);
    let mut rng = Rng(34);
    let (mut all, mut once, mut cut) = (Vec::new(), Vec::new(), 0);
    let full = QueryFilter::default();
    let first = QueryFilter { terrain_once: true, ..full };
    for i in 0..200 {
        let at = Vec3::new(rng.range(0.0, 32.0), rng.range(2.0, 12.0), rng.range(0.0, 32.0));
        if i % 2 == 0 {
            let aabb = Aabb::from_center_half_extents(at, rng.vec3(0.2, 2.0));
            s.world.overlap_aabb(&aabb, &full, pool.jobs(), &mut all);
            s.world.overlap_aabb(&aabb, &first, pool.jobs(), &mut once);
        } else {
            let (shape, xf) =
                (random_shape(&mut rng, i % 5), Isometry::new(at, Quat::from_rotation_x(rng.range(0.0, 6.0))));
            s.world.overlap_shape(&shape, &xf, &full, pool.jobs(), &mut all);
            s.world.overlap_shape(&shape, &xf, &first, pool.jobs(), &mut once);
        }
        let terrain = all.iter().position(|t| matches!(t, QueryTarget::Terrain { .. })).unwrap_or(all.len());
        assert!(all.windows(2).all(|w| w[0].key() < w[1].key()), "listed by key");
        cut += (all.len() > terrain + 1) as usize;
        all.truncate(terrain + 1);
        assert_eq!(once, all, "query {i}");
    }
    assert!(cut > 40, "{cut} queries touched more than one triangle");
}

/// Whether two shapes touch, by GJK (the overlap's own test: this checks the
/// candidates, filters and order).
fn touching(a: &Shape, xa: &Isometry, b: &Shape, xb: &Isometry) -> bool {
    crate::collide::shape_distance(a, xa, b, xb).is_some_and(|d| d.overlap || d.distance <= 0.0)
}

#[test]
fn shape_overlaps_equal_brute_force_and_touching_counts() {
    let mut s = scene(41, 20);
    let pool = ThreadPool::new(2);
    let mut rng = Rng(42);
    let (mut found, mut out) = (0, Vec::new());
    for i in 0..200 {
        let shape = random_shape(&mut rng, i % 5);
        let xf = Isometry::new(
            Vec3::new(rng.range(0.0, 32.0), rng.range(2.0, 20.0), rng.range(0.0, 32.0)),
            Quat::from_rotation_y(rng.range(0.0, 6.0)),
        );
        let filter = if i % 2 == 0 { QueryFilter::default() } else { random_filter(&mut rng, &s.bodies) };
        s.world.overlap_shape(&shape, &xf, &filter, pool.jobs(), &mut out);
        let mut expected: Vec<QueryTarget> = s
            .shapes()
            .into_iter()
            .filter(|(t, other, oxf, m, d)| passes(&filter, t, *m, d) && touching(&shape, &xf, other, oxf))
            .map(|(t, ..)| t)
            .collect();
        if filter.terrain {
            // Every triangle near the shape, not only those in its bounds.
            s.world.terrain_mut().unwrap().query_triangles(&shape.aabb(&xf).expanded(1.0), pool.jobs(), |tri| {
                if touching(&shape, &xf, &Shape::Triangle(tri.vertices), &Isometry::IDENTITY) {
                    expected.push(QueryTarget::Terrain { chunk: tri.chunk, triangle: tri.index });
                }
                true
            });
        }
        cut_terrain(&filter, &mut expected);
        found += expected.len();
        assert_eq!(out, expected, "{shape:?} at {xf:?}, {filter:?}");
    }
    assert!(found > 200, "{found}");

    // A box face to face with a static box: touching counts, a millimetre apart not.
    let mut world = World::new(WorldDef::default());
    let wall = world.create_body(&BodyDef { motion: MotionType::Static, ..BodyDef::default() }).unwrap();
    world.add_shape(wall, Shape::cuboid(Vec3::ONE).unwrap(), ShapeDef::default()).unwrap();
    let probe = Shape::cuboid(Vec3::splat(0.5)).unwrap();
    for (x, hits) in [(1.5, 1), (1.499, 1), (1.501, 0)] {
        world.overlap_shape(
            &probe,
            &Isometry::from_translation(Vec3::new(x, 0.3, 0.0)),
            &QueryFilter::default(),
            pool.jobs(),
            &mut out,
        );
        assert_eq!(out.len(), hits, "probe at x = {x}");
    }
}

/// The distance from `shape` at `xf` to a query target.
fn target_distance(s: &mut Scene, target: &QueryTarget, shape: &Shape, xf: &Isometry) -> f32 {
    let (other, other_xf) = match target {
        QueryTarget::Body { .. } => {
            let (_, other, other_xf, ..) = s.shapes().into_iter().find(|(t, ..)| t == target).unwrap();
            (other, other_xf)
        }
        QueryTarget::Terrain { .. } => {
            let mut found = None;
            let bounds = shape.aabb(xf).expanded(1.0);
            s.world.terrain_mut().unwrap().query_triangles(&bounds, ThreadPool::new(1).jobs(), |tri| {
                if (QueryTarget::Terrain { chunk: tri.chunk, triangle: tri.index }) == *target {
                    found = Some(Shape::Triangle(tri.vertices));
                }
                true
            });
            (found.unwrap(), Isometry::IDENTITY)
        }
    };
    let d = crate::collide::shape_distance(shape, xf, &other, &other_xf).unwrap();
    if d.overlap {
        0.0
    } else {
        d.distance
    }
}

#[test]
fn shape_casts_equal_a_bisection_of_the_sweep() {
    let mut s = scene(51, 20);
    let pool = ThreadPool::new(2);
    let mut rng = Rng(52);
    let (mut hits, mut at_start) = (0, 0);
    for i in 0..150 {
        let shape = random_shape(&mut rng, i % 5);
        let xf = Isometry::new(
            Vec3::new(rng.range(0.0, 32.0), rng.range(10.0, 24.0), rng.range(0.0, 32.0)),
            Quat::from_rotation_x(rng.range(0.0, 6.0)),
        );
        let translation = rng.vec3(-6.0, 6.0) - Vec3::new(0.0, 8.0, 0.0);
        let filter = if i % 2 == 0 { QueryFilter::default() } else { random_filter(&mut rng, &s.bodies) };
        let hit = s.world.cast_shape(&shape, &xf, translation, &filter, pool.jobs());
        // Brute force: the overlap query along the sweep, refined by bisection.
        let mut out = Vec::new();
        let mut touches_at = |s: &mut Scene, f: f32| {
            let at = Isometry::new(xf.translation + translation * f, xf.rotation);
            s.world.overlap_shape(&shape, &at, &filter, pool.jobs(), &mut out);
            out.first().copied()
        };
        const SAMPLES: usize = 400;
        let first = (0..=SAMPLES).map(|k| k as f32 / SAMPLES as f32).find(|&f| touches_at(&mut s, f).is_some());
        let tol = 4.0 * CAST_TOLERANCE / translation.length() + 1e-5;
        match (hit, first) {
            (None, None) => {}
            (None, Some(f)) => panic!("{shape:?} missed; the sweep touches at {f}"),
            (Some(h), None) => {
                // A graze between samples: the hit pose must touch its target.
                let at = Isometry::new(xf.translation + translation * h.fraction, xf.rotation);
                let d = target_distance(&mut s, &h.target, &shape, &at);
                assert!(d <= 2.0 * CAST_TOLERANCE, "{shape:?}: hit at {} is {d} m from {:?}", h.fraction, h.target);
            }
            (Some(h), Some(f)) => {
                hits += 1;
                if f == 0.0 {
                    at_start += 1;
                    assert_eq!(h.fraction, 0.0);
                    continue;
                }
                let (mut lo, mut hi) = (f - 1.0 / SAMPLES as f32, f);
                for _ in 0..30 {
                    let mid = 0.5 * (lo + hi);
                    if touches_at(&mut s, mid).is_some() {
                        hi = mid;
                    } else {
                        lo = mid;
                    }
                }
                assert!(h.fraction <= hi + tol, "hit {h:?}, the sweep touches {:?} at {hi}", touches_at(&mut s, hi));
                // Earlier only by the cast's distance tolerance (in fraction, that
                // grows as the sweep grazes the surface).
                if h.fraction < hi - tol {
                    let at = Isometry::new(xf.translation + translation * h.fraction, xf.rotation);
                    let d = target_distance(&mut s, &h.target, &shape, &at);
                    assert!(d <= 2.0 * CAST_TOLERANCE, "{shape:?}: hit at {} is {d} m from {:?}", h.fraction, h.target);
                }
                assert!((h.normal.length() - 1.0).abs() < 1e-3 && h.normal.dot(translation) <= 1e-3, "{h:?}");
            }
        }
    }
    assert!(hits > 60 && at_start < hits / 2, "{hits} hits, {at_start} at the start");
}

/// A body thrown fast is found where it is after a step, though the broadphase
/// boxed it at the step's start (its tree box is stale until the next step).
#[test]
fn queries_between_steps_see_bodies_where_they_are() {
    let pool = ThreadPool::new(1);
    let mut world = World::new(WorldDef { gravity: Vec3::ZERO, ..WorldDef::default() });
    let id = world.create_body(&BodyDef { linear_velocity: Vec3::new(600.0, 0.0, 0.0), ..BodyDef::default() }).unwrap();
    world.add_shape(id, Shape::sphere(Vec3::ZERO, 0.5).unwrap(), ShapeDef::default()).unwrap();
    world.step(1.0 / 60.0, pool.jobs()).unwrap();
    let x = world.transform(id).unwrap().translation.x;
    assert!(x > 5.0, "moved to {x}");
    let down = |x: f32| Ray::new(Vec3::new(x, 10.0, 0.0), -Vec3::Y);
    let filter = QueryFilter::default();
    assert_eq!(
        world.cast_ray(&down(x), 20.0, &filter).map(|h| h.target),
        Some(QueryTarget::Body { body: id, shape: 0 })
    );
    assert_eq!(world.cast_ray(&down(0.0), 20.0, &filter), None, "found where it was");
    let mut out = Vec::new();
    world.overlap_aabb(
        &Aabb::from_center_half_extents(Vec3::new(x, 0.0, 0.0), Vec3::splat(0.1)),
        &filter,
        pool.jobs(),
        &mut out,
    );
    assert_eq!(out.len(), 1);
    // The next step finds the tree as it would have without the queries.
    world.step(1.0 / 60.0, pool.jobs()).unwrap();
    world.validate();
}

/// The callback cast: clipping to each hit finds the closest (as `cast_ray`, ties by
/// the same key), going on finds every hit (as `cast_ray_all`), 0 stops at the first
/// hit, a negative answer ignores a hit, and no hit beyond a clip is reported.
#[test]
fn callback_ray_casts_clip_ignore_and_stop() {
    let mut s = scene(31, 15);
    let mut rng = Rng(32);
    let mut all = Vec::new();
    let (mut clipped_some, mut ignored_some) = (0, 0);
    for (i, ray) in random_rays(&mut rng, 600).iter().enumerate() {
        let filter = if i % 2 == 0 { QueryFilter::default() } else { random_filter(&mut rng, &s.bodies) };
        // Closest: clip to every hit, keep the best by (t, key).
        let mut best: Option<RayHit> = None;
        let mut length = 40.0f32;
        s.world.cast_ray_with(ray, 40.0, &filter, |hit| {
            assert!(hit.t <= length, "a hit at {} beyond the clip at {length}", hit.t);
            let better = best.is_none_or(|b| (hit.t, hit.target.key()) < (b.t, b.target.key()));
            if better {
                best = Some(*hit);
            }
            length = hit.t.min(length);
            hit.t
        });
        assert_eq!(best, s.world.cast_ray(ray, 40.0, &filter), "{ray:?}");
        // All: go on after every hit.
        let mut seen = Vec::new();
        s.world.cast_ray_with(ray, 40.0, &filter, |hit| {
            seen.push(*hit);
            40.0
        });
        seen.sort_unstable_by(|a, b| a.t.total_cmp(&b.t).then(a.target.key().cmp(&b.target.key())));
        s.world.cast_ray_all(ray, 40.0, &filter, &mut all);
        assert_eq!(seen, all, "{ray:?}");
        clipped_some += (all.len() > 1) as usize;
        // Stop: one visit.
        let mut visits = 0;
        s.world.cast_ray_with(ray, 40.0, &filter, |_| {
            visits += 1;
            0.0
        });
        assert_eq!(visits, all.len().min(1));
        // Ignore the closest body: the closest of the rest, as the filter's ignore.
        if let Some(QueryTarget::Body { body, .. }) = all.first().map(|h| h.target) {
            if filter.ignore.is_none() {
                let mut rest: Option<RayHit> = None;
                s.world.cast_ray_with(ray, 40.0, &filter, |hit| match hit.target {
                    QueryTarget::Body { body: b, .. } if b == body => -1.0,
                    _ => {
                        if rest.is_none_or(|r| (hit.t, hit.target.key()) < (r.t, r.target.key())) {
                            rest = Some(*hit);
                        }
                        hit.t
                    }
                });
                let without = QueryFilter { ignore: Some(body), ..filter };
                assert_eq!(rest, s.world.cast_ray(ray, 40.0, &without), "{ray:?}");
                ignored_some += 1;
            }
        }
    }
    assert!(clipped_some > 20 && ignored_some > 20, "{clipped_some} {ignored_some}");
    // Bad rays and lengths visit nothing.
    let mut visits = 0;
    for (ray, max) in [
        (Ray { origin: Vec3::ZERO, dir: Vec3::ZERO, inv_dir: Vec3::INFINITY }, 10.0),
        (random_rays(&mut rng, 1)[0], f32::NAN),
        (random_rays(&mut rng, 1)[0], -1.0),
    ] {
        s.world.cast_ray_with(&ray, max, &QueryFilter::default(), |_| {
            visits += 1;
            1.0
        });
    }
    assert_eq!(visits, 0);
}

/// The callback sees hits in the same order for any worker count (the trees are the
/// same bits).
#[test]
fn callback_ray_order_is_the_same_for_any_worker_count() {
    let rays = random_rays(&mut Rng(42), 300);
    let order = |workers: usize| {
        let pool = ThreadPool::new(workers);
        let mut world = scene(41, 0).world;
        for _ in 0..30 {
            world.step(1.0 / 60.0, pool.jobs()).unwrap();
        }
        let mut seen = Vec::new();
        for ray in &rays {
            world.cast_ray_with(ray, 50.0, &QueryFilter::default(), |hit| {
                seen.push((hit.t.to_bits(), hit.target.key()));
                50.0
            });
        }
        seen
    };
    let one = order(1);
    assert!(one.len() > 150, "{} hits", one.len());
    assert_eq!(order(2), one);
    assert_eq!(order(8), one);
}
