//! The terrain mesher: one chunk's voxels to triangles with a material each, by
//! surface nets over the binary solid field (water and air are empty).
//!
//! Samples sit at voxel centres. A *cell* is the cube between 2^3 neighbouring
//! centres; a cell whose corners are neither all solid nor all empty gets one vertex:
//! the mean of the midpoints of its edges that cross the surface. Each voxel edge
//! `(a, a + axis)` with one solid end becomes a quad joining the vertices of the four
//! cells around it, wound so its normal points from the solid end to the empty one,
//! split along its shorter diagonal, with the solid voxel's material.
//!
//! **Ownership.** Chunk `c` emits the quads of edges whose first voxel `a` lies in the
//! chunk. Their cells have corners in voxels `8c - 1 ..= 8c + 8`: exactly the 10^3
//! neighbourhood the bit broadphase reads, so one edit dirties the same chunks for
//! both.
//!
//! **Spill.** Every cell around edge `(a, b)` has the edge's solid voxel `s` as a
//! corner, so every vertex of its quad lies within half a voxel of `s`'s cube. A
//! triangle therefore lies inside the dilated solid region the bit broadphase
//! marks (it is inside `s`'s 3^3 neighbourhood), and chunk `c`'s triangles lie in its
//! box grown by half a voxel ([`chunk_mesh_bounds`]).

use glam::{IVec3, Vec3};

use super::voxels::{Voxels, CHUNK};
use crate::math::Aabb;
use crate::spatial::TriMesh;

/// Side of the voxel neighbourhood a chunk's mesh reads.
const SIDE: usize = CHUNK as usize + 2;
/// Side of the cell grid (cells between neighbourhood voxel centres).
const CELLS: usize = SIDE - 1;
const NO_VERTEX: u32 = u32::MAX;

/// Corner offsets of a cell, bit `i` of a cell's corner mask.
const CORNERS: [[usize; 3]; 8] =
    [[0, 0, 0], [1, 0, 0], [0, 1, 0], [1, 1, 0], [0, 0, 1], [1, 0, 1], [0, 1, 1], [1, 1, 1]];
/// The 12 cell edges as corner pairs.
const EDGES: [(usize, usize); 12] =
    [(0, 1), (2, 3), (4, 5), (6, 7), (0, 2), (1, 3), (4, 6), (5, 7), (0, 4), (1, 5), (2, 6), (3, 7)];

/// The box chunk `coord`'s triangles lie in: the chunk grown by half a voxel.
pub fn chunk_mesh_bounds(coord: IVec3, voxel_size: f32) -> Aabb {
    let lo = (coord * CHUNK).as_vec3() - Vec3::splat(0.5);
    let hi = ((coord + IVec3::ONE) * CHUNK).as_vec3() + Vec3::splat(0.5);
    Aabb::new(lo * voxel_size, hi * voxel_size)
}

/// Appends chunk `coord`'s surface to `out` (world coordinates, `voxel_size`-metre
/// voxels). Chunks whose neighbourhood is all solid or all empty add nothing.
pub fn mesh_chunk(voxels: &Voxels, coord: IVec3, voxel_size: f32, out: &mut TriMesh) {
    let materials = gather(voxels, coord);
    let solid_count = materials.iter().filter(|&&m| m >= 2).count();
    if solid_count == 0 || solid_count == materials.len() {
        return;
    }
    let at = |p: [usize; 3]| materials[p[0] + SIDE * p[2] + SIDE * SIDE * p[1]];
    let solid = |p: [usize; 3]| at(p) >= 2;
    // Local position 0 is voxel 8c - 1; a cell's corner 0 is its own local position.
    let base = coord * CHUNK - IVec3::ONE;
    let mut vertex_of = [NO_VERTEX; CELLS * CELLS * CELLS];
    let mut vertex = |out: &mut TriMesh, c: [usize; 3]| -> u32 {
        let slot = &mut vertex_of[c[0] + CELLS * c[2] + CELLS * CELLS * c[1]];
        if *slot == NO_VERTEX {
            let corner = |i: usize| [c[0] + CORNERS[i][0], c[1] + CORNERS[i][1], c[2] + CORNERS[i][2]];
            let (mut sum, mut n) = (Vec3::ZERO, 0.0);
            for (i, j) in EDGES {
                if solid(corner(i)) != solid(corner(j)) {
                    let mid =
                        (Vec3::from(CORNERS[i].map(|v| v as f32)) + Vec3::from(CORNERS[j].map(|v| v as f32))) * 0.5;
                    sum += mid;
                    n += 1.0;
                }
            }
            // Integer cell coordinate plus an offset that depends only on the corner
            // pattern: neighbouring chunks produce bit-identical shared vertices.
            let cell = (base + IVec3::new(c[0] as i32, c[1] as i32, c[2] as i32)).as_vec3();
            *slot = out.vertices.len() as u32;
            out.vertices.push((cell + (Vec3::splat(0.5) + sum / n)) * voxel_size);
        }
        *slot
    };
    for y in 1..=CHUNK as usize {
        for z in 1..=CHUNK as usize {
            for x in 1..=CHUNK as usize {
                let a = [x, y, z];
                for axis in 0..3 {
                    let mut b = a;
                    b[axis] += 1;
                    let (sa, sb) = (solid(a), solid(b));
                    if sa == sb {
                        continue;
                    }
                    // The four cells around the edge, counter-clockwise seen from +axis.
                    let (u, v) = ((axis + 1) % 3, (axis + 2) % 3);
                    let cell = |du: usize, dv: usize| {
                        let mut c = a;
                        c[u] -= du;
                        c[v] -= dv;
                        c
                    };
                    let quad = [cell(1, 1), cell(0, 1), cell(0, 0), cell(1, 0)].map(|c| vertex(out, c));
                    let material = if sa { at(a) } else { at(b) };
                    // Counter-clockwise is +axis: keep it when the solid end is `a`.
                    let q = if sa { quad } else { [quad[0], quad[3], quad[2], quad[1]] };
                    let mut outward = Vec3::ZERO;
                    outward[axis] = if sa { 1.0 } else { -1.0 };
                    let p = q.map(|i| out.vertices[i as usize]);
                    // Split along the shorter diagonal, unless that folds a triangle
                    // to face into the solid (a twisted quad) and the other does not.
                    let faces_out = |t: [usize; 3]| (p[t[1]] - p[t[0]]).cross(p[t[2]] - p[t[0]]).dot(outward) > 0.0;
                    let (a02, a13) = ([[0, 1, 2], [0, 2, 3]], [[0, 1, 3], [1, 2, 3]]);
                    let (ok02, ok13) = (a02.iter().all(|&t| faces_out(t)), a13.iter().all(|&t| faces_out(t)));
                    let shorter02 = p[0].distance_squared(p[2]) <= p[1].distance_squared(p[3]);
                    let split = if ok02 != ok13 {
                        if ok02 {
                            a02
                        } else {
                            a13
                        }
                    } else if shorter02 {
                        a02
                    } else {
                        a13
                    };
                    for t in split {
                        out.push(t.map(|i| q[i]), material);
                    }
                }
            }
        }
    }
}

/// Materials of voxels `8c - 1 ..= 8c + 8`, index `x + 10 z + 100 y`.
fn gather(voxels: &Voxels, coord: IVec3) -> [u8; SIDE * SIDE * SIDE] {
    let mut out = [0u8; SIDE * SIDE * SIDE];
    let base = coord * CHUNK - IVec3::ONE;
    for dy in -1..=1 {
        for dz in -1..=1 {
            for dx in -1..=1 {
                let neighbour = coord + IVec3::new(dx, dy, dz);
                let Some(chunk) = voxels.chunk(neighbour) else { continue };
                // The part of the neighbour inside the neighbourhood, in its local coordinates.
                let range = |d: i32| match d {
                    -1 => CHUNK - 1..CHUNK,
                    0 => 0..CHUNK,
                    _ => 0..1,
                };
                for y in range(dy) {
                    for z in range(dz) {
                        for x in range(dx) {
                            let local = IVec3::new(x, y, z);
                            let p = (neighbour * CHUNK + local - base).as_uvec3();
                            out[(p.x + SIDE as u32 * p.z + (SIDE * SIDE) as u32 * p.y) as usize] = chunk.get(local).0;
                        }
                    }
                }
            }
        }
    }
    out
}
