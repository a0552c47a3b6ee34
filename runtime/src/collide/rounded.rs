//! Contacts of rounded shapes. A sphere is a point and a capsule a segment, each with
//! a radius; they run as that core.
//!
//! - Core against core (sphere–sphere, sphere–capsule, capsule–capsule): closest
//!   points of two segments; nearly parallel capsules get two points spanning their
//!   overlap, so a capsule lying on another does not rock.
//! - Core against a polyhedron, cores apart: GJK gives the closest points and the
//!   normal (against a triangle they are found directly). When the normal is within
//!   8° of a face's, a capsule's segment is clipped to that face and both ends within
//!   the margin become points: two for a capsule lying flat, so it does not rock.
//! - Core inside a polyhedron (deep penetration): the separating-axis test with the
//!   polyhedron's faces and the cross products of the segment with its edges; a face
//!   axis clips the segment to that face, an edge axis takes the closest points of
//!   the segment and the edge.

use glam::Vec3;

use super::gjk::{distance, triangle_closest, Proxy};
use super::manifold::{Manifold, ManifoldPoint};
use super::segment::{closest_on_segment, closest_parameters, closest_segment_segment};
use crate::math::Isometry;
use crate::shapes::{Polytope, TrianglePoly, MAX_FACE_VERTICES};

/// A core segment `a`-`b` (a point when equal) in its shape's frame, plus a radius.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Rounded {
    pub a: Vec3,
    pub b: Vec3,
    pub radius: f32,
}

/// A triangle's active edges (see `mesh.rs`); contacts on inactive features take the
/// triangle's normal.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TriangleEdges {
    pub triangle: TrianglePoly,
    pub active: [bool; 3],
}

impl TriangleEdges {
    /// Which edges point `p` (on or near the triangle) lies on.
    fn edges_at(&self, p: Vec3) -> [bool; 3] {
        let v = self.triangle.v;
        let tolerance = 1e-3 * (v[1] - v[0]).length().max((v[2] - v[0]).length());
        std::array::from_fn(|i| {
            let (a, b) = (v[i], v[(i + 1) % 3]);
            let t = closest_on_segment(a, b, p);
            (a + (b - a) * t).distance(p) <= tolerance
        })
    }

    /// Whether the closest point `p` on the triangle lies on an inactive edge or on a
    /// vertex whose two edges are inactive.
    pub(crate) fn inactive_at(&self, p: Vec3) -> bool {
        let on = self.edges_at(p);
        on.iter().any(|&e| e) && (0..3).filter(|&i| on[i]).all(|i| !self.active[i])
    }

    /// Whether `p` lies on an active edge.
    pub(crate) fn on_active_edge(&self, p: Vec3) -> bool {
        let on = self.edges_at(p);
        (0..3).any(|i| on[i] && self.active[i])
    }
}

const PARALLEL_SIN: f32 = 0.02;
const FACE_COS: f32 = 0.99;

/// Core against core, A and B rounded.
pub(crate) fn collide_rounded(ra: &Rounded, xf_a: &Isometry, rb: &Rounded, xf_b: &Isometry, margin: f32) -> Manifold {
    let rel = xf_a.inv_mul(xf_b);
    let (b0, b1) = (rel.transform_point(rb.a), rel.transform_point(rb.b));
    let (a0, a1) = (ra.a, ra.b);
    let radii = ra.radius + rb.radius;
    let (s, t) = closest_parameters(a0, a1, b0, b1);
    let (ca, cb) = (a0 + (a1 - a0) * s, b0 + (b1 - b0) * t);
    let d = cb - ca;
    let dist = d.length();
    if dist - radii > margin {
        return Manifold::EMPTY;
    }
    let (da, db) = (a1 - a0, b1 - b0);
    let normal = if dist > 1e-6 {
        d / dist
    } else {
        let cross = da.cross(db);
        if cross.length_squared() > 1e-12 {
            cross.normalize()
        } else if da.length_squared() > 1e-12 {
            da.any_orthonormal_vector()
        } else if db.length_squared() > 1e-12 {
            db.any_orthonormal_vector()
        } else {
            Vec3::Y
        }
    };
    let mut m = Manifold { normal, ..Manifold::EMPTY };
    let surface =
        |pa: Vec3, pb: Vec3| ((pa + normal * ra.radius + pb - normal * rb.radius) * 0.5, normal.dot(pb - pa) - radii);
    let (la, lb) = (da.length(), db.length());
    if la > 1e-6 && lb > 1e-6 && dist > 1e-6 && da.cross(db).length() < PARALLEL_SIN * la * lb {
        // Parallel: the span of B's projection on A, clamped to A.
        let u0 = closest_on_segment(a0, a1, b0);
        let u1 = closest_on_segment(a0, a1, b1);
        let (lo, hi) = (u0.min(u1), u0.max(u1));
        if (hi - lo) * la > 1e-3 {
            for (k, u) in [lo, hi].into_iter().enumerate() {
                let pa = a0 + da * u;
                let pb = b0 + db * closest_on_segment(b0, b1, pa);
                let (point, separation) = surface(pa, pb);
                if separation <= margin {
                    m.push(ManifoldPoint { point, separation, id: 1 + k as u32 });
                }
            }
            return m.transformed(xf_a);
        }
    }
    let (point, separation) = surface(ca, cb);
    m.push(ManifoldPoint { point, separation, id: 0 });
    m.transformed(xf_a)
}

/// A's core segment in B's frame (where the rounded–polytope tests work), and whether
/// it is a point.
fn core_in_b(r: &Rounded, xf_a: &Isometry, xf_b: &Isometry) -> (Vec3, Vec3, bool) {
    let rel = xf_b.inv_mul(xf_a);
    let (s0, s1) = (rel.transform_point(r.a), rel.transform_point(r.b));
    (s0, s1, s0.distance_squared(s1) <= 1e-12)
}

/// Rounded A against polyhedron B (`points` are B's vertices, for GJK).
pub(crate) fn collide_rounded_polytope(
    r: &Rounded,
    xf_a: &Isometry,
    poly: &impl Polytope,
    points: &[Vec3],
    xf_b: &Isometry,
    margin: f32,
    edges: Option<&TriangleEdges>,
) -> Manifold {
    let (s0, s1, is_point) = core_in_b(r, xf_a, xf_b);
    let core = [s0, s1];
    let seg = Proxy { points: if is_point { &core[..1] } else { &core[..] }, radius: 0.0 };
    let d = distance(&seg, &Isometry::IDENTITY, &Proxy { points, radius: 0.0 }, &Isometry::IDENTITY);
    let closest = (!d.overlap).then_some((d.point_a, d.point_b));
    rounded_contact(r.radius, s0, s1, is_point, closest, poly, margin, edges).transformed(xf_b)
}

/// Rounded A against triangle B: the closest points of a segment and a triangle are
/// found directly (both segment ends against the face, the segment against the three
/// edges), which is several times cheaper than GJK on these tiny cores.
pub(crate) fn collide_rounded_triangle(
    r: &Rounded,
    xf_a: &Isometry,
    tri: &TrianglePoly,
    xf_b: &Isometry,
    margin: f32,
    edges: Option<&TriangleEdges>,
) -> Manifold {
    let (s0, s1, is_point) = core_in_b(r, xf_a, xf_b);
    let closest = closest_segment_triangle(s0, s1, tri);
    rounded_contact(r.radius, s0, s1, is_point, closest, tri, margin, edges).transformed(xf_b)
}

/// Sphere A (centre `center` in A's frame) against box B, in closed form: the centre
/// clamped to the box is the closest point outside; inside, the nearest face.
pub(crate) fn collide_sphere_box(
    center: Vec3,
    radius: f32,
    xf_a: &Isometry,
    half: Vec3,
    xf_b: &Isometry,
    margin: f32,
) -> Manifold {
    let c = xf_b.inverse_transform_point(xf_a.transform_point(center));
    let q = c.clamp(-half, half);
    let gap = c - q;
    let dist_sq = gap.length_squared();
    let (out, face_point, separation, id) = if dist_sq > 1e-12 {
        let dist = dist_sq.sqrt();
        if dist - radius > margin {
            return Manifold::EMPTY;
        }
        (gap / dist, q, dist - radius, 0)
    } else {
        // Inside: the face the centre is nearest to.
        let depth = half - c.abs();
        let i = if depth.x <= depth.y && depth.x <= depth.z {
            0
        } else if depth.y <= depth.z {
            1
        } else {
            2
        };
        let mut out = Vec3::ZERO;
        out[i] = if c[i] >= 0.0 { 1.0 } else { -1.0 };
        let mut face_point = c;
        face_point[i] = out[i] * half[i];
        (out, face_point, -depth[i] - radius, 2)
    };
    // `out` points from the box towards the sphere; the manifold's normal from A to B.
    let mut m = Manifold { normal: -out, ..Manifold::EMPTY };
    m.push(ManifoldPoint { point: (c - out * radius + face_point) * 0.5, separation, id });
    m.transformed(xf_b)
}

/// The closest points of segment `s0`-`s1` and a triangle, or `None` when they touch.
fn closest_segment_triangle(s0: Vec3, s1: Vec3, tri: &TrianglePoly) -> Option<(Vec3, Vec3)> {
    let v = tri.v;
    let n = tri.normal;
    let (d0, d1) = (n.dot(s0 - v[0]), n.dot(s1 - v[0]));
    let inside = |p: Vec3| (0..3).all(|i| (v[(i + 1) % 3] - v[i]).cross(p - v[i]).dot(n) >= 0.0);
    if d0 * d1 <= 0.0 {
        let p = if d0 == d1 { s0 } else { s0 + (s1 - s0) * (d0 / (d0 - d1)) };
        if inside(p) {
            return None;
        }
    }
    let mut best = (f32::INFINITY, s0, s0);
    let mut consider = |pa: Vec3, pb: Vec3| {
        let d = pa.distance_squared(pb);
        if d < best.0 {
            best = (d, pa, pb);
        }
    };
    // A point core (a sphere's) searches once: the second search would find the same.
    let ends: &[Vec3] = if s0 == s1 { &[s0] } else { &[s0, s1] };
    for &s in ends {
        let (f, w) = triangle_closest([v[0] - s, v[1] - s, v[2] - s]);
        let q: Vec3 = (0..f.count).map(|k| v[f.index[k]] * w[k]).sum();
        consider(s, q);
    }
    for i in 0..3 {
        let (pa, pb) = closest_segment_segment(s0, s1, v[i], v[(i + 1) % 3]);
        consider(pa, pb);
    }
    (best.0 > 1e-12).then_some((best.1, best.2))
}

/// The manifold of a rounded core against a polyhedron in the polyhedron's frame,
/// given the cores' closest points (`None` when they touch).
#[allow(clippy::too_many_arguments)]
fn rounded_contact(
    radius: f32,
    s0: Vec3,
    s1: Vec3,
    is_point: bool,
    closest: Option<(Vec3, Vec3)>,
    poly: &impl Polytope,
    margin: f32,
    edges: Option<&TriangleEdges>,
) -> Manifold {
    let Some((point_a, mut point_b)) = closest else {
        return deep(radius, s0, s1, is_point, poly, margin, edges);
    };
    let gap = point_b - point_a;
    let dist = gap.length();
    if dist - radius > margin {
        return Manifold::EMPTY;
    }
    let mut normal = gap / dist;
    if let Some(tri) = edges {
        // Seams: an inactive edge or vertex reports the face normal instead, at the
        // true distance. Measuring to the face's plane instead would report a shape
        // hovering over the next face of a concave crease as deep inside this one
        // (that plane passes under it), and the phantom depth kicked it up each step.
        let front = tri.triangle.normal;
        if tri.inactive_at(point_b) {
            let side = front.dot(point_a - tri.triangle.v[0]);
            let n = if side >= 0.0 { -front } else { front };
            point_b = point_a + n * dist;
            normal = n;
        }
    }
    separated(radius, s0, s1, is_point, point_a, point_b, normal, poly, margin)
}

/// Cores apart: one point from the closest points, or two for a capsule lying on a face.
#[allow(clippy::too_many_arguments)]
fn separated(
    radius: f32,
    s0: Vec3,
    s1: Vec3,
    is_point: bool,
    pa: Vec3,
    pb: Vec3,
    normal: Vec3,
    poly: &impl Polytope,
    margin: f32,
) -> Manifold {
    let mut m = Manifold { normal, ..Manifold::EMPTY };
    if !is_point {
        // The face most opposed to the normal.
        let mut face = (0, f32::NEG_INFINITY);
        for f in 0..poly.face_count() {
            let d = poly.plane(f).normal.dot(-normal);
            if d > face.1 {
                face = (f, d);
            }
        }
        let plane = poly.plane(face.0);
        let dir = s1 - s0;
        if face.1 > FACE_COS {
            if let Some((t0, t1)) = clip_segment_to_face(poly, face.0, s0, s1) {
                // Both ends of the segment's part over the face, each kept within the
                // margin: two points for a capsule lying (nearly) flat, so it does not
                // rock, and one for a tilted capsule. The clip must contain the
                // closest point, or the single closest point stands.
                let n = -plane.normal;
                m.normal = n;
                let ends: &[f32] = if (t1 - t0) * dir.length() < 1e-4 { &[t0] } else { &[t0, t1] };
                let mut deepest = f32::INFINITY;
                for (k, &t) in ends.iter().enumerate() {
                    let c = s0 + dir * t;
                    let dist = plane.distance(c);
                    let separation = dist - radius;
                    deepest = deepest.min(separation);
                    if separation <= margin {
                        m.push(ManifoldPoint { point: c + n * (0.5 * (radius + dist)), separation, id: 2 + k as u32 });
                    }
                }
                if m.count > 0 && deepest <= normal.dot(pb - pa) - radius + 1e-3 {
                    return m;
                }
                m = Manifold { normal, ..Manifold::EMPTY };
            }
        }
    }
    let separation = normal.dot(pb - pa) - radius;
    m.push(ManifoldPoint { point: (pa + normal * radius + pb) * 0.5, separation, id: 0 });
    m
}

/// Core touching or inside the polyhedron: face and edge axes.
fn deep(
    radius: f32,
    s0: Vec3,
    s1: Vec3,
    is_point: bool,
    poly: &impl Polytope,
    margin: f32,
    edges: Option<&TriangleEdges>,
) -> Manifold {
    let mut face = (0, f32::NEG_INFINITY);
    for f in 0..poly.face_count() {
        let plane = poly.plane(f);
        let s = plane.distance(s0).min(plane.distance(s1));
        if s > face.1 {
            face = (f, s);
        }
    }
    let mut edge = (0, f32::NEG_INFINITY, Vec3::ZERO);
    if !is_point {
        let dir = s1 - s0;
        let center = poly.centroid();
        for e in 0..poly.edge_count() {
            if edges.is_some_and(|t| !t.active[e]) {
                continue;
            }
            let pe = poly.edge(e);
            let (p, q) = (poly.vertex(pe.v[0] as usize), poly.vertex(pe.v[1] as usize));
            let n = dir.cross(q - p);
            let len = n.length();
            if len < 1e-5 * dir.length() * (q - p).length() {
                continue;
            }
            let mut n = n / len;
            if n.dot(p - center) < 0.0 {
                n = -n;
            }
            let s = n.dot(s0).min(n.dot(s1)) - n.dot(poly.vertex(poly.support(n)));
            if s > edge.1 {
                edge = (e, s, n);
            }
        }
    }
    if face.1 - radius > margin && edge.1 - radius > margin {
        return Manifold::EMPTY;
    }
    if edge.1 > 0.9 * face.1 + 0.5 * 0.005 {
        let pe = poly.edge(edge.0);
        let (p, q) = (poly.vertex(pe.v[0] as usize), poly.vertex(pe.v[1] as usize));
        let (cs, ce) = closest_segment_segment(s0, s1, p, q);
        let n = -edge.2;
        let mut m = Manifold { normal: n, ..Manifold::EMPTY };
        let separation = edge.1 - radius;
        m.push(ManifoldPoint { point: (cs + n * radius + ce) * 0.5, separation, id: 4 + edge.0 as u32 });
        return m;
    }
    let plane = poly.plane(face.0);
    let n = -plane.normal;
    let mut m = Manifold { normal: n, ..Manifold::EMPTY };
    let range = if is_point { Some((0.0, 0.0)) } else { clip_segment_to_face(poly, face.0, s0, s1) };
    let (t0, t1) = range.unwrap_or((0.0, 1.0));
    let ends: &[f32] = if is_point || (t1 - t0) * (s1 - s0).length() < 1e-4 { &[t0] } else { &[t0, t1] };
    for (k, &t) in ends.iter().enumerate() {
        let c = s0 + (s1 - s0) * t;
        let dist = plane.distance(c);
        let separation = dist - radius;
        if separation <= margin {
            m.push(ManifoldPoint { point: c + n * (0.5 * (radius + dist)), separation, id: 2 + k as u32 });
        }
    }
    m
}

/// The parameter range of segment `s0`-`s1` inside face `face`'s side planes.
fn clip_segment_to_face(poly: &impl Polytope, face: usize, s0: Vec3, s1: Vec3) -> Option<(f32, f32)> {
    let plane = poly.plane(face);
    let mut idx = [0u16; MAX_FACE_VERTICES];
    let n = poly.face_vertices(face, &mut idx);
    let (mut t0, mut t1) = (0.0f32, 1.0f32);
    let dir = s1 - s0;
    for i in 0..n {
        let (r0, r1) = (poly.vertex(idx[i] as usize), poly.vertex(idx[(i + 1) % n] as usize));
        let side = (r1 - r0).cross(plane.normal);
        let (d0, dd) = (side.dot(s0 - r0), side.dot(dir));
        if dd.abs() <= 1e-12 {
            if d0 > 0.0 {
                return None;
            }
            continue;
        }
        let t = -d0 / dd;
        if dd > 0.0 {
            t1 = t1.min(t);
        } else {
            t0 = t0.max(t);
        }
        if t0 > t1 {
            return None;
        }
    }
    Some((t0, t1))
}

#[cfg(test)]
mod tests {
    use glam::Quat;

    use super::*;
    use crate::collide::tests::lcg;

    /// The direct segment–triangle closest points give the manifold GJK gives, on
    /// random capsules and spheres around, across and through random triangles.
    #[test]
    fn direct_triangle_path_matches_gjk() {
        let mut seed = 9u64;
        let mut rnd = || lcg(&mut seed);
        let mut touching = 0;
        for case in 0..3000 {
            let mut v3 = || Vec3::new(rnd(), rnd(), rnd());
            let Some(tri) = TrianglePoly::new([v3() * 2.0, v3() * 2.0, v3() * 2.0]) else { continue };
            let half = if case % 4 == 0 { Vec3::ZERO } else { v3() * 0.6 };
            let r = Rounded { a: -half, b: half, radius: 0.1 + 0.3 * v3().x.abs() };
            let xf_a = Isometry::new(v3(), Quat::from_axis_angle(v3().normalize_or(Vec3::Y), v3().x * 3.0));
            let xf_b = Isometry::new(v3() * 0.2, Quat::from_rotation_y(v3().y));
            let fast = collide_rounded_triangle(&r, &xf_a, &tri, &xf_b, 0.05, None);
            let gjk = collide_rounded_polytope(&r, &xf_a, &tri, &tri.v, &xf_b, 0.05, None);
            assert_eq!(fast.count, gjk.count, "case {case}: {fast:?} vs {gjk:?}");
            if fast.is_empty() {
                continue;
            }
            touching += 1;
            assert!(fast.normal.dot(gjk.normal) > 0.999, "case {case}: {fast:?} vs {gjk:?}");
            for (p, q) in fast.points().iter().zip(gjk.points()) {
                assert!((p.separation - q.separation).abs() < 1e-4, "case {case}: {fast:?} vs {gjk:?}");
                assert!(p.point.distance(q.point) < 2e-3 && p.id == q.id, "case {case}: {fast:?} vs {gjk:?}");
            }
        }
        assert!(touching > 500, "{touching}");
    }

    /// A capsule over a triangle's face gets both ends of its segment as points when
    /// both lie within the margin (nearly flat), and only the low end when tilted.
    #[test]
    fn capsule_over_a_face_gets_each_end_within_the_margin() {
        let tri = TrianglePoly::new([Vec3::new(-4.0, 0.0, -4.0), Vec3::new(0.0, 0.0, 4.0), Vec3::new(4.0, 0.0, -4.0)])
            .unwrap();
        let r = Rounded { a: Vec3::new(-0.4, 0.0, 0.0), b: Vec3::new(0.4, 0.0, 0.0), radius: 0.3 };
        let count = |tilt: f32| {
            // Low end 5 mm into the face.
            let q = Quat::from_rotation_z(tilt);
            let low = (q * r.a).y.min((q * r.b).y);
            let xf = Isometry::new(Vec3::new(0.0, 0.3 - low - 0.005, 0.0), q);
            let m = collide_rounded_triangle(&r, &xf, &tri, &Isometry::IDENTITY, 0.05, None);
            assert!(m.normal.abs_diff_eq(-Vec3::Y, 1e-5), "{m:?}");
            assert!((m.min_separation() + 0.005).abs() < 1e-4, "{m:?}");
            m.count
        };
        // 3° of tilt: the high end is 4 cm up, within the 5 cm margin.
        assert_eq!(count(0.05), 2);
        assert_eq!(count(0.0), 2);
        // 30°: the high end is 40 cm up.
        assert_eq!(count(0.5), 1);
    }

    /// The closed-form sphere–box contact gives what the GJK/SAT core path gives,
    /// outside, touching and with the centre inside the box.
    #[test]
    fn sphere_box_matches_the_core_path() {
        use crate::shapes::BoxPoly;
        let mut seed = 3u64;
        let mut rnd = || lcg(&mut seed);
        let mut touching = 0;
        for case in 0..3000 {
            let mut v3 = || Vec3::new(rnd(), rnd(), rnd());
            let half = v3().abs() + Vec3::splat(0.2);
            let b = BoxPoly { half };
            let corners: [Vec3; 8] = std::array::from_fn(|i| b.vertex(i));
            let radius = 0.05 + 0.4 * v3().x.abs();
            let xf_a = Isometry::from_translation(v3() * 1.5);
            let xf_b = Isometry::new(v3() * 0.2, Quat::from_axis_angle(v3().normalize_or(Vec3::Y), v3().x * 3.0));
            let sphere = Rounded { a: Vec3::ZERO, b: Vec3::ZERO, radius };
            let fast = collide_sphere_box(Vec3::ZERO, radius, &xf_a, half, &xf_b, 0.05);
            let core = collide_rounded_polytope(&sphere, &xf_a, &b, &corners, &xf_b, 0.05, None);
            assert_eq!(fast.count, core.count, "case {case}: {fast:?} vs {core:?}");
            if fast.is_empty() {
                continue;
            }
            touching += 1;
            let (p, q) = (fast.points[0], core.points[0]);
            assert!(fast.normal.dot(core.normal) > 0.999, "case {case}: {fast:?} vs {core:?}");
            assert!((p.separation - q.separation).abs() < 1e-4 && p.id == q.id, "case {case}: {fast:?} vs {core:?}");
            assert!(p.point.distance(q.point) < 1e-3, "case {case}: {fast:?} vs {core:?}");
        }
        assert!(touching > 500, "{touching}");
    }
}
