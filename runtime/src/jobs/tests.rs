use std::collections::VecDeque;
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread;

use super::*;

const THREAD_COUNTS: [usize; 4] = [0, 1, 2, 8];

fn message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_default()
}

fn fib(pool: &ThreadPool, n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let (a, b) = pool.join(|_| fib(pool, n - 1), |_| fib(pool, n - 2));
    a + b
}

#[test]
fn join_nests_without_deadlock() {
    for threads in THREAD_COUNTS {
        let pool = ThreadPool::new(threads);
        assert_eq!(fib(&pool, 20), 6765, "threads = {threads}");
    }
}

#[test]
fn parallel_for_visits_every_item_once_with_valid_worker_indices() {
    for threads in THREAD_COUNTS {
        let pool = ThreadPool::new(threads);
        let hits: Vec<AtomicUsize> = (0..10_007).map(|_| AtomicUsize::new(0)).collect();
        let bad_worker = AtomicBool::new(false);
        pool.parallel_for(0..hits.len(), 64, |chunk, worker| {
            assert!(chunk.len() <= 64 && !chunk.is_empty());
            if worker.index() >= pool.worker_count() {
                bad_worker.store(true, Ordering::Relaxed);
            }
            for i in chunk {
                hits[i].fetch_add(1, Ordering::Relaxed);
            }
        });
        assert!(hits.iter().all(|h| h.load(Ordering::Relaxed) == 1), "threads = {threads}");
        assert!(!bad_worker.load(Ordering::Relaxed));
    }
}

#[test]
fn chunks_are_fixed_by_range_and_grain() {
    assert_eq!(chunk_count(0, 8), 0);
    assert_eq!(chunk_count(17, 8), 3);
    assert_eq!(chunk_count(5, 0), 5);
    assert_eq!(chunk_range(&(10..27), 8, 2), 26..27);
    let pool = ThreadPool::new(3);
    let mut out = vec![0..0; 3];
    pool.jobs().map_chunks(10..27, 8, &mut out, |chunk, _| chunk);
    assert_eq!(out, vec![10..18, 18..26, 26..27]);
}

#[test]
fn nested_parallel_for_inside_parallel_for() {
    let pool = ThreadPool::new(3);
    let total = AtomicUsize::new(0);
    pool.parallel_for(0..32, 1, |_, _| {
        pool.parallel_for(0..100, 7, |chunk, _| {
            total.fetch_add(chunk.len(), Ordering::Relaxed);
        });
    });
    assert_eq!(total.load(Ordering::Relaxed), 3200);
}

#[test]
fn jobs_join_runs_a_serial_half_beside_a_parallel_one_on_any_executor() {
    let host = HostExecutor::new(TestHost::new(2));
    let (one, three) = (ThreadPool::new(0), ThreadPool::new(2));
    for jobs in [one.jobs(), three.jobs(), Jobs::new(&host)] {
        let (mut serial, parallel) = (Vec::new(), AtomicUsize::new(0));
        jobs.join(
            || serial.extend(0..1000u32),
            || {
                jobs.parallel_for(0..1000, 10, |chunk, _| {
                    parallel.fetch_add(chunk.sum::<usize>(), Ordering::Relaxed);
                })
            },
        );
        assert_eq!(serial, (0..1000).collect::<Vec<_>>());
        assert_eq!(parallel.load(Ordering::Relaxed), 999 * 1000 / 2);

        // A panicking half reaches the caller, and the executor stays usable.
        for first in [true, false] {
            let half = |panics: bool| move || assert!(!panics, "half {}", if first == panics { "a" } else { "b" });
            let err = panic::catch_unwind(AssertUnwindSafe(|| jobs.join(half(first), half(!first))))
                .expect_err("the panic is re-raised");
            let expected = if first { "half a" } else { "half b" };
            assert!(message(&*err).contains(expected), "{}", message(&*err));
        }
        let ran = AtomicUsize::new(0);
        jobs.join(|| _ = ran.fetch_add(1, Ordering::Relaxed), || _ = ran.fetch_add(1, Ordering::Relaxed));
        assert_eq!(ran.load(Ordering::Relaxed), 2);
    }
}

#[test]
fn panic_in_job_reaches_the_waiter_and_pool_stays_usable() {
    for threads in THREAD_COUNTS {
        let pool = ThreadPool::new(threads);
        let result = panic::catch_unwind(AssertUnwindSafe(|| {
            pool.parallel_for(0..1000, 10, |chunk, _| {
                if chunk.contains(&555) {
                    panic!("boom at 555");
                }
            })
        }));
        let payload = result.expect_err("the panic must reach the caller");
        assert_eq!(payload.downcast_ref::<&str>(), Some(&"boom at 555"));
        assert_eq!(fib(&pool, 15), 610, "pool usable after a panic, threads = {threads}");
    }
}

#[test]
fn join_reraises_the_first_closures_panic_after_both_finish() {
    let pool = ThreadPool::new(2);
    let b_finished = AtomicBool::new(false);
    let result = panic::catch_unwind(AssertUnwindSafe(|| {
        pool.join(
            |_| panic!("a failed"),
            |_| {
                thread::sleep(std::time::Duration::from_millis(20));
                b_finished.store(true, Ordering::SeqCst);
            },
        )
    }));
    assert!(result.is_err());
    assert!(b_finished.load(Ordering::SeqCst), "b borrows the stack: it must finish first");
}

#[test]
fn scope_spawns_borrow_the_stack_and_nest() {
    for threads in THREAD_COUNTS {
        let pool = ThreadPool::new(threads);
        let mut results = vec![0usize; 64];
        let counter = AtomicUsize::new(0);
        pool.scope(|s| {
            for (i, slot) in results.iter_mut().enumerate() {
                let counter = &counter;
                s.spawn(move |s, _| {
                    *slot = i * i;
                    s.spawn(move |_, _| {
                        counter.fetch_add(1, Ordering::Relaxed);
                    });
                });
            }
        });
        assert_eq!(counter.load(Ordering::Relaxed), 64);
        assert!(results.iter().enumerate().all(|(i, &r)| r == i * i));
    }
}

#[test]
fn scope_reraises_a_spawned_panic() {
    let pool = ThreadPool::new(2);
    let ran = AtomicUsize::new(0);
    let result = panic::catch_unwind(AssertUnwindSafe(|| {
        pool.scope(|s| {
            for i in 0..10 {
                let ran = &ran;
                s.spawn(move |_, _| {
                    ran.fetch_add(1, Ordering::SeqCst);
                    assert!(i != 7, "job seven");
                });
            }
        })
    }));
    assert!(result.is_err());
    assert_eq!(ran.load(Ordering::SeqCst), 10, "all other jobs still ran");
    assert_eq!(fib(&pool, 10), 55);
}

#[test]
fn concurrent_outside_callers_share_the_pool() {
    for threads in [0, 2] {
        let pool = ThreadPool::new(threads);
        thread::scope(|s| {
            for t in 0..4 {
                let pool = &pool;
                s.spawn(move || {
                    for _ in 0..50 {
                        let sum = AtomicUsize::new(0);
                        pool.parallel_for(0..1000, 16, |chunk, _| {
                            sum.fetch_add(chunk.sum::<usize>(), Ordering::Relaxed);
                        });
                        assert_eq!(sum.load(Ordering::Relaxed), 499_500, "caller {t}");
                    }
                });
            }
        });
    }
}

#[test]
fn reduce_is_bit_identical_for_any_thread_count() {
    let values: Vec<f32> = (0..100_003).map(|i| ((i as f32) * 0.731).sin() * 1e3).collect();
    let sums: Vec<u32> = THREAD_COUNTS
        .iter()
        .map(|&threads| {
            let pool = ThreadPool::new(threads);
            let scratch = Bump::new();
            let sum = pool
                .jobs()
                .reduce(0..values.len(), 1000, &scratch, |chunk, _| values[chunk].iter().sum::<f32>(), |a, b| a + b)
                .unwrap();
            sum.to_bits()
        })
        .collect();
    assert!(sums.windows(2).all(|w| w[0] == w[1]), "{sums:?}");
}

/// A plain callback-driven job system, the way a host engine would hand Kiln one:
/// `enqueue` splits a task into ranges on a shared queue, host threads and `finish`
/// pop and run them. `finish` helps while it waits, so nesting cannot deadlock.
/// Worker 0 is whichever thread calls in from outside; host threads are 1..=n.
struct TestHost {
    shared: Arc<HostShared>,
    threads: Vec<thread::JoinHandle<()>>,
}

/// A queued range: task, begin, end, and the counter of its task's open ranges.
type QueuedRange = (HostTask, usize, usize, Arc<AtomicUsize>);

#[derive(Default)]
struct HostShared {
    queue: Mutex<VecDeque<QueuedRange>>,
    ready: Condvar,
    stop: AtomicBool,
    enqueued: AtomicUsize,
    drop_items: AtomicBool,
}

thread_local!(static HOST_WORKER: std::cell::Cell<usize> = const { std::cell::Cell::new(0) });

impl HostShared {
    fn run_one(&self, block: bool) -> bool {
        let mut queue = self.queue.lock().unwrap();
        loop {
            if let Some((task, begin, end, remaining)) = queue.pop_front() {
                drop(queue);
                // SAFETY: each range is queued once and `finish` waits for it.
                unsafe { task.run(begin, end, HOST_WORKER.with(|w| w.get())) };
                remaining.fetch_sub(1, Ordering::AcqRel);
                return true;
            }
            if !block || self.stop.load(Ordering::Acquire) {
                return false;
            }
            queue = self.ready.wait(queue).unwrap();
        }
    }
}

impl TestHost {
    fn new(threads: usize) -> TestHost {
        let shared = Arc::new(HostShared::default());
        let threads = (1..=threads)
            .map(|index| {
                let shared = Arc::clone(&shared);
                thread::spawn(move || {
                    HOST_WORKER.with(|w| w.set(index));
                    while !shared.stop.load(Ordering::Acquire) {
                        shared.run_one(true);
                    }
                })
            })
            .collect();
        TestHost { shared, threads }
    }
}

impl Drop for TestHost {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        self.shared.ready.notify_all();
        for t in self.threads.drain(..) {
            t.join().unwrap();
        }
    }
}

// SAFETY: every range is queued once; `finish` runs queued ranges until its own are
// done; worker indices are fixed per thread and below worker_count.
unsafe impl HostScheduler for TestHost {
    fn worker_count(&self) -> usize {
        self.threads.len() + 1
    }

    fn enqueue(&self, task: HostTask, item_count: usize, min_range: usize) -> Option<HostTaskHandle> {
        self.shared.enqueued.fetch_add(1, Ordering::Relaxed);
        let ranges = item_count.div_ceil(min_range.max(3));
        let per = item_count.div_ceil(ranges);
        let drop_last = self.shared.drop_items.load(Ordering::Relaxed);
        let remaining = Arc::new(AtomicUsize::new(0));
        let mut queue = self.shared.queue.lock().unwrap();
        for begin in (0..item_count).step_by(per) {
            if drop_last && begin + per >= item_count {
                break;
            }
            remaining.fetch_add(1, Ordering::Relaxed);
            queue.push_back((task, begin, (begin + per).min(item_count), Arc::clone(&remaining)));
        }
        drop(queue);
        self.shared.ready.notify_all();
        Some(HostTaskHandle(Arc::into_raw(remaining) as *mut ()))
    }

    fn finish(&self, handle: HostTaskHandle) {
        // SAFETY: the handle is the Arc leaked by `enqueue`, reclaimed once here.
        let remaining = unsafe { Arc::from_raw(handle.0 as *const AtomicUsize) };
        while remaining.load(Ordering::Acquire) != 0 {
            if !self.shared.run_one(false) {
                thread::yield_now();
            }
        }
    }
}

#[test]
fn host_scheduler_runs_parallel_for_and_reduce_like_the_pool() {
    let values: Vec<f64> = (0..50_000).map(|i| (i as f64).sqrt()).collect();
    let host = HostExecutor::new(TestHost::new(3));
    let jobs = Jobs::new(&host);
    assert_eq!(jobs.worker_count(), 4);
    let scratch = Bump::new();
    let host_sum =
        jobs.reduce(0..values.len(), 500, &scratch, |c, _| values[c].iter().sum::<f64>(), |a, b| a + b).unwrap();
    let pool = ThreadPool::new(2);
    let pool_sum =
        pool.jobs().reduce(0..values.len(), 500, &scratch, |c, _| values[c].iter().sum::<f64>(), |a, b| a + b).unwrap();
    assert_eq!(host_sum.to_bits(), pool_sum.to_bits());

    // Nested parallel_for inside a host task.
    let total = AtomicUsize::new(0);
    jobs.parallel_for(0..8, 1, |_, _| {
        jobs.parallel_for(0..100, 10, |c, _| {
            total.fetch_add(c.len(), Ordering::Relaxed);
        });
    });
    assert_eq!(total.load(Ordering::Relaxed), 800);
    assert!(host.scheduler().shared.enqueued.load(Ordering::Relaxed) >= 10);
}

#[test]
fn host_scheduler_panics_and_dropped_work_are_reported() {
    let host = HostExecutor::new(TestHost::new(2));
    let jobs = Jobs::new(&host);
    let err = panic::catch_unwind(AssertUnwindSafe(|| {
        jobs.parallel_for(0..100, 1, |c, _| assert!(!c.contains(&42), "item 42"));
    }))
    .expect_err("panic re-raised after finish");
    assert!(message(&*err).contains("item 42"), "{}", message(&*err));

    host.scheduler().shared.drop_items.store(true, Ordering::Relaxed);
    let err = panic::catch_unwind(AssertUnwindSafe(|| jobs.parallel_for(0..100, 1, |_, _| {})))
        .expect_err("dropped items are detected");
    let text = message(&*err);
    assert!(text.contains("host job system ran") && text.contains("of 100 items"), "{text}");
    host.scheduler().shared.drop_items.store(false, Ordering::Relaxed);
    jobs.parallel_for(0..100, 1, |_, _| {});
}

#[test]
fn arenas_hand_each_worker_its_own_bump() {
    let pool = ThreadPool::new(3);
    let mut arenas = Arenas::new(pool.worker_count());
    let sums = AtomicUsize::new(0);
    pool.parallel_for(0..64, 1, |chunk, worker| {
        let scratch = arenas.worker(worker).alloc_slice_fill_copy(100, chunk.start);
        sums.fetch_add(scratch.iter().sum::<usize>(), Ordering::Relaxed);
        let shared = arenas.frame().alloc_slice_fill_copy(4, 1u8);
        assert_eq!(shared.len(), 4);
    });
    assert_eq!(sums.load(Ordering::Relaxed), 100 * (0..64).sum::<usize>());
    assert!(arenas.reserved_bytes() > 0);
    arenas.reset();
}

/// A host scheduler that runs a task's ranges one after another on the calling
/// thread, last first, while declaring four workers: the participants of a stages
/// region then never run side by side.
struct SerialHost;

// SAFETY: every range runs exactly once, inside `enqueue`, on this thread, with a
// worker index below `worker_count`.
unsafe impl HostScheduler for SerialHost {
    fn worker_count(&self) -> usize {
        4
    }

    fn enqueue(&self, task: HostTask, item_count: usize, _: usize) -> Option<HostTaskHandle> {
        for item in (0..item_count).rev() {
            // SAFETY: disjoint ranges covering 0..item_count, inside enqueue.
            unsafe { task.run(item, item + 1, item % 4) };
        }
        None
    }

    fn finish(&self, _: HostTaskHandle) {}
}

/// `run_stages` hands out every chunk of every stage once, cut as `parallel_for`
/// cuts a range, and starts no chunk of a stage before every item of the stages
/// before it is done: on pools of 1 to 9 workers, on a host scheduler's threads, and
/// on one that runs the participants one after another. The same `Stages` serves
/// again (its counters start afresh).
#[test]
fn stages_run_in_order_and_hand_out_each_chunk_once() {
    let sizes = [0usize, 1, 5, 300, 64, 1000, 3, 0, 77, 129];
    let grains = [1usize, 7, 64, 0];
    let shape: Vec<(usize, usize)> = (0..40).map(|s| (sizes[s % sizes.len()], grains[s % grains.len()])).collect();
    let check = |jobs: Jobs, stages: &mut Stages, label: &str| {
        let seen: Vec<Vec<AtomicUsize>> =
            shape.iter().map(|&(items, _)| (0..items).map(|_| AtomicUsize::new(0)).collect()).collect();
        let finished: Vec<AtomicUsize> = shape.iter().map(|_| AtomicUsize::new(0)).collect();
        jobs.run_stages(stages, |stage, items, worker| {
            assert!(worker.index() < jobs.worker_count());
            let (count, grain) = shape[stage];
            let grain = grain.max(1);
            assert_eq!(items.start % grain, 0, "{label}: chunk starts on the grain");
            assert_eq!(items.end, (items.start + grain).min(count), "{label}: chunk ends on the grain");
            for (before, &(count, _)) in shape[..stage].iter().enumerate() {
                assert_eq!(finished[before].load(Ordering::Acquire), count, "{label}: stage {before} before {stage}");
            }
            for item in items.clone() {
                seen[stage][item].fetch_add(1, Ordering::Relaxed);
            }
            finished[stage].fetch_add(items.len(), Ordering::AcqRel);
        });
        for (stage, items) in seen.iter().enumerate() {
            assert!(items.iter().all(|n| n.load(Ordering::Relaxed) == 1), "{label}: stage {stage} once each");
        }
    };
    let mut stages = Stages::new();
    for &(items, grain) in &shape {
        stages.push(items, grain);
    }
    assert_eq!(stages.len(), shape.len());
    for threads in THREAD_COUNTS {
        let pool = ThreadPool::new(threads);
        check(pool.jobs(), &mut stages, &format!("pool of {} workers", threads + 1));
        check(pool.jobs(), &mut stages, &format!("pool of {} workers, again", threads + 1));
    }
    let host = HostExecutor::new(TestHost::new(3));
    check(Jobs::new(&host), &mut stages, "host threads");
    check(Jobs::new(&HostExecutor::new(SerialHost)), &mut stages, "participants one after another");

    // Nothing to do: no stage, or only empty ones.
    let pool = ThreadPool::new(2);
    let mut none = Stages::new();
    pool.jobs().run_stages(&mut none, |_, _, _| unreachable!("no stage"));
    none.push(0, 8);
    pool.jobs().run_stages(&mut none, |_, _, _| unreachable!("no item"));
}

/// A panicking chunk ends the region instead of leaving the other participants
/// waiting for it: the panic reaches the caller, the stages after it do not run, and
/// the pool (and the `Stages`) serve again.
#[test]
fn a_panic_in_a_stage_reaches_the_caller_and_nobody_waits_for_it() {
    for threads in [0, 1, 3] {
        let pool = ThreadPool::new(threads);
        let mut stages = Stages::new();
        for _ in 0..6 {
            stages.push(100, 3);
        }
        let later = AtomicUsize::new(0);
        let err = panic::catch_unwind(AssertUnwindSafe(|| {
            pool.jobs().run_stages(&mut stages, |stage, items, _| {
                assert!(!(stage == 2 && items.contains(&50)), "stage 2, item 50");
                if stage > 2 {
                    later.fetch_add(1, Ordering::Relaxed);
                }
            });
        }))
        .expect_err("the panic is re-raised");
        assert!(message(&*err).contains("stage 2, item 50"), "{}", message(&*err));
        assert_eq!(later.load(Ordering::Relaxed), 0, "no stage after the panic runs");
        let total = AtomicUsize::new(0);
        pool.jobs().run_stages(&mut stages, |_, items, _| {
            total.fetch_add(items.len(), Ordering::Relaxed);
        });
        assert_eq!(total.load(Ordering::Relaxed), 600);
    }
    let host = HostExecutor::new(SerialHost);
    let mut stages = Stages::new();
    stages.push(10, 1);
    stages.push(10, 1);
    let err = panic::catch_unwind(AssertUnwindSafe(|| {
        Jobs::new(&host).run_stages(&mut stages, |stage, _, _| assert_ne!(stage, 1, "stage 1"));
    }))
    .expect_err("the panic is re-raised on a host scheduler");
    assert!(message(&*err).contains("stage 1"), "{}", message(&*err));
}
