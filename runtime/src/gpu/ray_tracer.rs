//! The ray tracer a program links: one device, meshes, instances (static, skinned or
//! following physics bodies), and ray batches traced against them.
//!
//! ```text
//!  add_mesh / add_skinned_mesh / remove_mesh          the mesh arrays: what they gained
//!                                                     is uploaded before the next trace
//!  add_instance / add_skinned_instance /              the instance array, packed (a
//!    remove_instance                                  removal moves the last instance
//!                                                     into the hole); only the blocks
//!                                                     of 64 that changed are uploaded;
//!                                                     a skinned instance is a region of
//!                                                     the transient segment (`gpu::scene`)
//!  set_transform / set_bones / sync_poses              per-frame inputs, kept on the CPU
//!  trace(rays, mode, hits):
//!    one submission:  "upload instances" -> "skin + refit" -> "tlas build" -> "trace"
//!    (the first three only when their inputs changed since the last trace)
//!    batches beyond MAX_TRACE_BATCH rays: one more submission of "trace" each
//! ```
//!
//! Meshes and instances are named by [`MeshId`] and [`InstanceId`]: generation-checked
//! handles that stay valid until their own removal (`raytrace::slots`). A hit names
//! the instance by its position in the packed array; [`RayTracer::instance_at`] (or
//! [`PendingHits::instance_at`]) turns that into its id.
//!
//! Everything is checked before the device sees it: a refused call changes nothing.
//! `frame_timings` holds the GPU milliseconds per pass of the last `trace`/`update`.

use super::blas_refit::BlasRefit;
use super::buffer::{BufferMemory, GpuBuffer};
use super::context::{DeviceInfo, EmbeddedDevice, GpuConfig};
use super::error::GpuError;
use super::layout::{GpuHit, GpuRay, TraceAddresses, NO_HIT};
use super::queue::{Gpu, GpuTiming, GpuWait};
use super::recorder::{Download, Recorder};
use super::scene::{GpuScene, MeshLens, TransientLens, TransientSlot, INSTANCE_BLOCK};
use super::skin::Skin;
use super::tlas::TlasBuilder;
use super::trace::Tracer;
use crate::math::Isometry;
use crate::raytrace::{invert_affine, Affine, BoneMatrix, Scene, SkinData, SlotId, Slots, IDENTITY};

/// A mesh of a [`RayTracer`]: valid until [`RayTracer::remove_mesh`].
pub type MeshId = SlotId;

/// An instance of a [`RayTracer`]: valid until [`RayTracer::remove_instance`].
pub type InstanceId = SlotId;

/// Rays traced per dispatch (48 MiB of rays and as much of hits).
pub const MAX_TRACE_BATCH: usize = 1 << 20;

/// Hits recorded into an engine's command buffer ([`RayTracer::record_trace`]).
#[derive(Debug)]
pub struct PendingHits {
    /// `None`: nothing was recorded (no rays, or an empty scene: all misses).
    download: Option<Download>,
    count: usize,
    /// The instance ids in packed order when the trace was recorded.
    ids: std::sync::Arc<Vec<InstanceId>>,
}

impl PendingHits {
    /// Rays recorded.
    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The id of the instance a hit names (`hit.instance`), as it was when the trace
    /// was recorded; `None` for a miss.
    pub fn instance_at(&self, packed: u32) -> Option<InstanceId> {
        self.ids.get(packed as usize).copied()
    }

    /// Copies the hits out; call once the engine's submission completed (before
    /// that the bytes are undefined). `hits` holds one entry per recorded ray.
    pub fn read(&self, hits: &mut [GpuHit]) -> Result<(), GpuError> {
        if hits.len() != self.count {
            return Err(GpuError::InvalidInput(format!("{} hits requested, {} rays recorded", hits.len(), self.count)));
        }
        match &self.download {
            Some(download) => hits.copy_from_slice(bytemuck::cast_slice(download.bytes())),
            None => hits.fill(GpuHit { instance: NO_HIT, t: f32::INFINITY, ..GpuHit::default() }),
        }
        Ok(())
    }
}

/// Closest hit, or any hit (shadow rays: the first hit found ends the ray).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceMode {
    Closest,
    Any,
}

/// An instance that follows a body: its transform is the body's pose times `local` at
/// every [`RayTracer::sync_poses`]. The body is the caller's key: whoever ties physics
/// to the tracer (`integrated`, the C layer) chooses it (`BodyId::to_bits`).
#[derive(Clone, Copy, Debug)]
struct Follow {
    instance: InstanceId,
    body: u64,
    local: Affine,
}

struct Kernels {
    skin: Skin,
    refit: BlasRefit,
    tlas: TlasBuilder,
    trace: Tracer,
}

/// Bytes an update uploaded.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Uploads {
    /// Instance records: the changed blocks of [`INSTANCE_BLOCK`].
    pub instances: u64,
    /// Mesh data: what the arrays gained and the mesh table, or all of it when the
    /// device copy was made anew (arrays compacted or out of room, skinned meshes
    /// changed).
    pub meshes: u64,
}

/// One buffer of the device scene as an engine's shader reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BufferView {
    pub buffer: ash::vk::Buffer,
    /// Bytes of the buffer (its capacity; the scene may use less).
    pub size: u64,
    /// Its device address (`vkGetBufferDeviceAddress`).
    pub address: u64,
}

/// The device scene an engine's shaders trace through `kiln_trace.glsl`
/// ([`RayTracer::trace_buffers`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceBuffers {
    /// The addresses `kiln_trace` takes.
    pub scene: TraceAddresses,
    /// The buffers behind them, in [`TraceAddresses`]'s field order: TLAS nodes,
    /// instances, BLAS refs, BLAS nodes, triangles, positions.
    pub buffers: [BufferView; 6],
    /// Instances in the TLAS (packed order: a hit's `instance`).
    pub instance_count: u32,
    /// Changes whenever any of the buffers is made anew (the scene outgrew its
    /// room, meshes were compacted): descriptors holding the handles must be
    /// rewritten; addresses pushed per frame need nothing.
    pub version: u64,
}

/// A skinned instance: its id, its skinned mesh (the mold) and its current bones.
struct Skinned {
    instance: InstanceId,
    mesh: MeshId,
    bones: Vec<BoneMatrix>,
}

/// A device with its meshes and instances; see the module docs.
pub struct RayTracer {
    gpu: Gpu,
    kernels: Kernels,
    scene: Scene,
    /// The device copy of `scene`; `None` after a structural change.
    device_scene: Option<GpuScene>,
    /// Mesh ids over the scene's meshes.
    meshes: Slots,
    /// Instance ids over the scene's packed instances.
    instances: Slots,
    /// The skinned instances, in transient-segment order.
    skinned: Vec<Skinned>,
    skin_dirty: bool,
    /// The TLAS must be rebuilt (an instance was added, removed or changed).
    instances_dirty: bool,
    /// Blocks of [`INSTANCE_BLOCK`] instances changed since the last upload (bit
    /// `b % 64` of word `b / 64`); `all_dirty`: every block.
    dirty_blocks: Vec<u64>,
    all_dirty: bool,
    /// The mesh arrays changed since the device copy was made.
    meshes_dirty: bool,
    /// The skinned meshes changed since the device copy of the meshes was made.
    skins_changed: bool,
    /// The mesh arrays' lengths on the device before the appends the next update
    /// uploads (`None`: nothing to append).
    mesh_appends: Option<MeshLens>,
    /// Bytes the last update uploaded.
    uploaded: Uploads,
    /// `instances.ids()` shared with recorded hits; `None` after a change.
    ids_snapshot: Option<std::sync::Arc<Vec<InstanceId>>>,
    /// A terrain mirrored chunk by chunk (`gpu::tracer_terrain`).
    pub(crate) terrain: Option<super::tracer_terrain::TerrainBinding>,
    rays: Option<GpuBuffer>,
    hits: Option<GpuBuffer>,
    follows: Vec<Follow>,
    timings: Vec<GpuTiming>,
    /// [`TraceBuffers::version`]: device scene buffers made so far.
    buffers_version: u64,
}

impl RayTracer {
    /// Opens a device (see [`Gpu::new`]) and compiles the kernels.
    pub fn new(config: &GpuConfig) -> Result<RayTracer, GpuError> {
        RayTracer::with_gpu(Gpu::new(config)?)
    }

    /// A tracer on an open context.
    pub fn with_gpu(gpu: Gpu) -> Result<RayTracer, GpuError> {
        let kernels = Kernels {
            skin: Skin::new(&gpu)?,
            refit: BlasRefit::new(&gpu)?,
            tlas: TlasBuilder::new(&gpu)?,
            trace: Tracer::new(&gpu)?,
        };
        Ok(RayTracer {
            gpu,
            kernels,
            scene: Scene::new(),
            device_scene: None,
            meshes: Slots::default(),
            instances: Slots::default(),
            skinned: Vec::new(),
            skin_dirty: false,
            instances_dirty: true,
            dirty_blocks: Vec::new(),
            all_dirty: true,
            meshes_dirty: false,
            skins_changed: false,
            mesh_appends: None,
            uploaded: Uploads::default(),
            ids_snapshot: None,
            terrain: None,
            rays: None,
            hits: None,
            follows: Vec::new(),
            timings: Vec::new(),
            buffers_version: 0,
        })
    }

    pub fn gpu(&self) -> &Gpu {
        &self.gpu
    }

    pub fn device_info(&self) -> &DeviceInfo {
        self.gpu.info()
    }

    /// The CPU side of the scene (for references and tests).
    pub fn scene(&self) -> &Scene {
        &self.scene
    }

    /// Live meshes (skinned meshes included).
    pub fn mesh_count(&self) -> u32 {
        self.scene.mesh_count() as u32
    }

    /// Live instances.
    pub fn instance_count(&self) -> u32 {
        self.scene.instances().len() as u32
    }

    /// The id of the instance at packed position `packed` (what `GpuHit::instance`
    /// holds); `None` past the end, e.g. for a miss.
    pub fn instance_at(&self, packed: u32) -> Option<InstanceId> {
        self.instances.id(packed)
    }

    /// The packed position of a live instance (its index in [`Scene::instances`]).
    pub fn instance_index(&self, instance: InstanceId) -> Option<u32> {
        self.instances.dense(instance)
    }

    /// Whether `mesh` is live.
    pub fn has_mesh(&self, mesh: MeshId) -> bool {
        self.meshes.dense(mesh).is_some()
    }

    /// Instance bytes the last update, trace or recording uploaded (a whole block of
    /// [`INSTANCE_BLOCK`] instances per changed one; all of them after the instance
    /// buffers were resized).
    pub fn uploaded_instance_bytes(&self) -> u64 {
        self.uploaded.instances
    }

    /// What the last update, trace or recording uploaded.
    pub fn uploads(&self) -> Uploads {
        self.uploaded
    }

    /// Builds a BLAS over the mesh; returns its id.
    pub fn add_mesh(&mut self, positions: &[[f32; 3]], triangles: &[[u32; 3]]) -> Result<MeshId, GpuError> {
        self.scene.add_mesh(positions, triangles)?;
        self.meshes_dirty = true;
        Ok(self.meshes.push())
    }

    /// Removes a mesh and frees its BLAS (the device's mesh arrays shrink before the
    /// next trace). Refused while an instance uses it; a stale id is refused.
    pub fn remove_mesh(&mut self, mesh: MeshId) -> Result<(), GpuError> {
        let dense = self.live_mesh(mesh)?;
        let skinned = self.scene.skin_index(dense).is_some();
        let moved = self.scene.remove_mesh(dense)?;
        self.meshes.swap_remove(mesh);
        self.mesh_moved(dense, moved);
        self.skins_changed |= skinned;
        Ok(())
    }

    /// Adds an instance of `mesh`; returns its id.
    pub fn add_instance(
        &mut self,
        mesh: MeshId,
        transform: &Affine,
        mask: u32,
        user_id: u32,
    ) -> Result<InstanceId, GpuError> {
        let dense = self.live_mesh(mesh)?;
        let packed = self.scene.add_instance(dense, transform, mask, user_id)?;
        self.mark_instance(packed);
        self.changed_ids();
        Ok(self.instances.push())
    }

    /// Adds a skinned mesh: its BLAS is built once over the rest pose and is the
    /// mold of every skinned instance of it; its skin goes to the device once.
    pub fn add_skinned_mesh(&mut self, skin: SkinData, triangles: &[[u32; 3]]) -> Result<MeshId, GpuError> {
        self.scene.add_skinned_mesh(skin, triangles)?;
        self.meshes_dirty = true;
        self.skins_changed = true;
        Ok(self.meshes.push())
    }

    /// Adds a skinned instance of skinned mesh `mesh`: a region of the transient
    /// segment, copied from the mold, skinned and refitted on the device whenever
    /// bones change. Nothing is built on the CPU; its bones start as identities.
    /// (`add_instance` of a skinned mesh places its rest pose, rigid.)
    pub fn add_skinned_instance(
        &mut self,
        mesh: MeshId,
        transform: &Affine,
        mask: u32,
        user_id: u32,
    ) -> Result<InstanceId, GpuError> {
        let dense = self.live_mesh(mesh)?;
        let Some(skin) = self.scene.skin_index(dense) else {
            return Err(GpuError::InvalidInput(format!("mesh {mesh:?} is not a skinned mesh")));
        };
        let bone_count = self.scene.skinned[skin as usize].skin.bone_count as usize;
        let packed = self.scene.add_instance(dense, transform, mask, user_id)?;
        let instance = self.instances.push();
        self.skinned.push(Skinned { instance, mesh, bones: vec![IDENTITY; bone_count] });
        self.skin_dirty = true;
        self.mark_instance(packed);
        self.changed_ids();
        Ok(instance)
    }

    /// Removes an instance: the last instance moves into its place (one block
    /// uploaded), a skinned instance's region of the transient segment is freed, and
    /// it stops following its body. A stale id is refused.
    pub fn remove_instance(&mut self, instance: InstanceId) -> Result<(), GpuError> {
        let packed = self.live_instance(instance)?;
        self.scene.remove_instance(packed)?;
        self.instances.swap_remove(instance);
        self.follows.retain(|f| f.instance != instance);
        if (packed as usize) < self.scene.instances().len() {
            self.mark_instance(packed);
        }
        self.instances_dirty = true;
        self.changed_ids();
        if let Some(slot) = self.skinned.iter().position(|s| s.instance == instance) {
            // The slots after it move down a region: they are skinned anew.
            self.skinned.remove(slot);
            self.skin_dirty = true;
        }
        Ok(())
    }

    /// Moves instances in bulk: all of them are checked before any moves.
    pub fn set_transforms(&mut self, instances: &[InstanceId], transforms: &[Affine]) -> Result<(), GpuError> {
        if instances.len() != transforms.len() {
            return Err(GpuError::InvalidInput(format!(
                "{} instances but {} transforms",
                instances.len(),
                transforms.len()
            )));
        }
        for (i, (&instance, transform)) in instances.iter().zip(transforms).enumerate() {
            if self.instances.dense(instance).is_none() {
                return Err(GpuError::InvalidInput(format!("instances[{i}] = {instance:?} is stale or unknown")));
            }
            if invert_affine(transform).is_none() {
                return Err(GpuError::InvalidInput(format!("transforms[{i}] is singular, NaN or infinite")));
            }
        }
        for (&instance, transform) in instances.iter().zip(transforms) {
            let packed = self.instances.dense(instance).expect("checked above");
            self.scene.set_transform(packed, transform)?;
            self.mark_instance(packed);
        }
        Ok(())
    }

    /// The bone count of a skinned instance (its skinned mesh's).
    pub fn bone_count(&self, instance: InstanceId) -> Result<u32, GpuError> {
        match self.skinned.iter().find(|s| s.instance == instance) {
            Some(skinned) => Ok(skinned.bones.len() as u32),
            None => Err(GpuError::InvalidInput(format!("instance {instance:?} is not a live skinned instance"))),
        }
    }

    /// Sets the bones of a skinned instance (exactly its bone count, all finite).
    pub fn set_bones(&mut self, instance: InstanceId, bones: &[BoneMatrix]) -> Result<(), GpuError> {
        let Some(skinned) = self.skinned.iter_mut().find(|s| s.instance == instance) else {
            return Err(GpuError::InvalidInput(format!("instance {instance:?} is not a live skinned instance")));
        };
        let current = &mut skinned.bones;
        if bones.len() != current.len() {
            return Err(GpuError::InvalidInput(format!(
                "instance {instance:?} has {} bones, {} given",
                current.len(),
                bones.len()
            )));
        }
        if let Some(b) = bones.iter().position(|m| !m.iter().flatten().all(|c| c.is_finite())) {
            return Err(GpuError::InvalidInput(format!("bones[{b}] has a NaN or infinite entry")));
        }
        current.copy_from_slice(bones);
        self.skin_dirty = true;
        Ok(())
    }

    /// Makes `instance` follow the body with key `body`: at each [`RayTracer::sync_poses`] its
    /// transform becomes the body's pose times `local` (e.g. a scale from a unit mesh
    /// to the body's box). Replaces an earlier follow of the same instance.
    pub fn follow_body(&mut self, instance: InstanceId, body: u64, local: &Affine) -> Result<(), GpuError> {
        self.live_instance(instance)?;
        if invert_affine(local).is_none() {
            return Err(GpuError::InvalidInput("the local transform is singular, NaN or infinite".into()));
        }
        let follow = Follow { instance, body, local: *local };
        match self.follows.iter_mut().find(|f| f.instance == instance) {
            Some(existing) => *existing = follow,
            None => self.follows.push(follow),
        }
        Ok(())
    }

    /// Stops `instance` following a body; it stays where it was.
    pub fn unfollow(&mut self, instance: InstanceId) {
        self.follows.retain(|f| f.instance != instance);
    }

    /// Copies the pose of every followed body into its instance, from `pose_of` (by the
    /// key given to [`RayTracer::follow_body`]; `None`: the body is gone), e.g. a
    /// world's transforms or a snapshot taken at the end of the previous step. An
    /// instance whose body is gone is hidden (mask 0) and stops following; returns how
    /// many were.
    pub fn sync_poses(&mut self, pose_of: impl Fn(u64) -> Option<Isometry>) -> u32 {
        let mut gone = 0;
        let RayTracer { scene, follows, instances, dirty_blocks, instances_dirty, .. } = self;
        follows.retain(|f| {
            let packed = instances.dense(f.instance).expect("a removed instance stops following");
            mark(dirty_blocks, instances_dirty, packed);
            match pose_of(f.body) {
                Some(pose) => {
                    let transform = compose(&isometry_affine(&pose), &f.local);
                    // A body's pose is finite and a rotation; `local` was checked, so
                    // the product is invertible unless it overflows, which leaves it
                    // in place.
                    let _ = scene.set_transform(packed, &transform);
                    true
                }
                None => {
                    scene.instances[packed as usize].mask = 0;
                    gone += 1;
                    false
                }
            }
        });
        gone
    }

    /// The skinned instances in skinning order (the order of the bone sets a CPU
    /// reference takes).
    #[cfg(test)]
    pub(crate) fn skinned_order(&self) -> Vec<InstanceId> {
        self.skinned.iter().map(|s| s.instance).collect()
    }

    /// After mesh `dense` was removed: the instances of the mesh that took its
    /// number (if one did) are marked for upload, and the mesh arrays for the device.
    fn mesh_moved(&mut self, dense: u32, moved: Option<u32>) {
        if moved.is_some() {
            for packed in 0..self.scene.instances().len() as u32 {
                if self.scene.instances()[packed as usize].blas == dense {
                    mark(&mut self.dirty_blocks, &mut self.instances_dirty, packed);
                }
            }
        }
        self.meshes_dirty = true;
        self.instances_dirty = true;
    }

    fn live_mesh(&self, mesh: MeshId) -> Result<u32, GpuError> {
        self.meshes.dense(mesh).ok_or_else(|| GpuError::InvalidInput(format!("mesh {mesh:?} is stale or unknown")))
    }

    fn live_instance(&self, instance: InstanceId) -> Result<u32, GpuError> {
        self.instances
            .dense(instance)
            .ok_or_else(|| GpuError::InvalidInput(format!("instance {instance:?} is stale or unknown")))
    }

    /// Marks packed instance `packed` for the next upload.
    fn mark_instance(&mut self, packed: u32) {
        mark(&mut self.dirty_blocks, &mut self.instances_dirty, packed);
    }

    /// The packed order changed: recorded hits keep the old ids, later ones the new.
    fn changed_ids(&mut self) {
        self.ids_snapshot = None;
    }

    /// The packed order's ids, shared (made once per change).
    fn ids_snapshot(&mut self) -> std::sync::Arc<Vec<InstanceId>> {
        let instances = &self.instances;
        self.ids_snapshot.get_or_insert_with(|| std::sync::Arc::new(instances.ids().to_vec())).clone()
    }

    /// GPU milliseconds per pass of the last [`RayTracer::update`] or
    /// [`RayTracer::trace`], passes in order (a pass run in several batches is summed).
    pub fn frame_timings(&self) -> &[GpuTiming] {
        &self.timings
    }

    /// Validation-layer messages so far (empty unless validation was requested).
    pub fn validation_messages(&self) -> Vec<String> {
        self.gpu.validation_messages()
    }

    /// Brings the device up to date: uploads instances, skins and refits what moved,
    /// rebuilds the TLAS. `trace` does this itself.
    pub fn update(&mut self) -> Result<(), GpuError> {
        self.update_async()?;
        self.finish()?;
        Ok(())
    }

    /// As [`RayTracer::update`], but returns once the work is submitted;
    /// [`RayTracer::finish`] completes it. Other calls that use the device wait for
    /// it first.
    pub fn update_async(&mut self) -> Result<(), GpuError> {
        self.finish()?;
        self.timings.clear();
        self.uploaded = Uploads::default();
        self.ensure_device_scene()?;
        if !self.needs_update() {
            return Ok(());
        }
        let (gpu, parts) = self.split();
        let submitted = gpu.submit_async("kiln update", |rec| parts.record_update(rec));
        let uploaded = self.after_failure(submitted)?;
        self.after_update(uploaded);
        Ok(())
    }

    /// Waits for the submission in flight (from an `_async` call), if any, and adds
    /// its pass timings to [`RayTracer::frame_timings`].
    pub fn finish(&mut self) -> Result<GpuWait, GpuError> {
        let wait = self.gpu.wait()?;
        if wait.waited {
            merge_timings(&mut self.timings, self.gpu.last_timings());
        }
        Ok(wait)
    }

    /// Traces `rays` into `hits` (same length). Rays must have a finite origin, a
    /// finite non-zero direction and `0 <= t_min <= t_max` (t_max may be +inf). An
    /// empty scene gives misses.
    pub fn trace(&mut self, rays: &[GpuRay], mode: TraceMode, hits: &mut [GpuHit]) -> Result<(), GpuError> {
        if rays.len() != hits.len() {
            return Err(GpuError::InvalidInput(format!("{} rays but room for {} hits", rays.len(), hits.len())));
        }
        check_rays(rays)?;
        self.timings.clear();
        self.uploaded = Uploads::default();
        if rays.is_empty() {
            return Ok(());
        }
        if self.scene.instances().is_empty() {
            hits.fill(GpuHit { instance: NO_HIT, t: f32::INFINITY, ..GpuHit::default() });
            return Ok(());
        }
        self.ensure_device_scene()?;
        let batch = rays.len().min(MAX_TRACE_BATCH);
        self.ensure_ray_buffers(batch as u64)?;
        let mut first = true;
        for (rays, hits) in rays.chunks(MAX_TRACE_BATCH).zip(hits.chunks_mut(MAX_TRACE_BATCH)) {
            let update = first && self.needs_update();
            let (gpu, parts) = self.split();
            let traced = gpu.submit("kiln trace", |rec| parts.record_trace(rec, update, rays, mode));
            let (download, uploaded) = self.after_failure(traced)?;
            hits.copy_from_slice(bytemuck::cast_slice(download.bytes()));
            merge_timings(&mut self.timings, self.gpu.last_timings());
            if update {
                self.after_update(uploaded);
            }
            first = false;
        }
        Ok(())
    }

    /// A tracer on an engine's device (embedded mode, see [`Gpu::embedded`]).
    ///
    /// # Safety
    /// As [`Gpu::embedded`].
    pub unsafe fn embedded(desc: &EmbeddedDevice) -> Result<RayTracer, GpuError> {
        // SAFETY: forwarded from the caller.
        RayTracer::with_gpu(unsafe { Gpu::embedded(desc) }?)
    }

    /// Embedded mode: records the scene update (when its inputs changed) and the
    /// tracing of `rays` into the engine's `cmd` for frame slot `slot` (see
    /// [`Gpu::record_into`]). The hits are readable from the returned
    /// [`PendingHits`] once the engine's submission completed. At most
    /// [`MAX_TRACE_BATCH`] rays; they are checked like [`RayTracer::trace`]'s. Scene
    /// changes (mesh data, instances, skins) are uploaded inside the same recording:
    /// nothing is submitted on Kiln's own queue.
    ///
    /// # Safety
    /// As [`Gpu::record_into`].
    pub unsafe fn record_trace(
        &mut self,
        cmd: ash::vk::CommandBuffer,
        slot: u32,
        rays: &[GpuRay],
        mode: TraceMode,
    ) -> Result<PendingHits, GpuError> {
        self.check_slot("record_trace", "trace", slot)?;
        check_rays(rays)?;
        if rays.len() > MAX_TRACE_BATCH {
            return Err(GpuError::InvalidInput(format!(
                "record_trace: {} rays; at most {MAX_TRACE_BATCH} per recording",
                rays.len()
            )));
        }
        let ids = self.ids_snapshot();
        if rays.is_empty() || self.scene.instances().is_empty() {
            return Ok(PendingHits { download: None, count: rays.len(), ids });
        }
        self.ensure_device_scene()?;
        self.ensure_ray_buffers(rays.len() as u64)?;
        self.uploaded = Uploads::default();
        let update = self.needs_update();
        let (gpu, parts) = self.split();
        // SAFETY: forwarded from the caller.
        let recorded =
            unsafe { gpu.record_into(cmd, slot, "kiln trace", |rec| parts.record_trace(rec, update, rays, mode)) };
        let (download, uploaded) = self.after_failure(recorded)?;
        if update {
            self.after_update(uploaded);
        }
        Ok(PendingHits { download: Some(download), count: rays.len(), ids })
    }

    /// Embedded mode: records the scene update (uploads, skinning, TLAS build; only
    /// what changed, nothing when nothing did) into the engine's `cmd` for frame
    /// slot `slot`, so that commands the engine records after it trace the current
    /// scene through [`RayTracer::trace_buffers`]. An empty scene records nothing.
    ///
    /// # Safety
    /// As [`Gpu::record_into`].
    pub unsafe fn record_update(&mut self, cmd: ash::vk::CommandBuffer, slot: u32) -> Result<(), GpuError> {
        self.check_slot("record_update", "update", slot)?;
        if cmd == ash::vk::CommandBuffer::null() {
            return Err(GpuError::InvalidInput("record_update: the command buffer is null".into()));
        }
        if self.scene.instances().is_empty() {
            return Ok(());
        }
        self.ensure_device_scene()?;
        self.uploaded = Uploads::default();
        if !self.needs_update() {
            return Ok(());
        }
        let (gpu, parts) = self.split();
        // SAFETY: forwarded from the caller.
        let recorded = unsafe { gpu.record_into(cmd, slot, "kiln update", |rec| parts.record_update(rec)) };
        let uploaded = self.after_failure(recorded)?;
        self.after_update(uploaded);
        Ok(())
    }

    /// Embedded mode: opens a frame for slot `slot` (see [`Gpu::begin_frame`]): the
    /// slot's previous command buffer completed, and any number of recordings
    /// (updates, traces, probe updates) may go into this frame's command buffers.
    pub fn begin_frame(&mut self, slot: u32) -> Result<(), GpuError> {
        self.check_slot("begin_frame", "nothing: a standalone tracer has no frames", slot)?;
        self.gpu.begin_frame(slot)
    }

    /// Refuses a recording (`what`) on a tracer that is not embedded (it should
    /// call `instead`) or for a frame slot it does not have.
    pub(crate) fn check_slot(&self, what: &str, instead: &str, slot: u32) -> Result<(), GpuError> {
        if !self.gpu.is_embedded() {
            return Err(GpuError::InvalidInput(format!("{what}: the tracer is not embedded; use {instead}")));
        }
        if slot >= self.gpu.frames_in_flight() {
            return Err(GpuError::InvalidInput(format!(
                "{what}: frame slot {slot} of {}",
                self.gpu.frames_in_flight()
            )));
        }
        Ok(())
    }

    /// The device scene's buffers, for an engine's own shaders (`kiln_trace.glsl`),
    /// as of the last update ([`RayTracer::update`], [`RayTracer::record_update`] or
    /// a trace). Refused while the scene has changes no update has taken yet, and
    /// for a scene without instances.
    pub fn trace_buffers(&self) -> Result<TraceBuffers, GpuError> {
        let device = match &self.device_scene {
            Some(device) if !self.scene.instances().is_empty() => device,
            _ => {
                return Err(GpuError::InvalidInput(
                    "trace_buffers: no scene on the device yet: add instances and update first".into(),
                ))
            }
        };
        let pending = self.needs_update()
            || self.meshes_dirty
            || self.skins_changed
            || device.instance_count() as usize != self.scene.instances().len();
        if pending {
            return Err(GpuError::InvalidInput(
                "trace_buffers: the scene changed since the last update; record the update first".into(),
            ));
        }
        let view = |b: &GpuBuffer| BufferView { buffer: b.raw(), size: b.size(), address: b.address() };
        Ok(TraceBuffers {
            scene: device.trace_scene(),
            buffers: device.trace_buffers().map(view),
            instance_count: device.instance_count(),
            version: self.buffers_version,
        })
    }

    /// A tracer on an open context holding `scene` (built on the CPU, e.g. by
    /// `gi::scenes`); its instances are rigid (instances of a skinned mesh show its
    /// rest pose until [`RayTracer::add_skinned_instance`] adds skinned ones).
    pub fn with_scene(gpu: Gpu, scene: Scene) -> Result<RayTracer, GpuError> {
        let mut tracer = RayTracer::with_gpu(gpu)?;
        for _ in 0..scene.mesh_count() {
            tracer.meshes.push();
        }
        for _ in scene.instances() {
            tracer.instances.push();
        }
        tracer.scene = scene;
        Ok(tracer)
    }

    /// The context, for buffers and reads of passes recorded by
    /// [`RayTracer::submit_with_scene`].
    pub fn gpu_mut(&mut self) -> &mut Gpu {
        &mut self.gpu
    }

    /// One submission: the scene update passes when something changed, then
    /// `record` with the device scene and the traversal kernel (the DDGI passes).
    /// Refused for an empty scene.
    pub fn submit_with_scene<R>(
        &mut self,
        label: &'static str,
        record: impl FnOnce(&mut Recorder<'_>, &GpuScene, &Tracer) -> Result<R, GpuError>,
    ) -> Result<R, GpuError> {
        let result = self.submit_with_scene_async(label, record)?;
        self.finish()?;
        Ok(result)
    }

    /// As [`RayTracer::submit_with_scene`], but returns once the work is submitted;
    /// [`RayTracer::finish`] completes it.
    pub fn submit_with_scene_async<R>(
        &mut self,
        label: &'static str,
        record: impl FnOnce(&mut Recorder<'_>, &GpuScene, &Tracer) -> Result<R, GpuError>,
    ) -> Result<R, GpuError> {
        // SAFETY: a submission of Kiln's own puts no obligation on the caller.
        unsafe { self.run_with_scene(None, label, record) }
    }

    /// Embedded mode: as [`RayTracer::submit_with_scene`], but recorded into the
    /// engine's `cmd` for frame slot `slot` (see [`RayTracer::record_trace`]); the
    /// DDGI passes of an engine's frame.
    ///
    /// # Safety
    /// As [`Gpu::record_into`].
    pub unsafe fn record_with_scene<R>(
        &mut self,
        cmd: ash::vk::CommandBuffer,
        slot: u32,
        label: &'static str,
        record: impl FnOnce(&mut Recorder<'_>, &GpuScene, &Tracer) -> Result<R, GpuError>,
    ) -> Result<R, GpuError> {
        self.check_slot(label, "a submission", slot)?;
        if cmd == ash::vk::CommandBuffer::null() {
            return Err(GpuError::InvalidInput(format!("{label}: the command buffer is null")));
        }
        // SAFETY: forwarded from the caller.
        unsafe { self.run_with_scene(Some((cmd, slot)), label, record) }
    }

    /// The scene update when something changed, then `record`: submitted
    /// (`into` is `None`) or recorded into an engine's command buffer and slot.
    ///
    /// # Safety
    /// With `into`, as [`Gpu::record_into`].
    unsafe fn run_with_scene<R>(
        &mut self,
        into: Option<(ash::vk::CommandBuffer, u32)>,
        label: &'static str,
        record: impl FnOnce(&mut Recorder<'_>, &GpuScene, &Tracer) -> Result<R, GpuError>,
    ) -> Result<R, GpuError> {
        if self.scene.instances().is_empty() {
            return Err(GpuError::InvalidInput(format!("{label}: the scene has no instances")));
        }
        self.finish()?;
        self.timings.clear();
        self.uploaded = Uploads::default();
        self.ensure_device_scene()?;
        let update = self.needs_update();
        let (gpu, parts) = self.split();
        let body = |rec: &mut Recorder<'_>| {
            let uploaded = if update { parts.record_update(rec)? } else { Uploads::default() };
            Ok((record(rec, parts.device_scene, &parts.kernels.trace)?, uploaded))
        };
        let done = match into {
            None => gpu.submit_async(label, body),
            // SAFETY: forwarded from the caller.
            Some((cmd, slot)) => unsafe { gpu.record_into(cmd, slot, label, body) },
        };
        let (result, uploaded) = self.after_failure(done)?;
        if update {
            self.after_update(uploaded);
        }
        Ok(result)
    }

    /// The context and, borrowed apart from it, what a recording reads.
    fn split(&mut self) -> (&mut Gpu, Parts<'_>) {
        let slots = transient_slots(&self.skinned, &self.instances, &self.meshes);
        let RayTracer {
            gpu,
            kernels,
            scene,
            device_scene,
            skin_dirty,
            rays,
            hits,
            dirty_blocks,
            all_dirty,
            mesh_appends,
            ..
        } = self;
        let parts = Parts {
            kernels,
            scene,
            device_scene: device_scene.as_ref().expect("the device scene is ensured first"),
            slots,
            skin_dirty: *skin_dirty,
            dirty_blocks,
            all_dirty: *all_dirty,
            mesh_appends: *mesh_appends,
            rays: rays.as_ref(),
            hits: hits.as_ref(),
        };
        (gpu, parts)
    }

    fn needs_update(&self) -> bool {
        self.instances_dirty || self.skin_dirty || self.mesh_appends.is_some()
    }

    fn after_update(&mut self, uploaded: Uploads) {
        self.instances_dirty = false;
        self.skin_dirty = false;
        self.all_dirty = false;
        self.dirty_blocks.fill(0);
        self.mesh_appends = None;
        self.uploaded.instances = uploaded.instances;
        self.uploaded.meshes += uploaded.meshes;
    }

    /// A submission or recording that failed may have left appended mesh data off
    /// the device: the device copy is made anew next time.
    fn after_failure<R>(&mut self, result: Result<R, GpuError>) -> Result<R, GpuError> {
        if result.is_err() && self.mesh_appends.is_some() {
            self.mesh_appends = None;
            if let Some(old) = self.device_scene.take() {
                self.gpu.defer_drop(old);
            }
        }
        result
    }

    /// Makes the device copy match the scene's structure: the mesh arrays after
    /// meshes changed, the per-instance buffers' room after the count changed.
    fn ensure_device_scene(&mut self) -> Result<(), GpuError> {
        let count = self.scene.instances().len();
        let transient = TransientLens::of(&self.scene, &transient_slots(&self.skinned, &self.instances, &self.meshes))?;
        match &mut self.device_scene {
            None => {
                // Sized only: the data goes up inside the next recording, so a
                // tracer on an engine's device never submits work of its own.
                self.device_scene = Some(GpuScene::sized(&mut self.gpu, &self.scene, transient)?);
                self.buffers_version += 1;
                self.mesh_appends = Some(MeshLens::default());
                // Fresh buffers hold rest poses and no TLAS: redo everything.
                self.all_dirty = true;
                self.instances_dirty = true;
                self.skin_dirty = !self.skinned.is_empty();
            }
            Some(device) => {
                if self.meshes_dirty || !device.transient_fits(transient) {
                    match device.follow_meshes(&self.scene, !self.skins_changed, transient) {
                        Some(had) => {
                            self.mesh_appends.get_or_insert(had);
                        }
                        None => {
                            device.replace_meshes(&mut self.gpu, &self.scene, transient)?;
                            self.buffers_version += 1;
                            self.mesh_appends = Some(MeshLens::default());
                            // Skinned vertices are back at rest.
                            self.skin_dirty = !self.skinned.is_empty();
                        }
                    }
                    self.instances_dirty = true;
                }
                if device.reserve_instances(&mut self.gpu, count)? {
                    self.buffers_version += 1;
                    self.all_dirty = true;
                }
                self.instances_dirty |= device.instance_count() as usize != count;
            }
        }
        self.meshes_dirty = false;
        self.skins_changed = false;
        Ok(())
    }

    fn ensure_ray_buffers(&mut self, count: u64) -> Result<(), GpuError> {
        let have = self.rays.as_ref().map_or(0, |b| b.size() / 48);
        if have < count {
            let count = count.next_power_of_two().min(MAX_TRACE_BATCH as u64);
            if let (Some(rays), Some(hits)) = (self.rays.take(), self.hits.take()) {
                self.gpu.defer_drop((rays, hits));
            }
            self.rays = Some(self.gpu.buffer("trace rays", 48 * count, BufferMemory::Device)?);
            self.hits = Some(self.gpu.buffer("trace hits", 48 * count, BufferMemory::Device)?);
        }
        Ok(())
    }
}

/// The tracer's parts a recording reads, borrowed apart from its [`Gpu`]
/// ([`RayTracer::split`]); the device scene is ensured before.
struct Parts<'t> {
    kernels: &'t Kernels,
    scene: &'t Scene,
    device_scene: &'t GpuScene,
    slots: Vec<TransientSlot<'t>>,
    skin_dirty: bool,
    dirty_blocks: &'t [u64],
    all_dirty: bool,
    mesh_appends: Option<MeshLens>,
    rays: Option<&'t GpuBuffer>,
    hits: Option<&'t GpuBuffer>,
}

impl Parts<'_> {
    /// "upload meshes" (what the mesh arrays gained, when they did) -> "upload
    /// instances" (the changed blocks) -> "skin + refit" (when bones changed) ->
    /// "tlas build". Returns the bytes uploaded.
    fn record_update(&self, rec: &mut Recorder<'_>) -> Result<Uploads, GpuError> {
        let device_scene = self.device_scene;
        let mut uploaded = Uploads::default();
        if let Some(had) = self.mesh_appends {
            uploaded.meshes =
                rec.pass("upload meshes", |rec| device_scene.record_mesh_appends(rec, self.scene, had))?;
        }
        uploaded.instances = rec.pass("upload instances", |rec| {
            let blocks = device_scene.upload_instances(rec, self.scene, self.dirty_blocks, self.all_dirty)?;
            Ok(blocks + device_scene.record_transient_refs(rec, self.scene, &self.slots)?)
        })?;
        if self.skin_dirty && !self.slots.is_empty() {
            let kernels = self.kernels;
            rec.pass("skin + refit", |rec| {
                device_scene.record_transient(rec, self.scene, &kernels.skin, &kernels.refit, &self.slots)
            })?;
        }
        rec.pass("tlas build", |rec| self.kernels.tlas.record(rec, device_scene))?;
        Ok(uploaded)
    }

    /// The update (when `update`), then "trace": upload `rays`, trace, read back the
    /// hits. The ray buffers are sized for `rays` before.
    fn record_trace(
        &self,
        rec: &mut Recorder<'_>,
        update: bool,
        rays: &[GpuRay],
        mode: TraceMode,
    ) -> Result<(Download, Uploads), GpuError> {
        let uploaded = if update { self.record_update(rec)? } else { Uploads::default() };
        let (ray_buffer, hit_buffer) = (self.rays.expect("sized"), self.hits.expect("sized"));
        let count = rays.len() as u32;
        rec.pass("trace", |rec| {
            rec.upload(ray_buffer, 0, bytemuck::cast_slice(rays))?;
            self.kernels.trace.record(rec, self.device_scene, ray_buffer, hit_buffer, count, mode == TraceMode::Any)?;
            rec.download(hit_buffer, 0, 48 * u64::from(count))
        })
        .map(|download| (download, uploaded))
    }
}

/// The skinned instances as the transient segment's recordings see them.
fn transient_slots<'a>(skinned: &'a [Skinned], instances: &Slots, meshes: &Slots) -> Vec<TransientSlot<'a>> {
    skinned
        .iter()
        .map(|s| TransientSlot {
            instance: instances.dense(s.instance).expect("a skinned instance is live"),
            mesh: meshes.dense(s.mesh).expect("a skinned instance's mesh is live"),
            bones: &s.bones,
        })
        .collect()
}

/// Marks the block of packed instance `packed` in `blocks` (grown as needed) and the
/// TLAS as stale.
fn mark(blocks: &mut Vec<u64>, tlas_stale: &mut bool, packed: u32) {
    let block = (packed / INSTANCE_BLOCK) as usize;
    if blocks.len() <= block / 64 {
        blocks.resize(block / 64 + 1, 0);
    }
    blocks[block / 64] |= 1 << (block % 64);
    *tlas_stale = true;
}

/// Adds `new` to `into` by pass name (keeping first-seen order).
fn merge_timings(into: &mut Vec<GpuTiming>, new: &[GpuTiming]) {
    for timing in new {
        match into.iter_mut().find(|t| t.name == timing.name) {
            Some(existing) => existing.milliseconds += timing.milliseconds,
            None => into.push(*timing),
        }
    }
}

fn check_rays(rays: &[GpuRay]) -> Result<(), GpuError> {
    for (i, ray) in rays.iter().enumerate() {
        let finite = ray.origin.iter().chain(&ray.dir).all(|c| c.is_finite());
        let length2: f32 = ray.dir.iter().map(|c| c * c).sum();
        if !finite || length2 == 0.0 || !length2.is_finite() {
            return Err(GpuError::InvalidInput(format!(
                "rays[{i}] needs a finite origin and a finite non-zero direction: {ray:?}"
            )));
        }
        if !(ray.t_min >= 0.0 && ray.t_min <= ray.t_max) || ray.t_min.is_infinite() {
            return Err(GpuError::InvalidInput(format!(
                "rays[{i}] needs 0 <= t_min <= t_max, t_min finite: [{}, {}]",
                ray.t_min, ray.t_max
            )));
        }
    }
    Ok(())
}

/// The affine transform of a rigid pose.
pub fn isometry_affine(pose: &Isometry) -> Affine {
    let m = glam::Mat3::from_quat(pose.rotation);
    let t = pose.translation;
    [
        [m.x_axis.x, m.y_axis.x, m.z_axis.x, t.x],
        [m.x_axis.y, m.y_axis.y, m.z_axis.y, t.y],
        [m.x_axis.z, m.y_axis.z, m.z_axis.z, t.z],
    ]
}

/// `a * b` (apply `b`, then `a`).
pub fn compose(a: &Affine, b: &Affine) -> Affine {
    let mut out = [[0.0f32; 4]; 3];
    for (r, row) in out.iter_mut().enumerate() {
        for (c, value) in row.iter_mut().enumerate() {
            *value = (0..3).map(|k| a[r][k] * b[k][c]).sum::<f32>() + if c == 3 { a[r][3] } else { 0.0 };
        }
    }
    out
}
