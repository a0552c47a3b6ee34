//! Runs the `world_queries` bench's box overlaps (or rays) over its settled `rain`
//! scene, a few rounds, and prints each round's time and a fingerprint of the
//! answers: a target for `perf` and callgrind that skips criterion and rapier.
//! Overlaps are also timed one by one and split by whether the answer names the
//! terrain (most boxes touch none of it, and cost a fraction of those that do).
//!
//! ```text
//! cargo build --release -p kiln-benches --example world_query
//! valgrind --tool=callgrind --toggle-collect='*World*overlap_shape*' \
//!     target/release/examples/world_query 1 overlaps
//! ```
//!
//! Arguments: rounds (5), then `overlaps` (the terrain once; the default),
//! `triangles` (every terrain triangle), `bodies` (no terrain) or `rays` (the
//! bench's 100,000 closest-hit rays, one at a time). The rays are cast once before the rounds, as the bench's come before its
//! overlaps, so the terrain's region trees are built.

use std::time::Instant;

use kiln::jobs::ThreadPool;
use kiln::math::Isometry;
use kiln::physics::{QueryFilter, QueryTarget};
use kiln::shapes::Shape;
use kiln_benches::{prepare_terrain, settled_rain, world_query_boxes, world_query_rays};

fn main() {
    let rounds: usize = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(5);
    let what = std::env::args().nth(2).unwrap_or_else(|| "overlaps".into());
    let pool = ThreadPool::new(0);
    // The bench's scene: rain settled 4 s, rebuilt static where it lay.
    let scene = settled_rain();
    let (mut world, _) = scene.build();
    prepare_terrain(&mut world, pool.jobs());
    world.step(1.0 / 60.0, pool.jobs()).expect("valid step");

    let probes: Vec<(Shape, Isometry)> =
        world_query_boxes(10_000).into_iter().map(|(half, at)| (Shape::cuboid(half).expect("valid box"), at)).collect();
    let rays = world_query_rays(&scene, 100_000);
    let filter = QueryFilter { terrain: what != "bodies", terrain_once: what == "overlaps", ..QueryFilter::default() };
    let mut out = Vec::new();
    // As in the bench, whose rays come first: the terrain's region trees are built.
    for r in &rays {
        world.cast_ray(r, 200.0, &filter);
    }
    for _ in 0..rounds {
        let start = Instant::now();
        let (mut print, mut found) = (0u64, 0usize);
        // Per answer without and with the terrain: microseconds and queries.
        let mut split = [(0.0f64, 0usize); 2];
        if what == "rays" {
            for r in &rays {
                if let Some(h) = world.cast_ray(r, 200.0, &filter) {
                    found += 1;
                    print = print.wrapping_mul(31).wrapping_add(h.t.to_bits() as u64);
                }
            }
        } else {
            for (shape, at) in &probes {
                let one = Instant::now();
                world.overlap_shape(shape, at, &filter, pool.jobs(), &mut out);
                let took = one.elapsed().as_secs_f64() * 1e6;
                let side = &mut split[out.iter().any(|t| matches!(t, QueryTarget::Terrain { .. })) as usize];
                (side.0, side.1) = (side.0 + took, side.1 + 1);
                found += out.len();
                for t in &out {
                    let k = match *t {
                        QueryTarget::Body { body, shape } => (body.index as u64) << 8 | shape as u64,
                        QueryTarget::Terrain { chunk, triangle } => {
                            (chunk.x as u64) << 40 ^ (chunk.y as u64) << 20 ^ chunk.z as u64 ^ (triangle as u64) << 50
                        }
                    };
                    print = print.wrapping_mul(31).wrapping_add(k);
                }
            }
        }
        if what != "rays" {
            let mean = |(us, n): (f64, usize)| us / n.max(1) as f64;
            println!(
                "  no terrain in the answer: {} queries, {:.3} us each; the terrain: {} queries, {:.3} us each",
                split[0].1,
                mean(split[0]),
                split[1].1,
                mean(split[1])
            );
        }
        let n = if what == "rays" { rays.len() } else { probes.len() };
        println!(
            "{what}: {:.3} us a query, {:.2} found a query, fingerprint {print:016x}",
            start.elapsed().as_secs_f64() * 1e6 / n as f64,
            found as f64 / n as f64
        );
    }
    if let Some(t) = world.terrain() {
        println!("region trees: {:?}", t.region_stats());
    }
}
