//! The GPU halves of DDGI against their CPU references: uploaded visibility, the
//! compression, the bake, the irradiance update, visibility sampling and the
//! volume's update budget. Each runs on the Vulkan device present (lavapipe without
//! a GPU) with the validation layer on.
use super::*;
/// Uploaded visibility is checked entry by entry: the block an entry names, as is
/// or transposed, must exist, there must be a signature (or a number naming one)
/// per live probe, a bit per probe of the field, and an irradiance word per live
/// probe; dead probes and quadrants and transposed entries of existing blocks
/// pass, and both forms of the index, and the irradiance, read back as uploaded.
#[test]
fn uploaded_visibility_must_name_existing_blocks() {
    use crate::gi::compress::pack_block;
    use crate::gi::{
        BlockEntry, CompressedVisibility, IndexForm, PackedSh, ProbeField, ProbeGrid, ProbeIndex, ProbeVolume,
        DEAD_QUADRANT, QUADRANTS,
    };
    let Some(mut gpu) = test_gpu("uploaded_visibility_must_name_existing_blocks") else {
        return;
    };
    let grid = ProbeGrid::covering(glam::Vec3::ZERO, glam::Vec3::splat(2.0), 1.0).unwrap();
    let mut field = GpuProbeField::new(&mut gpu, &ProbeField::new(ProbeVolume::dense(grid))).unwrap();
    let n = field.probe_count as usize;
    // Not baked: every probe live, in no index words, with an irradiance word each.
    assert_eq!(field.read_visibility(&mut gpu).unwrap(), CompressedVisibility::unbaked(n));
    assert_eq!(field.read_irradiance(&mut gpu).unwrap(), vec![crate::gi::UNLIT; n]);
    // A word per live probe, by rank.
    let words = |v: &CompressedVisibility| -> Vec<PackedSh> {
        (0..v.live.count() as u32).map(|r| PackedSh([r + 1, 2, 3, 4])).collect()
    };
    // Every probe dead reads back as uploaded (no entries, no blocks, no irradiance).
    field.upload(&mut gpu, &CompressedVisibility::dead(n), &[]).unwrap();
    assert_eq!(field.read_visibility(&mut gpu).unwrap(), CompressedVisibility::dead(n));
    assert!(field.read_irradiance(&mut gpu).unwrap().is_empty());
    // Probe 0 reads the block transposed in quadrant 0 and as is in quadrant 3;
    // probe 2 as is in quadrant 1.
    let mut entries = vec![DEAD_QUADRANT; n * QUADRANTS];
    (entries[0], entries[3], entries[9]) = (BlockEntry::new(0, true).0, 0, 0);
    let vis = CompressedVisibility::from_entries(&entries, vec![pack_block(&[[0.5, 0.25]; 64])]);
    assert_eq!(vis.live.count(), 2);
    field.upload(&mut gpu, &vis, &words(&vis)).unwrap();
    assert_eq!(field.read_irradiance(&mut gpu).unwrap(), words(&vis));
    // What was uploaded reads back, each live probe with its own signature and,
    // forced, with numbered ones.
    assert_eq!((field.read_visibility(&mut gpu).unwrap(), vis.index.layout()), (vis.clone(), [0, 0, 2]));
    let live: Vec<[BlockEntry; QUADRANTS]> = (0..2).map(|r| std::array::from_fn(|q| vis.index.entry(r, q))).collect();
    let mut wide = vis.clone();
    wide.index = ProbeIndex::new(&live, 1, Some(IndexForm::Numbered));
    field.upload(&mut gpu, &wide, &words(&wide)).unwrap();
    assert_eq!((field.read_visibility(&mut gpu).unwrap(), wide.index.layout()), (wide.clone(), [1, 1, 2]));
    let mut missing = entries.clone();
    missing[5] = 1;
    let missing = CompressedVisibility::from_entries(&missing, vis.blocks.blocks());
    assert!(matches!(field.upload(&mut gpu, &missing, &words(&missing)), Err(GpuError::InvalidInput(_))));
    let mut short = vis.clone();
    short.index = ProbeIndex::new(&live[1..], 1, None);
    assert!(matches!(field.upload(&mut gpu, &short, &words(&vis)), Err(GpuError::InvalidInput(_))));
    let fewer = CompressedVisibility::from_entries(&entries[QUADRANTS..], vis.blocks.blocks());
    assert!(matches!(field.upload(&mut gpu, &fewer, &words(&fewer)), Err(GpuError::InvalidInput(_))));
    let mut more = words(&vis);
    more.push(PackedSh([9; 4]));
    assert!(matches!(field.upload(&mut gpu, &vis, &more), Err(GpuError::InvalidInput(_))), "a word per live probe");
    assert!(matches!(field.upload(&mut gpu, &vis, &more[..1]), Err(GpuError::InvalidInput(_))));
    assert!(matches!(field.upload_irradiance(&mut gpu, &more), Err(GpuError::InvalidInput(_))));
    // A refused upload keeps what the device held.
    assert_eq!(field.read_visibility(&mut gpu).unwrap(), wide);
    assert_eq!(field.read_irradiance(&mut gpu).unwrap(), words(&wide));
    field.upload_irradiance(&mut gpu, &more[1..]).unwrap();
    assert_eq!(field.read_irradiance(&mut gpu).unwrap(), &more[1..]);
}

#[test]
fn gpu_visibility_compression_equals_the_cpu_reference() {
    use crate::gi::compress::{compress, CompressParams, ProbeOrder};
    use crate::gi::scenes::{cpu_tlas, walled_room};
    use crate::gi::update::{visibility_map, visibility_rays};
    use crate::gi::{ProbeField, ProbeGrid, ProbeVolume, VisibilityMap, OCT_RES};
    let Some(mut gpu) = test_gpu("gpu_visibility_compression_equals_the_cpu_reference") else {
        return;
    };
    // Maps baked on the CPU around the walled room (dead probes above the roof,
    // repeated configurations along the walls), then the same maps again with a
    // small offset so later probes find matches far back.
    let scene = walled_room();
    let grid = ProbeGrid::covering(glam::Vec3::new(-1.0, 0.0, -1.0), glam::Vec3::new(5.0, 6.0, 5.0), 1.0).unwrap();
    let field = ProbeField::new(ProbeVolume::dense(grid));
    let tlas = cpu_tlas(&scene);
    let view = scene.trace_scene(&tlas);
    let clip = grid.clip_distance();
    let mut maps: Vec<VisibilityMap> = (0..field.volume.probe_count() as u32)
        .map(|p| {
            let hits: Vec<GpuHit> = visibility_rays(&field, &[p]).iter().map(|r| trace_cpu(&view, r, false)).collect();
            visibility_map(&hits, clip)
        })
        .collect();
    let shifted: Vec<VisibilityMap> =
        maps.iter().map(|m| VisibilityMap(std::array::from_fn(|t| [m.0[t][0] * 0.995, m.0[t][1] * 0.99]))).collect();
    maps.extend(shifted);
    // Maps read through the symmetries of the square, so that transposed matches
    // occur (the room has few of its own).
    let turned: Vec<VisibilityMap> = (0..maps.len() / 2)
        .map(|p| {
            let s = 1 + p as u32 % 7;
            VisibilityMap(std::array::from_fn(|t| {
                let (x, y) = crate::gi::symmetric_texel(s, t % OCT_RES, t / OCT_RES);
                maps[p].0[y * OCT_RES + x]
            }))
        })
        .collect();
    maps.extend(turned);
    let n = maps.len() as u32;
    let texels: Vec<[f32; 2]> = maps.iter().flat_map(|m| m.0).collect();
    let compressor = GiCompressor::new(&gpu).unwrap();
    let vis = GpuVisibility::new(&gpu, n).unwrap();
    gpu.submit("upload maps", |rec| rec.upload(&vis.maps, 0, bytemuck::cast_slice(&texels))).unwrap();
    let default_window = CompressParams::default().window;
    for (order, window) in [
        (ProbeOrder::swizzled(n, 64), default_window),
        (ProbeOrder::swizzled(n, 256), default_window),
        (ProbeOrder::linear(n, 1), default_window),
        (ProbeOrder::linear(n, 37), 25),
    ] {
        let params = CompressParams { window, ..CompressParams::default() };
        gpu.submit("compress", |rec| compressor.record(rec, &vis, &order, &params)).unwrap();
        let got = vis.read(&mut gpu).unwrap();
        let want = compress(&maps, &order, &params);
        let entries: Vec<crate::gi::BlockEntry> = want.entries().into_iter().map(crate::gi::BlockEntry).collect();
        let live: Vec<crate::gi::BlockEntry> = entries.iter().copied().filter(|e| !e.is_dead()).collect();
        let dead_quadrants = entries.len() - live.len();
        assert!(want.dead_count() > 0 && dead_quadrants > 4 * want.dead_count(), "dead probes and quadrants");
        assert!(want.blocks.len() < live.len(), "the maps exercise every path");
        assert!(live.iter().any(|e| e.transposed()) && live.iter().any(|e| !e.transposed()), "both ways");
        assert!(want.index.signature_count() * crate::gi::QUADRANTS < entries.len(), "dead probes store no entries");
        assert_eq!(got.live, want.live, "{} batches, window {window}", order.batch_count());
        assert_eq!(got.index, want.index, "{} batches, window {window}", order.batch_count());
        assert!(got.blocks == want.blocks, "{} batches, window {window}: blocks differ", order.batch_count());
    }
    // More probes than the match kernel can number is refused before allocating.
    assert!(matches!(
        GpuVisibility::new(&gpu, super::gi_compress::MAX_COMPRESS_PROBES + 1),
        Err(GpuError::InvalidInput(_))
    ));
    // A batch wider than one workgroup is refused before anything is recorded.
    let wide = ProbeOrder::linear(n, 300);
    let err = gpu.submit("compress", |rec| compressor.record(rec, &vis, &wide, &CompressParams::default()));
    assert!(matches!(err, Err(GpuError::InvalidInput(_))));
    // So are an order of the wrong length and a NaN or negative tolerance; the
    // last result stays readable.
    let short = ProbeOrder::linear(n - 1, 8);
    let err = gpu.submit("compress", |rec| compressor.record(rec, &vis, &short, &CompressParams::default()));
    assert!(matches!(err, Err(GpuError::InvalidInput(_))));
    for tolerance in [f32::NAN, -0.01, f32::INFINITY] {
        let params = CompressParams { tolerance, ..CompressParams::default() };
        let err = gpu.submit("compress", |rec| compressor.record(rec, &vis, &ProbeOrder::linear(n, 8), &params));
        assert!(matches!(err, Err(GpuError::InvalidInput(_))), "tolerance {tolerance}");
    }
    let last = ProbeOrder::linear(n, 37);
    let params = CompressParams { window: 25, ..CompressParams::default() };
    assert_eq!(vis.read(&mut gpu).unwrap(), compress(&maps, &last, &params));
    assert_validation_clean(&gpu);
}

#[test]
fn gpu_visibility_bake_matches_the_cpu_reference_and_compresses_like_it() {
    use crate::gi::compress::{compress, CompressParams, ProbeOrder};
    use crate::gi::scenes::{cpu_tlas, walled_room};
    use crate::gi::update::{visibility_map, visibility_rays};
    use crate::gi::{ProbeField, ProbeGrid, ProbeVolume, VisibilityMap, OCT_TEXELS};
    let Some(gpu) = test_gpu("gpu_visibility_bake_matches_the_cpu_reference_and_compresses_like_it") else {
        return;
    };
    let mut tracer = RayTracer::with_gpu(gpu).unwrap();
    let scene = walled_room();
    // Dense up to 6 m: probes 2.5 m above the roof see nothing (dead).
    let grid = ProbeGrid::covering(glam::Vec3::new(-2.0, 0.0, -2.0), glam::Vec3::new(6.0, 6.0, 6.0), 1.0).unwrap();
    let volume = ProbeVolume::dense(grid);
    let n = volume.probe_count() as u32;
    let field = ProbeField::new(volume.clone());
    let mut baker = GiBaker::new(&tracer).unwrap();
    let vis = GpuVisibility::new(tracer.gpu(), n).unwrap();
    // Nothing to trace against yet: refused.
    assert!(matches!(baker.bake(&mut tracer, &volume, &vis), Err(GpuError::InvalidInput(_))));
    add_walled_room(&mut tracer);
    // Buffers sized for another volume are refused.
    let small = GpuVisibility::new(tracer.gpu(), n - 1).unwrap();
    assert!(matches!(baker.bake(&mut tracer, &volume, &small), Err(GpuError::InvalidInput(_))));
    baker.bake(&mut tracer, &volume, &vis).unwrap();
    let texels: Vec<[f32; 2]> = tracer.gpu_mut().read(&vis.maps, n as usize * OCT_TEXELS).unwrap();
    let gpu_maps: Vec<VisibilityMap> =
        texels.chunks_exact(OCT_TEXELS).map(|c| VisibilityMap(c.try_into().unwrap())).collect();
    // Against the CPU bake: ray directions may differ in the last bit, so a ray
    // grazing an edge can land on the other side; everything else agrees closely.
    let tlas = cpu_tlas(&scene);
    let view = scene.trace_scene(&tlas);
    let clip = grid.clip_distance();
    let (mut off, mut total) = (0, 0);
    for p in 0..n {
        let hits: Vec<GpuHit> = visibility_rays(&field, &[p]).iter().map(|r| trace_cpu(&view, r, false)).collect();
        let cpu = visibility_map(&hits, clip);
        for t in 0..OCT_TEXELS {
            total += 1;
            let d = (cpu.0[t][0] - gpu_maps[p as usize].0[t][0])
                .abs()
                .max((cpu.0[t][1] - gpu_maps[p as usize].0[t][1]).abs());
            off += usize::from(d > 1e-4);
        }
    }
    assert!(off * 500 <= total, "{off} of {total} texels differ from the CPU bake");
    // The GPU compressor over the GPU maps equals the CPU compressor over them.
    let order = ProbeOrder::swizzled(n, 128);
    let params = CompressParams::default();
    let compressor = GiCompressor::new(tracer.gpu()).unwrap();
    tracer.gpu_mut().submit("compress", |rec| compressor.record(rec, &vis, &order, &params)).unwrap();
    let got = vis.read(tracer.gpu_mut()).unwrap();
    assert_eq!(got, compress(&gpu_maps, &order, &params));
    assert!(got.dead_count() > 0 && got.blocks.len() < n as usize - got.dead_count());
    eprintln!(
        "{n} probes: {} dead, {} blocks; {off} of {total} texels off the CPU bake",
        got.dead_count(),
        got.blocks.len()
    );
    assert_validation_clean(tracer.gpu());
}

/// The boxes of `gi::scenes::walled_room` as tracer instances (instance i = box i).
fn add_walled_room(tracer: &mut RayTracer) {
    use crate::gi::scenes::{box_transform, walled_room_boxes};
    for (i, (lo, hi)) in walled_room_boxes().into_iter().enumerate() {
        let (positions, triangles) = box_mesh(((hi - lo) * 0.5).into());
        let mesh = tracer.add_mesh(&positions, &triangles).unwrap();
        tracer.add_instance(mesh, &box_transform(lo, hi), u32::MAX, i as u32).unwrap();
    }
}

#[test]
fn gpu_irradiance_update_matches_the_cpu_reference() {
    use crate::gi::compress::CompressParams;
    use crate::gi::scenes::{cpu_tlas, walled_room};
    use crate::gi::update::{GiLighting, UpdateParams};
    use crate::gi::{bake_visibility, update_irradiance, ProbeField, ProbeGrid, ProbeVolume, QUADRANTS};
    let Some(gpu) = test_gpu("gpu_irradiance_update_matches_the_cpu_reference") else {
        return;
    };
    let mut tracer = RayTracer::with_gpu(gpu).unwrap();
    let scene = walled_room();
    let grid = ProbeGrid::covering(glam::Vec3::new(-3.0, 0.0, -3.0), glam::Vec3::new(7.0, 4.0, 7.0), 1.0).unwrap();
    let mut cpu = ProbeField::new(ProbeVolume::around(grid, &scene.world_triangles(), 1.5));
    let n = cpu.volume.probe_count() as u32;
    let tlas = cpu_tlas(&scene);
    let view = scene.trace_scene(&tlas);
    bake_visibility(&mut cpu, &view, &CompressParams::default(), 64);
    // Every third probe's map dropped (dead: it sees the clip value everywhere), so
    // that the live probes' entries sit at ranks below their probe numbers and the
    // GPU must count the live bits to find them.
    let mut entries = cpu.visibility.entries();
    for p in (1..n as usize).step_by(3) {
        entries[p * QUADRANTS..(p + 1) * QUADRANTS].fill(crate::gi::DEAD_QUADRANT);
    }
    cpu.set_visibility(crate::gi::CompressedVisibility::from_entries(&entries, cpu.visibility.blocks.blocks()));
    assert!(cpu.visibility.dead_count() >= n as usize / 3, "{} dead", cpu.visibility.dead_count());
    let live = cpu.visibility.live.count() as u32;
    assert_eq!(cpu.irradiance.len(), live as usize, "a word per live probe");
    let all: Vec<u32> = (0..n).collect();
    // Blocks of every spread width, so shading reads each class's table.
    let classes = cpu.visibility.blocks.class_counts();
    assert!(classes.iter().all(|&c| c > 0), "blocks per class {classes:?}");
    let mut updater = GiUpdater::new(&tracer).unwrap();
    let field = GpuProbeField::new(tracer.gpu_mut(), &cpu).unwrap();
    let lighting = GiLighting { albedo: vec![[0.8, 0.3, 0.2]; 2], ..GiLighting::default() };
    let mut params = UpdateParams::for_spacing(1.0);
    params.hysteresis = 0.5;
    params.rays_per_probe = 96;
    // No scene yet: refused.
    assert!(matches!(updater.update(&mut tracer, &field, &lighting, &params, 0, &all), Err(GpuError::InvalidInput(_))));
    add_walled_room(&mut tracer);

    // Bad input is refused and changes nothing.
    let before = field.read_irradiance(tracer.gpu_mut()).unwrap();
    let refused =
        |updater: &mut GiUpdater, tracer: &mut RayTracer, l: &GiLighting, p: &UpdateParams, probes: &[u32]| {
            let result = updater.update(tracer, &field, l, p, 0, probes);
            assert!(matches!(result, Err(GpuError::InvalidInput(_))), "{result:?}");
        };
    refused(&mut updater, &mut tracer, &lighting, &UpdateParams { rays_per_probe: 0, ..params }, &all);
    refused(&mut updater, &mut tracer, &lighting, &UpdateParams { rays_per_probe: 4096, ..params }, &all);
    refused(&mut updater, &mut tracer, &lighting, &UpdateParams { hysteresis: f32::NAN, ..params }, &all);
    refused(&mut updater, &mut tracer, &lighting, &UpdateParams { hysteresis: 1.5, ..params }, &all);
    let mut bias = params;
    bias.sample.bias = f32::INFINITY;
    refused(&mut updater, &mut tracer, &lighting, &bias, &all);
    refused(&mut updater, &mut tracer, &lighting, &params, &[0, n]);
    for bad in [
        GiLighting { sun_direction: [0.0; 3], ..lighting.clone() },
        GiLighting { sun_direction: [f32::NAN, 1.0, 0.0], ..lighting.clone() },
        GiLighting { sky_radiance: [-1.0, 0.0, 0.0], ..lighting.clone() },
        GiLighting { albedo: vec![[0.5, f32::INFINITY, 0.5]], ..lighting.clone() },
    ] {
        refused(&mut updater, &mut tracer, &bad, &params, &all);
    }
    let mut too_many = params;
    too_many.rays_per_probe = MAX_RAYS_PER_PROBE;
    let big = GpuProbeField::new(
        tracer.gpu_mut(),
        &ProbeField::new(ProbeVolume::dense(
            ProbeGrid::covering(glam::Vec3::ZERO, glam::Vec3::splat(12.0), 0.5).unwrap(),
        )),
    )
    .unwrap();
    assert!(big.probe_count > GiUpdater::max_probes_per_update(MAX_RAYS_PER_PROBE));
    assert!(matches!(
        updater.update(&mut tracer, &big, &lighting, &too_many, 0, &(0..big.probe_count).collect::<Vec<_>>()),
        Err(GpuError::InvalidInput(_))
    ));
    assert_eq!(field.read_irradiance(tracer.gpu_mut()).unwrap(), before);
    // Dead probes keep no irradiance: updating them stores nothing.
    let dead: Vec<u32> = (0..n).filter(|&p| cpu.visibility.is_dead(p as usize)).collect();
    updater.update(&mut tracer, &field, &lighting, &params, 0, &dead).unwrap();
    assert_eq!(field.read_irradiance(tracer.gpu_mut()).unwrap(), before);
    assert_eq!(before.len(), live as usize);

    // Frames of 60% of the live probes each, round robin, multi-bounce from frame
    // 2 on.
    let budget = live * 3 / 5;
    let mut first = 0;
    let mut worst = 0.0f32;
    let mut sum = 0.0f64;
    let mut samples = 0usize;
    for frame in 0..6 {
        let probes = cpu.live_round_robin(first, budget);
        assert_eq!(probes.len(), budget as usize);
        update_irradiance(&mut cpu, &view, &lighting, &params, frame, &probes);
        updater.update(&mut tracer, &field, &lighting, &params, frame, &probes).unwrap();
        first = (probes.last().unwrap() + 1) % n;
        let got = field.read_irradiance(tracer.gpu_mut()).unwrap();
        // The GPU continues from its own state, so differences would compound:
        // compare the irradiance both give in six directions.
        for p in 0..n as usize {
            let (a, b) = (cpu.probe_sh(p), ProbeField { irradiance: got.clone(), ..cpu.clone() }.probe_sh(p));
            for d in
                [glam::Vec3::X, glam::Vec3::NEG_X, glam::Vec3::Y, glam::Vec3::NEG_Y, glam::Vec3::Z, glam::Vec3::NEG_Z]
            {
                let (ea, eb) = (a.irradiance(d), b.irradiance(d));
                for ch in 0..3 {
                    let rel = (ea[ch] - eb[ch]).abs() / ea[ch].abs().max(0.05);
                    worst = worst.max(rel);
                    sum += f64::from(rel);
                    samples += 1;
                }
            }
        }
        if frame == 0 {
            // The first update has no bounce and starts from unlit probes:
            // almost every stored word is the CPU's exactly.
            let slots = probes.iter().map(|&p| cpu.irradiance_slot(p as usize).unwrap());
            let equal = slots.filter(|&r| got[r] == cpu.irradiance[r]).count();
            eprintln!("frame 0: {equal} of {} probes bit-equal", probes.len());
            assert!(equal * 10 >= probes.len() * 8, "{equal} of {}", probes.len());
        }
    }
    let got = field.read_irradiance(tracer.gpu_mut()).unwrap();
    let equal = got.iter().zip(&cpu.irradiance).filter(|(a, b)| a == b).count();
    let level: f32 = cpu.irradiance.iter().map(|w| w.unpack().irradiance(glam::Vec3::Y)[1]).sum::<f32>() / live as f32;
    eprintln!("after 6 frames {equal} of {live} live probes bit-equal; mean upward irradiance {level:.3}");
    assert!(level > 0.1, "the probes are lit: {level}");
    let mean = sum / samples as f64;
    eprintln!(
        "{n} probes, 6 frames: irradiance off the CPU by {:.4}% on average, {:.3}% at most",
        mean * 100.0,
        worst * 100.0
    );
    assert!(mean < 0.002, "mean relative difference {mean}");
    assert!(worst < 0.05, "largest relative difference {worst}");
    // Probes never updated stay unlit: none here, since 6 x 60% covers them all.
    assert!(field.read_irradiance(tracer.gpu_mut()).unwrap().iter().all(|w| *w != crate::gi::UNLIT));
    // The same visibility with the index in its other form (numbered signatures,
    // or each live probe's own) samples the same: one more update from the same
    // irradiance, each way, gives the same bits.
    let start = ProbeField { irradiance: got.clone(), ..cpu.clone() };
    let mut wide = start.clone();
    let (index, blocks) = (&start.visibility.index, start.visibility.blocks.len());
    let live: Vec<[crate::gi::BlockEntry; 4]> = (0..start.visibility.live.count())
        .map(|r| std::array::from_fn(|q| index.entry(index.signature(r), q)))
        .collect();
    let other = if index.numbers.is_some() { crate::gi::IndexForm::Direct } else { crate::gi::IndexForm::Numbered };
    wide.visibility.index = crate::gi::ProbeIndex::new(&live, blocks, Some(other));
    assert_ne!(wide.visibility.index.layout()[0], index.layout()[0]);
    let mut updated = Vec::new();
    for f in [&start, &wide] {
        let device = GpuProbeField::new(tracer.gpu_mut(), f).unwrap();
        updater.update(&mut tracer, &device, &lighting, &params, 6, &start.live_round_robin(0, budget)).unwrap();
        updated.push(device.read_irradiance(tracer.gpu_mut()).unwrap());
    }
    assert_ne!(updated[0], got, "the update changed the irradiance");
    assert!(updated[0] == updated[1], "both forms of the index sample alike");
    assert_validation_clean(tracer.gpu());
}

/// The device's visibility, decoded from the block table and filtered as the
/// bounce reads it, equals the CPU's: noisy maps (every texel its own value, some
/// at the clip value, every fifth probe dead), toward 31 x 31 directions over the
/// octahedron, its edges and the quadrants' seams included (u or v exactly 0 or
/// +-1), where the bilinear taps fall in two to four quadrants or the border.
#[test]
fn gpu_visibility_samples_match_the_cpu() {
    use crate::gi::compress::{compress, CompressParams, ProbeOrder};
    use crate::gi::{oct_decode, ProbeField, ProbeGrid, ProbeVolume, VisibilityMap};
    let Some(gpu) = test_gpu("gpu_visibility_samples_match_the_cpu") else {
        return;
    };
    let mut tracer = RayTracer::with_gpu(gpu).unwrap();
    let grid = ProbeGrid::covering(glam::Vec3::ZERO, glam::Vec3::splat(3.0), 1.0).unwrap();
    let mut field = ProbeField::new(ProbeVolume::dense(grid));
    let n = field.volume.probe_count() as u32;
    let mut seed = 0x9e37_79b9u32;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 17;
        seed ^= seed << 5;
        seed as f32 / u32::MAX as f32
    };
    let maps: Vec<VisibilityMap> = (0..n)
        .map(|p| {
            VisibilityMap(std::array::from_fn(|_| {
                let (d, spread, clip) = (0.05 + 0.9 * next(), 0.04 * next(), next() < 0.2);
                if p % 5 == 4 || clip {
                    [1.0, 1.0]
                } else {
                    [d, d * d + spread]
                }
            }))
        })
        .collect();
    field.set_visibility(compress(&maps, &ProbeOrder::swizzled(n, 16), &CompressParams::default()));
    assert_eq!(field.visibility.dead_count(), n as usize / 5);
    assert!(field.visibility.blocks.group_count() > 4 && field.visibility.blocks.mask_count() > 100);
    let device = GpuProbeField::new(tracer.gpu_mut(), &field).unwrap();
    let mut updater = GiUpdater::new(&tracer).unwrap();
    let steps = (0..=30).map(|i| i as f32 / 15.0 - 1.0);
    let dirs: Vec<[f32; 3]> =
        steps.clone().flat_map(|u| steps.clone().map(move |v| oct_decode([u, v]).to_array())).collect();
    let all: Vec<u32> = (0..n).collect();
    let seen = updater.sample_visibility(&mut tracer, &device, &all, &dirs).unwrap();
    assert_eq!(seen.len(), n as usize * dirs.len());
    for p in 0..n as usize {
        for (k, d) in dirs.iter().enumerate() {
            let (got, want) = (seen[p * dirs.len() + k], field.visibility_at(p, glam::Vec3::from_array(*d)));
            assert!(
                (got[0] - want[0]).abs() <= 1e-5 && (got[1] - want[1]).abs() <= 1e-5,
                "probe {p} toward {d:?}: {got:?}, the CPU {want:?}"
            );
            if p % 5 == 4 {
                assert_eq!(got, [1.0, 1.0], "a dead probe sees the clip value");
            }
        }
    }
    // Any probes in any order; bad input refused.
    let picked = updater.sample_visibility(&mut tracer, &device, &[n - 1, 0], &dirs[..3]).unwrap();
    assert_eq!(picked, [&seen[(n as usize - 1) * dirs.len()..][..3], &seen[..3]].concat());
    assert!(updater.sample_visibility(&mut tracer, &device, &[], &dirs).unwrap().is_empty());
    let bad = [(0, vec![]), (0, vec![[f32::NAN, 1.0, 0.0]]), (0, vec![[0.0; 3]]), (n, dirs[..1].to_vec())];
    for (probe, d) in bad {
        let result = updater.sample_visibility(&mut tracer, &device, &[0, probe], &d);
        assert!(matches!(result, Err(GpuError::InvalidInput(_))), "{result:?}");
    }
    assert_validation_clean(tracer.gpu());
}

#[test]
fn gi_volume_updates_its_budget_round_robin_and_handles_an_empty_volume() {
    use crate::gi::{ProbeGrid, SampleParams};
    let Some(gpu) = test_gpu("gi_volume_updates_its_budget_round_robin_and_handles_an_empty_volume") else {
        return;
    };
    let mut tracer = RayTracer::with_gpu(gpu).unwrap();
    add_walled_room(&mut tracer);
    // Far above the room: no triangle within the dilation, so no probes.
    let far = ProbeGrid::covering(glam::Vec3::new(0.0, 50.0, 0.0), glam::Vec3::new(4.0, 54.0, 4.0), 1.0).unwrap();
    let mut empty = GiVolume::new(&mut tracer, far, Some(1.5)).unwrap();
    assert_eq!(empty.probe_count(), 0);
    empty.bake(&mut tracer).unwrap();
    assert_eq!(empty.update(&mut tracer).unwrap(), 0);
    let p = (glam::Vec3::new(1.0, 51.0, 1.0), glam::Vec3::Y, glam::Vec3::Y);
    assert_eq!(empty.sample(&mut tracer, &[p], &SampleParams::for_spacing(1.0)).unwrap(), vec![[0.0; 3]]);
    assert!(matches!(GiVolume::new(&mut tracer, far, Some(f32::NAN)), Err(GpuError::InvalidInput(_))));
    // Probes at every point of the same grid: before a bake every probe is live,
    // updated and sampled; the bake finds them all dead (nothing within 1.73 m), so
    // afterwards none is updated or sampled and no irradiance is kept.
    let mut open = GiVolume::new(&mut tracer, far, None).unwrap();
    open.params.rays_per_probe = 16;
    let placed = open.probe_count();
    assert_eq!(open.update(&mut tracer).unwrap(), placed);
    let params = SampleParams::for_spacing(1.0);
    assert!(open.sample(&mut tracer, &[p], &params).unwrap()[0][1] > 0.1, "lit by the sky");
    open.bake(&mut tracer).unwrap();
    let stats = open.stats();
    assert_eq!((stats.probe_count, stats.dead_probes), (placed, placed));
    assert_eq!(open.update(&mut tracer).unwrap(), 0);
    assert_eq!(open.sample(&mut tracer, &[p], &params).unwrap(), vec![[0.0; 3]]);
    assert!(open.device.read_irradiance(tracer.gpu_mut()).unwrap().is_empty());
    assert_eq!(stats.bytes, stats.visibility_bytes + open.device.mask.size() + open.device.rank.size());

    let grid = ProbeGrid::covering(glam::Vec3::new(-3.0, 0.0, -3.0), glam::Vec3::new(7.0, 4.0, 7.0), 1.0).unwrap();
    let mut volume = GiVolume::new(&mut tracer, grid, Some(1.5)).unwrap();
    volume.params.rays_per_probe = 32;
    volume.bake(&mut tracer).unwrap();
    let stats = volume.stats();
    assert!(stats.baked && stats.blocks > 0 && stats.visibility_bytes < stats.visibility_bytes_uncompressed);
    // The device keeps the compressed visibility sized to it, the index and the
    // block table, and nothing of the bake's maps or the compressor's buffers; the
    // signature count (4 bytes) and the table's group and mask counts (8) travel
    // in the update's parameters.
    let device = &volume.device.visibility;
    assert_eq!(device.block_count, stats.blocks);
    let [numbered, number_bits, entry_bits] = device.index_layout;
    assert_eq!(entry_bits, crate::gi::ProbeIndex::entry_width(stats.blocks as usize));
    let numbers = match numbered {
        0 => 0,
        _ => (u64::from(device.live_count) * u64::from(number_bits)).div_ceil(32) * 4,
    };
    assert!(numbered == 1 || device.signature_count == device.live_count);
    let parts = [&device.live_mask, &device.live_rank, &device.entries, &device.blocks];
    assert_eq!(parts.iter().map(|b| b.size()).sum::<u64>() + numbers + 4 + 8, stats.visibility_bytes);
    assert!(
        device.blocks.size() < u64::from(device.block_count) * 96,
        "blocks without spread or clip texels store less"
    );
    assert!(device.live_count > 0 && device.live_count <= volume.probe_count());
    let entries = u64::from(device.signature_count) * 4 * u64::from(entry_bits);
    assert_eq!(device.entries.size(), entries.div_ceil(32) * 4);
    // The device holds the placement, a word of irradiance per live probe and the
    // visibility: what the statistics count, and nothing more per probe.
    let live = device.live_count;
    assert_eq!(live, stats.probe_count - stats.dead_probes);
    let placement = volume.device.mask.size() + volume.device.rank.size();
    assert_eq!(placement + volume.device.irradiance.size() + stats.visibility_bytes, stats.bytes);
    assert_eq!(volume.device.irradiance.size(), u64::from(live) * 16);
    // Three updates cover every live probe once; the fourth wraps around.
    volume.probes_per_frame = live / 3 + 1;
    let mut lit = vec![false; live as usize];
    for frame in 0..3 {
        assert_eq!(volume.update(&mut tracer).unwrap(), live / 3 + 1);
        let field = volume.field(&mut tracer).unwrap();
        let now: Vec<bool> = field.irradiance.iter().map(|w| *w != crate::gi::UNLIT).collect();
        let newly = now.iter().zip(&lit).filter(|(a, b)| **a && !**b).count() as u32;
        assert_eq!(newly, (live / 3 + 1).min(live - (live / 3 + 1) * frame), "frame {frame}");
        lit = now;
    }
    assert!(lit.iter().all(|&l| l));
    assert_eq!(volume.update(&mut tracer).unwrap(), live / 3 + 1);
    assert_eq!(volume.stats().frames, 4);
    // The update passes are labelled and timed.
    let names: Vec<&str> = tracer.frame_timings().iter().map(|t| t.name).collect();
    if tracer.gpu().info().timestamps {
        for pass in ["gi probe rays", "gi trace", "gi shadow rays", "gi trace shadows", "gi shade", "gi blend"] {
            assert!(names.contains(&pass), "{pass} missing from {names:?}");
        }
    }
    // A second bake of the same scene keeps every live probe's irradiance.
    let kept = volume.field(&mut tracer).unwrap().irradiance.clone();
    volume.bake(&mut tracer).unwrap();
    assert_eq!(volume.field(&mut tracer).unwrap().irradiance, kept);
    assert_eq!(volume.device.read_irradiance(tracer.gpu_mut()).unwrap(), kept);
    assert_validation_clean(tracer.gpu());
}

/// On an engine's device, a bake (two recordings) and updates recorded into the
/// engine's command buffers (with their read-backs) submit nothing and leave the
/// probes exactly as the same bake and updates submitted on a standalone device do.
#[test]
fn gi_bake_and_update_recorded_into_the_engines_command_buffers_match_submitted_ones() {
    use super::tests::EngineDevice;
    use crate::gi::ProbeGrid;
    let Some(gpu) = test_gpu("gi_bake_and_update_recorded_into_the_engines_command_buffers_match_submitted_ones")
    else {
        return;
    };
    let engine = EngineDevice::new(2).expect("the engine's own device on the same driver");
    // SAFETY: the engine's handles are live and outlive the tracer (dropped first).
    let mut embedded = unsafe { RayTracer::embedded(&engine.describe(2)) }.unwrap();
    let mut standalone = RayTracer::with_gpu(gpu).unwrap();
    add_walled_room(&mut embedded);
    add_walled_room(&mut standalone);
    let grid = ProbeGrid::covering(glam::Vec3::new(-3.0, 0.0, -3.0), glam::Vec3::new(7.0, 4.0, 7.0), 1.0).unwrap();
    let before = embedded.gpu().submissions();
    let mut recorded = GiVolume::new(&mut embedded, grid, Some(1.5)).unwrap();
    assert!(!recorded.on_device() && recorded.gpu_buffers(&mut embedded).is_err(), "its data waits for a recording");
    let mut submitted = GiVolume::new(&mut standalone, grid, Some(1.5)).unwrap();
    for volume in [&mut recorded, &mut submitted] {
        volume.params.rays_per_probe = 32;
        volume.probes_per_frame = 64;
    }
    for (slot, done) in [(0, false), (1, true)] {
        let cmd = engine.begin(slot);
        // SAFETY: a recording command buffer of the engine's device for `slot`;
        // the second call comes after the first one's submission completed.
        assert_eq!(unsafe { recorded.record_bake(&mut embedded, cmd, slot as u32) }.unwrap(), done);
        engine.submit(slot);
        engine.wait_all();
    }
    submitted.bake(&mut standalone).unwrap();
    assert_eq!(recorded.stats(), submitted.stats());
    assert!(recorded.stats().baked && recorded.stats().blocks > 0);
    assert!(recorded.field(&mut embedded).unwrap().visibility == submitted.field(&mut standalone).unwrap().visibility);
    let mut rng = crate::spatial::tests::Rng(17);
    for frame in 0..4 {
        let slot = frame % 2;
        // One frame, several recordings into one command buffer: a trace (its rays
        // staged) and then the probes' update (its parameters staged after them).
        embedded.begin_frame(slot as u32).unwrap();
        let rays = super::tests::random_rays(&mut rng, embedded.scene(), 500);
        let cmd = engine.begin(slot);
        // SAFETY: a recording command buffer of the engine's device for `slot`,
        // whose previous submission completed (begin waited for it).
        let hits = unsafe { embedded.record_trace(cmd, slot as u32, &rays, TraceMode::Closest) }.unwrap();
        // SAFETY: as above; the frame is open, so the trace's staging is kept.
        let count = unsafe { recorded.record_update(&mut embedded, cmd, slot as u32) }.unwrap();
        engine.submit(slot);
        engine.wait_all();
        let mut got = vec![GpuHit::default(); rays.len()];
        hits.read(&mut got).unwrap();
        let mut want = vec![GpuHit::default(); rays.len()];
        standalone.trace(&rays, TraceMode::Closest, &mut want).unwrap();
        assert!(got == want, "frame {frame}: the trace recorded before the update");
        assert_eq!(count, submitted.update(&mut standalone).unwrap());
        // The sampling block for an engine's shaders is written without a submission.
        let buffers = recorded.gpu_buffers(&mut embedded).unwrap();
        assert!(buffers.params.address != 0 && buffers.irradiance.address != 0);
        let want = submitted.field(&mut standalone).unwrap().irradiance.clone();
        assert!(want.iter().any(|w| *w != crate::gi::UNLIT));
        assert!(recorded.field(&mut embedded).unwrap().irradiance == want, "frame {frame}");
    }
    assert_eq!(embedded.gpu().submissions(), before, "a volume created, baked, updated and read back submits nothing");
    // Kiln submits nothing on the engine's device, so its tables are read back
    // through downloads recorded into the engine's command buffer.
    let gpu = embedded.gpu_mut();
    let device = recorded
        .device
        .read_visibility_with(|buffer, count| {
            let cmd = engine.begin(0);
            // SAFETY: a recording command buffer of the engine's device for slot 0,
            // whose previous submission completed (the engine waited for all).
            let download = unsafe { gpu.record_into(cmd, 0, "read", |rec| rec.download(buffer, 0, 4 * count as u64)) }?;
            engine.submit(0);
            engine.wait_all();
            Ok(download.to_vec())
        })
        .unwrap();
    assert!(embedded.gpu_mut().submit("refused", |_| Ok(())).is_err(), "Kiln never submits on an engine's device");
    assert!(device == submitted.device.read_visibility(standalone.gpu_mut()).unwrap(), "the device's visibility");
    // A volume on a standalone tracer is refused, before the command buffer is used.
    let cmd = engine.begin(0);
    // SAFETY: refused before `cmd` is touched.
    assert!(unsafe { submitted.record_update(&mut standalone, cmd, 0) }.is_err());
    // SAFETY: as above; slot 2 of 2.
    assert!(unsafe { recorded.record_update(&mut embedded, cmd, 2) }.is_err());
    engine.submit(0);
    engine.wait_all();
    assert_validation_clean(embedded.gpu());
    drop(embedded);
    assert_eq!(engine.messages(), Vec::<String>::new(), "the engine's validation layer saw nothing wrong");
}

/// Albedo given by instance handle follows its instance when removals of others move
/// it in the packed order, and goes with its own removal (a new instance in its slot
/// does not inherit it); stale handles and bad colours are refused, nothing changed.
#[test]
fn albedo_by_instance_handle_follows_its_instance() {
    use crate::gi::ProbeGrid;
    let Some(gpu) = test_gpu("albedo_by_instance_handle_follows_its_instance") else { return };
    let mut tracer = RayTracer::with_gpu(gpu).unwrap();
    add_walled_room(&mut tracer);
    let (p, t) = box_mesh([0.2, 0.2, 0.2]);
    let cube = tracer.add_mesh(&p, &t).unwrap();
    let at = |x: f32| [[1.0, 0.0, 0.0, x], [0.0, 1.0, 0.0, 1.0], [0.0, 0.0, 1.0, 0.0]];
    let cubes: Vec<InstanceId> =
        (0..3).map(|i| tracer.add_instance(cube, &at(i as f32), 1, 100 + i).unwrap()).collect();
    let grid = ProbeGrid::covering(glam::Vec3::new(-3.0, 0.0, -3.0), glam::Vec3::new(7.0, 4.0, 7.0), 2.0).unwrap();
    let mut volume = GiVolume::new(&mut tracer, grid, None).unwrap();
    let (red, blue, grey) = ([0.9, 0.1, 0.1], [0.1, 0.1, 0.9], volume.lighting.default_albedo);
    volume.set_instance_albedo(&tracer, &[(cubes[0], red), (cubes[2], blue)]).unwrap();
    let expected = |tracer: &RayTracer, given: &[(InstanceId, [f32; 3])]| -> Vec<[f32; 3]> {
        (0..tracer.instance_count())
            .map(|p| {
                let id = tracer.instance_at(p).unwrap();
                given.iter().find(|(g, _)| *g == id).map_or(grey, |(_, c)| *c)
            })
            .collect()
    };
    // The last instance (blue) moves into the removed one's place.
    let blue_before = tracer.instance_index(cubes[2]).unwrap();
    tracer.remove_instance(cubes[1]).unwrap();
    assert_ne!(tracer.instance_index(cubes[2]).unwrap(), blue_before, "the packed order changed");
    volume.lay_out_albedo(&tracer);
    let want = expected(&tracer, &[(cubes[0], red), (cubes[2], blue)]);
    assert_eq!(volume.lighting.albedo, want);
    assert_eq!(want[tracer.instance_index(cubes[2]).unwrap() as usize], blue);
    // Refused, nothing changed: a stale handle, a channel above 1, a NaN.
    assert!(volume.set_instance_albedo(&tracer, &[(cubes[0], blue), (cubes[1], red)]).is_err());
    assert!(volume.set_instance_albedo(&tracer, &[(cubes[0], [1.5, 0.0, 0.0])]).is_err());
    assert!(volume.set_instance_albedo(&tracer, &[(cubes[0], [f32::NAN, 0.0, 0.0])]).is_err());
    volume.lay_out_albedo(&tracer);
    assert_eq!(volume.lighting.albedo, want);
    // Blue goes with its instance; the instances that reuse the freed slots are grey.
    tracer.remove_instance(cubes[2]).unwrap();
    let fresh: Vec<InstanceId> =
        (0..2).map(|i| tracer.add_instance(cube, &at(5.0 + i as f32), 1, 200).unwrap()).collect();
    assert!(fresh.iter().any(|f| f.slot == cubes[2].slot), "a slot reused with a new generation");
    volume.lay_out_albedo(&tracer);
    assert_eq!(volume.lighting.albedo, expected(&tracer, &[(cubes[0], red)]));
    // The update shades with them; an empty list clears them all.
    volume.update(&mut tracer).unwrap();
    volume.set_instance_albedo(&tracer, &[]).unwrap();
    volume.lay_out_albedo(&tracer);
    assert!(volume.lighting.albedo.is_empty());
    assert_validation_clean(tracer.gpu());
}
