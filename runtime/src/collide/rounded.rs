//! Contacts of rounded shapes. A sphere is a point and a capsule a segment, each with
//! a radius; they run as that core.
//!
//! - Core against core (sphere–sphere, sphere–capsule, capsule–capsule): closest
//!   points of two segments; nearly parallel capsules get two points spanning their
//!   overlap, so a capsule lying on another does not rock.
//! - Core against a polyhedron, cores apart: GJK gives the closest points and the
//!   normal; a capsule lying flat on a face (normal within 8° of the face's, segment
//!   within ~1° of its plane) gets its segment clipped to the face: two points.
//! - Core inside a polyhedron (deep penetration): the separating-axis test with the
//!   polyhedron's faces and the cross products of the segment with its edges; a face
//!   axis clips the segment to that face, an edge axis takes the closest points of
//!   the segment and the edge.

use glam::Vec3;

use super::gjk::{distance, Proxy};
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
    // Work in B's frame.
    let rel = xf_b.inv_mul(xf_a);
    let (s0, s1) = (rel.transform_point(r.a), rel.transform_point(r.b));
    let core = [s0, s1];
    let is_point = s0.distance_squared(s1) <= 1e-12;
    let seg = Proxy { points: if is_point { &core[..1] } else { &core[..] }, radius: 0.0 };
    let d = distance(&seg, &Isometry::IDENTITY, &Proxy { points, radius: 0.0 }, &Isometry::IDENTITY);
    let local = if d.overlap {
        deep(r.radius, s0, s1, is_point, poly, margin, edges)
    } else {
        if d.distance - r.radius > margin {
            return Manifold::EMPTY;
        }
        let mut normal = d.normal;
        let mut point_b = d.point_b;
        if let Some(tri) = edges {
            // Seams: an inactive edge or vertex reports the face normal instead.
            let front = tri.triangle.normal;
            if tri.inactive_at(point_b) {
                let side = front.dot(d.point_a - tri.triangle.v[0]);
                let n = if side >= 0.0 { -front } else { front };
                point_b = d.point_a + n * n.dot(tri.triangle.v[0] - d.point_a);
                normal = n;
            }
        }
        separated(r.radius, s0, s1, is_point, d.point_a, point_b, normal, poly, margin)
    };
    local.transformed(xf_b)
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
        if face.1 > FACE_COS && plane.normal.dot(dir).abs() < PARALLEL_SIN * dir.length() {
            if let Some((t0, t1)) = clip_segment_to_face(poly, face.0, s0, s1) {
                let n = -plane.normal;
                m.normal = n;
                for (k, t) in [t0, t1].into_iter().enumerate() {
                    let c = s0 + dir * t;
                    let dist = plane.distance(c);
                    let separation = dist - radius;
                    if separation <= margin {
                        m.push(ManifoldPoint { point: c + n * (0.5 * (radius + dist)), separation, id: 2 + k as u32 });
                    }
                }
                if m.count > 0 {
                    return m;
                }
                m.normal = normal;
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
