//! Narrowphase: distances, contact manifolds and times of impact between shapes.

pub mod gjk;
