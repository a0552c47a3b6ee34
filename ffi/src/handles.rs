//! Generation-checked handles: a global table of runtime slots.
//!
//! A `KilnRuntimeId` is `{index + 1, generation}`; zero is the null handle. Destroying
//! a runtime bumps its slot's generation, so every old handle to it is detected as
//! stale, never dereferenced. Each runtime also gets a serial number that is never
//! reused; resource and pass ids carry it, so an id from another runtime is refused.

use std::sync::{Arc, Mutex, MutexGuard, TryLockError};

use crate::abi::{Error, KILN_ERROR_INVALID_HANDLE, KILN_ERROR_INVALID_STATE};
use crate::runtime::{KilnRuntimeId, RuntimeEntry};

struct Slot {
    generation: u32,
    entry: Option<Arc<Mutex<RuntimeEntry>>>,
}

struct Table {
    slots: Vec<Slot>,
    free: Vec<u32>,
    next_serial: u32,
}

static TABLE: Mutex<Table> = Mutex::new(Table { slots: Vec::new(), free: Vec::new(), next_serial: 1 });

fn table() -> MutexGuard<'static, Table> {
    TABLE.lock().unwrap_or_else(|p| p.into_inner())
}

/// A fresh serial number for a new runtime.
pub(crate) fn next_serial() -> u32 {
    let mut table = table();
    let serial = table.next_serial;
    table.next_serial = table.next_serial.checked_add(1).unwrap_or(1);
    serial
}

pub(crate) fn insert(entry: RuntimeEntry) -> KilnRuntimeId {
    let mut table = table();
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
    KilnRuntimeId { index1: index + 1, generation: table.slots[index as usize].generation }
}

fn invalid(id: KilnRuntimeId) -> Error {
    let what = if id.index1 == 0 { "the null handle" } else { "stale or was never issued" };
    Error::new(KILN_ERROR_INVALID_HANDLE, format!("runtime handle {{{}, {}}} is {what}", id.index1, id.generation))
}

fn lookup(id: KilnRuntimeId) -> Result<Arc<Mutex<RuntimeEntry>>, Error> {
    let table = table();
    let slot = id.index1.checked_sub(1).and_then(|i| table.slots.get(i as usize)).ok_or_else(|| invalid(id))?;
    match &slot.entry {
        Some(entry) if slot.generation == id.generation => Ok(Arc::clone(entry)),
        _ => Err(invalid(id)),
    }
}

pub(crate) fn is_valid(id: KilnRuntimeId) -> bool {
    lookup(id).is_ok()
}

/// Removes a runtime from the table and returns it (dropped by the caller, outside
/// the table lock). Old handles become stale at once.
pub(crate) fn remove(id: KilnRuntimeId) -> Result<Arc<Mutex<RuntimeEntry>>, Error> {
    let entry = lookup(id)?;
    if entry.try_lock().is_err() {
        return Err(busy());
    }
    let mut table = table();
    let index = id.index1 - 1;
    let slot = &mut table.slots[index as usize];
    slot.entry = None;
    slot.generation = slot.generation.wrapping_add(1).max(1);
    table.free.push(index);
    Ok(entry)
}

fn busy() -> Error {
    Error::new(
        KILN_ERROR_INVALID_STATE,
        "the runtime is in use by another call (a re-entrant call from one of its own passes, or two threads at once)",
    )
}

/// Runs `f` on the runtime behind `id`. Never blocks: a runtime that is busy (for
/// example a pass callback calling back into its own runtime) gives an error.
pub(crate) fn with_runtime<R>(
    id: KilnRuntimeId,
    f: impl FnOnce(&mut RuntimeEntry) -> Result<R, Error>,
) -> Result<R, Error> {
    let entry = lookup(id)?;
    let mut guard = match entry.try_lock() {
        Ok(guard) => guard,
        Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
        Err(TryLockError::WouldBlock) => return Err(busy()),
    };
    let result = f(&mut guard);
    if let Err(error) = &result {
        guard.log_error(&error.message);
    }
    result
}
