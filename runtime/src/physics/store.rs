//! Where contact constraints live, from the step whose narrowphase makes one to the
//! step that drops it.
//!
//! A pair that has hardly moved keeps its constraint from one step to the next and the
//! narrowphase renews it where it is (`narrow::reuse_manifolds`): in a resting stack
//! nineteen pairs in twenty do, and copying each 384-byte constraint into a new buffer
//! every step (the way before) wrote as many bytes as the solver's bundles hold.
//! Fresh constraints come from the narrowphase jobs' own buffers and are copied in
//! once; constraints of pairs that stopped touching or went to sleep give their slots
//! back. Slots live in fixed pages, so a constraint's address holds for as long as it
//! does (the step's [`ConstraintTable`](super::contact_solver::ConstraintTable) holds
//! addresses), and growing allocates a page only when every slot is taken: a scene's
//! steady state allocates nothing.
//!
//! Which slot a constraint gets never changes a result: the solver reaches
//! constraints through the table, in table order. Slots are handed out and taken back
//! on one thread, in a fixed order, so the layout is the same on every run anyway.

use std::mem::MaybeUninit;
use std::ptr::NonNull;

use super::contact_solver::{Constraint, ConstraintTable};
use crate::codec::{Codec, Corrupt, Reader, TakeNew, Writer};

/// Constraints per page (384 KiB).
const PAGE: usize = 1024;

#[derive(Debug, Default)]
pub(crate) struct ConstraintStore {
    /// Pages of slots, written when handed out (a new page is not initialised: the
    /// first step of a large scene hands out thousands at once).
    pages: Vec<Box<[MaybeUninit<Constraint>]>>,
    /// Each page's address and number, in address order (a release finds its page
    /// by a binary search).
    bases: Vec<(usize, u32)>,
    /// Free slots, the most recently freed last (taken first: its lines are the
    /// likeliest still cached).
    free: Vec<u32>,
}

// SAFETY: the pages are owned; the table that points into them is the one way to
// reach a constraint from another thread, under its own contract.
unsafe impl Send for ConstraintStore {}
// SAFETY: as for `Send`.
unsafe impl Sync for ConstraintStore {}

/// A copy of every slot in pages of its own: a table of the original's addresses is
/// no table of the copy's (see [`ConstraintStore::slots`], [`ConstraintStore::address`]).
impl Clone for ConstraintStore {
    fn clone(&self) -> ConstraintStore {
        let pages = self.pages.clone();
        let mut bases: Vec<(usize, u32)> =
            pages.iter().enumerate().map(|(page, p)| (p.as_ptr() as usize, page as u32)).collect();
        bases.sort_unstable();
        ConstraintStore { pages, bases, free: self.free.clone() }
    }

    /// Copies into the pages this store has (new ones only past them), so a
    /// rollback loop restoring stores of one size allocates nothing.
    fn clone_from(&mut self, source: &ConstraintStore) {
        self.set_page_count(source.pages.len());
        for (page, from) in self.pages.iter_mut().zip(&source.pages) {
            page.copy_from_slice(from);
        }
        self.free.clone_from(&source.free);
    }
}

impl ConstraintStore {
    /// Keeps the first `n` pages and makes new ones past them, re-indexing.
    fn set_page_count(&mut self, n: usize) {
        self.pages.truncate(n);
        while self.pages.len() < n {
            self.pages.push(Box::new_uninit_slice(PAGE));
        }
        self.bases.clear();
        self.bases.extend(self.pages.iter().enumerate().map(|(page, p)| (p.as_ptr() as usize, page as u32)));
        self.bases.sort_unstable();
    }

    /// Writes the store and the slot lists of its two tables: the page count, the
    /// free list, both lists, then the constraint of every listed slot in list order.
    /// The free slots' contents are not state.
    pub fn put_with_tables(&self, tables: [&[u32]; 2], w: &mut Writer) {
        (self.pages.len() as u32).put(w);
        self.free.put(w);
        for list in tables {
            (list.len() as u32).put(w);
            list.iter().for_each(|slot| slot.put(w));
        }
        for &slot in tables.iter().flat_map(|t| t.iter()) {
            // SAFETY: a slot a table holds is live, hence written.
            unsafe { self.pages[slot as usize / PAGE][slot as usize % PAGE].assume_init_ref() }.put(w);
        }
    }

    /// Reads what [`ConstraintStore::put_with_tables`] wrote into this store and the
    /// two lists. Refused unless every free and listed slot is in range, no slot is
    /// both, and no slot is listed or freed twice (`seen` is scratch).
    pub fn take_with_tables(
        &mut self,
        tables: [&mut Vec<u32>; 2],
        seen: &mut Vec<u64>,
        r: &mut Reader,
    ) -> Result<(), Corrupt> {
        let pages = u32::take_new(r)? as usize;
        if pages > r.remaining() {
            return Err(Corrupt);
        }
        let mut free = std::mem::take(&mut self.free);
        let read = free.take(r);
        self.free = free;
        read?;
        let [a, b] = tables;
        a.take(r)?;
        b.take(r)?;
        let slots = pages * PAGE;
        seen.clear();
        seen.resize(slots.div_ceil(64), 0);
        for &slot in self.free.iter().chain(a.iter()).chain(b.iter()) {
            let s = slot as usize;
            if s >= slots || seen[s / 64] & 1 << (s % 64) != 0 {
                return Err(Corrupt);
            }
            seen[s / 64] |= 1 << (s % 64);
        }
        self.set_page_count(pages);
        for &slot in a.iter().chain(b.iter()) {
            let c = Constraint::take_new(r)?;
            self.pages[slot as usize / PAGE][slot as usize % PAGE].write(c);
        }
        Ok(())
    }
}

impl ConstraintStore {
    /// The slots of `table`'s constraints, in table order (each must be this store's).
    pub fn slots_into(&self, table: &ConstraintTable, out: &mut Vec<u32>) {
        out.clear();
        out.extend((0..table.len()).map(|i| self.slot_of(table.at(i)).expect("a constraint of this store")));
    }

    /// The address of slot `slot`, as [`ConstraintStore::insert`] returned it.
    pub fn address(&mut self, slot: u32) -> NonNull<Constraint> {
        NonNull::from(&mut self.pages[slot as usize / PAGE][slot as usize % PAGE]).cast()
    }

    /// Slots in use.
    pub fn len(&self) -> usize {
        self.pages.len() * PAGE - self.free.len()
    }

    /// Copies `c` into a free slot (a new page when none is) and returns its
    /// address, which holds until [`ConstraintStore::release`] or the store's end.
    pub fn insert(&mut self, c: &Constraint) -> NonNull<Constraint> {
        let at = self.take();
        // SAFETY: a free slot, in bounds of its page, written through nothing else.
        unsafe { at.as_ptr().write(*c) };
        at
    }

    /// A free slot's address (a new page when none is), in the order `insert` hands
    /// slots out, for its caller to write before anything reads it: the slot may
    /// never have been written. It holds as `insert`'s does.
    pub fn take(&mut self) -> NonNull<Constraint> {
        if self.free.is_empty() {
            let page = self.pages.len();
            self.pages.push(Box::new_uninit_slice(PAGE));
            self.bases.push((self.pages[page].as_ptr() as usize, page as u32));
            self.bases.sort_unstable();
            // Taken in ascending order: a new page fills front to back.
            self.free.reserve(PAGE);
            self.free.extend((0..PAGE as u32).rev().map(|i| (page * PAGE) as u32 + i));
        }
        let slot = self.free.pop().expect("a free slot");
        NonNull::from(&mut self.pages[slot as usize / PAGE][slot as usize % PAGE]).cast()
    }

    /// The slot at `c` (a constraint has no room left to carry it: it fills six
    /// lines exactly).
    fn slot_of(&self, c: NonNull<Constraint>) -> Option<u32> {
        let at = c.as_ptr() as usize;
        let size = std::mem::size_of::<Constraint>();
        // The last page starting at or before `at`.
        let (base, page) = *self.bases.get(self.bases.partition_point(|&(base, _)| base <= at).checked_sub(1)?)?;
        (at < base + PAGE * size).then(|| page * PAGE as u32 + ((at - base) / size) as u32)
    }

    /// Gives `c`'s slot back.
    ///
    /// # Safety
    /// `c` came from [`ConstraintStore::insert`] on this store and has not been
    /// released since; nothing reads or writes it afterwards (until the slot is
    /// handed out again).
    pub unsafe fn release(&mut self, c: NonNull<Constraint>) {
        let slot = self.slot_of(c).expect("a constraint of this store");
        self.free.push(slot);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Slots keep their constraints in place while others come and go, freed slots
    /// are handed out again before a new page is made, and a page is made only when
    /// every slot is taken.
    #[test]
    fn slots_hold_their_constraints_in_place_and_are_reused() {
        let mut store = ConstraintStore::default();
        let make = |key: u64| Constraint::new(key, 0, 1, 2, 0.5, 0.0);
        let first: Vec<_> = (0..PAGE as u64).map(|k| store.insert(&make(k))).collect();
        assert_eq!((store.len(), store.pages.len()), (PAGE, 1));
        // Every second one goes; their slots come back before a second page.
        for c in first.iter().step_by(2) {
            // SAFETY: inserted above, released once, not read after.
            unsafe { store.release(*c) };
        }
        assert_eq!(store.len(), PAGE / 2);
        let again: Vec<_> = (0..PAGE as u64 / 2).map(|k| store.insert(&make(10_000 + k))).collect();
        assert_eq!((store.len(), store.pages.len()), (PAGE, 1));
        for (k, c) in first.iter().enumerate().skip(1).step_by(2) {
            // SAFETY: still live.
            assert_eq!(unsafe { c.as_ref() }.key, k as u64, "a kept constraint stays where it was");
        }
        let mut reused: Vec<_> = again.iter().map(|c| c.as_ptr()).collect();
        let mut freed: Vec<_> = first.iter().step_by(2).map(|c| c.as_ptr()).collect();
        reused.sort();
        freed.sort();
        assert_eq!(reused, freed, "the freed slots, and no others");
        store.insert(&make(1));
        assert_eq!((store.len(), store.pages.len()), (PAGE + 1, 2));
    }

    /// A constraint's slot is found from its address on any page, whatever the
    /// pages' order in memory, and an address outside every page has none.
    #[test]
    fn slots_are_found_from_addresses_on_every_page() {
        let mut store = ConstraintStore::default();
        let make = |key: u64| Constraint::new(key, 0, 1, 2, 0.5, 0.0);
        let all: Vec<_> = (0..4 * PAGE as u64 + 3).map(|k| store.insert(&make(k))).collect();
        assert_eq!(store.pages.len(), 5);
        for (k, c) in all.iter().enumerate() {
            // Pages fill front to back, in order: insert `k` took slot `k`.
            assert_eq!(store.slot_of(*c), Some(k as u32));
        }
        let outside = make(0);
        assert_eq!(store.slot_of(NonNull::from(&outside)), None);
        // Releasing from the last page and the first hands those slots out next.
        // SAFETY: inserted above, released once, not read after.
        unsafe {
            store.release(all[4 * PAGE + 1]);
            store.release(all[7]);
        }
        let (a, b) = (store.insert(&make(1)), store.insert(&make(2)));
        assert_eq!((a, b), (all[7], all[4 * PAGE + 1]), "the most recently freed first");
    }
}
