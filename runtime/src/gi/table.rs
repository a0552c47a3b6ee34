//! The stored dictionary of compressed visibility: blocks in tables by the width
//! of their spread codes, without their clip texels.
//!
//! The compressor works on 96-byte blocks ([`Block`]: 64 depth codes of 7 bits a
//! byte each, then 64 spread codes of 4 bits; `compress.rs`, "Block texels in 11
//! bits"). Most spread codes are 0: a texel whose rays all hit at about the same
//! distance has no spread, and only texels across an edge have much. So a block
//! is stored with the narrowest width `w` in [`CLASS_WIDTHS`] that holds every one
//! of its spread codes: 0, 1, 2 or 4 bits.
//!
//! **Clip texels.** A texel at the clip value (depth code [`DEPTH_MAX`], spread
//! code 0: it decodes to exactly `[1, 1]`) is not stored: the probe sees nothing
//! that way, which is the whole upper half of a quadrant over open ground (the
//! quadrant's texels near the map's centre look up). A stored block is two mask
//! words (bit `i % 32` of word `i / 32` set for texel `i` stored), then the stored
//! texels in order, `7 + w` bits each (the depth code, then the spread code above
//! it), packed from bit 0 of the first word on; a texel may straddle two words.
//! Texel `i` of a block is the clip value when its mask bit is clear, else the
//! stored texel whose rank is the number of mask bits set below `i`. On the smooth
//! terrain at 1.0 m spacing 62.6% of the texels of the stored blocks are clip
//! texels, and the tables take half the bytes they took with every texel stored:
//! 18.2% -> 10.5% of the raw maps (`cargo bench -p kiln-benches --bench ddgi --
//! nothing_matches`; all scenes in the README).
//!
//! **Where a block starts.** Blocks are numbered class by class: every 0-bit block
//! first, in the order the compressor stored them, then the 1-bit ones, and so on;
//! a block's class follows from its number by comparing it with the three later
//! classes' first numbers. Blocks differ in size, so the table's words start with
//! a base word per [`BASE_BLOCKS`] blocks and a 16-bit offset per block (two a
//! word): block `b`'s data starts at the data's first word plus `bases[b / 1024]`
//! plus `offsets[b]`: 2 bytes per block and 4 per 1,024. Decoding is still a
//! lookup, on the CPU ([`BlockTable::value`]) and on the GPU (`gi_table_value` in
//! `vulkan-shaders/include/gi.glsl`, from the class starts and the table layout in
//! `GiUpdateParams`). [`BlockTable::pack`] sorts the compressor's blocks into
//! classes and says where each one went, so the entries can be renumbered
//! ([`super::CompressedVisibility::from_entries`]).
//!
//! Measured on the smooth terrain at 0.5 m spacing (`cargo bench -p kiln-benches
//! --bench ddgi -- nothing_matches`, swizzled order, 8-bit depth codes then, every
//! texel stored), where half the blocks need at most 1 bit of spread: the
//! dictionary of 96-byte blocks stored 6.04% of the raw maps, the tables by width
//! 5.09%; a fifth class of 3-bit codes would store 5.05%. With 7-bit depth codes,
//! 4.78%.

use super::compress::{decode_texel, Block, BLOCK_WORDS, DEPTH_BITS, DEPTH_MAX, DEPTH_WORDS};
use super::octahedral::QUADRANT_TEXELS;

/// Classes of stored blocks.
pub const CLASSES: usize = 4;

/// Bits per spread code in each class.
pub const CLASS_WIDTHS: [u32; CLASSES] = [0, 1, 2, 4];

/// Words of a block's mask of stored texels.
pub const MASK_WORDS: usize = QUADRANT_TEXELS / 32;

/// Blocks per base word: the data of so many blocks spans at most
/// `1024 * 24` words (a block of 64 stored texels of 11 bits and its mask), so
/// their offsets from the base fit in 16 bits.
pub const BASE_BLOCKS: usize = 1024;
const _: () = assert!(BASE_BLOCKS * (MASK_WORDS + QUADRANT_TEXELS * (DEPTH_BITS + 4) / 32) <= 1 << 16);

/// Texel `i`'s spread code in `block`.
#[inline]
fn spread_code(block: &Block, i: usize) -> u32 {
    block[DEPTH_WORDS + i / 8] >> (i % 8 * 4) & 0xf
}

/// Texel `i`'s depth code in `block`.
#[inline]
fn depth_code(block: &Block, i: usize) -> u32 {
    block[i / 4] >> (i % 4 * 8) & 0xff
}

/// Whether texel `i` of `block` is stored: it is not the clip value.
#[inline]
fn is_stored(block: &Block, i: usize) -> bool {
    depth_code(block, i) != DEPTH_MAX || spread_code(block, i) != 0
}

/// The narrowest class whose width holds every spread code of `block`.
pub fn class_of(block: &Block) -> usize {
    let widest = (0..QUADRANT_TEXELS).map(|i| spread_code(block, i)).max().unwrap_or(0);
    CLASS_WIDTHS.iter().position(|&w| widest < 1 << w).expect("4 bits hold every spread code")
}

/// Words of a stored block of class `c` whose mask is `mask`.
fn stored_words(c: usize, mask: [u32; MASK_WORDS]) -> usize {
    let stored: u32 = mask.iter().map(|w| w.count_ones()).sum();
    MASK_WORDS + (stored as usize * (DEPTH_BITS + CLASS_WIDTHS[c] as usize)).div_ceil(32)
}

/// Where the parts of a table of `len` blocks start: the bases' first word is 0;
/// then the offsets' first word and the data's.
fn layout(len: usize) -> (usize, usize) {
    let offsets = len.div_ceil(BASE_BLOCKS);
    (offsets, offsets + len.div_ceil(2))
}

/// The dictionary as stored (see the module docs).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BlockTable {
    /// `starts[c]`: the number of class `c`'s first block; `starts[CLASSES]` is the
    /// block count.
    starts: [u32; CLASSES + 1],
    /// The bases, the offsets, then the blocks' data.
    words: Vec<u32>,
}

impl BlockTable {
    /// `blocks` (as the compressor stores them) in class tables, and the number each
    /// block has there: blocks keep their order within a class.
    pub fn pack(blocks: &[Block]) -> (BlockTable, Vec<u32>) {
        let classes: Vec<usize> = blocks.iter().map(class_of).collect();
        let mut starts = [0u32; CLASSES + 1];
        for &c in &classes {
            starts[c + 1] += 1;
        }
        for c in 0..CLASSES {
            starts[c + 1] += starts[c];
        }
        let mut next: [u32; CLASSES] = std::array::from_fn(|c| starts[c]);
        let mut numbers = Vec::with_capacity(blocks.len());
        let mut by_number = vec![0usize; blocks.len()];
        for (k, &c) in classes.iter().enumerate() {
            numbers.push(next[c]);
            by_number[next[c] as usize] = k;
            next[c] += 1;
        }
        let (offsets, data) = layout(blocks.len());
        let mut words = vec![0u32; data];
        for (b, &k) in by_number.iter().enumerate() {
            let (block, c) = (&blocks[k], classes[k]);
            let at = words.len() - data;
            if b % BASE_BLOCKS == 0 {
                words[b / BASE_BLOCKS] = at as u32;
            }
            let offset = at - words[b / BASE_BLOCKS] as usize;
            words[offsets + b / 2] |= (offset as u32) << (b % 2 * 16);
            let mut mask = [0u32; MASK_WORDS];
            for i in (0..QUADRANT_TEXELS).filter(|&i| is_stored(block, i)) {
                mask[i / 32] |= 1 << (i % 32);
            }
            let first = words.len();
            words.resize(first + stored_words(c, mask), 0);
            let out = &mut words[first..];
            out[..MASK_WORDS].copy_from_slice(&mask);
            let bits = DEPTH_BITS + CLASS_WIDTHS[c] as usize;
            for (rank, i) in (0..QUADRANT_TEXELS).filter(|&i| is_stored(block, i)).enumerate() {
                debug_assert!(depth_code(block, i) <= DEPTH_MAX, "a depth code of the compressor");
                let code = depth_code(block, i) | spread_code(block, i) << DEPTH_BITS;
                let (word, shift) = (MASK_WORDS + rank * bits / 32, rank * bits % 32);
                out[word] |= code << shift;
                if shift + bits > 32 {
                    out[word + 1] |= code >> (32 - shift);
                }
            }
        }
        (BlockTable { starts, words }, numbers)
    }

    /// The table that `class_starts` (each class's first block number, as
    /// [`BlockTable::class_starts`] gives them), `len` and `words` describe: a
    /// device read-back. Fails when they do not fit together: every block's data
    /// must follow the last one's, where its base and offset say, and end the words.
    pub fn from_parts(class_starts: [u32; CLASSES], len: u32, words: Vec<u32>) -> Result<BlockTable, String> {
        let mut starts = [len; CLASSES + 1];
        starts[..CLASSES].copy_from_slice(&class_starts);
        if class_starts[0] != 0 || (0..CLASSES).any(|c| starts[c] > starts[c + 1]) {
            return Err(format!("class starts {class_starts:?} do not rise from 0 to the block count {len}"));
        }
        let table = BlockTable { starts, words };
        let (_, data) = layout(len as usize);
        let mut end = data;
        for b in 0..len as usize {
            let first = table.block_start(b).filter(|&first| first == end && first + MASK_WORDS <= table.words.len());
            let Some(first) = first else {
                return Err(format!("{} words: block {b} of {len} does not start at word {end}", table.words.len()));
            };
            end += stored_words(table.class(b), [table.words[first], table.words[first + 1]]);
        }
        if end != table.words.len() {
            return Err(format!("{} words for a table of {end} ({len} blocks)", table.words.len()));
        }
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

    /// The first word of the blocks' 16-bit offsets and of their data (the bases
    /// start at word 0).
    pub fn layout(&self) -> [u32; 2] {
        let (offsets, data) = layout(self.len());
        [offsets as u32, data as u32]
    }

    /// Blocks in each class.
    pub fn class_counts(&self) -> [u32; CLASSES] {
        std::array::from_fn(|c| self.starts[c + 1] - self.starts[c])
    }

    /// The stored words: what the GPU reads.
    pub fn words(&self) -> &[u32] {
        &self.words
    }

    /// Bytes stored: the words, and the three later classes' first block.
    pub fn bytes(&self) -> usize {
        self.words.len() * 4 + (CLASSES - 1) * 4
    }

    /// Block `b`'s class.
    #[inline]
    pub fn class(&self, b: usize) -> usize {
        (1..CLASSES).filter(|&c| b >= self.starts[c] as usize).count()
    }

    /// Block `b`'s first word (its mask), or `None` past the words (a read-back).
    #[inline]
    fn block_start(&self, b: usize) -> Option<usize> {
        let (offsets, data) = layout(self.len());
        let base = *self.words.get(b / BASE_BLOCKS)? as usize;
        let offset = (*self.words.get(offsets + b / 2)? >> (b % 2 * 16) & 0xffff) as usize;
        Some(data + base + offset)
    }

    /// Texel `i` of block `b` as `[depth, depth^2]`, as the compressor's block
    /// decodes it (`compress::block_value`).
    #[inline]
    pub fn value(&self, b: usize, i: usize) -> [f32; 2] {
        let (depth, spread) = self.codes(b, i);
        decode_texel(depth, spread)
    }

    /// Texel `i`'s depth and spread codes in block `b`.
    #[inline]
    fn codes(&self, b: usize, i: usize) -> (u32, u32) {
        let first = self.block_start(b).expect("a block of the table");
        let mask = [self.words[first], self.words[first + 1]];
        if mask[i / 32] >> (i % 32) & 1 == 0 {
            return (DEPTH_MAX, 0);
        }
        let below = (1u64 << i) - 1;
        let rank = ((mask[0] as u64 | (mask[1] as u64) << 32) & below).count_ones() as usize;
        let width = CLASS_WIDTHS[self.class(b)] as usize;
        let bits = DEPTH_BITS + width;
        let (word, shift) = (first + MASK_WORDS + rank * bits / 32, rank * bits % 32);
        let mut code = self.words[word] >> shift;
        if shift + bits > 32 {
            code |= self.words[word + 1] << (32 - shift);
        }
        (code & DEPTH_MAX, code >> DEPTH_BITS & ((1 << width) - 1))
    }

    /// Block `b` as the compressor stores it.
    pub fn block(&self, b: usize) -> Block {
        let mut block = [0; BLOCK_WORDS];
        for i in 0..QUADRANT_TEXELS {
            let (depth, spread) = self.codes(b, i);
            block[i / 4] |= depth << (i % 4 * 8);
            block[DEPTH_WORDS + i / 8] |= spread << (i % 8 * 4);
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
        // One base word and six of offsets, then each block: two mask words and its
        // stored texels, 7 bits of depth and the class's spread bits each.
        assert_eq!(table.layout(), [1, 7]);
        let stored = |b: &Block| (0..QUADRANT_TEXELS).filter(|&i| is_stored(b, i)).count();
        let words: usize =
            blocks.iter().map(|b| 2 + (stored(b) * (7 + CLASS_WIDTHS[class_of(b)] as usize)).div_ceil(32)).sum();
        assert!(blocks.iter().any(|b| stored(b) < QUADRANT_TEXELS), "a clip texel among them");
        assert_eq!(table.words().len(), 7 + words);
        assert_eq!(table.bytes(), (7 + words) * 4 + 12);
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
    fn a_quadrant_without_spread_stores_7_bits_a_texel() {
        let flat: [[f32; 2]; QUADRANT_TEXELS] = std::array::from_fn(|i| {
            let d = i as f32 / 64.0;
            [d, d * d]
        });
        let block = pack_block(&flat);
        assert!(flat.iter().all(|&t| encode_texel(t).1 == 0));
        let (table, numbers) = BlockTable::pack(&[block]);
        // A base, an offset, the mask and 64 x 7 bits.
        assert_eq!((numbers[0], table.class(0), table.layout(), table.words().len()), (0, 0, [1, 2], 2 + 2 + 14));
        assert_eq!(&table.words()[2..4], &[u32::MAX, u32::MAX]);
        assert!((0..QUADRANT_TEXELS).all(|i| table.value(0, i) == block_value(&block, i)));
        assert!(BlockTable::pack(&[]).0.is_empty());
        assert_eq!(BlockTable::pack(&[]).0, BlockTable::default());
    }

    /// A quadrant over open ground: the texels looking up (`cx + cy < 8`, counted
    /// from the map's centre) see nothing and are not stored.
    #[test]
    fn clip_texels_are_not_stored() {
        let ground: [[f32; 2]; QUADRANT_TEXELS] = std::array::from_fn(|i| {
            let (cx, cy) = (i % 8, i / 8);
            if cx + cy < 8 {
                [1.0, 1.0]
            } else {
                let d = 0.3 + 0.05 * cx as f32;
                [d, d * d + if cy == 7 { 0.02 } else { 0.0 }]
            }
        });
        let block = pack_block(&ground);
        // A spread code of 1 where the last row has one: class 1, 8 bits a texel.
        assert_eq!(class_of(&block), 1);
        let (table, _) = BlockTable::pack(&[block]);
        // 28 stored texels of 8 bits: 7 words after the mask.
        assert_eq!(table.words().len(), 2 + 2 + 7);
        let mask = table.words()[2] as u64 | (table.words()[3] as u64) << 32;
        assert_eq!(mask.count_ones(), 28);
        for i in 0..QUADRANT_TEXELS {
            assert_eq!(mask >> i & 1 == 1, i % 8 + i / 8 >= 8, "texel {i}");
            assert_eq!(table.value(0, i), block_value(&block, i), "texel {i}");
        }
        assert_eq!(table.value(0, 0), [1.0, 1.0]);
        assert_eq!(table.block(0), block);
        // A block of clip texels only (the compressor stores none: it is a dead
        // quadrant) would still pack and decode.
        let clip = pack_block(&[[1.0, 1.0]; QUADRANT_TEXELS]);
        let (table, numbers) = BlockTable::pack(&[block, clip, block]);
        assert_eq!(numbers, [1, 0, 2], "the clip block is the one of class 0");
        assert_eq!(table.words().len(), 3 + 2 + (2 + 7) + (2 + 7));
        assert!((0..QUADRANT_TEXELS).all(|i| table.value(0, i) == [1.0, 1.0] && table.value(2, i) == table.value(1, i)));
        assert_eq!(table.block(0), clip);
    }

    /// Block data beyond the 16-bit offsets' reach from one base: a table of more
    /// than [`BASE_BLOCKS`] blocks starts a base per 1,024, and decodes throughout.
    #[test]
    fn bases_cover_large_tables() {
        let blocks: Vec<Block> = (0..4 * BASE_BLOCKS + 5)
            .map(|k| block_with(move |i| if i == k % 64 { 15 } else { (i + k) as u32 % 3 }))
            .collect();
        let (table, numbers) = BlockTable::pack(&blocks);
        assert_eq!(table.layout()[0], 5);
        assert!(table.words()[3] > 1 << 16, "the fourth base lies beyond 16 bits");
        for (k, block) in blocks.iter().enumerate().step_by(97) {
            assert_eq!(&table.block(numbers[k] as usize), block);
        }
        let back = BlockTable::from_parts(table.class_starts(), table.len() as u32, table.words().to_vec());
        assert_eq!(back.as_ref(), Ok(&table));
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
        // An offset that moves a block, and a mask that claims fewer texels than the
        // block holds.
        let mut moved = table.words().to_vec();
        moved[1] += 1 << 16;
        assert!(BlockTable::from_parts(table.class_starts(), len, moved).unwrap_err().contains("does not start"));
        let mut shrunk = table.words().to_vec();
        shrunk[table.layout()[1] as usize] = 0;
        assert!(BlockTable::from_parts(table.class_starts(), len, shrunk).is_err());
        assert_eq!(BlockTable::from_parts([0; CLASSES], 0, Vec::new()), Ok(BlockTable::default()));
    }
}
