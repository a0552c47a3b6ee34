//! The host's job system, from C callbacks (Box2D v3's `enqueueTask`/`finishTask`).

use std::ffi::c_void;

use kiln_core::jobs::{HostScheduler, HostTask, HostTaskHandle};

/// A task Kiln hands to the host: call it with disjoint ranges covering
/// `[0, item_count)`, each item exactly once, passing `task_context` through.
pub type KilnTaskFn = Option<unsafe extern "C" fn(begin: u32, end: u32, worker_index: u32, task_context: *mut c_void)>;

/// Schedules `task` over `item_count` items in ranges of at least `min_range`; returns
/// a handle for `KilnFinishTaskFn`, or NULL if it already ran the whole task inline.
pub type KilnEnqueueTaskFn = Option<
    unsafe extern "C" fn(
        task: KilnTaskFn,
        item_count: u32,
        min_range: u32,
        task_context: *mut c_void,
        user_context: *mut c_void,
    ) -> *mut c_void,
>;

/// Waits until the task behind `user_task` has run completely. May be called from
/// inside a running task (nested parallelism): the host should run queued work while
/// it waits.
pub type KilnFinishTaskFn = Option<unsafe extern "C" fn(user_task: *mut c_void, user_context: *mut c_void)>;

type RawEnqueue = unsafe extern "C" fn(KilnTaskFn, u32, u32, *mut c_void, *mut c_void) -> *mut c_void;
type RawFinish = unsafe extern "C" fn(*mut c_void, *mut c_void);

pub(crate) struct CHost {
    pub(crate) enqueue: RawEnqueue,
    pub(crate) finish: RawFinish,
    pub(crate) user_context: *mut c_void,
    pub(crate) worker_count: usize,
}

// SAFETY: the host promises (KilnRuntimeDef docs) that its callbacks may be called
// from any thread with its user context.
unsafe impl Send for CHost {}
// SAFETY: as above.
unsafe impl Sync for CHost {}

unsafe extern "C" fn trampoline(begin: u32, end: u32, worker_index: u32, task_context: *mut c_void) {
    // SAFETY: `task_context` is the pointer we passed to enqueue, still live until
    // finish returns; `run` validates the range and worker and never unwinds.
    unsafe { HostTask::from_ptr(task_context.cast()).run(begin as usize, end as usize, worker_index as usize) }
}

// SAFETY: forwarded to the C host, whose contract (documented on KilnRuntimeDef) is
// the HostScheduler contract; `HostExecutor` checks ranges, workers and coverage.
unsafe impl HostScheduler for CHost {
    fn worker_count(&self) -> usize {
        self.worker_count
    }

    fn enqueue(&self, task: HostTask, item_count: usize, min_range: usize) -> Option<HostTaskHandle> {
        let count = u32::try_from(item_count).expect("task item counts fit in 32 bits");
        let min_range = u32::try_from(min_range).unwrap_or(u32::MAX);
        // SAFETY: calling the host's enqueue with a valid task and context.
        let handle =
            unsafe { (self.enqueue)(Some(trampoline), count, min_range, task.as_ptr().cast(), self.user_context) };
        (!handle.is_null()).then_some(HostTaskHandle(handle.cast()))
    }

    fn finish(&self, handle: HostTaskHandle) {
        // SAFETY: a handle the host returned from enqueue, finished once.
        unsafe { (self.finish)(handle.0.cast(), self.user_context) }
    }
}
