//! Submerged volume: the volume of a shape below a water surface inside a vertical
//! prism (one run of water voxels over a rectangle of columns), and its centroid,
//! for buoyancy.
//!
//! The method follows "Exact Buoyancy for Polyhedra" (Erin Catto, Game Programming
//! Gems 6, 2.5; Jolt's `GetSubmergedVolume` is the same idea): integrate over the
//! shape's surface, clipped to the submerged region, a field whose divergence is the
//! integrand. Here the region is `shape ∩ prism ∩ {y <= h}`; with the field
//! `F = (0, f, 0)` and `f = 0` on the plane `y = h`, the divergence theorem gives
//! `∫ ∂f/∂y dV = ∮ f n_y dA`, and the cut faces drop out: the prism's sides have
//! `n_y = 0` and the water surface has `f = 0`. So only the shape's own faces,
//! clipped by the prism's four sides and the surface (Sutherland–Hodgman), are
//! summed, per triangle in closed form:
//!
//! - volume: `f = y - h`;
//! - first moments: `f = x (y - h)`, `f = z (y - h)` and `f = (y² - h²) / 2`.
//!
//! A linear `f` integrates to its mean at the vertices, a product of two linear
//! functions to `(Σ fᵢgᵢ + Σfᵢ Σgᵢ) / 12` of the triangle's area. Boxes and hulls are
//! their own faces, so they are exact. Spheres and capsules are tessellated (12
//! meridians, 6 rings) and their result scaled by true volume over mesh volume: exact
//! when fully submerged, within about 2% when partly.

use std::f32::consts::PI;
use std::sync::OnceLock;

use glam::Vec3;

use super::{Polytope, Shape, BOX_FACES, MAX_FACE_VERTICES};
use crate::math::Isometry;

/// Meridians and rings of the sphere and capsule tessellation. An odd number of
/// bands (rings + 1) puts no ring on the equator, so a capsule splits there.
const MERIDIANS: usize = 12;
const RINGS: usize = 6;

/// A volume, its first moment `∫ (p - origin) dV` about the mesh's origin, and
/// the area of its top cut (`dV/dh`: how fast the volume grows as the surface
/// rises; the waterline area).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct VolumeMoments {
    pub volume: f32,
    pub moment: Vec3,
    pub area: f32,
}

impl VolumeMoments {
    /// Adds `o` times `scale`.
    pub fn add(&mut self, o: VolumeMoments, scale: f32) {
        self.volume += o.volume * scale;
        self.moment += o.moment * scale;
        self.area += o.area * scale;
    }
}

/// A vertical prism over the rectangle `[min_x, max_x] × [min_z, max_z]`, in world
/// coordinates.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Prism {
    pub min_x: f32,
    pub max_x: f32,
    pub min_z: f32,
    pub max_z: f32,
}

/// The closed surfaces of a placed shape as polygons (counter-clockwise from
/// outside), relative to an origin. Reused between shapes: no allocation once grown.
#[derive(Debug, Default)]
pub struct SurfaceMesh {
    origin: Vec3,
    points: Vec<Vec3>,
    /// Polygon `i` is `points[starts[i]..starts[i + 1]]`.
    starts: Vec<u32>,
    /// Per polygon its bounds (relative to the origin), so polygons wholly inside a
    /// plane skip its clip and polygons wholly outside are skipped.
    bounds: Vec<(Vec3, Vec3)>,
    /// Per closed part: its first polygon and its volume scale (true volume over mesh
    /// volume: 1 for polyhedra).
    parts: Vec<(u32, f32)>,
    /// Scratch of the clipper.
    clip: [Vec<Vec3>; 2],
}

impl SurfaceMesh {
    /// An empty mesh with room for a sphere or capsule (and small hulls): setting
    /// one allocates nothing.
    pub fn with_capacity() -> SurfaceMesh {
        let polygons = 2 * MERIDIANS * RINGS + 8;
        let _ = unit_sphere();
        SurfaceMesh {
            origin: Vec3::ZERO,
            points: Vec::with_capacity(3 * polygons),
            starts: Vec::with_capacity(polygons + 1),
            bounds: Vec::with_capacity(polygons),
            parts: Vec::with_capacity(4),
            clip: [Vec::with_capacity(80), Vec::with_capacity(80)],
        }
    }

    /// The faces of `shape` placed by `xf`, relative to `origin` (pick one near the
    /// shape: the body's centre of mass). Triangles have no volume and add nothing.
    pub fn set(&mut self, shape: &Shape, xf: &Isometry, origin: Vec3) {
        self.origin = origin;
        self.points.clear();
        self.starts.clear();
        self.starts.push(0);
        self.parts.clear();
        self.add(shape, xf);
        self.bounds.clear();
        for w in self.starts.windows(2) {
            let poly = &self.points[w[0] as usize..w[1] as usize];
            let first = (poly[0], poly[0]);
            self.bounds.push(poly.iter().fold(first, |(lo, hi), &p| (lo.min(p), hi.max(p))));
        }
    }

    fn add(&mut self, shape: &Shape, xf: &Isometry) {
        let first = (self.starts.len() - 1) as u32;
        match shape {
            Shape::Box { half } => {
                let poly = super::BoxPoly { half: *half };
                let corners: [Vec3; 8] = std::array::from_fn(|i| xf.transform_point(poly.vertex(i)) - self.origin);
                for face in BOX_FACES {
                    self.points.extend(face.iter().map(|&v| corners[v as usize]));
                    self.starts.push(self.points.len() as u32);
                }
                self.parts.push((first, 1.0));
            }
            Shape::Hull(hull) => {
                let mut loop_ = [0u16; MAX_FACE_VERTICES];
                for f in 0..hull.face_count() {
                    let n = hull.face_vertices(f, &mut loop_);
                    let o = self.origin;
                    self.points.extend(loop_[..n].iter().map(|&v| xf.transform_point(hull.vertex(v as usize)) - o));
                    self.starts.push(self.points.len() as u32);
                }
                self.parts.push((first, 1.0));
            }
            Shape::Sphere { center, radius } => self.add_rounded(*center, *center, *radius, xf),
            Shape::Capsule { a, b, radius } => self.add_rounded(*a, *b, *radius, xf),
            Shape::Compound(c) => {
                for part in c.parts() {
                    self.add(&part.shape, &xf.mul(&part.pose));
                }
            }
            Shape::Triangle(_) => {}
        }
    }

    /// A sphere (`a == b`) or capsule: the unit tessellation with its upper half
    /// about `b` and its lower half about `a`, the capsule's axis as "up".
    fn add_rounded(&mut self, a: Vec3, b: Vec3, radius: f32, xf: &Isometry) {
        let first = (self.starts.len() - 1) as u32;
        let (wa, wb) = (xf.transform_point(a) - self.origin, xf.transform_point(b) - self.origin);
        let length = (wb - wa).length();
        // The mesh follows the axis but never the turn about it (`any_orthonormal_pair`
        // depends on the axis alone), and a sphere's mesh stays upright: otherwise a
        // spinning ball's facets would rock its centre of buoyancy and pump its spin.
        let up = if length > 0.0 { (wb - wa) / length } else { Vec3::Y };
        let (t1, _) = up.any_orthonormal_pair();
        let t2 = t1.cross(up);
        let table = unit_sphere();
        let place = |p: Vec3| {
            let centre = if p.y > 0.0 { wb } else { wa };
            centre + (t1 * p.x + up * p.y + t2 * p.z) * radius
        };
        let start = self.points.len();
        for tri in &table.faces {
            self.points.extend(tri.iter().map(|&v| place(table.points[v as usize])));
            self.starts.push(self.points.len() as u32);
        }
        let mesh_volume: f32 =
            self.points[start..].chunks_exact(3).map(|t| t[0].dot(t[1].cross(t[2]))).sum::<f32>() / 6.0;
        let true_volume = 4.0 / 3.0 * PI * radius.powi(3) + PI * radius * radius * length;
        let scale = if mesh_volume > 0.0 { true_volume / mesh_volume } else { 0.0 };
        self.parts.push((first, scale));
    }

    /// The volume of the mesh inside `prism` and at or below `y = h`, and its first
    /// moment about the mesh's origin.
    pub fn below(&mut self, prism: &Prism, h: f32) -> VolumeMoments {
        let o = self.origin;
        // Planes as "keep where (p - o)[axis] * sign <= bound".
        let planes = [
            (0, -1.0, o.x - prism.min_x),
            (0, 1.0, prism.max_x - o.x),
            (2, -1.0, o.z - prism.min_z),
            (2, 1.0, prism.max_z - o.z),
            (1, 1.0, h - o.y),
        ];
        let h = h - o.y;
        let mut total = VolumeMoments::default();
        for (k, &(first, scale)) in self.parts.iter().enumerate() {
            let last = self.parts.get(k + 1).map_or(self.starts.len() - 1, |p| p.0 as usize);
            let mut part = VolumeMoments::default();
            for poly in first as usize..last {
                let (s, e) = (self.starts[poly] as usize, self.starts[poly + 1] as usize);
                let (lo, hi) = self.bounds[poly];
                // Which planes cut the polygon; none wholly excludes it.
                let mut cuts = [false; 5];
                let mut outside = false;
                for (k, &(axis, sign, bound)) in planes.iter().enumerate() {
                    let (near, far) = if sign > 0.0 { (lo[axis], hi[axis]) } else { (-hi[axis], -lo[axis]) };
                    outside |= near > bound;
                    cuts[k] = far > bound;
                }
                if outside {
                    continue;
                }
                if !cuts.contains(&true) {
                    integrate(&self.points[s..e], h, &mut part);
                    continue;
                }
                let [a, b] = &mut self.clip;
                a.clear();
                a.extend_from_slice(&self.points[s..e]);
                for (&(axis, sign, bound), _) in planes.iter().zip(cuts).filter(|(_, cut)| *cut) {
                    clip(a, b, axis, sign, bound);
                    std::mem::swap(a, b);
                    if a.len() < 3 {
                        break;
                    }
                }
                if a.len() >= 3 {
                    integrate(a, h, &mut part);
                }
            }
            total.add(part, scale);
        }
        total
    }
}

/// The part of the sphere at `center` below `y = h` in closed form (a spherical
/// cap), moments about `origin`: for a prism that holds the whole sphere, exact
/// where the tessellation is within 2%.
pub fn sphere_below(center: Vec3, radius: f32, h: f32, origin: Vec3) -> VolumeMoments {
    let t = (h - (center.y - radius)).clamp(0.0, 2.0 * radius);
    let volume = PI * t * t * (3.0 * radius - t) / 3.0;
    if volume <= 0.0 {
        return VolumeMoments::default();
    }
    // A cap of height t has its centroid 3 (2r - t)² / (4 (3r - t)) below the centre.
    let drop = 3.0 * (2.0 * radius - t).powi(2) / (4.0 * (3.0 * radius - t));
    let centroid = center - Vec3::Y * drop;
    VolumeMoments { volume, moment: (centroid - origin) * volume, area: PI * t * (2.0 * radius - t) }
}

/// Keeps the part of polygon `from` where `p[axis] * sign <= bound`, into `to`.
fn clip(from: &[Vec3], to: &mut Vec<Vec3>, axis: usize, sign: f32, bound: f32) {
    to.clear();
    let Some(&last) = from.last() else { return };
    let mut prev = last;
    let mut prev_d = prev[axis] * sign - bound;
    for &p in from {
        let d = p[axis] * sign - bound;
        if (d <= 0.0) != (prev_d <= 0.0) {
            let t = prev_d / (prev_d - d);
            let mut x = prev + (p - prev) * t;
            // Exactly on the plane, so the cut faces stay flat.
            x[axis] = bound * sign;
            to.push(x);
        }
        if d <= 0.0 {
            to.push(p);
        }
        prev = p;
        prev_d = d;
    }
}

/// Adds the surface integrals of a clipped polygon (a fan of triangles) below `h`.
fn integrate(poly: &[Vec3], h: f32, acc: &mut VolumeMoments) {
    // Mean of the product of two linear functions over a triangle.
    let mean2 = |f: [f32; 3], g: [f32; 3]| {
        (f[0] * g[0] + f[1] * g[1] + f[2] * g[2] + (f[0] + f[1] + f[2]) * (g[0] + g[1] + g[2])) / 12.0
    };
    let p0 = poly[0];
    for w in poly[1..].windows(2) {
        let t = [p0, w[0], w[1]];
        // Area times n_y.
        let an = (t[1] - t[0]).cross(t[2] - t[0]).y * 0.5;
        if an == 0.0 {
            continue;
        }
        let d = t.map(|p| p.y - h);
        let s = t.map(|p| p.y + h);
        acc.volume += an * (d[0] + d[1] + d[2]) / 3.0;
        acc.area -= an;
        acc.moment.x += an * mean2(t.map(|p| p.x), d);
        acc.moment.y += an * mean2(d, s) * 0.5;
        acc.moment.z += an * mean2(t.map(|p| p.z), d);
    }
}

/// The unit sphere's tessellation: poles and rings, triangles counter-clockwise from
/// outside (quads split in two).
struct UnitSphere {
    points: Vec<Vec3>,
    faces: Vec<[u16; 3]>,
}

fn unit_sphere() -> &'static UnitSphere {
    static TABLE: OnceLock<UnitSphere> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut points = vec![Vec3::Y];
        for ring in 1..=RINGS {
            let theta = ring as f32 * PI / (RINGS + 1) as f32;
            for m in 0..MERIDIANS {
                let phi = m as f32 * 2.0 * PI / MERIDIANS as f32;
                points.push(Vec3::new(theta.sin() * phi.cos(), theta.cos(), theta.sin() * phi.sin()));
            }
        }
        points.push(-Vec3::Y);
        let south = (points.len() - 1) as u16;
        let at = |ring: usize, m: usize| (1 + (ring - 1) * MERIDIANS + m % MERIDIANS) as u16;
        let mut faces = Vec::new();
        for m in 0..MERIDIANS {
            faces.push([0, at(1, m + 1), at(1, m)]);
            for ring in 1..RINGS {
                let (a, b, c, d) = (at(ring, m), at(ring, m + 1), at(ring + 1, m + 1), at(ring + 1, m));
                faces.push([a, b, c]);
                faces.push([a, c, d]);
            }
            faces.push([south, at(RINGS, m), at(RINGS, m + 1)]);
        }
        UnitSphere { points, faces }
    })
}

#[cfg(test)]
mod tests {
    use glam::Quat;

    use super::*;

    fn everything() -> Prism {
        Prism { min_x: -1e4, max_x: 1e4, min_z: -1e4, max_z: 1e4 }
    }

    /// Grid sampling of `inside` over `[lo, hi]` below `h` inside `prism`: volume
    /// and centroid.
    fn sampled(inside: impl Fn(Vec3) -> bool, lo: Vec3, hi: Vec3, prism: &Prism, h: f32) -> (f64, Vec3) {
        let n = 120;
        let step = (hi - lo) / n as f32;
        let (mut count, mut sum) = (0u64, glam::DVec3::ZERO);
        for i in 0..n {
            for j in 0..n {
                for k in 0..n {
                    let p = lo + step * Vec3::new(i as f32 + 0.5, j as f32 + 0.5, k as f32 + 0.5);
                    let in_prism = p.x >= prism.min_x && p.x <= prism.max_x && p.z >= prism.min_z && p.z <= prism.max_z;
                    if in_prism && p.y <= h && inside(p) {
                        count += 1;
                        sum += p.as_dvec3();
                    }
                }
            }
        }
        let cell = (step.x * step.y * step.z) as f64;
        (count as f64 * cell, if count > 0 { (sum / count as f64).as_vec3() } else { Vec3::ZERO })
    }

    #[test]
    fn an_axis_aligned_box_is_exact() {
        let mut mesh = SurfaceMesh::default();
        let xf = Isometry::new(Vec3::new(3.0, 5.0, -2.0), Quat::IDENTITY);
        let shape = Shape::cuboid(Vec3::new(1.0, 0.5, 2.0)).unwrap();
        mesh.set(&shape, &xf, Vec3::new(3.0, 5.0, -2.0));
        for (h, depth) in [(4.5, 0.0), (4.75, 0.25), (5.0, 0.5), (5.5, 1.0), (9.0, 1.0), (-3.0, 0.0)] {
            let r = mesh.below(&everything(), h);
            assert!((r.volume - 8.0 * depth).abs() < 1e-4, "h {h}: {r:?}");
            // The bottom face counts from the moment the surface reaches it.
            let waterline = if (4.5..5.5).contains(&h) { 8.0 } else { 0.0 };
            assert!((r.area - waterline).abs() < 1e-4, "h {h}: {r:?}");
            if depth > 0.0 {
                let c = r.moment / r.volume;
                assert!((c - Vec3::new(0.0, depth * 0.5 - 0.5, 0.0)).length() < 1e-4, "h {h}: centroid {c}");
            }
        }
        // Half the box in x and a quarter in z, below y = 5.
        let prism = Prism { min_x: 3.0, max_x: 10.0, min_z: -3.0, max_z: -2.0 };
        let r = mesh.below(&prism, 5.0);
        assert!((r.volume - 1.0 * 0.5 * 1.0).abs() < 1e-4, "{r:?}");
        let c = r.moment / r.volume + Vec3::new(3.0, 5.0, -2.0);
        assert!((c - Vec3::new(3.5, 4.75, -2.5)).length() < 1e-4, "centroid {c}");
    }

    #[test]
    fn rotated_boxes_and_hulls_match_sampling() {
        let mut mesh = SurfaceMesh::default();
        let mut state = 7u32;
        let mut rand = move || {
            state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (state >> 8) as f32 / (1u32 << 24) as f32
        };
        let points: Vec<Vec3> = (0..24).map(|_| Vec3::new(rand() - 0.5, rand() - 0.5, rand() - 0.5) * 2.0).collect();
        let hull = Shape::hull(&points).unwrap();
        let Shape::Hull(h) = &hull else { unreachable!() };
        let cases = [(Shape::cuboid(Vec3::new(0.7, 0.4, 0.9)).unwrap(), 0), (hull.clone(), 1)];
        for (shape, kind) in cases {
            for case in 0..4 {
                let q = Quat::from_euler(glam::EulerRot::XYZ, rand() * 6.0, rand() * 6.0, rand() * 6.0);
                let xf = Isometry::new(Vec3::new(rand(), rand(), rand()), q);
                let inv = xf.inverse();
                let inside = |p: Vec3| {
                    let l = inv.transform_point(p);
                    match kind {
                        0 => l.abs().cmple(Vec3::new(0.7, 0.4, 0.9)).all(),
                        _ => (0..h.face_count()).all(|f| h.plane(f).distance(l) <= 0.0),
                    }
                };
                let prism =
                    Prism { min_x: xf.translation.x - 0.3, max_x: 9.0, min_z: -9.0, max_z: xf.translation.z + 0.2 };
                let water = xf.translation.y + rand() * 0.6 - 0.3;
                mesh.set(&shape, &xf, xf.translation);
                let r = mesh.below(&prism, water);
                let bound = shape.aabb(&xf);
                let (volume, centroid) = sampled(inside, bound.min, bound.max, &prism, water);
                let all = shape.mass_properties(1.0).mass as f64;
                assert!(
                    (r.volume as f64 - volume).abs() < 0.01 * all,
                    "case {case} kind {kind}: {} vs {volume}",
                    r.volume
                );
                let c = r.moment / r.volume + xf.translation;
                assert!((c - centroid).length() < 0.02, "case {case} kind {kind}: centroid {c} vs {centroid}");
            }
        }
    }

    #[test]
    fn spheres_and_capsules_are_exact_when_submerged_and_close_when_cut() {
        let mut mesh = SurfaceMesh::default();
        let r = 0.8f32;
        let sphere = Shape::sphere(Vec3::ZERO, r).unwrap();
        let xf = Isometry::new(Vec3::new(1.0, 2.0, 3.0), Quat::from_rotation_z(0.3));
        mesh.set(&sphere, &xf, xf.translation);
        let full = mesh.below(&everything(), 10.0);
        assert!((full.volume - 4.0 / 3.0 * PI * r.powi(3)).abs() < 1e-4 * full.volume, "{full:?}");
        assert!(full.moment.length() < 1e-4, "{full:?}");
        // A cap of height t has volume π t² (3r - t) / 3.
        for t in [0.2f32, 0.5, 0.8, 1.2] {
            let cut = mesh.below(&everything(), 2.0 - r + t);
            let exact = PI * t * t * (3.0 * r - t) / 3.0;
            assert!((cut.volume - exact).abs() < 0.02 * 4.0 / 3.0 * PI * r.powi(3), "t {t}: {} vs {exact}", cut.volume);
        }
        // The closed form agrees with the mesh.
        for h in [1.3f32, 2.0, 2.5, 3.0] {
            let exact = sphere_below(xf.translation, r, h, xf.translation);
            let mesh = mesh.below(&everything(), h);
            assert!((exact.volume - mesh.volume).abs() < 0.02 * full.volume, "{exact:?} {mesh:?}");
            assert!((exact.moment - mesh.moment).length() < 0.01 * full.volume, "{exact:?} {mesh:?}");
            assert!((exact.area - mesh.area).abs() < 0.12 * PI * r * r, "{exact:?} {mesh:?}");
        }
        let capsule = Shape::capsule(Vec3::new(0.0, -1.0, 0.0), Vec3::new(0.0, 1.0, 0.0), 0.5).unwrap();
        let lying = Isometry::new(Vec3::ZERO, Quat::from_rotation_z(PI / 2.0));
        mesh.set(&capsule, &lying, Vec3::ZERO);
        let whole = capsule.mass_properties(1.0).mass;
        assert!((mesh.below(&everything(), 5.0).volume - whole).abs() < 1e-4 * whole);
        // Lying on its side, cut through its axis: half of it.
        let half = mesh.below(&everything(), 0.0);
        assert!((half.volume - whole / 2.0).abs() < 0.01 * whole, "{half:?} of {whole}");
        // Standing, cut at the cylinder's middle: half, centroid on the axis.
        mesh.set(&capsule, &Isometry::IDENTITY, Vec3::ZERO);
        let half = mesh.below(&everything(), 0.0);
        assert!((half.volume - whole / 2.0).abs() < 0.01 * whole, "{half:?} of {whole}");
        let c = half.moment / half.volume;
        assert!(c.x.abs() < 1e-3 && c.z.abs() < 1e-3 && c.y < 0.0, "{c}");
    }

    #[test]
    fn compounds_add_their_parts_and_triangles_add_nothing() {
        let mut mesh = SurfaceMesh::default();
        let cube = Shape::cuboid(Vec3::splat(0.5)).unwrap();
        let compound = Shape::compound([
            (Isometry::new(Vec3::new(-2.0, 0.0, 0.0), Quat::IDENTITY), cube.clone()),
            (Isometry::new(Vec3::new(2.0, 0.0, 0.0), Quat::IDENTITY), Shape::sphere(Vec3::ZERO, 0.5).unwrap()),
        ])
        .unwrap();
        mesh.set(&compound, &Isometry::IDENTITY, Vec3::ZERO);
        let all = mesh.below(&everything(), 1.0);
        assert!((all.volume - (1.0 + 4.0 / 3.0 * PI * 0.125)).abs() < 1e-4, "{all:?}");
        let left = mesh.below(&Prism { min_x: -9.0, max_x: 0.0, min_z: -9.0, max_z: 9.0 }, 0.0);
        assert!((left.volume - 0.5).abs() < 1e-5, "{left:?}");
        let tri = Shape::triangle([Vec3::ZERO, Vec3::X, Vec3::Z]).unwrap();
        mesh.set(&tri, &Isometry::IDENTITY, Vec3::ZERO);
        assert_eq!(mesh.below(&everything(), 1.0), VolumeMoments::default());
    }
}
