//! DDGI: irradiance probes with compressed visibility (Majercik et al., "Dynamic
//! Diffuse Global Illumination with Ray-Traced Irradiance Fields", JCGT 2019), as
//! Kiln adapts it (`docs/gpu.md`: L1 SH
//! irradiance in R11G11B10, 16 x 16 octahedral depth maps, back faces at depth 0,
//! depth clipping, dead probes, dictionary compression with a swizzled order).
//!
//! This folder is the CPU reference; the GPU passes mirror it kernel by kernel.
//!
//! ```text
//!  bits.rs        a bit per item with ranks (placement mask, live probes)
//!  volume.rs      grid + placement mask (probes only near geometry), rank lookup
//!  sh.rs          L1 SH: projection, irradiance, Fibonacci ray directions
//!  pack.rs        R11G11B10 float/UNORM and half floats; drift-free hysteresis
//!  octahedral.rs  octahedral mapping, 16 x 16 visibility maps, stitched border
//!  compress.rs    dictionary compression of visibility maps, batch orders
//!  table.rs       the stored dictionary: blocks in tables by spread width
//!  field.rs       ProbeField: per-probe data; irradiance sampling with visibility
//!  update.rs      irradiance update (rays, shading, blend) and the visibility bake
//!  relocate.rs    probe relocation off surfaces and out of solid; classification
//!  refresh.rs     visibility re-baked where geometry changed, recompressed in place
//!  scroll.rs      volumes that follow a point by whole probes (modulo slots); cascades
//!  scenes.rs      scenes tests, benches and samples share
//! ```
//!
//! # Memory per probe
//!
//! For a live probe (its map sees something): 16 bytes of irradiance, four block
//! entries (one per quadrant of the visibility map, 13 to 16 bits each with the
//! transpose bit), shared with the probes of the same signature, and the shared
//! visibility blocks divided among the quadrants that use them. For a dead one, a
//! bit: it is neither sampled nor updated (`field.rs`, "Dead probes are not
//! sampled"); a probe classified inactive (in solid) is stored as a dead one.
//! About 1.5 bits of placement mask per grid point, and with relocation about
//! 1.5 bits per probe plus 4 bytes per moved probe (`relocate.rs`). The device holds
//! the same, sized to the data, and nothing else per probe. RTXGI stores 256 B of
//! irradiance and 1 KiB of distance per probe.

pub mod bits;
pub mod compress;
pub mod field;
pub mod octahedral;
pub mod pack;
pub mod refresh;
pub mod relocate;
pub mod scenes;
pub mod scroll;
pub mod sh;
pub mod table;
pub mod update;
pub mod volume;

#[cfg(test)]
mod follow_tests;
#[cfg(test)]
mod tests;

pub use compress::{
    compress, recompress, BlockEntry, CompressParams, CompressedVisibility, IndexForm, ProbeIndex, ProbeOrder,
    DEAD_QUADRANT, QUADRANTS,
};
pub use field::{ProbeField, SampleParams, UNLIT};
pub use octahedral::{oct_decode, oct_encode, symmetric_texel, VisibilityMap, OCT_RES, OCT_TEXELS};
pub use pack::PackedSh;
pub use refresh::{refresh_visibility, RefreshReport};
pub use relocate::{ProbeOffsets, ProbeRules};
pub use sh::ShRgb;
pub use table::BlockTable;
pub use update::{bake_visibility, bake_visibility_with, update_irradiance, GiLighting, UpdateParams};
pub use volume::{ProbeGrid, ProbeVolume};
