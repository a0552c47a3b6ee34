//! The rigid-body world through the C ABI: bodies dropped on a lent voxel terrain
//! settle and sleep, read back in bulk through strided arrays, report contact events,
//! debug drawing and a profile, give the same bits on the calling thread and on a
//! pool, wake on terrain edits made through the terrain's own handle; and every bad
//! input is refused with a status and a message, changing nothing.
//! `samples-c/falling_bodies.c` and `samples-c/tests/world_api.c` check the same from C.
//!
//! Nearly every line calls an `unsafe extern "C"` entry point with pointers to live
//! locals (or deliberately NULL ones), so per-block SAFETY comments would repeat.
#![allow(clippy::undocumented_unsafe_blocks)]

use std::ffi::{c_void, CStr};
use std::ptr;

use kiln::*;

fn last_error() -> String {
    unsafe { CStr::from_ptr(kiln_last_error_message()) }.to_string_lossy().into_owned()
}

#[track_caller]
fn ok(status: KilnStatus) {
    assert_eq!(status, KILN_OK, "{}", last_error());
}

fn v3(x: f32, y: f32, z: f32) -> KilnVec3 {
    KilnVec3 { x, y, z }
}

fn at(x: f32, y: f32, z: f32) -> KilnTransform {
    KilnTransform { position: v3(x, y, z), ..kiln_transform_identity() }
}

fn runtime(threads: u32) -> KilnRuntimeId {
    let mut def = kiln_default_runtime_def();
    def.thread_count = threads;
    let mut id = KilnRuntimeId::default();
    ok(unsafe { kiln_runtime_create(&def, &mut id) });
    id
}

fn hills(size: i32) -> KilnTerrainId {
    let def = kiln_default_terrain_def();
    let mut t = KilnTerrainId::default();
    ok(unsafe { kiln_terrain_create(&def, &mut t) });
    ok(kiln_terrain_generate_hills(t, size, 7));
    t
}

fn world() -> KilnWorldId {
    let def = kiln_default_world_def();
    let mut w = KilnWorldId::default();
    ok(unsafe { kiln_world_create(&def, &mut w) });
    w
}

fn body(world: KilnWorldId, shape: KilnShapeId, p: KilnTransform) -> KilnBodyId {
    rolling_body(world, shape, p, 0.0)
}

fn rolling_body(world: KilnWorldId, shape: KilnShapeId, p: KilnTransform, rolling_resistance: f32) -> KilnBodyId {
    let mut def = kiln_default_body_def();
    def.transform = p;
    let mut b = KilnBodyId::default();
    ok(unsafe { kiln_body_create(world, &def, &mut b) });
    let sdef = KilnShapeDef { rolling_resistance, ..kiln_default_shape_def() };
    ok(unsafe { kiln_body_add_shape(b, shape, &sdef, ptr::null_mut()) });
    b
}

/// The height of the terrain surface under (x, z).
fn ground_height(terrain: KilnTerrainId, x: f32, z: f32) -> f32 {
    let ray = KilnRay { origin: v3(x, 200.0, z), direction: v3(0.0, -1.0, 0.0) };
    let mut hit = KilnTerrainRayHit::default();
    ok(unsafe { kiln_terrain_ray_cast(terrain, &ray, 400.0, &mut hit) });
    assert!(hit.hit);
    hit.point.y
}

/// One interleaved record of an engine's render array: the strided read-back writes
/// straight into it.
#[repr(C)]
#[derive(Clone, Copy, Default, Debug, PartialEq)]
struct Instance {
    position: [f32; 3],
    entity: u32,
    rotation: [f32; 4],
}

struct Drop {
    world: KilnWorldId,
    terrain: KilnTerrainId,
    bodies: Vec<KilnBodyId>,
    shapes: [KilnShapeId; 2],
}

/// 8 x 8 boxes and spheres (with rolling resistance, so they stop on slopes) dropped
/// over the middle of a 96 m hill terrain.
fn drop_scene() -> Drop {
    let terrain = hills(96);
    // Water off: some bodies would land in the hills' lakes, where at the default
    // density (the water's own) they hover and drift; all 64 sleep by 30 s, half
    // of them are still awake at 10 s.
    // These tests are about the terrain's contacts; `samples-c/tests/water.c` floats.
    let def = KilnWorldDef { water_density: 0.0, ..kiln_default_world_def() };
    let mut w = KilnWorldId::default();
    ok(unsafe { kiln_world_create(&def, &mut w) });
    ok(kiln_world_set_terrain(w, terrain));
    let mut cube = KilnShapeId::default();
    let mut ball = KilnShapeId::default();
    ok(unsafe { kiln_shape_create_box(v3(0.4, 0.4, 0.4), &mut cube) });
    ok(unsafe { kiln_shape_create_sphere(v3(0.0, 0.0, 0.0), 0.4, &mut ball) });
    let mut bodies = Vec::new();
    for i in 0..8 {
        for j in 0..8 {
            let (x, z) = (30.0 + 4.5 * i as f32, 30.0 + 4.5 * j as f32);
            let y = ground_height(terrain, x, z) + 3.0 + (i + j) as f32 * 0.25;
            let (shape, rolling) = if (i + j) % 2 == 0 { (cube, 0.0) } else { (ball, 0.2) };
            bodies.push(rolling_body(w, shape, at(x, y, z), rolling));
        }
    }
    Drop { world: w, terrain, bodies, shapes: [cube, ball] }
}

fn destroy(scene: Drop) {
    // Every scene ends with its invariants intact (`kiln_world_validate`).
    ok(kiln_world_validate(scene.world));
    ok(kiln_world_destroy(scene.world));
    ok(kiln_terrain_destroy(scene.terrain));
    for s in scene.shapes {
        ok(kiln_shape_destroy(s));
    }
}

fn read_back(scene: &Drop) -> Vec<Instance> {
    let mut out = vec![Instance::default(); scene.bodies.len()];
    let stride = std::mem::size_of::<Instance>();
    let base = out.as_mut_ptr();
    ok(unsafe {
        kiln_world_get_transforms(
            scene.world,
            scene.bodies.as_ptr(),
            scene.bodies.len() as u32,
            ptr::addr_of_mut!((*base).position).cast(),
            stride,
            ptr::addr_of_mut!((*base).rotation).cast(),
            stride,
        )
    });
    out
}

#[derive(Default)]
struct Drawn {
    shapes: u32,
    sleeping_shapes: u32,
    aabbs: u32,
    contacts: u32,
    nodes: u32,
    terrain_contacts: u32,
}

unsafe extern "C" fn draw_shape(
    _: KilnBodyId,
    _: u32,
    shape: KilnShapeId,
    t: *const KilnTransform,
    color: u32,
    ctx: *mut c_void,
) {
    let d = unsafe { &mut *(ctx as *mut Drawn) };
    assert!(kiln_shape_is_valid(shape));
    assert!(unsafe { (*t).position.y }.is_finite());
    d.shapes += 1;
    d.sleeping_shapes += (color == KILN_COLOR_SLEEPING) as u32;
}

unsafe extern "C" fn draw_aabb(_: *const KilnAabb, color: u32, ctx: *mut c_void) {
    assert_eq!(color, KILN_COLOR_AABB);
    unsafe { (*(ctx as *mut Drawn)).aabbs += 1 };
}

unsafe extern "C" fn draw_contact(c: *const KilnWorldContact, ctx: *mut c_void) {
    let d = unsafe { &mut *(ctx as *mut Drawn) };
    let c = unsafe { &*c };
    let n = c.normal;
    assert!(((n.x * n.x + n.y * n.y + n.z * n.z).sqrt() - 1.0).abs() < 1e-4);
    d.contacts += 1;
    d.terrain_contacts += (c.body_b == KilnBodyId::default()) as u32;
}

unsafe extern "C" fn draw_node(_: *const KilnAabb, _: u32, ctx: *mut c_void) {
    unsafe { (*(ctx as *mut Drawn)).nodes += 1 };
}

#[test]
fn bodies_dropped_on_a_lent_terrain_settle_sleep_and_read_back() {
    let rt = runtime(2);
    let scene = drop_scene();
    let n = scene.bodies.len();
    let mut begins = 0;
    let mut events = Vec::new();
    for _ in 0..600 {
        ok(kiln_world_step(scene.world, rt, 1.0 / 60.0));
        let mut count = 0;
        ok(unsafe { kiln_world_get_contact_events(scene.world, ptr::null_mut(), 0, &mut count) });
        events.resize(count as usize, KilnContactEvent::default());
        ok(unsafe { kiln_world_get_contact_events(scene.world, events.as_mut_ptr(), count, &mut count) });
        for e in &events {
            assert!(kiln_body_is_valid(e.body_a));
            begins += e.begin as u32;
        }
    }
    assert!(begins as usize >= n, "every body began touching the terrain: {begins} begin events");

    let mut counters = KilnWorldCounters::default();
    ok(unsafe { kiln_world_get_counters(scene.world, &mut counters) });
    assert_eq!(counters.body_count as usize, n);
    assert_eq!(counters.awake_body_count, 0, "all asleep after 10 s: {counters:?}");
    let mut profile = KilnWorldProfile::default();
    ok(unsafe { kiln_world_get_profile(scene.world, &mut profile) });
    assert!(profile.total_ms >= profile.solve_ms && profile.total_ms > 0.0, "{profile:?}");

    // Strided bulk read-back equals the one-body getter, and stays on the terrain.
    let instances = read_back(&scene);
    for (inst, &b) in instances.iter().zip(&scene.bodies) {
        let mut t = kiln_transform_identity();
        ok(unsafe { kiln_body_get_transform(b, &mut t) });
        let r = t.rotation;
        assert_eq!(inst.position, [t.position.x, t.position.y, t.position.z]);
        assert_eq!(inst.rotation, [r.x, r.y, r.z, r.w]);
        assert_eq!(inst.entity, 0, "the stride skipped the engine's own fields");
        let floor = ground_height(scene.terrain, t.position.x, t.position.z);
        assert!(t.position.y > floor - 0.1, "body at {t:?} sank below the terrain at {floor}");
        let mut awake = true;
        ok(unsafe { kiln_body_is_awake(b, &mut awake) });
        assert!(!awake);
    }

    let mut drawn = Drawn::default();
    let mut draw = kiln_default_debug_draw();
    draw.draw_shape = Some(draw_shape);
    draw.draw_aabb = Some(draw_aabb);
    draw.draw_contact = Some(draw_contact);
    draw.draw_tree_node = Some(draw_node);
    draw.user_context = ptr::addr_of_mut!(drawn).cast();
    ok(unsafe { kiln_world_debug_draw(scene.world, &draw) });
    assert_eq!((drawn.shapes, drawn.sleeping_shapes, drawn.aabbs), (n as u32, n as u32, n as u32));
    assert_eq!(drawn.nodes, 2 * n as u32 - 1);
    // Sleeping islands' contacts are not solved, so none are drawn now; wake one body.
    ok(kiln_body_wake(scene.bodies[0]));
    ok(kiln_world_step(scene.world, rt, 1.0 / 60.0));
    let mut drawn = Drawn::default();
    draw.user_context = ptr::addr_of_mut!(drawn).cast();
    ok(unsafe { kiln_world_debug_draw(scene.world, &draw) });
    assert!(drawn.contacts > 0 && drawn.terrain_contacts > 0);

    destroy(scene);
    ok(kiln_runtime_destroy(rt));
}

#[test]
fn the_same_bits_on_the_calling_thread_and_on_a_pool() {
    let mut runs = Vec::new();
    for threads in [None, Some(1), Some(3)] {
        let rt = threads.map(runtime).unwrap_or_default();
        let scene = drop_scene();
        for _ in 0..240 {
            ok(kiln_world_step(scene.world, rt, 1.0 / 60.0));
        }
        runs.push(read_back(&scene));
        destroy(scene);
        if rt != KilnRuntimeId::default() {
            ok(kiln_runtime_destroy(rt));
        }
    }
    let bits = |r: &Vec<Instance>| {
        r.iter().flat_map(|i| i.position.iter().chain(&i.rotation).map(|x| x.to_bits())).collect::<Vec<_>>()
    };
    assert_eq!(bits(&runs[0]), bits(&runs[1]));
    assert_eq!(bits(&runs[0]), bits(&runs[2]));
}

#[test]
fn terrain_edits_through_the_terrain_handle_wake_sleeping_bodies() {
    let scene = drop_scene();
    for _ in 0..600 {
        ok(kiln_world_step(scene.world, KilnRuntimeId::default(), 1.0 / 60.0));
    }
    let b = scene.bodies[9];
    let mut awake = true;
    ok(unsafe { kiln_body_is_awake(b, &mut awake) });
    assert!(!awake);
    let mut t = kiln_transform_identity();
    ok(unsafe { kiln_body_get_transform(b, &mut t) });
    // Dig a pit under it through the terrain's handle (the world holds the terrain).
    let (x, y, z) = (t.position.x.floor() as i32, t.position.y.floor() as i32, t.position.z.floor() as i32);
    let mut changed = 0;
    ok(unsafe {
        kiln_terrain_fill(
            scene.terrain,
            KilnInt3 { x: x - 2, y: y - 4, z: z - 2 },
            KilnInt3 { x: x + 2, y: y + 1, z: z + 2 },
            KILN_MATERIAL_AIR,
            &mut changed,
        )
    });
    assert!(changed > 0);
    let mut chunks = 0;
    ok(unsafe { kiln_terrain_regenerate(scene.terrain, KilnRuntimeId::default(), &mut chunks) });
    assert!(chunks > 0);
    ok(unsafe { kiln_body_is_awake(b, &mut awake) });
    assert!(awake, "regenerating the edited chunks woke the body on them");
    for _ in 0..60 {
        ok(kiln_world_step(scene.world, KilnRuntimeId::default(), 1.0 / 60.0));
    }
    let mut after = kiln_transform_identity();
    ok(unsafe { kiln_body_get_transform(b, &mut after) });
    assert!(after.position.y < t.position.y - 1.0, "it fell into the pit: {t:?} -> {after:?}");
    destroy(scene);
}

unsafe extern "C" fn reenter(
    body: KilnBodyId,
    _: u32,
    _: KilnShapeId,
    _: *const KilnTransform,
    _: u32,
    ctx: *mut c_void,
) {
    let status = unsafe { &mut *(ctx as *mut KilnStatus) };
    *status = kiln_body_wake(body);
}

#[test]
fn bad_input_is_refused_with_a_status_and_changes_nothing() {
    let w = world();
    let mut cube = KilnShapeId::default();
    ok(unsafe { kiln_shape_create_box(v3(0.5, 0.5, 0.5), &mut cube) });
    let b = body(w, cube, at(0.0, 5.0, 0.0));

    // World creation.
    let mut out = KilnWorldId { index1: 77, generation: 77 };
    let good = kiln_default_world_def();
    assert_eq!(unsafe { kiln_world_create(ptr::null(), &mut out) }, KILN_ERROR_NULL_POINTER);
    assert_eq!(unsafe { kiln_world_create(&good, ptr::null_mut()) }, KILN_ERROR_NULL_POINTER);
    let mut def = good;
    def.struct_size = 4;
    assert_eq!(unsafe { kiln_world_create(&def, &mut out) }, KILN_ERROR_STRUCT_SIZE);
    for bad in [
        KilnWorldDef { substeps: 0, ..good },
        KilnWorldDef { gravity: v3(f32::NAN, 0.0, 0.0), ..good },
        KilnWorldDef { contact_hertz: f32::INFINITY, ..good },
        KilnWorldDef { time_to_sleep: -1.0, ..good },
    ] {
        assert_eq!(unsafe { kiln_world_create(&bad, &mut out) }, KILN_ERROR_INVALID_ARGUMENT, "{bad:?}");
        assert!(last_error().contains("kiln_world_create"), "{}", last_error());
    }
    assert_eq!(out, KilnWorldId { index1: 77, generation: 77 }, "untouched on failure");

    // Body creation.
    let mut nb = KilnBodyId { index1: 5, ..Default::default() };
    let bd = kiln_default_body_def();
    for bad in [
        KilnBodyDef { motion_type: 9, ..bd },
        KilnBodyDef { transform: at(f32::NAN, 0.0, 0.0), ..bd },
        KilnBodyDef { transform: at(1e30, 0.0, 0.0), ..bd },
        KilnBodyDef { linear_velocity: v3(1e9, 0.0, 0.0), ..bd },
        KilnBodyDef { linear_damping: -1.0, ..bd },
        KilnBodyDef { gravity_scale: f32::INFINITY, ..bd },
    ] {
        assert_eq!(unsafe { kiln_body_create(w, &bad, &mut nb) }, KILN_ERROR_INVALID_ARGUMENT, "{bad:?}");
    }
    assert_eq!(unsafe { kiln_body_create(w, ptr::null(), &mut nb) }, KILN_ERROR_NULL_POINTER);
    assert_eq!(unsafe { kiln_body_create(KilnWorldId::default(), &bd, &mut nb) }, KILN_ERROR_INVALID_HANDLE);
    assert_eq!(nb, KilnBodyId { index1: 5, ..Default::default() });

    // Shapes.
    let sd = kiln_default_shape_def();
    let mut index = 99;
    for bad in [
        KilnShapeDef { density: f32::NAN, ..sd },
        KilnShapeDef { friction: -1.0, ..sd },
        KilnShapeDef { restitution: 1.5, ..sd },
        KilnShapeDef { pose: at(0.0, 1e30, 0.0), ..sd },
        KilnShapeDef { pose: at(0.0, 2.0e5, 0.0), ..sd },
    ] {
        assert_eq!(unsafe { kiln_body_add_shape(b, cube, &bad, &mut index) }, KILN_ERROR_INVALID_ARGUMENT);
    }
    assert_eq!(unsafe { kiln_body_add_shape(b, KilnShapeId::default(), &sd, &mut index) }, KILN_ERROR_INVALID_HANDLE);
    // Shapes larger than KILN_SHAPE_MAX_EXTENT are refused when made ...
    let mut huge = KilnShapeId::default();
    let limit = KILN_SHAPE_MAX_EXTENT;
    assert_eq!(unsafe { kiln_shape_create_box(v3(1e30, 1e30, 1e30), &mut huge) }, KILN_ERROR_INVALID_ARGUMENT);
    assert!(last_error().contains("MAX_EXTENT"), "{}", last_error());
    assert_eq!(
        unsafe { kiln_shape_create_sphere(v3(0.0, 0.0, 0.0), 2.0 * limit, &mut huge) },
        KILN_ERROR_INVALID_ARGUMENT
    );
    assert_eq!(huge, KilnShapeId::default());
    // ... and a valid shape whose inertia at this density overflows float when added.
    ok(unsafe { kiln_shape_create_box(v3(limit, limit, limit), &mut huge) });
    let dense = KilnShapeDef { density: 1e20, ..sd };
    assert_eq!(unsafe { kiln_body_add_shape(b, huge, &dense, &mut index) }, KILN_ERROR_INVALID_ARGUMENT);
    assert!(last_error().contains("overflows"), "{}", last_error());
    ok(kiln_shape_destroy(huge));
    assert_eq!(index, 99);
    let mut count = 0;
    ok(unsafe { kiln_body_get_shape_count(b, &mut count) });
    assert_eq!(count, 1);

    // Get/set, forces, steps.
    let before = read_one(b);
    for bad in [at(f32::NAN, 0.0, 0.0), at(f32::INFINITY, 0.0, 0.0), at(2e7, 0.0, 0.0)] {
        assert_eq!(unsafe { kiln_body_set_transform(b, &bad) }, KILN_ERROR_INVALID_ARGUMENT);
    }
    let mut skew = at(0.0, 0.0, 0.0);
    skew.rotation.w = 3.0;
    assert_eq!(unsafe { kiln_body_set_transform(b, &skew) }, KILN_ERROR_INVALID_ARGUMENT);
    assert_eq!(unsafe { kiln_body_set_transform(b, ptr::null()) }, KILN_ERROR_NULL_POINTER);
    assert_eq!(kiln_body_apply_force(b, v3(f32::NAN, 0.0, 0.0)), KILN_ERROR_INVALID_ARGUMENT);
    assert_eq!(kiln_body_apply_torque(b, v3(0.0, f32::INFINITY, 0.0)), KILN_ERROR_INVALID_ARGUMENT);
    assert_eq!(kiln_body_apply_impulse(b, v3(0.0, 1.0, 0.0), v3(0.0, f32::NAN, 0.0)), KILN_ERROR_INVALID_ARGUMENT);
    assert_eq!(kiln_body_set_velocity(b, v3(0.0, 1e9, 0.0), v3(0.0, 0.0, 0.0)), KILN_ERROR_INVALID_ARGUMENT);
    assert_eq!(unsafe { kiln_body_set_target_transform(b, &at(0.0, 0.0, 0.0), 1.0 / 60.0) }, KILN_ERROR_INVALID_STATE);
    for dt in [f32::NAN, -1.0, 2.0, f32::INFINITY] {
        assert_eq!(kiln_world_step(w, KilnRuntimeId::default(), dt), KILN_ERROR_INVALID_ARGUMENT);
    }
    assert_eq!(
        kiln_world_step(w, KilnRuntimeId { index1: 40, generation: 1 }, 0.01),
        KILN_ERROR_INVALID_HANDLE,
        "a stale runtime"
    );
    assert_eq!(read_one(b), before, "refused calls moved nothing");
    let mut velocity = v3(1.0, 1.0, 1.0);
    ok(unsafe { kiln_body_get_velocity(b, &mut velocity, ptr::null_mut()) });
    assert_eq!(velocity, v3(0.0, 0.0, 0.0));

    // Bulk read-back: strides, alignment, a stale handle in the list.
    let mut positions = [7.0f32; 6];
    let list = [b, b];
    assert_eq!(
        unsafe { kiln_world_get_transforms(w, list.as_ptr(), 2, positions.as_mut_ptr(), 8, ptr::null_mut(), 0) },
        KILN_ERROR_INVALID_ARGUMENT,
        "a stride shorter than 3 floats"
    );
    let misaligned = unsafe { positions.as_mut_ptr().cast::<u8>().add(1) }.cast::<f32>();
    assert_eq!(
        unsafe { kiln_world_get_transforms(w, list.as_ptr(), 1, misaligned, 0, ptr::null_mut(), 0) },
        KILN_ERROR_INVALID_ARGUMENT
    );
    assert_eq!(
        unsafe { kiln_world_get_transforms(w, ptr::null(), 2, positions.as_mut_ptr(), 0, ptr::null_mut(), 0) },
        KILN_ERROR_NULL_POINTER
    );
    let other = world();
    let foreign = body(other, cube, at(0.0, 0.0, 0.0));
    let mixed = [b, foreign];
    assert_eq!(
        unsafe { kiln_world_get_transforms(w, mixed.as_ptr(), 2, positions.as_mut_ptr(), 0, ptr::null_mut(), 0) },
        KILN_ERROR_INVALID_HANDLE
    );
    assert!(last_error().contains("bodies[1]"), "{}", last_error());
    assert_eq!(positions, [7.0; 6], "nothing written when one handle is bad");
    ok(unsafe { kiln_world_get_transforms(w, ptr::null(), 0, ptr::null_mut(), 0, ptr::null_mut(), 0) });

    // Re-entrant calls from a debug-draw callback are refused, not deadlocked.
    let mut inner = KILN_OK;
    let mut draw = kiln_default_debug_draw();
    draw.draw_shape = Some(reenter);
    draw.user_context = ptr::addr_of_mut!(inner).cast();
    ok(unsafe { kiln_world_debug_draw(w, &draw) });
    assert_eq!(inner, KILN_ERROR_INVALID_STATE);
    draw.struct_size = 3;
    assert_eq!(unsafe { kiln_world_debug_draw(w, &draw) }, KILN_ERROR_STRUCT_SIZE);

    // Terrain lending: one world at a time, no destroy while lent, back on world destroy.
    let terrain = hills(16);
    ok(kiln_world_set_terrain(w, terrain));
    assert_eq!(kiln_world_set_terrain(other, terrain), KILN_ERROR_INVALID_STATE);
    assert_eq!(kiln_terrain_destroy(terrain), KILN_ERROR_INVALID_STATE);
    let mut material = 0;
    ok(unsafe { kiln_terrain_get_voxel(terrain, KilnInt3 { x: 3, y: 0, z: 3 }, &mut material) });
    assert_ne!(material, KILN_MATERIAL_AIR, "queries reach the lent terrain");
    ok(kiln_world_set_terrain(w, KilnTerrainId::default()));
    ok(kiln_world_set_terrain(other, terrain));
    ok(kiln_world_destroy(other));
    assert!(!kiln_body_is_valid(foreign), "bodies die with their world");
    assert_eq!(kiln_body_wake(foreign), KILN_ERROR_INVALID_HANDLE);
    ok(unsafe { kiln_terrain_get_voxel(terrain, KilnInt3 { x: 3, y: 0, z: 3 }, &mut material) });
    ok(kiln_terrain_destroy(terrain));

    // Stale handles.
    ok(kiln_body_destroy(b));
    assert!(!kiln_body_is_valid(b));
    assert_eq!(kiln_body_destroy(b), KILN_ERROR_INVALID_HANDLE);
    assert_eq!(kiln_body_apply_force(b, v3(0.0, 1.0, 0.0)), KILN_ERROR_INVALID_HANDLE);
    assert!(last_error().contains("stale"), "{}", last_error());
    let mut t = kiln_transform_identity();
    assert_eq!(unsafe { kiln_body_get_transform(KilnBodyId::default(), &mut t) }, KILN_ERROR_INVALID_HANDLE);
    ok(kiln_world_destroy(w));
    assert_eq!(kiln_world_destroy(w), KILN_ERROR_INVALID_HANDLE);
    assert_eq!(kiln_world_step(w, KilnRuntimeId::default(), 0.01), KILN_ERROR_INVALID_HANDLE);
    ok(kiln_shape_destroy(cube));
}

fn read_one(b: KilnBodyId) -> KilnTransform {
    let mut t = kiln_transform_identity();
    ok(unsafe { kiln_body_get_transform(b, &mut t) });
    t
}

#[test]
fn kinematic_targets_user_data_and_motion_types() {
    let w = world();
    let mut def = kiln_default_body_def();
    def.motion_type = KILN_MOTION_KINEMATIC;
    let mut tag = 42u32;
    def.user_data = ptr::addr_of_mut!(tag).cast();
    let mut k = KilnBodyId::default();
    ok(unsafe { kiln_body_create(w, &def, &mut k) });
    let mut data = ptr::null_mut();
    ok(unsafe { kiln_body_get_user_data(k, &mut data) });
    assert_eq!(data, ptr::addr_of_mut!(tag).cast::<c_void>());
    ok(kiln_body_set_user_data(k, ptr::null_mut()));
    ok(unsafe { kiln_body_get_user_data(k, &mut data) });
    assert!(data.is_null());
    let mut motion = 9;
    ok(unsafe { kiln_body_get_motion_type(k, &mut motion) });
    assert_eq!(motion, KILN_MOTION_KINEMATIC);
    let mut mass = -1.0;
    ok(unsafe { kiln_body_get_mass(k, &mut mass) });
    assert_eq!(mass, 0.0);
    for n in 1..=60 {
        let target = at(n as f32 * 0.05, 1.0, 0.0);
        ok(unsafe { kiln_body_set_target_transform(k, &target, 1.0 / 60.0) });
        ok(kiln_world_step(w, KilnRuntimeId::default(), 1.0 / 60.0));
        let now = read_one(k);
        assert!((now.position.x - target.position.x).abs() < 1e-4 && (now.position.y - 1.0).abs() < 1e-4);
    }
    let mut cube = KilnShapeId::default();
    ok(unsafe { kiln_shape_create_box(v3(0.5, 0.5, 0.5), &mut cube) });
    let d = body(w, cube, at(0.0, 10.0, 0.0));
    ok(unsafe { kiln_body_get_mass(d, &mut mass) });
    assert!((mass - 1000.0).abs() < 1e-2, "a 1 m cube of density 1000: {mass}");
    ok(kiln_world_destroy(w));
    ok(kiln_shape_destroy(cube));
}

/// Forces, torques, impulses, velocities, teleports and the sleep switch through the
/// C API do what they say, and each wakes a sleeping body.
#[test]
fn forces_impulses_velocities_and_teleports() {
    let mut def = kiln_default_world_def();
    def.gravity = v3(0.0, 0.0, 0.0);
    let mut w = KilnWorldId::default();
    ok(unsafe { kiln_world_create(&def, &mut w) });
    let mut cube = KilnShapeId::default();
    ok(unsafe { kiln_shape_create_box(v3(0.5, 0.5, 0.5), &mut cube) });
    let b = body(w, cube, at(0.0, 0.0, 0.0)); // 1000 kg
    let dt = 1.0 / 60.0;
    let velocity = |b: KilnBodyId| {
        let (mut v, mut a) = (v3(0.0, 0.0, 0.0), v3(0.0, 0.0, 0.0));
        ok(unsafe { kiln_body_get_velocity(b, &mut v, &mut a) });
        (v, a)
    };
    let awake = |b: KilnBodyId| {
        let mut x = false;
        ok(unsafe { kiln_body_is_awake(b, &mut x) });
        x
    };
    // 1000 N on 1000 kg for one step: 1 m/s² × dt.
    ok(kiln_body_apply_force(b, v3(1000.0, 0.0, 0.0)));
    ok(kiln_world_step(w, KilnRuntimeId::default(), dt));
    assert!((velocity(b).0.x - dt).abs() < 1e-6, "{:?}", velocity(b));
    // An impulse through the centre: 1000 N s on 1000 kg adds 1 m/s, no spin.
    ok(kiln_body_apply_impulse(b, v3(0.0, 1000.0, 0.0), read_one(b).position));
    let (v, a) = velocity(b);
    assert!((v.y - 1.0).abs() < 1e-5 && a == v3(0.0, 0.0, 0.0), "{v:?} {a:?}");
    ok(kiln_body_apply_torque(b, v3(0.0, 0.0, 1000.0)));
    ok(kiln_world_step(w, KilnRuntimeId::default(), dt));
    assert!(velocity(b).1.z > 0.0, "the torque spins it about z");
    // Set the velocity, stop it, let it sleep; each call wakes it again.
    ok(kiln_body_set_velocity(b, v3(0.0, 0.0, 0.0), v3(0.0, 0.0, 0.0)));
    for _ in 0..60 {
        ok(kiln_world_step(w, KilnRuntimeId::default(), dt));
    }
    assert!(!awake(b));
    ok(kiln_body_set_velocity(b, v3(2.0, 0.0, 0.0), v3(0.0, 0.0, 0.0)));
    assert!(awake(b) && velocity(b).0 == v3(2.0, 0.0, 0.0));
    ok(kiln_body_set_velocity(b, v3(0.0, 0.0, 0.0), v3(0.0, 0.0, 0.0)));
    for _ in 0..60 {
        ok(kiln_world_step(w, KilnRuntimeId::default(), dt));
    }
    assert!(!awake(b));
    let target = at(5.0, 6.0, 7.0);
    ok(unsafe { kiln_body_set_transform(b, &target) });
    assert!(awake(b));
    assert_eq!(read_one(b).position, target.position);
    ok(kiln_world_set_sleep_enabled(w, false));
    for _ in 0..120 {
        ok(kiln_world_step(w, KilnRuntimeId::default(), dt));
    }
    assert!(awake(b), "sleep is off");
    ok(kiln_world_set_sleep_enabled(w, true));
    for _ in 0..60 {
        ok(kiln_world_step(w, KilnRuntimeId::default(), dt));
    }
    assert!(!awake(b));
    ok(kiln_body_wake(b));
    assert!(awake(b));
    ok(kiln_world_destroy(w));
    ok(kiln_shape_destroy(cube));
}
