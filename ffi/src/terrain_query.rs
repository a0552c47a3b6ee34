//! Terrain narrowphase queries through the C ABI: ray casts (single and batch),
//! triangle box queries, the chunk mesh cache's budget and statistics, and the ray
//! casts' region trees (on or off, statistics).

use kiln_core::math::{Ray, Vec3};
use kiln_core::spatial::MeshMode;
use kiln_core::terrain::{CacheStats, Terrain, TerrainHit};

use crate::abi::{ffi_call, non_null, read_checked, CountedOut, Error, KilnStatus, KILN_ERROR_INVALID_ARGUMENT};
use crate::runtime::on_runtime;
use crate::runtime::KilnRuntimeId;
use crate::terrain::{with_terrain, KilnTerrainId};
use crate::types::{kint, read_aabb, KilnAabb, KilnInt3, KilnVec3};

/// A ray: `origin + distance * normalize(direction)`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct KilnRay {
    /// Start point (finite).
    pub origin: KilnVec3,
    /// Direction (finite, not zero; need not be unit length).
    pub direction: KilnVec3,
}

/// The closest hit of a ray on the terrain surface.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct KilnTerrainRayHit {
    /// Whether the ray hit within its maximum distance; the other fields are zero
    /// when it did not.
    pub hit: bool,
    /// Solid material of the hit triangle.
    pub material: u8,
    /// Distance from the origin in metres.
    pub distance: f32,
    /// Hit point.
    pub point: KilnVec3,
    /// Unit surface normal pointing out of the solid (a ray starting inside solid
    /// terrain sees `dot(normal, direction) > 0`).
    pub normal: KilnVec3,
    /// Chunk whose mesh holds the triangle (voxel coordinate / 8, rounded down).
    pub chunk: KilnInt3,
    /// Triangle index in that chunk's mesh.
    pub triangle: u32,
}

/// One terrain triangle, from `kiln_terrain_query_triangles`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct KilnTerrainTriangle {
    /// Corners, counter-clockwise seen from outside the solid.
    pub vertices: [KilnVec3; 3],
    /// Chunk whose mesh holds the triangle.
    pub chunk: KilnInt3,
    /// Triangle index in that chunk's mesh.
    pub index: u32,
    /// Solid material.
    pub material: u8,
}

/// Figures of a terrain's chunk mesh cache.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KilnMeshCacheStats {
    /// Bytes held: meshes, trees and a fixed per-chunk overhead.
    pub bytes: u64,
    /// The byte budget (`KilnTerrainDef::mesh_cache_bytes`).
    pub budget: u64,
    /// Cached chunks, with or without triangles.
    pub chunks: u32,
    /// `KILN_MESH_MODE_FULL` or `KILN_MESH_MODE_COMPACT`.
    pub mesh_mode: u32,
    /// Triangles held.
    pub triangles: u64,
    /// Chunk meshes built since creation.
    pub builds: u64,
    /// Chunk meshes dropped to fit the budget.
    pub evictions: u64,
    /// Chunk meshes dropped because an edit changed their voxels.
    pub invalidations: u64,
}

fn vec3(v: KilnVec3) -> Vec3 {
    Vec3::new(v.x, v.y, v.z)
}

fn kvec(v: Vec3) -> KilnVec3 {
    KilnVec3 { x: v.x, y: v.y, z: v.z }
}

/// Checks a ray and returns it with a unit direction, so `t` is a distance.
pub(crate) fn check_ray(r: &KilnRay, name: &str) -> Result<Ray, Error> {
    let (origin, dir) = (vec3(r.origin), vec3(r.direction));
    let unit = dir.normalize_or_zero();
    if !origin.is_finite() || !dir.is_finite() || unit == Vec3::ZERO {
        return Err(Error::new(
            KILN_ERROR_INVALID_ARGUMENT,
            format!("`{name}` {r:?} needs a finite origin and a finite, non-zero direction"),
        ));
    }
    Ok(Ray::new(origin, unit))
}

pub(crate) fn check_distance(max_distance: f32) -> Result<f32, Error> {
    if max_distance.is_nan() || max_distance < 0.0 {
        return Err(Error::new(
            KILN_ERROR_INVALID_ARGUMENT,
            format!("max_distance is {max_distance}, must be >= 0 (INFINITY allowed)"),
        ));
    }
    Ok(max_distance)
}

fn to_c(hit: Option<TerrainHit>) -> KilnTerrainRayHit {
    match hit {
        None => KilnTerrainRayHit::default(),
        Some(h) => KilnTerrainRayHit {
            hit: true,
            material: h.material.0,
            distance: h.t,
            point: kvec(h.point),
            normal: kvec(h.normal),
            chunk: kint(h.chunk),
            triangle: h.triangle,
        },
    }
}

/// Casts one ray against the terrain surface and writes its closest hit within
/// `max_distance` metres to `out_hit` (`hit` false when there is none). Chunks the
/// ray reaches are meshed on first use (on the calling thread) and cached. Once 64
/// rays have reached a region of 16^3 chunks, a cast builds that region's tree (a
/// four-wide BVH over its triangles; at most one a cast) and later rays walk it
/// instead of the chunks: the same hits, in about half the time. Edits are seen at
/// once, before `kiln_terrain_regenerate`; an edited region walks its chunks until
/// 30 regenerations have passed without another edit there.
///
/// Pointers: `ray` is NULL or readable; `out_hit` is NULL or writable.
///
/// Threads: one call at a time per terrain (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_terrain_ray_cast(
    terrain: KilnTerrainId,
    ray: *const KilnRay,
    max_distance: f32,
    out_hit: *mut KilnTerrainRayHit,
) -> KilnStatus {
    ffi_call("kiln_terrain_ray_cast", || {
        let ray = non_null(ray, "ray")?;
        let out = non_null(out_hit, "out_hit")?;
        // SAFETY: non-null; readable per the contract.
        let ray = check_ray(&unsafe { ray.read() }, "ray")?;
        let max_distance = check_distance(max_distance)?;
        let hit = with_terrain(terrain, |t| Ok(t.ray_cast(&ray, max_distance)))?;
        // SAFETY: non-null and writable per the contract.
        unsafe { out.cast_mut().write(to_c(hit)) };
        Ok(())
    })
}

/// Casts `count` rays as parallel jobs on `runtime`'s workers (the null handle
/// `{0, 0}` runs them on the calling thread) and writes ray `i`'s closest hit to
/// `out_hits[i]`. Chunks first reached in the batch are meshed in parallel, and up
/// to 16 region trees now due (see `kiln_terrain_ray_cast`) built in parallel.
/// Results do not depend on the worker count. Every ray is checked first: one bad ray fails
/// the call (naming its index) and writes nothing. `count` 0 does nothing (NULL
/// arrays allowed). Must not be called from inside one of the runtime's passes.
///
/// Pointers: `rays` is readable and `out_hits` writable for `count` entries (or NULL
/// when `count` is 0).
///
/// Threads: one call at a time per terrain (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_terrain_ray_cast_batch(
    terrain: KilnTerrainId,
    runtime: KilnRuntimeId,
    rays: *const KilnRay,
    count: u32,
    max_distance: f32,
    out_hits: *mut KilnTerrainRayHit,
) -> KilnStatus {
    ffi_call("kiln_terrain_ray_cast_batch", || {
        let max_distance = check_distance(max_distance)?;
        if count == 0 {
            return with_terrain(terrain, |_| Ok(()));
        }
        // SAFETY: readable for `count` entries per the contract.
        let rays = unsafe { read_checked(rays, count, "rays", check_ray)? };
        let out = non_null(out_hits, "out_hits")?;
        let mut hits = vec![None; rays.len()];
        on_runtime(runtime, |jobs| {
            with_terrain(terrain, |t| {
                t.ray_cast_batch(&rays, max_distance, &mut hits, jobs);
                Ok(())
            })
        })?;
        for (i, hit) in hits.into_iter().enumerate() {
            // SAFETY: writable for `count` entries per the contract; `i < count`.
            unsafe { out.cast_mut().add(i).write(to_c(hit)) };
        }
        Ok(())
    })
}

/// Lists the terrain triangles touching `aabb` (exact triangle/box test), chunk by
/// chunk in ascending (y, z, x) order: writes up to `capacity` of them to
/// `out_triangles` (NULL allowed when `capacity` is 0) and the total to `out_count`,
/// so a call with capacity 0 sizes the array. Chunks come from the bit broadphase
/// (call `kiln_terrain_regenerate` after edits) and are meshed on first use, as jobs
/// on `runtime` (null handle: the calling thread).
///
/// Pointers: `aabb` is NULL or readable; `out_triangles` is NULL or writable for
/// `capacity` entries; `out_count` is NULL or writable.
///
/// Threads: one call at a time per terrain (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_terrain_query_triangles(
    terrain: KilnTerrainId,
    runtime: KilnRuntimeId,
    aabb: *const KilnAabb,
    out_triangles: *mut KilnTerrainTriangle,
    capacity: u32,
    out_count: *mut u32,
) -> KilnStatus {
    ffi_call("kiln_terrain_query_triangles", || {
        let aabb = read_aabb(aabb, "aabb")?;
        let out_count = non_null(out_count, "out_count")?;
        // SAFETY: writable for `capacity` entries per the contract.
        let mut out = unsafe { CountedOut::new(out_triangles, capacity, "out_triangles")? };
        let count = on_runtime(runtime, |jobs| {
            with_terrain(terrain, |t| {
                t.query_triangles(&aabb, jobs, |tri| {
                    out.push(KilnTerrainTriangle {
                        vertices: tri.vertices.map(kvec),
                        chunk: kint(tri.chunk),
                        index: tri.index,
                        material: tri.material.0,
                    });
                    true
                });
                Ok(out.count())
            })
        })?;
        // SAFETY: non-null and writable per the contract.
        unsafe { out_count.cast_mut().write(count) };
        Ok(())
    })
}

/// Sets the chunk mesh cache's byte budget; least recently used chunk meshes are
/// dropped at once to fit. The ray casts' region trees get a budget of the same
/// size (see `KilnTerrainDef::mesh_cache_bytes`), and are dropped likewise.
///
/// Threads: one call at a time per terrain (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub extern "C" fn kiln_terrain_set_mesh_cache_budget(terrain: KilnTerrainId, bytes: u64) -> KilnStatus {
    ffi_call("kiln_terrain_set_mesh_cache_budget", || {
        with_terrain(terrain, |t| {
            t.set_mesh_budget(usize::try_from(bytes).unwrap_or(usize::MAX));
            Ok(())
        })
    })
}

/// Writes the chunk mesh cache's figures to `out_stats`.
///
/// Pointers: `out_stats` is NULL or valid for writing.
///
/// Threads: one call at a time per terrain (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_terrain_get_mesh_cache_stats(
    terrain: KilnTerrainId,
    out_stats: *mut KilnMeshCacheStats,
) -> KilnStatus {
    ffi_call("kiln_terrain_get_mesh_cache_stats", || {
        let out = non_null(out_stats, "out_stats")?;
        let stats = with_terrain(terrain, |t| Ok(to_c_stats(t, t.meshes().stats())))?;
        // SAFETY: non-null and writable per the contract.
        unsafe { out.cast_mut().write(stats) };
        Ok(())
    })
}

/// Turns the ray casts' region trees on (the default) or off. Off drops every tree
/// at once and rays walk the terrain chunk by chunk; on, trees are built again as
/// rays reach regions (see `kiln_terrain_ray_cast`). The hits are the same bit for
/// bit either way: this trades memory (up to the mesh cache's budget again) for ray
/// speed.
///
/// Threads: one call at a time per terrain (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub extern "C" fn kiln_terrain_set_ray_regions(terrain: KilnTerrainId, enabled: bool) -> KilnStatus {
    ffi_call("kiln_terrain_set_ray_regions", || {
        with_terrain(terrain, |t| {
            t.set_ray_regions(enabled);
            Ok(())
        })
    })
}

/// Writes the ray casts' region trees' figures to `out_stats`, in the mesh cache's
/// struct: `chunks` counts the regions (16^3 chunks each) that hold a tree, `bytes`
/// and `triangles` what those trees hold, `budget` their byte budget (the mesh
/// cache's), `builds` the trees built since creation, `evictions` the trees dropped
/// to fit the budget, `invalidations` the trees dropped because an edit re-shaped
/// their region; `mesh_mode` is the terrain's mesh mode.
///
/// Pointers: `out_stats` is NULL or valid for writing.
///
/// Threads: one call at a time per terrain (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_terrain_get_ray_region_stats(
    terrain: KilnTerrainId,
    out_stats: *mut KilnMeshCacheStats,
) -> KilnStatus {
    ffi_call("kiln_terrain_get_ray_region_stats", || {
        let out = non_null(out_stats, "out_stats")?;
        let stats = with_terrain(terrain, |t| Ok(to_c_stats(t, t.region_stats())))?;
        // SAFETY: non-null and writable per the contract.
        unsafe { out.cast_mut().write(stats) };
        Ok(())
    })
}

fn to_c_stats(t: &Terrain, s: CacheStats) -> KilnMeshCacheStats {
    KilnMeshCacheStats {
        bytes: s.bytes as u64,
        budget: s.budget as u64,
        chunks: s.entries as u32,
        mesh_mode: match t.meshes().mode() {
            MeshMode::Full => crate::terrain::KILN_MESH_MODE_FULL,
            MeshMode::Compact => crate::terrain::KILN_MESH_MODE_COMPACT,
        },
        triangles: s.triangles as u64,
        builds: s.builds,
        evictions: s.evictions,
        invalidations: s.invalidations,
    }
}
