//! Octree picking for editors through the C ABI: a set of octrees, edits by path,
//! compact load and save, and ray picks (single and batch).

use std::mem::size_of;

use kiln_core::math::Vec3;
use kiln_core::spatial::octree::{CubeKind, Octree, OctreeError, OctreeHit, OctreeId, OctreeSet, PickRay};

use crate::abi::{
    ffi_call, non_null, read_checked, read_def, CountedOut, Error, KilnStatus, KILN_ERROR_INVALID_ARGUMENT,
    KILN_ERROR_INVALID_HANDLE,
};
use crate::handles::HandleTable;
use crate::runtime::on_runtime;
use crate::runtime::KilnRuntimeId;
use crate::types::{KilnAabb, KilnVec3};

use crate::terrain_query::KilnRay;

/// Most child indices in a cube path (the deepest cube level).
pub const KILN_OCTREE_MAX_DEPTH: u32 = 16;
const _: () = assert!(KILN_OCTREE_MAX_DEPTH as usize == kiln_core::spatial::octree::OCTREE_MAX_DEPTH);

/// An empty cube.
pub const KILN_CUBE_EMPTY: u32 = 0;
/// A solid cube.
pub const KILN_CUBE_SOLID: u32 = 1;
/// A cube split into 8 children (child `i` takes the upper half along x for bit 0 of
/// `i`, along y for bit 1, along z for bit 2).
pub const KILN_CUBE_OCTANT: u32 = 2;

/// Face on the -x side.
pub const KILN_FACE_LEFT: u32 = 0;
/// Face on the +x side.
pub const KILN_FACE_RIGHT: u32 = 1;
/// Face on the +z side.
pub const KILN_FACE_FRONT: u32 = 2;
/// Face on the -z side.
pub const KILN_FACE_BACK: u32 = 3;
/// Face on the +y side (up).
pub const KILN_FACE_TOP: u32 = 4;
/// Face on the -y side.
pub const KILN_FACE_BOTTOM: u32 = 5;

/// Handle to a set of octrees. `{0, 0}` is the null handle. Pass by value.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KilnOctreeSetId {
    /// Slot index plus one (0 means null).
    pub index1: u32,
    /// Slot generation; a destroyed set's handles no longer match.
    pub generation: u32,
}

/// Handle to an octree inside a set. `{0, 0, 0}` is the null handle.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KilnOctreeId {
    /// Slot index in the set plus one (0 means null).
    pub index1: u32,
    /// Slot generation; a destroyed octree's handles no longer match.
    pub generation: u32,
    /// Serial number of the owning set, so an id from another set is refused.
    pub owner: u32,
}

/// Octree creation parameters. Initialise with `kiln_default_octree_def()`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct KilnOctreeDef {
    /// `sizeof(KilnOctreeDef)`, set by `kiln_default_octree_def()`.
    pub struct_size: u32,
    /// Lowest corner of the root cube (finite). Default 0.
    pub position: KilnVec3,
    /// Edge length of the root cube (finite, > 0; `position + size` finite). Default 1.
    pub size: f32,
}

/// Figures of one octree.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct KilnOctreeInfo {
    /// Lowest corner of the root cube.
    pub position: KilnVec3,
    /// Edge length of the root cube.
    pub size: f32,
    /// Whether any cube is solid; `solid_bounds` is all zero when not.
    pub has_solid: bool,
    /// Union of the solid cubes.
    pub solid_bounds: KilnAabb,
    /// Cubes stored (root plus 8 per octant).
    pub cube_count: u32,
    /// Bytes `kiln_octree_save` writes.
    pub description_bytes: u32,
}

/// The result of a pick: the closest solid cube under the ray, over all octrees of
/// the set, as an editor needs it.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct KilnOctreePick {
    /// Whether the ray hit; every other field is zero when it did not.
    pub hit: bool,
    /// The octree holding the cube.
    pub octree: KilnOctreeId,
    /// Depth of the cube (0 is the root); `path[0]` to `path[depth - 1]` are its child indices.
    pub depth: u32,
    /// Child indices from the root to the cube.
    pub path: [u8; 16],
    /// The face the ray enters through (`KILN_FACE_*`).
    pub face: u32,
    /// Corner of that face nearest the hit point: bit 0 upper x, bit 1 upper y, bit
    /// 2 upper z.
    pub corner: u32,
    /// Edge of that face whose midpoint is nearest the hit point, numbered 0-11:
    /// 0-3 the left face's (top, front, bottom, back), 4-7 the right face's in the
    /// same order, 8-11 the edges along x (bottom-front, bottom-back, top-back,
    /// top-front).
    pub edge: u32,
    /// Distance from the ray origin in world units.
    pub distance: f32,
    /// Where the ray meets the face.
    pub point: KilnVec3,
    /// Outward unit normal of the face.
    pub normal: KilnVec3,
    /// Position of `corner`.
    pub corner_point: KilnVec3,
    /// The cube's box.
    pub cube: KilnAabb,
}

struct Entry {
    set: OctreeSet,
    serial: u32,
}

static SETS: HandleTable<Entry> = HandleTable::new("octree set");

fn with_set<R>(set: KilnOctreeSetId, f: impl FnOnce(&mut Entry) -> Result<R, Error>) -> Result<R, Error> {
    SETS.with(set.index1, set.generation, f)
}

fn kvec(v: Vec3) -> KilnVec3 {
    KilnVec3 { x: v.x, y: v.y, z: v.z }
}

fn vec3(v: KilnVec3) -> Vec3 {
    Vec3::new(v.x, v.y, v.z)
}

fn octree_error(e: OctreeError) -> Error {
    Error::new(KILN_ERROR_INVALID_ARGUMENT, e.to_string())
}

impl Entry {
    fn id(&self, octree: KilnOctreeId) -> Result<OctreeId, Error> {
        let id = OctreeId { index: octree.index1.wrapping_sub(1), generation: octree.generation };
        if octree.owner != self.serial || octree.index1 == 0 || self.set.get(id).is_none() {
            return Err(Error::new(
                KILN_ERROR_INVALID_HANDLE,
                format!("octree handle {octree:?} is null, stale, or from another set"),
            ));
        }
        Ok(id)
    }

    fn handle(&self, id: OctreeId) -> KilnOctreeId {
        KilnOctreeId { index1: id.index + 1, generation: id.generation, owner: self.serial }
    }

    fn to_c(&self, pick: Option<(OctreeId, OctreeHit)>) -> KilnOctreePick {
        let Some((id, h)) = pick else {
            return KilnOctreePick::default();
        };
        KilnOctreePick {
            hit: true,
            octree: self.handle(id),
            depth: h.cube.depth as u32,
            path: h.cube.path(),
            face: h.face as u32,
            corner: h.corner as u32,
            edge: h.edge as u32,
            distance: h.distance,
            point: kvec(h.point),
            normal: kvec(h.normal),
            corner_point: kvec(h.corner_point),
            cube: KilnAabb { min: kvec(h.cube_box.min), max: kvec(h.cube_box.max) },
        }
    }
}

/// Reads a cube path of `depth` child indices (NULL allowed for depth 0).
///
/// # Safety
/// `path` is NULL or readable for `depth` bytes.
unsafe fn read_path<'a>(path: *const u8, depth: u32) -> Result<&'a [u8], Error> {
    if depth > KILN_OCTREE_MAX_DEPTH {
        return Err(octree_error(OctreeError::PathTooDeep(depth as usize)));
    }
    if depth == 0 {
        return Ok(&[]);
    }
    let path = non_null(path, "path")?;
    // SAFETY: readable for `depth` bytes per the contract; depth <= 16.
    Ok(unsafe { std::slice::from_raw_parts(path, depth as usize) })
}

fn bad_kind(kind: u32) -> Error {
    let hint = "use kiln_octree_subdivide to split";
    Error::new(
        KILN_ERROR_INVALID_ARGUMENT,
        format!("kind is {kind}, must be KILN_CUBE_EMPTY or KILN_CUBE_SOLID ({hint})"),
    )
}

fn check_ray(r: &KilnRay, name: &str) -> Result<PickRay, Error> {
    PickRay::new(vec3(r.origin), vec3(r.direction)).ok_or_else(|| {
        Error::new(
            KILN_ERROR_INVALID_ARGUMENT,
            format!("`{name}` {r:?} needs a finite origin and a finite, non-zero direction"),
        )
    })
}

fn check_pick_args(max_distance: f32, max_depth: u32) -> Result<(), Error> {
    if max_distance.is_nan() || max_distance < 0.0 {
        return Err(Error::new(
            KILN_ERROR_INVALID_ARGUMENT,
            format!("max_distance is {max_distance}, must be >= 0 (INFINITY allowed)"),
        ));
    }
    if max_depth > KILN_OCTREE_MAX_DEPTH {
        return Err(Error::new(
            KILN_ERROR_INVALID_ARGUMENT,
            format!("max_depth is {max_depth}, must be <= KILN_OCTREE_MAX_DEPTH"),
        ));
    }
    Ok(())
}

/// Creates an empty set of octrees and writes its handle to `out_set`.
///
/// Pointers: `out_set` is NULL or valid for writing.
///
/// Threads: any thread, at any time.
#[no_mangle]
pub unsafe extern "C" fn kiln_octree_set_create(out_set: *mut KilnOctreeSetId) -> KilnStatus {
    ffi_call("kiln_octree_set_create", || {
        let out = non_null(out_set, "out_set")?;
        let (index1, generation) = SETS.insert(Entry { set: OctreeSet::new(), serial: SETS.next_serial() });
        // SAFETY: non-null and writable per the contract.
        unsafe { out.cast_mut().write(KilnOctreeSetId { index1, generation }) };
        Ok(())
    })
}

/// Destroys a set and every octree in it; its handle and its octrees' handles
/// become invalid.
///
/// Threads: one call at a time per octree set (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub extern "C" fn kiln_octree_set_destroy(set: KilnOctreeSetId) -> KilnStatus {
    ffi_call("kiln_octree_set_destroy", || {
        drop(SETS.remove(set.index1, set.generation)?);
        Ok(())
    })
}

/// Whether `set` refers to a live set of octrees.
///
/// Threads: any thread, at any time; never busy.
#[no_mangle]
pub extern "C" fn kiln_octree_set_is_valid(set: KilnOctreeSetId) -> bool {
    std::panic::catch_unwind(|| SETS.is_valid(set.index1, set.generation)).unwrap_or(false)
}

/// A `KilnOctreeDef` with defaults (a 1-unit cube at the origin).
///
/// Threads: any thread, at any time.
#[no_mangle]
pub extern "C" fn kiln_default_octree_def() -> KilnOctreeDef {
    KilnOctreeDef { struct_size: size_of::<KilnOctreeDef>() as u32, position: KilnVec3::default(), size: 1.0 }
}

/// Adds an empty octree to `set` and writes its handle to `out_octree`. Octrees may
/// overlap or nest.
///
/// Pointers: `def` is NULL or readable; `out_octree` is NULL or writable.
///
/// Threads: one call at a time per octree set (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_octree_create(
    set: KilnOctreeSetId,
    def: *const KilnOctreeDef,
    out_octree: *mut KilnOctreeId,
) -> KilnStatus {
    ffi_call("kiln_octree_create", || {
        let def = non_null(def, "def")?;
        let out = non_null(out_octree, "out_octree")?;
        // SAFETY: non-null; readable per the contract.
        let def: KilnOctreeDef = unsafe { read_def(def, "def")? };
        let octree = Octree::new(vec3(def.position), def.size).map_err(|e| {
            Error::new(
                KILN_ERROR_INVALID_ARGUMENT,
                format!("def {{position {:?}, size {}}}: {e}", def.position, def.size),
            )
        })?;
        let id = with_set(set, |entry| {
            let id = entry.set.insert(octree);
            Ok(entry.handle(id))
        })?;
        // SAFETY: non-null and writable per the contract.
        unsafe { out.cast_mut().write(id) };
        Ok(())
    })
}

/// Removes an octree from its set; its handle becomes invalid.
///
/// Threads: one call at a time per octree set (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub extern "C" fn kiln_octree_destroy(set: KilnOctreeSetId, octree: KilnOctreeId) -> KilnStatus {
    ffi_call("kiln_octree_destroy", || {
        with_set(set, |entry| {
            let id = entry.id(octree)?;
            entry.set.remove(id);
            Ok(())
        })
    })
}

/// Makes the cube at `path` (`depth` child indices 0-7, at most
/// `KILN_OCTREE_MAX_DEPTH`) empty (`KILN_CUBE_EMPTY`) or solid (`KILN_CUBE_SOLID`),
/// splitting any cube on the way into 8 copies of itself and dropping whatever was
/// inside the cube. Octants whose children all become empty collapse to empty.
///
/// Pointers: `path` is NULL or readable for `depth` bytes (NULL allowed when `depth` is
/// 0).
///
/// Threads: one call at a time per octree set (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_octree_set_cube(
    set: KilnOctreeSetId,
    octree: KilnOctreeId,
    path: *const u8,
    depth: u32,
    kind: u32,
) -> KilnStatus {
    ffi_call("kiln_octree_set_cube", || {
        // SAFETY: readable for `depth` bytes per the contract.
        let path = unsafe { read_path(path, depth)? };
        let solid = match kind {
            KILN_CUBE_EMPTY => false,
            KILN_CUBE_SOLID => true,
            other => return Err(bad_kind(other)),
        };
        with_set(set, |entry| {
            let id = entry.id(octree)?;
            entry.set.edit(id, |o| o.set_cube(path, solid)).expect("id checked").map_err(octree_error)
        })
    })
}

/// Splits the solid cube at `path` into 8 solid children, so they can be edited one
/// by one. Fails with `KILN_ERROR_INVALID_ARGUMENT` when the cube is not solid or is
/// already at `KILN_OCTREE_MAX_DEPTH`.
///
/// Pointers: `path` is NULL or readable for `depth` bytes (NULL allowed when `depth` is
/// 0).
///
/// Threads: one call at a time per octree set (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_octree_subdivide(
    set: KilnOctreeSetId,
    octree: KilnOctreeId,
    path: *const u8,
    depth: u32,
) -> KilnStatus {
    ffi_call("kiln_octree_subdivide", || {
        // SAFETY: readable for `depth` bytes per the contract.
        let path = unsafe { read_path(path, depth)? };
        with_set(set, |entry| {
            let id = entry.id(octree)?;
            entry.set.edit(id, |o| o.subdivide(path)).expect("id checked").map_err(octree_error)
        })
    })
}

/// Writes the kind (`KILN_CUBE_*`) of the cube at `path` to `out_kind`; a path that
/// runs past a leaf gives that leaf's kind (a cube inside a solid cube is solid).
///
/// Pointers: `path` is NULL or readable for `depth` bytes (NULL allowed when `depth` is
/// 0); `out_kind` is NULL or writable.
///
/// Threads: one call at a time per octree set (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_octree_get_cube(
    set: KilnOctreeSetId,
    octree: KilnOctreeId,
    path: *const u8,
    depth: u32,
    out_kind: *mut u32,
) -> KilnStatus {
    ffi_call("kiln_octree_get_cube", || {
        // SAFETY: readable for `depth` bytes per the contract.
        let path = unsafe { read_path(path, depth)? };
        let out = non_null(out_kind, "out_kind")?;
        let kind = with_set(set, |entry| {
            let id = entry.id(octree)?;
            entry.set.get(id).expect("id checked").cube(path).map_err(octree_error)
        })?;
        let kind = match kind {
            CubeKind::Empty => KILN_CUBE_EMPTY,
            CubeKind::Solid => KILN_CUBE_SOLID,
            CubeKind::Octant => KILN_CUBE_OCTANT,
        };
        // SAFETY: non-null and writable per the contract.
        unsafe { out.cast_mut().write(kind) };
        Ok(())
    })
}

/// Replaces an octree's cubes with a compact description: two bits per cube in
/// pre-order (a cube, then its 8 children if it is an octant), `0` empty, `1` solid,
/// `2` octant, packed four to a byte from the low bits up, unused bits of the last
/// byte zero. Example: a solid cube split once is `{0x56, 0x55, 0x01}`. A malformed
/// description (truncated, code 3, too deep, trailing data) fails with
/// `KILN_ERROR_INVALID_ARGUMENT` and leaves the octree unchanged.
///
/// Pointers: `bytes` is readable for `byte_count` bytes (NULL allowed when `byte_count`
/// is 0).
///
/// Threads: one call at a time per octree set (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_octree_load(
    set: KilnOctreeSetId,
    octree: KilnOctreeId,
    bytes: *const u8,
    byte_count: u64,
) -> KilnStatus {
    ffi_call("kiln_octree_load", || {
        let bytes: &[u8] = if byte_count == 0 {
            &[]
        } else {
            let ptr = non_null(bytes, "bytes")?;
            let len = usize::try_from(byte_count)
                .map_err(|_| Error::new(KILN_ERROR_INVALID_ARGUMENT, "byte_count does not fit in memory"))?;
            // SAFETY: readable for `byte_count` bytes per the contract.
            unsafe { std::slice::from_raw_parts(ptr, len) }
        };
        with_set(set, |entry| {
            let id = entry.id(octree)?;
            let old = entry.set.get(id).expect("id checked");
            let loaded = Octree::from_bytes(old.position(), old.size(), bytes).map_err(octree_error)?;
            entry.set.edit(id, |o| *o = loaded).expect("id checked");
            Ok(())
        })
    })
}

/// Writes an octree's compact description (see `kiln_octree_load`): up to
/// `capacity` bytes to `out_bytes` (NULL allowed when `capacity` is 0) and the full
/// length to `out_count`, so a call with capacity 0 sizes the buffer.
///
/// Pointers: `out_bytes` is NULL or writable for `capacity` bytes; `out_count` is NULL
/// or writable.
///
/// Threads: one call at a time per octree set (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_octree_save(
    set: KilnOctreeSetId,
    octree: KilnOctreeId,
    out_bytes: *mut u8,
    capacity: u32,
    out_count: *mut u32,
) -> KilnStatus {
    ffi_call("kiln_octree_save", || {
        let out_count = non_null(out_count, "out_count")?;
        // SAFETY: writable for `capacity` bytes per the contract.
        let mut out = unsafe { CountedOut::new(out_bytes, capacity, "out_bytes")? };
        with_set(set, |entry| {
            let id = entry.id(octree)?;
            entry.set.get(id).expect("id checked").to_bytes().into_iter().for_each(|b| out.push(b));
            Ok(())
        })?;
        // SAFETY: non-null and writable per the contract.
        unsafe { out_count.cast_mut().write(out.count()) };
        Ok(())
    })
}

/// Writes an octree's figures to `out_info`.
///
/// Pointers: `out_info` is NULL or writable.
///
/// Threads: one call at a time per octree set (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_octree_get_info(
    set: KilnOctreeSetId,
    octree: KilnOctreeId,
    out_info: *mut KilnOctreeInfo,
) -> KilnStatus {
    ffi_call("kiln_octree_get_info", || {
        let out = non_null(out_info, "out_info")?;
        let info = with_set(set, |entry| {
            let id = entry.id(octree)?;
            let o = entry.set.get(id).expect("id checked");
            let solid = o.solid_bounds();
            let has_solid = solid.is_valid();
            Ok(KilnOctreeInfo {
                position: kvec(o.position()),
                size: o.size(),
                has_solid,
                solid_bounds: if has_solid {
                    KilnAabb { min: kvec(solid.min), max: kvec(solid.max) }
                } else {
                    KilnAabb::default()
                },
                cube_count: o.cube_count() as u32,
                description_bytes: o.cube_count().div_ceil(4) as u32,
            })
        })?;
        // SAFETY: non-null and writable per the contract.
        unsafe { out.cast_mut().write(info) };
        Ok(())
    })
}

/// Picks the closest solid cube under `ray` within `max_distance` over every octree
/// of the set and writes it to `out_pick` (`hit` false when there is none). A cube is
/// hit where the ray enters it at distance >= 0: a ray starting inside a solid cube
/// looks out of it. `max_depth` (0 to `KILN_OCTREE_MAX_DEPTH`) is the editor's grid:
/// descent stops there and an octant at that depth counts as solid. Cubes are
/// half-open (they hold their lower faces), so a ray running exactly along a face
/// between cubes picks the upper one; on an exact tie between overlapping octrees the
/// one created first wins.
///
/// Pointers: `ray` is NULL or readable; `out_pick` is NULL or writable.
///
/// Threads: one call at a time per octree set (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_octree_pick(
    set: KilnOctreeSetId,
    ray: *const KilnRay,
    max_distance: f32,
    max_depth: u32,
    out_pick: *mut KilnOctreePick,
) -> KilnStatus {
    ffi_call("kiln_octree_pick", || {
        let ray = non_null(ray, "ray")?;
        let out = non_null(out_pick, "out_pick")?;
        // SAFETY: non-null; readable per the contract.
        let ray = check_ray(&unsafe { ray.read() }, "ray")?;
        check_pick_args(max_distance, max_depth)?;
        let pick = with_set(set, |entry| Ok(entry.to_c(entry.set.pick(&ray, max_distance, max_depth))))?;
        // SAFETY: non-null and writable per the contract.
        unsafe { out.cast_mut().write(pick) };
        Ok(())
    })
}

/// Picks for `count` rays as parallel jobs on `runtime`'s workers (the null handle
/// `{0, 0}` runs them on the calling thread) and writes ray `i`'s result to
/// `out_picks[i]`, as `kiln_octree_pick` would. Results do not depend on the worker
/// count. Every ray is checked first: one bad ray fails the call (naming its index)
/// and writes nothing. `count` 0 does nothing (NULL arrays allowed). Must not be
/// called from inside one of the runtime's passes.
///
/// Pointers: `rays` is readable and `out_picks` writable for `count` entries (or NULL
/// when `count` is 0).
///
/// Threads: one call at a time per octree set (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_octree_pick_batch(
    set: KilnOctreeSetId,
    runtime: KilnRuntimeId,
    rays: *const KilnRay,
    count: u32,
    max_distance: f32,
    max_depth: u32,
    out_picks: *mut KilnOctreePick,
) -> KilnStatus {
    ffi_call("kiln_octree_pick_batch", || {
        check_pick_args(max_distance, max_depth)?;
        if count == 0 {
            return with_set(set, |_| Ok(()));
        }
        // SAFETY: readable for `count` entries per the contract.
        let rays = unsafe { read_checked(rays, count, "rays", check_ray)? };
        let out = non_null(out_picks, "out_picks")?;
        let mut picks = vec![None; rays.len()];
        on_runtime(runtime, |jobs| {
            with_set(set, |entry| {
                entry.set.pick_batch(&rays, max_distance, max_depth, &mut picks, jobs);
                for (i, pick) in picks.iter().enumerate() {
                    // SAFETY: writable for `count` entries per the contract; `i < count`.
                    unsafe { out.cast_mut().add(i).write(entry.to_c(*pick)) };
                }
                Ok(())
            })
        })
    })
}
