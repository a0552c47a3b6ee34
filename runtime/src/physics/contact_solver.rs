//! One contact constraint's data and maths, on the scalar path: the layout the
//! narrowphase fills ([`Constraint`], [`ContactPoint`]) and the solver's per-step part
//! ([`Prepared`]); the prepare, warm start, soft solve and relax, restitution, and the
//! position correction of sequential impulses. Box2D v3's soft step in 3D (Catto,
//! "Solver2D", 2024), with rapier's friction at the manifold's centre. `wide.rs` runs
//! the same operations in SIMD lanes with the same bits; `solver.rs` orders the passes.
//!
//! Per step of `dt`, with `h = dt / substeps`:
//!
//! ```text
//! prepare: anchors, effective masses, restitution reference velocity (once)
//! for each substep:
//!     integrate velocities (gravity, forces, damping)
//!     warm start      (apply the accumulated impulses)
//!     solve           (soft constraints with position bias)
//!     integrate positions (bodies keep a delta position and delta rotation)
//!     relax           (the same constraints without bias: removes the bias energy)
//! restitution (once), store the impulses for the next step's warm start
//! ```
//!
//! The separation of a point is kept current without new collision tests:
//! `s = dot(dpB + dqB tB - dpA - dqA tA, n) + base_separation`, where `base_separation`
//! is the separation at the step's start minus `dot(tB - tA, n)`. The tracked points
//! `t` are the anchors `r` moved to the core of a rounded shape (sphere, capsule:
//! `tA = rA - round_a n`, `tB = rB + round_b n`): turning a ball about its centre
//! does not lift it off the ground, but turning its contact anchor does.
//!
//! Softness: a contact is a spring-damper with stiffness from `contact_hertz` (at
//! most a quarter of the substep rate) and damping ratio 10, which turns penetration
//! recovery into a smooth push (capped at `push_out`) instead of Baumgarte's stiff,
//! energy-adding bias. Contacts with a static or kinematic body get twice the
//! stiffness. Speculative points (positive separation) only remove the approach
//! velocity that would close the gap within the substep.
//!
//! A manifold's normal points are solved together, as one small linear system
//! (`block.rs`; why: `docs/physics-stability.md`).
//!
//! Friction acts once per manifold, as in rapier and Bepu: two tangent impulses at the
//! centre of the points ([`friction_center`]), along the tangents of the first point's
//! normal, bounded by `friction` times the sum of the points' normal impulses, and a
//! twist impulse about that normal bounded by `friction` times each point's normal
//! impulse on its lever, its distance from the centre ([`twist_arm`]). A box on its
//! four corners gets the same largest friction force and twist torque as four points
//! would give it (the tests slide, tilt and spin cubes against the closed forms).
//!
//! The angular terms `Ia (r x d)` are computed at each use from the world inverse
//! inertias; where impulses along several directions meet (the warm start's three per
//! point, the friction's two) they are added first and turned once. The normal
//! velocity is read through the arms `r x n` (`(w x r) . n = w . (r x n)`). What the
//! prepare derives for one step is kept apart from the constraints, in [`Prepared`].
//! What each of these choices gained: `docs/design-notes.md`, "The contact solver".

use std::ptr::NonNull;

use glam::{Mat3, Quat, Vec3};

use crate::jobs::Column;
use crate::math::Isometry;

/// How near a new point without an old point of its id must be to an old point, in
/// A's shape frame, to take that point's warm-start impulse: this fraction of the
/// smaller shape's bounding radius ([`FoundAt::radius`]). Clipping names a point by
/// the features that made it, and where two boxes' edges are flush (a pyramid's
/// rows, a wall's courses) the same corner is one box's vertex in one step and an
/// edge crossing in the next, by round-off. Without this the point restarted from
/// zero impulse under its load: a kick on one side of the face, which leaned the
/// pyramid out of its plane (`docs/physics-stability.md`).
pub(crate) const WARM_MATCH_RADIUS: f32 = 0.1;

/// No body (terrain, static, or a body outside the awake set).
pub(crate) const NONE: u32 = u32::MAX;

/// The shortest lever of twist friction (m): the radius of the contact patch that a
/// point assumes (see [`twist_arm`]). A single point cannot resist spin about its
/// normal; without this a box wedged by two opposite corners (a wall and a slope)
/// spins about its diagonal forever and never sleeps, and a ball spins in place.
pub(crate) const TWIST_RADIUS: f32 = 0.01;

/// A contact point as the narrowphase makes it and the next step finds it again: where
/// it is and its feature id (its accumulated impulse is the constraint's
/// [`Constraint::normal_impulse`]). What the solve derives from it for one step is in
/// [`PreparedPoint`].
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct ContactPoint {
    /// World position at the step's start (between the surfaces).
    pub point: Vec3,
    /// From A to B. Its friction directions are [`tangents`] of it, computed where
    /// they are used (storing them made every point 24 bytes longer).
    pub normal: Vec3,
    pub separation: f32,
    /// Feature id, matched across steps for warm starting.
    pub id: u32,
}

/// Pairs: a contact point's point on A's surface in A's shape frame and on B's in
/// B's, where the narrowphase found them (a pair that has hardly moved since reuses
/// them). Kept apart from the [`ContactPoint`]s, past them in the constraint, so the
/// part of a constraint the solver reads ends before them.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct SurfacePoints {
    pub a: Vec3,
    pub b: Vec3,
}

/// What [`prepare`] derives from a point for one step, for the constraints solved
/// one by one and the passes that run on constraints (restitution, position
/// correction). Bundled constraints derive the same into their bundle instead.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct PreparedPoint {
    /// Anchors relative to the centres of mass at the step's start.
    pub anchor_a: Vec3,
    pub anchor_b: Vec3,
    pub base_separation: f32,
    pub normal_mass: f32,
    /// The point's lever for twist friction: its distance from the manifold's
    /// centre, at least [`TWIST_RADIUS`] (see [`twist_arm`]).
    pub twist_arm: f32,
    /// The largest normal impulse of one iteration (restitution applies only where
    /// the point pushed).
    pub max_normal_impulse: f32,
    /// Normal velocity at the step's start (restitution target).
    pub relative_velocity: f32,
}

/// What [`prepare`] derives from a constraint for one step (see [`PreparedPoint`]).
///
/// Kept apart from the [`Constraint`], in the solver's own array: a step's
/// constraints are mostly last step's, copied by the narrowphase (a reused manifold)
/// and read by the bundles' prepare, neither of which needs this; in the constraint
/// it made every copy and read 312 bytes longer (728 instead of 416).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Prepared {
    pub inv_mass_a: f32,
    pub inv_mass_b: f32,
    pub inv_inertia_a: Mat3,
    pub inv_inertia_b: Mat3,
    pub rolling_mass: Mat3,
    /// The manifold's centre (see [`friction_center`]) relative to each body's
    /// centre of mass: where friction acts.
    pub friction_anchor_a: Vec3,
    pub friction_anchor_b: Vec3,
    /// Effective masses of friction at the centre, along the [`tangents`] of the
    /// first point's normal.
    pub tangent_mass: [f32; 2],
    /// Effective mass of twist friction about the first point's normal.
    pub twist_mass: f32,
    pub points: [PreparedPoint; 4],
}

impl Prepared {
    /// `inv_inertia_a * n` and `inv_inertia_b * n` for the first point's normal `n`
    /// of `c`: the angular velocity change per unit twist impulse (zero without
    /// points).
    pub fn twist_axes(&self, c: &Constraint) -> (Vec3, Vec3) {
        match c.count {
            0 => (Vec3::ZERO, Vec3::ZERO),
            _ => (self.inv_inertia_a * c.points[0].normal, self.inv_inertia_b * c.points[0].normal),
        }
    }
}

/// Up to four points between body A and body B (or terrain), each with its normal.
///
/// Laid out by hand, a cache line at a time: the first holds the pair, the point
/// count and every accumulated impulse, all that [`Coloring::unpack`] writes back
/// after the solve, so its scattered writes (the constraints in colour order) dirty
/// one line per constraint instead of five. What the solver reads ends with the
/// points and the found offset, in the fourth line ([`Constraint::SOLVER_BYTES`]);
/// the last two hold what only the narrowphase reads (where the points were found),
/// so the bundles' prepare fetches four lines of each constraint instead of six.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[repr(C, align(64))]
pub(crate) struct Constraint {
    /// Pair key: `proxy_a << 32 | proxy_b`, or `proxy << 32 | u32::MAX` for terrain.
    pub key: u64,
    /// Which manifold of the pair (compound parts, terrain part).
    pub sub: u64,
    pub count: u32,
    /// Each point's accumulated normal impulse (past `count`: zero).
    pub normal_impulse: [f32; 4],
    /// Accumulated friction at the manifold's centre, along the [`tangents`] of the
    /// first point's normal (see the module notes on friction).
    pub tangent_impulse: [f32; 2],
    /// Accumulated twist friction about the first point's normal.
    pub twist_impulse: f32,
    pub rolling_impulse: Vec3,
    /// Body slots (`NONE` for terrain).
    pub body_a: u32,
    pub body_b: u32,
    /// Awake rows during the solve (`NONE`: not moving in this solve).
    pub row_a: u32,
    pub row_b: u32,
    pub friction: f32,
    pub restitution: f32,
    /// Largest rolling-resistance torque per unit normal impulse (m).
    pub rolling_resistance: f32,
    /// Radius of the rounded shape on each side (sphere, capsule; 0 otherwise): the
    /// separation follows the shape's core (see the module notes).
    pub round_a: f32,
    pub round_b: f32,
    pub points: [ContactPoint; 4],
    /// Body A's origin minus body B's when the manifold was found: B's lever arm of
    /// each point is A's plus this while the manifold is reused (zero for terrain).
    /// Part of where the points were found ([`FoundAt`]), but the bundles' prepare
    /// reads it, so it sits in the solver's lines.
    pub found_offset: Vec3,
    /// Each point's surface points (see [`SurfacePoints`]).
    pub surface: [SurfacePoints; 4],
    /// Pairs: where the points were found.
    pub found: FoundAt,
}

crate::codec::fields!(ContactPoint { point, normal, separation, id });
crate::codec::fields!(SurfacePoints { a, b });
crate::codec::fields!(FoundAt { frame, normal, center, radius, turn });
crate::codec::fields!(Constraint {
    key,
    sub,
    count,
    normal_impulse,
    tangent_impulse,
    twist_impulse,
    rolling_impulse,
    body_a,
    body_b,
    row_a,
    row_b,
    friction,
    restitution,
    rolling_resistance,
    round_a,
    round_b,
    points,
    surface,
    found,
    // (After `found`, whose field it was: the encoding is the same.)
    found_offset,
});

/// Where a pair's manifold was found, for reusing it while the pair hardly moves
/// (see `narrow::reuse_manifolds`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct FoundAt {
    /// B's shape placement in A's shape frame.
    pub frame: Isometry,
    /// The normal in A's shape frame.
    pub normal: Vec3,
    /// The bounding sphere of the smaller shape in A's shape frame: every contact
    /// point lies in it.
    pub center: Vec3,
    pub radius: f32,
    /// A's shape rotation in the world when the manifold was found. A reused
    /// manifold keeps the normal and lever arms it had then, turned by this and not
    /// by the bodies' turns since (see `narrow::reuse_manifolds`).
    pub turn: Quat,
}

/// What the narrowphase sets on each of its constraints, anew every step: the
/// pair, the bodies and the mixed materials (shape materials may change between
/// steps, and a reused manifold must follow them).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Header {
    pub key: u64,
    pub sub: u64,
    pub body_a: u32,
    pub body_b: u32,
    pub friction: f32,
    pub restitution: f32,
    pub rolling_resistance: f32,
    pub round_a: f32,
    pub round_b: f32,
}

impl Constraint {
    /// The leading bytes that the solver reads (the bundles' prepare, the passes on
    /// constraints, the unpack): everything before the surface points.
    pub const SOLVER_BYTES: usize = std::mem::offset_of!(Constraint, surface);

    /// A constraint without points, with `header`.
    pub fn with_header(h: Header) -> Constraint {
        let mut c = Constraint::new(h.key, h.sub, h.body_a, h.body_b, h.friction, h.restitution);
        (c.rolling_resistance, c.round_a, c.round_b) = (h.rolling_resistance, h.round_a, h.round_b);
        c
    }

    pub fn set_header(&mut self, h: Header) {
        (self.key, self.sub, self.body_a, self.body_b) = (h.key, h.sub, h.body_a, h.body_b);
        (self.friction, self.restitution, self.rolling_resistance) = (h.friction, h.restitution, h.rolling_resistance);
        (self.round_a, self.round_b) = (h.round_a, h.round_b);
    }

    pub fn new(key: u64, sub: u64, body_a: u32, body_b: u32, friction: f32, restitution: f32) -> Constraint {
        Constraint {
            key,
            sub,
            body_a,
            body_b,
            row_a: NONE,
            row_b: NONE,
            friction,
            restitution,
            rolling_resistance: 0.0,
            round_a: 0.0,
            round_b: 0.0,
            rolling_impulse: Vec3::ZERO,
            tangent_impulse: [0.0; 2],
            twist_impulse: 0.0,
            normal_impulse: [0.0; 4],
            count: 0,
            points: [ContactPoint::default(); 4],
            found_offset: Vec3::ZERO,
            surface: [SurfacePoints::default(); 4],
            found: FoundAt::default(),
        }
    }

    pub fn points(&self) -> &[ContactPoint] {
        &self.points[..self.count as usize]
    }

    /// Adds a point (ignored past four).
    pub fn push(&mut self, point: Vec3, normal: Vec3, separation: f32, id: u32) {
        if self.count < 4 {
            self.points[self.count as usize] = ContactPoint { point, normal, separation, id };
            self.surface[self.count as usize] = SurfacePoints::default();
            self.normal_impulse[self.count as usize] = 0.0;
            self.count += 1;
        }
    }

    /// [`Constraint::warm_from`] on a copy of last step's constraint, in place: each
    /// point takes the normal impulse of the first point with its id (itself, unless
    /// ids repeat). The first point of an id is never changed, so reading `self` as
    /// it goes reads the old impulses.
    pub fn rewarm_in_place(&mut self) {
        for k in 1..self.count as usize {
            if let Some(j) = self.points[..k].iter().position(|o| o.id == self.points[k].id) {
                self.normal_impulse[k] = self.normal_impulse[j];
            }
        }
    }

    /// Copies the manifold's accumulated friction, twist and rolling impulses from
    /// `old`, and the normal impulses of points with matching ids or, for a point
    /// whose id is new, of the nearest unmatched old point within
    /// [`WARM_MATCH_RADIUS`]. Reads `self.found` and `self.surface`: set them first.
    pub fn warm_from(&mut self, old: &Constraint) {
        self.rolling_impulse = old.rolling_impulse;
        // The friction turned from the old normal's tangents into the new normal's:
        // the basis of `tangents` flips where a normal crosses the plane z = 0 (a side
        // contact along x crosses it with any round-off), and the old impulse applied
        // along flipped tangents kicked the pair with twice its friction.
        self.tangent_impulse = match (old.count, self.count) {
            (0, _) | (_, 0) => old.tangent_impulse,
            _ => {
                let (o1, o2) = tangents(old.points[0].normal);
                let friction = o1 * old.tangent_impulse[0] + o2 * old.tangent_impulse[1];
                let (t1, t2) = tangents(self.points[0].normal);
                [friction.dot(t1), friction.dot(t2)]
            }
        };
        self.twist_impulse = old.twist_impulse;
        // Each old point lends its impulse once: first to the point with its id, then
        // to the nearest new point without one (see `WARM_MATCH_RADIUS`).
        let mut lent = [false; 4];
        let mut matched = [false; 4];
        let count = self.count as usize;
        for (k, p) in self.points[..count].iter().enumerate() {
            if let Some(j) = old.points().iter().position(|o| o.id == p.id) {
                self.normal_impulse[k] = old.normal_impulse[j];
                (lent[j], matched[k]) = (true, true);
            }
        }
        let radius = WARM_MATCH_RADIUS * self.found.radius;
        for k in (0..count).filter(|&k| !matched[k]) {
            let here = self.surface[k].a;
            let nearest = (0..old.count as usize)
                .filter(|&j| !lent[j])
                .map(|j| (old.surface[j].a.distance_squared(here), j))
                .min_by(|x, y| x.0.total_cmp(&y.0));
            if let Some((d2, j)) = nearest {
                if d2 <= radius * radius {
                    self.normal_impulse[k] = old.normal_impulse[j];
                    lent[j] = true;
                }
            }
        }
    }
}

/// Where a manifold's friction acts: the mean of its points (the origin without
/// points). Both solver paths take it from here, so they agree to the bit.
pub(crate) fn friction_center(c: &Constraint) -> Vec3 {
    let sum = c.points().iter().fold(Vec3::ZERO, |sum, p| sum + p.point);
    sum / (c.count.max(1) as f32)
}

/// A point's lever for twist friction: its distance from the manifold's centre,
/// at least [`TWIST_RADIUS`] (one point alone still resists some spin).
pub(crate) fn twist_arm(p: &ContactPoint, center: Vec3) -> f32 {
    (p.point - center).length().max(TWIST_RADIUS)
}

/// A deterministic orthonormal tangent basis (Duff et al. 2017, without `copysign`
/// surprises: the sign is chosen by comparison).
pub(crate) fn tangents(n: Vec3) -> (Vec3, Vec3) {
    let sign = if n.z >= 0.0 { 1.0 } else { -1.0 };
    let a = -1.0 / (sign + n.z);
    let b = n.x * n.y * a;
    let t1 = Vec3::new(1.0 + sign * n.x * n.x * a, sign * b, -sign * n.x);
    let t2 = Vec3::new(b, sign + n.y * n.y * a, -n.y);
    (t1, t2)
}

/// A body's velocity and its motion since the step's start, as the solver sees it.
///
/// One cache line of sixteen `f32`s with no padding bytes, so that a bundle reads it
/// as two rows of eight (`v`, `w`, `dp.xy`, then `dp.z`, `spare`, `dq`) and gathers
/// eight bodies with an 8x8 transpose ([`Lanes::gather_rows`](super::simd::lanes::Lanes)),
/// and writes the velocities back as the first row.
#[derive(Clone, Copy, Debug, PartialEq)]
#[repr(C, align(64))]
pub(crate) struct BodyState {
    pub v: Vec3,
    pub w: Vec3,
    pub dp: Vec3,
    /// Unused (zero): fills the bytes before `dq`, which would otherwise be padding.
    pub spare: [f32; 3],
    pub dq: Quat,
}

const _: () = {
    assert!(std::mem::size_of::<BodyState>() == 64);
    assert!(std::mem::offset_of!(BodyState, dq) == 48);
};

impl BodyState {
    pub const STILL: BodyState =
        BodyState { v: Vec3::ZERO, w: Vec3::ZERO, dp: Vec3::ZERO, spare: [0.0; 3], dq: Quat::IDENTITY };

    /// The state's two rows of eight `f32`s (see the type's notes).
    pub fn rows(state: *const BodyState) -> [*const f32; 2] {
        let first = state.cast::<f32>();
        [first, first.wrapping_add(8)]
    }
}

/// Spring-damper coefficients for one substep (Box2D's `b2Softness`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Softness {
    pub bias_rate: f32,
    pub mass_scale: f32,
    pub impulse_scale: f32,
}

impl Softness {
    pub fn new(hertz: f32, damping_ratio: f32, h: f32) -> Softness {
        if hertz == 0.0 {
            return Softness { bias_rate: 0.0, mass_scale: 1.0, impulse_scale: 0.0 };
        }
        let omega = 2.0 * std::f32::consts::PI * hertz;
        let a1 = 2.0 * damping_ratio + h * omega;
        let a2 = h * omega * a1;
        let a3 = 1.0 / (1.0 + a2);
        Softness { bias_rate: omega / a1, mass_scale: a2 * a3, impulse_scale: a3 }
    }
}

/// Solver settings for one step.
#[derive(Clone, Copy, Debug)]
pub(crate) struct StepContext {
    pub inv_h: f32,
    pub soft: Softness,
    pub static_soft: Softness,
    /// Largest velocity the position bias may push with (m/s).
    pub push_out: f32,
    /// Normal approach speed below which restitution is ignored (m/s).
    pub restitution_threshold: f32,
    /// The joints' rigid parts, soft while pushing (see `joint_solver.rs`).
    pub joint_soft: Softness,
    /// Whether joints push with a bias in the relax pass too (sequential impulses,
    /// whose position passes do not run on joints).
    pub joint_bias_in_relax: bool,
}

/// Constraints by index, wherever they are stored: a table of their addresses. A
/// step's constraints stay in the narrowphase jobs' buffers (and the woken ones in
/// theirs) and are joined by this table instead of being copied into one array: the
/// copy of 11 MB a step was 7% of the pyramid's step.
///
/// Whoever adds an address ([`ConstraintTable::push`]) promises that the constraint
/// stays where it is, and is touched through nothing else, while the table holds it:
/// the world keeps its buffers unchanged for a step after they were filled (see
/// `World::prepare_stage`).
#[derive(Debug, Default)]
pub(crate) struct ConstraintTable {
    at: Vec<NonNull<Constraint>>,
}

// SAFETY: the table is an index of constraints it borrows exclusively (see `push`);
// shared access only reads them, and `get_unchecked` leaves exclusivity to its caller,
// as `Column` does.
unsafe impl Send for ConstraintTable {}
// SAFETY: as for `Send`.
unsafe impl Sync for ConstraintTable {}

impl ConstraintTable {
    /// A table of every constraint of `v`, in order.
    ///
    /// # Safety
    /// As [`ConstraintTable::push`], for each element of `v`.
    #[cfg(test)]
    pub unsafe fn of(v: &mut [Constraint]) -> ConstraintTable {
        ConstraintTable { at: v.iter_mut().map(NonNull::from).collect() }
    }

    pub fn len(&self) -> usize {
        self.at.len()
    }

    pub fn clear(&mut self) {
        self.at.clear();
    }

    /// Appends `c`.
    ///
    /// # Safety
    /// `c` stays valid, in place, and touched through nothing but this table until it
    /// is cleared or the entry is dropped.
    pub unsafe fn push(&mut self, c: NonNull<Constraint>) {
        self.at.push(c);
    }

    /// Writes `c` over element `i`, from any of several jobs (for a slot that was
    /// pushed before it was written).
    ///
    /// # Safety
    /// No other thread reads or writes element `i` meanwhile.
    pub unsafe fn write(&self, i: usize, c: &Constraint) {
        // SAFETY: valid for writes (see `push`), exclusive per the caller's contract.
        unsafe { self.at[i].as_ptr().write(*c) };
    }

    pub fn get(&self, i: usize) -> &Constraint {
        // SAFETY: valid and not written through anything else (see `push`), and
        // `get_unchecked`'s callers keep off what others read.
        unsafe { self.at[i].as_ref() }
    }

    /// Element `i`'s address (for a prefetch: no access, so no contract).
    pub fn ptr(&self, i: usize) -> *const Constraint {
        self.at[i].as_ptr()
    }

    /// Element `i`, from any of several jobs, as [`Column::get`].
    ///
    /// # Safety
    /// No other thread reads or writes element `i` meanwhile.
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn get_unchecked(&self, i: usize) -> &mut Constraint {
        // SAFETY: valid (see `push`); exclusive per the caller's contract.
        unsafe { &mut *self.at[i].as_ptr() }
    }

    pub fn iter(&self) -> impl Iterator<Item = &Constraint> + '_ {
        (0..self.len()).map(|i| self.get(i))
    }

    /// Entry `i`'s address.
    pub fn at(&self, i: usize) -> NonNull<Constraint> {
        self.at[i]
    }

    /// Keeps the entries for which `keep` is true, in order, and hands each other
    /// one to `dropped` (after `keep` has seen it).
    pub fn retain(&mut self, mut dropped: impl FnMut(NonNull<Constraint>), mut keep: impl FnMut(&Constraint) -> bool) {
        self.at.retain(|&c| {
            // SAFETY: as `get`.
            let kept = keep(unsafe { c.as_ref() });
            if !kept {
                dropped(c);
            }
            kept
        });
    }
}

/// Reads a body's state (`STILL` for `NONE`).
///
/// # Safety
/// No other thread writes row `row` meanwhile.
pub(crate) unsafe fn read(states: &Column<BodyState>, row: u32) -> BodyState {
    if row == NONE {
        BodyState::STILL
    } else {
        // SAFETY: forwarded from the caller.
        unsafe { *states.get(row as usize) }
    }
}

/// Writes a dynamic body's velocities back.
///
/// # Safety
/// The caller is the only thread touching row `row` (its colour owns the body).
pub(crate) unsafe fn write(states: &Column<BodyState>, row: u32, dynamic: bool, v: Vec3, w: Vec3) {
    if row != NONE && dynamic {
        // SAFETY: forwarded from the caller.
        let s = unsafe { states.get(row as usize) };
        if (v + w).is_finite() {
            s.v = v;
            s.w = w;
        } else {
            // An impulse overflowed (absurd but finite masses and speeds): saturate as
            // the integrator does, so no NaN reaches the next constraint.
            s.v = super::body::saturate(v, super::MAX_LINEAR_SPEED);
            s.w = super::body::saturate(w, super::MAX_LINEAR_SPEED);
        }
    }
}

/// What [`prepare`] needs besides the constraint: the points' reference centres
/// (a body's centre of mass; any fixed point of a static side) and the bodies'
/// states at the step's start (for the restitution reference; the bundles'
/// prepare, which does not compute it, gets `STILL` ones: see [`Coloring::prepare`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Frame {
    pub center_a: Vec3,
    pub center_b: Vec3,
    pub state_a: BodyState,
    pub state_b: BodyState,
    /// The bodies' inverse masses and world inverse inertias (zero for a side that
    /// does not move in this solve). The prepare copies them into the constraint;
    /// the bundles' prepare reads them from here.
    pub inv_mass_a: f32,
    pub inv_mass_b: f32,
    pub inv_inertia_a: Mat3,
    pub inv_inertia_b: Mat3,
}

impl Frame {
    /// `center_a - center_b`: an anchor relative to B is the one relative to A plus
    /// this, on both solver paths (the bundles keep A's anchors and this alone).
    pub fn offset(&self) -> Vec3 {
        self.center_a - self.center_b
    }
}

/// Anchors, effective masses and the restitution reference of every point of `c`,
/// into `s` (the bundles compute the same from the anchors: see `wide::finish`).
pub(crate) fn prepare(c: &Constraint, s: &mut Prepared, f: &Frame) {
    (s.inv_mass_a, s.inv_mass_b) = (f.inv_mass_a, f.inv_mass_b);
    (s.inv_inertia_a, s.inv_inertia_b) = (f.inv_inertia_a, f.inv_inertia_b);
    let (ma, mb) = (s.inv_mass_a, s.inv_mass_b);
    let (ia, ib) = (s.inv_inertia_a, s.inv_inertia_b);
    if c.rolling_resistance > 0.0 {
        s.rolling_mass = rolling_mass(ia, ib);
    }
    // Effective mass along d at (ra, rb): 1 / (ma + mb + (ra x d) Ia (ra x d) + (rb x d) Ib (rb x d)).
    let mass = |ra: Vec3, rb: Vec3, d: Vec3| {
        let sum = ma + mb + ra.cross(d).dot(angular(ia, ra, d)) + rb.cross(d).dot(angular(ib, rb, d));
        if sum > 0.0 {
            1.0 / sum
        } else {
            0.0
        }
    };
    let center = friction_center(c);
    if c.count > 0 {
        let n = c.points[0].normal;
        let (axis_a, axis_b) = s.twist_axes(c);
        let k = n.dot(axis_a) + n.dot(axis_b);
        s.twist_mass = if k > 0.0 { 1.0 / k } else { 0.0 };
        let ra = center - f.center_a;
        let rb = ra + f.offset();
        (s.friction_anchor_a, s.friction_anchor_b) = (ra, rb);
        let (tangent1, tangent2) = tangents(n);
        s.tangent_mass = [mass(ra, rb, tangent1), mass(ra, rb, tangent2)];
    }
    let (sa, sb) = (&f.state_a, &f.state_b);
    for (p, q) in c.points().iter().zip(&mut s.points) {
        let ra = p.point - f.center_a;
        let rb = ra + f.offset();
        q.anchor_a = ra;
        q.anchor_b = rb;
        let (ta, tb) = (ra - p.normal * c.round_a, rb + p.normal * c.round_b);
        q.base_separation = p.separation - (tb - ta).dot(p.normal);
        q.normal_mass = mass(ra, rb, p.normal);
        q.twist_arm = twist_arm(p, center);
        q.max_normal_impulse = 0.0;
        let dv = sb.v + sb.w.cross(rb) - sa.v - sa.w.cross(ra);
        q.relative_velocity = p.normal.dot(dv);
    }
}

/// The effective mass of rolling resistance: `(Ia + Ib)^-1`, or zero when singular.
pub(crate) fn rolling_mass(ia: Mat3, ib: Mat3) -> Mat3 {
    let k = ia + ib;
    if k.determinant() > 0.0 {
        k.inverse()
    } else {
        Mat3::ZERO
    }
}

/// `inv_inertia * (anchor x d)`: the angular velocity change of a body per unit
/// impulse along `d` at `anchor` (fixed for the step). Both solver paths compute it
/// at each use, with the same bits (see the module notes).
pub(crate) fn angular(inv_inertia: Mat3, anchor: Vec3, d: Vec3) -> Vec3 {
    inv_inertia * anchor.cross(d)
}

/// The relative velocity of B against A at a point.
fn relative(va: Vec3, wa: Vec3, vb: Vec3, wb: Vec3, ra: Vec3, rb: Vec3) -> Vec3 {
    vb + wb.cross(rb) - va - wa.cross(ra)
}

/// Applies the accumulated impulses.
///
/// # Safety
/// `c`'s dynamic bodies are touched by no other thread meanwhile.
pub(crate) unsafe fn warm_start(c: &Constraint, s: &Prepared, states: &Column<BodyState>) {
    // SAFETY: forwarded from the caller.
    let (sa, sb) = unsafe { (read(states, c.row_a), read(states, c.row_b)) };
    let (mut va, mut wa, mut vb, mut wb) = (sa.v, sa.w, sb.v, sb.w);
    if c.rolling_resistance > 0.0 {
        wa -= s.inv_inertia_a * c.rolling_impulse;
        wb += s.inv_inertia_b * c.rolling_impulse;
    }
    let (axis_a, axis_b) = s.twist_axes(c);
    wa -= axis_a * c.twist_impulse;
    wb += axis_b * c.twist_impulse;
    // The angular impulse by linearity: `Ia` times the sum of the torques (friction
    // at the centre, then each point's normal impulse), one product per body.
    let (mut torque_a, mut torque_b) = (Vec3::ZERO, Vec3::ZERO);
    if c.count > 0 {
        let (tangent1, tangent2) = tangents(c.points[0].normal);
        let impulse = tangent1 * c.tangent_impulse[0] + tangent2 * c.tangent_impulse[1];
        va -= impulse * s.inv_mass_a;
        torque_a += s.friction_anchor_a.cross(impulse);
        vb += impulse * s.inv_mass_b;
        torque_b += s.friction_anchor_b.cross(impulse);
    }
    for ((p, q), &normal_impulse) in c.points().iter().zip(&s.points).zip(&c.normal_impulse) {
        let impulse = p.normal * normal_impulse;
        va -= impulse * s.inv_mass_a;
        torque_a += q.anchor_a.cross(impulse);
        vb += impulse * s.inv_mass_b;
        torque_b += q.anchor_b.cross(impulse);
    }
    wa -= s.inv_inertia_a * torque_a;
    wb += s.inv_inertia_b * torque_b;
    // SAFETY: forwarded from the caller.
    unsafe {
        write(states, c.row_a, s.inv_mass_a > 0.0, va, wa);
        write(states, c.row_b, s.inv_mass_b > 0.0, vb, wb);
    }
}

/// One pass over the constraint: non-penetration (soft when `use_bias`), then
/// friction clamped to the friction cone of each point's normal impulse.
///
/// # Safety
/// `c`'s dynamic bodies are touched by no other thread meanwhile.
pub(crate) unsafe fn solve(
    c: &mut Constraint,
    s: &mut Prepared,
    states: &Column<BodyState>,
    ctx: &StepContext,
    use_bias: bool,
) {
    // SAFETY: forwarded from the caller.
    let (sa, sb) = unsafe { (read(states, c.row_a), read(states, c.row_b)) };
    let (mut va, mut wa, mut vb, mut wb) = (sa.v, sa.w, sb.v, sb.w);
    let (ma, mb, ia, ib) = (s.inv_mass_a, s.inv_mass_b, s.inv_inertia_a, s.inv_inertia_b);
    let soft = if ma == 0.0 || mb == 0.0 { ctx.static_soft } else { ctx.soft };
    let moved = sb.dp - sa.dp;
    // The rotations since the step's start as matrices: one conversion per body
    // instead of two quaternion rotations per point.
    let (turn_a, turn_b) = (Mat3::from_quat(sa.dq), Mat3::from_quat(sb.dq));
    // A point's soft terms: bias, mass scale and impulse scale.
    let (round_a, round_b) = (c.round_a, c.round_b);
    let terms = |p: &ContactPoint, q: &PreparedPoint| {
        let (ra, rb) = (q.anchor_a, q.anchor_b);
        // Current separation from the bodies' motion since the step's start.
        let (ta, tb) = (ra - p.normal * round_a, rb + p.normal * round_b);
        let d = moved + (turn_b * tb - turn_a * ta);
        let separation = d.dot(p.normal) + q.base_separation;
        if separation > 0.0 {
            (separation * ctx.inv_h, 1.0, 0.0)
        } else if use_bias {
            ((soft.bias_rate * separation).max(-ctx.push_out), soft.mass_scale, soft.impulse_scale)
        } else {
            (0.0, 1.0, 0.0)
        }
    };
    let count = c.count as usize;
    let block = super::block::normal_block(c, s, (va, wa, vb, wb), use_bias, &terms);
    let points = c.points[..if block.is_some() { 0 } else { count }].iter().zip(&mut s.points);
    for ((p, q), accumulated) in points.zip(&mut c.normal_impulse) {
        let (ra, rb) = (q.anchor_a, q.anchor_b);
        let (bias, mass_scale, impulse_scale) = terms(p, q);
        // The normal velocity from the arms' turns about the normal, which the
        // angular impulse below needs too: `(w x r) . n = w . (r x n)`.
        let (arm_a, arm_b) = (ra.cross(p.normal), rb.cross(p.normal));
        let vn = (vb - va).dot(p.normal) + wb.dot(arm_b) - wa.dot(arm_a);
        let impulse = -q.normal_mass * mass_scale * (vn + bias) - impulse_scale * *accumulated;
        let total = (*accumulated + impulse).max(0.0).clamp(0.0, f32::MAX); // max: NaN to 0
        let impulse = total - *accumulated;
        *accumulated = total;
        q.max_normal_impulse = q.max_normal_impulse.max(impulse);
        let j = p.normal * impulse;
        va -= j * ma;
        wa -= (ia * arm_a) * impulse;
        vb += j * mb;
        wb += (ib * arm_b) * impulse;
    }
    if let Some((a, b)) = block {
        (va, wa, vb, wb) = (a.0, a.1, b.0, b.1);
    }
    let normal = c.normal_impulse[..c.count as usize].iter().fold(-0.0, |sum, n| sum + n);
    if c.count > 0 {
        // Friction at the manifold's centre, bounded by the manifold's normal impulse.
        let n = c.points[0].normal;
        let (ra, rb) = (s.friction_anchor_a, s.friction_anchor_b);
        let dv = relative(va, wa, vb, wb, ra, rb);
        let old = c.tangent_impulse;
        let (tangent1, tangent2) = tangents(n);
        let mut t = [old[0] - s.tangent_mass[0] * dv.dot(tangent1), old[1] - s.tangent_mass[1] * dv.dot(tangent2)];
        let limit = c.friction * normal;
        let length_sq = t[0] * t[0] + t[1] * t[1];
        if length_sq > limit * limit {
            let scale = limit / length_sq.sqrt();
            t = [t[0] * scale, t[1] * scale];
        }
        c.tangent_impulse = t;
        let (d1, d2) = (t[0] - old[0], t[1] - old[1]);
        let j = tangent1 * d1 + tangent2 * d2;
        va -= j * ma;
        wa -= angular(ia, ra, j);
        vb += j * mb;
        wb += angular(ib, rb, j);
        // Twist about the normal, bounded by each point's normal impulse on its lever.
        let impulses = c.normal_impulse[..c.count as usize].iter().zip(&s.points);
        let levers = impulses.fold(-0.0, |sum, (n, q)| sum + n * q.twist_arm);
        let limit = c.friction * levers;
        let old = c.twist_impulse;
        // max/min rather than clamp: a limit of 0 * inf is NaN, which clamp panics on.
        let total = (old - s.twist_mass * n.dot(wb - wa)).max(-limit).min(limit);
        c.twist_impulse = total;
        let (axis_a, axis_b) = s.twist_axes(c);
        wa -= axis_a * (total - old);
        wb += axis_b * (total - old);
    }
    if c.rolling_resistance > 0.0 {
        let limit = c.rolling_resistance * normal;
        let old = c.rolling_impulse;
        let mut total = old - s.rolling_mass * (wb - wa);
        if total.length_squared() > limit * limit {
            total *= limit / total.length();
        }
        c.rolling_impulse = total;
        let j = total - old;
        wa -= ia * j;
        wb += ib * j;
    }
    // SAFETY: forwarded from the caller.
    unsafe {
        write(states, c.row_a, ma > 0.0, va, wa);
        write(states, c.row_b, mb > 0.0, vb, wb);
    }
}

/// Bounces: points that approached faster than the threshold and pushed get the
/// normal velocity `-restitution * approach`.
///
/// # Safety
/// `c`'s dynamic bodies are touched by no other thread meanwhile.
pub(crate) unsafe fn restitute(c: &mut Constraint, s: &Prepared, states: &Column<BodyState>, ctx: &StepContext) {
    if c.restitution == 0.0 {
        return;
    }
    // SAFETY: forwarded from the caller.
    let (sa, sb) = unsafe { (read(states, c.row_a), read(states, c.row_b)) };
    let (mut va, mut wa, mut vb, mut wb) = (sa.v, sa.w, sb.v, sb.w);
    let (ma, mb, ia, ib) = (s.inv_mass_a, s.inv_mass_b, s.inv_inertia_a, s.inv_inertia_b);
    let points = c.points[..c.count as usize].iter().zip(&s.points);
    for ((p, q), accumulated) in points.zip(&mut c.normal_impulse) {
        if q.relative_velocity > -ctx.restitution_threshold || q.max_normal_impulse == 0.0 {
            continue;
        }
        let (ra, rb) = (q.anchor_a, q.anchor_b);
        let vn = relative(va, wa, vb, wb, ra, rb).dot(p.normal);
        let impulse = -q.normal_mass * (vn + c.restitution * q.relative_velocity);
        let total = (*accumulated + impulse).max(0.0);
        let impulse = total - *accumulated;
        *accumulated = total;
        let j = p.normal * impulse;
        va -= j * ma;
        wa -= angular(ia, ra, p.normal) * impulse;
        vb += j * mb;
        wb += angular(ib, rb, p.normal) * impulse;
    }
    // SAFETY: forwarded from the caller.
    unsafe {
        write(states, c.row_a, ma > 0.0, va, wa);
        write(states, c.row_b, mb > 0.0, vb, wb);
    }
}

/// Fraction of a point's penetration (beyond [`super::LINEAR_SLOP`]) that one
/// position-correction pass removes (Box2D v2.4's `b2_baumgarte`).
pub(crate) const BAUMGARTE: f32 = 0.2;

/// Largest correction of one point in one position pass (m).
const MAX_CORRECTION: f32 = 0.2;

/// Position correction of sequential impulses (Box2D v2.4's non-linear Gauss-Seidel):
/// each point's separation from the bodies' motion so far, and a pseudo-impulse that
/// moves and turns the bodies apart by [`BAUMGARTE`] of the penetration beyond the
/// slop. Velocities are untouched, so the push adds no energy.
///
/// # Safety
/// `c`'s dynamic bodies are touched by no other thread meanwhile.
pub(crate) unsafe fn correct_positions(c: &Constraint, s: &Prepared, states: &Column<BodyState>) {
    // SAFETY: forwarded from the caller.
    let (sa, sb) = unsafe { (read(states, c.row_a), read(states, c.row_b)) };
    let (mut pa, mut qa, mut pb, mut qb) = (sa.dp, sa.dq, sb.dp, sb.dq);
    let (ma, mb, ia, ib) = (s.inv_mass_a, s.inv_mass_b, s.inv_inertia_a, s.inv_inertia_b);
    let turn = |q: Quat, angle: Vec3| (q + Quat::from_xyzw(angle.x, angle.y, angle.z, 0.0) * q * 0.5).normalize();
    for (p, q) in c.points().iter().zip(&s.points) {
        let (ra, rb) = (q.anchor_a, q.anchor_b);
        let (ta, tb) = (ra - p.normal * c.round_a, rb + p.normal * c.round_b);
        let separation = (pb - pa + qb * tb - qa * ta).dot(p.normal) + q.base_separation;
        let correction = (BAUMGARTE * (separation + super::LINEAR_SLOP)).clamp(-MAX_CORRECTION, 0.0);
        let impulse = -q.normal_mass * correction;
        pa -= p.normal * (impulse * ma);
        qa = turn(qa, -angular(ia, ra, p.normal) * impulse);
        pb += p.normal * (impulse * mb);
        qb = turn(qb, angular(ib, rb, p.normal) * impulse);
    }
    for (row, dynamic, dp, dq) in [(c.row_a, ma > 0.0, pa, qa), (c.row_b, mb > 0.0, pb, qb)] {
        if row != NONE && dynamic && dp.is_finite() && dq.is_finite() {
            // SAFETY: forwarded from the caller.
            let s = unsafe { states.get(row as usize) };
            (s.dp, s.dq) = (dp, dq);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A point whose feature id changed takes the impulse of the nearest old point
    /// within `WARM_MATCH_RADIUS` of the shape's radius (in A's frame), each old point
    /// lending once, in point order; ids still win, and a point farther away starts
    /// from zero.
    #[test]
    fn a_renamed_point_keeps_its_warm_start() {
        let make = |ids: [u32; 3], at: [Vec3; 3]| {
            let mut c = Constraint::new(1, 0, 0, 1, 0.6, 0.0);
            for (k, (&id, &p)) in ids.iter().zip(&at).enumerate() {
                c.push(p, Vec3::Y, 0.0, id);
                c.surface[k] = SurfacePoints { a: p, b: p };
            }
            c.found.radius = 0.866;
            c
        };
        let (x0, x1, x2) = (Vec3::new(-0.5, 0.5, 0.5), Vec3::new(0.5, 0.5, 0.5), Vec3::new(0.0, 0.5, -0.5));
        let mut old = make([1, 2, 3], [x0, x1, x2]);
        old.normal_impulse = [10.0, 20.0, 30.0, 0.0];
        // Point 0 renamed in place, point 1 kept its id, point 2 renamed and moved 0.3 m.
        let mut new = make([7, 2, 9], [x0 + Vec3::splat(1e-4), x1, x2 + Vec3::X * 0.3]);
        new.warm_from(&old);
        assert_eq!(new.normal_impulse[..3], [10.0, 20.0, 0.0]);
        // Two renamed points near one old point: it lends once, to the first.
        let mut twice = make([7, 8, 9], [x0 + Vec3::X * 0.01, x0 + Vec3::X * 0.001, Vec3::ZERO]);
        twice.warm_from(&old);
        assert_eq!(twice.normal_impulse[..2], [10.0, 0.0]);
    }

    /// Position correction pushes two overlapping boxes apart by `BAUMGARTE` of the
    /// penetration beyond the slop per pass, converges on the slop, and leaves the
    /// velocities alone.
    #[test]
    fn position_correction_removes_penetration_down_to_the_slop() {
        let mut c = Constraint::new(0, 0, 0, 1, 0.5, 0.0);
        (c.row_a, c.row_b) = (0, 1);
        c.push(Vec3::new(0.2, 0.0, 0.0), Vec3::Y, -0.05, 7);
        let v = Vec3::new(0.0, -1.0, 0.5);
        let mut states = [BodyState { v, ..BodyState::STILL }, BodyState { w: v, ..BodyState::STILL }];
        let frame = Frame {
            center_a: Vec3::new(0.0, -0.5, 0.0),
            center_b: Vec3::new(0.0, 0.5, 0.0),
            state_a: states[0],
            state_b: states[1],
            inv_mass_a: 1.0,
            inv_mass_b: 1.0,
            inv_inertia_a: Mat3::IDENTITY,
            inv_inertia_b: Mat3::IDENTITY,
        };
        let mut s = Prepared::default();
        prepare(&c, &mut s, &frame);
        let separation = |states: &[BodyState; 2]| {
            let (p, q) = (c.points[0], s.points[0]);
            let (ta, tb) = (q.anchor_a, q.anchor_b);
            (states[1].dp - states[0].dp + states[1].dq * tb - states[0].dq * ta).dot(p.normal) + q.base_separation
        };
        assert!((separation(&states) + 0.05).abs() < 1e-6);
        let slop = super::super::LINEAR_SLOP;
        let mut before = separation(&states);
        for pass in 0..40 {
            let column = Column::new(&mut states);
            // SAFETY: one thread, both rows in bounds.
            unsafe { correct_positions(&c, &s, &column) };
            let after = separation(&states);
            if pass == 0 {
                // Off-centre point: the bodies turn as well, so the step is near, not at, 20%.
                let expected = before - BAUMGARTE * (before + slop);
                assert!((after - expected).abs() < 2e-3, "{after} after one pass, {expected} expected");
            }
            assert!(after > before || after >= -slop - 1e-5, "pass {pass}: {before} -> {after}");
            before = after;
        }
        assert!((before + slop).abs() < 1e-3, "converged on {before}, the slop is {slop}");
        assert_eq!((states[0].v, states[1].w), (v, v), "velocities untouched");
        assert!(states[0].dp.y < 0.0 && states[1].dp.y > 0.0, "pushed apart along the normal");
    }

    /// A reused manifold renews last step's constraint in place; its impulses must be
    /// the ones `warm_from` gives a fresh constraint with the same points, repeated
    /// ids included.
    #[test]
    fn rewarming_in_place_matches_warm_from() {
        for ids in [[1, 2, 3, 4], [7, 7, 2, 7], [5, 6, 5, 6], [9, 9, 9, 9]] {
            for count in 1..=4 {
                let mut old = Constraint::new(0, 0, 0, 1, 0.5, 0.0);
                for (k, &id) in ids[..count].iter().enumerate() {
                    old.push(Vec3::new(k as f32, 0.0, 0.0), Vec3::Y, -0.01, id);
                    old.normal_impulse[k] = 1.0 + k as f32;
                }
                (old.tangent_impulse, old.twist_impulse) = ([0.1, -0.2], 0.3);
                let mut fresh = Constraint::new(0, 0, 0, 1, 0.5, 0.0);
                for p in old.points() {
                    fresh.push(p.point, p.normal, p.separation, p.id);
                }
                fresh.warm_from(&old);
                let mut renewed = old;
                renewed.rewarm_in_place();
                assert_eq!(
                    (fresh.tangent_impulse, fresh.twist_impulse),
                    (renewed.tangent_impulse, renewed.twist_impulse)
                );
                assert_eq!(fresh.normal_impulse[..count], renewed.normal_impulse[..count], "{ids:?}");
            }
        }
    }

    /// A constraint carries what the narrowphase makes and the next step reuses, and
    /// nothing the solve derives for one step: the narrowphase copies every reused
    /// constraint and the bundles read them all, so each byte costs twice a step.
    /// What the solve writes back into it lies in its first cache line.
    #[test]
    fn constraints_leave_what_the_solve_derives_to_the_solver() {
        assert_eq!(std::mem::size_of::<ContactPoint>(), 32);
        assert_eq!(std::mem::size_of::<Constraint>(), 448);
        assert_eq!(Constraint::SOLVER_BYTES, 236, "the solver's part ends in the fourth line");
        assert_eq!(std::mem::align_of::<Constraint>(), 64);
        assert_eq!(std::mem::size_of::<Prepared>(), 328);
        let end = std::mem::offset_of!(Constraint, rolling_impulse) + std::mem::size_of::<Vec3>();
        for offset in [
            std::mem::offset_of!(Constraint, count),
            std::mem::offset_of!(Constraint, normal_impulse),
            std::mem::offset_of!(Constraint, tangent_impulse),
            std::mem::offset_of!(Constraint, twist_impulse),
        ] {
            assert!(offset < end);
        }
        assert!(end <= 64, "the impulses end at byte {end}");
    }

    /// An effective mass of `f32::MAX` meeting 1e5 m/s: the normal impulse overflows.
    /// It stays finite, the frictionless twist limit (0 x inf was NaN, and `clamp`
    /// panicked on it) holds, and the written velocities are finite. Found by
    /// `samples-c/tests/fuzz_api.c` (seed 489 of `make fuzz`).
    #[test]
    fn an_overflowing_impulse_keeps_the_solve_finite() {
        let mut c = Constraint::new(0, 0, 0, 1, 0.0, 0.0);
        (c.row_a, c.row_b, c.count) = (0, 1, 1);
        c.points[0] = ContactPoint { normal: Vec3::Y, ..ContactPoint::default() };
        let mut s = Prepared {
            inv_mass_a: 1.0,
            inv_mass_b: 1.0,
            inv_inertia_a: Mat3::IDENTITY,
            inv_inertia_b: Mat3::IDENTITY,
            tangent_mass: [1.0, 1.0],
            twist_mass: 1.0,
            ..Prepared::default()
        };
        s.points[0] = PreparedPoint { normal_mass: f32::MAX, twist_arm: TWIST_RADIUS, ..PreparedPoint::default() };
        let mut states = [
            BodyState { v: Vec3::new(0.0, 1e5, 0.0), w: Vec3::new(0.0, 3.0, 0.0), ..BodyState::STILL },
            BodyState { w: Vec3::new(0.0, -3.0, 0.0), ..BodyState::STILL },
        ];
        let soft = Softness::new(30.0, 10.0, 1.0 / 240.0);
        let ctx = StepContext {
            inv_h: 240.0,
            soft,
            static_soft: soft,
            push_out: 3.0,
            restitution_threshold: 1.0,
            joint_soft: soft,
            joint_bias_in_relax: false,
        };
        let column = Column::new(&mut states);
        for _ in 0..3 {
            // SAFETY: one thread, both rows in bounds.
            unsafe { solve(&mut c, &mut s, &column, &ctx, true) };
        }
        assert!(c.normal_impulse[0].is_finite(), "{}", c.normal_impulse[0]);
        assert!(c.twist_impulse.is_finite(), "{}", c.twist_impulse);
        for s in &states {
            assert!(s.v.is_finite() && s.w.is_finite(), "{s:?}");
            assert!(s.v.length() <= crate::physics::MAX_LINEAR_SPEED * 1.001, "{s:?}");
        }
    }
}
