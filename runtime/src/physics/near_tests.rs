//! Tests of the narrowphase's first test (`near.rs`).

use glam::{Quat, Vec3};

use super::*;
use crate::collide::shape_distance;
use crate::collide::tests::lcg;
use crate::shapes::Polytope;
use crate::spatial::TreeConfig;

fn random_rotation(seed: &mut u64) -> Quat {
    Quat::from_xyzw(lcg(seed), lcg(seed), lcg(seed), lcg(seed) + 0.01).normalize()
}

/// One of each kind of shape, off its frame's origin where it can be.
fn random_shape(seed: &mut u64, kind: usize) -> Shape {
    let mut point = || Vec3::new(lcg(seed), lcg(seed), lcg(seed));
    match kind % 5 {
        0 => Shape::sphere(0.2 * point(), 0.3).unwrap(),
        1 => Shape::capsule(0.4 * point(), 0.4 * point(), 0.2).unwrap(),
        2 => Shape::cuboid(Vec3::new(0.5, 0.2, 0.3)).unwrap(),
        3 => {
            let offset = 0.3 * point();
            Shape::hull(&(0..24).map(|_| 0.6 * point() + offset).collect::<Vec<_>>()).unwrap()
        }
        _ => Shape::compound([
            (Isometry::new(Vec3::X * 0.4, Quat::IDENTITY), Shape::cuboid(Vec3::splat(0.2)).unwrap()),
            (Isometry::new(-Vec3::Y * 0.3, random_rotation(seed)), Shape::capsule(Vec3::ZERO, Vec3::X, 0.1).unwrap()),
        ])
        .unwrap(),
    }
}

/// A hull's placed box holds every vertex turned into place and touches the
/// farthest ones along each axis, at any rotation and far from the origin.
#[test]
fn a_placed_hull_box_is_exact() {
    let mut seed = 3u64;
    for case in 0..200 {
        let n = 4 + case % 61;
        let points: Vec<Vec3> = (0..n).map(|_| Vec3::new(lcg(&mut seed), lcg(&mut seed), lcg(&mut seed))).collect();
        let Ok(Shape::Hull(hull)) = Shape::hull(&points) else { continue };
        let far = if case % 2 == 0 { Vec3::ZERO } else { Vec3::new(900.0, -40.0, 300.0) };
        let xf =
            Isometry::new(far + Vec3::new(lcg(&mut seed), lcg(&mut seed), lcg(&mut seed)), random_rotation(&mut seed));
        let bounds = hull.placed_bounds(&xf);
        let placed: Vec<Vec3> = (0..hull.vertex_count()).map(|i| xf.transform_point(hull.vertex(i))).collect();
        let tolerance = 1e-5 * (1.0 + far.length());
        let (mut low, mut high) = (Vec3::splat(f32::INFINITY), Vec3::splat(f32::NEG_INFINITY));
        for p in &placed {
            assert!(p.cmpge(bounds.min - tolerance).all() && p.cmple(bounds.max + tolerance).all(), "case {case}");
            (low, high) = (low.min(*p), high.max(*p));
        }
        assert!((low - bounds.min).abs().max_element() <= tolerance, "case {case}: {low} against {}", bounds.min);
        assert!((high - bounds.max).abs().max_element() <= tolerance, "case {case}: {high} against {}", bounds.max);
    }
}

/// Random pairs of every kind of shape, near each other at random poses: a pair
/// the records rule out always lies farther apart than the margin (GJK's distance),
/// with both shapes recorded and with one standing for its fat box; the test rules
/// out most of the pairs apart by more than twice the margin; and a record left from
/// an earlier narrowphase is never read.
#[test]
fn pairs_ruled_out_lie_farther_apart_than_the_margin() {
    let mut seed = 11u64;
    let margin = 0.04;
    let (mut ruled_out, mut far_apart) = (0, 0);
    for case in 0..3000 {
        let (a, b) = (random_shape(&mut seed, case), random_shape(&mut seed, case / 5));
        let far = if case % 3 == 0 { Vec3::new(-500.0, 80.0, 1200.0) } else { Vec3::ZERO };
        let xa = Isometry::new(far, random_rotation(&mut seed));
        let xb = Isometry::new(
            far + 1.4 * Vec3::new(lcg(&mut seed), lcg(&mut seed), lcg(&mut seed)),
            random_rotation(&mut seed),
        );
        let mut tree = DynamicTree::new(TreeConfig::default());
        let (pa, pb) = (tree.create_proxy(&a.aabb(&xa), 0), tree.create_proxy(&b.aabb(&xb), 1));
        let mut near = Near::default();
        let (records, stamp) = near.restart(tree.proxy_capacity());
        // SAFETY: one writer, no reader until the column is dropped.
        unsafe {
            *records.get(pa.index()) = NearRecord::of(&a, &xa, stamp);
            if case % 4 != 0 {
                *records.get(pb.index()) = NearRecord::of(&b, &xb, stamp);
            }
        }
        let distance = shape_distance(&a, &xa, &b, &xb).map_or(0.0, |d| d.distance);
        let apart = near.apart(pa, pb, &tree, margin);
        if apart {
            assert!(distance > margin, "case {case}: ruled out at distance {distance}");
            ruled_out += 1;
        }
        if distance > 2.0 * margin {
            far_apart += 1;
        }
        assert_eq!(near.kind(pa), Some(Kind::of(&a)), "case {case}");
        near.restart(tree.proxy_capacity());
        assert!(!near.apart(pa, pb, &tree, margin), "case {case}: an earlier narrowphase's records were read");
        assert_eq!(near.kind(pa), None, "case {case}");
    }
    println!("{ruled_out} of the {far_apart} pairs apart by twice the margin ruled out");
    assert!(2 * ruled_out > far_apart, "{ruled_out} ruled out of {far_apart} far apart");
}
