//! Scenes the DDGI tests, benches and samples share.

use crate::math::{IVec3, Vec3};
use crate::raytrace::{box_mesh, grid_mesh, sorted_keys, Affine, CpuTlas, Scene, TlasNode};
use crate::spatial::TriMesh;
use crate::terrain::{generate_hills, mesh_chunk, Terrain, CHUNK};

fn translation(t: Vec3) -> Affine {
    [[1.0, 0.0, 0.0, t.x], [0.0, 1.0, 0.0, t.y], [0.0, 0.0, 1.0, t.z]]
}

fn add_box(scene: &mut Scene, lo: Vec3, hi: Vec3) {
    let half = (hi - lo) * 0.5;
    let (positions, triangles) = box_mesh(half.into());
    let mesh = scene.add_mesh(&positions, &triangles).expect("a box is a valid mesh");
    let index = scene.instances().len() as u32;
    scene.add_instance(mesh, &box_transform(lo, hi), u32::MAX, index).expect("a translation is invertible");
}

/// A scene of axis-aligned boxes given by `(lo, hi)` corners, instance `i` the
/// box `i` (user id `i`, every mask bit).
pub fn boxes_scene(boxes: &[(Vec3, Vec3)]) -> Scene {
    let mut scene = Scene::new();
    for &(lo, hi) in boxes {
        add_box(&mut scene, lo, hi);
    }
    scene
}

/// The boxes of [`walled_room`] with its east wall (x = 3.5) open: the room is lit
/// through it. [`room_wall`] closes it.
pub fn open_room_boxes() -> Vec<(Vec3, Vec3)> {
    let mut boxes = walled_room_boxes();
    boxes.remove(2);
    boxes
}

/// A 0.2 m wall closing the opening of [`open_room_boxes`], as `(lo, hi)`.
pub fn room_wall() -> (Vec3, Vec3) {
    (Vec3::new(3.4, -0.5, 0.5 - ROOM_WALL), Vec3::new(3.6, 2.5 + ROOM_WALL, 3.5 + ROOM_WALL))
}

/// The voxel terrain's mesh of the chunks `lo..=hi` (chunk coordinates) as one
/// mesh instance: what the probes see of a terrain.
pub fn terrain_scene(terrain: &Terrain, lo: IVec3, hi: IVec3) -> Scene {
    let mut mesh = TriMesh::new();
    for cy in lo.y..=hi.y {
        for cz in lo.z..=hi.z {
            for cx in lo.x..=hi.x {
                mesh_chunk(terrain.voxels(), IVec3::new(cx, cy, cz), terrain.voxel_size(), &mut mesh);
            }
        }
    }
    let positions: Vec<[f32; 3]> = mesh.vertices.iter().map(|v| (*v).into()).collect();
    let mut scene = Scene::new();
    if !mesh.triangles.is_empty() {
        let id = scene.add_mesh(&positions, &mesh.triangles).expect("the mesher's triangles are a valid mesh");
        scene.add_instance(id, &translation(Vec3::ZERO), u32::MAX, 0).expect("identity");
    }
    scene
}

/// The CPU TLAS of `scene` (what `TlasBuilder` builds on the GPU).
pub fn cpu_tlas(scene: &Scene) -> Vec<TlasNode> {
    let boxes = scene.instance_boxes();
    CpuTlas::build(&sorted_keys(&boxes), &boxes).nodes
}

/// Walls of the closed room in [`walled_room`]: 10 cm thick, centred on
/// half-integer coordinates so that probes on a 1 m integer grid sit 45 cm from
/// either face.
pub const ROOM_WALL: f32 = 0.05;

/// A ground slab (top at y = -0.45) and on it a closed room: walls at x = 0.5 and
/// 3.5, z = 0.5 and 3.5, roof at y = 2.5. No light enters the room; probes on an
/// integer grid are either inside or outside it, never in a wall. The thin-wall
/// light-leak scene.
pub fn walled_room() -> Scene {
    let mut scene = Scene::new();
    for (lo, hi) in walled_room_boxes() {
        add_box(&mut scene, lo, hi);
    }
    scene
}

/// The boxes of [`walled_room`] as `(lo, hi)` corners, for building it elsewhere
/// (a `RayTracer`, the C samples).
pub fn walled_room_boxes() -> Vec<(Vec3, Vec3)> {
    let w = ROOM_WALL;
    let mut boxes = vec![(Vec3::new(-6.0, -0.5 - w, -6.0), Vec3::new(10.0, -0.5 + w, 10.0))];
    for x in [0.5, 3.5] {
        boxes.push((Vec3::new(x - w, -0.5, 0.5 - w), Vec3::new(x + w, 2.5 + w, 3.5 + w)));
    }
    for z in [0.5, 3.5] {
        boxes.push((Vec3::new(0.5 - w, -0.5, z - w), Vec3::new(3.5 + w, 2.5 + w, z + w)));
    }
    boxes.push((Vec3::new(0.5 - w, 2.5 - w, 0.5 - w), Vec3::new(3.5 + w, 2.5 + w, 3.5 + w)));
    boxes
}

/// The transform placing [`box_mesh`] of half extents `(hi - lo) / 2` at `lo..hi`.
pub fn box_transform(lo: Vec3, hi: Vec3) -> Affine {
    translation((lo + hi) * 0.5)
}

/// Rolling terrain `size` metres square (1 m cells) with boxes standing on it
/// (rocks and huts, 0.5 to 4 m), from `seed`: the scene of the probe compression
/// figures. Returns the scene and its bounds.
pub fn probe_terrain(size: u32, seed: u32) -> (Scene, Vec3, Vec3) {
    let height = |x: f32, z: f32| 1.5 * (x * 0.21).sin() * (z * 0.17).cos() + 0.8 * (x * 0.05 + z * 0.09).sin();
    let (positions, triangles) = grid_mesh(size, 1.0, |x, z| height(x as f32, z as f32));
    let mut scene = Scene::new();
    let mesh = scene.add_mesh(&positions, &triangles).expect("a height field is a valid mesh");
    scene.add_instance(mesh, &translation(Vec3::ZERO), u32::MAX, 0).expect("identity");
    let mut h = seed.wrapping_mul(0x9E37_79B9) | 1;
    let mut rnd = || {
        h ^= h << 13;
        h ^= h >> 17;
        h ^= h << 5;
        (h >> 8) as f32 / (1u32 << 24) as f32
    };
    let mut top = 3.0f32;
    for _ in 0..size * size / 64 {
        let (x, z) = (rnd() * size as f32, rnd() * size as f32);
        let half = Vec3::new(0.25 + rnd() * 1.75, 0.25 + rnd() * 1.75, 0.25 + rnd() * 1.75);
        let ground = height(x, z) - 0.3;
        let lo = Vec3::new(x, ground, z) - Vec3::new(half.x, 0.0, half.z);
        let hi = Vec3::new(x, ground + 2.0 * half.y, z) + Vec3::new(half.x, 0.0, half.z);
        top = top.max(hi.y);
        add_box(&mut scene, lo, hi);
    }
    (scene, Vec3::new(0.0, -2.5, 0.0), Vec3::new(size as f32, top + 1.0, size as f32))
}

/// Kiln's test voxel terrain (`terrain::generate_hills`: hills of 1 m voxels with
/// surfaces between y = 4 and 28, caves) over `size` x `size` voxels, meshed by the
/// terrain mesher into one mesh: the voxel scene of the probe compression figures.
/// Water is not part of the mesh. Returns the scene and the bounds of its surface.
pub fn voxel_hills(size: i32, seed: u32) -> (Scene, Vec3, Vec3) {
    let mut terrain = Terrain::new(1.0);
    generate_hills(&mut terrain, size, seed);
    let mut mesh = TriMesh::new();
    let chunks = (size + CHUNK - 1) / CHUNK;
    for cy in -1..=4 {
        for cz in 0..chunks {
            for cx in 0..chunks {
                mesh_chunk(terrain.voxels(), IVec3::new(cx, cy, cz), 1.0, &mut mesh);
            }
        }
    }
    let positions: Vec<[f32; 3]> = mesh.vertices.iter().map(|v| (*v).into()).collect();
    let mut scene = Scene::new();
    let id = scene.add_mesh(&positions, &mesh.triangles).expect("the mesher's triangles are a valid mesh");
    scene.add_instance(id, &translation(Vec3::ZERO), u32::MAX, 0).expect("identity");
    // Above the bedrock and below the highest hill, inside the terrain's columns.
    let lo = Vec3::new(0.0, 2.0, 0.0);
    let hi = Vec3::new(size as f32 - 1.0, 30.0, size as f32 - 1.0);
    (scene, lo, hi)
}

/// A low-poly town `size` metres square from `seed`: flat ground, axis-aligned
/// buildings (footprints 2 to 8 m, heights 2 to 9 m, on a 1 m lattice) and low walls
/// between them: the kind of level the reference notes' compression figures come
/// from (a low-poly game), where flat ground and straight walls repeat the same
/// local shapes. Returns the scene and bounds whose grid points sit a quarter
/// metre off every lattice surface.
pub fn low_poly_town(size: u32, seed: u32) -> (Scene, Vec3, Vec3) {
    let s = size as f32;
    let mut scene = Scene::new();
    add_box(&mut scene, Vec3::new(-1.0, -1.0, -1.0), Vec3::new(s + 1.0, 0.0, s + 1.0));
    let mut h = seed.wrapping_mul(0x9E37_79B9) | 1;
    let mut rnd = || {
        h ^= h << 13;
        h ^= h >> 17;
        h ^= h << 5;
        (h >> 8) as f32 / (1u32 << 24) as f32
    };
    let mut top = 2.0f32;
    for _ in 0..(size * size / 96).max(1) {
        let (w, d, height) = ((2.0 + rnd() * 7.0).floor(), (2.0 + rnd() * 7.0).floor(), (2.0 + rnd() * 8.0).floor());
        let x = (rnd() * (s - w).max(1.0)).floor();
        let z = (rnd() * (s - d).max(1.0)).floor();
        add_box(&mut scene, Vec3::new(x, 0.0, z), Vec3::new(x + w, height, z + d));
        top = top.max(height);
    }
    for _ in 0..(size / 2).max(1) {
        let length = (3.0 + rnd() * 8.0).floor();
        let (x, z) = ((rnd() * (s - length).max(1.0)).floor(), (rnd() * s).floor());
        let (lo, hi) = if rnd() < 0.5 {
            (Vec3::new(x, 0.0, z), Vec3::new(x + length, 1.0, z + 0.2))
        } else {
            (Vec3::new(z, 0.0, x), Vec3::new(z + 0.2, 1.0, x + length))
        };
        add_box(&mut scene, lo, hi);
    }
    (scene, Vec3::splat(0.25), Vec3::new(s - 0.25, top + 1.25, s - 0.25))
}
