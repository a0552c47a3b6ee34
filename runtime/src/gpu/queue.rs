//! [`Gpu`]: the context plus one command buffer, one fence, a staging ring and a
//! timestamp query pool; [`Recorder`]: what a submission may record.
//!
//! ```text
//!  gpu.submit("frame", |rec| {           one command buffer, begun
//!      rec.upload(&buf, 0, bytes)?;      bytes -> staging ring -> vkCmdCopyBuffer
//!      rec.pass("refit", |rec| {         debug label + timestamps around the pass
//!          rec.dispatch_threads(&kernel, &push, n)
//!      })?;
//!      rec.download(&buf, 0, len)        vkCmdCopyBuffer -> read-back buffer
//!  })?;                                  submit, wait on the fence, read timestamps
//!  gpu.last_timings()                    [("refit", 0.12 ms)]
//! ```
//!
//! The staging ring is one host-visible buffer that grows by doubling; everything in
//! it is consumed by the time `submit` returns (it waits on the fence), so the ring
//! restarts at offset 0 for every submission. A buffer outgrown in the middle of a
//! recording is kept alive until that submission completes.

use super::buffer::{BufferMemory, GpuBuffer};
use super::context::{DeviceInfo, GpuConfig, Shared, SharedRef};
use super::error::{GpuError, VkContext};
use super::kernel::Kernel;
use super::shaders::Shader;
use ash::vk;
use bytemuck::Pod;
use std::ffi::CString;
use std::sync::Arc;

/// Timestamp queries available per submission (two per pass).
const MAX_TIMED_PASSES: u32 = 64;
/// How long `submit` waits for the GPU before reporting a lost device (60 s:
/// lavapipe on two cores is slow, but not that slow).
const FENCE_TIMEOUT_NS: u64 = 60_000_000_000;
/// First staging ring size.
const STAGING_START: u64 = 1 << 20;

/// GPU time of one pass of the last submission.
#[derive(Clone, Debug, PartialEq)]
pub struct GpuTiming {
    pub name: String,
    pub milliseconds: f64,
}

/// A read-back slot filled by [`Recorder::download`], readable after the submission.
#[derive(Debug)]
pub struct Download {
    buffer: GpuBuffer,
    len: usize,
}

impl Download {
    /// The downloaded bytes (valid once the submission that recorded it returned).
    pub fn bytes(&self) -> &[u8] {
        self.buffer.mapped().map_or(&[], |bytes| &bytes[..self.len])
    }

    /// The downloaded data as `T`s (copied, so alignment does not matter).
    pub fn to_vec<T: Pod>(&self) -> Vec<T> {
        let bytes = self.bytes();
        let mut out = vec![T::zeroed(); bytes.len() / std::mem::size_of::<T>()];
        let len = out.len() * std::mem::size_of::<T>();
        bytemuck::cast_slice_mut::<T, u8>(&mut out).copy_from_slice(&bytes[..len]);
        out
    }
}

/// A Vulkan compute context (standalone mode): device, queue, allocator, one
/// command buffer with its fence, a staging ring, timestamps.
pub struct Gpu {
    shared: SharedRef,
    pool: vk::CommandPool,
    cmd: vk::CommandBuffer,
    fence: vk::Fence,
    queries: vk::QueryPool,
    staging: Option<GpuBuffer>,
    timings: Vec<GpuTiming>,
    lost: bool,
}

impl Gpu {
    /// Opens a standalone context. Errors: [`GpuError::NoLoader`] without a Vulkan
    /// loader, [`GpuError::NoDevice`] without a usable device.
    pub fn new(config: &GpuConfig) -> Result<Gpu, GpuError> {
        let shared = Arc::new(Shared::create(config)?);
        Gpu::with_shared(shared)
    }

    fn with_shared(shared: SharedRef) -> Result<Gpu, GpuError> {
        let device = &shared.device;
        let pool_info = vk::CommandPoolCreateInfo::default()
            .queue_family_index(shared.queue_family)
            .flags(vk::CommandPoolCreateFlags::RESET_COMMAND_BUFFER);
        // SAFETY: valid create info on a live device.
        let pool = unsafe { device.create_command_pool(&pool_info, None) }.call("vkCreateCommandPool")?;
        // From here `Gpu`'s Drop cleans up whatever was created.
        let mut gpu = Gpu {
            shared: shared.clone(),
            pool,
            cmd: vk::CommandBuffer::null(),
            fence: vk::Fence::null(),
            queries: vk::QueryPool::null(),
            staging: None,
            timings: Vec::new(),
            lost: false,
        };
        let alloc = vk::CommandBufferAllocateInfo::default()
            .command_pool(pool)
            .level(vk::CommandBufferLevel::PRIMARY)
            .command_buffer_count(1);
        // SAFETY: the pool is live.
        gpu.cmd = unsafe { device.allocate_command_buffers(&alloc) }.call("vkAllocateCommandBuffers")?[0];
        // SAFETY: valid create info.
        gpu.fence = unsafe { device.create_fence(&vk::FenceCreateInfo::default(), None) }.call("vkCreateFence")?;
        if shared.info.timestamps {
            let info = vk::QueryPoolCreateInfo::default()
                .query_type(vk::QueryType::TIMESTAMP)
                .query_count(2 * MAX_TIMED_PASSES);
            // SAFETY: valid create info.
            gpu.queries = unsafe { device.create_query_pool(&info, None) }.call("vkCreateQueryPool")?;
        }
        Ok(gpu)
    }

    pub fn info(&self) -> &DeviceInfo {
        &self.shared.info
    }

    /// The ash device, for callers that record their own commands.
    pub fn device(&self) -> &ash::Device {
        &self.shared.device
    }

    /// Validation-layer and driver warnings and errors collected since creation
    /// (empty unless [`GpuConfig::validation`] was set).
    pub fn validation_messages(&self) -> Vec<String> {
        self.shared.messages()
    }

    /// Per-pass GPU times of the last submission, in pass order.
    pub fn last_timings(&self) -> &[GpuTiming] {
        &self.timings
    }

    /// A new buffer of `size` bytes.
    pub fn buffer(&self, name: &str, size: u64, memory: BufferMemory) -> Result<GpuBuffer, GpuError> {
        GpuBuffer::new(&self.shared, name, size, memory)
    }

    /// A device buffer holding `data` (at least 4 bytes, so empty inputs still get a
    /// valid address).
    pub fn buffer_from<T: Pod>(&mut self, name: &str, data: &[T]) -> Result<GpuBuffer, GpuError> {
        let bytes: &[u8] = bytemuck::cast_slice(data);
        let buffer = self.buffer(name, (bytes.len() as u64).max(4), BufferMemory::Device)?;
        if !bytes.is_empty() {
            self.submit("upload", |rec| rec.upload(&buffer, 0, bytes))?;
        }
        Ok(buffer)
    }

    /// Reads `count` elements of `T` from the start of `buffer`.
    pub fn read<T: Pod>(&mut self, buffer: &GpuBuffer, count: usize) -> Result<Vec<T>, GpuError> {
        let len = (count * std::mem::size_of::<T>()) as u64;
        let download = self.submit("read", |rec| rec.download(buffer, 0, len))?;
        Ok(download.to_vec())
    }

    pub(crate) fn kernel(&self, shader: &Shader) -> Result<Kernel, GpuError> {
        Kernel::new(&self.shared, shader)
    }

    /// Records a command buffer with `record`, submits it, waits for completion and
    /// collects the pass timings. If `record` fails, nothing is submitted.
    pub fn submit<R>(
        &mut self,
        label: &str,
        record: impl FnOnce(&mut Recorder<'_>) -> Result<R, GpuError>,
    ) -> Result<R, GpuError> {
        if self.lost {
            return Err(GpuError::DeviceLost);
        }
        let device = &self.shared.device;
        // SAFETY: the previous submission completed (we always wait), so the command
        // buffer is not pending; the query pool is not in use.
        unsafe {
            device.reset_command_buffer(self.cmd, vk::CommandBufferResetFlags::empty()).call("vkResetCommandBuffer")?;
            let begin = vk::CommandBufferBeginInfo::default().flags(vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT);
            device.begin_command_buffer(self.cmd, &begin).call("vkBeginCommandBuffer")?;
            if self.queries != vk::QueryPool::null() {
                device.reset_query_pool(self.queries, 0, 2 * MAX_TIMED_PASSES);
            }
        }
        let mut rec = Recorder {
            shared: &self.shared,
            cmd: self.cmd,
            queries: self.queries,
            staging: &mut self.staging,
            staging_used: 0,
            retired: Vec::new(),
            passes: Vec::new(),
        };
        rec.begin_label(label);
        let result = record(&mut rec);
        rec.end_label();
        let Recorder { passes, retired, .. } = rec;
        // SAFETY: recording state; ending is always valid.
        let ended = unsafe { device.end_command_buffer(self.cmd) }.call("vkEndCommandBuffer");
        let value = result?;
        ended?;
        let cmds = [self.cmd];
        let submit = [vk::SubmitInfo::default().command_buffers(&cmds)];
        // SAFETY: the command buffer is executable, the fence unsignalled.
        let waited = unsafe {
            device
                .queue_submit(self.shared.queue, &submit, self.fence)
                .call("vkQueueSubmit")
                .and_then(|_| device.wait_for_fences(&[self.fence], true, FENCE_TIMEOUT_NS).call("vkWaitForFences"))
        };
        // SAFETY: the fence is not in use once waited on (or the device is lost).
        let _ = unsafe { device.reset_fences(&[self.fence]) };
        drop(retired);
        if let Err(err) = waited {
            if matches!(err, GpuError::DeviceLost | GpuError::Vulkan { result: vk::Result::TIMEOUT, .. }) {
                self.lost = true;
                return Err(GpuError::DeviceLost);
            }
            return Err(err);
        }
        self.collect_timings(&passes)?;
        Ok(value)
    }

    fn collect_timings(&mut self, passes: &[String]) -> Result<(), GpuError> {
        self.timings.clear();
        if self.queries == vk::QueryPool::null() || passes.is_empty() {
            return Ok(());
        }
        let mut ticks = vec![0u64; 2 * passes.len()];
        // SAFETY: the submission completed; these queries were written by it.
        unsafe {
            self.shared.device.get_query_pool_results(
                self.queries,
                0,
                &mut ticks,
                vk::QueryResultFlags::TYPE_64 | vk::QueryResultFlags::WAIT,
            )
        }
        .call("vkGetQueryPoolResults")?;
        let period = self.shared.info.timestamp_period_ns as f64;
        for (i, name) in passes.iter().enumerate() {
            let delta = ticks[2 * i + 1].saturating_sub(ticks[2 * i]);
            self.timings.push(GpuTiming { name: name.clone(), milliseconds: delta as f64 * period * 1e-6 });
        }
        Ok(())
    }
}

impl Drop for Gpu {
    fn drop(&mut self) {
        let device = &self.shared.device;
        // SAFETY: every submission was waited on; the objects belong to this device.
        unsafe {
            let _ = device.device_wait_idle();
            if self.queries != vk::QueryPool::null() {
                device.destroy_query_pool(self.queries, None);
            }
            if self.fence != vk::Fence::null() {
                device.destroy_fence(self.fence, None);
            }
            device.destroy_command_pool(self.pool, None);
        }
        self.staging = None;
    }
}

/// Records one submission. Borrowed from [`Gpu::submit`].
pub struct Recorder<'a> {
    shared: &'a SharedRef,
    cmd: vk::CommandBuffer,
    queries: vk::QueryPool,
    staging: &'a mut Option<GpuBuffer>,
    staging_used: u64,
    retired: Vec<GpuBuffer>,
    passes: Vec<String>,
}

impl Recorder<'_> {
    /// The raw command buffer, for callers that record their own commands.
    pub fn command_buffer(&self) -> vk::CommandBuffer {
        self.cmd
    }

    /// Copies `bytes` into `dst` at `offset` through the staging ring. The copy is
    /// followed by a barrier, so later dispatches see the data.
    pub fn upload(&mut self, dst: &GpuBuffer, offset: u64, bytes: &[u8]) -> Result<(), GpuError> {
        dst.check_range("upload", offset, bytes.len() as u64)?;
        if bytes.is_empty() {
            return Ok(());
        }
        let len = bytes.len() as u64;
        let start = self.staging_used.next_multiple_of(16);
        let needed = start + len;
        let capacity = self.staging.as_ref().map_or(0, |s| s.size());
        let start = if needed > capacity {
            let size = needed.max(STAGING_START).next_power_of_two().max(capacity * 2);
            let new = GpuBuffer::new(self.shared, "kiln staging ring", size, BufferMemory::Upload)?;
            if let Some(old) = self.staging.replace(new) {
                self.retired.push(old);
            }
            0
        } else {
            start
        };
        let staging = self.staging.as_mut().expect("staging ring present");
        let Some(mapped) = staging.mapped_mut() else {
            return Err(GpuError::InvalidInput("staging ring is not host-visible".into()));
        };
        mapped[start as usize..(start + len) as usize].copy_from_slice(bytes);
        self.staging_used = start + len;
        let region = [vk::BufferCopy { src_offset: start, dst_offset: offset, size: len }];
        // SAFETY: both buffers are live and large enough (checked above).
        unsafe { self.shared.device.cmd_copy_buffer(self.cmd, staging.buffer, dst.buffer, &region) };
        self.barrier();
        Ok(())
    }

    /// Copies `len` bytes of `src` from `offset` into a new read-back buffer.
    pub fn download(&mut self, src: &GpuBuffer, offset: u64, len: u64) -> Result<Download, GpuError> {
        src.check_range("download", offset, len)?;
        let buffer = GpuBuffer::new(self.shared, "kiln read-back", len.max(4), BufferMemory::Readback)?;
        self.barrier();
        if len > 0 {
            let region = [vk::BufferCopy { src_offset: offset, dst_offset: 0, size: len }];
            // SAFETY: both buffers are live; the range was checked.
            unsafe { self.shared.device.cmd_copy_buffer(self.cmd, src.buffer, buffer.buffer, &region) };
        }
        let barrier = [vk::MemoryBarrier::default()
            .src_access_mask(vk::AccessFlags::TRANSFER_WRITE)
            .dst_access_mask(vk::AccessFlags::HOST_READ)];
        // SAFETY: a plain memory barrier in a recording command buffer.
        unsafe {
            self.shared.device.cmd_pipeline_barrier(
                self.cmd,
                vk::PipelineStageFlags::TRANSFER,
                vk::PipelineStageFlags::HOST,
                vk::DependencyFlags::empty(),
                &barrier,
                &[],
                &[],
            )
        };
        Ok(Download { buffer, len: len as usize })
    }

    /// Fills `buffer` with the 32-bit `value`, followed by a barrier.
    pub fn fill(&mut self, buffer: &GpuBuffer, value: u32) {
        // SAFETY: whole-buffer fill of a live TRANSFER_DST buffer (sizes are multiples
        // of 4 or VK_WHOLE_SIZE rounds down).
        unsafe { self.shared.device.cmd_fill_buffer(self.cmd, buffer.buffer, 0, vk::WHOLE_SIZE, value) };
        self.barrier();
    }

    /// Copies `len` bytes between device buffers, followed by a barrier.
    pub fn copy(
        &mut self,
        src: &GpuBuffer,
        src_offset: u64,
        dst: &GpuBuffer,
        dst_offset: u64,
        len: u64,
    ) -> Result<(), GpuError> {
        src.check_range("copy source", src_offset, len)?;
        dst.check_range("copy destination", dst_offset, len)?;
        if len > 0 {
            let region = [vk::BufferCopy { src_offset, dst_offset, size: len }];
            // SAFETY: live buffers, checked ranges.
            unsafe { self.shared.device.cmd_copy_buffer(self.cmd, src.buffer, dst.buffer, &region) };
            self.barrier();
        }
        Ok(())
    }

    /// Dispatches `kernel` over `threads` invocations (rounded up to whole groups);
    /// `push` must be the kernel's push-constant struct. Followed by a barrier.
    pub fn dispatch_threads<P: Pod>(&mut self, kernel: &Kernel, push: &P, threads: u32) -> Result<(), GpuError> {
        let groups = threads.div_ceil(kernel.local_size);
        self.dispatch(kernel, push, [groups, 1, 1])
    }

    /// Dispatches `kernel` with explicit group counts, followed by a barrier.
    pub fn dispatch<P: Pod>(&mut self, kernel: &Kernel, push: &P, groups: [u32; 3]) -> Result<(), GpuError> {
        let bytes = bytemuck::bytes_of(push);
        if bytes.len() as u32 != kernel.push_bytes {
            return Err(GpuError::InvalidInput(format!(
                "kernel '{}' takes {} push-constant bytes, got {}",
                kernel.name,
                kernel.push_bytes,
                bytes.len()
            )));
        }
        let max = self.shared.info.max_group_count;
        if groups.iter().zip(max).any(|(&g, m)| g > m) {
            return Err(GpuError::InvalidInput(format!(
                "kernel '{}': {groups:?} groups exceed the device limit {max:?}",
                kernel.name
            )));
        }
        if groups.contains(&0) {
            return Ok(());
        }
        let device = &self.shared.device;
        // SAFETY: the pipeline and layout are live; the push size matches the layout.
        unsafe {
            device.cmd_bind_pipeline(self.cmd, vk::PipelineBindPoint::COMPUTE, kernel.pipeline);
            device.cmd_push_constants(self.cmd, kernel.layout, vk::ShaderStageFlags::COMPUTE, 0, bytes);
            device.cmd_dispatch(self.cmd, groups[0], groups[1], groups[2]);
        }
        self.barrier();
        Ok(())
    }

    /// Runs `body` as a named pass: a debug label (RenderDoc, Nsight) and a pair of
    /// timestamps around it, reported by [`Gpu::last_timings`].
    pub fn pass<R>(&mut self, name: &str, body: impl FnOnce(&mut Self) -> Result<R, GpuError>) -> Result<R, GpuError> {
        let index = self.passes.len() as u32;
        let timed = self.queries != vk::QueryPool::null() && index < MAX_TIMED_PASSES;
        self.begin_label(name);
        if timed {
            // SAFETY: the query was reset at the start of this command buffer.
            unsafe {
                self.shared.device.cmd_write_timestamp(
                    self.cmd,
                    vk::PipelineStageFlags::TOP_OF_PIPE,
                    self.queries,
                    2 * index,
                )
            };
        }
        let result = body(self);
        if timed {
            // SAFETY: as above.
            unsafe {
                self.shared.device.cmd_write_timestamp(
                    self.cmd,
                    vk::PipelineStageFlags::BOTTOM_OF_PIPE,
                    self.queries,
                    2 * index + 1,
                )
            };
            self.passes.push(name.to_owned());
        }
        self.end_label();
        result
    }

    /// A full compute/transfer memory barrier: everything before is complete and
    /// visible to everything after.
    pub fn barrier(&mut self) {
        let stages = vk::PipelineStageFlags::COMPUTE_SHADER | vk::PipelineStageFlags::TRANSFER;
        let barrier = [vk::MemoryBarrier::default()
            .src_access_mask(vk::AccessFlags::SHADER_WRITE | vk::AccessFlags::TRANSFER_WRITE)
            .dst_access_mask(
                vk::AccessFlags::SHADER_READ
                    | vk::AccessFlags::SHADER_WRITE
                    | vk::AccessFlags::TRANSFER_READ
                    | vk::AccessFlags::TRANSFER_WRITE,
            )];
        // SAFETY: a plain memory barrier in a recording command buffer.
        unsafe {
            self.shared.device.cmd_pipeline_barrier(
                self.cmd,
                stages,
                stages,
                vk::DependencyFlags::empty(),
                &barrier,
                &[],
                &[],
            )
        };
    }

    fn begin_label(&self, name: &str) {
        let Some(debug) = &self.shared.debug_utils else { return };
        let name = CString::new(name.replace('\0', " ")).unwrap_or_default();
        let label = vk::DebugUtilsLabelEXT::default().label_name(&name);
        // SAFETY: recording command buffer; the label outlives the call.
        unsafe { debug.cmd_begin_debug_utils_label(self.cmd, &label) };
    }

    fn end_label(&self) {
        if let Some(debug) = &self.shared.debug_utils {
            // SAFETY: paired with `begin_label`, which always opens a label when
            // `debug_utils` is present.
            unsafe { debug.cmd_end_debug_utils_label(self.cmd) };
        }
    }
}
