//! `kiln_octree_load` on arbitrary bytes. A refused description leaves the octree as
//! it was; an accepted one saves to a canonical form that loads back to itself and
//! picks the same cubes.
#![no_main]

use kiln_ffi::*;
use libfuzzer_sys::fuzz_target;

fn save(set: KilnOctreeSetId, octree: KilnOctreeId) -> Vec<u8> {
    let mut count = 0u32;
    // SAFETY: a null buffer with capacity 0 sizes the description; `count` is writable.
    assert_eq!(unsafe { kiln_octree_save(set, octree, std::ptr::null_mut(), 0, &mut count) }, KILN_OK);
    let mut bytes = vec![0u8; count as usize];
    // SAFETY: `bytes` is writable for `count` bytes.
    assert_eq!(unsafe { kiln_octree_save(set, octree, bytes.as_mut_ptr(), count, &mut count) }, KILN_OK);
    bytes
}

fn picks(set: KilnOctreeSetId) -> Vec<(bool, u32)> {
    let mut out = Vec::new();
    for i in 0..64 {
        let (x, z) = ((i % 8) as f32 / 8.0 + 0.03, (i / 8) as f32 / 8.0 + 0.07);
        let ray = KilnRay { origin: KilnVec3 { x, y: 2.0, z }, direction: KilnVec3 { x: 0.01, y: -1.0, z: 0.02 } };
        let mut hit = KilnOctreePick::default();
        // SAFETY: `ray` is readable and `hit` writable.
        assert_eq!(unsafe { kiln_octree_pick(set, &ray, 10.0, KILN_OCTREE_MAX_DEPTH, &mut hit) }, KILN_OK);
        out.push((hit.hit, hit.distance.to_bits()));
    }
    out
}

fuzz_target!(|data: &[u8]| {
    let mut set = KilnOctreeSetId::default();
    // SAFETY: `set` is writable.
    assert_eq!(unsafe { kiln_octree_set_create(&mut set) }, KILN_OK);
    let mut octree = KilnOctreeId::default();
    let def = kiln_default_octree_def();
    // SAFETY: `def` is readable and `octree` writable.
    assert_eq!(unsafe { kiln_octree_create(set, &def, &mut octree) }, KILN_OK);
    // A starting shape, so "unchanged" means something: a solid cube split once.
    let start = [0x56u8, 0x55, 0x01];
    // SAFETY: `start` is readable for its length.
    assert_eq!(unsafe { kiln_octree_load(set, octree, start.as_ptr(), start.len() as u64) }, KILN_OK);
    let before = save(set, octree);
    // SAFETY: `data` is readable for its length.
    let status = unsafe { kiln_octree_load(set, octree, data.as_ptr(), data.len() as u64) };
    if status == KILN_OK {
        let canonical = save(set, octree);
        let seen = picks(set);
        // SAFETY: `canonical` is readable for its length.
        assert_eq!(unsafe { kiln_octree_load(set, octree, canonical.as_ptr(), canonical.len() as u64) }, KILN_OK);
        assert_eq!(save(set, octree), canonical, "the saved form is not a fixed point");
        assert_eq!(picks(set), seen, "the saved form picks differently");
    } else {
        assert_eq!(status, KILN_ERROR_INVALID_ARGUMENT);
        assert_eq!(save(set, octree), before, "a refused description changed the octree");
    }
    assert_eq!(kiln_octree_set_destroy(set), KILN_OK);
});
