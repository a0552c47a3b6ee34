//! Sets the shared library's SONAME to `libkiln.so.<KILN_ABI_VERSION>`, read from
//! `src/abi.rs` so the two cannot drift apart.

fn main() {
    println!("cargo:rerun-if-changed=src/abi.rs");
    let abi = std::fs::read_to_string("src/abi.rs").expect("read src/abi.rs");
    let version = abi
        .lines()
        .find_map(|line| line.strip_prefix("pub const KILN_ABI_VERSION: u32 = "))
        .and_then(|rest| rest.strip_suffix(';'))
        .expect("src/abi.rs defines `pub const KILN_ABI_VERSION: u32 = N;`");
    let target_os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if target_os == "linux" {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libkiln.so.{version}");
    }
}
