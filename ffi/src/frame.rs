//! The integrated frame through the C ABI: a world's step, its bodies' instances in a
//! tracer's TLAS and a probe volume's update in one frame graph, the GPU's work
//! overlapping the next step on the CPU.
//!
//! ```c
//! KilnFrameDef def = kiln_default_frame_def();
//! def.world = world;                 // required
//! def.tracer = tracer;               // optional: instances follow bodies
//! def.gi = gi;                       // optional: a volume on that tracer
//! KilnFrameId frame;
//! kiln_frame_create(&def, &frame);
//! for (;;) {
//!     /* edit the world, move characters, apply forces ... */
//!     kiln_frame_run(frame, runtime, 1.0f / 60.0f);
//!     KilnFrameTiming timing;        // CPU and GPU times, and how much overlapped
//!     kiln_frame_get_timing(frame, &timing);
//! }
//! kiln_frame_destroy(frame);         // the world, tracer and volume stay
//! ```
//!
//! The frame borrows its world, tracer and volume for the length of each
//! `kiln_frame_run`, and only then: between runs their handles work as always (body
//! edits, traces, samples), and during a run a call on one of them from another
//! thread gets `KILN_ERROR_INVALID_STATE` (busy), as for any object in use. A run
//! after one of them was destroyed gets `KILN_ERROR_INVALID_HANDLE` and changes
//! nothing.
//!
//! Each run submits the GPU work for the *previous* step's poses at its start and
//! waits for it after this step's last stage, so the GPU scene (and what a trace
//! or a probe sample sees) lags the world by one step. `kiln_frame_get_passes` and
//! `kiln_frame_get_gpu_passes` break a run down by pass.

use std::ffi::{c_void, CString};
use std::mem::size_of;

use kiln_core::gpu::vk::{self, Handle};
use kiln_core::integrated::{GpuFrameTiming, GpuSide, IntegratedFrame};
use kiln_core::physics::{World, WorldDef};

use crate::abi::{
    ffi_call, non_null, read_def, write_out, CountedOut, Error, KilnStatus, KILN_ERROR_INVALID_ARGUMENT,
    KILN_ERROR_INVALID_STATE,
};
use crate::gi::{KilnGiId, VOLUMES};
use crate::handles::HandleTable;
use crate::runtime::on_executor;
use crate::runtime::{KilnPassId, KilnPassProfile, KilnProfile, KilnRuntimeId};

use crate::tracer::{fixed_text, refuse_embedded, KilnGpuPassTiming, KilnTracerId, TracerEntry, TRACERS};
use crate::world::{with_world, KilnWorldId, KILN_WORLD_MAX_STEP};

/// Handle to an integrated frame. `{0, 0}` is the null handle. Pass by value.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KilnFrameId {
    /// Slot index plus one (0 means null).
    pub index1: u32,
    /// Slot generation; a destroyed frame's handles no longer match.
    pub generation: u32,
}

/// What an integrated frame runs. Initialise with `kiln_default_frame_def()`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KilnFrameDef {
    /// `sizeof(KilnFrameDef)`, set by `kiln_default_frame_def()`.
    pub struct_size: u32,
    /// The world to step (required).
    pub world: KilnWorldId,
    /// The tracer whose instances follow the world's bodies
    /// (`kiln_tracer_follow_body`), or `{0, 0}` for a physics-only frame. Each run
    /// brings its instances to the last step's poses and rebuilds its TLAS.
    pub tracer: KilnTracerId,
    /// A probe volume created on `tracer`, updated every run (its
    /// `probes_per_frame` probes), or `{0, 0}`.
    pub gi: KilnGiId,
    /// Whether the GPU's work runs while the CPU steps (default true). False waits
    /// for it at once: the sequential frame the overlap is measured against.
    pub overlap: bool,
}

/// Timing of the last `kiln_frame_run`. All times are wall-clock milliseconds.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct KilnFrameTiming {
    /// Frames run so far, counting this one from 0.
    pub frame_index: u64,
    /// The whole run on the CPU, submission to wait.
    pub cpu_ms: f64,
    /// The physics step's six stages (broadphase to sleep), as `kiln_world_get_profile`
    /// reports them.
    pub physics_ms: f64,
    /// The GPU's time for the run's submission: the sum of its passes' timestamps
    /// (`kiln_frame_get_gpu_passes`). 0 without a tracer or without timestamps.
    pub gpu_ms: f64,
    /// CPU time from the submission to the wait: the step ran meanwhile.
    pub overlapped_cpu_ms: f64,
    /// How long the wait blocked: the GPU time the step did not hide.
    pub blocked_ms: f64,
    /// The share of `gpu_ms` hidden behind the step, 0 to 1 (1: the wait never
    /// blocked; 0 without GPU work or with `overlap` off).
    pub hidden_fraction: f64,
    /// Probes the run updated (0 without a volume).
    pub probes_updated: u32,
    /// Instances of the tracer at the run (0 without one).
    pub instance_count: u32,
}

/// A frame behind a handle: the graph and what it borrows each run.
struct FrameEntry {
    frame: IntegratedFrame,
    world: KilnWorldId,
    tracer: Option<KilnTracerId>,
    gi: Option<KilnGiId>,
    overlap: bool,
    pass_names: Vec<CString>,
    timing: KilnFrameTiming,
    gpu_passes: Vec<KilnGpuPassTiming>,
    ran: bool,
}

static FRAMES: HandleTable<FrameEntry> = HandleTable::new("frame");

fn invalid(message: String) -> Error {
    Error::new(KILN_ERROR_INVALID_ARGUMENT, message)
}

/// A `KilnFrameDef` with the defaults documented on its fields.
///
/// Threads: any thread, at any time.
#[no_mangle]
pub extern "C" fn kiln_default_frame_def() -> KilnFrameDef {
    KilnFrameDef {
        struct_size: size_of::<KilnFrameDef>() as u32,
        world: KilnWorldId::default(),
        tracer: KilnTracerId::default(),
        gi: KilnGiId::default(),
        overlap: true,
    }
}

/// Creates an integrated frame over `def->world` and, when given, `def->tracer` and
/// `def->gi`. Checks that they are live, that a volume is on the given tracer and
/// that the tracer follows bodies of this world (if it follows any); borrows them
/// only while `kiln_frame_run` runs.
///
/// Pointers: `def` is NULL or readable; `out_frame` is NULL or writable.
///
/// Threads: any thread, at any time.
#[no_mangle]
pub unsafe extern "C" fn kiln_frame_create(def: *const KilnFrameDef, out_frame: *mut KilnFrameId) -> KilnStatus {
    ffi_call("kiln_frame_create", || {
        let def = non_null(def, "def")?;
        non_null(out_frame, "out_frame")?;
        // SAFETY: non-null; readable per the contract.
        let def = unsafe { read_def(def, "def")? };
        let tracer = (def.tracer != KilnTracerId::default()).then_some(def.tracer);
        let gi = (def.gi != KilnGiId::default()).then_some(def.gi);
        with_world(def.world, |_| Ok(()))?;
        if let Some(t) = tracer {
            TRACERS.with(t.index1, t.generation, |entry| check_follows(entry.world, def.world))?;
        }
        if let Some(g) = gi {
            let on = VOLUMES.with(g.index1, g.generation, |entry| Ok(entry.tracer))?;
            if Some(on) != tracer {
                return Err(invalid(format!(
                    "def->gi is a volume on tracer {on:?}, but def->tracer is {:?}: give the volume's tracer",
                    def.tracer
                )));
            }
        }
        // The world is lent to the frame for each run; between runs the graph holds
        // an empty one (with no bodies it allocates nothing).
        let frame = IntegratedFrame::new(World::new(WorldDef::default()), None);
        let graph = frame.graph();
        let pass_names = (frame.profile().passes.iter())
            .map(|t| CString::new(graph.pass_name(t.pass)).expect("no NUL in pass names"))
            .collect();
        let entry = FrameEntry {
            frame,
            world: def.world,
            tracer,
            gi,
            overlap: def.overlap,
            pass_names,
            timing: KilnFrameTiming::default(),
            gpu_passes: Vec::new(),
            ran: false,
        };
        let (index1, generation) = FRAMES.insert(entry);
        write_out(out_frame, "out_frame", KilnFrameId { index1, generation })
    })
}

fn check_follows(followed: Option<KilnWorldId>, world: KilnWorldId) -> Result<(), Error> {
    match followed {
        Some(followed) if followed != world => Err(invalid(format!(
            "the tracer's instances follow bodies of world {followed:?}, not the frame's world {world:?}"
        ))),
        _ => Ok(()),
    }
}

/// Destroys a frame; its handle becomes invalid. Its world, tracer and volume stay.
///
/// Threads: one call at a time per world, its bodies and joints (busy: `KILN_ERROR_INVALID_STATE`).
#[no_mangle]
pub extern "C" fn kiln_frame_destroy(frame: KilnFrameId) -> KilnStatus {
    ffi_call("kiln_frame_destroy", || FRAMES.remove(frame.index1, frame.generation).map(drop))
}

/// Whether `frame` refers to a live frame.
///
/// Threads: any thread, at any time; never busy.
#[no_mangle]
pub extern "C" fn kiln_frame_is_valid(frame: KilnFrameId) -> bool {
    std::panic::catch_unwind(|| FRAMES.is_valid(frame.index1, frame.generation)).unwrap_or(false)
}

/// Runs one frame of `dt` seconds (finite, 0 to `KILN_WORLD_MAX_STEP`) with jobs on
/// `runtime`'s workers, or on the calling thread for `{0, 0}`:
///
/// 1. `gpu.submit` (with the step's first stage): the tracer's followed instances
///    move to the previous run's poses, and one GPU submission uploads them, refits
///    and rebuilds the TLAS and updates the volume's next probes. It returns at once.
/// 2. The world's step: `physics.broadphase` ... `physics.sleep`, bit-identical for
///    any worker count (the GPU work does not touch the world).
/// 3. `poses`: this step's poses, for the next run's submission.
/// 4. `gpu.wait`: waits for the submission and reads its timings.
///
/// A failing stage gives `KILN_ERROR_PASS_FAILED` with its message; the world,
/// tracer and volume are given back in every case. A frame whose tracer is embedded
/// is refused with `KILN_ERROR_INVALID_STATE`, nothing run: Kiln submits nothing on
/// an engine's device (use `kiln_frame_run_into`).
///
/// Threads: one call at a time per world, its bodies and joints (busy: `KILN_ERROR_INVALID_STATE`).
#[no_mangle]
pub extern "C" fn kiln_frame_run(frame: KilnFrameId, runtime: KilnRuntimeId, dt: f32) -> KilnStatus {
    ffi_call("kiln_frame_run", || {
        if !(dt.is_finite() && (0.0..=KILN_WORLD_MAX_STEP).contains(&dt)) {
            return Err(invalid(format!("dt is {dt}, must be finite and within 0..=KILN_WORLD_MAX_STEP")));
        }
        FRAMES.with(frame.index1, frame.generation, |f| run(f, runtime, dt, None))
    })
}

/// Embedded mode: runs one frame as `kiln_frame_run`, but `gpu.submit` records the
/// GPU work (the instances' upload, refit and TLAS rebuild, the volume's probe
/// update with its irradiance read-back) into the engine's `command_buffer` for
/// `frame_slot` instead of submitting it, and `gpu.wait` waits for nothing: the
/// engine submits the command buffer with its own frame. Kiln calls no
/// `vkQueueSubmit`. The frame's tracer must be embedded (`kiln_tracer_create_embedded`);
/// the contract of the recording is `kiln_tracer_record_trace`'s (slots, order,
/// entry and exit barriers), so the engine's commands recorded after this call may
/// read the TLAS (`kiln_tracer_get_trace_buffers`) and the probes
/// (`kiln_gi_get_gpu_buffers`). No GPU time is measured (`gpu_ms` is 0). The
/// recording happens on one of `runtime`'s workers while the call runs.
///
/// Refused (`KILN_ERROR_INVALID_ARGUMENT`, nothing run) for a frame without a tracer,
/// a tracer that is not embedded, or a `frame_slot` it does not have.
///
/// Pointers: `command_buffer` is a recording `VkCommandBuffer` of the tracer's
/// device, outside a render pass, that the engine does not record into during the
/// call.
///
/// Threads: one call at a time per world, its bodies and joints (busy: `KILN_ERROR_INVALID_STATE`).
#[no_mangle]
pub unsafe extern "C" fn kiln_frame_run_into(
    frame: KilnFrameId,
    runtime: KilnRuntimeId,
    dt: f32,
    command_buffer: *mut c_void,
    frame_slot: u32,
) -> KilnStatus {
    ffi_call("kiln_frame_run_into", || {
        if !(dt.is_finite() && (0.0..=KILN_WORLD_MAX_STEP).contains(&dt)) {
            return Err(invalid(format!("dt is {dt}, must be finite and within 0..=KILN_WORLD_MAX_STEP")));
        }
        non_null(command_buffer.cast_const(), "command_buffer")?;
        let cmd = vk::CommandBuffer::from_raw(command_buffer as u64);
        FRAMES.with(frame.index1, frame.generation, |f| run(f, runtime, dt, Some((cmd, frame_slot))))
    })
}

/// Lock order: frame, world, volume, tracer (the world before the tracer as in
/// `kiln_tracer_sync_world`, the volume before its tracer as in `kiln_gi_update`).
fn run(
    f: &mut FrameEntry,
    runtime: KilnRuntimeId,
    dt: f32,
    into: Option<(vk::CommandBuffer, u32)>,
) -> Result<(), Error> {
    with_world(f.world, |w| {
        with_optional(&VOLUMES, f.gi.map(|g| (g.index1, g.generation)), |mut gi| {
            with_optional(&TRACERS, f.tracer.map(|t| (t.index1, t.generation)), |mut tracer| {
                if let Some(t) = tracer.as_deref() {
                    check_follows(t.world, f.world)?;
                }
                match (into, tracer.as_deref()) {
                    (Some((_, slot)), _) => check_recording(tracer.as_deref(), slot)?,
                    (None, Some(t)) => refuse_embedded(&t.tracer, "kiln_frame_run", "kiln_frame_run_into")?,
                    (None, None) => {}
                }
                if let (Some(g), Some(t)) = (gi.as_deref(), f.tracer) {
                    if g.tracer != t {
                        return Err(Error::new(KILN_ERROR_INVALID_STATE, "the frame's volume is on another tracer"));
                    }
                }
                on_executor(runtime, |executor| {
                    // Lend: the world, tracer and volume move into the graph ...
                    let placeholder = f.frame.replace_world(w.world.lend());
                    if let Some(t) = tracer.as_deref_mut() {
                        let mut side = GpuSide::new(t.tracer.lend(), gi.as_deref_mut().map(|g| g.volume.lend()));
                        side.overlap = f.overlap;
                        f.frame.replace_gpu(Some(side));
                    }
                    let result = match into {
                        None => f.frame.run(executor, dt),
                        // SAFETY: per kiln_frame_run_into's contract; the tracer is
                        // embedded and has the slot (checked above).
                        Some((cmd, slot)) => unsafe { f.frame.run_into(executor, dt, cmd, slot) },
                    };
                    // ... and back, whatever happened.
                    let side = f.frame.replace_gpu(None);
                    let gpu = side.as_ref().map_or_else(GpuFrameTiming::default, |s| s.timing());
                    let mut instances = 0;
                    if let Some(side) = side {
                        // A failed run keeps the last good run's passes, as it keeps its timing.
                        if result.is_ok() {
                            f.gpu_passes.clear();
                            f.gpu_passes.extend(
                                side.pass_timings().iter().map(|t| KilnGpuPassTiming {
                                    name: fixed_text(t.name),
                                    milliseconds: t.milliseconds,
                                }),
                            );
                        }
                        instances = side.tracer.scene().instances().len() as u32;
                        let (t, volume) = side.into_parts();
                        if let Some(entry) = tracer {
                            entry.tracer.put_back(t);
                        }
                        if let (Some(entry), Some(volume)) = (gi, volume) {
                            entry.volume.put_back(volume);
                        }
                    }
                    w.world.put_back(f.frame.replace_world(placeholder));
                    result.map_err(Error::from)?;
                    let profile = f.frame.profile();
                    let physics = w.world.profile();
                    f.timing = KilnFrameTiming {
                        frame_index: profile.frame_index,
                        cpu_ms: profile.total_ns as f64 * 1e-6,
                        physics_ms: physics.total as f64,
                        gpu_ms: gpu.gpu_ms,
                        overlapped_cpu_ms: gpu.overlapped_cpu_ms,
                        blocked_ms: gpu.blocked_ms,
                        hidden_fraction: gpu.hidden_fraction(),
                        probes_updated: gpu.probes_updated,
                        instance_count: instances,
                    };
                    f.ran = true;
                    Ok(())
                })
            })
        })
    })
}

/// Refuses a recorded run without an embedded tracer that has `slot`.
fn check_recording(tracer: Option<&TracerEntry>, slot: u32) -> Result<(), Error> {
    let Some(t) = tracer else {
        return Err(invalid("the frame has no tracer, so nothing to record: use kiln_frame_run".to_owned()));
    };
    let gpu = t.tracer.gpu();
    if !gpu.is_embedded() {
        return Err(invalid(
            "the frame's tracer is not embedded (kiln_tracer_create_embedded): use kiln_frame_run".to_owned(),
        ));
    }
    if slot >= gpu.frames_in_flight() {
        return Err(invalid(format!("frame_slot {slot} of {}", gpu.frames_in_flight())));
    }
    Ok(())
}

/// Runs `f` with the entry behind an optional handle locked (`None` for no handle).
fn with_optional<T, R>(
    table: &HandleTable<T>,
    handle: Option<(u32, u32)>,
    f: impl FnOnce(Option<&mut T>) -> Result<R, Error>,
) -> Result<R, Error> {
    match handle {
        Some((index1, generation)) => table.with(index1, generation, |entry| f(Some(entry))),
        None => f(None),
    }
}

fn ran(f: &FrameEntry) -> Result<(), Error> {
    if f.ran {
        Ok(())
    } else {
        Err(Error::new(KILN_ERROR_INVALID_STATE, "the frame has not run yet"))
    }
}

/// Writes the last run's timing to `out_timing`. `KILN_ERROR_INVALID_STATE` before
/// the first successful run.
///
/// Pointers: `out_timing` is NULL or writable.
///
/// Threads: one call at a time per world, its bodies and joints (busy: `KILN_ERROR_INVALID_STATE`).
#[no_mangle]
pub unsafe extern "C" fn kiln_frame_get_timing(frame: KilnFrameId, out_timing: *mut KilnFrameTiming) -> KilnStatus {
    ffi_call("kiln_frame_get_timing", || {
        non_null(out_timing, "out_timing")?;
        let timing = FRAMES.with(frame.index1, frame.generation, |f| ran(f).map(|()| f.timing))?;
        write_out(out_timing, "out_timing", timing)
    })
}

/// The CPU side of the last run, pass by pass, as `kiln_runtime_get_profile` gives a
/// runtime's: `out_profile` (optional) receives the totals, `passes` one entry per
/// pass in graph order (`gpu.submit`, `physics.broadphase` ... `physics.sleep`,
/// `poses`, `gpu.wait`; names valid until the frame is destroyed; `pass` is
/// `{index + 1, 0}`: not a runtime's pass). The GPU work runs from the end of
/// `gpu.submit` to the end of `gpu.wait`: the passes between are what overlapped it.
/// Writes up to `capacity` entries and the number of passes to `out_count` (NULL
/// with `capacity` 0 for just the count). `KILN_ERROR_INVALID_STATE` before the
/// first successful run.
///
/// Pointers: `out_profile` is NULL or writable; `passes` is NULL or has `capacity`
/// writable entries; `out_count` is NULL or writable.
///
/// Threads: one call at a time per world, its bodies and joints (busy: `KILN_ERROR_INVALID_STATE`).
#[no_mangle]
pub unsafe extern "C" fn kiln_frame_get_passes(
    frame: KilnFrameId,
    out_profile: *mut KilnProfile,
    passes: *mut KilnPassProfile,
    capacity: u32,
    out_count: *mut u32,
) -> KilnStatus {
    ffi_call("kiln_frame_get_passes", || {
        non_null(out_count, "out_count")?;
        // SAFETY: writable for `capacity` entries per the contract.
        let mut out = unsafe { CountedOut::new(passes, capacity, "passes")? };
        let totals = FRAMES.with(frame.index1, frame.generation, |f| {
            ran(f)?;
            let profile = f.frame.profile();
            for (i, timing) in profile.passes.iter().enumerate() {
                out.push(KilnPassProfile {
                    name: f.pass_names[i].as_ptr(),
                    pass: KilnPassId { index1: i as u32 + 1, owner: 0 },
                    level: timing.level,
                    worker_index: timing.worker,
                    start_ns: timing.start_ns,
                    duration_ns: timing.duration_ns,
                });
            }
            Ok(KilnProfile {
                frame_index: profile.frame_index,
                total_ns: profile.total_ns,
                pass_count: profile.passes.len() as u32,
                worker_count: 0,
            })
        })?;
        if !out_profile.is_null() {
            write_out(out_profile, "out_profile", totals)?;
        }
        write_out(out_count, "out_count", totals.pass_count)
    })
}

/// The GPU side of the last run: each pass of its submission with its device time
/// ("upload instances", "skin + refit", "tlas build", the probe update's passes),
/// in submission order, up to `capacity` entries, and their number to `out_count`.
/// Empty without a tracer or without timestamps. `KILN_ERROR_INVALID_STATE` before
/// the first successful run.
///
/// Pointers: `passes` is NULL or has `capacity` writable entries; `out_count` is NULL
/// or writable.
///
/// Threads: one call at a time per world, its bodies and joints (busy: `KILN_ERROR_INVALID_STATE`).
#[no_mangle]
pub unsafe extern "C" fn kiln_frame_get_gpu_passes(
    frame: KilnFrameId,
    passes: *mut KilnGpuPassTiming,
    capacity: u32,
    out_count: *mut u32,
) -> KilnStatus {
    ffi_call("kiln_frame_get_gpu_passes", || {
        non_null(out_count, "out_count")?;
        // SAFETY: writable for `capacity` entries per the contract.
        let mut out = unsafe { CountedOut::new(passes, capacity, "passes")? };
        FRAMES.with(frame.index1, frame.generation, |f| {
            ran(f)?;
            f.gpu_passes.iter().for_each(|&p| out.push(p));
            Ok(())
        })?;
        write_out(out_count, "out_count", out.count())
    })
}
