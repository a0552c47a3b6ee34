//! Test and bench scaffolding: an integrated frame made from a physics scene (only
//! with the `demo` feature, which the benches turn on, or in the crate's tests).

use glam::Vec3;

use super::{GpuSide, IntegratedFrame};
use crate::gi::ProbeGrid;
use crate::gpu::{box_mesh, isometry_affine, sphere_mesh, GiVolume, GpuError, MeshId, RayTracer, IDENTITY};
use crate::physics::scenes::{Scene, SceneShape};
use crate::spatial::TriMesh;
use crate::terrain::{mesh_chunk, CHUNK};

/// Options of [`demo_frame`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DemoGi {
    /// Probe spacing (m) over the terrain, from 2 m above its lowest surface.
    pub spacing: f32,
    /// Probe layers above that.
    pub layers: u32,
    pub probes_per_frame: u32,
    pub rays_per_probe: u32,
}

impl Default for DemoGi {
    fn default() -> Self {
        DemoGi { spacing: 8.0, layers: 3, probes_per_frame: 256, rays_per_probe: 64 }
    }
}

/// The integrated frame of a physics scene with voxel terrain: the terrain's mesh
/// and one mesh per body shape in a tracer on `tracer`, each body followed by its
/// instance, and (with `gi`) a probe volume over the terrain, baked before the first
/// frame (on an engine's device left unbaked, for the engine to record the bake).
/// Spheres are meshed with 16 x 24 quads. Test and bench scaffolding: only
/// with the `demo` feature (the benches turn it on) or in the crate's tests.
pub fn demo_frame(scene: &Scene, tracer: Option<RayTracer>, gi: Option<DemoGi>) -> Result<IntegratedFrame, GpuError> {
    let (world, ids) = scene.build();
    let Some(mut tracer) = tracer else { return Ok(IntegratedFrame::new(world, None)) };
    let mut extent = None;
    if let (Some(t), Some(terrain)) = (&scene.terrain, world.terrain()) {
        let mut mesh = TriMesh::new();
        let chunks = (t.size + CHUNK - 1) / CHUNK;
        // Chunk layers up to the wall or, without one, above the hills (surface < 28 m).
        let layers = (t.wall.max(32) + CHUNK - 1) / CHUNK;
        for cy in -1..=layers {
            for cz in 0..chunks {
                for cx in 0..chunks {
                    mesh_chunk(terrain.voxels(), glam::IVec3::new(cx, cy, cz), t.voxel_size, &mut mesh);
                }
            }
        }
        if !mesh.triangles.is_empty() {
            let positions: Vec<[f32; 3]> = mesh.vertices.iter().map(|v| (*v).into()).collect();
            let id = tracer.add_mesh(&positions, &mesh.triangles)?;
            tracer.add_instance(id, &IDENTITY, u32::MAX, u32::MAX)?;
            extent = Some(t.size as f32 * t.voxel_size);
        }
    }
    let mut meshes: Vec<(SceneShape, MeshId)> = Vec::new();
    for (body, &id) in scene.bodies.iter().zip(&ids) {
        let mesh = match meshes.iter().find(|(s, _)| *s == body.shape) {
            Some(&(_, mesh)) => mesh,
            None => {
                let (positions, triangles) = match body.shape {
                    SceneShape::Cuboid { half } => box_mesh(half.into()),
                    SceneShape::Sphere { radius } => sphere_mesh(radius, 16, 24),
                    SceneShape::Hull { .. } | SceneShape::Drum { .. } => hull_mesh(&body.shape.shapes()),
                    SceneShape::Capsule { half_height, radius } => capsule_mesh(half_height, radius),
                };
                let mesh = tracer.add_mesh(&positions, &triangles)?;
                meshes.push((body.shape, mesh));
                mesh
            }
        };
        let pose = world.transform(id).expect("a body of the scene");
        let instance = tracer.add_instance(mesh, &isometry_affine(&pose), u32::MAX, id.index)?;
        tracer.follow_body(instance, id.to_bits(), &IDENTITY)?;
    }
    let volume = match (gi, extent) {
        (Some(setup), Some(size)) => {
            let origin = Vec3::new(setup.spacing * 0.5, 6.0, setup.spacing * 0.5);
            let across = ((size - setup.spacing) / setup.spacing).floor().max(1.0) as u32;
            let grid = ProbeGrid { origin, spacing: setup.spacing, dims: [across, setup.layers.max(1), across] };
            let mut volume = GiVolume::new(&mut tracer, grid, None)?;
            volume.probes_per_frame = setup.probes_per_frame;
            volume.params.rays_per_probe = setup.rays_per_probe;
            // On an engine's device Kiln submits nothing: the engine records the
            // bake (`GiVolume::record_bake`).
            if !tracer.gpu().is_embedded() {
                volume.bake(&mut tracer)?;
            }
            Some(volume)
        }
        _ => None,
    };
    Ok(IntegratedFrame::new(world, Some(GpuSide::new(tracer, volume))))
}

/// A hull's faces as triangle fans (empty for another shape).
/// A capsule along y as the hull of rings of points on its two caps.
fn capsule_mesh(half_height: f32, radius: f32) -> (Vec<[f32; 3]>, Vec<[u32; 3]>) {
    let mut points = Vec::new();
    for (end, sign) in [(half_height, 1.0f32), (-half_height, -1.0)] {
        for ring in 0..4 {
            let lift = ring as f32 / 4.0 * std::f32::consts::FRAC_PI_2;
            for k in 0..12 {
                let turn = k as f32 / 12.0 * std::f32::consts::TAU;
                let r = radius * lift.cos();
                points.push(Vec3::new(r * turn.cos(), end + sign * radius * lift.sin(), r * turn.sin()));
            }
        }
        points.push(Vec3::new(0.0, end + sign * radius, 0.0));
    }
    hull_mesh(&[crate::shapes::Shape::hull(&points).expect("a capsule's hull")])
}

fn hull_mesh(shapes: &[crate::shapes::Shape]) -> (Vec<[f32; 3]>, Vec<[u32; 3]>) {
    use crate::shapes::{Polytope, MAX_FACE_VERTICES};
    let (mut positions, mut triangles): (Vec<[f32; 3]>, Vec<[u32; 3]>) = (Vec::new(), Vec::new());
    for shape in shapes {
        let crate::shapes::Shape::Hull(hull) = shape else { continue };
        let base = positions.len() as u32;
        positions.extend(hull.vertices().iter().map(|v| <[f32; 3]>::from(*v)));
        let mut face = [0u16; MAX_FACE_VERTICES];
        for f in 0..hull.face_count() {
            let n = hull.face_vertices(f, &mut face);
            for k in 1..n.saturating_sub(1) {
                triangles.push([base + face[0] as u32, base + face[k] as u32, base + face[k + 1] as u32]);
            }
        }
    }
    (positions, triangles)
}
