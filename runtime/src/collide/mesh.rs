//! Contacts against triangle sets (terrain and mesh triangles near a shape), with
//! internal-edge handling so shapes slide over flat or concave seams without bumping.
//!
//! A triangle edge is *active* when the surface really has a convex crease there: the
//! neighbour across it bends away (its far vertex lies below this triangle's plane) by
//! more than ~2.6°. Flat and concave edges are inactive. Contacts may only take their
//! normal from active features: the separating-axis test skips inactive edges, and a
//! rounded shape whose closest point lies on an inactive edge, or on a vertex whose
//! edges are all inactive, gets the triangle's face normal instead of the tilted
//! vertex-to-centre direction that makes balls hop at seams (Bullet's
//! btAdjustInternalEdgeContacts and Jolt's active edges solve the same problem).
//!
//! Neighbours are found by exact vertex positions, so meshes that share vertices bit
//! for bit (the terrain mesher's chunks do, see `terrain/mesher.rs`) join across
//! chunk seams. Edges with no neighbour in the set are active or not by the caller's
//! choice: a terrain query passes `false`, since a terrain surface is closed and the
//! missing neighbour only lies outside the query box.
//!
//! Triangles are one-sided: a shape whose centre lies behind a triangle's plane does
//! not collide with it, so a shape that has tunnelled below the surface is not
//! pulled further through.

use std::hash::Hasher;

use glam::{Mat3, Vec3};

use super::contact::{collide_convex, Convex};
use super::manifold::Manifold;
use super::rounded::{Rounded, TriangleEdges};
use super::sat::{collide_polytopes_cached, SatCache, SatTest, SeparatingAxis};
use crate::math::{Aabb, FastHasher, Isometry};
use crate::shapes::{Shape, TrianglePoly};

/// Cosine of the smallest crease angle that makes a convex edge active.
const CREASE_COS: f32 = 0.999;

/// A triangle edge, for finding its neighbour: both end points as exact bits
/// (-0.0 folded into 0.0), the lower end first, so that the two triangles beside an
/// edge give equal `ends` whichever way they run along it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Edge {
    /// A hash of `ends`, compared first: sorting mostly compares one word.
    hash: u64,
    ends: [u32; 6],
    triangle: u32,
    /// The edge's number in its triangle (vertices `e`, `e + 1`), plus [`REVERSED`]
    /// when it runs from the higher end to the lower.
    edge: u8,
}

/// [`Edge::edge`]'s direction bit.
const REVERSED: u8 = 4;

impl Edge {
    fn new(p: Vec3, q: Vec3, triangle: u32, edge: u8) -> Edge {
        let bits = |p: Vec3| {
            let p = p + Vec3::ZERO;
            [p.x.to_bits(), p.y.to_bits(), p.z.to_bits()]
        };
        let (p, q) = (bits(p), bits(q));
        let ((lo, hi), reversed) = if p <= q { ((p, q), 0) } else { ((q, p), REVERSED) };
        let ends = [lo[0], lo[1], lo[2], hi[0], hi[1], hi[2]];
        let mut hasher = FastHasher::default();
        ends.iter().for_each(|&w| hasher.write_u32(w));
        Edge { hash: hasher.finish(), ends, triangle, edge: edge | reversed }
    }
}

/// Triangles near a shape, with per-edge active flags. Reuse one set across queries:
/// `clear` keeps its memory.
#[derive(Debug, Default)]
pub struct TriangleSet {
    triangles: Vec<[Vec3; 3]>,
    active: Vec<[bool; 3]>,
    /// Scratch of [`TriangleSet::finish`]: every edge, and every triangle's normal.
    edges: Vec<Edge>,
    normals: Vec<Vec3>,
}

impl TriangleSet {
    pub fn new() -> TriangleSet {
        TriangleSet::default()
    }

    /// Room for `n` more triangles without allocating.
    pub fn reserve(&mut self, n: usize) {
        self.triangles.reserve(n);
        self.active.reserve(n);
        self.edges.reserve(3 * n);
        self.normals.reserve(n);
    }

    pub fn clear(&mut self) {
        self.triangles.clear();
        self.active.clear();
    }

    pub fn len(&self) -> usize {
        self.triangles.len()
    }

    pub fn is_empty(&self) -> bool {
        self.triangles.is_empty()
    }

    /// Adds a triangle (counter-clockwise front). Call [`TriangleSet::finish`] after
    /// the last one.
    pub fn push(&mut self, v: [Vec3; 3]) {
        self.triangles.push(v);
    }

    pub fn triangle(&self, i: usize) -> [Vec3; 3] {
        self.triangles[i]
    }

    /// Edge `e` (vertices `e`, `e + 1`) of triangle `i` is active.
    pub fn is_active(&self, i: usize, e: usize) -> bool {
        self.active[i][e]
    }

    /// The face normal of triangle `i` when `p` (a point on it) lies on an inactive
    /// edge or on a vertex whose edges are all inactive, else `None`.
    pub fn seam_normal(&self, i: usize, p: Vec3) -> Option<Vec3> {
        let triangle = TrianglePoly::new(self.triangles[i])?;
        let edges = TriangleEdges { triangle, active: self.active[i] };
        edges.inactive_at(p).then_some(triangle.normal)
    }

    /// Classifies every edge; `boundary_active` decides edges with no neighbour.
    ///
    /// The edges are sorted by their end points, so the triangles that share an edge
    /// sit side by side. An edge's neighbour is the last triangle (in push order)
    /// that runs the other way along it, as a consistently wound surface does; failing
    /// that, the last other triangle that runs the same way. A few dozen triangles
    /// sort faster than they hash (a hash map was twice the time on the rain scene's
    /// terrain gathers, 8 triangles on average).
    pub fn finish(&mut self, boundary_active: bool) {
        self.edges.clear();
        self.normals.clear();
        for (t, v) in self.triangles.iter().enumerate() {
            self.normals.push((v[1] - v[0]).cross(v[2] - v[0]).normalize_or_zero());
            for e in 0..3 {
                self.edges.push(Edge::new(v[e], v[(e + 1) % 3], t as u32, e as u8));
            }
        }
        self.edges.sort_unstable();
        self.active.clear();
        self.active.resize(self.triangles.len(), [boundary_active; 3]);
        let mut start = 0;
        while start < self.edges.len() {
            let ends = self.edges[start].ends;
            let end = start + self.edges[start..].iter().take_while(|o| o.ends == ends).count();
            // Members in (triangle, edge) order: the last first.
            let run = &self.edges[start..end];
            for me in run.iter().filter(|_| run.len() > 1) {
                let (t, e) = (me.triangle as usize, (me.edge & !REVERSED) as usize);
                let v = self.triangles[t];
                let twin = run.iter().rev().find(|o| (o.edge ^ me.edge) & REVERSED != 0).or_else(|| {
                    run.iter().rev().find(|o| o.triangle != me.triangle && self.triangles[o.triangle as usize] != v)
                });
                if let Some(o) = twin {
                    let u = self.triangles[o.triangle as usize];
                    let p = v[e];
                    let far = u[((o.edge & !REVERSED) as usize + 2) % 3];
                    let (normal, other) = (self.normals[t], self.normals[o.triangle as usize]);
                    let convex = normal.dot(far - p) < -1e-6 * (far - p).length();
                    let flat = normal.dot(other).abs() > CREASE_COS;
                    self.active[t][e] = convex && !flat;
                }
            }
            start = end;
        }
    }

    /// The triangles, in push order.
    pub fn triangles(&self) -> &[[Vec3; 3]] {
        &self.triangles
    }

    /// Every triangle's edge flags (after [`TriangleSet::finish`]).
    pub fn active(&self) -> &[[bool; 3]] {
        &self.active
    }

    /// Contacts of `shape` (convex; compounds part by part) placed by `xf` with every
    /// triangle within `margin`, as `(triangle index, manifold)` in triangle order;
    /// normals point from the shape to the triangle.
    pub fn collide(&self, shape: &Shape, xf: &Isometry, margin: f32, out: &mut dyn FnMut(u32, &Manifold)) {
        collide_triangles(&self.triangles, &self.active, shape, xf, margin, out);
    }
}

/// [`TriangleSet::collide`] over triangles and edge flags kept elsewhere (a finished
/// set's [`TriangleSet::triangles`] and [`TriangleSet::active`], copied).
pub fn collide_triangles(
    triangles: &[[Vec3; 3]],
    active: &[[bool; 3]],
    shape: &Shape,
    xf: &Isometry,
    margin: f32,
    out: &mut dyn FnMut(u32, &Manifold),
) {
    collide_triangles_with(triangles, active, shape, xf, margin, None, out);
}

/// What a hull keeps of its tests against a set of triangles that stays the same
/// from step to step (a terrain shape's kept triangles): for each triangle, the axis
/// that last separated them ([`SatCache`]), and how this call's tests went.
pub struct TriangleAxes<'a> {
    /// One per triangle, in triangle order.
    pub axes: &'a mut [SatCache],
    /// Triangles tested in full, decided by their cached axis, and skipped (too far
    /// to touch for the motion since their last test).
    pub full: u32,
    pub cached: u32,
    pub skipped: u32,
}

impl<'a> TriangleAxes<'a> {
    pub fn new(axes: &'a mut [SatCache]) -> TriangleAxes<'a> {
        TriangleAxes { axes, full: 0, cached: 0, skipped: 0 }
    }

    fn count(&mut self, test: SatTest) {
        match test {
            SatTest::Full => self.full += 1,
            SatTest::Cached => self.cached += 1,
            SatTest::Skipped => self.skipped += 1,
        }
    }
}

/// [`collide_triangles`] with `axes` for a hull (ignored for other shapes): each
/// triangle's cached axis is tried first, as a hull pair's is
/// (`sat::collide_polytopes_cached`), with the bound of a triangle that never
/// moves ([`SatCache::surely_apart_fixed`]). The manifolds are the full test's to
/// the bit: a cached axis only rules a triangle out where the full test would too.
/// Boxes take the plain test: [`BoxFaces`] already ends most of their separated
/// triangles, and a cache made the rain's narrowphase 0.5% slower, not faster.
pub fn collide_triangles_with(
    triangles: &[[Vec3; 3]],
    active: &[[bool; 3]],
    shape: &Shape,
    xf: &Isometry,
    margin: f32,
    mut axes: Option<&mut TriangleAxes>,
    out: &mut dyn FnMut(u32, &Manifold),
) {
    debug_assert_eq!(triangles.len(), active.len());
    match shape {
        Shape::Compound(c) => {
            debug_assert!(axes.is_none(), "a compound's parts keep their axes apart");
            for part in c.parts() {
                collide_triangles(triangles, active, &part.shape, &xf.mul(&part.pose), margin, out);
            }
        }
        _ => {
            let Some(convex) = Convex::of(shape) else { return };
            let bounds = shape.aabb(xf).expanded(margin);
            let center = bounds.center();
            let faces = match convex {
                Convex::Box(b) => Some(BoxFaces::new(b.half, xf, margin)),
                _ => None,
            };
            let core = match convex {
                Convex::Rounded(r) => Some(CoreReach::new(&r, xf, margin)),
                _ => None,
            };
            let hull = match convex {
                Convex::Hull(h) => Some(h),
                _ => None,
            };
            if hull.is_none() {
                axes = None;
            }
            debug_assert!(axes.as_ref().is_none_or(|a| a.axes.len() == triangles.len()));
            for (i, (v, &active)) in triangles.iter().zip(active).enumerate() {
                let tri_bounds = Aabb::new(v[0].min(v[1]).min(v[2]), v[0].max(v[1]).max(v[2]));
                if !tri_bounds.overlaps(&bounds) || faces.as_ref().is_some_and(|f| f.clear_of(v)) {
                    continue;
                }
                if let Some(axes) = axes.as_deref_mut() {
                    let cache = &axes.axes[i];
                    if cache.axis != SeparatingAxis::None && cache.surely_apart_fixed(xf, v, margin) {
                        axes.count(SatTest::Skipped);
                        continue;
                    }
                }
                let Some(poly) = TrianglePoly::new(*v) else { continue };
                if poly.normal.dot(center - v[0]) < 0.0 || core.as_ref().is_some_and(|c| c.clear_of(&poly)) {
                    continue;
                }
                let edges = TriangleEdges { triangle: poly, active };
                let at = Isometry::IDENTITY;
                let m = match (hull, axes.as_deref_mut()) {
                    (Some(hull), Some(axes)) => {
                        let cache = &mut axes.axes[i];
                        let (m, test) = collide_polytopes_cached(hull, xf, &poly, &at, margin, Some(&edges), cache);
                        axes.count(test);
                        m
                    }
                    _ => collide_convex(&convex, xf, &Convex::Triangle(poly), &at, margin, Some(&edges)),
                };
                if !m.is_empty() {
                    out(i as u32, &m);
                }
            }
        }
    }
}

/// A box's faces as a cheap first test against triangles: whether a triangle lies
/// wholly beyond one of them by more than the margin. That is the separating-axis
/// test's first query (`sat::query_faces_a`), where two thirds of the rain's box–
/// triangle tests end; here it is answered in the box's frame from a matrix, before
/// the triangle's normal, the shapes' relative placement and the quaternion
/// transforms are computed. `slack` covers the rounding difference between the two
/// ways of bringing a vertex into the box's frame (the full test's grows with the
/// distance from the origin), so no triangle the full test keeps is dropped and the
/// results keep their bits.
struct BoxFaces {
    /// World to box axes (the rotation's transpose).
    axes: Mat3,
    origin: Vec3,
    /// Half extents plus margin plus slack.
    limit: Vec3,
}

impl BoxFaces {
    fn new(half: Vec3, xf: &Isometry, margin: f32) -> BoxFaces {
        let slack = 1e-3 + 1e-5 * xf.translation.abs().max_element();
        BoxFaces {
            axes: Mat3::from_quat(xf.rotation).transpose(),
            origin: xf.translation,
            limit: half + Vec3::splat(margin + slack),
        }
    }

    #[inline]
    fn clear_of(&self, v: &[Vec3; 3]) -> bool {
        let p = v.map(|p| self.axes * (p - self.origin));
        let (lo, hi) = (p[0].min(p[1]).min(p[2]), p[0].max(p[1]).max(p[2]));
        (lo.cmpgt(self.limit) | hi.cmplt(-self.limit)).any()
    }
}

/// A rounded shape's core (a sphere's centre, a capsule's segment) and its reach
/// (radius plus margin plus slack), as a cheap first test against triangles: whether
/// the whole core lies farther than the reach in front of the triangle's plane, or
/// beyond one of its edges' planes (the planes through an edge, square to the
/// triangle). The triangle lies wholly behind each of those planes, so it is then
/// farther than the reach from every point of the core. Four in five of the rain's
/// sphere–triangle tests found no contact, and half of them end here before any
/// closest-point search. `slack` covers the rounding difference from the full test,
/// as in [`BoxFaces`].
struct CoreReach {
    a: Vec3,
    b: Vec3,
    reach: f32,
}

impl CoreReach {
    fn new(r: &Rounded, xf: &Isometry, margin: f32) -> CoreReach {
        let (a, b) = (xf.transform_point(r.a), xf.transform_point(r.b));
        let slack = 1e-3 + 1e-5 * a.abs().max(b.abs()).max_element();
        CoreReach { a, b, reach: r.radius + margin + slack }
    }

    #[inline]
    fn clear_of(&self, t: &TrianglePoly) -> bool {
        let (n, v) = (t.normal, &t.v);
        if n.dot(self.a - v[0]).min(n.dot(self.b - v[0])) > self.reach {
            return true;
        }
        (0..3).any(|i| {
            // The edge's outward normal in the triangle's plane, |edge| long.
            let m = (v[(i + 1) % 3] - v[i]).cross(n);
            let beyond = (m.dot(self.a - v[i])).min(m.dot(self.b - v[i]));
            beyond > 0.0 && beyond * beyond > self.reach * self.reach * m.length_squared()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use glam::Quat;

    /// A flat grid of `n` x `n` unit cells, two triangles each, at y = 0, facing up.
    fn flat_grid(n: i32, diagonal_flip: bool) -> TriangleSet {
        let mut set = TriangleSet::new();
        for z in -n / 2..n / 2 {
            for x in -n / 2..n / 2 {
                let p = |dx: i32, dz: i32| Vec3::new((x + dx) as f32, 0.0, (z + dz) as f32);
                let (a, b, c, d) = (p(0, 0), p(1, 0), p(1, 1), p(0, 1));
                // Counter-clockwise seen from +y: a, d, c and a, c, b.
                if diagonal_flip && (x + z) % 2 == 0 {
                    set.push([a, d, b]);
                    set.push([d, c, b]);
                } else {
                    set.push([a, d, c]);
                    set.push([a, c, b]);
                }
            }
        }
        set.finish(false);
        set
    }

    #[test]
    fn flat_seams_are_inactive_and_ridges_active() {
        let set = flat_grid(4, true);
        for i in 0..set.len() {
            assert_eq!(set.active[i], [false; 3]);
        }
        // A roof: two triangles meeting at a ridge along x.
        let mut roof = TriangleSet::new();
        let (l0, l1) = (Vec3::new(0.0, 0.0, -1.0), Vec3::new(2.0, 0.0, -1.0));
        let (r0, r1) = (Vec3::new(0.0, 1.0, 0.0), Vec3::new(2.0, 1.0, 0.0));
        let (s0, s1) = (Vec3::new(0.0, 0.0, 1.0), Vec3::new(2.0, 0.0, 1.0));
        roof.push([l0, r0, r1]);
        roof.push([l0, r1, l1]);
        roof.push([r0, s0, s1]);
        roof.push([r0, s1, r1]);
        roof.finish(false);
        let ridge_flags: Vec<bool> = (0..4)
            .flat_map(|t| (0..3).map(move |e| (t, e)))
            .filter(|&(t, e)| {
                let v = roof.triangle(t);
                let (p, q) = (v[e], v[(e + 1) % 3]);
                p.y == 1.0 && q.y == 1.0
            })
            .map(|(t, e)| roof.is_active(t, e))
            .collect();
        assert_eq!(ridge_flags, [true, true]);
        // A valley (the roof mirrored in y; mirroring flips the winding back up) is
        // inactive.
        let mut valley = TriangleSet::new();
        for t in 0..4 {
            valley.push(roof.triangle(t).map(|p| Vec3::new(p.x, -p.y, p.z)));
        }
        valley.finish(false);
        let flags: Vec<_> = (0..4).map(|t| (valley.triangle(t), valley.active[t])).collect();
        assert!((0..4).all(|t| (0..3).all(|e| !valley.is_active(t, e))), "{flags:?}");
    }

    /// Balls, boxes and capsules pressed slightly into a flat mesh of many triangles
    /// get only the face normal, wherever they sit relative to the seams.
    #[test]
    fn shapes_on_flat_seams_get_the_face_normal() {
        let set = flat_grid(8, true);
        let shapes = [
            Shape::sphere(Vec3::ZERO, 0.3).unwrap(),
            Shape::cuboid(Vec3::new(0.4, 0.2, 0.3)).unwrap(),
            Shape::capsule(Vec3::new(-0.5, 0.0, 0.0), Vec3::new(0.5, 0.0, 0.0), 0.2).unwrap(),
        ];
        let lift = [0.3 - 0.01, 0.2 - 0.01, 0.2 - 0.01];
        for (shape, y) in shapes.iter().zip(lift) {
            for step in 0..200 {
                let t = step as f32 / 200.0;
                // Across vertices, edges and diagonals.
                let pos = Vec3::new(-2.0 + 3.0 * t, y, -1.5 + 2.0 * t * t);
                let xf = Isometry::new(pos, Quat::from_rotation_y(t * 2.0));
                let mut count = 0;
                set.collide(shape, &xf, 0.02, &mut |i, m| {
                    count += m.count;
                    assert!(
                        m.normal.abs_diff_eq(-Vec3::Y, 1e-5),
                        "{shape:?} at {pos}: triangle {i} normal {}",
                        m.normal
                    );
                    for p in m.points() {
                        assert!(
                            (p.separation + 0.01).abs() < 1e-4 || p.separation > -0.01,
                            "{shape:?} at {pos}: {p:?}"
                        );
                    }
                });
                assert!(count > 0, "{shape:?} at {pos}: no contact");
            }
        }
    }

    /// On a convex ridge the ball's normal follows the ridge, not either face.
    #[test]
    fn ridges_keep_their_normal() {
        let mut roof = TriangleSet::new();
        let (l0, l1) = (Vec3::new(-2.0, 0.0, -1.0), Vec3::new(2.0, 0.0, -1.0));
        let (r0, r1) = (Vec3::new(-2.0, 1.0, 0.0), Vec3::new(2.0, 1.0, 0.0));
        let (s0, s1) = (Vec3::new(-2.0, 0.0, 1.0), Vec3::new(2.0, 0.0, 1.0));
        roof.push([l0, r0, r1]);
        roof.push([l0, r1, l1]);
        roof.push([r0, s0, s1]);
        roof.push([r0, s1, r1]);
        roof.finish(false);
        let ball = Shape::sphere(Vec3::ZERO, 0.25).unwrap();
        let mut normals = Vec::new();
        roof.collide(&ball, &Isometry::from_translation(Vec3::new(0.0, 1.24, 0.0)), 0.0, &mut |_, m| {
            normals.push(m.normal)
        });
        assert!(!normals.is_empty());
        assert!(normals.iter().all(|n| n.abs_diff_eq(-Vec3::Y, 1e-4)), "{normals:?}");
    }

    /// A random turn and a place within 3 m of the origin, or (even cases) within 300 m.
    fn random_pose(seed: &mut u64, case: usize) -> Isometry {
        let mut r = || crate::collide::tests::lcg(seed);
        let far = if case.is_multiple_of(2) { 300.0 } else { 3.0 };
        let q = Quat::from_xyzw(r(), r(), r(), r() + 0.01).normalize();
        Isometry::new(Vec3::new(r(), r(), r()) * far, q)
    }

    /// `BoxFaces` only drops triangles the full test drops too: random boxes up to
    /// 300 m from the origin, triangles whose nearest vertex lies just beyond a face by
    /// the margin, give or take a centimetre.
    #[test]
    fn box_faces_drop_only_what_the_full_test_drops() {
        let mut seed = 11u64;
        let r = |seed: &mut u64| crate::collide::tests::lcg(seed);
        let (mut dropped, mut kept) = (0, 0);
        let margin = 0.02;
        for case in 0..20000 {
            let half = Vec3::new(0.1 + r(&mut seed).abs(), 0.1 + r(&mut seed).abs(), 0.1 + r(&mut seed).abs());
            let xf = random_pose(&mut seed, case);
            // In the box's frame: a face, and a triangle beyond it by about the margin.
            let axis = (case / 2) % 3;
            let side = if case % 4 < 2 { 1.0 } else { -1.0 };
            let gap = margin + 0.01 * r(&mut seed);
            let mut local = [Vec3::ZERO; 3];
            for (k, p) in local.iter_mut().enumerate() {
                *p = Vec3::new(r(&mut seed), r(&mut seed), r(&mut seed)) * 1.5;
                p[axis] = side * (half[axis] + gap + if k == 0 { 0.0 } else { 0.3 * r(&mut seed).abs() });
            }
            let v = local.map(|p| xf.transform_point(p));
            let faces = BoxFaces::new(half, &xf, margin);
            let Some(tri) = TrianglePoly::new(v) else { continue };
            let full = collide_convex(
                &Convex::Box(crate::shapes::BoxPoly { half }),
                &xf,
                &Convex::Triangle(tri),
                &Isometry::IDENTITY,
                margin,
                None,
            );
            if faces.clear_of(&v) {
                dropped += 1;
                assert!(full.is_empty(), "case {case}: dropped a triangle the full test keeps: {full:?}");
            } else {
                kept += 1;
            }
        }
        // Gaps beyond the margin plus the slack are dropped, the rest go to the full test.
        assert!(dropped > 3000 && kept > 3000, "dropped {dropped}, kept {kept}");
    }

    /// `CoreReach` only drops triangles the full test drops too: spheres and capsules
    /// up to 300 m from the origin against triangles around them, in front of them
    /// and beside their edges, at about the reach.
    #[test]
    fn core_reach_drops_only_what_the_full_test_drops() {
        let mut seed = 12u64;
        let r = |seed: &mut u64| crate::collide::tests::lcg(seed);
        let (mut dropped, mut kept) = (0, 0);
        let margin = 0.02;
        for case in 0..20000 {
            let radius = 0.1 + 0.5 * r(&mut seed).abs();
            let xf = random_pose(&mut seed, case);
            let shape = if case % 3 == 0 {
                Shape::sphere(Vec3::ZERO, radius).unwrap()
            } else {
                let half = Vec3::new(r(&mut seed), r(&mut seed), r(&mut seed)) * 0.6;
                Shape::capsule(-half, half, radius).unwrap()
            };
            let Some(Convex::Rounded(core)) = Convex::of(&shape) else { unreachable!() };
            // A triangle around the core's first end, at about the reach from it.
            let centre = xf.transform_point(core.a);
            let dir = Vec3::new(r(&mut seed), r(&mut seed), r(&mut seed)).normalize_or(Vec3::Y);
            let gap = radius + margin + 0.01 * r(&mut seed);
            let near = centre + dir * gap;
            let spread = 0.2 + r(&mut seed).abs();
            let v = [0, 1, 2].map(|_| near + Vec3::new(r(&mut seed), r(&mut seed), r(&mut seed)) * spread);
            // Facing the core (the full test skips triangles behind their plane).
            let v = if (v[1] - v[0]).cross(v[2] - v[0]).dot(centre - v[0]) < 0.0 { [v[0], v[2], v[1]] } else { v };
            let Some(tri) = TrianglePoly::new(v) else { continue };
            let full =
                collide_convex(&Convex::Rounded(core), &xf, &Convex::Triangle(tri), &Isometry::IDENTITY, margin, None);
            if CoreReach::new(&core, &xf, margin).clear_of(&tri) {
                dropped += 1;
                assert!(full.is_empty(), "case {case}: dropped a triangle the full test keeps: {full:?}");
            } else {
                kept += 1;
            }
        }
        assert!(dropped > 3000 && kept > 3000, "dropped {dropped}, kept {kept}");
    }

    /// A creased patch of terrain triangles (from the rain scene: a gentle slope, a 45°
    /// bank and steps between them), most edges inactive.
    fn creased_patch() -> TriangleSet {
        let v = |x: f32, y: f32, z: f32| Vec3::new(x, y, z);
        let triangles = [
            [v(88.25, 9.25, 115.0), v(87.75, 9.75, 115.0), v(87.75, 9.75, 116.0)],
            [v(88.25, 9.25, 115.0), v(87.75, 9.75, 116.0), v(88.25, 9.25, 116.0)],
            [v(87.75, 9.75, 116.0), v(88.0, 9.8, 117.0), v(88.333, 9.333, 116.667)],
            [v(88.25, 9.25, 116.0), v(87.75, 9.75, 116.0), v(88.333, 9.333, 116.667)],
            [v(87.0, 10.0, 117.0), v(88.0, 9.8, 117.0), v(87.75, 9.75, 116.0)],
            [v(87.0, 10.0, 117.0), v(88.0, 10.0, 118.0), v(88.0, 9.8, 117.0)],
            [v(88.333, 9.333, 116.667), v(88.0, 9.8, 117.0), v(89.0, 9.75, 117.25)],
            [v(88.333, 9.333, 116.667), v(89.0, 9.75, 117.25), v(89.0, 9.25, 116.75)],
            [v(89.0, 9.25, 116.75), v(89.0, 9.75, 117.25), v(90.0, 9.75, 117.25)],
            [v(89.0, 9.75, 117.25), v(89.0, 10.0, 118.0), v(90.0, 10.0, 118.0)],
            [v(89.0, 9.25, 116.75), v(90.0, 9.75, 117.25), v(90.0, 9.25, 116.75)],
            [v(89.0, 9.75, 117.25), v(90.0, 10.0, 118.0), v(90.0, 9.75, 117.25)],
            [v(88.0, 9.8, 117.0), v(88.0, 10.0, 118.0), v(89.0, 9.75, 117.25)],
            [v(88.0, 10.0, 118.0), v(89.0, 10.0, 118.0), v(89.0, 9.75, 117.25)],
        ];
        let mut set = TriangleSet::new();
        for t in triangles {
            set.push(t);
        }
        set.finish(false);
        set
    }

    /// Seam handling may change a contact's normal, never its depth: against each
    /// triangle of a creased patch, no point is deeper than the shapes really are (the
    /// same triangle alone, every edge active), for overlaps up to 5 cm. Regression: skipping inactive edges as
    /// separating axes reported a box 3 cm clear of a steep triangle as 10 cm inside
    /// it, and measuring a ball's seam contact to the face's plane did the same across
    /// concave creases; both kicked resting bodies up and kept them from sleeping.
    #[test]
    fn seam_contacts_are_never_deeper_than_the_true_overlap() {
        let set = creased_patch();
        let shapes = [
            Shape::cuboid(Vec3::splat(0.5)).unwrap(),
            Shape::sphere(Vec3::ZERO, 0.5).unwrap(),
            Shape::capsule(Vec3::new(-0.4, 0.0, 0.0), Vec3::new(0.4, 0.0, 0.0), 0.25).unwrap(),
        ];
        // The pose that produced the phantom contact in the rain scene.
        let mut poses = vec![Isometry::new(
            Vec3::new(88.632, 10.085, 116.513),
            Quat::from_xyzw(0.466, -0.752, -0.221, 0.411).normalize(),
        )];
        let mut seed = 7u64;
        for _ in 0..3000 {
            let r = |seed: &mut u64| crate::collide::tests::lcg(seed);
            let p = Vec3::new(88.7 + 0.9 * r(&mut seed), 10.1 + 0.3 * r(&mut seed), 116.8 + 0.9 * r(&mut seed));
            let q = Quat::from_xyzw(r(&mut seed), r(&mut seed), r(&mut seed), r(&mut seed) + 0.01).normalize();
            poses.push(Isometry::new(p, q));
        }
        let mut checked = 0;
        for shape in &shapes {
            for xf in &poses {
                set.collide(shape, xf, 0.02, &mut |i, m| {
                    let mut alone = TriangleSet::new();
                    alone.push(set.triangle(i as usize));
                    alone.finish(true);
                    let mut truth = f32::INFINITY;
                    alone.collide(shape, xf, 0.02, &mut |_, t| truth = truth.min(t.min_separation()));
                    assert!(truth.is_finite(), "{shape:?} at {xf:?}: triangle {i} touches only through a seam: {m:?}");
                    if truth < -0.05 {
                        // Deep overlaps (random poses inside the terrain) are out of scope.
                        return;
                    }
                    assert!(
                        m.min_separation() >= truth - 2e-3,
                        "{shape:?} at {xf:?}: triangle {i}: {} deeper than the true {truth}",
                        m.min_separation()
                    );
                    checked += 1;
                });
            }
        }
        assert!(checked > 500, "{checked} contacts checked");
    }

    /// `finish`'s rule written out triangle by triangle: an edge's neighbour is the
    /// last triangle running the other way along it, else the last other one running
    /// the same way; edges without one take `boundary_active`.
    fn brute_force_flags(triangles: &[[Vec3; 3]], boundary_active: bool) -> Vec<[bool; 3]> {
        let same = |a: Vec3, b: Vec3| {
            (a + Vec3::ZERO).to_array().map(f32::to_bits) == (b + Vec3::ZERO).to_array().map(f32::to_bits)
        };
        let normal = |v: &[Vec3; 3]| (v[1] - v[0]).cross(v[2] - v[0]).normalize_or_zero();
        let edges = |u: [Vec3; 3]| (0..3).map(move |f| (f, u[f], u[(f + 1) % 3]));
        triangles
            .iter()
            .enumerate()
            .map(|(t, v)| {
                std::array::from_fn(|e| {
                    let (p, q) = (v[e], v[(e + 1) % 3]);
                    let find = |reversed: bool| {
                        let mut found = None;
                        for (k, u) in triangles.iter().enumerate() {
                            for (f, a, b) in edges(*u) {
                                let hit = if reversed { same(a, q) && same(b, p) } else { same(a, p) && same(b, q) };
                                if hit && (reversed || (k != t && u != v)) {
                                    found = Some((k, f));
                                }
                            }
                        }
                        found
                    };
                    match find(true).or_else(|| find(false)) {
                        Some((k, f)) => {
                            let far = triangles[k][(f + 2) % 3];
                            let convex = normal(v).dot(far - p) < -1e-6 * (far - p).length();
                            convex && normal(v).dot(normal(&triangles[k])).abs() <= CREASE_COS
                        }
                        None => boundary_active,
                    }
                })
            })
            .collect()
    }

    /// `finish` flags every edge as the brute-force rule does on random bumpy height
    /// fields, in shuffled order with holes, some triangles wound the wrong way
    /// (their neighbours then run the same way along the shared edge), some pushed
    /// twice, fins making three triangles meet at an edge, and -0.0 beside 0.0:
    /// ridges, valleys and flat seams alike.
    #[test]
    fn finish_flags_match_the_brute_force_rule() {
        let mut seed = 11u64;
        let mut r = || crate::collide::tests::lcg(&mut seed);
        for round in 0..40 {
            let n = 2 + round % 6;
            let height: Vec<f32> =
                (0..(n + 1) * (n + 1)).map(|_| if round % 3 == 0 { 0.0 } else { (r() * 4.0).round() * 0.25 }).collect();
            let p = |x: usize, z: usize| {
                let x0 = if x == 0 && round % 2 == 0 { -0.0 } else { x as f32 };
                Vec3::new(x0, height[z * (n + 1) + x], z as f32)
            };
            let mut triangles = Vec::new();
            for z in 0..n {
                for x in 0..n {
                    let (a, b, c, d) = (p(x, z), p(x + 1, z), p(x + 1, z + 1), p(x, z + 1));
                    let pair = if r() > 0.0 { [[a, d, c], [a, c, b]] } else { [[a, d, b], [d, c, b]] };
                    for mut t in pair {
                        if r() > 0.8 {
                            continue;
                        }
                        if r() > 0.85 {
                            t.swap(1, 2);
                        }
                        triangles.push(t);
                        if r() > 0.95 {
                            triangles.push(t);
                        }
                        // A fin standing on the triangle's first edge: three on one edge.
                        if r() > 0.9 {
                            triangles.push([t[0], t[1], t[0] + Vec3::new(0.1, 1.0, 0.2)]);
                        }
                    }
                }
            }
            for i in (1..triangles.len()).rev() {
                let j = ((r() * 0.5 + 0.5) * (i + 1) as f32) as usize % (i + 1);
                triangles.swap(i, j);
            }
            for boundary_active in [false, true] {
                let mut set = TriangleSet::new();
                for &t in &triangles {
                    set.push(t);
                }
                set.finish(boundary_active);
                assert_eq!(set.active(), brute_force_flags(&triangles, boundary_active), "round {round}");
            }
        }
    }
}
