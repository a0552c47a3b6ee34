//! DDGI irradiance probes through the C ABI: a probe volume over a tracer's scene,
//! its visibility bake, a per-frame update of a budget of probes, and irradiance
//! sampling at surface points.
//!
//! ```c
//! KilnGiDef def = kiln_default_gi_def();
//! def.bounds_min = (KilnVec3){-32, 0, -32};
//! def.bounds_max = (KilnVec3){32, 16, 32};
//! KilnGiId gi;
//! kiln_gi_create(tracer, &def, &gi);      // probes around the tracer's triangles
//! kiln_gi_bake(gi);                        // visibility, once static geometry is in
//! kiln_gi_refresh(gi, lo, hi, NULL);       // again where geometry changed, later
//! for (;;) {                               // every frame
//!     kiln_gi_update(gi, NULL);            // the next def.probes_per_frame live probes
//!     kiln_gi_sample(gi, points, normals, NULL, n, true, irradiance);
//! }
//! kiln_gi_destroy(gi);
//! ```
//!
//! A volume belongs to the tracer it was created on and traces its scene as it is
//! at each call; after the tracer is destroyed every call on the volume fails with
//! `KILN_ERROR_INVALID_HANDLE`. The GPU time of each update pass is read with
//! `kiln_tracer_get_timings` after `kiln_gi_update` or `kiln_gi_bake`. Every call
//! checks all of its input first: a refused call changes nothing.

use std::mem::size_of;

use kiln_core::gi::refresh::RefreshReport;
use kiln_core::gi::scroll::{CascadeBlend, ScrollReport};
use kiln_core::gi::SampleParams;
use kiln_core::gi::{ProbeGrid, ProbeRules};
use kiln_core::gpu::{GiVolume, Rebake, MAX_RAYS_PER_PROBE};
use kiln_core::math::Vec3;

use crate::abi::{
    ffi_call, non_null, read_def, write_out, Error, KilnStatus, KILN_ERROR_INVALID_ARGUMENT, KILN_ERROR_INVALID_STATE,
};
use crate::handles::{HandleTable, Lendable};
use crate::types::KilnVec3;

use crate::embedded::KilnGpuBuffer;
use crate::tracer::{gpu_error, live_instance, refuse_embedded, with_tracer, KilnInstanceId, KilnTracerId};
use kiln_core::gpu::vk::{self, Handle};
use std::ffi::c_void;

/// Handle to a DDGI probe volume. `{0, 0}` is the null handle. Pass by value.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KilnGiId {
    /// Slot index plus one (0 means null).
    pub index1: u32,
    /// Slot generation; a destroyed volume's handles no longer match.
    pub generation: u32,
}

/// How a probe volume is laid out and updated. Initialise with
/// `kiln_default_gi_def()`, then set the bounds.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KilnGiDef {
    /// `sizeof(KilnGiDef)`, set by `kiln_default_gi_def()`.
    pub struct_size: u32,
    /// Lower corner of the volume (finite). Default {0, 0, 0}: set it.
    pub bounds_min: KilnVec3,
    /// Upper corner, at least `bounds_min` on every axis. Default {0, 0, 0}: set it.
    pub bounds_max: KilnVec3,
    /// Distance between neighbouring probes, metres (> 0). Default 1.
    pub spacing: f32,
    /// Probes go only at grid points within this distance of a triangle of the
    /// tracer's scene at creation; a negative value puts a probe at every grid
    /// point. Default 1.5.
    pub dilation: f32,
    /// Rays per probe and update, 1 to 1024. Default 128.
    pub rays_per_probe: u32,
    /// Weight of the old irradiance per update, in [0, 1]. Default 0.97.
    pub hysteresis: f32,
    /// Probes each `kiln_gi_update` refreshes, walking the live probes round robin
    /// (at least 1; capped at the live probe count and at 2^20 rays per update).
    /// Default 1024.
    pub probes_per_frame: u32,
    /// Largest texel difference, as a fraction of the clip distance, at which two
    /// visibility maps share a compressed block, in [0, 1). Default 0.01.
    pub compress_tolerance: f32,
    /// Quadrant blocks (8 x 8 texels) back the compressor searches for a match (at
    /// least 1). Default 40000: the reference's window of 10,000 whole maps.
    pub compress_window: u32,
    /// Instance mask bits of the geometry that occludes the probes' visibility:
    /// the bake's rays carry this mask, so an instance whose mask shares no bit
    /// with it (a moving body marked dynamic) is lit and lights others but casts
    /// no visibility, and moving it needs no `kiln_gi_refresh`. Not 0. Default
    /// all bits: everything occludes.
    pub occluder_mask: u32,
    /// Bakes and refreshes move each probe off nearby surfaces and out of solid,
    /// by at most 0.45 of the spacing (RTXGI's relocation), and the update and
    /// sampling use the moved position. Default false. Recorded into an
    /// engine's command buffers (`kiln_gi_record_bake`, `kiln_gi_record_refresh`,
    /// `kiln_gi_record_scroll_to`), each relocation step is one more recording.
    pub relocate_probes: bool,
    /// Bakes and refreshes mark probes still in solid, or seeing no front face
    /// within reach, inactive: they keep nothing and are neither updated nor
    /// sampled (counted in `KilnGiStats::dead_probes`). Default false.
    pub classify_probes: bool,
}

/// The light a volume's probes gather. Initialise with `kiln_default_gi_lighting()`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KilnGiLighting {
    /// `sizeof(KilnGiLighting)`, set by `kiln_default_gi_lighting()`.
    pub struct_size: u32,
    /// Direction toward the sun (finite, non-zero; normalised by Kiln). Default
    /// normalise({0.4, 0.8, 0.3}).
    pub sun_direction: KilnVec3,
    /// Irradiance of the sun on a surface facing it, per channel, >= 0. Default
    /// {3, 2.8, 2.5}.
    pub sun_irradiance: KilnVec3,
    /// Radiance of the sky, the same in every direction, >= 0. Default {0.25, 0.35, 0.5}.
    pub sky_radiance: KilnVec3,
    /// Diffuse albedo of instances without one from `kiln_gi_set_albedo`, each
    /// channel in [0, 1]. Default {0.6, 0.6, 0.6}.
    pub default_albedo: KilnVec3,
}

/// Figures of a probe volume, from `kiln_gi_get_stats`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct KilnGiStats {
    /// Points of the probe grid.
    pub grid_points: u64,
    /// Probes placed (grid points near geometry).
    pub probe_count: u32,
    /// Probes that see no surface within the clip distance, after a bake: they keep
    /// no visibility and no irradiance, and are neither updated nor sampled. With
    /// `classify_probes`, probes in solid count here too.
    pub dead_probes: u32,
    /// Probes off their grid points (`relocate_probes`).
    pub moved_probes: u32,
    /// Distinct visibility blocks after compression: each block is a quadrant of a
    /// map (8 x 8 texels) that any number of probes share, stored as the number of
    /// a mask (shared among blocks) of the texels that see something, and 7 to 11
    /// bits for each of them, by how many bits its texels' spread (depth^2 less
    /// depth squared) needs.
    pub blocks: u32,
    /// Updates run so far.
    pub frames: u32,
    /// Probes the last `kiln_gi_update` refreshed.
    pub last_update_probes: u32,
    /// Whether `kiln_gi_bake` ran.
    pub baked: bool,
    /// Bytes of all probe data: placement mask, irradiance (16 per live probe:
    /// placed and not dead), compressed visibility.
    pub bytes: u64,
    /// Bytes of the compressed visibility (live mask, signature numbers and
    /// entries, and blocks).
    pub visibility_bytes: u64,
    /// Bytes every probe's visibility map would take uncompressed (1 KiB each).
    pub visibility_bytes_uncompressed: u64,
}

/// What `kiln_gi_refresh` did.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KilnGiRefresh {
    /// Probes re-baked: those whose visibility reaches into the box.
    pub probes: u32,
    /// Of them, probes that were dead and now see something (unlit until updated).
    pub activated: u32,
    /// Of them, probes that saw something and now see nothing (dead).
    pub deactivated: u32,
    /// Quadrants of the new maps that matched a block already stored.
    pub blocks_matched: u32,
    /// Blocks the new maps added to the dictionary.
    pub blocks_added: u32,
    /// Blocks no probe reads any more, dropped from the dictionary.
    pub blocks_reclaimed: u32,
}

/// What `kiln_gi_scroll_to` did.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KilnGiScroll {
    /// Whole probes the volume moved along x, y and z.
    pub shift: [i32; 3],
    /// Planes of probes that entered, over all axes.
    pub planes: u32,
    /// Probes that entered (baked, unlit until the next updates, which take them
    /// first).
    pub probes: u32,
}

/// A volume behind a handle, with the tracer it traces.
pub(crate) struct GiEntry {
    pub(crate) volume: Lendable<GiVolume>,
    pub(crate) tracer: KilnTracerId,
}

pub(crate) static VOLUMES: HandleTable<GiEntry> = HandleTable::new("gi volume");

/// Runs `f` on the volume and its tracer (lock order: volume, then tracer).
fn with_gi<R>(
    id: KilnGiId,
    f: impl FnOnce(&mut GiVolume, &mut kiln_core::gpu::RayTracer) -> Result<R, Error>,
) -> Result<R, Error> {
    VOLUMES.with(id.index1, id.generation, |entry| {
        let tracer = entry.tracer;
        with_tracer(tracer, |t| f(&mut entry.volume, &mut t.tracer))
    })
}

fn invalid(message: String) -> Error {
    Error::new(KILN_ERROR_INVALID_ARGUMENT, message)
}

fn vec3(v: KilnVec3) -> Vec3 {
    Vec3::new(v.x, v.y, v.z)
}

fn colour(v: KilnVec3, name: &str, max: f32) -> Result<[f32; 3], Error> {
    let c = [v.x, v.y, v.z];
    if c.iter().all(|x| x.is_finite() && *x >= 0.0 && *x <= max) {
        Ok(c)
    } else {
        Err(invalid(format!("{name} is {c:?}: every channel must be finite and in [0, {max}]")))
    }
}

/// A `KilnGiDef` with the defaults documented on its fields.
///
/// Threads: any thread, at any time.
#[no_mangle]
pub extern "C" fn kiln_default_gi_def() -> KilnGiDef {
    KilnGiDef {
        struct_size: size_of::<KilnGiDef>() as u32,
        bounds_min: KilnVec3::default(),
        bounds_max: KilnVec3::default(),
        spacing: 1.0,
        dilation: 1.5,
        rays_per_probe: 128,
        hysteresis: 0.97,
        probes_per_frame: 1024,
        compress_tolerance: 0.01,
        compress_window: 40_000,
        occluder_mask: u32::MAX,
        relocate_probes: false,
        classify_probes: false,
    }
}

/// A `KilnGiLighting` with the defaults documented on its fields.
///
/// Threads: any thread, at any time.
#[no_mangle]
pub extern "C" fn kiln_default_gi_lighting() -> KilnGiLighting {
    let d = kiln_core::gi::GiLighting::default();
    let v = |c: [f32; 3]| KilnVec3 { x: c[0], y: c[1], z: c[2] };
    KilnGiLighting {
        struct_size: size_of::<KilnGiLighting>() as u32,
        sun_direction: v(d.sun_direction),
        sun_irradiance: v(d.sun_irradiance),
        sky_radiance: v(d.sky_radiance),
        default_albedo: v(d.default_albedo),
    }
}

/// Creates a probe volume over `tracer`'s scene: a grid of `def->spacing` covering
/// the bounds, probes near the scene's triangles as they are now. Its probes are
/// unlit and see nothing until `kiln_gi_bake` and `kiln_gi_update`. At most
/// 524,288 probes (`KILN_ERROR_INVALID_ARGUMENT` beyond, naming the count).
///
/// Pointers: `def` is NULL or readable; `out_gi` is NULL or writable.
///
/// Threads: one call at a time per tracer (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_gi_create(
    tracer: KilnTracerId,
    def: *const KilnGiDef,
    out_gi: *mut KilnGiId,
) -> KilnStatus {
    ffi_call("kiln_gi_create", || {
        let def = non_null(def, "def")?;
        non_null(out_gi, "out_gi")?;
        // SAFETY: non-null; readable per the contract.
        let def = unsafe { read_def(def, "def")? };
        let (lo, hi) = (vec3(def.bounds_min), vec3(def.bounds_max));
        let grid = ProbeGrid::covering(lo, hi, def.spacing).ok_or_else(|| {
            invalid(format!(
                "bounds {lo} .. {hi} with spacing {} give no grid: the bounds must be finite with min <= max, the spacing finite and > 0, and the grid at most 2^27 points",
                def.spacing
            ))
        })?;
        if def.rays_per_probe == 0 || def.rays_per_probe > MAX_RAYS_PER_PROBE {
            return Err(invalid(format!(
                "def->rays_per_probe is {}: use 1 to {MAX_RAYS_PER_PROBE}",
                def.rays_per_probe
            )));
        }
        if !(0.0..=1.0).contains(&def.hysteresis) {
            return Err(invalid(format!("def->hysteresis is {}: use a value in [0, 1]", def.hysteresis)));
        }
        if def.probes_per_frame == 0 {
            return Err(invalid("def->probes_per_frame is 0".to_owned()));
        }
        if !(def.compress_tolerance >= 0.0 && def.compress_tolerance < 1.0) {
            return Err(invalid(format!("def->compress_tolerance is {}: use [0, 1)", def.compress_tolerance)));
        }
        if def.compress_window == 0 {
            return Err(invalid("def->compress_window is 0".to_owned()));
        }
        if def.occluder_mask == 0 {
            return Err(invalid(
                "def->occluder_mask is 0: nothing would occlude and every probe would see nothing; use ~0u for every instance"
                    .to_owned(),
            ));
        }
        if def.dilation.is_nan() || def.dilation.is_infinite() {
            return Err(invalid(format!(
                "def->dilation is {}: use a finite value (negative: every grid point)",
                def.dilation
            )));
        }
        let dilation = (def.dilation >= 0.0).then_some(def.dilation);
        let volume = with_tracer(tracer, |t| {
            let mut volume = GiVolume::new(&mut t.tracer, grid, dilation).map_err(gpu_error)?;
            volume.params.rays_per_probe = def.rays_per_probe;
            volume.params.hysteresis = def.hysteresis;
            volume.probes_per_frame = def.probes_per_frame;
            volume.compress.tolerance = def.compress_tolerance;
            volume.compress.window = def.compress_window;
            volume.set_occluders(def.occluder_mask);
            volume.rules.relocate = def.relocate_probes;
            volume.rules.classify = def.classify_probes;
            volume.rules.iterations = ProbeRules::default().iterations;
            Ok(volume)
        })?;
        let (index1, generation) = VOLUMES.insert(GiEntry { volume: Lendable::new(volume), tracer });
        write_out(out_gi, "out_gi", KilnGiId { index1, generation })
    })
}

/// Destroys a probe volume; its handle becomes invalid.
///
/// Threads: one call at a time per GI volume (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub extern "C" fn kiln_gi_destroy(gi: KilnGiId) -> KilnStatus {
    ffi_call("kiln_gi_destroy", || VOLUMES.remove(gi.index1, gi.generation).map(drop))
}

/// Whether `gi` refers to a live probe volume.
///
/// Threads: any thread, at any time; never busy.
#[no_mangle]
pub extern "C" fn kiln_gi_is_valid(gi: KilnGiId) -> bool {
    VOLUMES.is_valid(gi.index1, gi.generation)
}

/// Sets the light the next updates gather.
///
/// Pointers: `lighting` is NULL or readable.
///
/// Threads: one call at a time per GI volume (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_gi_set_lighting(gi: KilnGiId, lighting: *const KilnGiLighting) -> KilnStatus {
    ffi_call("kiln_gi_set_lighting", || {
        let lighting = non_null(lighting, "lighting")?;
        // SAFETY: non-null; readable per the contract.
        let l = unsafe { read_def(lighting, "lighting")? };
        let sun = vec3(l.sun_direction);
        if !(sun.is_finite() && sun.length_squared() > 0.0 && sun.length_squared().is_finite()) {
            return Err(invalid(format!("lighting->sun_direction is {sun}: use a finite non-zero vector")));
        }
        let sun_irradiance = colour(l.sun_irradiance, "lighting->sun_irradiance", f32::MAX)?;
        let sky = colour(l.sky_radiance, "lighting->sky_radiance", f32::MAX)?;
        let albedo = colour(l.default_albedo, "lighting->default_albedo", 1.0)?;
        with_gi(gi, |volume, _| {
            let target = &mut volume.lighting;
            target.sun_direction = sun.normalize().into();
            target.sun_irradiance = sun_irradiance;
            target.sky_radiance = sky;
            target.default_albedo = albedo;
            Ok(())
        })
    })
}

/// Sets the diffuse albedo of `count` instances of the volume's tracer: `instances[i]`
/// gets `albedo[i]`, each channel in [0, 1]. An instance keeps its albedo, wherever
/// removals of others move it, until it is removed itself; instances never given
/// one use the lighting's `default_albedo`. Every entry is checked first: a stale
/// handle or one of another tracer (`KILN_ERROR_INVALID_HANDLE`) or a bad colour
/// (`KILN_ERROR_INVALID_ARGUMENT`) fails the call, naming its index, and nothing
/// changes. `count` 0 clears every instance's albedo.
///
/// Pointers: `instances` and `albedo` are NULL or readable for `count` entries.
///
/// Threads: one call at a time per GI volume (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_gi_set_albedo(
    gi: KilnGiId,
    instances: *const KilnInstanceId,
    albedo: *const KilnVec3,
    count: u32,
) -> KilnStatus {
    ffi_call("kiln_gi_set_albedo", || {
        // SAFETY: readable for `count` entries per the contract.
        let colours = unsafe {
            crate::abi::read_checked(albedo, count, "albedo", |a: &KilnVec3, name: &str| colour(*a, name, 1.0))?
        };
        // SAFETY: as above.
        let handles = unsafe { crate::abi::read_checked(instances, count, "instances", |&h, _| Ok(h))? };
        VOLUMES.with(gi.index1, gi.generation, |entry| {
            let tracer = entry.tracer;
            with_tracer(tracer, |t| {
                let mut list = Vec::with_capacity(handles.len());
                for (i, (&handle, &colour)) in handles.iter().zip(&colours).enumerate() {
                    list.push((live_instance(t, tracer, handle, &format!("instances[{i}]"))?, colour));
                }
                entry.volume.set_instance_albedo(&t.tracer, &list).map_err(gpu_error)
            })
        })
    })
}

/// Bakes every probe's visibility (16 x 16 octahedral depth maps) against the
/// tracer's scene and compresses it on the GPU. Call it once static geometry is in
/// place, and again when it changes. Needs at least one instance. Submits and
/// waits: on an embedded tracer it is refused with `KILN_ERROR_INVALID_STATE`
/// (record with `kiln_gi_record_bake`).
///
/// Threads: one call at a time per GI volume (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub extern "C" fn kiln_gi_bake(gi: KilnGiId) -> KilnStatus {
    ffi_call("kiln_gi_bake", || {
        with_gi(gi, |volume, tracer| {
            refuse_embedded(tracer, "kiln_gi_bake", "kiln_gi_record_bake")?;
            volume.bake(tracer).map_err(gpu_error)
        })
    })
}

/// Re-bakes the visibility of the probes whose maps reach into the box
/// `[box_min, box_max]`, where static geometry changed (a terrain edit, a door, an
/// instance added, moved or removed), against the tracer's scene as it is now, and
/// recompresses it into the volume's dictionary: no other probe is traced or
/// matched again, and blocks no probe reads any more are reclaimed. Without it,
/// light leaks through geometry added after the bake (the old maps see through
/// it) until the next full `kiln_gi_bake`. Probes that now see something come
/// alive, unlit until updated; probes that see nothing any more die; the others
/// keep their irradiance. Writes what it did to `out_report` (NULL allowed).
///
/// The box must be finite with `box_min <= box_max` on every axis
/// (`KILN_ERROR_INVALID_ARGUMENT`); the volume must be baked
/// (`KILN_ERROR_INVALID_STATE`). A box near no probe re-bakes nothing. Submits and
/// waits: on an embedded tracer it is refused with `KILN_ERROR_INVALID_STATE`
/// (record it with `kiln_gi_record_refresh`).
///
/// Pointers: `out_report` is NULL or writable.
///
/// Threads: one call at a time per GI volume (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_gi_refresh(
    gi: KilnGiId,
    box_min: KilnVec3,
    box_max: KilnVec3,
    out_report: *mut KilnGiRefresh,
) -> KilnStatus {
    ffi_call("kiln_gi_refresh", || {
        let (lo, hi) = refresh_box(box_min, box_max)?;
        let report = with_gi(gi, |volume, tracer| {
            refuse_embedded(tracer, "kiln_gi_refresh", "kiln_gi_record_refresh")?;
            if !volume.stats().baked {
                return Err(Error::new(
                    KILN_ERROR_INVALID_STATE,
                    "the volume is not baked yet: call kiln_gi_bake first",
                ));
            }
            volume.refresh(tracer, lo, hi).map_err(gpu_error)
        })?;
        if !out_report.is_null() {
            write_out(out_report, "out_report", refresh_report(&report))?;
        }
        Ok(())
    })
}

/// Moves a volume created with a probe at every grid point (`def->dilation`
/// negative) by whole probes so that `centre` (the camera, say) lies in its
/// middle cell: the volume follows a point across a world larger than itself.
/// The probes of the planes that enter take the slots of those that leave
/// (modulo addressing: nothing else moves in memory), are baked on the GPU and
/// recompressed into the volume's dictionary, start unlit, and the next
/// `kiln_gi_update` calls take them first. Every other probe keeps its data, so a
/// point inside the volume before and after samples the same irradiance.
/// `kiln_gi_get_gpu_buffers` then describes the moved volume (its version
/// changes). Writes what it did to `out_report` (NULL allowed); a centre within
/// half a spacing of the middle moves nothing.
///
/// `centre` must be finite (`KILN_ERROR_INVALID_ARGUMENT`); a volume placed
/// around geometry (a dilation of 0 or more) or not baked yet is refused with
/// `KILN_ERROR_INVALID_STATE`. Submits and waits: on an embedded tracer it is
/// refused with `KILN_ERROR_INVALID_STATE` (record it with `kiln_gi_record_scroll_to`).
///
/// Pointers: `out_report` is NULL or writable.
///
/// Threads: one call at a time per GI volume (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_gi_scroll_to(
    gi: KilnGiId,
    centre: KilnVec3,
    out_report: *mut KilnGiScroll,
) -> KilnStatus {
    ffi_call("kiln_gi_scroll_to", || {
        let centre = vec3(centre);
        if !centre.is_finite() {
            return Err(invalid(format!("centre {centre} is not finite")));
        }
        let report = with_gi(gi, |volume, tracer| {
            refuse_embedded(tracer, "kiln_gi_scroll_to", "kiln_gi_record_scroll_to")?;
            check_dense(volume)?;
            if !volume.stats().baked {
                return Err(Error::new(
                    KILN_ERROR_INVALID_STATE,
                    "the volume is not baked yet: call kiln_gi_bake first",
                ));
            }
            volume.scroll_to(tracer, centre).map_err(gpu_error)
        })?;
        if !out_report.is_null() {
            write_out(out_report, "out_report", scroll_report(&report))?;
        }
        Ok(())
    })
}

fn refresh_box(box_min: KilnVec3, box_max: KilnVec3) -> Result<(Vec3, Vec3), Error> {
    let (lo, hi) = (vec3(box_min), vec3(box_max));
    if !(lo.is_finite() && hi.is_finite()) || hi.cmplt(lo).any() {
        return Err(invalid(format!(
            "box_min {lo} and box_max {hi}: both must be finite, with box_min <= box_max on every axis"
        )));
    }
    Ok((lo, hi))
}

fn refresh_report(report: &RefreshReport) -> KilnGiRefresh {
    KilnGiRefresh {
        probes: report.probes,
        activated: report.activated,
        deactivated: report.deactivated,
        blocks_matched: report.blocks.matched,
        blocks_added: report.blocks.added,
        blocks_reclaimed: report.blocks.reclaimed,
    }
}

fn scroll_report(report: &ScrollReport) -> KilnGiScroll {
    KilnGiScroll { shift: report.shift, planes: report.planes, probes: report.probes.len() as u32 }
}

/// Only a volume with a probe at every grid point scrolls.
fn check_dense(volume: &GiVolume) -> Result<(), Error> {
    let stats = volume.stats();
    if u64::from(stats.probe_count) != stats.grid_points {
        return Err(Error::new(
            KILN_ERROR_INVALID_STATE,
            "only a volume with a probe at every grid point scrolls: create it with a negative def->dilation",
        ));
    }
    Ok(())
}

/// The volume is on an embedded tracer, dense when it is to `scroll`, baked, and
/// no recorded bake or re-bake of another kind (one `same` does not accept) is
/// in progress.
fn check_recorded(
    volume: &GiVolume,
    tracer: &kiln_core::gpu::RayTracer,
    what: &str,
    instead: &str,
    scroll: bool,
    same: impl Fn(&Rebake) -> bool,
) -> Result<(), Error> {
    if !tracer.gpu().is_embedded() {
        return Err(Error::new(
            KILN_ERROR_INVALID_ARGUMENT,
            format!("the volume's tracer is not embedded (kiln_tracer_create_embedded); use {instead}"),
        ));
    }
    if scroll {
        check_dense(volume)?;
    }
    if volume.bake_pending() {
        return Err(Error::new(
            KILN_ERROR_INVALID_STATE,
            "a recorded bake is in progress: finish it with kiln_gi_record_bake first",
        ));
    }
    if !volume.stats().baked {
        return Err(Error::new(
            KILN_ERROR_INVALID_STATE,
            "the volume is not baked yet: call kiln_gi_record_bake first",
        ));
    }
    match volume.pending_rebake() {
        Some(pending) if !same(&pending) => {
            let (name, call) = match pending {
                Rebake::Refresh { .. } => ("refresh", "kiln_gi_record_refresh"),
                Rebake::Scroll { .. } => ("scroll", "kiln_gi_record_scroll_to"),
            };
            Err(Error::new(
                KILN_ERROR_INVALID_STATE,
                format!("{what}: a recorded {name} is in progress: finish it with {call} first"),
            ))
        }
        _ => Ok(()),
    }
}

/// Writes whether a recorded job is done to `out_done` and, once it is, its
/// report to `out_report` (each unless NULL).
fn write_job<T: Copy>(out_done: *mut bool, out_report: *mut T, report: Option<T>) -> Result<(), Error> {
    if !out_done.is_null() {
        write_out(out_done, "out_done", report.is_some())?;
    }
    match report {
        Some(report) if !out_report.is_null() => write_out(out_report, "out_report", report),
        _ => Ok(()),
    }
}

/// Embedded mode: `kiln_gi_refresh` as calls that each record one step into the
/// engine's command buffers, nothing submitted on the engine's queue (see
/// `kiln_gi_record_bake`). The first call starts the refresh of the probes whose
/// maps reach into `[box_min, box_max]`: it records their bake (or, with
/// `relocate_probes` or `classify_probes`, the first pass of their relocation)
/// and the read-back into `command_buffer` for `frame_slot` and writes false to
/// `out_done` (true, and the report, when no probe is within reach). Each next
/// call, made once the engine's submissions so far completed, takes that
/// refresh on whatever its box, and the one that finishes it recompresses the
/// maps into the volume's dictionary, records their upload and writes true to
/// `out_done` and what it did to `out_report`. Updates recorded before then use
/// the previous visibility; `kiln_gi_record_bake` drops a pending refresh.
///
/// The box is checked as by `kiln_gi_refresh` (`KILN_ERROR_INVALID_ARGUMENT`).
/// Refused with `KILN_ERROR_INVALID_STATE` before the volume's recorded bake
/// finished, and while a recorded bake or scroll is in progress; with
/// `KILN_ERROR_INVALID_ARGUMENT` for a volume on a standalone tracer (use
/// `kiln_gi_refresh`). The contract is `kiln_tracer_record_trace`'s (slots,
/// order, entry and exit barriers).
///
/// Pointers: `command_buffer` is a recording `VkCommandBuffer` of the tracer's
/// device, outside a render pass; `out_done` and `out_report` are NULL or
/// writable (`out_report` is written only when the refresh is done).
///
/// Threads: one call at a time per GI volume (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_gi_record_refresh(
    gi: KilnGiId,
    box_min: KilnVec3,
    box_max: KilnVec3,
    command_buffer: *mut c_void,
    frame_slot: u32,
    out_done: *mut bool,
    out_report: *mut KilnGiRefresh,
) -> KilnStatus {
    ffi_call("kiln_gi_record_refresh", || {
        non_null(command_buffer.cast_const(), "command_buffer")?;
        let (lo, hi) = refresh_box(box_min, box_max)?;
        let cmd = vk::CommandBuffer::from_raw(command_buffer as u64);
        let report = with_gi(gi, |volume, tracer| {
            check_recorded(volume, tracer, "kiln_gi_record_refresh", "kiln_gi_refresh", false, |r| {
                matches!(r, Rebake::Refresh { .. })
            })?;
            // SAFETY: per the contract above.
            unsafe { volume.record_refresh(tracer, lo, hi, cmd, frame_slot) }.map_err(gpu_error)
        })?;
        write_job(out_done, out_report, report.as_ref().map(refresh_report))
    })
}

/// Embedded mode: `kiln_gi_scroll_to` as calls that each record one step, as
/// `kiln_gi_record_refresh` makes a refresh. The first call starts baking the
/// planes of probes that would enter for `centre` and writes false to
/// `out_done` (true, and the report, when the volume need not move); each next
/// call, once the engine's submissions so far completed, takes that scroll on
/// whatever its centre (scroll again to follow a point that moved on), and the
/// one that finishes it recompresses the new maps, records their upload, moves
/// the volume and writes true to `out_done` and what it did to `out_report`.
/// Until then the volume, its updates and `kiln_gi_get_gpu_buffers` stay where
/// they were; after it, call `kiln_gi_get_gpu_buffers` again (its version
/// changes), and the next recorded updates take the new probes first.
///
/// `centre` must be finite (`KILN_ERROR_INVALID_ARGUMENT`). Refused with
/// `KILN_ERROR_INVALID_STATE` for a volume placed around geometry (a dilation of
/// 0 or more), before its recorded bake finished, and while a recorded bake or
/// refresh is in progress; with `KILN_ERROR_INVALID_ARGUMENT` for a volume on a
/// standalone tracer (use `kiln_gi_scroll_to`). The contract is
/// `kiln_tracer_record_trace`'s.
///
/// Pointers: `command_buffer` is a recording `VkCommandBuffer` of the tracer's
/// device, outside a render pass; `out_done` and `out_report` are NULL or
/// writable (`out_report` is written only when the scroll is done).
///
/// Threads: one call at a time per GI volume (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_gi_record_scroll_to(
    gi: KilnGiId,
    centre: KilnVec3,
    command_buffer: *mut c_void,
    frame_slot: u32,
    out_done: *mut bool,
    out_report: *mut KilnGiScroll,
) -> KilnStatus {
    ffi_call("kiln_gi_record_scroll_to", || {
        non_null(command_buffer.cast_const(), "command_buffer")?;
        let centre = vec3(centre);
        if !centre.is_finite() {
            return Err(invalid(format!("centre {centre} is not finite")));
        }
        let cmd = vk::CommandBuffer::from_raw(command_buffer as u64);
        let report = with_gi(gi, |volume, tracer| {
            check_recorded(volume, tracer, "kiln_gi_record_scroll_to", "kiln_gi_scroll_to", true, |r| {
                matches!(r, Rebake::Scroll { .. })
            })?;
            // SAFETY: per the contract above.
            unsafe { volume.record_scroll_to(tracer, centre, cmd, frame_slot) }.map_err(gpu_error)
        })?;
        write_job(out_done, out_report, report.as_ref().map(scroll_report))
    })
}

/// One frame's update: traces the next `probes_per_frame` live probes' rays
/// against the tracer's scene (updated first when it changed), shades them with the
/// sun, sky and the probes' own irradiance (multi-bounce) and blends the result in.
/// Dead probes (a bake found nothing near them) keep no irradiance and are skipped.
/// Writes the number of probes updated to `out_updated` (NULL allowed). Needs at
/// least one instance. Submits and waits: on an embedded tracer it is refused with
/// `KILN_ERROR_INVALID_STATE` (record with `kiln_gi_record_update`).
///
/// Pointers: `out_updated` is NULL or writable.
///
/// Threads: one call at a time per GI volume (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_gi_update(gi: KilnGiId, out_updated: *mut u32) -> KilnStatus {
    ffi_call("kiln_gi_update", || {
        let updated = with_gi(gi, |volume, tracer| {
            refuse_embedded(tracer, "kiln_gi_update", "kiln_gi_record_update")?;
            volume.update(tracer).map_err(gpu_error)
        })?;
        if !out_updated.is_null() {
            write_out(out_updated, "out_updated", updated)?;
        }
        Ok(())
    })
}

/// Embedded mode: the bake (as `kiln_gi_bake`) as calls that each record one
/// step into the engine's command buffers, nothing submitted on the engine's
/// queue; call it until it writes true to `out_done`, each call once the
/// engine's submission of the previous one completed. The first call records
/// the visibility bake, its compression and a read-back of the result into
/// `command_buffer` for `frame_slot` and writes false; the next builds the
/// volume's visibility from the read-back, records its upload and writes true:
/// the volume is baked. With `relocate_probes` or `classify_probes` the bake
/// starts with a pass per relocation step (the probes' rays traced and their
/// hits read back, then moved and classified on the CPU as `kiln_gi_bake` does),
/// up to 4 more calls. Updates recorded in between use the previous visibility.
/// A recorded refresh or scroll in progress is dropped.
///
/// The contract is `kiln_tracer_record_trace`'s (slots, order, entry and exit
/// barriers). A volume on a standalone tracer is refused
/// (`KILN_ERROR_INVALID_ARGUMENT`): use `kiln_gi_bake`.
///
/// Pointers: `command_buffer` is a recording `VkCommandBuffer` of the tracer's
/// device, outside a render pass; `out_done` is NULL or writable.
///
/// Threads: one call at a time per GI volume (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_gi_record_bake(
    gi: KilnGiId,
    command_buffer: *mut c_void,
    frame_slot: u32,
    out_done: *mut bool,
) -> KilnStatus {
    ffi_call("kiln_gi_record_bake", || {
        non_null(command_buffer.cast_const(), "command_buffer")?;
        let cmd = vk::CommandBuffer::from_raw(command_buffer as u64);
        let done = with_gi(gi, |volume, tracer| {
            if !tracer.gpu().is_embedded() {
                return Err(Error::new(
                    KILN_ERROR_INVALID_ARGUMENT,
                    "the volume's tracer is not embedded (kiln_tracer_create_embedded); use kiln_gi_bake",
                ));
            }
            // SAFETY: per the contract above.
            unsafe { volume.record_bake(tracer, cmd, frame_slot) }.map_err(gpu_error)
        })?;
        if !out_done.is_null() {
            write_out(out_done, "out_done", done)?;
        }
        Ok(())
    })
}

/// Embedded mode: records one update (as `kiln_gi_update`: the next probes, round
/// robin, after the tracer's scene update when the scene changed) into the engine's
/// `command_buffer` for `frame_slot`, followed by a read-back of the probes'
/// irradiance; nothing is submitted on the engine's queue. Writes the number of
/// probes the update refreshes to `out_updated` (when not NULL).
///
/// The contract is `kiln_tracer_record_trace`'s (slots, order, entry and exit
/// barriers: an engine's shader recorded after this call may sample the new
/// irradiance, see `kiln_gi_get_gpu_buffers`). `kiln_gi_sample` and
/// `kiln_gi_get_stats` read the recorded irradiance: call them once the engine's
/// submission completed and before the slot is recorded again. A volume on a
/// standalone tracer is refused (`KILN_ERROR_INVALID_ARGUMENT`): use `kiln_gi_update`.
///
/// Pointers: `command_buffer` is a recording `VkCommandBuffer` of the tracer's
/// device, outside a render pass; `out_updated` is NULL or writable.
///
/// Threads: one call at a time per GI volume (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_gi_record_update(
    gi: KilnGiId,
    command_buffer: *mut c_void,
    frame_slot: u32,
    out_updated: *mut u32,
) -> KilnStatus {
    ffi_call("kiln_gi_record_update", || {
        non_null(command_buffer.cast_const(), "command_buffer")?;
        let cmd = vk::CommandBuffer::from_raw(command_buffer as u64);
        let updated = with_gi(gi, |volume, tracer| {
            if !tracer.gpu().is_embedded() {
                return Err(Error::new(
                    KILN_ERROR_INVALID_ARGUMENT,
                    "the volume's tracer is not embedded (kiln_tracer_create_embedded); use kiln_gi_update",
                ));
            }
            // SAFETY: per the contract above.
            unsafe { volume.record_update(tracer, cmd, frame_slot) }.map_err(gpu_error)
        })?;
        if !out_updated.is_null() {
            write_out(out_updated, "out_updated", updated)?;
        }
        Ok(())
    })
}

/// Irradiance at `count` surface points: `points[i]` with unit-length normal
/// `normals[i]`, seen from unit direction `views[i]` (surface toward the eye; NULL:
/// the normals). With `visibility` false the probes' depth maps are ignored, which
/// shows the light leaks they prevent. Writes `out_irradiance[i]` (zero where no
/// live probe is near): the light arriving on the surface, so a diffuse surface of albedo
/// `a` reflects radiance `a / pi * irradiance`. Every input is checked first: finite
/// points, normals and views of length 1 within 1e-3.
///
/// Pointers: `points`, `normals` (and `views` unless NULL) are NULL or readable and
/// `out_irradiance` NULL or writable for `count` entries.
///
/// Threads: one call at a time per GI volume (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_gi_sample(
    gi: KilnGiId,
    points: *const KilnVec3,
    normals: *const KilnVec3,
    views: *const KilnVec3,
    count: u32,
    visibility: bool,
    out_irradiance: *mut KilnVec3,
) -> KilnStatus {
    ffi_call("kiln_gi_sample", || {
        if count == 0 {
            return with_gi(gi, |_, _| Ok(()));
        }
        // SAFETY: per the contract above.
        let queries = unsafe { read_queries(points, normals, views, count)? };
        non_null(out_irradiance, "out_irradiance")?;
        let values = with_gi(gi, |volume, tracer| {
            let params = SampleParams { visibility, ..volume.params.sample };
            volume.sample(tracer, &queries, &params).map_err(gpu_error)
        })?;
        // SAFETY: writable for `count` entries per the contract.
        unsafe { write_irradiance(out_irradiance, &values) };
        Ok(())
    })
}

/// Reads and checks `count` sampling queries: finite points, unit normals and
/// views (the normals where `views` is NULL).
///
/// # Safety
/// `points`, `normals` (and `views` unless NULL) are NULL or readable for `count` entries.
unsafe fn read_queries(
    points: *const KilnVec3,
    normals: *const KilnVec3,
    views: *const KilnVec3,
    count: u32,
) -> Result<Vec<(Vec3, Vec3, Vec3)>, Error> {
    let unit = |v: &KilnVec3, name: &str| {
        let v = vec3(*v);
        if v.is_finite() && (v.length() - 1.0).abs() <= 1e-3 {
            Ok(v)
        } else {
            Err(invalid(format!("{name} is {v}: use a finite unit vector")))
        }
    };
    // SAFETY: readable for `count` entries per the contract.
    let p = unsafe {
        crate::abi::read_checked(points, count, "points", |v: &KilnVec3, name: &str| {
            let v = vec3(*v);
            if v.is_finite() {
                Ok(v)
            } else {
                Err(invalid(format!("{name} is {v}: use a finite point")))
            }
        })?
    };
    // SAFETY: as above.
    let n = unsafe { crate::abi::read_checked(normals, count, "normals", unit)? };
    let v = if views.is_null() {
        n.clone()
    } else {
        // SAFETY: as above.
        unsafe { crate::abi::read_checked(views, count, "views", unit)? }
    };
    Ok((0..count as usize).map(|i| (p[i], n[i], v[i])).collect())
}

/// Writes `values` to `out`.
///
/// # Safety
/// `out` is writable for `values.len()` entries.
unsafe fn write_irradiance(out: *mut KilnVec3, values: &[[f32; 3]]) {
    for (i, e) in values.iter().enumerate() {
        // SAFETY: writable for `values.len()` entries per the contract; `i` is below it.
        unsafe { out.add(i).write(KilnVec3 { x: e[0], y: e[1], z: e[2] }) };
    }
}

/// Most volumes `kiln_gi_sample_cascades` (and `kiln_ddgi.glsl`'s
/// `kiln_gi_irradiance_cascades`) blend.
pub const KILN_GI_MAX_CASCADES: u32 = 8;

/// Irradiance at `count` surface points (as `kiln_gi_sample`) from cascades:
/// volumes of growing spacing around the same place (the camera's, with
/// `kiln_gi_scroll_to` on each), ordered finest first. A point takes the finest
/// volume that holds it; within one probe spacing of that volume's edge it blends
/// into the next coarser one (1 deeper inside, 0 at the edge), so the light has no
/// seam where a cascade ends; the coarsest takes whatever the finer ones left.
/// Each volume samples with its own bias. `kiln_gi_irradiance_cascades` from
/// `kiln_ddgi.glsl` computes the same on an engine's device.
///
/// `cascade_count` is 1 to `KILN_GI_MAX_CASCADES`; the volumes are distinct,
/// valid, and their spacings do not shrink along the list
/// (`KILN_ERROR_INVALID_ARGUMENT` naming the first that does). The points are
/// checked as by `kiln_gi_sample`.
///
/// Pointers: `cascades` is NULL or readable for `cascade_count` entries;
/// `points`, `normals` (and `views` unless NULL) are NULL or readable and
/// `out_irradiance` NULL or writable for `count` entries.
///
/// Threads: one call at a time per GI volume (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_gi_sample_cascades(
    cascades: *const KilnGiId,
    cascade_count: u32,
    points: *const KilnVec3,
    normals: *const KilnVec3,
    views: *const KilnVec3,
    count: u32,
    visibility: bool,
    out_irradiance: *mut KilnVec3,
) -> KilnStatus {
    ffi_call("kiln_gi_sample_cascades", || {
        if cascade_count == 0 || cascade_count > KILN_GI_MAX_CASCADES {
            return Err(invalid(format!(
                "cascade_count is {cascade_count}: blend 1 to {KILN_GI_MAX_CASCADES} volumes"
            )));
        }
        // SAFETY: readable for `cascade_count` entries per the contract.
        let ids = unsafe { crate::abi::read_checked(cascades, cascade_count, "cascades", |id: &KilnGiId, _| Ok(*id))? };
        let mut spacing = 0.0f32;
        for (i, id) in ids.iter().enumerate() {
            if ids[..i].contains(id) {
                return Err(invalid(format!("cascades[{i}] repeats an earlier volume: pass each once")));
            }
            let s = VOLUMES.with(id.index1, id.generation, |entry| Ok(entry.volume.grid().spacing))?;
            if s < spacing {
                return Err(invalid(format!(
                    "cascades[{i}] has spacing {s}, finer than the {spacing} before it: order the volumes finest first"
                )));
            }
            spacing = s;
        }
        if count == 0 {
            return Ok(());
        }
        // SAFETY: per the contract above.
        let queries = unsafe { read_queries(points, normals, views, count)? };
        non_null(out_irradiance, "out_irradiance")?;
        // One volume at a time (one lock at a time), each adding its share.
        let mut blends = vec![CascadeBlend::default(); queries.len()];
        for (i, id) in ids.iter().enumerate() {
            let coarsest = i + 1 == ids.len();
            with_gi(*id, |volume, tracer| {
                let params = SampleParams { visibility, ..volume.params.sample };
                let field = volume.field(tracer).map_err(gpu_error)?;
                for (blend, &(p, n, v)) in blends.iter_mut().zip(&queries) {
                    let w = blend.weight(field, p, coarsest);
                    if w > 0.0 {
                        blend.add(w, field.sample(p, n, v, &params));
                    }
                }
                Ok(())
            })?;
        }
        let values: Vec<[f32; 3]> = blends.iter().map(|b| b.sum).collect();
        // SAFETY: writable for `count` entries per the contract.
        unsafe { write_irradiance(out_irradiance, &values) };
        Ok(())
    })
}

/// Writes the volume's figures (probe counts, compression, memory) to `out_stats`.
///
/// Pointers: `out_stats` is NULL or writable.
///
/// Threads: one call at a time per GI volume (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_gi_get_stats(gi: KilnGiId, out_stats: *mut KilnGiStats) -> KilnStatus {
    ffi_call("kiln_gi_get_stats", || {
        non_null(out_stats, "out_stats")?;
        let s = VOLUMES.with(gi.index1, gi.generation, |entry| Ok(entry.volume.stats()))?;
        write_out(
            out_stats,
            "out_stats",
            KilnGiStats {
                grid_points: s.grid_points,
                probe_count: s.probe_count,
                dead_probes: s.dead_probes,
                moved_probes: s.moved_probes,
                blocks: s.blocks,
                frames: s.frames,
                last_update_probes: s.last_update_probes,
                baked: s.baked,
                bytes: s.bytes,
                visibility_bytes: s.visibility_bytes,
                visibility_bytes_uncompressed: s.visibility_bytes_uncompressed,
            },
        )
    })
}

/// A probe volume's device data, from `kiln_gi_get_gpu_buffers`: what an engine's
/// shader needs to sample irradiance with `kiln_gi_irradiance()` from the installed
/// `kiln_ddgi.glsl` (`share/kiln/glsl`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KilnGiBuffers {
    /// The sampling parameters (`KilnGiUpdateParams`, 272 bytes): the grid, the
    /// bias and the addresses of the data below. Pass its `device_address` to
    /// `kiln_gi_irradiance` (a `uvec2`).
    pub params: KilnGpuBuffer,
    /// Packed irradiance (16 bytes per live probe).
    pub irradiance: KilnGpuBuffer,
    /// The compressed visibility's block table.
    pub visibility_blocks: KilnGpuBuffer,
    /// Changes whenever any buffer the parameters point at is made anew (a bake)
    /// or the parameters changed: descriptors holding the handles must then be
    /// rewritten. Addresses pushed every frame need nothing.
    pub version: u64,
}

/// Writes the device data of a probe volume on an embedded tracer's device to
/// `out_buffers` (see `KilnGiBuffers`), so that the engine's shaders sample the
/// probes' irradiance, weighted by visibility, with `kiln_gi_irradiance()` from
/// `kiln_ddgi.glsl`: the values `kiln_gi_sample` returns with `visibility` true,
/// within float rounding. The data is the volume's as of the last bake or update;
/// an update (`kiln_gi_update`) changes the irradiance in place, a bake makes new
/// buffers (a new `version`). Call it again after either. The engine only reads them; commands
/// recorded after the call see Kiln's earlier work (`kiln_gi_update` completes it
/// before returning).
///
/// Refused (`KILN_ERROR_INVALID_ARGUMENT`) for a volume whose tracer is not embedded:
/// its buffers live on Kiln's own device; (`KILN_ERROR_INVALID_STATE`) before the
/// volume's first recorded bake or update put its data on the device.
///
/// Pointers: `out_buffers` is writable.
///
/// Threads: one call at a time per GI volume (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_gi_get_gpu_buffers(gi: KilnGiId, out_buffers: *mut KilnGiBuffers) -> KilnStatus {
    ffi_call("kiln_gi_get_gpu_buffers", || {
        non_null(out_buffers, "out_buffers")?;
        let buffers = with_gi(gi, |volume, tracer| {
            if !tracer.gpu().is_embedded() {
                return Err(Error::new(
                    KILN_ERROR_INVALID_ARGUMENT,
                    "the volume's tracer is not embedded (kiln_tracer_create_embedded); its buffers live on Kiln's own device",
                ));
            }
            if !volume.on_device() {
                return Err(Error::new(
                    KILN_ERROR_INVALID_STATE,
                    "the volume's data is not on the device yet: record a bake or an update first \
                     (kiln_gi_record_bake, kiln_gi_record_update)",
                ));
            }
            volume.gpu_buffers(tracer).map_err(gpu_error)
        })?;
        let view = |b: kiln_core::gpu::BufferView| KilnGpuBuffer {
            buffer: b.buffer.as_raw(),
            size: b.size,
            device_address: b.address,
        };
        write_out(
            out_buffers,
            "out_buffers",
            KilnGiBuffers {
                params: view(buffers.params),
                irradiance: view(buffers.irradiance),
                visibility_blocks: view(buffers.visibility_blocks),
                version: buffers.version,
            },
        )
    })
}
