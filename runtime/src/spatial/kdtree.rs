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
//! (`kdtree_wide.rs`): same hits, 1.25-1.35 -> 0.87-1.18 µs per ray on the bench
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
#[path = "kdtree_wide.rs"]
mod wide;

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
            Repr::Full(f) => query_aabb(f, &self.bounds, aabb, visit),
            Repr::Compact(c) => query_aabb(c, &self.bounds, aabb, visit),
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
    /// `kdtree_wide.rs`; the same hits). Panics if `hits` and `rays` differ in length.
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

/// A triangle during the build: its box and its index, 32 bytes and aligned, so
/// the partitions move each item in two aligned halves. Its midpoint is its box's
/// (not the centroid, which made 40-byte items): the 1M-triangle bench mesh builds
/// in 134-139 ms instead of 176-198 (alternating runs), and the trees answer rays
/// as fast. Tried: 28-byte items (unaligned), 236 ms; 16-byte items with the boxes
/// on a 16-bit grid and exact planes returned from the children, 149-166 ms (the
/// integer minima and sums do not vectorise on baseline x86-64).
#[derive(Clone, Copy)]
#[repr(C, align(32))]
struct Item {
    min: Vec3,
    max: Vec3,
    index: u32,
}

impl Item {
    /// Twice the midpoint of the triangle's box on `axis`: the build averages and
    /// compares midpoints, never halves them.
    #[inline(always)]
    fn mid(&self, axis: usize) -> f32 {
        self.min[axis] + self.max[axis]
    }
}

/// Builds the canonical (full) node array in depth-first order and returns it with
/// the depth and the items in leaf order (a leaf's triangles are its items'
/// `index`es). With `jobs`, the two children of
/// every large node build side by side (see [`PARALLEL_ITEMS`]); the tree is the
/// same for any worker count.
fn build_nodes(
    vertices: &[Vec3],
    triangles: &[[u32; 3]],
    grid: LeafGrid,
    jobs: Option<Jobs>,
) -> Result<(Vec<FullNode>, u32, Vec<Item>), KdError> {
    if triangles.is_empty() {
        return Ok((Vec::new(), 0, Vec::new()));
    }
    let item = |i: usize| {
        let [a, b, c] = triangles[i].map(|v| vertices[v as usize]);
        Item { min: a.min(b).min(c), max: a.max(b).max(c), index: i as u32 }
    };
    // The root's content comes from the chunks' contents, combined in chunk order:
    // the same bits for any worker count (and, for a mesh of one chunk, the bits of
    // `content` over all items).
    let (mut bounds, mut sums) = (Aabb::EMPTY, [-0.0f64; 3]);
    let mut items = collect_chunks(triangles.len(), jobs, item, content, |(b, s)| {
        bounds = Aabb::new(bounds.min.min(b.min), bounds.max.max(b.max));
        for (sum, s) in sums.iter_mut().zip(s.expect("content sums")) {
            *sum += s;
        }
    });
    let count = subtree_nodes(items.len());
    let mut nodes = Vec::with_capacity(count);
    let build = Build { grid, jobs };
    let root = Place { node: 0, first: 0 };
    let depth =
        build.node(&mut nodes.spare_capacity_mut()[..count], root, &mut items, (bounds, Some(sums)), bounds, 0, false);
    // SAFETY: the build wrote every one of the `count` nodes: each call writes its
    // first node and hands the rest, split exactly, to its children (asserted in
    // `Build::node` and `Build::split`).
    unsafe { nodes.set_len(count) };
    if depth as usize > KD_MAX_DEPTH {
        return Err(KdError::TooManyTriangles);
    }
    Ok((nodes, depth, items))
}

/// `(0..n).map(f).collect()`, in chunks of [`PARALLEL_ITEMS`] built side by side on
/// `jobs` when there are several, with `summary` of each chunk once it is written
/// (while it is still in the cache), handed to `combine` in chunk order.
fn collect_chunks<T: Send, R: Send>(
    n: usize,
    jobs: Option<Jobs>,
    f: impl Fn(usize) -> T + Sync,
    summary: impl Fn(&[T]) -> R + Sync,
    mut combine: impl FnMut(R),
) -> Vec<T> {
    if n <= PARALLEL_ITEMS {
        // One chunk (a terrain chunk's mesh, always): no bookkeeping to allocate.
        let out: Vec<T> = (0..n).map(f).collect();
        combine(summary(&out));
        return out;
    }
    let mut out: Vec<T> = Vec::with_capacity(n);
    /// A chunk: its first index, its slots, its summary once written.
    type Part<'a, T, R> = (usize, &'a mut [MaybeUninit<T>], Option<R>);
    let mut parts: Vec<Part<T, R>> = out.spare_capacity_mut()[..n]
        .chunks_mut(PARALLEL_ITEMS)
        .enumerate()
        .map(|(c, part)| (c * PARALLEL_ITEMS, part, None))
        .collect();
    let fill = |(start, part, result): &mut Part<T, R>| {
        for (k, slot) in part.iter_mut().enumerate() {
            slot.write(f(*start + k));
        }
        // SAFETY: every element of `part` was just written.
        let written = unsafe { &*(&raw const **part as *const [T]) };
        *result = Some(summary(written));
    };
    match jobs {
        Some(jobs) if parts.len() > 1 => jobs.for_each_mut(&mut parts, |_, part, _| fill(part)),
        _ => parts.iter_mut().for_each(fill),
    }
    parts.into_iter().for_each(|(_, _, r)| combine(r.expect("every chunk ran")));
    // SAFETY: the parts cover `0..n` and each wrote all its elements (a panic in `f`
    // would have ended this function before).
    unsafe { out.set_len(n) };
    out
}

/// `(0..n).map(f).collect()`, side by side on `jobs` for large `n`.
fn collect<T: Send>(n: usize, jobs: Option<Jobs>, f: impl Fn(usize) -> T + Sync) -> Vec<T> {
    collect_chunks(n, jobs, f, |_| (), |()| ())
}

/// Items per job of a parallel build: a node with more builds its children side by
/// side (and computes their contents side by side); smaller subtrees build serially.
const PARALLEL_ITEMS: usize = 1 << 14;

/// The number of nodes of a subtree of `n >= 1` triangles. Every leaf holds two
/// triangles but, for an odd `n`, one (the left side of a split always gets an even
/// count, and a peel moves two), so the count depends on `n` alone: a node's right
/// child lies `1 + subtree_nodes(left count)` after it, known before the left
/// subtree is built, which lets both subtrees build at once.
fn subtree_nodes(n: usize) -> usize {
    n - 1 + (n & 1)
}

/// Where a subtree goes: the index of its root node, and the tree index of its first
/// triangle (the tree numbers triangles in leaf order).
#[derive(Clone, Copy)]
struct Place {
    node: u32,
    first: u32,
}

/// Where leaf ranges are quantised: `origin + q * quantum` for `q` in `0..=top`
/// (`scale` is the quantum's reciprocal, worked out once rather than per leaf).
#[derive(Clone, Copy)]
struct LeafGrid {
    origin: Vec3,
    quantum: Vec3,
    scale: Vec3,
    top: u32,
}

impl LeafGrid {
    fn new(origin: Vec3, quantum: Vec3, top: u32) -> LeafGrid {
        LeafGrid { origin, quantum, scale: 1.0 / quantum, top }
    }
}

struct Build<'j> {
    grid: LeafGrid,
    jobs: Option<Jobs<'j>>,
}

/// Items peeled into a leaf to cut a gap (see [`Build::peel`]).
const PEEL: usize = 2;

/// The most items of a node the mean split always halves as two on the left (see
/// [`Build::split_small`]): with six, four left are possible.
const SMALL: usize = 5;
const _: () = assert!(SMALL < 3 * PEEL, "a small node never peels");

impl Build<'_> {
    /// Builds the subtree of `items` into `out` (exactly [`subtree_nodes`] of them)
    /// and returns its deepest level: `bounds` is the items' box, `region` the box the
    /// ancestors' planes leave them (what a query sees); `peeled` says the parent was
    /// a peel.
    #[allow(clippy::too_many_arguments)]
    fn node(
        &self,
        out: &mut [MaybeUninit<FullNode>],
        at: Place,
        items: &mut [Item],
        (bounds, sums): Content,
        region: Aabb,
        level: u32,
        peeled: bool,
    ) -> u32 {
        let n = items.len();
        if n <= 2 {
            assert_eq!(out.len(), 1, "a leaf is one node");
            out[0].write(self.leaf(&bounds, &region, n, at.first));
            return level;
        }
        if !peeled && n >= 3 * PEEL {
            if let Some(side) = Build::gap(&bounds, &region) {
                return self.peel(out, at, items, (bounds, sums, region), side, level);
            }
        }
        let axis = bounds.longest_axis();
        if n <= SMALL {
            return self.split_small(out, at, axis, items, region, level);
        }
        let sum = match sums {
            Some(sums) => sums[axis],
            None => content(items).1.expect("content sums")[axis],
        };
        // One partition loop per axis, so the loop reads a fixed coordinate.
        let mut k = if n < PARALLEL_ITEMS {
            // The sums are f32 here (see `content`; after a peel, f64 ones less the
            // peel's): a midpoint goes left when below the mean, compared as
            // `mid * n < sum`, so no division holds up the loop.
            let (sum, count) = (sum as f32, n as f32);
            match axis {
                0 => partition(items, |it| it.mid(0) * count < sum),
                1 => partition(items, |it| it.mid(1) * count < sum),
                _ => partition(items, |it| it.mid(2) * count < sum),
            }
        } else {
            let mean = sum / n as f64;
            // The midpoints are f32s, so `(mid as f64) < mean` exactly when `mid <
            // cut`, `cut` the smallest f32 at or above the mean: the partition
            // compares in f32.
            let mut cut = mean as f32;
            if (cut as f64) < mean {
                cut = cut.next_up();
            }
            match axis {
                0 => partition(items, |it| it.mid(0) < cut),
                1 => partition(items, |it| it.mid(1) < cut),
                _ => partition(items, |it| it.mid(2) < cut),
            }
        };
        if 4 * k < n || 4 * (n - k) < n {
            // Too skewed: halve at the median (an even count on the left).
            k = n / 2;
            k -= k % 2;
            k = k.max(2);
            items.select_nth_unstable_by(k, |p, q| p.mid(axis).total_cmp(&q.mid(axis)));
        } else if k % 2 == 1 {
            // Keep the left count even: move the midpoint nearest the split across.
            if k < n - k {
                let j = k + argmin(&items[k..], |it| it.mid(axis));
                items.swap(k, j);
                k += 1;
            } else {
                let j = argmin(&items[..k], |it| -it.mid(axis));
                items.swap(j, k - 1);
                k -= 1;
            }
        }
        let (left, right) = items.split_at_mut(k);
        let (lc, rc) = self.both(n, || child_content(left), || child_content(right));
        self.split(out, at, axis, (left, lc), (right, rc), region, level, false)
    }

    /// A node of three to [`SMALL`] items: the mean split gives the left child two
    /// items in every case (a split keeps the left count even, and every other count
    /// is either skewed, falling back to the median, or odd, moving the midpoint
    /// nearest the split across), and they are the two with the smallest midpoints.
    /// So they are picked directly, without the mean and the partition: half of a
    /// tree's branches sit just above its leaves.
    #[inline(always)]
    fn split_small(
        &self,
        out: &mut [MaybeUninit<FullNode>],
        at: Place,
        axis: usize,
        items: &mut [Item],
        region: Aabb,
        level: u32,
    ) -> u32 {
        for i in 0..2 {
            let j = i + argmin(&items[i..], |it| it.mid(axis));
            items.swap(i, j);
        }
        let (left, right) = items.split_at_mut(2);
        let (lc, rc) = (child_content(left), child_content(right));
        // Both children are leaves: `peeled` does not matter.
        self.split(out, at, axis, (left, lc), (right, rc), region, level, false)
    }

    /// Runs `a` and `b` and returns their results, side by side when building in
    /// parallel and a node of `n` items is worth it. (The serial path returns the
    /// values directly: passing them out through `Option`s spilled them to the
    /// stack in pieces that the reads then could not forward.)
    #[inline(always)]
    fn both<A: Send, B: Send>(&self, n: usize, a: impl FnOnce() -> A + Send, b: impl FnOnce() -> B + Send) -> (A, B) {
        match self.jobs {
            Some(jobs) if n >= PARALLEL_ITEMS => {
                let (mut ra, mut rb) = (None, None);
                jobs.join(|| ra = Some(a()), || rb = Some(b()));
                (ra.expect("join ran a"), rb.expect("join ran b"))
            }
            _ => (a(), b()),
        }
    }

    /// A leaf of `n` triangles from tree index `first` whose box is `bounds`. Beyond
    /// the reference, it records the range of its content on the axis where its
    /// region is loosest around it, rounded outwards on the grid: a query whose segment or box misses that range skips the triangles
    /// without loading them. (On the 1M-triangle bench mesh it skips half the
    /// triangle tests of random rays.)
    #[inline(always)]
    fn leaf(&self, bounds: &Aabb, region: &Aabb, n: usize, first: u32) -> FullNode {
        let gap = (region.max - bounds.max) + (bounds.min - region.min);
        let axis = if gap.x >= gap.y && gap.x >= gap.z {
            0
        } else if gap.y >= gap.z {
            1
        } else {
            2
        };
        let LeafGrid { origin, quantum, scale, top: last } = self.grid;
        let (o, q, scale) = (origin[axis], quantum[axis], scale[axis]);
        let (min, max) = (bounds.min[axis], bounds.max[axis]);
        // Truncation (`as`, saturating) is floor for the non-negative values here,
        // and cheaper than `floor` and `ceil`, which are libm calls on baseline x86-64.
        let mut low = (((min - o) * scale) as u32).min(last);
        let mut high = (((max - o) * scale) as u32).saturating_add(1).min(last);
        // Rounding can land a step off: step until the range contains, with the same
        // arithmetic as the queries. The steps are rare and out of line: LLVM
        // vectorises the stepping loops, and their set-up inline cost more than the
        // rest of the leaf.
        if low > 0 && o + low as f32 * q > min {
            low = step_down(o, q, low, min);
        }
        if high < last && top(o, high, last, q) < max {
            high = step_up(o, q, high, last, max);
        }
        FullNode { a: first, b: low | high << 16, tag: LEAF | (n as u32) << 2 | (axis as u32) << 4 }
    }

    /// Writes the branch at `out[0]` on `axis` and builds both children after it, each
    /// in the region its plane leaves; returns the deepest level.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn split(
        &self,
        out: &mut [MaybeUninit<FullNode>],
        at: Place,
        axis: usize,
        (left, lc): (&mut [Item], Content),
        (right, rc): (&mut [Item], Content),
        region: Aabb,
        level: u32,
        peeled: bool,
    ) -> u32 {
        let (lb, rb) = (lc.0, rc.0);
        let (mut left_region, mut right_region) = (region, region);
        left_region.max[axis] = left_region.max[axis].min(lb.max[axis]);
        right_region.min[axis] = right_region.min[axis].max(rb.min[axis]);
        let (k, n) = (left.len(), left.len() + right.len());
        let (branch, rest) = out.split_first_mut().expect("a subtree has a node");
        let (left_out, right_out) = rest.split_at_mut(subtree_nodes(k));
        assert_eq!(right_out.len(), subtree_nodes(n - k), "the children fill the subtree's nodes");
        let child = at.node + 1 + left_out.len() as u32;
        let left_at = Place { node: at.node + 1, first: at.first };
        let right_at = Place { node: child, first: at.first + k as u32 };
        let depth = if k <= 2 && n - k <= 2 {
            // Both children are leaves: written here, without the calls (most nodes
            // of a tree sit this low).
            left_out[0].write(self.leaf(&lb, &left_region, k, left_at.first));
            right_out[0].write(self.leaf(&rb, &right_region, n - k, right_at.first));
            level + 1
        } else {
            let (left_depth, right_depth) = self.both(
                n,
                || self.node(left_out, left_at, left, lc, left_region, level + 1, peeled),
                || self.node(right_out, right_at, right, rc, right_region, level + 1, peeled),
            );
            left_depth.max(right_depth)
        };
        branch.write(FullNode { a: lb.max[axis].to_bits(), b: rb.min[axis].to_bits(), tag: axis as u32 | child << 2 });
        depth
    }

    /// The axis and side (`true` for the upper one) where the region leaves the
    /// widest gap around the content, if that gap is wider than a quarter of the
    /// content's longest extent (measured on the 1M-triangle bench mesh: 1.0 halves
    /// the ray cost, 0.25 gains another 15%, 0.1 nothing more). On 2.5D terrain the tree splits x and z almost everywhere, so
    /// without this no node would bound y and a ray crossing metres of air would
    /// visit every column under its path.
    #[inline(always)]
    fn gap(bounds: &Aabb, region: &Aabb) -> Option<(usize, bool)> {
        let size = bounds.extents().max_element();
        let mut best: Option<(f32, usize, bool)> = None;
        for axis in 0..3 {
            for (gap, top) in
                [(region.max[axis] - bounds.max[axis], true), (bounds.min[axis] - region.min[axis], false)]
            {
                if gap > 0.25 * size && best.is_none_or(|b| gap > b.0) {
                    best = Some((gap, axis, top));
                }
            }
        }
        best.map(|(_, axis, top)| (axis, top))
    }

    /// Beyond the reference: a peel split. The [`PEEL`] triangles reaching furthest
    /// into the gap go to a leaf on that side, and the rest get a plane at their
    /// own extent, so the big child's region fits its content on that side. The
    /// node count is unchanged (still one node per triangle); each peel adds one
    /// level, and a peel's children never peel, so the depth at most doubles.
    #[inline(always)]
    fn peel(
        &self,
        out: &mut [MaybeUninit<FullNode>],
        at: Place,
        items: &mut [Item],
        (bounds, sums, region): (Aabb, Option<[f64; 3]>, Aabb),
        (axis, top): (usize, bool),
        level: u32,
    ) -> u32 {
        // One pass finds the PEEL items reaching furthest into the gap. The rest's
        // midpoint sums are the items' (which the content pass that measured them
        // computed) less the peel's, so the rest's next split needs no pass for its
        // mean; the rest's box is the parent's with that one side moved (looser on
        // the other axes, which only steers later axis choices).
        let best = match (axis, top) {
            (0, true) => furthest(items, |it| it.max.x),
            (1, true) => furthest(items, |it| it.max.y),
            (_, true) => furthest(items, |it| it.max.z),
            (0, false) => furthest(items, |it| -it.min.x),
            (1, false) => furthest(items, |it| -it.min.y),
            (_, false) => furthest(items, |it| -it.min.z),
        };
        let mut sums = match sums {
            Some(sums) => sums,
            None => content(items).1.expect("content sums"),
        };
        let n = items.len();
        let mut picked = [best[0].1, best[1].1];
        picked.sort_unstable();
        for p in picked {
            for (sum, mid) in sums.iter_mut().zip((items[p].min + items[p].max).to_array()) {
                *sum -= mid as f64;
            }
        }
        // Move the peel to its end of the slice; swapping the index nearer that end
        // first never moves the other pick.
        if top {
            items.swap(picked[1], n - 1);
            items.swap(picked[0], n - 2);
        } else {
            items.swap(picked[0], 0);
            items.swap(picked[1], 1);
        }
        let mut rest_box = bounds;
        if top {
            rest_box.max[axis] = best[PEEL].0;
            let (rest, peel) = items.split_at_mut(n - PEEL);
            let pc = child_content(peel);
            self.split(out, at, axis, (rest, (rest_box, Some(sums))), (peel, pc), region, level, true)
        } else {
            rest_box.min[axis] = -best[PEEL].0;
            let (peel, rest) = items.split_at_mut(PEEL);
            let pc = child_content(peel);
            self.split(out, at, axis, (peel, pc), (rest, (rest_box, Some(sums))), region, level, true)
        }
    }
}

/// What a node knows of its items: their box, and the sums of their midpoints per
/// axis when a pass over them has just computed it (the next split's mean).
type Content = (Aabb, Option<[f64; 3]>);

/// The items' box and midpoint sums, in one pass. Below [`PARALLEL_ITEMS`] items
/// (every chunk's tree, every subtree one job builds) the sums are f32, four-wide
/// beside the box: the mean only steers the split, and its sums as f64 took a tenth
/// of a chunk's build; above, f64 per axis, which keeps a large mesh's sums exact
/// enough whatever the chunking. Either way the bits depend on the items alone.
#[inline(always)]
fn content(items: &[Item]) -> Content {
    if items.len() < PARALLEL_ITEMS {
        // Four-wide minima, maxima and sums (`Vec3`'s are three scalar ones), two
        // items a round into two sets: each set's chain waits on every other item.
        let mut acc = [(Vec3A::INFINITY, Vec3A::NEG_INFINITY, Vec3A::splat(-0.0)); 2];
        let (pairs, rest) = items.as_chunks::<2>();
        let add = |(min, max, sums): &mut (Vec3A, Vec3A, Vec3A), it: &Item| {
            let (lo, hi) = (Vec3A::from(it.min), Vec3A::from(it.max));
            (*min, *max, *sums) = (min.min(lo), max.max(hi), *sums + (lo + hi));
        };
        for [a, b] in pairs {
            let [x, y] = &mut acc;
            add(x, a);
            add(y, b);
        }
        if let [it] = rest {
            add(&mut acc[0], it);
        }
        let [(min0, max0, sums0), (min1, max1, sums1)] = acc;
        let (min, max, sums) = (min0.min(min1), max0.max(max1), sums0 + sums1);
        return (Aabb::new(min.into(), max.into()), Some(sums.to_array().map(f64::from)));
    }
    // Four-wide minima and maxima (`Vec3`'s are three scalar ones).
    let (mut min, mut max, mut sums) = (Vec3A::INFINITY, Vec3A::NEG_INFINITY, [-0.0f64; 3]);
    for it in items {
        min = min.min(it.min.into());
        max = max.max(it.max.into());
        for (sum, mid) in sums.iter_mut().zip((it.min + it.max).to_array()) {
            *sum += mid as f64;
        }
    }
    (Aabb::new(min.into(), max.into()), Some(sums))
}

/// A child's content: a leaf's (two items at most) never splits, and a node of
/// up to [`SMALL`] items splits without a mean (`Build::split_small`), so they need
/// no sums, only the box (computed as `content` computes it: the same bits).
#[inline(always)]
fn child_content(items: &[Item]) -> Content {
    if items.len() > SMALL {
        return content(items);
    }
    let (mut min, mut max) = (Vec3A::INFINITY, Vec3A::NEG_INFINITY);
    for it in items {
        min = min.min(it.min.into());
        max = max.max(it.max.into());
    }
    (Aabb::new(min.into(), max.into()), None)
}

/// Moves the items where `left` holds to the front; returns their count.
#[inline(always)]
fn partition(items: &mut [Item], left: impl Fn(&Item) -> bool) -> usize {
    let mut k = 0usize;
    for i in 0..items.len() {
        // Swap with `k` when `left` holds, else with itself: no branch on the
        // predicate, which is a coin toss wherever the triangles are not in order.
        // The item stays in registers across the swap (`k <= i`).
        let item = items[i];
        let goes_left = left(&item);
        let j = if goes_left { k } else { i };
        items[i] = items[j];
        items[j] = item;
        k += goes_left as usize;
    }
    k
}

/// The [`PEEL`] items with the largest `key`, largest first (the earlier item on a
/// tie), and the next largest key (the rest's extent).
#[inline(always)]
fn furthest(items: &[Item], key: impl Fn(&Item) -> f32) -> [(f32, usize); PEEL + 1] {
    let mut best = [(f32::NEG_INFINITY, usize::MAX); PEEL + 1];
    for (i, it) in items.iter().enumerate() {
        let k = key(it);
        if k > best[PEEL].0 {
            best[PEEL] = (k, i);
            best.sort_by(|a, b| b.0.total_cmp(&a.0));
        }
    }
    best
}

/// The index of the first item with the smallest `key` (0 for none). The keys are
/// finite: a strict `<` keeps the first minimum, without `total_cmp`'s branches.
#[inline(always)]
fn argmin(items: &[Item], key: impl Fn(&Item) -> f32) -> usize {
    let (mut best, mut at) = (f32::INFINITY, 0);
    for (i, it) in items.iter().enumerate() {
        let k = key(it);
        let less = k < best;
        (best, at) = (if less { k } else { best }, if less { i } else { at });
    }
    at
}

/// The compact form of a full node: planes rounded outwards on the quantisation grid.
fn compact_node(n: &FullNode, origin: Vec3, step: Vec3) -> CompactNode {
    if n.tag & 3 == LEAF {
        // The leaf range was quantised to 8 bits: repack it.
        let b = (n.b & 0xff | (n.b >> 16 & 0xff) << 8) as u16;
        return CompactNode { a: n.a as u16, b, tag: n.tag as u16 };
    }
    let axis = (n.tag & 3) as usize;
    let (o, s) = (origin[axis], step[axis]);
    let (split0, split1) = (f32::from_bits(n.a), f32::from_bits(n.b));
    // Floor and ceiling on the grid, clamped to it: truncation (`as`, saturating at
    // 0) is the floor of the non-negative values that matter, and cheaper than
    // `floor` and `ceil`, which are libm calls on baseline x86-64.
    let x0 = (split0 - o) / s;
    let mut a = x0 as u32;
    a += ((a as f32) < x0) as u32;
    let mut a = a.min(u16::MAX as u32) as u16;
    let mut b = (((split1 - o) / s) as u32).min(u16::MAX as u32) as u16;
    // The division can round the wrong way by an ulp: fix up so the planes contain
    // (rarely, and out of line, as for leaf ranges).
    let deq = |q: u16| o + q as f32 * s;
    if a < u16::MAX && deq(a) < split0 {
        a = plane_up(o, s, a, split0);
    }
    if b > 0 && deq(b) > split1 {
        b = plane_down(o, s, b, split1);
    }
    CompactNode { a, b, tag: n.tag as u16 }
}

/// `x.round().clamp(0.0, 65535.0) as u16` for a vertex's position in grid steps
/// (never NaN), without `roundf`, a libm call on baseline x86-64 (three a vertex were
/// a sixth of the compact build's extra time over full mode's). Rounds half away from
/// zero as `round` does: `x - t` is exact for the truncation `t` of `x` below 2^24.
#[inline]
fn round_step(x: f32) -> u16 {
    let x = x.clamp(0.0, 65535.0);
    let t = x as u32;
    (t + (x - t as f32 >= 0.5) as u32) as u16
}

/// The smallest 16-bit grid step at or above `a` whose value is at least `split`.
#[cold]
#[inline(never)]
fn plane_up(origin: f32, step: f32, mut a: u16, split: f32) -> u16 {
    while a < u16::MAX && origin + a as f32 * step < split {
        a += 1;
    }
    a
}

/// The largest 16-bit grid step at or below `b` whose value is at most `split`.
#[cold]
#[inline(never)]
fn plane_down(origin: f32, step: f32, mut b: u16, split: f32) -> u16 {
    while b > 0 && origin + b as f32 * step > split {
        b -= 1;
    }
    b
}

// ---- queries -------------------------------------------------------------------

fn query_aabb<S: Storage>(s: &S, bounds: &Aabb, aabb: &Aabb, mut visit: impl FnMut(u32) -> bool) {
    if !bounds.is_valid() || !aabb.is_valid() || !bounds.overlaps(aabb) {
        return;
    }
    let mut stack = [0u32; STACK_SIZE];
    let mut top = 1;
    // The box per axis as arrays indexed by `axis & 3`: no bounds checks or branches
    // for the axis in the loop (glam indexes a vector by matching on the index).
    let (lo, hi) = (aabb.min.extend(0.0).to_array(), aabb.max.extend(0.0).to_array());
    while top > 0 {
        top -= 1;
        match s.node(stack[top]) {
            Node::Branch { axis, split0, split1, child } => {
                let left = stack[top] + 1;
                if split1 <= hi[axis & 3] {
                    stack[top] = child;
                    top += 1;
                }
                if split0 >= lo[axis & 3] {
                    stack[top] = left;
                    top += 1;
                }
            }
            Node::Leaf { first, count, axis, low, high } => {
                if hi[axis & 3] < low || lo[axis & 3] > high {
                    continue;
                }
                for t in first..first + count {
                    if triangle_overlaps_aabb(s.triangle(t), aabb) && !visit(t) {
                        return;
                    }
                }
            }
        }
    }
}

/// Keeps the closer of `hit` and `best` (on equal `t` the lower triangle index) and
/// returns the new maximum `t`: the visitor of closest-hit queries.
#[inline]
fn keep_closest(best: &mut Option<MeshHit>, hit: MeshHit, max_t: f32) -> f32 {
    if best.is_none_or(|b| hit.t < b.t || (hit.t == b.t && hit.triangle < b.triangle)) {
        *best = Some(hit);
    }
    best.map_or(max_t, |b| b.t)
}

fn ray_cast<S: Storage>(s: &S, bounds: &Aabb, ray: &Ray, max_t: f32, mut visit: impl FnMut(MeshHit) -> f32) {
    let mut walk = Walk::new();
    if walk.start(bounds, ray, max_t) {
        while !walk.done() {
            walk.step::<S, false>(s, &mut visit);
        }
    }
}

/// One ray's closest-hit walk carried from tree to tree: [`TreeWalk::aim`] does the
/// ray's set-up once (the triangle test's shear, the components), then each tree
/// costs its box test and its nodes. A terrain ray cast walks the chunk trees along
/// its ray with one; a batch of them interleaves their steps.
pub(crate) struct TreeWalk {
    walk: Walk,
    best: Option<MeshHit>,
    max_t: f32,
}

impl TreeWalk {
    pub(crate) fn new() -> TreeWalk {
        TreeWalk { walk: Walk::new(), best: None, max_t: 0.0 }
    }

    /// Sets up `ray` for the trees to come; `false` for a ray no triangle can hit.
    pub(crate) fn aim(&mut self, ray: &Ray) -> bool {
        self.walk.top = 0;
        self.walk.fetch = Fetch::Idle;
        self.walk.aim(ray)
    }

    /// Starts the walk of `mesh`'s tree for hits up to `max_t`, as
    /// [`KdMesh::ray_closest`] would; `false` (and done) when the ray misses its box.
    pub(crate) fn enter(&mut self, mesh: &KdMesh, max_t: f32) -> bool {
        self.best = None;
        self.max_t = max_t;
        self.walk.enter(&mesh.bounds, max_t)
    }

    /// Asks for the root node of `mesh` (the tree just entered) ahead of its first step.
    pub(crate) fn prefetch_root(&self, mesh: &KdMesh) {
        match &mesh.repr {
            Repr::Full(f) => f.prefetch(0),
            Repr::Compact(c) => c.prefetch(0),
        }
    }

    pub(crate) fn done(&self) -> bool {
        self.walk.done()
    }

    /// One interleaved step of the walk of `mesh`, the tree last entered (see
    /// [`Walk::step`]).
    pub(crate) fn step(&mut self, mesh: &KdMesh) {
        let max_t = self.max_t;
        let visit = &mut |hit| keep_closest(&mut self.best, hit, max_t);
        match &mesh.repr {
            Repr::Full(f) => self.walk.step::<Full, true>(f, visit),
            Repr::Compact(c) => self.walk.step::<Compact, true>(c, visit),
        }
    }

    /// Walks `mesh`, the tree last entered, to the end without interleaving:
    /// the same steps as [`KdMesh::ray_closest`].
    pub(crate) fn finish(&mut self, mesh: &KdMesh) {
        fn run<S: Storage>(w: &mut TreeWalk, s: &S) {
            let max_t = w.max_t;
            let visit = &mut |hit| keep_closest(&mut w.best, hit, max_t);
            while !w.walk.done() {
                w.walk.step::<S, false>(s, visit);
            }
        }
        match &mesh.repr {
            Repr::Full(f) => run(self, f),
            Repr::Compact(c) => run(self, c),
        }
    }

    /// The closest hit in the tree walked (once [`TreeWalk::done`]).
    pub(crate) fn best(&self) -> Option<MeshHit> {
        self.best
    }
}

/// Rays interleaved by [`KdMesh::ray_closest_batch`]: enough walks in flight to
/// cover a trip to memory with the others' steps.
pub const RAY_LANES: usize = 8;

fn closest_batch<S: Storage>(s: &S, bounds: &Aabb, rays: &[Ray], max_t: f32, hits: &mut [Option<MeshHit>]) {
    struct Lane {
        walk: Walk,
        ray: usize,
        best: Option<MeshHit>,
    }
    let mut lanes: [Lane; RAY_LANES] = std::array::from_fn(|_| Lane { walk: Walk::new(), ray: usize::MAX, best: None });
    let mut next = 0;
    let mut busy = true;
    while busy {
        busy = false;
        for lane in &mut lanes {
            if lane.walk.done() {
                if lane.ray != usize::MAX {
                    hits[lane.ray] = lane.best;
                    lane.ray = usize::MAX;
                }
                while next < rays.len() && lane.ray == usize::MAX {
                    hits[next] = None;
                    if lane.walk.start(bounds, &rays[next], max_t) {
                        lane.ray = next;
                        lane.best = None;
                    }
                    next += 1;
                }
                if lane.ray == usize::MAX {
                    continue;
                }
            }
            busy = true;
            let best = &mut lane.best;
            lane.walk.step::<S, true>(s, &mut |hit| keep_closest(best, hit, max_t));
        }
    }
}

/// Where an interleaved walk is with a leaf whose range the segment meets: its
/// triangles are fetched over two steps (their indices, then their vertices) and
/// tested on the third.
#[derive(Clone, Copy)]
enum Fetch {
    Idle,
    Indices { first: u32, count: u32 },
    Vertices { first: u32, count: u32 },
}

/// One ray's segment walk, resumable a node at a time: a stack of `(node, t_min,
/// t_max)` segments, near child on top.
struct Walk {
    shear: RayShear,
    /// Per axis as arrays indexed by `axis & 3`: no bounds checks or branches for the
    /// axis in the loop (glam indexes a vector by matching on the index).
    origin: [f32; 4],
    dir: [f32; 4],
    inv_dir: [f32; 4],
    /// How far planes are widened (see [`Walk::start`]).
    eps: f32,
    /// Largest `t` still of interest (the visitor lowers it).
    max_t: f32,
    top: usize,
    fetch: Fetch,
    /// Entries below `top` are written; the rest are not read. Left uninitialised so
    /// a walk through a small chunk tree does not first clear 1.2 KB (8% of the
    /// terrain's ray cost).
    stack: [MaybeUninit<(u32, f32, f32)>; STACK_SIZE],
}

impl Walk {
    /// A walk that is done.
    fn new() -> Walk {
        Walk {
            shear: RayShear::default(),
            origin: [0.0; 4],
            dir: [0.0; 4],
            inv_dir: [0.0; 4],
            eps: 0.0,
            max_t: 0.0,
            top: 0,
            fetch: Fetch::Idle,
            stack: [MaybeUninit::uninit(); STACK_SIZE],
        }
    }

    /// Starts walking `ray` up to `max_t` from the root; `false` (and done) when the
    /// ray cannot hit the tree.
    fn start(&mut self, bounds: &Aabb, ray: &Ray, max_t: f32) -> bool {
        self.top = 0;
        self.fetch = Fetch::Idle;
        self.aim(ray) && self.enter(bounds, max_t)
    }

    /// The per-ray part of [`Walk::start`]: the triangle test's set-up and the ray's
    /// components. `false` for a ray no triangle can hit.
    fn aim(&mut self, ray: &Ray) -> bool {
        if !ray.is_valid() {
            return false;
        }
        let Some(shear) = RayShear::new(ray) else { return false };
        self.shear = shear;
        self.origin = ray.origin.extend(0.0).to_array();
        self.dir = ray.dir.extend(0.0).to_array();
        self.inv_dir = ray.inv_dir.extend(0.0).to_array();
        true
    }

    /// The per-tree part of [`Walk::start`], for the ray of the last [`Walk::aim`]:
    /// clips it to the tree's box and pushes the root; `false` (and done) on a miss.
    fn enter(&mut self, bounds: &Aabb, max_t: f32) -> bool {
        self.top = 0;
        self.fetch = Fetch::Idle;
        if !bounds.is_valid() || max_t.is_nan() || max_t < 0.0 {
            return false;
        }
        // Widen planes by a margin relative to the distances involved, and by a few
        // ulps of the coordinates themselves: far from the origin (10 km) the first
        // alone rounds away when added to a plane.
        let (lo, hi, o) = (Vec3A::from(bounds.min), Vec3A::from(bounds.max), Vec3A::from_slice(&self.origin));
        let reach = (hi - o).abs().max((lo - o).abs()).max_element();
        let magnitude = lo.abs().max(hi.abs()).max(o.abs()).max_element();
        self.eps = 1e-5 * ((hi - lo).max_element() + reach) + 4.0 * f32::EPSILON * magnitude + f32::MIN_POSITIVE;
        let ray = Ray {
            origin: Vec3::from_slice(&self.origin),
            dir: Vec3::from_slice(&self.dir),
            inv_dir: Vec3::from_slice(&self.inv_dir),
        };
        let Some((t_root, t_exit)) = ray.clip(&bounds.expanded(self.eps), max_t) else { return false };
        self.max_t = max_t;
        self.push((0, t_root, t_exit));
        true
    }

    #[inline(always)]
    fn push(&mut self, entry: (u32, f32, f32)) {
        self.stack[self.top] = MaybeUninit::new(entry);
        self.top += 1;
    }

    #[inline]
    fn done(&self) -> bool {
        self.top == 0 && matches!(self.fetch, Fetch::Idle)
    }

    /// One step: the next node whose segment is still of interest, or one stage of
    /// a leaf's fetch; plain (not `INTERLEAVED`) walks run to the end in one step.
    /// `visit(hit)` returns the new maximum `t`; a negative one ends the walk.
    /// `INTERLEAVED` walks prefetch what their next step reads and fetch triangles
    /// in stages; plain walks test them at once.
    #[inline(always)]
    fn step<S: Storage, const INTERLEAVED: bool>(&mut self, s: &S, visit: &mut impl FnMut(MeshHit) -> f32) {
        if INTERLEAVED {
            match self.fetch {
                Fetch::Idle => {}
                Fetch::Indices { first, count } => {
                    s.prefetch_vertices(first, count);
                    self.fetch = Fetch::Vertices { first, count };
                    return;
                }
                Fetch::Vertices { first, count } => {
                    self.fetch = Fetch::Idle;
                    self.test(s, first, count, visit);
                    return;
                }
            }
        }
        let (origin, dir, inv_dir, eps) = (self.origin, self.dir, self.inv_dir, self.eps);
        // `top` stays in a register through the loop (as a field, every write to
        // the stack reloaded it).
        let mut top = self.top;
        'pop: while top > 0 {
            top -= 1;
            // SAFETY: every entry below `top` was written.
            let (mut index, t0, t1) = unsafe { self.stack[top].assume_init() };
            if t0 > self.max_t {
                continue;
            }
            let mut t1 = if self.max_t < t1 { self.max_t } else { t1 };
            loop {
                match s.node(index) {
                    Node::Branch { axis, split0, split1, child } => {
                        let (left, right) = (index + 1, child);
                        let (o, d) = (origin[axis & 3], dir[axis & 3]);
                        let (s0, s1) = (split0 + eps, split1 - eps);
                        if d == 0.0 {
                            self.top = top;
                            if o >= s1 {
                                self.push((right, t0, t1));
                            }
                            if o <= s0 {
                                self.push((left, t0, t1));
                            }
                            if INTERLEAVED {
                                return;
                            }
                            top = self.top;
                            continue 'pop;
                        }
                        let inv = inv_dir[axis & 3];
                        let (c0, c1) = ((s0 - o) * inv, (s1 - o) * inv);
                        // Left is `t <= c0` going up the axis, `t >= c0` going down; right
                        // the opposite.
                        let up = d > 0.0;
                        let (near, far) = (if up { left } else { right }, if up { right } else { left });
                        let (near_end, far_start) = (if up { c0 } else { c1 }, if up { c1 } else { c0 });
                        // The far entry is written and kept by moving the top: whether
                        // a random ray enters it is a coin toss for the branch
                        // predictor. (A branch's node depth bounds the stack as
                        // before.) A NaN plane distance (a plane through the origin of
                        // a ray nearly parallel to it) keeps `t0` and `t1`, as
                        // `f32::max` and `min` would, without their NaN handling.
                        let far_t0 = if far_start > t0 { far_start } else { t0 };
                        self.stack[top] = MaybeUninit::new((far, far_t0, t1));
                        top += (far_start <= t1) as usize;
                        s.prefetch(far);
                        let near_t1 = if near_end < t1 { near_end } else { t1 };
                        if INTERLEAVED {
                            self.stack[top] = MaybeUninit::new((near, t0, near_t1));
                            top += (near_end >= t0) as usize;
                            self.top = top;
                            s.prefetch(near);
                            return;
                        }
                        // A plain walk goes on to the near child in registers: its
                        // node's address waits on no stack entry.
                        if near_end < t0 {
                            continue 'pop;
                        }
                        (index, t1) = (near, near_t1);
                    }
                    Node::Leaf { first, count, axis, low, high } => {
                        // The segment against the leaf's range, like a plane (widened too).
                        let (o, d) = (origin[axis & 3], dir[axis & 3]);
                        let (low, high) = (low - eps, high + eps);
                        let missed = if d == 0.0 {
                            o < low || o > high
                        } else {
                            let inv = inv_dir[axis & 3];
                            let (a, b) = ((low - o) * inv, (high - o) * inv);
                            a.max(b) < t0 || a.min(b) > t1
                        };
                        if missed {
                            continue 'pop;
                        }
                        self.top = top;
                        if INTERLEAVED {
                            s.prefetch_indices(first, count);
                            self.fetch = Fetch::Indices { first, count };
                            return;
                        }
                        self.test(s, first, count, visit);
                        top = self.top;
                        continue 'pop;
                    }
                }
            }
        }
        self.top = top;
    }

    /// Tests triangles `first .. first + count` and hands the hits to `visit`.
    #[inline(always)]
    fn test<S: Storage>(&mut self, s: &S, first: u32, count: u32, visit: &mut impl FnMut(MeshHit) -> f32) {
        for t in first..first + count {
            if let Some(h) = self.shear.hit(s.triangle(t), 0.0, self.max_t) {
                self.max_t = visit(MeshHit { t: h.t, triangle: t, u: h.u, v: h.v });
                if self.max_t < 0.0 {
                    self.top = 0;
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
mod rounding_tests {
    use super::*;
    use crate::spatial::tests::Rng;

    /// The compact planes as an earlier build computed them: libm floor and ceiling, clamped, then stepped until they contain the planes.
    fn reference_planes(split0: f32, split1: f32, o: f32, s: f32) -> (u16, u16) {
        let q = |v: f32, up: bool| {
            let x = (v - o) / s;
            (if up { x.ceil() } else { x.floor() }).clamp(0.0, 65535.0) as u16
        };
        let (mut a, mut b) = (q(split0, true), q(split1, false));
        while a < u16::MAX && o + a as f32 * s < split0 {
            a += 1;
        }
        while b > 0 && o + b as f32 * s > split1 {
            b -= 1;
        }
        (a, b)
    }

    /// Truncation for floor and ceiling, and the fix-ups out of line, give the
    /// planes the libm version gave, on every axis, for planes anywhere in the mesh
    /// box, on its faces, on grid steps and an ulp either side of them.
    #[test]
    fn compact_planes_are_the_floor_and_ceiling_ones() {
        let mut rng = Rng(40);
        for round in 0..20_000 {
            let origin = rng.vec3(-1e4, 1e4);
            let extent = Vec3::new(rng.range(1e-3, 2e3), rng.range(0.0, 50.0), rng.range(1e-3, 2e4));
            let step = (extent / 65535.0).max(Vec3::splat(f32::MIN_POSITIVE));
            let axis = rng.below(3);
            let (o, s) = (origin[axis], step[axis]);
            let pick = |rng: &mut Rng| match rng.below(5) {
                0 => o,
                1 => o + extent[axis],
                2 => o + rng.below(65536) as f32 * s,
                3 => (o + rng.below(65536) as f32 * s).next_up(),
                _ => o + rng.range(0.0, 1.0) * extent[axis],
            };
            let (mut split0, mut split1) = (pick(&mut rng), pick(&mut rng));
            if round % 2 == 1 {
                // A branch's planes: split0 bounds the left child from above, split1
                // the right from below; either order occurs.
                (split0, split1) = (split1, split0);
            }
            let node = FullNode { a: split0.to_bits(), b: split1.to_bits(), tag: axis as u32 | 7 << 2 };
            let compact = compact_node(&node, origin, step);
            assert_eq!((compact.a, compact.b), reference_planes(split0, split1, o, s), "round {round}");
            assert_eq!(compact.tag, node.tag as u16);
        }
    }

    /// Vertices quantise as `round` and a clamp would: on and beside every half step,
    /// past both ends of the grid, and at random.
    #[test]
    fn grid_rounding_is_round_and_clamp() {
        let reference = |x: f32| x.round().clamp(0.0, 65535.0) as u16;
        let mut rng = Rng(42);
        let mut values = vec![-1.0, -0.5, -0.0, 0.0, 65535.0, 65535.49, 65535.5, 65536.0, 1e9, f32::INFINITY];
        for k in 0..131_072u32 {
            let half = k as f32 * 0.5;
            values.extend([half, half.next_up(), half.next_down()]);
        }
        values.extend((0..100_000).map(|_| rng.range(-10.0, 65545.0)));
        for x in values {
            assert_eq!(round_step(x), reference(x), "{x}");
        }
    }

    /// The leaf ranges' fix-up steps find the largest grid step at or below the
    /// start whose value is at most `min`, and the smallest at or above it whose
    /// top is at least `max`, as a scan of every step finds them.
    #[test]
    fn leaf_range_steps_are_the_nearest_containing_ones() {
        let mut rng = Rng(41);
        let last = u16::MAX as u32;
        for round in 0..2_000 {
            let (o, q) = (rng.range(-1e4, 1e4), rng.range(1e-5, 0.5));
            let value = |k: u32| o + k as f32 * q;
            let (min, max) = (value(rng.below(60_000) as u32) + rng.range(-q, q), value(rng.below(60_000) as u32));
            let start = rng.below(65_536) as u32;
            let down = (0..=start).rev().find(|&k| value(k) <= min).unwrap_or(0);
            assert_eq!(step_down(o, q, start, min), down, "round {round}");
            let up = (start..=last).find(|&k| top(o, k, last, q) >= max).unwrap_or(last);
            assert_eq!(step_up(o, q, start, last, max), up, "round {round}");
        }
    }
}
