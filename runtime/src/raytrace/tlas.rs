//! The top-level acceleration structure on the CPU: instance boxes, Morton keys,
//! the sorted keys' hierarchy (Karras 2012) and [`CpuTlas`], the reference that the
//! GPU's linear BVH build (`gpu::TlasBuilder`) is tested against, bit for bit in its
//! integer logic.

use super::blas::BvhNode;
use super::layout::{GpuInstance, TlasNode, TLAS_LEAF};
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
