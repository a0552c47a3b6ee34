//! The probe volume: a regular grid over an axis-aligned box, and the placement
//! mask that says which grid points hold a probe.
//!
//! A probe is placed where a surface lies within the dilation distance (the
//! reference notes' "dilation is applied to the probe volume to cover open
//! ground"): open space far from geometry holds no probes and costs nothing. The
//! mask is one bit per grid point plus, per 64-bit word, the count of set bits
//! before it, so a grid point's probe index is `rank[w] + popcount(mask[w] & below)`:
//! about 1.5 bits per grid point instead of a 4-byte index each.
//!
//! Live probes are numbered in grid order (x fastest, then z, then y), so
//! consecutive probes are neighbours: the spatially coherent order the compressor
//! swizzles.

use super::bits::RankedBits;
use crate::math::Vec3;

/// Grid geometry: probe `(i, j, k)` sits at `origin + spacing * (i, j, k)`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ProbeGrid {
    pub origin: Vec3,
    pub spacing: f32,
    pub dims: [u32; 3],
}

/// Grid points above this are refused (the mask alone would pass 16 MiB).
pub const MAX_GRID_POINTS: u64 = 1 << 27;

impl ProbeGrid {
    /// A grid covering `[lo, hi]` with the given spacing (at least 2 points per
    /// axis). `None` for non-finite or empty boxes, a spacing that is not positive,
    /// or more than [`MAX_GRID_POINTS`] points.
    pub fn covering(lo: Vec3, hi: Vec3, spacing: f32) -> Option<ProbeGrid> {
        if !(lo.is_finite() && hi.is_finite() && spacing.is_finite() && spacing > 0.0) || hi.cmplt(lo).any() {
            return None;
        }
        let count = |e: f32| ((e / spacing).ceil() as u64).max(1) + 1;
        let size = hi - lo;
        let dims = [count(size.x), count(size.y), count(size.z)];
        if dims.iter().product::<u64>() > MAX_GRID_POINTS {
            return None;
        }
        Some(ProbeGrid { origin: lo, spacing, dims: dims.map(|d| d as u32) })
    }

    pub fn point_count(&self) -> usize {
        self.dims.iter().map(|&d| d as usize).product()
    }

    /// Linear index of grid point `(i, j, k)`: x fastest, then z, then y.
    #[inline]
    pub fn linear(&self, [i, j, k]: [u32; 3]) -> usize {
        (j as usize * self.dims[2] as usize + k as usize) * self.dims[0] as usize + i as usize
    }

    #[inline]
    pub fn coords(&self, linear: usize) -> [u32; 3] {
        let nx = self.dims[0] as usize;
        let nz = self.dims[2] as usize;
        [(linear % nx) as u32, (linear / (nx * nz)) as u32, ((linear / nx) % nz) as u32]
    }

    #[inline]
    pub fn position(&self, [i, j, k]: [u32; 3]) -> Vec3 {
        self.origin + Vec3::new(i as f32, j as f32, k as f32) * self.spacing
    }

    /// The longest distance between a point and the probes of its cell (the cell
    /// diagonal): visibility is clipped there, since no sample looks further.
    pub fn clip_distance(&self) -> f32 {
        self.spacing * 3f32.sqrt()
    }
}

/// Which grid points hold a probe, and the probe index of each.
#[derive(Clone, Debug, PartialEq)]
pub struct ProbeVolume {
    pub grid: ProbeGrid,
    /// A bit per grid point, with ranks: the probe index of each.
    mask: RankedBits,
    /// Linear grid index of each probe, ascending.
    probes: Vec<u32>,
}

impl ProbeVolume {
    /// Every grid point holds a probe.
    pub fn dense(grid: ProbeGrid) -> ProbeVolume {
        ProbeVolume::from_points(grid, |_| true)
    }

    /// Probes at grid points within `dilation` of a triangle.
    pub fn around(grid: ProbeGrid, triangles: &[[Vec3; 3]], dilation: f32) -> ProbeVolume {
        let mut near = vec![false; grid.point_count()];
        let dilation = dilation.max(0.0);
        for tri in triangles {
            if !tri.iter().all(|v| v.is_finite()) {
                continue;
            }
            let lo = tri[0].min(tri[1]).min(tri[2]) - Vec3::splat(dilation);
            let hi = tri[0].max(tri[1]).max(tri[2]) + Vec3::splat(dilation);
            let cell = |p: Vec3, up: bool| -> [u32; 3] {
                let c = (p - grid.origin) / grid.spacing;
                std::array::from_fn(|a| {
                    let v = if up { c[a].floor() + 1.0 } else { c[a].ceil() };
                    v.clamp(0.0, grid.dims[a] as f32) as u32
                })
            };
            let (a, b) = (cell(lo, false), cell(hi, true));
            for j in a[1]..b[1] {
                for k in a[2]..b[2] {
                    for i in a[0]..b[0] {
                        let index = grid.linear([i, j, k]);
                        if !near[index] {
                            let p = grid.position([i, j, k]);
                            near[index] = (closest_point_on_triangle(p, tri) - p).length() <= dilation;
                        }
                    }
                }
            }
        }
        ProbeVolume::from_points(grid, |i| near[i])
    }

    fn from_points(grid: ProbeGrid, live: impl FnMut(usize) -> bool) -> ProbeVolume {
        let mask = RankedBits::from_fn(grid.point_count(), live);
        let probes = (0..grid.point_count() as u32).filter(|&i| mask.rank(i as usize).is_some()).collect();
        ProbeVolume { grid, mask, probes }
    }

    pub fn probe_count(&self) -> usize {
        self.probes.len()
    }

    /// Grid point of probe `p`.
    pub fn probe_coords(&self, p: usize) -> [u32; 3] {
        self.grid.coords(self.probes[p] as usize)
    }

    pub fn probe_position(&self, p: usize) -> Vec3 {
        self.grid.position(self.probe_coords(p))
    }

    /// The probe at grid point `(i, j, k)`, if one is placed there.
    #[inline]
    pub fn probe_at(&self, c: [u32; 3]) -> Option<u32> {
        if (0..3).any(|a| c[a] >= self.grid.dims[a]) {
            return None;
        }
        self.mask.rank(self.grid.linear(c))
    }

    /// The mask and rank words, for the GPU.
    pub fn mask_words(&self) -> (&[u64], &[u32]) {
        self.mask.words()
    }

    /// Bytes of the placement structure.
    pub fn bytes(&self) -> usize {
        self.mask.bytes()
    }

    /// Checks the mask, ranks and probe list agree.
    pub fn validate(&self) {
        assert_eq!(self.mask.len(), self.grid.point_count());
        self.mask.validate();
        assert_eq!(self.mask.count(), self.probes.len());
        for (p, &linear) in self.probes.iter().enumerate() {
            assert_eq!(self.probe_at(self.grid.coords(linear as usize)), Some(p as u32));
        }
    }
}

/// The point of triangle `[a, b, c]` closest to `p` (Ericson, Real-Time Collision
/// Detection 5.1.5: Voronoi regions of vertices, edges, then the face).
pub fn closest_point_on_triangle(p: Vec3, [a, b, c]: &[Vec3; 3]) -> Vec3 {
    let (ab, ac, ap) = (*b - *a, *c - *a, p - *a);
    let (d1, d2) = (ab.dot(ap), ac.dot(ap));
    if d1 <= 0.0 && d2 <= 0.0 {
        return *a;
    }
    let bp = p - *b;
    let (d3, d4) = (ab.dot(bp), ac.dot(bp));
    if d3 >= 0.0 && d4 <= d3 {
        return *b;
    }
    let vc = d1 * d4 - d3 * d2;
    if vc <= 0.0 && d1 >= 0.0 && d3 <= 0.0 {
        return *a + ab * (d1 / (d1 - d3));
    }
    let cp = p - *c;
    let (d5, d6) = (ab.dot(cp), ac.dot(cp));
    if d6 >= 0.0 && d5 <= d6 {
        return *c;
    }
    let vb = d5 * d2 - d1 * d6;
    if vb <= 0.0 && d2 >= 0.0 && d6 <= 0.0 {
        return *a + ac * (d2 / (d2 - d6));
    }
    let va = d3 * d6 - d5 * d4;
    if va <= 0.0 && (d4 - d3) >= 0.0 && (d5 - d6) >= 0.0 {
        return *b + (*c - *b) * ((d4 - d3) / ((d4 - d3) + (d5 - d6)));
    }
    let denom = va + vb + vc;
    if denom.abs() < f32::MIN_POSITIVE {
        // Degenerate triangle: the nearest of its vertices.
        return [*a, *b, *c]
            .into_iter()
            .min_by(|x, y| (*x - p).length_squared().total_cmp(&(*y - p).length_squared()))
            .unwrap_or(*a);
    }
    let v = vb / denom;
    let w = vc / denom;
    *a + ab * v + ac * w
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placement_keeps_exactly_the_points_within_the_dilation() {
        let grid = ProbeGrid::covering(Vec3::ZERO, Vec3::new(8.0, 6.0, 8.0), 0.5).unwrap();
        let tris = [
            [Vec3::new(1.0, 1.0, 1.0), Vec3::new(6.0, 1.2, 1.5), Vec3::new(2.0, 1.1, 7.0)],
            [Vec3::new(5.0, 4.0, 5.0), Vec3::new(5.5, 4.5, 5.0), Vec3::new(5.0, 4.0, 5.5)],
        ];
        let volume = ProbeVolume::around(grid, &tris, 1.3);
        volume.validate();
        let mut brute = 0;
        for linear in 0..grid.point_count() {
            let c = grid.coords(linear);
            assert_eq!(grid.linear(c), linear);
            let p = grid.position(c);
            let d = tris.iter().map(|t| (closest_point_on_triangle(p, t) - p).length()).fold(f32::MAX, f32::min);
            assert_eq!(volume.probe_at(c).is_some(), d <= 1.3, "{c:?} at {d}");
            brute += usize::from(d <= 1.3);
        }
        assert_eq!(volume.probe_count(), brute);
        assert!(brute > 0 && brute < grid.point_count() / 2);
        // Ranks number probes in grid order.
        for p in 1..volume.probe_count() {
            assert!(volume.probes[p] > volume.probes[p - 1]);
        }
        assert!(volume.bytes() * 8 <= grid.point_count() * 2);
    }

    #[test]
    fn closest_point_matches_a_dense_search() {
        let tri = [Vec3::new(0.0, 0.0, 0.0), Vec3::new(2.0, 0.3, 0.0), Vec3::new(0.5, 1.5, 0.4)];
        for i in 0..500 {
            let f = i as f32;
            let p = Vec3::new((f * 0.37).sin() * 3.0, (f * 0.91).cos() * 3.0, (f * 0.13).sin() * 2.0);
            let q = closest_point_on_triangle(p, &tri);
            let mut best = f32::MAX;
            for u in 0..=100 {
                for v in 0..=(100 - u) {
                    let (u, v) = (u as f32 / 100.0, v as f32 / 100.0);
                    let x = tri[0] + (tri[1] - tri[0]) * u + (tri[2] - tri[0]) * v;
                    best = best.min((x - p).length());
                }
            }
            assert!((q - p).length() <= best + 1e-4, "{p}: {} vs {best}", (q - p).length());
        }
    }

    #[test]
    fn bad_grids_are_refused() {
        assert!(ProbeGrid::covering(Vec3::ZERO, Vec3::ONE, 0.0).is_none());
        assert!(ProbeGrid::covering(Vec3::ZERO, Vec3::ONE, f32::NAN).is_none());
        assert!(ProbeGrid::covering(Vec3::ONE, Vec3::ZERO, 1.0).is_none());
        assert!(ProbeGrid::covering(Vec3::ZERO, Vec3::splat(f32::INFINITY), 1.0).is_none());
        assert!(ProbeGrid::covering(Vec3::ZERO, Vec3::splat(1e4), 0.01).is_none());
        let g = ProbeGrid::covering(Vec3::ZERO, Vec3::ZERO, 1.0).unwrap();
        assert_eq!(g.dims, [2, 2, 2]);
        let empty = ProbeVolume::around(g, &[], 1.0);
        empty.validate();
        assert_eq!(empty.probe_count(), 0);
        assert_eq!(empty.probe_at([0, 0, 0]), None);
        assert_eq!(empty.probe_at([5, 0, 0]), None);
    }
}
