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

/// A tracer over the open room (instance i = box i) and the dense grid around it,
/// or `None` without a device (see `test_gpu`).
fn open_room_tracer(test: &str) -> Option<(RayTracer, ProbeGrid)> {
    let mut tracer = RayTracer::with_gpu(test_gpu(test)?).unwrap();
    for (i, (lo, hi)) in open_room_boxes().into_iter().enumerate() {
        add_box(&mut tracer, lo, hi, i as u32);
    }
    let grid = ProbeGrid::covering(Vec3::new(-1.0, 0.0, -1.0), Vec3::new(6.0, 4.0, 5.0), 1.0).unwrap();
    Some((tracer, grid))
}

#[test]
fn gpu_refresh_stops_the_leak_through_a_new_wall_and_matches_a_fresh_bake() {
    let Some((mut tracer, grid)) =
        open_room_tracer("gpu_refresh_stops_the_leak_through_a_new_wall_and_matches_a_fresh_bake")
    else {
        return;
    };
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
    let Some((mut tracer, grid)) = open_room_tracer("instances_outside_the_occluder_mask_cast_no_visibility") else {
        return;
    };
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

/// A ground slab 2.5 m thick and a 0.4 m wall from x = 1.85 to 2.25: probes of
/// column x = 2 start inside the wall, nearer its west face; probes below
/// y = -0.5 inside the ground.
fn wall_and_ground() -> Vec<(Vec3, Vec3)> {
    vec![
        (Vec3::new(-6.0, -3.0, -6.0), Vec3::new(10.0, -0.5, 10.0)),
        (Vec3::new(1.85, -0.5, -3.0), Vec3::new(2.25, 3.0, 7.0)),
    ]
}

#[test]
fn gpu_relocation_and_classification_match_the_cpu_reference() {
    use crate::gi::scenes::{boxes_scene, cpu_tlas};
    use crate::gi::{bake_visibility_with, update_irradiance, ProbeField, ProbeRules, ProbeVolume};
    let Some(gpu) = test_gpu("gpu_relocation_and_classification_match_the_cpu_reference") else {
        return;
    };
    let mut tracer = RayTracer::with_gpu(gpu).unwrap();
    for (i, (lo, hi)) in wall_and_ground().into_iter().enumerate() {
        add_box(&mut tracer, lo, hi, i as u32);
    }
    let scene = boxes_scene(&wall_and_ground());
    let tlas = cpu_tlas(&scene);
    let view = scene.trace_scene(&tlas);
    let grid = ProbeGrid::covering(Vec3::new(0.0, -2.0, 0.0), Vec3::new(4.0, 2.0, 4.0), 1.0).unwrap();
    let rules = ProbeRules::default();
    let mut cpu = ProbeField::new(ProbeVolume::dense(grid));
    bake_visibility_with(&mut cpu, &view, &CompressParams::default(), MAX_COMPRESS_BATCH as u32, &rules);
    let mut gi = GiVolume::new(&mut tracer, grid, None).unwrap();
    gi.rules = rules;
    gi.bake(&mut tracer).unwrap();
    let got = gi.field(&mut tracer).unwrap().clone();
    let n = cpu.volume.probe_count();
    let (mut moved, mut inactive) = (0, 0);
    for p in 0..n {
        let (a, b) = (cpu.probe_position(p), got.probe_position(p));
        assert!((a - b).length() <= 1e-3, "probe {p}: {a} on the CPU, {b} on the GPU");
        assert_eq!(cpu.is_active(p), got.is_active(p), "probe {p} at {a}");
        moved += usize::from(cpu.offsets.code(p) != [0; 3]);
        inactive += usize::from(!cpu.is_active(p));
    }
    eprintln!("{n} probes: {moved} moved, {inactive} inactive");
    // The wall's column above the ground moved out and is active; the probes in
    // the ground are inactive.
    for p in 0..n {
        let (grid_point, at) = (cpu.volume.probe_position(p), cpu.probe_position(p));
        if grid_point.x == 2.0 && grid_point.y >= 0.0 {
            assert!(at.x < 1.85 && cpu.is_active(p), "probe {p} at {at}");
        }
        if grid_point.y < -0.5 {
            assert!(!cpu.is_active(p), "probe {p} in the ground at {at}");
        }
    }
    assert!(moved >= 15 && inactive >= 50, "{moved} moved, {inactive} inactive");
    assert_eq!(got.offsets.moved_count(), moved);

    // The update traces from the moved positions and shades its bounce by sampling
    // the moved probes: the GPU's irradiance equals the CPU's.
    let probes = cpu.live_round_robin(0, u32::MAX);
    let mut params = crate::gi::UpdateParams::for_spacing(1.0);
    params.hysteresis = 0.5;
    let lighting = crate::gi::GiLighting::default();
    let mut field = GpuProbeField::new(tracer.gpu_mut(), &cpu).unwrap();
    field.upload_offsets(tracer.gpu_mut(), &cpu.offsets).unwrap();
    let mut updater = GiUpdater::new(&tracer).unwrap();
    for frame in 0..4 {
        update_irradiance(&mut cpu, &view, &lighting, &params, frame, &probes);
        updater.update(&mut tracer, &field, &lighting, &params, frame, &probes).unwrap();
    }
    let irradiance = field.read_irradiance(tracer.gpu_mut()).unwrap();
    let on_gpu = crate::gi::ProbeField { irradiance, ..cpu.clone() };
    let (mut worst, mut sum, mut count) = (0.0f32, 0.0f64, 0);
    for &p in &probes {
        for d in [Vec3::X, Vec3::NEG_X, Vec3::Y, Vec3::NEG_Y, Vec3::Z, Vec3::NEG_Z] {
            let (a, b) = (cpu.probe_sh(p as usize).irradiance(d), on_gpu.probe_sh(p as usize).irradiance(d));
            for ch in 0..3 {
                let rel = (a[ch] - b[ch]).abs() / a[ch].abs().max(0.05);
                worst = worst.max(rel);
                sum += f64::from(rel);
                count += 1;
            }
        }
    }
    let mean = sum / count as f64;
    eprintln!("irradiance of {} relocated probes: mean difference {mean:.2e}, worst {worst:.2e}", probes.len());
    assert!(mean <= 1e-3 && worst <= 0.05, "mean {mean}, worst {worst}");
    assert_validation_clean(tracer.gpu());
}

#[test]
fn a_gpu_volume_scrolls_with_the_cpu_reference_and_updates_through_its_ring() {
    use crate::gi::scroll::scroll_by;
    use crate::gi::{update_irradiance, GiLighting, ProbeRules, UpdateParams};
    let Some((mut tracer, _)) =
        open_room_tracer("a_gpu_volume_scrolls_with_the_cpu_reference_and_updates_through_its_ring")
    else {
        return;
    };
    let grid = ProbeGrid::covering(Vec3::new(-1.5, 0.5, -1.5), Vec3::new(3.5, 2.5, 2.5), 1.0).unwrap();
    let mut placed = GiVolume::new(&mut tracer, grid, Some(1.5)).unwrap();
    placed.bake(&mut tracer).unwrap();
    assert!(matches!(placed.scroll_by(&mut tracer, [1, 0, 0]), Err(GpuError::InvalidInput(_))), "placed: refused");
    let mut gi = GiVolume::new(&mut tracer, grid, None).unwrap();
    assert!(matches!(gi.scroll_by(&mut tracer, [1, 0, 0]), Err(GpuError::InvalidInput(_))), "unbaked: refused");
    gi.rules = ProbeRules::default();
    gi.params.hysteresis = 0.5;
    gi.probes_per_frame = gi.probe_count();
    gi.bake(&mut tracer).unwrap();
    for _ in 0..2 {
        gi.update(&mut tracer).unwrap();
    }
    let points = [Vec3::new(1.3, 1.2, 0.7), Vec3::new(0.6, 0.9, 1.4)];
    let at: Vec<(Vec3, Vec3, Vec3)> = points.iter().map(|&p| (p, Vec3::Y, Vec3::Y)).collect();
    let params = SampleParams::for_spacing(1.0);
    let before = gi.sample(&mut tracer, &at, &params).unwrap();
    let mut cpu = gi.field(&mut tracer).unwrap().clone();
    assert!(matches!(gi.scroll_to(&mut tracer, Vec3::splat(f32::NAN)), Err(GpuError::InvalidInput(_))));

    let report = gi.scroll_by(&mut tracer, [1, 0, -1]).unwrap();
    let [nx, ny, nz] = grid.dims;
    assert_eq!(report.probes.len() as u32, ny * nz + nx * ny - ny, "{report:?}");
    // The same probes with the same data; only the cell coordinates, measured
    // from the moved origin, round differently in the last bit.
    let after = gi.sample(&mut tracer, &at, &params).unwrap();
    for (a, b) in after.iter().flatten().zip(before.iter().flatten()) {
        assert!((a - b).abs() <= 1e-5 * b.abs().max(1e-3), "sampling continues across the scroll: {a} vs {b}");
    }
    // The CPU reference scrolls the same way: the same slots enter, at the same
    // places, active alike.
    let scene = tracer.scene().clone();
    let tlas = crate::gi::scenes::cpu_tlas(&scene);
    let view = scene.trace_scene(&tlas);
    let cpu_report = scroll_by(&mut cpu, &view, [1, 0, -1], &CompressParams::default(), &ProbeRules::default());
    assert_eq!(cpu_report.probes, report.probes);
    let got = gi.field(&mut tracer).unwrap().clone();
    assert_eq!((got.ring, got.volume.grid.origin), (cpu.ring, cpu.volume.grid.origin));
    for p in 0..got.volume.probe_count() {
        assert!((got.probe_position(p) - cpu.probe_position(p)).length() <= 1e-3, "probe {p}");
        assert_eq!(got.is_active(p), cpu.is_active(p), "probe {p}");
    }
    // The next update takes the probes that entered first; its rays and its
    // bounce go through the ring on the device as on the CPU.
    let entered: Vec<u32> = report.probes.iter().copied().filter(|&p| got.is_active(p as usize)).collect();
    assert_eq!(gi.update(&mut tracer).unwrap(), entered.len() as u32);
    let mut reference = got.clone();
    let lighting = GiLighting::default();
    let update = UpdateParams { hysteresis: 0.5, ..UpdateParams::for_spacing(1.0) };
    update_irradiance(&mut reference, &view, &lighting, &update, 2, &entered);
    let field = &gi.field(&mut tracer).unwrap().clone();
    let mut worst = 0.0f32;
    for &p in &entered {
        for d in [Vec3::X, Vec3::NEG_X, Vec3::Y, Vec3::NEG_Y, Vec3::Z, Vec3::NEG_Z] {
            let (a, b) = (reference.probe_sh(p as usize).irradiance(d), field.probe_sh(p as usize).irradiance(d));
            for ch in 0..3 {
                worst = worst.max((a[ch] - b[ch]).abs() / a[ch].abs().max(0.05));
            }
        }
    }
    assert!(worst <= 1e-3, "the entered probes' irradiance differs by {worst}");
    assert_validation_clean(tracer.gpu());
}

/// On an engine's device, a relocating and classifying dense volume baked,
/// refreshed after a wall appeared and scrolled, each as recordings into the
/// engine's command buffers until done, submits nothing and ends exactly as the
/// same volume baked, refreshed and scrolled on a standalone device: the same
/// offsets, the same compressed visibility.
#[test]
fn recorded_bake_refresh_and_scroll_with_relocation_match_submitted_ones() {
    use super::tests::EngineDevice;
    use crate::gi::ProbeRules;
    let test = "recorded_bake_refresh_and_scroll_with_relocation_match_submitted_ones";
    let Some((mut standalone, _)) = open_room_tracer(test) else { return };
    // Half a spacing off the room's grid: a plane of probes inside the new wall.
    let grid = ProbeGrid::covering(Vec3::new(-0.5, 0.0, -1.0), Vec3::new(6.5, 4.0, 5.0), 1.0).unwrap();
    let engine = EngineDevice::new(2).expect("the engine's own device on the same driver");
    // SAFETY: the engine's handles are live and outlive the tracer (dropped first).
    let mut embedded = unsafe { RayTracer::embedded(&engine.describe(2)) }.unwrap();
    for (i, (lo, hi)) in open_room_boxes().into_iter().enumerate() {
        add_box(&mut embedded, lo, hi, i as u32);
    }
    let before = embedded.gpu().submissions();
    let mut recorded = GiVolume::new(&mut embedded, grid, None).unwrap();
    let mut submitted = GiVolume::new(&mut standalone, grid, None).unwrap();
    for volume in [&mut recorded, &mut submitted] {
        volume.rules = ProbeRules::default();
    }
    // Each call records one step into a frame; the next comes after it completed.
    let mut frame = 0usize;
    let mut record = |step: &mut dyn FnMut(ash::vk::CommandBuffer, u32) -> bool| -> u32 {
        let mut calls = 0;
        loop {
            let slot = frame % 2;
            frame += 1;
            calls += 1;
            let cmd = engine.begin(slot);
            let done = step(cmd, slot as u32);
            engine.submit(slot);
            engine.wait_all();
            if done || calls == 10 {
                return calls;
            }
        }
    };
    let calls = record(&mut |cmd, slot| {
        // SAFETY: a recording command buffer of the engine's device for `slot`,
        // each call after the previous one's submission completed.
        unsafe { recorded.record_bake(&mut embedded, cmd, slot) }.unwrap()
    });
    submitted.bake(&mut standalone).unwrap();
    assert!(calls > 2, "census passes before the bake: {calls} calls");
    let stats = recorded.stats();
    assert!(stats.moved_probes > 0 && stats.dead_probes > 0, "{stats:?}");
    assert_eq!(recorded.stats(), submitted.stats());

    let (lo, hi) = room_wall();
    add_box(&mut embedded, lo, hi, 99);
    add_box(&mut standalone, lo, hi, 99);
    let mut report = None;
    record(&mut |cmd, slot| {
        // SAFETY: as above.
        report = unsafe { recorded.record_refresh(&mut embedded, lo, hi, cmd, slot) }.unwrap();
        report.is_some()
    });
    assert_eq!(report.unwrap(), submitted.refresh(&mut standalone, lo, hi).unwrap());
    let mut scrolled = None;
    record(&mut |cmd, slot| {
        // SAFETY: as above.
        scrolled = unsafe { recorded.record_scroll_by(&mut embedded, [1, 0, -1], cmd, slot) }.unwrap();
        scrolled.is_some()
    });
    let scrolled = scrolled.unwrap();
    assert_eq!(scrolled, submitted.scroll_by(&mut standalone, [1, 0, -1]).unwrap());
    assert!(scrolled.planes == 2 && !scrolled.probes.is_empty());
    let (got, want) = (recorded.field(&mut embedded).unwrap(), submitted.field(&mut standalone).unwrap());
    assert!(got.visibility == want.visibility && got.offsets == want.offsets && got.ring == want.ring);
    // A scroll started and then superseded by a bake never happens: the bake
    // drops it, and the volume stays where it was.
    let ring = got.ring;
    let cmd = engine.begin(0);
    // SAFETY: as above.
    assert!(unsafe { recorded.record_scroll_by(&mut embedded, [1, 0, 0], cmd, 0) }.unwrap().is_none());
    engine.submit(0);
    engine.wait_all();
    assert!(recorded.pending_rebake().is_some());
    record(&mut |cmd, slot| {
        // SAFETY: as above.
        unsafe { recorded.record_bake(&mut embedded, cmd, slot) }.unwrap()
    });
    assert!(recorded.pending_rebake().is_none() && !recorded.bake_pending());
    assert_eq!(recorded.field(&mut embedded).unwrap().ring, ring);
    assert_eq!(embedded.gpu().submissions(), before, "recorded jobs submit nothing");
    assert_validation_clean(standalone.gpu());
    assert!(engine.messages().is_empty(), "{:?}", engine.messages());
}

/// The census the device reduces from each probe's 1,024 bake rays
/// (`gi_visibility_census.comp`) is the CPU's `RayCensus::of` over the same rays
/// traced on the CPU: the same counts and the same closest and farthest faces,
/// within the two traversals' rounding, for probes in the open, near the wall and
/// inside it or the ground, over more than one batch.
#[test]
fn gpu_census_matches_the_cpu_census() {
    use crate::gi::relocate::RayCensus;
    use crate::gi::scenes::{boxes_scene, cpu_tlas};
    use crate::gi::update::{visibility_rays, BAKE_RAYS};
    use crate::gi::{ProbeField, ProbeVolume};
    use crate::raytrace::trace_cpu;
    let Some(gpu) = test_gpu("gpu_census_matches_the_cpu_census") else { return };
    let mut tracer = RayTracer::with_gpu(gpu).unwrap();
    // The wall sunk into the ground: no coplanar faces, whose hits are a
    // traversal's choice.
    let boxes = [
        (Vec3::new(-6.0, -3.0, -6.0), Vec3::new(10.0, -0.5, 10.0)),
        (Vec3::new(1.85, -1.0, -3.0), Vec3::new(2.25, 3.0, 7.0)),
    ];
    for (i, (lo, hi)) in boxes.into_iter().enumerate() {
        add_box(&mut tracer, lo, hi, i as u32);
    }
    let scene = boxes_scene(&boxes);
    let tlas = cpu_tlas(&scene);
    let view = scene.trace_scene(&tlas);
    // 1,100 probes: two batches; a fifth of them in the ground or the wall.
    // Off the boxes' faces: a probe on a face makes grazing rays flip between traversals.
    let grid = ProbeGrid::covering(Vec3::new(-1.03, -1.97, -0.91), Vec3::new(5.5, 2.5, 9.0), 0.5).unwrap();
    let field = ProbeField::new(ProbeVolume::dense(grid));
    let n = field.volume.probe_count().min(1100) as u32;
    let linear: Vec<u32> = (0..n).map(|p| grid.linear(field.volume.probe_coords(p as usize)) as u32).collect();
    let mut baker = GiBaker::new(&tracer).unwrap();
    let got = baker.census(&mut tracer, &grid, &linear, None).unwrap();
    assert_eq!(got.len(), n as usize);
    let probes: Vec<u32> = (0..n).collect();
    let rays = visibility_rays(&field, &probes);
    let (mut backs, mut fronts) = (0, 0);
    for (p, census) in got.iter().enumerate() {
        let rays = &rays[p * BAKE_RAYS..(p + 1) * BAKE_RAYS];
        let hits: Vec<_> = rays.iter().map(|r| trace_cpu(&view, r, false)).collect();
        let want = RayCensus::of(rays, &hits);
        let counts = census.backfaces.abs_diff(want.backfaces) <= 2 && census.fronts.abs_diff(want.fronts) <= 2;
        assert!(counts, "{p}: {census:?} {want:?}");
        assert!((census.closest_front.0 - want.closest_front.0).abs() <= 1e-4, "{p}: {census:?} {want:?}");
        assert!((census.farthest_front.0 - want.farthest_front.0).abs() <= 1e-4, "{p}: {census:?} {want:?}");
        match (census.closest_back, want.closest_back) {
            (Some((t, n)), Some((u, m))) => assert!((t - u).abs() <= 1e-4 && n.dot(m) > 0.999, "{p}"),
            (None, None) => {}
            _ => panic!("probe {p}: back faces {census:?} vs {want:?}"),
        }
        backs += usize::from(want.backfaces > 0);
        fronts += usize::from(want.fronts > 0);
    }
    assert!(backs > n as usize / 10 && fronts > n as usize / 10, "{backs} see back faces, {fronts} front faces");
    assert_validation_clean(tracer.gpu());
}
