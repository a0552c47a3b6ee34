//! A bit per item with ranks: which items of a sequence are present, and the index
//! of each present one among them, in about 1.5 bits per item.
//!
//! Bit `i` lives in word `i / 64`; `rank[w]` counts the set bits before word `w`,
//! so item `i`'s index is `rank[w] + popcount(word & below)`: one load of each and
//! a popcount, no search; [`RankedBits::ones_from`] walks the set items in order.
//! The placement mask (which grid points hold a probe) and the live mask of
//! compressed visibility (which probes store a map and irradiance) are both this.
//! The GPU reads the same two arrays (`gi_rank` in `vulkan-shaders/include/gi.glsl`,
//! and `gi_select`, the item with a given index, by a binary search over the ranks).
//!
//! [`PackedInts`] are values of a fixed width, from 0 to 31 bits, back to back in
//! 32-bit words: value `i` at bit `i * width`, read with at most two loads (the
//! GPU's `gi_table_bits`). The visibility's signatures and entries are these.

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

    /// The set items at `start` or after, ascending.
    pub fn ones_from(&self, start: usize) -> impl Iterator<Item = usize> + '_ {
        let first = start / 64;
        self.words.iter().enumerate().skip(first).flat_map(move |(w, &word)| {
            let mut bits = if w == first { word & (u64::MAX << (start % 64)) } else { word };
            std::iter::from_fn(move || {
                (bits != 0).then(|| {
                    let i = bits.trailing_zeros() as usize;
                    bits &= bits - 1;
                    w * 64 + i
                })
            })
        })
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

/// The fewest bits that number `count` items, `0..count` (0 for one item or none).
pub fn bits_to_number(count: usize) -> u32 {
    usize::BITS - count.saturating_sub(1).leading_zeros()
}

/// Widest [`PackedInts`] value: the GPU masks a value with `(1 << width) - 1`.
pub const MAX_PACKED_WIDTH: u32 = 31;

/// Values of one width packed back to back in 32-bit words (see the module docs).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PackedInts {
    len: usize,
    width: u32,
    words: Vec<u32>,
}

impl PackedInts {
    /// `values` in `width` bits each. Panics when one does not fit, or when `width`
    /// is past [`MAX_PACKED_WIDTH`].
    pub fn new(values: &[u32], width: u32) -> PackedInts {
        assert!(width <= MAX_PACKED_WIDTH, "{width}-bit values");
        let mut words = vec![0u32; Self::words_for(values.len(), width)];
        for (i, &v) in values.iter().enumerate() {
            assert!(v >> width == 0, "value {i}, {v}, in {width} bits");
            let (bit, n) = (i * width as usize, width as usize);
            if n == 0 {
                continue;
            }
            words[bit / 32] |= v << (bit % 32);
            if bit % 32 + n > 32 {
                words[bit / 32 + 1] |= v >> (32 - bit % 32);
            }
        }
        PackedInts { len: values.len(), width, words }
    }

    /// `len` values of `width` bits in `words` (a device read-back): fails unless the
    /// words are exactly as many as they take and nothing is set past the last value.
    pub fn from_words(len: usize, width: u32, words: Vec<u32>) -> Result<PackedInts, String> {
        let bits = len as u64 * u64::from(width);
        let tail_clear = bits.is_multiple_of(32) || words.last().is_none_or(|w| w >> (bits % 32) == 0);
        if width > MAX_PACKED_WIDTH || words.len() != Self::words_for(len, width) || !tail_clear {
            return Err(format!("{} words for {len} values of {width} bits", words.len()));
        }
        Ok(PackedInts { len, width, words })
    }

    /// Words that `len` values of `width` bits take.
    pub fn words_for(len: usize, width: u32) -> usize {
        (len * width as usize).div_ceil(32)
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bits per value.
    pub fn width(&self) -> u32 {
        self.width
    }

    /// Value `i`.
    #[inline]
    pub fn get(&self, i: usize) -> u32 {
        assert!(i < self.len, "value {i} of {}", self.len);
        let (bit, n) = (i * self.width as usize, self.width);
        if n == 0 {
            return 0;
        }
        let mut v = self.words[bit / 32] >> (bit % 32);
        if bit % 32 + n as usize > 32 {
            v |= self.words[bit / 32 + 1] << (32 - bit % 32);
        }
        v & ((1 << n) - 1)
    }

    /// The words, as the GPU reads them.
    pub fn words(&self) -> &[u32] {
        &self.words
    }

    /// Bytes stored: the words.
    pub fn bytes(&self) -> usize {
        self.words.len() * 4
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values of every width from 0 to 31 read back as written, across word
    /// boundaries, from the words too (a read-back); words that do not fit their
    /// count, or bits past the end, are refused.
    #[test]
    fn packed_values_read_back_at_every_width() {
        assert_eq!((bits_to_number(0), bits_to_number(1), bits_to_number(2)), (0, 0, 1));
        assert_eq!((bits_to_number(3), bits_to_number(256), bits_to_number(257)), (2, 8, 9));
        for width in 0..=MAX_PACKED_WIDTH {
            let top = if width == 0 { 0 } else { (1u64 << width) - 1 };
            let mut values: Vec<u32> = (0..100u64).map(|i| ((i * 0x9E37_79B9 + i) % (top + 1)) as u32).collect();
            values[7] = top as u32;
            let packed = PackedInts::new(&values, width);
            assert_eq!(packed.words().len(), (100 * width as usize).div_ceil(32));
            assert!((0..100).all(|i| packed.get(i) == values[i]), "width {width}");
            let back = PackedInts::from_words(100, width, packed.words().to_vec()).unwrap();
            assert_eq!(back, packed);
            let more = PackedInts::from_words(120, width, packed.words().to_vec());
            assert_eq!(more.is_ok(), PackedInts::words_for(120, width) == packed.words().len(), "width {width}");
            let mut extra = packed.words().to_vec();
            extra.push(0);
            assert!(PackedInts::from_words(100, width, extra).is_err());
            if !(100 * width).is_multiple_of(32) {
                let mut past = packed.words().to_vec();
                *past.last_mut().unwrap() |= 1 << 31;
                assert!(PackedInts::from_words(100, width, past).is_err(), "a bit past the end, width {width}");
            }
        }
        assert!(PackedInts::from_words(1, 32, vec![0]).is_err(), "32-bit values");
        assert!(std::panic::catch_unwind(|| PackedInts::new(&[4], 2)).is_err(), "4 in 2 bits");
    }

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
                for start in [0, 1, len / 2, len.saturating_sub(1), len, len + 70] {
                    let ones: Vec<usize> = bits.ones_from(start).collect();
                    let want: Vec<usize> = (start..len).filter(|&i| set(i)).collect();
                    assert_eq!(ones, want, "len {len}, pattern {pattern}, from {start}");
                }
                assert_eq!(bits.bytes(), len.div_ceil(64) * 12);
            }
        }
    }
}
