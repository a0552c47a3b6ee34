//! The DDGI visibility bake on the GPU (`gi_visibility_rays.comp` → trace →
//! `gi_visibility_reduce.comp`), the kernels of `gi::update::{visibility_rays,
//! visibility_map}`; the maps it writes feed [`GiCompressor`](super::GiCompressor).
//! With relocation or classification, census passes come first (trace →
//! `gi_visibility_census.comp`, the kernel of `gi::relocate::RayCensus::of`):
//! a 48-byte record per probe comes back, and the CPU moves and classifies the
//! probes ([`Relocation`]) before the next pass.
//!
//! Probes go in batches of [`BAKE_BATCH_PROBES`] (1,024 rays each, so a batch is
//! 1M rays, the tracer's batch size), one submission per batch.

use super::buffer::{BufferMemory, GpuBuffer};
use super::error::GpuError;
use super::gi_compress::GpuVisibility;
use super::kernel::Kernel;
use super::layout::GiBakePush;
use super::ray_tracer::RayTracer;
use super::recorder::{Download, Recorder, Use};
use super::scene::GpuScene;
use super::shaders;
use super::trace::Tracer;
use crate::gi::relocate::{decode_offset, encode_offset, pack_offset, relocate, ProbeRules, RayCensus};
use crate::gi::update::{bake_directions, BAKE_RAYS};
use crate::gi::{ProbeGrid, ProbeVolume, OCT_TEXELS};
use crate::math::Vec3;

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
    census: Kernel,
    scratch: Option<(GpuBuffer, GpuBuffer)>,
}

impl GiBaker {
    pub fn new(tracer: &RayTracer) -> Result<GiBaker, GpuError> {
        Ok(GiBaker {
            occluders: u32::MAX,
            rays: tracer.gpu().kernel(&shaders::GI_VISIBILITY_RAYS)?,
            reduce: tracer.gpu().kernel(&shaders::GI_VISIBILITY_REDUCE)?,
            census: tracer.gpu().kernel(&shaders::GI_VISIBILITY_CENSUS)?,
            scratch: None,
        })
    }

    /// Embedded mode: records the bake of the probes at grid points `linear`
    /// (with offset `words`, as [`GiBaker::bake_points`]) into `maps` (all
    /// batches), then `after` (the compression, a read-back), into the engine's
    /// `cmd` for frame slot `slot`, with the scene's update when it changed. The
    /// probe list goes up inside the recording: nothing is submitted. With
    /// `census` the hits of each probe's rays are reduced to a census record
    /// ([`CENSUS_WORDS`] words) in `maps` instead of a map, and the records are
    /// read back (returned, for [`GiBaker::censuses`]).
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
        (maps, census): (&GpuBuffer, bool),
        cmd: ash::vk::CommandBuffer,
        slot: u32,
        after: impl FnOnce(&mut Recorder<'_>) -> Result<R, GpuError>,
    ) -> Result<(R, Option<Download>), GpuError> {
        let n = linear.len() as u32;
        if maps.size() < out_bytes(n, census) {
            return Err(GpuError::InvalidInput(format!("bake: {} bytes of output for {n} probes", maps.size())));
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
                        this.record_rays(rec, scene, trace, &push, buffers, offsets.as_ref(), census)?;
                    }
                    let records = census.then(|| rec.download(maps, 0, out_bytes(n, true))).transpose()?;
                    Ok((after(rec)?, records))
                })
            }
        });
        tracer.gpu_mut().defer_drop(probes);
        if let Some(offsets) = offsets {
            tracer.gpu_mut().defer_drop(offsets);
        }
        result
    }

    /// The census of each probe's bake rays from its record (a census pass's
    /// read-back, [`CENSUS_WORDS`] per probe, `gi_visibility_census.comp`): what
    /// [`RayCensus::of`] makes of the rays and hits, to the bit, the directions
    /// being the CPU's own.
    pub fn censuses(records: &[u32]) -> Vec<RayCensus> {
        let dirs = bake_directions();
        let dir = |ray: u32| dirs.get(ray as usize).copied();
        records
            .chunks_exact(CENSUS_WORDS)
            .map(|w| {
                let t = |k: usize| f32::from_bits(w[5 + k]);
                let normal = Vec3::new(f32::from_bits(w[8]), f32::from_bits(w[9]), f32::from_bits(w[10]));
                RayCensus {
                    rays: BAKE_RAYS as u32,
                    backfaces: w[0],
                    fronts: w[1],
                    closest_back: dir(w[2]).map(|d| (t(0) * d.dot(normal).max(0.0), normal)),
                    closest_front: dir(w[3]).map_or((f32::INFINITY, Vec3::ZERO), |d| (t(1), d)),
                    farthest_front: dir(w[4]).map_or((f32::NEG_INFINITY, Vec3::ZERO), |d| (t(2), d)),
                }
            })
            .collect()
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

    /// One batch: rays and trace, then the reduce into the maps (into census
    /// records with `census`).
    #[allow(clippy::too_many_arguments)]
    fn record_rays(
        &self,
        rec: &mut Recorder<'_>,
        scene: &GpuScene,
        trace: &Tracer,
        push: &GiBakePush,
        [probes, rays, hits, maps]: [&GpuBuffer; 4],
        offsets: Option<&GpuBuffer>,
        census: bool,
    ) -> Result<(), GpuError> {
        let ray_count = push.count * BAKE_RAYS as u32;
        rec.pass("gi visibility bake", |rec| {
            // One push block for both kernels: each declares the buffers it is
            // handed but does not touch as reads.
            let mut uses = vec![Use::read(probes), Use::read(hits), Use::read(maps), Use::write(rays)];
            uses.extend(offsets.map(Use::read));
            rec.dispatch_threads(&self.rays, push, ray_count, &uses)?;
            trace.record(rec, scene, rays, hits, ray_count, false)?;
            let mut uses = vec![Use::read(probes), Use::read(rays), Use::read(hits), Use::write(maps)];
            uses.extend(offsets.map(Use::read));
            if census {
                rec.dispatch(&self.census, push, [push.count, 1, 1], &uses)
            } else {
                rec.dispatch_threads(&self.reduce, push, push.count * OCT_TEXELS as u32, &uses)
            }
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
        if !census && maps.size() < out_bytes(n, false) {
            return Err(GpuError::InvalidInput(format!("bake: {} bytes of maps for {n} probes", maps.size())));
        }
        let records = census.then(|| tracer.gpu().buffer("gi census", out_bytes(n, true), BufferMemory::Device));
        let records = records.transpose()?;
        let out = records.as_ref().unwrap_or(maps);
        let probes = tracer.gpu_mut().buffer_from("gi bake probes", linear)?;
        let offsets = words.map(|w| tracer.gpu_mut().buffer_from("gi bake offsets", w)).transpose()?;
        let push = self.prepare(tracer, grid, n, out, &probes, offsets.as_ref().map_or(0, GpuBuffer::address))?;
        let (rays, hits) = self.scratch.as_ref().expect("sized by prepare");
        let mut result = Ok(());
        for first in (0..n).step_by(BAKE_BATCH_PROBES as usize) {
            let push = GiBakePush { first, count: BAKE_BATCH_PROBES.min(n - first), ..push };
            result = tracer.submit_with_scene("kiln gi bake", |rec, scene, trace| {
                self.record_rays(rec, scene, trace, &push, [&probes, rays, hits, out], offsets.as_ref(), census)
            });
            if result.is_err() {
                break;
            }
        }
        let found = match (&records, result) {
            (Some(records), Ok(())) => {
                tracer.gpu_mut().read::<u32>(records, n as usize * CENSUS_WORDS).map(|w| Self::censuses(&w))
            }
            (None, Ok(())) => Ok(Vec::new()),
            (_, Err(err)) => Err(err),
        };
        tracer.gpu_mut().defer_drop(probes);
        for buffer in offsets.into_iter().chain(records) {
            tracer.gpu_mut().defer_drop(buffer);
        }
        found
    }

    /// The census of the bake rays of the probes at grid points `linear` (from
    /// offset `words`), reduced on the device (`gi_visibility_census.comp`).
    pub fn census(
        &mut self,
        tracer: &mut RayTracer,
        grid: &ProbeGrid,
        linear: &[u32],
        words: Option<&[u32]>,
    ) -> Result<Vec<RayCensus>, GpuError> {
        let unused = tracer.gpu().buffer("gi census maps", 4, BufferMemory::Device)?;
        let found = self.run(tracer, grid, linear, words, &unused, true);
        tracer.gpu_mut().defer_drop(unused);
        found
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
        let mut relocation = Relocation::new(start, rules);
        while !relocation.pending.is_empty() {
            let (list, words) = relocation.pending_points(linear);
            let found = self.run(tracer, grid, &list, Some(&words), maps, true)?;
            relocation.step(&found, grid.spacing, rules);
        }
        self.bake_points(tracer, grid, linear, Some(&relocation.words()), maps)?;
        Ok(relocation.codes.into_iter().zip(relocation.inactive).collect())
    }
}

/// Words of a probe's census record (`gi_visibility_census.comp`): back and front
/// faces, the rays of the closest back, closest front and farthest front face,
/// their distances, the closest back face's normal, a pad.
pub const CENSUS_WORDS: usize = 12;

/// Bytes of the bake's output for `probes` probes: census records or maps.
fn out_bytes(probes: u32, census: bool) -> u64 {
    u64::from(probes) * if census { CENSUS_WORDS as u64 * 4 } else { OCT_TEXELS as u64 * 8 }
}

/// Where the relocation and classification of a bake's probes stand between
/// census passes (`gi/relocate.rs`): each pass traces the probes still moving,
/// classifies them and moves them; after the last, the bake traces every probe
/// once more from where it ended.
#[derive(Clone, Debug)]
pub struct Relocation {
    /// Each probe's offset code.
    pub codes: Vec<[i32; 3]>,
    /// Each probe's class: inactive probes bake to the clip value.
    pub inactive: Vec<bool>,
    /// The probes (indices into the bake's list) the next census pass traces;
    /// none once the relocation is done (at once under rules that neither
    /// relocate nor classify).
    pub pending: Vec<usize>,
    iteration: u32,
    iterations: u32,
}

impl Relocation {
    pub fn new(start: &[[i32; 3]], rules: &ProbeRules) -> Relocation {
        let census = rules.relocate || rules.classify;
        Relocation {
            codes: start.to_vec(),
            inactive: vec![false; start.len()],
            pending: if census { (0..start.len()).collect() } else { Vec::new() },
            iteration: 0,
            iterations: if rules.relocate { rules.iterations } else { 0 },
        }
    }

    /// The grid points and offset words of the pending probes.
    pub fn pending_points(&self, linear: &[u32]) -> (Vec<u32>, Vec<u32>) {
        let list = self.pending.iter().map(|&i| linear[i]).collect();
        let words = self.pending.iter().map(|&i| pack_offset(self.codes[i])).collect();
        (list, words)
    }

    /// Takes the census of the pending probes (in their order): classifies
    /// them, and before the last pass moves them; the probes that moved are
    /// traced again.
    pub fn step(&mut self, found: &[RayCensus], spacing: f32, rules: &ProbeRules) {
        let mut moved = Vec::new();
        for (&i, census) in self.pending.iter().zip(found) {
            self.inactive[i] = rules.classify && census.inactive(rules);
            if self.iteration < self.iterations {
                let at = decode_offset(self.codes[i], spacing);
                let next = encode_offset(relocate(census, at, spacing, rules), spacing);
                if next != self.codes[i] {
                    self.codes[i] = next;
                    moved.push(i);
                }
            }
        }
        self.iteration += 1;
        self.pending = moved;
    }

    /// The final bake's offset word of each probe ([`INACTIVE_BIT`] for inactive ones).
    pub fn words(&self) -> Vec<u32> {
        self.codes
            .iter()
            .zip(&self.inactive)
            .map(|(&c, &off)| pack_offset(c) | if off { INACTIVE_BIT } else { 0 })
            .collect()
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
