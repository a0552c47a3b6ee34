//! [`Recorder`]: what one submission records, kept as a frame graph of GPU commands
//! whose computed hazards become the barriers.
//!
//! ```text
//!  rec.upload(&a, 0, bytes)                           copy      writes a (transfer)
//!  rec.dispatch_threads(&k1, &p, n, &[Use::read(&a), Use::write(&b)])
//!  rec.dispatch_threads(&k2, &p, n, &[Use::read(&a), Use::write(&c)])
//!  rec.download(&b, 0, len)                           copy      reads b (transfer)
//!        │  every command is a GPU pass of a FrameGraph, every buffer a resource;
//!        ▼  compile() lists, per command, the hazards it waits on (RAW, WAR, WAW)
//!  replay into the command buffer:
//!    entry barrier                  the graph's across-frame edges (earlier work)
//!    copy -> a
//!    barrier  a: transfer write -> shader read               RAW
//!    dispatch k1
//!    dispatch k2                    a is already visible to shaders: no barrier
//!    barrier  b: shader write -> transfer read               RAW
//!    copy b -> read-back
//!    exit barrier                   transfer write -> host read (read-backs)
//! ```
//!
//! Kernels reach buffers only through device addresses in their push constants, so
//! Vulkan cannot see what they touch: each dispatch declares with [`Use`] every
//! buffer its push constants point into (one it is handed but does not touch, as a
//! read), and that declaration is the whole contract. With validation on, a push
//! constant pointing into a live buffer that was not declared is reported in the
//! validation log, which the GPU tests require to be empty. Copies, fills, uploads
//! and read-backs declare their buffers themselves. No kernel and no pass inserts
//! a barrier.
//!
//! Granularity is the whole buffer (a kernel writing one slice of a shared array
//! waits like one writing all of it). A barrier is skipped when an earlier one
//! already made the same write visible to the same stage and access. Two dispatches
//! with no hazard between them get no barrier, so the device may overlap them.
//!
//! Commands are replayed at the end of the submission (or when an engine asks for
//! them in its own command buffer), so the graph is complete before the first
//! barrier is chosen. Uploads copy their bytes into the staging ring immediately.
//!
//! A frame records the same commands over the same buffers every time, so the graph
//! is built from the recording's *shape* (per command its usage and the buffers it
//! reads and writes, buffers numbered by first use) and compiled only when the shape
//! differs from the last submission's. With the lists kept in [`RecorderMemory`]
//! between submissions, a steady frame records and replays without a heap allocation.

use super::buffer::{BufferMemory, GpuBuffer};
use super::context::SharedRef;
use super::error::GpuError;
use super::kernel::Kernel;
use crate::frame::{AccessPoint, CompiledGraph, FrameGraph, Hazard, Mode, PassId, Queue, ResourceId, Usage};
use ash::vk;
use bytemuck::Pod;
use std::ffi::CStr;
use std::sync::Arc;

/// Timestamp queries available per submission (two per pass).
pub(crate) const MAX_TIMED_PASSES: u32 = 64;
/// First staging ring size.
const STAGING_START: u64 = 1 << 20;

/// How a dispatch uses a buffer: the frame graph derives every barrier from these.
#[derive(Clone, Copy, Debug)]
pub struct Use<'b> {
    buffer: &'b GpuBuffer,
    mode: Mode,
}

impl<'b> Use<'b> {
    /// The kernel only reads `buffer`.
    pub fn read(buffer: &'b GpuBuffer) -> Use<'b> {
        Use { buffer, mode: Mode::Read }
    }

    /// The kernel writes `buffer` (and may read it: atomics, in-place updates).
    pub fn write(buffer: &'b GpuBuffer) -> Use<'b> {
        Use { buffer, mode: Mode::Write }
    }
}

/// A read-back slot filled by [`Recorder::download`], readable after the submission.
/// The buffer is shared with the recorder, which keeps it alive until the command
/// buffer completed even when the `Download` is dropped first.
#[derive(Debug)]
pub struct Download {
    buffer: Arc<GpuBuffer>,
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

/// What the barriers of one replay cost, for tests and the profile.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SyncStats {
    /// Commands recorded (dispatches, copies, fills).
    pub commands: u32,
    /// `vkCmdPipelineBarrier` calls, the entry and exit barriers included.
    pub barriers: u32,
    /// Buffer memory barriers inside them.
    pub buffer_barriers: u32,
    /// Hazards the graph reported inside the submission.
    pub hazards: u32,
    /// Of those, hazards an earlier barrier already covered.
    pub covered: u32,
}

/// Raw commands from a caller (tests, engines); declared like any other command.
type RawFn = Box<dyn FnOnce(&ash::Device, vk::CommandBuffer) + Send>;

enum Op {
    /// `push` is a range of [`RecorderMemory::push`].
    Dispatch {
        pipeline: vk::Pipeline,
        layout: vk::PipelineLayout,
        push: (u32, u32),
        groups: [u32; 3],
    },
    Copy {
        src: vk::Buffer,
        dst: vk::Buffer,
        region: vk::BufferCopy,
    },
    Fill {
        buffer: vk::Buffer,
        value: u32,
    },
    Raw(RawFn),
}

enum Command {
    /// The next pass of the graph.
    Op(Op),
    BeginLabel(&'static str),
    EndLabel,
    Timestamp(vk::PipelineStageFlags, u32),
}

/// What decides a recording's hazards: per command its usage and the end of its
/// uses in `uses`; the uses as (buffer by first use, mode); the number of buffers.
#[derive(Clone, Debug, Default, PartialEq)]
struct Shape {
    ops: Vec<(Usage, u32)>,
    uses: Vec<(u32, Mode)>,
    buffers: u32,
}

impl Shape {
    fn clear(&mut self) {
        self.ops.clear();
        self.uses.clear();
        self.buffers = 0;
    }

    /// Every command as a GPU pass of a frame graph, every buffer a resource.
    fn graph(&self) -> FrameGraph {
        let mut graph = FrameGraph::new();
        let ids: Vec<ResourceId> = (0..self.buffers).map(|i| graph.resource(&format!("buffer {i}"), ()).id()).collect();
        let mut start = 0;
        for (i, &(usage, end)) in self.ops.iter().enumerate() {
            let mut pass = graph.pass(&format!("command {i}")).queue(Queue::Gpu);
            for &(buffer, mode) in &self.uses[start..end as usize] {
                pass = pass.access(ids[buffer as usize], mode, usage);
            }
            pass.run(|_| Ok(()));
            start = end as usize;
        }
        graph
    }
}

/// What a [`Recorder`] keeps between submissions, so that a steady frame allocates
/// nothing: its lists (cleared, never freed) and the last compiled graph with the
/// shape it was compiled for.
#[derive(Default)]
pub(crate) struct RecorderMemory {
    /// Names of the timed passes, in query order (read when the submission's
    /// timestamps are collected).
    pub passes: Vec<&'static str>,
    /// Buffer `i` of the shape.
    buffers: Vec<vk::Buffer>,
    commands: Vec<Command>,
    /// Push constants of the recorded dispatches, back to back.
    push: Vec<u8>,
    shape: Shape,
    compiled: Option<(Shape, CompiledGraph)>,
    /// Graphs compiled so far (a recording of a new shape compiles one).
    pub compiles: u64,
    /// Replay scratch: per buffer the stages and accesses its last write is visible
    /// to; one barrier's buffer barriers; a label with its terminating zero.
    visible: Vec<(vk::PipelineStageFlags, vk::AccessFlags)>,
    barriers: Vec<vk::BufferMemoryBarrier<'static>>,
    label: Vec<u8>,
}

/// Records one submission. Borrowed from [`Gpu::submit`](super::Gpu::submit).
pub struct Recorder<'a> {
    shared: &'a SharedRef,
    timestamps: bool,
    staging: &'a mut Option<GpuBuffer>,
    staging_used: u64,
    /// Staging rings outgrown during this recording and the read-back buffers:
    /// alive until the command buffer completed.
    retired: &'a mut Vec<Arc<GpuBuffer>>,
    memory: &'a mut RecorderMemory,
    downloads: bool,
}

impl<'a> Recorder<'a> {
    /// A recorder that writes into `memory` (its last recording is forgotten) and
    /// keeps what must outlive the command buffer in `retired`.
    /// `staging_used`: bytes of the staging ring earlier recordings of the same
    /// command buffer (or frame) still need.
    pub(crate) fn new(
        shared: &'a SharedRef,
        timestamps: bool,
        staging: &'a mut Option<GpuBuffer>,
        staging_used: u64,
        retired: &'a mut Vec<Arc<GpuBuffer>>,
        memory: &'a mut RecorderMemory,
    ) -> Recorder<'a> {
        memory.passes.clear();
        memory.buffers.clear();
        memory.commands.clear();
        memory.push.clear();
        memory.shape.clear();
        Recorder { shared, timestamps, staging, staging_used, retired, memory, downloads: false }
    }

    /// Bytes of the staging ring in use, this recording's included.
    pub(crate) fn staging_used(&self) -> u64 {
        self.staging_used
    }

    /// Copies `bytes` into `dst` at `offset` through the staging ring.
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
                self.retired.push(Arc::new(old));
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
        // The staging ring is written by the host before the submission: no hazard
        // inside the graph, so only the destination is declared.
        let region = vk::BufferCopy { src_offset: start, dst_offset: offset, size: len };
        let op = Op::Copy { src: staging.buffer, dst: dst.buffer, region };
        self.push_op([(dst.buffer, Mode::Write)], Usage::Transfer, op);
        Ok(())
    }

    /// Copies `len` bytes of `src` from `offset` into a new read-back buffer.
    pub fn download(&mut self, src: &GpuBuffer, offset: u64, len: u64) -> Result<Download, GpuError> {
        src.check_range("download", offset, len)?;
        let buffer = Arc::new(GpuBuffer::new(self.shared, "kiln read-back", len.max(4), BufferMemory::Readback)?);
        self.retired.push(buffer.clone());
        if len > 0 {
            let region = vk::BufferCopy { src_offset: offset, dst_offset: 0, size: len };
            let op = Op::Copy { src: src.buffer, dst: buffer.buffer, region };
            self.push_op([(src.buffer, Mode::Read), (buffer.buffer, Mode::Write)], Usage::Transfer, op);
            self.downloads = true;
        }
        Ok(Download { buffer, len: len as usize })
    }

    /// Fills `buffer` with the 32-bit `value`.
    pub fn fill(&mut self, buffer: &GpuBuffer, value: u32) {
        let op = Op::Fill { buffer: buffer.buffer, value };
        self.push_op([(buffer.buffer, Mode::Write)], Usage::Transfer, op);
    }

    /// Copies `len` bytes between device buffers.
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
            let region = vk::BufferCopy { src_offset, dst_offset, size: len };
            let op = Op::Copy { src: src.buffer, dst: dst.buffer, region };
            self.push_op([(src.buffer, Mode::Read), (dst.buffer, Mode::Write)], Usage::Transfer, op);
        }
        Ok(())
    }

    /// Dispatches `kernel` over `threads` invocations (rounded up to whole groups);
    /// `push` must be the kernel's push-constant struct, `uses` every buffer it reads
    /// or writes through the addresses in `push`.
    pub fn dispatch_threads<P: Pod>(
        &mut self,
        kernel: &Kernel,
        push: &P,
        threads: u32,
        uses: &[Use<'_>],
    ) -> Result<(), GpuError> {
        let groups = threads.div_ceil(kernel.local_size);
        self.dispatch(kernel, push, [groups, 1, 1], uses)
    }

    /// Dispatches `kernel` with explicit group counts; see [`Recorder::dispatch_threads`].
    pub fn dispatch<P: Pod>(
        &mut self,
        kernel: &Kernel,
        push: &P,
        groups: [u32; 3],
        uses: &[Use<'_>],
    ) -> Result<(), GpuError> {
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
        self.check_declared(kernel, bytes, uses);
        if groups.contains(&0) {
            return Ok(());
        }
        let start = self.memory.push.len() as u32;
        self.memory.push.extend_from_slice(bytes);
        let push = (start, bytes.len() as u32);
        let op = Op::Dispatch { pipeline: kernel.pipeline, layout: kernel.layout, push, groups };
        self.push_op(uses.iter().map(|u| (u.buffer.buffer, u.mode)), Usage::Storage, op);
        Ok(())
    }

    /// With validation on: every 8-byte word of `push` that points into a live
    /// buffer must point into a declared one, or the validation log gets a message
    /// naming the kernel and the buffer. (Addresses stored inside buffers, like the
    /// DDGI parameter block, are beyond this check.)
    fn check_declared(&self, kernel: &Kernel, push: &[u8], uses: &[Use<'_>]) {
        let Some(registry) = &self.shared.registry else { return };
        let registry = registry.lock().unwrap_or_else(|p| p.into_inner());
        for word in push.chunks_exact(8) {
            let value = u64::from_le_bytes(word.try_into().expect("8 bytes"));
            let Some((&start, (size, name))) = registry.range(..=value).next_back() else { continue };
            let inside = |address: u64, size: u64| value >= address && value - address < size;
            if inside(start, *size) && !uses.iter().any(|u| inside(u.buffer.address(), u.buffer.size())) {
                self.shared.messages.push(format!(
                    "[kiln] kernel '{}' reaches buffer '{name}' through its push constants without declaring it \
                     (Use::read / Use::write): the frame graph cannot order it",
                    kernel.name
                ));
            }
        }
    }

    /// Records raw commands (`record` gets the device and the command buffer) that
    /// touch `uses` from transfer commands; they are ordered like any other command.
    pub fn raw(&mut self, uses: &[Use<'_>], record: impl FnOnce(&ash::Device, vk::CommandBuffer) + Send + 'static) {
        self.push_op(uses.iter().map(|u| (u.buffer.buffer, u.mode)), Usage::Transfer, Op::Raw(Box::new(record)));
    }

    /// Runs `body` as a named pass: a debug label (RenderDoc, Nsight) and a pair of
    /// timestamps around it, reported by [`Gpu::last_timings`](super::Gpu::last_timings).
    pub fn pass<R>(
        &mut self,
        name: &'static str,
        body: impl FnOnce(&mut Self) -> Result<R, GpuError>,
    ) -> Result<R, GpuError> {
        let index = self.memory.passes.len() as u32;
        let timed = self.timestamps && index < MAX_TIMED_PASSES;
        self.begin_label(name);
        if timed {
            self.memory.passes.push(name);
            self.memory.commands.push(Command::Timestamp(vk::PipelineStageFlags::TOP_OF_PIPE, 2 * index));
        }
        let result = body(self);
        if timed {
            self.memory.commands.push(Command::Timestamp(vk::PipelineStageFlags::BOTTOM_OF_PIPE, 2 * index + 1));
        }
        self.end_label();
        result
    }

    pub(crate) fn begin_label(&mut self, name: &'static str) {
        if self.shared.debug_utils.is_some() {
            self.memory.commands.push(Command::BeginLabel(name));
        }
    }

    pub(crate) fn end_label(&mut self) {
        if self.shared.debug_utils.is_some() {
            self.memory.commands.push(Command::EndLabel);
        }
    }

    /// Adds one command to the recording, declaring `uses` with `usage`.
    fn push_op(&mut self, uses: impl IntoIterator<Item = (vk::Buffer, Mode)>, usage: Usage, op: Op) {
        let memory = &mut *self.memory;
        for (buffer, mode) in uses {
            let index = match memory.buffers.iter().position(|&b| b == buffer) {
                Some(i) => i,
                None => {
                    memory.buffers.push(buffer);
                    memory.buffers.len() - 1
                }
            };
            memory.shape.uses.push((index as u32, mode));
        }
        memory.shape.buffers = memory.buffers.len() as u32;
        memory.shape.ops.push((usage, memory.shape.uses.len() as u32));
        memory.commands.push(Command::Op(op));
    }

    /// Compiles the graph and replays every command into `cmd` (which is recording)
    /// with the barriers its hazards need, between an entry and an exit barrier.
    /// `exit` is what later work needs to see: Kiln's own submissions pass `HOST`
    /// (read-backs), an engine's command buffer `ALL_COMMANDS`.
    pub(crate) fn replay(
        &mut self,
        cmd: vk::CommandBuffer,
        queries: vk::QueryPool,
        exit: vk::PipelineStageFlags,
    ) -> Result<SyncStats, GpuError> {
        let memory = &mut *self.memory;
        if memory.compiled.as_ref().is_none_or(|(shape, _)| *shape != memory.shape) {
            let graph = memory
                .shape
                .graph()
                .compile()
                .map_err(|err| GpuError::InvalidInput(format!("GPU frame graph: {err}")))?;
            match &mut memory.compiled {
                Some((shape, compiled)) => {
                    shape.clone_from(&memory.shape);
                    *compiled = graph;
                }
                None => memory.compiled = Some((memory.shape.clone(), graph)),
            }
            memory.compiles += 1;
        }
        let graph = &memory.compiled.as_ref().expect("compiled above").1;
        let device = &self.shared.device;
        let mut stats = SyncStats { commands: memory.shape.ops.len() as u32, ..SyncStats::default() };
        // Across-frame edges: whatever earlier submissions (or, embedded, the
        // engine's own commands) wrote is complete and visible to this one.
        let (stages, reads, writes) = compute_and_transfer();
        global_barrier(device, cmd, stages, stages, writes, reads | writes);
        stats.barriers += 1;
        // Per resource: the stages and accesses its last write is visible to.
        let visible = &mut memory.visible;
        visible.clear();
        visible.resize(memory.buffers.len(), (vk::PipelineStageFlags::empty(), vk::AccessFlags::empty()));
        let barriers = &mut memory.barriers;
        let mut op_index = 0u32;
        for command in memory.commands.drain(..) {
            match command {
                Command::Op(op) => {
                    let pass = PassId(op_index);
                    op_index += 1;
                    barriers.clear();
                    let (mut src_stages, mut dst_stages) =
                        (vk::PipelineStageFlags::empty(), vk::PipelineStageFlags::empty());
                    for edge in graph.sync_before(pass).iter().filter(|e| !e.across_frames) {
                        stats.hazards += 1;
                        let r = edge.resource.index();
                        let (src_stage, src_access) = scope(edge.before);
                        let (dst_stage, dst_access) = scope(edge.after);
                        let src_access = match edge.hazard {
                            // Write after read: the read must finish; nothing to flush.
                            Hazard::WriteAfterRead => vk::AccessFlags::empty(),
                            Hazard::ReadAfterWrite | Hazard::WriteAfterWrite => src_access,
                        };
                        if edge.hazard == Hazard::ReadAfterWrite
                            && visible[r].0.contains(dst_stage)
                            && visible[r].1.contains(dst_access)
                        {
                            stats.covered += 1;
                            continue;
                        }
                        src_stages |= src_stage;
                        dst_stages |= dst_stage;
                        if edge.hazard != Hazard::WriteAfterRead {
                            visible[r].0 |= dst_stage;
                            visible[r].1 |= dst_access;
                        }
                        let buffer = memory.buffers[r];
                        match barriers.iter_mut().find(|b| b.buffer == buffer) {
                            Some(b) => {
                                b.src_access_mask |= src_access;
                                b.dst_access_mask |= dst_access;
                            }
                            None => barriers.push(
                                vk::BufferMemoryBarrier::default()
                                    .buffer(buffer)
                                    .offset(0)
                                    .size(vk::WHOLE_SIZE)
                                    .src_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
                                    .dst_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
                                    .src_access_mask(src_access)
                                    .dst_access_mask(dst_access),
                            ),
                        }
                    }
                    if !dst_stages.is_empty() {
                        // SAFETY: a recording command buffer; the buffers are live.
                        unsafe {
                            device.cmd_pipeline_barrier(
                                cmd,
                                src_stages,
                                dst_stages,
                                vk::DependencyFlags::empty(),
                                &[],
                                barriers,
                                &[],
                            )
                        };
                        stats.barriers += 1;
                        stats.buffer_barriers += barriers.len() as u32;
                    }
                    record_op(device, cmd, op, &memory.push);
                    // A new write hides nothing yet.
                    for access in graph.pass_accesses(pass).iter().filter(|a| a.mode == Mode::Write) {
                        visible[access.resource.index()] = (vk::PipelineStageFlags::empty(), vk::AccessFlags::empty());
                    }
                }
                Command::BeginLabel(name) => {
                    if let Some(debug) = &self.shared.debug_utils {
                        let text = &mut memory.label;
                        text.clear();
                        text.extend(name.bytes().map(|b| if b == 0 { b' ' } else { b }));
                        text.push(0);
                        let name = CStr::from_bytes_with_nul(text).expect("one zero, at the end");
                        let label = vk::DebugUtilsLabelEXT::default().label_name(name);
                        // SAFETY: recording command buffer; the label outlives the call.
                        unsafe { debug.cmd_begin_debug_utils_label(cmd, &label) };
                    }
                }
                Command::EndLabel => {
                    if let Some(debug) = &self.shared.debug_utils {
                        // SAFETY: paired with a BeginLabel recorded before it.
                        unsafe { debug.cmd_end_debug_utils_label(cmd) };
                    }
                }
                Command::Timestamp(stage, query) => {
                    if queries != vk::QueryPool::null() {
                        // SAFETY: the query was reset before this command buffer ran.
                        unsafe { device.cmd_write_timestamp(cmd, stage, queries, query) };
                    }
                }
            }
        }
        let (exit_stage, exit_access) = if exit == vk::PipelineStageFlags::HOST {
            (exit, vk::AccessFlags::HOST_READ)
        } else {
            (exit, vk::AccessFlags::MEMORY_READ | vk::AccessFlags::MEMORY_WRITE)
        };
        if self.downloads || exit != vk::PipelineStageFlags::HOST {
            global_barrier(device, cmd, stages, exit_stage, writes, exit_access);
            stats.barriers += 1;
        }
        Ok(stats)
    }
}

/// The stages Kiln's commands run in, and their read and write accesses.
fn compute_and_transfer() -> (vk::PipelineStageFlags, vk::AccessFlags, vk::AccessFlags) {
    (
        vk::PipelineStageFlags::COMPUTE_SHADER | vk::PipelineStageFlags::TRANSFER,
        vk::AccessFlags::SHADER_READ | vk::AccessFlags::TRANSFER_READ,
        vk::AccessFlags::SHADER_WRITE | vk::AccessFlags::TRANSFER_WRITE,
    )
}

/// Pipeline stage and access of one side of a hazard.
fn scope(point: AccessPoint) -> (vk::PipelineStageFlags, vk::AccessFlags) {
    use vk::{AccessFlags as A, PipelineStageFlags as S};
    match (point.usage, point.mode) {
        (Usage::Transfer, Mode::Read) => (S::TRANSFER, A::TRANSFER_READ),
        // A copy may read the buffer it writes (one region into another: the
        // transient segment's reset from its molds), so a write waits as a read too.
        (Usage::Transfer, Mode::Write) => (S::TRANSFER, A::TRANSFER_WRITE | A::TRANSFER_READ),
        (Usage::Storage, Mode::Read) => (S::COMPUTE_SHADER, A::SHADER_READ),
        // A storage write may also read (atomics); as a source only the write counts.
        (Usage::Storage, Mode::Write) => (S::COMPUTE_SHADER, A::SHADER_WRITE | A::SHADER_READ),
        (Usage::Uniform, _) => (S::COMPUTE_SHADER, A::UNIFORM_READ),
        (Usage::Indirect, _) => (S::DRAW_INDIRECT, A::INDIRECT_COMMAND_READ),
        (Usage::Host, Mode::Read) => (S::HOST, A::HOST_READ),
        (Usage::Host, Mode::Write) => (S::HOST, A::HOST_WRITE),
    }
}

fn global_barrier(
    device: &ash::Device,
    cmd: vk::CommandBuffer,
    src_stages: vk::PipelineStageFlags,
    dst_stages: vk::PipelineStageFlags,
    src_access: vk::AccessFlags,
    dst_access: vk::AccessFlags,
) {
    let barrier = [vk::MemoryBarrier::default().src_access_mask(src_access).dst_access_mask(dst_access)];
    // SAFETY: a plain memory barrier in a recording command buffer.
    unsafe {
        device.cmd_pipeline_barrier(cmd, src_stages, dst_stages, vk::DependencyFlags::empty(), &barrier, &[], &[])
    };
}

/// Records one command. The recorder's caller keeps pipelines, layouts and buffers
/// alive until the submission ends; ranges and push sizes were checked when the
/// command was declared.
fn record_op(device: &ash::Device, cmd: vk::CommandBuffer, op: Op, push_bytes: &[u8]) {
    match op {
        Op::Dispatch { pipeline, layout, push: (start, len), groups } => {
            let push = &push_bytes[start as usize..(start + len) as usize];
            // SAFETY: a recording command buffer, a live pipeline and its layout; the
            // push size matches the layout's range.
            unsafe {
                device.cmd_bind_pipeline(cmd, vk::PipelineBindPoint::COMPUTE, pipeline);
                device.cmd_push_constants(cmd, layout, vk::ShaderStageFlags::COMPUTE, 0, push);
                device.cmd_dispatch(cmd, groups[0], groups[1], groups[2]);
            }
        }
        // SAFETY: live buffers, a checked range.
        Op::Copy { src, dst, region } => unsafe { device.cmd_copy_buffer(cmd, src, dst, &[region]) },
        // SAFETY: a whole-buffer fill of a live TRANSFER_DST buffer (sizes are
        // multiples of 4, or VK_WHOLE_SIZE rounds down).
        Op::Fill { buffer, value } => unsafe { device.cmd_fill_buffer(cmd, buffer, 0, vk::WHOLE_SIZE, value) },
        Op::Raw(record) => record(device, cmd),
    }
}
