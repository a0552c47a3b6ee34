//! Spatial structures: the dynamic AABB tree over bodies, the body broadphase, and
//! the loose kD tree over triangle meshes, a four-wide BVH over them for rays, and
//! octrees for editor picking.

mod broadphase;
mod kdtree;
pub mod octree;
mod ray_bvh;
mod tree;
mod tree_build;
mod tree_query;

pub use broadphase::{BroadPhase, Pair};
pub(crate) use kdtree::TreeWalk;
pub use kdtree::{KdError, KdMesh, MeshHit, MeshMode, TriMesh, KD_MAX_DEPTH, RAY_LANES};
pub use ray_bvh::{RayAim, RayBvh, StepWalk};
pub use tree::{Balancing, DynamicTree, ProxyId, TreeConfig, TreeQuality};

#[cfg(test)]
pub(crate) mod tests;
