//! Shapes, pairwise queries and the character controller through the C ABI: analytic
//! answers, and every bad input refused with a status and a message, changing
//! nothing. `samples-c/character.c` and `samples-c/tests/bad_input.c` check the same
//! from C.
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

fn v3(x: f32, y: f32, z: f32) -> KilnVec3 {
    KilnVec3 { x, y, z }
}

fn at(x: f32, y: f32, z: f32) -> KilnTransform {
    KilnTransform { position: v3(x, y, z), ..kiln_transform_identity() }
}

fn sphere(r: f32) -> KilnShapeId {
    let mut id = KilnShapeId::default();
    assert_eq!(unsafe { kiln_shape_create_sphere(v3(0.0, 0.0, 0.0), r, &mut id) }, KILN_OK, "{}", last_error());
    id
}

fn cube(half: f32) -> KilnShapeId {
    let mut id = KilnShapeId::default();
    assert_eq!(unsafe { kiln_shape_create_box(v3(half, half, half), &mut id) }, KILN_OK, "{}", last_error());
    id
}

fn close(a: KilnVec3, b: KilnVec3, tolerance: f32) -> bool {
    (a.x - b.x).abs() <= tolerance && (a.y - b.y).abs() <= tolerance && (a.z - b.z).abs() <= tolerance
}

#[test]
fn shape_creation_refuses_bad_input_and_leaves_the_output_alone() {
    let mut id = KilnShapeId::default();
    let o = v3(0.0, 0.0, 0.0);
    for r in [0.0, -1.0, f32::NAN, f32::INFINITY] {
        assert_eq!(unsafe { kiln_shape_create_sphere(o, r, &mut id) }, KILN_ERROR_INVALID_ARGUMENT);
        assert!(last_error().contains("kiln_shape_create_sphere: shape refused"), "{}", last_error());
        assert_eq!(unsafe { kiln_shape_create_capsule(o, v3(0.0, 1.0, 0.0), r, &mut id) }, KILN_ERROR_INVALID_ARGUMENT);
        assert_eq!(unsafe { kiln_shape_create_box(v3(1.0, r, 1.0), &mut id) }, KILN_ERROR_INVALID_ARGUMENT);
    }
    assert_eq!(unsafe { kiln_shape_create_sphere(v3(f32::NAN, 0.0, 0.0), 1.0, &mut id) }, KILN_ERROR_INVALID_ARGUMENT);
    assert_eq!(unsafe { kiln_shape_create_sphere(o, 1.0, ptr::null_mut()) }, KILN_ERROR_NULL_POINTER);
    // Hulls: too few points, all in one plane, NULL with a count, too many.
    let flat = [v3(0.0, 0.0, 0.0), v3(1.0, 0.0, 0.0), v3(0.0, 0.0, 1.0), v3(1.0, 0.0, 1.0)];
    assert_eq!(unsafe { kiln_shape_create_hull(flat.as_ptr(), 3, &mut id) }, KILN_ERROR_INVALID_ARGUMENT);
    assert_eq!(unsafe { kiln_shape_create_hull(flat.as_ptr(), 4, &mut id) }, KILN_ERROR_INVALID_ARGUMENT);
    assert!(last_error().contains("do not span a volume"), "{}", last_error());
    assert_eq!(unsafe { kiln_shape_create_hull(ptr::null(), 8, &mut id) }, KILN_ERROR_NULL_POINTER);
    assert_eq!(unsafe { kiln_shape_create_hull(ptr::null(), 0, &mut id) }, KILN_ERROR_INVALID_ARGUMENT);
    assert_eq!(unsafe { kiln_shape_create_hull(flat.as_ptr(), u32::MAX, &mut id) }, KILN_ERROR_INVALID_ARGUMENT);
    let nan = [v3(0.0, 0.0, 0.0), v3(1.0, 0.0, 0.0), v3(0.0, 1.0, 0.0), v3(0.0, 0.0, f32::INFINITY)];
    assert_eq!(unsafe { kiln_shape_create_hull(nan.as_ptr(), 4, &mut id) }, KILN_ERROR_INVALID_ARGUMENT);
    // Triangles without area.
    assert_eq!(unsafe { kiln_shape_create_triangle(o, o, v3(1.0, 0.0, 0.0), &mut id) }, KILN_ERROR_INVALID_ARGUMENT);
    // Compounds: no parts, a triangle part, a stale part, a bad pose.
    let mut tri = KilnShapeId::default();
    assert_eq!(unsafe { kiln_shape_create_triangle(o, v3(0.0, 0.0, 1.0), v3(1.0, 0.0, 0.0), &mut tri) }, KILN_OK);
    let ball = sphere(0.5);
    assert_eq!(unsafe { kiln_shape_create_compound(ptr::null(), 0, &mut id) }, KILN_ERROR_INVALID_ARGUMENT);
    assert_eq!(unsafe { kiln_shape_create_compound(ptr::null(), u32::MAX, &mut id) }, KILN_ERROR_INVALID_ARGUMENT);
    assert!(last_error().contains("KILN_MAX_COMPOUND_PARTS"), "{}", last_error());
    let part = |shape, pose| KilnCompoundPart { shape, pose };
    let with_tri = [part(ball, at(0.0, 0.0, 0.0)), part(tri, at(1.0, 0.0, 0.0))];
    assert_eq!(unsafe { kiln_shape_create_compound(with_tri.as_ptr(), 2, &mut id) }, KILN_ERROR_INVALID_ARGUMENT);
    let mut bad_pose = at(0.0, 0.0, 0.0);
    bad_pose.rotation.w = 0.0;
    let parts = [part(ball, bad_pose)];
    assert_eq!(unsafe { kiln_shape_create_compound(parts.as_ptr(), 1, &mut id) }, KILN_ERROR_INVALID_ARGUMENT);
    assert!(last_error().contains("parts[0].pose"), "{}", last_error());
    assert_eq!(kiln_shape_destroy(tri), KILN_OK);
    let stale = [part(ball, at(0.0, 0.0, 0.0)), part(tri, at(1.0, 0.0, 0.0))];
    assert_eq!(unsafe { kiln_shape_create_compound(stale.as_ptr(), 2, &mut id) }, KILN_ERROR_INVALID_HANDLE);
    assert_eq!(id, KilnShapeId::default(), "the out-parameter stays untouched");
    // A compound copies its parts: destroying one afterwards leaves it whole.
    let two = [part(ball, at(-2.0, 0.0, 0.0)), part(ball, at(2.0, 0.0, 0.0))];
    assert_eq!(unsafe { kiln_shape_create_compound(two.as_ptr(), 2, &mut id) }, KILN_OK);
    assert_eq!(kiln_shape_destroy(ball), KILN_OK);
    assert_eq!(kiln_shape_destroy(ball), KILN_ERROR_INVALID_HANDLE);
    assert!(last_error().contains("shape handle"), "{}", last_error());
    assert!(!kiln_shape_is_valid(ball) && kiln_shape_is_valid(id));
    let mut aabb = KilnAabb::default();
    assert_eq!(unsafe { kiln_shape_get_aabb(id, &at(0.0, 1.0, 0.0), &mut aabb) }, KILN_OK);
    assert!(close(aabb.min, v3(-2.5, 0.5, -0.5), 1e-5) && close(aabb.max, v3(2.5, 1.5, 0.5), 1e-5), "{aabb:?}");
    assert_eq!(kiln_shape_destroy(id), KILN_OK);
}

#[test]
fn bounds_and_mass_of_a_box() {
    let b = cube(0.5);
    let mut mass = KilnMassProperties::default();
    assert_eq!(unsafe { kiln_shape_get_mass(b, 1000.0, &mut mass) }, KILN_OK);
    // 1 m³ of water: 1000 kg; inertia m (1 + 1) / 12 on each axis.
    assert!((mass.mass - 1000.0).abs() < 1e-2);
    assert!((mass.inertia[0] - 1000.0 / 6.0).abs() < 1e-2 && mass.inertia[1] == 0.0, "{mass:?}");
    for bad in [0.0, -1.0, f32::NAN, f32::INFINITY] {
        assert_eq!(unsafe { kiln_shape_get_mass(b, bad, &mut mass) }, KILN_ERROR_INVALID_ARGUMENT);
    }
    assert_eq!(unsafe { kiln_shape_get_mass(b, 1.0, ptr::null_mut()) }, KILN_ERROR_NULL_POINTER);
    // Turned 45° about y: the box's bounds grow to √2/2 on x and z.
    let s = std::f32::consts::FRAC_PI_8.sin();
    let c = std::f32::consts::FRAC_PI_8.cos();
    let turned = KilnTransform { position: v3(0.0, 0.0, 0.0), rotation: KilnQuat { x: 0.0, y: s, z: 0.0, w: c } };
    let mut aabb = KilnAabb::default();
    assert_eq!(unsafe { kiln_shape_get_aabb(b, &turned, &mut aabb) }, KILN_OK);
    assert!((aabb.max.x - std::f32::consts::FRAC_1_SQRT_2).abs() < 1e-5 && (aabb.max.y - 0.5).abs() < 1e-6);
    // Bad transforms: NaN position, zero or non-unit quaternion, NULL.
    let mut nan = at(f32::NAN, 0.0, 0.0);
    assert_eq!(unsafe { kiln_shape_get_aabb(b, &nan, &mut aabb) }, KILN_ERROR_INVALID_ARGUMENT);
    nan = at(0.0, 0.0, 0.0);
    nan.rotation.w = 2.0;
    assert_eq!(unsafe { kiln_shape_get_aabb(b, &nan, &mut aabb) }, KILN_ERROR_INVALID_ARGUMENT);
    assert!(last_error().contains("unit quaternion"), "{}", last_error());
    assert_eq!(unsafe { kiln_shape_get_aabb(b, ptr::null(), &mut aabb) }, KILN_ERROR_NULL_POINTER);
    assert_eq!(kiln_shape_destroy(b), KILN_OK);
}

#[test]
fn distance_contact_and_time_of_impact() {
    let (ball, b) = (sphere(0.5), cube(0.5));
    // A sphere 3 m above the box's centre: 2 m gap along +y.
    let mut d = KilnDistanceResult::default();
    assert_eq!(unsafe { kiln_shape_distance(b, &at(0.0, 0.0, 0.0), ball, &at(0.0, 3.0, 0.0), &mut d) }, KILN_OK);
    assert!((d.distance - 2.0).abs() < 1e-5 && !d.overlap, "{d:?}");
    assert!(close(d.normal, v3(0.0, 1.0, 0.0), 1e-5) && close(d.point_a, v3(0.0, 0.5, 0.0), 1e-5));
    assert!(close(d.point_b, v3(0.0, 2.5, 0.0), 1e-5));
    // A box resting 1 cm deep on another: one manifold of four points at -0.01.
    let top = at(0.1, 0.99, -0.2);
    let mut count = 0u32;
    assert_eq!(
        unsafe { kiln_shape_contact(b, &at(0.0, 0.0, 0.0), b, &top, 0.02, ptr::null_mut(), 0, &mut count) },
        KILN_OK
    );
    assert_eq!(count, 1, "sizing call");
    let mut m = [KilnManifold::default(); 2];
    assert_eq!(
        unsafe { kiln_shape_contact(b, &at(0.0, 0.0, 0.0), b, &top, 0.02, m.as_mut_ptr(), 2, &mut count) },
        KILN_OK
    );
    assert_eq!((count, m[0].point_count), (1, 4));
    assert!(close(m[0].normal, v3(0.0, 1.0, 0.0), 1e-5));
    for p in &m[0].points {
        assert!((p.separation + 0.01).abs() < 1e-5, "{p:?}");
    }
    let ids: Vec<u32> = m[0].points.iter().map(|p| p.id).collect();
    assert!((1..4).all(|i| !ids[..i].contains(&ids[i])), "distinct feature ids {ids:?}");
    // Apart by more than the margin: no manifold.
    assert_eq!(
        unsafe {
            kiln_shape_contact(b, &at(0.0, 0.0, 0.0), b, &at(0.0, 1.1, 0.0), 0.05, m.as_mut_ptr(), 2, &mut count)
        },
        KILN_OK
    );
    assert_eq!(count, 0);
    for margin in [-0.1, f32::NAN, f32::INFINITY] {
        assert_eq!(
            unsafe { kiln_shape_contact(b, &at(0.0, 0.0, 0.0), b, &top, margin, m.as_mut_ptr(), 2, &mut count) },
            KILN_ERROR_INVALID_ARGUMENT
        );
    }
    assert_eq!(
        unsafe { kiln_shape_contact(b, &at(0.0, 0.0, 0.0), b, &top, 0.0, ptr::null_mut(), 2, &mut count) },
        KILN_ERROR_NULL_POINTER
    );
    // Dropping the sphere 6 m from 3 m above: it touches the box at t = 1/3.
    let sweep = KilnSweep { start: at(0.0, 3.0, 0.0), end: at(0.0, -3.0, 0.0), local_center: v3(0.0, 0.0, 0.0) };
    let still = KilnSweep { start: at(0.0, 0.0, 0.0), end: at(0.0, 0.0, 0.0), local_center: v3(0.0, 0.0, 0.0) };
    let mut toi = KilnToiResult::default();
    assert_eq!(unsafe { kiln_shape_time_of_impact(ball, &sweep, b, &still, 1.0, 0.0, &mut toi) }, KILN_OK);
    assert_eq!(toi.state, KILN_TOI_HIT, "{toi:?}");
    assert!((toi.t - 1.0 / 3.0).abs() < 1e-3 && close(toi.normal, v3(0.0, -1.0, 0.0), 1e-3), "{toi:?}");
    // Stopping 5 cm short.
    assert_eq!(unsafe { kiln_shape_time_of_impact(ball, &sweep, b, &still, 1.0, 0.05, &mut toi) }, KILN_OK);
    assert!(((2.0 - toi.t * 6.0) - 0.05).abs() < 0.02, "{toi:?}");
    // Bad numbers and sweeps.
    for t_max in [-0.1, 1.5, f32::NAN] {
        assert_eq!(
            unsafe { kiln_shape_time_of_impact(ball, &sweep, b, &still, t_max, 0.0, &mut toi) },
            KILN_ERROR_INVALID_ARGUMENT
        );
    }
    for target in [-1.0, f32::NAN, f32::INFINITY] {
        assert_eq!(
            unsafe { kiln_shape_time_of_impact(ball, &sweep, b, &still, 1.0, target, &mut toi) },
            KILN_ERROR_INVALID_ARGUMENT
        );
    }
    let mut bad = sweep;
    bad.local_center.x = f32::INFINITY;
    assert_eq!(
        unsafe { kiln_shape_time_of_impact(ball, &bad, b, &still, 1.0, 0.0, &mut toi) },
        KILN_ERROR_INVALID_ARGUMENT
    );
    bad = sweep;
    bad.end.rotation.x = f32::NAN;
    assert_eq!(
        unsafe { kiln_shape_time_of_impact(ball, &bad, b, &still, 1.0, 0.0, &mut toi) },
        KILN_ERROR_INVALID_ARGUMENT
    );
    assert!(last_error().contains("sweep_a.end"), "{}", last_error());
    assert_eq!(
        unsafe { kiln_shape_time_of_impact(ball, &sweep, b, ptr::null(), 1.0, 0.0, &mut toi) },
        KILN_ERROR_NULL_POINTER
    );
    // Stale shapes.
    assert_eq!(kiln_shape_destroy(ball), KILN_OK);
    assert_eq!(
        unsafe { kiln_shape_distance(b, &at(0.0, 0.0, 0.0), ball, &at(0.0, 3.0, 0.0), &mut d) },
        KILN_ERROR_INVALID_HANDLE
    );
    assert_eq!(
        unsafe { kiln_shape_distance(KilnShapeId::default(), &at(0.0, 0.0, 0.0), b, &at(0.0, 3.0, 0.0), &mut d) },
        KILN_ERROR_INVALID_HANDLE
    );
    assert_eq!(kiln_shape_destroy(b), KILN_OK);
}

#[test]
fn shapes_are_shared_by_concurrent_queries() {
    let (ball, b) = (sphere(0.5), cube(0.5));
    std::thread::scope(|s| {
        for k in 0..4 {
            s.spawn(move || {
                for i in 0..500 {
                    let mut d = KilnDistanceResult::default();
                    let y = 2.0 + (i + k) as f32 * 0.01;
                    let status = unsafe { kiln_shape_distance(b, &at(0.0, 0.0, 0.0), ball, &at(0.0, y, 0.0), &mut d) };
                    assert_eq!(status, KILN_OK, "{}", last_error());
                    assert!((d.distance - (y - 1.0)).abs() < 1e-4);
                }
            });
        }
    });
    assert_eq!(kiln_shape_destroy(ball), KILN_OK);
    assert_eq!(kiln_shape_destroy(b), KILN_OK);
}

fn flat_terrain() -> KilnTerrainId {
    let def = kiln_default_terrain_def();
    let mut t = KilnTerrainId::default();
    assert_eq!(unsafe { kiln_terrain_create(&def, &mut t) }, KILN_OK);
    // Rock below y = 0 over 48 x 48 m, and a 3 m wall across x = 20.
    let (lo, hi) = (KilnInt3 { x: 0, y: -4, z: 0 }, KilnInt3 { x: 47, y: -1, z: 47 });
    assert_eq!(unsafe { kiln_terrain_fill(t, lo, hi, KILN_MATERIAL_ROCK, ptr::null_mut()) }, KILN_OK);
    let (lo, hi) = (KilnInt3 { x: 20, y: 0, z: 0 }, KilnInt3 { x: 21, y: 2, z: 47 });
    assert_eq!(unsafe { kiln_terrain_fill(t, lo, hi, KILN_MATERIAL_ROCK, ptr::null_mut()) }, KILN_OK);
    assert_eq!(unsafe { kiln_terrain_regenerate(t, KilnRuntimeId::default(), ptr::null_mut()) }, KILN_OK);
    t
}

#[test]
fn a_character_walks_on_terrain_and_slides_along_a_wall() {
    let t = flat_terrain();
    let def = kiln_default_character_def();
    let mut c = KilnCharacterId::default();
    // Capsule centre: radius + half the core above the ground, plus a little.
    let start = v3(10.0, def.radius + 0.5 * def.height + 0.01, 10.0);
    assert_eq!(unsafe { kiln_character_create(&def, start, &mut c) }, KILN_OK, "{}", last_error());
    let mut grounded = true;
    assert_eq!(unsafe { kiln_character_is_grounded(c, &mut grounded) }, KILN_OK);
    assert!(!grounded, "not grounded before the first move");
    // Walk diagonally into the wall (+x, +z) with a little gravity each step.
    let mut result = KilnMoveResult::default();
    for _ in 0..200 {
        let step = v3(0.05, -0.02, 0.05);
        let status = unsafe { kiln_character_move(c, step, t, KilnRuntimeId::default(), ptr::null(), 0, &mut result) };
        assert_eq!(status, KILN_OK, "{}", last_error());
    }
    let mut p = KilnVec3::default();
    assert_eq!(unsafe { kiln_character_get_position(c, &mut p) }, KILN_OK);
    // Stopped at the wall (x = 20 minus the radius and skin; the smooth mesher rounds
    // the wall's foot into a fillet), still sliding along z.
    assert!(p.x < 20.0 - def.radius + 1e-3 && p.x > 19.0, "{p:?}");
    assert!(p.z > 19.0, "kept the tangential part of the motion: {p:?}");
    assert!(result.grounded && result.ground_normal.y > 0.9, "{result:?}");
    assert!(close(result.position, p, 0.0));
    let mut n = KilnVec3::default();
    assert_eq!(unsafe { kiln_character_get_contact_normal(c, &mut n) }, KILN_OK);
    assert!(n.x < -0.9, "the wall faces -x: {n:?}");
    assert_eq!(unsafe { kiln_character_is_grounded(c, &mut grounded) }, KILN_OK);
    assert!(grounded);
    let mut last = KilnMoveResult::default();
    assert_eq!(unsafe { kiln_character_get_last_move(c, &mut last) }, KILN_OK);
    assert_eq!(last, result);

    // Bad moves are refused and leave the character where it was.
    let runtime = KilnRuntimeId::default();
    for bad in [v3(f32::NAN, 0.0, 0.0), v3(0.0, f32::INFINITY, 0.0), v3(5000.0, 0.0, 0.0)] {
        assert_eq!(
            unsafe { kiln_character_move(c, bad, t, runtime, ptr::null(), 0, ptr::null_mut()) },
            KILN_ERROR_INVALID_ARGUMENT
        );
    }
    let step = v3(-0.1, 0.0, 0.0);
    assert_eq!(
        unsafe { kiln_character_move(c, step, t, runtime, ptr::null(), 3, ptr::null_mut()) },
        KILN_ERROR_NULL_POINTER
    );
    let gone = cube(1.0);
    assert_eq!(kiln_shape_destroy(gone), KILN_OK);
    let statics = [KilnShapeInstance { shape: gone, transform: at(5.0, 0.0, 5.0) }];
    assert_eq!(
        unsafe { kiln_character_move(c, step, t, runtime, statics.as_ptr(), 1, ptr::null_mut()) },
        KILN_ERROR_INVALID_HANDLE
    );
    let forged = KilnTerrainId { index1: 999, generation: 1 };
    assert_eq!(
        unsafe { kiln_character_move(c, step, forged, runtime, ptr::null(), 0, ptr::null_mut()) },
        KILN_ERROR_INVALID_HANDLE
    );
    let mut after = KilnVec3::default();
    assert_eq!(unsafe { kiln_character_get_position(c, &mut after) }, KILN_OK);
    assert_eq!(after, p, "refused moves change nothing");
    for bad in [v3(f32::NAN, 0.0, 0.0), v3(1e9, 0.0, 0.0)] {
        assert_eq!(kiln_character_set_position(c, bad), KILN_ERROR_INVALID_ARGUMENT);
    }
    assert_eq!(unsafe { kiln_character_get_position(c, ptr::null_mut()) }, KILN_ERROR_NULL_POINTER);
    assert_eq!(unsafe { kiln_character_is_grounded(c, ptr::null_mut()) }, KILN_ERROR_NULL_POINTER);

    // Teleported 0.2 m into the wall's face, the next move pushes it out.
    assert_eq!(kiln_character_set_position(c, v3(19.9, 1.5, 10.0)), KILN_OK);
    assert_eq!(unsafe { kiln_character_move(c, v3(0.0, 0.0, 0.0), t, runtime, ptr::null(), 0, &mut result) }, KILN_OK);
    assert!(result.recovered && result.position.x < 19.701, "{result:?}");

    assert_eq!(kiln_character_destroy(c), KILN_OK);
    assert_eq!(kiln_character_destroy(c), KILN_ERROR_INVALID_HANDLE);
    assert!(last_error().contains("character handle"), "{}", last_error());
    assert!(!kiln_character_is_valid(c));
    assert_eq!(kiln_terrain_destroy(t), KILN_OK);
}

#[test]
fn a_character_on_static_shapes_and_bad_definitions() {
    // A floor of two triangles and a box to climb against, no terrain.
    let mut tris = [KilnShapeId::default(); 2];
    let (a, b, c, d) = (v3(-10.0, 0.0, -10.0), v3(-10.0, 0.0, 10.0), v3(10.0, 0.0, 10.0), v3(10.0, 0.0, -10.0));
    assert_eq!(unsafe { kiln_shape_create_triangle(a, b, c, &mut tris[0]) }, KILN_OK);
    assert_eq!(unsafe { kiln_shape_create_triangle(a, c, d, &mut tris[1]) }, KILN_OK);
    let block = cube(1.0);
    let statics = [
        KilnShapeInstance { shape: tris[0], transform: kiln_transform_identity() },
        KilnShapeInstance { shape: tris[1], transform: kiln_transform_identity() },
        KilnShapeInstance { shape: block, transform: at(3.0, 1.0, 0.0) },
    ];
    let def = kiln_default_character_def();
    let mut ch = KilnCharacterId::default();
    assert_eq!(unsafe { kiln_character_create(&def, v3(0.0, 0.92, 0.0), &mut ch) }, KILN_OK);
    let mut r = KilnMoveResult::default();
    for _ in 0..100 {
        let s = unsafe {
            kiln_character_move(
                ch,
                v3(0.05, -0.02, 0.0),
                KilnTerrainId::default(),
                KilnRuntimeId::default(),
                statics.as_ptr(),
                3,
                &mut r,
            )
        };
        assert_eq!(s, KILN_OK, "{}", last_error());
    }
    // Blocked by the 2 m block (too high to step onto) at x = 2 - radius - skin.
    assert!((r.position.x - (2.0 - def.radius - def.skin)).abs() < 0.01 && r.grounded, "{r:?}");
    let (none, inline) = (KilnTerrainId::default(), KilnRuntimeId::default());
    let s = unsafe { kiln_character_move(ch, v3(0.05, 0.0, 0.0), none, inline, statics.as_ptr(), 3, &mut r) };
    assert_eq!(s, KILN_OK);
    assert!(r.contact_normal.x < -0.99 && r.moved.x.abs() < 1e-3, "pressed against the block's face: {r:?}");

    // Bad definitions.
    let mut id = KilnCharacterId::default();
    let o = v3(0.0, 1.0, 0.0);
    assert_eq!(unsafe { kiln_character_create(ptr::null(), o, &mut id) }, KILN_ERROR_NULL_POINTER);
    assert_eq!(unsafe { kiln_character_create(&def, o, ptr::null_mut()) }, KILN_ERROR_NULL_POINTER);
    let mut bad = def;
    bad.struct_size = 8;
    assert_eq!(unsafe { kiln_character_create(&bad, o, &mut id) }, KILN_ERROR_STRUCT_SIZE);
    for radius in [0.0, -1.0, f32::NAN, 1e6] {
        bad = def;
        bad.radius = radius;
        assert_eq!(unsafe { kiln_character_create(&bad, o, &mut id) }, KILN_ERROR_INVALID_ARGUMENT, "{radius}");
    }
    bad = def;
    bad.up = v3(0.0, 2.0, 0.0);
    assert_eq!(unsafe { kiln_character_create(&bad, o, &mut id) }, KILN_ERROR_INVALID_ARGUMENT);
    bad = def;
    bad.max_iterations = 0;
    assert_eq!(unsafe { kiln_character_create(&bad, o, &mut id) }, KILN_ERROR_INVALID_ARGUMENT);
    bad = def;
    bad.step_height = 1e6;
    assert_eq!(unsafe { kiln_character_create(&bad, o, &mut id) }, KILN_ERROR_INVALID_ARGUMENT);
    bad = def;
    bad.skin = 1.0;
    assert_eq!(unsafe { kiln_character_create(&bad, o, &mut id) }, KILN_ERROR_INVALID_ARGUMENT);
    assert_eq!(unsafe { kiln_character_create(&def, v3(f32::NAN, 0.0, 0.0), &mut id) }, KILN_ERROR_INVALID_ARGUMENT);
    assert_eq!(id, KilnCharacterId::default(), "the out-parameter stays untouched");

    // Too many statics, and a move from the edge of the allowed coordinates.
    let (none, inline) = (KilnTerrainId::default(), KilnRuntimeId::default());
    let zero = v3(0.0, 0.0, 0.0);
    let s = unsafe { kiln_character_move(ch, zero, none, inline, statics.as_ptr(), u32::MAX, ptr::null_mut()) };
    assert_eq!(s, KILN_ERROR_INVALID_ARGUMENT);
    assert!(last_error().contains("KILN_CHARACTER_MAX_STATICS"), "{}", last_error());
    let edge = v3(KILN_CHARACTER_MAX_COORDINATE - 1.0, 0.0, 0.0);
    assert_eq!(kiln_character_set_position(ch, edge), KILN_OK);
    let s = unsafe { kiln_character_move(ch, v3(0.1, 0.0, 0.0), none, inline, ptr::null(), 0, &mut r) };
    assert_eq!(s, KILN_ERROR_INVALID_ARGUMENT);
    assert!(last_error().contains("too far from the origin"), "{}", last_error());
    let mut p = zero;
    assert_eq!(unsafe { kiln_character_get_position(ch, &mut p) }, KILN_OK);
    assert_eq!(p, edge, "the refused move changed nothing");

    assert_eq!(kiln_character_destroy(ch), KILN_OK);
    for s in [tris[0], tris[1], block] {
        assert_eq!(kiln_shape_destroy(s), KILN_OK);
    }
}
