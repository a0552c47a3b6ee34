//! The DDGI irradiance update on the GPU, the kernels of `gi::update::{probe_rays,
//! shadow_rays, shade, blend}`:
//!
//! ```text
//!  per update of probe slots s < count (probe slots[s], uploaded: live probes)
//!    gi probe rays    gi_probe_rays.comp    N rays per probe along the uploaded directions
//!    gi trace         trace.comp            closest hit
//!    gi shadow rays   gi_shadow_rays.comp   toward the sun from front-face hits, else mask 0
//!    gi trace shadows trace.comp            any hit
//!    gi shade         gi_shade.comp         sky / black / albedo/pi (sun cos lit + E(hit))
//!    gi blend         gi_blend.comp         SH projection, hysteresis, pack toward the target
//! ```
//!
//! Every pass is a labelled, timed pass of one submission that also carries the
//! scene update (`RayTracer::submit_with_scene`). Shading samples the probe field
//! as it was before the update, because the blend runs after every shade
//! invocation has finished: one bounce per update, like the CPU reference.
//!
//! The kernels read their parameters from one small buffer (`GiUpdateParams`,
//! 272 bytes: more than the 128 bytes of push constants every device offers).
//! The ray directions are computed on the CPU (`fibonacci_directions` with the
//! frame's rotation) and uploaded, so the GPU and CPU rays are the same bits.

use super::buffer::{BufferMemory, GpuBuffer};
use super::error::GpuError;
use super::kernel::Kernel;
use super::layout::{GiUpdateParams, GiUpdatePush};
use super::queue::Gpu;
use super::ray_tracer::{RayTracer, MAX_TRACE_BATCH};
use super::recorder::{Download, Recorder, Use};
use super::scene::GpuScene;
use super::shaders;
use super::trace::Tracer;
use crate::gi::bits::PackedInts;
use crate::gi::bits::RankedBits;
use crate::gi::compress::{CompressedVisibility, ProbeIndex, QUADRANTS};
use crate::gi::sh::{random_rotation, rotated_fibonacci_directions};
use crate::gi::table::BlockTable;
use crate::gi::update::{GiLighting, UpdateParams};
use crate::gi::{PackedSh, ProbeField, ProbeGrid, ProbeOffsets};

/// Most rays per probe and update.
pub const MAX_RAYS_PER_PROBE: u32 = 1024;

/// A probe field's data on the device: placement, irradiance and visibility, and
/// nothing else (a probe's grid point is found from the placement mask:
/// `gi_probe_linear`), so the device holds what `ProbeField::bytes` counts.
pub struct GpuProbeField {
    pub grid: ProbeGrid,
    pub probe_count: u32,
    /// The placement mask and its ranks (`ProbeVolume::mask_words`).
    pub(crate) mask: GpuBuffer,
    pub(crate) rank: GpuBuffer,
    /// `uvec4[visibility.live_count]`: `PackedSh` per live probe, by rank.
    pub irradiance: GpuBuffer,
    /// The compressed visibility, sized to it.
    pub visibility: DeviceVisibility,
    /// The moved probes' offsets (`ProbeOffsets::parts`: mask, ranks, codes);
    /// `None` while every probe sits on its grid point.
    pub(crate) offsets: Option<[GpuBuffer; 3]>,
    /// A scrolling volume's ring (`ProbeField::ring`).
    pub ring: [u32; 3],
}

/// A probe field's compressed visibility on the device, sized to the data: the
/// live mask and its ranks, the index as [`ProbeIndex`] stores it (signature
/// numbers when live probes share signatures, and the signatures' entries) and the
/// block table. The
/// bake's uncompressed maps and the compressor's working buffers
/// ([`super::GpuVisibility`]) are gone once it is uploaded.
pub struct DeviceVisibility {
    /// `uvec2[]`: a bit per probe, set for a live one (`CompressedVisibility::live`).
    pub live_mask: GpuBuffer,
    /// `uint[]`: live probes before each mask word.
    pub live_rank: GpuBuffer,
    /// `uint[]`: `ProbeIndex::numbers`' words (none when each live probe has its
    /// own signature).
    pub numbers: GpuBuffer,
    /// `uint[]`: `ProbeIndex::entries`' words.
    pub entries: GpuBuffer,
    /// `uint[]`: the block tables' words (`BlockTable::words`).
    pub blocks: GpuBuffer,
    /// `ProbeIndex::layout`: numbered or not, bits per number and per entry.
    pub index_layout: [u32; 3],
    pub signature_count: u32,
    pub block_count: u32,
    /// What the decoder needs besides the words (`BlockTable::layout`).
    pub table_layout: [u32; 4],
    /// Words in `blocks`.
    pub block_words: u32,
    pub live_count: u32,
}

impl GpuProbeField {
    /// Device buffers holding `field` (its irradiance and compressed visibility).
    pub fn new(gpu: &mut Gpu, field: &ProbeField) -> Result<GpuProbeField, GpuError> {
        let volume = &field.volume;
        let (mask, rank) = volume.mask_words();
        let mut gpu_field = GpuProbeField {
            grid: volume.grid,
            probe_count: volume.probe_count() as u32,
            mask: gpu.buffer_from("gi mask", mask)?,
            rank: gpu.buffer_from("gi rank", rank)?,
            irradiance: gpu.buffer_from::<PackedSh>("gi irradiance", &[])?,
            visibility: DeviceVisibility::new(gpu, &CompressedVisibility::dead(volume.probe_count()))?,
            offsets: None,
            ring: field.ring,
        };
        gpu_field.upload(gpu, &field.visibility, &field.irradiance)?;
        Ok(gpu_field)
    }

    /// Replaces the device's compressed visibility (a bake, or a saved one) and
    /// irradiance (a word per live probe of `vis`, by rank) with buffers sized to
    /// them. Work in flight is waited for; the old buffers are dropped once no
    /// recorded command can use them ([`Gpu::defer_drop`]). Refused inputs change
    /// nothing.
    pub fn upload(
        &mut self,
        gpu: &mut Gpu,
        vis: &CompressedVisibility,
        irradiance: &[PackedSh],
    ) -> Result<(), GpuError> {
        self.check_upload(vis, irradiance)?;
        gpu.wait()?;
        let visibility = DeviceVisibility::new(gpu, vis)?;
        let irradiance = gpu.buffer_from("gi irradiance", irradiance)?;
        gpu.defer_drop(std::mem::replace(&mut self.visibility, visibility));
        gpu.defer_drop(std::mem::replace(&mut self.irradiance, irradiance));
        Ok(())
    }

    /// Replaces the probes' offsets on the device (none stored while no probe
    /// moved). Work in flight is waited for; the old buffers are dropped once no
    /// recorded command can use them.
    pub fn upload_offsets(&mut self, gpu: &mut Gpu, offsets: &ProbeOffsets) -> Result<(), GpuError> {
        if offsets.moved_count() == 0 && self.offsets.is_none() {
            return Ok(());
        }
        gpu.wait()?;
        let fresh = if offsets.moved_count() == 0 {
            None
        } else {
            let (mask, rank, codes) = offsets.parts();
            Some([
                gpu.buffer_from("gi offset mask", mask)?,
                gpu.buffer_from("gi offset rank", rank)?,
                gpu.buffer_from("gi offset codes", codes)?,
            ])
        };
        for old in std::mem::replace(&mut self.offsets, fresh).into_iter().flatten() {
            gpu.defer_drop(old);
        }
        Ok(())
    }

    /// Embedded mode: buffers sized for `field`, created empty; the returned upload
    /// records their data into a later recording (nothing is submitted).
    pub fn sized(gpu: &mut Gpu, field: &ProbeField) -> Result<(GpuProbeField, InitialUpload), GpuError> {
        let volume = &field.volume;
        let (mask, rank) = volume.mask_words();
        let mask: Vec<u32> = bytemuck::cast_slice(mask).to_vec();
        let rank: Vec<u32> = bytemuck::cast_slice(rank).to_vec();
        let vis = &field.visibility;
        let data = VisibilityWords::of(vis);
        let buffer = |name: &str, bytes: u64| gpu.buffer(name, bytes.max(4), BufferMemory::Device);
        let gpu_field = GpuProbeField {
            grid: volume.grid,
            probe_count: volume.probe_count() as u32,
            mask: buffer("gi mask", 4 * mask.len() as u64)?,
            rank: buffer("gi rank", 4 * rank.len() as u64)?,
            irradiance: buffer("gi irradiance", std::mem::size_of_val(field.irradiance.as_slice()) as u64)?,
            visibility: DeviceVisibility::sized(gpu, vis, &data)?,
            offsets: None,
            ring: field.ring,
        };
        let visibility = data.words().map(|w| w.to_vec());
        Ok((gpu_field, InitialUpload { mask, rank, visibility, irradiance: field.irradiance.clone() }))
    }

    /// Embedded mode: as [`GpuProbeField::upload`], but the new buffers are created
    /// empty and their data is recorded into the engine's `cmd` for frame slot
    /// `slot`: nothing is submitted.
    ///
    /// # Safety
    /// As [`Gpu::record_into`].
    pub unsafe fn record_upload(
        &mut self,
        gpu: &mut Gpu,
        cmd: ash::vk::CommandBuffer,
        slot: u32,
        vis: &CompressedVisibility,
        irradiance: &[PackedSh],
        offsets: &ProbeOffsets,
    ) -> Result<(), GpuError> {
        self.check_upload(vis, irradiance)?;
        let data = VisibilityWords::of(vis);
        let visibility = DeviceVisibility::sized(gpu, vis, &data)?;
        let bytes = (std::mem::size_of_val(irradiance) as u64).max(4);
        let device_irradiance = gpu.buffer("gi irradiance", bytes, BufferMemory::Device)?;
        let (mask, rank, codes) = offsets.parts();
        let offset_words: [&[u32]; 3] = [bytemuck::cast_slice(mask), bytemuck::cast_slice(rank), codes];
        let sized = |name, words: &[u32]| gpu.buffer(name, 4 * words.len().max(1) as u64, BufferMemory::Device);
        let device_offsets = if offsets.moved_count() == 0 {
            None
        } else {
            Some([
                sized("gi offset mask", offset_words[0])?,
                sized("gi offset rank", offset_words[1])?,
                sized("gi offset codes", offset_words[2])?,
            ])
        };
        // SAFETY: forwarded from the caller.
        unsafe {
            gpu.record_into(cmd, slot, "kiln gi upload", |rec| {
                for (buffer, words) in visibility.buffers().into_iter().zip(data.words()) {
                    if !words.is_empty() {
                        rec.upload(buffer, 0, bytemuck::cast_slice(words))?;
                    }
                }
                if !irradiance.is_empty() {
                    rec.upload(&device_irradiance, 0, bytemuck::cast_slice(irradiance))?;
                }
                for (buffer, words) in device_offsets.iter().flatten().zip(offset_words) {
                    if !words.is_empty() {
                        rec.upload(buffer, 0, bytemuck::cast_slice(words))?;
                    }
                }
                Ok(())
            })
        }?;
        gpu.defer_drop(std::mem::replace(&mut self.visibility, visibility));
        gpu.defer_drop(std::mem::replace(&mut self.irradiance, device_irradiance));
        for old in std::mem::replace(&mut self.offsets, device_offsets).into_iter().flatten() {
            gpu.defer_drop(old);
        }
        Ok(())
    }

    /// Live probes: those that keep irradiance.
    pub fn live_count(&self) -> u32 {
        self.visibility.live_count
    }

    /// Replaces the device's irradiance (a word per live probe).
    pub fn upload_irradiance(&self, gpu: &mut Gpu, irradiance: &[PackedSh]) -> Result<(), GpuError> {
        if irradiance.len() != self.live_count() as usize {
            return Err(GpuError::InvalidInput(format!(
                "irradiance of {} probes for {} live ones",
                irradiance.len(),
                self.live_count()
            )));
        }
        if !irradiance.is_empty() {
            gpu.submit("gi upload irradiance", |rec| {
                rec.upload(&self.irradiance, 0, bytemuck::cast_slice(irradiance))
            })?;
        }
        Ok(())
    }

    /// Reads every live probe's irradiance, by rank.
    pub fn read_irradiance(&self, gpu: &mut Gpu) -> Result<Vec<PackedSh>, GpuError> {
        match self.live_count() {
            0 => Ok(Vec::new()),
            n => gpu.read::<PackedSh>(&self.irradiance, n as usize),
        }
    }

    /// Reads the compressed visibility back.
    pub fn read_visibility(&self, gpu: &mut Gpu) -> Result<CompressedVisibility, GpuError> {
        self.read_visibility_with(|buffer, count| gpu.read::<u32>(buffer, count))
    }

    /// As [`DeviceVisibility::read_visibility`], each buffer's first `count` words
    /// read by `read` (on an engine's device: a download recorded into its command
    /// buffer).
    pub fn read_visibility_with(
        &self,
        mut read: impl FnMut(&GpuBuffer, usize) -> Result<Vec<u32>, GpuError>,
    ) -> Result<CompressedVisibility, GpuError> {
        let v = &self.visibility;
        let n = self.probe_count as usize;
        let mut read_u32 = |buffer: &GpuBuffer, count: usize| match count {
            0 => Ok(Vec::new()),
            _ => read(buffer, count),
        };
        let words = read_u32(&v.live_mask, 2 * n.div_ceil(64))?;
        let live = RankedBits::from_fn(n, |p| words[p / 32] >> (p % 32) & 1 == 1);
        let [numbered, number_width, entry_width] = v.index_layout;
        let mut packed = |buffer: &GpuBuffer, len: usize, width: u32| {
            let words = read_u32(buffer, PackedInts::words_for(len, width))?;
            PackedInts::from_words(len, width, words).map_err(GpuError::InvalidInput)
        };
        let numbers = match numbered {
            0 => None,
            _ => Some(packed(&v.numbers, v.live_count as usize, number_width)?),
        };
        let entries = packed(&v.entries, v.signature_count as usize * QUADRANTS, entry_width)?;
        let index = ProbeIndex { numbers, entries };
        let words = read_u32(&v.blocks, v.block_words as usize)?;
        let blocks = BlockTable::from_parts(v.block_count, v.table_layout, words).map_err(GpuError::InvalidInput)?;
        Ok(CompressedVisibility { live, index, blocks })
    }
}

impl GpuProbeField {
    /// Refuses visibility of another probe count, inconsistent visibility and
    /// irradiance that is not a word per live probe.
    fn check_upload(&self, vis: &CompressedVisibility, irradiance: &[PackedSh]) -> Result<(), GpuError> {
        if vis.probe_count() != self.probe_count as usize {
            return Err(GpuError::InvalidInput(format!(
                "visibility of {} probes for a field of {}",
                vis.probe_count(),
                self.probe_count
            )));
        }
        vis.check().map_err(|why| GpuError::InvalidInput(format!("visibility: {why}")))?;
        if irradiance.len() != vis.live.count() {
            return Err(GpuError::InvalidInput(format!(
                "irradiance of {} probes for {} live ones",
                irradiance.len(),
                vis.live.count()
            )));
        }
        Ok(())
    }
}

/// The words of the five buffers of a [`DeviceVisibility`], in
/// [`DeviceVisibility::buffers`] order.
struct VisibilityWords<'v> {
    mask: Vec<u32>,
    rank: Vec<u32>,
    numbers: &'v [u32],
    entries: &'v [u32],
    blocks: &'v [u32],
}

impl<'v> VisibilityWords<'v> {
    fn of(vis: &'v CompressedVisibility) -> VisibilityWords<'v> {
        let (mask, rank) = vis.live.words();
        VisibilityWords {
            mask: bytemuck::cast_slice(mask).to_vec(),
            rank: bytemuck::cast_slice(rank).to_vec(),
            numbers: vis.index.numbers.as_ref().map_or(&[], |n| n.words()),
            entries: vis.index.entries.words(),
            blocks: vis.blocks.words(),
        }
    }

    fn words(&self) -> [&[u32]; 5] {
        [&self.mask, &self.rank, self.numbers, self.entries, self.blocks]
    }
}

impl DeviceVisibility {
    /// Buffers sized to `vis`, empty (their data is recorded by the caller).
    fn sized(gpu: &Gpu, vis: &CompressedVisibility, data: &VisibilityWords<'_>) -> Result<DeviceVisibility, GpuError> {
        let [mask, rank, numbers, entries, blocks] = data.words();
        let buffer =
            |name: &str, words: &[u32]| gpu.buffer(name, (4 * words.len() as u64).max(4), BufferMemory::Device);
        Ok(DeviceVisibility {
            live_mask: buffer("gi live mask", mask)?,
            live_rank: buffer("gi live rank", rank)?,
            numbers: buffer("gi signature numbers", numbers)?,
            entries: buffer("gi entries", entries)?,
            blocks: buffer("gi blocks", blocks)?,
            index_layout: vis.index.layout(),
            signature_count: vis.index.signature_count() as u32,
            block_count: vis.blocks.len() as u32,
            table_layout: vis.blocks.layout(),
            block_words: vis.blocks.words().len() as u32,
            live_count: vis.live.count() as u32,
        })
    }

    fn buffers(&self) -> [&GpuBuffer; 5] {
        [&self.live_mask, &self.live_rank, &self.numbers, &self.entries, &self.blocks]
    }

    fn new(gpu: &mut Gpu, vis: &CompressedVisibility) -> Result<DeviceVisibility, GpuError> {
        let (mask, rank) = vis.live.words();
        Ok(DeviceVisibility {
            live_mask: gpu.buffer_from("gi live mask", mask)?,
            live_rank: gpu.buffer_from("gi live rank", rank)?,
            numbers: gpu.buffer_from("gi signature numbers", vis.index.numbers.as_ref().map_or(&[], |n| n.words()))?,
            entries: gpu.buffer_from("gi entries", vis.index.entries.words())?,
            blocks: gpu.buffer_from("gi blocks", vis.blocks.words())?,
            index_layout: vis.index.layout(),
            signature_count: vis.index.signature_count() as u32,
            block_count: vis.blocks.len() as u32,
            table_layout: vis.blocks.layout(),
            block_words: vis.blocks.words().len() as u32,
            live_count: vis.live.count() as u32,
        })
    }
}

/// Where an update is recorded: the engine's command buffer and frame slot, and
/// what to record before the update's passes.
pub struct Recording<'p> {
    pub cmd: ash::vk::CommandBuffer,
    pub slot: u32,
    pub prelude: &'p dyn Fn(&mut Recorder<'_>) -> Result<(), GpuError>,
}

/// A probe field's data not yet on the device ([`GpuProbeField::sized`]): what its
/// first recording uploads.
pub struct InitialUpload {
    mask: Vec<u32>,
    rank: Vec<u32>,
    visibility: [Vec<u32>; 5],
    irradiance: Vec<PackedSh>,
}

impl InitialUpload {
    /// Records the uploads into `field`'s buffers.
    pub fn record(&self, rec: &mut Recorder<'_>, field: &GpuProbeField) -> Result<(), GpuError> {
        let words = [&self.mask, &self.rank].into_iter().chain(&self.visibility);
        let buffers = [&field.mask, &field.rank].into_iter().chain(field.visibility.buffers());
        for (buffer, words) in buffers.zip(words) {
            if !words.is_empty() {
                rec.upload(buffer, 0, bytemuck::cast_slice(words))?;
            }
        }
        if !self.irradiance.is_empty() {
            rec.upload(&field.irradiance, 0, bytemuck::cast_slice(&self.irradiance))?;
        }
        Ok(())
    }
}

/// Scratch buffers of one update, kept between updates and grown on demand.
struct Scratch {
    rays: GpuBuffer,
    hits: GpuBuffer,
    shadow_rays: GpuBuffer,
    shadow_hits: GpuBuffer,
    radiance: GpuBuffer,
    dirs: GpuBuffer,
    albedo: GpuBuffer,
    /// `uint[]`: the probe of each update slot (at most one per ray).
    slots: GpuBuffer,
    params: GpuBuffer,
    ray_capacity: u32,
    albedo_capacity: u32,
}

/// The update kernels and their scratch buffers.
pub struct GiUpdater {
    probe_rays: Kernel,
    shadow_rays: Kernel,
    shade: Kernel,
    blend: Kernel,
    visibility_sample: Kernel,
    scratch: Option<Scratch>,
    /// Upload scratch kept between updates: the frame's ray directions, the albedo.
    dirs: Vec<[f32; 4]>,
    albedo: Vec<[f32; 4]>,
}

impl GiUpdater {
    pub fn new(tracer: &RayTracer) -> Result<GiUpdater, GpuError> {
        let gpu = tracer.gpu();
        Ok(GiUpdater {
            probe_rays: gpu.kernel(&shaders::GI_PROBE_RAYS)?,
            shadow_rays: gpu.kernel(&shaders::GI_SHADOW_RAYS)?,
            shade: gpu.kernel(&shaders::GI_SHADE)?,
            blend: gpu.kernel(&shaders::GI_BLEND)?,
            visibility_sample: gpu.kernel(&shaders::GI_VISIBILITY_SAMPLE)?,
            scratch: None,
            dirs: Vec::new(),
            albedo: Vec::new(),
        })
    }

    /// Largest `count` one update takes with `rays_per_probe` rays per probe.
    pub fn max_probes_per_update(rays_per_probe: u32) -> u32 {
        (MAX_TRACE_BATCH as u32) / rays_per_probe.max(1)
    }

    /// Updates the irradiance of `probes` for `frame` (which picks the rays'
    /// rotation) against the tracer's scene: the GPU version of
    /// `gi::update::update_irradiance` with that probe list (dead probes among
    /// them are traced and store nothing; `ProbeField::live_round_robin` picks
    /// live ones). Refused inputs change nothing.
    pub fn update(
        &mut self,
        tracer: &mut RayTracer,
        field: &GpuProbeField,
        lighting: &GiLighting,
        params: &UpdateParams,
        frame: u32,
        probes: &[u32],
    ) -> Result<(), GpuError> {
        self.update_async(tracer, field, lighting, params, frame, probes)?;
        tracer.finish()?;
        Ok(())
    }

    /// As [`GiUpdater::update`], but returns once the work is submitted (with the
    /// scene's update, when it changed); [`RayTracer::finish`] completes it.
    pub fn update_async(
        &mut self,
        tracer: &mut RayTracer,
        field: &GpuProbeField,
        lighting: &GiLighting,
        params: &UpdateParams,
        frame: u32,
        probes: &[u32],
    ) -> Result<(), GpuError> {
        // SAFETY: a submission of Kiln's own puts no obligation on the caller.
        unsafe { self.run(tracer, field, lighting, params, frame, probes, None) }.map(|_| ())
    }

    /// Embedded mode: records the update (with the scene's, when it changed, and
    /// `into.prelude` first) into the engine's command buffer, followed by a
    /// read-back of every live probe's irradiance (16 bytes each), readable from
    /// the returned download once the engine's submission completed. `None` when
    /// there was nothing to update.
    ///
    /// # Safety
    /// As [`super::Gpu::record_into`].
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn record_update(
        &mut self,
        tracer: &mut RayTracer,
        field: &GpuProbeField,
        lighting: &GiLighting,
        params: &UpdateParams,
        frame: u32,
        probes: &[u32],
        into: Recording<'_>,
    ) -> Result<Option<Download>, GpuError> {
        // SAFETY: forwarded from the caller.
        unsafe { self.run(tracer, field, lighting, params, frame, probes, Some(into)) }
    }

    /// The update, submitted or (`into`) recorded into an engine's command buffer
    /// with the irradiance read-back.
    ///
    /// # Safety
    /// With `into`, as [`super::Gpu::record_into`].
    #[allow(clippy::too_many_arguments)]
    unsafe fn run(
        &mut self,
        tracer: &mut RayTracer,
        field: &GpuProbeField,
        lighting: &GiLighting,
        params: &UpdateParams,
        frame: u32,
        probes: &[u32],
        into: Option<Recording<'_>>,
    ) -> Result<Option<Download>, GpuError> {
        check_update(field, lighting, params, probes)?;
        let count = probes.len() as u32;
        if count == 0 {
            return Ok(None);
        }
        let n = params.rays_per_probe;
        let rays = count * n;
        self.ensure_scratch(tracer.gpu(), rays, lighting.albedo.len() as u32)?;
        let s = self.scratch.as_ref().expect("sized above");
        let vis = &field.visibility;
        let p = GiUpdateParams {
            rays: s.rays.address(),
            hits: s.hits.address(),
            shadow_rays: s.shadow_rays.address(),
            shadow_hits: s.shadow_hits.address(),
            radiance: s.radiance.address(),
            dirs: s.dirs.address(),
            albedo: s.albedo.address(),
            bias: params.sample.bias,
            visibility: u32::from(params.sample.visibility),
            sun_x: lighting.sun_direction[0],
            sun_y: lighting.sun_direction[1],
            sun_z: lighting.sun_direction[2],
            sun_r: lighting.sun_irradiance[0],
            sun_g: lighting.sun_irradiance[1],
            sun_b: lighting.sun_irradiance[2],
            sky_r: lighting.sky_radiance[0],
            sky_g: lighting.sky_radiance[1],
            sky_b: lighting.sky_radiance[2],
            albedo_r: lighting.default_albedo[0],
            albedo_g: lighting.default_albedo[1],
            albedo_b: lighting.default_albedo[2],
            albedo_count: lighting.albedo.len() as u32,
            count,
            rays_per_probe: n,
            hysteresis: params.hysteresis,
            ..field_params(field, s.slots.address())
        };
        let (dirs, albedo) = (&mut self.dirs, &mut self.albedo);
        dirs.clear();
        dirs.extend(rotated_fibonacci_directions(n, &random_rotation(frame)).map(|d| [d.x, d.y, d.z, 0.0]));
        albedo.clear();
        albedo.extend(lighting.albedo.iter().map(|a| [a[0], a[1], a[2], 0.0]));
        let push = GiUpdatePush { params: s.params.address() };
        let kernels = (&self.probe_rays, &self.shadow_rays, &self.shade, &self.blend);
        // The kernels find every buffer through `params`; these lists are the
        // buffers each one reaches (GLSL in `vulkan-shaders/gi_*.comp`).
        let (read, write) = (Use::read, Use::write);
        let probe_rays =
            [read(&s.params), read(&s.dirs), read(&s.slots), read(&field.mask), read(&field.rank), write(&s.rays)];
        let shadow_rays = [read(&s.params), read(&s.rays), read(&s.hits), write(&s.shadow_rays)];
        let shade = [
            read(&s.params),
            read(&s.rays),
            read(&s.hits),
            read(&s.shadow_hits),
            read(&s.albedo),
            read(&field.mask),
            read(&field.rank),
            read(&field.irradiance),
            read(&vis.live_mask),
            read(&vis.live_rank),
            read(&vis.numbers),
            read(&vis.entries),
            read(&vis.blocks),
            write(&s.radiance),
        ];
        let blend = [
            read(&s.params),
            read(&s.dirs),
            read(&s.slots),
            read(&vis.live_mask),
            read(&vis.live_rank),
            read(&s.radiance),
            write(&field.irradiance),
        ];
        let live_bytes = 16 * u64::from(field.live_count());
        let passes = |rec: &mut Recorder<'_>, scene: &GpuScene, trace: &Tracer| {
            if let Some(into) = &into {
                (into.prelude)(rec)?;
            }
            rec.pass("gi probe rays", |rec| {
                rec.upload(&s.params, 0, bytemuck::bytes_of(&p))?;
                rec.upload(&s.dirs, 0, bytemuck::cast_slice(dirs))?;
                rec.upload(&s.albedo, 0, bytemuck::cast_slice(albedo))?;
                rec.upload(&s.slots, 0, bytemuck::cast_slice(probes))?;
                rec.dispatch_threads(kernels.0, &push, rays, &probe_rays)
            })?;
            rec.pass("gi trace", |rec| trace.record(rec, scene, &s.rays, &s.hits, rays, false))?;
            rec.pass("gi shadow rays", |rec| rec.dispatch_threads(kernels.1, &push, rays, &shadow_rays))?;
            rec.pass("gi trace shadows", |rec| trace.record(rec, scene, &s.shadow_rays, &s.shadow_hits, rays, true))?;
            rec.pass("gi shade", |rec| rec.dispatch_threads(kernels.2, &push, rays, &shade))?;
            rec.pass("gi blend", |rec| rec.dispatch_threads(kernels.3, &push, count, &blend))?;
            match into {
                Some(_) if live_bytes > 0 => {
                    rec.pass("gi read irradiance", |rec| rec.download(&field.irradiance, 0, live_bytes)).map(Some)
                }
                _ => Ok(None),
            }
        };
        match into.as_ref().map(|r| (r.cmd, r.slot)) {
            None => tracer.submit_with_scene_async("kiln gi update", passes),
            // SAFETY: forwarded from the caller.
            Some((cmd, slot)) => unsafe { tracer.record_with_scene(cmd, slot, "kiln gi update", passes) },
        }
    }

    /// The device's visibility from each of `probes` toward each of `dirs`:
    /// `[depth, depth^2]` over the clip distance, probe by probe
    /// (`probes.len() * dirs.len()` of them), bilinear over the bordered octahedral
    /// map decoded from the block table, as the update's bounce reads it. The CPU
    /// reference is `ProbeField::visibility_at`; a debug view of the probes can
    /// draw it.
    pub fn sample_visibility(
        &mut self,
        tracer: &mut RayTracer,
        field: &GpuProbeField,
        probes: &[u32],
        dirs: &[[f32; 3]],
    ) -> Result<Vec<[f32; 2]>, GpuError> {
        let bad = |what: String| Err(GpuError::InvalidInput(format!("gi visibility sample: {what}")));
        let n = dirs.len() as u32;
        if n == 0 || n > MAX_RAYS_PER_PROBE {
            return bad(format!("{n} directions is not in 1..={MAX_RAYS_PER_PROBE}"));
        }
        if let Some(d) = dirs.iter().find(|d| !(d.iter().all(|c| c.is_finite()) && d.iter().any(|&c| c != 0.0))) {
            return bad(format!("direction {d:?} is not a finite non-zero vector"));
        }
        let count = probes.len() as u32;
        if probes.len() > GiUpdater::max_probes_per_update(n) as usize {
            return bad(format!("{} probes of {n} directions exceed one batch", probes.len()));
        }
        if let Some(p) = probes.iter().find(|&&p| p >= field.probe_count) {
            return bad(format!("probe {p} of {}", field.probe_count));
        }
        if count == 0 {
            return Ok(Vec::new());
        }
        let items = count * n;
        self.ensure_scratch(tracer.gpu(), items, 0)?;
        let s = self.scratch.as_ref().expect("sized above");
        let p = GiUpdateParams {
            radiance: s.radiance.address(),
            dirs: s.dirs.address(),
            count,
            rays_per_probe: n,
            ..field_params(field, s.slots.address())
        };
        let dirs: Vec<[f32; 4]> = dirs.iter().map(|d| [d[0], d[1], d[2], 0.0]).collect();
        let push = GiUpdatePush { params: s.params.address() };
        let vis = &field.visibility;
        let reads =
            [&s.params, &s.dirs, &s.slots, &vis.live_mask, &vis.live_rank, &vis.numbers, &vis.entries, &vis.blocks];
        let mut uses: Vec<_> = reads.into_iter().map(Use::read).collect();
        uses.push(Use::write(&s.radiance));
        let kernel = &self.visibility_sample;
        tracer.gpu_mut().submit("kiln gi visibility sample", |rec| {
            rec.pass("gi visibility sample", |rec| {
                rec.upload(&s.params, 0, bytemuck::bytes_of(&p))?;
                rec.upload(&s.dirs, 0, bytemuck::cast_slice(&dirs))?;
                rec.upload(&s.slots, 0, bytemuck::cast_slice(probes))?;
                rec.dispatch_threads(kernel, &push, items, &uses)
            })
        })?;
        let out = tracer.gpu_mut().read::<[f32; 4]>(&s.radiance, items as usize)?;
        Ok(out.iter().map(|v| [v[0], v[1]]).collect())
    }

    fn ensure_scratch(&mut self, gpu: &Gpu, rays: u32, albedo: u32) -> Result<(), GpuError> {
        let fits = self.scratch.as_ref().is_some_and(|s| s.ray_capacity >= rays && s.albedo_capacity >= albedo);
        if fits {
            return Ok(());
        }
        let (old_rays, old_albedo) = self.scratch.as_ref().map_or((0, 0), |s| (s.ray_capacity, s.albedo_capacity));
        let ray_capacity = rays.max(old_rays).next_power_of_two().min(MAX_TRACE_BATCH as u32);
        let albedo_capacity = albedo.max(old_albedo).max(1).next_power_of_two();
        self.scratch = None;
        let r = u64::from(ray_capacity);
        let buffer = |name: &str, bytes: u64| gpu.buffer(name, bytes, BufferMemory::Device);
        self.scratch = Some(Scratch {
            rays: buffer("gi rays", 48 * r)?,
            hits: buffer("gi hits", 48 * r)?,
            shadow_rays: buffer("gi shadow rays", 48 * r)?,
            shadow_hits: buffer("gi shadow hits", 48 * r)?,
            radiance: buffer("gi radiance", 16 * r)?,
            dirs: buffer("gi directions", 16 * u64::from(MAX_RAYS_PER_PROBE))?,
            albedo: buffer("gi albedo", 16 * u64::from(albedo_capacity))?,
            slots: buffer("gi slots", 4 * r)?,
            params: buffer("gi update params", std::mem::size_of::<GiUpdateParams>() as u64)?,
            ray_capacity,
            albedo_capacity,
        });
        Ok(())
    }
}

/// The parameters that say where `field` lies on the device (its grid, placement,
/// irradiance and compressed visibility) and the update's probe slots; the rest
/// zero.
fn field_params(field: &GpuProbeField, slots: u64) -> GiUpdateParams {
    let (grid, vis) = (field.grid, &field.visibility);
    let offset = |i: usize| field.offsets.as_ref().map_or(0, |b| b[i].address());
    GiUpdateParams {
        slots,
        offset_mask: offset(0),
        offset_rank: offset(1),
        offset_codes: offset(2),
        mask: field.mask.address(),
        rank: field.rank.address(),
        irradiance: field.irradiance.address(),
        live_mask: vis.live_mask.address(),
        live_rank: vis.live_rank.address(),
        numbers: vis.numbers.address(),
        entries: vis.entries.address(),
        blocks: vis.blocks.address(),
        origin_x: grid.origin.x,
        origin_y: grid.origin.y,
        origin_z: grid.origin.z,
        spacing: grid.spacing,
        dims_x: grid.dims[0],
        dims_y: grid.dims[1],
        dims_z: grid.dims[2],
        clip: grid.clip_distance(),
        probe_count: field.probe_count,
        live_count: vis.live_count,
        index_layout: vis.index_layout,
        table_layout: vis.table_layout,
        ring: field.ring,
        ..GiUpdateParams::default()
    }
}

/// What `kiln_ddgi.glsl`'s `kiln_gi_irradiance` reads: where `field` lies, the
/// sampling bias, visibility weighting on.
pub(crate) fn sample_params(field: &GpuProbeField, bias: f32) -> GiUpdateParams {
    GiUpdateParams { bias, visibility: 1, ..field_params(field, 0) }
}

/// Refuses an update the kernels cannot run or that would store garbage.
fn check_update(
    field: &GpuProbeField,
    lighting: &GiLighting,
    params: &UpdateParams,
    probes: &[u32],
) -> Result<(), GpuError> {
    let bad = |what: String| Err(GpuError::InvalidInput(format!("gi update: {what}")));
    let n = params.rays_per_probe;
    if n == 0 || n > MAX_RAYS_PER_PROBE {
        return bad(format!("rays_per_probe {n} is not in 1..={MAX_RAYS_PER_PROBE}"));
    }
    if !(0.0..=1.0).contains(&params.hysteresis) {
        return bad(format!("hysteresis {} is not in [0, 1]", params.hysteresis));
    }
    if !(params.sample.bias.is_finite() && params.sample.bias >= 0.0) {
        return bad(format!("bias {} is not a finite value >= 0", params.sample.bias));
    }
    let max = GiUpdater::max_probes_per_update(n);
    if probes.len() > max as usize {
        return bad(format!("{} probes of {n} rays exceed one update's {max} probes", probes.len()));
    }
    if let Some(p) = probes.iter().find(|&&p| p >= field.probe_count) {
        return bad(format!("probe {p} of {}", field.probe_count));
    }
    let sun = lighting.sun_direction;
    let length2: f32 = sun.iter().map(|c| c * c).sum();
    if !(sun.iter().all(|c| c.is_finite()) && length2 > 0.0 && length2.is_finite()) {
        return bad(format!("sun direction {sun:?} is not a finite non-zero vector"));
    }
    let colours = [lighting.sun_irradiance, lighting.sky_radiance, lighting.default_albedo];
    if let Some(c) = colours.iter().chain(&lighting.albedo).find(|c| !c.iter().all(|x| x.is_finite() && *x >= 0.0)) {
        return bad(format!("colour {c:?} is not finite and >= 0"));
    }
    Ok(())
}
