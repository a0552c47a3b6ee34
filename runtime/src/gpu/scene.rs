//! A ray-tracing scene on the device: [`GpuScene`] uploads a `raytrace::Scene`
//! (meshes and instances, built on the CPU):
//!
//! ```text
//!  Scene (CPU, raytrace::scene)         GpuScene (device)
//!  add_mesh -> Blas, appended to the    blas_nodes / triangles / positions: one
//!    shared node, triangle and vertex     array each, every BLAS a range in them
//!    arrays; BlasRef = its offsets        (the permanent segment), blas_refs
//!  add_skinned_mesh -> the mold: a      after the permanent segment's room: the
//!    mesh over the rest pose, + skin      transient segment, one BLAS per skinned
//!  (a skinned instance is an instance     instance (nodes + vertices of its own,
//!    of the mold on the CPU; nothing      triangles, parents and leaves the
//!    is built when one is added)          mold's), and its BlasRef after the meshes'
//!  add_instance / set_transform ->      instances: rewritten each frame
//!    GpuInstance with its inverse       tlas nodes, parents, counters, keys, bounds
//! ```
//!
//! The transient segment follows the source design's animated meshes: whenever
//! bones change, each skinned instance's region is reset by copying its mold's
//! nodes, its vertices are skinned from the mold's rest pose, and the copy is
//! refitted ([`GpuScene::record_transient`]); its instance is pointed at its own
//! BlasRef on the device ([`GpuScene::record_transient_refs`]). The regions are
//! laid out anew from the slot list every recording, so adding or removing a
//! skinned instance builds and uploads nothing but its bones and 20 bytes.

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

/// Byte offset of `blas` inside a `GpuInstance`.
const INSTANCE_BLAS_OFFSET: u64 = 96;

/// One skinned instance as a recording of the transient segment sees it.
#[derive(Clone, Copy, Debug)]
pub struct TransientSlot<'b> {
    /// Its place in the packed instance array.
    pub instance: u32,
    /// Its skinned mesh (the mold), as a mesh index of the scene.
    pub mesh: u32,
    /// Its current bones (the skinned mesh's bone count).
    pub bones: &'b [BoneMatrix],
}

/// Entries of the transient segment: skinned instances, their BLAS nodes, vertices
/// and bones.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TransientLens {
    slots: usize,
    nodes: usize,
    positions: usize,
    bones: usize,
}

impl TransientLens {
    /// What `slots` need; a slot whose mesh is not a skinned mesh is refused.
    pub fn of(scene: &Scene, slots: &[TransientSlot<'_>]) -> Result<TransientLens, GpuError> {
        let mut lens = TransientLens { slots: slots.len(), ..TransientLens::default() };
        for slot in slots {
            let mold = Mold::of(scene, slot.mesh)?;
            lens.nodes += mold.range.node_count as usize;
            lens.positions += mold.range.position_count as usize;
            lens.bones += mold.bones as usize;
        }
        Ok(lens)
    }

    /// Room for these lengths: each the next power of two, at least 64.
    fn room(self) -> TransientLens {
        let room = |n: usize| n.max(64).next_power_of_two();
        TransientLens {
            slots: room(self.slots),
            nodes: room(self.nodes),
            positions: room(self.positions),
            bones: room(self.bones),
        }
    }

    fn fits(self, room: TransientLens) -> bool {
        self.slots <= room.slots
            && self.nodes <= room.nodes
            && self.positions <= room.positions
            && self.bones <= room.bones
    }
}

/// What a transient copy takes from its skinned mesh's mold.
#[derive(Clone, Copy)]
struct Mold {
    range: RefitRange,
    blas: BlasRef,
    bones: u32,
    /// Its place among the scene's skinned meshes.
    skin: usize,
}

impl Mold {
    fn of(scene: &Scene, mesh: u32) -> Result<Mold, GpuError> {
        let skin = scene
            .skin_index(mesh)
            .ok_or_else(|| GpuError::InvalidInput(format!("mesh {mesh} is not a skinned mesh")))?
            as usize;
        let m = mesh as usize;
        Ok(Mold { range: scene.refit[m], blas: scene.blas_refs[m], bones: scene.skinned[skin].skin.bone_count, skin })
    }
}

/// A slot's region of the transient segment: node, vertex and bone offsets from the
/// segment's start, and its mold.
struct Region {
    node: u32,
    position: u32,
    bone: u32,
    mold: Mold,
}

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
    /// Per skinned mesh (the scene's order): its rest pose, joints and weights.
    skins: Vec<GpuSkin>,
    /// Every skinned instance's bones, one after another.
    bones: GpuBuffer,
    /// Entries each array has room for, and holds on the device.
    room: MeshLens,
    uploaded: MeshLens,
    /// Room of the transient segment, which starts at `room`'s end of each array.
    transient: TransientLens,
    /// The scene's [`Scene::layout`] the device copy was made from.
    layout: u64,
    /// Skinned meshes whose rest pose, joints and weights a full upload records.
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
    pub fn new(gpu: &mut Gpu, scene: &Scene, transient: TransientLens) -> Result<GpuScene, GpuError> {
        let device = GpuScene::sized(gpu, scene, transient)?;
        gpu.submit("upload meshes", |rec| device.record_mesh_appends(rec, scene, MeshLens::default()))?;
        Ok(device)
    }

    /// As [`GpuScene::new`], but the mesh data is left to a recording: pass
    /// `MeshLens::default()` to [`GpuScene::record_mesh_appends`] (what a tracer on
    /// an engine's device does, so that it never submits work of its own).
    /// The transient segment gets room for `transient` (see [`TransientLens::of`]).
    pub fn sized(gpu: &mut Gpu, scene: &Scene, transient: TransientLens) -> Result<GpuScene, GpuError> {
        let capacity = instance_capacity(scene.instances.len());
        let per_instance = InstanceBuffers::new(gpu, capacity)?;
        let (blas_refs, blas_nodes, triangles, positions, meshes) = GpuScene::upload_meshes(gpu, scene, transient)?;
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
        transient: TransientLens,
    ) -> Result<(GpuBuffer, GpuBuffer, GpuBuffer, GpuBuffer, MeshBuffers), GpuError> {
        let refit_nodes = scene.skinned.iter().map(|s| scene.refit[s.mesh as usize].node_count).max().unwrap_or(1);
        let lens = MeshLens::of(scene);
        let room = lens.room();
        let t = transient.room();
        let roomy = |gpu: &mut Gpu, name: &str, entries: usize, size: usize| {
            gpu.buffer(name, (entries * size) as u64, BufferMemory::Device)
        };
        Ok((
            roomy(gpu, "scene blas refs", room.blas_refs + t.slots, 16)?,
            roomy(gpu, "scene blas nodes", room.nodes + t.nodes, 32)?,
            roomy(gpu, "scene triangles", room.triangles, 16)?,
            roomy(gpu, "scene positions", room.positions + t.positions, 12)?,
            MeshBuffers {
                blas_parents: roomy(gpu, "scene blas parents", room.nodes, 4)?,
                blas_leaves: roomy(gpu, "scene blas leaves", room.leaves, 4)?,
                blas_counters: gpu.buffer(
                    "scene blas refit counters",
                    4 * u64::from(refit_nodes),
                    BufferMemory::Device,
                )?,
                skins: scene.skinned.iter().map(|s| GpuSkin::empty(gpu, &s.skin)).collect::<Result<_, _>>()?,
                bones: roomy(gpu, "scene transient bones", t.bones, 48)?,
                room,
                uploaded: lens,
                transient: t,
                layout: scene.layout(),
                skin_data: scene.skinned.len(),
            },
        ))
    }

    /// Replaces the mesh arrays (the old buffers live until the device is done with
    /// them), empty: record their data with [`GpuScene::record_mesh_appends`] and
    /// `MeshLens::default()`, then the transient segment before tracing.
    pub fn replace_meshes(&mut self, gpu: &mut Gpu, scene: &Scene, transient: TransientLens) -> Result<(), GpuError> {
        let (blas_refs, blas_nodes, triangles, positions, meshes) = GpuScene::upload_meshes(gpu, scene, transient)?;
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
    /// appending (the arrays were not compacted, the skinned meshes are the same, the
    /// new lengths fit the buffers' room and `transient` fits the transient
    /// segment's). When it can, the lengths the device had are returned:
    /// [`GpuScene::record_mesh_appends`] uploads the rest.
    pub fn follow_meshes(&mut self, scene: &Scene, same_skins: bool, transient: TransientLens) -> Option<MeshLens> {
        let lens = MeshLens::of(scene);
        let meshes = &mut self.meshes;
        if scene.layout() != meshes.layout
            || !same_skins
            || !lens.fits(meshes.room)
            || !transient.fits(meshes.transient)
        {
            return None;
        }
        Some(std::mem::replace(&mut meshes.uploaded, lens))
    }

    /// Whether the transient segment has room for `transient`.
    pub fn transient_fits(&self, transient: TransientLens) -> bool {
        transient.fits(self.meshes.transient)
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
                return Err(GpuError::InvalidInput("the skinned meshes changed: replace the meshes".into()));
            }
            for (skin, slot) in self.meshes.skins.iter().zip(&scene.skinned) {
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

    /// Each slot's region of the transient segment, in slot order (packed one
    /// after another).
    fn transient_regions<'a>(
        scene: &'a Scene,
        slots: &'a [TransientSlot<'a>],
    ) -> impl Iterator<Item = Result<Region, GpuError>> + 'a {
        let (mut node, mut position, mut bone) = (0, 0, 0);
        slots.iter().map(move |slot| {
            let mold = Mold::of(scene, slot.mesh)?;
            let region = Region { node, position, bone, mold };
            node += mold.range.node_count;
            position += mold.range.position_count;
            bone += mold.bones;
            Ok(region)
        })
    }

    /// Records the transient segment's BlasRefs (after the meshes' in the mesh
    /// table) and points each slot's instance at its own: 4 bytes per instance, after
    /// the instance upload. Recorded whenever instances or the slots change. Returns
    /// the bytes uploaded.
    pub fn record_transient_refs(
        &self,
        rec: &mut Recorder<'_>,
        scene: &Scene,
        slots: &[TransientSlot<'_>],
    ) -> Result<u64, GpuError> {
        if !TransientLens::of(scene, slots)?.fits(self.meshes.transient) {
            return Err(GpuError::InvalidInput("the transient segment is out of room: replace the meshes".into()));
        }
        let room = self.meshes.room;
        let mesh_count = scene.blas_refs.len() as u32;
        let mut refs = Vec::with_capacity(slots.len());
        for region in GpuScene::transient_regions(scene, slots) {
            let region = region?;
            refs.push(BlasRef {
                node_base: room.nodes as u32 + region.node,
                position_base: room.positions as u32 + region.position,
                ..region.mold.blas
            });
        }
        rec.upload(&self.blas_refs, 16 * u64::from(mesh_count), bytemuck::cast_slice(&refs))?;
        for (i, slot) in slots.iter().enumerate() {
            let blas = mesh_count + i as u32;
            rec.upload(&self.instances, 112 * u64::from(slot.instance) + INSTANCE_BLAS_OFFSET, &blas.to_le_bytes())?;
        }
        Ok(20 * slots.len() as u64)
    }

    /// Records the transient segment for `slots` (their bones uploaded, then per
    /// slot: the mold's nodes copied into its region, its vertices skinned from the
    /// mold's rest pose, the copy refitted). Returns the bytes uploaded.
    pub fn record_transient(
        &self,
        rec: &mut Recorder<'_>,
        scene: &Scene,
        skin: &Skin,
        refit: &BlasRefit,
        slots: &[TransientSlot<'_>],
    ) -> Result<u64, GpuError> {
        if scene.skinned.len() != self.meshes.skins.len() {
            return Err(GpuError::InvalidInput("the skinned meshes changed: replace the meshes".into()));
        }
        if !TransientLens::of(scene, slots)?.fits(self.meshes.transient) {
            return Err(GpuError::InvalidInput("the transient segment is out of room: replace the meshes".into()));
        }
        for (i, slot) in slots.iter().enumerate() {
            let want = Mold::of(scene, slot.mesh)?.bones as usize;
            if slot.bones.len() != want {
                return Err(GpuError::InvalidInput(format!("slots[{i}]: {} bones, {want} expected", slot.bones.len())));
            }
        }
        let bones: Vec<BoneMatrix> = slots.iter().flat_map(|s| s.bones.iter().copied()).collect();
        if bones.iter().flatten().flatten().any(|c| !c.is_finite()) {
            return Err(GpuError::InvalidInput("skin: a bone matrix has a NaN or infinite entry".into()));
        }
        rec.upload(&self.meshes.bones, 0, bytemuck::cast_slice(&bones))?;
        let room = self.meshes.room;
        for region in GpuScene::transient_regions(scene, slots) {
            let Region { node, position, bone, mold } = region?;
            let range = mold.range;
            let node_base = room.nodes as u64 + u64::from(node);
            let position_base = room.positions as u64 + u64::from(position);
            let nodes = 32 * u64::from(range.node_count);
            rec.copy(&self.blas_nodes, 32 * u64::from(range.node_base), &self.blas_nodes, 32 * node_base, nodes)?;
            let positions = self.positions.address() + 12 * position_base;
            let gpu_skin = &self.meshes.skins[mold.skin];
            skin.record_posed(rec, gpu_skin, &self.meshes.bones, 48 * u64::from(bone), &self.positions, positions)?;
            rec.fill(&self.meshes.blas_counters, 0);
            let push = BlasRefitPush {
                nodes: self.blas_nodes.address() + 32 * node_base,
                parents: self.meshes.blas_parents.address() + 4 * u64::from(range.node_base),
                leaves: self.meshes.blas_leaves.address() + 4 * u64::from(range.leaf_base),
                triangles: self.triangles.address() + 16 * u64::from(mold.blas.triangle_base),
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
        Ok(48 * bones.len() as u64)
    }

    /// Reads back each slot's skinned vertices, in slot order (for CPU references
    /// and tests).
    pub fn read_transient_positions(
        &self,
        gpu: &mut Gpu,
        scene: &Scene,
        slots: &[TransientSlot<'_>],
    ) -> Result<Vec<Vec<[f32; 3]>>, GpuError> {
        let mut out = Vec::new();
        for region in GpuScene::transient_regions(scene, slots) {
            let region = region?;
            let base = 12 * (self.meshes.room.positions as u64 + u64::from(region.position));
            let len = 12 * u64::from(region.mold.range.position_count);
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

    /// Reads back the first `len` nodes of the transient segment (for CPU references
    /// and tests).
    pub fn read_transient_nodes(&self, gpu: &mut Gpu, len: usize) -> Result<Vec<BvhNode>, GpuError> {
        let start = 32 * self.meshes.room.nodes as u64;
        let download = gpu.submit("read transient", |rec| rec.download(&self.blas_nodes, start, 32 * len as u64))?;
        Ok(download.to_vec())
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
