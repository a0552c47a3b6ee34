//! The one view of a convex polyhedron that separating-axis tests and clipping read:
//! vertices, face planes with counter-clockwise vertex loops, and edges with their two
//! adjacent face normals. Boxes and triangles implement it from closed forms without
//! allocating; hulls from their stored topology.
//!
//! An edge carries `arc = n1 × n0`, the great-circle arc its two face normals span on
//! the Gauss map (Gregorius, "The Separating Axis Test between Convex Polyhedra",
//! GDC 2013). A triangle is a flat polyhedron with two faces (`n` and `-n`); its edge
//! normals are antipodal, so `n1 × n0` vanishes and the edge stores the limit
//! `m × n` instead (`m` the edge's outward normal in the triangle's plane): the arc
//! from `n` through `m` to `-n`.

use glam::Vec3;

/// A face plane: points `p` with `normal · p == offset`; `normal` is unit and outward.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Plane {
    pub normal: Vec3,
    pub offset: f32,
}

impl Plane {
    /// Signed distance of `p` (positive outside).
    #[inline]
    pub fn distance(&self, p: Vec3) -> f32 {
        self.normal.dot(p) - self.offset
    }
}

/// An edge between vertices `v[0]` and `v[1]`, faces `faces[0]` (normal `n0`) and
/// `faces[1]` (normal `n1`), Gauss-map arc `arc` (see the module note).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PolyEdge {
    pub v: [u16; 2],
    pub n0: Vec3,
    pub n1: Vec3,
    pub arc: Vec3,
}

/// Most vertices a face loop may have (clipping buffers are sized from it).
pub const MAX_FACE_VERTICES: usize = 64;

/// A convex polyhedron in its local frame.
pub trait Polytope {
    fn vertex_count(&self) -> usize;
    fn vertex(&self, i: usize) -> Vec3;
    fn face_count(&self) -> usize;
    fn plane(&self, face: usize) -> Plane;
    /// Writes face `face`'s vertex indices, counter-clockwise seen from outside, and
    /// returns how many (at most [`MAX_FACE_VERTICES`]).
    fn face_vertices(&self, face: usize, out: &mut [u16; MAX_FACE_VERTICES]) -> usize;
    fn edge_count(&self) -> usize;
    fn edge(&self, e: usize) -> PolyEdge;
    /// Edge `e`'s vertices alone (`edge(e).v`).
    fn edge_vertices(&self, e: usize) -> [u16; 2] {
        self.edge(e).v
    }
    /// A point strictly inside (or, for a triangle, on) the polyhedron.
    fn centroid(&self) -> Vec3;
    /// Each face plane's signed distance of `p`, into `out` (one per face).
    fn plane_distances(&self, p: Vec3, out: &mut [f32]) {
        for (f, d) in out.iter_mut().enumerate() {
            *d = self.plane(f).distance(p);
        }
    }
    /// The radius of a ball about [`Polytope::centroid`] inside the polyhedron (0 when
    /// unknown, or flat): a lower bound of its support along any direction, which
    /// rules axes out of a separating-axis test before their support searches.
    fn inner_radius(&self) -> f32 {
        0.0
    }
    /// The largest distance of a vertex from [`Polytope::centroid`] (the scale of the
    /// round-off those bounds allow for).
    fn outer_radius(&self) -> f32 {
        let c = self.centroid();
        (0..self.vertex_count()).fold(0.0f32, |r, i| r.max((self.vertex(i) - c).length()))
    }
    /// The faces around vertex `v` in increasing order, when kept (hulls).
    fn faces_around(&self, _v: usize) -> Option<&[u16]> {
        None
    }
    /// The edges' Gauss-map arcs by coordinate, when kept (hulls): how far each edge's
    /// outward normals reach toward a direction, for all edges at once.
    fn arcs(&self) -> Option<&ArcTable> {
        None
    }

    /// `Some` for a [`BoxPoly`], whose edges' face normals and arcs lie on its axes
    /// (see `BOX_EDGE_AXES`): edge queries test them by signs.
    fn as_box(&self) -> Option<&BoxPoly> {
        None
    }

    /// Index of the vertex farthest along `dir` (the lowest index on ties).
    fn support(&self, dir: Vec3) -> usize {
        let mut best = 0;
        let mut best_dot = self.vertex(0).dot(dir);
        for i in 1..self.vertex_count() {
            let d = self.vertex(i).dot(dir);
            if d > best_dot {
                best = i;
                best_dot = d;
            }
        }
        best
    }
}

/// `K` columns of `f32` of one length in one allocation (column `k` at `k * len`).
/// A shape's values by coordinate are read together by one test: in a pile of
/// hulls that are all different, each column of its own was a separate wait on
/// memory (and a separate header to read before the data could be asked for).
/// Encoded as `K` vectors, as an array of `Vec<f32>` is.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Columns<const K: usize> {
    data: Vec<f32>,
    len: usize,
}

impl<const K: usize> Columns<K> {
    /// The columns of `column(k)`, each `len` long.
    pub fn new(len: usize, mut column: impl FnMut(usize) -> Vec<f32>) -> Columns<K> {
        let mut data = Vec::with_capacity(K * len);
        for k in 0..K {
            let c = column(k);
            assert_eq!(c.len(), len, "columns of one length");
            data.extend_from_slice(&c);
        }
        Columns { data, len }
    }

    /// Column `k`.
    #[inline(always)]
    pub fn get(&self, k: usize) -> &[f32] {
        &self.data[k * self.len..(k + 1) * self.len]
    }

    #[inline(always)]
    fn get_mut(&mut self, k: usize) -> &mut [f32] {
        &mut self.data[k * self.len..(k + 1) * self.len]
    }

    /// Every column, one after the other.
    pub fn all(&self) -> &[f32] {
        &self.data
    }

    /// Entries per column.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.data.capacity() * 4
    }
}

impl<const K: usize> crate::codec::Codec for Columns<K> {
    fn put(&self, w: &mut crate::codec::Writer) {
        for k in 0..K {
            (self.len as u32).put(w);
            self.get(k).iter().for_each(|x| x.put(w));
        }
    }

    fn take(&mut self, r: &mut crate::codec::Reader) -> Result<(), crate::codec::Corrupt> {
        self.data.clear();
        self.len = 0;
        for k in 0..K {
            let n = r.count()?;
            if k > 0 && n != self.len {
                return Err(crate::codec::Corrupt);
            }
            self.len = n;
            for _ in 0..n {
                let mut x = 0.0f32;
                x.take(r)?;
                self.data.push(x);
            }
        }
        Ok(())
    }
}

/// Each edge's arc on the Gauss map, by coordinate (padded with zeros to a multiple of
/// 8 edges), for [`ArcTable::reach`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ArcTable {
    /// The arc's ends (the edge's face normals: `n0` in columns 0 to 2, `n1` in 3 to
    /// 5), its plane's unit normal (6 to 8), `n0 · n1` (9), and what is subtracted
    /// from each edge's reach (10, see [`ArcTable::with_lift`]; zeros unless set).
    columns: Columns<11>,
    /// Edges (without the padding).
    count: usize,
}

crate::codec::fields!(Plane { normal, offset });
crate::codec::fields!(ArcTable { columns, count });

impl ArcTable {
    /// The arcs from `n0` to `n1` (unit normals, less than a half turn apart), in edge order.
    pub fn new(ends: impl Iterator<Item = (Vec3, Vec3)>) -> ArcTable {
        let mut rows: [Vec<f32>; 11] = Default::default();
        let mut count = 0usize;
        for (n0, n1) in ends {
            let axis = n0.cross(n1).normalize_or_zero();
            for k in 0..3 {
                rows[k].push(n0[k]);
                rows[3 + k].push(n1[k]);
                rows[6 + k].push(axis[k]);
            }
            rows[9].push(n0.dot(n1));
            rows[10].push(0.0);
            count += 1;
        }
        let padded = count.next_multiple_of(8);
        let columns = Columns::new(padded, |k| {
            let mut c = std::mem::take(&mut rows[k]);
            c.resize(padded, 0.0);
            c
        });
        ArcTable { columns, count }
    }

    /// With `lift[e]` subtracted from edge `e`'s reach: a polytope's edges take how
    /// far the edge lies past the centre along its own normals at the least (the
    /// nearer of its two faces' planes: along the arc between, that distance is a
    /// sinusoid positive at both ends, so no lower inside), so that the reach is how
    /// far the edge's axes reach toward `dir` beyond the polytope's own surface.
    pub fn with_lift(mut self, lift: impl Iterator<Item = f32>) -> ArcTable {
        for (slot, l) in self.columns.get_mut(10).iter_mut().zip(lift) {
            *slot = l;
        }
        self
    }

    /// Heap bytes held.
    pub fn heap_bytes(&self) -> usize {
        self.columns.heap_bytes()
    }

    /// For each edge `e` from `first`, into `out[e - first]`: the largest `n · dir`
    /// over the unit normals `n` on its arc, from above by a round-off of about
    /// `1e-3 |dir|` at most. On the great circle `n(t) = n0 cos t + v sin t` the dot
    /// product is a sinusoid: its top is the length of `dir`'s part in the arc's plane
    /// where that part points between the ends (`dir = α n0 + β n1 + ...` with
    /// `α, β ≥ 0`), else the larger end. Less the edge's lift ([`ArcTable::with_lift`]).
    /// The loop runs over the edges at once (the compiler vectorizes it); past the
    /// last edge the padding and then `out` end it.
    pub fn reach(&self, dir: Vec3, first: usize, out: &mut [f32]) {
        let end = (first + out.len()).min(self.columns.len());
        let out = &mut out[..end - first];
        let c = |k: usize| &self.columns.get(k)[first..end];
        let ([x0, y0, z0], [x1, y1, z1], [xa, ya, za]) = ([c(0), c(1), c(2)], [c(3), c(4), c(5)], [c(6), c(7), c(8)]);
        let (cos, lift) = (c(9), c(10));
        let dd = dir.length_squared();
        for e in 0..out.len() {
            let ends = [x0[e] * dir.x + y0[e] * dir.y + z0[e] * dir.z, x1[e] * dir.x + y1[e] * dir.y + z1[e] * dir.z];
            let off_plane = xa[e] * dir.x + ya[e] * dir.y + za[e] * dir.z;
            out[e] = reach_of(ends, off_plane, cos[e], dd) - lift[e];
        }
    }

    /// Asks the cache for every column (see `ConvexHull::prefetch`).
    pub(crate) fn prefetch(&self) {
        crate::math::prefetch_slice(self.columns.all());
    }

    /// Edges held (without the padding).
    pub fn len(&self) -> usize {
        self.count
    }

    /// Entries per column (the edges padded to a multiple of 8).
    pub(crate) fn columns_len(&self) -> usize {
        self.columns.len()
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }
}

/// The top of `n · dir` over an arc from `n0` to `n1` (see [`ArcTable::reach`]), from
/// `n0 · dir` and `n1 · dir` (`ends`), the arc plane's normal dotted with `dir`, the
/// cosine between the ends and `|dir|²`.
#[inline]
fn reach_of(ends: [f32; 2], off_plane: f32, cos: f32, dd: f32) -> f32 {
    let [a0, a1] = ends;
    // Branch-free (selects, `&` on the comparisons), so that the loops over edges
    // vectorize.
    let inside = (a1 >= cos * a0) & (a0 >= cos * a1);
    // `|dir|² - off_plane²` loses a few ulps of `|dir|²` to the cancellation; the
    // allowance keeps the root above the true length of the in-plane part.
    let square = dd - off_plane * off_plane + 1e-6 * dd;
    let top = (if square > 0.0 { square } else { 0.0 }).sqrt();
    let end = if a0 > a1 { a0 } else { a1 };
    if inside {
        top
    } else {
        end
    }
}

/// A box centred on the origin with half extents `half`; vertex `i` has the sign of
/// bit 0 (x), bit 1 (y) and bit 2 (z) of `i` set when the coordinate is positive.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BoxPoly {
    pub half: Vec3,
}

/// Face `2a` is `+axis a`, face `2a + 1` is `-axis a`; loops counter-clockwise from outside.
pub(crate) const BOX_FACES: [[u16; 4]; 6] =
    [[1, 3, 7, 5], [0, 4, 6, 2], [2, 6, 7, 3], [0, 1, 5, 4], [4, 5, 7, 6], [0, 2, 3, 1]];
/// Edges as (vertex, vertex, face, face).
const BOX_EDGES: [[u16; 4]; 12] = [
    // Along x: y/z signs pick the faces.
    [0, 1, 3, 5],
    [2, 3, 2, 5],
    [4, 5, 3, 4],
    [6, 7, 2, 4],
    // Along y.
    [0, 2, 1, 5],
    [1, 3, 0, 5],
    [4, 6, 1, 4],
    [5, 7, 0, 4],
    // Along z.
    [0, 4, 1, 3],
    [1, 5, 0, 3],
    [2, 6, 1, 2],
    [3, 7, 0, 2],
];

/// A box edge's Gauss-map data as axes and signs: its face normals are
/// `n0 = s0 e[i0]` and `n1 = s1 e[i1]`, its arc `n1 × n0 = σ e[k]` (`k` the edge's
/// own axis); `s01 = s0 s1` and `sigma1 = σ s1`. A dot product with any of them is
/// one signed coordinate, bit for bit (the other two terms are ±0).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct BoxEdgeAxes {
    pub k: usize,
    pub i0: usize,
    pub i1: usize,
    pub s01: f32,
    pub sigma1: f32,
}

/// [`BoxEdgeAxes`] of the box's edges, in edge order.
pub(crate) const BOX_EDGE_AXES: [BoxEdgeAxes; 12] = {
    let mut table = [BoxEdgeAxes { k: 0, i0: 0, i1: 0, s01: 0.0, sigma1: 0.0 }; 12];
    let mut e = 0;
    while e < 12 {
        let (f0, f1) = (BOX_EDGES[e][2] as usize, BOX_EDGES[e][3] as usize);
        let (i0, i1) = (f0 / 2, f1 / 2);
        let s0 = if f0 % 2 == 0 { 1.0 } else { -1.0 };
        let s1 = if f1 % 2 == 0 { 1.0 } else { -1.0 };
        // e[i1] × e[i0] is +e[k] when (i1, i0, k) is a cyclic order of the axes.
        let epsilon = if i0 == (i1 + 1) % 3 { 1.0 } else { -1.0 };
        table[e] = BoxEdgeAxes { k: 3 - i0 - i1, i0, i1, s01: s0 * s1, sigma1: s0 * epsilon };
        e += 1;
    }
    table
};

fn box_normal(face: usize) -> Vec3 {
    let mut n = Vec3::ZERO;
    n[face / 2] = if face.is_multiple_of(2) { 1.0 } else { -1.0 };
    n
}

impl Polytope for BoxPoly {
    fn vertex_count(&self) -> usize {
        8
    }
    #[inline]
    fn vertex(&self, i: usize) -> Vec3 {
        let s = |bit: usize| if i & (1 << bit) != 0 { 1.0 } else { -1.0 };
        self.half * Vec3::new(s(0), s(1), s(2))
    }
    fn face_count(&self) -> usize {
        6
    }
    fn plane(&self, face: usize) -> Plane {
        Plane { normal: box_normal(face), offset: self.half[face / 2] }
    }
    fn face_vertices(&self, face: usize, out: &mut [u16; MAX_FACE_VERTICES]) -> usize {
        out[..4].copy_from_slice(&BOX_FACES[face]);
        4
    }
    fn edge_count(&self) -> usize {
        12
    }
    fn edge(&self, e: usize) -> PolyEdge {
        let [a, b, f0, f1] = BOX_EDGES[e];
        let (n0, n1) = (box_normal(f0 as usize), box_normal(f1 as usize));
        PolyEdge { v: [a, b], n0, n1, arc: n1.cross(n0) }
    }
    #[inline]
    fn edge_vertices(&self, e: usize) -> [u16; 2] {
        [BOX_EDGES[e][0], BOX_EDGES[e][1]]
    }
    fn centroid(&self) -> Vec3 {
        Vec3::ZERO
    }
    fn inner_radius(&self) -> f32 {
        self.half.min_element()
    }
    fn outer_radius(&self) -> f32 {
        self.half.length()
    }
    fn as_box(&self) -> Option<&BoxPoly> {
        Some(self)
    }
    #[inline]
    fn support(&self, dir: Vec3) -> usize {
        (dir.x > 0.0) as usize | ((dir.y > 0.0) as usize) << 1 | ((dir.z > 0.0) as usize) << 2
    }
}

/// A triangle as a flat polyhedron: face 0 is the front (`(b - a) × (c - a)`), face 1
/// the back; edge `i` joins vertices `i` and `i + 1`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TrianglePoly {
    pub v: [Vec3; 3],
    pub normal: Vec3,
}

impl TrianglePoly {
    /// `None` for a degenerate (zero-area or non-finite) triangle.
    pub fn new(v: [Vec3; 3]) -> Option<TrianglePoly> {
        let normal = (v[1] - v[0]).cross(v[2] - v[0]).normalize_or_zero();
        (normal != Vec3::ZERO && normal.is_finite()).then_some(TrianglePoly { v, normal })
    }

    /// The outward normal of edge `i` in the triangle's plane.
    pub fn edge_normal(&self, i: usize) -> Vec3 {
        (self.v[(i + 1) % 3] - self.v[i]).cross(self.normal).normalize_or_zero()
    }
}

impl Polytope for TrianglePoly {
    fn vertex_count(&self) -> usize {
        3
    }
    #[inline]
    fn vertex(&self, i: usize) -> Vec3 {
        self.v[i]
    }
    fn face_count(&self) -> usize {
        2
    }
    fn plane(&self, face: usize) -> Plane {
        let n = if face == 0 { self.normal } else { -self.normal };
        Plane { normal: n, offset: n.dot(self.v[0]) }
    }
    fn face_vertices(&self, face: usize, out: &mut [u16; MAX_FACE_VERTICES]) -> usize {
        out[..3].copy_from_slice(if face == 0 { &[0, 1, 2] } else { &[0, 2, 1] });
        3
    }
    fn edge_count(&self) -> usize {
        3
    }
    fn edge(&self, e: usize) -> PolyEdge {
        let m = self.edge_normal(e);
        PolyEdge { v: [e as u16, ((e + 1) % 3) as u16], n0: self.normal, n1: -self.normal, arc: m.cross(self.normal) }
    }
    fn centroid(&self) -> Vec3 {
        (self.v[0] + self.v[1] + self.v[2]) / 3.0
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Every face loop is counter-clockwise around its outward normal, lies in its
    /// plane, and every edge's faces contain both its vertices.
    pub(crate) fn check_topology(p: &impl Polytope) {
        let mut loop_ = [0u16; MAX_FACE_VERTICES];
        for f in 0..p.face_count() {
            let plane = p.plane(f);
            let n = p.face_vertices(f, &mut loop_);
            let mut newell = Vec3::ZERO;
            for i in 0..n {
                let (a, b) = (p.vertex(loop_[i] as usize), p.vertex(loop_[(i + 1) % n] as usize));
                assert!(plane.distance(a).abs() < 1e-4, "face {f} vertex off its plane");
                newell += a.cross(b);
            }
            assert!(newell.normalize().dot(plane.normal) > 0.999, "face {f} winds clockwise");
            for v in 0..p.vertex_count() {
                assert!(plane.distance(p.vertex(v)) < 1e-4, "vertex {v} outside face {f}");
            }
        }
        for e in 0..p.edge_count() {
            let edge = p.edge(e);
            for (normal, v) in [(edge.n0, edge.v[0]), (edge.n1, edge.v[1])] {
                let on_face = (0..p.face_count()).any(|f| {
                    let pl = p.plane(f);
                    pl.normal.dot(normal) > 0.9999 && pl.distance(p.vertex(v as usize)).abs() < 1e-4
                });
                assert!(on_face, "edge {e} is not on a face with normal {normal}");
            }
            assert!(edge.arc.length() > 1e-6, "edge {e} has no arc");
        }
    }

    #[test]
    fn box_and_triangle_topology() {
        check_topology(&BoxPoly { half: Vec3::new(1.0, 2.0, 0.5) });
        check_topology(&TrianglePoly::new([Vec3::ZERO, Vec3::X, Vec3::Y]).unwrap());
        assert!(TrianglePoly::new([Vec3::ZERO, Vec3::X, Vec3::X * 2.0]).is_none());
        let b = BoxPoly { half: Vec3::ONE };
        for i in 0..8 {
            let v = b.vertex(i);
            assert_eq!(b.support(v), i);
        }
    }

    /// The sign table says the same as the edges' vectors.
    #[test]
    fn box_edge_axes_match_the_edges() {
        let b = BoxPoly { half: Vec3::new(1.0, 2.0, 0.5) };
        for (e, t) in BOX_EDGE_AXES.iter().enumerate() {
            let edge = b.edge(e);
            let axis = |i: usize| Vec3::AXES[i];
            let s0 = edge.n0.dot(axis(t.i0));
            let s1 = edge.n1.dot(axis(t.i1));
            let sigma = edge.arc.dot(axis(t.k));
            assert_eq!(edge.n0, s0 * axis(t.i0), "edge {e}");
            assert_eq!(edge.n1, s1 * axis(t.i1), "edge {e}");
            assert_eq!(edge.arc, sigma * axis(t.k), "edge {e}");
            assert!(s0.abs() == 1.0 && s1.abs() == 1.0 && sigma.abs() == 1.0, "edge {e}");
            assert_eq!((t.s01, t.sigma1), (s0 * s1, sigma * s1), "edge {e}");
            let along = b.vertex(edge.v[1] as usize) - b.vertex(edge.v[0] as usize);
            assert_eq!(along.normalize().abs(), axis(t.k), "edge {e} runs along axis {}", t.k);
        }
    }
}
