//! Joints: a pendulum's period, a hanging chain, limits, motors, springs, breaking,
//! collision between jointed bodies, sleep, determinism and bad input.
use glam::{Quat, Vec3};

use super::scenes;
use super::tests::{body_at, inline, state_hash};
use super::world_tests::ShuffledHost;
use super::*;
use super::{DebugDraw, DebugDrawFlags, JointDrawInfo};
use crate::jobs::ThreadPool;
use crate::math::Isometry;
use crate::shapes::Shape;

const DT: f32 = 1.0 / 60.0;

fn static_body(world: &mut World, p: Vec3) -> BodyId {
    let def = BodyDef { motion: MotionType::Static, transform: Isometry::from_translation(p), ..BodyDef::default() };
    world.create_body(&def).unwrap()
}

fn ball(world: &mut World, p: Vec3, radius: f32) -> BodyId {
    let def = BodyDef { transform: Isometry::from_translation(p), angular_damping: 0.0, ..BodyDef::default() };
    let id = world.create_body(&def).unwrap();
    world.add_shape(id, Shape::sphere(Vec3::ZERO, radius).unwrap(), ShapeDef::default()).unwrap();
    id
}

fn cuboid(world: &mut World, p: Vec3, half: Vec3) -> BodyId {
    let id = body_at(world, p);
    world.add_shape(id, Shape::cuboid(half).unwrap(), ShapeDef::default()).unwrap();
    id
}

/// A joint whose frames sit at `anchor` (world) with z along `axis` (world), in each
/// body's frame as the bodies stand now.
fn joint_at(world: &World, a: BodyId, b: BodyId, anchor: Vec3, axis: Vec3, kind: JointType) -> JointDef {
    let frame = Isometry { rotation: Quat::from_rotation_arc(Vec3::Z, axis.normalize()), translation: anchor };
    let (xa, xb) = (world.transform(a).unwrap(), world.transform(b).unwrap());
    JointDef { frame_a: xa.inv_mul(&frame), frame_b: xb.inv_mul(&frame), ..JointDef::new(a, b, kind) }
}

/// A small ball on a 1 m spherical joint swings with the period of a pendulum: the
/// physical pendulum's `2π √((L² + 2r²/5) / (g L))`, stretched by the amplitude's
/// `1 + θ²/16`, within 1% over 10 s (timed by the zero crossings).
#[test]
fn a_spherical_pendulum_keeps_its_period() {
    let pool = inline();
    let mut world = World::new(WorldDef { enable_sleep: false, ..WorldDef::default() });
    let pivot = static_body(&mut world, Vec3::new(0.0, 5.0, 0.0));
    let (length, radius, theta) = (1.0f32, 0.05f32, 0.15f32);
    let start = Vec3::new(0.0, 5.0, 0.0) + Vec3::new(theta.sin(), -theta.cos(), 0.0) * length;
    let bob = ball(&mut world, start, radius);
    let def = JointDef {
        frame_a: Isometry::IDENTITY,
        frame_b: Isometry::from_translation(Vec3::new(0.0, 5.0, 0.0) - start),
        ..JointDef::new(pivot, bob, JointType::Spherical(SphericalJoint::default()))
    };
    world.create_joint(&def).unwrap();
    let mut crossings = Vec::new();
    let mut last = start.x;
    for step in 1..=600 {
        world.step(DT, pool.jobs()).unwrap();
        let x = world.transform(bob).unwrap().translation.x;
        if last > 0.0 && x <= 0.0 {
            // Linear interpolation of the crossing time.
            crossings.push((step as f32 - 1.0 + last / (last - x)) * DT);
        }
        last = x;
    }
    let g = 9.81f32;
    let expected = std::f32::consts::TAU
        * ((length * length + 0.4 * radius * radius) / (g * length)).sqrt()
        * (1.0 + theta * theta / 16.0);
    let periods = crossings.len() - 1;
    assert!(periods >= 4, "{crossings:?}");
    let period = (crossings[periods] - crossings[0]) / periods as f32;
    assert!((period / expected - 1.0).abs() < 0.01, "period {period} s, expected {expected} s");
    let reach = (world.transform(bob).unwrap().translation - Vec3::new(0.0, 5.0, 0.0)).length();
    assert!((reach - length).abs() < 0.005 * length, "the rod is {reach} m long");
}

/// A chain of `links` boxes on spherical joints hanging from a static body, with a
/// weight `ratio` times a link's mass at its end, stepped with `substeps`: how far it
/// stretched (a fraction of its length) after `seconds`, at most, sampled each
/// second after the first, and whether every body stayed finite.
fn hang_chain(links: usize, ratio: f32, substeps: u32, seconds: usize) -> (f32, bool) {
    let pool = inline();
    let mut world = World::new(WorldDef { enable_sleep: false, substeps, ..WorldDef::default() });
    let top = Vec3::new(0.0, 30.0, 0.0);
    let anchor = static_body(&mut world, top);
    let (half, spacing) = (Vec3::new(0.05, 0.1, 0.05), 0.2f32);
    let mut previous = anchor;
    let mut ids = Vec::new();
    for i in 0..links {
        let center = top - Vec3::Y * (spacing * (i as f32 + 0.5));
        let link = cuboid(&mut world, center, half);
        let pivot = top - Vec3::Y * (spacing * i as f32);
        let def = joint_at(&world, previous, link, pivot, Vec3::Y, JointType::Spherical(SphericalJoint::default()));
        world.create_joint(&def).unwrap();
        ids.push(link);
        previous = link;
    }
    // The weight hangs from the last link's lower end: a box of the same size,
    // `ratio` times as dense.
    let end = top - Vec3::Y * (spacing * links as f32);
    let weight = body_at(&mut world, end - Vec3::Y * 0.1);
    let dense = ShapeDef { density: 1000.0 * ratio, ..ShapeDef::default() };
    world.add_shape(weight, Shape::cuboid(half).unwrap(), dense).unwrap();
    let def = joint_at(&world, previous, weight, end, Vec3::Y, JointType::Spherical(SphericalJoint::default()));
    world.create_joint(&def).unwrap();
    let rest = spacing * links as f32 + 0.1;
    let mut stretch = 0.0f32;
    for second in 0..seconds {
        for _ in 0..60 {
            world.step(DT, pool.jobs()).unwrap();
        }
        let bottom = world.transform(weight).unwrap().translation;
        if second > 0 {
            stretch = stretch.max(((top - bottom).length() - rest) / rest);
        }
    }
    let finite = ids.iter().all(|&id| world.transform(id).unwrap().translation.is_finite());
    (stretch, finite)
}

/// A 100-link chain stays finite and stretches at most 1% with 12 substeps (about
/// 4% at 4: see `JOINT_HERTZ_PER_SUBSTEP_RATE`); a weight 100 times a link's mass at
/// its end stays finite and stretches the chain at most 2%.
#[test]
fn a_hundred_link_chain_holds_and_a_heavy_weight_on_it_too() {
    let (stretch, finite) = hang_chain(100, 1.0, 12, 6);
    assert!(finite && stretch < 0.01, "stretched {:.2}%", stretch * 100.0);
    let (stretch, finite) = hang_chain(100, 100.0, 12, 6);
    assert!(finite && stretch < 0.02, "stretched {:.2}% under a 1:100 weight", stretch * 100.0);
    let (stretch, finite) = hang_chain(100, 1.0, 4, 6);
    assert!(finite && stretch < 0.05, "stretched {:.2}% at 4 substeps", stretch * 100.0);
}

/// A bar on a hinge swings under gravity into the hinge's limits: its angle never
/// passes a limit by more than 0.5°, over 10 s of knocking against them.
#[test]
fn a_revolute_limit_holds_within_half_a_degree() {
    let pool = inline();
    let mut world = World::new(WorldDef { enable_sleep: false, ..WorldDef::default() });
    let post = static_body(&mut world, Vec3::new(0.0, 5.0, 0.0));
    let bar = cuboid(&mut world, Vec3::new(1.0, 5.0, 0.0), Vec3::new(1.0, 0.05, 0.05));
    let (lower, upper) = (-0.6f32, 0.4f32);
    let kind = JointType::Revolute(RevoluteJoint { enable_limit: true, lower, upper, ..RevoluteJoint::default() });
    let joint = world.create_joint(&joint_at(&world, post, bar, Vec3::new(0.0, 5.0, 0.0), Vec3::Z, kind)).unwrap();
    let (mut low, mut high) = (0.0f32, 0.0f32);
    for step in 0..600 {
        // A push back and forth every two seconds.
        if step % 120 == 60 {
            world.apply_impulse(bar, Vec3::new(0.0, 100.0, 0.0), Vec3::new(2.0, 5.0, 0.0)).unwrap();
        }
        world.step(DT, pool.jobs()).unwrap();
        let angle = world.joint_value(joint).unwrap();
        (low, high) = (low.min(angle), high.max(angle));
    }
    let tolerance = 0.5f32.to_radians();
    assert!(low < lower + 0.01 && high > upper - 0.01, "the bar never reached its limits: {low}..{high}");
    assert!(low >= lower - tolerance && high <= upper + tolerance, "angles {low}..{high} rad");
}

/// A wheel's revolute motor spins it up to its speed within 0.2 s, and holds it.
#[test]
fn a_revolute_motor_reaches_its_speed_within_a_fifth_of_a_second() {
    let pool = inline();
    let mut world = World::new(WorldDef { enable_sleep: false, ..WorldDef::default() });
    let axle = static_body(&mut world, Vec3::new(0.0, 5.0, 0.0));
    let wheel = cuboid(&mut world, Vec3::new(0.0, 5.0, 0.0), Vec3::new(0.5, 0.5, 0.1));
    let speed = 10.0;
    let motor =
        RevoluteJoint { enable_motor: true, motor_speed: speed, max_motor_torque: 5000.0, ..Default::default() };
    world
        .create_joint(&joint_at(&world, axle, wheel, Vec3::new(0.0, 5.0, 0.0), Vec3::Z, JointType::Revolute(motor)))
        .unwrap();
    for _ in 0..12 {
        world.step(DT, pool.jobs()).unwrap();
    }
    let (_, w) = world.velocity(wheel).unwrap();
    assert!((w.z - speed).abs() < 0.01 * speed && w.truncate().length() < 1e-3, "spin {w} after 0.2 s");
    for _ in 0..120 {
        world.step(DT, pool.jobs()).unwrap();
    }
    let (_, w) = world.velocity(wheel).unwrap();
    assert!((w.z - speed).abs() < 0.01 * speed, "spin {w} after 2.2 s");
}

/// A prismatic motor lifts a 50 kg load up a vertical slider to the slider's upper
/// limit and holds it there; it never passes the limit by more than 5 mm.
#[test]
fn a_prismatic_motor_lifts_a_load_to_its_limit() {
    let pool = inline();
    let mut world = World::new(WorldDef { enable_sleep: false, ..WorldDef::default() });
    let rail = static_body(&mut world, Vec3::ZERO);
    let load = cuboid(&mut world, Vec3::new(0.0, 1.0, 0.0), Vec3::new(0.25, 0.1, 0.25));
    assert!((world.mass(load).unwrap() - 50.0).abs() < 0.1);
    let slider = PrismaticJoint {
        enable_limit: true,
        lower: 0.0,
        upper: 1.5,
        enable_motor: true,
        motor_speed: 1.0,
        max_motor_force: 1000.0,
        ..PrismaticJoint::default()
    };
    let def = joint_at(&world, rail, load, Vec3::new(0.0, 1.0, 0.0), Vec3::Y, JointType::Prismatic(slider));
    let joint = world.create_joint(&def).unwrap();
    let mut highest = 0.0f32;
    for _ in 0..180 {
        world.step(DT, pool.jobs()).unwrap();
        highest = highest.max(world.joint_value(joint).unwrap());
    }
    let t = world.joint_value(joint).unwrap();
    assert!((t - 1.5).abs() < 0.005 && highest < 1.505, "at {t} m (highest {highest} m)");
    let x = world.transform(load).unwrap();
    assert!(x.translation.x.abs() < 1e-3 && x.translation.z.abs() < 1e-3 && x.rotation.w > 0.99999, "{x:?}");
}

/// A weld holding a box from a static beam breaks once the load passes its threshold:
/// exactly once, reported in that step's joint events with its bodies; the box falls.
#[test]
fn a_weld_past_its_threshold_breaks_exactly_once() {
    let pool = inline();
    let mut world = World::new(WorldDef { enable_sleep: false, ..WorldDef::default() });
    let beam = static_body(&mut world, Vec3::new(0.0, 5.0, 0.0));
    let crate_ = cuboid(&mut world, Vec3::new(0.0, 4.5, 0.0), Vec3::splat(0.25));
    let weight = world.mass(crate_).unwrap() * 9.81;
    let def = JointDef {
        break_force: 2.0 * weight,
        ..joint_at(&world, beam, crate_, Vec3::new(0.0, 5.0, 0.0), Vec3::Z, JointType::Fixed(FixedJoint::default()))
    };
    let joint = world.create_joint(&def).unwrap();
    let mut events = Vec::new();
    for step in 0..120 {
        if step >= 60 {
            // Three times its weight more pulls down from the 1 s mark.
            world.apply_force(crate_, Vec3::new(0.0, -3.0 * weight, 0.0)).unwrap();
        }
        world.step(DT, pool.jobs()).unwrap();
        if step < 60 {
            let (force, _) = world.joint_reaction(joint).unwrap();
            assert!((force.y - weight).abs() < 0.02 * weight, "holds its weight: {force}");
        }
        events.extend(world.joint_events().iter().map(|e| (step, *e)));
    }
    assert_eq!(events.len(), 1, "{events:?}");
    let (step, e) = events[0];
    assert_eq!((step, e.joint, e.body_a, e.body_b, e.kind), (60, joint, beam, crate_, JointEventKind::Broke));
    assert!(!world.joint_is_valid(joint));
    assert!(world.transform(crate_).unwrap().translation.y < 0.0, "the crate fell");
}

/// Plain ball joints (their finish reads the point part's impulse alone) report the
/// weight they hold and no torque, in lanes (four of them) and alone (the fifth, with a
/// cone limit: solved by the scalar path); one past its threshold breaks, once.
#[test]
fn ball_joints_report_their_load_and_break_past_their_threshold() {
    let pool = inline();
    let mut world = World::new(WorldDef { enable_sleep: false, ..WorldDef::default() });
    let beam = static_body(&mut world, Vec3::new(0.0, 5.0, 0.0));
    let mut hung = Vec::new();
    for i in 0..5 {
        let x = i as f32 * 2.0;
        let crate_ = cuboid(&mut world, Vec3::new(x, 4.5, 0.0), Vec3::splat(0.25));
        let weight = world.mass(crate_).unwrap() * 9.81;
        let cone = SphericalJoint { enable_cone_limit: true, cone_angle: 0.5, ..SphericalJoint::default() };
        let kind = JointType::Spherical(if i == 4 { cone } else { SphericalJoint::default() });
        let def = JointDef {
            break_force: if i == 0 { 2.0 * weight } else { f32::MAX },
            ..joint_at(&world, beam, crate_, Vec3::new(x, 5.0, 0.0), Vec3::Y, kind)
        };
        hung.push((world.create_joint(&def).unwrap(), crate_, weight));
    }
    let mut events = Vec::new();
    for step in 0..120 {
        if step >= 60 {
            world.apply_force(hung[0].1, Vec3::new(0.0, -3.0 * hung[0].2, 0.0)).unwrap();
        }
        world.step(DT, pool.jobs()).unwrap();
        for &(joint, _, weight) in &hung[usize::from(step >= 60)..] {
            if step < 30 {
                continue;
            }
            let (force, torque) = world.joint_reaction(joint).unwrap();
            assert!((force.y - weight).abs() < 0.02 * weight && force.x.abs() + force.z.abs() < 1e-3, "{force}");
            assert!(torque.length() < 1e-4 * weight, "a ball joint holds no torque: {torque}");
        }
        events.extend(world.joint_events().iter().map(|e| (step, e.joint, e.kind)));
    }
    assert_eq!(events, vec![(60, hung[0].0, JointEventKind::Broke)]);
}

/// Two overlapping boxes on a weld do not collide with each other, unless the joint
/// says they do: then their contact pushes them apart against the weld.
#[test]
fn jointed_bodies_collide_only_when_the_joint_says_so() {
    for collide in [false, true] {
        let pool = inline();
        let mut world = World::new(WorldDef { gravity: Vec3::ZERO, ..WorldDef::default() });
        let a = cuboid(&mut world, Vec3::ZERO, Vec3::splat(0.5));
        let b = cuboid(&mut world, Vec3::new(0.8, 0.0, 0.0), Vec3::splat(0.5));
        let kind = JointType::Distance(DistanceJoint {
            length: 0.8,
            enable_spring: true,
            enable_limit: true,
            min_length: 0.0,
            max_length: 10.0,
            ..DistanceJoint::default()
        });
        let def = JointDef { collide_connected: collide, ..joint_at(&world, a, b, Vec3::ZERO, Vec3::Z, kind) };
        world.create_joint(&JointDef { frame_b: Isometry::IDENTITY, ..def }).unwrap();
        for _ in 0..60 {
            world.step(DT, pool.jobs()).unwrap();
        }
        let gap = world.transform(b).unwrap().translation.x - world.transform(a).unwrap().translation.x;
        assert_eq!(world.counters().contact_points > 0, collide, "gap {gap}");
        if collide {
            assert!(gap > 0.98, "pushed apart: {gap}");
        } else {
            assert!((gap - 0.8).abs() < 1e-3, "left overlapping: {gap}");
        }
    }
}

/// 100 ragdolls (`scenes::ragdolls`: 1,400 capsules, 1,300 joints with limits and
/// joint friction) dropped on voxel hills settle and fall asleep within 30 s (11 s
/// measured), every body finite and above the ground; a ragdoll sleeps as one island
/// (its 14 bodies in one sleeping group, holding nothing else unless ragdolls came
/// to rest on each other); a poke wakes that ragdoll, all of it, and no other.
#[test]
fn ragdolls_on_hills_settle_sleep_as_whole_islands_and_wake_alone() {
    let pool = ThreadPool::new(1);
    let scene = scenes::ragdolls(100, 96);
    let (mut world, ids) = scene.build();
    assert_eq!((ids.len(), world.joint_count()), (1400, 1300));
    let mut slept = None;
    for step in 0..1800 {
        world.step(DT, pool.jobs()).unwrap();
        if world.awake_count() == 0 {
            slept = Some(step);
            break;
        }
    }
    assert!(slept.is_some(), "{} bodies still awake after 30 s", world.awake_count());
    world.validate();
    assert!(ids.iter().all(|&id| {
        let x = world.transform(id).unwrap().translation;
        x.is_finite() && x.y > 0.0
    }));
    let dolls: Vec<&[BodyId]> = ids.chunks(14).collect();
    let group = |id: BodyId| world.islands.group_of(id.index);
    let mut alone = Vec::new();
    for (k, doll) in dolls.iter().enumerate() {
        let g = group(doll[0]);
        assert!(doll.iter().all(|&id| group(id) == g), "ragdoll {k} sleeps in one island");
        if world.islands.group(g).bodies.len() == 14 {
            alone.push(k);
        }
    }
    // Ragdolls slide down the hills into the valleys, and some come to rest on
    // others: those share an island.
    assert!(alone.len() >= 50, "only {} ragdolls rest on their own", alone.len());
    let poked = dolls[alone[alone.len() / 2]];
    let head = world.transform(poked[3]).unwrap().translation;
    world.apply_impulse(poked[3], Vec3::new(0.0, 1.0, 0.0), head).unwrap();
    for doll in &dolls {
        let awake: Vec<bool> = doll.iter().map(|&id| world.is_awake(id).unwrap()).collect();
        let this = std::ptr::eq(*doll, poked);
        assert!(awake.iter().all(|&a| a == this), "{awake:?}");
    }
}

/// Ragdolls on hills and Box3D's joint grid: the world's hash after 240 steps is
/// the same at 1, 2, 3 and 8 workers and on a host scheduler that shuffles its tasks.
#[test]
fn joints_are_bit_identical_for_any_worker_count_and_scheduler() {
    for scene in [scenes::ragdolls(16, 32), scenes::joint_grid(16)] {
        let run = |jobs: crate::jobs::Jobs| {
            let (mut world, ids) = scene.build();
            for _ in 0..240 {
                world.step(DT, jobs).unwrap();
            }
            (state_hash(&world, &ids), world.counters().colors)
        };
        let reference = run(ThreadPool::new(0).jobs());
        for threads in [1, 2, 7] {
            assert_eq!(run(ThreadPool::new(threads).jobs()), reference, "{}: {} workers", scene.name, threads + 1);
        }
        let host = crate::jobs::HostExecutor::new(ShuffledHost { seed: 11.into() });
        assert_eq!(run(crate::jobs::Jobs::new(&host)), reference, "{}: shuffled host scheduler", scene.name);
    }
}

/// Bad joints are refused and change nothing: a body with itself, two static bodies,
/// a stale body, NaN or huge anchors, an unnormalized frame, inverted limits, negative
/// frequencies. Destroying a body destroys its joints and reports each with the
/// next step's events; a stale joint handle is refused everywhere.
#[test]
fn bad_joints_are_refused_and_a_body_takes_its_joints_along() {
    let pool = inline();
    let mut world = World::new(WorldDef::default());
    let (s1, s2) = (static_body(&mut world, Vec3::ZERO), static_body(&mut world, Vec3::X));
    let (a, b) = (cuboid(&mut world, Vec3::Y, Vec3::splat(0.2)), cuboid(&mut world, Vec3::Y * 2.0, Vec3::splat(0.2)));
    let stale = cuboid(&mut world, Vec3::Y * 3.0, Vec3::splat(0.2));
    world.destroy_body(stale).unwrap();
    let sphere = JointType::Spherical(SphericalJoint::default());
    let good = JointDef::new(a, b, sphere);
    let nan = Isometry::from_translation(Vec3::new(f32::NAN, 0.0, 0.0));
    let skewed = Isometry { rotation: Quat::from_xyzw(0.0, 0.0, 0.0, 2.0), translation: Vec3::ZERO };
    let inverted =
        JointType::Revolute(RevoluteJoint { enable_limit: true, lower: 1.0, upper: -1.0, ..Default::default() });
    let soft = JointType::Fixed(FixedJoint { linear_hertz: -1.0, ..FixedJoint::default() });
    let rope = JointType::Distance(DistanceJoint { min_length: 2.0, max_length: 1.0, ..DistanceJoint::default() });
    let bad = [
        (JointDef::new(a, a, sphere), BodyError::InvalidArgument),
        (JointDef::new(s1, s2, sphere), BodyError::InvalidArgument),
        (JointDef::new(a, stale, sphere), BodyError::InvalidBody),
        (JointDef { frame_a: nan, ..good }, BodyError::InvalidArgument),
        (JointDef { frame_b: skewed, ..good }, BodyError::InvalidArgument),
        (JointDef { frame_a: Isometry::from_translation(Vec3::splat(1e30)), ..good }, BodyError::InvalidArgument),
        (JointDef { kind: inverted, ..good }, BodyError::InvalidArgument),
        (JointDef { kind: soft, ..good }, BodyError::InvalidArgument),
        (JointDef { kind: rope, ..good }, BodyError::InvalidArgument),
        (JointDef { break_force: f32::NAN, ..good }, BodyError::InvalidArgument),
    ];
    for (def, error) in bad {
        assert_eq!(world.create_joint(&def), Err(error), "{def:?}");
        assert_eq!(world.joint_count(), 0);
    }
    let j1 = world.create_joint(&good).unwrap();
    let j2 = world.create_joint(&JointDef::new(s1, a, JointType::Fixed(FixedJoint::default()))).unwrap();
    let j3 = world.create_joint(&JointDef::new(s2, b, sphere)).unwrap();
    assert_eq!(world.set_joint_type(j1, inverted), Err(BodyError::InvalidArgument), "another kind");
    let bad_cone = SphericalJoint { enable_cone_limit: true, cone_angle: f32::INFINITY, ..Default::default() };
    assert_eq!(world.set_joint_type(j1, JointType::Spherical(bad_cone)), Err(BodyError::InvalidArgument));
    assert_eq!(world.joint(j1).unwrap().kind, sphere, "unchanged");
    world.step(DT, pool.jobs()).unwrap();
    world.destroy_body(a).unwrap();
    assert!(!world.joint_is_valid(j1) && !world.joint_is_valid(j2) && world.joint_is_valid(j3));
    assert!(world.joint_events().is_empty(), "reported with the next step");
    world.step(DT, pool.jobs()).unwrap();
    let events: Vec<(JointId, JointEventKind)> = world.joint_events().iter().map(|e| (e.joint, e.kind)).collect();
    assert_eq!(events, [(j1, JointEventKind::BodyDestroyed), (j2, JointEventKind::BodyDestroyed)]);
    for call in [
        world.destroy_joint(j1),
        world.joint_reaction(j1).map(|_| ()),
        world.joint_value(j1).map(|_| ()),
        world.set_joint_type(j1, sphere),
    ] {
        assert_eq!(call, Err(BodyError::InvalidJoint));
    }
    world.destroy_joint(j3).unwrap();
    assert_eq!(world.joint_count(), 0);
    world.validate();
}

/// Valid but absurd settings (a motor of speed and force 1e30 on each kind that has
/// one) leave every body finite: the API fuzzer's regression.
#[test]
fn absurd_motors_leave_bodies_finite() {
    let pool = inline();
    let mut world = World::new(WorldDef::default());
    let post = static_body(&mut world, Vec3::ZERO);
    let mut ids = Vec::new();
    let kinds = [
        JointType::Prismatic(PrismaticJoint {
            enable_motor: true,
            motor_speed: 1e30,
            max_motor_force: 1e30,
            ..Default::default()
        }),
        JointType::Revolute(RevoluteJoint {
            enable_motor: true,
            motor_speed: -1e30,
            max_motor_torque: 1e30,
            ..Default::default()
        }),
        JointType::Spherical(SphericalJoint {
            enable_motor: true,
            motor_velocity: Vec3::splat(1e30),
            max_motor_torque: 1e30,
            ..Default::default()
        }),
    ];
    for (i, kind) in kinds.into_iter().enumerate() {
        let id = cuboid(&mut world, Vec3::new(3.0 * i as f32, 1.0, 0.0), Vec3::splat(0.2));
        world.create_joint(&joint_at(&world, post, id, Vec3::new(3.0 * i as f32, 1.0, 0.0), Vec3::Y, kind)).unwrap();
        ids.push(id);
    }
    for _ in 0..30 {
        world.step(DT, pool.jobs()).unwrap();
        world.validate();
    }
    assert!(ids.iter().all(|&id| world.transform(id).unwrap().rotation.is_finite()));
}

/// A spherical joint's twist and cone limits hold a spinning, swinging body: spun
/// about the joint axis it stops at the twist limit, swung across it at the cone;
/// neither passed by more than 1°, with gravity off and the frames tilted.
#[test]
fn spherical_twist_and_cone_limits_hold() {
    let pool = inline();
    for (spin, axis) in [
        (Vec3::new(0.0, 8.0, 0.0), Vec3::Y),
        (Vec3::new(8.0, 0.0, 0.0), Vec3::Y),
        (Vec3::new(3.0, 6.0, 2.0), Vec3::new(1.0, 1.0, 0.0)),
    ] {
        let mut world = World::new(WorldDef { gravity: Vec3::ZERO, enable_sleep: false, ..WorldDef::default() });
        let post = static_body(&mut world, Vec3::ZERO);
        let def = BodyDef {
            transform: Isometry::from_translation(axis.normalize() * 0.5),
            angular_velocity: spin,
            angular_damping: 0.0,
            ..BodyDef::default()
        };
        let head = world.create_body(&def).unwrap();
        world
            .add_shape(
                head,
                Shape::capsule(Vec3::new(0.0, -0.2, 0.0), Vec3::new(0.0, 0.2, 0.0), 0.1).unwrap(),
                ShapeDef::default(),
            )
            .unwrap();
        let (cone, twist) = (0.5f32, 0.6f32);
        let kind = JointType::Spherical(SphericalJoint {
            enable_cone_limit: true,
            cone_angle: cone,
            enable_twist_limit: true,
            lower_twist: -twist,
            upper_twist: twist,
            ..SphericalJoint::default()
        });
        let joint = world.create_joint(&joint_at(&world, post, head, Vec3::ZERO, axis, kind)).unwrap();
        let (mut worst_twist, mut worst_cone) = (0.0f32, 0.0f32);
        for _ in 0..240 {
            world.step(DT, pool.jobs()).unwrap();
            worst_twist = worst_twist.max(world.joint_value(joint).unwrap().abs());
            worst_cone = worst_cone.max(world.joint_swing(joint).unwrap());
        }
        let tolerance = 1.0f32.to_radians();
        assert!(
            worst_twist < twist + tolerance && worst_cone < cone + tolerance,
            "spin {spin}: twist {worst_twist}, cone {worst_cone}"
        );
    }
}

/// Debug drawing reports each live joint once, in handle order, with its two frames
/// in the world (anchors together and axes along each other for a hinge holding a
/// swinging bar) and its settings; a destroyed joint is not drawn, nor are joints
/// unless asked.
#[test]
fn debug_drawing_reports_each_joint_with_its_frames_and_limits() {
    struct Joints(Vec<JointDrawInfo>);
    impl DebugDraw for Joints {
        fn joint(&mut self, joint: &JointDrawInfo) {
            self.0.push(*joint);
        }
    }
    let pool = inline();
    let mut world = World::new(WorldDef { enable_sleep: false, ..WorldDef::default() });
    let post = static_body(&mut world, Vec3::new(0.0, 5.0, 0.0));
    let bar = cuboid(&mut world, Vec3::new(1.0, 5.0, 0.0), Vec3::new(1.0, 0.05, 0.05));
    let other = cuboid(&mut world, Vec3::new(-2.0, 5.0, 0.0), Vec3::splat(0.2));
    let kind = JointType::Revolute(RevoluteJoint { enable_limit: true, lower: -0.5, upper: 0.5, ..Default::default() });
    let gone = world.create_joint(&joint_at(&world, post, other, Vec3::new(-2.0, 5.0, 0.0), Vec3::Z, kind)).unwrap();
    let hinge = world.create_joint(&joint_at(&world, post, bar, Vec3::new(0.0, 5.0, 0.0), Vec3::Z, kind)).unwrap();
    world.destroy_joint(gone).unwrap();
    for _ in 0..30 {
        world.step(DT, pool.jobs()).unwrap();
    }
    let mut seen = Joints(Vec::new());
    world.debug_draw(DebugDrawFlags { shapes: true, ..DebugDrawFlags::default() }, &mut seen);
    assert!(seen.0.is_empty(), "joints only when asked");
    world.debug_draw(DebugDrawFlags { joints: true, ..DebugDrawFlags::default() }, &mut seen);
    assert_eq!(seen.0.len(), 1);
    let j = seen.0[0];
    assert_eq!((j.joint, j.body_a, j.body_b, j.kind), (hinge, post, bar, kind));
    assert!(j.frame_a.translation.distance(j.frame_b.translation) < 1e-3, "{j:?}");
    assert!((j.frame_a.rotation * Vec3::Z).dot(j.frame_b.rotation * Vec3::Z) > 0.9999, "{j:?}");
    let angle = world.joint_value(hinge).unwrap();
    assert!((angle + 0.5).abs() < 0.01, "the bar hangs at its lower limit: {angle}");
}

/// The six-DOF joint stands in for the other kinds: as a slider (z limited to 0..1.5
/// m with a motor, the rest locked) it lifts a 50 kg load to the limit within 5 mm;
/// as a hinge (rotation about z limited to -0.6..0.4 rad, the rest locked) it holds a
/// knocked bar within 0.5° of its limits; with everything free it holds nothing (the
/// body falls as in free fall); with everything locked it is a weld.
#[test]
fn a_six_dof_joint_is_a_slider_a_hinge_nothing_or_a_weld() {
    let pool = inline();
    // A slider.
    let mut world = World::new(WorldDef { enable_sleep: false, ..WorldDef::default() });
    let rail = static_body(&mut world, Vec3::ZERO);
    let load = cuboid(&mut world, Vec3::new(0.0, 1.0, 0.0), Vec3::new(0.25, 0.1, 0.25));
    let mut motors = SixDofJoint {
        linear: [Dof::Locked, Dof::Locked, Dof::Limited { lower: 0.0, upper: 1.5 }],
        ..SixDofJoint::default()
    };
    (motors.motor_speed[2], motors.max_motor_force[2]) = (1.0, 1000.0);
    let def = joint_at(&world, rail, load, Vec3::new(0.0, 1.0, 0.0), Vec3::Y, JointType::SixDof(motors));
    world.create_joint(&def).unwrap();
    let mut highest = 0.0f32;
    for _ in 0..180 {
        world.step(DT, pool.jobs()).unwrap();
        highest = highest.max(world.transform(load).unwrap().translation.y - 1.0);
    }
    let x = world.transform(load).unwrap();
    assert!((x.translation.y - 2.5).abs() < 0.005 && highest < 1.505, "{x:?}, highest {highest}");
    assert!(x.translation.x.abs() < 1e-3 && x.rotation.w > 0.99999, "{x:?}");

    // A hinge.
    let mut world = World::new(WorldDef { enable_sleep: false, ..WorldDef::default() });
    let post = static_body(&mut world, Vec3::new(0.0, 5.0, 0.0));
    let bar = cuboid(&mut world, Vec3::new(1.0, 5.0, 0.0), Vec3::new(1.0, 0.05, 0.05));
    let (lower, upper) = (-0.6f32, 0.4f32);
    let hinge =
        SixDofJoint { angular: [Dof::Locked, Dof::Locked, Dof::Limited { lower, upper }], ..SixDofJoint::default() };
    let def = joint_at(&world, post, bar, Vec3::new(0.0, 5.0, 0.0), Vec3::Z, JointType::SixDof(hinge));
    world.create_joint(&def).unwrap();
    let (mut low, mut high) = (0.0f32, 0.0f32);
    for step in 0..600 {
        if step % 120 == 60 {
            world.apply_impulse(bar, Vec3::new(0.0, 100.0, 0.0), Vec3::new(2.0, 5.0, 0.0)).unwrap();
        }
        world.step(DT, pool.jobs()).unwrap();
        let q = world.transform(bar).unwrap().rotation;
        let angle = 2.0 * crate::math::atan2(q.z, q.w);
        (low, high) = (low.min(angle), high.max(angle));
        assert!(q.x.abs() < 1e-3 && q.y.abs() < 1e-3, "turned off the hinge: {q}");
    }
    let tolerance = 0.5f32.to_radians();
    assert!(low < lower + 0.01 && high > upper - 0.01, "never reached the limits: {low}..{high}");
    assert!(low >= lower - tolerance && high <= upper + tolerance, "angles {low}..{high} rad");

    // Nothing, then a weld.
    for (dof, fall) in [(Dof::Free, true), (Dof::Locked, false)] {
        let mut world = World::new(WorldDef { enable_sleep: false, ..WorldDef::default() });
        let beam = static_body(&mut world, Vec3::new(0.0, 5.0, 0.0));
        let hung = cuboid(&mut world, Vec3::new(0.5, 4.5, 0.0), Vec3::splat(0.2));
        let kind = JointType::SixDof(SixDofJoint { linear: [dof; 3], angular: [dof; 3], ..SixDofJoint::default() });
        world.create_joint(&joint_at(&world, beam, hung, Vec3::new(0.0, 5.0, 0.0), Vec3::Z, kind)).unwrap();
        for _ in 0..60 {
            world.step(DT, pool.jobs()).unwrap();
        }
        let x = world.transform(hung).unwrap();
        if fall {
            assert!((x.translation.y - (4.5 - 0.5 * 9.81)).abs() < 0.1, "free fall: {x:?}");
        } else {
            assert!(x.translation.distance(Vec3::new(0.5, 4.5, 0.0)) < 0.01 && x.rotation.w > 0.9999, "welded: {x:?}");
        }
    }
    // Bad six-DOF settings are refused.
    let mut world = World::new(WorldDef::default());
    let (a, b) = (static_body(&mut world, Vec3::ZERO), cuboid(&mut world, Vec3::Y, Vec3::splat(0.2)));
    let inverted =
        SixDofJoint { linear: [Dof::Limited { lower: 1.0, upper: 0.0 }, Dof::Free, Dof::Free], ..Default::default() };
    let wide =
        SixDofJoint { angular: [Dof::Limited { lower: -4.0, upper: 0.0 }, Dof::Free, Dof::Free], ..Default::default() };
    let mut nan = SixDofJoint::default();
    nan.motor_speed[4] = f32::NAN;
    for x in [inverted, wide, nan] {
        assert_eq!(world.create_joint(&JointDef::new(a, b, JointType::SixDof(x))), Err(BodyError::InvalidArgument));
    }
}

/// A spherical joint whose cone limit is switched off is a plain ball joint from the
/// next step, though its solve row last held the limited joint (a ball joint's row
/// is filled only where its point part reads it): it moves its bodies bit for bit as
/// the same joint in a world restored from the bytes of a snapshot taken at the
/// switch, whose rows start as new rows do. The swing then passes the old cone.
#[test]
fn a_joint_turned_plain_ball_solves_as_a_fresh_one() {
    let pool = inline();
    let mut world = World::new(WorldDef { enable_sleep: false, ..WorldDef::default() });
    let top = Vec3::new(0.0, 5.0, 0.0);
    let pivot = static_body(&mut world, top);
    let bob = ball(&mut world, top + Vec3::new(0.6f32.sin(), -0.6f32.cos(), 0.0), 0.1);
    let cone = SphericalJoint { enable_cone_limit: true, cone_angle: 0.2, ..SphericalJoint::default() };
    let def = joint_at(&world, pivot, bob, top, Vec3::NEG_Y, JointType::Spherical(cone));
    let id = world.create_joint(&def).unwrap();
    for _ in 0..30 {
        world.step(DT, pool.jobs()).unwrap();
    }
    world.set_joint_type(id, JointType::Spherical(SphericalJoint::default())).unwrap();
    // Restored from bytes: the fresh world's solve rows start as new rows do (a
    // snapshot in memory would carry the old ones along).
    let mut bytes = vec![0u8; world.snapshot_size().unwrap()];
    world.save_bytes(&mut bytes).unwrap();
    let mut fresh = World::new(WorldDef { enable_sleep: false, ..WorldDef::default() });
    fresh.restore_bytes(&bytes).unwrap();
    let mut widest = 0.0f32;
    for step in 0..90 {
        world.step(DT, pool.jobs()).unwrap();
        fresh.step(DT, pool.jobs()).unwrap();
        let (a, b) = (world.transform(bob).unwrap(), fresh.transform(bob).unwrap());
        assert_eq!(
            (a.translation.to_array().map(f32::to_bits), a.rotation.to_array().map(f32::to_bits)),
            (b.translation.to_array().map(f32::to_bits), b.rotation.to_array().map(f32::to_bits)),
            "step {step} after the switch"
        );
        widest = widest.max(world.joint_swing(id).unwrap());
    }
    assert!(widest > 0.3, "the swing reached {widest} rad, inside the old cone");
    assert_eq!(state_hash(&world, &[pivot, bob]), state_hash(&fresh, &[pivot, bob]));
}
