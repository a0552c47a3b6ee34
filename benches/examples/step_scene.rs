//! Steps one benchmark scene and prints the per-stage times: a target for `perf`.
//!
//! ```text
//! cargo build --release -p kiln-benches --example step_scene
//! perf record -g target/release/examples/step_scene large_pyramid 60 1
//! ```
//!
//! Arguments: scene (`large_pyramid`, `pyramid` (base 20), `rain`, `hull_rain` (the rain's cubes
//! as 32-point hulls), `hull_pile`, `drum`, `joint_grid` or `ragdolls`), steps (60),
//! workers (1), solver (`soft`, the default, or `si`: sequential impulses, 8 velocity
//! and 3 position passes, the soft step's pass count).
//!
//! With `KILN_EACH_STEP=1` it also prints every step's stage times and how many
//! pairs reused their manifolds (the first steps of a scene fault in its buffers and
//! make every manifold anew).

use std::time::Instant;

use kiln::jobs::ThreadPool;
use kiln::physics::{scenes, Solver};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let name = args.get(1).map_or("large_pyramid", String::as_str);
    let steps: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(60);
    let workers: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(1).max(1);
    let scene = match name {
        "large_pyramid" => scenes::large_pyramid(),
        "pyramid" => scenes::pyramid(20),
        "rain" => scenes::rain(4096),
        "hull_rain" => scenes::hull_rain(4096),
        "hull_pile" => scenes::hull_pile(8, 80),
        "drum" => scenes::drum(8000),
        "joint_grid" => scenes::joint_grid(100),
        "ragdolls" => scenes::ragdolls(300, 128),
        other => {
            eprintln!(
                "unknown scene {other:?}: large_pyramid, pyramid, rain, hull_rain, hull_pile, drum, joint_grid or ragdolls"
            );
            std::process::exit(2);
        }
    };
    let solver = match args.get(4).map_or("soft", String::as_str) {
        "soft" => Solver::SoftStep,
        "si" => Solver::SEQUENTIAL_IMPULSES,
        other => {
            eprintln!("unknown solver {other:?}: soft or si");
            std::process::exit(2);
        }
    };
    let pool = ThreadPool::new(workers - 1);
    let (mut world, ids) = scene.build();
    world.set_solver(solver);
    // As the `world` bench: the terrain's chunks meshed before the clock starts.
    kiln_benches::prepare_terrain(&mut world, pool.jobs());
    // Per stage: broadphase, narrowphase, prepare, solve, continuous, sleep, total.
    let mut stages = [0.0f32; 7];
    // Each stage's time in every step, for the medians (steady against a busy host's
    // bursts, which the means take in).
    let mut each: Vec<[f32; 7]> = Vec::with_capacity(steps);
    let mut reused: Vec<(u32, u32)> = Vec::with_capacity(steps);
    let start = Instant::now();
    for _ in 0..steps {
        world.step(1.0 / 60.0, pool.jobs()).expect("valid step");
        let p = world.profile();
        let step = [p.broadphase, p.narrowphase, p.prepare, p.solve, p.continuous, p.sleep, p.total];
        for (sum, ms) in stages.iter_mut().zip(step) {
            *sum += ms;
        }
        each.push(step);
        reused.push((world.counters().reused_pairs, world.counters().pairs));
    }
    let [broad, narrow, prepare, solve, continuous, sleep, total] = stages.map(|ms| ms / steps as f32);
    let other = total - (broad + narrow + prepare + solve + continuous + sleep);
    println!(
        "{name}, {solver:?}: {steps} steps, {workers} worker(s): {:.2} ms / step (solve {solve:.2}, narrowphase \
         {narrow:.2}, broadphase {broad:.2}, prepare {prepare:.2}, continuous {continuous:.2}, sleep {sleep:.2}, \
         other {other:.2})",
        start.elapsed().as_secs_f64() * 1e3 / steps as f64,
    );
    let median = |k: usize| {
        let mut v: Vec<f32> = each.iter().map(|s| s[k]).collect();
        v.sort_by(f32::total_cmp);
        v.get(v.len() / 2).copied().unwrap_or(0.0)
    };
    if std::env::var_os("KILN_EACH_STEP").is_some() {
        for (i, (s, (kept, pairs))) in each.iter().zip(&reused).enumerate() {
            println!(
                "step {i}: total {:.2} ms (broadphase {:.2}, narrowphase {:.2}, prepare {:.2}, solve {:.2}); \
                 {kept} of {pairs} pairs reused their manifolds",
                s[6], s[0], s[1], s[2], s[3]
            );
        }
    }
    println!(
        "medians of the steps: total {:.2} ms (solve {:.2}, narrowphase {:.2}, broadphase {:.2}, prepare {:.2})",
        median(6),
        median(3),
        median(1),
        median(0),
        median(2)
    );
    let c = world.counters();
    println!(
        "last step: {} awake bodies, {} pairs ({} reused their manifolds, and {} shapes on terrain), {} constraints, {} contact points, {} colours, {} overflow",
        c.awake_bodies, c.pairs, c.reused_pairs, c.reused_terrain, c.constraints, c.contact_points, c.colors, c.overflow_constraints
    );
    if c.sat_full + c.sat_cached + c.sat_skipped > 0 {
        println!(
            "hull pairs: {} tested in full, {} decided by last step's separating axis, {} skipped (too far to touch)",
            c.sat_full, c.sat_cached, c.sat_skipped
        );
    }
    // Every body's position, rotation and velocities, bit for bit: a change meant to
    // keep the results must keep this.
    let hash = world.state_hash(&ids);
    println!("state hash {hash:016x}");
    if let Some(t) = world.terrain() {
        let m = t.meshes().stats();
        println!(
            "terrain meshes: {} chunks, {} triangles, {:.1} MB of a {:.0} MB budget, {} built, {} evicted",
            m.entries,
            m.triangles,
            m.bytes as f64 / 1e6,
            m.budget as f64 / 1e6,
            m.builds,
            m.evictions
        );
    }
}
