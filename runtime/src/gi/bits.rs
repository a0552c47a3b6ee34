//! A bit per item with ranks: which items of a sequence are present, and the index
//! of each present one among them, in about 1.5 bits per item.
//!
//! Bit `i` lives in word `i / 64`; `rank[w]` counts the set bits before word `w`,
//! so item `i`'s index is `rank[w] + popcount(word & below)`: one load of each and
//! a popcount, no search. The placement mask (which grid points hold a probe) and
//! the live mask of compressed visibility (which probes store a map) are both this.
//! The GPU reads the same two arrays (`gi_rank` in `vulkan-shaders/include/gi.glsl`).

/// Bits with per-word ranks (see the module docs).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RankedBits {
    len: usize,
    words: Vec<u64>,
    rank: Vec<u32>,
}

impl RankedBits {
    /// `len` bits, bit `i` set where `set(i)`.
    pub fn from_fn(len: usize, mut set: impl FnMut(usize) -> bool) -> RankedBits {
        let mut words = vec![0u64; len.div_ceil(64)];
        for i in 0..len {
            if set(i) {
                words[i / 64] |= 1 << (i % 64);
            }
        }
        let mut rank = Vec::with_capacity(words.len());
        let mut count = 0;
        for w in &words {
            rank.push(count);
            count += w.count_ones();
        }
        RankedBits { len, words, rank }
    }

    /// Bits in all.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Set bits in all.
    pub fn count(&self) -> usize {
        self.words.last().map_or(0, |w| *self.rank.last().unwrap() as usize + w.count_ones() as usize)
    }

    /// The index of item `i` among the set ones, if its bit is set (`None` past the end).
    #[inline]
    pub fn rank(&self, i: usize) -> Option<u32> {
        if i >= self.len {
            return None;
        }
        let word = self.words[i / 64];
        let bit = 1u64 << (i % 64);
        (word & bit != 0).then(|| self.rank[i / 64] + (word & (bit - 1)).count_ones())
    }

    /// The words and ranks, as the GPU reads them.
    pub fn words(&self) -> (&[u64], &[u32]) {
        (&self.words, &self.rank)
    }

    /// Bytes stored: 8 per word and 4 per rank.
    pub fn bytes(&self) -> usize {
        self.words.len() * 8 + self.rank.len() * 4
    }

    /// Checks the ranks count the bits before them and no bit is set past the end.
    pub fn validate(&self) {
        assert_eq!(self.words.len(), self.len.div_ceil(64));
        assert_eq!(self.rank.len(), self.words.len());
        let mut count = 0;
        for (w, &bits) in self.words.iter().enumerate() {
            assert_eq!(self.rank[w], count, "rank of word {w}");
            count += bits.count_ones();
        }
        if !self.len.is_multiple_of(64) {
            assert_eq!(self.words.last().unwrap() >> (self.len % 64), 0, "bits past the end");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ranks equal a count of the set bits before each item, for lengths around word
    /// boundaries, empty, full and sparse patterns.
    #[test]
    fn ranks_count_the_set_bits_before() {
        for len in [0, 1, 63, 64, 65, 127, 128, 129, 1000] {
            for pattern in 0..4 {
                let set = |i: usize| match pattern {
                    0 => false,
                    1 => true,
                    2 => i % 3 == 1,
                    _ => (i * 7919) % 13 < 2,
                };
                let bits = RankedBits::from_fn(len, set);
                bits.validate();
                let mut before = 0;
                for i in 0..len {
                    assert_eq!(bits.rank(i), set(i).then_some(before), "len {len}, pattern {pattern}, bit {i}");
                    before += u32::from(set(i));
                }
                assert_eq!(bits.count(), before as usize);
                assert_eq!(bits.rank(len), None, "past the end");
                assert_eq!(bits.bytes(), len.div_ceil(64) * 12);
            }
        }
    }
}
