//! Rigid bodies as structure of arrays behind generation-checked handles.
//!
//! Every body lives in one of two [`BodySet`]s: `awake` (dynamic and kinematic bodies
//! the step integrates) or `resting` (static bodies and sleeping ones). A set is a
//! group of parallel columns, one entry per body, so the step streams through exactly
//! the data it needs and sleeping bodies cost nothing per step. A [`BodyId`] names a
//! slot; the slot knows which set and row hold the body now. Moving a body between
//! sets swaps the last row into its place and fixes that row's slot.

use glam::{Mat3, Quat, Vec3};

use crate::codec::{fields, Codec, Corrupt, Reader, Writer};
use crate::math::{world_inertia, Isometry};
use crate::shapes::{MassProperties, Shape};

/// Handle to a body: slot index and generation. Destroying a body bumps the slot's
/// generation, so old handles are detected, never dereferenced.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BodyId {
    pub index: u32,
    pub generation: u32,
}

impl BodyId {
    /// The handle as one number (generation high, index low), for those who keep
    /// bodies by key without knowing physics (the ray tracer's followed instances).
    pub fn to_bits(self) -> u64 {
        (self.generation as u64) << 32 | self.index as u64
    }

    /// The handle [`BodyId::to_bits`] made.
    pub fn from_bits(bits: u64) -> BodyId {
        BodyId { index: bits as u32, generation: (bits >> 32) as u32 }
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MotionType {
    /// Never moves; infinite mass.
    Static,
    /// Moved by its velocity (or a target transform); infinite mass, pushes dynamic
    /// bodies.
    Kinematic,
    /// Moved by forces, gravity and contacts.
    #[default]
    Dynamic,
}

/// How a body is created.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BodyDef {
    pub motion: MotionType,
    /// Placement of the body's frame (shapes are placed in it).
    pub transform: Isometry,
    pub linear_velocity: Vec3,
    pub angular_velocity: Vec3,
    /// Per-second velocity damping, `v *= 1 / (1 + dt * damping)`.
    pub linear_damping: f32,
    pub angular_damping: f32,
    pub gravity_scale: f32,
    /// `false`: the body never sleeps (and keeps its island awake).
    pub allow_sleep: bool,
    /// Fast and small: gets continuous collision against static geometry.
    pub bullet: bool,
}

impl Default for BodyDef {
    fn default() -> Self {
        BodyDef {
            motion: MotionType::Dynamic,
            transform: Isometry::IDENTITY,
            linear_velocity: Vec3::ZERO,
            angular_velocity: Vec3::ZERO,
            linear_damping: 0.0,
            angular_damping: 0.05,
            gravity_scale: 1.0,
            allow_sleep: true,
            bullet: false,
        }
    }
}

/// How a shape is attached to a body.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ShapeDef {
    /// Placement in the body's frame.
    pub pose: Isometry,
    /// kg/m³; gives the body its mass (dynamic bodies).
    pub density: f32,
    pub friction: f32,
    pub restitution: f32,
    /// Rolling resistance (dimensionless): a rolling sphere or capsule is braked by a
    /// torque of at most `rolling_resistance * radius * normal force`.
    pub rolling_resistance: f32,
    /// Collision filtering: two shapes collide when each one's category meets the
    /// other's mask.
    pub category: u32,
    pub mask: u32,
    /// A sensor: no contacts, no continuous collision; it reports the shapes that
    /// begin and end overlapping it (`World::sensor_events`). Its density still
    /// counts towards its body's mass.
    pub sensor: bool,
    /// Report this shape's contacts that strike faster than
    /// `WorldDef::hit_event_threshold` (`World::contact_hit_events`).
    pub hit_events: bool,
}

impl Default for ShapeDef {
    fn default() -> Self {
        ShapeDef {
            pose: Isometry::IDENTITY,
            density: 1000.0,
            friction: 0.6,
            restitution: 0.0,
            rolling_resistance: 0.0,
            category: 1,
            mask: u32::MAX,
            sensor: false,
            hit_events: false,
        }
    }
}

impl ShapeDef {
    /// Finite pose with a unit rotation and an offset within
    /// [`crate::shapes::MAX_EXTENT`], density and friction finite and >= 0,
    /// restitution in `[0, 1]`.
    pub fn is_valid(&self) -> bool {
        self.pose.is_valid()
            && self.pose.translation.abs().max_element() <= crate::shapes::MAX_EXTENT
            && self.density.is_finite()
            && self.density >= 0.0
            && self.friction.is_finite()
            && self.friction >= 0.0
            && (0.0..=1.0).contains(&self.restitution)
            && self.rolling_resistance.is_finite()
            && self.rolling_resistance >= 0.0
    }

    /// Whether shapes with these filters may touch.
    pub fn collides_with(&self, other: &ShapeDef) -> bool {
        self.category & other.mask != 0 && other.category & self.mask != 0
    }
}

/// A shape attached to a body.
#[derive(Clone, Debug, Default)]
pub struct BodyShape {
    pub shape: Shape,
    pub def: ShapeDef,
}

/// Why a body call was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BodyError {
    /// The handle is stale or was never issued.
    InvalidBody,
    /// A transform, velocity, force or def field is NaN, infinite or out of range.
    InvalidArgument,
    /// A step stage ran out of order (see `World::step_stage`).
    OutOfOrder,
    /// The joint handle is stale or was never issued.
    InvalidJoint,
    /// A snapshot does not fit the world: the attached terrain is not the one (or
    /// not at the revision) it was saved with.
    SnapshotMismatch,
}

impl std::fmt::Display for BodyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            BodyError::InvalidBody => "the body handle is stale or was never issued",
            BodyError::InvalidArgument => {
                "a transform, velocity, force, density or damping is NaN, infinite or out of range"
            }
            BodyError::OutOfOrder => "a step stage ran out of order (stages run as StepStage::ALL lists them)",
            BodyError::InvalidJoint => "the joint handle is stale or was never issued",
            BodyError::SnapshotMismatch => {
                "the snapshot was saved with another terrain, or the terrain was edited since: restore it first"
            }
        })
    }
}

impl std::error::Error for BodyError {}

/// Flags of a body row.
pub mod flags {
    pub const ALLOW_SLEEP: u8 = 1;
    pub const BULLET: u8 = 2;
    pub const KINEMATIC: u8 = 4;
    pub const STATIC: u8 = 8;
}

/// The columns of a set of bodies. Positions are of the centre of mass; the body's
/// frame origin is `position - rotation * local_center`.
#[derive(Clone, Debug, Default)]
pub struct BodySet {
    pub id: Vec<BodyId>,
    pub position: Vec<Vec3>,
    pub rotation: Vec<Quat>,
    pub linear_velocity: Vec<Vec3>,
    pub angular_velocity: Vec<Vec3>,
    pub force: Vec<Vec3>,
    pub torque: Vec<Vec3>,
    pub inv_mass: Vec<f32>,
    /// Inverse inertia about the centre of mass, in the body's axes.
    pub local_inv_inertia: Vec<Mat3>,
    /// `R I⁻¹ Rᵀ`, refreshed after every position update.
    pub world_inv_inertia: Vec<Mat3>,
    pub local_center: Vec<Vec3>,
    pub linear_damping: Vec<f32>,
    pub angular_damping: Vec<f32>,
    pub gravity_scale: Vec<f32>,
    pub sleep_time: Vec<f32>,
    /// Pose at which the current resting period began (see `World` sleep).
    pub rest_pose: Vec<(Vec3, Quat)>,
    pub flags: Vec<u8>,
}

/// One body's row, moved between sets.
#[derive(Clone, Copy, Debug)]
struct Row {
    id: BodyId,
    position: Vec3,
    rotation: Quat,
    linear_velocity: Vec3,
    angular_velocity: Vec3,
    force: Vec3,
    torque: Vec3,
    inv_mass: f32,
    local_inv_inertia: Mat3,
    world_inv_inertia: Mat3,
    local_center: Vec3,
    linear_damping: f32,
    angular_damping: f32,
    gravity_scale: f32,
    sleep_time: f32,
    rest_pose: (Vec3, Quat),
    flags: u8,
}

impl BodySet {
    pub fn len(&self) -> usize {
        self.id.len()
    }

    pub fn is_empty(&self) -> bool {
        self.id.is_empty()
    }

    fn push(&mut self, r: Row) -> usize {
        self.id.push(r.id);
        self.position.push(r.position);
        self.rotation.push(r.rotation);
        self.linear_velocity.push(r.linear_velocity);
        self.angular_velocity.push(r.angular_velocity);
        self.force.push(r.force);
        self.torque.push(r.torque);
        self.inv_mass.push(r.inv_mass);
        self.local_inv_inertia.push(r.local_inv_inertia);
        self.world_inv_inertia.push(r.world_inv_inertia);
        self.local_center.push(r.local_center);
        self.linear_damping.push(r.linear_damping);
        self.angular_damping.push(r.angular_damping);
        self.gravity_scale.push(r.gravity_scale);
        self.sleep_time.push(r.sleep_time);
        self.rest_pose.push(r.rest_pose);
        self.flags.push(r.flags);
        self.len() - 1
    }

    /// Removes row `i` by moving the last row into it; returns the removed row.
    fn swap_remove(&mut self, i: usize) -> Row {
        Row {
            id: self.id.swap_remove(i),
            position: self.position.swap_remove(i),
            rotation: self.rotation.swap_remove(i),
            linear_velocity: self.linear_velocity.swap_remove(i),
            angular_velocity: self.angular_velocity.swap_remove(i),
            force: self.force.swap_remove(i),
            torque: self.torque.swap_remove(i),
            inv_mass: self.inv_mass.swap_remove(i),
            local_inv_inertia: self.local_inv_inertia.swap_remove(i),
            world_inv_inertia: self.world_inv_inertia.swap_remove(i),
            local_center: self.local_center.swap_remove(i),
            linear_damping: self.linear_damping.swap_remove(i),
            angular_damping: self.angular_damping.swap_remove(i),
            gravity_scale: self.gravity_scale.swap_remove(i),
            sleep_time: self.sleep_time.swap_remove(i),
            rest_pose: self.rest_pose.swap_remove(i),
            flags: self.flags.swap_remove(i),
        }
    }

    /// The lengths of every column but the ids (all equal to `len` in a valid set).
    fn column_lengths(&self) -> [usize; 16] {
        [
            self.position.len(),
            self.rotation.len(),
            self.linear_velocity.len(),
            self.angular_velocity.len(),
            self.force.len(),
            self.torque.len(),
            self.inv_mass.len(),
            self.local_inv_inertia.len(),
            self.world_inv_inertia.len(),
            self.local_center.len(),
            self.linear_damping.len(),
            self.angular_damping.len(),
            self.gravity_scale.len(),
            self.sleep_time.len(),
            self.rest_pose.len(),
            self.flags.len(),
        ]
    }

    /// Becomes a copy of `other` in the memory it has (a restore's copy, which
    /// keeps the capacity the world's steps grew).
    fn copy_from(&mut self, other: &BodySet) {
        self.id.clone_from(&other.id);
        self.position.clone_from(&other.position);
        self.rotation.clone_from(&other.rotation);
        self.linear_velocity.clone_from(&other.linear_velocity);
        self.angular_velocity.clone_from(&other.angular_velocity);
        self.force.clone_from(&other.force);
        self.torque.clone_from(&other.torque);
        self.inv_mass.clone_from(&other.inv_mass);
        self.local_inv_inertia.clone_from(&other.local_inv_inertia);
        self.world_inv_inertia.clone_from(&other.world_inv_inertia);
        self.local_center.clone_from(&other.local_center);
        self.linear_damping.clone_from(&other.linear_damping);
        self.angular_damping.clone_from(&other.angular_damping);
        self.gravity_scale.clone_from(&other.gravity_scale);
        self.sleep_time.clone_from(&other.sleep_time);
        self.rest_pose.clone_from(&other.rest_pose);
        self.flags.clone_from(&other.flags);
    }

    /// The body frame's placement of row `i`.
    pub fn transform(&self, i: usize) -> Isometry {
        let q = self.rotation[i];
        Isometry::new(self.position[i] - q * self.local_center[i], q)
    }
}

/// Which set holds a body.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SetKind {
    #[default]
    Awake,
    Resting,
}

#[derive(Clone, Copy, Debug, Default)]
struct Slot {
    generation: u32,
    /// `None` when the slot is free.
    place: Option<(SetKind, u32)>,
}

fields!(BodyId { index, generation });
fields!(ShapeDef { pose, density, friction, restitution, rolling_resistance, category, mask, sensor, hit_events });
fields!(BodyShape { shape, def });
fields!(BodySet {
    id,
    position,
    rotation,
    linear_velocity,
    angular_velocity,
    force,
    torque,
    inv_mass,
    local_inv_inertia,
    world_inv_inertia,
    local_center,
    linear_damping,
    angular_damping,
    gravity_scale,
    sleep_time,
    rest_pose,
    flags,
});
fields!(Slot { generation, place });
fields!(Bodies { awake, resting, slots, free, shapes, motion, layout });

impl Codec for MotionType {
    fn put(&self, w: &mut Writer) {
        (*self as u8).put(w);
    }
    fn take(&mut self, r: &mut Reader) -> Result<(), Corrupt> {
        *self = [MotionType::Static, MotionType::Kinematic, MotionType::Dynamic][r.tag(3)? as usize];
        Ok(())
    }
}

impl Codec for SetKind {
    fn put(&self, w: &mut Writer) {
        (*self as u8).put(w);
    }
    fn take(&mut self, r: &mut Reader) -> Result<(), Corrupt> {
        *self = [SetKind::Awake, SetKind::Resting][r.tag(2)? as usize];
        Ok(())
    }
}

impl Bodies {
    /// Writes everything but the resting set (an awake-only snapshot names it by a
    /// checksum instead).
    pub(super) fn put_without_resting(&self, w: &mut Writer) {
        self.awake.put(w);
        self.slots.put(w);
        self.free.put(w);
        self.shapes.put(w);
        self.motion.put(w);
        self.layout.put(w);
    }

    /// Reads what [`Bodies::put_without_resting`] wrote, the resting set copied from
    /// `resting`.
    pub(super) fn take_without_resting(&mut self, r: &mut Reader, resting: &BodySet) -> Result<(), Corrupt> {
        self.awake.take(r)?;
        self.resting.copy_from(resting);
        self.slots.take(r)?;
        self.free.take(r)?;
        self.shapes.take(r)?;
        self.motion.take(r)?;
        self.layout.take(r)
    }

    /// Whether a decoded snapshot's bodies hang together: every column of a set as
    /// long as its ids, each live slot's row holding its id, every other row of no
    /// slot, the free list of free slots, and a shape list and motion type per slot.
    pub(super) fn is_coherent(&self) -> bool {
        let set_ok = |set: &BodySet| set.column_lengths().iter().all(|&len| len == set.len());
        let slots = self.slots.len();
        if !set_ok(&self.awake) || !set_ok(&self.resting) || self.shapes.len() != slots || self.motion.len() != slots {
            return false;
        }
        let mut live = 0;
        for (index, slot) in self.slots.iter().enumerate() {
            let Some((kind, row)) = slot.place else { continue };
            let set = match kind {
                SetKind::Awake => &self.awake,
                SetKind::Resting => &self.resting,
            };
            if set.id.get(row as usize) != Some(&BodyId { index: index as u32, generation: slot.generation }) {
                return false;
            }
            live += 1;
        }
        let free_ok = self.free.iter().all(|&f| self.slots.get(f as usize).is_some_and(|s| s.place.is_none()));
        live == self.len() && free_ok && self.free.len() + live == slots
    }
}

/// All bodies: the two sets, the slot table and each body's shapes.
#[derive(Clone, Debug, Default)]
pub struct Bodies {
    pub awake: BodySet,
    pub resting: BodySet,
    slots: Vec<Slot>,
    free: Vec<u32>,
    shapes: Vec<Vec<BodyShape>>,
    motion: Vec<MotionType>,
    /// Counts the changes of which row a body has or of an inverse mass (see
    /// [`Bodies::layout`]).
    layout: u64,
}

impl Bodies {
    /// A number that changes whenever a body is added to or taken from a set, or its
    /// inverse mass changes: what a body's awake row and mass were under one value
    /// they still are while it holds.
    pub(crate) fn layout(&self) -> u64 {
        self.layout
    }

    /// Live bodies.
    pub fn len(&self) -> usize {
        self.awake.len() + self.resting.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn create(&mut self, def: &BodyDef) -> Result<BodyId, BodyError> {
        let too_fast = |v: Vec3| !v.is_finite() || v.length() > super::MAX_LINEAR_SPEED;
        let numbers = [def.linear_damping, def.angular_damping, def.gravity_scale];
        if !def.transform.is_valid()
            || too_fast(def.linear_velocity)
            || too_fast(def.angular_velocity)
            || !numbers.iter().all(|x| x.is_finite())
            || def.linear_damping < 0.0
            || def.angular_damping < 0.0
        {
            return Err(BodyError::InvalidArgument);
        }
        let index = match self.free.pop() {
            Some(i) => i,
            None => {
                self.slots.push(Slot { generation: 1, place: None });
                self.shapes.push(Vec::new());
                self.motion.push(def.motion);
                self.slots.len() as u32 - 1
            }
        };
        let id = BodyId { index, generation: self.slots[index as usize].generation };
        let mut flags = 0;
        if def.allow_sleep {
            flags |= flags::ALLOW_SLEEP;
        }
        if def.bullet {
            flags |= flags::BULLET;
        }
        let (set, velocity, spin) = match def.motion {
            MotionType::Static => {
                flags |= flags::STATIC;
                (SetKind::Resting, Vec3::ZERO, Vec3::ZERO)
            }
            MotionType::Kinematic => {
                flags |= flags::KINEMATIC;
                (SetKind::Awake, def.linear_velocity, def.angular_velocity)
            }
            MotionType::Dynamic => (SetKind::Awake, def.linear_velocity, def.angular_velocity),
        };
        let rotation = def.transform.rotation.normalize();
        // Until shapes give it mass, a dynamic body weighs 1 kg with unit inertia.
        let dynamic = def.motion == MotionType::Dynamic;
        let row = Row {
            id,
            position: def.transform.translation,
            rotation,
            linear_velocity: velocity,
            angular_velocity: spin,
            force: Vec3::ZERO,
            torque: Vec3::ZERO,
            inv_mass: if dynamic { 1.0 } else { 0.0 },
            local_inv_inertia: if dynamic { Mat3::IDENTITY } else { Mat3::ZERO },
            world_inv_inertia: if dynamic { Mat3::IDENTITY } else { Mat3::ZERO },
            local_center: Vec3::ZERO,
            linear_damping: def.linear_damping,
            angular_damping: def.angular_damping,
            gravity_scale: def.gravity_scale,
            sleep_time: 0.0,
            rest_pose: (def.transform.translation, rotation),
            flags,
        };
        self.layout += 1;
        let row_index = self.set_mut(set).push(row);
        self.slots[index as usize].place = Some((set, row_index as u32));
        self.motion[index as usize] = def.motion;
        self.shapes[index as usize].clear();
        Ok(id)
    }

    fn set_mut(&mut self, kind: SetKind) -> &mut BodySet {
        match kind {
            SetKind::Awake => &mut self.awake,
            SetKind::Resting => &mut self.resting,
        }
    }

    pub fn set(&self, kind: SetKind) -> &BodySet {
        match kind {
            SetKind::Awake => &self.awake,
            SetKind::Resting => &self.resting,
        }
    }

    /// Where a live body is: its set and row.
    pub fn locate(&self, id: BodyId) -> Result<(SetKind, usize), BodyError> {
        let slot = self.slots.get(id.index as usize).ok_or(BodyError::InvalidBody)?;
        match slot.place {
            Some((set, row)) if slot.generation == id.generation => Ok((set, row as usize)),
            _ => Err(BodyError::InvalidBody),
        }
    }

    pub fn is_valid(&self, id: BodyId) -> bool {
        self.locate(id).is_ok()
    }

    pub fn motion_type(&self, id: BodyId) -> Result<MotionType, BodyError> {
        self.locate(id)?;
        Ok(self.motion[id.index as usize])
    }

    pub fn destroy(&mut self, id: BodyId) -> Result<(), BodyError> {
        let (set, row) = self.locate(id)?;
        self.remove_row(set, row);
        let slot = &mut self.slots[id.index as usize];
        slot.place = None;
        slot.generation = slot.generation.wrapping_add(1).max(1);
        self.shapes[id.index as usize].clear();
        self.free.push(id.index);
        Ok(())
    }

    /// Takes row `row` out of `set`, re-pointing the slot of the row moved into it.
    fn remove_row(&mut self, set: SetKind, row: usize) -> Row {
        self.layout += 1;
        let s = self.set_mut(set);
        let removed = s.swap_remove(row);
        if row < s.len() {
            let moved = s.id[row];
            self.slots[moved.index as usize].place = Some((set, row as u32));
        }
        removed
    }

    /// Moves a body to `to` (no-op when it is there), resetting its sleep timer.
    pub fn move_to(&mut self, id: BodyId, to: SetKind) -> Result<(), BodyError> {
        let (from, row) = self.locate(id)?;
        if from == to {
            return Ok(());
        }
        let mut r = self.remove_row(from, row);
        r.sleep_time = 0.0;
        let new_row = self.set_mut(to).push(r);
        self.slots[id.index as usize].place = Some((to, new_row as u32));
        Ok(())
    }

    /// Checks every invariant of the sets and the slot table; panics with a
    /// description on violation. O(n); for tests and `World::validate`.
    pub fn validate(&self) {
        for (kind, set) in [(SetKind::Awake, &self.awake), (SetKind::Resting, &self.resting)] {
            let n = set.len();
            let lengths = set.column_lengths();
            assert!(lengths.iter().all(|&l| l == n), "{kind:?} set columns differ in length: {n} ids, {lengths:?}");
            for row in 0..n {
                let id = set.id[row];
                assert_eq!(self.locate(id), Ok((kind, row)), "{kind:?} row {row} ({id:?}) and its slot disagree");
                let (x, q, v, w) =
                    (set.position[row], set.rotation[row], set.linear_velocity[row], set.angular_velocity[row]);
                let finite = x.is_finite() && q.is_finite() && v.is_finite() && w.is_finite();
                assert!(finite, "{id:?}: non-finite state: position {x}, rotation {q}, velocity {v}, spin {w}");
                assert!(set.rotation[row].is_normalized(), "{id:?}: rotation {} is not unit", set.rotation[row]);
                assert!(set.inv_mass[row].is_finite() && set.inv_mass[row] >= 0.0, "{id:?}: inverse mass");
                let fixed = set.flags[row] & flags::STATIC != 0;
                assert!(!fixed || kind == SetKind::Resting, "{id:?}: a static body in the awake set");
                let motion = self.motion[id.index as usize];
                assert_eq!(fixed, motion == MotionType::Static, "{id:?}: static flag and motion type {motion:?}");
                assert!(
                    motion == MotionType::Dynamic || set.inv_mass[row] == 0.0,
                    "{id:?}: a {motion:?} body has mass"
                );
            }
        }
        assert!(self.shapes.len() == self.slots.len() && self.motion.len() == self.slots.len(), "slot columns");
        let live = self.slots.iter().filter(|s| s.place.is_some()).count();
        assert_eq!(live, self.len(), "live slots and rows");
        let mut free = self.free.clone();
        free.sort_unstable();
        free.dedup();
        assert_eq!(free.len(), self.free.len(), "a slot is on the free list twice");
        assert_eq!(free.len(), self.slots.len() - live, "free list and free slots");
        assert!(free.iter().all(|&i| self.slots[i as usize].place.is_none()), "a live slot on the free list");
    }

    /// Set and row of the body in slot `slot`, if the slot is live.
    pub(crate) fn place_of_slot(&self, slot: u32) -> Option<(SetKind, usize)> {
        let (set, row) = self.slots.get(slot as usize)?.place?;
        Some((set, row as usize))
    }

    /// The velocity of the body in slot `slot` at the world point `p`: `v + ω × r`
    /// about its centre of mass; zero for static, sleeping and dead ones.
    pub(crate) fn velocity_at(&self, slot: u32, p: Vec3) -> Vec3 {
        match self.place_of_slot(slot) {
            Some((SetKind::Awake, row)) => {
                let a = &self.awake;
                a.linear_velocity[row] + a.angular_velocity[row].cross(p - a.position[row])
            }
            _ => Vec3::ZERO,
        }
    }

    /// The handle of the body in slot `slot` (live or not).
    /// Every live body, in slot order.
    pub fn live_ids(&self) -> impl Iterator<Item = BodyId> + '_ {
        let live = self.slots.iter().enumerate().filter(|(_, s)| s.place.is_some());
        live.map(|(index, s)| BodyId { index: index as u32, generation: s.generation })
    }

    pub(crate) fn id_of_slot(&self, slot: u32) -> BodyId {
        BodyId { index: slot, generation: self.slots[slot as usize].generation }
    }

    /// The shapes of the body in slot `slot`.
    /// Becomes a copy of `other` in the memory it has (see [`BodySet`]'s).
    pub(super) fn copy_from(&mut self, other: &Bodies) {
        self.awake.copy_from(&other.awake);
        self.resting.copy_from(&other.resting);
        self.slots.clone_from(&other.slots);
        self.free.clone_from(&other.free);
        self.shapes.clone_from(&other.shapes);
        self.motion.clone_from(&other.motion);
        self.layout = other.layout;
    }

    /// Every shape of every body.
    pub(super) fn every_shape(&self) -> impl Iterator<Item = &BodyShape> {
        self.shapes.iter().flatten()
    }

    pub(crate) fn shapes_of_slot(&self, slot: u32) -> &[BodyShape] {
        &self.shapes[slot as usize]
    }

    /// The body frame's placement.
    pub fn transform(&self, id: BodyId) -> Result<Isometry, BodyError> {
        let (set, row) = self.locate(id)?;
        Ok(self.set(set).transform(row))
    }

    /// The shapes attached to a body.
    pub fn shapes(&self, id: BodyId) -> Result<&[BodyShape], BodyError> {
        self.locate(id)?;
        Ok(&self.shapes[id.index as usize])
    }

    /// Attaches a shape and recomputes the body's mass from all its shapes' densities
    /// (dynamic bodies; the centre of mass moves, the body frame stays).
    pub fn add_shape(&mut self, id: BodyId, shape: Shape, def: ShapeDef) -> Result<(), BodyError> {
        let (set, row) = self.locate(id)?;
        let ok = def.is_valid();
        if !ok {
            return Err(BodyError::InvalidArgument);
        }
        // A dynamic body's mass, centre and inertia (and its inverse) must stay finite
        // with the new shape: a valid 1e30 m box, or an ordinary one placed 1e30 m
        // away, at an ordinary density overflows f32 and the next step turned the
        // body to NaN (found by `samples-c/tests/fuzz_api.c`).
        if self.motion[id.index as usize] == MotionType::Dynamic {
            let mass = self.mass_with(id, Some((&shape, &def)));
            // A mass too small to invert (1e-39 kg: a subnormal density or a sliver of
            // a hull) is refused too: its inverse overflowed to infinity.
            let invertible = (1.0 / mass.mass).is_finite() && mass.inverse_inertia().is_finite();
            let finite = mass.mass.is_finite()
                && mass.center.is_finite()
                && (mass.mass == 0.0 || (mass.inertia.is_finite() && invertible));
            if !finite {
                return Err(BodyError::InvalidArgument);
            }
        }
        self.attach(set, row, id, shape, def);
        Ok(())
    }

    /// The combined mass properties of a body's shapes, plus `extra`.
    fn mass_with(&self, id: BodyId, extra: Option<(&Shape, &ShapeDef)>) -> MassProperties {
        let own = self.shapes[id.index as usize].iter().map(|s| (&s.shape, &s.def));
        let parts = own.chain(extra).map(|(shape, def)| shape.mass_properties(def.density).transformed(&def.pose));
        MassProperties::combine(parts)
    }

    fn attach(&mut self, set: SetKind, row: usize, id: BodyId, shape: Shape, def: ShapeDef) {
        let frame = self.set(set).transform(row);
        self.shapes[id.index as usize].push(BodyShape { shape, def });
        if self.motion[id.index as usize] != MotionType::Dynamic {
            return;
        }
        self.update_mass(set, row, id, frame);
    }

    /// Places a body's frame; velocities are kept.
    pub fn set_transform(&mut self, id: BodyId, xf: &Isometry) -> Result<(), BodyError> {
        let (set, row) = self.locate(id)?;
        if !xf.is_valid() {
            return Err(BodyError::InvalidArgument);
        }
        let s = self.set_mut(set);
        let q = xf.rotation.normalize();
        s.rotation[row] = q;
        s.position[row] = xf.translation + q * s.local_center[row];
        s.world_inv_inertia[row] = world_inertia(q, s.local_inv_inertia[row]);
        Ok(())
    }

    fn update_mass(&mut self, set: SetKind, row: usize, id: BodyId, frame: Isometry) {
        let mass = self.mass_with(id, None);
        self.layout += 1;
        let s = self.set_mut(set);
        // `add_shape` refuses shapes whose mass cannot be inverted; should a mass still
        // be too small to invert, it counts as none.
        let inverse_inertia = mass.inverse_inertia();
        if mass.mass > 0.0 && mass.mass.is_finite() && (1.0 / mass.mass).is_finite() && inverse_inertia.is_finite() {
            s.inv_mass[row] = 1.0 / mass.mass;
            s.local_inv_inertia[row] = inverse_inertia;
            s.local_center[row] = mass.center;
        } else {
            s.inv_mass[row] = 1.0;
            s.local_inv_inertia[row] = Mat3::IDENTITY;
            s.local_center[row] = Vec3::ZERO;
        }
        // Keep the body frame where it was: the centre of mass moved inside it.
        s.position[row] = frame.transform_point(s.local_center[row]);
        s.world_inv_inertia[row] = world_inertia(s.rotation[row], s.local_inv_inertia[row]);
    }
}

/// `v` with at most `max` length. Absurd but finite forces (1e38 N on a light body)
/// overflow to infinities, and an inertia tensor can mix them into NaN: those
/// components saturate (NaN to 0), so the state stays finite whatever was applied.
/// Found by `samples-c/tests/fuzz_api.c`.
pub(crate) fn saturate(v: Vec3, max: f32) -> Vec3 {
    if v.is_finite() {
        return v.clamp_length_max(max);
    }
    let v = Vec3::select(v.is_nan_mask(), Vec3::ZERO, v);
    v.clamp(Vec3::splat(-max), Vec3::splat(max)).clamp_length_max(max)
}
