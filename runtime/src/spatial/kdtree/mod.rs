//! A triangle mesh with a loose kD tree over it, as in the reference (Roblox's
//! voxel terrain narrowphase), plus a compact mode that goes beyond it.
//!
//! **Nodes.** Every node splits along one axis with *two* planes: the left child's
//! content lies at or below `split0`, the right child's at or above `split1` (the
//! planes are tight, so they may overlap or leave a gap). A branch stores the two
//! planes, the axis (2 bits) and the index of its right child (30 bits). A leaf
//! stores axis tag 3, its triangle count (1 or 2) and its first triangle: the tree
//! numbers triangles in leaf order ([`KdMesh::from_mesh_with_order`] says where each
//! came from), which frees the reference's second index for a *leaf range* (beyond
//! the reference): the extent of the leaf's triangles on the axis where its region
//! is loosest around them, quantised outwards on the mesh box (16 bits per end, 8
//! in compact mode). A query whose segment or box misses it skips the triangles
//! without loading them: half the triangle tests of random rays on the bench's
//! 1M-triangle mesh, 2.5 -> 2.15 µs per ray. A full node is 12 bytes; a compact
//! node is 6 (16-bit planes quantised on the mesh box and rounded outwards, 14-bit
//! child index, 16-bit first triangle).
//!
//! **Layout.** Nodes are stored depth first: a branch's left child is the next node,
//! so a walk down the left spine reads memory in order (8% faster rays than the
//! reference's sibling pairs on the bench mesh). The leaf order of triangles alone
//! (and vertices in order of first use) measured no faster on that mesh, whose
//! triangles come chunk by chunk, already near each other.
//!
//! **Build.** Split the current box's longest axis at the mean of the triangles'
//! midpoints (of their boxes), partition by midpoint, then recompute the two planes from
//! all vertices. If a side gets less than 25% of the triangles, split at the median
//! instead. Beyond the reference, the left side always gets an even count, so every
//! leaf but one holds two triangles and the tree has at most one node per triangle
//! (12 bytes per triangle, 6 in compact mode). The 25% rule bounds the depth by
//! `log(n) / log(4/3)`; queries walk on a fixed stack of [`KD_MAX_DEPTH`] entries.
//!
//! **Parallel build** (beyond the reference, [`KdMesh::from_mesh_parallel`]). Every
//! leaf holds two triangles but one of an odd count, so a subtree of `n` triangles
//! has `n - 1 + n % 2` nodes: a node's right child lies that many nodes after its
//! left one, known as soon as the node is split. Nodes of more than
//! [`PARALLEL_ITEMS`] triangles then build their two children as two jobs, into
//! disjoint parts of the node array and of the triangle order; the items and the
//! final permutations are written in chunks, as jobs too, and the root's content is
//! combined from the chunks' in chunk order. The tree is the serial build's, bit for
//! bit, for any worker count. On 2 workers the bench's 1M-triangle mesh builds in
//! 96-103 ms instead of 171-181 (the root's partition stays serial).
//!
//! **Peel splits** (beyond the reference). A node's region is the box its
//! ancestors' planes leave it. On 2.5D terrain the longest axis is x or z nearly
//! everywhere, so regions keep the whole mesh's height and a ray crossing the air
//! visits every node column under its path. Where a region leaves a gap around its
//! content wider than a quarter of the content's size, the two triangles reaching
//! furthest into the gap become a leaf and the rest get a plane at their own extent.
//! That costs no node (still at most one per triangle) and at most doubles the depth
//! (a peel's children do not peel); it halved the cost of random rays on terrain.
//!
//! **Queries.** Box queries descend into the children whose half-space the box
//! reaches. Ray queries walk segments `[t_min, t_max]` of the ray, one per node,
//! near child first, and skip a segment that starts beyond the closest hit so far.
//! The planes are widened by a small epsilon, scaled to the mesh and ray, so rounding
//! never culls a triangle that the (watertight) triangle test would hit: results equal a
//! brute-force loop over all triangles using the same triangle tests. The triangle
//! test's per-ray set-up ([`RayShear`]) is done once per ray, and the far child is
//! prefetched when it is pushed (it lies far from the near one in the depth-first
//! layout): together 2.9-3.7 -> 2.35-2.5 µs per ray on the bench's 1M-triangle mesh.
//! A single walk pushes only the far child and goes on to the near one in registers,
//! so the next node's address waits on no stack store and reload: 0.405 -> 0.365 µs
//! per ray where the tree stays cached (on the 1M mesh the gain is within the host's
//! noise; see `docs/design-notes.md`, "kD trees for terrain meshes").
//!
//! **Batches.** On a tree larger than the caches a random ray is a chain of
//! dependent misses: on the bench mesh one visits 51 nodes and tests 10 triangles,
//! touching about 38 cache lines that are rarely still cached, and spends most of its
//! 3 µs waiting. [`KdMesh::ray_closest_batch`] keeps [`RAY_LANES`] walks in flight on
//! one thread and steps them in turn, a node each: a walk prefetches the node it
//! reads next, and fetches a leaf's triangles over two turns (their indices, then
//! their vertices), so its misses overlap with the other walks' work. Each walk does
//! exactly what a single cast does, so the hits are the same bits. 36 -> 19 ms for
//! the bench's 10,000 rays; 16 or 32 lanes measured no faster than 8. Those steps
//! cost about 130 instructions each; where the CPU has AVX2, a full mesh's batch
//! instead steps 8 walks per set of vector instructions, 4 such groups in turn
//! (`kdtree/wide.rs`): same hits, 1.25-1.35 -> 0.87-1.18 µs per ray on the bench
//! mesh, 0.41 -> 0.30 where the tree stays cached.
//!
//! **Compact mode.** Vertices are quantised to 16 bits per coordinate on the mesh box
//! (error at most half a step, `extent / 131070` per axis) and the tree is built on
//! the quantised positions, so queries are exact for the quantised mesh. It holds up
//! to 65,536 vertices and 16,384 triangles (14-bit child indices): chunk-sized meshes.

use std::mem::MaybeUninit;

use glam::{Vec3, Vec3A};

use crate::jobs::Jobs;
use crate::math::{triangle_overlaps_aabb, Aabb, Ray, RayShear};

#[cfg(target_arch = "x86_64")]
mod build;
mod query;
#[cfg(test)]
pub(crate) mod tests;
mod wide;

use build::*;
pub(crate) use query::TreeWalk;
pub use query::RAY_LANES;
use query::*;

/// Depth bound of every tree (the build refuses deeper ones; the 25% rule keeps
/// 2^32 triangles under 80 levels).
pub const KD_MAX_DEPTH: usize = 96;
const STACK_SIZE: usize = KD_MAX_DEPTH + 2;
const LEAF: u32 = 3;
const COMPACT_MAX_NODES: usize = 1 << 14;
const COMPACT_MAX_INDEX: usize = 1 << 16;
/// Compact leaf ranges are 8-bit: one step is 257 vertex steps (65535 / 255).
const COMPACT_LEAF_STEPS: f32 = 257.0;

/// An indexed triangle mesh with one material byte per triangle.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TriMesh {
    pub vertices: Vec<Vec3>,
    pub triangles: Vec<[u32; 3]>,
    pub materials: Vec<u8>,
}

impl TriMesh {
    pub fn new() -> TriMesh {
        TriMesh::default()
    }

    pub fn clear(&mut self) {
        self.vertices.clear();
        self.triangles.clear();
        self.materials.clear();
    }

    pub fn triangle(&self, index: usize) -> [Vec3; 3] {
        self.triangles[index].map(|v| self.vertices[v as usize])
    }

    /// Appends a triangle of existing vertices.
    pub fn push(&mut self, triangle: [u32; 3], material: u8) {
        self.triangles.push(triangle);
        self.materials.push(material);
    }
}

/// How a [`KdMesh`] stores its vertices and nodes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum MeshMode {
    /// f32 vertices, u32 indices, 12-byte nodes.
    #[default]
    Full,
    /// 16-bit quantised vertices and indices, 6-byte nodes (chunk-sized meshes).
    Compact,
}

/// Why a mesh was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KdError {
    /// A vertex is NaN or infinite.
    NonFiniteVertex,
    /// A triangle names a vertex past the end.
    IndexOutOfRange,
    /// `materials` and `triangles` differ in length.
    MaterialCount,
    /// Too many vertices, triangles or nodes for 16-bit compact storage.
    TooLargeForCompact,
    /// More than 2^30 triangles.
    TooManyTriangles,
}

impl std::fmt::Display for KdError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            KdError::NonFiniteVertex => "a vertex is NaN or infinite",
            KdError::IndexOutOfRange => "a triangle names a vertex past the end of the vertex array",
            KdError::MaterialCount => "materials and triangles differ in length",
            KdError::TooLargeForCompact => "compact meshes hold at most 65536 vertices and 16384 triangles",
            KdError::TooManyTriangles => "a kD tree holds at most 2^30 triangles",
        })
    }
}

/// A ray's hit on a [`KdMesh`] triangle: `point = ray.at(t)`, barycentrics `(1-u-v, u, v)`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MeshHit {
    pub t: f32,
    /// Tree triangle index (leaf order; see [`KdMesh::from_mesh_with_order`]).
    pub triangle: u32,
    pub u: f32,
    pub v: f32,
}

/// 12 bytes: a branch (`a`, `b` = f32 bits of `split0`, `split1`; `tag` = axis |
/// right child << 2) or a leaf (`a` = first triangle, `b` = its content's range on
/// one axis, 16-bit quantised: low | high << 16; `tag` = 3 | count << 2 | axis << 4).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct FullNode {
    a: u32,
    b: u32,
    tag: u32,
}
const _: () = assert!(std::mem::size_of::<FullNode>() == 12);

/// 6 bytes: a [`FullNode`] with 16-bit quantised planes, 14-bit child index,
/// 16-bit first triangle and an 8-bit quantised leaf range (low | high << 8).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct CompactNode {
    a: u16,
    b: u16,
    tag: u16,
}
const _: () = assert!(std::mem::size_of::<CompactNode>() == 6);

/// A node as traversal sees it.
enum Node {
    /// `child` is the right child; the left one is the next node.
    Branch { axis: usize, split0: f32, split1: f32, child: u32 },
    /// Triangles `first .. first + count`, whose content on `axis` lies in
    /// `[low, high]`.
    Leaf { first: u32, count: u32, axis: usize, low: f32, high: f32 },
}

/// A leaf range's upper end: `origin + q * quantum`, or infinity at the grid's
/// top, which rounding may leave a little under the mesh box (the lower end is
/// exact at 0: the grid starts at the box).
#[inline]
fn top(origin: f32, q: u32, top: u32, quantum: f32) -> f32 {
    if q == top {
        f32::INFINITY
    } else {
        origin + q as f32 * quantum
    }
}

/// The largest grid step at or below `low` whose value `origin + step * quantum` is
/// at most `min` (or 0): a leaf range's lower end once rounding overshot.
#[cold]
#[inline(never)]
fn step_down(origin: f32, quantum: f32, mut low: u32, min: f32) -> u32 {
    while low > 0 && origin + low as f32 * quantum > min {
        low -= 1;
    }
    low
}

/// The smallest grid step at or above `high` whose [`top`] is at least `max` (or
/// `last`): a leaf range's upper end once rounding fell short.
#[cold]
#[inline(never)]
fn step_up(origin: f32, quantum: f32, mut high: u32, last: u32, max: f32) -> u32 {
    while high < last && top(origin, high, last, quantum) < max {
        high += 1;
    }
    high
}

/// `v[axis]` for an axis from a node's 2-bit field, without the match and the
/// panic branch of indexing a `Vec3`.
#[inline(always)]
fn coordinate(v: Vec3, axis: usize) -> f32 {
    v.extend(0.0).to_array()[axis & 3]
}

/// Read access to one storage layout; queries are generic over it.
trait Storage {
    fn node(&self, index: u32) -> Node;
    /// Asks for node `index`'s cache line ahead of use.
    fn prefetch(&self, index: u32);
    /// Asks for the vertex indices of triangles `first .. first + count`.
    fn prefetch_indices(&self, first: u32, count: u32);
    /// Asks for the vertices of triangles `first .. first + count` (reads their
    /// indices: call [`Storage::prefetch_indices`] a while before).
    fn prefetch_vertices(&self, first: u32, count: u32);
    fn triangle(&self, index: u32) -> [Vec3; 3];
}

/// Prefetches of a leaf's triangles for both layouts: the index entries, then the
/// vertices they name.
macro_rules! prefetch_triangles {
    () => {
        #[inline]
        fn prefetch_indices(&self, first: u32, count: u32) {
            let t = self.triangles.as_ptr();
            crate::math::prefetch(t.wrapping_add(first as usize));
            crate::math::prefetch(t.wrapping_add((first + count - 1) as usize));
        }

        #[inline]
        fn prefetch_vertices(&self, first: u32, count: u32) {
            for t in first..first + count {
                for v in self.triangles[t as usize] {
                    crate::math::prefetch(self.vertices.as_ptr().wrapping_add(v as usize));
                }
            }
        }
    };
}

#[derive(Clone, Debug, PartialEq)]
struct Full {
    vertices: Vec<Vec3>,
    triangles: Vec<[u32; 3]>,
    nodes: Vec<FullNode>,
    /// Leaf ranges: `origin + q * quantum`.
    origin: Vec3,
    quantum: Vec3,
}

impl Storage for Full {
    #[inline]
    fn node(&self, index: u32) -> Node {
        let n = self.nodes[index as usize];
        if n.tag & 3 == LEAF {
            let axis = (n.tag >> 4 & 3) as usize;
            let (o, q) = (coordinate(self.origin, axis), coordinate(self.quantum, axis));
            let (low, high) = (n.b & 0xffff, n.b >> 16);
            Node::Leaf {
                first: n.a,
                count: n.tag >> 2 & 3,
                axis,
                low: o + low as f32 * q,
                high: top(o, high, 0xffff, q),
            }
        } else {
            Node::Branch {
                axis: (n.tag & 3) as usize,
                split0: f32::from_bits(n.a),
                split1: f32::from_bits(n.b),
                child: n.tag >> 2,
            }
        }
    }

    #[inline]
    fn prefetch(&self, index: u32) {
        crate::math::prefetch(self.nodes.as_ptr().wrapping_add(index as usize));
    }

    prefetch_triangles!();

    #[inline]
    fn triangle(&self, index: u32) -> [Vec3; 3] {
        self.triangles[index as usize].map(|v| self.vertices[v as usize])
    }
}

#[derive(Clone, Debug, Default, PartialEq)]
struct Compact {
    origin: Vec3,
    step: Vec3,
    vertices: Vec<[u16; 3]>,
    triangles: Vec<[u16; 3]>,
    nodes: Vec<CompactNode>,
}

impl Compact {
    #[inline]
    fn dequantise(&self, q: [u16; 3]) -> Vec3 {
        self.origin + Vec3::new(q[0] as f32, q[1] as f32, q[2] as f32) * self.step
    }
}

impl Storage for Compact {
    #[inline]
    fn node(&self, index: u32) -> Node {
        let n = self.nodes[index as usize];
        let tag = n.tag as u32;
        if tag & 3 == LEAF {
            let axis = (tag >> 4 & 3) as usize;
            let (o, q) = (coordinate(self.origin, axis), coordinate(self.step, axis) * COMPACT_LEAF_STEPS);
            let (low, high) = ((n.b & 0xff) as u32, (n.b >> 8) as u32);
            Node::Leaf {
                first: n.a as u32,
                count: tag >> 2 & 3,
                axis,
                low: o + low as f32 * q,
                high: top(o, high, 0xff, q),
            }
        } else {
            let axis = (tag & 3) as usize;
            Node::Branch {
                axis,
                split0: coordinate(self.origin, axis) + n.a as f32 * coordinate(self.step, axis),
                split1: coordinate(self.origin, axis) + n.b as f32 * coordinate(self.step, axis),
                child: tag >> 2,
            }
        }
    }

    #[inline]
    fn prefetch(&self, index: u32) {
        crate::math::prefetch(self.nodes.as_ptr().wrapping_add(index as usize));
    }

    prefetch_triangles!();

    #[inline]
    fn triangle(&self, index: u32) -> [Vec3; 3] {
        self.triangles[index as usize].map(|v| self.dequantise(self.vertices[v as usize]))
    }
}

#[derive(Clone, Debug, PartialEq)]
enum Repr {
    Full(Full),
    Compact(Compact),
}

/// A triangle mesh and its loose kD tree. See the module docs. Two meshes are equal
/// when their vertices, triangles, materials and trees are.
#[derive(Clone, Debug, PartialEq)]
pub struct KdMesh {
    repr: Repr,
    materials: Vec<u8>,
    /// The tree's box (all vertices), for early rejection.
    bounds: Aabb,
    depth: u32,
}

impl KdMesh {
    /// Builds the tree over `mesh` in `mode`. Refuses non-finite vertices, bad
    /// indices, a material count that differs from the triangle count, and compact
    /// meshes past 16-bit limits.
    pub fn build(mesh: &TriMesh, mode: MeshMode) -> Result<KdMesh, KdError> {
        KdMesh::from_mesh(mesh.clone(), mode)
    }

    /// [`KdMesh::build`], taking the mesh's arrays (the vertices are kept without a
    /// copy in full mode).
    pub fn from_mesh(mesh: TriMesh, mode: MeshMode) -> Result<KdMesh, KdError> {
        KdMesh::build_in(mesh, mode, None, false).map(|(kd, _)| kd)
    }

    /// [`KdMesh::from_mesh`], also returning where each of the tree's triangles came
    /// from: the tree stores triangles in leaf order, and its triangle `i` (in hits,
    /// box queries, [`KdMesh::triangle`] and [`KdMesh::material`]) is the mesh's
    /// triangle `order[i]`.
    pub fn from_mesh_with_order(mesh: TriMesh, mode: MeshMode) -> Result<(KdMesh, Vec<u32>), KdError> {
        KdMesh::build_in(mesh, mode, None, true)
    }

    /// [`KdMesh::from_mesh`] on `jobs`: a node of many triangles builds its two
    /// children side by side. The tree is the same, bit for bit, for any worker count
    /// (a subtree's node count depends on its triangle count alone, so each child's
    /// place in the depth-first array is known before either is built). For large
    /// meshes; a chunk's tree is too small to gain.
    pub fn from_mesh_parallel(mesh: TriMesh, mode: MeshMode, jobs: Jobs) -> Result<KdMesh, KdError> {
        KdMesh::build_in(mesh, mode, Some(jobs), false).map(|(kd, _)| kd)
    }

    /// The build; the triangles' leaf order comes back when `with_order` asks for it
    /// (an empty vector otherwise).
    fn build_in(
        mut mesh: TriMesh,
        mode: MeshMode,
        jobs: Option<Jobs>,
        with_order: bool,
    ) -> Result<(KdMesh, Vec<u32>), KdError> {
        if mesh.materials.len() != mesh.triangles.len() {
            return Err(KdError::MaterialCount);
        }
        if mesh.triangles.len() >= 1 << 30 {
            return Err(KdError::TooManyTriangles);
        }
        // One pass over the vertices for their box and their finiteness: `v * 0` is
        // zero for a finite `v` and NaN otherwise, and a NaN stays in the sum.
        let (mut min, mut max, mut finite) = (Vec3A::INFINITY, Vec3A::NEG_INFINITY, Vec3A::ZERO);
        for &v in &mesh.vertices {
            let v = Vec3A::from(v);
            (min, max, finite) = (min.min(v), max.max(v), finite + v * 0.0);
        }
        if !finite.cmpeq(Vec3A::ZERO).all() {
            return Err(KdError::NonFiniteVertex);
        }
        // Every u32 names a vertex of a mesh with more than u32::MAX of them.
        if let Ok(count) = u32::try_from(mesh.vertices.len()) {
            // A fold without an early exit (it vectorises).
            if mesh.triangles.as_flattened().iter().fold(false, |bad, &v| bad | (v >= count)) {
                return Err(KdError::IndexOutOfRange);
            }
        }
        if mode == MeshMode::Compact
            && (mesh.vertices.len() > COMPACT_MAX_INDEX || mesh.triangles.len() > COMPACT_MAX_NODES)
        {
            return Err(KdError::TooLargeForCompact);
        }
        let bounds = Aabb::new(min.into(), max.into());
        // The 16-bit grid on the mesh box of compact vertices and planes and of leaf
        // ranges. A flat axis still gets a positive step, so values dequantise finitely.
        let origin = if mesh.vertices.is_empty() { Vec3::ZERO } else { bounds.min };
        let extent = if mesh.vertices.is_empty() { Vec3::ZERO } else { bounds.extents() };
        let step = (extent / 65535.0).max(Vec3::splat(f32::MIN_POSITIVE));
        // The tree's arrays gather from the items, which the build left in leaf order.
        let permute = |items: &[Item], materials: &[u8]| {
            let order = if with_order { collect(items.len(), jobs, |i| items[i].index) } else { Vec::new() };
            (collect(items.len(), jobs, |i| materials[items[i].index as usize]), order)
        };
        match mode {
            MeshMode::Full => {
                let grid = LeafGrid::new(origin, step, u16::MAX as u32);
                let (nodes, depth, items) = build_nodes(&mesh.vertices, &mesh.triangles, grid, jobs)?;
                let triangles = collect(items.len(), jobs, |i| mesh.triangles[items[i].index as usize]);
                let (materials, order) = permute(&items, &mesh.materials);
                mesh.vertices.shrink_to_fit();
                let full = Full { vertices: mesh.vertices, triangles, nodes, origin, quantum: step };
                Ok((KdMesh { repr: Repr::Full(full), materials, bounds, depth }, order))
            }
            MeshMode::Compact => {
                let quantise = |v: Vec3| ((v - origin) / step).to_array().map(round_step);
                let mut compact = Compact {
                    origin,
                    step,
                    vertices: mesh.vertices.iter().map(|&v| quantise(v)).collect(),
                    ..Compact::default()
                };
                // Build on the positions queries will see.
                let snapped: Vec<Vec3> = compact.vertices.iter().map(|&q| compact.dequantise(q)).collect();
                let bounds = snapped.iter().fold(Aabb::EMPTY, |b, &v| Aabb::new(b.min.min(v), b.max.max(v)));
                let grid = LeafGrid::new(origin, step * COMPACT_LEAF_STEPS, u8::MAX as u32);
                let (nodes, depth, items) = build_nodes(&snapped, &mesh.triangles, grid, jobs)?;
                if nodes.len() > COMPACT_MAX_NODES {
                    return Err(KdError::TooLargeForCompact);
                }
                compact.triangles =
                    items.iter().map(|it| mesh.triangles[it.index as usize].map(|v| v as u16)).collect();
                compact.nodes = nodes.iter().map(|n| compact_node(n, origin, step)).collect();
                let (materials, order) = permute(&items, &mesh.materials);
                Ok((KdMesh { repr: Repr::Compact(compact), materials, bounds, depth }, order))
            }
        }
    }

    pub fn mode(&self) -> MeshMode {
        match self.repr {
            Repr::Full(_) => MeshMode::Full,
            Repr::Compact(_) => MeshMode::Compact,
        }
    }

    pub fn triangle_count(&self) -> usize {
        self.materials.len()
    }

    pub fn node_count(&self) -> usize {
        match &self.repr {
            Repr::Full(f) => f.nodes.len(),
            Repr::Compact(c) => c.nodes.len(),
        }
    }

    /// Levels below the root (0 for a single leaf).
    pub fn depth(&self) -> u32 {
        self.depth
    }

    /// The box of all vertices (empty for an empty mesh).
    pub fn bounds(&self) -> Aabb {
        self.bounds
    }

    /// Tree triangle `index`'s vertices as queries see them (quantised in compact
    /// mode). Tree triangles are numbered in leaf order (see
    /// [`KdMesh::from_mesh_with_order`]).
    pub fn triangle(&self, index: u32) -> [Vec3; 3] {
        match &self.repr {
            Repr::Full(f) => f.triangle(index),
            Repr::Compact(c) => c.triangle(index),
        }
    }

    /// Tree triangle `index`'s material.
    pub fn material(&self, index: u32) -> u8 {
        self.materials[index as usize]
    }

    /// Bytes of tree nodes.
    pub fn tree_bytes(&self) -> usize {
        match &self.repr {
            Repr::Full(f) => f.nodes.len() * std::mem::size_of::<FullNode>(),
            Repr::Compact(c) => c.nodes.len() * std::mem::size_of::<CompactNode>(),
        }
    }

    /// Bytes of vertices, indices and materials.
    pub fn mesh_bytes(&self) -> usize {
        let (vertex, index) = match &self.repr {
            Repr::Full(f) => (f.vertices.len() * 12, f.triangles.len() * 12),
            Repr::Compact(c) => (c.vertices.len() * 6, c.triangles.len() * 6),
        };
        vertex + index + self.materials.len()
    }

    /// Heap bytes owned (allocated capacity), for cache budgets.
    pub fn heap_bytes(&self) -> usize {
        let repr = match &self.repr {
            Repr::Full(f) => f.vertices.capacity() * 12 + f.triangles.capacity() * 12 + f.nodes.capacity() * 12,
            Repr::Compact(c) => c.vertices.capacity() * 6 + c.triangles.capacity() * 6 + c.nodes.capacity() * 6,
        };
        repr + self.materials.capacity()
    }

    /// Calls `visit(triangle)` for every triangle that touches `aabb` (closed sets,
    /// exact separating-axis test); `visit` returns `false` to stop.
    pub fn query_aabb(&self, aabb: &Aabb, visit: impl FnMut(u32) -> bool) {
        match &self.repr {
            Repr::Full(f) => query_aabb(f, &self.bounds, aabb, true, visit),
            Repr::Compact(c) => query_aabb(c, &self.bounds, aabb, true, visit),
        }
    }

    /// Calls `visit(triangle)` for every triangle whose bounds touch `aabb`: a
    /// superset of [`KdMesh::query_aabb`] without its separating-axis test, for
    /// callers that test each triangle exactly against their own shape.
    pub fn query_aabb_candidates(&self, aabb: &Aabb, visit: impl FnMut(u32) -> bool) {
        match &self.repr {
            Repr::Full(f) => query_aabb(f, &self.bounds, aabb, false, visit),
            Repr::Compact(c) => query_aabb(c, &self.bounds, aabb, false, visit),
        }
    }

    /// The closest hit with `t` in `[0, max_t]`; on equal `t` the lower triangle index.
    pub fn ray_closest(&self, ray: &Ray, max_t: f32) -> Option<MeshHit> {
        let mut best: Option<MeshHit> = None;
        self.ray_cast(ray, max_t, |hit| keep_closest(&mut best, hit, max_t));
        best
    }

    /// [`KdMesh::ray_closest`] for every ray on the calling thread: `hits[i]` is ray
    /// `i`'s closest hit, bit for bit. The walks of [`RAY_LANES`] rays are interleaved
    /// a node at a time, each asking for the memory of its next node or triangles
    /// while the others step, so the cache misses of a large tree overlap instead of
    /// coming one after another. On a full mesh where the CPU has AVX2, 32 walks are
    /// in flight instead, stepped 8 per set of vector instructions (see
    /// `kdtree/wide.rs`; the same hits). Panics if `hits` and `rays` differ in length.
    pub fn ray_closest_batch(&self, rays: &[Ray], max_t: f32, hits: &mut [Option<MeshHit>]) {
        assert_eq!(rays.len(), hits.len(), "one hit slot per ray");
        #[cfg(target_arch = "x86_64")]
        if let Repr::Full(f) = &self.repr {
            if wide::available(f) {
                // SAFETY: `available` checked what the wide walk needs.
                return unsafe { wide::closest_batch(f, &self.bounds, rays, max_t, hits) };
            }
        }
        self.ray_closest_batch_scalar(rays, max_t, hits)
    }

    /// [`KdMesh::ray_closest_batch`] on the interleaved scalar walks: compact meshes,
    /// and full ones where the CPU lacks AVX2 (tests call it on machines that have it).
    pub(crate) fn ray_closest_batch_scalar(&self, rays: &[Ray], max_t: f32, hits: &mut [Option<MeshHit>]) {
        match &self.repr {
            Repr::Full(f) => closest_batch(f, &self.bounds, rays, max_t, hits),
            Repr::Compact(c) => closest_batch(c, &self.bounds, rays, max_t, hits),
        }
    }

    /// Any hit with `t` in `[0, max_t]` (the first found): for shadow and line-of-sight rays.
    pub fn ray_any(&self, ray: &Ray, max_t: f32) -> Option<MeshHit> {
        let mut found = None;
        self.ray_cast(ray, max_t, |hit| {
            found = Some(hit);
            -1.0
        });
        found
    }

    /// Calls `visit(hit)` for every hit with `t` in `[0, max_t]`, in no particular
    /// order; `visit` returns `false` to stop.
    pub fn ray_all(&self, ray: &Ray, max_t: f32, mut visit: impl FnMut(MeshHit) -> bool) {
        self.ray_cast(ray, max_t, |hit| if visit(hit) { max_t } else { -1.0 });
    }

    /// The segment walk behind the ray queries: `visit(hit)` returns the new maximum
    /// `t` (a negative value stops).
    pub fn ray_cast(&self, ray: &Ray, max_t: f32, visit: impl FnMut(MeshHit) -> f32) {
        match &self.repr {
            Repr::Full(f) => ray_cast(f, &self.bounds, ray, max_t, visit),
            Repr::Compact(c) => ray_cast(c, &self.bounds, ray, max_t, visit),
        }
    }

    fn node_at(&self, index: u32) -> Node {
        match &self.repr {
            Repr::Full(f) => f.node(index),
            Repr::Compact(c) => c.node(index),
        }
    }

    /// Checks the tree against the mesh: every triangle in exactly one leaf, numbered
    /// in leaf order, leaves hold 1 or 2 triangles, every triangle inside its
    /// ancestors' half-spaces and its leaf's range, the recorded depth is the real
    /// one. Panics with a description otherwise.
    pub fn validate(&self) {
        let n = self.triangle_count();
        if n == 0 {
            assert_eq!(self.node_count(), 0, "empty mesh with nodes");
            return;
        }
        assert!(self.node_count() <= n.max(1), "more nodes than triangles");
        let mut seen = vec![false; n];
        let mut leaves = Vec::new();
        // (node, depth, lower bound per axis, upper bound per axis)
        let mut stack = vec![(0u32, 0u32, Vec3::splat(f32::NEG_INFINITY), Vec3::splat(f32::INFINITY))];
        let mut max_depth = 0;
        while let Some((index, depth, lo, hi)) = stack.pop() {
            max_depth = max_depth.max(depth);
            match self.node_at(index) {
                Node::Leaf { first, count, axis, low, high } => {
                    assert!(count == 1 || count == 2, "leaf {index} holds {count} triangles");
                    leaves.push((index, first, count));
                    for t in first..first + count {
                        assert!((t as usize) < n, "leaf {index} names triangle {t} of {n}");
                        assert!(!std::mem::replace(&mut seen[t as usize], true), "triangle {t} in two leaves");
                        for v in self.triangle(t) {
                            assert!(v.cmpge(lo).all() && v.cmple(hi).all(), "triangle {t} outside its node");
                            assert!((low..=high).contains(&v[axis]), "triangle {t} outside its leaf's range");
                        }
                    }
                }
                Node::Branch { axis, split0, split1, child } => {
                    assert!(child > index + 1 && (child as usize) < self.node_count(), "right child out of range");
                    let (mut hi0, mut lo1) = (hi, lo);
                    hi0[axis] = hi0[axis].min(split0);
                    lo1[axis] = lo1[axis].max(split1);
                    stack.push((index + 1, depth + 1, lo, hi0));
                    stack.push((child, depth + 1, lo1, hi));
                }
            }
        }
        assert!(seen.iter().all(|&s| s), "a triangle is in no leaf");
        // Triangles are numbered in leaf order.
        leaves.sort_unstable();
        let mut next = 0;
        for (index, first, count) in leaves {
            assert_eq!(first, next, "leaf {index} is out of leaf order");
            next += count;
        }
        assert_eq!(max_depth, self.depth, "recorded depth");
    }
}

#[cfg(test)]
impl KdMesh {
    /// For every leaf: its range's `(low, high)` and its triangles' extent on the
    /// range's axis.
    pub(crate) fn leaf_ranges(&self) -> Vec<((f32, f32), (f32, f32))> {
        (0..self.node_count() as u32)
            .filter_map(|i| match self.node_at(i) {
                Node::Leaf { first, count, axis, low, high } => {
                    let values = (first..first + count).flat_map(|t| self.triangle(t)).map(|v| v[axis]);
                    let content = values.fold((f32::INFINITY, f32::NEG_INFINITY), |(a, b), v| (a.min(v), b.max(v)));
                    Some(((low, high), content))
                }
                Node::Branch { .. } => None,
            })
            .collect()
    }

    /// For every leaf: how far its region (the box its ancestors' planes and the
    /// tree's box leave it) reaches above its triangles along `axis`.
    pub(crate) fn leaf_gaps(&self, axis: usize) -> Vec<f32> {
        let mut gaps = Vec::new();
        let mut stack = vec![(0u32, self.bounds.max[axis])];
        while let Some((index, top)) = stack.pop() {
            match self.node_at(index) {
                Node::Leaf { first, count, .. } => {
                    let content = (first..first + count)
                        .flat_map(|t| self.triangle(t))
                        .fold(f32::NEG_INFINITY, |m, v| m.max(v[axis]));
                    gaps.push(top - content);
                }
                Node::Branch { axis: a, split0, child, .. } => {
                    stack.push((index + 1, if a == axis { top.min(split0) } else { top }));
                    stack.push((child, top));
                }
            }
        }
        gaps
    }
}

// ---- build ---------------------------------------------------------------------
