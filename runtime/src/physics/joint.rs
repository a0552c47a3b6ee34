//! Joints: what ties two bodies together, behind generation-checked handles (Box2D
//! v3's `joint.c`; the kinds and their settings as Box3D and Jolt name them).
//!
//! A joint holds two bodies at frames of their own (`frame_a`, `frame_b`: an anchor
//! and axes in each body's frame). Its kind says what it keeps of the frames'
//! relative pose; the z axis of frame A is the hinge, slide, twist and cone axis:
//!
//! | kind | keeps | settings |
//! | --- | --- | --- |
//! | spherical | the anchors together | swing cone and twist limits, spring toward aligned frames, motor (friction) |
//! | revolute | the anchors together, the z axes together | angle limits, motor, spring |
//! | prismatic | B's anchor on A's z axis, the rotations together | translation limits, motor, spring |
//! | fixed | the whole pose | rigid, or soft with a frequency and damping |
//! | distance | the anchors' distance | fixed length, or a spring; min and max lengths (a rope) |
//! | six-DOF | per axis of frame A, translation and rotation free, locked or limited | a motor per axis |
//!
//! Each step lists the joints with an awake body, colours them with the contacts
//! (they share the graph's colours, so the same bits come out for any worker count),
//! gathers them into [`JointSolve`]s laid out in the colours' order, and solves them
//! in the substeps (`joint_solver.rs`). Their impulses persist from step to step. A joint past its
//! break force or torque is removed after the solve and reported in the step's
//! joint events; destroying a body destroys its joints and reports them. Jointed
//! bodies sleep and wake together: a joint between two dynamic bodies merges their
//! islands when it is made, and its removal counts on the island (`island.rs`).

use glam::{Mat3, Quat, Vec3};

use super::body::{Bodies, BodyError, BodyId, MotionType, SetKind};
use super::contact_solver::{Softness, NONE};
use super::island::Islands;
use super::joint_solver::{self, JointSolve, OpenLimits, Sym};
use super::world::World;
use crate::codec::{fields, Codec, Corrupt, Reader, TakeNew, Writer};
use crate::math::Isometry;

/// Damping ratio of the joints' rigid parts while they push (Box2D v3's default).
pub(crate) const JOINT_DAMPING_RATIO: f32 = 2.0;

/// The joints' rigid parts push as springs of this fraction of the substep rate: a
/// quarter, the stiffest the soft step holds steady (60 Hz at 4 substeps of 60 Hz
/// steps, as Box2D v3's twice the contacts' 30 Hz). A soft constraint is a spring
/// whose stiffness scales with the mass it moves, so a load far heavier than the
/// links it hangs from stretches them: a hanging chain stretches about 4% at 4
/// substeps, 1% at 8 and 0.4% at 12 (see `docs/physics.md`).
pub(crate) const JOINT_HERTZ_PER_SUBSTEP_RATE: f32 = 0.25;

/// Handle to a joint: slot index and generation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct JointId {
    pub index: u32,
    pub generation: u32,
}

/// A ball and socket with optional swing cone and twist limits (the ragdoll joint).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SphericalJoint {
    pub enable_cone_limit: bool,
    /// Largest angle between the frames' z axes (rad, 0..=π).
    pub cone_angle: f32,
    pub enable_twist_limit: bool,
    /// Twist of frame B about frame A's z axis (rad, -π..=π, lower <= upper).
    pub lower_twist: f32,
    pub upper_twist: f32,
    /// A spring pulling the frames' rotations together.
    pub enable_spring: bool,
    pub hertz: f32,
    pub damping_ratio: f32,
    /// A motor driving B's spin relative to A (rad/s, in frame A's axes) with at most
    /// `max_motor_torque`; at zero speed it is joint friction.
    pub enable_motor: bool,
    pub motor_velocity: Vec3,
    pub max_motor_torque: f32,
}

/// A hinge about frame A's z axis.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RevoluteJoint {
    pub enable_limit: bool,
    /// Angle of B about the axis (rad, -π..=π, lower <= upper).
    pub lower: f32,
    pub upper: f32,
    pub enable_motor: bool,
    /// Target spin of B relative to A (rad/s).
    pub motor_speed: f32,
    pub max_motor_torque: f32,
    pub enable_spring: bool,
    pub hertz: f32,
    pub damping_ratio: f32,
    /// The angle the spring pulls toward (rad).
    pub target_angle: f32,
}

/// A slider along frame A's z axis; the rotations stay together.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PrismaticJoint {
    pub enable_limit: bool,
    /// Translation of B's anchor along the axis (m, lower <= upper).
    pub lower: f32,
    pub upper: f32,
    pub enable_motor: bool,
    /// Target speed along the axis (m/s).
    pub motor_speed: f32,
    pub max_motor_force: f32,
    pub enable_spring: bool,
    pub hertz: f32,
    pub damping_ratio: f32,
    /// The translation the spring pulls toward (m).
    pub target_translation: f32,
}

/// A weld: rigid when a frequency is zero, else soft with it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FixedJoint {
    pub linear_hertz: f32,
    pub angular_hertz: f32,
    pub linear_damping_ratio: f32,
    pub angular_damping_ratio: f32,
}

/// The anchors' distance: rigid at `length`, or a spring toward it; with the limit,
/// never shorter than `min_length` nor longer than `max_length` (a rope: a spring
/// of zero frequency with a limit).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DistanceJoint {
    pub length: f32,
    pub enable_spring: bool,
    pub hertz: f32,
    pub damping_ratio: f32,
    pub enable_limit: bool,
    pub min_length: f32,
    pub max_length: f32,
}

/// What a six-DOF joint allows along or about one axis of frame A.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Dof {
    Free,
    Locked,
    /// Between `lower` and `upper` (m along an axis, rad about one).
    Limited {
        lower: f32,
        upper: f32,
    },
}

/// The generic joint (Jolt's `SixDOFConstraint`, rapier's `GenericJoint`): along and
/// about each axis of frame A, free, locked or limited, with a motor each. The
/// rotation about axis `k` is `2 atan2(q_k, q_w)` of frame B's rotation `q` in frame
/// A: exact for a turn about one axis, an approximation when turned about several.
/// The other kinds are six-DOF joints with their parts solved together; all locked
/// is a weld.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SixDofJoint {
    /// Translation of B's anchor along frame A's x, y and z.
    pub linear: [Dof; 3],
    /// Rotation of frame B about frame A's x, y and z.
    pub angular: [Dof; 3],
    /// Motor target speeds along x, y, z, then about x, y, z (m/s, rad/s).
    pub motor_speed: [f32; 6],
    /// The motors' largest forces (N) and torques (N m), in the same order; 0: no
    /// motor on that axis.
    pub max_motor_force: [f32; 6],
}

impl Default for SixDofJoint {
    fn default() -> Self {
        SixDofJoint {
            linear: [Dof::Locked; 3],
            angular: [Dof::Locked; 3],
            motor_speed: [0.0; 6],
            max_motor_force: [0.0; 6],
        }
    }
}

/// What a joint keeps, with its kind's settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum JointType {
    Spherical(SphericalJoint),
    Revolute(RevoluteJoint),
    Prismatic(PrismaticJoint),
    Fixed(FixedJoint),
    Distance(DistanceJoint),
    SixDof(SixDofJoint),
}

impl Default for SphericalJoint {
    fn default() -> Self {
        SphericalJoint {
            enable_cone_limit: false,
            cone_angle: 0.5 * std::f32::consts::PI,
            enable_twist_limit: false,
            lower_twist: -0.25 * std::f32::consts::PI,
            upper_twist: 0.25 * std::f32::consts::PI,
            enable_spring: false,
            hertz: 0.0,
            damping_ratio: 0.0,
            enable_motor: false,
            motor_velocity: Vec3::ZERO,
            max_motor_torque: 0.0,
        }
    }
}

impl Default for RevoluteJoint {
    fn default() -> Self {
        RevoluteJoint {
            enable_limit: false,
            lower: 0.0,
            upper: 0.0,
            enable_motor: false,
            motor_speed: 0.0,
            max_motor_torque: 0.0,
            enable_spring: false,
            hertz: 0.0,
            damping_ratio: 0.0,
            target_angle: 0.0,
        }
    }
}

impl Default for PrismaticJoint {
    fn default() -> Self {
        PrismaticJoint {
            enable_limit: false,
            lower: 0.0,
            upper: 0.0,
            enable_motor: false,
            motor_speed: 0.0,
            max_motor_force: 0.0,
            enable_spring: false,
            hertz: 0.0,
            damping_ratio: 0.0,
            target_translation: 0.0,
        }
    }
}

impl Default for FixedJoint {
    fn default() -> Self {
        FixedJoint { linear_hertz: 0.0, angular_hertz: 0.0, linear_damping_ratio: 0.0, angular_damping_ratio: 0.0 }
    }
}

impl Default for DistanceJoint {
    fn default() -> Self {
        DistanceJoint {
            length: 1.0,
            enable_spring: false,
            hertz: 0.0,
            damping_ratio: 0.0,
            enable_limit: false,
            min_length: 0.0,
            max_length: 1.0e6,
        }
    }
}

/// How a joint is created.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct JointDef {
    pub body_a: BodyId,
    pub body_b: BodyId,
    /// The joint's frame in body A's frame and in body B's.
    pub frame_a: Isometry,
    pub frame_b: Isometry,
    /// Whether the two bodies' shapes still collide with each other.
    pub collide_connected: bool,
    /// The joint breaks when its force (N) or torque (N m) passes these (infinite:
    /// never).
    pub break_force: f32,
    pub break_torque: f32,
    pub kind: JointType,
}

impl JointDef {
    /// A joint of `kind` between `a` and `b` at their frames' origins.
    pub fn new(body_a: BodyId, body_b: BodyId, kind: JointType) -> JointDef {
        JointDef {
            body_a,
            body_b,
            frame_a: Isometry::IDENTITY,
            frame_b: Isometry::IDENTITY,
            collide_connected: false,
            break_force: f32::INFINITY,
            break_torque: f32::INFINITY,
            kind,
        }
    }

    /// Every number finite (break thresholds may be infinite), frames within
    /// [`MAX_EXTENT`](crate::shapes::MAX_EXTENT) of their bodies with unit
    /// rotations, limits ordered, frequencies, damping, forces and lengths
    /// non-negative.
    pub fn is_valid(&self) -> bool {
        let frame = |f: &Isometry| {
            f.translation.is_finite()
                && f.translation.abs().max_element() <= crate::shapes::MAX_EXTENT
                && f.rotation.is_finite()
                && f.rotation.is_normalized()
        };
        let nonneg = |x: f32| x.is_finite() && x >= 0.0;
        let angle = |x: f32| x.is_finite() && x.abs() <= std::f32::consts::PI + 1e-4;
        let kind = match self.kind {
            JointType::Spherical(s) => {
                nonneg(s.cone_angle)
                    && s.cone_angle <= std::f32::consts::PI + 1e-4
                    && angle(s.lower_twist)
                    && angle(s.upper_twist)
                    && s.lower_twist <= s.upper_twist
                    && nonneg(s.hertz)
                    && nonneg(s.damping_ratio)
                    && s.motor_velocity.is_finite()
                    && nonneg(s.max_motor_torque)
            }
            JointType::Revolute(r) => {
                angle(r.lower)
                    && angle(r.upper)
                    && r.lower <= r.upper
                    && r.motor_speed.is_finite()
                    && nonneg(r.max_motor_torque)
                    && nonneg(r.hertz)
                    && nonneg(r.damping_ratio)
                    && angle(r.target_angle)
            }
            JointType::Prismatic(p) => {
                p.lower.is_finite()
                    && p.upper.is_finite()
                    && p.lower <= p.upper
                    && p.motor_speed.is_finite()
                    && nonneg(p.max_motor_force)
                    && nonneg(p.hertz)
                    && nonneg(p.damping_ratio)
                    && p.target_translation.is_finite()
            }
            JointType::Fixed(f) => [f.linear_hertz, f.angular_hertz, f.linear_damping_ratio, f.angular_damping_ratio]
                .into_iter()
                .all(nonneg),
            JointType::Distance(d) => {
                nonneg(d.length)
                    && nonneg(d.min_length)
                    && nonneg(d.max_length)
                    && d.min_length <= d.max_length
                    && nonneg(d.hertz)
                    && nonneg(d.damping_ratio)
            }
            JointType::SixDof(x) => {
                let dof = |d: &Dof, range: &dyn Fn(f32) -> bool| match *d {
                    Dof::Limited { lower, upper } => range(lower) && range(upper) && lower <= upper,
                    Dof::Free | Dof::Locked => true,
                };
                x.linear.iter().all(|d| dof(d, &|v: f32| v.is_finite()))
                    && x.angular.iter().all(|d| dof(d, &angle))
                    && x.motor_speed.iter().all(|v| v.is_finite())
                    && x.max_motor_force.iter().all(|&f| nonneg(f))
            }
        };
        let threshold = |x: f32| !x.is_nan() && x >= 0.0;
        kind && frame(&self.frame_a)
            && frame(&self.frame_b)
            && threshold(self.break_force)
            && threshold(self.break_torque)
    }
}

/// Why a joint went away.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum JointEventKind {
    /// Its force or torque passed the break threshold in the step.
    #[default]
    Broke,
    /// One of its bodies was destroyed.
    BodyDestroyed,
}

/// A joint removed by a step (broken) or with a body (reported with the next step).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct JointEvent {
    pub joint: JointId,
    pub body_a: BodyId,
    pub body_b: BodyId,
    pub kind: JointEventKind,
}

/// The impulses a joint accumulates, kept from step to step for the warm start.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[repr(C)]
pub(crate) struct Impulses {
    pub linear: Vec3,
    pub angular: Vec3,
    pub perp: [f32; 2],
    pub spring: f32,
    pub motor: f32,
    pub lower: f32,
    pub upper: f32,
    pub swing: f32,
    pub spring3: Vec3,
    pub motor3: Vec3,
    /// A six-DOF joint's upper limits along and about each axis, and its motors.
    pub upper_linear: Vec3,
    pub upper_angular: Vec3,
    pub motors: [f32; 6],
}

#[derive(Clone, Copy, Debug)]
struct Joint {
    def: JointDef,
    impulses: Impulses,
    force: Vec3,
    torque: Vec3,
}

#[derive(Clone, Debug, Default)]
struct Slot {
    generation: u32,
    joint: Option<Joint>,
}

impl Default for Joint {
    fn default() -> Joint {
        let def = JointDef::new(BodyId::default(), BodyId::default(), JointType::Fixed(FixedJoint::default()));
        Joint { def, impulses: Impulses::default(), force: Vec3::ZERO, torque: Vec3::ZERO }
    }
}

fields!(JointId { index, generation });
fields!(SphericalJoint {
    enable_cone_limit,
    cone_angle,
    enable_twist_limit,
    lower_twist,
    upper_twist,
    enable_spring,
    hertz,
    damping_ratio,
    enable_motor,
    motor_velocity,
    max_motor_torque,
});
fields!(RevoluteJoint {
    enable_limit,
    lower,
    upper,
    enable_motor,
    motor_speed,
    max_motor_torque,
    enable_spring,
    hertz,
    damping_ratio,
    target_angle,
});
fields!(PrismaticJoint {
    enable_limit,
    lower,
    upper,
    enable_motor,
    motor_speed,
    max_motor_force,
    enable_spring,
    hertz,
    damping_ratio,
    target_translation,
});
fields!(FixedJoint { linear_hertz, angular_hertz, linear_damping_ratio, angular_damping_ratio });
fields!(DistanceJoint { length, enable_spring, hertz, damping_ratio, enable_limit, min_length, max_length });
fields!(SixDofJoint { linear, angular, motor_speed, max_motor_force });
fields!(JointDef { body_a, body_b, frame_a, frame_b, collide_connected, break_force, break_torque, kind });
fields!(JointEvent { joint, body_a, body_b, kind });
fields!(Impulses {
    linear,
    angular,
    perp,
    spring,
    motor,
    lower,
    upper,
    swing,
    spring3,
    motor3,
    upper_linear,
    upper_angular,
    motors,
});
fields!(Joint { def, impulses, force, torque });
fields!(Slot { generation, joint });
// `refs`, `order` and `solves` are rebuilt by every step; `links` follows the slots.
impl Codec for Joints {
    fn put(&self, w: &mut Writer) {
        self.slots.put(w);
        self.free.put(w);
        self.apart.put(w);
        self.events.put(w);
        self.pending.put(w);
    }

    fn take(&mut self, r: &mut Reader) -> Result<(), Corrupt> {
        self.slots.take(r)?;
        self.free.take(r)?;
        self.apart.take(r)?;
        self.events.take(r)?;
        self.pending.take(r)?;
        self.links.clear();
        self.links.extend(self.slots.iter().map(|s| s.joint.as_ref().map(|j| (j.def.body_a, j.def.body_b))));
        Ok(())
    }
}

impl Codec for Dof {
    fn put(&self, w: &mut Writer) {
        match *self {
            Dof::Free => 0u8.put(w),
            Dof::Locked => 1u8.put(w),
            Dof::Limited { lower, upper } => (2u8, lower, upper).put(w),
        }
    }
    fn take(&mut self, r: &mut Reader) -> Result<(), Corrupt> {
        *self = match r.tag(3)? {
            0 => Dof::Free,
            1 => Dof::Locked,
            _ => Dof::Limited { lower: f32::take_new(r)?, upper: f32::take_new(r)? },
        };
        Ok(())
    }
}

impl Codec for JointType {
    fn put(&self, w: &mut Writer) {
        match self {
            JointType::Spherical(j) => (0u8, *j).put(w),
            JointType::Revolute(j) => (1u8, *j).put(w),
            JointType::Prismatic(j) => (2u8, *j).put(w),
            JointType::Fixed(j) => (3u8, *j).put(w),
            JointType::Distance(j) => (4u8, *j).put(w),
            JointType::SixDof(j) => (5u8, *j).put(w),
        }
    }
    fn take(&mut self, r: &mut Reader) -> Result<(), Corrupt> {
        *self = match r.tag(6)? {
            0 => JointType::Spherical(TakeNew::take_new(r)?),
            1 => JointType::Revolute(TakeNew::take_new(r)?),
            2 => JointType::Prismatic(TakeNew::take_new(r)?),
            3 => JointType::Fixed(TakeNew::take_new(r)?),
            4 => JointType::Distance(TakeNew::take_new(r)?),
            _ => JointType::SixDof(TakeNew::take_new(r)?),
        };
        Ok(())
    }
}

impl Codec for JointEventKind {
    fn put(&self, w: &mut Writer) {
        (*self as u8).put(w);
    }
    fn take(&mut self, r: &mut Reader) -> Result<(), Corrupt> {
        *self = [JointEventKind::Broke, JointEventKind::BodyDestroyed][r.tag(2)? as usize];
        Ok(())
    }
}

/// The world's joints.
#[derive(Clone, Debug, Default)]
pub(crate) struct Joints {
    slots: Vec<Slot>,
    free: Vec<u32>,
    /// Each slot's joint's bodies (`None`: a free slot), beside `slots` so that a
    /// step's list of joints reads 20 bytes a joint instead of its whole slot.
    links: Vec<Option<(BodyId, BodyId)>>,
    /// Body slot pairs whose shapes must not collide (a pair once per joint that asks).
    pub(super) apart: Apart,
    /// This step's joints with an awake body, in slot order (see [`JointRef`]).
    pub(super) refs: Vec<JointRef>,
    /// Which of `refs` each of `solves` is (see [`Joints::fill`]).
    pub(super) order: Vec<u32>,
    /// The rows the solve reads, in the colours' order ([`Joints::fill`]).
    pub(super) solves: Vec<JointSolve>,
    /// Events of the last step, and of bodies destroyed since.
    pub(super) events: Vec<JointEvent>,
    pub(super) pending: Vec<JointEvent>,
}

/// A row for [`Joints::solves`] to grow by before [`Joints::fill`] writes it.
fn unfilled() -> JointSolve {
    JointSolve {
        slot: 0,
        row_a: NONE,
        row_b: NONE,
        inv_mass_a: 0.0,
        inv_mass_b: 0.0,
        inv_inertia_a: Sym::of(Mat3::ZERO),
        inv_inertia_b: Sym::of(Mat3::ZERO),
        frame_a: Quat::IDENTITY,
        frame_b: Quat::IDENTITY,
        anchor_a: Vec3::ZERO,
        anchor_b: Vec3::ZERO,
        delta_center: Vec3::ZERO,
        kind: JointType::Fixed(FixedJoint::default()),
        spring: Softness::new(0.0, 0.0, 1.0),
        angular_spring: Softness::new(0.0, 0.0, 1.0),
        open: OpenLimits::UNSET,
        point_mass: Mat3::ZERO,
        ball: false,
        impulses: Impulses::default(),
    }
}

/// A joint of this step (`World::list_joints`): its slot, and its bodies' sets and
/// rows there.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct JointRef {
    pub slot: u32,
    pub a: (SetKind, u32),
    pub b: (SetKind, u32),
    /// The bodies' awake rows (`NONE` outside the awake set).
    pub row_a: u32,
    pub row_b: u32,
}

fn pair(a: BodyId, b: BodyId) -> (u32, u32) {
    (a.index.min(b.index), a.index.max(b.index))
}

impl Joints {
    /// Number of live joints.
    pub fn len(&self) -> usize {
        self.slots.len() - self.free.len()
    }

    fn get(&self, id: JointId) -> Result<&Joint, BodyError> {
        match self.slots.get(id.index as usize) {
            Some(Slot { generation, joint: Some(j) }) if *generation == id.generation => Ok(j),
            _ => Err(BodyError::InvalidJoint),
        }
    }

    fn get_mut(&mut self, id: JointId) -> Result<&mut Joint, BodyError> {
        match self.slots.get_mut(id.index as usize) {
            Some(Slot { generation, joint: Some(j) }) if *generation == id.generation => Ok(j),
            _ => Err(BodyError::InvalidJoint),
        }
    }

    fn remove(&mut self, index: u32) -> Option<Joint> {
        let slot = &mut self.slots[index as usize];
        let joint = slot.joint.take()?;
        slot.generation = slot.generation.wrapping_add(1);
        self.links[index as usize] = None;
        self.free.push(index);
        if !joint.def.collide_connected {
            self.apart.remove(pair(joint.def.body_a, joint.def.body_b));
        }
        Some(joint)
    }

    /// The rows the solve reads for this step's joints (`World::list_joints`), in
    /// parallel, `solves[n]` for joint `order[n]` of the list, and whether each is a
    /// ball joint to `balls[n]`: in the order the colours take them (see
    /// `Coloring::number_joints`), so that a pass reads a colour's joints one after
    /// another in memory instead of one in every few of a list in slot order (a
    /// ragdoll's joints take several colours).
    pub(super) fn fill(&mut self, bodies: &Bodies, balls: &mut [bool], jobs: crate::jobs::Jobs) {
        let n = self.refs.len();
        debug_assert!(self.order.len() == n && balls.len() == n);
        // Every row is overwritten below: only new ones need a value first.
        if self.solves.len() < n {
            self.solves.resize(n, unfilled());
        }
        self.solves.truncate(n);
        let (refs, order, slots) = (&self.refs, &self.order, &self.slots);
        let solves = crate::jobs::Column::new(&mut self.solves);
        let balls = crate::jobs::Column::new(balls);
        jobs.parallel_for(0..n, 64, |range, _| {
            // SAFETY: `parallel_for` hands each range to exactly one job.
            let (out, balls) = unsafe { (solves.rows(range.clone()), balls.rows(range.clone())) };
            for ((s, ball), n) in out.iter_mut().zip(balls).zip(range) {
                // The slots are read out of their order: ask for one a few ahead.
                if let Some(&k) = order.get(n + 8) {
                    crate::math::prefetch(&slots[refs[k as usize].slot as usize]);
                }
                let r = refs[order[n] as usize];
                let j = slots[r.slot as usize].joint.as_ref().expect("listed joint");
                let ((set_a, row_a), (set_b, row_b)) = ((r.a.0, r.a.1 as usize), (r.b.0, r.b.1 as usize));
                let (sa, sb) = (bodies.set(set_a), bodies.set(set_b));
                // A body outside the awake set does not move this step: no mass.
                let mass = |set: SetKind, row: usize| match set {
                    SetKind::Awake => (bodies.awake.inv_mass[row], bodies.awake.world_inv_inertia[row]),
                    SetKind::Resting => (0.0, Mat3::ZERO),
                };
                let ((ma, ia), (mb, ib)) = (mass(set_a, row_a), mass(set_b, row_b));
                let (qa, qb) = (sa.rotation[row_a], sb.rotation[row_b]);
                let anchor_a = qa * (j.def.frame_a.translation - sa.local_center[row_a]);
                let anchor_b = qb * (j.def.frame_b.translation - sb.local_center[row_b]);
                *ball = JointSolve::ball_kind(&j.def.kind);
                if *ball {
                    // A plain ball and socket is solved from its point part (the row's
                    // first two lines), its impulse and its flag alone (in lanes, or by
                    // `solve_joint`), and the springs' pass skips it: the rest of its
                    // 500-byte row is not written (the grid's 19,701 rows, 5 MB a step).
                    (s.slot, s.row_a, s.row_b, s.ball) = (r.slot, r.row_a, r.row_b, true);
                    (s.inv_mass_a, s.inv_mass_b) = (ma, mb);
                    (s.inv_inertia_a, s.inv_inertia_b) = (Sym::of(ia), Sym::of(ib));
                    (s.anchor_a, s.anchor_b) = (anchor_a, anchor_b);
                    s.delta_center = sb.position[row_b] - sa.position[row_a];
                    s.impulses.linear = j.impulses.linear;
                    continue;
                }
                *s = JointSolve {
                    slot: r.slot,
                    row_a: r.row_a,
                    row_b: r.row_b,
                    inv_mass_a: ma,
                    inv_mass_b: mb,
                    inv_inertia_a: Sym::of(ia),
                    inv_inertia_b: Sym::of(ib),
                    frame_a: qa * j.def.frame_a.rotation,
                    frame_b: qb * j.def.frame_b.rotation,
                    anchor_a,
                    anchor_b,
                    delta_center: sb.position[row_b] - sa.position[row_a],
                    kind: j.def.kind,
                    spring: Softness::new(0.0, 0.0, 1.0),
                    angular_spring: Softness::new(0.0, 0.0, 1.0),
                    open: OpenLimits::UNSET,
                    point_mass: Mat3::ZERO,
                    ball: *ball,
                    impulses: j.impulses,
                };
            }
        });
    }

    /// Every live joint's definition, in slot order.
    pub(super) fn live(&self) -> impl Iterator<Item = &JointDef> + '_ {
        self.slots.iter().filter_map(|s| s.joint.as_ref().map(|j| &j.def))
    }

    /// The live joints' ids touching body slot `slot`, in slot order.
    fn of_body(&self, slot: u32) -> impl Iterator<Item = JointId> + '_ {
        self.slots.iter().enumerate().filter_map(move |(i, s)| {
            let j = s.joint.as_ref()?;
            (j.def.body_a.index == slot || j.def.body_b.index == slot)
                .then_some(JointId { index: i as u32, generation: s.generation })
        })
    }
}

/// Body slot pairs `(low, high)` kept apart by their joints, sorted, with an index by
/// the low slot: the narrowphase asks for every broadphase pair, and a binary search
/// over the joint grid's 19,701 pairs (a cache miss a level) was half of its
/// narrowphase.
#[derive(Clone, Debug, Default)]
pub(crate) struct Apart {
    pairs: Vec<(u32, u32)>,
    /// `pairs[first[a]..first[a + 1]]` have the low slot `a` (for the slots below
    /// `first.len() - 1`); rebuilt by [`Apart::index`] after a change.
    first: Vec<u32>,
    /// Whether `first` is out of date: lookups then search `pairs`.
    stale: bool,
}

impl Codec for Apart {
    fn put(&self, w: &mut Writer) {
        self.pairs.put(w);
    }

    fn take(&mut self, r: &mut Reader) -> Result<(), Corrupt> {
        self.pairs.take(r)?;
        self.stale = true;
        Ok(())
    }
}

impl Apart {
    fn insert(&mut self, p: (u32, u32)) {
        let at = self.pairs.partition_point(|&x| x < p);
        self.pairs.insert(at, p);
        self.stale = true;
    }

    fn remove(&mut self, p: (u32, u32)) {
        if let Ok(i) = self.pairs.binary_search(&p) {
            self.pairs.remove(i);
            self.stale = true;
        }
    }

    /// Rebuilds the index by low slot where the pairs changed (the step does, before
    /// its narrowphase).
    pub(super) fn index(&mut self) {
        if !self.stale {
            return;
        }
        let slots = self.pairs.last().map_or(0, |p| p.0 as usize + 1);
        self.first.clear();
        self.first.resize(slots + 1, 0);
        for &(a, _) in &self.pairs {
            self.first[a as usize + 1] += 1;
        }
        for k in 1..self.first.len() {
            self.first[k] += self.first[k - 1];
        }
        self.stale = false;
    }

    /// Whether the shapes of body slots `a` and `b` may collide (no joint between
    /// them asks otherwise).
    pub(crate) fn may_collide(&self, a: u32, b: u32) -> bool {
        let p = (a.min(b), a.max(b));
        if self.stale {
            return self.pairs.binary_search(&p).is_err();
        }
        let low = p.0 as usize;
        if low + 1 >= self.first.len() {
            return true;
        }
        let (start, end) = (self.first[low] as usize, self.first[low + 1] as usize);
        !self.pairs[start..end].iter().any(|&(_, high)| high == p.1)
    }
}

impl World {
    /// Creates a joint; wakes both bodies. Fails with `InvalidBody` for a stale body
    /// and `InvalidArgument` for a joint of a body with itself, between two bodies
    /// that cannot move (static or kinematic both), or a def that is not valid
    /// ([`JointDef::is_valid`]); nothing changes then.
    pub fn create_joint(&mut self, def: &JointDef) -> Result<JointId, BodyError> {
        let (ta, tb) = (self.bodies.motion_type(def.body_a)?, self.bodies.motion_type(def.body_b)?);
        if def.body_a == def.body_b || (ta != MotionType::Dynamic && tb != MotionType::Dynamic) || !def.is_valid() {
            return Err(BodyError::InvalidArgument);
        }
        self.wake(def.body_a)?;
        self.wake(def.body_b)?;
        if ta == MotionType::Dynamic && tb == MotionType::Dynamic {
            self.islands.link(def.body_a.index, def.body_b.index);
        }
        let joints = &mut self.joints;
        let index = match joints.free.pop() {
            Some(i) => i,
            None => {
                joints.slots.push(Slot::default());
                joints.slots.len() as u32 - 1
            }
        };
        joints.links.resize(joints.slots.len(), None);
        joints.links[index as usize] = Some((def.body_a, def.body_b));
        let slot = &mut joints.slots[index as usize];
        slot.joint = Some(Joint { def: *def, impulses: Impulses::default(), force: Vec3::ZERO, torque: Vec3::ZERO });
        if !def.collide_connected {
            joints.apart.insert(pair(def.body_a, def.body_b));
        }
        Ok(JointId { index, generation: slot.generation })
    }

    /// Destroys a joint; wakes its bodies.
    pub fn destroy_joint(&mut self, id: JointId) -> Result<(), BodyError> {
        let def = self.joints.get(id)?.def;
        let _ = self.wake(def.body_a);
        let _ = self.wake(def.body_b);
        self.joints.remove(id.index);
        unlink_joint(&self.bodies, &mut self.islands, &def);
        Ok(())
    }

    /// Destroys the joints of a body being destroyed, reporting each with the next
    /// step's joint events.
    pub(super) fn destroy_joints_of(&mut self, body: BodyId) {
        let ids: Vec<JointId> = self.joints.of_body(body.index).collect();
        for id in ids {
            let def = self.joints.get(id).expect("live joint").def;
            let other = if def.body_a == body { def.body_b } else { def.body_a };
            let _ = self.wake(other);
            self.joints.remove(id.index);
            unlink_joint(&self.bodies, &mut self.islands, &def);
            let kind = JointEventKind::BodyDestroyed;
            self.joints.pending.push(JointEvent { joint: id, body_a: def.body_a, body_b: def.body_b, kind });
        }
    }

    pub fn joint_is_valid(&self, id: JointId) -> bool {
        self.joints.get(id).is_ok()
    }

    /// Number of live joints.
    pub fn joint_count(&self) -> usize {
        self.joints.len()
    }

    /// The joint's definition as it stands (settings changed since included).
    pub fn joint(&self, id: JointId) -> Result<&JointDef, BodyError> {
        Ok(&self.joints.get(id)?.def)
    }

    /// Changes a joint's kind settings (the kind itself stays; the new def must be
    /// valid). Wakes both bodies; the accumulated impulses of parts switched off are
    /// dropped.
    pub fn set_joint_type(&mut self, id: JointId, kind: JointType) -> Result<(), BodyError> {
        let joint = self.joints.get(id)?;
        let def = JointDef { kind, ..joint.def };
        if std::mem::discriminant(&kind) != std::mem::discriminant(&joint.def.kind) || !def.is_valid() {
            return Err(BodyError::InvalidArgument);
        }
        let _ = self.wake(def.body_a);
        let _ = self.wake(def.body_b);
        let joint = self.joints.get_mut(id)?;
        joint.def.kind = kind;
        let imp = &mut joint.impulses;
        let (limit, motor, spring) = match kind {
            JointType::Spherical(s) => (s.enable_cone_limit || s.enable_twist_limit, s.enable_motor, s.enable_spring),
            JointType::Revolute(r) => (r.enable_limit, r.enable_motor, r.enable_spring),
            JointType::Prismatic(p) => (p.enable_limit, p.enable_motor, p.enable_spring),
            JointType::Fixed(_) | JointType::SixDof(_) => (true, true, true),
            JointType::Distance(d) => (d.enable_limit, true, true),
        };
        if !limit {
            (imp.lower, imp.upper, imp.swing) = (0.0, 0.0, 0.0);
        }
        if !motor {
            (imp.motor, imp.motor3) = (0.0, Vec3::ZERO);
        }
        if !spring {
            (imp.spring, imp.spring3) = (0.0, Vec3::ZERO);
        }
        Ok(())
    }

    /// The force and torque (N, N m, world axes) the joint applied to body B in the
    /// last step's last substep.
    pub fn joint_reaction(&self, id: JointId) -> Result<(Vec3, Vec3), BodyError> {
        let j = self.joints.get(id)?;
        Ok((j.force, j.torque))
    }

    /// The joint's current value: the revolute angle or the spherical twist (rad), the
    /// prismatic translation or the distance (m); 0 for a weld.
    pub fn joint_value(&self, id: JointId) -> Result<f32, BodyError> {
        let def = self.joints.get(id)?.def;
        let (xa, xb) = (self.bodies.transform(def.body_a)?, self.bodies.transform(def.body_b)?);
        let (fa, fb) = (xa.mul(&def.frame_a), xb.mul(&def.frame_b));
        let d = fb.translation - fa.translation;
        Ok(match def.kind {
            JointType::Revolute(_) | JointType::Spherical(_) => {
                joint_solver::twist_angle(joint_solver::relative(fa.rotation, fb.rotation))
            }
            JointType::Prismatic(_) => (fa.rotation * Vec3::Z).dot(d),
            JointType::Distance(_) => d.length(),
            JointType::Fixed(_) | JointType::SixDof(_) => 0.0,
        })
    }

    /// The angle between the joint frames' z axes (rad): a spherical joint's swing.
    pub fn joint_swing(&self, id: JointId) -> Result<f32, BodyError> {
        let def = self.joints.get(id)?.def;
        let (xa, xb) = (self.bodies.transform(def.body_a)?, self.bodies.transform(def.body_b)?);
        Ok(joint_solver::swing_angle(xa.rotation * def.frame_a.rotation, xb.rotation * def.frame_b.rotation))
    }

    /// Each live joint to `draw`, in handle order (see [`super::DebugDraw::joint`]).
    pub(super) fn draw_joints(&self, draw: &mut dyn super::DebugDraw) {
        for (index, slot) in self.joints.slots.iter().enumerate() {
            let Some(j) = &slot.joint else { continue };
            let (Ok(xa), Ok(xb)) = (self.bodies.transform(j.def.body_a), self.bodies.transform(j.def.body_b)) else {
                continue;
            };
            draw.joint(&super::debug::JointDrawInfo {
                joint: JointId { index: index as u32, generation: slot.generation },
                body_a: j.def.body_a,
                body_b: j.def.body_b,
                frame_a: xa.mul(&j.def.frame_a),
                frame_b: xb.mul(&j.def.frame_b),
                kind: j.def.kind,
            });
        }
    }

    /// Joints broken in the last step, and joints destroyed with their bodies before
    /// it, in order.
    pub fn joint_events(&self) -> &[JointEvent] {
        &self.joints.events
    }

    /// This step's joints: every joint with a body in the awake set, in slot order,
    /// with where its bodies are (see [`JointRef`]); the rows the solve reads are
    /// filled once the joints are coloured ([`Joints::fill`]).
    pub(super) fn list_joints(&mut self) {
        let bodies = &self.bodies;
        let joints = &mut self.joints;
        let refs = &mut joints.refs;
        let mut n = 0;
        for (index, link) in joints.links.iter().enumerate() {
            let Some((body_a, body_b)) = *link else { continue };
            let (Ok(a), Ok(b)) = (bodies.locate(body_a), bodies.locate(body_b)) else {
                continue;
            };
            if a.0 != SetKind::Awake && b.0 != SetKind::Awake {
                continue;
            }
            let awake = |(set, row): (SetKind, usize)| if set == SetKind::Awake { row as u32 } else { NONE };
            let at = |(set, row): (SetKind, usize)| (set, row as u32);
            let r = JointRef { slot: index as u32, a: at(a), b: at(b), row_a: awake(a), row_b: awake(b) };
            // The last step's fill and finish read the list on every worker (the
            // grid's list took 0.5 to 1.2 ms at two workers rewritten whole, against
            // 0.1 ms at one, where most steps change nothing).
            super::step::put_changed(refs, n, r);
            n += 1;
        }
        refs.truncate(n);
    }

    /// The springs' coefficients for substeps of `h` seconds, in parallel. A plain
    /// ball joint has no spring and no limit to read them (its lanes read its first
    /// two lines alone): it is left as the fill made it, so this pass neither finds
    /// its limits' sines nor touches the rest of its row (the grid's 19,701 rows,
    /// 10 MB, were read and written whole for nothing).
    pub(super) fn prepare_joints(&mut self, h: f32, jobs: crate::jobs::Jobs) {
        let balls = &self.coloring.balls[self.constraints.len()..];
        debug_assert!(balls.len() == self.joints.solves.len());
        jobs.for_each_mut(&mut self.joints.solves, |n, j, _| {
            if !balls[n] {
                prepare_joint(j, h);
            }
        });
    }
}

/// See [`World::prepare_joints`].
fn prepare_joint(j: &mut JointSolve, h: f32) {
    let (spring, angular) = match j.kind {
        JointType::Spherical(s) => (Softness::new(s.hertz, s.damping_ratio, h), j.angular_spring),
        JointType::Revolute(r) => (Softness::new(r.hertz, r.damping_ratio, h), j.angular_spring),
        JointType::Prismatic(p) => (Softness::new(p.hertz, p.damping_ratio, h), j.angular_spring),
        JointType::Distance(d) => (Softness::new(d.hertz, d.damping_ratio, h), j.angular_spring),
        JointType::Fixed(f) => (
            Softness::new(f.linear_hertz, f.linear_damping_ratio, h),
            Softness::new(f.angular_hertz, f.angular_damping_ratio, h),
        ),
        JointType::SixDof(_) => (j.spring, j.angular_spring),
    };
    (j.spring, j.angular_spring) = (spring, angular);
    j.open = OpenLimits::of(&j.kind);
}

impl World {
    /// After the solve: impulses back into the joints, their forces and torques (in
    /// parallel), and the joints past their thresholds broken (in slot order) and
    /// reported.
    pub(super) fn finish_joints(&mut self, inv_h: f32, jobs: crate::jobs::Jobs) {
        let joints = &mut self.joints;
        let broken = std::sync::atomic::AtomicBool::new(false);
        let (solves, order, refs) = (&joints.solves, &joints.order, &joints.refs);
        let balls = &self.coloring.balls[self.constraints.len()..];
        debug_assert!(balls.len() == solves.len());
        let slots = crate::jobs::Column::new(&mut joints.slots);
        jobs.parallel_for(0..solves.len(), 256, |range, _| {
            let mut any = false;
            for n in range {
                // The solves are in the colours' order, the slots out of it: ask for
                // one a few ahead.
                if let Some(&k) = order.get(n + 8) {
                    crate::math::prefetch(slots.ptr(refs[k as usize].slot as usize));
                }
                let slot = refs[order[n] as usize].slot;
                // SAFETY: each solve has a slot of its own, and `parallel_for` hands
                // each `n` to exactly one job.
                let j = unsafe { slots.get(slot as usize) }.joint.as_mut().expect("live joint");
                let s = &solves[n];
                let (force, torque) = if balls[n] {
                    // A ball joint's solve changed its point part's impulse alone, and
                    // it holds no other (switching a part off drops its impulse), so
                    // its torque is zero: the solve's first two lines are all read
                    // here, not the five `reaction` reads (the grid's finish was
                    // bound by them).
                    j.impulses.linear = s.impulses.linear;
                    (s.impulses.linear * inv_h, Vec3::ZERO)
                } else {
                    j.impulses = s.impulses;
                    joint_solver::reaction(s, inv_h)
                };
                (j.force, j.torque) = (force, torque);
                any |= force.length() > j.def.break_force || torque.length() > j.def.break_torque;
            }
            if any {
                broken.store(true, std::sync::atomic::Ordering::Relaxed);
            }
        });
        let broken = broken.into_inner();
        if !broken {
            return;
        }
        for k in 0..joints.refs.len() {
            let index = joints.refs[k].slot;
            let Some(j) = joints.slots[index as usize].joint else { continue };
            if j.force.length() > j.def.break_force || j.torque.length() > j.def.break_torque {
                let id = JointId { index, generation: joints.slots[index as usize].generation };
                joints.remove(index);
                unlink_joint(&self.bodies, &mut self.islands, &j.def);
                let kind = JointEventKind::Broke;
                joints.events.push(JointEvent { joint: id, body_a: j.def.body_a, body_b: j.def.body_b, kind });
            }
        }
    }
}

/// A joint between two dynamic bodies went: a removal on their island.
fn unlink_joint(bodies: &Bodies, islands: &mut Islands, def: &JointDef) {
    let dynamic = |id: BodyId| bodies.motion_type(id) == Ok(MotionType::Dynamic);
    if dynamic(def.body_a) && dynamic(def.body_b) {
        islands.count_removal(def.body_a.index);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::ShapeTables;

    /// The index by low slot answers as a search of the sorted pairs, after inserts,
    /// removals and a round trip through the codec (which leaves it to be rebuilt).
    #[test]
    fn apart_pairs_are_found_by_their_low_slot() {
        let mut seed = 0x2545_f491_u64;
        let mut next = |n: u32| {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((seed >> 33) % n as u64) as u32
        };
        let mut apart = Apart::default();
        let mut truth: Vec<(u32, u32)> = Vec::new();
        let check = |apart: &Apart, truth: &[(u32, u32)]| {
            for a in 0..70 {
                for b in 0..70 {
                    let kept = truth.contains(&(a.min(b), a.max(b)));
                    assert_eq!(apart.may_collide(a, b), !kept, "({a}, {b}), stale {}", apart.stale);
                }
            }
        };
        for round in 0..30 {
            for _ in 0..20 {
                let (a, b) = (next(64), next(64));
                let p = (a.min(b), a.max(b));
                if next(3) == 0 {
                    apart.remove(p);
                    if let Some(i) = truth.iter().position(|&q| q == p) {
                        truth.remove(i);
                    }
                } else {
                    apart.insert(p);
                    truth.push(p);
                }
            }
            check(&apart, &truth);
            apart.index();
            assert!(!apart.stale);
            check(&apart, &truth);
            if round % 10 == 9 {
                let mut buf = vec![0u8; 1 << 16];
                let mut w = Writer::new(&mut buf, 0);
                apart.put(&mut w);
                let n = w.len();
                let mut back = Apart::default();
                back.take(&mut Reader::new(&buf[..n], 0, ShapeTables::default())).unwrap();
                assert!(back.stale);
                check(&back, &truth);
                back.index();
                check(&back, &truth);
            }
        }
    }
}
