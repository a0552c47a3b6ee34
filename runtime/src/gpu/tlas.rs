//! Top-level acceleration structure, rebuilt every frame on the GPU as a linear BVH
//! (Karras 2012, "Maximizing parallelism in the construction of BVHs"):
//!
//! ```text
//!  tlas_boxes      one invocation per instance: world box of its BLAS root box under
//!                  the instance transform -> leaf slot; centroid -> scene bounds
//!                  (atomicMin on order-preserving uint encodings)
//!  tlas_morton     30-bit Morton code of each centroid in the scene bounds; key =
//!                  (code, instance index), padded to a power of two with (~0, ~0)
//!  tlas_sort       bitonic sort of the keys, one dispatch per merge step; the keys
//!                  are unique, so the order is the same on every device
//!  tlas_hierarchy  one invocation per internal node: its key range and split by
//!                  binary search on common prefixes -> children and parent links
//!  tlas_refit      one invocation per leaf: copy the instance box, then climb with
//!                  per-node atomic counters (as blas_refit does)
//! ```
//!
//! Nodes: `n - 1` internal nodes first (the root is node 0), then `n` leaves; leaf
//! `n - 1 + i` holds the instance at sorted position `i`. With one instance the
//! root is that leaf. Duplicate Morton codes are split by instance index (the
//! key's second half), so the depth stays bounded by 30 + 32 levels and traversal
//! stacks of [`TLAS_STACK`] entries suffice.
//!
//! Every function here has a CPU twin used as the reference in tests: the same
//! integer logic (bit-exact), the same float operations (within a few ulps, as GLSL
//! does not promise correctly rounded division).

use super::blas::BvhNode;
use super::buffer::GpuBuffer;
use super::error::GpuError;
use super::kernel::Kernel;
use super::layout::{GpuInstance, TlasBoxesPush, TlasBuildPush, TlasMortonPush, TlasNode, TlasSortPush, TLAS_LEAF};
use super::queue::Gpu;
use super::recorder::{Recorder, Use};
use super::scene::GpuScene;
use super::shaders;
use crate::math::Vec3;

/// Traversal stack entries for the TLAS (and for each BLAS: `blas::MAX_DEPTH`).
pub const TLAS_STACK: u32 = 64;
/// Relative padding of instance boxes, so that rounding in the transform never
/// makes a box smaller than the transformed geometry.
pub const BOX_PADDING: f32 = 1e-6;

/// `p` transformed by three affine rows.
pub(crate) fn transform_point(rows: &[[f32; 4]; 3], p: Vec3) -> Vec3 {
    let row = |r: &[f32; 4]| r[0] * p.x + r[1] * p.y + r[2] * p.z + r[3];
    Vec3::new(row(&rows[0]), row(&rows[1]), row(&rows[2]))
}

/// `d` transformed by the linear part of three affine rows.
pub(crate) fn transform_vector(rows: &[[f32; 4]; 3], d: Vec3) -> Vec3 {
    let row = |r: &[f32; 4]| r[0] * d.x + r[1] * d.y + r[2] * d.z;
    Vec3::new(row(&rows[0]), row(&rows[1]), row(&rows[2]))
}

/// World box of an instance: the BLAS root box's centre transformed, its half
/// extent through |M|, padded by `BOX_PADDING`. Mirrors `tlas_boxes.comp`.
pub fn instance_box(instance: &GpuInstance, root: &BvhNode) -> TlasNode {
    let (lo, hi) = (Vec3::from(root.lo), Vec3::from(root.hi));
    let center = 0.5 * (lo + hi);
    let half = 0.5 * (hi - lo);
    let m = &instance.object_to_world;
    let c = transform_point(m, center);
    let abs_row = |r: &[f32; 4]| r[0].abs() * half.x + r[1].abs() * half.y + r[2].abs() * half.z;
    let e = Vec3::new(abs_row(&m[0]), abs_row(&m[1]), abs_row(&m[2]));
    let pad = BOX_PADDING * (c.abs() + e);
    TlasNode { lo: (c - e - pad).to_array(), left: 0, hi: (c + e + pad).to_array(), right: TLAS_LEAF }
}

/// Centre of a node box.
fn centroid(node: &TlasNode) -> Vec3 {
    0.5 * (Vec3::from(node.lo) + Vec3::from(node.hi))
}

/// Spreads the low 10 bits of `x` to every third bit.
fn spread_bits(mut x: u32) -> u32 {
    x &= 0x3ff;
    x = (x | (x << 16)) & 0x030000ff;
    x = (x | (x << 8)) & 0x0300f00f;
    x = (x | (x << 4)) & 0x030c30c3;
    x = (x | (x << 2)) & 0x09249249;
    x
}

/// 30-bit Morton code of `c` in the box `[lo, hi]`. Mirrors `tlas_morton.comp`.
pub fn morton(c: Vec3, lo: Vec3, hi: Vec3) -> u32 {
    let scale = Vec3::splat(1024.0) / (hi - lo).max(Vec3::splat(1e-20));
    let q = ((c - lo) * scale).max(Vec3::ZERO).min(Vec3::splat(1023.0));
    (spread_bits(q.x as u32) << 2) | (spread_bits(q.y as u32) << 1) | spread_bits(q.z as u32)
}

/// Sorted `(Morton code, instance)` keys of instance boxes (CPU reference of the
/// boxes, morton and sort passes).
pub fn sorted_keys(boxes: &[TlasNode]) -> Vec<[u32; 2]> {
    let (mut lo, mut hi) = (Vec3::splat(f32::INFINITY), Vec3::splat(f32::NEG_INFINITY));
    for b in boxes {
        let c = centroid(b);
        lo = lo.min(c);
        hi = hi.max(c);
    }
    let mut keys: Vec<[u32; 2]> =
        boxes.iter().enumerate().map(|(i, b)| [morton(centroid(b), lo, hi), i as u32]).collect();
    keys.sort_unstable();
    keys
}

/// Length of the common prefix of keys `i` and `j` (code, then index), or -1 when
/// `j` is out of range. Mirrors `delta()` in `tlas_hierarchy.comp`.
fn delta(keys: &[[u32; 2]], i: i64, j: i64) -> i64 {
    if j < 0 || j >= keys.len() as i64 {
        return -1;
    }
    let (a, b) = (keys[i as usize], keys[j as usize]);
    if a[0] == b[0] {
        32 + i64::from((a[1] ^ b[1]).leading_zeros())
    } else {
        i64::from((a[0] ^ b[0]).leading_zeros())
    }
}

/// Children of internal node `i` (Karras 2012, figure 4). Leaves are numbered
/// `n - 1 + sorted position`. Mirrors `tlas_hierarchy.comp`.
pub fn internal_children(keys: &[[u32; 2]], i: u32) -> (u32, u32) {
    let n = keys.len() as i64;
    let i = i64::from(i);
    let d = if delta(keys, i, i + 1) > delta(keys, i, i - 1) { 1 } else { -1 };
    let delta_min = delta(keys, i, i - d);
    let mut l_max = 2;
    while delta(keys, i, i + l_max * d) > delta_min {
        l_max *= 2;
    }
    let mut l = 0;
    let mut t = l_max / 2;
    while t >= 1 {
        if delta(keys, i, i + (l + t) * d) > delta_min {
            l += t;
        }
        t /= 2;
    }
    let j = i + l * d;
    let delta_node = delta(keys, i, j);
    let mut s = 0;
    let mut divisor = 2;
    loop {
        let t = (l + divisor - 1) / divisor;
        if delta(keys, i, i + (s + t) * d) > delta_node {
            s += t;
        }
        if t <= 1 {
            break;
        }
        divisor *= 2;
    }
    let gamma = i + s * d + d.min(0);
    let left = if i.min(j) == gamma { n - 1 + gamma } else { gamma };
    let right = if i.max(j) == gamma + 1 { n - 1 + gamma + 1 } else { gamma + 1 };
    (left as u32, right as u32)
}

/// The CPU reference TLAS over the given instance boxes (instance order) and keys.
#[derive(Clone, Debug, PartialEq)]
pub struct CpuTlas {
    pub nodes: Vec<TlasNode>,
    pub parents: Vec<u32>,
}

impl CpuTlas {
    /// Hierarchy from sorted `keys`, boxes bottom-up from `boxes`.
    pub fn build(keys: &[[u32; 2]], boxes: &[TlasNode]) -> CpuTlas {
        let n = keys.len();
        if n == 0 {
            return CpuTlas { nodes: Vec::new(), parents: Vec::new() };
        }
        let mut nodes = vec![TlasNode::default(); 2 * n - 1];
        let mut parents = vec![super::blas::NO_PARENT; 2 * n - 1];
        for i in 0..n as u32 - 1 {
            let (left, right) = internal_children(keys, i);
            nodes[i as usize].left = left;
            nodes[i as usize].right = right;
            parents[left as usize] = i;
            parents[right as usize] = i;
        }
        for (i, key) in keys.iter().enumerate() {
            let instance = key[1];
            nodes[n - 1 + i] = TlasNode { left: instance, right: TLAS_LEAF, ..boxes[instance as usize] };
        }
        // Internal boxes in reverse post-order: children before parents.
        let mut order = Vec::with_capacity(n);
        let mut stack = if n > 1 { vec![0u32] } else { Vec::new() };
        while let Some(node) = stack.pop() {
            order.push(node);
            let TlasNode { left, right, .. } = nodes[node as usize];
            for child in [left, right] {
                if (child as usize) < n - 1 {
                    stack.push(child);
                }
            }
        }
        for &node in order.iter().rev() {
            let TlasNode { left, right, .. } = nodes[node as usize];
            let (l, r) = (nodes[left as usize], nodes[right as usize]);
            let node = &mut nodes[node as usize];
            node.lo = Vec3::from(l.lo).min(Vec3::from(r.lo)).to_array();
            node.hi = Vec3::from(l.hi).max(Vec3::from(r.hi)).to_array();
        }
        CpuTlas { nodes, parents }
    }

    /// Depth of the tree (a lone leaf has depth 1).
    pub fn depth(&self) -> u32 {
        let mut max = 0;
        let mut stack = if self.nodes.is_empty() { Vec::new() } else { vec![(0u32, 1u32)] };
        while let Some((node, depth)) = stack.pop() {
            max = max.max(depth);
            let TlasNode { left, right, .. } = self.nodes[node as usize];
            if right != TLAS_LEAF {
                stack.push((left, depth + 1));
                stack.push((right, depth + 1));
            }
        }
        max
    }
}

/// The TLAS build kernels, recorded as one pass.
pub struct TlasBuilder {
    boxes: Kernel,
    morton: Kernel,
    sort: Kernel,
    sort_local: Kernel,
    hierarchy: Kernel,
    refit: Kernel,
}

impl TlasBuilder {
    pub fn new(gpu: &Gpu) -> Result<TlasBuilder, GpuError> {
        Ok(TlasBuilder {
            boxes: gpu.kernel(&shaders::TLAS_BOXES)?,
            morton: gpu.kernel(&shaders::TLAS_MORTON)?,
            sort: gpu.kernel(&shaders::TLAS_SORT)?,
            sort_local: gpu.kernel(&shaders::TLAS_SORT_LOCAL)?,
            hierarchy: gpu.kernel(&shaders::TLAS_HIERARCHY)?,
            refit: gpu.kernel(&shaders::TLAS_REFIT)?,
        })
    }

    /// Records the bitonic sort of `padded` (a power of two) keys at `keys`. Steps
    /// inside a block of `B = 2 x 256` keys run in shared memory (`tlas_sort_local`):
    /// one dispatch sorts every block, then each stage `k > B` takes one global
    /// dispatch per step `j >= B` and one local dispatch for the steps below. The
    /// steps are those of the plain network, so the result is the same; for 2^17 keys
    /// that is 45 dispatches instead of 153.
    pub fn record_sort(&self, rec: &mut Recorder<'_>, keys: &GpuBuffer, padded: u32) -> Result<(), GpuError> {
        keys.check_range("sort keys", 0, 8 * u64::from(padded))?;
        let block = 2 * self.sort_local.local_size;
        let push = |j, k| TlasSortPush { keys: keys.address(), j, k, padded, _pad: 0 };
        let uses = [Use::write(keys)];
        rec.dispatch(&self.sort_local, &push(0, 0), [padded.div_ceil(block), 1, 1], &uses)?;
        let mut k = 2 * block;
        while k <= padded {
            let mut j = k / 2;
            while j >= block {
                rec.dispatch_threads(&self.sort, &push(j, k), padded, &uses)?;
                j /= 2;
            }
            rec.dispatch(&self.sort_local, &push(j, k), [padded / block, 1, 1], &uses)?;
            k *= 2;
        }
        Ok(())
    }

    /// Records the full rebuild over the instances already uploaded to `scene`.
    pub fn record(&self, rec: &mut Recorder<'_>, scene: &GpuScene) -> Result<(), GpuError> {
        let n = scene.instance_count;
        if n == 0 {
            return Ok(());
        }
        rec.fill(&scene.bounds, u32::MAX);
        rec.fill(&scene.counters, 0);
        let boxes = TlasBoxesPush {
            instances: scene.instances.address(),
            blas_refs: scene.blas_refs.address(),
            blas_nodes: scene.blas_nodes.address(),
            boxes: scene.leaf_boxes.address(),
            scene: scene.bounds.address(),
            count: n,
            _pad: 0,
        };
        let uses = [
            Use::read(&scene.instances),
            Use::read(&scene.blas_refs),
            Use::read(&scene.blas_nodes),
            Use::write(&scene.leaf_boxes),
            Use::write(&scene.bounds),
        ];
        rec.dispatch_threads(&self.boxes, &boxes, n, &uses)?;
        let morton = TlasMortonPush {
            boxes: scene.leaf_boxes.address(),
            scene: scene.bounds.address(),
            keys: scene.keys.address(),
            count: n,
            padded: scene.padded,
        };
        let uses = [Use::read(&scene.leaf_boxes), Use::read(&scene.bounds), Use::write(&scene.keys)];
        rec.dispatch_threads(&self.morton, &morton, scene.padded, &uses)?;
        self.record_sort(rec, &scene.keys, scene.padded)?;
        let build = TlasBuildPush {
            keys: scene.keys.address(),
            nodes: scene.tlas_nodes.address(),
            parents: scene.parents.address(),
            boxes: scene.leaf_boxes.address(),
            counters: scene.counters.address(),
            count: n,
            _pad: 0,
        };
        // Hierarchy and refit share one push block; the hierarchy is handed the
        // boxes and counters without touching them, so it declares them as reads.
        let uses = [
            Use::read(&scene.keys),
            Use::read(&scene.leaf_boxes),
            Use::read(&scene.counters),
            Use::write(&scene.tlas_nodes),
            Use::write(&scene.parents),
        ];
        rec.dispatch_threads(&self.hierarchy, &build, n.max(2) - 1, &uses)?;
        let uses = [
            Use::read(&scene.keys),
            Use::read(&scene.leaf_boxes),
            Use::read(&scene.parents),
            Use::write(&scene.tlas_nodes),
            Use::write(&scene.counters),
        ];
        rec.dispatch_threads(&self.refit, &build, n, &uses)
    }
}
