//! `integrated`: the integrated frame (`kiln::integrated`) on the demo scene: 1,024
//! bodies resting on a 128 m voxel terrain (sleep off, so every step solves them),
//! the terrain and bodies in a tracer, a layer of 400 DDGI probes 6 m apart over it,
//! 256 of them updated per frame (64 rays each).
//!
//! - `integrated_frame/overlapped`: the GPU's submission (instances, TLAS, probes)
//!   runs while the next step runs on the CPU;
//! - `integrated_frame/sequential` (the peer): the same frame, the submission waited
//!   for at once, then the step.
//!
//! Printed first: the mean GPU time, step time and blocked wait per frame in both modes.
//! Needs a Vulkan device (lavapipe on machines without a GPU).

use criterion::{criterion_group, Criterion};
use kiln::gpu::{Gpu, GpuConfig, RayTracer};
use kiln::integrated::{demo_frame, DemoGi, IntegratedFrame};
use kiln::jobs::ThreadPool;
use kiln::physics::scenes;
use kiln_benches::report_ratios;

const DT: f32 = 1.0 / 60.0;

fn frame() -> Option<IntegratedFrame> {
    let gpu = match Gpu::new(&GpuConfig::from_env()) {
        Ok(gpu) => gpu,
        Err(e) => {
            println!("integrated: no Vulkan device ({e}); nothing measured");
            return None;
        }
    };
    println!("integrated: {}", gpu.info().name);
    let mut scene = scenes::rain_over("demo", 128, 1024);
    scene.enable_sleep = false;
    let gi = DemoGi { spacing: 6.0, layers: 1, probes_per_frame: 256, rays_per_probe: 64 };
    let tracer = RayTracer::with_gpu(gpu).expect("a tracer");
    Some(demo_frame(&scene, Some(tracer), Some(gi)).expect("the demo frame"))
}

fn set_overlap(frame: &mut IntegratedFrame, on: bool) {
    frame.gpu_mut().expect("a GPU side").overlap = on;
}

fn figures(frame: &mut IntegratedFrame, pool: &ThreadPool) {
    for on in [true, false] {
        set_overlap(frame, on);
        let (mut gpu, mut cpu, mut blocked, mut step) = (0.0, 0.0, 0.0, 0.0);
        const N: u32 = 60;
        for _ in 0..N {
            frame.run(pool, DT).expect("a frame");
            let t = frame.gpu_timing();
            gpu += t.gpu_ms;
            cpu += t.overlapped_cpu_ms;
            blocked += t.blocked_ms;
            step += frame.world().profile().total as f64;
        }
        let n = N as f64;
        println!(
            "integrated {}: GPU {:.2} ms, step {:.2} ms, CPU between submit and wait {:.2} ms, wait blocked {:.2} ms per frame",
            if on { "overlapped" } else { "sequential" },
            gpu / n,
            step / n,
            cpu / n,
            blocked / n
        );
    }
}

fn integrated(c: &mut Criterion) {
    let Some(mut frame) = frame() else { return };
    let pool = ThreadPool::with_default_threads();
    for _ in 0..240 {
        frame.run(&pool, DT).expect("a frame");
    }
    figures(&mut frame, &pool);
    let mut group = c.benchmark_group("integrated_frame");
    group.sample_size(20);
    for (name, on) in [("overlapped", true), ("sequential", false)] {
        set_overlap(&mut frame, on);
        group.bench_function(name, |b| b.iter(|| frame.run(&pool, DT).expect("a frame")));
    }
    group.finish();
}

criterion_group!(benches, integrated);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    report_ratios("integrated_frame", &[("overlapped", "sequential")]);
}
