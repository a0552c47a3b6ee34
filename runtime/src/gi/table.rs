//! The stored dictionary of compressed visibility: blocks without their clip
//! texels, their masks numbered in a dictionary, in groups of one size.
//!
//! The compressor works on 96-byte blocks ([`Block`]: 64 depth codes of 7 bits a
//! byte each, then 64 spread codes of 4 bits; `compress.rs`, "Block texels in 11
//! bits"). Most spread codes are 0: a texel whose rays all hit at about the same
//! distance has no spread, and only texels across an edge have much. So a block
//! is stored with the narrowest width `w` in [`CLASS_WIDTHS`] that holds every one
//! of its spread codes (0, 1, 2 or 4 bits): its class.
//!
//! **Clip texels.** A texel at the clip value (depth code [`DEPTH_MAX`], spread
//! code 0: it decodes to exactly `[1, 1]`) is not stored: the probe sees nothing
//! that way, which is the whole upper half of a quadrant over open ground (the
//! quadrant's texels near the map's centre look up). A block's mask has bit `i`
//! set for texel `i` stored. Texel `i` is the clip value when its mask bit is
//! clear, else the stored texel whose rank is the number of mask bits set below
//! `i`. On the smooth terrain at 1.0 m spacing 62.6% of the texels of the stored
//! blocks are clip texels.
//!
//! **Masks by number.** Blocks share masks: the smooth terrain's 9,758 blocks at
//! 1.0 m have 2,029 distinct ones. Each distinct mask is stored once (two words,
//! texel `i` at bit `i % 32` of word `i / 32`), in the order the blocks first use
//! them, and a block stores its mask's number in `mask_bits` bits, the fewest that
//! number them all.
//!
//! **Groups.** A block of class `c` whose mask keeps `n` texels takes
//! `mask_bits + n * (7 + w)` bits: its mask number, then its texels in order (the
//! depth code, the spread code above it). Blocks are numbered by (class, texels
//! kept), keeping the compressor's order within each, and a run of at most
//! [`GROUP_BLOCKS`] blocks of the same (class, count) is a group: its blocks lie
//! back to back from bit 0 of the group's first word, so block `b` starts
//! `(b - first) * size` bits in, and only the group is found by a search. A group
//! record is three words: its first block number, its first word (counted from
//! the data's), and `class | count << 8`. The smooth terrain at 1.0 m has 191
//! groups.
//!
//! **Words.** The table's words are the group records, the masks, then the data.
//! Decoding is a binary search over the records' first block numbers and two reads
//! of at most two words (the mask number, the texel) and one of the mask, on the
//! CPU ([`BlockTable::value`]) and on the GPU (`gi_table_block`, once per quadrant
//! a bilinear sample reads, then `gi_block_value` per texel, in
//! `vulkan-shaders/include/gi.glsl`, from [`BlockTable::layout`] in
//! `GiUpdateParams`). [`BlockTable::pack`] sorts the compressor's blocks into
//! groups and says where each one went, so the entries can be renumbered
//! ([`super::CompressedVisibility::from_entries`]).
//!
//! Measured (`cargo bench -p kiln-benches --bench ddgi -- nothing_matches`, all
//! scenes in `docs/gpu.md`), the smooth terrain at 1.0 m spacing, swizzled order:
//! every texel stored in a table per class, 18.2% of the raw maps; each block with
//! its own mask and a 16-bit offset, 10.46%; masks by number, in groups, 8.48%.

use std::collections::HashMap;

use super::bits::bits_to_number;
use super::compress::{decode_texel, Block, BLOCK_WORDS, DEPTH_BITS, DEPTH_MAX, DEPTH_WORDS};
use super::octahedral::QUADRANT_TEXELS;

/// Classes of stored blocks.
pub const CLASSES: usize = 4;

/// Bits per spread code in each class.
pub const CLASS_WIDTHS: [u32; CLASSES] = [0, 1, 2, 4];

/// Words of a stored mask.
pub const MASK_WORDS: usize = QUADRANT_TEXELS / 32;

/// Words of a group record: first block, first word, `class | count << 8`.
pub const GROUP_WORDS: usize = 3;

/// Most blocks in a group: a block's bit offset within its group stays below
/// `4096 * (31 + 64 * 11)` bits, well inside 32 bits on the GPU.
pub const GROUP_BLOCKS: usize = 4096;
const _: () = assert!(GROUP_BLOCKS * (31 + QUADRANT_TEXELS * (DEPTH_BITS + 4)) < 1 << 32);

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

/// The mask of the texels of `block` that are stored.
fn mask_of(block: &Block) -> u64 {
    (0..QUADRANT_TEXELS).filter(|&i| is_stored(block, i)).fold(0, |mask, i| mask | 1 << i)
}

/// The narrowest class whose width holds every spread code of `block`.
pub fn class_of(block: &Block) -> usize {
    let widest = (0..QUADRANT_TEXELS).map(|i| spread_code(block, i)).max().unwrap_or(0);
    CLASS_WIDTHS.iter().position(|&w| widest < 1 << w).expect("4 bits hold every spread code")
}

/// Bits of a mask number in a dictionary of `masks`: the fewest that number them
/// all (0 for one mask).
fn mask_bits(masks: usize) -> u32 {
    bits_to_number(masks)
}

/// Bits per texel kept in class `c`.
fn texel_bits(c: usize) -> usize {
    DEPTH_BITS + CLASS_WIDTHS[c] as usize
}

/// A group record, decoded.
#[derive(Clone, Copy, Debug)]
struct Group {
    /// Its first block's number.
    first: usize,
    /// Its first word, counted from the data's first word.
    start: usize,
    class: usize,
    /// Texels kept per block.
    kept: usize,
}

/// The dictionary as stored (see the module docs).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BlockTable {
    len: usize,
    groups: usize,
    masks: usize,
    /// The group records, the masks, then the blocks' data.
    words: Vec<u32>,
}

/// Bits appended to words from bit 0 of the first on.
struct BitWriter<'a> {
    words: &'a mut Vec<u32>,
    /// Bits written, counted from the first word given.
    at: usize,
    first: usize,
}

impl BitWriter<'_> {
    /// The low `n` bits of `value`.
    fn push(&mut self, value: u32, n: usize) {
        debug_assert!(n == 32 || value >> n == 0, "{value} in {n} bits");
        if n == 0 {
            return;
        }
        let (word, shift) = (self.first + self.at / 32, self.at % 32);
        self.words.resize(self.first + (self.at + n).div_ceil(32), 0);
        self.words[word] |= value << shift;
        if shift + n > 32 {
            self.words[word + 1] |= value >> (32 - shift);
        }
        self.at += n;
    }

    /// Moves on to the next word boundary.
    fn align(&mut self) {
        self.at = self.at.next_multiple_of(32);
        self.words.resize(self.first + self.at / 32, 0);
    }
}

impl BlockTable {
    /// `blocks` (as the compressor stores them) in groups, and the number each block
    /// has there: blocks keep their order within a (class, texels kept) pair.
    pub fn pack(blocks: &[Block]) -> (BlockTable, Vec<u32>) {
        let masks: Vec<u64> = blocks.iter().map(mask_of).collect();
        let keys: Vec<(usize, u32)> = blocks.iter().zip(&masks).map(|(b, m)| (class_of(b), m.count_ones())).collect();
        let mut order: Vec<usize> = (0..blocks.len()).collect();
        order.sort_by_key(|&k| keys[k]);
        let mut numbers = vec![0u32; blocks.len()];
        for (b, &k) in order.iter().enumerate() {
            numbers[k] = b as u32;
        }
        let mut dictionary: Vec<u64> = Vec::new();
        let mut mask_numbers: HashMap<u64, u32> = HashMap::new();
        for &k in &order {
            mask_numbers.entry(masks[k]).or_insert_with(|| {
                dictionary.push(masks[k]);
                dictionary.len() as u32 - 1
            });
        }
        let number_bits = mask_bits(dictionary.len()) as usize;
        let mut records: Vec<[u32; GROUP_WORDS]> = Vec::new();
        let mut data = Vec::new();
        let mut out = BitWriter { words: &mut data, at: 0, first: 0 };
        let mut group_first = 0;
        for (b, &k) in order.iter().enumerate() {
            let ((c, kept), block) = (keys[k], &blocks[k]);
            if b == 0 || keys[order[b - 1]] != (c, kept) || b - group_first == GROUP_BLOCKS {
                out.align();
                group_first = b;
                records.push([b as u32, (out.at / 32) as u32, c as u32 | kept << 8]);
            }
            out.push(mask_numbers[&masks[k]], number_bits);
            for i in (0..QUADRANT_TEXELS).filter(|&i| is_stored(block, i)) {
                debug_assert!(depth_code(block, i) <= DEPTH_MAX, "a depth code of the compressor");
                out.push(depth_code(block, i) | spread_code(block, i) << DEPTH_BITS, texel_bits(c));
            }
        }
        out.align();
        let mut words = Vec::with_capacity(records.len() * GROUP_WORDS + dictionary.len() * MASK_WORDS + data.len());
        words.extend(records.iter().flatten());
        words.extend(dictionary.iter().flat_map(|&m| [m as u32, (m >> 32) as u32]));
        words.extend(data);
        let table = BlockTable { len: blocks.len(), groups: records.len(), masks: dictionary.len(), words };
        (table, numbers)
    }

    /// The table of `len` blocks that `layout` (as [`BlockTable::layout`] gives it)
    /// and `words` describe: a device read-back. Fails when they do not fit
    /// together: the layout must follow from its group and mask counts, the groups
    /// must number the blocks from 0 and lie back to back to the end of the words,
    /// and every block's mask number must name a mask that keeps as many texels
    /// as its group says.
    pub fn from_parts(len: u32, layout: [u32; 4], words: Vec<u32>) -> Result<BlockTable, String> {
        let [groups, masks_first, data_first, number_bits] = layout.map(|x| x as usize);
        let masks = data_first.saturating_sub(masks_first) / MASK_WORDS;
        let fits = masks_first == groups * GROUP_WORDS
            && data_first >= masks_first
            && data_first == masks_first + masks * MASK_WORDS
            && number_bits == mask_bits(masks) as usize
            && data_first <= words.len()
            && (len == 0) == (groups == 0);
        if !fits {
            return Err(format!("table layout {layout:?} does not fit {} words of {len} blocks", words.len()));
        }
        let table = BlockTable { len: len as usize, groups, masks, words };
        let mut end = 0;
        for g in 0..groups {
            let group = table.group(g);
            let next = if g + 1 < groups { table.group(g + 1).first } else { table.len };
            let count = next.checked_sub(group.first).filter(|&n| n > 0 && n <= GROUP_BLOCKS);
            let Some(count) = count.filter(|_| (g == 0) == (group.first == 0)) else {
                return Err(format!("group {g} of {groups} starts at block {} (of {len})", group.first));
            };
            if group.class >= CLASSES || group.kept > QUADRANT_TEXELS || group.start != end {
                return Err(format!(
                    "group {g} of {groups}: class {}, {} texels, at word {}",
                    group.class, group.kept, group.start
                ));
            }
            end += (count * table.block_bits(group)).div_ceil(32);
            if data_first + end > table.words.len() {
                return Err(format!("group {g} of {groups} ends past the {} words", table.words.len()));
            }
            for b in group.first..next {
                let mask = table.mask_number(group, b).and_then(|m| table.mask(m));
                if mask.map(u64::count_ones) != Some(group.kept as u32) {
                    return Err(format!("block {b} names no mask of {} texels", group.kept));
                }
            }
        }
        if data_first + end != table.words.len() {
            return Err(format!("{} words for a table of {} ({len} blocks)", table.words.len(), data_first + end));
        }
        Ok(table)
    }

    /// Blocks stored.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Groups stored.
    pub fn group_count(&self) -> usize {
        self.groups
    }

    /// Distinct masks stored.
    pub fn mask_count(&self) -> usize {
        self.masks
    }

    /// What the decoder needs besides the words: the group count, the masks' first
    /// word, the data's first word, and the bits of a mask number.
    pub fn layout(&self) -> [u32; 4] {
        let masks_first = self.groups * GROUP_WORDS;
        [self.groups, masks_first, masks_first + self.masks * MASK_WORDS, mask_bits(self.masks) as usize]
            .map(|x| x as u32)
    }

    /// Blocks in each class.
    pub fn class_counts(&self) -> [u32; CLASSES] {
        let mut counts = [0; CLASSES];
        for g in 0..self.groups {
            let next = if g + 1 < self.groups { self.group(g + 1).first } else { self.len };
            counts[self.group(g).class] += (next - self.group(g).first) as u32;
        }
        counts
    }

    /// The stored words: what the GPU reads.
    pub fn words(&self) -> &[u32] {
        &self.words
    }

    /// Bytes stored: the words, and the group and mask counts (the rest of the
    /// layout follows from them).
    pub fn bytes(&self) -> usize {
        self.words.len() * 4 + 8
    }

    /// Block `b`'s class.
    #[inline]
    pub fn class(&self, b: usize) -> usize {
        self.group(self.group_of(b)).class
    }

    /// Group `g`'s record.
    #[inline]
    fn group(&self, g: usize) -> Group {
        let r = &self.words[g * GROUP_WORDS..(g + 1) * GROUP_WORDS];
        Group { first: r[0] as usize, start: r[1] as usize, class: (r[2] & 0xff) as usize, kept: (r[2] >> 8) as usize }
    }

    /// The group holding block `b`: the last whose first block is at most `b`.
    #[inline]
    fn group_of(&self, b: usize) -> usize {
        debug_assert!(b < self.len, "block {b} of {}", self.len);
        let (mut lo, mut hi) = (0, self.groups);
        while hi - lo > 1 {
            let mid = (lo + hi) / 2;
            if self.words[mid * GROUP_WORDS] as usize <= b {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// Bits of a mask number.
    #[inline]
    fn number_bits(&self) -> usize {
        mask_bits(self.masks) as usize
    }

    /// The data's first word.
    #[inline]
    fn data_first(&self) -> usize {
        (self.groups * GROUP_WORDS) + self.masks * MASK_WORDS
    }

    /// Bits per block of `group`.
    #[inline]
    fn block_bits(&self, group: Group) -> usize {
        self.number_bits() + group.kept * texel_bits(group.class)
    }

    /// The `n` bits at bit `bit` of the data (`None` past the words: a read-back).
    #[inline]
    fn bits(&self, bit: usize, n: usize) -> Option<u32> {
        if n == 0 {
            return Some(0);
        }
        let (word, shift) = (self.data_first() + bit / 32, bit % 32);
        let mut value = *self.words.get(word)? >> shift;
        if shift + n > 32 {
            value |= *self.words.get(word + 1)? << (32 - shift);
        }
        Some(value & (u32::MAX >> (32 - n)))
    }

    /// Block `b`'s first bit in the data, in `group`.
    #[inline]
    fn block_bit(&self, group: Group, b: usize) -> usize {
        group.start * 32 + (b - group.first) * self.block_bits(group)
    }

    /// Block `b`'s mask number, in `group`.
    #[inline]
    fn mask_number(&self, group: Group, b: usize) -> Option<usize> {
        self.bits(self.block_bit(group, b), self.number_bits()).map(|m| m as usize)
    }

    /// Mask `m` of the dictionary.
    #[inline]
    fn mask(&self, m: usize) -> Option<u64> {
        if m >= self.masks {
            return None;
        }
        let at = self.groups * GROUP_WORDS + m * MASK_WORDS;
        Some(self.words[at] as u64 | (self.words[at + 1] as u64) << 32)
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
        let group = self.group(self.group_of(b));
        let number = self.mask_number(group, b).expect("a block of the table");
        let mask = self.mask(number).expect("a mask of the dictionary");
        if mask >> i & 1 == 0 {
            return (DEPTH_MAX, 0);
        }
        let rank = (mask & ((1u64 << i) - 1)).count_ones() as usize;
        let bits = texel_bits(group.class);
        let at = self.block_bit(group, b) + self.number_bits() + rank * bits;
        let code = self.bits(at, bits).expect("a texel of the table");
        (code & DEPTH_MAX, code >> DEPTH_BITS)
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
    /// 128: the largest code among them, at texel 40, and each place a code can
    /// take in the stored words, straddling two or not).
    fn block_with(codes: impl Fn(usize) -> u32) -> Block {
        let mut block = [0; BLOCK_WORDS];
        for i in 0..QUADRANT_TEXELS {
            block[i / 4] |= ((i as u32 * 3 + 7) & DEPTH_MAX) << (i % 4 * 8);
            block[DEPTH_WORDS + i / 8] |= codes(i) << (i % 8 * 4);
        }
        block
    }

    /// Words `blocks` take, counted apart from the packing: a record per (class,
    /// texels kept), two per distinct mask, and each group's blocks bit-exact from
    /// a word boundary (groups of fewer than 4,096 blocks).
    fn words_of(blocks: &[Block]) -> usize {
        let mut masks: Vec<u64> = blocks.iter().map(mask_of).collect();
        masks.sort_unstable();
        masks.dedup();
        let number_bits = (0..).find(|&n| 1usize << n >= masks.len()).unwrap();
        let mut groups = std::collections::BTreeMap::new();
        for block in blocks {
            *groups.entry((class_of(block), mask_of(block).count_ones() as usize)).or_insert(0) += 1;
        }
        let data: usize =
            groups.iter().map(|(&(c, kept), &n)| (n * (number_bits + kept * texel_bits(c))).div_ceil(32)).sum();
        groups.len() * 3 + masks.len() * 2 + data
    }

    #[test]
    fn blocks_go_to_the_narrowest_class_and_decode_as_the_compressor_stored_them() {
        // Widest codes 0, 1, 2 and 3, then 4 and 15: classes 0, 1, 2, 2, 3, 3.
        let widest = [0, 1, 2, 3, 4, 15];
        let want_class = [0, 1, 2, 2, 3, 3];
        // Interleaved so that packing must reorder: two of each, every code up to
        // the widest one used at some texel, texel 40 a clip texel or not.
        let blocks: Vec<Block> = (0..12)
            .map(|k| {
                let top = widest[(k * 5) % 6];
                block_with(move |i| if i == 63 - k { top } else { (i + k) as u32 % (top + 1) })
            })
            .collect();
        let (table, numbers) = BlockTable::pack(&blocks);
        assert_eq!(table.len(), 12);
        assert_eq!(table.class_counts(), [2, 2, 4, 4]);
        let kept = |b: &Block| mask_of(b).count_ones();
        assert!(blocks.iter().any(|b| kept(b) < 64) && blocks.iter().any(|b| kept(b) == 64), "clip texels or none");
        assert_eq!(table.mask_count(), 2);
        let groups = table.group_count();
        assert_eq!(table.layout(), [groups as u32, 3 * groups as u32, 3 * groups as u32 + 4, 1]);
        assert_eq!(table.words().len(), words_of(&blocks));
        assert_eq!(table.bytes(), words_of(&blocks) * 4 + 8);
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
        // Numbered by (class, texels kept), the compressor's order within each.
        let key = |k: usize| (class_of(&blocks[k]), kept(&blocks[k]));
        for k in 1..12 {
            for j in 0..k {
                assert_eq!(numbers[j] < numbers[k], key(j) <= key(k), "blocks {j} and {k}");
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
        // A group record, the mask, no bits of mask number and 64 x 7 bits.
        assert_eq!((numbers[0], table.class(0), table.layout(), table.words().len()), (0, 0, [1, 3, 5, 0], 3 + 2 + 14));
        assert_eq!(&table.words()[..5], &[0, 0, 64 << 8, u32::MAX, u32::MAX]);
        assert!((0..QUADRANT_TEXELS).all(|i| table.value(0, i) == block_value(&block, i)));
        assert!(BlockTable::pack(&[]).0.is_empty());
        assert_eq!(BlockTable::pack(&[]).0, BlockTable::default());
        assert_eq!(BlockTable::default().bytes(), 8);
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
        // A record, the mask, then 28 stored texels of 8 bits: 7 words.
        assert_eq!(table.words().len(), 3 + 2 + 7);
        let mask = table.words()[3] as u64 | (table.words()[4] as u64) << 32;
        assert_eq!(mask.count_ones(), 28);
        for i in 0..QUADRANT_TEXELS {
            assert_eq!(mask >> i & 1 == 1, i % 8 + i / 8 >= 8, "texel {i}");
            assert_eq!(table.value(0, i), block_value(&block, i), "texel {i}");
        }
        assert_eq!(table.value(0, 0), [1.0, 1.0]);
        assert_eq!(table.block(0), block);
        // A block of clip texels only (the compressor stores none: it is a dead
        // quadrant) would still pack and decode: a group of its own, whose blocks
        // are their mask number alone.
        let clip = pack_block(&[[1.0, 1.0]; QUADRANT_TEXELS]);
        let (table, numbers) = BlockTable::pack(&[block, clip, block]);
        assert_eq!(numbers, [1, 0, 2], "the clip block is the one of class 0");
        assert_eq!(table.layout(), [2, 6, 10, 1]);
        // Records, masks, the clip block's 1 bit, the two others' 1 + 28 * 8 bits.
        assert_eq!(table.words().len(), 6 + 4 + 1 + (2 * 225usize).div_ceil(32));
        assert!((0..QUADRANT_TEXELS).all(|i| table.value(0, i) == [1.0, 1.0] && table.value(2, i) == table.value(1, i)));
        assert_eq!(table.block(0), clip);
        // Alone, its group takes no bits at all.
        let (alone, _) = BlockTable::pack(&[clip, clip]);
        assert_eq!((alone.layout(), alone.words().len()), ([1, 3, 5, 0], 5));
        assert_eq!(alone.blocks(), [clip, clip]);
    }

    /// Many blocks on few masks: each mask is stored once, and a block names it in
    /// as few bits as number them all.
    #[test]
    fn masks_are_stored_once_and_named_by_number() {
        // Five masks: texels `j * 7 .. j * 7 + 3` clip, the rest kept; nine blocks
        // of each, their depths differing.
        let blocks: Vec<Block> = (0..45)
            .map(|k| {
                let clipped = |i: usize| (k % 5 * 7..k % 5 * 7 + 3).contains(&i);
                let maps: [[f32; 2]; QUADRANT_TEXELS] = std::array::from_fn(|i| {
                    let d = 0.1 + 0.01 * ((i + k) % 50) as f32;
                    if clipped(i) {
                        [1.0, 1.0]
                    } else {
                        [d, d * d]
                    }
                });
                pack_block(&maps)
            })
            .collect();
        let (table, numbers) = BlockTable::pack(&blocks);
        assert_eq!((table.mask_count(), table.group_count()), (5, 1), "61 texels kept by each");
        assert_eq!(table.layout(), [1, 3, 13, 3]);
        assert_eq!(table.words().len(), 3 + 10 + (45 * (3 + 61 * 7usize)).div_ceil(32));
        assert_eq!(table.words().len(), words_of(&blocks));
        for (k, block) in blocks.iter().enumerate() {
            assert_eq!(numbers[k], k as u32, "one group keeps the compressor's order");
            assert_eq!(&table.block(k), block);
        }
    }

    /// More than [`GROUP_BLOCKS`] blocks of one class and count: a group per 4,096,
    /// and the table decodes throughout.
    #[test]
    fn groups_hold_at_most_4096_blocks() {
        let blocks: Vec<Block> = (0..2 * GROUP_BLOCKS + 5)
            .map(|k| block_with(move |i| if i == k % 64 { 15 } else { 1 + (i + k) as u32 % 3 }))
            .collect();
        let (table, numbers) = BlockTable::pack(&blocks);
        assert_eq!((table.group_count(), table.mask_count()), (3, 1));
        assert_eq!(
            &table.words()[..9],
            &[0, 0, 3 | 64 << 8, 4096, 4096 * 22, 3 | 64 << 8, 8192, 8192 * 22, 3 | 64 << 8]
        );
        for (k, block) in blocks.iter().enumerate().step_by(97).chain([(8191, &blocks[8191]), (8192, &blocks[8192])]) {
            assert_eq!(numbers[k], k as u32);
            assert_eq!(&table.block(k), block);
        }
        let back = BlockTable::from_parts(table.len() as u32, table.layout(), table.words().to_vec());
        assert_eq!(back.as_ref(), Ok(&table));
    }

    #[test]
    fn parts_read_back_must_fit_together() {
        // Classes 0, 3 and 1, texel 40 kept in the second only: three groups, two
        // masks.
        let blocks = [block_with(|_| 0), block_with(|i| i as u32 % 16), block_with(|i| i as u32 % 2)];
        let (table, _) = BlockTable::pack(&blocks);
        assert_eq!(table.layout(), [3, 9, 13, 1]);
        let (len, layout, words) = (table.len() as u32, table.layout(), table.words().to_vec());
        assert_eq!(BlockTable::from_parts(len, layout, words.clone()).as_ref(), Ok(&table));
        let fails = |len: u32, layout: [u32; 4], words: Vec<u32>, why: &str| {
            let err = BlockTable::from_parts(len, layout, words).unwrap_err();
            assert!(err.contains(why), "{err}");
        };
        fails(len, layout, words[..words.len() - 1].to_vec(), "ends past");
        fails(len, layout, [words.clone(), vec![0]].concat(), "words for a table");
        fails(len + 1, layout, words.clone(), "ends past");
        fails(0, layout, words.clone(), "layout");
        fails(len, [3, 9, 13, 2], words.clone(), "layout");
        fails(len, [3, 9, 8, 1], words.clone(), "layout");
        fails(len, [4, 12, 17, 1], words.clone(), "layout");
        fails(len, [4, 12, 16, 1], words.clone(), "block 0");
        // A group that starts at a block of another, or where the last one did
        // not end; a class past the last; more texels than a block holds.
        let corrupt = |at: usize, value: u32| {
            let mut w = words.clone();
            w[at] = value;
            w
        };
        fails(len, layout, corrupt(3, 0), "starts at block 0");
        fails(len, layout, corrupt(6, 3), "starts at block 3");
        fails(len, layout, corrupt(4, words[4] + 1), "at word");
        fails(len, layout, corrupt(5, 4 | 63 << 8), "class 4");
        fails(len, layout, corrupt(8, 3 | 65 << 8), "65 texels");
        // A mask that keeps fewer texels than its group says.
        fails(len, layout, corrupt(9, words[9] & !1), "names no mask");
        assert_eq!(BlockTable::from_parts(0, [0; 4], Vec::new()), Ok(BlockTable::default()));
    }
}
