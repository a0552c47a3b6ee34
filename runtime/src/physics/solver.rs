//! The contact solver: soft step with substeps (Box2D v3's solver, in 3D), over
//! constraints grouped by graph colour.
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
//! does not lift it off the ground, but turning its contact anchor does, and a ball
//! or capsule rolling at 8 rad/s lost its normal impulse (and with it its rolling
//! resistance) within the step.
//!
//! Softness (Catto, "Solver2D", 2024): a contact is a spring-damper with stiffness
//! from `contact_hertz` (at most a quarter of the substep rate) and damping ratio 10,
//! which turns penetration recovery into a smooth push (capped at `push_out`) instead
//! of Baumgarte's stiff, energy-adding bias. Contacts with a static or kinematic body
//! get twice the stiffness. Speculative points (positive separation) only remove the
//! approach velocity that would close the gap within the substep.
//!
//! Graph colours: constraints of one colour share no dynamic body, so each colour's
//! constraints run in parallel and the result is the same for any worker count.
//! Constraints that fit no colour go to an overflow list solved on one thread, first.

use std::ops::Range;

use glam::{Mat3, Quat, Vec3};

use crate::jobs::Jobs;

/// No body (terrain, static, or a body outside the awake set).
pub(crate) const NONE: u32 = u32::MAX;

/// Number of graph colours; the rest overflows.
pub(crate) const COLORS: usize = 24;

/// Radius of the contact patch that twist friction assumes (m): the largest twist
/// impulse is `friction * TWIST_RADIUS * normal impulse`. Point contacts cannot resist
/// spin about an axis through them; without this a box wedged by two opposite corners
/// (a wall and a slope) spins about its diagonal forever and never sleeps.
pub(crate) const TWIST_RADIUS: f32 = 0.01;

/// Constraints per solver job.
const SOLVE_GRAIN: usize = 64;

/// A contact point as the solver keeps it.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct ContactPoint {
    /// World position at the step's start (between the surfaces).
    pub point: Vec3,
    /// From A to B.
    pub normal: Vec3,
    pub tangent1: Vec3,
    pub tangent2: Vec3,
    pub separation: f32,
    /// Feature id, matched across steps for warm starting.
    pub id: u32,
    /// Anchors relative to the centres of mass at the step's start.
    pub anchor_a: Vec3,
    pub anchor_b: Vec3,
    pub base_separation: f32,
    pub normal_mass: f32,
    pub tangent_mass: [f32; 2],
    pub normal_impulse: f32,
    pub tangent_impulse: [f32; 2],
    pub max_normal_impulse: f32,
    /// Normal velocity at the step's start (restitution target).
    pub relative_velocity: f32,
}

/// Up to four points between body A and body B (or terrain), each with its normal.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Constraint {
    /// Pair key: `proxy_a << 32 | proxy_b`, or `proxy << 32 | u32::MAX` for terrain.
    pub key: u64,
    /// Which manifold of the pair (compound parts, terrain part).
    pub sub: u64,
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
    pub rolling_mass: Mat3,
    pub rolling_impulse: Vec3,
    /// Twist friction about the first point's normal: its effective mass and
    /// accumulated impulse (see [`TWIST_RADIUS`]).
    pub twist_mass: f32,
    pub twist_impulse: f32,
    pub inv_mass_a: f32,
    pub inv_mass_b: f32,
    pub inv_inertia_a: Mat3,
    pub inv_inertia_b: Mat3,
    pub count: u32,
    pub points: [ContactPoint; 4],
}

impl Constraint {
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
            rolling_mass: Mat3::ZERO,
            rolling_impulse: Vec3::ZERO,
            twist_mass: 0.0,
            twist_impulse: 0.0,
            inv_mass_a: 0.0,
            inv_mass_b: 0.0,
            inv_inertia_a: Mat3::ZERO,
            inv_inertia_b: Mat3::ZERO,
            count: 0,
            points: [ContactPoint::default(); 4],
        }
    }

    pub fn points(&self) -> &[ContactPoint] {
        &self.points[..self.count as usize]
    }

    /// Adds a point (ignored past four).
    pub fn push(&mut self, point: Vec3, normal: Vec3, separation: f32, id: u32) {
        if self.count < 4 {
            let (tangent1, tangent2) = tangents(normal);
            self.points[self.count as usize] =
                ContactPoint { point, normal, tangent1, tangent2, separation, id, ..ContactPoint::default() };
            self.count += 1;
        }
    }

    /// Copies the accumulated impulses of points with matching ids from `old`.
    pub fn warm_from(&mut self, old: &Constraint) {
        self.rolling_impulse = old.rolling_impulse;
        self.twist_impulse = old.twist_impulse;
        for p in &mut self.points[..self.count as usize] {
            if let Some(o) = old.points().iter().find(|o| o.id == p.id) {
                p.normal_impulse = o.normal_impulse;
                p.tangent_impulse = o.tangent_impulse;
            }
        }
    }
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
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct BodyState {
    pub v: Vec3,
    pub w: Vec3,
    pub dp: Vec3,
    pub dq: Quat,
}

impl BodyState {
    pub const STILL: BodyState = BodyState { v: Vec3::ZERO, w: Vec3::ZERO, dp: Vec3::ZERO, dq: Quat::IDENTITY };
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
}

/// Mutable access to disjoint elements of one slice from parallel jobs.
pub(crate) struct Column<T>(*mut T, usize);

// SAFETY: jobs touch disjoint elements (see `rows` and `get`), and T: Send moves
// across threads.
unsafe impl<T: Send> Sync for Column<T> {}

impl<T> Column<T> {
    pub fn new(v: &mut [T]) -> Column<T> {
        Column(v.as_mut_ptr(), v.len())
    }

    pub fn len(&self) -> usize {
        self.1
    }

    /// # Safety
    /// No other live borrow overlaps `range` (each job gets its own chunk).
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn rows(&self, range: Range<usize>) -> &mut [T] {
        assert!(range.start <= range.end && range.end <= self.1, "row range out of bounds");
        // SAFETY: in bounds (checked), disjoint per the caller's contract.
        unsafe { std::slice::from_raw_parts_mut(self.0.add(range.start), range.len()) }
    }

    /// # Safety
    /// No other thread reads or writes element `i` meanwhile.
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn get(&self, i: usize) -> &mut T {
        assert!(i < self.1, "row out of bounds");
        // SAFETY: in bounds (checked), exclusive per the caller's contract.
        unsafe { &mut *self.0.add(i) }
    }
}

/// Reads a body's state (`STILL` for `NONE`).
///
/// # Safety
/// No other thread writes row `row` meanwhile.
unsafe fn read(states: &Column<BodyState>, row: u32) -> BodyState {
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
unsafe fn write(states: &Column<BodyState>, row: u32, dynamic: bool, v: Vec3, w: Vec3) {
    if row != NONE && dynamic {
        // SAFETY: forwarded from the caller.
        let s = unsafe { states.get(row as usize) };
        if (v + w).is_finite() {
            s.v = v;
            s.w = w;
        } else {
            // An impulse overflowed (absurd but finite masses and speeds): saturate as
            // the integrator does, so no NaN reaches the next constraint.
            s.v = super::world::saturate(v, super::MAX_LINEAR_SPEED);
            s.w = super::world::saturate(w, super::MAX_LINEAR_SPEED);
        }
    }
}

/// Anchors, effective masses and the restitution reference of every point.
pub(crate) fn prepare(c: &mut Constraint, center_a: Vec3, center_b: Vec3, state_a: &BodyState, state_b: &BodyState) {
    let (ma, mb) = (c.inv_mass_a, c.inv_mass_b);
    let (ia, ib) = (c.inv_inertia_a, c.inv_inertia_b);
    let k = |ra: Vec3, rb: Vec3, d: Vec3| {
        let (rna, rnb) = (ra.cross(d), rb.cross(d));
        let k = ma + mb + rna.dot(ia * rna) + rnb.dot(ib * rnb);
        if k > 0.0 {
            1.0 / k
        } else {
            0.0
        }
    };
    if c.rolling_resistance > 0.0 {
        let k = ia + ib;
        c.rolling_mass = if k.determinant() > 0.0 { k.inverse() } else { Mat3::ZERO };
    }
    if c.count > 0 {
        let n = c.points[0].normal;
        let k = n.dot(ia * n) + n.dot(ib * n);
        c.twist_mass = if k > 0.0 { 1.0 / k } else { 0.0 };
    }
    for p in &mut c.points[..c.count as usize] {
        let (ra, rb) = (p.point - center_a, p.point - center_b);
        p.anchor_a = ra;
        p.anchor_b = rb;
        let (ta, tb) = (ra - p.normal * c.round_a, rb + p.normal * c.round_b);
        p.base_separation = p.separation - (tb - ta).dot(p.normal);
        p.normal_mass = k(ra, rb, p.normal);
        p.tangent_mass = [k(ra, rb, p.tangent1), k(ra, rb, p.tangent2)];
        p.max_normal_impulse = 0.0;
        let dv = state_b.v + state_b.w.cross(rb) - state_a.v - state_a.w.cross(ra);
        p.relative_velocity = p.normal.dot(dv);
    }
}

/// The relative velocity of B against A at a point.
fn relative(va: Vec3, wa: Vec3, vb: Vec3, wb: Vec3, ra: Vec3, rb: Vec3) -> Vec3 {
    vb + wb.cross(rb) - va - wa.cross(ra)
}

/// Applies the accumulated impulses.
///
/// # Safety
/// `c`'s dynamic bodies are touched by no other thread meanwhile.
pub(crate) unsafe fn warm_start(c: &Constraint, states: &Column<BodyState>) {
    // SAFETY: forwarded from the caller.
    let (sa, sb) = unsafe { (read(states, c.row_a), read(states, c.row_b)) };
    let (mut va, mut wa, mut vb, mut wb) = (sa.v, sa.w, sb.v, sb.w);
    let angular = c.rolling_impulse + c.points[0].normal * c.twist_impulse;
    wa -= c.inv_inertia_a * angular;
    wb += c.inv_inertia_b * angular;
    for p in c.points() {
        let impulse =
            p.normal * p.normal_impulse + p.tangent1 * p.tangent_impulse[0] + p.tangent2 * p.tangent_impulse[1];
        va -= impulse * c.inv_mass_a;
        wa -= c.inv_inertia_a * p.anchor_a.cross(impulse);
        vb += impulse * c.inv_mass_b;
        wb += c.inv_inertia_b * p.anchor_b.cross(impulse);
    }
    // SAFETY: forwarded from the caller.
    unsafe {
        write(states, c.row_a, c.inv_mass_a > 0.0, va, wa);
        write(states, c.row_b, c.inv_mass_b > 0.0, vb, wb);
    }
}

/// One pass over the constraint: non-penetration (soft when `use_bias`), then
/// friction clamped to the friction cone of each point's normal impulse.
///
/// # Safety
/// `c`'s dynamic bodies are touched by no other thread meanwhile.
pub(crate) unsafe fn solve(c: &mut Constraint, states: &Column<BodyState>, ctx: &StepContext, use_bias: bool) {
    // SAFETY: forwarded from the caller.
    let (sa, sb) = unsafe { (read(states, c.row_a), read(states, c.row_b)) };
    let (mut va, mut wa, mut vb, mut wb) = (sa.v, sa.w, sb.v, sb.w);
    let (ma, mb, ia, ib) = (c.inv_mass_a, c.inv_mass_b, c.inv_inertia_a, c.inv_inertia_b);
    let soft = if ma == 0.0 || mb == 0.0 { ctx.static_soft } else { ctx.soft };
    let moved = sb.dp - sa.dp;
    for p in &mut c.points[..c.count as usize] {
        let (ra, rb) = (p.anchor_a, p.anchor_b);
        // Current separation from the bodies' motion since the step's start.
        let (ta, tb) = (ra - p.normal * c.round_a, rb + p.normal * c.round_b);
        let d = moved + (sb.dq * tb - sa.dq * ta);
        let s = d.dot(p.normal) + p.base_separation;
        let (bias, mass_scale, impulse_scale) = if s > 0.0 {
            (s * ctx.inv_h, 1.0, 0.0)
        } else if use_bias {
            ((soft.bias_rate * s).max(-ctx.push_out), soft.mass_scale, soft.impulse_scale)
        } else {
            (0.0, 1.0, 0.0)
        };
        let vn = relative(va, wa, vb, wb, ra, rb).dot(p.normal);
        let impulse = -p.normal_mass * mass_scale * (vn + bias) - impulse_scale * p.normal_impulse;
        let total = (p.normal_impulse + impulse).max(0.0).clamp(0.0, f32::MAX); // max: NaN to 0
        let impulse = total - p.normal_impulse;
        p.normal_impulse = total;
        p.max_normal_impulse = p.max_normal_impulse.max(impulse);
        let j = p.normal * impulse;
        va -= j * ma;
        wa -= ia * ra.cross(j);
        vb += j * mb;
        wb += ib * rb.cross(j);
    }
    for p in &mut c.points[..c.count as usize] {
        let (ra, rb) = (p.anchor_a, p.anchor_b);
        let dv = relative(va, wa, vb, wb, ra, rb);
        let old = p.tangent_impulse;
        let mut t = [old[0] - p.tangent_mass[0] * dv.dot(p.tangent1), old[1] - p.tangent_mass[1] * dv.dot(p.tangent2)];
        let limit = c.friction * p.normal_impulse;
        let length_sq = t[0] * t[0] + t[1] * t[1];
        if length_sq > limit * limit {
            let scale = limit / length_sq.sqrt();
            t = [t[0] * scale, t[1] * scale];
        }
        p.tangent_impulse = t;
        let j = p.tangent1 * (t[0] - old[0]) + p.tangent2 * (t[1] - old[1]);
        va -= j * ma;
        wa -= ia * ra.cross(j);
        vb += j * mb;
        wb += ib * rb.cross(j);
    }
    let normal: f32 = c.points().iter().map(|p| p.normal_impulse).sum();
    if c.count > 0 {
        let n = c.points[0].normal;
        let limit = c.friction * TWIST_RADIUS * normal;
        let old = c.twist_impulse;
        // max/min rather than clamp: a limit of 0 * inf is NaN, which clamp panics on.
        let total = (old - c.twist_mass * n.dot(wb - wa)).max(-limit).min(limit);
        c.twist_impulse = total;
        let j = n * (total - old);
        wa -= ia * j;
        wb += ib * j;
    }
    if c.rolling_resistance > 0.0 {
        let limit = c.rolling_resistance * normal;
        let old = c.rolling_impulse;
        let mut total = old - c.rolling_mass * (wb - wa);
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
pub(crate) unsafe fn restitute(c: &mut Constraint, states: &Column<BodyState>, ctx: &StepContext) {
    if c.restitution == 0.0 {
        return;
    }
    // SAFETY: forwarded from the caller.
    let (sa, sb) = unsafe { (read(states, c.row_a), read(states, c.row_b)) };
    let (mut va, mut wa, mut vb, mut wb) = (sa.v, sa.w, sb.v, sb.w);
    let (ma, mb, ia, ib) = (c.inv_mass_a, c.inv_mass_b, c.inv_inertia_a, c.inv_inertia_b);
    for p in &mut c.points[..c.count as usize] {
        if p.relative_velocity > -ctx.restitution_threshold || p.max_normal_impulse == 0.0 {
            continue;
        }
        let (ra, rb) = (p.anchor_a, p.anchor_b);
        let vn = relative(va, wa, vb, wb, ra, rb).dot(p.normal);
        let impulse = -p.normal_mass * (vn + c.restitution * p.relative_velocity);
        let total = (p.normal_impulse + impulse).max(0.0);
        let impulse = total - p.normal_impulse;
        p.normal_impulse = total;
        let j = p.normal * impulse;
        va -= j * ma;
        wa -= ia * ra.cross(j);
        vb += j * mb;
        wb += ib * rb.cross(j);
    }
    // SAFETY: forwarded from the caller.
    unsafe {
        write(states, c.row_a, ma > 0.0, va, wa);
        write(states, c.row_b, mb > 0.0, vb, wb);
    }
}

/// The constraints of a step grouped by colour: `order[ranges[k]]` are colour `k`'s
/// constraint indices, the last range is the overflow.
#[derive(Debug, Default)]
pub(crate) struct Coloring {
    /// One bit per awake row, per colour.
    used: Vec<Vec<u64>>,
    color: Vec<u8>,
    counts: [usize; COLORS + 1],
    pub ranges: Vec<Range<usize>>,
}

impl Coloring {
    /// Assigns every constraint the first colour in which none of its dynamic bodies
    /// appears yet (in constraint order: deterministic), then reorders `constraints`
    /// by colour. `dynamic(row)` tells whether an awake row is a dynamic body.
    pub fn color(&mut self, constraints: &mut [Constraint], scratch: &mut Vec<Constraint>, rows: usize) {
        let words = rows.div_ceil(64);
        self.used.resize_with(COLORS, Vec::new);
        for bits in &mut self.used {
            bits.clear();
            bits.resize(words, 0);
        }
        self.color.clear();
        self.counts = [0; COLORS + 1];
        for c in constraints.iter() {
            let a = (c.inv_mass_a > 0.0 && c.row_a != NONE).then_some(c.row_a as usize);
            let b = (c.inv_mass_b > 0.0 && c.row_b != NONE).then_some(c.row_b as usize);
            let mut chosen = COLORS;
            for (k, bits) in self.used.iter_mut().enumerate() {
                let free = |r: Option<usize>| r.is_none_or(|r| bits[r / 64] & (1 << (r % 64)) == 0);
                if free(a) && free(b) {
                    for r in [a, b].into_iter().flatten() {
                        bits[r / 64] |= 1 << (r % 64);
                    }
                    chosen = k;
                    break;
                }
            }
            self.color.push(chosen as u8);
            self.counts[chosen] += 1;
        }
        // Counting sort: overflow last.
        self.ranges.clear();
        let mut start = 0;
        let mut offsets = [0usize; COLORS + 1];
        for (k, count) in self.counts.iter().enumerate() {
            offsets[k] = start;
            self.ranges.push(start..start + count);
            start += count;
        }
        scratch.clear();
        scratch.extend_from_slice(constraints);
        for (c, &k) in scratch.iter().zip(&self.color) {
            constraints[offsets[k as usize]] = *c;
            offsets[k as usize] += 1;
        }
    }

    /// Colours in use (not counting the overflow).
    pub fn color_count(&self) -> usize {
        self.counts[..COLORS].iter().filter(|&&n| n > 0).count()
    }

    pub fn overflow(&self) -> usize {
        self.counts[COLORS]
    }
}

/// Runs `f` over every constraint: the overflow on this thread first, then each
/// colour's constraints in parallel.
pub(crate) fn for_each_colored<F>(coloring: &Coloring, constraints: &mut [Constraint], jobs: Jobs, f: F)
where
    F: Fn(&mut Constraint) + Sync,
{
    let overflow = coloring.ranges[COLORS].clone();
    for c in &mut constraints[overflow] {
        f(c);
    }
    let column = Column::new(constraints);
    for range in &coloring.ranges[..COLORS] {
        if range.is_empty() {
            continue;
        }
        jobs.parallel_for(range.clone(), SOLVE_GRAIN, |chunk, _| {
            // SAFETY: chunks of one colour range are disjoint.
            for c in unsafe { column.rows(chunk) } {
                f(c);
            }
        });
    }
}

/// A pass over all constraints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Pass {
    WarmStart,
    Solve,
    Relax,
    Restitute,
}

/// Runs `pass` over every constraint, colour by colour (see [`for_each_colored`]).
pub(crate) fn run_pass(
    pass: Pass,
    coloring: &Coloring,
    constraints: &mut [Constraint],
    states: &mut [BodyState],
    ctx: &StepContext,
    jobs: Jobs,
) {
    let states = Column::new(states);
    for_each_colored(coloring, constraints, jobs, |c| {
        // SAFETY: the overflow runs alone on this thread; within a colour no two
        // constraints share a dynamic body, colours run one after another, and only
        // dynamic bodies' states are written (static and kinematic ones are read).
        unsafe {
            match pass {
                Pass::WarmStart => warm_start(c, &states),
                Pass::Solve => solve(c, &states, ctx, true),
                Pass::Relax => solve(c, &states, ctx, false),
                Pass::Restitute => restitute(c, &states, ctx),
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An effective mass of `f32::MAX` meeting 1e5 m/s: the normal impulse overflows.
    /// It stays finite, the frictionless twist limit (0 x inf was NaN, and `clamp`
    /// panicked on it) holds, and the written velocities are finite. Found by
    /// `samples-c/tests/fuzz_api.c` (seed 489 of `make fuzz`).
    #[test]
    fn an_overflowing_impulse_keeps_the_solve_finite() {
        let mut c = Constraint::new(0, 0, 0, 1, 0.0, 0.0);
        (c.row_a, c.row_b, c.count) = (0, 1, 1);
        (c.inv_mass_a, c.inv_mass_b) = (1.0, 1.0);
        (c.inv_inertia_a, c.inv_inertia_b) = (Mat3::IDENTITY, Mat3::IDENTITY);
        c.twist_mass = 1.0;
        c.points[0] = ContactPoint {
            normal: Vec3::Y,
            tangent1: Vec3::X,
            tangent2: Vec3::Z,
            normal_mass: f32::MAX,
            tangent_mass: [1.0, 1.0],
            ..ContactPoint::default()
        };
        let mut states = [
            BodyState { v: Vec3::new(0.0, 1e5, 0.0), w: Vec3::new(0.0, 3.0, 0.0), ..BodyState::STILL },
            BodyState { w: Vec3::new(0.0, -3.0, 0.0), ..BodyState::STILL },
        ];
        let soft = Softness::new(30.0, 10.0, 1.0 / 240.0);
        let ctx = StepContext { inv_h: 240.0, soft, static_soft: soft, push_out: 3.0, restitution_threshold: 1.0 };
        let column = Column::new(&mut states);
        for _ in 0..3 {
            // SAFETY: one thread, both rows in bounds.
            unsafe { solve(&mut c, &column, &ctx, true) };
        }
        assert!(c.points[0].normal_impulse.is_finite(), "{}", c.points[0].normal_impulse);
        assert!(c.twist_impulse.is_finite(), "{}", c.twist_impulse);
        for s in &states {
            assert!(s.v.is_finite() && s.w.is_finite(), "{s:?}");
            assert!(s.v.length() <= crate::physics::MAX_LINEAR_SPEED * 1.001, "{s:?}");
        }
    }
}
