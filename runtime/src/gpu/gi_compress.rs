//! Visibility compression on the GPU (`gi_compress_match.comp`,
//! `gi_compress_append.comp`), the kernels of `gi/compress.rs`.
//!
//! ```text
//!  per batch of <= 256 maps (order[first..first + count]):
//!    match   4 count workgroups x 64, one per quadrant: dead test, window scan,
//!            newest match or "fresh"
//!    append  1 workgroup: scan of the 4 count fresh flags, new blocks in batch and
//!            quadrant order, count += n
//! ```
//!
//! The block count lives on the device, so batches chain inside one submission
//! without the CPU. Comparisons are exact float operations on the same inputs as the
//! CPU reference and the half packing is integer code, so for the same maps and
//! order the output equals `gi::compress` bit for bit (tested).

use super::buffer::{BufferMemory, GpuBuffer};
use super::error::GpuError;
use super::kernel::Kernel;
use super::layout::GiCompressPush;
use super::queue::Gpu;
use super::recorder::{Download, Recorder, Use};
use super::shaders;
use crate::gi::compress::{
    blocks_from_words, Block, CompressParams, CompressedVisibility, ProbeOrder, BLOCK_WORDS, QUADRANTS,
};
use crate::gi::OCT_TEXELS;

/// Largest batch the append kernel handles (one workgroup).
pub const MAX_COMPRESS_BATCH: usize = 256;

/// Most probes a [`GpuVisibility`] holds: a block number (at most one per
/// quadrant) shifted left by one must fit in a signed 32-bit int on the device.
pub const MAX_COMPRESS_PROBES: u32 = (1 << 28) - 1;

/// The compressor's kernels.
pub struct GiCompressor {
    matcher: Kernel,
    append: Kernel,
}

/// Device buffers of one compression: the uncompressed maps in (2 KiB per probe),
/// 4-byte entries and room for a block per quadrant out. A working set: what a
/// probe field keeps is the compact copy ([`super::DeviceVisibility`]).
pub struct GpuVisibility {
    /// `vec2[256 * probes]`: the uncompressed maps.
    pub maps: GpuBuffer,
    order: GpuBuffer,
    pub block_index: GpuBuffer,
    pub blocks: GpuBuffer,
    means: GpuBuffer,
    state: GpuBuffer,
    fresh: GpuBuffer,
    pub probe_count: u32,
}

impl GpuVisibility {
    /// Buffers for `probe_count` probes (room for a block per quadrant).
    pub fn new(gpu: &Gpu, probe_count: u32) -> Result<GpuVisibility, GpuError> {
        if probe_count > MAX_COMPRESS_PROBES {
            // gi_compress_match packs a block and its transpose bit as `block << 1 |
            // transposed` in an int.
            return Err(GpuError::InvalidInput(format!(
                "visibility of {probe_count} probes (at most {MAX_COMPRESS_PROBES})"
            )));
        }
        let n = u64::from(probe_count.max(1));
        let quadrants = n * QUADRANTS as u64;
        let block_bytes = std::mem::size_of::<Block>() as u64;
        Ok(GpuVisibility {
            maps: gpu.buffer("gi visibility maps", n * OCT_TEXELS as u64 * 8, BufferMemory::Device)?,
            order: gpu.buffer("gi compress order", n * 4, BufferMemory::Device)?,
            block_index: gpu.buffer("gi block index", quadrants * 4, BufferMemory::Device)?,
            blocks: gpu.buffer("gi blocks", quadrants * block_bytes, BufferMemory::Device)?,
            means: gpu.buffer("gi block means", quadrants * 8, BufferMemory::Device)?,
            state: gpu.buffer("gi compress state", 16, BufferMemory::Device)?,
            fresh: gpu.buffer(
                "gi compress flags",
                (MAX_COMPRESS_BATCH * QUADRANTS) as u64 * 4,
                BufferMemory::Device,
            )?,
            probe_count,
        })
    }

    /// Reads the result back (submissions for the block count, then the data), kept
    /// as [`CompressedVisibility::from_entries`] keeps it.
    pub fn read(&self, gpu: &mut Gpu) -> Result<CompressedVisibility, GpuError> {
        // At most a block per quadrant; the clamp also covers buffers never
        // compressed into.
        let quadrants = self.probe_count as usize * QUADRANTS;
        let count = (gpu.read::<u32>(&self.state, 1)?[0] as usize).min(quadrants);
        let block_index = gpu.read::<u32>(&self.block_index, quadrants)?;
        let words = gpu.read::<u32>(&self.blocks, count * BLOCK_WORDS)?;
        let blocks = blocks_from_words(&words);
        Ok(CompressedVisibility::from_entries(&block_index, blocks))
    }
}

/// A compression's result read back inside a recording ([`GpuVisibility::record_read`]).
pub struct VisibilityDownload {
    state: Download,
    block_index: Download,
    blocks: Download,
    quadrants: usize,
}

impl VisibilityDownload {
    /// The result, once the recording's submission completed: as
    /// [`GpuVisibility::read`] returns it.
    pub fn finish(&self) -> CompressedVisibility {
        let count = (self.state.to_vec::<u32>()[0] as usize).min(self.quadrants);
        let block_index = self.block_index.to_vec::<u32>();
        let words = self.blocks.to_vec::<u32>();
        CompressedVisibility::from_entries(&block_index, blocks_from_words(&words[..count * BLOCK_WORDS]))
    }
}

impl GpuVisibility {
    /// Records the read-back of the result (after the compression in the same
    /// recording): the block count, the entries and room for every block (the
    /// count is not known while recording).
    pub fn record_read(&self, rec: &mut Recorder<'_>) -> Result<VisibilityDownload, GpuError> {
        let quadrants = self.probe_count as usize * QUADRANTS;
        let block_bytes = std::mem::size_of::<Block>() as u64;
        Ok(VisibilityDownload {
            state: rec.download(&self.state, 0, 4)?,
            block_index: rec.download(&self.block_index, 0, 4 * quadrants.max(1) as u64)?,
            blocks: rec.download(&self.blocks, 0, block_bytes * quadrants.max(1) as u64)?,
            quadrants,
        })
    }
}

impl GiCompressor {
    pub fn new(gpu: &Gpu) -> Result<GiCompressor, GpuError> {
        Ok(GiCompressor {
            matcher: gpu.kernel(&shaders::GI_COMPRESS_MATCH)?,
            append: gpu.kernel(&shaders::GI_COMPRESS_APPEND)?,
        })
    }

    /// Records the compression of `vis.maps` in `order` (uploaded here), starting
    /// from an empty dictionary.
    pub fn record(
        &self,
        rec: &mut Recorder<'_>,
        vis: &GpuVisibility,
        order: &ProbeOrder,
        params: &CompressParams,
    ) -> Result<(), GpuError> {
        if order.order.len() != vis.probe_count as usize {
            return Err(GpuError::InvalidInput(format!(
                "compress: the order has {} probes, the buffers {}",
                order.order.len(),
                vis.probe_count
            )));
        }
        if let Some(b) = (0..order.batch_count()).find(|&b| order.batch(b).len() > MAX_COMPRESS_BATCH) {
            return Err(GpuError::InvalidInput(format!(
                "compress: batch {b} holds {} maps (at most {MAX_COMPRESS_BATCH})",
                order.batch(b).len()
            )));
        }
        if !(params.tolerance.is_finite() && params.tolerance >= 0.0) {
            return Err(GpuError::InvalidInput(format!(
                "compress: tolerance {} is not a finite value >= 0",
                params.tolerance
            )));
        }
        if vis.probe_count == 0 {
            return Ok(());
        }
        rec.upload(&vis.order, 0, bytemuck::cast_slice(&order.order))?;
        rec.fill(&vis.state, 0);
        let mut push = GiCompressPush {
            maps: vis.maps.address(),
            order: vis.order.address(),
            block_index: vis.block_index.address(),
            blocks: vis.blocks.address(),
            means: vis.means.address(),
            state: vis.state.address(),
            fresh: vis.fresh.address(),
            first: 0,
            count: 0,
            window: params.window,
            tolerance: params.tolerance,
        };
        let uses = [
            Use::read(&vis.maps),
            Use::read(&vis.order),
            Use::write(&vis.block_index),
            Use::write(&vis.blocks),
            Use::write(&vis.means),
            Use::write(&vis.state),
            Use::write(&vis.fresh),
        ];
        for b in 0..order.batch_count() {
            push.first = order.batches[b];
            push.count = order.batch(b).len() as u32;
            if push.count == 0 {
                continue;
            }
            rec.dispatch(&self.matcher, &push, [push.count * QUADRANTS as u32, 1, 1], &uses)?;
            rec.dispatch(&self.append, &push, [1, 1, 1], &uses)?;
        }
        Ok(())
    }
}
