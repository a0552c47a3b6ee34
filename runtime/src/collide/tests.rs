//! Narrowphase tests across shape pairs: analytic cases, randomised comparisons with
//! GJK, and degenerate input.

use glam::{Quat, Vec3};

use super::*;
use crate::math::{Aabb, Isometry};
use crate::shapes::{ConvexHull, Shape};

/// A tiny deterministic generator for the narrowphase and physics tests: uniform in
/// `[-1, 1)`.
pub(crate) fn lcg(seed: &mut u64) -> f32 {
    *seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    ((*seed >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
}

fn at(x: f32, y: f32, z: f32) -> Isometry {
    Isometry::from_translation(Vec3::new(x, y, z))
}

fn unit_box() -> Shape {
    Shape::cuboid(Vec3::splat(0.5)).unwrap()
}

/// Two unit boxes stacked as in a pyramid, the top one a few millimetres off
/// along x and z and turned a little: every clipped point lies on the overlap of the
/// two faces, however little a corner pokes past a side plane.
#[test]
fn clipped_points_stay_inside_the_reference_face() {
    for (offset, turn) in [(0.003, 0.0), (0.0005, 0.0), (0.004, 0.002), (0.25, 0.01), (-0.002, -0.003)] {
        let xf = Isometry::new(Vec3::new(offset, 0.995, -offset), Quat::from_rotation_y(turn));
        let m = collide(&unit_box(), &Isometry::IDENTITY, &unit_box(), &xf, 0.02);
        assert_eq!(m.count, 4, "offset {offset}, turn {turn}: {m:?}");
        for p in m.points() {
            // Inside the lower box's top face and the upper box's bottom face.
            let (own, other) = (p.point, xf.inverse_transform_point(p.point));
            assert!(own.x.abs() <= 0.5 + 1e-6 && own.z.abs() <= 0.5 + 1e-6, "{offset} {turn}: {p:?}");
            assert!(other.x.abs() <= 0.5 + 1e-6 && other.z.abs() <= 0.5 + 1e-6, "{offset} {turn}: {p:?}");
            assert!((p.separation + 0.005).abs() < 1e-4, "{p:?}");
        }
    }
}

#[test]
fn box_resting_on_box_has_four_points_at_the_exact_depth() {
    let ground = Shape::cuboid(Vec3::new(5.0, 0.5, 5.0)).unwrap();
    // The unit box sunk 0.01 into the ground's top face (y = 0.5), turned about y.
    let xf = Isometry::new(Vec3::new(0.3, 0.99, -0.2), Quat::from_rotation_y(0.4));
    let m = collide(&ground, &Isometry::IDENTITY, &unit_box(), &xf, 0.02);
    assert_eq!(m.count, 4, "{m:?}");
    assert!(m.normal.abs_diff_eq(Vec3::Y, 1e-6));
    for p in m.points() {
        assert!((p.separation + 0.01).abs() < 1e-5, "{p:?}");
        assert!((p.point.y - 0.495).abs() < 1e-5);
    }
    // The four points are the box's bottom corners.
    let mut corners: Vec<Vec3> = m.points().iter().map(|p| xf.inverse_transform_point(p.point)).collect();
    corners.sort_by(|a, b| a.x.total_cmp(&b.x).then(a.z.total_cmp(&b.z)));
    for c in corners {
        assert!((c.x.abs() - 0.5).abs() < 1e-4 && (c.z.abs() - 0.5).abs() < 1e-4, "{c}");
    }
    // Ids are distinct and stable under a small move.
    let m2 = collide(
        &ground,
        &Isometry::IDENTITY,
        &unit_box(),
        &at(0.31, 0.99, -0.2).mul(&Isometry::new(Vec3::ZERO, Quat::from_rotation_y(0.4))),
        0.02,
    );
    let ids = |m: &Manifold| {
        let mut v: Vec<u32> = m.points().iter().map(|p| p.id).collect();
        v.sort();
        v
    };
    assert_eq!(ids(&m), ids(&m2));
    let mut unique = ids(&m);
    unique.dedup();
    assert_eq!(unique.len(), 4);
    // Swapping the pair flips the normal.
    let f = collide(&unit_box(), &xf, &ground, &Isometry::IDENTITY, 0.02);
    assert_eq!(f.count, 4);
    assert!(f.normal.abs_diff_eq(-Vec3::Y, 1e-6));
    // Apart beyond the margin: nothing; within it: speculative points.
    assert!(collide(&ground, &Isometry::IDENTITY, &unit_box(), &at(0.0, 1.1, 0.0), 0.05).is_empty());
    let spec = collide(&ground, &Isometry::IDENTITY, &unit_box(), &at(0.0, 1.03, 0.0), 0.05);
    assert_eq!(spec.count, 4);
    assert!((spec.min_separation() - 0.03).abs() < 1e-5);
}

#[test]
fn crossed_edges_give_the_edge_normal() {
    // Two long thin boxes: A along x, B along z, each rotated 45 degrees about its long
    // axis, so a ridge of A meets a ridge of B: the contact normal is the cross product
    // of the edges, +y.
    let bar = Shape::cuboid(Vec3::new(2.0, 0.25, 0.25)).unwrap();
    let a = Isometry::new(Vec3::ZERO, Quat::from_rotation_x(std::f32::consts::FRAC_PI_4));
    let ridge = 0.25 * std::f32::consts::SQRT_2;
    let b = Isometry::new(
        Vec3::new(0.1, 2.0 * ridge - 0.02, 0.05),
        Quat::from_rotation_y(std::f32::consts::FRAC_PI_2) * Quat::from_rotation_x(std::f32::consts::FRAC_PI_4),
    );
    let m = collide(&bar, &a, &bar, &b, 0.01);
    assert_eq!(m.count, 1, "{m:?}");
    assert!(m.normal.abs_diff_eq(Vec3::Y, 1e-4), "{}", m.normal);
    assert!((m.points[0].separation + 0.02).abs() < 1e-4);
    assert!(m.points[0].point.abs_diff_eq(Vec3::new(0.1, ridge - 0.01, 0.0), 1e-3), "{}", m.points[0].point);
}

#[test]
fn rounded_pairs() {
    let ball = Shape::sphere(Vec3::ZERO, 0.5).unwrap();
    let m = collide(&ball, &Isometry::IDENTITY, &ball, &at(0.9, 0.0, 0.0), 0.0);
    assert_eq!(m.count, 1);
    assert!((m.points[0].separation + 0.1).abs() < 1e-6 && m.normal == Vec3::X);
    assert!(m.points[0].point.abs_diff_eq(Vec3::new(0.45, 0.0, 0.0), 1e-6));
    // Sphere on a capsule's side.
    let cap = Shape::capsule(Vec3::new(-1.0, 0.0, 0.0), Vec3::new(1.0, 0.0, 0.0), 0.25).unwrap();
    let m = collide(&cap, &Isometry::IDENTITY, &ball, &at(0.4, 0.7, 0.0), 0.0);
    assert!((m.points[0].separation + 0.05).abs() < 1e-6 && m.normal.abs_diff_eq(Vec3::Y, 1e-6));
    // Parallel capsules overlapping by half their length: two points at the overlap's ends.
    let m = collide(&cap, &Isometry::IDENTITY, &cap, &at(1.0, 0.45, 0.0), 0.0);
    assert_eq!(m.count, 2, "{m:?}");
    let mut xs: Vec<f32> = m.points().iter().map(|p| p.point.x).collect();
    xs.sort_by(f32::total_cmp);
    assert!((xs[0] - 0.0).abs() < 1e-5 && (xs[1] - 1.0).abs() < 1e-5, "{xs:?}");
    assert!(m.points().iter().all(|p| (p.separation + 0.05).abs() < 1e-5));
    // Crossed capsules: one point.
    let m = collide(
        &cap,
        &Isometry::IDENTITY,
        &cap,
        &Isometry::new(Vec3::new(0.2, 0.45, 0.3), Quat::from_rotation_y(1.2)),
        0.0,
    );
    assert_eq!(m.count, 1);
    assert!(m.normal.abs_diff_eq(Vec3::Y, 1e-5));
}

#[test]
fn rounded_against_boxes() {
    let b = unit_box();
    let ball = Shape::sphere(Vec3::ZERO, 0.25).unwrap();
    // Separated from the top face, then sunk in, then centre inside the box.
    for (y, sep) in [(0.8, 0.05), (0.7, -0.05), (0.4, -0.35)] {
        let m = collide(&b, &Isometry::IDENTITY, &ball, &at(0.1, y, 0.2), 0.1);
        assert_eq!(m.count, 1, "y {y}");
        assert!(m.normal.abs_diff_eq(Vec3::Y, 1e-5), "y {y}: {}", m.normal);
        assert!((m.points[0].separation - sep).abs() < 1e-5, "y {y}: {m:?}");
    }
    // Near a corner the normal points from the corner to the centre.
    let m = collide(&b, &Isometry::IDENTITY, &ball, &at(0.6, 0.6, 0.6), 0.1);
    assert!(m.normal.abs_diff_eq(Vec3::ONE.normalize(), 1e-5));
    // A capsule lying on the top face: two points; sunk halfway into it: still two.
    let cap = Shape::capsule(Vec3::new(-0.3, 0.0, 0.0), Vec3::new(0.3, 0.0, 0.0), 0.1).unwrap();
    for (y, sep) in [(0.61, 0.01), (0.55, -0.05), (0.45, -0.15)] {
        let m = collide(
            &b,
            &Isometry::IDENTITY,
            &cap,
            &Isometry::new(Vec3::new(0.0, y, 0.1), Quat::from_rotation_y(0.3)),
            0.05,
        );
        assert_eq!(m.count, 2, "y {y}: {m:?}");
        assert!(m.normal.abs_diff_eq(Vec3::Y, 1e-5));
        assert!(m.points().iter().all(|p| (p.separation - sep).abs() < 1e-5), "y {y}: {m:?}");
    }
    // A capsule longer than the box, across its top: clipped to the face.
    let long = Shape::capsule(Vec3::new(-2.0, 0.0, 0.0), Vec3::new(2.0, 0.0, 0.0), 0.1).unwrap();
    let m = collide(&b, &Isometry::IDENTITY, &long, &at(0.0, 0.58, 0.0), 0.05);
    assert_eq!(m.count, 2);
    let mut xs: Vec<f32> = m.points().iter().map(|p| p.point.x).collect();
    xs.sort_by(f32::total_cmp);
    assert!((xs[0] + 0.5).abs() < 1e-5 && (xs[1] - 0.5).abs() < 1e-5, "{xs:?}");
    // A capsule standing upright with its core deep inside: pushed out through the top.
    let upright = Shape::capsule(Vec3::new(0.0, -0.2, 0.0), Vec3::new(0.0, 0.2, 0.0), 0.1).unwrap();
    let m = collide(&b, &Isometry::IDENTITY, &upright, &at(0.0, 0.4, 0.0), 0.0);
    assert!(m.normal.abs_diff_eq(Vec3::Y, 1e-5), "{m:?}");
    assert!((m.min_separation() + 0.4).abs() < 1e-5, "{m:?}");
}

#[test]
fn compound_reports_each_touching_part() {
    let dumbbell = Shape::compound([
        (at(-1.0, 0.0, 0.0), Shape::sphere(Vec3::ZERO, 0.5).unwrap()),
        (at(1.0, 0.0, 0.0), Shape::sphere(Vec3::ZERO, 0.5).unwrap()),
        (Isometry::IDENTITY, Shape::capsule(Vec3::new(-1.0, 0.0, 0.0), Vec3::new(1.0, 0.0, 0.0), 0.1).unwrap()),
    ])
    .unwrap();
    let ground = Shape::cuboid(Vec3::new(5.0, 0.5, 5.0)).unwrap();
    let mut seen = Vec::new();
    collide_all(&ground, &Isometry::IDENTITY, &dumbbell, &at(0.0, 0.99, 0.0), 0.0, &mut |a, b, m| {
        seen.push((a, b, m.count, m.min_separation()));
    });
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert_eq!((seen[0].0, seen[0].1, seen[1].1), (0, 0, 1));
    assert!(seen.iter().all(|s| (s.3 + 0.01).abs() < 1e-5));
}

fn random_hull(seed: &mut u64, n: usize) -> ConvexHull {
    let pts: Vec<Vec3> =
        (0..n).map(|_| Vec3::new(lcg(seed), lcg(seed), lcg(seed)) * Vec3::new(1.0, 0.6, 0.8)).collect();
    ConvexHull::new(&pts).unwrap()
}

/// The SAT separation is a lower bound of the GJK distance for separated pairs and
/// equal to it when the closest features are a face and a vertex.
#[test]
fn sat_agrees_with_gjk_on_separated_hulls() {
    let mut seed = 99;
    let mut exact = 0;
    for case in 0..200 {
        let (ha, hb) = (random_hull(&mut seed, 16), random_hull(&mut seed, 16));
        let xa = Isometry::new(
            Vec3::new(lcg(&mut seed), lcg(&mut seed), lcg(&mut seed)) * 3.0,
            Quat::from_rotation_z(lcg(&mut seed)),
        );
        let dir = Vec3::new(lcg(&mut seed), lcg(&mut seed), lcg(&mut seed)).normalize_or(Vec3::Y);
        let xb = Isometry::new(xa.translation + dir * 2.2, Quat::from_rotation_x(lcg(&mut seed) * 3.0));
        let (sa, sb) = (Shape::Hull(ha.clone().into()), Shape::Hull(hb.clone().into()));
        let g = distance(
            &Proxy { points: ha.vertices(), radius: 0.0 },
            &xa,
            &Proxy { points: hb.vertices(), radius: 0.0 },
            &xb,
        );
        let m = collide(&sa, &xa, &sb, &xb, 10.0);
        if g.overlap {
            assert!(m.count > 0 && m.min_separation() <= 1e-4, "case {case}");
            continue;
        }
        assert!(m.count > 0, "case {case}");
        let rel = xa.inv_mul(&xb);
        let fa = super::sat::query_faces_a(&ha, &hb, &rel, None).separation;
        let fb = super::sat::query_faces_b(&ha, &hb, &rel, None, f32::NEG_INFINITY).separation;
        let e = super::sat::query_edges(&ha, &hb, &rel, &|_| false, None, f32::NEG_INFINITY).0;
        let sat = fa.max(fb).max(e);
        assert!(sat <= g.distance + 1e-4, "case {case}: sat {sat} > gjk {}", g.distance);
        if (sat - g.distance).abs() < 1e-4 {
            exact += 1;
        }
        // Clipped points never report less than the axis's separation.
        assert!(m.min_separation() >= fa.min(fb) - 1e-4, "case {case}: {} {fa} {fb} {e} {m:?}", m.min_separation());
        assert!(m.points().iter().all(|p| p.point.is_finite() && p.separation.is_finite()));
    }
    assert!(exact > 40, "only {exact} of 200 matched exactly");
    // Face-vertex by construction: B's lowest vertex right above A's top face.
    for _ in 0..100 {
        let hb = random_hull(&mut seed, 16);
        let lowest = hb.vertices().iter().copied().min_by(|a, b| a.y.total_cmp(&b.y)).unwrap();
        let gap = 0.05 + lcg(&mut seed).abs() * 0.5;
        let xb = Isometry::from_translation(Vec3::new(0.0, 0.5 + gap, 0.0) - lowest);
        let m = collide(
            &Shape::cuboid(Vec3::new(3.0, 0.5, 3.0)).unwrap(),
            &Isometry::IDENTITY,
            &Shape::Hull(hb.into()),
            &xb,
            1.0,
        );
        assert!((m.min_separation() - gap).abs() < 1e-4, "{} vs {gap}", m.min_separation());
        assert!(m.normal.abs_diff_eq(Vec3::Y, 1e-5));
    }
}

/// Penetrating hulls: pushing B out along the manifold's normal takes nearly the
/// least translation over all tested axes (the axis choice only trades a little depth
/// for stable features), and no point reports more depth than that push.
#[test]
fn penetrating_hulls_resolve_along_the_normal() {
    let mut seed = 5;
    let mut tested = 0;
    for case in 0..300 {
        let (ha, hb) = (random_hull(&mut seed, 20), random_hull(&mut seed, 20));
        let xa = Isometry::new(Vec3::ZERO, Quat::from_rotation_y(lcg(&mut seed) * 3.0));
        let offset = Vec3::new(lcg(&mut seed), lcg(&mut seed), lcg(&mut seed)) * 0.6;
        let xb = Isometry::new(offset, Quat::from_rotation_x(lcg(&mut seed) * 3.0));
        let (sa, sb) = (Shape::Hull(ha.clone().into()), Shape::Hull(hb.clone().into()));
        let g = distance(
            &Proxy { points: ha.vertices(), radius: 0.0 },
            &xa,
            &Proxy { points: hb.vertices(), radius: 0.0 },
            &xb,
        );
        if !g.overlap {
            continue;
        }
        tested += 1;
        let m = collide(&sa, &xa, &sb, &xb, 0.0);
        assert!(m.count > 0 && m.normal.is_normalized(), "case {case}: {m:?}");
        // The push along the normal: A's extent beyond B's start on that axis.
        let n = m.normal;
        let a_max = ha.vertices().iter().map(|&v| n.dot(xa.transform_point(v))).fold(f32::MIN, f32::max);
        let b_min = hb.vertices().iter().map(|&v| n.dot(xb.transform_point(v))).fold(f32::MAX, f32::min);
        let push = a_max - b_min;
        let rel = xa.inv_mul(&xb);
        let best = -super::sat::query_faces_a(&ha, &hb, &rel, None)
            .separation
            .max(super::sat::query_faces_b(&ha, &hb, &rel, None, f32::NEG_INFINITY).separation)
            .max(super::sat::query_edges(&ha, &hb, &rel, &|_| false, None, f32::NEG_INFINITY).0);
        assert!(push <= best / 0.9 + 0.01, "case {case}: push {push} vs least {best}");
        assert!(-m.min_separation() <= push + 1e-4, "case {case}: depth {} > push {push}", -m.min_separation());
        let moved = Isometry { translation: xb.translation + n * (push + 1e-3), ..xb };
        let g2 = distance(
            &Proxy { points: ha.vertices(), radius: 0.0 },
            &xa,
            &Proxy { points: hb.vertices(), radius: 0.0 },
            &moved,
        );
        assert!(!g2.overlap && g2.distance > 0.0, "case {case}: still overlapping after the push");
    }
    assert!(tested > 100, "{tested}");
}

/// No NaN or panic for coincident centres, exact touching and degenerate poses.
#[test]
fn degenerate_pairs_are_finite() {
    let mut seed = 1;
    let shapes = [
        Shape::sphere(Vec3::ZERO, 0.5).unwrap(),
        Shape::capsule(Vec3::new(0.0, -0.5, 0.0), Vec3::new(0.0, 0.5, 0.0), 0.3).unwrap(),
        Shape::capsule(Vec3::ZERO, Vec3::ZERO, 0.3).unwrap(),
        unit_box(),
        Shape::Hull(random_hull(&mut seed, 12).into()),
        Shape::triangle([Vec3::new(-1.0, 0.0, -1.0), Vec3::new(0.0, 0.0, 1.0), Vec3::new(1.0, 0.0, -1.0)]).unwrap(),
    ];
    let poses = [
        Isometry::IDENTITY,
        at(1.0, 0.0, 0.0),
        at(0.0, 0.5, 0.0),
        at(0.0, 1e-7, 0.0),
        Isometry::new(Vec3::ZERO, Quat::from_rotation_x(std::f32::consts::FRAC_PI_2)),
    ];
    for a in &shapes {
        for b in &shapes {
            for xf in &poses {
                let m = collide(a, &Isometry::IDENTITY, b, xf, 0.1);
                assert!(m.normal.is_finite(), "{a:?} {b:?} {xf:?}");
                for p in m.points() {
                    assert!(p.point.is_finite() && p.separation.is_finite(), "{a:?} {b:?} {xf:?}: {m:?}");
                }
                if m.count > 0 {
                    assert!(m.normal.is_normalized(), "{a:?} {b:?} {xf:?}: {m:?}");
                }
            }
        }
    }
}

#[test]
fn whole_shape_distance_and_time_of_impact_cover_compound_parts() {
    use crate::collide::{shape_distance, shape_time_of_impact, Sweep, ToiState};
    let cube = Shape::cuboid(Vec3::splat(0.5)).unwrap();
    let pair = Shape::compound([
        (Isometry::from_translation(Vec3::new(-2.0, 0.0, 0.0)), cube.clone()),
        (Isometry::from_translation(Vec3::new(2.0, 0.0, 0.0)), cube),
    ])
    .unwrap();
    let ball = Shape::sphere(Vec3::ZERO, 0.5).unwrap();
    // Above the right-hand cube: 3 - 0.5 - 0.5 apart, closest points on its top face.
    let at = Isometry::from_translation(Vec3::new(2.0, 3.0, 0.0));
    let d = shape_distance(&pair, &Isometry::IDENTITY, &ball, &at).unwrap();
    assert!((d.distance - 2.0).abs() < 1e-5 && d.normal.abs_diff_eq(Vec3::Y, 1e-5), "{d:?}");
    assert!(d.point_a.abs_diff_eq(Vec3::new(2.0, 0.5, 0.0), 1e-5));
    // Dropping 6 m: touches the right-hand cube a third of the way down.
    let fall = Sweep::translation(at, Vec3::new(0.0, -6.0, 0.0));
    let toi = shape_time_of_impact(&ball, &fall, &pair, &Sweep::fixed(Isometry::IDENTITY), 1.0, 0.0, 1e-4);
    assert_eq!(toi.state, ToiState::Hit, "{toi:?}");
    assert!((toi.t - 1.0 / 3.0).abs() < 1e-3 && toi.normal.abs_diff_eq(-Vec3::Y, 1e-3), "{toi:?}");
    // Between the cubes it falls through; inside one it starts overlapping.
    let gap = Sweep::translation(Isometry::from_translation(Vec3::new(0.0, 3.0, 0.0)), Vec3::new(0.0, -6.0, 0.0));
    let toi = shape_time_of_impact(&ball, &gap, &pair, &Sweep::fixed(Isometry::IDENTITY), 1.0, 0.0, 1e-4);
    assert_eq!(toi.state, ToiState::Separated);
    let inside = Sweep::fixed(Isometry::from_translation(Vec3::new(-2.0, 0.2, 0.0)));
    let toi = shape_time_of_impact(&ball, &inside, &pair, &Sweep::fixed(Isometry::IDENTITY), 1.0, 0.0, 1e-4);
    assert_eq!((toi.state, toi.t), (ToiState::Overlapping, 0.0));
}

/// A box that does not say it is one: `query_edges` takes the general arc test.
struct GeneralBox(crate::shapes::BoxPoly);

impl crate::shapes::Polytope for GeneralBox {
    fn vertex_count(&self) -> usize {
        self.0.vertex_count()
    }
    fn vertex(&self, i: usize) -> Vec3 {
        self.0.vertex(i)
    }
    fn face_count(&self) -> usize {
        self.0.face_count()
    }
    fn plane(&self, face: usize) -> crate::shapes::Plane {
        self.0.plane(face)
    }
    fn face_vertices(&self, face: usize, out: &mut [u16; crate::shapes::MAX_FACE_VERTICES]) -> usize {
        self.0.face_vertices(face, out)
    }
    fn edge_count(&self) -> usize {
        self.0.edge_count()
    }
    fn edge(&self, e: usize) -> crate::shapes::PolyEdge {
        self.0.edge(e)
    }
    fn centroid(&self) -> Vec3 {
        self.0.centroid()
    }
}

/// A box's edge query by signs (`sat::box_arcs_crossing`) gives the same bits as the
/// general Gauss-map test, against triangles (with inactive edges) and hulls, in
/// random placements, axis-aligned ones (arc end points on the box's great circles,
/// where the signs are zero) among them.
#[test]
fn box_edge_queries_match_the_general_test_bit_for_bit() {
    const NO_FLOOR: f32 = f32::NEG_INFINITY;
    use crate::shapes::{BoxPoly, TrianglePoly};
    let mut seed = 2026;
    let mut crossings = 0;
    for case in 0..3000 {
        let r = |seed: &mut u64| lcg(seed);
        let half = Vec3::new(0.2 + r(&mut seed).abs(), 0.2 + r(&mut seed).abs(), 0.2 + r(&mut seed).abs());
        let boxed = BoxPoly { half };
        let general = GeneralBox(boxed);
        let rotation = if case % 5 == 0 {
            Quat::from_rotation_y(std::f32::consts::FRAC_PI_2 * (case % 4) as f32)
        } else {
            Quat::from_xyzw(r(&mut seed), r(&mut seed), r(&mut seed), r(&mut seed) + 0.01).normalize()
        };
        let rel = Isometry::new(Vec3::new(r(&mut seed), r(&mut seed), r(&mut seed)) * 1.5, rotation);
        let skip = |e: usize| (case + e).is_multiple_of(3);
        let (fast, slow) = if case % 2 == 0 {
            let mut v = [Vec3::ZERO; 3];
            for p in &mut v {
                *p = Vec3::new(r(&mut seed), r(&mut seed), r(&mut seed)) * 1.2;
            }
            if case % 10 == 0 {
                // A flat, axis-aligned triangle.
                v = [Vec3::new(-1.0, 0.1, -1.0), Vec3::new(1.0, 0.1, 1.0), Vec3::new(1.0, 0.1, -1.0)];
            }
            let Some(tri) = TrianglePoly::new(v) else { continue };
            (
                super::sat::query_edges(&boxed, &tri, &rel, &skip, None, NO_FLOOR),
                super::sat::query_edges(&general, &tri, &rel, &skip, None, NO_FLOOR),
            )
        } else {
            let hull = random_hull(&mut seed, 12);
            (
                super::sat::query_edges(&boxed, &hull, &rel, &skip, None, NO_FLOOR),
                super::sat::query_edges(&general, &hull, &rel, &skip, None, NO_FLOOR),
            )
        };
        assert_eq!(fast.0.to_bits(), slow.0.to_bits(), "case {case}: largest separation");
        assert_eq!(fast.1, slow.1, "case {case}: the pair of the largest separation");
        let (a, b) = (fast.2, slow.2);
        assert_eq!((a.a, a.b, a.separation.to_bits()), (b.a, b.b, b.separation.to_bits()), "case {case}");
        assert_eq!(a.normal.to_array().map(f32::to_bits), b.normal.to_array().map(f32::to_bits), "case {case}");
        crossings += (fast.0 > f32::NEG_INFINITY) as usize;
    }
    assert!(crossings > 2000, "only {crossings} cases had a crossing edge pair");
}

/// `collide_all` tests two convex shapes without their boxes first: every shape pair
/// reports nothing once the shapes are further apart than the margin (the gap along
/// a random direction, 1 mm to 1 m past it), and a manifold when they overlap (two
/// triangles excepted).
#[test]
fn convex_pairs_past_the_margin_report_nothing() {
    let hull =
        Shape::hull(&[Vec3::ZERO, Vec3::new(0.8, 0.1, 0.0), Vec3::new(0.2, 0.7, -0.3), Vec3::new(0.1, 0.2, 0.9)])
            .unwrap();
    let shapes = [
        Shape::sphere(Vec3::new(0.1, 0.0, -0.1), 0.4).unwrap(),
        Shape::capsule(Vec3::new(-0.3, 0.0, 0.0), Vec3::new(0.3, 0.2, 0.0), 0.2).unwrap(),
        Shape::cuboid(Vec3::new(0.3, 0.5, 0.4)).unwrap(),
        hull,
        Shape::triangle([Vec3::ZERO, Vec3::new(1.0, 0.0, 0.2), Vec3::new(0.0, 0.3, 1.0)]).unwrap(),
    ];
    let margin = 0.02;
    let mut seed = 11u64;
    let mut rnd = || lcg(&mut seed);
    for a in &shapes {
        for b in &shapes {
            for _ in 0..40 {
                let xf_a = Isometry::new(Vec3::new(rnd(), rnd(), rnd()), Quat::from_rotation_y(3.0 * rnd()));
                let turn = Quat::from_axis_angle(Vec3::new(rnd(), rnd(), rnd()).normalize_or(Vec3::Y), 3.0 * rnd());
                let dir = Vec3::new(rnd(), rnd(), rnd()).normalize_or(Vec3::X);
                // B's placement with its bounds (in A's frame) just past A's along `dir`.
                let (ba, bb) = (a.aabb(&Isometry::IDENTITY), b.aabb(&Isometry::new(Vec3::ZERO, turn)));
                let reach = |bx: &Aabb| bx.extents().length() * 0.5 + bx.center().length();
                let gap = margin + 0.001 + 0.999 * (0.5 + 0.5 * rnd());
                let xf_b = xf_a.mul(&Isometry::new(dir * (reach(&ba) + reach(&bb) + gap), turn));
                let mut found = 0;
                collide_all(a, &xf_a, b, &xf_b, margin, &mut |_, _, _| found += 1);
                assert_eq!(found, 0, "{a:?} and {b:?} {gap} m apart");
                if matches!((a, b), (Shape::Triangle(_), Shape::Triangle(_))) {
                    // Two triangles never collide (terrain meets bodies only).
                    continue;
                }
                let mut found = 0;
                collide_all(a, &xf_a, b, &xf_a.mul(&Isometry::new(Vec3::ZERO, turn)), margin, &mut |_, _, _| {
                    found += 1
                });
                assert_eq!(found, 1, "{a:?} and {b:?} overlapping");
            }
        }
    }
}

/// Points uniform on a sphere of `radius`.
fn sphere_points(seed: &mut u64, n: usize, radius: f32) -> Vec<Vec3> {
    (0..n)
        .map(|_| loop {
            let p = Vec3::new(lcg(seed), lcg(seed), lcg(seed));
            if p.length_squared() > 0.01 && p.length_squared() <= 1.0 {
                break p.normalize() * radius;
            }
        })
        .collect()
}

/// A hull's support search — the hill climb of large hulls, the vectorized scan of
/// small ones — finds the vertex a plain scan finds (the lowest index on ties, vertex
/// 0 for a NaN direction), along random directions and along the axes, where a hull
/// with a cube's corners among its points has whole faces square to the direction,
/// and with hulls wholly on one side of the origin (every dot product negative).
#[test]
fn hill_climbing_support_matches_the_scan() {
    use crate::shapes::Polytope;
    let mut seed = 5;
    for case in 0..90 {
        let count = if case < 60 { 60 + 3 * case } else { 5 + (case - 60) };
        let mut points = sphere_points(&mut seed, count, 1.0);
        if case % 4 == 1 {
            points.iter_mut().for_each(|p| *p += Vec3::new(3.0, -2.0, 1.0));
        }
        if case % 3 == 0 {
            points.extend((0..8).map(|i| glam::IVec3::new(i & 1, i >> 1 & 1, i >> 2 & 1).as_vec3() * 1.4 - 0.7));
        }
        let hull = ConvexHull::new(&points).unwrap();
        let v = hull.vertices();
        let scan = |d: Vec3| (1..v.len()).fold(0, |best, i| if v[i].dot(d) > v[best].dot(d) { i } else { best });
        let mut dirs: Vec<Vec3> = (0..200).map(|_| Vec3::new(lcg(&mut seed), lcg(&mut seed), lcg(&mut seed))).collect();
        dirs.extend([Vec3::X, Vec3::Y, Vec3::Z, -Vec3::X, -Vec3::Y, -Vec3::Z, Vec3::ZERO]);
        for d in dirs {
            assert_eq!(hull.support(d), scan(d), "case {case}: {} vertices, direction {d}", v.len());
        }
        assert_eq!(hull.support(Vec3::NAN), 0, "case {case}: a NaN direction");
    }
}

/// The coherent test (`collide_coherent`: last step's separating axis first, or
/// nothing while the pair cannot have closed the gap) gives the full test's answer,
/// to the bit, at every step of random motion of hull–hull and box–hull pairs that
/// come together, touch and part; and most separated steps are decided by the cached
/// axis alone or skipped.
#[test]
fn the_cached_separating_axis_gives_the_full_tests_answers() {
    let mut seed = 31;
    let margin = 0.04;
    let (mut skipped, mut cached, mut separated, mut touching) = (0, 0, 0, 0);
    for case in 0..24 {
        let hull = |seed: &mut u64| Shape::hull(&sphere_points(seed, 32, 0.5)).unwrap();
        let a = if case % 3 == 0 { Shape::cuboid(Vec3::new(0.4, 0.3, 0.5)).unwrap() } else { hull(&mut seed) };
        let b = hull(&mut seed);
        let xa = Isometry::new(Vec3::ZERO, Quat::from_rotation_y(lcg(&mut seed)));
        // B swings on a circle through A and back, turning as it goes.
        let axis = Vec3::new(lcg(&mut seed), lcg(&mut seed), lcg(&mut seed)).normalize();
        let spin = Vec3::new(lcg(&mut seed), lcg(&mut seed), lcg(&mut seed)).normalize();
        let mut cache = SatCache::default();
        for step in 0..400 {
            let t = step as f32 * 0.02;
            let xb = Isometry::new(
                axis * (2.2 * t.cos()) + axis.cross(spin) * (0.3 * t.sin()),
                Quat::from_axis_angle(spin, 0.7 * t),
            );
            let full = collide(&a, &xa, &b, &xb, margin);
            let (m, test) = collide_coherent(&a, &xa, &b, &xb, margin, &mut cache).expect("a hull pair");
            assert_eq!(m.is_empty(), full.is_empty(), "case {case}, step {step}: touching");
            assert_eq!(m.count, full.count, "case {case}, step {step}: points");
            assert_eq!(m.normal.to_array().map(f32::to_bits), full.normal.to_array().map(f32::to_bits));
            for (p, q) in m.points().iter().zip(full.points()) {
                assert_eq!(
                    (p.point.to_array().map(f32::to_bits), p.separation.to_bits(), p.id),
                    (q.point.to_array().map(f32::to_bits), q.separation.to_bits(), q.id)
                );
            }
            match (full.is_empty(), test) {
                (true, SatTest::Skipped) => skipped += 1,
                (true, SatTest::Cached) => cached += 1,
                (true, SatTest::Full) => separated += 1,
                (false, SatTest::Full) => touching += 1,
                (false, _) => panic!("case {case}, step {step}: a touching pair ruled out"),
            }
        }
    }
    assert!(touching > 500, "only {touching} touching steps");
    assert!(
        skipped + cached > 4 * separated,
        "{skipped} separated steps skipped, {cached} decided by the cached axis, {separated} in full"
    );
    assert!(skipped > 1000, "only {skipped} separated steps skipped");
}
