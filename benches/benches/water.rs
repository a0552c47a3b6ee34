//! `water`: how much of each body is under the terrain's water, for 2,000 boxes,
//! balls, capsules and hulls settled afloat in a 48 m pool of voxel water:
//!
//! - `kiln`: `World::submerged` per body — the exact volume by surface integrals over
//!   the shape's faces clipped to merged water columns (the computation the step's
//!   water pass runs twice per body);
//! - `sampled`: a naive reference — 12³ points over each shape's box, each tested
//!   against the shape and the water voxel it falls in.
//!
//! The bench first prints how far the sampled volumes stray from the exact ones.

use criterion::{criterion_group, Criterion, Throughput};
use glam::{IVec3, Quat, Vec3};
use kiln::jobs::ThreadPool;
use kiln::math::Isometry;
use kiln::physics::{BodyDef, BodyId, ShapeDef, World, WorldDef};
use kiln::shapes::{Polytope, Shape};
use kiln::terrain::{Material, Terrain};
use kiln_benches::{report_ratios, SplitMix};

const BODIES: usize = 2000;
/// Sample points per axis of the naive reference.
const SAMPLES: usize = 12;

/// The pool, its bodies dropped in and stepped 10 s so they float.
fn scene() -> (World, Vec<BodyId>) {
    let mut world = World::new(WorldDef::default());
    let mut terrain = Terrain::new(1.0);
    terrain.fill(IVec3::new(-24, -7, -24), IVec3::new(24, -6, 24), Material::ROCK);
    terrain.fill(IVec3::new(-24, -5, -24), IVec3::new(24, -1, 24), Material::WATER);
    world.set_terrain(terrain);
    let mut rng = SplitMix(5);
    let hull: Vec<Vec3> = (0..24)
        .map(|_| Vec3::new(rng.range(-1.0, 1.0), rng.range(-1.0, 1.0), rng.range(-1.0, 1.0)).normalize() * 0.45)
        .collect();
    let ids = (0..BODIES)
        .map(|i| {
            let at = Vec3::new(rng.range(-22.0, 22.0), rng.range(0.5, 8.0), rng.range(-22.0, 22.0));
            let q = Quat::from_euler(glam::EulerRot::XYZ, rng.range(-3.0, 3.0), rng.range(-3.0, 3.0), 0.0);
            let id = world.create_body(&BodyDef { transform: Isometry::new(at, q), ..BodyDef::default() }).unwrap();
            let shape = match i % 4 {
                0 => Shape::cuboid(Vec3::new(0.5, 0.3, 0.4)).unwrap(),
                1 => Shape::sphere(Vec3::ZERO, 0.4).unwrap(),
                2 => Shape::capsule(Vec3::new(0.0, -0.4, 0.0), Vec3::new(0.0, 0.4, 0.0), 0.25).unwrap(),
                _ => Shape::hull(&hull).unwrap(),
            };
            let density = rng.range(400.0, 900.0);
            world.add_shape(id, shape, ShapeDef { density, ..ShapeDef::default() }).unwrap();
            id
        })
        .collect();
    let pool = ThreadPool::new(1);
    for _ in 0..600 {
        world.step(1.0 / 60.0, pool.jobs()).unwrap();
    }
    (world, ids)
}

/// Whether world point `p` is inside `shape` placed by `xf`.
fn inside(shape: &Shape, xf: &Isometry, p: Vec3) -> bool {
    let l = xf.inverse_transform_point(p);
    match shape {
        Shape::Box { half } => l.abs().cmple(*half).all(),
        Shape::Sphere { center, radius } => l.distance_squared(*center) <= radius * radius,
        Shape::Capsule { a, b, radius } => {
            let ab = *b - *a;
            let t = ((l - *a).dot(ab) / ab.length_squared().max(1e-12)).clamp(0.0, 1.0);
            l.distance_squared(*a + ab * t) <= radius * radius
        }
        Shape::Hull(h) => (0..h.face_count()).all(|f| h.plane(f).distance(l) <= 0.0),
        _ => false,
    }
}

/// The naive reference: the volume of `id`'s shapes inside water voxels by point
/// sampling over each shape's box.
fn sampled(world: &World, id: BodyId) -> f32 {
    let (terrain, xf) = (world.terrain().unwrap(), world.transform(id).unwrap());
    let mut volume = 0.0;
    for s in world.bodies().shapes(id).unwrap() {
        let placed = xf.mul(&s.def.pose);
        let b = s.shape.aabb(&placed);
        let step = (b.max - b.min) / SAMPLES as f32;
        let cell = step.x * step.y * step.z;
        for i in 0..SAMPLES {
            for j in 0..SAMPLES {
                for k in 0..SAMPLES {
                    let p = b.min + step * Vec3::new(i as f32 + 0.5, j as f32 + 0.5, k as f32 + 0.5);
                    let wet = terrain.voxels().get((p / terrain.voxel_size()).floor().as_ivec3()).is_water();
                    if wet && inside(&s.shape, &placed, p) {
                        volume += cell;
                    }
                }
            }
        }
    }
    volume
}

fn water(c: &mut Criterion) {
    let (mut world, ids) = scene();
    let exact: Vec<f32> = ids.iter().map(|&id| world.submerged(id).unwrap().volume).collect();
    let naive: Vec<f32> = ids.iter().map(|&id| sampled(&world, id)).collect();
    let body: Vec<f32> = ids.iter().map(|&id| world.submerged(id).unwrap().body_volume).collect();
    let afloat = exact.iter().zip(&body).filter(|(e, b)| **e > 0.0 && **e < 0.999 * **b).count();
    let worst = exact.iter().zip(&naive).zip(&body).map(|((e, n), b)| (e - n).abs() / b).fold(0.0f32, f32::max);
    let mean = exact.iter().zip(&naive).zip(&body).map(|((e, n), b)| (e - n).abs() / b).sum::<f32>() / ids.len() as f32;
    println!(
        "water: {} bodies, {afloat} partly submerged; sampling {SAMPLES}³ strays from the exact volume by {:.2}% of \
         the body's volume on average, {:.2}% at worst",
        ids.len(),
        100.0 * mean,
        100.0 * worst
    );

    let mut group = c.benchmark_group("water");
    group.throughput(Throughput::Elements(ids.len() as u64)).sample_size(10);
    group.bench_function("kiln", |b| b.iter(|| ids.iter().map(|&id| world.submerged(id).unwrap().volume).sum::<f32>()));
    group.bench_function("sampled", |b| b.iter(|| ids.iter().map(|&id| sampled(&world, id)).sum::<f32>()));
    group.finish();
}

criterion_group!(benches, water);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    report_ratios("water", &[("kiln", "sampled")]);
}
