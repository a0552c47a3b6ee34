//! Kiln's C ABI: a thin layer over the `kiln` crate. Each function validates its
//! arguments, calls `kiln`, converts the result, and never lets a panic unwind into
//! C. `include/kiln.h` is generated from this crate by cbindgen
//! (`cbindgen --config ffi/cbindgen.toml --crate kiln-ffi --output include/kiln.h ffi`).
//!
//! Conventions (see docs/ARCHITECTURE.md, "The C ABI"): `kiln_` functions return `KilnStatus`
//! and write results through out-parameters, which are left untouched on failure;
//! handles are `{index + 1, generation}` structs passed by value; definition structs
//! carry `struct_size` and come from `kiln_default_*_def()`; enums are `uint32_t`
//! plus `KILN_*` constants.
#![deny(missing_docs)]
// The exported functions are documented for C readers: their pointer contracts are a
// "Pointers:" paragraph of the header, not a Rust `# Safety` section.
#![allow(clippy::missing_safety_doc)]

// The modules in the order a user learns the API, which is the order of the header
// (cbindgen reads them in this order): versions and errors, the runtime, shapes, the
// world and its bodies, terrain, characters, octrees, the tracer, GI, the frame.

// Versions, the ABI check, errors and the allocator.
pub mod abi;
pub mod alloc;
mod handles;
pub mod types;

// The runtime, its frame graph and host job systems.
pub mod runtime;

pub mod host;

// Shapes and the queries between them.
pub mod shapes;

// The world and its bodies.
pub mod world;

// Joints between bodies.
pub mod joint;

// Voxel terrain and its queries.
pub mod terrain;

pub mod terrain_query;

// World queries: rays, overlaps and shape casts over bodies and terrain.
pub mod query;

// Sensor and body move events.
pub mod events;

// The character controller.
pub mod character;

// A world's state: its determinism hash.
pub mod state;

// Octrees for editors.
pub mod octree;

// GPU ray tracing, standalone and embedded.
pub mod tracer;

pub mod embedded;

// DDGI probes.
pub mod gi;

// The integrated frame.
pub mod frame;

// The ABI check, which names every type above.
pub mod check;

pub use abi::*;
pub use alloc::*;
pub use character::*;
pub use check::*;
pub use embedded::*;
pub use frame::*;
pub use gi::*;
pub use host::*;
pub use joint::*;
pub use octree::*;
pub use runtime::*;
pub use shapes::*;
pub use terrain::*;
pub use terrain_query::*;
pub use tracer::*;
pub use types::*;
pub use world::*;
