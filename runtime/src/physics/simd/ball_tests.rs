//! The ball joints' lanes against the scalar joint solver, bit for bit.

use glam::Quat;

use super::*;
use crate::physics::contact_solver::Softness;
use crate::physics::joint::{Impulses, JointType, SphericalJoint};
use crate::physics::joint_solver::{solve_joint, Sym};

struct Rng(u64);

impl Rng {
    /// Uniform in `[-1, 1)`.
    fn next(&mut self) -> f32 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        ((self.0 >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
    }

    fn vec(&mut self, scale: f32) -> Vec3 {
        Vec3::new(self.next(), self.next(), self.next()) * scale
    }
}

/// A symmetric positive inverse inertia, turned.
fn inertia(rng: &mut Rng) -> Mat3 {
    let r = Mat3::from_quat(Quat::from_scaled_axis(rng.vec(3.0)));
    r * Mat3::from_diagonal(rng.vec(1.0).abs() + Vec3::splat(0.1)) * r.transpose()
}

/// `count` ball joints on bodies `2k` and `2k + 1` of `2 count` states: every fifth
/// joint's A is static (`NONE`, no mass), every seventh's B kinematic (a row, no
/// mass), joint 11's bodies part at 6e38 m/s and its stored impulse overflows B's
/// velocity (the joint lets go),
/// joint 13's anchors coincide with its centres and both are massless (a singular
/// `K`).
fn scene(count: usize) -> (Vec<JointSolve>, Vec<BodyState>) {
    let mut rng = Rng(0x51ed_2701);
    let mut states = Vec::new();
    for _ in 0..2 * count {
        let dq = Quat::from_scaled_axis(rng.vec(0.2));
        states.push(BodyState { v: rng.vec(4.0), w: rng.vec(6.0), dp: rng.vec(0.05), spare: [0.0; 3], dq });
    }
    states[2 * 11].v = Vec3::new(-3e38, 3e38, -3e38);
    states[2 * 11 + 1].v = Vec3::new(3e38, -3e38, 3e38);
    let mut joints = Vec::new();
    for k in 0..count {
        let (mut ma, mut mb) = (rng.next().abs() + 0.05, rng.next().abs() + 0.05);
        let (ia, ib) = (inertia(&mut rng), inertia(&mut rng));
        let mut row_a = (2 * k) as u32;
        if k % 5 == 0 {
            (row_a, ma) = (NONE, 0.0);
        }
        if k % 7 == 0 {
            mb = 0.0;
        }
        let (mut anchor_a, mut anchor_b) = (rng.vec(0.6), rng.vec(0.6));
        if k == 13 {
            (anchor_a, anchor_b, ma, mb) = (Vec3::ZERO, Vec3::ZERO, 0.0, 0.0);
        }
        let (ia, ib) = (if ma > 0.0 { ia } else { Mat3::ZERO }, if mb > 0.0 { ib } else { Mat3::ZERO });
        let mut impulses = Impulses { linear: rng.vec(0.5), ..Impulses::default() };
        if k == 11 {
            (impulses.linear, mb) = (Vec3::splat(3e38), 4.0);
        }
        joints.push(JointSolve {
            slot: k as u32,
            row_a,
            row_b: (2 * k + 1) as u32,
            inv_mass_a: ma,
            inv_mass_b: mb,
            inv_inertia_a: Sym::of(ia),
            inv_inertia_b: Sym::of(ib),
            frame_a: Quat::IDENTITY,
            frame_b: Quat::IDENTITY,
            anchor_a,
            anchor_b,
            delta_center: anchor_a - anchor_b + rng.vec(0.1),
            kind: JointType::Spherical(SphericalJoint::default()),
            spring: Softness::new(0.0, 0.0, 1.0),
            angular_spring: Softness::new(0.0, 0.0, 1.0),
            open: crate::physics::joint_solver::OpenLimits::UNSET,
            point_mass: Mat3::ZERO,
            ball: true,
            impulses,
        });
    }
    assert!(joints.iter().all(|j| j.ball && JointSolve::ball_kind(&j.kind)));
    (joints, states)
}

fn context(joint_bias_in_relax: bool) -> StepContext {
    let h = 1.0 / 240.0;
    StepContext {
        inv_h: 1.0 / h,
        soft: Softness::new(30.0, 10.0, h),
        static_soft: Softness::new(60.0, 10.0, h),
        push_out: 3.0,
        restitution_threshold: 1.0,
        joint_soft: Softness::new(60.0, 2.0, h),
        joint_bias_in_relax,
    }
}

/// The bits a pass leaves: every state's velocities, every joint's impulses and mass.
fn bits(joints: &[JointSolve], states: &[BodyState]) -> Vec<u32> {
    let mut out = Vec::new();
    for s in states {
        out.extend(s.v.to_array().iter().chain(&s.w.to_array()).map(|x| x.to_bits()));
    }
    for j in joints {
        out.extend(j.impulses.linear.to_array().iter().map(|x| x.to_bits()));
        out.push(j.impulses.angular.x.to_bits());
    }
    out
}

/// Warm start, solve and relax twice over, one joint at a time and in groups of `L::N`
/// (the last one short), with and without the bias in the relax pass.
fn lanes_match_one_by_one<L: BallWidth>() {
    let modes = [Mode::WarmStart, Mode::Solve { use_bias: true }, Mode::Solve { use_bias: false }];
    for bias_in_relax in [false, true] {
        let ctx = context(bias_in_relax);
        // One group short of full, so both a full and a partial group run.
        let count = 2 * L::N - 3;
        let (mut one_joints, mut one_states) = scene(count.max(14));
        let (mut lane_joints, mut lane_states) = (one_joints.clone(), one_states.clone());
        let mut let_go = false;
        for round in 0..2 {
            for mode in modes {
                {
                    let states = Column::new(&mut one_states);
                    for j in &mut one_joints {
                        // SAFETY: one thread.
                        unsafe { solve_joint(j, &states, &ctx, mode) };
                    }
                }
                let_go |= one_joints[11].impulses.linear == Vec3::ZERO;
                let indices: Vec<u32> = (0..lane_joints.len() as u32).collect();
                let (joints, states) = (Column::new(&mut lane_joints), Column::new(&mut lane_states));
                for group in indices.chunks(L::N) {
                    // SAFETY: one thread; the joints share no body.
                    unsafe { L::solve_balls(&joints, group, &states, &ctx, mode) };
                }
                assert_eq!(
                    bits(&one_joints, &one_states),
                    bits(&lane_joints, &lane_states),
                    "{} lanes, round {round}, {mode:?}, bias in relax {bias_in_relax}",
                    L::N
                );
            }
        }
        // The overflowing joint let go once, and its bodies were saturated after.
        assert!(let_go, "joint 11 never let go");
        assert!(one_states[2 * 11 + 1].v.length() <= crate::physics::MAX_LINEAR_SPEED * 1.0001);
        assert!(one_joints.iter().all(|j| j.impulses.linear.is_finite()));
    }
}

#[test]
fn four_lanes_solve_ball_joints_as_one_by_one() {
    lanes_match_one_by_one::<Vec4>();
}

#[cfg(target_arch = "x86_64")]
#[test]
fn eight_and_sixteen_lanes_solve_ball_joints_as_one_by_one() {
    if crate::physics::simd::lanes::eight_available() {
        lanes_match_one_by_one::<F8>();
    }
    if crate::physics::simd::lanes::sixteen_available() {
        lanes_match_one_by_one::<F16>();
    }
}

/// The point part's rotation turns as glam's quaternions do.
#[test]
fn the_generic_rotation_is_glams() {
    let rotate_vec = |q: Quat, v: Vec3| Vec3::from(rotate(V { x: q.x, y: q.y, z: q.z }, q.w, v.into()));
    let mut rng = Rng(7);
    for _ in 0..1000 {
        let (q, v) = (Quat::from_scaled_axis(rng.vec(3.0)), rng.vec(5.0));
        let (ours, glams) = (rotate_vec(q, v), q * v);
        assert!((ours - glams).length() < 1e-5 * (1.0 + v.length()), "{ours} against {glams}");
    }
}
