//! The rigid-body world: bodies, contacts, the soft-step solver, islands and sleep.
//! Laid out as Box2D v3 lays out its sources; read in this order:
//!
//! - [`World`] (`world.rs`): the API of bodies, shapes and terrain; [`body`]: bodies
//!   as structure of arrays behind generation-checked handles, with awake and
//!   resting sets so sleeping and static bodies cost nothing per step.
//! - `step.rs`: the step's stages, in execution order (broadphase, narrowphase,
//!   prepare, solve, sleep); `continuous.rs`: fast bodies swept against static
//!   geometry.
//! - `narrow.rs`: contact constraints from broadphase pairs and voxel terrain, and the
//!   reuse of resting manifolds; `store.rs`: where constraints live from step to step.
//! - `contact_solver.rs`: one contact constraint's layout and maths (soft step,
//!   friction at the manifold's centre, restitution); `block.rs`: a manifold's normal
//!   points solved together.
//! - `constraint_graph.rs`: graph colouring, bundles and the stages of the solve;
//!   `solver.rs`: the plan that runs those stages in one parallel region.
//! - `simd/`: the same constraint maths 4, 8 or 16 constraints at a time.
//! - `joint.rs`: joints (spherical, revolute, prismatic, fixed, distance, six-DOF) and their
//!   handles; `joint_solver.rs`: their maths, solved in the graph's colours beside
//!   the contacts.
//! - `snapshot.rs`: a world's state saved and restored between steps (rollback).
//! - `island.rs`: persistent islands, lazy splits, sleeping groups, waking; `runs.rs`: sorted
//!   runs merged for the contact lists.
//! - `character.rs`: the capsule character among the bodies (blocked, carried,
//!   pushing).
//! - [`query`]: ray casts, overlaps and shape casts over bodies and terrain;
//!   `events.rs`: sensor shapes and their begin/end events, contact hit events and body
//!   move events; `water.rs`: buoyancy and drag in the terrain's water, water
//!   enter/leave events.
//! - [`debug`]: debug drawing through the [`debug::DebugDraw`] trait; [`scenes`]: the
//!   benchmark and test scenes, shared with the benches.

mod block;
pub mod body;
mod character;
mod constraint_graph;
mod contact_solver;
mod continuous;
pub mod debug;
mod events;
mod island;
#[cfg(test)]
mod island_tests;
mod joint;
mod joint_solver;
#[cfg(test)]
mod joint_tests;
mod narrow;
mod near;
pub mod query;
mod runs;
pub mod scenes;
mod simd;
mod snapshot;
mod snapshot_bytes;
#[cfg(test)]
mod snapshot_bytes_tests;
#[cfg(test)]
mod snapshot_tests;
mod solver;
#[cfg(test)]
mod stability_tests;
mod step;
mod store;
#[cfg(test)]
mod tests;
mod water;
mod world;
#[cfg(test)]
mod world_tests;

pub use body::{Bodies, BodyDef, BodyError, BodyId, BodySet, BodyShape, MotionType, SetKind, ShapeDef};
pub use character::CharacterBodies;
pub use debug::{DebugDraw, DebugDrawFlags, JointDrawInfo};
pub use events::{ContactHitEvent, SensorEvent};
pub use joint::{
    DistanceJoint, Dof, FixedJoint, JointDef, JointEvent, JointEventKind, JointId, JointType, PrismaticJoint,
    RevoluteJoint, SixDofJoint, SphericalJoint,
};
pub use query::{QueryFilter, QueryTarget, RayHit, ShapeCastHit, CAST_TOLERANCE};
pub use snapshot::WorldSnapshot;
pub use snapshot_bytes::{library_version, snapshot_checksum, SnapshotError, SNAPSHOT_FORMAT};
pub use water::{Submerged, WaterEvent};
pub use world::{
    BodyMoveEvent, ContactEvent, ContactPointInfo, Solver, StepCounters, StepProfile, StepStage, World, WorldDef,
    LINEAR_SLOP, MAX_LINEAR_SPEED, MAX_ROTATION, MAX_WATER_DENSITY, MAX_WATER_DRAG, SPECULATIVE_DISTANCE,
};
