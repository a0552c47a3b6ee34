//! Islands and sleep: persistent islands of awake bodies, sleeping groups.
//!
//! An *island* is a set of awake dynamic bodies linked, directly or through one
//! another, by touching contacts and joints. Islands persist across steps, as Box2D
//! v3's (`island.c`): a contact that begins touching between two dynamic bodies, or
//! a joint created between them, merges their islands (the smaller island's bodies
//! are relabelled and its list spliced onto the larger's, so every body names its
//! island directly); a contact that stops touching, a joint destroyed or broken and
//! a body destroyed only count a *removal* on the island. Islands are split lazily:
//! only an island that is a candidate to sleep and has counted a removal is cut into
//! the components its present contacts and joints link (a union-find over its own
//! bodies), so a pile that keeps moving pays nothing for the contacts it gains and
//! loses each step.
//!
//! An island falls asleep when every body in it allows sleep and has stayed slower
//! than the sleep threshold for `time_to_sleep`, and it touches no moving kinematic
//! body. It becomes a [`SleepGroup`]: its bodies move to the resting set (their
//! proxies are flagged sleeping, so the broadphase stops pairing them with each
//! other) and its constraints are stored with their impulses. Because nothing in the
//! group moves, the stored constraints stay exact: when an awake body touches a
//! group mid-step, the whole group wakes and its constraints rejoin that step's solve
//! at once, warm-started. A group woken between steps (an API call, a terrain edit)
//! drops them instead, and the next narrowphase recomputes them. A woken group is
//! one island again: its bodies were linked when it fell asleep, and nothing that
//! could unlink them happens while they sleep (destroying a joint or body, or moving
//! one, wakes the group first).
//!
//! Everything here is decided in a fixed order (contact events in key order, bodies
//! in row order, island ids from a free list), so islands, groups and the order of
//! bodies woken from them are the same for any worker count.

use super::body::BodyId;
use super::contact_solver::{Constraint, NONE};
use crate::codec::{Codec, Corrupt, Reader, Writer};

/// A sleeping island.
#[derive(Clone, Debug, Default)]
pub(crate) struct SleepGroup {
    pub bodies: Vec<BodyId>,
    pub constraints: Vec<Constraint>,
}

/// An island of awake dynamic bodies: a list linked through the bodies' slots, and
/// how many of its links were removed since it formed or was last split.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Island {
    head: u32,
    tail: u32,
    count: u32,
    removed: u32,
}

/// The awake islands, the sleeping groups, and the sleep stage's scratch.
#[derive(Clone, Debug, Default)]
pub(crate) struct Islands {
    groups: Vec<SleepGroup>,
    free: Vec<u32>,
    /// Group of each body slot (`NONE` when awake or static).
    group_of: Vec<u32>,
    /// Awake islands by id; ids of emptied ones are in `free_islands`.
    islands: Vec<Island>,
    free_islands: Vec<u32>,
    /// Per body slot: its island (`NONE` unless awake and dynamic), and its
    /// neighbours in the island's list.
    island_of: Vec<u32>,
    next: Vec<u32>,
    prev: Vec<u32>,
    /// Emptied groups past the end of `groups`, kept for their memory (not state:
    /// see [`Islands::copy_from`]).
    spare: Vec<SleepGroup>,
    /// The sleep stage's scratch (not state): per island, may it sleep and its new
    /// group; per body slot, the split's union-find parent.
    pub quiet: Vec<bool>,
    pub island_group: Vec<u32>,
    parent: Vec<u32>,
    /// Per body slot: the island a split gives the component rooted there.
    split_to: Vec<u32>,
    members: Vec<u32>,
}

crate::codec::fields!(SleepGroup { bodies, constraints });
crate::codec::fields!(Island { head, tail, count, removed });
/// Read as [`Islands::copy_from`] copies: groups past the count read go to the spare
/// list, and new ones come from it, so a decode keeps the groups' memory.
impl Codec for Islands {
    fn put(&self, w: &mut Writer) {
        self.groups.put(w);
        self.put_without_groups(w);
    }

    fn take(&mut self, r: &mut Reader) -> Result<(), Corrupt> {
        let n = r.count()?;
        self.resize_groups(n);
        for group in &mut self.groups {
            group.take(r)?;
        }
        self.take_rest(r)
    }
}

impl Islands {
    /// Writes everything but the sleeping groups (an awake-only snapshot: see
    /// [`Islands::put_groups`]).
    pub fn put_without_groups(&self, w: &mut Writer) {
        self.free.put(w);
        self.group_of.put(w);
        self.islands.put(w);
        self.free_islands.put(w);
        self.island_of.put(w);
        self.next.put(w);
        self.prev.put(w);
    }

    fn take_rest(&mut self, r: &mut Reader) -> Result<(), Corrupt> {
        self.free.take(r)?;
        self.group_of.take(r)?;
        self.islands.take(r)?;
        self.free_islands.take(r)?;
        self.island_of.take(r)?;
        self.next.take(r)?;
        self.prev.take(r)
    }

    /// Writes the sleeping groups: with the resting bodies, what an awake-only
    /// snapshot leaves out and names by a checksum.
    pub fn put_groups(&self, w: &mut Writer) {
        self.groups.put(w);
    }

    /// Reads what [`Islands::put_without_groups`] wrote, the groups copied from `from`.
    pub fn take_without_groups(&mut self, r: &mut Reader, from: &Islands) -> Result<(), Corrupt> {
        self.copy_groups(from);
        self.take_rest(r)
    }

    pub fn group_of(&self, slot: u32) -> u32 {
        self.group_of.get(slot as usize).copied().unwrap_or(NONE)
    }

    /// Number of sleeping groups.
    pub fn group_count(&self) -> usize {
        self.groups.len() - self.free.len()
    }

    /// Number of awake islands.
    pub fn island_count(&self) -> usize {
        self.islands.len() - self.free_islands.len()
    }

    pub fn group(&self, g: u32) -> &SleepGroup {
        &self.groups[g as usize]
    }

    /// Starts an empty group.
    pub fn new_group(&mut self) -> u32 {
        match self.free.pop() {
            Some(g) => g,
            None => {
                self.groups.push(self.spare.pop().unwrap_or_default());
                self.groups.len() as u32 - 1
            }
        }
    }

    /// `n` groups: those past it emptied into the spare list, new ones from it.
    fn resize_groups(&mut self, n: usize) {
        while self.groups.len() > n {
            let mut group = self.groups.pop().expect("a group");
            group.bodies.clear();
            group.constraints.clear();
            self.spare.push(group);
        }
        while self.groups.len() < n {
            self.groups.push(self.spare.pop().unwrap_or_default());
        }
    }

    fn copy_groups(&mut self, other: &Islands) {
        self.resize_groups(other.groups.len());
        for (to, from) in self.groups.iter_mut().zip(&other.groups) {
            to.bodies.clone_from(&from.bodies);
            to.constraints.clone_from(&from.constraints);
        }
    }

    /// Becomes a copy of `other` in the memory it has: each group's lists copied
    /// into the group of that index, groups past `other`'s kept aside for later
    /// groups. A rollback that restores islands this way leaves the sleep stage the
    /// capacity it grew, as a straight run has it.
    pub fn copy_from(&mut self, other: &Islands) {
        self.copy_groups(other);
        self.free.clone_from(&other.free);
        self.group_of.clone_from(&other.group_of);
        self.islands.clone_from(&other.islands);
        self.free_islands.clone_from(&other.free_islands);
        self.island_of.clone_from(&other.island_of);
        self.next.clone_from(&other.next);
        self.prev.clone_from(&other.prev);
    }

    pub fn add_body(&mut self, g: u32, id: BodyId) {
        if self.group_of.len() <= id.index as usize {
            self.group_of.resize(id.index as usize + 1, NONE);
        }
        self.group_of[id.index as usize] = g;
        self.groups[g as usize].bodies.push(id);
    }

    pub fn add_constraint(&mut self, g: u32, c: Constraint) {
        self.groups[g as usize].constraints.push(c);
    }

    /// Ends group `g`: its constraints (with whether both sides are the group's own
    /// bodies or fixed: static, terrain) and then its bodies are handed to the
    /// callbacks, and the group is freed (its memory is kept for the next group).
    /// Its bodies become one island again (the caller moves them to the awake set).
    pub fn dissolve(
        &mut self,
        g: u32,
        is_static: impl Fn(u32) -> bool,
        mut constraints: impl FnMut(&Constraint, bool),
        mut bodies: impl FnMut(BodyId),
    ) {
        let group = &self.groups[g as usize];
        let own = |slot: u32| slot == NONE || is_static(slot) || self.group_of.get(slot as usize) == Some(&g);
        for c in &group.constraints {
            constraints(c, own(c.body_a) && own(c.body_b));
        }
        let mut group = std::mem::take(&mut self.groups[g as usize]);
        let island = self.new_island();
        for &id in &group.bodies {
            self.group_of[id.index as usize] = NONE;
            self.append(island, id.index);
            bodies(id);
        }
        group.bodies.clear();
        group.constraints.clear();
        self.groups[g as usize] = group;
        self.free.push(g);
    }

    /// Every group that holds bodies.
    pub fn live_groups(&self, out: &mut Vec<u32>) {
        out.extend((0..self.groups.len() as u32).filter(|&g| !self.groups[g as usize].bodies.is_empty()));
    }

    /// Groups whose stored constraints name body slot `slot`.
    pub fn groups_touching(&self, slot: u32, out: &mut Vec<u32>) {
        for (g, group) in self.groups.iter().enumerate() {
            if group.constraints.iter().any(|c| c.body_a == slot || c.body_b == slot) {
                out.push(g as u32);
            }
        }
    }

    /// The island of body slot `slot` (`NONE` unless it is awake and dynamic).
    pub fn island_of(&self, slot: u32) -> u32 {
        self.island_of.get(slot as usize).copied().unwrap_or(NONE)
    }

    fn new_island(&mut self) -> u32 {
        let island = Island { head: NONE, tail: NONE, count: 0, removed: 0 };
        match self.free_islands.pop() {
            Some(i) => {
                self.islands[i as usize] = island;
                i
            }
            None => {
                self.islands.push(island);
                self.islands.len() as u32 - 1
            }
        }
    }

    /// Puts body slot `slot` at the end of island `i`'s list.
    fn append(&mut self, i: u32, slot: u32) {
        let n = slot as usize + 1;
        if self.island_of.len() < n {
            self.island_of.resize(n, NONE);
            self.next.resize(n, NONE);
            self.prev.resize(n, NONE);
        }
        let island = &mut self.islands[i as usize];
        let tail = island.tail;
        island.tail = slot;
        if tail == NONE {
            island.head = slot;
        } else {
            self.next[tail as usize] = slot;
        }
        island.count += 1;
        self.island_of[slot as usize] = i;
        self.prev[slot as usize] = tail;
        self.next[slot as usize] = NONE;
    }

    /// A new awake dynamic body: an island of its own.
    pub fn add_lone_body(&mut self, slot: u32) {
        let i = self.new_island();
        self.append(i, slot);
    }

    /// Takes body slot `slot` out of its island (a body destroyed): a removal.
    pub fn remove_body(&mut self, slot: u32) {
        let i = self.island_of(slot);
        if i == NONE {
            return;
        }
        let (prev, next) = (self.prev[slot as usize], self.next[slot as usize]);
        let island = &mut self.islands[i as usize];
        match prev {
            NONE => island.head = next,
            p => self.next[p as usize] = next,
        }
        match next {
            NONE => island.tail = prev,
            n => self.prev[n as usize] = prev,
        }
        island.count -= 1;
        island.removed += 1;
        if island.count == 0 {
            self.free_islands.push(i);
        }
        self.island_of[slot as usize] = NONE;
    }

    /// A link of body slot `slot` went (a contact stopped touching, a joint went):
    /// its island may have come apart.
    pub fn count_removal(&mut self, slot: u32) {
        let i = self.island_of(slot);
        if i != NONE {
            self.islands[i as usize].removed += 1;
        }
    }

    /// Links the islands of body slots `a` and `b` (both awake and dynamic): the
    /// smaller island's bodies join the larger (on a tie, the lower id), after its
    /// own, and its removals with them.
    pub fn link(&mut self, a: u32, b: u32) {
        let (ia, ib) = (self.island_of(a), self.island_of(b));
        if ia == ib || ia == NONE || ib == NONE {
            return;
        }
        let (ca, cb) = (self.islands[ia as usize].count, self.islands[ib as usize].count);
        let (big, small) = if ca > cb || (ca == cb && ia < ib) { (ia, ib) } else { (ib, ia) };
        let s = self.islands[small as usize];
        let mut slot = s.head;
        while slot != NONE {
            self.island_of[slot as usize] = big;
            slot = self.next[slot as usize];
        }
        let b = &mut self.islands[big as usize];
        self.next[b.tail as usize] = s.head;
        self.prev[s.head as usize] = b.tail;
        b.tail = s.tail;
        b.count += s.count;
        b.removed += s.removed;
        self.islands[small as usize] = Island { head: NONE, tail: NONE, count: 0, removed: 0 };
        self.free_islands.push(small);
    }

    /// Every live island's id.
    #[cfg(test)]
    pub fn live_islands(&self) -> impl Iterator<Item = u32> + '_ {
        (0..self.islands.len() as u32).filter(|&i| self.islands[i as usize].count > 0)
    }

    /// Island `i`'s bodies, in list order, into `out`.
    pub fn members(&self, i: u32, out: &mut Vec<u32>) {
        let mut slot = self.islands[i as usize].head;
        while slot != NONE {
            out.push(slot);
            slot = self.next[slot as usize];
        }
    }

    /// Whether island `i` counted a removal since it formed or was last split.
    pub fn needs_split(&self, i: u32) -> bool {
        self.islands[i as usize].removed > 0
    }

    /// Readies the per-island scratch: every island quiet, none in a group.
    pub fn begin_sleep_check(&mut self) {
        self.quiet.clear();
        self.quiet.resize(self.islands.len(), true);
        self.island_group.clear();
        self.island_group.resize(self.islands.len(), NONE);
    }

    /// Starts a split of the listed islands: each body its own component.
    pub fn begin_split(&mut self, islands: &[u32]) {
        if self.parent.len() < self.island_of.len() {
            self.parent.resize(self.island_of.len(), NONE);
            self.split_to.resize(self.island_of.len(), NONE);
        }
        let mut members = std::mem::take(&mut self.members);
        for &i in islands {
            members.clear();
            self.members(i, &mut members);
            for &slot in &members {
                self.parent[slot as usize] = slot;
                self.split_to[slot as usize] = NONE;
            }
        }
        self.members = members;
    }

    fn find(&mut self, mut x: u32) -> u32 {
        while self.parent[x as usize] != x {
            let up = self.parent[self.parent[x as usize] as usize];
            self.parent[x as usize] = up;
            x = up;
        }
        x
    }

    /// Joins the components of body slots `a` and `b` in a split; the smaller root
    /// wins, so roots do not depend on join order.
    pub fn split_union(&mut self, a: u32, b: u32) {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra != rb {
            let (lo, hi) = if ra < rb { (ra, rb) } else { (rb, ra) };
            self.parent[hi as usize] = lo;
        }
    }

    /// Ends the split of island `i`: its bodies, in list order, go to one island per
    /// component (the first keeps id `i`), each with no removal counted, quiet and in
    /// no group yet (the sleep check's flags).
    pub fn finish_split(&mut self, i: u32) {
        let mut members = std::mem::take(&mut self.members);
        members.clear();
        self.members(i, &mut members);
        self.islands[i as usize] = Island { head: NONE, tail: NONE, count: 0, removed: 0 };
        let mut first = true;
        for &slot in &members {
            let root = self.find(slot) as usize;
            if self.split_to[root] == NONE {
                let to = if std::mem::take(&mut first) { i } else { self.new_island() };
                self.split_to[root] = to;
                if self.quiet.len() <= to as usize {
                    self.quiet.resize(to as usize + 1, true);
                    self.island_group.resize(to as usize + 1, NONE);
                }
                (self.quiet[to as usize], self.island_group[to as usize]) = (true, NONE);
            }
            self.append(self.split_to[root], slot);
        }
        self.members = members;
    }

    /// Frees island `i`, whose bodies went to sleep.
    pub fn free_island(&mut self, i: u32) {
        let mut slot = self.islands[i as usize].head;
        while slot != NONE {
            self.island_of[slot as usize] = NONE;
            slot = self.next[slot as usize];
        }
        self.islands[i as usize] = Island { head: NONE, tail: NONE, count: 0, removed: 0 };
        self.free_islands.push(i);
    }

    /// Checks the islands' lists against `awake_dynamic` (whether a body slot is
    /// awake and dynamic); panics with a description on violation.
    pub fn validate(&self, awake_dynamic: impl Fn(u32) -> bool) {
        let mut free = vec![false; self.islands.len()];
        for &i in &self.free_islands {
            assert!(!std::mem::replace(&mut free[i as usize], true), "island {i} freed twice");
        }
        let mut seen = 0;
        for (i, island) in self.islands.iter().enumerate() {
            if free[i] {
                continue;
            }
            let (mut slot, mut prev, mut count) = (island.head, NONE, 0);
            while slot != NONE {
                assert_eq!(self.island_of[slot as usize], i as u32, "body slot {slot} in island {i}'s list");
                assert_eq!(self.prev[slot as usize], prev, "body slot {slot}: back link");
                assert!(awake_dynamic(slot), "body slot {slot} in island {i} is not awake and dynamic");
                (prev, slot) = (slot, self.next[slot as usize]);
                count += 1;
            }
            assert_eq!(island.tail, prev, "island {i}'s tail");
            assert!(count > 0 && count == island.count, "island {i} counts {} of {count} bodies", island.count);
            seen += count;
        }
        let labelled = self.island_of.iter().filter(|&&i| i != NONE).count();
        assert_eq!(labelled, seen as usize, "bodies naming an island outside its list");
    }
}
