//! The contact solver four or eight constraints at a time (Box2D v3's wide solver,
//! in 3D).
//!
//! Within one graph colour no two constraints share a dynamic body, so several of
//! them can be solved side by side: each `f32` of the scalar solver becomes a lane
//! value ([`Lanes`]: `Vec4` with SSE2, `F8` with AVX where the CPU has it) whose
//! lanes are constraints, and each body state is gathered from its row before the
//! pass and scattered back after it. The scalar solver spends most of its time
//! waiting on one point's impulse before it can start the next; independent chains
//! in the lanes of one register hide that latency and do four or eight times the
//! arithmetic per instruction. The kernels are written once, generic over the lane
//! type; the eight-lane ones are compiled with AVX enabled ([`Width`]) and every
//! helper is `#[inline(always)]` so that it is compiled inside them.
//!
//! `large_pyramid` at one worker (`step_scene large_pyramid 30 1`, alternating
//! runs): the solve took 24-28 ms with four lanes and 16-18 ms with eight.
//!
//! Sixteen lanes ([`F16`], AVX-512F) where the CPU has them: each dependent chain of
//! a solve (a point's impulse, then the velocities the next point reads, four points
//! and friction in a row) now serves sixteen constraints. `step_scene large_pyramid
//! 60 1`, alternating runs, paired medians of the per-step medians against eight
//! lanes: solve 0.877 on the H200 machine's Xeon (twelve pairs), 0.939 here on an
//! EPYC whose 512-bit operations take two passes (eight pairs); unchanged at 2 and 16
//! workers, and a small scene's partly empty bundles cost a little (rain's solve
//! 1.08, 0.04 ms of a 14 ms step). The index and row arrays are sized by the width
//! ([`Lanes::Words`]), so narrower bundles keep their size.
//!
//! Body states are gathered as rows of eight floats by an 8x8 transpose
//! ([`Lanes::gather_rows`]; [`BodyState`] is laid out for it) and the velocities go
//! back the same way: the per-lane copies and 4x4 transposes this replaced were a
//! third of a bundle's instructions before its first point (solve 14.9 -> 14.1 ms,
//! best of 8 alternating runs of `step_scene large_pyramid 40 1`).
//!
//! The prepare is wide too: a lane is packed with what the scalar prepare starts
//! from (anchors, normals, separations, impulses) and [`Width::finish`] computes the
//! effective masses and base separations of all lanes at once. The constraint is
//! then only read, not written, unless a pass that runs on constraints needs it
//! prepared (restitution, position correction). Solve 12.4 -> 10.6 ms, same bits
//! (alternating runs of `step_scene large_pyramid 40 1`, best of four); the scalar
//! prepare-and-pack had been 12% of the step.
//!
//! Every lane computes exactly what [`contact_solver::solve`] and [`contact_solver::warm_start`]
//! compute, operation for operation, so a bundle's result equals the scalar
//! solver's (the tests compare them with `==`; the only difference is the sign of a
//! zero, from adding the empty points of a lane with fewer than the bundle's
//! points). Which constraints share a bundle therefore changes nothing.
//!
//! Every warm start, solve and relax pass streams every bundle (twelve passes a
//! step with four substeps), so a bundle holds what every lane needs and no more:
//! - one normal per lane, not one per point: a pair's manifold has one. What only
//!   some lanes need waits in an [`Extras`] block beside the bundle, read and
//!   written only by bundles with such a lane: per-point normals (terrain bends
//!   them), the largest normal impulses (restitution), rolling resistance (the
//!   rain's spheres);
//! - A's anchors and the offset between the centres, not both sides' anchors
//!   ([`contact_solver::Frame::offset`]: both paths add it the same way);
//! - six values of each world inverse inertia ([`S3`]), which are symmetric.
//!
//! A bundle of eight is 2,048 bytes instead of 3,136; `large_pyramid` at one worker
//! (`step_scene large_pyramid 60 1`, eight alternating runs, medians): solve 11.52
//! -> 9.90 ms with the extras and the six-value inertias, 8.73 ms with the offset;
//! step 19.61 -> 17.65 -> 15.88 ms, on a loaded host.
//!
//! Constraints without points take the scalar path.
//! A colour whose count is not a multiple of the width ends with a partly empty
//! bundle.

use glam::{Mat3, Vec3, Vec4};

use super::lanes::{Lanes, MAX_LANES};
#[cfg(target_arch = "x86_64")]
use super::lanes::{F16, F8};
use crate::jobs::Column;
use crate::physics::contact_solver;
use crate::physics::contact_solver::{BodyState, Constraint, ConstraintTable, Frame, Prepared, StepContext, NONE};

/// Four or eight `Vec3`s, one per lane, as three lane values (x, y and z).
#[derive(Clone, Copy, Debug)]
pub(crate) struct V3<L> {
    x: L,
    y: L,
    z: L,
}

impl<L: Lanes> V3<L> {
    const ZERO: V3<L> = V3 { x: L::ZERO, y: L::ZERO, z: L::ZERO };

    #[inline(always)]
    fn set(&mut self, lane: usize, v: Vec3) {
        self.x.set(lane, v.x);
        self.y.set(lane, v.y);
        self.z.set(lane, v.z);
    }

    /// Lane `lane` as a vector.
    #[inline(always)]
    fn lane(self, lane: usize) -> Vec3 {
        Vec3::new(self.x.get(lane), self.y.get(lane), self.z.get(lane))
    }

    /// As `Vec3::dot`: `(x * x') + (y * y') + (z * z')`.
    #[inline(always)]
    fn dot(self, o: V3<L>) -> L {
        self.x * o.x + self.y * o.y + self.z * o.z
    }

    /// Per lane, `if_true` where `mask` is set, else `if_false`.
    #[inline(always)]
    fn select(mask: L::Mask, if_true: V3<L>, if_false: V3<L>) -> V3<L> {
        V3 {
            x: L::select(mask, if_true.x, if_false.x),
            y: L::select(mask, if_true.y, if_false.y),
            z: L::select(mask, if_true.z, if_false.z),
        }
    }

    /// As `Vec3::cross`.
    #[inline(always)]
    fn cross(self, o: V3<L>) -> V3<L> {
        V3 { x: self.y * o.z - o.y * self.z, y: self.z * o.x - o.z * self.x, z: self.x * o.y - o.x * self.y }
    }
}

impl<L: Lanes> std::ops::Add for V3<L> {
    type Output = V3<L>;
    #[inline(always)]
    fn add(self, o: V3<L>) -> V3<L> {
        V3 { x: self.x + o.x, y: self.y + o.y, z: self.z + o.z }
    }
}

impl<L: Lanes> std::ops::Sub for V3<L> {
    type Output = V3<L>;
    #[inline(always)]
    fn sub(self, o: V3<L>) -> V3<L> {
        V3 { x: self.x - o.x, y: self.y - o.y, z: self.z - o.z }
    }
}

impl<L: Lanes> std::ops::Mul<L> for V3<L> {
    type Output = V3<L>;
    #[inline(always)]
    fn mul(self, s: L) -> V3<L> {
        V3 { x: self.x * s, y: self.y * s, z: self.z * s }
    }
}

impl<L: Lanes> std::ops::AddAssign for V3<L> {
    #[inline(always)]
    fn add_assign(&mut self, o: V3<L>) {
        *self = *self + o;
    }
}

impl<L: Lanes> std::ops::SubAssign for V3<L> {
    #[inline(always)]
    fn sub_assign(&mut self, o: V3<L>) {
        *self = *self - o;
    }
}

/// A 3x3 matrix per lane, by columns as `Mat3` holds it: a rotation since the
/// step's start, or an inverse inertia or rolling mass.
#[derive(Clone, Copy, Debug)]
struct M3<L> {
    x_axis: V3<L>,
    y_axis: V3<L>,
    z_axis: V3<L>,
}

impl<L: Lanes> M3<L> {
    const ZERO: M3<L> = M3 { x_axis: V3::ZERO, y_axis: V3::ZERO, z_axis: V3::ZERO };

    #[inline(always)]
    fn set(&mut self, lane: usize, m: Mat3) {
        self.x_axis.set(lane, m.x_axis);
        self.y_axis.set(lane, m.y_axis);
        self.z_axis.set(lane, m.z_axis);
    }

    /// Rotations, built as `Mat3::from_quat` builds them.
    #[inline(always)]
    fn from_quats([x, y, z, w]: [L; 4]) -> M3<L> {
        let (x2, y2, z2) = (x + x, y + y, z + z);
        let (xx, xy, xz) = (x * x2, x * y2, x * z2);
        let (yy, yz, zz) = (y * y2, y * z2, z * z2);
        let (wx, wy, wz) = (w * x2, w * y2, w * z2);
        let one = L::ONE;
        M3 {
            x_axis: V3 { x: one - (yy + zz), y: xy + wz, z: xz - wy },
            y_axis: V3 { x: xy - wz, y: one - (xx + zz), z: yz + wx },
            z_axis: V3 { x: xz + wy, y: yz - wx, z: one - (xx + yy) },
        }
    }

    /// As `Mat3 * Vec3`.
    #[inline(always)]
    fn apply(&self, v: V3<L>) -> V3<L> {
        self.x_axis * v.x + self.y_axis * v.y + self.z_axis * v.z
    }
}

/// A symmetric 3x3 matrix per lane, a world inverse inertia: six lane values
/// instead of nine. [`crate::math::world_inertia`] makes every body's exactly
/// symmetric, so [`S3::apply`] computes what `Mat3 * Vec3` computes, to the bit.
#[derive(Clone, Copy, Debug)]
struct S3<L> {
    xx: L,
    xy: L,
    xz: L,
    yy: L,
    yz: L,
    zz: L,
}

impl<L: Lanes> S3<L> {
    const ZERO: S3<L> = S3 { xx: L::ZERO, xy: L::ZERO, xz: L::ZERO, yy: L::ZERO, yz: L::ZERO, zz: L::ZERO };

    #[inline(always)]
    fn set(&mut self, lane: usize, m: Mat3) {
        let bits = |m: Mat3| m.to_cols_array().map(f32::to_bits);
        debug_assert!(bits(m) == bits(m.transpose()), "not symmetric: {m:?}");
        self.xx.set(lane, m.x_axis.x);
        self.xy.set(lane, m.x_axis.y);
        self.xz.set(lane, m.x_axis.z);
        self.yy.set(lane, m.y_axis.y);
        self.yz.set(lane, m.y_axis.z);
        self.zz.set(lane, m.z_axis.z);
    }

    /// As `Mat3 * Vec3` (`x_axis * v.x + y_axis * v.y + z_axis * v.z`).
    #[inline(always)]
    fn apply(&self, v: V3<L>) -> V3<L> {
        V3 {
            x: self.xx * v.x + self.xy * v.y + self.xz * v.z,
            y: self.xy * v.x + self.yy * v.y + self.yz * v.z,
            z: self.xz * v.x + self.yz * v.y + self.zz * v.z,
        }
    }
}

/// One contact point slot of a bundle's constraints.
#[derive(Clone, Copy, Debug)]
struct WidePoint<L> {
    /// Relative to A's centre; B's anchor is this plus [`Bundle::offset`].
    anchor_a: V3<L>,
    base_separation: L,
    normal_mass: L,
    twist_arm: L,
    normal_impulse: L,
}

impl<L: Lanes> WidePoint<L> {
    /// Zeroes `lane` in every field: a point slot the lane's constraint does not fill.
    fn clear_lane(&mut self, lane: usize) {
        self.anchor_a.set(lane, Vec3::ZERO);
        for v in [&mut self.base_separation, &mut self.normal_mass, &mut self.twist_arm, &mut self.normal_impulse] {
            v.set(lane, 0.0);
        }
    }

    const ZERO: WidePoint<L> = WidePoint {
        anchor_a: V3::ZERO,
        base_separation: L::ZERO,
        normal_mass: L::ZERO,
        twist_arm: L::ZERO,
        normal_impulse: L::ZERO,
    };
}

/// `L::N` constraints of one colour, solved side by side. Empty lanes have no bodies
/// (`NONE`), no points and zero masses: they compute zeros and write nothing.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Bundle<L: Lanes> {
    /// The constraints' indices (`NONE`: empty lane).
    index: L::Words,
    row_a: L::Words,
    row_b: L::Words,
    inv_mass_a: L,
    inv_mass_b: L,
    /// World inverse inertias: the angular terms `Ia (r x d)` and the twist axes
    /// are computed from them at each use, as the scalar solver computes them (see
    /// the solver's module notes).
    inv_inertia_a: S3<L>,
    inv_inertia_b: S3<L>,
    friction: L,
    round_a: L,
    round_b: L,
    /// The first point's normal: every point's, unless a lane is bent
    /// (`bent_lanes`), and friction's tangents and twist axis.
    normal: V3<L>,
    /// A's centre minus B's: every anchor relative to B is the one relative to A
    /// plus this ([`contact_solver::Frame::offset`]), so B's are not stored.
    offset: V3<L>,
    /// Friction at the manifold's centre (see [`contact_solver::friction_center`]),
    /// relative to A's centre.
    friction_anchor_a: V3<L>,
    tangent_mass: [L; 2],
    tangent_impulse: [L; 2],
    twist_mass: L,
    twist_impulse: L,
    /// Points in the fullest lane.
    count: usize,
    points: [WidePoint<L>; 4],
    /// Lanes whose points do not all share the first point's normal (terrain), a
    /// bit each: when any, every lane's point normals are in [`Extras::normals`].
    bent_lanes: u32,
    /// Lanes with restitution: they keep their largest normal impulses in
    /// [`Extras::max_normal_impulse`].
    bouncy_lanes: u32,
    /// Lanes with rolling resistance ([`Extras::rolling`]).
    rolling_lanes: u32,
}

/// What only some lanes need, beside their bundle (in [`Bundles::extras`], not in
/// the bundle): each part is read and written only by a bundle with a lane that
/// needs it, so the bundles of a stack of boxes (one normal per manifold, no
/// restitution, no rolling) stream none of these lines.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Extras<L> {
    /// Each point slot's normal, when the bundle has a bent lane; the lane's first
    /// normal in its other slots and in the other lanes.
    normals: [V3<L>; 4],
    /// Each point's largest normal impulse of one iteration, when the bundle has a
    /// lane with restitution (the restitution pass reads them).
    max_normal_impulse: [L; 4],
    rolling: Rolling<L>,
}

impl<L: Lanes> Extras<L> {
    pub const EMPTY: Extras<L> =
        Extras { normals: [V3::ZERO; 4], max_normal_impulse: [L::ZERO; 4], rolling: Rolling::EMPTY };
}

/// The rolling resistance of a bundle's lanes ([`Constraint::rolling_resistance`]
/// and the terms the scalar solver reads with it, but the inverse inertias, which
/// every bundle holds); zero in lanes without.
#[derive(Clone, Copy, Debug)]
struct Rolling<L> {
    resistance: L,
    mass: M3<L>,
    impulse: V3<L>,
}

impl<L: Lanes> Rolling<L> {
    const EMPTY: Rolling<L> = Rolling { resistance: L::ZERO, mass: M3::ZERO, impulse: V3::ZERO };
}

/// A colouring's bundles of one width, with their extras: `extras[i]` belongs to
/// `bundles[i]`, and each of its parts is written or read only by a bundle with a
/// lane that needs it (see [`Extras`]), which sets it up first; the others keep
/// whatever they held.
#[derive(Debug)]
pub(crate) struct Bundles<L: Lanes> {
    pub bundles: Vec<Bundle<L>>,
    pub extras: Vec<Extras<L>>,
}

impl<L: Lanes> Default for Bundles<L> {
    fn default() -> Self {
        Bundles { bundles: Vec::new(), extras: Vec::new() }
    }
}

/// Whether a constraint can ride in a bundle: not without points (the scalar
/// solver skips its twist friction).
pub(crate) fn accepts(c: &Constraint) -> bool {
    c.count > 0
}

impl<L: Lanes> Bundle<L> {
    /// Empty lanes.
    pub const EMPTY: Bundle<L> = Bundle {
        index: L::UNSET,
        row_a: L::UNSET,
        row_b: L::UNSET,
        inv_mass_a: L::ZERO,
        inv_mass_b: L::ZERO,
        inv_inertia_a: S3::ZERO,
        inv_inertia_b: S3::ZERO,
        friction: L::ZERO,
        round_a: L::ZERO,
        round_b: L::ZERO,
        normal: V3::ZERO,
        offset: V3::ZERO,
        friction_anchor_a: V3::ZERO,
        tangent_mass: [L::ZERO; 2],
        tangent_impulse: [L::ZERO; 2],
        twist_mass: L::ZERO,
        twist_impulse: L::ZERO,
        count: 0,
        points: [WidePoint::ZERO; 4],
        bent_lanes: 0,
        bouncy_lanes: 0,
        rolling_lanes: 0,
    };

    /// Packs constraint `index` into `lane`, which must be empty, and what only
    /// some lanes need into `extras`, this bundle's block (each part set up when the
    /// bundle takes its first lane that needs it). Only what [`contact_solver::prepare`]
    /// starts from goes in: the anchors, normals, separations and impulses;
    /// [`Width::finish`] computes the rest for every lane at once, once all are
    /// packed. The constraint is only read.
    pub fn prepare_lane(&mut self, extras: &mut Extras<L>, lane: usize, index: u32, c: &Constraint, frame: &Frame) {
        assert!(lane < L::N, "a bundle holds {} constraints", L::N);
        debug_assert!(self.index.as_ref()[lane] == NONE, "lane {lane} is taken");
        debug_assert!(c.count > 0, "a bundled constraint has points");
        // Past a lane's count its points stay zero. A point's normal mass holds 1
        // until `finish` (which computes masses only where it finds one) and its
        // base separation the separation.
        let center = contact_solver::friction_center(c);
        for ((w, p), &impulse) in self.points.iter_mut().zip(c.points()).zip(&c.normal_impulse) {
            w.anchor_a.set(lane, p.point - frame.center_a);
            w.base_separation.set(lane, p.separation);
            w.normal_mass.set(lane, 1.0);
            w.twist_arm.set(lane, contact_solver::twist_arm(p, center));
            w.normal_impulse.set(lane, impulse);
        }
        let first = c.points[0].normal;
        let bits = |v: Vec3| v.to_array().map(f32::to_bits);
        if c.points().iter().any(|p| bits(p.normal) != bits(first)) {
            if self.bent_lanes == 0 {
                // Each lane packed so far has one normal; the others are written when
                // they are packed, or stay empty (zero).
                for (l, n) in (0..L::N).map(|l| (l, self.normal.lane(l))) {
                    extras.normals.iter_mut().for_each(|slot| slot.set(l, n));
                }
            }
            self.bent_lanes |= 1 << lane;
        }
        self.normal.set(lane, first);
        if self.bent_lanes != 0 {
            for (k, slot) in extras.normals.iter_mut().enumerate() {
                slot.set(lane, c.points().get(k).map_or(first, |p| p.normal));
            }
        }
        if c.restitution != 0.0 {
            if self.bouncy_lanes == 0 {
                extras.max_normal_impulse = [L::ZERO; 4];
            }
            self.bouncy_lanes |= 1 << lane;
        }
        self.offset.set(lane, frame.offset());
        self.friction_anchor_a.set(lane, center - frame.center_a);
        self.tangent_impulse[0].set(lane, c.tangent_impulse[0]);
        self.tangent_impulse[1].set(lane, c.tangent_impulse[1]);
        self.index.as_mut()[lane] = index;
        (self.row_a.as_mut()[lane], self.row_b.as_mut()[lane]) = (c.row_a, c.row_b);
        self.inv_mass_a.set(lane, frame.inv_mass_a);
        self.inv_mass_b.set(lane, frame.inv_mass_b);
        self.inv_inertia_a.set(lane, frame.inv_inertia_a);
        self.inv_inertia_b.set(lane, frame.inv_inertia_b);
        self.friction.set(lane, c.friction);
        self.round_a.set(lane, c.round_a);
        self.round_b.set(lane, c.round_b);
        self.twist_impulse.set(lane, c.twist_impulse);
        self.count = self.count.max(c.count as usize);
        if c.rolling_resistance > 0.0 {
            if self.rolling_lanes == 0 {
                extras.rolling = Rolling::EMPTY;
            }
            self.rolling_lanes |= 1 << lane;
            let r = &mut extras.rolling;
            r.resistance.set(lane, c.rolling_resistance);
            r.mass.set(lane, contact_solver::rolling_mass(frame.inv_inertia_a, frame.inv_inertia_b));
            r.impulse.set(lane, c.rolling_impulse);
        }
    }

    /// Point slot `k`'s normals: the bundle's one normal, unless a lane is bent.
    #[inline(always)]
    fn normal_of(&self, extras: &Extras<L>, k: usize) -> V3<L> {
        if self.bent_lanes != 0 {
            extras.normals[k]
        } else {
            self.normal
        }
    }

    /// Makes a bundle ready for [`Bundle::prepare_lane`] on all `L::N` lanes, whose
    /// constraints have `counts` points, without writing the whole bundle: every
    /// lane's own fields are overwritten by its prepare, and only the point slots a
    /// lane leaves empty below the fullest lane's count (the solver reads no further)
    /// need zeros. Cheaper than assigning [`Bundle::EMPTY`], a copy of the whole
    /// bundle.
    pub fn reset_full(&mut self, counts: &[u32]) {
        debug_assert_eq!(counts.len(), L::N);
        let most = counts.iter().copied().max().unwrap_or(0) as usize;
        for (i, point) in self.points[..most.min(4)].iter_mut().enumerate() {
            for (lane, &n) in counts.iter().enumerate() {
                if (n as usize) <= i {
                    point.clear_lane(lane);
                }
            }
        }
        self.count = 0;
        (self.bent_lanes, self.bouncy_lanes, self.rolling_lanes) = (0, 0, 0);
        self.index = L::UNSET;
    }

    /// The constraints' indices, lane by lane (empty lanes come last).
    pub fn indices(&self) -> &[u32] {
        let index = self.index.as_ref();
        let lanes = index.iter().position(|&i| i == NONE).unwrap_or(L::N);
        &index[..lanes]
    }

    /// Copies the accumulated impulses (from `extras` too, this bundle's block)
    /// back into the constraints, and for a constraint with restitution the points'
    /// largest normal impulses into its row of `prepared` (the restitution pass reads
    /// them there). `next` (the next bundle's constraints) are prefetched one per
    /// lane, so their fetches overlap this bundle's copies.
    ///
    /// # Safety
    /// No other thread touches this bundle's constraints or their rows of `prepared`
    /// meanwhile.
    pub unsafe fn unpack(
        &self,
        extras: &Extras<L>,
        constraints: &ConstraintTable,
        prepared: &Column<Prepared>,
        next: &[u32],
    ) {
        for (lane, &index) in self.indices().iter().enumerate() {
            if let Some(&next) = next.get(lane) {
                // Its first line: all that is written (see [`Constraint`]).
                crate::math::prefetch(constraints.ptr(next as usize).cast::<[u8; 64]>());
            }
            // SAFETY: forwarded from the caller.
            let c = unsafe { constraints.get_unchecked(index as usize) };
            c.tangent_impulse = [self.tangent_impulse[0].get(lane), self.tangent_impulse[1].get(lane)];
            c.twist_impulse = self.twist_impulse.get(lane);
            if self.rolling_lanes >> lane & 1 == 1 {
                c.rolling_impulse = extras.rolling.impulse.lane(lane);
            }
            for (impulse, w) in c.normal_impulse[..c.count as usize].iter_mut().zip(&self.points) {
                *impulse = w.normal_impulse.get(lane);
            }
            if self.bouncy_lanes >> lane & 1 == 1 {
                // SAFETY: forwarded from the caller.
                let s = unsafe { prepared.get(index as usize) };
                for (q, m) in s.points[..c.count as usize].iter_mut().zip(&extras.max_normal_impulse) {
                    q.max_normal_impulse = m.get(lane);
                }
            }
        }
    }

    /// The addresses of the A (`side` 0) or B bodies' states: a still state for
    /// empty lanes and `NONE` (which is past every column, so one comparison finds
    /// both).
    #[inline(always)]
    fn states(&self, states: &Column<BodyState>, side: usize) -> [*const BodyState; MAX_LANES] {
        static STILL: BodyState = BodyState::STILL;
        let rows = if side == 0 { self.row_a.as_ref() } else { self.row_b.as_ref() };
        let mut at: [*const BodyState; MAX_LANES] = [&STILL; MAX_LANES];
        for i in 0..L::N {
            if (rows[i] as usize) < states.len() {
                at[i] = states.ptr(rows[i] as usize);
            }
        }
        at
    }

    /// Writes the A (`side` 0) or B dynamic bodies' velocities back as the first row
    /// of their states at `at` (with `dp.xy` as [`gather`] read it). A velocity that
    /// overflowed takes [`contact_solver::write`], which saturates it.
    ///
    /// # Safety
    /// `at` is [`Bundle::states`] of `states`, and the caller is the only thread
    /// touching the bundle's dynamic rows.
    #[inline(always)]
    unsafe fn write(
        &self,
        (states, at): (&Column<BodyState>, &[*const BodyState; MAX_LANES]),
        side: usize,
        (v, w, dp_xy): (V3<L>, V3<L>, [L; 2]),
    ) {
        let (rows, inv_mass) =
            if side == 0 { (self.row_a.as_ref(), self.inv_mass_a) } else { (self.row_b.as_ref(), self.inv_mass_b) };
        // `(v + w).is_finite()` as `contact_solver::write` asks it: `x * 0` is a zero for
        // finite x and NaN for infinities and NaN.
        let (sum, zero) = (v + w, L::ZERO);
        let finite = L::bits(((sum.x * zero) + (sum.y * zero) + (sum.z * zero)).cmpeq(zero));
        let dynamic = L::bits(inv_mass.cmpgt(L::ZERO));
        let mut to = [std::ptr::null_mut(); MAX_LANES];
        let mut overflowed = 0;
        for i in 0..L::N {
            if (rows[i] as usize) < states.len() && dynamic >> i & 1 == 1 {
                match finite >> i & 1 {
                    1 => to[i] = BodyState::rows(at[i])[0].cast_mut(),
                    _ => overflowed |= 1 << i,
                }
            }
        }
        // SAFETY: every address is a whole state's row; forwarded from the caller.
        unsafe { L::scatter_rows([v.x, v.y, v.z, w.x, w.y, w.z, dp_xy[0], dp_xy[1]], &to) };
        if overflowed != 0 {
            for i in (0..L::N).filter(|i| overflowed >> i & 1 == 1) {
                // SAFETY: forwarded from the caller.
                unsafe { contact_solver::write(states, rows[i], true, v.lane(i), w.lane(i)) };
            }
        }
    }
}

/// Row `half` of the states at `at` as lane values (see [`BodyState`]): `v`, `w`,
/// `dp.xy`, or `dp.z`, `spare`, `dq`.
///
/// # Safety
/// `at` is [`Bundle::states`] of a column no other thread writes meanwhile.
#[inline(always)]
unsafe fn gather<L: Lanes>(at: &[*const BodyState; MAX_LANES], half: usize) -> [L; 8] {
    let mut rows = [std::ptr::null(); MAX_LANES];
    for i in 0..MAX_LANES {
        rows[i] = BodyState::rows(at[i])[half];
    }
    // SAFETY: every address is a whole state's row; forwarded from the caller.
    unsafe { L::gather_rows(&rows) }
}

/// The lane widths the solver runs: the kernels, compiled for each.
pub(crate) trait Width: Lanes {
    /// [`finish`]: the effective masses and base separations of a packed bundle.
    fn finish(b: &mut Bundle<Self>, e: &Extras<Self>);

    /// [`contact_solver::warm_start`] on every lane.
    ///
    /// # Safety
    /// The bundle's dynamic bodies are touched by no other thread meanwhile.
    unsafe fn warm_start(b: &Bundle<Self>, e: &Extras<Self>, states: &Column<BodyState>);

    /// [`contact_solver::solve`] on every lane.
    ///
    /// # Safety
    /// As [`Width::warm_start`].
    unsafe fn solve(
        b: &mut Bundle<Self>,
        e: &mut Extras<Self>,
        states: &Column<BodyState>,
        ctx: &StepContext,
        use_bias: bool,
    );
}

impl Width for Vec4 {
    fn finish(b: &mut Bundle<Vec4>, e: &Extras<Vec4>) {
        finish(b, e);
    }

    unsafe fn warm_start(b: &Bundle<Vec4>, e: &Extras<Vec4>, states: &Column<BodyState>) {
        // SAFETY: forwarded from the caller.
        unsafe { warm_start(b, e, states) }
    }

    unsafe fn solve(
        b: &mut Bundle<Vec4>,
        e: &mut Extras<Vec4>,
        states: &Column<BodyState>,
        ctx: &StepContext,
        use_bias: bool,
    ) {
        // SAFETY: forwarded from the caller.
        unsafe { solve(b, e, states, ctx, use_bias) }
    }
}

/// Eight lanes: only built by a `Coloring` that found AVX (`lanes::eight_available`).
///
/// Where the CPU has AVX-512VL too ([`super::lanes::more_registers`]), the warm start and
/// the solve are compiled a second time with it: the same 256-bit arithmetic, but
/// with 32 vector registers instead of 16, so the solve spills less. Same bits
/// (the tests run both); `large_pyramid` at one worker (`step_scene large_pyramid
/// 60 1`, eight alternating runs, medians): solve 6.56 -> 6.23 ms, step 11.98 -> 11.51.
#[cfg(target_arch = "x86_64")]
impl Width for F8 {
    fn finish(b: &mut Bundle<F8>, e: &Extras<F8>) {
        #[target_feature(enable = "avx")]
        fn avx(b: &mut Bundle<F8>, e: &Extras<F8>) {
            finish(b, e);
        }
        // SAFETY: bundles of eight exist only with AVX.
        unsafe { avx(b, e) }
    }

    unsafe fn warm_start(b: &Bundle<F8>, e: &Extras<F8>, states: &Column<BodyState>) {
        #[target_feature(enable = "avx")]
        unsafe fn avx(b: &Bundle<F8>, e: &Extras<F8>, states: &Column<BodyState>) {
            // SAFETY: forwarded from the caller.
            unsafe { warm_start(b, e, states) }
        }
        #[target_feature(enable = "avx,avx512f,avx512vl")]
        unsafe fn avx512(b: &Bundle<F8>, e: &Extras<F8>, states: &Column<BodyState>) {
            // SAFETY: forwarded from the caller.
            unsafe { warm_start(b, e, states) }
        }
        // SAFETY: forwarded from the caller; bundles of eight exist only with AVX, and
        // the second only runs where the CPU has AVX-512VL.
        unsafe {
            match super::lanes::more_registers() {
                true => avx512(b, e, states),
                false => avx(b, e, states),
            }
        }
    }

    unsafe fn solve(
        b: &mut Bundle<F8>,
        e: &mut Extras<F8>,
        states: &Column<BodyState>,
        ctx: &StepContext,
        use_bias: bool,
    ) {
        #[target_feature(enable = "avx")]
        unsafe fn avx(
            b: &mut Bundle<F8>,
            e: &mut Extras<F8>,
            states: &Column<BodyState>,
            ctx: &StepContext,
            use_bias: bool,
        ) {
            // SAFETY: forwarded from the caller.
            unsafe { solve(b, e, states, ctx, use_bias) }
        }
        #[target_feature(enable = "avx,avx512f,avx512vl")]
        unsafe fn avx512(
            b: &mut Bundle<F8>,
            e: &mut Extras<F8>,
            states: &Column<BodyState>,
            ctx: &StepContext,
            use_bias: bool,
        ) {
            // SAFETY: forwarded from the caller.
            unsafe { solve(b, e, states, ctx, use_bias) }
        }
        // SAFETY: as in `warm_start`.
        unsafe {
            match super::lanes::more_registers() {
                true => avx512(b, e, states, ctx, use_bias),
                false => avx(b, e, states, ctx, use_bias),
            }
        }
    }
}

/// Sixteen lanes: only built by a `Coloring` that found AVX-512F
/// (`lanes::sixteen_available`). The kernels are compiled once, with AVX-512F (32
/// vector registers).
#[cfg(target_arch = "x86_64")]
impl Width for F16 {
    fn finish(b: &mut Bundle<F16>, e: &Extras<F16>) {
        #[target_feature(enable = "avx512f")]
        fn avx512(b: &mut Bundle<F16>, e: &Extras<F16>) {
            finish(b, e);
        }
        // SAFETY: bundles of sixteen exist only with AVX-512F.
        unsafe { avx512(b, e) }
    }

    unsafe fn warm_start(b: &Bundle<F16>, e: &Extras<F16>, states: &Column<BodyState>) {
        #[target_feature(enable = "avx512f")]
        unsafe fn avx512(b: &Bundle<F16>, e: &Extras<F16>, states: &Column<BodyState>) {
            // SAFETY: forwarded from the caller.
            unsafe { warm_start(b, e, states) }
        }
        // SAFETY: forwarded from the caller; bundles of sixteen exist only with
        // AVX-512F.
        unsafe { avx512(b, e, states) }
    }

    unsafe fn solve(
        b: &mut Bundle<F16>,
        e: &mut Extras<F16>,
        states: &Column<BodyState>,
        ctx: &StepContext,
        use_bias: bool,
    ) {
        #[target_feature(enable = "avx512f")]
        unsafe fn avx512(
            b: &mut Bundle<F16>,
            e: &mut Extras<F16>,
            states: &Column<BodyState>,
            ctx: &StepContext,
            use_bias: bool,
        ) {
            // SAFETY: forwarded from the caller.
            unsafe { solve(b, e, states, ctx, use_bias) }
        }
        // SAFETY: as in `warm_start`.
        unsafe { avx512(b, e, states, ctx, use_bias) }
    }
}

/// A state row's velocities (`[v, w, dp.xy]`).
#[inline(always)]
fn velocities<L: Lanes>([vx, vy, vz, wx, wy, wz, px, py]: [L; 8]) -> (V3<L>, V3<L>, [L; 2]) {
    (V3 { x: vx, y: vy, z: vz }, V3 { x: wx, y: wy, z: wz }, [px, py])
}

/// As the scalar `relative`: `vb + wb x rb - va - wa x ra`.
#[inline(always)]
fn relative<L: Lanes>(va: V3<L>, wa: V3<L>, vb: V3<L>, wb: V3<L>, ra: V3<L>, rb: V3<L>) -> V3<L> {
    vb + wb.cross(rb) - va - wa.cross(ra)
}

/// As [`contact_solver::angular`]: `inv_inertia * (anchor x d)`.
#[inline(always)]
fn angular<L: Lanes>(inv_inertia: &S3<L>, anchor: V3<L>, d: V3<L>) -> V3<L> {
    inv_inertia.apply(anchor.cross(d))
}

/// As [`contact_solver::tangents`], which gives every point its tangents at each use.
#[inline(always)]
fn tangents<L: Lanes>(n: V3<L>) -> (V3<L>, V3<L>) {
    let zero = L::ZERO;
    // `n.z >= 0.0`: false for NaN, as in the scalar comparison.
    let sign = L::select(n.z.cmpgt(zero) | n.z.cmpeq(zero), L::ONE, -L::ONE);
    let a = -L::ONE / (sign + n.z);
    let b = n.x * n.y * a;
    let t1 = V3 { x: L::ONE + sign * n.x * n.x * a, y: sign * b, z: -sign * n.x };
    let t2 = V3 { x: b, y: sign + n.y * n.y * a, z: -n.y };
    (t1, t2)
}

/// The rest of [`contact_solver::prepare`] for every lane of a bundle that
/// [`Bundle::prepare_lane`] packed, operation for operation as the scalar prepare
/// computes it: the twist mass, and each point's base separation and effective
/// masses. Points a lane does not have (normal mass 0) keep zero masses.
#[inline(always)]
fn finish<L: Lanes>(b: &mut Bundle<L>, e: &Extras<L>) {
    let (ma, mb) = (b.inv_mass_a, b.inv_mass_b);
    let (ia, ib) = (&b.inv_inertia_a, &b.inv_inertia_b);
    let n = b.normal;
    b.twist_mass = inverse(n.dot(ia.apply(n)) + n.dot(ib.apply(n)));
    let (tangent1, tangent2) = tangents(n);
    // No closure here: closures do not inherit the kernels' target features.
    let (side_a, side_b) = ((ia, b.friction_anchor_a), (ib, b.friction_anchor_a + b.offset));
    b.tangent_mass =
        [inverse(effective(ma + mb, side_a, side_b, tangent1)), inverse(effective(ma + mb, side_a, side_b, tangent2))];
    for k in 0..b.count {
        let n = b.normal_of(e, k);
        let p = &mut b.points[k];
        let present = p.normal_mass.cmpgt(L::ZERO);
        let (ra, rb) = (p.anchor_a, p.anchor_a + b.offset);
        let (ta, tb) = (ra - n * b.round_a, rb + n * b.round_b);
        p.base_separation = p.base_separation - (tb - ta).dot(n);
        p.normal_mass = L::select(present, inverse(effective(ma + mb, (ia, ra), (ib, rb), n)), L::ZERO);
    }
}

/// `1 / k` where `k > 0`, else zero.
#[inline(always)]
fn inverse<L: Lanes>(k: L) -> L {
    L::select(k.cmpgt(L::ZERO), L::ONE / k, L::ZERO)
}

/// The inverse effective mass along `d`: `ma + mb + (ra x d) Ia (ra x d) + (rb x d) Ib
/// (rb x d)` (`masses` is `ma + mb`).
#[inline(always)]
fn effective<L: Lanes>(masses: L, (ia, ra): (&S3<L>, V3<L>), (ib, rb): (&S3<L>, V3<L>), d: V3<L>) -> L {
    masses + ra.cross(d).dot(angular(ia, ra, d)) + rb.cross(d).dot(angular(ib, rb, d))
}

/// [`contact_solver::warm_start`] on every lane.
///
/// # Safety
/// The bundle's dynamic bodies are touched by no other thread meanwhile.
#[inline(always)]
unsafe fn warm_start<L: Lanes>(b: &Bundle<L>, e: &Extras<L>, states: &Column<BodyState>) {
    let (at_a, at_b) = (b.states(states, 0), b.states(states, 1));
    // SAFETY: forwarded from the caller.
    let (a, b_) = unsafe { (gather(&at_a, 0), gather(&at_b, 0)) };
    let ((mut va, mut wa, pa), (mut vb, mut wb, pb)) = (velocities(a), velocities(b_));
    if b.rolling_lanes != 0 {
        let r = &e.rolling;
        let rolls = r.resistance.cmpgt(L::ZERO);
        wa = V3::select(rolls, wa - b.inv_inertia_a.apply(r.impulse), wa);
        wb = V3::select(rolls, wb + b.inv_inertia_b.apply(r.impulse), wb);
    }
    let (ia, ib) = (&b.inv_inertia_a, &b.inv_inertia_b);
    // The twist axes as the prepare computes them ([`contact_solver::Prepared::twist_axes`]).
    wa -= ia.apply(b.normal) * b.twist_impulse;
    wb += ib.apply(b.normal) * b.twist_impulse;
    let (mut torque_a, mut torque_b) = (V3::ZERO, V3::ZERO);
    let (tangent1, tangent2) = tangents(b.normal);
    let impulse = tangent1 * b.tangent_impulse[0] + tangent2 * b.tangent_impulse[1];
    va -= impulse * b.inv_mass_a;
    torque_a += b.friction_anchor_a.cross(impulse);
    vb += impulse * b.inv_mass_b;
    torque_b += (b.friction_anchor_a + b.offset).cross(impulse);
    for (k, p) in b.points[..b.count].iter().enumerate() {
        let impulse = b.normal_of(e, k) * p.normal_impulse;
        va -= impulse * b.inv_mass_a;
        torque_a += p.anchor_a.cross(impulse);
        vb += impulse * b.inv_mass_b;
        torque_b += (p.anchor_a + b.offset).cross(impulse);
    }
    wa -= ia.apply(torque_a);
    wb += ib.apply(torque_b);
    // SAFETY: forwarded from the caller.
    unsafe {
        b.write((states, &at_a), 0, (va, wa, pa));
        b.write((states, &at_b), 1, (vb, wb, pb));
    }
}

/// What [`normal_block`] found for a bundle: the lanes it solved, their velocities,
/// and each point slot's accumulated impulse (where the slot takes part, `active`).
struct Block<L: Lanes> {
    lanes: L::Mask,
    va: V3<L>,
    wa: V3<L>,
    vb: V3<L>,
    wb: V3<L>,
    active: [L::Mask; 4],
    total: [L; 4],
}

/// [`crate::physics::block::normal_block`] on every lane, with the same operations in the same
/// order: a lane's empty point slots (normal mass 0) are identity rows of the
/// system, which leave its other rows' bits alone. `terms` are each slot's
/// `[mass, bias, impulse scale, mass scale]`. A lane that the block does not solve
/// (fewer than two points, a singular system, an impulse turning negative) is
/// solved one point after another by the caller; an empty lane counts as solved.
#[inline(always)]
#[allow(clippy::needless_range_loop)] // the elimination's indices are the algebra's
fn normal_block<L: Lanes>(
    b: &Bundle<L>,
    e: &Extras<L>,
    (va, wa, vb, wb): (V3<L>, V3<L>, V3<L>, V3<L>),
    terms: &[[L; 4]; 4],
    use_bias: bool,
) -> Block<L> {
    let zero = L::ZERO;
    let half = L::splat(0.5);
    let count = b.count;
    let (ma, mb) = (b.inv_mass_a, b.inv_mass_b);
    let (ia, ib) = (&b.inv_inertia_a, &b.inv_inertia_b);
    let mut k = [[zero; 4]; 4];
    let mut x = [zero; 4];
    let mut arms = [(V3::ZERO, V3::ZERO); 4];
    let mut turned = [(V3::ZERO, V3::ZERO); 4];
    let mut active = [zero; 4];
    let mut taking_part = zero;
    for i in 0..count {
        let (n, p) = (b.normal_of(e, i), &b.points[i]);
        let is_active = p.normal_mass.cmpgt(zero);
        active[i] = L::select(is_active, L::ONE, zero);
        taking_part = taking_part + active[i];
        let [_, bias, impulse_scale, mass_scale] = terms[i];
        arms[i] = (p.anchor_a.cross(n), (p.anchor_a + b.offset).cross(n));
        turned[i] = (ia.apply(arms[i].0), ib.apply(arms[i].1));
        let vn = (vb - va).dot(n) + wb.dot(arms[i].1) - wa.dot(arms[i].0);
        let own = L::ONE / p.normal_mass;
        // As the scalar block: the relax pass regularizes the increment alone.
        let (compliance, leak) = if use_bias {
            let compliance = own * (impulse_scale / mass_scale);
            (compliance, compliance * p.normal_impulse)
        } else {
            (own * L::splat(crate::physics::block::BLOCK_REGULARIZATION), zero)
        };
        x[i] = L::select(is_active, -(vn + bias) - leak, zero);
        k[i][i] = L::select(is_active, compliance, L::ONE);
    }
    for i in 0..count {
        for j in 0..count {
            let (ni, nj) = (b.normal_of(e, i), b.normal_of(e, j));
            let both = (active[i] * active[j]).cmpgt(half);
            let term = (ma + mb) * ni.dot(nj) + arms[i].0.dot(turned[j].0) + arms[i].1.dot(turned[j].1);
            k[i][j] = L::select(both, k[i][j] + term, k[i][j]);
        }
    }
    for col in 0..count {
        for r in col + 1..count {
            let f = k[r][col] / k[col][col];
            for cc in col..count {
                k[r][cc] = k[r][cc] - f * k[col][cc];
            }
            x[r] = x[r] - f * x[col];
        }
    }
    for r in (0..count).rev() {
        let mut sum = x[r];
        for cc in r + 1..count {
            sum = sum - k[r][cc] * x[cc];
        }
        x[r] = sum / k[r][r];
    }
    let mut holds = L::select(taking_part.cmpgt(L::splat(1.5)), L::ONE, zero);
    let mut total = [zero; 4];
    for i in 0..count {
        total[i] = b.points[i].normal_impulse + x[i];
        // As the scalar `is_finite`: an infinity times zero is NaN too.
        let fails = zero.cmpgt(total[i]) | (x[i] * zero).is_nan_mask();
        holds = L::select(fails, zero, holds);
    }
    let lanes = holds.cmpgt(half) | taking_part.cmpeq(zero);
    let (mut va, mut wa, mut vb, mut wb) = (va, wa, vb, wb);
    let mut masks = [zero.cmpgt(L::ONE); 4];
    for i in 0..count {
        let is_active = active[i].cmpgt(half);
        masks[i] = is_active;
        let impulse = total[i] - b.points[i].normal_impulse;
        let j = b.normal_of(e, i) * impulse;
        va = V3::select(is_active, va - j * ma, va);
        wa = V3::select(is_active, wa - turned[i].0 * impulse, wa);
        vb = V3::select(is_active, vb + j * mb, vb);
        wb = V3::select(is_active, wb + turned[i].1 * impulse, wb);
    }
    Block { lanes, va, wa, vb, wb, active: masks, total }
}

/// [`contact_solver::solve`] on every lane.
///
/// # Safety
/// The bundle's dynamic bodies are touched by no other thread meanwhile.
#[inline(always)]
unsafe fn solve<L: Lanes>(
    b: &mut Bundle<L>,
    e: &mut Extras<L>,
    states: &Column<BodyState>,
    ctx: &StepContext,
    use_bias: bool,
) {
    let (at_a, at_b) = (b.states(states, 0), b.states(states, 1));
    // SAFETY: forwarded from the caller.
    let (a, b_) = unsafe { (gather(&at_a, 0), gather(&at_b, 0)) };
    let ((mut va, mut wa, pa), (mut vb, mut wb, pb)) = (velocities(a), velocities(b_));
    // SAFETY: forwarded from the caller.
    let ([za, _, _, _, qa @ ..], [zb, _, _, _, qb @ ..]) = unsafe { (gather(&at_a, 1), gather(&at_b, 1)) };
    let (ma, mb) = (b.inv_mass_a, b.inv_mass_b);
    let (ia, ib) = (&b.inv_inertia_a, &b.inv_inertia_b);
    let zero = L::ZERO;
    let against_static = ma.cmpeq(zero) | mb.cmpeq(zero);
    let pick = |s: f32, d: f32| L::select(against_static, L::splat(s), L::splat(d));
    let rate = pick(ctx.static_soft.bias_rate, ctx.soft.bias_rate);
    let soft_mass = pick(ctx.static_soft.mass_scale, ctx.soft.mass_scale);
    let soft_impulse = pick(ctx.static_soft.impulse_scale, ctx.soft.impulse_scale);
    let (inv_h, push_out) = (L::splat(ctx.inv_h), L::splat(-ctx.push_out));
    let moved = V3 { x: pb[0], y: pb[1], z: zb } - V3 { x: pa[0], y: pa[1], z: za };
    let (turn_a, turn_b) = (M3::from_quats(qa), M3::from_quats(qb));
    // The separations' terms first, in a loop of their own: the turns are not needed
    // past it, and keeping them live beside the velocities spilled both.
    let mut terms = [[zero; 4]; 4];
    for (k, (p, terms)) in b.points[..b.count].iter().zip(&mut terms).enumerate() {
        let n = b.normal_of(e, k);
        let (ta, tb) = (p.anchor_a - n * b.round_a, (p.anchor_a + b.offset) + n * b.round_b);
        let d = moved + (turn_b.apply(tb) - turn_a.apply(ta));
        let s = d.dot(n) + p.base_separation;
        let speculative = s.cmpgt(zero);
        let (bias, mass_scale, impulse_scale) = if use_bias {
            (
                L::select(speculative, s * inv_h, (rate * s).max(push_out)),
                L::select(speculative, L::ONE, soft_mass),
                L::select(speculative, zero, soft_impulse),
            )
        } else {
            (L::select(speculative, s * inv_h, zero), L::ONE, zero)
        };
        *terms = [-p.normal_mass * mass_scale, bias, impulse_scale, mass_scale];
    }
    let block = normal_block(b, e, (va, wa, vb, wb), &terms, use_bias);
    let all = if L::N >= 32 { u32::MAX } else { (1u32 << L::N) - 1 };
    let every_lane = L::bits(block.lanes) == all;
    let before = [0, 1, 2, 3].map(|k| b.points[k].normal_impulse);
    let max_before = if b.bouncy_lanes != 0 { e.max_normal_impulse } else { [zero; 4] };
    for (k, &[mass, bias, impulse_scale, _]) in terms[..if every_lane { 0 } else { b.count }].iter().enumerate() {
        let n = b.normal_of(e, k);
        let p = &mut b.points[k];
        // As the scalar solve: the arms' turns about the normal, for both the normal
        // velocity and the angular impulse.
        let (arm_a, arm_b) = (p.anchor_a.cross(n), (p.anchor_a + b.offset).cross(n));
        let vn = (vb - va).dot(n) + wb.dot(arm_b) - wa.dot(arm_a);
        let impulse = mass * (vn + bias) - impulse_scale * p.normal_impulse;
        // max with 0 second: a NaN becomes 0, as the scalar `max` makes it.
        let total = (p.normal_impulse + impulse).max(zero).min(L::splat(f32::MAX));
        let impulse = total - p.normal_impulse;
        p.normal_impulse = total;
        if b.bouncy_lanes != 0 {
            e.max_normal_impulse[k] = impulse.max(e.max_normal_impulse[k]);
        }
        let j = n * impulse;
        va -= j * ma;
        wa -= ia.apply(arm_a) * impulse;
        vb += j * mb;
        wb += ib.apply(arm_b) * impulse;
    }
    // The lanes solved as a block take its velocities and impulses.
    let lanes = block.lanes;
    (va, wa) = (V3::select(lanes, block.va, va), V3::select(lanes, block.wa, wa));
    (vb, wb) = (V3::select(lanes, block.vb, vb), V3::select(lanes, block.wb, wb));
    for k in 0..b.count {
        let (active, total) = (block.active[k], block.total[k]);
        let p = &mut b.points[k];
        p.normal_impulse = L::select(lanes, L::select(active, total, before[k]), p.normal_impulse);
        if b.bouncy_lanes != 0 {
            let kept = L::select(active, (total - before[k]).max(max_before[k]), max_before[k]);
            e.max_normal_impulse[k] = L::select(lanes, kept, e.max_normal_impulse[k]);
        }
    }
    let normal = b.points[..b.count].iter().fold(L::splat(-0.0), |sum, p| sum + p.normal_impulse);
    // Friction at the manifold's centre, as the scalar solve.
    let (ra, rb) = (b.friction_anchor_a, b.friction_anchor_a + b.offset);
    let dv = relative(va, wa, vb, wb, ra, rb);
    let old = b.tangent_impulse;
    let (tangent1, tangent2) = tangents(b.normal);
    let t = [old[0] - b.tangent_mass[0] * dv.dot(tangent1), old[1] - b.tangent_mass[1] * dv.dot(tangent2)];
    let limit = b.friction * normal;
    let length_sq = t[0] * t[0] + t[1] * t[1];
    let over = length_sq.cmpgt(limit * limit);
    // Sliding lanes only: resting contacts skip the square root and the division.
    let t = if L::bits(over) != 0 {
        let scale = limit / length_sq.sqrt();
        [L::select(over, t[0] * scale, t[0]), L::select(over, t[1] * scale, t[1])]
    } else {
        t
    };
    b.tangent_impulse = t;
    let (d1, d2) = (t[0] - old[0], t[1] - old[1]);
    let j = tangent1 * d1 + tangent2 * d2;
    va -= j * ma;
    wa -= angular(ia, ra, j);
    vb += j * mb;
    wb += angular(ib, rb, j);
    let levers = b.points[..b.count].iter().fold(L::splat(-0.0), |sum, p| sum + p.normal_impulse * p.twist_arm);
    let limit = b.friction * levers;
    // The scalar clamp leaves a value alone when the limit is NaN (0 x inf).
    let limit = L::select(limit.is_nan_mask(), L::splat(f32::INFINITY), limit);
    let old = b.twist_impulse;
    let total = (old - b.twist_mass * b.normal.dot(wb - wa)).max(-limit).min(limit);
    b.twist_impulse = total;
    wa -= ia.apply(b.normal) * (total - old);
    wb += ib.apply(b.normal) * (total - old);
    if b.rolling_lanes != 0 {
        // The scalar `rolling_resistance > 0.0` block, in the lanes that have it.
        let r = &mut e.rolling;
        let rolls = r.resistance.cmpgt(zero);
        let limit = r.resistance * normal;
        let old = r.impulse;
        let total = old - r.mass.apply(wb - wa);
        let length_sq = total.dot(total);
        let over = length_sq.cmpgt(limit * limit);
        let total = V3::select(over, total * (limit / length_sq.sqrt()), total);
        r.impulse = V3::select(rolls, total, old);
        let j = total - old;
        wa = V3::select(rolls, wa - ia.apply(j), wa);
        wb = V3::select(rolls, wb + ib.apply(j), wb);
    }
    // SAFETY: forwarded from the caller.
    unsafe {
        b.write((states, &at_a), 0, (va, wa, pa));
        b.write((states, &at_b), 1, (vb, wb, pb));
    }
}

#[cfg(test)]
mod tests {
    use glam::{Mat3, Quat};

    use super::*;
    use crate::collide::tests::lcg;
    use crate::physics::contact_solver::{prepare, warm_start, Frame, Softness};

    fn vec(seed: &mut u64, scale: f32) -> Vec3 {
        Vec3::new(lcg(seed), lcg(seed), lcg(seed)) * scale
    }

    /// A symmetric positive definite world inverse inertia, as a body has one.
    fn inertia(seed: &mut u64) -> Mat3 {
        let q = Quat::from_scaled_axis(vec(seed, 3.0));
        let d = Mat3::from_diagonal(vec(seed, 1.0).abs() + Vec3::splat(0.05));
        crate::math::world_inertia(q, d)
    }

    /// A random constraint between rows `a` and `b` (either may be `NONE`), with 1 to
    /// 4 points, some speculative, some with warm-start impulses, some with
    /// restitution, and its frame.
    fn constraint(seed: &mut u64, a: u32, b: u32, states: &[BodyState]) -> (Constraint, Frame) {
        let restitution = if lcg(seed) > 0.5 { lcg(seed).abs() } else { 0.0 };
        let mut c = Constraint::new(0, 0, a, b, lcg(seed).abs(), restitution);
        (c.row_a, c.row_b) = (a, b);
        let (mut inv_mass_a, mut inv_inertia_a, mut inv_mass_b, mut inv_inertia_b) = (0.0, Mat3::ZERO, 0.0, Mat3::ZERO);
        if a != NONE {
            (inv_mass_a, inv_inertia_a) = (lcg(seed).abs() + 0.1, inertia(seed));
        }
        if b != NONE {
            (inv_mass_b, inv_inertia_b) = (lcg(seed).abs() + 0.1, inertia(seed));
        }
        if lcg(seed) > 0.5 {
            c.round_b = lcg(seed).abs() * 0.5;
        }
        let normal = vec(seed, 1.0).normalize_or(Vec3::Y);
        let count = 1 + (lcg(seed).abs() * 4.0) as usize % 4;
        for k in 0..count {
            // Terrain-like manifolds bend their points' normals.
            let n = if lcg(seed) > 0.3 { normal } else { (normal + vec(seed, 0.3)).normalize() };
            c.push(vec(seed, 2.0), n, lcg(seed) * 0.05, k as u32);
        }
        let still = BodyState::STILL;
        let state = |row: u32| if row == NONE { still } else { states[row as usize] };
        let frame = Frame {
            center_a: vec(seed, 2.0),
            center_b: vec(seed, 2.0),
            state_a: state(a),
            state_b: state(b),
            inv_mass_a,
            inv_mass_b,
            inv_inertia_a,
            inv_inertia_b,
        };
        for impulse in &mut c.normal_impulse[..count] {
            *impulse = lcg(seed).abs() * 2.0;
        }
        c.tangent_impulse = [lcg(seed), lcg(seed)];
        c.twist_impulse = lcg(seed) * 0.01;
        if lcg(seed) > 0.3 {
            c.rolling_resistance = lcg(seed).abs() * 0.1;
            c.rolling_impulse = vec(seed, 0.01);
        }
        (c, frame)
    }

    /// Every output float of the bundle equals the scalar solver's, lane by lane, over
    /// warm starts, solves with and without bias, full and partly empty bundles,
    /// static sides and bodies that turned since the step's start; eight lanes with 32
    /// registers (where the CPU has AVX-512VL) and with 16; sixteen lanes (where it has
    /// AVX-512F).
    #[test]
    fn bundles_compute_what_the_scalar_solver_computes() {
        bundles_of::<Vec4>();
        #[cfg(target_arch = "x86_64")]
        {
            use std::sync::atomic::Ordering;
            assert!(super::super::lanes::eight_available(), "every x86-64 test machine here has AVX");
            bundles_of::<F8>();
            // The same kernels with 16 registers, as a CPU without AVX-512VL runs them
            // (other tests running meanwhile get the same bits either way).
            super::super::lanes::SIXTEEN_REGISTERS.store(true, Ordering::Relaxed);
            bundles_of::<F8>();
            super::super::lanes::SIXTEEN_REGISTERS.store(false, Ordering::Relaxed);
            if super::super::lanes::sixteen_available() {
                bundles_of::<F16>();
            }
        }
    }

    fn bundles_of<L: Width>() {
        let mut seed = 11u64;
        let soft = Softness::new(30.0, 10.0, 1.0 / 240.0);
        let ctx = StepContext {
            inv_h: 240.0,
            soft,
            static_soft: Softness::new(60.0, 10.0, 1.0 / 240.0),
            push_out: 3.0,
            restitution_threshold: 1.0,
            joint_soft: soft,
            joint_bias_in_relax: false,
        };
        let mut leftover: Option<Bundle<L>> = None;
        for round in 0..200 {
            let seed = &mut seed;
            let lanes = 1 + round % L::N;
            // Rows 0..2N: each constraint gets its own two (colours share no body);
            // a side is static (NONE) now and then.
            let mut states: Vec<BodyState> = (0..2 * L::N)
                .map(|_| BodyState {
                    v: vec(seed, 3.0),
                    w: vec(seed, 3.0),
                    dp: vec(seed, 0.05),
                    dq: Quat::from_scaled_axis(vec(seed, 0.2)),
                    ..BodyState::STILL
                })
                .collect();
            // Now and then a body so fast that an impulse overflows its velocity: both
            // writes saturate it. The results may differ there: a bundle's empty point
            // slots multiply the infinite velocity by zero (NaN) where the scalar
            // solver has no point, so those rounds check only that the bundle's
            // velocities stay finite.
            let overflow = round % 7 == 3;
            if overflow {
                states[1].v = Vec3::new(3.0e38, -3.0e38, 3.0e38);
            }
            let made: Vec<(Constraint, Frame)> = (0..lanes)
                .map(|lane| {
                    let a = if lcg(seed) > 0.7 { NONE } else { 2 * lane as u32 };
                    constraint(seed, a, 2 * lane as u32 + 1, &states)
                })
                .collect();
            // The scalar prepare and the bundle's prepare-and-pack prepare alike. A full
            // bundle reuses the last round's, as the colouring reuses its bundles from
            // step to step: `reset_full` must leave nothing of it that the solver reads.
            let mut bundle = match leftover.take() {
                Some(mut old) if lanes == L::N => {
                    let counts: Vec<u32> = made.iter().map(|(c, _)| c.count).collect();
                    old.reset_full(&counts);
                    old
                }
                _ => Bundle::<L>::EMPTY,
            };
            // A block left over from another bundle: the first lane that needs each
            // part sets it up.
            let mut extras = Extras::<L>::EMPTY;
            let ones = V3 { x: L::ONE, y: L::ONE, z: L::ONE };
            extras.rolling.resistance = L::splat(0.5);
            extras.rolling.impulse = ones;
            extras.normals = [ones; 4];
            extras.max_normal_impulse = [L::splat(7.0); 4];
            let (mut constraints, mut prepared) = (Vec::new(), Vec::new());
            for (lane, (c, frame)) in made.into_iter().enumerate() {
                let mut s = Prepared::default();
                prepare(&c, &mut s, &frame);
                bundle.prepare_lane(&mut extras, lane, lane as u32, &c, &frame);
                constraints.push(c);
                prepared.push(s);
            }
            L::finish(&mut bundle, &extras);
            let mut wide_states = states.clone();
            for pass in 0..4 {
                let (scalar_col, wide_col) = (Column::new(&mut states), Column::new(&mut wide_states));
                // SAFETY: one thread; every row in bounds.
                unsafe {
                    for (c, s) in constraints.iter_mut().zip(&mut prepared) {
                        match pass {
                            0 => warm_start(c, s, &scalar_col),
                            _ => contact_solver::solve(c, s, &scalar_col, &ctx, pass != 2),
                        }
                    }
                    match pass {
                        0 => L::warm_start(&bundle, &extras, &wide_col),
                        _ => L::solve(&mut bundle, &mut extras, &wide_col, &ctx, pass != 2),
                    }
                }
                for (i, (s, w)) in states.iter().zip(&wide_states).enumerate() {
                    assert!(
                        w.v.is_finite() && w.w.is_finite(),
                        "{} lanes, round {round}, pass {pass}, row {i}: {w:?}",
                        L::N
                    );
                    if overflow {
                        continue;
                    }
                    assert!(s == w, "{} lanes, round {round}, pass {pass}, row {i}: {s:?} != {w:?}", L::N);
                }
            }
            let mut unpacked = constraints.clone();
            for c in &mut unpacked {
                (c.tangent_impulse, c.twist_impulse) = ([f32::NAN; 2], f32::NAN);
                if c.rolling_resistance > 0.0 {
                    c.rolling_impulse = Vec3::NAN;
                }
                c.normal_impulse = [f32::NAN; 4];
            }
            // The largest normal impulses go to the prepared rows of constraints with
            // restitution (the others keep what they hold: here NaN).
            let mut unpacked_prepared = prepared.clone();
            for s in &mut unpacked_prepared {
                for q in &mut s.points {
                    q.max_normal_impulse = f32::NAN;
                }
            }
            // SAFETY: one thread.
            unsafe {
                let table = ConstraintTable::of(&mut unpacked);
                bundle.unpack(&extras, &table, &Column::new(&mut unpacked_prepared), &[]);
            }
            let all = constraints.iter().zip(&prepared).zip(unpacked.iter().zip(&unpacked_prepared));
            for ((c, s), (u, t)) in all.filter(|_| !overflow) {
                assert!(c.tangent_impulse == u.tangent_impulse, "round {round}: friction");
                assert!(c.twist_impulse == u.twist_impulse, "round {round}: twist");
                assert!(c.rolling_impulse == u.rolling_impulse, "round {round}: rolling");
                let n = c.count as usize;
                assert!(c.normal_impulse[..n] == u.normal_impulse[..n], "round {round}: {c:?} != {u:?}");
                for (p, q) in s.points.iter().zip(&t.points).take(c.count as usize) {
                    let expected = if c.restitution != 0.0 { p.max_normal_impulse } else { f32::NAN };
                    assert!(expected.total_cmp(&q.max_normal_impulse).is_eq(), "round {round}: {p:?} != {q:?}");
                }
            }
            leftover = Some(bundle);
        }
    }

    /// Every pass streams every bundle, so a bundle keeps what each lane needs and
    /// nothing more: one normal, A's anchors, six values of each inertia; what only
    /// some lanes need (bent normals, restitution, rolling) waits in its extras.
    #[test]
    fn bundles_keep_only_what_every_lane_needs() {
        assert_eq!(std::mem::size_of::<Bundle<Vec4>>(), 1040);
        #[cfg(target_arch = "x86_64")]
        assert_eq!(std::mem::size_of::<Bundle<F8>>(), 2048);
        #[cfg(target_arch = "x86_64")]
        assert_eq!(std::mem::size_of::<Bundle<F16>>(), 4096);
    }

    /// Empty manifolds keep to the scalar path; rolling resistance rides along.
    #[test]
    fn bundles_take_what_they_can_solve() {
        let mut c = Constraint::new(0, 0, 0, 1, 0.5, 0.0);
        assert!(!accepts(&c), "no points");
        c.push(Vec3::ZERO, Vec3::Y, 0.0, 0);
        assert!(accepts(&c));
        c.rolling_resistance = 0.1;
        assert!(accepts(&c), "rolling resistance");
    }
}
