//! `narrowphase`: Kiln's narrowphase queries against parry3d's equivalents (through
//! rapier3d's re-export) on the same poses, in the same groups:
//!
//! - `gjk_hull32`: GJK distance between two 32-vertex hulls (points on an ellipsoid),
//!   256 random separated poses;
//! - `box_box_manifold`: box–box contact manifolds, 256 resting or tilted poses with
//!   up to 2 cm of overlap;
//! - `capsule_triangle_manifold`: capsule–triangle manifolds, 256 poses touching a
//!   large triangle;
//! - `hull{32,64}_{touching,separated}`: contact manifolds between two hulls of 32
//!   or 64 points (on a sphere), 256 poses each either overlapping by up to 2 cm or
//!   apart by 5 to 50 cm. `kiln_full` and `parry3d` start from nothing (parry's
//!   manifold cleared: GJK from scratch); `kiln_coherent` and `parry3d_coherent`
//!   keep what the same pair found a step earlier, 1 cm and 0.6° away (Kiln's
//!   separating-axis cache, parry's manifold and its GJK direction), as a world's
//!   narrowphase does;
//! - `character_move`: one character move (gather, slide, step, probe) on the hills
//!   terrain; no peer, reported as moves per second.
//!
//! parry's persistent manifolds skip recomputation when the pose barely changed; the
//! bench clears them before each query so both libraries do the full work (but for
//! the coherent hull variants above).

use criterion::{criterion_group, Criterion, Throughput};
use glam::{Quat, Vec3};
use kiln::character::{Character, CharacterDef, TerrainWorld};
use kiln::collide::{collide, collide_coherent, distance, Proxy, SatCache};
use kiln::jobs::ThreadPool;
use kiln::math::{Isometry, Ray};
use kiln::shapes::{ConvexHull, Shape};
use kiln::terrain::{generate_hills, Terrain};
use kiln_benches::{report_ratios, SplitMix};
use rapier3d::parry::math::Pose;
use rapier3d::parry::query::{self, ContactManifold};
use rapier3d::parry::shape::{Capsule, ConvexPolyhedron, Cuboid, Triangle};

const POSES: usize = 256;

fn pose(rng: &mut SplitMix, spread: Vec3, tilt: f32) -> Isometry {
    let t = Vec3::new(rng.range(-1.0, 1.0), rng.range(-1.0, 1.0), rng.range(-1.0, 1.0)) * spread;
    let axis = Vec3::new(rng.range(-1.0, 1.0), rng.range(-1.0, 1.0), rng.range(-1.0, 1.0)).normalize_or(Vec3::Y);
    Isometry::new(t, Quat::from_axis_angle(axis, rng.range(-tilt, tilt)))
}

fn parry_pose(xf: &Isometry) -> Pose {
    Pose::from_parts(xf.translation, xf.rotation)
}

fn gjk_hulls(c: &mut Criterion) {
    let mut rng = SplitMix(7);
    let mut cloud = || -> Vec<Vec3> {
        (0..32)
            .map(|_| {
                Vec3::new(rng.range(-1.0, 1.0), rng.range(-1.0, 1.0), rng.range(-1.0, 1.0)).normalize_or(Vec3::X)
                    * Vec3::new(1.0, 0.7, 0.5)
            })
            .collect()
    };
    let (pa, pb) = (cloud(), cloud());
    let (ha, hb) = (ConvexHull::new(&pa).unwrap(), ConvexHull::new(&pb).unwrap());
    let (qa, qb) = (ConvexPolyhedron::from_convex_hull(&pa).unwrap(), ConvexPolyhedron::from_convex_hull(&pb).unwrap());
    let mut rng = SplitMix(11);
    let poses: Vec<(Isometry, Isometry)> = (0..POSES)
        .map(|_| {
            let a = pose(&mut rng, Vec3::splat(1.0), 3.0);
            let dir = Vec3::new(rng.range(-1.0, 1.0), rng.range(-1.0, 1.0), rng.range(-1.0, 1.0)).normalize_or(Vec3::X);
            let b =
                Isometry { translation: a.translation + dir * rng.range(2.2, 3.0), ..pose(&mut rng, Vec3::ZERO, 3.0) };
            (a, b)
        })
        .collect();
    let (ka, kb) = (Proxy { points: ha.vertices(), radius: 0.0 }, Proxy { points: hb.vertices(), radius: 0.0 });
    let ours: f32 = poses.iter().map(|(a, b)| distance(&ka, a, &kb, b).distance).sum();
    let theirs: f32 =
        poses.iter().map(|(a, b)| query::distance(&parry_pose(a), &qa, &parry_pose(b), &qb).unwrap().distance).sum();
    println!(
        "gjk_hull32: hull vertices {} / {}; mean distance kiln {:.5}, parry {:.5}",
        ha.vertices().len(),
        hb.vertices().len(),
        ours / POSES as f32,
        theirs / POSES as f32
    );
    let mut group = c.benchmark_group("gjk_hull32");
    group.throughput(Throughput::Elements(POSES as u64));
    group.bench_function("kiln", |b| {
        b.iter(|| poses.iter().map(|(a, b)| distance(&ka, a, &kb, b).distance).sum::<f32>())
    });
    group.bench_function("parry3d", |b| {
        b.iter(|| {
            poses
                .iter()
                .map(|(a, b)| query::distance(&parry_pose(a), &qa, &parry_pose(b), &qb).unwrap().distance)
                .sum::<f32>()
        })
    });
    group.finish();
}

fn box_box(c: &mut Criterion) {
    let half = Vec3::new(0.5, 0.4, 0.6);
    let shape = Shape::cuboid(half).unwrap();
    let cuboid = Cuboid::new(half);
    let mut rng = SplitMix(3);
    // B above A, resting face down (small tilt) or tipped on an edge.
    let poses: Vec<(Isometry, Isometry)> = (0..POSES)
        .map(|i| {
            let a = pose(&mut rng, Vec3::splat(0.5), 0.3);
            let tilt = if i % 2 == 0 { 0.05 } else { 0.8 };
            let local = pose(&mut rng, Vec3::new(0.4, 0.0, 0.4), tilt);
            let lift = Isometry::from_translation(Vec3::new(0.0, 0.8 + rng.range(-0.02, 0.0), 0.0));
            (a, a.mul(&lift).mul(&local))
        })
        .collect();
    let mut manifold = ContactManifold::<(), ()>::new();
    let parry_points = |manifold: &mut ContactManifold<(), ()>, a: &Isometry, b: &Isometry| {
        manifold.points.clear();
        let pos12 = parry_pose(&a.inv_mul(b));
        query::details::contact_manifold_cuboid_cuboid(&pos12, &cuboid, &cuboid, 0.02, manifold);
        manifold.points.len()
    };
    let ours: usize = poses.iter().map(|(a, b)| collide(&shape, a, &shape, b, 0.02).count).sum();
    let theirs: usize = poses.iter().map(|(a, b)| parry_points(&mut manifold, a, b)).sum();
    println!("box_box_manifold: contact points kiln {ours}, parry {theirs} over {POSES} pairs");
    let mut group = c.benchmark_group("box_box_manifold");
    group.throughput(Throughput::Elements(POSES as u64));
    group.bench_function("kiln", |bch| {
        bch.iter(|| poses.iter().map(|(a, b)| collide(&shape, a, &shape, b, 0.02).count).sum::<usize>())
    });
    group.bench_function("parry3d", |bch| {
        bch.iter(|| poses.iter().map(|(a, b)| parry_points(&mut manifold, a, b)).sum::<usize>())
    });
    group.finish();
}

fn capsule_triangle(c: &mut Criterion) {
    let (ta, tb, tc) = (Vec3::new(-4.0, 0.0, -4.0), Vec3::new(0.0, 0.0, 4.0), Vec3::new(4.0, 0.0, -4.0));
    let tri_shape = Shape::triangle([ta, tb, tc]).unwrap();
    let tri = Triangle::new(ta, tb, tc);
    let (p, q, r) = (Vec3::new(-0.4, 0.0, 0.0), Vec3::new(0.4, 0.0, 0.0), 0.3);
    let capsule_shape = Shape::capsule(p, q, r).unwrap();
    let capsule = Capsule::new(p, q, r);
    let mut rng = SplitMix(5);
    let poses: Vec<Isometry> = (0..POSES)
        .map(|i| {
            let tilt = if i % 2 == 0 { 0.02 } else { 1.2 };
            let mut xf = pose(&mut rng, Vec3::new(1.5, 0.0, 1.5), tilt);
            // Lift so the lowest point of the capsule sits just around the plane.
            let low = (xf.transform_point(p).y).min(xf.transform_point(q).y);
            xf.translation.y += r - low + rng.range(-0.02, 0.01);
            xf
        })
        .collect();
    let mut manifold = ContactManifold::<(), ()>::new();
    let parry_points = |manifold: &mut ContactManifold<(), ()>, xf: &Isometry| {
        manifold.points.clear();
        // Triangle first, as a world static would be.
        let pos12 = parry_pose(xf);
        query::details::contact_manifold_pfm_pfm(
            &pos12,
            &tri,
            0.0,
            None,
            &capsule.segment,
            capsule.radius,
            None,
            0.02,
            manifold,
        );
        manifold.points.len()
    };
    let ours: usize =
        poses.iter().map(|xf| collide(&tri_shape, &Isometry::IDENTITY, &capsule_shape, xf, 0.02).count).sum();
    let theirs: usize = poses.iter().map(|xf| parry_points(&mut manifold, xf)).sum();
    println!("capsule_triangle_manifold: contact points kiln {ours}, parry {theirs} over {POSES} pairs");
    let mut group = c.benchmark_group("capsule_triangle_manifold");
    group.throughput(Throughput::Elements(POSES as u64));
    group.bench_function("kiln", |b| {
        b.iter(|| {
            poses
                .iter()
                .map(|xf| collide(&tri_shape, &Isometry::IDENTITY, &capsule_shape, xf, 0.02).count)
                .sum::<usize>()
        })
    });
    group.bench_function("parry3d", |b| {
        b.iter(|| poses.iter().map(|xf| parry_points(&mut manifold, xf)).sum::<usize>())
    });
    group.finish();
}

/// `n` points on the unit sphere.
fn sphere_cloud(rng: &mut SplitMix, n: usize) -> Vec<Vec3> {
    (0..n)
        .map(|_| loop {
            let p = Vec3::new(rng.range(-1.0, 1.0), rng.range(-1.0, 1.0), rng.range(-1.0, 1.0));
            if p.length_squared() > 0.01 && p.length_squared() <= 1.0 {
                break p.normalize();
            }
        })
        .collect()
}

/// Hull pairs of `points` points in `POSES` poses, `gap` (m) apart along a random
/// direction (negative: overlapping), each with the pose a step earlier.
struct HullPairs {
    shapes: (Shape, Shape),
    parry: (ConvexPolyhedron, ConvexPolyhedron),
    /// (A, B now, B a step earlier).
    poses: Vec<(Isometry, Isometry, Isometry)>,
}

impl HullPairs {
    fn new(points: usize, gap: (f32, f32), seed: u64) -> HullPairs {
        let mut rng = SplitMix(seed);
        let (pa, pb) = (sphere_cloud(&mut rng, points), sphere_cloud(&mut rng, points));
        let (ha, hb) = (ConvexHull::new(&pa).unwrap(), ConvexHull::new(&pb).unwrap());
        let parry =
            (ConvexPolyhedron::from_convex_hull(&pa).unwrap(), ConvexPolyhedron::from_convex_hull(&pb).unwrap());
        let (ka, kb) = (Proxy { points: ha.vertices(), radius: 0.0 }, Proxy { points: hb.vertices(), radius: 0.0 });
        let poses = (0..POSES)
            .map(|_| {
                let a = pose(&mut rng, Vec3::splat(1.0), 3.0);
                let dir = Vec3::new(rng.range(-1.0, 1.0), rng.range(-1.0, 1.0), rng.range(-1.0, 1.0));
                let dir = dir.normalize_or(Vec3::X);
                let turn = pose(&mut rng, Vec3::ZERO, 3.0).rotation;
                let at = |d: f32| Isometry::new(a.translation + dir * d, turn);
                // The centre distance where the hulls just touch, by bisection on GJK.
                let (mut lo, mut hi) = (0.0f32, 2.5f32);
                for _ in 0..40 {
                    let mid = 0.5 * (lo + hi);
                    let d = distance(&ka, &a, &kb, &at(mid));
                    if d.overlap || d.distance <= 0.0 {
                        lo = mid;
                    } else {
                        hi = mid;
                    }
                }
                let b = at(hi + rng.range(gap.0, gap.1));
                let back = Vec3::new(rng.range(-1.0, 1.0), rng.range(-1.0, 1.0), rng.range(-1.0, 1.0)) * 0.006;
                let earlier = Isometry::new(
                    b.translation + back,
                    Quat::from_axis_angle(dir.any_orthonormal_vector(), 0.01) * turn,
                );
                (a, b, earlier)
            })
            .collect();
        HullPairs { shapes: (Shape::Hull(ha.into()), Shape::Hull(hb.into())), parry, poses }
    }
}

fn hull_manifolds(c: &mut Criterion) {
    const MARGIN: f32 = 0.02;
    for points in [32, 64] {
        for (kind, gap) in [("touching", (-0.02, 0.0)), ("separated", (0.05, 0.5))] {
            let pairs = HullPairs::new(points, gap, 17 + points as u64);
            let (sa, sb) = (&pairs.shapes.0, &pairs.shapes.1);
            let (qa, qb) = (&pairs.parry.0, &pairs.parry.1);
            let parry_points = |manifold: &mut ContactManifold<(), ()>, a: &Isometry, b: &Isometry| {
                let pos12 = parry_pose(&a.inv_mul(b));
                query::details::contact_manifold_pfm_pfm(&pos12, qa, 0.0, None, qb, 0.0, None, MARGIN, manifold);
                manifold.points.len()
            };
            // What each pair kept from the step before.
            let kiln_before: Vec<SatCache> = pairs
                .poses
                .iter()
                .map(|(a, _, earlier)| {
                    let mut cache = SatCache::default();
                    collide_coherent(sa, a, sb, earlier, MARGIN, &mut cache);
                    cache
                })
                .collect();
            let parry_before: Vec<ContactManifold<(), ()>> = pairs
                .poses
                .iter()
                .map(|(a, _, earlier)| {
                    let mut manifold = ContactManifold::new();
                    parry_points(&mut manifold, a, earlier);
                    manifold
                })
                .collect();
            let ours: usize = pairs.poses.iter().map(|(a, b, _)| collide(sa, a, sb, b, MARGIN).count).sum();
            let mut fresh = ContactManifold::<(), ()>::new();
            let theirs: usize = pairs
                .poses
                .iter()
                .map(|(a, b, _)| {
                    fresh.clear();
                    parry_points(&mut fresh, a, b)
                })
                .sum();
            let group_name = format!("hull{points}_{kind}");
            println!("{group_name}: contact points kiln {ours}, parry {theirs} over {POSES} pairs");
            let mut group = c.benchmark_group(&group_name);
            group.throughput(Throughput::Elements(POSES as u64));
            group.bench_function("kiln_full", |bch| {
                bch.iter(|| pairs.poses.iter().map(|(a, b, _)| collide(sa, a, sb, b, MARGIN).count).sum::<usize>())
            });
            group.bench_function("kiln_coherent", |bch| {
                bch.iter(|| {
                    let mut count = 0;
                    for ((a, b, _), kept) in pairs.poses.iter().zip(&kiln_before) {
                        let mut cache = *kept;
                        count += collide_coherent(sa, a, sb, b, MARGIN, &mut cache).map_or(0, |(m, _)| m.count);
                    }
                    count
                })
            });
            group.bench_function("parry3d", |bch| {
                bch.iter(|| {
                    let mut manifold = ContactManifold::<(), ()>::new();
                    pairs
                        .poses
                        .iter()
                        .map(|(a, b, _)| {
                            manifold.clear();
                            parry_points(&mut manifold, a, b)
                        })
                        .sum::<usize>()
                })
            });
            group.bench_function("parry3d_coherent", |bch| {
                let mut manifolds = parry_before.clone();
                bch.iter(|| {
                    // Each round starts from the kept manifolds (its own updates undone).
                    manifolds.clone_from_slice(&parry_before);
                    let mut count = 0;
                    for ((a, b, _), manifold) in pairs.poses.iter().zip(&mut manifolds) {
                        count += parry_points(manifold, a, b);
                    }
                    count
                })
            });
            group.finish();
        }
    }
}

fn character_moves(c: &mut Criterion) {
    let pool = ThreadPool::new(1);
    let mut terrain = Terrain::new(1.0);
    generate_hills(&mut terrain, 96, 1);
    terrain.regenerate(pool.jobs());
    let def = CharacterDef::default();
    let start = Vec3::new(20.0, 0.0, 20.0);
    let ground = terrain.ray_cast(&Ray::new(start + Vec3::Y * 60.0, -Vec3::Y), 100.0).unwrap().point.y;
    let spawn = Vec3::new(start.x, ground + def.radius + def.height * 0.5 + 0.1, start.z);
    let mut character = Character::new(def, spawn).unwrap();
    let shapes: Vec<(Shape, Isometry)> = Vec::new();
    let mut step = 0u32;
    let mut group = c.benchmark_group("character_move");
    group.throughput(Throughput::Elements(1));
    group.bench_function("kiln", |b| {
        b.iter(|| {
            // Chase a point round a 10 m circle over the hills, with gravity.
            step = step.wrapping_add(1);
            let angle = (step % 6283) as f32 * 0.01;
            let target = Vec3::new(30.0 + 10.0 * angle.cos(), 0.0, 30.0 + 10.0 * angle.sin());
            let to = target - character.position();
            let d = Vec3::new(to.x, 0.0, to.z).normalize_or_zero() * 0.1 - Vec3::Y * 0.1;
            let mut world = TerrainWorld { terrain: &mut terrain, jobs: pool.jobs(), shapes: &shapes };
            character.move_by(d, &mut world).unwrap().moved
        })
    });
    group.finish();
    println!("character_move: walked to {} (grounded {})", character.position(), character.is_grounded());
}

criterion_group!(benches, gjk_hulls, box_box, capsule_triangle, hull_manifolds, character_moves);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    report_ratios("gjk_hull32", &[("kiln", "parry3d")]);
    report_ratios("box_box_manifold", &[("kiln", "parry3d")]);
    report_ratios("capsule_triangle_manifold", &[("kiln", "parry3d")]);
    for group in ["hull32_touching", "hull32_separated", "hull64_touching", "hull64_separated"] {
        report_ratios(group, &[("kiln_full", "parry3d"), ("kiln_coherent", "parry3d_coherent")]);
    }
}
