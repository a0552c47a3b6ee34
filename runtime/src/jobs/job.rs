//! Job records: type-erased pointers to work that lives somewhere else, on the
//! stack of the thread that waits for it ([`StackJob`]) or in a box ([`HeapJob`]).
//!
//! After rayon-core's `job.rs`. The one rule: a [`JobRef`] is executed exactly once,
//! and whatever it points to outlives that execution. Stack jobs guarantee the second
//! half because their owner does not return before the job's latch is set.

use std::any::Any;
use std::cell::UnsafeCell;
use std::panic::{self, AssertUnwindSafe};

use super::latch::Latch;
use super::pool::WorkerThread;

/// A pointer to a job plus the function that runs it. Two words, `Copy`, no allocation.
#[derive(Clone, Copy, Debug)]
pub(crate) struct JobRef {
    data: *const (),
    execute_fn: unsafe fn(*const ()),
}

// SAFETY: a JobRef is created only from jobs whose closures are `Send` (checked by the
// bounds on `StackJob` and `HeapJob`), so running it on another thread is sound.
unsafe impl Send for JobRef {}

impl JobRef {
    /// # Safety
    /// `data` must stay valid until `execute_fn(data)` has returned, and the job must
    /// be executed exactly once.
    unsafe fn new(data: *const (), execute_fn: unsafe fn(*const ())) -> JobRef {
        JobRef { data, execute_fn }
    }

    /// Whether both refer to the same job (the data pointer identifies it).
    pub(crate) fn same_job(self, other: JobRef) -> bool {
        std::ptr::eq(self.data, other.data)
    }

    /// # Safety
    /// Must be called exactly once per job, on a worker thread of the pool the job was
    /// pushed to.
    pub(crate) unsafe fn execute(self) {
        // SAFETY: forwarded from the caller's contract and from `JobRef::new`.
        unsafe { (self.execute_fn)(self.data) }
    }
}

/// The outcome of a job: not yet run, a value, or the payload of a panic to re-raise.
pub(crate) enum JobResult<R> {
    Pending,
    Ok(R),
    Panic(Box<dyn Any + Send>),
}

impl<R> JobResult<R> {
    /// Runs `f`, catching a panic so it can be re-raised on the waiting thread.
    pub(crate) fn call(f: impl FnOnce() -> R) -> JobResult<R> {
        match panic::catch_unwind(AssertUnwindSafe(f)) {
            Ok(value) => JobResult::Ok(value),
            Err(payload) => JobResult::Panic(payload),
        }
    }

    /// The value, or the job's panic resumed on this thread.
    pub(crate) fn into_result(self) -> R {
        match self {
            JobResult::Ok(value) => value,
            JobResult::Panic(payload) => panic::resume_unwind(payload),
            JobResult::Pending => unreachable!("a job's result was read before the job ran"),
        }
    }
}

/// A job on the stack of the thread that will wait for it.
pub(crate) struct StackJob<L, F, R> {
    pub(crate) latch: L,
    func: UnsafeCell<Option<F>>,
    result: UnsafeCell<JobResult<R>>,
}

impl<L, F, R> StackJob<L, F, R>
where
    L: Latch,
    F: FnOnce(&WorkerThread) -> R + Send,
    R: Send,
{
    pub(crate) fn new(func: F, latch: L) -> Self {
        StackJob { latch, func: UnsafeCell::new(Some(func)), result: UnsafeCell::new(JobResult::Pending) }
    }

    /// # Safety
    /// The caller must keep `self` alive, unmoved, until the latch is set or the job
    /// has been taken back with [`StackJob::run_inline`].
    pub(crate) unsafe fn as_job_ref(&self) -> JobRef {
        // SAFETY: forwarded from the caller.
        unsafe { JobRef::new(self as *const Self as *const (), Self::execute) }
    }

    /// # Safety
    /// `this` comes from `as_job_ref` and is executed once, on a worker thread.
    unsafe fn execute(this: *const ()) {
        // SAFETY: `this` points to a live StackJob (contract of `as_job_ref`).
        let this = unsafe { &*(this as *const Self) };
        // SAFETY: the job runs exactly once, so nobody else touches `func` or `result`.
        let func = unsafe { (*this.func.get()).take() }.expect("a job ran twice");
        let worker = WorkerThread::current().expect("jobs run only on worker threads");
        let result = JobResult::call(|| func(worker));
        // SAFETY: as above; the owner reads `result` only after the latch is set.
        unsafe { *this.result.get() = result };
        // SAFETY: setting the latch is the last access; the owner may free `this` after.
        unsafe { L::set(&this.latch) };
    }

    /// Runs the job on the owner's thread after popping it back from its own deque.
    ///
    /// # Safety
    /// The job must not have been (and will not be) executed through its `JobRef`.
    pub(crate) unsafe fn run_inline(&self, worker: &WorkerThread) -> JobResult<R> {
        // SAFETY: the caller popped the only JobRef, so nobody else can run it.
        let func = unsafe { (*self.func.get()).take() }.expect("a job ran twice");
        JobResult::call(|| func(worker))
    }

    /// The result after the latch was observed set.
    pub(crate) fn into_result(self) -> JobResult<R> {
        self.result.into_inner()
    }
}

/// A boxed job for scoped spawns; frees itself when it runs.
pub(crate) struct HeapJob<F> {
    func: F,
}

impl<F> HeapJob<F>
where
    F: FnOnce(&WorkerThread) + Send,
{
    /// Boxes `func` and returns a reference that must be executed exactly once.
    ///
    /// # Safety
    /// Everything `func` borrows must outlive the job's execution.
    pub(crate) unsafe fn into_job_ref(func: F) -> JobRef {
        let data = Box::into_raw(Box::new(HeapJob { func }));
        // SAFETY: the box lives until `execute` reclaims it.
        unsafe { JobRef::new(data as *const (), Self::execute) }
    }

    /// # Safety
    /// `this` comes from `into_job_ref` and is executed once, on a worker thread.
    unsafe fn execute(this: *const ()) {
        // SAFETY: `this` is the pointer leaked by `into_job_ref`, reclaimed once.
        let job = unsafe { Box::from_raw(this as *mut Self) };
        let worker = WorkerThread::current().expect("jobs run only on worker threads");
        (job.func)(worker);
    }
}
