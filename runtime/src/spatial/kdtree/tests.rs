//! kD tree queries against brute force over every triangle, in both storage modes.

use glam::Vec3;

use super::{KdError, KdMesh, MeshHit, MeshMode, TreeWalk, TriMesh, KD_MAX_DEPTH};
use crate::math::{ray_triangle, triangle_overlaps_aabb, Aabb, Ray};
use crate::spatial::tests::Rng;

/// `count` random triangles (sizes from slivers to 2 m) in a 20 m box.
pub(crate) fn soup(seed: u64, count: usize) -> TriMesh {
    let mut rng = Rng(seed);
    let mut mesh = TriMesh::new();
    for i in 0..count {
        let centre = rng.vec3(-10.0, 10.0);
        let size = rng.range(0.01, 2.0);
        for _ in 0..3 {
            mesh.vertices.push(centre + rng.vec3(-size, size));
        }
        let v = 3 * i as u32;
        mesh.push([v, v + 1, v + 2], rng.below(5) as u8);
    }
    mesh
}

/// A `n x n` heightfield of shared vertices (rays through its vertices and edges hit
/// several triangles at once).
pub(crate) fn heightfield(seed: u64, n: usize) -> TriMesh {
    let mut rng = Rng(seed);
    let mut mesh = TriMesh::new();
    for z in 0..=n {
        for x in 0..=n {
            let h = (x as f32 * 0.4).sin() * 1.5 + (z as f32 * 0.3).cos() + rng.range(-0.2, 0.2);
            mesh.vertices.push(Vec3::new(x as f32 - n as f32 / 2.0, h, z as f32 - n as f32 / 2.0));
        }
    }
    let w = n as u32 + 1;
    for z in 0..n as u32 {
        for x in 0..n as u32 {
            let (a, b, c, d) = (z * w + x, z * w + x + 1, (z + 1) * w + x, (z + 1) * w + x + 1);
            mesh.push([a, c, b], 2);
            mesh.push([b, c, d], 3);
        }
    }
    mesh
}

fn brute_closest(tree: &KdMesh, ray: &Ray, max_t: f32) -> Option<MeshHit> {
    let mut best: Option<MeshHit> = None;
    for t in 0..tree.triangle_count() as u32 {
        if let Some(h) = ray_triangle(ray, tree.triangle(t), 0.0, max_t) {
            if best.is_none_or(|b| h.t < b.t) {
                best = Some(MeshHit { t: h.t, triangle: t, u: h.u, v: h.v });
            }
        }
    }
    best
}

fn brute_all(tree: &KdMesh, ray: &Ray, max_t: f32) -> Vec<u32> {
    (0..tree.triangle_count() as u32).filter(|&t| ray_triangle(ray, tree.triangle(t), 0.0, max_t).is_some()).collect()
}

/// Random rays of every kind the issue names: random, along axes, through vertices
/// and edge midpoints, starting inside the mesh box.
pub(crate) fn rays(rng: &mut Rng, mesh: &KdMesh, count: usize) -> Vec<Ray> {
    let b = mesh.bounds();
    let (lo, hi) = (b.min - Vec3::splat(3.0), b.max + Vec3::splat(3.0));
    let point = |rng: &mut Rng, lo: Vec3, hi: Vec3| {
        Vec3::new(rng.range(lo.x, hi.x), rng.range(lo.y, hi.y), rng.range(lo.z, hi.z))
    };
    let axes = [Vec3::X, Vec3::NEG_X, Vec3::Y, Vec3::NEG_Y, Vec3::Z, Vec3::NEG_Z];
    (0..count)
        .map(|i| {
            let origin = if i % 3 == 0 { point(rng, b.min, b.max) } else { point(rng, lo, hi) };
            let tri = match mesh.triangle_count() {
                0 => [Vec3::ZERO, Vec3::X, Vec3::Y],
                n => mesh.triangle(rng.below(n) as u32),
            };
            let dir = match i % 5 {
                0 => point(rng, Vec3::splat(-1.0), Vec3::ONE),
                1 => axes[rng.below(6)],
                2 => tri[rng.below(3)] - origin,
                3 => (tri[0] + tri[1]) * 0.5 - origin,
                _ => (tri[0] + tri[1] + tri[2]) / 3.0 - origin,
            };
            Ray::new(origin, if dir == Vec3::ZERO { Vec3::Y } else { dir })
        })
        .collect()
}

fn check_rays(mesh: &KdMesh, seed: u64, count: usize) {
    let mut rng = Rng(seed);
    let rays = rays(&mut rng, mesh, count);
    for max_t in [f32::INFINITY, 1.5] {
        // The interleaved batch walks give each ray's closest hit, bit for bit; the
        // slots start dirty so every one must be written.
        // Both batches: the vector one (on full meshes where the CPU has AVX2) and
        // the scalar one.
        let mut batch = vec![Some(MeshHit { t: -1.0, triangle: u32::MAX, u: 0.0, v: 0.0 }); rays.len()];
        let mut scalar = batch.clone();
        mesh.ray_closest_batch(&rays, max_t, &mut batch);
        mesh.ray_closest_batch_scalar(&rays, max_t, &mut scalar);
        for ((ray, got), got_scalar) in rays.iter().zip(&batch).zip(&scalar) {
            let bits = |h: &Option<MeshHit>| h.map(|h| (h.t.to_bits(), h.triangle, h.u.to_bits(), h.v.to_bits()));
            let expected = bits(&mesh.ray_closest(ray, max_t));
            assert_eq!(bits(got), expected, "batch hit of {ray:?} up to {max_t}");
            assert_eq!(bits(got_scalar), expected, "scalar batch hit of {ray:?} up to {max_t}");
        }
    }
    for ray in rays {
        for max_t in [f32::INFINITY, 1.5] {
            let expected = brute_closest(mesh, &ray, max_t);
            let got = mesh.ray_closest(&ray, max_t);
            assert_eq!(got, expected, "closest hit of {ray:?} up to {max_t}");
            assert_eq!(mesh.ray_any(&ray, max_t).is_some(), expected.is_some(), "any hit of {ray:?}");
            let mut all = Vec::new();
            mesh.ray_all(&ray, max_t, |h| {
                all.push(h.triangle);
                true
            });
            all.sort_unstable();
            assert_eq!(all, brute_all(mesh, &ray, max_t), "all hits of {ray:?}");
        }
    }
}

fn check_boxes(mesh: &KdMesh, seed: u64, count: usize) {
    let mut rng = Rng(seed);
    let b = mesh.bounds();
    for i in 0..count {
        let size = [0.01, 0.5, 3.0, 40.0][i % 4];
        let c = rng.vec3(b.min.min_element() - 2.0, b.max.max_element() + 2.0);
        let aabb = Aabb::new(c - rng.vec3(0.0, size), c + rng.vec3(0.0, size));
        let mut got = Vec::new();
        mesh.query_aabb(&aabb, |t| {
            got.push(t);
            true
        });
        got.sort_unstable();
        let expected: Vec<u32> =
            (0..mesh.triangle_count() as u32).filter(|&t| triangle_overlaps_aabb(mesh.triangle(t), &aabb)).collect();
        assert_eq!(got, expected, "box {aabb:?}");
    }
}

#[test]
fn queries_equal_brute_force_on_triangle_soups() {
    for mode in [MeshMode::Full, MeshMode::Compact] {
        for (seed, count) in [(1, 0), (2, 1), (3, 2), (4, 3), (5, 17), (6, 1000), (7, 4000)] {
            let mesh = KdMesh::build(&soup(seed, count), mode).unwrap();
            mesh.validate();
            check_boxes(&mesh, seed, 200);
            check_rays(&mesh, seed, 300);
        }
    }
}

#[test]
fn queries_equal_brute_force_on_shared_edges_and_vertices() {
    for mode in [MeshMode::Full, MeshMode::Compact] {
        let mesh = KdMesh::build(&heightfield(9, 40), mode).unwrap();
        mesh.validate();
        check_boxes(&mesh, 10, 300);
        check_rays(&mesh, 11, 600);
        // Straight down through every vertex and every edge midpoint of a few rows.
        for z in -5..5 {
            for x in -20..20 {
                for (dx, dz) in [(0.0, 0.0), (0.5, 0.0), (0.0, 0.5), (0.5, 0.5)] {
                    let ray = Ray::new(Vec3::new(x as f32 + dx, 10.0, z as f32 + dz), Vec3::NEG_Y);
                    let hit = mesh.ray_closest(&ray, f32::INFINITY);
                    assert_eq!(hit, brute_closest(&mesh, &ray, f32::INFINITY));
                    assert!(hit.is_some(), "a vertical ray through the field at ({x}, {z}) missed");
                }
            }
        }
    }
}

#[test]
fn rays_through_shared_edges_never_slip_through() {
    // Rays aimed at random points of the heightfield's shared edges, from random
    // directions above: a crack between two triangles would let one through.
    let source = heightfield(60, 32);
    for mode in [MeshMode::Full, MeshMode::Compact] {
        let mesh = KdMesh::build(&source, mode).unwrap();
        let mut rng = Rng(61);
        let mut crossing = 0;
        for _ in 0..20_000 {
            let tri = mesh.triangle(rng.below(mesh.triangle_count()) as u32);
            let k = rng.below(3);
            let target = tri[k].lerp(tri[(k + 1) % 3], rng.range(0.0, 1.0));
            if target.x.abs() >= 15.99 || target.z.abs() >= 15.99 {
                continue; // the field's border edges have no second triangle
            }
            let origin = target + Vec3::new(rng.range(-8.0, 8.0), rng.range(3.0, 12.0), rng.range(-8.0, 8.0));
            let ray = Ray::new(origin, target - origin);
            // Only rays that really cross the surface there (a ray grazing a ridge
            // touches a single point, and may round either way).
            let height = |p: Vec3| {
                let h = mesh.ray_closest(&Ray::new(Vec3::new(p.x, 100.0, p.z), Vec3::NEG_Y), 200.0);
                h.map(|h| 100.0 - h.t)
            };
            let (before, after) = (ray.at(0.98), ray.at(1.02));
            let (hb, ha) = (height(before), height(after));
            if hb.is_some_and(|h| before.y > h) && ha.is_some_and(|h| after.y < h) {
                crossing += 1;
                assert!(mesh.ray_closest(&ray, 2.0).is_some(), "{mode:?}: {ray:?} slipped through at {target}");
            }
        }
        assert!(crossing > 10_000, "{crossing} crossing rays");
    }
}

#[test]
fn trees_are_small_and_shallow() {
    for count in [1usize, 2, 3, 4, 5, 100, 1001, 20_000] {
        let mesh = soup(count as u64, count);
        let full = KdMesh::build(&mesh, MeshMode::Full).unwrap();
        assert!(full.node_count() <= count, "{} nodes for {count} triangles", full.node_count());
        assert!(full.tree_bytes() <= 12 * count);
        // A soup has 3 own vertices per triangle: 3 * 12 + 12 + 1 bytes.
        assert_eq!(full.mesh_bytes(), 49 * count);
        // log(n) / log(4/3) + 1, the 25% rule's bound.
        let bound = ((count as f64).ln() / (4.0f64 / 3.0).ln()).ceil() as u32 + 1;
        assert!(full.depth() <= bound, "depth {} over {bound} for {count}", full.depth());
        if count > 16_384 {
            // Past the 14-bit child index of compact nodes.
            assert_eq!(KdMesh::build(&mesh, MeshMode::Compact).unwrap_err(), KdError::TooLargeForCompact);
            continue;
        }
        let compact = KdMesh::build(&mesh, MeshMode::Compact).unwrap();
        assert_eq!(compact.node_count(), full.node_count());
        assert!(compact.tree_bytes() <= 6 * count);
        assert_eq!(compact.mesh_bytes(), 25 * count);
    }
    const { assert!(KD_MAX_DEPTH >= 80) };
}

/// A node of three to five triangles puts the two with the smallest midpoints on
/// its longest axis in its left leaf, as the mean split with its fix-ups (even left
/// counts, the median when skewed) would: the build picks them without the mean.
#[test]
fn small_nodes_split_as_the_mean_rule_does() {
    for count in 3..=5 {
        for seed in 0..300 {
            let tree = KdMesh::build(&soup(1_000 * count as u64 + seed, count), MeshMode::Full).unwrap();
            tree.validate();
            let axis = tree.bounds().longest_axis();
            let mid = |t: u32| {
                let v = tree.triangle(t).map(|v| v[axis]);
                v[0].min(v[1]).min(v[2]) + v[0].max(v[1]).max(v[2])
            };
            // The tree numbers triangles in leaf order: the left leaf holds 0 and 1.
            let left = mid(0).max(mid(1));
            let right = (2..count as u32).map(mid).fold(f32::INFINITY, f32::min);
            assert!(left <= right, "{count} triangles, seed {seed}: left midpoints up to {left}, right from {right}");
        }
    }
}

/// Peel splits bound nodes over 2.5D terrain: without them no node splits y, so a
/// leaf's region reaches up to the top of the whole mesh.
#[test]
fn peel_splits_bound_leaf_regions_over_terrain() {
    let mesh = heightfield(3, 96);
    let tree = KdMesh::build(&mesh, MeshMode::Full).unwrap();
    tree.validate();
    assert!(tree.node_count() <= mesh.triangles.len(), "peels cost no nodes");
    let gaps = tree.leaf_gaps(1);
    let mean = gaps.iter().sum::<f32>() / gaps.len() as f32;
    // What the gaps would be with no y planes at all: the mesh top minus each leaf's top.
    let top = tree.bounds().max.y;
    let unbounded = (0..tree.triangle_count() as u32)
        .map(|t| top - tree.triangle(t).iter().fold(f32::NEG_INFINITY, |m, v| m.max(v.y)))
        .sum::<f32>()
        / tree.triangle_count() as f32;
    assert!(mean < 0.25 * unbounded, "mean gap above leaves {mean}, unbounded {unbounded}");
}

#[test]
fn compact_hits_are_within_the_quantisation_error() {
    let source = heightfield(21, 64);
    let full = KdMesh::build(&source, MeshMode::Full).unwrap();
    let compact = KdMesh::build(&source, MeshMode::Compact).unwrap();
    // Half a step per axis per vertex (`extent / 65535 / 2`).
    let step = full.bounds().extents() / 65535.0;
    let mut rng = Rng(22);
    let mut hits = 0;
    for _ in 0..2000 {
        let origin = Vec3::new(rng.range(-30.0, 30.0), 8.0, rng.range(-30.0, 30.0));
        let dir = Vec3::new(rng.range(-0.3, 0.3), -1.0, rng.range(-0.3, 0.3));
        let ray = Ray::new(origin, dir);
        let (Some(a), Some(b)) = (full.ray_closest(&ray, 100.0), compact.ray_closest(&ray, 100.0)) else {
            assert_eq!(full.ray_closest(&ray, 100.0).is_some(), compact.ray_closest(&ray, 100.0).is_some());
            continue;
        };
        hits += 1;
        // The surface moved by at most half a step per axis; with slopes under 2 and
        // rays within 17 degrees of vertical the hit moves by a few steps at most.
        let moved = (ray.at(a.t) - ray.at(b.t)).length();
        assert!(moved <= 4.0 * step.length(), "hit moved {moved} m (step {step:?})");
    }
    assert!(hits > 1900, "rays should hit the field: {hits}");
}

#[test]
fn bad_meshes_are_refused() {
    let mut mesh = soup(30, 10);
    mesh.vertices[4].y = f32::NAN;
    assert_eq!(KdMesh::build(&mesh, MeshMode::Full).unwrap_err(), KdError::NonFiniteVertex);
    let mut mesh = soup(30, 10);
    mesh.vertices[4].y = f32::INFINITY;
    assert_eq!(KdMesh::build(&mesh, MeshMode::Compact).unwrap_err(), KdError::NonFiniteVertex);
    // Every lane and both ends of the vertex array are checked (the box pass
    // carries the check).
    for (vertex, lane, bad) in [(0, 0, f32::NEG_INFINITY), (29, 2, f32::NAN), (15, 1, -f32::NAN)] {
        let mut mesh = soup(30, 10);
        mesh.vertices[vertex][lane] = bad;
        for mode in [MeshMode::Full, MeshMode::Compact] {
            assert_eq!(KdMesh::build(&mesh, mode).unwrap_err(), KdError::NonFiniteVertex, "{vertex} {lane} {bad}");
        }
    }
    let mut mesh = soup(30, 10);
    mesh.triangles[3][1] = 30;
    assert_eq!(KdMesh::build(&mesh, MeshMode::Full).unwrap_err(), KdError::IndexOutOfRange);
    mesh.triangles[3][1] = u32::MAX;
    assert_eq!(KdMesh::build(&mesh, MeshMode::Full).unwrap_err(), KdError::IndexOutOfRange);
    mesh.vertices.clear();
    mesh.triangles[3][1] = 0;
    assert_eq!(KdMesh::build(&mesh, MeshMode::Full).unwrap_err(), KdError::IndexOutOfRange);
    let mut mesh = soup(30, 10);
    mesh.materials.pop();
    assert_eq!(KdMesh::build(&mesh, MeshMode::Full).unwrap_err(), KdError::MaterialCount);
    let big = soup(31, 70_000);
    assert_eq!(KdMesh::build(&big, MeshMode::Compact).unwrap_err(), KdError::TooLargeForCompact);
    assert!(KdMesh::build(&big, MeshMode::Full).is_ok());
}

#[test]
fn degenerate_queries_find_nothing_and_do_not_panic() {
    let mesh = KdMesh::build(&heightfield(40, 8), MeshMode::Full).unwrap();
    let origin = Vec3::new(0.0, 10.0, 0.0);
    for ray in [
        Ray::new(origin, Vec3::ZERO),
        Ray::new(Vec3::splat(f32::NAN), Vec3::NEG_Y),
        Ray::new(origin, Vec3::new(f32::INFINITY, -1.0, 0.0)),
    ] {
        assert_eq!(mesh.ray_closest(&ray, 100.0), None);
    }
    let down = Ray::new(origin, Vec3::NEG_Y);
    assert_eq!(mesh.ray_closest(&down, f32::NAN), None);
    assert_eq!(mesh.ray_closest(&down, -1.0), None);
    assert!(mesh.ray_closest(&down, f32::INFINITY).is_some());
    // In a batch, the bad rays find nothing and the good ones between them still hit.
    let batch = [Ray::new(origin, Vec3::ZERO), down, Ray::new(Vec3::splat(f32::NAN), Vec3::NEG_Y), down];
    let mut hits = [None; 4];
    mesh.ray_closest_batch(&batch, 100.0, &mut hits);
    assert_eq!(hits.map(|h| h.is_some()), [false, true, false, true]);
    mesh.ray_closest_batch(&batch, f32::NAN, &mut hits);
    assert_eq!(hits, [None; 4]);
    mesh.ray_closest_batch(&[], 100.0, &mut []);
    let nan_box = Aabb::new(Vec3::splat(f32::NAN), Vec3::ONE);
    mesh.query_aabb(&nan_box, |_| panic!("a NaN box touches nothing"));
    mesh.query_aabb(&Aabb::EMPTY, |_| panic!("an empty box touches nothing"));
    let empty = KdMesh::build(&TriMesh::new(), MeshMode::Compact).unwrap();
    assert_eq!(empty.ray_closest(&down, f32::INFINITY), None);
    let mut hits = [Some(MeshHit { t: 1.0, triangle: 0, u: 0.0, v: 0.0 }); 4];
    KdMesh::build(&TriMesh::new(), MeshMode::Full).unwrap().ray_closest_batch(&batch, 100.0, &mut hits);
    assert_eq!(hits, [None; 4]);
    empty.query_aabb(&Aabb::new(Vec3::splat(-1e9), Vec3::splat(1e9)), |_| panic!("empty mesh"));
}

#[test]
#[should_panic(expected = "one hit slot per ray")]
fn a_batch_needs_one_hit_slot_per_ray() {
    let mesh = KdMesh::build(&heightfield(41, 4), MeshMode::Full).unwrap();
    let down = Ray::new(Vec3::new(0.0, 10.0, 0.0), Vec3::NEG_Y);
    mesh.ray_closest_batch(&[down, down], 100.0, &mut [None]);
}

/// One `TreeWalk` aimed once and carried through several trees (as a terrain ray
/// walks its chunks), stepped interleaved or run to the end, finds in each tree
/// what `ray_closest` finds there, bit for bit; a ray no triangle can hit is refused.
#[test]
fn a_walk_carried_from_tree_to_tree_finds_each_trees_closest_hit() {
    let bits = |h: Option<MeshHit>| h.map(|h| (h.t.to_bits(), h.triangle, h.u.to_bits(), h.v.to_bits()));
    for mode in [MeshMode::Full, MeshMode::Compact] {
        let meshes: Vec<KdMesh> = (0..4)
            .map(|i| {
                let mut m = if i % 2 == 0 { soup(60 + i, 300) } else { heightfield(60 + i, 12) };
                m.vertices.iter_mut().for_each(|v| *v += Vec3::new(i as f32 * 7.0, 0.0, 0.0));
                KdMesh::build(&m, mode).unwrap()
            })
            .collect();
        let mut rng = Rng(61);
        let mut walk = TreeWalk::new();
        let mut hits = 0;
        for ray in rays(&mut rng, &meshes[0], 300) {
            assert!(walk.aim(&ray));
            for (k, mesh) in meshes.iter().enumerate() {
                for max_t in [f32::INFINITY, 4.0] {
                    let expected = bits(mesh.ray_closest(&ray, max_t));
                    let got = if !walk.enter(mesh, max_t) {
                        None
                    } else if k % 2 == 0 {
                        walk.prefetch_root(mesh);
                        while !walk.done() {
                            walk.step(mesh);
                        }
                        walk.best()
                    } else {
                        walk.finish(mesh);
                        walk.best()
                    };
                    assert_eq!(bits(got), expected, "{mode:?} tree {k}, {ray:?} up to {max_t}");
                    hits += got.is_some() as usize;
                }
            }
        }
        assert!(hits > 200, "{mode:?}: {hits} hits");
        assert!(!walk.aim(&Ray::new(Vec3::ZERO, Vec3::ZERO)), "a zero direction");
        assert!(!walk.aim(&Ray::new(Vec3::splat(f32::NAN), Vec3::Y)), "a NaN origin");
        let down = Ray::new(Vec3::new(1.0, 50.0, 1.0), Vec3::NEG_Y);
        assert!(walk.aim(&down));
        for max_t in [f32::NAN, -1.0] {
            assert!(!walk.enter(&meshes[1], max_t), "max_t {max_t}");
            assert!(walk.done());
        }
    }
}

/// Leaf ranges are quantised on the mesh box and compared in the ray's parameter
/// like planes: rounding must never cull a triangle, also where the coordinates'
/// ulps are coarse next to the mesh (a millimetre mesh 10 km from the origin).
#[test]
fn leaf_ranges_are_conservative_far_from_the_origin() {
    for (scale, offset) in [(1.0, 1e4), (1e-3, 1e4), (1e-3, -3e3)] {
        let mut field = heightfield(70, 24);
        let mut soup = soup(71, 500);
        for v in field.vertices.iter_mut().chain(soup.vertices.iter_mut()) {
            *v = *v * scale + Vec3::splat(offset);
        }
        for mode in [MeshMode::Full, MeshMode::Compact] {
            for mesh in [&field, &soup] {
                let tree = KdMesh::build(mesh, mode).unwrap();
                tree.validate();
                check_boxes(&tree, 72, 200);
                check_rays(&tree, 73, 300);
            }
        }
    }
}

#[test]
fn the_build_order_maps_tree_triangles_to_the_mesh() {
    let mesh = heightfield(80, 20);
    for mode in [MeshMode::Full, MeshMode::Compact] {
        let (tree, order) = KdMesh::from_mesh_with_order(mesh.clone(), mode).unwrap();
        let mut sorted = order.clone();
        sorted.sort_unstable();
        assert!(sorted.iter().copied().eq(0..mesh.triangles.len() as u32), "a permutation");
        for (i, &source) in order.iter().enumerate() {
            assert_eq!(tree.material(i as u32), mesh.materials[source as usize]);
            if mode == MeshMode::Full {
                assert_eq!(tree.triangle(i as u32), mesh.triangle(source as usize));
            }
        }
    }
}

/// Leaf ranges are tight: within a step or two of the grid (`extent / 65535` full,
/// 257 times that compact) of their triangles, so they really skip. Only a range
/// that reaches the grid's top is open above.
#[test]
fn leaf_ranges_hug_their_triangles() {
    let mesh = heightfield(90, 48);
    for (mode, steps) in [(MeshMode::Full, 1.0), (MeshMode::Compact, 257.0)] {
        let tree = KdMesh::build(&mesh, mode).unwrap();
        let quantum = tree.bounds().extents().max_element() / 65535.0 * steps;
        let ranges = tree.leaf_ranges();
        let mut open = 0;
        for ((low, high), (min, max)) in &ranges {
            assert!(*low <= *min && *high >= *max, "a range must contain its triangles");
            assert!(min - low <= 2.0 * quantum, "low end {low} for content from {min}");
            if high.is_infinite() {
                open += 1;
            } else {
                assert!(high - max <= 2.0 * quantum, "high end {high} for content up to {max}");
            }
        }
        assert!(open * 20 < ranges.len(), "{open} of {} ranges open above", ranges.len());
    }
}

#[test]
fn a_parallel_build_is_the_serial_tree_for_any_worker_count() {
    use crate::jobs::ThreadPool;
    // Large enough that the nodes near the root build their children as jobs.
    let meshes = [
        (soup(11, 70_000), MeshMode::Full),
        (heightfield(12, 190), MeshMode::Full),
        (soup(13, 16_384), MeshMode::Compact),
    ];
    for (mesh, mode) in meshes {
        let serial = KdMesh::build(&mesh, mode).unwrap();
        for threads in [0, 1, 3] {
            let pool = ThreadPool::new(threads);
            let parallel = KdMesh::from_mesh_parallel(mesh.clone(), mode, pool.jobs()).unwrap();
            assert!(
                parallel == serial,
                "{mode:?}, {} triangles, {threads} threads: a different tree",
                mesh.triangles.len()
            );
        }
        check_rays(&serial, 5, 200);
    }
    let pool = ThreadPool::new(1);
    let mut bad = soup(14, 20_000);
    bad.vertices[7].y = f32::NAN;
    assert_eq!(KdMesh::from_mesh_parallel(bad, MeshMode::Full, pool.jobs()).unwrap_err(), KdError::NonFiniteVertex);
}

/// Rays straight down onto the grid's vertices and edge midpoints, and slanted ones
/// along its diagonals, give zero edge functions (the triangle test's `f64` path)
/// and ties between triangles: the batch (vector lanes where the CPU has AVX2)
/// still finds each ray's closest hit bit for bit, lower triangle on a tie.
#[test]
fn batch_hits_on_vertices_and_edges_equal_single_casts() {
    let n = 24;
    let mesh = KdMesh::build(&heightfield(44, n), MeshMode::Full).unwrap();
    let half = n as f32 / 2.0;
    let mut rays = Vec::new();
    for z in 0..=2 * n {
        for x in 0..=2 * n {
            let (px, pz) = (x as f32 * 0.5 - half, z as f32 * 0.5 - half);
            rays.push(Ray::new(Vec3::new(px, 10.0, pz), Vec3::NEG_Y));
            rays.push(Ray::new(Vec3::new(px, 10.0, pz), Vec3::new(1.0, -4.0, 1.0)));
        }
    }
    let mut batch = vec![None; rays.len()];
    mesh.ray_closest_batch(&rays, f32::INFINITY, &mut batch);
    let bits = |h: Option<MeshHit>| h.map(|h| (h.t.to_bits(), h.triangle, h.u.to_bits(), h.v.to_bits()));
    let mut hits = 0;
    for (ray, got) in rays.iter().zip(&batch) {
        let expected = mesh.ray_closest(ray, f32::INFINITY);
        assert_eq!(bits(*got), bits(expected), "batch hit of {ray:?}");
        hits += expected.is_some() as usize;
    }
    assert!(hits > rays.len() * 3 / 4, "most rays hit the grid: {hits} of {}", rays.len());
}
