//! `ConvexHull::new` on arbitrary point clouds: random coordinates, points snapped to
//! a coarse grid (coplanar and collinear sets, duplicates) and tiny clouds. Either a
//! clean refusal, or a hull whose every input point is inside every face plane (within
//! the build tolerance), whose vertices are input points lying on their faces' planes,
//! with unit normals, Euler's V - E + F = 2 and a positive finite volume.
#![no_main]

use kiln::math::Vec3;
use kiln::shapes::{ConvexHull, Polytope, MAX_FACE_VERTICES};
use libfuzzer_sys::fuzz_target;

fn points(data: &[u8]) -> Vec<Vec3> {
    let Some((&mode, rest)) = data.split_first() else { return Vec::new() };
    let scale = [1e-3f32, 1.0, 50.0, 1e4][(mode & 3) as usize];
    rest.chunks_exact(3)
        .map(|c| {
            let coord = |b: u8| {
                if mode & 4 != 0 {
                    // A 4-step grid: coplanar faces, collinear edges, duplicates.
                    (b % 4) as f32 * scale
                } else {
                    (b as f32 - 127.5) / 127.5 * scale
                }
            };
            Vec3::new(coord(c[0]), coord(c[1]), coord(c[2]))
        })
        .take(400)
        .collect()
}

fuzz_target!(|data: &[u8]| {
    let input = points(data);
    let Ok(hull) = ConvexHull::new(&input) else { return };
    let scale: f32 = input.iter().map(|p| p.abs().max_element()).fold(0.0, f32::max) * 3.0;
    let tolerance = 1e-4 * scale.max(1e-6);
    let (v, e, f) = (hull.vertex_count(), hull.edge_count(), hull.face_count());
    assert!(v >= 4 && f >= 4, "{v} vertices, {f} faces");
    assert_eq!(v + f, e + 2, "Euler: {v} vertices, {e} edges, {f} faces");
    assert!(hull.volume() > 0.0 && hull.volume().is_finite(), "volume {}", hull.volume());
    for face in 0..f {
        let plane = hull.plane(face);
        assert!((plane.normal.length() - 1.0).abs() < 1e-3, "normal {:?}", plane.normal);
        for p in &input {
            assert!(plane.distance(*p) <= tolerance, "{p:?} is {} outside face {face}", plane.distance(*p));
        }
        let mut loop_ = [0u16; MAX_FACE_VERTICES];
        let n = hull.face_vertices(face, &mut loop_);
        assert!(n >= 3, "face {face} has {n} vertices");
        for &i in &loop_[..n] {
            let d = plane.distance(hull.vertex(i as usize));
            assert!(d.abs() <= tolerance, "vertex {i} is {d} off face {face}'s plane");
        }
    }
    for i in 0..v {
        assert!(input.contains(&hull.vertex(i)), "vertex {i} is not an input point");
    }
});
