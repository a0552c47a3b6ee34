//! Ray tracing on the CPU: the BLAS build (SAH BVH over a mesh), the scene of meshes
//! and instances, the TLAS (a linear BVH over the instances), two-level traversal and
//! skinning. It is the reference every GPU pass of `gpu` is tested against, and the
//! tracer that DDGI's CPU path (`gi`) uses; the types of [`layout`] are the ones the
//! GPU reads. Below both `gi` and `gpu` (docs/ARCHITECTURE.md).

pub mod blas;
pub mod layout;
pub mod scene;
pub mod skin;
pub mod slots;
pub mod tlas;
pub mod trace;

pub use blas::{
    validate_mesh, Blas, BlasError, BvhNode, MAX_DEPTH, MAX_LEAF_TRIANGLES, MAX_TRIANGLES, NO_PARENT, SAH_DEPTH,
};
pub use layout::{BlasRef, GpuHit, GpuInstance, GpuRay, TlasNode, HIT_BACKFACE, NO_HIT, TLAS_LEAF};
pub use scene::{box_mesh, grid_mesh, invert_affine, sphere_mesh, Affine, Scene, IDENTITY};
pub use skin::{BoneMatrix, SkinData};
pub use slots::{SlotId, Slots};
pub use tlas::{instance_box, internal_children, morton, sorted_keys, CpuTlas, BOX_PADDING, TLAS_STACK};
pub use trace::{trace_cpu, TraceScene};

/// A scene, mesh or skin refused before anything changed, with the reason.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SceneError(pub String);

impl std::fmt::Display for SceneError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SceneError {}
