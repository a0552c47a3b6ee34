//! The rigid-body world (work in progress; see issue 7).
//!
//! Built so far: bodies as structure of arrays behind generation-checked handles
//! ([`body`]), with awake and resting sets so sleeping and static bodies cost nothing
//! per step, shapes attached with density, friction, restitution and filter bits, mass
//! from the shapes; and the step's two integration stages as parallel jobs over the
//! awake set:
//!
//! 1. integrate velocities: gravity, accumulated forces and torques, damping;
//! 2. (to come: broadphase update, pair finding, narrowphase, constraint coloring,
//!    the velocity solver, position correction, sleep);
//! 3. integrate positions: the centre moves by `v dt`, the rotation by `ω dt`
//!    (first-order quaternion update, renormalised), world inverse inertia refreshed.
//!
//! Each body's update reads and writes only its own row, so the result is the same
//! bits for any worker count.

pub mod body;
#[cfg(test)]
mod tests;
mod world;

pub use body::{Bodies, BodyDef, BodyError, BodyId, BodySet, BodyShape, MotionType, SetKind, ShapeDef};
pub use world::{World, WorldDef};
