//! Joints through the C ABI: a definition struct per kind with its defaults, create,
//! destroy, the settings (limits, motors, springs) read and changed in place, the
//! reaction force and torque, and the joint events of a step.
//!
//! A joint holds two bodies of one world at a frame in each (`frame_a`, `frame_b`,
//! in the bodies' own frames); the z axis of frame A is the hinge, slide, twist and
//! cone axis. Like bodies, `KilnJointId` carries its world's handle.

use std::mem::size_of;

use kiln_core::math::Vec3;
use kiln_core::physics::{
    BodyError, DistanceJoint, Dof, FixedJoint, JointDef, JointEventKind, JointId, JointType, PrismaticJoint,
    RevoluteJoint, SixDofJoint, SphericalJoint,
};

use crate::abi::{
    ffi_call, non_null, read_def, write_out, CountedOut, Error, KilnStatus, KILN_ERROR_INVALID_ARGUMENT,
    KILN_ERROR_INVALID_HANDLE,
};
use crate::types::{check_transform, kvec, vec3, KilnQuat, KilnTransform, KilnVec3};
use crate::world::{
    body_error, body_key, public_body, with_world, with_world_waiting, KilnBodyId, KilnJointId, KilnWorldId,
};

/// A ball and socket (`KilnSphericalJointDef`).
pub const KILN_JOINT_SPHERICAL: u32 = 0;
/// A hinge (`KilnRevoluteJointDef`).
pub const KILN_JOINT_REVOLUTE: u32 = 1;
/// A slider (`KilnPrismaticJointDef`).
pub const KILN_JOINT_PRISMATIC: u32 = 2;
/// A weld (`KilnFixedJointDef`).
pub const KILN_JOINT_FIXED: u32 = 3;
/// A rod, rope or spring (`KilnDistanceJointDef`).
pub const KILN_JOINT_DISTANCE: u32 = 4;
/// The generic joint (`KilnSixDofJointDef`).
pub const KILN_JOINT_SIX_DOF: u32 = 5;

/// A six-DOF axis that moves freely.
pub const KILN_DOF_FREE: u32 = 0;
/// A six-DOF axis held in place.
pub const KILN_DOF_LOCKED: u32 = 1;
/// A six-DOF axis held between its lower and upper limits.
pub const KILN_DOF_LIMITED: u32 = 2;

/// A joint event: the joint broke (its force or torque passed its threshold).
pub const KILN_JOINT_EVENT_BROKE: u32 = 0;
/// A joint event: one of the joint's bodies was destroyed, and the joint with it.
pub const KILN_JOINT_EVENT_BODY_DESTROYED: u32 = 1;

/// What every joint definition holds first: its bodies, its frames and its
/// thresholds.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KilnJointBase {
    /// The two bodies: live, of the world the joint is created in, not the same
    /// body, at least one of them dynamic.
    pub body_a: KilnBodyId,
    /// See `body_a`.
    pub body_b: KilnBodyId,
    /// The joint's frame in body A's frame (anchor and axes; z is the joint's axis;
    /// the anchor within `KILN_SHAPE_MAX_EXTENT` of the body's origin). Default
    /// identity.
    pub frame_a: KilnTransform,
    /// The joint's frame in body B's frame. Default identity.
    pub frame_b: KilnTransform,
    /// Whether the two bodies' shapes still collide with each other. Default false.
    pub collide_connected: bool,
    /// The joint breaks (is destroyed and reported by `kiln_world_get_joint_events`)
    /// when its force passes this (N, >= 0; INFINITY: never). Default INFINITY.
    pub break_force: f32,
    /// The same for its torque (N m, >= 0). Default INFINITY.
    pub break_torque: f32,
}

/// A ball and socket, the ragdoll joint. Initialise with
/// `kiln_default_spherical_joint_def()`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KilnSphericalJointDef {
    /// `sizeof(KilnSphericalJointDef)`, set by the default function.
    pub struct_size: u32,
    /// Bodies, frames, thresholds.
    pub base: KilnJointBase,
    /// Limit the angle between the frames' z axes. Default false.
    pub enable_cone_limit: bool,
    /// Largest angle between the z axes (rad, 0 to pi). Default pi/2.
    pub cone_angle: f32,
    /// Limit the twist of frame B about frame A's z axis. Default false.
    pub enable_twist_limit: bool,
    /// Smallest twist (rad, -pi to pi, <= `upper_twist`). Default -pi/4.
    pub lower_twist: f32,
    /// Largest twist (rad). Default pi/4.
    pub upper_twist: f32,
    /// A spring pulling the frames' rotations together. Default false.
    pub enable_spring: bool,
    /// The spring's frequency (Hz, >= 0). Default 0.
    pub hertz: f32,
    /// The spring's damping ratio (>= 0). Default 0.
    pub damping_ratio: f32,
    /// A motor driving B's spin relative to A; at zero velocity, joint friction.
    /// Default false.
    pub enable_motor: bool,
    /// Target spin (rad/s, frame A's axes). Default zero.
    pub motor_velocity: KilnVec3,
    /// The motor's largest torque (N m, >= 0). Default 0.
    pub max_motor_torque: f32,
}

/// A hinge about frame A's z axis. Initialise with `kiln_default_revolute_joint_def()`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KilnRevoluteJointDef {
    /// `sizeof(KilnRevoluteJointDef)`, set by the default function.
    pub struct_size: u32,
    /// Bodies, frames, thresholds.
    pub base: KilnJointBase,
    /// Limit the angle. Default false.
    pub enable_limit: bool,
    /// Smallest angle of B about the axis (rad, -pi to pi, <= `upper`). Default 0.
    pub lower: f32,
    /// Largest angle (rad). Default 0.
    pub upper: f32,
    /// Drive the hinge. Default false.
    pub enable_motor: bool,
    /// Target spin of B relative to A (rad/s). Default 0.
    pub motor_speed: f32,
    /// The motor's largest torque (N m, >= 0). Default 0.
    pub max_motor_torque: f32,
    /// A spring toward `target_angle`. Default false.
    pub enable_spring: bool,
    /// The spring's frequency (Hz, >= 0). Default 0.
    pub hertz: f32,
    /// The spring's damping ratio (>= 0). Default 0.
    pub damping_ratio: f32,
    /// The angle the spring pulls toward (rad, -pi to pi). Default 0.
    pub target_angle: f32,
}

/// A slider along frame A's z axis; the rotations stay together. Initialise with
/// `kiln_default_prismatic_joint_def()`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KilnPrismaticJointDef {
    /// `sizeof(KilnPrismaticJointDef)`, set by the default function.
    pub struct_size: u32,
    /// Bodies, frames, thresholds.
    pub base: KilnJointBase,
    /// Limit the translation. Default false.
    pub enable_limit: bool,
    /// Smallest translation of B's anchor along the axis (m, <= `upper`). Default 0.
    pub lower: f32,
    /// Largest translation (m). Default 0.
    pub upper: f32,
    /// Drive the slider. Default false.
    pub enable_motor: bool,
    /// Target speed along the axis (m/s). Default 0.
    pub motor_speed: f32,
    /// The motor's largest force (N, >= 0). Default 0.
    pub max_motor_force: f32,
    /// A spring toward `target_translation`. Default false.
    pub enable_spring: bool,
    /// The spring's frequency (Hz, >= 0). Default 0.
    pub hertz: f32,
    /// The spring's damping ratio (>= 0). Default 0.
    pub damping_ratio: f32,
    /// The translation the spring pulls toward (m). Default 0.
    pub target_translation: f32,
}

/// A weld: rigid, or soft where a frequency is set. Initialise with
/// `kiln_default_fixed_joint_def()`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KilnFixedJointDef {
    /// `sizeof(KilnFixedJointDef)`, set by the default function.
    pub struct_size: u32,
    /// Bodies, frames, thresholds.
    pub base: KilnJointBase,
    /// The position part's frequency (Hz, >= 0; 0: rigid). Default 0.
    pub linear_hertz: f32,
    /// The rotation part's frequency (Hz, >= 0; 0: rigid). Default 0.
    pub angular_hertz: f32,
    /// The position part's damping ratio (>= 0). Default 0.
    pub linear_damping_ratio: f32,
    /// The rotation part's damping ratio (>= 0). Default 0.
    pub angular_damping_ratio: f32,
}

/// The anchors' distance: a rod at `length`, a spring toward it, and with the limit
/// never shorter than `min_length` nor longer than `max_length` (a rope: spring on
/// with frequency 0, limit on). Initialise with `kiln_default_distance_joint_def()`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KilnDistanceJointDef {
    /// `sizeof(KilnDistanceJointDef)`, set by the default function.
    pub struct_size: u32,
    /// Bodies, frames, thresholds.
    pub base: KilnJointBase,
    /// The rest length (m, >= 0). Default 1.
    pub length: f32,
    /// A spring toward `length` instead of a rod (needs `min_length < max_length`).
    /// Default false.
    pub enable_spring: bool,
    /// The spring's frequency (Hz, >= 0; 0: no spring force). Default 0.
    pub hertz: f32,
    /// The spring's damping ratio (>= 0). Default 0.
    pub damping_ratio: f32,
    /// Keep the length within `min_length..max_length`. Default false.
    pub enable_limit: bool,
    /// Shortest length (m, >= 0, <= `max_length`). Default 0.
    pub min_length: f32,
    /// Longest length (m). Default 1e6.
    pub max_length: f32,
}

/// The generic joint: along and about each axis of frame A (x, y, z), free, locked
/// or limited, with a motor per axis. The rotation about an axis is measured as
/// `2 atan2(q_k, q_w)` of frame B's rotation in frame A: exact for a turn about one
/// axis, approximate when turned about several. Initialise with
/// `kiln_default_six_dof_joint_def()` (everything locked: a weld).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KilnSixDofJointDef {
    /// `sizeof(KilnSixDofJointDef)`, set by the default function.
    pub struct_size: u32,
    /// Bodies, frames, thresholds.
    pub base: KilnJointBase,
    /// `KILN_DOF_*` along x, y, z. Default locked.
    pub linear_mode: [u32; 3],
    /// Lower translation limits (m, finite, <= upper) of limited axes.
    pub linear_lower: [f32; 3],
    /// Upper translation limits (m).
    pub linear_upper: [f32; 3],
    /// `KILN_DOF_*` about x, y, z. Default locked.
    pub angular_mode: [u32; 3],
    /// Lower rotation limits (rad, -pi to pi, <= upper) of limited axes.
    pub angular_lower: [f32; 3],
    /// Upper rotation limits (rad).
    pub angular_upper: [f32; 3],
    /// Motor target speeds along x, y, z then about x, y, z (m/s, rad/s, finite).
    pub motor_speed: [f32; 6],
    /// The motors' largest forces (N) and torques (N m), same order (>= 0; 0: no
    /// motor).
    pub max_motor_force: [f32; 6],
}

/// A joint that went away: broken in the last step, or destroyed with a body since
/// the step before.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KilnJointEvent {
    /// The joint (no longer valid).
    pub joint: KilnJointId,
    /// Its bodies (a destroyed one no longer valid).
    pub body_a: KilnBodyId,
    /// See `body_a`.
    pub body_b: KilnBodyId,
    /// `KILN_JOINT_EVENT_BROKE` or `KILN_JOINT_EVENT_BODY_DESTROYED`.
    pub kind: u32,
}

fn base_default() -> KilnJointBase {
    let identity =
        KilnTransform { position: KilnVec3::default(), rotation: KilnQuat { x: 0.0, y: 0.0, z: 0.0, w: 1.0 } };
    KilnJointBase {
        body_a: KilnBodyId::default(),
        body_b: KilnBodyId::default(),
        frame_a: identity,
        frame_b: identity,
        collide_connected: false,
        break_force: f32::INFINITY,
        break_torque: f32::INFINITY,
    }
}

/// A spherical joint's defaults (no bodies yet: set `base.body_a` and `base.body_b`).
///
/// Threads: any thread, at any time.
#[no_mangle]
pub extern "C" fn kiln_default_spherical_joint_def() -> KilnSphericalJointDef {
    let d = SphericalJoint::default();
    KilnSphericalJointDef {
        struct_size: size_of::<KilnSphericalJointDef>() as u32,
        base: base_default(),
        enable_cone_limit: d.enable_cone_limit,
        cone_angle: d.cone_angle,
        enable_twist_limit: d.enable_twist_limit,
        lower_twist: d.lower_twist,
        upper_twist: d.upper_twist,
        enable_spring: d.enable_spring,
        hertz: d.hertz,
        damping_ratio: d.damping_ratio,
        enable_motor: d.enable_motor,
        motor_velocity: kvec(d.motor_velocity),
        max_motor_torque: d.max_motor_torque,
    }
}

/// A revolute joint's defaults (no bodies yet).
///
/// Threads: any thread, at any time.
#[no_mangle]
pub extern "C" fn kiln_default_revolute_joint_def() -> KilnRevoluteJointDef {
    let d = RevoluteJoint::default();
    KilnRevoluteJointDef {
        struct_size: size_of::<KilnRevoluteJointDef>() as u32,
        base: base_default(),
        enable_limit: d.enable_limit,
        lower: d.lower,
        upper: d.upper,
        enable_motor: d.enable_motor,
        motor_speed: d.motor_speed,
        max_motor_torque: d.max_motor_torque,
        enable_spring: d.enable_spring,
        hertz: d.hertz,
        damping_ratio: d.damping_ratio,
        target_angle: d.target_angle,
    }
}

/// A prismatic joint's defaults (no bodies yet).
///
/// Threads: any thread, at any time.
#[no_mangle]
pub extern "C" fn kiln_default_prismatic_joint_def() -> KilnPrismaticJointDef {
    let d = PrismaticJoint::default();
    KilnPrismaticJointDef {
        struct_size: size_of::<KilnPrismaticJointDef>() as u32,
        base: base_default(),
        enable_limit: d.enable_limit,
        lower: d.lower,
        upper: d.upper,
        enable_motor: d.enable_motor,
        motor_speed: d.motor_speed,
        max_motor_force: d.max_motor_force,
        enable_spring: d.enable_spring,
        hertz: d.hertz,
        damping_ratio: d.damping_ratio,
        target_translation: d.target_translation,
    }
}

/// A fixed joint's defaults (rigid; no bodies yet).
///
/// Threads: any thread, at any time.
#[no_mangle]
pub extern "C" fn kiln_default_fixed_joint_def() -> KilnFixedJointDef {
    let d = FixedJoint::default();
    KilnFixedJointDef {
        struct_size: size_of::<KilnFixedJointDef>() as u32,
        base: base_default(),
        linear_hertz: d.linear_hertz,
        angular_hertz: d.angular_hertz,
        linear_damping_ratio: d.linear_damping_ratio,
        angular_damping_ratio: d.angular_damping_ratio,
    }
}

/// A distance joint's defaults (a 1 m rod; no bodies yet).
///
/// Threads: any thread, at any time.
#[no_mangle]
pub extern "C" fn kiln_default_distance_joint_def() -> KilnDistanceJointDef {
    let d = DistanceJoint::default();
    KilnDistanceJointDef {
        struct_size: size_of::<KilnDistanceJointDef>() as u32,
        base: base_default(),
        length: d.length,
        enable_spring: d.enable_spring,
        hertz: d.hertz,
        damping_ratio: d.damping_ratio,
        enable_limit: d.enable_limit,
        min_length: d.min_length,
        max_length: d.max_length,
    }
}

/// A six-DOF joint's defaults (everything locked; no bodies yet).
///
/// Threads: any thread, at any time.
#[no_mangle]
pub extern "C" fn kiln_default_six_dof_joint_def() -> KilnSixDofJointDef {
    six_dof_def(base_default(), &SixDofJoint::default())
}

/// The C definition of six-DOF settings on `base`.
fn six_dof_def(base: KilnJointBase, x: &SixDofJoint) -> KilnSixDofJointDef {
    let split = |d: Dof| match d {
        Dof::Free => (KILN_DOF_FREE, 0.0, 0.0),
        Dof::Locked => (KILN_DOF_LOCKED, 0.0, 0.0),
        Dof::Limited { lower, upper } => (KILN_DOF_LIMITED, lower, upper),
    };
    let (linear, angular) = (x.linear.map(split), x.angular.map(split));
    KilnSixDofJointDef {
        struct_size: size_of::<KilnSixDofJointDef>() as u32,
        base,
        linear_mode: linear.map(|d| d.0),
        linear_lower: linear.map(|d| d.1),
        linear_upper: linear.map(|d| d.2),
        angular_mode: angular.map(|d| d.0),
        angular_lower: angular.map(|d| d.1),
        angular_upper: angular.map(|d| d.2),
        motor_speed: x.motor_speed,
        max_motor_force: x.max_motor_force,
    }
}

/// The six-DOF settings of a C definition (range checks follow in `JointDef::is_valid`).
fn six_dof_of(d: &KilnSixDofJointDef) -> Result<SixDofJoint, Error> {
    let dof = |mode: u32, lower: f32, upper: f32, name: &str| match mode {
        KILN_DOF_FREE => Ok(Dof::Free),
        KILN_DOF_LOCKED => Ok(Dof::Locked),
        KILN_DOF_LIMITED => Ok(Dof::Limited { lower, upper }),
        other => Err(invalid(format!("def->{name} is {other}, must be one of the KILN_DOF_* constants"))),
    };
    let mut x =
        SixDofJoint { motor_speed: d.motor_speed, max_motor_force: d.max_motor_force, ..SixDofJoint::default() };
    for k in 0..3 {
        x.linear[k] = dof(d.linear_mode[k], d.linear_lower[k], d.linear_upper[k], &format!("linear_mode[{k}]"))?;
        x.angular[k] = dof(d.angular_mode[k], d.angular_lower[k], d.angular_upper[k], &format!("angular_mode[{k}]"))?;
    }
    Ok(x)
}

fn invalid(message: String) -> Error {
    Error::new(KILN_ERROR_INVALID_ARGUMENT, message)
}

fn joint_key(joint: KilnJointId) -> Result<JointId, Error> {
    match joint.index1.checked_sub(1) {
        Some(index) => Ok(JointId { index, generation: joint.generation }),
        None => Err(Error::new(KILN_ERROR_INVALID_HANDLE, "the null joint handle")),
    }
}

fn joint_error(error: BodyError, joint: KilnJointId, what: &str) -> Error {
    match error {
        BodyError::InvalidJoint => Error::new(
            KILN_ERROR_INVALID_HANDLE,
            format!("joint handle {{{}, {}}} is stale or was never issued", joint.index1, joint.generation),
        ),
        other => body_error(other, KilnBodyId::default(), what),
    }
}

pub(crate) fn public_joint(world: KilnWorldId, id: JointId) -> KilnJointId {
    KilnJointId { index1: id.index + 1, generation: id.generation, world }
}

/// The Rust def of a C base and kind, checked: the bodies belong to `world`.
fn joint_def(world: KilnWorldId, base: &KilnJointBase, kind: JointType) -> Result<JointDef, Error> {
    for (name, body) in [("base.body_a", base.body_a), ("base.body_b", base.body_b)] {
        if body.world != world {
            return Err(invalid(format!("`{name}` belongs to another world (or is the null handle)")));
        }
    }
    let (a, b) = (body_key(base.body_a)?, body_key(base.body_b)?);
    let def = JointDef {
        frame_a: check_transform(&base.frame_a, "base.frame_a")?,
        frame_b: check_transform(&base.frame_b, "base.frame_b")?,
        collide_connected: base.collide_connected,
        break_force: base.break_force,
        break_torque: base.break_torque,
        ..JointDef::new(a, b, kind)
    };
    Ok(def)
}

/// Creates the joint in `world`, naming the body that failed.
fn create(world: KilnWorldId, def: JointDef, out: *mut KilnJointId) -> Result<(), Error> {
    let id = with_world(world, |entry| {
        let what = "invalid joint: the same body twice, no dynamic body, or a number NaN, infinite, negative or \
                    out of order (lower > upper, min_length > max_length)";
        let id = entry.world.create_joint(&def).map_err(|e| match e {
            BodyError::InvalidBody => {
                let (a, b) = (def.body_a, def.body_b);
                let stale = if entry.world.bodies().is_valid(a) { b } else { a };
                Error::new(
                    KILN_ERROR_INVALID_HANDLE,
                    format!("body handle {{{}, {}}} is stale or was never issued", stale.index + 1, stale.generation),
                )
            }
            other => body_error(other, KilnBodyId::default(), what),
        })?;
        Ok(public_joint(world, id))
    })?;
    write_out(out, "out_joint", id)
}

/// Reads a joint def of type `T` (its size checked), converts it and creates the joint.
///
/// # Safety
/// `def` is NULL or readable; `out_joint` is NULL or writable.
unsafe fn create_from<T: Copy>(
    world: KilnWorldId,
    def: *const T,
    out_joint: *mut KilnJointId,
    convert: impl FnOnce(&T) -> (KilnJointBase, JointType),
) -> Result<(), Error> {
    let def = non_null(def, "def")?;
    non_null(out_joint, "out_joint")?;
    // SAFETY: non-null; readable per the caller's contract.
    let raw: T = unsafe { read_def(def, "def")? };
    let (base, kind) = convert(&raw);
    create(world, joint_def(world, &base, kind)?, out_joint)
}

/// Creates a spherical joint and writes its handle to `out_joint`; wakes both
/// bodies. `KILN_ERROR_INVALID_HANDLE` for a stale world or body,
/// `KILN_ERROR_INVALID_ARGUMENT` for a body of another world, the same body twice,
/// two bodies neither of which is dynamic, or a number out of range; nothing is
/// created then.
///
/// Pointers: `def` and `out_joint` are NULL or valid for reading / writing.
///
/// Threads: one call at a time per world (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_joint_create_spherical(
    world: KilnWorldId,
    def: *const KilnSphericalJointDef,
    out_joint: *mut KilnJointId,
) -> KilnStatus {
    ffi_call("kiln_joint_create_spherical", || {
        // SAFETY: forwarded from the caller.
        unsafe {
            create_from(world, def, out_joint, |d: &KilnSphericalJointDef| {
                (
                    d.base,
                    JointType::Spherical(SphericalJoint {
                        enable_cone_limit: d.enable_cone_limit,
                        cone_angle: d.cone_angle,
                        enable_twist_limit: d.enable_twist_limit,
                        lower_twist: d.lower_twist,
                        upper_twist: d.upper_twist,
                        enable_spring: d.enable_spring,
                        hertz: d.hertz,
                        damping_ratio: d.damping_ratio,
                        enable_motor: d.enable_motor,
                        motor_velocity: vec3(d.motor_velocity),
                        max_motor_torque: d.max_motor_torque,
                    }),
                )
            })
        }
    })
}

/// Creates a revolute joint (as `kiln_joint_create_spherical`).
///
/// Pointers: `def` and `out_joint` are NULL or valid for reading / writing.
///
/// Threads: one call at a time per world (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_joint_create_revolute(
    world: KilnWorldId,
    def: *const KilnRevoluteJointDef,
    out_joint: *mut KilnJointId,
) -> KilnStatus {
    ffi_call("kiln_joint_create_revolute", || {
        // SAFETY: forwarded from the caller.
        unsafe {
            create_from(world, def, out_joint, |d: &KilnRevoluteJointDef| {
                (
                    d.base,
                    JointType::Revolute(RevoluteJoint {
                        enable_limit: d.enable_limit,
                        lower: d.lower,
                        upper: d.upper,
                        enable_motor: d.enable_motor,
                        motor_speed: d.motor_speed,
                        max_motor_torque: d.max_motor_torque,
                        enable_spring: d.enable_spring,
                        hertz: d.hertz,
                        damping_ratio: d.damping_ratio,
                        target_angle: d.target_angle,
                    }),
                )
            })
        }
    })
}

/// Creates a prismatic joint (as `kiln_joint_create_spherical`).
///
/// Pointers: `def` and `out_joint` are NULL or valid for reading / writing.
///
/// Threads: one call at a time per world (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_joint_create_prismatic(
    world: KilnWorldId,
    def: *const KilnPrismaticJointDef,
    out_joint: *mut KilnJointId,
) -> KilnStatus {
    ffi_call("kiln_joint_create_prismatic", || {
        // SAFETY: forwarded from the caller.
        unsafe {
            create_from(world, def, out_joint, |d: &KilnPrismaticJointDef| {
                (
                    d.base,
                    JointType::Prismatic(PrismaticJoint {
                        enable_limit: d.enable_limit,
                        lower: d.lower,
                        upper: d.upper,
                        enable_motor: d.enable_motor,
                        motor_speed: d.motor_speed,
                        max_motor_force: d.max_motor_force,
                        enable_spring: d.enable_spring,
                        hertz: d.hertz,
                        damping_ratio: d.damping_ratio,
                        target_translation: d.target_translation,
                    }),
                )
            })
        }
    })
}

/// Creates a fixed joint (as `kiln_joint_create_spherical`).
///
/// Pointers: `def` and `out_joint` are NULL or valid for reading / writing.
///
/// Threads: one call at a time per world (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_joint_create_fixed(
    world: KilnWorldId,
    def: *const KilnFixedJointDef,
    out_joint: *mut KilnJointId,
) -> KilnStatus {
    ffi_call("kiln_joint_create_fixed", || {
        // SAFETY: forwarded from the caller.
        unsafe {
            create_from(world, def, out_joint, |d: &KilnFixedJointDef| {
                (
                    d.base,
                    JointType::Fixed(FixedJoint {
                        linear_hertz: d.linear_hertz,
                        angular_hertz: d.angular_hertz,
                        linear_damping_ratio: d.linear_damping_ratio,
                        angular_damping_ratio: d.angular_damping_ratio,
                    }),
                )
            })
        }
    })
}

/// Creates a distance joint (as `kiln_joint_create_spherical`).
///
/// Pointers: `def` and `out_joint` are NULL or valid for reading / writing.
///
/// Threads: one call at a time per world (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_joint_create_distance(
    world: KilnWorldId,
    def: *const KilnDistanceJointDef,
    out_joint: *mut KilnJointId,
) -> KilnStatus {
    ffi_call("kiln_joint_create_distance", || {
        // SAFETY: forwarded from the caller.
        unsafe {
            create_from(world, def, out_joint, |d: &KilnDistanceJointDef| {
                (
                    d.base,
                    JointType::Distance(DistanceJoint {
                        length: d.length,
                        enable_spring: d.enable_spring,
                        hertz: d.hertz,
                        damping_ratio: d.damping_ratio,
                        enable_limit: d.enable_limit,
                        min_length: d.min_length,
                        max_length: d.max_length,
                    }),
                )
            })
        }
    })
}

/// Creates a six-DOF joint (as `kiln_joint_create_spherical`; a mode that is not a
/// `KILN_DOF_*` constant is `KILN_ERROR_INVALID_ARGUMENT`).
///
/// Pointers: `def` and `out_joint` are NULL or valid for reading / writing.
///
/// Threads: one call at a time per world (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_joint_create_six_dof(
    world: KilnWorldId,
    def: *const KilnSixDofJointDef,
    out_joint: *mut KilnJointId,
) -> KilnStatus {
    ffi_call("kiln_joint_create_six_dof", || {
        let def = non_null(def, "def")?;
        non_null(out_joint, "out_joint")?;
        // SAFETY: non-null; readable per the contract.
        let raw: KilnSixDofJointDef = unsafe { read_def(def, "def")? };
        let kind = JointType::SixDof(six_dof_of(&raw)?);
        create(world, joint_def(world, &raw.base, kind)?, out_joint)
    })
}

/// Replaces a six-DOF joint's axes and motors with those of `def` (its `base` is
/// ignored: bodies and frames stay); wakes the bodies. Another kind of joint, or
/// settings out of range, is `KILN_ERROR_INVALID_ARGUMENT` and changes nothing.
///
/// Pointers: `def` is NULL or readable.
///
/// Threads: one call at a time per world, its bodies and joints (busy: `KILN_ERROR_INVALID_STATE`).
#[no_mangle]
pub unsafe extern "C" fn kiln_joint_set_six_dof(joint: KilnJointId, def: *const KilnSixDofJointDef) -> KilnStatus {
    ffi_call("kiln_joint_set_six_dof", || {
        let def = non_null(def, "def")?;
        // SAFETY: non-null; readable per the contract.
        let raw: KilnSixDofJointDef = unsafe { read_def(def, "def")? };
        let x = six_dof_of(&raw)?;
        edit(joint, "six-DOF axes", |kind| match kind {
            JointType::SixDof(old) => {
                *old = x;
                true
            }
            _ => false,
        })
    })
}

/// Writes a six-DOF joint's definition as it stands (bodies, frames in the bodies,
/// thresholds, axes and motors) to `out_def`. Another kind of joint is
/// `KILN_ERROR_INVALID_ARGUMENT`.
///
/// Pointers: `out_def` is NULL or writable.
///
/// Threads: one call at a time per world, its bodies and joints (busy: `KILN_ERROR_INVALID_STATE`).
#[no_mangle]
pub unsafe extern "C" fn kiln_joint_get_six_dof(joint: KilnJointId, out_def: *mut KilnSixDofJointDef) -> KilnStatus {
    ffi_call("kiln_joint_get_six_dof", || {
        non_null(out_def, "out_def")?;
        let def = with_joint(joint, |w, key| Ok(*w.joint(key)?))?;
        let JointType::SixDof(x) = def.kind else {
            return Err(invalid("this joint's kind has no six-DOF axes".into()));
        };
        let transform = |f: &kiln_core::math::Isometry| KilnTransform {
            position: kvec(f.translation),
            rotation: KilnQuat { x: f.rotation.x, y: f.rotation.y, z: f.rotation.z, w: f.rotation.w },
        };
        let base = KilnJointBase {
            body_a: public_body(joint.world, def.body_a),
            body_b: public_body(joint.world, def.body_b),
            frame_a: transform(&def.frame_a),
            frame_b: transform(&def.frame_b),
            collide_connected: def.collide_connected,
            break_force: def.break_force,
            break_torque: def.break_torque,
        };
        write_out(out_def, "out_def", six_dof_def(base, &x))
    })
}

/// Runs `f` on the joint's world and key.
fn with_joint<R>(
    joint: KilnJointId,
    f: impl FnOnce(&mut kiln_core::physics::World, JointId) -> Result<R, BodyError>,
) -> Result<R, Error> {
    let key = joint_key(joint)?;
    with_world(joint.world, |entry| f(&mut entry.world, key).map_err(|e| joint_error(e, joint, "")))
}

/// Destroys a joint; wakes its bodies. Broken joints and joints of destroyed bodies
/// are gone already (their handles are stale).
///
/// Threads: one call at a time per world, its bodies and joints (busy: `KILN_ERROR_INVALID_STATE`).
#[no_mangle]
pub extern "C" fn kiln_joint_destroy(joint: KilnJointId) -> KilnStatus {
    ffi_call("kiln_joint_destroy", || with_joint(joint, |w, key| w.destroy_joint(key)))
}

/// Whether `joint` refers to a live joint of a live world.
///
/// Threads: any thread; waits while another thread is inside the world, and answers
/// false from one of the world's own callbacks (where the world is busy).
#[no_mangle]
pub extern "C" fn kiln_joint_is_valid(joint: KilnJointId) -> bool {
    std::panic::catch_unwind(|| {
        joint_key(joint).is_ok_and(|key| {
            with_world_waiting(joint.world, |entry| Ok(entry.world.joint(key).is_ok())).unwrap_or(false)
        })
    })
    .unwrap_or(false)
}

/// Writes the joint's kind (`KILN_JOINT_*`) to `out_type`.
///
/// Pointers: `out_type` is NULL or writable.
///
/// Threads: one call at a time per world, its bodies and joints (busy: `KILN_ERROR_INVALID_STATE`).
#[no_mangle]
pub unsafe extern "C" fn kiln_joint_get_type(joint: KilnJointId, out_type: *mut u32) -> KilnStatus {
    ffi_call("kiln_joint_get_type", || {
        non_null(out_type, "out_type")?;
        let kind = with_joint(joint, |w, key| {
            Ok(match w.joint(key)?.kind {
                JointType::Spherical(_) => KILN_JOINT_SPHERICAL,
                JointType::Revolute(_) => KILN_JOINT_REVOLUTE,
                JointType::Prismatic(_) => KILN_JOINT_PRISMATIC,
                JointType::Fixed(_) => KILN_JOINT_FIXED,
                JointType::Distance(_) => KILN_JOINT_DISTANCE,
                JointType::SixDof(_) => KILN_JOINT_SIX_DOF,
            })
        })?;
        write_out(out_type, "out_type", kind)
    })
}

/// Writes the joint's two bodies to `out_body_a` and `out_body_b`.
///
/// Pointers: both are NULL or writable.
///
/// Threads: one call at a time per world, its bodies and joints (busy: `KILN_ERROR_INVALID_STATE`).
#[no_mangle]
pub unsafe extern "C" fn kiln_joint_get_bodies(
    joint: KilnJointId,
    out_body_a: *mut KilnBodyId,
    out_body_b: *mut KilnBodyId,
) -> KilnStatus {
    ffi_call("kiln_joint_get_bodies", || {
        non_null(out_body_a, "out_body_a")?;
        non_null(out_body_b, "out_body_b")?;
        let (a, b) = with_joint(joint, |w, key| w.joint(key).map(|d| (d.body_a, d.body_b)))?;
        write_out(out_body_a, "out_body_a", public_body(joint.world, a))?;
        write_out(out_body_b, "out_body_b", public_body(joint.world, b))
    })
}

/// Writes the force (N) and torque (N m) the joint applied to body B in the last
/// step's last substep (world axes): what a break threshold is compared with.
///
/// Pointers: both are NULL or writable.
///
/// Threads: one call at a time per world, its bodies and joints (busy: `KILN_ERROR_INVALID_STATE`).
#[no_mangle]
pub unsafe extern "C" fn kiln_joint_get_reaction(
    joint: KilnJointId,
    out_force: *mut KilnVec3,
    out_torque: *mut KilnVec3,
) -> KilnStatus {
    ffi_call("kiln_joint_get_reaction", || {
        non_null(out_force, "out_force")?;
        non_null(out_torque, "out_torque")?;
        let (force, torque) = with_joint(joint, |w, key| w.joint_reaction(key))?;
        write_out(out_force, "out_force", kvec(force))?;
        write_out(out_torque, "out_torque", kvec(torque))
    })
}

/// Writes the joint's current value to `out_value`: the angle of a revolute joint or
/// the twist of a spherical one (rad), the translation of a prismatic joint or the
/// length of a distance joint (m); 0 for a fixed joint.
///
/// Pointers: `out_value` is NULL or writable.
///
/// Threads: one call at a time per world, its bodies and joints (busy: `KILN_ERROR_INVALID_STATE`).
#[no_mangle]
pub unsafe extern "C" fn kiln_joint_get_value(joint: KilnJointId, out_value: *mut f32) -> KilnStatus {
    ffi_call("kiln_joint_get_value", || {
        non_null(out_value, "out_value")?;
        let value = with_joint(joint, |w, key| w.joint_value(key))?;
        write_out(out_value, "out_value", value)
    })
}

/// Changes the joint's settings through `edit` (refused when the kind has no such
/// setting, or the result is out of range: nothing changes then).
fn edit(joint: KilnJointId, what: &str, edit: impl FnOnce(&mut JointType) -> bool) -> Result<(), Error> {
    let key = joint_key(joint)?;
    with_world(joint.world, |entry| {
        let mut kind = entry.world.joint(key).map_err(|e| joint_error(e, joint, ""))?.kind;
        if !edit(&mut kind) {
            return Err(invalid(format!("this joint's kind has no {what}")));
        }
        entry.world.set_joint_type(key, kind).map_err(|e| joint_error(e, joint, &format!("{what} out of range")))
    })
}

/// Reads the joint's settings through `read` (`None`: the kind has no such setting).
fn read<T>(joint: KilnJointId, what: &str, read: impl FnOnce(&JointType) -> Option<T>) -> Result<T, Error> {
    let kind = with_joint(joint, |w, key| Ok(w.joint(key)?.kind))?;
    read(&kind).ok_or_else(|| invalid(format!("this joint's kind has no {what}")))
}

/// Sets the joint's limits and turns them on or off: the angles of a revolute joint
/// or the twist of a spherical one (rad, -pi to pi), the translations of a
/// prismatic joint, the shortest and longest lengths of a distance joint (m);
/// `lower <= upper`, finite. A fixed joint has none (`KILN_ERROR_INVALID_ARGUMENT`).
/// Wakes the bodies.
///
/// Threads: one call at a time per world, its bodies and joints (busy: `KILN_ERROR_INVALID_STATE`).
#[no_mangle]
pub extern "C" fn kiln_joint_set_limits(joint: KilnJointId, enable: bool, lower: f32, upper: f32) -> KilnStatus {
    ffi_call("kiln_joint_set_limits", || {
        edit(joint, "limits", |kind| match kind {
            JointType::Spherical(s) => {
                (s.enable_twist_limit, s.lower_twist, s.upper_twist) = (enable, lower, upper);
                true
            }
            JointType::Revolute(r) => {
                (r.enable_limit, r.lower, r.upper) = (enable, lower, upper);
                true
            }
            JointType::Prismatic(p) => {
                (p.enable_limit, p.lower, p.upper) = (enable, lower, upper);
                true
            }
            JointType::Distance(d) => {
                (d.enable_limit, d.min_length, d.max_length) = (enable, lower, upper);
                true
            }
            JointType::Fixed(_) | JointType::SixDof(_) => false,
        })
    })
}

/// Writes the joint's limits (as `kiln_joint_set_limits` takes them).
///
/// Pointers: each is NULL or writable.
///
/// Threads: one call at a time per world, its bodies and joints (busy: `KILN_ERROR_INVALID_STATE`).
#[no_mangle]
pub unsafe extern "C" fn kiln_joint_get_limits(
    joint: KilnJointId,
    out_enabled: *mut bool,
    out_lower: *mut f32,
    out_upper: *mut f32,
) -> KilnStatus {
    ffi_call("kiln_joint_get_limits", || {
        non_null(out_enabled, "out_enabled")?;
        non_null(out_lower, "out_lower")?;
        non_null(out_upper, "out_upper")?;
        let (enabled, lower, upper) = read(joint, "limits", |kind| match *kind {
            JointType::Spherical(s) => Some((s.enable_twist_limit, s.lower_twist, s.upper_twist)),
            JointType::Revolute(r) => Some((r.enable_limit, r.lower, r.upper)),
            JointType::Prismatic(p) => Some((p.enable_limit, p.lower, p.upper)),
            JointType::Distance(d) => Some((d.enable_limit, d.min_length, d.max_length)),
            JointType::Fixed(_) | JointType::SixDof(_) => None,
        })?;
        write_out(out_enabled, "out_enabled", enabled)?;
        write_out(out_lower, "out_lower", lower)?;
        write_out(out_upper, "out_upper", upper)
    })
}

/// Sets a spherical joint's swing cone (rad, 0 to pi) and turns it on or off.
/// Other kinds have none (`KILN_ERROR_INVALID_ARGUMENT`). Wakes the bodies.
///
/// Threads: one call at a time per world, its bodies and joints (busy: `KILN_ERROR_INVALID_STATE`).
#[no_mangle]
pub extern "C" fn kiln_joint_set_cone_limit(joint: KilnJointId, enable: bool, angle: f32) -> KilnStatus {
    ffi_call("kiln_joint_set_cone_limit", || {
        edit(joint, "cone limit", |kind| match kind {
            JointType::Spherical(s) => {
                (s.enable_cone_limit, s.cone_angle) = (enable, angle);
                true
            }
            _ => false,
        })
    })
}

/// Writes a spherical joint's swing cone and whether it is on.
///
/// Pointers: each is NULL or writable.
///
/// Threads: one call at a time per world, its bodies and joints (busy: `KILN_ERROR_INVALID_STATE`).
#[no_mangle]
pub unsafe extern "C" fn kiln_joint_get_cone_limit(
    joint: KilnJointId,
    out_enabled: *mut bool,
    out_angle: *mut f32,
) -> KilnStatus {
    ffi_call("kiln_joint_get_cone_limit", || {
        non_null(out_enabled, "out_enabled")?;
        non_null(out_angle, "out_angle")?;
        let (enabled, angle) = read(joint, "cone limit", |kind| match *kind {
            JointType::Spherical(s) => Some((s.enable_cone_limit, s.cone_angle)),
            _ => None,
        })?;
        write_out(out_enabled, "out_enabled", enabled)?;
        write_out(out_angle, "out_angle", angle)
    })
}

/// Sets the joint's motor and turns it on or off: a target speed (rad/s for a
/// revolute joint, m/s for a prismatic one, the spin about frame A's z axis for a
/// spherical one) under a largest torque or force (>= 0). Fixed and distance joints
/// have none (`KILN_ERROR_INVALID_ARGUMENT`). Wakes the bodies.
///
/// Threads: one call at a time per world, its bodies and joints (busy: `KILN_ERROR_INVALID_STATE`).
#[no_mangle]
pub extern "C" fn kiln_joint_set_motor(joint: KilnJointId, enable: bool, speed: f32, max_force: f32) -> KilnStatus {
    ffi_call("kiln_joint_set_motor", || {
        edit(joint, "motor", |kind| match kind {
            JointType::Spherical(s) => {
                (s.enable_motor, s.motor_velocity, s.max_motor_torque) =
                    (enable, Vec3::new(0.0, 0.0, speed), max_force);
                true
            }
            JointType::Revolute(r) => {
                (r.enable_motor, r.motor_speed, r.max_motor_torque) = (enable, speed, max_force);
                true
            }
            JointType::Prismatic(p) => {
                (p.enable_motor, p.motor_speed, p.max_motor_force) = (enable, speed, max_force);
                true
            }
            _ => false,
        })
    })
}

/// Writes the joint's motor (as `kiln_joint_set_motor` takes it; a spherical joint's
/// speed is its target spin's z).
///
/// Pointers: each is NULL or writable.
///
/// Threads: one call at a time per world, its bodies and joints (busy: `KILN_ERROR_INVALID_STATE`).
#[no_mangle]
pub unsafe extern "C" fn kiln_joint_get_motor(
    joint: KilnJointId,
    out_enabled: *mut bool,
    out_speed: *mut f32,
    out_max_force: *mut f32,
) -> KilnStatus {
    ffi_call("kiln_joint_get_motor", || {
        non_null(out_enabled, "out_enabled")?;
        non_null(out_speed, "out_speed")?;
        non_null(out_max_force, "out_max_force")?;
        let (enabled, speed, max) = read(joint, "motor", |kind| match *kind {
            JointType::Spherical(s) => Some((s.enable_motor, s.motor_velocity.z, s.max_motor_torque)),
            JointType::Revolute(r) => Some((r.enable_motor, r.motor_speed, r.max_motor_torque)),
            JointType::Prismatic(p) => Some((p.enable_motor, p.motor_speed, p.max_motor_force)),
            _ => None,
        })?;
        write_out(out_enabled, "out_enabled", enabled)?;
        write_out(out_speed, "out_speed", speed)?;
        write_out(out_max_force, "out_max_force", max)
    })
}

/// Sets the joint's spring and turns it on or off: a frequency (Hz, >= 0) and
/// damping ratio (>= 0) pulling toward `target` (the angle of a revolute joint, the
/// translation of a prismatic one, the rest length of a distance one; a spherical
/// joint's pulls toward aligned frames and takes `target` 0). On a fixed joint it
/// softens both parts (`enable` false: rigid again). Wakes the bodies.
///
/// Threads: one call at a time per world, its bodies and joints (busy: `KILN_ERROR_INVALID_STATE`).
#[no_mangle]
pub extern "C" fn kiln_joint_set_spring(
    joint: KilnJointId,
    enable: bool,
    hertz: f32,
    damping_ratio: f32,
    target: f32,
) -> KilnStatus {
    ffi_call("kiln_joint_set_spring", || {
        // Checked for every kind here: a weld's spring switched off drops the numbers.
        if !(hertz.is_finite() && hertz >= 0.0 && damping_ratio.is_finite() && damping_ratio >= 0.0) {
            return Err(invalid(format!("hertz {hertz} and damping_ratio {damping_ratio} must be finite and >= 0")));
        }
        if read(joint, "spring", |k| Some(matches!(k, JointType::Spherical(_))))? && target != 0.0 {
            return Err(invalid(format!("a spherical joint's spring takes target 0, got {target}")));
        }
        edit(joint, "spring", |kind| {
            match kind {
                JointType::Spherical(s) => (s.enable_spring, s.hertz, s.damping_ratio) = (enable, hertz, damping_ratio),
                JointType::Revolute(r) => {
                    (r.enable_spring, r.hertz, r.damping_ratio, r.target_angle) = (enable, hertz, damping_ratio, target)
                }
                JointType::Prismatic(p) => {
                    (p.enable_spring, p.hertz, p.damping_ratio, p.target_translation) =
                        (enable, hertz, damping_ratio, target)
                }
                JointType::Distance(d) => {
                    (d.enable_spring, d.hertz, d.damping_ratio, d.length) = (enable, hertz, damping_ratio, target)
                }
                JointType::SixDof(_) => return false,
                JointType::Fixed(f) => {
                    let (h, z) = if enable { (hertz, damping_ratio) } else { (0.0, 0.0) };
                    *f = FixedJoint {
                        linear_hertz: h,
                        angular_hertz: h,
                        linear_damping_ratio: z,
                        angular_damping_ratio: z,
                    };
                }
            }
            true
        })
    })
}

/// Writes the joint's spring (as `kiln_joint_set_spring` takes it; a fixed joint's
/// position part).
///
/// Pointers: each is NULL or writable.
///
/// Threads: one call at a time per world, its bodies and joints (busy: `KILN_ERROR_INVALID_STATE`).
#[no_mangle]
pub unsafe extern "C" fn kiln_joint_get_spring(
    joint: KilnJointId,
    out_enabled: *mut bool,
    out_hertz: *mut f32,
    out_damping_ratio: *mut f32,
    out_target: *mut f32,
) -> KilnStatus {
    ffi_call("kiln_joint_get_spring", || {
        non_null(out_enabled, "out_enabled")?;
        non_null(out_hertz, "out_hertz")?;
        non_null(out_damping_ratio, "out_damping_ratio")?;
        non_null(out_target, "out_target")?;
        let (enabled, hertz, damping, target) = read(joint, "spring", |kind| {
            if let JointType::SixDof(_) = kind {
                return None;
            }
            Some(match *kind {
                JointType::Spherical(s) => (s.enable_spring, s.hertz, s.damping_ratio, 0.0),
                JointType::Revolute(r) => (r.enable_spring, r.hertz, r.damping_ratio, r.target_angle),
                JointType::Prismatic(p) => (p.enable_spring, p.hertz, p.damping_ratio, p.target_translation),
                JointType::Distance(d) => (d.enable_spring, d.hertz, d.damping_ratio, d.length),
                JointType::Fixed(f) => (f.linear_hertz > 0.0, f.linear_hertz, f.linear_damping_ratio, 0.0),
                JointType::SixDof(_) => unreachable!("returned above"),
            })
        })?;
        write_out(out_enabled, "out_enabled", enabled)?;
        write_out(out_hertz, "out_hertz", hertz)?;
        write_out(out_damping_ratio, "out_damping_ratio", damping)?;
        write_out(out_target, "out_target", target)
    })
}

/// Lists the joints that broke in the last step, after those destroyed with a body
/// before it, in a deterministic order: writes up to `capacity` events to
/// `out_events` (NULL allowed when `capacity` is 0) and the total to `out_count`.
///
/// Pointers: `out_events` is NULL or writable for `capacity` entries; `out_count` is
/// NULL or writable.
///
/// Threads: one call at a time per world (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_world_get_joint_events(
    world: KilnWorldId,
    out_events: *mut KilnJointEvent,
    capacity: u32,
    out_count: *mut u32,
) -> KilnStatus {
    ffi_call("kiln_world_get_joint_events", || {
        non_null(out_count, "out_count")?;
        // SAFETY: writable for `capacity` entries per the contract.
        let mut out = unsafe { CountedOut::new(out_events, capacity, "out_events")? };
        let count = with_world(world, |entry| {
            for e in entry.world.joint_events() {
                out.push(KilnJointEvent {
                    joint: public_joint(world, e.joint),
                    body_a: public_body(world, e.body_a),
                    body_b: public_body(world, e.body_b),
                    kind: match e.kind {
                        JointEventKind::Broke => KILN_JOINT_EVENT_BROKE,
                        JointEventKind::BodyDestroyed => KILN_JOINT_EVENT_BODY_DESTROYED,
                    },
                });
            }
            Ok(out.count())
        })?;
        write_out(out_count, "out_count", count)
    })
}
