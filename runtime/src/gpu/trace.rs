//! Two-level ray traversal on the GPU (`vulkan-shaders/trace.comp`): the [`Tracer`]
//! kernel. Its CPU twin, the reference of the tests, is `raytrace::trace`.

use super::buffer::GpuBuffer;
use super::error::GpuError;
use super::kernel::Kernel;
use super::layout::TracePush;
use super::queue::Gpu;
use super::recorder::{Recorder, Use};
use super::scene::GpuScene;
use super::shaders;

/// The traversal kernel.
pub struct Tracer {
    kernel: Kernel,
}

impl Tracer {
    pub fn new(gpu: &Gpu) -> Result<Tracer, GpuError> {
        Ok(Tracer { kernel: gpu.kernel(&shaders::TRACE)? })
    }

    /// Records the tracing of `count` rays from `rays` (`GpuRay[]`) into `hits`
    /// (`GpuHit[]`) against the scene's last built TLAS.
    pub fn record(
        &self,
        rec: &mut Recorder<'_>,
        scene: &GpuScene,
        rays: &GpuBuffer,
        hits: &GpuBuffer,
        count: u32,
        any_hit: bool,
    ) -> Result<(), GpuError> {
        rays.check_range("rays", 0, 48 * u64::from(count))?;
        hits.check_range("hits", 0, 48 * u64::from(count))?;
        if scene.instance_count == 0 {
            return Err(GpuError::InvalidInput("trace: the scene has no instances".into()));
        }
        let push = TracePush {
            rays: rays.address(),
            hits: hits.address(),
            scene: scene.trace_scene(),
            ray_count: count,
            any_hit: u32::from(any_hit),
        };
        let uses = [
            Use::read(rays),
            Use::read(&scene.tlas_nodes),
            Use::read(&scene.instances),
            Use::read(&scene.blas_refs),
            Use::read(&scene.blas_nodes),
            Use::read(&scene.triangles),
            Use::read(&scene.positions),
            Use::write(hits),
        ];
        rec.dispatch_threads(&self.kernel, &push, count, &uses)
    }
}
