//! A tracer's scene that changes: meshes and instances added and removed through
//! their ids, checked against a tracer built from scratch over what is left, the
//! bytes each change uploads, and the device memory that removals give back.
use std::collections::HashMap;

use super::ray_tracer::Uploads;
use super::scene::INSTANCE_BLOCK;
use super::tests::{compare_hits, grid, random_rays, random_transform, reference_hits};
use super::*;
use crate::raytrace::SlotId;
use crate::spatial::tests::Rng;

/// Each live mesh's vertices and triangles.
type Geometry = HashMap<MeshId, (Vec<[f32; 3]>, Vec<[u32; 3]>)>;

/// What the test knows of a live instance, to rebuild it elsewhere.
#[derive(Clone)]
struct Placed {
    mesh: MeshId,
    transform: Affine,
    mask: u32,
    user_id: u32,
    /// A skinned instance's bones.
    bones: Option<Vec<BoneMatrix>>,
}

/// The skinned meshes' inputs, by id.
type Skins = HashMap<MeshId, (SkinData, Vec<[u32; 3]>)>;

/// A two-bone skin over a box: vertices above y = 0 follow bone 1.
fn skinned_box(rng: &mut Rng) -> (SkinData, Vec<[u32; 3]>, Vec<BoneMatrix>) {
    let (positions, triangles) = box_mesh([1.0, 2.0, 0.5]);
    let joints = positions.iter().map(|p| if p[1] > 0.0 { [1, 0, 0, 0] } else { [0, 0, 0, 0] }).collect();
    let weights = vec![[1.0, 0.0, 0.0, 0.0]; positions.len()];
    let skin = SkinData::new(positions, joints, weights, 2).unwrap();
    let shift = rng.range(-1.0, 1.0);
    let bones = vec![IDENTITY, [[1.0, 0.0, 0.0, shift], [0.0, 1.0, 0.0, 0.5], [0.0, 0.0, 1.0, 0.0]]];
    (skin, triangles, bones)
}

/// A tracer holding the same meshes and instances, added in the packed order of
/// `tracer`'s instances, so both build the same TLAS over the same instance array.
fn rebuilt(
    gpu: Gpu,
    tracer: &RayTracer,
    meshes: &Geometry,
    skins: &Skins,
    placed: &HashMap<InstanceId, Placed>,
) -> RayTracer {
    let mut fresh = RayTracer::with_gpu(gpu).unwrap();
    let mut ids = HashMap::new();
    for packed in 0..tracer.instance_count() {
        let p = &placed[&tracer.instance_at(packed).unwrap()];
        match &p.bones {
            None => {
                let (positions, triangles) = &meshes[&p.mesh];
                let id = *ids.entry(p.mesh).or_insert_with(|| fresh.add_mesh(positions, triangles).unwrap());
                fresh.add_instance(id, &p.transform, p.mask, p.user_id).unwrap();
            }
            Some(bones) => {
                let (skin, triangles) = &skins[&p.mesh];
                let mesh =
                    *ids.entry(p.mesh).or_insert_with(|| fresh.add_skinned_mesh(skin.clone(), triangles).unwrap());
                let id = fresh.add_skinned_instance(mesh, &p.transform, p.mask, p.user_id).unwrap();
                fresh.set_bones(id, bones).unwrap();
            }
        }
    }
    fresh
}

/// Random adds, removals and moves of meshes, instances and skinned instances;
/// after each round the tracer's hits equal those of a tracer built from scratch
/// over what is left (bit for bit: same instance array, same TLAS), and both equal
/// the CPU reference. Stale ids are refused and change nothing.
#[test]
fn a_changing_scene_traces_as_one_built_from_scratch() {
    let Some(gpu) = test_gpu("a_changing_scene_traces_as_one_built_from_scratch") else { return };
    let mut rng = Rng(94);
    let mut tracer = RayTracer::with_gpu(gpu).unwrap();
    let mut meshes = Geometry::new();
    let mut skins = Skins::new();
    let mut skinned_meshes: Vec<MeshId> = Vec::new();
    let mut mesh_order: Vec<MeshId> = Vec::new();
    let mut placed: HashMap<InstanceId, Placed> = HashMap::new();
    let mut live: Vec<InstanceId> = Vec::new();
    let mut removed_instances = Vec::new();
    let mut removed_meshes = Vec::new();
    let mut next_user = 0;
    for round in 0..12 {
        // Meshes come and go (a used one is refused, the scene unchanged).
        for _ in 0..2 {
            let geometry = match rng.below(3) {
                0 => grid(4 + rng.below(8) as u32, &mut rng),
                1 => box_mesh([rng.range(0.5, 2.0), rng.range(0.5, 2.0), rng.range(0.5, 2.0)]),
                _ => sphere_mesh(rng.range(0.5, 2.0), 6, 8),
            };
            let id = tracer.add_mesh(&geometry.0, &geometry.1).unwrap();
            meshes.insert(id, geometry);
            mesh_order.push(id);
        }
        if round % 3 == 2 {
            let victim = mesh_order[rng.below(mesh_order.len())];
            let used = placed.values().any(|p| p.mesh == victim);
            let before = tracer.scene().mesh_bytes();
            assert_eq!(tracer.remove_mesh(victim).is_ok(), !used, "a used mesh is refused, an unused one removed");
            if used {
                assert_eq!(tracer.scene().mesh_bytes(), before, "a refused removal changes nothing");
            } else {
                assert!(tracer.scene().mesh_bytes() < before);
                mesh_order.retain(|m| *m != victim);
                removed_meshes.push(victim);
            }
        }
        // Instances: adds of live meshes, a skinned one now and then, removals.
        for _ in 0..20 {
            let mesh = mesh_order[rng.below(mesh_order.len())];
            let transform = random_transform(&mut rng, 40.0);
            let (mask, user_id) = (1 + rng.below(3) as u32, next_user);
            next_user += 1;
            let id = tracer.add_instance(mesh, &transform, mask, user_id).unwrap();
            placed.insert(id, Placed { mesh, transform, mask, user_id, bones: None });
            live.push(id);
        }
        // Skinned meshes now and then; skinned instances of them, each posed its own
        // way (two of a mesh share its mold, not their copies).
        if round % 4 == 0 {
            let (skin, triangles, _) = skinned_box(&mut rng);
            let mesh = tracer.add_skinned_mesh(skin.clone(), &triangles).unwrap();
            skins.insert(mesh, (skin, triangles));
            skinned_meshes.push(mesh);
        }
        for _ in 0..2 {
            let mesh = skinned_meshes[rng.below(skinned_meshes.len())];
            let bones = skinned_box(&mut rng).2;
            let transform = random_transform(&mut rng, 40.0);
            let id = tracer.add_skinned_instance(mesh, &transform, 1, next_user).unwrap();
            tracer.set_bones(id, &bones).unwrap();
            placed.insert(id, Placed { mesh, transform, mask: 1, user_id: next_user, bones: Some(bones) });
            next_user += 1;
            live.push(id);
        }
        assert!(tracer.add_skinned_instance(mesh_order[0], &IDENTITY, 1, 0).is_err(), "a rigid mesh has no skin");
        for _ in 0..(8 + rng.below(8)) {
            let id = live.swap_remove(rng.below(live.len()));
            tracer.remove_instance(id).unwrap();
            placed.remove(&id);
            removed_instances.push(id);
        }
        for _ in 0..5 {
            let id = live[rng.below(live.len())];
            let transform = random_transform(&mut rng, 40.0);
            tracer.set_transforms(&[id], &[transform]).unwrap();
            placed.get_mut(&id).unwrap().transform = transform;
        }
        // Stale ids are refused and change nothing.
        let count = tracer.instance_count();
        for &stale in &removed_instances {
            assert!(tracer.remove_instance(stale).is_err());
            assert!(tracer.set_transforms(&[stale], &[IDENTITY]).is_err());
            assert!(tracer.follow_body(stale, 1, &IDENTITY).is_err());
            assert!(tracer.set_bones(stale, &[IDENTITY; 2]).is_err());
        }
        for &stale in &removed_meshes {
            assert!(tracer.add_instance(stale, &IDENTITY, 1, 0).is_err());
            assert!(tracer.remove_mesh(stale).is_err());
        }
        assert!(tracer.add_instance(SlotId { slot: 9999, generation: 1 }, &IDENTITY, 1, 0).is_err());
        assert_eq!(tracer.instance_count(), count);

        let rays = random_rays(&mut rng, tracer.scene(), 3000);
        let mut hits = vec![GpuHit::default(); rays.len()];
        tracer.trace(&rays, TraceMode::Closest, &mut hits).unwrap();
        let fresh_gpu = test_gpu("a_changing_scene_traces_as_one_built_from_scratch").unwrap();
        let mut fresh = rebuilt(fresh_gpu, &tracer, &meshes, &skins, &placed);
        let mut want = vec![GpuHit::default(); rays.len()];
        fresh.trace(&rays, TraceMode::Closest, &mut want).unwrap();
        let differ = hits.iter().zip(&want).filter(|(a, b)| a != b).count();
        assert_eq!(differ, 0, "round {round}: {differ} hits differ from a tracer built from scratch");
        // The hits name live instances by their ids.
        for hit in hits.iter().filter(|h| h.instance != NO_HIT) {
            let id = tracer.instance_at(hit.instance).unwrap();
            assert_eq!(placed[&id].user_id, hit.user_id);
        }
        let bones: Vec<Vec<BoneMatrix>> =
            tracer.skinned_order().iter().map(|id| placed[id].bones.clone().unwrap()).collect();
        let cpu = reference_hits(&tracer, &bones, &rays, false);
        compare_hits(None, &rays, &hits, &cpu, false);
        assert_validation_clean(tracer.gpu());
        assert_validation_clean(fresh.gpu());
    }
}

/// Moving, adding or removing one instance among 1,000 uploads one block of
/// [`INSTANCE_BLOCK`] instances, not the array; removing a skinned instance frees
/// its mesh copy on the device; 10,000 add/remove cycles of instances and meshes
/// leave the device memory where it was.
#[test]
fn changes_upload_their_blocks_and_removals_give_memory_back() {
    let Some(gpu) = test_gpu("changes_upload_their_blocks_and_removals_give_memory_back") else { return };
    let mut rng = Rng(95);
    let mut tracer = RayTracer::with_gpu(gpu).unwrap();
    let (p, t) = box_mesh([0.5, 0.5, 0.5]);
    let cube = tracer.add_mesh(&p, &t).unwrap();
    let ids: Vec<InstanceId> =
        (0..1000).map(|i| tracer.add_instance(cube, &random_transform(&mut rng, 50.0), 1, i).unwrap()).collect();
    tracer.update().unwrap();
    assert_eq!(tracer.uploaded_instance_bytes(), 1000 * 112, "the first update uploads every instance");
    let block = u64::from(INSTANCE_BLOCK) * 112;
    tracer.set_transforms(&[ids[500]], &[IDENTITY]).unwrap();
    tracer.update().unwrap();
    assert_eq!(tracer.uploaded_instance_bytes(), block, "one moved instance: its block");
    tracer.set_transforms(&[ids[3], ids[900]], &[IDENTITY, IDENTITY]).unwrap();
    tracer.update().unwrap();
    assert_eq!(tracer.uploaded_instance_bytes(), 2 * block, "two far apart: two blocks");
    tracer.remove_instance(ids[10]).unwrap();
    tracer.update().unwrap();
    assert_eq!(tracer.uploaded_instance_bytes(), block, "a removal: the block the last instance moved into");
    let added = tracer.add_instance(cube, &IDENTITY, 1, 5000).unwrap();
    tracer.update().unwrap();
    assert!(tracer.uploaded_instance_bytes() <= block, "an add within the buffers' room: its block");
    assert_eq!(tracer.instance_index(added), Some(999));
    tracer.update().unwrap();
    assert_eq!(tracer.uploaded_instance_bytes(), 0, "nothing changed: nothing uploaded");

    // Skinned instances are regions of the transient segment: adding one builds and
    // uploads no mesh data (its bones and 20 bytes of table), removing one frees its
    // region, 1,000 add/remove cycles leave the device memory flat, and removing the
    // skinned mesh gives back its mold, skin and segment (the ray buffers are made
    // before the count starts).
    let ray = [GpuRay { origin: [0.0, 100.0, 0.0], dir: [0.0, -1.0, 0.0], t_max: 1e30, mask: 1, ..GpuRay::default() }];
    let mut hit = [GpuHit::default()];
    tracer.trace(&ray, TraceMode::Closest, &mut hit).unwrap();
    let base = tracer.gpu().memory_in_use();
    let (positions, triangles) = grid(64, &mut rng);
    let joints = vec![[0u16; 4]; positions.len()];
    let weights = vec![[1.0, 0.0, 0.0, 0.0]; positions.len()];
    let skin = SkinData::new(positions, joints, weights, 1).unwrap();
    let flag = tracer.add_skinned_mesh(skin, &triangles).unwrap();
    let flags: Vec<InstanceId> =
        (0..4).map(|i| tracer.add_skinned_instance(flag, &IDENTITY, 1, 6000 + i).unwrap()).collect();
    tracer.update().unwrap();
    let with_skinned = tracer.gpu().memory_in_use();
    assert!(with_skinned > base, "the mold and segment hold memory: {with_skinned} vs {base}");
    let mold_bytes = tracer.scene().mesh_bytes();
    for &id in &flags[1..] {
        tracer.remove_instance(id).unwrap();
    }
    tracer.update().unwrap();
    let flags: Vec<InstanceId> = [flags[0]]
        .into_iter()
        .chain((0..3).map(|i| tracer.add_skinned_instance(flag, &IDENTITY, 1, 6100 + i).unwrap()))
        .collect();
    tracer.update().unwrap();
    assert_eq!(tracer.scene().mesh_bytes(), mold_bytes, "adding skinned instances builds nothing");
    assert_eq!(tracer.uploads().meshes, 0, "and uploads no mesh data");
    assert!(tracer.uploads().instances <= block + 4 * 20, "their block, and the segment's table");
    assert_eq!(tracer.gpu().memory_in_use(), with_skinned, "the segment's room was kept");
    let mut steady = 0;
    for cycle in 0..1000u32 {
        let id = tracer.add_skinned_instance(flag, &random_transform(&mut rng, 50.0), 1, 9000 + cycle).unwrap();
        if cycle % 100 == 0 {
            tracer.trace(&ray, TraceMode::Closest, &mut hit).unwrap();
            if cycle == 100 {
                steady = tracer.gpu().memory_in_use();
            } else if cycle > 100 {
                assert_eq!(tracer.gpu().memory_in_use(), steady, "skinned add/remove cycles leave memory flat");
            }
        }
        tracer.remove_instance(id).unwrap();
    }
    for id in flags {
        tracer.remove_instance(id).unwrap();
    }
    tracer.remove_mesh(flag).unwrap();
    tracer.update().unwrap();
    assert_eq!(tracer.gpu().memory_in_use(), base, "removing the skinned mesh gives its memory back");

    // Add/remove cycles, an update after each tenth; a mesh comes and goes too.
    for cycle in 0..10_000u32 {
        let id = tracer.add_instance(cube, &random_transform(&mut rng, 50.0), 1, 7000).unwrap();
        if cycle % 10 == 0 {
            let (p, t) = sphere_mesh(1.0, 8, 12);
            let mesh = tracer.add_mesh(&p, &t).unwrap();
            let on = tracer.add_instance(mesh, &IDENTITY, 1, 8000).unwrap();
            tracer.trace(&ray, TraceMode::Closest, &mut hit).unwrap();
            tracer.remove_instance(on).unwrap();
            tracer.remove_mesh(mesh).unwrap();
        }
        tracer.remove_instance(id).unwrap();
    }
    tracer.update().unwrap();
    assert_eq!(tracer.gpu().memory_in_use(), base, "10,000 cycles leave the device memory flat");
    assert_eq!(tracer.instance_count(), 1000);
    assert_validation_clean(tracer.gpu());
}

/// A terrain mirrored chunk by chunk: a ray down onto a hill hits its top; the hill
/// dug away, the next trace's ray passes where it was and hits the ground below;
/// the edit re-meshes only the chunks around it and uploads about their size (the
/// mesh arrays grow at their ends), not the terrain's; a sync without an edit
/// does nothing.
#[test]
fn terrain_edits_reach_the_gpu_at_the_cost_of_the_chunks_they_touch() {
    use crate::terrain::{Material, Terrain};
    use glam::IVec3;
    let Some(gpu) = test_gpu("terrain_edits_reach_the_gpu_at_the_cost_of_the_chunks_they_touch") else { return };
    let mut terrain = Terrain::new(0.5);
    // Ground 4 voxels deep over 128 x 128 voxels (8 x 8 chunks), a hill on it.
    terrain.fill(IVec3::new(0, 0, 0), IVec3::new(127, 3, 127), Material::ROCK);
    terrain.fill(IVec3::new(40, 4, 40), IVec3::new(47, 19, 47), Material::GRASS);
    let mut tracer = RayTracer::with_gpu(gpu).unwrap();
    let added = tracer.add_terrain(&terrain, 1, 77).unwrap();
    assert!(added.triangles > 0 && tracer.terrain_chunk_count() >= 64, "{added:?}");
    let down = |x: f32, z: f32| GpuRay {
        origin: [x, 50.0, z],
        dir: [0.0, -1.0, 0.0],
        t_max: 1e30,
        mask: 1,
        ..GpuRay::default()
    };
    let rays = [down(22.0, 22.0), down(50.0, 50.0)];
    let mut hits = [GpuHit::default(); 2];
    tracer.trace(&rays, TraceMode::Closest, &mut hits).unwrap();
    let full = tracer.uploads().meshes;
    assert!((hits[0].t - 40.0).abs() < 1e-3, "the hill's top (y 10): {:?}", hits[0]);
    assert!((hits[1].t - 48.0).abs() < 1e-3, "the ground (y 2): {:?}", hits[1]);
    assert_eq!(hits[0].user_id, 77);

    // Nothing edited: nothing meshed, nothing uploaded.
    assert_eq!(tracer.sync_terrain(&terrain).unwrap(), TerrainSync::default());
    tracer.trace(&rays, TraceMode::Closest, &mut hits).unwrap();
    assert_eq!(tracer.uploads(), Uploads::default());

    // Dig the hill away.
    terrain.fill(IVec3::new(40, 4, 40), IVec3::new(47, 19, 47), Material::AIR);
    let synced = tracer.sync_terrain(&terrain).unwrap();
    assert!(synced.chunks > 0 && synced.chunks <= 27 * 3, "{synced:?}");
    tracer.trace(&rays, TraceMode::Closest, &mut hits).unwrap();
    assert!((hits[0].t - 48.0).abs() < 1e-3, "the ray passes where the hill was: {:?}", hits[0]);
    assert!((hits[1].t - 48.0).abs() < 1e-3);
    let edit = tracer.uploads().meshes;
    println!(
        "terrain on the GPU: {} chunks meshed, {full} mesh bytes uploaded; the dug hill: {} chunks, {} triangles, {edit} bytes",
        tracer.terrain_chunk_count(),
        synced.chunks,
        synced.triangles
    );
    let per_triangle = 16 + 12 * 3 + 2 * (32 + 4) + 4; // triangle, vertices, nodes and parents, leaves: bounds
    let table = 16 * tracer.mesh_count() as u64;
    assert!(
        edit <= table + u64::from(synced.triangles) * per_triangle as u64,
        "the edit uploaded {edit} bytes for {} triangles (the whole terrain was {full})",
        synced.triangles
    );
    assert!(edit * 4 < full, "an edit of a few chunks uploads a fraction of the terrain: {edit} vs {full}");
    // The chunk meshes agree with the terrain's own ray cast.
    let ray = crate::math::Ray::new(glam::Vec3::new(22.0, 50.0, 22.0), glam::Vec3::NEG_Y);
    let cpu = terrain.ray_cast(&ray, 100.0);
    assert!(cpu.is_some_and(|hit| (hit.t - hits[0].t).abs() < 1e-3), "{cpu:?}");
    assert_validation_clean(tracer.gpu());
}

/// The engine-side wrapper that counts `vkQueueSubmit` calls made through the
/// function pointers Kiln loads from the engine's `vkGetInstanceProcAddr`.
mod submit_counter {
    use std::ffi::{c_char, CStr};
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::sync::OnceLock;

    use ash::vk;

    pub static SUBMITS: AtomicU32 = AtomicU32::new(0);
    static GET_INSTANCE: OnceLock<vk::PFN_vkGetInstanceProcAddr> = OnceLock::new();
    static GET_DEVICE: OnceLock<vk::PFN_vkGetDeviceProcAddr> = OnceLock::new();
    static SUBMIT: OnceLock<vk::PFN_vkQueueSubmit> = OnceLock::new();
    static SUBMIT2: OnceLock<vk::PFN_vkQueueSubmit2> = OnceLock::new();

    /// The wrapper to hand Kiln in place of `real`.
    pub fn wrap(real: vk::PFN_vkGetInstanceProcAddr) -> vk::PFN_vkGetInstanceProcAddr {
        GET_INSTANCE.get_or_init(|| real);
        get_instance_proc_addr
    }

    unsafe extern "system" fn queue_submit(
        queue: vk::Queue,
        count: u32,
        submits: *const vk::SubmitInfo<'_>,
        fence: vk::Fence,
    ) -> vk::Result {
        SUBMITS.fetch_add(1, Ordering::SeqCst);
        // SAFETY: forwarded unchanged to the driver's function.
        unsafe { SUBMIT.get().unwrap()(queue, count, submits, fence) }
    }

    unsafe extern "system" fn queue_submit2(
        queue: vk::Queue,
        count: u32,
        submits: *const vk::SubmitInfo2<'_>,
        fence: vk::Fence,
    ) -> vk::Result {
        SUBMITS.fetch_add(1, Ordering::SeqCst);
        // SAFETY: forwarded unchanged to the driver's function.
        unsafe { SUBMIT2.get().unwrap()(queue, count, submits, fence) }
    }

    /// Swaps the submit functions for the counting ones.
    ///
    /// # Safety
    /// `real` is the driver's pointer for `name` (or null).
    unsafe fn intercept(name: &CStr, real: vk::PFN_vkVoidFunction) -> vk::PFN_vkVoidFunction {
        let real = real?;
        // SAFETY: (transmutes) Vulkan returns every function as `PFN_vkVoidFunction`;
        // the pointer for `name` has the signature of `name`.
        unsafe {
            match name.to_bytes() {
                b"vkQueueSubmit" => {
                    SUBMIT.get_or_init(|| std::mem::transmute::<_, vk::PFN_vkQueueSubmit>(real));
                    Some(std::mem::transmute::<vk::PFN_vkQueueSubmit, unsafe extern "system" fn()>(queue_submit))
                }
                b"vkQueueSubmit2" | b"vkQueueSubmit2KHR" => {
                    SUBMIT2.get_or_init(|| std::mem::transmute::<_, vk::PFN_vkQueueSubmit2>(real));
                    Some(std::mem::transmute::<vk::PFN_vkQueueSubmit2, unsafe extern "system" fn()>(queue_submit2))
                }
                b"vkGetDeviceProcAddr" => {
                    GET_DEVICE.get_or_init(|| std::mem::transmute::<_, vk::PFN_vkGetDeviceProcAddr>(real));
                    Some(std::mem::transmute::<vk::PFN_vkGetDeviceProcAddr, unsafe extern "system" fn()>(
                        get_device_proc_addr,
                    ))
                }
                _ => Some(real),
            }
        }
    }

    unsafe extern "system" fn get_instance_proc_addr(
        instance: vk::Instance,
        name: *const c_char,
    ) -> vk::PFN_vkVoidFunction {
        // SAFETY: the loader's function with the caller's arguments; `name` is a
        // NUL-terminated string per Vulkan.
        unsafe { intercept(CStr::from_ptr(name), GET_INSTANCE.get().unwrap()(instance, name)) }
    }

    unsafe extern "system" fn get_device_proc_addr(device: vk::Device, name: *const c_char) -> vk::PFN_vkVoidFunction {
        // SAFETY: as above.
        unsafe { intercept(CStr::from_ptr(name), GET_DEVICE.get().unwrap()(device, name)) }
    }
}

/// Embedded mode submits nothing of its own: a tracer on the engine's device, whose
/// `vkQueueSubmit` the engine counts, takes meshes (one that outgrows the arrays'
/// room), instances, a skinned instance, moves, removals and a terrain edit, and
/// every frame goes into the engine's command buffers; its hits equal a standalone
/// tracer's over the same changes, and both validation layers stay silent.
#[test]
fn embedded_mode_submits_nothing_of_its_own() {
    use super::tests::EngineDevice;
    use crate::terrain::{Material, Terrain};
    use glam::IVec3;
    let Some(standalone) = test_gpu("embedded_mode_submits_nothing_of_its_own") else { return };
    let engine = EngineDevice::new(2).expect("the engine's own device on the same driver");
    let mut described = engine.describe(2);
    described.get_instance_proc_addr = submit_counter::wrap(described.get_instance_proc_addr);
    // SAFETY: the engine's handles are live and outlive the tracer (dropped first).
    let mut tracer = unsafe { RayTracer::embedded(&described) }.unwrap();
    let mut reference = RayTracer::with_gpu(standalone).unwrap();
    let mut rng = Rng(96);
    let mut terrain = Terrain::new(0.5);
    terrain.fill(IVec3::new(-40, -4, -40), IVec3::new(39, -1, 39), Material::ROCK);
    terrain.fill(IVec3::new(0, 0, 0), IVec3::new(7, 11, 7), Material::ROCK);
    let (cube, big) = (box_mesh([0.5, 0.5, 0.5]), grid(48, &mut rng));
    let mut placed: Vec<(InstanceId, InstanceId)> = Vec::new();
    let (mut meshes, mut skinned) = (Vec::new(), None);
    for frame in 0..8usize {
        for t in [&mut tracer, &mut reference] {
            match frame {
                0 => {
                    t.add_terrain(&terrain, 1, 5).unwrap();
                }
                1 | 5 => {
                    let (p, tris) = if frame == 1 { &cube } else { &big };
                    let id = t.add_mesh(p, tris).unwrap();
                    if t.gpu().is_embedded() {
                        meshes.push(id);
                    }
                }
                3 => {
                    let (skin, triangles, bones) = skinned_box(&mut Rng(7));
                    let mesh = t.add_skinned_mesh(skin, &triangles).unwrap();
                    let id = t.add_skinned_instance(mesh, &IDENTITY, 1, 900).unwrap();
                    t.set_bones(id, &bones).unwrap();
                    if t.gpu().is_embedded() {
                        skinned = Some(id);
                    }
                }
                _ => {}
            }
            if frame == 4 {
                t.sync_terrain(&terrain).unwrap();
            }
        }
        if frame == 4 {
            terrain.fill(IVec3::new(0, 0, 0), IVec3::new(7, 11, 7), Material::AIR);
            tracer.sync_terrain(&terrain).unwrap();
            reference.sync_terrain(&terrain).unwrap();
        }
        if frame >= 1 {
            for _ in 0..6 {
                let at = random_transform(&mut rng, 15.0);
                let user = placed.len() as u32 + 10;
                let mesh = meshes[rng.below(meshes.len())];
                placed.push((
                    tracer.add_instance(mesh, &at, 1, user).unwrap(),
                    reference.add_instance(mesh, &at, 1, user).unwrap(),
                ));
            }
            let (a, b) = placed.swap_remove(rng.below(placed.len()));
            tracer.remove_instance(a).unwrap();
            reference.remove_instance(b).unwrap();
            let (a, b) = placed[rng.below(placed.len())];
            let at = random_transform(&mut rng, 15.0);
            tracer.set_transforms(&[a], &[at]).unwrap();
            reference.set_transforms(&[b], &[at]).unwrap();
        }
        if frame == 6 {
            let id = skinned.take().unwrap();
            tracer.remove_instance(id).unwrap();
            reference.remove_instance(id).unwrap();
        }
        let rays = random_rays(&mut rng, tracer.scene(), 2000);
        engine.trace_as(&mut tracer, &mut reference, frame % 2, &rays, frame);
        assert_eq!(submit_counter::SUBMITS.load(std::sync::atomic::Ordering::SeqCst), 0, "frame {frame}");
    }
    // A submission of Kiln's own is refused on an engine's device; the counter sees
    // the queue functions Kiln loaded: a call through them counts.
    assert!(tracer.gpu_mut().submit("refused", |_| Ok(())).is_err());
    let moved = tracer.instance_at(0).unwrap();
    tracer.set_transforms(&[moved], &[IDENTITY]).unwrap();
    assert!(tracer.update().is_err(), "the submitting update is refused: record it");
    assert_eq!(submit_counter::SUBMITS.load(std::sync::atomic::Ordering::SeqCst), 0);
    let (device, queue) = (tracer.gpu().device(), tracer.gpu().queue());
    // SAFETY: an empty submission on the engine's idle queue, which nothing else uses now.
    unsafe { device.queue_submit(queue, &[], vk::Fence::null()) }.unwrap();
    assert_eq!(submit_counter::SUBMITS.load(std::sync::atomic::Ordering::SeqCst), 1);
    assert_validation_clean(tracer.gpu());
    drop(tracer);
    assert_eq!(engine.messages(), Vec::<String>::new(), "the engine's validation layer saw nothing wrong");
}

/// The buffers an engine's shaders trace through follow the recorded update: refused
/// before one and while changes wait for one, the same buffers (same version) after
/// a move, new ones (a new version) once the scene outgrew its room; an update with
/// nothing changed records nothing.
#[test]
fn trace_buffers_follow_the_recorded_update() {
    use super::tests::EngineDevice;
    if test_gpu("trace_buffers_follow_the_recorded_update").is_none() {
        return;
    }
    let engine = EngineDevice::new(2).expect("the engine's own device on the same driver");
    // SAFETY: the engine's handles are live and outlive the tracer (dropped first).
    let mut tracer = unsafe { RayTracer::embedded(&engine.describe(2)) }.unwrap();
    let record = |tracer: &mut RayTracer, slot: usize| {
        let cmd = engine.begin(slot);
        // SAFETY: a recording command buffer of the engine's device for `slot`.
        unsafe { tracer.record_update(cmd, slot as u32) }.unwrap();
        engine.submit(slot);
        engine.wait_all();
    };
    assert!(tracer.trace_buffers().is_err(), "nothing on the device yet");
    record(&mut tracer, 0);
    let (positions, triangles) = box_mesh([0.5, 0.5, 0.5]);
    let mesh = tracer.add_mesh(&positions, &triangles).unwrap();
    let mut rng = Rng(5);
    let mut ids = Vec::new();
    for user in 0..40 {
        ids.push(tracer.add_instance(mesh, &random_transform(&mut rng, 10.0), 1, user).unwrap());
    }
    assert!(tracer.trace_buffers().is_err(), "changes wait for an update");
    record(&mut tracer, 1);
    let first = tracer.trace_buffers().unwrap();
    assert_eq!(first.instance_count, 40);
    let addresses = [
        first.scene.tlas,
        first.scene.instances,
        first.scene.blas_refs,
        first.scene.blas_nodes,
        first.scene.triangles,
        first.scene.positions,
    ];
    for (view, address) in first.buffers.iter().zip(addresses) {
        assert_eq!(view.address, address);
        assert!(view.address != 0 && view.size > 0 && view.buffer != ash::vk::Buffer::null());
    }
    assert!(first.buffers[0].size >= 79 * 32 && first.buffers[1].size >= 40 * 112);

    tracer.set_transforms(&[ids[3]], &[random_transform(&mut rng, 10.0)]).unwrap();
    assert!(tracer.trace_buffers().is_err());
    record(&mut tracer, 0);
    assert_eq!(tracer.trace_buffers().unwrap(), first, "a move keeps every buffer");
    let moved = tracer.uploads().instances;
    assert!(moved > 0 && moved <= u64::from(INSTANCE_BLOCK) * 112, "one block of instances: {moved} B");
    record(&mut tracer, 1);
    assert_eq!(tracer.uploads(), Uploads::default(), "nothing changed, nothing recorded");

    for user in 40..100 {
        tracer.add_instance(mesh, &random_transform(&mut rng, 10.0), 1, user).unwrap();
    }
    record(&mut tracer, 0);
    let grown = tracer.trace_buffers().unwrap();
    assert_eq!(grown.instance_count, 100);
    assert!(grown.version != first.version && grown.scene.instances != first.scene.instances);
    assert_eq!(grown.scene.blas_nodes, first.scene.blas_nodes, "the mesh arrays did not move");
    assert_validation_clean(tracer.gpu());
    drop(tracer);
    assert_eq!(engine.messages(), Vec::<String>::new(), "the engine's validation layer saw nothing wrong");
}
