//! `world_queries`: world ray casts and shape overlaps, Kiln against rapier3d's query
//! pipeline on the same scene: `rain` (4,096 spheres and cubes on 256 m voxel hills),
//! stepped 4 s in Kiln until the bodies lie on the terrain, then rebuilt in both
//! engines as static bodies at those poses (rapier gets the terrain as one trimesh).
//!
//! - `rays`: 100,000 closest-hit rays from 55–70 m above the terrain, 200 m long:
//!   half aimed at a random body, half pointing down within about 30° of vertical. Kiln one at a time
//!   (`World::cast_ray`), as a batch at 1 and 2 workers (`World::cast_ray_batch`);
//!   rapier one at a time (`cast_ray`, solid). Both return the hit's distance and what
//!   was hit (Kiln also the normal and point; rapier's `cast_ray` does not compute a
//!   normal, which favours rapier).
//! - `overlaps`: 10,000 cubes of half-extent 0.5–2 m at random poses near the
//!   ground: Kiln `World::overlap_shape` against rapier `intersect_shape`, both
//!   listing each body and the terrain once (Kiln's `terrain_once`: its first
//!   touching triangle; rapier's trimesh collider). `kiln_triangles` lists every
//!   terrain triangle touched, more work than rapier does. `overlaps_bodies` leaves
//!   the terrain out of both.
//!
//! Before timing, a parity pass compares every ray's answer (same body or both the
//! terrain, distances within 1 mm) and every overlap's body set, prints the
//! agreement and fails below 99.9% of rays and 99% of overlaps.

use std::collections::BTreeSet;
use std::hint::black_box;

use criterion::{BenchmarkId, Criterion};
use glam::Vec3;
use kiln::jobs::ThreadPool;
use kiln::math::{Isometry, Ray};
use kiln::physics::scenes::{Scene, SceneShape};
use kiln::physics::{BodyId, QueryFilter, QueryTarget, RayHit, World};
use kiln::shapes::Shape;
use kiln_benches::{prepare_terrain, report_paired, report_ratios, settled_rain, world_query_boxes, world_query_rays};
use rapier3d::prelude::{ColliderHandle, Cuboid, PhysicsWorld, QueryFilter as RapierFilter};

#[path = "common/rapier_scene.rs"]
mod rapier_scene;
use rapier_scene::rapier_world;

const RAYS: usize = 100_000;
const OVERLAPS: usize = 10_000;
const MAX_DISTANCE: f32 = 200.0;
const ROUNDS: usize = 5;

/// Both engines' worlds over the settled scene, and the rapier collider of each
/// Kiln body (the first collider is the terrain's).
struct Worlds {
    kiln: World,
    kiln_bodies: Vec<BodyId>,
    rapier: PhysicsWorld,
    rapier_bodies: Vec<ColliderHandle>,
    rapier_terrain: ColliderHandle,
}

fn worlds(scene: &Scene) -> Worlds {
    let pool = ThreadPool::new(0);
    let (mut kiln, kiln_bodies) = scene.build();
    prepare_terrain(&mut kiln, pool.jobs());
    // One step regenerates the terrain's broadphase masks, as in a running game.
    kiln.step(1.0 / 60.0, pool.jobs()).expect("valid step");
    let mut rapier = rapier_world(scene);
    // rapier's tree takes the colliders in its first step; static bodies stay put.
    // (So do Kiln's.)
    rapier.step();
    let mut colliders = rapier.colliders.iter().map(|(h, _)| h);
    let rapier_terrain = colliders.next().expect("the terrain collider");
    let rapier_bodies = colliders.collect();
    Worlds { kiln, kiln_bodies, rapier, rapier_bodies, rapier_terrain }
}

fn probes() -> Vec<(Shape, Isometry, Cuboid)> {
    world_query_boxes(OVERLAPS)
        .into_iter()
        .map(|(half, at)| (Shape::cuboid(half).expect("valid box"), at, Cuboid::new(half)))
        .collect()
}

/// What a Kiln ray hit, as an index into the scene's bodies (`None`: the terrain).
fn kiln_answer(w: &Worlds, hit: Option<RayHit>) -> Option<(Option<usize>, f32)> {
    hit.map(|h| match h.target {
        QueryTarget::Body { body, .. } => (Some(w.kiln_bodies.iter().position(|b| *b == body).expect("a body")), h.t),
        QueryTarget::Terrain { .. } => (None, h.t),
    })
}

fn rapier_ray(rapier: &PhysicsWorld, ray: &Ray) -> Option<(ColliderHandle, f32)> {
    let r = rapier3d::prelude::Ray::new(ray.origin, ray.dir);
    rapier.cast_ray(&r, MAX_DISTANCE, true, RapierFilter::default())
}

fn rapier_answer(w: &Worlds, hit: Option<(ColliderHandle, f32)>) -> Option<(Option<usize>, f32)> {
    hit.map(|(h, t)| (w.rapier_bodies.iter().position(|c| *c == h), t))
}

/// Which terrain a Kiln overlap lists.
#[derive(Clone, Copy, PartialEq)]
enum Terrain {
    None,
    Once,
    Triangles,
}

fn kiln_overlap(
    kiln: &mut World,
    terrain: Terrain,
    pool: &ThreadPool,
    out: &mut Vec<QueryTarget>,
    probe: &(Shape, Isometry, Cuboid),
) {
    let filter = QueryFilter {
        terrain: terrain != Terrain::None,
        terrain_once: terrain == Terrain::Once,
        ..QueryFilter::default()
    };
    kiln.overlap_shape(&probe.0, &probe.1, &filter, pool.jobs(), out);
}

fn rapier_overlap(rapier: &PhysicsWorld, terrain: Option<ColliderHandle>, probe: &(Shape, Isometry, Cuboid)) -> usize {
    let pose = rapier3d::math::Pose::from_parts(probe.1.translation, probe.1.rotation);
    rapier
        .intersect_shape(pose, &probe.2, RapierFilter { exclude_collider: terrain, ..RapierFilter::default() })
        .count()
}

/// The distance along `ray` to a sphere, in f64: the reference for rays on which
/// the engines disagree.
fn sphere_distance_f64(ray: &Ray, center: Vec3, radius: f32) -> Option<f64> {
    let o = ray.origin.as_dvec3() - center.as_dvec3();
    let d = ray.dir.as_dvec3().normalize();
    let b = o.dot(d);
    let disc = b * b - (o.length_squared() - radius as f64 * radius as f64);
    (disc >= 0.0).then(|| -b - disc.sqrt())
}

/// Every answer of both engines, compared. Where they name the same sphere at
/// different distances, an f64 reference says which one is right.
fn parity(w: &mut Worlds, scene: &Scene, rays: &[Ray], probes: &[(Shape, Isometry, Cuboid)]) {
    let filter = QueryFilter::default();
    let (mut same, mut bodies, mut terrain, mut kiln_exact, mut rapier_exact) = (0, 0, 0, 0, 0);
    for ray in rays {
        let hit = w.kiln.cast_ray(ray, MAX_DISTANCE, &filter);
        let ours = kiln_answer(w, hit);
        let theirs = rapier_answer(w, rapier_ray(&w.rapier, ray));
        let agree = match (ours, theirs) {
            (None, None) => true,
            (Some((a, ta)), Some((b, tb))) => a == b && (ta - tb).abs() <= 1e-3,
            _ => false,
        };
        same += agree as usize;
        if let (false, Some((Some(i), ta)), Some((Some(j), tb))) = (agree, ours, theirs) {
            if let (true, SceneShape::Sphere { radius }) = (i == j, scene.bodies[i].shape) {
                let center = w.kiln.transform(w.kiln_bodies[i]).expect("live body").translation;
                if let Some(exact) = sphere_distance_f64(ray, center, radius) {
                    kiln_exact += ((ta as f64 - exact).abs() <= 1e-4) as usize;
                    rapier_exact += ((tb as f64 - exact).abs() <= 1e-4) as usize;
                }
            }
        }
        if !agree && std::env::var("KILN_QUERY_PARITY_LOG").is_ok() {
            println!("disagree {ray:?}: kiln {ours:?}, rapier {theirs:?}");
        }
        match ours {
            Some((Some(_), _)) => bodies += 1,
            Some((None, _)) => terrain += 1,
            None => {}
        }
    }
    let pool = ThreadPool::new(0);
    let (mut same_sets, mut found, mut out, mut all) = (0, 0, Vec::new(), Vec::new());
    for probe in probes {
        // Once and every triangle: the same set of objects.
        kiln_overlap(&mut w.kiln, Terrain::Triangles, &pool, &mut all, probe);
        kiln_overlap(&mut w.kiln, Terrain::Once, &pool, &mut out, probe);
        let terrain = all.iter().position(|t| matches!(t, QueryTarget::Terrain { .. })).unwrap_or(all.len());
        all.truncate(terrain + 1);
        assert_eq!(out, all, "terrain once lists the first triangle of the full listing");
        let ours: BTreeSet<Option<usize>> = out
            .iter()
            .map(|t| match t {
                QueryTarget::Body { body, .. } => w.kiln_bodies.iter().position(|b| b == body),
                QueryTarget::Terrain { .. } => None,
            })
            .collect();
        let pose = rapier3d::math::Pose::from_parts(probe.1.translation, probe.1.rotation);
        let theirs: BTreeSet<Option<usize>> = w
            .rapier
            .intersect_shape(pose, &probe.2, RapierFilter::default())
            .map(|(h, _)| w.rapier_bodies.iter().position(|c| *c == h))
            .collect();
        same_sets += (ours == theirs) as usize;
        found += ours.len();
    }
    println!(
        "parity world_queries: {same} of {} rays agree ({bodies} hit bodies, {terrain} the terrain); of the others, \
         {kiln_exact} hit the same sphere where Kiln is within 0.1 mm of the f64 distance and rapier {rapier_exact}; \
         {same_sets} of {} overlaps list the same bodies and terrain ({found} found)",
        rays.len(),
        probes.len()
    );
    assert!((same + kiln_exact) as f64 >= 0.999 * rays.len() as f64, "rays disagree");
    assert!(same_sets as f64 >= 0.99 * probes.len() as f64, "overlaps disagree");
    assert!(bodies > rays.len() / 10 && terrain > rays.len() / 10, "the rays must meet both bodies and terrain");
}

fn time_ns(f: impl FnOnce()) -> f64 {
    let start = std::time::Instant::now();
    f();
    start.elapsed().as_nanos() as f64
}

fn bench(c: &mut Criterion, w: &mut Worlds, rays: &[Ray], probes: &[(Shape, Isometry, Cuboid)]) {
    let filter = QueryFilter::default();
    let Worlds { kiln, rapier, rapier_terrain, .. } = w;
    let mut group = c.benchmark_group("world_queries_rays");
    group.sample_size(10);
    group.bench_function(BenchmarkId::new("kiln_single", 1), |b| {
        b.iter(|| rays.iter().filter(|r| kiln.cast_ray(r, MAX_DISTANCE, &filter).is_some()).count())
    });
    for workers in [1usize, 2] {
        let pool = ThreadPool::new(workers - 1);
        let mut hits = vec![None; rays.len()];
        group.bench_function(BenchmarkId::new("kiln_batch", workers), |b| {
            b.iter(|| kiln.cast_ray_batch(rays, MAX_DISTANCE, &filter, &mut hits, pool.jobs()))
        });
    }
    group.bench_function(BenchmarkId::new("rapier3d", 1), |b| {
        b.iter(|| rays.iter().filter(|r| rapier_ray(rapier, r).is_some()).count())
    });
    group.finish();

    let pool = ThreadPool::new(0);
    let mut out = Vec::new();
    // With the terrain, and the bodies alone (rapier's terrain collider excluded).
    let groups: [(&str, &[(&str, Terrain)]); 2] = [
        ("world_queries_overlaps", &[("kiln", Terrain::Once), ("kiln_triangles", Terrain::Triangles)]),
        ("world_queries_overlaps_bodies", &[("kiln", Terrain::None)]),
    ];
    for (group_name, rows) in groups {
        let mut group = c.benchmark_group(group_name);
        group.sample_size(10);
        for &(row, terrain) in rows {
            group.bench_function(BenchmarkId::new(row, 1), |b| {
                b.iter(|| {
                    let mut found = 0;
                    for p in probes {
                        kiln_overlap(kiln, terrain, &pool, &mut out, p);
                        found += out.len();
                    }
                    found
                })
            });
        }
        let exclude = (rows[0].1 == Terrain::None).then_some(*rapier_terrain);
        group.bench_function(BenchmarkId::new("rapier3d", 1), |b| {
            b.iter(|| probes.iter().map(|p| rapier_overlap(rapier, exclude, p)).sum::<usize>())
        });
        group.finish();
    }
}

/// Kiln and rapier in alternating rounds (see `report_paired`).
fn paired(w: &mut Worlds, rays: &[Ray], probes: &[(Shape, Isometry, Cuboid)]) {
    let filter = QueryFilter::default();
    let Worlds { kiln, rapier, .. } = w;
    let (pool, mut out) = (ThreadPool::new(0), Vec::new());
    let kiln = std::cell::RefCell::new(kiln);
    report_paired(
        "world_queries_rays",
        ("kiln_single/1", "rapier3d/1"),
        ROUNDS,
        || {
            time_ns(|| {
                rays.iter().for_each(|r| {
                    black_box(kiln.borrow_mut().cast_ray(r, MAX_DISTANCE, &filter));
                })
            })
        },
        || {
            time_ns(|| {
                rays.iter().for_each(|r| {
                    black_box(rapier_ray(rapier, r));
                })
            })
        },
    );
    report_paired(
        "world_queries_overlaps",
        ("kiln/1", "rapier3d/1"),
        ROUNDS,
        || {
            time_ns(|| {
                for p in probes {
                    kiln_overlap(&mut kiln.borrow_mut(), Terrain::Once, &pool, &mut out, p);
                    black_box(out.len());
                }
            })
        },
        || {
            time_ns(|| {
                probes.iter().for_each(|p| {
                    black_box(rapier_overlap(rapier, None, p));
                })
            })
        },
    );
}

fn main() {
    let scene = settled_rain();
    let mut w = worlds(&scene);
    let (rays, probes) = (world_query_rays(&scene, RAYS), probes());
    parity(&mut w, &scene, &rays, &probes);
    let mut c = Criterion::default().configure_from_args();
    bench(&mut c, &mut w, &rays, &probes);
    paired(&mut w, &rays, &probes);
    report_ratios(
        "world_queries_rays",
        &[("kiln_single/1", "rapier3d/1"), ("kiln_batch/1", "rapier3d/1"), ("kiln_batch/2", "kiln_batch/1")],
    );
    report_ratios("world_queries_overlaps", &[("kiln/1", "rapier3d/1"), ("kiln_triangles/1", "rapier3d/1")]);
    report_ratios("world_queries_overlaps_bodies", &[("kiln/1", "rapier3d/1")]);
    c.final_summary();
}
