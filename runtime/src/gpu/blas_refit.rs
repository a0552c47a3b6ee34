//! BLAS refit on the GPU (`vulkan-shaders/blas_refit.comp`): after skinning moves a
//! mesh's vertices, one invocation per leaf recomputes its box and climbs to the
//! root; per-node atomic counters let the second arriving child finish each parent,
//! so no invocation waits on another. [`Blas::refit`] is the CPU reference.

use super::buffer::GpuBuffer;
use super::error::GpuError;
use super::kernel::Kernel;
use super::layout::BlasRefitPush;
use super::queue::Gpu;
use super::recorder::{Recorder, Use};
use super::shaders;
use crate::raytrace::blas::Blas;

/// One BLAS on the device: its topology, its vertex positions and the refit
/// counters. Positions may be rewritten every frame (skinning); topology never.
pub struct GpuBlas {
    pub nodes: GpuBuffer,
    pub parents: GpuBuffer,
    pub leaves: GpuBuffer,
    pub triangles: GpuBuffer,
    pub positions: GpuBuffer,
    counters: GpuBuffer,
    pub node_count: u32,
    pub leaf_count: u32,
    pub vertex_count: u32,
}

impl GpuBlas {
    /// Uploads `blas` and the vertex `positions` it was built over.
    pub fn upload(gpu: &mut Gpu, blas: &Blas, positions: &[[f32; 3]]) -> Result<GpuBlas, GpuError> {
        if positions.len() != blas.vertex_count {
            return Err(GpuError::InvalidInput(format!(
                "BLAS built over {} vertices, {} given",
                blas.vertex_count,
                positions.len()
            )));
        }
        Ok(GpuBlas {
            nodes: gpu.buffer_from("blas nodes", &blas.nodes)?,
            parents: gpu.buffer_from("blas parents", &blas.parents)?,
            leaves: gpu.buffer_from("blas leaves", &blas.leaves)?,
            triangles: gpu.buffer_from("blas triangles", &blas.triangles)?,
            positions: gpu.buffer_from("blas positions", positions)?,
            counters: gpu.buffer("blas refit counters", 4 * blas.nodes.len() as u64, super::BufferMemory::Device)?,
            node_count: blas.nodes.len() as u32,
            leaf_count: blas.leaves.len() as u32,
            vertex_count: blas.vertex_count as u32,
        })
    }
}

/// The refit kernel.
pub struct BlasRefit {
    pub(crate) kernel: Kernel,
}

impl BlasRefit {
    pub fn new(gpu: &Gpu) -> Result<BlasRefit, GpuError> {
        Ok(BlasRefit { kernel: gpu.kernel(&shaders::BLAS_REFIT)? })
    }

    /// Records the refit of `blas` over its current positions: zero the counters,
    /// then one dispatch.
    pub fn record(&self, rec: &mut Recorder<'_>, blas: &GpuBlas) -> Result<(), GpuError> {
        rec.fill(&blas.counters, 0);
        self.record_push(
            rec,
            &BlasRefitPush {
                nodes: blas.nodes.address(),
                parents: blas.parents.address(),
                leaves: blas.leaves.address(),
                triangles: blas.triangles.address(),
                positions: blas.positions.address(),
                counters: blas.counters.address(),
                leaf_count: blas.leaf_count,
                _pad: 0,
            },
            &[
                Use::read(&blas.parents),
                Use::read(&blas.leaves),
                Use::read(&blas.triangles),
                Use::read(&blas.positions),
                Use::write(&blas.nodes),
                Use::write(&blas.counters),
            ],
        )
    }

    /// Records the dispatch for explicit addresses (a BLAS range inside shared
    /// arrays, which `uses` names); the counters must be zero.
    pub(crate) fn record_push(
        &self,
        rec: &mut Recorder<'_>,
        push: &BlasRefitPush,
        uses: &[Use<'_>],
    ) -> Result<(), GpuError> {
        rec.dispatch_threads(&self.kernel, push, push.leaf_count, uses)
    }
}
