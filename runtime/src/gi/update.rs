//! Probe updates, the CPU reference of the GPU passes: irradiance from N rays per
//! probe with hysteresis, and the visibility bake that feeds the compressor.
//!
//! ```text
//!  irradiance (every frame, a budget of live probes):
//!    probe rays     N spherical-Fibonacci directions, turned by a per-frame rotation
//!    trace          closest hit
//!    shadow rays    from each front-face hit toward the sun (any hit)
//!    shade          miss: sky; back face: black (the probe is inside geometry);
//!                   hit: albedo / pi * (sun * cos * lit + E(hit) from the field as it
//!                   was before this update: multi-bounce, one bounce per update)
//!    project + blend  L1 SH of the N radiances; new = target + h (old - target),
//!                   stored with rounding toward the target (pack.rs)
//!
//!  visibility (when geometry changes):
//!    texel rays     2 x 2 per texel of the 16 x 16 map, t_max = clip distance
//!    trace          closest hit; depth = t, 0 on a back face, clip on a miss
//!    reduce         per texel the mean of depth and depth^2 over the clip distance
//!    compress       compress.rs
//! ```
//!
//! Why visibility is baked rather than blended every frame like irradiance: a
//! dictionary-compressed map can only change by more than the match tolerance
//! (0.01 of the clip range), while a hysteresis blend moves it by 3% of the
//! remaining error per update: recompressing each update would snap every map back
//! to the block it already uses. The texel rays are fixed directions, so an
//! unchanged neighbourhood bakes to the same map, which is what lets neighbours
//! share blocks.

use super::compress::{compress, CompressParams, ProbeOrder};
use super::field::{ProbeField, SampleParams, UNLIT};
use super::octahedral::{oct_decode, VisibilityMap, OCT_RES, OCT_TEXELS};
use super::pack::PackedSh;
use super::relocate::{bake_probe, ProbeBake, ProbeOffsets, ProbeRules};
use super::sh::{fibonacci_directions, random_rotation, ShRgb};
use crate::math::Vec3;
use crate::raytrace::{trace_cpu, GpuHit, GpuRay, TraceScene, HIT_BACKFACE, NO_HIT};

/// Light in the scene.
#[derive(Clone, Debug, PartialEq)]
pub struct GiLighting {
    /// Unit vector toward the sun.
    pub sun_direction: [f32; 3],
    /// Irradiance of the sun on a surface facing it.
    pub sun_irradiance: [f32; 3],
    /// Radiance of the sky, the same in every direction.
    pub sky_radiance: [f32; 3],
    /// Diffuse albedo per TLAS instance; instances past its end use `default_albedo`.
    pub albedo: Vec<[f32; 3]>,
    pub default_albedo: [f32; 3],
}

impl Default for GiLighting {
    fn default() -> GiLighting {
        GiLighting {
            sun_direction: Vec3::new(0.4, 0.8, 0.3).normalize().into(),
            sun_irradiance: [3.0, 2.8, 2.5],
            sky_radiance: [0.25, 0.35, 0.5],
            albedo: Vec::new(),
            default_albedo: [0.6, 0.6, 0.6],
        }
    }
}

impl GiLighting {
    fn albedo(&self, instance: u32) -> [f32; 3] {
        self.albedo.get(instance as usize).copied().unwrap_or(self.default_albedo)
    }
}

/// How irradiance is updated.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct UpdateParams {
    /// Rays per probe and update (128 to 256 is typical).
    pub rays_per_probe: u32,
    /// Weight of the old value: 0.97 keeps 97% per update.
    pub hysteresis: f32,
    /// How hits sample the field for the bounce.
    pub sample: SampleParams,
}

impl UpdateParams {
    pub fn for_spacing(spacing: f32) -> UpdateParams {
        UpdateParams { rays_per_probe: 128, hysteresis: 0.97, sample: SampleParams::for_spacing(spacing) }
    }
}

/// Distance the probe rays may travel: far enough for any scene Kiln traces.
pub const PROBE_RAY_MAX: f32 = 1.0e6;
/// Offset of shadow-ray origins along the surface normal (metres).
pub const SHADOW_OFFSET: f32 = 1.0e-3;

/// The N rays of each of `probes` for `frame`: probe-major, ray `i * n + j`.
pub fn probe_rays(field: &ProbeField, probes: &[u32], frame: u32, n: u32) -> Vec<GpuRay> {
    rays_from_probes(field, probes, &fibonacci_directions(n, &random_rotation(frame)), PROBE_RAY_MAX)
}

/// Rays along `dirs` from each probe of `probes`, probe-major.
fn rays_from_probes(field: &ProbeField, probes: &[u32], dirs: &[Vec3], t_max: f32) -> Vec<GpuRay> {
    let mut rays = Vec::with_capacity(probes.len() * dirs.len());
    for &p in probes {
        let origin = field.probe_position(p as usize);
        rays.extend(dirs.iter().map(|d| GpuRay {
            origin: origin.into(),
            t_min: 0.0,
            dir: (*d).into(),
            t_max,
            mask: u32::MAX,
            ..GpuRay::default()
        }));
    }
    rays
}

/// A shadow ray per probe ray: toward the sun from front-face hits; mask 0 (a
/// miss without traversal) for misses and back faces.
pub fn shadow_rays(rays: &[GpuRay], hits: &[GpuHit], lighting: &GiLighting) -> Vec<GpuRay> {
    rays.iter()
        .zip(hits)
        .map(|(ray, hit)| {
            if hit.instance == NO_HIT || hit.flags & HIT_BACKFACE != 0 {
                return GpuRay { t_max: 1.0, dir: [0.0, 0.0, 1.0], mask: 0, ..GpuRay::default() };
            }
            let p = Vec3::from(ray.origin) + Vec3::from(ray.dir) * hit.t + Vec3::from(hit.normal) * SHADOW_OFFSET;
            GpuRay {
                origin: p.into(),
                t_min: 0.0,
                dir: lighting.sun_direction,
                t_max: PROBE_RAY_MAX,
                mask: u32::MAX,
                ..GpuRay::default()
            }
        })
        .collect()
}

/// Radiance arriving at the probe along each ray (see the module docs).
pub fn shade(
    field: &ProbeField,
    rays: &[GpuRay],
    hits: &[GpuHit],
    shadows: &[GpuHit],
    lighting: &GiLighting,
    params: &SampleParams,
) -> Vec<[f32; 3]> {
    let sun = Vec3::from(lighting.sun_direction);
    rays.iter()
        .zip(hits.iter().zip(shadows))
        .map(|(ray, (hit, shadow))| {
            if hit.instance == NO_HIT {
                return lighting.sky_radiance;
            }
            if hit.flags & HIT_BACKFACE != 0 {
                return [0.0; 3];
            }
            let n = Vec3::from(hit.normal);
            let d = Vec3::from(ray.dir);
            let p = Vec3::from(ray.origin) + d * hit.t;
            let lit = if shadow.instance == NO_HIT { n.dot(sun).max(0.0) } else { 0.0 };
            let bounce = field.sample(p, n, -d, params);
            let albedo = lighting.albedo(hit.instance);
            std::array::from_fn(|ch| {
                albedo[ch] * std::f32::consts::FRAC_1_PI * (lighting.sun_irradiance[ch] * lit + bounce[ch])
            })
        })
        .collect()
}

/// Blends each probe's projected radiance into its stored irradiance. A dead probe
/// stores none: it is left out.
pub fn blend(field: &mut ProbeField, probes: &[u32], dirs: &[Vec3], radiance: &[[f32; 3]], hysteresis: f32) {
    let n = dirs.len();
    for (i, &p) in probes.iter().enumerate() {
        let Some(slot) = field.irradiance_slot(p as usize) else { continue };
        let target = ShRgb::project(dirs, &radiance[i * n..(i + 1) * n]);
        let stored = &mut field.irradiance[slot];
        *stored = if *stored == UNLIT {
            PackedSh::pack(&target)
        } else {
            let value = target.lerp(&stored.unpack(), hysteresis);
            stored.pack_toward(&value, &target)
        };
    }
}

/// One irradiance update of `probes` on the CPU: the reference the GPU passes are
/// checked against. Dead probes among them are traced but store nothing (a
/// round robin skips them: [`ProbeField::live_round_robin`]).
pub fn update_irradiance(
    field: &mut ProbeField,
    scene: &TraceScene<'_>,
    lighting: &GiLighting,
    params: &UpdateParams,
    frame: u32,
    probes: &[u32],
) {
    let rays = probe_rays(field, probes, frame, params.rays_per_probe);
    let hits: Vec<GpuHit> = rays.iter().map(|r| trace_cpu(scene, r, false)).collect();
    let shadow = shadow_rays(&rays, &hits, lighting);
    let lit: Vec<GpuHit> = shadow.iter().map(|r| trace_cpu(scene, r, true)).collect();
    let radiance = shade(field, &rays, &hits, &lit, lighting, &params.sample);
    let dirs = fibonacci_directions(params.rays_per_probe, &random_rotation(frame));
    blend(field, probes, &dirs, &radiance, params.hysteresis);
}

/// Texel rays per axis of a texel.
pub const BAKE_SUBSAMPLES: usize = 2;
/// Visibility rays per probe.
pub const BAKE_RAYS: usize = OCT_TEXELS * BAKE_SUBSAMPLES * BAKE_SUBSAMPLES;

/// The directions of the [`BAKE_RAYS`] bake rays: texel-major, subsamples row by row.
pub fn bake_directions() -> Vec<Vec3> {
    let s = BAKE_SUBSAMPLES;
    let step = 2.0 / (OCT_RES * s) as f32;
    (0..OCT_TEXELS)
        .flat_map(|t| {
            let (x, y) = (t % OCT_RES, t / OCT_RES);
            (0..s * s).map(move |k| {
                let (sx, sy) = (x * s + k % s, y * s + k / s);
                oct_decode([(sx as f32 + 0.5) * step - 1.0, (sy as f32 + 0.5) * step - 1.0])
            })
        })
        .collect()
}

/// The [`BAKE_RAYS`] rays of each probe, from where it sits, reaching the clip
/// distance.
pub fn visibility_rays(field: &ProbeField, probes: &[u32]) -> Vec<GpuRay> {
    rays_from_probes(field, probes, &bake_directions(), field.volume.grid.clip_distance())
}

/// Reduces one probe's [`BAKE_RAYS`] hits to its map.
pub fn visibility_map(hits: &[GpuHit], clip: f32) -> VisibilityMap {
    assert_eq!(hits.len(), BAKE_RAYS);
    let per_texel = BAKE_SUBSAMPLES * BAKE_SUBSAMPLES;
    VisibilityMap(std::array::from_fn(|t| {
        let mut sum = [0.0f32; 2];
        for hit in &hits[t * per_texel..(t + 1) * per_texel] {
            let depth = if hit.instance == NO_HIT {
                1.0
            } else if hit.flags & HIT_BACKFACE != 0 {
                0.0
            } else {
                (hit.t / clip).min(1.0)
            };
            sum[0] += depth;
            sum[1] += depth * depth;
        }
        sum.map(|s| s / per_texel as f32)
    }))
}

/// Bakes and compresses every probe's visibility on the CPU, probes on their grid
/// points and only the dead ones inactive (the bake as the GPU runs it). `batch`
/// is the compressor's batch size (the GPU's dispatch width).
pub fn bake_visibility(field: &mut ProbeField, scene: &TraceScene<'_>, compress_params: &CompressParams, batch: u32) {
    bake_visibility_with(field, scene, compress_params, batch, &ProbeRules::FIXED);
}

/// [`bake_visibility`] under `rules`: probes relocated and classified
/// (`relocate.rs`), the bake's rays masked to the occluders.
pub fn bake_visibility_with(
    field: &mut ProbeField,
    scene: &TraceScene<'_>,
    compress_params: &CompressParams,
    batch: u32,
    rules: &ProbeRules,
) {
    let n = field.volume.probe_count();
    let all: Vec<u32> = (0..n as u32).collect();
    let bakes = bake_probes(field, scene, &all, rules);
    field.offsets = ProbeOffsets::from_codes(&bakes.iter().map(|b| b.offset).collect::<Vec<_>>());
    let maps: Vec<VisibilityMap> = bakes.into_iter().map(|b| b.map).collect();
    field.set_visibility(compress(&maps, &ProbeOrder::swizzled(n as u32, batch), compress_params));
}

/// Relocates, classifies and bakes `probes` against `scene` from their current
/// offsets (the field is left alone).
pub fn bake_probes(field: &ProbeField, scene: &TraceScene<'_>, probes: &[u32], rules: &ProbeRules) -> Vec<ProbeBake> {
    let grid = &field.volume.grid;
    let clip = grid.clip_distance();
    let dirs = bake_directions();
    probes
        .iter()
        .map(|&p| {
            let trace = |origin: Vec3| {
                let rays: Vec<GpuRay> = dirs
                    .iter()
                    .map(|d| GpuRay {
                        origin: origin.into(),
                        t_min: 0.0,
                        dir: (*d).into(),
                        t_max: clip,
                        mask: rules.occluders,
                        ..GpuRay::default()
                    })
                    .collect();
                let hits = rays.iter().map(|r| trace_cpu(scene, r, false)).collect();
                (rays, hits)
            };
            let point = field.grid_point(p as usize);
            let start = field.offsets.code(p as usize);
            bake_probe(grid, point, start, rules, trace, |hits| visibility_map(hits, clip))
        })
        .collect()
}
