//! Visibility that follows edits: after geometry changed inside a box (a terrain
//! edit, a door, a body marked occluding), only the probes that could see into
//! the box are relocated, classified and re-baked, and their maps recompressed
//! into the dictionary as it stands (`compress::recompress`): new blocks are
//! appended, blocks no probe reads any more are reclaimed, nothing else is matched
//! or traced again. RTXGI re-traces every probe every frame; Kiln's visibility is
//! baked and compressed, so it is refreshed where the world changed instead.
//!
//! ```text
//!  reach     a probe's bake rays start within `max_offset` of its grid point (when
//!            probes relocate) and reach the clip distance: a grid point within
//!            clip + max offset of the box may see a change
//!  bake      relocate, classify, bake from the probe's current offset (relocate.rs)
//!  fold      offsets of the refreshed probes replaced; visibility recompressed;
//!            the irradiance of probes active before and after kept, newly active
//!            probes start unlit, and the update's round robin finds them
//! ```

use super::compress::{recompress, CompressParams, Recompression};
use super::field::ProbeField;
use super::octahedral::VisibilityMap;
use super::relocate::{ProbeOffsets, ProbeRules};
use super::update::bake_probes;
use super::volume::ProbeGrid;
use crate::math::Vec3;
use crate::raytrace::TraceScene;

/// What a refresh did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RefreshReport {
    /// Probes re-baked (those within reach of the box).
    pub probes: u32,
    /// Of them, inactive before and active after, and the reverse.
    pub activated: u32,
    pub deactivated: u32,
    /// Of them, probes whose offset changed.
    pub moved: u32,
    /// What the recompression matched, added and reclaimed.
    pub blocks: Recompression,
}

/// The probes of `field` whose grid point lies within `reach` of the box
/// `[lo, hi]`, ascending.
pub fn probes_near(field: &ProbeField, lo: Vec3, hi: Vec3, reach: f32) -> Vec<u32> {
    let grid = &field.volume.grid;
    let (wide_lo, wide_hi) = (lo - Vec3::splat(reach), hi + Vec3::splat(reach));
    let first: [u32; 3] = std::array::from_fn(|a| {
        ((wide_lo[a] - grid.origin[a]) / grid.spacing).ceil().clamp(0.0, grid.dims[a] as f32) as u32
    });
    let end: [u32; 3] = std::array::from_fn(|a| {
        (((wide_hi[a] - grid.origin[a]) / grid.spacing).floor() + 1.0).clamp(0.0, grid.dims[a] as f32) as u32
    });
    let mut probes = Vec::new();
    for j in first[1]..end[1] {
        for k in first[2]..end[2] {
            for i in first[0]..end[0] {
                let c = [i, j, k];
                let p = grid.position(c);
                if (lo - p).max(p - hi).max(Vec3::ZERO).length() <= reach {
                    probes.extend(field.probe_at_steps(c));
                }
            }
        }
    }
    probes.sort_unstable();
    probes
}

/// How far from a changed box a probe's grid point may lie and still see into
/// it: the clip distance, and the largest offset when probes relocate.
pub fn refresh_reach(grid: &ProbeGrid, rules: &ProbeRules) -> f32 {
    grid.clip_distance() + if rules.relocate { rules.max_offset * grid.spacing } else { 0.0 }
}

/// Re-bakes the probes that could see into the box `[lo, hi]` (where geometry
/// changed) against `scene` as it is now, and folds them into `field` (see the
/// module docs). Non-finite or inverted boxes refresh nothing.
pub fn refresh_visibility(
    field: &mut ProbeField,
    scene: &TraceScene<'_>,
    lo: Vec3,
    hi: Vec3,
    compress_params: &CompressParams,
    rules: &ProbeRules,
) -> RefreshReport {
    if !(lo.is_finite() && hi.is_finite()) || hi.cmplt(lo).any() {
        return RefreshReport::default();
    }
    let probes = probes_near(field, lo, hi, refresh_reach(&field.volume.grid, rules));
    refresh_probes(field, scene, &probes, compress_params, rules)
}

/// Re-bakes `probes` (ascending, each once) and folds them into `field`.
pub fn refresh_probes(
    field: &mut ProbeField,
    scene: &TraceScene<'_>,
    probes: &[u32],
    compress_params: &CompressParams,
    rules: &ProbeRules,
) -> RefreshReport {
    let bakes = bake_probes(field, scene, probes, rules);
    let offsets: Vec<[i32; 3]> = bakes.iter().map(|b| b.offset).collect();
    let maps: Vec<VisibilityMap> = bakes.into_iter().map(|b| b.map).collect();
    fold_probes(field, probes, &offsets, &maps, compress_params)
}

/// Folds new offsets and maps of `probes` (ascending, each once) into `field`: the
/// visibility recompressed, the irradiance of probes active before and after kept.
pub fn fold_probes(
    field: &mut ProbeField,
    probes: &[u32],
    offsets: &[[i32; 3]],
    maps: &[VisibilityMap],
    compress_params: &CompressParams,
) -> RefreshReport {
    let n = field.volume.probe_count();
    let mut codes = field.offsets.codes(n);
    let mut report = RefreshReport { probes: probes.len() as u32, ..RefreshReport::default() };
    for (&p, &offset) in probes.iter().zip(offsets) {
        report.moved += u32::from(codes[p as usize] != offset);
        codes[p as usize] = offset;
    }
    let (visibility, blocks) = recompress(&field.visibility, probes, maps, compress_params);
    for &p in probes {
        let (before, after) = (field.is_active(p as usize), !visibility.is_dead(p as usize));
        report.activated += u32::from(!before && after);
        report.deactivated += u32::from(before && !after);
    }
    report.blocks = blocks;
    field.offsets = ProbeOffsets::from_codes(&codes);
    field.set_visibility(visibility);
    report
}
