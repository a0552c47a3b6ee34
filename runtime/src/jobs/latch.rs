//! Latches: one-shot completion flags that wake the thread waiting on them.
//!
//! Memory ordering: `set` publishes everything the job wrote with a `SeqCst` store;
//! `probe` reads it with `Acquire`. The `SeqCst` store pairs with the fence in the
//! sleep protocol (see `sleep.rs`) so a waiter that is about to park either sees the
//! latch set or is woken by the setter: no lost wake-ups.
//!
//! After `set` stores the flag, the waiter may return and free the latch, so `set`
//! copies what it needs (registry, owner index, unparker) *before* the store.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use crossbeam_utils::sync::{Parker, Unparker};

use super::pool::Registry;

/// Something a job sets when it finishes.
pub(crate) trait Latch {
    /// Marks the latch set and wakes its waiter.
    ///
    /// # Safety
    /// `this` must be valid on entry; it may be freed by the waiter as soon as the
    /// flag is stored, so implementations must not touch it afterwards.
    unsafe fn set(this: *const Self);
}

/// Something a waiting thread can poll.
pub(crate) trait Probe {
    fn probe(&self) -> bool;
}

/// A latch owned by a pool worker that keeps running jobs while it waits.
pub(crate) struct WorkerLatch<'r> {
    done: AtomicBool,
    owner: usize,
    registry: &'r Registry,
}

impl<'r> WorkerLatch<'r> {
    pub(crate) fn new(owner: usize, registry: &'r Registry) -> Self {
        WorkerLatch { done: AtomicBool::new(false), owner, registry }
    }
}

impl Probe for WorkerLatch<'_> {
    fn probe(&self) -> bool {
        self.done.load(Ordering::Acquire)
    }
}

impl Latch for WorkerLatch<'_> {
    unsafe fn set(this: *const Self) {
        // SAFETY: `this` is valid on entry (trait contract); copy out before the store.
        let (registry, owner) = unsafe { ((*this).registry, (*this).owner) };
        // SAFETY: as above; this store is our last access to `*this`.
        unsafe { (*this).done.store(true, Ordering::SeqCst) };
        // The registry outlives every job running on it, so it is still valid here.
        registry.sleep.wake(owner);
    }
}

/// A latch for a thread outside the pool that blocks (parks) until a job is done.
pub(crate) struct ThreadLatch {
    done: AtomicBool,
    unparker: Unparker,
}

thread_local! {
    /// Parker for threads that block on the pool from outside.
    static PARKER: Parker = Parker::new();
}

impl ThreadLatch {
    pub(crate) fn new() -> Self {
        let unparker = PARKER.with(|p| p.unparker().clone());
        ThreadLatch { done: AtomicBool::new(false), unparker }
    }

    /// Parks the current thread (the one that created the latch) until it is set.
    pub(crate) fn wait(&self) {
        PARKER.with(|parker| {
            while !self.done.load(Ordering::Acquire) {
                parker.park();
            }
        });
    }
}

impl Latch for ThreadLatch {
    unsafe fn set(this: *const Self) {
        // SAFETY: valid on entry; clone the unparker (a reference count) before the store.
        let unparker = unsafe { (*this).unparker.clone() };
        // SAFETY: as above; last access to `*this`.
        unsafe { (*this).done.store(true, Ordering::SeqCst) };
        unparker.unpark();
    }
}

/// A latch set when a counter of outstanding jobs drops to zero (used by scopes).
pub(crate) struct CountLatch<'r> {
    count: AtomicUsize,
    inner: WorkerLatch<'r>,
}

impl<'r> CountLatch<'r> {
    /// Starts at one: the scope body itself counts as outstanding work.
    pub(crate) fn new(owner: usize, registry: &'r Registry) -> Self {
        CountLatch { count: AtomicUsize::new(1), inner: WorkerLatch::new(owner, registry) }
    }

    pub(crate) fn increment(&self) {
        self.count.fetch_add(1, Ordering::Relaxed);
    }

    /// # Safety
    /// As [`Latch::set`]: when this brings the count to zero the waiter may free the
    /// latch, so the caller must not touch it after this call.
    pub(crate) unsafe fn decrement(this: *const Self) {
        // SAFETY: valid on entry (caller contract).
        if unsafe { (*this).count.fetch_sub(1, Ordering::AcqRel) } == 1 {
            // SAFETY: we brought the count to zero; nobody else sets the inner latch.
            unsafe { WorkerLatch::set(&(*this).inner) };
        }
    }
}

impl Probe for CountLatch<'_> {
    fn probe(&self) -> bool {
        self.inner.probe()
    }
}
