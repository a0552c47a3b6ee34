//! The separating-axis test's shortcuts against the plain test: axes ruled out by
//! their bounds (`sat::Reach`), the bounds themselves, and pairs skipped by the
//! motion since their last test (`SatCache`).

use glam::{Quat, Vec3};

use super::rounded::TriangleEdges;
use super::sat::{axis_separation, collide_polytopes_with, SatCache, SatTest};
use super::tests::lcg;
use super::Manifold;
use crate::math::Isometry;
use crate::shapes::{ArcTable, BoxPoly, ConvexHull, Polytope, TrianglePoly};

/// `n` points on an ellipsoid of radii `radii`, moved by `offset` (a hull whose
/// centroid is off its frame's origin).
fn hull(seed: &mut u64, n: usize, radii: Vec3, offset: Vec3) -> ConvexHull {
    let points: Vec<Vec3> = (0..n)
        .map(|_| loop {
            let p = Vec3::new(lcg(seed), lcg(seed), lcg(seed));
            if p.length_squared() > 0.01 && p.length_squared() <= 1.0 {
                break p.normalize() * radii + offset;
            }
        })
        .collect();
    ConvexHull::new(&points).unwrap()
}

fn random_rotation(seed: &mut u64) -> Quat {
    Quat::from_xyzw(lcg(seed), lcg(seed), lcg(seed), lcg(seed) + 0.01).normalize()
}

fn assert_same(m: &Manifold, reference: &Manifold, what: &str) {
    assert_eq!(m.count, reference.count, "{what}: points");
    assert_eq!(m.normal.to_array().map(f32::to_bits), reference.normal.to_array().map(f32::to_bits), "{what}: normal");
    for (p, q) in m.points().iter().zip(reference.points()) {
        assert_eq!(
            (p.point.to_array().map(f32::to_bits), p.separation.to_bits(), p.id),
            (q.point.to_array().map(f32::to_bits), q.separation.to_bits(), q.id),
            "{what}: a point"
        );
    }
}

/// The test with bounds and the test without them, from an empty cache: the same
/// manifold and the same cache (axis and separation), to the bit.
fn check_pruning(
    a: &impl Polytope,
    xa: &Isometry,
    b: &impl Polytope,
    xb: &Isometry,
    edges: Option<&TriangleEdges>,
    what: &str,
) -> bool {
    let margin = 0.04;
    let (mut pruned, mut plain) = (SatCache::default(), SatCache::default());
    let (m, _) = collide_polytopes_with(a, xa, b, xb, margin, edges, &mut pruned, true);
    let (reference, _) = collide_polytopes_with(a, xa, b, xb, margin, edges, &mut plain, false);
    assert_same(&m, &reference, what);
    assert_eq!(pruned, plain, "{what}: the cache");
    !m.is_empty()
}

/// Axes ruled out by their bounds never change the answer: hull pairs of 8 to 96
/// points (round, flat, long, off-centre), hulls against boxes either way round and
/// against mesh triangles with inactive edges, in placements from deep overlap through
/// touching to well apart.
#[test]
fn bounded_axes_give_the_plain_tests_answers_bit_for_bit() {
    let mut seed = 77;
    let mut touching = 0;
    let cases = 1500;
    for case in 0..cases {
        let r = |seed: &mut u64| lcg(seed);
        let shape = |seed: &mut u64| {
            let n = [8, 16, 32, 64, 96][(lcg(seed).abs() * 5.0) as usize % 5];
            let radii = Vec3::new(0.3 + r(seed).abs(), 0.3 + r(seed).abs(), 0.3 + r(seed).abs());
            let radii = if case % 7 == 0 { radii * Vec3::new(1.0, 0.05, 1.0) } else { radii };
            let offset = if case % 5 == 0 { Vec3::new(r(seed), r(seed), r(seed)) * 3.0 } else { Vec3::ZERO };
            hull(seed, n, radii, offset)
        };
        let a = shape(&mut seed);
        let xa = Isometry::new(Vec3::new(r(&mut seed), r(&mut seed), r(&mut seed)) * 10.0, random_rotation(&mut seed));
        // B's centroid placed at a random distance from A's along a random direction.
        let dir = Vec3::new(r(&mut seed), r(&mut seed), r(&mut seed)).normalize_or(Vec3::Y);
        let distance = 0.2 + 2.6 * r(&mut seed).abs();
        let rotation = random_rotation(&mut seed);
        let place = |centroid: Vec3| {
            let at = xa.transform_point(a.centroid()) + dir * distance;
            Isometry::new(at - rotation * centroid, rotation)
        };
        let what = format!("case {case}");
        touching += match case % 4 {
            0 | 1 => {
                let b = shape(&mut seed);
                check_pruning(&a, &xa, &b, &place(b.centroid()), None, &what)
            }
            2 => {
                let b = BoxPoly { half: Vec3::new(0.2 + r(&mut seed).abs(), 0.2 + r(&mut seed).abs(), 0.3) };
                let xb = place(Vec3::ZERO);
                check_pruning(&a, &xa, &b, &xb, None, &what) | check_pruning(&b, &xb, &a, &xa, None, &what)
            }
            _ => {
                let v = [0, 1, 2].map(|_| Vec3::new(r(&mut seed), r(&mut seed) * 0.2, r(&mut seed)) * 1.5);
                let Some(triangle) = TrianglePoly::new(v) else { continue };
                let active = [case % 3 != 0, case % 5 != 0, case % 2 == 0];
                let edges = TriangleEdges { triangle, active };
                check_pruning(&a, &xa, &triangle, &place(triangle.centroid()), Some(&edges), &what)
            }
        } as usize;
    }
    assert!(touching > cases / 4, "only {touching} of {cases} cases touch");
}

/// An arc's reach toward a direction is at least, and hardly more than, the largest
/// dot product of the direction with any normal along the arc (sampled finely), for
/// arcs from a sliver to nearly a half turn.
#[test]
fn an_arcs_reach_bounds_its_normals() {
    let mut seed = 4;
    let mut arcs = Vec::new();
    for _ in 0..400 {
        let n0 = Vec3::new(lcg(&mut seed), lcg(&mut seed), lcg(&mut seed)).normalize_or(Vec3::X);
        let side = n0.any_orthonormal_vector();
        let side = Quat::from_axis_angle(n0, lcg(&mut seed) * 3.0) * side;
        let angle = 0.01 + 3.0 * lcg(&mut seed).abs();
        arcs.push((n0, Quat::from_axis_angle(n0.cross(side).normalize(), angle) * n0));
    }
    let table = ArcTable::new(arcs.iter().copied());
    assert_eq!(table.len(), arcs.len());
    let mut reach = vec![0.0; 64];
    for _ in 0..50 {
        let dir = Vec3::new(lcg(&mut seed), lcg(&mut seed), lcg(&mut seed)) * 5.0;
        for first in (0..arcs.len()).step_by(64) {
            table.reach(dir, first, &mut reach);
            for (e, &(n0, n1)) in arcs.iter().enumerate().skip(first).take(64) {
                let turn = Quat::from_rotation_arc(n0, n1);
                let top = (0..=1000)
                    .map(|k| (Quat::IDENTITY.slerp(turn, k as f32 / 1000.0) * n0).dot(dir))
                    .fold(f32::NEG_INFINITY, f32::max);
                let bound = reach[e - first];
                assert!(bound >= top - 1e-4 * dir.length(), "arc {e}: reach {bound} below {top}");
                assert!(bound <= top + 3e-3 * dir.length(), "arc {e}: reach {bound} far above {top}");
            }
        }
    }
}

/// A hull's inner radius is a ball about its centroid inside it: its support along
/// any direction reaches at least that far past the centroid; its outer radius holds
/// every vertex; and each edge lies at least its lift past the centroid along every
/// normal on its arc (the edge is the support there).
#[test]
fn a_hulls_inner_ball_lies_inside_it() {
    let mut seed = 12;
    for case in 0..60 {
        let radii = Vec3::new(0.2 + lcg(&mut seed).abs(), 0.2 + lcg(&mut seed).abs(), 0.05 + lcg(&mut seed).abs());
        let h = hull(&mut seed, 8 + case, radii, Vec3::new(1.0, -2.0, 0.5) * (case % 3) as f32);
        let (c, inner, outer) = (h.centroid(), h.inner_radius(), h.outer_radius());
        assert!(inner > 0.0 && inner < outer, "case {case}: radii {inner} and {outer}");
        for _ in 0..200 {
            let n = Vec3::new(lcg(&mut seed), lcg(&mut seed), lcg(&mut seed)).normalize_or(Vec3::Z);
            let reach = (h.vertex(h.support(n)) - c).dot(n);
            assert!(reach >= inner, "case {case}: support {reach} inside the inner radius {inner}");
        }
        assert!(h.vertices().iter().all(|&v| (v - c).length() <= outer), "case {case}");
        // The reach toward nothing is the lift, negated.
        let mut lift = vec![0.0; h.edge_count().next_multiple_of(8)];
        h.arcs().unwrap().reach(Vec3::ZERO, 0, &mut lift);
        for (e, &lift) in lift.iter().enumerate().take(h.edge_count()) {
            let lift = -lift;
            let edge = h.edge(e);
            assert!(lift >= inner, "case {case}, edge {e}: lift {lift} below the inner radius");
            let turn = Quat::from_rotation_arc(edge.n0, edge.n1);
            for k in 0..=20 {
                let n = Quat::IDENTITY.slerp(turn, k as f32 / 20.0) * edge.n0;
                let past = (h.vertex(edge.v[0] as usize) - c).dot(n);
                assert!(past >= lift - 1e-5, "case {case}, edge {e}: {past} past the centre, lift {lift}");
            }
        }
    }
}

/// A pair skipped for the motion since its last test is one whose cached axis still
/// separates it by more than the margin (the cached test's answer), under random
/// turns and drifts of both shapes, off-centre hulls among them; and, moving slowly,
/// most separated steps are skipped.
#[test]
fn a_skipped_pair_is_still_apart_along_its_axis() {
    let mut seed = 8;
    let margin = 0.04;
    let (mut skipped, mut searched) = (0, 0);
    for case in 0..40 {
        let offset = |seed: &mut u64| Vec3::new(lcg(seed), lcg(seed), lcg(seed)) * (case % 3) as f32;
        let (offset_a, offset_b) = (offset(&mut seed), offset(&mut seed));
        let a = hull(&mut seed, 32, Vec3::splat(0.5), offset_a);
        let b = hull(&mut seed, 24, Vec3::new(0.6, 0.3, 0.4), offset_b);
        let (spin_a, spin_b) = (random_rotation(&mut seed), random_rotation(&mut seed));
        let (drift, speed) = (Vec3::new(lcg(&mut seed), lcg(&mut seed), lcg(&mut seed)), 0.002 + 0.01 * case as f32);
        let mut cache = SatCache::default();
        for step in 0..300 {
            let t = step as f32 * speed;
            let xa = Isometry::new(drift * t, Quat::IDENTITY.slerp(spin_a, 0.3 * t.sin()));
            let xb = Isometry::new(
                Vec3::new(2.5 * t.cos(), 0.5, 0.3) - a.centroid() + b.centroid(),
                Quat::IDENTITY.slerp(spin_b, t.cos()),
            );
            let (m, test) = collide_polytopes_with(&a, &xa, &b, &xb, margin, None, &mut cache, true);
            let (reference, _) = collide_polytopes_with(&a, &xa, &b, &xb, margin, None, &mut SatCache::default(), true);
            assert_same(&m, &reference, &format!("case {case}, step {step}"));
            match test {
                SatTest::Skipped => {
                    let along = axis_separation(&a, &b, &xa.inv_mul(&xb), cache.axis);
                    assert!(along > margin, "case {case}, step {step}: skipped at {along} along {:?}", cache.axis);
                    skipped += 1;
                }
                _ => searched += m.is_empty() as usize,
            }
        }
    }
    assert!(skipped > searched, "{skipped} separated steps skipped, {searched} searched");
}

/// A hull's faces around each vertex are exactly the faces whose loops hold it, in
/// increasing order: the incident face chosen from them is the one the scan over
/// every face chooses.
#[test]
fn a_hulls_faces_around_a_vertex_are_the_faces_holding_it() {
    let mut seed = 44;
    for case in 0..40 {
        let h = hull(&mut seed, 6 + 3 * case, Vec3::new(1.0, 0.7, 0.4), Vec3::ZERO);
        let mut loop_ = [0u16; crate::shapes::MAX_FACE_VERTICES];
        for v in 0..h.vertex_count() {
            let holding: Vec<u16> = (0..h.face_count())
                .filter(|&f| {
                    let n = h.face_vertices(f, &mut loop_);
                    loop_[..n].contains(&(v as u16))
                })
                .map(|f| f as u16)
                .collect();
            assert_eq!(h.faces_around(v).unwrap(), &holding[..], "case {case}, vertex {v}");
        }
    }
}

/// Hulls tumbling and sliding over a bumpy patch of triangles, near the
/// world's origin and a kilometre from it, each triangle keeping its separating axis
/// from step to step (`collide_triangles_with`, the terrain's path): every step's
/// manifolds are those of the plain test to the bit, and most separated triangles
/// are decided by their cached axis or skipped for the motion since.
#[test]
fn shapes_on_triangles_keep_their_axes() {
    use super::mesh::{collide_triangles, collide_triangles_with, TriangleAxes, TriangleSet};
    use crate::shapes::Shape;
    let mut seed = 31;
    let margin = 0.04;
    let (mut full, mut cached, mut skipped, mut touching) = (0, 0, 0, 0);
    for case in 0..12 {
        let origin = if case % 2 == 0 { Vec3::ZERO } else { Vec3::new(1000.0, 40.0, -700.0) };
        // A 6 x 6 grid of 1 m cells with random heights, two triangles a cell.
        let mut heights = [[0.0f32; 7]; 7];
        for row in heights.iter_mut() {
            for h in row.iter_mut() {
                *h = 0.3 * lcg(&mut seed);
            }
        }
        let at = |x: usize, z: usize| origin + Vec3::new(x as f32 - 3.0, heights[x][z], z as f32 - 3.0);
        let mut set = TriangleSet::new();
        for x in 0..6 {
            for z in 0..6 {
                set.push([at(x, z), at(x, z + 1), at(x + 1, z)]);
                set.push([at(x + 1, z), at(x, z + 1), at(x + 1, z + 1)]);
            }
        }
        set.finish(false);
        // A box's corners (large flat faces) or 32 points on an ellipsoid.
        let shape = if case % 3 == 0 {
            let corners = BoxPoly { half: Vec3::new(0.4, 0.25, 0.3) };
            Shape::hull(&(0..8).map(|i| corners.vertex(i)).collect::<Vec<_>>()).unwrap()
        } else {
            Shape::Hull(std::sync::Arc::new(hull(&mut seed, 32, Vec3::new(0.5, 0.4, 0.45), Vec3::ZERO)))
        };
        let (spin, drift) = (random_rotation(&mut seed), Vec3::new(lcg(&mut seed), 0.0, lcg(&mut seed)));
        let speed = 0.002 + 0.004 * case as f32;
        let mut axes = vec![SatCache::default(); set.triangles().len()];
        for step in 0..400 {
            let t = step as f32 * speed;
            // Up and down through the patch's top, sliding across it and turning.
            let height = 0.55 + 0.3 * (3.0 * t).sin();
            let xf = Isometry::new(origin + drift * 2.0 * t.sin() + Vec3::Y * height, Quat::IDENTITY.slerp(spin, t));
            let mut reference = Vec::new();
            collide_triangles(set.triangles(), set.active(), &shape, &xf, margin, &mut |i, m| {
                reference.push((i, *m));
            });
            let mut found = Vec::new();
            let mut kept = TriangleAxes::new(&mut axes);
            let (triangles, active) = (set.triangles(), set.active());
            collide_triangles_with(triangles, active, &shape, &xf, margin, Some(&mut kept), &mut |i, m| {
                found.push((i, *m));
            });
            let what = format!("case {case}, step {step}");
            assert_eq!(found.len(), reference.len(), "{what}: manifolds");
            for ((i, m), (j, r)) in found.iter().zip(&reference) {
                assert_eq!(i, j, "{what}: triangles");
                assert_same(m, r, &format!("{what}, triangle {i}"));
            }
            (full, cached, skipped) = (full + kept.full, cached + kept.cached, skipped + kept.skipped);
            touching += found.len();
        }
    }
    assert!(touching > 1000, "{touching} manifolds: the shapes must touch the patch");
    assert!(skipped > 0 && cached > 0, "{skipped} skipped, {cached} decided by their axis");
    // The hull's exact box culls the far triangles before any test, so the ones
    // tested lie near it: about half of those still go by their axis.
    assert!(2 * (skipped + cached) > full, "{full} full tests, {cached} cached, {skipped} skipped");
}
