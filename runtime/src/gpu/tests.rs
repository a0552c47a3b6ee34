use super::*;
use crate::spatial::tests::Rng;

/// A wavy grid of `n x n` quads (2 triangles each).
fn grid(n: u32, rng: &mut Rng) -> (Vec<[f32; 3]>, Vec<[u32; 3]>) {
    let mut positions = Vec::new();
    for z in 0..=n {
        for x in 0..=n {
            positions.push([x as f32, rng.range(-0.5, 0.5), z as f32]);
        }
    }
    let mut triangles = Vec::new();
    let row = n + 1;
    for z in 0..n {
        for x in 0..n {
            let i = z * row + x;
            triangles.push([i, i + 1, i + row]);
            triangles.push([i + 1, i + row + 1, i + row]);
        }
    }
    (positions, triangles)
}

/// Random triangles scattered in a box: a harder, overlapping input.
fn soup(count: usize, rng: &mut Rng) -> (Vec<[f32; 3]>, Vec<[u32; 3]>) {
    let mut positions = Vec::new();
    let mut triangles = Vec::new();
    for t in 0..count as u32 {
        let center = rng.vec3(-50.0, 50.0);
        for _ in 0..3 {
            positions.push((center + rng.vec3(-2.0, 2.0)).to_array());
        }
        triangles.push([3 * t, 3 * t + 1, 3 * t + 2]);
    }
    (positions, triangles)
}

fn jitter(positions: &[[f32; 3]], rng: &mut Rng, amount: f32) -> Vec<[f32; 3]> {
    positions.iter().map(|p| [p[0] + rng.range(-amount, amount), p[1] + rng.range(-amount, amount), p[2]]).collect()
}

#[test]
fn blas_build_is_valid_and_bounded_on_grids_soups_and_degenerate_input() {
    let mut rng = Rng(11);
    let mut cases = vec![grid(1, &mut rng), grid(37, &mut rng), soup(1, &mut rng), soup(5000, &mut rng)];
    // Every triangle at the same place: no SAH split exists, median splits must.
    cases.push((vec![[1.0, 2.0, 3.0]; 3], vec![[0, 1, 2]; 1000]));
    // A long sliver: centroids on a line.
    cases.push((
        (0..3000).map(|i| [i as f32 * 1e-3, 0.0, 0.0]).collect(),
        (0..1000).map(|t| [3 * t, 3 * t + 1, 3 * t + 2]).collect(),
    ));
    for (positions, triangles) in &cases {
        let blas = Blas::build(positions, triangles).unwrap();
        blas.validate(positions).unwrap();
        assert!(blas.depth <= MAX_DEPTH);
        let mut ids = blas.primitive_ids.clone();
        ids.sort_unstable();
        assert!(ids.iter().enumerate().all(|(i, &id)| i as u32 == id), "primitive ids are a permutation");
        for (t, id) in blas.primitive_ids.iter().enumerate() {
            assert_eq!(blas.triangles[t], triangles[*id as usize]);
        }
        let mut refit = blas.clone();
        refit.refit(positions).unwrap();
        assert_eq!(refit.nodes, blas.nodes, "refit over unchanged positions reproduces the build boxes");
    }
    // SAH quality on a flat grid: a well-built tree costs a few root areas per level.
    let (positions, triangles) = grid(64, &mut rng);
    let blas = Blas::build(&positions, &triangles).unwrap();
    assert!(blas.sah_ratio() < 30.0, "SAH ratio {}", blas.sah_ratio());
    assert!(blas.depth <= 20, "depth {} for 8192 triangles", blas.depth);
}

#[test]
fn blas_refuses_bad_meshes() {
    let p = vec![[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]];
    assert_eq!(Blas::build(&p, &[]).unwrap_err(), BlasError::Empty);
    assert_eq!(
        Blas::build(&p, &[[0, 1, 3]]).unwrap_err(),
        BlasError::IndexOutOfRange { triangle: 0, index: 3, vertices: 3 }
    );
    let mut nan = p.clone();
    nan[1][2] = f32::NAN;
    assert_eq!(Blas::build(&nan, &[[0, 1, 2]]).unwrap_err(), BlasError::NonFinite { vertex: 1 });
    let mut inf = p.clone();
    inf[2][0] = f32::INFINITY;
    assert_eq!(Blas::build(&inf, &[[0, 1, 2]]).unwrap_err(), BlasError::NonFinite { vertex: 2 });
    let mut blas = Blas::build(&p, &[[0, 1, 2]]).unwrap();
    let before = blas.nodes.clone();
    assert!(blas.refit(&nan).is_err());
    assert!(blas.refit(&p[..2]).is_err());
    assert_eq!(blas.nodes, before, "a refused refit changes nothing");
    // Skin data with mismatched or bad arrays.
    assert!(SkinData::new(vec![[0.0; 3]], vec![], vec![], 1).is_err());
    assert!(SkinData::new(vec![[0.0; 3]], vec![[0; 4]], vec![[1.0, 0.0, 0.0, 0.0]], 0).is_err());
    assert!(SkinData::new(vec![[0.0; 3]], vec![[1, 0, 0, 0]], vec![[1.0, 0.0, 0.0, 0.0]], 1).is_err());
    assert!(SkinData::new(vec![[0.0; 3]], vec![[0; 4]], vec![[-1.0, 0.0, 0.0, 0.0]], 1).is_err());
    assert!(SkinData::new(vec![[f32::NAN; 3]], vec![[0; 4]], vec![[1.0, 0.0, 0.0, 0.0]], 1).is_err());
}

#[test]
fn gpu_refit_matches_cpu_refit_on_large_deformed_meshes() {
    let Some(mut gpu) = test_gpu("gpu_refit_matches_cpu_refit_on_large_deformed_meshes") else { return };
    let refit = BlasRefit::new(&gpu).unwrap();
    let mut rng = Rng(5);
    // 180x180 grid: 64,800 triangles, over 16k leaves, depth > 15; and a small soup.
    for (positions, triangles) in [grid(180, &mut rng), soup(300, &mut rng), soup(1, &mut rng)] {
        let blas = Blas::build(&positions, &triangles).unwrap();
        let gpu_blas = GpuBlas::upload(&mut gpu, &blas, &positions).unwrap();
        for round in 0..3 {
            let moved = jitter(&positions, &mut rng, 0.3 * (round + 1) as f32);
            let mut expected = blas.clone();
            expected.refit(&moved).unwrap();
            gpu.submit("refit test", |rec| {
                rec.upload(&gpu_blas.positions, 0, bytemuck::cast_slice(&moved))?;
                rec.pass("blas refit", |rec| refit.record(rec, &gpu_blas))
            })
            .unwrap();
            assert_eq!(gpu.last_timings().len(), usize::from(gpu.info().timestamps));
            let nodes: Vec<BvhNode> = gpu.read(&gpu_blas.nodes, blas.nodes.len()).unwrap();
            for (i, (got, want)) in nodes.iter().zip(&expected.nodes).enumerate() {
                assert_eq!(got, want, "node {i} of {} (round {round})", nodes.len());
            }
        }
    }
    assert_validation_clean(&gpu);
}

#[test]
fn gpu_skinning_matches_cpu_and_feeds_refit() {
    let Some(mut gpu) = test_gpu("gpu_skinning_matches_cpu_and_feeds_refit") else { return };
    let skin = Skin::new(&gpu).unwrap();
    let refit = BlasRefit::new(&gpu).unwrap();
    let mut rng = Rng(77);
    let (rest, triangles) = grid(60, &mut rng);
    let bone_count = 12u32;
    let joints: Vec<[u16; 4]> =
        (0..rest.len()).map(|_| [0; 4].map(|_| rng.below(bone_count as usize) as u16)).collect();
    let weights: Vec<[f32; 4]> = (0..rest.len())
        .map(|_| {
            let w = [rng.range(0.0, 1.0), rng.range(0.0, 1.0), rng.range(0.0, 1.0), rng.range(0.0, 1.0)];
            let sum: f32 = w.iter().sum();
            w.map(|x| x / sum)
        })
        .collect();
    let data = SkinData::new(rest.clone(), joints, weights, bone_count).unwrap();
    let blas = Blas::build(&rest, &triangles).unwrap();
    let gpu_blas = GpuBlas::upload(&mut gpu, &blas, &rest).unwrap();
    let gpu_skin = GpuSkin::upload(&mut gpu, &data).unwrap();
    for frame in 0..4 {
        let bones: Vec<BoneMatrix> = (0..bone_count)
            .map(|b| {
                let angle = 0.1 * (frame * 7 + b) as f32;
                let (s, c) = angle.sin_cos();
                [[c, 0.0, s, rng.range(-1.0, 1.0)], [0.0, 1.0, 0.0, 0.5 * b as f32], [-s, 0.0, c, 0.0]]
            })
            .collect();
        gpu.submit("skin + refit", |rec| {
            rec.pass("skin", |rec| skin.record(rec, &gpu_skin, &bones, &gpu_blas.positions))?;
            rec.pass("blas refit", |rec| refit.record(rec, &gpu_blas))
        })
        .unwrap();
        let timings: Vec<String> = gpu.last_timings().iter().map(|t| t.name.clone()).collect();
        if gpu.info().timestamps {
            assert_eq!(timings, ["skin", "blas refit"]);
            assert!(gpu.last_timings().iter().all(|t| t.milliseconds >= 0.0 && t.milliseconds.is_finite()));
        }
        let skinned: Vec<[f32; 3]> = gpu.read(&gpu_blas.positions, rest.len()).unwrap();
        let expected = data.skin(&bones);
        for (v, (got, want)) in skinned.iter().zip(&expected).enumerate() {
            for axis in 0..3 {
                let tolerance = 1e-5 * (1.0 + want[axis].abs());
                assert!((got[axis] - want[axis]).abs() <= tolerance, "vertex {v} axis {axis}: {got:?} vs {want:?}");
            }
        }
        // The refit must match the CPU refit of exactly the vertices the GPU produced.
        let mut cpu = blas.clone();
        cpu.refit(&skinned).unwrap();
        let nodes: Vec<BvhNode> = gpu.read(&gpu_blas.nodes, blas.nodes.len()).unwrap();
        assert_eq!(nodes, cpu.nodes, "frame {frame}");
        cpu.validate(&skinned).unwrap();
    }
    assert_validation_clean(&gpu);
}

#[test]
fn gpu_refuses_bad_buffers_and_arguments_without_side_effects() {
    let Some(mut gpu) = test_gpu("gpu_refuses_bad_buffers_and_arguments_without_side_effects") else { return };
    assert!(matches!(gpu.buffer("zero", 0, BufferMemory::Device), Err(GpuError::InvalidInput(_))));
    assert!(matches!(gpu.buffer("huge", MAX_BUFFER_BYTES + 1, BufferMemory::Device), Err(GpuError::InvalidInput(_))));
    let buffer = gpu.buffer_from("data", &[1u32, 2, 3, 4]).unwrap();
    let err = gpu.submit("bad upload", |rec| rec.upload(&buffer, 12, &[0u8; 8])).unwrap_err();
    assert!(matches!(err, GpuError::InvalidInput(ref m) if m.contains("exceeds")), "{err}");
    assert!(gpu.submit("bad download", |rec| rec.download(&buffer, 8, 9)).is_err());
    assert!(gpu.submit("overflow", |rec| rec.download(&buffer, u64::MAX, 2)).is_err());
    let refit = BlasRefit::new(&gpu).unwrap();
    // A push block of the wrong size is refused before recording.
    let err = gpu.submit("bad push", |rec| rec.dispatch_threads(&refit.kernel, &[0u32; 3], 1)).unwrap_err();
    assert!(err.to_string().contains("push-constant"), "{err}");
    let limit = gpu.info().max_group_count[0];
    let push = BlasRefitPush::default();
    if limit < u32::MAX {
        let err = gpu.submit("too many groups", |rec| rec.dispatch(&refit.kernel, &push, [limit + 1, 1, 1]));
        assert!(err.is_err());
    }
    // Nothing above reached the device, and the context still works.
    assert_eq!(gpu.read::<u32>(&buffer, 4).unwrap(), [1, 2, 3, 4]);
    // Mismatched BLAS and skin inputs.
    let p = vec![[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]];
    let blas = Blas::build(&p, &[[0, 1, 2]]).unwrap();
    assert!(GpuBlas::upload(&mut gpu, &blas, &p[..2]).is_err());
    let skin = Skin::new(&gpu).unwrap();
    let data = SkinData::new(p.clone(), vec![[0; 4]; 3], vec![[1.0, 0.0, 0.0, 0.0]; 3], 2).unwrap();
    let gpu_skin = GpuSkin::upload(&mut gpu, &data).unwrap();
    let identity: BoneMatrix = [[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0]];
    let small = gpu.buffer("small", 16, BufferMemory::Device).unwrap();
    assert!(gpu.submit("few bones", |rec| skin.record(rec, &gpu_skin, &[identity], &small)).is_err());
    let mut nan = identity;
    nan[1][3] = f32::NAN;
    assert!(gpu.submit("nan bone", |rec| skin.record(rec, &gpu_skin, &[identity, nan], &small)).is_err());
    assert!(gpu.submit("small output", |rec| skin.record(rec, &gpu_skin, &[identity; 2], &small)).is_err());
    assert_validation_clean(&gpu);
}

#[test]
fn device_choice_by_name_and_index() {
    let Some(gpu) = test_gpu("device_choice_by_name_and_index") else { return };
    let name = gpu.info().name.clone();
    drop(gpu);
    let by_name = Gpu::new(&GpuConfig { validation: true, device: DeviceChoice::Name(name[..3].to_lowercase()) });
    assert_eq!(by_name.unwrap().info().name, name);
    let missing = Gpu::new(&GpuConfig { validation: false, device: DeviceChoice::Name("no such device xyz".into()) });
    assert!(matches!(missing, Err(GpuError::NoDevice(ref m)) if m.contains("no device matches")));
    let missing = Gpu::new(&GpuConfig { validation: false, device: DeviceChoice::Index(999) });
    assert!(matches!(missing, Err(GpuError::NoDevice(_))));
}

#[test]
fn validation_layer_messages_are_collected() {
    // Proves the "validation clean" assertions can fail: a fill at an unaligned
    // offset breaks a valid-usage rule and must be reported.
    let Some(mut gpu) = test_gpu("validation_layer_messages_are_collected") else { return };
    let buffer = gpu.buffer("target", 64, BufferMemory::Device).unwrap();
    assert_validation_clean(&gpu);
    let device = gpu.device().clone();
    gpu.submit("misuse", |rec| {
        // SAFETY: deliberately invalid usage (offset not a multiple of 4) that the
        // validation layer reports; lavapipe and real drivers ignore the low bits.
        unsafe { device.cmd_fill_buffer(rec.command_buffer(), buffer.raw(), 2, 4, 0) };
        Ok(())
    })
    .unwrap();
    let messages = gpu.validation_messages();
    assert!(messages.iter().any(|m| m.contains("dstOffset")), "{messages:?}");
}
