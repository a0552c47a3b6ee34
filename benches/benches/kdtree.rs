//! `kdtree`: Kiln's loose kD tree against parry3d's `TriMesh` (its BVH) on the same
//! meshes and rays, in the same groups:
//!
//! - a ~1M-triangle terrain mesh (all chunk meshes of a 400 x 400-voxel hills terrain
//!   in one mesh): tree build, and closest-hit casts of 10,000 random rays, one
//!   at a time and as one batch (`KdMesh::ray_closest_batch`: interleaved walks on
//!   the calling thread) against parry's one at a time; and the same rays through
//!   the terrain itself (its region trees, every region built: see `warm_regions`;
//!   the calling thread only), one at a time and as one `Terrain::ray_cast_batch`;
//! - a ~100k-triangle chunk set (the chunk meshes of a 120 x 120-voxel terrain): build
//!   of every chunk tree (Kiln full and compact, parry one `TriMesh` per chunk), and
//!   10,000 rays cast through Kiln's terrain (region trees built), one at a time and
//!   as one batch on the calling thread, and as a batch through the chunk walk alone
//!   (`kiln_walk_batch`: chunk kD trees, no region trees), against parry on one
//!   `TriMesh` of the same triangles; and the same rays through one Kiln tree over
//!   that whole mesh (`kiln_whole`, `kiln_whole_batch`): how much of the terrain's
//!   cost is its chunk walk, and how the tree alone compares at this size.
//!
//! The same rays also go through [`RayBvh`] (`kiln_bvh`, `kiln_bvh_batch` on the 1M
//! mesh; `kiln_bvh_whole`, `kiln_bvh_whole_batch` over the whole chunk set), the
//! four-wide BVH Kiln keeps for rays beside the kD tree that serves collision; its
//! build of the 1M mesh is timed too (`kdtree_build_1m/kiln_bvh`, and on the pool
//! `kiln_bvh_parallel`).
//!
//! Both builds also run on a pool sized to the machine (`kiln_parallel`: the 1M
//! mesh through `KdMesh::from_mesh_parallel`, the chunk set one job per chunk, as
//! the terrain's cache builds the chunks first touched in a frame), against parry's
//! one thread: parry's `TriMesh::new` has no parallel build.
//!
//! The bench prints tree bytes per triangle for each and checks that both sides
//! report the same number of hits. Last, outside criterion, both builds and the
//! batches' rays run in alternating rounds (`kdtree_build_{1m,chunks}_paired`,
//! `kdtree_rays_{1m,chunks}_paired`, see `report_paired`).

use criterion::measurement::WallTime;
use criterion::{criterion_group, BatchSize, BenchmarkGroup, Criterion, Throughput};
use glam::{IVec3, Vec3};
use kiln::jobs::{Jobs, ThreadPool};
use kiln::math::Ray;
use kiln::spatial::{KdMesh, MeshHit, MeshMode, RayBvh, TriMesh};
use kiln::terrain::{generate_hills, mesh_chunk, Terrain, TerrainHit};
use kiln_benches::{report_paired, report_ratios, terrain_rays};
use rapier3d::parry::query::{Ray as ParryRay, RayCast};
use rapier3d::parry::shape::TriMesh as ParryMesh;

const RAYS: usize = 10_000;

/// A hills terrain of `size` x `size` voxels (0.5 m) and its chunk meshes.
fn terrain(size: i32) -> (Terrain, Vec<TriMesh>) {
    let pool = ThreadPool::new(0);
    let mut t = Terrain::new(0.5);
    generate_hills(&mut t, size, 1);
    t.regenerate(pool.jobs());
    let (lo, hi) = t.geometry_bounds().expect("terrain");
    let mut chunks = Vec::new();
    for y in lo.y..=hi.y {
        for z in lo.z..=hi.z {
            for x in lo.x..=hi.x {
                let c = IVec3::new(x, y, z);
                if t.may_have_triangles(c) {
                    let mut mesh = TriMesh::new();
                    mesh_chunk(t.voxels(), c, t.voxel_size(), &mut mesh);
                    if !mesh.triangles.is_empty() {
                        chunks.push(mesh);
                    }
                }
            }
        }
    }
    (t, chunks)
}

fn concat(chunks: &[TriMesh]) -> TriMesh {
    let mut out = TriMesh::new();
    for m in chunks {
        let base = out.vertices.len() as u32;
        out.vertices.extend_from_slice(&m.vertices);
        out.triangles.extend(m.triangles.iter().map(|t| t.map(|v| v + base)));
        out.materials.extend_from_slice(&m.materials);
    }
    out
}

fn parry_mesh(mesh: &TriMesh) -> ParryMesh {
    ParryMesh::new(mesh.vertices.clone(), mesh.triangles.clone()).expect("parry accepts the mesh")
}

fn parry_cast(mesh: &ParryMesh, ray: &Ray) -> Option<f32> {
    mesh.cast_local_ray(&ParryRay::new(ray.origin, ray.dir), f32::MAX, true)
}

fn bytes_per_triangle(bytes: usize, triangles: usize) -> f64 {
    bytes as f64 / triangles as f64
}

fn one_mesh(c: &mut Criterion) {
    let (mut ground, chunks) = terrain(400);
    let mesh = concat(&chunks);
    let n = mesh.triangles.len();
    let kiln = KdMesh::build(&mesh, MeshMode::Full).unwrap();
    let parry = parry_mesh(&mesh);
    println!(
        "kdtree_1m: {n} triangles; tree bytes per triangle: kiln {:.2}, parry {:.2}; kiln depth {}",
        bytes_per_triangle(kiln.tree_bytes(), n),
        bytes_per_triangle(parry.bvh().total_memory_size(), n),
        kiln.depth()
    );

    let pool = ThreadPool::with_default_threads();
    println!("kdtree_build (kiln_parallel): {} workers", pool.worker_count());
    let mut group = c.benchmark_group("kdtree_build_1m");
    group.sample_size(10);
    group.bench_function("kiln", |b| {
        b.iter_batched(|| mesh.clone(), |m| KdMesh::from_mesh(m, MeshMode::Full).unwrap(), BatchSize::LargeInput)
    });
    group.bench_function("kiln_parallel", |b| {
        b.iter_batched(
            || mesh.clone(),
            |m| KdMesh::from_mesh_parallel(m, MeshMode::Full, pool.jobs()).unwrap(),
            BatchSize::LargeInput,
        )
    });
    group.bench_function("kiln_bvh", |b| b.iter(|| RayBvh::build(&mesh).unwrap()));
    group.bench_function("kiln_bvh_parallel", |b| b.iter(|| RayBvh::build_parallel(&mesh, pool.jobs()).unwrap()));
    group.bench_function("parry3d", |b| {
        b.iter_batched(
            || (mesh.vertices.clone(), mesh.triangles.clone()),
            |(v, t)| ParryMesh::new(v, t).unwrap(),
            BatchSize::LargeInput,
        )
    });
    group.finish();

    let rays = terrain_rays(RAYS, 200.0, 1);
    let kiln_hits = rays.iter().filter(|r| kiln.ray_closest(r, f32::INFINITY).is_some()).count();
    let parry_hits = rays.iter().filter(|r| parry_cast(&parry, r).is_some()).count();
    let mut batch = vec![None; RAYS];
    kiln.ray_closest_batch(&rays, f32::INFINITY, &mut batch);
    let batch_hits = batch.iter().flatten().count();
    println!("kdtree_rays_1m: hits: kiln {kiln_hits} (batch {batch_hits}), parry {parry_hits} of {RAYS}");
    let pool = ThreadPool::new(0);
    ground.set_mesh_budget(usize::MAX);
    let mut ground_hits = vec![None; RAYS];
    warm_regions(&mut ground, &rays, &mut ground_hits, pool.jobs());
    println!(
        "kdtree_rays_1m (terrain): hits {} of {RAYS}; cache {:?}; regions {:?}",
        ground_hits.iter().flatten().count(),
        ground.meshes().stats(),
        ground.region_stats()
    );
    let bvh = RayBvh::build(&mesh).unwrap();
    let mut bvh_hits = vec![None; RAYS];
    bvh.ray_closest_batch(&rays, f32::INFINITY, &mut bvh_hits);
    println!(
        "kdtree_rays_1m (kiln_bvh): {:.2} bytes per triangle, depth {}; hits {} of {RAYS}, t sums kiln {:.3}, bvh {:.3}",
        bytes_per_triangle(bvh.bytes(), n),
        bvh.depth(),
        bvh_hits.iter().flatten().count(),
        batch.iter().flatten().map(|h| h.t as f64).sum::<f64>(),
        bvh_hits.iter().flatten().map(|h| h.t as f64).sum::<f64>()
    );
    let mut group = c.benchmark_group("kdtree_rays_1m");
    group.throughput(Throughput::Elements(RAYS as u64)).sample_size(10);
    mesh_rays(&mut group, ("kiln", "kiln_batch"), &kiln, &rays, &mut batch);
    mesh_rays(&mut group, ("kiln_bvh", "kiln_bvh_batch"), &bvh, &rays, &mut bvh_hits);
    group.bench_function("kiln_terrain", |b| {
        b.iter(|| rays.iter().filter_map(|r| ground.ray_cast(r, f32::INFINITY)).map(|h| h.t).sum::<f32>())
    });
    group.bench_function("kiln_terrain_batch", |b| {
        b.iter(|| {
            ground.ray_cast_batch(&rays, f32::INFINITY, &mut ground_hits, pool.jobs());
            ground_hits.iter().flatten().map(|h| h.t).sum::<f32>()
        })
    });
    group.bench_function("parry3d", |b| b.iter(|| rays.iter().filter_map(|r| parry_cast(&parry, r)).sum::<f32>()));
    group.finish();
}

/// A structure that casts closest-hit rays one at a time and as a batch.
trait Caster {
    fn closest(&self, ray: &Ray) -> Option<MeshHit>;
    fn batch(&self, rays: &[Ray], hits: &mut [Option<MeshHit>]);
}

impl Caster for KdMesh {
    fn closest(&self, ray: &Ray) -> Option<MeshHit> {
        self.ray_closest(ray, f32::INFINITY)
    }
    fn batch(&self, rays: &[Ray], hits: &mut [Option<MeshHit>]) {
        self.ray_closest_batch(rays, f32::INFINITY, hits)
    }
}

impl Caster for RayBvh {
    fn closest(&self, ray: &Ray) -> Option<MeshHit> {
        self.ray_closest(ray, f32::INFINITY)
    }
    fn batch(&self, rays: &[Ray], hits: &mut [Option<MeshHit>]) {
        self.ray_closest_batch(rays, f32::INFINITY, hits)
    }
}

/// Closest-hit casts of `rays` through `mesh`, one at a time and as one batch (into
/// `hits`), as the two benches `names`.
fn mesh_rays(
    group: &mut BenchmarkGroup<WallTime>,
    (single, batch): (&str, &str),
    mesh: &impl Caster,
    rays: &[Ray],
    hits: &mut [Option<MeshHit>],
) {
    group.bench_function(single, |b| b.iter(|| rays.iter().filter_map(|r| mesh.closest(r)).map(|h| h.t).sum::<f32>()));
    group.bench_function(batch, |b| {
        b.iter(|| {
            mesh.batch(rays, hits);
            hits.iter().flatten().map(|h| h.t).sum::<f32>()
        })
    });
}

fn chunk_set(c: &mut Criterion) {
    let (mut t, chunks) = terrain(120);
    let n: usize = chunks.iter().map(|m| m.triangles.len()).sum();
    let full: Vec<KdMesh> = chunks.iter().map(|m| KdMesh::build(m, MeshMode::Full).unwrap()).collect();
    let compact: Vec<KdMesh> = chunks.iter().map(|m| KdMesh::build(m, MeshMode::Compact).unwrap()).collect();
    let parry: Vec<ParryMesh> = chunks.iter().map(parry_mesh).collect();
    let sum = |f: &dyn Fn(usize) -> usize| (0..chunks.len()).map(f).sum::<usize>();
    println!(
        "kdtree_chunks: {} chunks, {n} triangles; tree bytes per triangle: kiln {:.2}, kiln compact {:.2}, parry {:.2}",
        chunks.len(),
        bytes_per_triangle(sum(&|i| full[i].tree_bytes()), n),
        bytes_per_triangle(sum(&|i| compact[i].tree_bytes()), n),
        bytes_per_triangle(sum(&|i| parry[i].bvh().total_memory_size()), n),
    );
    println!(
        "kdtree_chunks: mesh bytes per triangle: kiln {:.2}, kiln compact {:.2}",
        bytes_per_triangle(sum(&|i| full[i].mesh_bytes()), n),
        bytes_per_triangle(sum(&|i| compact[i].mesh_bytes()), n),
    );

    let mut group = c.benchmark_group("kdtree_build_chunks");
    group.sample_size(10);
    for (name, mode) in [("kiln", MeshMode::Full), ("kiln_compact", MeshMode::Compact)] {
        group.bench_function(name, |b| {
            b.iter_batched(
                || chunks.clone(),
                |ms| ms.into_iter().map(|m| KdMesh::from_mesh(m, mode).unwrap()).collect::<Vec<_>>(),
                BatchSize::LargeInput,
            )
        });
    }
    let pool = ThreadPool::with_default_threads();
    group.bench_function("kiln_parallel", |b| {
        b.iter_batched(|| chunks.clone(), |ms| build_chunks_on(&pool, ms), BatchSize::LargeInput)
    });
    group.bench_function("parry3d", |b| {
        b.iter_batched(
            || chunks.iter().map(|m| (m.vertices.clone(), m.triangles.clone())).collect::<Vec<_>>(),
            |ms| ms.into_iter().map(|(v, t)| ParryMesh::new(v, t).unwrap()).collect::<Vec<_>>(),
            BatchSize::LargeInput,
        )
    });
    group.finish();

    // Rays through the terrain (chunk walk, warm cache) against one parry mesh, and
    // through one Kiln tree over the same whole mesh: what the chunk walk costs, and
    // what the tree alone does against parry's BVH at this size.
    let whole_mesh = concat(&chunks);
    let whole = parry_mesh(&whole_mesh);
    let whole_kiln = KdMesh::build(&whole_mesh, MeshMode::Full).unwrap();
    let rays = terrain_rays(RAYS, 60.0, 2);
    let pool = ThreadPool::new(0);
    let mut hits = vec![None; RAYS];
    let mut group = c.benchmark_group("kdtree_rays_chunks");
    group.throughput(Throughput::Elements(RAYS as u64)).sample_size(10);
    for (name, mode) in [("kiln", MeshMode::Full), ("kiln_compact", MeshMode::Compact)] {
        t.set_mesh_mode(mode);
        warm_regions(&mut t, &rays, &mut hits, pool.jobs());
        let parry_hits = rays.iter().filter(|r| parry_cast(&whole, r).is_some()).count();
        println!(
            "kdtree_rays_chunks ({name}): hits: kiln {}, parry {parry_hits} of {RAYS}; cache {:?}",
            hits.iter().flatten().count(),
            t.meshes().stats()
        );
        group.bench_function(name, |b| {
            b.iter(|| rays.iter().filter_map(|r| t.ray_cast(r, f32::INFINITY)).map(|h| h.t).sum::<f32>())
        });
    }
    t.set_mesh_mode(MeshMode::Full);
    warm_regions(&mut t, &rays, &mut hits, pool.jobs());
    group.bench_function("kiln_batch", |b| {
        b.iter(|| {
            t.ray_cast_batch(&rays, f32::INFINITY, &mut hits, pool.jobs());
            hits.iter().flatten().map(|h| h.t).sum::<f32>()
        })
    });
    // The chunk walk alone (no region trees): what the trees save.
    t.set_ray_regions(false);
    group.bench_function("kiln_walk_batch", |b| {
        b.iter(|| {
            t.ray_cast_batch(&rays, f32::INFINITY, &mut hits, pool.jobs());
            hits.iter().flatten().map(|h| h.t).sum::<f32>()
        })
    });
    t.set_ray_regions(true);
    let mut whole_hits = vec![None; RAYS];
    whole_kiln.ray_closest_batch(&rays, f32::INFINITY, &mut whole_hits);
    println!(
        "kdtree_rays_chunks (kiln_whole): one tree over the whole set, {} triangles; hits {} of {RAYS}",
        whole_kiln.triangle_count(),
        whole_hits.iter().flatten().count()
    );
    mesh_rays(&mut group, ("kiln_whole", "kiln_whole_batch"), &whole_kiln, &rays, &mut whole_hits);
    let whole_bvh = RayBvh::build(&whole_mesh).unwrap();
    let mut bvh_hits = vec![None; RAYS];
    whole_bvh.ray_closest_batch(&rays, f32::INFINITY, &mut bvh_hits);
    println!(
        "kdtree_rays_chunks (kiln_bvh_whole): one BVH over the whole set, {:.2} bytes per triangle; hits {} of {RAYS}",
        bytes_per_triangle(whole_bvh.bytes(), whole_bvh.triangle_count()),
        bvh_hits.iter().flatten().count()
    );
    mesh_rays(&mut group, ("kiln_bvh_whole", "kiln_bvh_whole_batch"), &whole_bvh, &rays, &mut bvh_hits);
    group.bench_function("parry3d", |b| b.iter(|| rays.iter().filter_map(|r| parry_cast(&whole, r)).sum::<f32>()));
    group.finish();
}

/// Every chunk's tree (full mode), one job per chunk on `pool`.
fn build_chunks_on(pool: &ThreadPool, chunks: Vec<TriMesh>) -> Vec<KdMesh> {
    let mut slots: Vec<(Option<TriMesh>, Option<KdMesh>)> = chunks.into_iter().map(|m| (Some(m), None)).collect();
    pool.jobs().for_each_mut(&mut slots, |_, (mesh, tree), _| {
        *tree = Some(KdMesh::from_mesh(mesh.take().expect("one build per chunk"), MeshMode::Full).unwrap());
    });
    slots.into_iter().map(|(_, tree)| tree.expect("every chunk built")).collect()
}

criterion_group!(benches, one_mesh, chunk_set);

/// The builds of both meshes, Kiln (full mode; one thread, then the machine's
/// workers) and parry in alternating rounds: one build of the 1M mesh, or ten of the
/// whole chunk set, per round. criterion times one peer after the other, and on a
/// noisy host its 1M build ratio spread from 0.37 to 0.45 over four runs of the
/// same code.
fn paired() {
    /// What `ParryMesh::new` takes.
    type ParryInput = (Vec<Vec3>, Vec<[u32; 3]>);
    const ROUNDS: usize = 9;
    const SETS: usize = 10;
    /// Nanoseconds `build` takes; its result is dropped after the clock stops.
    fn timed<T>(build: impl FnOnce() -> T) -> f64 {
        let start = std::time::Instant::now();
        let built = build();
        let ns = start.elapsed().as_secs_f64() * 1e9;
        drop(built);
        ns
    }
    let (_, chunks) = terrain(400);
    let mesh = concat(&chunks);
    let parry_1m = || {
        let (v, t) = (mesh.vertices.clone(), mesh.triangles.clone());
        timed(|| ParryMesh::new(v, t).unwrap())
    };
    let pool = ThreadPool::with_default_threads();
    report_paired(
        "kdtree_build_1m_paired",
        ("kiln", "parry3d"),
        ROUNDS,
        || {
            let input = mesh.clone();
            timed(|| KdMesh::from_mesh(input, MeshMode::Full).unwrap())
        },
        parry_1m,
    );
    report_paired(
        "kdtree_build_1m_paired",
        ("kiln_parallel", "parry3d"),
        ROUNDS,
        || {
            let input = mesh.clone();
            timed(|| KdMesh::from_mesh_parallel(input, MeshMode::Full, pool.jobs()).unwrap())
        },
        parry_1m,
    );
    let (_, small) = terrain(120);
    let sets = || (0..SETS).map(|_| small.clone()).collect::<Vec<_>>();
    let parry_chunks = || {
        let input: Vec<Vec<ParryInput>> =
            (0..SETS).map(|_| small.iter().map(|m| (m.vertices.clone(), m.triangles.clone())).collect()).collect();
        let build = |set: Vec<ParryInput>| set.into_iter().map(|(v, t)| ParryMesh::new(v, t).unwrap());
        timed(|| input.into_iter().flat_map(build).collect::<Vec<_>>()) / SETS as f64
    };
    report_paired(
        "kdtree_build_chunks_paired",
        ("kiln", "parry3d"),
        ROUNDS,
        || {
            let input = sets();
            let build = |set: Vec<TriMesh>| set.into_iter().map(|m| KdMesh::from_mesh(m, MeshMode::Full).unwrap());
            timed(|| input.into_iter().flat_map(build).collect::<Vec<_>>()) / SETS as f64
        },
        parry_chunks,
    );
    report_paired(
        "kdtree_build_chunks_paired",
        ("kiln_parallel", "parry3d"),
        ROUNDS,
        || {
            let input = sets();
            timed(|| input.into_iter().map(|set| build_chunks_on(&pool, set)).collect::<Vec<_>>()) / SETS as f64
        },
        parry_chunks,
    );

    // Rays, in alternating rounds of the 10,000 rays each: the 1M mesh's batch, and
    // on the chunk set the terrain's batch and one tree over the whole set.
    let rays_1m = terrain_rays(RAYS, 200.0, 1);
    let (kiln_1m, parry_1m) = (KdMesh::build(&mesh, MeshMode::Full).unwrap(), parry_mesh(&mesh));
    let mut hits = vec![None; RAYS];
    let parry_rays =
        |parry: &ParryMesh, rays: &[Ray]| timed(|| rays.iter().filter_map(|r| parry_cast(parry, r)).sum::<f32>());
    report_paired(
        "kdtree_rays_1m_paired",
        ("kiln_batch", "parry3d"),
        ROUNDS,
        || timed(|| kiln_1m.ray_closest_batch(&rays_1m, f32::INFINITY, &mut hits)),
        || parry_rays(&parry_1m, &rays_1m),
    );
    /// The rays through `bvh` one at a time and as a batch (rows `names`), each
    /// against parry on `parry`, in alternating rounds.
    fn bvh_paired(group: &str, names: (&str, &str), bvh: &RayBvh, parry: &ParryMesh, rays: &[Ray]) {
        let parry_rays = || timed(|| rays.iter().filter_map(|r| parry_cast(parry, r)).sum::<f32>());
        let single =
            || timed(|| rays.iter().filter_map(|r| bvh.ray_closest(r, f32::INFINITY)).map(|h| h.t).sum::<f32>());
        report_paired(group, (names.0, "parry3d"), ROUNDS, single, parry_rays);
        let mut hits = vec![None; rays.len()];
        let batch = || timed(|| bvh.ray_closest_batch(rays, f32::INFINITY, &mut hits));
        report_paired(group, (names.1, "parry3d"), ROUNDS, batch, parry_rays);
    }
    let bvh_1m = RayBvh::build(&mesh).unwrap();
    bvh_paired("kdtree_rays_1m_paired", ("kiln_bvh", "kiln_bvh_batch"), &bvh_1m, &parry_1m, &rays_1m);
    let (mut ground, small) = terrain(120);
    let whole = concat(&small);
    let (kiln_whole, parry_whole) = (KdMesh::build(&whole, MeshMode::Full).unwrap(), parry_mesh(&whole));
    let rays = terrain_rays(RAYS, 60.0, 2);
    let one_thread = ThreadPool::new(0);
    ground.set_mesh_budget(usize::MAX);
    let mut ground_hits = vec![None; RAYS];
    warm_regions(&mut ground, &rays, &mut ground_hits, one_thread.jobs());
    report_paired(
        "kdtree_rays_chunks_paired",
        ("kiln_batch", "parry3d"),
        ROUNDS,
        || timed(|| ground.ray_cast_batch(&rays, f32::INFINITY, &mut ground_hits, one_thread.jobs())),
        || parry_rays(&parry_whole, &rays),
    );
    report_paired(
        "kdtree_rays_chunks_paired",
        ("kiln_whole_batch", "parry3d"),
        ROUNDS,
        || timed(|| kiln_whole.ray_closest_batch(&rays, f32::INFINITY, &mut hits)),
        || parry_rays(&parry_whole, &rays),
    );
    let bvh_whole = RayBvh::build(&whole).unwrap();
    let names = ("kiln_bvh_whole", "kiln_bvh_whole_batch");
    bvh_paired("kdtree_rays_chunks_paired", names, &bvh_whole, &parry_whole, &rays);
}

/// Casts `rays` as batches until the terrain builds no more region trees (a batch
/// builds a bounded number), so the rows time a terrain whose regions all have one.
fn warm_regions(t: &mut Terrain, rays: &[Ray], hits: &mut [Option<TerrainHit>], jobs: Jobs) {
    loop {
        let before = t.region_stats().builds;
        t.ray_cast_batch(rays, f32::INFINITY, hits, jobs);
        if t.region_stats().builds == before {
            break;
        }
    }
}

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    report_ratios(
        "kdtree_build_1m",
        &[("kiln", "parry3d"), ("kiln_parallel", "parry3d"), ("kiln_bvh", "parry3d"), ("kiln_bvh_parallel", "parry3d")],
    );
    report_ratios(
        "kdtree_rays_1m",
        &[
            ("kiln", "parry3d"),
            ("kiln_batch", "parry3d"),
            ("kiln_terrain", "parry3d"),
            ("kiln_terrain_batch", "parry3d"),
            ("kiln_bvh", "parry3d"),
            ("kiln_bvh_batch", "parry3d"),
        ],
    );
    report_ratios(
        "kdtree_build_chunks",
        &[("kiln", "parry3d"), ("kiln_compact", "parry3d"), ("kiln_parallel", "parry3d")],
    );
    report_ratios(
        "kdtree_rays_chunks",
        &[
            ("kiln", "parry3d"),
            ("kiln_compact", "parry3d"),
            ("kiln_batch", "parry3d"),
            ("kiln_walk_batch", "parry3d"),
            ("kiln_whole", "parry3d"),
            ("kiln_whole_batch", "parry3d"),
            ("kiln_bvh_whole", "parry3d"),
            ("kiln_bvh_whole_batch", "parry3d"),
        ],
    );
    // Only under `cargo bench` (not in `cargo test`'s quick pass over the benches).
    if std::env::args().any(|a| a == "--bench") {
        paired();
    }
}
