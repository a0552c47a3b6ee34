//! A ray-tracing scene on the CPU: meshes (each one BLAS in shared node, triangle and
//! vertex arrays) and instances of them, with their inverse transforms computed here
//! in bulk so that kernels only multiply. `gpu::GpuScene` uploads it.

use glam::{Mat3, Vec3};

use super::blas::{Blas, BvhNode};
use super::layout::{BlasRef, GpuInstance, TlasNode};
use super::skin::SkinData;
use super::trace::TraceScene;
use super::SceneError;

/// An affine transform: three rows of `[m0, m1, m2, translation]`.
pub type Affine = [[f32; 4]; 3];

/// The identity transform.
pub const IDENTITY: Affine = [[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0]];

/// Inverse of an affine transform, or `None` when it is singular or not finite.
pub fn invert_affine(m: &Affine) -> Option<Affine> {
    if !m.iter().flatten().all(|c| c.is_finite()) {
        return None;
    }
    let linear = Mat3::from_cols(
        Vec3::new(m[0][0], m[1][0], m[2][0]),
        Vec3::new(m[0][1], m[1][1], m[2][1]),
        Vec3::new(m[0][2], m[1][2], m[2][2]),
    );
    let det = linear.determinant();
    if !det.is_finite() || det.abs() < 1e-12 {
        return None;
    }
    let inv = linear.inverse();
    let t = -(inv * Vec3::new(m[0][3], m[1][3], m[2][3]));
    let out = [
        [inv.x_axis.x, inv.y_axis.x, inv.z_axis.x, t.x],
        [inv.x_axis.y, inv.y_axis.y, inv.z_axis.y, t.y],
        [inv.x_axis.z, inv.y_axis.z, inv.z_axis.z, t.z],
    ];
    out.iter().flatten().all(|c| c.is_finite()).then_some(out)
}

/// A height-field grid of `n x n` cells of size `cell` (two triangles each), with
/// `height(x, z)` at each of the `(n + 1)^2` vertices: the mesh samples, tests and
/// benches build scenes from.
pub fn grid_mesh(n: u32, cell: f32, mut height: impl FnMut(u32, u32) -> f32) -> (Vec<[f32; 3]>, Vec<[u32; 3]>) {
    let mut positions = Vec::with_capacity(((n + 1) * (n + 1)) as usize);
    for z in 0..=n {
        for x in 0..=n {
            positions.push([x as f32 * cell, height(x, z), z as f32 * cell]);
        }
    }
    let row = n + 1;
    let mut triangles = Vec::with_capacity(2 * (n * n) as usize);
    for z in 0..n {
        for x in 0..n {
            let i = z * row + x;
            triangles.push([i, i + 1, i + row]);
            triangles.push([i + 1, i + row + 1, i + row]);
        }
    }
    (positions, triangles)
}

/// An axis-aligned box of half extents `half` around the origin: 8 vertices, 12
/// triangles wound outwards (counter-clockwise seen from outside).
pub fn box_mesh(half: [f32; 3]) -> (Vec<[f32; 3]>, Vec<[u32; 3]>) {
    let positions = (0..8u32)
        .map(|i| {
            let sign = |bit: u32| if i & bit != 0 { 1.0 } else { -1.0 };
            [sign(1) * half[0], sign(2) * half[1], sign(4) * half[2]]
        })
        .collect();
    // Vertex i has x from bit 0, y from bit 1, z from bit 2.
    let triangles = vec![
        [0, 4, 6],
        [0, 6, 2], // -x
        [1, 3, 7],
        [1, 7, 5], // +x
        [0, 1, 5],
        [0, 5, 4], // -y
        [2, 6, 7],
        [2, 7, 3], // +y
        [0, 2, 3],
        [0, 3, 1], // -z
        [4, 5, 7],
        [4, 7, 6], // +z
    ];
    (positions, triangles)
}

/// A sphere of `radius` around the origin as `rings` latitude bands of `segments`
/// quads (poles as fans), wound outwards. Its vertices lie on the sphere, so it sits
/// inside the true sphere by at most `radius * (1 - cos(pi / segments))`.
pub fn sphere_mesh(radius: f32, rings: u32, segments: u32) -> (Vec<[f32; 3]>, Vec<[u32; 3]>) {
    let (rings, segments) = (rings.max(2), segments.max(3));
    let mut positions = vec![[0.0, radius, 0.0]];
    for r in 1..rings {
        let polar = std::f32::consts::PI * r as f32 / rings as f32;
        for k in 0..segments {
            let azimuth = std::f32::consts::TAU * k as f32 / segments as f32;
            let (y, ring) = (polar.cos() * radius, polar.sin() * radius);
            positions.push([ring * azimuth.cos(), y, -ring * azimuth.sin()]);
        }
    }
    positions.push([0.0, -radius, 0.0]);
    let bottom = positions.len() as u32 - 1;
    let at = |r: u32, k: u32| 1 + (r - 1) * segments + k % segments;
    let mut triangles = Vec::new();
    for k in 0..segments {
        triangles.push([0, at(1, k), at(1, k + 1)]);
        triangles.push([bottom, at(rings - 1, k + 1), at(rings - 1, k)]);
        for r in 1..rings - 1 {
            triangles.push([at(r, k), at(r + 1, k), at(r + 1, k + 1)]);
            triangles.push([at(r, k), at(r + 1, k + 1), at(r, k + 1)]);
        }
    }
    (positions, triangles)
}

/// Meshes and instances on the CPU; see the module docs.
#[derive(Clone, Default)]
pub struct Scene {
    pub(crate) blas_refs: Vec<BlasRef>,
    pub(crate) nodes: Vec<BvhNode>,
    pub(crate) triangles: Vec<[u32; 4]>,
    pub(crate) positions: Vec<[f32; 3]>,
    pub(crate) instances: Vec<GpuInstance>,
    pub(crate) roots: Vec<BvhNode>,
    /// Per mesh: its BLAS's parent links and leaf list, for refits.
    pub(crate) refit: Vec<RefitRange>,
    pub(crate) parents: Vec<u32>,
    pub(crate) leaves: Vec<u32>,
    /// Skinned meshes: their mold mesh and skin inputs, in the order they were added.
    pub(crate) skinned: Vec<SkinnedMesh>,
    /// Entries of the shared arrays that removed meshes left behind.
    pub(crate) dead: Dead,
    /// Bumped whenever the shared arrays are compacted (every range may have moved).
    pub(crate) layout: u64,
}

/// Entries of the shared arrays no live mesh uses (see [`Scene::remove_mesh`]).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Dead {
    nodes: usize,
    triangles: usize,
    positions: usize,
    leaves: usize,
}

/// Where a mesh's refit data lives in the scene's arrays (node-local indices).
#[derive(Clone, Copy, Debug)]
pub(crate) struct RefitRange {
    pub(crate) node_base: u32,
    pub(crate) node_count: u32,
    pub(crate) leaf_base: u32,
    pub(crate) leaf_count: u32,
    pub(crate) position_count: u32,
}

/// A skinned mesh: its mold (an ordinary mesh over the rest pose) and its skin.
#[derive(Clone)]
pub(crate) struct SkinnedMesh {
    pub(crate) mesh: u32,
    pub(crate) skin: SkinData,
}

impl Scene {
    pub fn new() -> Scene {
        Scene::default()
    }

    /// Builds a BLAS over the mesh and appends it; returns the mesh index.
    pub fn add_mesh(&mut self, positions: &[[f32; 3]], triangles: &[[u32; 3]]) -> Result<u32, SceneError> {
        let blas = Blas::build(positions, triangles).map_err(|err| SceneError(err.to_string()))?;
        self.push_blas(&blas, positions)
    }

    /// Appends a built BLAS and the vertices it was built over as a new mesh.
    fn push_blas(&mut self, blas: &Blas, positions: &[[f32; 3]]) -> Result<u32, SceneError> {
        let total = self.nodes.len() + blas.nodes.len();
        if total > i32::MAX as usize || self.positions.len() + positions.len() > i32::MAX as usize {
            return Err(SceneError(format!("the scene would hold {total} BLAS nodes (limit 2^31)")));
        }
        self.blas_refs.push(BlasRef {
            node_base: self.nodes.len() as u32,
            triangle_base: self.triangles.len() as u32,
            position_base: self.positions.len() as u32,
            triangle_count: blas.triangles.len() as u32,
        });
        self.roots.push(blas.nodes[0]);
        self.refit.push(RefitRange {
            node_base: self.nodes.len() as u32,
            node_count: blas.nodes.len() as u32,
            leaf_base: self.leaves.len() as u32,
            leaf_count: blas.leaves.len() as u32,
            position_count: positions.len() as u32,
        });
        self.parents.extend_from_slice(&blas.parents);
        self.leaves.extend_from_slice(&blas.leaves);
        self.nodes.extend_from_slice(&blas.nodes);
        self.triangles.extend_from_slice(&blas.triangles);
        self.positions.extend_from_slice(positions);
        Ok(self.blas_refs.len() as u32 - 1)
    }

    /// Adds a skinned mesh: its BLAS, built once over the rest pose `skin.rest`, is
    /// the mold every instance of it is copied from and refitted to each frame on
    /// the GPU (the transient segment, `gpu::scene`). Returns the mesh index.
    pub fn add_skinned_mesh(&mut self, skin: SkinData, triangles: &[[u32; 3]]) -> Result<u32, SceneError> {
        let mesh = self.add_mesh(&skin.rest, triangles)?;
        self.skinned.push(SkinnedMesh { mesh, skin });
        Ok(mesh)
    }

    /// The skinned-mesh number of mesh `mesh` (its place among the skinned meshes),
    /// or `None` for a rigid mesh.
    pub fn skin_index(&self, mesh: u32) -> Option<u32> {
        self.skinned.iter().position(|s| s.mesh == mesh).map(|i| i as u32)
    }

    /// CPU reference of the transient segment: a copy of this scene in which each
    /// `(instance, positions)` of `poses` (an instance of a skinned mesh and that
    /// mesh's skinned vertices, e.g. read back from the GPU) gets its own copy of the
    /// mold's BLAS over `positions`, refitted as the GPU does.
    pub fn posed(&self, poses: &[(u32, Vec<[f32; 3]>)]) -> Result<Scene, SceneError> {
        let mut out = self.clone();
        for (instance, moved) in poses {
            let Some(mold) = self.instances.get(*instance as usize).map(|i| i.blas) else {
                return Err(SceneError(format!("instance {instance} does not exist")));
            };
            if self.skin_index(mold).is_none() {
                return Err(SceneError(format!("instance {instance} is not an instance of a skinned mesh")));
            }
            let (blas_ref, range) = (self.blas_refs[mold as usize], self.refit[mold as usize]);
            if moved.len() != range.position_count as usize {
                return Err(SceneError("skinned position count differs from the mesh".into()));
            }
            let nodes = range.node_base as usize..(range.node_base + range.node_count) as usize;
            let mut blas = Blas {
                nodes: self.nodes[nodes.clone()].to_vec(),
                parents: self.parents[nodes].to_vec(),
                leaves: self.leaves[range.leaf_base as usize..(range.leaf_base + range.leaf_count) as usize].to_vec(),
                triangles: self.triangles
                    [blas_ref.triangle_base as usize..(blas_ref.triangle_base + blas_ref.triangle_count) as usize]
                    .to_vec(),
                vertex_count: moved.len(),
                depth: 0,
            };
            blas.refit(moved).map_err(|err| SceneError(err.to_string()))?;
            out.instances[*instance as usize].blas = out.push_blas(&blas, moved)?;
        }
        Ok(out)
    }

    /// Adds an instance of `mesh`; returns its index (reported in hits).
    pub fn add_instance(&mut self, mesh: u32, transform: &Affine, mask: u32, user_id: u32) -> Result<u32, SceneError> {
        if mesh as usize >= self.blas_refs.len() {
            return Err(SceneError(format!("mesh {mesh} does not exist ({} meshes)", self.blas_refs.len())));
        }
        let inverse = invert_affine(transform)
            .ok_or_else(|| SceneError("instance transform is singular, NaN or infinite".into()))?;
        self.instances.push(GpuInstance {
            object_to_world: *transform,
            world_to_object: inverse,
            blas: mesh,
            mask,
            user_id,
            _pad: 0,
        });
        Ok(self.instances.len() as u32 - 1)
    }

    /// Moves instance `index`; a refused transform leaves it where it was.
    pub fn set_transform(&mut self, index: u32, transform: &Affine) -> Result<(), SceneError> {
        let count = self.instances.len();
        let instance = self
            .instances
            .get_mut(index as usize)
            .ok_or_else(|| SceneError(format!("instance {index} does not exist ({count} instances)")))?;
        let inverse = invert_affine(transform)
            .ok_or_else(|| SceneError("instance transform is singular, NaN or infinite".into()))?;
        instance.object_to_world = *transform;
        instance.world_to_object = inverse;
        Ok(())
    }

    /// Removes instance `index` as `swap_remove` does: the last instance takes its
    /// index.
    pub fn remove_instance(&mut self, index: u32) -> Result<(), SceneError> {
        let count = self.instances.len();
        if index as usize >= count {
            return Err(SceneError(format!("instance {index} does not exist ({count} instances)")));
        }
        self.instances.swap_remove(index as usize);
        Ok(())
    }

    /// Removes mesh `mesh` and its BLAS as `swap_remove` does: the last mesh takes
    /// its index (its instances follow), and its entries of the shared arrays become
    /// holes; a skinned mesh's skin goes with it. Once holes are more than half of an
    /// array, the arrays are compacted ([`Scene::layout`] changes). Returns the index
    /// the moved mesh had, if one moved. Refused while an instance uses it.
    pub fn remove_mesh(&mut self, mesh: u32) -> Result<Option<u32>, SceneError> {
        let count = self.blas_refs.len();
        if mesh as usize >= count {
            return Err(SceneError(format!("mesh {mesh} does not exist ({count} meshes)")));
        }
        let users = self.instances.iter().filter(|i| i.blas == mesh).count();
        if users > 0 {
            return Err(SceneError(format!("mesh {mesh} is used by {users} instances: remove them first")));
        }
        let m = mesh as usize;
        let (blas, range) = (self.blas_refs[m], self.refit[m]);
        self.dead.nodes += range.node_count as usize;
        self.dead.triangles += blas.triangle_count as usize;
        self.dead.positions += range.position_count as usize;
        self.dead.leaves += range.leaf_count as usize;
        self.blas_refs.swap_remove(m);
        self.refit.swap_remove(m);
        self.roots.swap_remove(m);
        self.skinned.retain(|s| s.mesh != mesh);
        let moved = (m < self.blas_refs.len()).then_some(self.blas_refs.len() as u32);
        if let Some(from) = moved {
            for instance in self.instances.iter_mut().filter(|i| i.blas == from) {
                instance.blas = mesh;
            }
            for skinned in self.skinned.iter_mut().filter(|s| s.mesh == from) {
                skinned.mesh = mesh;
            }
        }
        let d = self.dead;
        if 2 * d.nodes > self.nodes.len()
            || 2 * d.positions > self.positions.len()
            || 2 * d.triangles > self.triangles.len()
        {
            self.compact();
        }
        Ok(moved)
    }

    /// Rewrites the shared arrays with the live meshes only, in mesh order.
    fn compact(&mut self) {
        let (mut nodes, mut triangles, mut positions, mut parents, mut leaves) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for (blas, range) in self.blas_refs.iter_mut().zip(&mut self.refit) {
            let node_range = range.node_base as usize..(range.node_base + range.node_count) as usize;
            let leaf_range = range.leaf_base as usize..(range.leaf_base + range.leaf_count) as usize;
            let triangle_range = blas.triangle_base as usize..(blas.triangle_base + blas.triangle_count) as usize;
            let position_range = blas.position_base as usize..(blas.position_base + range.position_count) as usize;
            (range.node_base, range.leaf_base) = (nodes.len() as u32, leaves.len() as u32);
            (blas.node_base, blas.triangle_base, blas.position_base) =
                (nodes.len() as u32, triangles.len() as u32, positions.len() as u32);
            nodes.extend_from_slice(&self.nodes[node_range.clone()]);
            parents.extend_from_slice(&self.parents[node_range]);
            leaves.extend_from_slice(&self.leaves[leaf_range]);
            triangles.extend_from_slice(&self.triangles[triangle_range]);
            positions.extend_from_slice(&self.positions[position_range]);
        }
        (self.nodes, self.triangles, self.positions, self.parents, self.leaves) =
            (nodes, triangles, positions, parents, leaves);
        self.dead = Dead::default();
        self.layout += 1;
    }

    /// Bytes the live meshes take in the shared arrays (BLAS nodes, triangles,
    /// vertices, refit data), holes left by removed meshes not counted.
    pub fn mesh_bytes(&self) -> usize {
        use std::mem::size_of;
        let d = self.dead;
        size_of::<BlasRef>() * self.blas_refs.len()
            + (size_of::<BvhNode>() + 4) * (self.nodes.len() - d.nodes)
            + size_of::<[u32; 4]>() * (self.triangles.len() - d.triangles)
            + size_of::<[f32; 3]>() * (self.positions.len() - d.positions)
            + 4 * (self.leaves.len() - d.leaves)
    }

    /// Bumped whenever the shared mesh arrays are compacted: a device copy made
    /// before must be made anew; otherwise the arrays only grew at their ends.
    pub fn layout(&self) -> u64 {
        self.layout
    }

    pub fn skinned_count(&self) -> usize {
        self.skinned.len()
    }

    pub fn instances(&self) -> &[GpuInstance] {
        &self.instances
    }

    pub fn mesh_count(&self) -> usize {
        self.blas_refs.len()
    }

    /// Every triangle of every visible instance (mask not 0) in world space, in
    /// instance order: what probe placement measures distances to.
    pub fn world_triangles(&self) -> Vec<[Vec3; 3]> {
        let mut out = Vec::new();
        for instance in self.instances.iter().filter(|i| i.mask != 0) {
            let blas = self.blas_refs[instance.blas as usize];
            let tris =
                &self.triangles[blas.triangle_base as usize..(blas.triangle_base + blas.triangle_count) as usize];
            out.extend(tris.iter().map(|t| {
                std::array::from_fn(|k| {
                    let p = Vec3::from(self.positions[(blas.position_base + t[k]) as usize]);
                    super::tlas::transform_point(&instance.object_to_world, p)
                })
            }));
        }
        out
    }

    /// World boxes of the instances (CPU reference of `tlas_boxes`).
    pub fn instance_boxes(&self) -> Vec<TlasNode> {
        self.instances.iter().map(|i| super::tlas::instance_box(i, &self.roots[i.blas as usize])).collect()
    }

    /// The arrays a traversal reads, with the given TLAS.
    pub fn trace_scene<'a>(&'a self, tlas: &'a [TlasNode]) -> TraceScene<'a> {
        TraceScene {
            tlas,
            instances: &self.instances,
            blas_refs: &self.blas_refs,
            blas_nodes: &self.nodes,
            triangles: &self.triangles,
            positions: &self.positions,
        }
    }
}
