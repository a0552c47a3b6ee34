//! A DDGI volume on a tracer's device: what an engine drives once per frame.
//!
//! ```text
//!  GiVolume::new     probe placement around the tracer's triangles (or dense)
//!  GiVolume::bake    visibility: bake (gi_bake.rs) + compression (gi_compress.rs)
//!                    on the GPU, result copied back for CPU sampling
//!  GiVolume::refresh visibility re-baked where geometry changed, recompressed
//!                    into the standing dictionary (gi/refresh.rs)
//!  GiVolume::scroll_by  a dense volume moved by whole probes, the entering
//!                    planes baked (gi/scroll.rs)
//!  GiVolume::update  one frame: the next `probes_per_frame` live probes, round
//!                    robin, through the update passes (gi_update.rs)
//!  record_*          embedded mode: the same recorded into an engine's command
//!                    buffers; bake, refresh and scroll in two halves around a
//!                    read-back
//!  GiVolume::sample  irradiance at surface points, on the CPU copy
//! ```
//!
//! The probe data lives on the device; the CPU copy of the irradiance is refreshed
//! (16 bytes per live probe) only when a sample or the statistics need it after an
//! update. Dead probes (a bake found nothing within their clip distance) keep no
//! irradiance, are not updated and are not sampled (`gi/field.rs`).

use super::buffer::{BufferMemory, GpuBuffer};
use super::error::GpuError;
use super::gi_bake::GiBaker;
use super::gi_compress::{GiCompressor, GpuVisibility, MAX_COMPRESS_BATCH};
use super::gi_recorded::{release, Job, Stage};
use super::gi_update::{sample_params, GiUpdater, GpuProbeField, InitialUpload, Recording, MAX_RAYS_PER_PROBE};
use super::layout::GiUpdateParams;
use super::ray_tracer::{BufferView, InstanceId, RayTracer};
use super::recorder::{Download, Recorder};
use crate::gi::compress::{CompressParams, ProbeOrder};
use crate::gi::refresh::{fold_probes, probes_near, refresh_reach, RefreshReport};
use crate::gi::relocate::{ProbeOffsets, ProbeRules};
use crate::gi::scroll::{advance, centre_shift, unlight, ScrollReport};
use crate::gi::update::{GiLighting, UpdateParams};
use crate::gi::{ProbeField, ProbeGrid, ProbeVolume, SampleParams, VisibilityMap, OCT_TEXELS};
use crate::math::Vec3;

/// Figures of a volume, for tests, benches and the C API.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct GiStats {
    pub grid_points: u64,
    pub probe_count: u32,
    /// Probes whose visibility map is all clip value (no block), after a bake: they
    /// keep no irradiance and are neither updated nor sampled.
    pub dead_probes: u32,
    /// Probes off their grid points (relocated).
    pub moved_probes: u32,
    /// Distinct visibility blocks after compression.
    pub blocks: u32,
    /// Bytes of the probe data: placement mask, irradiance (16 per live probe),
    /// compressed visibility. The device holds these and nothing else per probe.
    pub bytes: u64,
    /// Bytes the visibility maps of every probe take uncompressed (R16G16, 1 KiB each).
    pub visibility_bytes_uncompressed: u64,
    /// Bytes of the compressed visibility (live mask, signature numbers and
    /// entries, and blocks).
    pub visibility_bytes: u64,
    /// Updates run so far.
    pub frames: u32,
    /// Probes the last update refreshed.
    pub last_update_probes: u32,
    /// Whether the visibility was baked.
    pub baked: bool,
}

/// The device data an engine's shader samples irradiance from
/// (`kiln_ddgi.glsl`, [`GiVolume::gpu_buffers`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GiBuffers {
    /// One `GiUpdateParams` (`KilnGiUpdateParams`): the grid, the sampling bias
    /// and the addresses of everything below; `kiln_gi_irradiance` takes its address.
    pub params: BufferView,
    /// Packed SH per live probe.
    pub irradiance: BufferView,
    /// The compressed visibility's block table.
    pub visibility_blocks: BufferView,
    /// Changes whenever any buffer the parameters point at is made anew (a bake)
    /// or the parameters change.
    pub version: u64,
}

/// Most probes in one volume: the bake holds every probe's uncompressed map (2 KiB
/// of f32 pairs) on the device while it runs, 1 GiB at this count.
pub const MAX_VOLUME_PROBES: u32 = 1 << 19;

/// A probe volume, its device data and the update state.
pub struct GiVolume {
    pub(super) field: ProbeField,
    pub(crate) device: GpuProbeField,
    pub(super) updater: GiUpdater,
    pub(super) baker: GiBaker,
    pub(super) compressor: GiCompressor,
    pub lighting: GiLighting,
    pub params: UpdateParams,
    pub compress: CompressParams,
    /// How bakes and refreshes place and classify probes (`gi/relocate.rs`); on
    /// their grid points by default. A bake recorded into an engine's command
    /// buffers ([`GiVolume::record_bake`]) keeps probes where they are: the
    /// relocation reads each pass's hits back before the next.
    pub rules: ProbeRules,
    /// Probes updated per [`GiVolume::update`] (capped at the probe count and at
    /// what one update traces).
    pub probes_per_frame: u32,
    cursor: u32,
    frame: u32,
    /// The probes of the last update (kept so an update allocates nothing).
    probes: Vec<u32>,
    /// Probes that entered with a scroll and were not updated yet: the next
    /// updates take them before the round robin goes on.
    pub(super) entered: Vec<u32>,
    /// Whether the probes of the update in progress came from `entered`.
    serving_entered: bool,
    last_update_probes: u32,
    irradiance_stale: bool,
    pub(super) baked: bool,
    /// The sampling parameters on the device and what they hold
    /// ([`GiVolume::gpu_buffers`]), made on first use.
    gpu_params: Option<(GpuBuffer, GiUpdateParams)>,
    gpu_version: u64,
    /// The irradiance read-back of the last update recorded into an engine's
    /// command buffer ([`GiVolume::record_update`]).
    recorded_irradiance: Option<Download>,
    /// A bake, refresh or scroll recorded into an engine's command buffers and
    /// not finished: the job and what its last recording reads back
    /// (`gi_recorded.rs`).
    pub(super) recorded: Option<(Job, Stage)>,
    /// Embedded mode: the field's data until a recording uploaded it.
    pub(super) initial: Option<InitialUpload>,
    /// Albedo given by instance handle ([`GiVolume::set_instance_albedo`]), by the
    /// handle's slot; laid out in packed order into `lighting.albedo` by each update.
    instance_albedo: Vec<Option<(InstanceId, [f32; 3])>>,
}

/// The linear grid index of each of `probes`' grid points (through the ring of
/// a scrolled volume).
pub(super) fn grid_points(field: &ProbeField, probes: &[u32]) -> Vec<u32> {
    let grid = &field.volume.grid;
    probes.iter().map(|&p| grid.linear(field.steps_of_slot(field.volume.probe_coords(p as usize))) as u32).collect()
}

/// Folds the maps of the probes that entered a scroll into `field` (advanced
/// already) and leaves them unlit.
pub(super) fn enter(
    field: &mut ProbeField,
    probes: &[u32],
    codes: &[[i32; 3]],
    maps: &[VisibilityMap],
    compress: &CompressParams,
) -> RefreshReport {
    let report = fold_probes(field, probes, codes, maps, compress);
    unlight(field, probes);
    report
}

impl GiVolume {
    /// Probes at the points of `grid` within `dilation` of a triangle of the
    /// tracer's scene as it is now, or at every point when `dilation` is `None`.
    /// Unlit and unbaked (every probe sees nothing) until baked and updated.
    pub fn new(tracer: &mut RayTracer, grid: ProbeGrid, dilation: Option<f32>) -> Result<GiVolume, GpuError> {
        let volume = match dilation {
            Some(d) if d.is_finite() && d >= 0.0 => ProbeVolume::around(grid, &tracer.scene().world_triangles(), d),
            Some(d) => return Err(GpuError::InvalidInput(format!("dilation {d} is not a finite value >= 0"))),
            None => ProbeVolume::dense(grid),
        };
        if volume.probe_count() > MAX_VOLUME_PROBES as usize {
            return Err(GpuError::InvalidInput(format!(
                "{} probes exceed the {MAX_VOLUME_PROBES} of one volume: use a larger spacing, a smaller dilation or several volumes",
                volume.probe_count()
            )));
        }
        let field = ProbeField::new(volume);
        // On an engine's device the data goes up inside the first recording.
        let (device, initial) = if tracer.gpu().is_embedded() {
            let (device, initial) = GpuProbeField::sized(tracer.gpu_mut(), &field)?;
            (device, Some(initial))
        } else {
            (GpuProbeField::new(tracer.gpu_mut(), &field)?, None)
        };
        Ok(GiVolume {
            device,
            updater: GiUpdater::new(tracer)?,
            baker: GiBaker::new(tracer)?,
            compressor: GiCompressor::new(tracer.gpu())?,
            lighting: GiLighting::default(),
            params: UpdateParams::for_spacing(grid.spacing),
            compress: CompressParams::default(),
            rules: ProbeRules::FIXED,
            probes_per_frame: 1024,
            cursor: 0,
            probes: Vec::new(),
            entered: Vec::new(),
            serving_entered: false,
            frame: 0,
            last_update_probes: 0,
            irradiance_stale: false,
            baked: false,
            gpu_params: None,
            gpu_version: 0,
            recorded_irradiance: None,
            recorded: None,
            initial,
            field,
            instance_albedo: Vec::new(),
        })
    }

    /// Sets the diffuse albedo of instances of `tracer` by handle, each channel in
    /// [0, 1]: it follows the instance, wherever removals of others move it in the
    /// packed order, until the instance is removed. Instances without one use
    /// `lighting.default_albedo`. Every entry is checked first (a stale handle or a
    /// bad colour changes nothing); an empty list clears every instance's albedo.
    pub fn set_instance_albedo(
        &mut self,
        tracer: &RayTracer,
        albedo: &[(InstanceId, [f32; 3])],
    ) -> Result<(), GpuError> {
        for (i, (id, colour)) in albedo.iter().enumerate() {
            if tracer.instance_index(*id).is_none() {
                return Err(GpuError::InvalidInput(format!("albedo[{i}]: instance {id:?} is stale or unknown")));
            }
            if !colour.iter().all(|c| c.is_finite() && (0.0..=1.0).contains(c)) {
                return Err(GpuError::InvalidInput(format!(
                    "albedo[{i}] is {colour:?}: every channel must be finite and in [0, 1]"
                )));
            }
        }
        if albedo.is_empty() {
            self.instance_albedo.clear();
            self.lighting.albedo.clear();
        }
        for &(id, colour) in albedo {
            let slot = id.slot as usize;
            if self.instance_albedo.len() <= slot {
                self.instance_albedo.resize(slot + 1, None);
            }
            self.instance_albedo[slot] = Some((id, colour));
        }
        Ok(())
    }

    /// Lays the albedo given by handle out in the tracer's packed instance order,
    /// as the update reads it (`lighting.albedo`; left alone when none was given).
    pub(crate) fn lay_out_albedo(&mut self, tracer: &RayTracer) {
        if self.instance_albedo.is_empty() {
            return;
        }
        let (table, default) = (&self.instance_albedo, self.lighting.default_albedo);
        let of = |packed: u32| {
            let id = tracer.instance_at(packed)?;
            table.get(id.slot as usize).copied().flatten().filter(|(given, _)| *given == id).map(|(_, c)| c)
        };
        self.lighting.albedo.clear();
        self.lighting.albedo.extend((0..tracer.instance_count()).map(|p| of(p).unwrap_or(default)));
    }

    /// Instance mask bits of the geometry that occludes the probes' visibility
    /// (the bake's rays carry it; all bits by default). An instance whose mask
    /// shares no bit with it (a moving body marked dynamic) is lit and lights
    /// others through the update, but casts no visibility, so moving it needs no
    /// [`GiVolume::refresh`]. Takes effect at the next bake or refresh.
    pub fn set_occluders(&mut self, mask: u32) {
        self.rules.occluders = mask;
    }

    pub fn occluders(&self) -> u32 {
        self.rules.occluders
    }

    pub fn probe_count(&self) -> u32 {
        self.device.probe_count
    }

    pub fn grid(&self) -> ProbeGrid {
        self.device.grid
    }

    /// Bakes and compresses every probe's visibility against the tracer's scene
    /// (call again when static geometry changed).
    pub fn bake(&mut self, tracer: &mut RayTracer) -> Result<(), GpuError> {
        if let Some((_, stage)) = self.recorded.take() {
            release(tracer, stage);
        }
        self.flush_initial(tracer)?;
        let n = self.probe_count();
        if n == 0 {
            self.baked = true;
            return Ok(());
        }
        let order = ProbeOrder::swizzled(n, MAX_COMPRESS_BATCH as u32);
        // The maps and the compressor's buffers live for this call only: the field
        // keeps the compact result.
        let work = GpuVisibility::new(tracer.gpu(), n)?;
        let (field, volume) = (&self.field, &self.field.volume);
        let linear: Vec<u32> =
            (0..n as usize).map(|p| volume.grid.linear(field.steps_of_slot(volume.probe_coords(p))) as u32).collect();
        let start = self.field.offsets.codes(n as usize);
        self.baker.occluders = self.rules.occluders;
        let places = self.baker.bake_relocated(tracer, &volume.grid, &linear, &start, &self.rules, &work.maps);
        let places = match places {
            Ok(places) => places,
            Err(err) => {
                tracer.gpu_mut().defer_drop(work);
                return Err(err);
            }
        };
        let (compressor, params) = (&self.compressor, &self.compress);
        tracer.gpu_mut().submit("kiln gi compress", |rec| {
            rec.pass("gi compress", |rec| compressor.record(rec, &work, &order, params))
        })?;
        let visibility = work.read(tracer.gpu_mut())?;
        tracer.gpu_mut().defer_drop(work);
        // The irradiance of probes live before and after is kept, moved to their
        // new ranks.
        let mut field = self.field(tracer)?.clone();
        field.set_visibility(visibility);
        field.offsets = ProbeOffsets::from_codes(&places.iter().map(|(c, _)| *c).collect::<Vec<_>>());
        self.device.upload(tracer.gpu_mut(), &field.visibility, &field.irradiance)?;
        self.device.upload_offsets(tracer.gpu_mut(), &field.offsets)?;
        self.field = field;
        self.baked = true;
        Ok(())
    }

    /// Re-bakes, on the GPU, the visibility of the probes that could see into the
    /// box `[lo, hi]`, where static geometry changed (a terrain edit, a door, an
    /// occluding instance moved), and recompresses it into the volume's dictionary
    /// (`gi/refresh.rs`): no other probe is traced or matched again, blocks no
    /// probe reads any more are reclaimed, and the irradiance of probes live before
    /// and after is kept. Probes stay on their grid points. The volume must be
    /// baked; a box that is not finite or has `lo > hi` is refused.
    pub fn refresh(&mut self, tracer: &mut RayTracer, lo: Vec3, hi: Vec3) -> Result<RefreshReport, GpuError> {
        if !(lo.is_finite() && hi.is_finite()) || hi.cmplt(lo).any() {
            return Err(GpuError::InvalidInput(format!(
                "refresh: the box {lo}..{hi} must be finite with lo <= hi on every axis"
            )));
        }
        if !self.baked {
            return Err(GpuError::InvalidInput("refresh: the volume is not baked yet: bake it first".into()));
        }
        let grid = self.field.volume.grid;
        let probes = probes_near(&self.field, lo, hi, refresh_reach(&grid, &self.rules));
        if probes.is_empty() {
            return Ok(RefreshReport::default());
        }
        let linear = grid_points(&self.field, &probes);
        let start: Vec<[i32; 3]> = probes.iter().map(|&p| self.field.offsets.code(p as usize)).collect();
        let baked = self.bake_maps(tracer, &grid, &linear, &start)?;
        let codes: Vec<[i32; 3]> = baked.iter().map(|(c, _)| *c).collect();
        let maps: Vec<VisibilityMap> = baked.into_iter().map(|(_, m)| m).collect();
        let mut field = self.field(tracer)?.clone();
        let report = fold_probes(&mut field, &probes, &codes, &maps, &self.compress);
        self.device.upload(tracer.gpu_mut(), &field.visibility, &field.irradiance)?;
        self.device.upload_offsets(tracer.gpu_mut(), &field.offsets)?;
        self.field = field;
        Ok(report)
    }

    /// Scrolls a volume with a probe at every grid point (created without a
    /// dilation) `shift` whole probes along each axis (`gi/scroll.rs`): the grid's
    /// origin moves, the probes of the planes that enter take the slots of those
    /// that leave (modulo addressing on the CPU and the device), and only they are
    /// baked, on the GPU, and recompressed into the dictionary; they start unlit
    /// and the next updates take them first. Every other probe keeps its data, so
    /// a point inside the volume before and after samples the same irradiance.
    /// The volume must be baked.
    pub fn scroll_by(&mut self, tracer: &mut RayTracer, shift: [i32; 3]) -> Result<ScrollReport, GpuError> {
        self.check_scroll()?;
        let mut field = self.field(tracer)?.clone();
        let (probes, planes) = advance(&mut field, shift);
        let mut report = ScrollReport { shift, planes, ..ScrollReport::default() };
        if probes.is_empty() {
            return Ok(report);
        }
        let grid = field.volume.grid;
        let linear = grid_points(&field, &probes);
        let maps = self.bake_maps(tracer, &grid, &linear, &vec![[0; 3]; probes.len()])?;
        let codes: Vec<[i32; 3]> = maps.iter().map(|(c, _)| *c).collect();
        let maps: Vec<VisibilityMap> = maps.into_iter().map(|(_, m)| m).collect();
        report.bake = enter(&mut field, &probes, &codes, &maps, &self.compress);
        self.device.upload(tracer.gpu_mut(), &field.visibility, &field.irradiance)?;
        self.device.upload_offsets(tracer.gpu_mut(), &field.offsets)?;
        self.scrolled_to(field, &probes);
        report.probes = probes;
        Ok(report)
    }

    /// Only a baked volume with a probe at every grid point scrolls.
    pub(super) fn check_scroll(&self) -> Result<(), GpuError> {
        if self.field.volume.probe_count() != self.field.volume.grid.point_count() {
            return Err(GpuError::InvalidInput(
                "scroll: only a volume with a probe at every grid point (created without a dilation) scrolls".into(),
            ));
        }
        if !self.baked {
            return Err(GpuError::InvalidInput("scroll: the volume is not baked yet: bake it first".into()));
        }
        Ok(())
    }

    /// Takes `field` (scrolled, its entered probes folded in by [`enter`]) as the
    /// volume's: the device's grid and ring follow, and the next updates take the
    /// live probes that entered first.
    pub(super) fn scrolled_to(&mut self, field: ProbeField, probes: &[u32]) {
        self.device.grid = field.volume.grid;
        self.device.ring = field.ring;
        self.entered = probes.iter().copied().filter(|&p| field.is_active(p as usize)).collect();
        self.field = field;
    }

    /// [`GiVolume::scroll_by`] the whole probes that put `centre` in the volume's
    /// middle cell.
    pub fn scroll_to(&mut self, tracer: &mut RayTracer, centre: Vec3) -> Result<ScrollReport, GpuError> {
        if !centre.is_finite() {
            return Err(GpuError::InvalidInput(format!("scroll: the centre {centre} is not finite")));
        }
        let shift = centre_shift(&self.field, centre);
        self.scroll_by(tracer, shift)
    }

    /// Bakes the probes at grid points `linear` (from `start` offset codes, under
    /// the volume's rules) on the GPU and reads their maps back, each with its
    /// final codes.
    fn bake_maps(
        &mut self,
        tracer: &mut RayTracer,
        grid: &ProbeGrid,
        linear: &[u32],
        start: &[[i32; 3]],
    ) -> Result<Vec<([i32; 3], VisibilityMap)>, GpuError> {
        let bytes = linear.len() as u64 * OCT_TEXELS as u64 * 8;
        let buffer = tracer.gpu().buffer("gi bake maps", bytes, BufferMemory::Device)?;
        self.baker.occluders = self.rules.occluders;
        let places = self.baker.bake_relocated(tracer, grid, linear, start, &self.rules, &buffer);
        let texels =
            places.and_then(|p| Ok((p, tracer.gpu_mut().read::<[f32; 2]>(&buffer, linear.len() * OCT_TEXELS)?)));
        tracer.gpu_mut().defer_drop(buffer);
        let (places, texels) = texels?;
        Ok(places
            .into_iter()
            .zip(texels.chunks_exact(OCT_TEXELS))
            .map(|((code, _), c)| (code, VisibilityMap(<[[f32; 2]; OCT_TEXELS]>::try_from(c).expect("a map"))))
            .collect())
    }

    /// One frame's update: the next [`GiVolume::probes_per_frame`] live probes.
    /// Returns how many were updated.
    pub fn update(&mut self, tracer: &mut RayTracer) -> Result<u32, GpuError> {
        let count = self.update_async(tracer)?;
        tracer.finish()?;
        Ok(count)
    }

    /// As [`GiVolume::update`], but returns once the work (the scene's update when it
    /// changed, then the probes') is submitted; [`RayTracer::finish`] completes it.
    /// Reading the irradiance ([`GiVolume::field`], [`GiVolume::sample`]) waits.
    pub fn update_async(&mut self, tracer: &mut RayTracer) -> Result<u32, GpuError> {
        self.flush_initial(tracer)?;
        let Some(last) = self.next_probes() else { return Ok(0) };
        self.lay_out_albedo(tracer);
        self.updater.update_async(tracer, &self.device, &self.lighting, &self.params, self.frame, &self.probes)?;
        self.recorded_irradiance = None;
        Ok(self.after_update(last))
    }

    /// Embedded mode: as [`GiVolume::update`], but recorded into the engine's `cmd`
    /// for frame slot `slot` (with the scene's update when it changed, and a
    /// read-back of the irradiance): nothing is submitted. [`GiVolume::field`] and
    /// [`GiVolume::sample`] read that irradiance, so call them only once the
    /// engine's submission completed, and before the slot is recorded again.
    ///
    /// # Safety
    /// As [`super::Gpu::record_into`].
    pub unsafe fn record_update(
        &mut self,
        tracer: &mut RayTracer,
        cmd: ash::vk::CommandBuffer,
        slot: u32,
    ) -> Result<u32, GpuError> {
        tracer.check_slot("record_update", "update", slot)?;
        let Some(last) = self.next_probes() else {
            // SAFETY: forwarded from the caller.
            unsafe { self.record_initial(tracer, cmd, slot) }?;
            return Ok(0);
        };
        self.lay_out_albedo(tracer);
        let (updater, device, probes, initial) = (&mut self.updater, &self.device, &self.probes, &self.initial);
        let prelude = |rec: &mut Recorder<'_>| initial.as_ref().map_or(Ok(()), |i| i.record(rec, device));
        let into = Recording { cmd, slot, prelude: &prelude };
        // SAFETY: forwarded from the caller.
        let download =
            unsafe { updater.record_update(tracer, device, &self.lighting, &self.params, self.frame, probes, into) }?;
        self.initial = None;
        self.recorded_irradiance = download;
        Ok(self.after_update(last))
    }

    /// Whether the volume's data is on the device (or recorded to be): on an
    /// engine's device, only after a recorded bake or update.
    pub fn on_device(&self) -> bool {
        self.initial.is_none()
    }

    /// Records the field's first upload alone, if no recording took it yet.
    ///
    /// # Safety
    /// As [`super::Gpu::record_into`].
    pub(super) unsafe fn record_initial(
        &mut self,
        tracer: &mut RayTracer,
        cmd: ash::vk::CommandBuffer,
        slot: u32,
    ) -> Result<(), GpuError> {
        if let Some(initial) = &self.initial {
            let device = &self.device;
            // SAFETY: forwarded from the caller.
            unsafe { tracer.gpu_mut().record_into(cmd, slot, "kiln gi upload", |rec| initial.record(rec, device)) }?;
            self.initial = None;
        }
        Ok(())
    }

    /// Submits the field's first upload if no recording took it yet (an engine
    /// that calls the submitting functions on its device).
    fn flush_initial(&mut self, tracer: &mut RayTracer) -> Result<(), GpuError> {
        if let Some(initial) = &self.initial {
            let device = &self.device;
            tracer.gpu_mut().submit("kiln gi upload", |rec| initial.record(rec, device))?;
            self.initial = None;
        }
        Ok(())
    }

    /// Picks the next live probes of an update into `self.probes`; `None` when there
    /// are none, else the last of them.
    fn next_probes(&mut self) -> Option<u32> {
        let rays = self.params.rays_per_probe.clamp(1, MAX_RAYS_PER_PROBE);
        let count = self.probes_per_frame.min(GiUpdater::max_probes_per_update(rays));
        self.serving_entered = !self.entered.is_empty();
        if self.serving_entered {
            let take = self.entered.len().min(count as usize);
            self.probes.clear();
            self.probes.extend(self.entered.drain(..take));
            return self.probes.last().copied();
        }
        self.field.live_round_robin_into(self.cursor, count, &mut self.probes);
        let last = self.probes.last().copied();
        if last.is_none() {
            self.last_update_probes = 0;
        }
        last
    }

    /// Advances the round robin past `last`; returns the probes updated.
    fn after_update(&mut self, last: u32) -> u32 {
        if !self.serving_entered {
            self.cursor = (last + 1) % self.probe_count();
        }
        self.frame = self.frame.wrapping_add(1);
        self.last_update_probes = self.probes.len() as u32;
        self.irradiance_stale = true;
        self.last_update_probes
    }

    /// The probe field with the device's latest irradiance.
    pub fn field(&mut self, tracer: &mut RayTracer) -> Result<&ProbeField, GpuError> {
        if self.irradiance_stale {
            self.field.irradiance = match self.recorded_irradiance.take() {
                // Recorded into an engine's command buffer, which completed.
                Some(download) => download.to_vec(),
                None => {
                    tracer.finish()?;
                    self.device.read_irradiance(tracer.gpu_mut())?
                }
            };
            self.irradiance_stale = false;
        }
        Ok(&self.field)
    }

    /// Irradiance at each surface point (unit normal, unit direction toward the eye).
    pub fn sample(
        &mut self,
        tracer: &mut RayTracer,
        points: &[(Vec3, Vec3, Vec3)],
        params: &SampleParams,
    ) -> Result<Vec<[f32; 3]>, GpuError> {
        let field = self.field(tracer)?;
        Ok(points.iter().map(|&(p, n, v)| field.sample(p, n, v, params)).collect())
    }

    /// The device data an engine's shaders sample irradiance from: the parameters
    /// block (written anew, and the version bumped, when the field's buffers or
    /// the sampling bias changed; host-visible, so nothing is submitted), the
    /// irradiance and the visibility blocks.
    pub fn gpu_buffers(&mut self, tracer: &mut RayTracer) -> Result<GiBuffers, GpuError> {
        if self.initial.is_some() {
            return Err(GpuError::InvalidInput(
                "gpu_buffers: the volume's data is not on the device yet: record a bake or an update first".into(),
            ));
        }
        let want = sample_params(&self.device, self.params.sample.bias);
        let fresh =
            self.gpu_params.as_ref().is_some_and(|(_, had)| bytemuck::bytes_of(had) == bytemuck::bytes_of(&want));
        if !fresh {
            // 272 bytes every sampling invocation reads: host-visible and written
            // here, so no submission is needed (on an engine's device either). A
            // new buffer each time, as a frame in flight may read the old one.
            let mut buffer = tracer.gpu().buffer(
                "gi sample params",
                std::mem::size_of::<GiUpdateParams>() as u64,
                BufferMemory::Upload,
            )?;
            let Some(mapped) = buffer.mapped_mut() else {
                return Err(GpuError::InvalidInput("gi sample params: the buffer is not host-visible".into()));
            };
            mapped.copy_from_slice(bytemuck::bytes_of(&want));
            if let Some((old, _)) = self.gpu_params.replace((buffer, want)) {
                tracer.gpu_mut().defer_drop(old);
            }
            self.gpu_version += 1;
        }
        let view = |b: &GpuBuffer| BufferView { buffer: b.raw(), size: b.size(), address: b.address() };
        let (params, _) = self.gpu_params.as_ref().expect("made above");
        Ok(GiBuffers {
            params: view(params),
            irradiance: view(&self.device.irradiance),
            visibility_blocks: view(&self.device.visibility.blocks),
            version: self.gpu_version,
        })
    }

    pub fn stats(&self) -> GiStats {
        let f = &self.field;
        let n = self.probe_count();
        GiStats {
            grid_points: f.volume.grid.point_count() as u64,
            probe_count: n,
            dead_probes: f.visibility.dead_count() as u32,
            moved_probes: f.offsets.moved_count() as u32,
            blocks: f.visibility.blocks.len() as u32,
            bytes: f.bytes() as u64,
            visibility_bytes_uncompressed: u64::from(n) * OCT_TEXELS as u64 * 4,
            visibility_bytes: f.visibility.bytes() as u64,
            frames: self.frame,
            last_update_probes: self.last_update_probes,
            baked: self.baked,
        }
    }
}
