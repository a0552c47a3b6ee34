//! The world around the contacts: terrain and its edits, worker counts and host
//! schedulers, continuous collision, islands and waking, contact events, bad input
//! and extreme values, kinematic targets, debug drawing and the step's stages.
use glam::{Quat, Vec3};

use super::scenes;
use super::tests::{body_at, cube_at, ground, inline, state_hash};
use super::*;
use crate::collide::tests::lcg;
use crate::jobs::ThreadPool;
use crate::math::Isometry;
use crate::shapes::Shape;
/// Whether `p` lies inside the terrain's solid: the first surface a ray straight up
/// from `p` meets faces away from it (its outward normal points up the ray).
fn below_surface(world: &mut World, p: Vec3) -> bool {
    let ray = crate::math::Ray::new(p, Vec3::Y);
    world.terrain_mut().unwrap().ray_cast(&ray, 200.0).is_some_and(|hit| hit.normal.y > 0.0)
}

/// 4,096 spheres and boxes dropped on voxel terrain settle, none ends below
/// the surface, and all of them sleep within 30 s. Before the seam and contact-reduction
/// fixes 10 to 30 stayed awake; the last one (a box across a convex ridge, rocking
/// between two 2-point lines of its 4-point support) went to sleep once the reduction
/// spanned the support polygon (see `narrow::reduce`).
#[test]
fn rain_of_4096_bodies_settles_stays_on_the_terrain_and_all_sleep_within_30_s() {
    let pool = ThreadPool::new(1);
    let scene = scenes::rain(4096);
    let (mut world, ids) = scene.build();
    let mut peak = StepCounters::default();
    let mut steps = 0;
    for _ in 0..1800 {
        steps += 1;
        world.step(1.0 / 60.0, pool.jobs()).unwrap();
        let c = world.counters();
        peak.constraints = peak.constraints.max(c.constraints);
        peak.colors = peak.colors.max(c.colors);
        peak.overflow_constraints = peak.overflow_constraints.max(c.overflow_constraints);
        peak.continuous_hits = peak.continuous_hits.max(c.continuous_hits);
        if world.awake_count() == 0 {
            break;
        }
    }
    println!("awake after {:.1} s: {}, peaks {peak:?}", steps as f32 / 60.0, world.awake_count());
    for id in &ids {
        let p = world.transform(*id).unwrap().translation;
        assert!(!below_surface(&mut world, p), "{id:?} at {p} is inside the terrain");
    }
    assert!(peak.continuous_hits > 0, "fast bodies were swept against the terrain");
    assert_eq!(world.awake_count(), 0, "bodies still awake after 30 s");
}

/// A host job system that runs every task at once, its ranges in a shuffled order and
/// spread over three worker indices: what a host scheduler may legally do.
pub(super) struct ShuffledHost {
    pub(super) seed: std::sync::atomic::AtomicU64,
}

// SAFETY: every range runs exactly once before `enqueue` returns, on this thread;
// worker indices are below `worker_count` and never used by two threads at once.
unsafe impl crate::jobs::HostScheduler for ShuffledHost {
    fn worker_count(&self) -> usize {
        3
    }

    fn enqueue(
        &self,
        task: crate::jobs::HostTask,
        item_count: usize,
        min_range: usize,
    ) -> Option<crate::jobs::HostTaskHandle> {
        let per = min_range.max(1);
        let mut ranges: Vec<(usize, usize)> =
            (0..item_count).step_by(per).map(|b| (b, (b + per).min(item_count))).collect();
        let mut seed = self.seed.fetch_add(0x9e37_79b9_7f4a_7c15, std::sync::atomic::Ordering::Relaxed);
        for i in (1..ranges.len()).rev() {
            let j = ((lcg(&mut seed) * 0.5 + 0.5) * (i + 1) as f32) as usize;
            ranges.swap(i, j.min(i));
        }
        for (k, (begin, end)) in ranges.into_iter().enumerate() {
            // SAFETY: disjoint ranges covering 0..item_count, inside enqueue.
            unsafe { task.run(begin, end, k % 3) };
        }
        None
    }

    fn finish(&self, _: crate::jobs::HostTaskHandle) {}
}

/// The hash of all body states after 600 steps of a 1,000-body scene (spheres
/// and boxes raining on voxel terrain, piling up, sleeping) is the same for 1, 2 and 8
/// workers, on the built-in pool and on a host scheduler that shuffles its tasks, and
/// across two runs.
#[test]
fn the_step_is_bit_identical_for_any_worker_count_and_scheduler() {
    let scene = scenes::rain(1000);
    let run = |jobs: crate::jobs::Jobs| {
        let (mut world, ids) = scene.build();
        for _ in 0..600 {
            world.step(1.0 / 60.0, jobs).unwrap();
        }
        assert!(world.counters().sleeping_groups > 0 && world.awake_count() > 0, "{:?}", world.counters());
        (state_hash(&world, &ids), world.counters())
    };
    let reference = run(ThreadPool::new(0).jobs());
    for threads in [1, 2, 8] {
        assert_eq!(run(ThreadPool::new(threads).jobs()), reference, "{threads} threads");
    }
    let host = crate::jobs::HostExecutor::new(ShuffledHost { seed: 7.into() });
    assert_eq!(run(crate::jobs::Jobs::new(&host)), reference, "shuffled host scheduler");
    assert_eq!(run(ThreadPool::new(2).jobs()), reference, "a second run");
}

/// The continuous stage's shortcut: where the step's terrain contacts cover a box,
/// [`NearTerrain::around`] lists exactly the triangles a lookup of its chunks and a
/// query of their trees find (after the same box test), in the same order, or says
/// that none is near. Boxes around every awake shape of a rain, in the air and on
/// the terrain, from inside their fat boxes to three metres past them.
#[test]
fn near_terrain_lists_the_triangles_a_chunk_lookup_finds() {
    use super::continuous::Near;
    use crate::math::{triangle_overlaps_aabb, Aabb};
    let (mut world, _) = scenes::rain(1000).build();
    let pool = inline();
    let mut seed = 11u64;
    let (mut nothing, mut listed, mut unknown, mut triangles) = (0, 0, 0, 0);
    for step in 0..200 {
        world.step(1.0 / 60.0, pool.jobs()).unwrap();
        if step % 5 != 4 {
            continue;
        }
        let (near, shapes) = world.near_terrain().expect("a terrain");
        for (proxy, fat) in shapes {
            for reach in [0.1, 0.3, 1.0, 3.0] {
                // Half to all of the fat box, moved by up to `reach` on each axis.
                let mut r = || lcg(&mut seed);
                let half = 0.5 * (fat.max - fat.min) * (0.75 + 0.25 * Vec3::new(r(), r(), r()));
                let center = fat.center() + Vec3::new(r(), r(), r()) * reach;
                let region = Aabb::new(center - half, center + half);
                let mut found = Vec::new();
                near.terrain.for_each_overlap(&region, |chunk, overlap| {
                    if let Some(mesh) = overlap.solid.then(|| near.terrain.chunk_mesh(chunk)).flatten() {
                        mesh.query_aabb(&region, |i| {
                            found.push(mesh.triangle(i));
                            true
                        });
                    }
                    true
                });
                match near.around(proxy, &region) {
                    Near::Nothing => {
                        assert!(found.is_empty(), "step {step}, proxy {proxy}: {} triangles near", found.len());
                        nothing += 1;
                    }
                    Near::Triangles(set) => {
                        let kept: Vec<_> =
                            set.iter().copied().filter(|&v| triangle_overlaps_aabb(v, &region)).collect();
                        assert_eq!(kept, found, "step {step}, proxy {proxy}");
                        listed += 1;
                        triangles += found.len();
                    }
                    Near::Unknown => unknown += 1,
                }
            }
        }
    }
    // Both shortcuts were taken, with triangles to find, and boxes past the
    // contacts' reach were refused.
    let counts = format!("{nothing} nothing, {listed} listed ({triangles} triangles), {unknown} unknown");
    assert!(nothing > 10_000 && listed > 2_000 && triangles > 10_000 && unknown > 10_000, "{counts}");
}

/// A bullet sphere at 200 m/s does not pass through a 0.2 m wall: a static
/// box, and a one-voxel wall of 0.2 m voxel terrain.
#[test]
fn a_bullet_at_200_m_per_s_stops_at_a_thin_wall() {
    use crate::terrain::{Material, Terrain};
    let pool = inline();
    for terrain_wall in [false, true] {
        let mut world = World::new(WorldDef { gravity: Vec3::ZERO, ..WorldDef::default() });
        // Both walls span x in [10.0, 10.2].
        let face = 10.0;
        if terrain_wall {
            // Voxels x = 50 of 0.2 m.
            let mut terrain = Terrain::new(0.2);
            terrain.fill(glam::IVec3::new(50, -20, -20), glam::IVec3::new(50, 20, 20), Material::ROCK);
            world.set_terrain(terrain);
        } else {
            let wall = world
                .create_body(&BodyDef {
                    motion: MotionType::Static,
                    transform: Isometry::from_translation(Vec3::new(10.1, 0.0, 0.0)),
                    ..BodyDef::default()
                })
                .unwrap();
            world.add_shape(wall, Shape::cuboid(Vec3::new(0.1, 3.0, 3.0)).unwrap(), ShapeDef::default()).unwrap();
        }
        let def = BodyDef {
            transform: Isometry::from_translation(Vec3::new(0.0, 0.3, 0.1)),
            linear_velocity: Vec3::new(200.0, 0.0, 0.0),
            bullet: true,
            ..BodyDef::default()
        };
        let bullet = world.create_body(&def).unwrap();
        world.add_shape(bullet, Shape::sphere(Vec3::ZERO, 0.05).unwrap(), ShapeDef::default()).unwrap();
        let mut hits = 0;
        for _ in 0..30 {
            world.step(1.0 / 60.0, pool.jobs()).unwrap();
            hits += world.counters().continuous_hits;
            let x = world.transform(bullet).unwrap().translation.x;
            assert!(x < face, "terrain wall {terrain_wall}: the bullet passed the wall face: x = {x}");
        }
        assert!(hits > 0, "the wall was found by time of impact");
        let (v, _) = world.velocity(bullet).unwrap();
        assert!(v.x < 1.0, "terrain wall {terrain_wall}: the bullet was stopped: {v}");
    }
}

/// A bullet at 300 m/s stops at a 0.2 m plate that moves: a dynamic one sliding
/// across its path and a kinematic one coming toward it; the bullet never passes
/// the plate's far face, and pushes the dynamic plate. A plain fast body (not a
/// bullet) sweeps only against static geometry and passes through both.
#[test]
fn a_bullet_stops_at_a_moving_thin_plate() {
    let pool = inline();
    for (kinematic, bullet) in [(false, true), (true, true), (false, false), (true, false)] {
        let mut world = World::new(WorldDef { gravity: Vec3::ZERO, enable_sleep: false, ..WorldDef::default() });
        let plate = world
            .create_body(&BodyDef {
                motion: if kinematic { MotionType::Kinematic } else { MotionType::Dynamic },
                transform: Isometry::from_translation(Vec3::new(10.0, 0.0, -1.0)),
                linear_velocity: if kinematic { Vec3::new(-2.0, 0.0, 0.0) } else { Vec3::new(0.0, 0.0, 2.0) },
                ..BodyDef::default()
            })
            .unwrap();
        world.add_shape(plate, Shape::cuboid(Vec3::new(0.1, 2.0, 2.0)).unwrap(), ShapeDef::default()).unwrap();
        let def = BodyDef {
            transform: Isometry::from_translation(Vec3::new(0.0, 0.3, 0.1)),
            linear_velocity: Vec3::new(300.0, 0.0, 0.0),
            bullet,
            ..BodyDef::default()
        };
        let shot = world.create_body(&def).unwrap();
        world.add_shape(shot, Shape::sphere(Vec3::ZERO, 0.05).unwrap(), ShapeDef::default()).unwrap();
        let mut passed = false;
        for _ in 0..20 {
            world.step(1.0 / 60.0, pool.jobs()).unwrap();
            let (x, face) =
                (world.transform(shot).unwrap().translation.x, world.transform(plate).unwrap().translation.x);
            passed |= x > face + 0.1;
        }
        assert_eq!(passed, !bullet, "kinematic plate {kinematic}, bullet {bullet}");
        if bullet && !kinematic {
            let (v, _) = world.velocity(plate).unwrap();
            assert!(v.x > 0.01, "the plate was pushed: {v}");
        }
    }
}

/// Continuous collision against terrain pauses a body whose centroid comes at a
/// surface fast (more than the core distance, a quarter of its smallest extent, in a
/// step), and not one that only clips it: a ball skimming over a rock slab at 20 m/s
/// and sinking 9 cm per step dips 3 cm into the slab and is pushed out by its contact
/// (Box2D v3's rule for one-sided surfaces), while one coming down at 30 m/s is
/// stopped at the surface by its time of impact.
#[test]
fn terrain_sweeps_pause_a_body_coming_through_not_one_clipping_the_surface() {
    use crate::terrain::{Material, Terrain};
    let pool = inline();
    for (sink, start_gap, paused) in [(0.09, 0.06, false), (0.5, 0.3, true)] {
        let mut world = World::new(WorldDef { gravity: Vec3::ZERO, enable_sleep: false, ..WorldDef::default() });
        let mut terrain = Terrain::new(1.0);
        // Top at y = 1.
        terrain.fill(glam::IVec3::new(-40, -4, -10), glam::IVec3::new(40, 0, 10), Material::ROCK);
        world.set_terrain(terrain);
        let ball = body_at(&mut world, Vec3::new(-10.0, 1.5 + start_gap, 0.25));
        world.add_shape(ball, Shape::sphere(Vec3::ZERO, 0.5).unwrap(), ShapeDef::default()).unwrap();
        world.set_velocity(ball, Vec3::new(20.0, -60.0 * sink, 0.0), Vec3::ZERO).unwrap();
        let (mut hits, mut lowest) = (0, f32::INFINITY);
        for _ in 0..20 {
            world.step(1.0 / 60.0, pool.jobs()).unwrap();
            hits += world.counters().continuous_hits;
            lowest = lowest.min(world.transform(ball).unwrap().translation.y);
        }
        let x = world.transform(ball).unwrap().translation.x;
        if paused {
            assert!(hits > 0, "a ball coming down at {sink} m per step was swept to the surface");
            assert!(lowest > 1.5 - 2.0 * crate::physics::LINEAR_SLOP, "it stopped at the surface: {lowest}");
        } else {
            assert_eq!(hits, 0, "a ball clipping the surface by {} m is not paused", sink - start_gap);
            assert!(lowest > 1.5 - (sink - start_gap) - 0.01 && lowest < 1.5 - 0.01, "it dipped in: {lowest}");
            assert!(x > -10.0 + 20.0 * 20.0 / 60.0 * 0.5, "and went on skimming: x = {x}");
        }
    }
}

/// A ball thrown at a sleeping stack wakes only the island it touches; the
/// other stack sleeps on. Contact begin events come out for the new touch, and only
/// for it: the stacks' contacts began once, and neither falling asleep nor waking
/// ends or begins them again.
#[test]
fn a_ball_wakes_only_the_island_it_hits() {
    let pool = inline();
    let mut world = World::new(WorldDef::default());
    ground(&mut world);
    let left: Vec<BodyId> = (0..4).map(|i| cube_at(&mut world, Vec3::new(-5.0, 0.5 + i as f32, 0.0), 0.5)).collect();
    let right: Vec<BodyId> = (0..4).map(|i| cube_at(&mut world, Vec3::new(5.0, 0.5 + i as f32, 0.0), 0.5)).collect();
    let mut events = Vec::new();
    for _ in 0..120 {
        world.step(1.0 / 60.0, pool.jobs()).unwrap();
        events.extend_from_slice(world.contact_events());
    }
    assert_eq!(events.len(), 8, "one begin per touch of each stack (ground and three between boxes): {events:?}");
    assert!(events.iter().all(|e| e.begin), "{events:?}");
    assert_eq!(world.awake_count(), 0, "both stacks sleep");
    assert_eq!(world.counters().sleeping_groups, 2, "as two islands");
    let ball = world
        .create_body(&BodyDef {
            transform: Isometry::from_translation(Vec3::new(2.0, 2.5, 0.0)),
            linear_velocity: Vec3::new(12.0, 0.0, 0.0),
            gravity_scale: 0.0,
            ..BodyDef::default()
        })
        .unwrap();
    world.add_shape(ball, Shape::sphere(Vec3::ZERO, 0.3).unwrap(), ShapeDef::default()).unwrap();
    let mut woke = false;
    let mut began = false;
    for _ in 0..30 {
        world.step(1.0 / 60.0, pool.jobs()).unwrap();
        woke |= right.iter().any(|id| world.is_awake(*id).unwrap());
        let ball_events = |e: &&ContactEvent| e.body_a == ball || e.body_b == Some(ball);
        began |= world.contact_events().iter().filter(ball_events).any(|e| e.begin);
        assert!(world.contact_events().iter().all(|e| ball_events(&e)), "{:?}", world.contact_events());
        assert!(left.iter().all(|id| !world.is_awake(*id).unwrap()), "the left stack stays asleep");
    }
    assert!(woke, "the right stack woke");
    assert!(began, "a begin event for the ball's contact");
    assert!(right.iter().all(|id| world.is_awake(*id).unwrap()), "the whole right island woke");
}

/// A group woken by a contact keeps the constraints and impulses it slept with: they
/// join the store and the step's table. Stack A is woken by a ball; before the next
/// step a second ball is put against stack B, so that step's narrowphase wakes B
/// while it renews A's constraints where they are. From that narrowphase on, the
/// step's contacts are A's, renewed with the impulses A's solve left (the warm
/// start), and B's with the impulses B slept with; every constraint stays in the
/// store once, through each stage.
#[test]
fn constraints_of_a_woken_group_stay_in_place_through_the_next_step() {
    let pool = inline();
    let mut world = World::new(WorldDef::default());
    ground(&mut world);
    let stack = |world: &mut World, x: f32| -> Vec<BodyId> {
        (0..4).map(|i| cube_at(world, Vec3::new(x, 0.5 + i as f32, 0.0), 0.5)).collect()
    };
    let (a, b) = (stack(&mut world, -5.0), stack(&mut world, 5.0));
    for _ in 0..120 {
        world.step(1.0 / 60.0, pool.jobs()).unwrap();
    }
    assert_eq!(world.awake_count(), 0, "both stacks sleep");
    let ball = |world: &mut World, p: Vec3, v: Vec3| {
        let def = BodyDef {
            transform: Isometry::from_translation(p),
            linear_velocity: v,
            gravity_scale: 0.0,
            ..BodyDef::default()
        };
        let id = world.create_body(&def).unwrap();
        world.add_shape(id, Shape::sphere(Vec3::ZERO, 0.3).unwrap(), ShapeDef::default()).unwrap();
        id
    };
    // Ball 1 flies at stack A; ball 2 waits far above stack B.
    ball(&mut world, Vec3::new(-8.0, 2.5, 0.0), Vec3::new(12.0, 0.0, 0.0));
    let second = ball(&mut world, Vec3::new(5.0, 40.0, 0.0), Vec3::ZERO);
    let mut steps = 0;
    while !world.is_awake(a[0]).unwrap() {
        world.step(1.0 / 60.0, pool.jobs()).unwrap();
        steps += 1;
        assert!(steps < 60, "ball 1 reached stack A");
    }
    // Stack A settles (its manifolds keep their features from here on).
    for _ in 0..20 {
        world.step(1.0 / 60.0, pool.jobs()).unwrap();
    }
    assert!(a.iter().all(|&id| world.is_awake(id).unwrap()), "stack A is still awake");
    assert!(b.iter().all(|&id| !world.is_awake(id).unwrap()), "stack B still sleeps");
    let contacts = |world: &World| {
        let mut all = Vec::new();
        world.for_each_contact(|c| all.push(*c));
        all
    };
    let after = contacts(&world);
    let in_a = |c: &ContactPointInfo| a.contains(&c.body_a) || c.body_b.is_some_and(|id| a.contains(&id));
    // Four boxes on the ground: four faces of four points each (the ball's blow may
    // have lifted a corner).
    let stacked = after.iter().filter(|c| in_a(c)).count();
    let pressed = after.iter().filter(|c| in_a(c) && c.normal_impulse > 0.0).count();
    assert!(stacked >= 16 && pressed >= 12, "the woken stack's contacts and impulses: {stacked}, {pressed}");

    // Ball 2 against the side of stack B's bottom box, coming in.
    world.set_transform(second, &Isometry::from_translation(Vec3::new(5.78, 0.5, 0.0))).unwrap();
    world.set_velocity(second, Vec3::new(-1.0, 0.0, 0.0), Vec3::ZERO).unwrap();
    let in_b = |c: &ContactPointInfo| b.contains(&c.body_a) || c.body_b.is_some_and(|id| b.contains(&id));
    for stage in StepStage::ALL {
        world.step_stage(stage, 1.0 / 60.0, pool.jobs()).unwrap();
        world.validate();
        if stage != StepStage::Narrowphase {
            continue;
        }
        assert!(b.iter().all(|&id| world.is_awake(id).unwrap()), "the narrowphase woke stack B");
        let now = contacts(&world);
        let key = |c: &ContactPointInfo| (c.body_a, c.body_b, c.feature);
        for y in after.iter().filter(|c| in_a(c)) {
            let x = now.iter().find(|x| key(x) == key(y)).expect("stack A's contact, renewed");
            assert_eq!(x.normal_impulse.to_bits(), y.normal_impulse.to_bits(), "{:?}: the warm start", key(y));
        }
        let stacked = now.iter().filter(|c| in_b(c)).count();
        let pressed = now.iter().filter(|c| in_b(c) && c.normal_impulse > 0.0).count();
        assert!(
            stacked >= 16 && pressed >= 12,
            "stack B's contacts and the impulses it slept with: {stacked}, {pressed}"
        );
    }
}

/// Begin and end events come out once per touch, in pair order; a destroyed body's
/// touching contacts end with the next step.
#[test]
fn contact_events_begin_and_end() {
    let pool = inline();
    let mut world = World::new(WorldDef { enable_sleep: false, ..WorldDef::default() });
    let g = ground(&mut world);
    let a = cube_at(&mut world, Vec3::new(0.0, 1.5, 0.0), 0.5);
    let b = cube_at(&mut world, Vec3::new(3.0, 0.5, 0.0), 0.5);
    let mut events = Vec::new();
    for _ in 0..60 {
        world.step(1.0 / 60.0, pool.jobs()).unwrap();
        events.extend_from_slice(world.contact_events());
    }
    let begins: Vec<_> = events.iter().filter(|e| e.begin).map(|e| (e.body_a, e.body_b)).collect();
    assert_eq!(begins.len(), 2, "{events:?}");
    assert!(begins.contains(&(g, Some(a))) || begins.contains(&(a, Some(g))));
    assert!(begins.contains(&(g, Some(b))) || begins.contains(&(b, Some(g))));
    assert!(events.iter().all(|e| e.begin), "nothing ended yet");
    world.destroy_body(b).unwrap();
    world.step(1.0 / 60.0, pool.jobs()).unwrap();
    let ends: Vec<_> = world.contact_events().iter().filter(|e| !e.begin).collect();
    assert_eq!(ends.len(), 1, "{:?}", world.contact_events());
    assert!(ends[0].body_a == b || ends[0].body_b == Some(b));
}

/// A 1 m box dropped from 0.1 m onto a flat slab of rock (1 m voxels, top at y = 1).
fn box_on_rock(def: WorldDef) -> (World, BodyId) {
    use crate::terrain::{Material, Terrain};
    let mut world = World::new(def);
    let mut terrain = Terrain::new(1.0);
    terrain.fill(glam::IVec3::new(-10, -6, -10), glam::IVec3::new(10, 0, 10), Material::ROCK);
    world.set_terrain(terrain);
    let id = cube_at(&mut world, Vec3::new(0.5, 1.6, 0.5), 0.5);
    (world, id)
}

/// A box lifts straight off the ground, 0.4 mm per step without gravity: its points
/// do not slide, so the manifold found at step 0 is reused until the box has lifted
/// more than `REUSE_LIFT` (5 mm in `narrow.rs`; step 13 collides again), while every
/// step's separations match a fresh collision. (The first rule, 2 mm of motion in any
/// direction, collided again at step 6.)
#[test]
fn a_pair_moving_along_its_normal_reuses_its_manifold_until_it_has_lifted_5_mm() {
    let pool = inline();
    let mut world = World::new(WorldDef { gravity: Vec3::ZERO, ..WorldDef::default() });
    world.set_sleep_enabled(false);
    let floor = ground(&mut world);
    let id = body_at(&mut world, Vec3::new(0.0, 0.5, 0.0));
    world.add_shape(id, Shape::cuboid(Vec3::splat(0.5)).unwrap(), ShapeDef::default()).unwrap();
    let shape = |body: BodyId| world.bodies().shapes(body).unwrap()[0].shape.clone();
    let (floor_shape, box_shape) = (shape(floor), shape(id));
    let mut reused = Vec::new();
    for step in 0..16 {
        world.set_velocity(id, Vec3::new(0.0, 0.024, 0.0), Vec3::ZERO).unwrap();
        let (xa, xb) = (world.transform(floor).unwrap(), world.transform(id).unwrap());
        world.step(1.0 / 60.0, pool.jobs()).unwrap();
        reused.push(world.counters().reused_pairs);
        let fresh = crate::collide::collide(&floor_shape, &xa, &box_shape, &xb, SPECULATIVE_DISTANCE);
        let mut points = Vec::new();
        world.for_each_contact(|c| points.push(*c));
        assert_eq!(points.len(), 4, "step {step}");
        for c in &points {
            let f = fresh.points().iter().find(|f| f.id == c.feature).expect("the same features");
            assert!((c.separation - f.separation).abs() < 1e-5, "step {step}: {} vs {}", c.separation, f.separation);
        }
    }
    // Found at step 0; lifted 0.4 mm a step, so 4.8 mm at step 12 and 5.2 at step 13.
    let expected: Vec<u32> = (0..16).map(|s| u32::from(s != 0 && s != 13)).collect();
    assert_eq!(reused, expected);
}

/// The terrain side of `a_slowly_moving_pair_reuses_its_manifold_and_its_points_follow_the_bodies`:
/// a box slides and turns slowly on a flat slab of rock (no friction; 0.2 mm and
/// 0.023° per step, its corners move up to 0.5 mm). It reuses its terrain manifold
/// for most steps and collides again now and then, and every step's points,
/// reused or not, lie on the box's bottom face as it was at the step's start, at
/// its separation from the rock there, with the normal straight down.
#[test]
fn a_box_sliding_slowly_on_terrain_reuses_its_manifold_and_its_points_follow_it() {
    let pool = inline();
    let def = WorldDef { enable_sleep: false, terrain_friction: 0.0, ..WorldDef::default() };
    let (mut world, id) = box_on_rock(def);
    // Every corner 0.12 m or more from the rock's grid lines and cell diagonals (the
    // box moves 5 cm at most): seam contacts keep the face normal but not the face's
    // depth (see `collide/mesh.rs`), so a corner on a grid vertex would not tell.
    world.set_transform(id, &Isometry::from_translation(Vec3::new(0.2, 1.6, 0.62))).unwrap();
    for _ in 0..30 {
        world.step(1.0 / 60.0, pool.jobs()).unwrap();
    }
    let mut reused = 0;
    for step in 0..120 {
        world.set_velocity(id, Vec3::new(0.012, 0.0, 0.0), Vec3::new(0.0, 0.024, 0.0)).unwrap();
        let xf = world.transform(id).unwrap();
        world.step(1.0 / 60.0, pool.jobs()).unwrap();
        reused += world.counters().reused_terrain;
        // The box's bottom face at the step's start: its height above (x, z).
        let (bottom, up) = (xf.transform_point(Vec3::new(0.0, -0.5, 0.0)), xf.rotation * Vec3::Y);
        let face_y = |p: Vec3| bottom.y - (up.x * (p.x - bottom.x) + up.z * (p.z - bottom.z)) / up.y;
        let mut points = Vec::new();
        world.for_each_contact(|c| points.push(*c));
        assert_eq!(points.len(), 4, "step {step}: {points:?}");
        for c in &points {
            assert_eq!((c.body_a, c.body_b), (id, None));
            // On the face's outline: box corners, or the rock's grid vertices under them.
            let local = xf.inverse_transform_point(Vec3::new(c.point.x, face_y(c.point), c.point.z));
            assert!(local.x.abs().max(local.z.abs()) < 0.5 + 1e-3, "step {step}: {c:?} off the face: {local}");
            let gap = face_y(c.point) - 1.0;
            assert!((c.separation - gap).abs() < 1e-5, "step {step}: {c:?}, the face is {gap} above the rock");
            assert!(c.normal.dot(-Vec3::Y) > 0.9998, "step {step}: {}", c.normal);
        }
    }
    // Up to 0.5 mm of slide per point and step against 2 mm allowed: at least three
    // steps in four, and four in five where the points slide less than the corners.
    assert!((90..=100).contains(&reused), "reused in {reused} of 120 steps");
}

/// Editing the terrain under a sleeping body wakes it, and it falls into the
/// hole.
#[test]
fn a_terrain_edit_under_a_sleeping_body_wakes_it() {
    use crate::terrain::Material;
    let pool = inline();
    let (mut world, id) = box_on_rock(WorldDef::default());
    for _ in 0..120 {
        world.step(1.0 / 60.0, pool.jobs()).unwrap();
    }
    assert!(!world.is_awake(id).unwrap(), "the box rests and sleeps on the terrain");
    let rest = world.transform(id).unwrap().translation.y;
    world.terrain_mut().unwrap().fill(glam::IVec3::new(-2, -3, -2), glam::IVec3::new(2, 0, 2), Material::AIR);
    world.step(1.0 / 60.0, pool.jobs()).unwrap();
    assert!(world.is_awake(id).unwrap(), "the edit woke it");
    for _ in 0..60 {
        world.step(1.0 / 60.0, pool.jobs()).unwrap();
    }
    let y = world.transform(id).unwrap().translation.y;
    assert!(y < rest - 1.0, "it fell into the hole: {rest} -> {y}");
}

/// The narrowphase keeps a shape's terrain triangles while it stays put
/// (see `narrow.rs`); an edit under an awake resting body must still reach it. With
/// sleep off, a box rests for a second, the ground under it is dug out, and it falls.
#[test]
fn an_edit_under_an_awake_resting_body_is_not_hidden_by_kept_triangles() {
    use crate::terrain::Material;
    let pool = inline();
    let (mut world, id) = box_on_rock(WorldDef { enable_sleep: false, ..WorldDef::default() });
    for _ in 0..60 {
        world.step(1.0 / 60.0, pool.jobs()).unwrap();
    }
    let rest = world.transform(id).unwrap().translation.y;
    assert!((rest - 1.5).abs() < 0.02, "the box rests on the ground: {rest}");
    assert_eq!(world.counters().reused_terrain, 1, "the resting box reuses its terrain manifold");
    world.terrain_mut().unwrap().fill(glam::IVec3::new(-2, -3, -2), glam::IVec3::new(2, 0, 2), Material::AIR);
    world.step(1.0 / 60.0, pool.jobs()).unwrap();
    assert_eq!(world.counters().reused_terrain, 0, "the edit makes it collide again");
    for _ in 0..59 {
        world.step(1.0 / 60.0, pool.jobs()).unwrap();
    }
    let y = world.transform(id).unwrap().translation.y;
    assert!(y < rest - 1.0, "it fell into the hole: {rest} -> {y}");
}

/// Random edits between steps keep every invariant (`World::validate` after each
/// call): bodies of every motion type created, given shapes, destroyed (their stale
/// handles then refused), moved, pushed and woken; terrain dug and filled under them;
/// sleep toggled; and steps of random length, so bodies fall asleep and wake mid-run.
#[test]
fn random_edits_between_steps_keep_every_invariant() {
    use crate::terrain::{Material, Terrain};
    let pool = ThreadPool::new(2);
    let mut world = World::new(WorldDef::default());
    let mut terrain = Terrain::new(1.0);
    terrain.fill(glam::IVec3::new(-12, -4, -12), glam::IVec3::new(12, 0, 12), Material::ROCK);
    world.set_terrain(terrain);
    let shapes = [
        Shape::cuboid(Vec3::new(0.4, 0.3, 0.5)).unwrap(),
        Shape::sphere(Vec3::ZERO, 0.4).unwrap(),
        Shape::capsule(Vec3::new(-0.4, 0.0, 0.0), Vec3::new(0.4, 0.0, 0.0), 0.25).unwrap(),
    ];
    let mut seed = 99u64;
    let mut r = move || lcg(&mut seed) * 0.5 + 0.5; // [0, 1)
    let mut live: Vec<BodyId> = Vec::new();
    let mut dead: Vec<BodyId> = Vec::new();
    let (mut steps, mut slept, mut refused) = (0, 0, 0);
    for op in 0..3000 {
        let pick =
            |r: &mut dyn FnMut() -> f32, ids: &[BodyId]| ids[((r() * ids.len() as f32) as usize).min(ids.len() - 1)];
        let at = Vec3::new(r() * 16.0 - 8.0, 1.0 + r() * 4.0, r() * 16.0 - 8.0);
        match (r() * 10.0) as u32 {
            0 | 1 => {
                let motion = [MotionType::Dynamic, MotionType::Dynamic, MotionType::Kinematic, MotionType::Static]
                    [(r() * 4.0) as usize % 4];
                let def = BodyDef { motion, transform: Isometry::from_translation(at), ..BodyDef::default() };
                let id = world.create_body(&def).unwrap();
                for _ in 0..1 + (r() * 2.0) as usize {
                    let shape = shapes[(r() * 3.0) as usize % 3].clone();
                    world.add_shape(id, shape, ShapeDef::default()).unwrap();
                }
                live.push(id);
            }
            2 if !live.is_empty() => {
                let id = pick(&mut r, &live);
                world.destroy_body(id).unwrap();
                live.retain(|&b| b != id);
                dead.push(id);
            }
            3 if !live.is_empty() => {
                let id = pick(&mut r, &live);
                world.set_transform(id, &Isometry::from_translation(at)).unwrap();
            }
            4 if !live.is_empty() => {
                let id = pick(&mut r, &live);
                let v = Vec3::new(r() - 0.5, r(), r() - 0.5) * 6.0;
                world.apply_impulse(id, v, at).unwrap();
                world.set_velocity(id, v, Vec3::ZERO).unwrap();
            }
            5 => {
                let c = glam::IVec3::new((r() * 20.0) as i32 - 10, -2, (r() * 20.0) as i32 - 10);
                let material = if r() < 0.5 { Material::AIR } else { Material::ROCK };
                world.terrain_mut().unwrap().fill(c, c + glam::IVec3::new(2, 2, 2), material);
                if r() < 0.5 {
                    world.regenerate_terrain(pool.jobs());
                }
            }
            6 if !dead.is_empty() => {
                let id = pick(&mut r, &dead);
                assert_eq!(world.set_velocity(id, Vec3::ONE, Vec3::ZERO), Err(BodyError::InvalidBody));
                assert_eq!(world.destroy_body(id), Err(BodyError::InvalidBody));
                refused += 1;
            }
            7 if op % 50 == 0 => world.set_sleep_enabled(r() < 0.8),
            _ => {
                for _ in 0..1 + (r() * 20.0) as usize {
                    world.step(1.0 / 60.0, pool.jobs()).unwrap();
                    steps += 1;
                }
                slept = slept.max(live.len() - world.awake_count().min(live.len()));
            }
        }
        world.validate();
        for &id in &live {
            let p = world.transform(id).unwrap().translation;
            assert!(p.is_finite(), "{id:?} at {p} after op {op}");
        }
    }
    println!(
        "{} live, {} destroyed, {steps} steps, up to {slept} asleep at once, {refused} stale calls refused",
        live.len(),
        dead.len()
    );
    assert!(steps > 500 && slept > 10 && refused > 50 && live.len() > 20);
}

/// Shapes whose mass would overflow are refused; finite but absurd pushes (1e38 N on
/// a light body, opposite 1e38 N m torques mixed by a rotated inertia tensor, repeated
/// 1e38 N s impulses, which saturate at once, before any step) saturate the body's speed
/// at `MAX_LINEAR_SPEED` and its spin at `MAX_ROTATION` per substep: the state stays
/// finite and every invariant holds. Found by `samples-c/tests/fuzz_api.c`, where
/// such a body turned NaN in the next step.
#[test]
fn absurd_forces_saturate_and_keep_the_state_finite() {
    let pool = inline();
    let mut world = World::new(WorldDef::default());
    ground(&mut world);
    let turned = Isometry::new(Vec3::new(0.0, 3.0, 0.0), Quat::from_euler(glam::EulerRot::XYZ, 0.3, 0.7, 1.1));
    let id = world.create_body(&BodyDef { transform: turned, ..BodyDef::default() }).unwrap();
    world.add_shape(id, Shape::cuboid(Vec3::new(0.05, 0.1, 0.2)).unwrap(), ShapeDef::default()).unwrap();
    // Shapes whose mass or inertia would overflow are refused, and the body is kept.
    let huge = Shape::cuboid(Vec3::splat(crate::shapes::MAX_EXTENT)).unwrap();
    let dense = ShapeDef { density: 1e20, ..ShapeDef::default() };
    assert_eq!(world.add_shape(id, huge, dense), Err(BodyError::InvalidArgument));
    let far = ShapeDef { pose: Isometry::from_translation(Vec3::splat(1e30)), ..ShapeDef::default() };
    assert_eq!(world.add_shape(id, Shape::sphere(Vec3::ZERO, 1.0).unwrap(), far), Err(BodyError::InvalidArgument));
    assert_eq!(world.bodies().shapes(id).unwrap().len(), 1);
    // A shape whose mass is too small to invert (a subnormal density) is refused too.
    let wisp = ShapeDef { density: 1e-41, ..ShapeDef::default() }; // 1.1e-39 kg, inertia 4e-39
    let speck = world.create_body(&BodyDef { transform: turned, ..BodyDef::default() }).unwrap();
    assert_eq!(world.add_shape(speck, Shape::sphere(Vec3::ZERO, 3.0).unwrap(), wisp), Err(BodyError::InvalidArgument));
    world.validate();
    // A feather: 1e38 N s on it overflows a float at once.
    let light = world.create_body(&BodyDef { transform: turned, ..BodyDef::default() }).unwrap();
    let feather = ShapeDef { density: 1e-3, ..ShapeDef::default() };
    world.add_shape(light, Shape::cuboid(Vec3::splat(0.05)).unwrap(), feather).unwrap();
    world.apply_impulse(light, Vec3::new(-1e38, 1.0, -1e38), Vec3::new(0.0, 3.05, 0.02)).unwrap();
    world.validate();
    let (v, w) = world.velocity(light).unwrap();
    assert!(v.length() <= MAX_LINEAR_SPEED * 1.001 && w.length() <= MAX_LINEAR_SPEED * 1.001, "v {v}, w {w}");
    for _ in 0..3 {
        world.apply_force(id, Vec3::new(1e38, -1e38, 1e38)).unwrap();
        world.apply_force(id, Vec3::new(1e38, -1e38, 1e38)).unwrap();
        world.apply_torque(id, Vec3::new(1e38, -1e38, 3e38)).unwrap();
        world.apply_impulse(id, Vec3::splat(1e38), Vec3::new(0.1, 3.0, 0.0)).unwrap();
        world.validate(); // between steps too: the impulse itself saturates
        world.step(1.0 / 60.0, pool.jobs()).unwrap();
        world.validate();
        let (v, w) = world.velocity(id).unwrap();
        assert!(v.is_finite() && w.is_finite(), "v {v}, w {w}");
        assert!(v.length() <= MAX_LINEAR_SPEED * 1.001, "v {v}");
        assert!(w.length() <= MAX_ROTATION * 240.0 * 1.001, "w {w}");
        assert!(world.transform(id).unwrap().translation.is_finite());
    }
}

/// Shapes as large as allowed ([`crate::shapes::MAX_EXTENT`]), touching small ones far
/// from their centres, keep every state finite. (The C API fuzzer found a ball resting
/// on a sphere of radius 1e30: the contact's anchors overflowed and its velocity went
/// NaN. Such shapes are refused now; this is the largest case left.)
#[test]
fn the_largest_shapes_in_contact_keep_the_state_finite() {
    use crate::shapes::MAX_EXTENT;
    let pool = inline();
    let mut world = World::new(WorldDef::default());
    let fixed = |world: &mut World, at: Vec3, shape: Shape| {
        let def =
            BodyDef { motion: MotionType::Static, transform: Isometry::from_translation(at), ..BodyDef::default() };
        let id = world.create_body(&def).unwrap();
        world.add_shape(id, shape, ShapeDef::default()).unwrap();
    };
    let dynamic = |world: &mut World, at: Vec3, shape: Shape| {
        let id =
            world.create_body(&BodyDef { transform: Isometry::from_translation(at), ..BodyDef::default() }).unwrap();
        world.add_shape(id, shape, ShapeDef::default()).unwrap();
        id
    };
    // A planet of the largest radius with a ball on top, 3e5 m out.
    let summit = Vec3::new(0.0, 0.0, 3.0 * MAX_EXTENT);
    fixed(&mut world, summit - Vec3::Y * MAX_EXTENT, Shape::sphere(Vec3::ZERO, MAX_EXTENT).unwrap());
    let ball = dynamic(&mut world, summit + Vec3::Y, Shape::sphere(Vec3::ZERO, 0.906).unwrap());
    // The largest ground, a dynamic slab as wide (4e15 kg) on it, a ball on its corner.
    fixed(&mut world, -Vec3::Y * MAX_EXTENT, Shape::cuboid(Vec3::splat(MAX_EXTENT)).unwrap());
    let half = Vec3::new(MAX_EXTENT, 10.0, MAX_EXTENT);
    let slab = dynamic(&mut world, Vec3::Y * 10.5, Shape::cuboid(half).unwrap());
    let corner = Vec3::new(0.9 * MAX_EXTENT, 21.0, 0.9 * MAX_EXTENT);
    let pebble = dynamic(&mut world, corner, Shape::sphere(Vec3::ZERO, 0.5).unwrap());
    for _ in 0..240 {
        world.step(1.0 / 60.0, pool.jobs()).unwrap();
        world.validate();
    }
    // f32 spacing at 3e5 m is 3 cm: positions hold within a few spacings.
    let y = |id| world.transform(id).unwrap().translation.y;
    assert!((y(ball) - 0.906).abs() < 0.05, "ball at {}", y(ball));
    assert!((y(slab) - 10.0).abs() < 0.05, "slab at {}", y(slab));
    assert!((y(pebble) - 20.5).abs() < 0.05, "pebble at {}", y(pebble));
}

/// Bad input to the world gets a clear error and changes nothing: invalid world
/// definitions, NaN or non-unit transforms, negative rolling resistance, stale handles.
#[test]
fn world_bad_input_is_refused_without_side_effects() {
    for def in [
        WorldDef { substeps: 0, ..WorldDef::default() },
        WorldDef { substeps: 65, ..WorldDef::default() },
        WorldDef { gravity: Vec3::NAN, ..WorldDef::default() },
        WorldDef { contact_hertz: f32::INFINITY, ..WorldDef::default() },
        WorldDef { time_to_sleep: -1.0, ..WorldDef::default() },
    ] {
        assert_eq!(World::try_new(def).err(), Some(BodyError::InvalidArgument), "{def:?}");
    }
    let pool = inline();
    let mut world = World::try_new(WorldDef::default()).unwrap();
    ground(&mut world);
    let id = cube_at(&mut world, Vec3::new(0.0, 0.5, 0.0), 0.5);
    for _ in 0..90 {
        world.step(1.0 / 60.0, pool.jobs()).unwrap();
    }
    assert!(!world.is_awake(id).unwrap());
    let before = world.transform(id).unwrap();
    for bad in [
        Isometry::from_translation(Vec3::NAN),
        Isometry::from_translation(Vec3::new(f32::INFINITY, 0.0, 0.0)),
        Isometry::new(Vec3::ZERO, Quat::from_xyzw(0.0, 0.0, 0.0, 3.0)),
    ] {
        assert_eq!(world.set_transform(id, &bad), Err(BodyError::InvalidArgument));
    }
    assert_eq!(world.transform(id).unwrap(), before);
    assert!(!world.is_awake(id).unwrap(), "a refused call does not wake the body");
    let rolling = ShapeDef { rolling_resistance: -0.1, ..ShapeDef::default() };
    assert_eq!(world.add_shape(id, Shape::sphere(Vec3::ZERO, 0.1).unwrap(), rolling), Err(BodyError::InvalidArgument));
    assert_eq!(world.bodies().shapes(id).unwrap().len(), 1);
    assert!(!world.is_awake(id).unwrap(), "a refused shape does not wake the body");
    let k = world.create_body(&BodyDef { motion: MotionType::Kinematic, ..BodyDef::default() }).unwrap();
    for (body, target, dt) in [
        (id, Isometry::IDENTITY, 1.0 / 60.0),
        (k, Isometry::from_translation(Vec3::NAN), 1.0 / 60.0),
        (k, Isometry::IDENTITY, 0.0),
        (k, Isometry::IDENTITY, f32::NAN),
    ] {
        assert_eq!(world.set_target_transform(body, &target, dt), Err(BodyError::InvalidArgument));
    }
    // Speeds past MAX_LINEAR_SPEED (m/s or rad/s), given or implied by a target.
    let fast = Vec3::new(2.0 * MAX_LINEAR_SPEED, 0.0, 0.0);
    assert_eq!(world.set_velocity(id, fast, Vec3::ZERO), Err(BodyError::InvalidArgument));
    assert_eq!(world.set_velocity(id, Vec3::ZERO, fast), Err(BodyError::InvalidArgument));
    let far = Isometry::from_translation(Vec3::X);
    assert_eq!(world.set_target_transform(k, &far, 1e-30), Err(BodyError::InvalidArgument));
    for def in [
        BodyDef { linear_velocity: fast, ..BodyDef::default() },
        BodyDef { angular_velocity: fast, ..BodyDef::default() },
    ] {
        assert_eq!(world.create_body(&def), Err(BodyError::InvalidArgument));
    }
    assert!(!world.is_awake(id).unwrap());
    // Stale handles.
    world.destroy_body(id).unwrap();
    assert_eq!(world.set_transform(id, &Isometry::IDENTITY), Err(BodyError::InvalidBody));
    assert_eq!(world.is_awake(id), Err(BodyError::InvalidBody));
    assert_eq!(world.destroy_body(id), Err(BodyError::InvalidBody));
    assert_eq!(
        world.add_shape(id, Shape::sphere(Vec3::ZERO, 0.1).unwrap(), ShapeDef::default()),
        Err(BodyError::InvalidBody)
    );
    world.step(1.0 / 60.0, pool.jobs()).unwrap();
}

/// A kinematic lift driven by target transforms (rising and turning) arrives at each
/// step's target and carries a box standing on it.
#[test]
fn kinematic_target_transforms_are_reached_and_carry_bodies() {
    let pool = inline();
    let mut world = World::new(WorldDef::default());
    let lift = world.create_body(&BodyDef { motion: MotionType::Kinematic, ..BodyDef::default() }).unwrap();
    world.add_shape(lift, Shape::cuboid(Vec3::new(2.0, 0.1, 2.0)).unwrap(), ShapeDef::default()).unwrap();
    let cargo = cube_at(&mut world, Vec3::new(0.0, 0.6, 0.0), 0.5);
    let dt = 1.0 / 60.0;
    for _ in 0..30 {
        world.step(dt, pool.jobs()).unwrap();
    }
    let rest = world.transform(cargo).unwrap().translation.y;
    assert!((rest - 0.6).abs() < 0.02, "{rest}");
    for n in 1..=120 {
        let t = n as f32 * dt;
        let target = Isometry::new(Vec3::new(0.0, 0.5 * t, 0.0), Quat::from_rotation_y(0.4 * t));
        world.set_target_transform(lift, &target, dt).unwrap();
        world.step(dt, pool.jobs()).unwrap();
        let at = world.transform(lift).unwrap();
        assert!(at.translation.abs_diff_eq(target.translation, 1e-4), "step {n}: {at:?}");
        assert!(at.rotation.angle_between(target.rotation) < 1e-3, "step {n}: {at:?}");
    }
    // The lift rose 1 m; the box rode it.
    let y = world.transform(cargo).unwrap().translation.y;
    assert!((y - (rest + 1.0)).abs() < 0.03, "{y}");
    assert!(world.is_awake(cargo).unwrap());
}

#[derive(Default)]
struct DrawCounts {
    shapes: Vec<(BodyId, u32)>,
    aabbs: usize,
    contacts: usize,
    nodes: usize,
    leaves: usize,
    max_depth: u32,
}

impl DebugDraw for DrawCounts {
    fn shape(&mut self, body: BodyId, _: u32, _: &Shape, _: &Isometry, color: u32) {
        self.shapes.push((body, color));
    }
    fn aabb(&mut self, aabb: &crate::math::Aabb, _: u32) {
        assert!(aabb.is_valid());
        self.aabbs += 1;
    }
    fn contact(&mut self, c: &ContactPointInfo) {
        assert!(c.normal.is_normalized() && c.point.is_finite());
        self.contacts += 1;
    }
    fn tree_node(&mut self, _: &crate::math::Aabb, depth: u32, is_leaf: bool) {
        self.nodes += 1;
        self.leaves += is_leaf as usize;
        self.max_depth = self.max_depth.max(depth);
    }
}

/// Debug drawing reports every shape (coloured by state), every fat box, every
/// solved contact point and every tree node, and only what the flags ask for.
#[test]
fn debug_draw_reports_shapes_boxes_contacts_and_tree_nodes() {
    use super::debug::colors;
    let pool = inline();
    let (mut world, ids) = scenes::pyramid(4).build();
    let dt = 1.0 / 60.0;
    for _ in 0..10 {
        world.step(dt, pool.jobs()).unwrap();
    }
    let mut counts = DrawCounts::default();
    world.debug_draw(DebugDrawFlags::ALL, &mut counts);
    let shapes: usize = ids.iter().map(|&id| world.bodies().shapes(id).unwrap().len()).sum();
    assert_eq!(counts.shapes.len(), shapes);
    assert_eq!(counts.aabbs, shapes);
    let mut points = 0;
    world.for_each_contact(|_| points += 1);
    assert!(points > 0 && counts.contacts == points);
    assert_eq!(counts.leaves, shapes);
    assert_eq!(counts.nodes, 2 * shapes - 1);
    assert_eq!(counts.max_depth, world.broadphase().tree().height());
    let colour_of = |c: &DrawCounts, id: BodyId| c.shapes.iter().find(|s| s.0 == id).unwrap().1;
    assert_eq!(colour_of(&counts, ids[0]), colors::STATIC, "the scene's first body is its ground");
    assert_eq!(colour_of(&counts, ids[1]), colors::AWAKE);
    for _ in 0..120 {
        world.step(dt, pool.jobs()).unwrap();
    }
    let mut asleep = DrawCounts::default();
    world.debug_draw(DebugDrawFlags { shapes: true, ..DebugDrawFlags::default() }, &mut asleep);
    assert_eq!(colour_of(&asleep, ids[1]), colors::SLEEPING);
    assert_eq!((asleep.aabbs, asleep.contacts, asleep.nodes), (0, 0, 0));
}

/// The narrowphase sets each constraint's awake rows; a body destroyed between the
/// narrowphase and the prepare moves the last awake body into its row, and the
/// prepare sets every row again: the step ends in the same bits as one where the
/// body was destroyed before it began (with rows kept from the narrowphase, the top
/// box's row would lie past the awake set).
#[test]
fn rows_changed_between_stages_are_set_again() {
    let pool = inline();
    let build = || {
        let mut world = World::new(WorldDef { enable_sleep: false, ..WorldDef::default() });
        // First, so it holds awake row 0; far from everything else.
        let far = cube_at(&mut world, Vec3::new(40.0, 20.0, 40.0), 0.5);
        ground(&mut world);
        let stack: Vec<BodyId> =
            (0..3).map(|i| cube_at(&mut world, Vec3::new(0.0, 0.5 + i as f32, 0.0), 0.5)).collect();
        for _ in 0..30 {
            world.step(1.0 / 60.0, pool.jobs()).unwrap();
        }
        (world, far, stack)
    };
    let (mut before, far, stack) = build();
    before.destroy_body(far).unwrap();
    before.step(1.0 / 60.0, pool.jobs()).unwrap();

    let (mut between, far, _) = build();
    for stage in StepStage::ALL {
        if stage == StepStage::Prepare {
            between.destroy_body(far).unwrap();
        }
        between.step_stage(stage, 1.0 / 60.0, pool.jobs()).unwrap();
    }
    assert_eq!(state_hash(&between, &stack), state_hash(&before, &stack));
    assert_eq!(between.counters().constraints, 3);
    between.validate();
}

/// A body moved between the broadphase and the narrowphase stages is tested where it
/// is now: the narrowphase's first test takes the broadphase's box of a shape only
/// while the shape has not moved since. A cube 8.5 cm above the ground (its pair in
/// the broadphase, as the fat boxes overlap, but too far apart to touch, even from
/// the ground's fat box) set down on it between the stages touches it in that same
/// step.
#[test]
fn a_body_moved_between_stages_is_tested_where_it_is() {
    let pool = inline();
    let mut world = World::new(WorldDef::default());
    ground(&mut world);
    let cube = cube_at(&mut world, Vec3::new(0.0, 0.585, 0.0), 0.5);
    world.step_stage(StepStage::Broadphase, 1.0 / 60.0, pool.jobs()).unwrap();
    world.set_transform(cube, &Isometry::from_translation(Vec3::new(0.0, 0.5, 0.0))).unwrap();
    for stage in &StepStage::ALL[1..] {
        world.step_stage(*stage, 1.0 / 60.0, pool.jobs()).unwrap();
    }
    assert_eq!(world.counters().constraints, 1, "the cube set down touches the ground");
    assert!(world.transform(cube).unwrap().translation.y > 0.49, "and stands on it");
}

/// Every stage of a step is a frame-graph pass. A world stepped by a compiled
/// graph on the pool ends in the same bits as one stepped directly; the graph's profile
/// times each physics pass; stages out of order, or a bad `dt`, are refused and change
/// nothing.
#[test]
fn step_stages_run_as_frame_graph_passes_with_the_same_bits() {
    use crate::frame::{FrameGraph, PassTiming};
    let pool = ThreadPool::new(1);
    let scene = scenes::rain(256);
    let (mut direct, ids) = scene.build();
    for _ in 0..120 {
        direct.step(1.0 / 60.0, pool.jobs()).unwrap();
    }
    let (world, graph_ids) = scene.build();
    let mut graph = FrameGraph::new();
    let res = graph.resource("world", world);
    let passes = World::add_step_passes(&mut graph, res);
    let mut compiled = graph.compile().unwrap();
    for _ in 0..120 {
        compiled.execute(&pool, 1.0 / 60.0).unwrap();
    }
    let stepped = compiled.resource(&res).unwrap();
    assert_eq!(graph_ids, ids);
    assert_eq!(state_hash(stepped, &graph_ids), state_hash(&direct, &ids));
    assert_eq!(stepped.counters(), direct.counters());
    let profile = compiled.profile();
    for (stage, pass) in StepStage::ALL.iter().zip(passes) {
        assert_eq!(compiled.pass_name(pass), stage.name());
        assert_ne!(profile.passes[pass.index()].worker, PassTiming::NOT_RUN, "{} ran", stage.name());
    }
    assert!(profile.passes[passes[1].index()].duration_ns > 0, "the narrowphase took time");

    let world = compiled.resource_mut(&res).unwrap();
    let before = state_hash(world, &ids);
    assert_eq!(world.step_stage(StepStage::Solve, 1.0 / 60.0, pool.jobs()), Err(BodyError::OutOfOrder));
    assert_eq!(world.step_stage(StepStage::Broadphase, f32::NAN, pool.jobs()), Err(BodyError::InvalidArgument));
    assert_eq!(world.step_stage(StepStage::Narrowphase, 1.0 / 60.0, pool.jobs()), Err(BodyError::OutOfOrder));
    assert_eq!(state_hash(world, &ids), before, "refused stages change nothing");
    for stage in StepStage::ALL {
        world.step_stage(stage, 1.0 / 60.0, pool.jobs()).unwrap();
    }
    direct.step(1.0 / 60.0, pool.jobs()).unwrap();
    assert_eq!(state_hash(world, &ids), state_hash(&direct, &ids), "stage by stage equals a step");
}

/// The solver's bundles (`wide.rs`) give the same states as the scalar solver, step
/// after step: boxes in a pyramid (four-point manifolds), and rain on terrain
/// (spheres with rolling resistance share bundles with cubes, terrain manifolds
/// bend their normals). Compared with `==`: a bundle may turn a zero's sign. Bundles of four,
/// of eight (AVX) and of sixteen (AVX-512F, where the CPU has it) give the same bits.
#[test]
fn the_wide_solver_steps_the_same_states_as_the_scalar_solver() {
    let states = |world: &World, ids: &[BodyId]| -> Vec<f32> {
        ids.iter()
            .flat_map(|id| {
                let xf = world.transform(*id).unwrap();
                let (v, w) = world.velocity(*id).unwrap();
                [xf.translation.to_array(), v.to_array(), w.to_array(), xf.rotation.to_array()[..3].try_into().unwrap()]
                    .concat()
                    .into_iter()
                    .chain([xf.rotation.w])
            })
            .collect()
    };
    let pool = ThreadPool::new(1);
    // Every CI machine has AVX; elsewhere four lanes stand alone. Sixteen where the CPU
    // has AVX-512F (this project's CI and device machines do).
    let mut widths = vec![1, 4];
    widths.extend(super::simd::lanes::eight_available().then_some(8));
    widths.extend(super::simd::lanes::sixteen_available().then_some(16));
    // The joint grid's ball joints ride the lanes too (`simd/ball.rs`).
    for (scene, steps) in [(scenes::pyramid(20), 240), (scenes::rain(600), 240), (scenes::joint_grid(24), 120)] {
        let run = |lanes: usize| {
            let (mut world, ids) = scene.build();
            world.set_solver_lanes(lanes);
            for _ in 0..steps {
                world.step(1.0 / 60.0, pool.jobs()).unwrap();
            }
            (states(&world, &ids), world.counters())
        };
        let runs: Vec<_> = widths.iter().map(|&lanes| run(lanes)).collect();
        let (scalar, sc) = &runs[0];
        for ((wide, wc), lanes) in runs[1..].iter().zip(&widths[1..]) {
            assert_eq!(wc, sc, "{}, {lanes} lanes", scene.name);
            let differ = wide.iter().zip(scalar).filter(|(a, b)| a != b).count();
            assert_eq!(differ, 0, "{}, {lanes} lanes: {differ} of {} floats differ", scene.name, wide.len());
        }
        let (four, _) = &runs[1];
        for ((wider, _), lanes) in runs[2..].iter().zip(&widths[2..]) {
            let differ = four.iter().zip(wider).filter(|(a, b)| a.to_bits() != b.to_bits()).count();
            assert_eq!(
                differ,
                0,
                "{}: 4 and {lanes} lanes differ in {differ} of {} floats' bits",
                scene.name,
                four.len()
            );
        }
    }
}

/// A world without terrain items keeps no room for terrain triangles in its
/// narrowphase jobs (at 46 KB a job, `large_pyramid`'s two lists of 468 jobs made
/// 43 MB that nothing used, and faulted them in over its first two steps); once a
/// step has terrain items, every job that runs holds the room, so that the items
/// shifting between jobs do not allocate later.
#[test]
fn narrowphase_jobs_hold_terrain_room_only_with_terrain_items() {
    let pool = inline();
    let (mut world, _) = scenes::pyramid(12).build();
    for _ in 0..3 {
        world.step(1.0 / 60.0, pool.jobs()).unwrap();
    }
    let (rooms, ran) = world.narrow_terrain_rooms();
    assert!(world.counters().constraints > 0 && ran > 1, "the boxes touch, in {ran} jobs");
    assert!(rooms.iter().all(|&r| r == 0), "terrain room without terrain: {rooms:?}");

    let (mut world, _) = scenes::rain_over("rain", 32, 64).build();
    let mut steps = 0;
    while world.counters().reused_terrain == 0 || steps < 2 {
        world.step(1.0 / 60.0, pool.jobs()).unwrap();
        steps += 1;
        assert!(steps < 600, "the rain reaches the terrain");
    }
    let (rooms, ran) = world.narrow_terrain_rooms();
    assert!(ran > 0);
    assert!(rooms[..ran].iter().all(|&r| r >= narrow::TERRAIN_ROOM), "jobs that ran: {:?}", &rooms[..ran]);
}

/// A level loaded body by body: the step rebuilds the broadphase tree with binned
/// SAH once (a quarter of its proxies were created since the last build), and a few
/// bodies added later are inserted without a rebuild.
#[test]
fn the_step_rebuilds_a_bulk_loaded_tree_once() {
    let mut world = World::new(WorldDef::default());
    let mut state = 5u64;
    for i in 0..1500 {
        // Static cubes along a line, then scattered: an insertion order that leaves
        // a poor tree.
        let p = if i < 750 {
            Vec3::new(i as f32 * 0.7, 0.0, 0.0)
        } else {
            Vec3::new(lcg(&mut state) * 500.0, lcg(&mut state) * 20.0, lcg(&mut state) * 500.0)
        };
        let def =
            BodyDef { motion: MotionType::Static, transform: Isometry::from_translation(p), ..BodyDef::default() };
        let id = world.create_body(&def).unwrap();
        world.add_shape(id, Shape::cuboid(Vec3::splat(0.3)).unwrap(), ShapeDef::default()).unwrap();
    }
    let pool = ThreadPool::new(1);
    let loaded = world.broadphase().tree().quality();
    assert_eq!(world.broadphase().tree().inserted, 1500);
    world.step(1.0 / 60.0, pool.jobs()).unwrap();
    let tree = world.broadphase().tree();
    assert_eq!(tree.inserted, 0, "rebuilt at the step");
    assert!(tree.quality().area_ratio < 0.9 * loaded.area_ratio, "{loaded:?} -> {:?}", tree.quality());
    tree.validate();
    let ids: Vec<BodyId> = (0..100).map(|i| cube_at(&mut world, Vec3::new(i as f32, 5.0, 3.0), 0.3)).collect();
    world.step(1.0 / 60.0, pool.jobs()).unwrap();
    assert_eq!(world.broadphase().tree().inserted, 100, "short of a quarter: inserted, not rebuilt");
    world.broadphase().tree().validate();
    assert!(ids.iter().all(|&id| world.transform(id).is_ok()));
}
