//! Character controller behaviour: flat terrain seams, walls, ledges, caves, bad input.

use glam::{IVec3, Quat, Vec3};

use super::*;
use crate::collide::gjk::distance;
use crate::jobs::ThreadPool;
use crate::math::Ray;
use crate::terrain::{Material, Terrain};

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> f32 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (self.0 >> 40) as f32 / (1u64 << 24) as f32
    }
    fn signed(&mut self) -> f32 {
        self.next() * 2.0 - 1.0
    }
}

fn flat_terrain() -> Terrain {
    let mut t = Terrain::new(0.5);
    t.fill(IVec3::new(-64, -8, -64), IVec3::new(63, 0, 63), Material::ROCK);
    t
}

/// The terrain surface height below `(x, z)`.
fn floor(t: &mut Terrain, x: f32, z: f32) -> f32 {
    t.ray_cast(&Ray::new(Vec3::new(x, 50.0, z), -Vec3::Y), 100.0)
        .unwrap_or_else(|| panic!("no ground below {x} {z}"))
        .point
        .y
}

/// Smallest distance from the capsule's core to the terrain triangles near it, minus
/// the radius: negative means inside.
fn clearance(t: &mut Terrain, c: &Character, pool: &ThreadPool) -> f32 {
    let def = *c.def();
    let core = [c.position() - def.up * def.height * 0.5, c.position() + def.up * def.height * 0.5];
    let region = Aabb::new(core[0].min(core[1]), core[0].max(core[1])).expanded(def.radius + 0.1);
    let mut best = f32::INFINITY;
    t.query_triangles(&region, pool.jobs(), |tri| {
        let d = distance(
            &Proxy { points: &core, radius: 0.0 },
            &Isometry::IDENTITY,
            &Proxy { points: &tri.vertices, radius: 0.0 },
            &Isometry::IDENTITY,
        );
        best = best.min(if d.overlap { -1.0 } else { d.distance });
        true
    });
    best - def.radius
}

/// Walking with gravity across flat terrain made of many triangles: every step makes
/// the full horizontal displacement and the height never changes (no snag, no bump).
#[test]
fn walking_on_flat_terrain_never_snags() {
    let pool = ThreadPool::new(1);
    let mut terrain = flat_terrain();
    terrain.regenerate(pool.jobs());
    let y0 = floor(&mut terrain, 0.1, 0.1);
    let def = CharacterDef::default();
    let stand = y0 + def.radius + def.height * 0.5 + def.skin;
    let mut c = Character::new(def, Vec3::new(-10.0, stand, -7.0)).unwrap();
    let shapes: Vec<(Shape, Isometry)> = Vec::new();
    for step in 0..400 {
        let angle = step as f32 * 0.02;
        let horizontal = Vec3::new(angle.cos(), 0.0, angle.sin()) * 0.07;
        let mut world = TerrainWorld { terrain: &mut terrain, jobs: pool.jobs(), shapes: &shapes };
        let r = c.move_by(horizontal - Vec3::Y * 0.05, &mut world).unwrap();
        let made = Vec3::new(r.moved.x, 0.0, r.moved.z);
        assert!(made.abs_diff_eq(horizontal, 1e-4), "step {step}: moved {} of {horizontal}: {r:?}", r.moved);
        assert!(r.grounded && r.ground_normal.abs_diff_eq(Vec3::Y, 1e-4), "step {step}: {r:?}");
        let height = c.position().y - (y0 + def.radius + def.height * 0.5);
        assert!((0.0..=def.skin * 1.5).contains(&height), "step {step}: hovering {height}");
    }
}

/// Running diagonally into a wall keeps the motion along it.
#[test]
fn sliding_along_a_wall_keeps_the_tangential_motion() {
    let mut world: Vec<(Shape, Isometry)> = vec![(
        Shape::cuboid(Vec3::new(1.0, 5.0, 50.0)).unwrap(),
        Isometry::from_translation(Vec3::new(-1.0, 0.0, 0.0)),
    )];
    let def = CharacterDef { step_height: 0.0, ..CharacterDef::default() };
    let mut c = Character::new(def, Vec3::new(0.6, 0.0, 0.0)).unwrap();
    for _ in 0..10 {
        let r = c.move_by(Vec3::new(-0.5, 0.0, 0.5), &mut StaticWorld(&world)).unwrap();
        assert!((r.moved.z - 0.5).abs() < 1e-4, "{r:?}");
    }
    assert!((c.position().x - (def.radius + def.skin)).abs() < def.skin * 0.5, "{}", c.position());
    assert!((c.position().z - 5.0).abs() < 1e-3);
    assert!(c.last_move().contact_normal.abs_diff_eq(Vec3::X, 1e-3));
    // Into a corner: two walls, no motion left except along the crease (none here).
    world.push((
        Shape::cuboid(Vec3::new(50.0, 5.0, 1.0)).unwrap(),
        Isometry::from_translation(Vec3::new(0.0, 0.0, 7.0)),
    ));
    for _ in 0..10 {
        c.move_by(Vec3::new(-0.5, 0.0, 0.5), &mut StaticWorld(&world)).unwrap();
    }
    let p = c.position();
    assert!(p.x >= def.radius && p.z <= 6.0 - def.radius, "{p}");
    assert!((p.z - (6.0 - def.radius - def.skin)).abs() < def.skin, "{p}");
}

/// Small ledges are stepped onto; walls taller than the step height stop it.
#[test]
fn steps_up_small_ledges_only() {
    let ground =
        (Shape::cuboid(Vec3::new(20.0, 0.5, 20.0)).unwrap(), Isometry::from_translation(Vec3::new(0.0, -0.5, 0.0)));
    let ledge =
        (Shape::cuboid(Vec3::new(2.0, 0.1, 20.0)).unwrap(), Isometry::from_translation(Vec3::new(3.0, 0.1, 0.0)));
    let wall =
        (Shape::cuboid(Vec3::new(0.5, 0.4, 20.0)).unwrap(), Isometry::from_translation(Vec3::new(8.0, 0.4, 0.0)));
    let world = vec![ground, ledge, wall];
    let def = CharacterDef::default();
    let stand = def.radius + def.height * 0.5 + def.skin;
    let mut c = Character::new(def, Vec3::new(0.0, stand, 0.0)).unwrap();
    c.move_by(-Vec3::Y * 0.1, &mut StaticWorld(&world)).unwrap();
    assert!(c.is_grounded());
    for _ in 0..40 {
        c.move_by(Vec3::new(0.1, -0.05, 0.0), &mut StaticWorld(&world)).unwrap();
    }
    // On the 0.2 m ledge (x from 1 to 5).
    assert!(c.position().x > 3.5, "{}", c.position());
    assert!((c.position().y - (0.2 + stand)).abs() < 2.0 * def.skin, "{}", c.position());
    for _ in 0..60 {
        c.move_by(Vec3::new(0.1, -0.05, 0.0), &mut StaticWorld(&world)).unwrap();
    }
    // Stopped at the 0.8 m wall (x from 7.5), 0.6 above the ledge's floor level.
    assert!(c.position().x < 7.5 - def.radius + 1e-3, "{}", c.position());
    assert!(c.position().x > 7.0 - def.radius, "{}", c.position());
}

/// A block of rock 40 x 20 x 40 voxels hollowed by overlapping random spheres of air
/// (0.5 m voxels): chambers, tunnels, pillars, overhangs and ledges.
fn cave(seed: u64) -> Terrain {
    let mut t = Terrain::new(0.5);
    t.fill(IVec3::new(0, 0, 0), IVec3::new(39, 19, 39), Material::ROCK);
    let mut rng = Rng(seed);
    for _ in 0..60 {
        let c = Vec3::new(4.0 + rng.next() * 32.0, 4.0 + rng.next() * 12.0, 4.0 + rng.next() * 32.0);
        let r = 2.0 + rng.next() * 3.0;
        let lo = (c - Vec3::splat(r)).floor().as_ivec3().max(IVec3::ONE);
        let hi = (c + Vec3::splat(r)).ceil().as_ivec3().min(IVec3::new(38, 18, 38));
        for y in lo.y..=hi.y {
            for z in lo.z..=hi.z {
                for x in lo.x..=hi.x {
                    if (Vec3::new(x as f32, y as f32, z as f32) + 0.5).distance(c) <= r {
                        t.fill(IVec3::new(x, y, z), IVec3::new(x, y, z), Material::AIR);
                    }
                }
            }
        }
    }
    t
}

/// 10,000 random moves (with and without gravity) inside a cave never end inside the
/// rock.
#[test]
fn random_moves_in_a_cave_never_end_inside() {
    let pool = ThreadPool::new(2);
    let mut terrain = cave(23);
    terrain.regenerate(pool.jobs());
    let shapes: Vec<(Shape, Isometry)> = Vec::new();
    let def = CharacterDef { radius: 0.3, height: 0.6, ..CharacterDef::default() };
    let mut rng = Rng(17);
    let (mut moves, mut blocked, mut characters) = (0, 0, 0);
    while moves < 10_000 {
        // Spawn in the open, near rock.
        let spawn = Vec3::new(1.0 + rng.next() * 18.0, 1.0 + rng.next() * 8.0, 1.0 + rng.next() * 18.0);
        let mut c = Character::new(def, spawn).unwrap();
        let gap = clearance(&mut terrain, &c, &pool);
        if !(0.05..1.5).contains(&gap) {
            continue;
        }
        characters += 1;
        for _ in 0..250 {
            let gravity = if rng.next() < 0.5 { Vec3::new(0.0, -0.3, 0.0) } else { Vec3::ZERO };
            let d = Vec3::new(rng.signed(), rng.signed() * 0.5, rng.signed()) * (0.1 + rng.next() * 0.8) + gravity;
            let before = c.position();
            let mut world = TerrainWorld { terrain: &mut terrain, jobs: pool.jobs(), shapes: &shapes };
            let r = c.move_by(d, &mut world).unwrap();
            moves += 1;
            if (r.moved - d).length() > 1e-3 {
                blocked += 1;
            }
            let gap = clearance(&mut terrain, &c, &pool);
            assert!(
                gap > -INSIDE_TOLERANCE,
                "move {moves} from {before} by {d} ended {gap} inside at {}",
                c.position()
            );
        }
    }
    // The walk really met the rock.
    assert!(blocked > 2_000, "only {blocked} of {moves} moves were blocked ({characters} characters)");
}

#[test]
fn bad_input_is_refused_and_changes_nothing() {
    for def in [
        CharacterDef { radius: 0.0, ..CharacterDef::default() },
        CharacterDef { radius: f32::NAN, ..CharacterDef::default() },
        CharacterDef { height: -1.0, ..CharacterDef::default() },
        CharacterDef { skin: 0.0, ..CharacterDef::default() },
        CharacterDef { up: Vec3::new(0.0, 2.0, 0.0), ..CharacterDef::default() },
        CharacterDef { max_iterations: 0, ..CharacterDef::default() },
        CharacterDef { step_height: f32::INFINITY, ..CharacterDef::default() },
    ] {
        assert_eq!(Character::new(def, Vec3::ZERO).unwrap_err(), CharacterError::BadDef);
    }
    assert_eq!(Character::new(CharacterDef::default(), Vec3::NAN).unwrap_err(), CharacterError::NotFinite);
    let mut c = Character::new(CharacterDef::default(), Vec3::new(0.0, 5.0, 0.0)).unwrap();
    let world: Vec<(Shape, Isometry)> = Vec::new();
    assert_eq!(c.move_by(Vec3::new(f32::NAN, 0.0, 0.0), &mut StaticWorld(&world)), Err(CharacterError::NotFinite));
    assert_eq!(c.move_by(Vec3::INFINITY, &mut StaticWorld(&world)), Err(CharacterError::NotFinite));
    assert_eq!(c.position(), Vec3::new(0.0, 5.0, 0.0));
    assert_eq!(c.set_position(Vec3::NAN), Err(CharacterError::NotFinite));
    // A huge move through empty space is fine.
    let r = c.move_by(Vec3::new(1e6, 0.0, 0.0), &mut StaticWorld(&world)).unwrap();
    assert_eq!(r.moved, Vec3::new(1e6, 0.0, 0.0));
    // Teleported into a box: the next move pushes it out.
    let world = vec![(Shape::cuboid(Vec3::ONE).unwrap(), Isometry::new(Vec3::ZERO, Quat::from_rotation_y(0.3)))];
    c.set_position(Vec3::new(0.0, 0.9, 0.0)).unwrap();
    let r = c.move_by(Vec3::ZERO, &mut StaticWorld(&world)).unwrap();
    assert!(r.recovered);
    collide_all(
        &c.shape(),
        &Isometry::from_translation(c.position()),
        &world[0].0,
        &world[0].1,
        0.0,
        &mut |_, _, m| {
            assert!(m.min_separation() > -INSIDE_TOLERANCE, "{m:?}");
        },
    );
}

/// Walking circles with gravity over the hills never falls through the surface: the
/// capsule stays above the ground under it.
#[test]
fn walking_over_hills_stays_on_the_surface() {
    let pool = ThreadPool::new(1);
    let mut terrain = Terrain::new(1.0);
    crate::terrain::generate_hills(&mut terrain, 96, 1);
    terrain.regenerate(pool.jobs());
    let def = CharacterDef::default();
    let start = Vec3::new(20.0, 0.0, 20.0);
    let ground = floor(&mut terrain, start.x, start.z);
    let mut c = Character::new(def, Vec3::new(start.x, ground + def.radius + def.height * 0.5 + 0.1, start.z)).unwrap();
    let shapes: Vec<(Shape, Isometry)> = Vec::new();
    let steps: usize = std::env::var("KILN_WALK_STEPS").ok().and_then(|s| s.parse().ok()).unwrap_or(1500);
    for step in 0..steps {
        // Chase a point running round a 10 m circle, so gliding off slopes never
        // drifts the walk off the terrain.
        let angle = step as f32 * 0.01;
        let target = Vec3::new(30.0 + 10.0 * angle.cos(), 0.0, 30.0 + 10.0 * angle.sin());
        let to = target - c.position();
        let d = Vec3::new(to.x, 0.0, to.z).normalize_or_zero() * 0.1 - Vec3::Y * 0.1;
        let before = c.position();
        let mut world = TerrainWorld { terrain: &mut terrain, jobs: pool.jobs(), shapes: &shapes };
        let r = c.move_by(d, &mut world).unwrap();
        let p = c.position();
        let below = floor(&mut terrain, p.x, p.z);
        assert!(
            p.y - def.height * 0.5 - def.radius > below - 0.01,
            "step {step}: from {before} by {d} to {p} ({r:?}); ground at {below}"
        );
    }
}
