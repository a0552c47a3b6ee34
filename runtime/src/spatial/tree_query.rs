//! Queries of a [`DynamicTree`]: box overlap and ray casts. Both walk the tree on a
//! fixed stack (the tree's height is bounded, see `MAX_HEIGHT`): no recursion, no
//! heap, callable from many jobs at once.

use std::mem::MaybeUninit;

use glam::{BVec3A, Vec3A, Vec4};

use super::tree::{is_leaf, slot, DynamicTree, ProxyId, LEAF, NULL, ROOT_SLOT, STACK_SIZE};
use crate::math::{Aabb, Ray};

impl DynamicTree {
    /// Calls `visit` for every proxy whose fat box overlaps `aabb`. `visit` returns
    /// `false` to stop the query early.
    ///
    /// A step reads one node (one cache line) and tests both children's boxes in
    /// it, without branches (two four-wide compares each, see `BoxTest`); internal
    /// children that overlap go to the stack.
    pub fn query(&self, aabb: &Aabb, mut visit: impl FnMut(ProxyId) -> bool) {
        let root = self.root();
        let test = BoxTest::new(aabb);
        if root == NULL || !test.overlaps(self.box_at(ROOT_SLOT)) {
            return;
        }
        if is_leaf(root) {
            visit(ProxyId(root & !LEAF));
            return;
        }
        // Entries below `top` are written; the rest are not read. Uninitialised, so
        // a query does not first clear a kilobyte (a tenth of a small box query).
        let mut stack = [MaybeUninit::<u32>::uninit(); STACK_SIZE];
        stack[0] = MaybeUninit::new(root);
        let mut top = 1;
        while top > 0 {
            top -= 1;
            // SAFETY: every entry below `top` was written.
            let node = &self.nodes[unsafe { stack[top].assume_init() } as usize];
            for (child, b) in node.children.into_iter().zip(&node.boxes) {
                let hit = test.overlaps(b);
                if is_leaf(child) {
                    if hit && !visit(ProxyId(child & !LEAF)) {
                        return;
                    }
                } else {
                    // Write, keep if it overlaps. The stack holds at most height
                    // entries (see `MAX_HEIGHT`).
                    stack[top] = MaybeUninit::new(child);
                    top += hit as usize;
                }
            }
        }
    }

    /// [`DynamicTree::query`] for many boxes: calls `visit(i, proxy)` for every
    /// proxy whose fat box overlaps `boxes(i)`, `i` in `0..count`, in an order
    /// fixed by the tree and the boxes (not by `i` alone).
    ///
    /// One walk is a chain of dependent loads, so `LANES` walks advance in turn and
    /// their loads overlap; no branch depends on a box test (children go to the
    /// walk's stack or to its buffer of hits without a branch, and a walk reports
    /// its hits when the buffer fills or the walk ends). The broadphase's pair
    /// finding is this call: on the `broadphase_tree` scene it takes a third less
    /// time than one `query` per box.
    pub fn query_each(&self, count: usize, boxes: impl Fn(usize) -> Aabb, mut visit: impl FnMut(usize, ProxyId)) {
        const LANES: usize = 4;
        let root = self.root();
        if root == NULL {
            return;
        }
        let root_box = self.box_at(ROOT_SLOT);
        if is_leaf(root) {
            for i in 0..count {
                if BoxTest::new(&boxes(i)).overlaps(root_box) {
                    visit(i, ProxyId(root & !LEAF));
                }
            }
            return;
        }
        // Each walk's small state (`Walk`) is a local the compiler keeps in
        // registers; its stack and its buffer of hits are arrays of their own.
        let mut next = 0;
        // Reports a walk's hits and, when it has ended, starts it on the next query
        // whose box meets the root. Returns whether the walk has a node to step.
        let mut refill = |walk: &mut Walk, stack: &mut Stack, hits: &Hits| {
            for &proxy in &hits[..walk.found] {
                visit(walk.query, ProxyId(proxy));
            }
            walk.found = 0;
            if walk.top > 0 {
                return true;
            }
            while next < count {
                let test = BoxTest::new(&boxes(next));
                next += 1;
                if test.overlaps(root_box) {
                    (walk.query, walk.test, walk.top) = (next - 1, test, 1);
                    stack[0] = root;
                    return true;
                }
            }
            false
        };
        let mut walks = [Walk::IDLE; LANES];
        let mut stacks = [[0u32; STACK_SIZE]; LANES];
        let mut hits = [[0u32; WALK_HITS]; LANES];
        let [w0, w1, w2, w3] = &mut walks;
        let [s0, s1, s2, s3] = &mut stacks;
        let [h0, h1, h2, h3] = &mut hits;
        loop {
            // The four walks in turn, written out so that their state stays in
            // registers (a loop over them kept it in memory).
            let mut busy = false;
            busy |= self.step(w0, s0, h0, &mut refill);
            busy |= self.step(w1, s1, h1, &mut refill);
            busy |= self.step(w2, s2, h2, &mut refill);
            busy |= self.step(w3, s3, h3, &mut refill);
            if !busy {
                return;
            }
        }
    }

    /// One step of a walk of [`DynamicTree::query_each`]: the children of the node
    /// on top of its stack go to the stack or to its hits. A walk that has ended
    /// first reports its hits and takes the next query (`refill`). Returns whether
    /// the walk had a node to step.
    #[inline(always)]
    fn step(
        &self,
        walk: &mut Walk,
        stack: &mut Stack,
        hits: &mut Hits,
        refill: &mut impl FnMut(&mut Walk, &mut Stack, &Hits) -> bool,
    ) -> bool {
        if walk.top == 0 && !refill(walk, stack, hits) {
            return false;
        }
        let (mut top, mut found) = (walk.top - 1, walk.found);
        let node = &self.nodes[stack[top] as usize];
        for (child, b) in node.children.into_iter().zip(&node.boxes) {
            let (hit, leaf) = (walk.test.overlaps(b), is_leaf(child));
            // A stack holds at most height + 1 entries (see `MAX_HEIGHT`), and
            // `found` stays below `WALK_HITS` (see below): the masks only spare the
            // bounds checks. No branch depends on the box test.
            stack[top & (STACK_SIZE - 1)] = child;
            top += (hit & !leaf) as usize;
            hits[found & (WALK_HITS - 1)] = child & !LEAF;
            found += (hit & leaf) as usize;
        }
        (walk.top, walk.found) = (top, found);
        // This walk's next node: its line loads while the other walks step (when
        // the walk just ended this reads a stale entry, and prefetching it is a
        // harmless hint).
        let next_node = stack[top.wrapping_sub(1) & (STACK_SIZE - 1)];
        crate::math::prefetch(self.nodes.as_ptr().wrapping_add(next_node as usize));
        if found > WALK_HITS - 2 {
            // Report the hits now: a step adds at most two.
            refill(walk, stack, hits);
        }
        true
    }

    /// Calls `visit(aabb, depth, is_leaf)` for every node and leaf, parents before
    /// children (the root has depth 0): for debug drawing and tree statistics.
    pub fn for_each_node(&self, mut visit: impl FnMut(&Aabb, u32, bool)) {
        if self.root() == NULL {
            return;
        }
        let mut stack = [(0u32, 0u32); STACK_SIZE];
        stack[0] = (ROOT_SLOT, 0);
        let mut top = 1;
        while top > 0 {
            top -= 1;
            let (at, depth) = stack[top];
            let child = self.child_at(at);
            visit(self.box_at(at), depth, is_leaf(child));
            if !is_leaf(child) {
                stack[top] = (slot(child, 0), depth + 1);
                stack[top + 1] = (slot(child, 1), depth + 1);
                top += 2;
            }
        }
    }

    /// Casts `ray` over `[0, max_t]`. For every proxy whose fat box the ray enters
    /// before the current maximum, `visit(proxy, max_t)` tests the proxy's own shape
    /// and returns the new maximum: the hit's `t` to clip (closest hit), the unchanged
    /// maximum to continue (all hits), or a negative value to stop. Children are
    /// visited near first, and any child entered beyond the shrinking maximum is
    /// skipped.
    pub fn ray_cast(&self, ray: &Ray, max_t: f32, mut visit: impl FnMut(ProxyId, f32) -> f32) {
        let root = self.root();
        if root == NULL || !ray.is_valid() || max_t.is_nan() || max_t < 0.0 {
            return;
        }
        let mut max_t = max_t;
        // Uninitialised as in `query`: a cast does not first clear 2 KB.
        let mut stack = [MaybeUninit::<(u32, f32)>::uninit(); STACK_SIZE];
        let slab = RaySlab::new(ray);
        let Some(t_root) = slab.enter(self.box_at(ROOT_SLOT), max_t) else {
            return;
        };
        stack[0] = MaybeUninit::new((root, t_root));
        let mut top = 1;
        while top > 0 {
            top -= 1;
            // SAFETY: every entry below `top` was written.
            let (child, t_entry) = unsafe { stack[top].assume_init() };
            if t_entry > max_t {
                continue;
            }
            if is_leaf(child) {
                let new_max = visit(ProxyId(child & !LEAF), max_t);
                if new_max < 0.0 {
                    return;
                }
                max_t = max_t.min(new_max);
                continue;
            }
            let node = &self.nodes[child as usize];
            let [c1, c2] = node.children;
            let t1 = slab.enter(&node.boxes[0], max_t);
            let t2 = slab.enter(&node.boxes[1], max_t);
            let mut push = |entry: Option<(u32, f32)>| {
                if let Some(e) = entry {
                    stack[top] = MaybeUninit::new(e);
                    top += 1;
                }
            };
            let (e1, e2) = (t1.map(|t| (c1, t)), t2.map(|t| (c2, t)));
            // Far child first so the near one is popped next.
            if t1.unwrap_or(f32::INFINITY) <= t2.unwrap_or(f32::INFINITY) {
                push(e2);
                push(e1);
            } else {
                push(e1);
                push(e2);
            }
        }
    }

    /// The closest hit: `hit(proxy, max_t)` returns the proxy's exact hit `t` (at
    /// most `max_t`) or `None`. Returns the proxy and `t` of the nearest hit.
    pub fn ray_cast_closest(
        &self,
        ray: &Ray,
        max_t: f32,
        mut hit: impl FnMut(ProxyId, f32) -> Option<f32>,
    ) -> Option<(ProxyId, f32)> {
        let mut best = None;
        self.ray_cast(ray, max_t, |proxy, max| match hit(proxy, max) {
            Some(t) if t <= max && best.is_none_or(|(b, bt)| (t, proxy) < (bt, b)) => {
                best = Some((proxy, t));
                t
            }
            _ => max,
        });
        best
    }

    /// Every hit within `max_t`: `hit` as for [`DynamicTree::ray_cast_closest`],
    /// `report(proxy, t)` for each; order is traversal order.
    pub fn ray_cast_all(
        &self,
        ray: &Ray,
        max_t: f32,
        mut hit: impl FnMut(ProxyId, f32) -> Option<f32>,
        mut report: impl FnMut(ProxyId, f32),
    ) {
        self.ray_cast(ray, max_t, |proxy, max| {
            if let Some(t) = hit(proxy, max) {
                report(proxy, t);
            }
            max
        });
    }
}

/// Hits a walk of [`DynamicTree::query_each`] holds before it reports them.
const WALK_HITS: usize = 16;
const _: () = assert!(STACK_SIZE.is_power_of_two() && WALK_HITS.is_power_of_two());

/// A walk's stack of nodes in [`DynamicTree::query_each`].
type Stack = [u32; STACK_SIZE];
/// The hits a walk has not reported yet.
type Hits = [u32; WALK_HITS];

/// One box's walk in [`DynamicTree::query_each`], but for its stack and hits.
#[derive(Clone, Copy)]
struct Walk {
    test: BoxTest,
    /// Entries on the stack; 0 when the walk is done (or idle).
    top: usize,
    /// Entries in the hits.
    found: usize,
    query: usize,
}

impl Walk {
    const IDLE: Walk = Walk { test: BoxTest { high: Vec4::ZERO, low: Vec4::ZERO }, top: 0, found: 0, query: 0 };
}

/// A box overlap test in two four-wide compares. A node's box, read as six floats
/// `min.xyz max.xyz`, is loaded as `(min.x, min.y, min.z, max.x)` and
/// `(min.z, max.x, max.y, max.z)`; the lanes that do not belong to a test compare
/// against infinities and always pass.
#[derive(Clone, Copy)]
struct BoxTest {
    /// `(max.x, max.y, max.z, +inf)` of the query box.
    high: Vec4,
    /// `(-inf, min.x, min.y, min.z)` of the query box.
    low: Vec4,
}

impl BoxTest {
    fn new(b: &Aabb) -> BoxTest {
        BoxTest {
            high: Vec4::new(b.max.x, b.max.y, b.max.z, f32::INFINITY),
            low: Vec4::new(f32::NEG_INFINITY, b.min.x, b.min.y, b.min.z),
        }
    }

    #[inline(always)]
    fn overlaps(&self, a: &Aabb) -> bool {
        let first = Vec4::new(a.min.x, a.min.y, a.min.z, a.max.x);
        let second = Vec4::new(a.min.z, a.max.x, a.max.y, a.max.z);
        (first.cmple(self.high) & second.cmpge(self.low)).all()
    }
}

/// A ray set up for the slab tests of many boxes: its origin, its reciprocal
/// direction (infinite on an axis it is parallel to), and per axis which of a box's
/// bounds it meets first.
///
/// The entry distance is [`Ray::intersect_aabb`]'s (zeros aside, of either sign): on each axis the
/// same `(bound - origin) * inverse` products; an axis the ray is parallel to gives
/// infinities that keep or reject the whole ray (origin inside or outside the slab),
/// and a NaN (a bound through the origin) is passed over by `f32::max`/`min`, which
/// keeps the slab, boundary included, as `clip` does.
#[derive(Clone, Copy)]
struct RaySlab {
    origin: Vec3A,
    inv: Vec3A,
    /// Lanes where the direction is negative: the near bound is the box's maximum.
    negative: BVec3A,
}

impl RaySlab {
    fn new(ray: &Ray) -> RaySlab {
        let inv = Vec3A::from(ray.inv_dir);
        RaySlab { origin: ray.origin.into(), inv, negative: inv.cmplt(Vec3A::ZERO) }
    }

    /// Where the ray enters `b` within `[0, max_t]`, if it does.
    #[inline(always)]
    fn enter(&self, b: &Aabb, max_t: f32) -> Option<f32> {
        let (lo, hi) = (Vec3A::from(b.min), Vec3A::from(b.max));
        let near = (Vec3A::select(self.negative, hi, lo) - self.origin) * self.inv;
        let far = (Vec3A::select(self.negative, lo, hi) - self.origin) * self.inv;
        let t_in = 0f32.max(near.x).max(near.y).max(near.z);
        let t_out = max_t.min(far.x).min(far.y).min(far.z);
        (t_in <= t_out).then_some(t_in)
    }
}

#[cfg(test)]
mod tests {
    use glam::Vec3;

    use super::RaySlab;
    use crate::math::{Aabb, Ray};
    use crate::spatial::tests::Rng;

    /// The tree walk's slab test enters every box where `Ray::intersect_aabb` does,
    /// at the same distance: random rays, rays along axes with origins on and off the box
    /// faces, negative zeros, short limits.
    #[test]
    fn slab_entries_equal_the_rays_own() {
        let mut rng = Rng(17);
        let axes = [Vec3::X, Vec3::NEG_X, Vec3::Y, Vec3::NEG_Y, Vec3::Z, Vec3::NEG_Z, Vec3::new(-0.0, 1.0, -0.0)];
        let mut hits = 0;
        for i in 0..20_000 {
            let lo = rng.vec3(-4.0, 4.0);
            let b = Aabb::new(lo, lo + rng.vec3(0.0, 3.0));
            let origin = match i % 3 {
                0 => rng.vec3(-8.0, 8.0),
                // On a face or an edge of the box.
                1 => Vec3::new(b.min.x, rng.range(b.min.y, b.max.y), b.max.z),
                _ => Vec3::new(rng.range(-8.0, 8.0), b.max.y, b.min.z),
            };
            let dir = if i % 2 == 0 { axes[rng.below(axes.len())] } else { rng.vec3(-1.0, 1.0) };
            let ray = Ray::new(origin, dir);
            for max_t in [f32::INFINITY, 2.0, 0.0] {
                let want = ray.intersect_aabb(&b, max_t);
                let got = RaySlab::new(&ray).enter(&b, max_t);
                // Equal values (a zero entry may come out as either zero).
                assert_eq!(got, want, "{ray:?} {b:?} {max_t}");
                hits += usize::from(got.is_some());
            }
        }
        assert!(hits > 5_000, "{hits}");
    }
}
