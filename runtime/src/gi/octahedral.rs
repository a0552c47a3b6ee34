//! Octahedral mapping of the sphere onto a square (Cigolle et al., JCGT 2014) and
//! the probe visibility map stored in it.
//!
//! A probe's visibility map has 16 x 16 texels, each the mean distance and mean
//! squared distance to the nearest surface over its solid angle, divided by the
//! clip distance (so values lie in `[0, 1]` and a map is independent of the probe
//! spacing). For bilinear filtering the map is surrounded by a one-texel border
//! copied from the opposite side of the same edge: the octahedron's square folds so
//! that `(-1, v)` and `(-1, -v)` are the same direction (likewise on the other three
//! edges), and the four corners are one point. With that border a bilinear sample
//! near an edge blends the texels that are truly adjacent on the sphere.
//!
//! ```text
//!  bordered 18 x 18, interior texel (x, y) at (x + 1, y + 1):
//!    row 0      x in 1..=16  <- interior (15 - (x - 1), 0)     mirrored along the edge
//!    row 17     x in 1..=16  <- interior (15 - (x - 1), 15)
//!    column 0   y in 1..=16  <- interior (0, 15 - (y - 1))
//!    column 17  y in 1..=16  <- interior (15, 15 - (y - 1))
//!    corners    (0,0) <- (15,15)  (17,0) <- (0,15)  (0,17) <- (15,0)  (17,17) <- (0,0)
//! ```

use crate::math::Vec3;

/// Texels per side of a visibility map.
pub const OCT_RES: usize = 16;
/// Texels per side with the stitched border.
pub const OCT_BORDERED: usize = OCT_RES + 2;
/// Texels of a visibility map.
pub const OCT_TEXELS: usize = OCT_RES * OCT_RES;

#[inline]
fn sign_not_zero(x: f32) -> f32 {
    if x >= 0.0 {
        1.0
    } else {
        -1.0
    }
}

/// Unit direction -> point of `[-1, 1]^2`. The poles are the world's vertical
/// (+y at the centre, -y at the corners) and `(u, v)` follow `(x, z)`, so turning
/// the world a quarter about the vertical, or mirroring it in a vertical plane
/// `x = c` or `z = c`, moves a map's texels among themselves (the eight symmetries
/// of the square, see [`symmetric_texel`]).
pub fn oct_encode(d: Vec3) -> [f32; 2] {
    let l1 = d.x.abs() + d.y.abs() + d.z.abs();
    let (u, v) = (d.x / l1, d.z / l1);
    if d.y >= 0.0 {
        [u, v]
    } else {
        [(1.0 - v.abs()) * sign_not_zero(u), (1.0 - u.abs()) * sign_not_zero(v)]
    }
}

/// Point of `[-1, 1]^2` -> unit direction.
pub fn oct_decode([u, v]: [f32; 2]) -> Vec3 {
    let y = 1.0 - u.abs() - v.abs();
    let (x, z) =
        if y < 0.0 { ((1.0 - v.abs()) * sign_not_zero(u), (1.0 - u.abs()) * sign_not_zero(v)) } else { (u, v) };
    Vec3::new(x, y, z).normalize()
}

/// The texel that texel `(x, y)` of a map comes from when the map is read through
/// symmetry `s` of the square (`0..8`): bit 2 swaps the axes, then bit 0 mirrors
/// x and bit 1 mirrors y. On the sphere these are the quarter turns about the
/// vertical and the mirrors in vertical planes (see [`oct_encode`]): the compressor
/// stores one block for maps that differ only by one of them.
pub const fn symmetric_texel(s: u32, x: usize, y: usize) -> (usize, usize) {
    let (mut x, mut y) = if s & 4 != 0 { (y, x) } else { (x, y) };
    if s & 1 != 0 {
        x = OCT_RES - 1 - x;
    }
    if s & 2 != 0 {
        y = OCT_RES - 1 - y;
    }
    (x, y)
}

/// Texels per side of a map's quadrant, the unit the compressor stores.
pub const QUADRANT_RES: usize = OCT_RES / 2;
/// Texels of a quadrant.
pub const QUADRANT_TEXELS: usize = QUADRANT_RES * QUADRANT_RES;

/// Texel `(x, y)` of a map in its quadrant: the quadrant, `(y >= 8) * 2 + (x >= 8)`,
/// and the texel's place `(cx, cy)` in the quadrant's frame, which counts from the
/// map's centre (the +y pole) outward on both axes. The frames absorb the mirrors
/// of [`symmetric_texel`]: a symmetry moves every texel to the same place of
/// another quadrant, or to the transposed place when it swaps the axes (bit 2).
pub const fn quadrant_texel(x: usize, y: usize) -> (usize, usize, usize) {
    let h = QUADRANT_RES;
    let (qx, cx) = if x >= h { (1, x - h) } else { (0, h - 1 - x) };
    let (qy, cy) = if y >= h { (1, y - h) } else { (0, h - 1 - y) };
    (qy * 2 + qx, cx, cy)
}

/// Direction through the centre of texel `(x, y)` of a 16 x 16 map.
pub fn texel_direction(x: usize, y: usize) -> Vec3 {
    let s = 2.0 / OCT_RES as f32;
    oct_decode([(x as f32 + 0.5) * s - 1.0, (y as f32 + 0.5) * s - 1.0])
}

/// The interior texel a bordered texel copies (see the module docs).
pub fn border_source(bx: usize, by: usize) -> (usize, usize) {
    let last = OCT_RES - 1;
    let edge = OCT_BORDERED - 1;
    let clamp = |i: usize| i.clamp(1, OCT_RES) - 1;
    match (bx, by) {
        (0, 0) => (last, last),
        (b, 0) if b == edge => (0, last),
        (0, b) if b == edge => (last, 0),
        (b, c) if b == edge && c == edge => (0, 0),
        (x, 0) => (last - clamp(x), 0),
        (x, b) if b == edge => (last - clamp(x), last),
        (0, y) => (0, last - clamp(y)),
        (b, y) if b == edge => (last, last - clamp(y)),
        (x, y) => (x - 1, y - 1),
    }
}

/// A probe's visibility: per texel `[depth, depth^2]`, both divided by the clip
/// distance (row-major, `y * 16 + x`).
#[derive(Clone, Debug, PartialEq)]
pub struct VisibilityMap(pub [[f32; 2]; OCT_TEXELS]);

impl Default for VisibilityMap {
    fn default() -> VisibilityMap {
        VisibilityMap::clipped()
    }
}

impl VisibilityMap {
    /// Nothing within the clip distance in any direction: a dead probe's map.
    pub fn clipped() -> VisibilityMap {
        VisibilityMap([[1.0, 1.0]; OCT_TEXELS])
    }

    /// The map with its stitched border, 18 x 18 row-major.
    pub fn bordered(&self) -> [[f32; 2]; OCT_BORDERED * OCT_BORDERED] {
        std::array::from_fn(|i| {
            let (x, y) = border_source(i % OCT_BORDERED, i / OCT_BORDERED);
            self.0[y * OCT_RES + x]
        })
    }

    /// Bilinear sample of the bordered map in direction `d`. Mirrors `gi_visibility`
    /// in `vulkan-shaders/include/gi.glsl`, which reads the border through
    /// [`border_source`] instead of storing it.
    pub fn sample(&self, d: Vec3) -> [f32; 2] {
        sample_bordered(|x, y| self.0[y * OCT_RES + x], d)
    }
}

/// Bilinear filtering over the bordered map, with `texel(x, y)` reading interior
/// texels.
pub fn sample_bordered(texel: impl Fn(usize, usize) -> [f32; 2], d: Vec3) -> [f32; 2] {
    bilinear(
        |bx, by| {
            let (x, y) = border_source(bx, by);
            texel(x, y)
        },
        d,
    )
}

/// Bilinear filtering with `fetch(bx, by)` reading bordered coordinates.
fn bilinear(fetch: impl Fn(usize, usize) -> [f32; 2], d: Vec3) -> [f32; 2] {
    let uv = oct_encode(d);
    // Bordered coordinates: texel centres at i + 0.5, the interior spans [1, 17].
    let at = |c: f32| ((c * 0.5 + 0.5) * OCT_RES as f32 + 0.5).clamp(0.5, OCT_RES as f32 + 0.5);
    let (px, py) = (at(uv[0]), at(uv[1]));
    let (x0, y0) = (px.floor() as usize, py.floor() as usize);
    let (fx, fy) = (px - x0 as f32, py - y0 as f32);
    let (x1, y1) = ((x0 + 1).min(OCT_BORDERED - 1), (y0 + 1).min(OCT_BORDERED - 1));
    let (a, b, c, e) = (fetch(x0, y0), fetch(x1, y0), fetch(x0, y1), fetch(x1, y1));
    std::array::from_fn(|i| {
        let top = a[i] + (b[i] - a[i]) * fx;
        let bottom = c[i] + (e[i] - c[i]) * fx;
        top + (bottom - top) * fy
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gi::sh::{fibonacci_directions, random_rotation};

    #[test]
    fn encode_decode_round_trips_over_the_sphere() {
        for d in fibonacci_directions(20_000, &random_rotation(5)) {
            let uv = oct_encode(d);
            assert!(uv[0].abs() <= 1.0 && uv[1].abs() <= 1.0);
            let back = oct_decode(uv);
            assert!((back - d).length() < 2e-6, "{d} -> {uv:?} -> {back}");
        }
        // Axes and the folded corners.
        for d in [Vec3::X, Vec3::NEG_X, Vec3::Y, Vec3::NEG_Y, Vec3::Z, Vec3::NEG_Z] {
            assert!((oct_decode(oct_encode(d)) - d).length() < 1e-6);
        }
        for (u, v) in [(1.0, 1.0), (-1.0, 1.0), (1.0, -1.0), (-1.0, -1.0)] {
            assert!((oct_decode([u, v]) - Vec3::NEG_Y).length() < 1e-6);
        }
        // The poles are the vertical: +y at the centre of the square, -y at its
        // corners (above); x and z along u and v.
        assert!((oct_decode([0.0, 0.0]) - Vec3::Y).length() < 1e-6);
        assert_eq!(oct_encode(Vec3::X), [1.0, 0.0]);
        assert_eq!(oct_encode(Vec3::Z), [0.0, 1.0]);
    }

    /// Each symmetry of the square moves texels among themselves, and the texel it
    /// reads lies in the direction turned or mirrored about the vertical: swap x
    /// and z (bit 2), then negate x (bit 0) and z (bit 1).
    #[test]
    fn symmetric_texels_are_the_vertical_turns_and_mirrors() {
        for s in 0..8u32 {
            let mut seen = [false; OCT_TEXELS];
            for y in 0..OCT_RES {
                for x in 0..OCT_RES {
                    let (sx, sy) = symmetric_texel(s, x, y);
                    seen[sy * OCT_RES + sx] = true;
                    let d = texel_direction(x, y);
                    let mut want = if s & 4 != 0 { Vec3::new(d.z, d.y, d.x) } else { d };
                    if s & 1 != 0 {
                        want.x = -want.x;
                    }
                    if s & 2 != 0 {
                        want.z = -want.z;
                    }
                    let got = texel_direction(sx, sy);
                    assert!((got - want).length() < 1e-5, "symmetry {s}, texel ({x}, {y}): {got} != {want}");
                }
            }
            assert!(seen.iter().all(|&v| v), "symmetry {s} is a permutation");
        }
    }

    /// In the quadrant frames a symmetry keeps every texel's place, or transposes
    /// it when it swaps the axes, and the frames cover the map once.
    #[test]
    fn quadrant_frames_absorb_the_mirrors() {
        let mut seen = [[false; QUADRANT_TEXELS]; 4];
        for y in 0..OCT_RES {
            for x in 0..OCT_RES {
                let (q, cx, cy) = quadrant_texel(x, y);
                assert!(!seen[q][cy * QUADRANT_RES + cx]);
                seen[q][cy * QUADRANT_RES + cx] = true;
                for s in 0..8u32 {
                    let (sx, sy) = symmetric_texel(s, x, y);
                    let (_, tx, ty) = quadrant_texel(sx, sy);
                    let want = if s & 4 != 0 { (cy, cx) } else { (cx, cy) };
                    assert_eq!((tx, ty), want, "symmetry {s}, texel ({x}, {y})");
                }
            }
        }
        // Place (0, 0) of every frame touches the pole, the map's centre.
        for (q, corner) in [(0, (7, 7)), (1, (8, 7)), (2, (7, 8)), (3, (8, 8))] {
            assert_eq!(quadrant_texel(corner.0, corner.1), (q, 0, 0));
        }
    }

    #[test]
    fn border_texels_copy_the_texel_across_the_fold() {
        // A border texel's centre lies half a texel outside the square; folded back
        // onto the sphere it must be (nearly) the direction of the texel it copies.
        let s = 2.0 / OCT_RES as f32;
        for by in 0..OCT_BORDERED {
            for bx in 0..OCT_BORDERED {
                let interior = (1..=OCT_RES).contains(&bx) && (1..=OCT_RES).contains(&by);
                if interior {
                    continue;
                }
                let u = ((bx as f32 - 0.5) * s - 1.0).clamp(-1.0, 1.0);
                let v = ((by as f32 - 0.5) * s - 1.0).clamp(-1.0, 1.0);
                let on_edge = oct_decode([u, v]);
                let (x, y) = border_source(bx, by);
                // The copied texel's centre is half a texel inside the same edge point.
                let angle = on_edge.dot(texel_direction(x, y)).clamp(-1.0, 1.0).acos();
                assert!(angle < 0.2, "({bx}, {by}) <- ({x}, {y}): {angle} rad");
            }
        }
    }

    /// A smooth function on the sphere with strong gradients across the folds.
    fn smooth(d: Vec3) -> [f32; 2] {
        [0.5 + 0.3 * d.x - 0.2 * d.y * d.z + 0.1 * d.z, 0.4 + 0.25 * d.y + 0.3 * d.x * d.z]
    }

    #[test]
    fn bilinear_samples_across_every_border_edge_match_the_sphere() {
        let mut map = VisibilityMap::clipped();
        for y in 0..OCT_RES {
            for x in 0..OCT_RES {
                map.0[y * OCT_RES + x] = smooth(texel_direction(x, y));
            }
        }
        // Directions whose map coordinate lies in the outer half texel, along each of
        // the four edges and at the four corners, plus the interior for scale.
        let s = 2.0 / OCT_RES as f32;
        let mut edge_err = 0.0f32;
        let mut interior_err = 0.0f32;
        let n = 400;
        for i in 0..n {
            let t = (i as f32 + 0.5) / n as f32 * 2.0 - 1.0;
            for inset in [0.02 * s, 0.25 * s, 0.49 * s] {
                let e = 1.0 - inset;
                for uv in [[-e, t], [e, t], [t, -e], [t, e], [e, e], [-e, e], [e, -e], [-e, -e]] {
                    let d = oct_decode(uv);
                    let (got, want) = (map.sample(d), smooth(d));
                    edge_err = edge_err.max((got[0] - want[0]).abs()).max((got[1] - want[1]).abs());
                }
            }
            let d = oct_decode([t * 0.8, (t * 7.0).sin() * 0.2]);
            let (got, want) = (map.sample(d), smooth(d));
            interior_err = interior_err.max((got[0] - want[0]).abs()).max((got[1] - want[1]).abs());
        }
        assert!(edge_err < 0.03, "across the border: {edge_err} (interior {interior_err})");

        // A clamp-to-edge border (each border texel copies its interior neighbour)
        // is much worse there: the test sees the stitching.
        let clamp_fetch = |bx: usize, by: usize| {
            let (x, y) = (bx.clamp(1, OCT_RES) - 1, by.clamp(1, OCT_RES) - 1);
            map.0[y * OCT_RES + x]
        };
        let mut clamped_err = 0.0f32;
        for i in 0..n {
            let t = (i as f32 + 0.5) / n as f32 * 2.0 - 1.0;
            for uv in [[-1.0, t], [1.0, t], [t, -1.0], [t, 1.0]] {
                let d = oct_decode(uv);
                let (got, want) = (bilinear(clamp_fetch, d), smooth(d));
                clamped_err = clamped_err.max((got[0] - want[0]).abs()).max((got[1] - want[1]).abs());
            }
        }
        assert!(clamped_err > 2.0 * edge_err, "clamped {clamped_err} vs stitched {edge_err}");
    }
}
