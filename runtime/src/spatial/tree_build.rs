//! Binned-SAH (re)builds of a [`DynamicTree`]: the per-step partial rebuild of the
//! enlarged part (Box2D v3) and the one-shot full rebuild for trees that stopped
//! moving (static geometry).
//!
//! A rebuild collects *items* top-down: a leaf, or (partial rebuild) a subtree whose
//! root is not enlarged, which is kept whole. The internal nodes above the items are
//! freed and a new top is built over the items: split at the best of 16 bins of the
//! centroids along the longest axis by SAH cost, or at the median when every
//! centroid lands in one bin. The node pool and the scratch arrays are reused, so
//! steady-state rebuilds allocate nothing.

use glam::Vec3;

use super::tree::{is_leaf, slot, slot_node, DynamicTree, Node, MAX_HEIGHT, NODE_ENLARGED, NULL, ROOT_SLOT, SENTINEL};
use crate::math::Aabb;

const BINS: usize = 16;
/// The share of a tree's proxies (numerator, denominator) whose creation since the
/// last full rebuild makes [`DynamicTree::rebuild_if_bulk_loaded`] rebuild.
pub const BULK_SHARE: (u64, u64) = (1, 4);
/// The fewest created proxies that make it rebuild (small trees are cheap to walk).
pub const BULK_MIN: u32 = 64;

#[derive(Clone, Copy, Debug)]
struct Item {
    /// A copy of the item's box, so the binning passes read items sequentially.
    aabb: Aabb,
    center: Vec3,
    /// The item's child reference: a proxy (`LEAF | index`) or a kept subtree.
    node: u32,
    height: u8,
    /// The item's bin in the current split (scratch of `partition`).
    bin: u32,
}

#[derive(Clone, Debug, Default)]
pub(crate) struct BuildScratch {
    items: Vec<Item>,
    stack: Vec<u32>,
    tasks: Vec<Task>,
    internal: Vec<u32>,
}

/// Build `items[start..end]` into a subtree hung at slot `at`.
#[derive(Clone, Copy, Debug)]
struct Task {
    start: u32,
    end: u32,
    at: u32,
}

impl DynamicTree {
    /// Rebuilds the enlarged part of the tree (the Box2D v3 strategy's per-step
    /// work; with [`super::Balancing::Avl`] nothing is ever enlarged and this returns
    /// at once). Returns the number of items the new top was built over.
    pub fn rebuild(&mut self) -> usize {
        self.rebuild_with(false, false)
    }

    /// Rebuilds the whole tree with binned SAH: for trees that stopped moving.
    pub fn rebuild_full(&mut self) -> usize {
        self.inserted = 0;
        let items = self.rebuild_with(true, false);
        if self.height() > MAX_HEIGHT as u32 {
            // Only a pathological point set gets here; median splits bound the height.
            self.rebuild_with(true, true);
        }
        items
    }

    /// Rebuilds the whole tree (as [`DynamicTree::rebuild_full`]) when at least
    /// [`BULK_SHARE`] of its proxies, and [`BULK_MIN`] or more, were created since the
    /// last full rebuild; returns whether it did. A level loaded body by body is
    /// inserted one leaf at a time, each at the best place for the tree as it then
    /// was: on `world_queries`' 4,096 bodies that tree's summed node area is 2.8x a
    /// binned-SAH build's, and its box queries and rays cost 1.5x and 1.25x more.
    /// Moving proxies keep their quality by reinsertion; this catches the bulk loads
    /// (at most one rebuild per quarter of the tree created, so its cost per
    /// created proxy stays O(log n)).
    pub fn rebuild_if_bulk_loaded(&mut self) -> bool {
        let loaded = self.inserted >= BULK_MIN
            && self.inserted as u64 * BULK_SHARE.1 >= self.proxy_count() as u64 * BULK_SHARE.0;
        if loaded {
            self.rebuild_full();
        }
        loaded
    }

    fn rebuild_with(&mut self, full: bool, median: bool) -> usize {
        let root = self.root();
        if root == NULL || is_leaf(root) {
            return 0;
        }
        if !full && self.nodes[root as usize].flags & NODE_ENLARGED == 0 {
            return 0;
        }
        let mut scratch = std::mem::take(&mut self.build);
        scratch.items.clear();
        scratch.stack.clear();
        scratch.stack.push(ROOT_SLOT);
        while let Some(at) = scratch.stack.pop() {
            let child = self.child_at(at);
            if is_leaf(child) || (!full && self.nodes[child as usize].flags & NODE_ENLARGED == 0) {
                let aabb = *self.box_at(at);
                let height = self.height_at(at);
                scratch.items.push(Item { aabb, center: aabb.center(), node: child, height, bin: 0 });
            } else {
                scratch.stack.push(slot(child, 0));
                scratch.stack.push(slot(child, 1));
            }
            // The node holding `at` is not needed once both its slots are read.
            let holder = slot_node(at) as u32;
            if at & 1 == 0 && holder != SENTINEL {
                // Slot 1 of `holder` was pushed after slot 0, so it was read first.
                self.free_node(holder);
            }
        }
        let count = scratch.items.len();
        self.build_over(&mut scratch, median);
        self.build = scratch;
        count
    }

    /// Builds a subtree over `scratch.items` at the root's slot.
    fn build_over(&mut self, scratch: &mut BuildScratch, median: bool) {
        let BuildScratch { items, tasks, internal, .. } = scratch;
        tasks.clear();
        internal.clear();
        tasks.push(Task { start: 0, end: items.len() as u32, at: ROOT_SLOT });
        while let Some(task) = tasks.pop() {
            let (start, end) = (task.start as usize, task.end as usize);
            if end - start == 1 {
                let item = &items[start];
                self.place(task.at, item.node, item.aabb, item.height);
                continue;
            }
            let node = self.allocate_node();
            internal.push(node);
            // The box and height are set by the refit below.
            self.place(task.at, node, Aabb::EMPTY, 0);
            let mid = partition(&mut items[start..end], median) + start;
            tasks.push(Task { start: mid as u32, end: task.end, at: slot(node, 1) });
            tasks.push(Task { start: task.start, end: mid as u32, at: slot(node, 0) });
        }
        // Internal nodes were allocated parents first; refit children first.
        for &node in internal.iter().rev() {
            let n: &Node = &self.nodes[node as usize];
            let (aabb, height) = Self::fit(n);
            let at = n.parent;
            let holder = &mut self.nodes[slot_node(at)];
            holder.boxes[(at & 1) as usize] = aabb;
            holder.heights[(at & 1) as usize] = height;
        }
    }
}

/// Reorders `items` (at least two) into two non-empty halves and returns the size of
/// the first: the best binned-SAH split, or the median one.
fn partition(items: &mut [Item], median: bool) -> usize {
    let mut centroid_box = Aabb::EMPTY;
    for item in items.iter() {
        centroid_box.min = centroid_box.min.min(item.center);
        centroid_box.max = centroid_box.max.max(item.center);
    }
    let axis = centroid_box.longest_axis();
    let (lo, extent) = (centroid_box.min[axis], centroid_box.extents()[axis]);
    let half = items.len() / 2;
    if median || extent <= 0.0 {
        return median_split(items, axis, half);
    }

    let scale = BINS as f32 / extent;
    let bin_of = |c: Vec3| (((c[axis] - lo) * scale) as usize).min(BINS - 1);
    let mut counts = [0u32; BINS];
    let mut boxes = [Aabb::EMPTY; BINS];
    for item in items.iter_mut() {
        let bin = bin_of(item.center);
        item.bin = bin as u32;
        counts[bin] += 1;
        boxes[bin] = boxes[bin].union(&item.aabb);
    }
    // Sweep from the right for the right-hand areas, then from the left.
    let mut right_area = [0f32; BINS];
    let mut right_count = [0u32; BINS];
    let (mut acc_box, mut acc_count) = (Aabb::EMPTY, 0u32);
    for bin in (1..BINS).rev() {
        acc_box = acc_box.union(&boxes[bin]);
        acc_count += counts[bin];
        right_area[bin] = acc_box.area();
        right_count[bin] = acc_count;
    }
    let (mut best_cost, mut best_split) = (f32::INFINITY, 0usize);
    let (mut left_box, mut left_count) = (Aabb::EMPTY, 0u32);
    for split in 1..BINS {
        left_box = left_box.union(&boxes[split - 1]);
        left_count += counts[split - 1];
        if left_count == 0 || right_count[split] == 0 {
            continue;
        }
        let cost = left_box.area() * left_count as f32 + right_area[split] * right_count[split] as f32;
        if cost < best_cost {
            best_cost = cost;
            best_split = split;
        }
    }
    if best_split == 0 {
        return median_split(items, axis, half);
    }
    // In-place partition: bins below `best_split` go left.
    let (mut i, mut j) = (0usize, items.len());
    while i < j {
        if (items[i].bin as usize) < best_split {
            i += 1;
        } else {
            j -= 1;
            items.swap(i, j);
        }
    }
    i
}

fn median_split(items: &mut [Item], axis: usize, half: usize) -> usize {
    items.select_nth_unstable_by(half, |a, b| a.center[axis].total_cmp(&b.center[axis]).then(a.node.cmp(&b.node)));
    half
}
