//! The work-stealing pool: background worker threads, one guest slot for the thread
//! that drives frames, fork-join on stack jobs, and parking when idle.
//!
//! ```text
//!            ThreadPool::new(3)                  worker index
//!   +-----------+  +-----------+  +-----------+  +-------------------+
//!   | thread 0  |  | thread 1  |  | thread 2  |  | guest slot        |
//!   | deque  <--+--+- steal ---+--+-> deque   |  | deque, parker     |
//!   +-----------+  +-----------+  +-----------+  +-------------------+
//!         0              1              2          3 = caller thread
//!         ^                                        (borrowed while it
//!         +------- global Injector (cold path) --   calls into the pool)
//! ```
//!
//! * **Fork-join.** `join(a, b)` pushes `b` on the worker's own deque (LIFO), runs `a`,
//!   then pops `b` back and runs it inline unless a thief took it; while a stolen `b`
//!   is running elsewhere the waiter runs other jobs (its own deque, the injector,
//!   other deques) instead of blocking. Jobs live on the waiter's stack: no
//!   allocation, and nested parallelism cannot deadlock or add threads.
//! * **The guest slot.** A thread outside the pool that calls into it (the frame
//!   driver, usually) borrows the guest slot, becomes the last worker index and helps
//!   like any worker. So `ThreadPool::new(0)` runs everything inline on the caller,
//!   and a frame costs no hand-off to another core. A second outside thread arriving
//!   while the slot is taken injects its work into the global `Injector` and parks
//!   (rayon's cold path); with zero threads it waits for the slot instead.
//! * **Why not inject every call?** crossbeam's `Injector` allocates a 63-slot block
//!   every 63 pushes, which would break the no-allocation-per-frame rule. Deques keep
//!   their buffer (64 slots minimum), so steady-state frames allocate nothing.
//! * **Idle.** A worker with nothing to do spins briefly (crossbeam `Backoff`), yields
//!   for up to a millisecond (so the next pass of a frame finds it awake), then parks
//!   through the protocol in `sleep.rs`; an idle pool uses no CPU.
//! * **Panics** are caught where a job runs and resumed on the thread that waits for
//!   it, after every job that borrows the waiter's stack has finished.

use std::cell::Cell;
use std::ptr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier, Mutex, MutexGuard, TryLockError};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use crossbeam_deque::{Injector, Steal, Stealer, Worker as Deque};
use crossbeam_utils::sync::Parker;
use crossbeam_utils::Backoff;

/// How long an idle worker keeps yielding after spinning, before it parks (see
/// [`WorkerThread::idle`]).
const STAY_AWAKE: Duration = Duration::from_millis(1);

use super::job::{JobRef, JobResult, StackJob};
use super::latch::{Probe, ThreadLatch, WorkerLatch};
use super::sleep::Sleep;
use super::Worker;

/// State shared by all workers of one pool.
pub(crate) struct Registry {
    stealers: Box<[Stealer<JobRef>]>,
    injector: Injector<JobRef>,
    pub(crate) sleep: Sleep,
    terminate: AtomicBool,
    threads: usize,
    guest: Mutex<GuestSlot>,
}

/// The deque and parker lent to an outside thread while it runs inside the pool.
struct GuestSlot {
    deque: Deque<JobRef>,
    parker: Parker,
}

/// The per-thread view of a worker: its index, deque and parker.
pub(crate) struct WorkerThread<'a> {
    index: usize,
    deque: &'a Deque<JobRef>,
    parker: &'a Parker,
    registry: &'a Registry,
}

thread_local! {
    /// The worker the current thread is acting as, if any (type-erased lifetime).
    static CURRENT: Cell<*const WorkerThread<'static>> = const { Cell::new(ptr::null()) };
}

/// Restores the previous `CURRENT` when a guest leaves (also on unwind).
struct RestoreCurrent(*const WorkerThread<'static>);

impl Drop for RestoreCurrent {
    fn drop(&mut self) {
        CURRENT.with(|c| c.set(self.0));
    }
}

impl<'a> WorkerThread<'a> {
    /// The worker the current thread is running as.
    pub(crate) fn current() -> Option<&'a WorkerThread<'a>> {
        let p = CURRENT.with(|c| c.get());
        // SAFETY: CURRENT is set only while the pointed-to WorkerThread is alive on
        // this thread's stack (worker main loop, or a guest call) and reset after.
        unsafe { p.cast::<WorkerThread<'a>>().as_ref() }
    }

    fn enter(&self) -> RestoreCurrent {
        let me: *const WorkerThread<'static> = (self as *const WorkerThread<'_>).cast();
        RestoreCurrent(CURRENT.with(|c| c.replace(me)))
    }

    pub(crate) fn index(&self) -> usize {
        self.index
    }

    pub(crate) fn registry(&self) -> &'a Registry {
        self.registry
    }

    /// The token handed to job bodies.
    pub(crate) fn token(&self) -> Worker {
        Worker::new(self.index)
    }

    /// Publishes a job on this worker's deque and wakes a sleeper to steal it.
    pub(crate) fn push(&self, job: JobRef) {
        self.deque.push(job);
        self.registry.sleep.wake_one();
    }

    /// Own deque first (LIFO, cache-warm), then the injector, then other workers.
    fn find_work(&self) -> Option<JobRef> {
        if let Some(job) = self.deque.pop() {
            return Some(job);
        }
        loop {
            let mut retry = false;
            match self.registry.injector.steal_batch_and_pop(self.deque) {
                Steal::Success(job) => return Some(job),
                Steal::Retry => retry = true,
                Steal::Empty => {}
            }
            let stealers = &self.registry.stealers;
            for offset in 1..stealers.len() {
                let victim = (self.index + offset) % stealers.len();
                match stealers[victim].steal() {
                    Steal::Success(job) => return Some(job),
                    Steal::Retry => retry = true,
                    Steal::Empty => {}
                }
            }
            if !retry {
                return None;
            }
        }
    }

    /// Runs jobs until `latch` is set, parking when there is nothing to run.
    pub(crate) fn wait_until(&self, latch: &impl Probe) {
        while !latch.probe() {
            match self.find_work() {
                // SAFETY: every JobRef in the pool's queues is executed exactly once,
                // by whoever pops or steals it.
                Some(job) => unsafe { job.execute() },
                None => self.idle(|| latch.probe()),
            }
        }
    }

    /// Background thread body: run jobs until the pool terminates.
    fn main_loop(&self) {
        loop {
            match self.find_work() {
                // SAFETY: as in `wait_until`.
                Some(job) => unsafe { job.execute() },
                None if self.registry.terminate.load(Ordering::Acquire) => return,
                None => self.idle(|| false),
            }
        }
    }

    /// Spin briefly, yield a while, then park until work arrives or `done()` becomes true.
    #[cold]
    fn idle(&self, done: impl Fn() -> bool) {
        let registry = self.registry;
        let stop = || done() || registry.has_work() || registry.terminate.load(Ordering::Acquire);
        let backoff = Backoff::new();
        while !backoff.is_completed() {
            if stop() {
                return;
            }
            backoff.snooze();
        }
        // Stay awake a while longer by yielding: a frame's passes issue their next
        // parallel_for within a fraction of a millisecond (a world step's serial
        // parts run 0.1-0.3 ms on the main thread), and a parked worker costs a
        // futex wake-up each time. rayon yields 32 rounds (tens of microseconds on
        // an idle core); those parked the 2-worker step's worker between its
        // stages, and a millisecond made `large_pyramid` 4% and `rain` 7% faster
        // (medians of alternating runs). An idle pool still parks within ~1 ms.
        let start = Instant::now();
        while start.elapsed() < STAY_AWAKE {
            if stop() {
                return;
            }
            thread::yield_now();
        }
        registry.sleep.announce(self.index);
        if !stop() {
            self.parker.park();
        }
        registry.sleep.retract(self.index);
    }

    /// Fork-join: runs `a` here and `b` here or on a thief; returns both results.
    /// A panic in either is re-raised after both have finished (`a`'s first).
    pub(crate) fn join<A, B, RA, RB>(&self, a: A, b: B) -> (RA, RB)
    where
        A: FnOnce(&WorkerThread) -> RA + Send,
        B: FnOnce(&WorkerThread) -> RB + Send,
        RA: Send,
        RB: Send,
    {
        let job_b = StackJob::new(b, WorkerLatch::new(self.index, self.registry));
        // SAFETY: we do not return (or unwind: `a` runs under catch_unwind) before
        // `job_b` has run, either inline below or with its latch set by a thief.
        let job_b_ref = unsafe { job_b.as_job_ref() };
        self.push(job_b_ref);

        let result_a = JobResult::call(|| a(self));

        let result_b = loop {
            if job_b.latch.probe() {
                break job_b.into_result();
            }
            match self.deque.pop() {
                // SAFETY: we popped `b` back, so no thief has it: run it inline.
                Some(job) if job.same_job(job_b_ref) => break unsafe { job_b.run_inline(self) },
                // SAFETY: a job from our own deque, executed exactly once.
                Some(job) => unsafe { job.execute() },
                None => self.wait_until(&job_b.latch),
            }
        };
        (result_a.into_result(), result_b.into_result())
    }
}

impl Registry {
    fn has_work(&self) -> bool {
        !self.injector.is_empty() || self.stealers.iter().any(|s| !s.is_empty())
    }

    /// Pushes a job from a thread that is not one of this pool's workers.
    pub(crate) fn inject(&self, job: JobRef) {
        self.injector.push(job);
        self.sleep.wake_one();
    }

    /// Runs `op` on a worker of this registry: directly if the current thread is
    /// one, as the guest if the slot is free, else through the injector.
    pub(crate) fn in_worker<R: Send>(&self, op: impl FnOnce(&WorkerThread) -> R + Send) -> R {
        if let Some(worker) = WorkerThread::current() {
            if ptr::eq(worker.registry, self) {
                return op(worker);
            }
        }
        match self.guest.try_lock() {
            Ok(slot) => self.run_as_guest(slot, op),
            Err(TryLockError::Poisoned(poisoned)) => self.run_as_guest(poisoned.into_inner(), op),
            Err(TryLockError::WouldBlock) if self.threads == 0 => {
                let slot = self.guest.lock().unwrap_or_else(|p| p.into_inner());
                self.run_as_guest(slot, op)
            }
            Err(TryLockError::WouldBlock) => self.in_worker_cold(op),
        }
    }

    fn run_as_guest<R>(&self, slot: MutexGuard<'_, GuestSlot>, op: impl FnOnce(&WorkerThread) -> R) -> R {
        let worker = WorkerThread { index: self.threads, deque: &slot.deque, parker: &slot.parker, registry: self };
        let _restore = worker.enter();
        op(&worker)
    }

    #[cold]
    fn in_worker_cold<R: Send>(&self, op: impl FnOnce(&WorkerThread) -> R + Send) -> R {
        let job = StackJob::new(op, ThreadLatch::new());
        // SAFETY: we wait on the latch below before `job` goes out of scope.
        self.inject(unsafe { job.as_job_ref() });
        job.latch.wait();
        job.into_result().into_result()
    }
}

/// A work-stealing thread pool. See the module docs for the design.
pub struct ThreadPool {
    registry: Arc<Registry>,
    threads: Vec<JoinHandle<()>>,
}

impl ThreadPool {
    /// A pool with `threads` background worker threads. The calling thread takes part
    /// as one more worker while it waits, so `worker_count()` is `threads + 1`, and
    /// `ThreadPool::new(0)` runs everything inline on the caller.
    pub fn new(threads: usize) -> ThreadPool {
        let deques: Vec<Deque<JobRef>> = (0..threads).map(|_| Deque::new_lifo()).collect();
        let parkers: Vec<Parker> = (0..threads).map(|_| Parker::new()).collect();
        let guest = GuestSlot { deque: Deque::new_lifo(), parker: Parker::new() };

        let mut stealers: Vec<Stealer<JobRef>> = deques.iter().map(Deque::stealer).collect();
        stealers.push(guest.deque.stealer());
        let mut unparkers: Vec<_> = parkers.iter().map(|p| p.unparker().clone()).collect();
        unparkers.push(guest.parker.unparker().clone());

        let registry = Arc::new(Registry {
            stealers: stealers.into_boxed_slice(),
            injector: Injector::new(),
            sleep: Sleep::new(unparkers),
            terminate: AtomicBool::new(false),
            threads,
            guest: Mutex::new(guest),
        });

        // Every worker makes one steal attempt before `new` returns: the first steal
        // registers the thread with crossbeam's epoch collector (an allocation), and
        // doing it here keeps it out of the first frames. The calling thread does the
        // same below: as the guest it steals only when a job of its own was taken,
        // which may first happen many frames in. (Another thread that joins as guest
        // later pays that one allocation on its first steal.)
        let started = Arc::new(Barrier::new(threads + 1));
        let handles = deques
            .into_iter()
            .zip(parkers)
            .enumerate()
            .map(|(index, (deque, parker))| {
                let registry = Arc::clone(&registry);
                let started = Arc::clone(&started);
                thread::Builder::new()
                    .name(format!("kiln-worker-{index}"))
                    .spawn(move || {
                        let worker = WorkerThread { index, deque: &deque, parker: &parker, registry: &registry };
                        let _restore = worker.enter();
                        let first = worker.find_work();
                        started.wait();
                        drop(started);
                        if let Some(job) = first {
                            // SAFETY: as in `main_loop`.
                            unsafe { job.execute() };
                        }
                        worker.main_loop();
                    })
                    .expect("failed to spawn a Kiln worker thread")
            })
            .collect();
        let _ = registry.stealers[threads].steal();
        started.wait();
        ThreadPool { registry, threads: handles }
    }

    /// A pool sized to the machine: `available_parallelism() - 1` background threads
    /// plus the calling thread.
    pub fn with_default_threads() -> ThreadPool {
        let cores = thread::available_parallelism().map_or(1, |n| n.get());
        ThreadPool::new(cores - 1)
    }

    /// Background threads plus the guest slot: the number of distinct worker indices.
    pub fn worker_count(&self) -> usize {
        self.registry.threads + 1
    }

    /// Background threads only.
    pub fn thread_count(&self) -> usize {
        self.registry.threads
    }

    /// Runs `a` and `b`, potentially in parallel, and returns both results. Each gets
    /// the [`Worker`] it runs on. A panic in either is re-raised here after both ended.
    pub fn join<A, B, RA, RB>(&self, a: A, b: B) -> (RA, RB)
    where
        A: FnOnce(&Worker) -> RA + Send,
        B: FnOnce(&Worker) -> RB + Send,
        RA: Send,
        RB: Send,
    {
        self.registry.in_worker(|worker| worker.join(|w| a(&w.token()), |w| b(&w.token())))
    }

    /// Runs `op` on a worker of this pool (the calling thread when possible).
    pub fn install<R: Send>(&self, op: impl FnOnce(&Worker) -> R + Send) -> R {
        self.registry.in_worker(|worker| op(&worker.token()))
    }

    pub(crate) fn registry(&self) -> &Registry {
        &self.registry
    }
}

impl Drop for ThreadPool {
    fn drop(&mut self) {
        self.registry.terminate.store(true, Ordering::SeqCst);
        self.registry.sleep.wake_all();
        for handle in self.threads.drain(..) {
            // A worker never unwinds (job panics are caught), so join cannot fail
            // unless the process is already going down; nothing useful to do then.
            let _ = handle.join();
        }
    }
}

impl std::fmt::Debug for ThreadPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ThreadPool").field("threads", &self.registry.threads).finish()
    }
}

/// Runs `task` over `lo..hi`, split adaptively in the way rayon's splitter does:
/// the range is halved with `join` while `splits` (initially the worker count) lasts,
/// each split halves the budget, and a half that another worker stole gets the full
/// budget back. Idle workers therefore always find work, while an uncontended pool
/// makes about one task call per worker instead of one per item.
pub(crate) fn split_for_each(
    worker: &WorkerThread,
    lo: usize,
    hi: usize,
    splits: usize,
    task: &(dyn Fn(std::ops::Range<usize>, &Worker) + Sync),
) {
    if hi - lo <= 1 || splits == 0 {
        task(lo..hi, &worker.token());
        return;
    }
    let mid = lo + (hi - lo) / 2;
    let owner = worker.index();
    let full = worker.registry().threads + 1;
    worker.join(
        |w| split_for_each(w, lo, mid, splits / 2, task),
        |w| {
            let budget = if w.index() == owner { splits / 2 } else { full.max(splits / 2) };
            split_for_each(w, mid, hi, budget, task)
        },
    );
}
