//! The mesher's guarantees: triangles stay inside the dilated solid region the bit
//! broadphase reports, the broadphase reports every chunk whose triangles a box
//! touches, and chunk meshes join into closed surfaces.

use std::collections::HashMap;

use glam::{IVec3, Vec3};

use super::tests::{mask_bit, random_world};
use super::*;
use crate::jobs::ThreadPool;
use crate::math::Aabb;
use crate::spatial::TriMesh;

/// Is `p` (voxel units) in the closed cube of some voxel whose dilated solid bit is set?
fn in_dilated_solid(t: &Terrain, p: Vec3) -> bool {
    let lo = (p - Vec3::splat(1e-4)).floor().as_ivec3();
    let hi = (p + Vec3::splat(1e-4)).floor().as_ivec3();
    (lo.y..=hi.y).any(|y| (lo.z..=hi.z).any(|z| (lo.x..=hi.x).any(|x| mask_bit(t, IVec3::new(x, y, z)).0)))
}

#[test]
fn triangles_lie_inside_the_dilated_solid_region() {
    let pool = ThreadPool::new(1);
    let mut mesh = TriMesh::new();
    for (seed, density) in [(11, 0.03), (12, 0.3), (13, 0.7)] {
        let mut t = random_world(seed, -20, 19, density);
        t.regenerate(pool.jobs());
        let s = t.voxel_size();
        let mut triangles = 0;
        for cy in -4..=3 {
            for cz in -4..=5 {
                for cx in -4..=5 {
                    let coord = IVec3::new(cx, cy, cz);
                    mesh.clear();
                    mesh_chunk(t.voxels(), coord, s, &mut mesh);
                    let bounds = chunk_mesh_bounds(coord, s);
                    for i in 0..mesh.triangles.len() {
                        let tri = mesh.triangle(i);
                        assert!(mesh.materials[i] >= 2, "triangles carry solid materials");
                        let aabb = Aabb::new(tri[0].min(tri[1]).min(tri[2]), tri[0].max(tri[1]).max(tri[2]));
                        assert!(bounds.contains(&aabb), "chunk {coord}: triangle {tri:?} outside {bounds:?}");
                        // Inside the 3^3 neighbourhood of one solid voxel...
                        let v = tri.map(|p| p / s);
                        let lo = v[0].min(v[1]).min(v[2]);
                        let near = |s: IVec3| {
                            v.iter().all(|p| p.cmpge(s.as_vec3() - 0.5).all() && p.cmple(s.as_vec3() + 1.5).all())
                        };
                        let hit = (lo.floor().as_ivec3() - IVec3::ONE..=lo.floor().as_ivec3() + IVec3::ONE)
                            .into_iter_3d()
                            .any(|s| t.get(s).is_solid() && near(s));
                        assert!(hit, "chunk {coord}: triangle {v:?} is not within half a voxel of a solid voxel");
                        // ...so every point of it is in a voxel the solid mask marks.
                        for p in
                            [v[0], v[1], v[2], (v[0] + v[1]) * 0.5, (v[1] + v[2]) * 0.5, (v[0] + v[1] + v[2]) / 3.0]
                        {
                            assert!(in_dilated_solid(&t, p), "chunk {coord}: point {p} outside the solid mask");
                        }
                        // And the broadphase query of the triangle's box reports this chunk.
                        let mut reported = false;
                        t.for_each_overlap(&aabb, |c, o| {
                            reported |= c == coord && o.solid;
                            !reported
                        });
                        assert!(reported, "chunk {coord}: the broadphase misses triangle {v:?}");
                        triangles += 1;
                    }
                }
            }
        }
        assert!(triangles > 1000, "seed {seed}: only {triangles} triangles");
    }
}

/// Iterates an inclusive integer box.
trait Iter3d {
    fn into_iter_3d(self) -> impl Iterator<Item = IVec3>;
}

impl Iter3d for std::ops::RangeInclusive<IVec3> {
    fn into_iter_3d(self) -> impl Iterator<Item = IVec3> {
        let (lo, hi) = self.into_inner();
        (lo.y..=hi.y)
            .flat_map(move |y| (lo.z..=hi.z).flat_map(move |z| (lo.x..=hi.x).map(move |x| IVec3::new(x, y, z))))
    }
}

/// Directed edges keyed by vertex positions; a closed, consistently wound surface
/// uses each edge as often in one direction as in the other.
fn assert_closed(meshes: &[TriMesh]) {
    let key = |v: Vec3| v.to_array().map(f32::to_bits);
    let mut edges: HashMap<([u32; 3], [u32; 3]), i32> = HashMap::new();
    for mesh in meshes {
        for i in 0..mesh.triangles.len() {
            let tri = mesh.triangle(i).map(key);
            for (a, b) in [(tri[0], tri[1]), (tri[1], tri[2]), (tri[2], tri[0])] {
                *edges.entry((a, b)).or_default() += 1;
                *edges.entry((b, a)).or_default() -= 1;
            }
        }
    }
    let open = edges.values().filter(|&&n| n != 0).count();
    assert_eq!(open, 0, "{open} unmatched directed edges");
}

#[test]
fn chunk_meshes_join_into_closed_surfaces() {
    let mut rng = crate::spatial::tests::Rng(5);
    for round in 0..6 {
        // A random blob across chunk borders (and negative coordinates), with holes.
        let mut t = Terrain::new(0.25);
        t.fill(IVec3::new(-6, -5, -7), IVec3::new(9, 6, 5), Material::ROCK);
        for _ in 0..40 * round {
            let v = IVec3::new(rng.below(16) as i32 - 6, rng.below(12) as i32 - 5, rng.below(13) as i32 - 7);
            t.fill(v, v, if rng.below(2) == 0 { Material::AIR } else { Material::WATER });
        }
        let mut meshes = Vec::new();
        for coord in (IVec3::splat(-2)..=IVec3::splat(2)).into_iter_3d() {
            let mut mesh = TriMesh::new();
            mesh_chunk(t.voxels(), coord, 0.25, &mut mesh);
            meshes.push(mesh);
        }
        assert!(meshes.iter().map(|m| m.triangles.len()).sum::<usize>() > 500);
        assert_closed(&meshes);
    }
}

#[test]
fn flat_ground_meshes_to_two_triangles_per_column() {
    let mut t = Terrain::new(1.0);
    t.fill(IVec3::new(-40, -20, -40), IVec3::new(40, 3, 40), Material::GRASS);
    let mut mesh = TriMesh::new();
    mesh_chunk(t.voxels(), IVec3::new(0, 0, 0), 1.0, &mut mesh);
    assert_eq!(mesh.triangles.len(), 2 * 64, "one quad per voxel column");
    assert!(mesh.vertices.iter().all(|v| v.y == 4.0), "the surface sits on the top face of y = 3");
    assert!(mesh.materials.iter().all(|&m| m == Material::GRASS.0));
    for i in 0..mesh.triangles.len() {
        assert_eq!(crate::math::triangle_normal(mesh.triangle(i)), Vec3::Y, "normals point out of the ground");
    }
    // All solid or all empty: nothing.
    for coord in [IVec3::new(0, -2, 0), IVec3::new(0, 2, 0), IVec3::new(100, 0, 0)] {
        mesh.clear();
        mesh_chunk(t.voxels(), coord, 1.0, &mut mesh);
        assert!(mesh.triangles.is_empty(), "chunk {coord}");
    }
}
