//! Islands and sleep.
//!
//! After each step's solve, the awake dynamic bodies are joined into islands by
//! union-find over the touching constraints between two dynamic bodies (static,
//! kinematic and terrain contacts do not join islands). An island falls asleep when
//! every body in it allows sleep and has stayed slower than the sleep threshold for
//! `time_to_sleep`, and it touches no moving kinematic body.
//!
//! A sleeping island becomes a [`SleepGroup`]: its bodies move to the resting set
//! (their proxies are flagged sleeping, so the broadphase stops pairing them with
//! each other) and its constraints are stored with their impulses. Because nothing in
//! the group moves, the stored constraints stay exact: when an awake body touches a
//! group mid-step, the whole group wakes and its constraints rejoin that step's solve
//! at once, warm-started. A group woken between steps (an API call, a terrain edit)
//! drops them instead, and the next narrowphase recomputes them.
//!
//! Building islands every step costs a union-find pass over the awake constraints
//! (Jolt also rebuilds its islands every step); it replaces Box2D v3's persistent
//! islands and their lazy splitting with something shorter and just as deterministic.

use super::body::BodyId;
use super::contact_solver::{Constraint, NONE};
use crate::codec::{Codec, Corrupt, Reader, Writer};

/// A sleeping island.
#[derive(Clone, Debug, Default)]
pub(crate) struct SleepGroup {
    pub bodies: Vec<BodyId>,
    pub constraints: Vec<Constraint>,
}

/// The sleeping groups and the union-find scratch.
#[derive(Clone, Debug, Default)]
pub(crate) struct Islands {
    groups: Vec<SleepGroup>,
    free: Vec<u32>,
    /// Group of each body slot (`NONE` when awake or static).
    group_of: Vec<u32>,
    pub parent: Vec<u32>,
    /// Per island root: may it sleep.
    pub may_sleep: Vec<bool>,
    /// Per island root: its group this step (`NONE` before the first body).
    pub root_group: Vec<u32>,
    /// Emptied groups past the end of `groups`, kept for their memory (not state:
    /// see [`Islands::copy_from`]).
    spare: Vec<SleepGroup>,
}

crate::codec::fields!(SleepGroup { bodies, constraints });
/// Read as [`Islands::copy_from`] copies: groups past the count read go to the spare
/// list, and new ones come from it, so a decode keeps the groups' memory.
impl Codec for Islands {
    fn put(&self, w: &mut Writer) {
        self.groups.put(w);
        self.free.put(w);
        self.group_of.put(w);
        self.parent.put(w);
        self.may_sleep.put(w);
        self.root_group.put(w);
    }

    fn take(&mut self, r: &mut Reader) -> Result<(), Corrupt> {
        let n = r.count()?;
        self.resize_groups(n);
        for group in &mut self.groups {
            group.take(r)?;
        }
        self.free.take(r)?;
        self.group_of.take(r)?;
        self.parent.take(r)?;
        self.may_sleep.take(r)?;
        self.root_group.take(r)
    }
}

impl Islands {
    /// Writes everything but the sleeping groups (an awake-only snapshot: see
    /// [`Islands::put_groups`]).
    pub fn put_without_groups(&self, w: &mut Writer) {
        self.free.put(w);
        self.group_of.put(w);
        self.parent.put(w);
        self.may_sleep.put(w);
        self.root_group.put(w);
    }

    /// Writes the sleeping groups: with the resting bodies, what an awake-only
    /// snapshot leaves out and names by a checksum.
    pub fn put_groups(&self, w: &mut Writer) {
        self.groups.put(w);
    }

    /// Reads what [`Islands::put_without_groups`] wrote, the groups copied from `from`.
    pub fn take_without_groups(&mut self, r: &mut Reader, from: &Islands) -> Result<(), Corrupt> {
        self.resize_groups(from.groups.len());
        for (to, from) in self.groups.iter_mut().zip(&from.groups) {
            to.bodies.clone_from(&from.bodies);
            to.constraints.clone_from(&from.constraints);
        }
        self.free.take(r)?;
        self.group_of.take(r)?;
        self.parent.take(r)?;
        self.may_sleep.take(r)?;
        self.root_group.take(r)
    }

    pub fn group_of(&self, slot: u32) -> u32 {
        self.group_of.get(slot as usize).copied().unwrap_or(NONE)
    }

    /// Number of sleeping groups.
    pub fn group_count(&self) -> usize {
        self.groups.len() - self.free.len()
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

    /// Becomes a copy of `other` in the memory it has: each group's lists copied
    /// into the group of that index, groups past `other`'s kept aside for later
    /// groups. A rollback that restores islands this way leaves the sleep stage the
    /// capacity it grew, as a straight run has it.
    pub fn copy_from(&mut self, other: &Islands) {
        self.resize_groups(other.groups.len());
        for (to, from) in self.groups.iter_mut().zip(&other.groups) {
            to.bodies.clone_from(&from.bodies);
            to.constraints.clone_from(&from.constraints);
        }
        self.free.clone_from(&other.free);
        self.group_of.clone_from(&other.group_of);
        self.parent.clone_from(&other.parent);
        self.may_sleep.clone_from(&other.may_sleep);
        self.root_group.clone_from(&other.root_group);
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
        let group = &mut self.groups[g as usize];
        for &id in &group.bodies {
            self.group_of[id.index as usize] = NONE;
            bodies(id);
        }
        group.bodies.clear();
        group.constraints.clear();
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

    /// Resets the union-find over `n` rows.
    pub fn begin(&mut self, n: usize) {
        self.parent.clear();
        self.parent.extend(0..n as u32);
        self.may_sleep.clear();
        self.may_sleep.resize(n, true);
        self.root_group.clear();
        self.root_group.resize(n, NONE);
    }

    pub fn find(&mut self, mut x: u32) -> u32 {
        while self.parent[x as usize] != x {
            let up = self.parent[self.parent[x as usize] as usize];
            self.parent[x as usize] = up;
            x = up;
        }
        x
    }

    /// Joins two rows; the smaller root wins, so roots do not depend on join order.
    pub fn union(&mut self, a: u32, b: u32) {
        let (ra, rb) = (self.find(a), self.find(b));
        if ra != rb {
            let (lo, hi) = if ra < rb { (ra, rb) } else { (rb, ra) };
            self.parent[hi as usize] = lo;
        }
    }
}
