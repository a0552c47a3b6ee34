//! Stable handles over a dense array: the tracer's meshes and instances live packed in
//! the arrays the GPU reads (a removal moves another entry into the hole), while the
//! program holds a [`SlotId`] that stays valid until its own removal.
//!
//! ```text
//!  SlotId { slot, generation } --slots[slot]--> dense index --ids[dense]--> SlotId
//! ```
//!
//! Removing bumps the slot's generation, so an old id is refused, never resolved to
//! the entry that reuses the slot (the rule of every handle in Kiln,
//! docs/ARCHITECTURE.md). Freed slots are reused lowest first, so a program that adds
//! and removes in a steady pattern keeps the table's size flat.

/// A handle to a mesh or an instance of a tracer; see the module docs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SlotId {
    pub slot: u32,
    pub generation: u32,
}

/// A slot's state: its generation and, while live, its dense index.
#[derive(Clone, Copy, Debug)]
struct Slot {
    generation: u32,
    dense: Option<u32>,
}

/// The table of one kind of handle; see the module docs.
#[derive(Clone, Debug, Default)]
pub struct Slots {
    slots: Vec<Slot>,
    /// Free slots, kept sorted descending so `pop` takes the lowest.
    free: Vec<u32>,
    /// The id of each dense entry.
    ids: Vec<SlotId>,
}

impl Slots {
    /// Live entries.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// Slots ever issued (live and free): the table's size.
    pub fn capacity(&self) -> usize {
        self.slots.len()
    }

    /// Issues an id for a new entry appended at dense index `len()`.
    pub fn push(&mut self) -> SlotId {
        let dense = Some(self.ids.len() as u32);
        let id = match self.free.pop() {
            Some(slot) => {
                let entry = &mut self.slots[slot as usize];
                entry.dense = dense;
                SlotId { slot, generation: entry.generation }
            }
            None => {
                self.slots.push(Slot { generation: 1, dense });
                SlotId { slot: self.slots.len() as u32 - 1, generation: 1 }
            }
        };
        self.ids.push(id);
        id
    }

    /// The dense index of a live id; `None` for a removed or never-issued one.
    pub fn dense(&self, id: SlotId) -> Option<u32> {
        let entry = self.slots.get(id.slot as usize)?;
        if entry.generation == id.generation {
            entry.dense
        } else {
            None
        }
    }

    /// The id of dense entry `dense`.
    pub fn id(&self, dense: u32) -> Option<SlotId> {
        self.ids.get(dense as usize).copied()
    }

    /// Every live id, in dense order.
    pub fn ids(&self) -> &[SlotId] {
        &self.ids
    }

    /// Removes `id` as the dense array does with `swap_remove`: the last entry moves
    /// into its place. Returns the freed dense index, or `None` (nothing changed)
    /// when `id` is not live.
    pub fn swap_remove(&mut self, id: SlotId) -> Option<u32> {
        let dense = self.dense(id)?;
        self.ids.swap_remove(dense as usize);
        if let Some(moved) = self.ids.get(dense as usize) {
            self.slots[moved.slot as usize].dense = Some(dense);
        }
        self.free_slot(id.slot);
        Some(dense)
    }

    /// Removes `id` as the dense array does with `remove`: every later entry moves
    /// down by one. Returns the freed dense index, or `None` when `id` is not live.
    pub fn remove(&mut self, id: SlotId) -> Option<u32> {
        let dense = self.dense(id)?;
        self.ids.remove(dense as usize);
        for (i, moved) in self.ids.iter().enumerate().skip(dense as usize) {
            self.slots[moved.slot as usize].dense = Some(i as u32);
        }
        self.free_slot(id.slot);
        Some(dense)
    }

    fn free_slot(&mut self, slot: u32) {
        let entry = &mut self.slots[slot as usize];
        entry.dense = None;
        // A slot whose generation would wrap is retired for good.
        if let Some(next) = entry.generation.checked_add(1) {
            entry.generation = next;
            let at = self.free.partition_point(|&s| s > slot);
            self.free.insert(at, slot);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_follow_their_entries_and_removed_ids_are_refused() {
        let mut slots = Slots::default();
        let ids: Vec<SlotId> = (0..5).map(|_| slots.push()).collect();
        // [0 1 2 3 4] -> swap_remove(1) -> [0 4 2 3]
        assert_eq!(slots.swap_remove(ids[1]), Some(1));
        assert_eq!(slots.dense(ids[4]), Some(1));
        assert_eq!(slots.dense(ids[1]), None);
        assert_eq!(slots.swap_remove(ids[1]), None, "a second removal changes nothing");
        // [0 4 2 3] -> remove(0) -> [4 2 3]
        assert_eq!(slots.remove(ids[0]), Some(0));
        assert_eq!(slots.ids(), &[ids[4], ids[2], ids[3]]);
        for (dense, id) in slots.ids().iter().enumerate() {
            assert_eq!(slots.dense(*id), Some(dense as u32));
        }
        // The lowest freed slot is reused, under a new generation.
        let again = slots.push();
        assert_eq!((again.slot, again.generation), (0, 2));
        assert_eq!(slots.dense(ids[0]), None, "the old id does not reach the new entry");
        assert_eq!(slots.dense(again), Some(3));
        assert_eq!(slots.dense(SlotId { slot: 99, generation: 1 }), None);
    }

    #[test]
    fn add_remove_cycles_keep_the_table_flat() {
        let mut slots = Slots::default();
        let keep: Vec<SlotId> = (0..10).map(|_| slots.push()).collect();
        for _ in 0..10_000 {
            let a = slots.push();
            let b = slots.push();
            slots.swap_remove(a).unwrap();
            slots.remove(b).unwrap();
        }
        assert_eq!(slots.capacity(), 12);
        assert!(keep.iter().all(|id| slots.dense(*id).is_some()));
    }
}
