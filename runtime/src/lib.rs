pub mod frame;
pub mod jobs;
pub mod runtime;

pub use runtime::{Runtime, Workers};
