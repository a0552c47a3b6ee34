//! The GPU passes against their CPU references: BLAS build and refit, skinning,
//! buffers and submissions, barriers, validation, TLAS and traversal, the ray tracer
//! following bodies, sorting, memory budgets and embedded mode (DDGI: `gi_tests.rs`).
use super::*;
use crate::spatial::tests::Rng;

/// A wavy grid of `n x n` unit quads (2 triangles each).
pub(crate) fn grid(n: u32, rng: &mut Rng) -> (Vec<[f32; 3]>, Vec<[u32; 3]>) {
    grid_mesh(n, 1.0, |_, _| rng.range(-0.5, 0.5))
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
        let mut ids: Vec<u32> = blas.triangles.iter().map(|t| t[3]).collect();
        ids.sort_unstable();
        assert!(ids.iter().enumerate().all(|(i, &id)| i as u32 == id), "primitive ids are a permutation");
        for t in &blas.triangles {
            assert_eq!(t[..3], triangles[t[3] as usize]);
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
        let timings: Vec<&str> = gpu.last_timings().iter().map(|t| t.name).collect();
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
    let err = gpu.submit("bad push", |rec| rec.dispatch_threads(&refit.kernel, &[0u32; 3], 1, &[])).unwrap_err();
    assert!(err.to_string().contains("push-constant"), "{err}");
    let limit = gpu.info().max_group_count[0];
    let push = BlasRefitPush::default();
    if limit < u32::MAX {
        let err = gpu.submit("too many groups", |rec| rec.dispatch(&refit.kernel, &push, [limit + 1, 1, 1], &[]));
        assert!(err.is_err());
    }
    let empty = gpu.submit("empty download", |rec| rec.download(&buffer, 16, 0)).unwrap();
    assert!(empty.bytes().is_empty());
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

/// `submit_async` returns with the work in flight; `wait` completes it (downloads are
/// readable, timings collected); a second submission, a read or a drop waits for the
/// one in flight first, and the ring's data survives; a failed recording submits
/// nothing and leaves no submission in flight.
#[test]
fn asynchronous_submissions_complete_in_order() {
    let Some(mut gpu) = test_gpu("asynchronous_submissions_complete_in_order") else { return };
    assert_eq!(gpu.wait().unwrap(), GpuWait::default(), "nothing in flight");
    let a = gpu.buffer("a", 4096, BufferMemory::Device).unwrap();
    let b = gpu.buffer("b", 4096, BufferMemory::Device).unwrap();
    let first: Vec<u32> = (0..1024).collect();
    let download = gpu
        .submit_async("first", |rec| {
            rec.pass("upload a", |rec| rec.upload(&a, 0, bytemuck::cast_slice(&first)))?;
            rec.download(&a, 0, 4096)
        })
        .unwrap();
    assert!(gpu.is_pending());
    // The second upload goes through the staging ring the first may still read:
    // it must wait for the first, or `a` would hold the second's data.
    let second: Vec<u32> = (0..1024).map(|i| i * 3).collect();
    gpu.submit_async("second", |rec| rec.pass("upload b", |rec| rec.upload(&b, 0, bytemuck::cast_slice(&second))))
        .unwrap();
    assert_eq!(download.to_vec::<u32>(), first, "the first completed before the second was recorded");
    let wait = gpu.wait().unwrap();
    assert!(wait.waited && wait.blocked_ms >= 0.0);
    assert!(!gpu.is_pending());
    assert_eq!(gpu.last_timings().iter().map(|t| t.name).collect::<Vec<_>>(), ["upload b"]);
    assert_eq!(gpu.read::<u32>(&b, 1024).unwrap(), second);
    let err = gpu.submit_async("bad", |rec| rec.upload(&a, 4092, &[0u8; 8])).unwrap_err();
    assert!(matches!(err, GpuError::InvalidInput(_)), "{err}");
    assert!(!gpu.is_pending(), "a refused recording submits nothing");
    gpu.submit_async("left in flight", |rec| rec.upload(&a, 0, &[0u8; 16])).unwrap();
    assert_validation_clean(&gpu);
    drop(gpu); // waits for the submission in flight before destroying anything
}

/// A recording of the shape the last one had (the same commands over buffers in the
/// same order of first use) reuses its compiled graph, whatever the buffers: the
/// barriers equal a fresh context's and the data is right; another shape compiles.
#[test]
fn recordings_of_one_shape_reuse_the_compiled_graph() {
    let test = "recordings_of_one_shape_reuse_the_compiled_graph";
    let Some(mut gpu) = test_gpu(test) else { return };
    let buffers: Vec<GpuBuffer> = (0..4).map(|_| gpu.buffer("x", 256, BufferMemory::Device).unwrap()).collect();
    // Upload, copy over, overwrite the source, copy half back, read back: RAW, WAR
    // and WAW hazards on both buffers.
    let chain = |gpu: &mut Gpu, a: &GpuBuffer, b: &GpuBuffer, seed: u32| {
        let data: Vec<u32> = (0..64).map(|i| i * seed).collect();
        let download = gpu
            .submit("chain", |rec| {
                rec.upload(a, 0, bytemuck::cast_slice(&data))?;
                rec.copy(a, 0, b, 0, 256)?;
                rec.fill(a, 7);
                rec.copy(b, 0, a, 0, 128)?;
                rec.download(a, 0, 256)
            })
            .unwrap();
        download.to_vec::<u32>()
    };
    let want = |seed: u32| (0..64).map(|i| if i < 32 { i * seed } else { 7 }).collect::<Vec<u32>>();
    assert_eq!(chain(&mut gpu, &buffers[0], &buffers[1], 3), want(3));
    let sync = gpu.last_sync();
    assert!(sync.hazards > 0, "{sync:?}");
    assert_eq!(gpu.graph_compiles(), 1);
    assert_eq!(chain(&mut gpu, &buffers[1], &buffers[0], 4), want(4), "buffers swapped");
    assert_eq!((gpu.graph_compiles(), gpu.last_sync()), (1, sync));
    gpu.submit("other", |rec| {
        rec.fill(&buffers[2], 1);
        rec.copy(&buffers[2], 0, &buffers[3], 0, 256)
    })
    .unwrap();
    assert_eq!(gpu.graph_compiles(), 2);
    assert_ne!(gpu.last_sync(), sync);
    assert_eq!(chain(&mut gpu, &buffers[3], &buffers[2], 5), want(5));
    assert_eq!((gpu.graph_compiles(), gpu.last_sync()), (3, sync));
    let Some(mut fresh) = test_gpu(test) else { return };
    let (a, b) =
        (fresh.buffer("a", 256, BufferMemory::Device).unwrap(), fresh.buffer("b", 256, BufferMemory::Device).unwrap());
    assert_eq!(chain(&mut fresh, &a, &b, 6), want(6));
    assert_eq!(fresh.last_sync(), sync, "a fresh context compiles the same barriers");
    assert_validation_clean(&gpu);
    assert_validation_clean(&fresh);
}

/// Messages raised while a context is torn down (objects alive at `vkDestroyDevice`)
/// are kept for [`teardown_messages`]: none after a clean run, and a leaked fence
/// is reported.
#[test]
fn teardown_messages_are_checked() {
    let Some(mut gpu) = test_gpu("teardown_messages_are_checked") else { return };
    let a = gpu.buffer("a", 4096, BufferMemory::Device).unwrap();
    gpu.submit("work", |rec| rec.pass("upload", |rec| rec.upload(&a, 0, &[5u8; 64]))).unwrap();
    assert_eq!(gpu.read::<u8>(&a, 64).unwrap(), [5u8; 64]);
    assert_validation_clean(&gpu);
    drop(a);
    let before = crate::gpu::teardown_messages().len();
    drop(gpu);
    let clean = crate::gpu::teardown_messages().split_off(before);
    assert!(clean.is_empty(), "{} messages at teardown:\n{}", clean.len(), clean.join("\n"));
    // A fence that outlives its device is named at vkDestroyDevice.
    let gpu = test_gpu("teardown_messages_are_checked (leak)").unwrap();
    gpu.leak_a_fence();
    let before = crate::gpu::teardown_messages().len();
    drop(gpu);
    let leaked = crate::gpu::teardown_messages().split_off(before);
    assert!(leaked.iter().any(|m| m.contains("VkFence")), "{leaked:?}");
}

/// A lost device (injected at a fence wait, where a hang or reset shows) fails that
/// call and every later one with `DeviceLost`, submits nothing more, and the context
/// can be dropped and a new one made that works.
#[test]
fn a_lost_device_fails_every_later_call_and_a_new_context_works() {
    let Some(mut gpu) = test_gpu("a_lost_device_fails_every_later_call_and_a_new_context_works") else { return };
    let a = gpu.buffer("a", 256, BufferMemory::Device).unwrap();
    gpu.lose_device_after(1);
    gpu.submit("before", |rec| rec.pass("upload", |rec| rec.upload(&a, 0, &[1u8; 16]))).unwrap();
    let err = gpu.submit("lost here", |rec| rec.pass("upload", |rec| rec.upload(&a, 0, &[2u8; 16]))).unwrap_err();
    assert!(matches!(err, GpuError::DeviceLost), "{err}");
    for _ in 0..2 {
        let err = gpu.submit_async("after", |rec| rec.upload(&a, 0, &[3u8; 16])).unwrap_err();
        assert!(matches!(err, GpuError::DeviceLost), "{err}");
        assert!(!gpu.is_pending(), "nothing is submitted to a lost device");
    }
    assert!(matches!(gpu.read::<u8>(&a, 16), Err(GpuError::DeviceLost)));
    drop(a);
    drop(gpu);
    let mut gpu = test_gpu("a new context after a lost one").unwrap();
    let b = gpu.buffer("b", 256, BufferMemory::Device).unwrap();
    gpu.submit("after the loss", |rec| rec.pass("upload", |rec| rec.upload(&b, 0, &[7u8; 16]))).unwrap();
    assert_eq!(gpu.read::<u8>(&b, 16).unwrap(), [7u8; 16]);
    assert_validation_clean(&gpu);
}

#[test]
fn sphere_mesh_is_closed_outward_and_on_the_sphere() {
    let (radius, rings, segments) = (0.75, 8, 12);
    let (positions, triangles) = sphere_mesh(radius, rings, segments);
    assert_eq!(positions.len() as u32, 2 + (rings - 1) * segments);
    assert_eq!(triangles.len() as u32, 2 * segments * (rings - 1));
    for p in &positions {
        assert!((glam::Vec3::from(*p).length() - radius).abs() < 1e-5, "{p:?}");
    }
    // Closed: every directed edge appears once and its reverse once.
    let mut edges = std::collections::HashMap::new();
    for t in &triangles {
        for (u, v) in [(t[0], t[1]), (t[1], t[2]), (t[2], t[0])] {
            *edges.entry((u, v)).or_insert(0) += 1;
        }
    }
    assert!(edges.iter().all(|(&(u, v), &n)| n == 1 && edges.get(&(v, u)) == Some(&1)));
    // Outward: the signed volume is positive and close to the sphere's.
    let p = |i: u32| glam::Vec3::from(positions[i as usize]);
    let volume: f32 = triangles.iter().map(|t| p(t[0]).dot(p(t[1]).cross(p(t[2]))) / 6.0).sum();
    let sphere = 4.0 / 3.0 * std::f32::consts::PI * radius * radius * radius;
    assert!(volume > 0.85 * sphere && volume < sphere, "{volume} vs {sphere}");
}

#[test]
fn device_choice_by_name_and_index() {
    let Some(gpu) = test_gpu("device_choice_by_name_and_index") else { return };
    let name = gpu.info().name.clone();
    drop(gpu);
    let by_name = Gpu::new(&GpuConfig {
        validation: true,
        device: DeviceChoice::Name(name[..3].to_lowercase()),
        memory_budget: None,
    });
    assert_eq!(by_name.unwrap().info().name, name);
    let missing =
        Gpu::new(&GpuConfig { device: DeviceChoice::Name("no such device xyz".into()), ..GpuConfig::default() });
    assert!(matches!(missing, Err(GpuError::NoDevice(ref m)) if m.contains("no device matches")));
    let missing = Gpu::new(&GpuConfig { device: DeviceChoice::Index(999), ..GpuConfig::default() });
    assert!(matches!(missing, Err(GpuError::NoDevice(_))));
}

#[test]
fn barriers_are_derived_from_the_declared_hazards() {
    // op0 upload a | op1 copy a->c | op2 copy a->d | op3 download c | op4 download d
    // | op5 fill a. Hazards inside the submission: RAW a (op1), RAW a (op2, already
    // visible to transfer reads: covered), RAW c (op3), RAW d (op4), WAR a from op1
    // and op2 (op5, one merged barrier). Plus the entry and the exit barrier.
    let Some(mut gpu) = test_gpu("barriers_are_derived_from_the_declared_hazards") else { return };
    let words: Vec<u32> = (0..64).map(|i| i * 7 + 1).collect();
    let a = gpu.buffer("a", 256, BufferMemory::Device).unwrap();
    let c = gpu.buffer("c", 256, BufferMemory::Device).unwrap();
    let d = gpu.buffer("d", 128, BufferMemory::Device).unwrap();
    let (from_c, from_d) = gpu
        .submit("hazards", |rec| {
            rec.upload(&a, 0, bytemuck::cast_slice(&words))?;
            rec.copy(&a, 0, &c, 0, 256)?;
            rec.copy(&a, 128, &d, 0, 128)?;
            let from_c = rec.download(&c, 0, 256)?;
            let from_d = rec.download(&d, 0, 128)?;
            rec.fill(&a, 9);
            Ok((from_c, from_d))
        })
        .unwrap();
    assert_eq!(from_c.to_vec::<u32>(), words);
    assert_eq!(from_d.to_vec::<u32>(), words[32..]);
    let sync = gpu.last_sync();
    assert_eq!(sync, SyncStats { commands: 6, barriers: 6, buffer_barriers: 4, hazards: 6, covered: 1 });
    assert_eq!(gpu.read::<u32>(&a, 64).unwrap(), vec![9; 64], "the fill ran after both copies");
    // Two writes of different buffers with nothing between them: no barrier at
    // all inside the submission, only entry and exit.
    gpu.submit("independent", |rec| {
        rec.fill(&c, 1);
        rec.fill(&d, 2);
        Ok(())
    })
    .unwrap();
    assert_eq!(gpu.last_sync(), SyncStats { commands: 2, barriers: 1, ..SyncStats::default() });
    // A dispatch chain of real kernels: every sort step writes the keys the next
    // one reads, so each dispatch after the first waits on its predecessor.
    let keys = gpu.buffer_from("keys", &(0..2048u64).rev().collect::<Vec<_>>()).unwrap();
    let builder = TlasBuilder::new(&gpu).unwrap();
    gpu.submit("sort", |rec| builder.record_sort(rec, &keys, 2048)).unwrap();
    let sync = gpu.last_sync();
    assert!(sync.commands > 2 && sync.buffer_barriers == sync.commands - 1, "{sync:?}");
    assert_eq!(gpu.read::<u64>(&keys, 2048).unwrap(), (0..2048u64).collect::<Vec<_>>());
    assert_validation_clean(&gpu);
}

#[test]
fn validation_layer_messages_are_collected() {
    // Proves the "validation clean" assertions can fail: a fill at an unaligned
    // offset breaks a valid-usage rule and must be reported.
    let Some(mut gpu) = test_gpu("validation_layer_messages_are_collected") else { return };
    let buffer = gpu.buffer("target", 64, BufferMemory::Device).unwrap();
    assert_validation_clean(&gpu);
    let raw = buffer.raw();
    gpu.submit("misuse", |rec| {
        rec.raw(&[Use::write(&buffer)], move |device, cmd| {
            // SAFETY: deliberately invalid usage (offset not a multiple of 4) that
            // the validation layer reports; lavapipe and real drivers ignore the
            // low bits.
            unsafe { device.cmd_fill_buffer(cmd, raw, 2, 4, 0) };
        });
        Ok(())
    })
    .unwrap();
    let messages = gpu.validation_messages();
    assert!(messages.iter().any(|m| m.contains("dstOffset")), "{messages:?}");
    // Kiln's own check: a dispatch whose push constants point into a buffer it did
    // not declare (no group runs, but the declaration is still wrong).
    let refit = BlasRefit::new(&gpu).unwrap();
    let inside = BlasRefitPush { nodes: buffer.address() + 16, ..BlasRefitPush::default() };
    gpu.submit("declared", |rec| rec.dispatch(&refit.kernel, &inside, [0, 1, 1], &[Use::write(&buffer)])).unwrap();
    assert_eq!(gpu.validation_messages().len(), messages.len(), "declared: no message");
    gpu.submit("undeclared", |rec| rec.dispatch(&refit.kernel, &inside, [0, 1, 1], &[])).unwrap();
    let messages = gpu.validation_messages();
    let undeclared = messages.iter().filter(|m| m.contains("'blas_refit' reaches buffer 'target'")).count();
    assert_eq!(undeclared, 1, "{messages:?}");
}

pub(crate) fn random_transform(rng: &mut Rng, spread: f32) -> Affine {
    let axis = rng.vec3(-1.0, 1.0).try_normalize().unwrap_or(glam::Vec3::Y);
    let rotation = glam::Mat3::from_axis_angle(axis, rng.range(0.0, std::f32::consts::TAU));
    let scale = rng.range(0.5, 2.0);
    let m = rotation * glam::Mat3::from_diagonal(glam::Vec3::splat(scale));
    let t = rng.vec3(-spread, spread);
    [
        [m.x_axis.x, m.y_axis.x, m.z_axis.x, t.x],
        [m.x_axis.y, m.y_axis.y, m.z_axis.y, t.y],
        [m.x_axis.z, m.y_axis.z, m.z_axis.z, t.z],
    ]
}

/// Meshes: a wavy grid, a triangle soup, one triangle; `count` instances of them.
fn test_scene(rng: &mut Rng, count: usize) -> Scene {
    let mut scene = Scene::new();
    let (p, t) = grid(20, rng);
    scene.add_mesh(&p, &t).unwrap();
    let (p, t) = soup(200, rng);
    let soup_positions: Vec<[f32; 3]> = p.iter().map(|v| [v[0] * 0.1, v[1] * 0.1, v[2] * 0.1]).collect();
    scene.add_mesh(&soup_positions, &t).unwrap();
    scene.add_mesh(&[[0.0, 0.0, 0.0], [3.0, 0.0, 0.0], [0.0, 3.0, 0.0]], &[[0, 1, 2]]).unwrap();
    for i in 0..count {
        let transform = random_transform(rng, 100.0);
        scene.add_instance(rng.below(3) as u32, &transform, 1 + rng.below(3) as u32, 1000 + i as u32).unwrap();
    }
    scene
}

/// Builds the TLAS on the GPU and checks it against the CPU reference; returns
/// the GPU TLAS nodes.
fn build_and_check_tlas(gpu: &mut Gpu, builder: &TlasBuilder, scene: &Scene, gpu_scene: &GpuScene) -> Vec<TlasNode> {
    let n = scene.instances().len();
    gpu.submit("tlas", |rec| {
        gpu_scene.upload_instances(rec, scene, &[], true)?;
        rec.pass("tlas build", |rec| builder.record(rec, gpu_scene))
    })
    .unwrap();
    let keys: Vec<[u32; 2]> = gpu.read(gpu_scene.keys(), n).unwrap();
    let nodes: Vec<TlasNode> = gpu.read(gpu_scene.tlas_nodes(), 2 * n - 1).unwrap();
    let gpu_boxes: Vec<TlasNode> = gpu.read(&gpu_scene.leaf_boxes, n).unwrap();
    // Keys: strictly increasing, a permutation of the instances, codes as on the CPU
    // (a code may differ only when a centre sits within rounding of a cell border).
    assert!(keys.windows(2).all(|w| w[0] < w[1]), "keys sorted and unique");
    let mut instances: Vec<u32> = keys.iter().map(|k| k[1]).collect();
    instances.sort_unstable();
    assert!(instances.iter().enumerate().all(|(i, &x)| i as u32 == x));
    let cpu_boxes = scene.instance_boxes();
    for (i, (g, c)) in gpu_boxes.iter().zip(&cpu_boxes).enumerate() {
        for axis in 0..3 {
            for (a, b) in [(g.lo[axis], c.lo[axis]), (g.hi[axis], c.hi[axis])] {
                assert!((a - b).abs() <= 1e-5 * (1.0 + b.abs()), "instance {i} box: {g:?} vs {c:?}");
            }
        }
    }
    let cpu_keys = sorted_keys(&cpu_boxes);
    let gpu_code: std::collections::HashMap<u32, u32> = keys.iter().map(|k| (k[1], k[0])).collect();
    let differing = cpu_keys.iter().filter(|k| gpu_code[&k[1]] != k[0]).count();
    assert!(differing * 100 <= n, "{differing} of {n} Morton codes differ from the CPU's");
    // Hierarchy and boxes: bit-identical to the CPU build over the same keys and boxes.
    let cpu = CpuTlas::build(&keys, &gpu_boxes);
    assert_eq!(nodes, cpu.nodes, "GPU TLAS equals the CPU LBVH");
    let parents: Vec<u32> = gpu.read(&gpu_scene.parents, 2 * n - 1).unwrap();
    assert_eq!(parents, cpu.parents);
    assert!(cpu.depth() <= TLAS_STACK, "depth {}", cpu.depth());
    nodes
}

pub(crate) fn random_rays(rng: &mut Rng, scene: &Scene, count: usize) -> Vec<GpuRay> {
    let boxes = scene.instance_boxes();
    (0..count)
        .map(|i| {
            let origin = rng.vec3(-130.0, 130.0);
            let dir = if i % 4 == 0 {
                rng.vec3(-1.0, 1.0)
            } else {
                // Aim at a random instance so most rays hit something.
                let b = &boxes[rng.below(boxes.len())];
                let target = glam::Vec3::from(b.lo).lerp(glam::Vec3::from(b.hi), rng.range(0.2, 0.8));
                (target - origin) * rng.range(0.2, 3.0)
            };
            let (t_min, t_max) = if i % 7 == 0 { (rng.range(0.0, 0.5), rng.range(0.5, 1.5)) } else { (0.0, 1e30) };
            GpuRay {
                origin: origin.to_array(),
                t_min,
                dir: dir.to_array(),
                t_max,
                mask: if i % 5 == 0 { 1 + rng.below(3) as u32 } else { u32::MAX },
                ..GpuRay::default()
            }
        })
        .collect()
}

/// GPU hits equal CPU hits; the only differences allowed are ties (same distance
/// within rounding: a ray through a shared edge, or two coplanar triangles).
///
/// Barycentrics may differ by more where they are ill-conditioned: given `view` (the
/// scene the CPU traced), a pair outside the plain tolerance is held to
/// [`barycentric_slack`] instead.
pub(crate) fn compare_hits(
    view: Option<&TraceScene<'_>>,
    rays: &[GpuRay],
    gpu: &[GpuHit],
    cpu: &[GpuHit],
    any_hit: bool,
) -> usize {
    let (mut ties, mut hits, mut loose) = (0, 0, 0);
    for (i, ((g, c), ray)) in gpu.iter().zip(cpu).zip(rays).enumerate() {
        hits += usize::from(c.instance != NO_HIT);
        let close = |a: f32, b: f32| (a - b).abs() <= 1e-4 * (1.0 + b.abs());
        if any_hit {
            assert_eq!(g.instance == NO_HIT, c.instance == NO_HIT, "ray {i} {ray:?}: {g:?} vs {c:?}");
            continue;
        }
        if g.instance == c.instance && g.primitive == c.primitive {
            let barycentrics_agree = (close(g.u, c.u) && close(g.v, c.v))
                || view.is_some_and(|view| {
                    let slack = barycentric_slack(view, ray, c);
                    loose += 1;
                    (g.u - c.u).abs() <= slack && (g.v - c.v).abs() <= slack
                });
            assert!(close(g.t, c.t) && barycentrics_agree, "ray {i}: {g:?} vs {c:?}");
            assert_eq!(g.flags, c.flags, "ray {i}");
            assert_eq!(g.user_id, c.user_id);
            let dot: f32 = (0..3).map(|k| g.normal[k] * c.normal[k]).sum();
            assert!(g.instance == NO_HIT || dot > 0.9999, "ray {i}: normals {:?} vs {:?}", g.normal, c.normal);
        } else {
            assert!(g.instance != NO_HIT && c.instance != NO_HIT && close(g.t, c.t), "ray {i} {ray:?}: {g:?} vs {c:?}");
            ties += 1;
        }
    }
    assert!(hits * 3 >= rays.len(), "only {hits} of {} rays hit: the test scene is too sparse", rays.len());
    assert!(loose * 100 <= hits, "{loose} of {hits} hits needed the ill-conditioned barycentrics' slack");
    ties
}

/// How far a driver's barycentrics for `hit` may stray from the CPU's. Both move
/// the ray into object space first, and a driver that contracts multiply-adds into
/// FMAs (NVIDIA's does, lavapipe does not) rounds that origin differently, by up to
/// a few ulps of the terms that formed it. Barycentrics turn that into an error of about that
/// distance over the triangle's smallest altitude, divided by the cosine of incidence
/// (the determinant of the ray-triangle system); the slack allows 4 ulps. A small
/// triangle 100 m from the origin is the case: an H200 gave `u` 5.5e-4 off the CPU's
/// where this allows 0.023; under 1% of hits may use it.
fn barycentric_slack(view: &TraceScene<'_>, ray: &GpuRay, hit: &GpuHit) -> f32 {
    let instance = &view.instances[hit.instance as usize];
    let blas = view.blas_refs[instance.blas as usize];
    let range = blas.triangle_base as usize..(blas.triangle_base + blas.triangle_count) as usize;
    let triangle = view.triangles[range].iter().find(|t| t[3] == hit.primitive).expect("the hit triangle");
    let corner = |k: usize| glam::Vec3::from(view.positions[(blas.position_base + triangle[k]) as usize]);
    let (a, b, c) = (corner(0), corner(1), corner(2));
    let dir = crate::raytrace::tlas::transform_vector(&instance.world_to_object, glam::Vec3::from(ray.dir));
    let normal = (b - a).cross(c - a);
    let longest = (b - a).length().max((c - b).length()).max((a - c).length());
    let altitude = normal.length() / longest;
    let cos = dir.normalize_or_zero().dot(normal.normalize_or_zero()).abs().max(0.05);
    // The object-space origin's rounding scales with the terms that formed it (the
    // world origin through the matrix, and the translation), not with its own size:
    // an instance 100 m out moves a near origin by ulps of 100 m.
    let m = &instance.world_to_object;
    let formed = (0..3)
        .map(|r| (0..3).map(|k| (m[r][k] * ray.origin[k]).abs()).sum::<f32>() + m[r][3].abs())
        .fold(0.0, f32::max);
    let magnitude = formed + (hit.t * dir).abs().max_element() + a.abs().max_element();
    4.0 * f32::EPSILON * magnitude / (altitude * cos)
}

#[test]
fn gpu_skinning_refit_tlas_and_traversal_match_cpu_references_for_100k_rays() {
    let Some(mut gpu) = test_gpu("gpu_skinning_refit_tlas_and_traversal_match_cpu_references_for_100k_rays") else {
        return;
    };
    let builder = TlasBuilder::new(&gpu).unwrap();
    let tracer = Tracer::new(&gpu).unwrap();
    let mut rng = Rng(2024);
    let mut scene = test_scene(&mut rng, 300);
    // Two skinned meshes (30x30 grids, 8 bones) and five skinned instances of them:
    // each instance is a region of the transient segment, copied from its mesh's
    // mold and refitted; nothing is built on the CPU when one is added.
    let bone_count = 8u32;
    let mut molds = Vec::new();
    for _ in 0..2 {
        let (rest, triangles) = grid(30, &mut rng);
        let rest: Vec<[f32; 3]> = rest.iter().map(|p| [p[0] - 15.0, p[1], p[2] - 15.0]).collect();
        let joints = rest.iter().map(|p| [((p[0] + 15.0) / 4.0) as u16 % bone_count as u16, 0, 0, 0]).collect();
        let weights = vec![[1.0, 0.0, 0.0, 0.0]; rest.len()];
        let data = SkinData::new(rest, joints, weights, bone_count).unwrap();
        molds.push(scene.add_skinned_mesh(data, &triangles).unwrap());
    }
    let built_nodes = scene.nodes.len();
    let skinned: Vec<(u32, u32)> = (0..5u32)
        .map(|i| {
            let mesh = molds[i as usize % 2];
            (scene.add_instance(mesh, &random_transform(&mut rng, 60.0), u32::MAX, 9000 + i).unwrap(), mesh)
        })
        .collect();
    assert_eq!(scene.nodes.len(), built_nodes, "adding skinned instances builds nothing");
    let skin = Skin::new(&gpu).unwrap();
    let refit = BlasRefit::new(&gpu).unwrap();
    let no_bones = vec![IDENTITY; bone_count as usize];
    let unposed: Vec<TransientSlot> =
        skinned.iter().map(|&(instance, mesh)| TransientSlot { instance, mesh, bones: &no_bones }).collect();
    let gpu_scene = GpuScene::new(&mut gpu, &scene, TransientLens::of(&scene, &unposed).unwrap()).unwrap();
    let rays = random_rays(&mut rng, &scene, 100_000);
    let ray_buffer = gpu.buffer_from("rays", &rays).unwrap();
    let hit_buffer = gpu.buffer("hits", 48 * rays.len() as u64, BufferMemory::Device).unwrap();
    for frame in 0..2 {
        if frame == 1 {
            // Move every instance: the TLAS is rebuilt from scratch each frame.
            for i in 0..scene.instances().len() as u32 {
                scene.set_transform(i, &random_transform(&mut rng, 100.0)).unwrap();
            }
        }
        // Skin + refit every skinned instance on the GPU; the CPU reference takes the
        // GPU's vertices (checked against CPU skinning) and refits its own copies.
        let poses: Vec<Vec<BoneMatrix>> = (0..skinned.len())
            .map(|slot| {
                (0..bone_count)
                    .map(|b| {
                        let (s, c) = (0.2 * (b + slot as u32 + 3 * frame) as f32).sin_cos();
                        [[c, -s, 0.0, 0.0], [s, c, 0.0, 2.0 * b as f32], [0.0, 0.0, 1.0, 0.0]]
                    })
                    .collect()
            })
            .collect();
        let slots: Vec<TransientSlot> = skinned
            .iter()
            .zip(&poses)
            .map(|(&(instance, mesh), bones)| TransientSlot { instance, mesh, bones })
            .collect();
        gpu.submit("skin", |rec| {
            gpu_scene.upload_instances(rec, &scene, &[], true)?;
            gpu_scene.record_transient_refs(rec, &scene, &slots)?;
            rec.pass("skin + refit", |rec| gpu_scene.record_transient(rec, &scene, &skin, &refit, &slots))
        })
        .unwrap();
        let positions = gpu_scene.read_transient_positions(&mut gpu, &scene, &slots).unwrap();
        for ((&(_, mesh), bones), got) in skinned.iter().zip(&poses).zip(&positions) {
            let expected = scene.skinned[scene.skin_index(mesh).unwrap() as usize].skin.skin(bones);
            for (got, want) in got.iter().zip(&expected) {
                assert!(
                    (0..3).all(|k| (got[k] - want[k]).abs() <= 1e-4 * (1.0 + want[k].abs())),
                    "{got:?} vs {want:?}"
                );
            }
        }
        let poses: Vec<(u32, Vec<[f32; 3]>)> = skinned.iter().map(|s| s.0).zip(positions).collect();
        let posed = scene.posed(&poses).unwrap();
        assert_eq!(gpu_scene.read_blas_nodes(&mut gpu).unwrap(), scene.nodes, "the molds are untouched");
        let transient = posed.nodes.len() - scene.nodes.len();
        assert_eq!(
            gpu_scene.read_transient_nodes(&mut gpu, transient).unwrap(),
            posed.nodes[scene.nodes.len()..],
            "the transient segment equals the CPU's refitted copies"
        );
        // The posed scene's instances point at the copies exactly as the device's.
        let scene = posed;
        let tlas = build_and_check_tlas(&mut gpu, &builder, &scene, &gpu_scene);
        for any_hit in [false, true] {
            let count = if any_hit { 20_000 } else { rays.len() };
            gpu.submit("trace", |rec| {
                rec.pass("trace", |rec| tracer.record(rec, &gpu_scene, &ray_buffer, &hit_buffer, count as u32, any_hit))
            })
            .unwrap();
            let gpu_hits: Vec<GpuHit> = gpu.read(&hit_buffer, count).unwrap();
            let view = scene.trace_scene(&tlas);
            let cpu_hits: Vec<GpuHit> = rays[..count].iter().map(|r| trace_cpu(&view, r, any_hit)).collect();
            let ties = compare_hits(Some(&view), &rays[..count], &gpu_hits, &cpu_hits, any_hit);
            assert!(ties * 1000 <= count, "{ties} ties in {count} rays");
        }
    }
    assert_validation_clean(&gpu);
}

#[test]
fn cpu_traversal_equals_brute_force_over_every_triangle() {
    // The reference itself is checked against the simplest possible answer.
    let mut rng = Rng(99);
    let scene = test_scene(&mut rng, 40);
    let boxes = scene.instance_boxes();
    let tlas = CpuTlas::build(&sorted_keys(&boxes), &boxes);
    let view = scene.trace_scene(&tlas.nodes);
    let one_tlas: Vec<Vec<TlasNode>> =
        (0..scene.instances().len()).map(|i| vec![TlasNode { left: i as u32, right: TLAS_LEAF, ..boxes[i] }]).collect();
    for ray in random_rays(&mut rng, &scene, 3000) {
        let hit = trace_cpu(&view, &ray, false);
        // Brute force: every instance alone (one-leaf TLAS), keep the closest.
        let mut best = GpuHit { t: ray.t_max, instance: NO_HIT, ..GpuHit::default() };
        for single in &one_tlas {
            let h = trace_cpu(&scene.trace_scene(single), &ray, false);
            if h.instance != NO_HIT && (best.instance == NO_HIT || h.t < best.t) {
                best = h;
            }
        }
        assert_eq!(hit.instance == NO_HIT, best.instance == NO_HIT, "{ray:?}");
        if hit.instance != NO_HIT {
            assert!((hit.t - best.t).abs() <= 1e-5 * (1.0 + best.t), "{hit:?} vs {best:?}");
        }
        let any = trace_cpu(&view, &ray, true);
        assert_eq!(any.instance == NO_HIT, hit.instance == NO_HIT);
    }
}

#[test]
fn scene_refuses_bad_instances_and_keeps_state() {
    let mut scene = Scene::new();
    assert!(scene.add_instance(0, &IDENTITY, 1, 0).is_err(), "no mesh yet");
    assert!(scene.add_mesh(&[[0.0; 3]], &[]).is_err());
    let mesh = scene.add_mesh(&[[0.0; 3], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]], &[[0, 1, 2]]).unwrap();
    let id = scene.add_instance(mesh, &IDENTITY, 1, 7).unwrap();
    let mut singular = IDENTITY;
    singular[2][2] = 0.0;
    let mut nan = IDENTITY;
    nan[0][3] = f32::NAN;
    assert!(scene.add_instance(mesh, &singular, 1, 0).is_err());
    assert!(scene.set_transform(id, &nan).is_err());
    assert!(scene.set_transform(5, &IDENTITY).is_err());
    assert_eq!(scene.instances().len(), 1);
    assert_eq!(scene.instances()[0].object_to_world, IDENTITY);
    let inv = invert_affine(&random_transform(&mut Rng(3), 10.0)).unwrap();
    assert!(inv.iter().flatten().all(|c| c.is_finite()));
}

/// The CPU reference of what a [`RayTracer`] should see: its scene with each skinned
/// instance (`bones` in [`RayTracer::skinned_order`]) skinned on the CPU into its own
/// copy of its mold, under a CPU-built TLAS.
pub(crate) fn reference_hits(
    tracer: &RayTracer,
    bones: &[Vec<BoneMatrix>],
    rays: &[GpuRay],
    any_hit: bool,
) -> Vec<GpuHit> {
    let base = tracer.scene();
    let poses: Vec<(u32, Vec<[f32; 3]>)> = tracer
        .skinned_order()
        .iter()
        .zip(bones)
        .map(|(&id, bones)| {
            let packed = tracer.instance_index(id).unwrap();
            let mesh = base.instances()[packed as usize].blas;
            (packed, base.skinned[base.skin_index(mesh).unwrap() as usize].skin.skin(bones))
        })
        .collect();
    let scene = base.posed(&poses).unwrap();
    let boxes = scene.instance_boxes();
    let tlas = CpuTlas::build(&sorted_keys(&boxes), &boxes);
    let view = scene.trace_scene(&tlas.nodes);
    rays.iter().map(|r| trace_cpu(&view, r, any_hit)).collect()
}

#[test]
fn gpu_bitonic_sort_equals_a_cpu_sort_for_every_size() {
    let Some(mut gpu) = test_gpu("gpu_bitonic_sort_equals_a_cpu_sort_for_every_size") else {
        return;
    };
    let builder = TlasBuilder::new(&gpu).unwrap();
    let mut rng = Rng(5);
    // Below, at and above one shared-memory block (512 keys), up to 2^17; codes
    // repeat often (few distinct values) so the index breaks most ties.
    for padded in [1u32, 2, 8, 256, 512, 1024, 4096, 1 << 17] {
        let keys: Vec<[u32; 2]> = (0..padded).map(|i| [rng.below(64) as u32 * 0x0100_0001, i ^ 0x5a5a]).collect();
        let buffer = gpu.buffer_from("sort keys", &keys).unwrap();
        gpu.submit("sort", |rec| builder.record_sort(rec, &buffer, padded)).unwrap();
        let got: Vec<[u32; 2]> = gpu.read(&buffer, padded as usize).unwrap();
        let mut want = keys.clone();
        want.sort_unstable();
        assert!(got == want, "{padded} keys: GPU order differs from the CPU sort");
    }
    assert_validation_clean(&gpu);
}

#[test]
fn a_memory_budget_reports_out_of_memory_and_loses_nothing() {
    // A tracer under a 4 MiB budget traces a small scene; a 200k-triangle mesh
    // does not fit: the trace reports OutOfMemory, the partial device scene is
    // freed, the CPU scene is intact, and with a larger budget the same tracer
    // traces the big mesh and matches the CPU reference.
    let Some(gpu) = test_gpu("a_memory_budget_reports_out_of_memory_and_loses_nothing") else { return };
    let budget = 4 << 20;
    gpu.set_memory_budget(Some(budget));
    let mut tracer = RayTracer::with_gpu(gpu).unwrap();
    let (p, t) = box_mesh([1.0, 1.0, 1.0]);
    let cube = tracer.add_mesh(&p, &t).unwrap();
    for i in 0..4 {
        let at = [[1.0, 0.0, 0.0, 3.0 * i as f32], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0]];
        tracer.add_instance(cube, &at, 1, i).unwrap();
    }
    let rays: Vec<GpuRay> = (0..1000)
        .map(|i| GpuRay {
            origin: [(i % 100) as f32 * 0.018 - 0.9, 10.0, (i / 100) as f32 * 0.18 - 0.9],
            dir: [0.0, -1.0, 0.0],
            t_max: f32::INFINITY,
            mask: u32::MAX,
            ..GpuRay::default()
        })
        .collect();
    let mut hits = vec![GpuHit::default(); rays.len()];
    tracer.trace(&rays, TraceMode::Closest, &mut hits).unwrap();
    let held = tracer.gpu().memory_in_use();
    assert!(held > 0 && held <= budget, "{held} bytes held");
    assert!(hits.iter().all(|h| h.instance != NO_HIT), "every ray hits the first cube");

    let (p, t) = grid_mesh(320, 0.05, |x, z| ((x * 7 + z * 3) % 5) as f32 * 0.01);
    let big = tracer.add_mesh(&p, &t).unwrap();
    tracer.add_instance(big, &IDENTITY, 2, 99).unwrap();
    let before = tracer.gpu().memory_in_use();
    let err = tracer.trace(&rays, TraceMode::Closest, &mut hits).unwrap_err();
    assert!(matches!(&err, GpuError::OutOfMemory(m) if m.contains("memory budget")), "{err}");
    assert_eq!(tracer.gpu().memory_in_use(), before, "the partial device scene was freed");
    assert!(tracer.gpu().memory_in_use() <= budget);
    assert_eq!((tracer.mesh_count(), tracer.instance_count()), (2, 5), "the CPU scene is intact");

    tracer.gpu().set_memory_budget(None);
    tracer.trace(&rays, TraceMode::Closest, &mut hits).unwrap();
    assert!(tracer.gpu().memory_in_use() > budget);
    let cpu = reference_hits(&tracer, &[], &rays, false);
    assert_eq!(compare_hits(None, &rays, &hits, &cpu, false), 0);
    // Under the cubes: rays with only the big instance's mask bit find it.
    let under: Vec<GpuRay> = rays
        .iter()
        .enumerate()
        .map(|(i, r)| GpuRay {
            origin: [(i % 100) as f32 * 0.15 + 0.05, 10.0, (i / 100) as f32 * 1.5 + 0.05],
            mask: 2,
            ..*r
        })
        .collect();
    tracer.trace(&under, TraceMode::Closest, &mut hits).unwrap();
    assert!(hits.iter().any(|h| h.user_id == 99), "rays see the big mesh");
    assert_eq!(compare_hits(None, &under, &hits, &reference_hits(&tracer, &[], &under, false), false), 0);
    assert_validation_clean(tracer.gpu());
    // A buffer refused by the budget was destroyed, not left to vkDestroyDevice (other
    // tests' teardowns may land here too; none of them leaves a buffer).
    let before = crate::gpu::teardown_messages().len();
    drop(tracer);
    let teardown = crate::gpu::teardown_messages().split_off(before);
    assert!(!teardown.iter().any(|m| m.contains("VK_OBJECT_TYPE_BUFFER")), "{teardown:?}");
}

/// An engine's own Vulkan objects, made the way an engine would: instance with the
/// validation layer and its own messenger, device with the features Kiln needs, a
/// command pool and one command buffer + fence per frame in flight.
pub(crate) struct EngineDevice {
    entry: ash::Entry,
    instance: ash::Instance,
    messenger: (ash::ext::debug_utils::Instance, ash::vk::DebugUtilsMessengerEXT),
    messages: Box<std::sync::Mutex<Vec<String>>>,
    physical: ash::vk::PhysicalDevice,
    device: ash::Device,
    family: u32,
    queue: ash::vk::Queue,
    pool: ash::vk::CommandPool,
    frames: Vec<(ash::vk::CommandBuffer, ash::vk::Fence)>,
}

unsafe extern "system" fn engine_messages(
    _severity: ash::vk::DebugUtilsMessageSeverityFlagsEXT,
    _kind: ash::vk::DebugUtilsMessageTypeFlagsEXT,
    data: *const ash::vk::DebugUtilsMessengerCallbackDataEXT<'_>,
    user: *mut std::ffi::c_void,
) -> ash::vk::Bool32 {
    // SAFETY: `user` is the engine's boxed log; `data` is valid during the call.
    let (log, data) = unsafe { (&*(user as *const std::sync::Mutex<Vec<String>>), &*data) };
    // SAFETY: the layer passes a NUL-terminated message.
    let text = unsafe { std::ffi::CStr::from_ptr(data.p_message) }.to_string_lossy().into_owned();
    log.lock().unwrap().push(text);
    ash::vk::FALSE
}

impl EngineDevice {
    /// `None` without a loader or a usable device (the caller decides whether that
    /// skips or fails).
    pub(crate) fn new(frames: u32) -> Option<EngineDevice> {
        use ash::vk;
        // SAFETY: (whole function) plain Vulkan object creation with create infos
        // pointing at locals that outlive each call.
        unsafe {
            let entry = ash::Entry::load().ok()?;
            let app = vk::ApplicationInfo::default().api_version(vk::API_VERSION_1_2);
            let layers = [c"VK_LAYER_KHRONOS_validation".as_ptr()];
            let extensions = [ash::ext::debug_utils::NAME.as_ptr()];
            let info = vk::InstanceCreateInfo::default()
                .application_info(&app)
                .enabled_layer_names(&layers)
                .enabled_extension_names(&extensions);
            let instance = entry.create_instance(&info, None).ok()?;
            let messages = Box::new(std::sync::Mutex::new(Vec::new()));
            let loader = ash::ext::debug_utils::Instance::new(&entry, &instance);
            let messenger_info = vk::DebugUtilsMessengerCreateInfoEXT::default()
                .message_severity(
                    vk::DebugUtilsMessageSeverityFlagsEXT::WARNING | vk::DebugUtilsMessageSeverityFlagsEXT::ERROR,
                )
                .message_type(
                    vk::DebugUtilsMessageTypeFlagsEXT::GENERAL
                        | vk::DebugUtilsMessageTypeFlagsEXT::VALIDATION
                        | vk::DebugUtilsMessageTypeFlagsEXT::PERFORMANCE,
                )
                .pfn_user_callback(Some(engine_messages))
                .user_data(&*messages as *const _ as *mut std::ffi::c_void);
            let messenger = loader.create_debug_utils_messenger(&messenger_info, None).ok()?;
            // The device Kiln would pick itself (KILN_GPU_DEVICE or the best one).
            let wanted = Gpu::new(&GpuConfig::from_env()).ok()?.info().name.clone();
            let physical = instance.enumerate_physical_devices().ok()?.into_iter().find(|&p| {
                let props = instance.get_physical_device_properties(p);
                props.device_name_as_c_str().is_ok_and(|n| n.to_string_lossy() == wanted)
            })?;
            let family = instance
                .get_physical_device_queue_family_properties(physical)
                .iter()
                .position(|f| f.queue_flags.contains(vk::QueueFlags::COMPUTE))? as u32;
            let priorities = [1.0f32];
            let queues =
                [vk::DeviceQueueCreateInfo::default().queue_family_index(family).queue_priorities(&priorities)];
            let mut v12 = vk::PhysicalDeviceVulkan12Features::default()
                .buffer_device_address(true)
                .vulkan_memory_model(true)
                .vulkan_memory_model_device_scope(true);
            let info = vk::DeviceCreateInfo::default().queue_create_infos(&queues).push_next(&mut v12);
            let device = instance.create_device(physical, &info, None).ok()?;
            let queue = device.get_device_queue(family, 0);
            let pool_info = vk::CommandPoolCreateInfo::default()
                .queue_family_index(family)
                .flags(vk::CommandPoolCreateFlags::RESET_COMMAND_BUFFER);
            let pool = device.create_command_pool(&pool_info, None).ok()?;
            let alloc = vk::CommandBufferAllocateInfo::default().command_pool(pool).command_buffer_count(frames);
            let cmds = device.allocate_command_buffers(&alloc).ok()?;
            let signalled = vk::FenceCreateInfo::default().flags(vk::FenceCreateFlags::SIGNALED);
            let frames = cmds.into_iter().map(|c| (c, device.create_fence(&signalled, None).unwrap())).collect();
            Some(EngineDevice {
                entry,
                instance,
                messenger: (loader, messenger),
                messages,
                physical,
                device,
                family,
                queue,
                pool,
                frames,
            })
        }
    }

    pub(crate) fn describe(&self, frames_in_flight: u32) -> EmbeddedDevice {
        use ash::vk::Handle;
        assert!(!self.device.handle().is_null());
        EmbeddedDevice {
            get_instance_proc_addr: self.entry.static_fn().get_instance_proc_addr,
            instance: self.instance.handle(),
            physical_device: self.physical,
            device: self.device.handle(),
            queue_family: self.family,
            queue_index: 0,
            frames_in_flight,
            debug_utils: true,
            validation: true,
            memory_budget: None,
        }
    }

    /// Waits for slot `slot`'s previous work, then begins its command buffer.
    pub(crate) fn begin(&self, slot: usize) -> ash::vk::CommandBuffer {
        let (cmd, fence) = self.frames[slot];
        // SAFETY: objects of this device; the fence guards the command buffer.
        unsafe {
            self.device.wait_for_fences(&[fence], true, u64::MAX).unwrap();
            self.device.reset_fences(&[fence]).unwrap();
            self.device.reset_command_buffer(cmd, ash::vk::CommandBufferResetFlags::empty()).unwrap();
            self.device.begin_command_buffer(cmd, &ash::vk::CommandBufferBeginInfo::default()).unwrap();
        }
        cmd
    }

    /// Ends and submits slot `slot`'s command buffer.
    pub(crate) fn submit(&self, slot: usize) {
        let (cmd, fence) = self.frames[slot];
        let cmds = [cmd];
        // SAFETY: a recorded command buffer; the fence was reset in `begin`.
        unsafe {
            self.device.end_command_buffer(cmd).unwrap();
            let submit = [ash::vk::SubmitInfo::default().command_buffers(&cmds)];
            self.device.queue_submit(self.queue, &submit, fence).unwrap();
        }
    }

    /// Records `rays` with the embedded `tracer` into slot `slot`'s command buffer,
    /// submits and waits, and asserts that the hits equal those `reference` (a
    /// standalone tracer over the same scene) traces; returns them.
    pub(crate) fn trace_as(
        &self,
        tracer: &mut RayTracer,
        reference: &mut RayTracer,
        slot: usize,
        rays: &[GpuRay],
        frame: usize,
    ) -> Vec<GpuHit> {
        let cmd = self.begin(slot);
        // SAFETY: `cmd` is recording; the slot's previous submission was waited on.
        let pending = unsafe { tracer.record_trace(cmd, slot as u32, rays, TraceMode::Closest) }.unwrap();
        self.submit(slot);
        self.wait_all();
        let mut hits = vec![GpuHit::default(); rays.len()];
        pending.read(&mut hits).unwrap();
        let mut want = vec![GpuHit::default(); rays.len()];
        reference.trace(rays, TraceMode::Closest, &mut want).unwrap();
        assert!(hits == want, "frame {frame}: embedded hits differ from standalone");
        hits
    }

    pub(crate) fn wait_all(&self) {
        let fences: Vec<_> = self.frames.iter().map(|f| f.1).collect();
        // SAFETY: fences of this device.
        unsafe { self.device.wait_for_fences(&fences, true, u64::MAX).unwrap() };
    }

    pub(crate) fn messages(&self) -> Vec<String> {
        self.messages.lock().unwrap().clone()
    }
}

impl Drop for EngineDevice {
    fn drop(&mut self) {
        // SAFETY: every submission was waited on; objects destroyed children first.
        unsafe {
            let _ = self.device.device_wait_idle();
            for &(_, fence) in &self.frames {
                self.device.destroy_fence(fence, None);
            }
            self.device.destroy_command_pool(self.pool, None);
            self.device.destroy_device(None);
            self.messenger.0.destroy_debug_utils_messenger(self.messenger.1, None);
            self.instance.destroy_instance(None);
        }
    }
}

#[test]
fn embedded_mode_records_into_the_engines_command_buffers_and_matches_standalone() {
    let Some(standalone) = test_gpu("embedded_mode_records_into_the_engines_command_buffers") else { return };
    let engine = EngineDevice::new(2).expect("the engine's own device on the same driver");
    let mut rng = Rng(21);
    let mut reference = RayTracer::with_gpu(standalone).unwrap();
    // SAFETY: the engine's handles are live and outlive the tracer (dropped first).
    let mut tracer = unsafe { RayTracer::embedded(&engine.describe(2)) }.unwrap();
    assert!(tracer.gpu().is_embedded() && !reference.gpu().is_embedded());
    let meshes = [grid(20, &mut rng), box_mesh([1.0, 0.5, 2.0])];
    let mut ids = Vec::new();
    for (p, t) in &meshes {
        let id = tracer.add_mesh(p, t).unwrap();
        assert_eq!(id, reference.add_mesh(p, t).unwrap());
        ids.push(id);
    }
    let mut third = None;
    for i in 0..40 {
        let at = random_transform(&mut rng, 20.0);
        let id = tracer.add_instance(ids[i as usize % 2], &at, 1 << (i % 3), i).unwrap();
        assert_eq!(id, reference.add_instance(ids[i as usize % 2], &at, 1 << (i % 3), i).unwrap());
        third = third.or((i == 3).then_some(id));
    }
    let third = third.unwrap();
    // Four frames over two slots, each moving one instance first; every frame's
    // hits equal the standalone tracer's for the same scene.
    for frame in 0..4usize {
        let slot = frame % 2;
        let moved = [[1.0, 0.0, 0.0, frame as f32], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0]];
        tracer.set_transforms(&[third], &[moved]).unwrap();
        reference.set_transforms(&[third], &[moved]).unwrap();
        let rays: Vec<GpuRay> = (0..5000)
            .map(|_| GpuRay {
                origin: rng.vec3(-30.0, 30.0).to_array(),
                dir: rng.vec3(-1.0, 1.0).to_array(),
                t_max: 1e30,
                mask: u32::MAX,
                ..GpuRay::default()
            })
            .collect();
        let hits = engine.trace_as(&mut tracer, &mut reference, slot, &rays, frame);
        assert!(hits.iter().filter(|h| h.instance != NO_HIT).count() > 500);
    }
    // A mesh that outgrows the mesh arrays' room while both slots may be in flight:
    // the arrays are replaced at the next recording, and the old ones stay until
    // both slots were recorded again, then they are freed.
    let (p, t) = grid(40, &mut rng);
    tracer.add_mesh(&p, &t).unwrap();
    assert_eq!(tracer.gpu().deferred_count(), 0, "the mesh arrays are replaced at the next recording");
    let ray = [GpuRay { dir: [0.0, -1.0, 0.0], t_max: 1e30, mask: u32::MAX, ..GpuRay::default() }];
    for (slot, left) in [(0, 1), (1, 0)] {
        let cmd = engine.begin(slot);
        // SAFETY: `cmd` is recording; the slot's previous submission was waited on.
        // The pending hits are dropped before the submission on purpose: the slot,
        // not the caller, keeps the read-back buffer alive.
        drop(unsafe { tracer.record_trace(cmd, slot as u32, &ray, TraceMode::Closest) }.unwrap());
        engine.submit(slot);
        engine.wait_all();
        assert_eq!(tracer.gpu().deferred_count(), left, "the old scene waits for both slots");
    }
    // Bad input: a slot out of range, a null command buffer, a standalone tracer.
    let cmd = engine.begin(0);
    // SAFETY: as above; refused calls record nothing.
    unsafe {
        assert!(matches!(tracer.record_trace(cmd, 2, &ray, TraceMode::Any), Err(GpuError::InvalidInput(_))));
        let null = ash::vk::CommandBuffer::null();
        assert!(matches!(tracer.record_trace(null, 0, &ray, TraceMode::Any), Err(GpuError::InvalidInput(_))));
        assert!(matches!(reference.record_trace(cmd, 0, &ray, TraceMode::Any), Err(GpuError::InvalidInput(_))));
        let empty = tracer.record_trace(cmd, 0, &[], TraceMode::Any).unwrap();
        assert!(empty.is_empty() && empty.read(&mut []).is_ok());
    }
    engine.submit(0);
    engine.wait_all();
    let mut bad = engine.describe(2);
    bad.frames_in_flight = 0;
    // SAFETY: the handles are live; the call is refused before using them.
    assert!(matches!(unsafe { Gpu::embedded(&bad) }, Err(GpuError::InvalidInput(_))));
    bad = EmbeddedDevice { queue_family: 99, ..engine.describe(2) };
    // SAFETY: live handles; the queue family is refused before any use.
    let refused = unsafe { Gpu::embedded(&bad) };
    assert!(matches!(refused, Err(GpuError::InvalidInput(m)) if m.contains("family 99")));
    bad = EmbeddedDevice { device: ash::vk::Device::null(), ..engine.describe(2) };
    // SAFETY: the null device is refused before any use.
    let refused = unsafe { Gpu::embedded(&bad) };
    assert!(matches!(refused, Err(GpuError::InvalidInput(m)) if m.contains("device is null")));
    assert_validation_clean(tracer.gpu());
    drop(tracer);
    assert_eq!(engine.messages(), Vec::<String>::new(), "the engine's validation layer saw nothing wrong");
}
