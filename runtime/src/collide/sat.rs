//! Contact between two polyhedra (boxes, hulls, triangles): the separating-axis test
//! over face normals and Gauss-map-pruned edge pairs, then reference/incident face
//! clipping (Gregorius, "The Separating Axis Test between Convex Polyhedra", GDC
//! 2013, and "Robust Contact Creation for Physics Simulations", GDC 2015).
//!
//! Everything runs in A's frame; B's features are brought over one at a time. An edge
//! pair is only a candidate axis when the arcs of the two edges cross on the Gauss
//! map (the pair builds a face of the Minkowski difference), which rejects almost all
//! of the `|E_A| × |E_B|` pairs with four dot products each.
//!
//! Axis choice prefers faces: an edge axis wins only when it is clearly better, and
//! B's face only when clearly better than A's, so the manifold does not flicker
//! between features of nearly equal separation from one frame to the next.

use glam::Vec3;

use super::manifold::{reduce, Candidate, Manifold};
use super::rounded::TriangleEdges;
use super::segment::closest_segment_segment;
use crate::math::Isometry;
use crate::shapes::{Polytope, BOX_EDGE_AXES, MAX_FACE_VERTICES};

pub(crate) const EDGE_RELATIVE: f32 = 0.90;
pub(crate) const FACE_RELATIVE: f32 = 0.98;
const ABSOLUTE_TOLERANCE: f32 = 0.5 * 0.005;

#[derive(Clone, Copy, Debug)]
pub(crate) struct FaceQuery {
    pub index: usize,
    pub separation: f32,
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct EdgeQuery {
    pub a: usize,
    pub b: usize,
    pub separation: f32,
    /// A's frame, pointing from A to B.
    pub normal: Vec3,
}

/// B's vertices are transformed once into A's frame when there are this few (boxes,
/// triangles); a face's separation is then the least distance of any of them.
const VERTEX_CACHE: usize = 8;

/// What rules axes out before their support searches: the two shapes' centres, each
/// in the other's frame, their inner radii and a round-off allowance.
///
/// A shape's support along any direction `n` reaches at least its inner radius past
/// its centre (a ball of that radius lies inside it). So a face of A separates B by
/// at most the face plane's distance to B's centre less B's inner radius, and an edge
/// pair, whose axis `n` lies on the arc of A's edge and `-n` on the arc of B's, by
/// at most `n · (c_B - c_A)`, at most the arc's reach toward `c_B - c_A`
/// ([`ArcTable::reach`]), less how far each edge lies past its shape's centre along
/// its own normals (its lift, [`ArcTable::with_lift`]; at least the inner radius, so
/// the other edge's is taken as that). An axis whose bound falls short of the best
/// separation already found cannot be the test's answer, nor change it: the test
/// skips its search. Between touching hulls of 32 points, nine axes in ten go so.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Reach {
    /// B's centre in A's frame, A's centre in B's frame.
    center_b: Vec3,
    center_a: Vec3,
    /// `c_B - c_A` in A's frame, and its negation in B's frame (B's arcs face away).
    toward_b: Vec3,
    toward_a: Vec3,
    inner_a: f32,
    inner_b: f32,
    /// Added to every bound: the f32 round-off of the searches it stands for.
    slack: f32,
}

impl Reach {
    pub(crate) fn new(a: &impl Polytope, b: &impl Polytope, rel: &Isometry) -> Reach {
        let center_b = rel.transform_point(b.centroid());
        let center_a = rel.inverse_transform_point(a.centroid());
        let toward_b = center_b - a.centroid();
        let scale = rel.translation.length()
            + a.centroid().length()
            + b.centroid().length()
            + a.outer_radius()
            + b.outer_radius();
        Reach {
            center_b,
            center_a,
            toward_b,
            toward_a: rel.rotation.inverse() * -toward_b,
            inner_a: a.inner_radius(),
            inner_b: b.inner_radius(),
            slack: 2e-5 * scale,
        }
    }

    /// The least reach toward the other centre, past its own shape's surface
    /// (`ArcTable::reach`, less the edge's lift), that an edge of a shape needs for its
    /// axes to separate by `floor` or more when the other shape's inner radius is
    /// `other_inner`.
    fn least_reach(&self, floor: f32, other_inner: f32) -> f32 {
        floor + other_inner - self.slack
    }

    /// Lists in `out` B's edges that may give an axis separating by `floor` or more
    /// (every edge when B keeps no arcs), in order; returns how many.
    fn edges_b(&self, b: &impl Polytope, floor: f32, out: &mut [u16]) -> usize {
        let count = b.edge_count();
        let Some(arcs) = b.arcs() else {
            for (e, slot) in out[..count].iter_mut().enumerate() {
                *slot = e as u16;
            }
            return count;
        };
        let least = self.least_reach(floor, self.inner_a);
        let mut listed = 0;
        let mut reach = [0.0f32; 64];
        for first in (0..count).step_by(reach.len()) {
            arcs.reach(self.toward_a, first, &mut reach);
            for (e, &r) in (first..count).zip(&reach) {
                out[listed] = e as u16;
                // (Written so that NaN is listed.)
                listed += (r >= least || r.is_nan() || least.is_nan()) as usize;
            }
        }
        listed
    }
}

/// A's faces against B's support points; with `reach`, faces that cannot beat the
/// best found are skipped (the same answer: see [`Reach`]), starting from the face
/// nearest B's centre.
pub(crate) fn query_faces_a(a: &impl Polytope, b: &impl Polytope, rel: &Isometry, reach: Option<&Reach>) -> FaceQuery {
    let bounds = reach.map(|r| (r.center_b, r.inner_b - r.slack));
    if b.vertex_count() <= VERTEX_CACHE {
        // A box against a triangle: three transforms instead of six support searches
        // and six transforms. Two thirds of rain's box-terrain tests end here.
        let mut cache = [Vec3::ZERO; VERTEX_CACHE];
        let vertices = &mut cache[..b.vertex_count()];
        for (i, v) in vertices.iter_mut().enumerate() {
            *v = rel.transform_point(b.vertex(i));
        }
        return best_face(a, bounds, f32::NEG_INFINITY, |f| {
            let plane = a.plane(f);
            vertices.iter().fold(f32::INFINITY, |s, &v| s.min(plane.distance(v)))
        });
    }
    let inv = rel.rotation.inverse();
    best_face(a, bounds, f32::NEG_INFINITY, |f| {
        let plane = a.plane(f);
        plane.distance(rel.transform_point(b.vertex(b.support(inv * -plane.normal))))
    })
}

/// B's faces against A's support points; with `reach`, faces that cannot beat
/// `floor` or the best found are skipped. The answer is the full search's where that
/// separates by `floor` or more (with `floor` A's faces' best, that is where B's
/// faces decide anything).
pub(crate) fn query_faces_b(
    a: &impl Polytope,
    b: &impl Polytope,
    rel: &Isometry,
    reach: Option<&Reach>,
    floor: f32,
) -> FaceQuery {
    let bounds = reach.map(|r| (r.center_a, r.inner_a - r.slack));
    best_face(b, bounds, floor, |f| {
        let plane = b.plane(f);
        let n = rel.rotation * plane.normal;
        let offset = plane.offset + n.dot(rel.translation);
        n.dot(a.vertex(a.support(-n))) - offset
    })
}

/// Most faces a polytope has (a hull's `2 V - 4`).
const MAX_FACES: usize = 2 * crate::shapes::MAX_HULL_VERTICES;

/// The face of `p` with the largest `separation` (the first on ties). With `bounds`
/// (the other shape's centre in `p`'s frame, its inner radius less the slack), a
/// face whose plane lies too near that centre to beat `floor` or the best found so
/// far is skipped, and the search starts from the face farthest from it (likely the
/// answer, so that the rest fall to its bound).
fn best_face(
    p: &impl Polytope,
    bounds: Option<(Vec3, f32)>,
    floor: f32,
    separation: impl Fn(usize) -> f32,
) -> FaceQuery {
    let count = p.face_count();
    let Some((center, inner)) = bounds else {
        let mut best = FaceQuery { index: 0, separation: f32::NEG_INFINITY };
        for f in 0..count {
            let s = separation(f);
            if s > best.separation {
                best = FaceQuery { index: f, separation: s };
            }
        }
        return best;
    };
    // The planes' distances in a buffer sized for the faces (a hull of 32 points has
    // about 60): clearing the largest hull's every time cost a twentieth of the test.
    if count <= 64 {
        bounded_best_face::<64>(p, center, inner, floor, separation)
    } else {
        bounded_best_face::<MAX_FACES>(p, center, inner, floor, separation)
    }
}

/// [`best_face`] with bounds, the distances in a buffer of `N`.
fn bounded_best_face<const N: usize>(
    p: &impl Polytope,
    center: Vec3,
    inner: f32,
    floor: f32,
    separation: impl Fn(usize) -> f32,
) -> FaceQuery {
    let count = p.face_count();
    let mut best = FaceQuery { index: 0, separation: f32::NEG_INFINITY };
    let mut distance = [0.0f32; N];
    p.plane_distances(center, &mut distance[..count]);
    let farthest = (1..count).fold(0, |m, f| if distance[f] > distance[m] { f } else { m });
    let seed = separation(farthest);
    let floor = floor.max(seed);
    for (f, &d) in distance[..count].iter().enumerate() {
        // The face separates by at most `d - inner`. (Written so that NaN is searched.)
        if d - inner < floor.max(best.separation) {
            continue;
        }
        let s = if f == farthest { seed } else { separation(f) };
        if s > best.separation {
            best = FaceQuery { index: f, separation: s };
        }
    }
    best
}

/// Whether arcs `a`-`b` and `c`-`d` cross on the unit sphere; `bxa` and `dxc` are
/// the arcs' plane normals `b × a` and `d × c`.
#[inline]
fn minkowski_face(a: Vec3, b: Vec3, bxa: Vec3, c: Vec3, d: Vec3, dxc: Vec3) -> bool {
    let cba = c.dot(bxa);
    let dba = d.dot(bxa);
    let adc = a.dot(dxc);
    let bdc = b.dot(dxc);
    cba * dba < 0.0 && adc * bdc < 0.0 && cba * bdc > 0.0
}

/// One of B's edges brought into A's frame: a point, its direction and its arc's
/// plane normal (the arc's ends, negated for the Minkowski test, go by coordinate
/// into the query's `ends`).
#[derive(Clone, Copy, Default)]
struct EdgeB {
    p: Vec3,
    dir: Vec3,
    dxc: Vec3,
}

/// B's edges are transformed into A's frame once, into a stack buffer of the
/// smallest of these sizes that holds them (a box or a triangle takes the first; a
/// hull of 32 points has about 90 edges). Transformed per pair instead, the edges of
/// two such hulls cost 8,100 transforms of two points and three vectors each: a
/// touching pair of hulls spent most of its test there.
const EDGE_CACHE: usize = 32;
/// The buffers of the edge pairs for at most this many listed B edges: a triangle's,
/// a box's, and most hulls' after the bounds.
const EDGE_CACHE_SMALL: usize = 16;
const EDGE_CACHE_HULL: usize = 192;
/// Every edge of the largest hull ([`crate::shapes::MAX_HULL_VERTICES`] vertices have
/// at most `3 V - 6` edges).
const EDGE_CACHE_MAX: usize = 3 * crate::shapes::MAX_HULL_VERTICES;

/// Edge pairs' axes: the largest separation over all of them (and its pair), and the
/// best axis among those whose B edge `skip_b` allows. A skipped edge still separates:
/// leaving its axis out of the separation test would report overlap between shapes
/// that do not touch. With `reach`, edges whose axes cannot separate by `floor` are
/// left out: both answers are the full search's wherever they reach `floor`.
pub(crate) fn query_edges(
    a: &impl Polytope,
    b: &impl Polytope,
    rel: &Isometry,
    skip_b: &dyn Fn(usize) -> bool,
    reach: Option<&Reach>,
    floor: f32,
) -> (f32, (usize, usize), EdgeQuery) {
    match b.edge_count() {
        n if n <= EDGE_CACHE => query_edges_in::<EDGE_CACHE>(a, b, rel, skip_b, reach, floor),
        n if n <= EDGE_CACHE_HULL => query_edges_in::<EDGE_CACHE_HULL>(a, b, rel, skip_b, reach, floor),
        _ => query_edges_in::<EDGE_CACHE_MAX>(a, b, rel, skip_b, reach, floor),
    }
}

/// [`query_edges`] with B's edges in a buffer of `N`.
fn query_edges_in<const N: usize>(
    a: &impl Polytope,
    b: &impl Polytope,
    rel: &Isometry,
    skip_b: &dyn Fn(usize) -> bool,
    reach: Option<&Reach>,
    floor: f32,
) -> (f32, (usize, usize), EdgeQuery) {
    // A box's arc tests, by signs: bit `ea` of `masks[eb]` for each pair (a box
    // against at most `EDGE_CACHE` edges, every one listed).
    let boxed = N == EDGE_CACHE && a.as_box().is_some();
    // B's edges that may separate by `floor`.
    let mut listed = [0u16; N];
    let nb = match reach {
        Some(r) if !boxed => r.edges_b(b, floor, &mut listed),
        _ => {
            for (e, slot) in listed[..b.edge_count()].iter_mut().enumerate() {
                *slot = e as u16;
            }
            b.edge_count()
        }
    };
    // The pairs' buffers sized for the edges listed (between touching hulls, a
    // sixth of B's), not for all of B's: clearing them was a tenth of the test.
    let listed = &listed[..nb];
    match nb {
        0 => (f32::NEG_INFINITY, (0, 0), EdgeQuery { a: 0, b: 0, separation: f32::NEG_INFINITY, normal: Vec3::ZERO }),
        n if n <= EDGE_CACHE_SMALL => edge_pairs::<EDGE_CACHE_SMALL>(a, b, rel, skip_b, reach, floor, listed, boxed),
        n if n <= EDGE_CACHE => edge_pairs::<EDGE_CACHE>(a, b, rel, skip_b, reach, floor, listed, boxed),
        n if n <= EDGE_CACHE_HULL => edge_pairs::<EDGE_CACHE_HULL>(a, b, rel, skip_b, reach, floor, listed, boxed),
        _ => edge_pairs::<EDGE_CACHE_MAX>(a, b, rel, skip_b, reach, floor, listed, boxed),
    }
}

/// The edge pairs of [`query_edges`]: each of A's edges (those that may separate by
/// `floor`, with `reach`) against B's edges `listed`, transformed into A's frame
/// once (edge `listed[k]` is `cache[k]`), in buffers of `N`.
#[allow(clippy::too_many_arguments)]
fn edge_pairs<const N: usize>(
    a: &impl Polytope,
    b: &impl Polytope,
    rel: &Isometry,
    skip_b: &dyn Fn(usize) -> bool,
    reach: Option<&Reach>,
    floor: f32,
    listed: &[u16],
    boxed: bool,
) -> (f32, (usize, usize), EdgeQuery) {
    let nb = listed.len();
    let mut cache = [EdgeB::default(); N];
    // B's arc ends `c` and `d` by coordinate, for the general arcs test's first sign,
    // `c · (b × a)` against `d · (b × a)`, for every listed B edge at once: loops the
    // compiler vectorizes, with the scalar test's bits (the same products, summed in
    // the same order). Three pairs in four stop there.
    let mut ends = [[0.0f32; N]; 6];
    for (k, &eb) in listed.iter().enumerate() {
        let e = b.edge(eb as usize);
        let p = rel.transform_point(b.vertex(e.v[0] as usize));
        let q = rel.transform_point(b.vertex(e.v[1] as usize));
        cache[k] = EdgeB { p, dir: q - p, dxc: rel.rotation * e.arc };
        [ends[0][k], ends[1][k], ends[2][k]] = (-(rel.rotation * e.n0)).to_array();
        [ends[3][k], ends[4][k], ends[5][k]] = (-(rel.rotation * e.n1)).to_array();
    }
    let mut masks = [0u16; EDGE_CACHE];
    let mut any = u16::MAX;
    if boxed {
        any = 0;
        for (k, (m, e)) in masks.iter_mut().zip(&cache[..nb]).enumerate() {
            let c = [ends[0][k], ends[1][k], ends[2][k]];
            let d = [ends[3][k], ends[4][k], ends[5][k]];
            *m = box_arcs_crossing(c, d, e.dxc.to_array());
            any |= *m;
        }
    }
    let (mut cba, mut dba) = ([0.0f32; N], [0.0f32; N]);
    let mut candidates = [0u16; N];
    let center = a.centroid();
    let mut best = EdgeQuery { a: 0, b: 0, separation: f32::NEG_INFINITY, normal: Vec3::ZERO };
    let mut all = f32::NEG_INFINITY;
    let mut all_pair = (0, 0);
    // A's edges' reach toward B, a chunk at a time, where A keeps arcs.
    let arcs_a = reach.filter(|_| !boxed).and_then(|r| Some((r, a.arcs()?)));
    let mut reach_a = [0.0f32; 64];
    #[allow(clippy::needless_range_loop)] // `k` indexes the arc ends and the signs
    for ea in 0..a.edge_count() {
        if boxed && any >> ea & 1 == 0 {
            continue;
        }
        if let Some((r, arcs)) = arcs_a {
            if ea % reach_a.len() == 0 {
                arcs.reach(r.toward_b, ea, &mut reach_a);
            }
            // (Written so that NaN is kept.)
            if reach_a[ea % reach_a.len()] < r.least_reach(floor, r.inner_b) {
                continue;
            }
        }
        // A box's arcs are known by sign: only its vertices are read.
        let edge_a = if boxed { None } else { Some(a.edge(ea)) };
        let [v0, v1] = edge_a.map_or_else(|| a.edge_vertices(ea), |e| e.v);
        let pa = a.vertex(v0 as usize);
        let dir_a = a.vertex(v1 as usize) - pa;
        let len_a2 = dir_a.length_squared();
        // The listed B edges past the first sign test, listed without a branch.
        let mut passed = 0;
        if let Some(edge_a) = &edge_a {
            let [x, y, z] = edge_a.arc.to_array();
            for k in 0..nb {
                cba[k] = ends[0][k] * x + ends[1][k] * y + ends[2][k] * z;
                dba[k] = ends[3][k] * x + ends[4][k] * y + ends[5][k] * z;
            }
            for k in 0..nb {
                candidates[passed] = k as u16;
                passed += (cba[k] * dba[k] < 0.0) as usize;
            }
        }
        let count = if boxed { nb } else { passed };
        for i in 0..count {
            let k = if boxed { i } else { candidates[i] as usize };
            let (eb, e) = (listed[k] as usize, &cache[k]);
            let crossing = match &edge_a {
                None => masks[k] >> ea & 1 != 0,
                // The rest of `minkowski_face`, its first products read from above.
                Some(edge_a) => {
                    let (adc, bdc) = (edge_a.n0.dot(e.dxc), edge_a.n1.dot(e.dxc));
                    adc * bdc < 0.0 && cba[k] * bdc > 0.0
                }
            };
            if !crossing {
                continue;
            }
            let n = dir_a.cross(e.dir);
            let len = n.length();
            // Parallel edges: their axis is one of the face normals already tested.
            // The square root is only taken near the limit (see `CLEARLY_CROSSED`).
            let lens = len_a2 * e.dir.length_squared();
            if len * len <= CLEARLY_CROSSED * lens && len < 1e-5 * lens.sqrt() {
                continue;
            }
            let mut n = n / len;
            if n.dot(pa - center) < 0.0 {
                n = -n;
            }
            let s = n.dot(e.p - pa);
            if s > all {
                (all, all_pair) = (s, (ea, eb));
            }
            if s > best.separation && !skip_b(eb) {
                best = EdgeQuery { a: ea, b: eb, separation: s, normal: n };
            }
        }
    }
    (all, all_pair, best)
}

/// Edge pairs whose `|a × b|²` exceeds this times `|a|² |b|²` are surely not
/// parallel by the test `|a × b| < 1e-5 |a| |b|`: a margin of 1e-4 relative over
/// `(1e-5)²` covers the few roundings between the two forms, so the square root on the
/// right is skipped without changing a single answer.
const CLEARLY_CROSSED: f32 = 1.0001e-10;

/// [`minkowski_face`] of each of a box's twelve edges against a B edge with negated
/// arc ends `c`, `d` and arc normal `x` (A's frame), as a bit mask. The box's normals and arcs lie on its axes ([`BOX_EDGE_AXES`]), so each dot
/// product is one signed coordinate of `e`'s vectors and each product of two of them
/// one signed product of coordinates: the same bits as the general test, with four
/// multiplications per pair (three of them by ±1) instead of fifteen, and no loads of
/// the box's edges. (Rain's box–terrain tests spent 8% of the step in the general
/// test.)
#[inline]
fn box_arcs_crossing(c: [f32; 3], d: [f32; 3], x: [f32; 3]) -> u16 {
    let cd = [c[0] * d[0], c[1] * d[1], c[2] * d[2]];
    let mut mask = 0;
    for (ea, t) in BOX_EDGE_AXES.iter().enumerate() {
        // cba = σ c[k], dba = σ d[k], adc = s0 x[i0], bdc = s1 x[i1].
        let crossing = cd[t.k] < 0.0 && t.s01 * (x[t.i0] * x[t.i1]) < 0.0 && t.sigma1 * (c[t.k] * x[t.i1]) > 0.0;
        mask |= (crossing as u16) << ea;
    }
    mask
}

/// Contact between polyhedra `a` and `b` with separation up to `margin`, or an empty
/// manifold. With `edges`, B is a mesh triangle: its inactive edges separate but give
/// no contact normal, and a contact that touches the triangle only at inactive features
/// takes the triangle's face as reference (see `mesh.rs`).
pub(crate) fn collide_polytopes(
    a: &impl Polytope,
    xf_a: &Isometry,
    b: &impl Polytope,
    xf_b: &Isometry,
    margin: f32,
    edges: Option<&TriangleEdges>,
) -> Manifold {
    collide_polytopes_cached(a, xf_a, b, xf_b, margin, edges, &mut SatCache::default()).0
}

/// The axis that separated two polyhedra when they were last tested (Box3D's SAT
/// cache; Gregorius, GDC 2013: "temporal coherence"): a face of A, a face of B or a
/// pair of edges, by the shapes' own indices.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SeparatingAxis {
    /// Not separated at the last test (or never tested).
    #[default]
    None,
    FaceA(u16),
    FaceB(u16),
    /// An edge of A and an edge of B: the axis is their cross product.
    Edges(u16, u16),
}

/// What a pair of polyhedra keeps from its last test: the axis that separated them,
/// by how much, and where B then lay in A's frame.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SatCache {
    pub axis: SeparatingAxis,
    /// The axis's separation at that test.
    separation: f32,
    /// B's placement in A's frame at that test.
    rel: Isometry,
    /// The farthest any vertex of A, of B, lies from its shape's origin (kept here
    /// so that a skipped pair reads neither shape).
    far: [f32; 2],
}

crate::codec::fields!(SatCache { axis, separation, rel, far });

impl crate::codec::Codec for SeparatingAxis {
    fn put(&self, w: &mut crate::codec::Writer) {
        match *self {
            SeparatingAxis::None => 0u8.put(w),
            SeparatingAxis::FaceA(f) => (1u8, f).put(w),
            SeparatingAxis::FaceB(f) => (2u8, f).put(w),
            SeparatingAxis::Edges(a, b) => (3u8, a, b).put(w),
        }
    }
    fn take(&mut self, r: &mut crate::codec::Reader) -> Result<(), crate::codec::Corrupt> {
        use crate::codec::TakeNew;
        *self = match r.tag(4)? {
            0 => SeparatingAxis::None,
            1 => SeparatingAxis::FaceA(u16::take_new(r)?),
            2 => SeparatingAxis::FaceB(u16::take_new(r)?),
            _ => SeparatingAxis::Edges(u16::take_new(r)?, u16::take_new(r)?),
        };
        Ok(())
    }
}

impl SatCache {
    /// The cache of a pair found apart along `axis` by `separation` at `rel`.
    fn new(a: &impl Polytope, b: &impl Polytope, axis: SeparatingAxis, separation: f32, rel: Isometry) -> SatCache {
        SatCache {
            axis,
            separation,
            rel,
            far: [a.centroid().length() + a.outer_radius(), b.centroid().length() + b.outer_radius()],
        }
    }

    /// How far B's origin moved in A's frame since the test, and the chord `2 |Δq|`
    /// of the turn (a point at distance `r` from the turn's centre moved by at most
    /// `chord r`).
    fn moved(&self, rel: &Isometry) -> (f32, f32) {
        let dq = rel.rotation - self.rel.rotation;
        let dq = dq.length().min((rel.rotation + self.rel.rotation).length());
        ((rel.translation - self.rel.translation).length(), 2.0 * dq)
    }

    /// Whether the pair is surely still apart along the cached face axis by more
    /// than `margin`, from the motion since alone, without touching either shape's
    /// vertices (Box2D v3 bounds its sensor and continuous work by motion the same way).
    ///
    /// A face of A keeps its plane in A's frame, and B's points there moved by at
    /// most `|Δt| + 2 |Δq| |b|` (the chord of the turn, `2 |Δq|` for unit quaternions
    /// on one side, times the point's distance from B's origin): the face's
    /// separation, the least distance of B's points from its plane, shrank by at most
    /// that. A face of B likewise, with A's points seen from B's frame (`|Δt| + 2 |Δq|
    /// (|a| + |t|)`). An edge pair's axis turns with both shapes and stops being an
    /// axis of the test when its arcs part, so no such bound holds: an edge axis is
    /// always searched. The answer is the cached test's: that test would find the
    /// axis still past `margin`.
    fn surely_apart(&self, rel: &Isometry, margin: f32) -> bool {
        let [far_a, far_b] = self.far;
        let (dt, chord) = self.moved(rel);
        let moved = match self.axis {
            SeparatingAxis::FaceA(_) => dt + chord * far_b,
            SeparatingAxis::FaceB(_) => dt + chord * (far_a + self.rel.translation.length()),
            _ => return false,
        };
        // Two searches' round-off (then and now), as in `Reach`.
        let scale = rel.translation.length() + far_a + far_b;
        // (Written so that NaN is not apart.)
        self.separation - moved - 4e-5 * scale > margin
    }

    /// [`SatCache::surely_apart`] for a B that never moves and is tested at the
    /// identity with its vertices `b` in world coordinates (a terrain triangle), A now
    /// at `xf_a`. The bound of `surely_apart` holds there too but is measured from the
    /// world's origin, so any turn of A far from it spends the whole gap; this one is
    /// measured from A's origin. A face of B keeps its plane in the world and A's
    /// points moved by at most `|Δt| + 2 |Δq| |a|`; a face of A moved its plane
    /// against B's fixed points, which in A's frame moved by at most `|Δt| + 2 |Δq|
    /// |p - t|` (`t` A's origin now: `R1ᵀ(p - t1) - R0ᵀ(p - t0) = (R1ᵀ - R0ᵀ)(p - t1) +
    /// R0ᵀ(t0 - t1)`). Edge axes are never skipped.
    pub(crate) fn surely_apart_fixed(&self, xf_a: &Isometry, b: &[Vec3], margin: f32) -> bool {
        // A's placement at the test, from `rel` (A's inverse there); the round-off of
        // taking it back is far inside the round-off allowance below.
        let (turn, t0) = (self.rel.rotation.conjugate(), self.rel.rotation.conjugate() * -self.rel.translation);
        let dq = (xf_a.rotation - turn).length().min((xf_a.rotation + turn).length());
        let (dt, chord) = ((xf_a.translation - t0).length(), 2.0 * dq);
        let farthest = |from: Vec3| b.iter().fold(0.0f32, |m, p| m.max((*p - from).length_squared())).sqrt();
        let moved = match self.axis {
            SeparatingAxis::FaceA(_) => dt + chord * farthest(xf_a.translation),
            SeparatingAxis::FaceB(_) => dt + chord * self.far[0],
            _ => return false,
        };
        let scale = xf_a.translation.length() + self.far[0] + farthest(Vec3::ZERO);
        // (Written so that NaN is not apart.)
        self.separation - moved - 4e-5 * scale > margin
    }
}

/// How a cached test was decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SatTest {
    /// The cached face axis separated by so much more than the margin that the
    /// motion since cannot have closed the gap: nothing was searched.
    Skipped,
    /// The cached axis still separates by more than the margin: nothing else ran.
    Cached,
    /// The full separating-axis test ran (and refreshed the cache).
    Full,
}

/// The separation of `a` and `b` along `axis` (A's frame) as the full test computes
/// it, to the bit: a face's plane against the other's support, an edge pair's axis
/// only while the pair still builds a face of the Minkowski difference (else the pair
/// is no axis of the full test, and this is `NEG_INFINITY`). So a cached axis past
/// the margin is one the full test would find past it too, and the two tests never
/// disagree. `NEG_INFINITY` also for no axis or a stale index.
pub(crate) fn axis_separation(a: &impl Polytope, b: &impl Polytope, rel: &Isometry, axis: SeparatingAxis) -> f32 {
    match axis {
        SeparatingAxis::None => f32::NEG_INFINITY,
        SeparatingAxis::FaceA(f) if (f as usize) < a.face_count() => {
            let plane = a.plane(f as usize);
            if b.vertex_count() <= VERTEX_CACHE {
                (0..b.vertex_count())
                    .fold(f32::INFINITY, |s, i| s.min(plane.distance(rel.transform_point(b.vertex(i)))))
            } else {
                let inv = rel.rotation.inverse();
                plane.distance(rel.transform_point(b.vertex(b.support(inv * -plane.normal))))
            }
        }
        SeparatingAxis::FaceB(f) if (f as usize) < b.face_count() => {
            let plane = b.plane(f as usize);
            let n = rel.rotation * plane.normal;
            let offset = plane.offset + n.dot(rel.translation);
            n.dot(a.vertex(a.support(-n))) - offset
        }
        SeparatingAxis::Edges(ea, eb) => edge_separation(a, b, rel, ea as usize, eb as usize),
        _ => f32::NEG_INFINITY,
    }
}

/// [`collide_polytopes`] with the axis that separated the pair last time in `axis`:
/// tested first, and when it still separates by more than `margin` the pair is
/// decided in a support search or two. Otherwise the full test runs and leaves in
/// `axis` the axis of largest separation when the shapes are apart by more than
/// `margin`, [`SeparatingAxis::None`] when they touch. The manifold is the same as
/// the full test's: the cached axis only ever rules a pair out.
pub(crate) fn collide_polytopes_cached(
    a: &impl Polytope,
    xf_a: &Isometry,
    b: &impl Polytope,
    xf_b: &Isometry,
    margin: f32,
    edges: Option<&TriangleEdges>,
    cache: &mut SatCache,
) -> (Manifold, SatTest) {
    collide_polytopes_with(a, xf_a, b, xf_b, margin, edges, cache, true)
}

/// [`collide_polytopes_cached`], with axes ruled out by their bounds ([`Reach`]) when
/// `prune` (the same answer; without, every axis is searched, as the tests' reference).
#[allow(clippy::too_many_arguments)]
pub(crate) fn collide_polytopes_with(
    a: &impl Polytope,
    xf_a: &Isometry,
    b: &impl Polytope,
    xf_b: &Isometry,
    margin: f32,
    edges: Option<&TriangleEdges>,
    cache: &mut SatCache,
    prune: bool,
) -> (Manifold, SatTest) {
    let skip_b = |e: usize| edges.is_some_and(|t| !t.active[e]);
    let rel = xf_a.inv_mul(xf_b);
    if cache.axis != SeparatingAxis::None {
        if cache.surely_apart(&rel, margin) {
            return (Manifold::EMPTY, SatTest::Skipped);
        }
        let separation = axis_separation(a, b, &rel, cache.axis);
        // (Written so that NaN is not apart.)
        if separation > margin {
            *cache = SatCache { separation, rel, ..*cache };
            return (Manifold::EMPTY, SatTest::Cached);
        }
    }
    let apart = |cache: &mut SatCache, axis: SeparatingAxis, separation: f32| {
        *cache = SatCache::new(a, b, axis, separation, rel);
        (Manifold::EMPTY, SatTest::Full)
    };
    // Bounds pay for themselves against hulls' many faces and edges; a box against a
    // triangle searches its few axes outright.
    let reach = (prune && (a.arcs().is_some() || b.arcs().is_some())).then(|| Reach::new(a, b, &rel));
    let reach = reach.as_ref();
    let face_a = query_faces_a(a, b, &rel, reach);
    if face_a.separation > margin {
        return apart(cache, SeparatingAxis::FaceA(face_a.index as u16), face_a.separation);
    }
    let face_b = query_faces_b(a, b, &rel, reach, face_a.separation);
    if face_b.separation > margin {
        return apart(cache, SeparatingAxis::FaceB(face_b.index as u16), face_b.separation);
    }
    let face_max = face_a.separation.max(face_b.separation);
    let (edge_all, edge_pair, edge) = query_edges(a, b, &rel, &skip_b, reach, face_max);
    if edge_all > margin {
        return apart(cache, SeparatingAxis::Edges(edge_pair.0 as u16, edge_pair.1 as u16), edge_all);
    }
    *cache = SatCache::default();
    let mut local = if edges.is_some() && edge_all > favour(face_max.max(edge.separation), EDGE_RELATIVE) {
        // The shapes touch nearest across an inactive edge: the triangle's face gives
        // the normal (the neighbour across the edge continues the surface).
        face_contact_b(a, b, &rel, 0, margin)
    } else if edge.separation > favour(face_max, EDGE_RELATIVE) {
        edge_contact(a, b, &rel, &edge)
    } else if face_b.separation > favour(face_a.separation, FACE_RELATIVE) {
        face_contact_b(a, b, &rel, face_b.index, margin)
    } else {
        let m = face_contact_a(a, b, &rel, face_a.index, margin);
        match edges {
            // A's face against a triangle: its normal stands only if the triangle
            // touches it with an active edge; otherwise the triangle's face decides.
            Some(tri) if !touches_active_edge(&m, tri, &rel) => face_contact_b(a, b, &rel, 0, margin),
            _ => m,
        }
    };
    if edges.is_some() {
        // Seams change the normal, never the depth: no point is deeper than the shapes
        // really overlap (the largest separation over all axes), so a box beside a
        // steep face is not kicked by a phantom overlap along that face's normal.
        let truth = face_max.max(edge_all);
        for p in &mut local.points[..local.count] {
            p.separation = p.separation.max(truth);
        }
    }
    (local.transformed(xf_a), SatTest::Full)
}

/// Whether a point of `m` (A's frame) lies, on the triangle's side, on an active edge.
fn touches_active_edge(m: &Manifold, tri: &TriangleEdges, rel: &Isometry) -> bool {
    m.points().iter().any(|p| {
        let on_b = rel.inverse_transform_point(p.point + m.normal * (0.5 * p.separation));
        tri.on_active_edge(on_b)
    })
}

/// The separation another axis must beat to replace one at `separation`: relatively
/// more when penetrating (Gregorius's tolerances), plus a small absolute margin.
pub(crate) fn favour(separation: f32, relative: f32) -> f32 {
    if separation < 0.0 {
        relative * separation + ABSOLUTE_TOLERANCE
    } else {
        separation + ABSOLUTE_TOLERANCE
    }
}

/// The separation along the axis of A's edge `ea` and B's edge `eb`, as the full test
/// computes it, while the pair builds a face of the Minkowski difference and is not
/// parallel (`NEG_INFINITY` otherwise, or for a stale index).
fn edge_separation(a: &impl Polytope, b: &impl Polytope, rel: &Isometry, ea: usize, eb: usize) -> f32 {
    if ea >= a.edge_count() || eb >= b.edge_count() {
        return f32::NEG_INFINITY;
    }
    let (edge_a, e) = (a.edge(ea), b.edge(eb));
    let p = rel.transform_point(b.vertex(e.v[0] as usize));
    let q = rel.transform_point(b.vertex(e.v[1] as usize));
    let (c, d, dxc) = (-(rel.rotation * e.n0), -(rel.rotation * e.n1), rel.rotation * e.arc);
    if !minkowski_face(edge_a.n0, edge_a.n1, edge_a.arc, c, d, dxc) {
        return f32::NEG_INFINITY;
    }
    let pa = a.vertex(edge_a.v[0] as usize);
    let dir_a = a.vertex(edge_a.v[1] as usize) - pa;
    let dir_b = q - p;
    let n = dir_a.cross(dir_b);
    let len = n.length();
    let lens = dir_a.length_squared() * dir_b.length_squared();
    if len * len <= CLEARLY_CROSSED * lens && len < 1e-5 * lens.sqrt() {
        return f32::NEG_INFINITY;
    }
    let mut n = n / len;
    if n.dot(pa - a.centroid()) < 0.0 {
        n = -n;
    }
    n.dot(p - pa)
}

pub(crate) fn edge_contact(a: &impl Polytope, b: &impl Polytope, rel: &Isometry, q: &EdgeQuery) -> Manifold {
    let (ea, eb) = (a.edge(q.a), b.edge(q.b));
    let (pa, qa) = (a.vertex(ea.v[0] as usize), a.vertex(ea.v[1] as usize));
    let (pb, qb) = (rel.transform_point(b.vertex(eb.v[0] as usize)), rel.transform_point(b.vertex(eb.v[1] as usize)));
    let (ca, cb) = closest_segment_segment(pa, qa, pb, qb);
    let mut m = Manifold { normal: q.normal, ..Manifold::EMPTY };
    m.push(super::manifold::ManifoldPoint {
        point: (ca + cb) * 0.5,
        separation: q.normal.dot(cb - ca),
        id: 1 << 30 | ((q.a as u32) & 0x3FF) << 10 | (q.b as u32) & 0x3FF,
    });
    m
}

/// The incident face of `p` for a reference normal `normal` (in `p`'s frame): of the
/// faces around `p`'s deepest vertex along `-normal`, the most anti-parallel one. Taking
/// any most anti-parallel face could miss that vertex on irregular hulls and report
/// less than the axis's depth. Returns the face and that vertex.
fn incident_face(p: &impl Polytope, normal: Vec3) -> (usize, usize) {
    let vertex = p.support(-normal);
    let mut best = (0, f32::INFINITY);
    if let Some(faces) = p.faces_around(vertex) {
        // The same choice from the vertex's own faces, in the same order.
        for &f in faces {
            let d = p.plane(f as usize).normal.dot(normal);
            if d < best.1 {
                best = (f as usize, d);
            }
        }
        return (best.0, vertex);
    }
    let deepest = vertex as u16;
    let mut idx = [0u16; MAX_FACE_VERTICES];
    for f in 0..p.face_count() {
        let d = p.plane(f).normal.dot(normal);
        if d < best.1 {
            let n = p.face_vertices(f, &mut idx);
            if idx[..n].contains(&deepest) {
                best = (f, d);
            }
        }
    }
    (best.0, vertex)
}

/// Two face loops in A's frame: the reference face's points and the incident face's
/// points with ids. Small faces (boxes, triangles) use small stack buffers, so the
/// common case does not clear kilobytes per call.
struct Faces<'a> {
    reference: &'a [u16],
    incident: &'a [u16],
    ref_point: &'a dyn Fn(u16) -> Vec3,
    inc_point: &'a dyn Fn(u16) -> Vec3,
}

impl Faces<'_> {
    #[allow(clippy::too_many_arguments)]
    fn clip(&self, normal: Vec3, offset: f32, fallback: Clip, margin: f32, key: u32, normal_ab: Vec3) -> Manifold {
        if self.reference.len() <= 8 && self.incident.len() <= 8 {
            self.clip_sized::<8, 20>(normal, offset, fallback, margin, key, normal_ab)
        } else {
            self.clip_sized::<MAX_FACE_VERTICES, CLIP_CAPACITY>(normal, offset, fallback, margin, key, normal_ab)
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn clip_sized<const F: usize, const C: usize>(
        &self,
        normal: Vec3,
        offset: f32,
        fallback: Clip,
        margin: f32,
        key: u32,
        normal_ab: Vec3,
    ) -> Manifold {
        let mut reference = [Vec3::ZERO; F];
        for (slot, &i) in reference.iter_mut().zip(self.reference) {
            *slot = (self.ref_point)(i);
        }
        let mut incident = [Clip::default(); F];
        for (slot, &i) in incident.iter_mut().zip(self.incident) {
            *slot = Clip { p: (self.inc_point)(i), id: i as u32 };
        }
        clip::<C>(
            &reference[..self.reference.len()],
            normal,
            offset,
            &incident[..self.incident.len()],
            fallback,
            margin,
            key,
            normal_ab,
        )
    }
}

pub(crate) fn face_contact_a(
    a: &impl Polytope,
    b: &impl Polytope,
    rel: &Isometry,
    face: usize,
    margin: f32,
) -> Manifold {
    let plane = a.plane(face);
    let mut ref_idx = [0u16; MAX_FACE_VERTICES];
    let n_ref = a.face_vertices(face, &mut ref_idx);
    // (The deepest vertex is the support along `-(R⁻¹ n)`, bit for bit `R⁻¹ (-n)`.)
    let (inc, deepest) = incident_face(b, rel.rotation.inverse() * plane.normal);
    let mut inc_idx = [0u16; MAX_FACE_VERTICES];
    let n_inc = b.face_vertices(inc, &mut inc_idx);
    let key = (face as u32) << 16;
    let fallback = Clip { p: rel.transform_point(b.vertex(deepest)), id: 0x4000 | deepest as u32 };
    let faces = Faces {
        reference: &ref_idx[..n_ref],
        incident: &inc_idx[..n_inc],
        ref_point: &|i| a.vertex(i as usize),
        inc_point: &|i| rel.transform_point(b.vertex(i as usize)),
    };
    faces.clip(plane.normal, plane.offset, fallback, margin, key, plane.normal)
}

pub(crate) fn face_contact_b(
    a: &impl Polytope,
    b: &impl Polytope,
    rel: &Isometry,
    face: usize,
    margin: f32,
) -> Manifold {
    let plane = b.plane(face);
    let normal = rel.rotation * plane.normal;
    let offset = plane.offset + normal.dot(rel.translation);
    let mut ref_idx = [0u16; MAX_FACE_VERTICES];
    let n_ref = b.face_vertices(face, &mut ref_idx);
    let (inc, deepest) = incident_face(a, normal);
    let mut inc_idx = [0u16; MAX_FACE_VERTICES];
    let n_inc = a.face_vertices(inc, &mut inc_idx);
    let key = 1 << 29 | (face as u32) << 16;
    let fallback = Clip { p: a.vertex(deepest), id: 0x4000 | deepest as u32 };
    let faces = Faces {
        reference: &ref_idx[..n_ref],
        incident: &inc_idx[..n_inc],
        ref_point: &|i| rel.transform_point(b.vertex(i as usize)),
        inc_point: &|i| a.vertex(i as usize),
    };
    faces.clip(normal, offset, fallback, margin, key, -normal)
}

#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Clip {
    pub(crate) p: Vec3,
    pub(crate) id: u32,
}

const CLIP_CAPACITY: usize = 2 * MAX_FACE_VERTICES + 4;

/// Clips the incident polygon to the side planes of the reference face (Sutherland–
/// Hodgman), keeps points within `margin` of the reference plane, moves each to the
/// midpoint between the surfaces and reduces to four. When the incident face misses
/// the reference face's prism (small reference faces of irregular hulls), the
/// incident shape's deepest vertex, which realises the face axis's separation, is the
/// one point.
#[allow(clippy::too_many_arguments)]
pub(crate) fn clip<const C: usize>(
    reference: &[Vec3],
    ref_normal: Vec3,
    ref_offset: f32,
    incident: &[Clip],
    fallback: Clip,
    margin: f32,
    key: u32,
    normal_ab: Vec3,
) -> Manifold {
    let mut poly = [Clip::default(); C];
    let mut next_poly = [Clip::default(); C];
    poly[..incident.len()].copy_from_slice(incident);
    let mut count = incident.len();
    for (i, &r0) in reference.iter().enumerate() {
        let r1 = reference.get(i + 1).copied().unwrap_or(reference[0]);
        let side = (r1 - r0).cross(ref_normal);
        let side_offset = side.dot(r0);
        // Each corner's distance past this side, once (each edge reads two). With
        // every corner inside (NaN is not), the polygon stays as it is.
        let mut past = [0.0f32; C];
        let mut outside = false;
        for (d, c) in past.iter_mut().zip(&poly[..count]) {
            *d = side.dot(c.p) - side_offset;
            outside |= *d > 0.0 || d.is_nan();
        }
        if !outside {
            continue;
        }
        let mut out = 0;
        for k in 0..count {
            // The edge from corner k to the next (no `%`: a division per edge).
            let next = if k + 1 == count { 0 } else { k + 1 };
            let (p, q) = (poly[k], poly[next]);
            let (dp, dq) = (past[k], past[next]);
            if dp <= 0.0 && out < C {
                next_poly[out] = p;
                out += 1;
            }
            if ((dp < 0.0 && dq > 0.0) || (dp > 0.0 && dq < 0.0)) && out < C {
                let t = dp / (dp - dq);
                next_poly[out] = Clip { p: p.p + (q.p - p.p) * t, id: 0x8000 | (i as u32 & 0x7F) << 8 | (p.id & 0xFF) };
                out += 1;
            }
        }
        std::mem::swap(&mut poly, &mut next_poly);
        count = out;
        if count == 0 {
            break;
        }
    }
    let mut candidates = [Candidate::default(); C];
    let mut n = 0;
    for c in &poly[..count] {
        let s = ref_normal.dot(c.p) - ref_offset;
        if s <= margin {
            candidates[n] = Candidate { point: c.p - ref_normal * (0.5 * s), separation: s, id: key | c.id };
            n += 1;
        }
    }
    if n == 0 {
        let s = ref_normal.dot(fallback.p) - ref_offset;
        if s <= margin {
            candidates[0] =
                Candidate { point: fallback.p - ref_normal * (0.5 * s), separation: s, id: key | fallback.id };
            n = 1;
        }
    }
    let mut m = Manifold::EMPTY;
    reduce(&candidates[..n], normal_ab, &mut m);
    if m.count == 0 {
        m.normal = normal_ab;
    }
    m
}
