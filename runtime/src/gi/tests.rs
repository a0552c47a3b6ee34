//! Whole-field behaviour of the CPU reference: light leaks, drift, the bake.

use super::scenes::{cpu_tlas, walled_room};
use super::update::{visibility_map, visibility_rays};
use super::*;
use crate::math::Vec3;
use crate::raytrace::{trace_cpu, GpuHit};

fn room_field(dilation: f32) -> (crate::raytrace::Scene, ProbeField) {
    let scene = walled_room();
    let grid = ProbeGrid::covering(Vec3::new(-3.0, 0.0, -3.0), Vec3::new(7.0, 4.0, 7.0), 1.0).unwrap();
    let volume = ProbeVolume::around(grid, &scene.world_triangles(), dilation);
    (scene, ProbeField::new(volume))
}

fn luminance(e: [f32; 3]) -> f32 {
    0.2126 * e[0] + 0.7152 * e[1] + 0.0722 * e[2]
}

#[test]
fn light_does_not_leak_through_a_thin_wall_with_visibility_and_does_without() {
    let (scene, mut field) = room_field(1.5);
    field.volume.validate();
    let tlas = cpu_tlas(&scene);
    let view = scene.trace_scene(&tlas);
    bake_visibility(&mut field, &view, &CompressParams::default(), 64);
    let lighting = GiLighting::default();
    let mut params = UpdateParams::for_spacing(1.0);
    params.hysteresis = 0.3;
    let all: Vec<u32> = (0..field.volume.probe_count() as u32).collect();
    for frame in 0..8 {
        update_irradiance(&mut field, &view, &lighting, &params, frame, &all);
    }

    // Points just under the roof, facing down into the room (the roof is sunlit
    // above), and just inside the east wall, facing west (its outside faces the
    // sun): each cell they sample straddles the 10 cm wall.
    let mut points = Vec::new();
    for a in [1.2f32, 1.7, 2.3, 2.8] {
        for b in [1.1f32, 1.6, 2.4, 2.9] {
            points.push((Vec3::new(a, 2.4, b), Vec3::NEG_Y));
            points.push((Vec3::new(3.4, b - 0.9, a), Vec3::NEG_X));
        }
    }
    let on = SampleParams::for_spacing(1.0);
    let off = SampleParams { visibility: false, ..on };
    let (mut dark_on, mut dark_off) = (0.0, 0.0);
    for &(p, n) in &points {
        dark_on += luminance(field.sample(p, n, n, &on));
        dark_off += luminance(field.sample(p, n, n, &off));
    }
    dark_on /= points.len() as f32;
    dark_off /= points.len() as f32;
    // The same points mirrored outside: what the leak brings in.
    let mut outside = 0.0;
    for &(p, n) in &points {
        let mirrored = if n == Vec3::NEG_Y { Vec3::new(p.x, 2.6, p.z) } else { Vec3::new(3.6, p.y, p.z) };
        outside += luminance(field.sample(mirrored, -n, -n, &on));
    }
    outside /= points.len() as f32;
    eprintln!("dark side: {dark_on:.5} with visibility, {dark_off:.5} without; lit side {outside:.4}");
    assert!(outside > 0.5, "the outside is lit: {outside}");
    assert!(dark_off > 0.02 * outside, "without visibility light leaks in: {dark_off} vs {outside}");
    assert!(dark_on < 0.05 * dark_off, "with visibility it does not: {dark_on} vs {dark_off}");
}

#[test]
fn irradiance_returns_to_its_level_after_a_bright_light_goes_on_and_off() {
    let scene = walled_room();
    let grid = ProbeGrid::covering(Vec3::new(5.0, 0.0, 5.0), Vec3::new(7.0, 2.0, 7.0), 1.0).unwrap();
    let mut field = ProbeField::new(ProbeVolume::dense(grid));
    let tlas = cpu_tlas(&scene);
    let view = scene.trace_scene(&tlas);
    bake_visibility(&mut field, &view, &CompressParams::default(), 8);
    let mut lighting = GiLighting { sun_irradiance: [0.0; 3], ..GiLighting::default() };
    let mut params = UpdateParams::for_spacing(1.0);
    params.rays_per_probe = 64;
    let all: Vec<u32> = (0..field.volume.probe_count() as u32).collect();
    let normals = [Vec3::Y, Vec3::NEG_Y, Vec3::X, Vec3::NEG_X, Vec3::Z, Vec3::NEG_Z];
    let mut frame = 0;
    // Mean irradiance of every probe in six directions over `frames` updates.
    let mut run = |field: &mut ProbeField, lighting: &GiLighting, frames: u32, measure: bool| {
        let mut sum = vec![0.0f64; all.len() * normals.len()];
        for _ in 0..frames {
            update_irradiance(field, &view, lighting, &params, frame, &all);
            frame += 1;
            if measure {
                for &p in &all {
                    let sh = field.probe_sh(p as usize);
                    for (k, n) in normals.iter().enumerate() {
                        sum[p as usize * normals.len() + k] += luminance(sh.irradiance(*n)) as f64;
                    }
                }
            }
        }
        sum.iter().map(|s| s / frames as f64).collect::<Vec<f64>>()
    };
    run(&mut field, &lighting, 300, false);
    let before = run(&mut field, &lighting, 150, true);
    lighting.sun_irradiance = [400.0, 380.0, 350.0];
    let lit = run(&mut field, &lighting, 200, true);
    lighting.sun_irradiance = [0.0; 3];
    run(&mut field, &lighting, 400, false);
    let after = run(&mut field, &lighting, 150, true);
    let total = |v: &[f64]| v.iter().sum::<f64>();
    assert!(total(&lit) > 3.0 * total(&before), "the light is on: {} vs {}", total(&lit), total(&before));
    let mut worst = 0.0f64;
    for i in 0..before.len() {
        worst = worst.max((after[i] - before[i]).abs() / before[i].max(1e-3));
    }
    eprintln!("largest change after the light went on and off: {:.3}%", worst * 100.0);
    assert!(worst < 0.02, "irradiance drifted by {:.2}%", worst * 100.0);
}

#[test]
fn baked_visibility_reproduces_every_texel_and_empty_space_is_dead() {
    let scene = walled_room();
    // A dense volume reaching 4.5 m above the roof: those probes see nothing
    // within the clip distance.
    let grid = ProbeGrid::covering(Vec3::new(-1.0, 0.0, -1.0), Vec3::new(5.0, 7.0, 5.0), 1.0).unwrap();
    let mut field = ProbeField::new(ProbeVolume::dense(grid));
    let tlas = cpu_tlas(&scene);
    let view = scene.trace_scene(&tlas);
    let params = CompressParams::default();
    bake_visibility(&mut field, &view, &params, 16);
    let clip = grid.clip_distance();
    let mut dead_expected = 0;
    for p in 0..field.volume.probe_count() {
        let hits: Vec<GpuHit> =
            visibility_rays(&field, &[p as u32]).iter().map(|r| trace_cpu(&view, r, false)).collect();
        let raw = visibility_map(&hits, clip);
        let decoded = field.visibility.decode(p);
        for t in 0..OCT_TEXELS {
            for ch in 0..2 {
                assert!((raw.0[t][ch] - decoded.0[t][ch]).abs() <= params.tolerance, "probe {p} texel {t}");
            }
        }
        if raw == VisibilityMap::clipped() {
            dead_expected += 1;
            assert!(field.visibility.is_dead(p));
        }
        // Inside the room the roof is 0.5 m up; inside a wall would be depth 0.
        let pos = field.volume.probe_position(p);
        if pos == Vec3::new(2.0, 2.0, 2.0) {
            let up = field.visibility_at(p, Vec3::Y)[0] * clip;
            assert!((up - 0.45).abs() < 0.02, "{up}");
        }
    }
    assert!(dead_expected >= 36, "{dead_expected} probes see nothing");
    assert!(field.visibility.blocks.len() < QUADRANTS * (field.volume.probe_count() - dead_expected));
}

/// One light level every probe stores: band 0 only (band 1 nearly 0: the packed
/// ratio 1024 / 2047 is not exactly a half).
fn uniform_sh() -> PackedSh {
    PackedSh::pack(&ShRgb { c: [[1.0, 0.5, 0.25], [0.0; 3], [0.0; 3], [0.0; 3]] })
}

/// Dead probes weigh nothing and keep no irradiance: on a 2 x 2 x 2 cell whose
/// top four probes are dead, a sample is the live probes' value alone (a dead
/// probe counted as black would darken it); with all eight dead it is 0; before a
/// bake every probe is live. A bake keeps the irradiance of the probes live before
/// and after it, in rank order, and starts probes that come alive unlit.
#[test]
fn dead_probes_keep_no_irradiance_and_weigh_nothing() {
    let grid = ProbeGrid::covering(Vec3::ZERO, Vec3::ONE, 1.0).unwrap();
    let mut field = ProbeField::new(ProbeVolume::dense(grid));
    assert_eq!((field.irradiance.len(), field.visibility.live.count()), (8, 8), "unbaked: all live");
    let centre = (Vec3::splat(0.5), Vec3::Y, Vec3::Y);
    let params = SampleParams { bias: 0.0, visibility: false };
    let sample = |f: &ProbeField| f.sample(centre.0, centre.1, centre.2, &params);
    assert_eq!(sample(&field), [0.0; 3], "unlit");
    let lit = uniform_sh();
    let want = lit.unpack().irradiance(Vec3::Y);
    field.irradiance = vec![lit; 8];
    let all_live = sample(&field);
    assert!((0..3).all(|c| (all_live[c] - want[c]).abs() <= 1e-6 * want[c]), "{all_live:?} vs {want:?}");

    // Probes 0..4 (y = 0) see something; 4..8 (y = 1) see nothing.
    let mut near = VisibilityMap::clipped();
    near.0[0] = [0.5, 0.25];
    let maps: Vec<VisibilityMap> =
        (0..8).map(|p| if p < 4 { near.clone() } else { VisibilityMap::clipped() }).collect();
    let order = ProbeOrder::linear(8, 8);
    field.irradiance = (0..8).map(|p| PackedSh([p + 1, 0, 0, 0])).collect();
    field.set_visibility(compress(&maps, &order, &CompressParams::default()));
    assert_eq!(field.visibility.dead_count(), 4);
    assert_eq!(field.irradiance, (0..4).map(|p| PackedSh([p + 1, 0, 0, 0])).collect::<Vec<_>>());
    assert_eq!((4..8).map(|p| field.probe_irradiance(p)).collect::<Vec<_>>(), [None; 4]);
    assert_eq!(field.probe_sh(6), ShRgb::default());
    field.irradiance = vec![lit; 4];
    let half_live = sample(&field);
    assert!((0..3).all(|c| (half_live[c] - want[c]).abs() <= 1e-6 * want[c]), "{half_live:?} vs {want:?}");
    assert_eq!(field.live_round_robin(0, 3), [0, 1, 2]);
    assert_eq!(field.live_round_robin(3, 3), [3, 0, 1], "from a live probe, wrapping round");
    assert_eq!(field.live_round_robin(5, 9), [0, 1, 2, 3], "from a dead one; each probe once");
    assert_eq!(field.live_round_robin(8, 1), [0]);

    // Probe 5 comes alive and probe 1 dies: 0, 2 and 3 keep their words.
    field.irradiance = (0..4).map(|p| PackedSh([p + 1, 0, 0, 0])).collect();
    let mut swapped = maps.clone();
    swapped.swap(1, 5);
    field.set_visibility(compress(&swapped, &order, &CompressParams::default()));
    let words: Vec<Option<PackedSh>> = (0..8).map(|p| field.probe_irradiance(p)).collect();
    let w = |v: u32| Some(PackedSh([v, 0, 0, 0]));
    assert_eq!(words, [w(1), None, w(3), w(4), None, Some(UNLIT), None, None]);

    field.set_visibility(CompressedVisibility::dead(8));
    assert!(field.irradiance.is_empty());
    assert_eq!(sample(&field), [0.0; 3], "no live probe: 0, as RTXGI");
    assert!(field.live_round_robin(0, 4).is_empty());
    assert_eq!(field.bytes(), field.volume.bytes() + field.visibility.bytes(), "nothing per dead probe");
}

/// Skipping dead probes loses no surface: on each generated scene, at both
/// spacings, five points of every triangle inside the grid (its centre, three
/// toward its corners, one toward an edge; facing either way) have a
/// live probe that weighs in. With every live probe storing one light level, the
/// sample is that level exactly where one does, and 0 where none does.
#[test]
fn every_surface_point_of_the_scenes_has_a_live_probe() {
    use super::scenes::{low_poly_town, probe_terrain, voxel_hills};
    let lit = uniform_sh();
    let scenes = [("smooth", probe_terrain(14, 3)), ("town", low_poly_town(16, 3)), ("hills", voxel_hills(16, 3))];
    for (name, (scene, lo, hi)) in scenes {
        let tlas = cpu_tlas(&scene);
        let view = scene.trace_scene(&tlas);
        let triangles = scene.world_triangles();
        for (spacing, dilation) in [(0.5, 3.0), (1.0, 1.5)] {
            let grid = ProbeGrid::covering(lo, hi, spacing).unwrap();
            let mut field = ProbeField::new(ProbeVolume::around(grid, &triangles, dilation));
            bake_visibility(&mut field, &view, &CompressParams::default(), 64);
            let (live, n) = (field.visibility.live.count(), field.volume.probe_count());
            assert_eq!(field.irradiance.len(), live);
            field.irradiance.fill(lit);
            let far = grid.position(grid.dims.map(|d| d - 1));
            let (mut checked, mut lost) = (0, Vec::new());
            let inside = [[1.0, 1.0, 1.0], [4.0, 1.0, 1.0], [1.0, 4.0, 1.0], [1.0, 1.0, 4.0], [4.5, 4.5, 1.0]];
            let points = triangles.iter().flat_map(|tri| {
                inside.map(|b: [f32; 3]| (tri, (tri[0] * b[0] + tri[1] * b[1] + tri[2] * b[2]) / (b[0] + b[1] + b[2])))
            });
            for (tri, centre) in points {
                let normal = (tri[1] - tri[0]).cross(tri[2] - tri[0]).normalize_or_zero();
                if normal == Vec3::ZERO || centre.cmplt(grid.origin).any() || centre.cmpgt(far).any() {
                    continue;
                }
                for n in [normal, -normal] {
                    for visibility in [true, false] {
                        let params = SampleParams { visibility, ..SampleParams::for_spacing(spacing) };
                        let e = field.sample(centre, n, n, &params);
                        let want = lit.unpack().irradiance(n);
                        checked += 1;
                        if (0..3).any(|c| (e[c] - want[c]).abs() > 1e-5 * want[c]) {
                            lost.push((centre, n, e));
                        }
                    }
                }
            }
            eprintln!("{name} {spacing} m: {live} live of {n} probes; {checked} samples, {} lost", lost.len());
            assert!(checked > 1000, "{name}: {checked} samples");
            assert!(live < n || spacing > 0.5, "{name}: a 3 m dilation leaves probes dead at {spacing} m");
            assert!(lost.is_empty(), "{name} at {spacing} m: no live probe for {:?}", &lost[..lost.len().min(4)]);
        }
    }
}
