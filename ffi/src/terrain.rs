//! Voxel terrain through the C ABI: create, edit voxel regions, regenerate the bit
//! broadphase masks (on a runtime's workers), and run overlap queries.

use std::mem::size_of;

use kiln_core::spatial::MeshMode;
use kiln_core::terrain::{generate_hills, Material, Terrain, DEFAULT_CACHE_BUDGET};

use crate::abi::{
    ffi_call, non_null, read_def, CountedOut, Error, KilnStatus, KILN_ERROR_INTERNAL, KILN_ERROR_INVALID_ARGUMENT,
    KILN_ERROR_INVALID_STATE,
};
use crate::handles::HandleTable;
use crate::runtime::{on_runtime, KilnRuntimeId};
use crate::types::{ivec, kint, read_aabb, KilnAabb, KilnInt3};
use crate::world::{with_world_terrain, KilnWorldId};

/// Handle to a voxel terrain. `{0, 0}` is the null handle. Pass by value.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KilnTerrainId {
    /// Slot index plus one (0 means null).
    pub index1: u32,
    /// Slot generation; a destroyed terrain's handles no longer match.
    pub generation: u32,
}

/// Air: no collision. Materials are one byte per voxel.
pub const KILN_MATERIAL_AIR: u8 = 0;
/// Water: reported as water contacts (buoyancy), not solid.
pub const KILN_MATERIAL_WATER: u8 = 1;
/// Rock, the first solid material. Every value from 2 to 255 is solid.
pub const KILN_MATERIAL_ROCK: u8 = 2;
/// Grass (solid).
pub const KILN_MATERIAL_GRASS: u8 = 3;
/// Sand (solid).
pub const KILN_MATERIAL_SAND: u8 = 4;

/// Most voxels one `kiln_terrain_fill` call may cover (2^27, e.g. 512^3).
pub const KILN_TERRAIN_MAX_FILL_VOXELS: u64 = 1 << 27;

/// Chunk meshes with f32 vertices and 12-byte kD-tree nodes (~21 bytes of mesh and
/// 12 of tree per triangle).
pub const KILN_MESH_MODE_FULL: u32 = 0;
/// Chunk meshes with 16-bit quantised vertices and 6-byte nodes (~11 + 6 bytes per
/// triangle). Vertices move by at most half a quantisation step: the chunk mesh's
/// extent / 131070 per axis (about 0.04 mm for 0.5 m voxels).
pub const KILN_MESH_MODE_COMPACT: u32 = 1;

/// Terrain creation parameters. Initialise with `kiln_default_terrain_def()`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct KilnTerrainDef {
    /// `sizeof(KilnTerrainDef)`, set by `kiln_default_terrain_def()`.
    pub struct_size: u32,
    /// Edge length of a voxel in metres (finite, > 0). Default 1.
    pub voxel_size: f32,
    /// `KILN_MESH_MODE_FULL` (default) or `KILN_MESH_MODE_COMPACT`: how the lazily
    /// built chunk meshes used by ray casts and triangle queries are stored.
    pub mesh_mode: u32,
    /// Byte budget of the chunk mesh cache (default 64 MiB). Least recently used
    /// chunk meshes are dropped after a query to fit; 0 keeps none between queries.
    /// Ray casts' region trees (four-wide BVHs over 16^3 chunks that rays keep
    /// reaching) have a budget of the same size of their own; 0 builds none.
    pub mesh_cache_bytes: u64,
}

/// What a box touches in the terrain's broadphase masks.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KilnTerrainOverlap {
    /// The box touches a voxel marked solid (a solid voxel or its neighbour).
    pub solid: bool,
    /// The box touches a voxel marked water.
    pub water: bool,
}

/// One chunk a box touches, from `kiln_terrain_overlap_chunks`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KilnChunkOverlap {
    /// Chunk coordinate (voxel coordinate divided by 8, rounded down).
    pub chunk: KilnInt3,
    /// Solid and water bits under the box in this chunk.
    pub overlap: KilnTerrainOverlap,
}

/// Memory and state figures of a terrain.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KilnTerrainStats {
    /// Chunks holding voxel data (not all air).
    pub stored_chunks: u32,
    /// Chunks with broadphase masks (near geometry): 128 bytes each.
    pub mixed_chunks: u32,
    /// Chunks tagged all solid or all water: no mask data.
    pub full_chunks: u32,
    /// Chunks edited since the last `kiln_terrain_regenerate`.
    pub dirty_chunks: u32,
    /// Bytes of mask data (`mixed_chunks * 128`: at most 2 bits per voxel).
    pub mask_bytes: u64,
}

/// A terrain behind a handle: owned here, or lent to a world (`kiln_world_set_terrain`),
/// where calls through the terrain's handle reach it. (One entry per terrain, behind
/// its own allocation: the variants' size difference costs nothing.)
#[allow(clippy::large_enum_variant)]
enum TerrainEntry {
    Own(Terrain),
    InWorld(KilnWorldId),
}

static TERRAINS: HandleTable<TerrainEntry> = HandleTable::new("terrain");

pub(crate) fn with_terrain<R>(id: KilnTerrainId, f: impl FnOnce(&mut Terrain) -> Result<R, Error>) -> Result<R, Error> {
    TERRAINS.with(id.index1, id.generation, |entry| match entry {
        TerrainEntry::Own(terrain) => f(terrain),
        TerrainEntry::InWorld(world) => with_world_terrain(*world, |w| {
            let terrain = w.terrain_mut().ok_or_else(|| Error::new(KILN_ERROR_INTERNAL, "attached terrain missing"))?;
            f(terrain)
        }),
    })
}

/// Lends a terrain to `world`: returns it and marks the handle as attached.
pub(crate) fn attach_terrain(id: KilnTerrainId, world: KilnWorldId) -> Result<Terrain, Error> {
    TERRAINS.with(id.index1, id.generation, |entry| match entry {
        TerrainEntry::Own(_) => match std::mem::replace(entry, TerrainEntry::InWorld(world)) {
            TerrainEntry::Own(terrain) => Ok(terrain),
            TerrainEntry::InWorld(_) => unreachable!("matched Own above"),
        },
        TerrainEntry::InWorld(other) => Err(Error::new(
            KILN_ERROR_INVALID_STATE,
            format!("terrain {id:?} is attached to world {other:?}; detach it first (kiln_world_set_terrain with the null terrain)"),
        )),
    })
}

/// Gives a lent terrain back to its handle.
pub(crate) fn detach_terrain(id: KilnTerrainId, terrain: Terrain) -> Result<(), Error> {
    TERRAINS.with_wait(id.index1, id.generation, |entry| {
        *entry = TerrainEntry::Own(terrain);
        Ok(())
    })
}

/// A `KilnTerrainDef` with defaults (1 m voxels).
///
/// Threads: any thread, at any time.
#[no_mangle]
pub extern "C" fn kiln_default_terrain_def() -> KilnTerrainDef {
    KilnTerrainDef {
        struct_size: size_of::<KilnTerrainDef>() as u32,
        voxel_size: 1.0,
        mesh_mode: KILN_MESH_MODE_FULL,
        mesh_cache_bytes: DEFAULT_CACHE_BUDGET as u64,
    }
}

/// Creates an empty (all-air) terrain and writes its handle to `out_terrain`.
///
/// Pointers: `def` and `out_terrain` are NULL or valid for reading / writing.
///
/// Threads: any thread, at any time.
#[no_mangle]
pub unsafe extern "C" fn kiln_terrain_create(
    def: *const KilnTerrainDef,
    out_terrain: *mut KilnTerrainId,
) -> KilnStatus {
    ffi_call("kiln_terrain_create", || {
        let def = non_null(def, "def")?;
        let out = non_null(out_terrain, "out_terrain")?;
        // SAFETY: non-null; readable per the contract.
        let def: KilnTerrainDef = unsafe { read_def(def, "def")? };
        if !(def.voxel_size.is_finite() && def.voxel_size > 0.0) {
            return Err(Error::new(
                KILN_ERROR_INVALID_ARGUMENT,
                format!("def->voxel_size is {}, must be finite and > 0", def.voxel_size),
            ));
        }
        let mode = match def.mesh_mode {
            KILN_MESH_MODE_FULL => MeshMode::Full,
            KILN_MESH_MODE_COMPACT => MeshMode::Compact,
            other => {
                return Err(Error::new(
                    KILN_ERROR_INVALID_ARGUMENT,
                    format!("def->mesh_mode is {other}, must be KILN_MESH_MODE_FULL or KILN_MESH_MODE_COMPACT"),
                ))
            }
        };
        let mut terrain = Terrain::new(def.voxel_size);
        terrain.set_mesh_mode(mode);
        terrain.set_mesh_budget(usize::try_from(def.mesh_cache_bytes).unwrap_or(usize::MAX));
        let (index1, generation) = TERRAINS.insert(TerrainEntry::Own(terrain));
        // SAFETY: non-null and writable per the contract.
        unsafe { out.cast_mut().write(KilnTerrainId { index1, generation }) };
        Ok(())
    })
}

/// Destroys a terrain; its handle becomes invalid. A terrain attached to a world is
/// refused (`KILN_ERROR_INVALID_STATE`): detach it or destroy the world first.
///
/// Threads: one call at a time per terrain (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub extern "C" fn kiln_terrain_destroy(terrain: KilnTerrainId) -> KilnStatus {
    ffi_call("kiln_terrain_destroy", || {
        TERRAINS.with(terrain.index1, terrain.generation, |entry| match entry {
            TerrainEntry::Own(_) => Ok(()),
            TerrainEntry::InWorld(world) => Err(Error::new(
                KILN_ERROR_INVALID_STATE,
                format!("the terrain is attached to world {world:?}; detach it or destroy the world first"),
            )),
        })?;
        drop(TERRAINS.remove(terrain.index1, terrain.generation)?);
        Ok(())
    })
}

/// Whether `terrain` refers to a live terrain.
///
/// Threads: any thread, at any time; never busy.
#[no_mangle]
pub extern "C" fn kiln_terrain_is_valid(terrain: KilnTerrainId) -> bool {
    std::panic::catch_unwind(|| TERRAINS.is_valid(terrain.index1, terrain.generation)).unwrap_or(false)
}

/// Sets every voxel in the inclusive range `min to max` to `material` and marks the
/// chunks whose masks change dirty (call `kiln_terrain_regenerate` before querying).
/// The range must satisfy `min <= max` on every axis and cover at most
/// `KILN_TERRAIN_MAX_FILL_VOXELS` voxels. Writes the number of voxels that changed to
/// `out_changed` unless it is NULL.
///
/// Pointers: `out_changed` is NULL or valid for writing.
///
/// Threads: one call at a time per terrain (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_terrain_fill(
    terrain: KilnTerrainId,
    min: KilnInt3,
    max: KilnInt3,
    material: u8,
    out_changed: *mut u64,
) -> KilnStatus {
    ffi_call("kiln_terrain_fill", || {
        let (lo, hi) = (ivec(min), ivec(max));
        if !lo.cmple(hi).all() {
            return Err(Error::new(KILN_ERROR_INVALID_ARGUMENT, format!("min {min:?} is not <= max {max:?}")));
        }
        let extent = |a: i32, b: i32| (b as i64 - a as i64 + 1) as u64;
        let voxels = extent(lo.x, hi.x).saturating_mul(extent(lo.y, hi.y)).saturating_mul(extent(lo.z, hi.z));
        if voxels > KILN_TERRAIN_MAX_FILL_VOXELS {
            return Err(Error::new(
                KILN_ERROR_INVALID_ARGUMENT,
                format!("the range covers {voxels} voxels, more than KILN_TERRAIN_MAX_FILL_VOXELS"),
            ));
        }
        // Chunk arithmetic needs one voxel of room around the range.
        if lo.min_element() == i32::MIN || hi.max_element() == i32::MAX {
            return Err(Error::new(
                KILN_ERROR_INVALID_ARGUMENT,
                "voxel coordinates must lie inside (INT32_MIN, INT32_MAX)",
            ));
        }
        let changed = with_terrain(terrain, |t| Ok(t.fill(lo, hi, Material(material))))?;
        if !out_changed.is_null() {
            // SAFETY: non-null and writable per the contract.
            unsafe { out_changed.write(changed as u64) };
        }
        Ok(())
    })
}

/// Makes the terrain's voxels as they are now the base that world snapshots record
/// its edits against (`kiln_world_save`), and drops the copies it kept of chunks as
/// they were at the old base. Attaching the terrain to a world does the same. Call
/// it once no snapshot saved before now will be restored (a rollback game's
/// confirmed frame): later snapshots then carry only the chunks edited since, and
/// the terrain keeps a copy only of those. `kiln_world_restore` refuses snapshots
/// saved against the old base afterwards (`KILN_ERROR_INVALID_STATE`) unless the
/// voxels are again as they were then. Reads every chunk once.
///
/// Threads: one call at a time per terrain (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub extern "C" fn kiln_terrain_rebase(terrain: KilnTerrainId) -> KilnStatus {
    ffi_call("kiln_terrain_rebase", || {
        with_terrain(terrain, |t| {
            t.rebase();
            Ok(())
        })
    })
}

/// Writes the material of one voxel to `out_material`.
///
/// Pointers: `out_material` is NULL or valid for writing.
///
/// Threads: one call at a time per terrain (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_terrain_get_voxel(
    terrain: KilnTerrainId,
    voxel: KilnInt3,
    out_material: *mut u8,
) -> KilnStatus {
    ffi_call("kiln_terrain_get_voxel", || {
        let out = non_null(out_material, "out_material")?;
        let material = with_terrain(terrain, |t| Ok(t.get(ivec(voxel)).0))?;
        // SAFETY: non-null and writable per the contract.
        unsafe { out.cast_mut().write(material) };
        Ok(())
    })
}

/// Fills columns `x, z` in 0 to `size` - 1 with Kiln's deterministic test terrain: hills of
/// rock, grass and sand, water up to `y = 12`, a few caves (`size` 1 to 4096).
///
/// Threads: one call at a time per terrain (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub extern "C" fn kiln_terrain_generate_hills(terrain: KilnTerrainId, size: i32, seed: u32) -> KilnStatus {
    ffi_call("kiln_terrain_generate_hills", || {
        if !(1..=4096).contains(&size) {
            return Err(Error::new(KILN_ERROR_INVALID_ARGUMENT, format!("size is {size}, must be 1..=4096")));
        }
        with_terrain(terrain, |t| {
            generate_hills(t, size, seed);
            Ok(())
        })
    })
}

/// Rebuilds the broadphase masks of every dirty chunk as parallel jobs on `runtime`'s
/// workers (pass the null handle `{0, 0}` to run on the calling thread). On a terrain
/// attached to a world this also wakes the sleeping bodies on the edited chunks. Must not be
/// called from inside one of the runtime's passes. Writes the number of regenerated
/// chunks to `out_chunks` unless it is NULL.
///
/// Pointers: `out_chunks` is NULL or valid for writing.
///
/// Threads: one call at a time per terrain (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_terrain_regenerate(
    terrain: KilnTerrainId,
    runtime: KilnRuntimeId,
    out_chunks: *mut u32,
) -> KilnStatus {
    ffi_call("kiln_terrain_regenerate", || {
        let count = on_runtime(runtime, |jobs| {
            TERRAINS.with(terrain.index1, terrain.generation, |entry| match entry {
                TerrainEntry::Own(t) => Ok(t.regenerate(jobs).len() as u32),
                // Through the world, which wakes the islands on edited chunks.
                TerrainEntry::InWorld(world) => with_world_terrain(*world, |w| Ok(w.regenerate_terrain(jobs) as u32)),
            })
        })?;
        if !out_chunks.is_null() {
            // SAFETY: non-null and writable per the contract.
            unsafe { out_chunks.write(count) };
        }
        Ok(())
    })
}

/// Tests `aabb` against the terrain's masks: grown by one voxel, every covered voxel
/// that is solid or water or next to one counts. Regenerate after edits first. A box
/// that is not finite or has `min > max` gives `KILN_ERROR_INVALID_ARGUMENT`.
///
/// Pointers: `aabb` and `out_overlap` are NULL or valid for reading / writing.
///
/// Threads: one call at a time per terrain (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_terrain_overlap(
    terrain: KilnTerrainId,
    aabb: *const KilnAabb,
    out_overlap: *mut KilnTerrainOverlap,
) -> KilnStatus {
    ffi_call("kiln_terrain_overlap", || {
        let aabb = read_aabb(aabb, "aabb")?;
        let out = non_null(out_overlap, "out_overlap")?;
        let o = with_terrain(terrain, |t| Ok(t.overlap(&aabb)))?;
        // SAFETY: non-null and writable per the contract.
        unsafe { out.cast_mut().write(KilnTerrainOverlap { solid: o.solid, water: o.water }) };
        Ok(())
    })
}

/// Lists the chunks `aabb` touches (as `kiln_terrain_overlap`, per chunk), in
/// ascending (y, z, x) order: writes up to `capacity` entries to `out_chunks` (NULL
/// allowed when `capacity` is 0) and the total count to `out_count`, so a call with
/// capacity 0 sizes the array.
///
/// Pointers: `aabb` is NULL or readable; `out_chunks` is NULL or writable for
/// `capacity` entries; `out_count` is NULL or writable.
///
/// Threads: one call at a time per terrain (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_terrain_overlap_chunks(
    terrain: KilnTerrainId,
    aabb: *const KilnAabb,
    out_chunks: *mut KilnChunkOverlap,
    capacity: u32,
    out_count: *mut u32,
) -> KilnStatus {
    ffi_call("kiln_terrain_overlap_chunks", || {
        let aabb = read_aabb(aabb, "aabb")?;
        let out_count = non_null(out_count, "out_count")?;
        // SAFETY: writable for `capacity` entries per the contract.
        let mut out = unsafe { CountedOut::new(out_chunks, capacity, "out_chunks")? };
        let count = with_terrain(terrain, |t| {
            t.for_each_overlap(&aabb, |chunk, o| {
                out.push(KilnChunkOverlap {
                    chunk: kint(chunk),
                    overlap: KilnTerrainOverlap { solid: o.solid, water: o.water },
                });
                true
            });
            Ok(out.count())
        })?;
        // SAFETY: non-null and writable per the contract.
        unsafe { out_count.cast_mut().write(count) };
        Ok(())
    })
}

/// Writes the terrain's memory and state figures to `out_stats`.
///
/// Pointers: `out_stats` is NULL or valid for writing.
///
/// Threads: one call at a time per terrain (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_terrain_get_stats(
    terrain: KilnTerrainId,
    out_stats: *mut KilnTerrainStats,
) -> KilnStatus {
    ffi_call("kiln_terrain_get_stats", || {
        let out = non_null(out_stats, "out_stats")?;
        let stats = with_terrain(terrain, |t| {
            let s = t.stats();
            Ok(KilnTerrainStats {
                stored_chunks: t.voxels().chunk_count() as u32,
                mixed_chunks: s.mixed_chunks as u32,
                full_chunks: s.full_chunks as u32,
                dirty_chunks: t.dirty_count() as u32,
                mask_bytes: s.mask_bytes as u64,
            })
        })?;
        // SAFETY: non-null and writable per the contract.
        unsafe { out.cast_mut().write(stats) };
        Ok(())
    })
}
