//! Kiln's C ABI: a thin layer over the `kiln` crate. Each function validates its
//! arguments, calls `kiln`, converts the result, and never lets a panic unwind into
//! C. `include/kiln.h` is generated from this crate by cbindgen
//! (`cbindgen --config ffi/cbindgen.toml --crate kiln-ffi --output include/kiln.h ffi`).
//!
//! Conventions (see DESIGN.md, "The C ABI"): `kiln_` functions return `KilnStatus`
//! and write results through out-parameters, which are left untouched on failure;
//! handles are `{index + 1, generation}` structs passed by value; definition structs
//! carry `struct_size` and come from `kiln_default_*_def()`; enums are `uint32_t`
//! plus `KILN_*` constants.
#![deny(missing_docs)]

pub mod abi;
pub mod alloc;
pub mod character;
pub mod embedded;
pub mod frame;
pub mod gi;
mod handles;
pub mod host;
pub mod octree;
pub mod runtime;
pub mod shapes;
pub mod terrain;
pub mod terrain_query;
pub mod tracer;
pub mod world;

pub use abi::*;
pub use alloc::*;
pub use character::*;
pub use embedded::*;
pub use frame::*;
pub use gi::*;
pub use host::*;
pub use octree::*;
pub use runtime::*;
pub use shapes::*;
pub use terrain::*;
pub use terrain_query::*;
pub use tracer::*;
pub use world::*;
