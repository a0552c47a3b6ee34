//! The rigid-body world: bodies, contacts, the soft-step solver, islands and sleep.
//!
//! - [`body`]: bodies as structure of arrays behind generation-checked handles, with
//!   awake and resting sets so sleeping and static bodies cost nothing per step.
//! - `narrow.rs`: contact constraints from broadphase pairs and voxel terrain.
//! - `solver.rs`: the soft-step contact solver over graph colours (`block.rs`: a
//!   manifold's normal points solved together).
//! - `store.rs`: where constraints live from step to step.
//! - `wide.rs`: the same solver four or eight constraints at a time, in SIMD lanes
//!   (`lanes.rs`: the lane types, SSE2 and AVX).
//! - `island.rs`: islands by union-find, sleeping groups, waking.
//! - [`debug`]: debug drawing through the [`debug::DebugDraw`] trait.
//! - [`World`]: the step that runs them all (see `world.rs` for the stages).

mod block;
pub mod body;
mod continuous;
pub mod debug;
mod island;
mod lanes;
mod narrow;
mod runs;
pub mod scenes;
mod solver;
#[cfg(test)]
mod stability_tests;
mod step;
mod store;
#[cfg(test)]
mod tests;
mod wide;
mod world;
#[cfg(test)]
mod world_tests;

pub use body::{Bodies, BodyDef, BodyError, BodyId, BodySet, BodyShape, MotionType, SetKind, ShapeDef};
pub use debug::{DebugDraw, DebugDrawFlags};
pub use world::{
    ContactEvent, ContactPointInfo, Solver, StepCounters, StepProfile, StepStage, World, WorldDef, LINEAR_SLOP,
    MAX_LINEAR_SPEED, MAX_ROTATION, SPECULATIVE_DISTANCE,
};
