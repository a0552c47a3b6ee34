//! 10,000 frames of a 50-pass graph with nested parallel_for: no deadlock, and a
//! job panic in the middle is re-raised at the caller without breaking later frames.

use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use kiln::frame::{FrameGraph, Res};
use kiln::jobs::ThreadPool;

const PASSES: usize = 50;
const FRAMES: u64 = 10_000;
const PANIC_FRAME: u64 = 4_321;

#[test]
fn ten_thousand_frames_of_fifty_passes_with_a_panic_in_the_middle() {
    let pool = ThreadPool::new(3);
    let frame_now = Arc::new(AtomicU64::new(0));
    let work = Arc::new(AtomicUsize::new(0));
    let mut g = FrameGraph::new();
    // Ten chains of five passes over their own counters, plus cross links, so levels
    // hold several concurrent passes.
    let counters: Vec<Res<u64>> = (0..10).map(|i| g.resource(&format!("counter{i}"), 0u64)).collect();
    for p in 0..PASSES {
        let mine = counters[p % 10];
        let other = counters[(p + 3) % 10];
        let (frame_now, work) = (Arc::clone(&frame_now), Arc::clone(&work));
        let mut builder = g.pass(&format!("pass{p}")).writes(mine);
        if p % 4 == 0 {
            builder = builder.reads(other);
        }
        builder.run(move |ctx| {
            *ctx.write(&mine)? += 1;
            let jobs = ctx.jobs();
            let total = AtomicUsize::new(0);
            jobs.parallel_for(0..64, 8, |outer, _| {
                jobs.parallel_for(0..outer.len() * 4, 4, |inner, _| {
                    total.fetch_add(inner.len(), Ordering::Relaxed);
                });
            });
            assert_eq!(total.load(Ordering::Relaxed), 256);
            if p == 27 && frame_now.load(Ordering::Relaxed) == PANIC_FRAME {
                jobs.parallel_for(0..16, 1, |chunk, _| {
                    if chunk.start == 9 {
                        panic!("deliberate job panic");
                    }
                });
            }
            work.fetch_add(1, Ordering::Relaxed);
            Ok(())
        });
    }
    let mut g = g.compile().unwrap();
    assert!(g.levels().any(|level| level.len() > 1), "some passes share a level");

    let mut panics = 0;
    for frame in 0..FRAMES {
        frame_now.store(frame, Ordering::Relaxed);
        match panic::catch_unwind(AssertUnwindSafe(|| g.execute(&pool, 0.001))) {
            Ok(result) => result.unwrap(),
            Err(payload) => {
                assert_eq!(frame, PANIC_FRAME);
                assert_eq!(payload.downcast_ref::<&str>(), Some(&"deliberate job panic"));
                panics += 1;
            }
        }
    }
    assert_eq!(panics, 1);
    assert_eq!(g.frame_count(), FRAMES);
    let expected_runs = FRAMES as usize * PASSES - 1; // pass 27 did not finish once
    assert!(work.load(Ordering::Relaxed) >= expected_runs - PASSES, "later frames ran");
    let total: u64 = counters.iter().map(|c| *g.resource(c).unwrap()).sum();
    assert!(total >= FRAMES * PASSES as u64 - PASSES as u64);
}
