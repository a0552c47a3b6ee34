//! A long run with its memory checked, which the test suite runs: 10,000 steps of the
//! rain scene (4,096 bodies over hills) with sleep on and a resting body kicked awake
//! every 30 steps. From step 1,000 (the rain has landed) to the end, the resident set
//! must stay within 1%, and Kiln's live Rust heap must converge: buffers grow to new
//! high-water marks when a kick wakes a larger island than before, so the heap may
//! grow, but the second half of the run must grow it by at most a quarter of what
//! the first half did (plus 16 KiB), where a leak would grow it alike in both. The
//! heap allocations per step are reported. Prints the figures every 1,000 steps;
//! exits non-zero when a check fails.
//!
//!   cargo run --release -p kiln --example long_runs -- [STEPS] [THREADS]

#[path = "common/live_heap.rs"]
mod live_heap;

use kiln::jobs::ThreadPool;
use kiln::physics::scenes;
use live_heap::{allocations, live, resident_kib, Counting};

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn main() {
    let mut args = std::env::args().skip(1);
    let steps: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(10_000).max(2_000);
    let threads: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(2);
    let warm_up = 1_000;
    let pool = ThreadPool::new(threads);
    let (mut world, ids) = scenes::rain(4096).build();
    world.set_sleep_enabled(true);
    println!("{:>6} {:>14} {:>10} {:>8} {:>12}", "step", "live heap B", "RSS KiB", "awake", "allocations");
    let (mut rss_start, mut live_start, mut allocs_start, mut live_mid) = (0, 0, 0, 0);
    let mid = (warm_up + steps) / 2;
    for step in 1..=steps {
        world.step(1.0 / 60.0, std::hint::black_box(pool.jobs())).expect("a step");
        if step.is_multiple_of(30) {
            let id = ids[1 + (step / 30 * 37) % (ids.len() - 1)];
            if let Ok(xf) = world.transform(id) {
                world.apply_impulse(id, glam::Vec3::new(0.0, 6.0, 2.0), xf.translation).expect("a kick");
            }
        }
        if step == warm_up {
            (rss_start, live_start, allocs_start) = (resident_kib(), live(), allocations());
        }
        if step == mid {
            live_mid = live();
        }
        if step.is_multiple_of(1_000) {
            println!(
                "{step:>6} {:>14} {:>10} {:>8} {:>12}",
                live(),
                resident_kib(),
                world.awake_count(),
                allocations()
            );
        }
    }
    let (rss_end, live_end, allocs_end) = (resident_kib(), live(), allocations());
    let growth = (rss_end as f64 - rss_start as f64) / rss_start as f64 * 100.0;
    let per_step = (allocs_end - allocs_start) as f64 / (steps - warm_up) as f64;
    println!(
        "long_runs: resident {rss_start} -> {rss_end} KiB ({growth:+.2}%), live heap {live_start} -> {live_end} B, \
         {per_step:.3} allocations per step from step {warm_up}"
    );
    let mut failed = false;
    if growth > 1.0 {
        eprintln!("long_runs: the resident set grew {growth:.2}% (limit 1%)");
        failed = true;
    }
    let (first, second) = (live_mid - live_start, live_end - live_mid);
    println!("long_runs: the live heap grew {first} B from step {warm_up} to {mid}, {second} B from {mid} to {steps}");
    if second > first.max(0) / 4 + 16 * 1024 {
        eprintln!("long_runs: Kiln's live heap does not converge (a leak?)");
        failed = true;
    }
    std::process::exit(failed as i32);
}
