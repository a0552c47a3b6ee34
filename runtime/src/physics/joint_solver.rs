//! The joints' maths in the soft step (Box2D v3's `joint.c` and Box3D's
//! `*_joint.c`; the hinge's two angular rows as Jolt's `HingeRotationConstraintPart`).
//!
//! Every joint is built from a few parts, each a row (or a block of rows) of the
//! velocity constraint `J v + bias = 0`:
//!
//! - the **point**: the two anchors coincide (3 rows solved as one 3x3 block);
//! - the **rotation lock**: the two frames turn together (3 rows, one block);
//! - the **hinge**: frame A's z axis stays B's (2 angular rows, one 2x2 block);
//! - a six-DOF joint's **axes**: a row along or about each axis of frame A, locked
//!   (an equality) or limited (two one-sided rows), the point or the rotation lock
//!   where all three are locked;
//! - **rows** along one axis, linear or angular: limits (one-sided, speculative when
//!   apart, as contacts are), motors (a target speed under a largest force or
//!   torque), springs (soft rows with their own frequency) and the prismatic's
//!   perpendicular rows.
//!
//! As for contacts, rigid parts are soft while the substep pushes with a bias
//! (`use_bias`) and rigid in the relax pass; impulses accumulate over the substeps
//! and warm-start the next substep and step. The geometry is the step's start moved
//! by each body's motion since (`BodyState::dp`, `dq`), so each substep sees where
//! the bodies are now. One function walks a joint's parts for both passes: the warm
//! start applies the stored impulses along the rows the solve would use.

use glam::{Mat3, Quat, Vec3};

use super::contact_solver::{read, BodyState, Softness, StepContext, NONE};
use super::joint::{Dof, Impulses, JointType};
use super::simd::ball;
use super::MAX_LINEAR_SPEED;
use crate::jobs::Column;
use crate::math::atan2;

/// A joint as one step's solve sees it: its bodies' rows and masses, its frames at the
/// step's start, its settings, and the impulses it accumulates.
///
/// What the point part reads comes first, in C order, as four rows of eight `f32`s
/// ([`JointSolve::POINT_ROWS`]) filling the joint's first two cache lines (it is
/// aligned to them): the masses, the inertias' six distinct entries each, the
/// anchors, the centres' offset, the rows and the point part's impulse. The ball
/// joints' lanes (`simd/ball.rs`) gather them with a transpose instead of 30-odd loads
/// a joint, and touch two of the joint's cache lines instead of its whole 500-odd
/// bytes: the grid's solve is bound by that traffic.
#[derive(Clone, Copy, Debug)]
#[repr(C, align(64))]
pub(crate) struct JointSolve {
    pub inv_mass_a: f32,
    pub inv_mass_b: f32,
    /// The world inverse inertias (symmetric: see [`Sym`]).
    pub inv_inertia_a: Sym,
    pub inv_inertia_b: Sym,
    /// The anchors from each body's centre of mass, in world axes, at the step's start.
    pub anchor_a: Vec3,
    pub anchor_b: Vec3,
    /// Centre of B minus centre of A at the step's start.
    pub delta_center: Vec3,
    /// Awake rows (`NONE` for a body outside the awake set: it does not move).
    pub row_a: u32,
    pub row_b: u32,
    /// The impulses (the point part's first), in the point part's lines.
    pub impulses: Impulses,
    /// Whether `kind` is a ball and socket alone (no limit, spring or motor: its point
    /// part is all it solves, which [`ball`] runs in SIMD lanes).
    pub ball: bool,
    /// The joint's slot in the store.
    pub slot: u32,
    /// The joint frames' rotations in the world at the step's start.
    pub frame_a: Quat,
    pub frame_b: Quat,
    pub kind: JointType,
    /// The spring of the kind's spring (or of a soft weld's position part).
    pub spring: Softness,
    /// A soft weld's rotation part.
    pub angular_spring: Softness,
    /// What tells a spherical joint's limits far open without their angles.
    pub open: OpenLimits,
    /// The point part's effective mass of a joint solved alone (not a ball joint):
    /// found in each substep's pass with a bias, kept for its relax pass (see
    /// [`Kept`]); zero where no body can respond.
    pub point_mass: Mat3,
}

/// Where the point part takes its effective mass: found in every solve pass (the ball
/// joints, in lanes or alone: see [`ball::point_part`]), or, for the other kinds,
/// found in the pass with a bias and kept in [`JointSolve::point_mass`] for the relax
/// pass, which their scalar solve reads in full anyway (a ragdoll's joints spend a
/// twentieth less so).
type Kept<'a> = Option<(&'a mut Mat3, bool)>;

/// A spherical joint's cone's cosine and the cosine and sine of half of each twist
/// limit (see [`far_open`]); NaN, never open, until the prepare sets them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct OpenLimits {
    pub cone_cos: f32,
    pub lower: [f32; 2],
    pub upper: [f32; 2],
}

impl OpenLimits {
    pub const UNSET: OpenLimits = OpenLimits { cone_cos: f32::NAN, lower: [f32::NAN; 2], upper: [f32::NAN; 2] };

    /// For a spherical joint's settings (see [`far_open`]).
    pub fn of(kind: &JointType) -> OpenLimits {
        let JointType::Spherical(s) = kind else { return OpenLimits::UNSET };
        let half = |angle: f32| {
            let (sin, cos) = (0.5 * angle).sin_cos();
            [cos, sin]
        };
        OpenLimits { cone_cos: s.cone_angle.cos(), lower: half(s.lower_twist), upper: half(s.upper_twist) }
    }
}

const _: () = {
    use std::mem::offset_of;
    assert!(offset_of!(JointSolve, inv_mass_a) == 0 && offset_of!(JointSolve, inv_mass_b) == 4);
    assert!(offset_of!(JointSolve, inv_inertia_a) == 8 && offset_of!(JointSolve, inv_inertia_b) == 32);
    assert!(offset_of!(JointSolve, anchor_a) == 56 && offset_of!(JointSolve, anchor_b) == 68);
    assert!(offset_of!(JointSolve, delta_center) == 80 && offset_of!(JointSolve, row_a) == 92);
    assert!(offset_of!(JointSolve, row_b) == 96 && offset_of!(JointSolve, impulses) == 100);
    // The point part's impulse ends its rows, in the first two cache lines.
    assert!(offset_of!(Impulses, linear) == 0 && 100 + 12 <= 4 * 8 * JointSolve::POINT_ROWS);
    assert!(4 * 8 * JointSolve::POINT_ROWS == 128 && std::mem::align_of::<JointSolve>() == 64);
};

/// A symmetric 3x3 matrix's six distinct entries `00, 01, 02, 11, 12, 22` (a world
/// inverse inertia: `crate::math::world_inertia` makes it exactly symmetric).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[repr(C)]
pub(crate) struct Sym(pub [f32; 6]);

impl Sym {
    /// The entries of `m` on and above the diagonal (`m` is symmetric).
    pub fn of(m: Mat3) -> Sym {
        let (x, y, z) = (m.x_axis, m.y_axis, m.z_axis);
        Sym([x.x, x.y, x.z, y.y, y.z, z.z])
    }

    pub fn mat3(self) -> Mat3 {
        let [a, b, c, d, e, f] = self.0;
        Mat3::from_cols(Vec3::new(a, b, c), Vec3::new(b, d, e), Vec3::new(c, e, f))
    }
}

impl JointSolve {
    /// Rows of eight `f32`s at the start of the joint that hold what the point part
    /// reads: the masses, inertias, anchors, centres' offset, rows and impulse.
    pub const POINT_ROWS: usize = 4;

    /// Whether a joint of `kind` is a ball and socket alone (see [`JointSolve::ball`]).
    pub fn ball_kind(kind: &JointType) -> bool {
        matches!(kind, JointType::Spherical(s)
            if !(s.enable_spring || s.enable_motor || s.enable_cone_limit || s.enable_twist_limit))
    }
}

/// What a part does this time: apply the stored impulse (warm start) or solve.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Mode {
    WarmStart,
    Solve { use_bias: bool },
}

/// The two bodies' velocities and inverse masses.
struct Bodies {
    va: Vec3,
    wa: Vec3,
    vb: Vec3,
    wb: Vec3,
    ma: f32,
    mb: f32,
    ia: Mat3,
    ib: Mat3,
}

/// One constraint row: `Cdot = lin . (vb - va) + ang_b . wb - ang_a . wa`.
#[derive(Clone, Copy, Debug)]
struct Row {
    lin: Vec3,
    ang_a: Vec3,
    ang_b: Vec3,
}

impl Row {
    fn angular(axis: Vec3) -> Row {
        Row { lin: Vec3::ZERO, ang_a: axis, ang_b: axis }
    }

    /// Along `u` between a point at `arm_a` from A's centre and one at `arm_b` from B's.
    fn linear(u: Vec3, arm_a: Vec3, arm_b: Vec3) -> Row {
        Row { lin: u, ang_a: arm_a.cross(u), ang_b: arm_b.cross(u) }
    }

    fn cdot(&self, b: &Bodies) -> f32 {
        self.lin.dot(b.vb - b.va) + self.ang_b.dot(b.wb) - self.ang_a.dot(b.wa)
    }

    fn mass(&self, b: &Bodies) -> f32 {
        let k = (b.ma + b.mb) * self.lin.length_squared()
            + self.ang_a.dot(b.ia * self.ang_a)
            + self.ang_b.dot(b.ib * self.ang_b);
        if k > 0.0 {
            1.0 / k
        } else {
            0.0
        }
    }

    fn apply(&self, b: &mut Bodies, impulse: f32) {
        b.va -= self.lin * (b.ma * impulse);
        b.wa -= b.ia * self.ang_a * impulse;
        b.vb += self.lin * (b.mb * impulse);
        b.wb += b.ib * self.ang_b * impulse;
    }
}

/// The soft terms `(bias, mass scale, impulse scale)` of an equality with error `c`.
pub(crate) fn terms(c: f32, soft: &Softness, use_bias: bool) -> (f32, f32, f32) {
    if use_bias {
        (c * soft.bias_rate, soft.mass_scale, soft.impulse_scale)
    } else {
        (0.0, 1.0, 0.0)
    }
}

/// An equality row with error `c`, soft with `soft` (a spring: soft in both passes).
fn equality(row: Row, c: f32, soft: &Softness, use_bias: bool, b: &mut Bodies, acc: &mut f32, mode: Mode) {
    let Mode::Solve { .. } = mode else { return row.apply(b, *acc) };
    let (bias, mass_scale, impulse_scale) = terms(c, soft, use_bias);
    let impulse = -row.mass(b) * mass_scale * (row.cdot(b) + bias) - impulse_scale * *acc;
    *acc += impulse;
    row.apply(b, impulse);
}

/// A one-sided row keeping `c >= 0`: speculative while apart (it may close this
/// substep, no further), soft while pushing back, rigid in the relax pass.
///
/// A limit that holds nothing and is not closing past its bias (most of a ragdoll's
/// limits, most of the time) stays at zero: its impulse, `-m (cdot + bias)` with `m`
/// not negative, is clamped away, so its mass is not found nor anything applied.
fn limit(row: Row, c: f32, ctx: &StepContext, b: &mut Bodies, acc: &mut f32, mode: Mode) {
    let Mode::Solve { use_bias } = mode else {
        if *acc != 0.0 {
            row.apply(b, *acc);
        }
        return;
    };
    let (bias, mass_scale, impulse_scale) =
        if c > 0.0 { (c * ctx.inv_h, 1.0, 0.0) } else { terms(c, &ctx.joint_soft, use_bias) };
    let cdot = row.cdot(b);
    // (Written so that NaN is solved.)
    if *acc == 0.0 && cdot + bias >= 0.0 {
        return;
    }
    let impulse = -row.mass(b) * mass_scale * (cdot + bias) - impulse_scale * *acc;
    let total = (*acc + impulse).max(0.0);
    row.apply(b, total - *acc);
    *acc = total;
}

/// A motor row: drives `cdot` to `speed` with at most `max_impulse` per substep.
fn motor(row: Row, speed: f32, max_impulse: f32, b: &mut Bodies, acc: &mut f32, mode: Mode) {
    let Mode::Solve { .. } = mode else { return row.apply(b, *acc) };
    let impulse = -row.mass(b) * (row.cdot(b) - speed);
    let total = (*acc + impulse).clamp(-max_impulse, max_impulse);
    row.apply(b, total - *acc);
    *acc = total;
}

/// Whether a limit row that holds nothing, `gap` (rad) or more from its edge (a lower
/// bound of the row's `c`) with an axis of squared length at most `axis_sq`, surely
/// stays at zero in this solve pass: its speculative bias `c / h` outweighs any
/// relative spin of the bodies along the axis, so `cdot + bias >= 0` in [`limit`],
/// which would clamp the row's impulse away. The row's angle and axis are then not
/// found. A ragdoll's limits are far open most of the time. The allowances (1e-4
/// rad on the gap, a hundredth on the spin) cover the round-off of the angles and
/// the dot products.
fn far_open(gap: f32, axis_sq: f32, b: &Bodies, inv_h: f32) -> bool {
    let bias = (gap - 1e-4) * inv_h;
    let spin = b.wa.length() + b.wb.length();
    // (Written so that NaN is not open.)
    bias > 0.0 && bias * bias > 1.01 * axis_sq * (spin * spin)
}

/// `k⁻¹ rhs`, or zero where `k` is singular (no body can respond).
fn solve3(k: Mat3, rhs: Vec3) -> Vec3 {
    let det = k.determinant();
    if det.abs() > f32::MIN_POSITIVE * 1000.0 && det.is_finite() {
        k.inverse() * rhs
    } else {
        Vec3::ZERO
    }
}

/// The point part's effective mass for anchors `ra`, `rb` ([`ball::point_mass`]), on
/// glam types.
#[cfg(test)]
pub(crate) fn point_mass(ra: Vec3, rb: Vec3, ma: f32, mb: f32, ia: Mat3, ib: Mat3) -> Mat3 {
    ball::point_mass(ra.into(), rb.into(), ma, mb, &ia.into(), &ib.into()).into()
}

/// The anchors coincide: `C = d` (anchor B minus anchor A), one 3x3 block
/// ([`ball::point_part`], which the ball joints' lanes run too).
#[allow(clippy::too_many_arguments)]
fn point(
    (ra, rb): (Vec3, Vec3),
    d: Vec3,
    kept: Kept,
    soft: &Softness,
    use_bias: bool,
    b: &mut Bodies,
    acc: &mut Vec3,
    mode: Mode,
) {
    let terms = match mode {
        Mode::WarmStart => None,
        Mode::Solve { .. } => Some(terms(1.0, soft, use_bias)),
    };
    let mut pair = ball::Pair {
        va: b.va.into(),
        wa: b.wa.into(),
        vb: b.vb.into(),
        wb: b.wb.into(),
        ma: b.ma,
        mb: b.mb,
        ia: b.ia.into(),
        ib: b.ib.into(),
    };
    let mut a = (*acc).into();
    match kept {
        None => ball::point_part((ra.into(), rb.into()), d.into(), None, terms, &mut pair, &mut a),
        Some((mass, refresh)) => {
            let mut m = (*mass).into();
            ball::point_part((ra.into(), rb.into()), d.into(), Some((&mut m, refresh)), terms, &mut pair, &mut a);
            *mass = m.into();
        }
    }
    *acc = a.into();
    (b.va, b.wa, b.vb, b.wb) = (pair.va.into(), pair.wa.into(), pair.vb.into(), pair.wb.into());
}

/// The relative rotation of frame B from frame A as a rotation vector's small-angle
/// form (`2 sin(θ/2)` times the axis, in world axes), the shorter way round.
fn rotation_error(qa: Quat, qb: Quat) -> Vec3 {
    let e = qb * qa.conjugate();
    let e = if e.w < 0.0 { -e } else { e };
    2.0 * Vec3::new(e.x, e.y, e.z)
}

/// The frames turn together: `C = rotation_error`, `Cdot = wb - wa`, one 3x3 block.
fn lock_rotation(qa: Quat, qb: Quat, soft: &Softness, use_bias: bool, b: &mut Bodies, acc: &mut Vec3, mode: Mode) {
    let impulse = match mode {
        Mode::WarmStart => *acc,
        Mode::Solve { .. } => {
            let (bias_rate, mass_scale, impulse_scale) = terms(1.0, soft, use_bias);
            let rhs = b.wb - b.wa + rotation_error(qa, qb) * bias_rate;
            let impulse = -solve3(b.ia + b.ib, rhs) * mass_scale - *acc * impulse_scale;
            *acc += impulse;
            impulse
        }
    };
    b.wa -= b.ia * impulse;
    b.wb += b.ib * impulse;
}

/// Frame A's z axis stays frame B's: `C = (a . x_b, a . y_b)` with `a` A's z axis, two
/// angular rows `x_b × a`, `y_b × a` solved as one 2x2 block.
fn hinge(qa: Quat, qb: Quat, soft: &Softness, use_bias: bool, b: &mut Bodies, acc: &mut [f32; 2], mode: Mode) {
    let a = qa * Vec3::Z;
    let (xb, yb) = (qb * Vec3::X, qb * Vec3::Y);
    let (r1, r2) = (xb.cross(a), yb.cross(a));
    let impulse = match mode {
        Mode::WarmStart => *acc,
        Mode::Solve { .. } => {
            let k = b.ia + b.ib;
            let (k11, k12, k22) = (r1.dot(k * r1), r1.dot(k * r2), r2.dot(k * r2));
            let (bias_rate, mass_scale, impulse_scale) = terms(1.0, soft, use_bias);
            let w = b.wb - b.wa;
            let rhs = [r1.dot(w) + a.dot(xb) * bias_rate, r2.dot(w) + a.dot(yb) * bias_rate];
            let det = k11 * k22 - k12 * k12;
            let solved = if det > f32::MIN_POSITIVE * 1000.0 {
                [(k22 * rhs[0] - k12 * rhs[1]) / det, (k11 * rhs[1] - k12 * rhs[0]) / det]
            } else {
                [0.0, 0.0]
            };
            let impulse =
                [-solved[0] * mass_scale - acc[0] * impulse_scale, -solved[1] * mass_scale - acc[1] * impulse_scale];
            acc[0] += impulse[0];
            acc[1] += impulse[1];
            impulse
        }
    };
    let turn = r1 * impulse[0] + r2 * impulse[1];
    b.wa -= b.ia * turn;
    b.wb += b.ib * turn;
}

/// The relative rotation of frame B in frame A, the shorter way round.
pub(crate) fn relative(qa: Quat, qb: Quat) -> Quat {
    let q = qa.conjugate() * qb;
    if q.w < 0.0 {
        -q
    } else {
        q
    }
}

/// The twist of a relative rotation about z (its swing-twist decomposition), in
/// `[-π, π]`.
pub(crate) fn twist_angle(q: Quat) -> f32 {
    2.0 * atan2(q.z, q.w)
}

/// The angle between frame A's z axis and frame B's, in `[0, π]`.
pub(crate) fn swing_angle(qa: Quat, qb: Quat) -> f32 {
    let (c, t) = (qa * Vec3::Z, qb * Vec3::Z);
    atan2(c.cross(t).length(), c.dot(t))
}

/// The joint's parts in order (springs and motors first, limits, the rigid parts
/// last: what is solved last holds best), warm-started or solved.
///
/// # Safety
/// `j`'s dynamic bodies are touched by no other thread meanwhile.
pub(crate) unsafe fn solve_joint(j: &mut JointSolve, states: &Column<BodyState>, ctx: &StepContext, mode: Mode) {
    // SAFETY: forwarded from the caller.
    let (sa, sb) = unsafe { (read(states, j.row_a), read(states, j.row_b)) };
    let mut b = Bodies {
        va: sa.v,
        wa: sa.w,
        vb: sb.v,
        wb: sb.w,
        ma: j.inv_mass_a,
        mb: j.inv_mass_b,
        ia: j.inv_inertia_a.mat3(),
        ib: j.inv_inertia_b.mat3(),
    };
    // The frames' rotations now (a plain ball and socket needs none).
    let frames = || (sa.dq * j.frame_a, sb.dq * j.frame_b);
    let turn = |q: Quat| (ball::V { x: q.x, y: q.y, z: q.z }, q.w);
    let (ra, rb, d) = ball::anchors(
        (j.anchor_a.into(), j.anchor_b.into(), j.delta_center.into()),
        (sa.dp.into(), turn(sa.dq)),
        (sb.dp.into(), turn(sb.dq)),
    );
    let (ra, rb, d): (Vec3, Vec3, Vec3) = (ra.into(), rb.into(), d.into());
    let use_bias = soft_terms(mode, ctx);
    // (A ball joint finds its mass every time, as in its lanes.)
    let (ball, refresh) = (j.ball, matches!(mode, Mode::Solve { use_bias: true }) || ctx.joint_bias_in_relax);
    let (soft, h) = (ctx.joint_soft, 1.0 / ctx.inv_h);
    let imp = &mut j.impulses;
    if ball {
        // A plain ball and socket: its point part alone, as its lanes solve it. (Its
        // fill writes no more of the row than this reads: see `Joints::fill`.)
        point((ra, rb), d, None, &soft, use_bias, &mut b, &mut imp.linear, mode);
        // SAFETY: forwarded from the caller.
        unsafe { finish_joint(j, states, (b.va, b.wa, b.vb, b.wb)) };
        return;
    }
    match j.kind {
        JointType::Spherical(s) => {
            let angular = s.enable_spring || s.enable_motor || s.enable_cone_limit || s.enable_twist_limit;
            let (qa, qb) = if angular { frames() } else { (Quat::IDENTITY, Quat::IDENTITY) };
            if s.enable_spring {
                let spring = j.spring;
                // The rotation lock, soft with the spring's own frequency in both passes.
                lock_rotation(qa, qb, &spring, true, &mut b, &mut imp.spring3, mode);
            }
            if s.enable_motor {
                let target = qa * s.motor_velocity;
                let max = s.max_motor_torque * h;
                let impulse = match mode {
                    Mode::WarmStart => imp.motor3,
                    Mode::Solve { .. } => {
                        let want = -solve3(b.ia + b.ib, b.wb - b.wa - target);
                        let total = (imp.motor3 + want).clamp_length_max(max);
                        let impulse = total - imp.motor3;
                        imp.motor3 = total;
                        impulse
                    }
                };
                b.wa -= b.ia * impulse;
                b.wb += b.ib * impulse;
            }
            // A limit that holds nothing is applied by no warm start (see `limit`), nor
            // solved while far open (see `far_open`).
            let warm = mode == Mode::WarmStart;
            let open = j.open;
            if s.enable_cone_limit && (imp.swing != 0.0 || !warm) {
                let (c, t) = (qa * Vec3::Z, qb * Vec3::Z);
                let cross = c.cross(t);
                let sin = cross.length();
                // The cone's gap is at least the cosines' difference (the cosine is
                // 1-Lipschitz).
                if sin > 1e-6 && (imp.swing != 0.0 || !far_open(c.dot(t) - open.cone_cos, 1.0, &b, ctx.inv_h)) {
                    let swing = atan2(sin, c.dot(t));
                    let axis = cross / sin;
                    limit(Row::angular(-axis), s.cone_angle - swing, ctx, &mut b, &mut imp.swing, mode);
                }
            }
            let held = imp.lower != 0.0 || imp.upper != 0.0;
            let twist = (s.enable_twist_limit && (held || !warm)).then(|| relative(qa, qb));
            // Half the twist is `atan2(q.z, q.w)`; its gap to a half limit `l` is at
            // least the sine of it, `(q.z cos l - q.w sin l) / r` with `r = |(q.z, q.w)|`
            // at most 1. The axis below is `√(1 + tan_half²)` long.
            let twist = twist.filter(|q| {
                let (zw, [cl, sl], [cu, su]) = (q.z * q.z + q.w * q.w, open.lower, open.upper);
                let gap = 2.0 * (q.z * cl - q.w * sl).min(q.w * su - q.z * cu);
                held || !far_open(gap, 1.0 + (q.x * q.x + q.y * q.y) / zw, &b, ctx.inv_h)
            });
            if let Some(q) = twist {
                let angle = twist_angle(q);
                // The twist's rate about A's z axis leaned toward B's by the swing
                // (Box3D's twist Jacobian).
                let (c, t) = (qa * Vec3::Z, qb * Vec3::Z);
                let cross = c.cross(t);
                let axis = if cross.length_squared() > 1e-12 {
                    let swing_axis = cross.normalize();
                    let tan_half = ((q.x * q.x + q.y * q.y) / (q.z * q.z + q.w * q.w)).sqrt();
                    c + swing_axis.cross(c) * tan_half
                } else {
                    c
                };
                limit(Row::angular(axis), angle - s.lower_twist, ctx, &mut b, &mut imp.lower, mode);
                limit(Row::angular(-axis), s.upper_twist - angle, ctx, &mut b, &mut imp.upper, mode);
            }
            point(
                (ra, rb),
                d,
                (!ball).then_some((&mut j.point_mass, refresh)),
                &soft,
                use_bias,
                &mut b,
                &mut imp.linear,
                mode,
            );
        }
        JointType::Revolute(r) => {
            let (qa, qb) = frames();
            let axis = Row::angular(qa * Vec3::Z);
            let angle = twist_angle(relative(qa, qb));
            if r.enable_spring {
                let spring = j.spring;
                equality(axis, angle - r.target_angle, &spring, true, &mut b, &mut imp.spring, mode);
            }
            if r.enable_motor {
                motor(axis, r.motor_speed, r.max_motor_torque * h, &mut b, &mut imp.motor, mode);
            }
            if r.enable_limit {
                limit(axis, angle - r.lower, ctx, &mut b, &mut imp.lower, mode);
                let back = Row::angular(-axis.ang_a);
                limit(back, r.upper - angle, ctx, &mut b, &mut imp.upper, mode);
            }
            hinge(qa, qb, &soft, use_bias, &mut b, &mut imp.perp, mode);
            point(
                (ra, rb),
                d,
                (!ball).then_some((&mut j.point_mass, refresh)),
                &soft,
                use_bias,
                &mut b,
                &mut imp.linear,
                mode,
            );
        }
        JointType::Prismatic(p) => {
            let (qa, qb) = frames();
            let (x, y, z) = (qa * Vec3::X, qa * Vec3::Y, qa * Vec3::Z);
            // The axis is A's: B's anchor slides along it, so A's arm reaches B's anchor.
            let arm_a = d + ra;
            let along = Row::linear(z, arm_a, rb);
            let translation = z.dot(d);
            if p.enable_spring {
                let spring = j.spring;
                equality(along, translation - p.target_translation, &spring, true, &mut b, &mut imp.spring, mode);
            }
            if p.enable_motor {
                motor(along, p.motor_speed, p.max_motor_force * h, &mut b, &mut imp.motor, mode);
            }
            if p.enable_limit {
                limit(along, translation - p.lower, ctx, &mut b, &mut imp.lower, mode);
                let back = Row::linear(-z, arm_a, rb);
                limit(back, p.upper - translation, ctx, &mut b, &mut imp.upper, mode);
            }
            lock_rotation(qa, qb, &soft, use_bias, &mut b, &mut imp.angular, mode);
            let [px, py] = &mut imp.perp;
            equality(Row::linear(x, arm_a, rb), x.dot(d), &soft, use_bias, &mut b, px, mode);
            equality(Row::linear(y, arm_a, rb), y.dot(d), &soft, use_bias, &mut b, py, mode);
        }
        JointType::Fixed(f) => {
            let (qa, qb) = frames();
            let (linear, angular) = (j.spring, j.angular_spring);
            let (linear, linear_bias) = if f.linear_hertz > 0.0 { (linear, true) } else { (soft, use_bias) };
            let (angular, angular_bias) = if f.angular_hertz > 0.0 { (angular, true) } else { (soft, use_bias) };
            lock_rotation(qa, qb, &angular, angular_bias, &mut b, &mut imp.angular, mode);
            point(
                (ra, rb),
                d,
                (!ball).then_some((&mut j.point_mass, refresh)),
                &linear,
                linear_bias,
                &mut b,
                &mut imp.linear,
                mode,
            );
        }
        JointType::SixDof(x) => {
            let (qa, qb) = frames();
            let axes = [qa * Vec3::X, qa * Vec3::Y, qa * Vec3::Z];
            let arm_a = d + ra;
            let row = |k: usize| if k < 3 { Row::linear(axes[k], arm_a, rb) } else { Row::angular(axes[k - 3]) };
            for k in 0..6 {
                if x.max_motor_force[k] > 0.0 {
                    let max = x.max_motor_force[k] * h;
                    motor(row(k), x.motor_speed[k], max, &mut b, &mut imp.motors[k], mode);
                }
            }
            if x.angular == [Dof::Locked; 3] {
                lock_rotation(qa, qb, &soft, use_bias, &mut b, &mut imp.angular, mode);
            } else {
                let q = relative(qa, qb);
                let parts = [q.x, q.y, q.z];
                for (k, part) in parts.into_iter().enumerate() {
                    let angle = 2.0 * atan2(part, q.w);
                    let (along, back) = (Row::angular(axes[k]), Row::angular(-axes[k]));
                    match x.angular[k] {
                        Dof::Free => {}
                        Dof::Locked => equality(along, angle, &soft, use_bias, &mut b, &mut imp.angular[k], mode),
                        Dof::Limited { lower, upper } => {
                            limit(along, angle - lower, ctx, &mut b, &mut imp.angular[k], mode);
                            limit(back, upper - angle, ctx, &mut b, &mut imp.upper_angular[k], mode);
                        }
                    }
                }
            }
            if x.linear == [Dof::Locked; 3] {
                point(
                    (ra, rb),
                    d,
                    (!ball).then_some((&mut j.point_mass, refresh)),
                    &soft,
                    use_bias,
                    &mut b,
                    &mut imp.linear,
                    mode,
                );
            } else {
                for (k, (axis, dof)) in axes.into_iter().zip(x.linear).enumerate() {
                    let t = axis.dot(d);
                    match dof {
                        Dof::Free => {}
                        Dof::Locked => equality(row(k), t, &soft, use_bias, &mut b, &mut imp.linear[k], mode),
                        Dof::Limited { lower, upper } => {
                            limit(row(k), t - lower, ctx, &mut b, &mut imp.linear[k], mode);
                            let back = Row::linear(-axis, arm_a, rb);
                            limit(back, upper - t, ctx, &mut b, &mut imp.upper_linear[k], mode);
                        }
                    }
                }
            }
        }
        JointType::Distance(s) => {
            let length = d.length();
            // Along the rope; straight up A's z axis when the anchors meet.
            let u = if length > 1e-6 { d / length } else { frames().0 * Vec3::Z };
            let row = Row::linear(u, ra, rb);
            let ranged = s.min_length < s.max_length;
            if s.enable_spring && ranged {
                if s.hertz > 0.0 {
                    let spring = j.spring;
                    equality(row, length - s.length, &spring, true, &mut b, &mut imp.spring, mode);
                }
            } else {
                equality(row, length - s.length, &soft, use_bias, &mut b, &mut imp.spring, mode);
            }
            if s.enable_limit && ranged {
                limit(row, length - s.min_length, ctx, &mut b, &mut imp.lower, mode);
                let back = Row::linear(-u, ra, rb);
                limit(back, s.max_length - length, ctx, &mut b, &mut imp.upper, mode);
            }
        }
    }
    // SAFETY: forwarded from the caller.
    unsafe { finish_joint(j, states, (b.va, b.wa, b.vb, b.wb)) };
}

/// Whether the rigid parts push with a bias in this pass: in the solve pass, and in
/// the relax pass too where the solver asks for it (sequential impulses).
pub(crate) fn soft_terms(mode: Mode, ctx: &StepContext) -> bool {
    match mode {
        Mode::Solve { use_bias } => use_bias || ctx.joint_bias_in_relax,
        Mode::WarmStart => false,
    }
}

/// Writes a joint's bodies' new velocities `(va, wa, vb, wb)` back, or, where they
/// overflowed, lets go of the joint for this pass.
///
/// # Safety
/// `j`'s dynamic bodies are touched by no other thread meanwhile.
pub(crate) unsafe fn finish_joint(
    j: &mut JointSolve,
    states: &Column<BodyState>,
    (va, wa, vb, wb): (Vec3, Vec3, Vec3, Vec3),
) {
    if !(va + wa + vb + wb).is_finite() {
        // Absurd but valid settings overflowed (a speed of 1e30 against a torque of
        // 1e30): the joint lets go this time rather than poison its bodies.
        j.impulses = Impulses::default();
        return;
    }
    // A motor of absurd but finite speed and force: bodies saturate as the integrator
    // saturates them, so a rotation's update never overflows.
    let limit = |v: Vec3| v.clamp_length_max(MAX_LINEAR_SPEED);
    for (row, moves, v, w) in [(j.row_a, j.inv_mass_a > 0.0, va, wa), (j.row_b, j.inv_mass_b > 0.0, vb, wb)] {
        if row != NONE && moves {
            // SAFETY: forwarded from the caller.
            let state = unsafe { states.get(row as usize) };
            (state.v, state.w) = (limit(v), limit(w));
        }
    }
}

/// The force and torque the joint applied to body B over the last substep (N, N m),
/// from its accumulated impulses along the step's starting axes.
pub(crate) fn reaction(j: &JointSolve, inv_h: f32) -> (Vec3, Vec3) {
    let (qa, qb) = (j.frame_a, j.frame_b);
    let imp = &j.impulses;
    let axial = imp.spring + imp.motor + imp.lower - imp.upper;
    let (force, torque) = match j.kind {
        JointType::Spherical(_) => {
            let (c, t) = (qa * Vec3::Z, qb * Vec3::Z);
            let swing_axis = c.cross(t).normalize_or_zero();
            (imp.linear, imp.spring3 + imp.motor3 + c * (imp.lower - imp.upper) - swing_axis * imp.swing)
        }
        JointType::Revolute(_) => {
            let a = qa * Vec3::Z;
            let (r1, r2) = ((qb * Vec3::X).cross(a), (qb * Vec3::Y).cross(a));
            (imp.linear, r1 * imp.perp[0] + r2 * imp.perp[1] + a * axial)
        }
        JointType::Prismatic(_) => {
            let (x, y, z) = (qa * Vec3::X, qa * Vec3::Y, qa * Vec3::Z);
            (x * imp.perp[0] + y * imp.perp[1] + z * axial, imp.angular)
        }
        JointType::Fixed(_) => (imp.linear, imp.angular),
        JointType::SixDof(x) => {
            let axes = [qa * Vec3::X, qa * Vec3::Y, qa * Vec3::Z];
            let along = |v: Vec3, upper: Vec3, motors: &[f32]| {
                (0..3).fold(Vec3::ZERO, |sum, k| sum + axes[k] * (v[k] - upper[k] + motors[k]))
            };
            let force = if x.linear == [Dof::Locked; 3] {
                imp.linear + along(Vec3::ZERO, Vec3::ZERO, &imp.motors[..3])
            } else {
                along(imp.linear, imp.upper_linear, &imp.motors[..3])
            };
            let torque = if x.angular == [Dof::Locked; 3] {
                imp.angular + along(Vec3::ZERO, Vec3::ZERO, &imp.motors[3..])
            } else {
                along(imp.angular, imp.upper_angular, &imp.motors[3..])
            };
            (force, torque)
        }
        JointType::Distance(_) => {
            let d = j.delta_center + j.anchor_b - j.anchor_a;
            (d.normalize_or_zero() * axial, Vec3::ZERO)
        }
    };
    (force * inv_h, torque * inv_h)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skew(r: Vec3) -> Mat3 {
        Mat3::from_cols(Vec3::new(0.0, r.z, -r.y), Vec3::new(-r.z, 0.0, r.x), Vec3::new(r.y, -r.x, 0.0))
    }

    /// The point mass from its six entries is the inverse of the plain `K`
    /// (`(ma + mb) 1 - [ra] Ia [ra] - [rb] Ib [rb]`, three matrix products a body) on
    /// random arms, masses and rotated inertias, and zero when no body responds.
    #[test]
    fn the_point_mass_is_the_inverse_of_the_plain_k() {
        let mut seed = 0x9e37_79b9_u64;
        let mut next = || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((seed >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        };
        for case in 0..200 {
            let mut v = || Vec3::new(next(), next(), next());
            let (ra, rb, spin_a, spin_b, diag_a, diag_b) = (v() * 2.0, v() * 2.0, v(), v(), v().abs(), v().abs());
            let inertia = |spin: Vec3, diag: Vec3| {
                let r = Mat3::from_quat(Quat::from_scaled_axis(spin * 3.0));
                r * Mat3::from_diagonal(diag + Vec3::splat(0.1)) * r.transpose()
            };
            // Every fourth case has a static body A.
            let (ma, ia) = if case % 4 == 0 { (0.0, Mat3::ZERO) } else { (0.5, inertia(spin_a, diag_a)) };
            let (mb, ib) = (1.5, inertia(spin_b, diag_b));
            let (sa, sb) = (skew(ra), skew(rb));
            let k = Mat3::from_diagonal(Vec3::splat(ma + mb)) - sa * ia * sa - sb * ib * sb;
            let product = point_mass(ra, rb, ma, mb, ia, ib) * k;
            let error = (product - Mat3::IDENTITY).to_cols_array().iter().fold(0.0f32, |m, e| m.max(e.abs()));
            assert!(error < 1e-4, "case {case}: M K is off the identity by {error}");
        }
        assert_eq!(point_mass(Vec3::X, Vec3::Y, 0.0, 0.0, Mat3::ZERO, Mat3::ZERO), Mat3::ZERO);
    }

    /// Limits found far open skip their rows (`far_open`) and give the bits of the
    /// full rows: random spherical joints with cone and twist limits and joint
    /// friction, some bent past their limits, some near, most well inside, their
    /// bodies spinning at up to 30 rad/s, solved with the prepare's bounds and without
    /// any (`OpenLimits::UNSET`: every row found), over three rounds of the passes.
    #[test]
    fn limits_found_far_open_give_the_bits_of_the_full_rows() {
        use crate::physics::joint::{Impulses, SphericalJoint};
        let mut seed = 0x2545_f491_u64;
        let mut next = || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((seed >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        };
        let v = |next: &mut dyn FnMut() -> f32| Vec3::new(next(), next(), next());
        let count = 400;
        let (mut joints, mut states) = (Vec::new(), Vec::new());
        for k in 0..count {
            let (spin_a, spin_b, axis, turn_a) = (v(&mut next), v(&mut next), v(&mut next), v(&mut next));
            let scale = if k % 3 == 0 { 30.0 } else { 2.0 };
            for spin in [spin_a, spin_b] {
                let dq = Quat::from_scaled_axis(v(&mut next) * 0.05);
                states.push(BodyState {
                    v: v(&mut next),
                    w: spin * scale,
                    dp: v(&mut next) * 0.01,
                    spare: [0.0; 3],
                    dq,
                });
            }
            let cone = 0.2 + 0.5 * (next() + 1.0);
            let (lower, upper) = (-0.2 - 0.5 * (next() + 1.0), 0.2 + 0.5 * (next() + 1.0));
            let kind = JointType::Spherical(SphericalJoint {
                enable_cone_limit: true,
                cone_angle: cone,
                enable_twist_limit: true,
                lower_twist: lower,
                upper_twist: upper,
                enable_motor: k % 2 == 0,
                max_motor_torque: 0.5,
                ..SphericalJoint::default()
            });
            // Bent by up to 1.3 times the cone, twisted by up to 1.3 times a limit.
            let swing =
                Quat::from_axis_angle(Vec3::new(axis.x, axis.y, 0.0).normalize_or(Vec3::X), 1.3 * cone * next());
            let twist = Quat::from_rotation_z(1.3 * if next() > 0.0 { upper } else { lower } * next().abs());
            let frame_a = Quat::from_scaled_axis(turn_a * 3.0);
            let (ia, ib) = (Mat3::from_diagonal(Vec3::splat(2.0)), Mat3::from_diagonal(Vec3::splat(3.0)));
            let mut j = JointSolve {
                inv_mass_a: 1.0,
                inv_mass_b: 1.5,
                inv_inertia_a: Sym::of(ia),
                inv_inertia_b: Sym::of(ib),
                anchor_a: v(&mut next) * 0.3,
                anchor_b: v(&mut next) * 0.3,
                delta_center: v(&mut next) * 0.6,
                row_a: 2 * k as u32,
                row_b: 2 * k as u32 + 1,
                ball: false,
                impulses: Impulses::default(),
                slot: k as u32,
                frame_a,
                frame_b: frame_a * swing * twist,
                kind,
                spring: Softness::new(0.0, 0.0, 1.0),
                angular_spring: Softness::new(0.0, 0.0, 1.0),
                open: OpenLimits::of(&kind),
                point_mass: Mat3::ZERO,
            };
            j.impulses.swing = if k % 5 == 0 { 0.01 } else { 0.0 };
            joints.push(j);
        }
        let h = 1.0 / 240.0;
        let ctx = StepContext {
            inv_h: 1.0 / h,
            soft: Softness::new(30.0, 10.0, h),
            static_soft: Softness::new(60.0, 10.0, h),
            push_out: 3.0,
            restitution_threshold: 1.0,
            joint_soft: Softness::new(60.0, 2.0, h),
            joint_bias_in_relax: false,
        };
        let (mut full_joints, mut full_states) = (joints.clone(), states.clone());
        for j in &mut full_joints {
            j.open = OpenLimits::UNSET;
        }
        let modes = [Mode::WarmStart, Mode::Solve { use_bias: true }, Mode::Solve { use_bias: false }];
        let bits = |joints: &[JointSolve], states: &[BodyState]| {
            let mut out: Vec<u32> = Vec::new();
            for s in states {
                out.extend([s.v, s.w].iter().flat_map(|v| v.to_array()).map(f32::to_bits));
            }
            for j in joints {
                let i = &j.impulses;
                out.extend([i.swing, i.lower, i.upper].map(f32::to_bits));
                out.extend([i.linear, i.motor3].iter().flat_map(|v| v.to_array()).map(f32::to_bits));
            }
            out
        };
        // Far open, at most the bias could hold: the bound skipped some rows.
        let open = |j: &JointSolve, s: &[BodyState]| {
            let b = Bodies {
                va: Vec3::ZERO,
                wa: s[j.row_a as usize].w,
                vb: Vec3::ZERO,
                wb: s[j.row_b as usize].w,
                ma: 0.0,
                mb: 0.0,
                ia: Mat3::ZERO,
                ib: Mat3::ZERO,
            };
            let (c, t) = (j.frame_a * Vec3::Z, j.frame_b * Vec3::Z);
            far_open(c.dot(t) - j.open.cone_cos, 1.0, &b, ctx.inv_h)
        };
        let far = joints.iter().filter(|j| open(j, &states)).count();
        assert!(far > count / 4 && far < count * 3 / 4, "{far} of {count} cones far open at the start");
        for round in 0..3 {
            for mode in modes {
                for (joints, states) in [(&mut joints, &mut states), (&mut full_joints, &mut full_states)] {
                    let column = Column::new(states);
                    for j in joints.iter_mut() {
                        // SAFETY: one thread.
                        unsafe { solve_joint(j, &column, &ctx, mode) };
                    }
                }
                let (ours, full) = (bits(&joints, &states), bits(&full_joints, &full_states));
                let differs = ours.iter().zip(&full).position(|(x, y)| x != y);
                assert!(differs.is_none(), "round {round}, {mode:?}: value {differs:?} differs");
            }
        }
        // Some limits push, some do not.
        let pushing = joints.iter().filter(|j| j.impulses.swing + j.impulses.lower + j.impulses.upper > 0.0).count();
        assert!(pushing > count / 10 && pushing < count * 9 / 10, "{pushing} of {count} joints push at a limit");
    }
}
