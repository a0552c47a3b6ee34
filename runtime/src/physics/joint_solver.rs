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
use super::MAX_LINEAR_SPEED;
use crate::jobs::Column;
use crate::math::atan2;

/// A joint as one step's solve sees it: its bodies' rows and masses, its frames at the
/// step's start, its settings, and the impulses it accumulates.
#[derive(Clone, Copy, Debug)]
pub(crate) struct JointSolve {
    /// The joint's slot in the store.
    pub slot: u32,
    /// Awake rows (`NONE` for a body outside the awake set: it does not move).
    pub row_a: u32,
    pub row_b: u32,
    pub inv_mass_a: f32,
    pub inv_mass_b: f32,
    pub inv_inertia_a: Mat3,
    pub inv_inertia_b: Mat3,
    /// The joint frames' rotations in the world at the step's start.
    pub frame_a: Quat,
    pub frame_b: Quat,
    /// The anchors from each body's centre of mass, in world axes, at the step's start.
    pub anchor_a: Vec3,
    pub anchor_b: Vec3,
    /// Centre of B minus centre of A at the step's start.
    pub delta_center: Vec3,
    pub kind: JointType,
    /// The spring of the kind's spring (or of a soft weld's position part).
    pub spring: Softness,
    /// A soft weld's rotation part.
    pub angular_spring: Softness,
    /// The point part's effective mass (the inverse of its 3x3 `K`): found at the
    /// step's start, then again in each substep's pass with a bias; zero where no
    /// body can respond.
    pub point_mass: Mat3,
    pub impulses: Impulses,
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
fn terms(c: f32, soft: &Softness, use_bias: bool) -> (f32, f32, f32) {
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
fn limit(row: Row, c: f32, ctx: &StepContext, b: &mut Bodies, acc: &mut f32, mode: Mode) {
    let Mode::Solve { use_bias } = mode else { return row.apply(b, *acc) };
    let (bias, mass_scale, impulse_scale) =
        if c > 0.0 { (c * ctx.inv_h, 1.0, 0.0) } else { terms(c, &ctx.joint_soft, use_bias) };
    let impulse = -row.mass(b) * mass_scale * (row.cdot(b) + bias) - impulse_scale * *acc;
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

/// `k⁻¹ rhs`, or zero where `k` is singular (no body can respond).
fn solve3(k: Mat3, rhs: Vec3) -> Vec3 {
    let det = k.determinant();
    if det.abs() > f32::MIN_POSITIVE * 1000.0 && det.is_finite() {
        k.inverse() * rhs
    } else {
        Vec3::ZERO
    }
}

/// The anchors coincide: `C = d` (anchor B minus anchor A), one 3x3 block.
/// The point part's effective mass for anchors `ra`, `rb` (see [`JointSolve::point_mass`]):
/// the inverse of `K = (ma + mb) 1 + [ra]ᵀ Ia [ra] + [rb]ᵀ Ib [rb]`, zero where `K`
/// is singular. `K` is symmetric, so its six distinct entries are built (from the
/// skew matrices' zeros, not three full matrix products a body) and inverted by
/// their six cofactors: a third of the work of the plain products and inverse,
/// which the joint grid paid in every solve pass of every joint.
pub(crate) fn point_mass(ra: Vec3, rb: Vec3, ma: f32, mb: f32, ia: Mat3, ib: Mat3) -> Mat3 {
    let [k00, k01, k02, k11, k12, k22] = arm_mass(ra, ia);
    let [l00, l01, l02, l11, l12, l22] = arm_mass(rb, ib);
    let m = ma + mb;
    let (k00, k11, k22) = (m + k00 + l00, m + k11 + l11, m + k22 + l22);
    let (k01, k02, k12) = (k01 + l01, k02 + l02, k12 + l12);
    // Cofactors (the adjugate is symmetric too) and the determinant along row 0.
    let c00 = k11 * k22 - k12 * k12;
    let c01 = k02 * k12 - k01 * k22;
    let c02 = k01 * k12 - k02 * k11;
    let c11 = k00 * k22 - k02 * k02;
    let c12 = k01 * k02 - k00 * k12;
    let c22 = k00 * k11 - k01 * k01;
    let det = k00 * c00 + k01 * c01 + k02 * c02;
    if det.abs() > f32::MIN_POSITIVE * 1000.0 && det.is_finite() {
        let inv = 1.0 / det;
        let (c01, c02, c12) = (c01 * inv, c02 * inv, c12 * inv);
        Mat3::from_cols(Vec3::new(c00 * inv, c01, c02), Vec3::new(c01, c11 * inv, c12), Vec3::new(c02, c12, c22 * inv))
    } else {
        Mat3::ZERO
    }
}

/// `[r]ᵀ I [r]` (`[r]` the cross-product matrix of `r`, `I` symmetric) as its six
/// distinct entries `00, 01, 02, 11, 12, 22`: `T = I [r]` column by column, each
/// column of `[r]` having a zero, then row `i` of `[r]ᵀ` against column `j` of `T`.
fn arm_mass(r: Vec3, i: Mat3) -> [f32; 6] {
    // The columns of [r] are (0, z, -y), (-z, 0, x) and (y, -x, 0).
    let (t0, t1, t2) =
        (i.y_axis * r.z - i.z_axis * r.y, i.z_axis * r.x - i.x_axis * r.z, i.x_axis * r.y - i.y_axis * r.x);
    // [r]ᵀ's row i is [r]'s column i, without its zero.
    let d0 = |t: Vec3| r.z * t.y - r.y * t.z;
    let d1 = |t: Vec3| r.x * t.z - r.z * t.x;
    let d2 = |t: Vec3| r.y * t.x - r.x * t.y;
    [d0(t0), d0(t1), d0(t2), d1(t1), d1(t2), d2(t2)]
}

#[allow(clippy::too_many_arguments)]
fn point(
    (ra, rb): (Vec3, Vec3),
    d: Vec3,
    (mass, refresh): (&mut Mat3, bool),
    soft: &Softness,
    use_bias: bool,
    b: &mut Bodies,
    acc: &mut Vec3,
    mode: Mode,
) {
    let impulse = match mode {
        Mode::WarmStart => *acc,
        Mode::Solve { .. } => {
            let cdot = b.vb + b.wb.cross(rb) - b.va - b.wa.cross(ra);
            let (bias_rate, mass_scale, impulse_scale) = terms(1.0, soft, use_bias);
            if refresh {
                *mass = point_mass(ra, rb, b.ma, b.mb, b.ia, b.ib);
            }
            let impulse = -(*mass * (cdot + d * bias_rate)) * mass_scale - *acc * impulse_scale;
            *acc += impulse;
            impulse
        }
    };
    b.va -= impulse * b.ma;
    b.wa -= b.ia * ra.cross(impulse);
    b.vb += impulse * b.mb;
    b.wb += b.ib * rb.cross(impulse);
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
        ia: j.inv_inertia_a,
        ib: j.inv_inertia_b,
    };
    // The frames' rotations now (a plain ball and socket needs none).
    let frames = || (sa.dq * j.frame_a, sb.dq * j.frame_b);
    let (ra, rb) = (sa.dq * j.anchor_a, sb.dq * j.anchor_b);
    let d = j.delta_center + (sb.dp - sa.dp) + rb - ra;
    // The point part's mass is found again each substep where the anchors now are
    // (in the pass with a bias, kept for the relax pass): a small body turning fast,
    // a ragdoll's hand, moves its anchor enough in a step that a mass found at the
    // step's start keeps it jittering.
    let refresh = matches!(mode, Mode::Solve { use_bias: true }) || ctx.joint_bias_in_relax;
    let use_bias = match mode {
        Mode::Solve { use_bias } => use_bias || ctx.joint_bias_in_relax,
        Mode::WarmStart => false,
    };
    let (soft, h) = (ctx.joint_soft, 1.0 / ctx.inv_h);
    let imp = &mut j.impulses;
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
            if s.enable_cone_limit {
                let (c, t) = (qa * Vec3::Z, qb * Vec3::Z);
                let cross = c.cross(t);
                let sin = cross.length();
                if sin > 1e-6 {
                    let swing = atan2(sin, c.dot(t));
                    let axis = cross / sin;
                    limit(Row::angular(-axis), s.cone_angle - swing, ctx, &mut b, &mut imp.swing, mode);
                }
            }
            if s.enable_twist_limit {
                let q = relative(qa, qb);
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
            point((ra, rb), d, (&mut j.point_mass, refresh), &soft, use_bias, &mut b, &mut imp.linear, mode);
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
            point((ra, rb), d, (&mut j.point_mass, refresh), &soft, use_bias, &mut b, &mut imp.linear, mode);
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
            point((ra, rb), d, (&mut j.point_mass, refresh), &linear, linear_bias, &mut b, &mut imp.linear, mode);
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
                point((ra, rb), d, (&mut j.point_mass, refresh), &soft, use_bias, &mut b, &mut imp.linear, mode);
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
    if !(b.va + b.wa + b.vb + b.wb).is_finite() {
        // Absurd but valid settings overflowed (a speed of 1e30 against a torque of
        // 1e30): the joint lets go this time rather than poison its bodies.
        *imp = Impulses::default();
        return;
    }
    // A motor of absurd but finite speed and force: bodies saturate as the integrator
    // saturates them, so a rotation's update never overflows.
    let limit = |v: Vec3| v.clamp_length_max(MAX_LINEAR_SPEED);
    for (row, moves, v, w) in [(j.row_a, j.inv_mass_a > 0.0, b.va, b.wa), (j.row_b, j.inv_mass_b > 0.0, b.vb, b.wb)] {
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
}
