//! Per-frame scratch memory: one bump arena per worker plus a shared frame arena,
//! all reset when the frame ends.
//!
//! * **Worker arenas** are lock-free: a job reaches its worker's arena through the
//!   [`Worker`] token it was handed, and the returned `&Bump` cannot outlive the job
//!   (it borrows the token) nor cross threads (`&Bump` is not `Send`). One thread at
//!   a time uses an index (the executor contract), so no two threads share a `Bump`.
//! * **The frame arena** holds data that outlives a pass (one pass writes it, a
//!   later one reads it). Any pass may allocate from it, so allocation takes a lock;
//!   allocate a few large slices there, not many small objects.
//!
//! `reset` needs `&mut self`, so no allocation can still be borrowed when memory is
//! reused. bumpalo keeps its largest chunk across resets: once the first frames have
//! sized the arenas, frames allocate nothing from the global heap.

use std::cell::UnsafeCell;
use std::sync::Mutex;

use bumpalo::Bump;
use crossbeam_utils::CachePadded;

use super::Worker;

/// Worker arenas plus the frame arena.
pub struct Arenas {
    frame: FrameArena,
    workers: Box<[CachePadded<UnsafeCell<Bump>>]>,
}

// SAFETY: each worker Bump is only reached through `Arenas::worker`, which requires the
// Worker token of the calling thread; the executor contract gives every concurrently
// running thread a distinct index. The frame arena is behind a mutex.
unsafe impl Sync for Arenas {}

impl Arenas {
    /// Arenas for `worker_count` workers (at least one).
    pub fn new(worker_count: usize) -> Self {
        Arenas {
            frame: FrameArena { bump: Mutex::new(Bump::new()) },
            workers: (0..worker_count.max(1)).map(|_| CachePadded::new(UnsafeCell::new(Bump::new()))).collect(),
        }
    }

    pub fn worker_count(&self) -> usize {
        self.workers.len()
    }

    /// The scratch arena of the worker running the current job.
    pub fn worker<'w>(&'w self, worker: &'w Worker) -> &'w Bump {
        let slot = self.workers.get(worker.index()).unwrap_or_else(|| {
            panic!("worker index {} out of range: arenas were made for {} workers", worker.index(), self.workers.len())
        });
        // SAFETY: see `unsafe impl Sync`: only the thread holding this index's token
        // reaches this Bump, and the reference cannot leave that thread or the job.
        unsafe { &*slot.get() }
    }

    /// The shared arena for data that lives until the frame ends.
    pub fn frame(&self) -> &FrameArena {
        &self.frame
    }

    /// Frees everything allocated this frame, keeping the memory for the next one.
    pub fn reset(&mut self) {
        self.frame.bump.get_mut().unwrap_or_else(|p| p.into_inner()).reset();
        for slot in self.workers.iter_mut() {
            slot.get_mut().reset();
        }
    }

    /// Bytes currently reserved by all arenas (chunk capacity, not bytes in use).
    pub fn reserved_bytes(&mut self) -> usize {
        let frame = self.frame.bump.get_mut().unwrap_or_else(|p| p.into_inner()).allocated_bytes();
        frame + self.workers.iter_mut().map(|slot| slot.get_mut().allocated_bytes()).sum::<usize>()
    }
}

/// A bump arena any thread may allocate from, freed wholesale at frame end.
pub struct FrameArena {
    bump: Mutex<Bump>,
}

impl FrameArena {
    /// A slice of `len` copies of `value`, valid until the arenas are reset.
    // Like `Bump::alloc`, each call returns a fresh, disjoint allocation.
    #[allow(clippy::mut_from_ref)]
    pub fn alloc_slice_fill_copy<T: Copy + Send>(&self, len: usize, value: T) -> &mut [T] {
        let bump = self.bump.lock().unwrap_or_else(|p| p.into_inner());
        let slice = bump.alloc_slice_fill_copy(len, value);
        // SAFETY: bumpalo never moves or frees an allocation before `reset` or drop,
        // both of which need `&mut Arenas`, which cannot coexist with `&self` here. The
        // allocation is disjoint from every other, so handing out `&mut` is sound.
        unsafe { &mut *(slice as *mut [T]) }
    }

    /// A slice built from `f(index)`, valid until the arenas are reset. `f` runs under
    /// the arena's lock, so it must not allocate from this arena.
    #[allow(clippy::mut_from_ref)]
    pub fn alloc_slice_fill_with<T: Send>(&self, len: usize, f: impl FnMut(usize) -> T) -> &mut [T] {
        let bump = self.bump.lock().unwrap_or_else(|p| p.into_inner());
        let slice = bump.alloc_slice_fill_with(len, f);
        // SAFETY: as in `alloc_slice_fill_copy`.
        unsafe { &mut *(slice as *mut [T]) }
    }
}
