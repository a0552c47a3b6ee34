//! Spatial structures: the dynamic AABB tree over bodies and the body broadphase.

mod broadphase;
mod tree;
mod tree_build;
mod tree_query;

pub use broadphase::{BroadPhase, Pair};
pub use tree::{Balancing, DynamicTree, ProxyId, TreeConfig, TreeQuality};

#[cfg(test)]
pub(crate) mod tests;
