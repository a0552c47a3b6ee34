//! `snapshot`: what rollback costs. For `large_pyramid` (5,050 boxes stacked, sleep
//! off) and `rain` (4,096 bodies over hills, sleep on, 5 s in: landing and settling):
//!
//! - `save`: `World::snapshot`; `restore`: `World::restore` of that snapshot (in
//!   memory);
//! - `save_bytes`: `World::save_bytes` into a pre-sized buffer (what
//!   `kiln_world_save` does); `restore_bytes`: `World::restore_bytes` of those bytes;
//! - `rebuild`: the naive reference — building the scene's world afresh (what a game
//!   without snapshots does to get back to a known state, losing contacts, warm
//!   starts and sleep);
//! - `restore_8_steps`: a restore from bytes and 8 steps on one worker, a rollback frame's work
//!   (target: within one 16.7 ms frame for the rain).
//!
//! Before timing it prints each in-memory snapshot's heap bytes (counted by this
//! program's allocator, the examples' `live_heap`) and each byte snapshot's size.

#[path = "../../runtime/examples/common/live_heap.rs"]
mod live_heap;

use criterion::{criterion_group, Criterion};
use kiln::jobs::ThreadPool;
use kiln::physics::scenes;
use kiln_benches::report_ratios;
use live_heap::{live, Counting};

#[global_allocator]
static GLOBAL: Counting = Counting;

fn snapshot(c: &mut Criterion) {
    let pool = ThreadPool::new(0);
    for (scene, steps) in [(scenes::large_pyramid(), 60), (scenes::rain(4096), 300)] {
        let (mut world, _) = scene.build();
        for _ in 0..steps {
            world.step(1.0 / 60.0, pool.jobs()).unwrap();
        }
        let before = live();
        let saved = world.snapshot().unwrap();
        let bytes = live() - before;
        println!(
            "snapshot {}: {} bodies ({} awake), {:.1} MB ({} bytes per body)",
            scene.name,
            world.bodies().len(),
            world.awake_count(),
            bytes as f64 / 1e6,
            bytes / world.bodies().len() as isize
        );
        let mut buffer = vec![0u8; world.snapshot_size().unwrap()];
        let size = world.save_bytes(&mut buffer).unwrap();
        println!(
            "snapshot {} as bytes: {:.2} MB ({} bytes per body)",
            scene.name,
            size as f64 / 1e6,
            size / world.bodies().len()
        );
        let mut group = c.benchmark_group(format!("snapshot_{}", scene.name));
        group.sample_size(10);
        group.bench_function("save", |b| b.iter(|| world.snapshot().unwrap()));
        group.bench_function("restore", |b| b.iter(|| world.restore(&saved).unwrap()));
        group.bench_function("save_bytes", |b| b.iter(|| world.save_bytes(&mut buffer).unwrap()));
        group.bench_function("restore_bytes", |b| b.iter(|| world.restore_bytes(&buffer[..size]).unwrap()));
        group.bench_function("rebuild", |b| b.iter(|| scene.build()));
        group.bench_function("restore_8_steps", |b| {
            b.iter(|| {
                world.restore_bytes(&buffer[..size]).unwrap();
                for _ in 0..8 {
                    world.step(1.0 / 60.0, pool.jobs()).unwrap();
                }
            })
        });
        group.finish();
    }
}

criterion_group!(benches, snapshot);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    for scene in ["large_pyramid", "rain"] {
        report_ratios(
            &format!("snapshot_{scene}"),
            &[("restore", "rebuild"), ("save", "rebuild"), ("restore_bytes", "rebuild"), ("save_bytes", "rebuild")],
        );
    }
}
