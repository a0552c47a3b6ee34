//! `gpu_trace`: Kiln's Vulkan passes on the present device (lavapipe without a GPU)
//! against the CPU references in the same run:
//!
//! - `gpu_trace/primary`: 102,400 coherent camera rays (320 x 320) over 64 instances
//!   of a 20,000-triangle mesh; `gpu` is one submission of the trace pass, `cpu` is
//!   the CPU reference traversal on all cores (rayon);
//! - `gpu_refit/1m`: refit of a 1,002,528-triangle BLAS after its vertices moved;
//!   `gpu` vs the single-threaded CPU refit;
//! - `gpu_tlas/10k`, `gpu_tlas/100k`: full TLAS rebuild (boxes, Morton, sort, LBVH,
//!   boxes) vs the CPU reference build (sequential).
//!
//! GPU wall times include submission and the fence wait; the per-pass GPU times
//! from timestamp queries are printed after each group.

use criterion::{criterion_group, Criterion, Throughput};
use kiln::gpu::{
    grid_mesh, trace_cpu, Blas, BlasRefit, BufferMemory, CpuTlas, Gpu, GpuBlas, GpuConfig, GpuHit, GpuRay, GpuScene,
    Scene, TlasBuilder, Tracer, TransientLens, NO_HIT,
};
use kiln_benches::{report_ratios, SplitMix};
use rayon::prelude::*;

fn grid(n: u32, rng: &mut SplitMix) -> (Vec<[f32; 3]>, Vec<[u32; 3]>) {
    grid_mesh(n, 1.0 / n as f32, |_, _| 0.05 * rng.range(-1.0, 1.0))
}

fn print_timings(gpu: &Gpu, what: &str) {
    for t in gpu.last_timings() {
        println!("gpu timestamps {what}: pass '{}' {:.3} ms", t.name, t.milliseconds);
    }
}

fn open_gpu() -> Option<Gpu> {
    match Gpu::new(&GpuConfig::from_env()) {
        Ok(gpu) => {
            println!("gpu_trace: device {} ({:?}, {})", gpu.info().name, gpu.info().kind, gpu.info().driver);
            Some(gpu)
        }
        Err(err) => {
            println!("gpu_trace: no Vulkan device ({err}); nothing to measure");
            None
        }
    }
}

fn primary(c: &mut Criterion, gpu: &mut Gpu) {
    let mut rng = SplitMix(7);
    let mut scene = Scene::new();
    let (p, t) = grid(100, &mut rng);
    let mesh = scene.add_mesh(&p, &t).unwrap();
    for i in 0..64 {
        let (x, z) = ((i % 8) as f32, (i / 8) as f32);
        let transform = [[1.0, 0.0, 0.0, x], [0.0, 1.0, 0.0, 0.02 * rng.range(-1.0, 1.0)], [0.0, 0.0, 1.0, z]];
        scene.add_instance(mesh, &transform, 1, i).unwrap();
    }
    let side = 320;
    let rays: Vec<GpuRay> = (0..side * side)
        .map(|i| {
            let (px, py) = ((i % side) as f32 / side as f32, (i / side) as f32 / side as f32);
            let target = glam::Vec3::new(8.0 * px, 0.0, 8.0 * py);
            let origin = glam::Vec3::new(4.0, 6.0, -3.0);
            GpuRay {
                origin: origin.to_array(),
                t_min: 0.0,
                dir: (target - origin).normalize().to_array(),
                t_max: 1e30,
                mask: u32::MAX,
                ..GpuRay::default()
            }
        })
        .collect();
    let gpu_scene = GpuScene::new(gpu, &scene, TransientLens::default()).unwrap();
    let builder = TlasBuilder::new(gpu).unwrap();
    let tracer = Tracer::new(gpu).unwrap();
    gpu.submit("tlas", |rec| {
        gpu_scene.upload_instances(rec, &scene, &[], true)?;
        builder.record(rec, &gpu_scene)
    })
    .unwrap();
    let n = scene.instances().len();
    let tlas: Vec<kiln::gpu::TlasNode> = gpu.read(gpu_scene.tlas_nodes(), 2 * n - 1).unwrap();
    let ray_buffer = gpu.buffer_from("rays", &rays).unwrap();
    let hits = gpu.buffer("hits", 48 * rays.len() as u64, BufferMemory::Device).unwrap();
    let count = rays.len() as u32;
    let view = scene.trace_scene(&tlas);
    // Check before measuring: GPU and CPU agree on what was hit.
    gpu.submit("trace", |rec| {
        rec.pass("trace", |rec| tracer.record(rec, &gpu_scene, &ray_buffer, &hits, count, false))
    })
    .unwrap();
    print_timings(gpu, "primary 102,400 rays");
    let gpu_hits: Vec<GpuHit> = gpu.read(&hits, rays.len()).unwrap();
    let cpu_hits: Vec<GpuHit> = rays.par_iter().map(|r| trace_cpu(&view, r, false)).collect();
    let agree =
        gpu_hits.iter().zip(&cpu_hits).filter(|(g, c)| (g.instance == NO_HIT) == (c.instance == NO_HIT)).count();
    let hit_count = cpu_hits.iter().filter(|h| h.instance != NO_HIT).count();
    println!("gpu_trace/primary: {hit_count} of {} rays hit; GPU and CPU agree on {agree}", rays.len());

    let mut group = c.benchmark_group("gpu_trace");
    group.throughput(Throughput::Elements(rays.len() as u64)).sample_size(10);
    group.bench_function("primary_gpu", |b| {
        b.iter(|| gpu.submit("trace", |rec| tracer.record(rec, &gpu_scene, &ray_buffer, &hits, count, false)).unwrap())
    });
    group.bench_function("primary_cpu", |b| {
        b.iter(|| rays.par_iter().map(|r| trace_cpu(&view, r, false).t).sum::<f32>())
    });
    group.finish();
}

fn refit(c: &mut Criterion, gpu: &mut Gpu) {
    let mut rng = SplitMix(9);
    let (positions, triangles) = grid(708, &mut rng);
    let blas = Blas::build(&positions, &triangles).unwrap();
    println!("gpu_refit: {} triangles, {} leaves, depth {}", blas.triangle_count(), blas.leaves.len(), blas.depth);
    let moved: Vec<[f32; 3]> = positions.iter().map(|p| [p[0], p[1] + 0.01 * rng.range(-1.0, 1.0), p[2]]).collect();
    let gpu_blas = GpuBlas::upload(gpu, &blas, &moved).unwrap();
    let kernel = BlasRefit::new(gpu).unwrap();
    gpu.submit("refit", |rec| rec.pass("blas refit 1M", |rec| kernel.record(rec, &gpu_blas))).unwrap();
    print_timings(gpu, "refit 1M triangles");
    let mut cpu = blas.clone();
    let mut group = c.benchmark_group("gpu_refit");
    group.throughput(Throughput::Elements(blas.triangle_count() as u64)).sample_size(10);
    group.bench_function("1m_gpu", |b| b.iter(|| gpu.submit("refit", |rec| kernel.record(rec, &gpu_blas)).unwrap()));
    group.bench_function("1m_cpu", |b| b.iter(|| cpu.refit(&moved).unwrap()));
    group.finish();
}

fn tlas(c: &mut Criterion, gpu: &mut Gpu) {
    let mut rng = SplitMix(11);
    let mut group = c.benchmark_group("gpu_tlas");
    group.sample_size(10);
    for (label, count) in [("10k", 10_000u32), ("100k", 100_000)] {
        let mut scene = Scene::new();
        let mesh = scene.add_mesh(&[[0.0; 3], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]], &[[0, 1, 2]]).unwrap();
        for i in 0..count {
            let t = [rng.range(-500.0, 500.0), rng.range(-50.0, 50.0), rng.range(-500.0, 500.0)];
            let transform = [[1.0, 0.0, 0.0, t[0]], [0.0, 1.0, 0.0, t[1]], [0.0, 0.0, 1.0, t[2]]];
            scene.add_instance(mesh, &transform, 1, i).unwrap();
        }
        let gpu_scene = GpuScene::new(gpu, &scene, TransientLens::default()).unwrap();
        let builder = TlasBuilder::new(gpu).unwrap();
        gpu.submit("tlas", |rec| {
            gpu_scene.upload_instances(rec, &scene, &[], true)?;
            rec.pass("tlas rebuild", |rec| builder.record(rec, &gpu_scene))
        })
        .unwrap();
        print_timings(gpu, &format!("tlas {label} instances"));
        group.throughput(Throughput::Elements(u64::from(count)));
        group.bench_function(format!("{label}_gpu"), |b| {
            b.iter(|| gpu.submit("tlas", |rec| builder.record(rec, &gpu_scene)).unwrap())
        });
        group.bench_function(format!("{label}_cpu"), |b| {
            b.iter(|| {
                let boxes = scene.instance_boxes();
                CpuTlas::build(&kiln::gpu::sorted_keys(&boxes), &boxes).nodes.len()
            })
        });
    }
    group.finish();
}

fn gpu_trace(c: &mut Criterion) {
    let Some(mut gpu) = open_gpu() else { return };
    primary(c, &mut gpu);
    refit(c, &mut gpu);
    tlas(c, &mut gpu);
}

criterion_group!(benches, gpu_trace);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    report_ratios("gpu_trace", &[("primary_gpu", "primary_cpu")]);
    report_ratios("gpu_refit", &[("1m_gpu", "1m_cpu")]);
    report_ratios("gpu_tlas", &[("10k_gpu", "10k_cpu"), ("100k_gpu", "100k_cpu")]);
}
