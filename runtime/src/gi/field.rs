//! The probe field: a volume's probes with their irradiance and visibility, and
//! irradiance sampling at a surface point (the CPU reference of `gi_sample` in
//! `vulkan-shaders/include/gi.glsl`).
//!
//! Sampling follows DDGI (Majercik et al., JCGT 2019, section 4):
//!
//! ```text
//!  biased = p + (0.2 n + 0.8 v) * bias          pull off the surface, toward the eye
//!  cell   = the 8 grid points around `biased`   (missing and dead probes weigh 0)
//!  weight = trilinear(biased)
//!         * ((dot(dir to probe, n) + 1) / 2)^2 + 0.2       smooth tangent-plane test
//!         * chebyshev(dist, mean, mean^2)^3        visibility from the depth map (1 if dist <= mean)
//!         at least 1e-6, crushed below 0.2 (w^3 / 0.04) so hidden probes fade out
//!         (RTXGI's `DDGIGetVolumeIrradiance`)
//!  E(p)   = sum weight * E_probe(n) / sum weight
//! ```
//!
//! `bias` defaults to `0.3 * 0.75 * spacing`, the paper's self-shadow bias.
//!
//! # Dead probes are not sampled
//!
//! A dead probe saw nothing within the clip distance, the cell diagonal, in any
//! direction. A surface point in one of its eight cells lies within that distance
//! of it, so nothing the point's cell needs is near the probe: it floats in open
//! space. RTXGI's `DDGIGetVolumeIrradiance` skips such probes ("inactive") for
//! the same reason, and so does Kiln: a dead probe weighs 0, is not updated, and
//! stores no irradiance. The irradiance is kept per live probe, at its rank in
//! [`CompressedVisibility::live`]: 16 bytes per live probe, nothing per dead one.
//! Before a bake every probe is live ([`CompressedVisibility::unbaked`]); a bake
//! keeps the irradiance of the probes live before and after it
//! ([`ProbeField::set_visibility`]).
//!
//! Where every probe of the cell is dead or missing, the sample is 0, as in RTXGI.
//! The rays that bake a map are 2 x 2 per texel of 16 x 16, so a surface within
//! the clip distance of a probe is missed only when it is thinner than the gaps
//! between them; `every_surface_point_of_the_scenes_has_a_live_probe` in
//! `gi/tests.rs` checks that on the generated scenes.

use super::compress::CompressedVisibility;
use super::octahedral::{sample_bordered, OCT_RES};
use super::pack::PackedSh;
use super::relocate::ProbeOffsets;
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
    /// Per live probe (`visibility.live`, by rank), 16 bytes; dead probes keep none.
    /// Replace `visibility` through [`ProbeField::set_visibility`], which keeps the
    /// two in step.
    pub irradiance: Vec<PackedSh>,
    pub visibility: CompressedVisibility,
    /// Each probe's offset from its grid point (`relocate.rs`); updates and
    /// sampling use the moved position.
    pub offsets: ProbeOffsets,
    /// Modulo addressing of a scrolling volume (`scroll.rs`): the slot, per axis,
    /// of the probe at the grid's origin; the probe `r` grid steps from the
    /// origin lives in slot `(ring + r) mod dims`. Zero for a volume that does
    /// not scroll: slots are grid points.
    pub ring: [u32; 3],
}

impl ProbeField {
    /// Unlit probes, not baked: every probe live, seeing nothing (every map
    /// clipped), until updated and baked.
    pub fn new(volume: ProbeVolume) -> ProbeField {
        let n = volume.probe_count();
        ProbeField {
            volume,
            irradiance: vec![UNLIT; n],
            visibility: CompressedVisibility::unbaked(n),
            offsets: ProbeOffsets::none(),
            ring: [0; 3],
        }
    }

    /// The grid steps from the origin of the probe in slot `slot` (its grid
    /// coordinates in the volume's storage), through the ring.
    #[inline]
    pub fn steps_of_slot(&self, slot: [u32; 3]) -> [u32; 3] {
        let dims = self.volume.grid.dims;
        std::array::from_fn(|a| (slot[a] + dims[a] - self.ring[a] % dims[a]) % dims[a])
    }

    /// The probe `steps` grid steps from the origin, if one is placed there.
    #[inline]
    pub fn probe_at_steps(&self, steps: [u32; 3]) -> Option<u32> {
        let dims = self.volume.grid.dims;
        if (0..3).any(|a| steps[a] >= dims[a]) {
            return None;
        }
        self.volume.probe_at(std::array::from_fn(|a| (steps[a] + self.ring[a]) % dims[a]))
    }

    /// Probe `p`'s grid point, through the ring.
    #[inline]
    pub fn grid_point(&self, p: usize) -> Vec3 {
        self.volume.grid.position(self.steps_of_slot(self.volume.probe_coords(p)))
    }

    /// Where probe `p` sits: its grid point moved by its offset.
    #[inline]
    pub fn probe_position(&self, p: usize) -> Vec3 {
        self.grid_point(p) + self.offsets.offset(p, self.volume.grid.spacing)
    }

    /// Whether probe `p` is active: live (it sees something, and is not in solid)
    /// and so updated and sampled.
    pub fn is_active(&self, p: usize) -> bool {
        !self.visibility.is_dead(p)
    }

    /// Where probe `p`'s irradiance is kept: its rank among the live probes; `None`
    /// for a dead probe (or past the end).
    #[inline]
    pub fn irradiance_slot(&self, p: usize) -> Option<usize> {
        self.visibility.live.rank(p).map(|r| r as usize)
    }

    /// Probe `p`'s radiance SH (zero while unlit, and for a dead probe).
    pub fn probe_sh(&self, p: usize) -> ShRgb {
        self.irradiance_slot(p).map_or_else(ShRgb::default, |s| self.slot_sh(s))
    }

    /// The radiance SH kept at irradiance slot `s` (zero while unlit).
    fn slot_sh(&self, s: usize) -> ShRgb {
        match self.irradiance[s] {
            packed if packed == UNLIT => ShRgb::default(),
            packed => packed.unpack(),
        }
    }

    /// Probe `p`'s stored irradiance word, `None` for a dead probe.
    pub fn probe_irradiance(&self, p: usize) -> Option<PackedSh> {
        self.irradiance_slot(p).map(|s| self.irradiance[s])
    }

    /// Replaces the visibility (a bake), keeping the irradiance of every probe live
    /// before and after; a probe that comes alive starts unlit. Panics when `vis`
    /// has another probe count.
    pub fn set_visibility(&mut self, vis: CompressedVisibility) {
        assert_eq!(vis.probe_count(), self.volume.probe_count(), "visibility of another volume");
        self.irradiance = vis.live.ones_from(0).map(|p| self.probe_irradiance(p).unwrap_or(UNLIT)).collect();
        self.visibility = vis;
    }

    /// The next `count` live probes from probe `first` on, wrapping round, each at
    /// most once: the round robin a per-frame probe budget walks, the GPU update's
    /// probe order. Dead probes are skipped: they are never sampled.
    pub fn live_round_robin(&self, first: u32, count: u32) -> Vec<u32> {
        let mut probes = Vec::new();
        self.live_round_robin_into(first, count, &mut probes);
        probes
    }

    /// [`ProbeField::live_round_robin`] into `probes` (cleared first; its memory kept).
    pub fn live_round_robin_into(&self, first: u32, count: u32, probes: &mut Vec<u32>) {
        let live = &self.visibility.live;
        let first = (first as usize).min(live.len());
        let wrapped = live.ones_from(0).take_while(|&p| p < first);
        probes.clear();
        probes.extend(live.ones_from(first).chain(wrapped).take(count as usize).map(|p| p as u32));
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
            let Some(probe) = self.probe_at_steps(c) else { continue };
            let Some(slot) = self.irradiance_slot(probe as usize) else { continue };
            let probe_pos = grid.position(c) + self.offsets.offset(probe as usize, grid.spacing);
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
            let e = self.slot_sh(slot).irradiance(n);
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

    /// Bytes of all probe data: placement, irradiance (16 bytes per live probe),
    /// compressed visibility and offsets.
    pub fn bytes(&self) -> usize {
        self.volume.bytes()
            + self.irradiance.len() * std::mem::size_of::<PackedSh>()
            + self.visibility.bytes()
            + self.offsets.bytes()
    }
}
