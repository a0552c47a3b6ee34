//! [`Gpu`]: the context plus one command buffer, one fence, a staging ring and a
//! timestamp query pool. What a submission records is a [`Recorder`].
//!
//! ```text
//!  gpu.submit("frame", |rec| {           commands collected as a frame graph
//!      rec.upload(&buf, 0, bytes)?;      bytes -> staging ring; a copy command
//!      rec.pass("refit", |rec| {         debug label + timestamps around the pass
//!          rec.dispatch_threads(&kernel, &push, n, &[Use::write(&buf)])
//!      })?;
//!      rec.download(&buf, 0, len)        a copy into a read-back buffer
//!  })?;                                  replay with derived barriers, submit,
//!                                        wait on the fence, read timestamps
//!  gpu.last_timings()                    [("refit", 0.12 ms)]
//!  gpu.last_sync()                       barriers, hazards, covered hazards
//! ```
//!
//! The staging ring is one host-visible buffer that grows by doubling; everything in
//! it is consumed by the time `submit` returns (it waits on the fence), so the ring
//! restarts at offset 0 for every submission. A buffer outgrown in the middle of a
//! recording is kept alive until that submission completes.
//!
//! [`Gpu::submit_async`] submits without waiting, so the CPU works on while the GPU
//! runs (the integrated frame overlaps the next physics step with it); [`Gpu::wait`]
//! completes it. At most one submission is in flight: any later submission, read or
//! upload waits for it first.

use super::buffer::{BufferMemory, GpuBuffer};
use super::context::{DeviceInfo, EmbeddedDevice, GpuConfig, Shared, SharedRef};
use super::error::{GpuError, VkContext};
use super::kernel::Kernel;
use super::recorder::{Recorder, RecorderMemory, SyncStats, MAX_TIMED_PASSES};
use super::shaders::Shader;
use ash::vk;
use bytemuck::Pod;
use std::sync::Arc;

/// How long `submit` waits for the GPU before reporting a lost device (60 s:
/// lavapipe on two cores is slow, but not that slow).
const FENCE_TIMEOUT_NS: u64 = 60_000_000_000;

/// GPU time of one pass of the last submission.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GpuTiming {
    pub name: &'static str,
    pub milliseconds: f64,
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
    sync: SyncStats,
    lost: bool,
    /// Waits left before an injected device loss (see [`Gpu::lose_device_after`]).
    lose_after: Option<u32>,
    /// Embedded mode: one staging ring per frame slot, and what must outlive the
    /// engine's command buffers (see [`Gpu::record_into`]).
    slots: Vec<FrameSlot>,
    /// Values waiting for the slots in their mask (bit per slot) to be recorded again.
    graveyard: Vec<(Box<dyn Send>, u32)>,
    /// Whether a submission is in flight (see [`Gpu::submit_async`]); it keeps
    /// `retired` alive and its pass names in `memory` until its fence signals.
    pending: bool,
    retired: Vec<Arc<GpuBuffer>>,
    /// The recorder's lists and compiled graph, kept between submissions.
    memory: RecorderMemory,
    /// Timestamp read-back scratch.
    ticks: Vec<u64>,
    /// `vkQueueSubmit` calls so far ([`Gpu::submissions`]).
    submissions: u64,
}

/// How [`Gpu::wait`] found the submission in flight.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct GpuWait {
    /// Whether a submission was in flight.
    pub waited: bool,
    /// Milliseconds the calling thread blocked on the fence (0 when the GPU had
    /// finished while the CPU worked).
    pub blocked_ms: f64,
}

/// What one embedded frame slot keeps alive until its next recording.
#[derive(Default)]
struct FrameSlot {
    staging: Option<GpuBuffer>,
    /// Bytes of `staging` the recordings of the open frame need ([`Gpu::begin_frame`]).
    staging_used: u64,
    retired: Vec<Arc<GpuBuffer>>,
    /// Recorded at least once (so a command buffer may still be running).
    used: bool,
    /// Opened by [`Gpu::begin_frame`]: recordings accumulate until the next one.
    open: bool,
}

/// Slot `slot`'s earlier work completed: values deferred for it no longer wait on it.
fn release_slot(graveyard: &mut Vec<(Box<dyn Send>, u32)>, slot: u32) {
    graveyard.retain_mut(|(_, pending)| {
        *pending &= !(1 << slot);
        *pending != 0
    });
}

impl Gpu {
    /// Opens a standalone context. Errors: [`GpuError::NoLoader`] without a Vulkan
    /// loader, [`GpuError::NoDevice`] without a usable device.
    pub fn new(config: &GpuConfig) -> Result<Gpu, GpuError> {
        let shared = Arc::new(Shared::create(config)?);
        Gpu::with_shared(shared)
    }

    /// Opens a context on an engine's device (embedded mode); see
    /// [`EmbeddedDevice`]. Kiln creates only its own command pool, fence, query pool
    /// and buffers there. Errors: [`GpuError::NoDevice`] when the device lacks what
    /// Kiln needs, [`GpuError::InvalidInput`] for null handles, a bad queue or a bad
    /// frame count.
    ///
    /// # Safety
    /// The handles in `desc` are live, belong together and outlive the context; the
    /// device was created with the features [`EmbeddedDevice`] lists.
    pub unsafe fn embedded(desc: &EmbeddedDevice) -> Result<Gpu, GpuError> {
        if !(1..=8).contains(&desc.frames_in_flight) {
            return Err(GpuError::InvalidInput(format!(
                "embedded device: frames_in_flight is {}, expected 1..=8",
                desc.frames_in_flight
            )));
        }
        // SAFETY: forwarded from the caller.
        let shared = Arc::new(unsafe { Shared::import(desc) }?);
        let mut gpu = Gpu::with_shared(shared)?;
        gpu.slots = (0..desc.frames_in_flight).map(|_| FrameSlot::default()).collect();
        Ok(gpu)
    }

    /// Whether the context runs on an engine's device ([`Gpu::embedded`]).
    pub fn is_embedded(&self) -> bool {
        !self.shared.owned
    }

    /// Frame slots of an embedded context (0 standalone).
    pub fn frames_in_flight(&self) -> u32 {
        self.slots.len() as u32
    }

    /// Records the commands of `record` into the engine's `cmd` (recording, on the
    /// queue family given at creation) for frame slot `slot`, between Kiln's entry
    /// and exit barriers (see the module docs of `recorder.rs`). The engine submits
    /// `cmd` in recording order; read-backs are readable once it completed. The
    /// previous recording for `slot` must have completed: its staging memory is
    /// reused. No timestamps are written (the engine's profiler sees the labels).
    ///
    /// # Safety
    /// `cmd` is a command buffer of the engine's device in the recording state,
    /// outside a render pass, and the previous recording for `slot` has completed.
    pub unsafe fn record_into<R>(
        &mut self,
        cmd: vk::CommandBuffer,
        slot: u32,
        label: &'static str,
        record: impl FnOnce(&mut Recorder<'_>) -> Result<R, GpuError>,
    ) -> Result<R, GpuError> {
        if self.lost {
            return Err(GpuError::DeviceLost);
        }
        if cmd == vk::CommandBuffer::null() {
            return Err(GpuError::InvalidInput("record_into: the command buffer is null".into()));
        }
        let slots = self.slots.len();
        let Some(frame) = self.slots.get_mut(slot as usize) else {
            return Err(GpuError::InvalidInput(format!(
                "record_into: frame slot {slot} of {slots} (only an embedded context has slots)"
            )));
        };
        if !frame.open {
            // The previous recording for this slot completed: what it kept alive may go.
            frame.retired.clear();
            frame.staging_used = 0;
            release_slot(&mut self.graveyard, slot);
        }
        frame.used = true;
        let mut rec = Recorder::new(
            &self.shared,
            false,
            &mut frame.staging,
            frame.staging_used,
            &mut frame.retired,
            &mut self.memory,
        );
        rec.begin_label(label);
        let value = record(&mut rec);
        let used = rec.staging_used();
        let replayed = value.and_then(|value| {
            rec.end_label();
            rec.replay(cmd, vk::QueryPool::null(), vk::PipelineStageFlags::ALL_COMMANDS).map(|sync| (value, sync))
        });
        if frame.open {
            // Later recordings of this frame must not overwrite what this one staged.
            frame.staging_used = used;
        }
        let (value, sync) = replayed?;
        self.sync = sync;
        self.timings.clear();
        Ok(value)
    }

    /// Embedded mode: opens a frame for slot `slot`, whose previous command buffer
    /// has completed: what it kept alive may go, and every recording into the slot
    /// until the next `begin_frame` shares its staging memory without overwriting
    /// an earlier one's, so several recordings (a scene update, traces, the probes'
    /// update) may go into one frame's command buffers. Without it, each recording
    /// for a slot assumes the slot's previous recording completed.
    pub fn begin_frame(&mut self, slot: u32) -> Result<(), GpuError> {
        let slots = self.slots.len();
        let Some(frame) = self.slots.get_mut(slot as usize) else {
            return Err(GpuError::InvalidInput(format!(
                "begin_frame: frame slot {slot} of {slots} (only an embedded context has slots)"
            )));
        };
        frame.retired.clear();
        frame.staging_used = 0;
        frame.open = true;
        release_slot(&mut self.graveyard, slot);
        Ok(())
    }

    /// Drops `value` (buffers) once no command buffer recorded so far can use it:
    /// now when standalone (every submission was waited on); embedded, once every
    /// slot recorded before has been recorded again (its previous work completed).
    pub fn defer_drop(&mut self, value: impl Send + 'static) {
        let pending = self.slots.iter().enumerate().filter(|(_, s)| s.used).fold(0u32, |m, (i, _)| m | 1 << i);
        if pending != 0 {
            self.graveyard.push((Box::new(value), pending));
        }
    }

    /// Values [`Gpu::defer_drop`] still keeps.
    #[cfg(test)]
    pub(crate) fn deferred_count(&self) -> usize {
        self.graveyard.len()
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
            sync: SyncStats::default(),
            lost: false,
            lose_after: std::env::var("KILN_GPU_LOSE_AFTER").ok().and_then(|v| v.parse().ok()),
            slots: Vec::new(),
            graveyard: Vec::new(),
            pending: false,
            retired: Vec::new(),
            memory: RecorderMemory::default(),
            ticks: Vec::new(),
            submissions: 0,
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

    /// Bytes of device memory Kiln's buffers hold now (what
    /// [`GpuConfig::memory_budget`] limits).
    pub fn memory_in_use(&self) -> u64 {
        self.shared.in_use.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The memory budget ([`GpuConfig::memory_budget`]); `None`: no budget.
    pub fn memory_budget(&self) -> Option<u64> {
        Some(self.shared.budget.load(std::sync::atomic::Ordering::Relaxed)).filter(|&b| b != u64::MAX)
    }

    /// Changes the memory budget. Buffers already held stay; lowering the budget
    /// below what is in use only refuses new buffers.
    pub fn set_memory_budget(&self, budget: Option<u64>) {
        self.shared.budget.store(budget.unwrap_or(u64::MAX), std::sync::atomic::Ordering::Relaxed);
    }

    pub fn info(&self) -> &DeviceInfo {
        &self.shared.info
    }

    /// The ash device, for callers that record their own commands.
    pub fn device(&self) -> &ash::Device {
        &self.shared.device
    }

    /// The queue Kiln records for (on an engine's device, the engine's).
    pub fn queue(&self) -> vk::Queue {
        self.shared.queue
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

    /// Records the commands of `record` (see [`Recorder`]), replays them into the
    /// command buffer with the barriers the frame graph derives, submits, waits for
    /// completion and collects the pass timings. If `record` fails, nothing is
    /// submitted.
    pub fn submit<R>(
        &mut self,
        label: &'static str,
        record: impl FnOnce(&mut Recorder<'_>) -> Result<R, GpuError>,
    ) -> Result<R, GpuError> {
        let value = self.submit_async(label, record)?;
        self.wait()?;
        Ok(value)
    }

    /// As [`Gpu::submit`], but returns once the work is submitted: the GPU runs
    /// while the caller goes on. [`Gpu::wait`] completes it (and collects the pass
    /// timings); downloads in `R` are readable only after that. A submission still
    /// in flight is waited for first.
    ///
    /// Refused on an engine's device ([`Gpu::embedded`]): the queue is the engine's,
    /// which alone submits to it (Vulkan requires a queue's submissions to be
    /// externally synchronised), so everything Kiln does there is recorded into the
    /// engine's command buffers ([`Gpu::record_into`]).
    pub fn submit_async<R>(
        &mut self,
        label: &'static str,
        record: impl FnOnce(&mut Recorder<'_>) -> Result<R, GpuError>,
    ) -> Result<R, GpuError> {
        if self.is_embedded() {
            return Err(GpuError::InvalidInput(format!(
                "\"{label}\" would submit to the engine's queue: on an engine's device Kiln only records into \
                 the engine's command buffers (use the record_* calls)"
            )));
        }
        self.wait()?;
        if self.lost {
            return Err(GpuError::DeviceLost);
        }
        let timestamps = self.queries != vk::QueryPool::null();
        let mut rec =
            Recorder::new(&self.shared, timestamps, &mut self.staging, 0, &mut self.retired, &mut self.memory);
        rec.begin_label(label);
        let value = record(&mut rec)?;
        rec.end_label();
        let device = &self.shared.device;
        // SAFETY: the previous submission completed (we always wait), so the command
        // buffer is not pending; the query pool is not in use.
        unsafe {
            device.reset_command_buffer(self.cmd, vk::CommandBufferResetFlags::empty()).call("vkResetCommandBuffer")?;
            let begin = vk::CommandBufferBeginInfo::default().flags(vk::CommandBufferUsageFlags::ONE_TIME_SUBMIT);
            device.begin_command_buffer(self.cmd, &begin).call("vkBeginCommandBuffer")?;
            if timestamps {
                device.cmd_reset_query_pool(self.cmd, self.queries, 0, 2 * MAX_TIMED_PASSES);
            }
        }
        let replayed = rec.replay(self.cmd, self.queries, vk::PipelineStageFlags::HOST);
        // SAFETY: recording state; ending is always valid.
        let ended = unsafe { device.end_command_buffer(self.cmd) }.call("vkEndCommandBuffer");
        self.sync = replayed?;
        ended?;
        let cmds = [self.cmd];
        let submit = [vk::SubmitInfo::default().command_buffers(&cmds)];
        // SAFETY: the command buffer is executable, the fence unsignalled.
        let submitted = unsafe { device.queue_submit(self.shared.queue, &submit, self.fence) }.call("vkQueueSubmit");
        if let Err(err) = submitted {
            return Err(self.failed(err));
        }
        self.submissions += 1;
        self.pending = true;
        Ok(value)
    }

    /// The command buffers this context submitted on its queue so far: on an
    /// engine's device, what the engine did not record itself.
    pub fn submissions(&self) -> u64 {
        self.submissions
    }

    /// Waits for the submission in flight, if any, releases what it kept alive and
    /// collects its pass timings ([`Gpu::last_timings`]).
    pub fn wait(&mut self) -> Result<GpuWait, GpuError> {
        if !std::mem::take(&mut self.pending) {
            return Ok(GpuWait::default());
        }
        let device = &self.shared.device;
        let start = std::time::Instant::now();
        // SAFETY: the fence belongs to the submission in flight.
        let mut waited =
            unsafe { device.wait_for_fences(&[self.fence], true, FENCE_TIMEOUT_NS) }.call("vkWaitForFences");
        match self.lose_after {
            Some(0) => waited = Err(GpuError::DeviceLost),
            Some(n) => self.lose_after = Some(n - 1),
            None => {}
        }
        let blocked_ms = start.elapsed().as_secs_f64() * 1e3;
        // SAFETY: the fence is not in use once waited on (or the device is lost).
        let _ = unsafe { device.reset_fences(&[self.fence]) };
        self.retired.clear();
        if let Err(err) = waited {
            return Err(self.failed(err));
        }
        self.collect_timings()?;
        Ok(GpuWait { waited: true, blocked_ms })
    }

    /// Whether a submission is in flight.
    pub fn is_pending(&self) -> bool {
        self.pending
    }

    /// Frame graphs the recorder has compiled (one per change of a recording's shape).
    #[cfg(test)]
    pub(crate) fn graph_compiles(&self) -> u64 {
        self.memory.compiles
    }

    /// Creates a fence and never destroys it: the leak the teardown check must name.
    #[cfg(test)]
    pub(crate) fn leak_a_fence(&self) {
        // SAFETY: valid create info on a live device; the fence is left for the
        // validation layer to report at vkDestroyDevice.
        let _ = unsafe { self.shared.device.create_fence(&vk::FenceCreateInfo::default(), None) };
    }

    /// Makes the wait for the submission after the next `waits` ones report a lost
    /// device, as `vkWaitForFences` does when the GPU hangs or resets: the way to test
    /// what every later call does then (fail with [`GpuError::DeviceLost`]) and that
    /// the context can still be dropped and a new one made. `KILN_GPU_LOSE_AFTER=N` in
    /// the environment does the same for every context created (for C tests).
    pub fn lose_device_after(&mut self, waits: u32) {
        self.lose_after = Some(waits);
    }

    /// A failed submit or wait: a lost device (or a fence that never signals) makes
    /// every later call fail with [`GpuError::DeviceLost`].
    fn failed(&mut self, err: GpuError) -> GpuError {
        if matches!(err, GpuError::DeviceLost | GpuError::Vulkan { result: vk::Result::TIMEOUT, .. }) {
            self.lost = true;
            return GpuError::DeviceLost;
        }
        err
    }

    /// What the barriers of the last submission cost (see [`SyncStats`]).
    pub fn last_sync(&self) -> SyncStats {
        self.sync
    }

    fn collect_timings(&mut self) -> Result<(), GpuError> {
        self.timings.clear();
        let passes = &self.memory.passes;
        if self.queries == vk::QueryPool::null() || passes.is_empty() {
            return Ok(());
        }
        let ticks = &mut self.ticks;
        ticks.clear();
        ticks.resize(2 * passes.len(), 0);
        // SAFETY: the submission completed; these queries were written by it.
        unsafe {
            self.shared.device.get_query_pool_results(
                self.queries,
                0,
                ticks,
                vk::QueryResultFlags::TYPE_64 | vk::QueryResultFlags::WAIT,
            )
        }
        .call("vkGetQueryPoolResults")?;
        let period = self.shared.info.timestamp_period_ns as f64;
        for (i, name) in passes.iter().enumerate() {
            let delta = ticks[2 * i + 1].saturating_sub(ticks[2 * i]);
            self.timings.push(GpuTiming { name, milliseconds: delta as f64 * period * 1e-6 });
        }
        Ok(())
    }
}

impl Drop for Gpu {
    fn drop(&mut self) {
        let _ = self.wait();
        let device = &self.shared.device;
        // SAFETY: every submission of Kiln's own was waited on (embedded, the engine
        // finished the command buffers Kiln recorded into, per the contract); the
        // objects belong to this device.
        unsafe {
            if self.shared.owned {
                let _ = device.device_wait_idle();
            }
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
