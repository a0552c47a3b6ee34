//! L1 spherical harmonics: four real, orthonormal basis functions per colour
//! channel, the representation of a probe's incoming radiance.
//!
//! The basis and its signs follow the DDGI design's irradiance encoding in
//! spherical harmonics (`docs/gpu.md`): `Y0 = 0.2821`, `Y1 = -0.4886 y`, `Y2 = 0.4886 z`, `Y3 = -0.4886 x`.
//! Irradiance is the radiance convolved with a clamped cosine, which in SH is a
//! per-band scale (Ramamoorthi and Hanrahan 2001): `A0 = pi`, `A1 = 2 pi / 3`.

use crate::math::Vec3;

/// `1 / (2 sqrt(pi))`.
pub const SH_Y0: f32 = 0.282_094_8;
/// `sqrt(3) / (2 sqrt(pi))`.
pub const SH_Y1: f32 = 0.488_602_5;
/// Clamped-cosine convolution of band 0.
pub const SH_A0: f32 = std::f32::consts::PI;
/// Clamped-cosine convolution of band 1.
pub const SH_A1: f32 = 2.0 * std::f32::consts::PI / 3.0;

/// The four basis functions at unit direction `d`.
#[inline]
pub fn sh_basis(d: Vec3) -> [f32; 4] {
    [SH_Y0, -SH_Y1 * d.y, SH_Y1 * d.z, -SH_Y1 * d.x]
}

/// Radiance as L1 SH: `c[k][channel]`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ShRgb {
    pub c: [[f32; 3]; 4],
}

impl ShRgb {
    /// Monte Carlo projection of `radiance` sampled along `dirs`, which must be
    /// spread uniformly over the sphere (each sample stands for `4 pi / n`).
    pub fn project(dirs: &[Vec3], radiance: &[[f32; 3]]) -> ShRgb {
        assert_eq!(dirs.len(), radiance.len());
        let mut sh = ShRgb::default();
        if dirs.is_empty() {
            return sh;
        }
        for (d, l) in dirs.iter().zip(radiance) {
            for (band, y) in sh.c.iter_mut().zip(sh_basis(*d)) {
                for (c, l) in band.iter_mut().zip(l) {
                    *c += y * l;
                }
            }
        }
        let w = 4.0 * std::f32::consts::PI / dirs.len() as f32;
        sh.scale(w);
        sh
    }

    pub fn scale(&mut self, s: f32) {
        self.c.iter_mut().flatten().for_each(|x| *x *= s);
    }

    /// `self + (other - self) * t`.
    pub fn lerp(&self, other: &ShRgb, t: f32) -> ShRgb {
        let mut out = *self;
        for (o, b) in out.c.iter_mut().flatten().zip(other.c.iter().flatten()) {
            *o += (b - *o) * t;
        }
        out
    }

    /// Radiance arriving from direction `d`.
    pub fn radiance(&self, d: Vec3) -> [f32; 3] {
        self.eval(d, [1.0, 1.0])
    }

    /// Irradiance on a surface with unit normal `n` (radiance convolved with the
    /// clamped cosine), clamped at zero: L1 rings slightly negative opposite a
    /// strong lobe.
    pub fn irradiance(&self, n: Vec3) -> [f32; 3] {
        let e = self.eval(n, [SH_A0, SH_A1]);
        e.map(|x| x.max(0.0))
    }

    fn eval(&self, d: Vec3, band: [f32; 2]) -> [f32; 3] {
        let y = sh_basis(d);
        let mut out = [0.0; 3];
        for (ch, o) in out.iter_mut().enumerate() {
            *o = band[0] * self.c[0][ch] * y[0]
                + band[1] * (self.c[1][ch] * y[1] + self.c[2][ch] * y[2] + self.c[3][ch] * y[3]);
        }
        out
    }
}

/// `n` directions on a spherical Fibonacci lattice (Keinert et al. 2015): nearly
/// uniform for every `n`, so Monte Carlo projection converges fast. `rotation`
/// (row-major 3x3) turns the whole set: the update pass draws a new one each frame
/// so probes do not alias against fixed directions.
pub fn fibonacci_directions(n: u32, rotation: &[[f32; 3]; 3]) -> Vec<Vec3> {
    rotated_fibonacci_directions(n, rotation).collect()
}

/// [`fibonacci_directions`] one at a time (for a caller that keeps its own buffer).
pub fn rotated_fibonacci_directions(n: u32, rotation: &[[f32; 3]; 3]) -> impl Iterator<Item = Vec3> + '_ {
    (0..n).map(move |i| rotate(rotation, fibonacci_direction(i, n)))
}

/// The `i`-th of `n` spherical Fibonacci directions. Mirrors `gi_fibonacci` in
/// `vulkan-shaders/include/gi.glsl`.
pub fn fibonacci_direction(i: u32, n: u32) -> Vec3 {
    // Golden-ratio increments on the azimuth, uniform steps in z.
    const GOLDEN: f32 = 0.618_034;
    let phi = std::f32::consts::TAU * ((i as f32 * GOLDEN).fract());
    let z = 1.0 - (2.0 * i as f32 + 1.0) / n as f32;
    let r = (1.0 - z * z).max(0.0).sqrt();
    Vec3::new(r * phi.cos(), r * phi.sin(), z)
}

fn rotate(m: &[[f32; 3]; 3], v: Vec3) -> Vec3 {
    Vec3::new(
        m[0][0] * v.x + m[0][1] * v.y + m[0][2] * v.z,
        m[1][0] * v.x + m[1][1] * v.y + m[1][2] * v.z,
        m[2][0] * v.x + m[2][1] * v.y + m[2][2] * v.z,
    )
}

/// A rotation matrix drawn from `seed` (a unit quaternion from four hashed
/// numbers): the per-frame rotation of the probe rays.
pub fn random_rotation(seed: u32) -> [[f32; 3]; 3] {
    let mut h = seed.wrapping_mul(0x9E37_79B9) ^ 0x85EB_CA6B;
    let mut next = || {
        h ^= h >> 16;
        h = h.wrapping_mul(0x7FEB_352D);
        h ^= h >> 15;
        h = h.wrapping_mul(0x846C_A68B);
        h ^= h >> 16;
        (h >> 8) as f32 / (1u32 << 24) as f32 * 2.0 - 1.0
    };
    let mut q = [next(), next(), next(), next()];
    let len = q.iter().map(|x| x * x).sum::<f32>().sqrt();
    if len < 1e-3 {
        q = [0.0, 0.0, 0.0, 1.0];
    } else {
        q.iter_mut().for_each(|x| *x /= len);
    }
    let [x, y, z, w] = q;
    [
        [1.0 - 2.0 * (y * y + z * z), 2.0 * (x * y - w * z), 2.0 * (x * z + w * y)],
        [2.0 * (x * y + w * z), 1.0 - 2.0 * (x * x + z * z), 2.0 * (y * z - w * x)],
        [2.0 * (x * z - w * y), 2.0 * (y * z + w * x), 1.0 - 2.0 * (x * x + y * y)],
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    const PI: f32 = std::f32::consts::PI;

    #[test]
    fn projecting_a_constant_gives_band_zero_only_and_irradiance_pi() {
        let dirs = fibonacci_directions(256, &random_rotation(3));
        let sh = ShRgb::project(&dirs, &vec![[1.0, 2.0, 0.5]; 256]);
        for ch in 0..3 {
            let l = [1.0, 2.0, 0.5][ch];
            assert!((sh.c[0][ch] - 4.0 * PI * SH_Y0 * l).abs() < 1e-4 * l.max(1.0));
            for k in 1..4 {
                assert!(sh.c[k][ch].abs() < 2e-2 * l, "band 1 of a constant: {:?}", sh.c);
            }
        }
        // A constant radiance L gives irradiance pi L on every normal.
        for n in fibonacci_directions(50, &random_rotation(9)) {
            let e = sh.irradiance(n);
            assert!((e[0] - PI).abs() < 0.05 && (e[1] - 2.0 * PI).abs() < 0.1, "{e:?}");
        }
    }

    #[test]
    fn projecting_a_clamped_cosine_lobe_matches_the_closed_form() {
        // L(w) = max(0, w . a): c0 = pi Y0 and band 1 = (2 pi / 3) Y1 along a
        // (Ramamoorthi and Hanrahan's A_l applied to a delta, divided back).
        for seed in 0..8 {
            let a = fibonacci_direction(seed * 7 + 1, 64);
            let dirs = fibonacci_directions(4096, &random_rotation(seed));
            let radiance: Vec<[f32; 3]> = dirs.iter().map(|d| [d.dot(a).max(0.0); 3]).collect();
            let sh = ShRgb::project(&dirs, &radiance);
            let expect = [PI * SH_Y0, -SH_A1 * SH_Y1 * a.y, SH_A1 * SH_Y1 * a.z, -SH_A1 * SH_Y1 * a.x];
            for (band, want) in sh.c.iter().zip(expect) {
                assert!((band[0] - want).abs() < 2e-3, "{} vs {want}", band[0]);
            }
            // Its L1 irradiance along a: pi^2 Y0^2 + (2 pi / 3)^2 Y1^2 = pi/4 + pi/3.
            let e = sh.irradiance(a)[0];
            assert!((e - (PI / 4.0 + PI / 3.0)).abs() < 5e-3, "{e}");
        }
    }

    #[test]
    fn fibonacci_directions_are_unit_and_balanced() {
        for n in [1, 2, 7, 128, 256] {
            let dirs = fibonacci_directions(n, &random_rotation(n));
            let sum: Vec3 = dirs.iter().copied().sum();
            for d in &dirs {
                assert!((d.length() - 1.0).abs() < 1e-5);
            }
            if n >= 128 {
                assert!(sum.length() / (n as f32) < 1e-2, "{n}: {sum}");
            }
        }
    }
}
