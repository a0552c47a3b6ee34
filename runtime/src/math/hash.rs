//! A fast hasher for Kiln's own small keys (chunk coordinates, edge endpoints).
//!
//! std's default SipHash resists hash flooding, which keys computed from the user's
//! own geometry never need, and it is slow: in the edge map of the triangles under
//! each body it was a tenth of the rain scene's step. Nothing iterates these maps in
//! hash order where the order could reach a result.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// Multiply-rotate mixing of whole words, finished by a folded 64x64 -> 128-bit
/// multiply so every input bit reaches the low bits that pick the bucket.
#[derive(Default, Clone, Copy, Debug)]
pub struct FastHasher(u64);

const K: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl Hasher for FastHasher {
    fn finish(&self) -> u64 {
        let m = (self.0 as u128) * (K as u128);
        (m >> 64) as u64 ^ m as u64
    }

    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(word));
        }
    }

    fn write_u32(&mut self, v: u32) {
        self.write_u64(v as u64);
    }

    fn write_i32(&mut self, v: i32) {
        self.write_u64(v as u32 as u64);
    }

    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(K);
    }

    fn write_usize(&mut self, v: usize) {
        self.write_u64(v as u64);
    }
}

/// A `HashMap` with [`FastHasher`].
pub type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<FastHasher>>;

/// FNV-1a over the bits of every float: the determinism hash. Two runs that agree to
/// the bit give the same value; the tests compare it across worker counts and host
/// schedulers (`World::state_hash` hashes a world's bodies with it).
pub fn hash_floats(values: impl IntoIterator<Item = f32>) -> u64 {
    values.into_iter().fold(0xcbf2_9ce4_8422_2325, |h, x| (h ^ x.to_bits() as u64).wrapping_mul(0x100_0000_01b3))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::{BuildHasher, Hash};

    fn hash<T: Hash>(t: &T) -> u64 {
        BuildHasherDefault::<FastHasher>::default().hash_one(t)
    }

    /// Keys that differ only in high bits (float bit patterns of voxel-aligned
    /// positions share their low mantissa bits) still spread over the low bits.
    #[test]
    fn high_bit_differences_reach_the_low_bits() {
        let mut buckets = [0u32; 256];
        for i in 0..4096u64 {
            buckets[(hash(&(i << 40)) & 255) as usize] += 1;
        }
        let fullest = *buckets.iter().max().unwrap();
        assert!(fullest <= 40, "fullest of 256 buckets holds {fullest} of 4096 keys");
        assert_ne!(hash(&[1u32, 2, 3]), hash(&[3u32, 2, 1]));
    }
}
