//! Jobs: the work-stealing pool, fork-join, `parallel_for`, stages of loops in one
//! region, host job systems and per-worker arenas.
//!
//! Everything parallel in Kiln goes through an [`Executor`]: Kiln's own
//! [`ThreadPool`] or a host engine's job system behind [`HostExecutor`]. Passes are
//! written once against [`Jobs`], a small copyable handle with the loops they need.
//!
//! # Determinism
//! `parallel_for` cuts a range into chunks of exactly `grain` items (the last may be
//! shorter); the cut depends only on the range and the grain, never on the worker
//! count or on which worker runs which chunk. Per-chunk results go to slots indexed
//! by chunk ([`Jobs::map_chunks`]) and are folded left to right ([`Jobs::reduce`]), so
//! a reduction gives the same bits on 1 or 64 workers and on any host scheduler.

mod arena;
mod column;
mod host;
mod job;
mod latch;
mod pool;
mod scope;
mod sleep;
mod stages;

use std::marker::PhantomData;
use std::ops::Range;

use bumpalo::Bump;

pub use arena::{Arenas, FrameArena};
pub(crate) use column::Column;
pub use host::{HostExecutor, HostScheduler, HostTask, HostTaskHandle};
pub use pool::ThreadPool;
pub use scope::Scope;
pub use stages::Stages;

/// The worker running a job: its index selects per-worker scratch ([`Arenas::worker`]).
///
/// Only executors create it, and job bodies get it by reference, so it cannot outlive
/// the job; it is not `Send`, because it names the current thread's slot.
#[derive(Debug)]
pub struct Worker {
    index: usize,
    _not_send: PhantomData<*const ()>,
}

impl Worker {
    pub(crate) fn new(index: usize) -> Worker {
        Worker { index, _not_send: PhantomData }
    }

    /// In `0..executor.worker_count()`.
    pub fn index(&self) -> usize {
        self.index
    }
}

/// Where parallel work runs. Implemented by [`ThreadPool`] and [`HostExecutor`].
pub trait Executor: Sync {
    /// How many distinct worker indices `for_each` may hand out (at least 1).
    fn worker_count(&self) -> usize;

    /// Calls `task` on disjoint ranges covering `0..count`, in parallel where it can,
    /// each with the [`Worker`] running it; returns when all calls have returned.
    /// A panic in `task` is re-raised here after every call has finished.
    fn for_each(&self, count: usize, task: &(dyn Fn(Range<usize>, &Worker) + Sync));
}

impl Executor for ThreadPool {
    fn worker_count(&self) -> usize {
        ThreadPool::worker_count(self)
    }

    fn for_each(&self, count: usize, task: &(dyn Fn(Range<usize>, &Worker) + Sync)) {
        match count {
            0 => {}
            1 => self.install(|worker| task(0..1, worker)),
            _ => self.registry().in_worker(|worker| pool::split_for_each(worker, 0, count, self.worker_count(), task)),
        }
    }
}

/// Number of chunks `parallel_for` cuts `len` items into with this grain.
pub fn chunk_count(len: usize, grain: usize) -> usize {
    len.div_ceil(grain.max(1))
}

/// The items of chunk `chunk` of `range` (see [`chunk_count`]).
pub fn chunk_range(range: &Range<usize>, grain: usize, chunk: usize) -> Range<usize> {
    let grain = grain.max(1);
    let start = range.start + chunk * grain;
    start..(start + grain).min(range.end)
}

/// A copyable handle to an executor with the parallel loops passes use.
#[derive(Clone, Copy)]
pub struct Jobs<'a> {
    executor: &'a dyn Executor,
}

impl<'a> Jobs<'a> {
    pub fn new(executor: &'a dyn Executor) -> Jobs<'a> {
        Jobs { executor }
    }

    pub fn worker_count(&self) -> usize {
        self.executor.worker_count()
    }

    /// Calls `body(chunk, worker)` for every chunk of `range` (chunks of `grain`
    /// items, the last possibly shorter), in parallel. `grain` 0 is treated as 1.
    pub fn parallel_for<F>(&self, range: Range<usize>, grain: usize, body: F)
    where
        F: Fn(Range<usize>, &Worker) + Sync,
    {
        let chunks = chunk_count(range.len(), grain);
        self.executor.for_each(chunks, &|chunk_indices, worker| {
            let _zone = crate::profiling::job_zone();
            for chunk in chunk_indices {
                body(chunk_range(&range, grain, chunk), worker);
            }
        });
    }

    /// Runs `map` on every chunk in parallel and stores its result in
    /// `out[chunk index]`; `out` must hold exactly `chunk_count(range.len(), grain)`
    /// slots (it panics otherwise). Slot order, not completion order, fixes the layout.
    pub fn map_chunks<T, F>(&self, range: Range<usize>, grain: usize, out: &mut [T], map: F)
    where
        T: Send,
        F: Fn(Range<usize>, &Worker) -> T + Sync,
    {
        let chunks = chunk_count(range.len(), grain);
        assert_eq!(out.len(), chunks, "map_chunks needs one output slot per chunk");
        let slots = Column::new(out);
        self.executor.for_each(chunks, &|chunk_indices, worker| {
            let _zone = crate::profiling::job_zone();
            for chunk in chunk_indices {
                let value = map(chunk_range(&range, grain, chunk), worker);
                // SAFETY: `chunk < out.len()`, and the executor runs every chunk index
                // exactly once, so no two writes alias; `out` outlives `for_each`.
                unsafe { *slots.get(chunk) = value };
            }
        });
    }

    /// Calls `f(index, &mut items[index], worker)` for every item, in parallel: the
    /// way to give each job its own output buffer (one item per job).
    pub fn for_each_mut<T, F>(&self, items: &mut [T], f: F)
    where
        T: Send,
        F: Fn(usize, &mut T, &Worker) + Sync,
    {
        let slots = Column::new(items);
        self.executor.for_each(items.len(), &|indices, worker| {
            let _zone = crate::profiling::job_zone();
            for index in indices {
                // SAFETY: `index < items.len()` and the executor hands out every index
                // exactly once, so the `&mut` borrows are disjoint; `items` outlives
                // `for_each`.
                f(index, unsafe { slots.get(index) }, worker);
            }
        });
    }

    /// Runs `a` and `b`, side by side when a second worker is free (on one worker,
    /// `a` then `b`); returns when both have. Either may run parallel loops of its
    /// own. For two independent parts of a pass, e.g. a serial one beside a parallel
    /// one, so the serial part no longer leaves the other workers idle. Unlike
    /// [`ThreadPool::join`] it runs on any executor (a host's too) and returns no
    /// values. A panic in either half is re-raised here, after whatever was running
    /// has ended; as in [`Jobs::parallel_for`], the other half may then not have run
    /// (on one worker, `b` never starts after `a` panicked).
    pub fn join<A, B>(&self, a: A, b: B)
    where
        A: FnOnce() + Send,
        B: FnOnce() + Send,
    {
        enum Half<A, B> {
            A(Option<A>),
            B(Option<B>),
        }
        let mut halves = [Half::A(Some(a)), Half::B(Some(b))];
        self.for_each_mut(&mut halves, |_, half, _| match half {
            Half::A(f) => f.take().expect("each half runs once")(),
            Half::B(f) => f.take().expect("each half runs once")(),
        });
    }

    /// A deterministic parallel reduction: `map` per chunk, then `fold` of the chunk
    /// results from left to right. Chunk results live in `scratch` (e.g. the frame's
    /// worker arena). Returns `None` for an empty range.
    pub fn reduce<T, M, F>(&self, range: Range<usize>, grain: usize, scratch: &Bump, map: M, fold: F) -> Option<T>
    where
        T: Send,
        M: Fn(Range<usize>, &Worker) -> T + Sync,
        F: FnMut(T, T) -> T,
    {
        let chunks = chunk_count(range.len(), grain);
        let slots = scratch.alloc_slice_fill_with(chunks, |_| None);
        self.map_chunks(range, grain, slots, |chunk, worker| Some(map(chunk, worker)));
        slots.iter_mut().map(|slot| slot.take().expect("every chunk ran")).reduce(fold)
    }
}

impl ThreadPool {
    /// [`Jobs`] over this pool.
    pub fn jobs(&self) -> Jobs<'_> {
        Jobs::new(self)
    }

    /// Shorthand for `self.jobs().parallel_for(range, grain, body)`.
    pub fn parallel_for<F>(&self, range: Range<usize>, grain: usize, body: F)
    where
        F: Fn(Range<usize>, &Worker) + Sync,
    {
        self.jobs().parallel_for(range, grain, body)
    }
}

#[cfg(test)]
mod tests;
