//! A ray-tracing scene on the device: [`GpuScene`] uploads a `raytrace::Scene`
//! (meshes and instances, built on the CPU):
//!
//! ```text
//!  Scene (CPU, raytrace::scene)         GpuScene (device)
//!  add_mesh -> Blas, appended to the    blas_nodes / triangles / positions: one
//!    shared node, triangle and vertex     array each, every BLAS a range in them
//!    arrays; BlasRef = its offsets        (the permanent segment), blas_refs
//!  add_instance / set_transform ->      instances: rewritten each frame
//!    GpuInstance with its inverse       tlas nodes, parents, counters, keys, bounds
//! ```

use super::blas_refit::BlasRefit;
use super::buffer::{BufferMemory, GpuBuffer};
use super::error::GpuError;
use super::layout::BlasRef;
use super::layout::BlasRefitPush;
use super::queue::Gpu;
use super::recorder::{Recorder, Use};
use super::skin::{GpuSkin, Skin};
use crate::raytrace::blas::BvhNode;
use crate::raytrace::scene::RefitRange;
use crate::raytrace::{BoneMatrix, Scene};

/// The scene's buffers on the device.
pub struct GpuScene {
    pub(crate) blas_refs: GpuBuffer,
    pub(crate) blas_nodes: GpuBuffer,
    pub(crate) triangles: GpuBuffer,
    pub(crate) positions: GpuBuffer,
    pub(crate) instances: GpuBuffer,
    pub(crate) tlas_nodes: GpuBuffer,
    pub(crate) parents: GpuBuffer,
    pub(crate) counters: GpuBuffer,
    pub(crate) keys: GpuBuffer,
    pub(crate) leaf_boxes: GpuBuffer,
    pub(crate) bounds: GpuBuffer,
    pub(crate) instance_count: u32,
    pub(crate) padded: u32,
    blas_parents: GpuBuffer,
    blas_leaves: GpuBuffer,
    blas_counters: GpuBuffer,
    skins: Vec<(GpuSkin, u32)>,
    refit_ranges: Vec<(RefitRange, BlasRef)>,
}

impl GpuScene {
    /// Uploads the meshes and sizes the per-instance buffers for the scene's current
    /// instance count (call again after adding instances).
    pub fn new(gpu: &mut Gpu, scene: &Scene) -> Result<GpuScene, GpuError> {
        let n = scene.instances.len().max(1) as u64;
        let padded = n.next_power_of_two();
        let nodes = 2 * n - 1;
        Ok(GpuScene {
            blas_refs: gpu.buffer_from("scene blas refs", &scene.blas_refs)?,
            blas_nodes: gpu.buffer_from("scene blas nodes", &scene.nodes)?,
            triangles: gpu.buffer_from("scene triangles", &scene.triangles)?,
            positions: gpu.buffer_from("scene positions", &scene.positions)?,
            instances: gpu.buffer("scene instances", n * 112, BufferMemory::Device)?,
            tlas_nodes: gpu.buffer("tlas nodes", nodes * 32, BufferMemory::Device)?,
            parents: gpu.buffer("tlas parents", nodes * 4, BufferMemory::Device)?,
            counters: gpu.buffer("tlas counters", nodes * 4, BufferMemory::Device)?,
            keys: gpu.buffer("tlas keys", padded * 8, BufferMemory::Device)?,
            leaf_boxes: gpu.buffer("tlas instance boxes", n * 32, BufferMemory::Device)?,
            bounds: gpu.buffer("tlas scene bounds", 6 * 4, BufferMemory::Device)?,
            instance_count: scene.instances.len() as u32,
            padded: padded as u32,
            blas_parents: gpu.buffer_from("scene blas parents", &scene.parents)?,
            blas_leaves: gpu.buffer_from("scene blas leaves", &scene.leaves)?,
            blas_counters: gpu.buffer(
                "scene blas refit counters",
                4 * u64::from(scene.skinned.iter().map(|s| scene.refit[s.mesh as usize].node_count).max().unwrap_or(1)),
                BufferMemory::Device,
            )?,
            skins: scene
                .skinned
                .iter()
                .map(|s| GpuSkin::upload(gpu, &s.skin).map(|skin| (skin, s.mesh)))
                .collect::<Result<_, _>>()?,
            refit_ranges: scene.refit.iter().copied().zip(scene.blas_refs.iter().copied()).collect(),
        })
    }

    /// Records skinning and refit of every skinned instance's private BLAS: `bones`
    /// holds one bone array per skinned slot. Skinning writes the copy's vertices in
    /// place; the refit then runs on that BLAS's range of the shared arrays.
    pub fn record_skinning(
        &self,
        rec: &mut Recorder<'_>,
        skin: &Skin,
        refit: &BlasRefit,
        bones: &[&[BoneMatrix]],
    ) -> Result<(), GpuError> {
        if bones.len() != self.skins.len() {
            return Err(GpuError::InvalidInput(format!(
                "{} bone sets for {} skinned slots",
                bones.len(),
                self.skins.len()
            )));
        }
        for ((gpu_skin, mesh), bones) in self.skins.iter().zip(bones) {
            let (range, blas) = self.refit_ranges[*mesh as usize];
            let positions = self.positions.address() + 12 * u64::from(blas.position_base);
            skin.record_at(rec, gpu_skin, bones, &self.positions, positions)?;
            rec.fill(&self.blas_counters, 0);
            let push = BlasRefitPush {
                nodes: self.blas_nodes.address() + 32 * u64::from(range.node_base),
                parents: self.blas_parents.address() + 4 * u64::from(range.node_base),
                leaves: self.blas_leaves.address() + 4 * u64::from(range.leaf_base),
                triangles: self.triangles.address() + 16 * u64::from(blas.triangle_base),
                positions,
                counters: self.blas_counters.address(),
                leaf_count: range.leaf_count,
                _pad: 0,
            };
            let uses = [
                Use::read(&self.blas_parents),
                Use::read(&self.blas_leaves),
                Use::read(&self.triangles),
                Use::read(&self.positions),
                Use::write(&self.blas_nodes),
                Use::write(&self.blas_counters),
            ];
            refit.record_push(rec, &push, &uses)?;
        }
        Ok(())
    }

    /// Reads back the skinned vertices of every slot (for CPU references and tests).
    pub fn read_skinned_positions(&self, gpu: &mut Gpu) -> Result<Vec<Vec<[f32; 3]>>, GpuError> {
        let mut out = Vec::new();
        for (skin, mesh) in &self.skins {
            let base = 12 * u64::from(self.refit_ranges[*mesh as usize].1.position_base);
            let len = 12 * u64::from(skin.vertex_count);
            let download = gpu.submit("read skinned", |rec| rec.download(&self.positions, base, len))?;
            out.push(download.to_vec());
        }
        Ok(out)
    }

    /// Reads back the BLAS nodes of every mesh (for CPU references and tests).
    pub fn read_blas_nodes(&self, gpu: &mut Gpu) -> Result<Vec<BvhNode>, GpuError> {
        let count = self.refit_ranges.last().map_or(0, |(r, _)| (r.node_base + r.node_count) as usize);
        gpu.read(&self.blas_nodes, count)
    }

    /// Records the upload of every instance (transforms, masks, ids).
    pub fn upload_instances(&self, rec: &mut Recorder<'_>, scene: &Scene) -> Result<(), GpuError> {
        if scene.instances.len() as u32 != self.instance_count {
            return Err(GpuError::InvalidInput(format!(
                "the GPU scene was sized for {} instances, the scene has {}: recreate it",
                self.instance_count,
                scene.instances.len()
            )));
        }
        rec.upload(&self.instances, 0, bytemuck::cast_slice(&scene.instances))
    }

    pub fn instance_count(&self) -> u32 {
        self.instance_count
    }

    /// The TLAS nodes buffer (`2n - 1` nodes once built).
    pub fn tlas_nodes(&self) -> &GpuBuffer {
        &self.tlas_nodes
    }

    /// The sorted keys buffer (`(Morton code, instance)` pairs, padded).
    pub fn keys(&self) -> &GpuBuffer {
        &self.keys
    }
}
