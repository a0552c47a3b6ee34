//! The widest SIMD instruction set Kiln's kernels may use, for the whole process.
//!
//! Kiln picks its kernels' width from the CPU: the contact solver bundles 16
//! constraints with AVX-512F, 8 with AVX, 4 with SSE2 (`physics/simd`), and the kD
//! tree's ray batches walk eight rays at once with AVX2 (`spatial/kdtree/wide.rs`).
//! Every width does the scalar path's IEEE operations in the scalar path's order, so a
//! world steps to the same bits on every CPU. The ceiling exists to prove that (a test
//! steps the same worlds at every level the CPU runs and compares their hashes) and to
//! let a user pin a level, e.g. to compare two machines of a networked game on one.
//!
//! The `KILN_SIMD` environment variable (`scalar`, `sse2`, `avx2` or `avx512`), read on
//! first use, sets the starting ceiling; [`set_simd_ceiling`] changes it. Set it before
//! creating worlds: a world's solver takes its bundle width when it is created.

use std::sync::atomic::{AtomicU8, Ordering};

/// A SIMD instruction set, narrowest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SimdLevel {
    /// No SIMD kernel: the solver takes one constraint at a time, rays one at a time.
    Scalar,
    /// Four-lane solver bundles (every x86-64 CPU).
    Sse2,
    /// Eight-lane solver bundles (AVX) and eight-ray kD tree batches (AVX2).
    Avx2,
    /// Sixteen-lane solver bundles (AVX-512F).
    Avx512,
}

impl SimdLevel {
    pub const ALL: [SimdLevel; 4] = [SimdLevel::Scalar, SimdLevel::Sse2, SimdLevel::Avx2, SimdLevel::Avx512];

    /// The level's name as `KILN_SIMD` takes it.
    pub fn name(self) -> &'static str {
        ["scalar", "sse2", "avx2", "avx512"][self as usize]
    }

    /// The level named `text` (any case), as `KILN_SIMD` takes it.
    pub fn parse(text: &str) -> Option<SimdLevel> {
        SimdLevel::ALL.into_iter().find(|l| l.name().eq_ignore_ascii_case(text.trim()))
    }

    /// Whether this CPU runs the level's kernels.
    pub fn supported(self) -> bool {
        #[cfg(target_arch = "x86_64")]
        return match self {
            SimdLevel::Scalar | SimdLevel::Sse2 => true,
            SimdLevel::Avx2 => is_x86_feature_detected!("avx") && is_x86_feature_detected!("avx2"),
            SimdLevel::Avx512 => is_x86_feature_detected!("avx512f"),
        };
        #[cfg(not(target_arch = "x86_64"))]
        return self <= SimdLevel::Sse2;
    }
}

/// Not read from the environment yet.
const UNSET: u8 = u8::MAX;
static CEILING: AtomicU8 = AtomicU8::new(UNSET);

/// The widest level Kiln may use: `KILN_SIMD` when set to a level's name, else
/// [`SimdLevel::Avx512`] (each kernel still checks that the CPU runs it).
pub fn simd_ceiling() -> SimdLevel {
    let stored = CEILING.load(Ordering::Relaxed);
    if stored != UNSET {
        return SimdLevel::ALL[stored as usize];
    }
    let level = std::env::var("KILN_SIMD").ok().and_then(|v| SimdLevel::parse(&v)).unwrap_or(SimdLevel::Avx512);
    // A racing set_simd_ceiling wins over the environment.
    let _ = CEILING.compare_exchange(UNSET, level as u8, Ordering::Relaxed, Ordering::Relaxed);
    SimdLevel::ALL[CEILING.load(Ordering::Relaxed) as usize]
}

/// Caps the levels Kiln may use, for the whole process (worlds created from now on).
pub fn set_simd_ceiling(level: SimdLevel) {
    CEILING.store(level as u8, Ordering::Relaxed);
}

/// Whether the ceiling allows `level` (the kernel still checks the CPU).
pub(crate) fn simd_allows(level: SimdLevel) -> bool {
    simd_ceiling() >= level
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for level in SimdLevel::ALL {
            assert_eq!(SimdLevel::parse(level.name()), Some(level));
            assert_eq!(SimdLevel::parse(&level.name().to_uppercase()), Some(level));
        }
        assert_eq!(SimdLevel::parse("neon"), None);
        assert!(SimdLevel::Scalar.supported() && SimdLevel::Sse2.supported());
    }
}
