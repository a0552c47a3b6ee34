//! Steady-state frames make zero global heap allocations.
//!
//! A counting global allocator wraps the system one. After warm-up frames (which size
//! the arenas, deques and profile), many more frames run on a multi-threaded pool and
//! the allocation counter must not move — on any thread.
//!
//! The counter is process-wide, so this binary runs without libtest (`harness = false`
//! in Cargo.toml): libtest's main thread allocates while a test runs (it records and
//! prints the running test), and on a loaded machine those allocations landed inside a
//! measured window.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

mod common;

use kiln::jobs::ThreadPool;

struct Counting;

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards to System unchanged; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: same contract as ours.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as ours.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: same contract as ours.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn steady_state_frames_allocate_nothing() {
    for threads in [0, 1, 3] {
        let pool = ThreadPool::new(threads);
        let mut scene = common::particle_scene(10_000);
        for _ in 0..20 {
            scene.graph.execute(&pool, 1.0 / 60.0).unwrap();
        }
        let before = ALLOCATIONS.load(Ordering::SeqCst);
        for _ in 0..500 {
            scene.graph.execute(&pool, 1.0 / 60.0).unwrap();
        }
        let allocations = ALLOCATIONS.load(Ordering::SeqCst) - before;
        assert_eq!(allocations, 0, "{allocations} heap allocations in 500 steady-state frames with {threads} threads");
        // Sanity: the counter works.
        let probe = ALLOCATIONS.load(Ordering::SeqCst);
        drop(std::hint::black_box(vec![1u8; 64]));
        assert!(ALLOCATIONS.load(Ordering::SeqCst) > probe);
    }
}

/// The broadphase's per-frame work (proxy moves, tree rebuild, parallel pair finding,
/// pair-set merge) allocates nothing once its buffers have grown: the motion repeats
/// every 64 frames, so two periods of warm-up see every buffer size.
fn steady_state_broadphase_frames_allocate_nothing() {
    use glam::Vec3;
    use kiln::math::Aabb;
    use kiln::spatial::{Balancing, BroadPhase, TreeConfig};

    const PERIOD: u32 = 64;
    let orbit = |i: usize, frame: u32| {
        let anchor = Vec3::new((i % 20) as f32, ((i / 20) % 20) as f32, (i / 400) as f32) * 1.5;
        let a = std::f32::consts::TAU * (frame % PERIOD) as f32 / PERIOD as f32 * (1 + i % 3) as f32;
        anchor + Vec3::new(a.cos(), a.sin(), 0.5 * (2.0 * a).sin())
    };
    for balancing in [Balancing::Avl, Balancing::SahRotate] {
        for threads in [0, 1] {
            let pool = ThreadPool::new(threads);
            let mut bp = BroadPhase::new(TreeConfig { balancing, ..TreeConfig::default() });
            let half = Vec3::splat(0.4);
            let proxies: Vec<_> =
                (0..2000).map(|i| bp.create_proxy(&Aabb::from_center_half_extents(orbit(i, 0), half), 0)).collect();
            let mut frame = |f: u32| {
                for (i, &p) in proxies.iter().enumerate() {
                    let (now, before) = (orbit(i, f), orbit(i, f + PERIOD - 1));
                    bp.move_proxy(p, &Aabb::from_center_half_extents(now, half), now - before);
                }
                bp.update(pool.jobs());
            };
            for f in 1..=2 * PERIOD {
                frame(f);
            }
            let before = ALLOCATIONS.load(Ordering::SeqCst);
            for f in 1..=3 * PERIOD {
                frame(f);
            }
            let allocations = ALLOCATIONS.load(Ordering::SeqCst) - before;
            assert_eq!(allocations, 0, "{balancing:?}, {threads} threads: {allocations} allocations");
        }
    }
}

/// Once the buffers have grown to the scene, world steps (contacts, terrain with the
/// hulls' triangle axes, joints, solver, islands, sensors, water) allocate nothing,
/// for any worker count.
fn world_steps_allocate_nothing() {
    use kiln::physics::scenes;
    for threads in [0, 1, 3] {
        let pool = ThreadPool::new(threads);
        let scenes = [
            (scenes::pyramid(20), 120),
            (scenes::rain(256), 600),
            (scenes::hull_rain(256), 600),
            (scenes::joint_grid(20), 120),
            (ragdolls_on_a_floor(), 600),
            (pool_scene(), 600),
        ];
        for (scene, warm_up) in scenes {
            let mut world = if scene.name == "pool" { floating_pool() } else { scene.build().0 };
            world.set_sleep_enabled(false);
            if scene.name == "hull_rain" {
                // Hulls roll on for minutes, into chunks never meshed (meshing a
                // chunk the first time allocates its mesh): mesh them all first.
                mesh_every_chunk(&mut world, &pool);
            }
            if scene.name == "rain" {
                add_sensors(&mut world);
            }
            let (mut sensor_events, mut water_events) = (0, 0);
            for _ in 0..warm_up {
                world.step(1.0 / 60.0, pool.jobs()).unwrap();
                sensor_events += world.sensor_events().len();
                water_events += world.water_events().len();
            }
            assert!(scene.name != "rain" || sensor_events > 100, "sensors see the rain: {sensor_events} events");
            assert!(scene.name != "pool" || water_events > 10, "bodies fall in the pool: {water_events} events");
            assert!(world.counters().constraints > 0 || world.joint_count() > 0, "{}: bodies touch", scene.name);
            let before = ALLOCATIONS.load(Ordering::SeqCst);
            for _ in 0..60 {
                world.step(1.0 / 60.0, pool.jobs()).unwrap();
            }
            let allocations = ALLOCATIONS.load(Ordering::SeqCst) - before;
            assert_eq!(
                allocations, 0,
                "{allocations} heap allocations in 60 steps of {} on {threads} threads",
                scene.name
            );
            assert!(!world.move_events().is_empty(), "{}: bodies move", scene.name);
        }
    }
}

/// With sleep on, steps keep allocating nothing while islands fall asleep and are
/// woken: every 30 steps a kick wakes a different resting body, whose island wakes,
/// collides and sleeps again.
fn world_steps_with_sleep_allocate_nothing() {
    use kiln::physics::{scenes, SetKind};
    for threads in [0, 3] {
        let pool = ThreadPool::new(threads);
        let (mut world, ids) = scenes::rain(256).build();
        world.set_sleep_enabled(true);
        let kick = |world: &mut kiln::physics::World, step: usize| {
            if step.is_multiple_of(30) {
                let id = ids[1 + (step / 30 * 37) % (ids.len() - 1)];
                if let Ok(xf) = world.transform(id) {
                    let _ = world.apply_impulse(id, glam::Vec3::new(0.0, 4.0, 1.0), xf.translation);
                }
            }
        };
        // Long enough for the rain to land, sleep, and go through a round of kicks.
        for step in 0..1500 {
            world.step(1.0 / 60.0, pool.jobs()).unwrap();
            kick(&mut world, step);
        }
        let sleeping = world.bodies().set(SetKind::Awake).id.len() < ids.len() / 2;
        assert!(sleeping, "most of the rain sleeps: {} awake", world.awake_count());
        let before = ALLOCATIONS.load(Ordering::SeqCst);
        let mut woken = 0;
        for step in 1500..1620 {
            world.step(1.0 / 60.0, pool.jobs()).unwrap();
            let awake = world.awake_count();
            kick(&mut world, step);
            woken += world.awake_count().saturating_sub(awake);
        }
        let allocations = ALLOCATIONS.load(Ordering::SeqCst) - before;
        assert!(woken > 0, "kicks wake islands");
        assert_eq!(allocations, 0, "{allocations} heap allocations in 120 steps with sleep on, {threads} threads");
    }
}

/// World queries into caller buffers allocate nothing once those buffers and the
/// terrain meshes the rays reach exist: closest, all and batched rays, box and shape
/// overlaps, and shape casts, over bodies and terrain.
fn world_queries_allocate_nothing() {
    use glam::Vec3;
    use kiln::math::{Aabb, Isometry, Ray};
    use kiln::physics::{scenes, QueryFilter, RayHit};
    use kiln::shapes::Shape;
    let pool = ThreadPool::new(2);
    let (mut world, _) = scenes::rain(256).build();
    for _ in 0..240 {
        world.step(1.0 / 60.0, pool.jobs()).unwrap();
    }
    let filter = QueryFilter::default();
    let rays: Vec<Ray> = (0..64)
        .map(|i| {
            let at = Vec3::new((i % 8) as f32 * 28.0 + 16.0, 40.0, (i / 8) as f32 * 28.0 + 16.0);
            Ray::new(at, Vec3::new(0.2, -1.0, 0.1))
        })
        .collect();
    let mut hits: Vec<Option<RayHit>> = vec![None; rays.len()];
    let mut all = Vec::with_capacity(256);
    let mut targets = Vec::with_capacity(4096);
    let ball = Shape::sphere(Vec3::ZERO, 1.5).unwrap();
    let mut round = |world: &mut kiln::physics::World| {
        let mut found = 0;
        for ray in &rays {
            found += world.cast_ray(ray, 100.0, &filter).is_some() as usize;
            world.cast_ray_all(ray, 100.0, &filter, &mut all);
            found += all.len();
        }
        world.cast_ray_batch(&rays, 100.0, &filter, &mut hits, pool.jobs());
        found += hits.iter().flatten().count();
        for ray in rays.iter().step_by(8) {
            let at = ray.at(20.0);
            world.overlap_aabb(
                &Aabb::new(at - Vec3::splat(6.0), at + Vec3::splat(6.0)),
                &filter,
                pool.jobs(),
                &mut targets,
            );
            found += targets.len();
            world.overlap_shape(&ball, &Isometry::from_translation(at), &filter, pool.jobs(), &mut targets);
            found += targets.len();
            let cast =
                world.cast_shape(&ball, &Isometry::from_translation(ray.origin), ray.dir * 60.0, &filter, pool.jobs());
            found += cast.is_some() as usize;
        }
        found
    };
    for _ in 0..3 {
        round(&mut world);
    }
    let before = ALLOCATIONS.load(Ordering::SeqCst);
    let mut found = 0;
    for _ in 0..10 {
        found += round(&mut world);
    }
    let allocations = ALLOCATIONS.load(Ordering::SeqCst) - before;
    assert!(found > 1000, "the queries find things: {found}");
    assert_eq!(allocations, 0, "{allocations} heap allocations in 10 rounds of world queries");
}

/// A character walking a circle among ragdolls on a floor, each frame a move and a
/// step: nothing allocates once the buffers have grown.
fn characters_allocate_nothing() {
    use glam::Vec3;
    use kiln::character::{Character, CharacterDef};
    use kiln::physics::CharacterBodies;
    let pool = ThreadPool::new(2);
    let (mut world, _) = ragdolls_on_a_floor().build();
    let def = CharacterDef::default();
    let floor_top = 1.0;
    let mut character =
        Character::new(def, Vec3::new(16.0, floor_top + def.height * 0.5 + def.radius + def.skin, 12.0)).unwrap();
    let settings = CharacterBodies::default();
    let dt = 1.0 / 60.0;
    let frame = |world: &mut kiln::physics::World, character: &mut Character, i: usize| {
        let angle = i as f32 * 0.02;
        let walk = Vec3::new(angle.cos(), 0.0, angle.sin()) * 3.0 - Vec3::Y;
        world.move_character(character, walk * dt, dt, &settings, pool.jobs()).unwrap();
        world.step(dt, pool.jobs()).unwrap();
    };
    // Sleep groups keep their memory when freed and take the next island that
    // sleeps: growth stops once each has held the largest island it will hold, which
    // takes the ragdolls a few rounds of being pushed awake and falling asleep.
    for i in 0..1800 {
        frame(&mut world, &mut character, i);
    }
    let before = ALLOCATIONS.load(Ordering::SeqCst);
    let start = character.position();
    for i in 1800..1920 {
        frame(&mut world, &mut character, i);
    }
    let allocations = ALLOCATIONS.load(Ordering::SeqCst) - before;
    assert!(character.position().distance(start) > 1.0, "the character walks");
    assert!(character.is_grounded(), "on the floor");
    assert_eq!(allocations, 0, "{allocations} heap allocations in 120 frames of a walking character");
}

/// The integrated frame (physics step, instances following the bodies, BLAS refit,
/// TLAS rebuild and DDGI probe update on the GPU, overlapping the step) allocates
/// nothing on Kiln's side once warm: the counter sees Rust's heap only, so the
/// Vulkan driver's and the validation layer's own mallocs are not counted, and any
/// validation message (a Rust string) would be. Needs the `demo` scaffolding, which
/// the workspace build turns on (the benches crate asks for it), and a Vulkan device.
#[cfg(feature = "demo")]
fn integrated_frames_allocate_nothing() {
    use kiln::gpu::{gpu_required, GpuConfig, RayTracer};
    use kiln::integrated::{demo_frame, DemoGi};
    use kiln::physics::scenes;
    let scene = scenes::rain_over("demo", 48, 36);
    let gi = DemoGi { spacing: 8.0, layers: 2, probes_per_frame: 40, rays_per_probe: 32 };
    for threads in [0, 2] {
        let tracer = match RayTracer::new(&GpuConfig { validation: true, ..GpuConfig::from_env() }) {
            Ok(tracer) => tracer,
            Err(err) if gpu_required() => panic!("integrated frames: KILN_REQUIRE_GPU=1 but no GPU: {err}"),
            Err(err) => {
                println!("zero_alloc: integrated frames SKIPPED (no Vulkan device: {err}; KILN_REQUIRE_GPU=1 fails)");
                return;
            }
        };
        let mut frame = demo_frame(&scene, Some(tracer), Some(gi)).unwrap();
        let pool = ThreadPool::new(threads);
        // The probe update walks every probe in turn; the warm-up covers whole rounds
        // of it, and the rain's landing until the islands stop growing sleep groups.
        for _ in 0..600 {
            frame.run(&pool, 1.0 / 60.0).unwrap();
        }
        let before = ALLOCATIONS.load(Ordering::SeqCst);
        let mut probes = 0;
        for _ in 0..240 {
            frame.run(&pool, 1.0 / 60.0).unwrap();
            probes += frame.gpu_timing().probes_updated;
        }
        let allocations = ALLOCATIONS.load(Ordering::SeqCst) - before;
        assert_eq!(probes, 240 * 40, "every frame updated its probes");
        let messages = frame.gpu_mut().unwrap().tracer.gpu().validation_messages();
        assert!(messages.is_empty(), "validation: {messages:?}");
        assert_eq!(allocations, 0, "{allocations} heap allocations in 240 integrated frames, {threads} threads");
    }
}

/// Without the `demo` scaffolding the check cannot build its frame: it says so, and
/// fails where the suite requires the GPU checks (the suite's workspace build has it).
#[cfg(not(feature = "demo"))]
fn integrated_frames_allocate_nothing() {
    if kiln::gpu::gpu_required() {
        panic!("integrated frames: built without the `demo` feature (run with --workspace or --features demo)");
    }
    println!("zero_alloc: integrated frames SKIPPED (needs the `demo` feature)");
}

/// A stand-in scene named "pool" for [`floating_pool`] (the scenes have no water).
/// Meshes every chunk of the world's terrain that can have triangles.
fn mesh_every_chunk(world: &mut kiln::physics::World, pool: &ThreadPool) {
    let terrain = world.terrain_mut().unwrap();
    let (lo, hi) = terrain.geometry_bounds().unwrap();
    let mut coords = Vec::new();
    for x in lo.x..=hi.x {
        for y in lo.y..=hi.y {
            for z in lo.z..=hi.z {
                coords.push(glam::IVec3::new(x, y, z));
            }
        }
    }
    terrain.prepare_meshes(&coords, pool.jobs());
}

fn pool_scene() -> kiln::physics::scenes::Scene {
    let mut scene = kiln::physics::scenes::pyramid(2);
    scene.name = "pool";
    scene
}

/// 96 boxes, balls, capsules and hulls of densities 400 to 2,000 dropped into a pool
/// of voxel water over a rock floor: most float, bob and drift, some sink.
fn floating_pool() -> kiln::physics::World {
    use glam::{IVec3, Quat, Vec3};
    use kiln::math::Isometry;
    use kiln::physics::{BodyDef, ShapeDef, World, WorldDef};
    use kiln::shapes::Shape;
    use kiln::terrain::{Material, Terrain};
    let mut world = World::new(WorldDef::default());
    let mut terrain = Terrain::new(1.0);
    terrain.fill(IVec3::new(-12, -7, -12), IVec3::new(12, -6, 12), Material::ROCK);
    terrain.fill(IVec3::new(-12, -5, -12), IVec3::new(12, -1, 12), Material::WATER);
    world.set_terrain(terrain);
    let hull: Vec<Vec3> = (0..24)
        .map(|i| Vec3::new((i as f32 * 2.4).cos(), (i as f32 * 0.7).sin(), (i as f32 * 2.4).sin()) * 0.4)
        .collect();
    for i in 0..96 {
        let at = Vec3::new((i % 8) as f32 * 2.2 - 8.0, 1.0 + (i / 32) as f32 * 1.5, ((i / 8) % 4) as f32 * 2.5 - 4.0);
        let def = BodyDef {
            transform: Isometry::new(at, Quat::from_rotation_x(i as f32 * 0.37) * Quat::from_rotation_y(i as f32)),
            ..BodyDef::default()
        };
        let id = world.create_body(&def).unwrap();
        let shape = match i % 4 {
            0 => Shape::cuboid(Vec3::new(0.5, 0.3, 0.4)).unwrap(),
            1 => Shape::sphere(Vec3::ZERO, 0.4).unwrap(),
            2 => Shape::capsule(Vec3::new(0.0, -0.4, 0.0), Vec3::new(0.0, 0.4, 0.0), 0.25).unwrap(),
            _ => Shape::hull(&hull).unwrap(),
        };
        let density = 400.0 + 100.0 * (i % 17) as f32;
        world.add_shape(id, shape, ShapeDef { density, ..ShapeDef::default() }).unwrap();
    }
    world
}

/// Four static sensor boxes over the rain scene's terrain, a quarter each, and a
/// sensor sphere reaching the neighbours on every 16th body: their visitor lists and
/// events are measured too.
fn add_sensors(world: &mut kiln::physics::World) {
    use kiln::math::Isometry;
    use kiln::physics::{BodyDef, MotionType, ShapeDef};
    use kiln::shapes::Shape;
    let sensor = ShapeDef { sensor: true, ..ShapeDef::default() };
    for (x, z) in [(68.0, 68.0), (188.0, 68.0), (68.0, 188.0), (188.0, 188.0)] {
        let at = Isometry::from_translation(glam::Vec3::new(x, 20.0, z));
        let id =
            world.create_body(&BodyDef { motion: MotionType::Static, transform: at, ..BodyDef::default() }).unwrap();
        world.add_shape(id, Shape::cuboid(glam::Vec3::new(60.0, 30.0, 60.0)).unwrap(), sensor).unwrap();
    }
    let ids: Vec<_> = world.bodies().set(kiln::physics::SetKind::Awake).id.iter().copied().step_by(16).collect();
    for id in ids {
        world
            .add_shape(id, Shape::sphere(glam::Vec3::ZERO, 16.0).unwrap(), ShapeDef { density: 0.0, ..sensor })
            .unwrap();
    }
}

/// Rollback as a networked game runs it allocates nothing once warm: every frame
/// saves the world into one of 8 pre-sized buffers, steps, then restores the
/// snapshot of 7 frames back and steps those frames again; the rain over hills with
/// sleep on (islands fall asleep and wake across the restores), hull bodies sharing
/// a hull and one of their own among it. Each frame saves a full and an awake-only
/// snapshot, and the restore takes the awake-only one when the sleeping bodies are
/// unchanged, the full one otherwise. Saves, restores and steps are all counted;
/// the saves and restores are also counted alone.
fn snapshots_allocate_nothing() {
    use kiln::physics::{scenes, BodyDef, ShapeDef};
    use kiln::shapes::Shape;
    let pool = ThreadPool::new(1);
    let (mut world, _) = scenes::rain(256).build();
    world.set_sleep_enabled(true);
    let corners: Vec<glam::Vec3> =
        (0..8).map(|i| glam::Vec3::new((i & 1) as f32, (i >> 1 & 1) as f32, (i >> 2) as f32) - 0.5).collect();
    let shared = Shape::hull(&corners).unwrap();
    let own = Shape::hull(&[&corners[..], &[glam::Vec3::Y]].concat()).unwrap();
    for (k, shape) in [shared.clone(), shared, own].into_iter().enumerate() {
        let at = kiln::math::Isometry::from_translation(glam::Vec3::new(10.0 + 2.0 * k as f32, 40.0, 12.0));
        let id = world.create_body(&BodyDef { transform: at, ..BodyDef::default() }).unwrap();
        world.add_shape(id, shape, ShapeDef::default()).unwrap();
    }
    for _ in 0..300 {
        world.step(1.0 / 60.0, pool.jobs()).unwrap();
    }
    let size = world.snapshot_size().unwrap();
    // Per frame: the full snapshot and its length, the awake-only one and its length.
    type Ring = [(Vec<u8>, usize, Vec<u8>, usize)];
    let mut ring: Vec<_> = (0..8).map(|_| (vec![0u8; 2 * size], 0, vec![0u8; 2 * size], 0)).collect();
    // One rollback frame; returns the allocations its save and restore made.
    let frame = |world: &mut kiln::physics::World, ring: &mut Ring, f: usize| {
        let (buffer, len, awake, awake_len) = &mut ring[f % 8];
        let before = ALLOCATIONS.load(Ordering::SeqCst);
        *len = world.save_bytes(buffer).unwrap();
        *awake_len = world.save_awake_bytes(awake).unwrap();
        let mut counted = ALLOCATIONS.load(Ordering::SeqCst) - before;
        world.step(1.0 / 60.0, pool.jobs()).unwrap();
        if f >= 7 {
            let back = f - 7;
            let (buffer, len, awake, awake_len) = &ring[back % 8];
            let before = ALLOCATIONS.load(Ordering::SeqCst);
            match world.restore_bytes(&awake[..*awake_len]) {
                Err(kiln::physics::SnapshotError::SleepingChanged) => {
                    world.restore_bytes(&buffer[..*len]).unwrap_or_else(|e| panic!("frame {f}: {e}"))
                }
                other => other.unwrap_or_else(|e| panic!("frame {f}: {e}")),
            }
            counted += ALLOCATIONS.load(Ordering::SeqCst) - before;
            for _ in back..=f {
                world.step(1.0 / 60.0, pool.jobs()).unwrap();
            }
        }
        counted
    };
    let mut warm = 0;
    for f in 0..300 {
        warm += frame(&mut world, &mut ring, f);
    }
    assert!(warm > 0, "the first save and restore size the world's scratch: the counter works");
    // Frames 300..360 twice to warm, then again from the same state and ring: the
    // states a rollback passes through have been seen, as a game's re-simulated
    // frames have (new states may still grow a buffer, as in a straight run). Twice,
    // because a restore swaps buffers between the world and its staging: the second
    // pass, one restore later, sees each buffer in the other role.
    let mut mark = vec![0u8; 2 * size];
    let mark_len = world.save_bytes(&mut mark).unwrap();
    let ring_mark = ring.clone();
    let rewind = |world: &mut kiln::physics::World, ring: &mut Ring| {
        for (to, from) in ring.iter_mut().zip(&ring_mark) {
            to.0.copy_from_slice(&from.0);
            to.1 = from.1;
            to.2.copy_from_slice(&from.2);
            to.3 = from.3;
        }
        world.restore_bytes(&mark[..mark_len]).unwrap();
    };
    for _ in 0..2 {
        for f in 300..360 {
            frame(&mut world, &mut ring, f);
        }
        rewind(&mut world, &mut ring);
    }
    let before = ALLOCATIONS.load(Ordering::SeqCst);
    let mut snapshots = 0;
    for f in 300..360 {
        snapshots += frame(&mut world, &mut ring, f);
    }
    let allocations = ALLOCATIONS.load(Ordering::SeqCst) - before;
    assert_eq!(snapshots, 0, "{snapshots} allocations in 120 saves and 60 restores of up to {size} bytes");
    assert_eq!(
        allocations, 0,
        "{allocations} heap allocations in 60 rollback frames (120 saves, 60 restores, 540 steps)"
    );
}

/// 16 ragdolls on a floor box instead of the hills: with sleep off, ragdolls on
/// hills keep creeping into chunks they never touched, whose meshes are built then
/// (a terrain allocation this check is not about); on a floor the joints' buffers
/// are what is measured.
fn ragdolls_on_a_floor() -> kiln::physics::scenes::Scene {
    use kiln::physics::scenes::{self, SceneShape};
    let mut scene = scenes::ragdolls(16, 32);
    scene.terrain = None;
    let mut floor = scene.bodies[0];
    floor.motion = kiln::physics::MotionType::Static;
    floor.position = glam::Vec3::new(16.0, 0.0, 16.0);
    floor.rotation = glam::Quat::IDENTITY;
    floor.shape = SceneShape::Cuboid { half: glam::Vec3::new(30.0, 1.0, 30.0) };
    scene.bodies.push(floor);
    scene
}

/// Runs the checks one after the other on the main thread; nothing else runs in
/// the process meanwhile. Arguments (test filters, `--list`) are ignored: the binary
/// is one test.
fn main() {
    if std::env::args().any(|a| a == "--list") {
        println!("steady_states_allocate_nothing: test");
        return;
    }
    let checks: [(&str, fn()); 8] = [
        ("steady-state frames", steady_state_frames_allocate_nothing),
        ("steady-state broadphase", steady_state_broadphase_frames_allocate_nothing),
        ("world steps", world_steps_allocate_nothing),
        ("world steps with sleep on", world_steps_with_sleep_allocate_nothing),
        ("world queries", world_queries_allocate_nothing),
        ("characters", characters_allocate_nothing),
        ("snapshots", snapshots_allocate_nothing),
        ("integrated frames", integrated_frames_allocate_nothing),
    ];
    for (name, check) in checks {
        check();
        println!("zero_alloc: {name} allocate nothing: ok");
    }
}
