//! Vulkan compute: the device, buffers, kernels and the GPU passes: skinning, BLAS
//! refit, TLAS rebuild and two-level ray traversal.
//!
//! ```text
//!  context.rs    loader, instance (+ validation), device choice, queue, allocator
//!  queue.rs      Gpu: command buffer + fence + staging ring + timestamps
//!  recorder.rs   Recorder: commands as a frame graph; its hazards become barriers
//!  buffer.rs     GpuBuffer: device-local or host-visible, with a device address
//!  kernel.rs     Kernel: a compute pipeline fed only by push constants
//!  shaders.rs    committed SPIR-V (scripts/shaders.sh compiles vulkan-shaders/)
//!  layout.rs     #[repr(C)] structs shared with GLSL; kiln_layout.glsl is generated
//!  blas.rs       CPU BLAS build (binned SAH), node layout, CPU refit reference
//!  blas_refit.rs GPU refit: one invocation per leaf, atomic climb to the root
//!  skin.rs       GPU linear blend skinning and its CPU reference
//!  scene.rs      meshes (BLAS ranges in shared arrays) + instances; GpuScene buffers
//!  tlas.rs       per-frame GPU LBVH over instances and its CPU reference
//!  trace.rs      two-level traversal kernel and its CPU reference
//!  ray_tracer.rs RayTracer: device + scene + per-frame inputs; trace ray batches
//!  gi_bake.rs    DDGI visibility bake: texel rays, trace, per-texel reduce
//!  gi_compress.rs DDGI visibility compression (dictionary, batches chained on the GPU)
//!  gi_update.rs  DDGI irradiance update: probe rays, trace, shadow rays, shade, blend
//!  gi_volume.rs  GiVolume: placement, bake, per-frame probe budget, sampling
//!  gi_recorded.rs  GiVolume's bake, refresh and scroll recorded into an engine's
//!                command buffers (embedded mode)
//! ```
//!
//! Vulkan is optional at run time: without a loader or a device, [`Gpu::new`]
//! returns [`GpuError::NoLoader`] or [`GpuError::NoDevice`], and nothing on the CPU
//! side depends on it.
//!
//! Requirements on the device (checked when choosing it): Vulkan 1.2, a compute
//! queue, `bufferDeviceAddress` and `vulkanMemoryModel` (+ device scope). lavapipe
//! and every desktop driver of the last years have them.
//!
//! Two ways to own the device: standalone ([`Gpu::new`]: Kiln creates instance,
//! device and queue, and submits and waits itself) and embedded ([`Gpu::embedded`]:
//! the engine hands in its handles, and Kiln records its passes into the engine's
//! command buffer with [`Gpu::record_into`]).

mod blas_refit;
mod buffer;
mod context;
mod error;
mod gi_bake;
mod gi_compress;
mod gi_recorded;
mod gi_update;
mod gi_volume;
mod kernel;
mod layout;
mod queue;
mod ray_tracer;
mod recorder;
mod scene;
mod shaders;
mod skin;
mod tlas;
mod trace;
mod tracer_terrain;

/// The CPU ray-tracing reference, which the GPU passes mirror (`crate::raytrace`).
pub use crate::raytrace::{
    box_mesh, grid_mesh, instance_box, internal_children, invert_affine, morton, sorted_keys, sphere_mesh, trace_cpu,
    Affine, Blas, BlasError, BoneMatrix, BvhNode, CpuTlas, Scene, SkinData, TraceScene, IDENTITY, MAX_DEPTH,
    MAX_LEAF_TRIANGLES, NO_PARENT, TLAS_STACK,
};
/// The Vulkan types of Kiln's API (`ash::vk`), for callers without their own `ash`.
pub use ash::vk;
pub use blas_refit::{BlasRefit, GpuBlas};
pub use buffer::{BufferMemory, GpuBuffer, MAX_BUFFER_BYTES};
pub use context::{teardown_messages, DeviceChoice, DeviceInfo, DeviceKind, EmbeddedDevice, GpuConfig};
pub use error::GpuError;
pub use gi_bake::{GiBaker, BAKE_BATCH_PROBES};
pub use gi_compress::{GiCompressor, GpuVisibility, MAX_COMPRESS_BATCH};
pub use gi_recorded::Rebake;
pub use gi_update::{DeviceVisibility, GiUpdater, GpuProbeField, MAX_RAYS_PER_PROBE};
pub use gi_volume::{GiBuffers, GiStats, GiVolume, MAX_VOLUME_PROBES};
pub use kernel::Kernel;
pub use layout::{
    BlasRef, BlasRefitPush, GpuHit, GpuInstance, GpuRay, SkinPush, TlasNode, TraceAddresses, HIT_BACKFACE, NO_HIT,
    TLAS_LEAF,
};
pub use queue::{Gpu, GpuTiming, GpuWait};
pub use ray_tracer::{
    compose, isometry_affine, BufferView, InstanceId, MeshId, PendingHits, RayTracer, TraceBuffers, TraceMode,
    MAX_TRACE_BATCH,
};
pub use recorder::{Download, Recorder, SyncStats, Use};
pub use scene::{GpuScene, TransientLens, TransientSlot};
pub use skin::{GpuSkin, Skin};
pub use tlas::TlasBuilder;
pub use trace::Tracer;
pub use tracer_terrain::TerrainSync;

/// Whether `KILN_REQUIRE_GPU=1` is set: GPU tests then fail instead of skipping
/// when no device is available.
pub fn gpu_required() -> bool {
    std::env::var("KILN_REQUIRE_GPU").is_ok_and(|v| v == "1")
}

/// Opens a validating context for a test. Without a device: panics when
/// [`gpu_required`], otherwise prints why and returns `None` (the test then skips,
/// visibly).
///
/// GPU tests run one at a time: the Vulkan loader's debug-utils terminator walks
/// its global instance list while another test's thread may be creating or
/// destroying an instance (seen as a crash inside `vkSetDebugUtilsObjectNameEXT`
/// under AddressSanitizer). The lock is taken here and held by the test's thread
/// until it ends (libtest gives each test a thread); a second call on the same
/// thread keeps it.
#[cfg(test)]
pub(crate) fn test_gpu(test: &str) -> Option<Gpu> {
    use std::cell::RefCell;
    use std::sync::{Mutex, MutexGuard};
    static GPU_TESTS: Mutex<()> = Mutex::new(());
    thread_local! {
        static HELD: RefCell<Option<MutexGuard<'static, ()>>> = const { RefCell::new(None) };
    }
    HELD.with(|held| {
        let mut held = held.borrow_mut();
        if held.is_none() {
            *held = Some(GPU_TESTS.lock().unwrap_or_else(|p| p.into_inner()));
        }
    });
    match Gpu::new(&GpuConfig { validation: true, ..GpuConfig::from_env() }) {
        Ok(gpu) => Some(gpu),
        Err(err) if gpu_required() => panic!("{test}: KILN_REQUIRE_GPU=1 but no GPU: {err}"),
        Err(err) => {
            eprintln!("{test}: SKIPPED (no Vulkan device: {err}; set KILN_REQUIRE_GPU=1 to fail instead)");
            None
        }
    }
}

/// Asserts that the validation layer reported nothing.
#[cfg(test)]
pub(crate) fn assert_validation_clean(gpu: &Gpu) {
    let messages = gpu.validation_messages();
    assert!(messages.is_empty(), "{} validation messages:\n{}", messages.len(), messages.join("\n"));
}

#[cfg(test)]
mod gi_follow_tests;
#[cfg(test)]
mod gi_tests;
#[cfg(test)]
mod scene_tests;
#[cfg(test)]
pub(crate) mod tests;
