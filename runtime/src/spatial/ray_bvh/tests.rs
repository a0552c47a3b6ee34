//! The wide BVH's rays against brute force over every triangle in mesh order, and
//! against the kD tree on the same meshes.

use glam::Vec3;

use super::{RayAim, RayBvh, StepWalk, LEAF, LEAF_MAX, STACK};
use crate::jobs::ThreadPool;
use crate::math::{ray_triangle, Ray};
use crate::spatial::kdtree::tests::{heightfield, rays, soup};
use crate::spatial::tests::Rng;
use crate::spatial::{KdError, KdMesh, MeshHit, MeshMode, TriMesh};

/// The closest hit by a loop over `mesh`'s triangles in order: the smallest `t`,
/// the lowest triangle on equal `t`.
fn brute_closest(mesh: &TriMesh, ray: &Ray, max_t: f32) -> Option<MeshHit> {
    let mut best: Option<MeshHit> = None;
    for (i, t) in mesh.triangles.iter().enumerate() {
        if let Some(h) = ray_triangle(ray, t.map(|v| mesh.vertices[v as usize]), 0.0, max_t) {
            if best.is_none_or(|b| h.t < b.t) {
                best = Some(MeshHit { t: h.t, triangle: i as u32, u: h.u, v: h.v });
            }
        }
    }
    best
}

/// Every node's children, leaves and boxes are consistent: each triangle lies in
/// one leaf, and inside the quantised boxes of every node above it.
fn validate(bvh: &RayBvh, mesh: &TriMesh) {
    let mut seen = vec![false; mesh.triangles.len()];
    if bvh.nodes.is_empty() {
        assert!(mesh.triangles.is_empty());
        return;
    }
    let mut stack = vec![(0u32, 1usize, Vec3::splat(f32::NEG_INFINITY), Vec3::splat(f32::INFINITY))];
    let mut depth = 0;
    while let Some((n, level, lo, hi)) = stack.pop() {
        depth = depth.max(level);
        let node = &bvh.nodes[n as usize];
        for c in 0..4 {
            let child = node.children[c];
            if child == super::EMPTY {
                continue;
            }
            let decode = |axis: usize, q: u8| q as f32 * node.scale[axis] + node.origin[axis];
            let clo = Vec3::from_array(std::array::from_fn(|a| decode(a, node.lo[a][c])));
            let chi = Vec3::from_array(std::array::from_fn(|a| decode(a, node.hi[a][c])));
            assert!(clo.cmple(chi).all(), "child box {clo} .. {chi} is inverted");
            let (clo, chi) = (clo.max(lo), chi.min(hi));
            if child & LEAF != 0 {
                let index = ((child & !LEAF) >> 3) as usize;
                let count = (child & 7) as usize + 1;
                assert!(count <= LEAF_MAX);
                for lane in 0..4 {
                    let source = bvh.source[4 * index + lane];
                    if lane >= count {
                        assert_eq!(source, super::EMPTY);
                        continue;
                    }
                    let source = source as usize;
                    let tri = mesh.triangles[source].map(|v| mesh.vertices[v as usize]);
                    assert_eq!(bvh.leaves[index].triangle(lane), tri, "leaf {index} lane {lane}");
                    assert!(!seen[source], "triangle {source} in two leaves");
                    seen[source] = true;
                    for v in mesh.triangles[source] {
                        let p = mesh.vertices[v as usize];
                        assert!(p.cmpge(clo).all() && p.cmple(chi).all(), "vertex {p} outside {clo} .. {chi}");
                    }
                }
            } else {
                assert!(child > n, "children follow their parent");
                stack.push((child, level + 1, clo, chi));
            }
        }
    }
    assert!(seen.iter().all(|&s| s), "every triangle in a leaf");
    assert_eq!(depth, bvh.depth());
    assert!(3 * bvh.depth() < STACK, "the walk's stack holds the deepest path");
}

/// Closest hits equal brute force's, and the kD tree's on the same mesh (its
/// triangles mapped back to the mesh's numbers), for the kD tests' kinds of rays.
fn check(mesh: &TriMesh, seed: u64, count: usize) {
    let bvh = RayBvh::build(mesh).unwrap();
    validate(&bvh, mesh);
    let kd = KdMesh::build(mesh, MeshMode::Full).unwrap();
    let mut rng = Rng(seed);
    let rays = rays(&mut rng, &kd, count);
    for max_t in [f32::INFINITY, 1.5] {
        // The batch's slots start dirty, so every one must be written.
        let mut batch = vec![Some(MeshHit { t: -1.0, triangle: u32::MAX, u: 0.0, v: 0.0 }); rays.len()];
        bvh.ray_closest_batch(&rays, max_t, &mut batch);
        for (ray, got) in rays.iter().zip(&batch) {
            let bits = |h: &Option<MeshHit>| h.map(|h| (h.t.to_bits(), h.triangle, h.u.to_bits(), h.v.to_bits()));
            assert_eq!(bits(got), bits(&bvh.ray_closest(ray, max_t)), "batch hit of {ray:?} up to {max_t}");
        }
    }
    let mut walk = StepWalk::default();
    for ray in rays {
        for max_t in [f32::INFINITY, 1.5] {
            let expected = brute_closest(mesh, &ray, max_t);
            assert_eq!(bvh.ray_closest(&ray, max_t), expected, "closest hit of {ray:?} up to {max_t}");
            let aimed = RayAim::new(&ray).and_then(|aim| bvh.ray_closest_aimed(&aim, max_t));
            assert_eq!(aimed, expected, "aimed hit of {ray:?} up to {max_t}");
            // A walk stepped to its end, reusing one walk for every ray.
            let stepped = RayAim::new(&ray).and_then(|aim| {
                if !bvh.start_walk(&mut walk, &aim, max_t) {
                    return None;
                }
                while bvh.step_walk(&mut walk) {}
                walk.hit()
            });
            assert_eq!(stepped, expected, "stepped hit of {ray:?} up to {max_t}");
            // Any hit: one exactly when there is a closest, a real one within reach.
            let any = bvh.ray_any(&ray, max_t);
            assert_eq!(any.is_some(), expected.is_some(), "any hit of {ray:?} up to {max_t}");
            if let Some(h) = any {
                let tri = mesh.triangles[h.triangle as usize].map(|v| mesh.vertices[v as usize]);
                let again = ray_triangle(&ray, tri, 0.0, max_t).map(|g| (g.t, g.u, g.v));
                assert_eq!(again, Some((h.t, h.u, h.v)), "any hit of {ray:?} is triangle {}'s", h.triangle);
            }
            let tree = kd.ray_closest(&ray, max_t).map(|h| h.t);
            assert_eq!(tree, expected.map(|h| h.t), "the kD tree's distance for {ray:?}");
        }
    }
}

#[test]
fn closest_hits_equal_brute_force_on_triangle_soups() {
    for (seed, count) in [(1, 0), (2, 1), (3, 2), (4, 3), (5, 5), (6, 17), (7, 1000), (8, 5000)] {
        check(&soup(seed, count), seed, 300);
    }
}

#[test]
fn closest_hits_equal_brute_force_on_shared_edges_and_vertices() {
    let mesh = heightfield(9, 40);
    check(&mesh, 11, 800);
    let bvh = RayBvh::build(&mesh).unwrap();
    // Straight down through every vertex and every edge midpoint: several
    // triangles at the same distance, the lowest wins; none slips through.
    for z in -20..20 {
        for x in -20..20 {
            for (dx, dz) in [(0.0, 0.0), (0.5, 0.0), (0.0, 0.5), (0.5, 0.5)] {
                let ray = Ray::new(Vec3::new(x as f32 + dx, 10.0, z as f32 + dz), Vec3::NEG_Y);
                let hit = bvh.ray_closest(&ray, f32::INFINITY);
                assert_eq!(hit, brute_closest(&mesh, &ray, f32::INFINITY), "down through ({x}, {z})");
                assert!(hit.is_some(), "a vertical ray through the field at ({x}, {z}) missed");
            }
        }
    }
}

#[test]
fn far_from_the_origin_grazing_rays_keep_their_hits() {
    // The heightfield 10 km out: box padding and the widened exit must cover
    // rounding of coordinates near 1e4.
    let mut mesh = heightfield(12, 30);
    for v in &mut mesh.vertices {
        *v += Vec3::new(1.0e4, -3.0e3, 7.5e3);
    }
    check(&mesh, 13, 600);
    // Rays skimming the surface along the grid lines.
    let bvh = RayBvh::build(&mesh).unwrap();
    for (i, v) in mesh.vertices.iter().enumerate().step_by(7) {
        for dir in [Vec3::X, Vec3::Z, Vec3::new(1.0, -1e-3, 0.5)] {
            let ray = Ray::new(*v - dir * 3.0, dir);
            assert_eq!(bvh.ray_closest(&ray, 50.0), brute_closest(&mesh, &ray, 50.0), "vertex {i} along {dir}");
        }
    }
    // Rays from very far away, along an axis and not: entry distances near 1e30
    // must not be culled by a zero direction component's slab.
    for (i, v) in mesh.vertices.iter().enumerate().step_by(11) {
        for (origin, dir) in [(Vec3::Y * 1e30, Vec3::NEG_Y), (Vec3::new(-1e25, 0.0, 0.0), Vec3::X)] {
            let ray = Ray::new(*v + origin + Vec3::new(0.01, 0.0, 0.02), dir);
            let want = brute_closest(&mesh, &ray, f32::INFINITY);
            assert_eq!(bvh.ray_closest(&ray, f32::INFINITY), want, "vertex {i} from {origin}");
            let mut batch = [None];
            bvh.ray_closest_batch(&[ray], f32::INFINITY, &mut batch);
            assert_eq!(batch[0], want);
            let aim = RayAim::new(&ray).expect("a usable ray");
            assert_eq!(bvh.ray_closest_aimed(&aim, f32::INFINITY), want);
        }
    }
    // Every triangle's vertices as the tree holds them.
    for i in 0..mesh.triangles.len() as u32 {
        assert_eq!(bvh.triangle(i), mesh.triangle(i as usize));
    }
}

#[test]
fn degenerate_inputs_keep_the_tree_shallow_and_exact() {
    // Many copies of one triangle (no split separates them), and triangles whose
    // centroids double in distance (surface-area splits peel one at a time).
    let mut copies = TriMesh::new();
    copies.vertices = vec![Vec3::ZERO, Vec3::X, Vec3::Z];
    for _ in 0..3000 {
        copies.push([0, 1, 2], 0);
    }
    let mut spread = TriMesh::new();
    for i in 0..120 {
        let x = 1.3f32.powi(i);
        let base = spread.vertices.len() as u32;
        spread.vertices.extend([Vec3::new(x, 0.0, 0.0), Vec3::new(x, 1.0, 0.0), Vec3::new(x, 0.0, 1.0)]);
        spread.push([base, base + 1, base + 2], 0);
    }
    // Flat: every triangle in the plane y = 0 (boxes of zero height).
    let mut flat = heightfield(3, 20);
    for v in &mut flat.vertices {
        v.y = 0.0;
    }
    for (seed, mesh) in [(21, &copies), (22, &spread), (23, &flat)] {
        check(mesh, seed, 300);
    }
    let bvh = RayBvh::build(&copies).unwrap();
    assert!(bvh.depth() <= 12, "3,000 equal triangles are {} levels deep", bvh.depth());
    let hit = bvh.ray_closest(&Ray::new(Vec3::new(0.25, 1.0, 0.25), Vec3::NEG_Y), f32::INFINITY).unwrap();
    assert_eq!((hit.t, hit.triangle), (1.0, 0), "equal hits: the first triangle");
}

#[test]
fn bad_meshes_are_refused_and_bad_rays_miss() {
    let mut mesh = soup(31, 10);
    mesh.triangles[3][1] = mesh.vertices.len() as u32;
    assert_eq!(RayBvh::build(&mesh).unwrap_err(), KdError::IndexOutOfRange);
    let mut mesh = soup(31, 10);
    mesh.vertices[4].y = f32::NAN;
    assert_eq!(RayBvh::build(&mesh).unwrap_err(), KdError::NonFiniteVertex);
    let mesh = soup(32, 200);
    let bvh = RayBvh::build(&mesh).unwrap();
    let aim = Ray::new(Vec3::new(0.0, 30.0, 0.0), Vec3::NEG_Y);
    for ray in [
        Ray::new(Vec3::new(f32::NAN, 0.0, 0.0), Vec3::Y),
        Ray::new(Vec3::ZERO, Vec3::ZERO),
        Ray::new(Vec3::ZERO, Vec3::new(f32::INFINITY, 0.0, 0.0)),
        Ray::new(Vec3::ZERO, Vec3::new(0.0, f32::NAN, 1.0)),
    ] {
        assert_eq!(bvh.ray_closest(&ray, f32::INFINITY), None, "{ray:?}");
    }
    for max_t in [f32::NAN, -1.0] {
        assert_eq!(bvh.ray_closest(&aim, max_t), None);
    }
    // The batch answers the same rays the same way, beside a good one.
    let bad = Ray::new(Vec3::ZERO, Vec3::ZERO);
    let mut hits = vec![Some(MeshHit { t: -1.0, triangle: 0, u: 0.0, v: 0.0 }); 3];
    bvh.ray_closest_batch(&[bad, aim, bad], f32::INFINITY, &mut hits);
    assert_eq!(hits, vec![None, bvh.ray_closest(&aim, f32::INFINITY), None]);
    bvh.ray_closest_batch(&[aim], -1.0, &mut hits[..1]);
    assert_eq!(hits[0], None);
    let empty = RayBvh::build(&TriMesh::new()).unwrap();
    assert_eq!((empty.node_count(), empty.ray_closest(&aim, f32::INFINITY)), (0, None));
}

#[test]
fn the_parallel_build_is_the_serial_tree_for_any_worker_count() {
    // Large enough that parts build as jobs several levels down.
    let mut mesh = heightfield(41, 200);
    mesh.vertices.extend(soup(42, 3000).vertices);
    let base = (mesh.vertices.len() - 9000) as u32;
    for i in 0..3000 {
        mesh.push([base + 3 * i, base + 3 * i + 1, base + 3 * i + 2], 0);
    }
    let serial = RayBvh::build(&mesh).unwrap();
    for workers in [1, 2, 8] {
        let pool = ThreadPool::new(workers - 1);
        let parallel = RayBvh::build_parallel(&mesh, pool.jobs()).unwrap();
        assert!(parallel.nodes == serial.nodes, "nodes at {workers} workers");
        assert!(parallel.leaves == serial.leaves, "leaves at {workers} workers");
        assert_eq!(parallel.source, serial.source, "triangle numbers at {workers} workers");
        assert_eq!((parallel.depth(), parallel.bounds()), (serial.depth(), serial.bounds()));
    }
    validate(&serial, &mesh);
    check(&mesh, 43, 200);
}
