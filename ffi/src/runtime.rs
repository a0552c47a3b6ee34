//! The runtime object from C: create/destroy, resources, passes, frames, profile,
//! and `kiln_parallel_for` inside passes.

use std::cell::Cell;
use std::ffi::{c_char, c_void, CStr, CString};
use std::mem::size_of;

use kiln_core::frame::{GraphError, PassContext, Queue, Res, ResourceId};
use kiln_core::jobs::{Executor, HostExecutor, Jobs, ThreadPool};
use kiln_core::{Runtime, Workers};

use crate::abi::{
    ffi_call, non_null, read_def, Error, KilnStatus, KILN_ERROR_BUFFER_TOO_SMALL, KILN_ERROR_INVALID_ARGUMENT,
    KILN_ERROR_INVALID_HANDLE, KILN_ERROR_INVALID_STATE, KILN_ERROR_NULL_POINTER, KILN_OK,
};
use crate::handles::HandleTable;
use crate::host::{CHost, KilnEnqueueTaskFn, KilnFinishTaskFn};

/// Every live runtime.
pub(crate) static RUNTIMES: HandleTable<RuntimeEntry> = HandleTable::new("runtime");

/// Runs `f` on the runtime behind `id` (see [`HandleTable::with`]); errors are also
/// sent to the runtime's log callback.
pub(crate) fn with_runtime<R>(
    id: KilnRuntimeId,
    f: impl FnOnce(&mut RuntimeEntry) -> Result<R, Error>,
) -> Result<R, Error> {
    RUNTIMES.with(id.index1, id.generation, |entry| {
        let result = f(entry);
        if let Err(error) = &result {
            entry.log_error(&error.message);
        }
        result
    })
}

/// Handle to a runtime. `{0, 0}` is the null handle. Pass by value.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KilnRuntimeId {
    /// Slot index plus one (0 means null).
    pub index1: u32,
    /// Slot generation; a destroyed runtime's handles no longer match.
    pub generation: u32,
}

/// Handle to a resource of a runtime's frame graph.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KilnResourceId {
    /// Resource index plus one (0 means null).
    pub index1: u32,
    /// Serial number of the owning runtime.
    pub owner: u32,
}

/// Handle to a pass of a runtime's frame graph.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KilnPassId {
    /// Pass index plus one (0 means null), in the order passes were added.
    pub index1: u32,
    /// Serial number of the owning runtime.
    pub owner: u32,
}

/// Receives log messages. `level` is one of `KILN_LOG_*`; `message` is valid only
/// during the call. May be called from any thread.
pub type KilnLogFn = Option<unsafe extern "C" fn(level: u32, message: *const c_char, log_context: *mut c_void)>;

/// Log level: a call failed or a pass failed.
pub const KILN_LOG_ERROR: u32 = 0;
/// Log level: something suspicious that Kiln worked around.
pub const KILN_LOG_WARNING: u32 = 1;
/// Log level: lifecycle events (runtime created, destroyed).
pub const KILN_LOG_INFO: u32 = 2;

/// `KilnRuntimeDef::thread_count` value: one background thread per core, minus one
/// for the calling thread.
pub const KILN_DEFAULT_THREAD_COUNT: u32 = 0xFFFF_FFFF;
/// Largest accepted `thread_count` and `host_worker_count`.
pub const KILN_MAX_WORKERS: u32 = 256;

/// Pass queue: the pass runs on the CPU as a job.
pub const KILN_QUEUE_CPU: u32 = 0;
/// Pass queue: the pass records GPU work; it runs after the previous GPU pass.
pub const KILN_QUEUE_GPU: u32 = 1;

/// Largest accepted read, write or `after` count of one pass.
pub const KILN_MAX_PASS_ACCESSES: u32 = 1024;

/// How to create a runtime. Start from `kiln_default_runtime_def()`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct KilnRuntimeDef {
    /// Must be `sizeof(KilnRuntimeDef)` (set by `kiln_default_runtime_def()`).
    pub struct_size: u32,
    /// Background threads of Kiln's pool; the thread calling `kiln_runtime_run_frame`
    /// also works, so 0 runs everything inline. `KILN_DEFAULT_THREAD_COUNT`: cores - 1.
    /// Ignored when `enqueue_task` is set.
    pub thread_count: u32,
    /// Optional host job system. When set, `finish_task` must be set too and Kiln runs
    /// all its parallel work through them instead of its own threads.
    pub enqueue_task: KilnEnqueueTaskFn,
    /// Waits for a task from `enqueue_task`.
    pub finish_task: KilnFinishTaskFn,
    /// Passed to `enqueue_task` and `finish_task`.
    pub user_task_context: *mut c_void,
    /// With a host job system: the number of distinct worker indices it passes to
    /// tasks (each below this count, one per thread). 1 to `KILN_MAX_WORKERS`.
    pub host_worker_count: u32,
    /// Optional log sink.
    pub log: KilnLogFn,
    /// Passed to `log`.
    pub log_context: *mut c_void,
    /// Most verbose level delivered to `log` (`KILN_LOG_ERROR` .. `KILN_LOG_INFO`).
    pub log_level: u32,
}

/// What a pass callback and its range callbacks see. Valid only during the callback.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KilnPassContext {
    /// The runtime running the pass.
    pub runtime: KilnRuntimeId,
    /// The pass.
    pub pass: KilnPassId,
    /// Frame number, from 0, counted since the graph last changed.
    pub frame_index: u64,
    /// Seconds, as passed to `kiln_runtime_run_frame`.
    pub delta_time: f32,
    /// Worker running the pass callback, below `kiln_runtime_get_worker_count()`.
    pub worker_index: u32,
}

/// A pass body. Return `KILN_OK`, or any other status to fail the frame (the frame
/// stops after the pass's level and `kiln_runtime_run_frame` returns
/// `KILN_ERROR_PASS_FAILED`). Must not unwind (no C++ exceptions, no longjmp).
pub type KilnPassFn =
    Option<unsafe extern "C" fn(context: *const KilnPassContext, user_context: *mut c_void) -> KilnStatus>;

/// A range of a `kiln_parallel_for`: items `[begin, end)` on worker `worker_index`.
pub type KilnRangeFn =
    Option<unsafe extern "C" fn(begin: u32, end: u32, worker_index: u32, range_context: *mut c_void)>;

/// How to add a pass. Start from `kiln_default_pass_def()`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct KilnPassDef {
    /// Must be `sizeof(KilnPassDef)` (set by `kiln_default_pass_def()`).
    pub struct_size: u32,
    /// Unique, non-empty UTF-8 name; copied.
    pub name: *const c_char,
    /// `KILN_QUEUE_CPU` or `KILN_QUEUE_GPU`.
    pub queue: u32,
    /// Resources the pass reads (`read_count` entries; may be NULL when 0).
    pub reads: *const KilnResourceId,
    /// Number of `reads`.
    pub read_count: u32,
    /// Resources the pass writes (`write_count` entries; may be NULL when 0).
    pub writes: *const KilnResourceId,
    /// Number of `writes`.
    pub write_count: u32,
    /// Names of passes, already added, that this pass must run after.
    pub after: *const *const c_char,
    /// Number of `after` names.
    pub after_count: u32,
    /// The pass body (required).
    pub run: KilnPassFn,
    /// Passed to `run`. Kiln does not touch it; it must be usable from worker threads.
    pub user_context: *mut c_void,
}

/// The last frame's totals.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KilnProfile {
    /// Index of the profiled frame.
    pub frame_index: u64,
    /// Wall time of the whole `kiln_runtime_run_frame`, in nanoseconds.
    pub total_ns: u64,
    /// Number of passes (entries `kiln_runtime_get_profile` can write).
    pub pass_count: u32,
    /// Workers the frame could use.
    pub worker_count: u32,
}

/// One pass in the last frame.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct KilnPassProfile {
    /// The pass's name, valid until the runtime is destroyed.
    pub name: *const c_char,
    /// The pass.
    pub pass: KilnPassId,
    /// Level of the pass in the graph (passes of one level may run concurrently).
    pub level: u32,
    /// Worker that ran the callback; `UINT32_MAX` if the pass did not run.
    pub worker_index: u32,
    /// Start, in nanoseconds since the frame started.
    pub start_ns: u64,
    /// Duration of the callback (including its parallel_for work), in nanoseconds.
    pub duration_ns: u64,
}

struct Logger {
    log: unsafe extern "C" fn(u32, *const c_char, *mut c_void),
    context: *mut c_void,
    level: u32,
}

/// Pointers the C side hands us and promises are usable from any thread.
#[derive(Clone, Copy)]
struct Opaque(*mut c_void);
// SAFETY: the C contract (KilnPassDef::user_context, KilnRuntimeDef) says these are
// usable from worker threads; Kiln only passes them back.
unsafe impl Send for Opaque {}
// SAFETY: as above.
unsafe impl Sync for Opaque {}

impl Opaque {
    /// The pointer (a method, so closures capture the whole `Opaque`, not the field).
    fn get(self) -> *mut c_void {
        self.0
    }
}

/// The C-side state of one runtime.
pub(crate) struct RuntimeEntry {
    serial: u32,
    pub(crate) runtime: Runtime,
    resources: Vec<Res<()>>,
    pass_names: Vec<CString>,
    logger: Option<Logger>,
}

// SAFETY: the logger's context pointer is usable from any thread (KilnRuntimeDef docs).
unsafe impl Send for RuntimeEntry {}

impl RuntimeEntry {
    fn log(&self, level: u32, message: &str) {
        if let Some(logger) = &self.logger {
            if level <= logger.level {
                let text = CString::new(message.replace('\0', "\\0")).expect("NULs replaced");
                // SAFETY: the host's log function, per its contract.
                unsafe { (logger.log)(level, text.as_ptr(), logger.context) };
            }
        }
    }

    pub(crate) fn log_error(&self, message: &str) {
        self.log(KILN_LOG_ERROR, message);
    }

    fn resource(&self, id: KilnResourceId, what: &str) -> Result<ResourceId, Error> {
        if id.owner != self.serial {
            return Err(Error::new(
                KILN_ERROR_INVALID_HANDLE,
                format!("{what} {{{}, {}}} does not belong to this runtime", id.index1, id.owner),
            ));
        }
        let index =
            id.index1.checked_sub(1).ok_or_else(|| Error::new(KILN_ERROR_INVALID_HANDLE, format!("{what} is null")))?;
        self.resources.get(index as usize).map(|r| r.id()).ok_or_else(|| {
            Error::new(KILN_ERROR_INVALID_HANDLE, format!("{what} {{{}, {}}} was never issued", id.index1, id.owner))
        })
    }
}

/// Reads a C string argument: non-NULL, UTF-8, non-empty.
///
/// # Safety
/// `ptr` is NULL or a NUL-terminated string.
unsafe fn read_name<'a>(ptr: *const c_char, what: &str) -> Result<&'a str, Error> {
    let ptr = non_null(ptr, what)?;
    // SAFETY: non-null and NUL-terminated per the caller.
    let text = unsafe { CStr::from_ptr(ptr) }
        .to_str()
        .map_err(|_| Error::new(KILN_ERROR_INVALID_ARGUMENT, format!("`{what}` is not valid UTF-8")))?;
    if text.is_empty() {
        return Err(Error::new(KILN_ERROR_INVALID_ARGUMENT, format!("`{what}` is empty")));
    }
    Ok(text)
}

/// Reads `count` items, with NULL allowed only for zero items.
///
/// # Safety
/// `ptr` is NULL or points to `count` readable items.
unsafe fn read_array<'a, T>(ptr: *const T, count: u32, what: &str) -> Result<&'a [T], Error> {
    if count > KILN_MAX_PASS_ACCESSES {
        return Err(Error::new(
            KILN_ERROR_INVALID_ARGUMENT,
            format!("`{what}` count {count} exceeds KILN_MAX_PASS_ACCESSES ({KILN_MAX_PASS_ACCESSES})"),
        ));
    }
    if count == 0 {
        return Ok(&[]);
    }
    let ptr = non_null(ptr, what)?;
    // SAFETY: non-null, `count` items readable per the caller.
    Ok(unsafe { std::slice::from_raw_parts(ptr, count as usize) })
}

/// A `KilnRuntimeDef` with defaults: Kiln's own pool sized to the machine, no host
/// job system, no logging.
///
/// Threads: any thread, at any time.
#[no_mangle]
pub extern "C" fn kiln_default_runtime_def() -> KilnRuntimeDef {
    KilnRuntimeDef {
        struct_size: size_of::<KilnRuntimeDef>() as u32,
        thread_count: KILN_DEFAULT_THREAD_COUNT,
        enqueue_task: None,
        finish_task: None,
        user_task_context: std::ptr::null_mut(),
        host_worker_count: 0,
        log: None,
        log_context: std::ptr::null_mut(),
        log_level: KILN_LOG_INFO,
    }
}

/// Creates a runtime (a job executor plus an empty frame graph) and writes its handle
/// to `out_runtime`. On failure `*out_runtime` is left unchanged.
///
/// Pointers: `def` and `out_runtime` are NULL or valid for reading / writing.
///
/// Threads: any thread, at any time.
#[no_mangle]
pub unsafe extern "C" fn kiln_runtime_create(
    def: *const KilnRuntimeDef,
    out_runtime: *mut KilnRuntimeId,
) -> KilnStatus {
    ffi_call("kiln_runtime_create", || {
        let def = non_null(def, "def")?;
        let out = non_null(out_runtime, "out_runtime")?;
        // SAFETY: non-null; readable per the contract.
        let def = unsafe { read_def(def, "def")? };
        if def.log_level > KILN_LOG_INFO {
            return Err(Error::new(
                KILN_ERROR_INVALID_ARGUMENT,
                format!("def->log_level {} is not a KILN_LOG_* level", def.log_level),
            ));
        }
        let (workers, description) = match (def.enqueue_task, def.finish_task) {
            (Some(enqueue), Some(finish)) => {
                if def.host_worker_count == 0 || def.host_worker_count > KILN_MAX_WORKERS {
                    return Err(Error::new(
                        KILN_ERROR_INVALID_ARGUMENT,
                        format!("def->host_worker_count is {}, must be 1..={KILN_MAX_WORKERS}", def.host_worker_count),
                    ));
                }
                let host = CHost {
                    enqueue,
                    finish,
                    user_context: def.user_task_context,
                    worker_count: def.host_worker_count as usize,
                };
                (
                    Workers::Host(Box::new(HostExecutor::new(host))),
                    format!("the host job system ({} workers)", def.host_worker_count),
                )
            }
            (None, None) => match def.thread_count {
                KILN_DEFAULT_THREAD_COUNT => (Workers::Default, "Kiln's pool (default size)".to_owned()),
                n if n <= KILN_MAX_WORKERS => (Workers::Threads(n as usize), format!("Kiln's pool ({n} threads)")),
                n => {
                    return Err(Error::new(
                        KILN_ERROR_INVALID_ARGUMENT,
                        format!(
                            "def->thread_count is {n}, must be at most {KILN_MAX_WORKERS} or KILN_DEFAULT_THREAD_COUNT"
                        ),
                    ))
                }
            },
            _ => {
                return Err(Error::new(
                    KILN_ERROR_NULL_POINTER,
                    "def->enqueue_task and def->finish_task must be set together",
                ))
            }
        };
        let logger = def.log.map(|log| Logger { log, context: def.log_context, level: def.log_level });
        let entry = RuntimeEntry {
            serial: RUNTIMES.next_serial(),
            runtime: Runtime::new(workers),
            resources: Vec::new(),
            pass_names: Vec::new(),
            logger,
        };
        entry.log(KILN_LOG_INFO, &format!("kiln {}: runtime created on {description}", env!("CARGO_PKG_VERSION")));
        let (index1, generation) = RUNTIMES.insert(entry);
        let id = KilnRuntimeId { index1, generation };
        // SAFETY: non-null and writable per the contract.
        unsafe { out.cast_mut().write(id) };
        Ok(())
    })
}

/// Destroys a runtime: waits for nothing (it must not be running a frame), joins its
/// threads, frees everything. Its handle and all its resource and pass ids become
/// invalid. Calling it from inside one of its own passes returns
/// `KILN_ERROR_INVALID_STATE`.
///
/// Threads: one call at a time per runtime (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub extern "C" fn kiln_runtime_destroy(runtime: KilnRuntimeId) -> KilnStatus {
    ffi_call("kiln_runtime_destroy", || {
        let entry = RUNTIMES.remove(runtime.index1, runtime.generation)?;
        let guard = entry.lock().unwrap_or_else(|p| p.into_inner());
        guard.log(KILN_LOG_INFO, "runtime destroyed");
        drop(guard);
        drop(entry);
        Ok(())
    })
}

/// Whether `runtime` refers to a live runtime.
///
/// Threads: any thread, at any time; never busy.
#[no_mangle]
pub extern "C" fn kiln_runtime_is_valid(runtime: KilnRuntimeId) -> bool {
    std::panic::catch_unwind(|| RUNTIMES.is_valid(runtime.index1, runtime.generation)).unwrap_or(false)
}

/// Writes the number of distinct worker indices tasks and passes may see.
///
/// Pointers: `out_count` is NULL or writable.
///
/// Threads: one call at a time per runtime (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_runtime_get_worker_count(runtime: KilnRuntimeId, out_count: *mut u32) -> KilnStatus {
    ffi_call("kiln_runtime_get_worker_count", || {
        let out = non_null(out_count, "out_count")?;
        let count = with_runtime(runtime, |entry| Ok(entry.runtime.worker_count() as u32))?;
        // SAFETY: non-null and writable per the contract.
        unsafe { out.cast_mut().write(count) };
        Ok(())
    })
}

/// Adds a named resource (a node passes declare reads and writes of; the data stays
/// with the caller) and writes its id. Names are unique per runtime.
///
/// Pointers: `name` is NULL or NUL-terminated; `out_resource` is NULL or writable.
///
/// Threads: one call at a time per runtime (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_runtime_add_resource(
    runtime: KilnRuntimeId,
    name: *const c_char,
    out_resource: *mut KilnResourceId,
) -> KilnStatus {
    ffi_call("kiln_runtime_add_resource", || {
        let out = non_null(out_resource, "out_resource")?;
        with_runtime(runtime, |entry| {
            // SAFETY: NULL or NUL-terminated per the contract.
            let name = unsafe { read_name(name, "name")? };
            let res = entry.runtime.edit(|graph| graph.resource(name, ()))?;
            entry.resources.push(res);
            let id = KilnResourceId { index1: entry.resources.len() as u32, owner: entry.serial };
            // SAFETY: non-null and writable per the contract.
            unsafe { out.cast_mut().write(id) };
            Ok(())
        })
    })
}

/// A `KilnPassDef` with defaults: CPU queue, no accesses, no callback (set `name` and
/// `run` before use).
///
/// Threads: any thread, at any time.
#[no_mangle]
pub extern "C" fn kiln_default_pass_def() -> KilnPassDef {
    KilnPassDef {
        struct_size: size_of::<KilnPassDef>() as u32,
        name: std::ptr::null(),
        queue: KILN_QUEUE_CPU,
        reads: std::ptr::null(),
        read_count: 0,
        writes: std::ptr::null(),
        write_count: 0,
        after: std::ptr::null(),
        after_count: 0,
        run: None,
        user_context: std::ptr::null_mut(),
    }
}

thread_local! {
    /// The pass (or range) callback running on this thread: its C context and the
    /// executor to run `kiln_parallel_for` on. Set only for the callback's duration.
    static ACTIVE: Cell<Option<(KilnPassContext, Jobs<'static>)>> = const { Cell::new(None) };
}

/// Makes `kiln_parallel_for` usable on this thread for the guard's lifetime.
struct ActiveGuard(Option<(KilnPassContext, Jobs<'static>)>);

impl ActiveGuard {
    fn enter(context: KilnPassContext, jobs: Jobs<'_>) -> ActiveGuard {
        // SAFETY: the guard restores the previous value before `jobs`' borrow ends
        // (it lives inside the callback that holds the borrow), so the 'static
        // lifetime is never observed past the real one.
        let jobs: Jobs<'static> = unsafe { std::mem::transmute::<Jobs<'_>, Jobs<'static>>(jobs) };
        ActiveGuard(ACTIVE.with(|a| a.replace(Some((context, jobs)))))
    }
}

impl Drop for ActiveGuard {
    fn drop(&mut self) {
        ACTIVE.with(|a| a.set(self.0));
    }
}

/// Adds a pass to the runtime's frame graph and writes its id. Passes run in an
/// order derived from their declared reads and writes (in the order they were added)
/// and `after` names; independent passes may run at the same time. The graph is
/// checked at once: on error nothing is added.
///
/// Pointers: `def` is NULL or readable, with valid pointers and counts inside;
/// `out_pass` is NULL or writable.
///
/// Threads: one call at a time per runtime (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_runtime_add_pass(
    runtime: KilnRuntimeId,
    def: *const KilnPassDef,
    out_pass: *mut KilnPassId,
) -> KilnStatus {
    ffi_call("kiln_runtime_add_pass", || {
        let def = non_null(def, "def")?;
        let out = non_null(out_pass, "out_pass")?;
        with_runtime(runtime, |entry| {
            // SAFETY: non-null and readable per the contract.
            let def = unsafe { read_def(def, "def")? };
            // SAFETY: pointer/count pairs and strings are valid per the contract.
            let name = unsafe { read_name(def.name, "def->name")? };
            let queue = match def.queue {
                KILN_QUEUE_CPU => Queue::Cpu,
                KILN_QUEUE_GPU => Queue::Gpu,
                other => {
                    return Err(Error::new(
                        KILN_ERROR_INVALID_ARGUMENT,
                        format!("def->queue {other} is not a KILN_QUEUE_* value"),
                    ))
                }
            };
            let run = def.run.ok_or_else(|| Error::new(KILN_ERROR_NULL_POINTER, "`def->run` is NULL"))?;
            // SAFETY: as above.
            let reads = unsafe { read_array(def.reads, def.read_count, "def->reads")? };
            // SAFETY: as above.
            let writes = unsafe { read_array(def.writes, def.write_count, "def->writes")? };
            // SAFETY: as above.
            let after = unsafe { read_array(def.after, def.after_count, "def->after")? };
            let reads = reads.iter().map(|&r| entry.resource(r, "def->reads[]")).collect::<Result<Vec<_>, _>>()?;
            let writes = writes.iter().map(|&r| entry.resource(r, "def->writes[]")).collect::<Result<Vec<_>, _>>()?;
            let after = after
                .iter()
                // SAFETY: as above.
                .map(|&p| unsafe { read_name(p, "def->after[]") })
                .collect::<Result<Vec<_>, _>>()?;

            let pass = KilnPassId { index1: entry.runtime.pass_count() as u32 + 1, owner: entry.serial };
            let c_name = CString::new(name).expect("a C string has no interior NUL");
            let user = Opaque(def.user_context);
            let pass_name = name.to_owned();
            let body = move |ctx: &PassContext<'_>| -> Result<(), GraphError> {
                let context = KilnPassContext {
                    runtime,
                    pass,
                    frame_index: ctx.frame().index,
                    delta_time: ctx.frame().delta_time,
                    worker_index: ctx.worker().index() as u32,
                };
                let _active = ActiveGuard::enter(context, ctx.jobs());
                // SAFETY: the host's pass function, called per its contract.
                let status = unsafe { run(&context, user.get()) };
                if status == KILN_OK {
                    Ok(())
                } else {
                    // SAFETY: kiln_status_name returns a static NUL-terminated string.
                    let name = unsafe { CStr::from_ptr(crate::abi::kiln_status_name(status)) }.to_string_lossy();
                    Err(GraphError::PassFailed {
                        pass: pass_name.clone(),
                        message: format!("callback returned {name} ({status})"),
                    })
                }
            };
            entry.runtime.edit(|graph| {
                let mut builder = graph.pass(name).queue(queue);
                for &r in &reads {
                    builder = builder.reads(r);
                }
                for &w in &writes {
                    builder = builder.writes(w);
                }
                for a in &after {
                    builder = builder.after(a);
                }
                builder.run(body);
            })?;
            entry.pass_names.push(c_name);
            // SAFETY: non-null and writable per the contract.
            unsafe { out.cast_mut().write(pass) };
            Ok(())
        })
    })
}

/// Runs one frame: every pass once, in dependency order, independent passes in
/// parallel. `delta_time` (seconds) must be finite and >= 0. A failing pass stops
/// the frame after its level and gives `KILN_ERROR_PASS_FAILED`; the next frame
/// starts clean.
///
/// Threads: one call at a time per runtime (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub extern "C" fn kiln_runtime_run_frame(runtime: KilnRuntimeId, delta_time: f32) -> KilnStatus {
    ffi_call("kiln_runtime_run_frame", || {
        with_runtime(runtime, |entry| entry.runtime.run_frame(delta_time).map_err(Error::from))
    })
}

/// Reads the last frame's profile. `out_profile` (optional) receives the totals.
/// `passes` receives one entry per pass in the order passes were added: pass NULL
/// with `capacity` 0 to get the count in `*out_count`; with a smaller non-zero
/// capacity nothing is written, `*out_count` gets the required count and the result
/// is `KILN_ERROR_BUFFER_TOO_SMALL`. Before the first frame (or after the graph
/// changed) the result is `KILN_ERROR_INVALID_STATE`.
///
/// Pointers: `out_profile` is NULL or writable; `passes` is NULL or has `capacity`
/// writable entries; `out_count` is NULL or writable.
///
/// Threads: one call at a time per runtime (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_runtime_get_profile(
    runtime: KilnRuntimeId,
    out_profile: *mut KilnProfile,
    passes: *mut KilnPassProfile,
    capacity: u32,
    out_count: *mut u32,
) -> KilnStatus {
    ffi_call("kiln_runtime_get_profile", || {
        let out_count = non_null(out_count, "out_count")?;
        if passes.is_null() && capacity != 0 {
            return Err(Error::new(KILN_ERROR_NULL_POINTER, "`passes` is NULL but `capacity` is not 0"));
        }
        with_runtime(runtime, |entry| {
            let worker_count = entry.runtime.worker_count() as u32;
            let profile =
                entry.runtime.profile().filter(|p| p.total_ns > 0 || p.frame_index > 0).ok_or_else(|| {
                    Error::new(KILN_ERROR_INVALID_STATE, "no frame has run since the graph last changed")
                })?;
            let count = profile.passes.len() as u32;
            // SAFETY: non-null and writable per the contract.
            unsafe { out_count.cast_mut().write(count) };
            if !passes.is_null() && capacity < count {
                return Err(Error::new(
                    KILN_ERROR_BUFFER_TOO_SMALL,
                    format!("`passes` holds {capacity} entries but the profile has {count}"),
                ));
            }
            if !out_profile.is_null() {
                let totals = KilnProfile {
                    frame_index: profile.frame_index,
                    total_ns: profile.total_ns,
                    pass_count: count,
                    worker_count,
                };
                // SAFETY: non-null and writable per the contract.
                unsafe { out_profile.write(totals) };
            }
            if !passes.is_null() {
                for (i, timing) in profile.passes.iter().enumerate() {
                    let entry_out = KilnPassProfile {
                        name: entry.pass_names[i].as_ptr(),
                        pass: KilnPassId { index1: i as u32 + 1, owner: entry.serial },
                        level: timing.level,
                        worker_index: timing.worker,
                        start_ns: timing.start_ns,
                        duration_ns: timing.duration_ns,
                    };
                    // SAFETY: `i < count <= capacity` writable entries per the contract.
                    unsafe { passes.add(i).write(entry_out) };
                }
            }
            Ok(())
        })
    })
}

/// Runs `range_fn` over `[0, item_count)` in parallel, in chunks of `grain` items
/// (the last may be shorter), and returns when all have run. Call it only from a pass
/// callback with the context it received, or from a range callback it started
/// (nesting is fine). Chunk boundaries depend only on `item_count` and `grain`, so
/// results written per chunk are the same for any worker count. `range_fn` must not
/// unwind.
///
/// Pointers: `context` is NULL or the context passed to the running callback;
/// `range_context` is usable from worker threads.
///
/// Threads: only inside the pass whose context it is given, on that pass's thread.
#[no_mangle]
pub unsafe extern "C" fn kiln_parallel_for(
    context: *const KilnPassContext,
    item_count: u32,
    grain: u32,
    range_fn: KilnRangeFn,
    range_context: *mut c_void,
) -> KilnStatus {
    ffi_call("kiln_parallel_for", || {
        let context = non_null(context, "context")?;
        let range_fn = range_fn.ok_or_else(|| Error::new(KILN_ERROR_NULL_POINTER, "`range_fn` is NULL"))?;
        if grain == 0 {
            return Err(Error::new(KILN_ERROR_INVALID_ARGUMENT, "`grain` must be at least 1"));
        }
        // SAFETY: non-null and readable per the contract.
        let context = unsafe { context.read_unaligned() };
        let (active, jobs) = ACTIVE.with(|a| a.get()).ok_or_else(|| {
            Error::new(KILN_ERROR_INVALID_STATE, "called outside a pass callback (or a range callback it started)")
        })?;
        if active != context {
            return Err(Error::new(
                KILN_ERROR_INVALID_STATE,
                "`context` is not the context of the running pass callback",
            ));
        }
        let user = Opaque(range_context);
        jobs.parallel_for(0..item_count as usize, grain as usize, |range, worker| {
            let _active = ActiveGuard::enter(active, jobs);
            // SAFETY: the host's range function, called per its contract.
            unsafe { range_fn(range.start as u32, range.end as u32, worker.index() as u32, user.get()) };
        });
        Ok(())
    })
}

/// Runs `f` with jobs on `runtime`'s workers, or on the calling thread for the null
/// handle.
pub(crate) fn on_runtime<R>(runtime: KilnRuntimeId, f: impl FnOnce(Jobs) -> Result<R, Error>) -> Result<R, Error> {
    on_executor(runtime, |executor| f(Jobs::new(executor)))
}

/// Runs `f` with `runtime`'s executor, or an inline one for the null handle.
pub(crate) fn on_executor<R>(
    runtime: KilnRuntimeId,
    f: impl FnOnce(&dyn Executor) -> Result<R, Error>,
) -> Result<R, Error> {
    if runtime == KilnRuntimeId::default() {
        f(&ThreadPool::new(0))
    } else {
        with_runtime(runtime, |entry| f(entry.runtime.executor()))
    }
}
