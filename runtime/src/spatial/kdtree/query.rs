//! The kD tree's queries: box queries, single ray walks (closest, any, all), and the
//! interleaved batch of closest-hit walks ([`RAY_LANES`] in flight on one thread).

use super::*;

pub(super) fn query_aabb<S: Storage>(
    s: &S,
    bounds: &Aabb,
    aabb: &Aabb,
    exact: bool,
    mut visit: impl FnMut(u32) -> bool,
) {
    if !bounds.is_valid() || !aabb.is_valid() || !bounds.overlaps(aabb) {
        return;
    }
    // Entries below `top` are written; the rest are not read. Uninitialised, so a
    // query of a small chunk tree does not first clear 392 bytes.
    let mut stack = [MaybeUninit::<u32>::uninit(); STACK_SIZE];
    stack[0] = MaybeUninit::new(0);
    let mut top = 1;
    // The box per axis as arrays indexed by `axis & 3`: no bounds checks or branches
    // for the axis in the loop (glam indexes a vector by matching on the index).
    let (lo, hi) = (aabb.min.extend(0.0).to_array(), aabb.max.extend(0.0).to_array());
    while top > 0 {
        top -= 1;
        // SAFETY: every entry below `top` was written.
        let index = unsafe { stack[top].assume_init() };
        match s.node(index) {
            Node::Branch { axis, split0, split1, child } => {
                if split1 <= hi[axis & 3] {
                    stack[top] = MaybeUninit::new(child);
                    top += 1;
                }
                if split0 >= lo[axis & 3] {
                    stack[top] = MaybeUninit::new(index + 1);
                    top += 1;
                }
            }
            Node::Leaf { first, count, axis, low, high } => {
                if hi[axis & 3] < low || lo[axis & 3] > high {
                    continue;
                }
                for t in first..first + count {
                    let v = s.triangle(t);
                    let touches = if exact {
                        triangle_overlaps_aabb(v, aabb)
                    } else {
                        // The triangle's own box: a cheap superset for callers that
                        // test the triangle exactly themselves.
                        let (min, max) = (v[0].min(v[1]).min(v[2]), v[0].max(v[1]).max(v[2]));
                        min.cmple(aabb.max).all() && max.cmpge(aabb.min).all()
                    };
                    if touches && !visit(t) {
                        return;
                    }
                }
            }
        }
    }
}

/// Keeps the closer of `hit` and `best` (on equal `t` the lower triangle index) and
/// returns the new maximum `t`: the visitor of closest-hit queries.
#[inline]
pub(super) fn keep_closest(best: &mut Option<MeshHit>, hit: MeshHit, max_t: f32) -> f32 {
    if best.is_none_or(|b| hit.t < b.t || (hit.t == b.t && hit.triangle < b.triangle)) {
        *best = Some(hit);
    }
    best.map_or(max_t, |b| b.t)
}

pub(super) fn ray_cast<S: Storage>(s: &S, bounds: &Aabb, ray: &Ray, max_t: f32, mut visit: impl FnMut(MeshHit) -> f32) {
    let mut walk = Walk::new();
    if walk.start(bounds, ray, max_t) {
        while !walk.done() {
            walk.step::<S, false>(s, &mut visit);
        }
    }
}

/// One ray's closest-hit walk carried from tree to tree: [`TreeWalk::aim`] does the
/// ray's set-up once (the triangle test's shear, the components), then each tree
/// costs its box test and its nodes. A terrain ray cast walks the chunk trees along
/// its ray with one; a batch of them interleaves their steps.
pub(crate) struct TreeWalk {
    pub(super) walk: Walk,
    pub(super) best: Option<MeshHit>,
    pub(super) max_t: f32,
}

impl TreeWalk {
    pub(crate) fn new() -> TreeWalk {
        TreeWalk { walk: Walk::new(), best: None, max_t: 0.0 }
    }

    /// Sets up `ray` for the trees to come; `false` for a ray no triangle can hit.
    pub(crate) fn aim(&mut self, ray: &Ray) -> bool {
        self.walk.top = 0;
        self.walk.fetch = Fetch::Idle;
        self.walk.aim(ray)
    }

    /// Starts the walk of `mesh`'s tree for hits up to `max_t`, as
    /// [`KdMesh::ray_closest`] would; `false` (and done) when the ray misses its box.
    pub(crate) fn enter(&mut self, mesh: &KdMesh, max_t: f32) -> bool {
        self.best = None;
        self.max_t = max_t;
        self.walk.enter(&mesh.bounds, max_t)
    }

    /// Asks for the root node of `mesh` (the tree just entered) ahead of its first step.
    pub(crate) fn prefetch_root(&self, mesh: &KdMesh) {
        match &mesh.repr {
            Repr::Full(f) => f.prefetch(0),
            Repr::Compact(c) => c.prefetch(0),
        }
    }

    pub(crate) fn done(&self) -> bool {
        self.walk.done()
    }

    /// One interleaved step of the walk of `mesh`, the tree last entered (see
    /// [`Walk::step`]).
    pub(crate) fn step(&mut self, mesh: &KdMesh) {
        let max_t = self.max_t;
        let visit = &mut |hit| keep_closest(&mut self.best, hit, max_t);
        match &mesh.repr {
            Repr::Full(f) => self.walk.step::<Full, true>(f, visit),
            Repr::Compact(c) => self.walk.step::<Compact, true>(c, visit),
        }
    }

    /// Walks `mesh`, the tree last entered, to the end without interleaving:
    /// the same steps as [`KdMesh::ray_closest`].
    pub(crate) fn finish(&mut self, mesh: &KdMesh) {
        fn run<S: Storage>(w: &mut TreeWalk, s: &S) {
            let max_t = w.max_t;
            let visit = &mut |hit| keep_closest(&mut w.best, hit, max_t);
            while !w.walk.done() {
                w.walk.step::<S, false>(s, visit);
            }
        }
        match &mesh.repr {
            Repr::Full(f) => run(self, f),
            Repr::Compact(c) => run(self, c),
        }
    }

    /// The closest hit in the tree walked (once [`TreeWalk::done`]).
    pub(crate) fn best(&self) -> Option<MeshHit> {
        self.best
    }
}

/// Rays interleaved by [`KdMesh::ray_closest_batch`]: enough walks in flight to
/// cover a trip to memory with the others' steps.
pub const RAY_LANES: usize = 8;

pub(super) fn closest_batch<S: Storage>(s: &S, bounds: &Aabb, rays: &[Ray], max_t: f32, hits: &mut [Option<MeshHit>]) {
    struct Lane {
        walk: Walk,
        ray: usize,
        best: Option<MeshHit>,
    }
    let mut lanes: [Lane; RAY_LANES] = std::array::from_fn(|_| Lane { walk: Walk::new(), ray: usize::MAX, best: None });
    let mut next = 0;
    let mut busy = true;
    while busy {
        busy = false;
        for lane in &mut lanes {
            if lane.walk.done() {
                if lane.ray != usize::MAX {
                    hits[lane.ray] = lane.best;
                    lane.ray = usize::MAX;
                }
                while next < rays.len() && lane.ray == usize::MAX {
                    hits[next] = None;
                    if lane.walk.start(bounds, &rays[next], max_t) {
                        lane.ray = next;
                        lane.best = None;
                    }
                    next += 1;
                }
                if lane.ray == usize::MAX {
                    continue;
                }
            }
            busy = true;
            let best = &mut lane.best;
            lane.walk.step::<S, true>(s, &mut |hit| keep_closest(best, hit, max_t));
        }
    }
}

/// Where an interleaved walk is with a leaf whose range the segment meets: its
/// triangles are fetched over two steps (their indices, then their vertices) and
/// tested on the third.
#[derive(Clone, Copy)]
pub(super) enum Fetch {
    Idle,
    Indices { first: u32, count: u32 },
    Vertices { first: u32, count: u32 },
}

/// One ray's segment walk, resumable a node at a time: a stack of `(node, t_min,
/// t_max)` segments, near child on top.
pub(super) struct Walk {
    pub(super) shear: RayShear,
    /// Per axis as arrays indexed by `axis & 3`: no bounds checks or branches for the
    /// axis in the loop (glam indexes a vector by matching on the index).
    pub(super) origin: [f32; 4],
    pub(super) dir: [f32; 4],
    pub(super) inv_dir: [f32; 4],
    /// How far planes are widened (see [`Walk::start`]).
    pub(super) eps: f32,
    /// Largest `t` still of interest (the visitor lowers it).
    pub(super) max_t: f32,
    pub(super) top: usize,
    pub(super) fetch: Fetch,
    /// Entries below `top` are written; the rest are not read. Left uninitialised so
    /// a walk through a small chunk tree does not first clear 1.2 KB (8% of the
    /// terrain's ray cost).
    pub(super) stack: [MaybeUninit<(u32, f32, f32)>; STACK_SIZE],
}

impl Walk {
    /// A walk that is done.
    pub(super) fn new() -> Walk {
        Walk {
            shear: RayShear::default(),
            origin: [0.0; 4],
            dir: [0.0; 4],
            inv_dir: [0.0; 4],
            eps: 0.0,
            max_t: 0.0,
            top: 0,
            fetch: Fetch::Idle,
            stack: [MaybeUninit::uninit(); STACK_SIZE],
        }
    }

    /// Starts walking `ray` up to `max_t` from the root; `false` (and done) when the
    /// ray cannot hit the tree.
    pub(super) fn start(&mut self, bounds: &Aabb, ray: &Ray, max_t: f32) -> bool {
        self.top = 0;
        self.fetch = Fetch::Idle;
        self.aim(ray) && self.enter(bounds, max_t)
    }

    /// The per-ray part of [`Walk::start`]: the triangle test's set-up and the ray's
    /// components. `false` for a ray no triangle can hit.
    pub(super) fn aim(&mut self, ray: &Ray) -> bool {
        if !ray.is_valid() {
            return false;
        }
        let Some(shear) = RayShear::new(ray) else { return false };
        self.shear = shear;
        self.origin = ray.origin.extend(0.0).to_array();
        self.dir = ray.dir.extend(0.0).to_array();
        self.inv_dir = ray.inv_dir.extend(0.0).to_array();
        true
    }

    /// The per-tree part of [`Walk::start`], for the ray of the last [`Walk::aim`]:
    /// clips it to the tree's box and pushes the root; `false` (and done) on a miss.
    pub(super) fn enter(&mut self, bounds: &Aabb, max_t: f32) -> bool {
        self.top = 0;
        self.fetch = Fetch::Idle;
        if !bounds.is_valid() || max_t.is_nan() || max_t < 0.0 {
            return false;
        }
        // Widen planes by a margin relative to the distances involved, and by a few
        // ulps of the coordinates themselves: far from the origin (10 km) the first
        // alone rounds away when added to a plane.
        let (lo, hi, o) = (Vec3A::from(bounds.min), Vec3A::from(bounds.max), Vec3A::from_slice(&self.origin));
        let reach = (hi - o).abs().max((lo - o).abs()).max_element();
        let magnitude = lo.abs().max(hi.abs()).max(o.abs()).max_element();
        self.eps = 1e-5 * ((hi - lo).max_element() + reach) + 4.0 * f32::EPSILON * magnitude + f32::MIN_POSITIVE;
        let ray = Ray {
            origin: Vec3::from_slice(&self.origin),
            dir: Vec3::from_slice(&self.dir),
            inv_dir: Vec3::from_slice(&self.inv_dir),
        };
        let Some((t_root, t_exit)) = ray.clip(&bounds.expanded(self.eps), max_t) else { return false };
        self.max_t = max_t;
        self.push((0, t_root, t_exit));
        true
    }

    #[inline(always)]
    pub(super) fn push(&mut self, entry: (u32, f32, f32)) {
        self.stack[self.top] = MaybeUninit::new(entry);
        self.top += 1;
    }

    #[inline]
    pub(super) fn done(&self) -> bool {
        self.top == 0 && matches!(self.fetch, Fetch::Idle)
    }

    /// One step: the next node whose segment is still of interest, or one stage of
    /// a leaf's fetch; plain (not `INTERLEAVED`) walks run to the end in one step.
    /// `visit(hit)` returns the new maximum `t`; a negative one ends the walk.
    /// `INTERLEAVED` walks prefetch what their next step reads and fetch triangles
    /// in stages; plain walks test them at once.
    #[inline(always)]
    pub(super) fn step<S: Storage, const INTERLEAVED: bool>(&mut self, s: &S, visit: &mut impl FnMut(MeshHit) -> f32) {
        if INTERLEAVED {
            match self.fetch {
                Fetch::Idle => {}
                Fetch::Indices { first, count } => {
                    s.prefetch_vertices(first, count);
                    self.fetch = Fetch::Vertices { first, count };
                    return;
                }
                Fetch::Vertices { first, count } => {
                    self.fetch = Fetch::Idle;
                    self.test(s, first, count, visit);
                    return;
                }
            }
        }
        let (origin, dir, inv_dir, eps) = (self.origin, self.dir, self.inv_dir, self.eps);
        // `top` stays in a register through the loop (as a field, every write to
        // the stack reloaded it).
        let mut top = self.top;
        'pop: while top > 0 {
            top -= 1;
            // SAFETY: every entry below `top` was written.
            let (mut index, t0, t1) = unsafe { self.stack[top].assume_init() };
            if t0 > self.max_t {
                continue;
            }
            let mut t1 = if self.max_t < t1 { self.max_t } else { t1 };
            loop {
                match s.node(index) {
                    Node::Branch { axis, split0, split1, child } => {
                        let (left, right) = (index + 1, child);
                        let (o, d) = (origin[axis & 3], dir[axis & 3]);
                        let (s0, s1) = (split0 + eps, split1 - eps);
                        if d == 0.0 {
                            self.top = top;
                            if o >= s1 {
                                self.push((right, t0, t1));
                            }
                            if o <= s0 {
                                self.push((left, t0, t1));
                            }
                            if INTERLEAVED {
                                return;
                            }
                            top = self.top;
                            continue 'pop;
                        }
                        let inv = inv_dir[axis & 3];
                        let (c0, c1) = ((s0 - o) * inv, (s1 - o) * inv);
                        // Left is `t <= c0` going up the axis, `t >= c0` going down; right
                        // the opposite.
                        let up = d > 0.0;
                        let (near, far) = (if up { left } else { right }, if up { right } else { left });
                        let (near_end, far_start) = (if up { c0 } else { c1 }, if up { c1 } else { c0 });
                        // The far entry is written and kept by moving the top: whether
                        // a random ray enters it is a coin toss for the branch
                        // predictor. (A branch's node depth bounds the stack as
                        // before.) A NaN plane distance (a plane through the origin of
                        // a ray nearly parallel to it) keeps `t0` and `t1`, as
                        // `f32::max` and `min` would, without their NaN handling.
                        let far_t0 = if far_start > t0 { far_start } else { t0 };
                        self.stack[top] = MaybeUninit::new((far, far_t0, t1));
                        top += (far_start <= t1) as usize;
                        s.prefetch(far);
                        let near_t1 = if near_end < t1 { near_end } else { t1 };
                        if INTERLEAVED {
                            self.stack[top] = MaybeUninit::new((near, t0, near_t1));
                            top += (near_end >= t0) as usize;
                            self.top = top;
                            s.prefetch(near);
                            return;
                        }
                        // A plain walk goes on to the near child in registers: its
                        // node's address waits on no stack entry.
                        if near_end < t0 {
                            continue 'pop;
                        }
                        (index, t1) = (near, near_t1);
                    }
                    Node::Leaf { first, count, axis, low, high } => {
                        // The segment against the leaf's range, like a plane (widened too).
                        let (o, d) = (origin[axis & 3], dir[axis & 3]);
                        let (low, high) = (low - eps, high + eps);
                        let missed = if d == 0.0 {
                            o < low || o > high
                        } else {
                            let inv = inv_dir[axis & 3];
                            let (a, b) = ((low - o) * inv, (high - o) * inv);
                            a.max(b) < t0 || a.min(b) > t1
                        };
                        if missed {
                            continue 'pop;
                        }
                        self.top = top;
                        if INTERLEAVED {
                            s.prefetch_indices(first, count);
                            self.fetch = Fetch::Indices { first, count };
                            return;
                        }
                        self.test(s, first, count, visit);
                        top = self.top;
                        continue 'pop;
                    }
                }
            }
        }
        self.top = top;
    }

    /// Tests triangles `first .. first + count` and hands the hits to `visit`.
    #[inline(always)]
    pub(super) fn test<S: Storage>(&mut self, s: &S, first: u32, count: u32, visit: &mut impl FnMut(MeshHit) -> f32) {
        for t in first..first + count {
            if let Some(h) = self.shear.hit(s.triangle(t), 0.0, self.max_t) {
                self.max_t = visit(MeshHit { t: h.t, triangle: t, u: h.u, v: h.v });
                if self.max_t < 0.0 {
                    self.top = 0;
                    return;
                }
            }
        }
    }
}
