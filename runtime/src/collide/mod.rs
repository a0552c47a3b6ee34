//! Narrowphase: distances, contact manifolds and times of impact between shapes.
//!
//! - [`gjk`]: distance and closest points of convex cores.
//! - `sat.rs`: polyhedron contact by separating axes and clipping; `box_box.rs`
//!   its closed form for two boxes.
//! - `rounded.rs`: sphere and capsule contacts on their cores.
//! - [`contact`]: the dispatcher over shape pairs, compounds included.
//! - [`manifold`]: the four-point manifold and its reduction.
//! - [`segment`]: closest points of segments.

mod box_box;
#[cfg(test)]
mod coherence_tests;
pub mod contact;
pub mod gjk;
pub mod manifold;
pub mod mesh;
mod rounded;
mod sat;
pub mod segment;
#[cfg(test)]
pub(crate) mod tests;
pub mod toi;

pub use contact::{collide, collide_all, collide_coherent, for_each_proxy, proxy, shape_distance};
pub use gjk::{distance, Distance, Proxy};
pub use manifold::{Manifold, ManifoldPoint};
pub use mesh::{collide_triangles, collide_triangles_with, TriangleAxes, TriangleSet};
pub use sat::{SatCache, SatTest, SeparatingAxis};
pub use toi::{shape_time_of_impact, time_of_impact, Sweep, Toi, ToiState};
