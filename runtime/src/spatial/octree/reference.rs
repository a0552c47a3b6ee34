//! Reference pickers for tests and benches.
//!
//! - [`BruteForce`] expands every solid leaf of every octree to a box and
//!   intersects them all: obviously right, the oracle of the tests.
//! - [`pick_linear_scan`] is Inexor's approach (see `docs/terrain.md`): a loop
//!   over all octrees with a bounding-sphere test then a box test, and at every octant
//!   a box test of all 8 children. Inexor descends into the one child nearest the
//!   camera by centre distance, which misses hits when that child holds none along
//!   the ray and does not handle overlapping octrees; here the hit children are
//!   visited in entry order with backtracking and every octree is searched, so it
//!   gives the right answer at the reference's cost structure.
//!
//! Both use the exactness rules of `pick.rs` (the same planes, parameters and
//! half-open cubes) so their results equal the traversal's bit for bit.

use super::pick::{entry_axis, interval, CubeHit, OctreeHit, PickRay};
use super::set::OctreeId;
use super::{block_of, Cube, Octree, OctreeSet, EMPTY, OCTREE_MAX_DEPTH};
use crate::math::Aabb;

impl Octree {
    /// The per-axis entry and exit parameters of the cube `(k, depth)`.
    pub(crate) fn cube_slabs(&self, ray: &PickRay, k: [u32; 3], depth: u32) -> ([f32; 3], [f32; 3]) {
        let slabs: [(f32, f32); 3] =
            std::array::from_fn(|a| ray.slab(a, self.plane(a, k[a], depth), self.plane(a, k[a] + 1, depth)));
        (slabs.map(|s| s.0), slabs.map(|s| s.1))
    }

    /// The hit on the cube `(k, depth)` alone: entered at `0 <= t <= max_t`.
    pub(crate) fn cube_hit(&self, ray: &PickRay, k: [u32; 3], depth: u32, max_t: f32) -> Option<CubeHit> {
        box_hit(ray, &self.cube_box(k, depth), Cube { depth: depth as u8, k }, max_t)
    }
}

/// The hit on `cube`, whose box (planes exactly as [`Octree::plane`] gives them)
/// is `b`: entered at `0 <= t <= max_t`.
fn box_hit(ray: &PickRay, b: &Aabb, cube: Cube, max_t: f32) -> Option<CubeHit> {
    let slabs: [(f32, f32); 3] = std::array::from_fn(|a| ray.slab(a, b.min[a], b.max[a]));
    let (t0, t1) = (slabs.map(|s| s.0), slabs.map(|s| s.1));
    let (enter, exit) = interval(&t0, &t1);
    (enter < exit && enter >= 0.0 && enter <= max_t).then(|| CubeHit { t: enter, axis: entry_axis(&t0), cube })
}

fn child_k(k: [u32; 3], child: usize) -> [u32; 3] {
    std::array::from_fn(|a| 2 * k[a] + (child as u32 >> a & 1))
}

/// Keeps the closest of two candidate hits; ties go to the older octree.
fn closer(best: &mut Option<(f32, u64, OctreeId, CubeHit)>, candidate: (f32, u64, OctreeId, CubeHit)) {
    if best.is_none_or(|b| (candidate.0, candidate.1) < (b.0, b.1)) {
        *best = Some(candidate);
    }
}

fn finish(
    set: &OctreeSet,
    ray: &PickRay,
    best: Option<(f32, u64, OctreeId, CubeHit)>,
) -> Option<(OctreeId, OctreeHit)> {
    let (_, _, id, hit) = best?;
    Some((id, set.get(id).expect("live").describe(ray, &hit)))
}

/// Every solid leaf (and every octant at the grid depth) of every octree as a box,
/// expanded once; [`BruteForce::pick`] intersects them all.
pub struct BruteForce {
    /// Box (its planes exactly as [`Octree::plane`] gives them), octree serial, id
    /// and cube.
    leaves: Vec<(Aabb, u64, OctreeId, Cube)>,
}

impl BruteForce {
    /// Expands the solid cubes of `set` for picks limited to `max_depth`.
    pub fn new(set: &OctreeSet, max_depth: u32) -> BruteForce {
        let max_depth = max_depth.min(OCTREE_MAX_DEPTH as u32);
        let mut leaves = Vec::new();
        for (id, entry) in set.entries() {
            let octree = &entry.octree;
            octree.for_each_leaf(max_depth, |k, depth| {
                leaves.push((octree.cube_box(k, depth), entry.serial, id, Cube { depth: depth as u8, k }))
            });
        }
        BruteForce { leaves }
    }

    /// Boxes held.
    pub fn len(&self) -> usize {
        self.leaves.len()
    }

    pub fn is_empty(&self) -> bool {
        self.leaves.is_empty()
    }

    /// The closest box entered at `0 <= t <= max_t` (ties to the older octree).
    pub fn pick(&self, set: &OctreeSet, ray: &PickRay, max_t: f32) -> Option<(OctreeId, OctreeHit)> {
        let mut best = None;
        for &(b, serial, id, cube) in &self.leaves {
            if let Some(hit) = box_hit(ray, &b, cube, max_t) {
                closer(&mut best, (hit.t, serial, id, hit));
            }
        }
        finish(set, ray, best)
    }
}

/// [`BruteForce`] built for one pick.
pub fn pick_brute_force(set: &OctreeSet, ray: &PickRay, max_t: f32, max_depth: u32) -> Option<(OctreeId, OctreeHit)> {
    BruteForce::new(set, max_depth).pick(set, ray, max_t)
}

/// Inexor's linear scan with all-children tests, made exact (see the module doc).
pub fn pick_linear_scan(set: &OctreeSet, ray: &PickRay, max_t: f32, max_depth: u32) -> Option<(OctreeId, OctreeHit)> {
    let max_depth = max_depth.min(OCTREE_MAX_DEPTH as u32);
    let mut best = None;
    for (id, entry) in set.entries() {
        let octree = &entry.octree;
        // Bounding sphere first, as the reference does.
        let bounds = octree.bounds();
        let to_center = bounds.center() - ray.origin;
        let radius = 0.5 * bounds.extents().length() * 1.001; // slack for rounding
        let along = to_center.dot(ray.dir);
        if to_center.length_squared() - along * along > radius * radius {
            continue; // the ray's line misses the sphere
        }
        let limit = best.map_or(max_t, |b: (f32, u64, OctreeId, CubeHit)| b.0);
        if let Some(hit) = descend(octree, ray, limit, max_depth) {
            closer(&mut best, (hit.t, entry.serial, id, hit));
        }
    }
    finish(set, ray, best)
}

/// Depth-first over children hit by the ray, all 8 tested per octant, nearest
/// first; the first solid cube entered at `t >= 0` is the closest in this octree.
fn descend(octree: &Octree, ray: &PickRay, max_t: f32, max_depth: u32) -> Option<CubeHit> {
    let touches = |k: [u32; 3], depth: u32| {
        let (t0, t1) = octree.cube_slabs(ray, k, depth);
        let (enter, exit) = interval(&t0, &t1);
        (enter < exit && exit > 0.0 && enter <= max_t).then_some(enter)
    };
    touches([0; 3], 0)?;
    let mut stack = vec![(0usize, [0u32; 3], 0u32)];
    while let Some((node, k, depth)) = stack.pop() {
        let word = octree.word(node);
        match block_of(word) {
            _ if word == EMPTY => {}
            Some(block) if depth < max_depth => {
                let mut hit: Vec<(f32, usize)> =
                    (0..8).filter_map(|c| touches(child_k(k, c), depth + 1).map(|t| (t, c))).collect();
                hit.sort_by(|a, b| b.0.total_cmp(&a.0)); // far first: the stack pops near first
                stack.extend(hit.into_iter().map(|(_, c)| (block + c, child_k(k, c), depth + 1)));
            }
            _ => {
                if let Some(hit) = octree.cube_hit(ray, k, depth, max_t) {
                    return Some(hit);
                }
            }
        }
    }
    None
}
