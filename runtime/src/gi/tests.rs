//! Whole-field behaviour of the CPU reference: light leaks, drift, the bake.

use super::scenes::{cpu_tlas, walled_room};
use super::update::{visibility_map, visibility_rays};
use super::*;
use crate::gpu::{trace_cpu, GpuHit};
use crate::math::Vec3;

fn room_field(dilation: f32) -> (crate::gpu::Scene, ProbeField) {
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
