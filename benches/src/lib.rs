//! Helpers shared by the benches: reading criterion's estimates back to report each
//! Kiln measurement as a ratio against its peer from the same run.

use std::path::PathBuf;

use kiln::jobs::Jobs;
use kiln::terrain::Terrain;

/// Where criterion writes its results (`$CARGO_TARGET_DIR/criterion` or `target/criterion`).
pub fn criterion_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..").join("target"));
    target.join("criterion")
}

/// Mean time in nanoseconds of `group/function` from the latest run, if present.
pub fn mean_ns(group: &str, function: &str) -> Option<f64> {
    let path = criterion_dir().join(group).join(function).join("new").join("estimates.json");
    let text = std::fs::read_to_string(path).ok()?;
    let mean = &text[text.find("\"mean\"")?..];
    let value = &mean[mean.find("\"point_estimate\":")? + "\"point_estimate\":".len()..];
    let end = value.find([',', '}'])?;
    value[..end].trim().parse().ok()
}

/// Prints `ours / peer` for each pair; the lines the performance table is built from.
pub fn report_ratios(group: &str, pairs: &[(&str, &str)]) {
    for (ours, peer) in pairs {
        match (mean_ns(group, ours), mean_ns(group, peer)) {
            (Some(a), Some(b)) => {
                println!("ratio {group}: {ours} / {peer} = {:.3}  ({} vs {})", a / b, format_ns(a), format_ns(b))
            }
            _ => println!("ratio {group}: {ours} / {peer} = n/a (not measured in this run)"),
        }
    }
}

/// Times Kiln (`ours`) and its peer in `rounds` alternating rounds, each closure
/// returning one round's time in nanoseconds, and prints the median of the rounds'
/// ratios in [`report_ratios`]' format (so the report's table carries it), with
/// the median times and the rounds' spread. criterion measures one after the other,
/// so a change in the host's load between the two moves its ratio; a pair of
/// rounds shares the load it ran under.
pub fn report_paired(
    group: &str,
    (ours_name, peer_name): (&str, &str),
    rounds: usize,
    mut ours: impl FnMut() -> f64,
    mut peer: impl FnMut() -> f64,
) {
    let (mut ratios, mut a, mut b) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds.max(1) {
        let (x, y) = (ours(), peer());
        ratios.push(x / y);
        a.push(x);
        b.push(y);
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (ratio, x, y) = (median(&mut ratios), median(&mut a), median(&mut b));
    println!(
        "ratio {group}: {ours_name} / {peer_name} = {ratio:.3}  ({} vs {}; rounds {:.3} .. {:.3})",
        format_ns(x),
        format_ns(y),
        ratios[0],
        ratios[ratios.len() - 1]
    );
}

pub fn format_ns(ns: f64) -> String {
    match ns {
        ns if ns >= 1e6 => format!("{:.2} ms", ns / 1e6),
        ns if ns >= 1e3 => format!("{:.2} µs", ns / 1e3),
        ns => format!("{ns:.1} ns"),
    }
}

/// A deterministic op costing roughly 200 ns per element on a 2020s core.
#[inline]
pub fn heavy_op(x: f32) -> f32 {
    let mut v = x;
    for _ in 0..48 {
        v = (v * 1.000_1 + 0.5).sqrt();
    }
    v
}

/// The trivial op.
#[inline]
pub fn light_op(x: f32) -> f32 {
    x * 1.5 + 0.25
}

/// SplitMix64, for deterministic bench scenes.
pub struct SplitMix(pub u64);

impl SplitMix {
    pub fn next_f32(&mut self) -> f32 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) >> 40) as f32 / (1u64 << 24) as f32
    }

    pub fn range(&mut self, lo: f32, hi: f32) -> f32 {
        lo + (hi - lo) * self.next_f32()
    }
}

/// The `kdtree` bench's rays: `count` random rays from 16 to 30 m above a terrain
/// `extent` metres wide, pointing down-ish.
pub fn terrain_rays(count: usize, extent: f32, seed: u64) -> Vec<kiln::math::Ray> {
    let mut rng = SplitMix(seed);
    (0..count)
        .map(|_| {
            let origin = kiln::math::Vec3::new(rng.range(0.0, extent), rng.range(16.0, 30.0), rng.range(0.0, extent));
            let dir =
                kiln::math::Vec3::new(rng.range(-1.0, 1.0), rng.range(-1.0, -0.2), rng.range(-1.0, 1.0)).normalize();
            kiln::math::Ray::new(origin, dir)
        })
        .collect()
}

/// Every chunk coordinate in the terrain's geometry bounds, in x, then z, then y order.
pub fn geometry_chunks(terrain: &Terrain) -> Vec<kiln::math::IVec3> {
    let Some((lo, hi)) = terrain.geometry_bounds() else { return Vec::new() };
    let mut coords = Vec::new();
    for y in lo.y..=hi.y {
        for z in lo.z..=hi.z {
            for x in lo.x..=hi.x {
                coords.push(kiln::math::IVec3::new(x, y, z));
            }
        }
    }
    coords
}

/// Meshes every chunk of the world's terrain that can have triangles, before a timed
/// window: what rapier's trimesh of the same terrain has done before its clock
/// starts, so both engines step with their terrain collision data built. Kiln
/// otherwise meshes a chunk when a body first touches it, inside the step.
pub fn prepare_terrain(world: &mut kiln::physics::World, jobs: Jobs) {
    if let Some(terrain) = world.terrain_mut() {
        let coords = geometry_chunks(terrain);
        terrain.prepare_meshes(&coords, jobs);
    }
}

/// The `world_queries` scene: `rain` with 4,096 bodies stepped 4 s on one worker
/// until they lie on the hills, then turned into static bodies at those poses.
pub fn settled_rain() -> kiln::physics::scenes::Scene {
    let pool = kiln::jobs::ThreadPool::new(1);
    let mut scene = kiln::physics::scenes::rain(4096);
    let (mut world, ids) = scene.build();
    for _ in 0..240 {
        world.step(1.0 / 60.0, pool.jobs()).expect("valid step");
    }
    for (body, id) in scene.bodies.iter_mut().zip(&ids) {
        let xf = world.transform(*id).expect("live body");
        body.position = xf.translation;
        body.rotation = xf.rotation;
        body.motion = kiln::physics::MotionType::Static;
        body.velocity = kiln::math::Vec3::ZERO;
        body.angular_velocity = kiln::math::Vec3::ZERO;
    }
    scene
}

/// The `world_queries` rays over `scene` (see [`settled_rain`]): `count` rays from
/// 55–70 m up; every other one aims at a random body (within a metre of its
/// centre), as picking and shooting do, the rest point down within about 30° of
/// vertical.
pub fn world_query_rays(scene: &kiln::physics::scenes::Scene, count: usize) -> Vec<kiln::math::Ray> {
    use kiln::math::{Ray, Vec3};
    let mut rng = SplitMix(41);
    (0..count)
        .map(|i| {
            let origin = Vec3::new(rng.range(8.0, 248.0), rng.range(55.0, 70.0), rng.range(8.0, 248.0));
            let dir = if i % 2 == 0 {
                let k = ((rng.next_f32() * scene.bodies.len() as f32) as usize).min(scene.bodies.len() - 1);
                let aim = scene.bodies[k].position + Vec3::new(rng.range(-1.0, 1.0), 0.0, rng.range(-1.0, 1.0));
                let origin_above = aim + Vec3::new(rng.range(-30.0, 30.0), 0.0, rng.range(-30.0, 30.0));
                return Ray::new(
                    Vec3::new(origin_above.x, origin.y, origin_above.z),
                    (aim - origin_above.with_y(origin.y)).normalize(),
                );
            } else {
                Vec3::new(rng.range(-0.6, 0.6), -1.0, rng.range(-0.6, 0.6)).normalize()
            };
            Ray::new(origin, dir)
        })
        .collect()
}

/// The `world_queries` overlap boxes: `count` cubes (half-extents and poses) of
/// half-extent 0.5–2 m at random poses near the ground of [`settled_rain`].
pub fn world_query_boxes(count: usize) -> Vec<(kiln::math::Vec3, kiln::math::Isometry)> {
    use kiln::math::{Isometry, Quat, Vec3};
    let mut rng = SplitMix(43);
    (0..count)
        .map(|_| {
            let half = Vec3::splat(rng.range(0.5, 2.0));
            let at = Isometry::new(
                Vec3::new(rng.range(8.0, 248.0), rng.range(0.0, 30.0), rng.range(8.0, 248.0)),
                Quat::from_rotation_y(rng.range(0.0, 6.0)),
            );
            (half, at)
        })
        .collect()
}
