//! `voxel_masks`: the bit broadphase on a generated 128x128-column hills terrain.
//!
//! * `voxel_masks_build`: building one chunk's masks from its 27-chunk neighbourhood
//!   of occupancy bits (per chunk, averaged over every surface chunk), against a naive
//!   per-voxel dilation that reads materials through the voxel map.
//! * `voxel_masks_query`: overlap queries of 1-voxel and 20-voxel boxes, Kiln's
//!   lookup-table XZ mask + one AND per slice, against a naive scan that tests the
//!   mask bit of every covered voxel.

use std::hint::black_box;

use criterion::{criterion_group, Criterion, Throughput};
use glam::{IVec3, Vec3};
use kiln::jobs::ThreadPool;
use kiln::math::Aabb;
use kiln::terrain::{
    build_mask, chunk_of, generate_hills, local_of, neighbourhood, ChunkMask, Masks, Overlap, Terrain,
};
use kiln_benches::{report_ratios, SplitMix};

fn terrain() -> Terrain {
    let pool = ThreadPool::new(0);
    let mut t = Terrain::new(1.0);
    generate_hills(&mut t, 128, 1);
    t.regenerate(pool.jobs());
    t
}

/// The naive reference: per voxel, look at its 27 neighbours' materials.
fn naive_mask(t: &Terrain, c: IVec3) -> Masks {
    let mut m = Masks::default();
    for y in 0..8 {
        for z in 0..8 {
            for x in 0..8 {
                let v = c * 8 + IVec3::new(x, y, z);
                let (mut solid, mut water) = (false, false);
                for d in 0..27 {
                    let n = t.get(v + IVec3::new(d % 3 - 1, d / 9 - 1, (d / 3) % 3 - 1));
                    solid |= n.is_solid();
                    water |= n.is_water();
                }
                let bit = 1u64 << (x + 8 * z);
                if solid {
                    m.solid[y as usize] |= bit;
                }
                if water {
                    m.water[y as usize] |= bit;
                }
            }
        }
    }
    m
}

fn build(c: &mut Criterion) {
    let t = terrain();
    let mut chunks: Vec<IVec3> =
        t.voxels().chunk_coords().filter(|&c| matches!(t.mask(c), Some(ChunkMask::Mixed(_)))).collect();
    chunks.sort_by_key(|c| c.to_array());
    let neighbourhoods: Vec<_> = chunks.iter().map(|&c| neighbourhood(t.voxels(), c)).collect();
    // The two builds agree.
    for (i, &c) in chunks.iter().enumerate().step_by(17) {
        match build_mask(&neighbourhoods[i]) {
            Some(ChunkMask::Mixed(m)) => assert_eq!(*m, naive_mask(&t, c)),
            other => panic!("chunk {c}: {other:?}"),
        }
    }
    let mut group = c.benchmark_group("voxel_masks_build");
    group.throughput(Throughput::Elements(chunks.len() as u64)).sample_size(20);
    group.bench_function("kiln", |b| {
        b.iter(|| {
            for n in &neighbourhoods {
                black_box(build_mask(n));
            }
        })
    });
    group.bench_function("kiln_with_gather", |b| {
        b.iter(|| {
            for &c in &chunks {
                black_box(build_mask(&neighbourhood(t.voxels(), c)));
            }
        })
    });
    group.bench_function("naive", |b| {
        b.iter(|| {
            for &c in &chunks {
                black_box(naive_mask(&t, c));
            }
        })
    });
    group.finish();
    println!("voxel_masks_build: {} surface chunks per iteration (divide the times by it)", chunks.len());
}

/// The naive query: every covered voxel's mask bit, one lookup each.
fn naive_overlap(t: &Terrain, aabb: &Aabb) -> Overlap {
    let Some((lo, hi)) = t.voxel_range(aabb) else { return Overlap::default() };
    let mut o = Overlap::default();
    for y in lo.y..=hi.y {
        for z in lo.z..=hi.z {
            for x in lo.x..=hi.x {
                let v = IVec3::new(x, y, z);
                if let Some(mask) = t.mask(chunk_of(v)) {
                    let l = local_of(v);
                    let (s, w) = mask.bit(l.x as usize, l.y as usize, l.z as usize);
                    o.solid |= s;
                    o.water |= w;
                }
            }
        }
    }
    o
}

fn query(c: &mut Criterion) {
    let t = terrain();
    for (name, size) in [("voxel_masks_query_1", 1.0f32), ("voxel_masks_query_20", 20.0)] {
        let mut rng = SplitMix(size as u64);
        // Boxes near the surface band (y 0..32), where both answers occur.
        let boxes: Vec<Aabb> = (0..1000)
            .map(|_| {
                let min = Vec3::new(rng.range(0.0, 108.0), rng.range(0.0, 32.0), rng.range(0.0, 108.0));
                Aabb::new(min, min + Vec3::splat(size))
            })
            .collect();
        for b in &boxes {
            assert_eq!(t.overlap(b), naive_overlap(&t, b));
        }
        let mut group = c.benchmark_group(name);
        group.throughput(Throughput::Elements(boxes.len() as u64)).sample_size(20);
        group.bench_function("kiln", |bench| {
            bench.iter(|| boxes.iter().map(|b| t.overlap(b).any() as u32).sum::<u32>())
        });
        group.bench_function("naive", |bench| {
            bench.iter(|| boxes.iter().map(|b| naive_overlap(&t, b).any() as u32).sum::<u32>())
        });
        group.finish();
    }
}

criterion_group!(benches, build, query);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    report_ratios("voxel_masks_build", &[("kiln", "naive"), ("kiln_with_gather", "naive")]);
    report_ratios("voxel_masks_query_1", &[("kiln", "naive")]);
    report_ratios("voxel_masks_query_20", &[("kiln", "naive")]);
}
