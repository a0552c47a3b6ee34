//! A GPU volume following a changing scene: visibility refreshed where geometry
//! changed, against the volume left stale and against a bake from scratch. Runs
//! on the Vulkan device present (lavapipe without a GPU), validation on.
use super::*;
use crate::gi::scenes::{box_transform, open_room_boxes, room_wall};
use crate::gi::{CompressParams, ProbeGrid, SampleParams, OCT_TEXELS};
use glam::Vec3;

fn add_box(tracer: &mut RayTracer, lo: Vec3, hi: Vec3, id: u32) {
    let (positions, triangles) = box_mesh(((hi - lo) * 0.5).into());
    let mesh = tracer.add_mesh(&positions, &triangles).unwrap();
    tracer.add_instance(mesh, &box_transform(lo, hi), u32::MAX, id).unwrap();
}

fn luminance(e: [f32; 3]) -> f32 {
    0.2126 * e[0] + 0.7152 * e[1] + 0.0722 * e[2]
}

fn mean_sample(gi: &mut GiVolume, tracer: &mut RayTracer, points: &[(Vec3, Vec3)]) -> f32 {
    let at: Vec<(Vec3, Vec3, Vec3)> = points.iter().map(|&(p, n)| (p, n, n)).collect();
    let got = gi.sample(tracer, &at, &SampleParams::for_spacing(1.0)).unwrap();
    got.into_iter().map(luminance).sum::<f32>() / points.len() as f32
}

#[test]
fn gpu_refresh_stops_the_leak_through_a_new_wall_and_matches_a_fresh_bake() {
    let Some(gpu) = test_gpu("gpu_refresh_stops_the_leak_through_a_new_wall_and_matches_a_fresh_bake") else {
        return;
    };
    let mut tracer = RayTracer::with_gpu(gpu).unwrap();
    for (i, (lo, hi)) in open_room_boxes().into_iter().enumerate() {
        add_box(&mut tracer, lo, hi, i as u32);
    }
    let grid = ProbeGrid::covering(Vec3::new(-1.0, 0.0, -1.0), Vec3::new(6.0, 4.0, 5.0), 1.0).unwrap();
    let mut volumes: Vec<GiVolume> = (0..2).map(|_| GiVolume::new(&mut tracer, grid, None).unwrap()).collect();
    // Refused before a bake.
    assert!(matches!(volumes[0].refresh(&mut tracer, Vec3::ZERO, Vec3::ONE), Err(GpuError::InvalidInput(_))));
    for gi in &mut volumes {
        gi.params.hysteresis = 0.3;
        gi.probes_per_frame = gi.probe_count();
        gi.bake(&mut tracer).unwrap();
        for _ in 0..8 {
            gi.update(&mut tracer).unwrap();
        }
    }
    let (mut inner, mut outer) = (Vec::new(), Vec::new());
    for y in [0.3f32, 0.9, 1.5, 2.1] {
        for z in [1.1f32, 1.7, 2.3, 2.9] {
            inner.push((Vec3::new(3.4, y, z), Vec3::NEG_X));
            outer.push((Vec3::new(3.6, y, z), Vec3::X));
        }
    }
    let before = mean_sample(&mut volumes[0], &mut tracer, &inner);

    // The 0.2 m wall goes up; the first volume refreshes where it stands.
    let (wall_lo, wall_hi) = room_wall();
    add_box(&mut tracer, wall_lo, wall_hi, 99);
    for bad in [(Vec3::splat(f32::NAN), Vec3::ONE), (Vec3::ONE, Vec3::ZERO), (Vec3::ZERO, Vec3::splat(f32::INFINITY))] {
        assert!(matches!(volumes[0].refresh(&mut tracer, bad.0, bad.1), Err(GpuError::InvalidInput(_))));
    }
    let blocks_before = volumes[0].stats().blocks;
    let report = volumes[0].refresh(&mut tracer, wall_lo, wall_hi).unwrap();
    let n = volumes[0].probe_count();
    assert!(report.probes > 0 && report.probes < n / 2, "{report:?}");
    assert_eq!(volumes[0].stats().blocks, blocks_before + report.blocks.added - report.blocks.reclaimed, "{report:?}");
    for _ in 0..8 {
        for gi in &mut volumes {
            gi.update(&mut tracer).unwrap();
        }
    }
    let lit = mean_sample(&mut volumes[0], &mut tracer, &outer);
    let dark = mean_sample(&mut volumes[0], &mut tracer, &inner);
    let leak = mean_sample(&mut volumes[1], &mut tracer, &inner);
    eprintln!("inner face: {before:.4} open; {dark:.5} refreshed, {leak:.4} stale; outer {lit:.4}; {report:?}");
    assert!(before > 0.3 * lit, "the open room is lit: {before} vs {lit}");
    assert!(dark <= 0.05 * lit, "refreshed: {dark} vs {lit}");
    assert!(leak > 0.08 * lit && leak > 2.0 * dark, "stale: {leak} vs {lit}");

    // Every probe decodes as a bake of the closed room from scratch does, within
    // the compressor's tolerance of the same maps (twice: both are lossy).
    let mut fresh = GiVolume::new(&mut tracer, grid, None).unwrap();
    fresh.bake(&mut tracer).unwrap();
    let want = fresh.field(&mut tracer).unwrap().visibility.clone();
    let got = volumes[0].field(&mut tracer).unwrap().visibility.clone();
    got.check().unwrap();
    let tolerance = CompressParams::default().tolerance;
    let mut off = 0;
    for p in 0..n as usize {
        assert_eq!(got.is_dead(p), want.is_dead(p), "probe {p}");
        let (a, b) = (got.decode(p), want.decode(p));
        off +=
            (0..OCT_TEXELS).filter(|&t| (0..2).any(|c| (a.0[t][c] - b.0[t][c]).abs() > 2.0 * tolerance + 1e-4)).count();
    }
    // A grazing ray may land on the other side of an edge in one bake and not the other.
    assert!(off * 1000 <= n as usize * OCT_TEXELS, "{off} texels differ from a fresh bake");
    assert_validation_clean(tracer.gpu());
}

#[test]
fn instances_outside_the_occluder_mask_cast_no_visibility() {
    let Some(gpu) = test_gpu("instances_outside_the_occluder_mask_cast_no_visibility") else {
        return;
    };
    let mut tracer = RayTracer::with_gpu(gpu).unwrap();
    for (i, (lo, hi)) in open_room_boxes().into_iter().enumerate() {
        add_box(&mut tracer, lo, hi, i as u32);
    }
    let grid = ProbeGrid::covering(Vec3::new(-1.0, 0.0, -1.0), Vec3::new(6.0, 4.0, 5.0), 1.0).unwrap();
    let mut without = GiVolume::new(&mut tracer, grid, None).unwrap();
    without.bake(&mut tracer).unwrap();
    // A crate marked dynamic (mask bit 1) in the middle of the room.
    let dynamic = 0b10;
    let (positions, triangles) = box_mesh([0.4, 0.4, 0.4]);
    let mesh = tracer.add_mesh(&positions, &triangles).unwrap();
    let at = box_transform(Vec3::new(1.6, 0.6, 1.6), Vec3::new(2.4, 1.4, 2.4));
    tracer.add_instance(mesh, &at, dynamic, 50).unwrap();
    let mut masked = GiVolume::new(&mut tracer, grid, None).unwrap();
    masked.set_occluders(!dynamic);
    assert_eq!(masked.occluders(), !dynamic);
    masked.bake(&mut tracer).unwrap();
    let mut occluding = GiVolume::new(&mut tracer, grid, None).unwrap();
    occluding.bake(&mut tracer).unwrap();
    let (a, b, c) = (
        without.field(&mut tracer).unwrap().visibility.clone(),
        masked.field(&mut tracer).unwrap().visibility.clone(),
        occluding.field(&mut tracer).unwrap().visibility.clone(),
    );
    assert_eq!(a, b, "the dynamic crate casts no visibility");
    assert_ne!(a, c, "an occluding crate does");
    // The dynamic crate changes no probe's visibility: a refresh around it re-bakes
    // maps the dictionary already holds.
    let report = masked.refresh(&mut tracer, Vec3::new(1.6, 0.6, 1.6), Vec3::new(2.4, 1.4, 2.4)).unwrap();
    assert!(report.probes > 0, "{report:?}");
    assert_eq!((report.blocks.added, report.activated, report.deactivated), (0, 0, 0), "{report:?}");
    assert_validation_clean(tracer.gpu());
}
