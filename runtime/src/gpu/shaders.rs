//! The committed SPIR-V of every kernel (compiled by `scripts/shaders.sh` from
//! `vulkan-shaders/*.comp`), with the facts the pipeline needs.

use super::error::GpuError;
use super::layout::{
    BlasRefitPush, GiBakePush, GiCompressPush, GiUpdatePush, SkinPush, TlasBoxesPush, TlasBuildPush, TlasMortonPush,
    TlasSortPush, TracePush,
};
use std::mem::size_of;

/// One kernel's SPIR-V and interface.
pub(crate) struct Shader {
    pub(crate) name: &'static str,
    spirv: &'static [u8],
    /// Size of the push-constant block (the Rust struct in `layout.rs`).
    pub(crate) push_bytes: u32,
    /// Workgroup size, passed as specialization constant 0.
    pub(crate) local_size: u32,
}

impl Shader {
    /// The module as 32-bit words (copied, so the byte array needs no alignment).
    pub(crate) fn words(&self) -> Result<Vec<u32>, GpuError> {
        ash::util::read_spv(&mut std::io::Cursor::new(self.spirv))
            .map_err(|err| GpuError::InvalidInput(format!("SPIR-V of '{}': {err}", self.name)))
    }
}

macro_rules! spirv {
    ($name:literal) => {
        include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/../vulkan-shaders/spv/", $name, ".spv"))
    };
}

pub(crate) const BLAS_REFIT: Shader = Shader {
    name: "blas_refit",
    spirv: spirv!("blas_refit"),
    push_bytes: size_of::<BlasRefitPush>() as u32,
    local_size: 64,
};

pub(crate) const SKIN: Shader =
    Shader { name: "skin", spirv: spirv!("skin"), push_bytes: size_of::<SkinPush>() as u32, local_size: 64 };

/// `kernel!(CONST, "file", Push)` for workgroups of 64, or with a fourth argument,
/// the workgroup size.
macro_rules! kernel {
    ($(#[$doc:meta])* $const:ident, $name:literal, $push:ty) => {
        kernel!($(#[$doc])* $const, $name, $push, 64);
    };
    ($(#[$doc:meta])* $const:ident, $name:literal, $push:ty, $local:literal) => {
        $(#[$doc])*
        pub(crate) const $const: Shader =
            Shader { name: $name, spirv: spirv!($name), push_bytes: size_of::<$push>() as u32, local_size: $local };
    };
}

kernel!(TLAS_BOXES, "tlas_boxes", TlasBoxesPush);
kernel!(TLAS_MORTON, "tlas_morton", TlasMortonPush);
kernel!(TLAS_SORT, "tlas_sort", TlasSortPush);
kernel!(
    /// 256 invocations sort blocks of 512 keys in 4 KiB of shared memory.
    TLAS_SORT_LOCAL, "tlas_sort_local", TlasSortPush, 256);
kernel!(TLAS_HIERARCHY, "tlas_hierarchy", TlasBuildPush);
kernel!(TLAS_REFIT, "tlas_refit", TlasBuildPush);
kernel!(TRACE, "trace", TracePush);
kernel!(
    /// One workgroup of 64 per quadrant of a map (one invocation per texel).
    GI_COMPRESS_MATCH, "gi_compress_match", GiCompressPush, 64);
kernel!(
    /// One workgroup of 256 per batch.
    GI_COMPRESS_APPEND, "gi_compress_append", GiCompressPush, 256);
kernel!(GI_VISIBILITY_RAYS, "gi_visibility_rays", GiBakePush);
kernel!(GI_VISIBILITY_REDUCE, "gi_visibility_reduce", GiBakePush);
kernel!(
    /// One workgroup of 256 per probe.
    GI_VISIBILITY_CENSUS, "gi_visibility_census", GiBakePush, 256);
kernel!(GI_PROBE_RAYS, "gi_probe_rays", GiUpdatePush);
kernel!(GI_SHADOW_RAYS, "gi_shadow_rays", GiUpdatePush);
kernel!(GI_SHADE, "gi_shade", GiUpdatePush);
kernel!(GI_BLEND, "gi_blend", GiUpdatePush);
kernel!(GI_VISIBILITY_SAMPLE, "gi_visibility_sample", GiUpdatePush);
