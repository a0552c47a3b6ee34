//! Generation-checked handles: one global slot table per object kind.
//!
//! A handle is `{index + 1, generation}`; zero is the null handle. Destroying an
//! object bumps its slot's generation, so every old handle to it is detected as
//! stale, never dereferenced. Each object also gets a serial number that is never
//! reused; ids of things inside it (resources, passes) carry it, so an id from another
//! object is refused.

use std::cell::Cell;
use std::sync::{Arc, Mutex, MutexGuard, TryLockError};

use crate::abi::{Error, KILN_ERROR_INVALID_HANDLE, KILN_ERROR_INVALID_STATE};

struct Slot<T> {
    generation: u32,
    entry: Option<Arc<Mutex<T>>>,
}

struct Table<T> {
    slots: Vec<Slot<T>>,
    free: Vec<u32>,
    next_serial: u32,
}

/// The slot table of one object kind (`kind` names it in error messages).
pub(crate) struct HandleTable<T> {
    kind: &'static str,
    table: Mutex<Table<T>>,
}

impl<T> HandleTable<T> {
    pub(crate) const fn new(kind: &'static str) -> HandleTable<T> {
        HandleTable { kind, table: Mutex::new(Table { slots: Vec::new(), free: Vec::new(), next_serial: 1 }) }
    }

    fn table(&self) -> MutexGuard<'_, Table<T>> {
        self.table.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A fresh serial number for a new object.
    pub(crate) fn next_serial(&self) -> u32 {
        let mut table = self.table();
        let serial = table.next_serial;
        table.next_serial = table.next_serial.checked_add(1).unwrap_or(1);
        serial
    }

    /// Stores `entry`; returns its `(index + 1, generation)`.
    pub(crate) fn insert(&self, entry: T) -> (u32, u32) {
        let mut table = self.table();
        let entry = Some(Arc::new(Mutex::new(entry)));
        let index = match table.free.pop() {
            Some(index) => {
                table.slots[index as usize].entry = entry;
                index
            }
            None => {
                table.slots.push(Slot { generation: 1, entry });
                table.slots.len() as u32 - 1
            }
        };
        (index + 1, table.slots[index as usize].generation)
    }

    fn invalid(&self, index1: u32, generation: u32) -> Error {
        let what = if index1 == 0 { "the null handle" } else { "stale or was never issued" };
        Error::new(KILN_ERROR_INVALID_HANDLE, format!("{} handle {{{index1}, {generation}}} is {what}", self.kind))
    }

    fn busy(&self) -> Error {
        Error::new(
            KILN_ERROR_INVALID_STATE,
            format!(
                "the {} is in use by another call (a re-entrant call from one of its own callbacks, or two threads at once)",
                self.kind
            ),
        )
    }

    fn lookup(&self, index1: u32, generation: u32) -> Result<Arc<Mutex<T>>, Error> {
        let table = self.table();
        let slot = index1
            .checked_sub(1)
            .and_then(|i| table.slots.get(i as usize))
            .ok_or_else(|| self.invalid(index1, generation))?;
        match &slot.entry {
            Some(entry) if slot.generation == generation => Ok(Arc::clone(entry)),
            _ => Err(self.invalid(index1, generation)),
        }
    }

    pub(crate) fn is_valid(&self, index1: u32, generation: u32) -> bool {
        self.lookup(index1, generation).is_ok()
    }

    /// Removes an object from the table and returns it (dropped by the caller,
    /// outside the table lock). Old handles become stale at once.
    pub(crate) fn remove(&self, index1: u32, generation: u32) -> Result<Arc<Mutex<T>>, Error> {
        let entry = self.lookup(index1, generation)?;
        // Poisoned (a call on it panicked, was caught and reported as
        // KILN_ERROR_INTERNAL): not busy, so it can still be destroyed.
        if let Err(TryLockError::WouldBlock) = entry.try_lock() {
            return Err(self.busy());
        }
        let mut table = self.table();
        let index = index1 - 1;
        let slot = &mut table.slots[index as usize];
        slot.entry = None;
        slot.generation = slot.generation.wrapping_add(1).max(1);
        table.free.push(index);
        Ok(entry)
    }

    /// Runs a short read `f` on the object behind the handle, waiting for the lock:
    /// for immutable objects (shapes) shared by concurrent calls. `f` must not call
    /// back into Kiln.
    pub(crate) fn read<R>(&self, index1: u32, generation: u32, f: impl FnOnce(&T) -> R) -> Result<R, Error> {
        self.with_wait(index1, generation, |entry| Ok(f(entry)))
    }

    /// Runs `f` on the object behind the handle. Never blocks: an object that is busy
    /// (for example a callback calling back into its own runtime) gives an error.
    pub(crate) fn with<R>(
        &self,
        index1: u32,
        generation: u32,
        f: impl FnOnce(&mut T) -> Result<R, Error>,
    ) -> Result<R, Error> {
        let entry = self.lookup(index1, generation)?;
        let mut guard = match entry.try_lock() {
            Ok(guard) => guard,
            Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
            Err(TryLockError::WouldBlock) => return Err(self.busy()),
        };
        let _held = Held::push(Arc::as_ptr(&entry) as usize);
        f(&mut guard)
    }

    /// Runs a short `f` on the object behind the handle, waiting while another thread
    /// is inside it; busy only when this thread is (a call from one of the object's
    /// own callbacks), where waiting would never end. For reads that must not answer
    /// "busy" merely because another thread is working (`kiln_body_is_valid`, shared
    /// shapes), and for calls that hold no other object's lock (so no cycle can form).
    pub(crate) fn with_wait<R>(
        &self,
        index1: u32,
        generation: u32,
        f: impl FnOnce(&mut T) -> Result<R, Error>,
    ) -> Result<R, Error> {
        let entry = self.lookup(index1, generation)?;
        if Held::contains(Arc::as_ptr(&entry) as usize) {
            return Err(self.busy());
        }
        let mut guard = entry.lock().unwrap_or_else(|p| p.into_inner());
        let _held = Held::push(Arc::as_ptr(&entry) as usize);
        f(&mut guard)
    }
}

/// Most objects one thread holds at once through `HandleTable::with` (a step holds
/// its world, its runtime and the world's terrain; callbacks nest a few more).
const MAX_HELD: usize = 16;

thread_local! {
    /// The entries this thread is inside, innermost last (no allocation: a fixed array).
    static HELD: Cell<([usize; MAX_HELD], usize)> = const { Cell::new(([0; MAX_HELD], 0)) };
}

/// Marks one entry as held by this thread for the guard's life.
struct Held;

impl Held {
    fn push(entry: usize) -> Held {
        HELD.with(|held| {
            let (mut entries, count) = held.get();
            if count < MAX_HELD {
                entries[count] = entry;
            }
            held.set((entries, count + 1));
        });
        Held
    }

    fn contains(entry: usize) -> bool {
        HELD.with(|held| {
            let (entries, count) = held.get();
            entries[..count.min(MAX_HELD)].contains(&entry)
        })
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        HELD.with(|held| {
            let (entries, count) = held.get();
            held.set((entries, count - 1));
        });
    }
}

/// An object behind a handle that a frame can borrow by value for the length of one
/// call (`kiln_frame_run` moves the world, tracer and probe volume into its graph and
/// back). Only taken while the handle's entry is locked, and always put back before
/// the lock is released, so every other call finds it present.
pub(crate) struct Lendable<T>(Option<T>);

impl<T> Lendable<T> {
    pub(crate) fn new(value: T) -> Lendable<T> {
        Lendable(Some(value))
    }

    /// Moves the object out; [`Lendable::put_back`] must follow under the same lock.
    pub(crate) fn lend(&mut self) -> T {
        self.0.take().expect("an object is lent to one frame at a time")
    }

    pub(crate) fn put_back(&mut self, value: T) {
        debug_assert!(self.0.is_none(), "put back into a slot that was not lent");
        self.0 = Some(value);
    }
}

impl<T> std::ops::Deref for Lendable<T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.0.as_ref().expect("a lent object is only reachable while its frame holds the lock")
    }
}

impl<T> std::ops::DerefMut for Lendable<T> {
    fn deref_mut(&mut self) -> &mut T {
        self.0.as_mut().expect("a lent object is only reachable while its frame holds the lock")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A call that panicked while it held an object (caught, and reported as
    /// `KILN_ERROR_INTERNAL`) poisons the object's lock: later calls still reach it
    /// and it can still be destroyed; it does not read as busy forever. (The fuzz
    /// sweep found a world that could not be destroyed after such a panic.)
    #[test]
    fn a_poisoned_entry_is_not_busy() {
        static TABLE: HandleTable<u32> = HandleTable::new("thing");
        let (index1, generation) = TABLE.insert(7);
        let caught = std::panic::catch_unwind(|| {
            let _ = TABLE.with(index1, generation, |_| -> Result<(), Error> { panic!("a bug inside a call") });
        });
        assert!(caught.is_err());
        assert_eq!(TABLE.with(index1, generation, |v| Ok(*v)).ok(), Some(7));
        let Ok(entry) = TABLE.remove(index1, generation) else { panic!("a poisoned entry can be removed") };
        assert_eq!(*entry.lock().unwrap_or_else(|p| p.into_inner()), 7);
        assert!(!TABLE.is_valid(index1, generation));
        // A held lock is busy, as before.
        let (index1, generation) = TABLE.insert(8);
        let held = TABLE.lookup(index1, generation).ok().unwrap();
        let guard = held.lock().unwrap();
        assert_eq!(TABLE.remove(index1, generation).err().map(|e| e.status), Some(KILN_ERROR_INVALID_STATE));
        drop(guard);
        assert!(TABLE.remove(index1, generation).is_ok());
    }
}
