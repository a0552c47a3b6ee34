//! Terrain edits followed by queries, against brute force. The bytes decode into a
//! voxel size, a mesh mode and a run of box fills (air, water, three solids; some
//! followed by a regeneration, the last one always), then queries:
//! - every voxel the fills touched reads back as the last fill that covered it;
//! - each ray's closest hit (single and batched) is the closest hit of the watertight
//!   test over every triangle of every chunk mesh built from the voxels;
//! - each box's triangle query returns exactly the triangles that overlap it;
//! - each box's mask overlap is the solid/water bits of the voxels it covers, dilated.
#![no_main]

use std::collections::BTreeSet;
use std::sync::OnceLock;

use kiln::jobs::ThreadPool;
use kiln::math::{ray_triangle, triangle_overlaps_aabb, IVec3, Vec3};
use kiln::math::{Aabb, Ray};
use kiln::spatial::{KdMesh, MeshMode};
use kiln::terrain::{Material, Terrain, TerrainHit};
use libfuzzer_sys::fuzz_target;

const MATERIALS: [Material; 5] = [Material::AIR, Material::WATER, Material::ROCK, Material::GRASS, Material::SAND];

/// Two workers, made once: batches must match single casts for any worker count.
fn pool() -> &'static ThreadPool {
    static POOL: OnceLock<ThreadPool> = OnceLock::new();
    POOL.get_or_init(|| ThreadPool::new(2))
}

/// Reads the fuzzer's bytes front to back; zeros once they run out.
struct Bytes<'a>(&'a [u8]);

impl Bytes<'_> {
    fn byte(&mut self) -> u8 {
        let Some((&b, rest)) = self.0.split_first() else { return 0 };
        self.0 = rest;
        b
    }

    /// A coordinate in [-12, 12) voxels.
    fn coord(&mut self) -> i32 {
        (self.byte() % 24) as i32 - 12
    }

    fn point(&mut self, voxel: f32) -> Vec3 {
        let mut c = || (self.byte() as f32 - 128.0) / 8.0 * voxel;
        Vec3::new(c(), c(), c())
    }
}

struct Fill {
    min: IVec3,
    max: IVec3,
    material: Material,
}

/// The material a voxel has after the fills, replayed.
fn replay(fills: &[Fill], v: IVec3) -> Material {
    fills.iter().rev().find(|f| v.cmpge(f.min).all() && v.cmple(f.max).all()).map_or(Material::AIR, |f| f.material)
}

/// The closest hit over all triangles: lowest `t`, then chunk, then triangle.
fn brute_ray(meshes: &[(IVec3, KdMesh)], ray: &Ray, max_t: f32) -> Option<(f32, [i32; 3], u32)> {
    let mut best: Option<(f32, [i32; 3], u32)> = None;
    for (c, mesh) in meshes {
        for i in 0..mesh.triangle_count() as u32 {
            if let Some(h) = ray_triangle(ray, mesh.triangle(i), 0.0, max_t) {
                let key = (h.t, c.to_array(), i);
                if best.is_none_or(|b| key < b) {
                    best = Some(key);
                }
            }
        }
    }
    best
}

fn key(hit: &TerrainHit) -> (f32, [i32; 3], u32) {
    (hit.t, hit.chunk.to_array(), hit.triangle)
}

fuzz_target!(|data: &[u8]| {
    let mut bytes = Bytes(data);
    let mode = bytes.byte();
    let voxel = [0.25, 0.5, 1.0, 2.0][(mode & 3) as usize];
    let mut terrain = Terrain::new(voxel);
    terrain.set_mesh_mode(if mode & 4 != 0 { MeshMode::Compact } else { MeshMode::Full });
    let jobs = pool().jobs();
    let fills_wanted = (bytes.byte() % 16) as usize;
    let mut fills = Vec::new();
    for _ in 0..fills_wanted {
        let min = IVec3::new(bytes.coord(), bytes.coord(), bytes.coord());
        let size = bytes.byte();
        // Mostly small boxes, sometimes a slab across the whole region.
        let extent =
            if size & 0xc0 == 0xc0 { IVec3::new(23, (size % 4) as i32, 23) } else { IVec3::splat((size % 8) as i32) };
        let fill = Fill { min, max: min + extent, material: MATERIALS[(size >> 3) as usize % 5] };
        terrain.fill(fill.min, fill.max, fill.material);
        fills.push(fill);
        if size & 0x20 != 0 {
            terrain.regenerate(jobs);
        }
    }
    // Voxels read back as the last fill that covered them (edges and corners of boxes).
    for fill in &fills {
        for v in [fill.min, fill.max, fill.min - IVec3::ONE, fill.max + IVec3::ONE, (fill.min + fill.max) / 2] {
            assert_eq!(terrain.get(v), replay(&fills, v), "voxel {v}");
        }
    }
    // Rays, before the last regeneration (edits are seen at once) and after it.
    let meshes = terrain.all_chunk_meshes();
    let rays: Vec<Ray> = (0..8)
        .map(|_| {
            let origin = bytes.point(voxel);
            let dir = bytes.point(voxel);
            Ray::new(origin, if dir == Vec3::ZERO { Vec3::NEG_Y } else { dir })
        })
        .collect();
    let max_t = 200.0 * voxel;
    for ray in &rays {
        assert_eq!(terrain.ray_cast(ray, max_t).as_ref().map(key), brute_ray(&meshes, ray, max_t), "{ray:?}");
    }
    terrain.regenerate(jobs);
    let mut batch = vec![None; rays.len()];
    terrain.ray_cast_batch(&rays, max_t, &mut batch, jobs);
    for (ray, hit) in rays.iter().zip(&batch) {
        assert_eq!(hit.as_ref().map(key), brute_ray(&meshes, ray, max_t), "batched {ray:?}");
    }
    terrain.meshes().validate();
    // Boxes: triangles and mask bits.
    for _ in 0..4 {
        let (a, b) = (bytes.point(voxel), bytes.point(voxel));
        let aabb = Aabb::new(a.min(b), a.max(b));
        let mut got = BTreeSet::new();
        terrain.query_triangles(&aabb, jobs, |tri| {
            assert!(got.insert((tri.chunk.to_array(), tri.index)), "reported twice");
            true
        });
        let mut expected = BTreeSet::new();
        for (c, mesh) in &meshes {
            for i in 0..mesh.triangle_count() as u32 {
                if triangle_overlaps_aabb(mesh.triangle(i), &aabb) {
                    expected.insert((c.to_array(), i));
                }
            }
        }
        assert_eq!(got, expected, "triangles in {aabb:?}");
        // The voxels of the box grown by one voxel, each dilated by one (a mask bit is
        // set when any of the voxel's 27 neighbours is filled: geometry spills one
        // voxel out of the voxel that made it).
        let lo = ((aabb.min - Vec3::splat(voxel)) / voxel).floor().as_ivec3() - IVec3::ONE;
        let hi = ((aabb.max + Vec3::splat(voxel)) / voxel).ceil().as_ivec3();
        let (mut solid, mut water) = (false, false);
        for y in lo.y..=hi.y {
            for z in lo.z..=hi.z {
                for x in lo.x..=hi.x {
                    let m = replay(&fills, IVec3::new(x, y, z));
                    solid |= m.is_solid();
                    water |= m.is_water();
                }
            }
        }
        let overlap = terrain.overlap(&aabb);
        assert_eq!((overlap.solid, overlap.water), (solid, water), "mask bits in {aabb:?}");
    }
});
