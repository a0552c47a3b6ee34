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
//! Proxy ids are leaf node indices; they stay valid until the proxy is destroyed and
//! are reused afterwards (the owner keeps its own generation if it needs one).

use glam::{Mat4, Vec4, Vec4Swizzles};

use crate::math::Aabb;

/// "No node".
pub(crate) const NULL: u32 = u32::MAX;

/// Heights above this trigger a full rebuild, so that the fixed query stacks
/// (`STACK_SIZE`) can never overflow: a depth-first walk holds at most height + 1
/// entries.
pub(crate) const MAX_HEIGHT: u16 = 200;

/// Entries of the fixed stacks used by queries and the insertion search.
pub(crate) const STACK_SIZE: usize = 256;

/// A proxy in a [`DynamicTree`]: the index of its leaf node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ProxyId(pub u32);

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

pub(crate) const FLAG_ALLOCATED: u16 = 1;
pub(crate) const FLAG_ENLARGED: u16 = 2;
pub(crate) const FLAG_MOVED: u16 = 4;
pub(crate) const FLAG_SLEEPING: u16 = 8;

/// One tree node as walks read it: its box and children (32 bytes, two to a cache
/// line). What edits need besides lives in `DynamicTree::links`, and a proxy's user
/// value in `DynamicTree::users`, so queries and sibling searches read less memory.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Node {
    pub(crate) aabb: Aabb,
    /// `NULL` for leaves (and free nodes).
    pub(crate) child1: u32,
    pub(crate) child2: u32,
}

impl Node {
    const FREE: Node = Node { aabb: Aabb::EMPTY, child1: NULL, child2: NULL };

    pub(crate) fn is_leaf(&self) -> bool {
        self.child1 == NULL
    }
}

const _: () = assert!(std::mem::size_of::<Node>() == 32);

/// A node's parent, height and flags. For a free node `parent` links the free list.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Link {
    pub(crate) parent: u32,
    /// 0 for leaves.
    pub(crate) height: u16,
    pub(crate) flags: u16,
}

impl Link {
    const FREE: Link = Link { parent: NULL, height: 0, flags: 0 };
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
    pub(crate) nodes: Vec<Node>,
    /// Parent, height and flags of each node, indexed like `nodes`.
    pub(crate) links: Vec<Link>,
    /// The user value of each leaf, indexed like `nodes`.
    users: Vec<u64>,
    pub(crate) root: u32,
    free_list: u32,
    proxy_count: u32,
    pub(crate) config: TreeConfig,
    /// Scratch of the rebuilds, kept so steady-state rebuilds do not allocate.
    pub(crate) build: super::tree_build::BuildScratch,
}

impl DynamicTree {
    pub fn new(config: TreeConfig) -> DynamicTree {
        DynamicTree {
            nodes: Vec::new(),
            links: Vec::new(),
            users: Vec::new(),
            root: NULL,
            free_list: NULL,
            proxy_count: 0,
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

    /// Nodes allocated so far (capacity of the node pool).
    pub fn node_capacity(&self) -> usize {
        self.nodes.len()
    }

    pub fn height(&self) -> u32 {
        if self.root == NULL {
            0
        } else {
            self.links[self.root as usize].height as u32
        }
    }

    /// The fat box of `proxy`.
    pub fn fat_aabb(&self, proxy: ProxyId) -> Aabb {
        self.nodes[proxy.index()].aabb
    }

    pub fn user_data(&self, proxy: ProxyId) -> u64 {
        self.users[proxy.index()]
    }

    /// Whether `proxy` names a live proxy of this tree.
    pub fn is_proxy(&self, proxy: ProxyId) -> bool {
        self.links.get(proxy.index()).is_some_and(|l| l.flags & FLAG_ALLOCATED != 0 && l.height == 0)
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
        let leaf = self.allocate_node();
        self.nodes[leaf as usize].aabb = tight.expanded(self.config.margin);
        self.links[leaf as usize] = Link { height: 0, flags: FLAG_ALLOCATED | FLAG_MOVED, ..self.links[leaf as usize] };
        self.users[leaf as usize] = user;
        self.insert_leaf(leaf);
        self.proxy_count += 1;
        ProxyId(leaf)
    }

    pub fn destroy_proxy(&mut self, proxy: ProxyId) {
        debug_assert!(self.is_proxy(proxy));
        self.remove_leaf(proxy.0);
        self.free_node(proxy.0);
        self.proxy_count -= 1;
    }

    /// Updates `proxy` for a new tight box. Returns `true` when the tight box left the
    /// fat box and the tree changed (the proxy is then flagged as moved).
    pub fn move_proxy(&mut self, proxy: ProxyId, tight: &Aabb, displacement: glam::Vec3) -> bool {
        debug_assert!(self.is_proxy(proxy) && tight.is_valid());
        if self.nodes[proxy.index()].aabb.contains(tight) {
            return false;
        }
        let fat = self.fatten(tight, displacement);
        match self.config.balancing {
            Balancing::Avl => {
                let sibling = self.remove_leaf(proxy.0);
                self.nodes[proxy.index()].aabb = fat;
                let start = self.reinsert_start(sibling, &fat);
                self.insert_leaf_from(proxy.0, start);
            }
            Balancing::SahRotate => self.enlarge_leaf(proxy.0, fat),
        }
        self.links[proxy.index()].flags |= FLAG_MOVED;
        true
    }

    /// Marks a proxy as sleeping (or awake); pairs of two sleeping proxies are not
    /// reported by the broadphase.
    pub fn set_sleeping(&mut self, proxy: ProxyId, sleeping: bool) {
        let flags = &mut self.links[proxy.index()].flags;
        if sleeping {
            *flags |= FLAG_SLEEPING;
        } else {
            *flags &= !FLAG_SLEEPING;
        }
    }

    pub fn is_sleeping(&self, proxy: ProxyId) -> bool {
        self.links[proxy.index()].flags & FLAG_SLEEPING != 0
    }

    pub(crate) fn was_moved(&self, proxy: u32) -> bool {
        self.links[proxy as usize].flags & FLAG_MOVED != 0
    }

    pub(crate) fn clear_moved(&mut self, proxy: u32) {
        self.links[proxy as usize].flags &= !FLAG_MOVED;
    }

    /// Height, proxy count and the SAH area ratio.
    pub fn quality(&self) -> TreeQuality {
        let mut internal_area = 0.0f64;
        for (node, link) in self.nodes.iter().zip(&self.links) {
            if link.flags & FLAG_ALLOCATED != 0 && !node.is_leaf() {
                internal_area += node.aabb.area() as f64;
            }
        }
        let root_area = if self.root == NULL { 0.0 } else { self.nodes[self.root as usize].aabb.area() as f64 };
        let area_ratio = if root_area > 0.0 { (internal_area / root_area) as f32 } else { 0.0 };
        TreeQuality { height: self.height(), proxies: self.proxy_count, area_ratio }
    }

    // ---- node pool ---------------------------------------------------------------

    pub(crate) fn allocate_node(&mut self) -> u32 {
        if self.free_list == NULL {
            // Grow by doubling and thread the new nodes onto the free list.
            let old = self.nodes.len();
            let new = (old * 2).max(16);
            self.nodes.resize(new, Node::FREE);
            self.links.resize(new, Link::FREE);
            self.users.resize(new, 0);
            for i in old..new - 1 {
                self.links[i].parent = i as u32 + 1;
            }
            self.links[new - 1].parent = NULL;
            self.free_list = old as u32;
        }
        let index = self.free_list;
        self.free_list = self.links[index as usize].parent;
        self.nodes[index as usize] = Node::FREE;
        self.links[index as usize] = Link { flags: FLAG_ALLOCATED, ..Link::FREE };
        index
    }

    pub(crate) fn free_node(&mut self, index: u32) {
        self.nodes[index as usize] = Node::FREE;
        self.links[index as usize] = Link { parent: self.free_list, ..Link::FREE };
        self.free_list = index;
    }

    // ---- insertion and removal ---------------------------------------------------

    /// Finds the sibling for a new leaf with box `d` by the surface-area heuristic,
    /// with branch-and-bound pruning (Box2D v3's search). The cost of pairing with
    /// node N is area(N ∪ D) plus the growth of every ancestor of N ("inherited" cost).
    /// No descendant of N can cost less than area(D) + inherited + growth of N: the
    /// search descends into the child with the lower bound and stops as soon as
    /// neither child's bound can beat the best cost found. One path, no stack.
    fn find_best_sibling(&self, d: &Aabb, start: u32) -> u32 {
        let area_d = d.area();
        let center_d = d.center();
        let wide_d = WideBox::load(d);
        let mut index = start;
        let start_box = self.nodes[index as usize].aabb;
        let mut area_base = start_box.area();
        let mut direct_cost = start_box.union(d).area();
        let mut inherited = 0.0f32;
        let mut best = index;
        let mut best_cost = direct_cost;
        while !self.nodes[index as usize].is_leaf() {
            let node = &self.nodes[index as usize];
            let (c1, c2) = (node.child1, node.child2);
            // Cost of making `index` the sibling.
            let cost = direct_cost + inherited;
            if cost < best_cost {
                best = index;
                best_cost = cost;
            }
            inherited += direct_cost - area_base;

            // Both children's loads are issued before either result is used, and
            // the four areas come out of one four-wide computation.
            let (n1, n2) = (&self.nodes[c1 as usize], &self.nodes[c2 as usize]);
            let (w1, w2) = (WideBox::load(&n1.aabb), WideBox::load(&n2.aabb));
            let [direct1, direct2, area1, area2] =
                WideBox::areas([w1.union(wide_d), w2.union(wide_d), w1, w2]).to_array();
            let (leaf1, leaf2) = (n1.is_leaf(), n2.is_leaf());
            // A leaf child is a candidate; an internal one bounds every node below it.
            let mut probe = |child: u32, direct: f32, area: f32, leaf: bool| {
                if leaf {
                    let cost = direct + inherited;
                    if cost < best_cost {
                        best = child;
                        best_cost = cost;
                    }
                    f32::INFINITY
                } else {
                    inherited + direct + (area_d - area).min(0.0)
                }
            };
            let mut lower1 = probe(c1, direct1, area1, leaf1);
            let mut lower2 = probe(c2, direct2, area2, leaf2);
            if (leaf1 && leaf2) || (best_cost <= lower1 && best_cost <= lower2) {
                break;
            }
            if lower1 == lower2 && !leaf1 {
                // Tie: descend towards the nearer child.
                lower1 = (n1.aabb.center() - center_d).length_squared();
                lower2 = (n2.aabb.center() - center_d).length_squared();
            }
            if lower1 < lower2 && !leaf1 {
                (index, area_base, direct_cost) = (c1, area1, direct1);
            } else {
                (index, area_base, direct_cost) = (c2, area2, direct2);
            }
        }
        best
    }

    pub(crate) fn insert_leaf(&mut self, leaf: u32) {
        self.insert_leaf_from(leaf, self.root);
    }

    /// Where a moved leaf's sibling search starts: the lowest ancestor of `near` (the
    /// removed leaf's old sibling), at least `reinsert_levels` above it, whose box
    /// contains the new fat box; the root when none does. Every candidate inside
    /// that subtree shares the growth of the ancestors above it, so the search still
    /// finds the SAH-best sibling within the subtree; it only skips far-away ones.
    fn reinsert_start(&self, near: u32, fat: &Aabb) -> u32 {
        let mut index = near;
        let mut levels = 0;
        while index != NULL {
            let parent = self.links[index as usize].parent;
            if parent == NULL
                || (levels >= self.config.reinsert_levels && self.nodes[index as usize].aabb.contains(fat))
            {
                return index;
            }
            index = parent;
            levels += 1;
        }
        self.root
    }

    /// Inserts `leaf` at the SAH-best sibling inside the subtree of `start` (the root,
    /// or an ancestor of the best place, see [`DynamicTree::reinsert_start`]).
    fn insert_leaf_from(&mut self, leaf: u32, start: u32) {
        if self.root == NULL {
            self.root = leaf;
            self.links[leaf as usize].parent = NULL;
            return;
        }
        let leaf_box = self.nodes[leaf as usize].aabb;
        let sibling = self.find_best_sibling(&leaf_box, start);

        // A new parent takes the sibling's place.
        let old_parent = self.links[sibling as usize].parent;
        let new_parent = self.allocate_node();
        self.nodes[new_parent as usize] =
            Node { aabb: leaf_box.union(&self.nodes[sibling as usize].aabb), child1: sibling, child2: leaf };
        let height = self.links[sibling as usize].height + 1;
        self.links[new_parent as usize] = Link { parent: old_parent, height, ..self.links[new_parent as usize] };
        if old_parent == NULL {
            self.root = new_parent;
        } else {
            self.replace_child(old_parent, sibling, new_parent);
        }
        self.links[sibling as usize].parent = new_parent;
        self.links[leaf as usize].parent = new_parent;

        self.walk_up(self.links[leaf as usize].parent, true);
        self.check_height();
    }

    /// Unlinks `leaf` (its parent is freed) and returns its old sibling, which took
    /// the parent's place (`NULL` when the tree is now empty).
    pub(crate) fn remove_leaf(&mut self, leaf: u32) -> u32 {
        if leaf == self.root {
            self.root = NULL;
            return NULL;
        }
        let parent = self.links[leaf as usize].parent;
        let grand = self.links[parent as usize].parent;
        let p = self.nodes[parent as usize];
        let sibling = if p.child1 == leaf { p.child2 } else { p.child1 };
        self.free_node(parent);
        self.links[sibling as usize].parent = grand;
        if grand == NULL {
            self.root = sibling;
        } else {
            self.replace_child(grand, parent, sibling);
            self.walk_up(grand, false);
        }
        sibling
    }

    /// Refits boxes and heights from `index` to the root, balancing as configured.
    /// `inserting` selects Box2D v3's SAH rotations (they only run on insertion).
    ///
    /// With AVL balancing the walk stops at the first ancestor above `index` whose
    /// box and height come out unchanged: nothing above it can change either (its
    /// parent sees the same child), so the rest of the path is never read.
    fn walk_up(&mut self, mut index: u32, inserting: bool) {
        if self.config.balancing == Balancing::Avl {
            self.walk_up_avl(index);
            return;
        }
        while index != NULL {
            self.refit(index);
            if inserting {
                self.rotate_sah(index);
            }
            index = self.links[index as usize].parent;
        }
    }

    /// [`DynamicTree::walk_up`] with AVL balancing (Box2D v2.4's `Balance`): at each
    /// ancestor, when one child is more than one level taller it moves up
    /// ([`DynamicTree::rotate_up`], which refits what it moves), else the ancestor
    /// is refit; the walk stops above `index` once the subtree's box and height come
    /// out as they were.
    fn walk_up_avl(&mut self, mut index: u32) {
        let mut first = true;
        while index != NULL {
            let i = index as usize;
            let (old, old_height) = (self.nodes[i], self.links[i].height);
            let (h1, h2) = (self.links[old.child1 as usize].height, self.links[old.child2 as usize].height);
            if h1.abs_diff(h2) > 1 {
                index = if h2 > h1 {
                    self.rotate_up(index, old.child2, true)
                } else {
                    self.rotate_up(index, old.child1, false)
                };
            } else {
                let (b1, b2) = (&self.nodes[old.child1 as usize].aabb, &self.nodes[old.child2 as usize].aabb);
                self.nodes[i].aabb = WideBox::load(b1).union(WideBox::load(b2)).aabb();
                self.links[i].height = 1 + h1.max(h2);
            }
            let link = self.links[index as usize];
            if !first && link.height == old_height && self.nodes[index as usize].aabb == old.aabb {
                return;
            }
            first = false;
            index = link.parent;
        }
    }

    fn refit(&mut self, index: u32) {
        let Node { child1, child2, .. } = self.nodes[index as usize];
        let (c1, c2) = (child1 as usize, child2 as usize);
        let (b1, b2) = (&self.nodes[c1].aabb, &self.nodes[c2].aabb);
        self.nodes[index as usize].aabb = WideBox::load(b1).union(WideBox::load(b2)).aabb();
        let (l1, l2) = (self.links[c1], self.links[c2]);
        let link = &mut self.links[index as usize];
        link.height = 1 + l1.height.max(l2.height);
        // Keep "an enlarged node has enlarged ancestors" true through insertions and
        // rotations, so `rebuild` reaches every enlarged node from the root.
        link.flags |= (l1.flags | l2.flags) & FLAG_ENLARGED;
    }

    fn replace_child(&mut self, parent: u32, old: u32, new: u32) {
        let p = &mut self.nodes[parent as usize];
        if p.child1 == old {
            p.child1 = new;
        } else {
            debug_assert_eq!(p.child2, old);
            p.child2 = new;
        }
    }

    /// Box2D v3's enlarge: the leaf takes its new fat box, ancestors grow to contain
    /// it and every ancestor is marked enlarged, for the next [`DynamicTree::rebuild`].
    fn enlarge_leaf(&mut self, leaf: u32, fat: Aabb) {
        self.nodes[leaf as usize].aabb = fat;
        self.links[leaf as usize].flags |= FLAG_ENLARGED;
        let mut index = self.links[leaf as usize].parent;
        while index != NULL {
            let changed = self.nodes[index as usize].aabb.enlarge(&fat);
            let link = &mut self.links[index as usize];
            link.flags |= FLAG_ENLARGED;
            index = link.parent;
            if !changed {
                break;
            }
        }
        while index != NULL {
            let link = &mut self.links[index as usize];
            if link.flags & FLAG_ENLARGED != 0 {
                break; // this ancestor and all above were marked by an earlier escape
            }
            link.flags |= FLAG_ENLARGED;
            index = link.parent;
        }
    }

    /// If the height bound is exceeded (a pathological insertion order in the SAH
    /// mode), rebuild everything so the fixed stacks stay large enough.
    fn check_height(&mut self) {
        if self.root != NULL && self.links[self.root as usize].height > MAX_HEIGHT {
            self.rebuild_full();
        }
    }

    // ---- balancing ---------------------------------------------------------------

    /// Moves `up` (a child of `a`) into `a`'s place; `a` keeps its other child and the
    /// shorter child of `up`. `up_is_child2` says which slot of `a` `up` held.
    /// Returns `up`, the subtree's new root.
    fn rotate_up(&mut self, ia: u32, up: u32, up_is_child2: bool) -> u32 {
        let u = self.nodes[up as usize];
        let (i_f, i_g) = (u.child1, u.child2);
        let (hf, hg) = (self.links[i_f as usize].height, self.links[i_g as usize].height);
        let (keep, give) = if hf > hg { (i_f, i_g) } else { (i_g, i_f) };

        let a_parent = self.links[ia as usize].parent;
        self.nodes[up as usize].child1 = ia;
        self.nodes[up as usize].child2 = keep;
        self.links[up as usize].parent = a_parent;
        self.links[ia as usize].parent = up;
        if a_parent == NULL {
            self.root = up;
        } else {
            self.replace_child(a_parent, ia, up);
        }
        if up_is_child2 {
            self.nodes[ia as usize].child2 = give;
        } else {
            self.nodes[ia as usize].child1 = give;
        }
        self.links[give as usize].parent = ia;
        self.refit(ia);
        self.refit(up);
        up
    }

    /// Box2D v3's rotation at `ia`: try swapping a child with a grandchild (or two
    /// grandchildren) and keep the swap only if it lowers the summed area of the
    /// internal nodes below `ia`.
    fn rotate_sah(&mut self, ia: u32) {
        let a = self.nodes[ia as usize];
        if self.links[ia as usize].height < 2 {
            return;
        }
        let (ib, ic) = (a.child1, a.child2);
        let (b, c) = (self.nodes[ib as usize], self.nodes[ic as usize]);
        let area = |i: u32| self.nodes[i as usize].aabb.area();
        let union_area = |i: u32, j: u32| self.nodes[i as usize].aabb.union(&self.nodes[j as usize].aabb).area();

        // Candidate swaps (x, y) and the resulting cost of the internal nodes B and C.
        let mut best: Option<(u32, u32)> = None;
        let mut best_cost;
        if b.is_leaf() {
            // C is internal with children F, G.
            let (i_f, i_g) = (c.child1, c.child2);
            best_cost = area(ic);
            for (x, y, cost) in [(ib, i_f, union_area(ib, i_g)), (ib, i_g, union_area(ib, i_f))] {
                if cost < best_cost {
                    best_cost = cost;
                    best = Some((x, y));
                }
            }
        } else if c.is_leaf() {
            let (i_d, i_e) = (b.child1, b.child2);
            best_cost = area(ib);
            for (x, y, cost) in [(ic, i_d, union_area(ic, i_e)), (ic, i_e, union_area(ic, i_d))] {
                if cost < best_cost {
                    best_cost = cost;
                    best = Some((x, y));
                }
            }
        } else {
            let (i_d, i_e, i_f, i_g) = (b.child1, b.child2, c.child1, c.child2);
            let (area_b, area_c) = (area(ib), area(ic));
            best_cost = area_b + area_c;
            let candidates = [
                (ib, i_f, area_b + union_area(ib, i_g)),
                (ib, i_g, area_b + union_area(ib, i_f)),
                (ic, i_d, area_c + union_area(ic, i_e)),
                (ic, i_e, area_c + union_area(ic, i_d)),
                (i_d, i_f, union_area(i_f, i_e) + union_area(i_d, i_g)),
                (i_d, i_g, union_area(i_g, i_e) + union_area(i_f, i_d)),
            ];
            for (x, y, cost) in candidates {
                if cost < best_cost {
                    best_cost = cost;
                    best = Some((x, y));
                }
            }
        }
        if let Some((x, y)) = best {
            self.swap_subtrees(x, y);
            for i in [ib, ic] {
                if !self.nodes[i as usize].is_leaf() {
                    self.refit(i);
                }
            }
            self.refit(ia);
        }
    }

    /// Exchanges the places of two nodes that are not ancestors of each other.
    fn swap_subtrees(&mut self, x: u32, y: u32) {
        let (px, py) = (self.links[x as usize].parent, self.links[y as usize].parent);
        self.replace_child(px, x, y);
        // `px == py` cannot happen for the swaps above (siblings are never swapped).
        self.replace_child(py, y, x);
        self.links[x as usize].parent = py;
        self.links[y as usize].parent = px;
    }

    /// Checks every structural invariant; panics with a description on violation.
    /// For tests (O(n)).
    pub fn validate(&self) {
        let mut reachable = 0usize;
        let mut leaves = 0u32;
        if self.root != NULL {
            assert_eq!(self.links[self.root as usize].parent, NULL, "root has a parent");
            let mut stack = vec![self.root];
            while let Some(i) = stack.pop() {
                reachable += 1;
                let (n, l) = (&self.nodes[i as usize], &self.links[i as usize]);
                assert!(l.flags & FLAG_ALLOCATED != 0, "node {i} reachable but free");
                assert_eq!(n.is_leaf(), l.height == 0, "node {i}: no children but a height, or the reverse");
                if n.is_leaf() {
                    leaves += 1;
                    continue;
                }
                let (c1, c2) = (&self.nodes[n.child1 as usize], &self.nodes[n.child2 as usize]);
                let (l1, l2) = (&self.links[n.child1 as usize], &self.links[n.child2 as usize]);
                assert_eq!(l1.parent, i, "child1 of {i} has a wrong parent");
                assert_eq!(l2.parent, i, "child2 of {i} has a wrong parent");
                assert_eq!(l.height, 1 + l1.height.max(l2.height), "height of {i}");
                assert!(n.aabb.contains(&c1.aabb) && n.aabb.contains(&c2.aabb), "box of {i} misses a child");
                if (l1.flags | l2.flags) & FLAG_ENLARGED != 0 {
                    assert!(l.flags & FLAG_ENLARGED != 0, "enlarged child under a plain node {i}");
                }
                stack.extend([n.child1, n.child2]);
            }
        }
        assert_eq!(leaves, self.proxy_count, "leaf count");
        let mut free = 0usize;
        let mut i = self.free_list;
        while i != NULL {
            assert_eq!(self.links[i as usize].flags, 0, "free node {i} is flagged");
            free += 1;
            i = self.links[i as usize].parent;
        }
        assert_eq!(reachable + free, self.nodes.len(), "nodes neither reachable nor free");
    }
}
