//! The kD tree's build: items, the splits (mean, median, peel), leaves, the parallel
//! build's placement of subtrees, and the compact nodes' quantised planes.

use super::*;

/// A triangle during the build: its box and its index, 32 bytes and aligned, so
/// the partitions move each item in two aligned halves. Its midpoint is its box's
/// (not the centroid, which made 40-byte items): the 1M-triangle bench mesh builds
/// in 134-139 ms instead of 176-198 (alternating runs), and the trees answer rays
/// as fast. Tried: 28-byte items (unaligned), 236 ms; 16-byte items with the boxes
/// on a 16-bit grid and exact planes returned from the children, 149-166 ms (the
/// integer minima and sums do not vectorise on baseline x86-64).
#[derive(Clone, Copy)]
#[repr(C, align(32))]
pub(super) struct Item {
    pub(super) min: Vec3,
    pub(super) max: Vec3,
    pub(super) index: u32,
}

impl Item {
    /// Twice the midpoint of the triangle's box on `axis`: the build averages and
    /// compares midpoints, never halves them.
    #[inline(always)]
    pub(super) fn mid(&self, axis: usize) -> f32 {
        self.min[axis] + self.max[axis]
    }
}

/// Builds the canonical (full) node array in depth-first order and returns it with
/// the depth and the items in leaf order (a leaf's triangles are its items'
/// `index`es). With `jobs`, the two children of
/// every large node build side by side (see [`PARALLEL_ITEMS`]); the tree is the
/// same for any worker count.
pub(super) fn build_nodes(
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
pub(super) fn collect_chunks<T: Send, R: Send>(
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
pub(super) fn collect<T: Send>(n: usize, jobs: Option<Jobs>, f: impl Fn(usize) -> T + Sync) -> Vec<T> {
    collect_chunks(n, jobs, f, |_| (), |()| ())
}

/// Items per job of a parallel build: a node with more builds its children side by
/// side (and computes their contents side by side); smaller subtrees build serially.
pub(super) const PARALLEL_ITEMS: usize = 1 << 14;

/// The number of nodes of a subtree of `n >= 1` triangles. Every leaf holds two
/// triangles but, for an odd `n`, one (the left side of a split always gets an even
/// count, and a peel moves two), so the count depends on `n` alone: a node's right
/// child lies `1 + subtree_nodes(left count)` after it, known before the left
/// subtree is built, which lets both subtrees build at once.
pub(super) fn subtree_nodes(n: usize) -> usize {
    n - 1 + (n & 1)
}

/// Where a subtree goes: the index of its root node, and the tree index of its first
/// triangle (the tree numbers triangles in leaf order).
#[derive(Clone, Copy)]
pub(super) struct Place {
    pub(super) node: u32,
    pub(super) first: u32,
}

/// Where leaf ranges are quantised: `origin + q * quantum` for `q` in `0..=top`
/// (`scale` is the quantum's reciprocal, worked out once rather than per leaf).
#[derive(Clone, Copy)]
pub(super) struct LeafGrid {
    pub(super) origin: Vec3,
    pub(super) quantum: Vec3,
    pub(super) scale: Vec3,
    pub(super) top: u32,
}

impl LeafGrid {
    pub(super) fn new(origin: Vec3, quantum: Vec3, top: u32) -> LeafGrid {
        LeafGrid { origin, quantum, scale: 1.0 / quantum, top }
    }
}

pub(super) struct Build<'j> {
    pub(super) grid: LeafGrid,
    pub(super) jobs: Option<Jobs<'j>>,
}

/// Items peeled into a leaf to cut a gap (see [`Build::peel`]).
pub(super) const PEEL: usize = 2;

/// The most items of a node the mean split always halves as two on the left (see
/// [`Build::split_small`]): with six, four left are possible.
pub(super) const SMALL: usize = 5;
const _: () = assert!(SMALL < 3 * PEEL, "a small node never peels");

impl Build<'_> {
    /// Builds the subtree of `items` into `out` (exactly [`subtree_nodes`] of them)
    /// and returns its deepest level: `bounds` is the items' box, `region` the box the
    /// ancestors' planes leave them (what a query sees); `peeled` says the parent was
    /// a peel.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn node(
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
    pub(super) fn split_small(
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
    pub(super) fn both<A: Send, B: Send>(
        &self,
        n: usize,
        a: impl FnOnce() -> A + Send,
        b: impl FnOnce() -> B + Send,
    ) -> (A, B) {
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
    pub(super) fn leaf(&self, bounds: &Aabb, region: &Aabb, n: usize, first: u32) -> FullNode {
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
    pub(super) fn split(
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
    pub(super) fn gap(bounds: &Aabb, region: &Aabb) -> Option<(usize, bool)> {
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
    pub(super) fn peel(
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
pub(super) type Content = (Aabb, Option<[f64; 3]>);

/// The items' box and midpoint sums, in one pass. Below [`PARALLEL_ITEMS`] items
/// (every chunk's tree, every subtree one job builds) the sums are f32, four-wide
/// beside the box: the mean only steers the split, and its sums as f64 took a tenth
/// of a chunk's build; above, f64 per axis, which keeps a large mesh's sums exact
/// enough whatever the chunking. Either way the bits depend on the items alone.
#[inline(always)]
pub(super) fn content(items: &[Item]) -> Content {
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
pub(super) fn child_content(items: &[Item]) -> Content {
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
pub(super) fn partition(items: &mut [Item], left: impl Fn(&Item) -> bool) -> usize {
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
pub(super) fn furthest(items: &[Item], key: impl Fn(&Item) -> f32) -> [(f32, usize); PEEL + 1] {
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
pub(super) fn argmin(items: &[Item], key: impl Fn(&Item) -> f32) -> usize {
    let (mut best, mut at) = (f32::INFINITY, 0);
    for (i, it) in items.iter().enumerate() {
        let k = key(it);
        let less = k < best;
        (best, at) = (if less { k } else { best }, if less { i } else { at });
    }
    at
}

/// The compact form of a full node: planes rounded outwards on the quantisation grid.
pub(super) fn compact_node(n: &FullNode, origin: Vec3, step: Vec3) -> CompactNode {
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
pub(super) fn round_step(x: f32) -> u16 {
    let x = x.clamp(0.0, 65535.0);
    let t = x as u32;
    (t + (x - t as f32 >= 0.5) as u32) as u16
}

/// The smallest 16-bit grid step at or above `a` whose value is at least `split`.
#[cold]
#[inline(never)]
pub(super) fn plane_up(origin: f32, step: f32, mut a: u16, split: f32) -> u16 {
    while a < u16::MAX && origin + a as f32 * step < split {
        a += 1;
    }
    a
}

/// The largest 16-bit grid step at or below `b` whose value is at most `split`.
#[cold]
#[inline(never)]
pub(super) fn plane_down(origin: f32, step: f32, mut b: u16, split: f32) -> u16 {
    while b > 0 && origin + b as f32 * step > split {
        b -= 1;
    }
    b
}

#[cfg(test)]
mod rounding_tests {
    use super::*;
    use crate::spatial::tests::Rng;

    /// The compact planes as an earlier build computed them: libm floor and ceiling, clamped, then stepped until they contain the planes.
    pub(super) fn reference_planes(split0: f32, split1: f32, o: f32, s: f32) -> (u16, u16) {
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
    pub(super) fn compact_planes_are_the_floor_and_ceiling_ones() {
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
    pub(super) fn grid_rounding_is_round_and_clamp() {
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
    pub(super) fn leaf_range_steps_are_the_nearest_containing_ones() {
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
