//! `world`: the whole rigid-body step, Kiln against rapier3d on the same scenes
//! (built from the one description in `kiln::physics::scenes`), with the same
//! substep count (4 each: Kiln's soft step substeps, rapier's TGS-soft solver
//! iterations, both rapier's default) and sleeping as the scene says.
//!
//! - `large_pyramid`: the Box2D v3 / Box3D scene, 5,050 cubes on a ground box,
//!   sleeping off; the first 60 steps after building.
//! - `rain`: 4,096 spheres and cubes dropped on a 256 m voxel terrain; the first 240
//!   steps (4 s: the fall and the landing). rapier gets the terrain as one trimesh
//!   made of Kiln's own chunk meshes (vertices merged, internal edges fixed). Kiln's
//!   spheres have rolling resistance 0.2, which rapier does not model.
//! - `hull_rain`: the rain with every cube a convex hull of 32 points (radius 0.6),
//!   the first 240 steps: hulls on the terrain's triangles. rapier gets each hull
//!   as its convex polyhedron.
//! - `hull_pile`: 5,120 convex hulls of 32 points (every one different) dropped from
//!   a tower 8 x 8 wide and 80 layers high into a walled pen, sleeping off; the first
//!   500 steps (the fall and the collapse into a pile). rapier gets each hull as its
//!   convex polyhedron.
//!
//! - `drum`: 8,000 cubes of half-extent 0.2 tumbling in a kinematic drum of 40 hull
//!   segments and two end discs turning at 25°/s, sleeping off; 300 steps (5 s, a
//!   third of a turn; 1,000 would make each criterion sample of rapier's half a
//!   minute long), and the paired pass over 1,000 steps (17 s, 1.2 turns). rapier gets the drum as one kinematic (velocity-based) body with
//!   the same convex polyhedra.
//!
//! - `joint_grid`: Box3D's joint benchmark, 100 x 100 spheres tied by 19,701
//!   spherical joints hanging from the static top row, sleeping off; 100 steps.
//!   rapier gets the same impulse joints. (Its multibody joints need trees: the
//!   grid's columns as 100 articulations of 99 links, rows as impulse joints, did
//!   not finish 5 steps in 300 s.)
//! - `ragdolls`: 300 ragdolls of 14 capsules and 13 joints (cone, twist and hinge
//!   limits, joint friction) dropped on 128 m voxel hills; the first 300 steps (the
//!   fall and the landing). rapier's spherical limits are per axis (a square cone);
//!   `KILN_WORLD_PASSES=multibody` probes rapier's multibody joints on it (each
//!   ragdoll one reduced-coordinate articulation): they are not a timed row, since
//!   they turn NaN within the window.
//!
//! `KILN_WORLD_SCENES=hull_pile` (comma-separated names) runs only those scenes,
//! `KILN_WORLD_PASSES=parity` only those passes after criterion (and not criterion).
//!
//! One criterion iteration is the whole window of steps from a freshly built scene
//! (the build is not timed: rapier's includes its terrain trimesh, so Kiln's includes
//! meshing the terrain's chunks, which a world otherwise does when a body first
//! touches one), so both engines do the same work; the time per step is
//! the reported time divided by the window. Kiln runs at 1 and 2 workers (rapier3d is
//! built without its `parallel` feature: one thread). After criterion, a scaling pass
//! alternates 1 and 2 workers `ROUNDS` times per scene and prints each 1 → 2 worker
//! speed-up and their spread, since this machine kind's core-to-core latency varies
//! from run to run; a paired pass then alternates Kiln at one worker and rapier the
//! same way and prints the median of the rounds' ratios. Last, a parity pass prints
//! both engines' end states (heights, touching pairs) and fails when their mean
//! heights differ by a metre, so a ratio never rests on one engine doing less work.

use std::time::{Duration, Instant};

use criterion::{criterion_group, BenchmarkId, Criterion};
use kiln::jobs::ThreadPool;
use kiln::physics::scenes::{self, Scene};
use kiln::physics::{MotionType, StepProfile};
use kiln_benches::{format_ns, prepare_terrain, report_paired, report_ratios};

#[path = "common/rapier_scene.rs"]
mod rapier_scene;
use rapier_scene::{joints_form_trees, rapier_world, rapier_world_with};

const ROUNDS: usize = 5;

struct Case {
    scene: Scene,
    /// The window criterion and the scaling pass time.
    steps: usize,
    /// The paired pass's window: the criterion window, or the longer one
    /// where a criterion sample of it would take minutes.
    paired_steps: usize,
}

/// The scenes, or those named in `KILN_WORLD_SCENES` (comma-separated) when set.
fn cases() -> Vec<Case> {
    let all = vec![
        Case { scene: scenes::large_pyramid(), steps: 60, paired_steps: 60 },
        Case { scene: scenes::rain(4096), steps: 240, paired_steps: 240 },
        Case { scene: scenes::hull_rain(4096), steps: 240, paired_steps: 240 },
        Case { scene: scenes::hull_pile(8, 80), steps: 500, paired_steps: 500 },
        Case { scene: scenes::drum(8000), steps: 300, paired_steps: 1000 },
        Case { scene: scenes::joint_grid(100), steps: 100, paired_steps: 100 },
        Case { scene: scenes::ragdolls(300, 128), steps: 300, paired_steps: 300 },
    ];
    match std::env::var("KILN_WORLD_SCENES") {
        Ok(names) => all.into_iter().filter(|c| names.split(',').any(|n| n == c.scene.name)).collect(),
        Err(_) => all,
    }
}

/// Kiln: `steps` steps from a fresh build on `pool`; returns the time of the steps.
fn run_kiln(scene: &Scene, steps: usize, pool: &ThreadPool) -> Duration {
    run_kiln_profiled(scene, steps, pool).0
}

/// As `run_kiln`, plus the per-stage milliseconds summed over the steps.
fn run_kiln_profiled(scene: &Scene, steps: usize, pool: &ThreadPool) -> (Duration, StepProfile) {
    let (mut world, _) = scene.build();
    prepare_terrain(&mut world, pool.jobs());
    let mut sum = StepProfile::default();
    let start = Instant::now();
    for _ in 0..steps {
        world.step(1.0 / 60.0, pool.jobs()).expect("valid step");
        let p = world.profile();
        sum.broadphase += p.broadphase;
        sum.narrowphase += p.narrowphase;
        sum.prepare += p.prepare;
        sum.solve += p.solve;
        sum.continuous += p.continuous;
        sum.sleep += p.sleep;
        sum.total += p.total;
    }
    (start.elapsed(), sum)
}

/// rapier3d: `steps` steps from a fresh build; returns the time of the steps.
fn run_rapier(scene: &Scene, steps: usize) -> Duration {
    let mut world = rapier_world(scene);
    let start = Instant::now();
    for _ in 0..steps {
        world.step();
    }
    start.elapsed()
}

fn bench(c: &mut Criterion) {
    for case in cases() {
        let name = case.scene.name;
        let mut group = c.benchmark_group(format!("world_{name}"));
        group.sample_size(10);
        for workers in [1usize, 2] {
            let pool = ThreadPool::new(workers - 1);
            group.bench_function(BenchmarkId::new("kiln", workers), |b| {
                b.iter_custom(|iters| (0..iters).map(|_| run_kiln(&case.scene, case.steps, &pool)).sum())
            });
        }
        group.bench_function(BenchmarkId::new("rapier3d", 1), |b| {
            b.iter_custom(|iters| (0..iters).map(|_| run_rapier(&case.scene, case.steps)).sum())
        });
        group.finish();
    }
}

/// Alternates 1 and 2 workers and prints each round's speed-up and the spread.
fn scaling() {
    for case in cases() {
        let (one, two) = (ThreadPool::new(0), ThreadPool::new(1));
        let mut ups = Vec::new();
        for round in 0..ROUNDS {
            let (a, pa) = run_kiln_profiled(&case.scene, case.steps, &one);
            let (b, pb) = run_kiln_profiled(&case.scene, case.steps, &two);
            if round == 0 {
                for (workers, p) in [(1, pa), (2, pb)] {
                    let n = case.steps as f32;
                    println!(
                        "stages world_{} ({workers} worker{}), ms per step: broadphase {:.2}, narrowphase {:.2}, \
                         prepare {:.2}, solve {:.2}, continuous {:.2}, sleep {:.2}, total {:.2}",
                        case.scene.name,
                        if workers == 1 { "" } else { "s" },
                        p.broadphase / n,
                        p.narrowphase / n,
                        p.prepare / n,
                        p.solve / n,
                        p.continuous / n,
                        p.sleep / n,
                        p.total / n
                    );
                }
            }
            ups.push(a.as_secs_f64() / b.as_secs_f64());
            println!(
                "scaling world_{}: 1 worker {} / step, 2 workers {} / step, speed-up {:.2}x",
                case.scene.name,
                format_ns(a.as_nanos() as f64 / case.steps as f64),
                format_ns(b.as_nanos() as f64 / case.steps as f64),
                ups.last().unwrap()
            );
        }
        ups.sort_by(f64::total_cmp);
        println!(
            "scaling world_{}: 1 -> 2 workers speed-up median {:.2}x, spread {:.2}x .. {:.2}x over {ROUNDS} rounds",
            case.scene.name,
            ups[ROUNDS / 2],
            ups[0],
            ups[ROUNDS - 1]
        );
    }
}

/// Kiln at one worker and rapier in alternating rounds, `ROUNDS` of each
/// ([`report_paired`], groups `world_{scene}_paired`, times per step): this machine
/// kind's load varies by a third from minute to minute, and a pair of rounds shares
/// the load it ran under.
fn paired() {
    for case in cases() {
        let pool = ThreadPool::new(0);
        let steps = case.paired_steps;
        let per_step = |t: std::time::Duration| t.as_secs_f64() * 1e9 / steps as f64;
        report_paired(
            &format!("world_{}_paired", case.scene.name),
            ("kiln/1", "rapier3d/1"),
            ROUNDS,
            || per_step(run_kiln(&case.scene, steps, &pool)),
            || per_step(run_rapier(&case.scene, steps)),
        );
    }
}

/// Steps of the long parity pass: 20 s, far past the timed window, so that a ratio
/// never rests on a scene that falls over after it.
const PARITY_STEPS: usize = 1200;

/// Whether both engines did the same job, over a long run: after [`PARITY_STEPS`]
/// steps, the dynamic bodies' mean and lowest heights, the fastest body and the
/// pairs in touch, in each engine; it fails when the mean heights differ by 1 m or
/// more, or a body of Kiln's is still faster than 1 m/s (in a scene a kinematic body
/// drives, faster than half as fast again as rapier's). A body that tunnelled through
/// the terrain, a pyramid that fell or a pile that never formed shows here. (rapier3d
/// does not model the rain's rolling resistance: its spheres roll on, lower, and some
/// are still rolling after 20 s. Both engines count speculative points in touching
/// pairs, within margins that differ; Kiln's rain is asleep, with none.)
fn parity() {
    for case in cases() {
        let scene = &case.scene;
        let dynamic: Vec<usize> =
            (0..scene.bodies.len()).filter(|&i| scene.bodies[i].motion == MotionType::Dynamic).collect();
        let pool = ThreadPool::new(0);
        let (mut world, ids) = scene.build();
        for _ in 0..PARITY_STEPS {
            world.step(1.0 / 60.0, pool.jobs()).expect("valid step");
        }
        let kiln_y: Vec<f32> =
            dynamic.iter().map(|&i| world.transform(ids[i]).expect("live body").translation.y).collect();
        let kiln_fastest =
            dynamic.iter().map(|&i| world.velocity(ids[i]).expect("live body").0.length()).fold(0.0, f32::max);
        let mut kiln_pairs = Vec::new();
        world.for_each_contact(|p| kiln_pairs.push((p.body_a, p.body_b)));
        kiln_pairs.sort_unstable();
        kiln_pairs.dedup();
        let mut rapier = rapier_world(scene);
        for _ in 0..PARITY_STEPS {
            rapier.step();
        }
        let rapier_y: Vec<f32> =
            rapier.bodies.iter().filter(|(_, b)| b.is_dynamic()).map(|(_, b)| b.translation().y).collect();
        let rapier_fastest =
            rapier.bodies.iter().filter(|(_, b)| b.is_dynamic()).map(|(_, b)| b.linvel().length()).fold(0.0, f32::max);
        let rapier_pairs = rapier.narrow_phase.contact_pairs().filter(|p| p.has_any_active_contact()).count();
        let mean = |ys: &[f32]| ys.iter().sum::<f32>() / ys.len().max(1) as f32;
        let lowest = |ys: &[f32]| ys.iter().copied().fold(f32::INFINITY, f32::min);
        // Both ratios are meaningless once the two runs tell different stories.
        println!(
            "parity world_{} after {} steps: dynamic bodies' mean height Kiln {:.2} m, rapier {:.2} m; lowest {:.2} m, \
             {:.2} m; fastest {:.3} m/s, {:.3} m/s; touching pairs {}, {}",
            scene.name,
            PARITY_STEPS,
            mean(&kiln_y),
            mean(&rapier_y),
            lowest(&kiln_y),
            lowest(&rapier_y),
            kiln_fastest,
            rapier_fastest,
            kiln_pairs.len(),
            rapier_pairs
        );
        // The ratios are meaningless once the two runs tell different stories.
        assert!(
            (mean(&kiln_y) - mean(&rapier_y)).abs() < 1.0,
            "world_{}: the engines' end states differ (mean heights {} and {} m)",
            scene.name,
            mean(&kiln_y),
            mean(&rapier_y)
        );
        // A scene a kinematic body keeps driving (the turning drum) never comes to
        // rest: its bodies must only move no faster than rapier's.
        let driven = scene.bodies.iter().any(|b| b.motion == MotionType::Kinematic);
        assert!(
            if driven { kiln_fastest < 1.5 * rapier_fastest + 1.0 } else { kiln_fastest < 1.0 },
            "world_{}: a body still moves after {PARITY_STEPS} steps ({kiln_fastest} m/s, rapier {rapier_fastest} m/s)",
            scene.name
        );
    }
}

/// rapier's multibody joints (reduced-coordinate articulations) on the joint scenes
/// whose joints form trees: each step timed and every body checked finite, a panic
/// inside rapier caught and reported. A probe, not a timed row: on `ragdolls` they
/// turn NaN within the window (see docs/BENCHMARKS.md).
fn multibody() {
    for case in cases() {
        let scene = &case.scene;
        if scene.joints.is_empty() {
            continue;
        }
        if !joints_form_trees(scene) {
            println!("multibody world_{}: the joints form loops; rapier's multibody joints need trees", scene.name);
            continue;
        }
        let mut world = rapier_world_with(scene, true);
        let (mut elapsed, mut steps, mut failure) = (Duration::ZERO, 0, None);
        while steps < case.steps && failure.is_none() {
            let start = Instant::now();
            let stepped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| world.step()));
            elapsed += start.elapsed();
            steps += 1;
            let finite = world.bodies.iter().all(|(_, b)| b.translation().is_finite());
            failure = match (stepped, finite) {
                (Err(_), _) => Some("panicked"),
                (Ok(()), false) => Some("a body is not finite"),
                _ => None,
            };
        }
        println!(
            "multibody world_{}: rapier3d multibody joints {} / step over {steps} steps{}; impulse joints {} / step",
            scene.name,
            format_ns(elapsed.as_nanos() as f64 / steps as f64),
            failure.map_or(String::new(), |f| format!(", then {f} at step {steps}")),
            format_ns(run_rapier(scene, case.steps).as_nanos() as f64 / case.steps as f64)
        );
    }
}

criterion_group!(benches, bench);

/// `KILN_WORLD_PASSES=parity` (or `scaling`, `paired`, `multibody`, comma-separated)
/// runs only those passes, without criterion.
fn main() {
    if let Ok(passes) = std::env::var("KILN_WORLD_PASSES") {
        for pass in passes.split(',') {
            match pass {
                "scaling" => scaling(),
                "paired" => paired(),
                "parity" => parity(),
                "multibody" => multibody(),
                other => panic!("unknown pass {other:?}: scaling, paired, parity or multibody"),
            }
        }
        return;
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
    for case in cases() {
        let group = format!("world_{}", case.scene.name);
        println!("{group}: one iteration = {} steps; divide by it for ms per step", case.steps);
        report_ratios(&group, &[("kiln/1", "rapier3d/1"), ("kiln/2", "rapier3d/1"), ("kiln/2", "kiln/1")]);
    }
    if !std::env::args().any(|a| a == "--list" || a == "--test") {
        scaling();
        paired();
        parity();
    }
}
