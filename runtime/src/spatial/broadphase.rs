//! The body broadphase: a [`DynamicTree`] plus a move buffer and the persistent set
//! of overlapping pairs.
//!
//! Each step, [`BroadPhase::update_pairs`] queries the tree with the fat box of every
//! proxy that moved (escaped its fat box, or was created) in parallel jobs, one output
//! buffer per chunk of the move buffer. A pair of two moved proxies is reported only by
//! the query of the larger id, a pair of two sleeping proxies or with a sensor's proxy
//! not at all, and a pair
//! already in the set is skipped, so no pair appears twice. Chunk outputs are joined in
//! chunk order and sorted by pair key: the result is the same for any worker count.
//! Pairs whose fat boxes separated are dropped in the same update, so after it the set
//! equals the list of overlapping fat-box pairs (minus sleeping-only ones).

use glam::Vec3;

use super::tree::{Balancing, DynamicTree, ProxyId, TreeConfig};
use crate::jobs::{chunk_count, chunk_range, Jobs};
use crate::math::Aabb;

/// Moved proxies per pair-finding job.
const PAIR_GRAIN: usize = 64;

/// Two overlapping proxies, `a < b`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Pair {
    pub a: ProxyId,
    pub b: ProxyId,
}

impl Pair {
    fn key(a: u32, b: u32) -> u64 {
        let (lo, hi) = if a < b { (a, b) } else { (b, a) };
        ((lo as u64) << 32) | hi as u64
    }

    /// The pair of a key from [`BroadPhase::pair_keys`].
    pub fn from_key(key: u64) -> Pair {
        Pair { a: ProxyId((key >> 32) as u32), b: ProxyId(key as u32) }
    }
}

/// See the module docs.
#[derive(Clone, Debug)]
pub struct BroadPhase {
    tree: DynamicTree,
    move_buffer: Vec<u32>,
    /// Sorted pair keys (`a << 32 | b`).
    pairs: Vec<u64>,
    /// Where each proxy's pairs as the smaller id begin: the keys with `a == p` are
    /// `pairs[first[p]..first[p + 1]]`. Scratch, rebuilt at the start of each update,
    /// so that the pair-finding jobs look a key up in a run of a few keys instead of
    /// binary-searching all of them (each search missed the cache several times).
    first: Vec<u32>,
    added: Vec<u64>,
    removed: Vec<u64>,
    chunk_pairs: Vec<Vec<u64>>,
    merge: Vec<u64>,
    /// A bit per proxy id, set for the proxies of the move buffer during an update
    /// (clear otherwise).
    moved_bits: Vec<u64>,
}

// Between updates the chunk lists, the merge buffer and the moved bits are scratch
// (the bits are clear), so a snapshot holds the rest.
crate::codec::fields!(BroadPhase { tree, move_buffer, pairs, added, removed });

impl BroadPhase {
    pub fn new(config: TreeConfig) -> BroadPhase {
        BroadPhase {
            tree: DynamicTree::new(config),
            move_buffer: Vec::new(),
            pairs: Vec::new(),
            first: Vec::new(),
            added: Vec::new(),
            removed: Vec::new(),
            chunk_pairs: Vec::new(),
            merge: Vec::new(),
            moved_bits: Vec::new(),
        }
    }

    pub fn tree(&self) -> &DynamicTree {
        &self.tree
    }

    pub fn create_proxy(&mut self, tight: &Aabb, user: u64) -> ProxyId {
        let proxy = self.tree.create_proxy(tight, user);
        self.move_buffer.push(proxy.0);
        proxy
    }

    /// Removes the proxy and, silently, every pair it was in: the owner ends those
    /// contacts itself (as Box2D does when a shape is destroyed).
    pub fn destroy_proxy(&mut self, proxy: ProxyId) {
        self.tree.destroy_proxy(proxy);
        self.pairs.retain(|&key| {
            let pair = Pair::from_key(key);
            pair.a != proxy && pair.b != proxy
        });
    }

    /// See [`DynamicTree::move_proxy`]; a proxy that escaped its fat box joins the
    /// move buffer. Returns whether it did.
    #[inline]
    pub fn move_proxy(&mut self, proxy: ProxyId, tight: &Aabb, displacement: Vec3) -> bool {
        let already = self.tree.was_moved(proxy.0);
        let moved = self.tree.move_proxy(proxy, tight, displacement);
        if moved && !already {
            self.move_buffer.push(proxy.0);
        }
        moved
    }

    pub fn set_sleeping(&mut self, proxy: ProxyId, sleeping: bool) {
        self.tree.set_sleeping(proxy, sleeping);
    }

    /// See [`DynamicTree::set_sensor`]: the proxy takes part in no pair. Call it
    /// before the next update.
    pub fn set_sensor(&mut self, proxy: ProxyId) {
        self.tree.set_sensor(proxy);
    }

    /// Proxies waiting for the next [`BroadPhase::update_pairs`].
    pub fn moved_count(&self) -> usize {
        self.move_buffer.len()
    }

    /// The per-step tree work of [`Balancing::SahRotate`] (a no-op for AVL): rebuild
    /// the enlarged part. It may run as its own task; queries stay exact without it.
    pub fn rebuild_tree(&mut self) -> usize {
        match self.tree.config().balancing {
            Balancing::SahRotate => self.tree.rebuild(),
            Balancing::Avl => 0,
        }
    }

    /// Rebuilds the tree (see [`BroadPhase::rebuild_tree`]; all of it after a bulk
    /// load, see [`DynamicTree::rebuild_if_bulk_loaded`]), then updates pairs.
    pub fn update(&mut self, jobs: Jobs) {
        if !self.tree.rebuild_if_bulk_loaded() {
            self.rebuild_tree();
        }
        self.update_pairs(jobs);
    }

    /// Finds new pairs of the moved proxies (in parallel), drops pairs whose fat boxes
    /// separated, and clears the move buffer. [`BroadPhase::added`] and
    /// [`BroadPhase::removed`] then list this update's changes.
    pub fn update_pairs(&mut self, jobs: Jobs) {
        self.added.clear();
        self.removed.clear();
        // The same proxy can be buffered twice (destroyed, its id reused, moved).
        self.move_buffer.sort_unstable();
        self.move_buffer.dedup();
        let tree = &self.tree;
        self.move_buffer.retain(|&p| tree.is_proxy(ProxyId(p)) && tree.was_moved(p));
        if self.move_buffer.is_empty() {
            // Nothing moved: no pair can have begun or ended.
            return;
        }

        index_pairs(&self.pairs, self.tree.proxy_capacity(), &mut self.first);
        // New pairs, one buffer per chunk of the move buffer.
        let chunks = chunk_count(self.move_buffer.len(), PAIR_GRAIN);
        if self.chunk_pairs.len() < chunks {
            self.chunk_pairs.resize_with(chunks, Vec::new);
        }
        let (moves, pairs) = (&self.move_buffer, Indexed { keys: &self.pairs, first: &self.first });
        jobs.for_each_mut(&mut self.chunk_pairs[..chunks], |chunk, out, _| {
            out.clear();
            let queries = &moves[chunk_range(&(0..moves.len()), PAIR_GRAIN, chunk)];
            find_new_pairs(tree, pairs, queries, out);
        });
        for out in &self.chunk_pairs[..chunks] {
            self.added.extend_from_slice(out);
        }
        self.added.sort_unstable();

        // Pairs whose fat boxes no longer overlap. A step moves few proxies (a
        // resting pyramid of 5,050 boxes: 0 to 40 of them), so whether a pair was
        // touched is read from a bit array that stays in L1, not from the proxies.
        let last = *self.move_buffer.last().expect("a moved proxy") as usize;
        if self.moved_bits.len() <= last / 64 {
            self.moved_bits.resize(last / 64 + 1, 0);
        }
        for &p in &self.move_buffer {
            self.moved_bits[p as usize / 64] |= 1 << (p % 64);
        }
        let bits = &self.moved_bits;
        let moved = |p: u32| bits.get(p as usize / 64).is_some_and(|w| w >> (p % 64) & 1 != 0);
        let removed = &mut self.removed;
        self.pairs.retain(|&key| {
            let Pair { a, b } = Pair::from_key(key);
            let keep = !(moved(a.0) || moved(b.0)) || tree.fat_aabb(a).overlaps(&tree.fat_aabb(b));
            if !keep {
                removed.push(key);
            }
            keep
        });
        for &p in &self.move_buffer {
            self.moved_bits[p as usize / 64] = 0;
        }

        // pairs = merge(pairs, added), both sorted and disjoint.
        if self.added.is_empty() {
            self.clear_moves();
            return;
        }
        self.merge.clear();
        let (mut i, mut j) = (0, 0);
        while i < self.pairs.len() && j < self.added.len() {
            if self.pairs[i] < self.added[j] {
                self.merge.push(self.pairs[i]);
                i += 1;
            } else {
                self.merge.push(self.added[j]);
                j += 1;
            }
        }
        self.merge.extend_from_slice(&self.pairs[i..]);
        self.merge.extend_from_slice(&self.added[j..]);
        std::mem::swap(&mut self.pairs, &mut self.merge);
        self.clear_moves();
    }

    /// Clears the moved flags of the move buffer's proxies, and the buffer.
    fn clear_moves(&mut self) {
        for &p in &self.move_buffer {
            self.tree.clear_moved(p);
        }
        self.move_buffer.clear();
    }

    /// Every overlapping pair, sorted.
    pub fn pairs(&self) -> impl ExactSizeIterator<Item = Pair> + '_ {
        self.pairs.iter().map(|&k| Pair::from_key(k))
    }

    /// The pairs as sorted keys `a << 32 | b` (see [`Pair::from_key`]).
    pub fn pair_keys(&self) -> &[u64] {
        &self.pairs
    }

    pub fn pair_count(&self) -> usize {
        self.pairs.len()
    }

    /// Pairs the last update added, sorted.
    pub fn added(&self) -> impl ExactSizeIterator<Item = Pair> + '_ {
        self.added.iter().map(|&k| Pair::from_key(k))
    }

    /// Pairs the last update removed (fat boxes separated), sorted.
    pub fn removed(&self) -> impl ExactSizeIterator<Item = Pair> + '_ {
        self.removed.iter().map(|&k| Pair::from_key(k))
    }
}

/// Fills `first` (see [`BroadPhase`]) for the sorted `keys` of proxies below
/// `capacity`.
fn index_pairs(keys: &[u64], capacity: usize, first: &mut Vec<u32>) {
    first.clear();
    first.resize(capacity + 1, keys.len() as u32);
    let mut at = 0;
    for (p, start) in first.iter_mut().enumerate() {
        while at < keys.len() && ((keys[at] >> 32) as usize) < p {
            at += 1;
        }
        *start = at as u32;
    }
}

/// The sorted pair keys and their index by smaller id.
#[derive(Clone, Copy)]
struct Indexed<'a> {
    keys: &'a [u64],
    first: &'a [u32],
}

impl Indexed<'_> {
    fn contains(&self, key: u64) -> bool {
        let lo = (key >> 32) as usize;
        match (self.first.get(lo), self.first.get(lo + 1)) {
            (Some(&start), Some(&end)) => self.keys[start as usize..end as usize].contains(&key),
            _ => false,
        }
    }
}

/// Appends the pairs of the moved proxies `queries` that are new and that their
/// query owns.
fn find_new_pairs(tree: &DynamicTree, pairs: Indexed, queries: &[u32], out: &mut Vec<u64>) {
    tree.query_each(
        queries.len(),
        |i| tree.fat_aabb(ProxyId(queries[i])),
        |i, p| {
            let q = queries[i];
            if p.0 == q
                || (tree.was_moved(p.0) && p.0 < q)
                || (tree.is_sleeping(ProxyId(q)) && tree.is_sleeping(p))
                || tree.is_sensor(p)
                || tree.is_sensor(ProxyId(q))
            {
                return;
            }
            let key = Pair::key(p.0, q);
            if !pairs.contains(key) {
                out.push(key);
            }
        },
    );
}
