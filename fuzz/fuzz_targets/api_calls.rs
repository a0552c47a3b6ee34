//! Sequences of C API calls over every CPU object kind — runtime, worlds, bodies,
//! shapes, joints, queries, terrain, characters, integrated frames and octrees — with
//! live, stale and forged handles, NULL pointers, NaN, infinite, zero and huge values,
//! decoded from the fuzzer's bytes by `samples-c/tests/fuzz_api.c` (see `build.rs`).
//! Every call must answer with a known status and a message, every live world must
//! validate after every call, and everything must tear down without a leak. The
//! tracer and probe volume calls run in the seeded C test, where a device is opened
//! once per seed rather than once per input.
#![no_main]

use libfuzzer_sys::fuzz_target;
// The C driver calls the library's exported functions.
use kiln_ffi as _;

extern "C" {
    fn kiln_fuzz_api_run(data: *const u8, size: usize) -> i32;
}

fuzz_target!(|data: &[u8]| {
    // SAFETY: `data` is readable for its length; the driver keeps no pointer to it.
    unsafe { kiln_fuzz_api_run(data.as_ptr(), data.len()) };
});
