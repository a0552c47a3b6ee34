//! Ball-and-socket joints with no limit, spring or motor (a point part alone: the
//! joint grid's, a chain's links) solved several at a time in SIMD lanes — the
//! contact bundles' idea (`wide.rs`) applied to the part every joint kind shares.
//! Box2D v3 and Box3D solve joints one by one, in the graph colours beside the
//! contacts; here a colour's ball joints are taken 4, 8 or 16 at a time instead.
//!
//! The point part's arithmetic is written once, generic over [`Real`]: the scalar
//! joint solver (`joint_solver.rs`) runs it on `f32`, [`solve_balls`] on lanes. Every
//! lane does the scalar path's IEEE operations in its order, nothing fused, so a
//! joint solved in a group gives the bits it gives alone, and which joints share a
//! group (a colour's order, cut where each worker's share ends) changes nothing.
//! Unlike the contacts, nothing is packed ahead: a group gathers its joints' rows
//! from the step's joint list as each pass reaches it.

use std::ops::{Add, Div, Mul, Neg, Sub};

use glam::{Mat3, Vec3, Vec4};

use super::lanes::{Lanes, MAX_LANES};
#[cfg(target_arch = "x86_64")]
use super::lanes::{F16, F8};
use crate::jobs::Column;
use crate::physics::contact_solver::{BodyState, StepContext, NONE};
use crate::physics::joint_solver::{finish_joint, soft_terms, terms, JointSolve, Mode};
use crate::physics::MAX_LINEAR_SPEED;

/// The smallest determinant a point part's `K` is inverted with.
const MIN_DET: f32 = f32::MIN_POSITIVE * 1000.0;

/// The arithmetic the point part needs: one `f32`, or one per lane.
pub(crate) trait Real:
    Copy + Add<Output = Self> + Sub<Output = Self> + Mul<Output = Self> + Div<Output = Self> + Neg<Output = Self>
{
    fn splat(v: f32) -> Self;

    /// `v` where `det` is finite and larger in magnitude than [`MIN_DET`], else zeros
    /// (NaN included: the scalar test `det.abs() > MIN_DET && det.is_finite()`).
    fn keep_if_invertible(det: Self, v: [Self; 6]) -> [Self; 6];
}

impl Real for f32 {
    #[inline(always)]
    fn splat(v: f32) -> f32 {
        v
    }

    #[inline(always)]
    fn keep_if_invertible(det: f32, v: [f32; 6]) -> [f32; 6] {
        if det.abs() > MIN_DET && det.is_finite() {
            v
        } else {
            [0.0; 6]
        }
    }
}

impl<L: Lanes> Real for L {
    #[inline(always)]
    fn splat(v: f32) -> L {
        L::splat(v)
    }

    #[inline(always)]
    fn keep_if_invertible(det: L, v: [L; 6]) -> [L; 6] {
        // `max(det, -det)` is NaN where `det` is, and NaN compares false.
        let size = det.max(-det);
        let (big, finite) = (size.cmpgt(L::splat(MIN_DET)), L::splat(f32::INFINITY).cmpgt(size));
        let mut out = [L::ZERO; 6];
        for k in 0..6 {
            out[k] = L::select(big, L::select(finite, v[k], L::ZERO), L::ZERO);
        }
        out
    }
}

/// A vector of [`Real`]s (glam's `Vec3` operations, in glam's order).
#[derive(Clone, Copy, Debug)]
pub(crate) struct V<T> {
    pub x: T,
    pub y: T,
    pub z: T,
}

impl<T: Real> V<T> {
    #[inline(always)]
    fn scale(self, s: T) -> V<T> {
        V { x: self.x * s, y: self.y * s, z: self.z * s }
    }

    #[inline(always)]
    fn cross(self, o: V<T>) -> V<T> {
        V { x: self.y * o.z - o.y * self.z, y: self.z * o.x - o.z * self.x, z: self.x * o.y - o.x * self.y }
    }
}

impl<T: Real> Add for V<T> {
    type Output = V<T>;
    #[inline(always)]
    fn add(self, o: V<T>) -> V<T> {
        V { x: self.x + o.x, y: self.y + o.y, z: self.z + o.z }
    }
}

impl<T: Real> Sub for V<T> {
    type Output = V<T>;
    #[inline(always)]
    fn sub(self, o: V<T>) -> V<T> {
        V { x: self.x - o.x, y: self.y - o.y, z: self.z - o.z }
    }
}

impl<T: Real> Neg for V<T> {
    type Output = V<T>;
    #[inline(always)]
    fn neg(self) -> V<T> {
        V { x: -self.x, y: -self.y, z: -self.z }
    }
}

impl From<Vec3> for V<f32> {
    #[inline(always)]
    fn from(v: Vec3) -> V<f32> {
        V { x: v.x, y: v.y, z: v.z }
    }
}

impl From<V<f32>> for Vec3 {
    #[inline(always)]
    fn from(v: V<f32>) -> Vec3 {
        Vec3::new(v.x, v.y, v.z)
    }
}

/// A 3x3 matrix of [`Real`]s by columns.
#[derive(Clone, Copy, Debug)]
pub(crate) struct M<T> {
    pub x: V<T>,
    pub y: V<T>,
    pub z: V<T>,
}

impl<T: Real> M<T> {
    /// `x v.x + y v.y + z v.z`.
    #[inline(always)]
    fn mul(&self, v: V<T>) -> V<T> {
        self.x.scale(v.x) + self.y.scale(v.y) + self.z.scale(v.z)
    }
}

impl From<Mat3> for M<f32> {
    #[inline(always)]
    fn from(m: Mat3) -> M<f32> {
        M { x: m.x_axis.into(), y: m.y_axis.into(), z: m.z_axis.into() }
    }
}

impl From<M<f32>> for Mat3 {
    #[inline(always)]
    fn from(m: M<f32>) -> Mat3 {
        Mat3::from_cols(m.x.into(), m.y.into(), m.z.into())
    }
}

/// `v` turned by the unit quaternion `(u, w)`: `v + w t + u × t` with `t = 2 u × v`.
#[inline(always)]
pub(crate) fn rotate<T: Real>(u: V<T>, w: T, v: V<T>) -> V<T> {
    let t = u.cross(v).scale(T::splat(2.0));
    v + t.scale(w) + u.cross(t)
}

/// `[r]ᵀ I [r]` (`[r]` the cross-product matrix of `r`, `I` symmetric) as its six
/// distinct entries `00, 01, 02, 11, 12, 22`: `T = I [r]` column by column, each
/// column of `[r]` having a zero, then row `i` of `[r]ᵀ` against column `j` of `T`.
#[inline(always)]
fn arm_mass<T: Real>(r: V<T>, i: &M<T>) -> [T; 6] {
    // The columns of [r] are (0, z, -y), (-z, 0, x) and (y, -x, 0).
    let t0 = i.y.scale(r.z) - i.z.scale(r.y);
    let t1 = i.z.scale(r.x) - i.x.scale(r.z);
    let t2 = i.x.scale(r.y) - i.y.scale(r.x);
    // [r]ᵀ's row i is [r]'s column i, without its zero.
    let d0 = |t: V<T>| r.z * t.y - r.y * t.z;
    let d1 = |t: V<T>| r.x * t.z - r.z * t.x;
    let d2 = |t: V<T>| r.y * t.x - r.x * t.y;
    [d0(t0), d0(t1), d0(t2), d1(t1), d1(t2), d2(t2)]
}

/// The point part's effective mass for anchors `ra`, `rb`: the inverse of
/// `K = (ma + mb) 1 + [ra]ᵀ Ia [ra] + [rb]ᵀ Ib [rb]`, zero where `K` is singular.
/// `K` is symmetric, so its six distinct entries are built (from the skew matrices'
/// zeros, not three full matrix products a body) and inverted by their six
/// cofactors: a third of the work of the plain products and inverse.
#[inline(always)]
pub(crate) fn point_mass<T: Real>(ra: V<T>, rb: V<T>, ma: T, mb: T, ia: &M<T>, ib: &M<T>) -> M<T> {
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
    let inv = T::splat(1.0) / det;
    let [m00, m01, m02, m11, m12, m22] =
        T::keep_if_invertible(det, [c00 * inv, c01 * inv, c02 * inv, c11 * inv, c12 * inv, c22 * inv]);
    M { x: V { x: m00, y: m01, z: m02 }, y: V { x: m01, y: m11, z: m12 }, z: V { x: m02, y: m12, z: m22 } }
}

/// The two bodies of a joint: velocities, inverse masses and inertias.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Pair<T> {
    pub va: V<T>,
    pub wa: V<T>,
    pub vb: V<T>,
    pub wb: V<T>,
    pub ma: T,
    pub mb: T,
    pub ia: M<T>,
    pub ib: M<T>,
}

/// The point part: the anchors at `ra` and `rb` from the centres coincide, `C = d`
/// (anchor B minus anchor A), one 3x3 block. `terms` is `None` for a warm start
/// (apply `acc`), else `(bias rate, mass scale, impulse scale)`. The effective mass
/// is found where the anchors now are (a small body turning fast, a ragdoll's hand,
/// moves its anchor enough in a step that a mass found at the step's start keeps it
/// jittering): in every solve and relax pass without `kept` (a ball joint: a mass
/// kept from one pass to the next costs the joint grid more in memory traffic than
/// its arithmetic), else where `kept`'s flag says and kept in it.
#[inline(always)]
pub(crate) fn point_part<T: Real>(
    (ra, rb): (V<T>, V<T>),
    d: V<T>,
    kept: Option<(&mut M<T>, bool)>,
    terms: Option<(T, T, T)>,
    b: &mut Pair<T>,
    acc: &mut V<T>,
) {
    let impulse = match terms {
        None => *acc,
        Some((bias_rate, mass_scale, impulse_scale)) => {
            let cdot = b.vb + b.wb.cross(rb) - b.va - b.wa.cross(ra);
            let mass = match kept {
                None => point_mass(ra, rb, b.ma, b.mb, &b.ia, &b.ib),
                Some((mass, true)) => {
                    *mass = point_mass(ra, rb, b.ma, b.mb, &b.ia, &b.ib);
                    *mass
                }
                Some((mass, false)) => *mass,
            };
            let impulse = (-mass.mul(cdot + d.scale(bias_rate))).scale(mass_scale) - acc.scale(impulse_scale);
            *acc = *acc + impulse;
            impulse
        }
    };
    b.va = b.va - impulse.scale(b.ma);
    b.wa = b.wa - b.ia.mul(ra.cross(impulse));
    b.vb = b.vb + impulse.scale(b.mb);
    b.wb = b.wb + b.ib.mul(rb.cross(impulse));
}

/// The anchors now and the point part's error: `ra`, `rb` turned by each body's
/// rotation since the step's start (`dq`), and `d = delta + (dp_b - dp_a) + rb - ra`.
#[inline(always)]
pub(crate) fn anchors<T: Real>(
    (anchor_a, anchor_b, delta): (V<T>, V<T>, V<T>),
    (dp_a, dq_a): (V<T>, (V<T>, T)),
    (dp_b, dq_b): (V<T>, (V<T>, T)),
) -> (V<T>, V<T>, V<T>) {
    let (ra, rb) = (rotate(dq_a.0, dq_a.1, anchor_a), rotate(dq_b.0, dq_b.1, anchor_b));
    (ra, rb, delta + (dp_b - dp_a) + rb - ra)
}

impl<L: Lanes> V<L> {
    #[inline(always)]
    fn lane(self, i: usize) -> Vec3 {
        Vec3::new(self.x.get(i), self.y.get(i), self.z.get(i))
    }
}

/// A body's state rows as lanes: `v`, `w`, `dp` and `dq` (vector part, scalar part).
type Body<L> = (V<L>, V<L>, V<L>, (V<L>, L));

/// The states at `at` (see [`BodyState::rows`]: `v, w, dp.xy` and `dp.z, spare, dq`).
///
/// # Safety
/// Every address is a whole state that no other thread writes meanwhile.
#[inline(always)]
unsafe fn gather_body<L: Lanes>(at: &[*const BodyState; MAX_LANES]) -> Body<L> {
    let mut rows = [[std::ptr::null(); MAX_LANES]; 2];
    for i in 0..MAX_LANES {
        [rows[0][i], rows[1][i]] = BodyState::rows(at[i]);
    }
    // SAFETY: forwarded from the caller.
    let ([vx, vy, vz, wx, wy, wz, px, py], [pz, _, _, _, qx, qy, qz, qw]) =
        unsafe { (L::gather_rows(&rows[0]), L::gather_rows(&rows[1])) };
    (V { x: vx, y: vy, z: vz }, V { x: wx, y: wy, z: wz }, V { x: px, y: py, z: pz }, (V { x: qx, y: qy, z: qz }, qw))
}

/// Solves (or warm-starts) the ball joints `group` (indices into `joints`, at most
/// `L::N`, all [`JointSolve::ball`]) at once: what
/// [`crate::physics::joint_solver::solve_joint`] does to each, with the same bits.
///
/// # Safety
/// The group's joints share no dynamic body, and their dynamic bodies and the joints
/// themselves are touched by no other thread meanwhile.
#[inline(always)]
unsafe fn solve_balls<L: Lanes>(
    joints: &Column<JointSolve>,
    group: &[u32],
    states: &Column<BodyState>,
    ctx: &StepContext,
    mode: Mode,
) {
    static STILL: BodyState = BodyState::STILL;
    // Empty lanes read a zero joint (no mass: nothing moves) and a still state.
    static NO_POINT: [f32; 8 * JointSolve::POINT_ROWS] = [0.0; 8 * JointSolve::POINT_ROWS];
    let n = group.len().min(L::N);
    let mut at: [[*const BodyState; MAX_LANES]; 2] = [[&STILL; MAX_LANES]; 2];
    let mut point: [*const f32; MAX_LANES] = [NO_POINT.as_ptr(); MAX_LANES];
    for i in 0..n {
        // SAFETY: forwarded from the caller (read here, written below).
        let j = unsafe { &*joints.ptr(group[i] as usize) };
        if j.row_a != NONE {
            at[0][i] = states.ptr(j.row_a as usize);
        }
        if j.row_b != NONE {
            at[1][i] = states.ptr(j.row_b as usize);
        }
        point[i] = joints.ptr(group[i] as usize).cast::<f32>();
    }
    // The point part's rows (see `JointSolve`'s layout), value `f` at `[f / 8][f % 8]`
    // (made in place: a zeroed array filled after cost a 2 KB memset a group).
    let rows: [[L; 8]; JointSolve::POINT_ROWS] = std::array::from_fn(|r| {
        let at: [*const f32; MAX_LANES] = std::array::from_fn(|i| point[i].wrapping_add(8 * r));
        // SAFETY: each address starts a joint's (or `NO_POINT`'s) row `r` of eight.
        unsafe { L::gather_rows(&at) }
    });
    let flat = |f: usize| rows[f / 8][f % 8];
    let v = |f: usize| V { x: flat(f), y: flat(f + 1), z: flat(f + 2) };
    // A symmetric matrix's six entries (`Sym`) as its columns.
    let m = |f: usize| {
        let [a, b, c, d, e, g] = [flat(f), flat(f + 1), flat(f + 2), flat(f + 3), flat(f + 4), flat(f + 5)];
        M { x: V { x: a, y: b, z: c }, y: V { x: b, y: d, z: e }, z: V { x: c, y: e, z: g } }
    };
    let (ma, mb, ia, ib) = (flat(0), flat(1), m(2), m(8));
    let (anchor_a, anchor_b, delta) = (v(14), v(17), v(20));
    let mut acc = v(25);
    // SAFETY: forwarded from the caller.
    let ((va, wa, dp_a, dq_a), (vb, wb, dp_b, dq_b)) = unsafe { (gather_body::<L>(&at[0]), gather_body::<L>(&at[1])) };

    let (ra, rb, d) = anchors((anchor_a, anchor_b, delta), (dp_a, dq_a), (dp_b, dq_b));
    let use_bias = soft_terms(mode, ctx);
    let terms = match mode {
        Mode::WarmStart => None,
        Mode::Solve { .. } => {
            let (bias_rate, mass_scale, impulse_scale) = terms(1.0, &ctx.joint_soft, use_bias);
            Some((L::splat(bias_rate), L::splat(mass_scale), L::splat(impulse_scale)))
        }
    };
    let mut b = Pair { va, wa, vb, wb, ma, mb, ia, ib };
    point_part((ra, rb), d, None, terms, &mut b, &mut acc);

    // `finish_joint`'s tests in lanes: where every velocity is finite and within the
    // saturation speed (as `clamp_length_max` finds it), it writes them unchanged.
    let square = |v: V<L>| v.x * v.x + v.y * v.y + v.z * v.z;
    let limit = L::splat(MAX_LINEAR_SPEED * MAX_LINEAR_SPEED);
    let sum = b.va + b.wa + b.vb + b.wb;
    // Zero times an infinity or a NaN is NaN.
    let unusual = (sum.x * L::ZERO).is_nan_mask()
        | (sum.y * L::ZERO).is_nan_mask()
        | (sum.z * L::ZERO).is_nan_mask()
        | square(b.va).cmpgt(limit)
        | square(b.wa).cmpgt(limit)
        | square(b.vb).cmpgt(limit)
        | square(b.wb).cmpgt(limit);
    let usual = L::bits(unusual) & ((1u32 << n) - 1) == 0;
    let mut moved: [[*mut f32; MAX_LANES]; 2] = [[std::ptr::null_mut(); MAX_LANES]; 2];
    for i in 0..n {
        // SAFETY: forwarded from the caller; nothing read above is borrowed now.
        let j = unsafe { joints.get(group[i] as usize) };
        j.impulses.linear = acc.lane(i);
        if !usual {
            let velocities = (b.va.lane(i), b.wa.lane(i), b.vb.lane(i), b.wb.lane(i));
            // SAFETY: forwarded from the caller.
            unsafe { finish_joint(j, states, velocities) };
            continue;
        }
        // Only dynamic bodies are written (a kinematic one may be another lane's too).
        if j.row_a != NONE && j.inv_mass_a > 0.0 {
            moved[0][i] = at[0][i].cast::<f32>().cast_mut();
        }
        if j.row_b != NONE && j.inv_mass_b > 0.0 {
            moved[1][i] = at[1][i].cast::<f32>().cast_mut();
        }
    }
    if usual {
        let row = |v: V<L>, w: V<L>, dp: V<L>| [v.x, v.y, v.z, w.x, w.y, w.z, dp.x, dp.y];
        // SAFETY: forwarded from the caller: the rows are the group's dynamic bodies'
        // whole states, `dp.xy` written back as read.
        unsafe {
            L::scatter_rows(row(b.va, b.wa, dp_a), &moved[0]);
            L::scatter_rows(row(b.vb, b.wb, dp_b), &moved[1]);
        }
    }
}

/// The lane widths [`solve_balls`] is compiled for, as the contact bundles' `Width`.
pub(crate) trait BallWidth: Lanes {
    /// [`solve_balls`] on `group` (at most `Self::N` joints).
    ///
    /// # Safety
    /// As [`solve_balls`].
    unsafe fn solve_balls(
        joints: &Column<JointSolve>,
        group: &[u32],
        states: &Column<BodyState>,
        ctx: &StepContext,
        mode: Mode,
    );
}

impl BallWidth for Vec4 {
    unsafe fn solve_balls(
        joints: &Column<JointSolve>,
        group: &[u32],
        states: &Column<BodyState>,
        ctx: &StepContext,
        mode: Mode,
    ) {
        // SAFETY: forwarded from the caller.
        unsafe { solve_balls::<Vec4>(joints, group, states, ctx, mode) }
    }
}

/// Eight lanes: only run by a `Coloring` that found AVX.
#[cfg(target_arch = "x86_64")]
impl BallWidth for F8 {
    unsafe fn solve_balls(
        joints: &Column<JointSolve>,
        group: &[u32],
        states: &Column<BodyState>,
        ctx: &StepContext,
        mode: Mode,
    ) {
        #[target_feature(enable = "avx")]
        unsafe fn avx(
            joints: &Column<JointSolve>,
            group: &[u32],
            states: &Column<BodyState>,
            ctx: &StepContext,
            mode: Mode,
        ) {
            // SAFETY: forwarded from the caller.
            unsafe { solve_balls::<F8>(joints, group, states, ctx, mode) }
        }
        // SAFETY: forwarded from the caller; eight lanes run only with AVX.
        unsafe { avx(joints, group, states, ctx, mode) }
    }
}

/// Sixteen lanes: only run by a `Coloring` that found AVX-512F.
#[cfg(target_arch = "x86_64")]
impl BallWidth for F16 {
    unsafe fn solve_balls(
        joints: &Column<JointSolve>,
        group: &[u32],
        states: &Column<BodyState>,
        ctx: &StepContext,
        mode: Mode,
    ) {
        #[target_feature(enable = "avx512f")]
        unsafe fn avx512(
            joints: &Column<JointSolve>,
            group: &[u32],
            states: &Column<BodyState>,
            ctx: &StepContext,
            mode: Mode,
        ) {
            // SAFETY: forwarded from the caller.
            unsafe { solve_balls::<F16>(joints, group, states, ctx, mode) }
        }
        // SAFETY: forwarded from the caller; sixteen lanes run only with AVX-512F.
        unsafe { avx512(joints, group, states, ctx, mode) }
    }
}

#[cfg(test)]
#[path = "ball_tests.rs"]
mod tests;
