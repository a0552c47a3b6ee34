//! Shape ray tests against brute force: a fine march along the ray through each
//! shape's signed distance, refined by bisection. Rays aim at random inner points,
//! at vertices and edge midpoints, along the axes, and start inside.

use glam::{Quat, Vec3};

use super::*;
use crate::math::{Isometry, Ray};
use crate::shapes::{Polytope, Shape};
use crate::spatial::tests::Rng;

/// Distance from `p` to the segment `a`-`b`.
fn segment_distance(p: Vec3, a: Vec3, b: Vec3) -> f32 {
    let ab = b - a;
    let s = if ab.length_squared() > 0.0 { ((p - a).dot(ab) / ab.length_squared()).clamp(0.0, 1.0) } else { 0.0 };
    (p - (a + ab * s)).length()
}

/// Signed distance of `p` from a solid shape's surface (hulls: the largest plane
/// distance, exact on and inside the surface, a lower bound outside).
fn signed_distance(shape: &Shape, p: Vec3) -> f32 {
    match shape {
        Shape::Sphere { center, radius } => (p - *center).length() - radius,
        Shape::Capsule { a, b, radius } => segment_distance(p, *a, *b) - radius,
        Shape::Box { half } => {
            let q = p.abs() - *half;
            q.max(Vec3::ZERO).length() + q.max_element().min(0.0)
        }
        Shape::Hull(h) => (0..h.face_count()).map(|f| h.plane(f).distance(p)).fold(f32::NEG_INFINITY, f32::max),
        Shape::Compound(c) => c
            .parts()
            .iter()
            .map(|part| signed_distance(&part.shape, part.pose.inverse_transform_point(p)))
            .fold(f32::INFINITY, f32::min),
        Shape::Triangle(_) => unreachable!("triangles have no inside"),
    }
}

/// Whether `normal` at the surface point `p` points out of the shape: out of the
/// part `p` lies on, for compounds (whose union's surface may fold there).
fn leaves(shape: &Shape, p: Vec3, normal: Vec3, delta: f32, eps: f32) -> bool {
    match shape {
        Shape::Compound(c) => c.parts().iter().any(|part| {
            let (q, n) = (part.pose.inverse_transform_point(p), part.pose.inverse_transform_vector(normal));
            signed_distance(&part.shape, q).abs() <= eps && leaves(&part.shape, q, n, delta, eps)
        }),
        _ => signed_distance(shape, p + normal * delta) >= 0.5 * delta,
    }
}

/// Checks one ray on a solid shape; returns whether it hit.
fn check_solid(shape: &Shape, ray: &Ray, max_t: f32, scale: f32) -> bool {
    const SAMPLES: usize = 4000;
    let eps = 2e-4 * scale;
    let hit = shape.ray_cast(ray, max_t);
    let sd = |t: f32| signed_distance(shape, ray.at(t));
    // The march: the first sample inside, refined between it and the sample before.
    // A ray that only touches (through a vertex or along a face, inside by no more
    // than round-off) may hit or miss.
    let step = max_t / SAMPLES as f32;
    let first_inside = (0..=SAMPLES).map(|i| i as f32 * step).find(|&t| sd(t) <= -1e-5 * scale);
    let marched = first_inside.map(|t| {
        if t == 0.0 {
            return 0.0;
        }
        let (mut lo, mut hi) = (t - step, t);
        for _ in 0..40 {
            let mid = 0.5 * (lo + hi);
            if sd(mid) <= 0.0 {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        hi
    });
    let tol = eps / ray.dir.length();
    match (hit, marched) {
        (None, Some(t)) => panic!("{shape:?}: {ray:?} missed, but the march is inside at t = {t}"),
        (None, None) => false,
        (Some(h), _) => {
            assert!(h.t >= 0.0 && h.t <= max_t, "{ray:?}: t {} out of [0, {max_t}]", h.t);
            assert!((h.normal.length() - 1.0).abs() < 1e-4, "{ray:?}: normal {:?}", h.normal);
            if let Some(t) = marched {
                // A grazing touch may come before the march's entry; never after it.
                assert!(h.t <= t + tol, "{shape:?}: {ray:?} hit at {}, the march entered at {t}", h.t);
                if h.t < t - tol {
                    assert!(sd(h.t).abs() <= eps, "{ray:?}: early hit {} off the surface by {}", h.t, sd(h.t));
                }
            } else {
                assert!(sd(h.t).abs() <= eps, "{shape:?}: {ray:?} hit at {} off the surface by {}", h.t, sd(h.t));
            }
            if h.t > 0.0 {
                let p = ray.at(h.t);
                assert!(
                    h.normal.dot(ray.dir) <= 1e-3 * ray.dir.length(),
                    "{ray:?}: normal {:?} along the ray",
                    h.normal
                );
                let delta = 1e-2 * scale;
                assert!(
                    leaves(shape, p, h.normal, delta, eps),
                    "{shape:?}: {ray:?}: normal {:?} does not leave the surface",
                    h.normal
                );
            } else {
                assert!(sd(0.0) <= eps, "{ray:?}: hit at 0 from outside ({})", sd(0.0));
            }
            true
        }
    }
}

/// Rays at `shape`: from random origins around it toward random points of its
/// bounds or in random directions, toward `targets` (vertices, edge midpoints), along the axes, and from
/// inside. Returns (hits, rays).
fn cast_many(shape: &Shape, targets: &[Vec3], seed: u64) -> (usize, usize) {
    let mut rng = Rng(seed);
    let bounds = shape.local_aabb();
    let (center, scale) = (bounds.center(), bounds.extents().max_element());
    let mut rays = Vec::new();
    let far = |rng: &mut Rng| center + rng.vec3(-1.0, 1.0).normalize_or(Vec3::X) * scale * rng.range(1.5, 4.0);
    for _ in 0..300 {
        let target = bounds.min + (bounds.max - bounds.min) * rng.vec3(0.0, 1.0);
        let origin = far(&mut rng);
        rays.push((Ray::new(origin, (target - origin) * rng.range(0.2, 3.0)), 4.0 * scale));
    }
    for _ in 0..100 {
        let origin = far(&mut rng);
        rays.push((Ray::new(origin, rng.vec3(-1.0, 1.0)), 6.0 * scale));
    }
    for &target in targets {
        let origin = far(&mut rng);
        rays.push((Ray::new(origin, target - origin), 2.0));
    }
    for axis in [Vec3::X, Vec3::Y, Vec3::Z, -Vec3::X, -Vec3::Y, -Vec3::Z] {
        for _ in 0..10 {
            let offset = (bounds.max - bounds.min) * (rng.vec3(0.0, 1.0) - 0.5) * (Vec3::ONE - axis.abs());
            rays.push((Ray::new(center + offset - axis * scale * 3.0, axis), 6.0 * scale));
        }
    }
    for _ in 0..40 {
        let origin = center + (rng.vec3(0.0, 1.0) - 0.5) * 0.2 * (bounds.max - bounds.min);
        rays.push((Ray::new(origin, rng.vec3(-1.0, 1.0)), 2.0 * scale));
    }
    let hits = rays.iter().filter(|(ray, max_t)| check_solid(shape, ray, *max_t, scale)).count();
    (hits, rays.len())
}

fn random_hull(rng: &mut Rng, n: usize) -> Shape {
    let points: Vec<Vec3> = (0..n).map(|_| rng.vec3(-1.0, 1.0).normalize_or(Vec3::Y) * rng.range(0.8, 1.6)).collect();
    Shape::hull(&points).unwrap()
}

fn hull_targets(shape: &Shape) -> Vec<Vec3> {
    let Shape::Hull(h) = shape else { unreachable!() };
    let mut out = h.vertices().to_vec();
    out.extend((0..h.edge_count()).map(|e| {
        let [a, b] = h.edge_vertices(e);
        (h.vertex(a as usize) + h.vertex(b as usize)) * 0.5
    }));
    out
}

#[test]
fn solid_shapes_match_the_march() {
    let mut rng = Rng(3);
    let box_shape = Shape::cuboid(Vec3::new(0.5, 1.2, 0.3)).unwrap();
    let half = Vec3::new(0.5, 1.2, 0.3);
    let mut box_targets: Vec<Vec3> =
        (0..8).map(|i| half * Vec3::new([-1.0, 1.0][i & 1], [-1.0, 1.0][(i >> 1) & 1], [-1.0, 1.0][i >> 2])).collect();
    box_targets.extend((0..12).map(|i| {
        let mut p = half;
        p[i % 3] = 0.0;
        p * Vec3::new([-1.0, 1.0][(i / 3) & 1], [-1.0, 1.0][(i / 6) & 1], 1.0)
    }));
    let hulls: Vec<Shape> = [6, 12, 32, 80].iter().map(|&n| random_hull(&mut rng, n)).collect();
    let mut cases: Vec<(&str, Shape, Vec<Vec3>)> = vec![
        ("sphere", Shape::sphere(Vec3::new(0.2, -0.1, 0.3), 0.7).unwrap(), vec![]),
        (
            "capsule",
            Shape::capsule(Vec3::new(-0.5, -0.4, 0.1), Vec3::new(0.6, 0.5, -0.2), 0.35).unwrap(),
            vec![Vec3::new(-0.5, -0.4, 0.1), Vec3::new(0.6, 0.5, -0.2)],
        ),
        ("point capsule", Shape::capsule(Vec3::ONE, Vec3::ONE, 0.5).unwrap(), vec![]),
        ("box", box_shape.clone(), box_targets.clone()),
    ];
    for (i, h) in hulls.iter().enumerate() {
        cases.push((["hull 6", "hull 12", "hull 32", "hull 80"][i], h.clone(), hull_targets(h)));
    }
    let compound = Shape::compound([
        (Isometry::new(Vec3::new(1.0, 0.0, 0.0), Quat::from_rotation_z(0.7)), box_shape),
        (Isometry::from_translation(Vec3::new(-0.8, 0.3, 0.0)), Shape::sphere(Vec3::ZERO, 0.6).unwrap()),
        (Isometry::new(Vec3::new(0.0, -1.0, 0.5), Quat::from_rotation_x(1.1)), hulls[1].clone()),
    ])
    .unwrap();
    cases.push(("compound", compound, vec![]));
    for (k, (name, shape, targets)) in cases.iter().enumerate() {
        let (hits, rays) = cast_many(shape, targets, 100 + k as u64);
        assert!(hits * 3 > rays, "{name}: only {hits} of {rays} rays hit");
        assert!(hits < rays, "{name}: every ray hit");
    }
}

#[test]
fn a_ray_starting_inside_hits_at_zero_facing_it() {
    let shapes = [
        Shape::sphere(Vec3::ZERO, 1.0).unwrap(),
        Shape::capsule(-Vec3::X, Vec3::X, 0.5).unwrap(),
        Shape::cuboid(Vec3::ONE).unwrap(),
        random_hull(&mut Rng(5), 20),
    ];
    for shape in &shapes {
        let hit = shape.ray_cast(&Ray::new(Vec3::new(0.0, 0.1, 0.0), Vec3::new(0.0, 0.0, 2.0)), 10.0).unwrap();
        assert_eq!(hit, ShapeRayHit { t: 0.0, normal: -Vec3::Z }, "{shape:?}");
    }
}

#[test]
fn rays_too_short_or_invalid_miss() {
    let sphere = Shape::sphere(Vec3::ZERO, 1.0).unwrap();
    let ray = Ray::new(Vec3::new(-3.0, 0.0, 0.0), Vec3::X);
    assert_eq!(sphere.ray_cast(&ray, 10.0).map(|h| h.t), Some(2.0));
    assert_eq!(sphere.ray_cast(&ray, 2.0).map(|h| h.t), Some(2.0), "max_t is inclusive");
    assert_eq!(sphere.ray_cast(&ray, 1.999), None);
    assert_eq!(sphere.ray_cast(&ray, -1.0), None);
    assert_eq!(sphere.ray_cast(&ray, f32::NAN), None);
    assert_eq!(sphere.ray_cast(&Ray::new(Vec3::new(-3.0, 0.0, 0.0), Vec3::ZERO), 10.0), None);
    assert_eq!(sphere.ray_cast(&Ray::new(Vec3::new(f32::NAN, 0.0, 0.0), Vec3::X), 10.0), None);
    // Pointing away from a shape behind the origin.
    assert_eq!(sphere.ray_cast(&Ray::new(Vec3::new(-3.0, 0.0, 0.0), -Vec3::X), 10.0), None);
    for shape in [Shape::cuboid(Vec3::ONE).unwrap(), random_hull(&mut Rng(9), 16)] {
        assert_eq!(shape.ray_cast(&Ray::new(Vec3::new(-5.0, 0.0, 0.0), -Vec3::X), 100.0), None);
    }
}

#[test]
fn triangles_match_barycentric_brute_force() {
    let mut rng = Rng(21);
    let (mut hits, mut checked) = (0, 0);
    for _ in 0..200 {
        let v = [rng.vec3(-1.0, 1.0), rng.vec3(-1.0, 1.0), rng.vec3(-1.0, 1.0)];
        let Ok(shape) = Shape::triangle(v) else { continue };
        let n = (v[1] - v[0]).cross(v[2] - v[0]);
        for _ in 0..20 {
            let origin = rng.vec3(-3.0, 3.0);
            let target = rng.vec3(-1.0, 1.0);
            let ray = Ray::new(origin, target - origin);
            let hit = shape.ray_cast(&ray, 1.5);
            // Brute force: the plane's crossing, then its barycentric coordinates.
            let den = n.dot(ray.dir);
            if den.abs() < 1e-3 * n.length() * ray.dir.length() {
                continue;
            }
            let t = n.dot(v[0] - origin) / den;
            let p = ray.at(t);
            let area = n.length_squared();
            let bary = [
                (v[2] - v[1]).cross(p - v[1]).dot(n) / area,
                (v[0] - v[2]).cross(p - v[2]).dot(n) / area,
                (v[1] - v[0]).cross(p - v[0]).dot(n) / area,
            ];
            let margin = bary.iter().fold(f32::INFINITY, |m, &b| m.min(b)).min(t).min(1.5 - t);
            if margin.abs() < 1e-4 {
                continue;
            }
            checked += 1;
            assert_eq!(hit.is_some(), margin > 0.0, "{v:?} {ray:?}: t {t}, barycentrics {bary:?}");
            if let Some(h) = hit {
                hits += 1;
                assert!((h.t - t).abs() < 1e-4, "{} vs {t}", h.t);
                assert!((h.normal - n.normalize()).length() < 1e-5, "the front normal, from either side");
            }
        }
    }
    assert!(checked > 3000 && hits > 300, "{checked} rays checked, {hits} hits");
}
