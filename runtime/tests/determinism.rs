//! Same inputs, same bits, for any worker count.

mod common;

use common::particle_scene;
use kiln::jobs::ThreadPool;
use kiln::math::hash_floats;

fn run(threads: usize, frames: usize) -> (u64, u32) {
    let pool = ThreadPool::new(threads);
    let mut scene = particle_scene(20_000);
    for _ in 0..frames {
        scene.graph.execute(&pool, 1.0 / 60.0).unwrap();
    }
    let positions = scene.graph.resource(&scene.positions).unwrap();
    let hash = hash_floats(positions.iter().flat_map(|p| p.iter().copied()));
    (hash, scene.graph.resource(&scene.energy).unwrap().to_bits())
}

#[test]
fn parallel_for_and_reductions_give_identical_bits_for_0_1_2_8_workers() {
    let reference = run(0, 60);
    for threads in [1, 2, 8] {
        assert_eq!(run(threads, 60), reference, "{threads} threads differ from inline");
    }
    // And across runs of the same configuration.
    assert_eq!(run(2, 60), reference);
}
