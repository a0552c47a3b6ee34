//! Builds the `kdtree` bench's 1M-triangle hills mesh on one thread, a few times, and
//! prints each build's time and a fingerprint of the tree: a target for `perf`.
//!
//! ```text
//! cargo build --release -p kiln-benches --example kd_build
//! perf record target/release/examples/kd_build 5
//! ```
//!
//! Arguments: builds (5), then `chunks` to build the bench's 802-chunk set (the
//! 120 x 120 hills, one tree per chunk, ten sets a build) instead, then `compact`
//! to build the chunks' trees in compact mode; or `rays` to build the 1M mesh once and
//! time the bench's 10,000 closest-hit rays instead, one at a time and as one batch,
//! in each of the rounds; or `terrain` to time the bench's chunk-set rays (10,000
//! casts through the 120 x 120 hills, cache warm, one at a time and as one batch;
//! `KD_SIZE=400` for the bench's 1M-triangle terrain). Both also time the same rays
//! through a `RayBvh` over the same triangles (the 1M mesh; the chunk set as one
//! mesh), and `rays` its parallel build. The fingerprint
//! (node count, depth and the hits of 2,000 rays) must stay the same across changes
//! meant to keep the tree.
//!
//! `KD_SIZE=60` (voxels; 400 by default) builds a smaller hills mesh instead, with
//! the rays spread over it: at 60 (32,572 triangles) the tree and mesh stay in
//! the caches, so `rays` then times the walk's own work without memory stalls.

use std::time::Instant;

use glam::Vec3;
use kiln::jobs::ThreadPool;
use kiln::math::Ray;
use kiln::spatial::{KdMesh, MeshMode, RayBvh, TriMesh};
use kiln::terrain::{generate_hills, mesh_chunk, Terrain};
use kiln_benches::{geometry_chunks, terrain_rays, SplitMix};

fn main() {
    let builds: usize = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(5);
    if std::env::args().nth(2).as_deref() == Some("terrain") {
        return terrain_rays_chunk_set(builds);
    }
    if std::env::args().nth(2).as_deref() == Some("chunks") {
        let mode =
            if std::env::args().nth(3).as_deref() == Some("compact") { MeshMode::Compact } else { MeshMode::Full };
        return chunk_set(builds, mode);
    }
    let pool = ThreadPool::new(0);
    let mut t = Terrain::new(0.5);
    generate_hills(&mut t, hills_size(), 1);
    t.regenerate(pool.jobs());
    let mesh = joined_chunks(&t);
    if std::env::args().nth(2).as_deref() == Some("rays") {
        return rays(builds, mesh);
    }
    let mut times = Vec::new();
    let mut tree = None;
    for _ in 0..builds {
        let input = mesh.clone();
        let start = Instant::now();
        let kd = KdMesh::from_mesh(input, MeshMode::Full).expect("valid mesh");
        times.push(start.elapsed().as_secs_f64() * 1e3);
        tree = Some(kd);
    }
    let kd = tree.expect("one build at least");
    let (bounds, mut rng) = (kd.bounds(), SplitMix(7));
    let (mut hits, mut sum) = (0, 0.0f64);
    for _ in 0..2000 {
        let from =
            Vec3::new(rng.range(bounds.min.x, bounds.max.x), bounds.max.y + 1.0, rng.range(bounds.min.z, bounds.max.z));
        let to = Vec3::new(rng.range(bounds.min.x, bounds.max.x), bounds.min.y, rng.range(bounds.min.z, bounds.max.z));
        if let Some(hit) = kd.ray_closest(&Ray::new(from, (to - from).normalize()), 1e4) {
            hits += 1;
            sum += hit.t as f64;
        }
    }
    times.sort_by(f64::total_cmp);
    println!(
        "{} triangles: build min {:.1} ms, median {:.1} ms ({builds} builds); {} nodes, depth {}, {hits} hits, sum {sum:.3}",
        kd.triangle_count(),
        times[0],
        times[times.len() / 2],
        kd.node_count(),
        kd.depth()
    );
}

/// The terrain's chunk meshes joined in the bench's order (x, then z, then y).
fn joined_chunks(t: &Terrain) -> TriMesh {
    let mut mesh = TriMesh::new();
    for c in geometry_chunks(t).into_iter().filter(|&c| t.may_have_triangles(c)) {
        let mut chunk = TriMesh::new();
        mesh_chunk(t.voxels(), c, t.voxel_size(), &mut chunk);
        let base = mesh.vertices.len() as u32;
        mesh.vertices.extend_from_slice(&chunk.vertices);
        for (tri, &m) in chunk.triangles.iter().zip(&chunk.materials) {
            mesh.push(tri.map(|v| v + base), m);
        }
    }
    mesh
}

/// The hills' width in voxels: 400 (the bench's 1M-triangle mesh) unless `KD_SIZE`
/// says otherwise.
fn hills_size() -> i32 {
    std::env::var("KD_SIZE").ok().and_then(|s| s.parse().ok()).unwrap_or(400)
}

/// `rounds` timings of `rays` through `bvh` (built in `build_ms`), one at a time and
/// as one batch, printed; the sum of the hits' `t` (the batch must find the same).
fn wide_bvh_rounds(bvh: &RayBvh, rays: &[Ray], rounds: usize, build_ms: f64) -> f64 {
    let (mut single, mut batch, mut sum) = (Vec::new(), Vec::new(), 0.0f64);
    let mut hits = vec![None; rays.len()];
    for _ in 0..rounds {
        let start = Instant::now();
        sum = rays.iter().filter_map(|r| bvh.ray_closest(r, f32::INFINITY)).map(|h| h.t as f64).sum();
        single.push(start.elapsed().as_secs_f64() * 1e6 / rays.len() as f64);
        let start = Instant::now();
        bvh.ray_closest_batch(rays, f32::INFINITY, &mut hits);
        batch.push(start.elapsed().as_secs_f64() * 1e6 / rays.len() as f64);
    }
    assert_eq!(sum, hits.iter().flatten().map(|h| h.t as f64).sum::<f64>(), "the BVH's batch finds the same hits");
    single.sort_by(f64::total_cmp);
    batch.sort_by(f64::total_cmp);
    println!(
        "wide BVH: built in {build_ms:.1} ms, {} nodes, depth {}, {:.1} bytes per triangle; \
         one at a time min {:.3} us, median {:.3}; batch min {:.3} us, median {:.3}",
        bvh.node_count(),
        bvh.depth(),
        bvh.bytes() as f64 / bvh.triangle_count() as f64,
        single[0],
        single[rounds / 2],
        batch[0],
        batch[rounds / 2]
    );
    sum
}

/// `rounds` timings of the `kdtree` bench's 10,000 rays on the 1M mesh, one at a time
/// and as one batch.
fn rays(rounds: usize, mesh: TriMesh) {
    let start = Instant::now();
    let bvh = RayBvh::build(&mesh).expect("valid mesh");
    let bvh_build = start.elapsed().as_secs_f64() * 1e3;
    let pool = ThreadPool::with_default_threads();
    let start = Instant::now();
    let parallel = RayBvh::build_parallel(&mesh, pool.jobs()).expect("valid mesh");
    println!(
        "wide BVH parallel build on {} workers: {:.1} ms ({} nodes)",
        pool.worker_count(),
        start.elapsed().as_secs_f64() * 1e3,
        parallel.node_count()
    );
    let kd = KdMesh::from_mesh(mesh, MeshMode::Full).expect("valid mesh");
    let rays = terrain_rays(10_000, hills_size() as f32 * 0.5, 1);
    let mut hits = vec![None; rays.len()];
    let wide_sum = wide_bvh_rounds(&bvh, &rays, rounds, bvh_build);
    let (mut single, mut batch) = (Vec::new(), Vec::new());
    let mut sum = 0.0f64;
    for _ in 0..rounds {
        let start = Instant::now();
        sum = rays.iter().filter_map(|r| kd.ray_closest(r, f32::INFINITY)).map(|h| h.t as f64).sum();
        single.push(start.elapsed().as_secs_f64() * 1e6 / rays.len() as f64);
        let start = Instant::now();
        kd.ray_closest_batch(&rays, f32::INFINITY, &mut hits);
        batch.push(start.elapsed().as_secs_f64() * 1e6 / rays.len() as f64);
    }
    let batch_sum: f64 = hits.iter().flatten().map(|h| h.t as f64).sum();
    assert_eq!(sum, batch_sum, "the batch finds the same hits");
    assert_eq!(sum, wide_sum, "the wide BVH finds the same hits");
    single.sort_by(f64::total_cmp);
    batch.sort_by(f64::total_cmp);
    println!(
        "{} hits, sum {sum:.3}: one at a time min {:.3} us, median {:.3}; batch min {:.3} us, median {:.3} ({rounds} rounds)",
        hits.iter().flatten().count(),
        single[0],
        single[rounds / 2],
        batch[0],
        batch[rounds / 2]
    );
}

/// `rounds` timings of the `kdtree` bench's chunk-set rays: terrain casts through the
/// 120 x 120 hills (`KD_SIZE` voxels if set: 400 is the bench's 1M-triangle terrain),
/// cache warm and every region's tree built (`KD_WALK` set: the chunk walk alone),
/// one at a time and as one batch on the calling thread.
fn terrain_rays_chunk_set(rounds: usize) {
    let size = std::env::var("KD_SIZE").ok().and_then(|s| s.parse().ok()).unwrap_or(120);
    let pool = ThreadPool::new(0);
    let mut t = Terrain::new(0.5);
    generate_hills(&mut t, size, 1);
    t.regenerate(pool.jobs());
    t.set_mesh_budget(usize::MAX);
    let rays = terrain_rays(10_000, size as f32 * 0.5, if size == 120 { 2 } else { 1 });
    let mut hits = vec![None; rays.len()];
    // Batches until every region the rays reach has its tree.
    loop {
        let before = t.region_stats().builds;
        t.ray_cast_batch(&rays, f32::INFINITY, &mut hits, pool.jobs());
        if t.region_stats().builds == before {
            break;
        }
    }
    if std::env::var_os("KD_WALK").is_some() {
        t.set_ray_regions(false);
    }
    println!("regions {:?}", t.region_stats());
    let start = Instant::now();
    let bvh = RayBvh::build(&joined_chunks(&t)).expect("valid mesh");
    let bvh_build = start.elapsed().as_secs_f64() * 1e3;
    let wide_sum = wide_bvh_rounds(&bvh, &rays, rounds, bvh_build);
    let (mut single, mut batch) = (Vec::new(), Vec::new());
    let mut sum = 0.0f64;
    for _ in 0..rounds {
        let start = Instant::now();
        sum = rays.iter().filter_map(|r| t.ray_cast(r, f32::INFINITY)).map(|h| h.t as f64).sum();
        single.push(start.elapsed().as_secs_f64() * 1e6 / rays.len() as f64);
        let start = Instant::now();
        t.ray_cast_batch(&rays, f32::INFINITY, &mut hits, pool.jobs());
        batch.push(start.elapsed().as_secs_f64() * 1e6 / rays.len() as f64);
    }
    let batch_sum: f64 = hits.iter().flatten().map(|h| h.t as f64).sum();
    assert_eq!(sum, batch_sum, "the batch finds the same hits");
    assert_eq!(sum, wide_sum, "the wide BVH finds the same hits");
    single.sort_by(f64::total_cmp);
    batch.sort_by(f64::total_cmp);
    println!(
        "{} hits, sum {sum:.3}: one at a time min {:.3} us, median {:.3}; batch min {:.3} us, median {:.3} \
         ({rounds} rounds)",
        hits.iter().flatten().count(),
        single[0],
        single[rounds / 2],
        batch[0],
        batch[rounds / 2]
    );
}

/// The `kdtree` bench's chunk set: each chunk's mesh of the 120 x 120 hills, ten sets
/// a build, as its paired rounds build them.
fn chunk_set(builds: usize, mode: MeshMode) {
    const SETS: usize = 10;
    let pool = ThreadPool::new(0);
    let mut t = Terrain::new(0.5);
    generate_hills(&mut t, 120, 1);
    t.regenerate(pool.jobs());
    let chunks: Vec<TriMesh> = geometry_chunks(&t)
        .into_iter()
        .filter(|&c| t.may_have_triangles(c))
        .map(|c| {
            let mut mesh = TriMesh::new();
            mesh_chunk(t.voxels(), c, t.voxel_size(), &mut mesh);
            mesh
        })
        .filter(|m| !m.triangles.is_empty())
        .collect();
    let mut times = Vec::new();
    let mut fingerprint = (0, 0);
    for _ in 0..builds {
        let input: Vec<Vec<TriMesh>> = (0..SETS).map(|_| chunks.clone()).collect();
        let start = Instant::now();
        let built: Vec<Vec<KdMesh>> = input
            .into_iter()
            .map(|set| set.into_iter().map(|m| KdMesh::from_mesh(m, mode).expect("valid mesh")).collect())
            .collect();
        times.push(start.elapsed().as_secs_f64() * 1e3 / SETS as f64);
        fingerprint = built[0].iter().fold((0, 0), |(n, d), kd| (n + kd.node_count(), d.max(kd.depth())));
    }
    times.sort_by(f64::total_cmp);
    let triangles: usize = chunks.iter().map(|m| m.triangles.len()).sum();
    println!(
        "{} chunks, {triangles} triangles: build min {:.2} ms, median {:.2} ms per set ({builds} builds); {} nodes, \
         deepest {}",
        chunks.len(),
        times[0],
        times[times.len() / 2],
        fingerprint.0,
        fingerprint.1
    );
}
