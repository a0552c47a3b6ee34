//! Terrain ray casts, triangle queries and the mesh cache against brute force over
//! every chunk mesh.

use glam::{IVec3, Vec3};

use super::tests::random_world;
use super::*;
use crate::jobs::ThreadPool;
use crate::math::{ray_triangle, triangle_overlaps_aabb, Aabb, Ray};
use crate::spatial::tests::Rng;
use crate::spatial::MeshMode;

/// The closest hit over all triangles: lowest `t`, then chunk, then triangle.
pub(super) fn brute_ray(meshes: &[(IVec3, KdMesh)], ray: &Ray, max_t: f32) -> Option<(f32, IVec3, u32)> {
    let mut best: Option<(f32, IVec3, u32)> = None;
    for (c, mesh) in meshes {
        for i in 0..mesh.triangle_count() as u32 {
            if let Some(h) = ray_triangle(ray, mesh.triangle(i), 0.0, max_t) {
                let key = (h.t, c.to_array(), i);
                if best.is_none_or(|(t, bc, bi)| key < (t, bc.to_array(), bi)) {
                    best = Some((h.t, *c, i));
                }
            }
        }
    }
    best
}

fn random_rays(rng: &mut Rng, meshes: &[(IVec3, KdMesh)], lo: f32, hi: f32, count: usize) -> Vec<Ray> {
    let axes = [Vec3::X, Vec3::NEG_X, Vec3::Y, Vec3::NEG_Y, Vec3::Z, Vec3::NEG_Z];
    (0..count)
        .map(|i| {
            let origin = rng.vec3(lo, hi);
            let (_, mesh) = &meshes[rng.below(meshes.len())];
            let tri = mesh.triangle(rng.below(mesh.triangle_count()) as u32);
            let dir = match i % 4 {
                0 => rng.vec3(-1.0, 1.0),
                1 => axes[rng.below(6)],
                2 => tri[rng.below(3)] - origin,
                _ => (tri[0] + tri[1]) * 0.5 - origin,
            };
            Ray::new(origin, if dir == Vec3::ZERO { Vec3::NEG_Y } else { dir })
        })
        .collect()
}

fn hit_key(h: &TerrainHit) -> (f32, IVec3, u32) {
    (h.t, h.chunk, h.triangle)
}

#[test]
fn ray_casts_equal_brute_force() {
    let pool = ThreadPool::new(1);
    for mode in [MeshMode::Full, MeshMode::Compact] {
        for (seed, density) in [(41, 0.05), (42, 0.35)] {
            let mut t = random_world(seed, -12, 11, density);
            t.set_mesh_mode(mode);
            t.regenerate(pool.jobs());
            let meshes = t.all_chunk_meshes();
            let mut rng = Rng(seed);
            let rays = random_rays(&mut rng, &meshes, -9.0, 9.0, 150);
            let mut batch = vec![None; rays.len()];
            t.ray_cast_batch(&rays, 40.0, &mut batch, pool.jobs());
            for (ray, batch_hit) in rays.iter().zip(&batch) {
                let expected = brute_ray(&meshes, ray, 40.0);
                let hit = t.ray_cast(ray, 40.0);
                assert_eq!(hit.as_ref().map(hit_key), expected, "{mode:?} seed {seed}: {ray:?}");
                assert_eq!(hit, *batch_hit, "batch and single casts agree");
                if let Some(h) = hit {
                    assert_eq!(h.point, ray.at(h.t));
                    assert!(h.material.is_solid());
                    assert!((h.normal.length() - 1.0).abs() < 1e-5);
                }
                t.meshes().validate();
            }
        }
    }
}

#[test]
fn hills_are_hit_from_above_on_their_outer_side() {
    let pool = ThreadPool::new(1);
    let mut t = Terrain::new(0.5);
    generate_hills(&mut t, 64, 3);
    t.regenerate(pool.jobs());
    let mut rng = Rng(7);
    let rays: Vec<Ray> = (0..500)
        .map(|_| Ray::new(Vec3::new(rng.range(6.0, 26.0), 40.0, rng.range(6.0, 26.0)), rng.vec3(-0.1, 0.1) - Vec3::Y))
        .collect();
    let mut hits = vec![None; rays.len()];
    t.ray_cast_batch(&rays, f32::INFINITY, &mut hits, pool.jobs());
    for (ray, hit) in rays.iter().zip(&hits) {
        let hit = hit.unwrap_or_else(|| panic!("{ray:?} missed the hills"));
        assert!(hit.normal.dot(ray.dir) < 0.0, "first hit from above is a front face: {hit:?}");
        assert!(hit.point.y > -4.0 && hit.point.y < 16.0, "{hit:?}");
    }
    // A ray from inside the rock meets the surface from behind.
    let up = t.ray_cast(&Ray::new(Vec3::new(10.25, -3.0, 10.25), Vec3::Y), 100.0).expect("the surface above");
    assert!(up.normal.dot(Vec3::Y) > 0.0);
}

#[test]
fn batches_are_identical_for_any_worker_count() {
    let mut results = Vec::new();
    for threads in [0, 1, 7] {
        let pool = ThreadPool::new(threads);
        let mut t = Terrain::new(0.5);
        generate_hills(&mut t, 48, 9);
        t.regenerate(pool.jobs());
        t.set_mesh_budget(40_000);
        let mut rng = Rng(3);
        let rays: Vec<Ray> = (0..3000)
            .map(|_| {
                let origin = Vec3::new(rng.range(0.0, 24.0), rng.range(10.0, 30.0), rng.range(0.0, 24.0));
                let dir = rng.vec3(-1.0, 1.0);
                Ray::new(origin, Vec3::new(dir.x, -dir.y.abs() - 0.1, dir.z))
            })
            .collect();
        let mut hits = vec![None; rays.len()];
        t.ray_cast_batch(&rays, 100.0, &mut hits, pool.jobs());
        let stats = t.meshes().stats();
        assert!(stats.bytes <= 40_000, "{stats:?}");
        // The interleaved walks, resumed over many rounds of meshing under the tight
        // budget, find what single casts find.
        if threads == 1 {
            for (ray, hit) in rays.iter().zip(&hits).step_by(7) {
                assert_eq!(t.ray_cast(ray, 100.0), *hit, "{ray:?}");
            }
        }
        results.push((hits, stats));
    }
    assert!(results.iter().all(|r| *r == results[0]), "hits and cache statistics depend on the worker count");
    assert!(results[0].0.iter().filter(|h| h.is_some()).count() > 1000);
}

#[test]
fn cache_honours_its_budget_and_builds_lazily() {
    let pool = ThreadPool::new(1);
    let mut t = Terrain::new(1.0);
    t.fill(IVec3::new(-200, -20, -200), IVec3::new(200, 3, 200), Material::ROCK);
    t.regenerate(pool.jobs());
    // One ray straight down meshes the chunks around where it lands, not the plain.
    let hit = t.ray_cast(&Ray::new(Vec3::new(4.5, 50.0, 4.5), Vec3::NEG_Y), 100.0).unwrap();
    assert_eq!(hit.t, 46.0);
    assert_eq!(hit.normal, Vec3::Y);
    let stats = t.meshes().stats();
    assert!(stats.builds <= 4, "{stats:?}");
    // Rays all over the plain under a small budget: the cache stays under it.
    for budget in [0, 10_000, 100_000] {
        t.set_mesh_budget(budget);
        let mut rng = Rng(budget as u64);
        for _ in 0..50 {
            let origin = Vec3::new(rng.range(-190.0, 190.0), 30.0, rng.range(-190.0, 190.0));
            let hit = t.ray_cast(&Ray::new(origin, Vec3::new(0.3, -1.0, 0.2)), 100.0).unwrap();
            assert!((hit.point.y - 4.0).abs() < 1e-4);
            assert!(t.meshes().stats().bytes <= budget, "{:?}", t.meshes().stats());
            t.meshes().validate();
        }
    }
    assert!(t.meshes().stats().evictions > 40);
}

#[test]
fn edits_are_seen_at_once_and_never_stale() {
    let pool = ThreadPool::new(1);
    let mut t = Terrain::new(1.0);
    t.fill(IVec3::new(-30, -10, -30), IVec3::new(30, 3, 30), Material::ROCK);
    t.regenerate(pool.jobs());
    let down = Ray::new(Vec3::new(0.5, 20.0, 0.5), Vec3::NEG_Y);
    assert_eq!(t.ray_cast(&down, 100.0).unwrap().t, 16.0);
    let built = t.meshes().stats().entries;
    assert!(built > 0);
    // Dig a shaft (no regenerate yet): the cast sees the new bottom.
    t.fill(IVec3::new(-1, -5, -1), IVec3::new(1, 3, 1), Material::AIR);
    assert!(t.meshes().stats().invalidations > 0);
    let hit = t.ray_cast(&down, 100.0).unwrap();
    assert_eq!(hit.point.y, -5.0, "the shaft's floor is the top of voxel -6: {hit:?}");
    // Build a tower: seen before and after regeneration.
    t.fill(IVec3::new(5, 4, 5), IVec3::new(6, 12, 6), Material::SAND);
    let onto = Ray::new(Vec3::new(6.0, 20.0, 6.0), Vec3::NEG_Y);
    let before = t.ray_cast(&onto, 100.0).unwrap();
    assert_eq!(before.material, Material::SAND);
    t.regenerate(pool.jobs());
    assert_eq!(t.ray_cast(&onto, 100.0), Some(before));
    // Everything against brute force after the edits.
    let meshes = t.all_chunk_meshes();
    let mut rng = Rng(77);
    for ray in random_rays(&mut rng, &meshes, -20.0, 20.0, 100) {
        assert_eq!(t.ray_cast(&ray, 60.0).as_ref().map(hit_key), brute_ray(&meshes, &ray, 60.0));
    }
}

#[test]
fn triangle_queries_equal_brute_force() {
    let pool = ThreadPool::new(1);
    let mut t = random_world(51, -12, 11, 0.2);
    t.regenerate(pool.jobs());
    t.fill(IVec3::new(0, 0, 0), IVec3::new(3, 3, 3), Material::GRASS); // dirty, not regenerated
    let meshes = t.all_chunk_meshes();
    let mut rng = Rng(52);
    for i in 0..200 {
        let c = rng.vec3(-8.0, 8.0);
        let half = rng.vec3(0.0, [0.1, 1.0, 4.0][i % 3]);
        let aabb = Aabb::new(c - half, c + half);
        let mut got = Vec::new();
        t.query_triangles(&aabb, pool.jobs(), |tri| {
            assert!(triangle_overlaps_aabb(tri.vertices, &aabb));
            got.push((tri.chunk.to_array(), tri.index));
            true
        });
        got.sort_unstable();
        let mut expected = Vec::new();
        for (c, mesh) in &meshes {
            for i in 0..mesh.triangle_count() as u32 {
                if triangle_overlaps_aabb(mesh.triangle(i), &aabb) {
                    expected.push((c.to_array(), i));
                }
            }
        }
        expected.sort_unstable();
        assert_eq!(got, expected, "box {aabb:?}");
    }
}

#[test]
fn bad_rays_find_nothing() {
    let pool = ThreadPool::new(0);
    let mut t = Terrain::new(1.0);
    let down = Ray::new(Vec3::new(0.5, 10.0, 0.5), Vec3::NEG_Y);
    assert_eq!(t.ray_cast(&down, 100.0), None, "an empty terrain");
    t.fill(IVec3::splat(-10), IVec3::splat(3), Material::ROCK);
    t.regenerate(pool.jobs());
    for (ray, max_t) in [
        (Ray::new(Vec3::splat(f32::NAN), Vec3::NEG_Y), 100.0),
        (Ray::new(Vec3::new(0.5, 10.0, 0.5), Vec3::ZERO), 100.0),
        (Ray::new(Vec3::new(0.5, 10.0, 0.5), Vec3::new(0.0, f32::NEG_INFINITY, 0.0)), 100.0),
        (down, f32::NAN),
        (down, -1.0),
        (down, 5.0),
    ] {
        assert_eq!(t.ray_cast(&ray, max_t), None, "{ray:?} up to {max_t}");
    }
    // Infinite reach and a far origin still terminate.
    assert_eq!(t.ray_cast(&down, f32::INFINITY).unwrap().t, 6.0);
    let far = Ray::new(Vec3::new(1e7, 1e7, 1e7), Vec3::new(-1.0, -1.0, -1.0));
    assert!(t.ray_cast(&far, f32::INFINITY).is_some());
    // So far away that a chunk step no longer changes `t` in f32: it used to walk for
    // ever (found by samples-c/tests/fuzz_api.c); now it ends where it leaves the
    // terrain's chunk range, hit or not.
    for origin in [Vec3::new(1e30, 0.5, 0.5), Vec3::new(-3e20, 7e19, 1e20), Vec3::new(0.5, 1e25, 0.5)] {
        for dir in [-origin, Vec3::new(-1.0, -0.001, 0.002) * origin.x.signum(), Vec3::new(1e-38, -1.0, 1e-38)] {
            let _ = t.ray_cast(&Ray::new(origin, dir), f32::INFINITY);
            let _ = t.ray_cast(&Ray::new(origin, dir), 1e30);
        }
    }
    let mut none = vec![None; 0];
    t.ray_cast_batch(&[], 1.0, &mut none, pool.jobs());
    // Bad rays among good ones in a batch: each lane takes the next ray, bad or not.
    let rays: Vec<Ray> = (0..40)
        .map(|i| match i % 4 {
            0 => Ray::new(Vec3::splat(f32::NAN), Vec3::NEG_Y),
            1 => Ray::new(Vec3::new(0.5, 10.0, 0.5), Vec3::ZERO),
            _ => Ray::new(Vec3::new(-9.5 + i as f32 * 0.3, 10.0, 0.5), Vec3::new(0.1, -1.0, 0.05)),
        })
        .collect();
    let mut hits = vec![None; rays.len()];
    t.ray_cast_batch(&rays, 50.0, &mut hits, pool.jobs());
    for (i, (ray, hit)) in rays.iter().zip(&hits).enumerate() {
        assert_eq!(*hit, t.ray_cast(ray, 50.0), "{ray:?}");
        assert_eq!(hit.is_some(), i % 4 > 1, "{ray:?}");
    }
}
