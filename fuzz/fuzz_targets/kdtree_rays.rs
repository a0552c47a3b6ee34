//! kD-tree builds and ray queries on arbitrary meshes, against brute force: the tree
//! validates, and the closest hit of each ray (full and compact storage) has the
//! distance of the closest hit of the watertight test over every triangle the tree
//! holds (for compact storage, its quantised triangles), and any-hit agrees on
//! whether there is one.
#![no_main]

use kiln::math::{ray_triangle, Ray, Vec3};
use kiln::spatial::{KdMesh, MeshMode, TriMesh};
use libfuzzer_sys::fuzz_target;

fn decode(data: &[u8]) -> (TriMesh, Vec<Ray>) {
    let mut mesh = TriMesh::new();
    let (mesh_bytes, ray_bytes) = data.split_at(data.len() * 3 / 4);
    // Vertices on a coarse lattice, so triangles share edges and vertices, lie in
    // planes and degenerate, as meshes do.
    for c in mesh_bytes.chunks_exact(3).take(300) {
        mesh.vertices.push(Vec3::new(c[0] as f32 / 16.0, c[1] as f32 / 16.0, c[2] as f32 / 16.0));
    }
    let n = mesh.vertices.len() as u32;
    if n >= 3 {
        for c in mesh_bytes.chunks_exact(3).take(200) {
            mesh.push([c[0] as u32 % n, c[1] as u32 % n, c[2] as u32 % n], c[0]);
        }
    }
    let rays = ray_bytes
        .chunks_exact(6)
        .take(32)
        .filter_map(|c| {
            let origin = Vec3::new(c[0] as f32 / 16.0 - 2.0, c[1] as f32 / 16.0 - 2.0, c[2] as f32 / 16.0 - 2.0);
            let dir = Vec3::new(c[3] as f32 - 127.5, c[4] as f32 - 127.5, c[5] as f32 - 127.5);
            (dir.length_squared() > 0.0).then(|| Ray::new(origin, dir))
        })
        .collect();
    (mesh, rays)
}

fuzz_target!(|data: &[u8]| {
    let (mesh, rays) = decode(data);
    for mode in [MeshMode::Full, MeshMode::Compact] {
        let Ok(tree) = KdMesh::build(&mesh, mode) else { continue };
        tree.validate();
        for ray in &rays {
            let max_t = 4.0;
            let brute = (0..tree.triangle_count() as u32)
                .filter_map(|i| ray_triangle(ray, tree.triangle(i), 0.0, max_t))
                .map(|hit| hit.t)
                .fold(None, |best: Option<f32>, t| Some(best.map_or(t, |b| b.min(t))));
            let found = tree.ray_closest(ray, max_t).map(|hit| hit.t);
            assert_eq!(tree.ray_any(ray, max_t).is_some(), brute.is_some(), "{mode:?}: any-hit for {ray:?}");
            match (brute, found) {
                (None, None) => {}
                (Some(b), Some(f)) => {
                    assert!((b - f).abs() <= 1e-6 * (1.0 + b), "{mode:?}: brute force {b}, tree {f}");
                }
                (b, f) => panic!("{mode:?}: brute force {b:?}, tree {f:?} for {ray:?}"),
            }
        }
    }
});
