//! Bodies in the terrain's water: light ones float at the depth Archimedes gives and
//! fall asleep there, dense ones sink, drag slows them, enter/leave events come once
//! each, and the result is the same for any worker count.

use glam::{IVec3, Quat, Vec3};

use super::*;
use crate::jobs::ThreadPool;
use crate::physics::{BodyDef, ShapeDef, WorldDef, MAX_WATER_DENSITY};
use crate::shapes::{Polytope, Shape};
use crate::terrain::{Material, Terrain};

const DT: f32 = 1.0 / 60.0;

/// A rock floor at y = -5 under water up to y = 0, 24 m across.
fn water_pool(def: WorldDef) -> World {
    let mut world = World::new(def);
    let mut terrain = Terrain::new(1.0);
    terrain.fill(IVec3::new(-12, -7, -12), IVec3::new(12, -6, 12), Material::ROCK);
    terrain.fill(IVec3::new(-12, -5, -12), IVec3::new(12, -1, 12), Material::WATER);
    world.set_terrain(terrain);
    world
}

fn body(world: &mut World, at: Vec3, rotation: Quat, shape: Shape, density: f32) -> BodyId {
    let def = BodyDef { transform: Isometry::new(at, rotation), ..BodyDef::default() };
    let id = world.create_body(&def).unwrap();
    world.add_shape(id, shape, ShapeDef { density, ..ShapeDef::default() }).unwrap();
    id
}

fn run(world: &mut World, pool: &ThreadPool, seconds: f32, events: &mut Vec<WaterEvent>) {
    for _ in 0..(seconds / DT).round() as usize {
        world.step(DT, pool.jobs()).unwrap();
        events.extend_from_slice(world.water_events());
    }
}

fn asleep(world: &World, id: BodyId) -> bool {
    matches!(world.bodies().locate(id), Ok((SetKind::Resting, _)))
}

fn fraction(world: &mut World, id: BodyId) -> f32 {
    let s = world.submerged(id).unwrap();
    s.volume / s.body_volume
}

/// Archimedes: a plank (stable upright) of density 500 floats with its middle at
/// the waterline, and falls asleep there.
#[test]
fn a_plank_of_half_the_water_density_floats_at_half_depth_and_sleeps() {
    let pool = ThreadPool::new(2);
    let mut world = water_pool(WorldDef::default());
    // Off the voxel grid, so the plank spans partial columns.
    let plank = Shape::cuboid(Vec3::new(1.1, 0.25, 0.9)).unwrap();
    let id = body(&mut world, Vec3::new(0.37, 1.0, -0.61), Quat::IDENTITY, plank, 500.0);
    let mut events = Vec::new();
    run(&mut world, &pool, 20.0, &mut events);
    let y = world.transform(id).unwrap().translation.y;
    assert!(y.abs() < 0.05 * 0.5, "middle {y} m from the waterline (5% of the height is 0.025)");
    let f = fraction(&mut world, id);
    assert!((f - 0.5).abs() < 0.025, "submerged fraction {f}");
    assert!(asleep(&world, id), "a floating body falls asleep");
    assert_eq!(events, [WaterEvent { body: id, begin: true }]);
}

/// A cube of density 500 is unstable upright (it floats tilted), but it still
/// displaces half its volume; so do a sphere, a capsule and a hull.
#[test]
fn every_shape_of_half_the_water_density_displaces_half_its_volume() {
    let pool = ThreadPool::new(2);
    let mut world = water_pool(WorldDef::default());
    let points: Vec<Vec3> = (0..40)
        .map(|i| {
            let (a, b) = (i as f32 * 2.4, (i as f32 * 0.7).sin());
            Vec3::new(a.cos() * 0.6, b * 0.5, a.sin() * 0.6)
        })
        .collect();
    let shapes = [
        Shape::cuboid(Vec3::splat(0.5)).unwrap(),
        Shape::sphere(Vec3::ZERO, 0.5).unwrap(),
        Shape::capsule(Vec3::new(-0.6, 0.0, 0.0), Vec3::new(0.6, 0.0, 0.0), 0.3).unwrap(),
        Shape::hull(&points).unwrap(),
    ];
    let tilt = Quat::from_rotation_x(0.3) * Quat::from_rotation_z(0.2);
    let ids: Vec<BodyId> = shapes
        .into_iter()
        .enumerate()
        .map(|(i, s)| body(&mut world, Vec3::new(i as f32 * 4.0 - 6.0, 1.5, 0.3), tilt, s, 500.0))
        .collect();
    let mut events = Vec::new();
    run(&mut world, &pool, 30.0, &mut events);
    for (k, &id) in ids.iter().enumerate() {
        let f = fraction(&mut world, id);
        // Spheres and capsules are tessellated: 2% on top of the 5%.
        let tolerance = if k == 1 || k == 2 { 0.035 } else { 0.025 };
        assert!((f - 0.5).abs() < tolerance, "shape {k}: submerged fraction {f}");
        assert!(asleep(&world, id), "shape {k} still awake");
    }
    assert_eq!(events.len(), 4, "{events:?}");
    assert!(events.iter().all(|e| e.begin));
}

/// Density 2,000 sinks to the floor and stays there, under water.
#[test]
fn a_box_of_twice_the_water_density_sinks() {
    let pool = ThreadPool::new(2);
    let mut world = water_pool(WorldDef::default());
    let id =
        body(&mut world, Vec3::new(0.2, 1.0, 0.4), Quat::IDENTITY, Shape::cuboid(Vec3::splat(0.5)).unwrap(), 2000.0);
    let mut events = Vec::new();
    run(&mut world, &pool, 10.0, &mut events);
    let y = world.transform(id).unwrap().translation.y;
    assert!((y - -4.5).abs() < 0.05, "resting on the floor at -4.5, got {y}");
    assert!((fraction(&mut world, id) - 1.0).abs() < 1e-4);
    assert_eq!(events, [WaterEvent { body: id, begin: true }]);
}

/// Drag follows its formula `½ ρ C A v²`: a dense sphere sinking from rest and a
/// floating plank sliding on the surface match the closed-form speeds (`tanh` for
/// the sinking, `v₀ / (1 + k v₀ t)` for the sliding); without drag the sphere falls
/// at `g (1 - ρ_w / ρ)` and the plank keeps its speed.
#[test]
fn drag_slows_bodies_in_water_as_its_formula_says() {
    let pool = ThreadPool::new(1);
    let measure = |drag: f32| {
        let def = WorldDef { water_linear_drag: drag, water_angular_drag: drag, ..WorldDef::default() };
        let mut world = water_pool(def);
        let sinker = body(
            &mut world,
            Vec3::new(-5.0, -0.5, 0.0),
            Quat::IDENTITY,
            Shape::sphere(Vec3::ZERO, 0.3).unwrap(),
            3000.0,
        );
        let plank = Shape::cuboid(Vec3::new(0.5, 0.25, 0.5)).unwrap();
        let floater = body(&mut world, Vec3::new(5.0, 0.0, 0.0), Quat::IDENTITY, plank, 500.0);
        world.set_velocity(floater, Vec3::new(3.0, 0.0, 0.0), Vec3::ZERO).unwrap();
        let mut events = Vec::new();
        run(&mut world, &pool, 0.5, &mut events);
        (-world.velocity(sinker).unwrap().0.y, world.velocity(floater).unwrap().0.x)
    };
    let (sink_free, slide_free) = measure(0.0);
    let (sink, slide) = measure(0.5);
    // Sphere: net weight (ρ - ρ_w) V g, drag ½ ρ_w C (2r)² v², from rest for 0.5 s.
    let (r, rho, t) = (0.3f32, 3000.0f32, 0.5f32);
    let volume = 4.0 / 3.0 * std::f32::consts::PI * r.powi(3);
    let (mass, weight, k) = (rho * volume, (rho - 1000.0) * volume * 9.81, 0.5 * 1000.0 * 0.5 * (2.0 * r).powi(2));
    let terminal = (weight / k).sqrt();
    let expected = terminal * (weight / mass * t / terminal).tanh();
    assert!((sink_free - weight / mass * t).abs() < 0.02 * sink_free, "{sink_free}");
    assert!((sink - expected).abs() < 0.03 * expected, "sinking at {sink} m/s, the formula says {expected}");
    // Plank: half under water, so half its 1 m × 0.5 m side faces the flow.
    let (m, k) = (500.0 * 0.5f32, 0.5 * 1000.0 * 0.5 * 0.25);
    let expected = 3.0 / (1.0 + k / m * 3.0 * t);
    assert!((slide_free - 3.0).abs() < 0.02, "{slide_free}");
    assert!((slide - expected).abs() < 0.05 * expected, "sliding at {slide} m/s, the formula says {expected}");
}

/// Enter and leave come once each: a body lifted out leaves, a destroyed body in
/// water leaves with the next step; sleeping bodies stay in without events; a
/// static body in water never enters.
#[test]
fn water_events_come_once_each() {
    let pool = ThreadPool::new(2);
    let mut world = water_pool(WorldDef::default());
    let cube = || Shape::cuboid(Vec3::new(0.6, 0.2, 0.6)).unwrap();
    let a = body(&mut world, Vec3::new(-4.0, 0.5, 0.0), Quat::IDENTITY, cube(), 500.0);
    let b = body(&mut world, Vec3::new(4.0, 0.5, 0.0), Quat::IDENTITY, cube(), 500.0);
    let fixed = world.create_body(&BodyDef { motion: super::super::MotionType::Static, ..BodyDef::default() }).unwrap();
    world.add_shape(fixed, cube(), ShapeDef::default()).unwrap();
    let mut events = Vec::new();
    run(&mut world, &pool, 12.0, &mut events);
    assert_eq!(events, [WaterEvent { body: a, begin: true }, WaterEvent { body: b, begin: true }]);
    assert!(asleep(&world, a) && asleep(&world, b));
    // Asleep and still in the water: nothing more.
    events.clear();
    run(&mut world, &pool, 1.0, &mut events);
    assert!(events.is_empty(), "{events:?}");
    // Lift `a` out; destroy `b`.
    world.set_transform(a, &Isometry::from_translation(Vec3::new(-4.0, 5.0, 0.0))).unwrap();
    world.destroy_body(b).unwrap();
    world.step(DT, pool.jobs()).unwrap();
    let step: Vec<WaterEvent> = world.water_events().to_vec();
    assert_eq!(step, [WaterEvent { body: b, begin: false }, WaterEvent { body: a, begin: false }]);
    // It falls back in: one more enter.
    events.clear();
    run(&mut world, &pool, 3.0, &mut events);
    assert_eq!(events, [WaterEvent { body: a, begin: true }]);
}

/// Draining the water under a sleeping floating body wakes it; it falls to the
/// floor and leaves the water.
#[test]
fn draining_the_pool_wakes_and_drops_a_floating_body() {
    let pool = ThreadPool::new(2);
    let mut world = water_pool(WorldDef::default());
    let id = body(
        &mut world,
        Vec3::new(0.5, 0.3, 0.5),
        Quat::IDENTITY,
        Shape::cuboid(Vec3::new(1.0, 0.25, 1.0)).unwrap(),
        500.0,
    );
    let mut events = Vec::new();
    run(&mut world, &pool, 10.0, &mut events);
    assert!(asleep(&world, id));
    world.terrain_mut().unwrap().fill(IVec3::new(-12, -5, -12), IVec3::new(12, -1, 12), Material::AIR);
    events.clear();
    run(&mut world, &pool, 4.0, &mut events);
    let y = world.transform(id).unwrap().translation.y;
    assert!((y - -4.75).abs() < 0.05, "on the drained floor at -4.75, got {y}");
    assert_eq!(events, [WaterEvent { body: id, begin: false }]);
}

/// Water density 0 turns water off: bodies sink like stones, no events.
#[test]
fn zero_water_density_turns_water_off() {
    let pool = ThreadPool::new(1);
    let mut world = water_pool(WorldDef { water_density: 0.0, ..WorldDef::default() });
    let id =
        body(&mut world, Vec3::new(0.0, 1.0, 0.0), Quat::IDENTITY, Shape::cuboid(Vec3::splat(0.5)).unwrap(), 100.0);
    let mut events = Vec::new();
    run(&mut world, &pool, 5.0, &mut events);
    assert!((world.transform(id).unwrap().translation.y - -4.5).abs() < 0.05);
    assert!(events.is_empty());
    let bad = [f32::NAN, -1.0, f32::INFINITY, MAX_WATER_DENSITY * 2.0];
    for x in bad {
        assert!(World::try_new(WorldDef { water_density: x, ..WorldDef::default() }).is_err(), "{x}");
        assert!(World::try_new(WorldDef { water_linear_drag: x, ..WorldDef::default() }).is_err(), "{x}");
        assert!(World::try_new(WorldDef { water_angular_drag: x, ..WorldDef::default() }).is_err(), "{x}");
    }
}

/// A pile of mixed bodies dropped into the pool: the same hash and events at 1, 2
/// and 8 workers.
#[test]
fn water_is_deterministic_for_any_worker_count() {
    let scene = |workers: usize| {
        let pool = ThreadPool::new(workers);
        let mut world = water_pool(WorldDef::default());
        let mut ids = Vec::new();
        for i in 0..48 {
            let at = Vec3::new((i % 6) as f32 * 1.3 - 3.0, 1.0 + (i / 6) as f32 * 1.1, (i % 5) as f32 * 0.9 - 2.0);
            let q = Quat::from_rotation_y(i as f32 * 0.4) * Quat::from_rotation_x(i as f32 * 0.3);
            let shape = match i % 3 {
                0 => Shape::cuboid(Vec3::new(0.4, 0.2, 0.3)).unwrap(),
                1 => Shape::sphere(Vec3::ZERO, 0.3).unwrap(),
                _ => Shape::capsule(Vec3::new(0.0, -0.3, 0.0), Vec3::new(0.0, 0.3, 0.0), 0.2).unwrap(),
            };
            ids.push(body(&mut world, at, q, shape, 300.0 + 100.0 * (i % 12) as f32));
        }
        let mut events = Vec::new();
        let mut hashes = Vec::new();
        for _ in 0..8 {
            run(&mut world, &pool, 0.5, &mut events);
            hashes.push(world.state_hash(&ids));
        }
        world.validate();
        (hashes, events)
    };
    let one = scene(1);
    assert!(one.1.iter().filter(|e| e.begin).count() >= 40, "most bodies enter: {:?}", one.1.len());
    assert_eq!(scene(2), one);
    assert_eq!(scene(8), one);
}

/// The rain scene's 4,096 spheres and boxes, at density 600, dropped over the hills
/// with the terrain's water on: every body ends finite, every floating one rests
/// with 60% (± 5%) of its volume under water, and all but a few (under 2%) sleep
/// within 30 s.
#[test]
fn rain_into_the_lakes_floats_at_the_right_depth_and_sleeps() {
    let pool = ThreadPool::new(2);
    let scene = crate::physics::scenes::rain(4096);
    let mut world = World::new(WorldDef { gravity: scene.gravity, ..WorldDef::default() });
    world.set_terrain(scene.terrain.as_ref().unwrap().build());
    let mut ids = Vec::new();
    for b in &scene.bodies {
        let def = BodyDef {
            transform: Isometry::new(b.position, b.rotation),
            linear_velocity: b.velocity,
            ..BodyDef::default()
        };
        let id = world.create_body(&def).unwrap();
        for shape in b.shape.shapes() {
            let def = ShapeDef { density: 600.0, rolling_resistance: b.rolling_resistance, ..ShapeDef::default() };
            world.add_shape(id, shape, def).unwrap();
        }
        ids.push(id);
    }
    let mut events = Vec::new();
    let mut steps = 0;
    while steps < 1800 && (steps == 0 || world.awake_count() > 0) {
        world.step(DT, pool.jobs()).unwrap();
        events.extend_from_slice(world.water_events());
        steps += 1;
    }
    println!("{} awake after {:.1} s, {} water events", world.awake_count(), steps as f32 * DT, events.len());
    // Floating bodies that touch form islands on the water; a few of those still
    // jostle at 30 s (on land every body sleeps by then).
    assert!(world.awake_count() < ids.len() / 50, "{} bodies still awake after 30 s", world.awake_count());
    let mut floating = 0;
    for &id in &ids {
        let p = world.transform(id).unwrap().translation;
        assert!(p.is_finite());
        let f = fraction(&mut world, id);
        // Floating: in water and touching nothing (not beached, not in a raft).
        let xf = world.transform(id).unwrap();
        let shape = world.bodies().shapes(id).unwrap()[0].shape.clone();
        let grown = match shape {
            Shape::Sphere { center, radius } => Shape::sphere(center, radius + 0.02).unwrap(),
            Shape::Box { half } => Shape::cuboid(half + 0.02).unwrap(),
            other => other,
        };
        let mut near = Vec::new();
        let others = crate::physics::QueryFilter { ignore: Some(id), ..Default::default() };
        world.overlap_shape(&grown, &xf, &others, pool.jobs(), &mut near);
        let alone = near.is_empty();
        if f > 0.0 && alone {
            floating += 1;
            assert!((f - 0.6).abs() < 0.05, "{id:?} at {p} has {f} under water");
        }
    }
    assert!(floating > 1000, "only {floating} bodies float");
}

/// Irregular water — random voxels, so columns have gaps, several runs and
/// neighbours that differ — under rotated boxes and hulls spanning many columns:
/// the submerged volume and its centroid equal a fine point sampling.
#[test]
fn submerged_volume_over_ragged_water_equals_sampling() {
    let mut world = World::new(WorldDef::default());
    let mut terrain = Terrain::new(0.5);
    let mut seed = 0x9e37_79b9u32;
    let mut rand = move || {
        seed ^= seed << 13;
        seed ^= seed >> 17;
        seed ^= seed << 5;
        seed
    };
    for x in -8..8 {
        for y in -8..8 {
            for z in -8..8 {
                if rand() % 2 == 0 {
                    let v = IVec3::new(x, y, z);
                    terrain.fill(v, v, Material::WATER);
                }
            }
        }
    }
    world.set_terrain(terrain);
    let points: Vec<Vec3> = (0..30)
        .map(|i| Vec3::new((i as f32 * 2.4).cos(), (i as f32 * 0.9).sin(), (i as f32 * 2.4).sin()) * 1.4)
        .collect();
    let hull = Shape::hull(&points).unwrap();
    let Shape::Hull(h) = &hull else { unreachable!() };
    let half = Vec3::new(1.3, 0.9, 1.1);
    for (k, shape) in [Shape::cuboid(half).unwrap(), hull.clone()].into_iter().enumerate() {
        let q = Quat::from_rotation_x(0.5 + k as f32) * Quat::from_rotation_y(0.8);
        let at = Vec3::new(0.23, -0.31, 0.17);
        let id = body(&mut world, at, q, shape.clone(), 500.0);
        let s = world.submerged(id).unwrap();
        let xf = Isometry::new(at, q);
        let inv = xf.inverse();
        let inside = |p: Vec3| {
            let l = inv.transform_point(p);
            if k == 0 {
                l.abs().cmple(half).all()
            } else {
                (0..h.face_count()).all(|f| h.plane(f).distance(l) <= 0.0)
            }
        };
        let bounds = shape.aabb(&xf);
        let n = 120;
        let step = (bounds.max - bounds.min) / n as f32;
        let (mut count, mut sum) = (0u64, glam::DVec3::ZERO);
        for i in 0..n {
            for j in 0..n {
                for m in 0..n {
                    let p = bounds.min + step * Vec3::new(i as f32 + 0.5, j as f32 + 0.5, m as f32 + 0.5);
                    let wet = world.terrain().unwrap().voxels().get((p / 0.5).floor().as_ivec3()).is_water();
                    if wet && inside(p) {
                        count += 1;
                        sum += p.as_dvec3();
                    }
                }
            }
        }
        let volume = count as f32 * step.x * step.y * step.z;
        let centroid = (sum / count as f64).as_vec3();
        assert!((s.volume - volume).abs() < 0.01 * s.body_volume, "shape {k}: {} vs sampled {volume}", s.volume);
        assert!((s.center - centroid).length() < 0.02, "shape {k}: centre {} vs sampled {centroid}", s.center);
        assert!(s.volume > 0.3 * s.body_volume && s.volume < 0.7 * s.body_volume, "{s:?}");
        world.destroy_body(id).unwrap();
    }
}
