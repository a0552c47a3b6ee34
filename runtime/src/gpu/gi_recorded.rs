//! Embedded mode for probe volumes: the bake, refresh and scroll of a
//! [`GiVolume`] recorded into an engine's command buffers, nothing submitted.
//! Each is a job of several recordings, one per call, each call made once the
//! engine's submission of the previous one completed:
//!
//! ```text
//!  census passes   with relocation or classification (gi/relocate.rs): the
//!                  bake rays of the probes still moving are traced, reduced
//!                  to a census record each on the device and read back (48 B
//!                  a probe); the next call moves and classifies them on the
//!                  CPU (GiBaker's Relocation, the standalone bake's own
//!                  steps) and records the next pass
//!  final bake      every probe of the job from where it ended (inactive ones
//!                  to the clip value); a bake compresses the maps on the
//!                  device and reads the result back, a refresh or scroll
//!                  reads the maps back
//!  finish          the next call builds the field (a bake), or recompresses
//!                  the maps into the dictionary (gi/refresh.rs; a scroll
//!                  moves the volume first), and records the upload
//! ```
//!
//! A bake without relocation or classification takes two calls, with them up
//! to `2 + ProbeRules::iterations + 1`. One job is in flight at a time; a
//! recorded bake drops a pending refresh or scroll, which must otherwise be
//! finished before another starts. The results are the standalone calls'
//! (`GiVolume::bake`, `refresh`, `scroll_by`): the same kernels, the same CPU
//! steps between them.

use super::buffer::{BufferMemory, GpuBuffer};
use super::error::GpuError;
use super::gi_bake::{GiBaker, Relocation, CENSUS_WORDS};
use super::gi_compress::{GpuVisibility, VisibilityDownload, MAX_COMPRESS_BATCH};
use super::gi_volume::{enter, grid_points, GiVolume};
use super::ray_tracer::RayTracer;
use super::recorder::{Download, Recorder};
use crate::gi::compress::ProbeOrder;
use crate::gi::refresh::{fold_probes, probes_near, refresh_reach, RefreshReport};
use crate::gi::relocate::ProbeOffsets;
use crate::gi::scroll::{advance, centre_shift, ScrollReport};
use crate::gi::{ProbeGrid, VisibilityMap, OCT_TEXELS};
use crate::math::Vec3;

/// What a recorded refresh or scroll re-bakes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Rebake {
    /// The probes within reach of a box.
    Refresh { lo: Vec3, hi: Vec3 },
    /// The planes that enter a scroll by whole probes.
    Scroll { shift: [i32; 3] },
}

/// A recorded job: what it bakes, where, and how far its relocation got.
pub(super) struct Job {
    /// `None`: the whole volume's bake.
    rebake: Option<Rebake>,
    /// The probes (slots) it bakes: after the scroll for a scroll.
    probes: Vec<u32>,
    grid: ProbeGrid,
    linear: Vec<u32>,
    relocation: Relocation,
}

/// What the job's last recording left to read once it completed.
pub(super) enum Stage {
    /// The census records of a census pass and their read-back.
    Census { records: GpuBuffer, download: Download },
    /// A refresh's or scroll's final maps.
    Maps { maps: GpuBuffer, download: Download },
    /// A bake's compressed visibility (boxed: the largest by far).
    Compressed { work: Box<GpuVisibility>, download: VisibilityDownload },
}

/// What a finished job did.
enum Finished {
    Bake,
    Refresh(RefreshReport),
    Scroll(ScrollReport),
}

/// Drops a job's buffers once no recorded command can use them.
pub(super) fn release(tracer: &mut RayTracer, stage: Stage) {
    match stage {
        Stage::Census { records, .. } => tracer.gpu_mut().defer_drop(records),
        Stage::Maps { maps, .. } => tracer.gpu_mut().defer_drop(maps),
        Stage::Compressed { work, .. } => tracer.gpu_mut().defer_drop(*work),
    }
}

impl GiVolume {
    /// Embedded mode: the bake (as [`GiVolume::bake`], relocation and
    /// classification included) as a job of recordings into the engine's
    /// command buffers (see the module docs). Each call records the next step
    /// into `cmd` for frame slot `slot` and returns `false`, until the call that
    /// finishes the bake (it records the upload of the volume's new data) returns
    /// `true`. Updates recorded in between use the previous visibility.
    ///
    /// # Safety
    /// As [`super::Gpu::record_into`]; and each call comes after the engine's
    /// submissions of the earlier recordings completed.
    pub unsafe fn record_bake(
        &mut self,
        tracer: &mut RayTracer,
        cmd: ash::vk::CommandBuffer,
        slot: u32,
    ) -> Result<bool, GpuError> {
        tracer.check_slot("record_bake", "bake", slot)?;
        match self.recorded.take() {
            Some((job, stage)) if job.rebake.is_none() => {
                // SAFETY: forwarded from the caller.
                return unsafe { self.step(tracer, job, stage, cmd, slot) }.map(|f| f.is_some());
            }
            // A bake supersedes a pending refresh or scroll.
            Some((_, stage)) => release(tracer, stage),
            None => {}
        }
        let n = self.probe_count();
        if n == 0 {
            // SAFETY: forwarded from the caller.
            unsafe { self.record_initial(tracer, cmd, slot) }?;
            self.baked = true;
            return Ok(true);
        }
        let probes: Vec<u32> = (0..n).collect();
        let start = self.field.offsets.codes(n as usize);
        let job = Job {
            rebake: None,
            linear: grid_points(&self.field, &probes),
            probes,
            grid: self.field.volume.grid,
            relocation: Relocation::new(&start, &self.rules),
        };
        // SAFETY: forwarded from the caller.
        unsafe { self.start(tracer, job, cmd, slot) }?;
        Ok(false)
    }

    /// Embedded mode: [`GiVolume::refresh`] as a job of recordings (see the
    /// module docs and [`GiVolume::record_bake`]): the first call starts the
    /// refresh of the probes within reach of `[lo, hi]` and returns `None` (or
    /// the report at once when no probe is within reach); the calls after it
    /// take the refresh on (their box is not used) until the one that finishes
    /// it returns the report. The volume must be baked, with no recorded bake or
    /// scroll pending.
    ///
    /// # Safety
    /// As [`GiVolume::record_bake`].
    pub unsafe fn record_refresh(
        &mut self,
        tracer: &mut RayTracer,
        lo: Vec3,
        hi: Vec3,
        cmd: ash::vk::CommandBuffer,
        slot: u32,
    ) -> Result<Option<RefreshReport>, GpuError> {
        tracer.check_slot("record_refresh", "refresh", slot)?;
        self.check_rebake("refresh", |r| matches!(r, Rebake::Refresh { .. }))?;
        if let Some((job, stage)) = self.recorded.take() {
            // SAFETY: forwarded from the caller.
            let finished = unsafe { self.step(tracer, job, stage, cmd, slot) }?;
            return Ok(finished.map(|f| match f {
                Finished::Refresh(report) => report,
                _ => unreachable!("a refresh finishes as a refresh"),
            }));
        }
        if !(lo.is_finite() && hi.is_finite()) || hi.cmplt(lo).any() {
            return Err(GpuError::InvalidInput(format!(
                "refresh: the box {lo}..{hi} must be finite with lo <= hi on every axis"
            )));
        }
        let grid = self.field.volume.grid;
        let probes = probes_near(&self.field, lo, hi, refresh_reach(&grid, &self.rules));
        if probes.is_empty() {
            return Ok(Some(RefreshReport::default()));
        }
        let start: Vec<[i32; 3]> = probes.iter().map(|&p| self.field.offsets.code(p as usize)).collect();
        let job = Job {
            rebake: Some(Rebake::Refresh { lo, hi }),
            linear: grid_points(&self.field, &probes),
            probes,
            grid,
            relocation: Relocation::new(&start, &self.rules),
        };
        // SAFETY: forwarded from the caller.
        unsafe { self.start(tracer, job, cmd, slot) }?;
        Ok(None)
    }

    /// Embedded mode: [`GiVolume::scroll_by`] as a job of recordings, as
    /// [`GiVolume::record_refresh`] makes a refresh: the first call starts
    /// baking the planes that would enter and returns `None` (or the report at
    /// once when nothing enters); the call that finishes it (later calls' shifts
    /// are not used: scroll again to follow a point that moved on) recompresses
    /// the new maps, records their upload and returns the report. Only then does
    /// the volume move: updates recorded before, and the engine's sampling, see
    /// it where it was.
    ///
    /// # Safety
    /// As [`GiVolume::record_bake`].
    pub unsafe fn record_scroll_by(
        &mut self,
        tracer: &mut RayTracer,
        shift: [i32; 3],
        cmd: ash::vk::CommandBuffer,
        slot: u32,
    ) -> Result<Option<ScrollReport>, GpuError> {
        tracer.check_slot("record_scroll", "scroll", slot)?;
        self.check_scroll()?;
        self.check_rebake("scroll", |r| matches!(r, Rebake::Scroll { .. }))?;
        if let Some((job, stage)) = self.recorded.take() {
            // SAFETY: forwarded from the caller.
            let finished = unsafe { self.step(tracer, job, stage, cmd, slot) }?;
            return Ok(finished.map(|f| match f {
                Finished::Scroll(report) => report,
                _ => unreachable!("a scroll finishes as a scroll"),
            }));
        }
        let mut field = self.field.clone();
        let (probes, planes) = advance(&mut field, shift);
        if probes.is_empty() {
            return Ok(Some(ScrollReport { shift, planes, ..ScrollReport::default() }));
        }
        let job = Job {
            rebake: Some(Rebake::Scroll { shift }),
            linear: grid_points(&field, &probes),
            relocation: Relocation::new(&vec![[0; 3]; probes.len()], &self.rules),
            probes,
            grid: field.volume.grid,
        };
        // SAFETY: forwarded from the caller.
        unsafe { self.start(tracer, job, cmd, slot) }?;
        Ok(None)
    }

    /// [`GiVolume::record_scroll_by`] the whole probes that put `centre` in the
    /// volume's middle cell (the calls that take a scroll on do not use it).
    ///
    /// # Safety
    /// As [`GiVolume::record_bake`].
    pub unsafe fn record_scroll_to(
        &mut self,
        tracer: &mut RayTracer,
        centre: Vec3,
        cmd: ash::vk::CommandBuffer,
        slot: u32,
    ) -> Result<Option<ScrollReport>, GpuError> {
        if !centre.is_finite() {
            return Err(GpuError::InvalidInput(format!("scroll: the centre {centre} is not finite")));
        }
        let shift = centre_shift(&self.field, centre);
        // SAFETY: forwarded from the caller.
        unsafe { self.record_scroll_by(tracer, shift, cmd, slot) }
    }

    /// Whether a recorded bake is in progress.
    pub fn bake_pending(&self) -> bool {
        self.recorded.as_ref().is_some_and(|(job, _)| job.rebake.is_none())
    }

    /// The recorded refresh or scroll in progress, if any.
    pub fn pending_rebake(&self) -> Option<Rebake> {
        self.recorded.as_ref().and_then(|(job, _)| job.rebake)
    }

    /// A recorded refresh or scroll (`what`, a pending one accepted by `same`)
    /// may start or go on: the volume is baked, no recorded bake is in progress,
    /// and no re-bake of the other kind is pending.
    fn check_rebake(&self, what: &str, same: impl Fn(&Rebake) -> bool) -> Result<(), GpuError> {
        if self.bake_pending() {
            return Err(GpuError::InvalidInput(format!(
                "{what}: a recorded bake is in progress: finish it with record_bake first"
            )));
        }
        if !self.baked {
            return Err(GpuError::InvalidInput(format!("{what}: the volume is not baked yet: record a bake first")));
        }
        match self.pending_rebake() {
            Some(pending) if !same(&pending) => Err(GpuError::InvalidInput(format!(
                "{what}: a recorded {} is in progress: finish it first",
                match pending {
                    Rebake::Refresh { .. } => "refresh",
                    Rebake::Scroll { .. } => "scroll",
                }
            ))),
            _ => Ok(()),
        }
    }

    /// Records the job's first step and keeps it.
    ///
    /// # Safety
    /// As [`super::Gpu::record_into`].
    unsafe fn start(
        &mut self,
        tracer: &mut RayTracer,
        job: Job,
        cmd: ash::vk::CommandBuffer,
        slot: u32,
    ) -> Result<(), GpuError> {
        // SAFETY: forwarded from the caller.
        let stage = unsafe { self.record_job(tracer, &job, cmd, slot) }?;
        self.recorded = Some((job, stage));
        Ok(())
    }

    /// Takes the job on from what its last recording read back: the census
    /// (and the next recording), or the end (the upload recorded). A failed
    /// call leaves the job as it was.
    ///
    /// # Safety
    /// As [`GiVolume::record_bake`].
    unsafe fn step(
        &mut self,
        tracer: &mut RayTracer,
        job: Job,
        stage: Stage,
        cmd: ash::vk::CommandBuffer,
        slot: u32,
    ) -> Result<Option<Finished>, GpuError> {
        let result = match &stage {
            Stage::Census { download, .. } => {
                let found = GiBaker::censuses(&download.to_vec::<u32>());
                let mut relocation = job.relocation.clone();
                relocation.step(&found, job.grid.spacing, &self.rules);
                let next = Job { relocation, probes: job.probes.clone(), linear: job.linear.clone(), ..job };
                // SAFETY: forwarded from the caller.
                match unsafe { self.record_job(tracer, &next, cmd, slot) } {
                    Ok(next_stage) => {
                        release(tracer, stage);
                        self.recorded = Some((next, next_stage));
                        return Ok(None);
                    }
                    Err(err) => Err(err),
                }
            }
            // SAFETY: forwarded from the caller.
            _ => unsafe { self.finish(tracer, &job, &stage, cmd, slot) },
        };
        match result {
            Ok(finished) => {
                release(tracer, stage);
                Ok(Some(finished))
            }
            Err(err) => {
                self.recorded = Some((job, stage));
                Err(err)
            }
        }
    }

    /// Records what `job` needs next into `cmd`: a census pass of its pending
    /// probes, or its final bake (for a whole bake with the compression) and
    /// the read-back. The first recording of a volume on an engine's device
    /// also uploads its initial data.
    ///
    /// # Safety
    /// As [`super::Gpu::record_into`].
    unsafe fn record_job(
        &mut self,
        tracer: &mut RayTracer,
        job: &Job,
        cmd: ash::vk::CommandBuffer,
        slot: u32,
    ) -> Result<Stage, GpuError> {
        self.baker.occluders = self.rules.occluders;
        let (initial, device) = (&self.initial, &self.device);
        let prelude = |rec: &mut Recorder<'_>| initial.as_ref().map_or(Ok(()), |i| i.record(rec, device));
        let stage = if !job.relocation.pending.is_empty() {
            let (list, words) = job.relocation.pending_points(&job.linear);
            let bytes = (list.len() * CENSUS_WORDS * 4) as u64;
            let records = tracer.gpu().buffer("gi census", bytes, BufferMemory::Device)?;
            // SAFETY: forwarded from the caller.
            let recorded = unsafe {
                self.baker.record(tracer, &job.grid, &list, Some(&words), (&records, true), cmd, slot, prelude)
            };
            match recorded {
                Ok((_, Some(download))) => Stage::Census { records, download },
                Ok((_, None)) => unreachable!("a census pass reads its records back"),
                Err(err) => {
                    tracer.gpu_mut().defer_drop(records);
                    return Err(err);
                }
            }
        } else if job.rebake.is_none() {
            let n = job.linear.len() as u32;
            let order = ProbeOrder::swizzled(n, MAX_COMPRESS_BATCH as u32);
            let work = GpuVisibility::new(tracer.gpu(), n)?;
            let (compressor, params) = (&self.compressor, &self.compress);
            let words = job.relocation.words();
            // SAFETY: forwarded from the caller.
            let recorded = unsafe {
                self.baker.record(tracer, &job.grid, &job.linear, Some(&words), (&work.maps, false), cmd, slot, |rec| {
                    prelude(rec)?;
                    rec.pass("gi compress", |rec| compressor.record(rec, &work, &order, params))?;
                    rec.pass("gi read visibility", |rec| work.record_read(rec))
                })
            };
            match recorded {
                Ok((download, _)) => Stage::Compressed { work: Box::new(work), download },
                Err(err) => {
                    tracer.gpu_mut().defer_drop(work);
                    return Err(err);
                }
            }
        } else {
            let bytes = job.linear.len() as u64 * OCT_TEXELS as u64 * 8;
            let maps = tracer.gpu().buffer("gi rebake maps", bytes, BufferMemory::Device)?;
            let words = job.relocation.words();
            // SAFETY: forwarded from the caller.
            let recorded = unsafe {
                self.baker.record(tracer, &job.grid, &job.linear, Some(&words), (&maps, false), cmd, slot, |rec| {
                    prelude(rec)?;
                    rec.pass("gi read maps", |rec| rec.download(&maps, 0, bytes))
                })
            };
            match recorded {
                Ok((download, _)) => Stage::Maps { maps, download },
                Err(err) => {
                    tracer.gpu_mut().defer_drop(maps);
                    return Err(err);
                }
            }
        };
        self.initial = None;
        Ok(stage)
    }

    /// The job's end: the field built from the bake, or the maps recompressed
    /// into it (after the scroll's move), and the upload recorded into `cmd`.
    ///
    /// # Safety
    /// As [`super::Gpu::record_into`].
    unsafe fn finish(
        &mut self,
        tracer: &mut RayTracer,
        job: &Job,
        stage: &Stage,
        cmd: ash::vk::CommandBuffer,
        slot: u32,
    ) -> Result<Finished, GpuError> {
        let codes = &job.relocation.codes;
        let mut field = self.field(tracer)?.clone();
        let mut scrolled = None;
        let finished = match (stage, job.rebake) {
            (Stage::Compressed { download, .. }, None) => {
                field.set_visibility(download.finish());
                field.offsets = ProbeOffsets::from_codes(codes);
                Finished::Bake
            }
            (Stage::Maps { download, .. }, Some(Rebake::Refresh { .. })) => {
                Finished::Refresh(fold_probes(&mut field, &job.probes, codes, &read_maps(download), &self.compress))
            }
            (Stage::Maps { download, .. }, Some(Rebake::Scroll { shift })) => {
                let (probes, planes) = advance(&mut field, shift);
                debug_assert_eq!(probes, job.probes, "the same planes enter");
                let bake = enter(&mut field, &probes, codes, &read_maps(download), &self.compress);
                scrolled = Some(probes.clone());
                Finished::Scroll(ScrollReport { shift, planes, probes, bake })
            }
            _ => unreachable!("a census is taken on, not finished"),
        };
        let device = &mut self.device;
        // SAFETY: forwarded from the caller.
        unsafe {
            device.record_upload(tracer.gpu_mut(), cmd, slot, &field.visibility, &field.irradiance, &field.offsets)
        }?;
        match scrolled {
            Some(probes) => self.scrolled_to(field, &probes),
            None => self.field = field,
        }
        self.baked = true;
        Ok(finished)
    }
}

/// The maps a recorded re-bake read back (its submission completed).
fn read_maps(download: &Download) -> Vec<VisibilityMap> {
    let texels: Vec<[f32; 2]> = download.to_vec();
    texels
        .chunks_exact(OCT_TEXELS)
        .map(|c| VisibilityMap(<[[f32; 2]; OCT_TEXELS]>::try_from(c).expect("a map")))
        .collect()
}
