//! The rigid-body world through the C ABI: create a world, give it a voxel terrain,
//! add bodies with shapes, push them, step, and read back transforms, contact events,
//! debug drawing and the per-stage profile.
//!
//! Bodies are named by `KilnBodyId`, which carries its world's handle, so body calls
//! take the body alone (as in Box2D v3). Shapes attached to bodies are copies of
//! `KilnShapeId` shapes; the shape handle may be destroyed afterwards.

use std::ffi::c_void;
use std::mem::size_of;

use kiln_core::math::{Aabb, Isometry, Vec3};
use kiln_core::physics::{
    BodyDef, BodyError, BodyId, ContactPointInfo, DebugDraw, DebugDrawFlags, JointDrawInfo, JointType, MotionType,
    ShapeDef, World, WorldDef,
};
use kiln_core::shapes::Shape;

use crate::abi::{
    ffi_call, non_null, panic_message, read_def, write_out, CountedOut, Error, KilnStatus, KILN_ERROR_INTERNAL,
    KILN_ERROR_INVALID_ARGUMENT, KILN_ERROR_INVALID_HANDLE, KILN_ERROR_INVALID_STATE,
};
use crate::handles::{HandleTable, Lendable};
use crate::runtime::on_runtime;
use crate::runtime::KilnRuntimeId;
use crate::shapes::{shape_of, KilnShapeId};
use crate::terrain::{attach_terrain, detach_terrain, KilnTerrainId};
use crate::types::{check_transform, kvec, vec3, KilnAabb, KilnQuat, KilnTransform, KilnVec3};

/// Handle to a rigid-body world. `{0, 0}` is the null handle. Pass by value.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KilnWorldId {
    /// Slot index plus one (0 means null).
    pub index1: u32,
    /// Slot generation; a destroyed world's handles no longer match.
    pub generation: u32,
}

/// Handle to a body of a world. `{0, 0, {0, 0}}` is the null handle. Pass by value.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KilnBodyId {
    /// Body slot index plus one (0 means null).
    pub index1: u32,
    /// Slot generation; a destroyed body's handles no longer match.
    pub generation: u32,
    /// The world the body lives in.
    pub world: KilnWorldId,
}

/// Never moves; infinite mass (ground, walls).
pub const KILN_MOTION_STATIC: u32 = 0;
/// Moves by its velocity or `kiln_body_set_target_transform`; infinite mass, pushes
/// dynamic bodies, never sleeps.
pub const KILN_MOTION_KINEMATIC: u32 = 1;
/// Moves by gravity, forces and contacts.
pub const KILN_MOTION_DYNAMIC: u32 = 2;

/// Largest coordinate of a body position or force point, in metres.
pub const KILN_WORLD_MAX_COORDINATE: f32 = 1.0e7;
/// Largest linear speed (m/s) or angular speed (rad/s) a body may be given.
pub const KILN_WORLD_MAX_SPEED: f32 = 1.0e5;
/// Longest step, in seconds.
pub const KILN_WORLD_MAX_STEP: f32 = 1.0;

/// How a world is built and stepped. Initialise with `kiln_default_world_def()`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KilnWorldDef {
    /// `sizeof(KilnWorldDef)`, set by `kiln_default_world_def()`.
    pub struct_size: u32,
    /// Gravity in m/s² (finite). Default (0, -9.81, 0).
    pub gravity: KilnVec3,
    /// Solver substeps per step, 1 to 64. Default 4.
    pub substeps: u32,
    /// Contact stiffness in Hz (capped at a quarter of the substep rate). Default 30.
    pub contact_hertz: f32,
    /// Contact damping ratio. Default 10.
    pub contact_damping_ratio: f32,
    /// Fastest push out of overlap, m/s. Default 3.
    pub contact_push_out: f32,
    /// Approach speed below which contacts do not bounce, m/s. Default 1.
    pub restitution_threshold: f32,
    /// A body slower than this (m/s, rotation included) counts as resting. Default 0.05.
    pub sleep_threshold: f32,
    /// Seconds an island must rest before it sleeps. Default 0.5.
    pub time_to_sleep: f32,
    /// Islands of resting bodies sleep (cost nothing per step). Default true.
    pub enable_sleep: bool,
    /// Time of impact against static geometry for fast and bullet bodies. Default true.
    pub enable_continuous: bool,
    /// Friction of the voxel terrain's surface. Default 0.6.
    pub terrain_friction: f32,
    /// Approach speed (m/s, finite, >= 0) above which a contact of a shape with
    /// `enable_hit_events` is reported by `kiln_world_get_contact_hit_events`.
    /// Default 1.
    pub hit_event_threshold: f32,
    /// Density of the voxel terrain's water, kg/m³ (0 to
    /// `KILN_WORLD_MAX_WATER_DENSITY`): bodies in water voxels are lifted by the weight
    /// of the water they displace, so a body lighter than this floats. 0 turns
    /// buoyancy, water drag and water events off. Default 1000.
    pub water_density: f32,
    /// Drag coefficient of bodies moving through water (0 to
    /// `KILN_WORLD_MAX_WATER_DRAG`): the force is ½ ρ C A v² over the wetted part of
    /// the body's box facing the motion, linear in the speed below 1 m/s.
    /// Default 0.5.
    pub water_linear_drag: f32,
    /// Angular drag of bodies in water (0 to `KILN_WORLD_MAX_WATER_DRAG`; per second,
    /// scaled by mass, submerged share and size²). Default 0.05.
    pub water_angular_drag: f32,
}

/// Densest water a world takes, kg/m³ (mercury is 13,600).
pub const KILN_WORLD_MAX_WATER_DENSITY: f32 = 1.0e5;
/// Largest water drag coefficient a world takes.
pub const KILN_WORLD_MAX_WATER_DRAG: f32 = 1.0e3;

/// How a body is created. Initialise with `kiln_default_body_def()`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KilnBodyDef {
    /// `sizeof(KilnBodyDef)`, set by `kiln_default_body_def()`.
    pub struct_size: u32,
    /// `KILN_MOTION_STATIC`, `KILN_MOTION_KINEMATIC` or `KILN_MOTION_DYNAMIC` (default).
    pub motion_type: u32,
    /// Placement of the body's frame (its shapes are placed in it). Default identity.
    pub transform: KilnTransform,
    /// Initial velocity, m/s. Default zero.
    pub linear_velocity: KilnVec3,
    /// Initial angular velocity, rad/s. Default zero.
    pub angular_velocity: KilnVec3,
    /// Per-second velocity damping (>= 0): `v *= 1 / (1 + dt * damping)`. Default 0.
    pub linear_damping: f32,
    /// Per-second angular damping (>= 0). Default 0.05.
    pub angular_damping: f32,
    /// Multiplies gravity for this body (finite). Default 1.
    pub gravity_scale: f32,
    /// `false`: the body never sleeps (and keeps its island awake). Default true.
    pub allow_sleep: bool,
    /// Fast and small: continuous collision against static geometry at any speed.
    /// Default false.
    pub bullet: bool,
    /// Returned by `kiln_body_get_user_data`; Kiln never touches it. Default NULL.
    pub user_data: *mut c_void,
}

/// How a shape is attached to a body. Initialise with `kiln_default_shape_def()`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KilnShapeDef {
    /// `sizeof(KilnShapeDef)`, set by `kiln_default_shape_def()`.
    pub struct_size: u32,
    /// Placement in the body's frame (offset within `KILN_SHAPE_MAX_EXTENT`). Default identity.
    pub pose: KilnTransform,
    /// kg/m³ (finite, >= 0); gives dynamic bodies their mass. Default 1000.
    pub density: f32,
    /// Coulomb friction (finite, >= 0). Default 0.6.
    pub friction: f32,
    /// Bounciness, 0 to 1. Default 0.
    pub restitution: f32,
    /// Rolling resistance (finite, >= 0): brakes rolling spheres and capsules by a
    /// torque of at most `rolling_resistance * radius * normal force`. Default 0.
    pub rolling_resistance: f32,
    /// Collision category bits. Default 1.
    pub category: u32,
    /// Categories this shape collides with; two shapes collide when each one's
    /// category meets the other's mask. Default all.
    pub mask: u32,
    /// A sensor (trigger): it touches nothing and reports the shapes that begin and
    /// end overlapping it (`kiln_world_get_sensor_events`); queries skip it unless
    /// their filter has `KILN_QUERY_SENSORS`. Its density still counts. Default false.
    pub is_sensor: bool,
    /// Report this shape's contacts that strike faster than the world's
    /// `hit_event_threshold` (`kiln_world_get_contact_hit_events`). Default false.
    pub enable_hit_events: bool,
}

/// A contact that began or ended in the last step, from
/// `kiln_world_get_contact_events`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KilnContactEvent {
    /// The first body.
    pub body_a: KilnBodyId,
    /// The second body, or the null handle when A touches the voxel terrain.
    pub body_b: KilnBodyId,
    /// Index of A's shape (in the order shapes were added).
    pub shape_a: u32,
    /// Index of B's shape, or `UINT32_MAX` for the terrain.
    pub shape_b: u32,
    /// `true`: the shapes started touching; `false`: they stopped (or one was
    /// destroyed).
    pub begin: bool,
}

/// A contact point of the last step, for debug drawing.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct KilnWorldContact {
    /// The first body.
    pub body_a: KilnBodyId,
    /// The second body, or the null handle for the terrain.
    pub body_b: KilnBodyId,
    /// World position of the point.
    pub point: KilnVec3,
    /// Unit normal from A to B.
    pub normal: KilnVec3,
    /// Gap at the start of the step, metres (negative: overlap).
    pub separation: f32,
    /// Normal impulse the solver applied, N s.
    pub normal_impulse: f32,
}

/// Wall-clock milliseconds of the last step's stages, from `kiln_world_get_profile`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct KilnWorldProfile {
    /// Terrain chunk regeneration, shape boxes into the dynamic tree, new pairs, body-
    /// chunk terrain contacts and chunk meshes.
    pub broadphase_ms: f32,
    /// Contact manifolds of every touching pair and terrain contact (parallel).
    pub narrowphase_ms: f32,
    /// Constraint rows; graph colouring, beside the warm-start cache and the contact
    /// events on another worker.
    pub prepare_ms: f32,
    /// The substepped soft solver (parallel per colour).
    pub solve_ms: f32,
    /// Time of impact for fast bodies against static geometry.
    pub continuous_ms: f32,
    /// Islands and sleeping.
    pub sleep_ms: f32,
    /// The whole step.
    pub total_ms: f32,
}

/// What the last step handled, from `kiln_world_get_counters`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KilnWorldCounters {
    /// Live bodies (all motion types).
    pub body_count: u32,
    /// Awake dynamic and kinematic bodies.
    pub awake_body_count: u32,
    /// Broadphase pairs (fat boxes overlapping).
    pub pair_count: u32,
    /// Contact constraints solved (manifolds).
    pub constraint_count: u32,
    /// Contact points solved.
    pub contact_point_count: u32,
    /// Graph colours used.
    pub color_count: u32,
    /// Constraints in the overflow colour (solved on one thread).
    pub overflow_constraint_count: u32,
    /// Sleeping islands.
    pub sleeping_island_count: u32,
    /// Bodies the continuous stage stopped at a time of impact.
    pub continuous_hit_count: u32,
    /// Pairs that kept last step's contact manifold (they had hardly moved).
    pub reused_pair_count: u32,
    /// Hull pairs (a hull with a hull, a box or a terrain triangle) given the
    /// whole separating-axis test.
    pub hull_pair_full_count: u32,
    /// Hull pairs that the axis which separated them at their last test still
    /// kept apart: decided by one or two support searches.
    pub hull_pair_cached_count: u32,
    /// Hull pairs kept apart without any search: their bounding spheres or boxes
    /// lie farther apart than the contact margin, or they were apart along a face by
    /// more than they can have moved since.
    pub hull_pair_skipped_count: u32,
}

/// Handle to a joint of a world. `{0, 0, {0, 0}}` is the null handle. Pass by value.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KilnJointId {
    /// Joint slot index plus one (0 means null).
    pub index1: u32,
    /// Slot generation; a destroyed joint's handles no longer match.
    pub generation: u32,
    /// The world the joint lives in.
    pub world: KilnWorldId,
}

/// A joint as debug drawing reports it: its frames in the world (anchors at their
/// origins, the joint's axis along their z) and its limits.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KilnJointDraw {
    /// The joint.
    pub joint: KilnJointId,
    /// Its bodies.
    pub body_a: KilnBodyId,
    /// See `body_a`.
    pub body_b: KilnBodyId,
    /// `KILN_JOINT_*`.
    pub joint_type: u32,
    /// The joint's frame on body A, in the world.
    pub frame_a: KilnTransform,
    /// The joint's frame on body B, in the world.
    pub frame_b: KilnTransform,
    /// Whether the limits below are on (as `kiln_joint_get_limits` reports them:
    /// angles, twists, translations or lengths).
    pub limit_enabled: bool,
    /// Lower limit.
    pub lower: f32,
    /// Upper limit.
    pub upper: f32,
    /// Whether a spherical joint's swing cone is on.
    pub cone_enabled: bool,
    /// The cone's half angle (rad).
    pub cone_angle: f32,
}

/// Draws a joint.
pub type KilnDrawJointFn = Option<unsafe extern "C" fn(joint: *const KilnJointDraw, user_context: *mut c_void)>;

/// Draws one shape of a body: `transform` places the shape (its pose included);
/// `shape` is the handle it was added with; `color` is `0xRRGGBB` by state
/// (`KILN_COLOR_*`).
pub type KilnDrawShapeFn = Option<
    unsafe extern "C" fn(
        body: KilnBodyId,
        shape_index: u32,
        shape: KilnShapeId,
        transform: *const KilnTransform,
        color: u32,
        user_context: *mut c_void,
    ),
>;
/// Draws a box (a shape's fat broadphase box, or a tree node at `depth`, root 0).
pub type KilnDrawBoxFn =
    Option<unsafe extern "C" fn(aabb: *const KilnAabb, color_or_depth: u32, user_context: *mut c_void)>;
/// Draws a contact point.
pub type KilnDrawContactFn = Option<unsafe extern "C" fn(contact: *const KilnWorldContact, user_context: *mut c_void)>;

/// Colour of static bodies' shapes in debug drawing.
pub const KILN_COLOR_STATIC: u32 = 0x80_80_80;
/// Colour of kinematic bodies' shapes.
pub const KILN_COLOR_KINEMATIC: u32 = 0x4d_99_e6;
/// Colour of awake dynamic bodies' shapes.
pub const KILN_COLOR_AWAKE: u32 = 0xe6_b3_4d;
/// Colour of sleeping dynamic bodies' shapes.
pub const KILN_COLOR_SLEEPING: u32 = 0x59_59_99;
/// Colour of fat broadphase boxes.
pub const KILN_COLOR_AABB: u32 = 0xe6_4d_e6;

/// Debug-draw callbacks for `kiln_world_debug_draw`. Initialise with
/// `kiln_default_debug_draw()` (everything off), then set the callbacks you draw
/// with; a NULL callback draws nothing. Callbacks run on the calling thread, during
/// the call; they must not call back into the same world.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct KilnDebugDraw {
    /// `sizeof(KilnDebugDraw)`, set by `kiln_default_debug_draw()`.
    pub struct_size: u32,
    /// Every shape of every body: awake bodies first, then static and sleeping ones.
    pub draw_shape: KilnDrawShapeFn,
    /// Every shape's fat broadphase box (`color_or_depth` is `KILN_COLOR_AABB`).
    pub draw_aabb: KilnDrawBoxFn,
    /// Every contact point the last step solved.
    pub draw_contact: KilnDrawContactFn,
    /// Every node of the broadphase tree, parents first (`color_or_depth` is the
    /// node's depth).
    pub draw_tree_node: KilnDrawBoxFn,
    /// Passed to every callback.
    pub user_context: *mut c_void,
    /// Every joint, in handle order, after everything else.
    pub draw_joint: KilnDrawJointFn,
}

/// A world behind a handle, with what the C side attached to its bodies.
pub(crate) struct WorldEntry {
    pub(crate) world: Lendable<World>,
    id: KilnWorldId,
    terrain: Option<KilnTerrainId>,
    /// Per body slot: user data and the shape handles given to `kiln_body_add_shape`.
    user_data: Vec<usize>,
    shape_ids: Vec<Vec<KilnShapeId>>,
}

// SAFETY: `user_data` holds opaque addresses the world never dereferences; everything
// else is owned Rust data.
unsafe impl Send for WorldEntry {}

pub(crate) static WORLDS: HandleTable<WorldEntry> = HandleTable::new("world");

pub(crate) fn with_world<R>(id: KilnWorldId, f: impl FnOnce(&mut WorldEntry) -> Result<R, Error>) -> Result<R, Error> {
    WORLDS.with(id.index1, id.generation, f)
}

/// Runs a short read `f` on the world, waiting while another thread is inside it
/// (busy only for a call from one of the world's own callbacks).
pub(crate) fn with_world_waiting<R>(
    id: KilnWorldId,
    f: impl FnOnce(&mut WorldEntry) -> Result<R, Error>,
) -> Result<R, Error> {
    WORLDS.with_wait(id.index1, id.generation, f)
}

/// Runs `f` on the terrain a world holds (for calls made through the terrain's own
/// handle while it is attached).
pub(crate) fn with_world_terrain<R>(
    id: KilnWorldId,
    f: impl FnOnce(&mut World) -> Result<R, Error>,
) -> Result<R, Error> {
    with_world(id, |entry| f(&mut entry.world))
}

pub(crate) fn body_error(error: BodyError, body: KilnBodyId, what: &str) -> Error {
    match error {
        BodyError::InvalidBody => Error::new(
            KILN_ERROR_INVALID_HANDLE,
            format!("body handle {{{}, {}}} is stale or was never issued", body.index1, body.generation),
        ),
        BodyError::InvalidArgument => Error::new(KILN_ERROR_INVALID_ARGUMENT, what.to_owned()),
        BodyError::OutOfOrder | BodyError::SnapshotMismatch => Error::new(KILN_ERROR_INVALID_STATE, error.to_string()),
        BodyError::InvalidJoint => Error::new(KILN_ERROR_INVALID_HANDLE, error.to_string()),
    }
}

pub(crate) fn body_key(body: KilnBodyId) -> Result<BodyId, Error> {
    match body.index1.checked_sub(1) {
        Some(index) => Ok(BodyId { index, generation: body.generation }),
        None => Err(Error::new(KILN_ERROR_INVALID_HANDLE, "the null body handle")),
    }
}

/// Runs `f` on the body's world with the body's key; stale bodies are refused first.
pub(crate) fn with_body<R>(
    body: KilnBodyId,
    f: impl FnOnce(&mut WorldEntry, BodyId) -> Result<R, Error>,
) -> Result<R, Error> {
    let key = body_key(body)?;
    with_world(body.world, |entry| {
        if !entry.world.bodies().is_valid(key) {
            return Err(body_error(BodyError::InvalidBody, body, ""));
        }
        f(entry, key)
    })
}

/// Checks that `body` is live and returns its key (for other modules).
pub(crate) fn live_body(body: KilnBodyId) -> Result<BodyId, Error> {
    with_body(body, |_, key| Ok(key))
}

/// Runs `f` on the world behind `id` (for other modules: the tracer's body mirror).
pub(crate) fn with_world_state<R>(id: KilnWorldId, f: impl FnOnce(&World) -> Result<R, Error>) -> Result<R, Error> {
    with_world(id, |entry| f(&entry.world))
}

pub(crate) fn public_body(world: KilnWorldId, id: BodyId) -> KilnBodyId {
    KilnBodyId { index1: id.index + 1, generation: id.generation, world }
}

pub(crate) fn ktransform(xf: &Isometry) -> KilnTransform {
    let q = xf.rotation;
    KilnTransform { position: kvec(xf.translation), rotation: KilnQuat { x: q.x, y: q.y, z: q.z, w: q.w } }
}

fn kaabb(b: &Aabb) -> KilnAabb {
    KilnAabb { min: kvec(b.min), max: kvec(b.max) }
}

/// A transform argument: finite, unit rotation, within `KILN_WORLD_MAX_COORDINATE`.
pub(crate) fn check_placement(t: &KilnTransform, name: &str) -> Result<Isometry, Error> {
    let xf = check_transform(t, name)?;
    if xf.translation.abs().max_element() > KILN_WORLD_MAX_COORDINATE {
        return Err(Error::new(
            KILN_ERROR_INVALID_ARGUMENT,
            format!("`{name}` position {:?} is farther than KILN_WORLD_MAX_COORDINATE from the origin", t.position),
        ));
    }
    Ok(xf)
}

fn check_vector(v: KilnVec3, limit: f32, name: &str, limit_name: &str) -> Result<Vec3, Error> {
    let x = vec3(v);
    if !x.is_finite() || x.length() > limit {
        return Err(Error::new(
            KILN_ERROR_INVALID_ARGUMENT,
            format!("`{name}` {v:?} must be finite and no longer than {limit_name}"),
        ));
    }
    Ok(x)
}

fn check_finite(v: KilnVec3, name: &str) -> Result<Vec3, Error> {
    check_vector(v, f32::MAX, name, "FLT_MAX")
}

fn world_def(d: &KilnWorldDef) -> Result<WorldDef, Error> {
    let def = WorldDef {
        gravity: vec3(d.gravity),
        substeps: d.substeps,
        contact_hertz: d.contact_hertz,
        contact_damping_ratio: d.contact_damping_ratio,
        contact_push_out: d.contact_push_out,
        restitution_threshold: d.restitution_threshold,
        sleep_threshold: d.sleep_threshold,
        time_to_sleep: d.time_to_sleep,
        enable_sleep: d.enable_sleep,
        enable_continuous: d.enable_continuous,
        terrain_friction: d.terrain_friction,
        hit_event_threshold: d.hit_event_threshold,
        water_density: d.water_density,
        water_linear_drag: d.water_linear_drag,
        water_angular_drag: d.water_angular_drag,
    };
    if !def.is_valid() {
        return Err(Error::new(
            KILN_ERROR_INVALID_ARGUMENT,
            format!(
                "def {d:?} is invalid: gravity must be finite, substeps 1..=64, every other number finite and >= 0, \
                 water_density at most KILN_WORLD_MAX_WATER_DENSITY and the water drags at most KILN_WORLD_MAX_WATER_DRAG"
            ),
        ));
    }
    Ok(def)
}

fn body_def(d: &KilnBodyDef) -> Result<BodyDef, Error> {
    let motion = match d.motion_type {
        KILN_MOTION_STATIC => MotionType::Static,
        KILN_MOTION_KINEMATIC => MotionType::Kinematic,
        KILN_MOTION_DYNAMIC => MotionType::Dynamic,
        other => {
            return Err(Error::new(
                KILN_ERROR_INVALID_ARGUMENT,
                format!("def->motion_type is {other}, must be one of the KILN_MOTION_* constants"),
            ))
        }
    };
    let numbers = [("linear_damping", d.linear_damping), ("angular_damping", d.angular_damping)];
    for (name, x) in numbers {
        if !(x.is_finite() && x >= 0.0) {
            return Err(Error::new(
                KILN_ERROR_INVALID_ARGUMENT,
                format!("def->{name} is {x}, must be finite and >= 0"),
            ));
        }
    }
    if !d.gravity_scale.is_finite() {
        return Err(Error::new(
            KILN_ERROR_INVALID_ARGUMENT,
            format!("def->gravity_scale is {}, must be finite", d.gravity_scale),
        ));
    }
    Ok(BodyDef {
        motion,
        transform: check_placement(&d.transform, "def->transform")?,
        linear_velocity: check_vector(
            d.linear_velocity,
            KILN_WORLD_MAX_SPEED,
            "def->linear_velocity",
            "KILN_WORLD_MAX_SPEED",
        )?,
        angular_velocity: check_vector(
            d.angular_velocity,
            KILN_WORLD_MAX_SPEED,
            "def->angular_velocity",
            "KILN_WORLD_MAX_SPEED",
        )?,
        linear_damping: d.linear_damping,
        angular_damping: d.angular_damping,
        gravity_scale: d.gravity_scale,
        allow_sleep: d.allow_sleep,
        bullet: d.bullet,
    })
}

fn shape_def(d: &KilnShapeDef) -> Result<ShapeDef, Error> {
    let def = ShapeDef {
        pose: check_placement(&d.pose, "def->pose")?,
        density: d.density,
        friction: d.friction,
        restitution: d.restitution,
        rolling_resistance: d.rolling_resistance,
        category: d.category,
        mask: d.mask,
        sensor: d.is_sensor,
        hit_events: d.enable_hit_events,
    };
    if !def.is_valid() {
        return Err(Error::new(
            KILN_ERROR_INVALID_ARGUMENT,
            format!(
                "def {d:?} is invalid: density, friction and rolling_resistance must be finite and >= 0, \
                 restitution in [0, 1], the pose's offset within KILN_SHAPE_MAX_EXTENT"
            ),
        ));
    }
    Ok(def)
}

/// A `KilnWorldDef` with defaults: Earth gravity along -Y, 4 substeps, sleeping and
/// continuous collision on, fresh water (1000 kg/m³) in the terrain's water voxels.
///
/// Threads: any thread, at any time.
#[no_mangle]
pub extern "C" fn kiln_default_world_def() -> KilnWorldDef {
    let d = WorldDef::default();
    KilnWorldDef {
        struct_size: size_of::<KilnWorldDef>() as u32,
        gravity: kvec(d.gravity),
        substeps: d.substeps,
        contact_hertz: d.contact_hertz,
        contact_damping_ratio: d.contact_damping_ratio,
        contact_push_out: d.contact_push_out,
        restitution_threshold: d.restitution_threshold,
        sleep_threshold: d.sleep_threshold,
        time_to_sleep: d.time_to_sleep,
        enable_sleep: d.enable_sleep,
        enable_continuous: d.enable_continuous,
        terrain_friction: d.terrain_friction,
        hit_event_threshold: d.hit_event_threshold,
        water_density: d.water_density,
        water_linear_drag: d.water_linear_drag,
        water_angular_drag: d.water_angular_drag,
    }
}

/// A `KilnBodyDef` with defaults: a dynamic body at the origin, at rest, allowed to
/// sleep.
///
/// Threads: any thread, at any time.
#[no_mangle]
pub extern "C" fn kiln_default_body_def() -> KilnBodyDef {
    let d = BodyDef::default();
    KilnBodyDef {
        struct_size: size_of::<KilnBodyDef>() as u32,
        motion_type: KILN_MOTION_DYNAMIC,
        transform: ktransform(&d.transform),
        linear_velocity: kvec(d.linear_velocity),
        angular_velocity: kvec(d.angular_velocity),
        linear_damping: d.linear_damping,
        angular_damping: d.angular_damping,
        gravity_scale: d.gravity_scale,
        allow_sleep: d.allow_sleep,
        bullet: d.bullet,
        user_data: std::ptr::null_mut(),
    }
}

/// A `KilnShapeDef` with defaults: identity pose, density 1000 (water), friction
/// 0.6, no bounce, colliding with everything.
///
/// Threads: any thread, at any time.
#[no_mangle]
pub extern "C" fn kiln_default_shape_def() -> KilnShapeDef {
    let d = ShapeDef::default();
    KilnShapeDef {
        struct_size: size_of::<KilnShapeDef>() as u32,
        pose: ktransform(&d.pose),
        density: d.density,
        friction: d.friction,
        restitution: d.restitution,
        rolling_resistance: d.rolling_resistance,
        category: d.category,
        mask: d.mask,
        is_sensor: d.sensor,
        enable_hit_events: d.hit_events,
    }
}

/// A `KilnDebugDraw` with every callback NULL.
///
/// Threads: any thread, at any time.
#[no_mangle]
pub extern "C" fn kiln_default_debug_draw() -> KilnDebugDraw {
    KilnDebugDraw {
        struct_size: size_of::<KilnDebugDraw>() as u32,
        draw_shape: None,
        draw_aabb: None,
        draw_contact: None,
        draw_tree_node: None,
        user_context: std::ptr::null_mut(),
        draw_joint: None,
    }
}

/// Creates an empty world and writes its handle to `out_world`.
///
/// Pointers: `def` and `out_world` are NULL or valid for reading / writing.
///
/// Threads: any thread, at any time.
#[no_mangle]
pub unsafe extern "C" fn kiln_world_create(def: *const KilnWorldDef, out_world: *mut KilnWorldId) -> KilnStatus {
    ffi_call("kiln_world_create", || {
        let def = non_null(def, "def")?;
        let out = non_null(out_world, "out_world")?;
        // SAFETY: non-null; readable per the contract.
        let def = world_def(&unsafe { read_def(def, "def")? })?;
        let world = World::try_new(def).map_err(|e| body_error(e, KilnBodyId::default(), "invalid def"))?;
        let entry = WorldEntry {
            world: Lendable::new(world),
            id: KilnWorldId::default(),
            terrain: None,
            user_data: Vec::new(),
            shape_ids: Vec::new(),
        };
        let (index1, generation) = WORLDS.insert(entry);
        let id = KilnWorldId { index1, generation };
        with_world(id, |entry| {
            entry.id = id;
            Ok(())
        })?;
        // SAFETY: non-null and writable per the contract.
        unsafe { out.cast_mut().write(id) };
        Ok(())
    })
}

/// Destroys a world and all its bodies; their handles become invalid. An attached
/// terrain is detached and stays alive (its handle keeps working).
///
/// Threads: one call at a time per world (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub extern "C" fn kiln_world_destroy(world: KilnWorldId) -> KilnStatus {
    ffi_call("kiln_world_destroy", || {
        let entry = WORLDS.remove(world.index1, world.generation)?;
        let mut entry = entry.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(terrain) = entry.terrain.take() {
            if let Some(t) = entry.world.take_terrain() {
                detach_terrain(terrain, t)?;
            }
        }
        Ok(())
    })
}

/// Whether `world` refers to a live world.
///
/// Threads: any thread, at any time; never busy.
#[no_mangle]
pub extern "C" fn kiln_world_is_valid(world: KilnWorldId) -> bool {
    std::panic::catch_unwind(|| WORLDS.is_valid(world.index1, world.generation)).unwrap_or(false)
}

/// Gives the world a voxel terrain to collide with, or takes it away with the null
/// handle `{0, 0}`. The terrain is lent, not copied: its handle keeps working for
/// edits, queries and ray casts, and edits under sleeping bodies wake them (at
/// `kiln_terrain_regenerate` or the next step, whichever comes first). A terrain
/// serves one world at a time (`KILN_ERROR_INVALID_STATE` otherwise), and cannot be
/// destroyed while attached. Replacing or removing a terrain ends its contacts and
/// wakes every island. The terrain's voxels when attached are the base world
/// snapshots record its edits against (`kiln_world_save`).
///
/// Threads: one call at a time per world (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub extern "C" fn kiln_world_set_terrain(world: KilnWorldId, terrain: KilnTerrainId) -> KilnStatus {
    ffi_call("kiln_world_set_terrain", || {
        with_world(world, |entry| {
            if entry.terrain == Some(terrain) {
                return Ok(());
            }
            let taken = if terrain == KilnTerrainId::default() { None } else { Some(attach_terrain(terrain, world)?) };
            if let Some(old) = entry.terrain.take() {
                if let Some(t) = entry.world.take_terrain() {
                    detach_terrain(old, t)?;
                }
            }
            if let Some(t) = taken {
                entry.world.set_terrain(t);
                entry.terrain = Some(terrain);
            }
            Ok(())
        })
    })
}

/// Advances the world by `dt` seconds (finite, 0 to `KILN_WORLD_MAX_STEP`; 0 updates
/// contacts without moving anything) with jobs on `runtime`'s workers, or on the
/// calling thread for the null runtime `{0, 0}`. The result is bit-identical for any
/// worker count. Must not be called from one of the runtime's own passes.
///
/// Threads: one call at a time per world (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub extern "C" fn kiln_world_step(world: KilnWorldId, runtime: KilnRuntimeId, dt: f32) -> KilnStatus {
    ffi_call("kiln_world_step", || {
        if !(dt.is_finite() && (0.0..=KILN_WORLD_MAX_STEP).contains(&dt)) {
            return Err(Error::new(
                KILN_ERROR_INVALID_ARGUMENT,
                format!("dt is {dt}, must be finite and within 0..=KILN_WORLD_MAX_STEP"),
            ));
        }
        with_world(world, |entry| {
            on_runtime(runtime, |jobs| {
                entry.world.step(dt, jobs).map_err(|e| body_error(e, KilnBodyId::default(), "invalid dt"))
            })
        })
    })
}

/// Turns sleeping on or off; turning it off wakes every sleeping island.
///
/// Threads: one call at a time per world (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub extern "C" fn kiln_world_set_sleep_enabled(world: KilnWorldId, enabled: bool) -> KilnStatus {
    ffi_call("kiln_world_set_sleep_enabled", || {
        with_world(world, |entry| {
            entry.world.set_sleep_enabled(enabled);
            Ok(())
        })
    })
}

/// Checks every internal invariant of the world: its body sets and handles, each
/// shape's proxy in the broadphase tree, the tree itself, the sleeping islands and the
/// lent terrain's mesh cache. O(bodies); for tests, fuzzing and bug reports.
/// `KILN_ERROR_INTERNAL` (with the broken invariant in the last error message) means a
/// Kiln bug: please report it with the calls that led there.
///
/// Threads: one call at a time per world (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub extern "C" fn kiln_world_validate(world: KilnWorldId) -> KilnStatus {
    ffi_call("kiln_world_validate", || {
        with_world_state(world, |w| {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| w.validate())).map_err(|payload| {
                Error::new(KILN_ERROR_INTERNAL, format!("broken invariant: {}", panic_message(payload.as_ref())))
            })
        })
    })
}

/// Writes the last step's per-stage wall-clock times to `out_profile`.
///
/// Pointers: `out_profile` is NULL or valid for writing.
///
/// Threads: one call at a time per world (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_world_get_profile(world: KilnWorldId, out_profile: *mut KilnWorldProfile) -> KilnStatus {
    ffi_call("kiln_world_get_profile", || {
        non_null(out_profile, "out_profile")?;
        let p = with_world(world, |entry| Ok(entry.world.profile()))?;
        write_out(
            out_profile,
            "out_profile",
            KilnWorldProfile {
                broadphase_ms: p.broadphase,
                narrowphase_ms: p.narrowphase,
                prepare_ms: p.prepare,
                solve_ms: p.solve,
                continuous_ms: p.continuous,
                sleep_ms: p.sleep,
                total_ms: p.total,
            },
        )
    })
}

/// Writes the world's body counts and the last step's work counts to `out_counters`.
///
/// Pointers: `out_counters` is NULL or valid for writing.
///
/// Threads: one call at a time per world (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_world_get_counters(
    world: KilnWorldId,
    out_counters: *mut KilnWorldCounters,
) -> KilnStatus {
    ffi_call("kiln_world_get_counters", || {
        non_null(out_counters, "out_counters")?;
        let counters = with_world(world, |entry| {
            let c = entry.world.counters();
            Ok(KilnWorldCounters {
                body_count: entry.world.bodies().len() as u32,
                awake_body_count: entry.world.awake_count() as u32,
                pair_count: c.pairs,
                constraint_count: c.constraints,
                contact_point_count: c.contact_points,
                color_count: c.colors,
                overflow_constraint_count: c.overflow_constraints,
                sleeping_island_count: c.sleeping_groups,
                continuous_hit_count: c.continuous_hits,
                reused_pair_count: c.reused_pairs,
                hull_pair_full_count: c.sat_full,
                hull_pair_cached_count: c.sat_cached,
                hull_pair_skipped_count: c.sat_skipped,
            })
        })?;
        write_out(out_counters, "out_counters", counters)
    })
}

/// Lists the contacts that began or ended in the last step, in a deterministic order
/// (end events of bodies destroyed before the step first, then by shape pair): writes
/// up to `capacity` events to `out_events` (NULL allowed when `capacity` is 0) and
/// the total to `out_count`, so a call with capacity 0 sizes the array.
///
/// Pointers: `out_events` is NULL or writable for `capacity` entries; `out_count` is
/// NULL or writable.
///
/// Threads: one call at a time per world (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_world_get_contact_events(
    world: KilnWorldId,
    out_events: *mut KilnContactEvent,
    capacity: u32,
    out_count: *mut u32,
) -> KilnStatus {
    ffi_call("kiln_world_get_contact_events", || {
        let out_count = non_null(out_count, "out_count")?;
        // SAFETY: writable for `capacity` entries per the contract.
        let mut out = unsafe { CountedOut::new(out_events, capacity, "out_events")? };
        let count = with_world(world, |entry| {
            for e in entry.world.contact_events() {
                out.push(KilnContactEvent {
                    body_a: public_body(world, e.body_a),
                    body_b: e.body_b.map(|b| public_body(world, b)).unwrap_or_default(),
                    shape_a: e.shape_a,
                    shape_b: e.shape_b,
                    begin: e.begin,
                });
            }
            Ok(out.count())
        })?;
        // SAFETY: non-null and writable per the contract.
        unsafe { out_count.cast_mut().write(count) };
        Ok(())
    })
}

/// An output column of a strided array: `count` elements of `N` floats, `stride` bytes
/// apart (0: packed).
struct Strided<const N: usize> {
    ptr: *mut f32,
    stride: usize,
}

impl<const N: usize> Strided<N> {
    fn new(ptr: *mut f32, stride: usize, name: &str) -> Result<Option<Strided<N>>, Error> {
        if ptr.is_null() {
            return Ok(None);
        }
        let stride = if stride == 0 { N * 4 } else { stride };
        if stride < N * 4 || stride % 4 != 0 || !(ptr as usize).is_multiple_of(4) {
            return Err(Error::new(
                KILN_ERROR_INVALID_ARGUMENT,
                format!(
                    "`{name}` must be 4-byte aligned with a stride of 0 (packed) or a multiple of 4 of at least {} \
                     bytes, got stride {stride}",
                    N * 4
                ),
            ));
        }
        Ok(Some(Strided { ptr, stride }))
    }

    /// # Safety
    /// Element `i` is writable (the caller's contract for `count` elements).
    unsafe fn write(&self, i: usize, value: [f32; N]) {
        // SAFETY: in bounds and aligned per the contract and `new`'s checks.
        unsafe { self.ptr.cast::<u8>().add(i * self.stride).cast::<[f32; N]>().write_unaligned(value) };
    }
}

/// Bulk read-back for rendering: for each of the `count` bodies in `bodies`, writes
/// the body frame's position (x, y, z) to `positions` and rotation (x, y, z, w) to
/// `rotations`, element `i` at byte offset `i * stride` (stride 0: packed, 12 and 16
/// bytes). Either array may be NULL to skip it. Every handle is checked before
/// anything is written: a stale or foreign body fails the call, naming its index,
/// and leaves both arrays untouched.
///
/// Pointers: `bodies` is NULL or readable for `count` handles; `positions` and
/// `rotations` are NULL or writable for `count` elements at their strides.
///
/// Threads: one call at a time per world (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_world_get_transforms(
    world: KilnWorldId,
    bodies: *const KilnBodyId,
    count: u32,
    positions: *mut f32,
    position_stride: usize,
    rotations: *mut f32,
    rotation_stride: usize,
) -> KilnStatus {
    ffi_call("kiln_world_get_transforms", || {
        let positions = Strided::<3>::new(positions, position_stride, "positions")?;
        let rotations = Strided::<4>::new(rotations, rotation_stride, "rotations")?;
        if count == 0 {
            return with_world(world, |_| Ok(()));
        }
        let bodies = non_null(bodies, "bodies")?;
        // SAFETY: readable for `count` handles per the contract.
        let bodies = unsafe { std::slice::from_raw_parts(bodies, count as usize) };
        with_world(world, |entry| {
            let set = entry.world.bodies();
            for (i, &b) in bodies.iter().enumerate() {
                let ok = b.world == world && body_key(b).is_ok_and(|k| set.is_valid(k));
                if !ok {
                    return Err(Error::new(
                        KILN_ERROR_INVALID_HANDLE,
                        format!("bodies[{i}] {b:?} is null, stale or of another world"),
                    ));
                }
            }
            for (i, &b) in bodies.iter().enumerate() {
                let xf = set.transform(BodyId { index: b.index1 - 1, generation: b.generation }).expect("checked");
                let q = xf.rotation;
                // SAFETY: element `i < count` is writable per the contract.
                unsafe {
                    if let Some(p) = &positions {
                        p.write(i, xf.translation.to_array());
                    }
                    if let Some(r) = &rotations {
                        r.write(i, [q.x, q.y, q.z, q.w]);
                    }
                }
            }
            Ok(())
        })
    })
}

/// Forwards the world's debug drawing to C callbacks.
struct CDraw<'a> {
    draw: KilnDebugDraw,
    world: KilnWorldId,
    shape_ids: &'a [Vec<KilnShapeId>],
}

impl DebugDraw for CDraw<'_> {
    fn shape(&mut self, body: BodyId, index: u32, _: &Shape, transform: &Isometry, color: u32) {
        if let Some(f) = self.draw.draw_shape {
            let handle = self
                .shape_ids
                .get(body.index as usize)
                .and_then(|s| s.get(index as usize))
                .copied()
                .unwrap_or_default();
            let t = ktransform(transform);
            // SAFETY: a C callback the caller supplied; its arguments live for the call.
            unsafe { f(public_body(self.world, body), index, handle, &t, color, self.draw.user_context) };
        }
    }

    fn aabb(&mut self, aabb: &Aabb, color: u32) {
        if let Some(f) = self.draw.draw_aabb {
            // SAFETY: as above.
            unsafe { f(&kaabb(aabb), color, self.draw.user_context) };
        }
    }

    fn contact(&mut self, c: &ContactPointInfo) {
        if let Some(f) = self.draw.draw_contact {
            let contact = KilnWorldContact {
                body_a: public_body(self.world, c.body_a),
                body_b: c.body_b.map(|b| public_body(self.world, b)).unwrap_or_default(),
                point: kvec(c.point),
                normal: kvec(c.normal),
                separation: c.separation,
                normal_impulse: c.normal_impulse,
            };
            // SAFETY: as above.
            unsafe { f(&contact, self.draw.user_context) };
        }
    }

    fn tree_node(&mut self, aabb: &Aabb, depth: u32, _: bool) {
        if let Some(f) = self.draw.draw_tree_node {
            // SAFETY: as above.
            unsafe { f(&kaabb(aabb), depth, self.draw.user_context) };
        }
    }

    fn joint(&mut self, j: &JointDrawInfo) {
        if let Some(f) = self.draw.draw_joint {
            let (joint_type, (limit_enabled, lower, upper), (cone_enabled, cone_angle)) = match j.kind {
                JointType::Spherical(s) => {
                    (0, (s.enable_twist_limit, s.lower_twist, s.upper_twist), (s.enable_cone_limit, s.cone_angle))
                }
                JointType::Revolute(r) => (1, (r.enable_limit, r.lower, r.upper), (false, 0.0)),
                JointType::Prismatic(p) => (2, (p.enable_limit, p.lower, p.upper), (false, 0.0)),
                JointType::Fixed(_) => (3, (false, 0.0, 0.0), (false, 0.0)),
                JointType::Distance(d) => (4, (d.enable_limit, d.min_length, d.max_length), (false, 0.0)),
                JointType::SixDof(_) => (5, (false, 0.0, 0.0), (false, 0.0)),
            };
            let info = KilnJointDraw {
                joint: crate::joint::public_joint(self.world, j.joint),
                body_a: public_body(self.world, j.body_a),
                body_b: public_body(self.world, j.body_b),
                joint_type,
                frame_a: ktransform(&j.frame_a),
                frame_b: ktransform(&j.frame_b),
                limit_enabled,
                lower,
                upper,
                cone_enabled,
                cone_angle,
            };
            // SAFETY: as above.
            unsafe { f(&info, self.draw.user_context) };
        }
    }
}

/// Calls `draw`'s non-NULL callbacks with what the world holds: shapes, fat boxes,
/// the last step's contact points, the broadphase tree's nodes and the joints, in a
/// deterministic order. The callbacks run during this call and must not call into this world
/// (`KILN_ERROR_INVALID_STATE` if they try).
///
/// Pointers: `draw` is NULL or readable; its callbacks are NULL or callable as
/// declared.
///
/// Threads: one call at a time per world (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_world_debug_draw(world: KilnWorldId, draw: *const KilnDebugDraw) -> KilnStatus {
    ffi_call("kiln_world_debug_draw", || {
        let draw = non_null(draw, "draw")?;
        // SAFETY: non-null; readable per the contract.
        let draw: KilnDebugDraw = unsafe { read_def(draw, "draw")? };
        with_world(world, |entry| {
            let what = DebugDrawFlags {
                shapes: draw.draw_shape.is_some(),
                aabbs: draw.draw_aabb.is_some(),
                contacts: draw.draw_contact.is_some(),
                tree: draw.draw_tree_node.is_some(),
                joints: draw.draw_joint.is_some(),
            };
            let mut forward = CDraw { draw, world, shape_ids: &entry.shape_ids };
            entry.world.debug_draw(what, &mut forward);
            Ok(())
        })
    })
}

/// Creates a body (without shapes: add them with `kiln_body_add_shape`) and writes
/// its handle to `out_body`.
///
/// Pointers: `def` and `out_body` are NULL or valid for reading / writing.
///
/// Threads: one call at a time per world (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_body_create(
    world: KilnWorldId,
    def: *const KilnBodyDef,
    out_body: *mut KilnBodyId,
) -> KilnStatus {
    ffi_call("kiln_body_create", || {
        let def = non_null(def, "def")?;
        let out = non_null(out_body, "out_body")?;
        // SAFETY: non-null; readable per the contract.
        let raw: KilnBodyDef = unsafe { read_def(def, "def")? };
        let def = body_def(&raw)?;
        let id = with_world(world, |entry| {
            let id = entry.world.create_body(&def).map_err(|e| body_error(e, KilnBodyId::default(), "invalid def"))?;
            let slot = id.index as usize;
            if entry.user_data.len() <= slot {
                entry.user_data.resize(slot + 1, 0);
                entry.shape_ids.resize_with(slot + 1, Vec::new);
            }
            entry.user_data[slot] = raw.user_data as usize;
            entry.shape_ids[slot].clear();
            Ok(public_body(world, id))
        })?;
        // SAFETY: non-null and writable per the contract.
        unsafe { out.cast_mut().write(id) };
        Ok(())
    })
}

/// Destroys a body and its shapes. Contacts it touched end (reported with the next
/// step's events); islands resting on it wake.
///
/// Threads: one call at a time per world, its bodies and joints (busy: `KILN_ERROR_INVALID_STATE`).
#[no_mangle]
pub extern "C" fn kiln_body_destroy(body: KilnBodyId) -> KilnStatus {
    ffi_call("kiln_body_destroy", || {
        with_body(body, |entry, key| {
            entry.world.destroy_body(key).map_err(|e| body_error(e, body, ""))?;
            entry.shape_ids[key.index as usize].clear();
            entry.user_data[key.index as usize] = 0;
            Ok(())
        })
    })
}

/// Whether `body` refers to a live body of a live world.
///
/// Threads: any thread; waits while another thread is inside the world, and answers
/// false from one of the world's own callbacks (where the world is busy).
#[no_mangle]
pub extern "C" fn kiln_body_is_valid(body: KilnBodyId) -> bool {
    std::panic::catch_unwind(|| {
        body_key(body).is_ok_and(|key| {
            with_world_waiting(body.world, |entry| Ok(entry.world.bodies().is_valid(key))).unwrap_or(false)
        })
    })
    .unwrap_or(false)
}

/// Attaches a copy of `shape` to the body, placed by `def->pose`; dynamic bodies get
/// mass from the shape's density. Writes the shape's index on the body (0, 1, ... in
/// the order added; used by contact events) to `out_index` unless it is NULL. Wakes
/// the body. `KILN_ERROR_INVALID_ARGUMENT` for an invalid def, or when the dynamic
/// body's mass or inertia with this shape would overflow `float` (a 1e30 m shape, or
/// one placed 1e30 m away).
///
/// Pointers: `def` is NULL or readable; `out_index` is NULL or writable.
///
/// Threads: one call at a time per world, its bodies and joints (busy: `KILN_ERROR_INVALID_STATE`).
#[no_mangle]
pub unsafe extern "C" fn kiln_body_add_shape(
    body: KilnBodyId,
    shape: KilnShapeId,
    def: *const KilnShapeDef,
    out_index: *mut u32,
) -> KilnStatus {
    ffi_call("kiln_body_add_shape", || {
        let def = non_null(def, "def")?;
        // SAFETY: non-null; readable per the contract.
        let def = shape_def(&unsafe { read_def(def, "def")? })?;
        let copy = shape_of(shape)?;
        let index = with_body(body, |entry, key| {
            entry.world.add_shape(key, copy, def).map_err(|e| {
                body_error(
                    e,
                    body,
                    "invalid shape def, or the body's mass or inertia with this shape at this density overflows f32",
                )
            })?;
            let ids = &mut entry.shape_ids[key.index as usize];
            ids.push(shape);
            Ok(ids.len() as u32 - 1)
        })?;
        if !out_index.is_null() {
            // SAFETY: non-null and writable per the contract.
            unsafe { out_index.write(index) };
        }
        Ok(())
    })
}

/// Writes the number of shapes on the body to `out_count`.
///
/// Pointers: `out_count` is NULL or writable.
///
/// Threads: one call at a time per world, its bodies and joints (busy: `KILN_ERROR_INVALID_STATE`).
#[no_mangle]
pub unsafe extern "C" fn kiln_body_get_shape_count(body: KilnBodyId, out_count: *mut u32) -> KilnStatus {
    ffi_call("kiln_body_get_shape_count", || {
        non_null(out_count, "out_count")?;
        let n = with_body(body, |entry, key| Ok(entry.shape_ids[key.index as usize].len() as u32))?;
        write_out(out_count, "out_count", n)
    })
}

/// Writes the placement of the body's frame to `out_transform`.
///
/// Pointers: `out_transform` is NULL or writable.
///
/// Threads: one call at a time per world, its bodies and joints (busy: `KILN_ERROR_INVALID_STATE`).
#[no_mangle]
pub unsafe extern "C" fn kiln_body_get_transform(body: KilnBodyId, out_transform: *mut KilnTransform) -> KilnStatus {
    ffi_call("kiln_body_get_transform", || {
        non_null(out_transform, "out_transform")?;
        let xf = with_body(body, |entry, key| entry.world.transform(key).map_err(|e| body_error(e, body, "")))?;
        write_out(out_transform, "out_transform", ktransform(&xf))
    })
}

/// Teleports the body (finite, unit rotation, within `KILN_WORLD_MAX_COORDINATE`);
/// wakes it and the islands touching it. For kinematic bodies that should push
/// others on the way, use `kiln_body_set_target_transform`.
///
/// Pointers: `transform` is NULL or readable.
///
/// Threads: one call at a time per world, its bodies and joints (busy: `KILN_ERROR_INVALID_STATE`).
#[no_mangle]
pub unsafe extern "C" fn kiln_body_set_transform(body: KilnBodyId, transform: *const KilnTransform) -> KilnStatus {
    ffi_call("kiln_body_set_transform", || {
        let t = non_null(transform, "transform")?;
        // SAFETY: non-null; readable per the contract.
        let xf = check_placement(&unsafe { t.read() }, "transform")?;
        with_body(body, |entry, key| entry.world.set_transform(key, &xf).map_err(|e| body_error(e, body, "")))
    })
}

/// Moves a kinematic body to `target` over the next step of `dt` seconds by setting
/// its velocities (so it pushes dynamic bodies on the way). Call it every step;
/// velocities persist. Refused for static and dynamic bodies.
///
/// Pointers: `target` is NULL or readable.
///
/// Threads: one call at a time per world, its bodies and joints (busy: `KILN_ERROR_INVALID_STATE`).
#[no_mangle]
pub unsafe extern "C" fn kiln_body_set_target_transform(
    body: KilnBodyId,
    target: *const KilnTransform,
    dt: f32,
) -> KilnStatus {
    ffi_call("kiln_body_set_target_transform", || {
        let t = non_null(target, "target")?;
        // SAFETY: non-null; readable per the contract.
        let xf = check_placement(&unsafe { t.read() }, "target")?;
        if !(dt.is_finite() && dt > 0.0 && dt <= KILN_WORLD_MAX_STEP) {
            return Err(Error::new(
                KILN_ERROR_INVALID_ARGUMENT,
                format!("dt is {dt}, must be finite, > 0 and <= KILN_WORLD_MAX_STEP"),
            ));
        }
        with_body(body, |entry, key| {
            if entry.world.bodies().motion_type(key) != Ok(MotionType::Kinematic) {
                return Err(Error::new(KILN_ERROR_INVALID_STATE, "only kinematic bodies follow target transforms"));
            }
            entry
                .world
                .set_target_transform(key, &xf, dt)
                .map_err(|e| body_error(e, body, "the target is too far to reach at KILN_WORLD_MAX_SPEED in one step"))
        })
    })
}

/// Writes the body's linear (m/s) and angular (rad/s) velocity; either pointer may be
/// NULL to skip it.
///
/// Pointers: `out_linear` and `out_angular` are NULL or writable.
///
/// Threads: one call at a time per world, its bodies and joints (busy: `KILN_ERROR_INVALID_STATE`).
#[no_mangle]
pub unsafe extern "C" fn kiln_body_get_velocity(
    body: KilnBodyId,
    out_linear: *mut KilnVec3,
    out_angular: *mut KilnVec3,
) -> KilnStatus {
    ffi_call("kiln_body_get_velocity", || {
        let (v, w) = with_body(body, |entry, key| entry.world.velocity(key).map_err(|e| body_error(e, body, "")))?;
        if !out_linear.is_null() {
            write_out(out_linear, "out_linear", kvec(v))?;
        }
        if !out_angular.is_null() {
            write_out(out_angular, "out_angular", kvec(w))?;
        }
        Ok(())
    })
}

/// Sets the velocities of a dynamic or kinematic body (each within
/// `KILN_WORLD_MAX_SPEED`); wakes it. Static bodies ignore it.
///
/// Threads: one call at a time per world, its bodies and joints (busy: `KILN_ERROR_INVALID_STATE`).
#[no_mangle]
pub extern "C" fn kiln_body_set_velocity(body: KilnBodyId, linear: KilnVec3, angular: KilnVec3) -> KilnStatus {
    ffi_call("kiln_body_set_velocity", || {
        let v = check_vector(linear, KILN_WORLD_MAX_SPEED, "linear", "KILN_WORLD_MAX_SPEED")?;
        let w = check_vector(angular, KILN_WORLD_MAX_SPEED, "angular", "KILN_WORLD_MAX_SPEED")?;
        with_body(body, |entry, key| entry.world.set_velocity(key, v, w).map_err(|e| body_error(e, body, "")))
    })
}

/// Adds a force (N, finite) at the centre of mass until the next step; wakes the body.
///
/// Threads: one call at a time per world, its bodies and joints (busy: `KILN_ERROR_INVALID_STATE`).
#[no_mangle]
pub extern "C" fn kiln_body_apply_force(body: KilnBodyId, force: KilnVec3) -> KilnStatus {
    ffi_call("kiln_body_apply_force", || {
        let f = check_finite(force, "force")?;
        with_body(body, |entry, key| entry.world.apply_force(key, f).map_err(|e| body_error(e, body, "")))
    })
}

/// Adds a torque (N m, finite) until the next step; wakes the body.
///
/// Threads: one call at a time per world, its bodies and joints (busy: `KILN_ERROR_INVALID_STATE`).
#[no_mangle]
pub extern "C" fn kiln_body_apply_torque(body: KilnBodyId, torque: KilnVec3) -> KilnStatus {
    ffi_call("kiln_body_apply_torque", || {
        let t = check_finite(torque, "torque")?;
        with_body(body, |entry, key| entry.world.apply_torque(key, t).map_err(|e| body_error(e, body, "")))
    })
}

/// Applies an impulse (N s, finite) at world point `point`: changes the linear and
/// angular velocity at once; wakes the body. Static and kinematic bodies ignore it.
///
/// Threads: one call at a time per world, its bodies and joints (busy: `KILN_ERROR_INVALID_STATE`).
#[no_mangle]
pub extern "C" fn kiln_body_apply_impulse(body: KilnBodyId, impulse: KilnVec3, point: KilnVec3) -> KilnStatus {
    ffi_call("kiln_body_apply_impulse", || {
        let j = check_finite(impulse, "impulse")?;
        let p = check_vector(point, KILN_WORLD_MAX_COORDINATE * 2.0, "point", "2 KILN_WORLD_MAX_COORDINATE")?;
        with_body(body, |entry, key| entry.world.apply_impulse(key, j, p).map_err(|e| body_error(e, body, "")))
    })
}

/// Writes whether the body is awake (static bodies never are).
///
/// Pointers: `out_awake` is NULL or writable.
///
/// Threads: one call at a time per world, its bodies and joints (busy: `KILN_ERROR_INVALID_STATE`).
#[no_mangle]
pub unsafe extern "C" fn kiln_body_is_awake(body: KilnBodyId, out_awake: *mut bool) -> KilnStatus {
    ffi_call("kiln_body_is_awake", || {
        non_null(out_awake, "out_awake")?;
        let awake = with_body(body, |entry, key| entry.world.is_awake(key).map_err(|e| body_error(e, body, "")))?;
        write_out(out_awake, "out_awake", awake)
    })
}

/// Wakes the body's island (static bodies stay resting).
///
/// Threads: one call at a time per world, its bodies and joints (busy: `KILN_ERROR_INVALID_STATE`).
#[no_mangle]
pub extern "C" fn kiln_body_wake(body: KilnBodyId) -> KilnStatus {
    ffi_call("kiln_body_wake", || {
        with_body(body, |entry, key| entry.world.wake(key).map(|_| ()).map_err(|e| body_error(e, body, "")))
    })
}

/// Writes the body's mass in kg: 0 for static and kinematic bodies; 1 for a dynamic
/// body whose shapes give it no mass.
///
/// Pointers: `out_mass` is NULL or writable.
///
/// Threads: one call at a time per world, its bodies and joints (busy: `KILN_ERROR_INVALID_STATE`).
#[no_mangle]
pub unsafe extern "C" fn kiln_body_get_mass(body: KilnBodyId, out_mass: *mut f32) -> KilnStatus {
    ffi_call("kiln_body_get_mass", || {
        non_null(out_mass, "out_mass")?;
        let m = with_body(body, |entry, key| entry.world.mass(key).map_err(|e| body_error(e, body, "")))?;
        write_out(out_mass, "out_mass", m)
    })
}

/// Writes the body's `KILN_MOTION_*` type.
///
/// Pointers: `out_motion_type` is NULL or writable.
///
/// Threads: one call at a time per world, its bodies and joints (busy: `KILN_ERROR_INVALID_STATE`).
#[no_mangle]
pub unsafe extern "C" fn kiln_body_get_motion_type(body: KilnBodyId, out_motion_type: *mut u32) -> KilnStatus {
    ffi_call("kiln_body_get_motion_type", || {
        non_null(out_motion_type, "out_motion_type")?;
        let m =
            with_body(body, |entry, key| entry.world.bodies().motion_type(key).map_err(|e| body_error(e, body, "")))?;
        let code = match m {
            MotionType::Static => KILN_MOTION_STATIC,
            MotionType::Kinematic => KILN_MOTION_KINEMATIC,
            MotionType::Dynamic => KILN_MOTION_DYNAMIC,
        };
        write_out(out_motion_type, "out_motion_type", code)
    })
}

/// Sets the body's user data (Kiln never touches it).
///
/// Threads: one call at a time per world, its bodies and joints (busy: `KILN_ERROR_INVALID_STATE`).
#[no_mangle]
pub extern "C" fn kiln_body_set_user_data(body: KilnBodyId, user_data: *mut c_void) -> KilnStatus {
    ffi_call("kiln_body_set_user_data", || {
        with_body(body, |entry, key| {
            entry.user_data[key.index as usize] = user_data as usize;
            Ok(())
        })
    })
}

/// Writes the body's user data (NULL unless set).
///
/// Pointers: `out_user_data` is NULL or writable.
///
/// Threads: one call at a time per world, its bodies and joints (busy: `KILN_ERROR_INVALID_STATE`).
#[no_mangle]
pub unsafe extern "C" fn kiln_body_get_user_data(body: KilnBodyId, out_user_data: *mut *mut c_void) -> KilnStatus {
    ffi_call("kiln_body_get_user_data", || {
        non_null(out_user_data, "out_user_data")?;
        let data = with_body(body, |entry, key| Ok(entry.user_data[key.index as usize]))?;
        write_out(out_user_data, "out_user_data", data as *mut c_void)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use kiln_core::physics::debug::colors;

    #[test]
    fn colors_match_the_runtime() {
        assert_eq!(
            [KILN_COLOR_STATIC, KILN_COLOR_KINEMATIC, KILN_COLOR_AWAKE, KILN_COLOR_SLEEPING, KILN_COLOR_AABB],
            [colors::STATIC, colors::KINEMATIC, colors::AWAKE, colors::SLEEPING, colors::AABB]
        );
    }
    use kiln_core::math::Quat;

    #[test]
    fn rotations_round_trip_through_the_c_transform() {
        let xf = Isometry::new(Vec3::new(1.0, 2.0, 3.0), Quat::from_rotation_y(0.5));
        let back = check_placement(&ktransform(&xf), "t").unwrap();
        assert!(back.translation == xf.translation && back.rotation.abs_diff_eq(xf.rotation, 1e-7));
    }
}
