//! Ray picking in one octree: ordered child traversal, then the editor's view of
//! the hit (face, point, nearest corner, nearest edge).
//!
//! The traversal is the parametric algorithm of Revelles, Ureña and Lastra, "An
//! Efficient Parametric Algorithm for Octree Traversal" (WSCG 2000): each cube
//! carries the ray parameters where the ray enters and leaves its three slabs; the
//! children's parameters come from the three mid-planes, and the children the ray
//! crosses follow one another by always crossing the nearest mid-plane. Negative
//! direction components are handled by mirroring (child index XOR a mask), so the
//! ray runs "up" every axis. Only crossed children are visited, nearest first, and
//! the first solid cube entered in front of the origin ends the walk: it is the
//! closest.
//!
//! Exactness rules, shared with the brute-force reference so both give the same bits:
//! - every plane is [`Octree::plane`], every parameter `(plane - origin) * inv_dir`;
//! - cubes are half-open, so at a parameter `t` the ray is in the one cube holding
//!   the points just after `t`; a cube the ray only touches (an edge, a corner, a
//!   face it runs along on the outside) is not entered;
//! - a cube is hit when it is entered at `t >= 0`; a solid cube holding the origin is
//!   not hit through its own walls (the editor looks out of it);
//! - the entry face is on the axis with the largest entry parameter, x before y
//!   before z on ties (a ray through an edge or corner).

use glam::Vec3;

use super::{block_of, Octree, EMPTY, OCTREE_MAX_DEPTH};
use crate::math::Aabb;

/// Face ids, in the reference's order. Front is +z, up is +y.
pub const FACE_LEFT: u8 = 0;
/// +x.
pub const FACE_RIGHT: u8 = 1;
/// +z.
pub const FACE_FRONT: u8 = 2;
/// -z.
pub const FACE_BACK: u8 = 3;
/// +y.
pub const FACE_TOP: u8 = 4;
/// -y.
pub const FACE_BOTTOM: u8 = 5;

pub const FACE_NAMES: [&str; 6] = ["left", "right", "front", "back", "top", "bottom"];

/// Outward unit normal of each face.
pub const FACE_NORMALS: [Vec3; 6] = [Vec3::NEG_X, Vec3::X, Vec3::Z, Vec3::NEG_Z, Vec3::Y, Vec3::NEG_Y];

/// The four corners of each face. Corner `i` is at the upper x when bit 0 of `i` is
/// set, upper y for bit 1, upper z for bit 2 (the child numbering).
pub const CORNERS_ON_FACE: [[u8; 4]; 6] =
    [[0, 2, 4, 6], [1, 3, 5, 7], [4, 5, 6, 7], [0, 1, 2, 3], [2, 3, 6, 7], [0, 1, 4, 5]];

/// The four edges of each face, numbered as in the reference: 0-3 the left face's
/// (top, front, bottom, back), 4-7 the right face's in the same order, 8-11 the
/// edges along x (bottom-front, bottom-back, top-back, top-front). The reference
/// lists the back face as {3, 7, 9, 11}; edge 11 is top-front, so the back face's
/// top edge is 10 — that typo is fixed here.
pub const EDGES_ON_FACE: [[u8; 4]; 6] =
    [[0, 1, 2, 3], [4, 5, 6, 7], [1, 5, 8, 11], [3, 7, 9, 10], [0, 4, 10, 11], [2, 6, 8, 9]];

/// Midpoint of each edge as a fraction of the cube (0 lower side, 1 upper side).
pub const EDGE_MIDPOINTS: [[f32; 3]; 12] = [
    [0.0, 1.0, 0.5],
    [0.0, 0.5, 1.0],
    [0.0, 0.0, 0.5],
    [0.0, 0.5, 0.0],
    [1.0, 1.0, 0.5],
    [1.0, 0.5, 1.0],
    [1.0, 0.0, 0.5],
    [1.0, 0.5, 0.0],
    [0.5, 0.0, 1.0],
    [0.5, 0.0, 0.0],
    [0.5, 1.0, 0.0],
    [0.5, 1.0, 1.0],
];

/// A ray prepared for picking: unit direction (so parameters are distances), with
/// components too small to invert flushed to zero (the ray then runs parallel to
/// that axis; the change is below 1e-38 of a radian).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PickRay {
    pub origin: Vec3,
    pub dir: Vec3,
    inv: Vec3,
    /// Bit `a` set when `dir[a] < 0`.
    flip: usize,
}

impl PickRay {
    /// `None` unless the origin is finite and the direction finite and non-zero.
    pub fn new(origin: Vec3, direction: Vec3) -> Option<PickRay> {
        if !origin.is_finite() || !direction.is_finite() {
            return None;
        }
        let mut dir = direction.normalize_or_zero();
        if dir == Vec3::ZERO {
            return None;
        }
        for a in 0..3 {
            if !dir[a].recip().is_finite() {
                dir[a] = 0.0;
            }
        }
        let flip = (0..3).filter(|&a| dir[a] < 0.0).fold(0, |m, a| m | 1 << a);
        Some(PickRay { origin, dir, inv: dir.recip(), flip })
    }

    /// Where the ray enters and leaves the slab `[lo, hi)` of `axis`, as
    /// `(enter, exit)`; a ray parallel to the axis is in it for all `t` or never.
    #[inline]
    pub fn slab(&self, axis: usize, lo: f32, hi: f32) -> (f32, f32) {
        let (o, d, inv) = (self.origin[axis], self.dir[axis], self.inv[axis]);
        if d > 0.0 {
            ((lo - o) * inv, (hi - o) * inv)
        } else if d < 0.0 {
            ((hi - o) * inv, (lo - o) * inv)
        } else if o >= lo && o < hi {
            (f32::NEG_INFINITY, f32::INFINITY)
        } else {
            (f32::INFINITY, f32::NEG_INFINITY)
        }
    }

    /// Where the ray crosses the plane at `p` of `axis`, as seen by the mirrored
    /// traversal: for a parallel ray, `-inf` when the origin is on the upper side
    /// (half-open: on the plane counts as upper), `+inf` otherwise.
    #[inline]
    fn cross(&self, axis: usize, p: f32) -> f32 {
        let o = self.origin[axis];
        if self.dir[axis] != 0.0 {
            (p - o) * self.inv[axis]
        } else if o >= p {
            f32::NEG_INFINITY
        } else {
            f32::INFINITY
        }
    }
}

/// A cube of an octree: depth and integer coordinates (`0..2^depth` per axis).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Cube {
    pub depth: u8,
    pub k: [u32; 3],
}

impl Cube {
    /// The child indices from the root to this cube (`depth` of them are used).
    pub fn path(&self) -> [u8; OCTREE_MAX_DEPTH] {
        let mut path = [0u8; OCTREE_MAX_DEPTH];
        for (level, slot) in path.iter_mut().enumerate().take(self.depth as usize) {
            let shift = self.depth as u32 - 1 - level as u32;
            *slot = (0..3).map(|a| ((self.k[a] >> shift & 1) << a) as u8).sum();
        }
        path
    }
}

/// The raw result of a traversal: the cube, the entry parameter and axis.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CubeHit {
    pub t: f32,
    pub axis: u8,
    pub cube: Cube,
}

/// What an editor needs about a picked cube.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OctreeHit {
    /// Distance from the ray origin (the direction is unit length).
    pub distance: f32,
    pub cube: Cube,
    pub cube_box: Aabb,
    /// One of the `FACE_*` ids: the face the ray enters through.
    pub face: u8,
    pub normal: Vec3,
    /// Where the ray meets the face (on the face's plane exactly).
    pub point: Vec3,
    /// The face's corner nearest the point (first in [`CORNERS_ON_FACE`] order on ties).
    pub corner: u8,
    pub corner_point: Vec3,
    /// The face's edge whose midpoint is nearest the point (see [`EDGES_ON_FACE`]).
    pub edge: u8,
}

/// One cube on the traversal stack with its slab parameters (mirrored: `t0[a] <=
/// t1[a]` always).
#[derive(Clone, Copy)]
struct Frame {
    node: u32,
    depth: u8,
    k: [u32; 3],
    t0: [f32; 3],
    t1: [f32; 3],
}

/// Each octant pushes at most 4 children and pops itself: 3 more per level.
const STACK_SIZE: usize = 3 * OCTREE_MAX_DEPTH + 2;

/// The ray's interval `(enter, exit)` in a box from its per-axis slab parameters.
#[inline]
pub(crate) fn interval(t0: &[f32; 3], t1: &[f32; 3]) -> (f32, f32) {
    (t0[0].max(t0[1]).max(t0[2]), t1[0].min(t1[1]).min(t1[2]))
}

/// The entry axis: the largest entry parameter, lowest axis on ties.
pub(crate) fn entry_axis(t0: &[f32; 3]) -> u8 {
    let mut axis = 0;
    for a in 1..3 {
        if t0[a] > t0[axis] {
            axis = a;
        }
    }
    axis as u8
}

impl Octree {
    /// The closest solid cube the ray enters within `[0, max_t]`, descending at most
    /// `max_depth` levels (an octant at that depth counts as solid: the editor's grid
    /// size). No heap, fixed stack.
    pub fn pick_cube(&self, ray: &PickRay, max_t: f32, max_depth: u32) -> Option<CubeHit> {
        let max_depth = max_depth.min(OCTREE_MAX_DEPTH as u32) as u8;
        if self.nodes[0] == EMPTY {
            return None;
        }
        let root_slabs: [(f32, f32); 3] =
            std::array::from_fn(|a| ray.slab(a, self.plane(a, 0, 0), self.plane(a, 1, 0)));
        let mut stack = [Frame { node: 0, depth: 0, k: [0; 3], t0: [0.0; 3], t1: [0.0; 3] }; STACK_SIZE];
        stack[0].t0 = root_slabs.map(|s| s.0);
        stack[0].t1 = root_slabs.map(|s| s.1);
        let mut top = 1;
        while top > 0 {
            top -= 1;
            let f = stack[top];
            let (enter, exit) = interval(&f.t0, &f.t1);
            // Empty interval (missed or only touched; parameters are never NaN) or
            // entirely behind the origin.
            if enter >= exit || exit <= 0.0 {
                continue;
            }
            // Cubes come off the stack in entry order: nothing later can be closer.
            if enter > max_t {
                return None;
            }
            let word = self.nodes[f.node as usize];
            let block = match block_of(word) {
                _ if word == EMPTY => continue,
                Some(block) if f.depth < max_depth => block,
                _ => {
                    if enter >= 0.0 {
                        return Some(CubeHit {
                            t: enter,
                            axis: entry_axis(&f.t0),
                            cube: Cube { depth: f.depth, k: f.k },
                        });
                    }
                    continue; // the origin is inside this cube
                }
            };
            // Mid-plane parameters and the crossed children in mirrored order.
            let depth = f.depth as u32 + 1;
            let tm: [f32; 3] = std::array::from_fn(|a| ray.cross(a, self.plane(a, 2 * f.k[a] + 1, depth)));
            let mut child = (0..3).filter(|&a| tm[a] <= enter).fold(0usize, |m, a| m | 1 << a);
            let mut sequence = [0usize; 4];
            let mut count = 0;
            loop {
                sequence[count] = child;
                count += 1;
                let leave =
                    (0..3).map(|a| if child >> a & 1 == 1 { f.t1[a] } else { tm[a] }).fold(f32::INFINITY, f32::min);
                if leave >= exit || count == 4 {
                    break;
                }
                // Cross every mid-plane reached at `leave` (several through an edge).
                child |= (0..3).filter(|&a| child >> a & 1 == 0 && tm[a] == leave).fold(0, |m, a| m | 1 << a);
            }
            for &c in sequence[..count].iter().rev() {
                let world = c ^ ray.flip;
                stack[top] = Frame {
                    node: (block + world) as u32,
                    depth: depth as u8,
                    k: std::array::from_fn(|a| 2 * f.k[a] + (world as u32 >> a & 1)),
                    t0: std::array::from_fn(|a| if c >> a & 1 == 1 { tm[a] } else { f.t0[a] }),
                    t1: std::array::from_fn(|a| if c >> a & 1 == 1 { f.t1[a] } else { tm[a] }),
                };
                top += 1;
            }
        }
        None
    }

    /// The editor's description of a traversal hit: face, point, corner, edge.
    pub fn describe(&self, ray: &PickRay, hit: &CubeHit) -> OctreeHit {
        let cube_box = self.cube_box(hit.cube.k, hit.cube.depth as u32);
        let axis = hit.axis as usize;
        let upper = ray.dir[axis] < 0.0; // entering through the upper side
        let face = match (axis, upper) {
            (0, false) => FACE_LEFT,
            (0, true) => FACE_RIGHT,
            (1, false) => FACE_BOTTOM,
            (1, true) => FACE_TOP,
            (_, false) => FACE_BACK,
            (_, true) => FACE_FRONT,
        };
        let mut point = (ray.origin + ray.dir * hit.t).clamp(cube_box.min, cube_box.max);
        point[axis] = if upper { cube_box.max[axis] } else { cube_box.min[axis] };
        let corner_at = |c: u8| {
            Vec3::from_array(std::array::from_fn(|a| if c >> a & 1 == 1 { cube_box.max[a] } else { cube_box.min[a] }))
        };
        let nearest = |items: [u8; 4], at: &dyn Fn(u8) -> Vec3| {
            let mut best = (items[0], at(items[0]).distance_squared(point));
            for &i in &items[1..] {
                let d = at(i).distance_squared(point);
                if d < best.1 {
                    best = (i, d);
                }
            }
            best.0
        };
        let corner = nearest(CORNERS_ON_FACE[face as usize], &corner_at);
        let edge_mid = |e: u8| cube_box.min + Vec3::from_array(EDGE_MIDPOINTS[e as usize]) * cube_box.extents();
        let edge = nearest(EDGES_ON_FACE[face as usize], &edge_mid);
        OctreeHit {
            distance: hit.t,
            cube: hit.cube,
            cube_box,
            face,
            normal: FACE_NORMALS[face as usize],
            point,
            corner,
            corner_point: corner_at(corner),
            edge,
        }
    }
}
