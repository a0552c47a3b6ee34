//! The DDGI visibility bake on the GPU (`gi_visibility_rays.comp` → trace →
//! `gi_visibility_reduce.comp`), the kernels of `gi::update::{visibility_rays,
//! visibility_map}`; the maps it writes feed [`GiCompressor`](super::GiCompressor).
//!
//! Probes go in batches of [`BAKE_BATCH_PROBES`] (1,024 rays each, so a batch is
//! 1M rays, the tracer's batch size), one submission per batch.

use super::buffer::{BufferMemory, GpuBuffer};
use super::error::GpuError;
use super::gi_compress::GpuVisibility;
use super::kernel::Kernel;
use super::layout::GiBakePush;
use super::ray_tracer::RayTracer;
use super::recorder::{Recorder, Use};
use super::scene::GpuScene;
use super::shaders;
use super::trace::Tracer;
use crate::gi::update::BAKE_RAYS;
use crate::gi::{ProbeGrid, ProbeVolume, OCT_TEXELS};

/// Probes per bake submission.
pub const BAKE_BATCH_PROBES: u32 = 1024;

/// The bake kernels and their ray and hit buffers (kept between bakes, grown on
/// demand).
pub struct GiBaker {
    /// Instance mask of the bake's rays: only instances sharing a bit occlude the
    /// probes' visibility (`gi::ProbeRules::occluders`). All bits by default.
    pub occluders: u32,
    rays: Kernel,
    reduce: Kernel,
    scratch: Option<(GpuBuffer, GpuBuffer)>,
}

impl GiBaker {
    pub fn new(tracer: &RayTracer) -> Result<GiBaker, GpuError> {
        Ok(GiBaker {
            occluders: u32::MAX,
            rays: tracer.gpu().kernel(&shaders::GI_VISIBILITY_RAYS)?,
            reduce: tracer.gpu().kernel(&shaders::GI_VISIBILITY_REDUCE)?,
            scratch: None,
        })
    }

    /// Embedded mode: records the bake of every probe of `volume` into `vis.maps`
    /// (all batches), then `after` (the compression and its read-back), into the
    /// engine's `cmd` for frame slot `slot`, with the scene's update when it
    /// changed. The probe list goes up inside the recording: nothing is submitted.
    ///
    /// # Safety
    /// As [`super::Gpu::record_into`].
    pub unsafe fn record<R>(
        &mut self,
        tracer: &mut RayTracer,
        volume: &ProbeVolume,
        vis: &GpuVisibility,
        cmd: ash::vk::CommandBuffer,
        slot: u32,
        after: impl FnOnce(&mut Recorder<'_>) -> Result<R, GpuError>,
    ) -> Result<R, GpuError> {
        let n = volume.probe_count() as u32;
        let linear: Vec<u32> = (0..n as usize).map(|p| volume.grid.linear(volume.probe_coords(p)) as u32).collect();
        let probes = tracer.gpu().buffer("gi bake probes", 4 * u64::from(n.max(1)), BufferMemory::Device)?;
        check_buffers(n, vis)?;
        let push = self.prepare(tracer, &volume.grid, n, &vis.maps, &probes)?;
        let this = &*self;
        let (rays, hits) = this.scratch.as_ref().expect("sized by prepare");
        // SAFETY: forwarded from the caller.
        let result = unsafe {
            tracer.record_with_scene(cmd, slot, "kiln gi bake", |rec, scene, trace| {
                rec.upload(&probes, 0, bytemuck::cast_slice(&linear))?;
                for first in (0..n).step_by(BAKE_BATCH_PROBES as usize) {
                    let push = GiBakePush { first, count: BAKE_BATCH_PROBES.min(n - first), ..push };
                    this.record_batch(rec, scene, trace, &push, &probes, rays, hits, &vis.maps)?;
                }
                after(rec)
            })
        };
        tracer.gpu_mut().defer_drop(probes);
        result
    }

    /// Sizes the ray scratch for a batch and returns the push constants of the
    /// bake of `n` probes of `grid` into `maps` (`first`, `count` to set per batch).
    fn prepare(
        &mut self,
        tracer: &mut RayTracer,
        grid: &ProbeGrid,
        n: u32,
        maps: &GpuBuffer,
        probes: &GpuBuffer,
    ) -> Result<GiBakePush, GpuError> {
        let ray_bytes = 48 * BAKE_RAYS as u64 * u64::from(n.clamp(1, BAKE_BATCH_PROBES));
        let gpu = tracer.gpu_mut();
        if self.scratch.as_ref().is_none_or(|(rays, _)| rays.size() < ray_bytes) {
            self.scratch = None;
            self.scratch = Some((
                gpu.buffer("gi bake rays", ray_bytes, BufferMemory::Device)?,
                gpu.buffer("gi bake hits", ray_bytes, BufferMemory::Device)?,
            ));
        }
        let (rays, hits) = self.scratch.as_ref().expect("sized above");
        Ok(GiBakePush {
            rays: rays.address(),
            hits: hits.address(),
            probes: probes.address(),
            maps: maps.address(),
            origin_x: grid.origin.x,
            origin_y: grid.origin.y,
            origin_z: grid.origin.z,
            spacing: grid.spacing,
            dims_x: grid.dims[0],
            dims_z: grid.dims[2],
            clip: grid.clip_distance(),
            first: 0,
            count: 0,
            mask: self.occluders,
        })
    }

    /// One batch: rays, trace, reduce into the maps.
    #[allow(clippy::too_many_arguments)]
    fn record_batch(
        &self,
        rec: &mut Recorder<'_>,
        scene: &GpuScene,
        trace: &Tracer,
        push: &GiBakePush,
        probes: &GpuBuffer,
        rays: &GpuBuffer,
        hits: &GpuBuffer,
        maps: &GpuBuffer,
    ) -> Result<(), GpuError> {
        let ray_count = push.count * BAKE_RAYS as u32;
        rec.pass("gi visibility bake", |rec| {
            // One push block for both kernels: each declares the buffers it is
            // handed but does not touch as reads.
            let uses = [Use::read(probes), Use::read(hits), Use::read(maps), Use::write(rays)];
            rec.dispatch_threads(&self.rays, push, ray_count, &uses)?;
            trace.record(rec, scene, rays, hits, ray_count, false)?;
            let uses = [Use::read(probes), Use::read(rays), Use::read(hits), Use::write(maps)];
            rec.dispatch_threads(&self.reduce, push, push.count * OCT_TEXELS as u32, &uses)
        })
    }

    /// Bakes the visibility map of every probe of `volume` into `vis.maps` against
    /// the tracer's scene.
    pub fn bake(&mut self, tracer: &mut RayTracer, volume: &ProbeVolume, vis: &GpuVisibility) -> Result<(), GpuError> {
        let n = volume.probe_count() as u32;
        check_buffers(n, vis)?;
        let linear: Vec<u32> = (0..n as usize).map(|p| volume.grid.linear(volume.probe_coords(p)) as u32).collect();
        self.bake_points(tracer, &volume.grid, &linear, &vis.maps)
    }

    /// Bakes the maps of the probes at grid points `linear` (linear grid indices)
    /// into `maps` (`vec2[256]` per point, in the list's order) against the
    /// tracer's scene: a refresh's probes.
    pub fn bake_points(
        &mut self,
        tracer: &mut RayTracer,
        grid: &ProbeGrid,
        linear: &[u32],
        maps: &GpuBuffer,
    ) -> Result<(), GpuError> {
        let n = linear.len() as u32;
        if n == 0 {
            return Ok(());
        }
        if maps.size() < u64::from(n) * OCT_TEXELS as u64 * 8 {
            return Err(GpuError::InvalidInput(format!("bake: {} bytes of maps for {n} probes", maps.size())));
        }
        let probes = tracer.gpu_mut().buffer_from("gi bake probes", linear)?;
        let push = self.prepare(tracer, grid, n, maps, &probes)?;
        let (rays, hits) = self.scratch.as_ref().expect("sized by prepare");
        for first in (0..n).step_by(BAKE_BATCH_PROBES as usize) {
            let push = GiBakePush { first, count: BAKE_BATCH_PROBES.min(n - first), ..push };
            tracer.submit_with_scene("kiln gi bake", |rec, scene, trace| {
                self.record_batch(rec, scene, trace, &push, &probes, rays, hits, maps)
            })?;
        }
        Ok(())
    }
}

/// The compression buffers must be sized for the volume's probes.
fn check_buffers(n: u32, vis: &GpuVisibility) -> Result<(), GpuError> {
    if vis.probe_count != n {
        return Err(GpuError::InvalidInput(format!(
            "bake: the volume has {n} probes, the buffers {}",
            vis.probe_count
        )));
    }
    Ok(())
}
