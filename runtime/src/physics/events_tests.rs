//! Sensors report each visit with one begin and one end, change nothing in the
//! simulation, see sleeping bodies without waking them, and give the same events for
//! any worker count; move events list exactly the bodies a step moved.

use glam::{Quat, Vec3};

use super::*;
use crate::jobs::ThreadPool;
use crate::math::{Isometry, Ray};
use crate::physics::tests::{cube_at, ground};
use crate::physics::{BodyDef, MotionType, QueryFilter, QueryTarget, ShapeDef, WorldDef};
use crate::shapes::Shape;

fn sensor_def() -> ShapeDef {
    ShapeDef { sensor: true, ..ShapeDef::default() }
}

fn static_sensor(world: &mut World, at: Vec3, half: Vec3) -> BodyId {
    let def = BodyDef { motion: MotionType::Static, transform: Isometry::from_translation(at), ..BodyDef::default() };
    let id = world.create_body(&def).unwrap();
    world.add_shape(id, Shape::cuboid(half).unwrap(), sensor_def()).unwrap();
    id
}

fn ball_at(world: &mut World, at: Vec3) -> BodyId {
    let id = world.create_body(&BodyDef { transform: Isometry::from_translation(at), ..BodyDef::default() }).unwrap();
    world.add_shape(id, Shape::sphere(Vec3::ZERO, 0.25).unwrap(), ShapeDef::default()).unwrap();
    id
}

/// A ball falls through a sensor box onto the ground: one begin as it enters, one
/// end as it leaves, and every step bit-identical to the same world without the
/// sensor.
#[test]
fn a_falling_ball_begins_and_ends_once_and_moves_as_without_the_sensor() {
    let pool = ThreadPool::new(1);
    let mut worlds: Vec<(World, BodyId)> = (0..2)
        .map(|with_sensor| {
            let mut world = World::new(WorldDef::default());
            ground(&mut world);
            if with_sensor == 1 {
                static_sensor(&mut world, Vec3::new(0.0, 4.0, 0.0), Vec3::ONE);
            }
            let ball = ball_at(&mut world, Vec3::new(0.2, 8.0, 0.0));
            (world, ball)
        })
        .collect();
    let mut events = Vec::new();
    let (mut entered, mut left) = (None, None);
    for step in 0..120 {
        for (world, _) in &mut worlds {
            world.step(1.0 / 60.0, pool.jobs()).unwrap();
        }
        let (a, b) = (&worlds[0], &worlds[1]);
        assert_eq!(a.0.transform(a.1).unwrap(), b.0.transform(b.1).unwrap(), "step {step}");
        for e in b.0.sensor_events() {
            let y = b.0.transform(b.1).unwrap().translation.y;
            if e.begin {
                entered = Some(y);
            } else {
                left = Some(y);
            }
            events.push(*e);
        }
    }
    let (world, ball) = &worlds[1];
    assert_eq!(events.len(), 2, "{events:?}");
    assert!(events[0].begin && !events[1].begin);
    assert_eq!((events[0].visitor, events[0].visitor_shape, events[0].sensor_shape), (*ball, 0, 0));
    // The box spans y 3..5; the ball's radius is 0.25 and it moves ~0.2 m per step.
    let (entered, left) = (entered.unwrap(), left.unwrap());
    assert!(entered < 5.25 && entered > 4.8, "entered at {entered}");
    assert!(left < 2.75 && left > 2.3, "left at {left}");
    assert!(world.transform(*ball).unwrap().translation.y < 0.3, "the ball fell through to the ground");
}

/// A kinematic sensor sweeps over a row of sleeping cubes: each begins and ends once
/// in order, and none wakes.
#[test]
fn a_moving_sensor_sees_sleeping_bodies_without_waking_them() {
    let pool = ThreadPool::new(2);
    let mut world = World::new(WorldDef::default());
    ground(&mut world);
    let cubes: Vec<BodyId> = (0..5).map(|i| cube_at(&mut world, Vec3::new(i as f32 * 2.0, 0.5, 0.0), 0.5)).collect();
    for _ in 0..200 {
        world.step(1.0 / 60.0, pool.jobs()).unwrap();
    }
    assert!(cubes.iter().all(|c| !world.is_awake(*c).unwrap()), "the cubes sleep");
    let sweeper = world
        .create_body(&BodyDef {
            motion: MotionType::Kinematic,
            transform: Isometry::from_translation(Vec3::new(-3.0, 0.5, 0.0)),
            linear_velocity: Vec3::new(6.0, 0.0, 0.0),
            ..BodyDef::default()
        })
        .unwrap();
    world.add_shape(sweeper, Shape::sphere(Vec3::ZERO, 0.4).unwrap(), sensor_def()).unwrap();
    let mut events = Vec::new();
    for _ in 0..150 {
        world.step(1.0 / 60.0, pool.jobs()).unwrap();
        events.extend(world.sensor_events().iter().map(|e| (e.visitor, e.begin)));
    }
    let expected: Vec<(BodyId, bool)> = cubes.iter().flat_map(|&c| [(c, true), (c, false)]).collect();
    let visits: Vec<(BodyId, bool)> = events.into_iter().filter(|(v, _)| cubes.contains(v)).collect();
    assert_eq!(visits, expected);
    assert!(cubes.iter().all(|c| !world.is_awake(*c).unwrap()), "a sensor wakes nothing");
}

/// Destroying a visitor ends its visit with the next step; destroying a sensor ends
/// all its visits; every begin has exactly one end.
#[test]
fn destroyed_visitors_and_sensors_end_their_visits_once() {
    let pool = ThreadPool::new(1);
    let mut world = World::new(WorldDef { gravity: Vec3::ZERO, ..WorldDef::default() });
    let big = static_sensor(&mut world, Vec3::ZERO, Vec3::splat(3.0));
    let small = static_sensor(&mut world, Vec3::new(1.0, 0.0, 0.0), Vec3::splat(1.5));
    let balls: Vec<BodyId> = (0..4).map(|i| ball_at(&mut world, Vec3::new(i as f32 * 0.5, 0.0, 0.0))).collect();
    let mut open = std::collections::BTreeSet::new();
    let mut record = |world: &World| {
        for e in world.sensor_events() {
            let key = (e.sensor, e.sensor_shape, e.visitor, e.visitor_shape);
            if e.begin {
                assert!(open.insert(key), "a second begin: {e:?}");
            } else {
                assert!(open.remove(&key), "an end without a begin: {e:?}");
            }
        }
        open.len()
    };
    world.step(1.0 / 60.0, pool.jobs()).unwrap();
    assert_eq!(record(&world), 4 + 4, "both sensors hold all four balls");
    world.destroy_body(balls[2]).unwrap();
    world.step(1.0 / 60.0, pool.jobs()).unwrap();
    assert_eq!(record(&world), 3 + 3);
    world.destroy_body(big).unwrap();
    world.step(1.0 / 60.0, pool.jobs()).unwrap();
    assert_eq!(record(&world), 3, "the destroyed sensor's visits ended");
    assert!(world.sensor_events().iter().all(|e| !e.begin));
    world.destroy_body(small).unwrap();
    world.step(1.0 / 60.0, pool.jobs()).unwrap();
    assert_eq!(record(&world), 0);
    for _ in 0..3 {
        world.step(1.0 / 60.0, pool.jobs()).unwrap();
        assert!(world.sensor_events().is_empty());
    }
    world.validate();
}

/// A body with a solid and a sensor shape rests on its solid shape (the sensor
/// touches nothing); queries see sensors only when asked.
#[test]
fn sensor_shapes_touch_nothing_and_queries_skip_them_by_default() {
    let pool = ThreadPool::new(1);
    let mut world = World::new(WorldDef::default());
    let floor = ground(&mut world);
    let id = cube_at(&mut world, Vec3::new(0.0, 0.5, 0.0), 0.5);
    // A large sensor sphere reaching deep into the ground.
    world.add_shape(id, Shape::sphere(Vec3::ZERO, 2.0).unwrap(), sensor_def()).unwrap();
    for _ in 0..120 {
        world.step(1.0 / 60.0, pool.jobs()).unwrap();
    }
    let y = world.transform(id).unwrap().translation.y;
    assert!((y - 0.5).abs() < 0.02, "rests on its cube at {y}");
    assert!(world.sensor_events().iter().all(|e| e.sensor == id && e.visitor == floor));
    let down = Ray::new(Vec3::new(0.0, 5.0, 0.0), -Vec3::Y);
    let hit = world.cast_ray(&down, 10.0, &QueryFilter::default()).unwrap();
    assert_eq!(hit.target, QueryTarget::Body { body: id, shape: 0 }, "the cube, not the sensor");
    assert!((hit.t - 4.0).abs() < 0.02, "{}", hit.t);
    let hit = world.cast_ray(&down, 10.0, &QueryFilter { sensors: true, ..QueryFilter::default() }).unwrap();
    assert_eq!(hit.target, QueryTarget::Body { body: id, shape: 1 }, "the sensor sphere");
    assert!((hit.t - 2.5).abs() < 0.02, "{}", hit.t);
}

/// Sensor and hit events and the world's state hash of a busy scene (dynamic,
/// kinematic and static sensors among falling bodies reporting hits) are the same
/// for 1, 2 and 8 workers.
#[test]
fn sensor_events_are_the_same_for_any_worker_count() {
    let run = |workers: usize| {
        let pool = ThreadPool::new(workers);
        let mut world = World::new(WorldDef::default());
        ground(&mut world);
        for i in 0..6 {
            static_sensor(&mut world, Vec3::new(i as f32 * 3.0 - 7.5, 3.0, 0.0), Vec3::new(1.4, 0.5, 4.0));
        }
        let kinematic = world
            .create_body(&BodyDef {
                motion: MotionType::Kinematic,
                transform: Isometry::from_translation(Vec3::new(-10.0, 1.0, 0.0)),
                linear_velocity: Vec3::new(4.0, 0.0, 0.0),
                ..BodyDef::default()
            })
            .unwrap();
        world.add_shape(kinematic, Shape::cuboid(Vec3::new(0.5, 1.0, 4.0)).unwrap(), sensor_def()).unwrap();
        let mut ids = Vec::new();
        for i in 0..300 {
            let at = Vec3::new((i % 15) as f32 - 7.0, 6.0 + (i / 15) as f32 * 0.8, ((i * 7) % 5) as f32 - 2.0);
            let id = world
                .create_body(&BodyDef {
                    transform: Isometry::new(at, Quat::from_rotation_y(i as f32)),
                    ..BodyDef::default()
                })
                .unwrap();
            let shape = if i % 2 == 0 { Shape::sphere(Vec3::ZERO, 0.3) } else { Shape::cuboid(Vec3::splat(0.3)) };
            world.add_shape(id, shape.unwrap(), ShapeDef { hit_events: i % 3 == 0, ..ShapeDef::default() }).unwrap();
            ids.push(id);
            if i % 25 == 0 {
                world.add_shape(id, Shape::sphere(Vec3::ZERO, 0.8).unwrap(), sensor_def()).unwrap();
            }
        }
        let (mut events, mut hits, mut hashes) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..240 {
            world.step(1.0 / 60.0, pool.jobs()).unwrap();
            events.extend_from_slice(world.sensor_events());
            hits.extend_from_slice(world.contact_hit_events());
            hashes.push(world.state_hash(&ids));
        }
        (events, hits, hashes)
    };
    let one = run(1);
    assert!(one.0.len() > 500 && one.1.len() > 50, "{} sensor events, {} hits", one.0.len(), one.1.len());
    assert!(run(2) == one, "2 workers");
    assert!(run(8) == one, "8 workers");
}

/// Move events list exactly the awake bodies with their new transforms; a body that
/// falls asleep is listed once more with `fell_asleep`, then no longer.
#[test]
fn move_events_list_exactly_the_bodies_the_step_moved() {
    let pool = ThreadPool::new(1);
    let mut world = World::new(WorldDef::default());
    ground(&mut world);
    let resting = cube_at(&mut world, Vec3::new(-3.0, 0.5, 0.0), 0.5);
    for _ in 0..200 {
        world.step(1.0 / 60.0, pool.jobs()).unwrap();
    }
    assert!(!world.is_awake(resting).unwrap());
    let falling = cube_at(&mut world, Vec3::new(3.0, 3.0, 0.0), 0.5);
    let (mut listed, mut fell_asleep) = (0, 0);
    for _ in 0..400 {
        world.step(1.0 / 60.0, pool.jobs()).unwrap();
        let moves = world.move_events();
        assert!(moves.len() <= 1 && moves.iter().all(|m| m.body == falling), "{moves:?}");
        for m in moves {
            assert_eq!(m.transform, world.transform(m.body).unwrap());
            assert_eq!(m.fell_asleep, !world.is_awake(m.body).unwrap());
            listed += 1;
            fell_asleep += m.fell_asleep as usize;
        }
    }
    assert!(listed > 30 && fell_asleep == 1, "{listed} moves, {fell_asleep} fell asleep");
    assert!(world.move_events().is_empty());
}

/// A ball dropped 5 m with hit events reports one hit when it lands, at the speed
/// it fell (√(2gh), within a step of gravity); a ball without them, a gentle drop
/// below the threshold and a ball resting afterwards report none.
#[test]
fn a_landing_reports_one_hit_at_its_approach_speed() {
    let pool = ThreadPool::new(1);
    let mut world = World::new(WorldDef::default());
    let floor = ground(&mut world);
    let hits_on = ShapeDef { hit_events: true, ..ShapeDef::default() };
    let mut ball = |x: f32, y: f32, def: ShapeDef| {
        let id = world
            .create_body(&BodyDef { transform: Isometry::from_translation(Vec3::new(x, y, 0.0)), ..BodyDef::default() })
            .unwrap();
        world.add_shape(id, Shape::sphere(Vec3::ZERO, 0.25).unwrap(), def).unwrap();
        id
    };
    let (loud, silent, gentle) =
        (ball(0.0, 5.25, hits_on), ball(2.0, 5.25, ShapeDef::default()), ball(4.0, 0.27, hits_on));
    let mut hits = Vec::new();
    for _ in 0..180 {
        world.step(1.0 / 60.0, pool.jobs()).unwrap();
        hits.extend_from_slice(world.contact_hit_events());
    }
    assert_eq!(hits.len(), 1, "{hits:?}");
    let hit = hits[0];
    let (ball_side, floor_side) =
        if hit.body_a == loud { (hit.body_a, hit.body_b) } else { (hit.body_b.unwrap(), Some(hit.body_a)) };
    assert_eq!((ball_side, floor_side), (loud, Some(floor)));
    let expected = (2.0 * 9.81 * 5.0f32).sqrt();
    assert!((hit.approach_speed - expected).abs() < 0.3, "{} m/s, expected {expected}", hit.approach_speed);
    assert!(hit.point.y.abs() < 0.05 && hit.normal.y.abs() > 0.99, "{hit:?}");
    let _ = (silent, gentle);
}

/// Hits on the voxel terrain name no second body.
#[test]
fn hits_on_terrain_name_the_terrain() {
    use crate::terrain::{Material, Terrain};
    let pool = ThreadPool::new(1);
    let mut world = World::new(WorldDef::default());
    let mut terrain = Terrain::new(1.0);
    terrain.fill(glam::IVec3::new(-8, -4, -8), glam::IVec3::new(8, -1, 8), Material::ROCK);
    world.set_terrain(terrain);
    let id = world
        .create_body(&BodyDef { transform: Isometry::from_translation(Vec3::new(0.3, 3.0, 0.2)), ..BodyDef::default() })
        .unwrap();
    world
        .add_shape(id, Shape::cuboid(Vec3::splat(0.5)).unwrap(), ShapeDef { hit_events: true, ..ShapeDef::default() })
        .unwrap();
    let mut hits = Vec::new();
    for _ in 0..120 {
        world.step(1.0 / 60.0, pool.jobs()).unwrap();
        hits.extend_from_slice(world.contact_hit_events());
    }
    assert!(!hits.is_empty() && hits.len() <= 2, "{hits:?}");
    assert_eq!((hits[0].body_a, hits[0].body_b), (id, None));
    assert!(hits[0].approach_speed > 5.0, "{hits:?}");
}
