//! A world's state through the C ABI: the determinism hash two peers of a lockstep
//! or rollback game compare (`World::hash`), and snapshots to save and restore
//! (`World::save_bytes`, `World::restore_bytes`).

use std::ffi::c_void;

use kiln_core::physics::SnapshotError;

use crate::abi::{
    ffi_call, non_null, write_out, Error, KilnStatus, KILN_ERROR_ABI_MISMATCH, KILN_ERROR_BUFFER_TOO_SMALL,
    KILN_ERROR_INVALID_ARGUMENT, KILN_ERROR_INVALID_STATE, KILN_ERROR_NULL_POINTER,
};
use crate::world::{with_world, KilnWorldId};

/// Writes the world's determinism hash to `out_hash`: a 64-bit FNV-1a hash of the
/// bits of every live body's position, linear and angular velocity and rotation, in
/// the order of the bodies' slots (the order they were created in while none was
/// destroyed; a destroyed body's slot is taken by the next body created). Two worlds
/// built and stepped from the same inputs have the same hash, whatever the worker
/// count, the host scheduler or the CPU's SIMD width; the first step at which two
/// peers' hashes differ is where their inputs diverged.
///
/// Pointers: `out_hash` is NULL or valid for writing.
///
/// Threads: one call at a time per world (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_world_hash(world: KilnWorldId, out_hash: *mut u64) -> KilnStatus {
    ffi_call("kiln_world_hash", || {
        non_null(out_hash, "out_hash")?;
        let hash = with_world(world, |entry| Ok(entry.world.hash()))?;
        write_out(out_hash, "out_hash", hash)
    })
}

/// The version of the world snapshot format this library writes and reads
/// (`kiln_world_save`). A snapshot of another format, or from another library
/// version, is refused with `KILN_ERROR_ABI_MISMATCH`.
pub const KILN_SNAPSHOT_FORMAT: u32 = 5;
const _: () = assert!(KILN_SNAPSHOT_FORMAT == kiln_core::physics::SNAPSHOT_FORMAT);

fn snapshot_error(error: SnapshotError) -> Error {
    let status = match error {
        SnapshotError::OutOfOrder | SnapshotError::ForeignTerrain | SnapshotError::SleepingChanged => {
            KILN_ERROR_INVALID_STATE
        }
        SnapshotError::BufferTooSmall(_) => KILN_ERROR_BUFFER_TOO_SMALL,
        SnapshotError::Version { .. } => KILN_ERROR_ABI_MISMATCH,
        SnapshotError::NotASnapshot | SnapshotError::Truncated | SnapshotError::Corrupt => KILN_ERROR_INVALID_ARGUMENT,
    };
    Error::new(status, error.to_string())
}

/// Writes to `out_size` the bytes `kiln_world_save` needs for the world as it is
/// now. The size changes as bodies, contacts and joints come and go: size a buffer
/// with room to spare (the save says when it is short).
///
/// Pointers: `out_size` is NULL or writable.
///
/// Threads: one call at a time per world (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_world_snapshot_size(world: KilnWorldId, out_size: *mut u64) -> KilnStatus {
    ffi_call("kiln_world_snapshot_size", || {
        non_null(out_size, "out_size")?;
        let size = with_world(world, |entry| entry.world.snapshot_size().map_err(snapshot_error))?;
        write_out(out_size, "out_size", size as u64)
    })
}

/// Saves everything of the world that decides its next steps into `buffer`, and the
/// bytes written to `out_size`: bodies and their shapes (hulls and compounds once
/// each, however many bodies share them), contacts with their warm-start impulses
/// and cached features, joints, sleeping islands and their timers, sensors and
/// their visitors, water membership, the last step's events, and the attached
/// terrain's edits: the terrain's voxels as they were when it was attached
/// (`kiln_world_set_terrain`) are the base, named in the snapshot by a fingerprint,
/// and the snapshot carries only the chunks (8x8x8 voxels, 512 bytes each) edited
/// since, as they are now. `kiln_world_restore` puts any world whose terrain had the
/// same base back in this state, ground included, in this process or another;
/// stepped with the same inputs, it then steps the same bits as this one, for any
/// worker count.
///
/// The format (docs/physics.md) is versioned (`KILN_SNAPSHOT_FORMAT`, checked with
/// the library version on restore), little-endian and checksummed. When `capacity`
/// is smaller than the snapshot the result is `KILN_ERROR_BUFFER_TOO_SMALL`,
/// `*out_size` gets the size needed and the buffer's contents are unspecified; pass
/// NULL with `capacity` 0 to ask only the size. Between steps only (in the middle of
/// a staged step: `KILN_ERROR_INVALID_STATE`). Once the world's scratch is sized by
/// a first save, saving allocates nothing.
///
/// Pointers: `buffer` is NULL (with `capacity` 0) or writable for `capacity` bytes;
/// `out_size` is NULL or writable.
///
/// Threads: one call at a time per world (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_world_save(
    world: KilnWorldId,
    buffer: *mut c_void,
    capacity: u64,
    out_size: *mut u64,
) -> KilnStatus {
    // SAFETY: the contract above.
    ffi_call("kiln_world_save", || unsafe { save(world, buffer, capacity, out_size, false) })
}

/// Saves the world as `kiln_world_save` does, leaving out the static and sleeping
/// bodies and the sleeping islands with their contacts: the snapshot names them by
/// a checksum instead. Once most of a world sleeps it is a fraction of the full
/// snapshot's size (the broadphase tree, every body's shapes and the awake contacts
/// are still in it), for a rollback ring that keeps many. `kiln_world_restore`
/// takes it only while the world's static and sleeping bodies and sleeping islands
/// are bit for bit those it was saved beside (`KILN_ERROR_INVALID_STATE` otherwise,
/// nothing changed: restore a full snapshot then). They change when an island falls
/// asleep or wakes, and when a static body is created, moved or destroyed. Saving
/// reads the part left out to checksum it: it takes about as long as a full save.
///
/// Sizes, statuses and pointers as `kiln_world_save`.
///
/// Threads: one call at a time per world (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_world_save_awake(
    world: KilnWorldId,
    buffer: *mut c_void,
    capacity: u64,
    out_size: *mut u64,
) -> KilnStatus {
    // SAFETY: the contract above.
    ffi_call("kiln_world_save_awake", || unsafe { save(world, buffer, capacity, out_size, true) })
}

/// The body of `kiln_world_save` and `kiln_world_save_awake`.
///
/// # Safety
/// Their pointer contract.
unsafe fn save(
    world: KilnWorldId,
    buffer: *mut c_void,
    capacity: u64,
    out_size: *mut u64,
    awake_only: bool,
) -> Result<(), Error> {
    non_null(out_size, "out_size")?;
    if buffer.is_null() && capacity != 0 {
        return Err(Error::new(KILN_ERROR_NULL_POINTER, "`buffer` is NULL but `capacity` is not 0"));
    }
    let capacity = usize::try_from(capacity).unwrap_or(usize::MAX);
    let saved = with_world(world, |entry| {
        // SAFETY: writable for `capacity` bytes per the contract (NULL only with 0).
        Ok(unsafe {
            if awake_only {
                entry.world.save_awake_bytes_raw(buffer.cast(), capacity)
            } else {
                entry.world.save_bytes_raw(buffer.cast(), capacity)
            }
        })
    })?;
    match saved {
        Ok(size) => write_out(out_size, "out_size", size as u64),
        Err(SnapshotError::BufferTooSmall(size)) => {
            write_out(out_size, "out_size", size as u64)?;
            Err(Error::new(
                KILN_ERROR_BUFFER_TOO_SMALL,
                format!("the snapshot needs {size} bytes; `capacity` is {capacity}"),
            ))
        }
        Err(e) => Err(snapshot_error(e)),
    }
}

/// Puts the world back in the state `snapshot` holds (`size` bytes from
/// `kiln_world_save`, of this world or another with the same terrain, in this
/// process or another): rollback is restore, re-apply the inputs, step again.
/// Handles issued before the save are valid after the restore (a body created since
/// is stale, one destroyed since is back), and the world then steps the same bits as
/// the saved world did, for any worker count. Terrain edits since the save are
/// undone and those before it redone (a pit dug after the save fills in again):
/// the chunks that change are re-meshed and their masks rebuilt, which allocates,
/// and no body wakes for it.
///
/// Refused, changing nothing: bytes that are no snapshot or are truncated or damaged
/// (`KILN_ERROR_INVALID_ARGUMENT`), a snapshot of another format or library version
/// (`KILN_ERROR_ABI_MISMATCH`), a snapshot saved with another terrain, none, or a
/// terrain of other voxels when attached, an awake-only snapshot
/// (`kiln_world_save_awake`) whose static and sleeping bodies or sleeping islands
/// changed since, or a call in the middle of a staged step
/// (`KILN_ERROR_INVALID_STATE`). A `size` larger than the snapshot's own is refused
/// from its header, before anything past the header is read. Restoring allocates
/// nothing once the world holds state of that size and the terrain's voxels are
/// already the snapshot's.
///
/// Pointers: `snapshot` is NULL or readable for `size` bytes (or for the snapshot's
/// own size, when `size` is larger).
///
/// Threads: one call at a time per world (busy: `KILN_ERROR_INVALID_STATE`, nothing changed).
#[no_mangle]
pub unsafe extern "C" fn kiln_world_restore(world: KilnWorldId, snapshot: *const c_void, size: u64) -> KilnStatus {
    ffi_call("kiln_world_restore", || {
        non_null(snapshot, "snapshot")?;
        let size = usize::try_from(size).unwrap_or(usize::MAX);
        // The header's own size first: a larger `size` is refused without reading
        // past what the snapshot says it holds.
        const SIZE_AT: usize = 16;
        if size >= SIZE_AT + 8 {
            // SAFETY: readable for `size` bytes per the contract, at least these.
            let head = unsafe { std::slice::from_raw_parts(snapshot.cast::<u8>(), SIZE_AT + 8) };
            let own = u64::from_le_bytes(head[SIZE_AT..].try_into().expect("8 bytes"));
            if head.starts_with(b"KILNSNAP") && own < size as u64 {
                return Err(snapshot_error(SnapshotError::Truncated));
            }
        }
        if size > isize::MAX as usize {
            return Err(Error::new(KILN_ERROR_INVALID_ARGUMENT, format!("`size` {size} is past any buffer")));
        }
        // SAFETY: readable for `size` bytes per the contract.
        let bytes = unsafe { std::slice::from_raw_parts(snapshot.cast::<u8>(), size) };
        with_world(world, |entry| entry.world.restore_bytes(bytes).map_err(snapshot_error))
    })
}
