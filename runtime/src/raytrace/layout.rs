//! The scene's data as the traversal reads it, on the CPU and on the GPU alike:
//! instances, BLAS references, TLAS nodes, rays and hits (`#[repr(C)]`, std430-
//! compatible; `gpu::layout` generates their GLSL twins and checks the offsets).

use bytemuck::{Pod, Zeroable};
use std::mem::size_of;

/// One TLAS instance: an affine transform and its inverse (three rows of `[m | t]`
/// each), the BLAS it points at, a visibility mask and the caller's id.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct GpuInstance {
    pub object_to_world: [[f32; 4]; 3],
    pub world_to_object: [[f32; 4]; 3],
    pub blas: u32,
    pub mask: u32,
    pub user_id: u32,
    pub _pad: u32,
}
const _: () = assert!(size_of::<GpuInstance>() == 112);

/// Where one BLAS lives in the shared BLAS arrays (nodes, triangles, positions).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Pod, Zeroable)]
pub struct BlasRef {
    pub node_base: u32,
    pub triangle_base: u32,
    pub position_base: u32,
    pub triangle_count: u32,
}
const _: () = assert!(size_of::<BlasRef>() == 16);

/// A TLAS node. Internal: `left`/`right` are node indices. Leaf: `left` is the
/// instance index and `right` is [`TLAS_LEAF`]. 32 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct TlasNode {
    pub lo: [f32; 3],
    pub left: u32,
    pub hi: [f32; 3],
    pub right: u32,
}
const _: () = assert!(size_of::<TlasNode>() == 32);

/// `TlasNode::right` of a leaf.
pub const TLAS_LEAF: u32 = u32::MAX;

/// A ray of a traced batch: hits count for `t_min <= t <= t_max` on instances whose
/// mask shares a bit with `mask`. 48 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct GpuRay {
    pub origin: [f32; 3],
    pub t_min: f32,
    pub dir: [f32; 3],
    pub t_max: f32,
    pub mask: u32,
    pub _pad0: u32,
    pub _pad1: u32,
    pub _pad2: u32,
}
const _: () = assert!(size_of::<GpuRay>() == 48);

/// The result for one ray. A miss has `instance == NO_HIT`. `normal` is the
/// geometric normal in world space (unit length, facing the side the triangle's
/// winding makes front); `flags` bit 0 is set for a back-face hit. 48 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct GpuHit {
    pub t: f32,
    pub instance: u32,
    pub primitive: u32,
    pub flags: u32,
    pub normal: [f32; 3],
    pub u: f32,
    pub v: f32,
    pub user_id: u32,
    pub _pad0: u32,
    pub _pad1: u32,
}
const _: () = assert!(size_of::<GpuHit>() == 48);

/// `GpuHit::instance` of a miss.
pub const NO_HIT: u32 = u32::MAX;
/// `GpuHit::flags`: the ray hit the triangle's back face.
pub const HIT_BACKFACE: u32 = 1;
