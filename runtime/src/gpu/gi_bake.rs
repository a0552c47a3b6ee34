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
use crate::gi::relocate::{decode_offset, encode_offset, pack_offset, relocate, ProbeRules, RayCensus};
use crate::gi::update::{bake_directions, BAKE_RAYS};
use crate::gi::{ProbeGrid, ProbeVolume, OCT_TEXELS};
use crate::raytrace::{GpuHit, GpuRay};

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

    /// Embedded mode: records the bake of the probes at grid points `linear`
    /// (with offset `words`, as [`GiBaker::bake_points`]) into `maps` (all
    /// batches), then `after` (the compression, a read-back), into the engine's
    /// `cmd` for frame slot `slot`, with the scene's update when it changed. The
    /// probe list goes up inside the recording: nothing is submitted.
    ///
    /// # Safety
    /// As [`super::Gpu::record_into`].
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn record<R>(
        &mut self,
        tracer: &mut RayTracer,
        grid: &ProbeGrid,
        linear: &[u32],
        words: Option<&[u32]>,
        maps: &GpuBuffer,
        cmd: ash::vk::CommandBuffer,
        slot: u32,
        after: impl FnOnce(&mut Recorder<'_>) -> Result<R, GpuError>,
    ) -> Result<R, GpuError> {
        let n = linear.len() as u32;
        if maps.size() < u64::from(n) * OCT_TEXELS as u64 * 8 {
            return Err(GpuError::InvalidInput(format!("bake: {} bytes of maps for {n} probes", maps.size())));
        }
        if words.is_some_and(|w| w.len() != linear.len()) {
            return Err(GpuError::InvalidInput("bake: an offset word per probe".into()));
        }
        let gpu = tracer.gpu();
        let probes = gpu.buffer("gi bake probes", 4 * u64::from(n.max(1)), BufferMemory::Device)?;
        let offsets = words.map(|w| gpu.buffer("gi bake offsets", 4 * w.len().max(1) as u64, BufferMemory::Device));
        let offsets = match offsets.transpose() {
            Ok(offsets) => offsets,
            Err(err) => {
                tracer.gpu_mut().defer_drop(probes);
                return Err(err);
            }
        };
        let address = offsets.as_ref().map_or(0, GpuBuffer::address);
        let result = self.prepare(tracer, grid, n, maps, &probes, address).and_then(|push| {
            let this = &*self;
            let (rays, hits) = this.scratch.as_ref().expect("sized by prepare");
            // SAFETY: forwarded from the caller.
            unsafe {
                tracer.record_with_scene(cmd, slot, "kiln gi bake", |rec, scene, trace| {
                    rec.upload(&probes, 0, bytemuck::cast_slice(linear))?;
                    if let (Some(buffer), Some(words)) = (&offsets, words) {
                        rec.upload(buffer, 0, bytemuck::cast_slice(words))?;
                    }
                    for first in (0..n).step_by(BAKE_BATCH_PROBES as usize) {
                        let push = GiBakePush { first, count: BAKE_BATCH_PROBES.min(n - first), ..push };
                        let buffers = [&probes, rays, hits, maps];
                        this.record_rays(rec, scene, trace, &push, buffers, offsets.as_ref(), true)?;
                    }
                    after(rec)
                })
            }
        });
        tracer.gpu_mut().defer_drop(probes);
        if let Some(offsets) = offsets {
            tracer.gpu_mut().defer_drop(offsets);
        }
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
        offsets: u64,
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
            offsets,
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

    /// One batch: rays and trace, then the reduce into the maps when `reduce`.
    #[allow(clippy::too_many_arguments)]
    fn record_rays(
        &self,
        rec: &mut Recorder<'_>,
        scene: &GpuScene,
        trace: &Tracer,
        push: &GiBakePush,
        [probes, rays, hits, maps]: [&GpuBuffer; 4],
        offsets: Option<&GpuBuffer>,
        reduce: bool,
    ) -> Result<(), GpuError> {
        let ray_count = push.count * BAKE_RAYS as u32;
        rec.pass("gi visibility bake", |rec| {
            // One push block for both kernels: each declares the buffers it is
            // handed but does not touch as reads.
            let mut uses = vec![Use::read(probes), Use::read(hits), Use::read(maps), Use::write(rays)];
            uses.extend(offsets.map(Use::read));
            rec.dispatch_threads(&self.rays, push, ray_count, &uses)?;
            trace.record(rec, scene, rays, hits, ray_count, false)?;
            if !reduce {
                return Ok(());
            }
            let mut uses = vec![Use::read(probes), Use::read(rays), Use::read(hits), Use::write(maps)];
            uses.extend(offsets.map(Use::read));
            rec.dispatch_threads(&self.reduce, push, push.count * OCT_TEXELS as u32, &uses)
        })
    }

    /// Bakes the visibility map of every probe of `volume` into `vis.maps` against
    /// the tracer's scene.
    pub fn bake(&mut self, tracer: &mut RayTracer, volume: &ProbeVolume, vis: &GpuVisibility) -> Result<(), GpuError> {
        let n = volume.probe_count() as u32;
        check_buffers(n, vis)?;
        let linear: Vec<u32> = (0..n as usize).map(|p| volume.grid.linear(volume.probe_coords(p)) as u32).collect();
        self.bake_points(tracer, &volume.grid, &linear, None, &vis.maps)
    }

    /// Bakes the maps of the probes at grid points `linear` (linear grid indices)
    /// into `maps` (`vec2[256]` per point, in the list's order) against the
    /// tracer's scene: a refresh's probes. `words`, when given, holds each probe's
    /// offset word (`gi::relocate::pack_offset`, with [`INACTIVE_BIT`] for a probe
    /// whose map is the clip value).
    pub fn bake_points(
        &mut self,
        tracer: &mut RayTracer,
        grid: &ProbeGrid,
        linear: &[u32],
        words: Option<&[u32]>,
        maps: &GpuBuffer,
    ) -> Result<(), GpuError> {
        self.run(tracer, grid, linear, words, maps, false).map(drop)
    }

    /// Traces the bake's rays of each probe (as [`GiBaker::bake_points`]) and
    /// returns what they found; with `census` the maps are left alone, else they
    /// are reduced and nothing is returned.
    fn run(
        &mut self,
        tracer: &mut RayTracer,
        grid: &ProbeGrid,
        linear: &[u32],
        words: Option<&[u32]>,
        maps: &GpuBuffer,
        census: bool,
    ) -> Result<Vec<RayCensus>, GpuError> {
        let n = linear.len() as u32;
        if n == 0 {
            return Ok(Vec::new());
        }
        if maps.size() < u64::from(n) * OCT_TEXELS as u64 * 8 {
            return Err(GpuError::InvalidInput(format!("bake: {} bytes of maps for {n} probes", maps.size())));
        }
        let probes = tracer.gpu_mut().buffer_from("gi bake probes", linear)?;
        let offsets = words.map(|w| tracer.gpu_mut().buffer_from("gi bake offsets", w)).transpose()?;
        let push = self.prepare(tracer, grid, n, maps, &probes, offsets.as_ref().map_or(0, GpuBuffer::address))?;
        let (rays, hits) = self.scratch.as_ref().expect("sized by prepare");
        let mut found = Vec::new();
        // The census reads the rays as the CPU makes them: only their directions
        // and reach matter to it.
        let dirs = if census { bake_directions() } else { Vec::new() };
        let clip = grid.clip_distance();
        for first in (0..n).step_by(BAKE_BATCH_PROBES as usize) {
            let push = GiBakePush { first, count: BAKE_BATCH_PROBES.min(n - first), ..push };
            let download = tracer.submit_with_scene("kiln gi bake", |rec, scene, trace| {
                let buffers = [&probes, rays, hits, maps];
                self.record_rays(rec, scene, trace, &push, buffers, offsets.as_ref(), !census)?;
                let bytes = u64::from(push.count) * BAKE_RAYS as u64 * std::mem::size_of::<GpuHit>() as u64;
                census.then(|| rec.download(hits, 0, bytes)).transpose()
            })?;
            if let Some(download) = download {
                let hits: Vec<GpuHit> = download.to_vec();
                let rays: Vec<GpuRay> = dirs
                    .iter()
                    .map(|d| GpuRay { dir: (*d).into(), t_max: clip, mask: self.occluders, ..GpuRay::default() })
                    .collect();
                found.extend(hits.chunks_exact(BAKE_RAYS).map(|h| RayCensus::of(&rays, h)));
            }
        }
        tracer.gpu_mut().defer_drop(probes);
        if let Some(offsets) = offsets {
            tracer.gpu_mut().defer_drop(offsets);
        }
        Ok(found)
    }

    /// Bakes the probes at grid points `linear` from offset codes `start` under
    /// `rules` (`gi/relocate.rs`: relocated, re-traced while they move, classified)
    /// into `maps`, an inactive probe's map the clip value everywhere. The rays
    /// are traced on the device; each pass's hits come back for the census, and
    /// the relocation itself is the CPU reference's. Returns each probe's final
    /// codes and whether it is inactive.
    pub fn bake_relocated(
        &mut self,
        tracer: &mut RayTracer,
        grid: &ProbeGrid,
        linear: &[u32],
        start: &[[i32; 3]],
        rules: &ProbeRules,
        maps: &GpuBuffer,
    ) -> Result<Vec<([i32; 3], bool)>, GpuError> {
        assert_eq!(linear.len(), start.len(), "a start per probe");
        let spacing = grid.spacing;
        let mut codes = start.to_vec();
        let mut inactive = vec![false; linear.len()];
        if rules.relocate || rules.classify {
            let iterations = if rules.relocate { rules.iterations } else { 0 };
            let mut pending: Vec<usize> = (0..linear.len()).collect();
            for iteration in 0..=iterations {
                let list: Vec<u32> = pending.iter().map(|&i| linear[i]).collect();
                let words: Vec<u32> = pending.iter().map(|&i| pack_offset(codes[i])).collect();
                let found = self.run(tracer, grid, &list, Some(&words), maps, true)?;
                let mut moved = Vec::new();
                for (&i, census) in pending.iter().zip(&found) {
                    inactive[i] = rules.classify && census.inactive(rules);
                    if iteration < iterations {
                        let at = decode_offset(codes[i], spacing);
                        let next = encode_offset(relocate(census, at, spacing, rules), spacing);
                        if next != codes[i] {
                            codes[i] = next;
                            moved.push(i);
                        }
                    }
                }
                if moved.is_empty() {
                    break;
                }
                pending = moved;
            }
        }
        let words: Vec<u32> =
            codes.iter().zip(&inactive).map(|(&c, &off)| pack_offset(c) | if off { INACTIVE_BIT } else { 0 }).collect();
        self.bake_points(tracer, grid, linear, Some(&words), maps)?;
        Ok(codes.into_iter().zip(inactive).collect())
    }
}

/// Bit of a bake's offset word marking a probe inactive: its map is the clip value.
pub const INACTIVE_BIT: u32 = 1 << 31;

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
