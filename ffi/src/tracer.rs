//! GPU ray tracing through the C ABI: open a Vulkan device, register meshes, place
//! instances (static, skinned, or following physics bodies), trace ray batches and
//! read the per-pass GPU times.
//!
//! ```c
//! KilnTracerDef def = kiln_default_tracer_def();
//! KilnTracerId tracer;
//! if (kiln_tracer_create(&def, &tracer) == KILN_ERROR_NO_DEVICE) { /* CPU only */ }
//! KilnMeshId mesh;
//! KilnInstanceId instance;
//! kiln_tracer_add_mesh(tracer, positions, vertex_count, indices, triangle_count, &mesh);
//! KilnInstanceDef inst = kiln_default_instance_def();
//! inst.mesh = mesh;
//! kiln_tracer_add_instance(tracer, &inst, &instance);
//! kiln_tracer_trace(tracer, rays, ray_count, KILN_TRACE_CLOSEST, hits);
//! kiln_tracer_remove_instance(tracer, instance);
//! kiln_tracer_remove_mesh(tracer, mesh);
//! kiln_tracer_destroy(tracer);
//! ```
//!
//! Every call checks all of its input before changing anything: a refused call leaves
//! the tracer as it was. Meshes and instances are generation-checked handles: a
//! removed one's handle is refused (`KILN_ERROR_INVALID_HANDLE`), never taken for the
//! mesh or instance that reuses its slot.

use std::ffi::{c_char, CStr};
use std::mem::size_of;

use kiln_core::gpu::{
    compose, isometry_affine, Affine, DeviceChoice, DeviceKind, GpuConfig, GpuError, GpuHit, GpuRay, InstanceId,
    MeshId, PendingHits, RayTracer, SkinData, TraceMode, HIT_BACKFACE, IDENTITY, NO_HIT,
};

use kiln_core::math::{Isometry, Quat, Vec3};
use kiln_core::physics::BodyId;

use crate::abi::{
    ffi_call, non_null, read_checked, read_def, write_out, CountedOut, Error, KilnStatus, KILN_ERROR_DEVICE_LOST,
    KILN_ERROR_INTERNAL, KILN_ERROR_INVALID_ARGUMENT, KILN_ERROR_INVALID_HANDLE, KILN_ERROR_INVALID_STATE,
    KILN_ERROR_NO_DEVICE, KILN_ERROR_OUT_OF_MEMORY,
};
use crate::handles::{HandleTable, Lendable};
use crate::terrain::{with_terrain, KilnTerrainId};
use crate::types::{KilnTransform, KilnVec3};

use crate::world::{live_body, with_world_state, KilnBodyId, KilnWorldId};

/// Handle to a ray tracer (a Vulkan device with meshes and instances). `{0, 0}` is
/// the null handle. Pass by value.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KilnTracerId {
    /// Slot index plus one (0 means null).
    pub index1: u32,
    /// Slot generation; a destroyed tracer's handles no longer match.
    pub generation: u32,
}

/// A mesh of a tracer, from `kiln_tracer_add_mesh`: valid until
/// `kiln_tracer_remove_mesh` or the tracer's destruction. All zero is the null handle.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KilnMeshId {
    /// Slot index plus one (0 means null).
    pub index1: u32,
    /// Slot generation; a removed mesh's handles no longer match.
    pub generation: u32,
    /// The tracer the mesh belongs to.
    pub tracer: KilnTracerId,
}

/// An instance of a tracer, from `kiln_tracer_add_instance` or
/// `kiln_tracer_add_skinned_instance`: valid until `kiln_tracer_remove_instance` or
/// the tracer's destruction. All zero is the null handle (a miss's
/// `KilnTraceHit::instance`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KilnInstanceId {
    /// Slot index plus one (0 means null).
    pub index1: u32,
    /// Slot generation; a removed instance's handles no longer match.
    pub generation: u32,
    /// The tracer the instance belongs to.
    pub tracer: KilnTracerId,
}

/// How a tracer opens its device. Initialise with `kiln_default_tracer_def()`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KilnTracerDef {
    /// `sizeof(KilnTracerDef)`, set by `kiln_default_tracer_def()`.
    pub struct_size: u32,
    /// Enables `VK_LAYER_KHRONOS_validation` and collects its warnings and errors
    /// (`kiln_tracer_get_validation_messages`). Default false.
    pub validation: bool,
    /// Device by index in the driver's order, or -1 for the best one (discrete GPU,
    /// then integrated, virtual, CPU such as Mesa's lavapipe). Default -1.
    pub device_index: i32,
    /// When not NULL: the first device whose name contains this text
    /// (case-insensitive); wins over `device_index`. Default NULL.
    pub device_name: *const c_char,
    /// Lets the environment override the fields above: `KILN_GPU_DEVICE` (an index or
    /// name text) and `KILN_GPU_VALIDATION=1`. Default true.
    pub use_environment: bool,
    /// The most device memory the tracer's buffers may hold at once, in bytes; a
    /// call that needs more fails with `KILN_ERROR_OUT_OF_MEMORY` and changes
    /// nothing. 0: no budget (only the device's own limits). Default 0.
    pub memory_budget_bytes: u64,
}

/// A discrete GPU.
pub const KILN_DEVICE_DISCRETE: u32 = 0;
/// A GPU sharing memory with the CPU.
pub const KILN_DEVICE_INTEGRATED: u32 = 1;
/// A GPU in a virtual machine.
pub const KILN_DEVICE_VIRTUAL: u32 = 2;
/// A software device running on the CPU (Mesa's lavapipe).
pub const KILN_DEVICE_CPU: u32 = 3;
/// Anything else.
pub const KILN_DEVICE_OTHER: u32 = 4;

/// The device a tracer runs on, from `kiln_tracer_get_device`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KilnDeviceInfo {
    /// Device name, NUL-terminated (cut to fit).
    pub name: [c_char; 256],
    /// Driver name and version, NUL-terminated (cut to fit).
    pub driver: [c_char; 256],
    /// `KILN_DEVICE_DISCRETE`, `_INTEGRATED`, `_VIRTUAL`, `_CPU` or `_OTHER`.
    pub kind: u32,
    /// Vulkan version the device supports: major.
    pub api_major: u32,
    /// Vulkan version: minor.
    pub api_minor: u32,
    /// Default subgroup size (8 on lavapipe, 32 or 64 on GPUs).
    pub subgroup_size: u32,
    /// Whether per-pass GPU times are measured (`kiln_tracer_get_timings`).
    pub timestamps: bool,
}

/// An affine transform: three rows of `[m0, m1, m2, translation]`, so a point `p`
/// maps to `rows[i][0] * p.x + rows[i][1] * p.y + rows[i][2] * p.z + rows[i][3]`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KilnAffine {
    /// Row-major 3x4 matrix.
    pub rows: [[f32; 4]; 3],
}

const KILN_AFFINE_IDENTITY: KilnAffine = KilnAffine { rows: IDENTITY };

/// How an instance is placed. Initialise with `kiln_default_instance_def()`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KilnInstanceDef {
    /// `sizeof(KilnInstanceDef)`, set by `kiln_default_instance_def()`.
    pub struct_size: u32,
    /// The mesh, from `kiln_tracer_add_mesh`. Default: the null handle (refused).
    pub mesh: KilnMeshId,
    /// Object-to-world transform; must be invertible and finite. Default identity.
    pub transform: KilnAffine,
    /// A ray sees the instance when `ray.mask & instance.mask != 0`. Default all bits.
    pub mask: u32,
    /// Reported in hits as `user_id`; Kiln never reads it. Default 0.
    pub user_id: u32,
}

/// A skinned mesh (`kiln_tracer_add_skinned_mesh`): rest positions, up to four joints
/// and weights per vertex, triangles. Each skinned instance of it is skinned on the
/// GPU whenever its bones change (`kiln_tracer_set_bones`).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KilnSkinnedMeshDef {
    /// `sizeof(KilnSkinnedMeshDef)`, set by `kiln_default_skinned_mesh_def()`.
    pub struct_size: u32,
    /// `vertex_count` rest positions (finite).
    pub positions: *const KilnVec3,
    /// `4 * vertex_count` joint indices, each below `bone_count`.
    pub joints: *const u16,
    /// `4 * vertex_count` weights (finite, >= 0; they should sum to 1).
    pub weights: *const f32,
    /// Vertices, 3 or more.
    pub vertex_count: u32,
    /// `3 * triangle_count` vertex indices.
    pub indices: *const u32,
    /// Triangles, 1 or more.
    pub triangle_count: u32,
    /// Bones, 1 to 65536; they start as identities.
    pub bone_count: u32,
}

/// One ray of a batch.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct KilnTraceRay {
    /// Start point (finite).
    pub origin: KilnVec3,
    /// Direction (finite, non-zero; need not be unit: `t` is in its lengths).
    pub direction: KilnVec3,
    /// Hits closer than this are ignored (finite, >= 0).
    pub t_min: f32,
    /// Hits farther than this are ignored (>= `t_min`; may be infinite).
    pub t_max: f32,
    /// Instances with `mask & instance.mask == 0` are invisible to the ray.
    pub mask: u32,
}

/// The instance a GPU-side hit names when the ray hit nothing (what Kiln's kernels
/// write; C hits have the null `KilnInstanceId` instead).
pub const KILN_NO_HIT: u32 = 0xFFFF_FFFF;
/// `KilnTraceHit::flags`: the ray hit the triangle's back face.
pub const KILN_HIT_BACKFACE: u32 = 1;
/// `kiln_tracer_trace` mode: the closest hit along each ray.
pub const KILN_TRACE_CLOSEST: u32 = 0;
/// `kiln_tracer_trace` mode: any hit ends the ray (shadow and visibility rays); only
/// hit or miss is meaningful, the other fields describe whichever hit was found.
pub const KILN_TRACE_ANY: u32 = 1;

/// The result for one ray.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct KilnTraceHit {
    /// Distance along the ray in direction lengths (+inf on a miss).
    pub t: f32,
    /// The instance hit; the null handle (`index1 == 0`) on a miss.
    pub instance: KilnInstanceId,
    /// Triangle index in the instance's mesh.
    pub primitive: u32,
    /// The instance's `user_id`.
    pub user_id: u32,
    /// Unit geometric normal in world space, on the side the winding makes front
    /// (counter-clockwise).
    pub normal: KilnVec3,
    /// Barycentric weight of the triangle's second vertex.
    pub u: f32,
    /// Barycentric weight of the third vertex.
    pub v: f32,
    /// `KILN_HIT_BACKFACE` when the ray hit the back face.
    pub flags: u32,
}

/// GPU time of one pass of the last `kiln_tracer_update` or `kiln_tracer_trace`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KilnGpuPassTiming {
    /// Pass name ("upload instances", "skin + refit", "tlas build", "trace"),
    /// NUL-terminated.
    pub name: [c_char; 32],
    /// Milliseconds from the pass's first command to its last, on the device.
    pub milliseconds: f64,
}

/// A tracer behind a handle, with reusable conversion buffers.
pub(crate) struct TracerEntry {
    pub(crate) tracer: Lendable<RayTracer>,
    /// The world whose bodies instances follow (set by the first follow).
    pub(crate) world: Option<KilnWorldId>,
    /// The terrain mirrored by `kiln_tracer_add_terrain`.
    pub(crate) terrain: Option<KilnTerrainId>,
    pub(crate) rays: Vec<GpuRay>,
    pub(crate) hits: Vec<GpuHit>,
    /// Embedded mode: the hits recorded per frame slot (`kiln_tracer_record_trace`).
    pub(crate) pending: Vec<Option<PendingHits>>,
}

impl TracerEntry {
    pub(crate) fn new(tracer: RayTracer) -> TracerEntry {
        let slots = tracer.gpu().frames_in_flight() as usize;
        TracerEntry {
            tracer: Lendable::new(tracer),
            world: None,
            terrain: None,
            rays: Vec::new(),
            hits: Vec::new(),
            pending: (0..slots).map(|_| None).collect(),
        }
    }
}

const _: () = assert!(KILN_NO_HIT == NO_HIT && KILN_HIT_BACKFACE == HIT_BACKFACE);

pub(crate) static TRACERS: HandleTable<TracerEntry> = HandleTable::new("tracer");

pub(crate) fn with_tracer<R>(
    id: KilnTracerId,
    f: impl FnOnce(&mut TracerEntry) -> Result<R, Error>,
) -> Result<R, Error> {
    TRACERS.with(id.index1, id.generation, f)
}

/// A stale, null or foreign mesh handle's error.
fn bad_handle(
    kind: &str,
    what: &str,
    index1: u32,
    generation: u32,
    owner: KilnTracerId,
    tracer: KilnTracerId,
) -> Error {
    let why = if index1 == 0 {
        "the null handle".to_owned()
    } else if owner != tracer {
        format!("a handle of tracer {owner:?}, not of {tracer:?}")
    } else {
        "stale (removed) or was never issued".to_owned()
    };
    Error::new(KILN_ERROR_INVALID_HANDLE, format!("{what}: {kind} handle {{{index1}, {generation}}} is {why}"))
}

/// The tracer's id of a live mesh of `tracer`, or `KILN_ERROR_INVALID_HANDLE`.
pub(crate) fn live_mesh(
    entry: &TracerEntry,
    tracer: KilnTracerId,
    id: KilnMeshId,
    what: &str,
) -> Result<MeshId, Error> {
    let mesh = MeshId { slot: id.index1.wrapping_sub(1), generation: id.generation };
    if id.index1 != 0 && id.tracer == tracer && entry.tracer.has_mesh(mesh) {
        return Ok(mesh);
    }
    Err(bad_handle("mesh", what, id.index1, id.generation, id.tracer, tracer))
}

/// The tracer's id of a live instance of `tracer`, or `KILN_ERROR_INVALID_HANDLE`.
pub(crate) fn live_instance(
    entry: &TracerEntry,
    tracer: KilnTracerId,
    id: KilnInstanceId,
    what: &str,
) -> Result<InstanceId, Error> {
    let instance = InstanceId { slot: id.index1.wrapping_sub(1), generation: id.generation };
    if id.index1 != 0 && id.tracer == tracer && entry.tracer.instance_index(instance).is_some() {
        return Ok(instance);
    }
    Err(bad_handle("instance", what, id.index1, id.generation, id.tracer, tracer))
}

fn c_mesh(tracer: KilnTracerId, id: MeshId) -> KilnMeshId {
    KilnMeshId { index1: id.slot + 1, generation: id.generation, tracer }
}

pub(crate) fn c_instance(tracer: KilnTracerId, id: Option<InstanceId>) -> KilnInstanceId {
    id.map_or(KilnInstanceId::default(), |id| KilnInstanceId { index1: id.slot + 1, generation: id.generation, tracer })
}

/// Maps a GPU failure to its status.
pub(crate) fn gpu_error(error: GpuError) -> Error {
    let status = match &error {
        GpuError::NoLoader(_) | GpuError::NoDevice(_) | GpuError::MissingFeature(_) => KILN_ERROR_NO_DEVICE,
        GpuError::OutOfMemory(_) => KILN_ERROR_OUT_OF_MEMORY,
        GpuError::DeviceLost => KILN_ERROR_DEVICE_LOST,
        GpuError::InvalidInput(_) => KILN_ERROR_INVALID_ARGUMENT,
        GpuError::Vulkan { .. } => KILN_ERROR_INTERNAL,
    };
    Error::new(status, error.to_string())
}

fn affine(a: &KilnAffine) -> Affine {
    a.rows
}

/// Copies `text` into a NUL-terminated fixed array, cut at a character boundary.
pub(crate) fn fixed_text<const N: usize>(text: &str) -> [c_char; N] {
    let mut out = [0 as c_char; N];
    let mut end = text.len().min(N - 1);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    for (dst, &b) in out.iter_mut().zip(&text.as_bytes()[..end]) {
        *dst = b as c_char;
    }
    out
}

/// A `KilnTracerDef` with the defaults documented on its fields.
///
/// Threads: any thread, at any time.
#[no_mangle]
pub extern "C" fn kiln_default_tracer_def() -> KilnTracerDef {
    KilnTracerDef {
        struct_size: size_of::<KilnTracerDef>() as u32,
        validation: false,
        device_index: -1,
        device_name: std::ptr::null(),
        use_environment: true,
        memory_budget_bytes: 0,
    }
}

/// A `KilnInstanceDef` with the defaults documented on its fields.
///
/// Threads: any thread, at any time.
#[no_mangle]
pub extern "C" fn kiln_default_instance_def() -> KilnInstanceDef {
    KilnInstanceDef {
        struct_size: size_of::<KilnInstanceDef>() as u32,
        mesh: KilnMeshId::default(),
        transform: KILN_AFFINE_IDENTITY,
        mask: u32::MAX,
        user_id: 0,
    }
}

/// A `KilnSkinnedMeshDef` with every pointer NULL and every count 0.
///
/// Threads: any thread, at any time.
#[no_mangle]
pub extern "C" fn kiln_default_skinned_mesh_def() -> KilnSkinnedMeshDef {
    KilnSkinnedMeshDef {
        struct_size: size_of::<KilnSkinnedMeshDef>() as u32,
        positions: std::ptr::null(),
        joints: std::ptr::null(),
        weights: std::ptr::null(),
        vertex_count: 0,
        indices: std::ptr::null(),
        triangle_count: 0,
        bone_count: 0,
    }
}

/// The affine transform that scales by `scale` (per axis, in the object's frame) and
/// then applies the rigid `transform`: the instance transform of a unit mesh drawn
/// at a body's transform. The rotation is normalised; the result is checked when used.
///
/// Threads: any thread, at any time.
#[no_mangle]
pub extern "C" fn kiln_affine_from_transform(transform: KilnTransform, scale: KilnVec3) -> KilnAffine {
    let r = transform.rotation;
    let p = transform.position;
    let rotation = Quat::from_xyzw(r.x, r.y, r.z, r.w).normalize();
    let pose = Isometry::new(Vec3::new(p.x, p.y, p.z), rotation);
    let scale = [[scale.x, 0.0, 0.0, 0.0], [0.0, scale.y, 0.0, 0.0], [0.0, 0.0, scale.z, 0.0]];
    KilnAffine { rows: compose(&isometry_affine(&pose), &scale) }
}

/// Opens a Vulkan device and creates a tracer on it. Without a Vulkan loader or a
/// usable device (Vulkan 1.2 with buffer device addresses and the memory model):
/// `KILN_ERROR_NO_DEVICE`, with the reason in the message; CPU features keep working.
///
/// Pointers: `def` is NULL or readable, its `device_name` NULL or a NUL-terminated
/// string; `out_tracer` is NULL or writable.
///
/// Threads: any thread, at any time.
#[no_mangle]
pub unsafe extern "C" fn kiln_tracer_create(def: *const KilnTracerDef, out_tracer: *mut KilnTracerId) -> KilnStatus {
    ffi_call("kiln_tracer_create", || {
        let def = non_null(def, "def")?;
        non_null(out_tracer, "out_tracer")?;
        // SAFETY: non-null; readable per the contract.
        let def = unsafe { read_def(def, "def")? };
        let memory_budget = Some(def.memory_budget_bytes).filter(|&b| b > 0);
        let mut config = GpuConfig { validation: def.validation, device: DeviceChoice::Best, memory_budget };
        if !def.device_name.is_null() {
            // SAFETY: NUL-terminated per the contract.
            let name = unsafe { CStr::from_ptr(def.device_name) }
                .to_str()
                .map_err(|_| Error::new(KILN_ERROR_INVALID_ARGUMENT, "def->device_name is not UTF-8".to_owned()))?;
            config.device = DeviceChoice::Name(name.to_owned());
        } else if def.device_index >= 0 {
            config.device = DeviceChoice::Index(def.device_index as usize);
        } else if def.device_index != -1 {
            return Err(Error::new(
                KILN_ERROR_INVALID_ARGUMENT,
                format!("def->device_index is {}: use -1 (best) or a device index", def.device_index),
            ));
        }
        if def.use_environment {
            let env = GpuConfig::from_env();
            config.validation |= env.validation;
            if env.device != DeviceChoice::Best {
                config.device = env.device;
            }
        }
        let tracer = RayTracer::new(&config).map_err(gpu_error)?;
        let (index1, generation) = TRACERS.insert(TracerEntry::new(tracer));
        write_out(out_tracer, "out_tracer", KilnTracerId { index1, generation })
    })
}

/// Destroys a tracer, its device and everything on it; its handle becomes invalid.
///
/// Threads: one call at a time per tracer (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub extern "C" fn kiln_tracer_destroy(tracer: KilnTracerId) -> KilnStatus {
    ffi_call("kiln_tracer_destroy", || TRACERS.remove(tracer.index1, tracer.generation).map(drop))
}

/// Whether `tracer` refers to a live tracer.
///
/// Threads: any thread, at any time; never busy.
#[no_mangle]
pub extern "C" fn kiln_tracer_is_valid(tracer: KilnTracerId) -> bool {
    std::panic::catch_unwind(|| TRACERS.is_valid(tracer.index1, tracer.generation)).unwrap_or(false)
}

/// Writes what device the tracer runs on to `out_info`.
///
/// Pointers: `out_info` is NULL or writable.
///
/// Threads: one call at a time per tracer (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_tracer_get_device(tracer: KilnTracerId, out_info: *mut KilnDeviceInfo) -> KilnStatus {
    ffi_call("kiln_tracer_get_device", || {
        non_null(out_info, "out_info")?;
        let info = with_tracer(tracer, |entry| {
            let info = entry.tracer.device_info();
            Ok(KilnDeviceInfo {
                name: fixed_text(&info.name),
                driver: fixed_text(&info.driver),
                kind: match info.kind {
                    DeviceKind::Discrete => KILN_DEVICE_DISCRETE,
                    DeviceKind::Integrated => KILN_DEVICE_INTEGRATED,
                    DeviceKind::Virtual => KILN_DEVICE_VIRTUAL,
                    DeviceKind::Cpu => KILN_DEVICE_CPU,
                    DeviceKind::Other => KILN_DEVICE_OTHER,
                },
                api_major: info.api_version.0,
                api_minor: info.api_version.1,
                subgroup_size: info.subgroup_size,
                timestamps: info.timestamps,
            })
        })?;
        write_out(out_info, "out_info", info)
    })
}

/// Sets the tracer's device memory budget in bytes (0: none; see
/// `KilnTracerDef::memory_budget_bytes`). Buffers already held stay; a budget below
/// what is in use only refuses new buffers. After `KILN_ERROR_OUT_OF_MEMORY`, raise
/// the budget (or remove work) and call again: nothing was lost.
///
/// Threads: one call at a time per tracer (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub extern "C" fn kiln_tracer_set_memory_budget(tracer: KilnTracerId, bytes: u64) -> KilnStatus {
    ffi_call("kiln_tracer_set_memory_budget", || {
        with_tracer(tracer, |entry| {
            entry.tracer.gpu().set_memory_budget(Some(bytes).filter(|&b| b > 0));
            Ok(())
        })
    })
}

/// Writes the bytes of device memory the tracer's buffers hold now to
/// `out_in_use`, and its budget (0: none) to `out_budget`; either may be NULL.
///
/// Pointers: `out_in_use` and `out_budget` are each NULL or writable.
///
/// Threads: one call at a time per tracer (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_tracer_get_memory(
    tracer: KilnTracerId,
    out_in_use: *mut u64,
    out_budget: *mut u64,
) -> KilnStatus {
    ffi_call("kiln_tracer_get_memory", || {
        let (in_use, budget) = with_tracer(tracer, |entry| {
            let gpu = entry.tracer.gpu();
            Ok((gpu.memory_in_use(), gpu.memory_budget().unwrap_or(0)))
        })?;
        if !out_in_use.is_null() {
            write_out(out_in_use, "out_in_use", in_use)?;
        }
        if !out_budget.is_null() {
            write_out(out_budget, "out_budget", budget)?;
        }
        Ok(())
    })
}

/// Registers a triangle mesh (a BLAS is built over it on the CPU with binned SAH and
/// uploaded before the next trace) and writes its handle to `out_mesh`. Positions
/// must be finite; indices below `vertex_count`. Instances share one copy.
///
/// Pointers: `positions` is NULL or readable for `vertex_count` entries, `indices` for
/// `3 * triangle_count`; `out_mesh` is NULL or writable.
///
/// Threads: one call at a time per tracer (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_tracer_add_mesh(
    tracer: KilnTracerId,
    positions: *const KilnVec3,
    vertex_count: u32,
    indices: *const u32,
    triangle_count: u32,
    out_mesh: *mut KilnMeshId,
) -> KilnStatus {
    ffi_call("kiln_tracer_add_mesh", || {
        non_null(out_mesh, "out_mesh")?;
        // SAFETY: readable for the counts per the contract.
        let (positions, triangles) = unsafe { read_mesh(positions, vertex_count, indices, triangle_count)? };
        let mesh = with_tracer(tracer, |entry| entry.tracer.add_mesh(&positions, &triangles).map_err(gpu_error))?;
        write_out(out_mesh, "out_mesh", c_mesh(tracer, mesh))
    })
}

/// Vertex positions and index triples.
type MeshArrays = (Vec<[f32; 3]>, Vec<[u32; 3]>);

/// Reads a mesh's vertices and triangles (shape checks only; the BLAS build checks
/// the rest).
///
/// # Safety
/// As `kiln_tracer_add_mesh`.
unsafe fn read_mesh(
    positions: *const KilnVec3,
    vertex_count: u32,
    indices: *const u32,
    triangle_count: u32,
) -> Result<MeshArrays, Error> {
    if vertex_count == 0 || triangle_count == 0 {
        return Err(Error::new(
            KILN_ERROR_INVALID_ARGUMENT,
            format!("a mesh needs vertices and triangles, got {vertex_count} and {triangle_count}"),
        ));
    }
    let index_count = triangle_count.checked_mul(3).ok_or_else(|| {
        Error::new(KILN_ERROR_INVALID_ARGUMENT, format!("triangle_count {triangle_count} is too large"))
    })?;
    // SAFETY: readable for the counts per the caller's contract.
    let positions = unsafe { read_checked(positions, vertex_count, "positions", |v, _| Ok([v.x, v.y, v.z]))? };
    // SAFETY: as above.
    let indices = unsafe { read_checked(indices, index_count, "indices", |&i, _| Ok(i))? };
    let triangles = indices.chunks_exact(3).map(|t| [t[0], t[1], t[2]]).collect();
    Ok((positions, triangles))
}

/// Places an instance of a mesh and writes its handle (named in hits) to
/// `out_instance`.
///
/// Pointers: `def` is NULL or readable; `out_instance` is NULL or writable.
///
/// Threads: one call at a time per tracer (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_tracer_add_instance(
    tracer: KilnTracerId,
    def: *const KilnInstanceDef,
    out_instance: *mut KilnInstanceId,
) -> KilnStatus {
    ffi_call("kiln_tracer_add_instance", || {
        let def = non_null(def, "def")?;
        non_null(out_instance, "out_instance")?;
        // SAFETY: non-null; readable per the contract.
        let def = unsafe { read_def(def, "def")? };
        let instance = with_tracer(tracer, |entry| {
            let mesh = live_mesh(entry, tracer, def.mesh, "def->mesh")?;
            entry.tracer.add_instance(mesh, &affine(&def.transform), def.mask, def.user_id).map_err(gpu_error)
        })?;
        write_out(out_instance, "out_instance", c_instance(tracer, Some(instance)))
    })
}

/// Adds a skinned mesh and writes its handle to `out_mesh`. Its BLAS is built once,
/// over the rest pose, and is the mold every skinned instance of it is copied from
/// and refitted to on the GPU each frame; `kiln_tracer_add_instance` of it places the
/// rest pose, rigid. Removed like any mesh, once no instance uses it.
///
/// Pointers: `def` is NULL or readable, its arrays readable for their counts;
/// `out_mesh` is NULL or writable.
///
/// Threads: one call at a time per tracer (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_tracer_add_skinned_mesh(
    tracer: KilnTracerId,
    def: *const KilnSkinnedMeshDef,
    out_mesh: *mut KilnMeshId,
) -> KilnStatus {
    ffi_call("kiln_tracer_add_skinned_mesh", || {
        let def = non_null(def, "def")?;
        non_null(out_mesh, "out_mesh")?;
        // SAFETY: non-null; readable per the contract.
        let def = unsafe { read_def(def, "def")? };
        let per_vertex = def.vertex_count.checked_mul(4).ok_or_else(|| {
            Error::new(KILN_ERROR_INVALID_ARGUMENT, format!("vertex_count {} is too large", def.vertex_count))
        })?;
        // SAFETY: the arrays are readable for their counts per the contract.
        let (rest, triangles) = unsafe { read_mesh(def.positions, def.vertex_count, def.indices, def.triangle_count)? };
        // SAFETY: readable for `4 * vertex_count` entries per the contract.
        let joints = unsafe { read_checked(def.joints, per_vertex, "def->joints", |&j, _| Ok(j))? };
        // SAFETY: as above.
        let weights = unsafe { read_checked(def.weights, per_vertex, "def->weights", |&w, _| Ok(w))? };
        let joints = joints.chunks_exact(4).map(|j| [j[0], j[1], j[2], j[3]]).collect();
        let weights = weights.chunks_exact(4).map(|w| [w[0], w[1], w[2], w[3]]).collect();
        let skin = SkinData::new(rest, joints, weights, def.bone_count).map_err(|e| gpu_error(e.into()))?;
        let mesh = with_tracer(tracer, |entry| entry.tracer.add_skinned_mesh(skin, &triangles).map_err(gpu_error))?;
        write_out(out_mesh, "out_mesh", c_mesh(tracer, mesh))
    })
}

/// Adds a skinned instance of the skinned mesh `def->mesh` (from
/// `kiln_tracer_add_skinned_mesh`; any other mesh is `KILN_ERROR_INVALID_ARGUMENT`),
/// placed by `def->transform`, bones starting as identities, and writes its handle
/// to `out_instance`. Nothing is built on the CPU: the instance is a region of the
/// GPU's transient segment, reset from the mold, skinned and refitted whenever bones
/// changed (`kiln_tracer_set_bones`).
///
/// Pointers: `def` is NULL or readable; `out_instance` is NULL or writable.
///
/// Threads: one call at a time per tracer (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_tracer_add_skinned_instance(
    tracer: KilnTracerId,
    def: *const KilnInstanceDef,
    out_instance: *mut KilnInstanceId,
) -> KilnStatus {
    ffi_call("kiln_tracer_add_skinned_instance", || {
        let def = non_null(def, "def")?;
        non_null(out_instance, "out_instance")?;
        // SAFETY: non-null; readable per the contract.
        let def = unsafe { read_def(def, "def")? };
        let instance = with_tracer(tracer, |entry| {
            let mesh = live_mesh(entry, tracer, def.mesh, "def->mesh")?;
            entry.tracer.add_skinned_instance(mesh, &affine(&def.transform), def.mask, def.user_id).map_err(gpu_error)
        })?;
        write_out(out_instance, "out_instance", c_instance(tracer, Some(instance)))
    })
}

/// Moves `count` instances: `instances[i]` gets `transforms[i]`. Every entry is
/// checked first (existing instance, invertible finite transform); a bad one fails
/// the call, naming its index, and nothing moves.
///
/// Pointers: `instances` and `transforms` are NULL or readable for `count` entries.
///
/// Threads: one call at a time per tracer (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_tracer_set_transforms(
    tracer: KilnTracerId,
    instances: *const KilnInstanceId,
    transforms: *const KilnAffine,
    count: u32,
) -> KilnStatus {
    ffi_call("kiln_tracer_set_transforms", || {
        // SAFETY: readable for `count` entries per the contract.
        let instances = unsafe { read_checked(instances, count, "instances", |&i, _| Ok(i))? };
        // SAFETY: as above.
        let transforms = unsafe { read_checked(transforms, count, "transforms", |t, _| Ok(affine(t)))? };
        with_tracer(tracer, |entry| {
            let ids = instances
                .iter()
                .enumerate()
                .map(|(i, &id)| live_instance(entry, tracer, id, &format!("instances[{i}]")))
                .collect::<Result<Vec<_>, _>>()?;
            entry.tracer.set_transforms(&ids, &transforms).map_err(gpu_error)
        })
    })
}

/// Sets all `bone_count` bones of a skinned instance (exactly its bone count, all
/// finite). The GPU skins and refits its mesh before the next trace.
///
/// Pointers: `bones` is NULL or readable for `bone_count` entries.
///
/// Threads: one call at a time per tracer (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_tracer_set_bones(
    tracer: KilnTracerId,
    instance: KilnInstanceId,
    bones: *const KilnAffine,
    bone_count: u32,
) -> KilnStatus {
    ffi_call("kiln_tracer_set_bones", || {
        non_null(bones, "bones")?;
        with_tracer(tracer, |entry| {
            let instance = live_instance(entry, tracer, instance, "instance")?;
            // The count is checked before the array is read (a huge one reads nothing).
            let want = entry.tracer.bone_count(instance).map_err(gpu_error)?;
            if bone_count != want {
                return Err(Error::new(
                    KILN_ERROR_INVALID_ARGUMENT,
                    format!("instance has {want} bones, bone_count is {bone_count}"),
                ));
            }
            // SAFETY: readable for `bone_count` entries per the contract.
            let bones = unsafe { read_checked(bones, bone_count, "bones", |b, _| Ok(affine(b)))? };
            entry.tracer.set_bones(instance, &bones).map_err(gpu_error)
        })
    })
}

/// Makes `instance` follow a physics body: at every `kiln_tracer_sync_world` its
/// transform becomes the body's transform times `local` (NULL: identity; e.g. a
/// scale from a unit cube to the body's box). All followed bodies of a tracer belong
/// to one world. Following again replaces the earlier body.
///
/// Pointers: `local` is NULL or readable.
///
/// Threads: one call at a time per tracer (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_tracer_follow_body(
    tracer: KilnTracerId,
    instance: KilnInstanceId,
    body: KilnBodyId,
    local: *const KilnAffine,
) -> KilnStatus {
    ffi_call("kiln_tracer_follow_body", || {
        // SAFETY: NULL or readable per the contract.
        let local = if local.is_null() { IDENTITY } else { affine(&unsafe { local.read() }) };
        let key = live_body(body)?;
        with_tracer(tracer, |entry| {
            if let Some(world) = entry.world.filter(|w| *w != body.world) {
                return Err(Error::new(
                    KILN_ERROR_INVALID_ARGUMENT,
                    format!("the tracer follows bodies of world {world:?}; this body is in {:?}", body.world),
                ));
            }
            let instance = live_instance(entry, tracer, instance, "instance")?;
            entry.tracer.follow_body(instance, key.to_bits(), &local).map_err(gpu_error)?;
            entry.world = Some(body.world);
            Ok(())
        })
    })
}

/// Stops `instance` following its body (it stays where it is). Not following is fine.
///
/// Threads: one call at a time per tracer (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub extern "C" fn kiln_tracer_unfollow(tracer: KilnTracerId, instance: KilnInstanceId) -> KilnStatus {
    ffi_call("kiln_tracer_unfollow", || {
        with_tracer(tracer, |entry| {
            let instance = live_instance(entry, tracer, instance, "instance")?;
            entry.tracer.unfollow(instance);
            Ok(())
        })
    })
}

/// Removes an instance: it leaves the next trace, stops following its body, and a
/// skinned instance's skin and own mesh copy go with it (the copy as
/// `kiln_tracer_remove_mesh` describes). Its handle (and
/// every copy of it) is refused from then on. Another instance may take its place
/// in the GPU's instance array: C hits always name instances by handle.
///
/// Threads: one call at a time per tracer (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub extern "C" fn kiln_tracer_remove_instance(tracer: KilnTracerId, instance: KilnInstanceId) -> KilnStatus {
    ffi_call("kiln_tracer_remove_instance", || {
        with_tracer(tracer, |entry| {
            let instance = live_instance(entry, tracer, instance, "instance")?;
            entry.tracer.remove_instance(instance).map_err(gpu_error)
        })
    })
}

/// Removes a mesh and its BLAS. Its place in the device's mesh arrays is a hole
/// until holes outgrow the live meshes; then the arrays are compacted and sized
/// anew before the next trace or update, and `kiln_tracer_get_memory` goes down.
/// Refused with `KILN_ERROR_INVALID_ARGUMENT` while an instance uses it: remove
/// those first.
///
/// Threads: one call at a time per tracer (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub extern "C" fn kiln_tracer_remove_mesh(tracer: KilnTracerId, mesh: KilnMeshId) -> KilnStatus {
    ffi_call("kiln_tracer_remove_mesh", || {
        with_tracer(tracer, |entry| {
            let mesh = live_mesh(entry, tracer, mesh, "mesh")?;
            entry.tracer.remove_mesh(mesh).map_err(gpu_error)
        })
    })
}

/// Copies the transform of every followed body of `world` into its instance (call it
/// after stepping). An instance whose body was destroyed is hidden (mask 0) and stops
/// following; their number goes to `out_hidden` (NULL allowed).
///
/// Pointers: `out_hidden` is NULL or writable.
///
/// Threads: one call at a time per tracer (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_tracer_sync_world(
    tracer: KilnTracerId,
    world: KilnWorldId,
    out_hidden: *mut u32,
) -> KilnStatus {
    ffi_call("kiln_tracer_sync_world", || {
        // Lock order: world, then tracer (the only call that holds both).
        let hidden = with_world_state(world, |state| {
            with_tracer(tracer, |entry| match entry.world {
                Some(followed) if followed != world => Err(Error::new(
                    KILN_ERROR_INVALID_ARGUMENT,
                    format!("the tracer follows bodies of world {followed:?}, not {world:?}"),
                )),
                _ => Ok(entry.tracer.sync_poses(|key| state.transform(BodyId::from_bits(key)).ok())),
            })
        })?;
        if !out_hidden.is_null() {
            write_out(out_hidden, "out_hidden", hidden)?;
        }
        Ok(())
    })
}

/// Mirrors a voxel terrain in the tracer: one mesh and instance per chunk with
/// triangles (the surface physics and terrain queries use), seen by rays whose mask
/// shares a bit with `mask`, reported with `user_id`. Replaces a terrain added
/// before. Writes the triangle count to `out_triangles` (NULL allowed). After
/// editing the terrain, `kiln_tracer_sync_terrain` re-meshes only what the edits
/// touched.
///
/// Pointers: `out_triangles` is NULL or writable.
///
/// Threads: one call at a time per tracer and terrain (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_tracer_add_terrain(
    tracer: KilnTracerId,
    terrain: KilnTerrainId,
    mask: u32,
    user_id: u32,
    out_triangles: *mut u32,
) -> KilnStatus {
    ffi_call("kiln_tracer_add_terrain", || {
        // Lock order: terrain (and its world), then tracer.
        let done = with_terrain(terrain, |t| {
            with_tracer(tracer, |entry| {
                let done = entry.tracer.add_terrain(t, mask, user_id).map_err(gpu_error)?;
                entry.terrain = Some(terrain);
                Ok(done)
            })
        })?;
        if !out_triangles.is_null() {
            write_out(out_triangles, "out_triangles", done.triangles)?;
        }
        Ok(())
    })
}

/// Brings the terrain added by `kiln_tracer_add_terrain` up to date with its edits
/// since the last add or sync: only the chunks they re-shaped are meshed again and
/// uploaded before the next trace (bytes in proportion to those chunks). Without an
/// edit it does nothing. Writes the number of chunks meshed again to `out_chunks`
/// (NULL allowed). Refused for another terrain or a tracer with none.
///
/// Pointers: `out_chunks` is NULL or writable.
///
/// Threads: one call at a time per tracer and terrain (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_tracer_sync_terrain(
    tracer: KilnTracerId,
    terrain: KilnTerrainId,
    out_chunks: *mut u32,
) -> KilnStatus {
    ffi_call("kiln_tracer_sync_terrain", || {
        let done = with_terrain(terrain, |t| {
            with_tracer(tracer, |entry| match entry.terrain {
                Some(added) if added == terrain => entry.tracer.sync_terrain(t).map_err(gpu_error),
                Some(added) => Err(Error::new(
                    KILN_ERROR_INVALID_ARGUMENT,
                    format!("the tracer mirrors terrain {added:?}, not {terrain:?}"),
                )),
                None => Err(Error::new(KILN_ERROR_INVALID_ARGUMENT, "no terrain was added to this tracer".to_owned())),
            })
        })?;
        if !out_chunks.is_null() {
            write_out(out_chunks, "out_chunks", done.chunks)?;
        }
        Ok(())
    })
}

/// Brings the device up to date (instances, skinning + refit, TLAS rebuild) without
/// tracing; `kiln_tracer_trace` does this itself. Submits and waits: on an embedded
/// tracer it is refused with `KILN_ERROR_INVALID_STATE` (record with
/// `kiln_tracer_record_update`).
///
/// Threads: one call at a time per tracer (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub extern "C" fn kiln_tracer_update(tracer: KilnTracerId) -> KilnStatus {
    ffi_call("kiln_tracer_update", || {
        with_tracer(tracer, |entry| {
            refuse_embedded(&entry.tracer, "kiln_tracer_update", "kiln_tracer_record_update")?;
            entry.tracer.update().map_err(gpu_error)
        })
    })
}

/// Traces `count` rays on the GPU and writes one hit per ray to `hits`.
/// `mode` is `KILN_TRACE_CLOSEST` or `KILN_TRACE_ANY`. Every ray is checked first
/// (finite origin, finite non-zero direction, `0 <= t_min <= t_max`); a bad one
/// fails the call, naming its index, and nothing is written. The scene is updated
/// first when transforms, bones or followed bodies changed. Submits and waits: on an
/// embedded tracer it is refused with `KILN_ERROR_INVALID_STATE` (record with
/// `kiln_tracer_record_trace`).
///
/// Pointers: `rays` is NULL or readable and `hits` NULL or writable for `count`
/// entries.
///
/// Threads: one call at a time per tracer (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_tracer_trace(
    tracer: KilnTracerId,
    rays: *const KilnTraceRay,
    count: u32,
    mode: u32,
    hits: *mut KilnTraceHit,
) -> KilnStatus {
    ffi_call("kiln_tracer_trace", || {
        let mode = trace_mode(mode)?;
        with_tracer(tracer, |entry| refuse_embedded(&entry.tracer, "kiln_tracer_trace", "kiln_tracer_record_trace"))?;
        if count == 0 {
            return Ok(());
        }
        let rays = non_null(rays, "rays")?;
        non_null(hits, "hits")?;
        // SAFETY: readable for `count` entries per the contract.
        let rays = unsafe { std::slice::from_raw_parts(rays, count as usize) };
        with_tracer(tracer, |entry| {
            set_rays(&mut entry.rays, rays);
            entry.hits.clear();
            entry.hits.resize(count as usize, GpuHit::default());
            entry.tracer.trace(&entry.rays, mode, &mut entry.hits).map_err(gpu_error)?;
            let rt = &entry.tracer;
            // SAFETY: writable for `count` entries per the contract.
            unsafe { write_hits(&entry.hits, hits, |packed| c_instance(tracer, rt.instance_at(packed))) };
            Ok(())
        })
    })
}

/// Refuses a call that would submit on an embedded tracer's device (the engine's
/// queue, which only the engine submits to), naming the call that records instead.
pub(crate) fn refuse_embedded(tracer: &RayTracer, call: &str, twin: &str) -> Result<(), Error> {
    if tracer.gpu().is_embedded() {
        return Err(Error::new(
            KILN_ERROR_INVALID_STATE,
            format!(
                "{call} would submit to the engine's queue; on a tracer from kiln_tracer_create_embedded Kiln only \
                 records into the engine's command buffers: use {twin}"
            ),
        ));
    }
    Ok(())
}

/// `KILN_TRACE_CLOSEST` or `KILN_TRACE_ANY` as a mode.
pub(crate) fn trace_mode(mode: u32) -> Result<TraceMode, Error> {
    match mode {
        KILN_TRACE_CLOSEST => Ok(TraceMode::Closest),
        KILN_TRACE_ANY => Ok(TraceMode::Any),
        _ => Err(Error::new(
            KILN_ERROR_INVALID_ARGUMENT,
            format!("mode {mode} is neither KILN_TRACE_CLOSEST nor KILN_TRACE_ANY"),
        )),
    }
}

/// Converts C rays into `out` (reused between calls).
pub(crate) fn set_rays(out: &mut Vec<GpuRay>, rays: &[KilnTraceRay]) {
    out.clear();
    out.extend(rays.iter().map(|r| GpuRay {
        origin: [r.origin.x, r.origin.y, r.origin.z],
        t_min: r.t_min,
        dir: [r.direction.x, r.direction.y, r.direction.z],
        t_max: r.t_max,
        mask: r.mask,
        ..GpuRay::default()
    }));
}

/// Writes `hits` as C hits (a miss has `t = +inf` and the null instance), the
/// instances named by `id_of` from their packed position.
///
/// # Safety
/// `out` is writable for `hits.len()` entries.
pub(crate) unsafe fn write_hits(hits: &[GpuHit], out: *mut KilnTraceHit, id_of: impl Fn(u32) -> KilnInstanceId) {
    for (i, h) in hits.iter().enumerate() {
        let miss = h.instance == NO_HIT;
        let hit = KilnTraceHit {
            t: if miss { f32::INFINITY } else { h.t },
            instance: if miss { KilnInstanceId::default() } else { id_of(h.instance) },
            primitive: h.primitive,
            user_id: h.user_id,
            normal: KilnVec3 { x: h.normal[0], y: h.normal[1], z: h.normal[2] },
            u: h.u,
            v: h.v,
            flags: h.flags,
        };
        // SAFETY: writable for `hits.len()` entries per the contract; `i` is below.
        unsafe { out.add(i).write(hit) };
    }
}

/// Writes the GPU time of each pass of the last `kiln_tracer_update` or
/// `kiln_tracer_trace`, in pass order, to `out_timings` (up to `capacity`), and the
/// number of passes to `out_count`. Empty when the device has no timestamps.
///
/// Pointers: `out_timings` is NULL or writable for `capacity` entries; `out_count` is
/// NULL or writable.
///
/// Threads: one call at a time per tracer (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_tracer_get_timings(
    tracer: KilnTracerId,
    out_timings: *mut KilnGpuPassTiming,
    capacity: u32,
    out_count: *mut u32,
) -> KilnStatus {
    ffi_call("kiln_tracer_get_timings", || {
        non_null(out_count, "out_count")?;
        // SAFETY: writable for `capacity` entries per the contract.
        let mut out = unsafe { CountedOut::new(out_timings, capacity, "out_timings")? };
        with_tracer(tracer, |entry| {
            for timing in entry.tracer.frame_timings() {
                out.push(KilnGpuPassTiming { name: fixed_text(timing.name), milliseconds: timing.milliseconds });
            }
            Ok(())
        })?;
        write_out(out_count, "out_count", out.count())
    })
}

/// Writes the validation-layer warnings and errors collected so far (only with
/// `KilnTracerDef::validation`), one per line, NUL-terminated, into `buffer` (cut to
/// `capacity` bytes; NULL allowed with capacity 0), and their count to `out_count`.
///
/// Pointers: `buffer` is NULL or writable for `capacity` bytes; `out_count` is NULL or
/// writable.
///
/// Threads: one call at a time per tracer (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_tracer_get_validation_messages(
    tracer: KilnTracerId,
    buffer: *mut c_char,
    capacity: usize,
    out_count: *mut u32,
) -> KilnStatus {
    ffi_call("kiln_tracer_get_validation_messages", || {
        non_null(out_count, "out_count")?;
        if capacity > 0 {
            non_null(buffer, "buffer")?;
        }
        let messages = with_tracer(tracer, |entry| Ok(entry.tracer.validation_messages()))?;
        if capacity > 0 {
            let text = messages.join("\n");
            let len = text.len().min(capacity - 1);
            // SAFETY: writable for `capacity > len` bytes per the contract.
            unsafe {
                std::ptr::copy_nonoverlapping(text.as_ptr(), buffer.cast::<u8>(), len);
                buffer.add(len).write(0);
            }
        }
        write_out(out_count, "out_count", messages.len() as u32)
    })
}
