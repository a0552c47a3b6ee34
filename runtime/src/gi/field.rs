//! The probe field: a volume's probes with their irradiance and visibility, and
//! irradiance sampling at a surface point (the CPU reference of `gi_sample` in
//! `vulkan-shaders/include/gi.glsl`).
//!
//! Sampling follows DDGI (Majercik et al., JCGT 2019, section 4):
//!
//! ```text
//!  biased = p + (0.2 n + 0.8 v) * bias          pull off the surface, toward the eye
//!  cell   = the 8 grid points around `biased`   (missing probes weigh 0)
//!  weight = trilinear(biased)
//!         * ((dot(dir to probe, n) + 1) / 2)^2 + 0.2       smooth tangent-plane test
//!         * chebyshev(dist, mean, mean^2)^3        visibility from the depth map (1 if dist <= mean)
//!         at least 1e-6, crushed below 0.2 (w^3 / 0.04) so hidden probes fade out
//!         (RTXGI's `DDGIGetVolumeIrradiance`)
//!  E(p)   = sum weight * E_probe(n) / sum weight
//! ```
//!
//! `bias` defaults to `0.3 * 0.75 * spacing`, the paper's self-shadow bias.

use super::compress::CompressedVisibility;
use super::octahedral::{sample_bordered, OCT_RES};
use super::pack::PackedSh;
use super::sh::ShRgb;
use super::volume::ProbeVolume;
use crate::math::Vec3;

/// How irradiance is sampled.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SampleParams {
    /// Distance the point moves off the surface (metres); see the module docs.
    pub bias: f32,
    /// Weight probes by their visibility maps. Off shows the leaks it prevents.
    pub visibility: bool,
}

impl SampleParams {
    pub fn for_spacing(spacing: f32) -> SampleParams {
        SampleParams { bias: 0.3 * 0.75 * spacing, visibility: true }
    }
}

/// Irradiance word of a probe that was never updated (unreachable by packing:
/// band-1 words of a black probe hold the ratio 0.5).
pub const UNLIT: PackedSh = PackedSh([0; 4]);

/// A volume's probes and their data.
#[derive(Clone, Debug)]
pub struct ProbeField {
    pub volume: ProbeVolume,
    /// Per probe, 16 bytes.
    pub irradiance: Vec<PackedSh>,
    pub visibility: CompressedVisibility,
}

impl ProbeField {
    /// Unlit probes that see nothing (every map clipped) until updated and baked.
    pub fn new(volume: ProbeVolume) -> ProbeField {
        let n = volume.probe_count();
        ProbeField { volume, irradiance: vec![UNLIT; n], visibility: CompressedVisibility::dead(n) }
    }

    /// Probe `p`'s radiance SH (zero while unlit).
    pub fn probe_sh(&self, p: usize) -> ShRgb {
        let packed = self.irradiance[p];
        if packed == UNLIT {
            ShRgb::default()
        } else {
            packed.unpack()
        }
    }

    /// Irradiance at surface point `p` with unit normal `n`, seen from unit
    /// direction `v` (surface toward the eye). Zero where no probe contributes.
    pub fn sample(&self, p: Vec3, n: Vec3, v: Vec3, params: &SampleParams) -> [f32; 3] {
        let grid = &self.volume.grid;
        let biased = p + (n * 0.2 + v * 0.8) * params.bias;
        let rel = (biased - grid.origin) / grid.spacing;
        let base: [u32; 3] =
            std::array::from_fn(|a| rel[a].floor().clamp(0.0, grid.dims[a].saturating_sub(2) as f32) as u32);
        let alpha: [f32; 3] = std::array::from_fn(|a| (rel[a] - base[a] as f32).clamp(0.0, 1.0));
        let clip = grid.clip_distance();
        let mut sum = [0.0f32; 3];
        let mut total = 0.0f32;
        for corner in 0..8u32 {
            let offset = [corner & 1, (corner >> 1) & 1, (corner >> 2) & 1];
            let c: [u32; 3] = std::array::from_fn(|a| base[a] + offset[a]);
            let Some(probe) = self.volume.probe_at(c) else { continue };
            let probe_pos = grid.position(c);
            let trilinear: f32 = (0..3).map(|a| if offset[a] == 1 { alpha[a] } else { 1.0 - alpha[a] }).product();
            let to_probe = (probe_pos - p).normalize_or_zero();
            let wrap = (to_probe.dot(n) + 1.0) * 0.5;
            let mut w = wrap * wrap + 0.2;
            if params.visibility {
                let from_probe = biased - probe_pos;
                let dist = from_probe.length() / clip;
                let dir = if dist > 0.0 { from_probe.normalize() } else { Vec3::Z };
                let [mean, mean2] = self.visibility_at(probe as usize, dir);
                if dist > mean {
                    let variance = (mean * mean - mean2).abs();
                    let cheb = variance / (variance + (dist - mean) * (dist - mean));
                    w *= cheb * cheb * cheb;
                }
            }
            w = w.max(1e-6);
            if w < 0.2 {
                w *= w * w / 0.04;
            }
            w *= trilinear;
            let e = self.probe_sh(probe as usize).irradiance(n);
            for ch in 0..3 {
                sum[ch] += w * e[ch];
            }
            total += w;
        }
        if total > 0.0 {
            sum.map(|s| s / total)
        } else {
            [0.0; 3]
        }
    }

    /// Bilinear `[depth, depth^2]` of probe `p` toward `dir`, over the clip distance.
    pub fn visibility_at(&self, p: usize, dir: Vec3) -> [f32; 2] {
        sample_bordered(|x, y| self.visibility.texel(p, y * OCT_RES + x), dir)
    }

    /// Bytes of all probe data: placement, irradiance and compressed visibility.
    pub fn bytes(&self) -> usize {
        self.volume.bytes() + self.irradiance.len() * std::mem::size_of::<PackedSh>() + self.visibility.bytes()
    }
}
