use glam::Vec3;

use super::*;
use crate::jobs::ThreadPool;
use crate::spatial::tests::Rng;

fn unit_solid() -> Octree {
    let mut o = Octree::new(Vec3::ZERO, 1.0).unwrap();
    o.set_cube(&[], true).unwrap();
    o
}

fn ray(origin: [f32; 3], dir: [f32; 3]) -> PickRay {
    PickRay::new(Vec3::from_array(origin), Vec3::from_array(dir)).unwrap()
}

/// A random octree: `edits` random set/subdivide operations down to `depth`.
fn random_octree(rng: &mut Rng, position: Vec3, size: f32, depth: usize, edits: usize) -> Octree {
    let mut o = Octree::new(position, size).unwrap();
    for _ in 0..edits {
        let len = rng.below(depth + 1);
        let path: Vec<u8> = (0..len).map(|_| rng.below(8) as u8).collect();
        if rng.below(5) == 0 {
            let _ = o.subdivide(&path); // refused unless solid: fine either way
        } else {
            o.set_cube(&path, rng.below(3) != 0).unwrap();
        }
    }
    o.validate();
    o
}

/// Sets of 1-6 octrees, overlapping and nested; half on an integer grid with
/// power-of-two sizes so rays can run exactly along faces, edges and corners.
fn random_set(rng: &mut Rng) -> (OctreeSet, bool) {
    let mut set = OctreeSet::new();
    let grid = rng.below(2) == 0;
    let count = 1 + rng.below(6);
    for i in 0..count {
        let (position, size) = if grid {
            (
                Vec3::new(rng.below(9) as f32 - 4.0, rng.below(9) as f32 - 4.0, rng.below(9) as f32 - 4.0),
                (1 << rng.below(4)) as f32,
            )
        } else if i > 0 && rng.below(3) == 0 {
            // Nested in the first octree.
            let first = set.get(set.ids().next().unwrap()).unwrap().bounds();
            let size = first.extents().x * rng.range(0.2, 0.7);
            (first.min + rng.vec3(0.0, first.extents().x - size), size)
        } else {
            (rng.vec3(-5.0, 5.0), rng.range(0.5, 6.0))
        };
        let edits = 5 + rng.below(40);
        let depth = 1 + rng.below(5);
        let octree = random_octree(rng, position, size, depth, edits);
        set.insert(octree);
    }
    // Remove and replace one now and then, so slots are reused out of creation order.
    if count > 1 && rng.below(3) == 0 {
        let id = set.ids().next().unwrap();
        let old = set.remove(id).unwrap();
        set.insert(old);
    }
    set.validate();
    (set, grid)
}

fn random_ray(rng: &mut Rng, set: &OctreeSet, grid: bool) -> PickRay {
    const DIRS: [[f32; 3]; 10] = [
        [1.0, 0.0, 0.0],
        [0.0, -1.0, 0.0],
        [0.0, 0.0, 1.0],
        [1.0, 1.0, 0.0],
        [-1.0, 0.0, 1.0],
        [0.0, 1.0, -1.0],
        [1.0, 1.0, 1.0],
        [-1.0, -1.0, 1.0],
        [1.0, -1.0, -1.0],
        [-1.0, 1.0, -1.0],
    ];
    let ids: Vec<OctreeId> = set.ids().collect();
    let octree = set.get(ids[rng.below(ids.len())]).unwrap();
    let mut origin = rng.vec3(-9.0, 9.0);
    if grid {
        // Origin on grid planes of a random octree: along faces, edges, corners.
        for a in 0..3 {
            if rng.below(3) != 0 {
                let depth = rng.below(4) as u32;
                origin[a] = octree.plane(a, rng.below((1 << depth) + 1) as u32, depth);
            }
        }
        if rng.below(2) == 0 {
            // Step back along an axis-aligned or diagonal direction so the ray runs
            // exactly through grid points.
            let dir = Vec3::from_array(DIRS[rng.below(DIRS.len())]);
            return PickRay::new(origin - dir * rng.below(12) as f32, dir).unwrap();
        }
    } else if rng.below(3) == 0 {
        // Start inside the octree (possibly inside a solid cube).
        let b = octree.bounds();
        origin = b.min + rng.vec3(0.0, 1.0) * b.extents();
    }
    let dir = match rng.below(4) {
        0 => Vec3::from_array(DIRS[rng.below(DIRS.len())]),
        1 => {
            let mut d = rng.vec3(-1.0, 1.0);
            d[rng.below(3)] = 0.0;
            d
        }
        _ => (octree.bounds().center() + rng.vec3(-2.0, 2.0)) - origin,
    };
    PickRay::new(origin, dir).unwrap_or_else(|| PickRay::new(origin, Vec3::X).unwrap())
}

#[test]
fn edits_split_collapse_and_keep_bounds() {
    let mut o = Octree::new(Vec3::new(1.0, 2.0, 3.0), 8.0).unwrap();
    assert_eq!(o.cube(&[]), Ok(CubeKind::Empty));
    assert_eq!(o.solid_bounds(), Aabb::EMPTY);
    o.set_cube(&[7, 0], true).unwrap();
    o.validate();
    assert_eq!(o.cube(&[]), Ok(CubeKind::Octant));
    assert_eq!(o.cube(&[7]), Ok(CubeKind::Octant));
    assert_eq!(o.cube(&[7, 0]), Ok(CubeKind::Solid));
    assert_eq!(o.cube(&[7, 1]), Ok(CubeKind::Empty));
    assert_eq!(o.solid_bounds(), Aabb::new(Vec3::new(5.0, 6.0, 7.0), Vec3::new(7.0, 8.0, 9.0)));
    assert_eq!(o.cube_count(), 17);
    // Clearing the only solid cube collapses the empty octants back to one word.
    o.set_cube(&[7, 0], false).unwrap();
    o.validate();
    assert_eq!(o.cube(&[]), Ok(CubeKind::Empty));
    assert_eq!(o.cube_count(), 1);
    assert_eq!(o.solid_bounds(), Aabb::EMPTY);
    // A hole in a solid cube splits it; the rest stays solid.
    o.set_cube(&[], true).unwrap();
    o.set_cube(&[0, 0, 0], false).unwrap();
    o.validate();
    assert_eq!(o.cube(&[0, 0, 1]), Ok(CubeKind::Solid));
    assert_eq!(o.cube(&[5]), Ok(CubeKind::Solid));
    assert_eq!(o.cube(&[5, 3, 3]), Ok(CubeKind::Solid), "inside a solid leaf is solid");
    assert_eq!(o.solid_bounds(), o.bounds());
    // Subdivide keeps the look and makes parts editable.
    o.set_cube(&[], true).unwrap();
    o.subdivide(&[]).unwrap();
    o.subdivide(&[2]).unwrap();
    o.validate();
    assert_eq!(o.cube(&[2, 6]), Ok(CubeKind::Solid));
    assert_eq!(o.cube(&[2]), Ok(CubeKind::Octant));
    assert_eq!(o.subdivide(&[1, 1]), Err(OctreeError::NotSolid), "inside a leaf");
    assert_eq!(o.subdivide(&[2]), Err(OctreeError::NotSolid), "already an octant");
    // Clearing cubes on the bounds' edge shrinks them.
    for c in [1u8, 3, 5, 7] {
        o.set_cube(&[c], false).unwrap();
    }
    o.validate();
    assert_eq!(o.solid_bounds().max.x, 5.0);
}

#[test]
fn bad_edits_are_refused_and_change_nothing() {
    assert_eq!(Octree::new(Vec3::ZERO, 0.0).unwrap_err(), OctreeError::BadBounds);
    assert_eq!(Octree::new(Vec3::ZERO, -1.0).unwrap_err(), OctreeError::BadBounds);
    assert_eq!(Octree::new(Vec3::ZERO, f32::NAN).unwrap_err(), OctreeError::BadBounds);
    assert_eq!(Octree::new(Vec3::new(f32::INFINITY, 0.0, 0.0), 1.0).unwrap_err(), OctreeError::BadBounds);
    assert_eq!(Octree::new(Vec3::splat(f32::MAX), f32::MAX).unwrap_err(), OctreeError::BadBounds);
    let mut o = unit_solid();
    let before = o.to_bytes();
    let deep = [0u8; OCTREE_MAX_DEPTH + 1];
    assert_eq!(o.set_cube(&deep, false), Err(OctreeError::PathTooDeep(OCTREE_MAX_DEPTH + 1)));
    assert_eq!(o.set_cube(&[1, 8], false), Err(OctreeError::BadChildIndex { position: 1, value: 8 }));
    assert_eq!(o.cube(&[9]), Err(OctreeError::BadChildIndex { position: 0, value: 9 }));
    assert_eq!(o.subdivide(&deep[..OCTREE_MAX_DEPTH]), Err(OctreeError::PathTooDeep(OCTREE_MAX_DEPTH + 1)));
    assert_eq!(o.to_bytes(), before);
    o.validate();
    // The deepest level works.
    o.set_cube(&deep[..OCTREE_MAX_DEPTH], false).unwrap();
    o.validate();
    assert_eq!(o.cube(&deep[..OCTREE_MAX_DEPTH]), Ok(CubeKind::Empty));
    assert_eq!(o.cube(&[1]), Ok(CubeKind::Solid));
}

#[test]
fn byte_description_round_trips_and_rejects_bad_input() {
    // The module doc's example: a subdivided solid cube.
    let o = Octree::from_bytes(Vec3::ZERO, 2.0, &[0b01_01_01_10, 0b01_01_01_01, 0b01]).unwrap();
    o.validate();
    assert_eq!(o.cube(&[]), Ok(CubeKind::Octant));
    assert!((0..8).all(|c| o.cube(&[c]) == Ok(CubeKind::Solid)));
    assert_eq!(o.to_bytes(), [0b01_01_01_10, 0b01_01_01_01, 0b01]);
    assert_eq!(Octree::from_bytes(Vec3::ZERO, 1.0, &[0]).unwrap().cube(&[]), Ok(CubeKind::Empty));
    assert_eq!(Octree::from_bytes(Vec3::ZERO, 1.0, &[]).unwrap_err(), OctreeError::Truncated);
    assert_eq!(Octree::from_bytes(Vec3::ZERO, 1.0, &[0b10]).unwrap_err(), OctreeError::Truncated);
    assert_eq!(Octree::from_bytes(Vec3::ZERO, 1.0, &[0b11]).unwrap_err(), OctreeError::BadCode { cube: 0 });
    assert_eq!(Octree::from_bytes(Vec3::ZERO, 1.0, &[0b0100]).unwrap_err(), OctreeError::TrailingData);
    assert_eq!(Octree::from_bytes(Vec3::ZERO, 1.0, &[1, 0]).unwrap_err(), OctreeError::TrailingData);
    assert_eq!(Octree::from_bytes(f32::NAN * Vec3::ONE, 1.0, &[1]).unwrap_err(), OctreeError::BadBounds);
    // Octants nested one level too deep: 17 octant codes, each then 8 children.
    let mut deep_codes = vec![2u8; OCTREE_MAX_DEPTH + 1];
    deep_codes.extend(std::iter::repeat_n(1, 8 * (OCTREE_MAX_DEPTH + 1)));
    let pack = |codes: &[u8]| -> Vec<u8> {
        codes.chunks(4).map(|c| c.iter().enumerate().fold(0u8, |b, (i, &v)| b | v << (2 * i))).collect()
    };
    assert_eq!(Octree::from_bytes(Vec3::ZERO, 1.0, &pack(&deep_codes)).unwrap_err(), OctreeError::TooDeep);
    // An all-empty octant loads as empty.
    let empty_octant = pack(&[2, 0, 0, 0, 0, 0, 0, 0, 0]);
    let o = Octree::from_bytes(Vec3::ZERO, 1.0, &empty_octant).unwrap();
    o.validate();
    assert_eq!(o.cube(&[]), Ok(CubeKind::Empty));
    // Random octrees survive the round trip.
    let mut rng = Rng(5);
    for _ in 0..200 {
        let o = random_octree(&mut rng, Vec3::ZERO, 4.0, 6, 60);
        let bytes = o.to_bytes();
        let back = Octree::from_bytes(Vec3::ZERO, 4.0, &bytes).unwrap();
        back.validate();
        assert_eq!(back.to_bytes(), bytes);
        assert_eq!(back.solid_bounds(), o.solid_bounds());
        assert!(bytes.len() * 4 < o.cube_count() + 4, "two bits per cube");
    }
}

#[test]
fn pick_reports_face_point_corner_and_edge() {
    let mut set = OctreeSet::new();
    let id = set.insert(unit_solid());
    let (hit_id, hit) = set.pick(&ray([-1.0, 0.9, 0.2], [1.0, 0.0, 0.0]), f32::INFINITY, 16).unwrap();
    assert_eq!(hit_id, id);
    assert_eq!((hit.face, hit.distance, hit.point), (FACE_LEFT, 1.0, Vec3::new(0.0, 0.9, 0.2)));
    assert_eq!((hit.corner, hit.corner_point), (2, Vec3::new(0.0, 1.0, 0.0)));
    assert_eq!(hit.edge, 0, "left face's top edge");
    assert_eq!(hit.normal, Vec3::NEG_X);
    // From above, near the front-right corner.
    let hit = set.pick(&ray([0.9, 5.0, 0.8], [0.0, -1.0, 0.0]), f32::INFINITY, 16).unwrap().1;
    assert_eq!((hit.face, hit.corner, hit.edge), (FACE_TOP, 7, 4));
    assert_eq!(hit.point, Vec3::new(0.9, 1.0, 0.8));
    // From the front (+z side, looking down -z), near the bottom edge.
    let hit = set.pick(&ray([0.5, 0.05, 3.0], [0.0, 0.0, -1.0]), f32::INFINITY, 16).unwrap().1;
    assert_eq!((hit.face, hit.edge, hit.distance), (FACE_FRONT, 8, 2.0));
    // Behind the origin, beyond max_t, and beside the cube: no hit.
    assert!(set.pick(&ray([2.0, 0.5, 0.5], [1.0, 0.0, 0.0]), f32::INFINITY, 16).is_none());
    assert!(set.pick(&ray([-1.0, 0.5, 0.5], [1.0, 0.0, 0.0]), 0.5, 16).is_none());
    assert!(set.pick(&ray([-1.0, 1.0, 0.5], [1.0, 0.0, 0.0]), f32::INFINITY, 16).is_none(), "along the top face");
    assert!(set.pick(&ray([-1.0, 0.0, 0.5], [1.0, 0.0, 0.0]), f32::INFINITY, 16).is_some(), "along the bottom face");
    // Paths and depth limit.
    set.edit(id, |o| o.set_cube(&[6, 5], false)).unwrap().unwrap();
    // Cube [6, 5] is cleared: the ray passes it and enters [6, 1] behind it.
    let hit = set.pick(&ray([0.3, 0.6, 5.0], [0.0, 0.0, -1.0]), f32::INFINITY, 16).unwrap().1;
    assert_eq!((hit.cube.depth, &hit.cube.path()[..2], hit.distance), (2, &[6u8, 1][..], 4.25));
    let hit = set.pick(&ray([0.3, 0.6, 5.0], [0.0, 0.0, -1.0]), f32::INFINITY, 1).unwrap().1;
    assert_eq!((hit.cube.depth, hit.cube.path()[0]), (1, 6), "the octant at the grid depth counts as solid");
    assert_eq!(hit.cube_box, Aabb::new(Vec3::new(0.0, 0.5, 0.5), Vec3::new(0.5, 1.0, 1.0)));
}

#[test]
fn rays_starting_inside_solid_look_out_of_it() {
    let mut set = OctreeSet::new();
    let mut o = Octree::new(Vec3::ZERO, 2.0).unwrap();
    o.set_cube(&[0], true).unwrap(); // [0,1)^3
    o.set_cube(&[1], true).unwrap(); // [1,2) x [0,1)^2
    let id = set.insert(o);
    // Inside cube 0 looking +x: cube 1 is entered through its left face at 0.5.
    let (hit_id, hit) = set.pick(&ray([0.5, 0.5, 0.5], [1.0, 0.0, 0.0]), f32::INFINITY, 16).unwrap();
    assert_eq!((hit_id, hit.cube.path()[0], hit.face, hit.distance), (id, 1, FACE_LEFT, 0.5));
    // Inside cube 0 looking -x or up: nothing else to enter.
    assert!(set.pick(&ray([0.5, 0.5, 0.5], [-1.0, 0.0, 0.0]), f32::INFINITY, 16).is_none());
    assert!(set.pick(&ray([0.5, 0.5, 0.5], [0.0, 1.0, 0.0]), f32::INFINITY, 16).is_none());
    // On cube 1's face looking in: entered at distance 0.
    let hit = set.pick(&ray([1.0, 0.5, 0.5], [1.0, 0.0, 0.0]), f32::INFINITY, 16).unwrap().1;
    assert_eq!((hit.distance, hit.face), (0.0, FACE_LEFT));
}

#[test]
fn overlapping_octrees_give_the_closest_hit_and_ties_go_to_the_older() {
    let mut set = OctreeSet::new();
    let far = set.insert(unit_solid()); // [0,1)^3
    let mut near = Octree::new(Vec3::new(-0.5, 0.0, 0.0), 1.0).unwrap();
    near.set_cube(&[0], true).unwrap(); // [-0.5,0) x [0,0.5)^2
    let near = set.insert(near);
    assert_eq!(set.pick(&ray([-2.0, 0.25, 0.25], [1.0, 0.0, 0.0]), f32::INFINITY, 16).unwrap().0, near);
    assert_eq!(set.pick(&ray([-2.0, 0.75, 0.25], [1.0, 0.0, 0.0]), f32::INFINITY, 16).unwrap().0, far);
    // An exact twin of `far`, created later: the tie goes to `far`.
    let twin = set.insert(unit_solid());
    assert_eq!(set.pick(&ray([0.5, 5.0, 0.5], [0.0, -1.0, 0.0]), f32::INFINITY, 16).unwrap().0, far);
    set.remove(far).unwrap();
    assert_eq!(set.pick(&ray([0.5, 5.0, 0.5], [0.0, -1.0, 0.0]), f32::INFINITY, 16).unwrap().0, twin);
    assert!(set.get(far).is_none() && set.edit(far, |_| ()).is_none() && set.remove(far).is_none(), "stale id");
    set.validate();
}

#[test]
fn pick_equals_brute_force_and_the_linear_scan_on_random_sets() {
    let mut rng = Rng(0x0c7);
    let (mut rays, mut hits) = (0, 0);
    for _ in 0..300 {
        let (set, grid) = random_set(&mut rng);
        for _ in 0..100 {
            let r = random_ray(&mut rng, &set, grid);
            let max_t = if rng.below(4) == 0 { rng.range(0.0, 10.0) } else { f32::INFINITY };
            let max_depth = if rng.below(4) == 0 { rng.below(4) as u32 } else { 16 };
            let expected = pick_brute_force(&set, &r, max_t, max_depth);
            assert_eq!(set.pick(&r, max_t, max_depth), expected, "ray {r:?} max_t {max_t} depth {max_depth}");
            assert_eq!(pick_linear_scan(&set, &r, max_t, max_depth), expected, "linear scan, ray {r:?}");
            rays += 1;
            hits += expected.is_some() as usize;
        }
    }
    assert!(hits * 4 > rays, "the test needs hits: {hits} of {rays}");
}

#[test]
fn batch_picking_matches_single_picks_for_any_worker_count() {
    let mut rng = Rng(77);
    let mut set = OctreeSet::new();
    for i in 0..20 {
        let p = Vec3::new((i % 5) as f32 * 3.0, 0.0, (i / 5) as f32 * 3.0);
        set.insert(random_octree(&mut rng, p, 2.5, 5, 80));
    }
    let rays: Vec<PickRay> = (0..2000)
        .map(|_| PickRay::new(rng.vec3(-2.0, 16.0) + Vec3::Y * 10.0, rng.vec3(-1.0, 1.0) - Vec3::Y).unwrap())
        .collect();
    let single: Vec<_> = rays.iter().map(|r| set.pick(r, f32::INFINITY, 16)).collect();
    assert!(single.iter().filter(|h| h.is_some()).count() > 200);
    for workers in [0, 1, 3] {
        let pool = ThreadPool::new(workers);
        let mut out = vec![None; rays.len()];
        set.pick_batch(&rays, f32::INFINITY, 16, &mut out, pool.jobs());
        assert_eq!(out, single, "{workers} workers");
    }
}

#[test]
fn pick_ray_refuses_bad_input() {
    assert!(PickRay::new(Vec3::ZERO, Vec3::ZERO).is_none());
    assert!(PickRay::new(Vec3::NAN, Vec3::X).is_none());
    assert!(PickRay::new(Vec3::ZERO, Vec3::new(f32::INFINITY, 0.0, 0.0)).is_none());
    // A component too small to invert is flushed: the ray runs parallel.
    let r = PickRay::new(Vec3::ZERO, Vec3::new(1.0, 1e-42, 0.0)).unwrap();
    assert_eq!(r.dir, Vec3::X);
    let mut set = OctreeSet::new();
    set.insert(unit_solid());
    // From the cube's corner along its bottom back edge: half-open cubes hold
    // their lower faces, so the ray is inside from t = 0.
    let hit = set.pick(&r, f32::INFINITY, 16).unwrap().1;
    assert_eq!((hit.distance, hit.face, hit.corner), (0.0, FACE_LEFT, 0));
}
