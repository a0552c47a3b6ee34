//! A four-wide bounding volume hierarchy over a triangle mesh, for rays only.
//!
//! The kD tree ([`KdMesh`](super::KdMesh)) is built for collision: 12 bytes a node,
//! one node per two triangles, box queries that touch little memory. A ray through
//! it visits about 50 binary nodes, one plane test each, and on a mesh larger than
//! the caches most of those visits wait on memory. This structure follows the wide
//! BVHs of ray tracers (Embree's BVH4, tinybvh's quantised layouts) instead:
//!
//! - **Nodes of one cache line** (64 bytes): the boxes of four children, each bound
//!   quantised to 8 bits on the node's own box (an origin and a scale per axis,
//!   rounded outwards so a child's quantised box contains its true box), and four
//!   child references. A ray tests the four boxes at once with SSE2 (baseline on
//!   x86-64), so a walk takes about a third of the kD tree's steps, each one line.
//! - **Leaves of up to [`LEAF_MAX`] triangles**, stored in leaf order as their
//!   three vertices (36 bytes, next to each other), so a leaf costs one or two lines
//!   and no index lookups. The mesh's own triangle numbers are kept aside and read
//!   only for the closest hit.
//! - **Build** (`build.rs`): binned surface-area splits, four parts a node; large
//!   parts build as jobs, the same tree for any worker count.
//!
//! **Same hits as brute force.** Triangles are tested with [`RayShear::hit`], the
//! watertight test every triangle structure in Kiln uses. Boxes are padded by a few
//! ulps of the mesh's largest coordinate at build (a hit that the triangle test
//! accepts by a rounding margin lies inside its box), and a box's exit distance is
//! scaled by `1 + 2γ₃` (Ize, "Robust BVH Ray Traversal", JCGT 2013) before it is
//! compared, so rounding in the slab test never culls a box the ray meets. A box
//! is skipped only when it starts beyond the closest hit so far, and on equal
//! distances the lower mesh triangle wins, as a loop over all triangles in mesh
//! order with the same test finds it.

use std::mem::MaybeUninit;

use glam::Vec3;

use super::{KdError, MeshHit, TriMesh};
use crate::jobs::Jobs;
use crate::math::{Aabb, Ray, RayShear};

mod build;
#[cfg(test)]
mod tests;

/// Walks in flight in [`RayBvh::ray_closest_batch`].
pub const BATCH_LANES: usize = 16;
/// Most triangles a leaf holds.
pub const LEAF_MAX: usize = 4;
/// Most triangles a tree holds (a leaf reference keeps 28 bits of first triangle).
const MAX_TRIANGLES: usize = 1 << 28;
/// A child reference to a leaf: `LEAF | first << 3 | count - 1`.
const LEAF: u32 = 1 << 31;
/// An unused child slot.
const EMPTY: u32 = u32::MAX;
/// Entries of the walk's stack: a node pushes at most three, and the build bounds
/// the depth (see `build.rs`).
const STACK: usize = 3 * (build::MEDIAN_DEPTH + 28) + 1;
/// `1 + 2γ₃` with `γₙ = nε / (1 - nε)` for f32's unit roundoff: the factor by
/// which a slab test's exit distance is widened so that rounding never loses a box.
const EXIT_SCALE: f32 = 1.0 + 2.0 * (3.0 * f32::EPSILON * 0.5) / (1.0 - 3.0 * f32::EPSILON * 0.5);

/// One node: four child boxes, 8 bits per bound on the node's box, and four child
/// references (a node index, a leaf, or [`EMPTY`]). One cache line.
#[derive(Clone, Copy, Debug, PartialEq)]
#[repr(C, align(64))]
struct Node {
    /// The node's box minimum; a bound `q` decodes to `q * scale + origin`.
    origin: [f32; 3],
    scale: [f32; 3],
    /// Per axis, per child.
    lo: [[u8; 4]; 3],
    hi: [[u8; 4]; 3],
    children: [u32; 4],
}

impl Node {
    const EMPTY: Node =
        Node { origin: [0.0; 3], scale: [0.0; 3], lo: [[255; 4]; 3], hi: [[0; 4]; 3], children: [EMPTY; 4] };
}

/// A triangle mesh's four-wide BVH for closest-hit rays (see the module notes).
#[derive(Clone, Debug, Default)]
pub struct RayBvh {
    /// Depth first; node 0 is the root.
    nodes: Vec<Node>,
    /// The triangles of each leaf.
    leaves: Vec<LeafBlock>,
    /// The mesh triangle of each leaf's lanes ([`EMPTY`] past its count).
    source: Vec<u32>,
    /// Per mesh triangle, its lane in `source`.
    slot: Vec<u32>,
    triangle_count: usize,
    bounds: Aabb,
    depth: usize,
}

impl RayBvh {
    /// The tree over `mesh` (its materials are not kept). Fails on non-finite
    /// vertices, indices past the vertices, or more than 2^28 triangles.
    pub fn build(mesh: &TriMesh) -> Result<RayBvh, KdError> {
        build::build(mesh, None)
    }

    /// [`RayBvh::build`] on the job pool: parts of more than 16,384 triangles build
    /// their children as jobs, each into arrays of its own, appended in order
    /// afterwards. The tree is the serial build's, bit for bit, for any worker count.
    pub fn build_parallel(mesh: &TriMesh, jobs: Jobs) -> Result<RayBvh, KdError> {
        build::build(mesh, Some(jobs))
    }

    /// Triangles in the tree.
    pub fn triangle_count(&self) -> usize {
        self.triangle_count
    }

    /// Nodes in the tree (each 64 bytes).
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// Levels of nodes from the root to the deepest leaf.
    pub fn depth(&self) -> usize {
        self.depth
    }

    /// Bytes held: nodes, leaves and their triangles' mesh numbers.
    pub fn bytes(&self) -> usize {
        self.nodes.len() * size_of::<Node>() + self.leaves.len() * (size_of::<LeafBlock>() + 16) + self.slot.len() * 4
    }

    /// The vertices of mesh triangle `index`, as the tree holds them (the mesh's own
    /// bits). Panics if `index` is not below [`RayBvh::triangle_count`].
    pub fn triangle(&self, index: u32) -> [Vec3; 3] {
        let slot = self.slot[index as usize] as usize;
        self.leaves[slot / LEAF_MAX].triangle(slot % LEAF_MAX)
    }

    /// The mesh's bounds (padded as the boxes are); empty for an empty mesh.
    pub fn bounds(&self) -> Aabb {
        self.bounds
    }

    /// The closest hit of `ray` with `t` in `[0, max_t]`: the one with the smallest
    /// `t`, and of those the lowest mesh triangle, as a loop over every triangle
    /// with [`ray_triangle`](crate::math::ray_triangle) finds it. `MeshHit::triangle`
    /// is the mesh's triangle number. `None` for a non-finite origin or a zero or
    /// non-finite direction.
    pub fn ray_closest(&self, ray: &Ray, max_t: f32) -> Option<MeshHit> {
        self.walk::<false>(ray, max_t)
    }

    /// Whether `ray` hits any triangle with `t` in `[0, max_t]` (an occlusion or
    /// line-of-sight test): the first hit the walk finds, which need not be the
    /// closest; the walk stops there. `None` exactly when
    /// [`RayBvh::ray_closest`] finds nothing.
    pub fn ray_any(&self, ray: &Ray, max_t: f32) -> Option<MeshHit> {
        self.walk::<true>(ray, max_t)
    }

    /// [`RayBvh::ray_closest`] for a ray set up once ([`RayAim::new`]) and cast
    /// through several trees, as the terrain casts a ray through its regions' trees:
    /// the same hit, without the set-up per tree.
    pub fn ray_closest_aimed(&self, aim: &RayAim, max_t: f32) -> Option<MeshHit> {
        if self.nodes.is_empty() || max_t.is_nan() || max_t < 0.0 {
            return None;
        }
        self.walk_aimed::<false>(&aim.shear, &aim.walk, max_t)
    }

    /// The single walk: to the end for the closest hit, or (`ANY`) to the first.
    fn walk<const ANY: bool>(&self, ray: &Ray, max_t: f32) -> Option<MeshHit> {
        let shear = self.aim(ray, max_t)?;
        self.walk_aimed::<ANY>(&shear, &Walk::new(ray), max_t)
    }

    /// [`RayBvh::walk`] with the ray set up.
    #[inline(always)]
    fn walk_aimed<const ANY: bool>(&self, shear: &RayShear, walk: &Walk, max_t: f32) -> Option<MeshHit> {
        let mut best = Best { t: max_t, triangle: EMPTY, u: 0.0, v: 0.0 };
        // Not initialised: a walk reads only entries it wrote.
        let mut stack = [MaybeUninit::<(u32, f32)>::uninit(); STACK];
        let mut top = 0;
        let mut node = 0u32;
        loop {
            let (order, count) = walk.node(&self.nodes[node as usize], best.t);
            for &(child, _) in &order[..count] {
                self.prefetch(child);
            }
            let mut next: Option<(u32, f32)> = None;
            // Children nearest first: leaves are tested at once, nodes are visited
            // (the nearest next, the others pushed farthest first).
            for &(child, t_enter) in order[..count].iter().rev() {
                if child & LEAF != 0 {
                    continue;
                }
                if let Some(farther) = next.replace((child, t_enter)) {
                    stack[top].write(farther);
                    top += 1;
                }
            }
            for &(child, t_enter) in &order[..count] {
                if child & LEAF != 0 && t_enter <= best.t * EXIT_SCALE {
                    self.test_leaf(child, shear, &mut best);
                    if ANY && best.triangle != EMPTY {
                        return best.hit();
                    }
                }
            }
            node = match next {
                Some((n, _)) => n,
                None => loop {
                    if top == 0 {
                        return best.hit();
                    }
                    top -= 1;
                    // SAFETY: entries below `top` were written by the pushes.
                    let (n, t_enter) = unsafe { stack[top].assume_init() };
                    if t_enter <= best.t * EXIT_SCALE {
                        break n;
                    }
                },
            };
        }
    }

    /// The triangle test's set-up for `ray`, or `None` when no triangle can be hit:
    /// an empty tree, a non-finite origin, a zero or non-finite direction, or a
    /// `max_t` that is NaN or negative.
    fn aim(&self, ray: &Ray, max_t: f32) -> Option<RayShear> {
        let usable = !self.nodes.is_empty() && ray.origin.is_finite() && !max_t.is_nan() && max_t >= 0.0;
        RayShear::new(ray).filter(|_| usable)
    }

    /// [`RayBvh::ray_closest`] for every ray on the calling thread: `hits[i]` is ray
    /// `i`'s closest hit, bit for bit. [`BATCH_LANES`] walks are in flight and step
    /// in turn, one child reference each (a node's four boxes, or a leaf's
    /// triangles); a step asks for the memory of every child it pushes, so one
    /// walk's misses are under way while the others step. Panics if `hits` and
    /// `rays` differ in length.
    pub fn ray_closest_batch(&self, rays: &[Ray], max_t: f32, hits: &mut [Option<MeshHit>]) {
        assert_eq!(rays.len(), hits.len(), "one hit slot per ray");
        let mut lanes: [Lane; BATCH_LANES] = std::array::from_fn(|_| Lane::idle());
        let mut next_ray = 0;
        let mut busy = 0;
        // Fill every lane, then step them in turn; a lane that finishes takes the
        // next ray.
        for lane in lanes.iter_mut() {
            busy += usize::from(self.start(lane, rays, &mut next_ray, max_t, hits));
        }
        while busy > 0 {
            for lane in lanes.iter_mut() {
                if lane.ray == usize::MAX {
                    continue;
                }
                if !self.step(lane) {
                    hits[lane.ray] = lane.best.hit();
                    busy -= 1;
                    busy += usize::from(self.start(lane, rays, &mut next_ray, max_t, hits));
                }
            }
        }
    }

    /// Gives `lane` the next ray that can hit anything (writing `None` for those that
    /// cannot); false when the rays are done.
    fn start(&self, lane: &mut Lane, rays: &[Ray], next: &mut usize, max_t: f32, hits: &mut [Option<MeshHit>]) -> bool {
        while *next < rays.len() {
            let (i, ray) = (*next, &rays[*next]);
            *next += 1;
            match self.aim(ray, max_t) {
                Some(shear) => {
                    (lane.ray, lane.shear, lane.walk) = (i, shear, Walk::new(ray));
                    lane.best = Best { t: max_t, triangle: EMPTY, u: 0.0, v: 0.0 };
                    (lane.next, lane.top) = (0, 0);
                    self.prefetch(0);
                    return true;
                }
                None => hits[i] = None,
            }
        }
        lane.ray = usize::MAX;
        false
    }

    /// One step of `lane`'s walk: its next child reference, then the next one to
    /// visit. False when the walk is done.
    #[inline(always)]
    fn step(&self, lane: &mut Lane) -> bool {
        let child = lane.next;
        if child & LEAF != 0 {
            self.test_leaf(child, &lane.shear, &mut lane.best);
        } else {
            let (order, count) = lane.walk.node(&self.nodes[child as usize], lane.best.t);
            if count > 0 {
                // The nearest child next; the others on the stack, farthest first.
                for i in (1..count).rev() {
                    let entry = order[i];
                    self.prefetch(entry.0);
                    lane.stack[lane.top + count - 1 - i].write(entry);
                }
                lane.top += count - 1;
                self.prefetch(order[0].0);
                lane.next = order[0].0;
                return true;
            }
        }
        while lane.top > 0 {
            lane.top -= 1;
            // SAFETY: entries below `top` were written by the pushes.
            let (n, t_enter) = unsafe { lane.stack[lane.top].assume_init() };
            if t_enter <= lane.best.t * EXIT_SCALE {
                lane.next = n;
                return true;
            }
        }
        false
    }

    /// Asks for the memory of child reference `child`: a node's line, or a leaf's
    /// triangles.
    #[inline(always)]
    fn prefetch(&self, child: u32) {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            let (ptr, lines): (*const i8, usize) = if child & LEAF != 0 {
                let index = ((child & !LEAF) >> 3) as usize;
                (std::ptr::from_ref(&self.leaves[index]).cast(), size_of::<LeafBlock>().div_ceil(64) + 1)
            } else {
                (self.nodes[child as usize..].as_ptr().cast(), 1)
            };
            for l in 0..lines {
                // SAFETY: prefetching never faults; the addresses are within or
                // just past `self`'s arrays.
                unsafe { _mm_prefetch(ptr.wrapping_add(64 * l), _MM_HINT_T0) };
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = child;
    }

    /// Tests the triangles of leaf reference `leaf`, keeping the closest in `best`.
    ///
    /// The leaf's triangles are tested at once, one per SSE lane, with the
    /// operations of [`RayShear::hit`] in its order (so the same bits); a lane whose
    /// edge function comes out exactly zero goes to that test itself, which redoes
    /// it in `f64`.
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    fn test_leaf(&self, leaf: u32, shear: &RayShear, best: &mut Best) {
        use std::arch::x86_64::*;
        let index = ((leaf & !LEAF) >> 3) as usize;
        let count = (leaf & 7) as usize + 1;
        let block = &self.leaves[index];
        let (o, axes, [sx, sy, sz]) = shear.parts();
        // SAFETY: SSE2 is part of the x86-64 baseline; the loads read `block`'s own
        // 16-byte aligned rows.
        let (hit, zero, t, u, v) = unsafe {
            // A vertex in ray space, sheared: (x, y) and z.
            let vertex = |k: usize| {
                let at = |axis: usize| {
                    _mm_sub_ps(_mm_load_ps(block.rows[3 * k + axes[axis]].as_ptr()), _mm_set1_ps(o[axis]))
                };
                let (px, py, pz) = (at(0), at(1), at(2));
                let x = _mm_sub_ps(px, _mm_mul_ps(_mm_set1_ps(sx), pz));
                let y = _mm_sub_ps(py, _mm_mul_ps(_mm_set1_ps(sy), pz));
                (x, y, pz)
            };
            let ((ax, ay, az), (bx, by, bz), (cx, cy, cz)) = (vertex(0), vertex(1), vertex(2));
            let u = _mm_sub_ps(_mm_mul_ps(cx, by), _mm_mul_ps(cy, bx));
            let v = _mm_sub_ps(_mm_mul_ps(ax, cy), _mm_mul_ps(ay, cx));
            let w = _mm_sub_ps(_mm_mul_ps(bx, ay), _mm_mul_ps(by, ax));
            let zero_ps = _mm_setzero_ps();
            let zero =
                _mm_or_ps(_mm_or_ps(_mm_cmpeq_ps(u, zero_ps), _mm_cmpeq_ps(v, zero_ps)), _mm_cmpeq_ps(w, zero_ps));
            let negative =
                _mm_or_ps(_mm_or_ps(_mm_cmplt_ps(u, zero_ps), _mm_cmplt_ps(v, zero_ps)), _mm_cmplt_ps(w, zero_ps));
            let positive =
                _mm_or_ps(_mm_or_ps(_mm_cmpgt_ps(u, zero_ps), _mm_cmpgt_ps(v, zero_ps)), _mm_cmpgt_ps(w, zero_ps));
            let det = _mm_add_ps(_mm_add_ps(u, v), w);
            let magnitude = _mm_andnot_ps(_mm_set1_ps(-0.0), det);
            let usable = _mm_and_ps(_mm_cmpneq_ps(det, zero_ps), _mm_cmplt_ps(magnitude, _mm_set1_ps(f32::INFINITY)));
            let along = _mm_add_ps(_mm_add_ps(_mm_mul_ps(u, az), _mm_mul_ps(v, bz)), _mm_mul_ps(w, cz));
            let t = _mm_div_ps(_mm_mul_ps(along, _mm_set1_ps(sz)), det);
            let within = _mm_and_ps(_mm_cmpge_ps(t, zero_ps), _mm_cmple_ps(t, _mm_set1_ps(best.t)));
            let hit = _mm_andnot_ps(_mm_or_ps(zero, _mm_and_ps(negative, positive)), _mm_and_ps(usable, within));
            let (mut ts, mut us, mut vs) = ([0.0f32; 4], [0.0f32; 4], [0.0f32; 4]);
            _mm_storeu_ps(ts.as_mut_ptr(), t);
            _mm_storeu_ps(us.as_mut_ptr(), _mm_div_ps(v, det));
            _mm_storeu_ps(vs.as_mut_ptr(), _mm_div_ps(w, det));
            (_mm_movemask_ps(hit) as u32, _mm_movemask_ps(zero) as u32, ts, us, vs)
        };
        let lanes = (1u32 << count) - 1;
        let (mut hit, zero) = (hit & lanes, zero & lanes);
        if hit == 0 && zero == 0 {
            return;
        }
        for lane in 0..count {
            let (t, u, v) = if zero & (1 << lane) != 0 {
                match shear.hit(block.triangle(lane), 0.0, best.t) {
                    Some(h) => (h.t, h.u, h.v),
                    None => continue,
                }
            } else if hit & (1 << lane) != 0 {
                hit &= !(1 << lane);
                (t[lane], u[lane], v[lane])
            } else {
                continue;
            };
            best.offer(t, self.source[4 * index + lane], u, v);
        }
    }

    /// Tests the triangles of leaf reference `leaf`, keeping the closest in `best`.
    #[cfg(not(target_arch = "x86_64"))]
    #[inline(always)]
    fn test_leaf(&self, leaf: u32, shear: &RayShear, best: &mut Best) {
        let index = ((leaf & !LEAF) >> 3) as usize;
        let count = (leaf & 7) as usize + 1;
        for lane in 0..count {
            if let Some(h) = shear.hit(self.leaves[index].triangle(lane), 0.0, best.t) {
                best.offer(h.t, self.source[4 * index + lane], h.u, h.v);
            }
        }
    }
}

/// The triangles of one leaf, by lane: rows `a.x, a.y, a.z, b.x, ..., c.z`, each
/// one value per triangle. Lanes past the leaf's count are zero.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[repr(C, align(16))]
struct LeafBlock {
    rows: [[f32; 4]; 9],
}

impl LeafBlock {
    fn triangle(&self, lane: usize) -> [Vec3; 3] {
        let r = &self.rows;
        std::array::from_fn(|k| Vec3::new(r[3 * k][lane], r[3 * k + 1][lane], r[3 * k + 2][lane]))
    }
}

/// One walk of a batch: its ray (`usize::MAX` for none), set-ups, closest hit, the
/// child reference it visits next and its stack.
struct Lane {
    ray: usize,
    shear: RayShear,
    walk: Walk,
    best: Best,
    next: u32,
    top: usize,
    stack: [MaybeUninit<(u32, f32)>; STACK],
}

impl Lane {
    fn idle() -> Lane {
        Lane {
            ray: usize::MAX,
            shear: RayShear::default(),
            walk: Walk::new(&Ray::new(Vec3::ZERO, Vec3::Y)),
            best: Best { t: 0.0, triangle: EMPTY, u: 0.0, v: 0.0 },
            next: 0,
            top: 0,
            stack: [MaybeUninit::uninit(); STACK],
        }
    }
}

/// One ray's walk through one tree, advanced a step at a time
/// ([`RayBvh::start_walk`], [`RayBvh::step_walk`]), so that a caller can keep many
/// in flight, each perhaps through another tree, as [`RayBvh::ray_closest_batch`]
/// keeps its walks: while one waits for memory the others step.
pub struct StepWalk {
    lane: Lane,
}

impl Default for StepWalk {
    fn default() -> StepWalk {
        StepWalk { lane: Lane::idle() }
    }
}

impl StepWalk {
    /// The closest hit so far: the walk's answer once [`RayBvh::step_walk`] has
    /// returned false.
    pub fn hit(&self) -> Option<MeshHit> {
        self.lane.best.hit()
    }
}

impl RayBvh {
    /// Starts `walk` on the ray of `aim` up to `max_t`, asking for the root's memory;
    /// false when there is nothing to walk (an empty tree, a `max_t` NaN or
    /// negative). Stepped to the end, the walk finds [`RayBvh::ray_closest`]'s hit.
    pub fn start_walk(&self, walk: &mut StepWalk, aim: &RayAim, max_t: f32) -> bool {
        if self.nodes.is_empty() || max_t.is_nan() || max_t < 0.0 {
            return false;
        }
        let lane = &mut walk.lane;
        (lane.ray, lane.shear, lane.walk) = (0, aim.shear, aim.walk);
        lane.best = Best { t: max_t, triangle: EMPTY, u: 0.0, v: 0.0 };
        (lane.next, lane.top) = (0, 0);
        self.prefetch(0);
        true
    }

    /// One step of `walk` (started on this tree): a node's four boxes or a leaf's
    /// triangles. False when the walk is over.
    #[inline]
    pub fn step_walk(&self, walk: &mut StepWalk) -> bool {
        self.step(&mut walk.lane)
    }
}

/// A ray set up for the walks of several trees: the triangle test's shear and the
/// box tests' reciprocals, made once.
pub struct RayAim {
    shear: RayShear,
    walk: Walk,
}

impl RayAim {
    /// `None` for a non-finite origin or a zero or non-finite direction (no tree
    /// hits such a ray).
    pub fn new(ray: &Ray) -> Option<RayAim> {
        let shear = RayShear::new(ray).filter(|_| ray.origin.is_finite())?;
        Some(RayAim { shear, walk: Walk::new(ray) })
    }
}

/// The closest hit so far (`triangle` [`EMPTY`] for none).
struct Best {
    t: f32,
    triangle: u32,
    u: f32,
    v: f32,
}

impl Best {
    /// Keeps a hit at `t` (at most the current `t`) on mesh triangle `triangle` if
    /// it is closer, or as close and on a lower triangle.
    #[inline(always)]
    fn offer(&mut self, t: f32, triangle: u32, u: f32, v: f32) {
        if t < self.t || (t == self.t && triangle < self.triangle) {
            *self = Best { t, triangle, u, v };
        }
    }

    fn hit(&self) -> Option<MeshHit> {
        (self.triangle != EMPTY).then_some(MeshHit { t: self.t, triangle: self.triangle, u: self.u, v: self.v })
    }
}

/// A ray set up for node tests: origin and reciprocal direction per axis, and per
/// axis where in a node the near and far bounds lie (byte offsets of its `lo` or
/// `hi` row: the near bound is the maximum where the ray runs towards minus).
#[derive(Clone, Copy)]
#[repr(C, align(16))]
struct Walk {
    /// Per axis, in all four lanes (loaded as they are by the box tests).
    origin: [[f32; 4]; 3],
    inv: [[f32; 4]; 3],
    near: [usize; 3],
    far: [usize; 3],
}

impl Walk {
    fn new(ray: &Ray) -> Walk {
        // A zero component's reciprocal is infinite: a bound through the origin
        // then gives NaN, which the slab test's `max` and `min` pass over (the slab
        // holds the whole ray), and any other bound an infinity (all of it or none).
        // A huge finite stand-in would cull boxes whose entry lies beyond it divided
        // by the bound's distance: a ray from 1e30 m back to a mesh.
        let inv = ray.dir.to_array().map(|d| 1.0 / d);
        let negative = inv.map(|r| r < 0.0);
        let (lo, hi) = (std::mem::offset_of!(Node, lo), std::mem::offset_of!(Node, hi));
        let row = |axis: usize, max: bool| if max { hi } else { lo } + 4 * axis;
        Walk {
            origin: ray.origin.to_array().map(|o| [o; 4]),
            inv: inv.map(|r| [r; 4]),
            near: std::array::from_fn(|a| row(a, negative[a])),
            far: std::array::from_fn(|a| row(a, !negative[a])),
        }
    }

    /// The children of `node` whose boxes the ray meets before `max_t`, nearest
    /// first, with their entry distances, and how many there are.
    ///
    /// The order comes from a sorting network on one 32-bit key per child: the
    /// entry distance's bits (not negative, so they order as the distances do) with
    /// the child's slot in the two lowest bits, a miss all ones. The distance
    /// handed on loses those two bits, so it is at most the true one and prunes
    /// no box the true one would keep; equal distances keep slot order.
    #[inline(always)]
    fn node(&self, node: &Node, max_t: f32) -> ([(u32, f32); 4], usize) {
        let (mask, [mut a, mut b, mut c, mut d]) = self.slabs(node, max_t);
        let swap = |x: &mut u32, y: &mut u32| (*x, *y) = ((*x).min(*y), (*x).max(*y));
        swap(&mut a, &mut b);
        swap(&mut c, &mut d);
        swap(&mut a, &mut c);
        swap(&mut b, &mut d);
        swap(&mut b, &mut c);
        let entry = |k: u32| (node.children[(k & 3) as usize], f32::from_bits(k & !3));
        ([entry(a), entry(b), entry(c), entry(d)], mask.count_ones() as usize)
    }

    /// The slab test of the four child boxes: the mask of boxes met in `[0, max_t]`
    /// and each child's sort key (see [`Walk::node`]).
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    fn slabs(&self, node: &Node, max_t: f32) -> (u32, [u32; 4]) {
        use std::arch::x86_64::*;
        // SAFETY: SSE2 is part of the x86-64 baseline; every load reads `node`'s
        // own fields (`near` and `far` are offsets of its `lo` and `hi` rows).
        unsafe {
            let zero = _mm_setzero_si128();
            let bytes = (node as *const Node).cast::<u8>();
            let decode = |offset: usize, axis: usize| {
                let v = _mm_cvtsi32_si128(bytes.add(offset).cast::<i32>().read_unaligned());
                let v = _mm_unpacklo_epi16(_mm_unpacklo_epi8(v, zero), zero);
                _mm_add_ps(
                    _mm_mul_ps(_mm_cvtepi32_ps(v), _mm_set1_ps(node.scale[axis])),
                    _mm_set1_ps(node.origin[axis]),
                )
            };
            let mut enter = _mm_setzero_ps();
            let mut exit_box = _mm_set1_ps(f32::INFINITY);
            for axis in 0..3 {
                let o = _mm_load_ps(self.origin[axis].as_ptr());
                let inv = _mm_load_ps(self.inv[axis].as_ptr());
                // `max` and `min` return their second operand on a NaN or equal
                // zeros: the entry stays a non-negative number.
                enter = _mm_max_ps(_mm_mul_ps(_mm_sub_ps(decode(self.near[axis], axis), o), inv), enter);
                exit_box = _mm_min_ps(_mm_mul_ps(_mm_sub_ps(decode(self.far[axis], axis), o), inv), exit_box);
            }
            let exit = _mm_mul_ps(_mm_min_ps(_mm_set1_ps(max_t), exit_box), _mm_set1_ps(EXIT_SCALE));
            let children = _mm_loadu_si128(node.children.as_ptr().cast());
            let met = _mm_andnot_si128(
                _mm_cmpeq_epi32(children, _mm_set1_epi32(-1)),
                _mm_castps_si128(_mm_cmple_ps(enter, exit)),
            );
            let slots = _mm_set_epi32(3, 2, 1, 0);
            let key = _mm_or_si128(_mm_and_si128(_mm_castps_si128(enter), _mm_set1_epi32(!3)), slots);
            let key = _mm_or_si128(key, _mm_andnot_si128(met, _mm_set1_epi32(-1)));
            let mut out = [0u32; 4];
            _mm_storeu_si128(out.as_mut_ptr().cast(), key);
            (_mm_movemask_ps(_mm_castsi128_ps(met)) as u32, out)
        }
    }

    /// The slab test of the four child boxes (see the x86-64 version).
    #[cfg(not(target_arch = "x86_64"))]
    #[inline(always)]
    fn slabs(&self, node: &Node, max_t: f32) -> (u32, [u32; 4]) {
        let mut enter = [0.0f32; 4];
        let mut exit_box = [f32::INFINITY; 4];
        // SAFETY: `near` and `far` are offsets of four-byte rows of `node`.
        let row = |offset: usize| unsafe { (node as *const Node).cast::<u8>().add(offset).cast::<[u8; 4]>().read() };
        for axis in 0..3 {
            let (near, far) = (row(self.near[axis]), row(self.far[axis]));
            for c in 0..4 {
                let decode = |q: u8| q as f32 * node.scale[axis] + node.origin[axis];
                let n = (decode(near[c]) - self.origin[axis][c]) * self.inv[axis][c];
                let f = (decode(far[c]) - self.origin[axis][c]) * self.inv[axis][c];
                enter[c] = if n > enter[c] { n } else { enter[c] };
                exit_box[c] = if f < exit_box[c] { f } else { exit_box[c] };
            }
        }
        let (mut mask, mut keys) = (0, [u32::MAX; 4]);
        for c in 0..4 {
            let exit = if max_t < exit_box[c] { max_t } else { exit_box[c] } * EXIT_SCALE;
            if enter[c] <= exit && node.children[c] != EMPTY {
                mask |= 1 << c;
                keys[c] = (enter[c].to_bits() & !3) | c as u32;
            }
        }
        (mask, keys)
    }
}
