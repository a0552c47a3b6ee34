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
use super::layout::{BlasRefitPush, TraceAddresses};
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

/// What the device holds per mesh besides the four arrays traversal reads.
struct MeshBuffers {
    blas_parents: GpuBuffer,
    blas_leaves: GpuBuffer,
    blas_counters: GpuBuffer,
    skins: Vec<(GpuSkin, u32)>,
    refit_ranges: Vec<(RefitRange, BlasRef)>,
    /// Entries each array has room for, and holds on the device.
    room: MeshLens,
    uploaded: MeshLens,
    /// The scene's [`Scene::layout`] the device copy was made from.
    layout: u64,
    /// Skinned slots whose rest pose, joints and weights a full upload records.
    skin_data: usize,
}

/// Entries of the shared mesh arrays (parents are as many as nodes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MeshLens {
    blas_refs: usize,
    nodes: usize,
    triangles: usize,
    positions: usize,
    leaves: usize,
}

impl MeshLens {
    fn of(scene: &Scene) -> MeshLens {
        MeshLens {
            blas_refs: scene.blas_refs.len(),
            nodes: scene.nodes.len(),
            triangles: scene.triangles.len(),
            positions: scene.positions.len(),
            leaves: scene.leaves.len(),
        }
    }

    /// Room for these lengths: each the next power of two, at least 64.
    fn room(self) -> MeshLens {
        let room = |n: usize| n.max(64).next_power_of_two();
        MeshLens {
            blas_refs: room(self.blas_refs),
            nodes: room(self.nodes),
            triangles: room(self.triangles),
            positions: room(self.positions),
            leaves: room(self.leaves),
        }
    }

    fn fits(self, room: MeshLens) -> bool {
        self.blas_refs <= room.blas_refs
            && self.nodes <= room.nodes
            && self.triangles <= room.triangles
            && self.positions <= room.positions
            && self.leaves <= room.leaves
    }
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
        let device = GpuScene::sized(gpu, scene)?;
        gpu.submit("upload meshes", |rec| device.record_mesh_appends(rec, scene, MeshLens::default()))?;
        Ok(device)
    }

    /// As [`GpuScene::new`], but the mesh data is left to a recording: pass
    /// `MeshLens::default()` to [`GpuScene::record_mesh_appends`] (what a tracer on
    /// an engine's device does, so that it never submits work of its own).
    pub fn sized(gpu: &mut Gpu, scene: &Scene) -> Result<GpuScene, GpuError> {
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

    /// Buffers for the mesh arrays and what refits and skinning read, with room to
    /// grow ([`MeshLens::room`]); their data comes from
    /// [`GpuScene::record_mesh_appends`] with `MeshLens::default()`.
    fn upload_meshes(
        gpu: &mut Gpu,
        scene: &Scene,
    ) -> Result<(GpuBuffer, GpuBuffer, GpuBuffer, GpuBuffer, MeshBuffers), GpuError> {
        let refit_nodes = scene.skinned.iter().map(|s| scene.refit[s.mesh as usize].node_count).max().unwrap_or(1);
        let lens = MeshLens::of(scene);
        let room = lens.room();
        let roomy = |gpu: &mut Gpu, name: &str, entries: usize, size: usize| {
            gpu.buffer(name, (entries * size) as u64, BufferMemory::Device)
        };
        Ok((
            roomy(gpu, "scene blas refs", room.blas_refs, 16)?,
            roomy(gpu, "scene blas nodes", room.nodes, 32)?,
            roomy(gpu, "scene triangles", room.triangles, 16)?,
            roomy(gpu, "scene positions", room.positions, 12)?,
            MeshBuffers {
                blas_parents: roomy(gpu, "scene blas parents", room.nodes, 4)?,
                blas_leaves: roomy(gpu, "scene blas leaves", room.leaves, 4)?,
                blas_counters: gpu.buffer(
                    "scene blas refit counters",
                    4 * u64::from(refit_nodes),
                    BufferMemory::Device,
                )?,
                skins: scene
                    .skinned
                    .iter()
                    .map(|s| GpuSkin::empty(gpu, &s.skin).map(|skin| (skin, s.mesh)))
                    .collect::<Result<_, _>>()?,
                refit_ranges: scene.refit.iter().copied().zip(scene.blas_refs.iter().copied()).collect(),
                room,
                uploaded: lens,
                layout: scene.layout(),
                skin_data: scene.skinned.len(),
            },
        ))
    }

    /// Replaces the mesh arrays (the old buffers live until the device is done with
    /// them), empty: record their data with [`GpuScene::record_mesh_appends`] and
    /// `MeshLens::default()`, then skin the skinned copies before tracing.
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

    /// After meshes were added or removed: whether the device copy can follow by
    /// appending (the arrays were not compacted, the skinned slots are the same and
    /// the new lengths fit the buffers' room). When it can, the refit ranges and the
    /// skinned slots' mesh numbers are brought up to date and the lengths the device
    /// had are returned: [`GpuScene::record_mesh_appends`] uploads the rest.
    pub fn follow_meshes(&mut self, scene: &Scene, same_skins: bool) -> Option<MeshLens> {
        let lens = MeshLens::of(scene);
        let meshes = &mut self.meshes;
        if scene.layout() != meshes.layout || !same_skins || !lens.fits(meshes.room) {
            return None;
        }
        meshes.refit_ranges.clear();
        meshes.refit_ranges.extend(scene.refit.iter().copied().zip(scene.blas_refs.iter().copied()));
        for ((_, mesh), slot) in meshes.skins.iter_mut().zip(&scene.skinned) {
            *mesh = slot.mesh;
        }
        Some(std::mem::replace(&mut meshes.uploaded, lens))
    }

    /// Records the upload of what the mesh arrays gained since lengths `had` (from
    /// [`GpuScene::follow_meshes`]) and of the mesh table (16 bytes a mesh, as
    /// removals move entries in it); with `MeshLens::default()`, of everything,
    /// skins included (after [`GpuScene::sized`] or [`GpuScene::replace_meshes`]).
    /// Returns the bytes uploaded.
    pub fn record_mesh_appends(&self, rec: &mut Recorder<'_>, scene: &Scene, had: MeshLens) -> Result<u64, GpuError> {
        fn tail<T: bytemuck::Pod>(
            rec: &mut Recorder<'_>,
            buffer: &GpuBuffer,
            all: &[T],
            from: usize,
        ) -> Result<u64, GpuError> {
            let bytes: &[u8] = bytemuck::cast_slice(&all[from.min(all.len())..]);
            rec.upload(buffer, (from * std::mem::size_of::<T>()) as u64, bytes)?;
            Ok(bytes.len() as u64)
        }
        let mut skins = 0;
        if had == MeshLens::default() {
            if scene.skinned.len() != self.meshes.skin_data {
                return Err(GpuError::InvalidInput("the skinned slots changed: replace the meshes".into()));
            }
            for ((skin, _), slot) in self.meshes.skins.iter().zip(&scene.skinned) {
                skins += skin.record_upload(rec, &slot.skin)?;
            }
        }
        Ok(skins
            + tail(rec, &self.blas_refs, &scene.blas_refs, 0)?
            + tail(rec, &self.blas_nodes, &scene.nodes, had.nodes)?
            + tail(rec, &self.meshes.blas_parents, &scene.parents, had.nodes)?
            + tail(rec, &self.triangles, &scene.triangles, had.triangles)?
            + tail(rec, &self.positions, &scene.positions, had.positions)?
            + tail(rec, &self.meshes.blas_leaves, &scene.leaves, had.leaves)?)
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

    /// Reads back the BLAS node array as the device holds it, holes of removed
    /// meshes included (for CPU references and tests).
    pub fn read_blas_nodes(&self, gpu: &mut Gpu) -> Result<Vec<BvhNode>, GpuError> {
        gpu.read(&self.blas_nodes, self.meshes.uploaded.nodes)
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

    /// The addresses traversal reads (`kiln_trace.glsl`'s `KilnTraceScene`).
    pub fn trace_scene(&self) -> TraceAddresses {
        TraceAddresses {
            tlas: self.tlas_nodes.address(),
            instances: self.instances.address(),
            blas_refs: self.blas_refs.address(),
            blas_nodes: self.blas_nodes.address(),
            triangles: self.triangles.address(),
            positions: self.positions.address(),
        }
    }

    /// The buffers behind [`GpuScene::trace_scene`], in its field order.
    pub fn trace_buffers(&self) -> [&GpuBuffer; 6] {
        [&self.tlas_nodes, &self.instances, &self.blas_refs, &self.blas_nodes, &self.triangles, &self.positions]
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
