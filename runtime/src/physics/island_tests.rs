//! Tests of the persistent islands: contacts and joints merge them, removals are
//! counted, and only an island with a body ready to sleep is split; an island that
//! lost no link is exactly one component of the touching contacts and joints.

use glam::Vec3;

use super::contact_solver::NONE;
use super::tests::{cube_at, ground, inline};
use super::*;
use crate::collide::tests::lcg;
use crate::jobs::ThreadPool;
use crate::math::Isometry;
use crate::shapes::Shape;

/// The components of the awake dynamic bodies linked by this step's touching
/// contacts and the joints between them, as a union-find root per body slot.
fn components(world: &World) -> Vec<u32> {
    let bodies = world.bodies();
    let slots = bodies.live_ids().map(|id| id.index + 1).max().unwrap_or(0) as usize;
    let mut parent: Vec<u32> = (0..slots as u32).collect();
    fn find(p: &mut [u32], mut x: u32) -> u32 {
        while p[x as usize] != x {
            x = p[x as usize];
        }
        x
    }
    let awake_dynamic = |slot: u32| {
        slot != NONE
            && matches!(bodies.place_of_slot(slot), Some((SetKind::Awake, row)) if bodies.awake.inv_mass[row] > 0.0)
    };
    let contacts = world.previous.iter().filter(|c| c.count > 0).map(|c| (c.body_a, c.body_b));
    let joints = world.joints.live().map(|d| (d.body_a.index, d.body_b.index));
    for (a, b) in contacts.chain(joints) {
        if awake_dynamic(a) && awake_dynamic(b) {
            let (x, y) = (find(&mut parent, a), find(&mut parent, b));
            parent[x.max(y) as usize] = x.min(y);
        }
    }
    (0..slots as u32).map(|s| find(&mut parent, s)).collect()
}

/// After a step: every invariant, each component inside one island, and each
/// island that counted no removal exactly one component. Returns the islands
/// that counted one.
fn check_islands(world: &World) -> usize {
    world.validate();
    let roots = components(world);
    let islands = &world.islands;
    let mut members = Vec::new();
    let mut stale = 0;
    for i in islands.live_islands() {
        members.clear();
        islands.members(i, &mut members);
        if islands.needs_split(i) {
            stale += 1;
            continue;
        }
        let root = roots[members[0] as usize];
        assert!(members.iter().all(|&s| roots[s as usize] == root), "island {i} without removals is not connected");
        let component = roots.iter().filter(|&&r| r == root).count();
        assert_eq!(component, members.len(), "island {i} is part of a larger component");
    }
    stale
}

/// Two boxes side by side are one island; pushed apart they stay one (nothing is
/// split while they slide), and when both are ready to sleep the island is split
/// and they fall asleep as two groups in the same step.
#[test]
fn an_island_stays_whole_until_a_body_is_ready_to_sleep_then_splits() {
    let pool = inline();
    let mut world = World::new(WorldDef::default());
    ground(&mut world);
    let a = cube_at(&mut world, Vec3::new(-0.5, 0.5, 0.0), 0.5);
    let b = cube_at(&mut world, Vec3::new(0.5, 0.5, 0.0), 0.5);
    assert_ne!(world.islands.island_of(a.index), world.islands.island_of(b.index), "apart before they touch");
    world.step(1.0 / 60.0, pool.jobs()).unwrap();
    let island = world.islands.island_of(a.index);
    assert_eq!(island, world.islands.island_of(b.index), "one island once they touch");
    assert!(!world.islands.needs_split(island));
    world.set_velocity(a, Vec3::new(-3.0, 0.0, 0.0), Vec3::ZERO).unwrap();
    world.set_velocity(b, Vec3::new(3.0, 0.0, 0.0), Vec3::ZERO).unwrap();
    let mut split_at = None;
    for step in 0..600 {
        world.step(1.0 / 60.0, pool.jobs()).unwrap();
        check_islands(&world);
        let c = world.counters();
        if world.is_awake(a).unwrap() {
            assert_eq!(world.islands.island_of(a.index), world.islands.island_of(b.index), "step {step}");
            assert_eq!(c.island_splits, 0, "step {step}: split before a body was ready to sleep");
            assert!(world.is_awake(b).unwrap());
        } else {
            assert!(!world.is_awake(b).unwrap(), "step {step}: the two fall asleep together");
            assert_eq!(c.island_splits, 1, "step {step}: the island split as they fell asleep");
            assert_eq!(c.sleeping_groups, 2, "step {step}: as two groups");
            assert_eq!((c.awake_islands, c.awake_bodies), (0, 0));
            split_at = Some(step);
            break;
        }
    }
    let gap = world.transform(b).unwrap().translation.x - world.transform(a).unwrap().translation.x;
    assert!(gap > 1.5, "they slid apart: {gap} m between centres");
    assert!(split_at.is_some(), "they fell asleep");
    // A touch wakes only the group touched.
    world.set_velocity(a, Vec3::new(0.0, 2.0, 0.0), Vec3::ZERO).unwrap();
    assert!(!world.is_awake(b).unwrap());
    assert_eq!(world.counters().sleeping_groups, 2);
}

/// A joint merges its bodies' islands at once; destroying it counts a removal and
/// the two sleep apart.
#[test]
fn joints_merge_islands_and_their_removal_is_counted() {
    let pool = inline();
    let mut world = World::new(WorldDef::default());
    ground(&mut world);
    let a = cube_at(&mut world, Vec3::new(-2.0, 0.5, 0.0), 0.5);
    let b = cube_at(&mut world, Vec3::new(2.0, 0.5, 0.0), 0.5);
    let kind = JointType::Distance(DistanceJoint { length: 4.0, ..DistanceJoint::default() });
    let joint = world.create_joint(&JointDef::new(a, b, kind)).unwrap();
    let island = world.islands.island_of(a.index);
    assert_eq!(island, world.islands.island_of(b.index));
    assert!(!world.islands.needs_split(island));
    for _ in 0..30 {
        world.step(1.0 / 60.0, pool.jobs()).unwrap();
        check_islands(&world);
    }
    world.destroy_joint(joint).unwrap();
    let island = world.islands.island_of(a.index);
    assert_eq!(island, world.islands.island_of(b.index), "still one island");
    assert!(world.islands.needs_split(island), "with a removal counted");
    for _ in 0..120 {
        world.step(1.0 / 60.0, pool.jobs()).unwrap();
        check_islands(&world);
    }
    assert_eq!(world.counters().sleeping_groups, 2, "asleep apart");
}

/// A random scene under random pushes, joints made and broken, bodies destroyed:
/// after every step each island that lost no link is exactly one component of
/// the touching contacts and joints; islands do merge, splits do happen, groups
/// sleep; and the same islands and bits come out for 1 and 3 workers.
#[test]
fn islands_match_the_touching_components_under_random_edits() {
    let run = |threads: usize| {
        let pool = ThreadPool::new(threads);
        let mut world = World::new(WorldDef::default());
        ground(&mut world);
        let wall = |world: &mut World, at: Vec3, half: Vec3| {
            let def =
                BodyDef { motion: MotionType::Static, transform: Isometry::from_translation(at), ..Default::default() };
            let id = world.create_body(&def).unwrap();
            world.add_shape(id, Shape::cuboid(half).unwrap(), ShapeDef::default()).unwrap();
        };
        for (at, half) in [
            (Vec3::new(-6.0, 2.0, 0.0), Vec3::new(0.5, 2.0, 6.0)),
            (Vec3::new(6.0, 2.0, 0.0), Vec3::new(0.5, 2.0, 6.0)),
            (Vec3::new(0.0, 2.0, -6.0), Vec3::new(6.0, 2.0, 0.5)),
            (Vec3::new(0.0, 2.0, 6.0), Vec3::new(6.0, 2.0, 0.5)),
        ] {
            wall(&mut world, at, half);
        }
        let mut seed = 7u64;
        let mut r = move || lcg(&mut seed) * 0.5 + 0.5;
        let shapes = [
            Shape::cuboid(Vec3::new(0.4, 0.3, 0.5)).unwrap(),
            Shape::sphere(Vec3::ZERO, 0.4).unwrap(),
            Shape::capsule(Vec3::new(-0.4, 0.0, 0.0), Vec3::new(0.4, 0.0, 0.0), 0.25).unwrap(),
        ];
        let mut ids = Vec::new();
        for k in 0..150 {
            let at = Vec3::new(r() * 9.0 - 4.5, 1.0 + (k / 10) as f32 * 0.9, r() * 9.0 - 4.5);
            let def = BodyDef { transform: Isometry::from_translation(at), ..Default::default() };
            let id = world.create_body(&def).unwrap();
            world.add_shape(id, shapes[k % 3].clone(), ShapeDef::default()).unwrap();
            ids.push(id);
        }
        let (mut joints, mut stale_steps, mut splits, mut merged, mut slept) = (Vec::new(), 0, 0, 0, 0);
        for step in 0..900 {
            let pick = |r: &mut dyn FnMut() -> f32, n: usize| ((r() * n as f32) as usize).min(n - 1);
            if step % 40 == 20 {
                let id = ids[pick(&mut r, ids.len())];
                world
                    .apply_impulse(
                        id,
                        Vec3::new(r() - 0.5, 1.0, r() - 0.5) * 8.0,
                        world.transform(id).unwrap().translation,
                    )
                    .unwrap();
            }
            if step % 60 == 10 && step < 600 {
                let (a, b) = (ids[pick(&mut r, ids.len())], ids[pick(&mut r, ids.len())]);
                let kind = JointType::Distance(DistanceJoint { length: 1.5, ..DistanceJoint::default() });
                if let Ok(j) = world.create_joint(&JointDef::new(a, b, kind)) {
                    joints.push(j);
                }
            }
            if step % 90 == 45 && !joints.is_empty() {
                let j = joints.swap_remove(pick(&mut r, joints.len()));
                world.destroy_joint(j).unwrap();
            }
            if step % 150 == 75 {
                let id = ids.swap_remove(pick(&mut r, ids.len()));
                joints.retain(|&j| {
                    world.joint_is_valid(j) && world.joint(j).is_ok_and(|d| d.body_a != id && d.body_b != id)
                });
                world.destroy_body(id).unwrap();
            }
            world.step(1.0 / 60.0, pool.jobs()).unwrap();
            let stale = check_islands(&world);
            stale_steps += (stale > 0) as usize;
            let c = world.counters();
            splits += c.island_splits as usize;
            merged = merged.max(world.awake_count().saturating_sub(c.awake_islands as usize));
            slept = slept.max(c.sleeping_groups as usize);
        }
        let islands: Vec<u32> = ids.iter().map(|id| world.islands.island_of(id.index)).collect();
        (world.state_hash(&ids), islands, stale_steps, splits, merged, slept)
    };
    let one = run(0);
    let (_, _, stale_steps, splits, merged, slept) = one.clone();
    println!("{stale_steps} steps with islands awaiting a split, {splits} splits, up to {merged} bodies merged, up to {slept} groups");
    assert!(stale_steps > 100 && splits > 5 && merged > 50 && slept >= 3);
    assert!(one == run(3), "the same islands and bits for 1 and 3 workers");
}

/// A body hanging by a joint from a moving kinematic body never sleeps; once the
/// kinematic body stops, it does, and the kinematic body never joins an island.
#[test]
fn a_joint_to_a_moving_kinematic_body_keeps_its_island_awake() {
    let pool = inline();
    let mut world = World::new(WorldDef::default());
    let def = BodyDef {
        motion: MotionType::Kinematic,
        transform: Isometry::from_translation(Vec3::new(0.0, 5.0, 0.0)),
        linear_velocity: Vec3::new(0.02, 0.0, 0.0),
        ..Default::default()
    };
    let carrier = world.create_body(&def).unwrap();
    let load = cube_at(&mut world, Vec3::new(0.0, 3.0, 0.0), 0.25);
    let kind = JointType::Distance(DistanceJoint { length: 2.0, ..DistanceJoint::default() });
    world.create_joint(&JointDef::new(carrier, load, kind)).unwrap();
    assert_eq!(world.islands.island_of(carrier.index), NONE, "a kinematic body is in no island");
    for step in 0..240 {
        world.step(1.0 / 60.0, pool.jobs()).unwrap();
        check_islands(&world);
        assert!(world.is_awake(load).unwrap(), "step {step}: asleep under a moving carrier");
    }
    world.set_velocity(carrier, Vec3::ZERO, Vec3::ZERO).unwrap();
    let mut slept = false;
    for _ in 0..600 {
        world.step(1.0 / 60.0, pool.jobs()).unwrap();
        check_islands(&world);
        if !world.is_awake(load).unwrap() {
            slept = true;
            break;
        }
    }
    assert!(slept, "the load sleeps once its carrier stops");
}

/// A joint that breaks counts a removal on its island, as one destroyed does.
#[test]
fn a_broken_joint_counts_a_removal() {
    let pool = inline();
    let mut world = World::new(WorldDef::default());
    ground(&mut world);
    let a = cube_at(&mut world, Vec3::new(-1.0, 0.5, 0.0), 0.5);
    let b = cube_at(&mut world, Vec3::new(1.0, 0.5, 0.0), 0.5);
    let kind = JointType::Distance(DistanceJoint { length: 4.0, ..DistanceJoint::default() });
    let def = JointDef { break_force: 1.0, ..JointDef::new(a, b, kind) };
    let joint = world.create_joint(&def).unwrap();
    let island = world.islands.island_of(a.index);
    assert!(island == world.islands.island_of(b.index) && !world.islands.needs_split(island));
    world.step(1.0 / 60.0, pool.jobs()).unwrap();
    assert!(!world.joint_is_valid(joint), "the joint broke");
    let island = world.islands.island_of(a.index);
    assert_eq!(island, world.islands.island_of(b.index), "still one island");
    assert!(world.islands.needs_split(island), "with the removal counted");
    check_islands(&world);
}
