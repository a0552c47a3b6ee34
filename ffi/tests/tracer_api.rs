//! GPU ray tracing through the C ABI: instances follow physics bodies, a destroyed
//! body's instance is hidden, a tracer follows one world only, and bad handles and
//! arguments are refused with a status and a message, changing nothing. Needs a
//! Vulkan device (lavapipe in CI); without one it fails under `KILN_REQUIRE_GPU=1`
//! and says it skipped otherwise. `samples-c/trace.c` checks the rest from C.
//!
//! Nearly every line calls an `unsafe extern "C"` entry point with pointers to live
//! locals (or deliberately NULL ones), so per-block SAFETY comments would repeat.
#![allow(clippy::undocumented_unsafe_blocks)]

use std::ffi::CStr;
use std::ptr;

use kiln::*;

fn last_error() -> String {
    unsafe { CStr::from_ptr(kiln_last_error_message()) }.to_string_lossy().into_owned()
}

#[track_caller]
fn ok(status: KilnStatus) {
    assert_eq!(status, KILN_OK, "{}", last_error());
}

#[track_caller]
fn refused(status: KilnStatus, expected: KilnStatus, text: &str) {
    assert_eq!(status, expected, "{}", last_error());
    assert!(last_error().contains(text), "message {:?} lacks {text:?}", last_error());
}

fn v3(x: f32, y: f32, z: f32) -> KilnVec3 {
    KilnVec3 { x, y, z }
}

fn world() -> KilnWorldId {
    let def = kiln_default_world_def();
    let mut w = KilnWorldId::default();
    ok(unsafe { kiln_world_create(&def, &mut w) });
    w
}

fn ball(world: KilnWorldId, shape: KilnShapeId, x: f32, y: f32) -> KilnBodyId {
    let mut def = kiln_default_body_def();
    def.transform.position = v3(x, y, 0.0);
    let mut b = KilnBodyId::default();
    ok(unsafe { kiln_body_create(world, &def, &mut b) });
    let sdef = kiln_default_shape_def();
    ok(unsafe { kiln_body_add_shape(b, shape, &sdef, ptr::null_mut()) });
    b
}

fn down(x: f32) -> KilnTraceRay {
    KilnTraceRay {
        origin: v3(x, 100.0, 0.0),
        direction: v3(0.0, -1.0, 0.0),
        t_min: 0.0,
        t_max: f32::INFINITY,
        mask: !0,
    }
}

/// A flat `n x n` grid of quads of side `cell` centred on the origin (y = 0),
/// counter-clockwise from +y: vertices and indices.
fn grid(n: u32, cell: f32) -> (Vec<KilnVec3>, Vec<u32>) {
    let half = n as f32 * cell / 2.0;
    let verts = (0..=n).flat_map(|z| (0..=n).map(move |x| v3(x as f32 * cell - half, 0.0, z as f32 * cell - half)));
    let idx = (0..n).flat_map(|z| {
        (0..n).flat_map(move |x| {
            let v = z * (n + 1) + x;
            [v, v + n + 1, v + 1, v + 1, v + n + 1, v + n + 2]
        })
    });
    (verts.collect(), idx.collect())
}

fn tracer() -> Option<KilnTracerId> {
    let mut def = kiln_default_tracer_def();
    def.validation = true;
    let mut t = KilnTracerId::default();
    match unsafe { kiln_tracer_create(&def, &mut t) } {
        KILN_OK => Some(t),
        KILN_ERROR_NO_DEVICE if std::env::var("KILN_REQUIRE_GPU").as_deref() != Ok("1") => {
            eprintln!("tracer_api: SKIPPED (no Vulkan device: {}; set KILN_REQUIRE_GPU=1 to fail)", last_error());
            None
        }
        status => panic!("kiln_tracer_create: {status}: {}", last_error()),
    }
}

#[test]
fn instances_follow_bodies_and_bad_input_changes_nothing() {
    let Some(tracer) = tracer() else { return };
    let mut info = unsafe { std::mem::zeroed::<KilnDeviceInfo>() };
    ok(unsafe { kiln_tracer_get_device(tracer, &mut info) });
    assert!(info.name[0] != 0 && info.api_major == 1 && info.api_minor >= 2);

    // An empty scene: misses.
    let mut hit = KilnTraceHit::default();
    ok(unsafe { kiln_tracer_trace(tracer, &down(0.0), 1, KILN_TRACE_CLOSEST, &mut hit) });
    assert_eq!(hit.instance, KilnInstanceId::default());
    assert!(hit.t.is_infinite());

    // A unit octahedron mesh stands in for each ball.
    let verts = [
        v3(1.0, 0.0, 0.0),
        v3(-1.0, 0.0, 0.0),
        v3(0.0, 1.0, 0.0),
        v3(0.0, -1.0, 0.0),
        v3(0.0, 0.0, 1.0),
        v3(0.0, 0.0, -1.0),
    ];
    let idx: [u32; 24] = [0, 2, 4, 2, 1, 4, 1, 3, 4, 3, 0, 4, 2, 0, 5, 1, 2, 5, 3, 1, 5, 0, 3, 5];
    let mut mesh = KilnMeshId::default();
    ok(unsafe { kiln_tracer_add_mesh(tracer, verts.as_ptr(), 6, idx.as_ptr(), 8, &mut mesh) });

    let w = world();
    let mut shape = KilnShapeId::default();
    ok(unsafe { kiln_shape_create_sphere(v3(0.0, 0.0, 0.0), 0.5, &mut shape) });
    let bodies = [ball(w, shape, -3.0, 10.0), ball(w, shape, 0.0, 20.0), ball(w, shape, 3.0, 30.0)];
    let half = KilnAffine { rows: [[0.5, 0.0, 0.0, 0.0], [0.0, 0.5, 0.0, 0.0], [0.0, 0.0, 0.5, 0.0]] };
    let mut instances = [KilnInstanceId::default(); 3];
    for (i, (&b, inst)) in bodies.iter().zip(&mut instances).enumerate() {
        let mut def = kiln_default_instance_def();
        def.mesh = mesh;
        def.user_id = 10 + i as u32;
        ok(unsafe { kiln_tracer_add_instance(tracer, &def, inst) });
        ok(unsafe { kiln_tracer_follow_body(tracer, *inst, b, &half) });
    }
    let runtime = KilnRuntimeId::default();
    for _ in 0..30 {
        ok(kiln_world_step(w, runtime, 1.0 / 60.0));
    }
    let mut hidden = 99;
    ok(unsafe { kiln_tracer_sync_world(tracer, w, &mut hidden) });
    assert_eq!(hidden, 0);
    let rays = [down(-3.0), down(0.0), down(3.0)];
    let mut hits = [KilnTraceHit::default(); 3];
    ok(unsafe { kiln_tracer_trace(tracer, rays.as_ptr(), 3, KILN_TRACE_CLOSEST, hits.as_mut_ptr()) });
    for (i, (&b, h)) in bodies.iter().zip(&hits).enumerate() {
        let mut xf = kiln_transform_identity();
        ok(unsafe { kiln_body_get_transform(b, &mut xf) });
        assert_eq!((h.instance, h.user_id), (instances[i], 10 + i as u32));
        // The octahedron's top vertex sits 0.5 above the body (any rotation keeps a
        // vertex within 0.5 of the top): the hit is between centre and top.
        let y = 100.0 - h.t;
        assert!(y <= xf.position.y + 0.5 + 1e-4 && y >= xf.position.y, "hit at {y}, body at {}", xf.position.y);
    }

    // A destroyed body hides its instance.
    ok(kiln_body_destroy(bodies[1]));
    ok(unsafe { kiln_tracer_sync_world(tracer, w, &mut hidden) });
    assert_eq!(hidden, 1);
    ok(unsafe { kiln_tracer_trace(tracer, rays.as_ptr(), 3, KILN_TRACE_CLOSEST, hits.as_mut_ptr()) });
    assert_eq!(hits.map(|h| h.instance), [instances[0], KilnInstanceId::default(), instances[2]]);
    ok(unsafe { kiln_tracer_sync_world(tracer, w, ptr::null_mut()) });

    // One world per tracer; stale bodies, tracers and bad arguments are refused.
    let other = world();
    let stranger = ball(other, shape, 0.0, 5.0);
    refused(
        unsafe { kiln_tracer_follow_body(tracer, instances[0], stranger, ptr::null()) },
        KILN_ERROR_INVALID_ARGUMENT,
        "world",
    );
    refused(unsafe { kiln_tracer_sync_world(tracer, other, ptr::null_mut()) }, KILN_ERROR_INVALID_ARGUMENT, "world");
    refused(
        unsafe { kiln_tracer_follow_body(tracer, instances[0], bodies[1], ptr::null()) },
        KILN_ERROR_INVALID_HANDLE,
        "stale",
    );
    let unknown = KilnInstanceId { index1: 99, generation: 1, tracer };
    refused(
        unsafe { kiln_tracer_follow_body(tracer, unknown, bodies[0], ptr::null()) },
        KILN_ERROR_INVALID_HANDLE,
        "99",
    );
    let singular = KilnAffine { rows: [[0.0; 4]; 3] };
    refused(
        unsafe { kiln_tracer_follow_body(tracer, instances[0], bodies[0], &singular) },
        KILN_ERROR_INVALID_ARGUMENT,
        "singular",
    );
    refused(
        unsafe { kiln_tracer_trace(tracer, rays.as_ptr(), 3, 5, hits.as_mut_ptr()) },
        KILN_ERROR_INVALID_ARGUMENT,
        "mode",
    );
    refused(
        unsafe { kiln_tracer_trace(tracer, ptr::null(), 3, 0, hits.as_mut_ptr()) },
        KILN_ERROR_NULL_POINTER,
        "rays",
    );
    let mut timings = [KilnGpuPassTiming { name: [0; 32], milliseconds: 0.0 }; 8];
    let mut n = 0;
    ok(unsafe { kiln_tracer_get_timings(tracer, timings.as_mut_ptr(), 8, &mut n) });
    if info.timestamps {
        // The last trace that ran (refused calls do not count) updated the scene first.
        let names: Vec<&str> = timings[..n as usize]
            .iter()
            .map(|t| unsafe { CStr::from_ptr(t.name.as_ptr()) }.to_str().unwrap())
            .collect();
        assert_eq!(names, ["upload instances", "tlas build", "trace"]);
        assert!(timings[..3].iter().all(|t| t.milliseconds > 0.0 && t.milliseconds.is_finite()));
    }
    let mut messages = 99;
    ok(unsafe { kiln_tracer_get_validation_messages(tracer, ptr::null_mut(), 0, &mut messages) });
    assert_eq!(messages, 0);
    ok(kiln_tracer_destroy(tracer));
    refused(
        unsafe { kiln_tracer_trace(tracer, rays.as_ptr(), 3, 0, hits.as_mut_ptr()) },
        KILN_ERROR_INVALID_HANDLE,
        "tracer",
    );
    refused(kiln_tracer_update(tracer), KILN_ERROR_INVALID_HANDLE, "tracer");
    ok(kiln_world_destroy(w));
    ok(kiln_world_destroy(other));
    ok(kiln_shape_destroy(shape));
}

#[test]
fn affine_from_transform_scales_then_rotates_then_moves() {
    // A quarter turn about +y: x -> -z. Scale 2 along x first.
    let s = std::f32::consts::FRAC_1_SQRT_2;
    let xf = KilnTransform { position: v3(1.0, 2.0, 3.0), rotation: KilnQuat { x: 0.0, y: s, z: 0.0, w: s } };
    let a = kiln_affine_from_transform(xf, v3(2.0, 1.0, 1.0));
    let p = [1.0f32, 0.0, 0.0];
    let out: Vec<f32> = (0..3).map(|r| (0..3).map(|k| a.rows[r][k] * p[k]).sum::<f32>() + a.rows[r][3]).collect();
    for (got, want) in out.iter().zip([1.0, 2.0, 1.0]) {
        assert!((got - want).abs() < 1e-5, "{out:?}");
    }
}

#[test]
fn a_memory_budget_refuses_with_out_of_memory_and_a_raised_one_recovers() {
    let Some(tracer) = tracer() else { return };
    let (mut in_use, mut budget) = (u64::MAX, u64::MAX);
    ok(unsafe { kiln_tracer_get_memory(tracer, &mut in_use, &mut budget) });
    assert_eq!(budget, 0, "no budget by default");
    ok(kiln_tracer_set_memory_budget(tracer, 64 << 10));
    // A 100x100 grid (20,000 triangles) needs more than 64 KiB on the device.
    let n = 100u32;
    let (verts, idx) = grid(n, 0.1);
    let mut mesh = KilnMeshId::default();
    ok(unsafe { kiln_tracer_add_mesh(tracer, verts.as_ptr(), verts.len() as u32, idx.as_ptr(), 2 * n * n, &mut mesh) });
    let mut def = kiln_default_instance_def();
    def.mesh = mesh;
    def.user_id = 7;
    let mut instance = KilnInstanceId::default();
    ok(unsafe { kiln_tracer_add_instance(tracer, &def, &mut instance) });
    let mut hit = unsafe { std::mem::zeroed::<KilnTraceHit>() };
    refused(
        unsafe { kiln_tracer_trace(tracer, &down(0.05), 1, KILN_TRACE_CLOSEST, &mut hit) },
        KILN_ERROR_OUT_OF_MEMORY,
        "memory budget",
    );
    ok(unsafe { kiln_tracer_get_memory(tracer, &mut in_use, &mut budget) });
    assert_eq!(budget, 64 << 10);
    assert!(in_use <= budget, "{in_use} bytes held after the refusal");
    // Raised: the same call succeeds and hits the grid.
    ok(kiln_tracer_set_memory_budget(tracer, 0));
    ok(unsafe { kiln_tracer_trace(tracer, &down(0.05), 1, KILN_TRACE_CLOSEST, &mut hit) });
    assert_eq!((hit.instance, hit.user_id), (instance, 7));
    assert!((hit.t - 100.0).abs() < 1e-3, "{}", hit.t);
    ok(unsafe { kiln_tracer_get_memory(tracer, &mut in_use, ptr::null_mut()) });
    assert!(in_use > 64 << 10);
    refused(
        unsafe { kiln_tracer_get_memory(KilnTracerId::default(), &mut in_use, &mut budget) },
        KILN_ERROR_INVALID_HANDLE,
        "tracer",
    );
    let mut messages = 99;
    ok(unsafe { kiln_tracer_get_validation_messages(tracer, ptr::null_mut(), 0, &mut messages) });
    assert_eq!(messages, 0);
    ok(kiln_tracer_destroy(tracer));
    refused(kiln_tracer_set_memory_budget(tracer, 1), KILN_ERROR_INVALID_HANDLE, "tracer");
}

/// Removing an instance and its mesh through the C ABI: hits stop naming it, the
/// device memory goes back down, and the removed handles (or null ones, or another
/// tracer's) are refused with `KILN_ERROR_INVALID_HANDLE` and change nothing.
#[test]
fn removed_instances_and_meshes_give_memory_back_and_their_handles_are_refused() {
    let (Some(tracer), Some(other)) = (tracer(), tracer()) else { return };
    let verts = [v3(-1.0, 0.0, -1.0), v3(1.0, 0.0, -1.0), v3(1.0, 0.0, 1.0), v3(-1.0, 0.0, 1.0)];
    let idx: [u32; 6] = [0, 2, 1, 0, 3, 2];
    // The spare is the larger mesh (a 32 x 32 grid), so its removal leaves more holes
    // than live data and the mesh arrays are compacted.
    let n = 32u32;
    let (grid, grid_idx) = grid(n, 1.0 / 16.0);
    let (mut floor, mut spare) = (KilnMeshId::default(), KilnMeshId::default());
    ok(unsafe { kiln_tracer_add_mesh(tracer, verts.as_ptr(), 4, idx.as_ptr(), 2, &mut floor) });
    ok(unsafe {
        kiln_tracer_add_mesh(tracer, grid.as_ptr(), grid.len() as u32, grid_idx.as_ptr(), 2 * n * n, &mut spare)
    });
    let mut def = kiln_default_instance_def();
    def.mesh = floor;
    def.user_id = 1;
    let mut low = KilnInstanceId::default();
    ok(unsafe { kiln_tracer_add_instance(tracer, &def, &mut low) });
    def.mesh = spare;
    def.user_id = 2;
    def.transform.rows[1][3] = 5.0;
    let mut high = KilnInstanceId::default();
    ok(unsafe { kiln_tracer_add_instance(tracer, &def, &mut high) });
    let mut hit = KilnTraceHit::default();
    ok(unsafe { kiln_tracer_trace(tracer, &down(0.0), 1, KILN_TRACE_CLOSEST, &mut hit) });
    assert_eq!((hit.instance, hit.user_id), (high, 2));
    let mut before = 0;
    ok(unsafe { kiln_tracer_get_memory(tracer, &mut before, ptr::null_mut()) });

    // A used mesh is refused; removing its instance first lets it go.
    refused(kiln_tracer_remove_mesh(tracer, spare), KILN_ERROR_INVALID_ARGUMENT, "used by 1 instances");
    ok(kiln_tracer_remove_instance(tracer, high));
    ok(kiln_tracer_remove_mesh(tracer, spare));
    ok(unsafe { kiln_tracer_trace(tracer, &down(0.0), 1, KILN_TRACE_CLOSEST, &mut hit) });
    assert_eq!((hit.instance, hit.user_id), (low, 1), "the lower instance, now the only one");
    let mut after = 0;
    ok(unsafe { kiln_tracer_get_memory(tracer, &mut after, ptr::null_mut()) });
    assert!(after < before, "the removed mesh's BLAS is freed: {after} vs {before} bytes");

    // Removed, null and foreign handles are refused wherever a handle is taken.
    let null = KilnInstanceId::default();
    let foreign = KilnInstanceId { tracer: other, ..low };
    for (bad, why) in [(high, "stale"), (null, "null"), (foreign, "tracer")] {
        refused(kiln_tracer_remove_instance(tracer, bad), KILN_ERROR_INVALID_HANDLE, why);
        refused(kiln_tracer_unfollow(tracer, bad), KILN_ERROR_INVALID_HANDLE, why);
        let identity = kiln_affine_from_transform(kiln_transform_identity(), v3(1.0, 1.0, 1.0));
        refused(unsafe { kiln_tracer_set_transforms(tracer, &bad, &identity, 1) }, KILN_ERROR_INVALID_HANDLE, why);
        refused(unsafe { kiln_tracer_set_bones(tracer, bad, &identity, 1) }, KILN_ERROR_INVALID_HANDLE, why);
    }
    for (bad, why) in
        [(spare, "stale"), (KilnMeshId::default(), "null"), (KilnMeshId { tracer: other, ..floor }, "tracer")]
    {
        refused(kiln_tracer_remove_mesh(tracer, bad), KILN_ERROR_INVALID_HANDLE, why);
        def.mesh = bad;
        let mut out = KilnInstanceId::default();
        refused(unsafe { kiln_tracer_add_instance(tracer, &def, &mut out) }, KILN_ERROR_INVALID_HANDLE, why);
    }
    // Nothing changed: the same hit.
    ok(unsafe { kiln_tracer_trace(tracer, &down(0.0), 1, KILN_TRACE_CLOSEST, &mut hit) });
    assert_eq!((hit.instance, hit.user_id), (low, 1));
    // A slot freed by a removal is reused under a new generation.
    def.mesh = floor;
    let mut again = KilnInstanceId::default();
    ok(unsafe { kiln_tracer_add_instance(tracer, &def, &mut again) });
    assert_eq!(again.index1, high.index1);
    assert_ne!(again.generation, high.generation);
    ok(kiln_tracer_destroy(tracer));
    ok(kiln_tracer_destroy(other));
}
