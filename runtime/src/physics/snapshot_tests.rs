//! Snapshots: a restored world steps the same bits as the world it was saved from,
//! for any worker count, with joints, sensors, hit events, sleeping islands and
//! terrain contacts; handles and refusals. (The rollback loop is in
//! `snapshot_bytes_tests.rs`, over bytes.)

use glam::{IVec3, Vec3};

use super::scenes;
use super::*;
use crate::jobs::ThreadPool;
use crate::math::Isometry;
use crate::shapes::Shape;
use crate::terrain::Material;

/// Ragdolls and a rain of boxes and balls over walled hills (the terrain dug once
/// before the run), with hulls (five sharing one, one of its own) and a compound of a
/// box and a hull falling among them when there is rain; a static sensor box, sensor
/// balls on some bodies and hit events on others; sleep on.
pub(super) fn busy_world(ragdolls: usize, rain: usize) -> World {
    let mut scene = scenes::ragdolls(ragdolls, 32);
    scene.bodies.extend(scenes::rain_over("rain", 32, rain).bodies);
    let (mut world, ids) = scene.build();
    world.terrain_mut().unwrap().fill(IVec3::new(10, 0, 10), IVec3::new(20, 30, 20), Material::AIR);
    let sensor = ShapeDef { sensor: true, ..ShapeDef::default() };
    let at = Isometry::from_translation(Vec3::new(16.0, 8.0, 16.0));
    let id = world.create_body(&BodyDef { motion: MotionType::Static, transform: at, ..BodyDef::default() }).unwrap();
    world.add_shape(id, Shape::cuboid(Vec3::new(6.0, 6.0, 6.0)).unwrap(), sensor).unwrap();
    if rain > 0 {
        let corners = |s: f32| {
            let mut p: Vec<Vec3> =
                (0..8).map(|i| Vec3::new((i & 1) as f32, (i >> 1 & 1) as f32, (i >> 2) as f32)).collect();
            p.iter_mut().for_each(|v| *v = (*v - 0.5) * s);
            p.push(Vec3::new(0.0, 0.9 * s, 0.0));
            p
        };
        let shared = Shape::hull(&corners(0.8)).unwrap();
        let own = Shape::hull(&corners(1.1)).unwrap();
        let part = Shape::hull(&corners(0.6)).unwrap();
        let compound = Shape::compound([
            (Isometry::IDENTITY, Shape::cuboid(Vec3::new(0.6, 0.2, 0.3)).unwrap()),
            (Isometry::from_translation(Vec3::new(0.0, 0.5, 0.0)), part),
        ])
        .unwrap();
        for (k, shape) in [shared.clone(), shared.clone(), shared.clone(), shared.clone(), shared, own, compound]
            .into_iter()
            .enumerate()
        {
            let at = Isometry::from_translation(Vec3::new(12.0 + 1.5 * k as f32, 30.0, 14.0 + 0.7 * k as f32));
            let id = world.create_body(&BodyDef { transform: at, ..BodyDef::default() }).unwrap();
            world.add_shape(id, shape, ShapeDef::default()).unwrap();
        }
    }
    for (k, &id) in ids.iter().enumerate() {
        if k % 9 == 0 {
            let ball = Shape::sphere(Vec3::ZERO, 2.0).unwrap();
            world.add_shape(id, ball, ShapeDef { density: 0.0, ..sensor }).unwrap();
        }
        if k % 5 == 0 {
            let probe = Shape::sphere(Vec3::ZERO, 0.1).unwrap();
            world.add_shape(id, probe, ShapeDef { hit_events: true, ..ShapeDef::default() }).unwrap();
        }
    }
    world
}

/// One step's fingerprint: the state hash and the step's events.
pub(super) fn step_print(world: &World) -> (u64, usize, usize, usize, usize, usize) {
    let hits = world.contact_hit_events().len();
    let sensors = world.sensor_events().len();
    (world.hash(), world.contact_events().len(), sensors, hits, world.move_events().len(), world.awake_count())
}

/// Save at step 100 (and, once islands sleep, at step 420), step on to step 600
/// recording every step, restore, step to 600 again: every step equal, at 1, 2 and 8
/// workers, equal across worker counts, and equal in a fresh world the snapshot is
/// restored into.
#[test]
fn a_restored_world_steps_the_same_bits_for_any_worker_count() {
    let mut runs = Vec::new();
    for threads in [0, 1, 7] {
        let pool = ThreadPool::new(threads);
        let mut world = busy_world(4, 48);
        let mut prints = Vec::new();
        let mut saved = Vec::new();
        for step in 0..600 {
            if step == 100 || step == 420 {
                saved.push((step, world.snapshot().unwrap(), world.hash()));
            }
            world.step(1.0 / 60.0, pool.jobs()).unwrap();
            prints.push(step_print(&world));
        }
        let sleeping = world.bodies().resting.len();
        assert!(sleeping > 20, "islands sleep by the end: {sleeping} resting");
        assert!(prints.iter().any(|p| p.2 > 0) && prints.iter().any(|p| p.3 > 0), "sensor and hit events happen");
        for (from, snapshot, hash) in &saved {
            world.restore(snapshot).unwrap();
            assert_eq!(world.hash(), *hash, "the restore brings back the saved state");
            for (step, print) in prints.iter().enumerate().skip(*from) {
                world.step(1.0 / 60.0, pool.jobs()).unwrap();
                assert_eq!(step_print(&world), *print, "{threads} threads, saved at {from}: step {step}");
            }
        }
        // Into a fresh world with the same terrain: the same steps again.
        let (from, snapshot, _) = &saved[0];
        let mut fresh = busy_world(0, 0);
        fresh.restore(snapshot).unwrap();
        for (step, print) in prints.iter().enumerate().skip(*from) {
            fresh.step(1.0 / 60.0, pool.jobs()).unwrap();
            assert_eq!(step_print(&fresh), *print, "{threads} threads, a fresh world: step {step}");
        }
        runs.push(prints);
    }
    assert_eq!(runs[1], runs[0], "2 workers");
    assert_eq!(runs[2], runs[0], "8 workers");
}

/// Handles are what they were at the save; refusals change nothing.
#[test]
fn handles_come_back_as_saved_and_bad_restores_are_refused() {
    let pool = ThreadPool::new(0);
    let mut world = busy_world(1, 8);
    for _ in 0..30 {
        world.step(1.0 / 60.0, pool.jobs()).unwrap();
    }
    let victim = world.bodies().awake.id[3];
    let saved = world.snapshot().unwrap();
    let hash = world.hash();
    world.destroy_body(victim).unwrap();
    let newcomer = world.create_body(&BodyDef::default()).unwrap();
    assert_eq!(newcomer.index, victim.index, "the freed slot is taken again");
    world.step(1.0 / 60.0, pool.jobs()).unwrap();
    world.restore(&saved).unwrap();
    assert_eq!(world.hash(), hash);
    assert!(world.transform(victim).is_ok(), "a body destroyed after the save is back");
    assert_eq!(world.transform(newcomer), Err(BodyError::InvalidBody), "one created after it is stale");
    assert_eq!(saved.body_count(), world.bodies().len());

    // Mid-step: refused both ways.
    world.step_stage(StepStage::Broadphase, 1.0 / 60.0, pool.jobs()).unwrap();
    assert_eq!(world.snapshot().err(), Some(BodyError::OutOfOrder));
    assert_eq!(world.restore(&saved), Err(BodyError::OutOfOrder));
    for stage in &StepStage::ALL[1..] {
        world.step_stage(*stage, 1.0 / 60.0, pool.jobs()).unwrap();
    }
    // The terrain edited after the save: refused, nothing changed.
    world.terrain_mut().unwrap().fill(IVec3::new(2, 0, 2), IVec3::new(4, 30, 4), Material::AIR);
    let before = world.hash();
    assert_eq!(world.restore(&saved), Err(BodyError::SnapshotMismatch));
    assert_eq!(world.hash(), before);
    // A world without terrain takes only snapshots without terrain.
    let mut bare = World::new(WorldDef::default());
    assert_eq!(bare.restore(&saved), Err(BodyError::SnapshotMismatch));
    let empty = bare.snapshot().unwrap();
    bare.create_body(&BodyDef::default()).unwrap();
    bare.restore(&empty).unwrap();
    assert_eq!(bare.bodies().len(), 0);
}
