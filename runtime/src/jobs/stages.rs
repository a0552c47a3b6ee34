//! Stages: a sequence of parallel loops run in one parallel region.
//!
//! A solver pass over 24 colours is 24 loops, each of which must finish before the
//! next starts; a soft step of four substeps runs about 300 of them. As separate
//! [`Jobs::parallel_for`] calls, every loop pays a fork (jobs pushed, workers woken
//! or stolen from) and a join (a latch, a wait), and short loops of 40 chunks spend a
//! good part of their time there. [`Jobs::run_stages`] forks once: every worker joins
//! one region and walks the stages in order. Each stage's chunks are dealt out in
//! contiguous shares, one per participant; a participant runs its own share
//! (claiming chunk by chunk from a counter on its own cache line, so without
//! contention), then takes what is left of the others' shares, then waits until the
//! stage's chunks have all returned (Box2D v3's solver stages, work blocks claimed by
//! atomics, run the same way):
//!
//! ```text
//!  stage s, 2 participants:  share 0 = chunks 0..5   share 1 = chunks 5..10
//!  worker 0: [c0][c1][c2][c3][c4][c9] done += 6, wait |[stage s+1 ...
//!  worker 1: [c5][c6][c7][c8]         done += 4, wait |[stage s+1 ...
//!            claim = share.next.fetch_add(1); a stage is over when done == chunks
//! ```
//!
//! # Progress on any executor
//! The participants are alike: none drives the others, and a participant waits only
//! once every chunk of the stage has been claimed, so only for chunks that another
//! participant is running. The region therefore finishes whatever the executor
//! does: if it runs the participants one after another on one thread (a host
//! scheduler may), the first takes every share of every stage and the others find
//! nothing left. A panicking chunk poisons the region, so the waiters leave; the
//! executor re-raises the panic.
//!
//! # Determinism
//! Each stage is cut into chunks of exactly `grain` items, as `parallel_for` cuts its
//! range, whatever the worker count; which worker runs which chunk varies, so the
//! body must give the same result for a chunk on any worker (as with `parallel_for`).
//!
//! # Memory ordering
//! A participant's chunk writes are released by its `done` increment (`AcqRel`: every
//! increment continues the release sequence) and acquired by the load that sees the
//! stage complete, before the participant claims anything of the next stage.

use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use crossbeam_utils::CachePadded;

use super::{chunk_count, chunk_range, Jobs, Worker};

/// One loop: its items, their cut, and how many chunks have returned.
#[derive(Debug)]
struct Stage {
    items: usize,
    grain: usize,
    chunks: usize,
    done: AtomicUsize,
}

/// A participant's share of one stage's chunks: `next..end`, claimed from the front
/// by its owner and, once the owner's own share is gone, by the others.
#[derive(Debug, Default)]
#[repr(align(64))]
struct Share {
    /// The next chunk to hand out (runs past `end` once the share is gone).
    next: AtomicUsize,
    end: usize,
}

/// The stages of one [`Jobs::run_stages`] call, kept between calls so that a step
/// allocates nothing once its stage count has been reached.
#[derive(Debug, Default)]
pub struct Stages {
    /// Padded: each stage's counter on its own cache line.
    stages: Vec<CachePadded<Stage>>,
    /// `participants` shares per stage, stage by stage, each on its own cache line
    /// (the owner claims from its share without contention).
    shares: Vec<Share>,
    participants: usize,
}

impl Stages {
    pub fn new() -> Stages {
        Stages::default()
    }

    /// Forgets every stage (keeps the memory).
    pub fn clear(&mut self) {
        self.stages.clear();
    }

    /// Appends a stage of `items` items cut into chunks of `grain` (0 counts as 1);
    /// returns its index, which the body of [`Jobs::run_stages`] receives. A stage of
    /// no items is allowed (it takes no time).
    pub fn push(&mut self, items: usize, grain: usize) -> usize {
        let grain = grain.max(1);
        let chunks = chunk_count(items, grain);
        self.stages.push(CachePadded::new(Stage { items, grain, chunks, done: AtomicUsize::new(0) }));
        self.stages.len() - 1
    }

    pub fn len(&self) -> usize {
        self.stages.len()
    }

    pub fn is_empty(&self) -> bool {
        self.stages.is_empty()
    }

    /// Resets the counters for `participants` and deals each stage's chunks out in
    /// contiguous shares, one per participant.
    fn deal(&mut self, participants: usize) {
        self.participants = participants;
        self.shares.resize_with(self.stages.len() * participants, Share::default);
        for (stage, shares) in self.stages.iter_mut().zip(self.shares.chunks_mut(participants.max(1))) {
            *stage.done.get_mut() = 0;
            for (p, share) in shares.iter_mut().enumerate() {
                *share.next.get_mut() = stage.chunks * p / participants;
                share.end = stage.chunks * (p + 1) / participants;
            }
        }
    }

    /// Participant `me`: every stage in order, running the chunks of its own share,
    /// then taking the others' leftovers, then waiting until every chunk of the stage
    /// has returned. Returns early once the region is poisoned (a chunk panicked).
    fn participate<F>(&self, me: usize, poisoned: &AtomicBool, body: &F, worker: &Worker)
    where
        F: Fn(usize, Range<usize>, &Worker) + Sync,
    {
        let n = self.participants;
        for (index, (stage, shares)) in self.stages.iter().zip(self.shares.chunks(n)).enumerate() {
            let mut finished = 0;
            for k in 0..n {
                let share = &shares[(me + k) % n];
                loop {
                    let chunk = share.next.fetch_add(1, Ordering::Relaxed);
                    if chunk >= share.end {
                        break;
                    }
                    let _poison = Poison(poisoned);
                    body(index, chunk_range(&(0..stage.items), stage.grain, chunk), worker);
                    finished += 1;
                }
            }
            if finished > 0 {
                stage.done.fetch_add(finished, Ordering::AcqRel);
            }
            let mut spins = 0u32;
            while stage.done.load(Ordering::Acquire) < stage.chunks {
                if poisoned.load(Ordering::Relaxed) {
                    return;
                }
                // Spin: the last chunks of a stage end within microseconds. A
                // participant whose thread was descheduled can take much longer, so
                // after a while the waiter gives up its core between checks.
                spins += 1;
                if spins < 1 << 10 {
                    std::hint::spin_loop();
                } else {
                    std::thread::yield_now();
                }
            }
            if poisoned.load(Ordering::Relaxed) {
                return;
            }
        }
    }
}

/// Poisons the region when a chunk unwinds, so nobody waits for the stages that will
/// never complete.
struct Poison<'a>(&'a AtomicBool);

impl Drop for Poison<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.store(true, Ordering::Release);
        }
    }
}

impl Jobs<'_> {
    /// Runs the stages one after another, each in parallel: `body(stage, items,
    /// worker)` for every chunk of every stage, and no chunk of a stage before every
    /// chunk of the stages before it has returned. The same work as one
    /// [`Jobs::parallel_for`] per stage (the same chunks), forked once; see the module
    /// notes for the protocol. A panic in `body` is re-raised here once every
    /// participant has left; later stages may then not have run.
    ///
    /// `body` must not wait for other jobs (no parallel loop inside it): a thread
    /// waiting inside a chunk may take up another participant of this region, which
    /// would wait for that very chunk.
    pub fn run_stages<F>(&self, stages: &mut Stages, body: F)
    where
        F: Fn(usize, Range<usize>, &Worker) + Sync,
    {
        let widest = stages.stages.iter().map(|s| s.chunks).max().unwrap_or(0);
        let participants = self.worker_count().min(widest);
        if participants == 0 {
            return;
        }
        stages.deal(participants);
        let poisoned = AtomicBool::new(false);
        let stages = &*stages;
        self.executor.for_each(participants, &|calls, worker| {
            let _zone = crate::profiling::job_zone();
            // A call for several participants is one thread: the first takes every
            // chunk the others left, so the rest find nothing.
            if !calls.is_empty() {
                stages.participate(calls.start, &poisoned, &body, worker);
            }
        });
    }
}
