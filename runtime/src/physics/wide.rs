//! The contact solver four constraints at a time (Box2D v3's wide solver, in 3D).
//!
//! Within one graph colour no two constraints share a dynamic body, so four of them
//! can be solved side by side: each `f32` of the scalar solver becomes a `Vec4` whose
//! lanes are four constraints, and each body state is gathered from its row before
//! the pass and scattered back after it. The scalar solver spends most of its time
//! waiting on one point's impulse before it can start the next; four independent
//! chains in the lanes of one SSE register hide that latency and do four times the
//! arithmetic per instruction.
//!
//! Every lane computes exactly what [`solver::solve`] and [`solver::warm_start`]
//! compute, operation for operation, so a bundle's result equals the scalar
//! solver's (the tests compare them with `==`; the only difference is the sign of a
//! zero, from adding the empty points of a lane with fewer than the bundle's
//! points). Which constraints share a bundle therefore changes nothing.
//!
//! Constraints with rolling resistance or without points take the scalar path.
//! A colour whose count is not a multiple of four ends with a partly empty bundle.

use glam::{BVec4A, Mat4, Quat, Vec3, Vec4};

use super::solver::{self, BodyState, Column, Constraint, Frame, StepContext, NONE, TWIST_RADIUS};

/// Lanes per bundle.
pub(crate) const LANES: usize = 4;

/// Four `Vec3`s, one per lane, as three `Vec4`s (x, y and z of each lane).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct V3 {
    x: Vec4,
    y: Vec4,
    z: Vec4,
}

impl V3 {
    const ZERO: V3 = V3 { x: Vec4::ZERO, y: Vec4::ZERO, z: Vec4::ZERO };

    fn set(&mut self, lane: usize, v: Vec3) {
        (self.x[lane], self.y[lane], self.z[lane]) = (v.x, v.y, v.z);
    }

    /// Four vectors into lanes: a 4x4 transpose (SSE shuffles).
    fn gather(v: [Vec3; LANES]) -> V3 {
        let m = Mat4::from_cols(v[0].extend(0.0), v[1].extend(0.0), v[2].extend(0.0), v[3].extend(0.0)).transpose();
        V3 { x: m.x_axis, y: m.y_axis, z: m.z_axis }
    }

    /// The lanes as four vectors: the transpose back.
    fn lanes(self) -> [Vec3; LANES] {
        let m = Mat4::from_cols(self.x, self.y, self.z, Vec4::ZERO).transpose();
        [m.x_axis.truncate(), m.y_axis.truncate(), m.z_axis.truncate(), m.w_axis.truncate()]
    }

    /// As `Vec3::dot`: `(x * x') + (y * y') + (z * z')`.
    fn dot(self, o: V3) -> Vec4 {
        self.x * o.x + self.y * o.y + self.z * o.z
    }

    /// As `Vec3::cross`.
    fn cross(self, o: V3) -> V3 {
        V3 { x: self.y * o.z - o.y * self.z, y: self.z * o.x - o.z * self.x, z: self.x * o.y - o.x * self.y }
    }
}

impl std::ops::Add for V3 {
    type Output = V3;
    fn add(self, o: V3) -> V3 {
        V3 { x: self.x + o.x, y: self.y + o.y, z: self.z + o.z }
    }
}

impl std::ops::Sub for V3 {
    type Output = V3;
    fn sub(self, o: V3) -> V3 {
        V3 { x: self.x - o.x, y: self.y - o.y, z: self.z - o.z }
    }
}

impl std::ops::Mul<Vec4> for V3 {
    type Output = V3;
    fn mul(self, s: Vec4) -> V3 {
        V3 { x: self.x * s, y: self.y * s, z: self.z * s }
    }
}

impl std::ops::AddAssign for V3 {
    fn add_assign(&mut self, o: V3) {
        *self = *self + o;
    }
}

impl std::ops::SubAssign for V3 {
    fn sub_assign(&mut self, o: V3) {
        *self = *self - o;
    }
}

/// Four rotation matrices, built as `Mat3::from_quat` builds one.
struct Turn {
    x_axis: V3,
    y_axis: V3,
    z_axis: V3,
}

impl Turn {
    fn from_quats(q: [Quat; LANES]) -> Turn {
        let x = Vec4::new(q[0].x, q[1].x, q[2].x, q[3].x);
        let y = Vec4::new(q[0].y, q[1].y, q[2].y, q[3].y);
        let z = Vec4::new(q[0].z, q[1].z, q[2].z, q[3].z);
        let w = Vec4::new(q[0].w, q[1].w, q[2].w, q[3].w);
        let (x2, y2, z2) = (x + x, y + y, z + z);
        let (xx, xy, xz) = (x * x2, x * y2, x * z2);
        let (yy, yz, zz) = (y * y2, y * z2, z * z2);
        let (wx, wy, wz) = (w * x2, w * y2, w * z2);
        let one = Vec4::ONE;
        Turn {
            x_axis: V3 { x: one - (yy + zz), y: xy + wz, z: xz - wy },
            y_axis: V3 { x: xy - wz, y: one - (xx + zz), z: yz + wx },
            z_axis: V3 { x: xz + wy, y: yz - wx, z: one - (xx + yy) },
        }
    }

    /// As `Mat3 * Vec3`.
    fn apply(&self, v: V3) -> V3 {
        self.x_axis * v.x + self.y_axis * v.y + self.z_axis * v.z
    }
}

/// One contact point slot of four constraints.
#[derive(Clone, Copy, Debug)]
struct WidePoint {
    anchor_a: V3,
    anchor_b: V3,
    normal: V3,
    tangent1: V3,
    tangent2: V3,
    angular_a: [V3; 3],
    angular_b: [V3; 3],
    base_separation: Vec4,
    normal_mass: Vec4,
    tangent_mass: [Vec4; 2],
    normal_impulse: Vec4,
    tangent_impulse: [Vec4; 2],
    max_normal_impulse: Vec4,
}

impl WidePoint {
    const ZERO: WidePoint = WidePoint {
        anchor_a: V3::ZERO,
        anchor_b: V3::ZERO,
        normal: V3::ZERO,
        tangent1: V3::ZERO,
        tangent2: V3::ZERO,
        angular_a: [V3::ZERO; 3],
        angular_b: [V3::ZERO; 3],
        base_separation: Vec4::ZERO,
        normal_mass: Vec4::ZERO,
        tangent_mass: [Vec4::ZERO; 2],
        normal_impulse: Vec4::ZERO,
        tangent_impulse: [Vec4::ZERO; 2],
        max_normal_impulse: Vec4::ZERO,
    };
}

/// Four constraints of one colour, solved side by side. Empty lanes have no bodies
/// (`NONE`), no points and zero masses: they compute zeros and write nothing.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Bundle {
    /// The constraints' indices (`NONE`: empty lane).
    index: [u32; LANES],
    row_a: [u32; LANES],
    row_b: [u32; LANES],
    inv_mass_a: Vec4,
    inv_mass_b: Vec4,
    friction: Vec4,
    round_a: Vec4,
    round_b: Vec4,
    twist_normal: V3,
    twist_axis_a: V3,
    twist_axis_b: V3,
    twist_mass: Vec4,
    twist_impulse: Vec4,
    /// Points in the fullest lane.
    count: usize,
    points: [WidePoint; 4],
}

impl Bundle {
    /// Four empty lanes.
    pub const EMPTY: Bundle = Bundle {
        index: [NONE; LANES],
        row_a: [NONE; LANES],
        row_b: [NONE; LANES],
        inv_mass_a: Vec4::ZERO,
        inv_mass_b: Vec4::ZERO,
        friction: Vec4::ZERO,
        round_a: Vec4::ZERO,
        round_b: Vec4::ZERO,
        twist_normal: V3::ZERO,
        twist_axis_a: V3::ZERO,
        twist_axis_b: V3::ZERO,
        twist_mass: Vec4::ZERO,
        twist_impulse: Vec4::ZERO,
        count: 0,
        points: [WidePoint::ZERO; 4],
    };

    /// Whether a constraint can ride in a bundle: not with rolling resistance, nor
    /// without points (the scalar solver skips its twist friction).
    pub fn accepts(c: &Constraint) -> bool {
        c.rolling_resistance == 0.0 && c.count > 0
    }

    /// Prepares constraint `index` ([`solver::prepare`]) and packs it into `lane`,
    /// which must be empty.
    pub fn prepare_lane(&mut self, lane: usize, index: u32, c: &mut Constraint, frame: &Frame) {
        debug_assert!(self.index[lane] == NONE, "lane {lane} is taken");
        let points = &mut self.points;
        // Past a lane's count its points stay zero.
        solver::prepare(c, frame, |i, p, (angular_a, angular_b)| {
            let w = &mut points[i];
            w.anchor_a.set(lane, p.anchor_a);
            w.anchor_b.set(lane, p.anchor_b);
            w.normal.set(lane, p.normal);
            w.tangent1.set(lane, p.tangent1);
            w.tangent2.set(lane, p.tangent2);
            for d in 0..3 {
                w.angular_a[d].set(lane, angular_a[d]);
                w.angular_b[d].set(lane, angular_b[d]);
            }
            w.base_separation[lane] = p.base_separation;
            w.normal_mass[lane] = p.normal_mass;
            w.tangent_mass[0][lane] = p.tangent_mass[0];
            w.tangent_mass[1][lane] = p.tangent_mass[1];
            w.normal_impulse[lane] = p.normal_impulse;
            w.tangent_impulse[0][lane] = p.tangent_impulse[0];
            w.tangent_impulse[1][lane] = p.tangent_impulse[1];
            w.max_normal_impulse[lane] = p.max_normal_impulse;
        });
        self.index[lane] = index;
        (self.row_a[lane], self.row_b[lane]) = (c.row_a, c.row_b);
        (self.inv_mass_a[lane], self.inv_mass_b[lane]) = (c.inv_mass_a, c.inv_mass_b);
        self.friction[lane] = c.friction;
        (self.round_a[lane], self.round_b[lane]) = (c.round_a, c.round_b);
        if c.count > 0 {
            self.twist_normal.set(lane, c.points[0].normal);
        }
        self.twist_axis_a.set(lane, c.twist_axis_a);
        self.twist_axis_b.set(lane, c.twist_axis_b);
        self.twist_mass[lane] = c.twist_mass;
        self.twist_impulse[lane] = c.twist_impulse;
        self.count = self.count.max(c.count as usize);
    }

    /// The constraints' indices, lane by lane (empty lanes come last).
    pub fn indices(&self) -> &[u32] {
        let lanes = self.index.iter().position(|&i| i == NONE).unwrap_or(LANES);
        &self.index[..lanes]
    }

    /// Copies the accumulated impulses back into the constraints.
    ///
    /// # Safety
    /// No other thread touches this bundle's constraints meanwhile.
    pub unsafe fn unpack(&self, constraints: &Column<Constraint>) {
        for (lane, &index) in self.index.iter().enumerate() {
            if index == NONE {
                continue;
            }
            // SAFETY: forwarded from the caller.
            let c = unsafe { constraints.get(index as usize) };
            c.twist_impulse = self.twist_impulse[lane];
            for (p, w) in c.points[..c.count as usize].iter_mut().zip(&self.points) {
                p.normal_impulse = w.normal_impulse[lane];
                p.tangent_impulse = [w.tangent_impulse[0][lane], w.tangent_impulse[1][lane]];
                p.max_normal_impulse = w.max_normal_impulse[lane];
            }
        }
    }

    /// The bodies' states, lane by lane.
    ///
    /// # Safety
    /// No other thread writes the bundle's rows meanwhile.
    unsafe fn read(&self, states: &Column<BodyState>) -> ([BodyState; LANES], [BodyState; LANES]) {
        // SAFETY: forwarded from the caller.
        unsafe {
            (
                std::array::from_fn(|i| solver::read(states, self.row_a[i])),
                std::array::from_fn(|i| solver::read(states, self.row_b[i])),
            )
        }
    }

    /// Writes the dynamic bodies' velocities back, lane by lane.
    ///
    /// # Safety
    /// The caller is the only thread touching the bundle's dynamic rows.
    unsafe fn write(&self, states: &Column<BodyState>, [va, wa, vb, wb]: [V3; 4]) {
        let (va, wa, vb, wb) = (va.lanes(), wa.lanes(), vb.lanes(), wb.lanes());
        for i in 0..LANES {
            // SAFETY: forwarded from the caller.
            unsafe {
                solver::write(states, self.row_a[i], self.inv_mass_a[i] > 0.0, va[i], wa[i]);
                solver::write(states, self.row_b[i], self.inv_mass_b[i] > 0.0, vb[i], wb[i]);
            }
        }
    }
}

/// Velocities of four bodies.
fn velocities(s: &[BodyState; LANES]) -> (V3, V3) {
    (V3::gather(s.map(|s| s.v)), V3::gather(s.map(|s| s.w)))
}

/// As the scalar `relative`: `vb + wb x rb - va - wa x ra`.
fn relative(va: V3, wa: V3, vb: V3, wb: V3, ra: V3, rb: V3) -> V3 {
    vb + wb.cross(rb) - va - wa.cross(ra)
}

/// [`solver::warm_start`] on four constraints.
///
/// # Safety
/// The bundle's dynamic bodies are touched by no other thread meanwhile.
pub(crate) unsafe fn warm_start(b: &Bundle, states: &Column<BodyState>) {
    // SAFETY: forwarded from the caller.
    let (sa, sb) = unsafe { b.read(states) };
    let ((mut va, mut wa), (mut vb, mut wb)) = (velocities(&sa), velocities(&sb));
    wa -= b.twist_axis_a * b.twist_impulse;
    wb += b.twist_axis_b * b.twist_impulse;
    for p in &b.points[..b.count] {
        let [n, t1, t2] = [p.normal_impulse, p.tangent_impulse[0], p.tangent_impulse[1]];
        let impulse = p.normal * n + p.tangent1 * t1 + p.tangent2 * t2;
        va -= impulse * b.inv_mass_a;
        wa -= p.angular_a[0] * n + p.angular_a[1] * t1 + p.angular_a[2] * t2;
        vb += impulse * b.inv_mass_b;
        wb += p.angular_b[0] * n + p.angular_b[1] * t1 + p.angular_b[2] * t2;
    }
    // SAFETY: forwarded from the caller.
    unsafe { b.write(states, [va, wa, vb, wb]) };
}

/// [`solver::solve`] on four constraints.
///
/// # Safety
/// The bundle's dynamic bodies are touched by no other thread meanwhile.
pub(crate) unsafe fn solve(b: &mut Bundle, states: &Column<BodyState>, ctx: &StepContext, use_bias: bool) {
    // SAFETY: forwarded from the caller.
    let (sa, sb) = unsafe { b.read(states) };
    let ((mut va, mut wa), (mut vb, mut wb)) = (velocities(&sa), velocities(&sb));
    let (ma, mb) = (b.inv_mass_a, b.inv_mass_b);
    let zero = Vec4::ZERO;
    let against_static: BVec4A = ma.cmpeq(zero) | mb.cmpeq(zero);
    let pick = |s: f32, d: f32| Vec4::select(against_static, Vec4::splat(s), Vec4::splat(d));
    let rate = pick(ctx.static_soft.bias_rate, ctx.soft.bias_rate);
    let soft_mass = pick(ctx.static_soft.mass_scale, ctx.soft.mass_scale);
    let soft_impulse = pick(ctx.static_soft.impulse_scale, ctx.soft.impulse_scale);
    let (inv_h, push_out) = (Vec4::splat(ctx.inv_h), Vec4::splat(-ctx.push_out));
    let moved = V3::gather(sb.map(|s| s.dp)) - V3::gather(sa.map(|s| s.dp));
    let (turn_a, turn_b) = (Turn::from_quats(sa.map(|s| s.dq)), Turn::from_quats(sb.map(|s| s.dq)));
    for p in &mut b.points[..b.count] {
        let (ra, rb) = (p.anchor_a, p.anchor_b);
        let (ta, tb) = (ra - p.normal * b.round_a, rb + p.normal * b.round_b);
        let d = moved + (turn_b.apply(tb) - turn_a.apply(ta));
        let s = d.dot(p.normal) + p.base_separation;
        let speculative = s.cmpgt(zero);
        let (bias, mass_scale, impulse_scale) = if use_bias {
            (
                Vec4::select(speculative, s * inv_h, (rate * s).max(push_out)),
                Vec4::select(speculative, Vec4::ONE, soft_mass),
                Vec4::select(speculative, zero, soft_impulse),
            )
        } else {
            (Vec4::select(speculative, s * inv_h, zero), Vec4::ONE, zero)
        };
        let vn = relative(va, wa, vb, wb, ra, rb).dot(p.normal);
        let impulse = -p.normal_mass * mass_scale * (vn + bias) - impulse_scale * p.normal_impulse;
        // max with 0 second: a NaN becomes 0, as the scalar `max` makes it.
        let total = (p.normal_impulse + impulse).max(zero).min(Vec4::splat(f32::MAX));
        let impulse = total - p.normal_impulse;
        p.normal_impulse = total;
        p.max_normal_impulse = impulse.max(p.max_normal_impulse);
        let j = p.normal * impulse;
        va -= j * ma;
        wa -= p.angular_a[0] * impulse;
        vb += j * mb;
        wb += p.angular_b[0] * impulse;
    }
    for p in &mut b.points[..b.count] {
        let dv = relative(va, wa, vb, wb, p.anchor_a, p.anchor_b);
        let old = p.tangent_impulse;
        let t = [old[0] - p.tangent_mass[0] * dv.dot(p.tangent1), old[1] - p.tangent_mass[1] * dv.dot(p.tangent2)];
        let limit = b.friction * p.normal_impulse;
        let length_sq = t[0] * t[0] + t[1] * t[1];
        let over = length_sq.cmpgt(limit * limit);
        let scale = limit / length_sq.sqrt();
        let t = [Vec4::select(over, t[0] * scale, t[0]), Vec4::select(over, t[1] * scale, t[1])];
        p.tangent_impulse = t;
        let (d1, d2) = (t[0] - old[0], t[1] - old[1]);
        let j = p.tangent1 * d1 + p.tangent2 * d2;
        va -= j * ma;
        wa -= p.angular_a[1] * d1 + p.angular_a[2] * d2;
        vb += j * mb;
        wb += p.angular_b[1] * d1 + p.angular_b[2] * d2;
    }
    let normal = b.points[..b.count].iter().fold(Vec4::splat(-0.0), |sum, p| sum + p.normal_impulse);
    let limit = b.friction * Vec4::splat(TWIST_RADIUS) * normal;
    // The scalar clamp leaves a value alone when the limit is NaN (0 x inf).
    let limit = Vec4::select(limit.is_nan_mask(), Vec4::INFINITY, limit);
    let old = b.twist_impulse;
    let total = (old - b.twist_mass * b.twist_normal.dot(wb - wa)).max(-limit).min(limit);
    b.twist_impulse = total;
    wa -= b.twist_axis_a * (total - old);
    wb += b.twist_axis_b * (total - old);
    // SAFETY: forwarded from the caller.
    unsafe { b.write(states, [va, wa, vb, wb]) };
}

#[cfg(test)]
mod tests {
    use glam::Mat3;

    use super::*;
    use crate::collide::tests::lcg;
    use crate::physics::solver::{prepare, warm_start, Frame, Softness};

    fn vec(seed: &mut u64, scale: f32) -> Vec3 {
        Vec3::new(lcg(seed), lcg(seed), lcg(seed)) * scale
    }

    /// A symmetric positive (semi-)definite inverse inertia, or zero.
    fn inertia(seed: &mut u64) -> Mat3 {
        let q = Quat::from_scaled_axis(vec(seed, 3.0));
        let r = Mat3::from_quat(q);
        let d = Mat3::from_diagonal(vec(seed, 1.0).abs() + Vec3::splat(0.05));
        r * d * r.transpose()
    }

    /// A random constraint between rows `a` and `b` (either may be `NONE`), with 1 to
    /// 4 points, some speculative, some with warm-start impulses, and its frame.
    fn constraint(seed: &mut u64, a: u32, b: u32, states: &[BodyState]) -> (Constraint, Frame) {
        let mut c = Constraint::new(0, 0, a, b, lcg(seed).abs(), 0.0);
        (c.row_a, c.row_b) = (a, b);
        if a != NONE {
            (c.inv_mass_a, c.inv_inertia_a) = (lcg(seed).abs() + 0.1, inertia(seed));
        }
        if b != NONE {
            (c.inv_mass_b, c.inv_inertia_b) = (lcg(seed).abs() + 0.1, inertia(seed));
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
        let frame = Frame { center_a: vec(seed, 2.0), center_b: vec(seed, 2.0), state_a: state(a), state_b: state(b) };
        for p in &mut c.points[..count] {
            p.normal_impulse = lcg(seed).abs() * 2.0;
            p.tangent_impulse = [lcg(seed), lcg(seed)];
        }
        c.twist_impulse = lcg(seed) * 0.01;
        (c, frame)
    }

    /// Every output float of the bundle equals the scalar solver's, lane by lane, over
    /// warm starts, solves with and without bias, full and partly empty bundles,
    /// static sides and bodies that turned since the step's start.
    #[test]
    fn bundles_compute_what_the_scalar_solver_computes() {
        let mut seed = 11u64;
        let soft = Softness::new(30.0, 10.0, 1.0 / 240.0);
        let ctx = StepContext {
            inv_h: 240.0,
            soft,
            static_soft: Softness::new(60.0, 10.0, 1.0 / 240.0),
            push_out: 3.0,
            restitution_threshold: 1.0,
        };
        for round in 0..200 {
            let seed = &mut seed;
            let lanes = 1 + round % LANES;
            // Rows 0..8: each constraint gets its own two (colours share no body);
            // a side is static (NONE) now and then.
            let mut states: Vec<BodyState> = (0..2 * LANES)
                .map(|_| BodyState {
                    v: vec(seed, 3.0),
                    w: vec(seed, 3.0),
                    dp: vec(seed, 0.05),
                    dq: Quat::from_scaled_axis(vec(seed, 0.2)),
                })
                .collect();
            // The scalar prepare and the bundle's prepare-and-pack prepare alike.
            let mut bundle = Bundle::EMPTY;
            let mut constraints = Vec::new();
            for lane in 0..lanes {
                let a = if lcg(seed) > 0.7 { NONE } else { 2 * lane as u32 };
                let (mut c, frame) = constraint(seed, a, 2 * lane as u32 + 1, &states);
                let mut scalar = c;
                prepare(&mut scalar, &frame, |_, _, _| {});
                bundle.prepare_lane(lane, lane as u32, &mut c, &frame);
                assert!(c == scalar, "round {round}, lane {lane}: {c:?} != {scalar:?}");
                constraints.push(scalar);
            }
            let mut wide_states = states.clone();
            for pass in 0..4 {
                let (scalar_col, wide_col) = (Column::new(&mut states), Column::new(&mut wide_states));
                // SAFETY: one thread; every row in bounds.
                unsafe {
                    for c in &mut constraints {
                        match pass {
                            0 => warm_start(c, &scalar_col),
                            _ => solver::solve(c, &scalar_col, &ctx, pass != 2),
                        }
                    }
                    match pass {
                        0 => super::warm_start(&bundle, &wide_col),
                        _ => super::solve(&mut bundle, &wide_col, &ctx, pass != 2),
                    }
                }
                for (i, (s, w)) in states.iter().zip(&wide_states).enumerate() {
                    assert!(s.v == w.v && s.w == w.w, "round {round}, pass {pass}, row {i}: {s:?} != {w:?}");
                }
            }
            let mut unpacked = constraints.clone();
            for c in &mut unpacked {
                c.twist_impulse = f32::NAN;
                for p in &mut c.points {
                    (p.normal_impulse, p.tangent_impulse, p.max_normal_impulse) = (f32::NAN, [f32::NAN; 2], f32::NAN);
                }
            }
            // SAFETY: one thread.
            unsafe { bundle.unpack(&Column::new(&mut unpacked)) };
            for (c, u) in constraints.iter().zip(&unpacked) {
                assert!(c.twist_impulse == u.twist_impulse, "round {round}: twist");
                for (p, q) in c.points().iter().zip(u.points()) {
                    assert!(p.normal_impulse == q.normal_impulse, "round {round}: {p:?} != {q:?}");
                    assert!(p.tangent_impulse == q.tangent_impulse, "round {round}: {p:?} != {q:?}");
                    assert!(p.max_normal_impulse == q.max_normal_impulse, "round {round}: {p:?} != {q:?}");
                }
            }
        }
    }

    /// Rolling resistance and empty manifolds keep to the scalar path.
    #[test]
    fn bundles_take_what_they_can_solve() {
        let mut c = Constraint::new(0, 0, 0, 1, 0.5, 0.0);
        assert!(!Bundle::accepts(&c), "no points");
        c.push(Vec3::ZERO, Vec3::Y, 0.0, 0);
        assert!(Bundle::accepts(&c));
        c.rolling_resistance = 0.1;
        assert!(!Bundle::accepts(&c), "rolling resistance");
    }
}
