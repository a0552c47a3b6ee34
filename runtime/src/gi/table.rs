//! The stored dictionary of compressed visibility: blocks in tables by the width
//! of their spread codes.
//!
//! The compressor works on 96-byte blocks ([`Block`]: 64 depth codes of 7 bits a
//! byte each, then 64 spread codes of 4 bits; `compress.rs`, "Block texels in 11
//! bits"). A stored block packs its depth codes 7 bits each, texel `i`'s at bit
//! `7 i` of 14 words (a code may straddle two). Most spread codes are 0: a texel
//! whose rays all hit at about the same distance has no spread, and only texels
//! across an edge have much. So a block is stored with the narrowest width in
//! [`CLASS_WIDTHS`] that holds every one of its spread codes: 0, 1, 2 or 4 bits, a
//! block of 56, 64, 72 or 88 bytes. A block of width `w > 0` holds texel `i`'s
//! spread code at bit `w * (i % (32 / w))` of its spread word `i / (32 / w)`, after
//! the depth words (width 4 is the [`Block`] layout of the codes).
//!
//! Blocks are numbered class by class: every 0-bit block first, in the order the
//! compressor stored them, then the 1-bit ones, and so on. A block's class follows
//! from its number by comparing it with the three later classes' first numbers,
//! and its words start at its class's first word plus its place in the class times
//! the class's block size. Decoding is still a lookup, on the CPU
//! ([`BlockTable::value`]) and on the GPU (`gi_table_value` in
//! `vulkan-shaders/include/gi.glsl`, from the class starts in `GiUpdateParams`).
//! [`BlockTable::pack`] sorts the compressor's blocks into classes and says where
//! each one went, so the entries can be renumbered
//! ([`super::CompressedVisibility::from_entries`]).
//!
//! Measured on the smooth terrain at 0.5 m spacing (`cargo bench -p kiln-benches
//! --bench ddgi -- nothing_matches`, swizzled order, 8-bit depth codes then), where
//! half the blocks need at most 1 bit of spread: the dictionary of 96-byte blocks
//! stored 6.04% of the raw maps, the tables 5.09%; a fifth class of 3-bit codes
//! would store 5.05%. With 7-bit depth codes, 4.78%.

use super::compress::{decode_texel, Block, BLOCK_WORDS, DEPTH_BITS, DEPTH_MAX, DEPTH_WORDS};
use super::octahedral::QUADRANT_TEXELS;

/// Classes of stored blocks.
pub const CLASSES: usize = 4;

/// Bits per spread code in each class.
pub const CLASS_WIDTHS: [u32; CLASSES] = [0, 1, 2, 4];

/// Words of depth codes at the start of a stored block: 64 codes of 7 bits.
pub const STORED_DEPTH_WORDS: usize = QUADRANT_TEXELS * DEPTH_BITS / 32;

/// Words of a stored block of class `c`: the depth words, then the spread codes.
pub const fn class_block_words(c: usize) -> usize {
    STORED_DEPTH_WORDS + QUADRANT_TEXELS * CLASS_WIDTHS[c] as usize / 32
}

/// Texel `i`'s spread code in `block`.
#[inline]
fn spread_code(block: &Block, i: usize) -> u32 {
    block[DEPTH_WORDS + i / 8] >> (i % 8 * 4) & 0xf
}

/// The narrowest class whose width holds every spread code of `block`.
pub fn class_of(block: &Block) -> usize {
    let widest = (0..QUADRANT_TEXELS).map(|i| spread_code(block, i)).max().unwrap_or(0);
    CLASS_WIDTHS.iter().position(|&w| widest < 1 << w).expect("4 bits hold every spread code")
}

/// The dictionary as stored (see the module docs).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BlockTable {
    /// `starts[c]`: the number of class `c`'s first block; `starts[CLASSES]` is the
    /// block count.
    starts: [u32; CLASSES + 1],
    /// `word_starts[c]`: class `c`'s first word.
    word_starts: [u32; CLASSES],
    words: Vec<u32>,
}

impl BlockTable {
    /// `blocks` (as the compressor stores them) in class tables, and the number each
    /// block has there: blocks keep their order within a class.
    pub fn pack(blocks: &[Block]) -> (BlockTable, Vec<u32>) {
        let classes: Vec<usize> = blocks.iter().map(class_of).collect();
        let mut counts = [0u32; CLASSES];
        for &c in &classes {
            counts[c] += 1;
        }
        let mut table = BlockTable::with_counts(counts);
        let mut next: [u32; CLASSES] = std::array::from_fn(|c| table.starts[c]);
        let mut numbers = Vec::with_capacity(blocks.len());
        for (block, &c) in blocks.iter().zip(&classes) {
            let b = next[c];
            next[c] += 1;
            numbers.push(b);
            let base = table.base(c, b as usize);
            let out = &mut table.words[base..base + class_block_words(c)];
            for i in 0..QUADRANT_TEXELS {
                let (word, shift) = (i * DEPTH_BITS / 32, i * DEPTH_BITS % 32);
                let code = block[i / 4] >> (i % 4 * 8) & 0xff;
                debug_assert!(code <= DEPTH_MAX, "a depth code of the compressor");
                out[word] |= code << shift;
                if shift + DEPTH_BITS > 32 {
                    out[word + 1] |= code >> (32 - shift);
                }
            }
            let width = CLASS_WIDTHS[c] as usize;
            if let Some(per_word) = 32usize.checked_div(width) {
                for i in 0..QUADRANT_TEXELS {
                    out[STORED_DEPTH_WORDS + i / per_word] |= spread_code(block, i) << (i % per_word * width);
                }
            }
        }
        (table, numbers)
    }

    /// A zeroed table of `counts[c]` blocks in class `c`.
    fn with_counts(counts: [u32; CLASSES]) -> BlockTable {
        let mut starts = [0u32; CLASSES + 1];
        let mut word_starts = [0u32; CLASSES];
        let mut words = 0usize;
        for c in 0..CLASSES {
            starts[c + 1] = starts[c] + counts[c];
            word_starts[c] = words as u32;
            words += counts[c] as usize * class_block_words(c);
        }
        BlockTable { starts, word_starts, words: vec![0; words] }
    }

    /// The table that `class_starts` (each class's first block number, as
    /// [`BlockTable::class_starts`] gives them), `len` and `words` describe: a
    /// device read-back. Fails when they do not fit together.
    pub fn from_parts(class_starts: [u32; CLASSES], len: u32, words: Vec<u32>) -> Result<BlockTable, String> {
        let mut ends = [len; CLASSES];
        ends[..CLASSES - 1].copy_from_slice(&class_starts[1..]);
        if class_starts[0] != 0 || (0..CLASSES).any(|c| class_starts[c] > ends[c]) {
            return Err(format!("class starts {class_starts:?} do not rise from 0 to the block count {len}"));
        }
        let mut table = BlockTable::with_counts(std::array::from_fn(|c| ends[c] - class_starts[c]));
        if table.words.len() != words.len() {
            return Err(format!("{} words for a table of {} ({len} blocks)", words.len(), table.words.len()));
        }
        table.words = words;
        Ok(table)
    }

    /// Blocks stored.
    pub fn len(&self) -> usize {
        self.starts[CLASSES] as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Each class's first block number (the first is 0).
    pub fn class_starts(&self) -> [u32; CLASSES] {
        std::array::from_fn(|c| self.starts[c])
    }

    /// Each class's first word (the first is 0).
    pub fn class_word_starts(&self) -> [u32; CLASSES] {
        self.word_starts
    }

    /// Blocks in each class.
    pub fn class_counts(&self) -> [u32; CLASSES] {
        std::array::from_fn(|c| self.starts[c + 1] - self.starts[c])
    }

    /// The stored words: what the GPU reads.
    pub fn words(&self) -> &[u32] {
        &self.words
    }

    /// Bytes stored: the words, and the three later classes' first block and word.
    pub fn bytes(&self) -> usize {
        self.words.len() * 4 + 2 * (CLASSES - 1) * 4
    }

    /// Block `b`'s class.
    #[inline]
    pub fn class(&self, b: usize) -> usize {
        (1..CLASSES).filter(|&c| b >= self.starts[c] as usize).count()
    }

    /// Block `b`'s first word, in class `c`.
    #[inline]
    fn base(&self, c: usize, b: usize) -> usize {
        self.word_starts[c] as usize + (b - self.starts[c] as usize) * class_block_words(c)
    }

    /// Texel `i` of block `b` as `[depth, depth^2]`, as the compressor's block
    /// decodes it (`compress::block_value`).
    #[inline]
    pub fn value(&self, b: usize, i: usize) -> [f32; 2] {
        let c = self.class(b);
        let base = self.base(c, b);
        decode_texel(self.depth_code(base, i), self.spread_code(c, base, i))
    }

    /// Texel `i`'s depth code in the block at word `base`.
    #[inline]
    fn depth_code(&self, base: usize, i: usize) -> u32 {
        let (word, shift) = (base + i * DEPTH_BITS / 32, i * DEPTH_BITS % 32);
        let mut code = self.words[word] >> shift;
        if shift + DEPTH_BITS > 32 {
            code |= self.words[word + 1] << (32 - shift);
        }
        code & DEPTH_MAX
    }

    /// Texel `i`'s spread code in the block of class `c` at word `base`.
    #[inline]
    fn spread_code(&self, c: usize, base: usize, i: usize) -> u32 {
        let width = CLASS_WIDTHS[c] as usize;
        match 32usize.checked_div(width) {
            None => 0,
            Some(per_word) => {
                self.words[base + STORED_DEPTH_WORDS + i / per_word] >> (i % per_word * width) & ((1 << width) - 1)
            }
        }
    }

    /// Block `b` as the compressor stores it.
    pub fn block(&self, b: usize) -> Block {
        let c = self.class(b);
        let base = self.base(c, b);
        let mut block = [0; BLOCK_WORDS];
        for i in 0..QUADRANT_TEXELS {
            block[i / 4] |= self.depth_code(base, i) << (i % 4 * 8);
            block[DEPTH_WORDS + i / 8] |= self.spread_code(c, base, i) << (i % 8 * 4);
        }
        block
    }

    /// Every block as the compressor stores them, in table order: packing these
    /// again gives this table, every block keeping its number.
    pub fn blocks(&self) -> Vec<Block> {
        (0..self.len()).map(|b| self.block(b)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::super::compress::{block_value, encode_texel, pack_block};
    use super::*;

    /// A block whose texels' spread codes are `codes(i)`, depths `i * 3 + 7` (mod
    /// 128: the largest code among them, and each place a code can take in the
    /// stored words, straddling two or not).
    fn block_with(codes: impl Fn(usize) -> u32) -> Block {
        let mut block = [0; BLOCK_WORDS];
        for i in 0..QUADRANT_TEXELS {
            block[i / 4] |= ((i as u32 * 3 + 7) & DEPTH_MAX) << (i % 4 * 8);
            block[DEPTH_WORDS + i / 8] |= codes(i) << (i % 8 * 4);
        }
        block
    }

    #[test]
    fn blocks_go_to_the_narrowest_class_and_decode_as_the_compressor_stored_them() {
        // Widest codes 0, 1, 2 and 3, then 4 and 15: classes 0, 1, 2, 2, 3, 3.
        let widest = [0, 1, 2, 3, 4, 15];
        let want_class = [0, 1, 2, 2, 3, 3];
        // Interleaved so that packing must reorder: two of each, every code up to
        // the widest one used at some texel.
        let blocks: Vec<Block> = (0..12)
            .map(|k| {
                let top = widest[(k * 5) % 6];
                block_with(move |i| if i == 63 - k { top } else { (i + k) as u32 % (top + 1) })
            })
            .collect();
        let (table, numbers) = BlockTable::pack(&blocks);
        assert_eq!(table.len(), 12);
        assert_eq!(table.class_counts(), [2, 2, 4, 4]);
        assert_eq!(table.class_starts(), [0, 2, 4, 8]);
        // 56 + 64 + 72 + 88 bytes per class, in class order.
        assert_eq!(table.class_word_starts(), [0, 28, 60, 132]);
        assert_eq!(table.words().len(), 132 + 4 * 22);
        assert_eq!(table.bytes(), (132 + 4 * 22) * 4 + 24);
        let mut seen = [false; 12];
        for (k, block) in blocks.iter().enumerate() {
            let b = numbers[k] as usize;
            assert!(!std::mem::replace(&mut seen[b], true), "block numbers are distinct");
            assert_eq!(class_of(block), want_class[(k * 5) % 6]);
            assert_eq!(table.class(b), class_of(block));
            assert_eq!(&table.block(b), block);
            for i in 0..QUADRANT_TEXELS {
                assert_eq!(table.value(b, i), block_value(block, i), "block {k} texel {i}");
            }
        }
        // Within a class, blocks keep the compressor's order.
        for k in 1..12 {
            for j in 0..k {
                if class_of(&blocks[j]) == class_of(&blocks[k]) {
                    assert!(numbers[j] < numbers[k]);
                }
            }
        }
        // The table's own blocks pack to the same table, each keeping its number.
        let (again, renumbered) = BlockTable::pack(&table.blocks());
        assert_eq!(again, table);
        assert_eq!(renumbered, (0..12).collect::<Vec<u32>>());
    }

    #[test]
    fn a_quadrant_without_spread_stores_56_bytes() {
        let flat: [[f32; 2]; QUADRANT_TEXELS] = std::array::from_fn(|i| {
            let d = i as f32 / 63.0;
            [d, d * d]
        });
        let block = pack_block(&flat);
        assert!(flat.iter().all(|&t| encode_texel(t).1 == 0));
        let (table, numbers) = BlockTable::pack(&[block]);
        assert_eq!((numbers[0], table.class(0), table.words().len()), (0, 0, 14));
        assert!((0..QUADRANT_TEXELS).all(|i| table.value(0, i) == block_value(&block, i)));
        assert!(BlockTable::pack(&[]).0.is_empty());
        assert_eq!(BlockTable::pack(&[]).0, BlockTable::default());
    }

    #[test]
    fn parts_read_back_must_fit_together() {
        let blocks = [block_with(|_| 0), block_with(|i| i as u32 % 16), block_with(|i| i as u32 % 2)];
        let (table, _) = BlockTable::pack(&blocks);
        let back = BlockTable::from_parts(table.class_starts(), table.len() as u32, table.words().to_vec());
        assert_eq!(back.as_ref(), Ok(&table));
        let len = table.len() as u32;
        let short = table.words()[1..].to_vec();
        assert!(BlockTable::from_parts(table.class_starts(), len, short).unwrap_err().contains("words"));
        assert!(BlockTable::from_parts([0, 2, 1, 3], len, table.words().to_vec()).unwrap_err().contains("rise"));
        assert!(BlockTable::from_parts([1, 1, 2, 3], len, table.words().to_vec()).is_err());
        assert!(BlockTable::from_parts(table.class_starts(), len + 1, table.words().to_vec()).is_err());
        assert_eq!(BlockTable::from_parts([0; CLASSES], 0, Vec::new()), Ok(BlockTable::default()));
    }
}
