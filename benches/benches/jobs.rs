//! `jobs`: spawn+join throughput and parallel_for over 1M f32, Kiln vs rayon.
//!
//! Thread counts are *participants*: Kiln's `ThreadPool::new(n - 1)` plus the calling
//! thread (which helps), against a rayon pool of `n` threads (whose caller blocks).

use std::hint::black_box;

use criterion::{criterion_group, BenchmarkId, Criterion, Throughput};
use kiln::jobs::ThreadPool;
use kiln_benches::{heavy_op, light_op, report_ratios};
use rayon::prelude::*;

const LEN: usize = 1 << 20;

fn participants() -> Vec<usize> {
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let mut counts = vec![1, 2];
    for n in [4, 8, 16] {
        if n <= cores {
            counts.push(n);
        }
    }
    counts
}

fn rayon_pool(n: usize) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new().num_threads(n).build().unwrap()
}

fn spawn_join(c: &mut Criterion) {
    let mut group = c.benchmark_group("jobs_join_empty");
    group.throughput(Throughput::Elements(1024));
    for n in participants() {
        let kiln = ThreadPool::new(n - 1);
        let rayon = rayon_pool(n);
        // 1024 leaf jobs through a binary join tree.
        fn kiln_tree(pool: &ThreadPool, depth: u32) {
            if depth > 0 {
                pool.join(|_| kiln_tree(pool, depth - 1), |_| kiln_tree(pool, depth - 1));
            }
        }
        fn rayon_tree(depth: u32) {
            if depth > 0 {
                rayon::join(|| rayon_tree(depth - 1), || rayon_tree(depth - 1));
            }
        }
        group.bench_function(BenchmarkId::new("kiln", n), |b| b.iter(|| kiln.install(|_| kiln_tree(&kiln, 10))));
        group.bench_function(BenchmarkId::new("rayon", n), |b| b.iter(|| rayon.install(|| rayon_tree(10))));
    }
    group.finish();
}

fn parallel_for(c: &mut Criterion, name: &str, op: fn(f32) -> f32, grain: usize, sample_size: usize) {
    let mut group = c.benchmark_group(name);
    group.throughput(Throughput::Elements(LEN as u64)).sample_size(sample_size);
    let mut data: Vec<f32> = (0..LEN).map(|i| i as f32 * 1e-3).collect();
    group.bench_function("plain_loop", |b| {
        b.iter(|| {
            for x in data.iter_mut() {
                *x = op(*x);
            }
            black_box(&data);
        })
    });
    for n in participants() {
        let kiln = ThreadPool::new(n - 1);
        let rayon = rayon_pool(n);
        group.bench_function(BenchmarkId::new("kiln", n), |b| {
            b.iter(|| {
                let out = SyncPtr(data.as_mut_ptr());
                kiln.parallel_for(0..LEN, grain, |chunk, _| {
                    let out = &out;
                    for i in chunk {
                        // SAFETY: chunks are disjoint and `data` outlives the loop.
                        unsafe { *out.0.add(i) = op(*out.0.add(i)) };
                    }
                });
                black_box(&data);
            })
        });
        group.bench_function(BenchmarkId::new("rayon", n), |b| {
            b.iter(|| {
                rayon.install(|| {
                    data.par_chunks_mut(grain).for_each(|chunk| chunk.iter_mut().for_each(|x| *x = op(*x)))
                });
                black_box(&data);
            })
        });
    }
    group.finish();
}

struct SyncPtr(*mut f32);
// SAFETY: only used for disjoint writes.
unsafe impl Sync for SyncPtr {}

fn parallel_for_trivial(c: &mut Criterion) {
    parallel_for(c, "jobs_parallel_for_1M_trivial", light_op, 16 * 1024, 50);
}

fn parallel_for_heavy(c: &mut Criterion) {
    parallel_for(c, "jobs_parallel_for_1M_200ns", heavy_op, 1024, 10);
}

criterion_group!(benches, spawn_join, parallel_for_trivial, parallel_for_heavy);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    for group in ["jobs_join_empty", "jobs_parallel_for_1M_trivial", "jobs_parallel_for_1M_200ns"] {
        let pairs: Vec<(String, String)> =
            participants().iter().map(|n| (format!("kiln/{n}"), format!("rayon/{n}"))).collect();
        let pairs: Vec<(&str, &str)> = pairs.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
        report_ratios(group, &pairs);
    }
    for group in ["jobs_parallel_for_1M_trivial", "jobs_parallel_for_1M_200ns"] {
        report_ratios(group, &[("kiln/1", "plain_loop")]);
    }
}
