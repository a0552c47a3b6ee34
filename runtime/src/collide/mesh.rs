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

use std::hash::{Hash, Hasher};

use glam::Vec3;

use super::contact::{collide_convex, Convex};
use super::manifold::Manifold;
use super::rounded::TriangleEdges;
use crate::math::{Aabb, FastMap, Isometry};
use crate::shapes::{Shape, TrianglePoly};

/// Cosine of the smallest crease angle that makes a convex edge active.
const CREASE_COS: f32 = 0.999;

/// A directed edge's exact end points, hashed as three words.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct EdgeKey([u64; 3]);

impl Hash for EdgeKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        for word in self.0 {
            state.write_u64(word);
        }
    }
}

/// Exact positions, with -0.0 folded into 0.0.
fn key(p: Vec3, q: Vec3) -> EdgeKey {
    let (p, q) = (p + Vec3::ZERO, q + Vec3::ZERO);
    let pair = |a: f32, b: f32| (a.to_bits() as u64) << 32 | b.to_bits() as u64;
    EdgeKey([pair(p.x, p.y), pair(p.z, q.x), pair(q.y, q.z)])
}

/// Triangles near a shape, with per-edge active flags. Reuse one set across queries:
/// `clear` keeps its memory.
#[derive(Debug, Default)]
pub struct TriangleSet {
    triangles: Vec<[Vec3; 3]>,
    active: Vec<[bool; 3]>,
    directed: FastMap<EdgeKey, (u32, u8)>,
}

impl TriangleSet {
    pub fn new() -> TriangleSet {
        TriangleSet::default()
    }

    /// Room for `n` more triangles without allocating.
    pub fn reserve(&mut self, n: usize) {
        self.triangles.reserve(n);
        self.active.reserve(n);
        self.directed.reserve(3 * n);
    }

    pub fn clear(&mut self) {
        self.triangles.clear();
        self.active.clear();
        self.directed.clear();
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
    pub fn finish(&mut self, boundary_active: bool) {
        self.directed.clear();
        for (t, v) in self.triangles.iter().enumerate() {
            for e in 0..3 {
                self.directed.insert(key(v[e], v[(e + 1) % 3]), (t as u32, e as u8));
            }
        }
        self.active.clear();
        for v in &self.triangles {
            let normal = (v[1] - v[0]).cross(v[2] - v[0]).normalize_or_zero();
            let mut flags = [boundary_active; 3];
            for (e, flag) in flags.iter_mut().enumerate() {
                let (p, q) = (v[e], v[(e + 1) % 3]);
                // Consistent winding pairs p->q with q->p; accept either.
                let twin = self
                    .directed
                    .get(&key(q, p))
                    .or_else(|| self.directed.get(&key(p, q)).filter(|&&(t, _)| self.triangles[t as usize] != *v));
                if let Some(&(t, te)) = twin {
                    let u = self.triangles[t as usize];
                    let far = u[(te as usize + 2) % 3];
                    let other = (u[1] - u[0]).cross(u[2] - u[0]).normalize_or_zero();
                    let convex = normal.dot(far - p) < -1e-6 * (far - p).length();
                    let flat = normal.dot(other).abs() > CREASE_COS;
                    *flag = convex && !flat;
                }
            }
            self.active.push(flags);
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
    debug_assert_eq!(triangles.len(), active.len());
    match shape {
        Shape::Compound(c) => {
            for part in c.parts() {
                collide_triangles(triangles, active, &part.shape, &xf.mul(&part.pose), margin, out);
            }
        }
        _ => {
            let Some(convex) = Convex::of(shape) else { return };
            let bounds = shape.aabb(xf).expanded(margin);
            let center = bounds.center();
            for (i, (v, &active)) in triangles.iter().zip(active).enumerate() {
                let tri_bounds = Aabb::new(v[0].min(v[1]).min(v[2]), v[0].max(v[1]).max(v[2]));
                if !tri_bounds.overlaps(&bounds) {
                    continue;
                }
                let Some(poly) = TrianglePoly::new(*v) else { continue };
                if poly.normal.dot(center - v[0]) < 0.0 {
                    continue;
                }
                let edges = TriangleEdges { triangle: poly, active };
                let m = collide_convex(&convex, xf, &Convex::Triangle(poly), &Isometry::IDENTITY, margin, Some(&edges));
                if !m.is_empty() {
                    out(i as u32, &m);
                }
            }
        }
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
}
