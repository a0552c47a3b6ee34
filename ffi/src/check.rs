//! The ABI check: `KilnAbiInfo` with the size of every public struct, and
//! `kiln_check_abi`, which the header's inline `kiln_check_linked_abi()` calls. It
//! names every C type, so it sits above every other C module.

use std::mem::size_of;

use crate::abi::{ffi_call, non_null, Error, KilnStatus, KILN_ABI_VERSION, KILN_ERROR_ABI_MISMATCH};
use crate::alloc::KilnAllocator;
use crate::character::{KilnCharacterBodies, KilnCharacterDef, KilnCharacterId, KilnMoveResult, KilnShapeInstance};
use crate::embedded::{KilnEmbeddedDef, KilnGpuBuffer, KilnTraceBuffers};
use crate::events::{KilnBodyMoveEvent, KilnContactHitEvent, KilnSensorEvent, KilnSubmerged, KilnWaterEvent};
use crate::frame::{KilnFrameDef, KilnFrameId, KilnFrameTiming};
use crate::gi::{KilnGiBuffers, KilnGiDef, KilnGiId, KilnGiLighting, KilnGiRefresh, KilnGiScroll, KilnGiStats};
use crate::joint::{
    KilnDistanceJointDef, KilnFixedJointDef, KilnJointBase, KilnJointEvent, KilnPrismaticJointDef,
    KilnRevoluteJointDef, KilnSixDofJointDef, KilnSphericalJointDef,
};
use crate::octree::{KilnOctreeDef, KilnOctreeId, KilnOctreeInfo, KilnOctreePick, KilnOctreeSetId};
use crate::query::{KilnQueryFilter, KilnQueryTarget, KilnShapeCastHit, KilnWorldRayHit};
use crate::runtime::{
    KilnPassContext, KilnPassDef, KilnPassId, KilnPassProfile, KilnProfile, KilnResourceId, KilnRuntimeDef,
    KilnRuntimeId,
};
use crate::shapes::{
    KilnCompoundPart, KilnContactPoint, KilnDistanceResult, KilnManifold, KilnMassProperties, KilnShapeId, KilnSweep,
    KilnToiResult,
};
use crate::terrain::{KilnChunkOverlap, KilnTerrainDef, KilnTerrainId, KilnTerrainOverlap, KilnTerrainStats};
use crate::terrain_query::{KilnMeshCacheStats, KilnRay, KilnTerrainRayHit, KilnTerrainTriangle};
use crate::tracer::{
    KilnAffine, KilnDeviceInfo, KilnGpuPassTiming, KilnInstanceDef, KilnInstanceId, KilnMeshId, KilnSkinnedMeshDef,
    KilnTraceHit, KilnTraceRay, KilnTracerDef, KilnTracerId,
};
use crate::types::{KilnAabb, KilnInt3, KilnQuat, KilnTransform, KilnVec3};
use crate::world::{
    KilnBodyDef, KilnBodyId, KilnContactEvent, KilnDebugDraw, KilnShapeDef, KilnWorldContact, KilnWorldCounters,
    KilnWorldDef, KilnWorldId, KilnWorldProfile,
};
use crate::world::{KilnJointDraw, KilnJointId};

/// Number of public structs whose sizes `kiln_check_linked_abi()` compares: every
/// struct of this header but `KilnAbiInfo` itself.
pub const KILN_ABI_STRUCT_COUNT: usize = 94;

/// The ABI as the caller's header sees it; filled and checked by
/// `kiln_check_linked_abi()` at the end of this header.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KilnAbiInfo {
    /// `sizeof(KilnAbiInfo)`.
    pub struct_size: u32,
    /// `KILN_ABI_VERSION` of the caller's header.
    pub abi_version: u32,
    /// `sizeof` of every public struct, in the order `kiln_check_linked_abi()` lists
    /// them (the order of the header's struct definitions).
    pub struct_sizes: [u32; KILN_ABI_STRUCT_COUNT],
}

/// The structs of `KilnAbiInfo::struct_sizes`, in order, as a list the library and
/// its tests share (the header's `kiln_check_linked_abi()` lists them again; a test
/// compares the two).
macro_rules! abi_structs {
    ($($name:ident),* $(,)?) => {
        /// The names of the structs of [`KilnAbiInfo::struct_sizes`], in order.
        pub const ABI_STRUCT_NAMES: [&str; KILN_ABI_STRUCT_COUNT] = [$(stringify!($name)),*];

        impl KilnAbiInfo {
            /// The library's own view.
            pub fn current() -> KilnAbiInfo {
                KilnAbiInfo {
                    struct_size: size_of::<KilnAbiInfo>() as u32,
                    abi_version: KILN_ABI_VERSION,
                    struct_sizes: [$(size_of::<$name>() as u32),*],
                }
            }
        }
    };
}

abi_structs!(
    KilnAllocator,
    KilnVec3,
    KilnCharacterDef,
    KilnCharacterId,
    KilnTerrainId,
    KilnRuntimeId,
    KilnShapeId,
    KilnQuat,
    KilnTransform,
    KilnShapeInstance,
    KilnMoveResult,
    KilnEmbeddedDef,
    KilnTracerId,
    KilnTraceRay,
    KilnTraceHit,
    KilnWorldId,
    KilnGiId,
    KilnFrameDef,
    KilnFrameId,
    KilnFrameTiming,
    KilnProfile,
    KilnPassId,
    KilnPassProfile,
    KilnGpuPassTiming,
    KilnGiDef,
    KilnGiLighting,
    KilnGiStats,
    KilnOctreeSetId,
    KilnOctreeDef,
    KilnOctreeId,
    KilnAabb,
    KilnOctreeInfo,
    KilnRay,
    KilnOctreePick,
    KilnRuntimeDef,
    KilnResourceId,
    KilnPassContext,
    KilnPassDef,
    KilnCompoundPart,
    KilnMassProperties,
    KilnDistanceResult,
    KilnContactPoint,
    KilnManifold,
    KilnSweep,
    KilnToiResult,
    KilnTerrainDef,
    KilnInt3,
    KilnTerrainOverlap,
    KilnChunkOverlap,
    KilnTerrainStats,
    KilnTerrainRayHit,
    KilnTerrainTriangle,
    KilnMeshCacheStats,
    KilnTracerDef,
    KilnAffine,
    KilnInstanceDef,
    KilnSkinnedMeshDef,
    KilnDeviceInfo,
    KilnBodyId,
    KilnWorldDef,
    KilnBodyDef,
    KilnShapeDef,
    KilnWorldContact,
    KilnDebugDraw,
    KilnWorldProfile,
    KilnWorldCounters,
    KilnContactEvent,
    KilnJointBase,
    KilnSphericalJointDef,
    KilnRevoluteJointDef,
    KilnPrismaticJointDef,
    KilnFixedJointDef,
    KilnDistanceJointDef,
    KilnJointId,
    KilnJointEvent,
    KilnJointDraw,
    KilnSixDofJointDef,
    KilnQueryFilter,
    KilnQueryTarget,
    KilnWorldRayHit,
    KilnShapeCastHit,
    KilnSensorEvent,
    KilnBodyMoveEvent,
    KilnContactHitEvent,
    KilnCharacterBodies,
    KilnWaterEvent,
    KilnSubmerged,
    KilnMeshId,
    KilnInstanceId,
    KilnGpuBuffer,
    KilnTraceBuffers,
    KilnGiBuffers,
    KilnGiRefresh,
    KilnGiScroll,
);

/// Refuses a library whose ABI differs from the caller's header. Prefer the inline
/// `kiln_check_linked_abi()`, which fills `info` from the header.
/// Returns `KILN_ERROR_ABI_MISMATCH` with every difference in the message.
///
/// Pointers: `info` is NULL or points to a readable `KilnAbiInfo`.
///
/// Threads: any thread, at any time.
#[no_mangle]
pub unsafe extern "C" fn kiln_check_abi(info: *const KilnAbiInfo) -> KilnStatus {
    ffi_call("kiln_check_abi", || {
        let info = non_null(info, "info")?;
        // SAFETY: non-null, and the caller promises a readable struct; read its first
        // field alone before trusting the layout.
        let struct_size = unsafe { std::ptr::read_unaligned(info.cast::<u32>()) };
        let ours = KilnAbiInfo::current();
        if struct_size != ours.struct_size {
            return Err(Error::new(
                KILN_ERROR_ABI_MISMATCH,
                format!("KilnAbiInfo is {struct_size} bytes in your header but {} in the library", ours.struct_size),
            ));
        }
        // SAFETY: sizes agree, so the struct is complete.
        let theirs = unsafe { *info };
        let mut mismatches: Vec<String> = Vec::new();
        if theirs.abi_version != ours.abi_version {
            mismatches.push(format!(
                "KILN_ABI_VERSION is {} in your header but {} in the library",
                theirs.abi_version, ours.abi_version
            ));
        }
        let sizes = ABI_STRUCT_NAMES.iter().zip(theirs.struct_sizes.iter().zip(&ours.struct_sizes));
        for (name, (header, library)) in sizes.filter(|(_, (header, library))| header != library) {
            mismatches.push(format!("sizeof({name}) is {header} in your header but {library} in the library"));
        }
        if mismatches.is_empty() {
            Ok(())
        } else {
            Err(Error::new(
                KILN_ERROR_ABI_MISMATCH,
                format!("libkiln {} does not match this program: {}", env!("CARGO_PKG_VERSION"), mismatches.join("; ")),
            ))
        }
    })
}
