//! Octree editing and picking through the C ABI: results as the Rust API gives them,
//! and every bad input refused with a status and a message, changing nothing.
//!
//! Every line calls an `unsafe extern "C"` entry point with pointers to live locals
//! (or deliberately NULL ones), so per-block SAFETY comments would repeat themselves.
#![allow(clippy::undocumented_unsafe_blocks)]

use std::ffi::CStr;
use std::ptr;

use kiln::*;

fn last_error() -> String {
    // SAFETY: kiln_last_error_message always returns a valid C string.
    unsafe { CStr::from_ptr(kiln_last_error_message()) }.to_string_lossy().into_owned()
}

fn v3(x: f32, y: f32, z: f32) -> KilnVec3 {
    KilnVec3 { x, y, z }
}

fn new_set() -> KilnOctreeSetId {
    let mut set = KilnOctreeSetId::default();
    assert_eq!(unsafe { kiln_octree_set_create(&mut set) }, KILN_OK, "{}", last_error());
    set
}

fn new_octree(set: KilnOctreeSetId, position: KilnVec3, size: f32) -> KilnOctreeId {
    let mut def = kiln_default_octree_def();
    def.position = position;
    def.size = size;
    let mut id = KilnOctreeId::default();
    assert_eq!(unsafe { kiln_octree_create(set, &def, &mut id) }, KILN_OK, "{}", last_error());
    id
}

fn set_cube(set: KilnOctreeSetId, o: KilnOctreeId, path: &[u8], kind: u32) -> KilnStatus {
    unsafe { kiln_octree_set_cube(set, o, path.as_ptr(), path.len() as u32, kind) }
}

fn pick(set: KilnOctreeSetId, origin: KilnVec3, direction: KilnVec3, max_depth: u32) -> KilnOctreePick {
    let mut p = KilnOctreePick::default();
    let ray = KilnRay { origin, direction };
    assert_eq!(unsafe { kiln_octree_pick(set, &ray, f32::INFINITY, max_depth, &mut p) }, KILN_OK, "{}", last_error());
    p
}

#[test]
fn edits_and_picks_report_cube_face_corner_and_edge() {
    let set = new_set();
    let o = new_octree(set, v3(0.0, 0.0, 0.0), 4.0);
    assert_eq!(set_cube(set, o, &[], KILN_CUBE_SOLID), KILN_OK);
    assert_eq!(unsafe { kiln_octree_subdivide(set, o, ptr::null(), 0) }, KILN_OK);
    assert_eq!(set_cube(set, o, &[7], KILN_CUBE_EMPTY), KILN_OK); // the upper corner cube
    let mut kind = 99;
    assert_eq!(unsafe { kiln_octree_get_cube(set, o, [7u8].as_ptr(), 1, &mut kind) }, KILN_OK);
    assert_eq!(kind, KILN_CUBE_EMPTY);
    assert_eq!(unsafe { kiln_octree_get_cube(set, o, ptr::null(), 0, &mut kind) }, KILN_OK);
    assert_eq!(kind, KILN_CUBE_OCTANT);

    // Down onto the missing corner cube: the ray falls into child 5 below it.
    let p = pick(set, v3(3.2, 10.0, 3.5), v3(0.0, -1.0, 0.0), KILN_OCTREE_MAX_DEPTH);
    assert!(p.hit);
    assert_eq!(p.octree, o);
    assert_eq!((p.depth, p.path[0], p.face), (1, 5, KILN_FACE_TOP));
    assert_eq!((p.distance, p.point, p.normal), (8.0, v3(3.2, 2.0, 3.5), v3(0.0, 1.0, 0.0)));
    assert_eq!((p.corner, p.corner_point), (7, v3(4.0, 2.0, 4.0)));
    assert_eq!(p.edge, 11, "top-front edge");
    assert_eq!(p.cube, KilnAabb { min: v3(2.0, 0.0, 2.0), max: v3(4.0, 2.0, 4.0) });
    // Depth 0 grid: the root octant counts as solid.
    let p = pick(set, v3(3.0, 10.0, 3.5), v3(0.0, -1.0, 0.0), 0);
    assert_eq!((p.depth, p.distance), (0, 6.0));
    // A miss is all zero.
    assert_eq!(pick(set, v3(3.0, 10.0, 3.5), v3(0.0, 1.0, 0.0), 16), KilnOctreePick::default());

    // Info, save and load round trip.
    let mut info = KilnOctreeInfo::default();
    assert_eq!(unsafe { kiln_octree_get_info(set, o, &mut info) }, KILN_OK);
    assert_eq!((info.size, info.has_solid, info.cube_count, info.description_bytes), (4.0, true, 9, 3));
    let mut count = 0u32;
    assert_eq!(unsafe { kiln_octree_save(set, o, ptr::null_mut(), 0, &mut count) }, KILN_OK);
    assert_eq!(count, 3);
    let mut bytes = vec![0u8; count as usize];
    assert_eq!(unsafe { kiln_octree_save(set, o, bytes.as_mut_ptr(), count, &mut count) }, KILN_OK);
    assert_eq!(bytes, [0x56, 0x55, 0x00], "octant, seven solid children, then an empty one");
    let copy = new_octree(set, v3(10.0, 0.0, 0.0), 4.0);
    assert_eq!(unsafe { kiln_octree_load(set, copy, bytes.as_ptr(), bytes.len() as u64) }, KILN_OK);
    let p = pick(set, v3(13.0, 10.0, 3.5), v3(0.0, -1.0, 0.0), 16);
    assert_eq!((p.octree, p.path[0], p.distance), (copy, 5, 8.0));

    // Batch on a runtime equals single picks.
    let mut rt = KilnRuntimeId::default();
    let mut def = kiln_default_runtime_def();
    def.thread_count = 2;
    assert_eq!(unsafe { kiln_runtime_create(&def, &mut rt) }, KILN_OK);
    let rays: Vec<KilnRay> = (0..100)
        .map(|i| KilnRay {
            origin: v3(i as f32 * 0.17 - 1.0, 9.0, 1.0 + i as f32 * 0.02),
            direction: v3(0.1, -1.0, 0.05),
        })
        .collect();
    let mut batch = vec![KilnOctreePick::default(); rays.len()];
    assert_eq!(
        unsafe { kiln_octree_pick_batch(set, rt, rays.as_ptr(), 100, f32::INFINITY, 16, batch.as_mut_ptr()) },
        KILN_OK
    );
    for (r, b) in rays.iter().zip(&batch) {
        assert_eq!(*b, pick(set, r.origin, r.direction, 16));
    }
    assert!(batch.iter().filter(|b| b.hit).count() > 40);
    assert_eq!(kiln_runtime_destroy(rt), KILN_OK);
    assert_eq!(kiln_octree_set_destroy(set), KILN_OK);
}

#[test]
fn bad_octree_calls_are_refused_and_change_nothing() {
    let set = new_set();
    let o = new_octree(set, v3(0.0, 0.0, 0.0), 1.0);
    assert_eq!(set_cube(set, o, &[3], KILN_CUBE_SOLID), KILN_OK);
    let saved = {
        let mut b = [0u8; 8];
        let mut n = 0;
        assert_eq!(unsafe { kiln_octree_save(set, o, b.as_mut_ptr(), 8, &mut n) }, KILN_OK);
        b[..n as usize].to_vec()
    };

    // Definitions.
    let mut id = KilnOctreeId::default();
    for (size, position) in [(0.0, 0.0), (-1.0, 0.0), (f32::NAN, 0.0), (1.0, f32::INFINITY), (f32::MAX, f32::MAX)] {
        let mut def = kiln_default_octree_def();
        def.size = size;
        def.position = v3(position, 0.0, 0.0);
        assert_eq!(unsafe { kiln_octree_create(set, &def, &mut id) }, KILN_ERROR_INVALID_ARGUMENT);
        assert!(last_error().contains("size"), "{}", last_error());
    }
    let mut def = kiln_default_octree_def();
    def.struct_size = 4;
    assert_eq!(unsafe { kiln_octree_create(set, &def, &mut id) }, KILN_ERROR_STRUCT_SIZE);
    assert_eq!(unsafe { kiln_octree_create(set, ptr::null(), &mut id) }, KILN_ERROR_NULL_POINTER);
    assert_eq!(id, KilnOctreeId::default(), "out-parameter untouched");

    // Paths and kinds.
    assert_eq!(set_cube(set, o, &[8], KILN_CUBE_SOLID), KILN_ERROR_INVALID_ARGUMENT);
    assert!(last_error().contains("0..=7"), "{}", last_error());
    assert_eq!(set_cube(set, o, &[0; 17], KILN_CUBE_SOLID), KILN_ERROR_INVALID_ARGUMENT);
    assert_eq!(set_cube(set, o, &[0], KILN_CUBE_OCTANT), KILN_ERROR_INVALID_ARGUMENT);
    assert!(last_error().contains("kiln_octree_subdivide"), "{}", last_error());
    assert_eq!(unsafe { kiln_octree_set_cube(set, o, ptr::null(), 2, KILN_CUBE_SOLID) }, KILN_ERROR_NULL_POINTER);
    assert_eq!(unsafe { kiln_octree_subdivide(set, o, [0u8].as_ptr(), 1) }, KILN_ERROR_INVALID_ARGUMENT);
    assert!(last_error().contains("solid"), "{}", last_error());
    let mut kind = 99;
    assert_eq!(unsafe { kiln_octree_get_cube(set, o, ptr::null(), 0, ptr::null_mut()) }, KILN_ERROR_NULL_POINTER);
    assert_eq!(unsafe { kiln_octree_get_cube(set, o, [9u8].as_ptr(), 1, &mut kind) }, KILN_ERROR_INVALID_ARGUMENT);
    assert_eq!(kind, 99);

    // Descriptions: truncated, code 3, trailing data, NULL.
    for bad in [&[0b10u8][..], &[0b11], &[0b0100], &[1, 0]] {
        assert_eq!(unsafe { kiln_octree_load(set, o, bad.as_ptr(), bad.len() as u64) }, KILN_ERROR_INVALID_ARGUMENT);
        assert!(last_error().contains("description"), "{}", last_error());
    }
    assert_eq!(unsafe { kiln_octree_load(set, o, ptr::null(), 0) }, KILN_ERROR_INVALID_ARGUMENT, "empty is truncated");
    assert_eq!(unsafe { kiln_octree_load(set, o, ptr::null(), 5) }, KILN_ERROR_NULL_POINTER);
    let mut n = 0;
    assert_eq!(unsafe { kiln_octree_save(set, o, ptr::null_mut(), 4, &mut n) }, KILN_ERROR_NULL_POINTER);
    assert_eq!(unsafe { kiln_octree_save(set, o, ptr::null_mut(), 0, ptr::null_mut()) }, KILN_ERROR_NULL_POINTER);

    // Rays and pick arguments.
    let good = KilnRay { origin: v3(0.75, 5.0, 0.25), direction: v3(0.0, -1.0, 0.0) };
    assert!(pick(set, good.origin, good.direction, 16).hit);
    let mut p = KilnOctreePick { distance: -7.0, ..Default::default() };
    for (ray, max, depth, what) in [
        (KilnRay { origin: v3(f32::NAN, 0.0, 0.0), ..good }, 1.0, 16, "origin"),
        (KilnRay { direction: v3(0.0, 0.0, 0.0), ..good }, 1.0, 16, "direction"),
        (KilnRay { direction: v3(0.0, f32::INFINITY, 0.0), ..good }, 1.0, 16, "direction"),
        (good, f32::NAN, 16, "max_distance"),
        (good, -1.0, 16, "max_distance"),
        (good, 1.0, 17, "max_depth"),
    ] {
        assert_eq!(unsafe { kiln_octree_pick(set, &ray, max, depth, &mut p) }, KILN_ERROR_INVALID_ARGUMENT);
        assert!(last_error().contains(what), "{}", last_error());
        assert_eq!(p.distance, -7.0);
    }
    assert_eq!(unsafe { kiln_octree_pick(set, ptr::null(), 1.0, 16, &mut p) }, KILN_ERROR_NULL_POINTER);
    assert_eq!(unsafe { kiln_octree_pick(set, &good, 1.0, 16, ptr::null_mut()) }, KILN_ERROR_NULL_POINTER);
    let mut rays = [good; 8];
    rays[5].direction = v3(0.0, 0.0, 0.0);
    let mut out = [KilnOctreePick::default(); 8];
    let null_rt = KilnRuntimeId::default();
    assert_eq!(
        unsafe { kiln_octree_pick_batch(set, null_rt, rays.as_ptr(), 8, 10.0, 16, out.as_mut_ptr()) },
        KILN_ERROR_INVALID_ARGUMENT
    );
    assert!(last_error().contains("rays[5]"), "{}", last_error());
    assert!(out.iter().all(|p| !p.hit), "nothing written");
    assert_eq!(unsafe { kiln_octree_pick_batch(set, null_rt, ptr::null(), 0, 1.0, 16, ptr::null_mut()) }, KILN_OK);
    assert_eq!(
        unsafe { kiln_octree_pick_batch(set, null_rt, ptr::null(), 3, 1.0, 16, out.as_mut_ptr()) },
        KILN_ERROR_NULL_POINTER
    );

    // Nothing above changed the octree.
    let mut b = [0u8; 8];
    assert_eq!(unsafe { kiln_octree_save(set, o, b.as_mut_ptr(), 8, &mut n) }, KILN_OK);
    assert_eq!(&b[..n as usize], &saved[..]);

    // Stale, forged and foreign handles.
    let other = new_set();
    let foreign = new_octree(other, v3(0.0, 0.0, 0.0), 1.0);
    assert_eq!(set_cube(set, foreign, &[], KILN_CUBE_SOLID), KILN_ERROR_INVALID_HANDLE, "an id of another set");
    assert!(last_error().contains("another set"), "{}", last_error());
    assert_eq!(set_cube(set, KilnOctreeId::default(), &[], KILN_CUBE_SOLID), KILN_ERROR_INVALID_HANDLE);
    assert_eq!(set_cube(set, KilnOctreeId { index1: 99, ..o }, &[], KILN_CUBE_SOLID), KILN_ERROR_INVALID_HANDLE);
    assert_eq!(kiln_octree_destroy(set, o), KILN_OK);
    assert_eq!(kiln_octree_destroy(set, o), KILN_ERROR_INVALID_HANDLE, "destroyed twice");
    assert_eq!(set_cube(set, o, &[], KILN_CUBE_SOLID), KILN_ERROR_INVALID_HANDLE, "use after destroy");
    assert!(!pick(set, good.origin, good.direction, 16).hit, "the destroyed octree is gone from picks");
    assert_eq!(kiln_octree_set_destroy(other), KILN_OK);
    assert!(!kiln_octree_set_is_valid(other));
    assert_eq!(set_cube(other, foreign, &[], KILN_CUBE_SOLID), KILN_ERROR_INVALID_HANDLE, "set destroyed");
    assert_eq!(unsafe { kiln_octree_pick(other, &good, 1.0, 16, &mut p) }, KILN_ERROR_INVALID_HANDLE);
    assert_eq!(kiln_octree_set_destroy(set), KILN_OK);
    assert_eq!(kiln_octree_set_destroy(set), KILN_ERROR_INVALID_HANDLE);
    assert_eq!(unsafe { kiln_octree_set_create(ptr::null_mut()) }, KILN_ERROR_NULL_POINTER);
}
