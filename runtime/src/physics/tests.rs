use glam::{Quat, Vec3};

use super::*;
use crate::collide::tests::lcg;
use crate::jobs::ThreadPool;
use crate::math::Isometry;
use crate::shapes::Shape;

fn inline() -> ThreadPool {
    ThreadPool::new(0)
}

fn body_at(world: &mut World, p: Vec3) -> BodyId {
    let def = BodyDef { transform: Isometry::from_translation(p), ..BodyDef::default() };
    world.create_body(&def).unwrap()
}

#[test]
fn free_fall_follows_semi_implicit_euler() {
    let pool = inline();
    let mut world = World::new(WorldDef::default());
    let id = body_at(&mut world, Vec3::new(0.0, 10.0, 0.0));
    let dt = 1.0 / 60.0;
    for _ in 0..60 {
        world.step(dt, pool.jobs()).unwrap();
    }
    // Four substeps of h = dt / 4: v_n = -g n h, y_n = y_0 - g h² n (n + 1) / 2.
    let (v, w) = world.velocity(id).unwrap();
    let y = world.transform(id).unwrap().translation.y;
    let (h, n) = (dt / 4.0, 240.0);
    assert!((v.y + 9.81).abs() < 1e-4 && w == Vec3::ZERO, "{v}");
    assert!((y - (10.0 - 9.81 * h * h * n * (n + 1.0) / 2.0)).abs() < 1e-4, "{y}");
}

#[test]
fn shapes_give_mass_and_the_frame_stays_put() {
    let mut world = World::new(WorldDef::default());
    let id = body_at(&mut world, Vec3::new(1.0, 2.0, 3.0));
    world.add_shape(id, Shape::cuboid(Vec3::splat(0.5)).unwrap(), ShapeDef::default()).unwrap();
    let (set, row) = world.bodies().locate(id).unwrap();
    assert!((world.bodies().set(set).inv_mass[row] - 1e-3).abs() < 1e-9);
    // A second box 2 m along x: the centre of mass moves to x = +1 in the body frame,
    // the body frame does not move.
    let offset = ShapeDef { pose: Isometry::from_translation(Vec3::new(2.0, 0.0, 0.0)), ..ShapeDef::default() };
    world.add_shape(id, Shape::cuboid(Vec3::splat(0.5)).unwrap(), offset).unwrap();
    let s = world.bodies().set(set);
    assert!((s.inv_mass[row] - 5e-4).abs() < 1e-9);
    assert!(s.local_center[row].abs_diff_eq(Vec3::new(1.0, 0.0, 0.0), 1e-6));
    assert!(s.position[row].abs_diff_eq(Vec3::new(2.0, 2.0, 3.0), 1e-6));
    assert!(world.transform(id).unwrap().translation.abs_diff_eq(Vec3::new(1.0, 2.0, 3.0), 1e-6));
    assert_eq!(world.bodies().shapes(id).unwrap().len(), 2);
    // Bad shape definitions are refused.
    for bad in [
        ShapeDef { density: f32::NAN, ..ShapeDef::default() },
        ShapeDef { friction: -1.0, ..ShapeDef::default() },
        ShapeDef { restitution: 2.0, ..ShapeDef::default() },
        ShapeDef { pose: Isometry::new(Vec3::ZERO, Quat::from_xyzw(0.0, 0.0, 0.0, 0.0)), ..ShapeDef::default() },
    ] {
        let sphere = Shape::sphere(Vec3::ZERO, 1.0).unwrap();
        assert_eq!(world.add_shape(id, sphere, bad), Err(BodyError::InvalidArgument));
    }
    assert_eq!(world.bodies().shapes(id).unwrap().len(), 2);
}

#[test]
fn forces_torques_and_impulses() {
    let pool = inline();
    let mut world = World::new(WorldDef { gravity: Vec3::ZERO, ..WorldDef::default() });
    let id = body_at(&mut world, Vec3::ZERO);
    world.add_shape(id, Shape::cuboid(Vec3::splat(0.5)).unwrap(), ShapeDef::default()).unwrap();
    // 1000 N on 1000 kg for one 0.1 s step: 0.1 m/s, then the accumulator is clear.
    world.apply_force(id, Vec3::new(1000.0, 0.0, 0.0)).unwrap();
    world.step(0.1, pool.jobs()).unwrap();
    world.step(0.1, pool.jobs()).unwrap();
    let (v, _) = world.velocity(id).unwrap();
    assert!((v.x - 0.1).abs() < 1e-6, "{v}");
    // An impulse at the top edge along x: linear J/m, angular I⁻¹ (r × J); I = m/6.
    world.set_velocity(id, Vec3::ZERO, Vec3::ZERO).unwrap();
    world.apply_impulse(id, Vec3::new(100.0, 0.0, 0.0), Vec3::new(0.0, 0.5, 0.0)).unwrap();
    let (v, w) = world.velocity(id).unwrap();
    assert!((v.x - 0.1).abs() < 1e-6);
    assert!(w.abs_diff_eq(Vec3::new(0.0, 0.0, -50.0 / (1000.0 / 6.0)), 1e-5), "{w}");
    // Spinning for a long time keeps a unit rotation.
    for _ in 0..10_000 {
        world.step(1.0 / 60.0, pool.jobs()).unwrap();
    }
    let q = world.transform(id).unwrap().rotation;
    assert!((q.length() - 1.0).abs() < 1e-5);
    // Bad numbers.
    assert_eq!(world.apply_force(id, Vec3::NAN), Err(BodyError::InvalidArgument));
    assert_eq!(world.apply_torque(id, Vec3::INFINITY), Err(BodyError::InvalidArgument));
    assert_eq!(world.apply_impulse(id, Vec3::X, Vec3::NAN), Err(BodyError::InvalidArgument));
    assert_eq!(world.step(-1.0, pool.jobs()), Err(BodyError::InvalidArgument));
    assert_eq!(world.step(f32::NAN, pool.jobs()), Err(BodyError::InvalidArgument));
}

#[test]
fn kinematic_and_static_bodies() {
    let pool = inline();
    let mut world = World::new(WorldDef::default());
    let k = world
        .create_body(&BodyDef {
            motion: MotionType::Kinematic,
            linear_velocity: Vec3::new(1.0, 0.0, 0.0),
            ..BodyDef::default()
        })
        .unwrap();
    let s = world.create_body(&BodyDef { motion: MotionType::Static, ..BodyDef::default() }).unwrap();
    world.add_shape(k, Shape::cuboid(Vec3::ONE).unwrap(), ShapeDef::default()).unwrap();
    world.apply_force(k, Vec3::new(0.0, 1e6, 0.0)).unwrap();
    world.apply_force(s, Vec3::new(0.0, 1e6, 0.0)).unwrap();
    for _ in 0..60 {
        world.step(1.0 / 60.0, pool.jobs()).unwrap();
    }
    // The kinematic body moves by its velocity only; the static one never moves.
    assert!(world.transform(k).unwrap().translation.abs_diff_eq(Vec3::new(1.0, 0.0, 0.0), 1e-5));
    assert_eq!(world.transform(s).unwrap(), Isometry::IDENTITY);
    assert_eq!(world.bodies().locate(s).unwrap().0, SetKind::Resting);
    assert_eq!(world.bodies().motion_type(k), Ok(MotionType::Kinematic));
}

#[test]
fn handles_survive_removal_and_detect_staleness() {
    let mut world = World::new(WorldDef::default());
    let ids: Vec<BodyId> = (0..5).map(|i| body_at(&mut world, Vec3::new(i as f32, 0.0, 0.0))).collect();
    world.destroy_body(ids[1]).unwrap();
    // The last row moved into the hole; every live handle still finds its body.
    for (i, id) in ids.iter().enumerate() {
        if i == 1 {
            assert_eq!(world.transform(*id), Err(BodyError::InvalidBody));
        } else {
            assert_eq!(world.transform(*id).unwrap().translation.x, i as f32);
        }
    }
    assert_eq!(world.destroy_body(ids[1]), Err(BodyError::InvalidBody));
    // The slot is reused with a new generation; the old handle stays stale.
    let again = body_at(&mut world, Vec3::Y);
    assert_eq!(again.index, ids[1].index);
    assert_ne!(again.generation, ids[1].generation);
    assert!(!world.bodies().is_valid(ids[1]) && world.bodies().is_valid(again));
    let forged = BodyId { index: 999, generation: 1 };
    assert_eq!(world.apply_force(forged, Vec3::X), Err(BodyError::InvalidBody));
    assert_eq!(world.bodies().len(), 5);
    // Bad definitions.
    for def in [
        BodyDef { transform: Isometry::from_translation(Vec3::NAN), ..BodyDef::default() },
        BodyDef { linear_velocity: Vec3::INFINITY, ..BodyDef::default() },
        BodyDef { linear_damping: -1.0, ..BodyDef::default() },
        BodyDef { transform: Isometry::new(Vec3::ZERO, Quat::from_xyzw(0.0, 0.0, 0.0, 2.0)), ..BodyDef::default() },
    ] {
        assert_eq!(world.create_body(&def), Err(BodyError::InvalidArgument));
    }
    assert_eq!(world.bodies().len(), 5);
}

/// A hash of every body's state bits, in handle order.
fn state_hash(world: &World, ids: &[BodyId]) -> u64 {
    let mut h = 0xcbf29ce484222325u64;
    for id in ids {
        let xf = world.transform(*id).unwrap();
        let (v, w) = world.velocity(*id).unwrap();
        let q = xf.rotation;
        for x in
            [xf.translation.to_array(), v.to_array(), w.to_array()].concat().into_iter().chain([q.x, q.y, q.z, q.w])
        {
            h = (h ^ x.to_bits() as u64).wrapping_mul(0x100000001b3);
        }
    }
    h
}

#[test]
fn integration_is_bit_identical_for_any_worker_count() {
    let run = |threads: usize| {
        let pool = ThreadPool::new(threads);
        let mut world = World::new(WorldDef::default());
        let mut seed = 1u64;
        let mut rnd = || lcg(&mut seed);
        let box_shape = Shape::cuboid(Vec3::new(0.3, 0.2, 0.5)).unwrap();
        let mut ids = Vec::new();
        for i in 0..1000 {
            let def = BodyDef {
                transform: Isometry::new(Vec3::new(rnd(), rnd(), rnd()) * 50.0, Quat::from_rotation_y(rnd())),
                linear_velocity: Vec3::new(rnd(), rnd(), rnd()) * 5.0,
                angular_velocity: Vec3::new(rnd(), rnd(), rnd()) * 3.0,
                linear_damping: 0.1 * rnd().abs(),
                ..BodyDef::default()
            };
            let id = world.create_body(&def).unwrap();
            world.add_shape(id, box_shape.clone(), ShapeDef::default()).unwrap();
            if i % 7 == 0 {
                world.destroy_body(id).unwrap();
            } else {
                ids.push(id);
            }
        }
        for step in 0..600 {
            if step % 50 == 0 {
                for (k, id) in ids.iter().enumerate().step_by(13) {
                    world.apply_torque(*id, Vec3::new(k as f32, 1.0, -2.0)).unwrap();
                }
            }
            world.step(1.0 / 60.0, pool.jobs()).unwrap();
        }
        state_hash(&world, &ids)
    };
    let one = run(0);
    for threads in [1, 2, 7] {
        assert_eq!(run(threads), one, "{threads} threads");
    }
    assert_eq!(run(0), one, "a second run");
}

fn ground(world: &mut World) -> BodyId {
    let def = BodyDef {
        motion: MotionType::Static,
        transform: Isometry::from_translation(Vec3::new(0.0, -1.0, 0.0)),
        ..BodyDef::default()
    };
    let id = world.create_body(&def).unwrap();
    world.add_shape(id, Shape::cuboid(Vec3::new(50.0, 1.0, 50.0)).unwrap(), ShapeDef::default()).unwrap();
    id
}

fn cube_at(world: &mut World, p: Vec3, half: f32) -> BodyId {
    let id = body_at(world, p);
    world.add_shape(id, Shape::cuboid(Vec3::splat(half)).unwrap(), ShapeDef::default()).unwrap();
    id
}

#[test]
fn a_box_lands_on_the_ground_rests_and_sleeps() {
    let pool = inline();
    let mut world = World::new(WorldDef::default());
    ground(&mut world);
    let id = cube_at(&mut world, Vec3::new(0.0, 2.0, 0.0), 0.5);
    let mut slept_at = None;
    for step in 0..240 {
        world.step(1.0 / 60.0, pool.jobs()).unwrap();
        if slept_at.is_none() && !world.is_awake(id).unwrap() {
            slept_at = Some(step);
        }
    }
    let y = world.transform(id).unwrap().translation.y;
    assert!((y - 0.5).abs() < 0.01, "rests at {y}");
    let slept_at = slept_at.expect("the box fell asleep");
    assert!(slept_at > 60, "slept at step {slept_at}");
    assert_eq!(world.counters().awake_bodies, 0);
    // A push wakes it.
    world.apply_impulse(id, Vec3::new(0.0, 5000.0, 0.0), world.transform(id).unwrap().translation).unwrap();
    assert!(world.is_awake(id).unwrap());
}
