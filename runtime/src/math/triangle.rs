//! Triangle tests shared by every triangle structure (the kD tree, brute-force
//! references, terrain queries): watertight ray intersection and the
//! separating-axis triangle/box overlap test (Akenine-Möller's 13 axes).
//!
//! Both treat the triangle and the box as closed sets: touching counts. Brute-force
//! references call the same functions, so a tree agrees with them bit for bit.

use glam::Vec3;

use super::{Aabb, Ray};

/// Where a ray meets a triangle: `point = ray.at(t)`, barycentrics `(1 - u - v, u, v)`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TriangleHit {
    pub t: f32,
    pub u: f32,
    pub v: f32,
}

/// The hit of `ray` on triangle `[a, b, c]` with `t` in `[t_min, t_max]`, edges
/// included, either side of the triangle; rays in the triangle's plane and
/// degenerate triangles miss.
///
/// Möller–Trumbore is not watertight: a ray through an edge two triangles share can
/// round to a miss on both (measured: about one random ray in 10^5 fell through a
/// terrain mesh). This is the watertight test of Woop, Benthin and Wald (JCGT 2013)
/// at the same cost: vertices are sheared into ray space and the three edge functions
/// are 2D cross products, which two triangles sharing an edge compute as exact
/// negatives of each other (an exact zero is recomputed in f64), so no ray slips
/// between them.
#[inline]
pub fn ray_triangle(ray: &Ray, triangle: [Vec3; 3], t_min: f32, t_max: f32) -> Option<TriangleHit> {
    RayShear::new(ray)?.hit(triangle, t_min, t_max)
}

/// A ray set up for [`ray_triangle`] once, for many triangles: the axis the ray
/// runs along most (`z` of ray space), the other two in winding order and the shear
/// factors, as arrays indexed by axis so the per-triangle test has no divisions and
/// no branches on the axis. Hits equal [`ray_triangle`]'s bit for bit (the same
/// operations).
#[derive(Clone, Copy, Debug, Default)]
pub struct RayShear {
    origin: [f32; 3],
    axes: [usize; 3],
    shear: [f32; 3],
}

impl RayShear {
    /// `None` for a ray no triangle can hit (a zero or non-finite direction).
    #[inline]
    pub fn new(ray: &Ray) -> Option<RayShear> {
        let d = ray.dir;
        let kz = d.abs().max_position();
        let (mut kx, mut ky) = ((kz + 1) % 3, (kz + 2) % 3);
        if d[kz] < 0.0 {
            std::mem::swap(&mut kx, &mut ky); // keep the winding
        }
        if d[kz] == 0.0 || !d[kz].is_finite() {
            return None;
        }
        let shear = [d[kx] / d[kz], d[ky] / d[kz], 1.0 / d[kz]];
        Some(RayShear { origin: ray.origin.to_array(), axes: [kx, ky, kz], shear })
    }

    /// The set-up for tests elsewhere (the kD tree's vector batch): the origin's
    /// coordinates on the axes of ray space, those axes (world axes: `x`, `y`, then
    /// `z`, the one the ray runs along most) and the shear factors.
    #[inline]
    pub(crate) fn parts(&self) -> ([f32; 3], [usize; 3], [f32; 3]) {
        let axes = self.axes.map(|k| k.min(2));
        (axes.map(|k| self.origin[k]), axes, self.shear)
    }

    /// The hit on triangle `[a, b, c]` with `t` in `[t_min, t_max]` (see
    /// [`ray_triangle`]).
    #[inline(always)]
    pub fn hit(&self, [a, b, c]: [Vec3; 3], t_min: f32, t_max: f32) -> Option<TriangleHit> {
        let [kx, ky, kz] = self.axes.map(|k| k.min(2));
        let [sx, sy, sz] = self.shear;
        let o = self.origin;
        let local = |p: Vec3| {
            let p = p.to_array();
            [p[kx] - o[kx], p[ky] - o[ky], p[kz] - o[kz]]
        };
        let (pa, pb, pc) = (local(a), local(b), local(c));
        let shear = |p: [f32; 3]| (p[0] - sx * p[2], p[1] - sy * p[2]);
        let ((ax, ay), (bx, by), (cx, cy)) = (shear(pa), shear(pb), shear(pc));
        let (mut u, mut v, mut w) = (cx * by - cy * bx, ax * cy - ay * cx, bx * ay - by * ax);
        if u == 0.0 || v == 0.0 || w == 0.0 {
            let (ax, ay, bx, by, cx, cy) = (ax as f64, ay as f64, bx as f64, by as f64, cx as f64, cy as f64);
            u = (cx * by - cy * bx) as f32;
            v = (ax * cy - ay * cx) as f32;
            w = (bx * ay - by * ax) as f32;
        }
        if (u < 0.0 || v < 0.0 || w < 0.0) && (u > 0.0 || v > 0.0 || w > 0.0) {
            return None;
        }
        let det = u + v + w;
        if det == 0.0 || !det.is_finite() {
            return None;
        }
        let t = (u * pa[2] + v * pb[2] + w * pc[2]) * sz / det;
        (t >= t_min && t <= t_max).then_some(TriangleHit { t, u: v / det, v: w / det })
    }
}

/// The triangle's unit normal by its winding (`(b - a) x (c - a)`), or zero when
/// it is degenerate.
#[inline]
pub fn triangle_normal([a, b, c]: [Vec3; 3]) -> Vec3 {
    (b - a).cross(c - a).normalize_or_zero()
}

/// Whether triangle `[a, b, c]` and `aabb` share a point (separating-axis test over
/// the box's 3 face normals, the triangle normal and the 9 edge cross products).
pub fn triangle_overlaps_aabb(tri: [Vec3; 3], aabb: &Aabb) -> bool {
    let (lo, hi) = (tri[0].min(tri[1]).min(tri[2]), tri[0].max(tri[1]).max(tri[2]));
    // Box face normals: the triangle's bounds against the box.
    if lo.cmpgt(aabb.max).any() || hi.cmplt(aabb.min).any() {
        return false;
    }
    let center = aabb.center();
    let half = aabb.extents() * 0.5;
    let v = [tri[0] - center, tri[1] - center, tri[2] - center];
    let edges = [v[1] - v[0], v[2] - v[1], v[0] - v[2]];
    // Does `axis` separate? Projections of the triangle vs the box's radius on it.
    let separates = |axis: Vec3| {
        let (p0, p1, p2) = (v[0].dot(axis), v[1].dot(axis), v[2].dot(axis));
        let r = half.dot(axis.abs());
        p0.min(p1).min(p2) > r || p0.max(p1).max(p2) < -r
    };
    // The triangle's plane.
    let normal = edges[0].cross(edges[1]);
    if separates(normal) {
        return false;
    }
    // Box edge x triangle edge.
    for e in edges {
        for axis in [Vec3::new(0.0, -e.z, e.y), Vec3::new(e.z, 0.0, -e.x), Vec3::new(-e.y, e.x, 0.0)] {
            if separates(axis) {
                return false;
            }
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    const TRI: [Vec3; 3] = [Vec3::new(0.0, 0.0, 0.0), Vec3::new(1.0, 0.0, 0.0), Vec3::new(0.0, 1.0, 0.0)];

    #[test]
    fn ray_hits_inside_edges_and_vertices() {
        let down = |x, y| Ray::new(Vec3::new(x, y, 2.0), Vec3::new(0.0, 0.0, -1.0));
        let hit = ray_triangle(&down(0.25, 0.25), TRI, 0.0, 10.0).unwrap();
        assert_eq!(hit.t, 2.0);
        assert_eq!((hit.u, hit.v), (0.25, 0.25));
        assert!(ray_triangle(&down(0.5, 0.0), TRI, 0.0, 10.0).is_some(), "edge");
        assert!(ray_triangle(&down(0.0, 0.0), TRI, 0.0, 10.0).is_some(), "vertex");
        assert!(ray_triangle(&down(0.6, 0.6), TRI, 0.0, 10.0).is_none());
        assert!(ray_triangle(&down(0.25, 0.25), TRI, 0.0, 1.5).is_none(), "beyond t_max");
        // From below (back face) it hits too; in the plane it misses.
        let up = Ray::new(Vec3::new(0.25, 0.25, -1.0), Vec3::new(0.0, 0.0, 1.0));
        assert_eq!(ray_triangle(&up, TRI, 0.0, 10.0).unwrap().t, 1.0);
        let along = Ray::new(Vec3::new(-1.0, 0.25, 0.0), Vec3::new(1.0, 0.0, 0.0));
        assert!(ray_triangle(&along, TRI, 0.0, 10.0).is_none());
        assert_eq!(triangle_normal(TRI), Vec3::Z);
    }

    #[test]
    fn box_overlap_matches_the_separating_axes() {
        let b = |min: [f32; 3], max: [f32; 3]| Aabb::new(Vec3::from(min), Vec3::from(max));
        assert!(triangle_overlaps_aabb(TRI, &b([0.1, 0.1, -0.1], [0.2, 0.2, 0.1])));
        // Touching the plane from above counts; just above does not.
        assert!(triangle_overlaps_aabb(TRI, &b([0.1, 0.1, 0.0], [0.2, 0.2, 0.1])));
        assert!(!triangle_overlaps_aabb(TRI, &b([0.1, 0.1, 0.01], [0.2, 0.2, 0.1])));
        // Inside the triangle's bounds but beyond the hypotenuse: only the edge axes see it.
        assert!(!triangle_overlaps_aabb(TRI, &b([0.6, 0.6, -0.1], [0.9, 0.9, 0.1])));
        assert!(triangle_overlaps_aabb(TRI, &b([0.4, 0.4, -0.1], [0.9, 0.9, 0.1])));
        // A box enclosing the whole triangle.
        assert!(triangle_overlaps_aabb(TRI, &b([-5.0; 3], [5.0; 3])));
    }
}
