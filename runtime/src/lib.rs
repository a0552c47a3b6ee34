pub mod frame;
pub mod jobs;
