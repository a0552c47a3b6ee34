//! The closest-hit batch of [`KdMesh::ray_closest_batch`](super::KdMesh::ray_closest_batch)
//! on full meshes where the CPU has AVX2: [`LANES`] rays a step.
//!
//! The interleaved batch of the scalar walk steps one ray at a time, and each step
//! costs about 130 instructions: it is bound by its instruction count, not by the
//! memory it waits for. Here a *group* of [`LANES`] walks steps together, one ray
//! per vector lane: the nodes are gathered, decoded and clipped as one set of AVX2
//! instructions; each lane then pushes its far child (a 16-byte store to its own
//! stack) or pops its next segment (gathered). [`GROUPS`] groups step in turn, and a
//! step prefetches the nodes its group reads next, so one group's misses are under
//! way while the others step.
//!
//! A leaf whose range the segment meets is queued, and its triangles are fetched
//! over two rounds (their indices, then their vertices) and tested on the third,
//! [`LANES`] triangles at a time (any rays), with the operations of the single
//! walk's triangle test; a triangle whose edge function comes out zero goes to that
//! test itself, which redoes it in `f64`. The lane walks on meanwhile, and takes its
//! next ray only once its queued leaves are tested.
//!
//! **Measured** (`kd_build 3 rays`, alternating binaries; the host is noisy): on the
//! bench's 1M-triangle mesh 1.25-1.35 µs per ray for the scalar batch, 0.87-1.18 for
//! this one; where the tree stays cached (`KD_SIZE=60`) 0.41 -> 0.30, and 0.28 with
//! the triangle tests in vector lanes (no change on the 1M mesh, whose tests wait on
//! memory). Gathers cost about 10 cycles each here, yet loading the nodes and stack
//! entries lane by lane and transposing them measured slower (1.11 vs 0.96 µs).
//! The single walk prefetches a far child when it pushes it; here that cost more
//! than it saved (the child is read only after the near subtree, and 32 walks
//! already keep the memory system busy): without it 0.80-0.85 -> 0.73-0.77 µs per
//! ray on the 1M mesh, 0.275 -> 0.249 cached (alternating binaries, three rounds
//! each).
//!
//! **Same hits.** A step computes what the single walk computes for the node, with
//! the same operations (no fused multiply-adds; `max` and `min` with `f32::max`'s
//! NaN rule), so every segment is the same bits. What may differ is how soon a hit
//! in a queued leaf prunes the segments still to come. Pruning drops only segments
//! that start beyond a hit already found, and the triangle test accepts
//! `t == max_t`, so the closest hit (the lower triangle on equal `t`) does not
//! depend on the order of the tests.

use std::arch::x86_64::*;

use super::{keep_closest, Full, MeshHit, Storage, Walk, STACK_SIZE};
use crate::math::{Aabb, Ray, RayShear, TriangleHit};

/// Walks stepped together: one AVX2 vector of 32-bit lanes.
const LANES: usize = 8;
/// Groups stepped in turn, so that one group's memory arrives while the others step.
const GROUPS: usize = 4;
/// A lane without a ray.
const NO_RAY: u32 = u32::MAX;

/// One value per lane, aligned for vector loads and stores.
#[derive(Clone, Copy)]
#[repr(C, align(32))]
struct Lanes<T>([T; LANES]);

/// A leaf queued for its triangle tests: `count` triangles from `first`, for lane
/// `lane` of group `group`.
#[derive(Clone, Copy, Default)]
struct Leaf {
    group: u32,
    lane: u32,
    first: u32,
    count: u32,
}

/// [`LANES`] walks, quantities by lane.
#[derive(Clone)]
struct Group {
    /// The ray, per axis.
    origin: [Lanes<f32>; 3],
    dir: [Lanes<f32>; 3],
    inv_dir: [Lanes<f32>; 3],
    /// How far planes are widened (as in [`Walk::enter`]).
    eps: Lanes<f32>,
    /// The closest hit so far, or the batch's `max_t`.
    max_t: Lanes<f32>,
    /// The segment the next step visits, where `live` (all ones).
    node: Lanes<u32>,
    t0: Lanes<f32>,
    t1: Lanes<f32>,
    live: Lanes<u32>,
    top: Lanes<u32>,
    /// Leaves queued and not yet tested.
    pending: Lanes<u32>,
    /// The ray's index in the batch, or [`NO_RAY`].
    ray: Lanes<u32>,
    best: [Option<MeshHit>; LANES],
    shear: [RayShear; LANES],
    /// The triangle test's set-up ([`RayShear::parts`]), gathered by the vector
    /// triangle tests: the origin on the axes of ray space, the axes, the shear.
    ray_origin: [Lanes<f32>; 3],
    axes: [Lanes<u32>; 3],
    shear_factors: [Lanes<f32>; 3],
    /// Lane `i`'s stack is `stack[i * STACK_SIZE..]`: entries `(node, t0, t1, 0)`.
    stack: Vec<[u32; 4]>,
}

/// Whether the wide batch can walk `s`: the CPU has AVX2, the SIMD ceiling allows
/// it, and the gathers' 32-bit offsets reach every node, triangle and vertex.
pub(super) fn available(s: &Full) -> bool {
    let words = (i32::MAX / 3) as usize;
    std::is_x86_feature_detected!("avx2")
        && crate::math::simd_allows(crate::math::SimdLevel::Avx2)
        && s.nodes.len() < words
        && s.triangles.len() < words
        && s.vertices.len() < words
}

/// [`KdMesh::ray_closest_batch`](super::KdMesh::ray_closest_batch) on a full mesh.
///
/// # Safety
/// [`available`] must have returned `true` for `s`.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn closest_batch(s: &Full, bounds: &Aabb, rays: &[Ray], max_t: f32, hits: &mut [Option<MeshHit>]) {
    if s.nodes.is_empty() {
        // No triangles: no hits (and no node for idle lanes to read).
        hits.fill(None);
        return;
    }
    let mut groups = vec![Group::new(); GROUPS];
    let mut queues: [Vec<Leaf>; 3] = std::array::from_fn(|_| Vec::with_capacity(GROUPS * LANES));
    let mut scratch = Walk::new();
    let mut next = 0;
    let mut round = 0;
    loop {
        // Leaves queued two rounds ago are tested, those of the last round have
        // their vertices fetched, and this round's their indices.
        let [tested, fetched, filled] = [(round + 1) % 3, (round + 2) % 3, round % 3];
        // SAFETY: `available` checked the CPU and the array sizes.
        unsafe { test_leaves(s, &mut groups, &queues[tested], max_t) };
        queues[tested].clear();
        for leaf in &queues[fetched] {
            s.prefetch_vertices(leaf.first, leaf.count);
        }
        let mut busy = false;
        for (g, group) in groups.iter_mut().enumerate() {
            busy |= group.refill(bounds, rays, max_t, hits, &mut next, &mut scratch);
            // SAFETY: `available` checked the CPU and the node count.
            unsafe { group.step(s, g as u32, &mut queues[filled]) };
        }
        for leaf in &queues[filled] {
            s.prefetch_indices(leaf.first, leaf.count);
        }
        if !busy && queues.iter().all(Vec::is_empty) {
            break;
        }
        round += 1;
    }
}

impl Group {
    fn new() -> Group {
        Group {
            origin: [Lanes([0.0; LANES]); 3],
            dir: [Lanes([0.0; LANES]); 3],
            inv_dir: [Lanes([0.0; LANES]); 3],
            eps: Lanes([0.0; LANES]),
            max_t: Lanes([0.0; LANES]),
            node: Lanes([0; LANES]),
            t0: Lanes([0.0; LANES]),
            t1: Lanes([0.0; LANES]),
            live: Lanes([0; LANES]),
            top: Lanes([0; LANES]),
            pending: Lanes([0; LANES]),
            ray: Lanes([NO_RAY; LANES]),
            best: [None; LANES],
            shear: [RayShear::default(); LANES],
            ray_origin: [Lanes([0.0; LANES]); 3],
            axes: [Lanes([0; LANES]); 3],
            shear_factors: [Lanes([0.0; LANES]); 3],
            stack: vec![[0; 4]; LANES * STACK_SIZE],
        }
    }

    /// Hands the hits of finished walks out and starts the next rays in their lanes;
    /// `true` while a lane has a ray.
    fn refill(
        &mut self,
        bounds: &Aabb,
        rays: &[Ray],
        max_t: f32,
        hits: &mut [Option<MeshHit>],
        next: &mut usize,
        scratch: &mut Walk,
    ) -> bool {
        let mut busy = false;
        for i in 0..LANES {
            if self.live.0[i] == 0 && self.top.0[i] == 0 && self.pending.0[i] == 0 {
                self.start(i, bounds, rays, max_t, hits, next, scratch);
            }
            busy |= self.ray.0[i] != NO_RAY;
        }
        busy
    }

    /// Lane `i`'s walk is over: hands its hit out and starts the next ray that can hit
    /// the tree, if any.
    #[cold]
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    fn start(
        &mut self,
        i: usize,
        bounds: &Aabb,
        rays: &[Ray],
        max_t: f32,
        hits: &mut [Option<MeshHit>],
        next: &mut usize,
        w: &mut Walk,
    ) {
        if self.ray.0[i] != NO_RAY {
            hits[self.ray.0[i] as usize] = self.best[i];
            self.ray.0[i] = NO_RAY;
        }
        while *next < rays.len() {
            let r = *next;
            *next += 1;
            hits[r] = None;
            if !w.start(bounds, &rays[r], max_t) {
                continue;
            }
            // The walk's set-up, and its root segment popped as the walk pops it.
            // SAFETY: `start` pushed the root.
            let (node, t0, t1) = unsafe { w.stack[0].assume_init() };
            for axis in 0..3 {
                self.origin[axis].0[i] = w.origin[axis];
                self.dir[axis].0[i] = w.dir[axis];
                self.inv_dir[axis].0[i] = w.inv_dir[axis];
            }
            self.eps.0[i] = w.eps;
            self.max_t.0[i] = w.max_t;
            self.shear[i] = w.shear;
            let (origin, axes, shear) = w.shear.parts();
            for k in 0..3 {
                self.ray_origin[k].0[i] = origin[k];
                self.axes[k].0[i] = axes[k] as u32;
                self.shear_factors[k].0[i] = shear[k];
            }
            self.node.0[i] = node;
            self.t0.0[i] = t0;
            self.t1.0[i] = if w.max_t < t1 { w.max_t } else { t1 };
            self.live.0[i] = u32::MAX;
            self.top.0[i] = 0;
            self.ray.0[i] = r as u32;
            self.best[i] = None;
            return;
        }
    }

    /// One step of every live lane: its node, then its next segment.
    ///
    /// # Safety
    /// The CPU has AVX2, every lane's `node` is below `s.nodes.len()`, which is below
    /// `i32::MAX / 3`.
    #[target_feature(enable = "avx2")]
    #[inline]
    unsafe fn step(&mut self, s: &Full, group: u32, queue: &mut Vec<Leaf>) {
        // SAFETY: `Lanes` is one aligned vector.
        let ld = |v: &Lanes<f32>| unsafe { _mm256_load_ps(v.0.as_ptr()) };
        // SAFETY: as `ld`.
        let ldi = |v: &Lanes<u32>| unsafe { _mm256_load_si256(v.0.as_ptr().cast()) };
        let (ps, si) = (_mm256_castsi256_ps, _mm256_castps_si256);
        let pick = |axis0: __m256, axis1: __m256, v: [__m256; 3]| {
            _mm256_blendv_ps(_mm256_blendv_ps(v[2], v[1], axis1), v[0], axis0)
        };
        let lanes = |v: &[Lanes<f32>; 3]| [ld(&v[0]), ld(&v[1]), ld(&v[2])];

        // The nodes, gathered as three words each.
        let node = ldi(&self.node);
        let word = _mm256_add_epi32(node, _mm256_add_epi32(node, node));
        let base = s.nodes.as_ptr().cast::<i32>();
        // SAFETY: every lane's node is in the array (the caller's contract), so
        // its three words are.
        let (a, b, tag) = unsafe {
            (
                _mm256_i32gather_epi32::<4>(base, word),
                _mm256_i32gather_epi32::<4>(base.add(1), word),
                _mm256_i32gather_epi32::<4>(base.add(2), word),
            )
        };

        // Decode and clip, as `Walk::step` does for one node.
        let three = _mm256_set1_epi32(3);
        let is_leaf = _mm256_cmpeq_epi32(_mm256_and_si256(tag, three), three);
        let axis = _mm256_blendv_epi8(
            _mm256_and_si256(tag, three),
            _mm256_and_si256(_mm256_srli_epi32::<4>(tag), three),
            is_leaf,
        );
        let axis0 = ps(_mm256_cmpeq_epi32(axis, _mm256_setzero_si256()));
        let axis1 = ps(_mm256_cmpeq_epi32(axis, _mm256_set1_epi32(1)));
        let is_leaf = ps(is_leaf);
        let o = pick(axis0, axis1, lanes(&self.origin));
        let d = pick(axis0, axis1, lanes(&self.dir));
        let inv = pick(axis0, axis1, lanes(&self.inv_dir));
        let (eps, t0, t1) = (ld(&self.eps), ld(&self.t0), ld(&self.t1));
        // A branch's two planes, or a leaf's range (both widened).
        let splat = |v: glam::Vec3| [_mm256_set1_ps(v.x), _mm256_set1_ps(v.y), _mm256_set1_ps(v.z)];
        let (qo, q) = (pick(axis0, axis1, splat(s.origin)), pick(axis0, axis1, splat(s.quantum)));
        let low_step = _mm256_and_si256(b, _mm256_set1_epi32(0xffff));
        let high_step = _mm256_srli_epi32::<16>(b);
        let low = _mm256_add_ps(qo, _mm256_mul_ps(_mm256_cvtepi32_ps(low_step), q));
        let high = _mm256_blendv_ps(
            _mm256_add_ps(qo, _mm256_mul_ps(_mm256_cvtepi32_ps(high_step), q)),
            _mm256_set1_ps(f32::INFINITY),
            ps(_mm256_cmpeq_epi32(high_step, _mm256_set1_epi32(0xffff))),
        );
        let p0 = _mm256_blendv_ps(_mm256_add_ps(ps(a), eps), _mm256_sub_ps(low, eps), is_leaf);
        let p1 = _mm256_blendv_ps(_mm256_sub_ps(ps(b), eps), _mm256_add_ps(high, eps), is_leaf);
        let c0 = _mm256_mul_ps(_mm256_sub_ps(p0, o), inv);
        let c1 = _mm256_mul_ps(_mm256_sub_ps(p1, o), inv);
        let zero = _mm256_setzero_ps();
        let flat = _mm256_cmp_ps::<_CMP_EQ_OQ>(d, zero);
        // A leaf's range against the segment, with `f32::max` and `min` (a NaN
        // operand gives the other).
        let c1_nan = _mm256_cmp_ps::<_CMP_UNORD_Q>(c1, c1);
        let hi = _mm256_blendv_ps(_mm256_max_ps(c0, c1), c0, c1_nan);
        let lo = _mm256_blendv_ps(_mm256_min_ps(c0, c1), c0, c1_nan);
        let missed = _mm256_blendv_ps(
            _mm256_or_ps(_mm256_cmp_ps::<_CMP_LT_OQ>(hi, t0), _mm256_cmp_ps::<_CMP_GT_OQ>(lo, t1)),
            _mm256_or_ps(_mm256_cmp_ps::<_CMP_LT_OQ>(o, p0), _mm256_cmp_ps::<_CMP_GT_OQ>(o, p1)),
            flat,
        );
        // A branch's near and far child: left is `t <= c0` going up the axis; a ray
        // parallel to the planes takes the children its origin lies in, left first.
        let down = _mm256_cmp_ps::<_CMP_LT_OQ>(d, zero);
        let left = _mm256_add_epi32(node, _mm256_set1_epi32(1));
        let right = _mm256_srli_epi32::<2>(tag);
        let near = _mm256_blendv_epi8(left, right, si(down));
        let far = _mm256_blendv_epi8(right, left, si(down));
        let near_end = _mm256_blendv_ps(c0, c1, down);
        let far_start = _mm256_blendv_ps(c1, c0, down);
        let near_ok =
            _mm256_blendv_ps(_mm256_cmp_ps::<_CMP_NLT_UQ>(near_end, t0), _mm256_cmp_ps::<_CMP_LE_OQ>(o, p0), flat);
        let far_ok =
            _mm256_blendv_ps(_mm256_cmp_ps::<_CMP_LE_OQ>(far_start, t1), _mm256_cmp_ps::<_CMP_GE_OQ>(o, p1), flat);
        let near_t1 = _mm256_blendv_ps(t1, near_end, _mm256_andnot_ps(flat, _mm256_cmp_ps::<_CMP_LT_OQ>(near_end, t1)));
        let far_t0 =
            _mm256_blendv_ps(t0, far_start, _mm256_andnot_ps(flat, _mm256_cmp_ps::<_CMP_GT_OQ>(far_start, t0)));
        let live = ps(ldi(&self.live));
        let branch = _mm256_andnot_ps(is_leaf, live);
        let continues = _mm256_and_ps(branch, _mm256_or_ps(near_ok, far_ok));
        let push = _mm256_and_ps(branch, _mm256_and_ps(near_ok, far_ok));
        let leaf = _mm256_andnot_ps(missed, _mm256_and_ps(live, is_leaf));
        let next_node = _mm256_blendv_epi8(far, near, si(near_ok));
        let next_t0 = _mm256_blendv_ps(far_t0, t0, near_ok);
        let next_t1 = _mm256_blendv_ps(t1, near_t1, near_ok);

        // Every lane writes `(far, far_t0, t1)` on top of its stack; a push keeps it.
        let top = ldi(&self.top);
        debug_assert!(self.top.0.iter().all(|&t| (t as usize) < STACK_SIZE), "the depth bounds the stacks");
        let lane_base =
            _mm256_mullo_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32(STACK_SIZE as i32));
        let mut slot = Lanes([0u32; LANES]);
        // SAFETY: an aligned store of one vector into `slot`.
        unsafe { _mm256_store_si256(slot.0.as_mut_ptr().cast(), _mm256_add_epi32(lane_base, top)) };
        let (x0, x1) = (_mm256_unpacklo_ps(ps(far), far_t0), _mm256_unpackhi_ps(ps(far), far_t0));
        let (y0, y1) = (_mm256_unpacklo_ps(t1, zero), _mm256_unpackhi_ps(t1, zero));
        let rows = [
            _mm256_shuffle_ps::<0x44>(x0, y0),
            _mm256_shuffle_ps::<0xee>(x0, y0),
            _mm256_shuffle_ps::<0x44>(x1, y1),
            _mm256_shuffle_ps::<0xee>(x1, y1),
        ];
        let stack = self.stack.as_mut_ptr().cast::<f32>();
        for (i, row) in rows.into_iter().enumerate() {
            // SAFETY: the tree's depth bounds every stack below `STACK_SIZE` entries,
            // so slot `i * STACK_SIZE + top` lies in lane `i`'s stack.
            unsafe {
                _mm_storeu_ps(stack.add(slot.0[i] as usize * 4), _mm256_castps256_ps128(row));
                _mm_storeu_ps(stack.add(slot.0[i + 4] as usize * 4), _mm256_extractf128_ps::<1>(row));
            }
        }
        let top = _mm256_sub_epi32(top, si(push));
        // Lanes that do not go on pop their next segment (when they have one).
        let pops = _mm256_andnot_ps(continues, ps(_mm256_cmpgt_epi32(top, _mm256_setzero_si256())));
        let under = _mm256_max_epi32(_mm256_sub_epi32(top, _mm256_set1_epi32(1)), _mm256_setzero_si256());
        let word = _mm256_slli_epi32::<2>(_mm256_add_epi32(lane_base, under));
        let words = self.stack.as_ptr().cast::<i32>();
        // SAFETY: `under` is in lane's stack.
        let (p_node, p_t0, p_t1) = unsafe {
            (
                _mm256_i32gather_epi32::<4>(words, word),
                ps(_mm256_i32gather_epi32::<4>(words.add(1), word)),
                ps(_mm256_i32gather_epi32::<4>(words.add(2), word)),
            )
        };
        let top = _mm256_add_epi32(top, si(pops));
        let max_t = ld(&self.max_t);
        // A popped segment is clipped to the closest hit, or dropped when it starts
        // beyond it: the lane then pops again on its next step.
        let p_t1 = _mm256_blendv_ps(p_t1, max_t, _mm256_cmp_ps::<_CMP_LT_OQ>(max_t, p_t1));
        let live = _mm256_or_ps(continues, _mm256_andnot_ps(_mm256_cmp_ps::<_CMP_GT_OQ>(p_t0, max_t), pops));
        // A lane that neither goes on nor pops keeps its node: the word gathered
        // from an empty stack is not one.
        let node = _mm256_blendv_epi8(_mm256_blendv_epi8(node, p_node, si(pops)), next_node, si(continues));
        // SAFETY: aligned stores into the group's lanes.
        unsafe {
            _mm256_store_si256(self.top.0.as_mut_ptr().cast(), top);
            _mm256_store_si256(self.live.0.as_mut_ptr().cast(), si(live));
            _mm256_store_si256(self.node.0.as_mut_ptr().cast(), node);
            _mm256_store_ps(self.t0.0.as_mut_ptr(), _mm256_blendv_ps(p_t0, next_t0, continues));
            _mm256_store_ps(self.t1.0.as_mut_ptr(), _mm256_blendv_ps(p_t1, next_t1, continues));
        }
        // Ask for the next nodes. (Not for the far children pushed, as the single
        // walk does: they are read only once the near subtree is done, and those
        // requests, with 32 walks in flight, cost more than they saved: 10% of the
        // batch, on the 1M-triangle mesh and where the tree stays cached.)
        for i in 0..LANES {
            s.prefetch(self.node.0[i]);
        }
        // Queue the leaves whose range the segment meets.
        let mut leaves = _mm256_movemask_ps(leaf);
        if leaves != 0 {
            let (mut first, mut tags) = (Lanes([0u32; LANES]), Lanes([0u32; LANES]));
            // SAFETY: aligned stores into `first` and `tags`.
            unsafe {
                _mm256_store_si256(first.0.as_mut_ptr().cast(), a);
                _mm256_store_si256(tags.0.as_mut_ptr().cast(), tag);
            }
            while leaves != 0 {
                let i = leaves.trailing_zeros() as usize;
                queue.push(Leaf { group, lane: i as u32, first: first.0[i], count: tags.0[i] >> 2 & 3 });
                self.pending.0[i] += 1;
                leaves &= leaves - 1;
            }
        }
    }
}

/// Up to [`LANES`] triangle tests: which walk (`group`, `lane`) tests which triangle.
#[derive(Default)]
struct Tests {
    group: [u32; LANES],
    lane: [u32; LANES],
    /// `group * GROUP_WORDS + lane`: a lane's word offset from group 0's.
    slot: Lanes<u32>,
    triangle: Lanes<u32>,
    len: usize,
}

impl Default for Lanes<u32> {
    fn default() -> Self {
        Lanes([0; LANES])
    }
}

/// A group's size in 32-bit words: the stride from one group's lanes to the next's.
const GROUP_WORDS: usize = std::mem::size_of::<Group>() / 4;

/// Tests the triangles of `leaves` and hands the hits to their walks, [`LANES`]
/// triangles at a time.
///
/// # Safety
/// [`available`] returned `true` for `s`; `leaves` are `s`'s.
#[target_feature(enable = "avx2")]
unsafe fn test_leaves(s: &Full, groups: &mut [Group], leaves: &[Leaf], max_t: f32) {
    let mut tests = Tests::default();
    for leaf in leaves {
        for t in leaf.first..leaf.first + leaf.count {
            let j = tests.len;
            tests.group[j] = leaf.group;
            tests.lane[j] = leaf.lane;
            tests.slot.0[j] = leaf.group * GROUP_WORDS as u32 + leaf.lane;
            tests.triangle.0[j] = t;
            tests.len += 1;
            if tests.len == LANES {
                // SAFETY: the caller's contract.
                unsafe { test_triangles(s, groups, &mut tests, max_t) };
            }
        }
        groups[leaf.group as usize].pending.0[leaf.lane as usize] -= 1;
    }
    if tests.len > 0 {
        // SAFETY: the caller's contract.
        unsafe { test_triangles(s, groups, &mut tests, max_t) };
    }
}

/// The first `tests.len` tests of `tests` (then empties it), as
/// [`RayShear::hit`] does them, with the same operations: an edge function of
/// zero, which `hit` recomputes in `f64`, leaves the lane to `hit` itself.
///
/// # Safety
/// As [`test_leaves`].
#[target_feature(enable = "avx2")]
unsafe fn test_triangles(s: &Full, groups: &mut [Group], tests: &mut Tests, max_t: f32) {
    let n = tests.len;
    for j in n..LANES {
        // Spare lanes repeat the first test; their results are not used.
        tests.slot.0[j] = tests.slot.0[0];
        tests.triangle.0[j] = tests.triangle.0[0];
    }
    tests.len = 0;
    let ps = _mm256_castsi256_ps;
    // SAFETY: `Lanes` is one aligned vector.
    let (slot, triangle) = unsafe {
        (_mm256_load_si256(tests.slot.0.as_ptr().cast()), _mm256_load_si256(tests.triangle.0.as_ptr().cast()))
    };
    let base = groups.as_ptr().cast::<u8>();
    // Lane words of the groups' fields: `slot` reaches into the group it names.
    // SAFETY: every slot is a lane of a group in `groups`.
    let lanes = |offset: usize| unsafe { _mm256_i32gather_epi32::<4>(base.add(offset).cast(), slot) };
    let ray = |offset: usize, k: usize| lanes(offset + k * std::mem::size_of::<Lanes<u32>>());
    let origin = [0, 1, 2].map(|k| ps(ray(std::mem::offset_of!(Group, ray_origin), k)));
    let axes = [0, 1, 2].map(|k| ray(std::mem::offset_of!(Group, axes), k));
    let [sx, sy, sz] = [0, 1, 2].map(|k| ps(ray(std::mem::offset_of!(Group, shear_factors), k)));
    let limit = ps(lanes(std::mem::offset_of!(Group, max_t)));
    // The corners, on the axes of ray space, relative to the origin.
    let word = _mm256_add_epi32(triangle, _mm256_add_epi32(triangle, triangle));
    let indices = s.triangles.as_ptr().cast::<i32>();
    let vertices = s.vertices.as_ptr().cast::<f32>();
    let corner = |c: usize| {
        // SAFETY: every triangle is in the mesh, every vertex index too.
        let v = unsafe { _mm256_i32gather_epi32::<4>(indices.add(c), word) };
        let v = _mm256_add_epi32(v, _mm256_add_epi32(v, v));
        // SAFETY: as above.
        let p = |k: usize| unsafe { _mm256_i32gather_ps::<4>(vertices, _mm256_add_epi32(v, axes[k])) };
        [0, 1, 2].map(|k| _mm256_sub_ps(p(k), origin[k]))
    };
    let (pa, pb, pc) = (corner(0), corner(1), corner(2));
    let shear =
        |p: [__m256; 3]| (_mm256_sub_ps(p[0], _mm256_mul_ps(sx, p[2])), _mm256_sub_ps(p[1], _mm256_mul_ps(sy, p[2])));
    let ((ax, ay), (bx, by), (cx, cy)) = (shear(pa), shear(pb), shear(pc));
    let edge = |a: __m256, b: __m256, c: __m256, d: __m256| _mm256_sub_ps(_mm256_mul_ps(a, b), _mm256_mul_ps(c, d));
    let (u, v, w) = (edge(cx, by, cy, bx), edge(ax, cy, ay, cx), edge(bx, ay, by, ax));
    let zero = _mm256_setzero_ps();
    let any = |a: __m256, b: __m256, c: __m256| _mm256_or_ps(_mm256_or_ps(a, b), c);
    let cmp_eq = |a: __m256| _mm256_cmp_ps::<_CMP_EQ_OQ>(a, zero);
    let (below, above) =
        (|a: __m256| _mm256_cmp_ps::<_CMP_LT_OQ>(a, zero), |a: __m256| _mm256_cmp_ps::<_CMP_GT_OQ>(a, zero));
    let flat = any(cmp_eq(u), cmp_eq(v), cmp_eq(w));
    let outside = _mm256_and_ps(any(below(u), below(v), below(w)), any(above(u), above(v), above(w)));
    let det = _mm256_add_ps(_mm256_add_ps(u, v), w);
    let magnitude = _mm256_andnot_ps(_mm256_set1_ps(-0.0), det);
    let proper = _mm256_and_ps(
        _mm256_cmp_ps::<_CMP_NEQ_OQ>(det, zero),
        _mm256_cmp_ps::<_CMP_LT_OQ>(magnitude, _mm256_set1_ps(f32::INFINITY)),
    );
    let sum = _mm256_add_ps(_mm256_add_ps(_mm256_mul_ps(u, pa[2]), _mm256_mul_ps(v, pb[2])), _mm256_mul_ps(w, pc[2]));
    let t = _mm256_div_ps(_mm256_mul_ps(sum, sz), det);
    let within = _mm256_and_ps(_mm256_cmp_ps::<_CMP_GE_OQ>(t, zero), _mm256_cmp_ps::<_CMP_LE_OQ>(t, limit));
    let hit = _mm256_andnot_ps(outside, _mm256_and_ps(proper, within));
    let (mut ts, mut us, mut vs) = (Lanes([0.0; LANES]), Lanes([0.0; LANES]), Lanes([0.0; LANES]));
    // SAFETY: aligned stores into `Lanes`.
    unsafe {
        _mm256_store_ps(ts.0.as_mut_ptr(), t);
        _mm256_store_ps(us.0.as_mut_ptr(), _mm256_div_ps(v, det));
        _mm256_store_ps(vs.0.as_mut_ptr(), _mm256_div_ps(w, det));
    }
    let used = (1 << n) - 1;
    let (flat, hit) = (_mm256_movemask_ps(flat) & used, _mm256_movemask_ps(_mm256_andnot_ps(flat, hit)) & used);
    for j in 0..n {
        let (g, i, triangle) = (tests.group[j] as usize, tests.lane[j] as usize, tests.triangle.0[j]);
        let walk = &mut groups[g];
        let found = if flat >> j & 1 != 0 {
            walk.shear[i].hit(s.triangle(triangle), 0.0, walk.max_t.0[i])
        } else if hit >> j & 1 != 0 {
            Some(TriangleHit { t: ts.0[j], u: us.0[j], v: vs.0[j] })
        } else {
            None
        };
        if let Some(h) = found {
            let hit = MeshHit { t: h.t, triangle, u: h.u, v: h.v };
            walk.max_t.0[i] = keep_closest(&mut walk.best[i], hit, max_t);
        }
    }
}
