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

/// Instances per dirty block: [`GpuScene::upload_instances`] uploads whole blocks.
pub const INSTANCE_BLOCK: u32 = 64;

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
    /// Instances the per-instance buffers hold room for (a power of two).
    capacity: u32,
    meshes: MeshBuffers,
}

/// What the device holds per mesh: replaced whole when the meshes change.
struct MeshBuffers {
    blas_parents: GpuBuffer,
    blas_leaves: GpuBuffer,
    blas_counters: GpuBuffer,
    skins: Vec<(GpuSkin, u32)>,
    refit_ranges: Vec<(RefitRange, BlasRef)>,
}

/// The per-instance buffers for `capacity` instances (a power of two).
struct InstanceBuffers {
    instances: GpuBuffer,
    tlas_nodes: GpuBuffer,
    parents: GpuBuffer,
    counters: GpuBuffer,
    keys: GpuBuffer,
    leaf_boxes: GpuBuffer,
}

impl InstanceBuffers {
    fn new(gpu: &Gpu, capacity: u32) -> Result<InstanceBuffers, GpuError> {
        let n = u64::from(capacity);
        let nodes = 2 * n - 1;
        Ok(InstanceBuffers {
            instances: gpu.buffer("scene instances", n * 112, BufferMemory::Device)?,
            tlas_nodes: gpu.buffer("tlas nodes", nodes * 32, BufferMemory::Device)?,
            parents: gpu.buffer("tlas parents", nodes * 4, BufferMemory::Device)?,
            counters: gpu.buffer("tlas counters", nodes * 4, BufferMemory::Device)?,
            keys: gpu.buffer("tlas keys", n * 8, BufferMemory::Device)?,
            leaf_boxes: gpu.buffer("tlas instance boxes", n * 32, BufferMemory::Device)?,
        })
    }
}

/// Room for `count` instances: the next power of two, at least one block.
fn instance_capacity(count: usize) -> u32 {
    (count.max(INSTANCE_BLOCK as usize) as u32).next_power_of_two()
}

impl GpuScene {
    /// Uploads the meshes and sizes the per-instance buffers with room for the
    /// scene's instances (uploaded by [`GpuScene::upload_instances`]).
    pub fn new(gpu: &mut Gpu, scene: &Scene) -> Result<GpuScene, GpuError> {
        let capacity = instance_capacity(scene.instances.len());
        let per_instance = InstanceBuffers::new(gpu, capacity)?;
        let (blas_refs, blas_nodes, triangles, positions, meshes) = GpuScene::upload_meshes(gpu, scene)?;
        let n = scene.instances.len() as u32;
        Ok(GpuScene {
            blas_refs,
            blas_nodes,
            triangles,
            positions,
            instances: per_instance.instances,
            tlas_nodes: per_instance.tlas_nodes,
            parents: per_instance.parents,
            counters: per_instance.counters,
            keys: per_instance.keys,
            leaf_boxes: per_instance.leaf_boxes,
            bounds: gpu.buffer("tlas scene bounds", 6 * 4, BufferMemory::Device)?,
            instance_count: n,
            padded: n.max(1).next_power_of_two(),
            capacity,
            meshes,
        })
    }

    /// The mesh arrays and what refits and skinning read, uploaded anew.
    fn upload_meshes(
        gpu: &mut Gpu,
        scene: &Scene,
    ) -> Result<(GpuBuffer, GpuBuffer, GpuBuffer, GpuBuffer, MeshBuffers), GpuError> {
        let refit_nodes = scene.skinned.iter().map(|s| scene.refit[s.mesh as usize].node_count).max().unwrap_or(1);
        Ok((
            gpu.buffer_from("scene blas refs", &scene.blas_refs)?,
            gpu.buffer_from("scene blas nodes", &scene.nodes)?,
            gpu.buffer_from("scene triangles", &scene.triangles)?,
            gpu.buffer_from("scene positions", &scene.positions)?,
            MeshBuffers {
                blas_parents: gpu.buffer_from("scene blas parents", &scene.parents)?,
                blas_leaves: gpu.buffer_from("scene blas leaves", &scene.leaves)?,
                blas_counters: gpu.buffer(
                    "scene blas refit counters",
                    4 * u64::from(refit_nodes),
                    BufferMemory::Device,
                )?,
                skins: scene
                    .skinned
                    .iter()
                    .map(|s| GpuSkin::upload(gpu, &s.skin).map(|skin| (skin, s.mesh)))
                    .collect::<Result<_, _>>()?,
                refit_ranges: scene.refit.iter().copied().zip(scene.blas_refs.iter().copied()).collect(),
            },
        ))
    }

    /// Replaces the mesh arrays after meshes were added or removed (the old buffers
    /// live until the device is done with them). Skinned vertices start at their
    /// rest pose again: skin them before tracing.
    pub fn replace_meshes(&mut self, gpu: &mut Gpu, scene: &Scene) -> Result<(), GpuError> {
        let (blas_refs, blas_nodes, triangles, positions, meshes) = GpuScene::upload_meshes(gpu, scene)?;
        let old = (
            std::mem::replace(&mut self.blas_refs, blas_refs),
            std::mem::replace(&mut self.blas_nodes, blas_nodes),
            std::mem::replace(&mut self.triangles, triangles),
            std::mem::replace(&mut self.positions, positions),
            std::mem::replace(&mut self.meshes, meshes),
        );
        gpu.defer_drop(old);
        Ok(())
    }

    /// Sizes the per-instance buffers for `count` instances: they grow to the next
    /// power of two and shrink when a quarter would do. Returns whether they were
    /// replaced (their contents are then undefined: upload every instance).
    pub fn reserve_instances(&mut self, gpu: &mut Gpu, count: usize) -> Result<bool, GpuError> {
        let wanted = instance_capacity(count);
        let replaced = wanted > self.capacity || (wanted < self.capacity / 4);
        if replaced {
            let fresh = InstanceBuffers::new(gpu, wanted)?;
            let old = (
                std::mem::replace(&mut self.instances, fresh.instances),
                std::mem::replace(&mut self.tlas_nodes, fresh.tlas_nodes),
                std::mem::replace(&mut self.parents, fresh.parents),
                std::mem::replace(&mut self.counters, fresh.counters),
                std::mem::replace(&mut self.keys, fresh.keys),
                std::mem::replace(&mut self.leaf_boxes, fresh.leaf_boxes),
            );
            gpu.defer_drop(old);
            self.capacity = wanted;
        }
        self.instance_count = count as u32;
        self.padded = (count as u32).max(1).next_power_of_two();
        Ok(replaced)
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
        if bones.len() != self.meshes.skins.len() {
            return Err(GpuError::InvalidInput(format!(
                "{} bone sets for {} skinned slots",
                bones.len(),
                self.meshes.skins.len()
            )));
        }
        for ((gpu_skin, mesh), bones) in self.meshes.skins.iter().zip(bones) {
            let (range, blas) = self.meshes.refit_ranges[*mesh as usize];
            let positions = self.positions.address() + 12 * u64::from(blas.position_base);
            skin.record_at(rec, gpu_skin, bones, &self.positions, positions)?;
            rec.fill(&self.meshes.blas_counters, 0);
            let push = BlasRefitPush {
                nodes: self.blas_nodes.address() + 32 * u64::from(range.node_base),
                parents: self.meshes.blas_parents.address() + 4 * u64::from(range.node_base),
                leaves: self.meshes.blas_leaves.address() + 4 * u64::from(range.leaf_base),
                triangles: self.triangles.address() + 16 * u64::from(blas.triangle_base),
                positions,
                counters: self.meshes.blas_counters.address(),
                leaf_count: range.leaf_count,
                _pad: 0,
            };
            let uses = [
                Use::read(&self.meshes.blas_parents),
                Use::read(&self.meshes.blas_leaves),
                Use::read(&self.triangles),
                Use::read(&self.positions),
                Use::write(&self.blas_nodes),
                Use::write(&self.meshes.blas_counters),
            ];
            refit.record_push(rec, &push, &uses)?;
        }
        Ok(())
    }

    /// Reads back the skinned vertices of every slot (for CPU references and tests).
    pub fn read_skinned_positions(&self, gpu: &mut Gpu) -> Result<Vec<Vec<[f32; 3]>>, GpuError> {
        let mut out = Vec::new();
        for (skin, mesh) in &self.meshes.skins {
            let base = 12 * u64::from(self.meshes.refit_ranges[*mesh as usize].1.position_base);
            let len = 12 * u64::from(skin.vertex_count);
            let download = gpu.submit("read skinned", |rec| rec.download(&self.positions, base, len))?;
            out.push(download.to_vec());
        }
        Ok(out)
    }

    /// Reads back the BLAS nodes of every mesh (for CPU references and tests).
    pub fn read_blas_nodes(&self, gpu: &mut Gpu) -> Result<Vec<BvhNode>, GpuError> {
        let count = self.meshes.refit_ranges.last().map_or(0, |(r, _)| (r.node_base + r.node_count) as usize);
        gpu.read(&self.blas_nodes, count)
    }

    /// Records the upload of the instances in the blocks of [`INSTANCE_BLOCK`] marked
    /// in `dirty` (bit `b % 64` of word `b / 64` for block `b`; all of them when
    /// `all`), a run of consecutive blocks as one copy. Returns the bytes uploaded.
    pub fn upload_instances(
        &self,
        rec: &mut Recorder<'_>,
        scene: &Scene,
        dirty: &[u64],
        all: bool,
    ) -> Result<u64, GpuError> {
        if scene.instances.len() as u32 != self.instance_count {
            return Err(GpuError::InvalidInput(format!(
                "the GPU scene was sized for {} instances, the scene has {}: reserve them first",
                self.instance_count,
                scene.instances.len()
            )));
        }
        let count = scene.instances.len();
        let blocks = count.div_ceil(INSTANCE_BLOCK as usize);
        let is_dirty = |b: usize| all || dirty.get(b / 64).is_some_and(|w| w & (1 << (b % 64)) != 0);
        let mut uploaded = 0;
        let mut b = 0;
        while b < blocks {
            if !is_dirty(b) {
                b += 1;
                continue;
            }
            let first = b;
            while b < blocks && is_dirty(b) {
                b += 1;
            }
            let range = first * INSTANCE_BLOCK as usize..(b * INSTANCE_BLOCK as usize).min(count);
            let bytes: &[u8] = bytemuck::cast_slice(&scene.instances[range.clone()]);
            rec.upload(&self.instances, 112 * range.start as u64, bytes)?;
            uploaded += bytes.len() as u64;
        }
        Ok(uploaded)
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
