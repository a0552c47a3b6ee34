//! The integrated frame: the physics step, the GPU scene and DDGI in one compiled
//! frame graph, with the GPU's work overlapping the next step on the CPU.
//!
//! ```text
//!  level   pass                 does
//!  0       gpu.submit           last frame's body poses -> instances; one submission:
//!                               instance upload, BLAS refit, TLAS rebuild, DDGI probe
//!                               update; returns at once (the GPU runs on)
//!  0..5    physics.broadphase   this frame's step, its jobs on the workers
//!          ... physics.sleep
//!  6       poses                this frame's poses -> the snapshot the next
//!                               frame's gpu.submit reads
//!  6       gpu.wait             waits on the submission's fence; GPU timings
//! ```
//!
//! The GPU inputs are double-buffered: the snapshot holds frame N-1's poses while the
//! step writes frame N's into the world, and the submission copies the snapshot into
//! the staging ring when it records, so neither side waits on the other until
//! `gpu.wait`. The GPU therefore shows the world one frame late, as a renderer that
//! overlaps simulation and drawing does. [`GpuFrameTiming`] says how much of the
//! GPU's time the step hid: the wait blocks only for what the CPU did not cover.
//!
//! On an engine's device ([`IntegratedFrame::run_into`]) `gpu.submit` records the
//! same work into the engine's command buffer instead, and `gpu.wait` waits for
//! nothing: the engine submits it with its own frame.
//!
//! The physics side is the world's own step (the same passes as
//! [`World::add_step_passes`]), so it is deterministic for any worker count; the GPU
//! side reads only the snapshot, so it is too.

use std::sync::Mutex;
use std::time::Instant;

#[cfg(any(test, feature = "demo"))]
mod demo;
#[cfg(any(test, feature = "demo"))]
pub use demo::{demo_frame, DemoGi};

use crate::frame::{CompiledGraph, FrameGraph, GraphError, Profile, Res};
use crate::gpu::{GiVolume, GpuError, GpuTiming, RayTracer};
use crate::jobs::Executor;
use crate::math::Isometry;
use crate::physics::{BodyId, World};

/// Body poses at the end of a step, by body slot.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Poses {
    by_slot: Vec<Option<(u32, Isometry)>>,
    /// The frame whose step produced them (`None` before the first).
    pub frame: Option<u64>,
}

impl Poses {
    /// Takes every live body's pose from `world` (keeps its memory).
    pub fn capture(&mut self, world: &World, frame: u64) {
        self.by_slot.iter_mut().for_each(|p| *p = None);
        let bodies = world.bodies();
        for set in [&bodies.awake, &bodies.resting] {
            for (row, id) in set.id.iter().enumerate() {
                let slot = id.index as usize;
                if slot >= self.by_slot.len() {
                    self.by_slot.resize(slot + 1, None);
                }
                self.by_slot[slot] = Some((id.generation, set.transform(row)));
            }
        }
        self.frame = Some(frame);
    }

    /// The pose of `body` in the snapshot, if it was alive.
    pub fn get(&self, body: BodyId) -> Option<Isometry> {
        match self.by_slot.get(body.index as usize)? {
            Some((generation, pose)) if *generation == body.generation => Some(*pose),
            _ => None,
        }
    }
}

/// How one frame's GPU work went.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct GpuFrameTiming {
    /// GPU milliseconds of the frame's submission (its passes' timestamps, summed).
    pub gpu_ms: f64,
    /// CPU milliseconds from the submission to the wait: the step ran meanwhile.
    pub overlapped_cpu_ms: f64,
    /// Milliseconds `gpu.wait` blocked (0 when the GPU finished during the step).
    pub blocked_ms: f64,
    /// DDGI probes the submission updated.
    pub probes_updated: u32,
}

impl GpuFrameTiming {
    /// The share of the GPU's time the CPU's step hid (1: the wait never blocked).
    pub fn hidden_fraction(&self) -> f64 {
        if self.gpu_ms <= 0.0 {
            return 0.0;
        }
        ((self.gpu_ms - self.blocked_ms) / self.gpu_ms).clamp(0.0, 1.0)
    }
}

/// The GPU half of the frame: the tracer (scene, TLAS) and the probe volume.
pub struct GpuSide {
    pub tracer: RayTracer,
    pub gi: Option<GiVolume>,
    /// Whether the GPU's work overlaps the step (default). Off, `gpu.submit` waits
    /// for it at once: the sequential frame the overlap is measured against.
    pub overlap: bool,
    timing: GpuFrameTiming,
    timings: Vec<GpuTiming>,
    submitted_at: Option<Instant>,
    /// Embedded mode, for one run ([`IntegratedFrame::run_into`]): the engine's
    /// command buffer and frame slot the GPU work is recorded into.
    record_into: Option<(ash::vk::CommandBuffer, u32)>,
}

impl GpuSide {
    pub fn new(tracer: RayTracer, gi: Option<GiVolume>) -> GpuSide {
        GpuSide {
            tracer,
            gi,
            overlap: true,
            timing: GpuFrameTiming::default(),
            timings: Vec::new(),
            submitted_at: None,
            record_into: None,
        }
    }

    /// The tracer and the probe volume back (for a caller that lends them to the
    /// frame one frame at a time; see [`IntegratedFrame::replace_gpu`]).
    pub fn into_parts(self) -> (RayTracer, Option<GiVolume>) {
        (self.tracer, self.gi)
    }

    /// The last frame's GPU timing.
    pub fn timing(&self) -> GpuFrameTiming {
        self.timing
    }

    /// The last frame's GPU pass timings, in submission order.
    pub fn pass_timings(&self) -> &[GpuTiming] {
        &self.timings
    }

    /// Instances follow `poses`; the scene update and the probe update are submitted
    /// (or recorded into the engine's command buffer: nothing to wait for then).
    fn submit(&mut self, poses: &Poses) -> Result<(), GpuError> {
        self.timing = GpuFrameTiming::default();
        self.timings.clear();
        if poses.frame.is_some() {
            self.tracer.sync_poses(|key| poses.get(BodyId::from_bits(key)));
        }
        if let Some((cmd, slot)) = self.record_into {
            // SAFETY: the caller of `IntegratedFrame::run_into` vouched for `cmd`
            // and `slot` (`Gpu::record_into`'s contract) for this run.
            unsafe {
                self.timing.probes_updated = match self.gi.as_mut() {
                    Some(gi) => gi.record_update(&mut self.tracer, cmd, slot)?,
                    None => 0,
                };
                if self.timing.probes_updated == 0 {
                    self.tracer.record_update(cmd, slot)?;
                }
            }
            return Ok(());
        }
        self.timing.probes_updated = match self.gi.as_mut() {
            Some(gi) => gi.update_async(&mut self.tracer)?,
            None => 0,
        };
        if self.timing.probes_updated == 0 {
            self.tracer.update_async()?;
        }
        self.submitted_at = Some(Instant::now());
        if !self.overlap {
            self.wait()?;
        }
        Ok(())
    }

    fn wait(&mut self) -> Result<(), GpuError> {
        let Some(submitted) = self.submitted_at.take() else { return Ok(()) };
        // Sequential (no overlap): the wait follows the submission at once.
        self.timing.overlapped_cpu_ms = if self.overlap { submitted.elapsed().as_secs_f64() * 1e3 } else { 0.0 };
        let wait = self.tracer.finish()?;
        self.timing.blocked_ms = wait.blocked_ms;
        self.timings.clear();
        self.timings.extend_from_slice(self.tracer.frame_timings());
        self.timing.gpu_ms = self.timings.iter().map(|t| t.milliseconds).sum();
        crate::profiling::plot_gpu(self.timing.gpu_ms, self.timing.blocked_ms);
        Ok(())
    }
}

/// The integrated frame (see the module docs).
pub struct IntegratedFrame {
    graph: CompiledGraph,
    world: Res<World>,
    poses: Res<Poses>,
    gpu: Res<Mutex<Option<GpuSide>>>,
}

fn gpu_failed(pass: &str, e: GpuError) -> GraphError {
    GraphError::PassFailed { pass: pass.to_owned(), message: e.to_string() }
}

impl IntegratedFrame {
    /// The frame for `world` and, when given, the GPU side (its tracer's instances
    /// follow bodies through [`RayTracer::follow_body`]). The GPU passes are part of
    /// the graph either way and do nothing while there is no GPU side.
    pub fn new(world: World, gpu: Option<GpuSide>) -> IntegratedFrame {
        let mut g = FrameGraph::new();
        let world = g.resource("world", world);
        let poses = g.resource("poses", Poses::default());
        let gpu = g.resource("gpu", Mutex::new(gpu));
        g.pass("gpu.submit").reads(poses).writes(gpu).run(move |ctx| {
            let poses = ctx.read(&poses)?;
            let side = ctx.write(&gpu)?;
            let mut side = side.lock().unwrap_or_else(|p| p.into_inner());
            match side.as_mut() {
                Some(side) => side.submit(&poses).map_err(|e| gpu_failed(ctx.name(), e)),
                None => Ok(()),
            }
        });
        World::add_step_passes(&mut g, world);
        g.pass("poses").reads(world).writes(poses).run(move |ctx| {
            let w = ctx.read(&world)?;
            ctx.write(&poses)?.capture(&w, ctx.frame().index);
            Ok(())
        });
        g.pass("gpu.wait").writes(gpu).after("physics.sleep").run(move |ctx| {
            let side = ctx.write(&gpu)?;
            let mut side = side.lock().unwrap_or_else(|p| p.into_inner());
            match side.as_mut() {
                Some(side) => side.wait().map_err(|e| gpu_failed(ctx.name(), e)),
                None => Ok(()),
            }
        });
        let graph = g.compile().expect("the integrated frame's passes form a valid graph");
        IntegratedFrame { graph, world, poses, gpu }
    }

    /// Runs one frame of `dt` seconds on `executor`.
    pub fn run(&mut self, executor: &dyn Executor, dt: f32) -> Result<(), GraphError> {
        self.graph.execute(executor, dt)
    }

    /// Embedded mode: runs one frame as [`IntegratedFrame::run`], but `gpu.submit`
    /// records the GPU side's work (scene update, probe update with its irradiance
    /// read-back) into the engine's `cmd` for frame slot `slot` instead of
    /// submitting it, and `gpu.wait` has nothing to wait for: the engine submits.
    /// No GPU timings are measured. The recording happens on one of the executor's
    /// threads while this call runs.
    ///
    /// # Safety
    /// As [`crate::gpu::Gpu::record_into`], and `cmd` may be recorded from another
    /// thread during the call (the engine records nothing into it meanwhile).
    pub unsafe fn run_into(
        &mut self,
        executor: &dyn Executor,
        dt: f32,
        cmd: ash::vk::CommandBuffer,
        slot: u32,
    ) -> Result<(), GraphError> {
        if let Some(side) = self.gpu_mut() {
            side.record_into = Some((cmd, slot));
        }
        let result = self.graph.execute(executor, dt);
        if let Some(side) = self.gpu_mut() {
            side.record_into = None;
        }
        result
    }

    pub fn world(&self) -> &World {
        self.graph.resource(&self.world).expect("the frame's own resource")
    }

    /// Between frames: edits to the world (bodies, forces, terrain).
    pub fn world_mut(&mut self) -> &mut World {
        self.graph.resource_mut(&self.world).expect("the frame's own resource")
    }

    /// The poses the next frame's GPU work shows.
    pub fn poses(&self) -> &Poses {
        self.graph.resource(&self.poses).expect("the frame's own resource")
    }

    /// Between frames: the GPU side, if any.
    pub fn gpu_mut(&mut self) -> Option<&mut GpuSide> {
        let side = self.graph.resource_mut(&self.gpu).expect("the frame's own resource");
        side.get_mut().unwrap_or_else(|p| p.into_inner()).as_mut()
    }

    /// Between frames: puts `world` in the frame and returns the one it held. For a
    /// caller that keeps its world elsewhere and lends it for each frame (the C API
    /// does); the snapshot of poses stays.
    pub fn replace_world(&mut self, world: World) -> World {
        std::mem::replace(self.world_mut(), world)
    }

    /// Between frames: puts `side` in the frame (`None`: physics only) and returns
    /// the one it held.
    pub fn replace_gpu(&mut self, side: Option<GpuSide>) -> Option<GpuSide> {
        let held = self.graph.resource_mut(&self.gpu).expect("the frame's own resource");
        std::mem::replace(held.get_mut().unwrap_or_else(|p| p.into_inner()), side)
    }

    /// The last frame's GPU timing (zero without a GPU side).
    pub fn gpu_timing(&mut self) -> GpuFrameTiming {
        self.gpu_mut().map_or_else(GpuFrameTiming::default, |g| g.timing)
    }

    /// The last frame's GPU pass timings.
    pub fn gpu_pass_timings(&mut self) -> Vec<GpuTiming> {
        self.gpu_mut().map_or_else(Vec::new, |g| g.timings.clone())
    }

    /// CPU timings of the last frame's passes (names from [`IntegratedFrame::graph`]).
    pub fn profile(&self) -> &Profile {
        self.graph.profile()
    }

    /// The compiled graph (pass names, levels).
    pub fn graph(&self) -> &CompiledGraph {
        &self.graph
    }
}

/// The ray tracer following a world's bodies: physics and the GPU tied together here,
/// above both.
#[cfg(test)]
mod follow_tests {
    use crate::gpu::tests::{compare_hits, reference_hits};
    use crate::gpu::*;
    use crate::physics::BodyId;
    use crate::spatial::tests::Rng;

    #[test]
    fn ray_tracer_follows_bodies_skins_and_matches_the_cpu_reference() {
        use crate::math::Isometry;
        use crate::physics::{BodyDef, ShapeDef, World, WorldDef};
        use crate::shapes::Shape;
        let Some(gpu) = test_gpu("ray_tracer_follows_bodies_skins_and_matches_the_cpu_reference") else {
            return;
        };
        let mut tracer = RayTracer::with_gpu(gpu).unwrap();
        let mut rng = Rng(99);
        // An empty scene traces misses without touching the device.
        let probe = [GpuRay { dir: [0.0, -1.0, 0.0], t_max: f32::INFINITY, mask: u32::MAX, ..GpuRay::default() }];
        let mut one = [GpuHit::default()];
        tracer.trace(&probe, TraceMode::Closest, &mut one).unwrap();
        assert_eq!(one[0].instance, NO_HIT);

        // Ground: a 40 x 40 grid at y = 0 centred on the origin; a cube mesh for bodies.
        let (ground, ground_tris) = grid_mesh(40, 1.0, |_, _| 0.0);
        let ground_mesh = tracer.add_mesh(&ground, &ground_tris).unwrap();
        tracer
            .add_instance(ground_mesh, &[[1.0, 0.0, 0.0, -20.0], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, -20.0]], 1, 0)
            .unwrap();
        let (cube, cube_tris) = box_mesh([1.0, 1.0, 1.0]);
        let cube_mesh = tracer.add_mesh(&cube, &cube_tris).unwrap();
        // A skinned 10 x 10 sheet with 4 bones hovering above.
        let (rest, sheet_tris) = grid_mesh(10, 1.0, |_, _| 6.0);
        let joints = rest.iter().map(|p| [(p[0] / 3.0) as u16 % 4, 0, 0, 0]).collect();
        let weights = vec![[1.0, 0.0, 0.0, 0.0]; rest.len()];
        let skin = SkinData::new(rest, joints, weights, 4).unwrap();
        let sheet_mesh = tracer.add_skinned_mesh(skin, &sheet_tris).unwrap();
        let sheet = tracer.add_skinned_instance(sheet_mesh, &IDENTITY, 2, 7).unwrap();

        // 20 boxes falling onto a static floor, each mirrored by a cube instance scaled to
        // the box's half extents.
        let mut world = World::new(WorldDef::default());
        let floor = world.create_body(&BodyDef { motion: crate::physics::MotionType::Static, ..BodyDef::default() });
        let floor = floor.unwrap();
        world.add_shape(floor, Shape::cuboid(glam::Vec3::new(20.0, 0.5, 20.0)).unwrap(), ShapeDef::default()).unwrap();
        let mut bodies = Vec::new();
        for i in 0..20 {
            let p = glam::Vec3::new(rng.range(-8.0, 8.0), 2.0 + i as f32, rng.range(-8.0, 8.0));
            let body = world.create_body(&BodyDef { transform: Isometry::from_translation(p), ..BodyDef::default() });
            let body = body.unwrap();
            let half = rng.vec3(0.2, 0.8);
            world.add_shape(body, Shape::cuboid(half).unwrap(), ShapeDef::default()).unwrap();
            let scale = [[half.x, 0.0, 0.0, 0.0], [0.0, half.y, 0.0, 0.0], [0.0, 0.0, half.z, 0.0]];
            let instance = tracer.add_instance(cube_mesh, &scale, 1, 100 + i).unwrap();
            tracer.follow_body(instance, body.to_bits(), &scale).unwrap();
            bodies.push((body, instance));
        }
        let pool = crate::jobs::ThreadPool::new(0);
        let mut bones = vec![vec![IDENTITY; 4]];
        for frame in 0..3u32 {
            for _ in 0..20 {
                world.step(1.0 / 60.0, pool.jobs()).unwrap();
            }
            if frame == 2 {
                // A destroyed body's instance is hidden, not left behind.
                world.destroy_body(bodies[0].0).unwrap();
            }
            let hidden = tracer.sync_poses(|key| world.transform(BodyId::from_bits(key)).ok());
            assert_eq!(hidden, u32::from(frame == 2));
            bones[0] = (0..4)
                .map(|b| {
                    let (s, c) = (0.3 * (b + frame) as f32).sin_cos();
                    [[c, -s, 0.0, b as f32], [s, c, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0]]
                })
                .collect();
            tracer.set_bones(sheet, &bones[0]).unwrap();
            // Rays from above aimed at the bodies and the sheet, plus random ones.
            let rays: Vec<GpuRay> = (0..20_000)
                .map(|i| {
                    let origin = glam::Vec3::new(rng.range(-12.0, 12.0), 30.0, rng.range(-12.0, 12.0));
                    let dir = if i % 3 == 0 { rng.vec3(-1.0, 1.0) } else { glam::Vec3::new(0.0, -1.0, 0.0) };
                    let mask = if i % 5 == 0 { 1 } else { u32::MAX };
                    GpuRay { origin: origin.to_array(), dir: dir.to_array(), t_max: 1e30, mask, ..GpuRay::default() }
                })
                .collect();
            for mode in [TraceMode::Closest, TraceMode::Any] {
                let mut hits = vec![GpuHit::default(); rays.len()];
                tracer.trace(&rays, mode, &mut hits).unwrap();
                // The first trace of a frame updates the scene; the second only traces.
                let names: Vec<&str> = tracer.frame_timings().iter().map(|t| t.name).collect();
                if tracer.gpu().info().timestamps {
                    // The first frame's update also records the mesh arrays' upload.
                    let expected: &[&str] = match (mode, frame) {
                        (TraceMode::Closest, 0) => {
                            &["upload meshes", "upload instances", "skin + refit", "tlas build", "trace"]
                        }
                        (TraceMode::Closest, _) => &["upload instances", "skin + refit", "tlas build", "trace"],
                        (TraceMode::Any, _) => &["trace"],
                    };
                    assert_eq!(names, expected);
                    // One batch: the frame's timings are exactly that submission's.
                    assert_eq!(tracer.frame_timings(), tracer.gpu().last_timings());
                }
                // A full frame (update + trace): some hazards are covered by earlier
                // barriers (the trace reads what the TLAS build made visible), so fewer
                // buffer barriers than hazards. A trace alone: upload rays -> trace ->
                // read-back, two hazards, two barriers between entry and exit.
                let sync = tracer.gpu().last_sync();
                match mode {
                    TraceMode::Closest => assert!(sync.covered > 0 && sync.buffer_barriers < sync.hazards, "{sync:?}"),
                    TraceMode::Any => {
                        assert_eq!(
                            sync,
                            SyncStats { commands: 3, barriers: 4, buffer_barriers: 2, hazards: 2, covered: 0 }
                        )
                    }
                }
                let cpu = reference_hits(&tracer, &bones, &rays, mode == TraceMode::Any);
                let ties = compare_hits(None, &rays, &hits, &cpu, mode == TraceMode::Any);
                assert!(ties * 1000 <= rays.len(), "{ties} ties");
                if mode == TraceMode::Closest {
                    let seen = |id: u32| hits.iter().filter(|h| h.instance != NO_HIT && h.user_id == id).count();
                    assert!(seen(7) > 0 && seen(101) > 0, "rays see the sheet and the bodies");
                    assert_eq!(seen(100) > 0, frame < 2, "the destroyed body's instance is hidden");
                }
            }
            // The instances followed their bodies.
            for &(body, instance) in &bodies[1..] {
                let pose = world.transform(body).unwrap();
                let t = tracer.scene().instances()[tracer.instance_index(instance).unwrap() as usize].object_to_world;
                assert!((t[1][3] - pose.translation.y).abs() < 1e-6);
            }
        }
        // Refused input changes nothing; the next trace still matches the reference.
        let good = GpuRay {
            origin: [0.0, 30.0, 0.0],
            dir: [0.0, -1.0, 0.0],
            t_max: 1e30,
            mask: u32::MAX,
            ..GpuRay::default()
        };
        let mut hit = [GpuHit::default()];
        for bad in [
            GpuRay { origin: [f32::NAN, 0.0, 0.0], ..good },
            GpuRay { dir: [0.0; 3], ..good },
            GpuRay { dir: [f32::INFINITY, 0.0, 0.0], ..good },
            GpuRay { t_min: 2.0, t_max: 1.0, ..good },
            GpuRay { t_min: -1.0, ..good },
            GpuRay { t_max: f32::NAN, ..good },
        ] {
            assert!(tracer.trace(&[bad], TraceMode::Closest, &mut hit).is_err(), "{bad:?}");
        }
        assert!(tracer.trace(&[good, good], TraceMode::Closest, &mut hit).is_err());
        let singular = [[0.0f32; 4]; 3];
        let (first, second) = (bodies[1].1, bodies[2].1);
        let stale = crate::raytrace::SlotId { slot: 999, generation: 1 };
        assert!(tracer.set_transforms(&[first, stale], &[IDENTITY, IDENTITY]).is_err());
        assert!(tracer.set_transforms(&[first, second], &[IDENTITY, singular]).is_err());
        assert!(tracer.set_transforms(&[first], &[]).is_err());
        assert!(tracer.set_bones(sheet, &bones[0][..3]).is_err());
        assert!(tracer.set_bones(first, &bones[0]).is_err(), "a body's instance is not skinned");
        let mut nan_bones = bones[0].clone();
        nan_bones[2][1][1] = f32::NAN;
        assert!(tracer.set_bones(sheet, &nan_bones).is_err());
        assert!(tracer.follow_body(stale, bodies[1].0.to_bits(), &IDENTITY).is_err());
        assert!(tracer.follow_body(first, bodies[1].0.to_bits(), &singular).is_err());
        assert!(tracer.add_instance(stale, &IDENTITY, 1, 0).is_err());
        tracer.trace(&[good], TraceMode::Closest, &mut hit).unwrap();
        assert_eq!(hit[0], reference_hits(&tracer, &bones, &[good], false)[0]);
        assert_eq!(tracer.instance_count(), 22, "refused adds added nothing");
        assert_validation_clean(tracer.gpu());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::{
        assert_validation_clean, isometry_affine, sorted_keys, test_gpu, trace_cpu, CpuTlas, GpuRay, TraceMode,
    };
    use crate::jobs::ThreadPool;
    use crate::physics::scenes;
    use glam::Vec3;

    /// Bits of every body's state, in body order.
    fn pose_hash(world: &World, ids: &[BodyId]) -> u64 {
        world.state_hash(ids)
    }

    fn body_ids(world: &World) -> Vec<BodyId> {
        let b = world.bodies();
        let mut ids: Vec<BodyId> = b.awake.id.iter().chain(&b.resting.id).copied().collect();
        ids.sort_by_key(|id| id.index);
        ids
    }

    /// Without a GPU side the frame is the world's step: the same bits as
    /// `World::step`, and the snapshot holds the step's poses.
    #[test]
    fn without_a_gpu_the_frame_steps_like_world_step() {
        let scene = scenes::rain_over("demo", 48, 36);
        let (mut reference, ids) = scene.build();
        let mut frame = demo_frame(&scene, None, None).unwrap();
        let pool = ThreadPool::new(1);
        for _ in 0..60 {
            reference.step(1.0 / 60.0, pool.jobs()).unwrap();
            frame.run(&pool, 1.0 / 60.0).unwrap();
        }
        assert_eq!(pose_hash(frame.world(), &ids), pose_hash(&reference, &ids));
        assert_eq!(frame.poses().frame, Some(59));
        for &id in &ids {
            assert_eq!(frame.poses().get(id), Some(reference.transform(id).unwrap()));
        }
        assert_eq!(frame.gpu_timing(), GpuFrameTiming::default());
        // A body destroyed after the snapshot is gone from it only at the next one;
        // a stale handle of the same slot finds nothing.
        let gone = ids[0];
        frame.world_mut().destroy_body(gone).unwrap();
        assert!(frame.poses().get(gone).is_some());
        frame.run(&pool, 1.0 / 60.0).unwrap();
        assert_eq!(frame.poses().get(gone), None);
        assert_eq!(frame.poses().get(BodyId { generation: gone.generation + 1, ..gone }), None);
    }

    /// A world lent to the frame for each run and taken back after it (as the C API
    /// does) steps like one the frame owns, and the pose snapshot carries across.
    #[test]
    fn a_world_lent_for_each_run_steps_like_an_owned_one() {
        let scene = scenes::rain_over("demo", 48, 36);
        let (mut lent, ids) = scene.build();
        let mut owned = demo_frame(&scene, None, None).unwrap();
        let mut borrower = IntegratedFrame::new(World::new(crate::physics::WorldDef::default()), None);
        assert!(borrower.replace_gpu(None).is_none());
        let pool = ThreadPool::new(2);
        for _ in 0..60 {
            owned.run(&pool, 1.0 / 60.0).unwrap();
            let spare = borrower.replace_world(lent);
            borrower.run(&pool, 1.0 / 60.0).unwrap();
            lent = borrower.replace_world(spare);
        }
        assert_eq!(pose_hash(&lent, &ids), pose_hash(owned.world(), &ids));
        assert_eq!(borrower.world().bodies().awake.id.len() + borrower.world().bodies().resting.id.len(), 0);
        assert_eq!(borrower.poses(), owned.poses());
    }

    /// The integrated frame (physics step, instances from the last step's
    /// poses, BLAS/TLAS update and DDGI probe update in one submission that overlaps
    /// the next step) gives the same physics bits and the same probe irradiance for
    /// 1, 2 and 8 workers; the GPU's TLAS holds the previous step's poses and traces
    /// like the CPU reference; validation stays silent.
    #[test]
    fn integrated_frame_is_deterministic_for_1_2_and_8_workers_and_the_gpu_matches_the_cpu() {
        let test = "integrated_frame_is_deterministic_for_1_2_and_8_workers_and_the_gpu_matches_the_cpu";
        let scene = scenes::rain_over("demo", 48, 36);
        let gi = DemoGi { spacing: 8.0, layers: 2, probes_per_frame: 40, rays_per_probe: 32 };
        let mut outcomes = Vec::new();
        for threads in [0, 1, 7] {
            let Some(gpu) = test_gpu(test) else { return };
            let tracer = RayTracer::with_gpu(gpu).unwrap();
            let mut frame = demo_frame(&scene, Some(tracer), Some(gi)).unwrap();
            let pool = ThreadPool::new(threads);
            let ids = body_ids(frame.world());
            assert_eq!(ids.len(), 36);
            let mut hashes = Vec::new();
            for _ in 0..45 {
                frame.run(&pool, 1.0 / 60.0).unwrap();
                hashes.push(pose_hash(frame.world(), &ids));
            }
            // The sequential peer waits inside gpu.submit: nothing overlaps, and the
            // physics bits do not care.
            frame.gpu_mut().unwrap().overlap = false;
            frame.run(&pool, 1.0 / 60.0).unwrap();
            hashes.push(pose_hash(frame.world(), &ids));
            assert_eq!(frame.gpu_timing().overlapped_cpu_ms, 0.0);
            assert!(frame.gpu_timing().gpu_ms > 0.0);
            frame.gpu_mut().unwrap().overlap = true;
            let shown = frame.poses().clone();
            frame.run(&pool, 1.0 / 60.0).unwrap();
            hashes.push(pose_hash(frame.world(), &ids));

            // The graph: the GPU submission shares the first level with the step's
            // first stage; the wait comes after its last.
            let graph = frame.graph();
            let level_of = |name: &str| {
                let pass = graph.find_pass(name).unwrap();
                graph.levels().position(|l| l.contains(&(pass.index() as u32))).unwrap()
            };
            assert_eq!(level_of("gpu.submit"), level_of("physics.broadphase"));
            assert!(level_of("gpu.wait") > level_of("physics.sleep"));
            let timing = frame.gpu_timing();
            assert!(timing.gpu_ms > 0.0 && timing.overlapped_cpu_ms > 0.0, "{timing:?}");
            assert_eq!(timing.probes_updated, 40);
            eprintln!(
                "integrated frame, {} workers: GPU {:.2} ms, CPU step meanwhile {:.2} ms, wait blocked {:.2} ms ({:.0}% hidden)",
                threads + 1,
                timing.gpu_ms,
                timing.overlapped_cpu_ms,
                timing.blocked_ms,
                100.0 * timing.hidden_fraction()
            );
            let passes: Vec<&str> = frame.gpu_pass_timings().into_iter().map(|t| t.name).collect();
            for pass in ["upload instances", "tlas build", "gi trace", "gi blend"] {
                assert!(passes.iter().any(|p| p.contains(pass)), "{pass} in {passes:?}");
            }

            // The GPU scene shows the poses of the step before the last.
            let side = frame.gpu_mut().unwrap();
            let instances = side.tracer.scene().instances().to_vec();
            for &id in &ids {
                let instance = instances.iter().find(|i| i.user_id == id.index).unwrap();
                let want = isometry_affine(&shown.get(id).unwrap());
                assert_eq!(instance.object_to_world, want, "{id:?}");
            }
            // Rays down onto every body: GPU hits equal the CPU traversal's.
            let rays: Vec<GpuRay> = ids
                .iter()
                .map(|&id| {
                    let p = shown.get(id).unwrap().translation;
                    let origin = (p + Vec3::Y * 60.0).to_array();
                    GpuRay { origin, dir: [0.0, -1.0, 0.0], t_max: f32::INFINITY, mask: u32::MAX, ..GpuRay::default() }
                })
                .collect();
            let mut gpu_hits = vec![Default::default(); rays.len()];
            side.tracer.trace(&rays, TraceMode::Closest, &mut gpu_hits).unwrap();
            let boxes = side.tracer.scene().instance_boxes();
            let tlas = CpuTlas::build(&sorted_keys(&boxes), &boxes);
            let view = side.tracer.scene().trace_scene(&tlas.nodes);
            for (ray, gpu_hit) in rays.iter().zip(&gpu_hits) {
                let cpu_hit = trace_cpu(&view, ray, false);
                assert_eq!(gpu_hit.instance, cpu_hit.instance, "{ray:?}");
                assert!((gpu_hit.t - cpu_hit.t).abs() <= 1e-4 * (1.0 + cpu_hit.t), "{gpu_hit:?} vs {cpu_hit:?}");
            }
            let irradiance = {
                let GpuSide { tracer, gi, .. } = side;
                gi.as_mut().unwrap().field(tracer).unwrap().irradiance.clone()
            };
            assert!(irradiance.iter().any(|sh| *sh != Default::default()), "the probes saw light");
            assert_validation_clean(side.tracer.gpu());
            outcomes.push((threads, hashes, irradiance));
        }
        let (_, hashes, irradiance) = &outcomes[0];
        for (threads, h, irr) in &outcomes[1..] {
            assert_eq!(h, hashes, "physics bits with {threads} threads");
            assert!(irr == irradiance, "probe irradiance with {threads} threads");
        }
    }

    /// On an engine's device the frame records its GPU work into the engine's
    /// command buffer: no submission of Kiln's own across 30 frames two slots in
    /// flight, the same physics bits, the same probe irradiance and the same TLAS
    /// (hit for hit) as the frame that submits on a standalone device.
    #[test]
    fn an_embedded_frame_records_into_the_engine_and_matches_the_submitting_one() {
        use crate::gpu::tests::EngineDevice;
        let test = "an_embedded_frame_records_into_the_engine_and_matches_the_submitting_one";
        let Some(gpu) = test_gpu(test) else { return };
        let engine = EngineDevice::new(2).expect("the engine's own device on the same driver");
        let scene = scenes::rain_over("demo", 48, 36);
        let gi = DemoGi { spacing: 8.0, layers: 2, probes_per_frame: 40, rays_per_probe: 32 };
        let mut submitting = demo_frame(&scene, Some(RayTracer::with_gpu(gpu).unwrap()), Some(gi)).unwrap();
        // SAFETY: the engine's handles are live and outlive the tracer (dropped first).
        let embedded = unsafe { RayTracer::embedded(&engine.describe(2)) }.unwrap();
        let mut recording = demo_frame(&scene, Some(embedded), Some(gi)).unwrap();
        let submitted_before = recording.gpu_mut().unwrap().tracer.gpu().submissions();
        // The engine records the probes' bake: two halves, its fence between them.
        for (slot, done) in [(0, false), (1, true)] {
            let GpuSide { tracer, gi, .. } = recording.gpu_mut().unwrap();
            let cmd = engine.begin(slot);
            // SAFETY: a recording command buffer of the engine's device for `slot`;
            // the second call comes after the first one's submission completed.
            assert_eq!(unsafe { gi.as_mut().unwrap().record_bake(tracer, cmd, slot as u32) }.unwrap(), done);
            engine.submit(slot);
            engine.wait_all();
        }
        let pool = ThreadPool::new(2);
        let ids = body_ids(submitting.world());
        for frame in 0..30 {
            let slot = frame % 2;
            submitting.run(&pool, 1.0 / 60.0).unwrap();
            let cmd = engine.begin(slot);
            // SAFETY: a recording command buffer of the engine's device for `slot`,
            // untouched by the engine until the run returns.
            unsafe { recording.run_into(&pool, 1.0 / 60.0, cmd, slot as u32) }.unwrap();
            engine.submit(slot);
            assert_eq!(pose_hash(recording.world(), &ids), pose_hash(submitting.world(), &ids), "frame {frame}");
            assert_eq!(recording.gpu_timing().probes_updated, submitting.gpu_timing().probes_updated);
        }
        engine.wait_all();
        let side = recording.gpu_mut().unwrap();
        assert_eq!(side.tracer.gpu().submissions(), submitted_before, "the engine submitted every frame's GPU work");
        let recorded = {
            let GpuSide { tracer, gi, .. } = side;
            gi.as_mut().unwrap().field(tracer).unwrap().irradiance.clone()
        };
        let reference = submitting.gpu_mut().unwrap();
        let submitted = {
            let GpuSide { tracer, gi, .. } = reference;
            gi.as_mut().unwrap().field(tracer).unwrap().irradiance.clone()
        };
        assert!(submitted.iter().any(|sh| *sh != Default::default()), "the probes saw light");
        assert!(recorded == submitted, "probe irradiance");
        // The TLAS the engine's frames built traces like the submitting frame's.
        let rays: Vec<GpuRay> = ids
            .iter()
            .map(|&id| {
                let p = recording.poses().get(id).unwrap().translation;
                let origin = (p + Vec3::Y * 60.0).to_array();
                GpuRay { origin, dir: [0.0, -1.0, 0.0], t_max: f32::INFINITY, mask: u32::MAX, ..GpuRay::default() }
            })
            .collect();
        let (a, b) = (recording.gpu_mut().unwrap(), submitting.gpu_mut().unwrap());
        engine.trace_as(&mut a.tracer, &mut b.tracer, 0, &rays, 30);
        assert_validation_clean(a.tracer.gpu());
        drop(recording);
        assert_eq!(engine.messages(), Vec::<String>::new(), "the engine's validation layer saw nothing wrong");
    }
}
