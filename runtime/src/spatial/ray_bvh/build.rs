//! The build of [`RayBvh`]: binned surface-area splits, four children a node.
//!
//! A node takes its triangles and splits them in two by the binned surface area
//! heuristic (16 bins on the triangles' centroids, every axis), then splits the
//! larger of the parts that are still too big for a leaf, until it has four parts or
//! every part fits a leaf ([`LEAF_MAX`] triangles). Parts that fit become leaves, the
//! others nodes of their own, built depth first so a node's first child follows it.
//! Below [`MEDIAN_DEPTH`] levels the splits are at the median instead, which bounds
//! the depth (and the walk's stack) on any input. Everything is serial and uses no
//! randomness: one mesh, one tree.

use glam::Vec3A;

use super::{LeafBlock, Node, RayBvh, EMPTY, LEAF, LEAF_MAX, MAX_TRIANGLES};
use crate::jobs::Jobs;
use crate::math::Aabb;
use crate::spatial::{KdError, TriMesh};

/// Parts larger than this build their children as jobs (in a parallel build).
const PARALLEL_ITEMS: usize = 16_384;
/// Bins per axis of the surface-area split.
const BINS: usize = 16;
/// Levels after which splits are at the median: each then at least halves its
/// part, so 2^28 triangles in leaves of one or more are at most `MEDIAN_DEPTH + 28`
/// levels deep.
pub(super) const MEDIAN_DEPTH: usize = 24;

/// A triangle while the tree is built: its padded box, its centroid and its index.
#[derive(Clone, Copy)]
struct Item {
    lo: Vec3A,
    hi: Vec3A,
    centroid: Vec3A,
    triangle: u32,
}

fn area(lo: Vec3A, hi: Vec3A) -> f32 {
    let d = (hi - lo).max(Vec3A::ZERO);
    d.x * d.y + d.y * d.z + d.z * d.x
}

fn bounds(items: &[Item]) -> Bounds {
    items.iter().fold(NO_BOX, |(lo, hi), it| (lo.min(it.lo), hi.max(it.hi)))
}

struct Builder<'a> {
    mesh: &'a TriMesh,
    nodes: Vec<Node>,
    leaves: Vec<LeafBlock>,
    source: Vec<u32>,
    depth: usize,
    /// Where parts of more than [`PARALLEL_ITEMS`] triangles are built as jobs.
    jobs: Option<Jobs<'a>>,
}

impl<'a> Builder<'a> {
    fn new(mesh: &'a TriMesh, jobs: Option<Jobs<'a>>, triangles: usize) -> Builder<'a> {
        Builder {
            mesh,
            nodes: Vec::with_capacity(triangles / 6 + 1),
            leaves: Vec::with_capacity(triangles / 3 + 1),
            source: Vec::with_capacity(triangles * 4 / 3 + 4),
            depth: 0,
            jobs,
        }
    }
}

pub(super) fn build(mesh: &TriMesh, jobs: Option<Jobs>) -> Result<RayBvh, KdError> {
    if mesh.triangles.len() > MAX_TRIANGLES {
        return Err(KdError::TooManyTriangles);
    }
    if mesh.vertices.iter().any(|v| !v.is_finite()) {
        return Err(KdError::NonFiniteVertex);
    }
    let count = mesh.vertices.len();
    if mesh.triangles.iter().flatten().any(|&i| i as usize >= count) {
        return Err(KdError::IndexOutOfRange);
    }
    // Boxes are padded so that a hit the triangle test accepts by a rounding
    // margin lies inside its box: a few ulps of the mesh's largest coordinate.
    let largest = mesh.vertices.iter().fold(0.0f32, |m, v| m.max(v.abs().max_element()));
    let pad = Vec3A::splat((largest * (1.0 / 262_144.0)).max(f32::MIN_POSITIVE));
    let mut items: Vec<Item> = mesh
        .triangles
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let [a, b, c] = t.map(|v| Vec3A::from(mesh.vertices[v as usize]));
            let (lo, hi) = (a.min(b).min(c) - pad, a.max(b).max(c) + pad);
            Item { lo, hi, centroid: (lo + hi) * 0.5, triangle: i as u32 }
        })
        .collect();
    let mut b = Builder::new(mesh, jobs, mesh.triangles.len());
    let bounds = if items.is_empty() {
        Aabb::default()
    } else {
        let (lo, hi) = self::bounds(&items);
        b.node(&mut items, (lo, hi), 1);
        Aabb { min: lo.into(), max: hi.into() }
    };
    // Where each mesh triangle went: its leaf lane.
    let mut slot = vec![EMPTY; mesh.triangles.len()];
    for (k, &t) in b.source.iter().enumerate() {
        if t != EMPTY {
            slot[t as usize] = k as u32;
        }
    }
    Ok(RayBvh {
        nodes: b.nodes,
        leaves: b.leaves,
        source: b.source,
        slot,
        triangle_count: mesh.triangles.len(),
        bounds,
        depth: b.depth,
    })
}

impl Builder<'_> {
    /// Builds the node over `items` (not empty, with bounds `(lo, hi)`) at `depth`
    /// and returns its index.
    fn node(&mut self, items: &mut [Item], (lo, hi): (Vec3A, Vec3A), depth: usize) -> u32 {
        self.depth = self.depth.max(depth);
        let index = self.nodes.len();
        self.nodes.push(Node::EMPTY);
        // Up to four parts: ranges of `items` and their bounds.
        let mut parts = [(0usize, items.len(), lo, hi); 4];
        let mut count = 1;
        while count < 4 {
            let size = |p: &(usize, usize, Vec3A, Vec3A)| area(p.2, p.3) * (p.1 - p.0) as f32;
            let widest = (0..count)
                .filter(|&p| parts[p].1 - parts[p].0 > LEAF_MAX)
                .max_by(|&p, &q| size(&parts[p]).total_cmp(&size(&parts[q])).then(q.cmp(&p)));
            let Some(p) = widest else { break };
            let (start, end, _, _) = parts[p];
            let (mid, left, right) = split(&mut items[start..end], depth >= MEDIAN_DEPTH);
            parts[p] = (start, start + mid, left.0, left.1);
            parts[count] = (start + mid, end, right.0, right.1);
            count += 1;
        }
        let mut children = [EMPTY; 4];
        let boxes: [Bounds; 4] = std::array::from_fn(|p| (parts[p].2, parts[p].3));
        match self.jobs {
            Some(jobs) if items.len() > PARALLEL_ITEMS => {
                // Each part into a builder of its own, as jobs; then appended in part
                // order with their references moved past what is already built: the
                // serial build's layout, bit for bit.
                let mut rest = &mut *items;
                let mut work: [(Option<&mut [Item]>, Builder, u32); 4] =
                    std::array::from_fn(|_| (None, Builder::new(self.mesh, Some(jobs), 0), EMPTY));
                // Parts are ranges of `items` in any order: carved in item order.
                let mut by_start = [0, 1, 2, 3];
                by_start[..count].sort_unstable_by_key(|&p| parts[p].0);
                for &p in &by_start[..count] {
                    let (part, tail) = std::mem::take(&mut rest).split_at_mut(parts[p].1 - parts[p].0);
                    (work[p].0, rest) = (Some(part), tail);
                }
                jobs.for_each_mut(&mut work[..count], |p, (part, builder, child), _| {
                    let part = part.take().expect("one build per part");
                    *child = builder.part(part, boxes[p], depth);
                });
                for (p, (_, builder, child)) in work.into_iter().take(count).enumerate() {
                    children[p] = self.append(builder, child);
                }
            }
            _ => {
                for (p, &(start, end, _, _)) in parts[..count].iter().enumerate() {
                    children[p] = self.part(&mut items[start..end], boxes[p], depth);
                }
            }
        }
        self.nodes[index] = Node::new(&boxes[..count], children);
        index as u32
    }

    /// The child of a node at `depth` over `items` with bounds `bounds`: a leaf or a
    /// node of its own.
    fn part(&mut self, items: &mut [Item], bounds: Bounds, depth: usize) -> u32 {
        if items.len() <= LEAF_MAX {
            self.leaf(items)
        } else {
            self.node(items, bounds, depth + 1)
        }
    }

    /// Appends what `other` built (a part whose reference is `child` there); the
    /// reference here.
    fn append(&mut self, other: Builder, child: u32) -> u32 {
        let (node_base, leaf_base) = (self.nodes.len() as u32, self.leaves.len() as u32);
        let moved = |c: u32| match c {
            EMPTY => EMPTY,
            c if c & LEAF != 0 => c + (leaf_base << 3),
            c => c + node_base,
        };
        self.nodes.extend(other.nodes.into_iter().map(|mut n| {
            n.children = n.children.map(moved);
            n
        }));
        self.leaves.extend(other.leaves);
        self.source.extend(other.source);
        self.depth = self.depth.max(other.depth);
        moved(child)
    }

    /// Appends a leaf of `items`' triangles; its child reference.
    fn leaf(&mut self, items: &[Item]) -> u32 {
        let index = self.leaves.len() as u32;
        let mut block = LeafBlock::default();
        for lane in 0..4 {
            match items.get(lane) {
                Some(it) => {
                    let tri = self.mesh.triangles[it.triangle as usize].map(|v| self.mesh.vertices[v as usize]);
                    for (k, p) in tri.iter().enumerate() {
                        for axis in 0..3 {
                            block.rows[3 * k + axis][lane] = p[axis];
                        }
                    }
                    self.source.push(it.triangle);
                }
                None => self.source.push(EMPTY),
            }
        }
        self.leaves.push(block);
        LEAF | index << 3 | (items.len() as u32 - 1)
    }
}

/// A box as its minimum and maximum.
type Bounds = (Vec3A, Vec3A);

/// An empty box, to grow.
const NO_BOX: Bounds = (Vec3A::INFINITY, Vec3A::NEG_INFINITY);

/// Splits `items` (more than one) in two non-empty parts in place: the first
/// part's length and both parts' bounds. By the binned surface-area heuristic, or
/// at the median of the widest centroid axis when `median` is set or no bin boundary
/// separates the centroids.
fn split(items: &mut [Item], median: bool) -> (usize, Bounds, Bounds) {
    let (clo, chi) = items.iter().fold(NO_BOX, |(lo, hi), it| (lo.min(it.centroid), hi.max(it.centroid)));
    let extent = chi - clo;
    if !median && extent.max_element() > 0.0 {
        // Every axis binned in one pass (an axis without extent puts all in bin 0).
        let scale = Vec3A::select(extent.cmpgt(Vec3A::ZERO), Vec3A::splat(BINS as f32) / extent, Vec3A::ZERO);
        let bin = |it: &Item, axis: usize| (((it.centroid[axis] - clo[axis]) * scale[axis]) as usize).min(BINS - 1);
        let mut counts = [[0u32; BINS]; 3];
        let mut boxes = [[NO_BOX; BINS]; 3];
        for it in items.iter() {
            for axis in 0..3 {
                let b = bin(it, axis);
                counts[axis][b] += 1;
                boxes[axis][b] = (boxes[axis][b].0.min(it.lo), boxes[axis][b].1.max(it.hi));
            }
        }
        // cost, axis, bins on the left, left box, right box
        let mut best: Option<(f32, usize, usize, Bounds, Bounds)> = None;
        for axis in 0..3 {
            if extent[axis] <= 0.0 {
                continue;
            }
            let (counts, boxes) = (&counts[axis], &boxes[axis]);
            // Boxes and counts of every suffix of bins.
            let mut right = [(NO_BOX, 0u32); BINS];
            let (mut r, mut n) = (NO_BOX, 0);
            for b in (1..BINS).rev() {
                (r, n) = ((r.0.min(boxes[b].0), r.1.max(boxes[b].1)), n + counts[b]);
                right[b] = (r, n);
            }
            let (mut l, mut n) = (NO_BOX, 0);
            for b in 0..BINS - 1 {
                (l, n) = ((l.0.min(boxes[b].0), l.1.max(boxes[b].1)), n + counts[b]);
                let (r, right_n) = right[b + 1];
                if n == 0 || right_n == 0 {
                    continue;
                }
                let cost = area(l.0, l.1) * n as f32 + area(r.0, r.1) * right_n as f32;
                if best.is_none_or(|c| cost < c.0) {
                    best = Some((cost, axis, b + 1, l, r));
                }
            }
        }
        if let Some((_, axis, left_bins, left, right)) = best {
            // The same input, the same order.
            let mut mid = 0;
            for i in 0..items.len() {
                if bin(&items[i], axis) < left_bins {
                    items.swap(i, mid);
                    mid += 1;
                }
            }
            return (mid, left, right);
        }
    }
    let axis = extent.max_position();
    let mid = items.len() / 2;
    items.select_nth_unstable_by(mid, |a, b| {
        a.centroid[axis].total_cmp(&b.centroid[axis]).then(a.triangle.cmp(&b.triangle))
    });
    (mid, bounds(&items[..mid]), bounds(&items[mid..]))
}

impl Node {
    /// A node over the child boxes `boxes` (one to four) with references `children`:
    /// the boxes quantised to 8 bits per bound on their union, rounded outwards.
    fn new(boxes: &[(Vec3A, Vec3A)], children: [u32; 4]) -> Node {
        let (lo, hi) = boxes
            .iter()
            .fold((Vec3A::splat(f32::INFINITY), Vec3A::splat(f32::NEG_INFINITY)), |(l, h), b| (l.min(b.0), h.max(b.1)));
        let mut node = Node { origin: lo.to_array(), scale: [0.0; 3], lo: [[255; 4]; 3], hi: [[0; 4]; 3], children };
        for axis in 0..3 {
            let origin = lo[axis];
            let mut scale = (hi[axis] - origin) / 255.0;
            while 255.0 * scale + origin < hi[axis] {
                scale = f32::from_bits(scale.to_bits() + 1);
            }
            node.scale[axis] = scale;
            // What the walk computes for a quantised bound.
            let decode = |q: u8| q as f32 * scale + origin;
            let quantise = |x: f32| if scale > 0.0 { ((x - origin) / scale).clamp(0.0, 255.0) } else { 0.0 };
            for (c, b) in boxes.iter().enumerate() {
                let mut q = quantise(b.0[axis]).floor() as u8;
                while q > 0 && decode(q) > b.0[axis] {
                    q -= 1;
                }
                node.lo[axis][c] = q;
                let mut q = quantise(b.1[axis]).ceil() as u8;
                while q < 255 && decode(q) < b.1[axis] {
                    q += 1;
                }
                node.hi[axis][c] = q;
            }
        }
        node
    }
}
