//! Running Kiln's parallel work on the host engine's job system instead of the pool.
//!
//! The interface is Box2D v3's (`b2EnqueueTaskCallback` / `b2FinishTaskCallback`):
//! Kiln asks the host to run items `0..count` of a task in ranges of at least
//! `min_range`, gets back a handle, and later asks the host to finish it. The host
//! calls the task with a range and the index of the worker running it.
//!
//! The adapter, [`HostExecutor`], is what makes a host safe to plug in:
//! * every range call runs under `catch_unwind`: a panic never unwinds through the
//!   host's frames (C frames, through the C ABI); it is re-raised after `finish`;
//! * bad ranges or worker indices from the host are reported, never acted on;
//! * after `finish` it checks that every item ran, so a host that drops work is a
//!   clear error instead of silently wrong results.

use std::any::Any;
use std::ops::Range;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use super::{Executor, Worker};

/// A host job system, Box2D style.
///
/// # Safety
/// Implementors must, for every `enqueue(task, count, min_range)`:
/// * call [`HostTask::run`] on disjoint ranges that together cover `0..count`, each
///   item exactly once, either before `enqueue` returns (then return `None`) or
///   before the matching `finish(handle)` returns;
/// * pass a worker index below `worker_count()` that no other thread uses at the
///   same time, and keep each thread's index fixed (it selects per-worker scratch);
/// * allow `enqueue`/`finish` to be called from inside a running task (nesting), e.g.
///   by letting `finish` run queued work while it waits.
pub unsafe trait HostScheduler: Sync {
    /// How many distinct worker indices the host may pass to tasks (at least 1).
    fn worker_count(&self) -> usize;
    /// Schedules `task` over items `0..item_count`; `None` means it already ran.
    fn enqueue(&self, task: HostTask, item_count: usize, min_range: usize) -> Option<HostTaskHandle>;
    /// Waits until every range of the task behind `handle` has run.
    fn finish(&self, handle: HostTaskHandle);
}

/// The host's opaque handle for an enqueued task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostTaskHandle(pub *mut ());

/// A task handed to the host: a thin pointer, valid until `finish` returns.
#[derive(Clone, Copy, Debug)]
pub struct HostTask {
    data: *const (),
}

// SAFETY: the data behind a HostTask is `TaskData`, which is Sync; the host contract
// bounds its lifetime to the enqueue..finish window.
unsafe impl Send for HostTask {}
// SAFETY: as above.
unsafe impl Sync for HostTask {}

struct TaskData<'a> {
    task: &'a (dyn Fn(Range<usize>, &Worker) + Sync),
    count: usize,
    worker_count: usize,
    done: AtomicUsize,
    failure: Mutex<Option<Box<dyn Any + Send>>>,
}

impl TaskData<'_> {
    fn fail(&self, payload: Box<dyn Any + Send>) {
        let mut slot = self.failure.lock().unwrap_or_else(|p| p.into_inner());
        slot.get_or_insert(payload);
    }
}

impl HostTask {
    /// The task as a plain pointer (for passing through C as `void*`).
    pub fn as_ptr(self) -> *mut () {
        self.data as *mut ()
    }

    /// Rebuilds a task from [`HostTask::as_ptr`].
    ///
    /// # Safety
    /// `ptr` must come from `as_ptr` of a task whose `finish` has not returned.
    pub unsafe fn from_ptr(ptr: *mut ()) -> HostTask {
        HostTask { data: ptr as *const () }
    }

    /// Runs items `begin..end` as worker `worker`. Never unwinds: a panic or a bad
    /// argument is recorded and re-raised by the adapter after `finish`.
    ///
    /// # Safety
    /// Only between the `enqueue` that produced this task and the return of its
    /// `finish`, on ranges that do not overlap any other call for this task.
    pub unsafe fn run(self, begin: usize, end: usize, worker: usize) {
        // SAFETY: the data outlives `finish` (caller contract), which has not returned.
        let data = unsafe { &*(self.data as *const TaskData<'_>) };
        if begin > end || end > data.count {
            data.fail(Box::new(format!(
                "host job system passed range {begin}..{end} for a task of {} items",
                data.count
            )));
            return;
        }
        if worker >= data.worker_count {
            data.fail(Box::new(format!(
                "host job system passed worker index {worker}, but declared worker_count {}",
                data.worker_count
            )));
            return;
        }
        let token = Worker::new(worker);
        if let Err(payload) = panic::catch_unwind(AssertUnwindSafe(|| (data.task)(begin..end, &token))) {
            data.fail(payload);
        }
        data.done.fetch_add(end - begin, Ordering::AcqRel);
    }
}

/// Adapts a [`HostScheduler`] to Kiln's [`Executor`].
pub struct HostExecutor<S> {
    scheduler: S,
}

impl<S: HostScheduler> HostExecutor<S> {
    pub fn new(scheduler: S) -> Self {
        HostExecutor { scheduler }
    }

    pub fn scheduler(&self) -> &S {
        &self.scheduler
    }
}

impl<S: HostScheduler> Executor for HostExecutor<S> {
    fn worker_count(&self) -> usize {
        self.scheduler.worker_count().max(1)
    }

    fn for_each(&self, count: usize, task: &(dyn Fn(Range<usize>, &Worker) + Sync)) {
        if count == 0 {
            return;
        }
        let data = TaskData {
            task,
            count,
            worker_count: self.worker_count(),
            done: AtomicUsize::new(0),
            failure: Mutex::new(None),
        };
        let host_task = HostTask { data: &data as *const TaskData<'_> as *const () };
        if let Some(handle) = self.scheduler.enqueue(host_task, count, 1) {
            self.scheduler.finish(handle);
        }
        if let Some(payload) = data.failure.into_inner().unwrap_or_else(|p| p.into_inner()) {
            panic::resume_unwind(payload);
        }
        let done = data.done.load(Ordering::Acquire);
        assert_eq!(done, count, "host job system ran {done} of {count} items before finish returned");
    }
}
