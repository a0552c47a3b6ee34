//! GJK distance between two convex cores (Gilbert, Johnson and Keerthi 1988), with
//! witness points: every simplex vertex remembers the two source points it was made
//! from, and the barycentric coordinates of the closest point on the final simplex
//! weigh them into the closest points on each shape (Ericson, *Real-Time Collision
//! Detection*, 9.5; Catto, "Computing Distance using GJK", GDC 2010).
//!
//! A shape enters as a [`Proxy`]: the points whose hull is its core, plus a radius.
//! A sphere is one point, a capsule two, a box eight, a hull its vertices, a triangle
//! three. Rounded shapes run as their core, so GJK never iterates towards a curved
//! surface; the radii are applied to the result.
//!
//! Termination, in order: the simplex encloses the origin (the cores overlap); the
//! closest point is the origin within 1e-6 m; the new support point gains less than
//! a relative 1e-5 of the squared distance; it repeats a simplex vertex; the distance
//! stopped shrinking (rounding); or `MAX_ITERATIONS`. Degenerate simplices (a
//! triangle of zero area, a flat tetrahedron) fall back to their best sub-feature.
//!
//! The computation runs in A's frame so that distant pairs keep their precision.

use glam::Vec3;

use crate::math::Isometry;

/// A convex core: the hull of `points` (local to its shape), grown by `radius`.
#[derive(Clone, Copy, Debug)]
pub struct Proxy<'a> {
    pub points: &'a [Vec3],
    pub radius: f32,
}

impl Proxy<'_> {
    /// Index of the point farthest along `dir` (the first on ties).
    #[inline]
    pub fn support(&self, dir: Vec3) -> usize {
        let mut best = 0;
        let mut best_dot = self.points[0].dot(dir);
        for (i, p) in self.points.iter().enumerate().skip(1) {
            let d = p.dot(dir);
            if d > best_dot {
                best = i;
                best_dot = d;
            }
        }
        best
    }
}

pub const MAX_ITERATIONS: u32 = 64;
const OVERLAP_DISTANCE_SQ: f32 = 1e-12;
const RELATIVE_TOLERANCE: f32 = 1e-5;

/// The result of [`distance`], in world space.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Distance {
    /// Between the rounded surfaces: core distance minus both radii. Negative when
    /// the radii overlap but the cores do not; zero when the cores overlap.
    pub distance: f32,
    /// Closest points on A's and B's rounded surfaces.
    pub point_a: Vec3,
    pub point_b: Vec3,
    /// Unit vector from A towards B; zero when the cores overlap.
    pub normal: Vec3,
    /// The cores overlap: no separating normal exists (use a penetration query).
    pub overlap: bool,
    pub iterations: u32,
}

#[derive(Clone, Copy, Debug, Default)]
struct Vertex {
    a: Vec3,
    b: Vec3,
    /// `b - a`: a point of the Minkowski difference.
    w: Vec3,
    index: (u32, u32),
}

#[derive(Clone, Copy, Debug, Default)]
struct Simplex {
    v: [Vertex; 4],
    weight: [f32; 4],
    count: usize,
}

impl Simplex {
    fn closest(&self) -> Vec3 {
        (0..self.count).map(|i| self.v[i].w * self.weight[i]).sum()
    }

    fn witnesses(&self) -> (Vec3, Vec3) {
        let mut a = Vec3::ZERO;
        let mut b = Vec3::ZERO;
        for i in 0..self.count {
            a += self.v[i].a * self.weight[i];
            b += self.v[i].b * self.weight[i];
        }
        (a, b)
    }

    fn keep(&mut self, indices: &[usize], weights: &[f32]) {
        let old = self.v;
        for (k, (&i, &w)) in indices.iter().zip(weights).enumerate() {
            self.v[k] = old[i];
            self.weight[k] = w;
        }
        self.count = indices.len();
    }

    /// Reduces the simplex to the smallest feature holding the point closest to the
    /// origin and sets its barycentric weights. Returns `false` when the origin lies
    /// inside a full tetrahedron.
    fn solve(&mut self) -> bool {
        match self.count {
            1 => {
                self.weight[0] = 1.0;
                true
            }
            2 => {
                let (i, w) = segment([self.v[0].w, self.v[1].w]);
                self.keep_feature(&i, &w);
                true
            }
            3 => {
                let (i, w) = triangle_closest([self.v[0].w, self.v[1].w, self.v[2].w]);
                self.keep_feature(&i, &w);
                true
            }
            _ => self.solve_tetrahedron(),
        }
    }

    fn keep_feature(&mut self, f: &Feature, w: &[f32; 3]) {
        let n = f.count;
        self.keep(&f.index[..n], &w[..n]);
    }

    fn solve_tetrahedron(&mut self) -> bool {
        let p = [self.v[0].w, self.v[1].w, self.v[2].w, self.v[3].w];
        // Faces as (three vertices, the opposite one).
        const FACES: [([usize; 3], usize); 4] = [([0, 1, 2], 3), ([0, 3, 1], 2), ([0, 2, 3], 1), ([1, 3, 2], 0)];
        let mut best: Option<(f32, [usize; 3], Feature, [f32; 3])> = None;
        let mut outside_any = false;
        // A nearly flat tetrahedron's face normals are round-off: its sides cannot
        // tell whether the origin is inside (a hull swept onto a terrain triangle read
        // as overlapping 14 mm away). Such a simplex is treated as its closest face;
        // an origin really inside it is then found at distance ~0.
        let edge = (1..4).fold(0.0f32, |m, i| m.max((p[i] - p[0]).length_squared())).sqrt();
        let volume = (p[1] - p[0]).dot((p[2] - p[0]).cross(p[3] - p[0]));
        let flat = volume.abs() <= 1e-5 * edge * edge * edge;
        for (face, opposite) in FACES {
            let [a, b, c] = face.map(|i| p[i]);
            let n = (b - a).cross(c - a);
            let side_origin = n.dot(-a);
            let side_opposite = n.dot(p[opposite] - a);
            // The origin is beyond this face (or the tetrahedron is flat here).
            if flat || side_origin * side_opposite <= 0.0 {
                outside_any = true;
                let (f, w) = triangle_closest([a, b, c]);
                let q: Vec3 = (0..f.count).map(|k| [a, b, c][f.index[k]] * w[k]).sum();
                let d = q.length_squared();
                if best.as_ref().is_none_or(|(bd, ..)| d < *bd) {
                    best = Some((d, face, f, w));
                }
            }
        }
        if !outside_any {
            return false;
        }
        let (_, face, f, w) = best.expect("a face was outside");
        let indices: [usize; 3] = [face[f.index[0]], face[f.index[1]], face[f.index[2]]];
        self.keep(&indices[..f.count], &w[..f.count]);
        true
    }
}

/// A sub-feature of a segment or triangle: which vertices, how many.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Feature {
    pub(crate) index: [usize; 3],
    pub(crate) count: usize,
}

const VERTEX: [Feature; 3] = [
    Feature { index: [0, 0, 0], count: 1 },
    Feature { index: [1, 0, 0], count: 1 },
    Feature { index: [2, 0, 0], count: 1 },
];

/// Closest point to the origin on segment `[a, b]`.
fn segment([a, b]: [Vec3; 2]) -> (Feature, [f32; 3]) {
    let e = b - a;
    let u = b.dot(e); // weight of a, unnormalised
    let v = -a.dot(e); // weight of b
    if v <= 0.0 {
        return (VERTEX[0], [1.0, 0.0, 0.0]);
    }
    if u <= 0.0 {
        return (VERTEX[1], [1.0, 0.0, 0.0]);
    }
    let s = u + v;
    (Feature { index: [0, 1, 0], count: 2 }, [u / s, v / s, 0.0])
}

/// Closest point to the origin on triangle `[a, b, c]` (Ericson 5.1.5), falling back
/// to the best edge when the triangle has no area.
pub(crate) fn triangle_closest([a, b, c]: [Vec3; 3]) -> (Feature, [f32; 3]) {
    let (ab, ac) = (b - a, c - a);
    let d1 = ab.dot(-a);
    let d2 = ac.dot(-a);
    if d1 <= 0.0 && d2 <= 0.0 {
        return (VERTEX[0], [1.0, 0.0, 0.0]);
    }
    let d3 = ab.dot(-b);
    let d4 = ac.dot(-b);
    if d3 >= 0.0 && d4 <= d3 {
        return (VERTEX[1], [1.0, 0.0, 0.0]);
    }
    let vc = d1 * d4 - d3 * d2;
    if vc <= 0.0 && d1 >= 0.0 && d3 <= 0.0 {
        let v = d1 / (d1 - d3);
        return (Feature { index: [0, 1, 0], count: 2 }, [1.0 - v, v, 0.0]);
    }
    let d5 = ab.dot(-c);
    let d6 = ac.dot(-c);
    if d6 >= 0.0 && d5 <= d6 {
        return (VERTEX[2], [1.0, 0.0, 0.0]);
    }
    let vb = d5 * d2 - d1 * d6;
    if vb <= 0.0 && d2 >= 0.0 && d6 <= 0.0 {
        let w = d2 / (d2 - d6);
        return (Feature { index: [0, 2, 0], count: 2 }, [1.0 - w, w, 0.0]);
    }
    let va = d3 * d6 - d5 * d4;
    if va <= 0.0 && d4 - d3 >= 0.0 && d5 - d6 >= 0.0 {
        let w = (d4 - d3) / ((d4 - d3) + (d5 - d6));
        return (Feature { index: [1, 2, 0], count: 2 }, [1.0 - w, w, 0.0]);
    }
    let sum = va + vb + vc;
    if sum.is_nan() || sum <= f32::MIN_POSITIVE || !sum.is_finite() {
        // No area: the closest of the three edges.
        let mut best = (f32::INFINITY, VERTEX[0], [1.0, 0.0, 0.0]);
        for (i, j) in [(0, 1), (1, 2), (0, 2)] {
            let pts = [a, b, c];
            let (f, w) = segment([pts[i], pts[j]]);
            let map = [i, j];
            let q: Vec3 = (0..f.count).map(|k| pts[map[f.index[k]]] * w[k]).sum();
            let d = q.length_squared();
            if d < best.0 {
                let mut index = [0; 3];
                for k in 0..f.count {
                    index[k] = map[f.index[k]];
                }
                best = (d, Feature { index, count: f.count }, w);
            }
        }
        return (best.1, best.2);
    }
    let (v, w) = (vb / sum, vc / sum);
    (Feature { index: [0, 1, 2], count: 3 }, [1.0 - v - w, v, w])
}

/// Distance between `a` placed by `xf_a` and `b` placed by `xf_b`.
pub fn distance(a: &Proxy, xf_a: &Isometry, b: &Proxy, xf_b: &Isometry) -> Distance {
    let rel = xf_a.inv_mul(xf_b);
    let inv_rot = rel.rotation.inverse();
    let vertex = |ia: usize, ib: usize| {
        let pa = a.points[ia];
        let pb = rel.transform_point(b.points[ib]);
        Vertex { a: pa, b: pb, w: pb - pa, index: (ia as u32, ib as u32) }
    };
    // Start from the support points along the line between the shapes' origins: on
    // separated pairs that is usually near the answer and saves iterations.
    let start = if rel.translation.length_squared() > 0.0 { rel.translation } else { Vec3::X };
    let mut simplex = Simplex { count: 1, ..Default::default() };
    simplex.v[0] = vertex(a.support(start), b.support(inv_rot * -start));
    let mut best_sq = f32::INFINITY;
    let mut iterations = 0;
    let mut overlap = false;
    let mut previous = simplex;
    while iterations < MAX_ITERATIONS {
        iterations += 1;
        if !simplex.solve() {
            overlap = true;
            break;
        }
        let v = simplex.closest();
        let dist_sq = v.length_squared();
        if dist_sq <= OVERLAP_DISTANCE_SQ {
            overlap = true;
            break;
        }
        if dist_sq >= best_sq {
            // Rounding made no progress: keep the better earlier simplex.
            simplex = previous;
            break;
        }
        best_sq = dist_sq;
        previous = simplex;
        // The support point of B - A in direction -v.
        let ia = a.support(v);
        let ib = b.support(inv_rot * -v);
        let w = vertex(ia, ib);
        if dist_sq - v.dot(w.w) <= RELATIVE_TOLERANCE * dist_sq {
            break;
        }
        if simplex.v[..simplex.count].iter().any(|x| x.index == w.index) {
            break;
        }
        simplex.v[simplex.count] = w;
        simplex.count += 1;
    }
    if overlap {
        let (pa, pb) = simplex.witnesses();
        let p = xf_a.transform_point((pa + pb) * 0.5);
        return Distance { distance: 0.0, point_a: p, point_b: p, normal: Vec3::ZERO, overlap: true, iterations };
    }
    let (pa, pb) = simplex.witnesses();
    let d = pb - pa;
    let core = d.length();
    let normal = if core > 0.0 { d / core } else { Vec3::ZERO };
    Distance {
        distance: core - a.radius - b.radius,
        point_a: xf_a.transform_point(pa + normal * a.radius),
        point_b: xf_a.transform_point(pb - normal * b.radius),
        normal: xf_a.transform_vector(normal),
        overlap: false,
        iterations,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collide::tests::lcg;
    use glam::Quat;

    fn cube(half: f32) -> Vec<Vec3> {
        (0..8)
            .map(|i| {
                Vec3::new(
                    if i & 1 != 0 { half } else { -half },
                    if i & 2 != 0 { half } else { -half },
                    if i & 4 != 0 { half } else { -half },
                )
            })
            .collect()
    }

    #[test]
    fn spheres_and_capsules() {
        let point = [Vec3::ZERO];
        let a = Proxy { points: &point, radius: 1.0 };
        let b = Proxy { points: &point, radius: 0.5 };
        let d = distance(&a, &Isometry::IDENTITY, &b, &Isometry::from_translation(Vec3::new(3.0, 0.0, 0.0)));
        assert!((d.distance - 1.5).abs() < 1e-6);
        assert!(d.point_a.abs_diff_eq(Vec3::X, 1e-6) && d.point_b.abs_diff_eq(Vec3::X * 2.5, 1e-6));
        assert!(d.normal.abs_diff_eq(Vec3::X, 1e-6));
        // Capsule segment (-1..1 on x) against a point above its middle.
        let seg = [Vec3::new(-1.0, 0.0, 0.0), Vec3::new(1.0, 0.0, 0.0)];
        let cap = Proxy { points: &seg, radius: 0.25 };
        let d = distance(&cap, &Isometry::IDENTITY, &b, &Isometry::from_translation(Vec3::new(0.3, 2.0, 0.0)));
        assert!((d.distance - 1.25).abs() < 1e-6, "{d:?}");
        assert!(d.point_a.abs_diff_eq(Vec3::new(0.3, 0.25, 0.0), 1e-6));
        // Crossed capsules one above the other: the segments' closest points.
        let seg_z = [Vec3::new(0.0, 0.0, -1.0), Vec3::new(0.0, 0.0, 1.0)];
        let cap_z = Proxy { points: &seg_z, radius: 0.25 };
        let d = distance(&cap, &Isometry::IDENTITY, &cap_z, &Isometry::from_translation(Vec3::new(0.5, 1.0, 0.2)));
        assert!((d.distance - 0.5).abs() < 1e-6, "{d:?}");
        assert!(d.normal.abs_diff_eq(Vec3::Y, 1e-6));
        // Radii overlap while cores are apart: negative distance, normal kept.
        let d = distance(&a, &Isometry::IDENTITY, &b, &Isometry::from_translation(Vec3::new(1.0, 0.0, 0.0)));
        assert!(!d.overlap && (d.distance + 0.5).abs() < 1e-6);
        // Coincident centres: overlap, no NaN.
        let d = distance(&a, &Isometry::IDENTITY, &b, &Isometry::IDENTITY);
        assert!(d.overlap && d.distance == 0.0 && d.point_a.is_finite());
    }

    #[test]
    fn boxes_face_edge_vertex() {
        let c = cube(1.0);
        let box_ = Proxy { points: &c, radius: 0.0 };
        // Face to face.
        let d = distance(&box_, &Isometry::IDENTITY, &box_, &Isometry::from_translation(Vec3::new(0.5, 3.0, 0.2)));
        assert!((d.distance - 1.0).abs() < 1e-5 && d.normal.abs_diff_eq(Vec3::Y, 1e-5), "{d:?}");
        assert!((d.point_a.y - 1.0).abs() < 1e-5 && (d.point_b.y - 2.0).abs() < 1e-5);
        // Rotated 45 degrees about z and lifted: B's edge points down at A's face.
        let xf = Isometry::new(
            Vec3::new(0.0, 1.0 + std::f32::consts::SQRT_2 + 0.5, 0.0),
            Quat::from_rotation_z(std::f32::consts::FRAC_PI_4),
        );
        let d = distance(&box_, &Isometry::IDENTITY, &box_, &xf);
        assert!((d.distance - 0.5).abs() < 1e-5, "{d:?}");
        // Vertex to vertex along the diagonal.
        let xf = Isometry::from_translation(Vec3::splat(3.0));
        let d = distance(&box_, &Isometry::IDENTITY, &box_, &xf);
        assert!((d.distance - 3f32.sqrt()).abs() < 1e-5);
        assert!(d.point_a.abs_diff_eq(Vec3::ONE, 1e-5) && d.point_b.abs_diff_eq(Vec3::splat(2.0), 1e-5));
        // Overlapping and touching.
        assert!(distance(&box_, &Isometry::IDENTITY, &box_, &Isometry::from_translation(Vec3::X)).overlap);
        let touching = distance(&box_, &Isometry::IDENTITY, &box_, &Isometry::from_translation(Vec3::X * 2.0));
        assert!(touching.overlap || touching.distance.abs() < 1e-6);
    }

    /// Brute force: the minimum distance between the two hulls' surfaces, sampled
    /// on a fine grid of their faces, is never below GJK's answer and close to it;
    /// GJK's witness points lie on the hulls at exactly its distance.
    #[test]
    fn random_hulls_match_brute_force() {
        use crate::shapes::{ConvexHull, Polytope, MAX_FACE_VERTICES};
        let mut seed = 11;
        for case in 0..60 {
            let cloud = |seed: &mut u64, n| -> Vec<Vec3> {
                (0..n).map(|_| Vec3::new(lcg(seed), lcg(seed), lcg(seed)) * Vec3::new(1.0, 0.7, 1.3)).collect()
            };
            let ha = ConvexHull::new(&cloud(&mut seed, 12)).unwrap();
            let hb = ConvexHull::new(&cloud(&mut seed, 12)).unwrap();
            let xa = Isometry::new(
                Vec3::new(lcg(&mut seed), lcg(&mut seed), lcg(&mut seed)),
                Quat::from_rotation_x(lcg(&mut seed) * 3.0),
            );
            let dir = Vec3::new(lcg(&mut seed), lcg(&mut seed), lcg(&mut seed)).normalize_or(Vec3::X);
            let xb = Isometry::new(
                xa.translation + dir * (2.5 + case as f32 * 0.02),
                Quat::from_rotation_y(lcg(&mut seed) * 3.0),
            );
            let (pa, pb) = (Proxy { points: ha.vertices(), radius: 0.0 }, Proxy { points: hb.vertices(), radius: 0.0 });
            let d = distance(&pa, &xa, &pb, &xb);
            if d.overlap {
                continue;
            }
            assert!((d.point_b - d.point_a).length() - d.distance < 1e-4);
            // Sample both surfaces.
            let sample = |h: &ConvexHull, xf: &Isometry| -> Vec<Vec3> {
                let mut out = Vec::new();
                let mut loop_ = [0u16; MAX_FACE_VERTICES];
                for f in 0..h.face_count() {
                    let n = h.face_vertices(f, &mut loop_);
                    let p0 = h.vertex(loop_[0] as usize);
                    for k in 1..n - 1 {
                        let (p1, p2) = (h.vertex(loop_[k] as usize), h.vertex(loop_[k + 1] as usize));
                        let steps = 12;
                        for i in 0..=steps {
                            for j in 0..=steps - i {
                                let (u, v) = (i as f32 / steps as f32, j as f32 / steps as f32);
                                out.push(xf.transform_point(p0 + (p1 - p0) * u + (p2 - p0) * v));
                            }
                        }
                    }
                }
                out
            };
            let (sa, sb) = (sample(&ha, &xa), sample(&hb, &xb));
            let mut brute = f32::INFINITY;
            for p in &sa {
                for q in &sb {
                    brute = brute.min(p.distance(*q));
                }
            }
            assert!(brute >= d.distance - 1e-4, "case {case}: brute {brute} < gjk {}", d.distance);
            assert!(brute - d.distance < 0.05, "case {case}: brute {brute} vs gjk {}", d.distance);
        }
    }

    #[test]
    fn degenerate_input_gives_no_nan() {
        let same = [Vec3::ONE, Vec3::ONE, Vec3::ONE];
        let flat = [Vec3::ZERO, Vec3::X, Vec3::Y, Vec3::new(1.0, 1.0, 0.0)];
        let p = Proxy { points: &same, radius: 0.0 };
        let q = Proxy { points: &flat, radius: 0.1 };
        for t in [Vec3::ZERO, Vec3::new(0.3, 0.3, 0.0), Vec3::new(0.0, 0.0, 2.0), Vec3::new(-1.0, -1.0, 0.0)] {
            let d = distance(&p, &Isometry::IDENTITY, &q, &Isometry::from_translation(t));
            assert!(d.distance.is_finite() && d.point_a.is_finite() && d.point_b.is_finite() && d.normal.is_finite());
        }
    }

    /// Distance is 1-Lipschitz in a translation: swept in small steps past triangles
    /// (nearly flat Minkowski tetrahedra), no step may jump to an overlap from far
    /// away. A flat tetrahedron once read as "origin inside" 14 mm from the triangle.
    #[test]
    fn distance_is_continuous_along_a_sweep_past_triangles() {
        let mut seed = 77u64;
        let mut overlaps = 0;
        for _ in 0..60 {
            let hull: Vec<Vec3> = (0..16)
                .map(|_| Vec3::new(lcg(&mut seed), lcg(&mut seed), lcg(&mut seed)).normalize_or(Vec3::Y) * 0.5)
                .collect();
            let tri: Vec<Vec3> = (0..3).map(|_| Vec3::new(lcg(&mut seed), lcg(&mut seed), lcg(&mut seed))).collect();
            let (a, b) = (Proxy { points: &hull, radius: 0.0 }, Proxy { points: &tri, radius: 0.0 });
            let start = Vec3::new(lcg(&mut seed), lcg(&mut seed), lcg(&mut seed)) * 3.0;
            let step = -start * 2.0 / 4000.0;
            let rot = Quat::from_rotation_y(lcg(&mut seed) * 3.0);
            let mut last: Option<f32> = None;
            for k in 0..=4000 {
                let d = distance(&a, &Isometry::new(start + step * k as f32, rot), &b, &Isometry::IDENTITY);
                let d = if d.overlap { 0.0 } else { d.distance };
                overlaps += (d == 0.0) as usize;
                if let Some(prev) = last {
                    assert!((d - prev).abs() <= step.length() * 1.01 + 1e-4, "step {k}: {prev} -> {d}");
                }
                last = Some(d);
            }
        }
        assert!(overlaps > 1000, "{overlaps} overlapping poses");
    }
}
