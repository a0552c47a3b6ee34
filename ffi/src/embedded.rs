//! Embedded mode through the C ABI: a tracer on the engine's own Vulkan device,
//! recording its passes into the engine's command buffers.
//!
//! ```c
//! KilnEmbeddedDef def = kiln_default_embedded_def();
//! def.get_instance_proc_addr = (KilnGetInstanceProcAddr)vkGetInstanceProcAddr;
//! def.instance = instance; def.physical_device = physical; def.device = device;
//! def.queue_family = family;                 /* compute-capable */
//! def.frames_in_flight = 2;
//! kiln_tracer_create_embedded(&def, &tracer);
//! ... kiln_tracer_add_mesh / add_instance / set_transforms as usual ...
//! vkWaitForFences(frame fence); vkBeginCommandBuffer(cmd);
//! kiln_tracer_record_trace(tracer, cmd, slot, rays, n, KILN_TRACE_CLOSEST);
//! ... the engine's own commands, which may read Kiln's results ...
//! vkEndCommandBuffer(cmd); vkQueueSubmit(queue, cmd, frame fence);
//! ... later, after that fence: kiln_tracer_read_hits(tracer, slot, hits, n);
//!
//! /* Or trace from the engine's own shader (kiln_trace.glsl): */
//! kiln_tracer_record_update(tracer, cmd, slot);
//! kiln_tracer_get_trace_buffers(tracer, &buffers);   /* device addresses */
//! ... vkCmdPushConstants(six addresses) + vkCmdDispatch(engine pipeline) ...
//! ```
//!
//! The contract, in full, is on `kiln_tracer_record_trace`.

use std::ffi::{c_char, c_void};
use std::mem::size_of;

use kiln_core::gpu::vk::{self, Handle};
use kiln_core::gpu::{EmbeddedDevice, RayTracer};

use crate::abi::{
    ffi_call, non_null, read_def, write_out, Error, KilnStatus, KILN_ERROR_INVALID_ARGUMENT, KILN_ERROR_INVALID_STATE,
};
use crate::tracer::{
    c_instance, gpu_error, set_rays, trace_mode, with_tracer, write_hits, KilnTraceHit, KilnTraceRay, KilnTracerId,
    TracerEntry, TRACERS,
};

/// A Vulkan function pointer as `vkGetInstanceProcAddr` returns it
/// (`PFN_vkVoidFunction`).
pub type KilnVoidFunction = Option<unsafe extern "C" fn()>;

/// `PFN_vkGetInstanceProcAddr`: pass `(KilnGetInstanceProcAddr)vkGetInstanceProcAddr`
/// (or the function your loader, e.g. volk, resolved).
pub type KilnGetInstanceProcAddr =
    Option<unsafe extern "C" fn(instance: *mut c_void, name: *const c_char) -> KilnVoidFunction>;

/// The engine's Vulkan objects Kiln runs on. Initialise with
/// `kiln_default_embedded_def()`. The device must have been created with Vulkan 1.2
/// and the features `bufferDeviceAddress`, `vulkanMemoryModel` and
/// `vulkanMemoryModelDeviceScope` enabled (Kiln checks support, not enablement).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct KilnEmbeddedDef {
    /// `sizeof(KilnEmbeddedDef)`, set by `kiln_default_embedded_def()`.
    pub struct_size: u32,
    /// The loader's `vkGetInstanceProcAddr`. Required.
    pub get_instance_proc_addr: KilnGetInstanceProcAddr,
    /// `VkInstance`. Required.
    pub instance: *mut c_void,
    /// `VkPhysicalDevice` of the device. Required.
    pub physical_device: *mut c_void,
    /// `VkDevice`. Required.
    pub device: *mut c_void,
    /// A queue family with compute. The tracer's scene changes and traces,
    /// `kiln_gi_record_bake`, `kiln_gi_record_update` and `kiln_frame_run_into` never
    /// submit work of their own (they are recorded into the engine's command
    /// buffers); Kiln's other GPU work on an embedded device (`kiln_gi_bake`,
    /// `kiln_gi_update`, `kiln_frame_run`) still goes
    /// to queue `queue_index` of this family, from the calling thread (or a worker
    /// of the call), inside the call that needs it; the engine must not use that
    /// queue from another thread meanwhile. Default 0.
    pub queue_family: u32,
    /// Default 0.
    pub queue_index: u32,
    /// Command buffers the engine keeps in flight, 1 to 8: recordings use slots
    /// 0 to `frames_in_flight` - 1. Default 2.
    pub frames_in_flight: u32,
    /// The engine enabled `VK_EXT_debug_utils` on its instance: Kiln wraps its passes
    /// in debug labels (RenderDoc, Nsight). Default false.
    pub debug_utils: bool,
    /// Kiln's own checks report to `kiln_tracer_get_validation_messages` (the
    /// validation layer's messages go to the engine's messenger). Default false.
    pub validation: bool,
    /// As `KilnTracerDef::memory_budget_bytes`. Default 0 (none).
    pub memory_budget_bytes: u64,
}

/// A `KilnEmbeddedDef` with the defaults documented on its fields (handles NULL).
///
/// Threads: any thread, at any time.
#[no_mangle]
pub extern "C" fn kiln_default_embedded_def() -> KilnEmbeddedDef {
    KilnEmbeddedDef {
        struct_size: size_of::<KilnEmbeddedDef>() as u32,
        get_instance_proc_addr: None,
        instance: std::ptr::null_mut(),
        physical_device: std::ptr::null_mut(),
        device: std::ptr::null_mut(),
        queue_family: 0,
        queue_index: 0,
        frames_in_flight: 2,
        debug_utils: false,
        validation: false,
        memory_budget_bytes: 0,
    }
}

/// Creates a tracer on the engine's device (embedded mode) and writes its handle to
/// `out_tracer`. Kiln creates only its own command pool, fence, query pool, pipelines
/// and buffers on the device, and destroys only those (in `kiln_tracer_destroy`,
/// which the engine calls before destroying its device, once the command buffers
/// Kiln recorded into have completed). Errors: `KILN_ERROR_INVALID_ARGUMENT` for a
/// missing handle, a queue family without compute or a bad frame count;
/// `KILN_ERROR_NO_DEVICE` when the device lacks Vulkan 1.2 or a feature Kiln needs.
/// Every other tracer call works as in standalone mode; `kiln_tracer_trace` submits
/// and waits on the queue given here.
///
/// Pointers: `def` is NULL or readable; its handles are live, belong together and
/// outlive the tracer; `out_tracer` is NULL or writable.
///
/// Threads: any thread, at any time.
#[no_mangle]
pub unsafe extern "C" fn kiln_tracer_create_embedded(
    def: *const KilnEmbeddedDef,
    out_tracer: *mut KilnTracerId,
) -> KilnStatus {
    ffi_call("kiln_tracer_create_embedded", || {
        let def = non_null(def, "def")?;
        non_null(out_tracer, "out_tracer")?;
        // SAFETY: non-null; readable per the contract.
        let def = unsafe { read_def(def, "def")? };
        let Some(get_instance_proc_addr) = def.get_instance_proc_addr else {
            return Err(Error::new(KILN_ERROR_INVALID_ARGUMENT, "def->get_instance_proc_addr is NULL".to_owned()));
        };
        // SAFETY: `PFN_vkGetInstanceProcAddr` has this signature; handles are
        // pointers (dispatchable) on every platform, and the C and system calling
        // conventions agree on the 64-bit platforms Kiln supports.
        let get_instance_proc_addr = unsafe {
            std::mem::transmute::<
                unsafe extern "C" fn(*mut c_void, *const c_char) -> KilnVoidFunction,
                vk::PFN_vkGetInstanceProcAddr,
            >(get_instance_proc_addr)
        };
        let desc = EmbeddedDevice {
            get_instance_proc_addr,
            instance: vk::Instance::from_raw(def.instance as u64),
            physical_device: vk::PhysicalDevice::from_raw(def.physical_device as u64),
            device: vk::Device::from_raw(def.device as u64),
            queue_family: def.queue_family,
            queue_index: def.queue_index,
            frames_in_flight: def.frames_in_flight,
            debug_utils: def.debug_utils,
            validation: def.validation,
            memory_budget: Some(def.memory_budget_bytes).filter(|&b| b > 0),
        };
        // SAFETY: the handles are live and belong together per the contract.
        let tracer = unsafe { RayTracer::embedded(&desc) }.map_err(gpu_error)?;
        let (index1, generation) = TRACERS.insert(TracerEntry::new(tracer));
        write_out(out_tracer, "out_tracer", KilnTracerId { index1, generation })
    })
}

/// Records into the engine's `command_buffer` (a `VkCommandBuffer` of the device,
/// recording, outside a render pass) the scene update, when transforms, bones or
/// followed bodies changed (instances upload, skinning + refit, TLAS rebuild), and
/// the tracing of `count` rays (at most 1,048,576; checked as `kiln_tracer_trace`
/// checks them). The hits are read with `kiln_tracer_read_hits` once the engine's
/// submission completed. Scene changes (meshes and instances added or removed,
/// terrain synced) are uploaded inside the same recording: the tracer calls no
/// `vkQueueSubmit` of its own.
///
/// The contract:
/// - **Slots.** `frame_slot` is below `frames_in_flight`; the command buffer
///   recorded for the same slot the previous time has completed (wait on its fence
///   first): Kiln reuses that slot's staging memory. Buffers Kiln replaces are kept
///   until every slot has been recorded again. To record more than once into one
///   frame (a scene update, traces, `kiln_gi_record_update`, in one command buffer
///   or several), call `kiln_tracer_begin_frame` for the slot first, after its
///   fence: the recordings then share the slot's staging memory without
///   overwriting each other until the next `kiln_tracer_begin_frame`.
/// - **Order.** The engine submits the command buffers Kiln recorded into, in
///   recording order, to queues of `queue_family`.
/// - **Entry barrier.** Kiln's commands start with a memory barrier from compute and
///   transfer writes to compute and transfer reads and writes: earlier work of Kiln's
///   (and anything the engine wrote to Kiln's buffers in those stages) is visible.
/// - **Exit barrier.** They end with a memory barrier from compute and transfer
///   writes to all commands' reads and writes, so the engine's later commands in any
///   stage may read Kiln's results. Between the two, Kiln places only the barriers
///   its frame graph derives.
/// - Nothing else: no timestamps (the engine's profiler sees the labels when
///   `debug_utils` is set), no pipeline state left that the engine relies on (Kiln
///   binds a compute pipeline and push constants; rebind yours after the call).
///
/// Pointers: `command_buffer` is as described; `rays` is NULL or readable for `count`
/// entries.
///
/// Threads: one call at a time per tracer (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_tracer_record_trace(
    tracer: KilnTracerId,
    command_buffer: *mut c_void,
    frame_slot: u32,
    rays: *const KilnTraceRay,
    count: u32,
    mode: u32,
) -> KilnStatus {
    ffi_call("kiln_tracer_record_trace", || {
        let mode = trace_mode(mode)?;
        non_null(command_buffer.cast_const(), "command_buffer")?;
        let rays: &[KilnTraceRay] = if count == 0 {
            &[]
        } else {
            // SAFETY: non-null and readable for `count` entries per the contract.
            unsafe { std::slice::from_raw_parts(non_null(rays, "rays")?, count as usize) }
        };
        with_tracer(tracer, |entry| {
            check_embedded_slot(entry, frame_slot)?;
            set_rays(&mut entry.rays, rays);
            let cmd = vk::CommandBuffer::from_raw(command_buffer as u64);
            // SAFETY: per the contract above.
            let pending =
                unsafe { entry.tracer.record_trace(cmd, frame_slot, &entry.rays, mode) }.map_err(gpu_error)?;
            entry.pending[frame_slot as usize] = Some(pending);
            Ok(())
        })
    })
}

/// Writes the hits of the last `kiln_tracer_record_trace` for `frame_slot` to `hits`
/// (`count` must equal the rays recorded). Call it once the engine's submission of
/// that command buffer completed; before, the values are undefined. A miss has
/// the null instance and `t = +inf`; a hit names its instance by the handle it had
/// when the trace was recorded. The hits stay readable until the slot is recorded
/// again.
///
/// Pointers: `hits` is NULL or writable for `count` entries.
///
/// Threads: one call at a time per tracer (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_tracer_read_hits(
    tracer: KilnTracerId,
    frame_slot: u32,
    hits: *mut KilnTraceHit,
    count: u32,
) -> KilnStatus {
    ffi_call("kiln_tracer_read_hits", || {
        with_tracer(tracer, |entry| {
            let Some(Some(pending)) = entry.pending.get(frame_slot as usize) else {
                return Err(Error::new(
                    KILN_ERROR_INVALID_ARGUMENT,
                    format!("frame_slot {frame_slot}: nothing was recorded for it"),
                ));
            };
            if pending.len() != count as usize {
                return Err(Error::new(
                    KILN_ERROR_INVALID_ARGUMENT,
                    format!("count is {count}, but {} rays were recorded for frame_slot {frame_slot}", pending.len()),
                ));
            }
            if count == 0 {
                return Ok(());
            }
            let out = non_null(hits, "hits")?.cast_mut();
            entry.hits.clear();
            entry.hits.resize(count as usize, Default::default());
            pending.read(&mut entry.hits).map_err(gpu_error)?;
            let id_of = |packed| c_instance(tracer, pending.instance_at(packed));
            // SAFETY: writable for `count` entries per the contract.
            unsafe { write_hits(&entry.hits, out, id_of) };
            Ok(())
        })
    })
}

/// One buffer of the tracer's device scene, for the engine's own shaders and
/// descriptors.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KilnGpuBuffer {
    /// The `VkBuffer` (a non-dispatchable handle: `(VkBuffer)(uintptr_t)buffer` on
    /// 64-bit targets). Created with storage, transfer and device-address usage.
    pub buffer: u64,
    /// Bytes of the buffer from offset 0 (its capacity; the scene may use less).
    pub size: u64,
    /// Its `VkDeviceAddress` (`vkGetBufferDeviceAddress`), what `kiln_trace.glsl`
    /// takes.
    pub device_address: u64,
}

/// The device scene of an embedded tracer, from `kiln_tracer_get_trace_buffers`: what
/// an engine's shader needs to trace rays with `kiln_trace()` from the installed
/// `kiln_trace.glsl` (`share/kiln/glsl`, `pkg-config --variable=glsldir kiln`). Pass
/// the six device addresses, in this order, as the `KilnTraceScene` of the shader
/// (six `uvec2`, 48 bytes: a `uint64_t` each in little-endian order).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KilnTraceBuffers {
    /// TLAS nodes (`KilnTlasNode`, 32 bytes each, the root first).
    pub tlas: KilnGpuBuffer,
    /// Instances (`KilnInstance`, 112 bytes each) in packed order: a shader hit's
    /// `instance` indexes them.
    pub instances: KilnGpuBuffer,
    /// One `KilnBlasRef` (16 bytes) per mesh.
    pub blas_refs: KilnGpuBuffer,
    /// Every mesh's BVH nodes (`KilnBvhNode`, 32 bytes each).
    pub blas_nodes: KilnGpuBuffer,
    /// Every mesh's triangles (`uvec4`: three vertex indices and the primitive).
    pub triangles: KilnGpuBuffer,
    /// Every mesh's vertex positions (three floats each).
    pub positions: KilnGpuBuffer,
    /// Instances in the TLAS.
    pub instance_count: u32,
    /// Zero.
    pub reserved: u32,
    /// Changes whenever any buffer above is made anew (the scene outgrew its room,
    /// removed meshes were compacted): descriptors holding the handles must then be
    /// rewritten. Addresses pushed every frame need nothing.
    pub version: u64,
}

/// Embedded mode: opens a frame for `frame_slot`. Call it once per frame, after
/// waiting for the fence of the slot's previous submission and before recording
/// into the slot: what that submission used may then be reused, and every
/// recording for the slot until the next call (`kiln_tracer_record_update`,
/// `kiln_tracer_record_trace`, `kiln_gi_record_update`, `kiln_gi_record_bake`,
/// `kiln_frame_run_into`) keeps what the earlier ones staged, so a frame may hold
/// several. Without it each recording assumes the slot's previous one completed,
/// so only one recording per slot and frame is allowed.
///
/// Refused (`KILN_ERROR_INVALID_ARGUMENT`) for a tracer that is not embedded or a
/// slot it does not have.
///
/// Threads: one call at a time per tracer (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub extern "C" fn kiln_tracer_begin_frame(tracer: KilnTracerId, frame_slot: u32) -> KilnStatus {
    ffi_call("kiln_tracer_begin_frame", || {
        with_tracer(tracer, |entry| {
            check_embedded_slot(entry, frame_slot)?;
            entry.tracer.begin_frame(frame_slot).map_err(gpu_error)
        })
    })
}

/// Records the scene update into the engine's `command_buffer` for `frame_slot`,
/// without tracing anything: what `kiln_tracer_record_trace` records before its rays
/// (uploads of what changed, skinning + refit, TLAS rebuild), or nothing when the
/// scene is unchanged or has no instances. Commands the engine records after it
/// may trace the scene from their own shaders (`kiln_tracer_get_trace_buffers`,
/// `kiln_trace.glsl`): the exit barrier makes Kiln's writes visible to every later
/// stage. The contract (slots, order, entry and exit barriers, queue family) is
/// `kiln_tracer_record_trace`'s; the buffers are used by the queue family of the
/// embedded definition only, so no ownership transfer is needed on that family.
///
/// Pointers: `command_buffer` is a recording `VkCommandBuffer` of the device,
/// outside a render pass.
///
/// Threads: one call at a time per tracer (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_tracer_record_update(
    tracer: KilnTracerId,
    command_buffer: *mut c_void,
    frame_slot: u32,
) -> KilnStatus {
    ffi_call("kiln_tracer_record_update", || {
        non_null(command_buffer.cast_const(), "command_buffer")?;
        with_tracer(tracer, |entry| {
            check_embedded_slot(entry, frame_slot)?;
            let cmd = vk::CommandBuffer::from_raw(command_buffer as u64);
            // SAFETY: per the contract of kiln_tracer_record_trace.
            unsafe { entry.tracer.record_update(cmd, frame_slot) }.map_err(gpu_error)
        })
    })
}

/// Writes the embedded tracer's device scene to `out_buffers`: the buffers an
/// engine's shader reads to trace rays with `kiln_trace()` (see `KilnTraceBuffers`).
/// They are those of the last recorded update (`kiln_tracer_record_update` or
/// `kiln_tracer_record_trace`) and valid for command buffers recorded after it,
/// until a later update reports a new `version`; Kiln keeps replaced buffers alive
/// until every frame slot has been recorded again. The engine only reads them.
///
/// Refused (`KILN_ERROR_INVALID_STATE`) when the scene has no instances or changed
/// since the last recorded update (record the update first), and
/// (`KILN_ERROR_INVALID_ARGUMENT`) for a tracer that is not embedded: its buffers
/// live on Kiln's own device.
///
/// Pointers: `out_buffers` is writable.
///
/// Threads: one call at a time per tracer (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_tracer_get_trace_buffers(
    tracer: KilnTracerId,
    out_buffers: *mut KilnTraceBuffers,
) -> KilnStatus {
    ffi_call("kiln_tracer_get_trace_buffers", || {
        non_null(out_buffers, "out_buffers")?;
        let buffers = with_tracer(tracer, |entry| {
            if entry.pending.is_empty() {
                return Err(not_embedded("kiln_tracer_get_trace_buffers"));
            }
            entry.tracer.trace_buffers().map_err(|err| Error::new(KILN_ERROR_INVALID_STATE, err.to_string()))
        })?;
        let view = |b: &kiln_core::gpu::BufferView| KilnGpuBuffer {
            buffer: b.buffer.as_raw(),
            size: b.size,
            device_address: b.address,
        };
        let [tlas, instances, blas_refs, blas_nodes, triangles, positions] = buffers.buffers.each_ref().map(view);
        write_out(
            out_buffers,
            "out_buffers",
            KilnTraceBuffers {
                tlas,
                instances,
                blas_refs,
                blas_nodes,
                triangles,
                positions,
                instance_count: buffers.instance_count,
                reserved: 0,
                version: buffers.version,
            },
        )
    })
}

fn not_embedded(function: &str) -> Error {
    Error::new(
        KILN_ERROR_INVALID_ARGUMENT,
        format!("{function}: the tracer is not embedded (kiln_tracer_create_embedded); its buffers live on Kiln's own device"),
    )
}

/// Refuses a frame slot the embedded tracer does not have (or any, standalone).
fn check_embedded_slot(entry: &TracerEntry, frame_slot: u32) -> Result<(), Error> {
    let slots = entry.pending.len();
    if frame_slot as usize >= slots {
        return Err(Error::new(
            KILN_ERROR_INVALID_ARGUMENT,
            match slots {
                0 => "the tracer is not embedded (kiln_tracer_create_embedded); use kiln_tracer_trace".to_owned(),
                _ => format!("frame_slot {frame_slot} of {slots}"),
            },
        ));
    }
    Ok(())
}
