//! Scrolling volumes: a dense probe volume that follows a point (the camera)
//! across a world larger than itself, by whole probes, reusing probe slots by
//! modulo addressing; and cascades of such volumes at several spacings, blended
//! where a finer one ends. Follows RTXGI's infinite scrolling volumes
//! (`DDGIVolume::Scroll`, the probe scroll offsets) and its volume blending.
//!
//! ```text
//!  scroll by k   the grid's origin moves k probes along an axis; the ring (the
//!                slot of the probe at the origin, field.rs) moves k slots; the
//!                probes of the k planes that enter take the slots of the k
//!                planes that leave
//!  new planes    reset (unlit, on their grid points) and baked, their maps
//!                recompressed into the dictionary as it stands (refresh.rs);
//!                every other probe keeps its slot, offset, map and irradiance,
//!                so a point inside the volume before and after samples the same
//!                irradiance
//!  first         the new probes are returned, for the update to take first
//!  cascades      volumes of growing spacing around the same point; a sample
//!                takes the finest that holds it, blended into the next over
//!                the last probe spacing before the finer one's edge
//! ```
//!
//! Only the planes that enter are traced: scrolling by `k` probes along x
//! bakes `k * dims_y * dims_z` probes, whatever the volume's size. A scrolling
//! volume is dense (`ProbeVolume::dense`): a placement mask describes the
//! geometry of one place and cannot follow the volume.

use super::compress::CompressParams;
use super::field::{ProbeField, SampleParams, UNLIT};
use super::refresh::{refresh_probes, RefreshReport};
use super::relocate::{ProbeOffsets, ProbeRules};
use crate::math::Vec3;
use crate::raytrace::TraceScene;

/// What a scroll did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ScrollReport {
    /// Whole probes moved along each axis.
    pub shift: [i32; 3],
    /// Planes of probes that entered, over all axes.
    pub planes: u32,
    /// The probes (slots) that entered, ascending: update them first.
    pub probes: Vec<u32>,
    /// The bake of the new probes.
    pub bake: RefreshReport,
}

/// The shift, in whole probes per axis, that puts `centre` in the volume's middle
/// cell (the probe nearest the middle of the grid lands nearest the point).
pub fn centre_shift(field: &ProbeField, centre: Vec3) -> [i32; 3] {
    let grid = &field.volume.grid;
    std::array::from_fn(|a| {
        let middle = grid.origin[a] + (grid.dims[a] - 1) as f32 * 0.5 * grid.spacing;
        let shift = ((centre[a] - middle) / grid.spacing).round();
        if shift.is_finite() {
            shift.clamp(-(i32::MAX as f32), i32::MAX as f32) as i32
        } else {
            0
        }
    })
}

/// Scrolls `field` so that `centre` lies in its middle cell (see [`scroll_by`]).
pub fn scroll_to(
    field: &mut ProbeField,
    scene: &TraceScene<'_>,
    centre: Vec3,
    compress_params: &CompressParams,
    rules: &ProbeRules,
) -> ScrollReport {
    let shift = centre_shift(field, centre);
    scroll_by(field, scene, shift, compress_params, rules)
}

/// Moves the volume `shift` whole probes along each axis (see the module docs)
/// and bakes the probes that entered against `scene`. A shift of a whole
/// volume or more along an axis replaces every probe.
pub fn scroll_by(
    field: &mut ProbeField,
    scene: &TraceScene<'_>,
    shift: [i32; 3],
    compress_params: &CompressParams,
    rules: &ProbeRules,
) -> ScrollReport {
    let (probes, planes) = advance(field, shift);
    let mut report = ScrollReport { shift, planes, ..ScrollReport::default() };
    if probes.is_empty() {
        return report;
    }
    report.bake = refresh_probes(field, scene, &probes, compress_params, rules);
    unlight(field, &probes);
    report.probes = probes;
    report
}

/// The first half of a scroll: moves the grid's origin and the ring, puts the
/// probes that enter on their grid points and returns them (ascending) with the
/// number of planes that entered. Their maps and irradiance are still those of
/// the probes that left: bake them, then [`unlight`] them.
pub fn advance(field: &mut ProbeField, shift: [i32; 3]) -> (Vec<u32>, u32) {
    let grid = field.volume.grid;
    assert_eq!(field.volume.probe_count(), grid.point_count(), "only a dense volume scrolls");
    let dims = grid.dims;
    if shift == [0; 3] {
        return (Vec::new(), 0);
    }
    // The steps (from the new origin) of the planes that enter, per axis.
    let entering: [std::ops::Range<u32>; 3] = std::array::from_fn(|a| {
        let k = shift[a].unsigned_abs().min(dims[a]);
        if shift[a] > 0 {
            dims[a] - k..dims[a]
        } else {
            0..k
        }
    });
    let mut planes = 0;
    for a in 0..3 {
        let k = shift[a];
        field.volume.grid.origin[a] = grid.origin[a] + k as f32 * grid.spacing;
        let turn = (k.rem_euclid(dims[a] as i32)) as u32;
        field.ring[a] = (field.ring[a] + turn) % dims[a];
        planes += shift[a].unsigned_abs().min(dims[a]);
    }
    let mut probes = Vec::new();
    for j in 0..dims[1] {
        for k in 0..dims[2] {
            for i in 0..dims[0] {
                let steps = [i, j, k];
                if (0..3).any(|a| entering[a].contains(&steps[a])) {
                    probes.extend(field.probe_at_steps(steps));
                }
            }
        }
    }
    probes.sort_unstable();
    let n = field.volume.probe_count();
    let mut codes = field.offsets.codes(n);
    for &p in &probes {
        codes[p as usize] = [0; 3];
    }
    field.offsets = ProbeOffsets::from_codes(&codes);
    (probes, planes)
}

/// Leaves `probes` unlit (those that keep irradiance): the probes that entered a
/// scroll carry no light of the probes whose slots they took.
pub fn unlight(field: &mut ProbeField, probes: &[u32]) {
    for &p in probes {
        if let Some(slot) = field.irradiance_slot(p as usize) {
            field.irradiance[slot] = UNLIT;
        }
    }
}

/// How much of a sample at `p` the field takes before the next coarser one: 1
/// deeper than one probe spacing inside its grid's box, falling to 0 at its edge,
/// 0 outside.
pub fn cascade_weight(field: &ProbeField, p: Vec3) -> f32 {
    let grid = &field.volume.grid;
    let hi = grid.origin + Vec3::new(grid.dims[0] as f32, grid.dims[1] as f32, grid.dims[2] as f32) * grid.spacing
        - Vec3::splat(grid.spacing);
    let inside = (p - grid.origin).min(hi - p);
    let depth = inside.x.min(inside.y).min(inside.z);
    (depth / grid.spacing).clamp(0.0, 1.0)
}

/// Blends the samples of cascades at one point, finest first: each cascade
/// takes [`cascade_weight`] of what the finer ones left, the coarsest all that is
/// left. [`sample_cascades`] drives it; a caller holding its cascades apart (one
/// lock each) feeds it one cascade at a time.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CascadeBlend {
    /// Irradiance gathered so far.
    pub sum: [f32; 3],
    /// Weight the finer cascades left.
    pub left: f32,
}

impl Default for CascadeBlend {
    fn default() -> CascadeBlend {
        CascadeBlend { sum: [0.0; 3], left: 1.0 }
    }
}

impl CascadeBlend {
    /// The weight `field` takes at `p`: 0 once nothing is left (skip its sample).
    pub fn weight(&self, field: &ProbeField, p: Vec3, coarsest: bool) -> f32 {
        if self.left <= 0.0 {
            0.0
        } else if coarsest {
            self.left
        } else {
            self.left * cascade_weight(field, p)
        }
    }

    /// Adds a cascade's sample `e` at weight `w` (from [`CascadeBlend::weight`]).
    pub fn add(&mut self, w: f32, e: [f32; 3]) {
        for (s, e) in self.sum.iter_mut().zip(e) {
            *s += w * e;
        }
        self.left -= w;
    }
}

/// Irradiance at surface point `p` from cascades ordered finest first, each
/// sampled with `params(field)` (see [`CascadeBlend`]). Zero without cascades.
pub fn sample_cascades_with(
    cascades: &[ProbeField],
    p: Vec3,
    n: Vec3,
    v: Vec3,
    params: impl Fn(&ProbeField) -> SampleParams,
) -> [f32; 3] {
    let mut blend = CascadeBlend::default();
    for (i, field) in cascades.iter().enumerate() {
        let w = blend.weight(field, p, i + 1 == cascades.len());
        if w > 0.0 {
            blend.add(w, field.sample(p, n, v, &params(field)));
        }
    }
    blend.sum
}

/// [`sample_cascades_with`] at each cascade's default sampling for its spacing.
pub fn sample_cascades(cascades: &[ProbeField], p: Vec3, n: Vec3, v: Vec3) -> [f32; 3] {
    sample_cascades_with(cascades, p, n, v, |f| SampleParams::for_spacing(f.volume.grid.spacing))
}
