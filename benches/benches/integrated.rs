//! `integrated`: the integrated frame (`kiln::integrated`) on the demo scene: 1,024
//! bodies resting on a 128 m voxel terrain (sleep off, so every step solves them),
//! the terrain and bodies in a tracer, a layer of 400 DDGI probes 6 m apart over it,
//! 256 of them updated per frame (64 rays each).
//!
//! - `integrated_frame/overlapped`: the GPU's submission (instances, TLAS, probes)
//!   runs while the next step runs on the CPU;
//! - `integrated_frame/sequential` (the peer): the same frame, the submission waited
//!   for at once, then the step;
//! - `integrated_frame/changing`: the overlapped frame with its GPU scene changed
//!   before every frame ([`Churn`]: 16 cube instances added and 16 removed, a
//!   skinned sheet posed anew, a voxel edit of a terrain mirrored chunk by chunk, a
//!   mesh added and removed every 8th frame), against `overlapped` (a static GPU
//!   scene) as its peer.
//!
//! Printed first: the mean GPU time, step time and blocked wait per frame in both modes.
//! Needs a Vulkan device (lavapipe on machines without a GPU).

use std::collections::VecDeque;

use criterion::{criterion_group, Criterion};
use kiln::gpu::{box_mesh, grid_mesh, Gpu, GpuConfig, InstanceId, MeshId, RayTracer, SkinData, IDENTITY};
use kiln::integrated::{demo_frame, DemoGi, IntegratedFrame};
use kiln::jobs::ThreadPool;
use kiln::math::IVec3;
use kiln::physics::scenes;
use kiln::terrain::{Material, Terrain};
use kiln_benches::{report_ratios, SplitMix};

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

/// What the `changing` frame changes in the GPU scene before each frame.
struct Churn {
    cube: MeshId,
    /// Cube instances live now, oldest first.
    ring: VecDeque<InstanceId>,
    sheet: InstanceId,
    /// A terrain 16 m below the demo's, mirrored chunk by chunk.
    terrain: Terrain,
    frame: u32,
    rng: SplitMix,
}

impl Churn {
    fn new(tracer: &mut RayTracer) -> Churn {
        let (p, t) = box_mesh([0.5, 0.5, 0.5]);
        let cube = tracer.add_mesh(&p, &t).expect("a cube");
        let (rest, tris) = grid_mesh(16, 0.5, |_, _| 12.0);
        let joints = rest.iter().map(|p| [(p[0] / 2.0) as u16 % 4, 0, 0, 0]).collect();
        let weights = vec![[1.0, 0.0, 0.0, 0.0]; rest.len()];
        let skin = SkinData::new(rest, joints, weights, 4).expect("a skin");
        let sheet_mesh = tracer.add_skinned_mesh(skin, &tris).expect("a skinned mesh");
        let sheet = tracer.add_skinned_instance(sheet_mesh, &IDENTITY, u32::MAX, 9_000).expect("a skinned instance");
        let mut terrain = Terrain::new(0.5);
        terrain.fill(IVec3::new(0, -40, 0), IVec3::new(63, -33, 63), Material::ROCK);
        tracer.add_terrain(&terrain, u32::MAX, 9_001).expect("a mirrored terrain");
        let mut churn = Churn { cube, ring: VecDeque::new(), sheet, terrain, frame: 0, rng: SplitMix(94) };
        for _ in 0..64 {
            churn.add_cube(tracer);
        }
        churn
    }

    fn add_cube(&mut self, tracer: &mut RayTracer) {
        let (x, z) = (self.rng.range(4.0, 124.0), self.rng.range(4.0, 124.0));
        let place = [[1.0, 0.0, 0.0, x], [0.0, 1.0, 0.0, 30.0], [0.0, 0.0, 1.0, z]];
        self.ring.push_back(tracer.add_instance(self.cube, &place, u32::MAX, 9_002).expect("a cube instance"));
    }

    /// One frame's changes.
    fn apply(&mut self, tracer: &mut RayTracer) {
        for _ in 0..16 {
            let oldest = self.ring.pop_front().expect("64 live");
            tracer.remove_instance(oldest).expect("a live instance");
            self.add_cube(tracer);
        }
        let phase = self.frame as f32 * 0.1;
        let bones: Vec<_> = (0..4)
            .map(|b| {
                let (s, c) = (phase + b as f32 * 0.3).sin_cos();
                [[c, -s, 0.0, 0.0], [s, c, 0.0, b as f32], [0.0, 0.0, 1.0, 0.0]]
            })
            .collect();
        tracer.set_bones(self.sheet, &bones).expect("the sheet's bones");
        // Dig or refill a 4-voxel cube in the terrain's top, walking across it.
        let at = IVec3::new(4 * (self.frame % 16) as i32, -36, 4 * ((self.frame / 16) % 16) as i32);
        let material = if (self.frame / 256).is_multiple_of(2) { Material::AIR } else { Material::ROCK };
        self.terrain.fill(at, at + IVec3::splat(3), material);
        tracer.sync_terrain(&self.terrain).expect("the terrain's edit");
        if self.frame.is_multiple_of(8) {
            let (p, t) = box_mesh([0.3, 0.6, 0.3]);
            let mesh = tracer.add_mesh(&p, &t).expect("a mesh");
            tracer.remove_mesh(mesh).expect("an unused mesh");
        }
        self.frame += 1;
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
    set_overlap(&mut frame, true);
    let mut churn = Churn::new(&mut frame.gpu_mut().expect("a GPU side").tracer);
    group.bench_function("changing", |b| {
        b.iter(|| {
            churn.apply(&mut frame.gpu_mut().expect("a GPU side").tracer);
            frame.run(&pool, DT).expect("a frame")
        })
    });
    group.finish();
}

criterion_group!(benches, integrated);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    report_ratios("integrated_frame", &[("overlapped", "sequential"), ("changing", "overlapped")]);
}
