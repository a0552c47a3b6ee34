//! The ray tracer a program links: one device, meshes, instances (static, skinned or
//! following physics bodies), and ray batches traced against them.
//!
//! ```text
//!  add_mesh / add_instance / add_skinned_instance     structure: the device copy
//!                                                     (GpuScene) is rebuilt lazily
//!  set_transform / set_bones / sync_poses              per-frame inputs, kept on the CPU
//!  trace(rays, mode, hits):
//!    one submission:  "upload instances" -> "skin + refit" -> "tlas build" -> "trace"
//!    (the first three only when their inputs changed since the last trace)
//!    batches beyond MAX_TRACE_BATCH rays: one more submission of "trace" each
//! ```
//!
//! Everything is checked before the device sees it: a refused call changes nothing.
//! `frame_timings` holds the GPU milliseconds per pass of the last `trace`/`update`.

use super::blas_refit::BlasRefit;
use super::buffer::{BufferMemory, GpuBuffer};
use super::context::{DeviceInfo, EmbeddedDevice, GpuConfig};
use super::error::GpuError;
use super::layout::{GpuHit, GpuRay, NO_HIT};
use super::queue::{Gpu, GpuTiming, GpuWait};
use super::recorder::{Download, Recorder};
use super::scene::GpuScene;
use super::skin::Skin;
use super::tlas::TlasBuilder;
use super::trace::Tracer;
use crate::math::Isometry;
use crate::raytrace::{invert_affine, Affine, BoneMatrix, Scene, SkinData, IDENTITY};

/// Rays traced per dispatch (48 MiB of rays and as much of hits).
pub const MAX_TRACE_BATCH: usize = 1 << 20;

/// Hits recorded into an engine's command buffer ([`RayTracer::record_trace`]).
#[derive(Debug)]
pub struct PendingHits {
    /// `None`: nothing was recorded (no rays, or an empty scene: all misses).
    download: Option<Download>,
    count: usize,
}

impl PendingHits {
    /// Rays recorded.
    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
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
    instance: u32,
    body: u64,
    local: Affine,
}

struct Kernels {
    skin: Skin,
    refit: BlasRefit,
    tlas: TlasBuilder,
    trace: Tracer,
}

/// A device with its meshes and instances; see the module docs.
pub struct RayTracer {
    gpu: Gpu,
    kernels: Kernels,
    scene: Scene,
    /// The device copy of `scene`; `None` after a structural change.
    device_scene: Option<GpuScene>,
    /// Per skinned slot: its instance and current bones.
    skinned: Vec<(u32, Vec<BoneMatrix>)>,
    skin_dirty: bool,
    instances_dirty: bool,
    rays: Option<GpuBuffer>,
    hits: Option<GpuBuffer>,
    follows: Vec<Follow>,
    timings: Vec<GpuTiming>,
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
            skinned: Vec::new(),
            skin_dirty: false,
            instances_dirty: true,
            rays: None,
            hits: None,
            follows: Vec::new(),
            timings: Vec::new(),
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

    pub fn mesh_count(&self) -> u32 {
        self.scene.mesh_count() as u32
    }

    pub fn instance_count(&self) -> u32 {
        self.scene.instances().len() as u32
    }

    /// Builds a BLAS over the mesh; returns the mesh index.
    pub fn add_mesh(&mut self, positions: &[[f32; 3]], triangles: &[[u32; 3]]) -> Result<u32, GpuError> {
        let mesh = self.scene.add_mesh(positions, triangles)?;
        self.drop_device_scene();
        Ok(mesh)
    }

    /// Adds an instance of `mesh`; returns its index (reported in hits).
    pub fn add_instance(&mut self, mesh: u32, transform: &Affine, mask: u32, user_id: u32) -> Result<u32, GpuError> {
        let instance = self.scene.add_instance(mesh, transform, mask, user_id)?;
        self.drop_device_scene();
        Ok(instance)
    }

    /// Adds a skinned instance (its own copy of the mesh, skinned and refitted on the
    /// device whenever its bones change); its bones start as identities.
    pub fn add_skinned_instance(
        &mut self,
        skin: SkinData,
        triangles: &[[u32; 3]],
        transform: &Affine,
        mask: u32,
        user_id: u32,
    ) -> Result<u32, GpuError> {
        let bone_count = skin.bone_count as usize;
        let (instance, slot) = self.scene.add_skinned_instance(skin, triangles, transform, mask, user_id)?;
        debug_assert_eq!(slot as usize, self.skinned.len());
        self.skinned.push((instance, vec![IDENTITY; bone_count]));
        self.drop_device_scene();
        Ok(instance)
    }

    /// Moves instances in bulk: all of them are checked before any moves.
    pub fn set_transforms(&mut self, instances: &[u32], transforms: &[Affine]) -> Result<(), GpuError> {
        if instances.len() != transforms.len() {
            return Err(GpuError::InvalidInput(format!(
                "{} instances but {} transforms",
                instances.len(),
                transforms.len()
            )));
        }
        let count = self.instance_count();
        for (i, (&instance, transform)) in instances.iter().zip(transforms).enumerate() {
            if instance >= count {
                return Err(GpuError::InvalidInput(format!(
                    "instances[{i}] = {instance} does not exist ({count} instances)"
                )));
            }
            if invert_affine(transform).is_none() {
                return Err(GpuError::InvalidInput(format!("transforms[{i}] is singular, NaN or infinite")));
            }
        }
        for (&instance, transform) in instances.iter().zip(transforms) {
            self.scene.set_transform(instance, transform)?;
        }
        self.instances_dirty = true;
        Ok(())
    }

    /// Sets the bones of a skinned instance (exactly its bone count, all finite).
    pub fn set_bones(&mut self, instance: u32, bones: &[BoneMatrix]) -> Result<(), GpuError> {
        let Some((_, current)) = self.skinned.iter_mut().find(|(i, _)| *i == instance) else {
            return Err(GpuError::InvalidInput(format!("instance {instance} is not a skinned instance")));
        };
        if bones.len() != current.len() {
            return Err(GpuError::InvalidInput(format!(
                "instance {instance} has {} bones, {} given",
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
    pub fn follow_body(&mut self, instance: u32, body: u64, local: &Affine) -> Result<(), GpuError> {
        if instance >= self.instance_count() {
            return Err(GpuError::InvalidInput(format!(
                "instance {instance} does not exist ({} instances)",
                self.instance_count()
            )));
        }
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
    pub fn unfollow(&mut self, instance: u32) {
        self.follows.retain(|f| f.instance != instance);
    }

    /// Copies the pose of every followed body into its instance, from `pose_of` (by the
    /// key given to [`RayTracer::follow_body`]; `None`: the body is gone), e.g. a
    /// world's transforms or a snapshot taken at the end of the previous step. An
    /// instance whose body is gone is hidden (mask 0) and stops following; returns how
    /// many were.
    pub fn sync_poses(&mut self, pose_of: impl Fn(u64) -> Option<Isometry>) -> u32 {
        let mut gone = 0;
        let scene = &mut self.scene;
        self.follows.retain(|f| match pose_of(f.body) {
            Some(pose) => {
                let transform = compose(&isometry_affine(&pose), &f.local);
                // A body's pose is finite and a rotation; `local` was checked, so the
                // product is invertible unless it overflows, which leaves it in place.
                let _ = scene.set_transform(f.instance, &transform);
                true
            }
            None => {
                scene.instances[f.instance as usize].mask = 0;
                gone += 1;
                false
            }
        });
        self.instances_dirty |= !self.follows.is_empty() || gone > 0;
        gone
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
        self.ensure_device_scene()?;
        if !self.needs_update() {
            return Ok(());
        }
        let (gpu, parts) = self.split();
        gpu.submit_async("kiln update", |rec| parts.record_update(rec))?;
        self.after_update();
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
            let download = gpu.submit("kiln trace", |rec| parts.record_trace(rec, update, rays, mode))?;
            hits.copy_from_slice(bytemuck::cast_slice(download.bytes()));
            merge_timings(&mut self.timings, self.gpu.last_timings());
            if update {
                self.after_update();
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
    /// [`MAX_TRACE_BATCH`] rays; they are checked like [`RayTracer::trace`]'s. After
    /// a structural change (a new mesh or instance) the scene is first uploaded by
    /// one submission of Kiln's own on the queue given at creation.
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
        if !self.gpu.is_embedded() {
            return Err(GpuError::InvalidInput("record_trace: the tracer is not embedded; use trace".into()));
        }
        if slot >= self.gpu.frames_in_flight() {
            return Err(GpuError::InvalidInput(format!(
                "record_trace: frame slot {slot} of {}",
                self.gpu.frames_in_flight()
            )));
        }
        check_rays(rays)?;
        if rays.len() > MAX_TRACE_BATCH {
            return Err(GpuError::InvalidInput(format!(
                "record_trace: {} rays; at most {MAX_TRACE_BATCH} per recording",
                rays.len()
            )));
        }
        if rays.is_empty() || self.scene.instances().is_empty() {
            return Ok(PendingHits { download: None, count: rays.len() });
        }
        self.ensure_device_scene()?;
        self.ensure_ray_buffers(rays.len() as u64)?;
        let update = self.needs_update();
        let (gpu, parts) = self.split();
        // SAFETY: forwarded from the caller.
        let download =
            unsafe { gpu.record_into(cmd, slot, "kiln trace", |rec| parts.record_trace(rec, update, rays, mode)) }?;
        if update {
            self.after_update();
        }
        Ok(PendingHits { download: Some(download), count: rays.len() })
    }

    /// A tracer on an open context holding `scene` (built on the CPU, e.g. by
    /// `gi::scenes`). Skinned instances need their bones from
    /// [`RayTracer::add_skinned_instance`], so a scene with any is refused.
    pub fn with_scene(gpu: Gpu, scene: Scene) -> Result<RayTracer, GpuError> {
        if scene.skinned_count() > 0 {
            return Err(GpuError::InvalidInput(format!(
                "with_scene: {} skinned instances; add them with add_skinned_instance",
                scene.skinned_count()
            )));
        }
        let mut tracer = RayTracer::with_gpu(gpu)?;
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
        if self.scene.instances().is_empty() {
            return Err(GpuError::InvalidInput(format!("{label}: the scene has no instances")));
        }
        self.finish()?;
        self.timings.clear();
        self.ensure_device_scene()?;
        let update = self.needs_update();
        let (gpu, parts) = self.split();
        let result = gpu.submit_async(label, |rec| {
            if update {
                parts.record_update(rec)?;
            }
            record(rec, parts.device_scene, &parts.kernels.trace)
        })?;
        if update {
            self.after_update();
        }
        Ok(result)
    }

    /// The context and, borrowed apart from it, what a recording reads.
    fn split(&mut self) -> (&mut Gpu, Parts<'_>) {
        let RayTracer { gpu, kernels, scene, device_scene, skinned, skin_dirty, rays, hits, .. } = self;
        let parts = Parts {
            kernels,
            scene,
            device_scene: device_scene.as_ref().expect("the device scene is ensured first"),
            skinned,
            skin_dirty: *skin_dirty,
            rays: rays.as_ref(),
            hits: hits.as_ref(),
        };
        (gpu, parts)
    }

    /// Forgets the device copy of the scene after a structural change (kept alive
    /// while an engine's command buffer may still use it).
    fn drop_device_scene(&mut self) {
        if let Some(old) = self.device_scene.take() {
            self.gpu.defer_drop(old);
        }
    }

    fn needs_update(&self) -> bool {
        self.instances_dirty || self.skin_dirty
    }

    fn after_update(&mut self) {
        self.instances_dirty = false;
        self.skin_dirty = false;
    }

    fn ensure_device_scene(&mut self) -> Result<(), GpuError> {
        if self.device_scene.is_none() {
            self.device_scene = Some(GpuScene::new(&mut self.gpu, &self.scene)?);
            // Fresh buffers hold rest poses and no TLAS: redo everything.
            self.instances_dirty = true;
            self.skin_dirty = !self.skinned.is_empty();
        }
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
    skinned: &'t [(u32, Vec<BoneMatrix>)],
    skin_dirty: bool,
    rays: Option<&'t GpuBuffer>,
    hits: Option<&'t GpuBuffer>,
}

impl Parts<'_> {
    /// "upload instances" -> "skin + refit" (when bones changed) -> "tlas build".
    fn record_update(&self, rec: &mut Recorder<'_>) -> Result<(), GpuError> {
        let device_scene = self.device_scene;
        rec.pass("upload instances", |rec| device_scene.upload_instances(rec, self.scene))?;
        if self.skin_dirty {
            let bones: Vec<&[BoneMatrix]> = self.skinned.iter().map(|(_, b)| b.as_slice()).collect();
            let kernels = self.kernels;
            rec.pass("skin + refit", |rec| device_scene.record_skinning(rec, &kernels.skin, &kernels.refit, &bones))?;
        }
        rec.pass("tlas build", |rec| self.kernels.tlas.record(rec, device_scene))
    }

    /// The update (when `update`), then "trace": upload `rays`, trace, read back the
    /// hits. The ray buffers are sized for `rays` before.
    fn record_trace(
        &self,
        rec: &mut Recorder<'_>,
        update: bool,
        rays: &[GpuRay],
        mode: TraceMode,
    ) -> Result<Download, GpuError> {
        if update {
            self.record_update(rec)?;
        }
        let (ray_buffer, hit_buffer) = (self.rays.expect("sized"), self.hits.expect("sized"));
        let count = rays.len() as u32;
        rec.pass("trace", |rec| {
            rec.upload(ray_buffer, 0, bytemuck::cast_slice(rays))?;
            self.kernels.trace.record(rec, self.device_scene, ray_buffer, hit_buffer, count, mode == TraceMode::Any)?;
            rec.download(hit_buffer, 0, 48 * u64::from(count))
        })
    }
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
