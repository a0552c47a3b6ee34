//! `snapshot`: what rollback costs. For `large_pyramid` (5,050 boxes stacked, sleep
//! off), `rain` (4,096 bodies over hills, sleep on, 5 s in: landing and settling) and
//! `rain_settled` (the same 20 s in, most islands asleep):
//!
//! - `save`: `World::snapshot`; `restore`: `World::restore` of that snapshot (in
//!   memory);
//! - `save_bytes`: `World::save_bytes` into a pre-sized buffer (what
//!   `kiln_world_save` does); `restore_bytes`: `World::restore_bytes` of those bytes;
//! - `save_awake_bytes`, `restore_awake_bytes`: the same for an awake-only snapshot
//!   (`kiln_world_save_awake`: resting bodies and sleeping groups left out, named by
//!   a checksum), against the full one;
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
    let scenes = [
        ("large_pyramid", scenes::large_pyramid(), 60),
        ("rain", scenes::rain(4096), 300),
        ("rain_settled", scenes::rain(4096), 1200),
    ];
    for (name, scene, steps) in scenes {
        let (mut world, _) = scene.build();
        for _ in 0..steps {
            world.step(1.0 / 60.0, pool.jobs()).unwrap();
        }
        let before = live();
        let saved = world.snapshot().unwrap();
        let bytes = live() - before;
        println!(
            "snapshot {}: {} bodies ({} awake), {:.1} MB ({} bytes per body)",
            name,
            world.bodies().len(),
            world.awake_count(),
            bytes as f64 / 1e6,
            bytes / world.bodies().len() as isize
        );
        let mut buffer = vec![0u8; world.snapshot_size().unwrap()];
        let size = world.save_bytes(&mut buffer).unwrap();
        let mut awake = vec![0u8; size];
        let awake_size = world.save_awake_bytes(&mut awake).unwrap();
        println!(
            "snapshot {} as bytes: {:.2} MB ({} bytes per body); awake only {:.2} MB",
            name,
            size as f64 / 1e6,
            size / world.bodies().len(),
            awake_size as f64 / 1e6
        );
        let mut group = c.benchmark_group(format!("snapshot_{name}"));
        group.sample_size(10);
        group.bench_function("save", |b| b.iter(|| world.snapshot().unwrap()));
        group.bench_function("restore", |b| b.iter(|| world.restore(&saved).unwrap()));
        group.bench_function("save_bytes", |b| b.iter(|| world.save_bytes(&mut buffer).unwrap()));
        group.bench_function("restore_bytes", |b| b.iter(|| world.restore_bytes(&buffer[..size]).unwrap()));
        group.bench_function("save_awake_bytes", |b| b.iter(|| world.save_awake_bytes(&mut awake).unwrap()));
        group.bench_function("restore_awake_bytes", |b| b.iter(|| world.restore_bytes(&awake[..awake_size]).unwrap()));
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
    for scene in ["large_pyramid", "rain", "rain_settled"] {
        report_ratios(
            &format!("snapshot_{scene}"),
            &[
                ("restore", "rebuild"),
                ("save", "rebuild"),
                ("restore_bytes", "rebuild"),
                ("save_bytes", "rebuild"),
                ("restore_awake_bytes", "restore_bytes"),
                ("save_awake_bytes", "save_bytes"),
            ],
        );
    }
}
