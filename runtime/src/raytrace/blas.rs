//! Bottom-level acceleration structure: a binary BVH over one triangle mesh, built
//! once on the CPU with binned SAH and laid out for GPU traversal and refit.
//!
//! ```text
//!  BvhNode, 32 bytes (GLSL `KilnBvhNode`, include/kiln_layout.glsl):
//!    lo: vec3  a: uint     internal: a = left child, right child = a + 1, b = 0
//!    hi: vec3  b: uint     leaf:     a = first triangle, b = count (1..=4)
//!
//!  nodes[0] is the root; children come in adjacent pairs, so one fetch of
//!  nodes[a], nodes[a + 1] reads both boxes of a parent.
//!  parents[i]  parent of node i (NO_PARENT for the root)     } what the GPU refit
//!  leaves[k]   node index of the k-th leaf                   } kernel climbs with
//!  triangles   [v0, v1, v2, primitive id]: reordered so each leaf's triangles are
//!              contiguous; the id is the caller's triangle index (reported in hits)
//! ```
//!
//! Build: binned SAH (16 bins on the centroid bounds, all three axes), a leaf when
//! four or fewer triangles cost no more than the best split. Below depth
//! [`SAH_DEPTH`] splits fall back to the object median, so the tree depth stays under
//! [`MAX_DEPTH`] and GPU traversal stacks have a fixed size. Refit keeps the topology
//! and recomputes boxes bottom-up: [`Blas::refit`] is the CPU reference the GPU
//! kernel (`blas_refit.rs`) is tested against.

use crate::math::{Aabb, Vec3};
use bytemuck::{Pod, Zeroable};
use std::fmt;

/// One BVH node; see the module docs for the encoding.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct BvhNode {
    pub lo: [f32; 3],
    pub a: u32,
    pub hi: [f32; 3],
    pub b: u32,
}
const _: () = assert!(std::mem::size_of::<BvhNode>() == 32);

impl BvhNode {
    pub fn is_leaf(&self) -> bool {
        self.b != 0
    }

    pub fn aabb(&self) -> Aabb {
        Aabb::new(Vec3::from(self.lo), Vec3::from(self.hi))
    }

    fn set_aabb(&mut self, aabb: &Aabb) {
        self.lo = aabb.min.to_array();
        self.hi = aabb.max.to_array();
    }
}

/// The parent of the root.
pub const NO_PARENT: u32 = u32::MAX;
/// Most triangles per leaf.
pub const MAX_LEAF_TRIANGLES: usize = 4;
/// Depth below which splits use SAH; deeper ones split at the object median.
pub const SAH_DEPTH: u32 = 32;
/// Upper bound of any BLAS depth (root = depth 1): traversal stacks hold this many.
pub const MAX_DEPTH: u32 = 64;
/// Most triangles in one BLAS (node indices stay below 2^31).
pub const MAX_TRIANGLES: usize = 1 << 28;
const BINS: usize = 16;

/// Why a mesh was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BlasError {
    /// No triangles.
    Empty,
    /// More than `MAX_TRIANGLES` (2^28) triangles.
    TooLarge(usize),
    /// Triangle `triangle` names vertex `index`, but there are only `vertices`.
    IndexOutOfRange { triangle: usize, index: u32, vertices: usize },
    /// Vertex `vertex` has a NaN or infinite coordinate.
    NonFinite { vertex: usize },
}

impl fmt::Display for BlasError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BlasError::Empty => write!(f, "the mesh has no triangles"),
            BlasError::TooLarge(n) => write!(f, "{n} triangles exceed the limit of {MAX_TRIANGLES}"),
            BlasError::IndexOutOfRange { triangle, index, vertices } => {
                write!(f, "triangle {triangle} uses vertex {index}, but the mesh has {vertices} vertices")
            }
            BlasError::NonFinite { vertex } => write!(f, "vertex {vertex} has a NaN or infinite coordinate"),
        }
    }
}

impl std::error::Error for BlasError {}

/// A built BLAS. See the module docs for the layout.
#[derive(Clone, Debug)]
pub struct Blas {
    pub nodes: Vec<BvhNode>,
    pub parents: Vec<u32>,
    pub leaves: Vec<u32>,
    pub triangles: Vec<[u32; 4]>,
    pub vertex_count: usize,
    pub depth: u32,
}

/// Checks a mesh: non-empty, indices in range, finite positions.
pub fn validate_mesh(positions: &[[f32; 3]], triangles: &[[u32; 3]]) -> Result<(), BlasError> {
    if triangles.is_empty() {
        return Err(BlasError::Empty);
    }
    if triangles.len() > MAX_TRIANGLES {
        return Err(BlasError::TooLarge(triangles.len()));
    }
    if let Some(vertex) = positions.iter().position(|p| !p.iter().all(|c| c.is_finite())) {
        return Err(BlasError::NonFinite { vertex });
    }
    for (triangle, tri) in triangles.iter().enumerate() {
        if let Some(&index) = tri.iter().find(|&&i| i as usize >= positions.len()) {
            return Err(BlasError::IndexOutOfRange { triangle, index, vertices: positions.len() });
        }
    }
    Ok(())
}

fn triangle_box(positions: &[[f32; 3]], tri: &[u32; 3]) -> Aabb {
    let [a, b, c] = tri.map(|i| Vec3::from(positions[i as usize]));
    Aabb::new(a.min(b).min(c), a.max(b).max(c))
}

struct Bin {
    bounds: Aabb,
    count: u32,
}

/// A node waiting to be split: its index, its range of `order`, its depth.
struct Task {
    node: u32,
    start: usize,
    end: usize,
    depth: u32,
}

impl Blas {
    /// Builds the BVH over `triangles` (indices into `positions`).
    pub fn build(positions: &[[f32; 3]], triangles: &[[u32; 3]]) -> Result<Blas, BlasError> {
        validate_mesh(positions, triangles)?;
        let boxes: Vec<Aabb> = triangles.iter().map(|t| triangle_box(positions, t)).collect();
        let centroids: Vec<Vec3> = boxes.iter().map(Aabb::center).collect();
        let mut order: Vec<u32> = (0..triangles.len() as u32).collect();
        let mut nodes = vec![BvhNode::default()];
        let mut parents = vec![NO_PARENT];
        let mut depth = 1;
        let mut stack = vec![Task { node: 0, start: 0, end: triangles.len(), depth: 1 }];
        while let Some(task) = stack.pop() {
            depth = depth.max(task.depth);
            let range = &mut order[task.start..task.end];
            let bounds = range.iter().fold(Aabb::EMPTY, |acc, &t| acc.union(&boxes[t as usize]));
            nodes[task.node as usize].set_aabb(&bounds);
            let split = choose_split(range, &boxes, &centroids, &bounds, task.depth);
            let Some(mid) = split else {
                nodes[task.node as usize].a = task.start as u32;
                nodes[task.node as usize].b = range.len() as u32;
                continue;
            };
            let left = nodes.len() as u32;
            nodes.push(BvhNode::default());
            nodes.push(BvhNode::default());
            parents.push(task.node);
            parents.push(task.node);
            nodes[task.node as usize].a = left;
            nodes[task.node as usize].b = 0;
            let mid = task.start + mid;
            // Right first, so the left subtree is popped (and numbered) first.
            stack.push(Task { node: left + 1, start: mid, end: task.end, depth: task.depth + 1 });
            stack.push(Task { node: left, start: task.start, end: mid, depth: task.depth + 1 });
        }
        let leaves = (0..nodes.len() as u32).filter(|&i| nodes[i as usize].is_leaf()).collect();
        let reordered = order
            .iter()
            .map(|&t| {
                let [a, b, c] = triangles[t as usize];
                [a, b, c, t]
            })
            .collect();
        Ok(Blas { nodes, parents, leaves, triangles: reordered, vertex_count: positions.len(), depth })
    }

    /// The root box.
    pub fn bounds(&self) -> Aabb {
        self.nodes[0].aabb()
    }

    pub fn triangle_count(&self) -> usize {
        self.triangles.len()
    }

    /// Recomputes every box for new vertex positions, topology unchanged: leaves from
    /// their triangles, internal nodes as the union of their two children. The same
    /// min/max operations as the GPU kernel, so the results are bit-identical.
    pub fn refit(&mut self, positions: &[[f32; 3]]) -> Result<(), BlasError> {
        if positions.len() != self.vertex_count {
            return Err(BlasError::IndexOutOfRange {
                triangle: 0,
                index: self.vertex_count as u32,
                vertices: positions.len(),
            });
        }
        if let Some(vertex) = positions.iter().position(|p| !p.iter().all(|c| c.is_finite())) {
            return Err(BlasError::NonFinite { vertex });
        }
        // Children always have larger indices than their parent: walk backwards.
        for i in (0..self.nodes.len()).rev() {
            let node = self.nodes[i];
            let aabb = if node.is_leaf() {
                leaf_box(positions, &self.triangles[node.a as usize..(node.a + node.b) as usize])
            } else {
                let (l, r) = (self.nodes[node.a as usize], self.nodes[node.a as usize + 1]);
                Aabb::new(Vec3::from(l.lo).min(Vec3::from(r.lo)), Vec3::from(l.hi).max(Vec3::from(r.hi)))
            };
            self.nodes[i].set_aabb(&aabb);
        }
        Ok(())
    }

    /// Checks the structure: every triangle in exactly one leaf, parent links, child
    /// boxes inside their parents, leaf boxes containing their triangles, depth bound.
    pub fn validate(&self, positions: &[[f32; 3]]) -> Result<(), String> {
        let mut seen = vec![false; self.triangles.len()];
        let mut stack = vec![(0u32, 1u32)];
        let mut max_depth = 0;
        while let Some((index, depth)) = stack.pop() {
            max_depth = max_depth.max(depth);
            let node = &self.nodes[index as usize];
            if node.is_leaf() {
                if node.b as usize > MAX_LEAF_TRIANGLES {
                    return Err(format!("leaf {index} holds {} triangles", node.b));
                }
                for t in node.a..node.a + node.b {
                    let slot = seen.get_mut(t as usize).ok_or(format!("leaf {index} names triangle {t}"))?;
                    if std::mem::replace(slot, true) {
                        return Err(format!("triangle {t} is in two leaves"));
                    }
                    let [a, b, c, _] = self.triangles[t as usize];
                    if !node.aabb().contains(&triangle_box(positions, &[a, b, c])) {
                        return Err(format!("leaf {index} does not contain triangle {t}"));
                    }
                }
                continue;
            }
            for child in [node.a, node.a + 1] {
                if self.parents.get(child as usize) != Some(&index) {
                    return Err(format!("node {child} does not name {index} as its parent"));
                }
                if !node.aabb().contains(&self.nodes[child as usize].aabb()) {
                    return Err(format!("node {child} sticks out of its parent {index}"));
                }
                stack.push((child, depth + 1));
            }
        }
        if let Some(t) = seen.iter().position(|s| !s) {
            return Err(format!("triangle {t} is in no leaf"));
        }
        if max_depth != self.depth || self.depth > MAX_DEPTH {
            return Err(format!("depth {max_depth}, recorded {}, limit {MAX_DEPTH}", self.depth));
        }
        let leaves: Vec<u32> = (0..self.nodes.len() as u32).filter(|&i| self.nodes[i as usize].is_leaf()).collect();
        if leaves != self.leaves {
            return Err("the leaf list does not match the leaves".into());
        }
        Ok(())
    }

    /// Surface-area cost of the tree relative to its root (sum of node areas over
    /// the root area): a quality figure for tests and benches.
    pub fn sah_ratio(&self) -> f32 {
        let root = self.nodes[0].aabb().area().max(f32::MIN_POSITIVE);
        self.nodes.iter().map(|n| n.aabb().area()).sum::<f32>() / root
    }
}

/// The box of a leaf's triangles, in the kernel's order (vertex by vertex).
pub(crate) fn leaf_box(positions: &[[f32; 3]], triangles: &[[u32; 4]]) -> Aabb {
    let mut lo = Vec3::splat(f32::INFINITY);
    let mut hi = Vec3::splat(f32::NEG_INFINITY);
    for tri in triangles {
        for &v in &tri[..3] {
            let p = Vec3::from(positions[v as usize]);
            lo = lo.min(p);
            hi = hi.max(p);
        }
    }
    Aabb::new(lo, hi)
}

/// Picks where to split `range` (partitioning it in place), or `None` for a leaf.
fn choose_split(range: &mut [u32], boxes: &[Aabb], centroids: &[Vec3], bounds: &Aabb, depth: u32) -> Option<usize> {
    let n = range.len();
    if n == 1 {
        return None;
    }
    let centroid_bounds =
        range.iter().fold(Aabb::EMPTY, |acc, &t| acc.union(&Aabb::new(centroids[t as usize], centroids[t as usize])));
    let extent = centroid_bounds.extents();
    if depth >= SAH_DEPTH || extent.max_element() <= 0.0 {
        if n <= MAX_LEAF_TRIANGLES {
            return None;
        }
        return Some(median_split(range, centroids, centroid_bounds.longest_axis()));
    }
    let mut best: Option<(f32, usize, usize)> = None; // (cost, axis, bins left of the plane)
    for axis in 0..3 {
        if extent[axis] <= 0.0 {
            continue;
        }
        let scale = BINS as f32 / extent[axis];
        let mut bins: [Bin; BINS] = std::array::from_fn(|_| Bin { bounds: Aabb::EMPTY, count: 0 });
        for &t in range.iter() {
            let b = bin_of(centroids[t as usize][axis], centroid_bounds.min[axis], scale);
            bins[b].bounds = bins[b].bounds.union(&boxes[t as usize]);
            bins[b].count += 1;
        }
        // Sweep from the right to get the right-hand costs, then from the left.
        let mut right_cost = [0.0f32; BINS];
        let (mut acc, mut count) = (Aabb::EMPTY, 0u32);
        for i in (1..BINS).rev() {
            acc = acc.union(&bins[i].bounds);
            count += bins[i].count;
            right_cost[i] = acc.area() * count as f32;
        }
        let (mut acc, mut count) = (Aabb::EMPTY, 0u32);
        for split in 1..BINS {
            acc = acc.union(&bins[split - 1].bounds);
            count += bins[split - 1].count;
            if count == 0 || count as usize == n {
                continue;
            }
            let cost = acc.area() * count as f32 + right_cost[split];
            if best.is_none_or(|(c, _, _)| cost < c) {
                best = Some((cost, axis, split));
            }
        }
    }
    let leaf_cost = bounds.area() * n as f32;
    match best {
        Some((cost, _, _)) if n <= MAX_LEAF_TRIANGLES && leaf_cost <= cost => None,
        Some((_, axis, split)) => {
            let scale = BINS as f32 / extent[axis];
            let min = centroid_bounds.min[axis];
            let mid = partition(range, |t| bin_of(centroids[t as usize][axis], min, scale) < split);
            Some(mid)
        }
        None if n <= MAX_LEAF_TRIANGLES => None,
        None => Some(median_split(range, centroids, centroid_bounds.longest_axis())),
    }
}

fn bin_of(value: f32, min: f32, scale: f32) -> usize {
    (((value - min) * scale) as usize).min(BINS - 1)
}

fn median_split(range: &mut [u32], centroids: &[Vec3], axis: usize) -> usize {
    let mid = range.len() / 2;
    range.select_nth_unstable_by(mid, |&x, &y| {
        centroids[x as usize][axis].total_cmp(&centroids[y as usize][axis]).then(x.cmp(&y))
    });
    mid
}

/// Stable-enough in-place partition: elements satisfying `left` first. Returns the
/// count of left elements.
fn partition(range: &mut [u32], left: impl Fn(u32) -> bool) -> usize {
    let mut mid = 0;
    for i in 0..range.len() {
        if left(range[i]) {
            range.swap(i, mid);
            mid += 1;
        }
    }
    mid
}
