//! A voxel terrain mirrored in a [`RayTracer`]: one mesh and one instance per chunk
//! with triangles, so an edit re-meshes and re-uploads only the chunks it touched.
//!
//! ```text
//!  add_terrain(terrain)    every chunk in the terrain's geometry bounds meshed
//!                          (terrain::mesh_chunk, the mesh physics and queries use)
//!  sync_terrain(terrain)   Terrain::chunks_changed_since(stamp): each changed chunk's
//!                          old mesh and instance removed, the chunk meshed anew
//! ```
//!
//! The terrain keeps a stamp per re-shaped chunk (`Terrain::edit_stamp`), so a sync
//! after no edit costs one comparison, and one after an edit costs the chunks it
//! touched (the chunk and those whose mesh reads its voxels).

use std::collections::BTreeMap;

use glam::IVec3;

use super::error::GpuError;
use super::ray_tracer::{InstanceId, MeshId, RayTracer};
use crate::raytrace::IDENTITY;
use crate::spatial::TriMesh;
use crate::terrain::{mesh_chunk, Terrain};

/// What a tracer holds of a terrain; see the module docs.
#[derive(Default)]
pub(crate) struct TerrainBinding {
    /// Per chunk with triangles: its mesh and instance.
    chunks: BTreeMap<[i32; 3], (MeshId, InstanceId)>,
    /// The terrain's edit stamp when last synced.
    stamp: u64,
    mask: u32,
    user_id: u32,
    /// Scratch: one chunk's mesh, the changed chunks, positions.
    mesh: TriMesh,
    changed: Vec<IVec3>,
    positions: Vec<[f32; 3]>,
}

/// What a [`RayTracer::sync_terrain`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TerrainSync {
    /// Chunks meshed anew (with or without triangles now).
    pub chunks: u32,
    /// Triangles of the chunks meshed anew.
    pub triangles: u32,
}

impl RayTracer {
    /// Mirrors `terrain`'s geometry as one mesh and instance per chunk (mask `mask`,
    /// user id `user_id` in hits), replacing any terrain added before. Returns what
    /// was meshed.
    pub fn add_terrain(&mut self, terrain: &Terrain, mask: u32, user_id: u32) -> Result<TerrainSync, GpuError> {
        self.remove_terrain()?;
        let mut binding = TerrainBinding { mask, user_id, ..TerrainBinding::default() };
        if let Some((lo, hi)) = terrain.geometry_bounds() {
            for z in lo.z..=hi.z {
                for y in lo.y..=hi.y {
                    for x in lo.x..=hi.x {
                        binding.changed.push(IVec3::new(x, y, z));
                    }
                }
            }
        }
        binding.stamp = terrain.edit_stamp();
        let done = self.remesh(&mut binding, terrain);
        self.terrain = Some(binding);
        done
    }

    /// Brings the mirrored terrain up to date with `terrain`'s edits since the last
    /// sync: only the chunks they re-shaped are meshed and uploaded again (before the
    /// next trace). Without a terrain added, refused.
    pub fn sync_terrain(&mut self, terrain: &Terrain) -> Result<TerrainSync, GpuError> {
        let Some(mut binding) = self.terrain.take() else {
            return Err(GpuError::InvalidInput("sync_terrain: no terrain was added to this tracer".into()));
        };
        binding.changed.clear();
        if terrain.edit_stamp() != binding.stamp {
            terrain.chunks_changed_since(binding.stamp, &mut binding.changed);
            binding.stamp = terrain.edit_stamp();
        }
        let done = self.remesh(&mut binding, terrain);
        self.terrain = Some(binding);
        done
    }

    /// Removes the mirrored terrain's meshes and instances, if any.
    pub fn remove_terrain(&mut self) -> Result<(), GpuError> {
        if let Some(binding) = self.terrain.take() {
            for (mesh, instance) in binding.chunks.into_values() {
                self.remove_instance(instance)?;
                self.remove_mesh(mesh)?;
            }
        }
        Ok(())
    }

    /// Chunks of the mirrored terrain with triangles (0 without a terrain).
    pub fn terrain_chunk_count(&self) -> usize {
        self.terrain.as_ref().map_or(0, |b| b.chunks.len())
    }

    /// Meshes every chunk in `binding.changed` anew.
    fn remesh(&mut self, binding: &mut TerrainBinding, terrain: &Terrain) -> Result<TerrainSync, GpuError> {
        let mut done = TerrainSync::default();
        for i in 0..binding.changed.len() {
            let coord = binding.changed[i];
            if let Some((mesh, instance)) = binding.chunks.remove(&coord.to_array()) {
                self.remove_instance(instance)?;
                self.remove_mesh(mesh)?;
            }
            binding.mesh.vertices.clear();
            binding.mesh.triangles.clear();
            binding.mesh.materials.clear();
            mesh_chunk(terrain.voxels(), coord, terrain.voxel_size(), &mut binding.mesh);
            done.chunks += 1;
            if binding.mesh.triangles.is_empty() {
                continue;
            }
            binding.positions.clear();
            binding.positions.extend(binding.mesh.vertices.iter().map(|v| v.to_array()));
            let mesh = self.add_mesh(&binding.positions, &binding.mesh.triangles)?;
            let instance = self.add_instance(mesh, &IDENTITY, binding.mask, binding.user_id)?;
            binding.chunks.insert(coord.to_array(), (mesh, instance));
            done.triangles += binding.mesh.triangles.len() as u32;
        }
        Ok(done)
    }
}
