//! Scoped spawn: jobs that may borrow from the caller's stack, all finished before
//! `ThreadPool::scope` returns.
//!
//! Each spawn boxes its closure (one small allocation, like rayon's `HeapJob`); the
//! zero-allocation paths are `join` and `parallel_for`, which keep jobs on the stack.
//! Spawned jobs go on the spawning worker's deque, so a scope inside a job stays on
//! that worker unless others are idle and steal.

use std::any::Any;
use std::marker::PhantomData;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Mutex;

use super::job::{HeapJob, JobResult};
use super::latch::CountLatch;
use super::pool::{Registry, ThreadPool, WorkerThread};
use super::Worker;

/// A fork-join scope; see [`ThreadPool::scope`].
pub struct Scope<'scope> {
    latch: CountLatch<'scope>,
    registry: &'scope Registry,
    panic: Mutex<Option<Box<dyn Any + Send>>>,
    /// Invariant in `'scope`, like `std::thread::Scope`.
    _marker: PhantomData<&'scope mut &'scope ()>,
}

/// A `*const Scope` that may cross threads: the scope outlives all its jobs.
struct ScopePtr<'scope>(*const Scope<'scope>);
// SAFETY: `Scope` is Sync (atomics and a mutex) and outlives every job spawned in it.
unsafe impl Send for ScopePtr<'_> {}

impl<'scope> Scope<'scope> {
    /// Spawns `job` into the scope. It may borrow anything that outlives the scope and
    /// receives the scope (to spawn more) and the worker it runs on.
    pub fn spawn<F>(&self, job: F)
    where
        F: FnOnce(&Scope<'scope>, &Worker) + Send + 'scope,
    {
        self.latch.increment();
        let scope = ScopePtr(self as *const Scope<'scope>);
        let body = move |worker: &WorkerThread| {
            let scope = scope;
            // SAFETY: the scope waits for its latch, so it is alive while jobs run.
            let this = unsafe { &*scope.0 };
            if let Err(payload) = panic::catch_unwind(AssertUnwindSafe(|| job(this, &worker.token()))) {
                this.record_panic(payload);
            }
            // SAFETY: last access to the scope from this job.
            unsafe { CountLatch::decrement(&this.latch) };
        };
        // SAFETY: everything `body` borrows outlives `'scope`, and the scope does not
        // end before the latch says every spawned job has run.
        let job_ref = unsafe { HeapJob::into_job_ref(body) };
        match WorkerThread::current() {
            Some(worker) if std::ptr::eq(worker.registry(), self.registry) => worker.push(job_ref),
            _ => self.registry.inject(job_ref),
        }
    }

    fn record_panic(&self, payload: Box<dyn Any + Send>) {
        let mut slot = self.panic.lock().unwrap_or_else(|p| p.into_inner());
        slot.get_or_insert(payload);
    }
}

impl ThreadPool {
    /// Creates a scope in which jobs borrowing from the caller can be spawned; returns
    /// when the body and every spawned job have finished. The first panic (body first)
    /// is re-raised here after all of them ended.
    pub fn scope<'scope, R: Send>(&self, body: impl FnOnce(&Scope<'scope>) -> R + Send) -> R {
        self.registry().in_worker(|worker| {
            // SAFETY: `registry` outlives the scope: the pool is borrowed by `self`.
            let registry: &'scope Registry = unsafe { &*(worker.registry() as *const Registry) };
            let scope = Scope {
                latch: CountLatch::new(worker.index(), registry),
                registry,
                panic: Mutex::new(None),
                _marker: PhantomData,
            };
            let result = JobResult::call(|| body(&scope));
            // SAFETY: the scope stays alive until `wait_until` below returns.
            unsafe { CountLatch::decrement(&scope.latch) };
            worker.wait_until(&scope.latch);
            if let JobResult::Ok(_) = result {
                if let Some(payload) = scope.panic.into_inner().unwrap_or_else(|p| p.into_inner()) {
                    panic::resume_unwind(payload);
                }
            }
            result.into_result()
        })
    }
}
