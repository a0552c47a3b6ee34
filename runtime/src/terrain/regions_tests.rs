//! Ray casts through region trees against the chunk walk and brute force: the same
//! hits, bit for bit, before, during and after builds, edits and evictions.

use glam::{IVec3, Vec3};

use super::raycast_tests::brute_ray;
use super::tests::random_world;
use super::*;
use crate::jobs::ThreadPool;
use crate::math::Ray;
use crate::spatial::tests::Rng;
use crate::spatial::MeshMode;

/// A terrain of 0.5 m voxels: hills `size` voxels wide (several regions of 32 m).
fn hills(size: i32, seed: u32, jobs: crate::jobs::Jobs) -> Terrain {
    let mut t = Terrain::new(0.5);
    generate_hills(&mut t, size, seed);
    t.regenerate(jobs);
    t
}

/// Rays over the hills: down and sideways, along axes, through mesh vertices and
/// edge midpoints, some starting inside the rock.
fn rays_over(t: &Terrain, rng: &mut Rng, count: usize) -> Vec<Ray> {
    let meshes = t.all_chunk_meshes();
    let extent = t.geometry_bounds().map_or(8.0, |(_, hi)| (hi.x * CHUNK) as f32 * t.voxel_size());
    let axes = [Vec3::X, Vec3::NEG_X, Vec3::Y, Vec3::NEG_Y, Vec3::Z, Vec3::NEG_Z];
    (0..count)
        .map(|i| {
            let origin = Vec3::new(rng.range(-4.0, extent + 4.0), rng.range(-6.0, 24.0), rng.range(-4.0, extent + 4.0));
            let (_, mesh) = &meshes[rng.below(meshes.len())];
            let tri = mesh.triangle(rng.below(mesh.triangle_count()) as u32);
            let dir = match i % 5 {
                0 => rng.vec3(-1.0, 1.0),
                1 => axes[rng.below(6)],
                2 => tri[rng.below(3)] - origin,
                3 => (tri[0] + tri[1]) * 0.5 - origin,
                _ => Vec3::new(rng.range(-1.0, 1.0), -0.2, rng.range(-1.0, 1.0)),
            };
            Ray::new(origin, if dir == Vec3::ZERO { Vec3::NEG_Y } else { dir })
        })
        .collect()
}

/// The casts of `rays` on `t`, one at a time.
fn singles(t: &mut Terrain, rays: &[Ray], max_t: f32) -> Vec<Option<TerrainHit>> {
    rays.iter().map(|r| t.ray_cast(r, max_t)).collect()
}

#[test]
fn region_trees_give_the_chunk_walks_hits_bit_for_bit() {
    let pool = ThreadPool::new(2);
    for mode in [MeshMode::Full, MeshMode::Compact] {
        let mut walked = hills(150, 4, pool.jobs());
        walked.set_mesh_mode(mode);
        walked.set_ray_regions(false);
        let mut treed = hills(150, 4, pool.jobs());
        treed.set_mesh_mode(mode);
        let mut rng = Rng(11);
        let rays = rays_over(&walked, &mut rng, 3000);
        let expected = singles(&mut walked, &rays, 200.0);
        assert_eq!(walked.region_stats().builds, 0, "off means no trees");
        assert!(expected.iter().filter(|h| h.is_some()).count() > 2000);
        // Singles: the first casts walk chunks while their regions warm up; at most
        // one region is built per cast; later casts walk the trees.
        let mut builds = 0;
        for (ray, want) in rays.iter().zip(&expected) {
            assert_eq!(treed.ray_cast(ray, 200.0), *want, "{mode:?} {ray:?}");
            let stats = treed.region_stats();
            assert!(stats.builds <= builds + 1, "one region a cast");
            builds = stats.builds;
        }
        let stats = treed.region_stats();
        assert!(stats.entries >= 4, "{stats:?}");
        assert!(stats.triangles > 20_000, "{stats:?}");
        treed.validate_caches();
        // Every cast again, through the trees alone, one at a time and as a batch.
        assert_eq!(singles(&mut treed, &rays, 200.0), expected, "{mode:?}");
        let mut batch = vec![None; rays.len()];
        treed.ray_cast_batch(&rays, 200.0, &mut batch, pool.jobs());
        assert_eq!(batch, expected, "{mode:?}");
        // Limits: a short max_t, zero, and the exact distance of a hit.
        for (ray, want) in rays.iter().zip(&expected).step_by(13) {
            let Some(hit) = want else { continue };
            assert_eq!(treed.ray_cast(ray, hit.t), *want);
            let short = walked.ray_cast(ray, hit.t * 0.5);
            assert_eq!(treed.ray_cast(ray, hit.t * 0.5), short);
            assert_eq!(treed.ray_cast(ray, 0.0), walked.ray_cast(ray, 0.0));
        }
    }
}

#[test]
fn batches_build_regions_and_match_brute_force() {
    let pool = ThreadPool::new(2);
    for (seed, density) in [(61, 0.08), (62, 0.4)] {
        // Random voxels across region borders (chunks -4 .. 3, regions -1 and 0).
        let mut t = random_world(seed, -30, 29, density);
        t.regenerate(pool.jobs());
        let meshes = t.all_chunk_meshes();
        let mut rng = Rng(seed);
        let rays: Vec<Ray> = (0..600)
            .map(|i| {
                let origin = rng.vec3(-16.0, 16.0);
                let (_, mesh) = &meshes[rng.below(meshes.len())];
                let tri = mesh.triangle(rng.below(mesh.triangle_count()) as u32);
                let dir = if i % 2 == 0 { tri[rng.below(3)] - origin } else { rng.vec3(-1.0, 1.0) };
                Ray::new(origin, if dir == Vec3::ZERO { Vec3::Y } else { dir })
            })
            .collect();
        let mut hits = vec![None; rays.len()];
        t.ray_cast_batch(&rays, 50.0, &mut hits, pool.jobs());
        assert!(t.region_stats().builds >= 2, "{:?}", t.region_stats());
        t.ray_cast_batch(&rays, 50.0, &mut hits, pool.jobs());
        for (ray, hit) in rays.iter().zip(&hits) {
            let want = brute_ray(&meshes, ray, 50.0);
            assert_eq!(hit.map(|h| (h.t, h.chunk, h.triangle)), want, "seed {seed}: {ray:?}");
            if let Some(h) = hit {
                assert_eq!(h.point, ray.at(h.t));
                assert!(h.material.is_solid());
            }
        }
        t.validate_caches();
    }
}

#[test]
fn edits_drop_region_trees_which_return_after_the_cool_down() {
    let pool = ThreadPool::new(1);
    let mut t = Terrain::new(1.0);
    t.fill(IVec3::new(-40, -10, -40), IVec3::new(40, 3, 40), Material::ROCK);
    t.regenerate(pool.jobs());
    let mut rng = Rng(5);
    let rays: Vec<Ray> =
        (0..400).map(|_| Ray::new(Vec3::new(rng.range(-8.0, 8.0), 20.0, rng.range(-8.0, 8.0)), Vec3::NEG_Y)).collect();
    let mut hits = vec![None; rays.len()];
    t.ray_cast_batch(&rays, 100.0, &mut hits, pool.jobs());
    let built = t.region_stats();
    assert!(built.entries >= 1 && built.invalidations == 0, "{built:?}");
    // Dig a shaft: the regions around it lose their trees and every cast sees the
    // new floor at once.
    t.fill(IVec3::new(-2, -6, -2), IVec3::new(1, 3, 1), Material::AIR);
    let dug = t.region_stats();
    assert!(dug.invalidations >= 1 && dug.entries < built.entries, "{dug:?}");
    let down = Ray::new(Vec3::new(0.5, 20.0, 0.5), Vec3::NEG_Y);
    assert_eq!(t.ray_cast(&down, 100.0).unwrap().point.y, -6.0);
    // Many rays, no regeneration: the edited regions stay on the chunk walk.
    for _ in 0..4 {
        t.ray_cast_batch(&rays, 100.0, &mut hits, pool.jobs());
    }
    assert_eq!(t.region_stats().builds, built.builds, "rebuilt during the cool-down");
    // After the cool-down the next rays rebuild them.
    for _ in 0..REGION_COOLDOWN {
        t.regenerate(pool.jobs());
    }
    let mut again = vec![None; rays.len()];
    t.ray_cast_batch(&rays, 100.0, &mut again, pool.jobs());
    let rebuilt = t.region_stats();
    assert_eq!(rebuilt.entries, built.entries, "{rebuilt:?}");
    assert_eq!(again, hits);
    t.set_ray_regions(false);
    let mut walked = vec![None; rays.len()];
    t.ray_cast_batch(&rays, 100.0, &mut walked, pool.jobs());
    assert_eq!(walked, hits);
    assert_eq!(t.region_stats().entries, 0);
}

#[test]
fn region_trees_keep_to_their_budget() {
    let pool = ThreadPool::new(2);
    let mut t = hills(200, 8, pool.jobs());
    let mut rng = Rng(21);
    let rays = rays_over(&t, &mut rng, 2000);
    let mut free = vec![None; rays.len()];
    t.ray_cast_batch(&rays, 200.0, &mut free, pool.jobs());
    let all = t.region_stats();
    assert!(all.entries >= 6, "{all:?}");
    // A budget for about two regions' trees: the rest walk chunks, same hits.
    let budget = all.bytes / all.entries * 2;
    t.set_mesh_budget(budget);
    let trimmed = t.region_stats();
    assert!(trimmed.bytes <= budget && trimmed.evictions > 0, "{trimmed:?}");
    for _ in 0..3 {
        for _ in 0..REGION_COOLDOWN {
            t.regenerate(pool.jobs());
        }
        let mut hits = vec![None; rays.len()];
        t.ray_cast_batch(&rays, 200.0, &mut hits, pool.jobs());
        assert_eq!(hits, free);
        assert!(t.region_stats().bytes <= budget, "{:?}", t.region_stats());
        t.validate_caches();
    }
    // No budget: no trees, the same hits.
    t.set_mesh_budget(0);
    assert_eq!(t.region_stats().entries, 0);
    assert_eq!(singles(&mut t, &rays[..300], 200.0), free[..300]);
    assert_eq!(t.region_stats().entries, 0);
}

#[test]
fn region_builds_do_not_depend_on_the_worker_count() {
    let mut results = Vec::new();
    for threads in [0, 1, 7] {
        let pool = ThreadPool::new(threads);
        let mut t = hills(180, 2, pool.jobs());
        let mut rng = Rng(9);
        let rays = rays_over(&t, &mut rng, 2500);
        let mut hits = vec![None; rays.len()];
        t.ray_cast_batch(&rays, 150.0, &mut hits, pool.jobs());
        let first = t.region_stats();
        t.ray_cast_batch(&rays, 150.0, &mut hits, pool.jobs());
        results.push((hits, first, t.region_stats(), t.meshes().stats()));
    }
    assert!(results.iter().all(|r| *r == results[0]), "hits or statistics depend on the worker count");
    assert!(results[0].1.builds > 0);
}

#[test]
fn bad_rays_find_nothing_through_regions() {
    let pool = ThreadPool::new(1);
    let mut t = hills(100, 1, pool.jobs());
    let mut rng = Rng(3);
    let rays = rays_over(&t, &mut rng, 500);
    let mut hits = vec![None; rays.len()];
    t.ray_cast_batch(&rays, 100.0, &mut hits, pool.jobs());
    assert!(t.region_stats().entries > 0);
    let o = Vec3::new(10.0, 20.0, 10.0);
    let bad = [
        (Ray::new(o, Vec3::ZERO), 10.0),
        (Ray::new(o, Vec3::new(f32::NAN, -1.0, 0.0)), 10.0),
        (Ray::new(Vec3::new(f32::INFINITY, 0.0, 0.0), Vec3::NEG_Y), 10.0),
        (Ray::new(o, Vec3::NEG_Y), -1.0),
        (Ray::new(o, Vec3::NEG_Y), f32::NAN),
    ];
    for (ray, max_t) in bad {
        assert_eq!(t.ray_cast(&ray, max_t), None, "{ray:?} {max_t}");
        let mut out = [Some(hits[0].unwrap_or_else(|| hits.iter().flatten().next().copied().unwrap())); 2];
        t.ray_cast_batch(&[ray, Ray::new(o, Vec3::NEG_Y)], max_t, &mut out, pool.jobs());
        assert_eq!(out[0], None, "{ray:?} {max_t}");
    }
    // A ray from far away comes back to the terrain through the regions and finds
    // the closest triangle a loop over all of them finds.
    let far = Ray::new(Vec3::new(30.0, 1e30, 30.0), Vec3::NEG_Y);
    let hit = t.ray_cast(&far, f32::INFINITY).expect("the hills from 1e30 m");
    let best = brute_ray(&t.all_chunk_meshes(), &far, f32::INFINITY);
    assert_eq!(Some((hit.t, hit.chunk, hit.triangle)), best);
}
