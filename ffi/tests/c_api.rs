//! The C ABI driven from Rust: every bad input gets a specific status and message and
//! changes nothing. The C samples under `samples-c/tests/` check the same from C.
//!
//! Nearly every line calls an `unsafe extern "C"` entry point with pointers to live
//! locals (or deliberately NULL ones, which the entry points must refuse), so the
//! usual per-block SAFETY comment would say the same thing each time.
#![allow(clippy::undocumented_unsafe_blocks)]

use std::ffi::{c_void, CStr};
use std::ptr;
use std::sync::atomic::{AtomicU32, Ordering};

use kiln::*;
// The ffi crate's library is named `kiln` (libkiln.so); `kiln::` here is the C ABI.

fn last_error() -> String {
    // SAFETY: kiln_last_error_message always returns a valid C string.
    unsafe { CStr::from_ptr(kiln_last_error_message()) }.to_string_lossy().into_owned()
}

fn create(threads: u32) -> KilnRuntimeId {
    let mut def = kiln_default_runtime_def();
    def.thread_count = threads;
    let mut id = KilnRuntimeId::default();
    // SAFETY: valid pointers.
    assert_eq!(unsafe { kiln_runtime_create(&def, &mut id) }, KILN_OK, "{}", last_error());
    id
}

unsafe extern "C" fn count_pass(context: *const KilnPassContext, user: *mut c_void) -> KilnStatus {
    // SAFETY: the test passes an AtomicU32.
    let counter = unsafe { &*(user as *const AtomicU32) };
    counter.fetch_add(1, Ordering::SeqCst);
    // SAFETY: context is the live pass context.
    let frame = unsafe { (*context).frame_index };
    if frame == 1_000_000 {
        return KILN_ERROR_INVALID_ARGUMENT;
    }
    KILN_OK
}

fn add_pass(rt: KilnRuntimeId, name: &CStr, writes: &[KilnResourceId], counter: &AtomicU32) -> KilnStatus {
    let mut def = kiln_default_pass_def();
    def.name = name.as_ptr();
    def.writes = writes.as_ptr();
    def.write_count = writes.len() as u32;
    def.run = Some(count_pass);
    def.user_context = counter as *const AtomicU32 as *mut c_void;
    let mut pass = KilnPassId::default();
    // SAFETY: valid pointers.
    unsafe { kiln_runtime_add_pass(rt, &def, &mut pass) }
}

#[test]
fn versions_and_abi_guard() {
    assert_eq!(kiln_abi_version(), KILN_ABI_VERSION);
    assert_eq!(kiln_version(), (KILN_VERSION_MAJOR << 16) | (KILN_VERSION_MINOR << 8) | KILN_VERSION_PATCH);
    // SAFETY: static string.
    assert_eq!(unsafe { CStr::from_ptr(kiln_version_string()) }.to_str().unwrap(), env!("CARGO_PKG_VERSION"));
    let good = KilnAbiInfo::current();
    // SAFETY: valid pointer.
    assert_eq!(unsafe { kiln_check_abi(&good) }, KILN_OK);
    let mut bad = good;
    let pass_def = ABI_STRUCT_NAMES.iter().position(|&n| n == "KilnPassDef").expect("KilnPassDef is checked");
    bad.struct_sizes[pass_def] += 8;
    bad.abi_version += 1;
    // SAFETY: valid pointer.
    assert_eq!(unsafe { kiln_check_abi(&bad) }, KILN_ERROR_ABI_MISMATCH);
    let message = last_error();
    assert!(message.contains("sizeof(KilnPassDef)") && message.contains("KILN_ABI_VERSION"), "{message}");
    let mut truncated = good;
    truncated.struct_size = 8;
    // SAFETY: valid pointer.
    assert_eq!(unsafe { kiln_check_abi(&truncated) }, KILN_ERROR_ABI_MISMATCH);
    // SAFETY: NULL is handled.
    assert_eq!(unsafe { kiln_check_abi(ptr::null()) }, KILN_ERROR_NULL_POINTER);
    // SAFETY: static strings.
    assert_eq!(unsafe { CStr::from_ptr(kiln_status_name(KILN_ERROR_GRAPH)) }.to_str().unwrap(), "KILN_ERROR_GRAPH");
    // SAFETY: static strings.
    assert_eq!(unsafe { CStr::from_ptr(kiln_status_name(999)) }.to_str().unwrap(), "KILN_UNKNOWN_STATUS");
}

/// `kiln_check_linked_abi()` in the header fills `struct_sizes` with every struct the
/// header defines (but `KilnAbiInfo`), in the order the library compares them.
#[test]
fn the_header_checks_the_size_of_every_public_struct() {
    let header = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../include/kiln.h")).unwrap();
    let defined: Vec<&str> = header
        .lines()
        .filter_map(|l| l.strip_prefix("typedef struct "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "KilnAbiInfo")
        .collect();
    let filled: Vec<&str> = header
        .lines()
        .filter_map(|l| l.trim().strip_prefix("info.struct_sizes["))
        .filter_map(|l| l.split("sizeof(").nth(1)?.split(')').next())
        .collect();
    assert_eq!(filled, ABI_STRUCT_NAMES, "the header's kiln_check_linked_abi() and the library's list differ");
    let mut sorted_defined = defined.clone();
    sorted_defined.sort_unstable();
    let mut sorted_names = ABI_STRUCT_NAMES.to_vec();
    sorted_names.sort_unstable();
    assert_eq!(sorted_defined, sorted_names, "every struct of the header is checked, and only those");
    assert_eq!(ABI_STRUCT_NAMES.len(), KILN_ABI_STRUCT_COUNT);
}

#[test]
fn runtime_create_rejects_bad_definitions_and_leaves_the_output_alone() {
    let sentinel = KilnRuntimeId { index1: 77, generation: 77 };
    let mut out = sentinel;
    let def = kiln_default_runtime_def();
    // SAFETY: NULLs are handled.
    unsafe {
        assert_eq!(kiln_runtime_create(ptr::null(), &mut out), KILN_ERROR_NULL_POINTER);
        assert!(last_error().contains("`def` is NULL"));
        assert_eq!(kiln_runtime_create(&def, ptr::null_mut()), KILN_ERROR_NULL_POINTER);
    }
    type Case = (Box<dyn Fn(&mut KilnRuntimeDef)>, KilnStatus, &'static str);
    let cases: Vec<Case> = vec![
        (Box::new(|d| d.struct_size = 12), KILN_ERROR_STRUCT_SIZE, "struct_size is 12"),
        (Box::new(|d| d.thread_count = 100_000), KILN_ERROR_INVALID_ARGUMENT, "thread_count"),
        (Box::new(|d| d.log_level = 9), KILN_ERROR_INVALID_ARGUMENT, "log_level"),
        (Box::new(|d| d.enqueue_task = Some(enqueue_inline)), KILN_ERROR_NULL_POINTER, "set together"),
        (
            Box::new(|d| {
                d.enqueue_task = Some(enqueue_inline);
                d.finish_task = Some(finish_nothing);
                d.host_worker_count = 0;
            }),
            KILN_ERROR_INVALID_ARGUMENT,
            "host_worker_count",
        ),
    ];
    for (edit, status, text) in cases {
        let mut def = kiln_default_runtime_def();
        edit(&mut def);
        // SAFETY: valid pointers.
        assert_eq!(unsafe { kiln_runtime_create(&def, &mut out) }, status, "{text}");
        assert!(last_error().contains(text), "{} should mention {text}", last_error());
        assert_eq!(out, sentinel, "output untouched on failure");
    }
}

#[test]
fn stale_forged_and_null_handles_are_refused() {
    let rt = create(1);
    assert!(kiln_runtime_is_valid(rt));
    assert_eq!(kiln_runtime_destroy(rt), KILN_OK);
    assert!(!kiln_runtime_is_valid(rt));
    for bad in [rt, KilnRuntimeId::default(), KilnRuntimeId { index1: 123_456, generation: 1 }] {
        assert_eq!(kiln_runtime_run_frame(bad, 0.016), KILN_ERROR_INVALID_HANDLE);
        assert_eq!(kiln_runtime_destroy(bad), KILN_ERROR_INVALID_HANDLE);
        let mut count = 5;
        // SAFETY: valid pointer.
        assert_eq!(unsafe { kiln_runtime_get_worker_count(bad, &mut count) }, KILN_ERROR_INVALID_HANDLE);
        assert_eq!(count, 5);
    }
    assert!(last_error().contains("stale or was never issued"), "{}", last_error());
    // The slot is reused with a new generation: the old handle stays stale.
    let again = create(0);
    assert_ne!(again, rt);
    assert!(!kiln_runtime_is_valid(rt));
    assert_eq!(kiln_runtime_destroy(again), KILN_OK);
}

#[test]
fn passes_run_frames_and_report_profiles() {
    let rt = create(2);
    let counter = AtomicU32::new(0);
    let mut bodies = KilnResourceId::default();
    // SAFETY: valid pointers and strings.
    assert_eq!(unsafe { kiln_runtime_add_resource(rt, c"bodies".as_ptr(), &mut bodies) }, KILN_OK);
    assert_eq!(add_pass(rt, c"integrate", &[bodies], &counter), KILN_OK);
    assert_eq!(add_pass(rt, c"solve", &[bodies], &counter), KILN_OK);

    let mut count = 0;
    // SAFETY: valid pointers.
    assert_eq!(
        unsafe { kiln_runtime_get_profile(rt, ptr::null_mut(), ptr::null_mut(), 0, &mut count) },
        KILN_ERROR_INVALID_STATE
    );
    for _ in 0..3 {
        assert_eq!(kiln_runtime_run_frame(rt, 1.0 / 60.0), KILN_OK, "{}", last_error());
    }
    assert_eq!(counter.load(Ordering::SeqCst), 6);

    // SAFETY: valid pointers.
    assert_eq!(unsafe { kiln_runtime_get_profile(rt, ptr::null_mut(), ptr::null_mut(), 0, &mut count) }, KILN_OK);
    assert_eq!(count, 2);
    let blank = KilnPassProfile {
        name: ptr::null(),
        pass: KilnPassId::default(),
        level: 9,
        worker_index: 9,
        start_ns: 9,
        duration_ns: 9,
    };
    let mut one = [blank; 1];
    // SAFETY: valid pointers, capacity 1.
    assert_eq!(
        unsafe { kiln_runtime_get_profile(rt, ptr::null_mut(), one.as_mut_ptr(), 1, &mut count) },
        KILN_ERROR_BUFFER_TOO_SMALL
    );
    assert_eq!((count, one[0].level), (2, 9), "count written, entries untouched");
    let mut two = [blank; 2];
    let mut totals = KilnProfile::default();
    // SAFETY: valid pointers, capacity 2.
    assert_eq!(unsafe { kiln_runtime_get_profile(rt, &mut totals, two.as_mut_ptr(), 2, &mut count) }, KILN_OK);
    assert_eq!((totals.frame_index, totals.pass_count, totals.worker_count), (2, 2, 3));
    // SAFETY: names live as long as the runtime.
    let names: Vec<_> = two.iter().map(|p| unsafe { CStr::from_ptr(p.name) }.to_str().unwrap().to_owned()).collect();
    assert_eq!(names, ["integrate", "solve"]);
    assert_eq!((two[0].level, two[1].level), (0, 1));
    assert!(two.iter().all(|p| p.worker_index < 3 && p.start_ns + p.duration_ns <= totals.total_ns));
    // SAFETY: NULL passes with capacity > 0 is refused.
    assert_eq!(
        unsafe { kiln_runtime_get_profile(rt, ptr::null_mut(), ptr::null_mut(), 4, &mut count) },
        KILN_ERROR_NULL_POINTER
    );
    assert_eq!(kiln_runtime_destroy(rt), KILN_OK);
}

#[test]
fn bad_passes_and_numbers_are_refused_and_change_nothing() {
    let rt = create(1);
    let counter = AtomicU32::new(0);
    let mut res = KilnResourceId::default();
    // SAFETY: valid pointers and strings; NULL/empty/invalid UTF-8 are handled.
    unsafe {
        assert_eq!(kiln_runtime_add_resource(rt, c"state".as_ptr(), &mut res), KILN_OK);
        let mut other = KilnResourceId::default();
        assert_eq!(kiln_runtime_add_resource(rt, ptr::null(), &mut other), KILN_ERROR_NULL_POINTER);
        assert_eq!(kiln_runtime_add_resource(rt, c"".as_ptr(), &mut other), KILN_ERROR_INVALID_ARGUMENT);
        assert_eq!(kiln_runtime_add_resource(rt, c"\xff\xfe".as_ptr(), &mut other), KILN_ERROR_INVALID_ARGUMENT);
        assert_eq!(kiln_runtime_add_resource(rt, c"x".as_ptr(), ptr::null_mut()), KILN_ERROR_NULL_POINTER);
        assert_eq!(other, KilnResourceId::default());
    }
    assert_eq!(add_pass(rt, c"step", &[res], &counter), KILN_OK);
    assert_eq!(add_pass(rt, c"step", &[res], &counter), KILN_ERROR_GRAPH, "duplicate name");
    assert!(last_error().contains("two passes are named 'step'"), "{}", last_error());
    let forged = KilnResourceId { index1: 50, owner: res.owner };
    assert_eq!(add_pass(rt, c"forged", &[forged], &counter), KILN_ERROR_INVALID_HANDLE);
    let foreign = KilnResourceId { index1: 1, owner: res.owner + 1000 };
    assert_eq!(add_pass(rt, c"foreign", &[foreign], &counter), KILN_ERROR_INVALID_HANDLE);

    let mut def = kiln_default_pass_def();
    def.name = c"p".as_ptr();
    def.run = Some(count_pass);
    let mut pass = KilnPassId::default();
    // SAFETY: each call passes one deliberately bad field; the rest is valid.
    unsafe {
        let mut d = def;
        d.run = None;
        assert_eq!(kiln_runtime_add_pass(rt, &d, &mut pass), KILN_ERROR_NULL_POINTER);
        let mut d = def;
        d.read_count = 3;
        assert_eq!(kiln_runtime_add_pass(rt, &d, &mut pass), KILN_ERROR_NULL_POINTER);
        let mut d = def;
        d.reads = &res;
        d.read_count = u32::MAX;
        assert_eq!(kiln_runtime_add_pass(rt, &d, &mut pass), KILN_ERROR_INVALID_ARGUMENT);
        let mut d = def;
        d.queue = 7;
        assert_eq!(kiln_runtime_add_pass(rt, &d, &mut pass), KILN_ERROR_INVALID_ARGUMENT);
        let mut d = def;
        d.struct_size = 4;
        assert_eq!(kiln_runtime_add_pass(rt, &d, &mut pass), KILN_ERROR_STRUCT_SIZE);
        let mut d = def;
        let after = [c"nowhere".as_ptr()];
        d.after = after.as_ptr();
        d.after_count = 1;
        assert_eq!(kiln_runtime_add_pass(rt, &d, &mut pass), KILN_ERROR_GRAPH);
        assert_eq!(kiln_runtime_add_pass(rt, ptr::null(), &mut pass), KILN_ERROR_NULL_POINTER);
        assert_eq!(kiln_runtime_add_pass(rt, &def, ptr::null_mut()), KILN_ERROR_NULL_POINTER);
    }
    assert_eq!(pass, KilnPassId::default());

    for dt in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, -0.5] {
        assert_eq!(kiln_runtime_run_frame(rt, dt), KILN_ERROR_INVALID_ARGUMENT, "{dt}");
    }
    assert_eq!(counter.load(Ordering::SeqCst), 0, "nothing ran");
    assert_eq!(kiln_runtime_run_frame(rt, 0.016), KILN_OK);
    let mut count = 0;
    // SAFETY: valid pointers.
    assert_eq!(unsafe { kiln_runtime_get_profile(rt, ptr::null_mut(), ptr::null_mut(), 0, &mut count) }, KILN_OK);
    assert_eq!((count, counter.load(Ordering::SeqCst)), (1, 1), "only the one good pass exists");
    assert_eq!(kiln_runtime_destroy(rt), KILN_OK);
}

static REENTRY: AtomicU32 = AtomicU32::new(0);

unsafe extern "C" fn reentrant_pass(context: *const KilnPassContext, _user: *mut c_void) -> KilnStatus {
    // SAFETY: live context.
    let rt = unsafe { (*context).runtime };
    REENTRY.store(kiln_runtime_run_frame(rt, 0.0), Ordering::SeqCst);
    let destroy = kiln_runtime_destroy(rt);
    assert_eq!(destroy, KILN_ERROR_INVALID_STATE);
    // Failing the pass on purpose.
    KILN_ERROR_INVALID_ARGUMENT
}

#[test]
fn reentrant_calls_and_failing_passes_are_reported() {
    let rt = create(1);
    let mut def = kiln_default_pass_def();
    def.name = c"reenter".as_ptr();
    def.run = Some(reentrant_pass);
    let mut pass = KilnPassId::default();
    // SAFETY: valid pointers.
    assert_eq!(unsafe { kiln_runtime_add_pass(rt, &def, &mut pass) }, KILN_OK);
    assert_eq!(kiln_runtime_run_frame(rt, 0.01), KILN_ERROR_PASS_FAILED);
    assert!(
        last_error().contains("pass 'reenter' failed: callback returned KILN_ERROR_INVALID_ARGUMENT"),
        "{}",
        last_error()
    );
    assert_eq!(REENTRY.load(Ordering::SeqCst), KILN_ERROR_INVALID_STATE);
    assert!(kiln_runtime_is_valid(rt));
    assert_eq!(kiln_runtime_destroy(rt), KILN_OK);
}

unsafe extern "C" fn sum_range(begin: u32, end: u32, _worker: u32, user: *mut c_void) {
    // SAFETY: the test passes an AtomicU32.
    let total = unsafe { &*(user as *const AtomicU32) };
    total.fetch_add((begin..end).sum::<u32>(), Ordering::SeqCst);
}

static PARALLEL_TOTAL: AtomicU32 = AtomicU32::new(0);
static PARALLEL_STATUS: AtomicU32 = AtomicU32::new(u32::MAX);

unsafe extern "C" fn parallel_pass(context: *const KilnPassContext, _user: *mut c_void) -> KilnStatus {
    let total = &PARALLEL_TOTAL as *const AtomicU32 as *mut c_void;
    // SAFETY: live context; bad variants are refused, not acted on.
    unsafe {
        let mut copy = *context;
        copy.frame_index += 1;
        assert_eq!(kiln_parallel_for(&copy, 10, 1, Some(sum_range), total), KILN_ERROR_INVALID_STATE);
        assert_eq!(kiln_parallel_for(context, 10, 0, Some(sum_range), total), KILN_ERROR_INVALID_ARGUMENT);
        assert_eq!(kiln_parallel_for(context, 10, 1, None, total), KILN_ERROR_NULL_POINTER);
        assert_eq!(kiln_parallel_for(ptr::null(), 10, 1, Some(sum_range), total), KILN_ERROR_NULL_POINTER);
        PARALLEL_STATUS.store(kiln_parallel_for(context, 1000, 64, Some(sum_range), total), Ordering::SeqCst);
    }
    KILN_OK
}

unsafe extern "C" fn enqueue_inline(
    task: KilnTaskFn,
    item_count: u32,
    _min_range: u32,
    task_context: *mut c_void,
    _user: *mut c_void,
) -> *mut c_void {
    // SAFETY: running the whole task inline before returning NULL is allowed.
    unsafe { task.unwrap()(0, item_count, 0, task_context) };
    ptr::null_mut()
}

unsafe extern "C" fn finish_nothing(_task: *mut c_void, _user: *mut c_void) {}

#[test]
fn parallel_for_inside_passes_on_the_pool_and_on_a_host_job_system() {
    for host in [false, true] {
        let mut def = kiln_default_runtime_def();
        def.thread_count = 2;
        if host {
            def.enqueue_task = Some(enqueue_inline);
            def.finish_task = Some(finish_nothing);
            def.host_worker_count = 1;
        }
        let mut rt = KilnRuntimeId::default();
        // SAFETY: valid pointers.
        assert_eq!(unsafe { kiln_runtime_create(&def, &mut rt) }, KILN_OK);
        let mut pass = kiln_default_pass_def();
        pass.name = c"parallel".as_ptr();
        pass.run = Some(parallel_pass);
        let mut id = KilnPassId::default();
        // SAFETY: valid pointers.
        assert_eq!(unsafe { kiln_runtime_add_pass(rt, &pass, &mut id) }, KILN_OK);
        PARALLEL_TOTAL.store(0, Ordering::SeqCst);
        assert_eq!(kiln_runtime_run_frame(rt, 0.01), KILN_OK, "{}", last_error());
        assert_eq!(PARALLEL_STATUS.load(Ordering::SeqCst), KILN_OK);
        assert_eq!(PARALLEL_TOTAL.load(Ordering::SeqCst), (0..1000).sum::<u32>());
        assert_eq!(kiln_runtime_destroy(rt), KILN_OK);
    }
    // Outside any pass.
    let context = KilnPassContext {
        runtime: KilnRuntimeId::default(),
        pass: KilnPassId::default(),
        frame_index: 0,
        delta_time: 0.0,
        worker_index: 0,
    };
    // SAFETY: valid pointer; refused because no pass is running.
    assert_eq!(
        unsafe { kiln_parallel_for(&context, 1, 1, Some(sum_range), ptr::null_mut()) },
        KILN_ERROR_INVALID_STATE
    );
}

#[test]
fn allocator_hooks_are_refused_once_kiln_has_allocated() {
    unsafe extern "C" fn never_alloc(_: usize, _: usize, _: *mut c_void) -> *mut c_void {
        ptr::null_mut()
    }
    unsafe extern "C" fn never_free(_: *mut c_void, _: usize, _: usize, _: *mut c_void) {}
    let hooks = KilnAllocator {
        struct_size: std::mem::size_of::<KilnAllocator>() as u32,
        alloc: Some(never_alloc),
        free: Some(never_free),
        user_context: ptr::null_mut(),
    };
    // SAFETY: valid pointers; the test harness has allocated, so this is refused.
    unsafe {
        assert_eq!(kiln_set_allocator(&hooks), KILN_ERROR_INVALID_STATE);
        assert_eq!(kiln_set_allocator(ptr::null()), KILN_ERROR_NULL_POINTER);
        let mut bad = hooks;
        bad.struct_size = 1;
        assert_eq!(kiln_set_allocator(&bad), KILN_ERROR_STRUCT_SIZE);
        bad = hooks;
        bad.free = None;
        assert_eq!(kiln_set_allocator(&bad), KILN_ERROR_NULL_POINTER);
    }
}

fn terrain() -> KilnTerrainId {
    let def = kiln_default_terrain_def();
    let mut id = KilnTerrainId::default();
    assert_eq!(unsafe { kiln_terrain_create(&def, &mut id) }, KILN_OK, "{}", last_error());
    id
}

#[test]
fn terrain_creation_refuses_bad_definitions() {
    let mut id = KilnTerrainId::default();
    assert_eq!(unsafe { kiln_terrain_create(ptr::null(), &mut id) }, KILN_ERROR_NULL_POINTER);
    let mut def = kiln_default_terrain_def();
    assert_eq!(unsafe { kiln_terrain_create(&def, ptr::null_mut()) }, KILN_ERROR_NULL_POINTER);
    for bad in [0.0, -1.0, f32::NAN, f32::INFINITY] {
        def.voxel_size = bad;
        assert_eq!(unsafe { kiln_terrain_create(&def, &mut id) }, KILN_ERROR_INVALID_ARGUMENT);
        assert!(last_error().contains("voxel_size"), "{}", last_error());
    }
    let mut def = kiln_default_terrain_def();
    def.struct_size = 4;
    assert_eq!(unsafe { kiln_terrain_create(&def, &mut id) }, KILN_ERROR_STRUCT_SIZE);
    assert_eq!(id, KilnTerrainId::default(), "the out-parameter stays untouched");
}

#[test]
fn terrain_calls_refuse_bad_arguments_and_change_nothing() {
    let t = terrain();
    let lo = KilnInt3 { x: 0, y: 0, z: 0 };
    let hi = KilnInt3 { x: 3, y: 3, z: 3 };
    let mut changed = 0u64;
    assert_eq!(unsafe { kiln_terrain_fill(t, lo, hi, KILN_MATERIAL_ROCK, &mut changed) }, KILN_OK);
    assert_eq!(changed, 64);
    let edge = KilnInt3 { x: i32::MAX, y: 0, z: 0 };
    assert_eq!(
        unsafe { kiln_terrain_fill(t, lo, edge, KILN_MATERIAL_ROCK, ptr::null_mut()) },
        KILN_ERROR_INVALID_ARGUMENT
    );
    assert_eq!(kiln_terrain_generate_hills(t, 0, 1), KILN_ERROR_INVALID_ARGUMENT);
    assert_eq!(kiln_terrain_generate_hills(t, 5000, 1), KILN_ERROR_INVALID_ARGUMENT);
    assert_eq!(unsafe { kiln_terrain_regenerate(t, KilnRuntimeId::default(), ptr::null_mut()) }, KILN_OK);

    let b = KilnAabb { min: KilnVec3 { x: 0.0, y: 0.0, z: 0.0 }, max: KilnVec3 { x: 1.0, y: 1.0, z: 1.0 } };
    let mut count = 0u32;
    assert_eq!(unsafe { kiln_terrain_overlap_chunks(t, &b, ptr::null_mut(), 4, &mut count) }, KILN_ERROR_NULL_POINTER);
    assert_eq!(
        unsafe { kiln_terrain_overlap_chunks(t, &b, ptr::null_mut(), 0, ptr::null_mut()) },
        KILN_ERROR_NULL_POINTER
    );
    assert_eq!(unsafe { kiln_terrain_overlap_chunks(t, &b, ptr::null_mut(), 0, &mut count) }, KILN_OK);
    // The box grows by a voxel, and the rock's dilation reaches the 7 chunks below 0.
    assert_eq!(count, 8);
    let mut one = [KilnChunkOverlap::default(); 1];
    assert_eq!(unsafe { kiln_terrain_overlap_chunks(t, &b, one.as_mut_ptr(), 1, &mut count) }, KILN_OK);
    assert_eq!(count, 8, "the total, though only one entry fit");
    assert!(one[0].overlap.solid);
    let inverted = KilnAabb { min: b.max, max: b.min };
    let mut o = KilnTerrainOverlap::default();
    assert_eq!(unsafe { kiln_terrain_overlap(t, &inverted, &mut o) }, KILN_ERROR_INVALID_ARGUMENT);
    assert_eq!(unsafe { kiln_terrain_overlap(t, &b, ptr::null_mut()) }, KILN_ERROR_NULL_POINTER);
    assert_eq!(unsafe { kiln_terrain_get_voxel(t, lo, ptr::null_mut()) }, KILN_ERROR_NULL_POINTER);
    assert_eq!(unsafe { kiln_terrain_get_stats(t, ptr::null_mut()) }, KILN_ERROR_NULL_POINTER);

    // A stale runtime is refused before any work; the terrain stays as it was.
    let rt = create(0);
    assert_eq!(kiln_runtime_destroy(rt), KILN_OK);
    assert_eq!(unsafe { kiln_terrain_fill(t, lo, lo, KILN_MATERIAL_AIR, ptr::null_mut()) }, KILN_OK);
    assert_eq!(unsafe { kiln_terrain_regenerate(t, rt, ptr::null_mut()) }, KILN_ERROR_INVALID_HANDLE);
    let mut stats = KilnTerrainStats::default();
    assert_eq!(unsafe { kiln_terrain_get_stats(t, &mut stats) }, KILN_OK);
    assert!(stats.dirty_chunks > 0, "the failed regenerate kept the dirty chunks");

    assert_eq!(kiln_terrain_destroy(t), KILN_OK);
    assert_eq!(kiln_terrain_destroy(t), KILN_ERROR_INVALID_HANDLE);
    assert!(last_error().contains("terrain handle"), "{}", last_error());
    let mut m = 0u8;
    assert_eq!(unsafe { kiln_terrain_get_voxel(t, lo, &mut m) }, KILN_ERROR_INVALID_HANDLE);
    assert_eq!(unsafe { kiln_terrain_get_voxel(KilnTerrainId::default(), lo, &mut m) }, KILN_ERROR_INVALID_HANDLE);
}

fn v3(x: f32, y: f32, z: f32) -> KilnVec3 {
    KilnVec3 { x, y, z }
}

#[test]
fn terrain_ray_casts_and_triangle_queries_refuse_bad_input() {
    let mut def = kiln_default_terrain_def();
    let mut t = KilnTerrainId::default();
    def.mesh_mode = 7;
    assert_eq!(unsafe { kiln_terrain_create(&def, &mut t) }, KILN_ERROR_INVALID_ARGUMENT);
    assert!(last_error().contains("mesh_mode"), "{}", last_error());
    def.mesh_mode = KILN_MESH_MODE_COMPACT;
    def.mesh_cache_bytes = 1 << 20;
    assert_eq!(unsafe { kiln_terrain_create(&def, &mut t) }, KILN_OK);
    let (lo, hi) = (KilnInt3 { x: -16, y: -8, z: -16 }, KilnInt3 { x: 15, y: 3, z: 15 });
    assert_eq!(unsafe { kiln_terrain_fill(t, lo, hi, KILN_MATERIAL_GRASS, ptr::null_mut()) }, KILN_OK);

    // A good cast: straight down onto the top face of y = 3 (no regenerate needed).
    let down = KilnRay { origin: v3(0.5, 10.0, 0.5), direction: v3(0.0, -2.0, 0.0) };
    let mut hit = KilnTerrainRayHit::default();
    assert_eq!(unsafe { kiln_terrain_ray_cast(t, &down, 100.0, &mut hit) }, KILN_OK, "{}", last_error());
    assert!(hit.hit);
    assert!((hit.distance - 6.0).abs() < 1e-4 && (hit.point.y - 4.0).abs() < 1e-4, "{hit:?}");
    assert_eq!((hit.normal.y, hit.material), (1.0, KILN_MATERIAL_GRASS));
    assert_eq!(unsafe { kiln_terrain_ray_cast(t, &down, 5.0, &mut hit) }, KILN_OK);
    assert!(!hit.hit, "beyond max_distance");
    assert_eq!(hit, KilnTerrainRayHit::default());

    // Bad rays and distances: a status, a message, the out-parameter untouched.
    let mut untouched = KilnTerrainRayHit { distance: -7.0, ..Default::default() };
    for (ray, max, what) in [
        (KilnRay { origin: v3(f32::NAN, 0.0, 0.0), ..down }, 1.0, "origin"),
        (KilnRay { direction: v3(0.0, 0.0, 0.0), ..down }, 1.0, "direction"),
        (KilnRay { direction: v3(f32::INFINITY, 0.0, 0.0), ..down }, 1.0, "direction"),
        (down, f32::NAN, "max_distance"),
        (down, -1.0, "max_distance"),
    ] {
        assert_eq!(unsafe { kiln_terrain_ray_cast(t, &ray, max, &mut untouched) }, KILN_ERROR_INVALID_ARGUMENT);
        assert!(last_error().contains(what), "{}", last_error());
        assert_eq!(untouched.distance, -7.0);
    }
    assert_eq!(unsafe { kiln_terrain_ray_cast(t, ptr::null(), 1.0, &mut hit) }, KILN_ERROR_NULL_POINTER);
    assert_eq!(unsafe { kiln_terrain_ray_cast(t, &down, 1.0, ptr::null_mut()) }, KILN_ERROR_NULL_POINTER);
    assert_eq!(
        unsafe { kiln_terrain_ray_cast(t, &down, f32::INFINITY, &mut hit) },
        KILN_OK,
        "an infinite reach is allowed"
    );

    // Batches: empty, on a runtime, with one bad ray (named, nothing written).
    let rt = create(2);
    assert_eq!(unsafe { kiln_terrain_ray_cast_batch(t, rt, ptr::null(), 0, 1.0, ptr::null_mut()) }, KILN_OK);
    let mut rays = [down; 64];
    for (i, r) in rays.iter_mut().enumerate() {
        r.origin.x = i as f32 * 0.37 - 12.0;
    }
    let mut hits = [KilnTerrainRayHit::default(); 64];
    assert_eq!(unsafe { kiln_terrain_ray_cast_batch(t, rt, rays.as_ptr(), 64, 100.0, hits.as_mut_ptr()) }, KILN_OK);
    // Compact meshes: within the quantisation step.
    assert!(hits.iter().all(|h| h.hit && (h.point.y - 4.0).abs() < 1e-4), "{hits:?}");
    rays[40].direction = v3(0.0, 0.0, 0.0);
    let mut fresh = [KilnTerrainRayHit::default(); 64];
    assert_eq!(
        unsafe { kiln_terrain_ray_cast_batch(t, rt, rays.as_ptr(), 64, 100.0, fresh.as_mut_ptr()) },
        KILN_ERROR_INVALID_ARGUMENT
    );
    assert!(last_error().contains("rays[40]"), "{}", last_error());
    assert!(fresh.iter().all(|h| !h.hit), "nothing written");
    assert_eq!(
        unsafe { kiln_terrain_ray_cast_batch(t, rt, ptr::null(), 4, 100.0, fresh.as_mut_ptr()) },
        KILN_ERROR_NULL_POINTER
    );

    // Triangle queries: size with capacity 0, then fetch; bad boxes refused.
    let b = KilnAabb { min: v3(-1.0, 3.5, -1.0), max: v3(1.0, 4.5, 1.0) };
    let mut count = 0u32;
    assert_eq!(unsafe { kiln_terrain_query_triangles(t, rt, &b, ptr::null_mut(), 0, &mut count) }, KILN_OK);
    assert!(count >= 8, "the flat top under a 2 x 2 m box: {count}");
    let mut tris = vec![KilnTerrainTriangle::default(); count as usize];
    let mut again = 0u32;
    assert_eq!(unsafe { kiln_terrain_query_triangles(t, rt, &b, tris.as_mut_ptr(), count, &mut again) }, KILN_OK);
    assert_eq!(again, count);
    assert!(tris
        .iter()
        .all(|t| t.vertices.iter().all(|v| (v.y - 4.0).abs() < 1e-4) && t.material == KILN_MATERIAL_GRASS));
    let inverted = KilnAabb { min: b.max, max: b.min };
    assert_eq!(
        unsafe { kiln_terrain_query_triangles(t, rt, &inverted, ptr::null_mut(), 0, &mut count) },
        KILN_ERROR_INVALID_ARGUMENT
    );
    assert_eq!(
        unsafe { kiln_terrain_query_triangles(t, rt, &b, ptr::null_mut(), 3, &mut count) },
        KILN_ERROR_NULL_POINTER
    );

    // The cache: under budget, shrinkable to nothing, stats refused without a pointer.
    let mut stats = KilnMeshCacheStats::default();
    assert_eq!(unsafe { kiln_terrain_get_mesh_cache_stats(t, &mut stats) }, KILN_OK);
    assert!(stats.chunks > 0 && stats.bytes <= stats.budget && stats.budget == 1 << 20, "{stats:?}");
    assert_eq!(stats.mesh_mode, KILN_MESH_MODE_COMPACT);
    assert_eq!(kiln_terrain_set_mesh_cache_budget(t, 0), KILN_OK);
    assert_eq!(unsafe { kiln_terrain_get_mesh_cache_stats(t, &mut stats) }, KILN_OK);
    assert_eq!((stats.chunks, stats.bytes), (0, 0));
    assert_eq!(unsafe { kiln_terrain_get_mesh_cache_stats(t, ptr::null_mut()) }, KILN_ERROR_NULL_POINTER);

    // Stale handles.
    assert_eq!(kiln_runtime_destroy(rt), KILN_OK);
    assert_eq!(
        unsafe { kiln_terrain_ray_cast_batch(t, rt, rays.as_ptr(), 1, 1.0, hits.as_mut_ptr()) },
        KILN_ERROR_INVALID_HANDLE
    );
    assert_eq!(kiln_terrain_destroy(t), KILN_OK);
    assert_eq!(unsafe { kiln_terrain_ray_cast(t, &down, 1.0, &mut hit) }, KILN_ERROR_INVALID_HANDLE);
    assert_eq!(kiln_terrain_set_mesh_cache_budget(t, 5), KILN_ERROR_INVALID_HANDLE);
}
