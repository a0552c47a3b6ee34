pub mod character;
mod codec;
pub mod collide;
pub mod frame;
pub mod gi;
pub mod gpu;
pub mod integrated;
pub mod jobs;
pub mod math;
pub mod physics;
mod profiling;
pub mod query;
pub mod raytrace;
pub mod runtime;
pub mod shapes;
pub mod spatial;
pub mod terrain;

pub use runtime::{Runtime, Workers};
