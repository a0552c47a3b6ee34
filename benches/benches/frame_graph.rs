//! `frame_graph`: executing a 100-pass graph of empty passes, against the floor of
//! calling 100 boxed closures in a loop (the naive reference). Target: < 50 µs/frame.

use std::hint::black_box;

use criterion::{criterion_group, Criterion};
use kiln::frame::{CompiledGraph, FrameGraph};
use kiln::jobs::ThreadPool;
use kiln_benches::report_ratios;

const PASSES: usize = 100;

/// `chains` independent chains of `PASSES / chains` passes each (1 = one long chain,
/// 100 = one level of 100 independent passes).
fn graph(chains: usize) -> CompiledGraph {
    let mut g = FrameGraph::new();
    let resources: Vec<_> = (0..chains).map(|c| g.resource(&format!("r{c}"), ())).collect();
    for p in 0..PASSES {
        g.pass(&format!("pass{p}")).writes(resources[p % chains]).run(|_| Ok(()));
    }
    g.compile().unwrap()
}

fn frame_graph(c: &mut Criterion) {
    let mut group = c.benchmark_group("frame_graph_100_empty_passes");
    let pool = ThreadPool::with_default_threads();
    for (name, chains) in [("chain", 1), ("ten_chains", 10), ("wide", 100)] {
        let mut g = graph(chains);
        group.bench_function(name, |b| b.iter(|| g.execute(&pool, 0.016).unwrap()));
    }
    let mut closures: Vec<Box<dyn FnMut() -> Result<(), ()> + Send>> =
        (0..PASSES).map(|_| Box::new(|| Ok(())) as Box<dyn FnMut() -> Result<(), ()> + Send>).collect();
    group.bench_function("naive_loop", |b| {
        b.iter(|| {
            for f in closures.iter_mut() {
                black_box(f()).unwrap();
            }
        })
    });
    group.finish();
}

criterion_group!(benches, frame_graph);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    report_ratios(
        "frame_graph_100_empty_passes",
        &[("chain", "naive_loop"), ("ten_chains", "naive_loop"), ("wide", "naive_loop")],
    );
}
