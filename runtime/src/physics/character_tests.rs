//! The character among bodies: stopped by a static wall body, carried by a moving
//! kinematic platform, pushing a light crate and not a heavy one.

use glam::Vec3;

use super::*;
use crate::character::{Character, CharacterDef};
use crate::jobs::ThreadPool;
use crate::math::Isometry;
use crate::physics::tests::ground;
use crate::physics::{BodyDef, BodyId, MotionType, ShapeDef, WorldDef};
use crate::shapes::Shape;

/// A box body of half extents `half` at `at`.
fn block(world: &mut World, motion: MotionType, at: Vec3, half: Vec3, density: f32) -> BodyId {
    let def = BodyDef { motion, transform: Isometry::from_translation(at), ..BodyDef::default() };
    let id = world.create_body(&def).unwrap();
    world.add_shape(id, Shape::cuboid(half).unwrap(), ShapeDef { density, ..ShapeDef::default() }).unwrap();
    id
}

/// A character standing on the ground box at `x`.
fn standing(x: f32, z: f32) -> Character {
    let def = CharacterDef::default();
    Character::new(def, Vec3::new(x, def.height * 0.5 + def.radius + def.skin, z)).unwrap()
}

/// Walks `steps` frames at `velocity` (plus a little down, to stay grounded),
/// stepping the world after each move.
fn walk(world: &mut World, c: &mut Character, velocity: Vec3, steps: usize, pool: &ThreadPool) {
    let dt = 1.0 / 60.0;
    for _ in 0..steps {
        world.move_character(c, (velocity - Vec3::Y) * dt, dt, &CharacterBodies::default(), pool.jobs()).unwrap();
        world.step(dt, pool.jobs()).unwrap();
    }
}

#[test]
fn a_static_wall_body_stops_the_character() {
    let pool = ThreadPool::new(1);
    let mut world = World::new(WorldDef::default());
    ground(&mut world);
    block(&mut world, MotionType::Static, Vec3::new(3.0, 1.0, 0.0), Vec3::new(0.5, 1.0, 2.0), 1000.0);
    let mut c = standing(0.0, 0.0);
    walk(&mut world, &mut c, Vec3::new(3.0, 0.0, 0.0), 120, &pool);
    let x = c.position().x;
    let face = 2.5 - c.def().radius;
    assert!(x <= face && x > face - 0.1, "stopped at {x}, the wall face is at {face}");
    assert!(c.is_grounded());
}

#[test]
fn a_kinematic_platform_carries_the_character() {
    let pool = ThreadPool::new(1);
    let mut world = World::new(WorldDef::default());
    ground(&mut world);
    let platform = block(&mut world, MotionType::Kinematic, Vec3::new(0.0, 0.6, 0.0), Vec3::new(2.0, 0.1, 2.0), 1000.0);
    world.set_velocity(platform, Vec3::new(1.0, 0.0, 0.0), Vec3::ZERO).unwrap();
    let def = CharacterDef::default();
    let mut c = Character::new(def, Vec3::new(0.0, 0.7 + def.height * 0.5 + def.radius + def.skin, 0.0)).unwrap();
    // Land on it first, then stand still for 2 s.
    walk(&mut world, &mut c, Vec3::ZERO, 120, &pool);
    let carried = c.position().x;
    let moved = world.transform(platform).unwrap().translation.x;
    assert!(c.is_grounded());
    assert!((carried - moved).abs() < 0.1, "the platform moved {moved} m, the character {carried} m");
    assert!(moved > 1.9, "{moved}");
}

#[test]
fn the_character_pushes_a_light_crate_but_not_a_heavy_one() {
    let pool = ThreadPool::new(1);
    let mut world = World::new(WorldDef::default());
    ground(&mut world);
    let light = block(&mut world, MotionType::Dynamic, Vec3::new(1.5, 0.5, 0.0), Vec3::splat(0.5), 20.0);
    let heavy = block(&mut world, MotionType::Dynamic, Vec3::new(1.5, 0.5, 6.0), Vec3::splat(0.5), 20_000.0);
    for _ in 0..60 {
        world.step(1.0 / 60.0, pool.jobs()).unwrap();
    }
    let (light_x, heavy_x) =
        (world.transform(light).unwrap().translation.x, world.transform(heavy).unwrap().translation.x);
    let mut a = standing(0.0, 0.0);
    let mut b = standing(0.0, 6.0);
    let dt = 1.0 / 60.0;
    for _ in 0..120 {
        for c in [&mut a, &mut b] {
            let d = Vec3::new(2.0, -1.0, 0.0) * dt;
            world.move_character(c, d, dt, &CharacterBodies::default(), pool.jobs()).unwrap();
        }
        world.step(dt, pool.jobs()).unwrap();
    }
    let light_moved = world.transform(light).unwrap().translation.x - light_x;
    let heavy_moved = world.transform(heavy).unwrap().translation.x - heavy_x;
    assert!(light_moved > 1.5, "the light crate moved {light_moved} m");
    assert!(heavy_moved.abs() < 0.05, "the heavy crate moved {heavy_moved} m");
    assert!(b.position().x < heavy_x - 0.5, "the heavy crate blocks: {}", b.position().x);
    assert!(a.position().x > 1.5, "the character followed the light crate to {}", a.position().x);
}

/// Bad numbers are refused and nothing moves.
#[test]
fn bad_moves_are_refused_and_nothing_moves() {
    use crate::character::CharacterError;
    let pool = ThreadPool::new(1);
    let mut world = World::new(WorldDef::default());
    ground(&mut world);
    let mut c = standing(0.0, 0.0);
    let before = c.position();
    let ok = CharacterBodies::default();
    let cases = [
        (Vec3::new(f32::NAN, 0.0, 0.0), 1.0 / 60.0, ok),
        (Vec3::X, f32::NAN, ok),
        (Vec3::X, -1.0, ok),
        (Vec3::X, 1.0 / 60.0, CharacterBodies { strength: f32::INFINITY, ..ok }),
    ];
    for (d, dt, settings) in cases {
        assert_eq!(world.move_character(&mut c, d, dt, &settings, pool.jobs()), Err(CharacterError::NotFinite));
        assert_eq!(c.position(), before);
    }
}
