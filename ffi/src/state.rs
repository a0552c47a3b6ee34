//! A world's state through the C ABI: the determinism hash two peers of a lockstep
//! or rollback game compare (`World::hash`).

use crate::abi::{ffi_call, non_null, write_out, KilnStatus};
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
