//! The dynamic AABB tree: a binary tree of fat boxes over proxies, kept in one node
//! array with a free list.
//!
//! Leaves hold a proxy's *fat* box (tight box + margin + a prediction of its motion),
//! internal nodes the union of their children. A proxy whose tight box stays inside
//! its fat box costs nothing when it moves. When it escapes, one of two strategies
//! updates the tree (see [`Balancing`]):
//!
//! * [`Balancing::Avl`] (the reference, Box2D v2.4): remove the leaf, insert it again
//!   at the SAH-best sibling, and rotate by height on the way up, so height stays
//!   logarithmic. Beyond the reference, the sibling search starts a few levels above
//!   the leaf's old place rather than at the root ([`TreeConfig::reinsert_levels`],
//!   as Bullet's `btDbvt` lookahead does): as good a tree, in less time.
//! * [`Balancing::SahRotate`] (Box2D v3): enlarge the leaf and mark its ancestors
//!   *enlarged*; insertions rotate only when that lowers the SAH cost; once per step
//!   [`DynamicTree::rebuild`] rebuilds the enlarged top of the tree with binned SAH
//!   and keeps every untouched subtree as it is.
//!
//! # Layout
//!
//! Beyond the reference, a node holds its two *children's* boxes, references and
//! heights, in one 64-byte cache line (the BVH2 layout of Embree and of GPU ray
//! tracers), instead of its own box. Every step of a walk (a query, the sibling
//! search, a refit on the way up) reads the one line of the node it stands on and
//! decides about both children from it; with one box per node it also had to load
//! each child's line. Leaves are not nodes: a child reference with [`LEAF`] set is
//! a proxy, and the proxy table holds its user value, flags and where its box is
//! (plus, beside it, a copy of the box, read in proxy order by the per-step tests).
//!
//! A box therefore lives in its parent, at a *slot* (`node << 1 | side`). Node 0 is a
//! sentinel whose slot 0 holds the root (its reference, box and height), so the root
//! needs no special case; its slot 1 stays empty.
//!
//! Proxy ids are proxy table indices; they stay valid until the proxy is destroyed
//! and are reused afterwards (the owner keeps its own generation if it needs one).

use glam::{Mat4, Vec4, Vec4Swizzles};

use crate::math::Aabb;

/// "No node" (or no proxy, or the end of a free list).
pub(crate) const NULL: u32 = u32::MAX;

/// Set in a child reference that names a proxy (the rest is its index), clear in one
/// that names a node. `NULL` has it set but is never a proxy index.
pub(crate) const LEAF: u32 = 1 << 31;

/// The sentinel node; its slot 0 holds the root.
pub(crate) const SENTINEL: u32 = 0;

/// The slot of the root (slot 0 of the sentinel).
pub(crate) const ROOT_SLOT: u32 = 0;

/// Heights above this trigger a full rebuild, so that the fixed query stacks
/// (`STACK_SIZE`) can never overflow: a depth-first walk holds at most height + 1
/// entries.
pub(crate) const MAX_HEIGHT: u8 = 200;

/// Entries of the fixed stacks used by queries and the insertion search.
pub(crate) const STACK_SIZE: usize = 256;

/// A proxy in a [`DynamicTree`]: its index in the tree's proxy table.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ProxyId(pub u32);

crate::codec::fields!(ProxyId { 0 });

impl ProxyId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}
/// How a tree keeps its quality as proxies move (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Balancing {
    /// Remove + reinsert on every escape, AVL height rotations (the reference). The
    /// default: on the `broadphase_tree` bench (10k moving boxes) a frame of moves and
    /// pair finding costs about 0.6x what `SahRotate` costs, because its per-step
    /// rebuild is on the critical path there.
    Avl,
    /// Enlarge on escape, SAH-lowering rotations on insert, and a partial binned-SAH
    /// rebuild of the enlarged part once per step (Box2D v3). Its trees answer box
    /// queries about 1.7x faster (`broadphase_tree_query`), so prefer it for
    /// query-heavy scenes, or when the rebuild can run beside other work.
    SahRotate,
}

/// Fattening and balancing settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TreeConfig {
    /// Added to every side of a tight box.
    pub margin: f32,
    /// The fat box also extends by `displacement * multiplier` in the direction of
    /// motion, so a steadily moving proxy escapes rarely.
    pub displacement_multiplier: f32,
    pub balancing: Balancing,
    /// [`Balancing::Avl`]: how many levels above its old place a moved proxy's
    /// sibling search starts at least (see `DynamicTree::reinsert_start`);
    /// `u32::MAX` searches from the root, as the reference does. On the
    /// `broadphase_tree` scene (10k proxies, height 15) the default 8 keeps the
    /// tree's mean SAH area ratio at the root search's (77.3 against 77.1, 30
    /// samples over 1,920 frames) and makes a frame 8-11% faster; 6 is 12% faster
    /// but costs 7% in area and 6% in query time.
    pub reinsert_levels: u32,
}

impl Default for TreeConfig {
    fn default() -> Self {
        TreeConfig { margin: 0.1, displacement_multiplier: 4.0, balancing: Balancing::Avl, reinsert_levels: 8 }
    }
}

/// Node flags.
pub(crate) const NODE_ALLOCATED: u16 = 1;
pub(crate) const NODE_ENLARGED: u16 = 2;

/// Proxy flags.
pub(crate) const PROXY_ALLOCATED: u16 = 1;
pub(crate) const PROXY_MOVED: u16 = 2;
pub(crate) const PROXY_SLEEPING: u16 = 4;
pub(crate) const PROXY_SENSOR: u16 = 8;

/// An internal node: its two children's boxes, references and heights, one cache
/// line. For a free node `parent` links the free list.
#[derive(Clone, Copy, Debug)]
#[repr(C, align(64))]
pub(crate) struct Node {
    pub(crate) boxes: [Aabb; 2],
    /// A node index, or `LEAF | proxy`; `NULL` only in the sentinel's empty slots.
    pub(crate) children: [u32; 2],
    /// The slot that holds this node (`parent << 1 | side`).
    pub(crate) parent: u32,
    /// Leaves have height 0. Heights stay at most `MAX_HEIGHT` + 1 between calls
    /// (`check_height`); a rebuild saturates them at 255 before it falls back to
    /// median splits.
    pub(crate) heights: [u8; 2],
    pub(crate) flags: u16,
}

impl Default for Node {
    fn default() -> Node {
        Node::FREE
    }
}

impl Default for Proxy {
    fn default() -> Proxy {
        Proxy::FREE
    }
}

crate::codec::fields!(Node { boxes, children, parent, heights, flags });
crate::codec::fields!(Proxy { slot, flags, user });
crate::codec::fields!(TreeConfig { margin, displacement_multiplier, balancing, reinsert_levels });
// The build scratch is not state.
crate::codec::fields!(DynamicTree { nodes, proxies, fat, free_nodes, free_proxies, proxy_count, inserted, config });

impl crate::codec::Codec for Balancing {
    fn put(&self, w: &mut crate::codec::Writer) {
        crate::codec::Codec::put(&(*self as u8), w);
    }
    fn take(&mut self, r: &mut crate::codec::Reader) -> Result<(), crate::codec::Corrupt> {
        *self = [Balancing::Avl, Balancing::SahRotate][r.tag(2)? as usize];
        Ok(())
    }
}

impl Node {
    const FREE: Node = Node { boxes: [Aabb::EMPTY; 2], children: [NULL; 2], parent: NULL, heights: [0; 2], flags: 0 };
}

const _: () = assert!(std::mem::size_of::<Node>() == 64);

/// A proxy: where its box is, its flags and its user value. For a free proxy `slot`
/// links the free list.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Proxy {
    pub(crate) slot: u32,
    pub(crate) flags: u16,
    pub(crate) user: u64,
}

impl Proxy {
    const FREE: Proxy = Proxy { slot: NULL, flags: 0, user: 0 };
}

const _: () = assert!(std::mem::size_of::<Proxy>() == 16);

/// The node of a slot.
#[inline(always)]
pub(crate) fn slot_node(slot: u32) -> usize {
    (slot >> 1) as usize
}

/// The side of a slot within its node.
#[inline(always)]
pub(crate) fn slot_side(slot: u32) -> usize {
    (slot & 1) as usize
}

#[inline(always)]
pub(crate) fn slot(node: u32, side: usize) -> u32 {
    node << 1 | side as u32
}

#[inline(always)]
pub(crate) fn is_leaf(child: u32) -> bool {
    child & LEAF != 0
}

/// A box as two four-wide vectors, `min.xyz` and `max.xyz` (lane 3 unused), so the
/// sibling search and the refits compute unions and surface areas four lanes at a
/// time. Its unions and areas equal [`Aabb::union`] and [`Aabb::area`] bit for bit
/// (same operations in the same order).
#[derive(Clone, Copy)]
pub(crate) struct WideBox {
    min: Vec4,
    max: Vec4,
}

impl WideBox {
    #[inline(always)]
    pub(crate) fn load(b: &Aabb) -> WideBox {
        WideBox {
            min: Vec4::new(b.min.x, b.min.y, b.min.z, b.max.x),
            max: Vec4::new(b.min.z, b.max.x, b.max.y, b.max.z).yzwx(),
        }
    }

    #[inline(always)]
    pub(crate) fn aabb(self) -> Aabb {
        Aabb { min: self.min.truncate(), max: self.max.truncate() }
    }

    #[inline(always)]
    pub(crate) fn union(self, other: WideBox) -> WideBox {
        WideBox { min: self.min.min(other.min), max: self.max.max(other.max) }
    }

    /// The surface areas of four boxes, in order.
    #[inline(always)]
    pub(crate) fn areas(boxes: [WideBox; 4]) -> Vec4 {
        let e = boxes.map(|b| (b.max - b.min).max(Vec4::ZERO));
        let t = Mat4::from_cols(e[0], e[1], e[2], e[3]).transpose();
        let (x, y, z) = (t.x_axis, t.y_axis, t.z_axis);
        2.0 * (x * y + y * z + z * x)
    }
}

/// Pops the head of the free list `free` of `pool`, whose entries link it through
/// `link`. An empty list first grows the pool by doubling (to at least 16 entries,
/// at most `limit`) and threads the new entries onto the list.
fn pop_free<T: Clone>(pool: &mut Vec<T>, free: &mut u32, empty: T, limit: usize, link: fn(&mut T) -> &mut u32) -> u32 {
    if *free == NULL {
        let old = pool.len();
        let new = (old * 2).max(16);
        assert!(new <= limit, "dynamic tree: a pool outgrew {limit} entries");
        pool.resize(new, empty);
        for (i, entry) in pool[old..new - 1].iter_mut().enumerate() {
            *link(entry) = (old + i + 1) as u32;
        }
        *free = old as u32;
    }
    let index = *free;
    *free = *link(&mut pool[index as usize]);
    index
}

/// The length of the free list from `head` through `pool`, whose entries give their
/// link and flags through `entry`; panics on a flagged (live) entry in the list or
/// a list longer than the pool (a cycle). For `validate`.
fn count_free<T>(pool: &[T], head: u32, entry: fn(&T) -> (u32, u16)) -> usize {
    let (mut count, mut i) = (0usize, head);
    while i != NULL {
        let (next, flags) = entry(&pool[i as usize]);
        assert_eq!(flags, 0, "free entry {i} is flagged");
        count += 1;
        assert!(count <= pool.len(), "the free list loops");
        i = next;
    }
    count
}

/// Tree quality figures for tests and benches.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TreeQuality {
    pub height: u32,
    pub proxies: u32,
    /// Sum of internal node areas divided by the root's area (lower is better).
    pub area_ratio: f32,
}

/// A dynamic AABB tree. See the module docs.
#[derive(Clone, Debug)]
pub struct DynamicTree {
    /// Internal nodes; node 0 is the sentinel that holds the root.
    pub(crate) nodes: Vec<Node>,
    /// The proxies (the leaves), indexed by [`ProxyId`].
    pub(crate) proxies: Vec<Proxy>,
    /// Each proxy's fat box, a copy of its leaf's (kept equal by `insert_leaf` and
    /// `enlarge_leaf`, the only writers of a leaf box), indexed like `proxies`. The
    /// per-step containment test of every proxy and the pair finder's fat-box tests
    /// read it in proxy order instead of chasing each leaf's node: one sequential
    /// stream instead of a random cache line per proxy (Box2D v3 keeps `fatAABB`
    /// in its shapes for the same reason).
    fat: Vec<Aabb>,
    free_nodes: u32,
    free_proxies: u32,
    proxy_count: u32,
    /// Proxies created since the last full rebuild (see
    /// [`DynamicTree::rebuild_if_bulk_loaded`]).
    pub(crate) inserted: u32,
    pub(crate) config: TreeConfig,
    /// Scratch of the rebuilds, kept so steady-state rebuilds do not allocate.
    pub(crate) build: super::tree_build::BuildScratch,
}

impl DynamicTree {
    pub fn new(config: TreeConfig) -> DynamicTree {
        DynamicTree {
            nodes: vec![Node { flags: NODE_ALLOCATED, ..Node::FREE }],
            proxies: Vec::new(),
            fat: Vec::new(),
            free_nodes: NULL,
            free_proxies: NULL,
            proxy_count: 0,
            inserted: 0,
            config,
            build: Default::default(),
        }
    }

    pub fn config(&self) -> &TreeConfig {
        &self.config
    }

    pub fn proxy_count(&self) -> usize {
        self.proxy_count as usize
    }

    /// Internal nodes allocated so far, the sentinel included (capacity of the node
    /// pool).
    pub fn node_capacity(&self) -> usize {
        self.nodes.len()
    }

    /// Proxies allocated so far (capacity of the proxy table).
    pub fn proxy_capacity(&self) -> usize {
        self.proxies.len()
    }

    /// The root's child reference: `NULL` when the tree is empty.
    #[inline(always)]
    pub(crate) fn root(&self) -> u32 {
        self.nodes[SENTINEL as usize].children[0]
    }

    pub fn height(&self) -> u32 {
        self.height_at(ROOT_SLOT) as u32
    }

    /// The fat box of `proxy`.
    #[inline(always)]
    pub fn fat_aabb(&self, proxy: ProxyId) -> Aabb {
        self.fat[proxy.index()]
    }

    pub fn user_data(&self, proxy: ProxyId) -> u64 {
        self.proxies[proxy.index()].user
    }

    /// Whether `proxy` names a live proxy of this tree.
    pub fn is_proxy(&self, proxy: ProxyId) -> bool {
        self.proxies.get(proxy.index()).is_some_and(|p| p.flags & PROXY_ALLOCATED != 0)
    }

    /// The fat box for a tight box moving by `displacement` per step.
    pub fn fatten(&self, tight: &Aabb, displacement: glam::Vec3) -> Aabb {
        let mut fat = tight.expanded(self.config.margin);
        let d = displacement * self.config.displacement_multiplier;
        fat.min += d.min(glam::Vec3::ZERO);
        fat.max += d.max(glam::Vec3::ZERO);
        fat
    }

    /// Adds a proxy for `tight` carrying `user`; its fat box gets the margin only.
    pub fn create_proxy(&mut self, tight: &Aabb, user: u64) -> ProxyId {
        debug_assert!(tight.is_valid());
        let proxy = self.allocate_proxy();
        self.proxies[proxy as usize] = Proxy { slot: NULL, flags: PROXY_ALLOCATED | PROXY_MOVED, user };
        self.insert_leaf(proxy, tight.expanded(self.config.margin), ROOT_SLOT);
        self.proxy_count += 1;
        self.inserted = self.inserted.saturating_add(1);
        ProxyId(proxy)
    }

    pub fn destroy_proxy(&mut self, proxy: ProxyId) {
        debug_assert!(self.is_proxy(proxy));
        self.remove_leaf(proxy.0);
        self.free_proxy(proxy.0);
        self.proxy_count -= 1;
    }

    /// Updates `proxy` for a new tight box. Returns `true` when the tight box left the
    /// fat box and the tree changed (the proxy is then flagged as moved).
    ///
    /// The containment test is inlined into the caller, which usually has just
    /// computed `tight` in registers (most proxies stay inside their fat boxes); the
    /// reinsertion is a call of its own.
    #[inline]
    pub fn move_proxy(&mut self, proxy: ProxyId, tight: &Aabb, displacement: glam::Vec3) -> bool {
        debug_assert!(self.is_proxy(proxy) && tight.is_valid());
        if self.fat[proxy.index()].contains(tight) {
            return false;
        }
        self.escape(proxy, tight, displacement);
        true
    }

    /// The slow path of [`DynamicTree::move_proxy`]: `tight` left the fat box.
    #[inline(never)]
    fn escape(&mut self, proxy: ProxyId, tight: &Aabb, displacement: glam::Vec3) {
        let leaf_slot = self.proxies[proxy.index()].slot;
        let fat = self.fatten(tight, displacement);
        match self.config.balancing {
            Balancing::Avl => {
                let sibling = self.remove_leaf(proxy.0);
                let start = self.reinsert_start(sibling, &fat);
                self.insert_leaf(proxy.0, fat, start);
            }
            Balancing::SahRotate => self.enlarge_leaf(leaf_slot, fat),
        }
        self.proxies[proxy.index()].flags |= PROXY_MOVED;
    }

    /// Marks a proxy as sleeping (or awake); pairs of two sleeping proxies are not
    /// reported by the broadphase.
    pub fn set_sleeping(&mut self, proxy: ProxyId, sleeping: bool) {
        let flags = &mut self.proxies[proxy.index()].flags;
        if sleeping {
            *flags |= PROXY_SLEEPING;
        } else {
            *flags &= !PROXY_SLEEPING;
        }
    }

    pub fn is_sleeping(&self, proxy: ProxyId) -> bool {
        self.proxies[proxy.index()].flags & PROXY_SLEEPING != 0
    }

    /// Marks a proxy as a sensor's: the broadphase pairs it with nothing (sensors
    /// find their overlaps themselves), queries still find it.
    pub fn set_sensor(&mut self, proxy: ProxyId) {
        self.proxies[proxy.index()].flags |= PROXY_SENSOR;
    }

    pub fn is_sensor(&self, proxy: ProxyId) -> bool {
        self.proxies[proxy.index()].flags & PROXY_SENSOR != 0
    }

    pub(crate) fn was_moved(&self, proxy: u32) -> bool {
        self.proxies[proxy as usize].flags & PROXY_MOVED != 0
    }

    pub(crate) fn clear_moved(&mut self, proxy: u32) {
        self.proxies[proxy as usize].flags &= !PROXY_MOVED;
    }

    /// Height, proxy count and the SAH area ratio.
    pub fn quality(&self) -> TreeQuality {
        let mut internal_area = 0.0f64;
        for node in &self.nodes[1..] {
            if node.flags & NODE_ALLOCATED != 0 {
                internal_area += self.box_at(node.parent).area() as f64;
            }
        }
        let root_area = if self.root() == NULL { 0.0 } else { self.box_at(ROOT_SLOT).area() as f64 };
        let area_ratio = if root_area > 0.0 { (internal_area / root_area) as f32 } else { 0.0 };
        TreeQuality { height: self.height(), proxies: self.proxy_count, area_ratio }
    }

    // ---- slots -------------------------------------------------------------------

    /// The box held at `slot`.
    #[inline(always)]
    pub(crate) fn box_at(&self, slot: u32) -> &Aabb {
        &self.nodes[slot_node(slot)].boxes[slot_side(slot)]
    }

    #[inline(always)]
    pub(crate) fn child_at(&self, slot: u32) -> u32 {
        self.nodes[slot_node(slot)].children[slot_side(slot)]
    }

    #[inline(always)]
    pub(crate) fn height_at(&self, slot: u32) -> u8 {
        self.nodes[slot_node(slot)].heights[slot_side(slot)]
    }

    /// The slot that holds `child` (a node, or `LEAF | proxy`).
    pub(crate) fn slot_of(&self, child: u32) -> u32 {
        if is_leaf(child) {
            self.proxies[(child & !LEAF) as usize].slot
        } else {
            self.nodes[child as usize].parent
        }
    }

    /// Puts `child` with its box and height at `slot` and points it back there.
    #[inline(always)]
    pub(crate) fn place(&mut self, slot: u32, child: u32, aabb: Aabb, height: u8) {
        let (node, side) = (&mut self.nodes[slot_node(slot)], slot_side(slot));
        node.children[side] = child;
        node.boxes[side] = aabb;
        node.heights[side] = height;
        if is_leaf(child) {
            self.proxies[(child & !LEAF) as usize].slot = slot;
        } else {
            self.nodes[child as usize].parent = slot;
        }
    }

    /// The box and height of `node` from its children's: what its slot should hold.
    #[inline(always)]
    pub(crate) fn fit(node: &Node) -> (Aabb, u8) {
        let [b0, b1] = &node.boxes;
        let aabb = WideBox::load(b0).union(WideBox::load(b1)).aabb();
        (aabb, node.heights[0].max(node.heights[1]).saturating_add(1))
    }

    // ---- node and proxy pools ----------------------------------------------------

    pub(crate) fn allocate_node(&mut self) -> u32 {
        // Slots (`node << 1 | side`) must fit in 32 bits.
        let index = pop_free(&mut self.nodes, &mut self.free_nodes, Node::FREE, 1 << 30, |n| &mut n.parent);
        self.nodes[index as usize] = Node { flags: NODE_ALLOCATED, ..Node::FREE };
        index
    }

    pub(crate) fn free_node(&mut self, index: u32) {
        debug_assert_ne!(index, SENTINEL);
        self.nodes[index as usize] = Node { parent: self.free_nodes, ..Node::FREE };
        self.free_nodes = index;
    }

    fn allocate_proxy(&mut self) -> u32 {
        // Proxy indices must leave the `LEAF` bit clear.
        let proxy =
            pop_free(&mut self.proxies, &mut self.free_proxies, Proxy::FREE, LEAF as usize - 1, |p| &mut p.slot);
        // The pool grows by doubling; the boxes follow it.
        self.fat.resize(self.proxies.len(), Aabb::EMPTY);
        proxy
    }

    fn free_proxy(&mut self, index: u32) {
        self.proxies[index as usize] = Proxy { slot: self.free_proxies, ..Proxy::FREE };
        self.free_proxies = index;
    }

    // ---- insertion and removal ---------------------------------------------------

    /// Finds the slot of the sibling for a new leaf with box `d` by the surface-area
    /// heuristic, with branch-and-bound pruning (Box2D v3's search), within the
    /// subtree at slot `start`. The cost of pairing with node N is area(N ∪ D) plus
    /// the growth of every ancestor of N ("inherited" cost). No descendant of N can
    /// cost less than area(D) + inherited + growth of N: the search descends into
    /// the child with the lower bound and stops as soon as neither child's bound can
    /// beat the best cost found. One path, no stack, one cache line per level.
    fn find_best_sibling(&self, d: &Aabb, start: u32) -> u32 {
        let area_d = d.area();
        let center_d = d.center();
        let wide_d = WideBox::load(d);
        let start_box = self.box_at(start);
        let mut area_base = start_box.area();
        let mut direct_cost = start_box.union(d).area();
        let mut inherited = 0.0f32;
        let (mut at, mut child) = (start, self.child_at(start));
        let mut best = at;
        let mut best_cost = direct_cost;
        while !is_leaf(child) {
            let node = &self.nodes[child as usize];
            // Cost of making `child` the sibling.
            let cost = direct_cost + inherited;
            if cost < best_cost {
                best = at;
                best_cost = cost;
            }
            inherited += direct_cost - area_base;

            // Both children's boxes are in this node's line; the four areas come out
            // of one four-wide computation.
            let [c1, c2] = node.children;
            let (w1, w2) = (WideBox::load(&node.boxes[0]), WideBox::load(&node.boxes[1]));
            let [direct1, direct2, area1, area2] =
                WideBox::areas([w1.union(wide_d), w2.union(wide_d), w1, w2]).to_array();
            let (leaf1, leaf2) = (is_leaf(c1), is_leaf(c2));
            // A leaf child is a candidate; an internal one bounds every node below it.
            let mut probe = |side: usize, direct: f32, area: f32, leaf: bool| {
                if leaf {
                    let cost = direct + inherited;
                    if cost < best_cost {
                        best = slot(child, side);
                        best_cost = cost;
                    }
                    f32::INFINITY
                } else {
                    inherited + direct + (area_d - area).min(0.0)
                }
            };
            let mut lower1 = probe(0, direct1, area1, leaf1);
            let mut lower2 = probe(1, direct2, area2, leaf2);
            if (leaf1 && leaf2) || (best_cost <= lower1 && best_cost <= lower2) {
                break;
            }
            if lower1 == lower2 && !leaf1 {
                // Tie: descend towards the nearer child.
                lower1 = (node.boxes[0].center() - center_d).length_squared();
                lower2 = (node.boxes[1].center() - center_d).length_squared();
            }
            if lower1 < lower2 && !leaf1 {
                (at, area_base, direct_cost) = (slot(child, 0), area1, direct1);
                child = c1;
            } else {
                (at, area_base, direct_cost) = (slot(child, 1), area2, direct2);
                child = c2;
            }
        }
        best
    }

    /// Where a moved leaf's sibling search starts: the slot of the lowest ancestor of
    /// `near` (the removed leaf's old sibling), at least `reinsert_levels` above it,
    /// whose box contains the new fat box; the root's when none does. Every candidate
    /// inside that subtree shares the growth of the ancestors above it, so the search
    /// still finds the SAH-best sibling within the subtree; it only skips far-away
    /// ones.
    fn reinsert_start(&self, near: u32, fat: &Aabb) -> u32 {
        if near == NULL {
            return ROOT_SLOT;
        }
        let mut at = self.slot_of(near);
        let mut levels = 0;
        while slot_node(at) != SENTINEL as usize {
            if levels >= self.config.reinsert_levels && self.box_at(at).contains(fat) {
                break;
            }
            at = self.nodes[slot_node(at)].parent;
            levels += 1;
        }
        at
    }

    /// Inserts `proxy` with box `fat` at the SAH-best sibling inside the subtree at
    /// slot `start` (the root's, or an ancestor of the best place, see
    /// [`DynamicTree::reinsert_start`]).
    pub(crate) fn insert_leaf(&mut self, proxy: u32, fat: Aabb, start: u32) {
        let leaf = LEAF | proxy;
        self.fat[proxy as usize] = fat;
        if self.root() == NULL {
            self.place(ROOT_SLOT, leaf, fat, 0);
            return;
        }
        let at = self.find_best_sibling(&fat, start);

        // A new parent takes the sibling's place. The slot keeps the sibling's box and
        // height until the walk up refits it, so the walk sees what changed.
        let (sibling, sibling_box, sibling_height) = (self.child_at(at), *self.box_at(at), self.height_at(at));
        let parent = self.allocate_node();
        self.nodes[parent as usize] = Node {
            boxes: [sibling_box, fat],
            children: [sibling, leaf],
            parent: at,
            heights: [sibling_height, 0],
            flags: NODE_ALLOCATED,
        };
        self.nodes[slot_node(at)].children[slot_side(at)] = parent;
        self.place(slot(parent, 0), sibling, sibling_box, sibling_height);
        self.place(slot(parent, 1), leaf, fat, 0);

        self.walk_up(parent, true);
        self.check_height();
    }

    /// Unlinks `proxy` (its parent node is freed, its old sibling takes the parent's
    /// place) and returns that sibling (`NULL` when the tree is now empty).
    pub(crate) fn remove_leaf(&mut self, proxy: u32) -> u32 {
        let at = self.proxies[proxy as usize].slot;
        let parent = slot_node(at) as u32;
        if parent == SENTINEL {
            self.nodes[SENTINEL as usize] = Node { flags: NODE_ALLOCATED, ..Node::FREE };
            return NULL;
        }
        let node = self.nodes[parent as usize];
        let other = 1 - slot_side(at);
        let sibling = node.children[other];
        self.place(node.parent, sibling, node.boxes[other], node.heights[other]);
        self.free_node(parent);
        let grand = slot_node(node.parent) as u32;
        if grand != SENTINEL {
            self.walk_up(grand, false);
        }
        sibling
    }

    /// Refits boxes and heights from `index` to the root, balancing as configured.
    /// `inserting` selects Box2D v3's SAH rotations (they only run on insertion).
    fn walk_up(&mut self, mut index: u32, inserting: bool) {
        if self.config.balancing == Balancing::Avl {
            self.walk_up_avl(index);
            return;
        }
        while index != SENTINEL {
            self.refit(index);
            if inserting {
                self.rotate_sah(index);
            }
            index = slot_node(self.nodes[index as usize].parent) as u32;
        }
    }

    /// [`DynamicTree::walk_up`] with AVL balancing (Box2D v2.4's `Balance`): at each
    /// node, when one child is more than one level taller it moves up
    /// ([`DynamicTree::rotate_up`]), else the node's slot is refit. The walk stops
    /// at the first slot whose box and height come out as they were: nothing above
    /// can change (its parent sees the same child), so the rest of the path is never
    /// read.
    fn walk_up_avl(&mut self, mut index: u32) {
        let mut first = true;
        while index != SENTINEL {
            let node = &self.nodes[index as usize];
            let at = node.parent;
            let [h1, h2] = node.heights;
            let (old_box, old_height) = (*self.box_at(at), self.height_at(at));
            if h1.abs_diff(h2) > 1 {
                self.rotate_up(index, (h2 > h1) as usize);
            } else {
                let (aabb, height) = Self::fit(node);
                let up = &mut self.nodes[slot_node(at)];
                up.boxes[slot_side(at)] = aabb;
                up.heights[slot_side(at)] = height;
            }
            if !first && self.height_at(at) == old_height && *self.box_at(at) == old_box {
                return;
            }
            first = false;
            index = slot_node(at) as u32;
        }
    }

    /// Sets the box and height in `index`'s slot from its children, and (for
    /// [`Balancing::SahRotate`]) keeps "an enlarged node has enlarged ancestors" true
    /// through insertions and rotations, so `rebuild` reaches every enlarged node
    /// from the root.
    fn refit(&mut self, index: u32) {
        let node = &self.nodes[index as usize];
        let (aabb, height) = Self::fit(node);
        let at = node.parent;
        let enlarged = node
            .children
            .iter()
            .filter(|&&c| !is_leaf(c))
            .fold(0, |f, &c| f | (self.nodes[c as usize].flags & NODE_ENLARGED));
        self.nodes[index as usize].flags |= enlarged;
        let up = &mut self.nodes[slot_node(at)];
        up.boxes[slot_side(at)] = aabb;
        up.heights[slot_side(at)] = height;
    }

    /// Box2D v3's enlarge: the leaf at `leaf_slot` takes its new fat box, ancestors
    /// grow to contain it and every ancestor is marked enlarged, for the next
    /// [`DynamicTree::rebuild`].
    fn enlarge_leaf(&mut self, leaf_slot: u32, fat: Aabb) {
        let proxy = self.nodes[slot_node(leaf_slot)].children[slot_side(leaf_slot)] & !LEAF;
        self.fat[proxy as usize] = fat;
        self.nodes[slot_node(leaf_slot)].boxes[slot_side(leaf_slot)] = fat;
        let mut index = slot_node(leaf_slot) as u32;
        while index != SENTINEL {
            let node = &mut self.nodes[index as usize];
            node.flags |= NODE_ENLARGED;
            let at = node.parent;
            let changed = self.nodes[slot_node(at)].boxes[slot_side(at)].enlarge(&fat);
            index = slot_node(at) as u32;
            if !changed {
                break;
            }
        }
        while index != SENTINEL {
            let node = &mut self.nodes[index as usize];
            if node.flags & NODE_ENLARGED != 0 {
                break; // this ancestor and all above were marked by an earlier escape
            }
            node.flags |= NODE_ENLARGED;
            index = slot_node(node.parent) as u32;
        }
    }

    /// If the height bound is exceeded (a pathological insertion order in the SAH
    /// mode), rebuild everything so the fixed stacks stay large enough.
    fn check_height(&mut self) {
        if self.height_at(ROOT_SLOT) > MAX_HEIGHT {
            self.rebuild_full();
        }
    }

    // ---- balancing ---------------------------------------------------------------

    /// Moves the child on `side` of node `a` (an internal node, the taller child)
    /// into `a`'s slot; `a` keeps its other child and takes the shorter child of the
    /// one that moved up, which keeps the taller one.
    fn rotate_up(&mut self, a: u32, side: usize) {
        let at = self.nodes[a as usize].parent;
        let up = self.nodes[a as usize].children[side];
        let u = self.nodes[up as usize];
        let (keep, give) = if u.heights[0] > u.heights[1] { (0, 1) } else { (1, 0) };
        self.place(slot(a, side), u.children[give], u.boxes[give], u.heights[give]);
        let (a_box, a_height) = Self::fit(&self.nodes[a as usize]);
        self.place(slot(up, 0), a, a_box, a_height);
        self.place(slot(up, 1), u.children[keep], u.boxes[keep], u.heights[keep]);
        let (up_box, up_height) = Self::fit(&self.nodes[up as usize]);
        self.place(at, up, up_box, up_height);
    }

    /// Box2D v3's rotation at `ia`: try swapping a child with a grandchild (or two
    /// grandchildren) and keep the swap only if it lowers the summed area of the
    /// internal nodes below `ia`.
    fn rotate_sah(&mut self, ia: u32) {
        let a = self.nodes[ia as usize];
        if a.heights == [0, 0] {
            return;
        }
        let [ib, ic] = a.children;
        let [box_b, box_c] = a.boxes;
        let (sb, sc) = (slot(ia, 0), slot(ia, 1));
        let union_area = |x: &Aabb, y: &Aabb| x.union(y).area();

        // Candidate swaps of slots (x, y) and the resulting cost of the internal
        // nodes B and C.
        let mut best: Option<(u32, u32)> = None;
        let mut best_cost;
        let mut consider = |candidates: &[(u32, u32, f32)], best_cost: &mut f32| {
            for &(x, y, cost) in candidates {
                if cost < *best_cost {
                    *best_cost = cost;
                    best = Some((x, y));
                }
            }
        };
        if is_leaf(ib) {
            // C is internal with children F, G.
            let [bf, bg] = self.nodes[ic as usize].boxes;
            let (sf, sg) = (slot(ic, 0), slot(ic, 1));
            best_cost = box_c.area();
            consider(&[(sb, sf, union_area(&box_b, &bg)), (sb, sg, union_area(&box_b, &bf))], &mut best_cost);
        } else if is_leaf(ic) {
            let [bd, be] = self.nodes[ib as usize].boxes;
            let (sd, se) = (slot(ib, 0), slot(ib, 1));
            best_cost = box_b.area();
            consider(&[(sc, sd, union_area(&box_c, &be)), (sc, se, union_area(&box_c, &bd))], &mut best_cost);
        } else {
            let [bd, be] = self.nodes[ib as usize].boxes;
            let [bf, bg] = self.nodes[ic as usize].boxes;
            let (sd, se, sf, sg) = (slot(ib, 0), slot(ib, 1), slot(ic, 0), slot(ic, 1));
            let (area_b, area_c) = (box_b.area(), box_c.area());
            best_cost = area_b + area_c;
            consider(
                &[
                    (sb, sf, area_b + union_area(&box_b, &bg)),
                    (sb, sg, area_b + union_area(&box_b, &bf)),
                    (sc, sd, area_c + union_area(&box_c, &be)),
                    (sc, se, area_c + union_area(&box_c, &bd)),
                    (sd, sf, union_area(&bf, &be) + union_area(&bd, &bg)),
                    (sd, sg, union_area(&bg, &be) + union_area(&bf, &bd)),
                ],
                &mut best_cost,
            );
        }
        if let Some((x, y)) = best {
            self.swap_slots(x, y);
            for i in [ib, ic] {
                if !is_leaf(i) {
                    self.refit(i);
                }
            }
            self.refit(ia);
        }
    }

    /// Exchanges the subtrees at two slots (neither inside the other), boxes and
    /// heights with them.
    fn swap_slots(&mut self, x: u32, y: u32) {
        let (cx, bx, hx) = (self.child_at(x), *self.box_at(x), self.height_at(x));
        let (cy, by, hy) = (self.child_at(y), *self.box_at(y), self.height_at(y));
        self.place(x, cy, by, hy);
        self.place(y, cx, bx, hx);
    }

    /// Checks every structural invariant; panics with a description on violation.
    /// For tests (O(n)).
    pub fn validate(&self) {
        let sentinel = &self.nodes[SENTINEL as usize];
        assert_eq!(sentinel.flags, NODE_ALLOCATED, "sentinel flags");
        assert_eq!((sentinel.children[1], sentinel.heights[1]), (NULL, 0), "the sentinel's second slot is used");
        let (mut internal, mut leaves) = (0usize, 0usize);
        if self.root() == NULL {
            assert_eq!(self.height(), 0, "an empty tree has a height");
        } else {
            let mut stack = vec![ROOT_SLOT];
            while let Some(at) = stack.pop() {
                let (child, aabb, height) = (self.child_at(at), self.box_at(at), self.height_at(at));
                if is_leaf(child) {
                    let p = self.proxies.get((child & !LEAF) as usize).expect("leaf names no proxy");
                    assert!(p.flags & PROXY_ALLOCATED != 0, "slot {at} holds a free proxy");
                    assert_eq!(p.slot, at, "proxy {} has a wrong slot", child & !LEAF);
                    assert_eq!(height, 0, "leaf at slot {at} has a height");
                    assert_eq!(self.fat[(child & !LEAF) as usize], *aabb, "proxy {}'s fat box", child & !LEAF);
                    leaves += 1;
                    continue;
                }
                internal += 1;
                let n = &self.nodes[child as usize];
                assert!(n.flags & NODE_ALLOCATED != 0, "node {child} reachable but free");
                assert_eq!(n.parent, at, "node {child} has a wrong parent slot");
                assert_eq!(height, 1 + n.heights[0].max(n.heights[1]), "height of {child}");
                assert!(aabb.contains(&n.boxes[0]) && aabb.contains(&n.boxes[1]), "box of {child} misses a child");
                let parent = slot_node(at);
                if n.flags & NODE_ENLARGED != 0 && parent != SENTINEL as usize {
                    assert!(self.nodes[parent].flags & NODE_ENLARGED != 0, "enlarged {child} under a plain node");
                }
                stack.extend([slot(child, 0), slot(child, 1)]);
            }
        }
        assert_eq!(leaves, self.proxy_count as usize, "leaf count");
        let free = count_free(&self.nodes, self.free_nodes, |n| (n.parent, n.flags));
        assert_eq!(1 + internal + free, self.nodes.len(), "nodes neither reachable nor free");
        let free = count_free(&self.proxies, self.free_proxies, |p| (p.slot, p.flags));
        assert_eq!(leaves + free, self.proxies.len(), "proxies neither live nor free");
        assert_eq!(self.fat.len(), self.proxies.len(), "fat boxes and proxies");
    }
}
