//! `octree_pick`: editor picks over 100 octrees of depth 6 (a 10 x 10 field of 8 m
//! octrees holding rolling terrain at 12.5 cm cells, uniform regions merged), the
//! same 500 camera rays for all three in one group:
//!
//! - `kiln`: the dynamic tree over the octrees and the ordered (Revelles) traversal;
//! - `linear_scan`: the reference's approach, a loop over every octree (sphere then
//!   box test) and all 8 children tested at every octant;
//! - `brute_force`: every solid leaf expanded to a box once, all boxes intersected
//!   per ray.
//!
//! The bench first checks that all three return identical picks.

use criterion::{criterion_group, Criterion, Throughput};
use glam::Vec3;
use kiln::spatial::octree::{pick_linear_scan, BruteForce, Octree, OctreeSet, PickRay, OCTREE_MAX_DEPTH};
use kiln_benches::{report_ratios, SplitMix};

const DEPTH: u32 = 6;
const SIZE: f32 = 8.0;
const FIELD: usize = 10;
const RAYS: usize = 500;

fn height(x: f32, z: f32) -> f32 {
    3.0 + 1.6 * (x * 0.31).sin() + 1.2 * (z * 0.23).cos() + 0.4 * (x * 1.7 + z * 1.3).sin()
}

/// Pre-order codes of the cube `(k, depth)` of an octree at `origin`: solid below
/// the height field at the deepest level, uniform octants merged into one leaf.
fn codes(origin: Vec3, k: [u32; 3], depth: u32, out: &mut Vec<u8>) -> Option<u8> {
    if depth == DEPTH {
        let cell = SIZE / (1 << DEPTH) as f32;
        let c = origin + (Vec3::new(k[0] as f32, k[1] as f32, k[2] as f32) + 0.5) * cell;
        return Some((c.y < height(c.x, c.z)) as u8);
    }
    let start = out.len();
    out.push(2);
    let mut leaves = [None; 8];
    for (i, leaf) in leaves.iter_mut().enumerate() {
        let child = std::array::from_fn(|a| 2 * k[a] + (i as u32 >> a & 1));
        let before = out.len();
        *leaf = codes(origin, child, depth + 1, out);
        if let Some(code) = *leaf {
            if out.len() == before {
                out.push(code);
            }
        }
    }
    if leaves.iter().all(|l| l.is_some() && *l == leaves[0]) {
        out.truncate(start);
        return leaves[0];
    }
    None
}

fn scene() -> OctreeSet {
    let mut set = OctreeSet::new();
    for i in 0..FIELD * FIELD {
        let origin = Vec3::new((i % FIELD) as f32 * SIZE, 0.0, (i / FIELD) as f32 * SIZE);
        let mut c = Vec::new();
        if let Some(leaf) = codes(origin, [0; 3], 0, &mut c) {
            c = vec![leaf];
        }
        let bytes: Vec<u8> =
            c.chunks(4).map(|q| q.iter().enumerate().fold(0u8, |b, (j, &v)| b | v << (2 * j))).collect();
        set.insert(Octree::from_bytes(origin, SIZE, &bytes).expect("valid description"));
    }
    set
}

/// Cameras above the field looking down at random points on it.
fn rays() -> Vec<PickRay> {
    let mut rng = SplitMix(9);
    let extent = FIELD as f32 * SIZE;
    (0..RAYS)
        .map(|_| {
            let eye = Vec3::new(rng.range(0.0, extent), rng.range(10.0, 25.0), rng.range(0.0, extent));
            let target = Vec3::new(rng.range(0.0, extent), 0.0, rng.range(0.0, extent));
            PickRay::new(eye, target - eye).expect("valid ray")
        })
        .collect()
}

fn octree_pick(c: &mut Criterion) {
    let set = scene();
    set.validate();
    let cubes: usize = set.ids().map(|id| set.get(id).unwrap().cube_count()).sum();
    let rays = rays();
    let depth = OCTREE_MAX_DEPTH as u32;
    let kiln: Vec<_> = rays.iter().map(|r| set.pick(r, f32::INFINITY, depth)).collect();
    let linear: Vec<_> = rays.iter().map(|r| pick_linear_scan(&set, r, f32::INFINITY, depth)).collect();
    let boxes = BruteForce::new(&set, depth);
    let brute: Vec<_> = rays.iter().map(|r| boxes.pick(&set, r, f32::INFINITY)).collect();
    assert_eq!(kiln, brute, "kiln and brute force disagree");
    assert_eq!(linear, brute, "linear scan and brute force disagree");
    println!(
        "octree_pick: {} octrees, {cubes} cubes, {} solid leaves, tree height {}; {} of {RAYS} rays hit",
        set.len(),
        boxes.len(),
        set.tree_height(),
        kiln.iter().flatten().count()
    );

    let mut group = c.benchmark_group("octree_pick");
    group.throughput(Throughput::Elements(RAYS as u64)).sample_size(10);
    group.bench_function("kiln", |b| {
        b.iter(|| rays.iter().filter_map(|r| set.pick(r, f32::INFINITY, depth)).map(|h| h.1.distance).sum::<f32>())
    });
    group.bench_function("linear_scan", |b| {
        b.iter(|| {
            rays.iter()
                .filter_map(|r| pick_linear_scan(&set, r, f32::INFINITY, depth))
                .map(|h| h.1.distance)
                .sum::<f32>()
        })
    });
    group.bench_function("brute_force", |b| {
        b.iter(|| rays.iter().filter_map(|r| boxes.pick(&set, r, f32::INFINITY)).map(|h| h.1.distance).sum::<f32>())
    });
    group.finish();
}

criterion_group!(benches, octree_pick);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    report_ratios("octree_pick", &[("kiln", "linear_scan"), ("kiln", "brute_force")]);
}
