//! The same worlds step to the same bits at every SIMD level this CPU runs: scalar,
//! SSE2 (four-lane solver bundles), AVX2 (eight lanes, eight-ray kD tree batches) and
//! AVX-512 (sixteen lanes). Two machines of a networked game, one with AVX-512 and
//! one without, must agree on every step's hash. A process of its own: the SIMD
//! ceiling is process-wide.

use glam::Vec3;
use kiln::jobs::ThreadPool;
use kiln::math::{hash_floats, set_simd_ceiling, simd_ceiling, Ray, SimdLevel};
use kiln::physics::{scenes, QueryFilter, RayHit};

/// Every step's state hash of `scene` over `steps`, then the hash of a batch of rays
/// cast down onto the result (terrain and bodies), at the current ceiling.
fn run(scene: &scenes::Scene, steps: usize, pool: &ThreadPool) -> Vec<u64> {
    let (mut world, ids) = scene.build();
    let mut hashes = Vec::with_capacity(steps + 1);
    for _ in 0..steps {
        world.step(1.0 / 60.0, pool.jobs()).unwrap();
        hashes.push(world.state_hash(&ids));
    }
    let rays: Vec<Ray> = (0..256)
        .map(|i| {
            let origin = Vec3::new((i % 16) as f32 * 15.0 + 8.0, 60.0, (i / 16) as f32 * 15.0 + 8.0);
            Ray::new(origin, Vec3::new(0.1 * (i % 3) as f32, -1.0, 0.07 * (i % 5) as f32))
        })
        .collect();
    let mut hits: Vec<Option<RayHit>> = vec![None; rays.len()];
    world.cast_ray_batch(&rays, 200.0, &QueryFilter::default(), &mut hits, pool.jobs());
    let floats = hits.iter().flatten().flat_map(|h| [h.t, h.normal.x, h.normal.y, h.normal.z]);
    hashes.push(hash_floats(floats.chain([hits.iter().flatten().count() as f32])));
    hashes
}

#[test]
fn every_simd_level_steps_the_same_bits() {
    let levels: Vec<SimdLevel> = SimdLevel::ALL.into_iter().filter(|l| l.supported()).collect();
    // Every x86-64 CI and device machine of this project has AVX2; most have AVX-512.
    assert!(levels.len() >= 3 || !cfg!(target_arch = "x86_64"), "levels {levels:?}");
    let pool = ThreadPool::new(2);
    let cases = [
        (scenes::pyramid(20), 300),
        (scenes::rain(600), 300),
        (scenes::ragdolls(6, 32), 300),
        (scenes::hull_pile(4, 3), 300),
    ];
    for (scene, steps) in &cases {
        let runs: Vec<Vec<u64>> = levels
            .iter()
            .map(|&level| {
                set_simd_ceiling(level);
                assert_eq!(simd_ceiling(), level);
                run(scene, *steps, &pool)
            })
            .collect();
        for (level, hashes) in levels.iter().zip(&runs).skip(1) {
            let first = hashes.iter().zip(&runs[0]).position(|(a, b)| a != b);
            assert_eq!(first, None, "{}: {} and scalar part at step {first:?}", scene.name, level.name());
        }
    }
}
