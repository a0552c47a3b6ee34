//! Compiles `samples-c/tests/fuzz_api.c` (random sequences of C API calls) with
//! `KILN_FUZZ_API_ENTRY`, for the `api_calls` target: the same program as the seeded
//! C test, its choices drawn from the fuzzer's bytes instead.
fn main() {
    for input in ["../samples-c/tests/fuzz_api.c", "../samples-c/tests/check.h", "../include/kiln.h"] {
        println!("cargo:rerun-if-changed={input}");
    }
    cc::Build::new()
        .file("../samples-c/tests/fuzz_api.c")
        .include("../include")
        .define("KILN_FUZZ_API_ENTRY", None)
        .flag("-std=c11")
        .opt_level(1)
        .debug(true)
        .compile("kiln_fuzz_api");
    println!("cargo:rustc-link-lib=m");
}
